package provider_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/cutproxy"
	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestHostedPINGateMailOutage: with the mail server unreachable, the hosted login of a
// PIN-gated user shows the same PIN page as with it up (once it answered 503 "Could not
// send your PIN", telling anyone the mail server was down); the PIN waits in the outbox,
// arrives once the server is back, exactly once, and finishes the flow.
func TestHostedPINGateMailOutage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		mail := smtptest.Start(t)
		proxy := cutproxy.Start(t, mail.Addr())
		e := newEnv(t, b, provider.Config{PublicAuth: provider.PublicAuthConfig{
			SMTPURL: "smtp://" + proxy.Addr(), MailFrom: "Gatehouse <no-reply@example.com>",
			MailRetryInterval: 100 * time.Millisecond,
		}})
		rp := e.relyingParty(t, e.client(t, provider.ClientSpec{FirstParty: true}))
		values := regexp.MustCompile(`value="[^"]*"`)
		// pinPage logs user in through the hosted pages and returns the browser, the auth
		// request, the PIN form and the page with its per-request values and the address
		// blanked.
		pinPage := func(user provider.UserInfo) (*browser, *authRequest, htmlForm, string) {
			br := e.browser(t)
			ar := rp.start()
			p := br.login(t, br.get(t, ar.String()), user.Email)
			f := wantPINPage(t, p, http.StatusOK)
			body := strings.ReplaceAll(values.ReplaceAllString(p.body, `value="…"`), user.Email, "EMAIL")
			return br, ar, f, body
		}

		up := e.pinUser(t, "pin-up@example.com")
		_, _, _, withMail := pinPage(up)
		smtptest.PIN(t, mail.WaitFor(t, up.Email))

		proxy.SetDown(true)
		down := e.pinUser(t, "pin-down@example.com")
		br, ar, f, withoutMail := pinPage(down)
		if withoutMail != withMail {
			t.Errorf("PIN page with the mail server down:\n%s\nwith it up:\n%s", withoutMail, withMail)
		}
		proxy.SetDown(false)
		// The first retry comes 5 seconds after the failed attempt: a bounded wait.
		for i := 0; i < 600 && mail.Count(down.Email) == 0; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		pin := smtptest.PIN(t, mail.WaitFor(t, down.Email))
		finishFlow(t, e, rp, ar, br.submitPIN(t, f, pin), down)
		if n := mail.Count(down.Email); n != 1 {
			t.Errorf("%d PIN mails to %s, want exactly 1", n, down.Email)
		}
	})
}
