#!/usr/bin/env bash
# The GEMM families tilec.ops.gemm and bmm run (tilec/ops/gemm_specs.py), into build/families
# (where MLIR is): `gemm`, the fused epilogues and `bmm` for sm_90a with the sm_80 builds of
# the epilogues beside them, the SM 8.x families (gemm_sm80, gemm_f32_sm80, bmm_sm80) and the
# few-row gemv and gemm_skinny (sm_80, with colsum, which adds gemm_skinny's partial sums up),
# whose PTX also runs on SM 9.0. test/gpu/test_ops_gemm.py,
# test/gpu/test_torch_ops.py's gemm tests and bench/bench_gemm_ops.py read them. --strict: a build that does not compile or breaks its
# contract fails the script (its rules would be left out of the family). PACK=1 packs
# build/families into build/tier.tar.xz (test/gpu/pack_bundles.py) for the GPU machine.
set -euo pipefail
jobs=${JOBS:-$(nproc)}
# `gemm` takes its shipped tuning table (tilec/ops/tuning/gemm.*.json: tilec tune over
# gemm_sm90.tile's tune(...) clause), its rules ahead of the spec's.
for op in gemm gemm_bias gemm_bias_relu gemm_bias_gelu gemm_bias_gelu_tanh gemm_addmm bmm \
          gemm_sm80 gemm_f32_sm80 bmm_sm80 gemv gemm_skinny colsum pad_rows; do
  tilec family build --op "$op" -o "build/families/$op" -j "$jobs" --strict
done
if [ "${PACK:-0}" = 1 ]; then
  python test/gpu/pack_bundles.py pack build/families
fi
