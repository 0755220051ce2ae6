"""stage="auto": problem -> Choice (stage, config, split-K, repack). Small plain functions.

In order, first match wins:

0. **Tensor cores** (``precision`` "tf32" or "tf32x3"): s12 / s13 where the problem pays for
   their operand pre-passes (tensor_core.py); else the FP32 SIMT steps below, which are at
   least as accurate.
1. **Skinny** (M or N <= 16, GEMV-like): the memory-bound kernel with its own split-K rule
   (skinny.py).
2. **Tuned**: the tuned table's entry for this shape's bucket, layout and alignment class
   (table.py: ``lookup``).
3. **Nearest**: no bucket matches, but tuned shapes lie within ``table.NEAREST_RADIUS`` octaves
   in log-shape space (same layout and batch bucket; aligned problems only,
   ``NEAREST_ALIGNED_ONLY``): the tile that the nearest of them measured fastest (up to
   ``table.NEAREST_K`` vote, a neighbour's weight 1 / (distance + NEAREST_EPS)), with the split-K
   the waves model gives that tile at this shape (split-K follows the tile count, a property of
   the shape, not of the neighbour); unless the model puts that tile more than
   ``NEAREST_MODEL_SLACK`` times slower than its own best here.
4. **Heuristic**: the waves model with split-K (model.py) over the config space (space.py), for
   any GPU and shape the tables do not cover. Never one fixed stage.

A table entry's stage and config are checked against the stage's constraints and the GPU's
compute capability before they are used: a stale or foreign entry is skipped with one warning.

The choice says ``repack`` when an operand's rows are not 16-byte aligned and the problem is
large enough that copying it into an aligned workspace (so TMA and float4 apply) costs less than
the scalar path it avoids (000 §12: alignment pitfalls), and for a K-major B when M is large
(``should_repack``), and ``a_transpose`` for a row-major A when N is wide (``should_transpose_a``:
the SIMT stages read a column-major A faster; the tables are then read for the layout the kernel
sees, e.g. "tn" for an "nn" call, and where both layouts have a tuned entry their measured times
and the copy's decide); the copies themselves are gemmlab/problem.py's (``Problem.repacks``).
"""
from __future__ import annotations

from dataclasses import replace

from ..plan import Choice, Tail
from ..problem import Problem
from ..stages import get as get_stage
from . import model, skinny, space, table
from .tensor_core import tensor_core_choice

# 2MNK over the bytes a repack copies (read + write). At 64, 777x555x333 (81 FLOP/B) was repacked
# and ran 30.0 us against 23.2 without (each copy a kernel of its own then; heldout-probe.txt).
# With both copies in one launch (2026-12-03, scripts/repack_probe.py, results/h200/logs/
# repack-probe.txt), on the wide suite's unaligned shapes: 1001x999x1003 nn (125 FLOP/B) 72.8 ->
# 68.5 us repacked; 513x1025x257 tt (85) 27.7 -> 26.8 and 333x555x777x8 tt (52) 104.9 -> 103.1,
# both within 4%; 129x257x1025x16 tn (21) 88.5 -> 92.5. 100 takes the clear gain only.
REPACK_MIN_FLOP_PER_BYTE = 100
# No operand is copied below this K (0: off). The rules above weigh the copy against the FLOP, and
# 2MNK over the copied bytes does not depend on K; but on the H100 (running the H200 table's plans,
# results/h100/logs/6e0b2d3/eff32x64-seed5*.txt, 600 random shapes) the 33 plans that repacked at
# K <= 256 ran at 0.753 of cuBLAS where the unrepacked ones at K <= 256 ran at 1.016 (s11, 78) and
# 0.960 (s10, 87). 257 since the twenty-seventh session, by the rule written before the run
# (docs/dispatch.md, "Repacked plans on random shapes"): on fresh seeds 55-57 (H100 running the
# H200 table's plans, results/h100/logs/34dd8f1/repack-k-seed5*.txt) the 25 plans it changes ran
# 1.098x faster (worst 1272x2704x191 tt 0.922, 1344x1093x113 nt 0.617 -> 0.779 of cuBLAS) and
# each seed's auto/cuBLAS rose (0.932 -> 0.940, 0.929 -> 0.932, 0.919 -> 0.925). 513 failed it
# (1519x3843x260 nt 0.854x): from K = 257 on the copies pay often enough.
REPACK_MIN_K = 257
TRANSPOSE_B_MIN_M = 1024       # K-major B is transposed when M >= this: 2MNK / 8KN = M/4 FLOP per byte
# (below it the copy is all the transpose adds: 768x768x2048 nt 80.3 -> 87.4 us transposed, 11 of 12
# shapes slower; scripts/b_transpose_min_m_probe.py, results/h200/logs/b-transpose-min-m-probe.txt)
# The K-major B rule takes aligned problems only (B alone copied, M/4 FLOP per byte); unaligned ones
# follow REPACK_MIN_FLOP_PER_BYTE (True: the rule copied them too, whatever their FLOP per copied byte,
# and the copy then took every unaligned operand). H200, 2026-12-04 (scripts/model_variant_probe.py,
# variant ``brule_aligned``, results/h200/logs/variants-16.txt / -18.txt): the 5 shapes of 278 it
# moves all ran faster without the copy, 1641x119x149 tt 0.615 -> 0.822 of cuBLAS, 1697x171x1055 nt
# 0.726 -> 0.882, 2955x443x1696 tt 0.696 -> 0.760, 1999x333x1501 tt 0.794 -> 0.856 (both seeds).
TRANSPOSE_B_ANY_ALIGNMENT = False
# A row-major A is transposed when N >= this. On the H200 s11 reads a column-major A (As[k][m])
# 4-10% faster than a row-major one (scripts/tn_probe.py, results/h200/logs/tn-probe.txt: 4096^3
# 2.67 against 2.77 ms with the copy, 8192^3 21.0 against 21.8); the copy moves 8MK bytes (3.0-3.2
# TB/s when large, ~10 us at 8 MB): at ~5% of 2MNK at 50 TFLOPS the two meet near N ~ 1500 (the
# probe: +11 us at 4096x2048x512, +3.7 at 4096x1536x512, -4.5 at 4096x512x512, -8 at 4096x512x2048).
TRANSPOSE_A_MIN_N = 1536
TRANSPOSE_A_MIN_M = 128
TRANSPOSE_BYTES_PER_S = 2.5e12  # the transposing copy's rate (read + write), for comparing tuned entries
TRANSPOSE_LAUNCH_S = 3e-6
NEAREST_EPS = 0.25             # octaves added to a neighbour's distance before its vote is weighed
# A neighbour's tile that the waves model puts this much slower than its own best at this shape is
# taken for a regime change between the two shapes, not for a model error, and the heuristic
# decides instead. The model's worst regret on the shipped table's measured shortlists is 1.28
# (tests/test_heuristics.py); an H200 case it catches: 64x11008x4096 voted 128x256 split 3 from
# 128x11008x4096 (a tile twice M, run as s10: 0.50x cuBLAS; model 1.98x its best) and, in nt, 32x128
# from 32x11008x4096 (B read twice: 0.81x; model 1.43x). 1.15 since 2026-12-04 (tenth session): of
# the random shapes the H200 ran (results/h200/logs/variants-16.txt, -18.txt, in one process each),
# the 7 whose voted tile the model put 1.17-1.30x over its best ran the model's pick (variant
# ``nearest_off``: the same plans) 0.787 -> 0.869 of cuBLAS, on both seeds (2: 0.782 -> 0.868, 5: 0.789
# -> 0.869), worst 1668x932x296 tn 0.865 -> 0.788; 780x2500x2215 nt 0.690 -> 0.858, 575x2665x2552 nt
# 0.727 -> 0.920 (tests/test_heuristics.py). At 1.3 they took the neighbours' tile.
NEAREST_MODEL_SLACK = 1.15
# Problems that run unaligned (s10's 4-byte copies, not repacked) take no neighbour's tile: they are
# small (a repack pays from REPACK_MIN_FLOP_PER_BYTE on), and there the best tile follows the edge
# waste and the waves of the shape itself. H200, 2026-12-03: with the grid suite's unaligned entries
# tuned (results/h200/sweep-own, sweep-heldout), every unaligned shape whose choice the neighbours
# changed ran slower than the waves model's pick: 777x555x333 tt 0.976 -> 0.767 of cuBLAS (64x128
# split 2 from 767x767x383), 601x901x301 nn 0.785 -> 0.714 (64x256 split 2 from 383x767x767).
# Their own buckets still read the table (step 2). Repacked problems are aligned ones here: of the
# three whose choice the grid's repacked entries changed, two ran faster (2304x2304x576 tn 0.875 ->
# 0.907, 2560x2560x640 tt 0.958 -> 0.988) and one slower (1999x333x1501 tt 0.846 -> 0.794).
NEAREST_ALIGNED_ONLY = True
# A bucket spans half an octave per dimension, and its entry was measured at one shape in it
# (1792^3 nt read the tn entry measured at 2048^3: 256x128, 128 tiles there, 0.97 of a wave, but 98
# tiles, 0.74 of one, at 1792^3; H200 own suite 0.837 of cuBLAS). With this set, an entry measured at
# another shape is taken only where the waves model, relative to its own best, puts the entry's
# plan no more than this much further behind here than at the entry's shape (a regime change
# between the two shapes, as NEAREST_MODEL_SLACK; measured relative to the entry's shape, so the
# model's bias about the tile cancels); else the nearest neighbours and the heuristic decide.
# None: off. On since 2026-12-06 (docs/dispatch.md, "A tuned entry off its measured shape"): on an
# H100 running the H200 table's plans, 1.15 made every plan it changed faster, 26 of seed 61's 26
# shapes in tuned buckets (1.40x, the least 1.12x) and 19 of seed 89's 40 (1.35x, the least 1.13x).
TUNED_MODEL_SLACK = 1.15
# Where A would be transposed (should_transpose_a) but only the call's own layout is tuned (its
# bucket, or its neighbours). The tuner measures the call's layout only, never the transposed plan
# against it, so such an entry says nothing about the transpose. "heuristic": the transpose is kept
# and the neighbours of the layout the kernel sees, else the waves model, pick the tile (the entry
# unused); "tile": kept, with the own layout's tile and split-K; None: the entry's plan runs without
# it (the rule until 2026-12-07). "heuristic" since the twenty-second session: on an H100 running
# the H200 table's plans, the 12 of the 15 plans it changes among the held-out, wide and own suites
# that the H100 had also run as the heuristic's (a53f429, no table) ran 1-10% faster with A
# transposed, none slower (geometric mean +4.8%; 256x8192x4096 nt 0.878 -> 0.942 of cuBLAS,
# 2047x2049x511 nt 0.852 -> 0.938; results/h100/logs/5bdc074/README.md). Timed as an A/B in one run
# (twenty-fourth session, H100, results/h100/logs/c4c99f5): over those 15 plans 0.989 of cuBLAS
# against 0.956 for None and 0.982 for "tile". Not yet timed on an H200.
A_TRANSPOSE_WITHOUT_ITS_ENTRY = "heuristic"
# Wave quantization answered in the plan (model.tail_split): where the heuristic decides (no tuned
# entry) on operands TMA takes, and the waves model puts a cut of D's rows or columns into whole
# waves of one tile plus a tail with its own plan (two kernels) at least this much faster than the
# best single plan, the plan makes that cut (plan.Tail). None: never. 1.05 since the twenty-fourth
# session: on an H100 running the H200 table's plans (h200_run.sh tail, results/h100/logs/c4c99f5),
# the 10 single-matrix plans with K >= 512 it changed among 13 ran 1.03-1.16x faster (5000^3 nn
# 1.010 -> 1.085 of cuBLAS, 2900x2901x2903 0.986 -> 1.117, 4096x2304x768 0.943 -> 1.097). Checked
# on 39 shapes the bounds below were not set on (twenty-fifth session, results/h100/logs/3cd0cad):
# 1.002 of cuBLAS against 0.924 off, one loss (TAIL_LARGER_TILE_MIN_K).
TAIL_MIN_GAIN = 1.05
# With TAIL_MIN_GAIN on, also where the tuned neighbours chose the tile: the cut is taken where the
# waves model puts it that much below the neighbours' plan (the model's time for their tile and
# split-K here). On since the twenty-fourth session: 7 of the 10 plans above were the neighbours'.
TAIL_OVER_NEAREST = True
# No cut below this K: at K = 378 the cut's 128x256 first part (the model overrates a large tile over
# a short K: its prologue and epilogue) ran 0.85x the neighbours' 64x128 (2426x5810x378 nn); at
# K = 448 it gained 3% (2789x8099x448 nn), from K = 576 on 6-13%.
TAIL_MIN_K = 512
# Nor on batched problems (False): the cut then splits every matrix, and small ones leave a sliver
# (160x160x160x100 nt: 128 rows, then 32) that ran 0.90x the single plan.
TAIL_BATCHED = False
# Below this K the cut's first part may not use a tile of more than twice the elements of the plan
# it replaces: the model overrates a large tile over a short K. Checked on shapes the bounds above
# were not set on (h200_run.sh tail-check, 39 shapes, H100, results/h100/logs/3cd0cad): the cut
# ran 1.002 of cuBLAS against 0.924 without it, but its 128x256 over the neighbours' 64x128 at
# K = 572 ran 0.90x (2896x1897x572 tt); the same 4x larger tile gained 7% at K = 768
# (4096x2304x768 tt), as 2x did at K = 932 (2927x1676x932 nt).
TAIL_LARGER_TILE_MIN_K = 768


def should_repack(p: Problem) -> bool:
    """Copy operands into the layout the kernels read fastest: unaligned operands when the
    problem is large against the bytes copied; a K-major B (the [n][k] tile layout measured ~20%
    slower on the H200 than [k][n]) when M is large enough that the copy is a few percent."""
    if p.K == 0 or p.K < REPACK_MIN_K:
        return False
    aligned = p.operands_aligned()
    if b_rule(p) and (TRANSPOSE_B_ANY_ALIGNMENT or aligned):
        return True
    if aligned:
        return False
    flops = 2.0 * p.M * p.N * p.K * p.batch
    moved = 8.0 * (p.M * p.K + p.K * p.N) * p.batch
    return flops / moved >= REPACK_MIN_FLOP_PER_BYTE


def b_rule(p: Problem) -> bool:
    """A K-major B that the kernels read faster as a row-major copy (M large enough to pay for it)."""
    return p.operand("b").strictly_k_major and p.M >= TRANSPOSE_B_MIN_M


def should_transpose_a(p: Problem) -> bool:
    """Transpose a row-major (strictly K-major) A into a column-major copy before a SIMT stage:
    when N is wide enough that the faster kernel pays for the copy (TRANSPOSE_A_MIN_N)."""
    return (p.K > 0 and p.N >= TRANSPOSE_A_MIN_N and p.M >= TRANSPOSE_A_MIN_M
            and p.operand("a").strictly_k_major)


def transpose_a_seconds(p: Problem) -> float:
    """What the A transpose costs (the model above): 8MK bytes per batch, plus a launch."""
    return 8.0 * p.M * p.K * p.batch / TRANSPOSE_BYTES_PER_S + TRANSPOSE_LAUNCH_S


def _tuned_with_transpose(p: Problem, ident: dict, aligned: bool, layout: str, aligned_seen: bool):
    """Step 2 where A would be transposed: (entry, a_transpose). Both tables are read, the call's
    layout and the layout the kernel sees after the transpose; with an entry for each, the
    transpose is kept when the second's measured time plus the copy's beats the first's; with the
    second alone, it runs transposed; with the first alone, A_TRANSPOSE_WITHOUT_ITS_ENTRY says; with
    none, (None, True)."""
    own = table.lookup(ident, p.M, p.N, p.K, p.batch, p.layout, aligned)
    seen = table.lookup(ident, p.M, p.N, p.K, p.batch, layout, aligned_seen)
    if seen is None:
        if own is not None and A_TRANSPOSE_WITHOUT_ITS_ENTRY == "heuristic":
            return None, True
        return own, own is None or A_TRANSPOSE_WITHOUT_ITS_ENTRY == "tile"
    if own is None:
        return seen, True
    faster = 1e-3 * float(seen.get("time_ms", 0)) + transpose_a_seconds(p) < 1e-3 * float(own.get("time_ms", 0))
    return (seen, True) if faster else (own, False)


def stand_in_problem(p: Problem, aligned: bool, repack: bool, a_transpose: bool) -> Problem | None:
    """The problem the kernel sees (after the plan's copies), for the waves model to run the stand-in
    the plan builds for it (``model.runs_as``) where the operands are unaligned; None where aligned."""
    return None if aligned else p.repacks(repack, a_transpose)[1]


def with_config(spec, cfg, overrides):
    """``cfg`` with a caller's ``config=`` overrides applied (checked against the stage)."""
    if not overrides:
        return cfg
    merged = dict(cfg)
    merged.update(overrides)
    return spec.config(merged)


def entry_config(entry: dict, gpu: model.Gpu):
    """(spec, config) of a table entry, checked: its stage exists and runs on ``gpu`` and its
    config is legal for it (ValueError / ConfigError otherwise)."""
    spec = get_stage(entry["stage"])
    if spec.min_cc > gpu.cc:
        raise ValueError(f"needs compute capability {spec.min_cc}")
    return spec, spec.config(entry.get("config") or {})


def _stale(entry: dict, e: Exception) -> None:
    table.warn(f"tuning entry {entry.get('bucket')} {entry.get('layout')} from {entry.get('_source')} "
               f"cannot be used ({e}); using the nearest tuned shapes or the heuristic")


def measured_at(entry: dict, p: Problem) -> bool:
    """Whether the entry was measured at ``p``'s (M, N, K)."""
    return tuple(int(round(x)) for x in table.entry_shape(entry)) == (p.M, p.N, p.K)


def off_shape_regret(entry: dict, spec, cfg: dict, split: int, p: Problem, gpu: model.Gpu, aligned: bool,
                     repack: bool, a_transpose: bool, allow_workspace: bool = True) -> float:
    """How much further behind the waves model's best the entry's plan (tile and split) is at
    ``p`` than at the shape the entry was measured at (both as ratios to the model's best there):
    1.0 at that shape itself. ``choose`` asks only where TUNED_MODEL_SLACK is set; `gemmlab choose`
    shows it for every entry used off its shape."""
    if measured_at(entry, p):
        return 1.0
    here, there = (p.M, p.N, p.K), tuple(int(round(x)) for x in table.entry_shape(entry))
    cand = space.candidate_for(spec.id, cfg, gpu.cc)

    def regret(M, N, K, prob):
        seen = stand_in_problem(prob, aligned, repack, a_transpose)
        mine = model.predict(cand, M, N, K, p.batch, split, gpu, aligned=aligned, problem=seen)
        best = model.best(M, N, K, p.batch, gpu, allow_split=allow_workspace, aligned=aligned, problem=seen)
        return mine.seconds / best.seconds

    # the entry was measured on contiguous operands (the tuner's)
    at = Problem.dense(*there, p.layout, p.batch, a_ptr=0, b_ptr=0, d_ptr=0)
    return regret(*here, p) / regret(*there, at)


def nearest_choice(p: Problem, gpu: model.Gpu, ident: dict, aligned: bool, *, allow_workspace: bool = True,
                   repack: bool = False, config=None, layout: str | None = None,
                   a_transpose: bool = False) -> Choice | None:
    """Step 3: the tile the nearest tuned neighbours vote for, with the waves model's split-K for
    it at this shape; None without a usable neighbour. ``layout``: the neighbours' (default the
    problem's). ``aligned``: whether the kernel's operands are (``repack`` and ``a_transpose``
    say what it sees)."""
    if NEAREST_ALIGNED_ONLY and not aligned:
        return None
    votes: dict = {}
    for i, (d, e) in enumerate(table.nearest(ident, p.M, p.N, p.K, p.batch, layout or p.layout, aligned)):
        try:
            spec, cfg = entry_config(e, gpu)
        except Exception as err:  # a stale entry: say so once, ask the next neighbour
            _stale(e, err)
            continue
        key = (spec.id, tuple(sorted(cfg.items())))
        vote = votes.setdefault(key, [0.0, i, spec, cfg])
        vote[0] += 1.0 / (d + NEAREST_EPS)
    if not votes:
        return None
    _, _, spec, cfg = max(votes.values(), key=lambda v: (v[0], -v[1]))
    try:
        cfg_run = with_config(spec, cfg, config)
    except Exception:  # the caller's overrides do not fit the neighbours' tile: the heuristic's turn
        return None
    cand = space.candidate_for(spec.id, cfg, gpu.cc)
    seen = stand_in_problem(p, aligned, repack, a_transpose)
    mine = model.rank(p.M, p.N, p.K, p.batch, gpu, allow_split=allow_workspace, candidates=[cand],
                      aligned=aligned, problem=seen)[0]
    best = model.best(p.M, p.N, p.K, p.batch, gpu, allow_split=allow_workspace, aligned=aligned, problem=seen)
    if mine.seconds > NEAREST_MODEL_SLACK * best.seconds:
        return None
    return Choice(spec, cfg_run, mine.split_k, repack, "nearest", a_transpose)


def choose(p: Problem, gpu: model.Gpu, ident: dict, *, allow_workspace: bool = True, config=None,
           precision: str = "ieee") -> Choice:
    """The Choice for the kernel-level problem ``p`` on a GPU described by ``gpu`` (its model)
    and ``ident`` (its tables' identity: gpu name, arch, compiler). ``config``: overrides applied
    to whatever stage is chosen (they must be legal for it). ``precision``: "ieee" (the SIMT
    ladder), "tf32" or "tf32x3" (tensor cores, where they pay; else the SIMT ladder, which is at
    least as accurate). ``allow_workspace`` False: no split-K, no repack, no pre-passes."""
    M, N, K, batch = p.M, p.N, p.K, p.batch
    if precision != "ieee":
        tc = tensor_core_choice(p, gpu.sms, precision, allow_workspace)
        if tc is not None:
            return replace(tc, config=with_config(tc.spec, tc.config, config))

    # 1. Skinny: M or N <= 16.
    if K > 0 and skinny.applies(M, N):
        cfg, split = skinny.choose(p, gpu.sms)
        if not allow_workspace:
            split = 1
        spec = skinny.STAGE
        return Choice(spec, with_config(spec, spec.config(cfg), config), split, False, "skinny")

    repack = allow_workspace and should_repack(p)
    if (allow_workspace and not repack and p.K > 0 and b_rule(p) and not p.operands_aligned()
            and table.lookup(ident, M, N, K, batch, p.layout, False) is None
            and table.lookup(ident, M, N, K, batch, p.layout, True) is not None):
        # A bucket tuned repacked only (before TRANSPOSE_B_ANY_ALIGNMENT was False): the measurement
        # beats the rule. H200: 3071x383x1535 tt 126.9 us repacked, 141.1 unaligned (results/h200/
        # logs/brule-grid.txt).
        repack = True
    aligned = p.operands_aligned() or repack
    # A row-major A to be transposed: the tables are read for the layout the kernel then sees.
    a_t = allow_workspace and should_transpose_a(p)
    layout, layout_aligned = p.layout, aligned  # the tables' keys for the problem the kernel sees

    # 2. Tuned: this shape's bucket.
    if a_t:
        seen = p.repacks(repack, True)[1]
        seen_aligned = aligned or seen.operands_aligned()
        entry, a_t = _tuned_with_transpose(p, ident, aligned, seen.layout, seen_aligned)
        if a_t:
            layout, layout_aligned = seen.layout, seen_aligned
    else:
        entry = table.lookup(ident, M, N, K, batch, layout, aligned)
    if entry is not None:
        try:
            spec, cfg = entry_config(entry, gpu)
            split = int(entry.get("split_k", 1)) if allow_workspace else 1
            if not TUNED_MODEL_SLACK or off_shape_regret(entry, spec, cfg, split, p, gpu, layout_aligned, repack,
                                                         a_t, allow_workspace) <= TUNED_MODEL_SLACK:
                return Choice(spec, with_config(spec, cfg, config), split, repack, "tuned", a_t)
        except Exception as e:  # a stale entry: say so once, go on
            _stale(entry, e)

    # 3. Nearest: the tuned neighbours' tile (with A transposed, the neighbours of the layout the
    # kernel sees; where there are none, A_TRANSPOSE_WITHOUT_ITS_ENTRY says whether the call
    # layout's are asked: not by default, the heuristic then decides with A transposed).
    near = nearest_choice(p, gpu, ident, layout_aligned, allow_workspace=allow_workspace, repack=repack,
                          config=config, layout=layout, a_transpose=a_t)
    if near is None and a_t and A_TRANSPOSE_WITHOUT_ITS_ENTRY != "heuristic":
        keep = A_TRANSPOSE_WITHOUT_ITS_ENTRY == "tile"
        near = nearest_choice(p, gpu, ident, aligned, allow_workspace=allow_workspace, repack=repack, config=config,
                              a_transpose=keep)
    if near is not None:
        if TAIL_OVER_NEAREST and _tail_allowed(p, aligned, allow_workspace, config):
            ranked = model.rank(M, N, K, batch, gpu, allow_split=allow_workspace)  # aligned: no stand-in
            theirs = model.predict(space.candidate_for(near.spec.id, near.config, gpu.cc), M, N, K, batch,
                                   near.split_k, gpu)
            cut = tail_cut(p, gpu, [theirs] + ranked, aligned, allow_workspace, config)
            if cut is not None:
                return _with_tail(cut, theirs.seconds, near.repack, "nearest", near.a_transpose)
        return near

    # 4. Heuristic (on operands TMA cannot take, the model runs the stand-in the plan builds for the
    # problem the kernel sees).
    ranked = model.rank(M, N, K, batch, gpu, allow_split=allow_workspace, aligned=aligned,
                        problem=stand_in_problem(p, aligned, repack, a_t))
    best = ranked[0]
    cut = tail_cut(p, gpu, ranked, aligned, allow_workspace, config)
    if cut is not None:
        return _with_tail(cut, best.seconds, repack, "heuristic", a_t)
    spec = best.candidate.spec()
    cfg = with_config(spec, best.candidate.config(), config)
    return Choice(spec, cfg, best.split_k, repack, "heuristic", a_t)


def _with_tail(cut: model.TailSplit, single_seconds: float, repack: bool, source: str, a_transpose: bool) -> Choice:
    """The Choice that runs ``cut``: its first part's tile (no split-K), then its tail (with the
    model's times for the cut and for the single plan it replaces, ``single_seconds``)."""
    first, rest = cut.first.candidate, cut.rest.candidate
    tail = Tail(cut.axis, cut.start, rest.spec(), rest.config(), cut.rest.split_k,
                predicted=(cut.seconds, single_seconds))
    return Choice(first.spec(), first.config(), 1, repack, source, a_transpose, tail=tail)


def _tail_allowed(p: Problem, aligned: bool, allow_workspace: bool, config) -> bool:
    """Whether a cut may be weighed at all (before any ranking is worked out for it): TAIL_MIN_GAIN
    on, operands TMA takes (or their copies), a second kernel allowed, no caller's config, K at
    least TAIL_MIN_K, one matrix unless TAIL_BATCHED."""
    return (TAIL_MIN_GAIN is not None and aligned and allow_workspace and not config
            and p.K >= max(TAIL_MIN_K, 1) and (p.batch == 1 or TAIL_BATCHED))


def tail_cut(p: Problem, gpu: model.Gpu, ranked: list, aligned: bool, allow_workspace: bool, config=None):
    """The waves model's cut of ``p`` into whole waves and a tail (model.TailSplit) where
    TAIL_MIN_GAIN takes it: where a cut is allowed (_tail_allowed), and its predicted time at
    least that much below ``ranked[0]``'s (the plan it would replace), and below
    TAIL_LARGER_TILE_MIN_K its first part's tile at most twice ``ranked[0]``'s; else None. The
    first part's tiles are ``ranked``'s best (model.tail_split)."""
    if not _tail_allowed(p, aligned, allow_workspace, config):
        return None
    cut = model.tail_split(p.M, p.N, p.K, p.batch, gpu, ranked=ranked)
    if cut is None or ranked[0].seconds < TAIL_MIN_GAIN * cut.seconds:
        return None
    if not (cut.first.candidate.spec().aligned_path and cut.rest.candidate.spec().aligned_path):
        return None
    if p.K < TAIL_LARGER_TILE_MIN_K and _elements(cut.first) > 2 * _elements(ranked[0]):
        return None
    return cut


def _elements(pred) -> int:
    """The elements of D one block of a prediction's tile holds."""
    bm, bn = pred.candidate.tile()
    return bm * bn
