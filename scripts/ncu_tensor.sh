#!/usr/bin/env bash
# ncu on the tensor-core stages at 4096^3 (nn): tensor-pipe utilisation, stall reasons, shared-memory
# and L2 throughput. Clocks are left alone (--clock-control none). Used for docs/stages/s12-s13.md.
set -uo pipefail
export PYTHONPATH=.
cat > /tmp/tc_driver.py <<'PY'
import torch, gemmlab
a = torch.rand(4096, 4096, device="cuda"); b = torch.rand(4096, 4096, device="cuda")
for s in ("s12", "s13"):
    gemmlab.matmul(a, b, stage=s)
torch.cuda.synchronize()
PY
ncu --clock-control none -k regex:'gemmlab_s1[23]_' --launch-count 2 \
    --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum.per_second,lts__t_sector_hit_rate.pct,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum,gpu__time_duration.sum,dram__bytes_read.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,l1tex__throughput.avg.pct_of_peak_sustained_active \
    python3 /tmp/tc_driver.py
