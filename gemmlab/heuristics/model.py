"""The heuristic for shapes and GPUs with no tuned entry: the waves model (000 §2.3) plus split-K.

For a candidate tile (space.py) and a number of K slices S, a problem of T output tiles makes
T·S blocks; ``blocks_per_sm`` of them share an SM, so the grid runs in ceil(T·S / (SMs·bps))
waves (the tail effect: a last wave that is 10% full costs a whole wave). Each block computes
2·BM·BN·ceil(K/S) FLOP at ``efficiency`` × the SM's FFMA peak shared by the bps blocks, plus a
fixed cost per block (prologue, pipeline fill, epilogue); an SM holding fewer blocks than it could
runs each faster but with fewer warps to hide latency (square root of the occupancy). Split-K
then adds its reduce kernel: it reads S partial products and writes D once, at memory
bandwidth, plus a launch; or, where the slices of a tile are added in a thread block cluster
(sm_90, s10 and s11, 2 slices or more on small grids), a small cost per wave instead
(``in_cluster``). The prediction picks the tile and S with the least time; ties go to fewer
slices (less memory).

This is what ``stage="auto"`` does on a GPU or shape that ``gemmlab tune`` has not measured
(heuristics/choice.py), it picks the split-K of a tile taken from a tuned neighbour
(heuristics/table.py: ``nearest``), and it is the tuner's shortlist: the tuner times the best few
predictions instead of all of them (docs/dispatch.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..problem import k_slices  # noqa: F401  (re-exported: the rule the plan runs)
from ..stages.base import CLUSTER_MIN_CC
from . import space

FFMA_PER_SM_CYCLE = 128    # FP32 lanes per SM (sm_70 and later)
BLOCK_OVERHEAD_S = 2.0e-6  # prologue + pipeline fill + epilogue of one block
LAUNCH_S = 2.5e-6          # one more kernel in the stream (the split-K reduce)
CLUSTER_REDUCE_S = 0.5e-6  # per wave: a block writes its partial tile, reads a band of both (DSMEM)
# A grid of clusters longer than one wave runs this much slower than its waves say (H200,
# scripts/cluster_split_probe.py, 2 slices against 1 at the same tile: 2048^3 0.925, 4096^3 0.936,
# 8192^3 0.954; within one wave none: 4096x512x2048 ran 187.6 us against 363.8, 0.516 of it).
CLUSTER_MULTIWAVE_EFFICIENCY = 0.93
MIN_K_SLICE = 128          # a slice shorter than this is all overhead
# An SM holding r of its bps blocks runs at (r / bps) ** OCCUPANCY_EXPONENT of its rate.
# scripts/model_fit.py fits it and LAUNCH_S to the tuning measurements (docs/dispatch.md, "Random
# shapes in no table"): lower exponents fitted no better; LAUNCH_S 1-3 us higher fitted the table
# 0.1% better and moved 8 of 79 random shapes' choices for no net gain on the H200.
OCCUPANCY_EXPONENT = 0.5
# The same for problems on s10's 4-byte copies (``aligned=False``), whose blocks share the SM's
# load/store issue more than TMA's: on the table's 31 unaligned entries tuned with s10's cluster
# split (2026-12-04) 0.25 ranks their shortlists better (regret 1.0378 -> 1.0246, the fastest
# picked in 18 of 31 against 12: the model took one K slice too many at 0.5, 191x1535x767 nn 64x64
# x4 25.7 us against x3 24.1), but 0.4 ranks them worse (1.0449). On random shapes (H200,
# scripts/model_variant_probe.py variant ``occ_unaligned25``, results/h200/logs/variants-16.txt,
# -18.txt) the 6 and 13 of 139 choices it moves ran 0.898 -> 0.891 and 0.844 -> 0.834: not taken.
OCCUPANCY_EXPONENT_UNALIGNED = 0.5
# The epilogue: a block's output tile (BM x BN floats) leaves at the SM's share of the memory
# bandwidth, this many times over, with no main loop to hide it (a wave's resident blocks reach
# their epilogues together); for operands TMA takes (``aligned``). Off (0) in the runtime. At 2.0
# the model's times match the shipped table's measured ones far better (scripts/model_fit.py
# --epilogue: spread of log(measured / predicted) 0.156 -> 0.111 on 169 aligned entries; short-K
# problems on big tiles were 1.3x slower than predicted) and its picks a little (regret 1.0325 ->
# 1.0263 there, 1.028 -> 1.019 on the small-tile probe). On random shapes (H200, variant
# ``epilogue2`` of scripts/model_variant_probe.py, results/h200/logs/variants-16.txt, -18.txt) the
# 14 and 7 of 139 choices it moves ran 0.906 -> 0.904 and 0.846 -> 0.937: not taken while one seed
# is flat (docs/dispatch.md). On an H100 running the H200 table's plans (twenty-seventh session,
# seeds 55-57, results/h100/logs/34dd8f1/epilogue2-seed5*.txt) its 32 changed plans ran 1.058x
# faster, none below 0.94x; that run had no rule written before it. On fresh seeds 58-60 with the
# rule written first (docs/dispatch.md, "Repacked plans on random shapes"): 32 plans 1.063x, worst
# 492x648x1528 nn 0.863, so not taken. scripts/short_k_probe.py (H100) measured a wave's fixed cost
# at 6.8-15.2 us, about BLOCK_OVERHEAD_S at 4 us plus this term at 2.1; those constants (variant
# ``fixed4_epi2_u3``, with the 4-byte path's term below at 3.0) failed the same rule on seeds 61-63
# (72 plans 1.053x, worst 0.808), their moves being below the model's resolution.
EPILOGUE_EXPOSURE = 0.0
# The same for problems on s10's 4-byte copies (``aligned=False``). Off (0) in the runtime; the
# table's 31 such entries are ranked best at 3.0 (scripts/model_fit.py).
EPILOGUE_EXPOSURE_UNALIGNED = 0.0
# Where the slices of a tile are added in a cluster, each of its blocks stores a band of 1/S of
# the tile (kernels/epilogue/cluster_reduce.cuh): True counts that band in the epilogue term,
# False the whole tile (as the variants of the twenty-eighth session ran). No effect while the
# exposures above are 0.
EPILOGUE_CLUSTER_BAND = False
# Unaligned problems (``aligned=False``) with the problem at hand: the model counts the blocks per
# SM, the tile and the cluster rule of the kernel the plan then runs (s11's s10 stand-in for that
# problem, ``runs_as``), not of the space's candidate. They differ where the stand-in depends on the
# problem: an nt problem on 4-byte copies takes one block an SM fewer (s11_tma.NT_STAND_IN_FEWER_BLOCKS)
# on 128x64 x2, 128x128 w32x64 x2, 32x64 x4 and 32x256 x2, which the model counted at the
# candidate's blocks per SM (its efficiency stays the candidate's at the candidate's occupancy:
# ``predict``). False: the candidate's (before 2026-12-04, ninth session). On the random seeds
# and the suites it moves no choice; on 400 odd nt shapes 7 (docs/dispatch.md).
STAND_IN_OF_PROBLEM = True
# Short K on s10's 4-byte copies (``aligned=False``, K below SHORT_K_UNALIGNED_MAX_K): stand-ins
# of fewer than this many blocks an SM are ranked after every other plan. 1: off (the runtime).
# The random minimum (seeds 58-63: auto/cuBLAS 0.60-0.71, K 96-233) ran s10 128x256 at one block an
# SM, which the model puts ~10% ahead of 128x128 x2 there; measured (H100, s10_tile_probe.py
# --short-k-wide, results/h100/logs/e38ffd7/short-k-wide.txt) 128x128 w32x64 x2 beat it at all 8
# such shapes, 1.04-1.25x. Variant ``short_k_2blocks`` of scripts/model_variant_probe.py sets 2;
# the rule that turns it on is in docs/dispatch.md, "Short K on 4-byte copies".
SHORT_K_UNALIGNED_MIN_BLOCKS = 1
SHORT_K_UNALIGNED_MAX_K = 256


@dataclass(frozen=True)
class Gpu:
    sms: int = 132
    clock_hz: float = 1.98e9
    bandwidth: float = 3.3e12  # bytes/s a reduce kernel reaches (measured copy: 3.96e12)
    cc: int = 90

    @property
    def sm_flops(self) -> float:
        return 2 * FFMA_PER_SM_CYCLE * self.clock_hz


@dataclass(frozen=True)
class Prediction:
    candidate: space.Candidate
    split_k: int
    seconds: float
    blocks: int
    waves: float

    def tflops(self, M, N, K, batch=1) -> float:
        return 2.0 * M * N * K * batch / self.seconds / 1e12


def runs_as(cand: space.Candidate, aligned: bool = True, problem=None):
    """(spec, config) of the kernel the plan runs for ``cand``: the candidate itself; for operands
    TMA cannot take (``aligned=False``) the stage's stand-in, for ``problem`` (the problem the
    kernel sees) where given and STAND_IN_OF_PROBLEM, else its problem-free form."""
    spec, cfg = cand.spec(), cand.config()
    if aligned:
        return spec, cfg
    if problem is not None and STAND_IN_OF_PROBLEM:
        return spec.fallback(cfg, problem) or (spec, cfg)
    return spec.fallback_config(cfg)


def predict(cand: space.Candidate, M: int, N: int, K: int, batch: int, split_k: int, gpu: Gpu, *,
            cluster: bool = True, aligned: bool = True, problem=None, runs=None) -> Prediction:
    """``cluster=False``: as if every split wrote a workspace (the plans before split-K in a
    cluster; on GPUs before sm_90 they all do). ``aligned=False``: operands TMA cannot take: the
    kernel is the stand-in ``runs_as`` gives (for ``problem``, the problem the kernel sees, where
    given); ``runs``: that (spec, config), where the caller has it already."""
    spec, cfg = runs if runs is not None else runs_as(cand, aligned, problem)
    bm, bn = cfg["block_m"], cfg["block_n"]
    bps = cfg.get("min_blocks", 1)
    k_len, s = k_slices(K, split_k)
    tiles = -(-M // bm) * -(-N // bn) * batch
    blocks = tiles * s
    sms = gpu.sms
    capacity = sms * bps
    waves = blocks / capacity
    # Blocks sharing an SM in the first wave; fewer than bps get more of it each, but fewer warps
    # hide less latency: the SM's rate falls like the square root of its occupancy. The efficiency
    # is the candidate's at its own blocks per SM: a stand-in holding fewer runs at that occupancy.
    # (Integer ceilings: the tuner's and the cut's rankings call this ~10^3 times a plan-cache miss.)
    resident = min(bps, -(-blocks // sms))
    eff = cand.efficiency * (1.0 if fits(cand, M, N, (bm, bn)) else OVERSIZED_EFFICIENCY)
    exponent = OCCUPANCY_EXPONENT if aligned else OCCUPANCY_EXPONENT_UNALIGNED
    occupancy = resident / max(bps, cand.blocks_per_sm())
    sm_rate = eff * gpu.sm_flops * occupancy ** exponent
    compute = 2.0 * bm * bn * max(k_len, 1) / (sm_rate / resident)
    clustered = s > 1 and cluster and gpu.cc >= CLUSTER_MIN_CC and _adds_in_cluster(spec, cfg, M, N, s, batch, gpu.sms)
    exposure = EPILOGUE_EXPOSURE if aligned else EPILOGUE_EXPOSURE_UNALIGNED
    epilogue = exposure * 4.0 * bm * bn * resident * sms / gpu.bandwidth if exposure else 0.0
    if clustered and EPILOGUE_CLUSTER_BAND:
        epilogue /= s
    per_block = compute + BLOCK_OVERHEAD_S + epilogue
    seconds = math.ceil(waves) * per_block  # a partial last wave costs a whole one
    if clustered:
        seconds += math.ceil(waves) * CLUSTER_REDUCE_S
        if blocks > capacity:
            seconds /= CLUSTER_MULTIWAVE_EFFICIENCY
    elif s > 1:
        seconds += LAUNCH_S + 4.0 * M * N * batch * (s + 2) / gpu.bandwidth
    return Prediction(cand, s, seconds, blocks, waves)


def in_cluster(cand: space.Candidate, M: int, N: int, splits: int, aligned: bool = True, batch: int = 1,
               sms: int = 0) -> bool:
    """The plan adds the slices in a thread block cluster (s10 and s11: 2 slices on any grid, more
    where all the grid's clusters are resident on ``sms`` SMs; on sm_90: ``predict`` asks only
    there). H200: the workspace path's whole modelled cost (4096x512x2048: 12.7 us) is what the
    cluster saves. ``aligned=False``: the stage that runs operands TMA cannot take decides (s11
    hands them to s10's stand-in config, whose buffers do not hold the partial of three of the
    space's tiles: the 128x128 x2 pair, 128x256 bk16; ``predict`` asks the stand-in for the
    problem, ``runs_as``)."""
    return _adds_in_cluster(*runs_as(cand, aligned), M, N, splits, batch, sms)


def _adds_in_cluster(spec, cfg, M, N, splits, batch, sms) -> bool:
    """The stage's own rule (one cluster per tile of the kernel that runs)."""
    return spec.cluster_slices(cfg, splits, clusters=spec.tiles(cfg, M, N, batch), sms=sms)


# A tile larger than the problem along M or N. Until 2026-12-02 s11 handed such a problem to s10,
# and this factor on the candidate's efficiency came from two H200 measurements of that
# (scripts/heldout_probe.py, results/h200/logs/heldout-probe.txt: 32x4096x4096 ran 70.5 us as s10
# 64x256 split 8 against 49.2 as s11 32x64 split 4; 48x4096x11008 161 against 198). s11 now runs
# it on TMA with its boxes hanging over, at the same time as a problem that fills the tile
# (scripts/overhang_probe.py, results/h200/logs/overhang-probe.txt: 0.97-1.00 of it, and 1.01-1.19x
# faster than s10), so the wasted rows cost only what the model already counts. The factor stays:
# the small tiles' efficiencies were fitted with it, and on the overhang probe's 10 shapes it keeps
# the model's pick the measured best (at M = 80-96 one 32-row tile family beats a 128-row tile
# by 15-20%, where a factor of 1 would pick the 128-row tile).
OVERSIZED_EFFICIENCY = 0.8


def fits(cand: space.Candidate, M: int, N: int, tile: tuple[int, int] | None = None) -> bool:
    """The tile (the candidate's, or ``tile``: the one that runs) is no larger than the problem
    along M and N."""
    bm, bn = tile or cand.tile()
    return bm <= M and bn <= N


def rank(M: int, N: int, K: int, batch: int = 1, gpu: Gpu | None = None, *, allow_split: bool = True,
         candidates=None, cluster: bool = True, aligned: bool = True, problem=None) -> list[Prediction]:
    """Every candidate x split, best first (one prediction per distinct slice count).
    ``cluster=False``: no split is added in a cluster (model_fit.py: the measurements taken
    before there was one). ``aligned=False``: operands TMA cannot take, ``problem`` the one the
    kernel sees (``predict``)."""
    gpu = gpu or Gpu()
    out, last = [], []
    short_k_floor = SHORT_K_UNALIGNED_MIN_BLOCKS if not aligned and K < SHORT_K_UNALIGNED_MAX_K else 1
    for cand in candidates if candidates is not None else space.candidates(gpu.cc):
        if candidates is None and not space.applies(cand, M, N):
            continue
        seen = set()
        runs = runs_as(cand, aligned, problem)
        ranked_last = runs[1].get("min_blocks", 1) < short_k_floor
        for split in split_counts(cand, M, N, batch, gpu, runs[1]) if allow_split else (1,):
            if split > 1 and -(-K // split) < MIN_K_SLICE:
                break
            p = predict(cand, M, N, K, batch, split, gpu, cluster=cluster, aligned=aligned, runs=runs)
            if p.split_k in seen:
                continue
            seen.add(p.split_k)
            (last if ranked_last else out).append(p)
    out.sort(key=lambda p: (p.seconds, p.split_k))
    last.sort(key=lambda p: (p.seconds, p.split_k))
    return out + last


WAVE_FITS = 4  # wave counts whose slice count split_counts adds


def split_counts(cand: space.Candidate, M: int, N: int, batch: int, gpu: Gpu, cfg: dict | None = None) -> list[int]:
    """The slice counts worth predicting for a tile, ascending: space.SPLITS, and the counts that
    fill 1..WAVE_FITS waves (the most slices whose T*S blocks still fit in w waves of SMs x
    blocks per SM: 24 tiles of 128x256 on 132 SMs: 5, 11, 16, 22, where SPLITS has 4, 6, 12, 16).
    ``cfg``: the config that runs (``runs_as``), where not the candidate's."""
    cfg = cfg or cand.config()
    tiles = math.ceil(M / cfg["block_m"]) * math.ceil(N / cfg["block_n"]) * batch
    capacity = gpu.sms * cfg.get("min_blocks", 1)
    fill = {w * capacity // tiles for w in range(1, WAVE_FITS + 1)}
    return sorted(set(space.SPLITS) | {s for s in fill if 2 <= s <= space.SPLITS[-1]})


def best(M, N, K, batch=1, gpu=None, *, allow_split=True, cluster=True, aligned=True, problem=None) -> Prediction:
    return rank(M, N, K, batch, gpu, allow_split=allow_split, cluster=cluster, aligned=aligned, problem=problem)[0]


# ---- wave quantization answered in the plan: a first part of whole waves, then the tail ---------

@dataclass(frozen=True)
class TailSplit:
    """D's rows (``axis`` "m") or columns ("n") cut at ``start``: the part before it runs
    ``first`` (whole waves of one tile, no split-K), the rest ``rest`` (its own best tile and
    split-K), one kernel after the other. ``seconds``: both, plus a launch."""

    seconds: float
    axis: str
    start: int
    first: Prediction
    rest: Prediction


TAIL_FIRST_TILES = 3    # the distinct tiles of the whole problem's best predictions tried for the first part
TAIL_FULL_FILL = 0.9    # a tile whose own last wave is at least this full needs no tail


def tail_split(M: int, N: int, K: int, batch: int = 1, gpu: Gpu | None = None, *,
               ranked: list | None = None) -> TailSplit | None:
    """The best cut of an aligned problem (operands TMA takes) into a first part that fills whole
    waves of one of its best tiles and a tail with a plan of its own, by the waves model; None
    where no cut helps a tile (each of the TAIL_FIRST_TILES best tiles of ``ranked``, the
    problem's ``rank``, fills its last wave at least TAIL_FULL_FILL, or runs less than a wave).
    The first part takes the most whole tile rows (or columns) that fit its whole waves."""
    gpu = gpu or Gpu()
    ranked = ranked if ranked is not None else rank(M, N, K, batch, gpu)
    firsts: list = []
    for p in ranked:
        if p.candidate not in firsts:
            firsts.append(p.candidate)
        if len(firsts) == TAIL_FIRST_TILES:
            break
    cut = None
    for cand in firsts:
        bm, bn = cand.tile()
        capacity = gpu.sms * cand.blocks_per_sm()
        waves = math.ceil(M / bm) * math.ceil(N / bn) * batch / capacity
        if waves < 1 or waves - math.floor(waves) >= TAIL_FULL_FILL or waves == math.floor(waves):
            continue
        for axis, along, step, line in (("m", M, bm, math.ceil(N / bn) * batch),
                                        ("n", N, bn, math.ceil(M / bm) * batch)):
            start = (math.floor(waves) * capacity) // line * step
            if not 0 < start < along:
                continue
            m1, n1, m2, n2 = (start, N, M - start, N) if axis == "m" else (M, start, M, N - start)
            first = predict(cand, m1, n1, K, batch, 1, gpu)
            rest = best(m2, n2, K, batch, gpu)
            seconds = first.seconds + rest.seconds + LAUNCH_S
            if cut is None or seconds < cut.seconds:
                cut = TailSplit(seconds, axis, start, first, rest)
    return cut
