# monty-go. `make test` is what CI runs (.ci/run). Building the module needs
# the pinned Rust toolchain (`make toolchain`); Go users never do.
.PHONY: test wasm wasm-check toolchain bench conformance fmt lint

test:
	scripts/test.sh

toolchain:
	scripts/install-toolchain.sh

# Rebuild wasm/monty.wasm and its checksum and stamp.
wasm:
	scripts/build-wasm.sh wasm/monty.wasm
	scripts/stamp.sh
	scripts/licenses.py

# Rebuild from scratch (fresh target directory, so nothing is reused) into a
# temporary file and fail unless it is byte-identical to the committed module.
wasm-check:
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	CARGO_TARGET_DIR=$$tmp/target scripts/build-wasm.sh $$tmp/monty.wasm && \
	if cmp -s $$tmp/monty.wasm wasm/monty.wasm; then echo "wasm-check: rebuilt module is byte-identical"; \
	else echo "wasm-check: rebuilt module differs from wasm/monty.wasm" >&2; \
	  sha256sum $$tmp/monty.wasm wasm/monty.wasm >&2; exit 1; fi

bench:
	scripts/bench.sh

conformance:
	scripts/conformance.sh

fmt:
	gofmt -w $$(git ls-files '*.go')
	scripts/patch-monty.sh
	cd wasm && PATH=/usr/bin:$$PATH cargo fmt

lint:
	go vet ./...
	scripts/patch-monty.sh
	cd wasm && PATH=/usr/bin:$$PATH RUSTC=/usr/bin/rustc cargo clippy -- -D warnings && PATH=/usr/bin:$$PATH cargo fmt --check
