"""safe_extract: every class of hostile archive is refused with the target and its surroundings
left byte-for-byte as they were; good archives land whole."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from prebake.errors import PrebakeError
from prebake.extract import UnsafeArchive, safe_extract

TarBuilder = Callable[[tarfile.TarFile], None]


def _file(tf: tarfile.TarFile, name: str, data: bytes = b"x", mode: int = 0o644) -> None:
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mode = mode
    tf.addfile(ti, io.BytesIO(data))


def _link(tf: tarfile.TarFile, name: str, target: str, kind: bytes) -> None:
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.linkname = target
    tf.addfile(ti)


def _special(tf: tarfile.TarFile, name: str, kind: bytes) -> None:
    ti = tarfile.TarInfo(name)
    ti.type = kind
    tf.addfile(ti)


def make_tar(path: Path, build: TarBuilder, mode: str = "w:xz") -> Path:
    with tarfile.open(path, mode) as tf:  # type: ignore[call-overload]
        build(tf)
    return path


def snapshot(root: Path) -> dict[str, object]:
    """Every path under ``root`` with its type and content (links by target)."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", str(p.readlink()))
            elif p.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
    return out


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """``tmp_path/site`` holds the target ``dest`` (with prior content) and a neighbour file."""
    site = tmp_path / "site"
    dest = site / "dest"
    (dest / "include").mkdir(parents=True)
    (dest / "include" / "old.h").write_text("old\n")
    (site / "neighbour.txt").write_text("keep me\n")
    return site, dest


HOSTILE_TARS: dict[str, tuple[TarBuilder, str]] = {
    "traversal": (lambda tf: (_file(tf, "ok.txt"), _file(tf, "../evil.txt")), "'..'"),
    "traversal-deep": (lambda tf: _file(tf, "a/b/../../../evil.txt"), "'..'"),
    "absolute": (lambda tf: _file(tf, "/tmp/prebake-evil-abs.txt"), "absolute path"),
    "symlink-absolute": (lambda tf: _link(tf, "lib", "/etc", tarfile.SYMTYPE), "absolute"),
    "symlink-escape": (lambda tf: _link(tf, "a/up", "../../..", tarfile.SYMTYPE), "outside"),
    "symlink-chain-escape": (
        lambda tf: (
            _file(tf, "d1/d2/f"),
            _link(tf, "s", "d1/d2", tarfile.SYMTYPE),
            _link(tf, "t", "s/../../..", tarfile.SYMTYPE),
        ),
        "outside",
    ),
    "symlink-chain-real-escape": (
        # v -> a/u/../.. is lexically "." but a/u -> .. is the root, so it really resolves to
        # the target's parent: only the real resolution (realpath) catches this one
        lambda tf: (
            _file(tf, "a/f"),
            _link(tf, "a/u", "..", tarfile.SYMTYPE),
            _link(tf, "v", "a/u/../..", tarfile.SYMTYPE),
        ),
        "outside",
    ),
    "write-through-symlink": (
        lambda tf: (_link(tf, "lib", "sub", tarfile.SYMTYPE), _file(tf, "lib/x.txt")),
        "non-folder",
    ),
    "hardlink-escape": (lambda tf: _link(tf, "pw", "../../etc/passwd", tarfile.LNKTYPE), "'..'"),
    "hardlink-absolute": (lambda tf: _link(tf, "pw", "/etc/passwd", tarfile.LNKTYPE),
                          "absolute"),
    "hardlink-nonmember": (lambda tf: _link(tf, "pw", "etc/passwd", tarfile.LNKTYPE),
                           "not a regular file member"),
    "char-device": (lambda tf: _special(tf, "null", tarfile.CHRTYPE), "device node"),
    "block-device": (lambda tf: _special(tf, "sda", tarfile.BLKTYPE), "device node"),
    "fifo": (lambda tf: _special(tf, "pipe", tarfile.FIFOTYPE), "fifo"),
    "duplicate": (lambda tf: (_file(tf, "a.txt", b"1"), _file(tf, "./a.txt", b"2")), "duplicate"),
    "file-then-dir-clash": (lambda tf: (_file(tf, "a/b"), _file(tf, "a")), "clashes"),
    "bomb": (lambda tf: _file(tf, "zeros.bin", bytes(3 * 1024 * 1024)), "size budget"),
    "bomb-many-small": (
        lambda tf: [_file(tf, f"z{i}.bin", bytes(300 * 1024)) for i in range(8)],
        "size budget",
    ),
    "member-count": (lambda tf: [_file(tf, f"f{i}") for i in range(60)], "member budget"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_TARS))
def test_hostile_tar_is_rejected_and_nothing_changes(
    case: str, world: tuple[Path, Path], tmp_path: Path
) -> None:
    site, dest = world
    build, rule = HOSTILE_TARS[case]
    archive = make_tar(tmp_path / f"{case}.tar.xz", build)
    before = snapshot(site)
    with pytest.raises(UnsafeArchive) as info:
        safe_extract(archive, dest, max_bytes=2 * 1024 * 1024, max_members=50)
    assert rule in str(info.value)
    assert str(archive) in str(info.value)
    assert snapshot(site) == before
    assert not Path("/tmp/prebake-evil-abs.txt").exists()
    assert not (tmp_path / "evil.txt").exists()


def test_bomb_is_refused_from_its_header_before_writing(tmp_path: Path) -> None:
    """256 MiB of zeros compresses to ~40 KiB of xz; the budget stops it without writing."""
    archive = tmp_path / "bomb.tar.xz"

    class Zeros:
        def read(self, n: int = -1) -> bytes:
            return bytes(n)

    with tarfile.open(archive, "w:xz", preset=0) as tf:
        ti = tarfile.TarInfo("zeros.bin")
        ti.size = 256 * 1024**2
        tf.addfile(ti, Zeros())  # type: ignore[arg-type]
    assert archive.stat().st_size < 1024 * 1024
    with pytest.raises(UnsafeArchive, match="size budget"):
        safe_extract(archive, tmp_path / "new/deep/out", max_bytes=64 * 1024 * 1024)
    assert not (tmp_path / "new").exists()  # nor the folders made to hold it
    assert [p.name for p in tmp_path.iterdir()] == ["bomb.tar.xz"]


def _zip(path: Path, entries: list[tuple[str, bytes, int]]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data, mode in entries:
            zi = zipfile.ZipInfo(name)
            zi.external_attr = mode << 16
            zf.writestr(zi, data)
    return path


HOSTILE_ZIPS: dict[str, tuple[list[tuple[str, bytes, int]], str]] = {
    "traversal": ([("../evil.txt", b"x", 0o100644)], "'..'"),
    "absolute": ([("/tmp/prebake-evil-abs.txt", b"x", 0o100644)], "absolute"),
    "drive": ([("C:/evil.txt", b"x", 0o100644)], "absolute"),
    "backslash": ([("..\\evil.txt", b"x", 0o100644)], "backslash"),
    "symlink-escape": ([("lib", b"../../outside", 0o120777)], "outside"),
    "device": ([("null", b"", 0o020644)], "device node"),
    "duplicate": ([("a.txt", b"1", 0o100644), ("a.txt", b"2", 0o100644)], "duplicate"),
    "bomb": ([("zeros", bytes(3 * 1024 * 1024), 0o100644)], "size budget"),
}


@pytest.mark.filterwarnings("ignore:Duplicate name")
@pytest.mark.parametrize("case", sorted(HOSTILE_ZIPS))
def test_hostile_zip_is_rejected(case: str, world: tuple[Path, Path], tmp_path: Path) -> None:
    site, dest = world
    entries, rule = HOSTILE_ZIPS[case]
    archive = _zip(tmp_path / f"{case}.zip", entries)
    before = snapshot(site)
    with pytest.raises(UnsafeArchive, match=rule):
        safe_extract(archive, dest, max_bytes=2 * 1024 * 1024)
    assert snapshot(site) == before


def test_corrupt_archive_is_one_line_error(tmp_path: Path, world: tuple[Path, Path]) -> None:
    site, dest = world
    good = make_tar(tmp_path / "g.tar.xz", lambda tf: _file(tf, "big", os.urandom(200_000)))
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "bad.tar.xz"
    bad.write_bytes(bytes(data[: len(data) - 100]))
    before = snapshot(site)
    with pytest.raises(PrebakeError, match=r"bad\.tar\.xz"):
        safe_extract(bad, dest)
    assert snapshot(site) == before


def _good(tf: tarfile.TarFile) -> None:
    _file(tf, "pkg/include/foo.h", b"int foo(void);\n")
    _file(tf, "pkg/lib/libfoo.so.1", b"\x7fELF", mode=0o755)
    _link(tf, "pkg/lib/libfoo.so", "libfoo.so.1", tarfile.SYMTYPE)
    _link(tf, "pkg/lib/libfoo-copy.so.1", "pkg/lib/libfoo.so.1", tarfile.LNKTYPE)
    _link(tf, "pkg/share/inc", "../include", tarfile.SYMTYPE)


@pytest.mark.parametrize("mode", ["w:xz", "w:gz", "w"])
def test_good_archive_lands_whole(mode: str, tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "good.tar", _good, mode)
    dest = tmp_path / "out"
    names = safe_extract(archive, dest, strip_components=1)
    assert names == ["include/foo.h", "lib/libfoo.so.1", "lib/libfoo.so", "lib/libfoo-copy.so.1",
                     "share/inc"]
    assert (dest / "lib/libfoo.so").read_bytes() == b"\x7fELF"
    assert str((dest / "lib/libfoo.so").readlink()) == "libfoo.so.1"
    assert (dest / "share/inc/foo.h").read_text() == "int foo(void);\n"
    assert (dest / "lib/libfoo-copy.so.1").read_bytes() == b"\x7fELF"
    assert not (dest / "lib/libfoo-copy.so.1").samefile(dest / "lib/libfoo.so.1")
    assert os.access(dest / "lib/libfoo.so.1", os.X_OK)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.tar", "out"]


def test_replace_swaps_content_and_merge_refuses_clashes(world: tuple[Path, Path],
                                                         tmp_path: Path) -> None:
    site, dest = world
    archive = make_tar(tmp_path / "a.tar.xz", lambda tf: _file(tf, "include/new.h", b"new\n"))
    safe_extract(archive, dest)  # merge: old.h stays, new.h joins
    assert sorted(p.name for p in (dest / "include").iterdir()) == ["new.h", "old.h"]
    before = snapshot(site)
    with pytest.raises(PrebakeError, match="already exists"):
        safe_extract(archive, dest)
    assert snapshot(site) == before
    safe_extract(archive, dest, replace=True)
    assert sorted(p.name for p in (dest / "include").iterdir()) == ["new.h"]
    assert sorted(p.name for p in site.iterdir()) == ["dest", "neighbour.txt"]


def test_zip_good(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "g.zip", [("d/", b"", 0o040755), ("d/a.txt", b"hi", 0o100644),
                                        ("d/l", b"a.txt", 0o120777)])
    safe_extract(archive, tmp_path / "out")
    assert (tmp_path / "out/d/l").read_text() == "hi"


def test_case_only_duplicates_on_case_insensitive_systems(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = make_tar(tmp_path / "c.tar.xz", lambda tf: (_file(tf, "inc/A.h"),
                                                          _file(tf, "inc/a.h")))
    monkeypatch.setattr("prebake.extract.sys.platform", "darwin")
    with pytest.raises(UnsafeArchive, match="case-insensitive"):
        safe_extract(archive, tmp_path / "mac")
    monkeypatch.setattr("prebake.extract.sys.platform", "linux")
    assert safe_extract(archive, tmp_path / "linux") == ["inc/A.h", "inc/a.h"]


def _two_libraries(tf: tarfile.TarFile) -> None:
    _file(tf, "./usr/include/boost/mp11.hpp", b"#include <boost/mp11/list.hpp>\n")
    _file(tf, "./usr/include/boost/mp11/list.hpp", b"// list\n")
    _file(tf, "./usr/include/boost/mp11x.hpp", b"// not mp11's: a prefix, not a folder\n")
    _file(tf, "./usr/include/boost/asio.hpp", b"// asio\n")
    _link(tf, "./usr/include/boost/mp11/alias.hpp", "list.hpp", tarfile.SYMTYPE)
    _file(tf, "./usr/lib/cmake/Boost/BoostConfig.cmake", b"# config\n")


def test_members_take_listed_files_and_folders_only(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "boost.tar.xz", _two_libraries)
    dest = tmp_path / "out"
    names = safe_extract(archive, dest, strip_components=1,
                         members=["include/boost/mp11", "include/boost/mp11.hpp",
                                  "./lib/cmake/"])
    assert names == ["include/boost/mp11.hpp", "include/boost/mp11/list.hpp",
                     "include/boost/mp11/alias.hpp", "lib/cmake/Boost/BoostConfig.cmake"]
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if not p.is_dir()) == [
        "include/boost/mp11.hpp", "include/boost/mp11/alias.hpp", "include/boost/mp11/list.hpp",
        "lib/cmake/Boost/BoostConfig.cmake"]
    assert (dest / "include/boost/mp11/alias.hpp").read_text() == "// list\n"


def test_members_every_member_still_judged(world: tuple[Path, Path], tmp_path: Path) -> None:
    """A hostile member outside the listed paths refuses the whole archive: the listing says
    what is written, not what is trusted."""
    site, dest = world
    before = snapshot(site)
    evil = make_tar(tmp_path / "evil.tar.xz",
                    lambda tf: (_file(tf, "keep/a.h"), _file(tf, "../evil.txt")))
    with pytest.raises(UnsafeArchive, match=r"'\.\.'"):
        safe_extract(evil, dest, members=["keep"])
    bomb = make_tar(tmp_path / "bomb.tar.xz",
                    lambda tf: (_file(tf, "keep/a.h"), _file(tf, "zeros", bytes(3 << 20))))
    with pytest.raises(UnsafeArchive, match="size budget"):
        safe_extract(bomb, dest, members=["keep"], max_bytes=2 << 20)
    linked = make_tar(tmp_path / "hard.tar.xz",
                      lambda tf: (_file(tf, "other/x"), _link(tf, "keep/x", "other/x",
                                                              tarfile.LNKTYPE)))
    with pytest.raises(UnsafeArchive, match="not taken"):
        safe_extract(linked, dest, members=["keep"])
    assert snapshot(site) == before


@pytest.mark.parametrize("listed", ["include/boost/mp12", "include/boost/mp1", "../x", "."])
def test_members_a_path_that_names_nothing_is_an_error(listed: str, world: tuple[Path, Path],
                                                        tmp_path: Path) -> None:
    site, dest = world
    before = snapshot(site)
    archive = make_tar(tmp_path / "boost.tar.xz", _two_libraries)
    with pytest.raises(PrebakeError, match=r"no member at|not a path inside") as err:
        safe_extract(archive, dest, strip_components=1, members=["include/boost/mp11", listed],
                     replace=True)
    assert str(archive) in str(err.value) and "\n" not in str(err.value)
    assert snapshot(site) == before


@pytest.mark.parametrize("left", ["include/boost/mp12", "include/boost/mp1", "../x"])
def test_skip_leaves_paths_out_and_each_must_name_a_member(
        left: str, world: tuple[Path, Path], tmp_path: Path) -> None:
    """``skip`` is the converse of ``members``: the paths are judged and not written; with
    ``members`` too, a member must be listed and not skipped. A skip path that names nothing
    (a typo, a release that moved the folder) is an error, never a full tree."""
    archive = make_tar(tmp_path / "boost.tar.xz", _two_libraries)
    dest = tmp_path / "out"
    names = safe_extract(archive, dest, strip_components=1,
                         skip=["include/boost/mp11", "./lib/cmake/Boost/BoostConfig.cmake"])
    # a folder's path leaves out what lies under it, not the names it is a prefix of
    assert names == ["include/boost/mp11.hpp", "include/boost/mp11x.hpp",
                     "include/boost/asio.hpp"]
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if not p.is_dir()) == [
        "include/boost/asio.hpp", "include/boost/mp11.hpp", "include/boost/mp11x.hpp"]
    both = safe_extract(archive, tmp_path / "both", strip_components=1,
                        members=["include/boost"], skip=["include/boost/mp11x.hpp"])
    assert both == ["include/boost/mp11.hpp", "include/boost/mp11/list.hpp",
                    "include/boost/asio.hpp", "include/boost/mp11/alias.hpp"]
    evil = make_tar(tmp_path / "evil.tar.xz",
                    lambda tf: (_file(tf, "keep/a.h"), _file(tf, "cuda/../../evil.txt")))
    with pytest.raises(UnsafeArchive, match=r"'\.\.'"):
        safe_extract(evil, tmp_path / "evil", skip=["cuda"])
    site, dest = world
    before = snapshot(site)
    with pytest.raises(PrebakeError, match=r"no member at|not a path inside") as err:
        safe_extract(archive, dest, strip_components=1, skip=["include/boost/mp11", left],
                     replace=True)
    assert str(archive) in str(err.value) and "\n" not in str(err.value)
    assert "leave out" in str(err.value)
    assert snapshot(site) == before


# .xz archives are decompressed by an `xz` child where the machine has one (extract._XzChild),
# by liblzma in the process otherwise: both must land the same tree and refuse the same way.
@pytest.fixture(params=["xz child", "liblzma"])
def xz_reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    from prebake import extract

    if request.param == "liblzma":
        monkeypatch.setattr(extract, "_xz_utils", lambda: None)
    else:
        assert extract._xz_utils(), "XZ Utils' xz is missing (scripts/bootstrap installs it)"
    return str(request.param)


def test_an_xz_that_is_not_xz_utils_is_not_used(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Another ``xz`` on PATH (BusyBox's lacks --threads) would fail every extraction: liblzma
    reads the archive then."""
    from prebake import extract

    fake = tmp_path / "bin" / "xz"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'BusyBox v1.36.1 multi-call binary.'\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    extract._xz_utils.cache_clear()
    try:
        assert extract._xz_utils() is None
        archive = make_tar(tmp_path / "good.tar.xz", _good, "w:xz")
        assert "lib/libfoo.so.1" in safe_extract(archive, tmp_path / "out", strip_components=1)
    finally:
        extract._xz_utils.cache_clear()


def test_either_xz_reader_lands_the_same_tree(xz_reader: str, tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "good.tar.xz", _good, "w:xz")
    names = safe_extract(archive, tmp_path / "out", strip_components=1)
    assert names == ["include/foo.h", "lib/libfoo.so.1", "lib/libfoo.so", "lib/libfoo-copy.so.1",
                     "share/inc"]
    assert (tmp_path / "out/share/inc/foo.h").read_text() == "int foo(void);\n"


def test_either_xz_reader_refuses_a_corrupt_stream_in_one_line(xz_reader: str,
                                                               tmp_path: Path) -> None:
    good = make_tar(tmp_path / "g.tar.xz", lambda tf: _file(tf, "big", os.urandom(300_000)))
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "bad.tar.xz"
    bad.write_bytes(bytes(data))
    with pytest.raises(PrebakeError, match=r"bad\.tar\.xz: not a readable archive") as err:
        safe_extract(bad, tmp_path / "out")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()


def _children_named(name: str) -> list[int]:
    """Live (not yet reaped) children of this process whose command is ``name``."""
    out = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)
            comm = fields[0].split("(", 1)[1]
            ppid = int(fields[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and comm == name:
            out.append(int(stat_file.parent.name))
    return out


def test_an_unsafe_member_stops_the_xz_child(tmp_path: Path) -> None:
    """Refused at its first member, a large archive is not decompressed to its end, and its xz
    child is stopped and reaped: no process outlives the refusal."""
    archive = tmp_path / "a.tar.xz"
    with tarfile.open(archive, "w:xz", preset=0) as tf:
        _file(tf, "../escape", b"x")
        _file(tf, "big", bytes(256 * 1024 * 1024))  # ~40 KB of xz; seconds to decompress
    with pytest.raises(UnsafeArchive, match="escape"):
        safe_extract(archive, tmp_path / "out", max_ratio=None)
    assert _children_named("xz") == []
