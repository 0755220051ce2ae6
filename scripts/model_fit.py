"""Fit the waves model's two overhead terms to what gemmlab tune measured (CPU only).

The shipped H200 table keeps every entry's shortlist: each candidate tile and split-K with its
measured time (L2 flushed). For each setting of model.OCCUPANCY_EXPONENT (how fast an SM runs
holding fewer blocks than it could) and model.LAUNCH_S raised by 0-4 us (what a split through
the workspace costs beyond the modelled launch and traffic), this prints the regret of the model's
pick among each shortlist (its measured time over the fastest's): geometric mean, worst, and the
share of entries where it picks the fastest. Entries tuned before split-K in a cluster existed
(2026-12-01T16:13) and unaligned, unrepacked ones (s10) tuned before s10 split in a cluster
(2026-12-04) are predicted with cluster=False; the unaligned ones tuned since are scored apart
("table-s10"). Optionally a probe log of scripts/two_warp_probe.py adds its shapes (``--probe
FILE``), and logs of scripts/cluster_occupancy_probe.py theirs (``--occupancy FILE[,FILE]``: at
each shape's tile, each split as the plan runs it, in a cluster where ``model.in_cluster`` says so).
    python3 scripts/model_fit.py [--probe FILE] [--occupancy FILE[,FILE]]"""
import itertools
import json
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gemmlab.heuristics import model, space, table  # noqa: E402

TABLE = table.TABLES / "nvidia-h200-sm_90-nvrtc-13.0.json"
CLUSTER_SINCE = "2026-12-01T16:13"
S10_CLUSTER_SINCE = "2026-12-04"  # the unaligned entries tuned again once s10 split in a cluster
GPU = model.Gpu(sms=132, clock_hz=1.98e9, cc=90)


def table_cases(s10: bool):
    """[(name, M, N, K, batch, cluster, aligned, [(candidate, split, ms)])] from the shipped table:
    the unaligned entries tuned since S10_CLUSTER_SINCE (``s10``) or the rest."""
    by_label = {c.label: c for c in space.candidates(90)}
    out = []
    for e in json.loads(TABLE.read_text())["entries"]:
        M, N, K, B = e["shape"]
        aligned = e["aligned"] or e["repack"]
        tuned = str(e.get("tuned", ""))
        if (not aligned and tuned >= S10_CLUSTER_SINCE) != s10:
            continue
        cluster = tuned >= CLUSTER_SINCE and (aligned or tuned >= S10_CLUSTER_SINCE)
        short = []
        for label, split, ms in e["candidates"]:
            lab = re.sub(r"( split \d+)?( \(default\))?( \[.*\])?$", "", label).removeprefix("s11 ")
            if lab in by_label:
                short.append((by_label[lab], split, ms))
        if len(short) > 1:
            out.append((f"{M}x{N}x{K}x{B} {e['layout']}", M, N, K, B, cluster, aligned, short))
    return out


def probe_cases(path):
    """The same from a two_warp_probe.py log (its 64x64 and 32-row tiles that the space lists)."""
    labels = {"64x64 w32x32 x3": "64x64 w32x32 x3", "32x64 w16x32 x4": "32x64 w16x32 x4"}
    by_label = {c.label: c for c in space.candidates(90)}
    out, cur = [], None
    for line in Path(path).read_text().splitlines():
        m = re.match(r"== (\d+)x(\d+)x(\d+)(?:x(\d+))? (\w+) \((s1\d)\)", line)
        if m:
            M, N, K = map(int, m.group(1, 2, 3))
            cur = (f"{m.group(1)}x{m.group(2)}x{m.group(3)}x{m.group(4) or 1} {m.group(5)}", M, N, K,
                   int(m.group(4) or 1), m.group(6) == "s11", True, [])
            out.append(cur)
            continue
        m = re.match(r"\s+(.+?)\s+split\s+(\d+)\s+([\d.]+) us", line)
        if m and cur and m.group(1) in labels:
            cur[7].append((by_label[labels[m.group(1)]], int(m.group(2)), float(m.group(3)) / 1e3))
    return [c for c in out if len(c[7]) > 1]


def occupancy_cases(paths):
    """From cluster_occupancy_probe.py logs: at each shape's tile (the space's candidate of that
    block tile with the most blocks per SM), every split timed, taken in a cluster where the
    model's in_cluster says the plan adds it there, else through the workspace."""
    out = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            m = re.match(r"(\d+)x(\d+)x(\d+)(?:x(\d+))? (\w\w) \[\w+ (\d+)x(\d+)", line)
            if not m:
                continue
            M, N, K, bm, bn = (int(m.group(i)) for i in (1, 2, 3, 6, 7))
            B = int(m.group(4) or 1)
            tiles = [c for c in space.SM90 if c.tile() == (bm, bn)]
            if not tiles:
                continue
            cand = max(tiles, key=lambda c: c.blocks_per_sm())
            short = []
            for c in re.finditer(r"s(\d+): ([\d.]+) [\d.]+ \| ([\d.]+) [\d.]+ \(\d+/\d+\)", line):
                s, ws, cl = int(c.group(1)), float(c.group(2)), float(c.group(3))
                short.append((cand, s, (cl if model.in_cluster(cand, M, N, s, True, B, GPU.sms) else ws) / 1e3))
            if len(short) > 1:
                out.append((f"{M}x{N}x{K}x{B} {m.group(5)}", M, N, K, B, True, True, short))
    return out


def score(cases):
    regrets, hits = [], 0
    for _, M, N, K, B, cluster, aligned, short in cases:
        preds = [model.predict(c, M, N, K, B, s, GPU, cluster=cluster, aligned=aligned).seconds for c, s, _ in short]
        pick = short[preds.index(min(preds))][2]
        best = min(ms for _, _, ms in short)
        regrets.append(pick / best)
        hits += pick == best
    g = math.exp(sum(map(math.log, regrets)) / len(regrets))
    return g, max(regrets), hits / len(regrets)


def main():
    cases = {"table": table_cases(False), "table-s10": table_cases(True)}
    if "--probe" in sys.argv:
        cases["probe"] = probe_cases(sys.argv[sys.argv.index("--probe") + 1])
    if "--occupancy" in sys.argv:
        cases["occupancy"] = occupancy_cases(sys.argv[sys.argv.index("--occupancy") + 1].split(","))
    saved = model.OCCUPANCY_EXPONENT, model.LAUNCH_S
    print("  exp  ws_us  " + "  ".join(f"{k} ({len(v)}): regret gmean / max / picks best" for k, v in cases.items()))
    for x, w in itertools.product((0.5, 0.4, 0.35, 0.3, 0.25, 0.2), (0.0, 1.0, 2.0, 3.0, 4.0)):
        model.OCCUPANCY_EXPONENT, model.LAUNCH_S = x, saved[1] + w * 1e-6
        cells = []
        for v in cases.values():
            g, mx, hit = score(v)
            cells.append(f"{g:.4f} / {mx:.2f} / {hit:.2f}")
        print(f" {x:4.2f}  {w:5.1f}  " + "  ".join(f"{c:>40}" for c in cells))
    model.OCCUPANCY_EXPONENT, model.LAUNCH_S = saved


if __name__ == "__main__":
    main()
