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

SUITES = {
    "issue9": ISSUE9,
    "squares": SQUARES,
    "all": ISSUE9 + SQUARES,
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
