"""Meson: the quoting of values written into a Meson machine file (``quoting``)."""
