#!/usr/bin/env bash
# Build the examples with non-default parameters into build/variants/<name>/ for
# test/gpu/test_variants.py (run where MLIR is; carry build/ to the GPU machine).
set -euo pipefail
out="${1:-build/variants}"
rm -rf "$out"
# The variants test correctness at parameters the examples' contracts do not promise for (a
# swizzle tuned for 64x64 f32 tiles has bank conflicts at TILE = 48; BLOCK = 1 has no 16-byte
# vectors), so they are built without the contract check.
v() {
  name=$1; file=$2; shift 2
  tilec build "examples/$file" -o "$out/$name" --arch sm_90a --no-contracts "$@" >/dev/null 2>&1
}
v vadd_block1000 vadd.tile -D BLOCK=1000
v vadd_block1 vadd.tile -D BLOCK=1
v transpose_tile48 transpose.tile -D TILE=48
v transpose_tile128 transpose.tile -D TILE=128
v transpose_f16 transpose.tile -D T=f16
v softmax_cols8192 softmax.tile -D COLS=8192
v softmax_bf16 softmax.tile -D T=bf16
v softmax_f32 softmax.tile -D T=f32
v gemm_bm64 gemm_sm80.tile -D BM=64
v gemm_stages1 gemm_sm80.tile -D STAGES=1
v gemm_bk16 gemm_sm80.tile -D BK=16
echo "built $(find "$out" -name manifest.json | wc -l) variant bundles in $out"
