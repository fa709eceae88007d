"""Itanium C++ demangling for ``inspect --symbols`` and guard messages, cached and crash-proof.

Calls the system's ``abi::__cxa_demangle`` (libstdc++ or libc++, loaded by its usual soname)
through ctypes with one reused output buffer — the function the ``cxxfilt`` package wraps,
without its ``ldconfig`` run at import (``ctypes.util.find_library``: 25 ms of every start-up)
or its per-call wrapping. ``tests/unit/test_demangle.py`` holds it to cxxfilt's answers. With no
C++ runtime to load, names stay as they are: demangling is a nicety, not a requirement.

Names that are not Itanium-mangled (C names, MSVC ``?…`` names, garbage from a hostile file)
demangle to ``None``: the caller shows the raw name. Mach-O adds a leading ``_`` to every name,
so ``__Z…`` is tried without it.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from collections.abc import Iterable

MAX_NAME = 4096  # longer "names" are not worth a demangler call (and bound its work)
# the C++ runtime by its usual soname, per platform (no ldconfig / compiler probing)
_RUNTIMES = {
    "darwin": ("libc++.1.dylib", "libc++.dylib"),
    "linux": ("libstdc++.so.6", "libc++.so.1"),
}


class _Direct:
    """``__cxa_demangle(name, buf, &len, &status)`` with a buffer it may grow (``realloc``)."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        fn = getattr(lib, "__cxa_demangle")  # (a literal would be name-mangled in a class)
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self._fn = fn
        self._len = ctypes.c_size_t(0)
        self._status = ctypes.c_int(0)
        self._buf: int | None = None  # owned by the C++ runtime's malloc; grown by it
        self._lock = threading.Lock()  # the buffer is shared: one call at a time

    def __call__(self, raw: str) -> str | None:
        with self._lock:
            out = self._fn(raw.encode(), self._buf,
                           ctypes.byref(self._len), ctypes.byref(self._status))
            if self._status.value != 0 or not out:
                return None
            self._buf = out  # the runtime may have reallocated it
            return ctypes.string_at(out).decode()  # like cxxfilt: bad UTF-8 raises


def _load_direct() -> _Direct | None:
    for name in _RUNTIMES.get(sys.platform, ()):
        try:
            return _Direct(ctypes.CDLL(name))
        except (OSError, AttributeError):
            continue
    return None


@functools.cache
def _impl() -> _Direct | None:
    return _load_direct()


@functools.lru_cache(maxsize=1 << 17)
def demangle(name: str) -> str | None:
    """The demangled form of an Itanium-mangled name, else ``None`` (never raises)."""
    raw = name[1:] if name.startswith("__Z") else name
    if not raw.startswith("_Z") or len(raw) > MAX_NAME or "\0" in raw:
        return None
    impl = _impl()
    if impl is None:
        return None
    try:
        out = impl(raw)
    except Exception:  # bad UTF-8 in or out, or anything a broken name provokes
        return None
    return out if out is not None and out != raw else None


def demangle_many(names: Iterable[str]) -> dict[str, str | None]:
    """Batch form: each distinct name demangled once."""
    return {n: demangle(n) for n in dict.fromkeys(names)}
