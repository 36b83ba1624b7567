package factors_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
)

// softAuthenticator is a WebAuthn authenticator in Go, as a browser and a platform
// authenticator together answer navigator.credentials.create and .get: an ECDSA P-256
// key (COSE ES256), "none" attestation, assertions signed over authenticatorData ‖
// SHA-256(clientDataJSON) (WebAuthn §6.3.3). It reads the options as the browser gets them,
// as JSON, and answers the JSON a page posts back.
type softAuthenticator struct {
	key    *ecdsa.PrivateKey
	credID []byte
	// origin is the origin the browser reports in clientDataJSON; rpID the relying party id
	// whose hash starts the authenticator data (the options' when empty).
	origin, rpID string
	// userHandle is the user.id registered; assertions return it.
	userHandle []byte
	// counter is the signature counter: incremented before each assertion unless synced,
	// whose counter stays 0 as synced passkeys' does.
	counter uint32
	// synced sets the backup-eligible and backup-state flags; verify the UV flag.
	synced, verify bool
}

func newSoftAuthenticator(t *testing.T, origin string, synced bool) *softAuthenticator {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	mustNoErr(t, "ecdsa.GenerateKey", err)
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return &softAuthenticator{key: key, credID: id, origin: origin, synced: synced, verify: true}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func unb64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	mustNoErr(t, "decode base64url", err)
	return b
}

// Authenticator data flags (WebAuthn §6.1).
const (
	flagUP = 0x01
	flagUV = 0x04
	flagBE = 0x08
	flagBS = 0x10
	flagAT = 0x40
)

func (a *softAuthenticator) flags() byte {
	f := byte(flagUP)
	if a.verify {
		f |= flagUV
	}
	if a.synced {
		f |= flagBE | flagBS
	}
	return f
}

// authData is the authenticator data for rpID: its hash, the flags, the counter, and extra
// (the attested credential data at registration).
func (a *softAuthenticator) authData(rpID string, flags byte, extra []byte) []byte {
	hash := sha256.Sum256([]byte(rpID))
	out := append(hash[:], flags)
	out = binary.BigEndian.AppendUint32(out, a.counter)
	return append(out, extra...)
}

// clientData is clientDataJSON of a ceremony of typ with challenge (base64url).
func (a *softAuthenticator) clientData(t *testing.T, typ, challenge string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": a.origin, "crossOrigin": false})
	mustNoErr(t, "client data", err)
	return b
}

// toJSON is v as the browser's script receives it.
func toJSON(t *testing.T, v any, into any) {
	t.Helper()
	b, err := json.Marshal(v)
	mustNoErr(t, "options to JSON", err)
	mustNoErr(t, "options from JSON", json.Unmarshal(b, into))
}

// register answers creation options (a *protocol.CredentialCreation) with a new credential.
func (a *softAuthenticator) register(t *testing.T, options any) []byte {
	t.Helper()
	var o struct {
		PublicKey struct {
			RP struct {
				ID string `json:"id"`
			} `json:"rp"`
			User struct {
				ID string `json:"id"`
			} `json:"user"`
			Challenge string `json:"challenge"`
		} `json:"publicKey"`
	}
	toJSON(t, options, &o)
	a.userHandle = unb64(t, o.PublicKey.User.ID)
	rpID := a.rpID
	if rpID == "" {
		rpID = o.PublicKey.RP.ID
	}
	pub := a.key.PublicKey
	cose, err := webauthncbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: pub.X.FillBytes(make([]byte, 32)), -3: pub.Y.FillBytes(make([]byte, 32))})
	mustNoErr(t, "COSE key", err)
	attested := make([]byte, 16) // AAGUID: zero, as "none" attestation conveys
	attested = binary.BigEndian.AppendUint16(attested, uint16(len(a.credID)))
	attested = append(append(attested, a.credID...), cose...)
	object, err := webauthncbor.Marshal(map[string]any{
		"fmt": "none", "attStmt": map[string]any{}, "authData": a.authData(rpID, a.flags()|flagAT, attested),
	})
	mustNoErr(t, "attestation object", err)
	return a.credential(t, map[string]any{
		"clientDataJSON":    b64(a.clientData(t, "webauthn.create", o.PublicKey.Challenge)),
		"attestationObject": b64(object),
		"transports":        []string{"internal"},
	})
}

// assert answers request options (a *protocol.CredentialAssertion) with an assertion,
// after incrementing the counter (unless synced).
func (a *softAuthenticator) assert(t *testing.T, options any) []byte {
	t.Helper()
	var o struct {
		PublicKey struct {
			Challenge string `json:"challenge"`
			RPID      string `json:"rpId"`
		} `json:"publicKey"`
	}
	toJSON(t, options, &o)
	if !a.synced {
		a.counter++
	}
	rpID := a.rpID
	if rpID == "" {
		rpID = o.PublicKey.RPID
	}
	authData := a.authData(rpID, a.flags(), nil)
	clientData := a.clientData(t, "webauthn.get", o.PublicKey.Challenge)
	clientHash := sha256.Sum256(clientData)
	digest := sha256.Sum256(append(append([]byte{}, authData...), clientHash[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, a.key, digest[:])
	mustNoErr(t, "sign", err)
	return a.credential(t, map[string]any{
		"clientDataJSON":    b64(clientData),
		"authenticatorData": b64(authData),
		"signature":         b64(sig),
		"userHandle":        b64(a.userHandle),
	})
}

// credential is the PublicKeyCredential JSON (toJSON()) of response.
func (a *softAuthenticator) credential(t *testing.T, response map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": b64(a.credID), "rawId": b64(a.credID), "type": "public-key", "authenticatorAttachment": "platform",
		"response": response, "clientExtensionResults": map[string]any{},
	})
	mustNoErr(t, "credential JSON", err)
	return b
}
