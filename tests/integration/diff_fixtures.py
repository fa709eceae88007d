"""Real builds of a small C library in several versions, shared by the diff and report tests.

v1: foo, parse (strtol), gone; shared library linked for glibc 2.17 with zig.
v2: removes ``gone`` and calls ``__isoc23_strtol`` (what glibc >= 2.38 headers emit for strtol
    in C23 mode) -> the shared library needs GLIBC_2.38, the archive's member needs it too.
v3: v1 plus ``added`` (compatible).
Each version also ships a static archive built with gcc and a header.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

from tests import support

EVIL = "evil<script>alert(1)</script>"

HEADER = {
    "1": "int foo(int);\nlong parse(const char *);\nint gone(void);\n",
    "2": "int foo(int);\nlong parse(const char *);\n",
    "3": "int foo(int);\nlong parse(const char *);\nint gone(void);\nint added(void);\n",
}
SOURCE = {
    "1": """#include <stdlib.h>
int foo(int x) { return x + 1; }
long parse(const char *s) { return strtol(s, 0, 0); }
int gone(void) { return 7; }
""",
    "2": """extern long __isoc23_strtol(const char *, char **, int);
int foo(int x) { return x + 2; }
long parse(const char *s) { return __isoc23_strtol(s, 0, 0); }
""",
    "3": """#include <stdlib.h>
int foo(int x) { return x + 1; }
long parse(const char *s) { return strtol(s, 0, 0); }
int gone(void) { return 7; }
int added(void) { return 8; }
""",
}
GLIBC = {"1": "2.17", "2": "2.38", "3": "2.17"}
FULL = {"1": "1.0.0", "2": "2.0.0", "3": "1.1.0"}
# An export whose name is markup (an asm label), for the escaping tests.
EVIL_SOURCE = '''int evil(void) __asm__("\\"''' + EVIL + '''\\"");
int evil(void) { return 1; }
'''


def build_version(v: str, *, arch: str = "x86_64", evil: bool = False) -> Path:
    """The outputs of version ``v``: ``libdemo.a`` (gcc, or zig for aarch64), the shared
    ``libdemo.so.<full>`` (zig, glibc floor per version) and ``demo.h``."""
    src = SOURCE[v] + (EVIL_SOURCE if evil else "")
    so = f"libdemo.so.{FULL[v]}"
    target = f"{arch}-linux-gnu.{GLIBC[v]}"
    cc = ["gcc"] if arch == "x86_64" else [*support.ZIG, "cc", "-target", target]
    cmds = [
        [*cc, "-O2", "-fPIC", "-c", "demo.c", "-o", "demo.o"],
        ["ar", "rcs", "libdemo.a", "demo.o"],
        [*support.ZIG, "cc", "-target", target, "-O2", "-fPIC", "-shared",
         "-Wl,-soname,libdemo.so.1", "-o", so, "demo.c"],
    ]
    return support.build(f"diff-demo-v{v}-{arch}{'-evil' if evil else ''}",
                         {"demo.c": src, "demo.h": HEADER[v]}, cmds)


def prefix(out: Path, v: str, **kw: Any) -> Path:
    """An install prefix (lib/, include/) for version ``v`` under ``out``."""
    built = build_version(v, **kw)
    root = out / f"prefix-v{v}"
    if root.exists():
        shutil.rmtree(root)
    (root / "lib").mkdir(parents=True)
    (root / "include").mkdir()
    shutil.copy(built / "libdemo.a", root / "lib" / "libdemo.a")
    so = f"libdemo.so.{FULL[v]}"
    shutil.copy(built / so, root / "lib" / so)
    (root / "lib" / "libdemo.so.1").symlink_to(so)
    (root / "lib" / "libdemo.so").symlink_to("libdemo.so.1")
    shutil.copy(built / "demo.h", root / "include" / "demo.h")
    return root


def write_demo_asset(pre: Path, name: str, version: str, platform: str, out_dir: Path,
                     guards: dict[str, Any] | None = None) -> Path:
    """Package ``pre`` with the real packager, a manifest carrying the libraries' facts."""
    from prebake.inspect import inspect
    from prebake.package.archive import write_asset
    from prebake.package.manifest_builder import make_manifest
    from prebake.package.naming import asset_id

    aid = asset_id(name, version, platform)
    libs = sorted(p for p in (pre / "lib").iterdir() if p.is_file() and not p.is_symlink())
    facts = [inspect(p).summary(p.relative_to(pre).as_posix()) for p in libs]
    static = [[f["path"]] for f in facts if f["kind"] == "static-library"]
    digest = hashlib.sha256(f"{name} {version} {platform}".encode()).hexdigest()
    manifest = make_manifest(aid, input_hash=digest, toolchain={"cc": ["gcc"]}, facts=facts,
                             link_order=static, guards=guards)
    return write_asset(pre, aid, manifest, out_dir)
