package publicauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/gatehouse-id/gatehouse/events"
)

// mailTimeout bounds one send, and the background preparation of a mail, so a hung mail
// server or database cannot pile up goroutines.
const mailTimeout = time.Minute

// Paths the mailed links open, under Config.BaseURL. The provider serves them.
const (
	PathVerifyEmail   = "/api/public/verify-email"
	PathMagicLogin    = "/api/public/magic-login"
	PathResetPassword = "/reset-password"
	// PathConfirmPassword is the hosted form where the owner of a social-only account
	// confirms the password a registration with its address asked to add.
	PathConfirmPassword = "/confirm-password"
)

// linkKind is what a token purpose mails: its mail kind, the path its link opens and the
// counter of the per-account mail limit.
type linkKind struct{ mail, path, limit string }

// linkKindOf returns the linkKind of a purpose this package issues links for.
func linkKindOf(purpose string) (linkKind, error) {
	switch purpose {
	case PurposeVerifyEmail:
		return linkKind{MailVerifyEmail, PathVerifyEmail, mailLimitVerification}, nil
	case PurposeMagicLink:
		return linkKind{MailMagicLink, PathMagicLogin, mailLimitMagicLink}, nil
	case PurposePasswordReset:
		return linkKind{MailPasswordReset, PathResetPassword, mailLimitReset}, nil
	case PurposeLinkPassword:
		// The verification path: opening it proves the address, and with it the right to
		// add the password.
		return linkKind{MailLinkPassword, PathConfirmPassword, mailLimitLinkPassword}, nil
	}
	return linkKind{}, fmt.Errorf("publicauth: no link mail for purpose %q", purpose)
}

// SendVerification mails u a new email verification link for u's current address: it
// returns once the mail is in the durable outbox, and the mail goes out from there
// (retried while the mailer fails). It counts against the per-account mail limit
// (*RateLimitError over it).
func (s *Service) SendVerification(ctx context.Context, u *User) error {
	return s.prepareLink(ctx, u, PurposeVerifyEmail, Destination{}, "")
}

// ResendVerification mails a new verification link to the account with that email when it
// exists, is active and is not yet verified. Its answer is the same whatever the account
// (nil; an *InputError only for a malformed address): the mail goes out in the background,
// and the per-account mail limit silently drops it.
func (s *Service) ResendVerification(ctx context.Context, email string) error {
	if s.verifier == nil {
		return &UnavailableError{Feature: FeatureEmailVerification}
	}
	u, err := s.accountForMail(ctx, email)
	if err != nil || u == nil || u.EmailVerified {
		return err
	}
	s.mailLinkLater(ctx, u, PurposeVerifyEmail, Destination{})
	return nil
}

// VerifyEmail consumes an email verification token and marks the address it was sent to
// verified, once the password of the account is typed with it. Typing it is what makes the
// link safe: anyone can register someone else's address, and a verified account is one that
// social sign-in links to and magic links open. Were the link enough, an owner (or their
// mail scanner) opening it would verify an account whose password a stranger chose, and the
// stranger would keep the owner's account for good. Owner and password together prove one
// person; an owner who did not register just ignores the mail, or resets the password.
//
// A first verification ends every session of the account and revokes its tokens and
// consents, in the same transaction (markVerified). A password that does not match yields
// ErrPasswordMismatch and leaves the link usable; a token that is unknown, used, expired or
// sent to an address the account no longer has yields ErrInvalidToken. An address already
// verified, or an account with no password, needs no password.
func (s *Service) VerifyEmail(ctx context.Context, token, password string) (*User, error) {
	if s.verifier == nil {
		return nil, &UnavailableError{Feature: FeatureEmailVerification}
	}
	var verified *User
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		_, u, err := s.consumeLink(ctx, token, PurposeVerifyEmail)
		if err != nil {
			return err
		}
		if !u.EmailVerified && u.HasPassword() {
			if err := s.passwordIsUsers(ctx, u, password); err != nil {
				return err
			}
		}
		verified = u
		return s.markVerified(ctx, u)
	})
	if err != nil {
		return nil, err
	}
	return verified, nil
}

// passwordIsUsers checks that password is u's own: nil, or ErrPasswordMismatch.
// Gatehouse's own users are checked against their hash; any other Accounts store is
// asked to authenticate the account's address with it.
func (s *Service) passwordIsUsers(ctx context.Context, u *User, password string) error {
	if u.external {
		got, err := s.users.authenticate(ctx, u.Email, password)
		switch {
		case errors.Is(err, ErrBadCredentials) || (err == nil && got.ID != u.ID):
			return ErrPasswordMismatch
		case errors.Is(err, ErrAccountDisabled):
			return err
		case err != nil:
			return fmt.Errorf("publicauth: check password: %w", err)
		}
		return nil
	}
	ok, err := s.passwordMatches(ctx, password, u.PasswordHash)
	switch {
	case errors.Is(err, errMalformedHash) || (err == nil && !ok):
		return ErrPasswordMismatch
	case err != nil:
		return err
	}
	return nil
}

// ConfirmPassword adds to a social-only account the password a registration with its
// address asked for (Register), once the owner opened the mailed link (PathConfirmPassword)
// and typed that same password again. Typing it again is what makes the link safe: a
// stranger who registered the owner's address chose the password, so an owner who clicks
// the link without having asked cannot confirm it, and the stranger never sees the link.
// It returns the account, now with the password and a verified address.
//
// A password that does not match yields ErrPasswordMismatch and leaves the link usable (the
// whole change is one transaction); a token that is unknown, used, superseded or expired,
// or of an account that meanwhile got a password, yields ErrInvalidToken; an inactive
// account ErrAccountDisabled.
func (s *Service) ConfirmPassword(ctx context.Context, token, password string) (*User, error) {
	var confirmed *User
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		t, u, err := s.consumeLink(ctx, token, PurposeLinkPassword)
		if err != nil {
			return err
		}
		if u.Status != StatusActive {
			return ErrAccountDisabled
		}
		ok, err := s.passwordMatches(ctx, password, t.Payload)
		switch {
		case errors.Is(err, errMalformedHash) || (err == nil && !ok):
			return ErrPasswordMismatch
		case err != nil:
			return err
		}
		if err := s.addPassword(ctx, u, t.Payload); errors.Is(err, errHasPassword) {
			return ErrInvalidToken
		} else if err != nil {
			return err
		}
		confirmed = u
		return nil
	})
	if err != nil {
		return nil, err
	}
	return confirmed, nil
}

// MagicLinkRequest asks for a sign-in link (POST /api/public/request-magic-link, or the
// hosted login page inside an authorization request).
type MagicLinkRequest struct {
	Email string
	// RedirectURI is where the browser goes once the link logged it in; required unless
	// Resume is set. It must be a registered redirect URI of some client or lie within
	// Config.MagicLinkAllowedOrigins.
	RedirectURI string
	// Resume is an internal path the login goes to; set only by the provider.
	Resume string
	// PausedRequest refers to the paused authorization request the login continues
	// (Destination.PausedRequest); set only by the provider.
	PausedRequest string
}

// RequestMagicLink mails a single-use sign-in link (Config.MagicLinkLifespan) to the account
// with that email, superseding its older unused links. The destination is checked first,
// before any account lookup: an empty, foreign or malformed redirect URI, or a Resume that is
// not an internal path, yields an *InputError. After that the answer is nil whatever the
// account: unknown, unverified and inactive accounts get no mail, the per-account mail limit
// silently drops it, and a send failure is only logged (the mail goes out in the background).
func (s *Service) RequestMagicLink(ctx context.Context, req MagicLinkRequest) error {
	dest := Destination{RedirectURI: req.RedirectURI, Resume: req.Resume, PausedRequest: req.PausedRequest}
	if err := s.checkDestination(ctx, dest); err != nil {
		return err
	}
	u, err := s.accountForMail(ctx, req.Email)
	if err != nil || u == nil || !u.EmailVerified {
		return err
	}
	s.mailLinkLater(ctx, u, PurposeMagicLink, dest)
	return nil
}

// checkDestination checks where a magic link may lead: Resume, when set, must be an internal
// path; RedirectURI is required without Resume or PausedRequest and, when set, must be
// registered or within an allowed origin.
func (s *Service) checkDestination(ctx context.Context, d Destination) error {
	if d.Resume != "" && !s.isInternalPath(d.Resume) {
		return &InputError{Field: "resume", Reason: "must be a path on this server"}
	}
	if d.RedirectURI == "" {
		if d.Resume == "" && d.PausedRequest == "" {
			return &InputError{Field: "redirect_uri", Reason: "is required"}
		}
		return nil
	}
	if origin, ok := originOf(d.RedirectURI); ok && s.allowedOrigins[origin] {
		return nil
	}
	ok, err := s.store.IsRegisteredRedirectURI(ctx, d.RedirectURI)
	if err != nil {
		return fmt.Errorf("publicauth: check redirect URI: %w", err)
	}
	if !ok {
		return &InputError{Field: "redirect_uri", Reason: "is not a registered redirect URI"}
	}
	return nil
}

// ConsumeMagicLink consumes a magic-link token and returns its account and where the login
// goes. Opening the link proves the address, so it is marked verified. It returns
// ErrInvalidToken for a token that is unknown, used, expired or sent to an address the
// account no longer has, and ErrAccountDisabled for an inactive account. It starts no
// session: the caller asks PINRequired and then starts the session or a PIN challenge.
func (s *Service) ConsumeMagicLink(ctx context.Context, token string) (*User, Destination, error) {
	var u *User
	var dest Destination
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		t, user, err := s.consumeLink(ctx, token, PurposeMagicLink)
		if err != nil {
			return err
		}
		if user.Status != StatusActive {
			return ErrAccountDisabled
		}
		u, dest = user, Destination{RedirectURI: t.RedirectURI, Resume: t.Resume, PausedRequest: t.PausedRequest}
		return s.markVerified(ctx, u)
	})
	if err != nil {
		s.loginFailed(ctx, MethodMagicLink, u, err)
		return nil, Destination{}, err
	}
	return u, dest, nil
}

// CheckMagicLink reports, without spending it, whether a magic-link token would log in:
// the errors are ConsumeMagicLink's. Opening the link (a GET, which mail scanners make too)
// only checks it; the login is a separate, deliberate POST.
func (s *Service) CheckMagicLink(ctx context.Context, token string) error {
	u, err := s.checkLink(ctx, token, PurposeMagicLink)
	if err != nil {
		return err
	}
	if u.Status != StatusActive {
		return ErrAccountDisabled
	}
	return nil
}

// RequestPasswordReset mails a single-use password reset link (Config.PasswordResetLifespan)
// to the active account with that email, verified or not, superseding its older unused
// links. Its answer is nil whatever the account (an *InputError only for a malformed
// address): unknown and inactive accounts and accounts without a password (social-only:
// adding a password to those comes with account linking) get no mail, the per-account mail
// limit silently drops it, and a send failure is only logged.
func (s *Service) RequestPasswordReset(ctx context.Context, email string) error {
	if s.passwords == nil {
		return &UnavailableError{Feature: FeaturePasswordReset}
	}
	u, err := s.accountForMail(ctx, email)
	if err != nil || u == nil || !u.HasPassword() {
		return err
	}
	s.mailLinkLater(ctx, u, PurposePasswordReset, Destination{})
	return nil
}

// ResetPassword sets a new password with a reset token, through the Accounts store's
// PasswordSetter (an *UnavailableError without one). The password must pass the password
// rule, including not containing the account's address (*InputError; the token is not spent
// then). The token must be usable and its account active (ErrInvalidToken,
// ErrAccountDisabled); then the store sets the password, and in one transaction the token
// is consumed, the address marked verified (the link proved it), every session of the user
// ended and every token and consent the user granted to clients revoked (revokeAccess); the
// account's failed logins are cleared.
//
// The password is set before that transaction, so the store's hashing never holds it open
// and a store outside Gatehouse's database can take part: a failed transaction leaves the
// link usable, so opening it again finishes the reset; of two resets racing with one link,
// one consumes it and the other gets ErrInvalidToken, though its password may have been
// set last (both held the same link).
func (s *Service) ResetPassword(ctx context.Context, token, password string) (*User, error) {
	if s.passwords == nil {
		return nil, &UnavailableError{Feature: FeaturePasswordReset}
	}
	if err := checkPassword(password); err != nil {
		return nil, err
	}
	if token == "" {
		return nil, &InputError{Field: "token", Reason: "is required"}
	}
	u, err := s.checkLink(ctx, token, PurposePasswordReset)
	if err != nil {
		return nil, err
	}
	if u.Status != StatusActive {
		return nil, ErrAccountDisabled
	}
	if err := checkAccountPassword(password, u.Email); err != nil {
		return nil, err
	}
	// Gatehouse's own users get the new hash in the transaction that spends the link and
	// revokes the account's grants (DESIGN.md §3): of racing resets only the one that spends
	// the link sets its password, and a failure changes nothing. The hash is computed
	// first, outside the transaction. Another Accounts store cannot join the transaction:
	// its password is set first, and should the transaction fail, the link stays usable and
	// opening it again finishes the job.
	var setHash func(ctx context.Context) error
	if s.own {
		hash, err := s.newPasswordHash(ctx, password)
		if err != nil {
			return nil, err
		}
		setHash = func(ctx context.Context) error {
			changed, err := s.store.ChangeUser(ctx, u.ID, UserChange{PasswordHash: &hash})
			if err != nil {
				return fmt.Errorf("publicauth: set password: %w", err)
			}
			u.PasswordHash = changed.PasswordHash
			return nil
		}
	} else if err := s.passwords.SetPassword(ctx, u.ID, password); err != nil {
		return nil, fmt.Errorf("publicauth: set password: %w", err)
	}
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		var err error
		if _, u, err = s.consumeLink(ctx, token, PurposePasswordReset); err != nil {
			return err
		}
		if setHash != nil {
			if err := setHash(ctx); err != nil {
				return err
			}
		}
		if err := s.markVerified(ctx, u); err != nil {
			return err
		}
		// markVerified revoked already when the address was new.
		if err := s.events.Emit(ctx, &events.PasswordReset{UserID: u.ID}); err != nil {
			return err
		}
		return s.revokeAccess(ctx, u.ID, events.ReasonPasswordReset)
	})
	if err != nil {
		return nil, err
	}
	s.clearFailedLogins(ctx, u.Email)
	return u, nil
}

// checkLink returns the account of a usable link token of purpose without spending it:
// ErrInvalidToken for a token that is unknown, used, expired or sent to an address the
// account no longer has.
func (s *Service) checkLink(ctx context.Context, token, purpose string) (*User, error) {
	if !plausibleToken(token) {
		return nil, ErrInvalidToken
	}
	t, err := s.store.UsableOneTimeToken(ctx, hashToken(token), purpose, s.now())
	if errors.Is(err, ErrInvalidToken) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("publicauth: check token: %w", err)
	}
	_, u, err := s.linkAccount(ctx, t)
	return u, err
}

// accountForMail looks up the account a mail-sending endpoint serves. It returns an
// *InputError for a malformed address, nil and no error for an unknown or inactive account,
// and an error only when the store fails.
func (s *Service) accountForMail(ctx context.Context, email string) (*User, error) {
	email, err := normalizeEmail(email)
	if err != nil {
		return nil, err
	}
	u, err := s.userForLogin(ctx, email)
	if err != nil || u == nil || u.Status != StatusActive {
		return nil, err
	}
	return u, nil
}

// consumeLink consumes a link token of one of the purposes and loads its account, which
// must still have the address the token was sent to.
func (s *Service) consumeLink(ctx context.Context, token string, purposes ...string) (*OneTimeToken, *User, error) {
	if !plausibleToken(token) {
		return nil, nil, ErrInvalidToken
	}
	var t *OneTimeToken
	err := ErrInvalidToken
	// A token has one purpose: at most one of these conditional updates can succeed.
	for _, purpose := range purposes {
		t, err = s.store.ConsumeOneTimeToken(ctx, hashToken(token), purpose, s.now())
		if !errors.Is(err, ErrInvalidToken) {
			break
		}
	}
	if errors.Is(err, ErrInvalidToken) {
		return nil, nil, ErrInvalidToken
	}
	if err != nil {
		return nil, nil, fmt.Errorf("publicauth: consume token: %w", err)
	}
	return s.linkAccount(ctx, t)
}

// plausibleToken reports whether token could be a link token at all, so that nothing
// longer is hashed or looked up.
func plausibleToken(token string) bool {
	return token != "" && len(token) <= 2*tokenBytes
}

// linkAccount loads the account of link token t, which must still have the address the
// token was sent to.
func (s *Service) linkAccount(ctx context.Context, t *OneTimeToken) (*OneTimeToken, *User, error) {
	u, err := s.users.userByID(ctx, t.UserID)
	if errors.Is(err, ErrUserNotFound) {
		return nil, nil, ErrInvalidToken
	}
	if err != nil {
		return nil, nil, fmt.Errorf("publicauth: load user: %w", err)
	}
	if !sameEmail(t.Email, u.Email) {
		return nil, nil, ErrInvalidToken
	}
	return t, u, nil
}

// markVerified marks u's address verified (EmailVerifier) unless it already is, or the
// Accounts store records no verification. A first verification also revokes everything
// issued for the account (revokeAccess): until then anyone could have registered the
// address, and only now has its owner shown up. Run it inside a transaction.
func (s *Service) markVerified(ctx context.Context, u *User) error {
	if u.EmailVerified || s.verifier == nil {
		return nil
	}
	if err := s.verifier.MarkEmailVerified(ctx, u.ID); err != nil {
		return fmt.Errorf("publicauth: mark email verified: %w", err)
	}
	u.EmailVerified = true
	if err := s.events.Emit(ctx, &events.EmailVerified{UserID: u.ID, Email: u.Email}); err != nil {
		return err
	}
	return s.revokeAccess(ctx, u.ID, events.ReasonEmailVerified)
}

// prepareLink counts a mail of the purpose against the per-account limit, renders its
// mail and, in one transaction, stores a new token for u carrying payload (superseding
// older unused tokens of the purpose, except for verification links) and queues the mail
// in the outbox: the link exists exactly when its mail is on its way.
func (s *Service) prepareLink(ctx context.Context, u *User, purpose string, dest Destination, payload string) error {
	kind, err := linkKindOf(purpose)
	if err != nil {
		return err
	}
	if err := s.allowMail(ctx, kind.limit, u.ID); err != nil {
		return err
	}
	token, err := s.newToken()
	if err != nil {
		return err
	}
	now := s.now()
	lifespan := s.linkLifespan[purpose]
	t := &OneTimeToken{
		IDHash:        hashToken(token),
		Purpose:       purpose,
		UserID:        u.ID,
		Email:         u.Email,
		RedirectURI:   dest.RedirectURI,
		Resume:        dest.Resume,
		PausedRequest: dest.PausedRequest,
		Payload:       payload,
		CreatedAt:     now,
		ExpiresAt:     now.Add(lifespan),
	}
	m, err := s.render(kind.mail, u, MailData{
		Link:      s.baseURL + kind.path + "?token=" + url.QueryEscape(token),
		ExpiresIn: lifespan,
	})
	if err != nil {
		return err
	}
	supersede := purpose != PurposeVerifyEmail
	return s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.CreateOneTimeToken(ctx, t, supersede); err != nil {
			return fmt.Errorf("publicauth: store %s token: %w", purpose, err)
		}
		return s.queueMail(ctx, kind.mail, u.ID, m, t.ExpiresAt)
	})
}

// mailLinkLater issues a link and queues its mail in the background: the limit check, the
// rendering and the transaction too, so the answer takes as long whether or not the
// account exists and a mail goes out. Failures (the limit included) are logged. The mail is
// durable once that transaction commits, a few milliseconds after the answer: Wait and
// Close wait for it, and only a crash of the process in between loses it.
func (s *Service) mailLinkLater(ctx context.Context, u *User, purpose string, dest Destination) {
	ctx = context.WithoutCancel(ctx)
	s.mailing.Go(func() {
		ctx, cancel := context.WithTimeout(ctx, mailTimeout)
		defer cancel()
		err := s.prepareLink(ctx, u, purpose, dest, "")
		var limited *RateLimitError
		switch {
		case errors.As(err, &limited):
			s.logger.WarnContext(ctx, "publicauth: per-account mail limit reached, mail not sent", "kind", purpose, "user_id", u.ID)
		case err != nil:
			s.logger.ErrorContext(ctx, "publicauth: could not queue mail", "kind", purpose, "user_id", u.ID, "error", err)
		}
	})
}

// render renders the mail of kind to u.
func (s *Service) render(kind string, u *User, d MailData) (Message, error) {
	d.Name, d.Email, d.ServiceName = u.Name, u.Email, s.serviceName
	m, err := s.mail.render(kind, d)
	if err != nil {
		return Message{}, fmt.Errorf("publicauth: render %s mail: %w", kind, err)
	}
	m.To = u.Email
	return m, nil
}
