"""Line numbers for TOML key paths, because ``tomllib`` returns values without positions.

A light scan of the text is enough for error messages: table headers, ``key =`` lines and
``key =`` pairs inside inline tables (also across lines). It never decides validity — it only
points the user at a line.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")
_ASSIGN = re.compile(r"^\s*((?:[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')"
                     r"(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*'))*)\s*=")
_INLINE_KEY = re.compile(r"[{,]\s*([A-Za-z0-9_\-]+|\"[^\"]*\")\s*=")
_INDEX = re.compile(r"\[[^\]]*\]")


def _dotted(raw: str) -> list[str]:
    parts = re.findall(r"\"[^\"]*\"|'[^']*'|[^.\s]+", raw)
    return [p[1:-1] if p[:1] in "\"'" else p for p in parts]


def _strip_strings(line: str) -> str:
    """Blank out string contents so braces and '=' inside them are not read as structure."""
    return re.sub(r"\"(?:[^\"\\]|\\.)*\"|'[^']*'", lambda m: '"' + "_" * (len(m[0]) - 2) + '"',
                  line)


class LineIndex:
    """Map of dotted key path -> first line (1-based) where the text declares it."""

    def __init__(self, text: str) -> None:
        self.lines: dict[str, int] = {}
        table: list[str] = []
        inline: list[str] | None = None  # the key path of an unclosed inline table
        depth = 0
        for no, raw in enumerate(text.splitlines(), start=1):
            line = _strip_strings(raw).split("#", 1)[0]
            if inline is not None:
                self._inline_keys(line, inline, no)
                depth += line.count("{") - line.count("}")
                if depth <= 0:
                    inline = None
                continue
            m = _HEADER.match(line)
            if m:
                # the key as written (``_strip_strings`` keeps lengths): quoted names intact
                table = _dotted(raw[m.start(1):m.end(1)])
                for i in range(1, len(table) + 1):  # [a.b.c] also locates a and a.b
                    self._add(table[:i], no)
                continue
            m = _ASSIGN.match(line)
            if not m:
                continue
            path = table + _dotted(raw[m.start(1):m.end(1)])
            self._add(path, no)
            rest = line[m.end():]
            if "{" in rest:
                self._inline_keys(rest, path, no)
                depth = rest.count("{") - rest.count("}")
                if depth > 0:
                    inline = path

    def _add(self, path: list[str], no: int) -> None:
        self.lines.setdefault(".".join(path), no)

    def _inline_keys(self, text: str, path: list[str], no: int) -> None:
        for m in _INLINE_KEY.finditer(text):
            self._add([*path, *_dotted(m[1])], no)
        if text.lstrip() and not text.lstrip().startswith(("{", ",", "}", "]")):
            m2 = re.match(r"^\s*([A-Za-z0-9_\-]+)\s*=", text)
            if m2:
                self._add([*path, m2[1]], no)

    def line_of(self, key: str) -> int | None:
        """The line of ``key`` or of its nearest declared parent (list indices ignored)."""
        parts = _dotted(_INDEX.sub("", key))
        while parts:
            no = self.lines.get(".".join(parts))
            if no is not None:
                return no
            parts.pop()
        return None
