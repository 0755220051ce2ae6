"""Where `auto` gains or loses against cuBLAS in a log of scripts/model_variant_probe.py (CPU only).

Each shape is put in classes (the path its plan takes, A transposed or not, K, FLOP, layout,
batched) and each class gets the geometric mean of auto/cuBLAS per variant. The path is read
from the logged plan and the runtime's rules: ``s11 aligned`` (TMA on the caller's operands),
``s10 unaligned`` (4-byte copies, no repack), ``repacked`` (operands copied first: ``unaligned``
for the FLOP per byte rule, ``B-rule`` where only the K-major B rule asked for it, ``B-rule
aligned`` where B alone is copied). Then, for every variant but the first, the shapes whose choice (stage, tile, split,
repack, A transpose, tail cut) differs from the first's, with both ratios. With --rule, the
verdict of docs/dispatch.md's rule for each variant against the first over several logs (seeds).
    python3 scripts/probe_breakdown.py LOG...     (several logs: their shapes pooled, the variants all have)
    python3 scripts/probe_breakdown.py --rule 1.05,0.90 LOG..."""
from __future__ import annotations

import math
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gemmlab.heuristics import choice  # noqa: E402
from gemmlab.problem import Problem  # noqa: E402

LINE = re.compile(r"(\d+)x(\d+)x(\d+)(?:x(\d+))? (\w\w): cuBLAS ([\d.]+) \| (.*)")
# a variant's cell: name, us, (ratio), [stage tile sSPLIT, then the tail cut (+m1280:128x64s6), rp,
# aT and pg (a persistent grid) where the plan has them, and the source] (model_variant_probe.describe)
CELL = re.compile(r"([\w+.-]+) ([\d.]+|nan) \(([\d.]+|nan)\) \[(s1\d|\w+) (\d+)x(\d+) s(\d+)"
                  r"( \+[mn]\d+:\d+x\d+s\d+)?( rp)?( aT)?( pg)? (\w+)\]")


def parse(text: str) -> list[dict]:
    """One dict per shape: M, N, K, batch, layout, cublas_us and ``runs``: variant -> (us, ratio,
    plan) where plan is (stage, block_m, block_n, split, repack, source, a_transpose, tail,
    persistent), tail the cut's text ("+m1280:128x64s6") or ""."""
    rows = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        runs = {}
        for c in CELL.finditer(m.group(7)):
            plan = (c.group(4), int(c.group(5)), int(c.group(6)), int(c.group(7)), bool(c.group(9)), c.group(12),
                    bool(c.group(10)), (c.group(8) or "").strip(), bool(c.group(11)))
            runs[c.group(1)] = (float(c.group(2)), float(c.group(3)), plan)
        M, N, K = (int(m.group(i)) for i in (1, 2, 3))
        rows.append(dict(M=M, N=N, K=K, batch=int(m.group(4) or 1), layout=m.group(5),
                         cublas_us=float(m.group(6)), runs=runs))
    return rows


def path(row: dict, variant: str) -> str:
    """The path the variant's plan takes (module docstring)."""
    p = Problem.dense(row["M"], row["N"], row["K"], row["layout"], row["batch"],
                      a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40)
    aligned = p.operands_aligned()
    if not row["runs"][variant][2][4]:
        return "s11 aligned" if aligned else "s10 unaligned"
    if aligned:
        return "repacked, B-rule aligned"
    flops = 2.0 * p.M * p.N * p.K * p.batch
    moved = 8.0 * (p.M * p.K + p.K * p.N) * p.batch
    return "repacked, unaligned" if flops / moved >= choice.REPACK_MIN_FLOP_PER_BYTE else "repacked, B-rule"


CLASSES = {  # each a function of the row and the variant (whose plan it reads)
    "path": path,
    "A": lambda r, v: "transposed" if r["runs"][v][2][6] else "as the caller's",
    "K": lambda r, v: "K < 256" if r["K"] < 256 else "K < 1024" if r["K"] < 1024 else "K >= 1024",
    "FLOP": lambda r, v: (lambda f: "< 1e8" if f < 1e8 else "< 1e9" if f < 1e9 else "< 1e10" if f < 1e10 else ">= 1e10")(
        2.0 * r["M"] * r["N"] * r["K"] * r["batch"]),
    "layout": lambda r, v: r["layout"],
    "batched": lambda r, v: "batched" if r["batch"] > 1 else "single",
}


ORDER = ["K < 256", "K < 1024", "K >= 1024", "< 1e8", "< 1e9", "< 1e10", ">= 1e10"]  # within a class


def sort_key(k):
    return (list(CLASSES).index(k[0]) if k[0] in CLASSES else -1, ORDER.index(k[1]) if k[1] in ORDER else 0, k[1])


def gmean(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def pooled(logs: list[list[dict]]) -> list[dict]:
    """The shapes of several logs as one, each with only the variants every log has (seeds run
    with different variants pool their as-is columns)."""
    common = set.intersection(*({v for r in log for v in r["runs"]} for log in logs))
    return [dict(r, runs={v: x for v, x in r["runs"].items() if v in common}) for log in logs for r in log]


def breakdown(rows: list[dict]) -> dict:
    """{variant: {(class, value): [ratios]}} plus ("all", "") for every shape."""
    out: dict = defaultdict(lambda: defaultdict(list))
    for r in rows:
        for v, (_, ratio, _) in r["runs"].items():
            if math.isnan(ratio):
                continue
            out[v][("all", "")].append(ratio)
            for cls, key in CLASSES.items():
                out[v][(cls, key(r, v))].append(ratio)
    return out


def shape_str(r: dict) -> str:
    return f"{r['M']}x{r['N']}x{r['K']}{'x%d' % r['batch'] if r['batch'] > 1 else ''} {r['layout']}"


def what_runs(plan) -> tuple:
    """A logged plan without its source: the stage, tile, split-K, repack, A transpose, tail cut
    and persistent grid."""
    return plan[:5] + plan[6:]


def changed(rows: list[dict], base: str, variant: str) -> list[tuple]:
    """(shape, base ratio, variant ratio, base plan, variant plan) where the plan differs."""
    out = []
    for r in rows:
        if base not in r["runs"] or variant not in r["runs"]:
            continue
        (_, rb, pb), (_, rv, pv) = r["runs"][base], r["runs"][variant]
        if what_runs(pb) != what_runs(pv):
            out.append((shape_str(r), rb, rv, pb, pv))
    return out


def plan_str(p) -> str:
    return (f"{p[0]} {p[1]}x{p[2]} s{p[3]}{' ' + p[7] if p[7] else ''}{' rp' if p[4] else ''}{' aT' if p[6] else ''}"
            f"{' pg' if p[8] else ''}")


def verdict(logs: list[list[dict]], base: str, variant: str, gain: float, floor: float) -> dict:
    """The rule a switch is taken by (docs/dispatch.md): over the shapes of all ``logs`` (each a
    parsed log, one seed) whose plan ``variant`` changes from ``base``, the geometric mean of the
    variant's speed-up (base time / variant time) is at least ``gain``, no plan's below ``floor``,
    and no log's auto/cuBLAS over all its shapes falls. Returns the figures and ``passes``."""
    ups, worst, seeds = [], None, []
    for rows in logs:
        both = [r for r in rows if base in r["runs"] and variant in r["runs"]
                and not math.isnan(r["runs"][base][1]) and not math.isnan(r["runs"][variant][1])]
        seeds.append((gmean([r["runs"][base][1] for r in both]), gmean([r["runs"][variant][1] for r in both])))
        for r in both:
            if what_runs(r["runs"][base][2]) != what_runs(r["runs"][variant][2]):
                up = r["runs"][base][0] / r["runs"][variant][0]  # the logged times: finer than the ratios
                ups.append(up)
                if worst is None or up < worst[1]:
                    worst = (shape_str(r), up)
    up = gmean(ups)
    passes = bool(ups) and up >= gain and worst[1] >= floor and all(round(v, 3) >= round(b, 3) for b, v in seeds)
    return dict(changed=len(ups), speedup=up, worst=worst, seeds=seeds, passes=passes)


def main():
    if sys.argv[1] == "--rule":  # --rule GAIN,FLOOR LOG...: each variant against the first by verdict()
        gain, floor = map(float, sys.argv[2].split(","))
        logs = [parse(Path(f).read_text()) for f in sys.argv[3:]]
        variants = list(logs[0][0]["runs"])
        for v in variants[1:]:
            r = verdict(logs, variants[0], v, gain, floor)
            worst = f"{r['worst'][1]:.3f} ({r['worst'][0]})" if r["worst"] else "-"
            seeds = ", ".join(f"{b:.3f} -> {a:.3f}" for b, a in r["seeds"])
            print(f"{v}: {r['changed']} plans changed, {r['speedup']:.3f}x (rule >= {gain}), worst {worst} "
                  f"(rule >= {floor}); auto/cuBLAS per log {seeds}: {'passes' if r['passes'] else 'fails'}")
        return
    rows = pooled([parse(Path(f).read_text()) for f in sys.argv[1:]])
    table = breakdown(rows)
    variants = list(table)
    print(f"{len(rows)} shapes; auto / cuBLAS geometric mean per class (n shapes)")
    print(f"{'class':34}" + "".join(f"{v:>17}" for v in variants))
    keys = sorted({k for v in variants for k in table[v]}, key=sort_key)
    for k in keys:
        cells = "".join(f"{gmean(table[v][k]):>11.3f} ({len(table[v][k]):3})" if table[v][k] else f"{'':>17}" for v in variants)
        print(f"{(k[0] + ': ' + k[1]) if k[1] else 'all':34}" + cells)
    for v in variants[1:]:
        ch = changed(rows, variants[0], v)
        if not ch:
            continue
        b, a = [c[1] for c in ch], [c[2] for c in ch]
        print(f"\n{v}: {len(ch)} plans differ from {variants[0]}; on them {gmean(b):.3f} -> {gmean(a):.3f}")
        for shape, rb, ra, pb, pa in sorted(ch, key=lambda c: c[2] / c[1]):
            print(f"  {shape:22} {rb:.3f} -> {ra:.3f}  {plan_str(pb)} -> {plan_str(pa)}")


if __name__ == "__main__":
    main()
