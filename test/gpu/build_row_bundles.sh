#!/usr/bin/env bash
# Bundles for test/gpu/test_rows.py, test_persistent_rows.py, test_scores_softmax.py,
# test_attention_step.py, test_masks.py, test_pipelined_rows.py and bench/bench_rows.py, into
# build/rows (or $1): examples/softmax.tile and layernorm.tile at several tile widths (COLS)
# and split over clusters (on sm_90a), examples/softmax_persistent.tile and
# layernorm_persistent.tile (sm_90a), test/gpu/scores_softmax.tile,
# test/gpu/masks.tile, test/gpu/pipelined_rows.tile, examples/attention_step.tile,
# test/gpu/var_gemm.tile for test_var_gemm.py, test/gpu/rank1_rows.tile for test_rank1_rows.py
# (examples/attention.tile's bundles: test/gpu/build_attention_bundles.sh).
set -euo pipefail
out=${1:-build/rows}
arch=${ARCH:-sm_90a}
tag=${arch//_/}
# one FILE KERNEL NAME [-D ...]: build FILE's KERNEL into $out/NAME_<arch>, replacing it.
one() {
  file=$1; kernel=$2; name=$3; shift 3
  tmp=$(mktemp -d)
  tilec build "$file" "$@" -o "$tmp" --arch "$arch" >/dev/null
  rm -rf "$out/${name}_${tag}" && mkdir -p "$out" && mv "$tmp/${kernel}_${tag}" "$out/${name}_${tag}"
  rm -rf "$tmp"
}
for cols in 1024 4096 8192; do
  for k in softmax layernorm; do one "examples/$k.tile" $k "${k}_c${cols}" -D COLS=$cols; done
done
one examples/layernorm.tile layernorm layernorm_c4096bf16 -D COLS=4096 -D T=bf16
# softmax two rows a block (its m and l a value per row), and the widest rows.
one examples/softmax.tile softmax softmax_c1024r2 -D COLS=1024 -D ROWS=2
for cols in 16384 32768; do one examples/softmax.tile softmax "softmax_c${cols}" -D COLS=$cols; done
# Rows split over a cluster of SPLIT blocks (sm_90a: cluster_max / cluster_sum through
# distributed shared memory): narrow tiles (a row of 1000 leaves the second block without a
# tile), and the widest rows.
if [ "$arch" = sm_90a ]; then
  one examples/softmax.tile softmax softmax_c1024s2 -D COLS=1024 -D SPLIT=2
  one examples/softmax.tile softmax softmax_c16384s2 -D COLS=16384 -D SPLIT=2
  one examples/layernorm.tile layernorm layernorm_c1024s4 -D COLS=1024 -D SPLIT=4
  one examples/layernorm.tile layernorm layernorm_c8192s4 -D COLS=8192 -D SPLIT=4
fi
# Persistent rows (examples/*_persistent.tile): the next row's copy in flight while a block
# works on its row; rows of 32768 (the bench's) and 4096 (many rows a block in the tests).
if [ "$arch" = sm_90a ]; then
  for cols in 4096 32768; do
    one examples/softmax_persistent.tile softmax_persistent "softmax_p${cols}" -D COLS=$cols
    one examples/layernorm_persistent.tile layernorm_persistent "layernorm_p${cols}" -D COLS=$cols
  done
fi
# test/gpu/scores_softmax.tile: the accumulator's row reductions, with the warps of a row
# (WN) 1 and 2, and a 128-column tile.
one test/gpu/scores_softmax.tile scores scores_w41 -D WM=4 -D WN=1
one test/gpu/scores_softmax.tile scores scores_w22 -D WM=2 -D WN=2
one test/gpu/scores_softmax.tile scores scores_w22n128 -D WM=2 -D WN=2 -D BN=128
# test/gpu/pipelined_rows.tile: a pipeline(...) loop carrying vars, 3 and 2 stages deep.
one test/gpu/pipelined_rows.tile softmax_pipelined pipelined_s3 -D S=3
one test/gpu/pipelined_rows.tile softmax_pipelined pipelined_s2 -D S=2
# test/gpu/masks.tile: loads and stores with mask = (a row tile; an accumulator, causal).
one test/gpu/masks.tile rows_masked masks_rows
one test/gpu/masks.tile causal masks_causal
# examples/attention_step.tile: P = softmax(Q Kᵀ) fed to P V from registers, at the defaults,
# with two m-atoms a warp (WM = 2), with a 128-column K/V tile, and in bf16.
one examples/attention_step.tile attention_step attention_default
one examples/attention_step.tile attention_step attention_wm2 -D WM=2
one examples/attention_step.tile attention_step attention_n128 -D BN=128
one examples/attention_step.tile attention_step attention_bf16 -D T=bf16
# test/gpu/var_gemm.tile: a K loop carrying a var beside the accumulator (test_var_gemm.py).
one test/gpu/var_gemm.tile var_gemm var_gemm
# test/gpu/rank1_rows.tile: rank-1 weights and biases as rows, prepend(W, 1) (test_rank1_rows.py).
one test/gpu/rank1_rows.tile rank1_norm rank1_norm
one test/gpu/rank1_rows.tile rank1_scale rank1_scale
