# monty-go. `make test` is what CI runs (.ci/run). Building the module needs
# the pinned Rust toolchain (`make toolchain`); Go users never do.
.PHONY: test test-quick test-aot wasm wasm-check aot monty-aot toolchain bench conformance fmt lint

# The version of Monty the project builds: the one source is the pin of the
# monty crate in wasm/Cargo.toml (scripts/lib.sh's monty_version reads it
# the same way; wasm/version_test.go checks the other pins against it).
MONTY_VERSION := $(shell sed -n 's/^monty = "=\([^"]*\)".*/\1/p' wasm/Cargo.toml)

test:
	scripts/test.sh

# The quick loop while changing code: the Go tests that need no service,
# no third-party client and no translation (-short leaves the others out,
# each saying what it needs); the full command above stays what CI runs.
test-quick:
	go vet ./...
	go test -short -count=1 ./...

toolchain:
	scripts/install-toolchain.sh

# Rebuild both modules (wasm/monty.wasm, wasm/checker/checker.wasm) with
# their checksums, stamps and license notices.
wasm:
	scripts/build-wasm.sh wasm/monty.wasm
	scripts/stamp.sh
	scripts/licenses.py
	scripts/build-checker.sh wasm/checker/checker.wasm
	scripts/stamp.sh --checker
	PATH=/usr/bin:$$PATH cargo fetch --manifest-path wasm/checker/Cargo.toml
	scripts/licenses.py --checker
	scripts/aot.sh --stamp

# Rebuild both modules from scratch (fresh target directories, so nothing is
# reused) into temporary files and fail unless they are byte-identical to
# the committed ones.
wasm-check:
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	CARGO_TARGET_DIR=$$tmp/target scripts/build-wasm.sh $$tmp/monty.wasm && \
	CARGO_TARGET_DIR=$$tmp/checker-target scripts/build-checker.sh $$tmp/checker.wasm && \
	status=0; for m in monty.wasm:wasm/monty.wasm checker.wasm:wasm/checker/checker.wasm; do \
	  built=$$tmp/$${m%%:*}; committed=$${m#*:}; \
	  if cmp -s $$built $$committed; then echo "wasm-check: rebuilt $$committed is byte-identical"; \
	  else echo "wasm-check: rebuilt module differs from $$committed" >&2; sha256sum $$built $$committed >&2; status=1; fi; \
	done; exit $$status

# The interpreter translated to Go ahead of time (docs/building.md):
# generate wasm/aot/internal/translated from wasm/monty.wasm with the pinned
# wasm2go and check it byte for byte against wasm/aot/translated.sha256.
aot:
	scripts/aot.sh

# The CLI on the ahead-of-time engine (interpreter and type checker), in
# $(AOT_BIN): what releases ship (scripts/release.sh builds it the same
# way, stamped with the version and commit: docs/building.md), stripped,
# and without the wasm modules it never runs (MONTY_AOT_NOEMBED=1).
# Compiling the translated packages takes a few minutes and about 1 GB on
# 2 cores, once: Go's build cache keeps them as long as the flags stay
# those of scripts/aotgo.sh. scripts/bench/build-cost.sh measures it.
AOT_BIN ?= wasm/aot/bin/monty
monty-aot: aot
	MONTY_AOT_NOEMBED=1 scripts/aotgo.sh build -o $(AOT_BIN) ./cmd/monty

# The tests on the ahead-of-time engine: the runtime, session, monty.v1
# and type checker tests, the CLI make monty-aot builds (cmd/monty's
# TestAOTBinary, and the hostile code of servetest's TestHostileCodeLimits
# against its monty serve), the serverless example built on it, and a release of
# wasm/aot fetched by go get from a local module proxy
# (scripts/aot-release.sh --check). Without the race detector: a race
# build of the translations is another compile of them, and what it would
# check is the Go code around them, which the main run race-checks
# (docs/building.md); AOT_RACE=-race adds it. Without go test's vet: it
# analyses every dependency for facts, the translated packages included,
# while go vet ./... and go test -race ./... vet the same code without the
# overlay.
AOT_TESTS ?= ./runtime/ ./runtime/internal/... ./runtime/typecheck/ ./session/ ./session/protocol/
AOT_RACE ?=
test-aot: aot
	scripts/aotgo.sh test $(AOT_RACE) -vet=off -count=1 -timeout 30m $(AOT_TESTS)
	@bin=$$(mktemp -d) && trap 'rm -rf $$bin' EXIT && \
	$(MAKE) -s monty-aot AOT_BIN=$$bin/monty && \
	MONTY_TEST_AOT_BIN=$$bin/monty scripts/aotgo.sh test -vet=off -count=1 -run '^TestAOTBinary$$' ./cmd/monty && \
	MONTY_TEST_BIN=$$bin/monty go test -count=1 -run '^TestHostileCodeLimits$$' ./cmd/monty/servetest
	scripts/aotgo.sh build -o /dev/null ./examples/serverless
	scripts/aot-release.sh --check

bench:
	scripts/bench/bench.sh

conformance:
	scripts/conformance.sh

fmt:
	gofmt -w $$(git ls-files '*.go')
	scripts/patch-crate.sh monty $(MONTY_VERSION) wasm/patches wasm/.patched
	scripts/patch-crate.sh monty-types $(MONTY_VERSION) wasm/patches wasm/.patched
	cd wasm && PATH=/usr/bin:$$PATH cargo fmt
	scripts/patch-crate.sh monty-typeshed $(MONTY_VERSION) wasm/checker/patches wasm/checker/.patched
	cd wasm/checker && PATH=/usr/bin:$$PATH cargo fmt

lint:
	go vet ./...
	scripts/patch-crate.sh monty $(MONTY_VERSION) wasm/patches wasm/.patched
	scripts/patch-crate.sh monty-types $(MONTY_VERSION) wasm/patches wasm/.patched
	cd wasm && PATH=/usr/bin:$$PATH RUSTC=/usr/bin/rustc cargo clippy --workspace -- -D warnings && PATH=/usr/bin:$$PATH cargo fmt --check
	scripts/patch-crate.sh monty-typeshed $(MONTY_VERSION) wasm/checker/patches wasm/checker/.patched
	cd wasm/checker && PATH=/usr/bin:$$PATH RUSTC=/usr/bin/rustc cargo clippy -- -D warnings && PATH=/usr/bin:$$PATH cargo fmt --check
