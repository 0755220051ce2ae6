"""Small shapes of the given stages, for compute-sanitizer (memcheck, racecheck, synccheck).
``--config JSON``: the stages run at that config (e.g. s10 with frag_carry).

    compute-sanitizer --tool memcheck python3 scripts/sanitize.py s09 s10 s11
    compute-sanitizer --tool racecheck python3 scripts/sanitize.py s10 --config '{"frag_carry": 1}'
"""
import json
import sys

import torch

import gemmlab
from gemmlab.check import compare, reference

args = sys.argv[1:]
config = None
if "--config" in args:
    i = args.index("--config")
    config = json.loads(args[i + 1])
    del args[i:i + 2]
for stage in args or ["s09", "s10", "s11"]:
    # 300x600x99 nt: unaligned K-major A and B with whole tiles inside (s10's transposing copies, fast path);
    # 300x601x100 nn: only A's rows aligned (nn keeps one copy size: both 4-byte, A turned);
    # 300x600x99 tt: A on 16-byte copies beside B's 4-byte turned ones (s10's a_vec variant)
    for (M, N, K, layout) in ((129, 257, 67, "nn"), (200, 136, 72, "tn"), (256, 256, 96, "nt"), (64, 64, 1, "tt"),
                              (300, 600, 99, "nt"), (300, 601, 100, "nn"), (300, 600, 99, "tt")):
        a = torch.rand(K, M, device="cuda").t() if layout[0] == "t" else torch.rand(M, K, device="cuda")
        b = torch.rand(N, K, device="cuda").t() if layout[1] == "t" else torch.rand(K, N, device="cuda")
        c = torch.rand(M, N, device="cuda")
        out = gemmlab.gemm(a, b, c, alpha=0.5, beta=3.0, stage=stage, config=config)
        torch.cuda.synchronize()
        r = compare(out, reference(a, b, c, 0.5, 3.0), K)
        print(stage, config or "", M, N, K, layout, "ok" if r.correct else f"WRONG {r}", flush=True)
