# Gatehouse developer targets. `make` builds; `make test` is what CI runs (with lint).

GO ?= go

.DEFAULT_GOAL := build

.PHONY: build test interop lint bench bench-go tidy faults soak

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

# faults: the fault suite (examples/server/faults_test.go) at full length: replicas, SIGKILL
# under load, Postgres and Redis outages, read-only SQLite; each case logs its summary table.
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

tidy:
	$(GO) mod tidy
