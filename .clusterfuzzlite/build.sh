#!/bin/bash -eu
# ClusterFuzzLite's build of leash's fuzz targets (docs/src/fuzzing.md),
# run by the engine inside gcr.io/oss-fuzz-base/base-builder-rust, as its
# Rust guide says: `cargo fuzz build -O --debug-assertions` with the
# sanitizer the engine asks for, then each target of fuzz/targets.txt in
# $OUT with its seed corpus (seeds and regressions, zipped) and its
# dictionary. Runs outside the image too, given SRC and OUT (and
# CARGO_TARGET_DIR, where cargo builds, if not fuzz/target).
cd "$SRC/leash"
cargo fuzz build -O --debug-assertions
built=${CARGO_TARGET_DIR:-fuzz/target}/x86_64-unknown-linux-gnu/release
while read -r target dict; do
  case $target in '' | '#'*) continue ;; esac
  cp "$built/$target" "$OUT/$target"
  cp "fuzz/dicts/$dict.dict" "$OUT/$target.dict"
  rm -f "$OUT/${target}_seed_corpus.zip"
  for dir in "fuzz/seeds/$target" "fuzz/regressions/$target"; do
    if [ -d "$dir" ]; then
      (cd "$dir" && zip -q -j "$OUT/${target}_seed_corpus.zip" ./*)
    fi
  done
done < fuzz/targets.txt
