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

from ..heuristics.table import (SCHEMA, TABLES, bucket, bucket_dim, clear_cache, entry_shape, identity,  # noqa: F401
                                read, slug, user_path, valid_entry)


def entry_key(e: dict) -> tuple:
    """What makes two entries the same measurement: bucket (which holds the batch class), shape
    (the bucket's centre where an old entry has none), layout and alignment class."""
    return (tuple(e["bucket"]), tuple(entry_shape(e)), e["layout"], bool(e.get("aligned", True)))


def write(path: Path, ident: dict, entries: list[dict], merge: bool = True) -> Path:
    """Write (merging with what is there for the same identity: new entries replace old ones of
    the same shape, batch, layout and alignment; other shapes of a bucket are kept beside them, and
    lookup takes the nearest) atomically: temporary file, then rename."""
    path = Path(path)
    old = read(path, ident) if merge and path.exists() else None
    keep = {}
    for e in (old["entries"] if old else []) + list(entries):
        keep[entry_key(e)] = e
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
