package storage

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm/schema"
)

// The GORM models below mirror the tables migration 1 creates (migrations.go); the records
// and fosite requests are converted to and from them in the files that use them. Times are
// written in UTC (see utc); gorm's automatic timestamps are off so the store's clock decides.

// stringList is a list of strings stored as JSON text. An empty list reads back as nil.
type stringList []string

// Value implements driver.Valuer.
func (l stringList) Value() (driver.Value, error) {
	if len(l) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal([]string(l))
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// Scan implements sql.Scanner.
func (l *stringList) Scan(src any) error {
	var data []byte
	switch v := src.(type) {
	case nil:
		*l = nil
		return nil
	case string:
		data = []byte(v)
	case []byte:
		data = v
	default:
		return fmt.Errorf("storage: scan string list from %T", src)
	}
	var out []string
	if err := json.Unmarshal(data, &out); err != nil {
		return fmt.Errorf("storage: scan string list: %w", err)
	}
	if len(out) == 0 {
		out = nil
	}
	*l = out
	return nil
}

type clientModel struct {
	ID                     string `gorm:"primaryKey"`
	SecretHash             []byte
	Name                   string
	RedirectURIs           stringList `gorm:"column:redirect_uris"`
	PostLogoutRedirectURIs stringList `gorm:"column:post_logout_redirect_uris"`
	GrantTypes             stringList
	ResponseTypes          stringList
	Scopes                 stringList
	Audience               stringList
	Public                 bool
	FirstParty             bool
	ResourceServer         bool
	IDTokenAlg             string `gorm:"column:id_token_alg"`
	RequirePAR             bool   `gorm:"column:require_par"`
	RequireDPoP            bool   `gorm:"column:require_dpop"`
	// The columns of migration 12 (ClientAuthentication).
	TokenEndpointAuthMethod string `gorm:"column:token_endpoint_auth_method"`
	JWKSURI                 string `gorm:"column:jwks_uri"`
	JWKS                    string `gorm:"column:jwks"`
	SecretSealed            []byte `gorm:"column:secret_sealed"`
	RequestObjectSigningAlg string `gorm:"column:request_object_signing_alg"`
	// BackchannelLogoutURI and BackchannelLogoutSessionRequired: migration 17.
	BackchannelLogoutURI             string `gorm:"column:backchannel_logout_uri"`
	BackchannelLogoutSessionRequired bool   `gorm:"column:backchannel_logout_session_required"`
	// The columns of migration 21 (ClientRegistration).
	RegistrationTokenHash string    `gorm:"column:registration_token_hash"`
	LogoURI               string    `gorm:"column:logo_uri"`
	PolicyURI             string    `gorm:"column:policy_uri"`
	TOSURI                string    `gorm:"column:tos_uri"`
	CreatedAt             time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt             time.Time `gorm:"autoUpdateTime:false"`
}

func (clientModel) TableName(n schema.Namer) string { return n.TableName("clients") }

type userModel struct {
	ID              string `gorm:"primaryKey"`
	Email           string
	EmailLower      string
	EmailVerified   bool
	Name            string
	PasswordHash    string
	Role            string
	Status          string
	RequirePIN      bool       `gorm:"column:require_pin"`
	SocialProviders stringList `gorm:"column:social_providers"`
	// Profile is the standard profile as JSON (schemaV18).
	Profile   profileColumn `gorm:"column:profile"`
	CreatedAt time.Time     `gorm:"autoCreateTime:false"`
	UpdatedAt time.Time     `gorm:"autoUpdateTime:false"`
}

func (userModel) TableName(n schema.Namer) string { return n.TableName("users") }

type sessionModel struct {
	IDHash string `gorm:"primaryKey"`
	// SID is the session's public id (migration 17).
	SID       string `gorm:"column:sid"`
	UserID    string
	Kind      string
	Method    string
	AuthTime  time.Time
	CreatedAt time.Time `gorm:"autoCreateTime:false"`
	ExpiresAt time.Time
	// Methods is the JSON list of the methods the session completed (migration 30).
	Methods string
}

func (sessionModel) TableName(n schema.Namer) string { return n.TableName("sessions") }

type authRequestModel struct {
	IDHash      string `gorm:"primaryKey"`
	ClientID    string
	Form        string
	RequestedAt time.Time
	ExpiresAt   time.Time
	UserID      string
	AuthTime    *time.Time
}

func (authRequestModel) TableName(n schema.Namer) string { return n.TableName("auth_requests") }

// requestColumns are the columns every table holding a serialized fosite.Requester has.
type requestColumns struct {
	Signature         string `gorm:"primaryKey"`
	RequestID         string
	RequestedAt       time.Time
	ClientID          string
	Subject           string
	RequestedScopes   stringList
	GrantedScopes     stringList
	RequestedAudience stringList
	GrantedAudience   stringList
	// Form is the request form, url.Values.Encode()d.
	Form string
	// SessionData is json.Marshal of the fosite session.
	SessionData string
	// ExpiresAt is nil for a row that expires only when deleted.
	ExpiresAt *time.Time
}

// The fosite tables embed requestColumns through a named field: gorm ignores an embedded
// field whose type is unexported.

type authorizationCodeModel struct {
	Request requestColumns `gorm:"embedded"`
	Active  bool
	// PKCEForm is the form of the code's PKCE request, nil when it has none (migration 11).
	PKCEForm *string `gorm:"column:pkce_form"`
	// OIDCKey is oidcKey of the code, OIDCForm the form of its OpenID Connect request; both
	// nil when it has none (migration 11).
	OIDCKey  *string `gorm:"column:oidc_key"`
	OIDCForm *string `gorm:"column:oidc_form"`
	// SID is the browser session the code was issued in, "" for none (migration 17).
	SID string `gorm:"column:sid"`
}

func (authorizationCodeModel) TableName(n schema.Namer) string {
	return n.TableName("authorization_codes")
}

type accessTokenModel struct {
	Request requestColumns `gorm:"embedded"`
}

func (accessTokenModel) TableName(n schema.Namer) string { return n.TableName("access_tokens") }

type refreshTokenModel struct {
	Request         requestColumns `gorm:"embedded"`
	AccessSignature string
	Active          bool
	// RotatedAt and GraceUsed: see schemaV19.
	RotatedAt *time.Time
	GraceUsed bool
	// SID is the browser session of the grant, "" for none (migration 17).
	SID string `gorm:"column:sid"`
}

func (refreshTokenModel) TableName(n schema.Namer) string { return n.TableName("refresh_tokens") }

type pkceRequestModel struct {
	Request requestColumns `gorm:"embedded"`
}

func (pkceRequestModel) TableName(n schema.Namer) string { return n.TableName("pkce_requests") }

type oidcSessionModel struct {
	Request requestColumns `gorm:"embedded"`
}

func (oidcSessionModel) TableName(n schema.Namer) string { return n.TableName("oidc_sessions") }

type consentModel struct {
	UserID    string `gorm:"primaryKey"`
	ClientID  string `gorm:"primaryKey"`
	Scopes    stringList
	GrantedAt time.Time
}

func (consentModel) TableName(n schema.Namer) string { return n.TableName("consents") }

type signingKeyModel struct {
	KID       string `gorm:"column:kid;primaryKey"`
	Algorithm string
	Sealed    []byte
	CreatedAt time.Time `gorm:"autoCreateTime:false"`
	RetiredAt *time.Time
}

func (signingKeyModel) TableName(n schema.Namer) string { return n.TableName("signing_keys") }

type clientAssertionJTIModel struct {
	JTI       string `gorm:"column:jti;primaryKey"`
	ExpiresAt time.Time
}

func (clientAssertionJTIModel) TableName(n schema.Namer) string {
	return n.TableName("client_assertion_jtis")
}

// timeUTC returns a time read from the database in UTC.
func timeUTC(t time.Time) time.Time { return t.UTC() }

// timePtrUTC is timeUTC for optional times.
func timePtrUTC(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

type oneTimeTokenModel struct {
	IDHash      string `gorm:"primaryKey"`
	Purpose     string
	UserID      string
	Email       string
	RedirectURI string `gorm:"column:redirect_uri"`
	Resume      string
	// PausedRequest is publicauth.Destination.PausedRequest (added by migration v7).
	PausedRequest string
	Payload       string
	CreatedAt     time.Time `gorm:"autoCreateTime:false"`
	ExpiresAt     time.Time
	UsedAt        *time.Time
}

func (oneTimeTokenModel) TableName(n schema.Namer) string { return n.TableName("one_time_tokens") }

type pinChallengeModel struct {
	ID          string `gorm:"primaryKey"`
	UserID      string
	PINHash     string `gorm:"column:pin_hash"`
	Kind        string
	Method      string
	RedirectURI string `gorm:"column:redirect_uri"`
	Resume      string
	// PausedRequest is publicauth.Destination.PausedRequest (added by migration v7).
	PausedRequest string
	Attempts      int
	CreatedAt     time.Time `gorm:"autoCreateTime:false"`
	ExpiresAt     time.Time
	UsedAt        *time.Time
}

func (pinChallengeModel) TableName(n schema.Namer) string { return n.TableName("pin_challenges") }
