"""The report's view model and its Jinja2 rendering (autoescape on for every template)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from prebake import __version__
from prebake.diff import DiffResult, version_key
from prebake.diff.compare import fact_value
from prebake.diff.markdown import describe, human_size
from prebake.manifest import Manifest, Toolchain
from prebake.report.chart import size_chart
from prebake.report.data import CELL_FACTS, Release, ReportData
from prebake.store.base import DEFAULT_RELEASE

VERDICT = {True: "pass", False: "fail", None: "not recorded"}


def _verdict(manifest: Manifest, guard: str) -> dict[str, Any]:
    """A guard's verdict from the manifest's ``guards`` field (absent in older manifests, shown
    as "not recorded" rather than guessed). An asset exists only when its guards passed, so
    the record holds no violation text; the detail names what was undecided."""
    g = manifest.guards
    ok: bool | None = None
    detail = ""
    if g is not None:
        ok = g.check.ok if guard == "check" else g.link_test.ok
        if guard == "check":
            detail = "; ".join(g.check.undecided[:5])
    return {"state": VERDICT[ok], "ok": ok, "detail": detail}


def _fact_values(facts: Sequence[Mapping[str, Any]], name: str) -> str | None:
    seen: list[str] = []
    for f in facts:
        v = fact_value(f, name)
        if v is None or v == [] or (name == "threads" and v is False):
            continue
        text = ", ".join(map(str, v)) if isinstance(v, list) else (
            "yes" if v is True else str(v))
        if text not in seen:
            seen.append(text)
    return " | ".join(seen) if seen else None


def _toolchain(tc: Toolchain) -> str | None:
    """``emsdk 5.0.5 (<version line>)`` when the toolchain is pinned, else the compiler's
    version line — whole: the release number comes last in most of them (``emcc (Emscripten
    gcc/clang-like replacement + linker emulating GNU ld) 3.1.6 ()``), so a cut line hides it."""
    version = tc.version.strip() if tc.version and tc.version.strip() else None
    if tc.pin and tc.pin_version:
        # the pin names the toolchain the build asked for; the version line what really ran
        pinned = f"{tc.pin} {tc.pin_version}"
        return f"{pinned} ({version})" if version else pinned
    if version:
        return version
    return " ".join(tc.cc) if tc.cc else None


def _release_tag(r: Release) -> str:
    """The release (tag) the asset is in, as consumers name it in ``fetch`` and locks; a store
    without releases keeps assets in its default one."""
    return r.release or DEFAULT_RELEASE


def _cell(r: Release, diff: tuple[int, DiffResult, str] | None) -> dict[str, Any]:
    m = r.manifest
    facts = [f.to_json() for f in m.facts]
    ih = m.input_hash
    cell: dict[str, Any] = {
        "version": r.aid.version, "release": r.release, "asset": r.aid.filename,
        "size": human_size(r.size), "input_hash": ih, "input_short": ih[:12],
        "check": _verdict(m, "check"), "link_test": _verdict(m, "link_test"),
        "facts": [("release", _release_tag(r))]
        + [(k, v) for k in CELL_FACTS if (v := _fact_values(facts, k)) is not None]
        + ([("toolchain", tc)] if (tc := _toolchain(m.toolchain)) else []),
        "libraries": [str(f.get("path")) for f in facts],
        "diff": None,
    }
    if diff is not None:
        n, d, prev = diff
        cell["diff"] = {"id": f"diff-{n}", "breaking": d.breaking, "counts": d.counts(),
                        "prev": prev}
    return cell


def _diff_view(n: int, d: DiffResult, name: str, platform: str, old: str, new: str
               ) -> dict[str, Any]:
    def rows(breaking: bool) -> list[dict[str, Any]]:
        return [{"what": describe(c), "library": c.library, "reason": c.reason,
                 "category": c.category} for c in d.of(breaking=breaking)]

    return {"id": f"diff-{n}", "name": name, "platform": platform, "old": old, "new": new,
            "breaking": d.breaking, "counts": d.counts(), "breaking_rows": rows(True),
            "compatible_rows": rows(False), "libraries": [r.to_json() for r in d.libraries],
            "size": d.to_json()["size"], "link_order": d.link_order,
            "old_size": human_size(d.old.get("size")), "new_size": human_size(d.new.get("size")),
            "size_kind": "compressed assets" if d.old.get("kind") == "asset" else "unpacked files"}


def view(data: ReportData) -> dict[str, Any]:
    """Plain dicts and strings for the template (no logic left for Jinja beyond loops)."""
    platforms = sorted({r.aid.platform for r in data.releases})
    names = sorted({r.aid.name for r in data.releases})
    by_key = {(r.aid.name, r.aid.version, r.aid.platform): r for r in data.releases}
    diff_of: dict[tuple[str, str, str], tuple[int, DiffResult, str]] = {}
    diffs: list[dict[str, Any]] = []
    for n, ((a, b), d) in enumerate(sorted(
            data.diffs.items(), key=lambda kv: (kv[0][1].name, version_key(kv[0][1].version),
                                                kv[0][1].platform))):
        diff_of[(b.name, b.version, b.platform)] = (n, d, a.version)
        diffs.append(_diff_view(n, d, b.name, b.platform, a.version, b.version))
    deps = []
    for i, name in enumerate(names):
        versions = sorted({r.aid.version for r in data.releases if r.aid.name == name},
                          key=version_key)
        rows = []
        for v in reversed(versions):
            cells = []
            for p in platforms:
                r = by_key.get((name, v, p))
                cells.append(_cell(r, diff_of.get((name, v, p))) if r else None)
            rows.append({"version": v, "cells": cells})
        series = {p: [by_key[(name, v, p)].size if (name, v, p) in by_key else None
                      for v in versions] for p in platforms}
        series = {p: s for p, s in series.items() if any(x is not None for x in s)}
        chart = size_chart(versions, series, f"chart-{i}", title=f"{name}: size per version")
        table = [{"version": v, "sizes": [human_size(series[p][j]) if series[p][j] is not None
                                          else "—" for p in series]}
                 for j, v in enumerate(versions)]
        deps.append({"name": name, "anchor": f"dep-{i}", "rows": rows, "chart": chart,
                     "series_platforms": list(series), "size_table": table,
                     "diffs": [d for d in diffs if d["name"] == name]})
    return {"store": data.store, "platforms": platforms, "deps": deps,
            "assets": len(data.releases), "warnings": data.warnings,
            "created_by": f"prebake {__version__}"}


def environment() -> Any:
    """Jinja2 with autoescaping forced on (not by file extension): every template escapes."""
    import jinja2  # lazy: 48 ms to import (-X importtime), paid only when a page is rendered

    return jinja2.Environment(
        loader=jinja2.PackageLoader("prebake.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(data: ReportData) -> str:
    import markupsafe  # lazy with jinja2 (its dependency), which renders the page next

    ctx = view(data)
    for dep in ctx["deps"]:
        # pygal's serializer escaped every label; the SVG is markup, not text.
        dep["chart"] = markupsafe.Markup(dep["chart"])
        for d in dep["diffs"]:
            for row in (*d["breaking_rows"], *d["compatible_rows"]):
                # describe() escapes every value it quotes (html.escape) and adds only <code>/<br>.
                row["what"] = markupsafe.Markup(row["what"])
    out: str = environment().get_template("report.html.j2").render(**ctx)
    return out
