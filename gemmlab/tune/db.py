"""Writing the tuning database: the measured best (stage, config, split-K) per shape bucket.

The format, where tables are read from and how a shape finds its entry are the runtime's
(gemmlab/heuristics/table.py: ``SCHEMA``, ``bucket``, ``identity``, ``read``, ``user_path``,
re-exported here for the tuner); this module only writes: :func:`write` merges new entries into
a file atomically. ``gemmlab tune`` writes the user's database (``<cache dir>/tuning/``) or, with
``--ship``, the package's table (``gemmlab/tune/tables/``).
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from ..heuristics.table import (SCHEMA, TABLES, bucket, bucket_dim, clear_cache, identity, read,  # noqa: F401
                                slug, user_path, valid_entry)


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
    clear_cache()
    return path
