"""``gemmlab choose``: what ``stage="auto"`` picks for a shape on a GPU, and why (no GPU needed).

For each entry (a dense problem: contiguous operands in the entry's layout, D row-major, as
torch.mm sees them) this runs the dispatcher's own choice (``heuristics.choose``) against the
tables of the named GPU and its waves model, then says which step decided (docs/dispatch.md, "The
steps"): the tuned bucket's entry and what it measured, the neighbours that voted, or the model's
ranking; which kernel the plan then runs (s11 hands operands TMA cannot take to its s10 stand-in,
on 4-byte copies); and the model's best predictions next to the chosen one. Everything here is
the runtime's, read, never re-decided.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..heuristics import choice as choice_mod
from ..heuristics import model, space, table
from ..heuristics.tensor_core import TENSOR_CORE_STAGES
from ..problem import Problem

H200 = {"gpu": "NVIDIA H200", "arch": "sm_90", "sms": 132}
_SPLIT_NOTE = re.compile(r" split \d+| \[.*\]")  # a shortlist label's split and note, printed apart


def _label(stage: str, config: dict, cc: int) -> str:
    """The config space's name of a stage's config ("64x64 w32x32 x3"), else its tile, else the
    config itself."""
    cand = space.candidate_for(stage, config, cc)
    if cand.label != "tuned config":
        return cand.label
    if "block_m" in config and "block_n" in config:
        return f"{config['block_m']}x{config['block_n']}"
    return " ".join(f"{k}={v}" for k, v in sorted(config.items()))


def _off_shape(entry: dict, c, p: Problem, gpu, aligned: bool) -> float | None:
    """choice.off_shape_regret for an entry used at a shape it was not measured at, else None."""
    if choice_mod.measured_at(entry, p):
        return None
    return round(choice_mod.off_shape_regret(entry, c.spec, c.config, c.split_k, p, gpu, aligned, c.repack,
                                             c.a_transpose), 3)


def _entry_summary(e: dict) -> dict:
    return {"shape": list(e.get("shape") or [])[:4], "layout": e.get("layout"), "stage": e.get("stage"),
            "config": e.get("config") or {}, "split_k": int(e.get("split_k", 1)),
            "time_us": round(1e3 * float(e.get("time_ms", 0.0)), 1), "tuned": e.get("tuned"),
            "cublas_us": round(1e3 * float(e["cublas_ms"]), 1) if e.get("cublas_ms") else None,
            # what the tuner timed, fastest first: (its label, split-K, us)
            "measured": sorted(([str(c[0]), int(c[1]), round(1e3 * float(c[2]), 1)] for c in e.get("candidates") or []
                                if len(c) >= 3 and float(c[2]) > 0), key=lambda c: c[2]),
            "source": Path(e["_source"]).name if e.get("_source") else None}


def report(M: int, N: int, K: int, batch: int = 1, layout: str = "nn", *, gpu_name: str = H200["gpu"],
           arch: str = H200["arch"], sms: int = H200["sms"], precision: str = "ieee", top: int = 3,
           compiler: str | None = None) -> dict:
    """The choice for one dense problem and why, as a dict (``format_text`` prints it). The tables
    read are those of (``gpu_name``, ``arch``, ``compiler``: default this machine's compiler)."""
    from ..jit.compiler import compiler_version
    from ..stages import arch_number

    p = Problem.dense(M, N, K, layout, batch, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40)
    gpu = model.Gpu(sms=sms, cc=arch_number(arch))
    ident = table.identity(gpu_name, arch, compiler or compiler_version())
    c = choice_mod.choose(p, gpu, ident, precision=precision)
    seen = p.repacks(c.repack, c.a_transpose)[1] if c.spec.aligned_path else p
    aligned, p_aligned = seen.operands_aligned(), p.operands_aligned()
    out = {"shape": [M, N, K, batch], "layout": layout, "precision": precision, "gpu": gpu_name, "arch": arch,
           "sms": sms, "compiler": ident["compiler"], "operands_aligned": p_aligned,
           "lda": p.operand("a").vector_layout()[1], "ldb": p.operand("b").vector_layout()[1],
           "choice": dict(c.describe(), label=_label(c.spec.id, c.config, gpu.cc)), "why": {}, "runs": None,
           "ranking": []}
    if c.tail is not None:
        out["choice"]["tail"]["label"] = _label(c.tail.spec.id, c.tail.config, gpu.cc)
    if c.source == "tuned":
        for lay, al in ((seen.layout, aligned or c.repack), (p.layout, p_aligned or c.repack)):
            e = table.lookup(ident, M, N, K, batch, lay, al)
            if e is not None:
                out["why"] = {"step": "tuned", "bucket": list(table.bucket(M, N, K, batch)), "entry": _entry_summary(e),
                              "off_shape_regret": _off_shape(e, c, p, gpu, al)}
                break
    elif c.source == "nearest":
        lay = seen.layout if c.a_transpose else p.layout
        near = table.nearest(ident, M, N, K, batch, lay, aligned or c.repack)
        out["why"] = {"step": "nearest", "neighbours": [dict(_entry_summary(e), distance=round(d, 2)) for d, e in near]}
    elif c.spec.id in TENSOR_CORE_STAGES.values():
        out["why"] = {"step": "tensor cores", "detail": f"precision {precision}: {c.spec.id} pays for its operand "
                                                        "pre-passes here (heuristics/tensor_core.py)"}
    elif c.source == "skinny":
        out["why"] = {"step": "skinny", "detail": "M or N <= 16: the memory-bound skinny kernel with its own split-K"}
    else:
        table_aligned = aligned or c.repack
        near = table.nearest(ident, M, N, K, batch, seen.layout if c.a_transpose else p.layout, table_aligned)
        # A transposed, the transposed layout's bucket empty and the call's own layout with entries
        # (choice.A_TRANSPOSE_WITHOUT_ITS_ENTRY): those entries were not asked
        unused = c.a_transpose and choice_mod.A_TRANSPOSE_WITHOUT_ITS_ENTRY == "heuristic" and (
            table.lookup(ident, M, N, K, batch, seen.layout, table_aligned) is None) and (
            table.lookup(ident, M, N, K, batch, p.layout, table_aligned) is not None
            or bool(table.nearest(ident, M, N, K, batch, p.layout, table_aligned)))
        no_bucket = f"no tuned {seen.layout} bucket (the layout A transposed gives)" if unused else "no tuned bucket"
        if choice_mod.NEAREST_ALIGNED_ONLY and not table_aligned:
            detail = f"{no_bucket}; problems on 4-byte copies take no neighbour's tile"
        elif not near:
            detail = f"{no_bucket} and no tuned shape within {table.NEAREST_RADIUS:g} octave(s)"
        else:
            detail = (f"{no_bucket}; the neighbours' tile is more than {choice_mod.NEAREST_MODEL_SLACK:g}x the "
                      "model's best here")
        if unused:
            detail += (f"; the {p.layout} table's entries, timed without A transposed, are not used "
                       "(choice.A_TRANSPOSE_WITHOUT_ITS_ENTRY)")
        out["why"] = {"step": "heuristic", "detail": detail}
    if c.source in ("nearest", "heuristic") and choice_mod.TUNED_MODEL_SLACK:
        # the bucket's entry may have been passed over off its shape (choice.TUNED_MODEL_SLACK)
        e = table.lookup(ident, M, N, K, batch, seen.layout if c.a_transpose else p.layout, aligned or c.repack)
        if e is not None:
            out["why"]["passed_over"] = dict(_entry_summary(e), slack=choice_mod.TUNED_MODEL_SLACK)
            if "detail" in out["why"]:
                out["why"]["detail"] = out["why"]["detail"].replace("no tuned bucket", "the bucket's entry passed over")
    if c.spec.aligned_path and not aligned:
        run = c.spec.fallback(c.config, seen)
        if run is not None:
            out["runs"] = {"stage": run[0].id, "config": dict(run[1]), "why": "operands TMA cannot take: 4-byte copies"}
    if c.source in ("tuned", "nearest", "heuristic") and c.spec.id in {cand.stage for cand in space.candidates(gpu.cc)}:
        # ranked as choose ranks: aligned where the operands are or are repacked, else the stand-in
        # for the problem the kernel sees
        model_aligned = p_aligned or c.repack
        stand_in = choice_mod.stand_in_problem(p, model_aligned, c.repack, c.a_transpose)
        ranked = model.rank(M, N, K, batch, gpu, aligned=model_aligned, problem=stand_in)
        mine = model.rank(M, N, K, batch, gpu, candidates=[space.candidate_for(c.spec.id, c.config, gpu.cc)],
                          aligned=model_aligned, problem=stand_in)
        def is_pick(r):
            return r.candidate.config() == c.config and r.split_k == c.split_k

        rows = ranked[:top]
        rows += [r for r in mine if is_pick(r) and not any(map(is_pick, rows))]  # the pick, where not among them
        out["ranking"] = [{"label": r.candidate.label, "split_k": r.split_k, "us": round(r.seconds * 1e6, 1),
                           "waves": round(r.waves, 2), "chosen": is_pick(r)} for r in rows]
    return out


def format_text(rep: dict) -> str:
    M, N, K, batch = rep["shape"]
    shape = f"{M}x{N}x{K}" + (f"x{batch}" if batch > 1 else "")
    al = "16-byte aligned rows" if rep["operands_aligned"] else \
        f"rows not all 16-byte aligned: lda {rep['lda']}, ldb {rep['ldb']} floats"
    c = rep["choice"]
    extras = [f"split-K {c['split_k']}"] if c["split_k"] > 1 else []
    extras += ["repack"] if c["repack"] else []
    extras += ["A transposed first"] if c["a_transpose"] else []
    gpu = f"{rep['gpu']} ({rep['arch']}, {rep['sms']} SMs)"
    lines = [f"{shape} {rep['layout']}, {al}, on {gpu}, precision {rep['precision']}",
             f"  auto: {c['stage']} {c['label']}" + (f", {', '.join(extras)}" if extras else "")]
    if c.get("tail"):
        t = c["tail"]
        what = "rows" if t["axis"] == "m" else "columns"
        replaced = "the neighbours' plan" if rep["why"].get("step") == "nearest" else "the best single plan"
        lines[-1] += f", on D's {what} before {t['start']} (whole waves)"
        lines.append(f"  then D's {what} from {t['start']} on: {t['stage']} {t['label']}"
                     + (f", split-K {t['split_k']}" if t["split_k"] > 1 else "")
                     + (f" (choice.TAIL_MIN_GAIN: the waves model's cut, {t['us']} us against {t['single_us']} us "
                        f"for {replaced})" if "us" in t else ""))
    why = rep["why"]
    if why.get("step") == "tuned":
        e = why["entry"]
        cublas = f", cuBLAS {e['cublas_us']} us" if e["cublas_us"] else ""
        lines.append(f"  why: tuned; bucket {tuple(why['bucket'])} in {e['layout']}, measured {e['time_us']} us at "
                     f"{'x'.join(map(str, e['shape']))}{cublas} ({e['tuned']}, {e['source']})")
        if why.get("off_shape_regret") is not None:
            on = choice_mod.TUNED_MODEL_SLACK
            lines.append(f"  measured at another shape of the bucket: the waves model puts that plan "
                         f"{why['off_shape_regret']}x further behind its best here than there"
                         + (f" (taken: within {on:g}x)" if on else " (TUNED_MODEL_SLACK is off: not checked)"))
        if len(e["measured"]) > 1:
            lines.append("  the tuner's shortlist, fastest first (us): " +
                         " | ".join(f"{_SPLIT_NOTE.sub('', lab)} split {k} {us}" for lab, k, us in e["measured"][:4]))
    elif why.get("step") == "nearest":
        bucket = "the bucket's entry passed over (below)" if why.get("passed_over") else "no tuned bucket"
        lines.append(f"  why: nearest; {bucket}, {len(why['neighbours'])} tuned neighbour(s) within "
                     f"{table.NEAREST_RADIUS:g} octave(s) voted:")
        for e in why["neighbours"]:
            lines.append(f"    {'x'.join(map(str, e['shape']))} {e['layout']} at {e['distance']} octaves: {e['stage']} "
                         f"{_label(e['stage'], e['config'], 90)} split {e['split_k']}, {e['time_us']} us")
    elif why.get("step") == "heuristic":
        lines.append(f"  why: heuristic; {why['detail']}: the waves model's best")
    else:
        lines.append(f"  why: {why['step']}; {why['detail']}")
    if why.get("passed_over"):
        e = why["passed_over"]
        lines.append(f"  the bucket's entry, measured at {'x'.join(map(str, e['shape']))} ({e['stage']} "
                     f"{_label(e['stage'], e['config'], 90)} split {e['split_k']}), is more than {e['slack']:g}x further "
                     "behind the waves model's best here than there (TUNED_MODEL_SLACK): passed over")
    if rep["runs"]:
        r = rep["runs"]
        lines.append(f"  runs: {r['stage']} {r['config']['block_m']}x{r['config']['block_n']} "
                     f"w{r['config']['warp_m']}x{r['config']['warp_n']} bk{r['config']['block_k']} "
                     f"s{r['config']['stages']} x{r['config']['min_blocks']}"
                     f"{' edge_shift' if r['config'].get('edge_shift') else ''} ({r['why']})")
    if rep["ranking"]:
        lines.append("  waves model (predicted us):")
        for r in rep["ranking"]:
            mark = "  <- auto" if r["chosen"] else ""
            lines.append(f"    {r['label']:28} split {r['split_k']:3}  {r['us']:8.1f}  waves {r['waves']:5.3g}{mark}")
    return "\n".join(lines)
