"""The skinny kernel's config space on a few GEMV shapes (H200 runs): every config of a small grid
(algo 1 with M small: block_big, threads, unroll, cross-block split-K; with GEMMLAB_PROBE_GSTAGES=1
the GEMV geometry's threads x unroll x g_stages at block_big 32 instead) timed end to end with L2
flushed, against the config the dispatcher chooses and cuBLAS. Prints the fastest per shape.
    python3 scripts/skinny_configs.py [MxNxK[:layout],...]"""
import itertools, math, os, sys, time
import torch
torch.backends.cuda.matmul.allow_tf32 = False
from gemmlab import api
from gemmlab.bench.candidates import Operands
from probe_common import event_timer

t_us = event_timer(0.02, 0.3, 10, 300)  # probe_common: CUDA events, L2 flushed, median
def t(fn):  # milliseconds
    return t_us(fn) / 1e3

shapes = sys.argv[1].split(",") if len(sys.argv) > 1 else ["1x4096x4096:nn", "1x3000x5000:nn", "1x6144x2048:nn"]
for spec in shapes:
    dims, _, lay = spec.partition(":"); lay = lay or "nn"
    M, N, K = (int(x) for x in dims.split("x"))
    ops = Operands.make(M, N, K, lay, 0); ops.reference()
    cb = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
    plan, fn = api.prepare(ops.a, ops.b, out=ops.out, stage="auto"); fn()
    auto = t(fn)
    print(f"== {M}x{N}x{K} {lay}: cuBLAS {cb*1e3:.1f} us; auto {auto*1e3:.1f} us ({cb/auto:.3f}x) "
          f"{plan.choice.config} split {plan.choice.split_k}", flush=True)
    rows, t0 = [], time.time()
    gs_mode = bool(os.environ.get("GEMMLAB_PROBE_GSTAGES"))
    grid = (itertools.product((32,), (128, 256, 512), (4, 8, 16), (1,), (3, 4, 5, 6)) if gs_mode else
            itertools.product((32, 64, 128, 256, 512, 1024), (256, 512, 1024), (2, 4, 8), (1, 2, 4, 8, 16, 32), (0,)))
    for bb, th, un, sp, gs in grid:
        if bb // 4 > th or th % (bb // 4):
            continue
        blocks = math.ceil(N / bb) * sp
        if not 100 <= blocks <= 1100 or K // sp < 128:
            continue
        cfg = {"small_dim": 1, "small": 1, "algo": 1, "block_big": bb, "threads": th, "k_groups": th // (bb // 4),
               "unroll": un, "split_k": sp, **({"g_stages": gs} if gs else {})}
        try:
            ops.poison(); p, f = api.prepare(ops.a, ops.b, out=ops.out, stage="skinny", config=cfg); f()
            torch.cuda.synchronize()
            ok = ops.check_out().correct
            ms = t(f)
        except Exception as e:
            print(f"   skip {cfg}: {type(e).__name__}: {str(e)[:100]}", flush=True); continue
        rows.append((ms, cfg, ok, p.choice.config.get("g_stages"), p.choice.config.get("k_chunk")))
    rows.sort(key=lambda r: r[0])
    print(f"   {len(rows)} configs in {time.time()-t0:.0f} s; fastest:", flush=True)
    for ms, cfg, ok, gs, kc in rows[:10 if gs_mode else 6]:
        print(f"   {ms*1e3:6.1f} us {cb/ms:5.3f}x ok={ok} bb{cfg['block_big']} t{cfg['threads']} kg{cfg['k_groups']} "
              f"u{cfg['unroll']} split{cfg['split_k']} gs{gs} kc{kc}", flush=True)
    del ops
