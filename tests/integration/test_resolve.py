"""One resolver of "the binaries of a path": every binary anywhere in a folder or asset is
judged — ``lib64/``, ``bin/``, a folder reached through a symlink — and a symlink leaving the
tree is refused. ``check``, ``fetch --contract``, ``inspect`` and ``diff`` agree on it.

The binaries are real: a clean archive and a ``-flto`` one (GCC LTO objects), both from gcc.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from prebake.cli import main
from prebake.inspect.resolve import resolve
from tests import support
from tests.servers.assets import make_asset

CLEAN = "int clean_add(int a, int b) { return a + b; }\n"
LTO = "int lto_mul(int a, int b) { return a * b; }\n"


def _archives() -> tuple[Path, Path]:
    out = support.build("resolve-archives", {"clean.c": CLEAN, "lto.c": LTO}, [
        ["gcc", "-O2", "-fPIC", "-c", "clean.c", "-o", "clean.o"],
        ["gcc", "-O2", "-fPIC", "-flto", "-c", "lto.c", "-o", "lto.o"],
        ["ar", "rcs", "libclean.a", "clean.o"],
        ["gcc-ar", "rcs", "liblto.a", "lto.o"],
    ])
    return out / "libclean.a", out / "liblto.a"


def _prefix(root: Path, where: str) -> Path:
    """A prefix with a clean ``lib/`` and the LTO archive at ``where``."""
    clean, lto = _archives()
    (root / "lib").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "include" / "x.h").write_text("int clean_add(int, int);\n")
    shutil.copyfile(clean, root / "lib" / "libclean.a")
    if where == "symlinked":
        (root / "share" / "hidden").mkdir(parents=True)
        shutil.copyfile(lto, root / "share" / "hidden" / "liblto.a")
        (root / "lib" / "hidden").symlink_to("../share/hidden")
    else:
        (root / where).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(lto, root / where / "liblto.a")
    return root


WHERE = {"lib64": "lib64/liblto.a", "bin": "bin/liblto.a", "symlinked": "liblto.a"}


@pytest.mark.parametrize("where", list(WHERE))
def test_check_judges_binaries_outside_lib(tmp_path: Path, where: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    prefix = _prefix(tmp_path / "prefix", where)
    contract = tmp_path / "c.toml"
    contract.write_text('lto = "none"\n')
    # lib/ alone is clean (and lib/hidden, judged from lib/, leaves that tree: refused)
    assert main(["check", "--contract", str(contract), str(prefix / "lib")]) == (
        1 if where == "symlinked" else 0)
    capsys.readouterr()
    assert main(["check", "--contract", str(contract), str(prefix)]) == 1
    out = capsys.readouterr().out
    assert "lto: required none, found gcc-lto" in out and WHERE[where] in out
    assert "libclean.a" not in out.split("lto: required")[0].rsplit("\n", 1)[-1]


@pytest.mark.parametrize("where", list(WHERE))
def test_fetch_contract_refuses_an_asset_with_a_hidden_lto_archive(tmp_path: Path,
                                                                   where: str) -> None:
    prefix = _prefix(tmp_path / "prefix", where)
    releases = tmp_path / "releases"
    make_asset(releases / "continuous", "hid", "1.0.0", "linux-x86_64", prefix=prefix)
    contract = tmp_path / "c.toml"
    contract.write_text('lto = "none"\n')
    into = tmp_path / "into"
    proc = support.prebake("fetch", "hid==1.0.0", "--platform", "linux-x86_64", "--store",
                           f"file://{releases}", "--into", into, "--contract", contract,
                           "--lock", tmp_path / "prebake.lock")
    assert proc.returncode == 1, proc.stderr
    assert "hid-1.0.0-linux-x86_64.tar.xz!" in proc.stderr and WHERE[where] in proc.stderr
    assert "lto: required none, found gcc-lto" in proc.stderr
    assert not (into / "lib").exists()


def test_a_symlink_leaving_the_tree_is_refused_not_followed(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    _clean, lto = _archives()
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copyfile(lto, outside / "liblto.a")
    prefix = _prefix(tmp_path / "prefix", "lib64")
    (prefix / "lib64" / "liblto.a").unlink()
    (prefix / "lib" / "elsewhere").symlink_to(outside)
    found = resolve([prefix], tmp_path / "tmp")
    assert [b.rel for b in found.binaries] == ["lib/libclean.a"]
    assert found.escapes == [f"{prefix}/lib/elsewhere -> {outside}"]
    contract = tmp_path / "c.toml"
    contract.write_text('lto = "none"\n')
    assert main(["check", "--contract", str(contract), str(prefix)]) == 1
    assert "lib/elsewhere: symlink: points outside the tree" in capsys.readouterr().out


def test_inspect_and_diff_see_the_same_binaries(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    prefix = _prefix(tmp_path / "prefix", "bin")
    shutil.copytree(prefix / "lib", prefix / "lib64")  # lib64/libclean.a too
    assert main(["inspect", "--json", str(prefix)]) == 0
    seen = sorted(Path(r["path"]).relative_to(prefix).as_posix()
                  for r in json.loads(capsys.readouterr().out)["results"])
    assert seen == ["bin/liblto.a", "lib/libclean.a", "lib64/libclean.a"]
    from prebake.diff.side import load_side

    side = load_side(prefix)
    assert sorted(lib.path for lib in side.libraries.values()) == seen
