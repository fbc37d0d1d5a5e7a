#!/usr/bin/env bash
# Bundles for test/gpu/test_attention_sm90.py and bench/bench_attention.py --dir
# build/attention_sm90, sm_90a PTX, into OUTDIR (default build/attention_sm90; carry it to the
# GPU machine, e.g. with `python test/gpu/pack_bundles.py pack build/attention_sm90`), where
# MLIR is: examples/attention_sm90.tile as d<D>_<T>_c<CAUSAL>: head dims 64, 128 and 256 in
# f16 without a mask and top-left causal, bottom-right causal at 64 and 128, bf16 at 128, and
# d<D>_<T>_c<CAUSAL>_st0 the consumers not staggered (ST = 0, the default is 1) at 64 and 128,
# and d<D>_<T>_c<CAUSAL>_io the same set as the default builds with FlashAttention-3's
# intra-warpgroup overlap (IO = 1; d128_f16_c0_io_st0 without the stagger, d64_f16_c*_io3 at 3
# stages). Each
# build checks the kernel's contract (ring depth, no spills, no serialised wgmma, the
# instructions).
set -euo pipefail
out="${1:-build/attention_sm90}"
rm -rf "$out"
mkdir -p "$out"
# one NAME [-D ...]: examples/attention_sm90.tile built into $out/NAME.
one() {
  name=$1; shift
  tmp=$(mktemp -d)
  tilec build examples/attention_sm90.tile "$@" -o "$tmp" >/dev/null
  mv "$tmp/attention90" "$out/$name"
  rm -rf "$tmp"
}
for d in 64 128 256; do
  for c in 0 1; do one "d${d}_f16_c$c" -D D=$d -D CAUSAL=$c; done
done
for d in 64 128; do one "d${d}_f16_c2" -D D=$d -D CAUSAL=2; done
for c in 0 1; do one "d128_bf16_c$c" -D D=128 -D CAUSAL=$c -D T=bf16; done
# consumer groups not staggered (ST = 0), beside the default builds for the bench
for c in 0 1; do one "d128_f16_c${c}_st0" -D D=128 -D CAUSAL=$c -D ST=0; done
one d64_f16_c0_st0 -D D=64 -D ST=0
one d128_bf16_c0_st0 -D D=128 -D T=bf16 -D ST=0
# the intra-warpgroup overlap (IO = 1) beside each default build
for d in 64 128 256; do
  for c in 0 1; do one "d${d}_f16_c${c}_io" -D D=$d -D CAUSAL=$c -D IO=1; done
done
for d in 64 128; do one "d${d}_f16_c2_io" -D D=$d -D CAUSAL=2 -D IO=1; done
for c in 0 1; do one "d128_bf16_c${c}_io" -D D=128 -D CAUSAL=$c -D T=bf16 -D IO=1; done
one d128_f16_c0_io_st0 -D D=128 -D IO=1 -D ST=0
for c in 0 1; do one "d64_f16_c${c}_io3" -D D=64 -D CAUSAL=$c -D IO=1 -D STAGES=3; done
echo "built $(find "$out" -maxdepth 2 -name manifest.json | wc -l) SM90 attention bundles in $out"
