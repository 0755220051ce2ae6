"""s13's register-split variants (RS: B split in registers; RA: A) on the H200: correctness against float64 on odd shapes,
then end-to-end times (pre-passes included, L2 flushed) against the pre-split s13 and cuBLAS FP32.
    python3 scripts/s13_rs_probe.py"""
import sys, time
import torch
torch.backends.cuda.matmul.allow_tf32 = False
from gemmlab import api, check
from gemmlab.bench.candidates import Operands
from probe_common import event_timer

RS = [{"block_m": 128, "block_n": 128, "b_regs": 1, "split_partials": 0, "stages": 3},
      {"block_m": 128, "block_n": 64, "b_regs": 1, "split_partials": 0, "stages": 4},
      {"block_m": 128, "block_n": 128, "a_regs": 1, "split_partials": 0, "stages": 3},
      {"block_m": 128, "block_n": 64, "a_regs": 1, "split_partials": 1, "stages": 4}]
t0 = time.time()
bad = 0
for cfg in RS:
    for (M, N, K) in [(129, 257, 33), (7, 9, 5), (300, 200, 1000), (1000, 1000, 1000)]:
        for lay in (("nn", "tn") if cfg.get("b_regs") else ("nn", "nt")):
            r = check.check_stage("s13", M, N, K, lay, config=cfg)
            if not r.correct:
                bad += 1
                print(f"WRONG s13 {cfg} {M}x{N}x{K} {lay}: {r}", flush=True)
r = check.check_stage("s13", 300, 200, 1000, "nn", config={**RS[0], "split_k": 3})
print(f"split_k 3: {r.correct} {r}")
print(f"correctness: {bad} wrong of {len(RS) * 8} ({time.time() - t0:.0f} s)", flush=True)

t_us = event_timer(0.15, 1.5, 10, 500)  # probe_common: CUDA events, L2 flushed, median
def t(fn):  # milliseconds
    return t_us(fn) / 1e3

shapes = [(128, 8192, 8192), (8192, 128, 8192), (256, 8192, 8192), (8192, 256, 8192), (1024, 1024, 1024), (4096, 4096, 4096),
          (1024, 1024, 16384), (2048, 2048, 2048)]
for (M, N, K) in shapes:
    ops = Operands.make(M, N, K, "nn", 0); ops.reference()
    fl_ = 2.0 * M * N * K
    cb = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
    line = [f"{M}x{N}x{K} nn: cuBLAS {cb*1e3:.1f} us {fl_/cb/1e9:.1f} TF"]
    tag = lambda c: ("rs" if c.get("b_regs") else "ra") + f"{c['block_m']}x{c['block_n']}"  # noqa: E731
    for name, cfg in [("auto", None), ("s13", {})] + [(tag(c), c) for c in RS] + \
                     [(tag(c) + "/s2", {**c, "split_k": 2}) for c in RS]:
        try:
            ops.poison()
            kw = {"precision": "tf32x3"} if cfg is None else {"stage": "s13", "config": cfg}
            plan, fn = api.prepare(ops.a, ops.b, out=ops.out, **kw); fn(); torch.cuda.synchronize()
            ok = ops.check_out().correct
            ms = t(fn)
            v = plan.variant if cfg is None else ""
            line.append(f"{name}{v if v else ''} {fl_/ms/1e9:.1f} TF x{cb/ms:.2f}{'' if ok else ' WRONG'}")
        except Exception as e:
            line.append(f"{name} error {type(e).__name__}: {str(e)[:80]}")
    print(" | ".join(line), flush=True)
    del ops
