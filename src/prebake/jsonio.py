"""Atomic file writes and versioned JSON, so no reader ever sees a half-written file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write via a temporary file in the same directory and ``os.replace`` it into place."""
    # lazy: tempfile pulls in shutil, random, bz2 and lzma (5 ms by -X importtime), which
    # link-order's start-up leaves out for SCHEMA_VERSION (tests/unit/test_startup.py)
    import tempfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        Path(tmp).chmod(mode)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str, mode: int = 0o644) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def dumps(obj: Any) -> str:
    """Stable JSON: sorted keys, indented, trailing newline (diff-friendly, deterministic)."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, dumps(obj))
