# Gatehouse developer targets. `make` builds; `make test` is what CI runs (with lint).

GO ?= go

.DEFAULT_GOAL := build

.PHONY: build server test interop lint bench bench-go tidy fuzz fuzz-check faults soak

build:
	$(GO) build ./...

# server: the stand-alone server as bin/gatehouse, linked by Go's own linker. The cgo bindings
# to OpenSSL (internal/rsasign) and the native argon2id fill (internal/argon2id) would
# otherwise make go link it with the system linker, and that binary keeps about 14 MiB more of itself resident
# (README, "Performance").
SERVER_LDFLAGS ?= -linkmode=internal
server:
	$(GO) build -ldflags='$(SERVER_LDFLAGS)' -o bin/gatehouse ./examples/server

# test also runs the OpenSSL signer and the native argon2id fill linked as `make server` and
# `make bench` link them.
test:
	$(GO) test -race -count=1 -timeout 12m ./...
	$(GO) test -count=1 -ldflags='$(SERVER_LDFLAGS)' ./internal/rsasign ./internal/argon2id

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
			$(GO) test -c -fuzz=. -o "$$test" "$$pkg" || exit 1; \
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

tidy:
	$(GO) mod tidy
