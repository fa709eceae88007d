"""Which exports are the public API: what the installed headers declare, or the recipe lists.

A static archive's symbol table lists every global of every member, including helpers that no
consumer can name (zstd's ``ZSTD_customMalloc`` is ``extern`` only so its own objects share
it). Counting those as API makes every bump "breaking". Like ``abidiff --headers-dir``, a
removed export breaks consumers when a header the asset installs declares it — a C name as an
identifier of the header, a C++ name through its demangled form (every component of
``ns::Class::method`` is an identifier there) — or when the recipe lists it in
``Outputs(public_symbols=(…))`` (globs, matched against the raw and the demangled name). When
neither is known (bare binaries, a manifest-only side) every export counts: the diff fails
closed.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# A header larger than this is not read for names (generated tables, amalgamations).
MAX_HEADER_BYTES = 16 << 20
_COMMENTS = re.compile(rb"/\*.*?\*/|//[^\n]*", re.S)
_STRINGS = re.compile(rb'"(?:\\.|[^"\\\n])*"')
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
# Demangled special names whose subject is the class after the prefix.
_SPECIAL = ("vtable for ", "typeinfo for ", "typeinfo name for ", "VTT for ",
            "guard variable for ", "construction vtable for ", "non-virtual thunk to ",
            "virtual thunk to ", "covariant return thunk to ")


def header_identifiers(paths: Iterable[Path]) -> frozenset[str]:
    """Every identifier outside comments and string literals of the given headers."""
    names: set[str] = set()
    for p in paths:
        try:
            with open(p, "rb") as fh:
                data = fh.read(MAX_HEADER_BYTES + 1)
        except OSError:
            continue
        if len(data) > MAX_HEADER_BYTES:
            continue
        text = _STRINGS.sub(b" ", _COMMENTS.sub(b" ", data))
        names.update(m.decode("ascii") for m in _IDENT.findall(text))
    return frozenset(names)


def _strip_templates(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _qualified_name(demangled: str) -> str | None:
    """``ns::Class::method`` of ``ns::Class::method(int) const``; ``None`` if not a name."""
    for prefix in _SPECIAL:
        if demangled.startswith(prefix):
            demangled = demangled[len(prefix):]
            break
    depth, cut = 0, len(demangled)
    for i, ch in enumerate(demangled):
        if ch in "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    name = _strip_templates(demangled[:cut]).strip()
    if " " in name:  # a return type before the name (template functions): keep the name
        name = name.rsplit(" ", 1)[1]
    return name or None


@dataclass(frozen=True)
class PublicApi:
    """``declared``: identifiers of the installed headers (``None``: no headers known);
    ``globs``: the recipe's ``public_symbols``."""

    declared: frozenset[str] | None
    globs: tuple[str, ...] = ()

    @property
    def known(self) -> bool:
        return self.declared is not None or bool(self.globs)

    def is_public(self, name: str, demangled: str | None) -> bool:
        """Whether removing ``name`` breaks consumers (always ``True`` when nothing is known)."""
        if not self.known:
            return True
        forms = [name, *([demangled] if demangled and demangled != name else [])]
        if any(fnmatch.fnmatchcase(f, g) for f in forms for g in self.globs):
            return True
        if self.declared is None:
            return False
        plain = [name, name[1:]] if name.startswith("_") else [name]  # Mach-O: _name
        if any(p in self.declared for p in plain):
            return True
        if demangled and demangled != name:
            qualified = _qualified_name(demangled)
            if qualified is None or "(anonymous namespace)" in qualified:
                return False
            parts = [p.lstrip("~") for p in qualified.split("::")]
            if parts and parts[-1].startswith("operator"):
                parts = parts[:-1]
            return bool(parts) and all(p in self.declared for p in parts)
        return False


def public_api(declared: frozenset[str] | None, globs: Sequence[str]) -> PublicApi:
    return PublicApi(declared if declared else None, tuple(globs))
