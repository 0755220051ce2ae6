"""Stream-K against the choice stage="auto" makes and against cuBLAS (H200 probe for issue 16's
mid-size shapes): each shape in its layout, L2 flushed before every repetition, the median of
CUDA-event times; s11 with stream_k=1 at three tiles, next to what auto runs.
    python3 scripts/stream_k_probe.py"""
import torch

import gemmlab
from gemmlab import api
from probe_common import event_timer

t = event_timer()
SHAPES = [(1200, 1200, 1200, "nn"), (2048, 768, 768, "nn"), (1001, 999, 1003, "nn"), (896, 896, 4096, "tt"),
          (768, 768, 2048, "nt"), (2047, 2049, 511, "nt"), (4095, 1023, 2049, "tn"), (256, 256, 16384, "nn"),
          (3001, 1999, 777, "nn"), (12288, 512, 512, "nn"), (1536, 512, 4096, "tn"), (512, 512, 4096, "tn"),
          (4096, 512, 2048, "nn"), (4096, 512, 2048, "nt"), (513, 1025, 257, "tt"), (2900, 2901, 2903, "nn"),
          (4096, 4096, 4096, "nn"), (1024, 1024, 1024, "nn"), (3072, 3072, 768, "nn"), (6144, 1024, 1024, "tn")]
TILES = {"128x256": {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "k_unroll": 4},
         "256x128": {"block_m": 256, "block_n": 128, "warp_m": 64, "warp_n": 64, "k_unroll": 4},
         "128x128x2": {"block_m": 128, "block_n": 128, "warp_m": 32, "warp_n": 64, "stages": 3, "min_blocks": 2}}
print(f"{'shape':22} {'cuBLAS':>8} {'auto':>8} {'a/c':>6}  " + "  ".join(f"{k + ' sk':>13} {'/c':>5}" for k in TILES)
      + "   auto plan")
for M, N, K, lay in SHAPES:
    a = torch.randn(M, K, device="cuda") if lay[0] == "n" else torch.randn(K, M, device="cuda").t()
    b = torch.randn(K, N, device="cuda") if lay[1] == "n" else torch.randn(N, K, device="cuda").t()
    out = torch.empty(M, N, device="cuda")
    ref = a.double() @ b.double()
    cb = t(lambda: torch.mm(a, b, out=out))
    plan, launch = api.prepare(a, b, out=out)
    au = t(launch)
    row = f"{M}x{N}x{K} {lay:3} {cb:8.1f} {au:8.1f} {cb / au:6.3f}  "
    for name, tile in TILES.items():
        try:
            p2, l2 = api.prepare(a, b, out=out, stage="s11", config={**tile, "stream_k": 1})
            us = t(l2)
            l2()
            torch.cuda.synchronize()
            err = ((out.double() - ref).norm() / ref.norm()).item()
            ok = "" if err < 1e-5 else f"!err {err:.1e}"
            row += f"{us:13.1f} {cb / us:5.3f}{ok}  "
        except Exception as e:  # noqa: BLE001
            row += f"{type(e).__name__:>19}  "
    d = plan.describe()
    print(row + f" {d['stage']} {d['config'].get('block_m')}x{d['config'].get('block_n')} s{d['split_k']} "
          f"{'c' if d['cluster_reduce'] else ''} L{len(plan.steps)}", flush=True)
