"""CMake's quoting: a value written into a CMake file reads back as exactly that value.

Every CMake text prebake writes (an asset's config files, a step program's cache script) quotes
with these, so it lives beside the CMake module prebake ships, below everything that writes one.
"""

from __future__ import annotations

# inside a quoted argument: the escapes that keep a value one literal string ('${' would
# expand a variable, '"' end the argument, a backslash escape what follows; a ';' stays: a
# quoted argument is one value, and '\\;' would be kept with its backslash)
_QUOTED_ESCAPES = {"\\": "\\\\", '"': '\\"', "$": "\\$", "\n": "\\n",
                   "\r": "\\r", "\t": "\\t"}


def cmake_escape(value: str) -> str:
    """``value`` escaped for the inside of a CMake quoted argument (no quotes added)."""
    return "".join(_QUOTED_ESCAPES.get(c, c) for c in value)


def cmake_quote(value: str) -> str:
    """``value`` as one CMake quoted argument, read back as exactly ``value``."""
    return f'"{cmake_escape(value)}"'
