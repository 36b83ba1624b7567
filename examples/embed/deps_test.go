package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestEmbedderLinksOnlyWhatItUses: an embedder that mounts the provider links neither the
// server's metrics library (prometheus/client_golang: the provider reports through Stats
// and WithEvents), nor go-redis (package ratelimit/redis, given with WithLimiter, is
// opt-in), nor golang-fips/openssl, nor cgo code of Gatehouse's (the native argon2id fill
// is behind a build tag).
func TestEmbedderLinksOnlyWhatItUses(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	const pkg = "github.com/gatehouse-id/gatehouse/examples/embed"
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}} {{len .CgoFiles}}", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	var deps []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, cgoFiles, _ := strings.Cut(line, " ")
		deps = append(deps, path)
		if strings.HasPrefix(path, "github.com/gatehouse-id/") && cgoFiles != "0" {
			t.Errorf("%s has cgo files in the default build", path)
		}
	}
	if !slices.Contains(deps, "github.com/gatehouse-id/gatehouse/provider") {
		t.Fatalf("go list -deps %s does not list the provider:\n%s", pkg, out)
	}
	for _, banned := range []string{"github.com/prometheus/", "github.com/redis/go-redis/", "github.com/golang-fips/"} {
		for _, dep := range deps {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("the embedder links %s", dep)
			}
		}
	}
}
