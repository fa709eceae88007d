"""Library modules import what they use at module top; an import inside a function is allowed
only where start-up is the reason, and then it says so.

The command line (``prebake.cli`` and ``prebake.commands.*``) imports a command's library only
when that command runs, so that ``prebake --version`` and the other commands stay fast. Below
it, a function-body import hides what a module depends on (and once hid import cycles): it is
allowed only for a heavy third-party package (or, twice, a standard module on a command's
start-up path; or the inspector's format modules, each loaded for its own bytes) measured with
``python -X importtime``, with a comment containing "lazy" that says why, listed in ``LAZY``
with the module it keeps out.
``PENDING`` files are being edited on other branches; their lazy imports go once those land.
A cycle that a lazy import would break means a function or constant is in the wrong module:
move it down the floors of docs/architecture.md (tests/unit/test_import_cycles.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

#: where start-up is the reason for every lazy import: a command's library loads when it runs
COMMAND_LINE = ("prebake/commands/", "prebake/cli.py")

#: (file, imported module) -> the measured reason (python -X importtime, on top of what the
#: file's importers already load)
LAZY = {
    ("prebake/store/s3.py", "boto3"): "290 ms; a store opened but never asked does not pay it",
    ("prebake/report/chart.py", "pygal"): "45 ms beside the rest of the report",
    ("prebake/contract/licenses.py", "license_expression"):
        "29 ms to import, 100 ms to load the SPDX list; only allowed_licenses judging pays",
    ("prebake/report/chart.py", "pygal.etree"): "with pygal",
    ("prebake/report/chart.py", "pygal.style"): "with pygal",
    ("prebake/report/html.py", "jinja2"): "48 ms, only when a page is rendered",
    ("prebake/report/html.py", "markupsafe"): "jinja2's dependency, with it",
    ("prebake/skeleton/scaffold.py", "jinja2"): "40 ms, only when files are written",
    ("prebake/sources/pinning.py", "tomlkit"): "9 ms; `plan` loads the module, never writes",
    ("prebake/sources/pinning.py", "tomlkit.exceptions"): "with tomlkit",
    ("prebake/machine_mirrors.py", "pip._internal.models.index"):
        "20 ms, and pip may be absent: read only when no configuration names a PyPI index",
    # the standard library's two entries, each measured on a command's start-up: link-order
    # is judged against one g++ link (benchmarks/bench_link_order.py) and needs only
    # SCHEMA_VERSION from jsonio; `prebake inspect FILE` never starts the process pool
    ("prebake/jsonio.py", "tempfile"): "5 ms (shutil, random, bz2, lzma); test_startup.py",
    ("prebake/inspect/runner.py", "tempfile"): "5 ms, the workers' folder for big results",
    ("prebake/inspect/runner.py", "concurrent.futures"): "the pool, where there is no fork",
    ("prebake/inspect/runner.py", "pickle"): "6M instructions at every start (callgrind); only "
                                            "an error in a forked worker needs it",
    # the inspector's own format modules: link-order on ELF archives loads the archive and ELF
    # readers alone (test_startup.py); the wasm, Mach-O, PE and bitcode ones cost 40-50 ms more
    ("prebake/inspect/registry.py", "prebake.inspect"): "a format's module, for its bytes only",
}

#: files other branches are changing now: their function-body imports are cleaned after merge
PENDING: tuple[str, ...] = ()


def function_imports(src: Path) -> Iterator[tuple[str, int, str, bool]]:
    """(file under ``src``, line, imported module, whether a ``lazy`` comment says why) of
    every import statement inside a function body, methods and nested functions included."""
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        text = path.read_text("utf-8")
        lines = text.splitlines()
        tree = ast.parse(text, rel)
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = ["." * node.level + (node.module or "")]
                else:
                    continue
                said = _says_why(lines, node.lineno)
                for name in names:
                    yield rel, node.lineno, name, said


def _says_why(lines: list[str], lineno: int) -> bool:
    """A comment with "lazy" on the import's line or above it, through the comments and
    imports of the same block."""
    i = lineno - 1
    if "lazy" in lines[i].partition("#")[2]:
        return True
    i -= 1
    while i >= 0 and lines[i].strip().startswith(("#", "import ", "from ")):
        if "lazy" in lines[i].partition("#")[2]:
            return True
        i -= 1
    return False


def _found(src: Path) -> list[tuple[str, int, str, bool]]:
    # nested functions are walked from every enclosing one: each statement once
    return sorted(set(function_imports(src)))


def test_library_modules_import_at_module_top() -> None:
    found = _found(SRC)
    assert any(f.startswith("prebake/commands/") for f, *_ in found), "the scan sees imports"
    wrong = [f"{f}:{line}: import {mod}" for f, line, mod, _ in found
             if not f.startswith(COMMAND_LINE + PENDING) and (f, mod) not in LAZY]
    assert wrong == [], ("import these at module top (or, for a heavy third-party package, "
                         f"measure it and list it in LAZY with a '# lazy: …' comment): {wrong}")


def test_every_lazy_import_says_why_and_is_still_there() -> None:
    found = _found(SRC)
    silent = [f"{f}:{line}: import {mod}" for f, line, mod, said in found
              if (f, mod) in LAZY and not said]
    assert silent == [], f"a lazy import needs a '# lazy: …' comment saying why: {silent}"
    present = {(f, mod) for f, _, mod, _ in found}
    assert sorted(set(LAZY) - present) == [], "stale LAZY entries: remove them"


def test_the_scan_finds_methods_nested_functions_and_comments(tmp_path: Path) -> None:
    pkg = tmp_path / "demo"
    pkg.mkdir()
    (pkg / "a.py").write_text(
        "import os\n"
        "class C:\n"
        "    import sys\n"
        "    def m(self):\n"
        "        from . import b\n"
        "        def inner():\n"
        "            # lazy: 300 ms\n"
        "            import json\n"
        "            from json import decoder\n"
        "        return inner\n"
        "async def f():\n"
        "    if True:\n"
        "        import glob  # lazy: measured\n")
    assert _found(tmp_path) == [("demo/a.py", 5, ".", False), ("demo/a.py", 8, "json", True),
                                ("demo/a.py", 9, "json", True),
                                ("demo/a.py", 13, "glob", True)]
