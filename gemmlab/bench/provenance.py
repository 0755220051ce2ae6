"""Where a measurement came from: git state, source hash, versions, GPU, driver, clocks, date.

SM clocks come from NVML (the ``pynvml`` module of nvidia-ml-py) when it imports, else from
``nvidia-smi``, else they are recorded as null. Every probe is best-effort: a missing tool gives
null, never an exception. Nothing here imports torch, CuPy or Triton unless they are already
imported by the caller.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata as md
import os
import platform
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = Path(__file__).resolve().parents[1]

# Distribution names whose versions go into the provenance (missing ones are left out).
PACKAGES = ("numpy", "cuda-core", "cuda-bindings", "nvidia-cuda-nvrtc", "torch", "cupy-cuda13x",
            "cupy-cuda12x", "cupy", "triton", "nvidia-ml-py", "matplotlib")

# Environment variables that change what is measured.
ENV_VARS = ("CUDA_VISIBLE_DEVICES", "CUPY_TF32", "NVIDIA_TF32_OVERRIDE", "GEMMLAB_COMPILER",
            "GEMMLAB_CACHE_DIR", "CUDA_LAUNCH_BLOCKING", "TRITON_CACHE_DIR")


# ---- PCI bus ids and clocks ---------------------------------------------------------------

def normalize_bus_id(bus_id) -> tuple[int, int, int, int] | None:
    """'00000000:3B:00.0', '0000:3b:00.0' or b'...' -> (domain, bus, device, function)."""
    if bus_id is None:
        return None
    if isinstance(bus_id, bytes):
        bus_id = bus_id.decode("ascii", "replace")
    s = str(bus_id).strip().strip("\x00").lower()
    parts = s.split(":")
    try:
        if len(parts) == 3:
            dom, bus, rest = parts
        elif len(parts) == 2:
            dom, (bus, rest) = "0", parts
        else:
            return None
        dev, _, fn = rest.partition(".")
        return int(dom, 16), int(bus, 16), int(dev, 16), int(fn or "0", 16)
    except ValueError:
        return None


def parse_nvidia_smi(text: str) -> list[dict]:
    """Rows of ``nvidia-smi --query-gpu=pci.bus_id,clocks.sm,clocks.max.sm,name,driver_version
    --format=csv,noheader,nounits``; numbers that nvidia-smi reports as [N/A] become None."""
    rows = []
    for line in text.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) < 5:
            continue
        rows.append({"bus_id": f[0], "sm_mhz": _int_or_none(f[1]), "max_sm_mhz": _int_or_none(f[2]),
                     "name": f[3], "driver": f[4]})
    return rows


def _int_or_none(s: str):
    try:
        return int(float(s.split()[0]))
    except (ValueError, IndexError):
        return None


def cuda_bus_id(device_index: int) -> str | None:
    """PCI bus id of CUDA device ``device_index`` (after CUDA_VISIBLE_DEVICES), from the driver."""
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
        err, dev = driver.cuDeviceGet(device_index)
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        err, bus = driver.cuDeviceGetPCIBusId(64, dev)
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        return bus.decode("ascii", "replace").strip("\x00") if isinstance(bus, bytes) else str(bus)
    except Exception:
        return None


class ClockReader:
    """Reads the current and maximum SM clock (MHz) of one CUDA device.

    ``source`` is "nvml", "nvidia-smi" or None (then every read returns None).
    """

    def __init__(self, device_index: int = 0):
        self.device_index = device_index
        self.source = None
        self.driver = None
        self.name = None
        self._nvml = None
        self._handle = None
        self._smi_bus = None
        want = normalize_bus_id(cuda_bus_id(device_index))
        if self._try_nvml(want):
            self.source = "nvml"
        elif self._try_smi(want):
            self.source = "nvidia-smi"

    def _try_nvml(self, want) -> bool:
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = None
            count = pynvml.nvmlDeviceGetCount()
            for i in range(count):
                h = pynvml.nvmlDeviceGetHandleByIndex(i)
                if want is not None and normalize_bus_id(pynvml.nvmlDeviceGetPciInfo(h).busId) == want:
                    handle = h
                    break
            if handle is None:
                # Without a bus id to match, only an unambiguous choice is taken.
                if count == 1:
                    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
                elif not os.environ.get("CUDA_VISIBLE_DEVICES") and self.device_index < count:
                    handle = pynvml.nvmlDeviceGetHandleByIndex(self.device_index)
                else:
                    return False
            self._nvml, self._handle = pynvml, handle
            self.driver = _text(pynvml.nvmlSystemGetDriverVersion())
            self.name = _text(pynvml.nvmlDeviceGetName(handle))
            pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
            return True
        except Exception:
            self._nvml = self._handle = None
            return False

    def _smi_rows(self):
        exe = shutil.which("nvidia-smi")
        if exe is None:
            return []
        try:
            r = subprocess.run([exe, "--query-gpu=pci.bus_id,clocks.sm,clocks.max.sm,name,driver_version",
                                "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return []
        return parse_nvidia_smi(r.stdout) if r.returncode == 0 else []

    def _pick(self, rows, want):
        for r in rows:
            if want is not None and normalize_bus_id(r["bus_id"]) == want:
                return r
        if len(rows) == 1:
            return rows[0]
        return None

    def _try_smi(self, want) -> bool:
        row = self._pick(self._smi_rows(), want)
        if row is None:
            return False
        self._smi_bus = want if want is not None else normalize_bus_id(row["bus_id"])
        self.driver, self.name = row["driver"], row["name"]
        return True

    def sm_mhz(self) -> int | None:
        """The SM clock now, or None."""
        try:
            if self.source == "nvml":
                return int(self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM))
            if self.source == "nvidia-smi":
                row = self._pick(self._smi_rows(), self._smi_bus)
                return row["sm_mhz"] if row else None
        except Exception:
            return None
        return None

    def max_sm_mhz(self) -> int | None:
        """The highest SM clock the board allows, or None."""
        try:
            if self.source == "nvml":
                return int(self._nvml.nvmlDeviceGetMaxClockInfo(self._handle, self._nvml.NVML_CLOCK_SM))
            if self.source == "nvidia-smi":
                row = self._pick(self._smi_rows(), self._smi_bus)
                return row["max_sm_mhz"] if row else None
        except Exception:
            return None
        return None


def _text(x) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


# ---- code and versions -------------------------------------------------------------------

def _git(*args) -> str | None:
    exe = shutil.which("git")
    if exe is None:
        return None
    try:
        r = subprocess.run([exe, "-C", str(REPO_ROOT), *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def git_state() -> dict:
    """{"commit", "dirty", "changed_files"}: the checkout's HEAD and whether any file differs from
    it (tracked changes and untracked files). GEMMLAB_GIT_COMMIT stands in for the commit where
    the code runs from a copy without .git, and overrides the checkout's HEAD when set (a copy
    whose .git is not the code's: the H200 machine's copy of a working tree); the dirty flag is
    then null."""
    env = os.environ.get("GEMMLAB_GIT_COMMIT")
    if env:
        return {"commit": env, "dirty": None, "changed_files": None}
    head = _git("rev-parse", "HEAD")
    if head is None:
        return {"commit": None, "dirty": None, "changed_files": None}
    status = _git("status", "--porcelain", "--untracked-files=normal") or ""
    changed = [ln[3:] for ln in status.splitlines() if ln.strip()]
    return {"commit": head.strip(), "dirty": bool(changed), "changed_files": changed[:50]}


def source_hash() -> str:
    """sha256 over every .py and .cuh file of the gemmlab package (path and contents): identifies
    the code that ran even where there is no git checkout."""
    h = hashlib.sha256()
    for p in sorted(PACKAGE_DIR.rglob("*")):
        if p.suffix in (".py", ".cuh") and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(PACKAGE_DIR)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def package_versions() -> dict:
    out = {"python": platform.python_version()}
    try:
        from .. import __version__

        out["gemmlab"] = __version__
    except Exception:
        pass
    for pkg in PACKAGES:
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def runtime_versions() -> dict:
    """Versions only a loaded library knows: NVRTC, the CUDA driver API, torch's and CuPy's CUDA
    runtimes (only for libraries already imported)."""
    out = {}
    try:
        from ..jit.compiler import compiler_version

        out["compiler"] = compiler_version()
    except Exception:
        pass
    try:
        from cuda.bindings import driver

        driver.cuInit(0)
        err, v = driver.cuDriverGetVersion()
        if err == driver.CUresult.CUDA_SUCCESS:
            out["cuda_driver_api"] = f"{v // 1000}.{(v % 1000) // 10}"
    except Exception:
        pass
    torch = sys.modules.get("torch")
    if torch is not None:
        out["torch_cuda"] = getattr(torch.version, "cuda", None)
        try:
            out["torch_fp32_matmul_precision"] = torch.get_float32_matmul_precision()
        except Exception:
            pass
        try:
            out["torch_matmul_fp32_precision"] = torch.backends.cuda.matmul.fp32_precision
        except Exception:
            pass
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            v = cupy.cuda.runtime.runtimeGetVersion()
            out["cupy_cuda_runtime"] = f"{v // 1000}.{(v % 1000) // 10}"
        except Exception:
            pass
    return out


def collect(*, device_index: int | None = 0, clocks: ClockReader | None = None, argv=None) -> dict:
    """The provenance block of a ladder.json (see docs/benchmark.md)."""
    prov = {
        "fixture": False,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": shlex.join(["gemmlab"] + list(sys.argv[1:] if argv is None else argv)),
        "host": platform.node(),
        "git": git_state(),
        "source_sha256": source_hash(),
        "versions": {**package_versions(), **runtime_versions()},
        "env": {k: os.environ[k] for k in ENV_VARS if k in os.environ},
        "gpu": None,
        "driver": None,
        "clock_source": None,
        "sm_clock_max_mhz": None,
    }
    if device_index is not None:
        try:
            from .. import device

            prov["gpu"] = device.info(device_index).as_dict()
        except Exception:
            pass
        if clocks is not None:
            prov["driver"] = clocks.driver
            prov["clock_source"] = clocks.source
            prov["sm_clock_max_mhz"] = clocks.max_sm_mhz()
    return prov
