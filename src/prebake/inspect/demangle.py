"""Itanium C++ demangling for ``inspect --symbols`` and guard messages, cached and crash-proof.

Uses ``cxxfilt`` (the system's ``abi::__cxa_demangle``). Names that are not Itanium-mangled
(C names, MSVC ``?…`` names, garbage from a hostile file) demangle to ``None``: the caller shows
the raw name. Mach-O adds a leading ``_`` to every name, so ``__Z…`` is tried without it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

MAX_NAME = 4096  # longer "names" are not worth a demangler call (and bound its work)


@functools.cache
def _impl() -> Any:
    try:
        import cxxfilt
    except Exception:  # no libstdc++/libc++ to load: demangling is a nicety, not a requirement
        return None
    return cxxfilt


@functools.lru_cache(maxsize=1 << 16)
def demangle(name: str) -> str | None:
    """The demangled form of an Itanium-mangled name, else ``None`` (never raises)."""
    raw = name[1:] if name.startswith("__Z") else name
    if not raw.startswith("_Z") or len(raw) > MAX_NAME or "\0" in raw:
        return None
    impl = _impl()
    if impl is None:
        return None
    try:
        out = impl.demangle(raw, external_only=True)
    except Exception:  # cxxfilt.InvalidName, or anything a broken name provokes
        return None
    return out if isinstance(out, str) and out != raw else None


def demangle_many(names: Iterable[str]) -> dict[str, str | None]:
    """Batch form: each distinct name demangled once."""
    return {n: demangle(n) for n in dict.fromkeys(names)}
