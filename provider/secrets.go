package provider

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/hkdf"
)

// deriveKey derives a 32-byte key for one purpose from the system secret (HKDF-SHA-256), so
// no two uses ever share key material and rotating the secret rotates them all.
func deriveKey(secret []byte, purpose string) []byte {
	key := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, secret, nil, []byte("gatehouse/"+purpose)), key); err != nil {
		panic(fmt.Sprintf("hkdf cannot fail for 32 bytes: %v", err))
	}
	return key
}

// secretHasher implements fosite.Hasher for client secrets. Client secrets are generated
// 256-bit random values, so a keyed fast hash (HMAC-SHA-256) is as strong as a slow one and
// keeps the token endpoint cheap; bcrypt would cost ~50 ms of CPU per token request.
type secretHasher struct{ key []byte }

func (h secretHasher) Hash(_ context.Context, data []byte) ([]byte, error) {
	m := hmac.New(sha256.New, h.key)
	m.Write(data)
	return m.Sum(nil), nil
}

func (h secretHasher) Compare(ctx context.Context, hash, data []byte) error {
	want, _ := h.Hash(ctx, data)
	if len(hash) == 0 || !hmac.Equal(hash, want) {
		return errors.New("client secret does not match")
	}
	return nil
}

// sealer encrypts signing keys at rest with AES-256-GCM under a key derived from the
// system secret. The key id is authenticated as additional data, so a sealed key cannot be
// moved to another row.
type sealer struct{ aead cipher.AEAD }

func newSealer(secret []byte) (sealer, error) {
	block, err := aes.NewCipher(deriveKey(secret, "signing-keys"))
	if err != nil {
		return sealer{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return sealer{}, err
	}
	return sealer{aead: aead}, nil
}

func (s sealer) seal(random io.Reader, plaintext []byte, kid string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := io.ReadFull(random, nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, plaintext, []byte(kid)), nil
}

func (s sealer) open(sealed []byte, kid string) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("sealed key too short")
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(kid))
	if err != nil {
		return nil, fmt.Errorf("signing key %s cannot be decrypted (wrong system secret?): %w", kid, err)
	}
	return plain, nil
}
