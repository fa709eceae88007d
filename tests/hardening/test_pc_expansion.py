"""A ``.pc`` file is judged by what the real pkg-config makes of it, at build and at fetch.

The issue's six spellings that sent a consumer outside the asset while only ``-L/…`` was
refused — a backslash continuation line, a lowercase field name, ``-Wl,-rpath=/…``, a variable
``root=/`` used as ``-L${root}opt/…``, ``-idirafter/…`` and ``-iquote/…``, and
``${pcfiledir}/../../…`` climbing out — and more (``-isystem``, ``-I /x`` split, ``-Wl,-L``,
``-F``, ``--sysroot=``, a bare ``/x/libfoo.a``, ``-L=/…``, ``-Xlinker``, a ``-D`` value, a
variable no flag uses, CRLF lines, a response file, an rpath list). A real build installs them
and must refuse every one; an asset holding them, published by hand, must not be installed by
``fetch``. A well-formed
``.pc`` (relative to ``${pcfiledir}``, requiring modules the consumer provides, ``$ORIGIN``,
``-Wl,-Bstatic``) passes both.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

from prebake.package.naming import sha256_line
from tests import support

PLATFORM = "linux-x86_64"
HEAD = "Name: {name}\nDescription: a spelling\nVersion: 1.0\n"
# file stem -> (its body after the head, a word of what pkg-config gives for it)
LEAKS = {
    "continuation": ("Libs: -L${pcfiledir}/../../lib -lx \\\n  -L/usr/lib/cont\n",
                     "-L/usr/lib/cont"),
    "lowercase": ("libs.private: -L/usr/lib/lower\nLibs: -lx\n", "-L/usr/lib/lower"),
    "rpath": ("Libs: -lx -Wl,-rpath=/opt/rpath\n", "-Wl,-rpath=/opt/rpath"),
    "rootvar": ("root=/\nLibs: -L${root}opt/rootvar -lx\n", "-L/opt/rootvar"),
    "idirafter": ("Cflags: -idirafter/opt/after\n", "-idirafter/opt/after"),
    "iquote": ("Cflags: -iquote/opt/quote\n", "-iquote/opt/quote"),
    "climb": ("Libs: -L${pcfiledir}/../../../../../../../../../opt/climb -lx\n", "opt/climb"),
    "isystem": ("Cflags: -isystem /opt/sys\n", "-isystem /opt/sys"),
    "split": ("Cflags: -I /opt/split\n", "-I /opt/split"),
    "wl-l": ("Libs: -Wl,-L/opt/wl -lx\n", "-Wl,-L/opt/wl"),
    "framework": ("Cflags: -F/opt/frameworks\n", "-F/opt/frameworks"),
    "sysroot": ("Cflags: --sysroot=/opt/sysroot\n", "--sysroot=/opt/sysroot"),
    "bare": ("Libs: /opt/bare/libfoo.a\n", "/opt/bare/libfoo.a"),
    "sysroot-relative": ("Libs: -L=/usr/lib/sysrel -lx\n", "-L=/usr/lib/sysrel"),
    "xlinker": ("Libs: -Xlinker -rpath -Xlinker /opt/xl\n", "-Xlinker /opt/xl"),
    "define": ("Cflags: -DDATADIR=/usr/share/define\n", "-DDATADIR=/usr/share/define"),
    "variable": ("datadir=/usr/share/variable\nLibs: -lx\n", "/usr/share/variable"),
    "crlf": ("Libs: -L/opt/crlf -lx\r\n", "-L/opt/crlf"),
    "relative": ("Cflags: -Iinclude\n", "-Iinclude"),
    "response-file": ("Libs: -lx -Wl,@/opt/linker-flags\n", "-Wl,@/opt/linker-flags"),
    "rpath-list": ("Libs: -Wl,-rpath,${pcfiledir}/../../lib:/usr/lib/extra -lx\n",
                   "/usr/lib/extra"),
}
CLEAN = ("prefix=${pcfiledir}/../..\nlibdir=${prefix}/lib\nincludedir=${prefix}/include\n"
         "Requires: zlib >= 1.2.11, consumer-thing\nRequires.private: libbar < 2, libbaz > 3\n"
         "Libs: -L${libdir} -lclean -Wl,-rpath,$ORIGIN/../lib -Wl,-Bstatic -lz -Wl,-Bdynamic\n"
         "Cflags: -I${includedir} -DCLEAN=1 -pthread\n")


def _pc(name: str, body: str) -> bytes:
    return (HEAD.format(name=name) + body).encode()


def _all_leaks() -> dict[str, bytes]:
    return {f"lib/pkgconfig/leak-{stem}.pc": _pc(f"leak-{stem}", body)
            for stem, (body, _word) in LEAKS.items()}


def _refused_each(message: str) -> None:
    flat = " ".join(message.split())
    for stem, (_body, word) in LEAKS.items():
        line = next((x for x in message.splitlines() if f"lib/pkgconfig/leak-{stem}.pc:" in x),
                    None)
        assert line is not None, (stem, flat)
        assert word in line, (stem, line)
    assert "clean.pc" not in flat, flat


RECIPE = """\
from prebake.recipes import Build, LocalSource, Outputs, Recipe

RECIPE = Recipe(
    name="pcs",
    pin="pcs",
    sources=(LocalSource("src"),),
    platforms={"*": Build(commands=(
        "cmake -E make_directory {prefix}/lib/pkgconfig",
        "{cc} -O2 -fPIC -c {src}/pcs.c -o {build}/pcs.o",
        "{ar} rcs {prefix}/lib/libpcs.a {build}/pcs.o",
        "cmake -E copy_directory {src}/pkgconfig {prefix}/lib/pkgconfig",
    ))},
    outputs=Outputs(libs={"*": ("lib/libpcs.a",)}),
)
"""


def _workspace(folder: Path, pcs: dict[str, bytes]) -> Path:
    src = folder / "recipes" / "pcs" / "src"
    (src / "pkgconfig").mkdir(parents=True)
    (folder / "prebake.toml").write_text(support.gcc_workspace(
        "pcdemo", 'pcs = "1.0"', "core", '["pcs"]', env_unset=("CFLAGS", "LDFLAGS"),
        more=""))
    (folder / "recipes" / "pcs" / "recipe.py").write_text(RECIPE)
    (src / "pcs.c").write_text("int pcs_one(void) { return 1; }\n")
    for rel, data in pcs.items():
        (src / "pkgconfig" / Path(rel).name).write_bytes(data)
    return folder


def test_the_build_refuses_every_spelling_by_pkg_configs_expansion(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", {**_all_leaks(), "lib/pkgconfig/clean.pc": _pc("clean",
                                                                                     CLEAN)})
    proc = support.prebake("-C", ws, "build", "--json")
    (unit,) = json.loads(proc.stdout)["units"]
    assert proc.returncode == 1 and unit["state"] == "failed", unit
    # one line per leak (root=/ gives two: the variable and the -L it makes)
    assert unit["message"].startswith(f"pcs/{PLATFORM}: {len(LEAKS) + 1} pkg-config "
                                      "setting(s) name a folder outside the asset"), unit

    _refused_each(unit["message"])
    assert not list(ws.rglob("*.tar.xz"))


def test_a_clean_pc_builds_and_fetches(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", {"lib/pkgconfig/clean.pc": _pc("clean", CLEAN)})
    proc = support.prebake("-C", ws, "build")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = _fetch(tmp_path, f"file://{ws / 'releases'}", "pcs", "1.0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "into" / "lib" / "pkgconfig" / "clean.pc").is_file()


def _store(store: Path, members: dict[str, bytes]) -> None:
    """``demo 1.0.0`` in a ``file://`` store, holding ``members`` beside a valid manifest."""
    manifest = support.valid_manifest("demo", "1.0.0", PLATFORM)
    files = {"share/prebake/manifest.json": json.dumps(manifest).encode(), **members}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tf:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    name = f"demo-1.0.0-{PLATFORM}.tar.xz"
    d = store / "continuous"
    d.mkdir(parents=True)
    (d / name).write_bytes(buf.getvalue())
    (d / (name + ".json")).write_text(json.dumps(manifest))
    (d / (name + ".sha256")).write_text(sha256_line(hashlib.sha256(buf.getvalue()).hexdigest(),
                                                    name))


def _fetch(tmp_path: Path, store: str, name: str = "demo", version: str = "1.0.0"
           ) -> subprocess.CompletedProcess[str]:
    return support.prebake("fetch", f"{name}=={version}", "--platform", PLATFORM, "--store",
                           store, "--into", tmp_path / "into", "--lock", tmp_path / "l.lock",
                           env={"PREBAKE_CACHE": str(tmp_path / "cache")})


def test_fetch_refuses_an_asset_whose_pc_files_leave_it(tmp_path: Path) -> None:
    _store(tmp_path / "store", {**_all_leaks(), "lib/pkgconfig/clean.pc": _pc("clean", CLEAN)})
    proc = _fetch(tmp_path, f"file://{tmp_path / 'store'}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert (f"demo-1.0.0-{PLATFORM}.tar.xz: {len(LEAKS) + 1} pkg-config setting(s) name a folder "
            "outside the asset") in proc.stderr, proc.stderr
    assert "nothing was installed" in proc.stderr
    _refused_each(proc.stderr)
    assert not (tmp_path / "into").exists()
