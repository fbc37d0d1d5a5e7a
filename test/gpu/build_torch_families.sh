#!/usr/bin/env bash
# The families test/gpu/test_torch_ops.py, examples/torch/mlp.py and bench/bench_torch.py run,
# into build/families (where MLIR is): tilec.ops' forward families for sm_90a (as
# test/gpu/test_ops.py builds them) and the backward families (their builds are all sm_80,
# whose PTX runs on SM 8.x and 9.0), the GEMM families (test/gpu/build_gemm_families.sh:
# tilec::gemm, tilec.nn.Linear) and the attention families (test/gpu/build_attention_families.sh:
# tilec::attention, test/gpu/test_ops_attention.py), then packed for the GPU machine as build/tier.tar.xz
# (test/gpu/pack_bundles.py; the PTX packs ~10x).
set -euo pipefail
jobs=${JOBS:-$(nproc)}
# The row families take their shipped tuning tables (tilec/ops/tuning/<op>.*.json: long rows
# split over clusters, odd rows; f16 timed, bf16 the f16 choices, as their `derived_from` says).
for op in softmax layernorm rmsnorm; do
  tilec family build --op "$op" -o "build/families/$op" --arch "${ARCH:-sm_90a}" -j "$jobs"
done
for op in softmax_bwd layernorm_bwd rmsnorm_bwd colsum; do
  tilec family build --op "$op" -o "build/families/$op" -j "$jobs" --strict
done
JOBS="$jobs" PACK=0 bash test/gpu/build_gemm_families.sh
JOBS="$jobs" PACK=0 bash test/gpu/build_attention_families.sh
python test/gpu/pack_bundles.py pack build/families
