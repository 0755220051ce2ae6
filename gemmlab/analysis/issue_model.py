"""A time model that counts issue slots, not only FLOPs (issue 18).

The FFMA-peak and FFMA-share bounds of ``explain`` say s11 could reach 60 TFLOPS at 4096³; the
H200 measures 49. What they leave out, all visible in the SASS and the config:

1. **Every instruction takes an issue slot.** A scheduler (4 per SM) issues one warp instruction
   per clock, so a K tile costs each scheduler ``W x I`` clocks, ``W`` being the warps it holds
   and ``I`` the instructions one warp executes per K tile: the FFMAs, the LDS that feed them,
   the address arithmetic, the loop's compare and branch, the barriers. ``I`` comes from the
   K-loop nest of the SASS (:func:`loop_nest`): the innermost FFMA loop (``sass.main_loop``)
   and, when a K tile runs that loop several times (s10, s11: 8 of the 32 k steps per trip), the
   K-tile loop around it with its cp.async/TMA issue, waits and barriers.
2. **Register-bank conflicts.** Volta and later read registers from 2 banks of 64-bit registers
   (bank = register number mod 2); an FFMA whose register-file reads include two different
   registers of one bank needs an extra read cycle, and the issue slot is lost with it
   (``sass.ffma_register_stats(banks=2)``, the reuse cache counted). Measured on the H200: the
   tiled stages lose 0.22-0.27 slots per instruction this way, and ncu's issue-active share
   (62-83 %) is what ``W x I`` plus these cycles predicts (docs/models.md).
3. **The L1/shared data pipe.** Shared-memory wavefronts (bank model), global-load wavefronts
   (one per 128 bytes of a warp's LDG) and the cp.async/TMA fill of the tile share one pipe of
   one wavefront per clock per SM. The issue port and this pipe are separate resources that
   overlap imperfectly when both are nearly full (an LDS that waits in the pipe delays the
   FFMAs that need it); they are combined as a p-norm, ``(R^p + S^p)^(1/p)`` with ``P_NORM``.
4. **Barriers and the pipeline depth.** A stage that loads a K tile and computes on it in the
   same iteration (depth 1: s02-s08) exposes, every K tile, the latency from issuing the global
   loads to the data being usable (``L_GLOBAL``), a barrier (``L_BARRIER``) and the refill of the
   fragment pipeline after it (the first k step's loads of all the block's warps queue in the
   shared pipe, ``L_SHARED`` + wavefronts). With ``B`` blocks per SM the others fill that gap on
   average ``(B-1)/B`` of the time. A pipeline of depth ``D`` (s09: 2, s10/s11: ``stages``)
   hides ``L_GLOBAL`` behind ``D-1`` tiles of compute and leaves the barrier and refill.
5. **Rounds.** Blocks run in rounds of SMs x blocks per SM; the last round runs as many blocks
   per SM as it needs (the tail), each round pays a fill and a drain.

The constants: ``L_SHARED`` (shared-load latency, ~30 clocks on Hopper) and ``L_BARRIER`` are
round figures of published microbenchmarks; ``L_GLOBAL`` and ``P_NORM`` were fitted once to the
committed 4096³ ladder (results/h200/ladder-4096) and are checked against the 8192³ ladder and
ncu's 2048³ durations in tests/test_analysis_issue_model.py. Where the model is still off,
docs/models.md says by how much and why.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from . import sass

REG_BANKS = 2          # Volta and later: 2 banks of 64-bit registers
SCHEDULERS = 4         # per SM (sub-partitions)
L_SHARED = 30.0        # clocks from an LDS to its data, empty pipe
L_BARRIER = 30.0       # clocks for a barrier to resolve once the last warp arrives
L_GLOBAL = 600.0       # clocks from a tile's global loads to its data in shared memory (fitted)
P_NORM = 6.0           # issue port vs shared/L1 pipe overlap (fitted; inf = perfect overlap)
WAVEFRONT_BYTES = 128  # one shared/L1 wavefront moves 128 bytes

_LDG = ("LDG", "LDGSTS")


# ---- the K-loop nest from the SASS ------------------------------------------------------------
def _width_bytes(op: str) -> int:
    for part in op.split(".")[1:]:
        if part in ("64", "128"):
            return int(part) // 8
    return 4


def _base(op: str) -> str:
    return op.split(".")[0]


def _ffma(body) -> int:
    return sum(1 for x in body if sass._is_ffma(x.op))


def _tally(body) -> dict:
    """Instructions, global wavefronts (coalesced: a warp's LDG of w bytes per lane is w*32/128
    wavefronts) and barrier-like instructions of ``body``."""
    glob = sum(_width_bytes(x.op) * 32 / WAVEFRONT_BYTES for x in body if _base(x.op) in _LDG)
    bars = sum(1 for x in body if _base(x.op) == "BAR")
    waits = sum(1 for x in body if _base(x.op) == "DEPBAR" or (_base(x.op) == "SYNCS" and "WAIT" in x.op))
    sts = sum(1 for x in body if _base(x.op) == "STS")
    return {"instructions": len(body), "global_wavefronts": glob, "barriers": bars, "waits": waits,
            "shared_stores": sts}


def loop_nest(insns, ffma_per_tile: float | None = None, banks: int = REG_BANKS) -> dict | None:
    """Per K tile (or per main-loop trip when ``ffma_per_tile`` is None) for one warp:
    ``instructions``, ``ffma``, ``bank_conflict_cycles``, ``global_wavefronts``, ``barriers``
    (BAR), ``waits`` (mbarrier waits, cp.async waits: SYNCS...WAIT, DEPBAR), ``shared_stores``,
    ``inner_trips`` and ``source``.

    The innermost FFMA loop is ``sass.main_loop``. When a K tile needs ``n`` > 1 trips of it
    (``ffma_per_tile`` = n x its FFMAs), the smallest loop around it holding no other FFMAs is
    the K-tile loop: n trips of the inner loop plus its own instructions. When one trip covers
    several K tiles, the counts are divided. None when there is no FFMA loop."""
    body = sass.main_loop(insns)
    if not body:
        return None
    f_main = _ffma(body)
    bc_main = sass.ffma_register_stats(body, banks)["reg_bank_conflict_cycles"]
    t_main = _tally(body)
    n = 1.0 if not ffma_per_tile else ffma_per_tile / f_main
    out = {"ffma": f_main * n, "inner_trips": n, "source": "main loop",
           "inner_instructions": len(body), "inner_ffma": f_main}
    extra, bc_extra = [], 0
    if n > 1:
        first, last = body[0].addr, body[-1].addr
        around = sorted(((a, b) for a, b in sass.loops(insns) if a <= first and b >= last and (a, b) != (first, last)),
                        key=lambda s: s[1] - s[0])
        for a, b in around:
            outer = [x for x in insns if a <= x.addr <= b]
            if _ffma(outer) == f_main:
                extra = [x for x in outer if not first <= x.addr <= last]
                bc_extra = sass.ffma_register_stats(extra, banks)["reg_bank_conflict_cycles"]
                out["source"] = f"K-tile loop: {n:g} x main loop + {len(extra)}"
                break
        else:
            out["source"] = f"{n:g} x main loop (no K-tile loop found)"
    t_extra = _tally(extra)
    for k in ("instructions", "global_wavefronts", "barriers", "waits", "shared_stores"):
        out[k] = n * t_main[k] + t_extra[k]
    out["bank_conflict_cycles"] = n * bc_main + bc_extra
    return out


# ---- the model ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kernel:
    """What the model needs to know about one kernel; per K tile counts are for one warp."""

    warps_per_block: int
    blocks_per_sm: int
    blocks: int                           # in the grid
    k_tiles: int                          # K tiles (main-loop trips) per block
    instructions_per_tile: float
    bank_conflicts_per_tile: float = 0.0
    smem_wavefronts_per_tile: float = 0.0    # per warp: LDS/STS wavefronts (bank model)
    global_wavefronts_per_tile: float = 0.0  # per warp: LDG/LDGSTS wavefronts
    fill_wavefronts_per_tile: float = 0.0    # per block: cp.async/TMA writes into shared memory
    refill_wavefronts: float = 0.0           # per warp: the first k step's fragment loads
    barriers_per_tile: float = 0.0           # BAR, mbarrier waits, cp.async waits
    pipeline_depth: int = 1                  # 1: load and compute the same tile; s09: 2; s10/s11: stages
    uses_smem: bool = True

    def as_dict(self) -> dict:
        return asdict(self)


def smooth_max(a: float, b: float, p: float = P_NORM) -> float:
    if a <= 0 or b <= 0 or math.isinf(p):
        return max(a, b)
    m = max(a, b)
    return m * ((a / m) ** p + (b / m) ** p) ** (1.0 / p)


def tile_period(k: Kernel, blocks_per_sm: int | None = None, *, l_global: float = L_GLOBAL,
                p_norm: float = P_NORM) -> dict:
    """Clocks per K tile on one SM holding ``blocks_per_sm`` blocks (default: the occupancy),
    and the parts: ``issue`` (R), ``pipe`` (S), ``latency`` (exposed)."""
    b = blocks_per_sm or k.blocks_per_sm
    warps_per_scheduler = math.ceil(b * k.warps_per_block / SCHEDULERS)
    per_warp = k.instructions_per_tile + k.bank_conflicts_per_tile
    issue = warps_per_scheduler * per_warp
    pipe = b * (k.warps_per_block * (k.smem_wavefronts_per_tile + k.global_wavefronts_per_tile)
                + k.fill_wavefronts_per_tile)
    busy = smooth_max(issue, pipe, p_norm)
    # one block's chain per K tile, of which the other blocks hide (b-1)/b on average
    block_compute = math.ceil(k.warps_per_block / SCHEDULERS) * per_warp
    sync = 0.0
    if k.uses_smem and k.barriers_per_tile:
        sync = k.barriers_per_tile * L_BARRIER + L_SHARED + k.warps_per_block * k.refill_wavefronts
    lead = (max(1, k.pipeline_depth) - 1) * block_compute
    global_exposed = max(0.0, l_global - lead) if k.uses_smem else 0.0
    latency = (sync + global_exposed) / b
    return {"issue": issue, "pipe": pipe, "busy": busy, "sync": sync, "global_exposed": global_exposed,
            "latency": latency, "period": busy + latency, "warps_per_scheduler": warps_per_scheduler,
            "pipe_share": pipe / busy if busy else 0.0, "issue_share": issue / busy if busy else 0.0}


def predict(k: Kernel, sms: int, clock_hz: float, *, l_global: float = L_GLOBAL, p_norm: float = P_NORM) -> dict:
    """Run time of the kernel: rounds of ``sms x blocks_per_sm`` blocks, each block ``k_tiles``
    tile periods plus a fill and a drain (``l_global`` each); the last round with as many blocks
    per SM as it needs."""
    cap = sms * k.blocks_per_sm
    if cap <= 0 or k.blocks <= 0:
        return {"time_s": 0.0, "cycles": 0.0, "rounds": 0, "period": tile_period(k, None, l_global=l_global,
                                                                                    p_norm=p_norm)}
    full, rest = divmod(k.blocks, cap)
    per = tile_period(k, None, l_global=l_global, p_norm=p_norm)
    edge = 2 * l_global if k.uses_smem else l_global
    cycles = full * (k.k_tiles * per["period"] + edge)
    last = None
    if rest:
        b_last = min(k.blocks_per_sm, math.ceil(rest / sms))
        last = tile_period(k, b_last, l_global=l_global, p_norm=p_norm)
        cycles += k.k_tiles * last["period"] + edge
    t = cycles / clock_hz
    issued = k.blocks * k.warps_per_block * k.k_tiles * k.instructions_per_tile
    # SM-clocks with blocks resident (ncu's "active" averages): the last round's idle SMs excluded
    active = full * sms * (k.k_tiles * per["period"] + edge)
    if last:
        active += min(rest, sms) * (k.k_tiles * last["period"] + edge)
    return {
        "time_s": t,
        "cycles": cycles,
        "rounds": full + (1 if rest else 0),
        "period": per,
        "last_round": last,
        "bound": "shared/L1 pipe" if per["pipe"] > per["issue"] else "issue slots",
        "latency_share": per["latency"] / per["period"] if per["period"] else 0.0,
        "warp_instructions": issued,
        "ipc": issued / (cycles * sms) if cycles else 0.0,  # warp instructions per clock per SM
        "issue_active": (issued / (cycles * sms * SCHEDULERS)) if cycles else 0.0,
        "active_sm_cycles": active,
        "ipc_active": issued / active if active else 0.0,
        "issue_active_active": issued / (active * SCHEDULERS) if active else 0.0,
    }


# ---- a stage ------------------------------------------------------------------------------------
def pipeline_depth(spec, cfg: dict) -> int:
    """K tiles in flight: ``stages`` where the config has it (s10, s11), 2 for double buffering
    (s09), else 1."""
    if "stages" in cfg:
        return int(cfg["stages"])
    if "double_buffer" in getattr(spec, "name", ""):
        return 2
    return 1


def _smem_per_tile(smem: dict, k_steps: int | None, bk: int | None) -> tuple[float, float]:
    """(wavefronts per warp per K tile, wavefronts of the first k step's loads) from the bank
    model's counts (loads are reported for ``k_steps`` of the BK steps, stores per tile)."""
    if not smem or smem.get("a_load", {}).get("wavefronts") is None:
        return 0.0, 0.0
    per_tile = refill = 0.0
    for kind, s in smem.items():
        total = s.get("total_wavefronts") or 0
        if kind.endswith("load"):
            scale = (bk / k_steps) if (bk and k_steps) else 1.0
            per_tile += total * scale
            refill += total / k_steps if k_steps else total
        else:
            per_tile += total
    return per_tile, refill


def for_stage(spec, cfg: dict, variant: dict, *, M: int, N: int, K: int, insns, blocks_per_sm: int,
              smem: dict | None, k_steps: int | None, outputs_per_thread: int, grid: tuple,
              lim, k_split: int | None = None) -> dict:
    """The model for one stage instantiation on an M x N x K problem: the Kernel it builds and
    its prediction. ``insns``: the kernel's SASS; ``smem``: banks.stage_smem; ``k_steps``: the
    k steps the stage's reported loads cover (explain.tile_from_addressing)."""
    if blocks_per_sm <= 0:
        return {"available": False, "why": "a block does not fit on an SM (occupancy 0)"}
    if any(x.op.startswith("HGMMA") for x in insns):
        return {"available": False, "why": "tensor cores (HGMMA): the issue-slot model counts SIMT FFMA loops"}
    bk = cfg.get("block_k")
    k_len = k_split or K
    ffma_tile = outputs_per_thread * bk if bk else None
    nest = loop_nest(insns, ffma_tile)
    if nest is None:
        return {"available": False, "why": "no FFMA loop in the SASS"}
    k_per_trip = nest["ffma"] / max(1, outputs_per_thread)
    k_tiles = max(1, math.ceil(k_len / k_per_trip)) if k_len else 0
    smem_tile, refill = _smem_per_tile(smem or {}, k_steps, bk)
    bm, bn = spec.block_tile(cfg)
    uses_smem = bool(smem) and smem.get("a_load", {}).get("wavefronts") is not None
    fill = 0.0
    if uses_smem and bk and not (smem.get("a_store", {}).get("instructions") or smem.get("b_store", {}).get("instructions")):
        fill = (bm + bn) * bk * 4 / WAVEFRONT_BYTES  # cp.async / TMA write the tile
    blocks = grid[0] * grid[1] * grid[2]
    kern = Kernel(
        warps_per_block=-(-spec.threads(cfg) // 32),
        blocks_per_sm=blocks_per_sm,
        blocks=blocks,
        k_tiles=k_tiles,
        instructions_per_tile=nest["instructions"],
        bank_conflicts_per_tile=nest["bank_conflict_cycles"],
        smem_wavefronts_per_tile=smem_tile,
        global_wavefronts_per_tile=nest["global_wavefronts"],
        fill_wavefronts_per_tile=fill,
        refill_wavefronts=refill,
        barriers_per_tile=nest["barriers"] + nest["waits"],
        pipeline_depth=pipeline_depth(spec, cfg),
        uses_smem=uses_smem,
    )
    pred = predict(kern, lim.sms, lim.clock_ghz * 1e9)
    flops = 2.0 * M * N * K
    pred.update({
        "available": True,
        "kernel": kern.as_dict(),
        "nest": nest,
        "tflops": flops / pred["time_s"] / 1e12 if pred["time_s"] else None,
        "fma_pipe": (kern.blocks * kern.warps_per_block * kern.k_tiles * nest["ffma"])
        / (pred["cycles"] * lim.sms * SCHEDULERS) if pred["cycles"] else 0.0,
        "fma_pipe_active": (kern.blocks * kern.warps_per_block * kern.k_tiles * nest["ffma"])
        / (pred["active_sm_cycles"] * SCHEDULERS) if pred["active_sm_cycles"] else 0.0,
        "constants": {"reg_banks": REG_BANKS, "l_shared": L_SHARED, "l_barrier": L_BARRIER,
                      "l_global": L_GLOBAL, "p_norm": P_NORM},
    })
    return pred


def slots_per_ffma(insns, banks: int = REG_BANKS) -> float:
    """The main loop's issue slots per FFMA: its instructions plus the register-bank conflict
    cycles of its FFMAs, over the FFMAs (the two terms of 1. and 2. above that the shared layout
    and the register allocation change). On the H200 kernel time at 4096^3 followed it as
    slots^0.79, within 6%, over 17 kernels in nt, tn and tt (scripts/b_scalar_probe.py)."""
    body = sass.main_loop(insns)
    ffma = _ffma(body)
    if not ffma:
        raise ValueError("no FFMA main loop in this kernel")
    return (len(body) + sass.ffma_register_stats(body, banks=banks)["reg_bank_conflict_cycles"]) / ffma


def layout_slots(stage_id: str, config: dict, layout: str, arch: str = "sm_90") -> float:
    """:func:`slots_per_ffma` of ``stage_id``'s aligned kernel at ``config`` for operands in
    ``layout`` (e.g. "nt": A row-major, B column-major), compiled here (no GPU)."""
    from ..api import kernel_for
    from ..stages import get as get_stage

    spec = get_stage(stage_id)
    cfg = spec.config(config)
    want = {"a_k_major": int(layout[0] == "n"), "b_n_major": int(layout[1] == "n")}
    variant = next(v for v in spec.variants(cfg) if v.get("vec", 1) and all(v.get(k) == x for k, x in want.items())
                   and not v.get("stream_k"))
    ck = kernel_for(spec, cfg, variant, arch)
    return slots_per_ffma(_sass_of(ck.cubin, ck.name)[0])


_SASS_CACHE: dict = {}


def _sass_of(cubin: bytes, name: str):
    """(instructions, resources) of one kernel, once per process (cuobjdump takes ~0.5 s a call;
    profile models every stage at several sizes with the same kernels)."""
    import hashlib

    key = (name, hashlib.sha1(cubin).hexdigest())
    if key not in _SASS_CACHE:
        _SASS_CACHE[key] = (sass.instructions(cubin, name), sass.resources(cubin, name))
    return _SASS_CACHE[key]


def stage_model(stage_id: str, M: int, N: int, K: int, config: dict | None = None, layout: str = "nn",
                arch: str = "sm_90", lim=None, model: str | None = None, split_k: int = 1) -> dict:
    """Compile ``stage_id`` at ``config`` (no GPU) and run :func:`for_stage` on it."""
    from ..api import kernel_for
    from ..stages import get as get_stage
    from ..problem import Problem, k_slices
    from . import banks, occupancy
    from .explain import tile_from_addressing

    spec = get_stage(stage_id)
    cfg = spec.config(config)
    prob = Problem.dense(M, N, K, layout)
    k_split, splits = k_slices(K, split_k)
    if splits > 1:
        prob = Problem.dense(M, N, K, layout, splits=splits, k_split=k_split)
    try:
        variant = spec.variant(cfg, prob)
    except Exception:
        variant = spec.variants(cfg)[0]
    ck = kernel_for(spec, cfg, variant, arch)
    insns, res = _sass_of(ck.cubin, ck.name)
    lim = lim or occupancy.limits(arch)
    smem_total = occupancy.user_shared_bytes(res["shared_bytes"], spec.smem_bytes(cfg, variant), lim)
    occ = occupancy.occupancy(spec.threads(cfg), res["registers"], smem_total, lim)
    smem = banks.stage_smem(spec, cfg, model or banks.DEFAULT_MODEL)
    try:
        acc = spec.smem_accesses(cfg) or {}
    except NotImplementedError:
        acc = {}
    bm, bn = spec.block_tile(cfg)
    outputs = max(1, bm * bn // max(1, getattr(spec, "consumer_threads", spec.threads)(cfg)))
    t = tile_from_addressing(acc, outputs)
    grid = spec.grid(cfg, prob)
    from ..stages import all_stages

    if spec.id not in {s.id for s in all_stages()}:
        out = {"available": False, "why": f"{spec.id} is not a rung of the ladder (a memory-bound kernel): "
                                          "the issue-slot model is for the tiled FFMA kernels"}
    else:
        out = for_stage(spec, cfg, variant, M=M, N=N, K=K, insns=insns, blocks_per_sm=occ["blocks_per_sm"],
                        smem=smem, k_steps=t[2] if t else None, outputs_per_thread=outputs,
                        grid=grid, lim=lim, k_split=k_split if splits > 1 else None)
    out["context"] = {"stage": spec.id, "name": spec.name, "config": cfg, "variant": variant, "kernel": ck.name,
                      "resources": res, "occupancy": occ, "smem": smem, "grid": list(grid), "splits": splits,
                      "block_tile": (bm, bn), "group_m": spec.group_m(cfg), "k_steps": t[2] if t else None}
    return out
