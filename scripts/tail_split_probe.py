"""Wave quantization answered in the plan, not the kernel: a problem's rows (or columns) split in
two GEMMs on views of the same operands. The first part holds whole waves of one tile (no split);
the tail, the rows left, runs with its own best tile and split-K. No kernel changes: the two parts
are two calls of s11 on slices (A[:M1], D[:M1] and A[M1:], D[M1:]; columns: B[:, :N1], D[:, :N1]).

For each shape the waves model (heuristics/model.tail_split) picks the cut and both plans; the probe
checks the pair against float64 (poisoned output), then times auto, the pair and cuBLAS (CUDA
events, L2 flushed, median; both launches in one timed call). ``--dry`` (no GPU): the model's
plans and predicted times only.
    python3 scripts/tail_split_probe.py [--dry] [M N K layout batch ...]
"""
import math
import sys

from gemmlab.heuristics import model

H200 = model.Gpu(sms=132, clock_hz=1.98e9, cc=90)
# The model's best gainers among the held-out suite and 60 random shapes (seed 5, 256..8192), nn,
# and two held-out shapes in other layouts.
DEFAULT = [(2900, 2901, 2903, "nn", 1), (5000, 5000, 5000, "nn", 1), (2560, 2560, 640, "nn", 1),
           (4096, 2304, 768, "nn", 1), (2426, 5810, 378, "nn", 1), (2789, 8099, 448, "nn", 1),
           (4486, 1241, 1104, "nn", 1), (3232, 6883, 2275, "nn", 1), (3208, 1346, 701, "nn", 1),
           (7868, 7127, 2248, "nn", 1), (429, 4782, 711, "nn", 1), (1231, 8172, 4909, "nn", 1),
           (5000, 5000, 5000, "tn", 1), (2900, 2901, 2903, "tn", 1)]


def single(M, N, K, gpu=H200):
    return model.best(M, N, K, 1, gpu)


def tail_plan(M, N, K, gpu=H200):
    """(predicted s, axis, first extent, first candidate, tail prediction): the runtime's cut
    (model.tail_split, what choice.TAIL_MIN_GAIN takes), or None."""
    cut = model.tail_split(M, N, K, 1, gpu)
    return None if cut is None else (cut.seconds, cut.axis, cut.start, cut.first.candidate, cut.rest)


def cfg(cand, split, whole):
    """The part's config: the candidate's, its split, and the copies auto's plan for the whole
    problem makes (``whole``, its Choice: A transposed, operands repacked; each part copies its own
    operands, so a repacked B is copied twice)."""
    c = dict(cand.overrides)
    c["split_k"] = split
    c["a_transpose"] = int(whole.a_transpose)
    c["repack"] = int(whole.repack)
    return c


def main():
    if "--dry" in sys.argv:
        shapes = DEFAULT
        for M, N, K, lay, _ in shapes:
            one, tp = single(M, N, K), tail_plan(M, N, K)
            if tp is None:
                print(f"{M}x{N}x{K} {lay}: no cut")
                continue
            t, axis, ext, cand, rest = tp
            print(f"{M}x{N}x{K} {lay}: one {one.candidate.label} s{one.split_k} {one.seconds * 1e6:.1f} us | "
                  f"{axis}<{ext} {cand.label} + {rest.candidate.label} s{rest.split_k} {t * 1e6:.1f} us "
                  f"({one.seconds / t:.3f}x)")
        return
    import torch

    from gemmlab import api
    from gemmlab.bench.candidates import Operands
    from probe_common import event_timer, shapes_arg

    shapes = shapes_arg(DEFAULT)

    t = event_timer(target_seconds=0.05, max_seconds=0.5, min_reps=10, max_reps=300)
    rows = []
    print("shape: cuBLAS us | auto us (ratio) | split us (ratio) [first + tail] | model one / split us")
    for M, N, K, lay, _ in shapes:
        ops = Operands.make(M, N, K, lay, 0)
        ops.reference()
        cub = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
        auto_plan, auto_fn = api.prepare(ops.a, ops.b, out=ops.out)
        auto = t(auto_fn)
        tp = tail_plan(M, N, K)
        if tp is None:
            print(f"{M}x{N}x{K} {lay}: no cut", flush=True)
            continue
        pt, axis, ext, cand, rest = tp
        if axis == "m":
            parts = ((ops.a[:ext], ops.b, ops.out[:ext], cand, 1), (ops.a[ext:], ops.b, ops.out[ext:],
                                                                        rest.candidate, rest.split_k))
        else:
            parts = ((ops.a, ops.b[:, :ext], ops.out[:, :ext], cand, 1), (ops.a, ops.b[:, ext:], ops.out[:, ext:],
                                                                         rest.candidate, rest.split_k))
        fns = []
        try:
            for a, b, d, c, s in parts:
                fns.append(api.prepare(a, b, out=d, stage=c.stage, config=cfg(c, s, auto_plan.choice))[1])
        except Exception as e:  # noqa: BLE001 -- a part the runtime refuses: say so, go on
            print(f"{M}x{N}x{K} {lay}: part not built: {type(e).__name__}: {e}", flush=True)
            continue
        ops.poison()
        for fn in fns:
            fn()
        r = ops.check_out()
        if not r.correct:
            print(f"{M}x{N}x{K} {lay}: WRONG {r}", flush=True)
            continue
        both = t(lambda: [fn() for fn in fns])
        rows.append((cub / auto, cub / both))
        one = single(M, N, K)
        print(f"{M}x{N}x{K} {lay}: cuBLAS {cub:.1f} | auto {auto:.1f} ({cub / auto:.3f}) | split {both:.1f} "
              f"({cub / both:.3f}) [{axis}<{ext} {cand.label} + {rest.candidate.label} s{rest.split_k}{' aT' if auto_plan.choice.a_transpose else ''}{' rp' if auto_plan.choice.repack else ''}] | "
              f"model {one.seconds * 1e6:.0f} / {pt * 1e6:.0f}", flush=True)
        del ops
    if rows:
        g = [math.exp(sum(math.log(r[i]) for r in rows) / len(rows)) for i in (0, 1)]
        print(f"\nauto / cuBLAS geometric mean {g[0]:.3f}; row/column split {g[1]:.3f} ({len(rows)} shapes)")


if __name__ == "__main__":
    main()
