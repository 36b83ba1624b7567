# Gatehouse developer targets. `make` builds; `make test` is what CI runs (with lint).

GO ?= go

.DEFAULT_GOAL := build

.PHONY: build test lint bench tidy

build:
	$(GO) build ./...

test:
	$(GO) test -race -count=1 -timeout 12m ./...

lint:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# bench: in-process benchmarks, then the token endpoint of a real server under load
# (examples/loadgen; the same tool can target any other provider's token endpoint).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
	./examples/loadgen/bench.sh

tidy:
	$(GO) mod tidy
