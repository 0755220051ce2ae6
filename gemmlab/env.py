"""Environment variables read on every call, at a dict lookup's cost: os.environ.get encodes the
name and decodes the value each time (about 1 µs); the mapping behind os.environ (bytes keys on
POSIX, kept current by os.environ's own setters) answers in tens of nanoseconds."""
from __future__ import annotations

import os

_DATA = getattr(os.environ, "_data", None)
_BYTES = os.name == "posix"


def key(name: str):
    """``name`` as the mapping's key (computed once by the caller)."""
    return name.encode() if _BYTES and _DATA is not None else name


def is_set(k) -> bool:
    """Whether the variable of key ``k`` is set."""
    return k in (_DATA if _DATA is not None else os.environ)


def raw(k):
    """The variable's value as stored (bytes on POSIX) or None; compare raw values, decode with
    :func:`text` only when one changed."""
    return (_DATA if _DATA is not None else os.environ).get(k)


def text(value) -> str | None:
    return value.decode(errors="surrogateescape") if isinstance(value, bytes) else value
