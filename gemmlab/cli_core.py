"""Commands that need no GPU: stages, sass, info."""
from __future__ import annotations

import importlib.metadata as md
import platform
import sys

from . import device
from .stages import all_stages, get as get_stage
from .cli import emit_json, parse_config


def register(sub) -> None:
    p = sub.add_parser("stages", help="list the stages of the ladder")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_stages)

    p = sub.add_parser("sass", help="compile a stage and inspect its SASS (no GPU needed)")
    p.add_argument("stage")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--config", help="KEY=VALUE,... overriding the stage's defaults")
    p.add_argument("--scalar", action="store_true", help="inspect the scalar (unaligned) instantiation")
    p.add_argument("--dump", action="store_true", help="print the whole disassembly")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sass)

    p = sub.add_parser("info", help="versions, GPU and cache directory")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_info)


def cmd_stages(args) -> int:
    rows = [s.describe() for s in all_stages()]
    if args.json:
        emit_json(rows)
        return 0
    w = max(len(r["id"]) for r in rows)
    wn = max(len(r["name"]) for r in rows)
    for r in rows:
        print(f"{r['id']:<{w}}  {r['name']:<{wn}}  {r['adds']}  [{r['notes']}]")
    return 0


def sass_report(stage_id: str, arch: str = "sm_90", config=None, scalar=False) -> dict:
    from .analysis import sass
    from .api import kernel_for

    spec = get_stage(stage_id)
    cfg = spec.config(config)
    variants = spec.variants(cfg)
    variant = variants[-1] if scalar else variants[0]
    ck = kernel_for(spec, cfg, variant, arch)
    info = sass.inspect(ck.cubin, ck.name)
    return {"stage": spec.id, "arch": ck.arch, "kernel": ck.name, "config": cfg, "variant": variant,
            **info, "_cubin": ck.cubin}


def cmd_sass(args) -> int:
    from .analysis import sass

    rep = sass_report(args.stage, args.arch, parse_config(args.config), args.scalar)
    cubin = rep.pop("_cubin")
    if args.json:
        emit_json(rep)
        return 0
    if args.dump:
        print(sass.disassemble(cubin))
    print(f"{rep['stage']} {rep['kernel']} ({rep['arch']})")
    print(f"  registers {rep['registers']}, shared {rep['shared_bytes']} B static, local {rep['local_bytes']} B, "
          f"stack {rep['stack_bytes']} B")
    mix = rep["mix"]
    print("  mix: " + ", ".join(f"{k} {v}" for k, v in sorted(mix.items(), key=lambda kv: -kv[1]) if k != "total")
          + f" (of {mix.get('total', 0)} instructions)")
    if rep["main_loop_instructions"]:
        loop_mix = ", ".join(f"{k} {v}" for k, v in sorted(rep["main_loop_mix"].items(), key=lambda kv: -kv[1]))
        print(f"  main loop {rep['main_loop_span'][0]}..{rep['main_loop_span'][1]}: {rep['main_loop_instructions']} "
              f"instructions, FFMA share {rep['main_loop_ffma_share']:.1%} ({loop_mix})")
    else:
        print("  main loop: no loop with FFMAs found (fully unrolled?)")
    print(f"  FFMA operands ({rep['register_stats_scope']}): .reuse share {rep['reuse_share']:.1%} "
          f"(served from the reuse cache {rep['reuse_hit_share']:.1%}), register-bank conflicts "
          f"{rep['reg_bank_conflicts']} FFMAs ({rep['reg_bank_conflict_cycles']} extra cycles)")
    return 0


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
