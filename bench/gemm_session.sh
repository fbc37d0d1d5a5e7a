#!/usr/bin/env bash
# One call on the GPU machine for issue 6: install without MLIR, the GPU tier from prebuilt
# bundles, the mma.sync ceiling, then the GEMM benchmark (fp16 and bf16 at the defaults; torch's
# A @ B layout; the tile sweep). Build first, where MLIR is:
#   bash test/gpu/build_gemm_bundles.sh && python test/gpu/build_bundles.py
#   bash bench/build_variants.sh
#   tilec build examples/vadd.tile examples/transpose.tile examples/softmax.tile \
#       -o build/examples --arch sm_90a   (and again with --arch sm_80)
# Logs go to $OUT (the device tool) or ./build/gpu-logs.
set -uo pipefail
out="${OUT:-build/gpu-logs}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$out/device.txt"
python3 -m pytest -o addopts="" -q -p no:cacheprovider test/gpu 2>&1 | tail -15 | tee "$out/gpu-tests.log"
python3 bench/mma_ceiling.py | tee "$out/ceiling.txt"
python3 bench/mma_ceiling.py --dtype bf16 | tee -a "$out/ceiling.txt"
g=build/gemm
python3 bench/bench_gemm.py --bundle $g/default_sm90a/gemm_sm90a --bundle $g/default_sm80/gemm_sm80 \
  --out "$out/gemm-f16.md" | grep "^|"
python3 bench/bench_gemm.py --dtype bf16 --bundle $g/a0b0_bf16/gemm_sm90a --out "$out/gemm-bf16.md" \
  | grep "^|"
python3 bench/bench_gemm.py --mb --bundle $g/a0b1_f16/gemm_sm90a --shape 4096x4096x4096 \
  --shape 8192x8192x8192 --out "$out/gemm-nn.md" | grep "^|"
python3 bench/bench_gemm.py --bundle $g/noprefetch_bk64/gemm_sm90a --bundle $g/bk32/gemm_sm90a \
  --bundle $g/prefetch_128x128x32/gemm_sm90a --bundle $g/tile64x128/gemm_sm80 --shape 4096x4096x4096 --shape 8192x8192x8192 \
  --out "$out/gemm-sweep.md" | grep "^|"
# Few rows (LLM decode), mid-size shapes and 1024^3: the small-problem configurations and
# split-K (tile, split count) beside the default, graph-timed (the GPU's time alone).
python3 bench/bench_gemm.py --graph --bundle $g/default_sm90a/gemm_sm90a \
  --bundle $g/small_m16n64/gemm_sm90a --bundle $g/small_m64n64/gemm_sm90a \
  --splitk build/splitk/s2 --splitk build/splitk/s4 --splitk build/splitk/m128n128/s2 \
  --splitk build/splitk/m128n128/s4 --splitk build/splitk/m128n256/s2 \
  --shape 16x4096x4096 --shape 16x11008x4096 --shape 64x4096x4096 --shape 128x4096x4096 \
  --shape 256x4096x4096 --shape 512x4096x4096 --shape 1024x1024x1024 \
  --out "$out/gemm-small.md" | grep "^|"
# Integer-valued inputs, only to compare with figures published on such data (CuTe DSL's).
python3 bench/bench_gemm.py --data int --bundle $g/default_sm90a/gemm_sm90a --shape 4096x4096x4096 \
  --shape 8192x8192x8192 --out "$out/gemm-int.md" | grep "^|"
python3 bench/gemm_power.py --bundle $g/default_sm90a/gemm_sm90a | tee "$out/power.md"
