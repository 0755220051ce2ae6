"""``gemmlab explain``: every model of analysis/ applied to one stage at one config, no GPU needed.

Registers come from the compiled cubin (sass.resources), the machine from the sm_90 table of
occupancy.py (H200: 132 SMs). The predicted bound is the slowest of four rates, each a lower bound
on the run time of an M = N = K = size problem:

- FFMA peak: 2·M·N·K FLOP at SMs x 128 lanes x 2 x clock;
- instruction issue: the FFMA peak divided by the FFMA share of the main loop (one instruction
  per scheduler per clock, so FFMAs get at most that share of the issue slots);
- DRAM: the global reads of the tiling (traffic.py) that miss L2 (waves.py), at least the
  compulsory bytes, at the measured copy rate;
- shared memory: wavefronts (banks.py, from the stage's real addressing) at one per SM per clock;

stretched by the tail effect (waves / ceil(waves)); and, where the SASS has an FFMA K loop, the
issue-slot model (issue_model.py: every instruction, register banks, the shared/L1 pipe, barriers
and the pipeline depth), which is an estimate rather than a bound and is usually the largest.
"""
from __future__ import annotations

import math

from . import banks, occupancy, sass, traffic, waves
from ..problem import Problem
from ..bench.stats import TF32_FLOP_PER_CLOCK_PER_SM


def thread_tile(spec, cfg: dict) -> tuple[int, int]:
    """(rm, rn): rows and columns of D one thread computes, from the config's names."""
    bm, bn = spec.block_tile(cfg)
    computing = getattr(spec, "consumer_threads", spec.threads)(cfg)  # s11: not its producer warps
    outputs = max(1, bm * bn // max(1, computing))
    rm = cfg["thread_m"] * cfg.get("warp_m_iter", 1) if "thread_m" in cfg else None
    rn = cfg["thread_n"] * cfg.get("warp_n_iter", 1) if "thread_n" in cfg else None
    if rn is None and "threads_n" in cfg:
        rn = bn // cfg["threads_n"]
    if rm is None and rn is None:
        r = math.isqrt(outputs)
        rm, rn = (r, r) if r * r == outputs else (outputs, 1)
    elif rm is None:
        rm = max(1, outputs // rn)
    elif rn is None:
        rn = max(1, outputs // rm)
    return rm, rn


def _floats_per_lane(instrs) -> int:
    """Floats the busiest lane loads over ``instrs``."""
    per_lane = [0] * 32
    for item in instrs or []:
        width, addrs = banks._instruction(item)
        for lane, a in enumerate(addrs):
            if a is not None:
                per_lane[lane] += max(1, width // 4)
    return max(per_lane)


def tile_from_addressing(accesses: dict, outputs: int):
    """(rm, rn, k_steps) from a stage's fragment loads: a lane loads rm A and rn B values per k
    step and the stage reports ``k_steps`` steps (one k, a group, or the whole BK slice), so
    fa = rm * s, fb = rn * s and rm * rn = outputs per thread. None when that does not fit."""
    fa, fb = _floats_per_lane(accesses.get("a_load")), _floats_per_lane(accesses.get("b_load"))
    if not fa or not fb or outputs <= 0:
        return None
    s = math.isqrt(fa * fb // outputs) if fa * fb % outputs == 0 else 0
    if s < 1 or s * s * outputs != fa * fb or fa % s or fb % s:
        return None
    return fa // s, fb // s, s


def _distinct_words(instrs) -> int:
    words = set()
    for item in instrs or []:
        width, addrs = banks._instruction(item)
        for a in addrs:
            if a is not None:
                words.update(range(a // 4, a // 4 + max(1, width // 4)))
    return len(words)


def report(stage_id: str, config: dict | None = None, size: int = 4096, arch: str = "sm_90",
           model: str | None = None, sms: int | None = None, lim=None) -> dict:
    from ..api import kernel_for
    from ..stages import get as get_stage

    spec = get_stage(stage_id)
    cfg = spec.config(config)
    variant = spec.variants(cfg)[0]
    ck = kernel_for(spec, cfg, variant, arch)
    sinfo = sass.inspect(ck.cubin, ck.name)
    lim = lim or occupancy.limits(arch, sms)
    model = model or banks.DEFAULT_MODEL
    threads = spec.threads(cfg)
    dyn_smem = spec.smem_bytes(cfg, variant)
    smem_total = occupancy.user_shared_bytes(sinfo["shared_bytes"], dyn_smem, lim)
    occ = occupancy.occupancy(threads, sinfo["registers"], smem_total, lim)

    M = N = K = int(size)
    bm, bn = spec.block_tile(cfg)
    bk = cfg.get("block_k")
    uses_smem = smem_total > 0

    # shared-memory bank model from the stage's real addressing
    smem = banks.stage_smem(spec, cfg, model)
    try:
        accesses = spec.smem_accesses(cfg) or {}
    except NotImplementedError:
        accesses = {}
    other_model = "hardware" if model == "notes" else "notes"
    if smem:
        alt = banks.stage_smem(spec, cfg, other_model)
        for kind in banks.KINDS:
            smem[kind][other_model] = alt[kind]["wavefronts"]
    else:
        smem = {kind: {"wavefronts": None, "ideal": None, "instructions": 0, "note": "n/a"} for kind in banks.KINDS}
    notes_check = None
    pattern = banks.STAGE_PATTERN.get(spec.id)
    if pattern and smem["a_load"]["wavefronts"] is not None:
        want_a, want_b = banks.NOTES_TABLE[pattern]
        got_a, got_b = smem["a_load"]["wavefronts"], smem["b_load"]["wavefronts"]
        notes_check = {"pattern": pattern, "notes": {"a_load": want_a, "b_load": want_b, "total": want_a + want_b},
                       "model": {"a_load": got_a, "b_load": got_b,
                                 "total": None if got_a is None or got_b is None else got_a + got_b},
                       "agrees": (got_a, got_b) == (want_a, want_b)}
        if not notes_check["agrees"]:
            notes_check["why"] = {k: smem[k].get("why") for k in ("a_load", "b_load")}

    # traffic and intensity; the thread tile from the stage's own loads where they say it
    outputs = bm * bn // max(1, getattr(spec, "consumer_threads", spec.threads)(cfg))
    from_addr = tile_from_addressing(accesses, outputs)
    if from_addr:
        rm, rn, k_steps = from_addr
        tile_source = "smem_accesses"
    else:
        (rm, rn), k_steps = thread_tile(spec, cfg), None
        tile_source = "config"
    lv = traffic.levels(M, N, K, bm=bm if uses_smem else None, bn=bn if uses_smem else None, rm=rm, rn=rn)
    lv["thread_tile_source"] = tile_source
    if k_steps:
        distinct = _distinct_words(accesses.get("a_load")) + _distinct_words(accesses.get("b_load"))
        lv["smem_accesses_k_steps"] = k_steps
        lv["warp_distinct_words_per_k"] = distinct / k_steps
        lv["warp_intensity"] = 32.0 * rm * rn * 2 * k_steps / (4 * distinct)

    # waves and L2
    prob = Problem.dense(M, N, K)
    grid = spec.grid(cfg, prob)
    wv = waves.report(M, N, bm, bn, lim.sms, occ["blocks_per_sm"], spec.group_m(cfg))
    wv["grid"] = list(grid)

    # predicted bound
    flops = 2.0 * M * N * K
    times = {"ffma_peak": flops / lim.fp32_flops}
    share = sinfo["main_loop_ffma_share"]
    if share > 0:
        times["issue"] = times["ffma_peak"] / share
    hit = wv.get("l2_hit", 0.0)
    dram_bytes = max(traffic.compulsory_bytes(M, N, K), lv["global_bytes"] * (1.0 - hit))
    times["dram"] = dram_bytes / lim.dram_bytes_per_s
    if bk and k_steps and smem["a_load"]["wavefronts"] is not None:
        # loads are reported for k_steps of the BK steps of a K tile, stores for a whole tile
        per_warp_tile = 0.0
        for kind in banks.KINDS:
            s = smem[kind]
            if s.get("total_wavefronts"):
                per_warp_tile += s["total_wavefronts"] * (bk / k_steps if kind.endswith("load") else 1)
        blocks = grid[0] * grid[1] * grid[2]
        total_wf = blocks * math.ceil(K / bk) * (threads // 32) * per_warp_tile
        times["shared"] = total_wf / (lim.sms * lim.clock_ghz * 1e9)
    # issue 18: issue slots of the SASS mix, register banks, the shared/L1 pipe, barriers and the
    # pipeline depth (issue_model.py). Its time has the tail in it; stored per full wave like the
    # others (x efficiency), so the division below gives it back.
    im = _issue_model(spec, cfg, variant, ck, M, occ, smem, k_steps, outputs, grid, lim)
    if im.get("available") and im.get("time_s"):
        times["issue_slots"] = im["time_s"] * (wv["efficiency"] or 1.0)
    tensor = tensor_core_model(spec, cfg, M, N, K, lim, wv, grid) if spec.precision != "ieee" else None
    if tensor:
        times = dict(tensor["times_s"])  # the FFMA/issue bounds do not apply to wgmma stages
        times.pop("prepass")             # part of every other time, not a bound of its own
    bound = max(times, key=times.get)
    eff = wv["efficiency"] or 1.0
    t = times[bound] / eff
    predicted = {
        "bound": bound,
        "times_ms": {k: v * 1e3 for k, v in times.items()},
        "tail_efficiency": eff,
        "time_ms": t * 1e3,
        "tflops": flops / t / 1e12,
        "pct_of_ffma_peak": 100.0 * (flops / lim.fp32_flops) / t,
        "dram_bytes": dram_bytes,
        "issue_model": {k: im.get(k) for k in ("available", "bound", "rounds", "latency_share")}
        | {"clocks_per_k_tile": {k: v for k, v in (im.get("period") or {}).items() if k in ("issue", "pipe", "latency")}},
    }

    return {
        "stage": spec.id,
        "name": spec.name,
        "config": getattr(spec, "report_config", dict)(cfg),  # skinny: its auto keys filled in
        "variant": variant,
        "kernel": ck.name,
        "arch": arch,
        "size": M,
        "machine": {"sms": lim.sms, "clock_ghz": lim.clock_ghz, "fp32_tflops": lim.fp32_flops / 1e12,
                    "dram_tb_s": lim.dram_bytes_per_s / 1e12},
        "resources": {k: sinfo[k] for k in ("registers", "shared_bytes", "local_bytes", "stack_bytes")}
        | {"dynamic_shared_bytes": dyn_smem, "block_shared_bytes": smem_total, "threads": threads},
        "intensity": {
            "block": lv["block_intensity"],
            "thread": lv["thread_intensity"],
            "warp": lv.get("warp_intensity"),
            "global": lv["global_intensity"],
            "block_tile": [bm, bn] if uses_smem else None,
            "thread_tile": [rm, rn],
        },
        "traffic": lv,
        "occupancy": occ,
        "waves": wv,
        "smem_model": model,
        "smem": smem,
        "smem_notes": notes_check,
        "sass": {k: sinfo[k] for k in ("main_loop_ffma_share", "reuse_share", "reg_bank_conflicts")},
        "predicted": predicted,
        "tensor_core": tensor,
    }


# ---- tensor-core stages (s12 tf32, s13 tf32x3) --------------------------------------------------
L2_BYTES_PER_S = 10e12              # L2 -> SM fill rate assumed for TMA tiles [est]; to be set by ncu


def tensor_core_model(spec, cfg, M, N, K, lim, wv, grid) -> dict:
    """What bounds a wgmma stage: the tensor-core peak (3 products per output for tf32x3), the L2
    bandwidth that fills the pipeline's stages, DRAM, and the operand pre-pass (transposes or the
    3xTF32 split). Shared-memory traffic: TMA writes each tile once; each consumer warpgroup's
    wgmmas read its 64 rows of A and the whole B tile per product."""
    products = 3 if spec.precision == "tf32x3" else 1
    parts = 2 if spec.precision == "tf32x3" else 1     # hi and lo copies of each operand
    bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
    wgs = bm // 64
    flops = 2.0 * M * N * K
    peak = lim.sms * TF32_FLOP_PER_CLOCK_PER_SM * lim.clock_ghz * 1e9
    blocks = grid[0] * grid[1] * grid[2]
    k_tiles = math.ceil(K / bk)
    stage_bytes = parts * (bm + bn) * bk * 4
    fill_bytes = blocks * k_tiles * stage_bytes                                  # TMA: L2 -> shared
    wgmma_read_bytes = blocks * k_tiles * products * wgs * (64 + bn) * bk * 4    # descriptors: shared -> TC
    prepass_bytes = (4 + 4 * parts) * (M * K + K * N)                            # read once, write parts
    hit = wv.get("l2_hit", 0.0)
    times = {"tensor_peak": products * flops / peak,
             "l2_fill": fill_bytes / L2_BYTES_PER_S,
             "dram": max(parts * 4.0 * (M * K + K * N), fill_bytes * (1 - hit)) / lim.dram_bytes_per_s}
    prepass = prepass_bytes / lim.dram_bytes_per_s
    main_bound = max(times, key=times.get)
    times = {k: v + prepass for k, v in times.items()}
    times["prepass"] = prepass
    return {
        "precision": spec.precision,
        "products_per_output": products,
        "tensor_peak_tflops": peak / 1e12,
        "pipeline": {"stages": cfg["stages"], "bytes_per_stage": stage_bytes,
                     "tma_boxes_per_stage": 2 * parts, "consumer_warpgroups": wgs,
                     "wgmma_per_k_tile_per_warpgroup": products * bk // 8,
                     "tensor_clocks_per_k_tile": products * 2.0 * bm * bn * bk / TF32_FLOP_PER_CLOCK_PER_SM},
        "shared_bytes": {"tma_writes": fill_bytes, "wgmma_reads": wgmma_read_bytes},
        "prepass_bytes": prepass_bytes,
        "main_bound": main_bound,
        "times_s": times,
        "assumed_l2_bytes_per_s": L2_BYTES_PER_S,
    }


def _issue_model(spec, cfg, variant, ck, size, occ, smem, k_steps, outputs, grid, lim) -> dict:
    """issue_model.for_stage for explain's M = N = K = size problem ({"available": False} if it
    cannot say, e.g. no FFMA loop)."""
    from . import issue_model

    try:
        return issue_model.for_stage(spec, cfg, variant, M=size, N=size, K=size,
                                     insns=sass.instructions(ck.cubin, ck.name),
                                     blocks_per_sm=occ["blocks_per_sm"], smem=smem, k_steps=k_steps,
                                     outputs_per_thread=outputs, grid=grid, lim=lim)
    except Exception as e:  # a model gap must not break explain
        return {"available": False, "why": f"{type(e).__name__}: {e}"}


# ---- text ---------------------------------------------------------------------------------------
_BOUND = {"ffma_peak": "FFMA peak", "issue": "instruction issue (FFMA share of the main loop)",
          "dram": "DRAM bandwidth", "shared": "shared-memory wavefronts",
          "issue_slots": "issue slots (SASS mix, register banks, shared/L1 pipe, barriers, pipeline depth)",
          "tensor_peak": "the tensor-core peak (+ operand pre-pass)",
          "l2_fill": "L2 bandwidth filling the TMA stages (+ operand pre-pass)"}


def _n(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1e4 else f"{x:.3e}"


def format_text(r: dict) -> str:
    lines = []
    res = r["resources"]
    lines.append(f"{r['stage']} {r['name']}  {r['config']}  at {r['size']}³ on {r['arch']} "
                 f"({r['machine']['sms']} SMs, {r['machine']['fp32_tflops']:.1f} TFLOPS FFMA)")
    lines.append(f"  kernel {r['kernel']}: {res['threads']} threads, {res['registers']} registers, "
                 f"{res['block_shared_bytes']} B shared (+{r['occupancy']['smem_per_block'] - res['block_shared_bytes']} "
                 f"reserved and rounding), {res['local_bytes']} B local")
    t, it = r["traffic"], r["intensity"]
    lines.append("  traffic (reads to compute all of C, 002):")
    bt = f"block {it['block_tile'][0]}x{it['block_tile'][1]}" if it["block_tile"] else "no shared-memory tiling"
    lines.append(f"    global    {_n(t['global_reads'])} floats ({t['global_bytes'] / 1e9:.3g} GB), "
                 f"{it['block']:.3g} FLOP/B  ({bt})")
    if t["shared_reads"]:
        warp = f", {it['warp']:.3g} FLOP/B per warp with broadcast" if it.get("warp") else ""
        lines.append(f"    shared    {_n(t['shared_reads'])} floats ({t['shared_bytes'] / 1e9:.3g} GB), "
                     f"{it['thread']:.3g} FLOP/B per thread (tile {it['thread_tile'][0]}x{it['thread_tile'][1]}){warp}")
    lines.append(f"    register  {_n(t['register_reads'])} operand reads")
    o = r["occupancy"]
    lim = ", ".join(f"{k} {v}" for k, v in o["limits"].items())
    lines.append(f"  occupancy: {o['blocks_per_sm']} blocks/SM, {o['warps_per_sm']} warps ({o['occupancy']:.1%}); "
                 f"limited by {' and '.join(o['limited_by'])} (blocks allowed by {lim})")
    w = r["waves"]
    if w.get("capacity"):
        l2 = ""
        if "l2_hit" in w:
            l2 = (f"; L2 hit ≈ {w['l2_hit']:.1%} (group_m {w['group_m']}; "
                  f"best group_m {w['best_group_m']}: {w['l2_hit_best_group']:.1%})")
        lines.append(f"  waves: {w['blocks']} blocks / {w['capacity']} per wave = {w['waves']:.2f}, last wave "
                     f"{w['last_wave_utilisation']:.0%} full, tail efficiency {w['efficiency']:.0%}{l2}")
    lines.append(f"  shared memory, wavefronts per warp instruction (model '{r['smem_model']}'):")
    for kind in banks.KINDS:
        s = r["smem"][kind]
        if s["wavefronts"] is None:
            lines.append(f"    {kind:<8} n/a")
            continue
        other = [k for k in s if k in banks.MODELS]
        alt = f", {other[0]} model {s[other[0]]}" if other and s[other[0]] != s["wavefronts"] else ""
        lines.append(f"    {kind:<8} {s['wavefronts']} (ideal {s['ideal']}; {s['instructions']} x "
                     f"{s['width_bytes']}-byte){alt}  {s['why']}")
    nc = r.get("smem_notes")
    if nc:
        verdict = "agrees" if nc["agrees"] else "differs"
        lines.append(f"    notes §8.4-8.5 ({nc['pattern']}): {nc['notes']['a_load']} + {nc['notes']['b_load']}; "
                     f"this stage {nc['model']['a_load']} + {nc['model']['b_load']}: {verdict}")
    s = r["sass"]
    lines.append(f"  SASS main loop: FFMA share {s['main_loop_ffma_share']:.1%}, .reuse share "
                 f"{s['reuse_share']:.1%}, register-bank conflicts {s['reg_bank_conflicts']}")
    tc = r.get("tensor_core")
    if tc:
        pl = tc["pipeline"]
        lines.append(f"  tensor cores ({tc['precision']}): peak {tc['tensor_peak_tflops']:.1f} TFLOPS dense TF32, "
                     f"{tc['products_per_output']} product(s) per output; pipeline {pl['stages']} stages x "
                     f"{pl['bytes_per_stage'] / 1024:.0f} KB ({pl['tma_boxes_per_stage']} TMA boxes), "
                     f"{pl['consumer_warpgroups']} consumer warpgroups x {pl['wgmma_per_k_tile_per_warpgroup']} wgmma "
                     f"per K tile ({pl['tensor_clocks_per_k_tile']:.0f} tensor clocks)")
        sb = tc["shared_bytes"]
        lines.append(f"    shared memory: TMA writes {sb['tma_writes'] / 1e9:.3g} GB, wgmma reads "
                     f"{sb['wgmma_reads'] / 1e9:.3g} GB; operand pre-pass {tc['prepass_bytes'] / 1e9:.3g} GB "
                     f"(L2 fill assumed {tc['assumed_l2_bytes_per_s'] / 1e12:.0f} TB/s)")
    p = r["predicted"]
    times = ", ".join(f"{k} {v:.3g}" for k, v in p["times_ms"].items())
    peak = (f"{100 * p['tflops'] / tc['tensor_peak_tflops']:.0f}% of the TF32 tensor-core peak" if tc
            else f"{p['pct_of_ffma_peak']:.0f}% of FFMA peak")
    lines.append(f"  predicted: bound by {_BOUND.get(p['bound'], p['bound'])}; {p['time_ms']:.3g} ms = {p['tflops']:.1f} "
                 f"TFLOPS ({peak}); times ms: {times}")
    return "\n".join(lines)
