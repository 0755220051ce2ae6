"""The tuned tables as the runtime reads them: load, validate, look up a shape.

A table is one JSON file per (GPU name, arch, compiler) that ``gemmlab tune`` measured (written
by gemmlab/tune/db.py): ``{"schema": "gemmlab-tune/1", "gpu", "arch", "compiler", "gemmlab",
"created", "entries": [...]}``; each entry ``{"bucket": [m, n, k, batch], "layout": "nn",
"aligned": true, "shape": [M, N, K, batch], "stage", "config", "split_k", "repack", "time_ms",
"cublas_ms", "candidates"}``. Buckets are half-octaves of each dimension (round(2·log2 x)) and
octaves of the batch, so 4096 and 4095 share one, 4096 and 6144 do not.

Where they are read from, in this order: ``$GEMMLAB_TUNING_DB`` (a file), the user's database
that ``gemmlab tune`` writes (``<cache dir>/tuning/<gpu>-<arch>-<compiler>.json``), the tables
shipped in the package (``gemmlab/tune/tables/*.json``). A file that does not parse, has another
schema, or was made for another GPU, arch or compiler is ignored with one warning; a malformed
entry is skipped with a warning. Never used wrongly: the heuristics check an entry's config
against its stage's constraints before anything runs it.

Two lookups:

- :func:`lookup`: the entry of the shape's bucket (same layout and alignment class; of several
  tuned shapes in the bucket, the nearest), first
  source first;
- :func:`nearest`: where no bucket matches, the tuned entries nearest in log-shape space,
  ``sqrt(sum((log2 x - log2 x')^2))`` over M, N and K, among those of the same layout, batch
  bucket and alignment class, at most :data:`NEAREST_RADIUS` octaves away, nearest first.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
import threading
from pathlib import Path

SCHEMA = "gemmlab-tune/1"
TABLES = Path(__file__).resolve().parent.parent / "tune" / "tables"  # shipped, written by gemmlab tune --ship
NEAREST_RADIUS = 1.0  # octaves in log-shape space: farther neighbours say little about this shape
NEAREST_K = 3         # neighbours that vote for a tile (heuristics/choice.py)
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


def warn(msg: str) -> None:
    """One line on stderr, once per process and message."""
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
        warn(f"tuning database {path} is unreadable ({e.__class__.__name__}: {e}); ignoring it")
        return None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("entries"), list):
        warn(f"tuning database {path} is not a {SCHEMA} file; ignoring it")
        return None
    if ident is not None:
        theirs = {k: doc.get(k) for k in ident}
        if theirs != ident:
            warn(f"tuning database {path} was made for {theirs}, not this {ident}; ignoring it")
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


def valid_entry(e) -> bool:
    try:
        return (isinstance(e, dict) and len(e["bucket"]) == 4 and isinstance(e["stage"], str)
                and isinstance(e.get("config", {}), dict) and int(e.get("split_k", 1)) >= 1
                and e["layout"] in ("nn", "nt", "tn", "tt"))
    except (KeyError, TypeError, ValueError):
        return False


def clear_cache() -> None:
    """Forget the files read (the writer calls this after replacing one)."""
    with _lock:
        _loaded.clear()


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
                bad = [e for e in doc["entries"] if not valid_entry(e)]
                if bad:
                    warn(f"tuning database {p}: {len(bad)} malformed entr{'y' if len(bad) == 1 else 'ies'} skipped")
                doc = dict(doc, entries=[e for e in doc["entries"] if valid_entry(e)])
            with _lock:
                _loaded[key] = doc
            hit = doc
        if hit is not None:
            out.append((p, hit))
    return out


def lookup(ident: dict, M: int, N: int, K: int, batch: int, layout: str, aligned: bool):
    """The entry for this shape's bucket and layout (an aligned entry serves aligned problems
    only), or None. A bucket may hold several tuned shapes (half an octave per dimension holds
    both 1024^3 and 1200^3, whose best tiles differ: H200, 64x256 split 2 and 128x256 split 2):
    then the one nearest to (M, N, K) in log-shape space; the first source that has the bucket
    decides (a user's database before the shipped table)."""
    b = list(bucket(M, N, K, batch))
    for path, doc in tables(ident):
        found = [e for e in doc["entries"]
                 if list(e["bucket"]) == b and e["layout"] == layout and bool(e.get("aligned", True)) == bool(aligned)]
        if found:
            best = min(found, key=lambda e: distance((M, N, K), entry_shape(e)))  # min keeps the first of ties
            return dict(best, _source=str(path))
    return None


def entry_shape(e: dict) -> tuple:
    """(M, N, K) an entry was measured at: its ``shape``, else its bucket's centre."""
    shape = e.get("shape")
    try:
        m, n, k = (int(x) for x in shape[:3])
        if min(m, n, k) > 0:
            return m, n, k
    except (TypeError, ValueError, IndexError):
        pass
    return tuple(2.0 ** (int(b) / 2) for b in e["bucket"][:3])


def distance(shape_a: tuple, shape_b: tuple) -> float:
    """Octaves between two (M, N, K) in log-shape space (Euclidean over log2 M, log2 N, log2 K)."""
    return math.sqrt(sum((math.log2(x) - math.log2(y)) ** 2 for x, y in zip(shape_a, shape_b)))


def nearest(ident: dict, M: int, N: int, K: int, batch: int, layout: str, aligned: bool, *,
            radius: float = NEAREST_RADIUS, k: int = NEAREST_K) -> list[tuple[float, dict]]:
    """Up to ``k`` (distance, entry) nearest to (M, N, K) in log-shape space, nearest first, among
    the entries of every source with this layout, batch bucket and alignment class, at most
    ``radius`` octaves away. Ties keep the source order (a user's database before the shipped
    table). An entry's ``_source`` names its file; [] for a zero-size shape."""
    if min(M, N, K) <= 0:
        return []
    want_batch = bucket(1, 1, 1, batch)[3]
    found = []
    order = 0
    for path, doc in tables(ident):
        for e in doc["entries"]:
            order += 1
            if e["layout"] != layout or bool(e.get("aligned", True)) != bool(aligned) or \
                    int(e["bucket"][3]) != want_batch:
                continue
            try:
                d = distance((M, N, K), entry_shape(e))
            except (TypeError, ValueError):
                continue
            if d <= radius:
                found.append((d, order, dict(e, _source=str(path))))
    found.sort(key=lambda t: (t[0], t[1]))
    return [(d, e) for d, _, e in found[:k]]


__all__ = ["NEAREST_K", "NEAREST_RADIUS", "SCHEMA", "TABLES", "bucket", "bucket_dim", "clear_cache", "distance",
           "entry_shape", "identity", "lookup", "nearest", "read", "slug", "sources", "tables", "user_path",
           "valid_entry", "warn"]
