"""stage="auto" on a device: the device's facts, then the heuristics' choice.

``choose(p, dev)`` reads what the choice needs to know about device ``dev`` (its SMs, clock and
compute capability as a ``heuristics.model.Gpu``; the identity of its tuned tables: GPU name,
arch and compiler version), once per device and process, and hands the kernel-level problem to
``gemmlab.heuristics.choose`` (docs/dispatch.md): tensor cores where the precision allows and it
pays, the skinny kernel, the tuned table (bucket, then nearest neighbours), the waves heuristic.
The stack: api -> dispatch -> heuristics -> plan -> stages -> jit.
"""
from __future__ import annotations

import functools

from . import heuristics
from .heuristics import model, table
from .plan import Choice
from .problem import Problem


@functools.lru_cache(maxsize=None)
def _gpu(dev: int):
    """(heuristics.model.Gpu, table identity) of device ``dev``."""
    from . import device
    from .jit.compiler import compiler_version

    info = device.info(dev)
    gpu = model.Gpu(sms=info.sms, clock_hz=(info.clock_khz or 1_980_000) * 1e3, cc=device.cc_number(info.arch))
    return gpu, table.identity(info.name, info.arch, compiler_version())


def choose(p: Problem, dev: int = 0, *, allow_workspace: bool = True, config=None,
           precision: str = "ieee") -> Choice:
    """The Choice for the kernel-level problem ``p`` on device ``dev``. ``config``: overrides
    applied to whatever stage is chosen (they must be legal for it). ``precision``: "ieee" (the
    SIMT ladder), "tf32" or "tf32x3" (tensor cores, where they pay; else the SIMT ladder, which
    is at least as accurate)."""
    gpu, ident = _gpu(dev)
    return heuristics.choose(p, gpu, ident, allow_workspace=allow_workspace, config=config, precision=precision)
