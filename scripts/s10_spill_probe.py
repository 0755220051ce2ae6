"""The s10 kernels that spill in their K loop (scripts/s10_spill_scan.py) against builds of the same
tile that do not, on unaligned shapes (H200: CUDA events, L2 flushed, median, us; every plan
checked against float64 first; cuBLAS in the same run).

Each case is a tile of the space as s10 runs it for an unaligned problem (s11's stand-in config),
a layout and a split, timed as it is and with each alternative: ``frag_prefetch`` 0 (the
prefetch's second register set is what the ≤32-accumulator tiles spill), one block fewer per SM
(more registers a thread), or ``k_unroll`` 4. First the script says, from the SASS, how much
each build spills in its K loop.
    python3 scripts/s10_spill_probe.py"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gemmlab.heuristics import space  # noqa: E402

# (space tile, layout, split, {alternative name: overrides}, shapes (M, N, K, batch))
CASES = [
    ("128x64 w32x32 x2", "nt", 1, {"fp0": {"frag_prefetch": 0}, "mb1": {"min_blocks": 1}},
     [(575, 99, 607, 32), (152, 405, 199, 1), (1001, 777, 555, 1)]),
    ("128x64 w32x32 x2", "nt", 2, {"fp0": {"frag_prefetch": 0}, "mb1": {"min_blocks": 1}},
     [(257, 4001, 999, 1), (333, 1001, 1501, 1)]),
    ("128x64 w32x32 x2", "tn", 1, {"fp0": {"frag_prefetch": 0}}, [(759, 189, 317, 16), (1001, 777, 555, 1)]),
    ("128x64 w32x32 x2", "nn", 1, {"fp0": {"frag_prefetch": 0}}, [(455, 97, 743, 32), (1001, 777, 555, 1)]),
    ("64x64 w32x32 x3", "nt", 1, {"fp0": {"frag_prefetch": 0}, "mb2": {"min_blocks": 2}},
     [(152, 405, 199, 1), (99, 296, 337, 1), (777, 555, 333, 1)]),
    ("32x64 w16x32 x4", "nt", 1, {"fp0": {"frag_prefetch": 0}, "mb3": {"min_blocks": 3}}, [(152, 405, 199, 1), (255, 255, 255, 32)]),
    ("128x128 w32x64 x2", "nt", 1, {"mb1": {"min_blocks": 1}}, [(496, 727, 651, 1), (1001, 777, 555, 1)]),
    ("32x256 w16x64 s3 x2", "nt", 1, {"fp0": {"frag_prefetch": 0}, "mb1": {"min_blocks": 1}},
     [(99, 4001, 1001, 1), (65, 2047, 999, 1)]),
    ("128x256 w64x64 ku8", "nt", 2, {"ku4": {"k_unroll": 4}}, [(257, 4001, 999, 1), (511, 2049, 1999, 1)]),
]


def stand_in(label):
    cand = next(c for c in space.SM90 if c.label == label)
    return cand.spec().fallback_config(cand.config())


def builds(label, alts):
    """{name: s10 config}: the stand-in as it is, then each alternative."""
    spec, cfg = stand_in(label)
    return spec, {"as is": cfg, **{n: spec.config({**cfg, **o}) for n, o in alts.items()}}


def k_loop_spills(spec, cfg, lay, split):
    from s10_spill_scan import problem, spills

    return spills(spec, cfg, spec.variant(cfg, problem(lay, split)))["loop"]


def main():
    from gemmlab.bench.candidates import Operands
    from probe_common import compile_first, cublas_us, event_timer, run_checked

    t = event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=300)
    jobs = []
    for label, lay, split, alts, shapes in CASES:
        spec, configs = builds(label, alts)
        print(f"# {label} {lay} split {split}: local loads and stores in the K loop: "
              + ", ".join(f"{n} {k_loop_spills(spec, c, lay, split)}" for n, c in configs.items()), flush=True)
        for M, N, K, b in shapes:
            jobs += [(Operands.make(M, N, K, lay, 0, batch=b), "s10", {**c, "split_k": split}) for c in configs.values()]
    compile_first(jobs)
    del jobs
    for label, lay, split, alts, shapes in CASES:
        _, configs = builds(label, alts)
        for M, N, K, b in shapes:
            ops = Operands.make(M, N, K, lay, 0, batch=b)
            ops.reference()
            cub = cublas_us(t, ops)
            us = {n: run_checked(t, ops, "s10", {**c, "split_k": split})[0] for n, c in configs.items()}
            cells = " | ".join(f"{n} {u:.1f} ({us['as is'] / u:.3f})" for n, u in us.items())
            print(f"{M}x{N}x{K}x{b} {lay} [{label} s{split}]: cuBLAS {cub:.1f} | {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
