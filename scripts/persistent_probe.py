"""s11 on a persistent grid (config ``persistent=1``: kernels/epilogue/stream_k.cuh PersistentTiles)
against one block a tile, on the H200 (CPU with --dry: the plans and shapes only).

Part 1, waves: three of the space's tiles (heuristics/space.py) on problems of exactly W full
waves of their blocks (W = 1, 2, 4, 8; the one-wave shapes of short_k_probe.py, W times as many
rows), K = 128 and 512, nn, split 1; both grids and cuBLAS timed (CUDA events, L2 flushed, every
plan checked against float64 first). A line t(W) = a + b * W fitted to each: b is what one wave
costs, and b(one block a tile) - b(persistent) what the persistent grid saves a wave.

Part 2, auto's plans: random shapes (model_variant_probe.random_shapes, a fresh seed) of 1e9 to
1e10 FLOP whose H200 choice is s11 with one slice of K and no cut, and that s11 runs itself (not
its s10 stand-in, which has no persistent grid: the first run, on an H100, counted 12 such plans of
19): the choice's own config, copies and all, timed with ``persistent`` 0 and 1 beside cuBLAS.

``--producer-warp``: part 1 times both grids with a producer warpgroup too (``producer_warp`` 1:
the TMA copies issued by a warp of their own, so no consumer warp waits on the empty barriers),
to tell the suspects for the persistent grid's loss apart (docs/stages/s10-s11.md).

docs/stages/s10-s11.md, "A persistent grid", has the prediction and the rule, written before any run.
    python3 scripts/persistent_probe.py [--dry] [--seed S] [--random N] [--part 1|2] [--producer-warp]"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its siblings, also when loaded by the tests
from model_variant_probe import h200_choice, random_shapes, runs, tile  # noqa: E402
from probe_breakdown import gmean  # noqa: E402
from short_k_probe import fit_line, one_wave_shape  # noqa: E402

from gemmlab.heuristics import space  # noqa: E402

TILES = ("128x256 w64x64 ku4", "128x64 w64x32 bk16 ku1 x3", "64x64 w32x32 x3")
WAVES = (1, 2, 4, 8)
KS = (128, 512)
MID_FLOP = (1e9, 1e10)


def candidate(label: str) -> space.Candidate:
    """The H200 space's candidate of that label."""
    return next(c for c in space.candidates(90) if c.label == label)


def wave_shapes(label: str, waves=WAVES, sms: int = 132) -> list[tuple[int, int]]:
    """(M, N) of exactly w full waves of the tile's blocks, for each w: the one-wave shape with w
    times as many rows."""
    cand = candidate(label)
    M, N = one_wave_shape(*cand.tile(), cand.blocks_per_sm(), sms)
    return [(M * w, N) for w in waves]


def s11_config(label: str) -> dict:
    """The candidate's config as a call of stage="s11" with one slice of K takes it."""
    return dict(candidate(label).config(), split_k=1, persistent=0)


def mid_plans(n: int, seed: int) -> list[tuple[tuple, dict]]:
    """[((M, N, K, layout, batch), config)] of the random shapes of 1e9-1e10 FLOP that auto sends
    to s11 on the H200 with split 1 and no cut; config: the choice's stage config plus its plan
    keys (split_k, repack, a_transpose), as a call of stage="s11" takes them, one block a tile."""
    out = []
    for M, N, K, lay, batch in random_shapes(n, seed):
        if not MID_FLOP[0] <= 2.0 * M * N * K * batch < MID_FLOP[1]:
            continue
        c = h200_choice(M, N, K, lay, batch)
        if c.spec.id != "s11" or c.split_k != 1 or c.tail is not None or c.stream_k:
            continue
        if runs(c, M, N, K, lay, batch):  # s11's stand-in runs (s10: no persistent grid)
            continue
        out.append(((M, N, K, lay, batch), dict(c.config, split_k=1, repack=int(c.repack),
                                                a_transpose=int(c.a_transpose), persistent=0)))
    return out


# part 1's grids in pairs: (one block a tile, the persistent grid, producer_warp)
PAIRS = (("one block a tile", "persistent", 0), ("one tile, producer warp", "persistent, producer warp", 1))


def series_configs(cfg: dict, producer_warp: bool) -> dict:
    """{series name: s11 config} part 1 times: one block a tile and the persistent grid, and with
    ``producer_warp`` the same two with a producer warpgroup."""
    out = {}
    for one, per, pw in PAIRS[:2 if producer_warp else 1]:
        extra = {"producer_warp": 1} if pw else {}
        out[one] = dict(cfg, **extra)
        out[per] = dict(cfg, persistent=1, **extra)
    return out


def per_wave(times: list[float], waves=WAVES) -> float:
    """The slope of the line fitted to a wave series' times (us a wave)."""
    pairs = [(w, t) for w, t in zip(waves, times) if t == t]
    return fit_line([w for w, _ in pairs], [t for _, t in pairs])[1] if len(pairs) >= 2 else float("nan")


def main(argv):
    seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 64
    n = int(argv[argv.index("--random") + 1]) if "--random" in argv else 120
    part = argv[argv.index("--part") + 1] if "--part" in argv else "12"
    plans = mid_plans(n, seed) if "2" in part else []
    if "--dry" in argv:
        for label in TILES:
            print(f"{label:30} waves {WAVES}: " + " ".join(f"{M}x{N}" for M, N in wave_shapes(label)))
        for shape, cfg in plans:
            print(f"{'x'.join(map(str, shape[:3]))} {shape[3]} b{shape[4]}: s11 {tile(cfg)} min_blocks "
                  f"{cfg['min_blocks']}{' repack' if cfg['repack'] else ''}{' a_transpose' if cfg['a_transpose'] else ''}")
        print(f"{len(plans)} mid-size s11 plans of {n} random shapes (seed {seed})")
        return
    from gemmlab.bench.candidates import Operands
    from probe_common import cublas_us, event_timer, run_checked

    t = event_timer(target_seconds=0.05, max_seconds=0.5, min_reps=10, max_reps=100)
    if "1" in part:
        print("part 1: us for W = " + ", ".join(map(str, WAVES)) + " waves; fitted us a wave", flush=True)
        for label in TILES:
            cfg = s11_config(label)
            for K in KS:
                grids = series_configs(cfg, "--producer-warp" in argv)
                series = {name: [] for name in (*grids, "cuBLAS")}
                for M, N in wave_shapes(label):
                    ops = Operands.make(M, N, K, "nn")
                    ops.reference()
                    for name, grid_cfg in grids.items():
                        series[name].append(run_checked(t, ops, "s11", grid_cfg)[0])
                    series["cuBLAS"].append(cublas_us(t, ops))
                    del ops
                for name, times in series.items():
                    print(f"{label:30} K={K:<4} {name:17} " + " ".join(f"{x:8.1f}" for x in times)
                          + f" | {per_wave(times):7.2f} us a wave", flush=True)
                for one, per, pw in PAIRS:
                    if per in series:
                        saved = per_wave(series[one]) - per_wave(series[per])
                        print(f"{label:30} K={K:<4} saved a wave{' with a producer warp' if pw else ''}: "
                              f"{saved:.2f} us", flush=True)
    if "2" in part:
        print(f"part 2: {len(plans)} auto plans (s11, split 1) of seed {seed}: us, ratio to cuBLAS", flush=True)
        gains = []
        for (M, N, K, lay, batch), cfg in plans:
            ops = Operands.make(M, N, K, lay, 0, batch=batch)
            ops.reference()
            cub = cublas_us(t, ops)
            one, what, _ = run_checked(t, ops, "s11", cfg)
            per, _, _ = run_checked(t, ops, "s11", dict(cfg, persistent=1))
            if one == one and per == per:  # both right (a wrong result is NaN, reported on its line)
                gains.append(one / per)
            print(f"{M}x{N}x{K}x{batch} {lay} [{what}]: cuBLAS {cub:7.1f}, one block a tile {one:7.1f} "
                  f"({cub / one:.3f}), persistent {per:7.1f} ({cub / per:.3f}), speed-up {one / per:.3f}", flush=True)
            del ops
        if gains:
            print(f"persistent over one block a tile: geometric mean {gmean(gains):.3f}, min {min(gains):.3f}, "
                  f"max {max(gains):.3f} ({len(gains)} plans)")


if __name__ == "__main__":
    main(sys.argv[1:])
