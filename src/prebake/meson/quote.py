"""Meson's quoting: a value written into a Meson file reads back as exactly that value.

A machine file (``prebake.toolchain.mesonfile``) holds Meson expressions: strings in single
quotes, arrays of them. Meson's lexer reads ``\\\\``, ``\\'`` and the C escapes (``\\n``,
``\\t``, ``\\r``) inside a string, and a raw newline ends the line: each is escaped here, every
other character is itself (a ``@`` in a machine file is not a substitution outside
``configure_file``).
"""

from __future__ import annotations

from collections.abc import Iterable

_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def meson_string(value: str) -> str:
    """``value`` as one Meson string literal."""
    return "'" + "".join(_ESCAPES.get(c, c) for c in value) + "'"


def meson_array(values: Iterable[str]) -> str:
    """``values`` as one Meson array of strings."""
    return "[" + ", ".join(meson_string(v) for v in values) + "]"
