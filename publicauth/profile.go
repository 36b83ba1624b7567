package publicauth

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	_ "time/tzdata" // zoneinfo is checked against the IANA database, present or not on the host
	"unicode"
	"unicode/utf8"
)

// Profile is a user's OpenID Connect standard profile (Core §5.1) beyond the email address
// and name, which User keeps in fields of their own. Its JSON names are the claim names; an
// empty field is a claim the user does not have.
type Profile struct {
	GivenName         string `json:"given_name,omitempty"`
	FamilyName        string `json:"family_name,omitempty"`
	MiddleName        string `json:"middle_name,omitempty"`
	Nickname          string `json:"nickname,omitempty"`
	PreferredUsername string `json:"preferred_username,omitempty"`
	// Profile, Picture and Website are absolute http(s) URLs.
	Profile string `json:"profile,omitempty"`
	Picture string `json:"picture,omitempty"`
	Website string `json:"website,omitempty"`
	Gender  string `json:"gender,omitempty"`
	// Birthdate is YYYY or YYYY-MM-DD (0000-MM-DD when the year is withheld).
	Birthdate string `json:"birthdate,omitempty"`
	// Zoneinfo is an IANA time zone name, e.g. "Europe/Paris".
	Zoneinfo string `json:"zoneinfo,omitempty"`
	// Locale is a BCP 47 language tag, e.g. "en-US".
	Locale string `json:"locale,omitempty"`
	// PhoneNumber is in E.164 form, e.g. "+14155550100".
	PhoneNumber string `json:"phone_number,omitempty"`
	// PhoneNumberVerified is set by an operator (the admin API): the user cannot set it, and
	// changing the number clears it.
	PhoneNumberVerified bool `json:"phone_number_verified,omitempty"`
	// Address is the postal address; nil for none.
	Address *Address `json:"address,omitempty"`
}

// Address is the postal address claim (OpenID Connect Core §5.1.1).
type Address struct {
	Formatted     string `json:"formatted,omitempty"`
	StreetAddress string `json:"street_address,omitempty"`
	Locality      string `json:"locality,omitempty"`
	Region        string `json:"region,omitempty"`
	PostalCode    string `json:"postal_code,omitempty"`
	Country       string `json:"country,omitempty"`
}

// IsZero reports whether the address has no field set.
func (a *Address) IsZero() bool { return a == nil || *a == Address{} }

// ProfileChange is a change of a user's name and profile: each field that is not nil is
// set (to "" to clear it). An Address that is not nil replaces the whole address; an empty
// one clears it.
type ProfileChange struct {
	Name, GivenName, FamilyName, MiddleName, Nickname, PreferredUsername        *string
	Profile, Picture, Website, Gender, Birthdate, Zoneinfo, Locale, PhoneNumber *string
	// PhoneNumberVerified is for operators only (ChangeProfile's byOperator).
	PhoneNumberVerified *bool
	Address             *Address
}

// IsZero reports whether c changes nothing.
func (c ProfileChange) IsZero() bool { return c == ProfileChange{} }

// FeatureProfileEditing is the UnavailableError.Feature of a profile change with a store
// given with WithAccounts: its accounts' profiles are the store's (Account.Claims).
const FeatureProfileEditing = "profile editing"

// Limits of profile values, in characters.
const (
	maxProfileText = 256
	maxProfileURL  = 2048
	maxFormatted   = 1024
)

var (
	// localePattern is a BCP 47 tag's shape: a 2–3 (or 4–8) letter language and subtags of
	// 1–8 letters or digits. "_" is accepted for the POSIX spelling (en_US) Core §5.1 notes.
	localePattern = regexp.MustCompile(`^[A-Za-z]{2,8}([-_][A-Za-z0-9]{1,8})*$`)
	// e164Pattern is an E.164 number: "+", a country code not starting with 0, 15 digits
	// at most.
	e164Pattern = regexp.MustCompile(`^\+[1-9][0-9]{1,14}$`)
)

// validate checks every value c sets; the first refusal is an *InputError naming the
// field by its JSON name in the /api/public/me body.
func (c ProfileChange) validate(now time.Time) error {
	texts := []struct {
		field string
		value *string
	}{
		{"name", c.Name}, {"givenName", c.GivenName}, {"familyName", c.FamilyName},
		{"middleName", c.MiddleName}, {"nickname", c.Nickname},
		{"preferredUsername", c.PreferredUsername}, {"gender", c.Gender},
	}
	for _, t := range texts {
		if t.value != nil {
			if err := checkText(t.field, *t.value, maxProfileText); err != nil {
				return err
			}
		}
	}
	for _, u := range []struct {
		field string
		value *string
	}{{"profile", c.Profile}, {"picture", c.Picture}, {"website", c.Website}} {
		if u.value != nil && *u.value != "" && !validWebURL(*u.value) {
			return &InputError{Field: u.field, Reason: "must be an absolute http or https URL"}
		}
	}
	if c.Birthdate != nil && *c.Birthdate != "" && !validBirthdate(*c.Birthdate, now) {
		return &InputError{Field: "birthdate", Reason: "must be YYYY or YYYY-MM-DD, not in the future"}
	}
	if c.Zoneinfo != nil && *c.Zoneinfo != "" && !validZone(*c.Zoneinfo) {
		return &InputError{Field: "zoneinfo", Reason: "must be an IANA time zone name such as Europe/Paris"}
	}
	if c.Locale != nil && *c.Locale != "" && !localePattern.MatchString(*c.Locale) {
		return &InputError{Field: "locale", Reason: "must be a BCP 47 language tag such as en-US"}
	}
	if c.PhoneNumber != nil && *c.PhoneNumber != "" && !e164Pattern.MatchString(*c.PhoneNumber) {
		return &InputError{Field: "phoneNumber", Reason: "must be an E.164 number such as +14155550100"}
	}
	if a := c.Address; a != nil {
		for _, t := range []struct {
			field, value string
			max          int
		}{
			{"address.formatted", a.Formatted, maxFormatted}, {"address.streetAddress", a.StreetAddress, maxFormatted},
			{"address.locality", a.Locality, maxProfileText}, {"address.region", a.Region, maxProfileText},
			{"address.postalCode", a.PostalCode, maxProfileText}, {"address.country", a.Country, maxProfileText},
		} {
			if err := checkText(t.field, t.value, t.max); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkText refuses a value that is not UTF-8, is longer than max characters, or holds
// control characters other than the line breaks a postal address may have.
func checkText(field, v string, max int) error {
	if !utf8.ValidString(v) || utf8.RuneCountInString(v) > max {
		return &InputError{Field: field, Reason: fmt.Sprintf("must be at most %d characters of text", max)}
	}
	for _, r := range v {
		if unicode.IsControl(r) && !(r == '\n' && strings.HasPrefix(field, "address.")) {
			return &InputError{Field: field, Reason: "must not hold control characters"}
		}
	}
	return nil
}

// validWebURL reports whether s is an absolute http or https URL with a host and no
// credentials.
func validWebURL(s string) bool {
	if len(s) > maxProfileURL {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// validBirthdate reports whether s is YYYY or YYYY-MM-DD (year 0000 meaning withheld), not
// after now.
func validBirthdate(s string, now time.Time) bool {
	switch len(s) {
	case 4:
		y, err := time.Parse("2006", s)
		return err == nil && y.Year() <= now.Year()
	case 10:
		if strings.HasPrefix(s, "0000-") {
			// Any leap year checks the month and day of a date whose year is withheld.
			_, err := time.Parse("2006-01-02", "2000"+s[4:])
			return err == nil
		}
		d, err := time.Parse("2006-01-02", s)
		return err == nil && !d.After(now)
	}
	return false
}

// validZone reports whether s names a zone of the IANA database. "Local" (the host's own
// zone) names none.
func validZone(s string) bool {
	if s == "Local" || len(s) > 64 {
		return false
	}
	_, err := time.LoadLocation(s)
	return err == nil
}

// apply returns p changed by c. A new phone number is not verified.
func (c ProfileChange) apply(p Profile) Profile {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = strings.TrimSpace(*v)
		}
	}
	set(&p.GivenName, c.GivenName)
	set(&p.FamilyName, c.FamilyName)
	set(&p.MiddleName, c.MiddleName)
	set(&p.Nickname, c.Nickname)
	set(&p.PreferredUsername, c.PreferredUsername)
	set(&p.Profile, c.Profile)
	set(&p.Picture, c.Picture)
	set(&p.Website, c.Website)
	set(&p.Gender, c.Gender)
	set(&p.Birthdate, c.Birthdate)
	set(&p.Zoneinfo, c.Zoneinfo)
	set(&p.Locale, c.Locale)
	if c.PhoneNumber != nil && strings.TrimSpace(*c.PhoneNumber) != p.PhoneNumber {
		p.PhoneNumber, p.PhoneNumberVerified = strings.TrimSpace(*c.PhoneNumber), false
	}
	if c.PhoneNumberVerified != nil {
		p.PhoneNumberVerified = *c.PhoneNumberVerified && p.PhoneNumber != ""
	}
	if c.Address != nil {
		a := *c.Address
		if a.IsZero() {
			p.Address = nil
		} else {
			p.Address = &a
		}
	}
	return p
}

// ChangeProfile applies c to the name and profile of the user with that id and returns
// the user as stored. byOperator allows PhoneNumberVerified (the admin API, package
// provider); a user editing their own profile may not set it. It returns an *InputError
// for a refused value, ErrUserNotFound for no such user, and an
// *UnavailableError (404) with a store given with WithAccounts, whose profiles are its own.
func (s *Service) ChangeProfile(ctx context.Context, userID string, c ProfileChange, byOperator bool) (*User, error) {
	if err := s.ProfileEditingOffered(); err != nil {
		return nil, err
	}
	if c.PhoneNumberVerified != nil && !byOperator {
		return nil, &InputError{Field: "phoneNumberVerified", Reason: "is set by an administrator only"}
	}
	if c.IsZero() {
		return nil, &InputError{Field: "body", Reason: "changes nothing"}
	}
	if c.Name != nil && strings.TrimSpace(*c.Name) == "" {
		return nil, &InputError{Field: "name", Reason: "must not be empty"}
	}
	if err := c.validate(s.clock()); err != nil {
		return nil, err
	}
	var u *User
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		var err error
		if u, err = s.store.UserByID(ctx, userID); err != nil {
			return fmt.Errorf("publicauth: load user: %w", err)
		}
		p := c.apply(u.Profile)
		change := UserChange{Profile: &p}
		if c.Name != nil {
			name := strings.TrimSpace(*c.Name)
			change.Name = &name
		}
		if u, err = s.store.ChangeUser(ctx, userID, change); err != nil {
			return fmt.Errorf("publicauth: update profile: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// ProfileEditingOffered returns nil when users can edit their profile here (Gatehouse's own
// users), else the *UnavailableError (404) ChangeProfile answers.
func (s *Service) ProfileEditingOffered() error {
	if !s.Abilities().OwnAccounts {
		return &UnavailableError{Feature: FeatureProfileEditing}
	}
	return nil
}

// fillProfile returns p with each empty field taken from upstream (a social or upstream
// identity's profile), when upstream's value passes the profile's rules; a field p has is
// kept, so a user's own edits win. phone_number_verified is never taken: only an
// administrator vouches for a number.
func fillProfile(p, upstream Profile, now time.Time) Profile {
	fill := func(dst *string, v string, check func(ProfileChange) error, change func(*string) ProfileChange) {
		if *dst != "" || strings.TrimSpace(v) == "" {
			return
		}
		v = strings.TrimSpace(v)
		if check(change(&v)) == nil {
			*dst = v
		}
	}
	check := func(c ProfileChange) error { return c.validate(now) }
	fill(&p.GivenName, upstream.GivenName, check, func(v *string) ProfileChange { return ProfileChange{GivenName: v} })
	fill(&p.FamilyName, upstream.FamilyName, check, func(v *string) ProfileChange { return ProfileChange{FamilyName: v} })
	fill(&p.MiddleName, upstream.MiddleName, check, func(v *string) ProfileChange { return ProfileChange{MiddleName: v} })
	fill(&p.Nickname, upstream.Nickname, check, func(v *string) ProfileChange { return ProfileChange{Nickname: v} })
	fill(&p.PreferredUsername, upstream.PreferredUsername, check, func(v *string) ProfileChange { return ProfileChange{PreferredUsername: v} })
	fill(&p.Profile, upstream.Profile, check, func(v *string) ProfileChange { return ProfileChange{Profile: v} })
	fill(&p.Picture, upstream.Picture, check, func(v *string) ProfileChange { return ProfileChange{Picture: v} })
	fill(&p.Website, upstream.Website, check, func(v *string) ProfileChange { return ProfileChange{Website: v} })
	fill(&p.Gender, upstream.Gender, check, func(v *string) ProfileChange { return ProfileChange{Gender: v} })
	fill(&p.Birthdate, upstream.Birthdate, check, func(v *string) ProfileChange { return ProfileChange{Birthdate: v} })
	fill(&p.Zoneinfo, upstream.Zoneinfo, check, func(v *string) ProfileChange { return ProfileChange{Zoneinfo: v} })
	fill(&p.Locale, upstream.Locale, check, func(v *string) ProfileChange { return ProfileChange{Locale: v} })
	return p
}
