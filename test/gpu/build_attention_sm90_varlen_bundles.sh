#!/usr/bin/env bash
# Bundles for test/gpu/test_attention_sm90_varlen.py, sm_90a PTX, into OUTDIR (default
# build/attention_sm90_varlen; carry it to the GPU machine, e.g. with
# `python test/gpu/pack_bundles.py pack build/attention_sm90_varlen`), where MLIR is:
# examples/attention_sm90_varlen.tile as varlen_d<D>_<T>_c<CAUSAL>: head dims 64 and 128, f16
# and bf16, no mask, top-left and bottom-right causal (12 builds), and d256 f16 top-left causal.
# Each build checks the kernel's contract (ring depth, no spills, no serialised wgmma, the
# instructions). About 250 KB a bundle, 3.3 MB in all.
set -euo pipefail
out="${1:-build/attention_sm90_varlen}"
rm -rf "$out"
mkdir -p "$out"
# one NAME [-D ...]: examples/attention_sm90_varlen.tile built into $out/NAME.
one() {
  name=$1; shift
  tmp=$(mktemp -d)
  tilec build examples/attention_sm90_varlen.tile "$@" -o "$tmp" >/dev/null
  mv "$tmp/attention90_varlen" "$out/$name"
  rm -rf "$tmp"
}
for d in 64 128; do
  for t in f16 bf16; do
    for c in 0 1 2; do one "varlen_d${d}_${t}_c$c" -D D=$d -D T=$t -D CAUSAL=$c; done
  done
done
one varlen_d256_f16_c1 -D D=256 -D CAUSAL=1
echo "built $(find "$out" -maxdepth 2 -name manifest.json | wc -l) SM90 varlen attention bundles in $out"
