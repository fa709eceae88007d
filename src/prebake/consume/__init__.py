"""Consumers: fetch a pinned asset, verify it, re-check its facts, unpack it safely
(``prebake.extract``), lock it."""
