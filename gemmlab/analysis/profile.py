"""``gemmlab profile``: the models set against the hardware counters, stage by stage.

For each (stage, shape) job the parent builds the **model side** with no GPU (the issue-slot time
model of issue_model.py, the traffic and L2 model of waves.dram_traffic, the bank model on the
stage's real addressing, occupancy from the cubin) and then runs one Nsight Compute session
(``--clock-control none``, caches flushed before each replay pass, the raw page) around a child
process, ``python -m gemmlab.analysis.profile --child JOBS``, which runs every job once through
the public API (``gemmlab.api.prepare``: exactly the kernels ``gemmlab.gemm`` runs) on torch or
CuPy arrays. ncu profiles the GEMM kernel of each job (``-k regex:^gemmlab_(s\\d|skinny)``, one
launch per job); the parent parses the CSV (ncu.py) and prints, per quantity, model | measured |
ratio (measured / model), the top stall reasons and the largest miss.

One session for all jobs of a size keeps the run short (ncu and the CUDA context start once);
a job missing from its output (a crash, a timeout) is retried alone. ``--save-raw`` keeps ncu's
CSV, and ``--from-raw`` reads such a capture back without a GPU (tests, and the README table).
"""
from __future__ import annotations

import datetime
import json
import math
import os
import re
import subprocess
import sys
import threading
import time

from ..errors import ArgumentError, GemmlabError
from . import ncu as ncu_mod

TAG = "GEMMLAB_PROFILE"
LAYOUTS = ("nn", "nt", "tn", "tt")
SCHEMA = "gemmlab.profile/1"


class ProfileError(GemmlabError):
    """ncu is missing, may not read counters, or gave nothing to parse (exit 1)."""


# ---- arguments --------------------------------------------------------------------------------
def parse_shape(text: str) -> tuple[int, int, int]:
    """'4096x4096x1024' -> (4096, 4096, 1024); ArgumentError naming --shape otherwise."""
    parts = re.split(r"[x×X,]", str(text).strip())
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        dims = ()
    if len(dims) != 3 or min(dims) < 1:
        raise ArgumentError(f"--shape {text!r}: expected MxNxK with positive integers, e.g. 4096x4096x4096")
    return dims


def parse_sizes(text: str) -> list[int]:
    """'2048,4096' -> [2048, 4096]; ArgumentError naming --size otherwise."""
    out = []
    for item in str(text).split(","):
        try:
            n = int(item)
        except ValueError:
            raise ArgumentError(f"--size {text!r}: expected a positive integer or a list like 2048,4096") from None
        if n < 1:
            raise ArgumentError(f"--size {n}: must be positive")
        out.append(n)
    return out


def check_stage(stage: str) -> str:
    """A stage id (or name) gemmlab can run, or 'auto'; ArgumentError listing them otherwise."""
    from ..stages import get

    if stage in ("auto", "tuned"):
        return "auto"
    try:
        return get(stage).id
    except Exception:
        from ..stages import all_stages, extra_stages

        ids = ", ".join(s.id for s in (*all_stages(), *extra_stages()))
        raise ArgumentError(f"profile: unknown stage {stage!r}; stages are {ids} or auto") from None


def make_jobs(stages: list[str], shapes: list[tuple[int, int, int]], layout: str = "nn",
              config: dict | None = None) -> list[dict]:
    """Check everything that can be checked without a GPU (stage, layout, the config for the
    stage) and return the jobs, stage-major."""
    from ..stages import get

    if layout not in LAYOUTS:
        raise ArgumentError(f"--layout {layout!r}: expected one of {', '.join(LAYOUTS)}")
    jobs = []
    for st in stages:
        sid = check_stage(st)
        cfg = None
        if sid != "auto":
            spec = get(sid)
            cfg = spec.config(config)   # ConfigError (an ArgumentError) names the key
        elif config:
            raise ArgumentError("--config applies to a named stage, not auto")
        for M, N, K in shapes:   # whether the stage runs the shape is the API's to say (it repacks)
            jobs.append({"stage": sid, "M": M, "N": N, "K": K, "layout": layout,
                         "config": dict(config) if (config and sid != "auto") else None})
    return jobs


# ---- the model side ---------------------------------------------------------------------------
def model_side(stage: str, M: int, N: int, K: int, layout: str = "nn", config: dict | None = None,
               split_k: int = 1, arch: str = "sm_90", lim=None) -> dict:
    """Everything the models predict for one run, in the units ncu reports (bytes, fractions,
    seconds), with no GPU: {"stage", "config", "kernel", "quantities": {key: value}, ...}."""
    from . import issue_model, occupancy, waves

    lim = lim or occupancy.limits(arch)
    m = issue_model.stage_model(stage, M, N, K, config, layout, arch, lim, split_k=split_k)
    ctx = m["context"]
    spec_bm, spec_bn = ctx["block_tile"]
    from ..stages import get as get_stage

    split_operands = getattr(get_stage(ctx["stage"]), "operand_split", False)
    traffic = waves.dram_traffic(M, N, K, spec_bm, spec_bn, lim.sms, max(1, ctx["occupancy"]["blocks_per_sm"]),
                                 ctx["group_m"], lim.l2_bytes, ctx["splits"],
                                 operand_elem=8 if split_operands else None)  # s13: hi + lo copies
    smem = ctx["smem"] or {}
    nest = m.get("nest") or {}
    # cp.async / TMA fill shared memory without STS: then ncu counts no store instructions
    stores_issued = bool(nest.get("shared_stores")) or not m.get("available")
    q = {
        "dram_read_bytes": traffic["dram_read_bytes"],
        "dram_write_bytes": traffic["dram_write_bytes"],
        "l2_read_bytes": traffic["l2_read_bytes"],
        "l2_write_bytes": traffic["l2_write_bytes"],
        "l2_read_hit": traffic["l2_read_hit"],
        "smem_ld_wavefronts_per_inst": _mean_wavefronts(smem, ("a_load", "b_load")),
        "smem_st_wavefronts_per_inst": _mean_wavefronts(smem, ("a_store", "b_store")) if stores_issued else None,
        "achieved_occupancy": ctx["occupancy"]["occupancy"],
    }
    if m.get("available"):
        q.update({"fma_pipe": m["fma_pipe_active"], "issue_active": m["issue_active_active"],
                  "ipc": m["ipc_active"], "time_s": m["time_s"]})
    elif ctx["stage"] in _MEMORY_BOUND:   # skinny: a GEMV, its time is its DRAM traffic
        q["time_s"] = (traffic["dram_read_bytes"] + traffic["dram_write_bytes"]) / lim.dram_bytes_per_s
    tensor = {}
    if not m.get("available") and ctx["stage"] not in _MEMORY_BOUND:
        tensor = _tensor_core_side(ctx, M, N, K, lim)
        q.update({k: tensor[k] for k in ("time_s", "tensor_pipe") if k in tensor})
    return {
        "stage": ctx["stage"], "name": ctx["name"], "config": ctx["config"], "variant": ctx["variant"],
        "kernel": ctx["kernel"], "split_k": ctx["splits"], "quantities": q,
        "tensor_work": {k: tensor[k] for k in ("flop", "peak_flop_per_s", "peak_clock_hz") if k in tensor} or None,
        "smem": {k: {"wavefronts": v.get("wavefronts"), "ideal": v.get("ideal"), "instructions": v.get("instructions")}
                 for k, v in smem.items()},
        "occupancy": {k: ctx["occupancy"][k] for k in ("blocks_per_sm", "limited_by", "warps_per_sm", "occupancy")},
        "traffic": traffic,
        "issue_model": {k: m.get(k) for k in ("available", "why", "bound", "rounds", "latency_share", "tflops",
                                              "period", "kernel", "nest", "constants")},
    }


_MEMORY_BOUND = ("skinny",)


def _tensor_core_side(ctx: dict, M: int, N: int, K: int, lim) -> dict:
    """Time and tensor-pipe share of a wgmma stage from explain's tensor-core model, for the GEMM
    kernel alone (ncu profiles it without the operand pre-pass); {} where there is none."""
    from ..stages import get
    from . import explain, waves

    spec = get(ctx["stage"])
    if spec.precision == "ieee":
        return {}
    try:
        bm, bn = ctx["block_tile"]
        wv = waves.report(M, N, bm, bn, lim.sms, max(1, ctx["occupancy"]["blocks_per_sm"]), ctx["group_m"])
        tc = explain.tensor_core_model(spec, ctx["config"], M, N, K, lim, wv, tuple(ctx["grid"]))
        times = {k: v - tc["times_s"].get("prepass", 0.0) for k, v in tc["times_s"].items() if k != "prepass"}
        t = max(times.values()) / (wv.get("efficiency") or 1.0)
        flop = tc["products_per_output"] * 2.0 * M * N * K
        busy = flop / (tc["tensor_peak_tflops"] * 1e12)
        return {"time_s": t, "tensor_pipe": busy / t if t else None, "flop": flop,
                "peak_flop_per_s": tc["tensor_peak_tflops"] * 1e12, "peak_clock_hz": lim.clock_ghz * 1e9}
    except Exception:   # the model side must not stop a profile that has measured
        return {}


def _mean_wavefronts(smem: dict, kinds) -> float | None:
    total = inst = 0.0
    for k in kinds:
        s = smem.get(k) or {}
        if s.get("wavefronts") is None or not s.get("instructions"):
            continue
        total += s.get("total_wavefronts") or s["wavefronts"] * s["instructions"]
        inst += s["instructions"]
    return total / inst if inst else None


# ---- the measured side --------------------------------------------------------------------------
SECTOR = 32


def measured_side(metrics: dict) -> dict:
    """ncu metrics of one launch -> the same quantities as the model side, plus the stalls."""
    g = metrics.get

    def ratio(a, b):
        return g(a) / g(b) if g(a) is not None and g(b) else None

    def pct(name):
        return g(name) / 100.0 if g(name) is not None else None

    def by_inst(i):  # shared wavefronts per instruction: attributed to the instructions, else all
        r = ratio(ncu_mod.SMEM_BY_INSTRUCTION[i], ncu_mod.SMEM[2 * i + 1])
        return r if r is not None else ratio(ncu_mod.SMEM[2 * i], ncu_mod.SMEM[2 * i + 1])

    tex_rd, all_rd = g("lts__t_sectors_srcunit_tex_op_read.sum"), g("lts__t_sectors_op_read.sum")
    tex_wr, all_wr = g("lts__t_sectors_srcunit_tex_op_write.sum"), g("lts__t_sectors_op_write.sum")
    # Should a copy engine's reads not go through L1TEX, only the all-sources count would see them
    # (fallback; on the H200 the L1TEX-sourced count recorded s11's and s12's TMA reads in full)
    use_all = tex_rd is not None and all_rd and tex_rd < 0.1 * all_rd
    slice_read = (all_rd if use_all else tex_rd)
    # The model counts the sectors the blocks read from L2; the L2 slices serve fewer where the L2
    # request coalescer (lrc) merges reads of one sector by several SMs and fans the data out (H200,
    # 4096^3: s12 1.46x, s11 1.03x). So the row compares the sectors L2 returns to the SMs, and
    # the slices' count is a row of its own.
    to_sm = g("l1tex__m_xbar2l1tex_read_sectors.sum")
    l2_read = to_sm if to_sm is not None else slice_read
    hit = ratio("lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", "lts__t_sectors_srcunit_tex_op_read.sum")
    if use_all:
        hit = ratio("lts__t_sectors_op_read_lookup_hit.sum", "lts__t_sectors_op_read.sum")
    q = {
        "dram_read_bytes": g("dram__bytes_read.sum"),
        "dram_write_bytes": g("dram__bytes_write.sum"),
        "l2_read_bytes": None if l2_read is None else l2_read * SECTOR,
        "l2_slice_read_bytes": None if to_sm is None or slice_read is None else slice_read * SECTOR,
        "l2_write_bytes": None if (all_wr if use_all else tex_wr) is None else (all_wr if use_all else tex_wr) * SECTOR,
        "l2_read_hit": hit,
        "smem_ld_wavefronts_per_inst": by_inst(0),
        "smem_st_wavefronts_per_inst": by_inst(1),
        "fma_pipe": pct("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"),
        "tensor_pipe": pct("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"),
        "issue_active": pct("smsp__issue_active.avg.pct_of_peak_sustained_active"),
        "achieved_occupancy": pct("sm__warps_active.avg.pct_of_peak_sustained_active"),
        "ipc": g("sm__inst_executed.avg.per_cycle_active"),
        "time_s": None if g("gpu__time_duration.sum") is None else g("gpu__time_duration.sum") * 1e-9,
    }
    return {"quantities": q, "stalls": ncu_mod.stalls(metrics),
            "clock_hz": g("sm__cycles_elapsed.avg.per_second"),
            "l2_hit_all_pct": g("lts__t_sector_hit_rate.pct"),
            "l2_source": "all sources (TMA)" if use_all else "from L1TEX",
            "l2_read_bytes_all_sources": None if all_rd is None else all_rd * SECTOR,
            "l2_fabric_bytes": None if g("lts__t_sectors_srcunit_ltcfabric.sum") is None
            else g("lts__t_sectors_srcunit_ltcfabric.sum") * SECTOR,
            "lrc_coalescing": ratio("lrc__xbar2gpc_sectors_op_read.sum", "lrc__lts2lrc_sectors_op_read.sum"),
            "l1_hit_bytes": None if g("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum") is None
            else g("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum") * SECTOR,
            "smem_ld_wavefronts_per_inst_all": ratio(ncu_mod.SMEM[0], ncu_mod.SMEM[1]),
            "smem_st_wavefronts_per_inst_all": ratio(ncu_mod.SMEM[2], ncu_mod.SMEM[3]),
            "registers": g("launch__registers_per_thread"), "grid": g("launch__grid_size")}


# ---- model against measured --------------------------------------------------------------------
# key, label, kind (bytes / pct / num / time), why a miss here happens
QUANTITIES = [
    ("dram_read_bytes", "DRAM read", "bytes",
     "the model reads A and B once if they fit in half of L2, else once per wave (waves.dram_traffic); "
     "L2 replacement, its two partitions and blocks drifting out of their waves decide the rest"),
    ("dram_write_bytes", "DRAM write", "bytes",
     "C lines still dirty in L2 when the kernel ends are written after it (ncu does not count them)"),
    ("l2_read_bytes", "L2 read (to the SMs)", "bytes",
     "the model: each block reads its A and B panels once; measured: the sectors L2 returns to the SMs, "
     "so L1 hits (s01's own reuse, blocks sharing an SM) lower it"),
    ("l2_slice_read_bytes", "L2 slice reads", "bytes",
     "the L2 slices serve fewer sectors than they return where the L2 request coalescer merges reads of "
     "one sector by several SMs (not modelled: it depends on timing)"),
    ("l2_write_bytes", "L2 write", "bytes", "the model writes C once (split-K: once per slice)"),
    ("l2_read_hit", "L2 read hit rate", "pct",
     "the model: 1 - DRAM read / L2 read; ncu's lookup hit rate of the slices is lower where the L2 request "
     "coalescer merged the reads that would have hit (the L2 slice reads row)"),
    ("smem_ld_wavefronts_per_inst", "smem wavefronts / load", "num",
     "the bank model on the stage's real addressing (banks.py) against the wavefronts ncu attributes to "
     "the load instructions, equal on every stage so far: a miss here is a bank-model bug"),
    ("smem_st_wavefronts_per_inst", "smem wavefronts / store", "num",
     "the bank model against the wavefronts attributed to the store instructions (ncu's aggregate count "
     "adds 1-16%: conflicts with other traffic in the data banks)"),
    ("fma_pipe", "FMA pipe busy", "pct", "FFMAs over the modelled time (issue_model.py)"),
    ("tensor_pipe", "tensor pipe busy", "pct", "the tensor-core model's time against the pipe's; measured: ncu's "
                                                "counter, else derived from the FLOPs, the time and the clock"),
    ("issue_active", "issue active", "pct", "instructions over the modelled time (issue_model.py)"),
    ("achieved_occupancy", "achieved occupancy", "pct",
     "the model's resident warps; the last round and block start-up lower the measured average"),
    ("ipc", "IPC (warp inst/clock/SM)", "num", "the K-loop's instructions over the modelled time"),
    ("time_s", "time", "time", "issue slots, register banks, the shared/L1 pipe, barriers and the pipeline depth "
                               "(issue_model.py); latency the model does not see"),
]
_LABEL = {k: lab for k, lab, _, _ in QUANTITIES}
_KIND = {k: kind for k, _, kind, _ in QUANTITIES}
_WHY = {k: why for k, _, _, why in QUANTITIES}
_TINY = {"bytes": 1e6, "time": 1e-7}


def compare(model: dict, measured: dict) -> tuple[list[dict], dict | None]:
    """Rows of {key, label, model, measured, ratio (measured / model)} and the largest miss."""
    rows, worst = [], None
    mq, xq = model.get("quantities", {}), measured.get("quantities", {})
    for key, label, kind, _ in QUANTITIES:
        mv, xv = mq.get(key), xq.get(key)
        if mv is None and xv is None:
            continue
        r = xv / mv if (mv and xv is not None) else None
        rows.append({"key": key, "label": label, "kind": kind, "model": mv, "measured": xv, "ratio": r})
        tiny = _TINY.get(kind, 0.0)
        if r is None or r <= 0 or (abs(mv) < tiny and abs(xv) < tiny):
            continue
        miss = abs(math.log(r))
        if worst is None or miss > worst["miss"]:
            worst = {"key": key, "label": label, "model": mv, "measured": xv, "ratio": r, "miss": miss,
                     "why": _WHY[key]}
    return rows, worst


def _fmt(v, kind: str) -> str:
    if v is None:
        return "-"
    if kind == "bytes":
        for unit, s in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
            if abs(v) >= s:
                return f"{v / s:.3g} {unit}"
        return f"{v:.0f} B"
    if kind == "pct":
        return f"{100 * v:.1f}%"
    if kind == "time":
        return f"{v * 1e3:.3g} ms" if v >= 1e-4 else f"{v * 1e6:.3g} us"
    return f"{v:.3g}"


def format_text(res: dict) -> str:
    """The table for one job."""
    M, N, K = res["shape"]
    head = (f"profile {res['stage']} {res.get('name', '')}  {M}x{N}x{K} {res['layout']}  kernel {res.get('kernel')}")
    lines = [head]
    if res.get("requested_stage") == "auto":
        lines.append(f"  auto chose {res['stage']} {res.get('config')} split_k {res.get('split_k', 1)}")
    if res.get("error"):
        lines.append(f"  error: {res['error']}")
        return "\n".join(lines)
    if (res.get("model") or {}).get("error"):
        lines.append(f"  model side failed: {res['model']['error']}")
    clock = (res.get("measured") or {}).get("clock_hz")
    if clock:
        lines.append(f"  SM clock under ncu {clock / 1e9:.3f} GHz; model at that clock; ratio = measured / model")
    sm = (res.get("model") or {}).get("smem") or {}

    def kinds(a, b):
        wa, wb = (sm.get(a) or {}).get("wavefronts"), (sm.get(b) or {}).get("wavefronts")
        return "" if wa is None and wb is None else f" (A {_fmt(wa, 'num')}, B {_fmt(wb, 'num')})"

    extra = {"smem_ld_wavefronts_per_inst": kinds("a_load", "b_load"),
             "smem_st_wavefronts_per_inst": kinds("a_store", "b_store")}
    lines.append(f"  {'quantity':<38} {'model':>12} {'measured':>12} {'ratio':>7}")
    for row in res.get("rows", []):
        label = row["label"] + extra.get(row["key"], "")
        r = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
        lines.append(f"  {label:<38} {_fmt(row['model'], row['kind']):>12} {_fmt(row['measured'], row['kind']):>12} {r:>7}")
    meas = res.get("measured") or {}
    notes = []
    for key, label in (("smem_ld_wavefronts_per_inst_all", "load"), ("smem_st_wavefronts_per_inst_all", "store")):
        own = (meas.get("quantities") or {}).get(key[:-4])
        if meas.get(key) is not None and own is not None and abs(meas[key] - own) > 1e-3 * max(own, 1e-9):
            notes.append(f"{label} {meas[key]:.3f} with conflicts no instruction's addresses cause")
    if notes:
        lines.append("  all shared wavefronts per instruction: " + "; ".join(notes))
    if meas.get("lrc_coalescing") is not None or meas.get("l1_hit_bytes"):
        parts = []
        if meas.get("lrc_coalescing") is not None:
            parts.append(f"L2 request coalescer: {meas['lrc_coalescing']:.2f} sectors to the SMs per sector "
                         "the slices served")
        if meas.get("l1_hit_bytes"):
            parts.append(f"L1 served {_fmt(meas['l1_hit_bytes'], 'bytes')} of global loads")
        lines.append("  " + "; ".join(parts))
    st = meas.get("stalls") or {}
    if st:
        top = ", ".join(f"{k} {v:.2f}" for k, v in list(st.items())[:5])
        lines.append(f"  top stalls (warp-cycles per issued instruction): {top}")
    im = (res.get("model") or {}).get("issue_model") or {}
    if im.get("available") and im.get("period"):
        p = im["period"]
        lines.append(f"  issue model: bound by {im['bound']}; per K tile {p['period']:.0f} clocks = issue {p['issue']:.0f} "
                     f"| shared/L1 pipe {p['pipe']:.0f} | exposed latency {p['latency']:.0f}")
    w = res.get("largest_miss")
    if w:
        lines.append(f"  largest miss: {w['label']}: measured {_fmt(w['measured'], _KIND[w['key']])}, model "
                     f"{_fmt(w['model'], _KIND[w['key']])} (x{w['ratio']:.2f}); {w['why']}")
    return "\n".join(lines)


def format_markdown(results: list[dict]) -> str:
    """The README table from profile JSON (one or more ``profile-<size>.json`` documents or their
    ``results`` lists): per stage and size, model / ncu for time, DRAM read, L2 read, L2 hit,
    shared wavefronts per load and FMA pipe."""
    rows = []
    for doc in results:
        rows.extend(doc.get("results", []) if isinstance(doc, dict) and "results" in doc else
                    (doc if isinstance(doc, list) else [doc]))
    head = ("| stage | size | time ms model / ncu | DRAM read MB model / ncu | L2 read GB model / ncu | "
            "L2 read hit model / ncu | smem wavefronts per load model / ncu | FMA (or TC: tensor) pipe % model / ncu | largest miss |")
    lines = [head, "|" + "---|" * 9]

    def pair(res, key, scale, digits):
        mq = (res.get("model") or {}).get("quantities", {})
        xq = (res.get("measured") or {}).get("quantities", {})
        a, b = mq.get(key), xq.get(key)
        fa = "-" if a is None else f"{a * scale:.{digits}f}"
        fb = "-" if b is None else f"{b * scale:.{digits}f}"
        return f"{fa} / {fb}"

    def pipe(res):  # the FMA pipe of a SIMT stage, the tensor pipe (marked TC) of a wgmma stage
        mq = (res.get("model") or {}).get("quantities", {})
        if mq.get("fma_pipe") is None and mq.get("tensor_pipe") is not None:
            return "TC " + pair(res, "tensor_pipe", 100, 1)
        return pair(res, "fma_pipe", 100, 1)

    order = {}
    for res in rows:
        if res.get("error"):
            continue
        M, N, K = res["shape"]
        size = f"{M}³" if M == N == K else f"{M}x{N}x{K}"
        name = res["stage"] if res.get("requested_stage") != "auto" else f"auto ({res['stage']})"
        w = res.get("largest_miss") or {}
        miss = f"{w['label']} x{w['ratio']:.2f}" if w else "-"
        order[(res.get("requested_stage") == "auto", res["stage"], M * N * K)] = (
            f"| {name} | {size} | {pair(res, 'time_s', 1e3, 3)} | {pair(res, 'dram_read_bytes', 1e-6, 0)} | "
            f"{pair(res, 'l2_read_bytes', 1e-9, 2)} | {pair(res, 'l2_read_hit', 100, 1)} | "
            f"{pair(res, 'smem_ld_wavefronts_per_inst', 1, 2)} | {pipe(res)} | {miss} |")
    lines += [order[k] for k in sorted(order)]
    return "\n".join(lines)


# ---- the child: run the jobs (under ncu) ---------------------------------------------------------
def _arrays(M, N, K, layout):
    try:
        import torch

        dev = "cuda"
        a = (torch.rand(M, K, device=dev) - 0.5) if layout[0] == "n" else (torch.rand(K, M, device=dev) - 0.5).t()
        b = (torch.rand(K, N, device=dev) - 0.5) if layout[1] == "n" else (torch.rand(N, K, device=dev) - 0.5).t()
        out = torch.empty(M, N, device=dev)
        return a, b, out, torch.cuda.synchronize, torch.cuda.empty_cache
    except ImportError:
        import cupy as cp

        def rnd(r, c):
            return cp.random.rand(r, c, dtype=cp.float32) - cp.float32(0.5)

        a = rnd(M, K) if layout[0] == "n" else rnd(K, M).T
        b = rnd(K, N) if layout[1] == "n" else rnd(N, K).T
        out = cp.empty((M, N), dtype=cp.float32)
        return a, b, out, cp.cuda.Device().synchronize, cp.get_default_memory_pool().free_all_blocks


def run_child(jobs: list[dict]) -> int:
    """Launch each job once through the public API; one tagged JSON line per job."""
    from .. import api

    status = 0
    for i, job in enumerate(jobs):
        rec = {"index": i}
        try:
            a, b, out, sync, free = _arrays(job["M"], job["N"], job["K"], job["layout"])
            plan, launch = api.prepare(a, b, out=out, stage=job["stage"], config=job.get("config"))
            rec["plan"] = plan.describe() if plan is not None else None
            print(f"{TAG} {json.dumps(rec, default=str)}", flush=True)
            launch()
            sync()
            del a, b, out
            free()
        except Exception as e:  # report and go on: the parent retries missing jobs alone
            rec["error"] = f"{type(e).__name__}: {e}"
            print(f"{TAG} {json.dumps(rec, default=str)}", flush=True)
            status = 1
    return status


def child_command(jobs: list[dict]) -> list[str]:
    return [sys.executable, "-m", "gemmlab.analysis.profile", "--child", json.dumps(jobs)]


def parse_tags(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        if line.startswith(TAG + " "):
            try:
                rec = json.loads(line[len(TAG) + 1:])
            except json.JSONDecodeError:
                continue
            out[rec.get("index")] = rec
    return out


# ---- the parent: ncu sessions ----------------------------------------------------------------
def _label(job: dict) -> str:
    return f"{job['stage']} {job['M']}x{job['N']}x{job['K']} {job['layout']}"


def _session(ncu: str, jobs: list[dict], optional: bool, timeout: float, log) -> tuple[int, str]:
    """One ncu session around the child; streams progress to ``log``; returns (rc, all output)."""
    cmd = ncu_mod.command(ncu, child_command(jobs), launches=len(jobs), optional=optional)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            start_new_session=True)

    def kill():  # ncu and the child it started: the session this Popen made
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            proc.kill()

    timer = threading.Timer(timeout, kill)
    timer.start()
    out, t0 = [], time.time()
    try:
        for line in proc.stdout:
            out.append(line)
            if line.startswith(TAG + " "):
                try:
                    rec = json.loads(line[len(TAG) + 1:])
                    job = jobs[rec["index"]]
                    what = rec.get("error") or ", ".join((rec.get("plan") or {}).get("kernels", []))[:90]
                    log(f"profile: [{rec['index'] + 1}/{len(jobs)}] {_label(job)}: {what} ({time.time() - t0:.0f} s)")
                except Exception:
                    pass
            elif line.startswith("==PROF== Profiling") or line.startswith("==ERROR=="):
                log("profile:   " + line.strip()[:150])
        rc = proc.wait()
    finally:
        timer.cancel()
    text = "".join(out)
    if rc in (-9, 137) or time.time() - t0 >= timeout:
        text += f"\n(ncu session killed after {timeout:.0f} s)"
        rc = 124
    return rc, text


def _main_kernel(plan: dict | None) -> str | None:
    for k in (plan or {}).get("kernels", []):
        if re.match(r"^gemmlab_(s\d|skinny)", k):
            return k
    return None


def match(jobs: list[dict], tags: dict, launches: list[dict]) -> dict:
    """{job index: launch} by order: each job takes the next profiled launch of its kernel (the
    kernel the child's plan names, else any GEMM kernel)."""
    out, pos = {}, 0
    for i, job in enumerate(jobs):
        tag = tags.get(i, {})
        if tag.get("error"):
            continue
        want = _main_kernel(tag.get("plan")) or job.get("kernel")
        for j in range(pos, len(launches)):
            if want is None or launches[j]["kernel"] == want or launches[j]["kernel"].startswith(want):
                out[i] = launches[j]
                pos = j + 1
                break
    return out


def run_jobs(jobs: list[dict], ncu: str, *, timeout: float = 600.0, log=print, retry_alone: bool = True) -> tuple:
    """Profile ``jobs`` in one ncu session (then a missing run alone and the rest together, until
    nothing more comes back; not after a timeout). Returns ({index:
    launch}, {index: tag}, raw text of every session, problems). Raises ProfileError when ncu may
    not read counters."""
    texts, problems = [], []
    optional = True
    rc, text = _session(ncu, jobs, optional, timeout, log)
    if ncu_mod.counters_denied(text):
        raise ProfileError(ncu_mod.COUNTERS_NOT_PERMITTED)
    if ncu_mod.metric_rejected(text):
        log("profile: ncu refused a metric; again without the optional ones")
        optional = False
        rc, text = _session(ncu, jobs, optional, timeout, log)
    texts.append(text)
    tags = parse_tags(text)
    found = match(jobs, tags, ncu_mod.parse_csv(text))
    trouble = ncu_mod.trouble(text)
    if trouble:
        problems.append(trouble)
    if not found:
        tail = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith('"')][-4:]
        problems.append("nothing profiled; the last lines: " + " | ".join(tail))
    # a run the child reported failing (e.g. a stage that cannot run the shape) is not retried
    missing = [i for i in range(len(jobs)) if i not in found and not tags.get(i, {}).get("error")]
    if missing and rc == 124:
        log(f"profile: the ncu session ran past {timeout:.0f} s; {len(missing)} run(s) not retried")
        problems.append(f"ncu session timed out after {timeout:.0f} s")
        missing = []
    # a crash loses the run that crashed and those after it: that one alone, then the rest together
    while retry_alone and missing and len(jobs) > 1:
        first, rest = missing[0], missing[1:]
        for group in ([first], rest):
            if not group:
                continue
            log(f"profile: again, {'alone' if len(group) == 1 else 'together'}: "
                + ", ".join(_label(jobs[i]) for i in group))
            sub = [jobs[i] for i in group]
            rc, t = _session(ncu, sub, optional, timeout, log)
            texts.append(t)
            tg = parse_tags(t)
            got = match(sub, tg, ncu_mod.parse_csv(t))
            for k, i in enumerate(group):
                if k in tg:
                    tags[i] = tg[k]
                if k in got:
                    found[i] = got[k]
            if rc == 124:
                break
        still = [i for i in rest if i not in found]
        if len(still) == len(rest) or rc == 124:   # no progress: stop
            break
        missing = still
    return found, tags, texts, problems


def result(job: dict, launch: dict | None, tag: dict | None, lim=None) -> dict:
    """One job's result: the model for what ran, the measurement, the comparison."""
    plan = (tag or {}).get("plan") or {}
    stage = plan.get("stage") or job["stage"]
    config = plan.get("config") if plan else job.get("config")
    split = int(plan.get("split_k", 1) or 1)
    res = {"requested_stage": job["stage"], "stage": stage, "shape": [job["M"], job["N"], job["K"]],
           "layout": job["layout"], "config": config, "split_k": split, "plan": plan or None}
    if stage == "auto":
        res["error"] = (tag or {}).get("error") or "the run did not say which stage auto chose"
        return res
    try:
        model = model_side(stage, job["M"], job["N"], job["K"], job["layout"], config, split, lim=lim)
    except Exception as e:
        model = {"error": f"{type(e).__name__}: {e}", "quantities": {}}
    res.update({"name": model.get("name"), "kernel": (launch or {}).get("kernel") or model.get("kernel"),
                "model": model})
    if launch is None:
        res["error"] = (tag or {}).get("error") or "ncu returned no row for this run"
        return res
    measured = measured_side(launch["metrics"])
    clock = measured.get("clock_hz")
    mq = model.get("quantities", {})
    if clock and mq.get("time_s"):   # the model at the clock the GPU ran at
        from . import occupancy

        nominal = (lim or occupancy.limits("sm_90")).clock_ghz * 1e9
        mq["time_s"] = mq["time_s"] * nominal / clock
    derive_tensor_pipe(measured, model.get("tensor_work"))
    res["measured"] = measured
    res["rows"], res["largest_miss"] = compare(model, measured)
    res["ncu_metrics"] = launch["metrics"]
    return res


def derive_tensor_pipe(measured: dict, work: dict | None) -> None:
    """Where ncu has no tensor-pipe counter for wgmma (ncu 2025.3 on the H200 returns none for
    sm__pipe_tensor_op_gmma_cycles_active), the measured share from the kernel's tensor FLOPs, its
    measured time and the clock it ran at: flop / (time x peak x clock / peak clock). Marked as
    derived in ``measured["tensor_pipe_source"]``."""
    q = measured.get("quantities", {})
    if q.get("tensor_pipe") is not None:
        measured["tensor_pipe_source"] = "counter"
        return
    clock, t = measured.get("clock_hz"), q.get("time_s")
    if not work or not clock or not t:
        return
    q["tensor_pipe"] = work["flop"] / (t * work["peak_flop_per_s"] * clock / work["peak_clock_hz"])
    measured["tensor_pipe_source"] = "derived: tensor FLOPs / (ncu time x peak at the measured clock)"


def precompile(jobs: list[dict], log=print) -> None:
    """Compile every named stage's kernel here so the child loads it from the disk cache."""
    from ..api import kernel_for
    from ..stages import get
    from ..problem import Problem

    for job in jobs:
        if job["stage"] == "auto":
            continue
        spec = get(job["stage"])
        cfg = spec.config(job.get("config"))
        try:
            variant = spec.variant(cfg, Problem.dense(job["M"], job["N"], job["K"], job["layout"]))
            kernel_for(spec, cfg, variant, _arch())
        except Exception as e:   # the child will report it
            log(f"profile: {job['stage']}: compile failed here ({type(e).__name__}); the run will say more")


def _arch() -> str:
    from .. import device

    try:
        return device.arch(0)
    except Exception:
        return "sm_90"


def provenance(ncu: str | None) -> dict:
    prov = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "python": sys.version.split()[0], "command": " ".join(["gemmlab", *sys.argv[1:]])}
    try:
        from ..bench.provenance import git_state

        prov["git"] = git_state()
    except Exception as e:
        prov["git"] = f"unknown ({e})"
    if ncu:
        prov["ncu"] = ncu
        try:
            v = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
            prov["ncu_version"] = v.splitlines()[-1] if v else None
        except Exception as e:
            prov["ncu_version"] = f"unknown ({e})"
    try:
        from .. import device

        if device.has_gpu():
            g = device.info(0)
            prov["gpu"] = {"name": g.name, "arch": g.arch, "sms": g.sms}
    except Exception as e:
        prov["gpu"] = f"unknown ({e})"
    prov["method"] = ("ncu --clock-control none --page raw --print-units base (caches flushed before each pass), "
                      "one launch per run through gemmlab.api.prepare, alpha 1 beta 0, random inputs")
    return prov


def profile(jobs: list[dict], ncu: str | None = None, *, timeout: float = 600.0, log=print,
            raw_text: str | None = None) -> tuple[list[dict], list[str], list[str]]:
    """Results for ``jobs``: run ncu (or parse ``raw_text``, a saved capture, matched to the jobs
    in order). Returns (results, raw texts, problems)."""
    if raw_text is not None:
        launches = ncu_mod.parse_csv(raw_text)
        if not launches:
            raise ProfileError("the raw file holds no ncu CSV table (expected the output of ncu --csv --page raw)")
        tags = {}
        found = match([{**j, "kernel": _kernel_name(j)} for j in jobs], tags, launches)
        texts, problems = [raw_text], []
    else:
        if ncu is None:
            raise ProfileError(ncu_mod.NCU_MISSING)
        precompile(jobs, log)
        found, tags, texts, problems = run_jobs(jobs, ncu, timeout=timeout, log=log)
    results = [result(job, found.get(i), tags.get(i)) for i, job in enumerate(jobs)]
    if raw_text is None and not found and problems:
        raise ProfileError(f"ncu profiled nothing: {'; '.join(problems)}"[:1500])
    return results, texts, problems


def _kernel_name(job: dict) -> str | None:
    if job["stage"] == "auto":
        return None
    from ..stages import get
    from ..problem import Problem

    spec = get(job["stage"])
    cfg = spec.config(job.get("config"))
    return spec.kernel_name(cfg, spec.variant(cfg, Problem.dense(job["M"], job["N"], job["K"], job["layout"])))


def save(doc: dict, path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, default=str)
        f.write("\n")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--child":
        return run_child(json.loads(argv[1]))
    print("usage: python -m gemmlab profile ... (this module's own entry point is the ncu child)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
