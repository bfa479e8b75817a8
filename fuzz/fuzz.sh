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
cd "$(dirname "$0")/.." || exit 1
seconds=${1:-60}
shift || true
targets=("$@")
# The targets and their dictionaries: fuzz/targets.txt, as the engine reads it.
declare -A dicts
while read -r target dict; do
    case $target in '' | '#'*) continue ;; esac
    dicts[$target]=$dict
    [ $# -gt 0 ] || targets+=("$target")
done < fuzz/targets.txt
dict_of() {
    echo "${dicts[$1]:-paths}"
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
