"""The command line: ``python -m gemmlab COMMAND`` (also installed as ``gemmlab``).

Commands live in small modules that each define ``register(subparsers)``; a command's handler
returns the exit code. GPU commands call :func:`need_gpu` first: without a GPU they exit 2 with
one line saying which commands work without one.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys

from . import device

COMMAND_MODULES = ("gemmlab.cli_core", "gemmlab.analysis.commands", "gemmlab.bench.commands",
                   "gemmlab.tune.commands")


def need_gpu() -> None:
    if not device.has_gpu():
        print(f"gemmlab: {device.NO_GPU_HINT}", file=sys.stderr)
        raise SystemExit(2)


def parse_config(text: str | None) -> dict | None:
    """'block_m=64,block_n=128' -> {'block_m': 64, 'block_n': 128}."""
    if not text:
        return None
    out = {}
    for item in text.split(","):
        if "=" not in item:
            raise SystemExit(f"gemmlab: --config {text!r}: expected KEY=VALUE,KEY=VALUE")
        k, v = item.split("=", 1)
        try:
            out[k.strip()] = int(v)
        except ValueError:
            raise SystemExit(f"gemmlab: --config {k}={v!r}: values are integers") from None
    return out


def emit_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gemmlab", description="The FP32 GEMM optimization ladder, from Python.")
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


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from .errors import GemmlabError

    try:
        return int(args.func(args) or 0)
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
