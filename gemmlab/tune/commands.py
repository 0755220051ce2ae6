"""Command: ``gemmlab tune`` (GPU). The work is in tune/runner.py; docs/dispatch.md says how the
database it writes is used."""
from __future__ import annotations

import json
import sys

from ..bench import suites

DEFAULT_SHAPES = "issue9"


def register(sub) -> None:
    from .runner import DEFAULT_TOP, LAYOUTS

    p = sub.add_parser(
        "tune", help="measure the best stage/config/split-K per shape and write the tuning database (GPU)",
        description="For each shape and layout: time the best predictions of the waves model (tile x "
                    "split-K), the default tile and what stage='auto' picks now, each checked against "
                    "float64 first, against cuBLAS; write the fastest to the tuning database that "
                    "stage='auto' reads (docs/dispatch.md). One progress line per candidate on stderr, "
                    "the table on stdout.")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--shapes", default=None, metavar="SPEC",
                      help="comma-separated MxNxK or MxNxKxBATCH, or suites: "
                           f"{', '.join(suites.SUITES)} (default {DEFAULT_SHAPES})")
    what.add_argument("--entries", metavar="SPEC",
                      help="instead of --shapes x --layouts: shapes each in its own layout, comma-separated "
                           "MxNxK[xBATCH]:LAYOUT or suites that give every shape a layout "
                           f"({', '.join(suites.LAYOUT_SUITES)})")
    p.add_argument("--layouts", default=None, metavar="L,...",
                   help=f"with --shapes: A and B storage, comma-separated from {','.join(LAYOUTS)} (default nn)")
    p.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help="wall-time budget of the whole run; no new candidate starts once it is spent "
                        "(default: none)")
    p.add_argument("--top", type=int, default=DEFAULT_TOP, metavar="N",
                   help=f"model predictions timed per shape, besides the default tile and stage='auto' "
                        f"(default {DEFAULT_TOP})")
    p.add_argument("--every-tile", action="store_true",
                   help="also time every tile of the config space at the model's best split for it "
                        "(about twice the candidates)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--out", metavar="FILE", help="write the database here instead of the user database")
    where.add_argument("--ship", action="store_true",
                       help="write gemmlab/tune/tables/<gpu>-<arch>-<compiler>.json (the table the package ships)")
    p.add_argument("--devices", default=None, metavar="0,1",
                   help="CUDA device indices to use (default: every visible GPU); shapes go round-robin")
    p.add_argument("--json", action="store_true", help="print the entries and results as JSON instead of the table")
    p.set_defaults(func=cmd_tune)


def usage_error(msg: str) -> None:
    from ..cli import usage_error as _usage_error

    _usage_error(msg)  # gemmlab: MSG on stderr, exit 2


def parse_layouts(text: str) -> tuple:
    from .runner import LAYOUTS

    out = []
    for t in str(text).split(","):
        t = t.strip().lower()
        if t not in LAYOUTS:
            raise ValueError(f"--layouts: {t!r} is not a layout; use {','.join(LAYOUTS)}")
        if t not in out:
            out.append(t)
    return tuple(out)


def parse_devices(text: str | None):
    if text is None:
        return None
    out = []
    for t in str(text).split(","):
        t = t.strip()
        if not t.isdigit():
            raise ValueError(f"--devices: {t!r} is not a device index (e.g. --devices 0,1)")
        if int(t) not in out:
            out.append(int(t))
    return tuple(out)


def parse_entries(spec: str) -> list[tuple]:
    """--entries: (M, N, K, batch, layout) each with a layout (ShapeError naming the first without)."""
    entries = suites.parse_entries(spec)
    missing = [e for e in entries if e[4] is None]
    if missing:
        raise suites.ShapeError(f"{suites.text(missing[0][:4])} has no layout; write it MxNxK:LAYOUT "
                                "(or use --shapes with --layouts)")
    return entries


def cmd_tune(args) -> int:
    entries = None
    if args.entries is not None and args.layouts is not None:
        usage_error("--layouts: not with --entries (each entry has its own layout)")
    try:
        if args.entries is not None:
            entries = parse_entries(args.entries)
            shapes = [e[:4] for e in entries]
        else:
            shapes = suites.parse(args.shapes if args.shapes is not None else DEFAULT_SHAPES)
    except suites.ShapeError as e:
        usage_error(f"--{'entries' if args.entries is not None else 'shapes'}: {e}")
    try:
        layouts = parse_layouts(args.layouts if args.layouts is not None else "nn")
        devices = parse_devices(args.devices)
    except ValueError as e:
        usage_error(str(e))
    if args.top < 0:
        usage_error("--top must be >= 0")
    if args.budget is not None and args.budget <= 0:
        usage_error("--budget must be > 0 seconds")

    from ..cli import need_gpu

    need_gpu()
    try:
        import torch  # noqa: F401
    except ImportError:
        from ..errors import GemmlabError

        raise GemmlabError("gemmlab tune needs torch (operands, the float64 reference and the cuBLAS baseline); "
                           "pip install torch") from None
    from .. import device as _device

    n = _device.device_count()
    if devices and max(devices) >= n:
        usage_error(f"--devices: device {max(devices)} does not exist; this machine has {n} GPU(s) (0..{n - 1})")
    from . import db
    from .runner import Settings, run, table, target_path, write
    from .. import dispatch

    idents = {}
    for d in devices or range(n):
        _, ident = dispatch._gpu(d)
        idents.setdefault(tuple(sorted(ident.items())), (d, ident))
    if args.out and len(idents) > 1:
        usage_error("--out: these devices are different GPUs (" +
                    "; ".join(f"{d}: {i['gpu']} {i['arch']}" for d, i in idents.values()) +
                    "); tune them separately with --devices")
    for _, ident in idents.values():
        path = target_path(ident, args.out, args.ship)
        if path.exists():
            theirs = db.read(path)
            if theirs is not None and any(theirs.get(k) != v for k, v in ident.items()):
                usage_error(f"--out {path}: it holds the table of another GPU/compiler "
                            f"({', '.join(str(theirs.get(k)) for k in ident)}); choose another --out")

    result = run(Settings(shapes=shapes, layouts=layouts, budget=args.budget, top=args.top, every_tile=args.every_tile,
                            devices=devices, entries=entries))
    paths = write(result, args.out, args.ship)
    for p in paths:
        print(f"gemmlab: wrote {p}", file=sys.stderr)
    rows = [r.row() for r in result["results"]]
    if args.json:
        doc = {"devices": result["devices"], "seconds": round(result["seconds"], 1),
               "budget_hit": result["budget_hit"], "files": [str(p) for p in paths],
               "entries": [e for _, lst in result["entries"].values() for e in lst], "results": rows}
        json.dump(doc, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(table(rows))
    bad = [f"{r['shape']} {r['layout']} {f}" for r in rows for f in r["failed"]]
    bad += [f"{r['shape']} {r['layout']}: {r['note']}" for r in rows if r["status"] == "failed" and not r["failed"]]
    if bad:
        print(f"gemmlab: {len(bad)} failure(s) (wrong results, errors or shapes without a result): "
              + "; ".join(bad[:5]) + (" ..." if len(bad) > 5 else ""), file=sys.stderr)
        return 1
    return 0
