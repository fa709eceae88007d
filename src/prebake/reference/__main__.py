"""``python -m prebake.reference``: rewrite docs/reference.md, the generated schemas
(prebake.toml's, the manifest's, inspect --json's) and the fields the table of ABI keys makes
(``inspect.facts.Abi``, ``contract.terms.Contract``)."""

from __future__ import annotations

import sys
from pathlib import Path

from prebake.reference import write

if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[3]
    for path in write(root):
        sys.stdout.write(f"wrote {path}\n")
