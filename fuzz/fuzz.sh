#!/usr/bin/env bash
# Runs each fuzz target for a bounded time and prints what it did: the
# executions, and whether it crashed (the input is then in
# fuzz/artifacts/TARGET/). Called by `make fuzz`; never by CI.
#
#   fuzz/fuzz.sh SECONDS [TARGET...]
#
# Stable toolchain: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its -Z flags
# (sanitizer, coverage), which the stable compiler otherwise refuses.
set -u
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(sse_decoder openai_stream responses_stream anthropic_stream faux_script sandbox_path dotenv mcp_messages git_args tool_policy tool_args rate_headers)
fi
dict_of() {
    case "$1" in
        sse_decoder | openai_stream) echo openai ;;
        responses_stream) echo responses ;;
        anthropic_stream) echo anthropic ;;
        faux_script) echo faux ;;
        dotenv) echo dotenv ;;
        mcp_messages) echo mcp ;;
        git_args) echo git ;;
        rate_headers) echo rate ;;
        *) echo paths ;;
    esac
}
failed=0
summary=()
for target in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$target"
    log="fuzz/corpus/$target.log"
    echo "== $target: ${seconds}s"
    RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
        -max_total_time="$seconds" -dict="fuzz/dicts/$(dict_of "$target").dict" \
        -print_final_stats=1 >"$log" 2>&1
    status=$?
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    if [ $status -eq 0 ]; then
        summary+=("$target: ${runs:-?} executions, nothing found")
    else
        failed=1
        summary+=("$target: CRASH after ${runs:-?} executions; see $log and fuzz/artifacts/$target/")
        grep -m1 -E 'panicked at|ERROR: ' "$log" || tail -20 "$log"
    fi
done
echo
printf '%s\n' "${summary[@]}"
exit $failed
