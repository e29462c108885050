# locktui: make demo (the console on an embedded Redis) and make test (everything CI runs).
GO ?= go
NPM ?= npm

.PHONY: all build test vet node-deps go-test node-test node-types node-check demo bench chaos fuzz release-check clean

all: build

build:
	$(GO) build ./...

## test: vet, the Go suites with the race detector (provider, CLI, console, bridge, compat, e2e
## against real redis-server and stock Medusa in Node, the npm-packed tarball installed into a
## scratch app, a Medusa 2.21.2 backend (compat/medusa-app, its packages in compat/node_modules)
## on a private PostgreSQL), then the Node package's own tests and the type check of its index.d.ts.
test: vet node-deps go-test node-test

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

node-deps: node-check compat/node_modules/.package-lock.json

node-check:
	@command -v node >/dev/null 2>&1 && command -v $(NPM) >/dev/null 2>&1 || \
		{ echo "make: node and $(NPM) are needed on PATH: install Node.js 20 or newer with npm (see Two commands in README.md)" >&2; exit 1; }

# The recipe's echo goes to stderr too: `make bench > bench.json` must get the JSON alone, also
# on the first run, when node_modules is installed on the way.
compat/node_modules/.package-lock.json: compat/package.json compat/package-lock.json
	@echo "cd compat && $(NPM) ci --no-audit --no-fund" >&2
	@cd compat && $(NPM) ci --no-audit --no-fund >&2

# The e2e package runs real Medusa backends (an npm ci among them): past go test's 10-minute
# default on a loaded 2-core machine, so its own bound is wider.
go-test:
	$(GO) test -race -count=1 -timeout 30m ./...

node-test: node-deps node-types
	cd compat/medusa-locking-bridge && $(NPM) test

## node-types: the TypeScript compiler (pinned in compat/package.json) checks index.d.ts against
## a usage file, with the module settings of a Medusa app.
node-types: node-deps
	cd compat && node_modules/.bin/tsc --noEmit --strict --target es2022 --module node16 --types node \
		medusa-locking-bridge/test/types/usage.ts

## demo: the console against an embedded Redis with simulated workers; nothing to install.
demo:
	$(GO) run ./cmd/locktui demo

## bench: Go provider, bridge and stock Medusa side by side on one Redis; prints JSON on stdout
## (progress on stderr), so `make bench > bench.json` works.
bench: node-deps
	@$(GO) run ./cmd/bench

## chaos: the chaos run of e2e/ (TestChaos) for DURATION of faults (default 2m; `go test ./e2e/`
## runs a short one): SIGKILLs, link faults, bridge and Redis restarts while Go, locktui run,
## bridge-client, polling and stock Medusa holders share a few keys. Prints the counts; fails on
## any violation of mutual exclusion. CHAOS_SEED replays a schedule.
DURATION ?= 2m
CHAOS_SEED ?=
chaos: node-deps
	LOCKTUI_CHAOS_DURATION=$(DURATION) LOCKTUI_CHAOS_SEED=$(CHAOS_SEED) \
		$(GO) test -race -count=1 -timeout 6h -run '^TestChaos$$' -v ./e2e/

## release-check: what the release workflow (.github/workflows/release.yml) does, short of
## publishing: cross-builds locktui and bridge for linux/darwin on amd64/arm64 into a temporary
## directory and checks each binary's OS/arch, compares `npm pack --dry-run` of the Node package
## with its package.json "files", runs `npm publish --dry-run` (asks the registry which versions
## are published; no login) and checks versions. RELEASE_TAG=vX.Y.Z: the tag about to be pushed.
RELEASE_TAG ?=
release-check: node-check
	GO=$(GO) NPM=$(NPM) scripts/release-check $(RELEASE_TAG)

clean:
	rm -rf bin compat/node_modules
