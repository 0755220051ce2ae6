"""The tuning database: measured best (stage, config, split-K) per shape bucket.

One JSON file per (GPU name, arch, compiler): ``{"schema": "gemmlab-tune/1", "gpu", "arch",
"compiler", "gemmlab", "created", "entries": [...]}``; each entry ``{"bucket": [m, n, k, batch],
"layout": "nn", "aligned": true, "shape": [M, N, K, batch], "stage", "config", "split_k",
"repack", "time_ms", "cublas_ms", "candidates"}``. Buckets are half-octaves of each dimension
(round(2·log2 x)) and octaves of the batch, so 4096 and 4095 share one, 4096 and 6144 do not.

Where they are read from, first match wins: ``$GEMMLAB_TUNING_DB`` (a file), the user's
database that ``gemmlab tune`` writes (``<cache dir>/tuning/<gpu>-<arch>-<compiler>.json``), the
table shipped in the package (``gemmlab/tune/tables/*.json``). A file that does not parse, has
another schema, or was made for another GPU, arch or compiler is ignored with one warning; an
entry whose stage or config is not legal here is skipped with a warning. Never used wrongly:
dispatch checks the entry's config against the stage's constraints before it runs it.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

SCHEMA = "gemmlab-tune/1"
TABLES = Path(__file__).resolve().parent / "tables"
_warned: set = set()
_lock = threading.Lock()
_loaded: dict = {}


def bucket_dim(x: int) -> int:
    return -1 if x <= 0 else int(round(2 * math.log2(x)))


def bucket(M: int, N: int, K: int, batch: int = 1) -> tuple:
    return (bucket_dim(M), bucket_dim(N), bucket_dim(K), -1 if batch <= 0 else int(round(math.log2(batch))))


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower()


def identity(gpu_name: str, arch: str, compiler: str) -> dict:
    return {"gpu": gpu_name, "arch": arch, "compiler": compiler}


def user_path(ident: dict) -> Path:
    from ..jit import default_cache_dir

    return default_cache_dir() / "tuning" / f"{slug(ident['gpu'])}-{ident['arch']}-{slug(ident['compiler'])}.json"


def _warn(msg: str) -> None:
    with _lock:
        if msg in _warned:
            return
        _warned.add(msg)
    print(f"gemmlab: warning: {msg}", file=sys.stderr)


def read(path: Path, ident: dict | None = None) -> dict | None:
    """The database at ``path`` if it is valid (and made for ``ident``), else None (warned)."""
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        _warn(f"tuning database {path} is unreadable ({e.__class__.__name__}: {e}); ignoring it")
        return None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("entries"), list):
        _warn(f"tuning database {path} is not a {SCHEMA} file; ignoring it")
        return None
    if ident is not None:
        theirs = {k: doc.get(k) for k in ident}
        if theirs != ident:
            _warn(f"tuning database {path} was made for {theirs}, not this {ident}; ignoring it")
            return None
    return doc


def sources(ident: dict) -> list[Path]:
    out = []
    env = os.environ.get("GEMMLAB_TUNING_DB")
    if env:
        out.append(Path(env))
    out.append(user_path(ident))
    if TABLES.is_dir():
        out += sorted(TABLES.glob("*.json"))
    return out


def _valid_entry(e) -> bool:
    try:
        return (isinstance(e, dict) and len(e["bucket"]) == 4 and isinstance(e["stage"], str)
                and isinstance(e.get("config", {}), dict) and int(e.get("split_k", 1)) >= 1
                and e["layout"] in ("nn", "nt", "tn", "tt"))
    except (KeyError, TypeError, ValueError):
        return False


def tables(ident: dict) -> list[tuple[Path, dict]]:
    """Every valid database for ``ident``, in lookup order (cached per process and file mtime)."""
    out = []
    for p in sources(ident):
        try:
            mtime = p.stat().st_mtime_ns
        except OSError:
            continue
        key = (str(p), mtime, tuple(sorted(ident.items())))
        with _lock:
            hit = _loaded.get(key, False)
        if hit is False:
            # Shipped tables may be for other GPUs: those are skipped quietly, not warned about.
            # They match on GPU and arch only: the chosen tiles do not depend on the NVRTC minor
            # version (a user's own database, measured with their compiler, matches exactly).
            quiet = p.parent == TABLES
            doc = read(p, None if quiet else ident)
            if doc is not None and quiet and any(doc.get(k) != ident[k] for k in ("gpu", "arch")):
                doc = None
            if doc is not None:
                bad = [e for e in doc["entries"] if not _valid_entry(e)]
                if bad:
                    _warn(f"tuning database {p}: {len(bad)} malformed entr{'y' if len(bad) == 1 else 'ies'} skipped")
                doc = dict(doc, entries=[e for e in doc["entries"] if _valid_entry(e)])
            with _lock:
                _loaded[key] = doc
            hit = doc
        if hit is not None:
            out.append((p, hit))
    return out


def lookup(ident: dict, M: int, N: int, K: int, batch: int, layout: str, aligned: bool):
    """The entry for this shape's bucket and layout (an aligned entry serves aligned problems
    only), or None."""
    b = list(bucket(M, N, K, batch))
    for path, doc in tables(ident):
        for e in doc["entries"]:
            if list(e["bucket"]) == b and e["layout"] == layout and bool(e.get("aligned", True)) == bool(aligned):
                return dict(e, _source=str(path))
    return None


def write(path: Path, ident: dict, entries: list[dict], merge: bool = True) -> Path:
    """Write (merging with what is there for the same identity: new entries replace old ones of
    the same bucket/layout/alignment) atomically: temporary file, then rename."""
    path = Path(path)
    old = read(path, ident) if merge and path.exists() else None
    keep = {}
    for e in (old["entries"] if old else []) + list(entries):
        keep[(tuple(e["bucket"]), e["layout"], bool(e.get("aligned", True)))] = e
    from .. import __version__

    doc = {"schema": SCHEMA, **ident, "gemmlab": __version__, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "entries": sorted(keep.values(), key=lambda e: (e["layout"], tuple(e["bucket"])))}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1, default=str)
        f.write("\n")
    os.replace(tmp, path)
    with _lock:
        _loaded.clear()
    return path
