package provider_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/gatehouse-id/gatehouse/internal/browsertest"
	"github.com/gatehouse-id/gatehouse/provider"
	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

// TestFormPostSubmitsInChromium: a real browser runs the form_post page's script under
// the page's own CSP, so the response reaches the client without a click.
func TestFormPostSubmitsInChromium(t *testing.T) {
	browsertest.Require(t)
	browserCtx := browsertest.Start(t, context.Background())
	forEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		// The client's callback shows what it was posted.
		posted := make(chan url.Values, 1)
		rpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.ParseForm() == nil {
				select {
				case posted <- r.PostForm:
				default:
				}
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(`<!doctype html><p id="received">received</p>`))
		}))
		t.Cleanup(rpSrv.Close)
		e := newEnv(t, b, provider.Config{})
		client := e.client(t, provider.ClientSpec{ID: "webapp", FirstParty: true, RedirectURIs: []string{rpSrv.URL + "/callback"}})
		// Without a session, prompt=none answers at once: login_required, form-posted.
		ar := e.relyingParty(t, client).start(oauth2.SetAuthURLParam("response_mode", "form_post"), oauth2.SetAuthURLParam("prompt", "none"))

		runCtx, cancel := context.WithTimeout(browserCtx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(runCtx, chromedp.Navigate(ar.String()), chromedp.WaitVisible(chromedp.ID("received"))); err != nil {
			t.Fatalf("the form_post page did not submit itself: %v", err)
		}
		select {
		case form := <-posted:
			if got := form.Get("error"); got != "login_required" || form.Get("state") != ar.state {
				t.Errorf("posted error=%q state=%q, want login_required and %q", got, form.Get("state"), ar.state)
			}
		default:
			t.Fatal("the client's callback received no POST")
		}
	})
}
