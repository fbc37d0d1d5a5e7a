#!/usr/bin/env bash
# One call on the GPU machine for the PyTorch integration (docs/runtime.md, "PyTorch"): install
# without MLIR, unpack the families (bash test/gpu/build_torch_families.sh, where MLIR is, wrote
# build/tier.tar.xz), then the GPU tests of tilec.ops' backward and torch.ops.tilec, the MLP
# example (torch.compile, CUDA graph, loss curves) and bench/bench_torch.py. Logs go to $OUT
# (the device tool) or ./build/gpu-logs.
set -uo pipefail
out="${OUT:-build/gpu-logs}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . || exit 1
python3 test/gpu/pack_bundles.py unpack || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/device.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" \
  | tee -a "$out/device.txt"
python3 -m pytest -o addopts="" -q -p no:cacheprovider -rs test/gpu/test_torch_ops.py \
  test/gpu/test_ops_gemm.py 2>&1 | tee "$out/torch-tests.log"
python3 examples/torch/mlp.py --steps "${STEPS:-300}" 2>&1 | tee "$out/mlp.log"
python3 bench/bench_torch.py --json "$out/bench_torch.json" 2>&1 | tee "$out/bench_torch.log"
python3 bench/bench_gemm_ops.py --graph --json "$out/bench_gemm_ops.json" 2>&1 \
  | tee "$out/bench_gemm_ops.log"
