#!/usr/bin/env bash
# The "run" step of action.yml (docs/src/github-action.md "The GitHub Action"): with
# `command: run` (the default) runs leash once with the action's inputs,
# then
# - sets the step outputs `reply`, `exit-code`, `result` (the
#   `--output json` object) and `events-file` in GITHUB_OUTPUT, each
#   multi-line safe behind a random heredoc delimiter;
# - appends the reply (fenced), usage, cost and changed files to
#   GITHUB_STEP_SUMMARY, every text from the run escaped (action/lib.sh);
# - on a non-zero exit prints an `::error::` annotation with the run's
#   reason (the result's `message`, else the `run_end` event's), escaped,
#   and exits with leash's exit code, so the step fails as leash did.
# The JSONL events go to LEASH_ACTION_EVENTS (action.yml uploads them as an
# artifact), never to the log. The key reaches leash only through the
# environment it inherits (the step's `env`, or a key input exported by
# take_keys in action/lib.sh); nothing here prints it.
#
# Inputs arrive as INPUT_* variables (action.yml maps them, a composite
# action gets none by itself); LEASH_BIN is the leash to run. Runs on the
# bash 3.2 of macOS runners too.
set -euo pipefail
# shellcheck source=action/lib.sh
. "$(dirname "$0")/lib.sh"
: "${GITHUB_STEP_SUMMARY:?GITHUB_STEP_SUMMARY is not set: run this as a GitHub Actions step}"

# The keys first: masked before anything can print, exported for leash
# (and action/batch.sh) from the key inputs.
take_keys

# `command`: run (one run, this script), batch (action/batch.sh) or
# install (the install steps did it all; nothing runs here).
case ${INPUT_COMMAND:-run} in
  run | "") ;;
  batch) exec "$(dirname "$0")/batch.sh" ;;
  install)
    echo "leash: installed; command: install runs nothing"
    exit 0
    ;;
  *) fail "command must be run, batch or install, not '$INPUT_COMMAND'" ;;
esac

command -v jq >/dev/null 2>&1 || fail "jq is needed to read leash's JSON result (it is on GitHub's runners)"
leash=${LEASH_BIN:-leash}
events=${LEASH_ACTION_EVENTS:-${RUNNER_TEMP:-$PWD}/leash-events.jsonl}
prompt=${INPUT_PROMPT:-}
prompt_file=${INPUT_PROMPT_FILE:-}

args=(--output json --events jsonl)
add_input_flags

# The prompt is `prompt`; a `prompt-file` alone is the prompt, and next to
# `prompt` it is appended the way leash appends piped stdin
# (docs/src/usage.md "Stdin"), e.g. a diff to review.
stdin=/dev/null
if [ -n "$prompt_file" ]; then
  [ -f "$prompt_file" ] || fail "prompt-file '$prompt_file' does not exist"
  stdin=$prompt_file
  [ -n "$prompt" ] || prompt=-
fi
[ -n "$prompt" ] || fail "set the prompt input (or prompt-file)"
args+=(-- "$prompt")

result=$(mktemp)
trap 'rm -f "$result"' EXIT
code=0
"$leash" "${args[@]}" <"$stdin" >"$result" 2>"$events" || code=$?

valid=false
jq -e 'type == "object"' "$result" >/dev/null 2>&1 && valid=true
if $valid; then
  reply=$(jq -r '.reply // ""' "$result")
  object=$(jq -c . "$result")
else
  reply="" object=""
fi
put reply "$reply"
put result "$object"
put exit-code "$code"
put events-file "$events"

# The reason of a failed run: the result's `message`, else the run_end
# event's (both are leash's last-line words), else its last stderr line.
reason=""
if $valid; then
  reason=$(jq -r '.message // empty' "$result")
fi
if [ -z "$reason" ]; then
  reason=$(jq -rR 'fromjson? | select(.type == "run_end") | .message // empty' "$events" 2>/dev/null | tail -n 1)
fi
if [ -z "$reason" ] && $valid; then
  reason=$(jq -r '.errorMessage // empty' "$result")
fi
if [ -z "$reason" ]; then
  reason=$(grep -v '^{' "$events" | tail -n 1 | sed 's/^leash: //')
fi

# The job summary: what the run said and what it cost, every text from
# the run (reply, reason, file names, model) kept as text.
{
  if [ "$code" = 0 ]; then
    echo "### leash: ok"
  else
    echo "### leash failed (exit $code)"
    echo
    printf '%s' "$reason" | jq -Rrs "$md_defs"'"> " + md'
  fi
  echo
  if [ -n "$reply" ]; then
    jq -r "$md_defs"'.reply | fenced' "$result"
    echo
  fi
  if $valid; then
    jq -r "$md_defs"'"| turns | input tokens | output tokens | cache read | cost | time |",
      "|---|---|---|---|---|---|",
      "| \(.turns | md) | \(.usage.input | md) | \(.usage.output | md) | \(.usage.cacheRead | md) | \(if .cost == null then "—" else "$\(.cost | md)" end) | \(.durationMs | md) ms |",
      "",
      "**Files changed:** \(if (.changedFiles // []) == [] then "none" else (.changedFiles | map(md) | join(", ")) end)",
      "",
      "\(.provider | md) · \(.model | md) · status \(.status | code)"' "$result"
  fi
} >>"$GITHUB_STEP_SUMMARY"

if [ "$code" != 0 ]; then
  echo "::error title=leash exited $code::leash: $(escape "$reason")"
  exit "$code"
fi
echo "leash: ok, $(jq -r '"\(.turns) turns, \(.usage.totalTokens) tokens"' "$result")"
