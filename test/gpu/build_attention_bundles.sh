#!/usr/bin/env bash
# Bundles for test/gpu/test_attention.py and bench/bench_attention.py, sm_80 PTX (the H200 runs
# it), into OUTDIR (default build/attention; carry it to the GPU machine, e.g. with
# `python test/gpu/pack_bundles.py pack build/attention`), where MLIR is:
#   examples/attention.tile as d<D>_<T>_c<CAUSAL>: every head dim (64, 96, 128, 256) in f16
#   without a mask and top-left causal, bottom-right causal at 64 and 128, bf16 at 64 and 128
#   (each bundle holds its variant(N % BN == 0, MASK = 0) build in variant/); the pipeline
#   three stages deep at D = 64 (d64_f16_c0_s3, for the bench; at D = 128 it spills);
#   examples/attention_varlen.tile as varlen_d<D>_<T>_c<CAUSAL>.
# About 20 bundles, ~0.5 MB each; each build checks the kernel's contract (no spills, the
# prefetch depth, the instructions).
set -euo pipefail
out="${1:-build/attention}"
rm -rf "$out"
mkdir -p "$out"
# one FILE KERNEL NAME [-D ...]: FILE's KERNEL built into $out/NAME.
one() {
  file=$1; kernel=$2; name=$3; shift 3
  tmp=$(mktemp -d)
  tilec build "$file" "$@" -o "$tmp" --arch sm_80 >/dev/null
  mv "$tmp/${kernel}_sm80" "$out/$name"
  rm -rf "$tmp"
}
for d in 64 96 128 256; do
  for c in 0 1; do one examples/attention.tile attention "d${d}_f16_c$c" -D D=$d -D CAUSAL=$c; done
done
for d in 64 128; do
  one examples/attention.tile attention "d${d}_f16_c2" -D D=$d -D CAUSAL=2
  for c in 0 1; do
    one examples/attention.tile attention "d${d}_bf16_c$c" -D D=$d -D CAUSAL=$c -D T=bf16
  done
done
one examples/attention.tile attention d64_f16_c0_s3 -D D=64 -D STAGES=3
one examples/attention_varlen.tile attention_varlen varlen_d64_f16_c0 -D D=64
one examples/attention_varlen.tile attention_varlen varlen_d128_f16_c1 -D D=128 -D CAUSAL=1
one examples/attention_varlen.tile attention_varlen varlen_d64_bf16_c2 -D D=64 -D T=bf16 -D CAUSAL=2
echo "built $(find "$out" -maxdepth 2 -name manifest.json | wc -l) attention bundles in $out"
