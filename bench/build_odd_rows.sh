#!/usr/bin/env bash
# Bundles for bench/bench_odd_rows.py: softmax, layernorm and rmsnorm at the one-block-a-row
# builds tilec.ops picks for N = 1001, 4095 and 8191 (COLS = 1024, 4096, 8192; the examples'
# default THREADS, as compiler/ops/specs.py builds them), f16 and bf16, sm_90a, into
# OUT/NAME/{op}_c{COLS}_{dtype} (OUT default build/oddrows, NAME default "new").
#   bench/build_odd_rows.sh [OUT] [NAME]
# TILEC overrides the compiler command (another tree's tilec, for the bundles to compare with).
set -euo pipefail
out=${1:-build/oddrows}/${2:-new}
tilec=${TILEC:-tilec}
one() {  # one OP COLS DTYPE
  tmp=$(mktemp -d)
  $tilec build "examples/$1.tile" -D COLS="$2" -D T="$3" -o "$tmp" --arch sm_90a >/dev/null
  rm -rf "$out/$1_c$2_$3" && mkdir -p "$out" && mv "$tmp/$1_sm90a" "$out/$1_c$2_$3"
  rm -rf "$tmp"
}
for op in softmax layernorm rmsnorm; do
  for cols in 1024 4096 8192; do
    for dtype in f16 bf16; do one "$op" "$cols" "$dtype" & done
  done
  wait
done
