"""An unpacked source tree kept from the earlier build only when it is proven to be what
unpacking again would write: the record beside it names the same archive and options (a fast
path), and every entry is compared with the verified archive, byte for byte, the patches
applied on the side; paths a command added are removed, files a build is known to rewrite are
put back from the archive's bytes, never through a link.

The archives are made by GNU tar (``tar -cJf``) from a small tree with a patch, as a recipe's
``UrlSource`` gets them from its cache.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from prebake.errors import PrebakeError
from prebake.model.recipe import UrlSource
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
    second = build.fetch()
    assert build.kept(), build.said
    assert re.fullmatch(r"src: kept from the earlier build: proven against its archive in "
                        r"[\d.]+ s \(7 entries, 0\.0 MB compared\)", build.said[0]), build.said
    assert not (build.tmp / "work0" / "src").exists(), "moved, not copied"
    assert snapshot(second) == fresh
    third = build.fetch()  # and again: the record moved with it
    assert build.kept() and snapshot(third) == fresh


def test_a_tree_is_proven_against_the_archive_each_time(build: Build) -> None:
    """Without its archive a kept tree is not kept: the proof reads it (and the source cache
    verifies its sha256 first), so a lost archive is a failed fetch, as a fresh unpack's."""
    build.fetch()
    (build.cache.root / build.sha).unlink()
    with pytest.raises(PrebakeError,
                       match=re.escape("no mirror served the file prebake.sources.lock pins")):
        build.fetch()


def test_a_file_replaced_by_the_same_bytes_is_still_the_unpack(build: Build) -> None:
    """The proof is of content, not of identities: a copy with the same bytes, bits and time
    (another inode) is what a fresh unpack writes."""
    first = build.fetch()
    fresh = snapshot(first)
    a = first / "lib" / "b.c"
    st = a.stat()
    copy = a.with_name("b.tmp")
    copy.write_bytes(a.read_bytes())
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
    copy.replace(a)
    second = build.fetch()
    assert build.kept(), build.said
    assert snapshot(second) == fresh


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
                                    "removed", "touched", "link retargeted",
                                    "folder mode", "patched file", "patched file behind its time",
                                    "a link for a file", "a file for a link",
                                    "a hard link to the same bytes outside"])
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
    elif change == "touched":
        os.utime(first / "lib" / "b.c", ns=(0, 0))
    elif change == "link retargeted":
        (first / "include" / "alias.h").unlink()
        (first / "include" / "alias.h").symlink_to("../lib/a.c")
    elif change == "patched file":  # lib/a.c is the patch's
        a.write_text("int a(void) { return 3; }\n")
    elif change == "patched file behind its time":
        rewrite_same_size_same_mtime(a)
    elif change == "a link for a file":
        (first / "lib" / "b.c").unlink()
        (first / "lib" / "b.c").symlink_to("a.c")
    elif change == "a hard link to the same bytes outside":  # a write into it goes out
        os.link(first / "lib" / "b.c", build.tmp / "outside-b.c")
    elif change == "a file for a link":
        (first / "include" / "alias.h").unlink()
        (first / "include" / "alias.h").write_text("int a(void);\n")
    else:
        (first / "lib").chmod(0o700)
    second = build.fetch()
    assert not build.kept()
    assert len(build.said) == 1 and "unpacked again" in build.said[0], build.said
    named = {"content": "lib/a.c", "content behind its old time": "lib/a.c", "mode": "lib/a.c",
             "removed": "lib/b.c", "touched": "lib/b.c", "link retargeted": "include/alias.h",
             "folder mode": "lib:", "patched file": "lib/a.c",
             "patched file behind its time": "lib/a.c", "a link for a file": "lib/b.c",
             "a file for a link": "include/alias.h",
             "a hard link to the same bytes outside": "lib/b.c: a hard link"}[change]
    assert named in build.said[0], build.said
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


@pytest.mark.parametrize("rewritten", ["lib/b.c", "lib/a.c"])  # a.c is the patch's
def test_a_file_the_build_rewrites_is_learned_and_put_back(build: Build, rewritten: str
                                                           ) -> None:
    """onnxruntime's FetchContent step rewrites ``cmake/deps.txt`` in every build: the first
    rebuild unpacks again and learns the file; later ones put it back from the archive's bytes
    (the patched ones for a file the patches touch)."""
    first = build.fetch()
    fresh = snapshot(first)
    (first / rewritten).write_text("int a(void) { return 42; } /* rewritten */\n")
    second = build.fetch()
    assert not build.kept() and f"{rewritten}: " in build.said[0], build.said
    unpacked_mtime = (second / "lib" / "b.c").stat().st_mtime_ns  # as the archive has it
    (second / rewritten).write_text("int a(void) { return 42; } /* rewritten */\n")
    third = build.fetch()
    assert build.kept(), build.said
    assert build.said[0].endswith(f"; put back from the archive: {rewritten}"), build.said
    assert snapshot(third) == fresh
    assert (third / "lib" / "b.c").stat().st_mtime_ns == unpacked_mtime
    fourth = build.fetch()  # untouched: kept, and what was learned moved with the record
    assert build.kept() and snapshot(fourth) == fresh
    (fourth / rewritten).write_text("rewritten again\n")
    (fourth / "include" / "lib.h").write_text("and a file never rewritten before\n")
    fifth = build.fetch()
    assert not build.kept() and "include/lib.h: " in build.said[0]
    assert snapshot(fifth) == fresh


def test_a_record_that_learns_more_only_puts_back_the_archives_bytes(build: Build) -> None:
    """The record is the build's to write: one naming every file as learned makes the proof
    put them back from the archive, so the tree is still the fresh unpack."""
    import json

    first = build.fetch()
    fresh = snapshot(first)
    rec = build.work() / reuse.RECORDS / "src.json"
    data = json.loads(rec.read_text())
    data["learned"] = ["lib/a.c", "lib/b.c", "include/lib.h", "tool.sh"]
    rec.write_text(json.dumps(data))
    (first / "lib" / "b.c").write_text("int b(void) { return 666; }\n")
    (first / "tool.sh").chmod(0o777)
    second = build.fetch()
    assert build.kept(), build.said
    assert "put back from the archive: lib/b.c, tool.sh" in build.said[0]
    assert snapshot(second) == fresh


# ---- attacks: a record, a put-back or a member name the build could have written --

def refresh_record(work: Path) -> None:
    """What a recipe command that knows prebake's layout does after editing its tree: every
    record beside the trees rewritten to the tree as it is now (the identities a record of
    entries holds: kind, mode, size, device, inode, times, link target)."""
    import json
    import stat as st_

    for rec in (work / reuse.RECORDS).glob("*.json"):
        data = json.loads(rec.read_text())
        tree = work / rec.name.removesuffix(".json").replace("--", "/")
        for rel in data.get("entries", {}):
            s = (tree / rel).lstat()
            kind = ("link" if st_.S_ISLNK(s.st_mode) else "dir" if st_.S_ISDIR(s.st_mode)
                    else "file")
            target = str((tree / rel).readlink()) if kind == "link" else ""
            data["entries"][rel] = ([kind, st_.S_IMODE(s.st_mode), 0, s.st_dev, s.st_ino, 0, 0,
                                     ""] if kind == "dir" else
                                    [kind, st_.S_IMODE(s.st_mode), s.st_size, s.st_dev,
                                     s.st_ino, s.st_mtime_ns, s.st_ctime_ns, target])
        rec.write_text(json.dumps(data))


def test_a_tree_edited_with_its_record_rewritten_is_proven_and_unpacked_again(
        build: Build) -> None:
    """The issue's attack: a command edits a file of the tree (same size, its time put back)
    and rewrites the record beside it; the next build must not keep the edited bytes."""
    first = build.fetch()
    fresh = snapshot(first)
    b = first / "lib" / "b.c"
    st = b.stat()
    b.write_text("int b(void) { return 6; }\n")
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
    refresh_record(build.work())
    second = build.fetch()
    assert not build.kept(), build.said
    assert "lib/b.c" in build.said[0] and "unpacked again" in build.said[0], build.said
    assert snapshot(second) == fresh


def learn_a_c(build: Build) -> Path:
    """Two builds: the first rewrites lib/a.c (a file onnxruntime-like commands rewrite), the
    second unpacks again and learns it; returns the second tree (lib/a.c as unpacked)."""
    first = build.fetch()
    (first / "lib" / "a.c").write_text("rewritten by the build\n")
    second = build.fetch()
    assert not build.kept() and "lib/a.c" in build.said[0]
    return second


@pytest.mark.parametrize("left", [
    "the file a symlink to a file outside", "the file a hard link to a file outside",
    "the file a symlink to a folder outside", "the file a folder",
    "the put-back name a symlink to a file outside",
    "the put-back name a hard link to a file outside",
    "the put-back name a symlink to a folder outside"])
def test_a_put_back_never_follows_a_link_the_build_left(build: Build, left: str) -> None:
    """A learned file is put back from the archive's bytes, written beside it under a name of
    prebake's own and renamed over whatever is in its place: nothing outside the tree is
    written, chmod-ed or touched, and the tree is then the fresh unpack."""
    tree = learn_a_c(build)
    fresh_tree = snapshot(tree)
    outside = build.tmp / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("not the build's\n")
    victim.chmod(0o600)
    os.utime(victim, ns=(1_000_000_000, 1_000_000_000))
    before = (victim.read_bytes(), victim.stat().st_mode, victim.stat().st_mtime_ns)
    a = tree / "lib" / "a.c"
    where = a if left.startswith("the file") else a.with_name("a.c.prebake-put-back")
    if where == a:
        a.unlink()
    if left.endswith("a symlink to a file outside"):
        where.symlink_to(victim)
    elif left.endswith("a hard link to a file outside"):
        os.link(victim, where)
    elif left.endswith("a symlink to a folder outside"):
        where.symlink_to(outside)
    else:
        where.mkdir()
        (where / "x").write_text("inside\n")
    if where != a:
        a.write_text("rewritten by the build\n")
    third = build.fetch()
    assert (victim.read_bytes(), victim.stat().st_mode, victim.stat().st_mtime_ns) == before
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert snapshot(third) == fresh_tree, build.said
    assert build.kept(), build.said


def test_a_member_named_like_prebakes_own_files_is_refused_by_name(tmp_path: Path) -> None:
    """``lib/a.c.prebake-put-back`` in the archive is refused by name, at the first unpack:
    a put-back's own file never stands in for (or removes) a member."""
    top = tmp_path / "made" / "lib-1.0"
    (top / "lib").mkdir(parents=True)
    (top / "lib" / "a.c").write_text("int a(void) { return 1; }\n")
    (top / "lib" / "a.c.prebake-put-back").write_text("a member of its own\n")
    archive = tmp_path / "odd.tar.xz"
    subprocess.run(["tar", "-C", str(tmp_path / "made"), "-cJf", str(archive), "lib-1.0"],
                   check=True)
    sha = hashlib.sha256(archive.read_bytes()).hexdigest()
    cache = SourceCache(tmp_path / "cache")
    cache.root.mkdir(parents=True)
    (cache.root / sha).write_bytes(archive.read_bytes())
    src = UrlSource(url="http://127.0.0.1:9/odd.tar.xz", sha256=sha)
    (tmp_path / "recipe").mkdir()
    with pytest.raises(PrebakeError) as err:
        materialize(src, tmp_path / "work", tmp_path / "recipe", cache)
    assert "lib/a.c.prebake-put-back" in str(err.value)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "work" / "src").exists()


def test_a_recipes_trees_are_proven_side_by_side_and_nested_ones_in_order(
        build: Build) -> None:
    """``materialize_all``: two trees in folders of their own are proven at once (each log
    line its own); a tree inside another's folder is fetched after it, in the recipe's order,
    so the outer tree's unpack or proof never removes it afterwards."""
    from prebake.sources import materialize_all

    srcs = [build.source(dest="a"), build.source(dest="b"), build.source(dest="b/inner"),
            build.source(dest="deps/c")]
    first = materialize_all(srcs, build.tmp / "m0", build.tmp / "recipe", build.cache)
    fresh = [snapshot(t) for t in first]
    assert (build.tmp / "m0" / "b" / "inner" / "lib" / "a.c").is_file()
    said: list[str] = []
    second = materialize_all(srcs, build.tmp / "m1", build.tmp / "recipe", build.cache,
                             earlier=build.tmp / "m0", log=said.append)
    assert [t.relative_to(build.tmp / "m1").as_posix() for t in second] == [
        "a", "b", "b/inner", "deps/c"]
    # a and b kept; b/inner, which b's unpack does not write, removed from b with what the
    # build added, then unpacked afresh into it (an inner tree has no earlier place of its own)
    assert sorted(s.split(":", 1)[0] for s in said) == ["a", "b", "deps/c"], said
    assert all(": kept from the earlier build" in s for s in said), said
    assert next(s for s in said if s.startswith("b:")).endswith(
        "removed what the build added: inner")
    assert [snapshot(t) for t in second] == fresh
    assert (build.tmp / "m1" / "b" / "inner" / "lib" / "a.c").is_file()
