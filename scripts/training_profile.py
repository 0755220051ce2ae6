"""Where a training step's GPU time goes (H200 diagnostic for the training benchmark): the
TransformerEncoder of gemmlab.bench.training, per run (torch eager, enable() eager, torch compiled,
nn.Linear compiled), a few steps under torch.profiler after warm-up: the step's wall time, the GPU
time of its kernels (summed; less than the wall time where the GPU waits for the host) and the
kernels that take the most of it.   python3 scripts/training_profile.py [d_model]"""
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

import gemmlab.torch as gtorch
from probe_common import TrainingModel

tm = TrainingModel(int(sys.argv[1]) if len(sys.argv) > 1 else 512)
fresh = tm.fresh


def steps(model, fwd, n):
    one = tm.step(model, fwd)
    for i in range(8):
        one(i)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for i in range(n):
            one(i)
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / n
    ev = [e for e in prof.key_averages() if e.device_time_total > 0]
    total = sum(e.device_time_total for e in ev) / n
    return wall * 1e3, total / 1e3, sorted(ev, key=lambda e: -e.device_time_total)


def report(name, model, fwd, enable=False):
    ctx = gtorch.enable(strict=True) if enable else gtorch.disable()
    with ctx:
        wall, gpu, ev = steps(model, fwd, 5)
    print(f"== {name}: wall {wall:.2f} ms/step, GPU kernels {gpu:.2f} ms/step", flush=True)
    for e in ev[:14]:
        print(f"   {e.device_time_total / 5e3:7.3f} ms  {e.count // 5:4d}x  {e.key[:110]}")


m = fresh(); report("torch eager", m, m)
m = fresh(); report("enable() eager", m, m, enable=True)
torch._dynamo.reset()
m = fresh(); f = torch.compile(m, fullgraph=True); report("torch compiled", m, f)
report("compiled + enable()", m, f, enable=True)
m = fresh(True); f = torch.compile(m, fullgraph=True); report("nn.Linear compiled", m, f)
