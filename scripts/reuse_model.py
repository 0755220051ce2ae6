"""The K loop's register reads under two reuse-cache models, for s10 / s11 kernels with their FFMA
runs in order and in serpentine order (ffma_serpentine), and the issue model's time for each (CPU
only: NVRTC and the SASS).

- "1 entry": the reuse cache the issue model was calibrated with (analysis/issue_model.py): an
  operand is served from the cache when the instruction before flagged the same register in the
  same slot; the FFMAs that read two registers of one bank (reg % 2) lose an issue slot.
- "per bank": one entry per slot and register bank (sass.ffma_register_stats(reuse_per_bank=True)),
  what cuBLAS's FFMA kernels' .reuse flags imply (docs/stages/s10-s11.md, "Serpentine FFMA runs").

``--cubin PATH [--kernel NAME]``: the same counts for the K loop of a kernel in a cubin of your own
(say cuBLAS's, from `cuobjdump -xelf`), for comparison.
    python3 scripts/reuse_model.py [--cubin PATH [--kernel NAME]]"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gemmlab.analysis import issue_model, sass  # noqa: E402
from gemmlab.plan import kernel_for  # noqa: E402
from gemmlab.problem import Problem  # noqa: E402
from gemmlab.stages import get  # noqa: E402

STAND_IN = dict(block_m=128, block_n=64, warp_m=32, warp_n=32, block_k=16, stages=4, min_blocks=2, edge_shift=1)
TILE64 = dict(block_m=64, block_n=64, warp_m=32, warp_n=32, stages=3, min_blocks=3, edge_shift=1)
# (stage, config, M, N, K, layout): the stand-in most unaligned problems run, 64x64 x3 (small
# unaligned problems), s11 at its default tile and at auto's for the large squares (128x256 ku4)
KERNELS = [("s10", STAND_IN, 333, 555, 777, lay) for lay in ("tt", "nn", "tn", "nt")] + [
    ("s10", TILE64, 777, 555, 333, "tt"), ("s11", {}, 4096, 4096, 4096, "tn"),
    ("s11", {"k_unroll": 4}, 4096, 4096, 4096, "tn"), ("s11", {"k_unroll": 4}, 4096, 4096, 4096, "nn")]


def loop_counts(insns) -> dict:
    body = sass.main_loop(insns)
    one = sass.ffma_register_stats(body, banks=2)
    per_bank = sass.ffma_register_stats(body, banks=2, reuse_per_bank=True)
    return {"loop": len(body), "ffma": one["ffma"], "conf1": one["reg_bank_conflicts"], "hit1": one["reuse_hit_share"],
            "confb": per_bank["reg_bank_conflicts"], "hitb": per_bank["reuse_hit_share"]}


def row(label, c, extra="") -> str:
    return (f"{label:44} {c['loop']:5} {c['ffma']:5} {c['conf1']:5} {c['hit1']:6.3f} {c['confb']:5} {c['hitb']:6.3f}"
            f"{extra}")


def main():
    head = f"{'kernel':44} {'loop':>5} {'FFMA':>5} {'conf':>5} {'hits':>6} {'confb':>5} {'hitsb':>6}"
    if "--cubin" in sys.argv:
        cubin = Path(sys.argv[sys.argv.index("--cubin") + 1]).read_bytes()
        name = sys.argv[sys.argv.index("--kernel") + 1] if "--kernel" in sys.argv else None
        print(head)
        print(row((name or "the cubin's kernel")[-44:], loop_counts(sass.instructions(cubin, name))))
        return
    print(head + "  issue model (serpentine / in order)")
    for stage, cfg, M, N, K, lay in KERNELS:
        spec = get(stage)
        p = Problem.dense(M, N, K, lay, 1, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40)
        cycles = []
        for serp in (0, 1):
            c = spec.config({**cfg, "ffma_serpentine": serp})
            ck = kernel_for(spec, c, spec.variant(c, p), "sm_90")
            counts = loop_counts(sass.instructions(ck.cubin))
            cycles.append(issue_model.stage_model(stage, M, N, K, c, layout=lay)["cycles"])
            tile = f"{c['block_m']}x{c['block_n']} ku{c['k_unroll']}"
            extra = f"  {cycles[1] / cycles[0]:.3f}" if serp else ""
            print(row(f"{stage} {tile} {lay} {M}x{N}x{K} {'serpentine' if serp else 'in order'}", counts, extra),
                  flush=True)


if __name__ == "__main__":
    main()
