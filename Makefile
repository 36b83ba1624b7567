# Gatehouse developer targets. `make` builds; `make test` is what CI runs (with lint).

GO ?= go

.DEFAULT_GOAL := build

.PHONY: build server test test-native fuzz-native nocgo interop lint bench bench-go tidy fuzz fuzz-check faults soak

build:
	$(GO) build ./...

# NATIVE_ARGON2_TAG compiles in the native argon2id fill (internal/argon2id: C through cgo,
# Linux amd64), which the default build leaves out: `make server TAGS=$(NATIVE_ARGON2_TAG)`.
NATIVE_ARGON2_TAG := gatehouse_native_argon2
TAGS ?=

# server: the stand-alone server as bin/gatehouse, linked by Go's own linker. The default
# build has no cgo of ours and links that way anyway; with TAGS=$(NATIVE_ARGON2_TAG) the
# cgo of the native fill would make go link with the system linker, whose binary keeps
# about 14 MiB more of itself resident (README, "Performance").
SERVER_LDFLAGS ?= -linkmode=internal
server:
	$(GO) build -tags='$(TAGS)' -ldflags='$(SERVER_LDFLAGS)' -o bin/gatehouse ./examples/server

# test: every package, then the opt-in native argon2id fill under its tag (test-native),
# then the CGO_ENABLED=0 build (nocgo).
test:
	$(GO) test -race -count=1 -timeout 12m ./...
	$(MAKE) test-native nocgo

# test-native: the native argon2id fill's tests and the password tests over it, built with
# its tag and linked as `make server TAGS=$(NATIVE_ARGON2_TAG)` links it. CI sets
# GATEHOUSE_REQUIRE_NATIVE_ARGON2=1 on AVX2 machines, so the fill must then run, not fall
# back to Go.
test-native:
	$(GO) test -count=1 -timeout 15m -tags='$(NATIVE_ARGON2_TAG)' -ldflags='$(SERVER_LDFLAGS)' ./internal/argon2id ./publicauth

# nocgo: the default build holds no cgo code of ours (a package of this module with cgo
# files fails it) and links no golang-fips/openssl, and built with CGO_ENABLED=0 it behaves
# as the default build: the hashing tests and publicauth's password and login tests pass,
# the signing tests pass, and the server binary, built without cgo, serves a whole login
# and code flow whose RS256 ID token go-oidc verifies (examples/server TestServerProcess).
nocgo:
	@cgo=$$($(GO) list -deps -f '{{if .CgoFiles}}{{.ImportPath}}{{end}}' ./... | grep '^github.com/gatehouse-id/' || true); \
	if [ -n "$$cgo" ]; then echo "cgo code of ours in the default build:"; echo "$$cgo"; exit 1; fi
	@if $(GO) list -deps ./... | grep -q golang-fips; then echo "the default build links golang-fips/openssl"; exit 1; fi
	CGO_ENABLED=0 $(GO) test -count=1 -timeout 10m ./internal/argon2id
	CGO_ENABLED=0 $(GO) test -count=1 -timeout 10m -run 'Password|Hash|Login' ./publicauth
	CGO_ENABLED=0 $(GO) test -count=1 -timeout 10m -run '^(TestSigningAlgorithms|TestKeySignerAlgorithms|TestExternalSigner.*)$$' ./provider
	CGO_ENABLED=0 $(GO) test -count=1 -timeout 10m -run '^TestServerProcess$$' ./examples/server

# interop: panva's openid-client drives the built server on SQLite (and Postgres when
# GATEHOUSE_TEST_POSTGRES_DSN is set), printing each step as run or skipped; part of test.
interop:
	$(GO) test -race -count=1 -timeout 5m -v -run '^TestOpenIDClientInterop$$' ./examples/server/

lint:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# faults: the fault suite (examples/server/faults_test.go) at full length: replicas, SIGKILL
# under load, Postgres, Redis and SMTP outages, read-only and full SQLite, read-only Postgres;
# each case logs its summary table.
# make test runs the same cases shortened. Needs GATEHOUSE_TEST_POSTGRES_DSN and
# GATEHOUSE_TEST_REDIS_URL. About 5 minutes.
faults:
	GATEHOUSE_FAULTS_FULL=1 $(GO) test -count=1 -timeout 20m -v -run '^TestFault' ./examples/server/

# soak: 30 minutes of mixed load on two replicas, sampling heap, goroutines, database
# connections and table sizes every 30s (SOAK=… sets another length). Not part of test.
SOAK ?= 30m
soak:
	GATEHOUSE_SOAK_DURATION=$(SOAK) $(GO) test -count=1 -timeout 60m -v -run '^TestFaultSoak$$' ./examples/server/

# bench: Gatehouse on Postgres and SQLite, then node-oidc-provider, measured operation by
# operation by one driver (examples/loadgen) and printed side by side with a verdict per
# target of issue 10; BENCH_* variables tune it (see examples/loadgen/bench.sh). Not part
# of test: a benchmark, never a timed test. Takes about 6 minutes.
bench:
	./examples/loadgen/bench.sh

# bench-go: the in-process Go benchmarks.
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# fuzz: every native fuzz target, one after another (go fuzzes one target per invocation),
# each for FUZZTIME. Each package's instrumented test binary is built once (go test -c
# -fuzz) and run, in the package's directory as go test would, once per target.
# Minimisation of a new input is capped at FUZZMINIMIZETIME runs: the provider's targets
# cost milliseconds an input, and go's default (60 s) would spend a short run minimising.
# FUZZFLAGS adds test binary flags (e.g. -test.parallel=1 on a shared machine). A crasher is
# written to the package's testdata/fuzz/<Target>/: commit it, and plain `go test` (so
# `make test`) replays it, with every seed, as a regression case. A run that ends only with
# Go's "context deadline exceeded" at -fuzztime and writes no crasher is Go's coordinator
# race (go.dev/issue/75804, unfixed in go1.26): reported, not counted as a failure.
FUZZTIME ?= 30s
FUZZMINIMIZETIME ?= 100x
FUZZFLAGS ?=
# FUZZ_TAGS are the build tags of the fuzzed test binaries (fuzz-native sets the native
# argon2id fill's).
FUZZ_TAGS ?=
FUZZ_TARGETS := \
	./internal/argon2id:FuzzKey \
	./internal/bearer:FuzzFromHeader \
	./internal/httpjson:FuzzDecode \
	./publicauth:FuzzEmailKey \
	./publicauth:FuzzNormalizeEmail \
	./publicauth:FuzzClientIP \
	./publicauth:FuzzParseTrustedProxies \
	./publicauth:FuzzSessionCookie \
	./publicauth:FuzzMagicLinkOrigin \
	./publicauth:FuzzPublicAPI \
	./permissions:FuzzRequestBodies \
	./permissions:FuzzCursor \
	./dpop:FuzzVerify \
	./dpop:FuzzNormalizeURI \
	./ui:FuzzCSRF \
	./storage:FuzzIsRegisteredRedirectURI \
	./provider:FuzzAuthorizeQuery \
	./provider:FuzzTokenForm \
	./provider:FuzzIDTokenHint \
	./provider:FuzzNormalizeUserCode \
	./provider:FuzzHostedPages

# fuzz-check fails when FUZZ_TARGETS and the func FuzzX of the _test.go files differ, so a
# new target is not left out of make fuzz; make fuzz runs it unless FUZZ_TARGETS is given.
fuzz-check:
	@found=$$(grep -rHoE '^func Fuzz[A-Za-z0-9_]+' --include='*_test.go' . | \
		sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz.*)#\1:\2#' | sort); \
	listed=$$(printf '%s\n' $(FUZZ_TARGETS) | sort); \
	if [ "$$found" != "$$listed" ]; then \
		echo "FUZZ_TARGETS in the Makefile must list every fuzz target:"; \
		echo "found:"; echo "$$found"; echo "listed:"; echo "$$listed"; exit 1; \
	fi

fuzz: $(if $(filter file,$(origin FUZZ_TARGETS)),fuzz-check)
	@bin=$$(mktemp -d); trap 'rm -rf "$$bin"' EXIT; cache=$$($(GO) env GOCACHE)/fuzz; \
	for target in $(FUZZ_TARGETS); do \
		pkg=$${target%%:*}; name=$${target##*:}; test=$$bin/$$(echo "$$pkg" | tr -c 'a-z\n' _).test; \
		if [ ! -x "$$test" ]; then \
			$(GO) test -c -fuzz=. -tags='$(FUZZ_TAGS)' -o "$$test" "$$pkg" || exit 1; \
			$(GO) list -f '{{.ImportPath}}' "$$pkg" > "$$test.path"; \
		fi; \
		echo "== $$name ($$pkg, $(FUZZTIME))"; \
		(cd "$$pkg" && "$$test" -test.run='^$$' -test.fuzz="^$$name\$$" -test.fuzztime=$(FUZZTIME) \
			-test.fuzzminimizetime=$(FUZZMINIMIZETIME) -test.fuzzcachedir="$$cache/$$(cat "$$test.path")" \
			$(FUZZFLAGS)) > "$$bin/log" 2>&1; \
		status=$$?; grep -v '^fuzz: elapsed' "$$bin/log"; \
		if [ $$status -ne 0 ] && ! grep -q -e 'Failing input written' -e '^    --- FAIL' "$$bin/log" && \
			grep -q '^    context deadline exceeded$$' "$$bin/log"; then \
			echo "fuzz: $$name stopped with Go's 'context deadline exceeded' race at -fuzztime (go.dev/issue/75804), no crasher: not a failure"; \
			status=0; \
		fi; \
		[ $$status -eq 0 ] || exit $$status; \
	done

# fuzz-native: FuzzKey, the native argon2id fill against x/crypto, built with the fill's
# tag (without it the target has nothing to compare and skips).
fuzz-native:
	$(MAKE) fuzz FUZZ_TARGETS=./internal/argon2id:FuzzKey FUZZ_TAGS=$(NATIVE_ARGON2_TAG)

tidy:
	$(GO) mod tidy
