"""Disassembling a cubin: cuobjdump / nvdisasm (the nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm
wheels, or the CUDA toolkit on PATH).

Part of the runtime (``GEMMLAB_DUMP_SASS=1`` prints the SASS of every kernel compiled); the SASS
inspector (gemmlab/analysis/sass.py) parses what :func:`disassemble` and ``_run_on_cubin`` print.

What cuobjdump prints for a cubin is kept, in the process and on disk beside the cubins
(``<cache>/sass/``, jit/cache.py's entries, zlib-compressed: ~0.6 MB of text a kernel), keyed
by the cubin's bytes, the arguments and the tools' identity (path, size and modification time of
cuobjdump and nvdisasm): a run of cuobjdump costs ~0.5 s, and the compile tests and `gemmlab sass` read the same kernels again and again
(each xdist worker its own process: the disk is what they share).
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import zlib
from collections import OrderedDict
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


@functools.lru_cache(maxsize=None)
def _tool_env() -> dict:
    """cuobjdump --dump-sass runs nvdisasm: point it at the one we found (the pip wheel's)."""
    env = dict(os.environ)
    try:
        env.setdefault("NVDISASM_PATH", os.path.dirname(tool("nvdisasm")))
    except ToolMissing:
        pass
    return env


@functools.lru_cache(maxsize=None)
def _tools_identity() -> str:
    """Path, size and modification time of cuobjdump and of the nvdisasm it runs."""
    out = []
    for name in ("cuobjdump", "nvdisasm"):
        try:
            path = tool(name)
            st = os.stat(path)
            out.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
        except (ToolMissing, OSError):
            out.append(f"{name}:-")
    return " ".join(out)


def _output_key(args: tuple, cubin: bytes) -> str:
    h = hashlib.sha256()
    for part in (_tools_identity(), "\0".join(args)):
        h.update(part.encode() + b"\n")
    h.update(cubin)
    return h.hexdigest()


_outputs: OrderedDict = OrderedDict()  # this process's last _OUTPUTS_KEPT, by _output_key
_OUTPUTS_KEPT = 64


def _output_cache():
    from .cache import KernelCache, default_cache_dir

    return KernelCache(default_cache_dir() / "sass", suffix=".txt")


def _run_on_cubin(args: tuple, cubin: bytes) -> str:
    """What ``cuobjdump ARGS cubin`` prints (kept: see the module's text)."""
    args = tuple(args)
    key = _output_key(args, cubin)
    text = _outputs.get(key)
    if text is None:
        cache = _output_cache()
        text = _kept_text(cache.get(key))
        if text is None:
            text = _run_tool(args, cubin)
            try:
                cache.put(key, zlib.compress(text.encode(), 6), {"cuobjdump": list(args), "zlib": 1})
            except OSError:
                pass  # a read-only cache: the output is still this process's
        _outputs[key] = text
        if len(_outputs) > _OUTPUTS_KEPT:
            _outputs.popitem(last=False)
    else:
        _outputs.move_to_end(key)
    return text


def _kept_text(hit) -> str | None:
    """An entry's text, or None where there is none or it is not this format's (an entry of the
    uncompressed format of 5a765cb under the same key: rerun, and written over)."""
    if hit is None or not hit[1].get("zlib"):
        return None
    try:
        return zlib.decompress(hit[0]).decode()
    except (zlib.error, UnicodeDecodeError):
        return None


def _run_tool(args: tuple, cubin: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        r = subprocess.run([tool("cuobjdump"), *args, f.name], capture_output=True, text=True, env=_tool_env())
    if r.returncode != 0:
        raise RuntimeError(f"cuobjdump {' '.join(args)} failed: {r.stderr.strip()}")
    return r.stdout


def disassemble(cubin: bytes) -> str:
    return _run_on_cubin(("--dump-sass",), cubin)
