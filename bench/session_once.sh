#!/usr/bin/env bash
# GPU calls for a session whose device time is short: the most telling checks first, each
# under its own time limit (a call's limit is 10 minutes). PHASE=tests (default) runs the GPU
# tiers; PHASE=bench the benchmarks (run it right after, while the machine is warm). Bundles:
# build/tier.tar.xz (test/gpu/pack_bundles.py pack build/sm90 build/sm90_before
# build/sm90_rungs build/rows build/examples build/attention build/attention_sm90
# build/families build/tune). Logs under $OUT.
set -uo pipefail
out="${OUT:-build/gpu-logs}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
if ! python3 -c "import tilec.runtime" 2>/dev/null || [ ! -d build/sm90 ]; then
  python3 -m pip install -q --no-deps --no-build-isolation -e . || exit 1
  python3 test/gpu/pack_bundles.py unpack || exit 1
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv,noheader
s=build/sm90
o=build/sm90_before
t() { local limit=$1; shift; timeout "$limit" "$@"; echo "[exit $?: $*]" | cut -c1-120; }
py="python3 -m pytest -o addopts= -q -p no:cacheprovider"
if [ "${PHASE:-tests}" = tests ]; then
  # 1. the SM90 GEMM tier on the ladder's bundles, the consumers' rungs, rank-1 rows
  t 130 $py -x test/gpu/test_gemm_sm90.py 2>&1 | tee "$out/tests.log" | tail -3
  t 40 $py test/gpu/test_scores_softmax.py test/gpu/test_rank1_rows.py 2>&1 \
    | tee "$out/rungs.log" | tail -3
  # 2. attention: SM80 (attention.tile, attention_varlen.tile) and SM90 against SDPA
  t 100 $py test/gpu/test_attention.py 2>&1 | tee "$out/attention.log" | tail -3
  t 100 $py test/gpu/test_attention_sm90.py 2>&1 | tee "$out/attention90.log" | tail -3
  # 3. tilec.ops on the families, a tuning table round-tripping, the torch ops
  t 110 $py test/gpu/test_ops.py test/gpu/test_tuning_table.py test/gpu/test_torch_ops.py 2>&1 \
    | tee "$out/ops.log" | tail -3
  # 4. tilec run without torch (numpy + the driver)
  t 20 python3 -c "import sys; sys.modules['torch'] = None; sys.argv = ['tilec', 'run', \
'build/examples/vadd_sm90a', '--size', 'N=268435456']; from tilec.tools.tilec import main; main()"
  grep -h "FAILED\|Error" "$out"/*.log | head -40
else
  # 5. the ladder's GEMM beside the vertical pass's and cuBLAS, interleaved
  t 75 python3 bench/bench_gemm.py --dtype bf16 --bundle $o/default_bf16/gemm90 \
    --bundle $s/default_bf16/gemm90 --rounds 3 --triton none --shape 4096x4096x4096 \
    --shape 8192x8192x8192 --out "$out/gemm-bf16.md" | grep "^|"
  # 6. attention beside FA2 and cuDNN (SDPA backends): SM90 at D = 128, SM80 at 64/128
  t 120 python3 bench/bench_attention.py --dir build/attention_sm90 --rounds 2 \
    --bundles d128_f16_c0,d128_f16_c0_st0,d128_f16_c1,d128_bf16_c0,d128_bf16_c1,d64_f16_c0 \
    --shapes 4x32x4096,2x16x8192 2>&1 | tee "$out/attention90-bench.md" | grep "^|\|rror"
  t 60 python3 bench/bench_attention.py --bundles d64_f16_c0,d128_f16_c0 --rounds 2 \
    --shapes 4x32x4096 2>&1 | tee "$out/attention-bench.md" | grep "^|\|rror"
  t 60 python3 bench/bench_ops.py --dtypes f16 --ns 1000,1001,8191,32768 \
    --out "$out/ops_f16.md" --json "$out/ops_f16.json" 2>&1 | grep "^|"
fi
