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


def every_stage() -> list[StageSpec]:
    """The ladder's stages, then the dispatcher's other kernels: everything ``get`` finds."""
    return [*_load().values(), *_extra_map().values()]


def stage_ids() -> list[str]:
    return [s.id for s in every_stage()]


def get(stage_id: str) -> StageSpec:
    reg, extras = _load(), _extra_map()
    for table in (reg, extras):
        if stage_id in table:
            return table[stage_id]
    by_name = {s.name: s for s in (*reg.values(), *extras.values())}
    if stage_id in by_name:
        return by_name[stage_id]
    raise ConfigError(f"unknown stage {stage_id!r}; stages are {', '.join([*reg, *extras])} (or 'auto')")


# What makes a stage need a newer GPU, read from the SASS its spec expects: opcode prefix -> feature.
_FEATURES = (("HGMMA", "wgmma"), ("UTMA", "TMA"), ("UBLKCP", "TMA"), ("LDGSTS", "cp.async"))


def arch_number(arch: str) -> int:
    """'sm_90a' -> 90, 'sm_100f' -> 100; ValueError when ``arch`` is not of the form sm_NN."""
    m = re.fullmatch(r"sm_(\d+)[af]?", arch.strip())
    if not m:
        raise ValueError(f"{arch!r} is not an arch of the form sm_90")
    return int(m.group(1))


def requirement(spec: StageSpec, cfg: dict | None = None) -> str:
    """The lowest arch ``spec`` runs on and why, e.g. 'sm_90 (TMA)' or 'sm_90 (wgmma, compiled for
    sm_90a)': from its ``min_cc``, ``extra["requires"]`` or else the features its expected SASS
    uses, and the target it compiles for on that arch."""
    need = f"sm_{spec.min_cc}"
    why = (spec.extra or {}).get("requires")
    if not why:
        ops = tuple(spec.sass) + tuple(spec.sass_scalar)
        why = next((f for prefix, f in _FEATURES if any(op.startswith(prefix) for op in ops)), None)
    parts = [why] if why else []
    try:
        target = spec.compile_arch(spec.default_config if cfg is None else cfg, need)
    except Exception:  # a spec that cannot say: leave it out
        target = need
    if target != need:
        parts.append(f"compiled for {target}")
    return need + (f" ({', '.join(parts)})" if parts else "")


__all__ = ["Param", "Problem", "StageSpec", "all_stages", "arch_number", "every_stage", "extra_stages", "get",
           "requirement", "stage_ids"]
