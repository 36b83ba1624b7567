# Gatehouse developer targets. `make` builds; `make test` is what CI runs (with lint).

GO ?= go
# bash: the fuzz target reads PIPESTATUS.
SHELL := /bin/bash

.DEFAULT_GOAL := build

.PHONY: build test interop lint bench bench-go tidy fuzz

build:
	$(GO) build ./...

test:
	$(GO) test -race -count=1 -timeout 12m ./...

# interop: panva's openid-client drives the built server on SQLite (and Postgres when
# GATEHOUSE_TEST_POSTGRES_DSN is set), printing each step as run or skipped; part of test.
interop:
	$(GO) test -race -count=1 -timeout 5m -v -run '^TestOpenIDClientInterop$$' ./examples/server/

lint:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

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
# each for FUZZTIME. Minimisation of a new input is capped at FUZZMINIMIZETIME runs: the
# provider's targets cost milliseconds an input, and go's default (60 s) would spend a short
# run minimising. FUZZFLAGS adds flags (e.g. -parallel=1 on a shared machine). A crasher is
# written to the package's testdata/fuzz/<Target>/: commit it, and plain `go test` (so
# `make test`) replays it, with every seed, as a regression case.
FUZZTIME ?= 30s
FUZZMINIMIZETIME ?= 100x
FUZZFLAGS ?=
FUZZ_TARGETS := \
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
	./provider:FuzzNormalizeUserCode

fuzz:
	@for target in $(FUZZ_TARGETS); do \
		pkg=$${target%%:*}; name=$${target##*:}; \
		echo "== $$name ($$pkg, $(FUZZTIME))"; \
		log=$$(mktemp); \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) \
			-fuzzminimizetime $(FUZZMINIMIZETIME) $(FUZZFLAGS) $$pkg 2>&1 | tee $$log | grep -v '^fuzz: elapsed'; \
		status=$${PIPESTATUS[0]}; \
		if [ $$status -ne 0 ] && ! grep -q 'Failing input written' $$log && \
			[ "$$(grep -c -v -e '^fuzz: elapsed' -e '^--- FAIL' -e '^FAIL' -e '^exit status' -e 'context deadline exceeded' $$log)" -eq 0 ]; then \
			echo "fuzz: $$name stopped with Go's 'context deadline exceeded' race at -fuzztime (go.dev/issue/75804), no crasher: not a failure"; \
			status=0; \
		fi; \
		rm -f $$log; \
		[ $$status -eq 0 ] || exit $$status; \
	done

tidy:
	$(GO) mod tidy
