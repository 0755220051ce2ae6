"""Shared-memory bank model (notes 000 §8.1–8.5).

Shared memory has 32 banks of 4 bytes: byte ``a`` lives in bank ``(a // 4) % 32``. One warp-level
shared-memory instruction is served in *wavefronts* (the notes call them transactions); each
wavefront reads or writes at most one 4-byte word per bank. Given the byte address of every lane
and the access width, :func:`analyse` counts the wavefronts.

Two rule sets ("models"):

``notes`` — the rules exactly as 000 §8.1–8.2 state them:

- 32-bit accesses: the whole warp is one phase.
- 64-bit accesses: two half-warp phases (lanes 0–15, 16–31).
- 128-bit accesses: four quarter-warp phases (lanes 0–7, 8–15, 16–23, 24–31).
- In each phase the count is the largest number of *distinct* words asked of one bank (lanes
  asking for the same word share it: broadcast), at least 1 if any lane is active.
- 128-bit loads: if lane i and lane i^1 ask for the same address for every i (condition A), or lane
  i and lane i^2 do (condition B) — an inactive lane satisfies either — two quarter-warps are served
  by one transaction: the four quarter-warp requests become two, (QW0, QW1) and (QW2, QW3), each
  costing what the larger of its pair costs.

``hardware`` — a provisional reading of the same mechanism as NVIDIA describes it (a wavefront
returns 128 bytes, one register per lane; "uniform" pairs let two lanes share a returned register,
forum answer by Greg Smith, 2018): when condition A or B holds for a load, the phases *regroup*
into half-warps (128-bit) or one whole warp (64-bit), and bank conflicts are counted over the
lanes of the regrouped phase. It differs from ``notes`` only where two merged quarter-warps
conflict with each other (e.g. the Z-order B read). ``python -m gemmlab.analysis.bank_probe``
measures every pattern with ncu on the GPU and says which model the hardware follows.

Stores never merge (the packing is about returned registers) and need no broadcast: several lanes
writing one word cost one word.
"""
from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass

BANKS = 32
WORD = 4
WARP = 32
MODELS = ("notes", "hardware")
DEFAULT_MODEL = os.environ.get("GEMMLAB_BANK_MODEL", "hardware")  # the H200 probe: results/h200/bank_probe.json


@dataclass(frozen=True)
class Analysis:
    """The wavefront count of one warp instruction and how it came about."""

    wavefronts: int
    ideal: int                   # the same instruction with every bank conflict removed
    phases: tuple                # per phase: (lanes, wavefronts)
    merged: str | None           # "xor1" / "xor2" when the uniform-pair rule applied, else None
    worst_bank: tuple | None     # (phase index, bank, [(lane, word)...]) of the worst conflict

    def as_dict(self) -> dict:
        return {"wavefronts": self.wavefronts, "ideal": self.ideal, "merged": self.merged,
                "phases": [{"lanes": [p[0][0], p[0][-1]], "wavefronts": p[1]} for p in self.phases]}


def bank(address: int) -> int:
    return (address // WORD) % BANKS


def _check(width: int, addresses) -> list:
    if width not in (1, 2, 4, 8, 16):
        raise ValueError(f"access width {width} bytes: shared-memory accesses are 1, 2, 4, 8 or 16 bytes")
    addrs = list(addresses)
    if len(addrs) != WARP:
        raise ValueError(f"need the addresses of all {WARP} lanes (None for an inactive lane), got {len(addrs)}")
    for lane, a in enumerate(addrs):
        if a is None:
            continue
        if a < 0 or int(a) != a:
            raise ValueError(f"lane {lane}: address {a!r} is not a non-negative byte address")
        if a % width:
            raise ValueError(f"lane {lane}: address {a} is not aligned to the {width}-byte access")
    return [None if a is None else int(a) for a in addrs]


def pair_rule(addresses, x: int) -> bool:
    """True when lane i and lane i^x ask for the same address for every i (inactive lanes pass).
    ``x`` = 1 is the notes' condition A, ``x`` = 2 condition B."""
    for i, a in enumerate(addresses):
        b = addresses[i ^ x]
        if a is not None and b is not None and a != b:
            return False
    return True


def _phase_cost(addresses, lanes, width) -> tuple[int, tuple | None]:
    """Largest number of distinct words one bank must deliver for ``lanes`` (0 if all inactive)."""
    words = defaultdict(dict)  # bank -> {word: first lane}
    for lane in lanes:
        a = addresses[lane]
        if a is None:
            continue
        first = a // WORD
        for w in range(first, first + max(1, width // WORD)):
            words[w % BANKS].setdefault(w, lane)
    if not words:
        return 0, None
    b, ws = max(words.items(), key=lambda kv: (len(kv[1]), -kv[0]))
    worst = (b, sorted((lane, w) for w, lane in ws.items())) if len(ws) > 1 else None
    return len(ws), worst


def _split(width: int) -> int:
    """Lanes per phase before any merging: 32 (<= 4 bytes), 16 (8 bytes), 8 (16 bytes)."""
    return WARP if width <= WORD else WARP * WORD // width


def analyse(width: int, addresses, model: str | None = None, op: str = "load") -> Analysis:
    """Wavefronts of one warp instruction: ``width`` bytes per lane at ``addresses`` (32 byte
    addresses, None for inactive lanes); ``op`` is "load" or "store"."""
    model = model or DEFAULT_MODEL
    if model not in MODELS:
        raise ValueError(f"bank model {model!r}: use one of {MODELS}")
    if op not in ("load", "store"):
        raise ValueError(f"op {op!r}: use 'load' or 'store'")
    addrs = _check(width, addresses)
    per_phase = _split(width)
    merged = None
    if op == "load" and width >= 8 and (width == 16 or model == "hardware"):
        if pair_rule(addrs, 1):
            merged = "xor1"
        elif pair_rule(addrs, 2):
            merged = "xor2"
    if merged and model == "hardware":
        per_phase *= 2  # the uniform pairs share returned registers: twice the lanes per phase
    groups = [list(range(s, s + per_phase)) for s in range(0, WARP, per_phase)]
    costs = [_phase_cost(addrs, g, width) for g in groups]
    phases = tuple((tuple(g), c) for g, (c, _) in zip(groups, costs))
    worst = None
    for i, (c, w) in enumerate(costs):
        if w is not None and (worst is None or len(w[1]) > len(worst[2])):
            worst = (i, w[0], w[1])
    if merged and model == "notes":
        # Two quarter-warps go out as one transaction: pairs (QW0, QW1) and (QW2, QW3).
        pairs = [(costs[0][0], costs[1][0]), (costs[2][0], costs[3][0])]
        total = sum(max(p) for p in pairs)
        ideal = sum(1 for p in pairs if max(p) > 0)
    else:
        total = sum(c for c, _ in costs)
        ideal = sum(1 for c, _ in costs if c > 0)
    return Analysis(total, ideal, phases, merged, worst)


def wavefronts(width: int, addresses, model: str | None = None, op: str = "load") -> int:
    return analyse(width, addresses, model, op).wavefronts


def why(a: Analysis, width: int, addresses=None, op: str = "load") -> str:
    """One phrase on what the count comes from."""
    parts = []
    if a.merged:
        parts.append(f"lanes i and i^{1 if a.merged == 'xor1' else 2} share addresses, so "
                     f"the {'quarter' if width == 16 else 'half'}-warp requests merge")
    if a.worst_bank is not None:
        ph, b, lanes = a.worst_bank
        shown = ", ".join(f"lane {lane} word {w}" for lane, w in lanes[:4])
        parts.append(f"{len(lanes)}-way conflict on bank {b} in phase {ph} ({shown})")
    else:
        shared = ""
        if addresses is not None:
            active = [x for x in addresses if x is not None]
            if len(set(active)) < len(active):
                shared = " (lanes share words: broadcast)" if op == "load" else " (lanes share words)"
        parts.append("conflict-free" + shared)
    return "; ".join(parts)


# ---- a kind of access: the list of instructions a stage reports ----------------------------
KINDS = ("a_load", "b_load", "a_store", "b_store")


def _instruction(item):
    """(width, addresses) from a tuple/list or a dict {"width": .., "addresses": ..}."""
    if isinstance(item, dict):
        return int(item.get("width", item.get("width_bytes"))), item["addresses"]
    width, addresses = item
    return int(width), addresses


def analyse_kind(instructions, model: str | None = None, op: str = "load") -> dict:
    """Mean wavefronts and ideal per instruction over ``instructions`` [(width, addresses)...]."""
    instructions = list(instructions or [])
    if not instructions:
        return {"wavefronts": None, "ideal": None, "instructions": 0, "note": "n/a"}
    results = []
    for item in instructions:
        width, addrs = _instruction(item)
        results.append((width, analyse(width, addrs, model, op), addrs))
    n = len(results)
    total = sum(a.wavefronts for _, a, _ in results)
    ideal = sum(a.ideal for _, a, _ in results)
    widths = sorted({w for w, _, _ in results})
    worst_w, worst, worst_addrs = max(results, key=lambda r: r[1].wavefronts - r[1].ideal)
    return {
        "wavefronts": _mean(total, n),
        "ideal": _mean(ideal, n),
        "instructions": n,
        "total_wavefronts": total,
        "width_bytes": widths[0] if len(widths) == 1 else widths,
        "why": why(worst, worst_w, worst_addrs, op),
    }


def _mean(total: int, n: int):
    return total // n if total % n == 0 else round(total / n, 3)


def stage_smem(spec, cfg: dict, model: str | None = None) -> dict:
    """Bank-model counts for the four kinds of shared-memory instruction of ``spec`` at ``cfg``,
    from its real addressing (``spec.smem_accesses``). {} when the stage reports none."""
    try:
        acc = spec.smem_accesses(cfg) or {}
    except NotImplementedError:
        acc = {}
    if not acc:
        return {}
    out = {}
    for kind in KINDS:
        out[kind] = analyse_kind(acc.get(kind), model, "store" if kind.endswith("store") else "load")
    return out


# ---- the notes' own access patterns (000 §8.4–8.5) ----------------------------------------
# The notes' configuration: BM = BN = 128, BK = 8, TM = TN = 8, 256 threads, warps 4 x 2, lanes
# 4 x 8. As is stored transposed, As[BK][BM] (k-major), Bs[BK][BN]; Bs follows As. Warp 0 reads,
# per k step, its thread's 8 A values as two LDS.128 and its 8 B values as two LDS.128.
NOTES_CONFIG = {"block_m": 128, "block_n": 128, "block_k": 8, "thread_m": 8, "thread_n": 8,
                "threads": 256, "lanes": (4, 8)}

# The notes' table (§8.4 and §8.5): (tileA, tileB) transactions per LDS.128.
NOTES_TABLE = {
    "rowmajor": (2, 8),   # §8.4, 4x8 row-major lanes: 2 + 8 = 10
    "padding": (2, 4),    # §8.5 scheme 1
    "swizzle": (2, 4),    # scheme 2
    "zorder": (2, 2),     # scheme 3
    "split4x4": (2, 4),   # scheme 4
}

# Which ladder stage implements which pattern (DESIGN.md "The ladder").
STAGE_PATTERN = {"s07": "rowmajor", "s08a": "padding", "s08b": "swizzle", "s08c": "zorder",
                 "s08d": "split4x4"}


def _lane_rowmajor(lane):
    return lane >> 3, lane & 7            # 4 rows x 8 columns, row-major (000 §6.3)


def _lane_zorder(lane):
    return lane % 2 + (lane // 16) * 2, (lane % 16) // 2   # 000 §8.5 scheme 3


def reference_pattern(name: str, k: int = 0, literal: bool = False) -> dict:
    """{"a_load": [(16, addrs), (16, addrs)], "b_load": [...]}: warp 0's LDS.128 instructions at
    step ``k`` for one of the notes' layouts (see NOTES_TABLE).

    The notes describe padding and swizzling only for As (``As[BK][BM+4]``, ``As[k][row ^ (k*4)]``)
    yet give tileB 4 transactions for both. A B read is a single row of Bs, so padding rows of
    either tile cannot change it: with ``literal=True`` the schemes are applied to As only and the
    B read stays the row-major one (8). By default the same fix is also applied to Bs, one 4-float
    shift per 32-float bank layer (pad ``n + 4*(n//32)``, swizzle ``n ^ (4*(n//32 % 8))``), which
    is the reading under which the notes' 4 holds.
    """
    bm, bn, tm, tn = 128, 128, 8, 8
    if name not in NOTES_TABLE:
        raise ValueError(f"unknown pattern {name!r}; the notes' patterns are {list(NOTES_TABLE)}")
    lane_of = _lane_zorder if name == "zorder" else _lane_rowmajor
    a_pitch = bm + 4 if name == "padding" else bm
    a_base, b_base = 0, 4 * 8 * a_pitch

    def a_col(m):
        return m ^ (k * 4) if name == "swizzle" else m

    def b_col(n):
        if literal:
            return n
        if name == "padding":
            return n + 4 * (n // 32)
        if name == "swizzle":
            return n ^ (4 * ((n // 32) % 8))
        return n

    b_pitch = bn + 16 if (name == "padding" and not literal) else bn
    if name == "split4x4":
        # each 8x8 thread tile as four 4x4 sub-tiles: rows lane_row*4 + {0, 16}, cols lane_col*4 + {0, 32}
        a_offsets = [lambda r: r * 4, lambda r: r * 4 + 16]
        b_offsets = [lambda c: c * 4, lambda c: c * 4 + 32]
    else:
        a_offsets = [lambda r: r * tm, lambda r: r * tm + 4]
        b_offsets = [lambda c: c * tn, lambda c: c * tn + 4]
    a_load, b_load = [], []
    for f in a_offsets:
        a_load.append((16, [a_base + 4 * (k * a_pitch + a_col(f(lane_of(lane)[0]))) for lane in range(WARP)]))
    for f in b_offsets:
        b_load.append((16, [b_base + 4 * (k * b_pitch + b_col(f(lane_of(lane)[1]))) for lane in range(WARP)]))
    return {"a_load": a_load, "b_load": b_load}


def reference_table(model: str = "notes", literal: bool = False) -> dict:
    """{pattern: {"a": n, "b": n, "total": n}} per LDS.128 for the notes' five layouts."""
    out = {}
    for name in NOTES_TABLE:
        p = reference_pattern(name, literal=literal)
        a = analyse_kind(p["a_load"], model)["wavefronts"]
        b = analyse_kind(p["b_load"], model)["wavefronts"]
        out[name] = {"a": a, "b": b, "total": a + b}
    return out
