"""Small GEMMs on the H200: each stage's GPU time per launch (launches queued behind a sleeping
kernel, so the GPU runs them back to back whatever the host's pace) and the host time per call of
a prepared launch, against torch.mm.   python3 scripts/small_kernel_times.py"""
import time
import torch
torch.backends.cuda.matmul.allow_tf32 = False
from gemmlab import api

def gpu_us(f, n=100):
    for _ in range(10): f()
    torch.cuda.synchronize()
    torch.cuda._sleep(int(2e7))  # ~10 ms: the queue fills behind it
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n): f()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) * 1e3 / n

def host_us(f, n=300):
    for _ in range(20): f()
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(n): f()
    t1 = time.perf_counter(); torch.cuda.synchronize()
    return 1e6 * (t1 - t0) / n

for n in (64, 128, 256):
    a = torch.rand(n, n, device="cuda"); b = torch.rand(n, n, device="cuda"); out = torch.empty(n, n, device="cuda")
    rows = [("torch.mm(out=)", lambda: torch.mm(a, b, out=out), "")]
    for st in ("auto", "s03", "s05", "s07", "s08d", "s09", "s10", "s11"):
        try:
            plan, fn = api.prepare(a, b, out=out, stage=st)
            rows.append((st, fn, f"{plan.choice.spec.id} split {plan.choice.split_k} {plan.kernels[-1][:50]}"))
        except Exception as ex:
            print(f"  {n}^3 {st}: {type(ex).__name__}: {str(ex)[:80]}")
    for name, f, what in rows:
        print(f"  {n}^3 {name:15s} GPU {gpu_us(f):6.2f} us/launch  host {host_us(f):6.2f} us/call  {what}", flush=True)
