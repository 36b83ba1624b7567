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

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

tidy:
	$(GO) mod tidy
