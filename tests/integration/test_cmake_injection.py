"""Values that reach CMake code are data there, never code — configured with Debian's real cmake.

Two writers: the FetchContent step's cache script (``supplied.cmake``: a recipe table's cache
settings, a dependency's folders) and the package step's ``<name>Config.cmake`` (library
paths from the install). Each is given what an attacker would put there — a quote and a
``)`` followed by ``execute_process(…)``, a ``${…}`` reference, a newline, a backslash — and a
real configure must read every value back exactly, with no command run.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from prebake.errors import PrebakeError
from prebake.package.cmake import config_file
from prebake.package.libs import Library
from prebake.recipes.builtin.onnxruntime.fetchcontent import load_table, supply

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")

# run by a successful injection: creates the file PWNED in the configure's folder
TOUCH = 'execute_process(COMMAND "${CMAKE_COMMAND}" -E touch PWNED)'
HOSTILE = [
    f'a") {TOUCH} #',
    f"x\"\n{TOUCH}\n#",
    "${CMAKE_COMMAND}",
    "$ENV{HOME} and ${X",
    "back\\slash\\n and a;list",
    "@CMAKE_COMMAND@",
]


def _configure(folder: Path, cmakelists: str) -> subprocess.CompletedProcess[str]:
    (folder / "CMakeLists.txt").write_text(cmakelists)
    return subprocess.run(["cmake", "-S", str(folder), "-B", str(folder / "build")],
                          cwd=folder, capture_output=True, text=True, timeout=120)


def _no_command_ran(folder: Path) -> None:
    found = list(folder.rglob("PWNED"))
    assert not found, f"an injected command ran: {found}"


def test_fetchcontent_cache_values_round_trip(tmp_path: Path) -> None:
    deps_dir = tmp_path / "deps"
    (deps_dir / "zlib" / "sub dir").mkdir(parents=True)
    deps_txt = tmp_path / "deps.txt"
    deps_txt.write_text("zlib;https://example.invalid/zlib.zip;0\n")
    table = tmp_path / "deps.toml"
    lines = ["[\"1.0\".zlib]", 'url = "https://example.invalid/zlib.zip"',
             'take = "source-dir"', 'subdir = "sub dir"', "[\"1.0\".zlib.cache]"]
    # one line each (a newline is refused at load, below); every other hostile value is kept
    values = {f"V{i}": v for i, v in enumerate(HOSTILE) if "\n" not in v}
    for key, value in values.items():
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'{key} = "{escaped}"')
    table.write_text("\n".join(lines) + "\n")
    (dep,) = load_table(table)["1.0"]
    script, _said = supply([dep], deps_txt, deps_dir)
    project = tmp_path / "project"
    project.mkdir()
    (project / "supplied.cmake").write_text(script)
    out = project / "values.txt"
    reads = "".join(f'file(APPEND "{out}" "${{{k}}}\\n--8<--\\n")\n' for k in values)
    proc = _configure(project, "cmake_minimum_required(VERSION 3.16)\n"
                               "project(x LANGUAGES NONE)\n"
                               f'include("{project}/supplied.cmake")\n'
                               f'file(APPEND "{out}" "${{FETCHCONTENT_SOURCE_DIR_ZLIB}}\\n'
                               '--8<--\\n")\n' + reads)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _no_command_ran(tmp_path)
    got = out.read_text().split("\n--8<--\n")[:-1]
    assert got == [(deps_dir / "zlib" / "sub dir").as_posix(), *values.values()]


@pytest.mark.parametrize(("key", "row", "complaint"), [
    ("cache", 'cache = { "X) ' + TOUCH.replace('"', '\\"') + ' #" = "1" }',
     "is not a CMake variable name"),
    ("reason", 'take = "absent"\nreason = "off\\n' + TOUCH.replace('"', '\\"')
     + '"\ncache = { onnxruntime_USE_X = "OFF" }', "reason must be one line"),
    ("value", 'cache = { X = "a\\nb" }', "must be one line"),
    ("subdir", 'subdir = "../../etc"', "relative folder inside the archive"),
])
def test_fetchcontent_refuses_what_cannot_be_data(tmp_path: Path, key: str, row: str,
                                                  complaint: str) -> None:
    table = tmp_path / "deps.toml"
    take = "" if "take =" in row else 'take = "source-dir"\n'
    table.write_text(f'["1.0".zlib]\nurl = "https://example.invalid/z.zip"\n{take}{row}\n')
    with pytest.raises(PrebakeError, match=complaint) as err:
        load_table(table)
    assert "\n" not in str(err.value) and str(table) in str(err.value)


def test_fetchcontent_refuses_a_dependency_name_cmake_would_read_as_code(tmp_path: Path
                                                                        ) -> None:
    table = tmp_path / "deps.toml"
    table.write_text('["1.0"."z) ' + TOUCH.replace('"', '\\"') + '"]\n'
                     'url = "https://example.invalid/z.zip"\ntake = "source-dir"\n')
    with pytest.raises(PrebakeError, match="is not a CMake name"):
        load_table(table)


def test_config_file_library_paths_round_trip(tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    names = [f"lib/lib{i}-{v.replace('/', '_')}.a" for i, v in enumerate(HOSTILE)]
    libs = [Library(n, "static") for n in names]
    package = prefix / "lib" / "cmake" / "demo"
    package.mkdir(parents=True)
    (package / "demoConfig.cmake").write_text(config_file("demo", "1.0.0", libs, cxx=False,
                                                          include_dir='inc"$'))
    project = tmp_path / "project"
    project.mkdir()
    out = project / "values.txt"
    proc = _configure(project, "cmake_minimum_required(VERSION 3.16)\n"
                               "project(x LANGUAGES NONE)\n"
                               f'set(demo_DIR "{package}")\n'
                               "find_package(demo CONFIG REQUIRED)\n"
                               'get_property(targets DIRECTORY PROPERTY IMPORTED_TARGETS)\n'
                               "foreach(t IN LISTS targets)\n"
                               "  get_target_property(where ${t} IMPORTED_LOCATION)\n"
                               "  if(where)\n"
                               f'    file(APPEND "{out}" "${{where}}\\n--8<--\\n")\n'
                               "  endif()\n"
                               "endforeach()\n"
                               f'file(APPEND "{out}" "${{demo_INCLUDE_DIRS}}\\n--8<--\\n")\n')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _no_command_ran(tmp_path)
    got = out.read_text().split("\n--8<--\n")[:-1]
    real = prefix.resolve().as_posix()
    assert sorted(got[:-1]) == sorted(f"{real}/{n}" for n in names)
    assert got[-1] == f'{real}/inc"$'
