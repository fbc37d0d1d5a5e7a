#!/usr/bin/env bash
# Bundles for test/gpu/test_rows.py and bench/bench_rows.py: examples/softmax.tile and
# examples/layernorm.tile at several tile widths (COLS), into build/rows (or $1).
set -euo pipefail
out=${1:-build/rows}
arch=${ARCH:-sm_90a}
tag=${arch//_/}
for cols in 1024 4096 8192; do
  for k in softmax layernorm; do
    tilec build "examples/$k.tile" -D COLS=$cols -o "$out/${k}_c${cols}" --arch "$arch" >/dev/null
    mv "$out/${k}_c${cols}/${k}_${tag}" "$out/${k}_c${cols}_${tag}.tmp"
    rm -rf "$out/${k}_c${cols}" && mv "$out/${k}_c${cols}_${tag}.tmp" "$out/${k}_c${cols}_${tag}"
  done
done
tilec build examples/layernorm.tile -D COLS=4096 -D T=bf16 -o "$out/ln_bf16" --arch "$arch" >/dev/null
rm -rf "$out/layernorm_c4096bf16_${tag}"
mv "$out/ln_bf16/layernorm_${tag}" "$out/layernorm_c4096bf16_${tag}" && rm -rf "$out/ln_bf16"
# test/gpu/scores_softmax.tile: the accumulator's row reductions, with the warps of a row
# (WN) 1 and 2, and a 128-column tile.
for cfg in "w41:-D WM=4 -D WN=1" "w22:-D WM=2 -D WN=2" "w22n128:-D WM=2 -D WN=2 -D BN=128"; do
  name=${cfg%%:*}
  # shellcheck disable=SC2086
  tilec build test/gpu/scores_softmax.tile ${cfg#*:} -o "$out/sc_$name" --arch "$arch" >/dev/null
  rm -rf "$out/scores_${name}_${tag}"
  mv "$out/sc_$name/scores_${tag}" "$out/scores_${name}_${tag}" && rm -rf "$out/sc_$name"
done
