"""Commands that need no GPU: stages, sass, info."""
from __future__ import annotations

import importlib.metadata as md
import platform
import sys

from . import device
from .stages import get as get_stage
from .cli import arch_arg, emit_json, parse_config, stage_arg


def register(sub) -> None:
    p = sub.add_parser("stages", help="list the stages of the ladder and the dispatcher's other kernels")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_stages)

    p = sub.add_parser("sass", help="compile a stage and inspect its SASS (no GPU needed)")
    p.add_argument("stage", help="a stage id or name (gemmlab stages lists them)")
    p.add_argument("--arch", default="sm_90", help="the target to compile for (default sm_90)")
    p.add_argument("--config", help="KEY=VALUE,... overriding the stage's defaults")
    p.add_argument("--scalar", action="store_true", help="inspect the scalar (unaligned) instantiation")
    p.add_argument("--dump", action="store_true", help="print the whole disassembly")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sass)

    p = sub.add_parser("info", help="versions, GPU and cache directory")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_info)


def stage_rows() -> list[dict]:
    """``stages --json``: every stage ``gemm(stage=...)`` takes, the ladder's first. Each row is the
    spec's describe() ({id, name, adds, notes, ...}) plus "ladder" (a rung of the ladder, or a
    kernel only the dispatcher uses) and "needs" (the lowest arch and why)."""
    from .stages import all_stages, every_stage, requirement

    rungs = {s.id for s in all_stages()}
    return [{**s.describe(), "ladder": s.id in rungs, "needs": requirement(s)} for s in every_stage()]


def cmd_stages(args) -> int:
    rows = stage_rows()
    if args.json:
        emit_json(rows)
        return 0
    w = max(len(r["id"]) for r in rows)
    wn = max(len(r["name"]) for r in rows)

    def line(r):
        extra = [f"needs {r['needs']}"] if r["needs"] != "sm_70" else []
        if r.get("precision") not in (None, "ieee"):
            extra.append(f"precision {r['precision']}")
        if r.get("applies"):
            extra.append(f"stage='auto' runs it when {r['applies']}")
        return f"{r['id']:<{w}}  {r['name']:<{wn}}  {r['adds']}  [{r['notes']}]" + "".join(f"; {x}" for x in extra)

    for r in rows:
        if r["ladder"]:
            print(line(r))
    others = [r for r in rows if not r["ladder"]]
    if others:
        print("\nnot rungs of the ladder (stage='auto' uses them; gemm(stage=...), sass and explain take them):")
        for r in others:
            print(line(r))
    return 0


def shown_config(spec, cfg: dict) -> dict:
    """The config of the kernel that is compiled: a stage with auto keys (skinny) fills them in."""
    fill = getattr(spec, "report_config", None)
    return fill(cfg) if fill else cfg


def sass_report(stage_id, arch: str = "sm_90", config=None, scalar=False) -> dict:
    """``sass --json``: the stage's kernel compiled for ``arch`` and read back (no GPU)."""
    from .analysis import sass
    from .api import kernel_for

    spec = get_stage(stage_id) if isinstance(stage_id, str) else stage_id
    cfg = spec.config(config)
    variants = spec.variants(cfg)
    variant = variants[-1] if scalar else variants[0]
    ck = kernel_for(spec, cfg, variant, arch)
    info = sass.inspect(ck.cubin, ck.name)
    return {"stage": spec.id, "arch": ck.arch, "kernel": ck.name, "config": shown_config(spec, cfg),
            "variant": variant, **info, "dynamic_shared_bytes": spec.smem_bytes(cfg, variant), "_cubin": ck.cubin}


def _kb(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n} B ({n / 1024:.1f} KB)"


def cmd_sass(args) -> int:
    from .analysis import sass

    spec = stage_arg(args.stage, "sass")
    config = parse_config(args.config)
    cfg = spec.config(config)
    arch = arch_arg(args.arch, spec, cfg)
    rep = sass_report(spec, arch, config, args.scalar)
    cubin = rep.pop("_cubin")
    if args.json:
        emit_json(rep)
        return 0
    if args.dump:
        print(sass.disassemble(cubin))
    print(sass_text(rep))
    return 0


def sass_text(rep: dict) -> str:
    """The text ``gemmlab sass`` prints for a sass_report."""
    lines = [f"{rep['stage']} {rep['kernel']} ({rep['arch']})"]
    dyn = rep.get("dynamic_shared_bytes") or 0
    lines.append(f"  registers {rep['registers']}, shared {rep['shared_bytes']} B static + {_kb(dyn)} dynamic, "
                 f"local {rep['local_bytes']} B, stack {rep['stack_bytes']} B")
    mix = rep["mix"]
    lines.append("  mix: " + ", ".join(f"{k} {v}" for k, v in sorted(mix.items(), key=lambda kv: -kv[1])
                                      if k != "total") + f" (of {mix.get('total', 0)} instructions)")
    if rep["main_loop_instructions"]:
        loop_mix = ", ".join(f"{k} {v}" for k, v in sorted(rep["main_loop_mix"].items(), key=lambda kv: -kv[1]))
        lines.append(f"  main loop {rep['main_loop_span'][0]}..{rep['main_loop_span'][1]}: "
                     f"{rep['main_loop_instructions']} instructions, FFMA share {rep['main_loop_ffma_share']:.1%} "
                     f"({loop_mix})")
    else:
        lines.append("  main loop: no loop with FFMAs found (fully unrolled?)")
    lines.append(f"  FFMA operands ({rep['register_stats_scope']}): .reuse share {rep['reuse_share']:.1%} "
                 f"(served from the reuse cache {rep['reuse_hit_share']:.1%}), register-bank conflicts "
                 f"{rep['reg_bank_conflicts']} FFMAs ({rep['reg_bank_conflict_cycles']} extra cycles)")
    return "\n".join(lines)


def _version(pkg: str) -> str | None:
    try:
        return md.version(pkg)
    except md.PackageNotFoundError:
        return None


def info_dict() -> dict:
    from . import __version__
    from .jit import default_cache_dir
    from .jit.compiler import compiler_version

    vers = {"gemmlab": __version__, "python": platform.python_version()}
    for pkg in ("numpy", "cuda-core", "cuda-bindings", "nvidia-cuda-nvrtc", "torch", "cupy-cuda13x",
                "cupy-cuda12x", "triton", "matplotlib"):
        v = _version(pkg)
        if v:
            vers[pkg] = v
    try:
        vers["compiler"] = compiler_version()
    except Exception as e:  # report, do not fail
        vers["compiler"] = f"unavailable: {e}"
    gpus = []
    if device.has_gpu():
        for i in range(device.device_count()):
            gpus.append(device.info(i).as_dict())
        try:
            from cuda.bindings import driver

            err, v = driver.cuDriverGetVersion()
            vers["cuda_driver"] = f"{v // 1000}.{(v % 1000) // 10}"
        except Exception:
            pass
    return {"versions": vers, "gpus": gpus, "cache_dir": str(default_cache_dir())}


def cmd_info(args) -> int:
    d = info_dict()
    if args.json:
        emit_json(d)
        return 0
    for k, v in d["versions"].items():
        print(f"{k:>18}: {v}")
    print(f"{'cache_dir':>18}: {d['cache_dir']}")
    if not d["gpus"]:
        print(f"{'gpu':>18}: none ({device.NO_GPU_HINT})")
    for g in d["gpus"]:
        print(f"{'gpu ' + str(g['index']):>18}: {g['name']} {g['arch']}, {g['sms']} SMs, "
              f"L2 {g['l2_bytes'] >> 20} MB, smem/block {g['smem_per_block_optin'] >> 10} KB")
    return 0
