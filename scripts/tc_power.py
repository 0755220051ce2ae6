"""Clock and power under sustained GEMM load at N³ (H200 runs): each of cuBLAS FP32, cuBLAS TF32,
s12 (tf32) and s13 (tf32x3, stage="auto") runs back to back for SECONDS while NVML samples the SM
clock and the board power every 50 ms; per row the achieved TFLOPS (CUDA events over the whole
phase, no flush: a steady state), the median SM clock and power of the phase's second half, and
TFLOPS per GHz (the work per clock, which the clock does not move). Evidence for whether a stage
is bound by the power limit (clock drops below the maximum at the power cap) or by its issue rate.
    python3 scripts/tc_power.py [N]"""
import statistics
import sys
import threading
import time

import torch

import gemmlab

N = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
SECONDS = 4.0
torch.backends.cuda.matmul.allow_tf32 = False
try:
    import pynvml
except ImportError:  # nvidia-ml-py ships the module as pynvml
    pynvml = None


def sampler(stop, out):
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    while not stop.is_set():
        out.append((time.perf_counter(), pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                    pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0))
        time.sleep(0.05)


a = torch.rand(N, N, device="cuda") - 0.5
b = torch.rand(N, N, device="cuda") - 0.5
out = torch.empty(N, N, device="cuda")


def cublas_tf32():
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.mm(a, b, out=out)
    torch.backends.cuda.matmul.allow_tf32 = False


rows = [("cuBLAS FP32", lambda: torch.mm(a, b, out=out)),
        ("cuBLAS TF32", cublas_tf32),
        ("s12 tf32", lambda: gemmlab.matmul(a, b, out=out, stage="s12")),
        ("s13 tf32x3 (auto)", lambda: gemmlab.matmul(a, b, out=out, precision="tf32x3")),
        ("s11 ieee (auto)", lambda: gemmlab.matmul(a, b, out=out))]
if pynvml is not None:
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    limit = pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0
    max_clock = pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)
    print(f"{N}³: power limit {limit:.0f} W, max SM clock {max_clock} MHz")
print(f"{'row':20s} {'TFLOPS':>8s} {'SM MHz':>7s} {'W':>6s} {'TFLOPS/GHz':>10s} {'calls':>6s}")
for name, fn in rows:
    fn()
    torch.cuda.synchronize()
    samples, stop = [], threading.Event()
    th = threading.Thread(target=sampler, args=(stop, samples)) if pynvml is not None else None
    if th:
        th.start()
    t0 = time.perf_counter()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    calls = 0
    while time.perf_counter() - t0 < SECONDS:
        for _ in range(4):
            fn()
        calls += 4
        torch.cuda.synchronize()
    e1.record()
    torch.cuda.synchronize()
    if th:
        stop.set()
        th.join()
    ms = e0.elapsed_time(e1) / calls
    tflops = 2.0 * N ** 3 / (ms * 1e-3) / 1e12
    half = [s for s in samples if s[0] >= t0 + SECONDS / 2]
    mhz = statistics.median(s[1] for s in half) if half else float("nan")
    watts = statistics.median(s[2] for s in half) if half else float("nan")
    print(f"{name:20s} {tflops:8.1f} {mhz:7.0f} {watts:6.0f} {tflops / (mhz / 1000):10.1f} {calls:6d}", flush=True)
    time.sleep(1.0)  # let the clock recover between rows
