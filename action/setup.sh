#!/usr/bin/env bash
# The install steps of action.yml (docs/src/github-action.md "The GitHub Action"):
#
#   setup.sh plan     which leash to install and where: step outputs
#                     `version` (the `version` input, else the action's own
#                     tag when it is one, else its Cargo.toml version when
#                     the action is pinned to a commit, else `latest`),
#                     `dir` and `cacheable` (only a pinned version is
#                     cached: a cached "latest" would never move). A
#                     version is `latest` or a semantic version, nothing
#                     else: it becomes a path and an output.
#   setup.sh install  puts leash in DIR with install.sh, the prebuilt
#                     release checked against its .sha256 — a cached
#                     archive too, every time (a self-hosted runner's cache
#                     outlives the job that filled it), and the binary is
#                     always unpacked from the checked archive; where there
#                     is no prebuilt release, builds it with `cargo install
#                     --locked --git`. Adds DIR to GITHUB_PATH and sets the
#                     output `bin`.
#
# LEASH_ACTION_BIN (the calling step's `env`, set by the workflow's author)
# names a leash to use instead of installing one: this repository's CI
# runs the Action on the checkout's own build with it.
#
# The repository is Cargo.toml's `repository`, the one place it is named.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=action/lib.sh
. "$here/action/lib.sh"

case ${1:-} in
  plan)
    version=${INPUT_VERSION:-}
    if [ -n "$version" ]; then
      [ "$version" = latest ] || is_version "$version" \
        || fail "version must be latest or a release such as v1.2.3, not '$version'" 1
    else
      ref=${GITHUB_ACTION_REF:-}
      if is_version "$ref"; then
        version=$ref
      elif [[ $ref =~ ^[0-9a-f]{40}$ ]]; then
        # Pinned to a commit: the release that commit is (the release
        # workflow refuses a tag that is not Cargo.toml's version).
        version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$here/Cargo.toml" | head -n 1)
        is_version "$version" || fail "no version in $here/Cargo.toml" 1
      else
        version=latest
      fi
    fi
    cacheable=true
    [ -z "${LEASH_ACTION_BIN:-}" ] || cacheable=false
    case $version in
      latest) cacheable=false ;;
      v*) ;;
      *) version=v$version ;;
    esac
    root=${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-$HOME}}
    put version "$version"
    put dir "$root/leash/$version/${RUNNER_OS:-os}-${RUNNER_ARCH:-arch}"
    put cacheable "$cacheable"
    ;;
  install)
    : "${LEASH_VERSION:?LEASH_VERSION is not set (the version the plan step chose)}"
    : "${LEASH_DIR:?LEASH_DIR is not set (the directory the plan step chose)}"
    : "${GITHUB_PATH:?GITHUB_PATH is not set: run this as a GitHub Actions step}"
    if [ -n "${LEASH_ACTION_BIN:-}" ]; then
      case $LEASH_ACTION_BIN in
        /*) ;;
        *) fail "LEASH_ACTION_BIN must be an absolute path, not '$LEASH_ACTION_BIN'" 1 ;;
      esac
      case $LEASH_ACTION_BIN in
        *$'\n'* | *$'\r'*) fail "no leash at '$LEASH_ACTION_BIN'" 1 ;;
      esac
      "$LEASH_ACTION_BIN" --version >/dev/null 2>&1 || fail "no leash at '$LEASH_ACTION_BIN'" 1
      echo "leash: LEASH_ACTION_BIN, not installed"
      dirname "$LEASH_ACTION_BIN" >>"$GITHUB_PATH"
      put bin "$LEASH_ACTION_BIN"
      exit 0
    fi
    [ "$LEASH_VERSION" = latest ] || is_version "$LEASH_VERSION" \
      || fail "version must be latest or a release such as v1.2.3, not '$LEASH_VERSION'" 1
    case $LEASH_DIR in
      /*) ;;
      *) fail "the install directory must be absolute, not '$LEASH_DIR'" 1 ;;
    esac
    case $LEASH_DIR in
      *$'\n'* | *$'\r'* | */../* | */..) fail "no install directory '$LEASH_DIR'" 1 ;;
    esac
    # The archive is kept (and cached) beside the binary, so a later job
    # checks it against the release's .sha256 before unpacking it again.
    if LEASH_VERSION=$LEASH_VERSION LEASH_INSTALL_ARCHIVES="$LEASH_DIR/archive" \
      sh "$here/install.sh" --to "$LEASH_DIR"; then
      :
    else
      repository=$(sed -n 's/^repository = "\(.*\)"$/\1/p' "$here/Cargo.toml" | head -n 1)
      [ -n "$repository" ] || fail "no repository in $here/Cargo.toml" 1
      command -v cargo >/dev/null 2>&1 || fail "no prebuilt leash $LEASH_VERSION for this runner, and no cargo to build it" 1
      echo "::warning::no prebuilt leash $LEASH_VERSION for this runner; building it with cargo install (minutes)"
      tag=()
      [ "$LEASH_VERSION" = latest ] || tag=(--tag "$LEASH_VERSION")
      build=$(mktemp -d)
      cargo install --locked --git "$repository" "${tag[@]+"${tag[@]}"}" --root "$build" leash \
        || fail "cargo install --git $repository ${tag[*]+"${tag[*]}"} failed" 1
      mkdir -p "$LEASH_DIR"
      mv -f "$build/bin/leash" "$LEASH_DIR/leash"
      rm -rf "$build"
    fi
    echo "$LEASH_DIR" >>"$GITHUB_PATH"
    put bin "$LEASH_DIR/leash"
    ;;
  *)
    echo "usage: action/setup.sh plan|install" >&2
    exit 2
    ;;
esac
