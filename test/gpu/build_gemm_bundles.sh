#!/usr/bin/env bash
# Build examples/gemm_sm80.tile's bundles for test/gpu/test_gemm.py (where MLIR is; carry build/
# to the GPU machine): the default (K-major A and B, f16) for sm_80 and sm_90a, then every
# operand layout (MA, MB) in f16 and bf16 for sm_90a, named a<MA>b<MB>_<T>.
set -euo pipefail
out="${1:-build/gemm}"
rm -rf "$out"
tilec build examples/gemm_sm80.tile -o "$out/default_sm80" --arch sm_80 >/dev/null
tilec build examples/gemm_sm80.tile -o "$out/default_sm90a" --arch sm_90a >/dev/null
for t in f16 bf16; do
  for ma in 0 1; do
    for mb in 0 1; do
      tilec build examples/gemm_sm80.tile -o "$out/a${ma}b${mb}_$t" --arch sm_90a \
        -D MA=$ma -D MB=$mb -D T=$t >/dev/null
    done
  done
done
echo "built $(find "$out" -name manifest.json | wc -l) GEMM bundles in $out"
