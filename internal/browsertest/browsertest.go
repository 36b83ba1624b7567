// Package browsertest is a test helper: it starts the headless Chromium that end-to-end
// tests drive with chromedp.
package browsertest

import (
	"context"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is where the tests expect Chromium.
const ChromiumPath = "/usr/bin/chromium"

// Require skips t when Chromium is missing, except on CI (CI set) where it fails t.
func Require(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is needed on CI: %v", ChromiumPath, err)
		}
		t.Skipf("no Chromium at %s", ChromiumPath)
	}
}

// Start starts a headless Chromium with a fresh profile and returns its context; the
// browser stops when ctx ends or t returns. It is started here, so that its start-up does
// not count against the budget of what the test then does in it.
func Start(t testing.TB, ctx context.Context) context.Context {
	t.Helper()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(ChromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	t.Cleanup(cancelAlloc)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("start %s: %v", ChromiumPath, err)
	}
	return browserCtx
}
