#!/usr/bin/env bash
# ncu for the two misses docs/models.md leaves open ("Against the counters"):
#  1. L2 read sectors below the traffic model (s05-s07, s09, s10, s12): the L2 request coalescer's
#     (lrc__) counters beside lts__t_sectors_srcunit_tex_op_read, the L1 side of the global loads;
#  2. s04's shared-load wavefronts above the bank model: per SASS instruction (SourceCounters).
# Clocks left alone; caches flushed per pass (ncu's default). Usage: bash scripts/ncu_l2_banks.sh DIR
set -uo pipefail
export PYTHONPATH=.
D=${1:-/tmp/ncu18}; mkdir -p "$D"
NCU=${GEMMLAB_NCU:-ncu}
job() { printf '{"stage": "%s", "M": %d, "N": %d, "K": %d, "layout": "nn"}' "$1" "$2" "$2" "$2"; }
$NCU --query-metrics > "$D/query_metrics.txt" 2>&1
grep -E "^(lrc__|lts__t_(sectors|requests)_srcunit_tex )" "$D/query_metrics.txt" | cut -c1-150 | head -40
jobs="[$(job s05 4096), $(job s06 4096), $(job s07 4096), $(job s08a 4096), $(job s09 4096), $(job s10 4096), $(job s11 4096), $(job s12 4096)]"
M=lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,dram__bytes_read.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,l1tex__m_xbar2l1tex_read_sectors.sum,gpu__time_duration.sum
echo "=== L2 / lrc counters, 4096^3 ($(date +%T))"
$NCU --clock-control none -k regex:'^gemmlab_s[0-9]' --metrics "$M,regex:^lrc__" --csv --page raw --print-units base \
    python3 -m gemmlab.analysis.profile --child "$jobs" > "$D/l2_lrc_4096.csv" 2> "$D/l2_lrc_4096.err"
echo "rc $? ; $(wc -l < "$D/l2_lrc_4096.csv") lines"; tail -3 "$D/l2_lrc_4096.err"
echo "=== s04 per-instruction shared wavefronts, 2048^3 ($(date +%T))"
$NCU --clock-control none -k regex:'^gemmlab_s04' -c 1 --section SourceCounters \
    --metrics smsp__sass_inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum \
    -f -o "$D/s04" python3 -m gemmlab.analysis.profile --child "[$(job s04 2048)]" > "$D/s04.log" 2>&1
echo "rc $?"; tail -2 "$D/s04.log"
$NCU -i "$D/s04.ncu-rep" --page source --csv --print-source sass > "$D/s04_source_sass.csv" 2> "$D/s04_source.err" \
  || $NCU -i "$D/s04.ncu-rep" --page source --csv > "$D/s04_source_sass.csv" 2>> "$D/s04_source.err"
echo "source rows $(wc -l < "$D/s04_source_sass.csv")"; head -c 600 "$D/s04_source.err"
$NCU -i "$D/s04.ncu-rep" --page raw --csv --print-units base > "$D/s04_raw.csv" 2>/dev/null
