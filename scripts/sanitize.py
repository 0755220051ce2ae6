"""Small shapes of the given stages, for compute-sanitizer (memcheck, racecheck, synccheck).
``--config JSON``: the stages run at that config (e.g. s10 with frag_carry). ``--row-groups``: s11's
TMA row groups on (s11_tma.ROW_GROUPS), and operands whose rows are not 16-byte aligned (batched:
folded batches too).

    compute-sanitizer --tool memcheck python3 scripts/sanitize.py s09 s10 s11
    compute-sanitizer --tool racecheck python3 scripts/sanitize.py s10 --config '{"frag_carry": 1}'
    compute-sanitizer --tool racecheck python3 scripts/sanitize.py s11 --row-groups
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
if "--row-groups" in args:
    from gemmlab.stages import s11_tma

    s11_tma.ROW_GROUPS = True
    args.remove("--row-groups")
    # rows padded to ld = inner + 1 (G 4) or + 2 (G 2), K, M and N tails: both operands of every layout
    # (rows of k, m and n)
    for (M, N, K, layout, pa, pb) in ((129, 257, 67, "nn", 0, 1), (200, 135, 71, "tn", 3, 1), (131, 66, 66, "tt", 1, 1),
                                      (70, 98, 45, "nt", 0, 0)):
        a_ld = M + pa if layout[0] == "t" else K + pa
        b_ld = N + pb if layout[1] == "n" else K + pb
        a = (torch.rand(K, a_ld, device="cuda")[:, :M].t() if layout[0] == "t"
             else torch.rand(M, a_ld, device="cuda")[:, :K])
        b = (torch.rand(K, b_ld, device="cuda")[:, :N] if layout[1] == "n"
             else torch.rand(N, b_ld, device="cuda")[:, :K].t())
        for cfg in ({}, {"split_k": 2}, {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "block_k": 8}):
            out = gemmlab.gemm(a, b, stage="s11", config=cfg)
            torch.cuda.synchronize()
            r = compare(out, reference(a, b, None, 1.0, 0.0), K)
            print("s11 row groups", cfg, M, N, K, layout, a.stride(), b.stride(), "ok" if r.correct else f"WRONG {r}",
                  flush=True)
    # folded batches (Operand.row_fold): contiguous batched operands whose rows and batch strides
    # are not 16-byte aligned; tiles that start inside a group, boxes into the next batch
    for (M, N, K, layout, batch) in ((37, 45, 29, "tt", 5), (67, 33, 35, "nt", 3), (35, 66, 9, "nn", 4)):
        a = torch.rand(batch, K, M, device="cuda").transpose(1, 2) if layout[0] == "t" else torch.rand(batch, M, K, device="cuda")
        b = torch.rand(batch, N, K, device="cuda").transpose(1, 2) if layout[1] == "t" else torch.rand(batch, K, N, device="cuda")
        out = gemmlab.gemm_batched(a, b, stage="s11")
        torch.cuda.synchronize()
        ok = all(compare(out[i], reference(a[i], b[i], None, 1.0, 0.0), K).correct for i in range(batch))
        print("s11 row groups, folded batches", M, N, K, layout, batch, "ok" if ok else "WRONG", flush=True)
    args = [x for x in args if x != "s11"]
    if not args:
        sys.exit(0)
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
