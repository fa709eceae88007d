"""The wasm leg's bundle step on real archives: upstream's ``ar -M`` script adds one library
twice (by its alias name and its real name); the step's archive links with --whole-archive,
the script's own does not."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from prebake.errors import PrebakeError
from prebake.recipes.builtin.onnxruntime import bundle


def _lib(folder: Path, name: str, code: str) -> Path:
    src = folder / f"{name}.c"
    src.write_text(code)
    obj = folder / f"{name}.o"
    subprocess.run(["gcc", "-c", "-fPIC", str(src), "-o", str(obj)], check=True)
    lib = folder / f"lib{name}.a"
    subprocess.run(["ar", "qc", str(lib), str(obj)], check=True)
    return lib


def _whole_archive_link(tmp: Path, archive: Path) -> subprocess.CompletedProcess[str]:
    main = tmp / "main.c"
    main.write_text("int lite(void); int core(void);\nint main(void) { return lite() + core(); }\n")
    return subprocess.run(["gcc", str(main), "-o", str(tmp / "a.out"), "-Wl,--whole-archive",
                           str(archive), "-Wl,--no-whole-archive"], capture_output=True, text=True)


def _script(tmp: Path) -> Path:
    lite = _lib(tmp, "lite", "int lite(void) { return 1; }\n")
    core = _lib(tmp, "core", "int core(void) { return 2; }\n")
    alias = tmp / "alias"
    alias.mkdir()
    (alias / "liblite.a").symlink_to(lite)  # the same file by another path
    script = tmp / "bundle.ar"
    script.write_text(f"CREATE {tmp / 'upstream.a'}\nADDLIB {lite}\nADDLIB {core}\n"
                      f"ADDLIB {alias / 'liblite.a'}\nSAVE\nEND\n")
    return script


def test_a_library_added_twice_goes_in_once_and_the_archive_links_whole(tmp_path: Path) -> None:
    script = _script(tmp_path)
    subprocess.run(["ar", "-M"], stdin=script.open(), check=True, cwd=tmp_path)
    upstream = _whole_archive_link(tmp_path, tmp_path / "upstream.a")
    assert upstream.returncode != 0 and "multiple definition of `lite'" in upstream.stderr
    out = tmp_path / "lib" / "libbundled.a"
    dropped = bundle.bundle(script, out, "ar")
    assert dropped == [tmp_path / "alias" / "liblite.a"]
    members = subprocess.run(["ar", "t", str(out)], capture_output=True, text=True,
                             check=True).stdout.split()
    assert sorted(members) == ["core.o", "lite.o"]  # each once
    linked = _whole_archive_link(tmp_path, out)
    assert linked.returncode == 0, linked.stderr
    assert not out.with_name(out.name + ".partial").exists()


@pytest.mark.parametrize(("text", "why"), [
    ("CREATE x.a\nADDMOD foo.o\nSAVE\n", "not an ADDLIB/CREATE/SAVE/END line"),
    ("CREATE x.a\nSAVE\nEND\n", "no ADDLIB line"),
    ("ADDLIB /nonexistent/libx.a\n", "ADDLIB /nonexistent/libx.a: no such file"),
])
def test_a_script_it_does_not_know_fails_and_writes_nothing(tmp_path: Path, text: str,
                                                            why: str) -> None:
    script = tmp_path / "bundle.ar"
    script.write_text(text)
    out = tmp_path / "out.a"
    with pytest.raises(PrebakeError, match=why):
        bundle.bundle(script, out, "ar")
    assert not out.exists() and not out.with_name("out.a.partial").exists()
