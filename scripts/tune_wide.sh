#!/usr/bin/env bash
# Tune the issue-16 suite ("wide", gemmlab/bench/suites.py) on the H200, each entry in its own
# layout: one `gemmlab tune --ship` per layout over that layout's entries, with a share of the
# wall-time budget each (BUDGET seconds in all, default 480), the model's TOP predictions per shape
# (default 5) besides the default tile and stage="auto"; the entries in reverse suite order
# (batched, mid-size, odd, deep K, tall, decode, transformer, then the squares the tables hold
# already), so that a spent budget leaves the squares untuned. Logs to $RES/tune-wide-<layout>.txt.
set -uo pipefail
export PYTHONPATH=${PYTHONPATH:-.}
RES=${RES:-/tmp/res}
mkdir -p "$RES"
BUDGET=${BUDGET:-480}
TOP=${TOP:-5}
LAYOUTS=${LAYOUTS:-"nn nt tn tt"}
n=$(echo $LAYOUTS | wc -w)
for lay in $LAYOUTS; do
  shapes=$(python3 -c "
from gemmlab.bench import suites
print(','.join(suites.text(e[:4]) for e in reversed(suites.LAYOUT_SUITES['wide']) if e[4] == '$lay'))")
  echo "=== tune wide $lay: $shapes ($(date +%T))"
  python3 -m gemmlab tune --shapes "$shapes" --layouts "$lay" --ship --budget $((BUDGET / n)) --top "$TOP" \
    > "$RES/tune-wide-$lay.txt" 2> "$RES/tune-wide-$lay.err"
  tail -3 "$RES/tune-wide-$lay.txt"
done
