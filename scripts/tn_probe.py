"""Would transposing a row-major A (and a K-major B) into the tn layout pay on the SIMT stages?
(H200 probe.) Per shape and call layout: cuBLAS on the call's operands, gemmlab auto on them, gemmlab
auto on tn copies of them (A M-contiguous, B row-major: the kernel alone), and the copies' cost
(torch's transposing copy). CUDA events, L2 flushed (writing), median.
    python3 scripts/tn_probe.py"""
import torch

from gemmlab import api
from gemmlab.bench.candidates import Operands
from gemmlab.bench.timing import L2Flush, Policy, measure

torch.backends.cuda.matmul.allow_tf32 = False
pol = Policy(target_seconds=0.15, max_seconds=1.5, min_reps=10, max_reps=400)
flush = L2Flush()


def t(fn):
    fn(); torch.cuda.synchronize()
    return measure(fn, pol, flush).summary.median * 1e3


SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (3000, 5000, 7000), (1024, 1024, 16384),
          (4096, 2048, 512), (4096, 512, 2048), (2048, 512, 4096), (512, 2048, 4096), (4096, 1536, 512),
          (4096, 512, 512), (4095, 4097, 1023), (8192, 128, 8192), (128, 8192, 8192)]
print(f"{'shape':>16} lay   cuBLAS   auto  tn-kern  copyA  copyB  auto/cub  tn+copy/cub  auto plan | tn plan", flush=True)
for M, N, K in SHAPES:
    for lay in ("nn", "nt"):
        ops = Operands.make(M, N, K, lay, 0)
        ops.reference()
        cub = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
        plan, fn = api.prepare(ops.a, ops.b, out=ops.out)
        fn(); assert ops.check_out().correct
        auto = t(fn)
        at_store = torch.empty(K, M, device="cuda"); at_store.copy_(ops.a.t())
        bt = ops.b.contiguous()
        at = at_store.t()
        p2, fn2 = api.prepare(at, bt, out=ops.out)
        ops.poison(); fn2(); assert ops.check_out().correct
        tn = t(fn2)
        ca = t(lambda: at_store.copy_(ops.a.t()))
        cb = t(lambda: bt.copy_(ops.b)) if lay == "nt" else 0.0
        print(f"{M:>5}x{N}x{K:<5} {lay} {cub:8.1f} {auto:6.1f} {tn:8.1f} {ca:6.1f} {cb:6.1f} {cub/auto:9.3f} "
              f"{cub/(tn+ca+cb):12.3f}  {plan.summary[:60]} | {p2.summary[:60]}", flush=True)
        del ops, at_store, bt
