#!/usr/bin/env bash
# One call on the GPU machine: the GPU tier and the sanitizer tier from prebuilt bundles
# (`tier_session.sh tests`), the benchmarks that show the SM80 GEMM and the memory-bound
# examples beside cuBLAS and the copy ceiling (`bench`), the SM90 GEMMs beside cuBLAS, Triton
# and torch (`sm90`), the SM90 ping-pong consumers (`pingpong`), clusters with TMA multicast
# (`cluster`), a sweep of shapes beside cuBLAS (`shapes`), few-row shapes (`decode`), the
# speed baselines (`baseline`), the row kernels (`rows`), the SM90 rungs (`rungs-tests`,
# `rungs-bench`), or tilec.ops through its families (`ops-tests`, `ops-bench`). Build
# first, where MLIR is (and `bash test/gpu/build_row_bundles.sh` for `rows`):
#   bash test/gpu/build_gemm_bundles.sh && python test/gpu/build_bundles.py build/bundles
#   bash test/gpu/build_sm90_bundles.sh
#   bash bench/build_variants.sh
#   for a in sm_90a sm_80; do tilec build examples/vadd.tile examples/transpose.tile \
#       examples/softmax.tile -o build/examples --arch $a; done
# The bundle folders together are past what the device tool carries (64 MiB): pack them,
#   python test/gpu/pack_bundles.py pack     (build/tier.tar.xz, ~6 MiB)
# and carry build/tier.tar.xz; this script unpacks it first.
# Logs go to $OUT (the device tool) or ./build/gpu-logs.
set -uo pipefail
out="${OUT:-build/gpu-logs}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . || exit 1
if [ -f build/tier.tar.xz ]; then python3 test/gpu/pack_bundles.py unpack || exit 1; fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv \
  | tee "$out/device.txt"
case "${1:-tests}" in
tests)
  python3 -m pytest -o addopts="" -q -p no:cacheprovider test/gpu 2>&1 | tee "$out/gpu-tests.log" \
    | tail -5
  python3 test/gpu/sanitize.py build/examples build/bundles/reduce build/bundles/epilogue/act1 \
    build/bundles/epilogue/batched build/gemm/default_sm90a build/splitk/s4 \
    build/bundles/negative_stride/flip_swizzled_sm90a build/sm90/default_bf16 \
    build/sm90/epilogue/act1 build/sm90/batched/default \
    --planted build/bundles/planted/transpose_sm90a --log "$out/sanitize.log" \
    | tee "$out/sanitize.txt"
  # The SM90 kernels again with N a multiple of 8: the epilogue's TMA stores (N = 131 above
  # takes the path that copies chunks out element by element).
  python3 test/gpu/sanitize.py build/sm90/default_bf16 build/sm90/epilogue/act1 \
    build/sm90/batched/default --size N=136 --log "$out/sanitize-tma.log" \
    | tee "$out/sanitize-tma.txt"
  # Stream-K (over two waves) in the cooperative and the ping-pong kernels, and the f32 output.
  python3 test/gpu/sanitize.py build/sm90/sk_bf16 build/sm90/sk_pp_bf16 --size M=2040 \
    --size N=2504 --size K=1352 --tool memcheck --tool synccheck \
    --log "$out/sanitize-streamk.log" | tee "$out/sanitize-streamk.txt"
  python3 test/gpu/sanitize.py build/sm90/o32_bf16 --log "$out/sanitize-o32.log" \
    | tee "$out/sanitize-o32.txt"
  # K = 72 and N = 136 above are 16-byte rows: the default GEMM launches its variant (CM = 2);
  # the CM = 1 build itself at K = 80.
  python3 test/gpu/sanitize.py build/sm90/default_bf16 --size K=80 \
    --log "$out/sanitize-k80.log" | tee "$out/sanitize-k80.txt"
  ;;
rungs-tests | rungs-bench)
  # The SM90 path as sibling rungs (issue 43). rungs-tests: the SM90 GEMM tier on build/sm90
  # (the ladder's bundles), the consumers' register-tensor rungs
  # (test_scores_softmax_sm90.py), the rank-1 rows, the sanitizers, `tilec run` without torch.
  # rungs-bench: the ladder's GEMMs beside the bundles of the vertical pass before it
  # (build/sm90_before, built with that commit's compiler) and cuBLAS, interleaved; the fused
  # and batched kernels of both beside torch; the memory-bound examples. Build:
  #   bash test/gpu/build_sm90_bundles.sh; bash test/gpu/build_sm90_rungs_bundles.sh
  #   (and build/sm90_before with the earlier commit's compiler), then pack.
  s=build/sm90
  o=build/sm90_before
  if [ "$1" = rungs-tests ]; then
    timeout 330 python3 -m pytest -o addopts="" -q -p no:cacheprovider -x \
      test/gpu/test_scores_softmax.py test/gpu/test_rank1_rows.py test/gpu/test_gemm_sm90.py \
      2>&1 | tee "$out/rungs-tests.log" | tail -4
    timeout 180 python3 test/gpu/sanitize.py $s/default_bf16/gemm90 $s/sk_pp_bf16/gemm90 \
      $s/epilogue/act2_beta0 build/sm90_rungs --tool memcheck --tool racecheck \
      --tool synccheck --log "$out/sanitize-rungs.log" | tail -3
    python3 -c "import sys; sys.modules['torch'] = None; sys.argv = ['tilec', 'run', \
'build/examples/vadd_sm90a', '--size', 'N=268435456']; from tilec.tools.tilec import main; main()"
    exit 0
  fi
  for t in bf16 f16; do
    timeout 170 python3 bench/bench_gemm.py --dtype $t --bundle $o/default_$t/gemm90 \
      --bundle $s/default_$t/gemm90 --rounds 3 --triton none --shape 4096x4096x4096 \
      --shape 8192x8192x8192 --shape 4096x11008x4096 --shape 2048x2048x2048 \
      --out "$out/rungs-$t.md" | grep "^|"
  done
  for d in "$o" "$s"; do
    timeout 90 python3 bench/bench_gemm_fused.py --plain $d/default_bf16/gemm90 --act gelu \
      --fused $d/epilogue/act2_beta0/gemm90_bias_act --batched $d/batched/default/gemm90_batched \
      --out "$out/rungs-fused-$(basename $d).md" | grep "^|"
  done
  timeout 60 python3 bench/bench_memory.py --bundles build/examples --arch sm90a \
    --out "$out/memory.md" | grep "^|"
  ;;
rows)
  # The row kernels that carry state across their loops (examples/softmax.tile,
  # examples/layernorm.tile; bundles: test/gpu/build_row_bundles.sh) tested, sanitized over
  # several tiles a row, and beside torch, Triton and the copy ceiling.
  python3 -m pytest -o addopts="" -q -p no:cacheprovider test/gpu/test_rows.py \
    test/gpu/test_persistent_rows.py test/gpu/test_examples.py test/gpu/test_variants.py 2>&1 \
    | tee "$out/rows-tests.log" | tail -3
  python3 test/gpu/sanitize.py build/rows/softmax_c1024_sm90a build/rows/layernorm_c1024_sm90a \
    --size N=2500 --log "$out/sanitize-rows.log" | tee "$out/sanitize-rows.txt"
  # The persistent kernels with several rows a block; LayerNorm's W and B end inside a 16-byte
  # chunk at N = 1020, which initcheck miscounts (test/gpu/sanitize.py): initcheck at N = 1024.
  p=build/rows
  python3 test/gpu/sanitize.py $p/softmax_p4096_sm90a --size R=300 --size N=1020 \
    --log "$out/sanitize-persistent.log" | tee "$out/sanitize-persistent.txt"
  python3 test/gpu/sanitize.py $p/layernorm_p4096_sm90a --size R=300 --size N=1020 \
    --tool memcheck --tool racecheck --tool synccheck | tee -a "$out/sanitize-persistent.txt"
  python3 test/gpu/sanitize.py $p/layernorm_p4096_sm90a --size R=300 --size N=1024 \
    --tool initcheck | tee -a "$out/sanitize-persistent.txt"
  python3 bench/bench_rows.py --bundles build/rows --out "$out/rows.md" | grep "^|\|^-\|FAIL"
  python3 bench/bench_rows.py --bundles build/rows --persistent --out "$out/rows-persistent.md" \
    | grep "^|\|^-\|FAIL"
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
sm90)
  # examples/gemm_sm90*.tile (test/gpu/build_sm90_bundles.sh) beside cuBLAS, the Triton
  # tutorial's kernel (autotuned) and the SM80 path, squares and LLM shapes, then the fused
  # epilogue and the batched kernel beside torch.
  s=build/sm90
  for t in bf16 f16; do
    sm80=build/gemm/a0b0_$t/gemm_sm90a
    python3 bench/bench_gemm.py --dtype $t --bundle $s/default_$t/gemm90 --bundle $sm80 \
      --shape 1024x1024x1024 --shape 2048x2048x2048 --shape 4096x4096x4096 \
      --shape 8192x8192x8192 --shape 4096x11008x4096 --shape 8192x4096x4096 \
      --shape 16x4096x4096 --shape 128x11008x4096 --out "$out/sm90-$t.md" | grep "^|\|^- "
  done
  python3 bench/bench_gemm_fused.py --plain $s/default_bf16/gemm90 \
    --fused $s/epilogue/act1_beta0/gemm90_bias_act --batched $s/batched/default/gemm90_batched \
    --out "$out/sm90-fused.md" | grep "^|"
  python3 bench/bench_gemm_fused.py --plain $s/default_bf16/gemm90 --act gelu \
    --fused $s/epilogue/act2_beta0/gemm90_bias_act --out "$out/sm90-gelu.md" | grep "^|"
  ;;
bars)
  # Issue 15's speed bars, interleaved: the default SM90 GEMM, cuBLAS and the best Triton
  # kernel timed in R alternating rounds on the same tensors (medians and ranges), then the
  # larger LLM shapes and the batched kernel beside torch.bmm.
  s=build/sm90
  for t in bf16 f16; do
    timeout 200 python3 bench/bench_gemm.py --dtype $t --bundle $s/default_$t/gemm90 --rounds 9 \
      --shape 4096x4096x4096 --shape 8192x8192x8192 --out "$out/bars-$t.md" | grep "^|\|^ *- "
  done
  timeout 150 python3 bench/bench_gemm.py --dtype bf16 --bundle $s/default_bf16/gemm90 \
    --rounds 5 --shape 2048x2048x2048 --shape 4096x11008x4096 --shape 8192x4096x4096 \
    --shape 2048x11008x4096 --out "$out/bars-llm.md" | grep "^|\|^ *- "
  timeout 60 python3 bench/bench_gemm_fused.py --plain $s/default_bf16/gemm90 \
    --batched $s/batched/default/gemm90_batched --out "$out/bars-batched.md" | grep "^|"
  ;;
decode)
  # Few rows (examples/gemm_sm90.tile's swapped variants, C^T = B A^T up to 192 rows): the
  # default SM90 GEMM beside cuBLAS (CUDA graphs, 3 interleaved rounds), then the fused GELU
  # kernel beside torch's addmm + gelu at decode shapes.
  s=build/sm90
  rows="1x4096x4096 8x4096x4096 16x4096x4096 16x11008x4096 32x4096x4096 48x4096x4096
    64x4096x4096 64x11008x4096 96x4096x4096 128x4096x4096 128x11008x4096 128x4096x11008
    160x4096x4096 192x4096x4096 192x11008x4096"
  args=""
  for x in $rows; do args="$args --shape $x"; done
  for t in f16 bf16; do
    timeout 200 python3 bench/bench_gemm.py --dtype $t --bundle $s/default_$t/gemm90 --graph \
      --rounds 3 --triton none $args --out "$out/decode-$t.md" | grep "^|\|WRONG\|Error"
  done
  timeout 120 python3 bench/bench_gemm_fused.py --graph --plain $s/default_bf16/gemm90 \
    --act gelu --fused $s/epilogue/act2_beta0/gemm90_bias_act --shape 1x11008x4096 \
    --shape 16x11008x4096 --shape 64x11008x4096 --shape 16x4096x4096 \
    --out "$out/decode-gelu.md" | grep "^|"
  ;;
shapes)
  # Issue 15's "≥ 0.9× cuBLAS on any square or LLM shape ≥ 2048": the default SM90 GEMM beside
  # cuBLAS (3 interleaved rounds, no Triton) over squares 2048-8192 (multiples of 128 and not)
  # and the projections of Llama-2-7B, Llama-3-8B and Llama-3-70B at 2048-8192 tokens.
  s=build/sm90
  squares="2048 2560 3000 3072 3584 4000 4096 5000 5120 6144 7168 8192"
  llm="4096x12288x4096 4096x11008x4096 4096x4096x11008 4096x22016x4096 4096x6144x4096
    4096x14336x4096 4096x4096x14336 4096x28672x4096 2048x14336x4096 2048x4096x14336
    8192x10240x8192 8192x28672x8192 8192x8192x28672 4096x32000x4096 2048x128256x4096"
  args=""
  for q in $squares; do args="$args --shape ${q}x${q}x${q}"; done
  for x in $llm; do args="$args --shape $x"; done
  for t in bf16 f16; do
    timeout 280 python3 bench/bench_gemm.py --dtype $t --bundle $s/default_$t/gemm90 --rounds 3 \
      --triton none $args --out "$out/shapes-$t.md" | grep "^|\|WRONG\|Error"
  done
  ;;
pingpong)
  # Ping-pong consumers (PP = 1; bundles: test/gpu/build_sm90_bundles.sh and
  # bench/build_pingpong.sh): the SM90 tests, the sanitizers on them, then beside the
  # cooperative kernels, cuBLAS and Triton, the fused epilogue and the batched kernel.
  python3 -m pytest -o addopts="" -q -p no:cacheprovider test/gpu/test_gemm_sm90.py 2>&1 \
    | tee "$out/sm90-tests.log" | tail -3
  s=build/sm90
  python3 test/gpu/sanitize.py $s/pp_bf16 $s/epilogue/act2_pp $s/batched/pp --size N=136 \
    --log "$out/sanitize-pp.log" | tee "$out/sanitize-pp.txt"
  p=build/pingpong
  python3 bench/bench_gemm.py --dtype bf16 --bundle $p/coop/gemm90 --bundle $p/pp_n128_s4/gemm90 \
    --bundle $p/pp_n128_s5/gemm90 --bundle $p/pp_n128_s6/gemm90 --bundle $p/pp_m64n256_s4/gemm90 \
    --bundle $p/pp_n128_g8/gemm90 --triton tutorial --shape 2048x2048x2048 --shape 4096x4096x4096 \
    --shape 8192x8192x8192 --shape 4096x11008x4096 --out "$out/pp-bf16.md" | grep "^|\|^- "
  for act in 1 2; do
    name=$([ $act = 1 ] && echo relu || echo gelu)
    python3 bench/bench_gemm_fused.py --plain $p/coop/gemm90 --act $name \
      --fused $p/coop_act$act/gemm90_bias_act --out "$out/coop-$name.md" | grep "^|"
    python3 bench/bench_gemm_fused.py --plain $p/pp_n128_s6/gemm90 --act $name \
      --fused $p/pp_act$act/gemm90_bias_act --out "$out/pp-$name.md" | grep "^|"
  done
  for v in coop_batched pp_batched pp_batched_s4; do
    python3 bench/bench_gemm_fused.py --plain $p/coop/gemm90 --batched $p/$v/gemm90_batched \
      --out "$out/$v.md" | grep "^|"
  done
  ;;
cluster)
  # Clusters of two blocks sharing B's tile by TMA multicast (CM = 2; bundles:
  # test/gpu/build_sm90_bundles.sh and bench/build_pingpong.sh): the SM90 tests, how many
  # clusters the GPU holds at once, the sanitizers (one tile row and three: a cluster whose
  # second block's tile lies past M), then beside the kernels without clusters, cuBLAS and
  # Triton, fused (with GELU's tanh form), and sustained (clock and power). Few files under
  # $OUT (the device tool brings back eight): the tables go to cluster.md.
  log="$out/cluster.md"
  python3 -m pytest -o addopts="" -q -p no:cacheprovider test/gpu/test_gemm_sm90.py 2>&1 \
    | tail -2 | tee "$log"
  s=build/sm90
  p=build/pingpong
  python3 bench/cluster_occupancy.py $s/cm2_bf16/gemm90 $s/cm2_pp_bf16/gemm90 \
    $s/epilogue/act2_cm2/gemm90_bias_act | tee -a "$log"
  python3 test/gpu/sanitize.py $s/cm2_bf16 $s/cm2_pp_bf16 $s/epilogue/act2_cm2 --size N=136 \
    --log "$out/sanitize.log" | tail -1 | tee -a "$log"
  python3 test/gpu/sanitize.py $s/cm2_bf16 --size M=300 --size N=136 \
    --log "$out/sanitize-m300.log" | tail -1 | tee -a "$log"
  shapes="--shape 2048x2048x2048 --shape 4096x4096x4096 --shape 8192x8192x8192"
  shapes="$shapes --shape 4096x11008x4096 --shape 8192x4096x4096"
  python3 bench/bench_gemm.py --dtype bf16 --bundle $p/coop/gemm90 --bundle $p/cm2/gemm90 \
    --bundle $p/cm2_g8/gemm90 --bundle $s/cm4_bf16/gemm90 --triton tutorial $shapes \
    | grep "^|\|^- " >> "$log"
  python3 bench/bench_gemm.py --dtype f16 --bundle $s/default_f16/gemm90 \
    --bundle $s/cm2_f16/gemm90 --triton tutorial $shapes | grep "^|\|^- " >> "$log"
  for act in 1 2 3; do
    name=$(echo relu gelu gelu_tanh | cut -d" " -f$act)
    python3 bench/bench_gemm_fused.py --plain $p/coop/gemm90 --act $name \
      --fused $p/coop_act$act/gemm90_bias_act | grep "^|" >> "$log"
    [ $act = 3 ] && python3 bench/bench_gemm_fused.py --plain $p/pp_n128_s6/gemm90 \
      --act $name --fused $p/pp_act$act/gemm90_bias_act | grep "^|" >> "$log"
    [ $act != 3 ] && python3 bench/bench_gemm_fused.py --plain $p/cm2/gemm90 --act $name \
      --fused $p/cm2_act$act/gemm90_bias_act | grep "^|" >> "$log"
  done
  python3 bench/power_probe.py --bundles $p --kernel plain=coop/gemm90 --kernel cm2=cm2/gemm90 \
    --kernel cm2_g8=cm2_g8/gemm90 --kernel gelu=coop_act2/gemm90_bias_act \
    --kernel cm2_gelu=cm2_act2/gemm90_bias_act --kernel gelu_tanh=coop_act3/gemm90_bias_act \
    >> "$log"
  ;;
ops-tests)
  # tilec.ops and torch.ops.tilec through their families (bench/build_session.sh families):
  # every dispatch rule (the tuned ones too), the planned repeats, the torch integration, a
  # tuning table's round trip (build/tune/softmax, if there), attention's planned and layout
  # cases. One log: the device tool brings back few files.
  timeout 540 python3 -m pytest -o addopts="" -q -p no:cacheprovider test/gpu/test_ops_gemm.py \
    test/gpu/test_ops_planned.py test/gpu/test_ops.py test/gpu/test_torch_ops.py \
    test/gpu/test_tuning_table.py test/gpu/test_ops_attention.py 2>&1 | tee "$out/ops-tests.log" \
    | grep -E "passed|failed|FAILED|Error" | tail -12
  ;;
ops-bench)
  # tilec.ops beside torch: the host cost of a planned call, bmm with torch's row-major B,
  # tilec.nn's modules, the 35 GEMM shapes (graphs), the rows beside Triton and the copy ceiling.
  {
    timeout 60 python3 bench/bench_host.py --rounds 3 --calls 5000
    timeout 90 python3 bench/bench_batched.py --bundle build/families/bmm/km_bf16_sm90a \
      --b-row-major --ops --rounds 5 --shape 8x4096x4096x1024 --shape 32x512x512x512
    timeout 120 python3 bench/bench_torch.py --cases linear,layernorm,rmsnorm --rounds 2
    timeout 150 python3 bench/bench_gemm_ops.py --graph --dtypes bf16
    timeout 170 python3 bench/bench_ops.py --dtypes f16
  } 2>&1 | tee "$out/ops-bench.md" | grep -v "^ *$"
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
