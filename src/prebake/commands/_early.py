"""``inspect``'s pool, forked before the command line is parsed and before most of prebake
is imported.

``prebake.cli`` calls ``prestart`` first thing, so this module imports nothing but ``os`` at
its top: when the command line names several paths, the standard modules both
sides need are imported and one seed process is forked; it imports the readers, compiles the
probe and loads ``_inspect_work`` while the parent, on the other core, imports argparse and
the command, builds its parser and finds the binaries. The workers the seed forks start warm.

The command line is only scanned here. If it turns out to be wrong (a usage error,
``--help``), ``run`` never comes and the pool, never given work, is ended at exit.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence

    from prebake.commands._pool import Pool

# the options of ``inspect`` and the global ones that take a value (the next token)
_VALUED = ("--allowed-signers", "-C", "--workspace")
_HOST_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}

_early: list[Pool] = []  # the pool ``prestart`` forked, for ``run`` to take


def prestart(args: Sequence[str]) -> None:
    """Fork the pool now when ``args`` (the command's own) certainly ask for several results.

    The standard modules both sides need are imported first, once: forked after them, the
    seed shares their pages instead of importing them again on the other core (20 ms of CPU
    that a busy machine does not give back in parallel)."""
    results, symbols = scan(args)
    if results > 1:
        import contextlib  # noqa: F401 (imported for both processes)

        _inspect_later()
        import dataclasses  # noqa: F401
        import pathlib  # noqa: F401
        import typing  # noqa: F401
    pool = pool_for(results, symbols)
    if pool is not None:
        import atexit

        atexit.register(pool.close)
        _early.append(pool)


def _inspect_later() -> None:
    """Let ``dataclasses`` import a stand-in for the standard ``inspect`` module.

    ``import dataclasses`` costs 13 ms, 8 of them importing ``inspect`` (with ``ast``, ``dis``
    and ``tokenize``), which Python 3.11's dataclasses uses only to write a docstring for a
    class that has none: every dataclass this command makes has one. The stand-in imports
    the real module the first time anything asks it for a name, and serves its names from
    then on, so nothing can tell the difference but the time.
    """
    import sys

    if "inspect" in sys.modules or "dataclasses" in sys.modules:
        return
    import types

    class _Later(types.ModuleType):
        def __getattr__(self, name: str) -> object:
            if sys.modules.get("inspect") is self:
                del sys.modules["inspect"]
            import inspect as real  # the real module, from now on in sys.modules

            self.__dict__.update(real.__dict__)
            return getattr(real, name)

    later = _Later("inspect")
    later.__spec__ = None  # the import system asks whether it is still initialising
    sys.modules["inspect"] = later


def take() -> Pool | None:
    """The pool ``prestart`` forked, if any (once)."""
    return _early.pop() if _early else None


def pool_for(results: int, symbols: bool) -> Pool | None:
    """A pool forked now for ``results`` results; None where one does not pay (one result,
    one core) or cannot fork (``ordered_map`` then serves)."""
    from prebake.commands._pool import Pool, forks, usable_cores

    cores = usable_cores()
    if results > 1 and cores > 1 and forks():
        return Pool(min(cores, results), warm=_Warm(symbols))
    return None


def scan(rest: Sequence[str]) -> tuple[int, bool]:
    """How many paths the arguments of ``inspect`` (what follows the command's name) name,
    and whether ``--symbols`` is one of them."""
    paths, symbols, i = 0, False, 0
    while i < len(rest):
        tok = rest[i]
        if tok == "--":
            paths += len(rest) - i - 1
            break
        if tok in _VALUED:
            i += 1
        elif tok == "--symbols":
            symbols = True
        elif not tok.startswith("-") or tok == "-":
            paths += 1
        i += 1
    return paths, symbols


class _Warm:
    """The seed's warm-up (a class, not ``functools.partial``: nothing to import for it)."""

    def __init__(self, symbols: bool) -> None:
        self.symbols = symbols

    def __call__(self) -> None:
        """What a worker needs before it knows its targets: ``_inspect_work`` (its job and
        targets arrive pickled), the readers of this machine's own binaries
        (archives, ELF), the summary's probe for its arch, the renderer and, for symbols,
        the demangler. Anything else is loaded on first use, as in a serial run."""
        import prebake.commands._inspect_work  # noqa: F401 (imported to be loaded)
        from prebake.inspect import elf, registry, render  # noqa: F401

        for name in ("archive", "elf"):
            registry.module_readers(name)
        arch = _HOST_ARCH.get(os.uname().machine.lower())
        if arch is not None:
            elf.warm(arch)
        if self.symbols:
            from prebake.inspect.demangle import demangle_once

            demangle_once("_Z1fv")  # loads the C++ runtime's demangler
