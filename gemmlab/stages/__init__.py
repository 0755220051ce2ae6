"""The stage registry: every ``sNN_name.py`` in this folder that defines ``STAGE``."""
from __future__ import annotations

import importlib
import pkgutil
import re

from ..errors import ConfigError
from .base import Param, Problem, StageSpec

_STAGE_FILE = re.compile(r"^s\d\d[a-z]?_\w+$")
_registry: dict[str, StageSpec] | None = None
# Kernels that are not rungs of the ladder but that the dispatcher uses (``gemm(stage=...)`` finds
# them too; ``all_stages()`` and the ladder do not list them): module name -> its STAGE.
EXTRA_MODULES = ("skinny",)
_extras: dict[str, StageSpec] | None = None


def _load() -> dict[str, StageSpec]:
    global _registry
    if _registry is None:
        found = {}
        for mod in pkgutil.iter_modules(__path__):
            if _STAGE_FILE.match(mod.name) or mod.name == "tuned":
                m = importlib.import_module(f"{__name__}.{mod.name}")
                spec = getattr(m, "STAGE", None)
                if spec is None:
                    continue
                if mod.name != "tuned" and mod.name != f"{spec.id}_{spec.name}":
                    raise RuntimeError(f"stage file {mod.name}.py declares {spec.id}_{spec.name}")
                found[spec.id] = spec
        _registry = dict(sorted(found.items(), key=lambda kv: (kv[0] == "tuned", kv[0])))
    return _registry


def all_stages() -> list[StageSpec]:
    return list(_load().values())


def _extra_map() -> dict[str, StageSpec]:
    global _extras
    if _extras is None:
        mods = [importlib.import_module(f"{__name__}.{name}") for name in EXTRA_MODULES]
        _extras = {m.STAGE.id: m.STAGE for m in mods}
    return _extras


def extra_stages() -> list[StageSpec]:
    """The dispatcher's kernels outside the ladder (e.g. ``skinny`` for M or N <= 16)."""
    return list(_extra_map().values())


def get(stage_id: str) -> StageSpec:
    reg, extras = _load(), _extra_map()
    for table in (reg, extras):
        if stage_id in table:
            return table[stage_id]
    by_name = {s.name: s for s in (*reg.values(), *extras.values())}
    if stage_id in by_name:
        return by_name[stage_id]
    raise ConfigError(f"unknown stage {stage_id!r}; stages are {', '.join([*reg, *extras])} (or 'auto')")


__all__ = ["Param", "Problem", "StageSpec", "all_stages", "extra_stages", "get"]
