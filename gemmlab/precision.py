"""``precision=``: which arithmetic a GEMM may use. The names follow Triton's ``input_precision``.

- ``"ieee"`` (the default): IEEE FP32 products and sums (FFMA): stages s01-s11 and skinny.
- ``"tf32"``: tensor cores on inputs rounded to TF32 (10 mantissa bits), FP32 sums: s12. Fast; a
  relative error of about 1e-4..1e-3.
- ``"tf32x3"``: FP32-accurate tensor-core GEMM (3xTF32 with promotion into FP32): s13.

The process-wide default is ``set_precision(...)``, else the environment variable
``GEMMLAB_PRECISION``, else ``"ieee"``. ``stage="auto"`` dispatches within the chosen precision; it
may run a more accurate stage where that is faster (a SIMT stage for a tiny tf32 problem).
"""
from __future__ import annotations

from . import env as _env
from .errors import GemmlabError

PRECISIONS = ("ieee", "tf32", "tf32x3")
_default: str | None = None


class PrecisionError(GemmlabError, ValueError):
    """An unknown precision, or a stage that does not compute at the precision asked for."""


def check(precision, arg: str = "precision") -> str:
    if precision not in PRECISIONS:
        raise PrecisionError(f"{arg}={precision!r}: expected one of {', '.join(map(repr, PRECISIONS))}")
    return precision


def set_precision(precision: str | None) -> None:
    """The process-wide default for calls that pass no ``precision=`` (None: back to
    GEMMLAB_PRECISION or "ieee")."""
    global _default
    _default = None if precision is None else check(precision)


_env_seen: tuple | None = None  # (GEMMLAB_PRECISION as stored, its precision): parsed once per value
_ENV_KEY = _env.key("GEMMLAB_PRECISION")


def get_precision() -> str:
    """The process default: set_precision's, else GEMMLAB_PRECISION's, else "ieee" (this runs on
    every stage="auto" call: the variable is read at a dict lookup's cost)."""
    global _env_seen
    if _default is not None:
        return _default
    raw = _env.raw(_ENV_KEY)
    if _env_seen is not None and _env_seen[0] == raw:
        return _env_seen[1]
    env = _env.text(raw)
    value = check(env.strip().lower(), "GEMMLAB_PRECISION") if env else "ieee"
    _env_seen = (raw, value)
    return value
