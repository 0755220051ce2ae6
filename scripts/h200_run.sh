#!/usr/bin/env bash
# One device call on the H200: GPU tests, ladders, probes. Everything lands in $RES, packed into
# $OUT/results.tgz at the end; a short summary is printed last.
#   bash scripts/h200_run.sh tests ladder sweep probe sanitize
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=. GEMMLAB_CACHE_DIR=${GEMMLAB_CACHE_DIR:-/tmp/gemmlab-cache}
RES=${RES:-/tmp/res}
mkdir -p "$RES"
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
summary=()
step() { echo "=== $* ($(date +%T))"; }
# variants against the runtime on the shapes given (groups of M N K layout batch, or --random N
# --seed S), logged:
#   fixed_variants VARIANTS LOG TIMEOUT_S TAIL_LINES SHAPE...
# (VARIANT_LIMIT=S in the environment caps each at S seconds, to fit several in one call; the lines
# printed so far are kept)
fixed_variants() {
  local variants=$1 log=$2 limit=${VARIANT_LIMIT:-$3} lines=$4
  shift 4
  (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout "$limit" python3 model_variant_probe.py --variants "$variants" "$@" \
    2>&1 | grep -v -i warn | tee "$RES/$log" | tail -"$lines")
}
# variants against the runtime on 120 random shapes of one seed (model_variant_probe.py), logged:
#   random_variants SEED VARIANTS LOG TIMEOUT_S
random_variants() { fixed_variants "$2" "$3" "$4" 6 --random 120 --seed "$1"; }
# the same on several seeds, one log each (PREFIX-seedS.txt):
#   seeded_variants "SEED ..." VARIANTS PREFIX TIMEOUT_S
seeded_variants() { local s; for s in $1; do random_variants "$s" "$2" "$3-seed$s.txt" "$4"; done; }
for what in "$@"; do
  case "$what" in
    tests|tests-a|tests-b)
      # --timeout-method thread: a test stuck in a CUDA call (a hung kernel cannot be interrupted by
      # a signal) kills its xdist worker after 300 s, which xdist reports as a failure by name and
      # replaces; with the signal method a hang stalled its worker, and the run, to the call's limit.
      # -v: every test's outcome is logged as it finishes, so a call stopped at its limit still
      # brings back the names of the failures so far (the log goes straight to $OUT). The whole
      # suite may need more than one 10-minute call: tests-a (the stage files) and tests-b (the rest).
      case "$what" in
        tests) files=tests ;;
        tests-a) files="tests/test_stages_*.py tests/test_skinny.py" ;;
        tests-b) files=$(ls tests/test_*.py | grep -v -E "test_stages_|test_skinny") ;;
      esac
      step "pytest -m gpu ($what)"
      python3 -m pytest -m gpu -v -rf -n ${NPROC:-16} --timeout 300 --timeout-method thread --durations=25 -p no:cacheprovider $files \
        > "$OUT/gpu_$what.txt" 2>&1
      grep -E "(^| )(FAILED|ERROR) " "$OUT/gpu_$what.txt" | sed -E 's/^\[gw[0-9]+\] \[ *[0-9]+%\] //' | sort -u | tail -40
      tail -1 "$OUT/gpu_$what.txt"
      summary+=("$what: $(tail -1 "$OUT/gpu_$what.txt")") ;;
    tests-quick)
      step "pytest -m gpu (quick)"
      python3 -m pytest -m gpu -q -n 8 --timeout 300 --timeout-method thread -p no:cacheprovider --maxfail=80 tests/test_gpu_api.py 2>&1 \
        | tee "$RES/gpu_tests.txt" | grep -E "passed|failed|FAILED|Error" | tail -80
      summary+=("tests: $(tail -1 "$RES/gpu_tests.txt")") ;;
    ladder)
      step "ladder 4096"
      python3 -m gemmlab ladder --size 4096 --out "$RES/ladder-4096" 2>&1 | tee "$RES/ladder-4096.txt" | tail -30
      summary+=("ladder 4096 done") ;;
    ladder8192)
      step "ladder 8192"
      python3 -m gemmlab ladder --size 8192 --out "$RES/ladder-8192" 2>&1 | tee "$RES/ladder-8192.txt" | tail -30 ;;
    sweep)
      step "sweep"
      python3 -m gemmlab ladder --sizes 256..8192 --out "$RES/sweep" 2>&1 | tee "$RES/sweep.txt" | tail -40 ;;
    tune)
      step "tune (issue9 + squares, nn; ships gemmlab/tune/tables)"
      python3 -m gemmlab tune --shapes all --layouts nn --ship 2>&1 | tee "$RES/tune.txt" | tail -40
      cp gemmlab/tune/tables/*.json "$RES/" 2>/dev/null
      summary+=("tune: $(tail -1 "$RES/tune.txt")") ;;
    tune-layouts)
      step "tune (issue9 + squares, nt tn tt)"
      python3 -m gemmlab tune --shapes all --layouts nt,tn,tt --ship 2>&1 | tee "$RES/tune-layouts.txt" | tail -40
      cp gemmlab/tune/tables/*.json "$RES/" 2>/dev/null ;;
    sweep-auto)
      step "sweep: tuned gemmlab vs cuBLAS vs Triton"
      python3 -m gemmlab sweep --suite all --out "$RES/sweep-auto" 2>&1 | tee "$RES/sweep-auto.txt" | tail -45 ;;
    overhead)
      step "host overhead per call"
      python3 -m gemmlab bench --overhead --out "$RES/overhead" 2>&1 | tee "$RES/overhead.txt" | tail -20 ;;
    skinny)
      step "skinny kernel bandwidth"
      python3 scripts/skinny_bandwidth.py 2>&1 | tee "$RES/skinny.txt" | tail -30 ;;
    diag)
      step "overhead breakdown"
      python3 scripts/overhead_breakdown.py 2>&1 | tee "$RES/ovh_diag.txt" | tail -20 ;;
    ncu)
      step "ncu: gemmlab auto vs cuBLAS on the shapes that fall short"
      bash scripts/ncu_short.sh 2>&1 | tee "$RES/ncu_short.txt" | tail -40 ;;
    torch-tests)
      step "pytest -m gpu: torch ops, enable()"
      python3 -m pytest -m gpu -q -n 8 --timeout 300 --timeout-method thread -p no:cacheprovider tests/test_torch_ops.py tests/test_torch_enable.py 2>&1 \
        | tee "$RES/gpu_tests_torch.txt" | grep -E "passed|failed|FAILED|Error" | tail -30 ;;
    training)
      step "training step: TransformerEncoder, torch vs gemmlab"
      python3 -m gemmlab.bench.training --out "$RES/training" 2>&1 | tee "$RES/training.txt" | tail -25
      python3 -m gemmlab.bench.training --d-model 2048 --precision tf32x3 --rounds 2 --skip-graphs --out "$RES/training-2048-tf32x3" 2>&1 \
        | tee "$RES/training-2048.txt" | tail -15 ;;
    ffma-rotate)
      step "s11 ffma_rotate 0 against 1 at 4096^3 and 8192^3, nn and tn (docs/stages/s10-s11.md: which register-bank model holds)"
      for n in 4096 8192; do for lay in nn tn; do
        python3 -m gemmlab ladder --size $n --layout $lay --stages "s11[k_unroll=4],s11[k_unroll=4,ffma_rotate=1]" \
          --baselines cublas --out "$RES/ffma-rotate-$n-$lay" 2>&1 | tee "$RES/ffma-rotate-$n-$lay.txt" | tail -4
      done; done ;;
    torch-cpu-tests)
      # The torch tests that CI runs on its CPU torch (2.13), here on the H200's torch (2.11): what
      # torch.compile traces differs between versions (docs/torch.md, is_exporting).
      step "pytest (not gpu) of the torch integration on this machine's torch"
      python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_torch_ops.py tests/test_torch_enable.py tests/test_bench_training.py \
        2>&1 | tee "$RES/torch_cpu_tests.txt" | grep -E "passed|failed|FAILED|Error" | tail -20
      summary+=("torch-cpu-tests: $(tail -1 "$RES/torch_cpu_tests.txt")") ;;
    training-gemms)
      step "training step: the GEMMs it sends to gemmlab, each against torch on the same strides"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD python3 training_gemms.py 2>&1 | grep -v -i warn | tee "$RES/training-gemms.txt" | cut -c1-160)
      python3 scripts/compile_probe.py 2>&1 | grep -v -i warn | tee "$RES/compile-probe.txt" | tail -3 ;;
    training-512)
      step "training step, d_model 512 only"
      python3 -m gemmlab.bench.training --out "$RES/training" 2>&1 | tee "$RES/training.txt" | tail -16 ;;
    training-eager-repeats)
      # The enable() eager row is host-bound (docs/torch.md): three separate processes, each
      # printing the machine's uptime and load first, so a cold or loaded host shows in the log.
      step "training step, eager rows only, three processes"
      for r in 1 2 3; do
        echo "uptime: $(uptime)" | tee "$RES/training-eager-$r.txt"
        python3 -m gemmlab.bench.training --skip-compile --rounds 3 --out "$RES/training-eager-$r" 2>&1 \
          | grep -v -i warn | tee -a "$RES/training-eager-$r.txt" | grep -E "^target: eager"
      done ;;
    enable-probe)
      step "enable() eager: host issue time per step, and the step's GEMMs through torch and gemmlab"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD python3 enable_probe.py 2>&1 | grep -v -i warn | tee "$RES/enable-probe.txt" | cut -c1-200) ;;
    stream-k-probe)
      step "stream-K against auto and cuBLAS on mid-size shapes"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout 250 python3 stream_k_probe.py 2>&1 | grep -v -i warn | tee "$RES/stream-k-probe.txt") ;;
    tests-stream-k)
      step "pytest -m gpu tests/test_stream_k.py"
      timeout 280 python3 -m pytest -m gpu -q -x -n 8 --timeout 120 --timeout-method thread -p no:cacheprovider tests/test_stream_k.py \
        > "$OUT/gpu_stream_k.txt" 2>&1; tail -25 "$OUT/gpu_stream_k.txt" | cut -c1-300
      summary+=("tests-stream-k: $(tail -1 "$OUT/gpu_stream_k.txt")") ;;
    ncu-stream-k)
      step "ncu: s11 data-parallel against stream-K"
      bash scripts/ncu_stream_k.sh "1200 1200 1200" "12288 512 512" "4096 4096 4096" 2>&1 | tee "$RES/ncu-stream-k.txt" ;;
    training-profile)
      step "training step: wall against GPU kernel time, top kernels per run"
      python3 scripts/training_profile.py 2>&1 | grep -v Warning | tee "$RES/training-profile.txt" | tail -80 ;;
    training-hostprof)
      step "training step: host time under cProfile"
      python3 scripts/training_hostprof.py > "$RES/training-hostprof.txt" 2>&1; grep "^==" "$RES/training-hostprof.txt" ;;
    s13-variants)
      step "s13 variants at 8192^3 and 4096^3"
      for n in 4096 8192; do
        python3 -m gemmlab ladder --size $n --stages "s13,s13[split_partials=0],s13[split_partials=0,promote_k=64],s13[block_n=192,split_partials=0,stages=2]" \
          --baselines cublas --out "$RES/s13-variants-$n" 2>&1 | tee "$RES/s13-variants-$n.txt" | tail -8
      done ;;
    sweep-tf32x3)
      step "sweep: precision=tf32x3 against cuBLAS FP32, cuBLAS TF32, Triton tf32x3"
      python3 -m gemmlab sweep --suite issue9 --precision tf32x3 --out "$RES/sweep-tf32x3" 2>&1 | tee "$RES/sweep-tf32x3.txt" | tail -25 ;;
    cluster-probe)
      step "split-K in a cluster against the workspace path"
      python3 scripts/cluster_split_probe.py 2>&1 | tee "$RES/cluster-split-probe.txt" | tail -40 ;;
    transformer-shapes)
      step "sweep: transformer-layer shapes (the training benchmark's GEMMs), nn/nt/tn"
      for l in nn nt tn; do
        python3 -m gemmlab sweep --shapes 4096x2048x512,4096x512x2048,2048x512x4096,512x2048x4096,4096x1536x512,4096x512x512 \
          --layout $l --out "$RES/sweep-transformer-$l" 2>&1 | tee "$RES/sweep-transformer-$l.txt" | tail -12
      done ;;
    profile)
      step "gemmlab profile: every stage, model against ncu"
      python3 -m gemmlab profile --all --size 2048,4096 --out "$RES/profile" 2>&1 | tee "$RES/profile.txt" | tail -60 ;;
    ncu-tc)
      step "ncu: s12 and s13 at 4096^3"
      bash scripts/ncu_tensor.sh 2>&1 | tee "$RES/ncu_tensor.txt" | tail -50 ;;
    accuracy)
      step "3xTF32 accuracy"
      python3 scripts/tf32x3_accuracy.py "$RES/tf32x3_accuracy.json" 2>&1 | tee "$RES/tf32x3_accuracy.txt" | tail -14 ;;
    accuracy-2048)
      step "3xTF32 accuracy at 2048x2048 outputs (the contract test's size), promote_k 32/64/128"
      python3 scripts/tf32x3_accuracy.py "$RES/tf32x3_accuracy-2048.json" 2048 32,64,128 2>&1 \
        | tee "$RES/tf32x3_accuracy-2048.txt" | tail -14 ;;
    ladder-tc)
      step "tensor-core ladders at 4096^3 and 8192^3 (s13 at promote_k 32 (default), 64, 128)"
      for n in 4096 8192; do
        python3 -m gemmlab ladder --size $n --stages "s11,s12,s13,s13[promote_k=64],s13[promote_k=128],tuned,tuned-tf32x3" \
          --baselines cublas,cublas_tf32,triton_tf32x3 --out "$RES/ladder-tc-$n" 2>&1 | tee "$RES/ladder-tc-$n.txt" | tail -14
      done ;;
    tests-list)
      step "pytest -m gpu on the tests listed in \$GPU_TESTS"
      mapfile -t listed < "$GPU_TESTS"  # one node id per line (ids may hold spaces)
      python3 -m pytest -m gpu -v -rf -n ${NPROC:-16} --timeout 300 --timeout-method thread --durations=15 -p no:cacheprovider \
        "${listed[@]}" > "$OUT/gpu_tests_list.txt" 2>&1
      grep -E "(^| )(FAILED|ERROR) " "$OUT/gpu_tests_list.txt" | sed -E 's/^\[gw[0-9]+\] \[ *[0-9]+%\] //' | sort -u | tail -40
      tail -1 "$OUT/gpu_tests_list.txt" ;;
    ncu-l2-banks)
      step "ncu: L2 request coalescer counters (s05-s12 at 4096^3), s04 shared wavefronts per instruction"
      bash scripts/ncu_l2_banks.sh "$RES/ncu-l2-banks" 2>&1 | tee "$RES/ncu_l2_banks.txt" | tail -40 ;;
    skinny-configs)
      step "skinny kernel: config space on GEMV shapes"
      python3 scripts/skinny_configs.py ${SKINNY_SHAPES:-} 2>&1 | tee "$RES/skinny_configs.txt" | tail -40 ;;
    s13-rs)
      step "s13 RS variant (B split in registers): correctness and speed"
      python3 scripts/s13_rs_probe.py 2>&1 | tee "$RES/s13_rs_probe.txt" | tail -20 ;;
    a-transpose-kept)
      step "A transposed where only the call's layout is tuned: the heuristic's plan with A^T (as is), the entry's plan, the entry's tile with A^T"
      # the 15 plans the variants change among the held-out, wide and own suites (model_variant_probe.py --dry's
      # "changed:" line, computed before a GPU is lent, as for stand-in-bk16 below)
      fixed_variants ${AT_VARIANTS:-as_is,at_entry,at_tile} a-transpose-kept.txt 560 24 \
        4096 3072 768 nn 1 4096 3072 768 nt 1 12288 3072 1024 nt 1 2048 1536 512 nt 1 8192 2304 768 nt 1 \
        16384 3072 768 nt 1 2048 3072 2048 nn 1 8192 12288 4096 nt 1 4096 11008 4096 nt 1 4096 4096 11008 nn 1 \
        128 11008 4096 nn 1 256 8192 4096 nt 1 2047 2049 511 nt 1 3001 1999 777 nn 1 6144 2048 1024 nt 1 ;;
    tail)
      step "the cut into whole waves and a tail (plan.Tail; choice.TAIL_MIN_GAIN): GPU tests, then auto with it off and on"
      # (the first run, at c4c99f5, timed as_is,tail105,tail105n with the cut off as is; the runtime's
      # as_is is the cut on within its bounds since, and tail_off the runtime before)
      timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 tests/test_tail.py 2>&1 | tee "$RES/tail-tests.txt" | tail -6
      # the 13 plans tail105n changes among the own suite and the model's best gainers (model_variant_probe.py
      # --dry's "changed:" line, computed before a GPU is lent)
      fixed_variants ${TAIL_VARIANTS:-tail_off,tail105,as_is,tail105n} tail-variants.txt 400 18 \
        2789 8099 448 nn 1 3232 6883 2275 nn 1 7868 7127 2248 nn 1 5000 5000 5000 nn 1 2900 2901 2903 nn 1 \
        2560 2560 640 nn 1 4096 2304 768 nn 1 2426 5810 378 nn 1 4486 1241 1104 nn 1 2304 2304 576 tn 1 \
        160 160 160 nt 100 5000 5000 5000 nt 1 1231 8172 4909 nn 1 ;;
    tail-check)
      step "the cut into whole waves and a tail, on (as is) against off, on shapes it was not set on"
      # the plans it changes (model_variant_probe.py --dry --variants as_is,tail_off, computed before a
      # GPU is lent): 27 random shapes of seeds 24-33 (--random 120 each), then the wide and
      # held-out suites' shapes the first run (tail) did not time, 1500^3 nn (gemmlab choose's nearest
      # example) and the transformer suite's 4096x1536x512 tt
      fixed_variants ${TAIL_VARIANTS:-as_is,tail_off} tail-check.txt 300 44 \
        2927 1676 932 nt 1 592 3520 592 tn 1 3553 1264 2732 tt 1 824 3200 800 nn 1 3764 1253 1117 tn 1 \
        2456 3536 1809 nt 1 2124 2148 3843 tt 1 3856 1675 1381 tn 1 800 2805 719 tn 1 2045 3536 1336 tt 1 \
        2896 1897 572 tt 1 1511 3951 1276 nn 1 2715 1799 1076 nt 1 3684 2795 2043 nn 1 2725 3755 2495 tn 1 \
        675 3764 1901 tt 1 3520 2511 1457 nn 1 543 3997 3983 tt 1 2001 2852 1025 nt 1 1077 2515 4008 nn 1 \
        2281 2064 1316 nt 1 2584 2276 2644 nt 1 2420 945 616 nt 1 3165 3268 572 nn 1 2276 2448 2920 tn 1 \
        2073 2399 1371 tt 1 2536 3603 1524 nt 1 \
        8192 2304 768 nt 1 2048 3072 2048 nn 1 3001 1999 777 nn 1 4096 2304 768 nt 1 4096 2304 768 tt 1 \
        2900 2901 2903 nt 1 2900 2901 2903 tt 1 5000 5000 5000 tt 1 2560 2560 640 nt 1 2560 2560 640 tt 1 \
        1500 1500 1500 nn 1 4096 1536 512 tt 1 ;;
    tail-guard)
      step "the cut's first tile at most twice the replaced plan's below TAIL_LARGER_TILE_MIN_K: as is against without"
      # the one plan of 1800 random shapes (seeds 24-33, 40-44) the bound changes, and the 4x larger
      # tile at K = 768 it leaves cut
      fixed_variants ${TAIL_VARIANTS:-as_is,tail_any_tile} tail-guard.txt 120 6 \
        2896 1897 572 tt 1 4096 2304 768 tt 1 ;;
    batched-tiles)
      step "small batched GEMMs: s11 tiles at more blocks per SM against the heuristic's 64x64 x3"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout ${VARIANT_LIMIT:-300} python3 batched_tile_probe.py 2>&1 \
        | grep -v -i warn | tee "$RES/batched-tiles.txt" | tail -40) ;;
    eff32x64)
      step "s11 32x64 at efficiency 0.30 (before 0ce1cbd) against as is (0.40) on random shapes (seeds 52-54)"
      # the run that set 0.40 (7474a15) timed as_is,eff32x64_40 with 0.30 as is; the rule it was
      # taken by is in docs/dispatch.md, "Small batched GEMMs"
      seeded_variants "52 53 54" as_is,eff32x64_30 eff32x64 ${VARIANT_LIMIT:-150} ;;
    repack-k)
      step "operands copied at any K (REPACK_MIN_K 0) against as is (257) on random shapes (seeds 55-57)"
      # the run that set choice.REPACK_MIN_K to 257 (34dd8f1) timed as_is (then 0) against 257, 513
      # and TRANSPOSE_A_MIN_M 1024; the rule it was taken by is in docs/dispatch.md, "Repacked plans"
      seeded_variants "55 56 57" as_is,rp_min_k0 repack-k ${VARIANT_LIMIT:-180} ;;
    epilogue2)
      step "the model's epilogue term (model.EPILOGUE_EXPOSURE 2.0) against as is (0) on fresh random shapes (seeds 58-60)"
      # rule written before the run (docs/dispatch.md, "Repacked plans on random shapes", measured):
      # taken if the plans it changes run >= 1.05x faster (geometric mean), none below 0.90x, no
      # seed's auto/cuBLAS falling
      seeded_variants "58 59 60" as_is,epilogue2 epilogue2 ${VARIANT_LIMIT:-150} ;;
    fixed4)
      step "the model's fixed cost and epilogue terms as short-k measured them (variant fixed4_epi2_u3) on random shapes (seeds 61-63; 62 and 63 fresh)"
      # rule written before the run (docs/dispatch.md, "Repacked plans on random shapes", short-k
      # measured): as epilogue2's
      seeded_variants "61 62 63" as_is,fixed4_epi2_u3 fixed4 ${VARIANT_LIMIT:-150} ;;
    short-k)
      step "s11 tiles on one full wave each, K 32-2048: fixed cost a wave and the main loop's rate, against the model"
      # prediction written before the run: docs/dispatch.md, "Repacked plans on random shapes"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout ${VARIANT_LIMIT:-300} python3 short_k_probe.py 2>&1 \
        | grep -v -i warn | tee "$RES/short-k.txt" | tail -9) ;;
    short-k-wide)
      step "s10 tiles of 1-3 blocks an SM at split 1 on the random minimum (short K, 4-byte copies; seeds 58-63)"
      # prediction written before the run: docs/dispatch.md, "Short K on 4-byte copies"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout ${VARIANT_LIMIT:-300} python3 s10_tile_probe.py --short-k-wide 2>&1 \
        | grep -v -i warn | tee "$RES/short-k-wide.txt" | tail -11) ;;
    short-k-blocks)
      step "short K on 4-byte copies without one-block stand-ins (variant short_k_2blocks) on the plans it changes of fresh seeds 67-70"
      # rule written before the run: docs/dispatch.md, "Short K on 4-byte copies"; the shapes from the CPU's dry run
      shapes=""
      for s in 67 68 69 70; do
        shapes="$shapes $(cd scripts && PYTHONPATH=$PWD/..:$PWD python3 model_variant_probe.py --dry --variants \
          as_is,short_k_2blocks --random 120 --seed $s 2>/dev/null | sed -n 's/^changed: //p')"
      done
      echo "shapes:$shapes"
      fixed_variants as_is,short_k_2blocks short-k-blocks.txt ${VARIANT_LIMIT:-240} 12 $shapes ;;
    persistent)
      step "s11 on a persistent grid against one block a tile: W-wave series and auto's mid-size s11 plans (seed 64)"
      # prediction and rule written before the run: docs/stages/s10-s11.md, "A persistent grid"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout ${VARIANT_LIMIT:-400} python3 persistent_probe.py --seed 64 2>&1 \
        | grep -v -i warn | tee "$RES/persistent.txt" | tail -16) ;;
    persistent-producer)
      step "s11 on a persistent grid and one block a tile, each with thread 0 and with a producer warpgroup issuing the copies (part 1)"
      # prediction written before the run: docs/stages/s10-s11.md, "A persistent grid" (thirty-first session)
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout ${VARIANT_LIMIT:-400} python3 persistent_probe.py --part 1 --producer-warp 2>&1 \
        | grep -v -i warn | tee "$RES/persistent-producer.txt" | tail -20) ;;
    persistent-variants)
      step "the runtime with s11's one-slice plans on a persistent grid (variant persistent) on fresh random shapes (seeds 65, 66)"
      # rule written before the run: docs/stages/s10-s11.md, "A persistent grid"
      seeded_variants "65 66" as_is,persistent persistent ${VARIANT_LIMIT:-200} ;;
    tests-persistent)
      step "pytest -m gpu tests/test_persistent.py"
      timeout 280 python3 -m pytest -m gpu -q -n 8 --timeout 120 --timeout-method thread -p no:cacheprovider \
        tests/test_persistent.py > "$OUT/gpu_persistent.txt" 2>&1; tail -15 "$OUT/gpu_persistent.txt" | cut -c1-300
      summary+=("tests-persistent: $(tail -1 "$OUT/gpu_persistent.txt")") ;;
    ncu-rp)
      step "ncu: gemmlab auto against cuBLAS on repacked random shapes (seeds 50-54), kernel by kernel"
      bash scripts/ncu_vs_cublas.sh "$RES/ncu-rp" "2900 1329 101 tn" "2168 2239 104 tt" "3596 3091 137 tn" \
        "2396 408 316 tt" "4032 796 271 nt" 2>&1 | tee "$RES/ncu_rp.txt" | tail -60 ;;
    ncu-short-k)
      step "ncu: gemmlab auto against cuBLAS on short K with 4-byte copies (the random minimum; seeds 58-63)"
      bash scripts/ncu_vs_cublas.sh "$RES/ncu-short-k" "1989 1807 111 tn" "3299 2339 101 nt" "1243 2505 111 nn" \
        "3040 2365 148 tn" 2>&1 | tee "$RES/ncu_short_k.txt" | tail -40 ;;
    tune-transposed)
      step "tune the layouts the wide suite's nn/nt entries run in with A transposed (runner.transposed_jobs; ships gemmlab/tune/tables)"
      # the entries the tuner adds to the suite's own (15 on 2026-12-07), derived on the CPU so they cannot drift
      entries=$(python3 -c "from gemmlab.bench import suites; from gemmlab.tune import runner
print(','.join(f'{j.text}:{j.layout}' for j in runner.transposed_jobs(runner.jobs_for(None, None, suites.WIDE_ENTRIES))))")
      python3 -m gemmlab tune --ship --top 6 --entries "$entries" \
        2>>"$RES/tune-transposed.err" | tee "$RES/tune-transposed.txt" | tail -20
      cp gemmlab/tune/tables/*.json "$RES/" 2>/dev/null ;;
    ncu-mid)
      step "ncu: gemmlab auto against cuBLAS on the unseen mid-size shapes auto loses most (own and held-out suites)"
      bash scripts/ncu_vs_cublas.sh "$RES/ncu-mid" "3333 1111 2222 nt" "4096 3072 768 nt" "16384 256 1024 nn" \
        "3072 1024 4096 nn" "1400 1400 1400 nt" "601 1203 4099 nn" "255 255 255 nt 32" "160 160 160 nt 100" \
        "5120 640 1280 tt" 2>&1 | tee "$RES/ncu_mid.txt" | tail -60 ;;
    ncu-vs-cublas)
      step "ncu: gemmlab auto against cuBLAS, kernel by kernel"
      bash scripts/ncu_vs_cublas.sh "$RES/ncu-vs-cublas" "1 4096 4096" "1 8192 8192" "64 64 65536" "1 6144 2048" 2>&1 | tee "$RES/ncu_vs_cublas.txt" | tail -30 ;;
    gemv-gap)
      step "skinny: time outside the kernel (flush kind, shared memory, carveout)"
      python3 scripts/gemv_gap.py 2>&1 | tee "$RES/gemv_gap.txt" | tail -8
      for shape in "1 6144 2048" "1 8192 8192" "8 4096 4096" "4096 1 4096"; do
        python3 scripts/gemv_gap.py $shape 2>&1 | tee -a "$RES/gemv_gap.txt" | tail -8
      done ;;
    sweep-ieee)
      step "sweep: precision=ieee (stage=auto) over the issue-9 suite against cuBLAS FP32"
      python3 -m gemmlab sweep --suite issue9 --out "$RES/sweep-ieee" 2>&1 | tee "$RES/sweep-ieee.txt" | tail -20 ;;
    variants-16|variants-18)
      # The model's and the choice's variants (docs/dispatch.md, "What the 139 random shapes say"):
      # seed 16 (the logs' shapes since 2026-12-04, with the own suite) and seed 18. Only plans that
      # differ from as_is are timed again.
      seed=${what#variants-}
      step "model variants on random shapes, seed $seed"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout 560 python3 model_variant_probe.py --own --random 120 --seed $seed \
        --variants as_is,rules_1e53e88,epilogue2,occ_unaligned25,nearest_off,rp_never,rp_always 2>&1 | grep -v -i warn | tee "$RES/variants-$seed.txt" | tail -6) ;;
    variants-next)
      # docs/dispatch.md, "The model predicts the stand-in the plan runs": the problem-free model
      # (stand_in_free) on the odd nt shapes whose choice it changes and on seed 18; epilogue2
      # again; the nearest bound of before (slack130) there and on the suite shapes it moves; 64x64
      # x3 and the other mid tiles at the held-out shapes with K <= 768. (probes-next: the rest, in
      # a second call: one call runs 10 minutes at most.)
      step "model variants: stand_in_free, epilogue2 (seeds 16, 18 and 7 odd nt shapes)"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout 400 python3 model_variant_probe.py --random 120 --seed 18 \
        --variants as_is,stand_in_free,epilogue2,slack130 2917 313 215 nt 4 95 2393 209 nt 16 75 2507 3791 nt 1 \
        1371 129 131 nt 16 71 1749 1557 nt 16 1125 157 341 nt 4 75 3551 1179 nt 1 2>&1 | grep -v -i warn \
        | tee "$RES/variants-next-18.txt" | tail -5)
      step "the nearest bound (1.15 against 1.3) on the suite shapes it moves"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout 150 python3 model_variant_probe.py --variants as_is,slack130 \
        4096 768 768 nn 1 4096 768 768 nt 1 4096 3072 768 nn 1 4096 3072 768 nt 1 4096 3072 768 tt 1 \
        1400 1400 1400 tt 1 2560 2560 640 tt 1 3071 1535 767 tn 1 2>&1 | grep -v -i warn \
        | tee "$RES/variants-next-suites.txt" | tail -4)
      step "mid tiles at the held-out shapes with K <= 768"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout 150 python3 small_tile_probe.py \
        --shapes 4096x768x768:nn,4096x2304x768:nn,2560x2560x640:nn 2>&1 | grep -v -i warn \
        | tee "$RES/small-tile-heldout.txt" | tail -8) ;;
    probes-next)
      # docs/stages/s10-s11.md, "moving the edge blocks inside" (edge_shift: same choices, other
      # kernels; run `tests` first: test_gpu_s10_edge_shift); half tiles of 128x256's thread tile
      # where its last wave is nearly empty (docs/dispatch.md); the s10 tiles of 64x32 warps.
      step "s10's edge blocks moved inside the 4-byte operands (edge_shift, the runtime) against where they were: seed 16 and the own suite"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout 540 python3 model_variant_probe.py --random 120 --seed 16 --own \
        --variants as_is,edge_shift_off 333 555 777 tt 8 492 109 137 tn 32 455 97 743 nn 32 255 255 255 nt 32 \
        2>&1 | grep -v -i warn | tee "$RES/variants-edge-shift-16.txt" | tail -4) ;;
    probes-next-2)
      # a second call (each call runs 10 minutes at most): the tiles of probes-next's comment
      step "128x256's thread tile in half tiles, two blocks an SM, where 128x256 leaves its last wave nearly empty"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout 200 python3 small_tile_probe.py \
        --tiles "128x256 w64x64 ku4,256x64 w64x64 bk16 x2,64x256 w64x64 bk16 x2,256x64 w64x64 bk16 s5 x2" \
        --shapes 5000x5000x5000:nt,5000x5000x5000:nn,1400x1400x1400:nt,6144x6144x6144:nn,4096x4096x4096:nn 2>&1 \
        | grep -v -i warn | tee "$RES/half-tiles.txt" | tail -8)
      step "s10 with 64x32 warps (8x8 outputs a thread, as cuBLAS's 4-byte kernels) on the unaligned shapes s10 lost most"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout 200 python3 s10_tile_probe.py --w64x32 2>&1 | grep -v -i warn \
        | tee "$RES/s10-w64x32.txt" | tail -12) ;;
    ncu-s10)
      # s10's 4-byte path against cuBLAS where it falls shortest (the wide suite's minimum): stall
      # reasons per issued instruction, instructions, shared-memory wavefronts (docs/stages/s10-s11.md,
      # "s10's copies spread between its FFMAs"); auto's stand-in, the stand-in with the tile's last
      # k carried over the barrier (frag_carry; and its copies after half the next tile), and s10 at
      # 64x32 warps (8x8 a thread).
      step "ncu: s10 4-byte path against cuBLAS (stall reasons)"
      bash scripts/ncu_s10_deep.sh "333 555 777 tt 8" \
        '{"block_m": 128, "block_n": 64, "warp_m": 32, "warp_n": 32, "block_k": 16, "stages": 4, "min_blocks": 2, "edge_shift": 1, "frag_carry": 1}' \
        '{"block_m": 128, "block_n": 64, "warp_m": 32, "warp_n": 32, "block_k": 16, "stages": 4, "min_blocks": 2, "edge_shift": 1, "frag_carry": 1, "carry_copy_k": 7}' \
        '{"block_m": 64, "block_n": 128, "warp_m": 64, "warp_n": 32, "block_k": 16, "stages": 3, "min_blocks": 3, "edge_shift": 1}' \
        2>&1 | tee "$RES/ncu-s10-stalls.txt" | tail -120 ;;
    s10-stalls)
      # auto's s10 stand-in against cuBLAS on the batched unaligned shapes of the wide and own suites'
      # minima: warp stall reasons per issued instruction (the ncu-s10 question, without the variants)
      step "ncu: auto's s10 4-byte path against cuBLAS, stall reasons (333x555x777x8 tt, 255^3x32 nt)"
      for s in "333 555 777 tt 8" "255 255 255 nt 32"; do bash scripts/ncu_s10_deep.sh "$s"; done \
        2>&1 | tee "$RES/ncu-s10-stalls.txt" | tail -80 ;;
    a-swizzle|a-swizzle-variants)
      # the nt stand-in's K-major A swizzled in shared memory (s11_tma.STAND_IN_A_SWIZZLE, off;
      # docs/stages/s10-s11.md, "The nt stand-in's A"): its GPU test; ncu at 255^3x32 nt, the stand-in
      # as is and swizzled (bank conflicts, stall reasons); auto as is against the flag on, on the nt
      # shapes of seed 97 it changes (--dry: 11 of 120) with the own suite's minimum, then seed 101's
      # (a-swizzle-variants: only these, again)
      if [ "$what" = a-swizzle ]; then
      step "pytest -m gpu: a_swizzle on 4-byte copies, and the stand-ins with STAND_IN_A_SWIZZLE / STAND_IN_BLOCK_K16"
      python3 -m pytest -m gpu -q -n 8 -p no:cacheprovider -k "a_swizzle or block_k16" tests/test_stages_s10_s11.py 2>&1 \
        | tee "$RES/gpu-stand-in-flags.txt" | tail -3
      step "ncu: 255^3x32 nt, the stand-in as is and with A swizzled"
      st='"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "block_k": 16, "stages": 4, "min_blocks": 2, "edge_shift": 1'
      bash scripts/ncu_s10_deep.sh "255 255 255 nt 32" "{$st}" "{$st, \"a_swizzle\": 1}" 2>&1 | tee "$RES/ncu-a-swizzle.txt" \
        | grep -E "===|duration|conflicts|short_scoreboard|issue_active|inst_executed" | tail -24
      fi
      step "variants: as_is against stand_in_a_swizzle"
      fixed_variants as_is,stand_in_a_swizzle variants-a-swizzle-97.txt 300 16 255 255 255 nt 32 295 171 507 nt 4 \
        140 257 487 nt 8 441 736 191 nt 1 179 1192 2377 nt 1 111 736 103 nt 32 299 479 377 nt 32 595 103 2269 nt 1 \
        707 476 225 nt 1 212 644 311 nt 32 711 304 137 nt 1 231 536 1009 nt 1
      # seed 101's nt plans the flag changes (--dry: 12 of 120; only those are timed)
      fixed_variants as_is,stand_in_a_swizzle variants-a-swizzle-101.txt 200 16 368 256 2079 nt 1 148 1356 1757 nt 1 \
        232 264 1145 nt 1 1492 132 163 nt 1 127 247 1181 nt 1 168 344 499 nt 1 452 208 1259 nt 1 97 636 153 nt 4 \
        240 96 207 nt 4 188 236 2319 nt 1 227 141 437 nt 1 505 205 137 nt 1 ;;
    stand-in-bk16)
      # the stand-ins of nn / tn / tt on 4-byte copies at K tiles of 16 in 4 stages where the tile's
      # are 32 (s11_tma.STAND_IN_BLOCK_K16, on since 2026-12-06) against 32 as before: seed 97 (--dry:
      # 42 of 120 plans change), then seed 103's
      step "variants: stand_in_bk32 (as before) against as_is (K tiles of 16)"
      # only the plans the flag changes (--dry: seed 97 42 of 120, seed 103 39 of 120; the lists are
      # that output, computed before a GPU is lent so the call spends no device time on it)
      fixed_variants stand_in_bk32,as_is variants-bk16-97.txt 240 6 647 524 107 tn 16 124 497 1199 tn 1 \
        172 96 1529 tt 1 115 209 2156 nn 1 648 559 100 tn 16 133 931 409 tt 1 629 97 160 tt 4 568 213 209 nn 1 \
        100 1056 235 tt 1 452 145 293 tn 1 167 191 1116 nn 1 161 772 956 tn 1 3228 119 104 tn 1 3000 348 197 tt 1 \
        208 109 1020 tn 1 505 552 971 tn 1 1248 499 329 nn 1 109 1748 597 nn 1 232 368 319 nn 8 441 328 161 tn 64 \
        457 684 384 tt 64 2039 107 320 tt 1 209 328 568 tt 8 172 756 127 nn 1 107 1436 292 tn 1 1247 556 360 tn 1 \
        96 321 108 tn 4 891 708 959 tn 1 324 2067 105 nt 1 3916 117 656 tn 1 152 149 368 nn 1 532 283 387 nn 1 \
        819 124 2443 nn 1 124 216 117 tt 1 915 300 2364 tt 1 96 105 736 nn 1 443 288 2356 tt 1 3220 123 188 nn 1 \
        772 323 608 nn 1 696 117 1681 nn 1 140 204 1387 nn 1 163 416 2540 tt 1
      fixed_variants stand_in_bk32,as_is variants-bk16-103.txt 240 6 477 347 112 tt 64 292 585 165 tn 1 \
        180 384 125 tt 4 189 177 99 tt 4 369 208 256 tn 4 1092 229 137 tn 1 540 131 335 nn 4 251 471 104 nn 32 \
        325 367 392 tn 1 131 181 492 tn 1 159 128 192 tt 64 113 432 435 tt 8 1115 152 599 nn 1 189 3728 120 tn 1 \
        131 667 163 tn 32 157 676 740 tn 1 169 1148 1292 tn 1 249 544 704 tt 1 1449 168 168 tt 1 129 992 821 nn 1 \
        172 115 919 tn 1 211 2701 113 tn 1 327 297 228 nn 64 1872 263 217 tn 1 127 3327 279 nn 1 277 108 123 tt 32 \
        940 359 231 tn 1 2904 197 1835 nn 1 140 496 1463 tt 1 313 415 396 nn 4 187 1221 1041 tt 1 572 425 145 tn 1 \
        103 176 308 tn 8 235 156 604 tn 1 2620 168 837 tt 1 201 296 148 tn 16 237 2871 432 nn 1 289 103 148 nn 4 \
        124 1939 108 nn 1 ;;
    serpentine|serpentine-ladder|serpentine-probe)
      # docs/stages/s10-s11.md, "Serpentine FFMA runs" (run `tests` first: its GPU tests). s11 at
      # auto's tile for the large squares, tn (TMA's outer-product layout), in order against
      # serpentine (serpentine-ladder: only this, ~2 min, to share a call with `tests`); then auto
      # with ffma_serpentine's default 1 against the runtime on the squares of the issue-9 suite
      # (nn: A transposed first; tt: repacked) and the s10 shapes of frag-carry (serpentine-probe).
      if [ "$what" != serpentine-probe ]; then
      step "s11 128x256 ku4 in order against serpentine, 4096^3 and 8192^3 tn"
      for n in 4096 8192; do
        python3 -m gemmlab ladder --size $n --layout tn --stages "s11[k_unroll=4],s11[k_unroll=4,ffma_serpentine=1]" \
          --baselines cublas --out "$RES/serpentine-$n-tn" 2>&1 | tee "$RES/serpentine-$n-tn.txt" | tail -4
      done
      fi
      if [ "$what" != serpentine-ladder ]; then
      step "auto with every s10 / s11 FFMA run in serpentine order where it applies, against the runtime"
      fixed_variants as_is,serpentine serpentine-quick.txt 420 22 \
        4096 4096 4096 nn 1 4096 4096 4096 tn 1 4096 4096 4096 tt 1 8192 8192 8192 nn 1 2048 2048 2048 tn 1 \
        333 555 777 tt 8 492 109 137 tn 32 455 97 743 nn 32 173 247 129 tt 4 1660 388 201 nn 1 759 189 317 tn 16 \
        741 552 125 tt 8 777 555 333 tt 1 601 901 301 nn 1 1001 999 1003 nn 1 513 1025 257 tt 1 1999 333 1501 tt 1
      fi ;;
    serpentine-validate)
      # the quick probe's shapes decide; a seed no probe has used says whether it holds
      step "serpentine against the runtime on random shapes of a fresh seed (29)"
      random_variants 29 as_is,serpentine variants-serpentine-29.txt 560 ;;
    sanitize-carry)
      # s10 with frag_carry under compute-sanitizer (its GPU tests run with `tests`)
      step "compute-sanitizer racecheck and synccheck: s10 with frag_carry (copies at the barrier; 2 stages, after k 7; 2 stages, trips of 4 k)"
      for tool in racecheck synccheck; do
        for fc in '{"block_m": 128, "block_n": 64, "warp_m": 32, "warp_n": 32, "block_k": 16, "stages": 4, "min_blocks": 2, "edge_shift": 1, "frag_carry": 1}' \
                  '{"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "block_k": 16, "stages": 2, "frag_carry": 1, "carry_copy_k": 7}' \
                  '{"block_m": 128, "block_n": 64, "warp_m": 32, "warp_n": 32, "block_k": 16, "stages": 2, "min_blocks": 2, "edge_shift": 1, "frag_carry": 1, "carry_chunk": 4}'; do
          timeout 120 compute-sanitizer --tool $tool python3 scripts/sanitize.py s10 --config "$fc" 2>&1 \
            | tee -a "$RES/sanitize-frag-carry.txt" | grep -E "ERROR SUMMARY|WRONG|Error" | tail -3
        done
      done ;;
    frag-carry)
      # docs/stages/s10-s11.md, "The tile's last k carried over the barrier" (run `tests` first: its
      # GPU tests): the stand-in with it (the copies at the barrier, and after half the next tile:
      # frag_carry_late) against the runtime on the s10 shapes of copy-parts-quick (the 5 nt among
      # them do not change: a control) and more nn / tn / tt shapes on 4-byte copies.
      step "the stand-in with the tile's last k carried over the barrier (frag_carry) against the runtime"
      fixed_variants as_is,frag_carry,frag_carry_late frag-carry-quick.txt 480 24 \
        333 555 777 tt 8 492 109 137 tn 32 455 97 743 nn 32 152 405 199 nt 1 99 296 337 nt 1 173 247 129 tt 4 \
        1660 388 201 nn 1 759 189 317 tn 16 255 255 255 nt 32 741 552 125 tt 8 560 368 2097 nt 1 340 1145 2831 nt 1 \
        777 555 333 tt 1 601 901 301 nn 1 1001 999 1003 nn 1 513 1025 257 tt 1 1999 333 1501 tt 1 601 1203 4099 nn 1 \
        4095 1023 2049 tn 1 3333 1111 2222 tt 1 ;;
    frag-carry-validate)
      # the quick probe's shapes decided it; a seed no probe has used says whether it holds
      step "frag_carry against the runtime on random shapes of a fresh seed (23)"
      random_variants 23 as_is,frag_carry variants-frag-carry-23.txt 540 ;;
    frag-carry-acc64)
      # the rule read off frag-carry and frag-carry-validate (H100, 2026-12-05): frag_carry only where
      # a thread holds 64 accumulators; and with 128 too, in trips of the uncarried kernel's k's
      # (frag-carry-chunked's question); a seed no probe has used (31) says whether either holds
      step "frag_carry at 64 (and 64 or 128, chunked) accumulators a thread against the runtime on random shapes of a fresh seed (31)"
      random_variants 31 as_is,frag_carry_acc64,frag_carry_64_128 variants-frag-carry-acc64-31.txt 560 ;;
    carry-h200)
      # the runtime's frag_carry at 64 accumulators (on since the sixteenth session, measured on H100s
      # only) against the stand-in uncarried, and the stand-in at k_unroll 2 at most (an experiment),
      # on the shapes of fresh seeds whose plan either changes (`model_variant_probe.py --dry`: seed
      # 53's 12 carried and 2 k_unroll, seeds 59/67/71/73's 13 k_unroll)
      step "the runtime (frag_carry at 64 accumulators) against it off, and the stand-in at k_unroll <= 2"
      fixed_variants as_is,frag_carry_off,stand_in_ku2 variants-carry-ku2.txt 560 8 \
        173 2031 2920 tt 1 128 975 3492 tn 1 333 608 1356 tn 1 195 348 240 tt 32 1001 216 2371 nn 1 156 2312 1095 tt 1 \
        579 260 348 tn 64 299 3287 2005 tn 1 236 3479 511 nt 1 137 1867 2008 nn 1 491 336 437 tt 32 313 296 136 tt 64 \
        507 220 175 tt 64 468 2127 1208 nn 1 737 685 128 tt 32 547 760 383 nt 4 244 3217 979 nn 1 852 485 1420 tn 1 \
        560 705 300 nn 4 401 232 156 tn 64 333 2808 2392 tt 1 200 500 305 tt 32 512 444 539 nn 64 473 699 696 nn 32 \
        2877 327 1164 tn 1 731 657 120 nn 32 197 1004 3016 tt 1 ;;
    tma-start)
      # does TMA load a box whose dim-0 start is not 16-byte aligned? (H100, 2026-12-06: no, it faults)
      step "TMA box starts 0, 4, 1, 2, 3 floats into a row (scripts/tma_start_probe.py)"
      timeout 120 python3 scripts/tma_start_probe.py 2>&1 | grep -v -i warn | tee "$RES/tma-start-probe.txt" ;;
    tuned-slack)
      # heuristics/choice.py TUNED_MODEL_SLACK (off): a tuned bucket's entry measured at another shape
      # checked against the waves model there; the 25 of 60 random shapes inside tuned buckets (seed
      # 61, in no suite; `model_variant_probe.py --dry --random 60 --seed 61 --in-buckets`) it changes
      step "tuned entries off their measured shape: as is, and checked against the model (1.15, 1.3)"
      fixed_variants as_is,tuned_slack,tuned_slack130 variants-tuned-slack-61.txt 560 8 \
        560 569 3792 nt 1 3620 600 1920 nt 1 1695 492 3560 nn 1 3756 548 2264 tn 1 3452 600 1704 tn 1 2099 556 3636 nt 1 \
        3821 600 1420 nt 1 1997 524 3856 nn 1 3524 544 491 tn 1 3704 608 1764 nt 1 3868 560 1315 tn 1 1244 528 3876 tn 1 \
        1968 572 3476 nn 1 3708 560 548 nn 1 608 448 3952 nt 1 4012 2193 476 nt 1 3564 536 544 nn 1 1387 464 3580 nn 1 \
        3500 604 1528 tn 1 569 572 3668 nn 1 3456 2432 464 nt 1 1332 592 3956 nt 1 2160 597 4060 nt 1 529 1775 3588 nt 1 \
        464 552 3680 tn 1 1792 1792 1792 nt 1 ;;
    frag-carry-chunked)
      # docs/stages/s10-s11.md, "The carried loop in trips of part of a tile": the 128-accumulator
      # stand-ins (w64x64, block_k 32; on the H200 auto takes them for 16 of 300 random unaligned
      # shapes, these 7) carried a whole tile a trip and in trips of the uncarried kernel's k's; two
      # controls the chunks do not change (64 and 32 accumulators)
      step "frag_carry a whole tile a trip against trips of part of one (carry_chunk), 128 accumulators a thread"
      fixed_variants as_is,frag_carry,frag_carry_chunked frag-carry-chunked.txt 300 14 \
        741 552 125 tt 8 313 2741 1453 nn 2 491 1041 1341 nn 1 498 631 1295 tn 8 2706 440 1619 tn 2 484 436 1187 tt 8 \
        1318 496 1505 tn 1 333 555 777 tt 8 777 555 333 tt 1 ;;
    s10-knobs)
      step "auto's s10 config on the unaligned shapes s10 lost most, one knob changed at a time"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout 220 python3 s10_tile_probe.py --knobs 2>&1 | grep -v -i warn \
        | tee "$RES/s10-knobs.txt" | tail -12) ;;
    s10-carry)
      step "s10 with the tile's last k carried over the barrier, at the stand-in's tile and at cuBLAS's 4-byte geometry"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout 400 python3 s10_tile_probe.py --carry 2>&1 | grep -v -i warn \
        | tee "$RES/s10-carry.txt" | tail -10) ;;
    s10-spill-probe)
      step "s10 builds that spill in their K loop against spill-free ones (docs/stages/s10-s11.md)"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout 560 python3 s10_spill_probe.py 2>&1 | grep -v -i warn | tee "$RES/s10-spill-probe.txt" | tail -30) ;;
    s10-small-k)
      step "s10 with K tiles of 8 (cuBLAS's 4-byte tiles) on the unaligned shapes s10 lost most"
      (cd scripts && PYTHONPATH=$PWD/..:$PWD timeout 560 python3 s10_tile_probe.py --small-k 2>&1 | grep -v -i warn | tee "$RES/s10-small-k.txt" | tail -14) ;;
    sweep-heldout)
      step "sweep: stage=auto on the held-out shapes (in no table), nn, nt and tt, against cuBLAS"
      for lay in nn nt tt; do
        python3 -m gemmlab sweep --suite heldout --layout $lay --baselines cublas --no-kernel-names \
          --out "$RES/sweep-heldout-$lay" 2>&1 | tee "$RES/sweep-heldout-$lay.txt" | tail -3
      done ;;
    sweep-own)
      step "sweep: stage=auto on the own suite (shapes of our own that no table holds) against cuBLAS"
      python3 -m gemmlab sweep --suite own --baselines cublas --no-kernel-names --out "$RES/sweep-own" 2>&1 \
        | tee "$RES/sweep-own.txt" | tail -10 ;;
    tune-wide)
      step "tune the issue-16 'wide' suite, each entry in its own layout (ships gemmlab/tune/tables)"
      RES="$RES" bash scripts/tune_wide.sh 2>&1 | tail -20
      cp gemmlab/tune/tables/*.json "$RES/" 2>/dev/null ;;
    tune-wide-n)
      step "re-tune the 'wide' entries with a decode-sized N (after the 32/64-column tiles joined the space)"
      for pair in "4096x17x4096 tn" "8192x64x4096,1024x64x1024x16 nt" "4096x128x11008 tt" "11008x32x4096 nn"; do
        set -- $pair
        python3 -m gemmlab tune --shapes "$1" --layouts "$2" --ship --top 6 2>>"$RES/tune-wide-n.err" | tee -a "$RES/tune-wide-n.txt" | tail -3
      done
      cp gemmlab/tune/tables/*.json "$RES/" 2>/dev/null ;;
    sweep-wide)
      step "sweep: stage=auto over the issue-16 'wide' suite (73 entries, every layout, batched), against cuBLAS"
      python3 -m gemmlab sweep --suite wide --baselines cublas --no-kernel-names --out "$RES/sweep-wide" 2>&1 \
        | tee "$RES/sweep-wide.txt" | tail -12 ;;
    sweep-transformer)
      step "sweep: the training model's GEMMs in the layouts it calls them (nt forward, nn dX, tn dW)"
      for lay in nt nn tn; do
        python3 -m gemmlab sweep --suite transformer --layout $lay --baselines cublas --no-kernel-names \
          --out "$RES/sweep-transformer-$lay" 2>&1 | tee "$RES/sweep-transformer-$lay.txt" | tail -3
      done ;;
    small-kernels)
      step "small GEMMs: GPU time per launch and host time per call, by stage"
      python3 scripts/small_kernel_times.py 2>&1 | tee "$RES/small_kernels.txt" | tail -30 ;;
    probe)
      step "bank probe"
      python3 -m gemmlab bank-probe --out "$RES/bank-probe" 2>&1 | tee "$RES/bank-probe.txt" | tail -30 ;;
    *) echo "unknown step $what" ;;
  esac
  tar czf "$OUT/results.tgz" -C "$RES" . 2>/dev/null  # after every step: a timeout keeps what ran
done
tar czf "$OUT/results.tgz" -C "$RES" . 2>/dev/null
printf '%s\n' "${summary[@]}"
