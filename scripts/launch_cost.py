"""Host time of each piece of a small gemmlab call (H200 diagnostic): the driver launch of an
empty kernel and of the 64^3 plan's kernel, the plan's slot fill, the plan, the API call, the
torch op, and the torch pieces the API reads (data_ptr, stride, new_empty, the current stream),
each as the mean of 2000 calls after 200 warm-up calls (no synchronize in the loop).
    python3 scripts/launch_cost.py"""
import ctypes

import torch

import gemmlab
import gemmlab.torch_ops  # noqa: F401
from gemmlab import api, device
from gemmlab.bench.overhead import measure_calls
from gemmlab.jit import compiler, launch


def per_call(f, n=2000):
    """Host µs per call (gemmlab bench --overhead's loop: 200 warm-up calls, then n calls)."""
    return measure_calls(f, calls=n, repeats=1, warmup=200, sync=torch.cuda.synchronize)["host_us"]


a = torch.rand(64, 64, device="cuda"); b = torch.rand(64, 64, device="cuda"); out = torch.empty(64, 64, device="cuda")
plan, bound = api.prepare(a, b, out=out)
bound()  # fills the slots and encodes the tensor maps once
step = plan.steps[0]
stream = int(torch.cuda.current_stream().cuda_stream)
ck = compiler.compile_cubin('extern "C" __global__ void gemmlab_empty() {}', "gemmlab_empty", device.arch(0))
fn, ctx = launch.function(ck, 0, 0)
empty = launch.ParamBuffer([], [])
lib = launch.libcuda()
ptrs = {"a": a.data_ptr(), "b": b.data_ptr(), "c": None, "out": out.data_ptr()}
raw_stream = torch._C._cuda_getCurrentRawStream


class LaunchConfig(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.c_void_p), ("num_attrs", ctypes.c_uint)]


cfg = LaunchConfig((1, 1, 1), (32, 1, 1), 0, stream, None, 0)
cfg_addr = ctypes.addressof(cfg)
lib.cuLaunchKernelEx.argtypes = [ctypes.c_void_p] * 4
lib.cuLaunchKernelEx.restype = ctypes.c_int
ex = lib.cuLaunchKernelEx
fn_vp, cfg_vp, par_vp = ctypes.c_void_p(fn), ctypes.c_void_p(cfg_addr), ctypes.c_void_p(empty.address)
libc = ctypes.CDLL(None)
libc.labs.argtypes = [ctypes.c_long]
libc.labs.restype = ctypes.c_long
from cuda.bindings import driver
cu_fn = driver.CUfunction(fn)
cu_stream = driver.CUstream(stream)
cur = ctypes.c_void_p()
import itertools
turn = itertools.cycle([(a.clone(), b.clone()) for _ in range(8)])
rows = [
    ("ctypes call of libc labs (1 argument)", lambda: libc.labs(-3)),
    ("cuCtxGetCurrent (ctypes)", lambda: lib.cuCtxGetCurrent(ctypes.byref(cur))),
    ("cuLaunchKernelEx, empty kernel, ints", lambda: ex(cfg_addr, fn, empty.address, None)),
    ("cuLaunchKernelEx, empty kernel, c_void_p objects", lambda: ex(cfg_vp, fn_vp, par_vp, None)),
    ("cuda.bindings cuLaunchKernel, empty kernel", lambda: driver.cuLaunchKernel(cu_fn, 1, 1, 1, 32, 1, 1, 0, cu_stream, empty.address, 0)),
    ("cuLaunchKernel, empty kernel (ctypes)", lambda: lib.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, empty.address, None)),
    ("cuLaunchKernel, the 64^3 kernel (ctypes)", lambda: lib.cuLaunchKernel(step.fn, *step.grid, step.block, 1, 1, step.smem,
                                                                           stream, step.params.address, None)),
    ("Step.launch", lambda: step.launch(stream)),
    ("Step.fill", lambda: step.fill(ptrs, 1.0, 0.0)),
    ("Plan.run", lambda: plan.run(ptrs, 1.0, 0.0, stream)),
    ("prepared callable", bound),
    ("api._signature", lambda: api._signature(a, b, None, out, 1.0, 0.0, "auto", None, False, "ieee")),
    ("gemmlab.matmul(out=)", lambda: gemmlab.matmul(a, b, out=out)),
    ("gemmlab.matmul", lambda: gemmlab.matmul(a, b)),
    ("gemmlab.gemm", lambda: gemmlab.gemm(a, b)),
    ("torch.ops.gemmlab.mm", lambda: torch.ops.gemmlab.mm(a, b)),
    ("gemmlab.matmul, operands move", lambda: gemmlab.matmul(*next(turn))),
    ("torch.ops.gemmlab.mm, operands move", lambda: torch.ops.gemmlab.mm(*next(turn))),
    ("torch.mm, operands move", lambda: torch.mm(*next(turn))),
    ("torch.mm", lambda: torch.mm(a, b)),
    ("torch.mm(out=)", lambda: torch.mm(a, b, out=out)),
    ("a.new_empty((64, 64))", lambda: a.new_empty((64, 64))),
    ("torch.empty((64, 64), device=cuda)", lambda: torch.empty((64, 64), device="cuda")),
    ("a.data_ptr()", a.data_ptr),
    ("a.stride()", a.stride),
    ("a.shape", lambda: a.shape),
    ("a.get_device()", a.get_device),
    ("_cuda_getCurrentRawStream(0)", lambda: raw_stream(0)),
    ("empty Python lambda", lambda: None),
]
for name, f in rows:
    print(f"  {per_call(f):7.2f} us  {name}", flush=True)
tm = [t for s_ in plan.steps for t, _, _ in s_.tmaps]
print("tensor maps:", [(t.driver_encodes, t.address_word, t.verified) for t in tm])
out.fill_(float("nan")); plan.run(ptrs, 1.0, 0.0, stream); torch.cuda.synchronize()
print("plan output correct:", torch.allclose(out, a @ b, rtol=1e-4, atol=1e-4))
