//go:build gatehouse_native_argon2 && cgo && linux && amd64

package argon2id

/*
#cgo CFLAGS: -O3
#include "fill_avx2.h"

static int gh_have_avx2(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// nativeBuild reports whether this build asked for the native fill (the build tag
// gatehouse_native_argon2).
const nativeBuild = true

// nativeReason says whether this CPU can run the native fill, and why not.
func nativeReason() error {
	if C.gh_have_avx2() == 0 {
		return errors.New("the CPU has no AVX2")
	}
	return nil
}

// fillNative runs the native fill over mem, which holds blocks whole blocks with the
// first two set. mem holds no Go pointers, so C may use it for the call.
func fillNative(mem []byte, blocks, time uint32) {
	C.gh_argon2id_fill((*C.gh_block)(unsafe.Pointer(unsafe.SliceData(mem))), C.uint32_t(blocks), C.uint32_t(time))
}
