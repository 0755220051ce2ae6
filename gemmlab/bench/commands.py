"""Commands: ``ladder``, ``bench`` and ``sweep`` (GPU; ``bench --overhead``: gemmlab/bench/overhead.py),
``report`` (no GPU). See docs/benchmark.md, docs/dispatch.md (sweep) and docs/torch.md."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from ..cli import need_gpu, positive_int, usage_error
from . import stats, suites
from .timing import Policy

LAYOUTS = ("nn", "nt", "tn", "tt")


def register(sub) -> None:
    p = sub.add_parser("ladder", help="every stage and the baselines at N³, checked then timed (GPU)",
                       description="Run every stage that this GPU can run, and the baselines (cuBLAS via "
                                   "torch and CuPy, Triton), on N x N x N; check each against float64, then "
                                   "time it. Prints one progress line per candidate to stderr and the table "
                                   "to stdout.")
    p.add_argument("--size", default=None, help="N for an N³ problem (default 4096)")
    p.add_argument("--sizes", default=None, help="a sweep: 256,512,1024 or 256..8192 or 256,512,...,8192 (doubling)")
    _common(p)
    p.set_defaults(func=cmd_ladder)

    p = sub.add_parser("bench", help="one shape, chosen stages vs cuBLAS; or --overhead: the cost of a call (GPU)",
                       description="gemmlab bench M N K: one shape, the chosen stages against the baselines. "
                                   "gemmlab bench --overhead: host and end-to-end time per call of "
                                   "gemmlab.matmul, torch.ops.gemmlab.mm and torch.mm at small sizes, and the "
                                   "public API against torch.mm (and the kernel alone) at 4096³.")
    p.add_argument("M", nargs="?", help="rows of A and D")
    p.add_argument("N", nargs="?", help="columns of B and D")
    p.add_argument("K", nargs="?", help="columns of A, rows of B")
    p.add_argument("--stage", action="append", dest="stage_list", metavar="S",
                   help="a stage id or name (repeat, or comma-separated); default every stage")
    g = p.add_argument_group("--overhead", "the cost of one call (no M N K; --out writes overhead.json)")
    g.add_argument("--overhead", action="store_true",
                   help="time calls instead: host and end-to-end µs per call against torch.mm")
    g.add_argument("--sizes", default=None,
                   help="with --overhead: N for N³ problems, as for ladder --sizes (default 64,256,1024)")
    g.add_argument("--calls", type=int, default=None,
                   help="with --overhead: back-to-back calls per timed loop (default 500)")
    g.add_argument("--repeats", type=int, default=None,
                   help="with --overhead: timed loops per row, the median is reported (default 5)")
    g.add_argument("--api-size", type=int, default=None,
                   help="with --overhead: N of the api_vs_kernel row (default 4096; 0 leaves it out)")
    _common(p, stages_flag=False, stem="bench", out_help="write bench.json, bench.csv and bench.png there "
                                                        "(with --overhead: overhead.json)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("sweep", help="gemmlab's stage='auto' against cuBLAS and Triton over a suite of shapes (GPU)",
                       description="Run gemmlab as users call it (stage='auto': skinny kernel, tuned table or "
                                   "heuristic, split-K; gemm_batched for batched entries) and the baselines on "
                                   "every entry of a suite, each checked against float64 (every matrix of a "
                                   "batch), then timed. An entry is a shape MxNxK, or MxNxKxBATCH (strided "
                                   "batched: 3-D operands, batch outermost), in a layout: its own (a :LAYOUT "
                                   "suffix, or the suite's, e.g. wide), else --layout; --layouts runs every "
                                   "entry in each layout listed instead. The table has one row per entry (M, N, "
                                   "K, batch, layout) with the ratio to cuBLAS, and its geometric mean and "
                                   "minimum over all entries, per layout and for the batched ones. Triton rows "
                                   "of batched entries are skipped (its kernel is 2-D). --out writes "
                                   "sweep.json/csv/png; the JSON (also --json) is a gemmlab.ladder/2 document "
                                   "whose rows and problems each carry m, n, k, batch and layout "
                                   "(docs/benchmark.md).")
    p.add_argument("--suite", default=None,
                   help=f"issue9 (default), squares, all, transformer, heldout or wide (issue 16: "
                        f"{len(suites.WIDE_ENTRIES)} entries in their own layouts, every layout, "
                        f"{sum(e[3] > 1 for e in suites.WIDE_ENTRIES)} strided-batched); gemmlab/bench/suites.py")
    p.add_argument("--shapes", default=None, metavar="SPEC",
                   help="instead of --suite: comma-separated entries MxNxK or MxNxKxBATCH, each optionally "
                        ":LAYOUT (4096x4096x4096:nt, 64x64x64x128:tt); suite names allowed (wide, or "
                        "transformer:tn for a whole suite in one layout)")
    p.add_argument("--layouts", default=None, metavar="L,...",
                   help="run every entry (2-D and batched) in each of these layouts, comma-separated from "
                        "nn,nt,tn,tt, replacing the entries' own layouts (not with --layout)")
    p.add_argument("--precision", choices=("ieee", "tf32", "tf32x3"), default="ieee",
                   help="gemmlab's precision= (default ieee); tf32 and tf32x3 add the cuBLAS TF32 baseline and, "
                        "for tf32x3, Triton's tf32x3 where it is installed")
    _common(p, stages_flag=False, baselines_default=None, stem="sweep", layout_default=None,
            layout_help="the layout of entries that do not give their own (default nn): n row-major, "
                        "t column-major A and B")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("report", help="a table from a ladder.json, bench.json, sweep.json or overhead.json (no GPU)",
                       description="Print the table of a document that gemmlab ladder, bench or sweep wrote with "
                                   "--out (ladder.json, bench.json, sweep.json), or of bench --overhead's "
                                   "overhead.json.")
    p.add_argument("file", help="ladder.json, bench.json or sweep.json (gemmlab ladder/bench/sweep --out DIR), "
                                "or overhead.json (gemmlab bench --overhead --out DIR)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--markdown", action="store_true", help="the README's markdown table")
    fmt.add_argument("--csv", action="store_true", help="CSV (CUTLASS profiler column names) instead")
    p.add_argument("--plot", metavar="PNG", help="also draw the plot into PNG")
    p.set_defaults(func=cmd_report)


def _common(p, stages_flag: bool = True, baselines_default: str = "cublas,cublas_tf32,cupy,triton", stem: str = "ladder",
            out_help: str | None = None, layout_default: str | None = "nn", layout_help: str | None = None) -> None:
    if stages_flag:
        p.add_argument("--stages", default=None, help="comma-separated stage ids or names (default: all)")
    p.add_argument("--layout", choices=LAYOUTS, default=layout_default,
                   help=layout_help or "A and B storage: n row-major, t column-major (default nn)")
    p.add_argument("--baselines", default=baselines_default,
                   help="comma-separated subset of cublas,cublas_tf32,cupy,triton,triton_tf32x3, or none (default: "
                        + (baselines_default or "by --precision: cublas,triton; tf32 adds cublas_tf32; tf32x3: "
                           "cublas,cublas_tf32,triton_tf32x3") + ")")
    p.add_argument("--out", metavar="DIR", help=out_help or f"write {stem}.json, {stem}.csv and {stem}.png there")
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
    p.add_argument("--device", default="0", help="CUDA device index (default 0)")


def _split(text) -> list[str]:
    """'s01,s07[block_m=64,block_n=64]' -> ['s01', 's07[block_m=64,block_n=64]'] (commas inside
    brackets belong to the config)."""
    out = []
    for item in text if isinstance(text, list) else [text]:
        out += [s.strip() for s in re.split(r",(?![^\[]*\])", str(item)) if s.strip()]
    return out


def _baselines(text: str) -> tuple:
    from .baselines import NAMES

    names = _split(text)
    if names == ["none"]:
        return ()
    bad = [n for n in names if n not in NAMES]
    if bad or not names:
        usage_error(f"--baselines {text!r}: unknown {', '.join(bad) or 'empty list'}; use a comma-separated "
                    f"subset of {','.join(NAMES)}, or none")
    return tuple(names)


def _policy(args) -> Policy:
    if not args.target_seconds > 0:
        usage_error(f"--target-seconds {args.target_seconds:g}: must be > 0")
    if not args.max_seconds > 0:
        usage_error(f"--max-seconds {args.max_seconds:g}: must be > 0")
    if args.min_reps < 1:
        usage_error(f"--min-reps {args.min_reps}: must be >= 1")
    if args.max_reps < args.min_reps:
        usage_error(f"--max-reps {args.max_reps}: must be >= --min-reps ({args.min_reps})")
    return Policy(target_seconds=args.target_seconds, max_seconds=args.max_seconds,
                  min_reps=args.min_reps, max_reps=args.max_reps)


def _stages(ids, option: str = "--stages") -> None:
    """Unknown stage ids and bad configs fail here, before the GPU is looked for."""
    from ..errors import ConfigError
    from . import ladder

    for token in ids:
        try:
            ladder.select_stages([token])
        except ConfigError as e:  # unknown stage, bad config key or value
            usage_error(f"{option}: {e}".replace("(or 'auto')", "(or tuned: stage='auto')"))
        except ValueError as e:  # a malformed STAGE[KEY=VALUE,...]
            why = "config values are integers" if "invalid literal" in str(e) else str(e)
            usage_error(f"{option} {token!r}: {why}")


def _device_arg(args) -> int:
    return positive_int("--device", args.device, minimum=0)


def _check_device(index: int) -> None:
    from .. import device

    n = device.device_count()
    if index >= n:
        usage_error(f"--device {index}: this machine has {n} GPU(s) (0..{n - 1})")


def _run(args, problems, stage_ids, kind: str) -> int:
    baselines = _baselines(args.baselines)
    policy = _policy(args)
    dev = _device_arg(args)
    if stage_ids:
        _stages(stage_ids, "--stage" if kind == "bench" else "--stages")
    need_gpu()
    _check_device(dev)
    from . import ladder

    settings = ladder.Settings(problems=problems, layout=args.layout or "nn", stages=stage_ids or None,
                               baselines=baselines, policy=policy, device=dev,
                               kernel_names=not args.no_kernel_names, kind=kind)
    doc = ladder.run(settings)
    if args.out:
        write_outputs(doc, args.out, stem=kind)
    if args.json:
        json.dump(doc, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        from . import report

        sys.stdout.write(report.plain(doc))
    bad = [r["stage"] for r in doc["rows"] if not r["correct"] and not r.get("skipped")]
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
        usage_error("give --size or --sizes, not both")
    if args.sizes is not None:
        try:
            sizes = stats.parse_sizes(args.sizes)
        except ValueError as e:
            usage_error(f"--sizes: {e}")
        if any(s <= 0 for s in sizes):
            usage_error(f"--sizes {args.sizes!r}: sizes must be positive")
    else:
        sizes = [4096 if args.size is None else positive_int("--size", args.size)]
    return _run(args, [(s, s, s) for s in sizes], _split(args.stages) if args.stages else None, "ladder")


def sweep_entries(args) -> list[tuple]:
    """(M, N, K, batch, layout) of every entry the sweep's arguments name, in order, without
    duplicates; a usage error for a bad --suite, --shapes or --layouts."""
    if args.suite is not None and args.shapes is not None:
        usage_error("give --suite or --shapes, not both")
    if args.layout is not None and args.layouts is not None:
        usage_error("give --layout (the layout of entries without their own) or --layouts (every entry in "
                    "each of them), not both")
    try:
        if args.shapes is not None:
            entries = suites.parse_entries(args.shapes)
        else:
            name = (args.suite or "issue9").strip()
            if name.partition(":")[0].strip().lower() not in suites.SUITES:  # NAME or NAME:LAYOUT
                raise suites.ShapeError(f"unknown suite {args.suite!r}; suites are {', '.join(suites.SUITES)}")
            entries = suites.parse_entries(name)
    except suites.ShapeError as e:
        usage_error(f"{'--shapes' if args.shapes is not None else '--suite'}: {e}")
    layouts = None
    if args.layouts is not None:
        items = [t.strip() for t in str(args.layouts).split(",")]
        if not any(items):
            usage_error(f"--layouts {args.layouts!r}: give one or more of {','.join(LAYOUTS)}")
        layouts = []
        for t in items:
            if t.lower() not in LAYOUTS:
                usage_error(f"--layouts: {t!r} is not a layout; use a comma-separated subset of {','.join(LAYOUTS)}")
            if t.lower() not in layouts:
                layouts.append(t.lower())
    return suites.resolve(entries, args.layout or "nn", layouts)


def cmd_sweep(args) -> int:
    entries = sweep_entries(args)
    if args.baselines is None:
        args.baselines = {"ieee": "cublas,triton", "tf32": "cublas,cublas_tf32,triton",
                          "tf32x3": "cublas,cublas_tf32,triton_tf32x3"}[args.precision]
    token = "tuned" if args.precision == "ieee" else f"tuned-{args.precision}"
    return _run(args, entries, [token], "sweep")


_OVERHEAD_ONLY = ("sizes", "calls", "repeats", "api_size")


def cmd_bench(args) -> int:
    if args.overhead:
        return _overhead(args)
    given = [f"--{k.replace('_', '-')}" for k in _OVERHEAD_ONLY if getattr(args, k) is not None]
    if given:
        usage_error(f"{', '.join(given)}: only with --overhead")
    if None in (args.M, args.N, args.K):
        usage_error("bench needs M N K (or --overhead)")
    m, n, k = (positive_int(name, v) for name, v in (("M", args.M), ("N", args.N), ("K", args.K)))
    return _run(args, [(m, n, k)], _split(args.stage_list) if args.stage_list else None, "bench")


def _overhead(args) -> int:
    from . import overhead

    if args.M is not None or args.stage_list:
        usage_error("bench --overhead takes no M N K or --stage (sizes: --sizes)")
    try:
        sizes = tuple(stats.parse_sizes(args.sizes)) if args.sizes else overhead.DEFAULT_SIZES
    except ValueError as e:
        usage_error(f"--sizes: {e}")
    if any(s <= 0 for s in sizes):
        usage_error(f"--sizes {args.sizes!r}: sizes must be positive")
    calls = overhead.DEFAULT_CALLS if args.calls is None else args.calls
    repeats = overhead.DEFAULT_REPEATS if args.repeats is None else args.repeats
    api_size = overhead.API_SIZE if args.api_size is None else args.api_size
    if calls < 1:
        usage_error(f"--calls {calls}: must be >= 1 (and --repeats >= 1)")
    if repeats < 1:
        usage_error(f"--repeats {repeats}: must be >= 1 (and --calls >= 1)")
    if api_size < 0:
        usage_error(f"--api-size {api_size}: must be >= 0 (0 leaves the api_vs_kernel row out)")
    policy = _policy(args)
    dev = _device_arg(args)
    need_gpu()
    _check_device(dev)
    settings = overhead.Settings(sizes=sizes, calls=calls, repeats=repeats, api_size=api_size,
                                 policy=policy, device=dev)
    doc = overhead.run(settings)
    if args.out:
        overhead.write(doc, args.out)
    if args.json:
        json.dump(doc, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(overhead.plain(doc))
    bad = overhead.failed(doc)
    if bad:
        print(f"gemmlab: {len(bad)} measurement(s) failed: {'; '.join(bad)}", file=sys.stderr)
        return 1
    return 0


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
        kind, doc = report.load_any(args.file)
    except FileNotFoundError as e:
        usage_error(str(e))
    except schema.SchemaError as e:
        usage_error(e.summary())
    except OSError as e:  # unreadable: permissions and the like
        usage_error(f"{args.file}: {e.strerror or e}")
    if kind == "overhead":
        for flag, given in (("--csv", args.csv), ("--plot", args.plot)):
            if given:
                usage_error(f"{flag}: {args.file} is an overhead document (gemmlab bench --overhead), which has "
                            "a table only (plain, or --markdown)")
        from . import overhead

        text = overhead.plain(doc)
        sys.stdout.write(f"```\n{text}```\n" if args.markdown else text)
        return 0
    if args.csv:
        sys.stdout.write(report.csv_text(doc))
    elif args.markdown:
        sys.stdout.write(report.markdown(doc))
    else:
        sys.stdout.write(report.plain(doc))
    if args.plot:
        try:
            from . import plot

            plot.write(doc, args.plot)
        except ImportError as e:
            print(f"gemmlab: --plot: no plot ({e}); pip install matplotlib", file=sys.stderr)
            return 1
        print(f"gemmlab: wrote {args.plot}", file=sys.stderr)
    return 0
