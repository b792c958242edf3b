# Synapse: the one entry point for building, running, testing and
# cross-compiling. `make` or `make help` lists the targets.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

MODULE    := github.com/synapse-edge/synapse
GO        ?= go
VERSION   ?= $(shell scripts/version.sh)
LDFLAGS   := -s -w -X $(MODULE)/cli.Version=$(VERSION)
# nethttpomithttp2 leaves HTTP/2 out of net/http (about 450 KiB): the agent
# serves HTTP/1.1 (fasthttp) and its clients talk to agents and webhooks.
TAGS      ?= nethttpomithttp2
BIN       := bin/synapse
# The gRPC API (seed 003) is built only with these tags: grpcnotrace keeps
# golang.org/x/net/trace out. The binary is bin/synapse-grpc.
GRPC_TAGS := grpc grpcnotrace
BIN_GRPC  := bin/synapse-grpc
DATA      ?= ./data
LISTEN    ?= 127.0.0.1:8080
BENCHTIME ?= 1s
FUZZTIME  ?= 20s
TOP       ?= 12
FLEET     ?= 200
FLEET_DELEGATIONS ?= 2000

.PHONY: help build run test dist test-dist test-newarch vet test-arm64 test-arm modules cross size bench check fuzz clean build-grpc test-grpc proto

help: ## list the targets
	@echo "Usage: make TARGET [VAR=value]"
	@echo
	@awk 'BEGIN { FS = ":.*## " } /^[a-zA-Z0-9_-]+:.*## / { printf "  %-17s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
	@echo
	@echo "Variables: VERSION=$(VERSION) BENCHTIME=$(BENCHTIME) FUZZTIME=$(FUZZTIME) DATA=$(DATA) LISTEN=$(LISTEN)"

build: ## build the static binary bin/synapse (version: scripts/version.sh, the vX.Y.Z tag or VERSION plus the commit)
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -tags "$(TAGS)" -ldflags "$(LDFLAGS)" -o $(BIN) .
	@echo "built $(BIN) $(VERSION)"

build-grpc: ## build bin/synapse-grpc: bin/synapse plus the gRPC API (serve --grpc-listen)
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -tags "$(TAGS) $(GRPC_TAGS)" -ldflags "$(LDFLAGS)" -o $(BIN_GRPC) .
	@echo "built $(BIN_GRPC) $(VERSION)"

proto: ## regenerate proto/*.pb.go from proto/synapse.proto (protoc, protoc-gen-go, protoc-gen-go-grpc)
	@command -v protoc >/dev/null || { echo "proto: install protoc (Debian: apt-get install protobuf-compiler)"; exit 1; }
	@PATH="$$PATH:$$($(GO) env GOPATH)/bin"; \
	command -v protoc-gen-go >/dev/null && command -v protoc-gen-go-grpc >/dev/null || { \
	  echo "proto: go install google.golang.org/protobuf/cmd/protoc-gen-go@latest google.golang.org/grpc/cmd/protoc-gen-go-grpc@latest"; exit 1; }; \
	protoc -I proto --go_out=. --go_opt=module=$(MODULE) --go-grpc_out=. --go-grpc_opt=module=$(MODULE) proto/synapse.proto

run: build ## build, then serve with DATA=./data on LISTEN=127.0.0.1:8080
	@if [ -n "$${SYNAPSE_ADMIN_TOKEN:-}" ]; then \
	  echo "admin token: \$$SYNAPSE_ADMIN_TOKEN"; \
	else \
	  echo "admin token: $(DATA)/admin.token (written at first start)"; \
	fi
	@echo "try: $(BIN) task submit echo --payload '{\"msg\":\"hi\"}' --wait 5s --data $(DATA) --agent http://$(LISTEN)"
	./$(BIN) serve --data $(DATA) --listen $(LISTEN)

test: ## vet, every module tidy, cross (the builds fail fast), the race suite, test-grpc, test-a2a, the suite under qemu (arm64, armv7), the byte-layout subset under qemu (armv6, mipsle, mips, riscv64), make dist checked, the tier-1 harness smoke, compare-answers against HEAD
	@scripts/timed.sh vet $(MAKE) --no-print-directory vet
	@scripts/timed.sh modules $(MAKE) --no-print-directory modules
	@scripts/timed.sh cross $(MAKE) --no-print-directory cross
	@scripts/timed.sh race env CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 20m ./...
	@scripts/timed.sh test-grpc $(MAKE) --no-print-directory test-grpc
	@scripts/timed.sh test-a2a $(MAKE) --no-print-directory test-a2a
	@scripts/timed.sh test-arm64 $(MAKE) --no-print-directory test-arm64
	@scripts/timed.sh test-arm $(MAKE) --no-print-directory test-arm
	@scripts/timed.sh test-newarch $(MAKE) --no-print-directory test-newarch
	@scripts/timed.sh test-dist $(MAKE) --no-print-directory test-dist
	@scripts/timed.sh bench-tier1-smoke $(MAKE) --no-print-directory bench-tier1-smoke
	@scripts/timed.sh compare-answers $(MAKE) --no-print-directory compare-answers BEFORE=HEAD

vet: ## go vet of every package, with the default tags and with the gRPC tags (files behind //go:build grpc are vetted too)
	$(GO) vet ./...
	$(GO) vet -tags "$(TAGS) $(GRPC_TAGS)" ./...

modules: ## every go.mod (root, bench/tier1, ...): go mod tidy -diff prints nothing, go vet and go build pass
	@GO="$(GO)" scripts/modules.sh

test-grpc: ## go vet and the gRPC API's tests with -tags grpc,grpcnotrace (a real grpc-go client against a running agent)
	$(GO) vet -tags "$(TAGS) $(GRPC_TAGS)" ./grpcapi/... ./cli/... ./proto/... .
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 10m -tags "$(TAGS) $(GRPC_TAGS)" ./grpcapi/...
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 10m -tags "$(TAGS) $(GRPC_TAGS)" -run 'GRPC' ./cli/

.PHONY: test-a2a
test-a2a: ## the official A2A SDKs (a2a-go v2, @a2a-js/sdk via npm ci) against the agent and their own servers (e2e/a2asdk)
	cd e2e/a2asdk/js && npm ci --no-audit --no-fund --loglevel=error
	cd e2e/a2asdk && $(GO) vet ./... && CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 10m ./...

test-arm64: ## the whole suite as linux/arm64 under qemu-aarch64-static (CI=true: qemu required)
	@if [ "$${CI:-}" = "true" ]; then scripts/ci-deps.sh; fi
	@GO="$(GO)" scripts/test-cross.sh arm64

test-arm: ## the whole suite as linux/arm GOARM=7 under qemu-arm-static (CI=true: qemu required)
	@if [ "$${CI:-}" = "true" ]; then scripts/ci-deps.sh; fi
	@GO="$(GO)" scripts/test-cross.sh arm 7

cross: ## static binaries for build/targets.txt into dist/, each also as -grpc, with their sizes
	@LDFLAGS="$(LDFLAGS)" TAGS="$(TAGS)" GRPC_TAGS="$(GRPC_TAGS)" GO="$(GO)" scripts/cross.sh build/targets.txt dist

size: ## the release binaries' sizes per target and the packages that contribute most (TOP=12)
	@LDFLAGS="$(LDFLAGS)" TAGS="$(TAGS)" GRPC_TAGS="$(GRPC_TAGS)" GO="$(GO)" TOP="$(TOP)" scripts/size.sh build/targets.txt dist

bench: ## run every benchmark (BENCHTIME=1s; e.g. make bench BENCHTIME=5x)
	@pkgs="$$(scripts/list-bench-pkgs.sh)"; \
	if [ -z "$$pkgs" ]; then echo "bench: no benchmarks"; exit 0; fi; \
	echo "$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $$pkgs"; \
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $$pkgs

.PHONY: compare-answers
compare-answers: ## the command line's and the API's answers of BEFORE=<git ref> and of this tree, diffed after masking ids, times and keys (OUT=dir keeps them)
	@GO="$(GO)" BEFORE="$(BEFORE)" OUT="$(OUT)" scripts/compare-answers.sh

.PHONY: bench-compare
bench-compare: ## make bench of BEFORE=<git ref> and of this tree in alternating rounds, compared by benchstat (ROUNDS=3 BENCHTIME=1s BENCH=.)
	@GO="$(GO)" BEFORE="$(BEFORE)" ROUNDS="$(ROUNDS)" BENCHTIME="$(BENCHTIME)" BENCH='$(value BENCH)' scripts/bench-compare.sh

.PHONY: bench-tier1
bench-tier1: ## tier-1 ingest vs mosquitto QoS1, NATS JetStream, bbolt, bare WebSocket (BENCH_ARGS="-frames N -rounds R")
	@GO="$(GO)" BENCH_ARGS="$(BENCH_ARGS)" bench/tier1/run.sh

.PHONY: bench-mqtt
bench-mqtt: ## MQTT vs HTTP between agent processes: northbound tier-1 frames/s, P2P delegations/s (BENCH_ARGS="-rounds 5 -nb-batch 100 -clients 1")
	@GO="$(GO)" BENCH_FLEET=1 BENCH_ARGS="$(BENCH_ARGS)" bench/tier1/run.sh

.PHONY: bench-fleet
bench-fleet: ## a fleet of FLEET=200 agent processes on a three-node NATS cluster with MQTT: directory fill, delegations between nodes, a node's kill -9 (make test runs 12)
	@if [ "$${CI:-}" = "true" ]; then scripts/ci-deps.sh; fi
	ulimit -n 65536 2>/dev/null || true; $(GO) test ./e2e -run '^TestFleet$$' -count=1 -v -timeout 60m -fleet.agents=$(FLEET) -fleet.delegations=$(FLEET_DELEGATIONS) | grep -E 'fleet_test.go|^(---|ok|FAIL|PASS)'

.PHONY: bench-exports
bench-exports: ## issue 29's outage at a million frames: live lag, drain rate vs cap, kill -9 mid-drain (EXPORT_FRAMES=1000000 EXPORT_CAP=500000)
	SYNAPSE_EXPORT_FRAMES=$${EXPORT_FRAMES:-1000000} SYNAPSE_EXPORT_CAP=$${EXPORT_CAP:-500000} $(GO) test -count=1 -timeout 20m -run '^TestExportOutageLiveFirst$$' -v ./e2e | grep -E 'exports_test|^(ok|FAIL|---)'

.PHONY: bench-a2a
bench-a2a: build ## a2a-go's client vs Synapse (durable), a2a-go's and the JS SDK's servers (in memory), interleaved (BENCH_A2A_ARGS="-rounds 5 -round 2s -clients 1,16 -rss-tasks 100000")
	cd e2e/a2asdk/js && npm ci --no-audit --no-fund --loglevel=error
	cd e2e/a2asdk && $(GO) build -o ../../bin/bench-a2a ./cmd/bench-a2a
	bin/bench-a2a -synapse $(BIN) -js e2e/a2asdk/js $(BENCH_A2A_ARGS)

.PHONY: bench-tier1-smoke
bench-tier1-smoke: ## bench-tier1 in its short mode (4000 frames, one round): proves the harness runs; part of make test
	@if [ "$${CI:-}" = "true" ]; then scripts/ci-deps.sh; fi
	@GO="$(GO)" BENCH_SMOKE=1 BENCH_ARGS="$(BENCH_ARGS)" bench/tier1/run.sh

check: ## gofmt -l must list nothing, go vet, go test -race
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 20m ./...

.PHONY: screenshots console
screenshots: ## PNGs of each console view at 390 and 1280 px into docs/ (headless Chromium)
	@mkdir -p docs
	CI=true SYNAPSE_SCREENSHOTS="$(CURDIR)/docs" $(GO) test -count=1 -run '^TestConsoleViews$$' ./httpapi/

console: ## regenerate the gzipped console files (httpapi/console/*.gz) after editing the console
	cd httpapi && $(GO) generate ./

fuzz: ## run every Fuzz target for FUZZTIME=20s each
	@GO="$(GO)" FUZZTIME="$(FUZZTIME)" scripts/fuzz.sh

dist: ## release artefacts into dist/: per-target tarballs, .deb, .ipk, the OCI layout, SHA256SUMS (+ .minisig with MINISIGN_KEY=FILE)
	@VERSION="$(VERSION)" LDFLAGS="$(LDFLAGS)" TAGS="$(TAGS)" GO="$(GO)" MINISIGN_KEY="$(MINISIGN_KEY)" scripts/dist.sh build/targets.txt dist

test-dist: ## make dist with a throwaway key into a temporary dir; sha256sum -c, minisign -V, tarballs, lintian, dpkg -i/purge, ipk, skopeo
	@if [ "$${CI:-}" = "true" ]; then scripts/ci-deps.sh; fi
	@VERSION="$(VERSION)" LDFLAGS="$(LDFLAGS)" TAGS="$(TAGS)" GO="$(GO)" scripts/test-dist.sh

# The focused subset the targets added last run under qemu: the packages
# with byte layouts (frames, codecs, store keys, negotiation, batches) and
# their fuzz corpora, replayed as seeds.
NEWARCH_PKGS := ./wire/... ./tier1/... ./store/... ./negotiate/... ./peer/batch/...

test-newarch: ## the byte-layout packages as linux/arm GOARM=6, mipsle, mips (softfloat, big-endian), riscv64 under qemu-user-static
	@if [ "$${CI:-}" = "true" ]; then scripts/ci-deps.sh; fi
	@PKGS="$(NEWARCH_PKGS)" GO="$(GO)" scripts/test-cross.sh arm 6
	@PKGS="$(NEWARCH_PKGS)" GO="$(GO)" scripts/test-cross.sh mipsle softfloat
	@PKGS="$(NEWARCH_PKGS)" GO="$(GO)" scripts/test-cross.sh mips softfloat
	@PKGS="$(NEWARCH_PKGS)" GO="$(GO)" scripts/test-cross.sh riscv64

clean: ## remove bin/ and dist/
	rm -rf bin dist
