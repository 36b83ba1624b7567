package factors

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/gatehouse-id/gatehouse/acr"
	"github.com/gatehouse-id/gatehouse/events"
)

// userHandleBytes is the length of an account's random WebAuthn user handle (at most 64).
const userHandleBytes = 32

// MaxPasskeyName is the longest passkey name, in characters; DefaultPasskeyName names
// one registered without a name.
const (
	MaxPasskeyName     = 64
	DefaultPasskeyName = "Passkey"
)

// PasskeyRegistration is a passkey registration begun: Options go to the browser
// (navigator.credentials.create, as JSON: PublicKeyCredential.parseCreationOptionsFromJSON
// reads Options.Response), and CeremonyID comes back with its answer.
type PasskeyRegistration struct {
	Options    *protocol.CredentialCreation
	CeremonyID string
	ExpiresAt  time.Time
}

// PasskeyChallenge is a passkey login begun: Options go to the browser
// (navigator.credentials.get, as JSON), and CeremonyID comes back with its answer.
type PasskeyChallenge struct {
	Options    *protocol.CredentialAssertion
	CeremonyID string
	ExpiresAt  time.Time
}

// PasskeyLogin is a verified passkey assertion.
type PasskeyLogin struct {
	// AccountID is the account the passkey belongs to: for a passwordless login, the one
	// to sign in.
	AccountID string
	// PasskeyID is the passkey used.
	PasskeyID string
	// Method is what to record on the session: user verification and whether the
	// passkey is device-bound, as this assertion's authenticator data states them.
	Method acr.Method
}

// webauthnUser is an account as go-webauthn sees it.
type webauthnUser struct {
	handle            []byte
	name, displayName string
	credentials       []webauthn.Credential
}

func (u *webauthnUser) WebAuthnID() []byte                         { return u.handle }
func (u *webauthnUser) WebAuthnName() string                       { return u.name }
func (u *webauthnUser) WebAuthnDisplayName() string                { return u.displayName }
func (u *webauthnUser) WebAuthnCredentials() []webauthn.Credential { return u.credentials }

// Passkeys returns the account's passkeys, oldest first, each with Usable set.
func (s *Service) Passkeys(ctx context.Context, accountID string) ([]Passkey, error) {
	keys, err := s.store.Passkeys(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("factors: read passkeys: %w", err)
	}
	for i := range keys {
		keys[i].Usable = s.webauthn != nil && keys[i].RPID == s.rpID && !keys[i].CloneWarning
	}
	return keys, nil
}

// credentials returns the account's passkeys of this relying party as go-webauthn
// credentials (those marked as cloned too: a finish refuses them by name), and the
// passkeys by id.
func (s *Service) credentials(ctx context.Context, accountID string) ([]webauthn.Credential, map[string]*Passkey, error) {
	keys, err := s.Passkeys(ctx, accountID)
	if err != nil {
		return nil, nil, err
	}
	var creds []webauthn.Credential
	byID := map[string]*Passkey{}
	for i := range keys {
		k := &keys[i]
		if k.RPID != s.rpID {
			continue
		}
		var c webauthn.Credential
		if err := json.Unmarshal(k.Credential, &c); err != nil {
			return nil, nil, fmt.Errorf("factors: passkey %s: %w", k.ID, err)
		}
		// The columns are the record of what changes with each use.
		c.Authenticator.SignCount, c.Authenticator.CloneWarning = k.SignCount, k.CloneWarning
		c.Flags.BackupEligible, c.Flags.BackupState = k.BackupEligible, k.BackupState
		creds = append(creds, c)
		byID[k.ID] = k
	}
	return creds, byID, nil
}

// BeginPasskeyRegistration starts registering a passkey for acct: a discoverable
// credential (resident key required), user verification preferred, attestation none, the
// account's passkeys excluded so one authenticator is not registered twice. It returns
// ErrPasskeysUnavailable when the issuer cannot have passkeys.
func (s *Service) BeginPasskeyRegistration(ctx context.Context, acct Account) (*PasskeyRegistration, error) {
	if s.webauthn == nil {
		return nil, s.noPasskeys
	}
	if acct.ID == "" || acct.Name == "" {
		return nil, errors.New("factors: begin passkey registration: account without id or name")
	}
	handle, err := s.userHandle(ctx, acct.ID)
	if err != nil {
		return nil, err
	}
	creds, _, err := s.credentials(ctx, acct.ID)
	if err != nil {
		return nil, err
	}
	exclude := make([]protocol.CredentialDescriptor, len(creds))
	for i := range creds {
		exclude[i] = creds[i].Descriptor()
	}
	display := acct.DisplayName
	if display == "" {
		display = acct.Name
	}
	user := &webauthnUser{handle: handle, name: acct.Name, displayName: display}
	options, session, err := s.webauthn.BeginRegistration(user, webauthn.WithExclusions(exclude))
	if err != nil {
		return nil, fmt.Errorf("factors: begin passkey registration: %w", err)
	}
	id, expires, err := s.saveCeremony(ctx, CeremonyRegistration, acct.ID, session)
	if err != nil {
		return nil, err
	}
	return &PasskeyRegistration{Options: options, CeremonyID: id, ExpiresAt: expires}, nil
}

// FinishPasskeyRegistration completes the registration ceremonyID of the account with the
// browser's answer, response (the PublicKeyCredential as JSON), and stores the passkey
// under name (DefaultPasskeyName when empty): a FactorAdded, mailed to the owner. The
// ceremony is spent whatever the outcome. It returns an *InputError for a bad name (the
// ceremony is then kept), ErrCeremonyInvalid, ErrPasskeyInvalid wrapping why the
// response does not verify, and ErrPasskeyExists.
func (s *Service) FinishPasskeyRegistration(ctx context.Context, accountID, ceremonyID, name string, response []byte) (*Passkey, error) {
	if s.webauthn == nil {
		return nil, s.noPasskeys
	}
	name, err := passkeyName(name)
	if err != nil {
		return nil, err
	}
	now := s.now()
	_, session, err := s.consumeCeremony(ctx, ceremonyID, now, func(c *Ceremony) bool {
		return c.Kind == CeremonyRegistration && c.AccountID == accountID
	})
	if err != nil {
		return nil, err
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPasskeyInvalid, err)
	}
	cred, err := s.webauthn.CreateCredential(&webauthnUser{handle: session.UserID}, *session, parsed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPasskeyInvalid, err)
	}
	record, err := json.Marshal(cred)
	if err != nil {
		return nil, fmt.Errorf("factors: encode passkey: %w", err)
	}
	key := &Passkey{
		ID: base64.RawURLEncoding.EncodeToString(cred.ID), AccountID: accountID, Name: name, RPID: s.rpID,
		SignCount: cred.Authenticator.SignCount, BackupEligible: cred.Flags.BackupEligible, BackupState: cred.Flags.BackupState,
		CreatedAt: now, Usable: true, Credential: record,
	}
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.CreatePasskey(ctx, key); err != nil {
			return err
		}
		return s.changed(ctx, &events.FactorAdded{Meta: events.Meta{At: now}, UserID: accountID, Factor: events.FactorPasskey, FactorID: key.ID, Label: name})
	})
	if err != nil {
		return nil, err
	}
	return key, nil
}

// passkeyName checks a passkey name: trimmed, at most MaxPasskeyName characters, no
// control characters; DefaultPasskeyName for none.
func passkeyName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return DefaultPasskeyName, nil
	case !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl):
		return "", &InputError{Field: "name", Reason: "must be text without control characters"}
	case utf8.RuneCountInString(name) > MaxPasskeyName:
		return "", &InputError{Field: "name", Reason: fmt.Sprintf("must be at most %d characters", MaxPasskeyName)}
	}
	return name, nil
}

// BeginPasskeyLogin starts an assertion by one of the account's usable passkeys (its
// credentials in allowCredentials, user verification preferred): a second factor, or a
// step-up. It returns ErrNotEnrolled when the account has no usable passkey.
func (s *Service) BeginPasskeyLogin(ctx context.Context, accountID string) (*PasskeyChallenge, error) {
	if s.webauthn == nil {
		return nil, s.noPasskeys
	}
	creds, _, err := s.credentials(ctx, accountID)
	if err != nil {
		return nil, err
	}
	creds = slices.DeleteFunc(creds, func(c webauthn.Credential) bool { return c.Authenticator.CloneWarning })
	if len(creds) == 0 {
		return nil, ErrNotEnrolled
	}
	handle, err := s.userHandle(ctx, accountID)
	if err != nil {
		return nil, err
	}
	options, session, err := s.webauthn.BeginLogin(&webauthnUser{handle: handle, credentials: creds})
	if err != nil {
		return nil, fmt.Errorf("factors: begin passkey login: %w", err)
	}
	return s.challenge(ctx, CeremonyLogin, accountID, options, session)
}

// userHandle returns the account's WebAuthn user handle, drawing one if it has none.
func (s *Service) userHandle(ctx context.Context, accountID string) ([]byte, error) {
	fresh, err := s.randomBytes(userHandleBytes)
	if err != nil {
		return nil, err
	}
	handle, err := s.store.PasskeyUserHandle(ctx, accountID, fresh)
	if err != nil {
		return nil, fmt.Errorf("factors: passkey user handle: %w", err)
	}
	return handle, nil
}

// BeginPasswordlessLogin starts an assertion by any discoverable passkey (an empty
// allowCredentials): a sign-in with the passkey alone, whose user handle names the
// account. conditional asks for conditional mediation, the browser's autofill of passkeys
// in the login form.
func (s *Service) BeginPasswordlessLogin(ctx context.Context, conditional bool) (*PasskeyChallenge, error) {
	if s.webauthn == nil {
		return nil, s.noPasskeys
	}
	mediation := protocol.MediationDefault
	if conditional {
		mediation = protocol.MediationConditional
	}
	options, session, err := s.webauthn.BeginDiscoverableMediatedLogin(mediation)
	if err != nil {
		return nil, fmt.Errorf("factors: begin passwordless login: %w", err)
	}
	return s.challenge(ctx, CeremonyPasswordless, "", options, session)
}

func (s *Service) challenge(ctx context.Context, kind, accountID string, options *protocol.CredentialAssertion, session *webauthn.SessionData) (*PasskeyChallenge, error) {
	id, expires, err := s.saveCeremony(ctx, kind, accountID, session)
	if err != nil {
		return nil, err
	}
	return &PasskeyChallenge{Options: options, CeremonyID: id, ExpiresAt: expires}, nil
}

// FinishPasskeyLogin completes the login ceremonyID with the browser's answer, response
// (the PublicKeyCredential as JSON). accountID is the account the caller expects: the
// signed-in one for a ceremony begun by BeginPasskeyLogin (it must be the one it was begun
// for), or "" for one begun by BeginPasswordlessLogin, whose passkey's user handle then
// names the account (a non-empty accountID must match it). The ceremony is spent whatever
// the outcome.
//
// It returns ErrCeremonyInvalid, ErrPasskeyInvalid wrapping why the assertion does not
// verify, and ErrPasskeyCloned for a passkey whose signature counter went backwards, now
// (it is then marked, a PasskeyCloneSuspected emitted and a warning logged) or before.
func (s *Service) FinishPasskeyLogin(ctx context.Context, ceremonyID, accountID string, response []byte) (*PasskeyLogin, error) {
	if s.webauthn == nil {
		return nil, s.noPasskeys
	}
	now := s.now()
	cer, session, err := s.consumeCeremony(ctx, ceremonyID, now, func(c *Ceremony) bool {
		return (c.Kind == CeremonyLogin && c.AccountID == accountID && accountID != "") || c.Kind == CeremonyPasswordless
	})
	if err != nil {
		return nil, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPasskeyInvalid, err)
	}
	owner := cer.AccountID
	var byID map[string]*Passkey
	var cred *webauthn.Credential
	// storeErr is a failure to read the store, which is no fault of the assertion.
	var storeErr error
	if cer.Kind == CeremonyLogin {
		var creds []webauthn.Credential
		if creds, byID, storeErr = s.credentials(ctx, owner); storeErr != nil {
			return nil, storeErr
		}
		cred, err = s.webauthn.ValidateLogin(&webauthnUser{handle: session.UserID, credentials: creds}, *session, parsed)
	} else {
		// The user handle the authenticator returns names the account.
		_, cred, err = s.webauthn.ValidatePasskeyLogin(func(_, handle []byte) (webauthn.User, error) {
			id, err := s.store.AccountByUserHandle(ctx, handle)
			switch {
			case errors.Is(err, ErrNotEnrolled):
				return nil, errors.New("no account has the passkey's user handle")
			case err != nil:
				storeErr = err
				return nil, err
			case accountID != "" && id != accountID:
				return nil, errors.New("the passkey is another account's")
			}
			creds, keys, err := s.credentials(ctx, id)
			owner, byID, storeErr = id, keys, err
			return &webauthnUser{handle: handle, credentials: creds}, err
		}, *session, parsed)
	}
	if storeErr != nil {
		return nil, storeErr
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPasskeyInvalid, err)
	}
	// go-webauthn verified the assertion with one of the credentials it was given.
	key := byID[base64.RawURLEncoding.EncodeToString(cred.ID)]
	if key == nil {
		return nil, fmt.Errorf("%w: credential not among the account's", ErrPasskeyInvalid)
	}
	if key.CloneWarning {
		return nil, ErrPasskeyCloned
	}
	flags := parsed.Response.AuthenticatorData.Flags
	received := parsed.Response.AuthenticatorData.Counter
	err = ErrCounterNotIncreased
	if !cred.Authenticator.CloneWarning {
		err = s.store.RecordPasskeyUse(ctx, owner, key.ID, received, flags.HasBackupState(), now)
	}
	if errors.Is(err, ErrCounterNotIncreased) {
		return nil, s.cloneSuspected(ctx, key, received, now)
	}
	if err != nil {
		return nil, fmt.Errorf("factors: record passkey use: %w", err)
	}
	return &PasskeyLogin{
		AccountID: owner,
		PasskeyID: key.ID,
		Method:    acr.Method{Name: acr.Passkey, At: now, UserVerified: flags.HasUserVerified(), DeviceBound: !flags.HasBackupEligible()},
	}, nil
}

// cloneSuspected marks key as cloned after an assertion whose counter, received, did not
// go above the stored one, emits PasskeyCloneSuspected and logs a warning, and returns
// ErrPasskeyCloned.
func (s *Service) cloneSuspected(ctx context.Context, key *Passkey, received uint32, now time.Time) error {
	s.logger.WarnContext(ctx, "factors: a passkey's signature counter did not increase: possible clone, passkey refused until removed",
		"account_id", key.AccountID, "passkey_id", key.ID, "stored_count", key.SignCount, "received_count", received)
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.MarkPasskeyCloned(ctx, key.AccountID, key.ID); err != nil {
			return err
		}
		return s.events.Emit(ctx, &events.PasskeyCloneSuspected{Meta: events.Meta{At: now}, UserID: key.AccountID,
			FactorID: key.ID, StoredCount: key.SignCount, ReceivedCount: received})
	})
	if err != nil {
		return fmt.Errorf("factors: mark passkey as cloned: %w (and %w)", err, ErrPasskeyCloned)
	}
	return ErrPasskeyCloned
}

// RenamePasskey renames the account's passkey id. It returns an *InputError for a bad
// name and ErrNotEnrolled for no such passkey.
func (s *Service) RenamePasskey(ctx context.Context, accountID, id, name string) error {
	name, err := passkeyName(name)
	if err != nil {
		return err
	}
	return s.store.RenamePasskey(ctx, accountID, id, name)
}

// RemovePasskey removes the account's passkey id (FactorRemoved by actorID, and mail to the
// owner). It returns ErrNotEnrolled for no such passkey.
func (s *Service) RemovePasskey(ctx context.Context, accountID, id, actorID string) error {
	keys, err := s.Passkeys(ctx, accountID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.ID == id {
			e := &events.FactorRemoved{UserID: accountID, Factor: events.FactorPasskey, FactorID: id, Label: k.Name, ActorID: actorID}
			return s.remove(ctx, func(ctx context.Context, accountID string) (bool, error) {
				return true, s.store.DeletePasskey(ctx, accountID, id)
			}, e)
		}
	}
	return ErrNotEnrolled
}

// saveCeremony stores the state of a ceremony of kind for the account and returns the
// opaque id that names it and when it lapses.
func (s *Service) saveCeremony(ctx context.Context, kind, accountID string, session *webauthn.SessionData) (string, time.Time, error) {
	data, err := json.Marshal(session)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("factors: encode ceremony: %w", err)
	}
	id, err := s.newID(32)
	if err != nil {
		return "", time.Time{}, err
	}
	now := s.now()
	c := &Ceremony{IDHash: hashID(id), Kind: kind, AccountID: accountID, SessionData: data, CreatedAt: now, ExpiresAt: now.Add(s.cfg.CeremonyLifespan)}
	if err := s.store.CreateCeremony(ctx, c); err != nil {
		return "", time.Time{}, fmt.Errorf("factors: store ceremony: %w", err)
	}
	return id, c.ExpiresAt, nil
}

// consumeCeremony spends the ceremony id and returns it with its state; one that does not
// fit (another kind, begun for another account) is ErrCeremonyInvalid, spent all the
// same.
func (s *Service) consumeCeremony(ctx context.Context, id string, now time.Time, fits func(*Ceremony) bool) (*Ceremony, *webauthn.SessionData, error) {
	c, err := s.store.ConsumeCeremony(ctx, hashID(id), now)
	if err != nil {
		return nil, nil, err
	}
	if !fits(c) {
		return nil, nil, ErrCeremonyInvalid
	}
	var session webauthn.SessionData
	if err := json.Unmarshal(c.SessionData, &session); err != nil {
		return nil, nil, fmt.Errorf("factors: ceremony state: %w", err)
	}
	return c, &session, nil
}
