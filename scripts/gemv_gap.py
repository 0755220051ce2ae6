"""Where the skinny kernel's time outside the kernel goes (H200 runs): CUDA-event times of cuBLAS and
of skinny configs with large and small shared memory, after an L2 flush that writes (the benchmark's
zero_: L2 left dirty) and after one that only reads, and with the function's preferred shared-memory
carveout set to the maximum. ncu had the kernels at 21.7 us (ours) and 20.6 us (cuBLAS) at
1x4096x4096, the events at 28.0 and 23.5.   python3 scripts/gemv_gap.py [M N K]"""
import sys
import torch
torch.backends.cuda.matmul.allow_tf32 = False
from cuda.bindings import driver
from gemmlab import api
from gemmlab.bench.candidates import Operands
from gemmlab.bench.timing import Policy, L2Flush, FLUSH_BYTES, measure

M, N, K = (int(x) for x in sys.argv[1:4]) if len(sys.argv) > 3 else (1, 4096, 4096)
pol = Policy(target_seconds=0.05, max_seconds=0.5, min_reps=20, max_reps=500)
write_flush = L2Flush()
buf = torch.empty(FLUSH_BYTES // 4, device="cuda")
acc = torch.empty((), device="cuda")
read_flush = lambda: acc.copy_(buf.sum())  # noqa: E731
def t(fn, fl):
    fn(); torch.cuda.synchronize(); return measure(fn, pol, fl).summary.median * 1e3
ops = Operands.make(M, N, K, "nn", 0); ops.reference()
rows = [("cuBLAS", lambda: torch.mm(ops.a, ops.b, out=ops.out), None)]
u8 = {"small_dim": 1, "small": 1, "algo": 1, "block_big": 32, "threads": 256, "k_groups": 32, "unroll": 8, "g_stages": 3}
cfgs = [None, {"evict_first": 0}, u8, {**u8, "evict_first": 0},
        {"small_dim": 1, "small": 1, "algo": 1, "block_big": 32, "threads": 512, "k_groups": 64, "unroll": 4, "g_stages": 3},
        {"small_dim": 1, "small": 1, "algo": 1, "block_big": 64, "threads": 512, "k_groups": 32, "unroll": 8, "g_stages": 3,
         "split_k": 2}]
for cfg in cfgs:
    plan, fn = api.prepare(ops.a, ops.b, out=ops.out, stage="auto" if cfg is None else "skinny", config=cfg)
    if cfg is not None and len(cfg) == 1:  # auto's resolution with one key changed
        plan, fn = api.prepare(ops.a, ops.b, out=ops.out, stage="skinny", config={**auto_cfg, **cfg})
    if cfg is None:
        auto_cfg = {**plan.choice.config, "split_k": plan.choice.split_k}
    fn(); torch.cuda.synchronize()
    assert ops.check_out().correct
    rows.append((("auto " if cfg is None else "") + f"split {plan.choice.split_k} smem {plan.main.smem/1024:.0f} KB {plan.choice.config}", fn, plan))
print(f"{M}x{N}x{K}: event times in us (median), after a writing flush / a reading flush / writing flush + carveout 100")
for name, fn, plan in rows:
    w, r = t(fn, write_flush), t(fn, read_flush)
    c = "-"
    if plan is not None:
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
        (err,) = driver.cuFuncSetAttribute(driver.CUfunction(plan.main.fn), attr, 100)
        c = f"{t(fn, write_flush):6.1f}" if err == driver.CUresult.CUDA_SUCCESS else str(err)
    print(f"  {w:6.1f} {r:6.1f} {c:>6}  {name}", flush=True)
