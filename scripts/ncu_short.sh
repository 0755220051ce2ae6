#!/usr/bin/env bash
# ncu on gemmlab auto and cuBLAS for the shapes where auto falls short (FMA pipe, DRAM, occupancy).
#   bash scripts/ncu_short.sh ["M N K [layout [batch]]" ...]   (default: three 2026-11 shortfalls)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M="gpu__time_duration.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
[ $# -gt 0 ] || set -- "8192 128 8192" "1 4096 4096" "2048 2048 2048"
for s in "$@"; do
  echo "=== ncu $s"
  # shellcheck disable=SC2086
  timeout 120 $NCU --clock-control none --profile-from-start off --metrics $M --csv python3 scripts/ncu_short.py $s 2>/dev/null | grep -v "^==" | awk -F'","' '{print $5" | "$(NF-2)" | "$NF}' | sed 's/"//g' | cut -c1-200
done
