// Package rsasign makes RS256 signatures (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 §3.3)
// with OpenSSL's libcrypto when it can, and with Go's crypto/rsa when it cannot.
//
// An RSA-2048 signature costs about 1.2 ms in crypto/rsa and 0.7 ms in OpenSSL 3 on the
// same machine, and it is most of the CPU of an RS256 code exchange. OpenSSL is reached
// through github.com/golang-fips/openssl/v2, which loads libcrypto with dlopen at run time:
// the build needs cgo (Linux only here) but no OpenSSL headers, and a host without libcrypto
// runs on crypto/rsa.
//
//	eng, err := rsasign.Open(rsasign.Options{Backend: rsasign.Auto})
//	// eng.Backend() and eng.Reason() say who signs and why; log them once.
//	s, err := eng.New(priv) // once per key, not per signature
//	sig, err := s.Sign(nil, sha256Digest, crypto.SHA256)
//
// Every signature OpenSSL makes is verified with crypto/rsa before it is returned, as
// crypto/rsa does with its own, so that a faulty computation can never hand out a
// signature that is correct modulo one prime only (which would reveal the key).
package rsasign
