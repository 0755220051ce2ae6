"""Where the eager step under gemmlab.torch.enable() loses to torch's (H200 diagnostic for the
training benchmark's enable() row): the TransformerEncoder of gemmlab.bench.training in eager mode.

1. Per step: the host's issue time (the queue empty before the step, the time until the step's
   Python returns: nothing waits on the GPU inside a step of ~400 launches) and the step's time
   back to back, for torch and under enable().
2. Per distinct GEMM that enable() receives in one step (recorded below the aten kernels): the
   GPU time back to back (operands as L2-warm as in the step) through torch and through gemmlab,
   the kernels gemmlab launches, the host time of one call (queue empty) both ways, and the GPU
   time of the plan-level alternatives (no B repack, no A transpose, cluster reduce, other
   split-K) that remove launches.
    python3 scripts/enable_probe.py"""
import statistics
import time
from collections import Counter

import torch

import gemmlab
import gemmlab.torch as gtorch
from gemmlab import api
from probe_common import TrainingModel, event_timer, strided_randn as make

tm = TrainingModel()
plain = event_timer(flushed=False)


def host_us(fn, n=30):
    """Median host time of one call with the GPU queue empty before it."""
    ts = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    return statistics.median(ts) * 1e6


def steps(enable: bool):
    m = tm.fresh()
    one = tm.step(m, m)
    with (gtorch.enable(strict=True) if enable else gtorch.disable()):
        for i in range(6):
            one(i)
        issue = host_us(lambda: one(7), n=20) / 1e3
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(30):
            one(i)
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / 30 * 1e3
    return issue, wall


print("== per step (ms): host issue time (queue empty before), back-to-back step time")
rows = {}
for r in range(2):
    for name, en in (("torch eager", False), ("enable() eager", True)):
        rows.setdefault(name, []).append(steps(en))
for name, v in rows.items():
    print(f"  {name:16} issue {' '.join(f'{x[0]:6.2f}' for x in v)}   step {' '.join(f'{x[1]:6.2f}' for x in v)}")

# ---- the GEMMs of one step ----------------------------------------------------------------------
calls = Counter()
_orig = gtorch._gemm


def spec(t):
    return None if t is None else (tuple(t.shape), tuple(t.stride()))


def recording(a, b, c, alpha, beta, out, precision):
    calls[(spec(a), spec(b), spec(c), float(alpha), float(beta), out is not None)] += 1
    return _orig(a, b, c, alpha, beta, out, precision)


m = tm.fresh()
one = tm.step(m, m)
with gtorch.enable(strict=True):
    for i in range(3):
        one(i)
    torch.cuda.synchronize()
    gtorch._gemm = recording
    one(3)
    torch.cuda.synchronize()
    gtorch._gemm = _orig


def layout(sa, sb):
    return ("t" if sa[1][-1] != 1 else "n") + ("t" if sb[1][-1] != 1 else "n")


print(f"\n== the {sum(calls.values())} GEMMs of one step that enable() receives, {len(calls)} distinct "
      f"(GPU us back to back; host us per call, queue empty)")
print(f"{'n':>2} {'M x N x K':16} {'lay':3} {'c':5} {'torch':>7} {'gemmlab':>7} {'t/g':>6} {'launch':>6} "
      f"{'h torch':>7} {'h enab':>7}  alternatives (GPU us)   plan")
tot = Counter()
for (sa, sb, sc, alpha, beta, has_out), n in sorted(calls.items(), key=lambda kv: str(kv[0])):
    a, b, c = make(sa), make(sb), make(sc)
    M, K = sa[0]
    N = sb[0][1]
    out = torch.empty(M, N, device="cuda")
    if c is None:
        ref = lambda: torch.mm(a, b)  # noqa: E731
    else:
        ref = lambda: torch.addmm(c, a, b, beta=beta, alpha=alpha)  # noqa: E731
    with gtorch.disable():
        t_gpu, t_host = plain(ref), host_us(ref)
    with gtorch.enable(strict=True):
        g_gpu, g_host = plain(ref), host_us(ref)
    plan, _ = api.prepare(a, b, c, alpha, beta, out=out)
    alts = []
    for cfg in ({"repack": 0}, {"a_transpose": 0}, {"cluster_reduce": True}, {"split_k": 1}, {"split_k": 2},
                {"split_k": 4}, {"split_k": 8}):
        try:
            p2, launch = api.prepare(a, b, c, alpha, beta, out=out, config=cfg)
        except Exception as e:  # an override the chosen stage does not take
            alts.append(f"{cfg}: {type(e).__name__}")
            continue
        if p2 is not None and p2.kernels != plan.kernels:
            alts.append(f"{next(iter(cfg.items()))[0]}={next(iter(cfg.values()))}:{plain(launch):.1f}/{len(p2.steps)}")
    tot["torch"] += n * t_gpu
    tot["gemmlab"] += n * g_gpu
    tot["h torch"] += n * t_host
    tot["h enable"] += n * g_host
    tot["launches"] += n * len(plan.steps)
    summ = plan.summary.split(";")[0].split("->")[1].strip() if plan is not None else "-"
    print(f"{n:2d} {M}x{N}x{K:<8} {layout(sa, sb):3} {'-' if sc is None else 'bias':5} {t_gpu:7.1f} {g_gpu:7.1f} "
          f"{t_gpu / g_gpu:6.3f} {len(plan.steps):6d} {t_host:7.1f} {g_host:7.1f}  {' '.join(alts)}   {summ[:90]}")
print(f"per step: GPU torch {tot['torch'] / 1e3:.3f} ms, gemmlab {tot['gemmlab'] / 1e3:.3f} ms "
      f"(torch/gemmlab {tot['torch'] / tot['gemmlab']:.3f}); host torch {tot['h torch'] / 1e3:.3f} ms, "
      f"enable() {tot['h enable'] / 1e3:.3f} ms; gemmlab launches {tot['launches']}")
