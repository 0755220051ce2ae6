"""Where a block's time goes at short K (H200; CPU with --dry): s11 tiles, each on a problem of
exactly one full wave of its blocks (132 SMs x its blocks per SM, nn, aligned, split 1), timed at
K from 32 to 2048 (CUDA events, L2 flushed, median; every plan checked against float64 first).
A straight line t(K) = fixed + slope * K is fitted to each tile's times by least squares: the
fixed part is what a wave costs before and after its main loop (the pipeline's fill, the first
TMA round trip, the epilogue), the slope its main loop's rate, given as the FFMA efficiency it
implies (2·BM·BN·blocks per SM FLOP per unit of K against the SM's FFMA peak). The waves model's
line for the same plans (heuristics/model.py: BLOCK_OVERHEAD_S and the candidate's efficiency)
is printed beside it, and cuBLAS's line on the same problems (torch.mm, timed alike).
docs/dispatch.md, "Repacked plans on random shapes": ncu put the short-K loss in the GEMM
kernel, not in the copies.
    python3 scripts/short_k_probe.py [--dry] [--tiles 'LABEL;LABEL'] [--ks 32,64,...]"""
from __future__ import annotations

import sys

from gemmlab.heuristics import model, space

TILES = ("256x128 w64x64 ku4", "128x256 w64x64 ku4", "128x128 w64x64 bk16 ku1 x2", "128x64 w64x32 bk16 ku1 x3",
         "64x128 w32x64 x2", "64x64 w32x32 x3", "32x64 w16x32 x4")
KS = (32, 64, 96, 128, 192, 256, 384, 512, 1024, 2048)


def one_wave_shape(bm: int, bn: int, bps: int, sms: int = 132) -> tuple[int, int]:
    """(M, N) of exactly sms * bps output tiles of bm x bn, the grid of tiles as near square in
    elements as the divisors of sms * bps allow."""
    tiles = sms * bps
    best = None
    for mt in range(1, tiles + 1):
        if tiles % mt:
            continue
        M, N = mt * bm, tiles // mt * bn
        score = max(M, N) / min(M, N)
        if best is None or score < best[0]:
            best = (score, M, N)
    return best[1], best[2]


def fit_line(xs, ys) -> tuple[float, float]:
    """Least squares (intercept, slope) of ys on xs (at least two distinct xs)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def efficiency(cand: space.Candidate, slope_us_per_k: float, gpu: model.Gpu) -> float:
    """The FFMA efficiency a wave's slope (us per unit of K) implies: every SM computes
    2·BM·BN·blocks-per-SM FLOP per unit of K."""
    bm, bn = cand.tile()
    return 2.0 * bm * bn * cand.blocks_per_sm() / (slope_us_per_k * 1e-6) / gpu.sm_flops


def model_us(cand: space.Candidate, M: int, N: int, K: int, gpu: model.Gpu) -> float:
    return model.predict(cand, M, N, K, 1, 1, gpu).seconds * 1e6


def plan(tiles, ks, gpu: model.Gpu):
    """[(candidate, M, N, [model us per K])] for the tiles (labels of space.SM90)."""
    by_label = {c.label: c for c in space.candidates(gpu.cc)}
    out = []
    for label in tiles:
        cand = by_label[label]
        M, N = one_wave_shape(*cand.tile(), cand.blocks_per_sm(), gpu.sms)
        out.append((cand, M, N, [model_us(cand, M, N, K, gpu) for K in ks]))
    return out


def measured_fit(cand, ks, times, gpu) -> str:
    """" measured: fixed ... us/wave, slope eff ..." of the line fitted to the times that ran (NaN:
    not run or wrong), "" with fewer than two."""
    pairs = [(k, t) for k, t in zip(ks, times) if t == t]
    if len(pairs) < 2:
        return ""
    a, b = fit_line([k for k, _ in pairs], [t for _, t in pairs])
    return f" measured: fixed {a:6.1f} us/wave, slope eff {efficiency(cand, b, gpu):.3f}"


def summary(cand, M, N, ks, measured, modelled, gpu) -> str:
    """One line: the tile, its shape, and the fitted lines (fixed us per wave, FFMA efficiency of
    the slope) measured and modelled."""
    am, bm_ = fit_line(list(ks), modelled)
    return (f"{cand.label:30} {M:5}x{N:<5}" + measured_fit(cand, ks, measured, gpu)
            + f" | model: fixed {am:5.1f} us/wave, eff {efficiency(cand, bm_, gpu):.3f}")


def cublas_summary(cand, M, N, ks, cublas, gpu) -> str:
    """cuBLAS's line on the same problems, in the same units (its fixed cost for this much output a
    wave, the efficiency its slope implies for the same FLOP per unit of K)."""
    return f"{'  cuBLAS, same problems':30} {M:5}x{N:<5}" + measured_fit(cand, ks, cublas, gpu)


def main(argv):
    args = list(argv)
    tiles = TILES
    ks = KS
    if "--tiles" in args:
        tiles = tuple(t.strip() for t in args[args.index("--tiles") + 1].split(";"))
    if "--ks" in args:
        ks = tuple(int(k) for k in args[args.index("--ks") + 1].split(","))
    gpu = model.Gpu()
    rows = plan(tiles, ks, gpu)
    print("K: " + " ".join(f"{k:>7}" for k in ks))
    if "--dry" in args:
        for cand, M, N, mod in rows:
            print(f"{cand.label:30} {M}x{N} model us: " + " ".join(f"{t:7.1f}" for t in mod))
        for cand, M, N, mod in rows:
            print(summary(cand, M, N, ks, [float("nan")] * len(ks), mod, gpu))
        return
    from gemmlab.bench.candidates import Operands
    from probe_common import checked_timer, compile_first, cublas_us, event_timer

    t = event_timer(target_seconds=0.05, max_seconds=0.5, min_reps=10, max_reps=100)
    timed = checked_timer(t)
    compile_first([(Operands.make(cand.tile()[0], cand.tile()[1], 32, "nn"), cand.stage, dict(cand.config(), split_k=1))
                   for cand, _, _, _ in rows])
    results = []
    for cand, M, N, mod in rows:
        times, cublas = [], []
        for K in ks:
            ops = Operands.make(M, N, K, "nn")
            ops.reference()
            us, what = timed(ops, cand.stage, dict(cand.config(), split_k=1))
            times.append(us)
            cublas.append(cublas_us(t, ops))
            del ops
        print(f"{cand.label:30} {M}x{N} us: " + " ".join(f"{x:7.1f}" for x in times)
              + "  (model: " + " ".join(f"{x:.1f}" for x in mod) + ")", flush=True)
        print(f"{'  cuBLAS':30} {M}x{N} us: " + " ".join(f"{x:7.1f}" for x in cublas), flush=True)
        results.append((cand, M, N, times, mod, cublas))
    print()
    for cand, M, N, times, mod, cublas in results:
        print(summary(cand, M, N, ks, times, mod, gpu))
        print(cublas_summary(cand, M, N, ks, cublas, gpu))


if __name__ == "__main__":
    main(sys.argv[1:])
