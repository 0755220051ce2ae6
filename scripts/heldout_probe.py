"""The held-out shapes that fall short (H200 probe): decode-sized M (32-96) and a small odd shape,
against the alternatives the dispatcher has: the skinny kernel (several 16-row passes), other
split-K counts, no repack. CUDA events, L2 flushed, median, microseconds.
    python3 scripts/heldout_probe.py"""
import torch

from gemmlab import api
from gemmlab.bench.candidates import Operands
from probe_common import event_timer

t = event_timer()


CASES = {
    (32, 4096, 4096): [("skinny", None), ("skinny", {"split_k": 2}), ("s11", {"block_m": 32, "block_n": 64, "warp_m": 16,
                       "warp_n": 32, "min_blocks": 4, "split_k": 4}), ("auto", {"split_k": 4}), ("auto", {"split_k": 16})],
    (48, 4096, 11008): [("skinny", None), ("auto", {"split_k": 4}), ("auto", {"split_k": 16})],
    (96, 1024, 8192): [("skinny", None), ("auto", {"split_k": 8}), ("auto", {"split_k": 16})],
    (64, 11008, 4096): [("skinny", None), ("auto", {"split_k": 1}), ("auto", {"split_k": 6})],
    (777, 555, 333): [("auto", {"repack": 0}), ("auto", {"split_k": 2}), ("s11", {"block_m": 64, "block_n": 64, "warp_m": 32,
                      "warp_n": 32, "min_blocks": 3})],
    (4096, 768, 768): [("auto", {"split_k": 1}), ("auto", {"split_k": 3}), ("auto", {"a_transpose": 1})],
}
for (M, N, K), alts in CASES.items():
    for lay in ("nn", "nt"):
        ops = Operands.make(M, N, K, lay, 0)
        ops.reference()
        cub = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
        rows = []
        for stage, cfg in [("auto", None)] + alts:
            try:
                plan, fn = api.prepare(ops.a, ops.b, out=ops.out, stage=stage, config=cfg)
                ops.poison(); fn()
                ok = ops.check_out().correct
                us = t(fn)
                rows.append(f"{stage}{cfg or ''}: {us:.1f}{'' if ok else ' WRONG'} ({cub / us:.3f})")
            except Exception as e:
                rows.append(f"{stage}{cfg or ''}: {type(e).__name__} {str(e)[:80]}")
        print(f"{M}x{N}x{K} {lay}: cuBLAS {cub:.1f} us | " + " | ".join(rows), flush=True)
        del ops
