package publicauth_test

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/cutproxy"
	"github.com/gatehouse-id/gatehouse/publicauth"
	"github.com/gatehouse-id/gatehouse/publicauth/smtptest"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestMailOutboxOutage: with the mail server unreachable, every request that sends mail
// (magic link, password reset, verification, PIN login) answers exactly as with it up, and
// its mail waits in the outbox, sealed; once the server is back each one is delivered, once.
// A mail whose PIN expired during the outage is given up on, not sent.
func TestMailOutboxOutage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		mail := smtptest.Start(t)
		proxy := cutproxy.Start(t, mail.Addr())
		e := newEnv(t, b, publicauth.Config{}, publicauth.WithMailer(newTestMailer(t, "smtp://"+proxy.Addr())))
		const pat, uma, password = "pat@example.com", "uma@example.com", "correct horse battery"
		if _, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: pat, Password: password, Name: "Pat", Verified: true, RequirePIN: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.CreateUser(ctx, publicauth.UserInput{Email: uma, Password: password, Name: "Uma"}); err != nil {
			t.Fatal(err)
		}
		challenge := regexp.MustCompile(`"challengeId":"[^"]+"`)
		// requests sends every request that mails and returns its answers, the PIN
		// challenge's random id blanked.
		requests := func() []string {
			var answers []string
			for _, r := range []struct {
				path string
				body map[string]string
			}{
				{"/api/public/request-magic-link", map[string]string{"email": pat, "redirect_uri": appRedirectURI}},
				{"/api/public/request-password-reset", map[string]string{"email": pat}},
				{"/api/public/resend-verification", map[string]string{"email": uma}},
				{"/api/public/login", map[string]string{"email": pat, "password": password}},
			} {
				res := e.postJSON(t, r.path, r.body)
				answers = append(answers, r.path+" "+http.StatusText(res.status)+" Retry-After:"+res.header.Get("Retry-After")+" "+
					string(challenge.ReplaceAll(bytes.TrimSpace(res.body), []byte(`"challengeId":"…"`))))
			}
			return answers
		}
		wantCounts := func(when string, forPat, forUma int) {
			t.Helper()
			if got := mail.Count(pat); got != forPat {
				t.Errorf("%s: %d mails to %s, want %d", when, got, pat, forPat)
			}
			if got := mail.Count(uma); got != forUma {
				t.Errorf("%s: %d mails to %s, want %d", when, got, uma, forUma)
			}
		}

		up := requests()
		e.svc.Wait()
		wantCounts("mail server up", 3, 1)

		proxy.SetDown(true)
		down := requests()
		for i := range up {
			if down[i] != up[i] {
				t.Errorf("answer with the mail server down:\n  %s\nwith it up:\n  %s", down[i], up[i])
			}
		}
		e.svc.Wait()
		wantCounts("mail server down", 3, 1)
		queued, err := e.store.PendingMail(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(queued) != 4 {
			t.Fatalf("outbox holds %d mails, want the 4 requested during the outage", len(queued))
		}
		for _, q := range queued {
			if q.Attempts != 1 || q.LastError == "" || q.FailedAt != nil {
				t.Errorf("queued %s mail: attempts %d, last error %q, failed at %v; want one failed attempt, to retry", q.Kind, q.Attempts, q.LastError, q.FailedAt)
			}
			for _, clear := range []string{pat, uma, "token=", "Pat", "Uma"} {
				if bytes.Contains(q.Sealed, []byte(clear)) {
					t.Errorf("queued %s mail holds %q in clear", q.Kind, clear)
				}
			}
		}
		if q, err := e.svc.MailQueue(ctx); err != nil || q != (publicauth.MailQueue{Queued: 4}) {
			t.Errorf("MailQueue = %+v, %v; want 4 queued, none due before the retry", q, err)
		}

		// Back: the retry 5 seconds on delivers each mail once.
		proxy.SetDown(false)
		e.clock.Advance(5 * time.Second)
		e.svc.Wait()
		wantCounts("mail server back", 6, 2)
		if queued, _ := e.store.PendingMail(ctx); len(queued) != 0 {
			t.Errorf("outbox after delivery: %d mails, want none", len(queued))
		}
		e.clock.Advance(time.Hour)
		e.svc.Wait()
		wantCounts("an hour later", 6, 2)

		// A PIN that expires before the mail server is back is given up on, not sent.
		proxy.SetDown(true)
		wantStatus(t, e.postJSON(t, "/api/public/login", map[string]string{"email": pat, "password": password}), http.StatusOK)
		e.svc.Wait()
		e.clock.Advance(publicauth.DefaultPINLifespan)
		proxy.SetDown(false)
		e.svc.Wait()
		wantCounts("PIN expired during the outage", 6, 2)
		queued, err = e.store.PendingMail(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(queued) != 1 || queued[0].Kind != publicauth.MailPIN || queued[0].FailedAt == nil || len(queued[0].Sealed) != 0 {
			t.Fatalf("outbox after the PIN expired: %+v; want the PIN mail given up on, its message erased", queued)
		}
		if q, err := e.svc.MailQueue(ctx); err != nil || q != (publicauth.MailQueue{GivenUp: 1}) {
			t.Errorf("MailQueue = %+v, %v; want 1 given up", q, err)
		}

		// An outage that ends a minute before the PIN expires still delivers it: the
		// backoff step that would land past the expiry is shortened to the last try, 30
		// seconds before it, instead of the mail being given up on minutes early.
		proxy.SetDown(true)
		wantStatus(t, e.postJSON(t, "/api/public/login", map[string]string{"email": pat, "password": password}), http.StatusOK)
		e.svc.Wait()
		var elapsed time.Duration
		for elapsed < publicauth.DefaultPINLifespan-time.Minute {
			e.clock.Advance(30 * time.Second)
			elapsed += 30 * time.Second
			e.svc.Wait()
		}
		proxy.SetDown(false)
		e.clock.Advance(publicauth.DefaultPINLifespan - 30*time.Second - elapsed)
		e.svc.Wait()
		wantCounts("PIN mailed at its last try", 7, 2)
	})
}
