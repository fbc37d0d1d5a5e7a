#!/usr/bin/env bash
# The attention families tilec.ops.attention and torch.ops.tilec.attention run
# (tilec/ops/attention_specs.py), into build/families (where MLIR is): `attention` (no mask),
# `attention_causal` (top-left) and `attention_causal_br` (bottom-right), each with
# examples/attention_sm90.tile for sm_90a (D = 64, 128, 256) and examples/attention.tile for
# sm_80 (D = 64, 96, 128, 256), f16 and bf16: 42 builds; and tilec.ops.attention_varlen's
# `attention_varlen`, `attention_varlen_causal`, `attention_varlen_causal_br` with
# examples/attention_sm90_varlen.tile and examples/attention_varlen.tile alike: 42 more.
# test/gpu/test_ops_attention.py and test_ops_attention_varlen.py read them. --strict: a build that does not compile or breaks its contract fails the script. PACK=1
# packs build/families into build/tier.tar.xz (test/gpu/pack_bundles.py) for the GPU machine.
set -euo pipefail
jobs=${JOBS:-$(nproc)}
for op in attention attention_causal attention_causal_br attention_varlen \
  attention_varlen_causal attention_varlen_causal_br; do
  tilec family build --op "$op" -o "build/families/$op" -j "$jobs" --strict
done
if [ "${PACK:-0}" = 1 ]; then
  python test/gpu/pack_bundles.py pack build/families
fi
