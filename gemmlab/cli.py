"""The command line: ``python -m gemmlab COMMAND`` (also installed as ``gemmlab``).

Commands live in small modules that each define ``register(subparsers)``; a command's handler
returns the exit code. The conventions every command follows:

- a bad argument is one line on stderr, ``gemmlab: `` then the argument and what would be valid,
  and exit status 2 (as argparse's own errors, which :class:`Parser` also prints as one line);
  handlers raise :class:`gemmlab.errors.ArgumentError` (``ConfigError`` is one) and ``main``
  prints it;
- arguments are checked before anything else, the GPU included;
- GPU commands then call :func:`need_gpu`: without a GPU they exit 2 with one line saying which
  commands work without one;
- other gemmlab errors (a compile failure, a failed run) exit 1 with the message.
"""
from __future__ import annotations

import argparse
import importlib
import json
import re
import sys

from . import device
from .errors import ArgumentError, GemmlabError, NoGPUError

COMMAND_MODULES = ("gemmlab.cli_core", "gemmlab.analysis.commands", "gemmlab.bench.commands",
                   "gemmlab.tune.commands", "gemmlab.analysis.profile_commands")
USAGE = 2  # exit status of a bad argument (argparse's)


class Parser(argparse.ArgumentParser):
    """argparse with its errors on one line: ``gemmlab: MESSAGE (see gemmlab CMD --help)``, exit 2."""

    def error(self, message):
        print(f"gemmlab: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(USAGE)


def usage_error(msg: str):
    """Raise the error of a bad argument: ``main`` prints ``gemmlab: msg`` and exits 2."""
    raise ArgumentError(msg)


def need_gpu() -> None:
    if not device.has_gpu():
        print(f"gemmlab: {device.NO_GPU_HINT}", file=sys.stderr)
        raise SystemExit(USAGE)


# ---- argument types: each check names the option and what would be valid -------------------------

def positive_int(option: str, value, minimum: int = 1) -> int:
    """``value`` as an int >= minimum, else the usage error naming ``option``."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        usage_error(f"{option} {value!r}: expected an integer >= {minimum}")
    if n < minimum:
        usage_error(f"{option} {n}: must be {'positive' if minimum == 1 else f'>= {minimum}'}")
    return n


def parse_config(text: str | None, option: str = "--config") -> dict | None:
    """'block_m=64,block_n=128' -> {'block_m': 64, 'block_n': 128}."""
    if not text:
        return None
    out = {}
    for item in text.split(","):
        if "=" not in item:
            usage_error(f"{option} {text!r}: expected KEY=VALUE,KEY=VALUE (e.g. block_m=64,block_n=128)")
        k, v = item.split("=", 1)
        try:
            out[k.strip()] = int(v)
        except ValueError:
            usage_error(f"{option} {k.strip()}={v!r}: values are integers")
    return out


AUTO = ("auto", "tuned")


def stage_arg(text: str, command: str):
    """The stage spec named by ``text`` for a command that compiles one kernel (sass, explain):
    any registered stage (the ladder's, s12/s13 and skinny included), by id or name."""
    from .stages import get, stage_ids

    t = str(text).strip()
    ids = ", ".join(stage_ids())
    if t in AUTO:
        usage_error(f"{command}: stage {t!r} is not one kernel (stage='auto' picks one per problem when gemmlab "
                    f"runs); name a stage: {ids}")
    try:
        return get(t)
    except ArgumentError:
        usage_error(f"{command}: unknown stage {t!r}; stages are {ids} (gemmlab stages lists them)")


def compilable_archs() -> list[int] | None:
    """The arch numbers the compiler builds for (NVRTC's list), or None when it cannot say (nvcc)."""
    from .jit import compiler

    if compiler._backend() != "nvrtc":
        return None
    try:
        from cuda.bindings import nvrtc

        err, archs = nvrtc.nvrtcGetSupportedArchs()
        return [int(a) for a in archs] if int(err) == 0 and archs else None
    except Exception:
        return None


def arch_arg(arch: str, spec=None, cfg=None, known: tuple | None = None) -> str:
    """Check ``--arch``: of the form sm_NN, one the compiler builds for, in ``known`` (when given:
    the archs a model has tables for) and new enough for ``spec``. Returns it stripped."""
    from .stages import arch_number, requirement

    a = str(arch).strip()
    archs = compilable_archs()
    listing = ", ".join(f"sm_{n}" for n in archs) if archs else "sm_80, sm_90, ..."
    try:
        n = arch_number(a)
    except ValueError:
        usage_error(f"--arch {arch!r}: expected sm_NN, e.g. sm_90; the compiler builds for {listing}")
    if archs is not None and n not in archs:
        from .jit.compiler import compiler_version

        usage_error(f"--arch {a}: {compiler_version().replace('nvrtc-', 'NVRTC ')} does not build for it; "
                    f"it builds for {listing}")
    if known is not None and a.rstrip("af") not in known:
        usage_error(f"--arch {a}: the models have tables for {', '.join(known)} only")
    if spec is not None and n < spec.min_cc:
        usage_error(f"--arch {a}: {spec.id} needs {requirement(spec, cfg)}")
    return a


def emit_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="gemmlab", description="The FP32 GEMM optimization ladder, from Python.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and name.startswith(e.name):  # that command group is not installed
                continue
            raise
        mod.register(sub)
    return p


def _one_line(e: BaseException) -> str:
    return re.sub(r"\s*\n\s*", "; ", str(e).strip())


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ArgumentError, NoGPUError) as e:  # a bad argument, ConfigError included; no GPU
        print(f"gemmlab: {_one_line(e)}", file=sys.stderr)
        return USAGE
    except GemmlabError as e:
        print(f"gemmlab: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


def console_main() -> None:
    """The ``gemmlab`` console script: like ``python -m gemmlab``."""
    import os

    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # see __main__.py


if __name__ == "__main__":
    console_main()
