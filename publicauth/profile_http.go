package publicauth

import (
	"net/http"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
)

// The JSON surface of the profile: GET/PATCH /api/public/me, and the profile fields of
// PATCH /api/admin/users/{userId}.

// profileFields are the profile fields of a JSON body (PATCH /api/public/me and
// PATCH /api/admin/users/{userId}), camelCase as the SSO interface writes its fields; each
// one absent (or null) is left as it is, "" clears it.
type profileFields struct {
	Name                *string      `json:"name"`
	GivenName           *string      `json:"givenName"`
	FamilyName          *string      `json:"familyName"`
	MiddleName          *string      `json:"middleName"`
	Nickname            *string      `json:"nickname"`
	PreferredUsername   *string      `json:"preferredUsername"`
	Profile             *string      `json:"profile"`
	Picture             *string      `json:"picture"`
	Website             *string      `json:"website"`
	Gender              *string      `json:"gender"`
	Birthdate           *string      `json:"birthdate"`
	Zoneinfo            *string      `json:"zoneinfo"`
	Locale              *string      `json:"locale"`
	PhoneNumber         *string      `json:"phoneNumber"`
	PhoneNumberVerified *bool        `json:"phoneNumberVerified"`
	Address             *addressView `json:"address"`
}

// change is the ProfileChange the fields ask for.
func (f profileFields) change() ProfileChange {
	c := ProfileChange{
		Name: f.Name, GivenName: f.GivenName, FamilyName: f.FamilyName, MiddleName: f.MiddleName,
		Nickname: f.Nickname, PreferredUsername: f.PreferredUsername, Profile: f.Profile,
		Picture: f.Picture, Website: f.Website, Gender: f.Gender, Birthdate: f.Birthdate,
		Zoneinfo: f.Zoneinfo, Locale: f.Locale, PhoneNumber: f.PhoneNumber,
		PhoneNumberVerified: f.PhoneNumberVerified,
	}
	if f.Address != nil {
		c.Address = &Address{
			Formatted: f.Address.Formatted, StreetAddress: f.Address.StreetAddress,
			Locality: f.Address.Locality, Region: f.Address.Region,
			PostalCode: f.Address.PostalCode, Country: f.Address.Country,
		}
	}
	return c
}

// addressView is the address in the JSON API.
type addressView struct {
	Formatted     string `json:"formatted"`
	StreetAddress string `json:"streetAddress"`
	Locality      string `json:"locality"`
	Region        string `json:"region"`
	PostalCode    string `json:"postalCode"`
	Country       string `json:"country"`
}

// meRequest is the body of PATCH /api/public/me. Email and PhoneNumberVerified are
// decoded only to be refused by name: neither is the user's to set here.
type meRequest struct {
	profileFields
	Email *string `json:"email"`
}

// profileView is a user's name and profile as the JSON API shows them.
type profileView struct {
	ID                  string       `json:"id"`
	Email               string       `json:"email"`
	EmailVerified       bool         `json:"emailVerified"`
	Name                string       `json:"name"`
	GivenName           string       `json:"givenName"`
	FamilyName          string       `json:"familyName"`
	MiddleName          string       `json:"middleName"`
	Nickname            string       `json:"nickname"`
	PreferredUsername   string       `json:"preferredUsername"`
	Profile             string       `json:"profile"`
	Picture             string       `json:"picture"`
	Website             string       `json:"website"`
	Gender              string       `json:"gender"`
	Birthdate           string       `json:"birthdate"`
	Zoneinfo            string       `json:"zoneinfo"`
	Locale              string       `json:"locale"`
	PhoneNumber         string       `json:"phoneNumber"`
	PhoneNumberVerified bool         `json:"phoneNumberVerified"`
	Address             *addressView `json:"address"`
	UpdatedAt           string       `json:"updatedAt,omitempty"`
}

func newProfileView(u *User) profileView {
	p := u.Profile
	v := profileView{
		ID: u.ID, Email: u.Email, EmailVerified: u.EmailVerified, Name: u.Name,
		GivenName: p.GivenName, FamilyName: p.FamilyName, MiddleName: p.MiddleName,
		Nickname: p.Nickname, PreferredUsername: p.PreferredUsername, Profile: p.Profile,
		Picture: p.Picture, Website: p.Website, Gender: p.Gender, Birthdate: p.Birthdate,
		Zoneinfo: p.Zoneinfo, Locale: p.Locale, PhoneNumber: p.PhoneNumber,
		PhoneNumberVerified: p.PhoneNumberVerified,
	}
	if a := p.Address; !a.IsZero() {
		v.Address = &addressView{
			Formatted: a.Formatted, StreetAddress: a.StreetAddress, Locality: a.Locality,
			Region: a.Region, PostalCode: a.PostalCode, Country: a.Country,
		}
	}
	if !u.UpdatedAt.IsZero() {
		v.UpdatedAt = u.UpdatedAt.UTC().Format(time.RFC3339)
	}
	return v
}

// me serves GET /api/public/me: the signed-in user's (public-session) name and profile;
// 401 without a session.
func (h *handlers) me(w http.ResponseWriter, r *http.Request) {
	_, u, err := h.s.CurrentSession(r, SessionPublic)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpjson.Write(w, http.StatusOK, newProfileView(u))
}

// updateMe serves PATCH /api/public/me: the signed-in user changes their name and profile
// (ProfileChange; each field present is set, "" clears it). 200 with the profile; 400 for a
// refused value, for email (changed through its own verified flow) and for
// phoneNumberVerified (an administrator's); 401 without a session; 404 with a store given
// with WithAccounts.
func (h *handlers) updateMe(w http.ResponseWriter, r *http.Request) {
	_, u, err := h.s.CurrentSession(r, SessionPublic)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	var req meRequest
	if err := decodeJSON(w, r, &req); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if req.Email != nil {
		h.s.writeError(w, r, &InputError{Field: "email", Reason: "cannot be changed here"})
		return
	}
	if u, err = h.s.ChangeProfile(r.Context(), u.ID, req.change(), false); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpjson.Write(w, http.StatusOK, newProfileView(u))
}
