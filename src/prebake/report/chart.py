"""The size-across-versions chart: an inline SVG drawn by pygal, with every script removed.

pygal (pure Python, no numpy; SVG is its only output) draws the chart when the page is built, so
the page needs no JavaScript to show it. pygal adds a ``<script>`` carrying its tooltip config
and a random chart id; both are removed/replaced so the SVG is static and the page is
reproducible. Labels go through the XML serializer, which escapes them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

UNITS = ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"), (1, "bytes"))


def _unit(sizes: Sequence[int]) -> tuple[int, str]:
    """The largest unit in which the biggest size is at least 1 (readable axis labels)."""
    top = max(sizes, default=0)
    return next(((d, u) for d, u in UNITS if top >= d), (1, "bytes"))


def size_chart(versions: Sequence[str], series: Mapping[str, Sequence[int | None]],
               chart_id: str, *, title: str) -> str:
    """An SVG line chart: one line per platform, sizes over ``versions`` (oldest first)."""
    # lazy: pygal costs 45 ms to import (-X importtime) beside the rest of the report
    import pygal
    from pygal.etree import etree
    from pygal.style import Style

    div, unit = _unit([s for sizes in series.values() for s in sizes if s is not None])
    style = Style(background="#ffffff", plot_background="#ffffff", font_family="sans-serif",
                  colors=("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bc4c00"))
    chart = pygal.Line(js=[], disable_xml_declaration=True, width=760, height=300,
                       explicit_size=True, style=style, title=title, x_title="version",
                       y_title=f"{unit} (unpacked)", show_dots=True, dots_size=4,
                       legend_at_bottom=True, truncate_label=-1, allow_interruptions=True)
    chart.x_labels = list(versions)
    for name, sizes in series.items():
        chart.add(name, [None if s is None else round(s / div, 2) for s in sizes])
    root = chart.render_tree()
    for parent in list(root.iter()):
        for child in list(parent):
            if isinstance(child.tag, str) and child.tag.rsplit("}", 1)[-1] == "script":
                parent.remove(child)
    svg = str(etree.tostring(root, encoding="unicode"))
    svg = svg.replace(f"chart-{chart.uuid}", chart_id)
    return re.sub(r"<!--.*?-->", "", svg, flags=re.S)
