#!/usr/bin/env bash
# The "run" step of action.yml with `command: batch` (docs/src/batch.md "Fan-out:
# leash batch", the Actions matrix): runs `leash batch` over the `input`
# JSONL file with the action's flags (`args` carries `--shard K/N`,
# `--rate`, limits), the result lines going to the `output` file — a new
# file: one already there (from the checkout, which may be hostile) could
# forge results or, as a link, point the lines anywhere — then
# - sets the step outputs `exit-code`, `results-file`, `result` (the
#   batch's `batch_end` summary) and `events-file` (the batch's stderr:
#   progress lines and the summary);
# - appends the counts and the ids that did not end ok to
#   GITHUB_STEP_SUMMARY, ids and messages escaped (action/lib.sh);
# - on a non-zero exit prints an `::error::` annotation with leash's last
#   `leash:` line, escaped, and exits with leash's exit code.
# It only reads the key from the environment leash inherits (action/run.sh
# masked it and exported any key input first); nothing here prints it.
# Runs on the bash 3.2 of macOS runners too.
set -euo pipefail
# shellcheck source=action/lib.sh
. "$(dirname "$0")/lib.sh"
: "${GITHUB_STEP_SUMMARY:?GITHUB_STEP_SUMMARY is not set: run this as a GitHub Actions step}"

command -v jq >/dev/null 2>&1 || fail "jq is needed to read leash's JSON results (it is on GitHub's runners)"
leash=${LEASH_BIN:-leash}
events=${LEASH_ACTION_EVENTS:-${RUNNER_TEMP:-$PWD}/leash-events.jsonl}
input=${INPUT_INPUT:-}
output=${INPUT_OUTPUT:-}
[ -n "$output" ] || output="leash-batch.jsonl"
[ -n "$input" ] || fail "set the input input: the JSONL file of items (command: batch)"
[ -f "$input" ] || fail "input '$input' does not exist"
if [ -e "$output" ] || [ -L "$output" ]; then
  fail "output '$output' exists already; name a new file (one from the checkout could forge results)"
fi
[ -z "${INPUT_PROMPT:-}${INPUT_PROMPT_FILE:-}" ] \
  || fail "prompt and prompt-file are for command: run; each batch item has its own prompt"

args=(batch "$input")
add_input_flags

code=0
"$leash" "${args[@]}" </dev/null >"$output" 2>"$events" || code=$?

summary=$(jq -cR 'fromjson? | select(type == "object" and .type == "batch_end")' "$events" 2>/dev/null | tail -n 1)
put exit-code "$code"
put results-file "$output"
put result "$summary"
put events-file "$events"

# leash's own words: its last `leash:` line (the failed items counted by
# status, or a usage error).
reason=$(grep '^leash: ' "$events" | tail -n 1 | sed 's/^leash: //' || true)
[ -n "$reason" ] || reason=$(grep -v '^{' "$events" | tail -n 1 || true)

{
  if [ "$code" = 0 ]; then
    echo "### leash batch: ok"
  else
    echo "### leash batch failed (exit $code)"
    echo
    printf '%s' "$reason" | jq -Rrs "$md_defs"'"> " + md'
  fi
  echo
  if [ -n "$summary" ]; then
    jq -r "$md_defs"'"| items | ok | failed | not started | tokens | cost | time |",
      "|---|---|---|---|---|---|---|",
      "| \(.total | md) | \(.ok | md) | \(.failed | md) | \(.notStarted | md) | \(.tokens | md) | \(if .cost == null then "—" else "$\(.cost | md)" end) | \(.durationMs | md) ms |"' <<<"$summary"
  fi
  if [ -f "$output" ]; then
    failed=$(jq -r "$md_defs"'select(.status != "ok") | "- \(.id | md): \(.status | md): \(.message // "" | md)"' "$output" 2>/dev/null | head -n 50 || true)
    if [ -n "$failed" ]; then
      printf '\n**Not ok** (first 50):\n\n%s\n' "$failed"
    fi
  fi
} >>"$GITHUB_STEP_SUMMARY"

if [ "$code" != 0 ]; then
  echo "::error title=leash batch exited $code::leash: $(escape "$reason")"
  exit "$code"
fi
echo "leash batch: ok, $(jq -r '"\(.ok) of \(.total) items, \(.tokens) tokens"' <<<"$summary")"
