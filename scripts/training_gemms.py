"""The GEMMs one training step sends to gemmlab (H200 diagnostic for the training benchmark): the
TransformerEncoder of gemmlab.bench.training with gemmlab.nn.Linear under torch.compile; every
call that reaches gemmlab's operators in one step is recorded (operator, shapes, strides, alpha,
beta), then each distinct call is timed on tensors of the same shapes and strides through gemmlab
and through torch (mm / addmm on the same views), with and without an L2 flush, next to the plan
gemmlab runs. (enable() reaches gemmlab below the operators: it is not recorded here.)
    python3 scripts/training_gemms.py"""
from collections import Counter

import torch

import gemmlab.torch as gtorch
import gemmlab.torch_ops as ops
from gemmlab import api
from probe_common import TrainingModel, event_timer, strided_randn as make

tm = TrainingModel()
calls = Counter()
_orig = ops._run


def spec(t):
    return None if t is None else (tuple(t.shape), tuple(t.stride()))


def recording(op, a, b, c, alpha, beta, precision):
    calls[(op, spec(a), spec(b), spec(c), alpha, beta, precision)] += 1
    return _orig(op, a, b, c, alpha, beta, precision)


m = tm.fresh(True)
fwd = torch.compile(m, fullgraph=True)
one = tm.step(m, fwd)
with gtorch.disable():
    for i in range(4):
        one(i)
    torch.cuda.synchronize()
    ops._run = recording
    one(4)
    torch.cuda.synchronize()
    ops._run = _orig


flushed, plain = event_timer(), event_timer(flushed=False)


print(f"nn.Linear compiled: {sum(calls.values())} gemmlab calls in one step, {len(calls)} distinct")
print(f"{'n':>2} {'op':6} {'M x N x K':16} {'a stride':12} {'b stride':12} {'c':10} "
      f"{'gl us':>7} {'cb us':>7} {'ratio':>6} {'gl(fl)':>7} {'cb(fl)':>7} {'ratio':>6}  plan")
tot_g = tot_t = 0.0
for (op, sa, sb, sc, alpha, beta, prec), n in sorted(calls.items(), key=lambda kv: str(kv[0])):
    a, b, c = make(sa), make(sb), make(sc)
    M, K = a.shape[-2:]
    N = b.shape[-1]
    out = torch.empty(M, N, device="cuda")
    plan, launch = api.prepare(a, b, c, alpha, beta, out=out, precision=prec)
    if c is None:
        ref = lambda: torch.mm(a, b, out=out)  # noqa: E731
    else:
        ref = lambda: torch.addmm(c, a, b, beta=beta, alpha=alpha, out=out)  # noqa: E731
    g, t = plain(launch), plain(ref)
    gf, tf = flushed(launch), flushed(ref)
    tot_g += n * g
    tot_t += n * t
    cdesc = "-" if sc is None else f"{sc[1]}"
    summ = plan.summary.split(";")[0].split("->")[1].strip() if plan is not None else "-"
    print(f"{n:2d} {op:6} {M}x{N}x{K:<8} {str(sa[1]):12} {str(sb[1]):12} {cdesc:10} {g:7.1f} {t:7.1f} {t / g:6.3f} "
          f"{gf:7.1f} {tf:7.1f} {tf / gf:6.3f}  {summ[:120]}")
print(f"per step: gemmlab {tot_g / 1e3:.3f} ms, torch {tot_t / 1e3:.3f} ms on the same calls "
      f"(torch/gemmlab {tot_t / tot_g:.3f})")
