package server

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-id/gatehouse/storage/storagetest"
)

var debugAddrLog = regexp.MustCompile(`"debug_addr":"([^"]+)"`)

// --debug-addr serves pprof on its own loopback listener; the public handler never does,
// with or without it.
func TestServeDebugAddrServesPprofApart(t *testing.T) {
	dsn := storagetest.Backends(t)[0].DSN(t)
	base, logs, stop := startServer(t, "--dsn", dsn, "--secret", strings.Repeat("s", 32), "--demo=false",
		"--debug-addr", "127.0.0.1:0")
	var debugAddr string
	for deadline := time.Now().Add(5 * time.Second); debugAddr == ""; time.Sleep(20 * time.Millisecond) {
		if m := debugAddrLog.FindStringSubmatch(logs.String()); m != nil {
			debugAddr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no debug_addr logged:\n%s", logs.String())
		}
	}
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("http://" + debugAddr + "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("debug listener /debug/pprof/ = %d, want 200 with the profile index:\n%s", code, body)
	}
	if code, _ := get("http://" + debugAddr + "/debug/pprof/heap?debug=1"); code != http.StatusOK {
		t.Errorf("debug listener heap profile = %d, want 200", code)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		if code, _ := get(base + path); code == http.StatusOK {
			t.Errorf("public listener serves %s (200); pprof must stay on the debug listener", path)
		}
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, logs.String())
	}
	if _, err := http.Get("http://" + debugAddr + "/debug/pprof/"); err == nil {
		t.Error("the debug listener still answers after shutdown")
	}
}
