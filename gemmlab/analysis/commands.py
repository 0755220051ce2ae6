"""``explain`` (the models of analysis/ for one stage, no GPU needed) and ``bank-probe`` (the bank
model against ncu on the GPU)."""
from __future__ import annotations

import sys

from ..cli import emit_json, parse_config


def register(sub) -> None:
    p = sub.add_parser("explain", help="traffic, intensity, occupancy, waves, shared-memory banks and the "
                                       "predicted bound of a stage (no GPU needed)")
    p.add_argument("stage")
    p.add_argument("--config", help="KEY=VALUE,... overriding the stage's defaults")
    p.add_argument("--size", type=int, default=4096, help="M = N = K of the modelled problem (default 4096)")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--sms", type=int, default=None, help="number of SMs (default: the arch table's, 132 on sm_90)")
    p.add_argument("--bank-model", choices=("notes", "hardware"), default=None,
                   help="shared-memory bank rules: the notes' (default) or the hardware reading")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("bank-probe", help="measure shared-memory wavefronts per access pattern with ncu and set "
                                          "them against the bank model (GPU + ncu)")
    p.add_argument("--out", required=True, help="directory for bank_probe.json and bank_probe.txt")
    p.add_argument("--patterns", help="comma-separated pattern names (default: all)")
    p.add_argument("--isolate", action="store_true", help="run every pattern in its own ncu session")
    p.add_argument("--no-stages", action="store_true", help="leave out the stages' own patterns")
    p.set_defaults(func=cmd_bank_probe)


def cmd_explain(args) -> int:
    from . import explain

    if args.size <= 0:
        raise SystemExit("gemmlab: --size must be positive")
    try:
        rep = explain.report(args.stage, parse_config(args.config), args.size, args.arch, args.bank_model, args.sms)
    except ValueError as e:  # ConfigError included: say what was wrong, no traceback
        print(f"gemmlab: {e}", file=sys.stderr)
        return 1
    if args.json:
        emit_json(rep)
    else:
        print(explain.format_text(rep))
    return 0


def cmd_bank_probe(args) -> int:
    from ..cli import need_gpu
    from . import bank_probe

    need_gpu()
    argv = ["--out", args.out]
    if args.patterns:
        argv += ["--patterns", args.patterns]
    if args.isolate:
        argv.append("--isolate")
    if args.no_stages:
        argv.append("--no-stages")
    return bank_probe.main(argv)
