"""Fit the waves model's two overhead terms to what gemmlab tune measured (CPU only).

The shipped H200 table keeps every entry's shortlist: each candidate tile and split-K with its
measured time (L2 flushed). For each setting of model.OCCUPANCY_EXPONENT (how fast an SM runs
holding fewer blocks than it could; OCCUPANCY_EXPONENT_UNALIGNED, the 4-byte path's, moved with
it: the "table-s10" column shows it) and model.LAUNCH_S raised by 0-4 us (what a split through
the workspace costs beyond the modelled launch and traffic), this prints the regret of the model's
pick among each shortlist (its measured time over the fastest's): geometric mean, worst, and the
share of entries where it picks the fastest. Entries tuned before split-K in a cluster existed
(2026-12-01T16:13) and unaligned, unrepacked ones (s10) tuned before s10 split in a cluster
(2026-12-04) are predicted with cluster=False; the unaligned ones tuned since are scored apart
("table-s10"). Optionally a probe log of scripts/two_warp_probe.py adds its shapes (``--probe
FILE``), and logs of scripts/cluster_occupancy_probe.py theirs (``--occupancy FILE[,FILE]``: at
each shape's tile, each split as the plan runs it, in a cluster where ``model.in_cluster`` says so),
and logs of scripts/small_tile_probe.py theirs (``--small-tile FILE``: every tile of the space it
timed, at each split).

``--batched FILE[,FILE]`` adds logs of scripts/batched_tile_probe.py (every tile of the space it
timed, no split).

``--epilogue`` sweeps model.EPILOGUE_EXPOSURE and model.BLOCK_OVERHEAD_S instead, and prints next
to the regret how well the model's times match the measured ones: the spread (standard deviation)
of log(measured / predicted) over every candidate, and their ratio's geometric mean. ``--by-k``
prints measured / predicted per tile and slice length over all the sets.
    python3 scripts/model_fit.py [--probe FILE] [--occupancy FILE[,FILE]] [--small-tile FILE] [--batched FILE[,FILE]]
                                 [--epilogue | --by-k]"""
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


def shortlist_label(label: str) -> str:
    """The space's label (space.Candidate.label) of a tuned entry's shortlist label, which may add
    the stage, its split, "(default)" and where the tuner's own pick came from."""
    return re.sub(r"( split \d+)?( \(default\))?( \[.*\])?$", "", label).removeprefix("s11 ")


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
            lab = shortlist_label(label)
            if lab in by_label:
                short.append((by_label[lab], split, ms))
        if len(short) > 1:
            out.append((f"{M}x{N}x{K}x{B} {e['layout']}", M, N, K, B, cluster, aligned, short))
    return out


# names of space tiles in the probes' listings that differ from the space's labels
LISTING_LABELS = {"64x128 bk16 ku1 x3": "64x128 w32x64 bk16 ku1 x3"}


def listing_cases(path):
    """The same from a log of scripts/two_warp_probe.py or small_tile_probe.py: a header per shape
    ("== MxNxK[xB] layout (s10|s11)" or "== MxNxK[xB] layout: ..."; s11 where none is named) and
    one line per tile and split timed, of which the tiles the space lists are kept (aligned
    problems)."""
    by_label = {c.label: c for c in space.candidates(90)}
    out, cur = [], None
    for line in Path(path).read_text().splitlines():
        m = re.match(r"== (\d+)x(\d+)x(\d+)(?:x(\d+))? (\w\w)(?: \((s1\d)\))?", line)
        if m:
            M, N, K = map(int, m.group(1, 2, 3))
            B = int(m.group(4) or 1)
            cur = (f"{M}x{N}x{K}x{B} {m.group(5)}", M, N, K, B, m.group(6) in (None, "s11"), True, [])
            out.append(cur)
            continue
        m = re.match(r"\s+(.+?)\s+split\s+(\d+)\s+([\d.]+) us", line)
        label = m and LISTING_LABELS.get(m.group(1), m.group(1))
        if m and cur and label in by_label:
            cur[7].append((by_label[label], int(m.group(2)), float(m.group(3)) / 1e3))
    return [c for c in out if len(c[7]) > 1]


# batched_tile_probe.py's labels of the space's tiles
BATCHED_LABELS = {"64x64 x3 (space)": "64x64 w32x32 x3", "32x64 x4 (space)": "32x64 w16x32 x4",
                  "64x128 bk16 ku1 x3": "64x128 w32x64 bk16 ku1 x3", "128x64 bk16 ku1 x3": "128x64 w64x32 bk16 ku1 x3",
                  "128x128 w32x64 x2": "128x128 w32x64 x2"}


def batched_cases(paths):
    """From batched_tile_probe.py logs: per shape ("== MxNxKxB layout: cuBLAS ..."), the space's
    tiles it timed (no split), and auto's kernel where it is one of the space's tiles at split 1."""
    by_label = {c.label: c for c in space.candidates(90)}
    out, cur = [], None
    for path in paths:
        for line in Path(path).read_text().splitlines():
            m = re.match(r"== (\d+)x(\d+)x(\d+)x(\d+) (\w\w):", line)
            if m:
                M, N, K, B = map(int, m.group(1, 2, 3, 4))
                cur = (f"{M}x{N}x{K}x{B} {m.group(5)}", M, N, K, B, True, True, [])
                out.append(cur)
                continue
            m = re.match(r"\s+(.+?)\s+([\d.]+) us\s+cuBLAS/it", line)
            if m and cur and BATCHED_LABELS.get(m.group(1)) in by_label:
                cur[7].append((by_label[BATCHED_LABELS[m.group(1)]], 1, float(m.group(2)) / 1e3))
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
    """(regret geometric mean, worst regret, share of picks that were the fastest, spread of
    log(measured / predicted), geometric mean of measured / predicted)."""
    regrets, hits, errs = [], 0, []
    for _, M, N, K, B, cluster, aligned, short in cases:
        preds = [model.predict(c, M, N, K, B, s, GPU, cluster=cluster, aligned=aligned).seconds for c, s, _ in short]
        pick = short[preds.index(min(preds))][2]
        best = min(ms for _, _, ms in short)
        regrets.append(pick / best)
        hits += pick == best
        errs += [math.log(ms * 1e-3 / p) for (_, _, ms), p in zip(short, preds)]
    g = math.exp(sum(map(math.log, regrets)) / len(regrets))
    mean = sum(errs) / len(errs)
    spread = math.sqrt(sum((e - mean) ** 2 for e in errs) / len(errs))
    return g, max(regrets), hits / len(regrets), spread, math.exp(mean)


def sweep(cases, grid, head, cell, width):
    """For each point of ``grid`` ({model attribute: value}), the row ``head`` formats and one
    ``cell(score)`` per set of cases; the model's attributes are restored after."""
    saved = {a: getattr(model, a) for a in grid[0]}
    for point in grid:
        for a, v in point.items():
            setattr(model, a, v)
        print(head(point) + "  ".join(f"{cell(score(v)):>{width}}" for v in cases.values()))
    for a, v in saved.items():
        setattr(model, a, v)


def sweep_epilogue(cases):
    """Regret and time error over EPILOGUE_EXPOSURE x BLOCK_OVERHEAD_S."""
    print("  epi  block_us  " + "  ".join(f"{k} ({len(v)}): regret gmean / max / spread / meas:pred"
                                       for k, v in cases.items()))
    grid = [{"EPILOGUE_EXPOSURE": x, "BLOCK_OVERHEAD_S": b * 1e-6}
            for x, b in itertools.product((0.0, 0.5, 1.0, 2.0, 3.0), (2.0, 3.0, 4.0))]
    sweep(cases, grid, lambda p: f" {p['EPILOGUE_EXPOSURE']:4.1f}  {p['BLOCK_OVERHEAD_S'] * 1e6:8.1f}  ",
          lambda sc: f"{sc[0]:.4f} / {sc[1]:.2f} / {sc[3]:.3f} / {sc[4]:.2f}", 48)


def by_k_slice(cases):
    """Measured / predicted time per tile and slice length (K / split): geometric mean and range."""
    groups = {}
    for _, M, N, K, B, cluster, aligned, short in cases:
        for c, s, ms in short:
            k = -(-K // s)
            band = "K <= 256" if k <= 256 else "K <= 1024" if k <= 1024 else "K > 1024"
            pred = model.predict(c, M, N, K, B, s, GPU, cluster=cluster, aligned=aligned).seconds
            groups.setdefault(("%dx%d" % c.tile(), band), []).append(ms * 1e-3 / pred)
    print("tile      slice        n  measured / predicted: gmean (min - max)")
    bands = ["K <= 256", "K <= 1024", "K > 1024"]
    for (tile, band), r in sorted(groups.items(), key=lambda kv: (kv[0][0], bands.index(kv[0][1]))):
        g = math.exp(sum(map(math.log, r)) / len(r))
        print(f"{tile:9} {band:10} {len(r):4}  {g:.2f} ({min(r):.2f} - {max(r):.2f})")


def main():
    cases = {"table": table_cases(False), "table-s10": table_cases(True)}
    if "--probe" in sys.argv:
        cases["probe"] = listing_cases(sys.argv[sys.argv.index("--probe") + 1])
    if "--occupancy" in sys.argv:
        cases["occupancy"] = occupancy_cases(sys.argv[sys.argv.index("--occupancy") + 1].split(","))
    if "--small-tile" in sys.argv:
        cases["small-tile"] = listing_cases(sys.argv[sys.argv.index("--small-tile") + 1])
    if "--batched" in sys.argv:
        cases["batched"] = batched_cases(sys.argv[sys.argv.index("--batched") + 1].split(","))
    if "--epilogue" in sys.argv:
        return sweep_epilogue(cases)
    if "--by-k" in sys.argv:
        return by_k_slice([c for v in cases.values() for c in v])
    # the occupancy exponent of aligned and of unaligned problems moved together
    print("  exp  ws_us  " + "  ".join(f"{k} ({len(v)}): regret gmean / max / picks best" for k, v in cases.items()))
    grid = [{"OCCUPANCY_EXPONENT": x, "OCCUPANCY_EXPONENT_UNALIGNED": x, "LAUNCH_S": model.LAUNCH_S + w * 1e-6}
            for x, w in itertools.product((0.5, 0.4, 0.35, 0.3, 0.25, 0.2), (0.0, 1.0, 2.0, 3.0, 4.0))]
    sweep(cases, grid, lambda p: f" {p['OCCUPANCY_EXPONENT']:4.2f}  {(p['LAUNCH_S'] - grid[0]['LAUNCH_S']) * 1e6:5.1f}  ",
          lambda sc: f"{sc[0]:.4f} / {sc[1]:.2f} / {sc[2]:.2f}", 40)

if __name__ == "__main__":
    main()
