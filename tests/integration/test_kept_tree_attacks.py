"""A kept source tree is proven against the locked archive, not trusted on the record beside it:
the attack, through ``prebake build`` as a release engineer runs it.

Build 1 runs a recipe with one extra command that edits ``tiny.c`` in its unpacked source (the
same size, its modification time put back) and rewrites the record prebake keeps beside the
tree (``.sources/src.json``) to match — or to say the file is one the build rewrites; build 2,
with the clean recipe (another input hash), must not ship the edited bytes: the log names the
file, the tree is unpacked again (or the file put back from the archive), and the asset is
the one a build from a fresh unpack makes. The archive is made here with GNU
tar and reaches the build through prebake's source cache (no network).
"""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests import support

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

ASSET = "tiny-1.0.0-linux-x86_64.tar.xz"
TINY_C = 'const char *tiny_word(void) { return "clean"; }\n'
RECIPE = '''\
"""tiny: one object from a source archive."""

from prebake.recipes import Build, Outputs, Recipe, UrlSource

RECIPE = Recipe(
    name="tiny",
    pin="tiny",
    sources=(UrlSource("http://127.0.0.1:9/tiny-1.0.tar.xz", sha256="SHA256"),),
    platforms={"linux-x86_64": Build(commands=(POISON
        "cmake -E make_directory {build}/obj {prefix}/lib {prefix}/include",
        "{cc} -O2 -fPIC -c {src}/tiny.c -o {build}/obj/tiny.o",
        "ar rcsD {prefix}/lib/libtiny.a {build}/obj/tiny.o",
        "cmake -E copy {src}/tiny.h {prefix}/include/tiny.h",
    ))},
    outputs=Outputs(libs={"*": ("lib/libtiny.a",)}, headers=("include/tiny.h",),
                    license="LICENSE"),
    kind={"*": "static"},
)
'''
# what a command that knows prebake's layout can do: edit a file of its source tree, keep its
# size and time, and rewrite every record beside the trees to the tree as it is now
POISON = '''\
import json, os, stat, sys
from pathlib import Path

src, work = Path(sys.argv[1]), Path(sys.argv[2])
c = src / "tiny.c"
st = c.stat()
c.write_bytes(c.read_bytes().replace(b"clean", b"dirty"))
os.utime(c, ns=(st.st_atime_ns, st.st_mtime_ns))
for rec in (work / ".sources").glob("*.json"):
    data = json.loads(rec.read_text())
    for rel in data.get("entries", {}):
        s = (src / rel).lstat()
        kind = "dir" if stat.S_ISDIR(s.st_mode) else "file"
        data["entries"][rel] = ([kind, stat.S_IMODE(s.st_mode), 0, s.st_dev, s.st_ino, 0, 0,
                                 ""] if kind == "dir" else
                                [kind, stat.S_IMODE(s.st_mode), s.st_size, s.st_dev, s.st_ino,
                                 s.st_mtime_ns, s.st_ctime_ns, ""])
    if len(sys.argv) > 3:  # and say that the build rewrites it: it is put back, then
        data["learned"] = sorted(set(data.get("learned", [])) | {"tiny.c"})
    rec.write_text(json.dumps(data))
'''


def _archive(tmp: Path) -> tuple[bytes, str]:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, text in (("tiny-1.0/tiny.c", TINY_C),
                           ("tiny-1.0/tiny.h", "const char *tiny_word(void);\n"),
                           ("tiny-1.0/LICENSE", "tiny: test data\n")):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(text), 1_600_000_000, 0o644
            tf.addfile(info, io.BytesIO(text.encode()))
    data = subprocess.run(["xz", "-c"], input=out.getvalue(), capture_output=True,
                          check=True).stdout
    return data, hashlib.sha256(data).hexdigest()


def _write(ws: Path, sha: str, poisoned: bool, learn: bool = False) -> None:
    line = "{python} {recipe_dir}/poison.py {src} {work}" + (" learn" if learn else "")
    poison = f'\n        "{line}",' if poisoned else ""
    (ws / "recipes" / "tiny").mkdir(parents=True, exist_ok=True)
    (ws / "recipes" / "tiny" / "recipe.py").write_text(
        RECIPE.replace("SHA256", sha).replace("POISON", poison))
    (ws / "recipes" / "tiny" / "poison.py").write_text(POISON)


def _library(ws: Path) -> bytes:
    asset = next((ws / "releases").rglob(ASSET))
    with tarfile.open(asset, "r:xz") as tf:
        return tf.extractfile("lib/libtiny.a").read()  # type: ignore[union-attr]


@pytest.mark.parametrize("learn", [False, True], ids=["record rewritten",
                                                   "record rewritten to learn the file"])
def test_an_edited_tree_with_its_record_rewritten_is_not_shipped(tmp_path: Path, learn: bool
                                                                 ) -> None:
    data, sha = _archive(tmp_path)
    cache = tmp_path / "cache"
    (cache / "sources").mkdir(parents=True)
    (cache / "sources" / sha).write_bytes(data)
    env = {"PREBAKE_CACHE": str(cache)}
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "prebake.toml").write_text(support.gcc_workspace("tiny", 'tiny = "1.0.0"', "libs",
                                                           '["tiny"]'))
    _write(ws, sha, poisoned=True, learn=learn)
    first = support.prebake("-C", ws, "build", "--platform", "linux-x86_64", env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert b"dirty" in _library(ws)  # the recipe's own command, in its own build
    _write(ws, sha, poisoned=False)
    second = support.prebake("-C", ws, "build", "--platform", "linux-x86_64", env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    log = (ws / ".prebake" / "logs" / "tiny--linux-x86_64.log").read_text()
    said = [ln for ln in log.splitlines() if ln.startswith("# src: ")]
    assert len(said) == 1, said
    if learn:  # the record may name files to put back: they come from the archive
        assert said[0].startswith("# src: kept from the earlier build: proven against its "
                                  "archive") and "; put back from the archive: tiny.c" in said[0]
    else:
        assert said[0].startswith("# src: unpacked again: tiny.c: other bytes than the "
                                  "archive's member"), said
    lib = _library(ws)
    assert b"dirty" not in lib and b"clean" in lib
    # and it is the asset a build from a fresh unpack makes
    shutil.rmtree(ws / ".prebake" / "work")
    third = support.prebake("-C", ws, "build", "--platform", "linux-x86_64", "--force",
                            env=env)
    assert third.returncode == 0, third.stdout + third.stderr
    assert _library(ws) == lib
