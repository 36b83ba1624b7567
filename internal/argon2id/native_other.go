//go:build !(cgo && linux && amd64)

package argon2id

import "errors"

func nativeReason() error {
	return errors.New("built without cgo on Linux amd64 (CGO_ENABLED=0, another OS or CPU)")
}

func fillNative([]byte, uint32, uint32) { panic("argon2id: no native fill in this build") }
