//go:build !gatehouse_native_argon2

package argon2id

import "errors"

// nativeBuild reports whether this build asked for the native fill (the build tag
// gatehouse_native_argon2).
const nativeBuild = false

func nativeReason() error {
	return errors.New("not compiled in: build with -tags " + BuildTag + " (cgo, Linux amd64) to have it")
}

func fillNative([]byte, uint32, uint32) { panic("argon2id: no native fill in this build") }
