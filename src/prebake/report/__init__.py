"""``prebake report``: one static HTML page for a store (``collect`` gathers, ``html`` renders)."""

from prebake.report.collect import collect, write_report
from prebake.report.data import CELL_FACTS, Release, ReportData

__all__ = ["CELL_FACTS", "Release", "ReportData", "collect", "write_report"]
