package dpop_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"math/big"
	"testing"

	"github.com/gatehouse-id/gatehouse/dpop"
)

// TestCheckPublicKey: RSA of 2048 to 8192 bits, the NIST curves from P-256 up and Ed25519
// pass; a 17-bit or 1024-bit RSA modulus, one over 8192 bits, P-224, a private key and a
// symmetric key do not.
func TestCheckPublicKey(t *testing.T) {
	rsa2048, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsa1024, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ec := func(c elliptic.Curve) *ecdsa.PublicKey {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return &k.PublicKey
	}
	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	modulus := func(bits uint) *rsa.PublicKey {
		n := new(big.Int).Lsh(big.NewInt(1), bits-1)
		return &rsa.PublicKey{N: n.Add(n, big.NewInt(1)), E: 65537}
	}
	for _, c := range []struct {
		name string
		key  any
		ok   bool
	}{
		{"RSA 2048", &rsa2048.PublicKey, true},
		{"RSA 8192", modulus(8192), true},
		{"RSA 17 bits", modulus(17), false},
		{"RSA 1024", &rsa1024.PublicKey, false},
		{"RSA 8193 bits", modulus(8193), false},
		{"EC P-256", ec(elliptic.P256()), true},
		{"EC P-384", ec(elliptic.P384()), true},
		{"EC P-521", ec(elliptic.P521()), true},
		{"EC P-224", ec(elliptic.P224()), false},
		{"Ed25519", edPub, true},
		{"short Ed25519", edPub[:16], false},
		{"RSA private key", rsa2048, false},
		{"symmetric key", []byte("0123456789abcdef0123456789abcdef"), false},
		{"nil", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := dpop.CheckPublicKey(c.key); (err == nil) != c.ok {
				t.Errorf("CheckPublicKey: got %v, want ok=%v", err, c.ok)
			}
		})
	}
}
