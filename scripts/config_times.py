"""Kernel times of a stage under several configs at one shape (CUDA events, L2 flushed, median,
us; each checked against float64 first):
    python3 config_times.py M N K layout stage 'json config' ['json config' ...]"""
import json
import sys

from gemmlab.bench.candidates import Operands
from probe_common import checked_timer, event_timer

M, N, K = map(int, sys.argv[1:4])
layout, stage = sys.argv[4], sys.argv[5]
timed = checked_timer(event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=200))
ops = Operands.make(M, N, K, layout)
ops.reference()
for text in sys.argv[6:]:
    us, what = timed(ops, stage, json.loads(text))
    print(f"{M}x{N}x{K} {layout} {us:9.1f} us  {text}  {what[:100]}", flush=True)
