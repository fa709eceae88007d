"""``allowed_licenses`` judged on an SPDX expression operand by operand, never as one string.

A glob over the whole expression let ``LGPL-*`` accept ``LGPL-2.1-or-later AND
GPL-3.0-or-later``: the asset is under both, and a consumer who may ship only LGPL may not ship
it. The expression is parsed with the SPDX grammar of ``license-expression`` (the maintained
parser the CycloneDX library already depends on: ``AND``, ``OR``, ``WITH``, parentheses,
case-insensitive keys, deprecated ``GPL-2.0+`` spelled as ``GPL-2.0-or-later``), then:

- a license identifier is allowed when a pattern matches it (``fnmatch``, case-insensitive, as
  SPDX matches identifiers);
- ``L WITH E`` is allowed when a pattern matches ``L WITH E`` whole (``GPL-2.0-only WITH
  Classpath-exception-2.0``, ``GPL-2.0-only WITH *``) or ``L`` itself: an SPDX exception only
  adds permissions to its license. A refusal names the exception;
- ``A AND B`` is allowed when every operand is: the asset is under all of them;
- ``A OR B`` is allowed when one operand is wholly allowed: the SDK may take that choice (the
  refusal of an OR lists what each choice lacks).

What cannot be read as SPDX fails closed: a syntax error, an identifier that is neither on the
SPDX list nor a ``LicenseRef-``, an exception that is not one, an empty or over-long text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

MAX_EXPRESSION = 4096  # characters; FFmpeg's are one identifier
# the SPDX forms of a license that is not on the list
_REF = re.compile(r"(?:DocumentRef-[A-Za-z0-9.-]+:)?LicenseRef-[A-Za-z0-9.-]+")
# what one pattern may be: an identifier glob, optionally WITH an exception glob
PATTERN = re.compile(r"[A-Za-z0-9.+*?\[\]!-]+(?:\s+(?i:WITH)\s+[A-Za-z0-9.+*?\[\]!-]+)?")


@dataclass(frozen=True)
class Judged:
    """``expression`` as parsed (normalised spelling), the operands the patterns do not
    allow, and ``problem`` when the text is no SPDX expression at all."""

    expression: str
    refused: tuple[str, ...] = ()
    problem: str = ""

    @property
    def ok(self) -> bool:
        return not self.refused and not self.problem

    def refusal(self, allowed: Sequence[str]) -> str:
        """The end of a refusal's line: ``the contract's allowed_licenses (LGPL-*) refuses it
        (GPL-3.0-or-later not allowed)`` (the operands named where not the whole is)."""
        shown = ", ".join(allowed)
        if self.problem:
            return f"the contract's allowed_licenses ({shown}) cannot judge it: {self.problem}"
        named = "" if self.refused == (self.expression,) else \
            f" ({' and '.join(self.refused)} not allowed)"
        return f"the contract's allowed_licenses ({shown}) refuses it{named}"


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be one entry of ``allowed_licenses`` (``None``: it can)."""
    if PATTERN.fullmatch(pattern.strip()) is None:  # no AND, OR, parentheses
        return (f"{pattern!r}: one license per entry (a glob like LGPL-*, optionally "
                "'WITH exception'); an expression is judged operand by operand, so list "
                "each license it may hold")
    return None


def judge(spdx: str, allowed: Sequence[str]) -> Judged:
    """``spdx`` against the patterns ``allowed`` (see the module's doc)."""
    if not spdx.strip() or len(spdx) > MAX_EXPRESSION:
        return Judged(spdx[:80], problem=f"{spdx[:80]!r} is no SPDX license expression")
    # lazy: license-expression costs 29 ms to import and 100 ms to load the SPDX list; only a
    # contract with allowed_licenses judging a proven license pays it
    from license_expression import (
        ExpressionError,
        LicenseSymbol,
        LicenseWithExceptionSymbol,
        get_spdx_licensing,
    )

    licensing = get_spdx_licensing()
    try:
        parsed = licensing.parse(spdx, validate=False, strict=True)
    except ExpressionError as exc:
        return Judged(spdx, problem=f"{spdx!r} is no SPDX license expression ({exc})")
    except RecursionError:  # nested past what the parser walks (a hostile manifest's)
        return Judged(spdx[:80], problem=f"{spdx[:80]!r}… nests too deep to be judged")
    if parsed is None:
        return Judged(spdx, problem=f"{spdx!r} is no SPDX license expression")
    unknown = [k for k in licensing.unknown_license_keys(parsed) if not _REF.fullmatch(k)]
    if unknown:
        return Judged(parsed.render(), problem=f"{spdx!r} names {', '.join(unknown)}, on "
                      "neither the SPDX list nor a LicenseRef-")
    patterns = [" ".join(p.split()).lower() for p in allowed]

    def allows(name: str) -> bool:
        return any(fnmatchcase(name.lower(), p) for p in patterns)

    def refused(node: Any) -> list[str]:
        if isinstance(node, LicenseWithExceptionSymbol):
            lic, exc = node.license_symbol.key, node.exception_symbol.key
            whole = f"{lic} WITH {exc}"
            return [] if allows(whole) or allows(lic) else [whole]
        if isinstance(node, LicenseSymbol):
            return [] if allows(node.key) else [node.key]
        parts = [refused(arg) for arg in node.args]
        if isinstance(node, licensing.OR) and any(not p for p in parts):
            return []  # one choice is wholly allowed
        return list(dict.fromkeys(x for p in parts for x in p))

    try:
        return Judged(parsed.render(), tuple(refused(parsed)))
    except RecursionError:
        return Judged(spdx[:80], problem=f"{spdx[:80]!r}… nests too deep to be judged")
