package publicauth

import (
	"context"
	"errors"
	"net/http"

	"github.com/gatehouse-id/gatehouse/internal/httpjson"
	"github.com/gorilla/mux"
)

// Admin decides whether r comes from an admin: it returns the user of r's `admin-session`,
// or else of its `public-session` when that user holds RoleAdmin (DESIGN §4: admin routes
// accept either). It returns ErrSessionNotFound when r carries neither session (401) and
// ErrNotAdmin when it carries only the public session of a user who is not an admin (403).
// Every admin route asks this one function.
func (s *Service) Admin(r *http.Request) (*User, error) {
	_, u, err := s.CurrentSession(r, SessionAdmin)
	if err == nil {
		return u, nil
	}
	if !errors.Is(err, ErrSessionNotFound) {
		return nil, err
	}
	_, u, err = s.CurrentSession(r, SessionPublic)
	if err != nil {
		return nil, err
	}
	if u.Role != RoleAdmin {
		return nil, ErrNotAdmin
	}
	return u, nil
}

// adminUserRequest is the body of PATCH /api/admin/users/{userId}: the settings to change,
// each optional.
type adminUserRequest struct {
	RequirePIN *bool   `json:"requirePin"`
	Status     *string `json:"status"`
	// The profile fields, phoneNumberVerified included (ChangeProfile).
	profileFields
}

// adminUserView is a user as the admin API shows it: the session view plus admin settings.
type adminUserView struct {
	userView
	RequirePIN bool `json:"requirePin"`
	// Profile is the user's name and profile, as GET /api/public/me shows them.
	Profile profileView `json:"profile"`
}

// adminUpdateUser serves PATCH /api/admin/users/{userId} for admins (Admin: 401 without a
// session, 403 for a non-admin): {"requirePin": true|false} turns the user's PIN gate on or
// off, {"status": "active"|"disabled"} enables or disables the account (disabling ends its
// sessions and revokes its tokens and consents); the profile fields of PATCH
// /api/public/me, and phoneNumberVerified, change the user's profile (ChangeProfile). All
// may come in one request, applied together in one transaction. 200 with the user; 400 for
// a body that changes nothing, an unknown status or a refused profile value; 404 for an
// unknown user.
func (h *handlers) adminUpdateUser(w http.ResponseWriter, r *http.Request) {
	if _, err := h.s.Admin(r); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	var req adminUserRequest
	if err := decodeJSON(w, r, &req); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	profile := req.change()
	if req.RequirePIN == nil && req.Status == nil && profile.IsZero() {
		h.s.writeError(w, r, &InputError{Field: "requirePin, status or a profile field", Reason: "is required"})
		return
	}
	userID := mux.Vars(r)["userId"]
	var u *User
	err := h.s.store.InTx(r.Context(), func(ctx context.Context) error {
		var err error
		if !profile.IsZero() {
			if u, err = h.s.ChangeProfile(ctx, userID, profile, true); err != nil {
				return err
			}
		}
		if req.RequirePIN != nil || req.Status != nil {
			u, err = h.s.ChangeAccount(ctx, userID, AccountChange{RequirePIN: req.RequirePIN, Status: req.Status})
		}
		return err
	})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, adminUserView{userView: newUserView(u), RequirePIN: u.RequirePIN, Profile: newProfileView(u)})
}
