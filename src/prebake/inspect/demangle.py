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
    """``__cxa_demangle(name, buf, &len, &status)`` into one buffer the C runtime may grow.

    The hot path of ``inspect --symbols`` (one call per distinct name, 80 000 for LLVM's
    archives), so the per-call Python work is kept to a minimum: the length and status
    pointers are made once, the buffer is the C runtime's ``malloc`` (``realloc``'d by the
    demangler when a name does not fit) and the result is read through a ``c_char`` array
    over it (``.value`` stops at the NUL in C) instead of ``ctypes.string_at``.
    """

    SIZE = 1 << 14  # bytes of the first buffer: longer demangled names make the runtime grow it

    def __init__(self, lib: ctypes.CDLL) -> None:
        fn = getattr(lib, "__cxa_demangle")  # (a literal would be name-mangled in a class)
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                       ctypes.POINTER(ctypes.c_int)]
        self._fn = fn
        self._status = ctypes.c_int(0)
        self._statusp = ctypes.pointer(self._status)
        self._buf = _malloc(lib, self.SIZE)  # None: the runtime allocates on the first call
        self._len = ctypes.c_size_t(self.SIZE if self._buf else 0)
        self._lenp = ctypes.pointer(self._len)
        self._view: ctypes.Array[ctypes.c_char] | None = (
            (ctypes.c_char * self.SIZE).from_address(self._buf) if self._buf else None)
        self._lock = threading.Lock()  # the buffer is shared: one call at a time

    def __call__(self, raw: str) -> str | None:
        with self._lock:
            out = self._fn(raw.encode(), self._buf, self._lenp, self._statusp)
            if self._status.value or not out:
                return None  # the buffer is left as it was
            if out != self._buf or self._view is None:  # grown (moved) or first allocated
                self._buf = out
                self._view = (ctypes.c_char * max(1, self._len.value)).from_address(out)
            return self._view.value.decode()  # like cxxfilt: bad UTF-8 raises


def _malloc(lib: ctypes.CDLL, size: int) -> int | None:
    """A buffer from the C ``malloc`` the demangler ``realloc``s (libc's, through the runtime's
    own dependencies), or None to let the demangler allocate its first one."""
    try:
        malloc = lib.malloc
    except AttributeError:
        return None
    malloc.restype = ctypes.c_void_p
    malloc.argtypes = [ctypes.c_size_t]
    buf = malloc(size)
    return int(buf) if buf else None


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
    return demangle_once(name)


def demangle_once(name: str) -> str | None:
    """``demangle`` without its cache, for callers that keep their own (the renderers)."""
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
