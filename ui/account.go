package ui

import (
	"net/http"
	"strings"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// AccountPath is the hosted "Your account" page, under the mount path: the signed-in user
// edits their name and standard profile there.
const AccountPath = "/account"

// AccountView is the data of account.html, the "Your account" page.
type AccountView struct {
	Form
	// UserEmail is the signed-in user's email; it is changed elsewhere, so shown only.
	UserEmail string
	// Fields are the values the form shows: the stored profile, or what was just sent when
	// it was refused.
	Fields AccountFields
	// PhoneNumberVerified says whether an administrator verified the phone number; the
	// user cannot change it.
	PhoneNumberVerified bool
	// Saved is true right after a change was stored.
	Saved bool
}

// AccountFields are the form's fields, by their input names (the JSON names of
// PATCH /api/public/me).
type AccountFields struct {
	Name, GivenName, FamilyName, MiddleName, Nickname, PreferredUsername        string
	Profile, Picture, Website, Gender, Birthdate, Zoneinfo, Locale, PhoneNumber string
	// The address's parts.
	Formatted, StreetAddress, Locality, Region, PostalCode, Country string
}

// accountFieldsOf are the form fields of u's stored profile.
func accountFieldsOf(u *publicauth.User) AccountFields {
	p := u.Profile
	f := AccountFields{
		Name: u.Name, GivenName: p.GivenName, FamilyName: p.FamilyName, MiddleName: p.MiddleName,
		Nickname: p.Nickname, PreferredUsername: p.PreferredUsername, Profile: p.Profile,
		Picture: p.Picture, Website: p.Website, Gender: p.Gender, Birthdate: p.Birthdate,
		Zoneinfo: p.Zoneinfo, Locale: p.Locale, PhoneNumber: p.PhoneNumber,
	}
	if a := p.Address; a != nil {
		f.Formatted, f.StreetAddress, f.Locality = a.Formatted, a.StreetAddress, a.Locality
		f.Region, f.PostalCode, f.Country = a.Region, a.PostalCode, a.Country
	}
	return f
}

// accountFieldsFrom reads the submitted form.
func accountFieldsFrom(r *http.Request) AccountFields {
	// Browsers send a textarea's line breaks as CRLF; the address keeps them as LF.
	v := func(name string) string {
		return strings.TrimSpace(strings.ReplaceAll(r.PostFormValue(name), "\r\n", "\n"))
	}
	return AccountFields{
		Name: v("name"), GivenName: v("givenName"), FamilyName: v("familyName"), MiddleName: v("middleName"),
		Nickname: v("nickname"), PreferredUsername: v("preferredUsername"), Profile: v("profile"),
		Picture: v("picture"), Website: v("website"), Gender: v("gender"), Birthdate: v("birthdate"),
		Zoneinfo: v("zoneinfo"), Locale: v("locale"), PhoneNumber: v("phoneNumber"),
		Formatted: v("address.formatted"), StreetAddress: v("address.streetAddress"),
		Locality: v("address.locality"), Region: v("address.region"),
		PostalCode: v("address.postalCode"), Country: v("address.country"),
	}
}

// change is the profile change the form asks for: every field it shows, set.
func (f AccountFields) change() publicauth.ProfileChange {
	s := func(v string) *string { return &v }
	return publicauth.ProfileChange{
		Name: s(f.Name), GivenName: s(f.GivenName), FamilyName: s(f.FamilyName), MiddleName: s(f.MiddleName),
		Nickname: s(f.Nickname), PreferredUsername: s(f.PreferredUsername), Profile: s(f.Profile),
		Picture: s(f.Picture), Website: s(f.Website), Gender: s(f.Gender), Birthdate: s(f.Birthdate),
		Zoneinfo: s(f.Zoneinfo), Locale: s(f.Locale), PhoneNumber: s(f.PhoneNumber),
		Address: &publicauth.Address{
			Formatted: f.Formatted, StreetAddress: f.StreetAddress, Locality: f.Locality,
			Region: f.Region, PostalCode: f.PostalCode, Country: f.Country,
		},
	}
}

// accountPage shows the signed-in user's profile form; without a session, the login page.
func (u *UI) accountPage(w http.ResponseWriter, r *http.Request) {
	_, user, err := u.auth.CurrentSession(r, publicauth.SessionPublic)
	if err != nil {
		http.Redirect(w, r, u.LoginPath(""), http.StatusSeeOther)
		return
	}
	u.renderAccount(w, r, http.StatusOK, user, &AccountView{Fields: accountFieldsOf(user)})
}

// accountSubmit is the form's CSRF-protected POST: it stores the whole form as the user's
// profile (ChangeProfile), then shows the page again, saying it was saved or why not.
func (u *UI) accountSubmit(w http.ResponseWriter, r *http.Request) {
	if !u.csrf.verify(r) {
		u.Error(w, r, errFormExpired)
		return
	}
	_, user, err := u.auth.CurrentSession(r, publicauth.SessionPublic)
	if err != nil {
		u.Error(w, r, err)
		return
	}
	fields := accountFieldsFrom(r)
	changed, err := u.auth.ChangeProfile(r.Context(), user.ID, fields.change(), false)
	if err != nil {
		p := describe(err)
		if !p.form {
			u.Error(w, r, err)
			return
		}
		v := &AccountView{Fields: fields}
		v.Error = p.text
		u.renderAccount(w, r, p.status, user, v)
		return
	}
	u.renderAccount(w, r, http.StatusOK, changed, &AccountView{Fields: accountFieldsOf(changed), Saved: true})
}

// renderAccount renders v for user with a fresh CSRF token.
func (u *UI) renderAccount(w http.ResponseWriter, r *http.Request, status int, user *publicauth.User, v *AccountView) {
	csrf, err := u.csrf.token(w, r)
	if err != nil {
		u.Error(w, r, err)
		return
	}
	v.CSRF, v.UserEmail, v.PhoneNumberVerified = csrf, user.Email, user.Profile.PhoneNumberVerified
	u.pages.render(w, r, status, "account", v)
}
