#!/usr/bin/env bash
# One call on the GPU machine: the GPU tier and the sanitizer tier from prebuilt bundles
# (`tier_session.sh tests`), or the benchmarks that show the SM80 GEMM and the memory-bound
# examples beside cuBLAS and the copy ceiling (`tier_session.sh bench`). Build first, where MLIR is:
#   bash test/gpu/build_gemm_bundles.sh && python test/gpu/build_bundles.py build/bundles
#   bash bench/build_variants.sh
#   for a in sm_90a sm_80; do tilec build examples/vadd.tile examples/transpose.tile \
#       examples/softmax.tile -o build/examples --arch $a; done
# Logs go to $OUT (the device tool) or ./build/gpu-logs.
set -uo pipefail
out="${OUT:-build/gpu-logs}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv \
  | tee "$out/device.txt"
case "${1:-tests}" in
tests)
  python3 -m pytest -o addopts="" -q -p no:cacheprovider test/gpu 2>&1 | tee "$out/gpu-tests.log" \
    | tail -5
  python3 test/gpu/sanitize.py build/examples build/bundles/reduce build/bundles/epilogue/act1 \
    build/bundles/epilogue/batched build/gemm/default_sm90a build/splitk/s4 \
    --planted build/bundles/planted/transpose_sm90a --log "$out/sanitize.log" \
    | tee "$out/sanitize.txt"
  ;;
bench)
  python3 bench/bench_memory.py --bundles build/examples --arch sm90a --out "$out/memory.md" \
    | grep "^|"
  g=build/gemm
  python3 bench/bench_gemm.py --bundle $g/default_sm90a/gemm_sm90a --shape 4096x4096x4096 \
    --shape 8192x8192x8192 --out "$out/gemm-f16.md" | grep "^|"
  python3 bench/bench_gemm.py --dtype bf16 --bundle $g/a0b0_bf16/gemm_sm90a \
    --shape 4096x4096x4096 --shape 8192x8192x8192 --out "$out/gemm-bf16.md" | grep "^|"
  ;;
baseline)
  base=bench/baselines/h200.json
  if [ "${2:-}" = record ] || [ ! -f "$base" ]; then
    python3 bench/baseline.py --record "$out/baseline-h200.json" > "$out/record.md"
    echo "record: exit $?"; grep -v ": done$" "$out/record.md"
    base="$out/baseline-h200.json"
  fi
  for i in 1 2 3; do
    python3 bench/baseline.py --check "$base" --save "$out/check-$i.json" > "$out/check-$i.md"
    echo "check $i: exit $? (0: no alarm)"
    grep -e "^no " -e ": no passport" -e "not comparable" "$out/check-$i.md"
    grep -A 20 "^| kernel | baseline" "$out/check-$i.md"
  done
  python3 bench/baseline.py --check "$base" --only gemm_f16 \
    --bundle gemm_f16=build/planted/gemm_f16_stages2/gemm_sm90a > "$out/planted.md"
  rc=$?
  grep -A 20 "^| kernel | baseline" "$out/planted.md"
  if [ $rc = 1 ]; then echo "planted slowdown: caught"; else echo "planted: NOT caught ($rc)"; fi
  ;;
esac
