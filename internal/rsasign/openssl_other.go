//go:build !(cgo && linux)

package rsasign

import (
	"crypto/rsa"
	"errors"
)

var errNoCgo = errors.New("built without cgo on Linux (CGO_ENABLED=0 or another OS)")

func loadOpenSSL([]string) (string, error) { return "", errNoCgo }

func newOpenSSLKey(*rsa.PrivateKey) (func([]byte) ([]byte, error), error) {
	return nil, errNoCgo
}
