#!/usr/bin/env bash
# Build examples/gemm_sm80.tile's bundles for test/gpu/test_gemm.py (where MLIR is; carry build/
# to the GPU machine), one per folder: the defaults for sm_80 and sm_90a; every operand layout
# (MA, MB) in f16 and bf16 for sm_90a, named a<MA>b<MB>_<T> (the MN-major ones at BK = 32); the
# defaults at BK = 32 over 4 stages, without fragment prefetch, a few other tile shapes and the
# small-problem ones; then examples/gemm_sm80_splitk.tile's kernels into build/splitk (second
# argument).
set -euo pipefail
out="${1:-build/gemm}"
rm -rf "$out"
b() { name=$1; shift; tilec build examples/gemm_sm80.tile -o "$out/$name" "$@" >/dev/null; }
b default_sm80 --arch sm_80
b default_sm90a --arch sm_90a
# MN-major operands at the example's defaults for them (BK = 32 over 4 stages).
for t in f16 bf16; do
  b "a0b0_$t" --arch sm_90a -D T=$t
  b "a1b0_$t" --arch sm_90a -D T=$t -D MA=1
  b "a0b1_$t" --arch sm_90a -D T=$t -D MB=1
  b "a1b1_$t" --arch sm_90a -D T=$t -D MA=1 -D MB=1
done
# Without prefetch, misaligned rows take 8- and 4-byte cp.async (NARROW = 1 - PREFETCH).
b a1b1_bf16_noprefetch --arch sm_80 -D T=bf16 -D MA=1 -D MB=1 -D PREFETCH=0
b bk32 --arch sm_90a -D BK=32 -D STAGES=4
b prefetch_128x128x32 --arch sm_90a -D BN=128 -D WN=2 -D BK=32 -D STAGES=4
b prefetch_bk16 --arch sm_90a -D PREFETCH=1 -D BK=16 -D STAGES=6 -D BN=128 -D WN=2
b noprefetch_bk64 --arch sm_90a -D PREFETCH=0 -D BK=64 -D STAGES=3
b tile128_s1 --arch sm_90a -D BN=128 -D WN=2 -D BK=32 -D STAGES=1
b tile64x128 --arch sm_80 -D BM=64 -D BN=128 -D WN=2 -D WM=2 -D BK=32 -D STAGES=4
# The small-problem configurations docs/performance.md recommends (few rows, or 1024^3).
b small_m16n64 --arch sm_90a -D BM=16 -D BN=64 -D WM=1 -D WN=2 -D BK=64 -D STAGES=6
b small_m64n64 --arch sm_90a -D BM=64 -D BN=64 -D WM=2 -D WN=2 -D BK=64 -D STAGES=6
echo "built $(find "$out" -name manifest.json | wc -l) GEMM bundles in $out"
# examples/gemm_sm80_splitk.tile's two kernels, for test/gpu/test_gemm_splitk.py: s<S>/ holds
# them built with SPLITS = S (gemm_splitk takes S from its workspace, the sum is built for S);
# m128n128/ and m128n256/ the larger tiles docs/performance.md picks for mid-size shapes; the
# SM90 form (examples/gemm_sm90_splitk.tile, f16 as the test, 64x128 tiles) beside them in
# s<S>/, sharing their sum kernels.
splitk="${2:-build/splitk}"
rm -rf "$splitk"
sk() {
  dir=$1; shift
  for arch in sm_80 sm_90a; do
    tilec build examples/gemm_sm80_splitk.tile -o "$splitk/$dir" --arch $arch "$@" >/dev/null
  done
}
for s in 2 4 8; do sk "s$s" -D SPLITS=$s; done
for s in 2 4; do
  sk "m128n128/s$s" -D SPLITS=$s -D BM=128 -D BN=128 -D WM=2 -D WN=2 -D STAGES=4
  sk "m128n256/s$s" -D SPLITS=$s -D BM=128 -D BN=256 -D WM=2 -D WN=4 -D STAGES=3
done
sk90() { tilec build examples/gemm_sm90_splitk.tile -o "$splitk/$1" --arch sm_90a -D T=f16 "${@:2}" >/dev/null; }
for s in 2 4 8; do sk90 "s$s"; done
echo "built $(find "$splitk" -name manifest.json | wc -l) split-K bundles in $splitk"
