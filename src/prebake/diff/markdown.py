"""Markdown for a diff, sized for a GitHub step summary (``$GITHUB_STEP_SUMMARY``).

Every value from a binary (symbol names, paths, soname) is HTML-escaped inside ``<code>``: a
step summary renders HTML, and symbol names are attacker-controlled text. ``|`` and newlines are
escaped too so a hostile name cannot break out of its table cell.
"""

from __future__ import annotations

import html
from typing import Any

from prebake.diff.changes import Change, DiffResult, pct


def esc(value: Any) -> str:
    """Text safe inside a markdown table cell that GitHub renders as HTML."""
    text = html.escape(str(value), quote=True)
    return text.replace("|", "&#124;").replace("\n", " ").replace("`", "&#96;")


def code(value: Any) -> str:
    return f"<code>{esc(value)}</code>"


def human_size(n: int | None) -> str:
    if n is None:
        return "—"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _pct(old: int | None, new: int | None) -> str:
    p = pct(old, new)
    return "—" if p is None else f"{p:+.1f} %"


def _value(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):  # facts spell booleans the way contracts and JSON do
        return code("true" if v else "false")
    if isinstance(v, list):
        return ", ".join(code(x) for x in v) or "—"
    if isinstance(v, int):
        return human_size(v)
    return code(v)


def describe(c: Change) -> str:
    """The change's headline: what changed, with the symbol's demangled form when it has one."""
    if c.category == "export":
        verb = "added" if c.reason == "export added" else "removed"
        dm = f"<br>{esc(c.demangled)}" if c.demangled else ""
        return f"{esc(c.kind or 'export')} {verb} {code(c.subject)}{dm}"
    if c.category == "fact":
        return f"{esc(c.subject)}: {_value(c.old)} → {_value(c.new)}"
    if c.category == "library":
        return f"library {'added' if c.old is None else 'removed'} {code(c.new or c.old)}"
    if c.category == "header":
        return f"header {code(c.subject)}"
    if c.category == "size":
        return f"size {human_size(c.old)} → {human_size(c.new)}"
    return f"{esc(c.subject)}: {code(c.old)} → {code(c.new)}"


def _rows(changes: list[Change]) -> list[tuple[str, str | None, str]]:
    """``(change, library, why)`` per row: the exports one library moved from one version node
    to another are one row (a major bump moves them all; ``--json`` lists each)."""
    order: list[Change | tuple[str | None, Any, Any, str]] = []
    moved: dict[tuple[str | None, Any, Any, str], int] = {}
    for c in changes:
        if c.category != "symbol-version":
            order.append(c)
            continue
        group = (c.library, c.old, c.new, c.reason)
        if group not in moved:
            order.append(group)
        moved[group] = moved.get(group, 0) + 1
    return [(describe(x), x.library, x.reason) if isinstance(x, Change) else
            (f"{moved[x]} export(s) moved to another version node: {code(x[1])} → "
             f"{code(x[2])}", x[0], x[3]) for x in order]


def _table(changes: list[Change], max_rows: int) -> list[str]:
    lines = ["| change | library | why |", "|---|---|---|"]
    rows = _rows(changes)
    for text, library, why in rows[:max_rows]:
        lines.append(f"| {text} | {code(library) if library else '—'} | {esc(why)} |")
    if len(rows) > max_rows:
        lines.append(f"| … {len(rows) - max_rows} more (use --json) | | |")
    return lines


def _libraries(d: DiffResult) -> list[str]:
    lines = ["| library | status | kind | size | Δ size | exports |", "|---|---|---|---|---|---|"]
    for r in d.libraries:
        size = f"{human_size(r.old_size)} → {human_size(r.new_size)}"
        exports = f"{r.old_exports if r.old_exports is not None else '—'} → " \
                  f"{r.new_exports if r.new_exports is not None else '—'}"
        lines.append(f"| {code(r.key)} | {r.status} | {esc(r.kind or '—')} | {size} "
                     f"| {_pct(r.old_size, r.new_size)} | {exports} |")
    return lines


def markdown(d: DiffResult, *, max_rows: int = 200) -> str:
    counts = d.counts()
    out = [f"### prebake diff: {code(d.old['label'])} → {code(d.new['label'])}", ""]
    if d.breaking:
        out.append(f"**✖ {counts['breaking']} breaking change(s)**, "
                   f"{counts['compatible']} compatible.")
    elif counts["compatible"]:
        out.append(f"**✔ compatible**: {counts['compatible']} change(s), none breaking.")
    else:
        out.append("**✔ no changes** that consumers can see.")
    out.append(f"Size {human_size(d.old.get('size'))} → {human_size(d.new.get('size'))} "
               f"({_pct(d.old.get('size'), d.new.get('size'))}).")
    out.append("")
    breaking = d.of(breaking=True)
    if breaking:
        out += ["#### Breaking", "", *_table(breaking, max_rows), ""]
    compatible = d.of(breaking=False)
    if compatible:
        out += ["<details><summary>Compatible changes "
                f"({len(compatible)})</summary>", "", *_table(compatible, max_rows), "",
                "</details>", ""]
    if d.libraries:
        out += ["#### Libraries", "", *_libraries(d), ""]
    lo = d.link_order
    if lo.get("changed"):
        out += [f"Link order ({esc(lo.get('old_source'))} → {esc(lo.get('new_source'))}) "
                "changed; see the change above.", ""]
    return "\n".join(out)
