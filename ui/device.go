package ui

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gatehouse-id/gatehouse/publicauth"
)

// The device pages (RFC 8628 §3.3): the user types the code a device shows at /device (or
// opens verification_uri_complete, which fills it in), signs in if need be, and on
// /device/confirm compares the code with the device's and allows or denies what its
// application asks for. The code is checked on the form POST, never on a GET, so that
// guessing codes counts against the rate limit and needs the CSRF cookie.

// ErrDeviceCodeInvalid: the code the user typed names no device request waiting for a
// decision (unknown, expired, already decided).
var ErrDeviceCodeInvalid = errors.New("device user code unknown or expired")

// limitDevice names the per-IP limit of code entries on the device page.
const limitDevice = "device"

// DevicePath is the verification URI's path under the mount path.
const DevicePath = "/device"

func (u *UI) devicePage(w http.ResponseWriter, r *http.Request) {
	u.renderForm(w, r, http.StatusOK, "device", "", nil, &DeviceView{UserCode: r.URL.Query().Get("user_code")})
}

// deviceSubmit looks the typed code up and pauses its request for the confirmation page
// (which sends the browser to sign in first when it must).
func (u *UI) deviceSubmit(w http.ResponseWriter, r *http.Request) {
	userCode := strings.TrimSpace(r.PostFormValue("user_code"))
	if !u.csrf.verify(r) {
		u.Error(w, r, errFormExpired)
		return
	}
	err := u.auth.CheckRate(r, limitDevice)
	var token string
	if err == nil {
		token, err = u.host.StartDeviceApproval(r.Context(), userCode)
	}
	if err != nil {
		u.formFailed(w, r, "device", submittedForm{}, &DeviceView{UserCode: userCode}, err)
		return
	}
	http.Redirect(w, r, u.deviceConfirmPath(token), http.StatusSeeOther)
}

// deviceConfirmPath is the confirmation page of the paused device request token names.
func (u *UI) deviceConfirmPath(token string) string {
	return u.mount + DevicePath + "/confirm?" + url.Values{RequestParam: {token}}.Encode()
}

func (u *UI) deviceConfirmPage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get(RequestParam)
	pr, err := u.pageContext(r, token)
	if err == nil && (pr == nil || pr.UserCode == "") {
		err = publicauth.ErrRequestExpired
	}
	if err != nil {
		u.Error(w, r, err)
		return
	}
	_, user, err := u.auth.CurrentSession(r, publicauth.SessionPublic)
	if err != nil {
		http.Redirect(w, r, u.LoginPath(token), http.StatusSeeOther)
		return
	}
	u.renderForm(w, r, http.StatusOK, "device_confirm", token, pr, &DeviceConfirmView{
		UserCode: pr.UserCode, UserEmail: user.Email, Scopes: u.describeScopes(pr.Scopes), ClientIdentity: pr.identity()})
}

// deviceConfirmSubmit passes the signed-in user's decision to the provider and tells the
// user to go back to the device.
func (u *UI) deviceConfirmSubmit(w http.ResponseWriter, r *http.Request) {
	token := r.PostFormValue(RequestParam)
	if !u.csrf.verify(r) {
		u.Error(w, r, errFormExpired)
		return
	}
	allow := r.PostFormValue("decision") == "allow"
	err := u.host.DecideDevice(r, token, allow)
	switch {
	case errors.Is(err, publicauth.ErrSessionNotFound):
		http.Redirect(w, r, u.LoginPath(token), http.StatusSeeOther)
	case err != nil:
		u.Error(w, r, err)
	case allow:
		u.notice(w, r, http.StatusOK, "Device connected", "You can go back to your device now: it continues by itself.", "", "")
	default:
		u.notice(w, r, http.StatusOK, "Request denied", "The device gets no access. You can close this page.", "", "")
	}
}
