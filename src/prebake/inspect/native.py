"""The optional C extension (``_scan.c``), imported in one place.

``scan`` is None where setup.py could not build it (no compiler or no Python headers): the
readers and renderers then run their pure-Python loops, the reference the C ones are held to
(tests/unit/test_scan.py).
"""

from __future__ import annotations

__all__ = ["scan"]

try:
    from prebake.inspect import _scan as scan
except ImportError:  # pragma: no cover - a build without a C compiler
    scan = None  # type: ignore[assignment]  # tested for None before every use
