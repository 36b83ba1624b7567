# Gatehouse developer targets. `make` builds; `make test` is what CI runs (with lint).

GO ?= go

.DEFAULT_GOAL := build

.PHONY: build test interop lint bench bench-go tidy

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

tidy:
	$(GO) mod tidy
