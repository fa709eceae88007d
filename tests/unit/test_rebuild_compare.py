"""``prebake.rebuild.compare``: where two ``.tar.xz`` assets first differ, on small archives made
here (a static library of two members, a header) — a member's byte, a tar header's field, the
compression alone, a stream that stops decompressing, a file only one side has."""

from __future__ import annotations

import io
import lzma
import tarfile
from collections.abc import Mapping
from pathlib import Path

from prebake.rebuild.compare import differing, first_difference, stream_size


def _ar(members: Mapping[str, bytes]) -> bytes:
    out = b"!<arch>\n"
    for name, data in members.items():
        out += f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{644:<8}{len(data):<10}`\n".encode() + data
        out += b"\n" if len(data) % 2 else b""
    return out


LIB = {"one.o": b"\x7fELF" + bytes(60), "two.o": b"\x7fELF" + bytes(range(200))}
FILES = {"include/x.h": b"int x(void);\n", "lib/libx.a": _ar(LIB)}


def _asset(path: Path, files: Mapping[str, bytes], *, mode: int = 0o644, preset: int = 6
           ) -> Path:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), mode, 315532800
            tf.addfile(info, io.BytesIO(files[name]))
    path.write_bytes(lzma.compress(raw.getvalue(), preset=preset))
    return path


def _compare(given: Path, rebuilt: Path) -> tuple[str, str, list[str] | None]:
    size = stream_size(rebuilt)
    d = first_difference(given, rebuilt, size)
    return d.where, d.detail, differing(given, rebuilt, size)


def test_a_byte_of_an_archive_member(tmp_path: Path) -> None:
    rebuilt = _asset(tmp_path / "r.tar.xz", FILES)
    changed = dict(LIB, **{"two.o": LIB["two.o"][:50] + b"\xff" + LIB["two.o"][51:]})
    given = _asset(tmp_path / "g.tar.xz", dict(FILES, **{"lib/libx.a": _ar(changed)}))
    where, detail, diff = _compare(given, rebuilt)
    assert where == "lib/libx.a(two.o)"
    assert detail == "byte 50 of 204 differs: 0xff here, 0x2e in the rebuild"
    assert diff == ["lib/libx.a", "lib/libx.a(two.o)"]


def test_a_tar_header_field(tmp_path: Path) -> None:
    where, detail, diff = _compare(_asset(tmp_path / "g.tar.xz", FILES, mode=0o755),
                                   _asset(tmp_path / "r.tar.xz", FILES))
    assert where == "include/x.h" and detail == ("its tar header differs (byte 104 of the "
                                                 "header, its mode)")
    assert diff == []  # every file's bytes are the same


def test_the_compression_alone(tmp_path: Path) -> None:
    where, detail, diff = _compare(_asset(tmp_path / "g.tar.xz", FILES, preset=1),
                                   _asset(tmp_path / "r.tar.xz", FILES, preset=9))
    assert where == "(the archive itself)" and detail.startswith("every file is the same")
    assert diff == []


def test_a_stream_that_stops_decompressing(tmp_path: Path) -> None:
    rebuilt = _asset(tmp_path / "r.tar.xz", FILES)
    raw = bytearray(rebuilt.read_bytes())
    raw[len(raw) // 2] ^= 0x40
    given = tmp_path / "g.tar.xz"
    given.write_bytes(bytes(raw))
    where, detail, diff = _compare(given, rebuilt)
    assert where in FILES or where.startswith("lib/libx.a(")
    assert detail.startswith(("the given asset stops decompressing here (xz: ", "byte "))
    assert diff is None  # it cannot be read whole


def test_a_file_only_one_side_has(tmp_path: Path) -> None:
    rebuilt = _asset(tmp_path / "r.tar.xz", FILES)
    given = _asset(tmp_path / "g.tar.xz", dict(FILES, **{"share/extra.txt": b"more\n"}))
    where, detail, diff = _compare(given, rebuilt)
    assert diff == ["share/extra.txt"]
    assert where == "(the archive itself)" or "tar stream" in detail
