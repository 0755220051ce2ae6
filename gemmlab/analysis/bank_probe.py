"""Check the shared-memory bank model against the GPU: one micro-kernel per access pattern, run
under Nsight Compute, wavefronts per instruction measured vs modelled (banks.py, both models).

    python -m gemmlab.analysis.bank_probe --out results/h200        # needs a GPU and ncu
    python -m gemmlab.analysis.bank_probe --list                    # the patterns and the models' counts

Each pattern is one warp-level shared-memory instruction: 32 lane addresses and a width. Its kernel
(8 warps, one block) repeats that instruction 1024 times per warp with the results kept live, and
ncu reads ``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum`` and
``smsp__sass_inst_executed_op_shared_{ld,st}.sum``; their ratio is the wavefronts per instruction.
The kernel also times its loop with clock64(); cycles per instruction per SM is a second,
counter-free estimate (one wavefront per clock per SM), used when ncu cannot read counters.

Patterns: small calibration cases (broadcast, strides, 64- and 128-bit, the i^1 / i^2 pairs),
the notes' §8.4–8.5 layouts (banks.reference_pattern) and every registered stage's own
instructions (``smem_accesses`` of its default config).

All patterns are first run in one ncu session (one child process launching every kernel); any
pattern missing from its output (a crash, a timeout) is then run alone in its own child, so one
bad pattern does not lose the others. ``--isolate`` runs every pattern in its own child.
Writes ``bank_probe.json`` (and ``bank_probe.txt``, the table) to ``--out``.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import banks

METRICS = {
    "load": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "smsp__sass_inst_executed_op_shared_ld.sum"),
    "store": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "smsp__sass_inst_executed_op_shared_st.sum"),
}
ALL_METRICS = METRICS["load"] + METRICS["store"]
WARPS = 8
UNROLL = 16
ITERS = 64
RESULT_TAG = "GEMMLAB_PROBE"
KERNEL_PREFIX = "gemmlab_probe_"


@dataclass
class Pattern:
    name: str
    op: str                      # "load" or "store"
    width: int                   # bytes per lane: 4, 8 or 16
    addresses: tuple             # 32 byte addresses, None for an inactive lane
    group: str = "basic"         # basic / notes / stage
    description: str = ""
    model: dict = field(default_factory=dict)

    def __post_init__(self):
        low = min((a for a in self.addresses if a is not None), default=0)
        base = (low // 128) * 128   # keep the bank alignment, drop the offset
        self.addresses = tuple(None if a is None else a - base for a in self.addresses)
        self.model = {m: banks.wavefronts(self.width, self.addresses, m, self.op) for m in banks.MODELS}

    @property
    def kernel(self) -> str:
        return KERNEL_PREFIX + re.sub(r"[^A-Za-z0-9_]", "_", self.name)

    @property
    def smem_bytes(self) -> int:
        top = max((a for a in self.addresses if a is not None), default=0) + self.width
        return max(128, -(-top // 128) * 128)

    def key(self):
        """Equal for patterns that are translations of each other (same bank behaviour)."""
        low = min((a for a in self.addresses if a is not None), default=0)
        return (self.op, self.width, tuple(None if a is None else a - low for a in self.addresses))


def _lanes(f):
    return tuple(f(lane) for lane in range(32))


def basic_patterns() -> list[Pattern]:
    P = Pattern
    return [
        P("ld32_linear", "load", 4, _lanes(lambda i: 4 * i), description="32-bit, consecutive words"),
        P("ld32_broadcast", "load", 4, _lanes(lambda i: 0), description="32-bit, one word for all lanes"),
        P("ld32_stride2", "load", 4, _lanes(lambda i: 8 * i), description="32-bit, stride 2 words: 2-way"),
        P("ld32_stride32", "load", 4, _lanes(lambda i: 128 * i), description="32-bit, stride 32 words: 32-way"),
        P("ld32_half_active", "load", 4, _lanes(lambda i: 4 * i if i < 16 else None),
          description="32-bit, lanes 16-31 inactive"),
        P("ld64_linear", "load", 8, _lanes(lambda i: 8 * i), description="64-bit, consecutive"),
        P("ld64_pairs_xor1", "load", 8, _lanes(lambda i: 8 * (i // 2)), description="64-bit, lane i == lane i^1"),
        P("ld64_stride2", "load", 8, _lanes(lambda i: 16 * i), description="64-bit at 16-byte stride: 2-way per half"),
        P("ld128_linear", "load", 16, _lanes(lambda i: 16 * i), description="128-bit, consecutive"),
        P("ld128_broadcast", "load", 16, _lanes(lambda i: 0), description="128-bit, one address for all lanes"),
        P("ld128_pairs_xor1", "load", 16, _lanes(lambda i: 16 * (i // 2)), description="128-bit, lane i == lane i^1"),
        P("ld128_pairs_xor2", "load", 16, _lanes(lambda i: 16 * ((i >> 2) * 2 + (i & 1))),
          description="128-bit, lane i == lane i^2"),
        P("ld128_quad_repeat", "load", 16, _lanes(lambda i: 16 * (i % 4)),
          description="128-bit, 4 addresses repeated (no pair rule)"),
        P("ld128_stride2", "load", 16, _lanes(lambda i: 32 * i), description="128-bit at 32-byte stride: 2-way"),
        P("ld128_halves_conflict", "load", 16, _lanes(lambda i: 16 * ((i % 8) // 2) + 256 * (i // 8)),
          description="128-bit, i^1 pairs; quarter-warps 0 and 1 hit the same banks at different words"),
        P("st32_linear", "store", 4, _lanes(lambda i: 4 * i), description="32-bit store, consecutive"),
        P("st32_same", "store", 4, _lanes(lambda i: 0), description="32-bit store, all lanes one word"),
        P("st32_stride2", "store", 4, _lanes(lambda i: 8 * i), description="32-bit store, 2-way"),
        P("st64_linear", "store", 8, _lanes(lambda i: 8 * i), description="64-bit store, consecutive"),
        P("st128_linear", "store", 16, _lanes(lambda i: 16 * i), description="128-bit store, consecutive"),
        P("st128_stride2", "store", 16, _lanes(lambda i: 32 * i), description="128-bit store, 2-way"),
    ]


def notes_patterns() -> list[Pattern]:
    out = []
    for name in banks.NOTES_TABLE:
        ref = banks.reference_pattern(name)
        for kind in ("a_load", "b_load"):
            width, addrs = ref[kind][0]
            out.append(Pattern(f"notes_{name}_{kind[0]}", "load", width, tuple(addrs), "notes",
                               f"000 §8.4-8.5 {name}: {kind}, notes say {banks.NOTES_TABLE[name][kind[0] == 'b']}"))
    return out


def stage_patterns(per_kind: int = 3) -> list[Pattern]:
    """Distinct instructions (up to ``per_kind`` per kind) of every stage's real addressing."""
    from ..stages import all_stages

    out = []
    for spec in all_stages():
        try:
            acc = spec.smem_accesses(spec.default_config) or {}
        except Exception as e:  # a stage in progress must not stop the probe
            print(f"bank_probe: {spec.id}.smem_accesses failed ({e}); skipped", file=sys.stderr)
            continue
        for kind in banks.KINDS:
            seen = set()
            for item in acc.get(kind) or []:
                width, addrs = banks._instruction(item)
                if width not in (4, 8, 16):
                    continue
                p = Pattern(f"{spec.id}.{kind}.{len(seen)}", "store" if kind.endswith("store") else "load",
                            width, tuple(addrs), "stage", f"{spec.id} {spec.name} {kind}")
                if p.key() in seen:
                    continue
                seen.add(p.key())
                out.append(p)
                if len(seen) >= per_kind:
                    break
    return out


def all_patterns(stages: bool = True) -> list[Pattern]:
    pats = basic_patterns() + notes_patterns() + (stage_patterns() if stages else [])
    names = [p.name for p in pats]
    assert len(names) == len(set(names)), "pattern names must be unique"
    return pats


# ---- the micro-kernel -------------------------------------------------------------------------
_PTX = {
    ("load", 4): ('asm volatile("ld.volatile.shared.f32 %0, [%1];" : "=f"(x0) : "r"(addr));', 1),
    ("load", 8): ('asm volatile("ld.volatile.shared.v2.f32 {%0, %1}, [%2];" : "=f"(x0), "=f"(x1) : "r"(addr));', 2),
    ("load", 16): ('asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];" '
                   ': "=f"(x0), "=f"(x1), "=f"(x2), "=f"(x3) : "r"(addr));', 4),
    ("store", 4): ('asm volatile("st.volatile.shared.f32 [%0], %1;" :: "r"(addr), "f"(v));', 1),
    ("store", 8): ('asm volatile("st.volatile.shared.v2.f32 [%0], {%1, %2};" :: "r"(addr), "f"(v), "f"(v));', 2),
    ("store", 16): ('asm volatile("st.volatile.shared.v4.f32 [%0], {%1, %2, %3, %4};" '
                    ':: "r"(addr), "f"(v), "f"(v), "f"(v), "f"(v));', 4),
}


def kernel_source(p: Pattern) -> str:
    """Standalone CUDA C++ for pattern ``p``: kernel ``p.kernel(float* out, unsigned long long*
    cycles, int iters)``, one block of WARPS warps, ``p.smem_bytes`` of dynamic shared memory."""
    asm, n = _PTX[(p.op, p.width)]
    offsets = ", ".join("0xffffffffu" if a is None else f"{a}u" for a in p.addresses)
    if p.op == "load":
        body = (f"float x0 = 0.f, x1 = 0.f, x2 = 0.f, x3 = 0.f;\n                {asm}\n"
                "                acc0 += x0; acc1 += x1; acc2 += x2; acc3 += x3;")
    else:
        body = asm
    return f"""\
// generated by gemmlab.analysis.bank_probe: pattern {p.name} ({p.op}, {p.width} bytes per lane)
// {p.description}
__constant__ unsigned {p.kernel}_offsets[32] = {{{offsets}}};

extern "C" __global__ void __launch_bounds__({32 * WARPS}) {p.kernel}(float* out, unsigned long long* cycles, int iters) {{
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned lane = threadIdx.x & 31u;
    const unsigned off = {p.kernel}_offsets[lane];
    const bool active = off != 0xffffffffu;
    const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem)) + (active ? off : 0u);
    const float v = __int_as_float(0x3f800000 + threadIdx.x);
    float acc0 = 0.f, acc1 = 0.f, acc2 = 0.f, acc3 = 0.f;
    __syncthreads();
    const long long t0 = clock64();
    if (active) {{  // inactive lanes sit the loop out: the warp's instructions run with them masked off
        for (int i = 0; i < iters; ++i) {{
#pragma unroll
            for (int u = 0; u < {UNROLL}; ++u) {{
                {body}
            }}
        }}
    }}
    __syncthreads();
    const long long t1 = clock64();
    out[threadIdx.x] = acc0 + acc1 + acc2 + acc3 + v;
    if (threadIdx.x == 0) cycles[0] = static_cast<unsigned long long>(t1 - t0);
}}
"""


def compile_pattern(p: Pattern, arch: str):
    from ..jit import compile_cubin

    return compile_cubin(kernel_source(p), p.kernel, arch)


# ---- child: launch patterns (under ncu) and report the clock64 timing --------------------------
def run_patterns(names: list[str], arch: str | None = None) -> int:
    """Launch each named pattern once on GPU 0; print one result line per pattern."""
    import numpy as np
    from cuda.bindings import driver
    from cuda.core import Device

    from .. import device
    from ..jit import launch

    pats = {p.name: p for p in all_patterns()}
    dev = Device(0)
    dev.set_current()
    arch = arch or device.arch(0)
    stream = dev.create_stream()
    threads = 32 * WARPS
    err, out_ptr = driver.cuMemAlloc(4 * threads)
    err2, cyc_ptr = driver.cuMemAlloc(8)
    if err != driver.CUresult.CUDA_SUCCESS or err2 != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuMemAlloc failed: {err} {err2}")
    status = 0
    for name in names:
        rec = {"name": name}
        try:
            p = pats[name]
            ck = compile_pattern(p, arch)
            args = [np.uint64(int(out_ptr)), np.uint64(int(cyc_ptr)), np.int32(ITERS)]
            launch.launch(ck, 0, int(stream.handle), (1, 1, 1), threads, p.smem_bytes, args)
            stream.sync()
            host = np.zeros(1, dtype=np.uint64)
            (e,) = driver.cuMemcpyDtoH(host.ctypes.data, cyc_ptr, 8)
            if e != driver.CUresult.CUDA_SUCCESS:
                raise RuntimeError(f"cuMemcpyDtoH: {e}")
            per_warp = ITERS * UNROLL
            rec.update({"cycles": int(host[0]), "warps": WARPS, "instructions_per_warp": per_warp,
                        "cycles_per_instruction": int(host[0]) / (WARPS * per_warp)})
        except Exception as e:  # report and go on: the parent retries missing patterns alone
            rec["error"] = f"{type(e).__name__}: {e}"
            status = 1
        print(f"{RESULT_TAG} {json.dumps(rec)}", flush=True)
    return status


# ---- parent: ncu, CSV, table ------------------------------------------------------------------
def find_ncu() -> str | None:
    """ncu: $GEMMLAB_NCU, PATH, the CUDA toolkit, then /opt/nvidia/nsight-compute/*/ncu (newest)."""
    env = os.environ.get("GEMMLAB_NCU")
    if env:
        return env if os.access(env, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    cands = ["/usr/local/cuda/bin/ncu"] + sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True) \
        + sorted(glob.glob("/usr/local/cuda*/bin/ncu"), reverse=True)
    for c in cands:
        if os.access(c, os.X_OK):
            return c
    return None


def _number(text: str) -> float | None:
    t = text.strip().replace(",", "").replace(" ", "")
    if not t or t.lower() in ("n/a", "nan"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def parse_ncu_csv(text: str) -> dict:
    """{kernel name: {metric name: value}} from ``ncu --csv`` output (other lines are skipped).
    Values with thousands separators ("1,024") are read as numbers; several launches of one
    kernel are summed."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return {}
    rows = [line for line in lines[start:] if line.startswith('"')]
    reader = csv.DictReader(io.StringIO("\n".join(rows)))
    out: dict = {}
    seen = set()
    for row in reader:
        kernel = (row.get("Kernel Name") or row.get("Function Name") or "").strip()
        metric = (row.get("Metric Name") or "").strip()
        if not kernel or not metric:
            continue
        value = _number(row.get("Metric Value", ""))
        if value is None:
            continue
        key = (row.get("ID"), kernel, metric)
        if key in seen:
            continue
        seen.add(key)
        d = out.setdefault(kernel, {})
        d[metric] = d.get(metric, 0.0) + value
    return out


def parse_results(text: str) -> dict:
    """{pattern name: result dict} from the child's tagged lines."""
    out = {}
    for line in text.splitlines():
        if line.startswith(RESULT_TAG + " "):
            try:
                rec = json.loads(line[len(RESULT_TAG) + 1:])
            except json.JSONDecodeError:
                continue
            out[rec.get("name")] = rec
    return out


_NCU_TROUBLE = [
    ("ERR_NVGPUCTRPERM", "ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM): run as root "
                         "or allow profiling (NVreg_RestrictProfilingToAdminUsers=0)"),
    ("LibraryNotLoaded", "ncu could not load its profiling library (seen on gVisor machines): this runtime "
                         "exposes no hardware counters"),
    ("No kernels were profiled", "ncu profiled no kernel (the kernel-name filter matched nothing?)"),
]


def ncu_trouble(text: str) -> str | None:
    for marker, msg in _NCU_TROUBLE:
        if marker in text:
            return msg
    errs = [line for line in text.splitlines() if line.startswith("==ERROR==")]
    return "; ".join(errs[:3]) if errs else None


def child_command(names: list[str], arch: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "gemmlab.analysis.bank_probe", "--run", ",".join(names)]
    return cmd + (["--arch", arch] if arch else [])


def ncu_command(ncu: str, child: list[str]) -> list[str]:
    return [ncu, "--clock-control", "none", "--metrics", ",".join(ALL_METRICS), "--csv",
            "--kernel-name", f"regex:^{KERNEL_PREFIX}", *child]


def _run(cmd: list[str], timeout: float) -> tuple[int, str]:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout + "\n" + r.stderr
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return 124, out + f"\n(timed out after {timeout:.0f} s)"


def measure(pats: list[Pattern], ncu: str | None, arch: str | None, isolate: bool = False,
            timeout: float = 90.0, log=print) -> tuple[dict, dict, list[str]]:
    """Run the patterns; returns ({name: child result}, {kernel: ncu metrics}, [problems])."""
    results: dict = {}
    metrics: dict = {}
    problems: list[str] = []

    def one_run(names):
        child = child_command(names, arch)
        cmd = ncu_command(ncu, child) if ncu else child
        rc, text = _run(cmd, timeout if len(names) == 1 else timeout + 10 * len(names))
        results.update(parse_results(text))
        if ncu:
            metrics.update(parse_ncu_csv(text))
            trouble = ncu_trouble(text)
            if trouble and trouble not in problems:
                problems.append(trouble)
        if rc not in (0, 1) and len(names) == 1:
            tail = " | ".join(text.strip().splitlines()[-3:])
            results.setdefault(names[0], {"name": names[0], "error": f"exit {rc}: {tail}"})

    names = [p.name for p in pats]
    if not isolate:
        log(f"bank_probe: {len(names)} patterns in one {'ncu ' if ncu else ''}session")
        one_run(names)
    kernel_of = {p.name: p.kernel for p in pats}
    missing = [n for n in names if n not in results or "error" in results[n]
               or (ncu and kernel_of[n] not in metrics and not problems)]
    for i, n in enumerate(missing):
        log(f"bank_probe: [{i + 1}/{len(missing)}] {n} alone")
        results.pop(n, None)
        one_run([n])
    return results, metrics, problems


def tabulate(pats: list[Pattern], results: dict, metrics: dict) -> list[dict]:
    rows = []
    for p in pats:
        res = results.get(p.name, {})
        m = metrics.get(p.kernel, {})
        wf_name, inst_name = METRICS[p.op]
        wf, inst = m.get(wf_name), m.get(inst_name)
        measured = None
        if wf is not None and inst:
            measured = wf / inst
        row = {
            "name": p.name, "group": p.group, "op": p.op, "width": p.width, "description": p.description,
            "addresses": list(p.addresses), "model": dict(p.model),
            "measured": {"wavefronts_per_instruction": measured, "wavefronts": wf, "instructions": inst,
                         "cycles_per_instruction": res.get("cycles_per_instruction")},
            "error": res.get("error"),
        }
        if measured is not None:
            row["matches"] = {k: abs(v - measured) < 0.05 for k, v in p.model.items()}
        rows.append(row)
    return rows


def summarise(rows: list[dict]) -> dict:
    measured = [r for r in rows if r["measured"]["wavefronts_per_instruction"] is not None]
    agree = {m: sum(1 for r in measured if r["matches"][m]) for m in banks.MODELS}
    best = max(agree, key=agree.get) if measured else None
    table = {}
    by_name = {r["name"]: r for r in rows}
    for name, (na, nb) in banks.NOTES_TABLE.items():
        a, b = by_name.get(f"notes_{name}_a"), by_name.get(f"notes_{name}_b")
        ma = a and a["measured"]["wavefronts_per_instruction"]
        mb = b and b["measured"]["wavefronts_per_instruction"]
        table[name] = {"notes": [na, nb, na + nb],
                       "model_notes": [a["model"]["notes"], b["model"]["notes"]] if a and b else None,
                       "model_hardware": [a["model"]["hardware"], b["model"]["hardware"]] if a and b else None,
                       "measured": [ma, mb, (ma + mb) if ma is not None and mb is not None else None]}
    return {
        "patterns": len(rows), "measured": len(measured),
        "failed": [r["name"] for r in rows if r["measured"]["wavefronts_per_instruction"] is None],
        "agree": agree, "best_model": best,
        "all_agree": {m: bool(measured) and agree[m] == len(measured) for m in banks.MODELS},
        "notes_table": table,
    }


def format_table(rows: list[dict]) -> str:
    head = f"{'pattern':<28} {'op':<5} {'B':>2} {'notes':>5} {'hw':>4} {'ncu':>7} {'cyc/ins':>7}  match"
    lines = [head, "-" * len(head)]
    for r in rows:
        m = r["measured"]
        wf = "-" if m["wavefronts_per_instruction"] is None else f"{m['wavefronts_per_instruction']:.2f}"
        cy = "-" if m["cycles_per_instruction"] is None else f"{m['cycles_per_instruction']:.2f}"
        match = ",".join(k for k, v in r.get("matches", {}).items() if v) or ("ERROR" if r["error"] else "")
        lines.append(f"{r['name']:<28} {r['op']:<5} {r['width']:>2} {r['model']['notes']:>5} "
                     f"{r['model']['hardware']:>4} {wf:>7} {cy:>7}  {match}")
    return "\n".join(lines)


def _provenance(ncu: str | None) -> dict:
    prov = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "python": sys.version.split()[0]}
    from ..bench.provenance import git_state

    git = git_state()
    prov["git_commit"], prov["git_dirty"] = git["commit"], git["dirty"]
    if ncu:
        try:
            prov["ncu_version"] = subprocess.run([ncu, "--version"], capture_output=True, text=True,
                                                 timeout=30).stdout.strip().splitlines()[-1]
        except Exception as e:
            prov["ncu_version"] = f"unknown ({e})"
    try:
        from .. import device

        if device.has_gpu():
            g = device.info(0)
            prov["gpu"] = g.name
            prov["arch"] = g.arch
            prov["sms"] = g.sms
    except Exception as e:
        prov["gpu"] = f"unknown ({e})"
    return prov


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gemmlab.analysis.bank_probe", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="directory for bank_probe.json and bank_probe.txt")
    ap.add_argument("--patterns", help="comma-separated pattern names (default: all)")
    ap.add_argument("--list", action="store_true", help="list the patterns and the models' counts; no GPU needed")
    ap.add_argument("--isolate", action="store_true", help="run every pattern in its own ncu session")
    ap.add_argument("--no-ncu", action="store_true", help="clock64 timing only")
    ap.add_argument("--no-stages", action="store_true", help="leave out the stages' own patterns")
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds per single-pattern run")
    ap.add_argument("--arch", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--run", help=argparse.SUPPRESS)  # child mode: launch these patterns
    args = ap.parse_args(argv)

    if args.run:
        return run_patterns(args.run.split(","), args.arch)

    pats = all_patterns(stages=not args.no_stages)
    if args.patterns:
        wanted = set(args.patterns.split(","))
        unknown = wanted - {p.name for p in pats}
        if unknown:
            print(f"bank_probe: unknown patterns {sorted(unknown)}", file=sys.stderr)
            return 2
        pats = [p for p in pats if p.name in wanted]
    if args.list:
        rows = tabulate(pats, {}, {})
        print(format_table(rows))
        return 0
    if not args.out:
        ap.error("--out DIR is required (or --list)")

    from .. import device

    if not device.has_gpu():
        print(f"bank_probe: {device.NO_GPU_HINT}; `--list` shows the patterns without one", file=sys.stderr)
        return 2
    arch = args.arch or device.arch(0)
    ncu = None if args.no_ncu else find_ncu()
    if ncu is None and not args.no_ncu:
        print("bank_probe: ncu (Nsight Compute) not found: set GEMMLAB_NCU=/path/to/ncu or put it on PATH. "
              "Measuring by clock64 timing only (no wavefront counts).", file=sys.stderr)

    t0 = time.time()
    compile_errors = {}
    for p in pats:  # compile here first: the children then load from the disk cache
        try:
            compile_pattern(p, arch)
        except Exception as e:
            compile_errors[p.name] = f"compile: {e}"
    runnable = [p for p in pats if p.name not in compile_errors]
    results, metrics, problems = measure(runnable, ncu, arch, args.isolate, args.timeout,
                                         log=lambda s: print(s, file=sys.stderr))
    for name, err in compile_errors.items():
        results[name] = {"name": name, "error": err}
    rows = tabulate(pats, results, metrics)
    summary = summarise(rows)
    doc = {
        "tool": "gemmlab.analysis.bank_probe",
        "provenance": _provenance(ncu) | {"ncu": ncu, "seconds": round(time.time() - t0, 1)},
        "method": {"metrics": list(ALL_METRICS), "warps": WARPS, "instructions_per_warp": ITERS * UNROLL,
                   "ncu_flags": ["--clock-control", "none", "--csv"]},
        "problems": problems,
        "summary": summary,
        "patterns": rows,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bank_probe.json").write_text(json.dumps(doc, indent=2) + "\n")
    table = format_table(rows)
    (out / "bank_probe.txt").write_text(table + "\n")
    print(table)
    print(f"\nmeasured {summary['measured']}/{summary['patterns']}; agree: "
          + ", ".join(f"{k} {v}" for k, v in summary["agree"].items()) + f"; best model: {summary['best_model']}")
    for name, t in summary["notes_table"].items():
        print(f"  {name:<9} notes {t['notes']}  measured {t['measured']}")
    for pr in problems:
        print(f"bank_probe: {pr}", file=sys.stderr)
    print(f"wrote {out / 'bank_probe.json'} in {time.time() - t0:.0f} s")
    return 0 if summary["measured"] else 3


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(0)
