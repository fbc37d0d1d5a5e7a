#!/usr/bin/env bash
# One call on the GPU machine: install without MLIR, run the GPU tier from prebuilt bundles,
# then the benchmark for both targets. Build the bundles first, on a machine with MLIR:
#   tilec build examples/vadd.tile examples/transpose.tile examples/softmax.tile \
#       -o build/examples --arch sm_90a   (and again with --arch sm_80)
#   python test/gpu/build_bundles.py
#   bash bench/build_variants.sh          (the examples with non-default -D parameters)
# Logs go to $OUT (the device tool) or ./build/gpu-logs.
set -uo pipefail
out="${OUT:-build/gpu-logs}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/device.txt"
python3 -m pytest -o addopts="" -q -p no:cacheprovider test/gpu 2>&1 | tee "$out/gpu-tests.log"
for arch in sm90a sm80; do
  python3 bench/bench_memory.py --bundles build/examples --arch "$arch" \
    --out "$out/perf-$arch.md" 2>&1 | tee "$out/bench-$arch.log"
done
