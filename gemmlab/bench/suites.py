"""Shape suites and the shape syntax shared by ``gemmlab tune`` and ``gemmlab sweep``.

A SPEC is a comma-separated list of tokens; each token is a shape ``MxNxK`` or ``MxNxKxBATCH``
(positive integers) or a suite name. Parsing keeps the first occurrence of each shape and the
order given; a bad token raises :class:`ShapeError` naming it.

``gemmlab sweep`` also takes a layout per entry (:func:`parse_entries`): a token may end in
``:LAYOUT`` (``4096x4096x4096:nt``, ``64x64x64x128:tt``; a suite name too, ``transformer:tn``:
every entry of the suite in that layout), and a suite may give each entry its own layout
(:data:`LAYOUT_SUITES`, e.g. ``wide``). An entry is then ``(M, N, K, batch, layout)``, the
layout None where neither gives one (the sweep's ``--layout`` decides). :func:`parse`, which
``gemmlab tune`` uses, keeps returning ``(M, N, K, batch)``: a suite's per-entry layouts are
dropped (tune takes its layouts from ``--layouts``) and a ``:LAYOUT`` token is an error.
"""
from __future__ import annotations

import re

LAYOUTS = ("nn", "nt", "tn", "tt")  # A then B: n row-major, t column-major

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

# Issue 16: the sweep over everything stage="auto" meets, in one run: (M, N, K, batch, layout),
# every layout on at least 15 entries. None of these is a HELDOUT shape, and none falls in a
# HELDOUT tuning bucket (heuristics/table.bucket), so tuning on this suite can never put a
# held-out shape into a table (tests/test_sweep_wide.py checks both). The odd squares are 700,
# 1000, 3500 and 7000 (3000 shares the bucket of HELDOUT's 2900x2901x2903).
WIDE_ENTRIES = (
    # squares, 256 .. 8192 and odd ones
    (256, 256, 256, 1, "nn"), (512, 512, 512, 1, "nt"), (700, 700, 700, 1, "tt"), (1000, 1000, 1000, 1, "tn"),
    (1024, 1024, 1024, 1, "nn"), (2048, 2048, 2048, 1, "tt"), (3500, 3500, 3500, 1, "nt"),
    (4096, 4096, 4096, 1, "nn"), (4096, 4096, 4096, 1, "tt"), (7000, 7000, 7000, 1, "tn"),
    (8192, 8192, 8192, 1, "nt"),
    # transformer projections: forward x W^T (nt), dX = g W (nn), dW = g^T x (tn); K 512 .. 4096
    # (and the LLaMA-like 11008), M 2048 .. 16384, N 512 .. 12288
    (2048, 1536, 512, 1, "nt"), (12288, 512, 512, 1, "nn"), (8192, 2048, 512, 1, "tn"),
    (2048, 768, 768, 1, "nn"), (8192, 2304, 768, 1, "nt"), (16384, 3072, 768, 1, "nt"),
    (4096, 4096, 1024, 1, "nt"), (16384, 1024, 1024, 1, "tn"), (2048, 3072, 2048, 1, "nn"),
    (8192, 768, 3072, 1, "nt"), (4096, 12288, 4096, 1, "tt"), (8192, 12288, 4096, 1, "nt"),
    (4096, 11008, 4096, 1, "nt"), (4096, 4096, 11008, 1, "nn"), (3072, 768, 8192, 1, "tn"),
    (1024, 4096, 16384, 1, "tn"),
    # decode-sized M (or N): 17 .. 128 against 4096 .. 11008
    (17, 4096, 4096, 1, "nn"), (32, 11008, 4096, 1, "nt"), (48, 4096, 4096, 1, "tn"), (64, 4096, 11008, 1, "nt"),
    (96, 4096, 4096, 1, "tt"), (128, 11008, 4096, 1, "nn"), (4096, 17, 4096, 1, "tn"), (8192, 64, 4096, 1, "nt"),
    (4096, 128, 11008, 1, "tt"), (11008, 32, 4096, 1, "nn"),
    # tall and wide
    (8192, 256, 4096, 1, "nn"), (256, 8192, 4096, 1, "nt"), (8192, 256, 1024, 1, "tn"), (256, 8192, 1024, 1, "tt"),
    (32768, 256, 512, 1, "nn"),
    # deep K: 16384 .. 65536 with small M and N
    (64, 64, 65536, 1, "tn"), (128, 128, 32768, 1, "tt"), (256, 256, 16384, 1, "nn"), (512, 256, 65536, 1, "nt"),
    (256, 512, 32768, 1, "tt"), (1024, 1024, 16384, 1, "tn"),
    # unaligned odd sizes
    (1001, 999, 1003, 1, "nn"), (2047, 2049, 511, 1, "nt"), (4095, 1023, 2049, 1, "tn"), (513, 1025, 257, 1, "tt"),
    (3001, 1999, 777, 1, "nn"), (127, 129, 4097, 1, "tn"), (6001, 4001, 1001, 1, "tt"),
    # mid-size: 1e9 .. 1e10 FLOP
    (1024, 2048, 1536, 1, "tn"), (768, 768, 2048, 1, "nt"), (2048, 1024, 512, 1, "tt"), (1200, 1200, 1200, 1, "nn"),
    (640, 1280, 2560, 1, "tn"), (896, 896, 4096, 1, "tt"),
    # strided batched: batch 8 .. 128 of 64 .. 1024 matrices; attention-like QK^T (128x128x64, nt)
    # and PV (128x64x128, nn) with 96 = batch x heads
    (64, 64, 64, 128, "nn"), (64, 64, 64, 128, "tt"), (128, 128, 128, 64, "nt"), (256, 256, 256, 32, "tn"),
    (512, 512, 512, 16, "tt"), (1024, 1024, 1024, 8, "nn"), (128, 128, 64, 96, "nt"), (128, 64, 128, 96, "nn"),
    (256, 256, 64, 64, "tt"), (512, 64, 512, 32, "tn"), (1024, 64, 1024, 16, "nt"), (333, 555, 777, 8, "tt"),
)


# Our own held-back shapes (issue 16: auto on shapes it was never tuned on, beside HELDOUT): no
# table holds one and nothing is tuned in their buckets (GRID avoids them; tests/test_sweep_wide.py).
# Small and unaligned problems, a batched unaligned one, decode-sized N, and (added 2026-12-03,
# before any run of them) aligned mid sizes and batches that neither suite above has.
OWN_ENTRIES = (
    (257, 4001, 999, 1, "nt"), (255, 255, 255, 32, "nt"), (601, 901, 301, 1, "nn"), (1999, 333, 1501, 1, "tt"),
    (601, 1203, 4099, 1, "nn"), (129, 257, 1025, 16, "tn"), (601, 900, 301, 1, "tn"), (512, 333, 777, 1, "tt"),
    (2048, 33, 4096, 1, "tn"), (3001, 1003, 999, 1, "tn"),
    (1792, 1792, 1792, 1, "nt"), (3072, 1024, 4096, 1, "nn"), (6144, 2048, 1024, 1, "nt"),
    (384, 384, 384, 48, "nn"), (96, 4096, 2048, 1, "nt"), (2304, 2304, 576, 1, "tn"),
    (160, 160, 160, 100, "nt"), (5120, 640, 1280, 1, "tt"),
)

# The tuning grid for the classes the shipped table was thin in (2026-12-03: 5 of 147 entries
# unaligned, 12 batched): unaligned odd sizes 191 .. 3071 on a log grid, and strided batches of
# 8 .. 128 (unaligned, then aligned), each shape in two layouts so that every layout has 13.
# None falls in a HELDOUT or OWN bucket (tests/test_sweep_wide.py); `gemmlab tune --entries grid`.
_GRID = (
    ((191, 1535, 767, 1), "nn tt"), ((383, 383, 3071, 1), "nt tn"), ((767, 191, 1535, 1), "nn nt"),
    ((1535, 767, 383, 1), "tn tt"), ((3071, 1535, 767, 1), "nn nt"), ((767, 3071, 191, 1), "tn tt"),
    ((383, 767, 767, 1), "nn nt"), ((1535, 1535, 2559, 1), "tn tt"), ((3071, 383, 1535, 1), "nn tt"),
    ((191, 767, 3071, 1), "nt tn"), ((767, 767, 383, 1), "nn tt"), ((1535, 3071, 3071, 1), "nt tn"),
    ((383, 1535, 191, 1), "nn nt"), ((3071, 3071, 383, 1), "tn tt"),
    # strided batched: unaligned, then aligned
    ((127, 127, 127, 32), "nn tt"), ((191, 383, 95, 64), "nt tn"), ((383, 191, 767, 8), "nn nt"),
    ((511, 255, 255, 16), "tn tt"), ((95, 95, 1023, 32), "nn nt"), ((767, 767, 383, 8), "tn tt"),
    ((128, 256, 128, 32), "nn nt"), ((384, 384, 384, 16), "tn tt"), ((192, 192, 64, 128), "nn nt"),
    ((768, 512, 256, 8), "tn tt"), ((64, 256, 256, 64), "nn tt"), ((256, 128, 512, 64), "nt tn"),
)
GRID_ENTRIES = tuple(shape + (lay,) for shape, lays in _GRID for lay in lays.split())


def _shapes(entries) -> tuple:
    """The (M, N, K, batch) of ``entries``, first occurrence first, without duplicates."""
    out: list = []
    for e in entries:
        if tuple(e[:4]) not in out:
            out.append(tuple(e[:4]))
    return tuple(out)


WIDE = _shapes(WIDE_ENTRIES)
OWN = _shapes(OWN_ENTRIES)
GRID = _shapes(GRID_ENTRIES)

SUITES = {
    "issue9": ISSUE9,
    "squares": SQUARES,
    "all": ISSUE9 + SQUARES,
    "transformer": TRANSFORMER,
    "heldout": HELDOUT,
    "wide": WIDE,
    "own": OWN,
    "grid": GRID,
}

# Suites whose entries carry their own layout (gemmlab sweep runs each in it; gemmlab tune gets
# the SUITES shapes above).
LAYOUT_SUITES = {
    "wide": WIDE_ENTRIES,
    "own": OWN_ENTRIES,
    "grid": GRID_ENTRIES,
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


def parse_layout(text: str, token: str | None = None) -> str:
    """'nt' (any case) -> 'nt'; anything else raises ShapeError naming ``token`` (or the text)."""
    lay = str(text).strip().lower()
    if lay not in LAYOUTS:
        what = f"{token!r}: layout {text.strip()!r}" if token is not None else f"layout {text!r}"
        raise ShapeError(f"{what} is not one of {', '.join(LAYOUTS)} (A then B: n row-major, t column-major)")
    return lay


def _tokens(spec):
    if spec is None or not str(spec).strip():
        raise ShapeError("empty shape list; give MxNxK shapes or a suite "
                         f"({', '.join(SUITES)})")
    for raw in str(spec).split(","):
        token = raw.strip()
        if not token:
            raise ShapeError(f"empty item in {spec!r} (two commas in a row?)")
        yield token


def parse_entry(token: str) -> list[tuple]:
    """The entries (M, N, K, batch, layout or None) of one token: a shape, ``shape:LAYOUT``, a
    suite (its own layouts, if it has them), or ``suite:LAYOUT`` (every entry in LAYOUT)."""
    token = token.strip()
    name, colon, lay = token.partition(":")
    name = name.strip()
    layout = parse_layout(lay, token) if colon else None
    if name.lower() in SUITES:
        if layout is not None:
            return [s + (layout,) for s in SUITES[name.lower()]]
        if name.lower() in LAYOUT_SUITES:
            return [tuple(e) for e in LAYOUT_SUITES[name.lower()]]
        return [s + (None,) for s in SUITES[name.lower()]]
    if name[:1].isalpha():
        raise ShapeError(f"unknown suite {name!r}; suites are {', '.join(SUITES)}")
    if colon and not _SHAPE.match(name):  # name the whole token, layout included
        raise ShapeError(f"{token!r} is not a shape (MxNxK or MxNxKxBATCH, then :LAYOUT) or a suite "
                         f"({', '.join(SUITES)})")
    return [parse_shape(name) + (layout,)]


def parse_entries(spec: str) -> list[tuple]:
    """Every (M, N, K, batch, layout) a sweep SPEC names, first occurrence first, no duplicates;
    layout is None where neither the token nor its suite gives one."""
    out: list[tuple] = []
    for token in _tokens(spec):
        for e in parse_entry(token):
            if e not in out:
                out.append(e)
    return out


def parse(spec: str) -> list[tuple]:
    """Every (M, N, K, batch) a SPEC names, first occurrence first, no duplicates (suites with
    per-entry layouts give their shapes; a ``:LAYOUT`` token is an error: ``gemmlab tune``
    takes its layouts from ``--layouts``)."""
    out: list[tuple] = []
    for token in _tokens(spec):
        if ":" in token:
            parse_entry(token)  # a malformed token gets its own message first
            raise ShapeError(f"{token!r}: a :LAYOUT suffix is for gemmlab sweep; here give the shape alone "
                             "(gemmlab tune takes its layouts from --layouts)")
        for e in parse_entry(token):
            if e[:4] not in out:
                out.append(e[:4])
    return out


def resolve(entries, default: str = "nn", layouts=None) -> list[tuple]:
    """(M, N, K, batch, layout) for every entry, no duplicates, in order: ``layouts`` given, each
    entry's shape in each of them (its own layout, if any, replaced); else an entry without a
    layout gets ``default``. Entries may be (M, N, K), (M, N, K, batch) or 5-tuples."""
    out: list[tuple] = []
    for e in entries:
        e = tuple(e)
        shape = e[:3] + ((e[3] if len(e) > 3 else 1),)
        own = e[4] if len(e) > 4 else None
        for lay in (layouts or (own or default,)):
            item = shape + (parse_layout(lay),)
            if item not in out:
                out.append(item)
    return out


def text(shape: tuple) -> str:
    """(M, N, K, batch) -> 'MxNxK' (batch 1) or 'MxNxKxB'; a fifth item, the layout, adds ':LAYOUT'."""
    m, n, k = shape[:3]
    b = shape[3] if len(shape) > 3 else 1
    lay = shape[4] if len(shape) > 4 else None
    return f"{m}x{n}x{k}" + (f"x{b}" if b != 1 else "") + (f":{lay}" if lay else "")
