#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck) over the attention kernels on small shapes:
# the SM80 kernel (examples/attention.tile) and the SM90 one (attention_sm90.tile), a ragged
# shape, causal and not, GQA. Bundles as for test/gpu/test_attention*.py. Logs under $OUT.
set -uo pipefail
out="${OUT:-build/gpu-logs}"
mkdir -p "$out"
py="python3 -m pytest -o addopts= -q -p no:cacheprovider"
for tool in memcheck racecheck synccheck; do
  for t in "test/gpu/test_attention.py::test_attention and 1x2x2x100x37 and (d64_f16_c1 or d128_f16_c0)" \
           "test/gpu/test_attention_sm90.py::test_attention and 1x2x2x100x37 and (d64_f16_c1 or d128_f16_c0)"; do
    file=${t%%::*}; k=${t#*::}
    timeout 120 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 \
      $py "$file" -k "$k" > "$out/sanitize-$tool-$(basename "$file" .py).log" 2>&1
    echo "$tool $(basename "$file"): exit $? $(grep -h "ERROR SUMMARY\|passed\|failed" \
      "$out/sanitize-$tool-$(basename "$file" .py).log" | tr '\n' ' ' | cut -c1-200)"
  done
done
