"""The skinny kernel's L2 prefetch size (config g_prefetch: 0, 64, 128, 256 bytes on the big
operand's 16-byte cp.async copies) on GEMV-like shapes (H200 runs): stage="auto" as chosen, the
same config with each prefetch size, and cuBLAS, event times with L2 flushed (the benchmark's
writing flush), interleaved over ROUNDS rounds so that clock drift hits every row alike; the
median of the rounds' medians is printed, with the ratio to cuBLAS.
    python3 scripts/gemv_prefetch.py [MxNxK[:layout],...]"""
import statistics
import sys

import torch

from gemmlab import api
from gemmlab.bench.candidates import Operands
from probe_common import event_timer

ROUNDS = 3
t = event_timer(0.03, 0.3, 20, 400)
shapes = sys.argv[1].split(",") if len(sys.argv) > 1 else [
    "1x4096x4096:nn", "1x4096x4096:tn", "1x6144x2048:nn", "1x8192x8192:nn", "4096x1x4096:nn",
    "8x4096x4096:nn", "16x8192x8192:nn", "1x11008x4096:nn", "4x4096x11008:nt"]
print("shape        layout  row                          us (median of rounds)  cuBLAS/row")
for spec in shapes:
    dims, _, lay = spec.partition(":")
    lay = lay or "nn"
    M, N, K = (int(x) for x in dims.split("x"))
    ops = Operands.make(M, N, K, lay, 0)
    ops.reference()
    plan, auto_fn = api.prepare(ops.a, ops.b, out=ops.out, stage="auto")
    auto_cfg = dict(plan.choice.config)
    rows = [("cuBLAS", lambda: torch.mm(ops.a, ops.b, out=ops.out)), (f"auto (g_prefetch {auto_cfg.get('g_prefetch')})", auto_fn)]
    if plan.choice.spec.id == "skinny":
        for pf in (64, 128, 256):
            cfg = {**auto_cfg, "g_prefetch": pf, "split_k": plan.choice.split_k}
            _, fn = api.prepare(ops.a, ops.b, out=ops.out, stage="skinny", config=cfg)
            rows.append((f"g_prefetch {pf}", fn))
    for name, fn in rows:
        ops.poison()
        fn()
        torch.cuda.synchronize()
        assert ops.check_out().correct, (spec, name)
    times = {name: [] for name, _ in rows}
    for _ in range(ROUNDS):
        for name, fn in rows:
            times[name].append(t(fn))
    cb = statistics.median(times["cuBLAS"])
    for name, _ in rows:
        us = statistics.median(times[name])
        print(f"{dims:12s} {lay:6s}  {name:28s} {us:8.2f}  {' '.join(f'{x:.1f}' for x in times[name]):20s} {cb / us:6.3f}",
              flush=True)
    print(f"   auto config: {auto_cfg} split {plan.choice.split_k}", flush=True)
    del ops
