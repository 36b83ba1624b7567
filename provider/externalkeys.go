package provider

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v3"
	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"
)

// KeySource is a set of signing keys held outside Gatehouse: in a KMS, an HSM, or behind
// OpenSSL through a library of the embedder's choosing. Give it to New with WithSigner.
type KeySource interface {
	// SigningKeys returns the source's keys, in any order. New calls it once and fails on
	// its error. The provider calls it again every Config.KeyReloadInterval, and when a
	// token names a kid it does not know (at most every few seconds); on an error it keeps
	// the keys it had and logs the error. Keep it fast: cache what is slow to list.
	SigningKeys(ctx context.Context) ([]ExternalKey, error)
}

// ExternalKey is one key of a KeySource.
type ExternalKey struct {
	// KID names the key in the kid header of what it signs and in the JWKS; it must be
	// unique among the source's keys and those of the database (RFC 7638 thumbprints).
	KID string
	// Algorithm is the JWS algorithm the key signs with: AlgRS256 (an RSA key of 2048
	// bits or more), AlgES256 (ECDSA P-256) or AlgEdDSA (Ed25519).
	Algorithm string
	// Signer signs with the private key; its Public method returns the *rsa.PublicKey,
	// *ecdsa.PublicKey or ed25519.PublicKey. Sign gets what crypto.Signer says: for RSA and
	// ECDSA the SHA-256 digest with crypto.SHA256 (*rsa.PSSOptions for RSA-PSS), for
	// Ed25519 the whole message with crypto.Hash(0). An ECDSA signature may come as ASN.1
	// DER (as crypto/ecdsa and cloud KMSs return it) or as the 64 bytes r||s of JWS. Every
	// signature is verified against Public before it is used: a signer that signs with
	// another key than it names fails the request instead of handing out tokens that no
	// relying party can verify, and a faulty RSA signature never leaves the process.
	Signer crypto.Signer
	// CreatedAt is when the key joined the source. It is published at once and signs one
	// and a half Config.KeyReloadInterval later, when every replica re-reading the source
	// publishes it too; until then the key it succeeds signs. Set it to when the key was
	// added to the source, not to when the KMS made it.
	CreatedAt time.Time
	// RetiredAt, when set, is when the key was replaced. It signs until a newer key of its
	// algorithm activates, and stays published until RetiredAt plus the key retention
	// (2 × KeyReloadInterval + the longer of AccessTokenLifespan and IDTokenLifespan + 5
	// minutes), while what it signed may still be presented; after that it is no longer
	// published, even if the source still lists it. A key the source stops listing leaves
	// the JWKS at once, and the tokens it signed stop verifying: retire keys, do not drop
	// them.
	RetiredAt *time.Time
}

// WithSigner makes the provider sign with the keys of src: for every algorithm src lists a
// key of, the newest of its keys whose activation has passed signs ID tokens, access
// tokens and logout tokens, and src's keys are published in the JWKS beside the database's.
// The algorithms src lists no key of keep the database's keys, rotated as before
// (Config.KeyRotationInterval, `keys rotate`); src rotates its own by listing a new key
// and retiring the old one (ExternalKey.CreatedAt, RetiredAt).
//
// When src takes over an algorithm, the database's key of it keeps signing until src's first
// key of it activates, and stays published for the key retention after that key's
// CreatedAt, so that nothing it signed stops verifying; the database makes no new key of
// it. An algorithm src stops listing goes back to the database's key.
func WithSigner(src KeySource) Option {
	return func(o *options) error {
		if src == nil {
			return errors.New("provider: WithSigner(nil)")
		}
		o.keySource = src
		return nil
	}
}

// externalKey checks k and returns it as a key of the set.
func externalKey(k ExternalKey, random io.Reader) (*signingKey, error) {
	if k.KID == "" {
		return nil, errors.New("external signing key without a kid")
	}
	if k.Signer == nil {
		return nil, fmt.Errorf("external signing key %s: no signer", k.KID)
	}
	if k.CreatedAt.IsZero() {
		return nil, fmt.Errorf("external signing key %s: no CreatedAt", k.KID)
	}
	pub := k.Signer.Public()
	if err := checkPublicKey(k.Algorithm, pub); err != nil {
		return nil, fmt.Errorf("external signing key %s: %w", k.KID, err)
	}
	public := jose.JSONWebKey{Key: pub, KeyID: k.KID, Algorithm: k.Algorithm, Use: "sig"}
	signer := &keySigner{signer: k.Signer, public: &public, alg: jose.SignatureAlgorithm(k.Algorithm), random: random}
	key := &signingKey{kid: k.KID, alg: k.Algorithm, public: public, signer: signer, external: true, createdAt: k.CreatedAt}
	if k.RetiredAt != nil {
		retired := *k.RetiredAt // the source's value, not its variable
		key.retiredAt = &retired
	}
	return key, nil
}

// checkPublicKey reports whether pub is a key of alg's type and strength.
func checkPublicKey(alg string, pub crypto.PublicKey) error {
	ok := false
	switch alg {
	case AlgRS256, algPS256:
		rsaKey, isRSA := pub.(*rsa.PublicKey)
		ok = isRSA && rsaKey.N.BitLen() >= 2048
	case AlgES256:
		ecKey, isEC := pub.(*ecdsa.PublicKey)
		ok = isEC && ecKey.Curve == elliptic.P256()
	case AlgEdDSA:
		edKey, isEd := pub.(ed25519.PublicKey)
		ok = isEd && len(edKey) == ed25519.PublicKeySize
	}
	if !slices.Contains(supportedAlgs, alg) {
		return fmt.Errorf("unsupported algorithm %q (want %v)", alg, supportedAlgs)
	}
	if !ok {
		return fmt.Errorf("public key %T is not a key for %s (RSA of 2048 bits or more, ECDSA P-256 or Ed25519)", pub, alg)
	}
	return nil
}

// algPS256 is RSASSA-PSS with SHA-256 (RFC 7518 §3.5), which keySigner makes with an RSA
// key; no key of the set is published for it yet (FAPI 2.0 clients will ask for it).
const algPS256 = "PS256"

// keySigner is a crypto.Signer as go-jose's OpaqueSigner: go-jose builds the JWS around
// it exactly as around a private key, and it turns the JWS signing input into what
// crypto.Signer takes for the key's algorithm. The algorithm belongs to the key, not to its
// type: an RSA key signs RS256 or PS256, as it is published.
type keySigner struct {
	signer crypto.Signer
	public *jose.JSONWebKey
	alg    jose.SignatureAlgorithm
	random io.Reader
}

var _ jose.OpaqueSigner = (*keySigner)(nil)

func (s *keySigner) Public() *jose.JSONWebKey { return s.public }

func (s *keySigner) Algs() []jose.SignatureAlgorithm { return []jose.SignatureAlgorithm{s.alg} }

// SignPayload signs the JWS signing input payload (RFC 7515 §5.1) with alg, which must be
// the key's, and verifies the signature before returning it.
func (s *keySigner) SignPayload(payload []byte, alg jose.SignatureAlgorithm) ([]byte, error) {
	if alg != s.alg {
		return nil, fmt.Errorf("signing key %s signs %s, not %s", s.public.KeyID, s.alg, alg)
	}
	sig, err := s.sign(payload)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", s.public.KeyID, err)
	}
	if !verifyJWS(s.public.Key, s.alg, payload, sig) {
		return nil, fmt.Errorf("signing key %s: its signer returned a signature that does not verify with its public key; withheld", s.public.KeyID)
	}
	return sig, nil
}

func (s *keySigner) sign(payload []byte) ([]byte, error) {
	random := s.random
	if random == nil {
		random = rand.Reader
	}
	digest := sha256.Sum256(payload)
	switch s.alg {
	case jose.RS256:
		return s.signer.Sign(random, digest[:], crypto.SHA256)
	case jose.PS256:
		return s.signer.Sign(random, digest[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: crypto.SHA256})
	case jose.ES256:
		sig, err := s.signer.Sign(random, digest[:], crypto.SHA256)
		if err != nil {
			return nil, err
		}
		if raw, ok := ecdsaDERToJWS(sig, 32); ok {
			return raw, nil
		}
		if len(sig) == 64 { // already r||s
			return sig, nil
		}
		return nil, errors.New("ECDSA signature is neither ASN.1 DER nor r||s")
	case jose.EdDSA:
		return s.signer.Sign(random, payload, crypto.Hash(0))
	}
	return nil, fmt.Errorf("unsupported algorithm %s", s.alg)
}

// ecdsaDERToJWS turns an ASN.1 DER ECDSA signature into JWS's r||s, each size bytes
// (RFC 7518 §3.4); false when der is not such a signature.
func ecdsaDERToJWS(der []byte, size int) ([]byte, bool) {
	var r, s big.Int
	in, inner := cryptobyte.String(der), cryptobyte.String(nil)
	if !in.ReadASN1(&inner, asn1.SEQUENCE) || !in.Empty() ||
		!inner.ReadASN1Integer(&r) || !inner.ReadASN1Integer(&s) || !inner.Empty() ||
		r.Sign() <= 0 || s.Sign() <= 0 || len(r.Bytes()) > size || len(s.Bytes()) > size {
		return nil, false
	}
	out := make([]byte, 2*size)
	r.FillBytes(out[:size])
	s.FillBytes(out[size:])
	return out, true
}

// verifyJWS reports whether sig is a valid JWS signature of alg over payload by pub.
func verifyJWS(pub crypto.PublicKey, alg jose.SignatureAlgorithm, payload, sig []byte) bool {
	digest := sha256.Sum256(payload)
	switch key := pub.(type) {
	case *rsa.PublicKey:
		switch alg {
		case jose.RS256:
			return rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig) == nil
		case jose.PS256:
			return rsa.VerifyPSS(key, crypto.SHA256, digest[:], sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
	case *ecdsa.PublicKey:
		if alg == jose.ES256 && len(sig) == 64 {
			r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
			return ecdsa.Verify(key, digest[:], r, s)
		}
	case ed25519.PublicKey:
		return alg == jose.EdDSA && ed25519.Verify(key, payload, sig)
	}
	return false
}
