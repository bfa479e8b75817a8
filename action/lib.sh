# Sourced by action/run.sh and action/batch.sh (README "Recipes", the
# GitHub Action): what both commands share — the input checks' failure,
# the flags every run takes from the inputs, and multi-line-safe step
# outputs. It runs nothing and prints no input but a failure's words.
# Runs on the bash 3.2 of macOS runners too.

fail() {
  echo "::error::leash action: $1"
  exit 2
}

: "${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set: run this as a GitHub Actions step}"
: "${GITHUB_STEP_SUMMARY:?GITHUB_STEP_SUMMARY is not set: run this as a GitHub Actions step}"

# Appends to the array `args` the flags of the inputs provider, model,
# system, allow-write and args.
add_input_flags() {
  [ -z "${INPUT_PROVIDER:-}" ] || args+=(--provider "$INPUT_PROVIDER")
  [ -z "${INPUT_MODEL:-}" ] || args+=(--model "$INPUT_MODEL")
  [ -z "${INPUT_SYSTEM:-}" ] || args+=(--system "$INPUT_SYSTEM")
  case ${INPUT_ALLOW_WRITE:-false} in
    true) args+=(--allow-write) ;;
    false | "") ;;
    *) fail "allow-write must be true or false, not '$INPUT_ALLOW_WRITE'" ;;
  esac
  # `args` is split like a shell's words (quotes and backslashes work, no
  # expansion, nothing runs): xargs does exactly that, one word per NUL.
  local extra=${INPUT_ARGS:-} words word
  if [ -n "${extra//[[:space:]]/}" ]; then
    words=$(mktemp)
    printf '%s' "$extra" | xargs printf '%s\0' >"$words" \
      || fail "cannot split args (an unmatched quote?): $extra"
    while IFS= read -r -d '' word; do args+=("$word"); done <"$words"
    rm -f "$words"
  fi
}

# Outputs: `name<<DELIM` … `DELIM`, with a delimiter no value contains.
delimiter="leash_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
put() {
  if grep -qF "$delimiter" <<<"$2"; then
    fail "output $1 contains the delimiter; run again"
  fi
  printf '%s<<%s\n%s\n%s\n' "$1" "$delimiter" "$2" "$delimiter" >>"$GITHUB_OUTPUT"
}

# Workflow commands end at a line break: %, CR and LF are escaped.
escape() {
  local text=${1//%/%25}
  text=${text//$'\r'/%0D}
  printf '%s' "${text//$'\n'/%0A}"
}
