#!/usr/bin/env bash
# Issue 45's tuning runs, in the two halves of `tilec tune` (docs/runtime.md, "Tuning"):
#   bash bench/tune_session.sh compile    # where MLIR is: the plans into build/tune/<name>
#   python test/gpu/pack_bundles.py pack build/tune      # carry build/tier.tar.xz
#   bash bench/tune_session.sh time       # on the GPU machine: <name>.json tables into $OUT
# then copy the tables to compiler/ops/tuning/<op>.<name>_<gpu>.json (tilec/ops/tuning: the
# families of `tilec family build --op` take them) and rebuild the families.
# PLANS="gemm90 softmax_big_f16 ..." picks some. The row plans: long rows (COLS, a row split
# over a cluster of SPLIT blocks, THREADS) and odd rows (COLS, THREADS, ROWS), f16 and bf16.
set -uo pipefail
big="R=4096,N=16384 R=2048,N=32768 R=1024,N=65536 R=512,N=131072 R=4096,N=16383 R=2048,N=32767 R=1024,N=65535 R=512,N=131071"
odd="R=65536,N=1001 R=16384,N=4095 R=8192,N=8191"
gemm="M=1024,N=1024,K=1024 M=2048,N=2048,K=2048 M=4096,N=4096,K=4096 M=8192,N=8192,K=8192 M=256,N=4096,K=4096 M=128,N=11008,K=4096 M=64,N=4096,K=4096 M=32,N=4096,K=4096 M=256,N=11008,K=4096 M=16,N=4096,K=4096 M=8,N=4096,K=4096"
all="gemm90 gemm90_few gemm90_mm gemv"
for t in f16 bf16; do for op in softmax layernorm rmsnorm; do all="$all ${op}_big_$t ${op}_odd_$t"; done; done
plans=${PLANS:-$all}

compile_one() {  # the plan of one name
  local name=$1 op t
  case "$name" in
  gemm90)
    tilec tune examples/gemm_sm90.tile --compile-only -o build/tune/gemm90 --flops "2*M*N*K" \
      --reference matmul --shapes "$gemm" ;;
  gemm90_few)  # the swapped few-row tiles (C^T = B A^T), which the tune(...) clause leaves out;
    # 48 rows split the (32, 64] bucket (BN = 48: 0.79-0.83x cuBLAS at 40-48x4096x4096 on an H100
    # where the 64-row tiles ran 0.65-0.67x)
    tilec tune examples/gemm_sm90.tile --compile-only -o build/tune/gemm90_few --flops "2*M*N*K" \
      --reference matmul --space "SW=1 BN=8,16,32,48,64 BM=64,128 STAGES=4,6,8,10 PP=0,1" \
      --shapes "M=8,N=4096,K=4096 M=16,N=4096,K=4096 M=32,N=4096,K=4096 M=48,N=4096,K=4096 M=64,N=4096,K=4096 M=32,N=11008,K=4096" ;;
  gemm90_mm)  # tilec.nn.Linear's backward: dW = dY^T X reads both operands MN-major
    tilec tune examples/gemm_sm90.tile --compile-only -o build/tune/gemm90_mm -D MA=1 -D MB=1 \
      --flops "2*M*N*K" --reference matmul \
      --shapes "M=4096,N=4096,K=8192 M=11008,N=4096,K=8192 M=2048,N=2048,K=2048" ;;
  gemv)  # few rows at K % 8 != 0 (B read where it lies), M <= 1 and <= 8
    tilec tune examples/gemv.tile --compile-only -o build/tune/gemv --flops "2*M*N*K" \
      --reference matmul --space "MR=1,2,4,8 NB=1,2,4 U=1,2,4" \
      --shapes "M=1,N=4096,K=4097 M=2,N=4096,K=4097 M=4,N=4096,K=4097 M=8,N=4096,K=4097 M=1,N=11008,K=4097 M=1,N=4096,K=4096 M=4,N=11008,K=4096 M=8,N=11008,K=4096" ;;
  *_big_* | *_odd_*)
    op=${name%%_*} t=${name##*_}
    if [[ $name == *_big_* ]]; then
      tilec tune examples/$op.tile --arch sm_90a -D T=$t --compile-only --bucket-by N \
        --reference $op --space "COLS=4096,8192,16384,32768 SPLIT=1,2,4,8 THREADS=256,512,1024" \
        --shapes "$big" -o build/tune/$name
    else
      tilec tune examples/$op.tile --arch sm_90a -D T=$t --compile-only --bucket-by N \
        --reference $op --space "COLS=1024,2048,4096,8192 THREADS=64,128,256,512 ROWS=1,2" \
        --shapes "$odd" -o build/tune/$name
    fi ;;
  *) echo "unknown plan $name" >&2; return 1 ;;
  esac
}

case "${1:-}" in
compile)
  for name in $plans; do compile_one "$name" > "build/tune-$name.log" 2>&1 || echo "failed: $name"; done ;;
time)
  out="${OUT:-build/tune/tables}"; mkdir -p "$out"
  python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
  [ -f build/tier.tar.xz ] && python3 test/gpu/pack_bundles.py unpack
  for name in $plans; do
    [ -d "build/tune/$name" ] || continue
    timeout "${TUNE_S:-150}" tilec tune --from "build/tune/$name" --rounds 3 --table "$out/$name.json" \
      2>/dev/null | grep -a "best over\|^ *1 \|^[a-z0-9_]* [A-Z]=" ; echo "$name: rc $?"
  done ;;
*) sed -n 2,9p "$0"; exit 1 ;;
esac
