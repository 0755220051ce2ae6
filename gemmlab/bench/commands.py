"""Commands: ``ladder`` and ``bench`` (GPU), ``report`` (no GPU). See docs/benchmark.md."""
from __future__ import annotations

import re

import json
import sys
from pathlib import Path

from . import stats
from .timing import Policy

LAYOUTS = ("nn", "nt", "tn", "tt")


def register(sub) -> None:
    p = sub.add_parser("ladder", help="every stage and the baselines at N³, checked then timed (GPU)",
                       description="Run every stage that this GPU can run, and the baselines (cuBLAS via "
                                   "torch and CuPy, Triton), on N x N x N; check each against float64, then "
                                   "time it. Prints one progress line per candidate to stderr and the table "
                                   "to stdout.")
    p.add_argument("--size", type=int, default=None, help="N for an N³ problem (default 4096)")
    p.add_argument("--sizes", default=None, help="a sweep: 256,512,1024 or 256..8192 or 256,512,...,8192 (doubling)")
    _common(p)
    p.set_defaults(func=cmd_ladder)

    p = sub.add_parser("bench", help="one shape, chosen stages vs cuBLAS (GPU)")
    p.add_argument("M", type=int)
    p.add_argument("N", type=int)
    p.add_argument("K", type=int)
    p.add_argument("--stage", action="append", dest="stage_list", metavar="S",
                   help="a stage id or name (repeat, or comma-separated); default every stage")
    _common(p, stages_flag=False)
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("report", help="a table from a ladder.json (no GPU)")
    p.add_argument("file", help="ladder.json written by gemmlab ladder --out")
    p.add_argument("--markdown", action="store_true", help="the README's markdown table")
    p.add_argument("--csv", action="store_true", help="CSV (CUTLASS profiler column names) instead")
    p.add_argument("--plot", metavar="PNG", help="also draw the plot into PNG")
    p.set_defaults(func=cmd_report)


def _common(p, stages_flag: bool = True) -> None:
    if stages_flag:
        p.add_argument("--stages", default=None, help="comma-separated stage ids or names (default: all)")
    p.add_argument("--layout", choices=LAYOUTS, default="nn",
                   help="A and B storage: n row-major, t column-major (default nn)")
    p.add_argument("--baselines", default="cublas,cupy,triton",
                   help="comma-separated subset of cublas,cupy,triton, or none (default: all installed)")
    p.add_argument("--out", metavar="DIR", help="write ladder.json, ladder.csv and ladder.png there")
    p.add_argument("--json", action="store_true", help="print the JSON document to stdout instead of the table")
    p.add_argument("--target-seconds", type=float, default=Policy.target_seconds,
                   help=f"timed kernel work per candidate (default {Policy.target_seconds})")
    p.add_argument("--max-seconds", type=float, default=Policy.max_seconds,
                   help=f"wall-clock budget per candidate for warm-up and timing; the row says how many "
                        f"repetitions fit (default {Policy.max_seconds})")
    p.add_argument("--min-reps", type=int, default=Policy.min_reps, help=f"default {Policy.min_reps}")
    p.add_argument("--max-reps", type=int, default=Policy.max_reps, help=f"default {Policy.max_reps}")
    p.add_argument("--no-kernel-names", action="store_true",
                   help="do not run the torch profiler to learn cuBLAS's kernel name")
    p.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")


def _split(text) -> list[str]:
    """'s01,s07[block_m=64,block_n=64]' -> ['s01', 's07[block_m=64,block_n=64]'] (commas inside
    brackets belong to the config)."""
    out = []
    for item in text if isinstance(text, list) else [text]:
        out += [s.strip() for s in re.split(r",(?![^\[]*\])", str(item)) if s.strip()]
    return out


def _baselines(text: str) -> tuple:
    names = _split(text)
    if names == ["none"]:
        return ()
    from .baselines import NAMES

    bad = [n for n in names if n not in NAMES]
    if bad:
        raise SystemExit(f"gemmlab: --baselines {text!r}: unknown {', '.join(bad)}; use {','.join(NAMES)} or none")
    return tuple(names)


def _policy(args) -> Policy:
    if args.target_seconds <= 0 or args.max_seconds <= 0 or args.min_reps < 1 or args.max_reps < args.min_reps:
        raise SystemExit("gemmlab: --target-seconds and --max-seconds must be > 0, 1 <= --min-reps <= --max-reps")
    return Policy(target_seconds=args.target_seconds, max_seconds=args.max_seconds,
                  min_reps=args.min_reps, max_reps=args.max_reps)


def _run(args, problems, stage_ids, kind: str) -> int:
    from ..cli import need_gpu

    need_gpu()
    from . import ladder

    settings = ladder.Settings(problems=problems, layout=args.layout, stages=stage_ids or None,
                               baselines=_baselines(args.baselines), policy=_policy(args), device=args.device,
                               kernel_names=not args.no_kernel_names, kind=kind)
    if stage_ids:
        try:
            ladder.select_stages(stage_ids)  # unknown ids and bad configs fail here, before any GPU work
        except ValueError as e:
            raise SystemExit(f"gemmlab: {e}") from None
    doc = ladder.run(settings)
    if args.out:
        write_outputs(doc, args.out, stem=kind)
    if args.json:
        json.dump(doc, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        from . import report

        sys.stdout.write(report.plain(doc))
    bad = [r["stage"] for r in doc["rows"] if not r["correct"]]
    if doc["provenance"].get("aborted"):
        print(f"gemmlab: the run stopped early: {doc['provenance']['aborted']}", file=sys.stderr)
        return 1
    if bad:
        print(f"gemmlab: {len(bad)} row(s) failed the correctness check or errored: {', '.join(bad)}",
              file=sys.stderr)
        return 1
    return 0


def cmd_ladder(args) -> int:
    if args.size is not None and args.sizes is not None:
        raise SystemExit("gemmlab: give --size or --sizes, not both")
    try:
        sizes = stats.parse_sizes(args.sizes) if args.sizes else [args.size or 4096]
    except ValueError as e:
        raise SystemExit(f"gemmlab: --sizes: {e}") from None
    if any(s <= 0 for s in sizes):
        raise SystemExit("gemmlab: --size must be positive")
    return _run(args, [(s, s, s) for s in sizes], _split(args.stages) if args.stages else None, "ladder")


def cmd_bench(args) -> int:
    if min(args.M, args.N, args.K) <= 0:
        raise SystemExit("gemmlab: M, N and K must be positive")
    return _run(args, [(args.M, args.N, args.K)], _split(args.stage_list) if args.stage_list else None, "bench")


def write_outputs(doc: dict, out_dir, stem: str = "ladder") -> list[Path]:
    """Write STEM.json, STEM.csv and STEM.png into ``out_dir`` (created); returns the paths."""
    from . import report

    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    paths = [d / f"{stem}.json", d / f"{stem}.csv"]
    report.dump(doc, paths[0])
    paths[1].write_text(report.csv_text(doc))
    try:
        from . import plot

        paths.append(plot.write(doc, d / f"{stem}.png"))
    except ImportError as e:
        print(f"gemmlab: no plot ({e}); pip install matplotlib", file=sys.stderr)
    print("gemmlab: wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return paths


def cmd_report(args) -> int:
    from . import report, schema

    try:
        doc = report.load(args.file)
    except (OSError, schema.SchemaError) as e:
        print(f"gemmlab: {e}", file=sys.stderr)
        return 1
    if args.csv:
        sys.stdout.write(report.csv_text(doc))
    elif args.markdown:
        sys.stdout.write(report.markdown(doc))
    else:
        sys.stdout.write(report.plain(doc))
    if args.plot:
        from . import plot

        plot.write(doc, args.plot)
        print(f"gemmlab: wrote {args.plot}", file=sys.stderr)
    return 0
