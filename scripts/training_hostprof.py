"""Where a training step's host time goes (H200 diagnostic): the TransformerEncoder of
gemmlab.bench.training under cProfile, for torch compiled, nn.Linear compiled and enable() eager:
steps' wall time, how many gemmlab plans were built during them (plan-cache misses), the
functions with the most own time.   python3 scripts/training_hostprof.py"""
import cProfile
import pstats
import time

import torch

import gemmlab.torch as gtorch
from gemmlab import api
from probe_common import TrainingModel

tm = TrainingModel()
fresh = tm.fresh
builds = [0]
_orig_build = api._build_entry


def counting_build(*a, **k):
    builds[0] += 1
    return _orig_build(*a, **k)


api._build_entry = counting_build


def run(name, model, fwd, enable=False, n=10):
    one = tm.step(model, fwd)
    with (gtorch.enable(strict=True) if enable else gtorch.disable()):
        for i in range(8):
            one(i)
        torch.cuda.synchronize()
        b0 = builds[0]
        t0 = time.perf_counter()
        for i in range(n):
            one(i)
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / n * 1e3
        b1 = builds[0]
        pr = cProfile.Profile()
        pr.enable()
        for i in range(n):
            one(i)
        torch.cuda.synchronize()
        pr.disable()
    print(f"== {name}: wall {wall:.2f} ms/step (no profiler); plans built in {n} steps: {b1 - b0}", flush=True)
    st = pstats.Stats(pr)
    st.sort_stats("tottime").print_stats(18)
    st.sort_stats("cumulative").print_stats(25)


torch._dynamo.reset()
m = fresh(); run("torch compiled", m, torch.compile(m, fullgraph=True))
m = fresh(True); run("nn.Linear compiled", m, torch.compile(m, fullgraph=True))
m = fresh(); run("enable() eager", m, m, enable=True)
m = fresh(); run("torch eager", m, m)
