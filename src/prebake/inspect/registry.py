"""The list of format readers, in sniffing order. Add a format: one module + one line here."""

from __future__ import annotations

from prebake.inspect.base import FormatReader

READERS: list[FormatReader] = []
