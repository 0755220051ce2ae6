"""Compile generated CUDA C++ to a cubin for an explicit arch, with a disk and memory cache.

The default backend is NVRTC through cuda.core (works with no GPU: the arch is given). Set
``GEMMLAB_COMPILER=nvcc`` to use ``nvcc -cubin`` instead (same options; needs a CUDA toolkit).
"""
from __future__ import annotations

import functools
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CompileError
from .cache import KernelCache

KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels"
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
STD = "c++17"


@dataclass
class CompiledKernel:
    """A cubin and what it was built from. ``name`` is the extern "C" kernel symbol."""

    name: str
    cubin: bytes
    arch: str
    key: str
    source: str
    cached: bool = False  # True when it came from the disk or memory cache
    compile_seconds: float = 0.0
    meta: dict = field(default_factory=dict)


def _backend() -> str:
    b = os.environ.get("GEMMLAB_COMPILER", "nvrtc").lower()
    if b not in ("nvrtc", "nvcc"):
        raise CompileError(f"GEMMLAB_COMPILER={b!r}: use 'nvrtc' (default) or 'nvcc'")
    return b


def preload() -> None:
    """Import the compiler backend in this thread. Threads that first import cuda.core at once
    race in the import machinery ("cannot import name 'Program' from 'cuda.core.cu13'"): a pool
    that compiles calls this before it starts (tune/runner.py compile_all)."""
    if _backend() == "nvrtc":
        from cuda.core import Program, ProgramOptions  # noqa: F401


@functools.lru_cache(maxsize=None)
def _nvrtc_version() -> str:
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    return f"nvrtc-{major}.{minor}"


@functools.lru_cache(maxsize=None)
def _nvcc_version() -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise CompileError("GEMMLAB_COMPILER=nvcc but no nvcc on PATH; unset it to use NVRTC")
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    return "nvcc-" + out.strip().splitlines()[-1]


def compiler_version() -> str:
    return _nvrtc_version() if _backend() == "nvrtc" else _nvcc_version()


@functools.lru_cache(maxsize=1024)
def _includes_of(text: str) -> tuple:
    """The #include "..." names of one file's text (cached by content: this runs on every call)."""
    return tuple(_INCLUDE_RE.findall(text))


_header_text: dict[str, bytes] = {}  # path -> contents: the headers this process has read


def dev_mode() -> bool:
    """GEMMLAB_DEV set: headers are re-read on every compile-key computation and the API checks
    the kernel folder's mtimes on every call; else each header is read once per process."""
    return bool(os.environ.get("GEMMLAB_DEV"))


def _read_header(path: Path) -> bytes:
    key = str(path)
    hit = _header_text.get(key)
    if hit is not None and not dev_mode():
        return hit
    data = path.read_bytes()  # FileNotFoundError for a missing header
    _header_text[key] = data
    return data


def kernel_dir_stamp(include_dirs=(KERNEL_DIR,)) -> tuple:
    """(name, mtime) of every header: what GEMMLAB_DEV compares between calls."""
    out = []
    for d in include_dirs:
        for root, _dirs, files in os.walk(d):  # kernels/ and its role folders (ptx/, copy/, mma/, ...)
            for f in files:
                if f.endswith((".cuh", ".h")):
                    path = os.path.join(root, f)
                    try:
                        out.append((os.path.relpath(path, d), os.stat(path).st_mtime_ns))
                    except FileNotFoundError:
                        pass
    return tuple(sorted(out))


def included_headers(source: str, include_dirs=(KERNEL_DIR,)) -> dict[str, bytes]:
    """Every header the source includes with #include "...", recursively: {name: contents}.
    Each file is read once per process (GEMMLAB_DEV: re-read when its mtime changes)."""
    found: dict[str, bytes] = {}
    todo = list(_includes_of(source))
    while todo:
        name = todo.pop()
        if name in found:
            continue
        for d in include_dirs:
            try:
                data = _read_header(Path(d) / name)
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                continue
            found[name] = data
            todo.extend(_includes_of(data.decode("utf-8", "replace")))
            break
        else:
            raise CompileError(f'#include "{name}": not found in {[str(d) for d in include_dirs]}')
    return found


def options_for(arch: str, include_dirs=(KERNEL_DIR,)) -> list[str]:
    return [f"--std={STD}", f"-arch={arch}", "-lineinfo"] + [f"-I{d}" for d in include_dirs]


def cache_key(source: str, arch: str, options: list[str], include_dirs=(KERNEL_DIR,)) -> str:
    from .. import __version__

    h = hashlib.sha256()
    for part in (source, arch, " ".join(o for o in options if not o.startswith("-I")),
                 compiler_version(), __version__):
        h.update(part.encode())
        h.update(b"\0")
    for name, data in sorted(included_headers(source, include_dirs).items()):
        h.update(name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


_memory: dict[str, CompiledKernel] = {}
_lock = threading.Lock()
_cache = KernelCache()


def memory_hit(source: str, arch: str, include_dirs=(KERNEL_DIR,)) -> CompiledKernel | None:
    """The kernel for ``source`` if this process has already compiled or loaded it, else None."""
    include_dirs = tuple(str(d) for d in include_dirs)
    key = cache_key(source, arch, options_for(arch, include_dirs), include_dirs)
    with _lock:
        return _memory.get(key)


def compile_cubin(source: str, name: str, arch: str, cache: KernelCache | None = None,
                  include_dirs=(KERNEL_DIR,)) -> CompiledKernel:
    """Compile ``source`` (which defines extern "C" kernel ``name``) to a cubin for ``arch``."""
    if not re.fullmatch(r"sm_\d+a?", arch):
        raise CompileError(f"arch {arch!r}: expected the form sm_90 or sm_90a")
    cache = cache or _cache
    include_dirs = tuple(str(d) for d in include_dirs)
    options = options_for(arch, include_dirs)
    key = cache_key(source, arch, options, include_dirs)
    with _lock:
        hit = _memory.get(key) if cache is _cache else None
    if hit is not None:
        return CompiledKernel(hit.name, hit.cubin, arch, key, source, cached=True, meta=hit.meta)
    entry = cache.get(key)
    if entry is not None:
        cubin, meta = entry
        ck = CompiledKernel(name, cubin, arch, key, source, cached=True, meta=meta)
    else:
        t0 = time.perf_counter()
        compile_fn = _nvrtc if _backend() == "nvrtc" else _nvcc
        cubin = compile_fn(source, name, arch, include_dirs)
        dt = time.perf_counter() - t0
        meta = {"name": name, "arch": arch, "compiler": compiler_version()}
        try:
            cache.put(key, cubin, meta)
        except OSError as e:  # a read-only cache must not stop the computation
            print(f"gemmlab: could not write the kernel cache at {cache.root}: {e}", file=sys.stderr)
        ck = CompiledKernel(name, cubin, arch, key, source, cached=False, compile_seconds=dt, meta=meta)
    if os.environ.get("GEMMLAB_DUMP_SASS"):
        from .disasm import disassemble

        print(f"// gemmlab: SASS of {name} ({arch})\n{disassemble(ck.cubin)}", file=sys.stderr)
    with _lock:
        _memory[key] = ck
    return ck


def _nvrtc(source: str, name: str, arch: str, include_dirs) -> bytes:
    from cuda.core import Program, ProgramOptions

    opts = ProgramOptions(name=f"{name}.cu", arch=arch, std=STD, lineinfo=True, include_path=list(include_dirs))
    log = io.StringIO()
    try:
        prog = Program(source, "c++", opts)
        obj = prog.compile("cubin", logs=log)
    except Exception as e:  # cuda.core raises NVRTCError with the log in its message
        msg = str(e)
        log = msg.split("compilation log:", 1)[-1].strip() if "compilation log:" in msg else msg
        raise CompileError(f"NVRTC could not compile {name} for {arch}", log=log, source=source) from None
    check_ptxas_log(log.getvalue(), name, arch, source)
    return bytes(obj.code)


# ptxas warnings that mean a slow kernel rather than a wrong one, and so fail the build: wgmma
# serialized (C7510: a wgmma pipeline crosses a function boundary or its registers are touched
# in between; C7517/C7519: ptxas inserted warpgroup arrive/wait around wgmma), and setmaxnreg
# ignored (C7508). A kernel that trips them is a code mistake to fix, not a variant to run.
FATAL_PTXAS_WARNINGS = ("C7510", "C7517", "C7519", "C7508")


def check_ptxas_log(log: str, name: str, arch: str, source: str = "") -> None:
    bad = [line.strip() for line in log.splitlines() if any(code in line for code in FATAL_PTXAS_WARNINGS)]
    if bad:
        raise CompileError(f"{name} for {arch}: ptxas serialized the tensor-core pipeline or ignored setmaxnreg "
                           f"({', '.join(sorted({c for c in FATAL_PTXAS_WARNINGS if any(c in b for b in bad)}))}); "
                           "keep every wgmma of a pipeline in one function and fence its accumulators",
                           log="\n".join(bad), source=source)


def _nvcc(source: str, name: str, arch: str, include_dirs) -> bytes:
    _nvcc_version()
    with tempfile.TemporaryDirectory(prefix="gemmlab-nvcc-") as d:
        src = Path(d) / f"{name}.cu"
        out = Path(d) / f"{name}.cubin"
        src.write_text(source)
        cmd = [shutil.which("nvcc"), "-cubin", f"-arch={arch}", f"-std={STD}", "-lineinfo",
               *[f"-I{d}" for d in include_dirs], "-o", str(out), str(src)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise CompileError(f"nvcc could not compile {name} for {arch}", log=r.stderr, source=source)
        return out.read_bytes()
