//go:build gatehouse_native_argon2 && !(cgo && linux && amd64)

package argon2id

import "errors"

// nativeBuild reports whether this build asked for the native fill (the build tag
// gatehouse_native_argon2).
const nativeBuild = true

func nativeReason() error {
	return errors.New("built with -tags " + BuildTag + " but without cgo on Linux amd64 (CGO_ENABLED=0, another OS or CPU)")
}

func fillNative([]byte, uint32, uint32) { panic("argon2id: no native fill in this build") }
