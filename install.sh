#!/bin/sh
# Installs a prebuilt leash from the project's GitHub releases
# (docs/src/install.md "Install"):
#
#   curl -fsSL https://raw.githubusercontent.com/leash-cli/leash/main/install.sh | sh
#   sh install.sh --version v0.1.0 --to /usr/local/bin --sudo
#
# It picks the archive for this OS and CPU, checks it against the release's
# .sha256 file and refuses on any mismatch, and copies the one binary to
# ~/.local/bin (or --to DIR). It never uses sudo unless --sudo is given and
# reads no secret. Every failure is one `leash:` line on stderr: exit 2 for
# a bad option or an unsupported platform, 1 for anything else.
#
# Environment (for mirrors and tests): LEASH_VERSION (like --version),
# LEASH_INSTALL_DIR (like --to), LEASH_INSTALL_BASE (the releases URL,
# file:// works too), LEASH_INSTALL_OS / LEASH_INSTALL_ARCH (instead of
# `uname -s` / `uname -m`), LEASH_INSTALL_ARCHIVES (a directory that keeps
# the downloaded archive: one already there is checked against the
# release's .sha256 like a download and used instead of downloading it
# again; the GitHub Action caches it).
set -eu

# The one place install.sh names the repository; Cargo.toml's
# `repository`, action.yml and the README name the same.
REPOSITORY=https://github.com/leash-cli/leash
BASE=${LEASH_INSTALL_BASE:-$REPOSITORY/releases}
VERSION=${LEASH_VERSION:-latest}
DEST=${LEASH_INSTALL_DIR:-${HOME:-}/.local/bin}
SUDO=

die() {
  echo "leash: $1" >&2
  exit "${2:-1}"
}

usage() {
  cat <<'EOF'
Usage: install.sh [--version vX.Y.Z] [--to DIR] [--sudo]
  --version V   the release to install (default: latest; LEASH_VERSION)
  --to DIR      where the binary goes (default: ~/.local/bin; LEASH_INSTALL_DIR)
  --sudo        run the copy with sudo (for a directory you cannot write)
EOF
}

while [ $# -gt 0 ]; do
  case $1 in
    --version) [ $# -ge 2 ] || die "--version needs a value, e.g. --version v0.1.0" 2
      VERSION=$2; shift 2 ;;
    --version=*) VERSION=${1#*=}; shift ;;
    --to) [ $# -ge 2 ] || die "--to needs a directory" 2
      DEST=$2; shift 2 ;;
    --to=*) DEST=${1#*=}; shift ;;
    --sudo) SUDO=sudo; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (try: install.sh --help)" 2 ;;
  esac
done
[ -n "$DEST" ] || die "no install directory: HOME is unset; pass --to DIR" 2

# The release's target triple for this machine.
os=${LEASH_INSTALL_OS:-$(uname -s)}
arch=${LEASH_INSTALL_ARCH:-$(uname -m)}
case $arch in
  x86_64|amd64) arch=x86_64 ;;
  aarch64|arm64) arch=aarch64 ;;
  *) die "no prebuilt leash for CPU '$arch' (x86_64 and aarch64 are built); install from source: cargo install --locked --git $REPOSITORY" 2 ;;
esac
case $os in
  Linux|linux)
    # The Linux builds link glibc (2.17 or newer); a musl system such as
    # Alpine cannot run them.
    if [ -z "${LEASH_INSTALL_OS:-}" ] && ldd --version 2>&1 | grep -qi musl; then
      die "no prebuilt leash for musl libc (the Linux builds need glibc 2.17+); install from source: cargo install --locked --git $REPOSITORY" 2
    fi
    target=$arch-unknown-linux-gnu ;;
  Darwin|darwin|macos) target=$arch-apple-darwin ;;
  *) die "no prebuilt leash for OS '$os' (Linux and macOS are built); install from source: cargo install --locked --git $REPOSITORY" 2 ;;
esac

# Fetches URL to FILE with curl or wget; fails (and says which URL) on any
# HTTP error.
fetch() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsL --retry 2 -o "$2" "$1" || die "cannot download $1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1" || die "cannot download $1"
  else
    die "neither curl nor wget is installed"
  fi
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d ' ' -f 1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d ' ' -f 1
  else
    die "neither sha256sum nor shasum is installed: cannot verify the download"
  fi
}

tmp=$(mktemp -d 2>/dev/null || mktemp -d -t leash-install)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# "latest" is what the latest release says in leash-version.txt, an asset
# of every release, since the archive's name carries the version.
if [ "$VERSION" = latest ]; then
  fetch "$BASE/latest/download/leash-version.txt" "$tmp/version"
  VERSION=$(tr -d ' \r\n' <"$tmp/version")
  [ -n "$VERSION" ] || die "the latest release names no version ($BASE/latest/download/leash-version.txt is empty)"
fi
# A version becomes a URL and a file name: digits, letters, `.`, `-` and
# `+` only (vX.Y.Z, -prerelease, +build), never a `/` or a line break.
not_a_version() {
  # Shown on one line: any other byte as `?`.
  shown=$(printf '%s' "$VERSION" | tr -c '0-9A-Za-z.+/-' '?')
  die "'$shown' is not a version: use vX.Y.Z (e.g. --version v0.1.0) or latest" 2
}
case $VERSION in
  *[!0-9A-Za-z.+-]*) not_a_version ;;
  v[0-9]*.[0-9]*.[0-9]*) ;;
  [0-9]*.[0-9]*.[0-9]*) VERSION=v$VERSION ;;
  *) not_a_version ;;
esac

name=leash-${VERSION#v}-$target
archive=$name.tar.gz
fetch "$BASE/download/$VERSION/$archive.sha256" "$tmp/$archive.sha256"
expected=$(cut -d ' ' -f 1 <"$tmp/$archive.sha256")
kept=${LEASH_INSTALL_ARCHIVES:+$LEASH_INSTALL_ARCHIVES/$archive}
if [ -n "$kept" ] && [ -f "$kept" ] && [ ! -L "$kept" ]; then
  cp "$kept" "$tmp/$archive" || die "cannot read $kept"
  if [ "$(sha256 "$tmp/$archive")" = "$expected" ]; then
    echo "leash: $archive from $LEASH_INSTALL_ARCHIVES, checked against the release's checksum"
  else
    echo "leash: warning: $kept does not match the release's checksum; downloading it again" >&2
    fetch "$BASE/download/$VERSION/$archive" "$tmp/$archive"
  fi
else
  fetch "$BASE/download/$VERSION/$archive" "$tmp/$archive"
fi
actual=$(sha256 "$tmp/$archive")
[ "$expected" = "$actual" ] \
  || die "checksum mismatch for $archive: expected $expected, got $actual; nothing installed"
if [ -n "$kept" ]; then
  if ! { mkdir -p "$LEASH_INSTALL_ARCHIVES" && rm -f "$kept" && cp "$tmp/$archive" "$kept"; }; then
    die "cannot keep $archive in $LEASH_INSTALL_ARCHIVES"
  fi
fi

tar -xzf "$tmp/$archive" -C "$tmp" || die "cannot unpack $archive"
[ -f "$tmp/$name/leash" ] || die "$archive holds no $name/leash"

# Copied next to the old binary, then renamed over it: a running leash
# keeps working and no half-written file is ever on the PATH.
$SUDO mkdir -p "$DEST" || die "cannot create $DEST (pass --sudo, or --to a directory of yours)"
[ -n "$SUDO" ] || [ -w "$DEST" ] || die "$DEST is not writable (pass --sudo, or --to a directory of yours)"
$SUDO cp "$tmp/$name/leash" "$DEST/.leash.new" || die "cannot write $DEST/.leash.new"
$SUDO chmod 755 "$DEST/.leash.new"
$SUDO mv -f "$DEST/.leash.new" "$DEST/leash" || die "cannot install $DEST/leash"

echo "leash $VERSION ($target) installed to $DEST/leash"
case :${PATH:-}: in
  *:"$DEST":*) ;;
  *) echo "note: $DEST is not on your PATH; add it, e.g. export PATH=\"$DEST:\$PATH\"" ;;
esac
