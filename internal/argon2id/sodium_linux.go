//go:build cgo && linux

package argon2id

/*
#cgo LDFLAGS: -ldl
// The password, salt and key are passed for the call only and C calls nothing back, so
// cgo may leave them where they are rather than move them to the heap.
#cgo noescape gh_argon2id
#cgo nocallback gh_argon2id
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

// crypto_pwhash_argon2id's signature (sodium/crypto_pwhash_argon2id.h, stable since 1.0.13).
typedef int (*gh_pwhash_fn)(unsigned char *out, unsigned long long outlen,
	const char *passwd, unsigned long long passwdlen, const unsigned char *salt,
	unsigned long long opslimit, size_t memlimit, int alg);

// crypto_pwhash_ALG_ARGON2ID13: argon2id, version 0x13 (RFC 9106).
#define GH_ALG_ARGON2ID13 2

// gh_sodium_open loads lib, initialises it and returns its crypto_pwhash_argon2id; on
// failure NULL, with the reason copied into why (dlerror's text is the calling thread's and
// would not survive the return to Go).
static void *gh_sodium_open(const char *lib, char *why, size_t whylen) {
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(why, whylen, "%s", e ? e : "dlopen failed");
		return NULL;
	}
	int (*init)(void) = (int (*)(void))dlsym(h, "sodium_init");
	void *pwhash = dlsym(h, "crypto_pwhash_argon2id");
	if (init == NULL || pwhash == NULL) {
		snprintf(why, whylen, "%s has no sodium_init or crypto_pwhash_argon2id", lib);
		dlclose(h);
		return NULL;
	}
	// 0: initialised now, 1: already; -1: failed.
	if (init() < 0) {
		snprintf(why, whylen, "sodium_init failed in %s", lib);
		dlclose(h);
		return NULL;
	}
	return pwhash;
}

static const char *gh_sodium_version(const char *lib) {
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (h == NULL) return NULL;
	const char *(*version)(void) = (const char *(*)(void))dlsym(h, "sodium_version_string");
	const char *v = version ? version() : NULL;
	dlclose(h);
	return v;
}

static int gh_argon2id(void *fn, unsigned char *out, unsigned long long outlen,
		const char *pw, unsigned long long pwlen, const unsigned char *salt,
		unsigned long long passes, size_t memlimit) {
	return ((gh_pwhash_fn)fn)(out, outlen, pw, pwlen, salt, passes, memlimit, GH_ALG_ARGON2ID13);
}
*/
import "C"

import (
	"errors"
	"strings"
	"unsafe"
)

// sodiumFunc is a loaded crypto_pwhash_argon2id; nil when none is.
type sodiumFunc struct{ fn unsafe.Pointer }

// loadSodium returns crypto_pwhash_argon2id from the first of libs that loads, and the
// library's name and version.
func loadSodium(libs []string) (sodiumFunc, string, error) {
	var why [256]C.char
	var tried []string
	for _, lib := range libs {
		name := C.CString(lib)
		fn := C.gh_sodium_open(name, &why[0], C.size_t(len(why)))
		if fn == nil {
			C.free(unsafe.Pointer(name))
			tried = append(tried, C.GoString(&why[0]))
			continue
		}
		version := lib
		if v := C.gh_sodium_version(name); v != nil {
			version += " " + C.GoString(v)
		}
		C.free(unsafe.Pointer(name))
		return sodiumFunc{fn: fn}, version, nil
	}
	return sodiumFunc{}, "", errors.New(strings.Join(tried, "; "))
}

// key calls crypto_pwhash_argon2id. The caller checked the parameters with sodiumTakes.
func (s sodiumFunc) key(password, salt []byte, time, memory, keyLen uint32) ([]byte, error) {
	if s.fn == nil {
		return nil, errors.New("libsodium not loaded")
	}
	out := make([]byte, keyLen)
	// libsodium reads nothing of an empty password, but a pointer it can hold is cheaper to
	// give than to reason about.
	var empty [1]byte
	pw := unsafe.Pointer(&empty[0])
	if len(password) > 0 {
		pw = unsafe.Pointer(unsafe.SliceData(password))
	}
	rc := C.gh_argon2id(s.fn, (*C.uchar)(unsafe.Pointer(unsafe.SliceData(out))), C.ulonglong(keyLen),
		(*C.char)(pw), C.ulonglong(len(password)), (*C.uchar)(unsafe.Pointer(unsafe.SliceData(salt))),
		C.ulonglong(time), C.size_t(memory)*1024)
	if rc != 0 {
		return nil, errors.New("crypto_pwhash_argon2id failed (out of memory)")
	}
	return out, nil
}
