package dpop

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"fmt"
)

// RSA key sizes a proof's key may have, in bits: below 2048 a key can be factored for a
// price a determined attacker pays, above 8192 every verification costs the server dearly.
const minRSABits, maxRSABits = 2048, 8192

// CheckPublicKey reports whether key is a public key of a kind and size a proof may be signed
// with: RSA of 2048 to 8192 bits, ECDSA on P-256, P-384 or P-521, or Ed25519. Any other key
// (a shorter or longer RSA modulus, another curve, a private or symmetric key, another type)
// is an error saying why. It is exported so that one check bounds every public key a server
// verifies signatures with: Gatehouse applies it to the keys clients register for their
// assertions and request objects too.
func CheckPublicKey(key any) error {
	switch k := key.(type) {
	case *rsa.PublicKey:
		if k == nil || k.N == nil {
			return fmt.Errorf("an RSA public key without a modulus")
		}
		if bits := k.N.BitLen(); bits < minRSABits || bits > maxRSABits {
			return fmt.Errorf("an RSA key of %d bits: it must have %d to %d", bits, minRSABits, maxRSABits)
		}
		return nil
	case *ecdsa.PublicKey:
		if k == nil || k.Curve == nil {
			return fmt.Errorf("an EC public key without a curve")
		}
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return nil
		}
		return fmt.Errorf("an EC key on curve %s: it must be P-256, P-384 or P-521", k.Curve.Params().Name)
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return fmt.Errorf("an Ed25519 key of %d bytes: it must have %d", len(k), ed25519.PublicKeySize)
		}
		return nil
	}
	return fmt.Errorf("a key of type %T: only RSA, EC (P-256, P-384, P-521) and Ed25519 public keys are accepted", key)
}
