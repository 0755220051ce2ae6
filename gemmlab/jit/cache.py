"""On-disk cubin cache.

Key: sha256 over the generated source, the contents of every header it includes (recursively),
the compile options, the arch, the compiler's version and gemmlab's version (computed by the caller,
see :func:`gemmlab.jit.compiler.cache_key`).

An entry is one file ``<key[:2]>/<key>.cubin``: a header line ``GEMMLAB1 <sha256 of payload>
<length>\\n``, a JSON metadata line, then the cubin bytes. It is written to a temporary file in the
same directory and renamed into place, so readers never see half an entry and two processes
compiling the same kernel both succeed (the last rename wins; both contents are identical).
A truncated or corrupt entry fails its checksum, is deleted and rebuilt.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

MAGIC = b"GEMMLAB1"


def default_cache_dir() -> Path:
    env = os.environ.get("GEMMLAB_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gemmlab"


class KernelCache:
    """``suffix``: the entries' file suffix (jit/disasm.py keeps cuobjdump's text as ``.txt``)."""

    def __init__(self, root: Path | str | None = None, suffix: str = ".cubin"):
        self._root = Path(root) if root is not None else None
        self.suffix = suffix

    @property
    def root(self) -> Path:
        return self._root if self._root is not None else default_cache_dir()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{self.suffix}"

    def get(self, key: str):
        """Return (cubin bytes, metadata dict) or None when missing; deletes a corrupt entry."""
        p = self.path(key)
        try:
            blob = p.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError:
            return None
        parsed = _parse(blob)
        if parsed is None:
            try:
                p.unlink()
            except OSError:
                pass
            return None
        return parsed

    def put(self, key: str, cubin: bytes, meta: dict) -> Path:
        p = self.path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        meta_line = json.dumps(meta, sort_keys=True).encode() + b"\n"
        payload = meta_line + cubin
        header = MAGIC + b" " + hashlib.sha256(payload).hexdigest().encode() + b" " + str(len(payload)).encode() + b"\n"
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-", suffix=self.suffix)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(header + payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return p


def _parse(blob: bytes):
    nl = blob.find(b"\n")
    if nl < 0:
        return None
    parts = blob[:nl].split(b" ")
    if len(parts) != 3 or parts[0] != MAGIC:
        return None
    payload = blob[nl + 1:]
    try:
        length = int(parts[2])
    except ValueError:
        return None
    if len(payload) != length or hashlib.sha256(payload).hexdigest().encode() != parts[1]:
        return None
    nl2 = payload.find(b"\n")
    if nl2 < 0:
        return None
    try:
        meta = json.loads(payload[:nl2])
    except ValueError:
        return None
    return payload[nl2 + 1:], meta
