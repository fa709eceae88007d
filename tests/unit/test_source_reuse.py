"""An unpacked source tree kept from the earlier build only when it provably is what unpacking
again would write: the same archive and options, and no recorded entry changed since (its
change time, which no process can set back, included); paths a command added are removed.

The archives are made by GNU tar (``tar -cJf``) from a small tree with a patch, as a recipe's
``UrlSource`` gets them from its cache.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

import pytest

from prebake.recipes.api import UrlSource
from prebake.sources import SourceCache, materialize, reuse

PATCH = """\
--- a/lib/a.c
+++ b/lib/a.c
@@ -1 +1 @@
-int a(void) { return 1; }
+int a(void) { return 2; }
"""


def make_archive(tmp: Path) -> tuple[Path, str]:
    top = tmp / "made" / "lib-1.0"
    (top / "lib").mkdir(parents=True)
    (top / "lib" / "a.c").write_text("int a(void) { return 1; }\n")
    (top / "lib" / "b.c").write_text("int b(void) { return 3; }\n")
    (top / "include").mkdir()
    (top / "include" / "lib.h").write_text("int a(void);\n")
    (top / "include" / "alias.h").symlink_to("lib.h")
    (top / "tool.sh").write_text("#!/bin/sh\n")
    (top / "tool.sh").chmod(0o755)
    archive = tmp / "lib-1.0.tar.xz"
    subprocess.run(["tar", "-C", str(tmp / "made"), "-cJf", str(archive), "lib-1.0"], check=True)
    return archive, hashlib.sha256(archive.read_bytes()).hexdigest()


class Build:
    """Two builds' work folders the way ``bake.unit`` makes them: the earlier one moved aside,
    the new one empty, the source fetched into it with ``earlier`` set."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.archive, self.sha = make_archive(tmp)
        self.cache = SourceCache(tmp / "cache")
        self.cache.root.mkdir(parents=True)
        (self.cache.root / self.sha).write_bytes(self.archive.read_bytes())
        (tmp / "recipe").mkdir()
        (tmp / "recipe" / "fix.patch").write_text(PATCH)
        self.n = 0
        self.said: list[str] = []

    def source(self, **kw: object) -> UrlSource:
        args: dict[str, object] = {"url": "http://127.0.0.1:9/lib-1.0.tar.xz",
                                   "sha256": self.sha, "patches": ("fix.patch",)}
        args.update(kw)
        return UrlSource(**args)  # type: ignore[arg-type]

    def work(self) -> Path:
        return self.tmp / f"work{self.n}"

    def fetch(self, src: UrlSource | None = None) -> Path:
        earlier = self.work() if self.n else None
        self.n += 1
        self.said.clear()
        return materialize(src or self.source(), self.work(), self.tmp / "recipe", self.cache,
                           earlier=earlier, log=self.said.append)

    def kept(self) -> bool:
        return any("kept from the earlier build" in s for s in self.said)


def snapshot(tree: Path) -> dict[str, bytes]:
    out = {}
    for p in sorted(tree.rglob("*")):
        rel = p.relative_to(tree).as_posix()
        out[rel] = (b"->" + str(p.readlink()).encode() if p.is_symlink()
                    else b"dir" if p.is_dir() else p.read_bytes() + oct(p.stat().st_mode).encode())
    return out


@pytest.fixture
def build(tmp_path: Path) -> Build:
    return Build(tmp_path)


def test_an_untouched_tree_is_kept_and_is_what_a_fresh_unpack_writes(build: Build) -> None:
    first = build.fetch()
    assert (first / "lib" / "a.c").read_text() == "int a(void) { return 2; }\n"  # patched
    fresh = snapshot(first)
    (build.cache.root / build.sha).unlink()  # a kept tree does not read the archive
    second = build.fetch()
    assert build.kept(), build.said
    assert not (build.tmp / "work0" / "src").exists(), "moved, not copied"
    assert snapshot(second) == fresh
    third = build.fetch()  # and again: the record moved with it
    assert build.kept() and snapshot(third) == fresh


def test_paths_a_command_added_are_removed_before_the_tree_is_kept(build: Build) -> None:
    first = build.fetch()
    fresh = snapshot(first)
    (first / "cmake" / "external" / "emsdk" / "upstream").mkdir(parents=True)
    (first / "cmake" / "external" / "emsdk" / "emsdk").write_text("#!/bin/sh\n")
    (first / "cmake" / "external" / "emsdk" / "upstream" / "emscripten").symlink_to("/usr")
    (first / "lib" / "__pycache__").mkdir()
    (first / "lib" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    second = build.fetch()
    assert build.kept(), build.said
    assert build.said[0].endswith("; removed what the build added: cmake, lib/__pycache__")
    assert snapshot(second) == fresh


def rewrite_same_size_same_mtime(path: Path) -> None:
    """A change that size and modification time cannot see (the time put back)."""
    st = path.stat()
    data = path.read_bytes()
    time.sleep(0.02)  # a later tick of the file system's clock
    path.write_bytes(data.replace(b"2", b"9"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_size == st.st_size


@pytest.mark.parametrize("change", ["content", "content behind its old time", "mode",
                                    "removed", "replaced by a copy", "link retargeted",
                                    "folder mode"])
def test_a_tree_changed_since_its_unpack_is_unpacked_again(build: Build, change: str) -> None:
    first = build.fetch()
    fresh = snapshot(first)
    a = first / "lib" / "a.c"
    if change == "content":
        a.write_text("int a(void) { return 7; }\n")
    elif change == "content behind its old time":
        rewrite_same_size_same_mtime(a)
    elif change == "mode":
        a.chmod(0o600)
    elif change == "removed":
        (first / "lib" / "b.c").unlink()
    elif change == "replaced by a copy":  # same bytes, same times, another inode
        st = a.stat()
        copy = a.with_name("a.tmp")
        copy.write_bytes(a.read_bytes())
        os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
        copy.replace(a)
    elif change == "link retargeted":
        (first / "include" / "alias.h").unlink()
        (first / "include" / "alias.h").symlink_to("../lib/a.c")
    else:
        (first / "lib").chmod(0o700)
    second = build.fetch()
    assert not build.kept()
    assert any("unpacked again" in s for s in build.said), build.said
    assert snapshot(second) == fresh


@pytest.mark.parametrize("other", ["strip", "skip", "patch"])
def test_a_tree_made_from_other_inputs_is_unpacked_again(build: Build, other: str) -> None:
    build.fetch()
    if other == "strip":
        src = build.source(strip_components=0, patches=())
    elif other == "skip":
        src = build.source(skip=("lib/b.c",))
    else:
        (build.tmp / "recipe" / "fix.patch").write_text(PATCH.replace("return 2", "return 5"))
        src = build.source()
    tree = build.fetch(src)
    assert not build.kept()
    assert "made from other inputs" in build.said[0]
    assert tree.is_dir()


@pytest.mark.parametrize("record", ["missing", "truncated", "not json", "a folder",
                                    "wrong shape"])
def test_an_unreadable_record_means_a_fresh_unpack(build: Build, record: str) -> None:
    first = build.fetch()
    fresh = snapshot(first)
    rec = build.work() / reuse.RECORDS / "src.json"
    assert rec.is_file()
    if record == "missing":
        rec.unlink()
    elif record == "truncated":
        rec.write_bytes(rec.read_bytes()[:40])
    elif record == "not json":
        rec.write_bytes(b"\xff\xfe garbage")
    elif record == "a folder":
        rec.unlink()
        rec.mkdir()
    else:
        rec.write_text('{"key": 1, "entries": [1, 2]}')
    second = build.fetch()
    assert not build.kept()
    assert "no readable record" in build.said[0]
    assert snapshot(second) == fresh


def test_sources_that_are_not_unpacked_are_placed_afresh(build: Build) -> None:
    src = build.source(unpack=False, patches=(), dest="deps/lib")
    build.fetch(src)
    placed = build.fetch(src)
    assert placed.read_bytes() == build.archive.read_bytes()
    assert build.said == []


def test_a_tree_that_is_the_work_folder_itself_is_unpacked_each_time(build: Build) -> None:
    src = build.source(dest=".")
    first = build.fetch(src)
    fresh = snapshot(first)
    second = build.fetch(src)
    assert not build.kept() and build.said == []
    assert snapshot(second) == fresh
    assert not (second / reuse.RECORDS).exists()


def test_a_file_the_build_rewrites_is_learned_and_put_back(build: Build) -> None:
    """onnxruntime's FetchContent step rewrites ``cmake/deps.txt`` in every build: the first
    rebuild unpacks again and keeps a copy of the file as unpacked; later ones put it back."""
    first = build.fetch()
    fresh = snapshot(first)
    (first / "lib" / "a.c").write_text("int a(void) { return 42; } /* rewritten */\n")
    second = build.fetch()
    assert not build.kept() and "lib/a.c changed since it was unpacked" in build.said[0]
    unpacked_mtime = (second / "lib" / "a.c").stat().st_mtime_ns  # as the patch left it
    (second / "lib" / "a.c").write_text("int a(void) { return 42; } /* rewritten */\n")
    (build.cache.root / build.sha).unlink()  # put back from the copy, not from the archive
    third = build.fetch()
    assert build.kept(), build.said
    assert "once lib/a.c was put back" in build.said[0]
    assert snapshot(third) == fresh
    assert (third / "lib" / "a.c").stat().st_mtime_ns == unpacked_mtime
    fourth = build.fetch()  # untouched: kept, and the copy moved with the record
    assert build.kept() and snapshot(fourth) == fresh
    (fourth / "lib" / "a.c").write_text("rewritten again\n")
    (fourth / "lib" / "b.c").write_text("and a file never rewritten before\n")
    (build.cache.root / build.sha).write_bytes(build.archive.read_bytes())
    fifth = build.fetch()
    assert not build.kept() and "lib/b.c changed" in build.said[0]
    assert snapshot(fifth) == fresh


def test_a_copy_that_does_not_match_its_record_means_a_fresh_unpack(build: Build) -> None:
    first = build.fetch()
    fresh = snapshot(first)
    (first / "lib" / "a.c").write_text("rewritten\n")
    second = build.fetch()
    (copy,) = (build.work() / reuse.RECORDS).glob("*.pristine/*")
    copy.write_bytes(copy.read_bytes().replace(b"2", b"7"))  # same size, other bytes
    (second / "lib" / "a.c").write_text("rewritten\n")
    third = build.fetch()
    assert not build.kept()
    assert "its copy as unpacked does not match its record" in build.said[0]
    assert snapshot(third) == fresh
