"""Nsight Compute for ``gemmlab profile``: finding ncu, the metrics, the command, and parsing its
CSV output into one dict per profiled kernel launch.

``ncu --csv --page raw --print-units base`` prints one table: a header row of column names (ID,
Process ID, Process Name, Host Name, Kernel Name, ..., then one column per metric), a row of
units, then one row per profiled launch. Numbers carry the en_US thousands separator ("1,024").
The default page (``--page details``, what scripts/ncu_stages.py and the bank probe read on the
H200) prints one row per metric instead, with "Metric Name", "Metric Unit" and "Metric Value"
columns. :func:`parse_csv` reads both and converts scaled units (Kbyte, usecond, ...) to base
units, so a capture made either way gives the same numbers.
"""
from __future__ import annotations

import csv
import glob
import io
import os
import re
import shutil

NCU_MISSING = "ncu not found: install Nsight Compute or set GEMMLAB_NCU"

# Metric groups. CORE is what scripts/ncu_stages.py and the bank probe already read on the H200
# (ncu 2025.3.1); the rest are standard Nsight Compute metrics of the memory and compute
# sections. If ncu refuses a name, the run is retried without the OPTIONAL group.
SMEM = [
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
]
# Shared wavefronts attributed to the LDS / STS instructions themselves (what the Source page sums
# per SASS line): the bank model's quantity. The SMEM counts add conflicts that no instruction's
# own addresses cause (s04: 7.66 M of 175.4 M, the data banks' arbitration with other traffic).
SMEM_BY_INSTRUCTION = [
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
]
CORE = SMEM + [
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "launch__grid_size",
]
MEMORY = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "lts__t_sector_hit_rate.pct",
]
COMPUTE = [
    "sm__inst_executed.avg.per_cycle_active",
    "smsp__inst_executed.sum",
    "sm__cycles_elapsed.avg",
    "launch__registers_per_thread",
    "launch__block_size",
]
OPTIONAL = [
    "lts__t_sectors_op_read.sum",          # every source, TMA included
    "lts__t_sectors_op_write.sum",
    "lts__t_sectors_op_read_lookup_hit.sum",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
] + [
    # The two counts the models predict exactly, where the aggregate counters add what the models
    # leave out (docs/models.md, "Against the counters"; H200 measurements, ncu 2025.3.1):
    "l1tex__m_xbar2l1tex_read_sectors.sum",      # sectors L2 returns to the SMs (the blocks' panel reads)
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",  # global-load sectors L1 served instead
    "lrc__lts2lrc_sectors_op_read.sum",          # the L2 request coalescer: sectors the L2 slices served it
    "lrc__xbar2gpc_sectors_op_read.sum",         # ... and the sectors it sent on to the SMs
] + SMEM_BY_INSTRUCTION + [
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
]
STALLS = "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio"
STALL_PREFIX = "smsp__average_warps_issue_stalled_"


def metrics(optional: bool = True) -> list[str]:
    return CORE + MEMORY + COMPUTE + (OPTIONAL if optional else []) + [STALLS]


def find_ncu() -> str | None:
    """ncu: $GEMMLAB_NCU, PATH, the CUDA toolkit, then /opt/nvidia/nsight-compute/*/ncu (newest).
    None when there is none (or $GEMMLAB_NCU is not an executable)."""
    env = os.environ.get("GEMMLAB_NCU")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    cands = (["/usr/local/cuda/bin/ncu"] + sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)
             + sorted(glob.glob("/usr/local/cuda*/bin/ncu"), reverse=True))
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


KERNEL_REGEX = r"regex:^gemmlab_(s\d|skinny)"   # the GEMM kernels; not splitk_reduce, transpose, copy


def command(ncu: str, child: list[str], *, launches: int | None = None, optional: bool = True,
            kernel_regex: str = KERNEL_REGEX) -> list[str]:
    """The ncu command line around ``child``: no clock locking (the GPU runs as in the ladder),
    caches flushed before every pass (ncu's default), the raw page in base units."""
    cmd = [ncu, "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
           "--metrics", ",".join(metrics(optional)), "-k", kernel_regex]
    if launches:
        cmd += ["--launch-count", str(launches)]
    return cmd + list(child)


# ---- parsing ----------------------------------------------------------------------------------
_SCALE = {
    "": 1.0, "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
    "KB": 1e3, "MB": 1e6, "GB": 1e9,
    "nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9,   # durations to nanoseconds
    "cycle": 1.0, "Kcycle": 1e3, "Mcycle": 1e6,
    "inst": 1.0, "Kinst": 1e3, "Minst": 1e6, "Ginst": 1e9,
    "sector": 1.0, "Ksector": 1e3, "Msector": 1e6, "Gsector": 1e9,
    "warp": 1.0, "Kwarp": 1e3, "Mwarp": 1e6,
    "hz": 1.0, "Khz": 1e3, "Mhz": 1e6, "Ghz": 1e9,
    "cycle/second": 1.0, "cycle/nsecond": 1e9, "cycle/usecond": 1e6, "cycle/msecond": 1e3,
}
_INFO_COLUMNS = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Function Name", "Context",
                 "Stream", "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit",
                 "Metric Value", "Demangled Name", "Estimated Speedup", "Estimated Speedup Type"}


def number(text, unit: str = "") -> float | None:
    """'1,024' -> 1024.0; 'n/a', '' -> None; scaled by ``unit`` to base units (bytes,
    nanoseconds, cycles, Hz)."""
    if text is None:
        return None
    t = str(text).strip().replace(",", "").replace(" ", "")
    if not t or t.lower() in ("n/a", "nan", "-"):
        return None
    try:
        v = float(t)
    except ValueError:
        return None
    u = (unit or "").strip()
    if u in ("%", "ratio") or u.endswith("/cycle") or u.startswith("inst/"):
        return v
    return v * _SCALE.get(u, 1.0)


def _tables(text: str) -> list[list[str]]:
    """The CSV tables in ``text``: each starts at a line beginning with '"ID"' and holds the
    lines that start with a quote (ncu's own ==PROF== lines and the program's output are
    skipped). Several sessions' output, one after the other, give several tables."""
    tables: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith('"ID"'):
            tables.append([line])
        elif tables and line.startswith('"'):
            tables[-1].append(line)
    return tables


def parse_csv(text: str) -> list[dict]:
    """ncu ``--csv`` output (raw page or details page) -> one dict per profiled launch, in launch
    order: {"id", "kernel", "block_size", "grid_size", "metrics": {name: float}}. Stall-reason
    metrics stay in "metrics" under their full names."""
    out = []
    for table in _tables(text):
        rows = list(csv.reader(io.StringIO("\n".join(table))))
        header = rows[0]
        out += _parse_details(header, rows[1:]) if "Metric Name" in header else _parse_raw(header, rows[1:])
    return out


def _kernel_of(rec: dict) -> str:
    return (rec.get("Kernel Name") or rec.get("Function Name") or rec.get("Demangled Name") or "").strip()


def _parse_raw(header: list[str], rows: list[list[str]]) -> list[dict]:
    units = None
    if rows and not (rows[0] and rows[0][0].strip().isdigit()):
        units, rows = rows[0], rows[1:]   # the units row: its ID column is empty
    out = []
    for r in rows:
        if not r or not r[0].strip():
            continue
        rec = dict(zip(header, r))
        launch = {"id": int(number(rec.get("ID")) or 0), "kernel": _kernel_of(rec),
                  "block_size": rec.get("Block Size"), "grid_size": rec.get("Grid Size"), "metrics": {}}
        for i, name in enumerate(header):
            if name in _INFO_COLUMNS or i >= len(r):
                continue
            v = number(r[i], units[i] if units and i < len(units) else "")
            if v is not None:
                launch["metrics"][name] = v
        out.append(launch)
    return out


def _parse_details(header: list[str], rows: list[list[str]]) -> list[dict]:
    by_id: dict = {}
    for r in rows:
        rec = dict(zip(header, r))
        name = (rec.get("Metric Name") or "").strip()
        if not name:
            continue
        key = rec.get("ID")
        launch = by_id.setdefault(key, {"id": int(number(key) or 0), "kernel": _kernel_of(rec),
                                        "block_size": rec.get("Block Size"), "grid_size": rec.get("Grid Size"),
                                        "metrics": {}})
        v = number(rec.get("Metric Value"), rec.get("Metric Unit", ""))
        if v is not None:
            launch["metrics"][name] = v
    return sorted(by_id.values(), key=lambda x: x["id"])


def stalls(m: dict) -> dict:
    """{reason: warp-cycles per issued instruction}, largest first, from the stall-ratio metrics."""
    out = {}
    for k, v in m.items():
        if k.startswith(STALL_PREFIX) and "_per_issue_active" in k:
            reason = k[len(STALL_PREFIX):].split("_per_issue_active")[0]
            out[reason] = v
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


# ---- trouble --------------------------------------------------------------------------------
COUNTERS_NOT_PERMITTED = ("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM): run as root "
                          "or allow profiling for all users (NVreg_RestrictProfilingToAdminUsers=0)")
_TROUBLE = [
    ("ERR_NVGPUCTRPERM", COUNTERS_NOT_PERMITTED),
    ("LibraryNotLoaded", "ncu could not load its profiling library: this runtime exposes no hardware counters"),
    ("No kernels were profiled", "ncu profiled no kernel (the kernel-name filter matched nothing?)"),
]
_METRIC_ERROR = re.compile(r"(?i)(failed to find metric|invalid metric|unknown metric|metric .* not found|"
                           r"not a valid metric|could not be found)")


def trouble(text: str) -> str | None:
    """A one-line reason when ncu's output says it could not profile."""
    for marker, msg in _TROUBLE:
        if marker in text:
            return msg
    errs = [line.strip() for line in text.splitlines() if line.startswith("==ERROR==")]
    return "; ".join(errs[:3]) if errs else None


def counters_denied(text: str) -> bool:
    return "ERR_NVGPUCTRPERM" in text


def metric_rejected(text: str) -> bool:
    """ncu refused a metric name (retry without the optional group)."""
    return any(_METRIC_ERROR.search(line) for line in text.splitlines() if line.startswith("==ERROR=="))
