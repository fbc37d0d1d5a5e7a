#!/usr/bin/env bash
# Every bundle the GPU tier and the benchmarks read, built where MLIR is (about half an hour on
# two cores, one part after another), then packed for the GPU machine (it has no MLIR; the device
# tool carries 64 MiB, so each part packs into build/<part>.tar.xz: carry the ones a call needs,
# unpack with `python3 test/gpu/pack_bundles.py unpack` after copying one to build/tier.tar.xz):
#   bash bench/build_session.sh [families sm90 tier]     (default: all three)
# families: build/families (tilec.ops: rows with their tuning tables, backward, gemm with its
#   table, gemv, bmm, attention); sm90: build/sm90 and build/sm90_rungs (the SM90 GEMM tier,
#   bench/tier_session.sh bars/decode/rungs-*); tier: the rest of test/gpu's bundles.
# Logs: build/logs/<part>.log.
set -uo pipefail
mkdir -p build/logs
jobs=${JOBS:-$(nproc)}
part() {
  case $1 in
  families) JOBS=$jobs bash test/gpu/build_torch_families.sh ;;
  sm90) bash test/gpu/build_sm90_bundles.sh && bash test/gpu/build_sm90_rungs_bundles.sh &&
    python3 test/gpu/pack_bundles.py pack build/sm90 build/sm90_rungs ;;
  tier)
    for a in sm_90a sm_80; do
      tilec build examples/vadd.tile examples/transpose.tile examples/softmax.tile \
        -o build/examples --arch $a
    done
    bash test/gpu/build_gemm_bundles.sh && python3 test/gpu/build_bundles.py build/bundles &&
      bash bench/build_variants.sh && bash test/gpu/build_row_bundles.sh &&
      bash test/gpu/build_attention_sm90_bundles.sh && bash test/gpu/build_attention_bundles.sh &&
      python3 test/gpu/pack_bundles.py pack build/examples build/gemm build/bundles build/variants \
        build/rows build/splitk build/attention build/attention_sm90 ;;
  *) echo "unknown part $1 (families, sm90, tier)" >&2; return 1 ;;
  esac
}
status=0
for p in ${@:-families sm90 tier}; do
  if part "$p" > "build/logs/$p.log" 2>&1 && [ -f build/tier.tar.xz ]; then
    mv build/tier.tar.xz "build/$p.tar.xz"
    echo "$p: build/$p.tar.xz ($(du -h "build/$p.tar.xz" | cut -f1))"
  else
    echo "$p failed: build/logs/$p.log" >&2
    status=1
  fi
done
exit $status
