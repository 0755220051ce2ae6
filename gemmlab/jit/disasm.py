"""Disassembling a cubin: cuobjdump / nvdisasm (the nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm
wheels, or the CUDA toolkit on PATH).

Part of the runtime (``GEMMLAB_DUMP_SASS=1`` prints the SASS of every kernel compiled); the SASS
inspector (gemmlab/analysis/sass.py) parses what :func:`disassemble` and ``_run_on_cubin`` print.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


class ToolMissing(RuntimeError):
    pass


@functools.lru_cache(maxsize=None)
def tool(name: str) -> str:
    """Path of cuobjdump or nvdisasm: $GEMMLAB_<NAME>, the pip wheel, then PATH."""
    env = os.environ.get(f"GEMMLAB_{name.upper()}")
    if env:
        return env
    try:
        import nvidia

        for base in nvidia.__path__:
            for sub in ("cu13/bin", "cuda_cuobjdump/bin", "cuda_nvdisasm/bin", "cu12/bin"):
                p = Path(base) / sub / name
                if p.is_file() and os.access(p, os.X_OK):
                    return str(p)
    except ImportError:
        pass
    found = shutil.which(name)
    if found:
        return found
    for p in (f"/usr/local/cuda/bin/{name}",):
        if os.access(p, os.X_OK):
            return p
    raise ToolMissing(f"{name} not found: pip install nvidia-cuda-{name} (or put the CUDA toolkit on PATH)")


@functools.lru_cache(maxsize=64)
@functools.lru_cache(maxsize=None)
def _tool_env() -> dict:
    """cuobjdump --dump-sass runs nvdisasm: point it at the one we found (the pip wheel's)."""
    env = dict(os.environ)
    try:
        env.setdefault("NVDISASM_PATH", os.path.dirname(tool("nvdisasm")))
    except ToolMissing:
        pass
    return env


def _run_on_cubin(args: tuple, cubin: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        r = subprocess.run([tool("cuobjdump"), *args, f.name], capture_output=True, text=True, env=_tool_env())
    if r.returncode != 0:
        raise RuntimeError(f"cuobjdump {' '.join(args)} failed: {r.stderr.strip()}")
    return r.stdout


def disassemble(cubin: bytes) -> str:
    return _run_on_cubin(("--dump-sass",), cubin)
