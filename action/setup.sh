#!/usr/bin/env bash
# The install steps of action.yml (README "Recipes", the GitHub Action):
#
#   setup.sh plan     which leash to install and where: step outputs
#                     `version` (the `version` input, else the action's own
#                     tag when it is one, else `latest`), `dir` and
#                     `cacheable` (only a pinned version is cached: a
#                     cached "latest" would never move);
#   setup.sh install  puts leash in DIR (unless the cache already did) with
#                     install.sh, the prebuilt release checked against its
#                     .sha256; where there is none, builds it with
#                     `cargo install --locked --git`. Adds DIR to
#                     GITHUB_PATH and sets the output `bin`.
#
# The repository is Cargo.toml's `repository`, the one place it is named.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
fail() {
  echo "::error::leash action: $1"
  exit 1
}
: "${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set: run this as a GitHub Actions step}"

case ${1:-} in
  plan)
    version=${INPUT_VERSION:-}
    if [ -z "$version" ]; then
      case ${GITHUB_ACTION_REF:-} in
        v[0-9]*) version=$GITHUB_ACTION_REF ;;
        *) version=latest ;;
      esac
    fi
    case $version in
      latest) cacheable=false ;;
      v[0-9]*) cacheable=true ;;
      [0-9]*) version=v$version cacheable=true ;;
      *) fail "version must be vX.Y.Z or latest, not '$version'" ;;
    esac
    root=${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-$HOME}}
    {
      echo "version=$version"
      echo "dir=$root/leash/$version/${RUNNER_OS:-os}-${RUNNER_ARCH:-arch}"
      echo "cacheable=$cacheable"
    } >>"$GITHUB_OUTPUT"
    ;;
  install)
    : "${LEASH_VERSION:?LEASH_VERSION is not set (the version the plan step chose)}"
    : "${LEASH_DIR:?LEASH_DIR is not set (the directory the plan step chose)}"
    : "${GITHUB_PATH:?GITHUB_PATH is not set: run this as a GitHub Actions step}"
    if [ -x "$LEASH_DIR/leash" ] && "$LEASH_DIR/leash" --version >/dev/null 2>&1; then
      echo "leash: $("$LEASH_DIR/leash" --version) from the cache"
    elif sh "$here/install.sh" --to "$LEASH_DIR"; then
      :
    else
      repository=$(sed -n 's/^repository = "\(.*\)"$/\1/p' "$here/Cargo.toml" | head -n 1)
      [ -n "$repository" ] || fail "no repository in $here/Cargo.toml"
      command -v cargo >/dev/null 2>&1 || fail "no prebuilt leash $LEASH_VERSION for this runner, and no cargo to build it"
      echo "::warning::no prebuilt leash $LEASH_VERSION for this runner; building it with cargo install (minutes)"
      tag=()
      [ "$LEASH_VERSION" = latest ] || tag=(--tag "$LEASH_VERSION")
      build=$(mktemp -d)
      cargo install --locked --git "$repository" "${tag[@]+"${tag[@]}"}" --root "$build" leash \
        || fail "cargo install --git $repository ${tag[*]+"${tag[*]}"} failed"
      mkdir -p "$LEASH_DIR"
      mv "$build/bin/leash" "$LEASH_DIR/leash"
      rm -rf "$build"
    fi
    echo "$LEASH_DIR" >>"$GITHUB_PATH"
    echo "bin=$LEASH_DIR/leash" >>"$GITHUB_OUTPUT"
    ;;
  *)
    echo "usage: action/setup.sh plan|install" >&2
    exit 2
    ;;
esac
