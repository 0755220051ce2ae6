"""Does transposing a row-major A (a_transpose) pay on the SIMT stages? (H200 probe.) Per shape
and call layout: cuBLAS, gemmlab auto as dispatched, auto with a_transpose forced off and on, and
the transposing copy's own time (the plan's first step alone, with its rate). CUDA events, L2
flushed (writing), median, microseconds.   python3 scripts/tn_probe.py"""
import torch

from gemmlab import api
from gemmlab.bench.candidates import Operands
from probe_common import event_timer

t = event_timer(target_seconds=0.15, max_seconds=1.5, min_reps=10, max_reps=400)


SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (3000, 5000, 7000), (1024, 1024, 16384),
          (4096, 2048, 512), (4096, 512, 2048), (2048, 512, 4096), (512, 2048, 4096), (4096, 1536, 512),
          (4096, 512, 512), (4095, 4097, 1023), (128, 8192, 8192), (2000, 3000, 1000), (1536, 6144, 768)]
print(f"{'shape':>16} lay   cuBLAS    auto   a_t=0   a_t=1  copyA TB/s  auto/cub a_t0/cub a_t1/cub  auto's choice", flush=True)
for M, N, K in SHAPES:
    for lay in ("nn", "nt"):
        ops = Operands.make(M, N, K, lay, 0)
        ops.reference()
        cub = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
        row = {}
        for name, cfg in (("auto", None), ("a_t=0", {"a_transpose": 0}), ("a_t=1", {"a_transpose": 1})):
            plan, fn = api.prepare(ops.a, ops.b, out=ops.out, config=cfg)
            ops.poison(); fn(); assert ops.check_out().correct, (M, N, K, lay, name)
            row[name] = (t(fn), plan)
        plan1, fn1 = api.prepare(ops.a, ops.b, out=ops.out, config={"a_transpose": 1})
        fn1()
        s0 = plan1.steps[0]
        stream = torch.cuda.current_stream().cuda_stream
        ca = t(lambda: s0.launch(stream)) if s0.label == "transpose a" else float("nan")
        ch = row["auto"][1].choice
        print(f"{M:>5}x{N}x{K:<5} {lay} {cub:8.1f} {row['auto'][0]:7.1f} {row['a_t=0'][0]:7.1f} {row['a_t=1'][0]:7.1f} "
              f"{ca:6.1f} {8 * M * K / ca / 1e6:4.2f}  {cub / row['auto'][0]:8.3f} {cub / row['a_t=0'][0]:8.3f} "
              f"{cub / row['a_t=1'][0]:8.3f}  {ch.source} a_t={int(ch.a_transpose)} rp={int(ch.repack)} "
              f"split {ch.split_k} {ch.config.get('block_m')}x{ch.config.get('block_n')}", flush=True)
        del ops
