package publicauth

import (
	"errors"
	"net/http"
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
