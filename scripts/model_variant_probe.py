"""`auto` under settings of the runtime's model, on random shapes that no suite and no table
bucket holds, against cuBLAS in the same run (H200).

Each variant sets module constants of the runtime (say heuristics.model.LAUNCH_S), the
plan cache is cleared, and `auto` builds its plan; the plans that differ are each checked against
float64 and timed (CUDA events, L2 flushed, median). Shapes: ``--random N`` log-uniform M, N, K
in 96..4096 (odd where a coin says so, batched 4..64 for a quarter of them), every layout, seeded,
keeping only shapes in no bucket of a suite or of the shipped table; plus ``M N K layout batch``
groups from the command line (``--own``: the own suite's, as in the logs since 2026-12-03).
Prints one line per shape and the geometric mean per variant. ``--dry`` (no GPU, no torch): only
the choices each variant changes, as the H200 would make them.
    python3 scripts/model_variant_probe.py [--random N] [--seed S] [--variants A,B] [--own] [--dry] [M N K layout batch ...]"""
import math
import random
import sys

from gemmlab import api
from gemmlab.bench import suites
from gemmlab.heuristics import choice, model, space, table
from gemmlab.stages import get, s11_tma

# name -> ((object, attribute, value), ...): module constants, or attributes of a stage object
def _eff(label, eff):
    """space.SM90 with the candidate ``label``'s efficiency set to ``eff``."""
    from dataclasses import replace

    return tuple(replace(c, efficiency=eff) if c.label == label else c for c in space.SM90)


def _default(stage, name, value):
    """``stage``'s params with ``name``'s default set to ``value`` and named at it (the kernels'
    names then say so, and the plans count as changed)."""
    from dataclasses import replace

    return tuple(replace(p, default=value, named_at_default=True) if p.name == name else p for p in stage.params)


VARIANTS = {
    "as_is": (),  # the runtime as it is (A/B of two builds: run the probe once with each on PYTHONPATH)
    # a split through the workspace charged 3 us more (ws3) than the model's launch (ws0)
    "ws0": ((model, "LAUNCH_S", model.LAUNCH_S),),
    "ws3": ((model, "LAUNCH_S", model.LAUNCH_S + 3e-6),),
    "ws3+e64": ((model, "LAUNCH_S", model.LAUNCH_S + 3e-6), (space, "SM90", _eff("64x64 w32x32 x3", 0.66))),
    "ws3+rp150": ((model, "LAUNCH_S", model.LAUNCH_S + 3e-6), (choice, "REPACK_MIN_FLOP_PER_BYTE", 150)),
    # unaligned operands: never copied / always copied into an aligned workspace
    "rp_never": ((choice, "REPACK_MIN_FLOP_PER_BYTE", float("inf")),),
    "rp_always": ((choice, "REPACK_MIN_FLOP_PER_BYTE", 0.0),),
    # operands copied at any K (choice.REPACK_MIN_K 0: the runtime before the twenty-seventh session,
    # which set 257 on the run of 34dd8f1 with this setting as is, and 257 and 513 as variants;
    # docs/dispatch.md "Repacked plans")
    "rp_min_k0": ((choice, "REPACK_MIN_K", 0),),
    # s10 and s11 add 3 to 8 slices in a cluster where all the grid's clusters are resident (the
    # runtime since 2026-12-04), or only 2 slices in a cluster and more through the workspace
    "resident2": ((get("s10"), "RESIDENT_CLUSTER_MAX", 2), (get("s11"), "RESIDENT_CLUSTER_MAX", 2)),
    # the model's epilogue term (model.EPILOGUE_EXPOSURE; scripts/model_fit.py --epilogue: fits the
    # tuning measurements' times far better, their picks a little)
    "epilogue2": ((model, "EPILOGUE_EXPOSURE", 2.0),),
    # the fixed cost a wave that scripts/short_k_probe.py measured (H100, twenty-eighth session:
    # 6.8-15.2 us a wave, about 4 us plus the epilogue term at 2.1), and the epilogue term for
    # problems on s10's 4-byte copies at 3.0 (model_fit: the table's 31 such entries, regret 1.0378
    # -> 1.0181, measured / predicted 1.39 -> 0.99); failed its rule on seeds 61-63
    # (docs/dispatch.md, "Repacked plans on random shapes")
    "fixed4_epi2_u3": ((model, "BLOCK_OVERHEAD_S", 4.0e-6), (model, "EPILOGUE_EXPOSURE", 2.0),
                       (model, "EPILOGUE_EXPOSURE_UNALIGNED", 3.0)),
    # the same with the epilogue of a split added in a cluster counted at the band of 1/S of the
    # tile each block stores (model.EPILOGUE_CLUSTER_BAND; fixed4_epi2_u3's losers on seeds 61-63
    # moved from 128x64 split 6-9 to 64x64 split 2-3)
    "fixed4_band": ((model, "BLOCK_OVERHEAD_S", 4.0e-6), (model, "EPILOGUE_EXPOSURE", 2.0),
                    (model, "EPILOGUE_EXPOSURE_UNALIGNED", 3.0), (model, "EPILOGUE_CLUSTER_BAND", True)),
    # the K-major B copy for aligned problems only; unaligned ones follow the FLOP per byte rule (the
    # runtime since 2026-12-04), or for every problem (before)
    "brule_aligned": ((choice, "TRANSPOSE_B_ANY_ALIGNMENT", False),),
    "brule_any": ((choice, "TRANSPOSE_B_ANY_ALIGNMENT", True),),
    # the occupancy exponent of problems on s10's 4-byte copies (model.OCCUPANCY_EXPONENT_UNALIGNED)
    "occ_unaligned25": ((model, "OCCUPANCY_EXPONENT_UNALIGNED", 0.25),),
    # no tuned neighbour's tile (step 3 of heuristics/choice.py): the waves model decides
    "nearest_off": ((choice, "NEAREST_MODEL_SLACK", 0.0),),
    # a neighbour's tile kept up to 1.3x the model's best here (before 2026-12-04, tenth session; 1.15 since)
    "slack130": ((choice, "NEAREST_MODEL_SLACK", 1.3),),
    # s10's stand-in for nt on 4-byte copies at the tile's min_blocks (before 2026-12-04's rule), and
    # without the fragment prefetch where the stand-in has 128 registers a thread or fewer
    "nt_blocks_kept": ((s11_tma, "NT_STAND_IN_FEWER_BLOCKS", False),),
    # the runtime of 1e53e88 (before both rules of 2026-12-04 above)
    "rules_1e53e88": ((s11_tma, "NT_STAND_IN_FEWER_BLOCKS", False), (choice, "TRANSPOSE_B_ANY_ALIGNMENT", True)),
    "no_prefetch_128": ((s11_tma, "STAND_IN_NO_PREFETCH_AT_128_REGISTERS", True),),
    # the waves model counts an unaligned problem's blocks per SM and cluster rule at the space's
    # candidate (before 2026-12-04, ninth session), not at the stand-in the plan runs for the problem
    "stand_in_free": ((model, "STAND_IN_OF_PROBLEM", False),),
    # s11's one-slice plans on a persistent grid (docs/stages/s10-s11.md, "A persistent grid"): the
    # same choices, other kernels (the log marks them " pg")
    "persistent": ((s11_tma, "PERSISTENT_GRID", True),),
    # short K on 4-byte copies: stand-ins of one block an SM ranked last (docs/dispatch.md, "Short K
    # on 4-byte copies")
    "short_k_2blocks": ((model, "SHORT_K_UNALIGNED_MIN_BLOCKS", 2),),
    # s10's stand-in moves its M/N edge blocks inside the operands on 4-byte copies (s10 edge_shift;
    # the runtime since 2026-12-05), or keeps them where they are (before): the same choices, other kernels
    "edge_shift": ((s11_tma, "STAND_IN_EDGE_SHIFT", True),),
    "edge_shift_off": ((s11_tma, "STAND_IN_EDGE_SHIFT", False),),
    # s10's stand-in on 4-byte copies crosses its barrier with the tile's last k in registers where
    # the core reads the outer-product layout (s10 frag_carry: nn, tn, tt), every stand-in (the runtime: at 64 accumulators a thread)
    "frag_carry": ((s11_tma, "STAND_IN_FRAG_CARRY", True), (s11_tma, "STAND_IN_FRAG_CARRY_ACCUMULATORS", None)),
    # the stand-in uncarried (the runtime before the sixteenth session)
    "frag_carry_off": ((s11_tma, "STAND_IN_FRAG_CARRY", False),),
    # the same with the copies after half the next tile's k (s10 carry_copy_k), as cuBLAS issues them late
    "frag_carry_late": ((s11_tma, "STAND_IN_FRAG_CARRY", True), (s11_tma, "STAND_IN_FRAG_CARRY_ACCUMULATORS", None),
                        (s11_tma, "STAND_IN_CARRY_COPY_AT", 0.5)),
    # frag_carry only where a thread holds 64 accumulators (warp tiles 32x64, 64x32): the plans that
    # gained on the H100's seed 23 and quick shapes (2026-12-05; 32 and 128 lost; docs/stages/s10-s11.md)
    # (the runtime since the sixteenth session: the same as as_is)
    "frag_carry_acc64": ((s11_tma, "STAND_IN_FRAG_CARRY", True), (s11_tma, "STAND_IN_FRAG_CARRY_ACCUMULATORS", (64,))),
    # frag_carry everywhere, a trip of the uncarried kernel's k's where a whole tile a trip is over 2048
    # FFMAs (the 128-accumulator stand-ins at block_k 32: s10 carry_chunk; CPU-built 2026-12-05)
    "frag_carry_chunked": ((s11_tma, "STAND_IN_FRAG_CARRY", True), (s11_tma, "STAND_IN_FRAG_CARRY_ACCUMULATORS", None),
                           (s11_tma, "STAND_IN_FRAG_CARRY_CHUNKED", True)),
    # the stand-in on 4-byte copies at k_unroll 2 at most (its K loop half the size where it was 4)
    "stand_in_ku2": ((s11_tma, "STAND_IN_MAX_K_UNROLL", 2),),
    # the stand-in of an nt problem on 4-byte copies reads its K-major A swizzled (a_swizzle 1): half
    # the shared-load wavefronts of A's fragments (s11_tma.STAND_IN_A_SWIZZLE; twentieth session)
    "stand_in_a_swizzle": ((s11_tma, "STAND_IN_A_SWIZZLE", True),),
    # the stand-in on 4-byte copies of nn, tn, tt at block_k 32 where its tile's is 32, as before
    # s11_tma.STAND_IN_BLOCK_K16 (on since the twenty-first session: 16 in 4 stages there)
    "stand_in_bk32": ((s11_tma, "STAND_IN_BLOCK_K16", False),),
    # a tuned bucket's entry measured at another shape is checked against the waves model there
    # (heuristics/choice.py, TUNED_MODEL_SLACK; the runtime's 1.15 since 2026-12-06, so tuned_slack
    # is as_is now and tuned_slack_off the entry taken wherever its bucket matches); random shapes
    # in tuned buckets (--in-buckets)
    # a transposed A where only the call's own layout is tuned (choice.A_TRANSPOSE_WITHOUT_ITS_ENTRY)
    # wave quantization answered in the plan (choice.TAIL_MIN_GAIN; the runtime's 1.05 over the
    # heuristic's and the neighbours' plans, K >= 512, one matrix, since the twenty-fourth session):
    # off; where the heuristic decides only; without the K and batch bounds (the first run's tail105n)
    "tail_off": ((choice, "TAIL_MIN_GAIN", None),),
    "tail105": ((choice, "TAIL_MIN_GAIN", 1.05), (choice, "TAIL_OVER_NEAREST", False)),
    "tail105n": ((choice, "TAIL_MIN_GAIN", 1.05), (choice, "TAIL_OVER_NEAREST", True), (choice, "TAIL_MIN_K", 0),
                 (choice, "TAIL_BATCHED", True), (choice, "TAIL_LARGER_TILE_MIN_K", 0)),
    # the cut as the first tail-check timed it: its first tile any size at any K >= TAIL_MIN_K
    "tail_any_tile": ((choice, "TAIL_LARGER_TILE_MIN_K", 0),),
    # the epilogue term with the cut's K bounds lifted: does the model's own term refuse the cuts
    # the bounds refuse (2426x5810x378, 2896x1897x572) and keep the others?
    "epi2_tail_unbounded": ((model, "EPILOGUE_EXPOSURE", 2.0), (choice, "TAIL_MIN_K", 0),
                            (choice, "TAIL_LARGER_TILE_MIN_K", 0)),
    "tail_unbounded": ((choice, "TAIL_MIN_K", 0), (choice, "TAIL_LARGER_TILE_MIN_K", 0)),
    # 32x64 x4 at the efficiency it had before its measurement (0.30; 0.40 since 2026-12-07,
    # results/h100/logs/6e0b2d3/eff32x64-seed5*.txt), and higher still
    "eff32x64_30": ((space, "SM90", _eff("32x64 w16x32 x4", 0.30)),),
    "eff32x64_45": ((space, "SM90", _eff("32x64 w16x32 x4", 0.45)),),
    "at_entry": ((choice, "A_TRANSPOSE_WITHOUT_ITS_ENTRY", None),),  # the rule before the twenty-second session
    "at_heuristic": ((choice, "A_TRANSPOSE_WITHOUT_ITS_ENTRY", "heuristic"),),
    "at_tile": ((choice, "A_TRANSPOSE_WITHOUT_ITS_ENTRY", "tile"),),
    "tuned_slack": ((choice, "TUNED_MODEL_SLACK", 1.15),),
    "tuned_slack_off": ((choice, "TUNED_MODEL_SLACK", None),),
    "tuned_slack130": ((choice, "TUNED_MODEL_SLACK", 1.3),),
    # the rule if the chunks turn the 128-accumulator stand-ins' loss into the 64's gain: 64 and 128
    "frag_carry_64_128": ((s11_tma, "STAND_IN_FRAG_CARRY", True), (s11_tma, "STAND_IN_FRAG_CARRY_CHUNKED", True),
                          (s11_tma, "STAND_IN_FRAG_CARRY_ACCUMULATORS", (64, 128))),
    # every s10 / s11 kernel with its FFMA runs in serpentine order where the core reads the
    # outer-product layout (ffma_serpentine's default 1: tn; nn with A transposed first; nn / tt on
    # 4-byte copies; elsewhere the same code under another name)
    "serpentine": ((get("s11"), "params", _default(get("s11"), "ffma_serpentine", 1)),
                   (get("s10"), "params", _default(get("s10"), "ffma_serpentine", 1))),
}


def arg(flag, default):
    return int(sys.argv[sys.argv.index(flag) + 1]) if flag in sys.argv else default


def suite_buckets():
    """The buckets of every suite's shapes (none of them is drawn: they are measured elsewhere)."""
    return {table.bucket(*s[:4]) for name in ("HELDOUT", "OWN", "WIDE", "GRID", "ISSUE9") for s in getattr(suites, name)}


def tuned_buckets():
    """{(bucket, layout, aligned): measured shape} of the shipped H200 table's entries."""
    import json

    path = table.TABLES / "nvidia-h200-sm_90-nvrtc-13.0.json"
    return {(tuple(e["bucket"]), e["layout"], bool(e.get("aligned", True))): tuple(e["shape"][:4])
            for e in json.loads(path.read_text())["entries"]}


def taken_buckets():
    """The buckets a random shape must avoid: the suites' and the table's (whatever the layout)."""
    return suite_buckets() | {key[0] for key in tuned_buckets()}


def random_shapes(n, seed):
    """``n`` random shapes in no table's bucket and no suite's; ``--in-buckets``: instead shapes in a
    tuned bucket of their layout and alignment class, other than the shape it was measured at (what
    step 2 of the choice does off its measured shape), none of them in a suite."""
    from gemmlab.problem import Problem

    rng, taken, out = random.Random(seed), taken_buckets(), []
    tuned = tuned_buckets() if "--in-buckets" in sys.argv else None
    suite = suite_buckets()
    while len(out) < n:
        batch = rng.choice((4, 8, 16, 32, 64)) if rng.random() < 0.25 else 1
        hi = 4096 if batch == 1 else 768
        dims = [int(math.exp(rng.uniform(math.log(96), math.log(hi)))) for _ in range(3)]
        dims = [d | 1 if rng.random() < 0.4 else d & ~3 for d in dims]
        M, N, K = dims
        lay = rng.choice(("nn", "nt", "tn", "tt"))
        if 2.0 * M * N * K * batch > 2e11:
            continue
        b = table.bucket(M, N, K, batch)
        if tuned is None:
            if b in taken:
                continue
        else:
            aligned = Problem.dense(M, N, K, lay, batch).operands_aligned()
            if b in suite or tuned.get((b, lay, aligned)) in (None, (M, N, K, batch)):
                continue
        out.append((M, N, K, lay, batch))
    return out


def fixed_shapes():
    """The ``M N K layout batch`` groups of the command line; ``--own``: the own suite's shapes and
    1400^3 nn first."""
    v = [a for a in sys.argv[1:] if not a.startswith("--")]
    for flag in ("--random", "--seed", "--variants"):
        if flag in sys.argv:
            v.remove(sys.argv[sys.argv.index(flag) + 1])
    own = [(m, n, k, lay, b) for m, n, k, b, lay in suites.OWN_ENTRIES] + [(1400, 1400, 1400, "nn", 1)]
    return (own if "--own" in sys.argv else []) + [
        (int(v[i]), int(v[i + 1]), int(v[i + 2]), v[i + 3], int(v[i + 4])) for i in range(0, len(v), 5)]


def apply(settings):
    """Set each (object, attribute, value); returns the settings that undo it."""
    old = tuple((obj, attr, getattr(obj, attr)) for obj, attr, _ in settings)
    for obj, attr, val in settings:
        setattr(obj, attr, val)
    api.clear_plan_cache()
    return old


H200 = model.Gpu(sms=132, clock_hz=1.98e9, cc=90)


def h200_problem(M, N, K, lay, batch):
    """The problem a call of this shape makes, its operands at 16-byte aligned addresses."""
    from gemmlab.problem import Problem

    return Problem.dense(M, N, K, lay, batch, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40)


def h200_choice(M, N, K, lay, batch):
    """What `auto` chooses for these shapes on the H200 with the shipped table (no GPU needed)."""
    from gemmlab.jit.compiler import compiler_version

    return choice.choose(h200_problem(M, N, K, lay, batch), H200,
                         table.identity("NVIDIA H200", "sm_90", compiler_version()))


def tail_key(t) -> tuple:
    """A plan's tail (plan.Tail, or None) as a hashable key."""
    return () if t is None else (t.axis, t.start, t.spec.id, tuple(sorted(t.config.items())), t.split_k)


def tile(config) -> str:
    """A config's tile, BMxBN, or its items where it has none (the skinny kernel's)."""
    if "block_m" in config:
        return f"{config['block_m']}x{config['block_n']}"
    return ",".join(f"{k}={v}" for k, v in sorted(config.items()))


def describe(c, kernels=()) -> str:
    """A choice as a log cell shows it (probe_breakdown.CELL parses it); ``kernels``, the plan's
    kernel names: " pg" where the GEMM runs on a persistent grid (s11 persistent)."""
    t = c.tail
    cut = f" +{t.axis}{t.start}:{tile(t.config)}s{t.split_k}" if t is not None else ""
    pg = any(k.endswith("_persistent1") for k in kernels)
    return (f"{c.spec.id} {tile(c.config)} s{c.split_k}{cut}{' rp' if c.repack else ''}"
            f"{' aT' if c.a_transpose else ''}{' pg' if pg else ''} {c.source}")


def runs(c, M, N, K, lay, batch) -> tuple:
    """The stand-in (stage, config) that runs for a choice on operands TMA cannot take (a variant of
    the stand-in's rules changes it and not the choice), else ()."""
    p = h200_problem(M, N, K, lay, batch)
    if not c.spec.aligned_path or p.operands_aligned() or c.repack:
        return ()
    run = c.spec.fallback(c.config, choice.stand_in_problem(p, False, c.repack, c.a_transpose))
    return () if run is None else (run[0].id, tuple(sorted(run[1].items())))


def dry_run(shapes):
    """``--dry``: per variant, the shapes whose choice differs from the first variant's, as the H200
    would choose (CPU only, nothing timed): what a run will time, before a GPU is lent."""
    from gemmlab.stages import tensor_map

    # as on the H200 (the driver encodes tensor maps), not this machine; undone before returning
    undo = apply(((tensor_map, "available", lambda: True),))
    try:
        _dry_run(shapes)
    finally:
        apply(undo)


def _dry_run(shapes):
    names = list(VARIANTS)

    def what(s):
        c = h200_choice(*s)
        return describe(c), runs(c, *s)

    base = {s: what(s) for s in shapes}
    union = []
    for name in names[1:]:
        old = apply(VARIANTS[name])
        now = {s: what(s) for s in shapes}
        apply(old)
        diff = [s for s in shapes if now[s][0].rsplit(" ", 1)[0] != base[s][0].rsplit(" ", 1)[0]
                or now[s][1] != base[s][1]]
        print(f"{name}: {len(diff)} of {len(shapes)} plans differ from {names[0]} (choice or the stand-in that runs)")
        for M, N, K, lay, b in diff:
            shape = f"{M}x{N}x{K}{f'x{b}' if b > 1 else ''} {lay}"
            (was, _), (is_, stand_in) = base[(M, N, K, lay, b)], now[(M, N, K, lay, b)]
            why = "" if was.replace(" aT", "") != is_.replace(" aT", "") else " (another stand-in)" if stand_in else " (itself, no stand-in)"
            print(f"  {shape:22} {was:34} -> {is_}{why}")
        union += [s for s in diff if s not in union]
    # the shapes as the command line takes them: time only these (fixed shapes, no --random)
    print("changed:", " ".join(f"{M} {N} {K} {lay} {b}" for M, N, K, lay, b in union))


def main():
    if "--variants" in sys.argv:  # a comma-separated subset, in that order
        names = sys.argv[sys.argv.index("--variants") + 1].split(",")
        for name in list(VARIANTS):
            if name not in names:
                del VARIANTS[name]
    shapes = fixed_shapes() + random_shapes(arg("--random", 0), arg("--seed", 16))
    if "--dry" in sys.argv:
        return dry_run(shapes)
    import torch

    from gemmlab.bench.candidates import Operands
    from probe_common import checked_timer, event_timer

    t = event_timer(target_seconds=0.05, max_seconds=0.5, min_reps=10, max_reps=300)
    timed = checked_timer(t)
    ratios = {v: [] for v in VARIANTS}
    print("shape: cuBLAS us | variant us (cuBLAS / it) [kernels] ...", flush=True)
    for M, N, K, lay, batch in shapes:
        ops = Operands.make(M, N, K, lay, 0, batch=batch)
        ops.reference()
        cub = t(lambda: torch.bmm(ops.a, ops.b, out=ops.out) if ops.batched else torch.mm(ops.a, ops.b, out=ops.out))
        seen, cells = {}, []
        for name, settings in VARIANTS.items():
            old = apply(settings)
            plan, _ = api.prepare(ops.a, ops.b, out=ops.out, batched=ops.batched)
            # the kernels as well as the choice: a variant of the plan layer (a cluster instead of
            # the workspace) keeps the choice and changes what runs
            key = (plan.choice.spec.id, tuple(sorted(plan.choice.config.items())), plan.choice.split_k,
                   plan.choice.repack, plan.choice.a_transpose, tuple(plan.kernels), tail_key(plan.choice.tail))
            if key not in seen:
                seen[key] = timed(ops, "auto", None)
            apply(old)
            us, kern = seen[key]
            ratios[name].append(cub / us)
            c = plan.choice
            cells.append(f"{name} {us:.1f} ({cub / us:.3f}) [{describe(c, plan.kernels)}]")
        print(f"{M}x{N}x{K}{f'x{batch}' if batch > 1 else ''} {lay}: cuBLAS {cub:.1f} | " + " | ".join(cells),
              flush=True)
        del ops
    print()
    for name, r in ratios.items():
        g = math.exp(sum(map(math.log, r)) / len(r))
        print(f"{name}: auto / cuBLAS geometric mean {g:.3f}, min {min(r):.3f} over {len(r)} shapes")


if __name__ == "__main__":
    main()
