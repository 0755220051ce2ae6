#!/usr/bin/env bash
# ncu on s10's 4-byte path against cuBLAS on one unaligned shape: where the issue slots go
# (warp stall reasons per issued instruction, instructions executed, shared-memory wavefronts).
# Stall reasons under 0.05 cycles an issued instruction are left out.
#   bash scripts/ncu_s10_deep.sh "M N K layout batch" ['{"block_m": 64, ...}' ...]
# The first run is auto with cuBLAS beside it; each json config after it runs s10 alone.
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M="gpu__time_duration.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,launch__registers_per_thread,launch__grid_size,launch__block_size"
shape=$1; shift
run() {
  # shellcheck disable=SC2086
  timeout 150 $NCU --clock-control none --profile-from-start off --metrics "$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" --csv \
    python3 scripts/ncu_short.py $shape "$@" 2>/dev/null | grep -v "^==" \
    | awk -F'","' '{print $5" | "$(NF-2)" | "$NF}' | sed 's/"//g' | grep -v -E "\| (0(\.0*|\.0[0-4][0-9]*)?|n/a),?$" \
    | sed -E "s/^[^ ]*(sm80_xmma|cutlass)[^ ]*/cublas/" | cut -c1-230
}
echo "=== $shape: auto and cuBLAS"; run
for c in "$@"; do echo "=== $shape: s10 $c"; run --stage s10 --config "$c"; done
