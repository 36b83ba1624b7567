//go:build cgo && linux

package rsasign

import (
	"crypto"
	"crypto/rsa"
	"errors"
	"math/big"
	"strings"

	"github.com/golang-fips/openssl/v2"
	"github.com/golang-fips/openssl/v2/bbig"
)

// loadOpenSSL initialises libcrypto from the first of libs that loads and returns its
// version. openssl.Init takes effect once per process and repeats its first result, so
// each candidate is probed with CheckVersion (dlopen, dlclose) and only one is passed to
// Init: a missing file must not poison the process for the next candidate.
func loadOpenSSL(libs []string) (string, error) {
	var tried []string
	for _, lib := range libs {
		if ok, _ := openssl.CheckVersion(lib); !ok {
			tried = append(tried, lib)
			continue
		}
		if err := openssl.Init(lib); err != nil {
			return "", err
		}
		return openssl.VersionText(), nil
	}
	return "", errors.New("cannot load " + strings.Join(tried, " or "))
}

// newOpenSSLKey copies priv into an OpenSSL key, its CRT values included.
func newOpenSSLKey(priv *rsa.PrivateKey) (func([]byte) ([]byte, error), error) {
	pre := priv.Precomputed
	if pre.Dp == nil || pre.Dq == nil || pre.Qinv == nil {
		return nil, errors.New("key without CRT values (not precomputed)")
	}
	key, err := openssl.NewPrivateKeyRSA(
		bbig.Enc(priv.N), bbig.Enc(big.NewInt(int64(priv.E))), bbig.Enc(priv.D),
		bbig.Enc(priv.Primes[0]), bbig.Enc(priv.Primes[1]),
		bbig.Enc(pre.Dp), bbig.Enc(pre.Dq), bbig.Enc(pre.Qinv))
	if err != nil {
		return nil, err
	}
	return func(digest []byte) ([]byte, error) {
		return openssl.SignRSAPKCS1v15(key, crypto.SHA256, digest)
	}, nil
}
