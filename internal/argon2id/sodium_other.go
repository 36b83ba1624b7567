//go:build !(cgo && linux)

package argon2id

import "errors"

var errNoCgo = errors.New("built without cgo on Linux (CGO_ENABLED=0 or another OS)")

// sodiumFunc is never loaded in this build.
type sodiumFunc struct{}

func loadSodium([]string) (sodiumFunc, string, error) { return sodiumFunc{}, "", errNoCgo }

func (sodiumFunc) key(_, _ []byte, _, _, _ uint32) ([]byte, error) { return nil, errNoCgo }
