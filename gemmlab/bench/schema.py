"""The ladder.json contract: every field, its type and meaning, and a validator.

``FIELDS`` (rows), ``TOP_FIELDS`` and ``PROVENANCE_FIELDS`` are the single source of the field
list: docs/benchmark.md documents each of them (a test checks that it does), and ``validate``
checks a document against them, including the arithmetic that ties the numbers together
(TFLOPS from the time, p20 <= median <= p80, ratios to the cuBLAS row).

Versions: ``gemmlab.ladder/2`` added strided-batched problems (``batch`` per row and problem;
FLOPs 2·M·N·K·batch) and rows that a candidate skipped (``skipped``). A ``gemmlab.ladder/1``
document (no batch: every problem a single GEMM) is still read: it is a valid /2 document whose
rows all have batch 1.
"""
from __future__ import annotations

import math

from . import stats

SCHEMA = "gemmlab.ladder/2"
READABLE = ("gemmlab.ladder/1", SCHEMA)  # the versions validate() and gemmlab report read

NUM = (int, float)
_N = type(None)

# name -> (allowed types, description). The first five are the contract's minimum (DESIGN.md).
FIELDS: dict[str, tuple[tuple, str]] = {
    "stage": ((str,), "stage id (s01 ... tuned) or baseline id (cublas, cupy, triton)"),
    "tflops": (NUM + (_N,), "2·M·N·K·batch / median time, in TFLOP/s; null when not timed (failed check, error or skipped)"),
    "vs_cublas": (NUM + (_N,), "tflops / tflops of the cuBLAS row of the same problem (1.0 = cuBLAS; torch's cuBLAS, else CuPy's); null without one"),
    "rel_error": (NUM + (_N,), "‖out − ref‖_F / ‖ref‖_F of the correctness check (fresh inputs, alpha 0.5, beta 3, random C, float64 reference)"),
    "correct": ((bool,), "both checks passed (rel_error and rel_error_timed within tolerance, no NaN/Inf); only correct candidates are timed"),
    "name": ((str,), "stage name or baseline description"),
    "kind": ((str,), '"stage" or "baseline"'),
    "adds": ((str,), "what the stage adds over the previous one (from its spec)"),
    "notes": ((str,), "section of the design notes the stage implements"),
    "m": ((int,), "rows of A and D"),
    "n": ((int,), "columns of B and D"),
    "k": ((int,), "columns of A, rows of B"),
    "layout": ((str,), "A and B storage: n = row-major, t = column-major (a transposed view); D is row-major"),
    "batch": ((int,), "matrices in a strided-batched problem (3-D operands, batch outermost, each matrix in the layout); 1 (or absent, before gemmlab.ladder/2) for a single GEMM"),
    "tolerance": (NUM + (_N,), "the pass threshold for rel_error: base · max(1, sqrt(K/4096)), base 1e-5 for ieee and tf32x3, 2^-8 for tf32 (gemmlab/check.py)"),
    "precision": ((str, _N), '"ieee" (FP32 FFMA), "tf32" (tensor cores, 10-bit inputs) or "tf32x3" (FP32-accurate tensor cores): what the row computes at, and so its tolerance'),
    "vs_cublas_tf32": (NUM + (_N,), "tflops / tflops of the cuBLAS TF32 row (cublas_tf32) of the same problem; only where that row exists"),
    "rel_error_timed": (NUM + (_N,), "relative error of the first launch on the timed operands (alpha 1, beta 0, output poisoned with NaN) against float64"),
    "time_ms": (NUM + (_N,), "median of the per-launch times, ms (CUDA events around one launch, L2 flushed before each)"),
    "time_ms_p20": (NUM + (_N,), "20th percentile of the per-launch times, ms"),
    "time_ms_p80": (NUM + (_N,), "80th percentile of the per-launch times, ms"),
    "tflops_p20": (NUM + (_N,), "TFLOPS at time_ms_p80 (the slower end: 20th percentile of throughput)"),
    "tflops_p80": (NUM + (_N,), "TFLOPS at time_ms_p20 (the faster end)"),
    "reps": ((int, _N), "timed repetitions behind the median (warm-up launches excluded)"),
    "capped": ((bool, _N), "true when the per-candidate time budget (--max-seconds) stopped timing before the target repetitions"),
    "warmup_launches": ((int, _N), "untimed (or discarded) launches after the checks, before timing"),
    "timed_seconds": (NUM + (_N,), "sum of the timed launch times, s"),
    "sm_clock_mhz_before": ((int, _N), "SM clock read just before the timed repetitions (NVML, else nvidia-smi; null if neither)"),
    "sm_clock_mhz_after": ((int, _N), "SM clock read just after them"),
    "peak_tflops": (NUM + (_N,), "peak at this row's clock: FP32 FFMA (SMs × 128 lanes × 2 × clock) for ieee rows, dense TF32 tensor cores (SMs × 2048 × clock) for tf32 and tf32x3 rows"),
    "peak_clock_mhz": (NUM + (_N,), "the clock used for peak_tflops: mean of before/after, else the board's maximum SM clock"),
    "peak_clock_source": ((str, _N), '"measured" (mean of before/after) or "max" (board maximum; no reading)'),
    "vs_peak": (NUM + (_N,), "tflops / peak_tflops"),
    "expected_pct_cublas": ((list, _N), "[low, high] % of cuBLAS the design notes expect for the stage (000 §12.2); null when they give none"),
    "vs_expected": ((str, _N), '"below", "within" or "above" the expected range; null without one'),
    "kernel": ((str, _N), "the kernel that ran: gemmlab instantiation name (a fallback shows here), cuBLAS kernel name from the profiler, or Triton kernel and config"),
    "kernels": ((list, _N), "every kernel of the launch sequence when there is more than one"),
    "fallback": ((bool, _N), "true when the kernel that ran belongs to another stage (e.g. s11 handing an unaligned problem to s10)"),
    "config": ((dict, _N), "the configuration that ran (stage parameters, Triton's autotuned tile, or for the tuned row the plan: stage, config, split_k, repack, source, kernels)"),
    "plan": ((dict, _N), "gemmlab rows: what the call's plan ran (plan.describe(): stage, config, split_k, repack, a_transpose, source, kernels, variant, workspace_bytes, grid, block, smem)"),
    "registers": ((int, _N), "registers per thread of the kernel (CUDA function attributes)"),
    "local_bytes": ((int, _N), "local memory per thread (spills); 0 for every stage"),
    "spills": ((int, _N), "Triton: registers spilled"),
    "smem_bytes": ((int, _N), "shared memory per block: static + dynamic, bytes"),
    "smem_static_bytes": ((int, _N), "static shared memory per block, bytes"),
    "smem_dynamic_bytes": ((int, _N), "dynamic shared memory per block requested at launch, bytes"),
    "threads": ((int, _N), "threads per block"),
    "grid": ((list, _N), "grid of the launch [x, y, z]"),
    "launches": ((int, _N), "kernel launches per GEMM (1 unless the stage needs more)"),
    "blocks_per_sm": ((int, _N), "resident blocks per SM from the CUDA occupancy API for this kernel, block size and shared memory"),
    "compile_seconds": (NUM + (_N,), "compile time of the kernel in this run (0 when it came from the cache)"),
    "tf32_settings": ((dict, _N), "cuBLAS via torch: the TF32 switches as read back after turning TF32 off"),
    "cupy_tf32_env": ((str, _N), "cuBLAS via CuPy: CUPY_TF32 as CuPy saw it (null = unset = TF32 off)"),
    "error": ((str, _N), "why the row has no timing: the exception, or which check failed"),
    "skipped": ((str, _N), "why the candidate did not run on this problem at all (e.g. the 2-D Triton baseline on a batched problem); such a row is not timed and is no failure"),
}

KINDS = ("ladder", "bench", "sweep")  # the document kinds (TOP_FIELDS["kind"])

REQUIRED = ("stage", "tflops", "vs_cublas", "rel_error", "correct", "name", "kind", "m", "n", "k", "layout")

TOP_FIELDS: dict[str, tuple[tuple, str]] = {
    "schema": ((str,), f'"{SCHEMA}" ("gemmlab.ladder/1", before batches, is read too)'),
    "kind": ((str,), '"ladder", "bench" or "sweep" (gemmlab sweep: stage=\'auto\' and the baselines over a suite of shapes)'),
    "provenance": ((dict,), "where the numbers come from (below)"),
    "method": ((dict,), "the timing and checking method: policy, flush size, alpha/beta, tolerance rule"),
    "problems": ((list,), "the problems run, in order: {m, n, k, batch, layout} (no batch before gemmlab.ladder/2)"),
    "rows": ((list,), "one per candidate and problem, stages in ladder order then baselines"),
    "skipped": ((list,), "candidates not run, each {stage, reason} (library missing, compute capability too low)"),
}

PROVENANCE_FIELDS: dict[str, tuple[tuple, str]] = {
    "fixture": ((bool,), "true only in hand-made test data: its numbers are not a measurement"),
    "date": ((str,), "UTC time the run started, ISO 8601"),
    "command": ((str,), "the command line"),
    "host": ((str, _N), "host name"),
    "git": ((dict, _N), "{commit, dirty, changed_files} of the checkout (GEMMLAB_GIT_COMMIT where there is no .git)"),
    "source_sha256": ((str, _N), "sha256 over the package's .py and .cuh files"),
    "versions": ((dict,), "python, gemmlab, numpy, cuda-core, cuda-bindings, NVRTC, torch (+ its CUDA), CuPy (+ runtime), Triton, nvidia-ml-py, matplotlib, CUDA driver API"),
    "env": ((dict,), "environment variables that change what is measured (CUDA_VISIBLE_DEVICES, CUPY_TF32, NVIDIA_TF32_OVERRIDE, GEMMLAB_*)"),
    "gpu": ((dict, _N), "name, arch, compute capability, SMs, shared memory, registers, L2, max clock (kHz) of the device"),
    "driver": ((str, _N), "NVIDIA driver version"),
    "clock_source": ((str, _N), '"nvml", "nvidia-smi" or null'),
    "sm_clock_max_mhz": ((int, _N), "the board's maximum SM clock"),
    "sm_clock_mhz_start": ((int, _N), "SM clock when the run started (GPU may still be idle)"),
    "sm_clock_mhz_end": ((int, _N), "SM clock when the last candidate finished"),
    "wall_seconds": (NUM + (_N,), "wall time of the whole run"),
    "aborted": ((str, _N), "null, or the error that stopped the run early (the rows measured before it are kept)"),
}


class SchemaError(ValueError):
    """A document that does not follow the schema (or is not one at all). ``problems`` lists
    every problem found, ``name`` says which document (the file, or "ladder.json")."""

    def __init__(self, message: str, problems=(), name: str = "", version: str | None = None):
        super().__init__(message)
        self.problems = list(problems)
        self.name = name
        self.version = version if version in READABLE else SCHEMA  # the schema the document was checked as

    def summary(self, shown: int = 3) -> str:
        """One line: the document, how many problems, the first ``shown`` of them."""
        if not self.problems:
            return str(self).replace("\n", "; ")
        first = "; ".join(self.problems[:shown])
        more = f"; ... and {len(self.problems) - shown} more" if len(self.problems) > shown else ""
        return (f"{self.name} does not follow the {self.version} schema ({len(self.problems)} problem"
                f"{'s' if len(self.problems) != 1 else ''}): {first}{more}")


def _type_ok(value, types) -> bool:
    if isinstance(value, bool) and bool not in types:
        return False  # bool is an int subclass; a bool is never a number here
    return isinstance(value, types)


def validate(doc: dict, name: str | None = None) -> dict:
    """Raise SchemaError listing every problem of ``doc``; return it unchanged when valid.
    ``name`` (the file) is what the message calls the document; by default its kind, e.g.
    "sweep.json"."""
    errs: list[str] = []
    if name is None:
        kind = doc.get("kind") if isinstance(doc, dict) else None
        name = f"{kind}.json" if kind in KINDS else "ladder.json"
    if not isinstance(doc, dict):
        raise SchemaError(f"{name}: the top level must be an object", [f"top level is {type(doc).__name__}"], name)
    for key, (types, _) in TOP_FIELDS.items():
        if key not in doc:
            errs.append(f"missing top-level field {key!r}")
        elif not _type_ok(doc[key], types):
            errs.append(f"top-level {key!r}: {type(doc[key]).__name__}, expected {_names(types)}")
    if isinstance(doc.get("kind"), str) and doc["kind"] not in KINDS:
        errs.append(f"kind {doc['kind']!r}: expected one of {', '.join(KINDS)}")
    if doc.get("schema") not in (None,) + READABLE:
        errs.append(f"schema {doc.get('schema')!r}: this gemmlab reads {' and '.join(map(repr, READABLE))}")
    prov = doc.get("provenance") if isinstance(doc.get("provenance"), dict) else {}
    for key in ("fixture", "date", "command", "versions"):
        if key not in prov:
            errs.append(f"provenance: missing {key!r}")
    for key, val in prov.items():
        if key in PROVENANCE_FIELDS and not _type_ok(val, PROVENANCE_FIELDS[key][0]):
            errs.append(f"provenance.{key}: {type(val).__name__}, expected {_names(PROVENANCE_FIELDS[key][0])}")
    rows = doc.get("rows") if isinstance(doc.get("rows"), list) else []
    for i, row in enumerate(rows):
        errs.extend(f"rows[{i}] ({row.get('stage', '?') if isinstance(row, dict) else '?'}): {e}"
                    for e in validate_row(row))
    errs.extend(_check_ratios(rows))
    for i, s in enumerate(doc.get("skipped") or []):
        if not (isinstance(s, dict) and isinstance(s.get("stage"), str) and isinstance(s.get("reason"), str)):
            errs.append(f"skipped[{i}]: expected {{stage, reason}} strings")
    if errs:
        raise SchemaError(f"{name} does not follow the schema:\n  " + "\n  ".join(errs), errs, name,
                          doc.get("schema"))
    return doc


def validate_row(row) -> list[str]:
    if not isinstance(row, dict):
        return ["not an object"]
    errs = [f"missing {k!r}" for k in REQUIRED if k not in row]
    for key, val in row.items():
        if key not in FIELDS:
            errs.append(f"unknown field {key!r} (add it to schema.FIELDS and docs/benchmark.md)")
        elif not _type_ok(val, FIELDS[key][0]):
            errs.append(f"{key}: {type(val).__name__} {val!r}, expected {_names(FIELDS[key][0])}")
    if errs:
        return errs
    if row.get("batch", 1) < 1:
        errs.append(f"batch {row['batch']}: must be >= 1")
    t = row["tflops"]
    if t is not None and row.get("skipped"):
        errs.append("timed although skipped")
    if t is not None:
        if not row["correct"]:
            errs.append("timed although not correct")
        if not (t > 0 and math.isfinite(t)):
            errs.append(f"tflops {t} is not a positive number")
        ms = row.get("time_ms")
        if ms is None:
            errs.append("tflops without time_ms")
        else:
            want = stats.tflops(stats.gemm_flops(row["m"], row["n"], row["k"], row.get("batch", 1)), ms / 1e3)
            if abs(want - t) > 0.005 * want:
                errs.append(f"tflops {t} does not match 2·m·n·k·batch / time_ms ({want:.4g})")
        p20, p80 = row.get("time_ms_p20"), row.get("time_ms_p80")
        if ms is not None and p20 is not None and p80 is not None and not (p20 <= ms * (1 + 1e-9) and ms <= p80 * (1 + 1e-9)):
            errs.append(f"time percentiles out of order: p20 {p20}, median {ms}, p80 {p80}")
        if row.get("reps") is not None and row["reps"] < 1:
            errs.append("timed with reps < 1")
    if row.get("expected_pct_cublas") is not None:
        e = row["expected_pct_cublas"]
        if len(e) != 2 or not all(_type_ok(x, NUM) for x in e) or e[0] > e[1]:
            errs.append(f"expected_pct_cublas {e}: expected [low, high]")
    if row["kind"] not in ("stage", "baseline"):
        errs.append(f"kind {row['kind']!r}: expected 'stage' or 'baseline'")
    return errs


def _check_ratios(rows) -> list[str]:
    errs = []
    refs = {}
    for r in rows:
        if isinstance(r, dict) and r.get("stage") in ("cublas", "cupy") and _type_ok(r.get("tflops"), NUM) and r["tflops"] > 0:
            key = (r.get("m"), r.get("n"), r.get("k"), r.get("layout"), r.get("batch", 1))
            if r["stage"] == "cublas" or key not in refs:
                refs[key] = r["tflops"]
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not _type_ok(r.get("vs_cublas"), NUM):
            continue
        ref = refs.get((r.get("m"), r.get("n"), r.get("k"), r.get("layout"), r.get("batch", 1)))
        if ref is None or not _type_ok(r.get("tflops"), NUM):
            errs.append(f"rows[{i}] ({r.get('stage')}): vs_cublas without a timed cuBLAS row or tflops")
        elif abs(r["vs_cublas"] - r["tflops"] / ref) > 1e-3 * max(1.0, r["vs_cublas"]):
            errs.append(f"rows[{i}] ({r.get('stage')}): vs_cublas {r['vs_cublas']} != tflops / cuBLAS tflops "
                        f"({r['tflops'] / ref:.4f})")
    return errs


def problem_key(row: dict) -> tuple:
    """(m, n, k, layout, batch): the problem a row belongs to (batch 1 where a row has none, as
    in gemmlab.ladder/1 documents)."""
    return (row["m"], row["n"], row["k"], row["layout"], row.get("batch", 1))


def problem_text(key) -> str:
    """A problem key (or a row) as text: 'MxNxK nn', 'MxNxKxBATCH tt' for a batched one."""
    m, n, k, layout, b = problem_key(key) if isinstance(key, dict) else key
    return f"{m}x{n}x{k}" + (f"x{b}" if b != 1 else "") + f" {layout}"


def _names(types) -> str:
    return " or ".join("null" if t is type(None) else t.__name__ for t in types)
