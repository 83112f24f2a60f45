# Podium — the two commands that matter:
#   make run    build everything and start the server on http://127.0.0.1:7880/
#   make test   set up and run every test (Go with -race, web unit tests, browser e2e)

GO      ?= go
ARGS    ?=
BIN     := bin/podium
WEB_SRC := $(shell find web/src web/static -type f 2>/dev/null) web/build.mjs web/package.json web/package-lock.json

.PHONY: run build web test test-go test-web vet clean

run: build
	./$(BIN) serve $(ARGS)

build: web
	$(GO) build -o $(BIN) ./cmd/podium

web: web/dist/index.html

web/node_modules/.package-lock.json: web/package-lock.json
	cd web && npm ci --no-audit --no-fund

web/dist/index.html: web/node_modules/.package-lock.json $(WEB_SRC)
	cd web && npm run build

test: test-web vet test-go

test-web: web/node_modules/.package-lock.json
	cd web && npm run typecheck && npm test

vet:
	$(GO) vet ./...

# Unit and integration tests first, then the browser tests alone: they measure
# timings (switch within 2 s, 1280x720 within 1 s) that must not compete for the
# two cores with race-enabled unit tests. They need the built client (embedded) and
# Debian's chromium.
test-go: web
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v /e2e)
	$(GO) test -race -count=1 -timeout 20m -p 1 ./e2e/...

clean:
	rm -rf bin web/dist/*.js web/dist/*.css web/dist/*.html
