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

# Unit and integration tests first, with the race detector (they drive the same
# server code over real connections). Then the browser tests alone and without it:
# they measure timings (switch within 2 s, 1280x720 within 1 s) with three
# Chromiums on two cores, where the detector's slowdown of the server would be
# measured too. They need the built client (embedded) and Debian's chromium.
test-go: web
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v /e2e)
	$(GO) test -count=1 -timeout 20m -p 1 ./e2e/...

clean:
	rm -rf bin web/dist/*.js web/dist/*.css web/dist/*.html
