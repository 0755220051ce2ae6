"""Shape -> (stage, config). Picks the fastest stage that exists and can run the shape.

The tuned dispatcher (tuning cache, split-K, swizzle) replaces this when the tuning issue lands.
"""
from __future__ import annotations

from .stages import all_stages

# Fastest first (measured on the H200; see results/h200/).
PREFERENCE = ("tuned", "s11", "s10", "s09", "s08d", "s08c", "s08b", "s08a", "s07", "s06", "s05",
              "s04", "s03", "s02", "s01")


def choose(M: int, N: int, K: int, batch: int = 1, config=None):
    have = {s.id: s for s in all_stages()}
    try:
        from . import device

        cc = device.cc_number(device.arch(0)) if device.has_gpu() else 90
    except Exception:
        cc = 90
    for sid in PREFERENCE:
        spec = have.get(sid)
        if spec is not None and spec.min_cc <= cc:
            return spec, spec.config(config)
    raise RuntimeError("no stage is registered")
