"""An earlier build's work folder is moved aside at once and deleted beside the new build, once
the unit asks (after its sources are in place)."""

from __future__ import annotations

import threading
from pathlib import Path

from prebake.bake.layout import discard


def _tree(root: Path, files: int = 200) -> None:
    for i in range(files):
        d = root / f"d{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.o").write_bytes(b"x" * 100)


def _wait_for_deletions() -> None:
    for t in threading.enumerate():
        if t.name.startswith("discard "):
            t.join(timeout=60)


def test_the_folder_is_gone_at_once_and_its_bytes_soon_after(tmp_path: Path) -> None:
    work = tmp_path / "unit" / "onnxruntime"
    _tree(work)
    (tmp_path / "unit" / "prefix").mkdir()  # a sibling the discard must not touch
    old = discard(work)
    assert not work.exists()  # the build can make it afresh now
    work.mkdir()
    assert len(old.paths) == 1 and old.paths[0].is_dir()  # kept until the unit asks
    old.delete()
    old.delete()  # once: a second call starts nothing
    assert sum(t.name.startswith("discard ") for t in threading.enumerate()) <= 1
    _wait_for_deletions()
    assert sorted(p.name for p in (tmp_path / "unit").iterdir()) == ["onnxruntime", "prefix"]


def test_what_a_killed_run_left_goes_with_the_next_discard(tmp_path: Path) -> None:
    unit = tmp_path / "unit"
    left = unit / ".onnxruntime.discarded-999-0"  # a run killed before its thread finished
    _tree(left, 20)
    other = unit / ".abseil.discarded-999-0"  # another recipe's: not this discard's
    _tree(other, 5)
    _tree(unit / "onnxruntime", 20)
    discard(unit / "onnxruntime").delete()
    _wait_for_deletions()
    assert sorted(p.name for p in unit.iterdir()) == [".abseil.discarded-999-0"]


def test_a_missing_folder_is_nothing_to_discard(tmp_path: Path) -> None:
    discard(tmp_path / "absent").delete()
    assert list(tmp_path.iterdir()) == []
