#!/usr/bin/env bash
# ncu on gemmlab auto and cuBLAS (torch.mm) for given shapes: every kernel each runs, with its
# time, DRAM bytes and throughput, grid and occupancy (raw CSV kept). Usage: ncu_vs_cublas.sh DIR "M N K" ...
set -uo pipefail
export PYTHONPATH=.
D=$1; shift; mkdir -p "$D"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,launch__shared_mem_per_block_dynamic,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
# every shape's kernels compiled first, in parallel (one process each; the JIT cache is on disk), so
# that the profiled runs below do not each wait on NVRTC
for s in "$@"; do python3 scripts/ncu_short.py $s > /dev/null 2>&1 & done; wait
for s in "$@"; do
  f="$D/ncu-$(echo $s | tr ' ' x).csv"
  timeout 120 $NCU --clock-control none --profile-from-start off --metrics $M --csv --page raw --print-units base \
    python3 scripts/ncu_short.py $s > "$f" 2>/dev/null
  python3 - "$f" "$s" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
hi = next(i for i, r in enumerate(rows) if r[0] == "ID")
h = rows[hi]; data = rows[hi + 2:]
col = {c: h.index(c) for c in h}
def v(r, c):
    x = r[col[c]].replace(",", "") if c in col else ""
    try: return float(x)
    except ValueError: return float("nan")
print(f"=== {sys.argv[2]}")
for r in data:
    name = r[col["Kernel Name"]][:96]
    print(f"  {name:96s} {v(r,'gpu__time_duration.sum')/1e3:8.2f} us  DRAM rd {v(r,'dram__bytes_read.sum')/1e6:7.1f} MB wr {v(r,'dram__bytes_write.sum')/1e6:6.1f} MB "
          f"{v(r,'dram__throughput.avg.pct_of_peak_sustained_elapsed'):5.1f}%  grid {v(r,'launch__grid_size'):6.0f} x {v(r,'launch__block_size'):4.0f} "
          f"regs {v(r,'launch__registers_per_thread'):3.0f} smem {v(r,'launch__shared_mem_per_block_dynamic')/1e3:6.1f} KB warps {v(r,'sm__warps_active.avg.pct_of_peak_sustained_active'):5.1f}% "
          f"fma {v(r,'sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active'):5.1f}% "
          f"issue {v(r,'smsp__issue_active.avg.pct_of_peak_sustained_active'):5.1f}% inst {v(r,'smsp__inst_executed.sum')/1e6:7.2f}M lsb {v(r,'smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio'):5.2f}")
PY
done
