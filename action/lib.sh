# shellcheck shell=bash
# Sourced by action/setup.sh, action/run.sh and action/batch.sh
# (docs/src/github-action.md "The GitHub Action"): what the steps share — the input checks'
# failure, the provider keys, the flags every run takes from the inputs, and the three ways
# untrusted text (an input, the reply, a file name, an error message, an
# item id) leaves a step, each of which keeps it data (docs/src/github-action.md "What the
# Action checks"):
# - step outputs: `name<<DELIM` with a random delimiter the value is
#   checked not to hold (`put`); nothing else writes GITHUB_OUTPUT, and no
#   untrusted text goes to GITHUB_ENV or GITHUB_PATH;
# - the log: only `::error` annotations whose message is escaped as
#   workflow commands escape data (`escape`: %, CR and LF), so it can
#   never start a line of its own; nothing else untrusted is echoed;
# - the job summary: Markdown built by jq with `md` (one line, the
#   characters of HTML, links, emphasis, code, tables and math
#   backslash-escaped, and a leading list or heading marker)
#   and `fenced` (a code fence longer than any run of backticks in the
#   text), control and format characters (bidi overrides, zero widths)
#   shown as U+FFFD.
# Runs on the bash 3.2 of macOS runners too.

# Workflow commands end at a line break: %, CR and LF are escaped.
escape() {
  local text=${1//%/%25}
  text=${text//$'\r'/%0D}
  printf '%s' "${text//$'\n'/%0A}"
}

# A failed input check: one escaped annotation, exit CODE (default 2).
fail() {
  echo "::error::leash action: $(escape "$1")"
  exit "${2:-2}"
}

: "${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set: run this as a GitHub Actions step}"

# Outputs: `name<<DELIM` … `DELIM`, with a delimiter no value contains.
delimiter="leash_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
put() {
  if grep -qF "$delimiter" <<<"$2"; then
    fail "output $1 contains the delimiter; run again"
  fi
  printf '%s<<%s\n%s\n%s\n' "$1" "$delimiter" "$2" "$delimiter" >>"$GITHUB_OUTPUT"
}

# A leash release: `latest` or a semantic version with an optional
# leading v (vMAJOR.MINOR.PATCH, a -prerelease and +build of [0-9A-Za-z.-]).
# Anything else (a newline, `/..`, a branch) is no version.
semver='^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'
is_version() {
  [[ $1 =~ $semver ]]
}

# jq definitions for the job summary (prefix a filter with "$md_defs").
# shellcheck disable=SC2016,SC2034 # jq's own $ and backticks; used by run.sh and batch.sh
md_defs='
def visible: gsub("[\\p{Cf}\\p{Zl}\\p{Zp}\\x{0}-\\x{8}\\x{b}-\\x{1f}\\x{7f}-\\x{9f}]"; "\ufffd");
def md: tostring | gsub("[\r\n\t]+"; " ") | visible
  | gsub("(?<c>[\\\\`*_\\[\\]<>&|~$#])"; "\\\(.c)")
  | sub("^(?<c>[-+=])"; "\\\(.c)")
  | sub("^(?<n>[0-9]+)(?<p>[.)])"; "\(.n)\\\(.p)");
def code: if test("^[a-z_]+$") then "`\(.)`" else md end;
def fenced: tostring | visible
  | (if length > 65536 then .[:65536] + "\n[… cut at 65536 characters in this summary; the output holds all of it]" else . end)
  | ("`" * ([([scan("`+") | length] | max // 0) + 1, 3] | max)) as $f
  | "\($f)text\n\(.)\n\($f)";
'

# A value the runner must hide from here on (`::add-mask::`), escaped as
# workflow commands escape data so the runner masks the value itself; a
# value with a line break is masked line by line as well, as the runner
# may print one line of it alone. Nothing but this command carries it to
# the log. A blank value is no key, and masking it would hide every
# blank of the log.
mask() {
  [ -n "${1//[[:space:]]/}" ] || return 0
  echo "::add-mask::$(escape "$1")"
  case $1 in
    *$'\n'* | *$'\r'*)
      local line
      while IFS= read -r line || [ -n "$line" ]; do
        [ -z "$line" ] || echo "::add-mask::$(escape "$line")"
      done <<<"${1//$'\r'/$'\n'}"
      ;;
  esac
}

# The provider keys (docs/src/github-action.md "The key"): every key the
# step holds is masked first, from the step's `env` (OPENAI_API_KEY,
# ANTHROPIC_API_KEY, LEASH_API_KEY, which the runner masks only when they
# come from `secrets`) or from an input (openai-api-key, anthropic-api-key,
# or claude-code-action's anthropic_api_key). An input is exported for
# leash and wins over the step's `env`, with a notice that names both
# and never the key. Nothing writes a key to an output, GITHUB_ENV or the
# log.
take_keys() {
  local anthropic=${INPUT_ANTHROPIC_API_KEY:-} alias=${INPUT_ANTHROPIC_API_KEY_ALIAS:-}
  mask "${OPENAI_API_KEY:-}"
  mask "${ANTHROPIC_API_KEY:-}"
  mask "${LEASH_API_KEY:-}"
  mask "${INPUT_OPENAI_API_KEY:-}"
  mask "$anthropic"
  mask "$alias"
  if [ -n "${alias//[[:space:]]/}" ]; then
    [ -z "${anthropic//[[:space:]]/}" ] || [ "$anthropic" = "$alias" ] \
      || fail "anthropic-api-key and anthropic_api_key hold different keys; set one of them"
    anthropic=$alias
  fi
  take_key OPENAI_API_KEY openai-api-key "${INPUT_OPENAI_API_KEY:-}"
  take_key ANTHROPIC_API_KEY anthropic-api-key "$anthropic"
}

# take_key VARIABLE INPUT VALUE: VALUE (an input's) becomes VARIABLE for
# leash; a different value in the step's `env` gets a notice. A blank
# input (an unset secret is empty) leaves the step's `env` as it is.
take_key() {
  [ -n "${3//[[:space:]]/}" ] || return 0
  if [ -n "${!1:-}" ] && [ "${!1}" != "$3" ]; then
    echo "::notice::leash action: the $2 input replaces $1 from the step's env"
  fi
  export "$1=$3"
}

# Appends to the array `args` the flags of the inputs provider, model,
# system, allow-write, allow-exec and args. Free text goes as `--flag=VALUE`, so a
# value starting with `-` (a system message written as a bullet list) is
# a value, not a flag.
add_input_flags() {
  [ -z "${INPUT_PROVIDER:-}" ] || args+=("--provider=$INPUT_PROVIDER")
  [ -z "${INPUT_MODEL:-}" ] || args+=("--model=$INPUT_MODEL")
  [ -z "${INPUT_SYSTEM:-}" ] || args+=("--system=$INPUT_SYSTEM")
  case ${INPUT_ALLOW_WRITE:-false} in
    true) args+=(--allow-write) ;;
    false | "") ;;
    *) fail "allow-write must be true or false, not '$INPUT_ALLOW_WRITE'" ;;
  esac
  case ${INPUT_ALLOW_EXEC:-false} in
    true) args+=(--allow-exec) ;;
    unconfined) args+=(--allow-exec=unconfined) ;;
    false | "") ;;
    *) fail "allow-exec must be true, false or unconfined, not '$INPUT_ALLOW_EXEC'" ;;
  esac
  # `args` is split like a shell's words (quotes and backslashes work, no
  # expansion, nothing runs): xargs does exactly that, one word per NUL.
  local extra=${INPUT_ARGS:-} words word
  if [ -n "${extra//[[:space:]]/}" ]; then
    words=$(mktemp)
    printf '%s' "$extra" | xargs printf '%s\0' >"$words" 2>/dev/null \
      || fail "cannot split args (an unmatched quote?): $extra"
    while IFS= read -r -d '' word; do args+=("$word"); done <"$words"
    rm -f "$words"
  fi
}
