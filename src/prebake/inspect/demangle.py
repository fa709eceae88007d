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

MAX_NAME = 4096  # longer "names" are not worth a demangler call (and bound its work)
# the C++ runtime by its usual soname, per platform (no ldconfig / compiler probing)
_RUNTIMES = {
    "darwin": ("libc++.1.dylib", "libc++.dylib"),
    "linux": ("libstdc++.so.6", "libc++.so.1"),
}


class _Direct:
    """``__cxa_demangle(name, buf, &len, &status)`` into one buffer the C runtime may grow.

    The hot path of ``inspect --symbols`` (one call per distinct name, 80 000 for LLVM's
    archives), so the per-call Python work is kept to a minimum: ``call`` is a closure over
    locals (no attribute lookups), the length and status pointers are made once, the buffer
    is the C runtime's ``malloc`` (``realloc``'d by the demangler when a name does not fit)
    and the result is read through a ``c_char`` array over it (``.value`` stops at the NUL,
    in C) instead of ``ctypes.string_at``.
    """

    SIZE = 1 << 14  # bytes of the first buffer: longer demangled names make the runtime grow it

    def __init__(self, lib: ctypes.CDLL) -> None:
        # no argtypes: ctypes then passes the bytes, the c_void_p and the byref()s as they
        # are, a third cheaper per call than converting through declared argument types
        fn = lib["__cxa_demangle"]
        fn.restype = ctypes.c_void_p
        status = ctypes.c_int(0)
        statusp = ctypes.byref(status)
        first = _malloc(lib, self.SIZE)  # None: the runtime allocates on the first call
        buf = ctypes.c_void_p(first)
        length = ctypes.c_size_t(self.SIZE if first else 0)
        lengthp = ctypes.byref(length)
        view = (ctypes.c_char * self.SIZE).from_address(first) if first else None
        lock = threading.Lock()  # the buffer is shared: one call at a time

        def call(raw: str) -> str | None:
            nonlocal view
            with lock:
                out = fn(raw.encode(), buf, lengthp, statusp)
                if status.value or not out:
                    return None  # the buffer is left as it was
                if out != buf.value or view is None:  # grown (moved), or the first allocated
                    buf.value = out
                    view = (ctypes.c_char * max(1, length.value)).from_address(out)
                return view.value.decode()  # like cxxfilt: bad UTF-8 raises

        self.call = call
        # for ``fill``'s C loop, which calls the function itself (no ctypes call per name)
        self.address = ctypes.cast(fn, ctypes.c_void_p).value or 0


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
        out = impl.call(raw)
    except Exception:  # bad UTF-8 in or out, or anything a broken name provokes
        return None
    return out if out is not None and out != raw else None


def address() -> int:
    """The C++ runtime's ``__cxa_demangle`` address (0 when there is none): the C loop
    ``hotloops.scan.fill_demangled`` calls it directly, no ctypes call per name."""
    impl = _impl()
    return impl.address if impl is not None and impl.address else 0
