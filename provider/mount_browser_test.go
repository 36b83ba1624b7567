package provider_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gatehouse-id/gatehouse/internal/browsertest"
	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestMountedHostedLoginInChromium: a real browser signs in through the hosted pages of a
// provider mounted under /auth in a company's mux, and consents, and the relying party's
// redirect URI receives a code that redeems. The pages' links, form actions, stylesheet and
// cookies must all work under /auth for that.
func TestMountedHostedLoginInChromium(t *testing.T) {
	browsertest.Require(t)
	browserCtx := browsertest.Start(t, context.Background())
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		rpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(`<!doctype html><p id="received">received</p>`))
		}))
		t.Cleanup(rpSrv.Close)
		e := newEnvAt(t, b.Open(t), mountPath, func(string) provider.Config { return provider.Config{} })
		user := e.user(t, "chromium@example.com", "Chromium User")
		client := e.client(t, provider.ClientSpec{ID: "webapp", RedirectURIs: []string{rpSrv.URL + "/callback"}})
		rp := e.relyingParty(t, client)
		ar := rp.start()

		runCtx, cancel := context.WithTimeout(browserCtx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(runCtx, chromedp.Navigate(ar.String()), chromedp.WaitVisible(chromedp.ID("password"))); err != nil {
			t.Fatalf("no login page: %v", err)
		}
		loginURL, err := chromedp.Run(runCtx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		// The stylesheet loaded from under /auth: the card has its background.
		styleColor, err := chromedp.Run(runCtx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("main.card")).backgroundColor`))
		if err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(runCtx,
			chromedp.SendKeys(chromedp.ID("email"), user.Email),
			chromedp.SendKeys(chromedp.ID("password"), testPassword),
			chromedp.Click(chromedp.CSS(`form[action="/auth/login"] button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`button[value=allow]`)),
			chromedp.Click(chromedp.CSS(`button[value=allow]`)),
			chromedp.WaitVisible(chromedp.ID("received")),
		); err != nil {
			t.Fatalf("the hosted login and consent under %s did not reach the relying party: %v", mountPath, err)
		}
		landed, err := chromedp.Run(runCtx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		if u, err := url.Parse(loginURL); err != nil || u.Path != mountPath+"/login" {
			t.Errorf("login page at %s, want %s/login", loginURL, mountPath)
		}
		if styleColor == "" || styleColor == "rgba(0, 0, 0, 0)" {
			t.Errorf("the login page's card has no background (%q): its stylesheet did not load", styleColor)
		}
		cb, err := url.Parse(landed)
		if err != nil {
			t.Fatal(err)
		}
		q := cb.Query()
		cb.RawQuery = ""
		if cb.String() != rpSrv.URL+"/callback" {
			t.Fatalf("landed at %s, want the relying party's redirect URI", landed)
		}
		tok := rp.exchange(t, ar, wantCode(t, e, ar, q))
		if tok.idToken.Subject != user.ID {
			t.Errorf("ID token sub %q, want %q", tok.idToken.Subject, user.ID)
		}
	})
}
