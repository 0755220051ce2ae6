"""``gemmlab profile``: the models against Nsight Compute's counters, stage by stage (GPU + ncu).

    gemmlab profile s07 [--size 4096 | --shape 4096x4096x1024] [--layout nn] [--config K=V,..] [--json]
    gemmlab profile auto --shape 8192x128x8192
    gemmlab profile --all --size 2048,4096 --out results/h200/profile
    gemmlab profile s07 --model-only                 # the model side only, no GPU
    gemmlab profile s07 --size 2048 --from-raw FILE  # a saved ncu capture (--save-raw), no GPU

Exit status: 2 for a bad argument (checked before anything touches the GPU or ncu), 1 when ncu is
missing, may not read the counters (ERR_NVGPUCTRPERM) or profiled nothing.
"""
from __future__ import annotations

import os
import sys
import time

from ..cli import emit_json, parse_config
from ..errors import ArgumentError, GemmlabError


def register(sub) -> None:
    p = sub.add_parser("profile", help="hardware counters (Nsight Compute) next to the models: model, measured, "
                                       "ratio per quantity, the top stalls and the largest miss (GPU + ncu)")
    p.add_argument("stage", nargs="?", help="a stage id or name, or auto (the stage gemmlab.gemm would choose)")
    p.add_argument("--size", help="M = N = K, or a list: 2048,4096 (default 4096)")
    p.add_argument("--shape", help="MxNxK (instead of --size)")
    p.add_argument("--layout", default="nn", help="nn, nt, tn or tt: A then B, n row-major, t transposed (default nn)")
    p.add_argument("--config", help="KEY=VALUE,... overriding the stage's defaults")
    p.add_argument("--all", action="store_true", help="every stage of the ladder, then auto")
    p.add_argument("--stages", help="comma-separated stages (instead of STAGE or --all)")
    p.add_argument("--out", help="directory: profile-<size>.json and ncu-raw-<size>.csv per size")
    p.add_argument("--save-raw", help="file for ncu's raw CSV output (a capture --from-raw reads back)")
    p.add_argument("--from-raw", help="read a saved ncu capture instead of running ncu (no GPU)")
    p.add_argument("--model-only", action="store_true", help="print the model side only (no GPU, no ncu)")
    p.add_argument("--timeout", default="600", help="seconds per ncu session (default 600)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_profile)


def _stages(args) -> list[str]:
    from ..stages import all_stages

    given = [x for x in (args.stage, args.stages, args.all or None) if x]
    if not given:
        raise ArgumentError("profile: name a STAGE (e.g. s07 or auto), or --stages s07,s11, or --all")
    if len(given) > 1:
        raise ArgumentError("profile: give one of STAGE, --stages and --all")
    if args.all:   # auto only where something runs (it chooses on the GPU)
        return [s.id for s in all_stages()] + ([] if (args.model_only or args.from_raw) else ["auto"])
    if args.stages:
        items = [s.strip() for s in args.stages.split(",") if s.strip()]
        if not items:
            raise ArgumentError(f"--stages {args.stages!r}: expected a list like s07,s11")
        return items
    return [args.stage]


def _shapes(args) -> list[tuple[int, int, int]]:
    from .profile import parse_shape, parse_sizes

    if args.size and args.shape:
        raise ArgumentError("profile: give --size or --shape, not both")
    if args.shape:
        return [parse_shape(s) for s in args.shape.split(",")] if "," in args.shape and "x" in args.shape \
            else [parse_shape(args.shape)]
    return [(n, n, n) for n in parse_sizes(args.size or "4096")]


def _check(args):
    from .profile import make_jobs

    stages = _stages(args)
    shapes = _shapes(args)
    config = parse_config(args.config)
    jobs = make_jobs(stages, shapes, args.layout, config)
    try:
        timeout = float(args.timeout)
    except ValueError:
        timeout = -1
    if timeout <= 0:
        raise ArgumentError(f"--timeout {args.timeout!r}: expected a positive number of seconds")
    if args.model_only and args.from_raw:
        raise ArgumentError("profile: --model-only and --from-raw exclude each other")
    if args.from_raw:
        if not os.path.isfile(args.from_raw):
            raise ArgumentError(f"--from-raw {args.from_raw!r}: no such file")
        if any(j["stage"] == "auto" for j in jobs):
            raise ArgumentError("--from-raw: name the stages (a capture does not say which stage auto chose)")
    if args.out and os.path.exists(args.out) and not os.path.isdir(args.out):
        raise ArgumentError(f"--out {args.out!r}: not a directory")
    if args.model_only and any(j["stage"] == "auto" for j in jobs):
        raise ArgumentError("--model-only: name the stages (auto chooses on the GPU)")
    return jobs, timeout


def cmd_profile(args) -> int:
    try:
        jobs, timeout = _check(args)
    except ArgumentError as e:          # ConfigError included
        print(f"gemmlab: {e}", file=sys.stderr)
        return 2
    except SystemExit:                  # parse_config of older versions exits with its message
        raise
    try:
        return _run(args, jobs, timeout)
    except ArgumentError as e:
        print(f"gemmlab: {e}", file=sys.stderr)
        return 2
    except GemmlabError as e:
        print(f"gemmlab: {e}", file=sys.stderr)
        return 1


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _shape_key(job) -> str:
    M, N, K = job["M"], job["N"], job["K"]
    return str(M) if M == N == K else f"{M}x{N}x{K}"


def _run(args, jobs, timeout) -> int:
    from . import ncu as ncu_mod
    from . import profile

    if args.model_only:
        out = []
        for j in jobs:
            m = profile.model_side(j["stage"], j["M"], j["N"], j["K"], j["layout"], j.get("config"))
            out.append({"stage": j["stage"], "shape": [j["M"], j["N"], j["K"]], "layout": j["layout"], "model": m})
        if args.json:
            emit_json(out if len(out) > 1 else out[0])
        else:
            for r in out:
                rows, _ = profile.compare(r["model"], {"quantities": {}})
                res = {**r, "name": r["model"].get("name"), "kernel": r["model"].get("kernel"), "rows": rows}
                print(profile.format_text(res))
        return 0

    raw_text = None
    ncu = None
    if args.from_raw:
        with open(args.from_raw) as f:
            raw_text = f.read()
    else:
        ncu = ncu_mod.find_ncu()
        if ncu is None:
            raise profile.ProfileError(ncu_mod.NCU_MISSING)
        from ..cli import need_gpu

        need_gpu()

    groups: dict = {}
    for j in jobs:
        groups.setdefault(_shape_key(j), []).append(j)
    t0 = time.time()
    all_results, raw_all, problems_all = [], [], []
    prov = profile.provenance(ncu) if ncu else {"from_raw": os.path.abspath(args.from_raw)}
    if raw_text is not None:   # a capture: its launches in order, every job at once
        results, raw_all, problems_all = profile.profile(jobs, None, raw_text=raw_text, log=_log)
        by_key = {}
        for j, r in zip(jobs, results):
            by_key.setdefault(_shape_key(j), []).append(r)
        per_group = [(k, by_key[k], [], []) for k in groups]
        all_results = results
    else:
        per_group = []
        for key, group in groups.items():
            _log(f"profile: {len(group)} run(s) at {key} in one ncu session ({ncu})")
            results, texts, problems = profile.profile(group, ncu, timeout=timeout, log=_log)
            per_group.append((key, results, texts, problems))
            all_results += results
            raw_all += texts
            problems_all += problems
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for key, results, texts, problems in per_group:
            doc = {"schema": profile.SCHEMA, "provenance": prov, "problems": problems, "results": results}
            path = os.path.join(args.out, f"profile-{key}.json")
            profile.save(doc, path)
            if texts:
                with open(os.path.join(args.out, f"ncu-raw-{key}.csv"), "w") as f:
                    f.write("".join(_csv_only(t) for t in texts))
            _log(f"profile: wrote {path}")
    if args.save_raw and ncu:
        with open(args.save_raw, "w") as f:
            f.write("".join(_csv_only(t) for t in raw_all))
        _log(f"profile: wrote ncu's CSV to {args.save_raw}")
    for p in dict.fromkeys(problems_all):
        _log(f"profile: ncu said: {p}")
    if args.json:
        emit_json(all_results if len(all_results) > 1 else all_results[0])
    else:
        for r in all_results:
            print(profile.format_text(r))
            print()
        if len(all_results) > 1:
            print(profile.format_markdown(all_results))
    if ncu:
        _log(f"profile: {len(jobs)} run(s) in {time.time() - t0:.0f} s")
    failed = [r for r in all_results if r.get("error")]
    return 1 if failed and len(failed) == len(all_results) else 0


def _csv_only(text: str) -> str:
    """ncu's CSV table(s) from a session's output, without the program's and ncu's other lines."""
    lines, keep = [], False
    for line in text.splitlines():
        if line.startswith('"ID"'):
            keep = True
        if keep and line.startswith('"'):
            lines.append(line)
    return "\n".join(lines) + ("\n" if lines else "")
