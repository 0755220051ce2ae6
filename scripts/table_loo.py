"""stage="auto" on the tuned shapes with their own entries left out (CPU only).

The shipped H200 table keeps every entry's shortlist with measured times (L2 flushed). For each
aligned entry, the entries of its bucket (same layout and alignment class) are removed and
``heuristics.choose`` decides its shape as it would a shape in no table: from the nearest tuned
neighbours (step 3) or the waves model (step 4). Where that choice is one the shortlist timed
(same tile and split-K), its measured time over the shortlist's fastest is the choice's regret on
a shape it was not tuned on. The nearest step is also scored against the waves model alone (the
heuristic's pick with no table) on the entries where both picks were timed.

Choices the shortlist cannot score are counted apart: a tile or split it did not time, and plans
that copy an operand first (``a_transpose`` or ``repack``: the tuner timed the kernel on the
layout it then sees, another entry; such a plan may still read this shape's entry of that
layout, step 2, which is why those are never scored).
    python3 scripts/table_loo.py [--all]"""
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemmlab import heuristics  # noqa: E402
from gemmlab.heuristics import space, table  # noqa: E402
from gemmlab.problem import Problem  # noqa: E402
from model_fit import GPU, TABLE, shortlist_label  # noqa: E402  (the table and GPU the model is fitted to)

ALIGNED = dict(a_ptr=1 << 20, b_ptr=1 << 24, d_ptr=1 << 28)  # 16-byte aligned operands and output


def _pick(c) -> tuple | None:
    """(tile label, split) of a choice the shortlist could have timed, else None."""
    if c.spec.id != "s11" or c.a_transpose or c.repack:
        return None
    return space.candidate_for(c.spec.id, c.config, GPU.cc).label, c.split_k


def cases(doc: dict | None = None) -> list[dict]:
    """One row per aligned entry (M and N over the skinny kernel's 16): its shape, the step that
    decided with its bucket left out (``source``), that pick and the heuristic's with no table,
    and each pick's measured time over the fastest (None where the shortlist did not time it)."""
    doc = doc or json.loads(TABLE.read_text())
    ident = table.identity(doc["gpu"], doc["arch"], doc["compiler"])
    shown = {"entries": []}
    saved = table.tables
    table.tables = lambda _ident: [(TABLE, shown)]
    try:
        rows = []
        for e in doc["entries"]:
            M, N, K, B = e["shape"]
            if not e.get("aligned", True) or min(M, N) <= 16:
                continue
            key = (e["bucket"], e["layout"], e.get("aligned", True))
            shown["entries"] = [x for x in doc["entries"] if (x["bucket"], x["layout"], x.get("aligned", True)) != key]
            p = Problem.dense(M, N, K, e["layout"], B, **ALIGNED)
            left_out = heuristics.choose(p, GPU, ident)
            shown["entries"] = []
            alone = heuristics.choose(p, GPU, ident)
            timed = {(shortlist_label(lab), split): ms for lab, split, ms in e["candidates"]}
            best = min(timed.values())
            row = {"shape": f"{M}x{N}x{K}x{B} {e['layout']}", "source": left_out.source,
                   "tuned": f"{e['config'].get('block_m')}x{e['config'].get('block_n')} x{e['split_k']}"}
            for name, c in (("pick", left_out), ("model", alone)):
                pk = _pick(c)
                row[name] = pk
                row[name + "_regret"] = timed[pk] / best if pk in timed else None
            rows.append(row)
        return rows
    finally:
        table.tables = saved


def geomean(xs) -> float:
    return math.exp(statistics.mean(map(math.log, xs)))


def summary(rows: list[dict]) -> dict:
    scored = [r for r in rows if r["pick_regret"] is not None]
    near = [r for r in scored if r["source"] == "nearest" and r["model_regret"] is not None]
    return {"entries": len(rows), "scored": len(scored),
            "copies": sum(r["pick"] is None for r in rows),
            "untimed": sum(r["pick"] is not None and r["pick_regret"] is None for r in rows),
            "regret": geomean([r["pick_regret"] for r in scored]),
            "worst": max(r["pick_regret"] for r in scored),
            "nearest_scored": len(near),
            "nearest_regret": geomean([r["pick_regret"] for r in near]) if near else None,
            "nearest_model_regret": geomean([r["model_regret"] for r in near]) if near else None}


def main(argv) -> int:
    rows = cases()
    s = summary(rows)
    print(f"{s['entries']} aligned entries, each with its bucket left out: {s['scored']} picks the shortlist timed "
          f"(regret geometric mean {s['regret']:.3f}, worst {s['worst']:.3f}); {s['copies']} plans copy an "
          f"operand first, {s['untimed']} picks were not timed")
    if s["nearest_scored"]:
        print(f"decided by the nearest neighbours, both picks timed: {s['nearest_scored']} entries, regret "
              f"{s['nearest_regret']:.3f} against {s['nearest_model_regret']:.3f} for the waves model alone")
    shown = [r for r in rows if r["pick_regret"] is not None]
    shown.sort(key=lambda r: -r["pick_regret"])
    print("| shape | step | pick | regret | tuned |\n| --- | --- | --- | --- | --- |")
    for r in shown if "--all" in argv else shown[:12]:
        print(f"| {r['shape']} | {r['source']} | {r['pick'][0]} x{r['pick'][1]} | {r['pick_regret']:.3f} | {r['tuned']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
