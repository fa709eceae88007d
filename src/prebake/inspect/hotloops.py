"""The readers' hot loops, imported in one place: ``scan``.

``scan`` is the C extension ``_scan.c`` where setup.py built it, and where it could not (no
compiler or no Python headers) ``prebake.inspect.hotloops_py``, the plain Python reference the C
functions are held to (tests/unit/test_scan.py). Callers use ``hotloops.scan.<function>``, so
that a test or the benchmark can put either in its place.
"""

from __future__ import annotations

__all__ = ["BUILT", "scan"]

try:
    from prebake.inspect import _scan as scan

    BUILT = True
except ImportError:  # pragma: no cover - a build without a C compiler
    from prebake.inspect import hotloops_py as scan  # type: ignore[no-redef]

    BUILT = False
