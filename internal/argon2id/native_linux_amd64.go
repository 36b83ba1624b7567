//go:build cgo && linux && amd64

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
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nativeReason says whether this CPU can run the native fill, and why not.
func nativeReason() error {
	if C.gh_have_avx2() == 0 {
		return errors.New("the CPU has no AVX2")
	}
	return nil
}

// fillNative runs the native fill over mem, which holds blocks whole blocks with the
// first two set. mem lies outside the Go heap (newBuffer), so C may hold it.
func fillNative(mem []byte, blocks, time uint32) {
	C.gh_argon2id_fill((*C.gh_block)(unsafe.Pointer(unsafe.SliceData(mem))), C.uint32_t(blocks), C.uint32_t(time))
}

// newBuffer maps size bytes outside the Go heap for a hash's blocks: kept for reuse, they
// would otherwise be live heap the collector and the memory limit must account for. It asks
// for transparent huge pages (a 19 MiB hash then faults in a few 2 MiB pages, not 4,864
// small ones: on a virtual machine small faults cost as much as the hash's arithmetic) and
// keeps the blocks, which derive from passwords, out of core dumps.
func newBuffer(size int) ([]byte, error) {
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes: %w", size, err)
	}
	// Both are advice: a kernel without them still gives working memory.
	_ = unix.Madvise(mem, unix.MADV_HUGEPAGE)
	_ = unix.Madvise(mem, unix.MADV_DONTDUMP)
	return mem, nil
}

func freeBuffer(mem []byte) { _ = unix.Munmap(mem) }
