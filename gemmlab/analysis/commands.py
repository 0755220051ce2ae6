"""``explain`` (the models of analysis/ for one stage, no GPU needed), ``choose`` (what
stage="auto" picks for a shape on a GPU, and why; no GPU needed) and ``bank-probe`` (the bank
model against ncu on the GPU)."""
from __future__ import annotations

from ..cli import emit_json, parse_config, positive_int


def register(sub) -> None:
    p = sub.add_parser("explain", help="traffic, intensity, occupancy, waves, shared-memory banks and the "
                                       "predicted bound of a stage (no GPU needed)")
    p.add_argument("stage", help="a stage id or name (gemmlab stages lists them)")
    p.add_argument("--config", help="KEY=VALUE,... overriding the stage's defaults")
    p.add_argument("--size", default="4096", help="M = N = K of the modelled problem (default 4096)")
    p.add_argument("--arch", default="sm_90", help="the target (default sm_90; the models have tables for "
                                                   "sm_90, sm_80, sm_86 and sm_89)")
    p.add_argument("--sms", default=None, help="number of SMs (default: the arch table's, 132 on sm_90)")
    p.add_argument("--bank-model", choices=("notes", "hardware"), default=None,
                   help="shared-memory bank rules: 'hardware' (what the H200 measures: results/h200/"
                        "bank_probe.json) or 'notes' (the notes' merging rules, 000 §8); default: "
                        "$GEMMLAB_BANK_MODEL if set, else hardware")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("choose", help="what stage='auto' picks for a shape on a GPU (its tuned tables and waves "
                                      "model) and why, and the kernel that then runs (no GPU needed)",
                       description="gemmlab choose SPEC: for each dense problem (contiguous operands, D row-major, "
                                   "as torch.mm sees them) the choice of stage='auto' on the named GPU, the step "
                                   "that made it (tuned bucket, nearest tuned neighbours, the waves model, skinny, "
                                   "tensor cores), the kernel the plan runs, and the model's best predictions.")
    p.add_argument("shapes", metavar="SPEC", help="comma-separated shapes MxNxK or MxNxKxBATCH, each with an "
                                                  "optional :LAYOUT (4096x768x768:nt), or a suite (wide, heldout, ...)")
    p.add_argument("--layout", choices=("nn", "nt", "tn", "tt"), default="nn",
                   help="the layout of entries that do not give their own (default nn): n row-major, t column-major")
    p.add_argument("--gpu", default="NVIDIA H200", help="the GPU whose tuned tables are read (default NVIDIA H200)")
    p.add_argument("--arch", default="sm_90", help="its compute capability, sm_NN (default sm_90)")
    p.add_argument("--sms", default="132", help="its number of SMs (default 132)")
    p.add_argument("--compiler", default=None, help="the compiler of a user's tuning database to read, e.g. "
                                                    "nvrtc-13.0 (default: this machine's, as the runtime reads it; "
                                                    "the shipped tables match on GPU and arch only)")
    p.add_argument("--precision", choices=("ieee", "tf32", "tf32x3"), default="ieee",
                   help="as gemm(precision=...) (default ieee)")
    p.add_argument("--top", default="3", help="the model's best predictions shown next to the choice (default 3)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_choose)

    p = sub.add_parser("bank-probe", help="measure shared-memory wavefronts per access pattern with ncu and set "
                                          "them against the bank model (GPU + ncu)")
    p.add_argument("--out", required=True, help="directory for bank_probe.json and bank_probe.txt")
    p.add_argument("--patterns", help="comma-separated pattern names (default: all)")
    p.add_argument("--isolate", action="store_true", help="run every pattern in its own ncu session")
    p.add_argument("--no-stages", action="store_true", help="leave out the stages' own patterns")
    p.set_defaults(func=cmd_bank_probe)


def cmd_explain(args) -> int:
    from ..cli import arch_arg, stage_arg
    from . import explain, occupancy

    size = positive_int("--size", args.size)
    sms = None if args.sms is None else positive_int("--sms", args.sms)
    spec = stage_arg(args.stage, "explain")
    config = parse_config(args.config)
    cfg = spec.config(config)  # ConfigError (exit 2) names the key
    arch = arch_arg(args.arch, spec, cfg, known=tuple(occupancy.ARCHES))
    rep = explain.report(spec.id, config, size, arch, args.bank_model, sms)
    if args.json:
        emit_json(rep)
    else:
        print(explain.format_text(rep))
    return 0


def cmd_choose(args) -> int:
    from ..bench import suites
    from ..cli import usage_error
    from ..stages import arch_number
    from . import choose

    sms = positive_int("--sms", args.sms)
    top = positive_int("--top", args.top, minimum=0)
    try:
        arch_number(args.arch)
    except ValueError:
        usage_error(f"--arch {args.arch!r}: expected sm_NN, e.g. sm_90")
    try:
        entries = suites.parse_entries(args.shapes)
    except suites.ShapeError as e:
        usage_error(f"SPEC: {e}")
    reps = [choose.report(M, N, K, batch, layout or args.layout, gpu_name=args.gpu, arch=args.arch.strip(), sms=sms,
                          precision=args.precision, top=top, compiler=args.compiler)
            for M, N, K, batch, layout in entries]
    if args.json:
        emit_json(reps)
    else:
        print("\n\n".join(choose.format_text(r) for r in reps))
    return 0


def cmd_bank_probe(args) -> int:
    from ..cli import need_gpu, usage_error
    from . import bank_probe

    if args.patterns:  # the arguments first, then the GPU
        known = {p.name for p in bank_probe.all_patterns(stages=not args.no_stages)}
        unknown = sorted(set(t.strip() for t in args.patterns.split(",")) - known)
        if unknown:
            usage_error(f"--patterns: unknown {', '.join(unknown)}; python -m gemmlab.analysis.bank_probe --list "
                        "lists the patterns")
    need_gpu()
    argv = ["--out", args.out]
    if args.patterns:
        argv += ["--patterns", args.patterns]
    if args.isolate:
        argv.append("--isolate")
    if args.no_stages:
        argv.append("--no-stages")
    return bank_probe.main(argv)
