"""The protocol every binary-format reader implements, and the context passed to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from prebake.inspect.binreader import Buffer
from prebake.inspect.facts import Facts


@dataclass(frozen=True)
class ParseOptions:
    """What the caller needs: ``symbols`` asks for full symbol lists (slower on big archives)."""

    symbols: bool = False
    # Opt-in expensive passes (e.g. a full wasm instruction decode when no target_features).
    deep: bool = False


class FormatReader(Protocol):
    """One binary format. ``sniff`` sees the first bytes; ``parse`` sees the whole buffer."""

    name: str

    def sniff(self, head: bytes) -> bool: ...

    def parse(self, data: Buffer, path: str, opts: ParseOptions) -> Facts: ...
