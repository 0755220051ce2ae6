"""Shape suites and the shape syntax shared by ``gemmlab tune`` and ``gemmlab sweep``.

A SPEC is a comma-separated list of tokens; each token is a shape ``MxNxK`` or ``MxNxKxBATCH``
(positive integers) or a suite name. Parsing keeps the first occurrence of each shape and the
order given; a bad token raises :class:`ShapeError` naming it.
"""
from __future__ import annotations

import re

# Issue 9: the shapes the tuned dispatch must be good at (squares of every size class, odd sizes,
# deep K, tall/wide, and one GEMV-like row).
ISSUE9 = (
    (4096, 4096, 4096, 1),
    (8192, 8192, 8192, 1),
    (1024, 1024, 1024, 1),
    (2048, 2048, 2048, 1),
    (4095, 4097, 1023, 1),
    (64, 64, 65536, 1),
    (8192, 128, 8192, 1),
    (128, 8192, 8192, 1),
    (1024, 1024, 16384, 1),
    (3000, 5000, 7000, 1),
    (1, 4096, 4096, 1),
)

SQUARES = tuple((n, n, n, 1) for n in (128, 256, 512, 1024, 2048, 4096, 8192, 16384))

# The GEMMs of the training benchmark's model (gemmlab/bench/training.py: d_model 512, 8 heads,
# feed-forward 2048, 32 x 128 = 4096 tokens) as (M, N, K): forward x W^T (layout nt) and dX = g W
# (nn) have M = 4096; dW = g^T x (tn) has M = out features, K = 4096.
TRANSFORMER = (
    (4096, 1536, 512, 1), (4096, 512, 512, 1), (4096, 2048, 512, 1), (4096, 512, 2048, 1),   # forward, dX
    (4096, 512, 1536, 1),
    (1536, 512, 4096, 1), (512, 512, 4096, 1), (2048, 512, 4096, 1), (512, 2048, 4096, 1),   # dW
)

# Shapes that no shipped table holds and that nothing is tuned on: the held-out check of issue 16
# (stage="auto" on shapes it was never tuned on). BERT-base-like projections (K 768 / 3072),
# decode-sized M, odd unaligned mid sizes, tall and wide, deep K, squares between the suite's.
HELDOUT = (
    (4096, 768, 768, 1), (4096, 3072, 768, 1), (4096, 768, 3072, 1), (4096, 2304, 768, 1),
    (32, 4096, 4096, 1), (64, 11008, 4096, 1), (48, 4096, 11008, 1), (96, 1024, 8192, 1),
    (1400, 1400, 1400, 1), (1500, 2500, 3500, 1), (2900, 2901, 2903, 1), (3333, 1111, 2222, 1),
    (6144, 6144, 6144, 1), (5000, 5000, 5000, 1), (16384, 256, 1024, 1), (256, 16384, 1024, 1),
    (512, 512, 32768, 1), (777, 555, 333, 1), (12288, 3072, 1024, 1), (2560, 2560, 640, 1),
)

SUITES = {
    "issue9": ISSUE9,
    "squares": SQUARES,
    "all": ISSUE9 + SQUARES,
    "transformer": TRANSFORMER,
    "heldout": HELDOUT,
}

_SHAPE = re.compile(r"^(\d+)[xX](\d+)[xX](\d+)(?:[xX](\d+))?$")


class ShapeError(ValueError):
    """A token of a shape SPEC that is neither a shape nor a suite; the message names it."""


def parse_shape(token: str) -> tuple:
    """'4096x4096x4096' -> (4096, 4096, 4096, 1); 'MxNxKxB' -> (M, N, K, B)."""
    t = token.strip()
    m = _SHAPE.match(t)
    if not m:
        raise ShapeError(f"{token!r} is not a shape (MxNxK or MxNxKxBATCH) or a suite "
                         f"({', '.join(SUITES)})")
    dims = tuple(int(g) if g is not None else 1 for g in m.groups())
    if min(dims) <= 0:
        raise ShapeError(f"{token!r}: every dimension must be positive")
    return dims


def parse(spec: str) -> list[tuple]:
    """Every (M, N, K, batch) a SPEC names, first occurrence first, no duplicates."""
    if spec is None or not str(spec).strip():
        raise ShapeError("empty shape list; give MxNxK shapes or a suite "
                         f"({', '.join(SUITES)})")
    out: list[tuple] = []
    for raw in str(spec).split(","):
        token = raw.strip()
        if not token:
            raise ShapeError(f"empty item in {spec!r} (two commas in a row?)")
        shapes = SUITES.get(token.lower())
        if shapes is None:
            if token[:1].isalpha():
                raise ShapeError(f"unknown suite {token!r}; suites are {', '.join(SUITES)}")
            shapes = (parse_shape(token),)
        for s in shapes:
            if s not in out:
                out.append(s)
    return out


def text(shape: tuple) -> str:
    """(M, N, K, batch) -> 'MxNxK' (batch 1) or 'MxNxKxB'."""
    m, n, k = shape[:3]
    b = shape[3] if len(shape) > 3 else 1
    return f"{m}x{n}x{k}" + (f"x{b}" if b != 1 else "")
