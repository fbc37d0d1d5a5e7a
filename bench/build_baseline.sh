#!/usr/bin/env bash
# Build what bench/baseline.py needs beside the example and GEMM bundles (run where MLIR and
# ptxas are, after them; carry build/ to the GPU machine): the planted slowdown, the f16 GEMM
# with one pipeline stage less (STAGES = 2: it spills, so its contract is off), and the facts
# file holding every baseline bundle's passport, which the GPU machine cannot compute.
set -euo pipefail
planted=build/planted/gemm_f16_stages2
facts=build/baseline/facts.json
rm -rf "$planted" "$facts"
tilec build examples/gemm_sm80.tile -o "$planted" --arch sm_90a -D STAGES=2 --no-contracts \
  >/dev/null
python3 bench/baseline.py --write-facts "$facts"
python3 bench/baseline.py --write-facts "$facts" --only gemm_f16 \
  --bundle "gemm_f16=$planted/gemm_sm90a"
