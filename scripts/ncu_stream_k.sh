#!/usr/bin/env bash
# ncu on s11 data-parallel against stream-K at 128x256 (scripts/ncu_stream_k.py): time, FMA pipe,
# instructions, L2 hit rate, DRAM bytes, SM active cycles, per kernel (the second launch of each).
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M="gpu__time_duration.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,lts__t_sector_hit_rate.pct,dram__bytes.sum,sm__cycles_active.avg,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct"
for s in "$@"; do
  echo "=== ncu $s"
  timeout 150 $NCU --clock-control none -k regex:gemmlab_s11 --metrics $M --csv python3 scripts/ncu_stream_k.py $s 2>/dev/null \
    | grep -v "^==" | awk -F'","' 'NR>1 {print $5" | "$(NF-2)" | "$NF}' | sed 's/"//g' | sed -E 's/gemmlab_s11_tma_bm128_bn256_bk32_wm64_wn64_ku4_as0_stages4_gm8_pw0_cs0_mb1_akm1_bnm1/s11/' | cut -c1-160
done
