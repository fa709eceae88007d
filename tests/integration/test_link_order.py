"""link-order on real archives: Debian's libabsl-dev and a hand-made two-archive cycle.

The order is judged by the real linker: g++ links with the computed order, and fails with the
reversed order (absl) or without the group (the cycle).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import jsonschema
import pytest

from prebake.cli import main
from prebake.link.order import compute_link_order
from tests import support

SCHEMA = json.loads((support.ROOT / "schemas" / "link-order.schema.json").read_text())
ABSL = sorted(Path("/usr/lib/x86_64-linux-gnu").glob("libabsl_*.a"))

ABSL_CONSUMER = """\
#include <absl/container/flat_hash_map.h>
#include <absl/status/status.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <absl/synchronization/mutex.h>
#include <absl/time/clock.h>
#include <iostream>
int main() {
  absl::flat_hash_map<std::string, int> m; m["a"] = 1;
  std::vector<std::string> parts = absl::StrSplit("a,b,c", ',');
  absl::Status st = absl::InvalidArgumentError("bad");
  absl::Mutex mu; { absl::MutexLock l(&mu); }
  std::cout << absl::StrCat("n=", parts.size(), m.size()) << " " << st << " "
            << absl::FormatTime(absl::Now()) << "\\n";
}
"""

CYCLE = {
    "a1.c": "int b1(void); int a1(void) { return b1() + 1; }\n",
    "a2.c": "int a2(void) { return 40; }\n",
    "b1.c": "int a2(void); int b1(void) { return a2() + 1; }\n",
    "main.c": "int a1(void); int main(void) { return a1() == 42 ? 0 : 1; }\n",
}
CYCLE_CMDS = [
    ["gcc", "-O1", "-c", "a1.c", "a2.c", "b1.c", "main.c"],
    ["ar", "rcs", "liba.a", "a1.o", "a2.o"],
    ["ar", "rcs", "libb.a", "b1.o"],
]


def _link(d: Path, args: list[str]) -> bool:
    proc = support.run(["g++", "main.o", *args, "-o", "prog"], d, check=False)
    return proc.returncode == 0


@pytest.fixture(scope="module")
def absl_consumer() -> Path:
    if not ABSL:
        pytest.fail("libabsl-dev is not installed (scripts/bootstrap installs it)")
    return support.build("absl-consumer", {"main.cc": ABSL_CONSUMER},
                         [["g++", "-std=c++17", "-O1", "-c", "main.cc", "-o", "main.o"]])


def test_absl_order_links_and_reversed_does_not(absl_consumer: Path) -> None:
    lo = compute_link_order(ABSL, [absl_consumer / "main.o"])
    order = lo.order()
    assert 3 < len(order) < len(ABSL)  # only what the consumer pulls in
    assert lo.unused and all(p not in order for p in lo.unused)
    assert not [s for s in lo.unresolved if s.startswith("_ZN4absl")]  # absl defines its own
    assert "_Unwind_Resume" in lo.unresolved  # the system's (libgcc_s), listed
    assert "_GLOBAL_OFFSET_TABLE_" not in lo.unresolved  # the linker's own
    assert _link(absl_consumer, shlex.split(lo.render("ld")))
    assert support.run(["./prog"], absl_consumer).stdout.startswith("n=31 INVALID_ARGUMENT")
    assert not _link(absl_consumer, [str(p) for p in reversed(order)])
    assert _link(absl_consumer, [str(p) for p in lo.repeated()])


def test_absl_all_members_order_links(absl_consumer: Path) -> None:
    lo = compute_link_order(ABSL)
    assert len(lo.order()) == len(ABSL) and not lo.unused
    # absl's template statics are STB_GNU_UNIQUE in several archives: merged, never a clash
    assert lo.clashes == {}
    assert _link(absl_consumer, shlex.split(lo.render("ld")))


def test_two_archive_cycle_links_only_grouped() -> None:
    d = support.build("link-cycle", CYCLE, CYCLE_CMDS)
    lo = compute_link_order([d / "libb.a", d / "liba.a"], [d / "main.o"])
    assert lo.cycles() == [[d / "libb.a", d / "liba.a"]]
    assert lo.render("ld") == f"-Wl,--start-group {d / 'libb.a'} {d / 'liba.a'} -Wl,--end-group"
    assert _link(d, shlex.split(lo.render("ld")))
    assert not _link(d, [str(d / "liba.a"), str(d / "libb.a")])
    assert not _link(d, [str(d / "libb.a"), str(d / "liba.a")])
    rep = lo.repeated()
    assert len(rep) == 3 and _link(d, [str(p) for p in rep])
    assert "LINK_GROUP:RESCAN" in lo.render("cmake")
    assert lo.needs[d / "liba.a"][d / "libb.a"] == ["b1"]


def test_cli_json_lists_unresolved(capsys: pytest.CaptureFixture[str]) -> None:
    d = support.build("link-cycle", CYCLE, CYCLE_CMDS)
    assert main(["link-order", str(d / "libb.a"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    jsonschema.validate(out, SCHEMA)
    assert out["schema_version"] == 1
    assert out["order"] == [str(d / "libb.a")]
    assert out["unresolved"] == {"a2": ["libb.a(b1.o)"]}
    assert main(["link-order", str(d / "liba.a"), str(d / "libb.a"), "--format", "ld64"]) == 0
    line = capsys.readouterr().out.strip()
    assert shlex.split(line) == [str(d / n) for n in ("liba.a", "libb.a", "liba.a")]
    assert _link(d, shlex.split(line))


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "libjunk.a"
    junk.write_text("not an archive\n")
    assert main(["link-order", str(junk)]) == 2
    err = capsys.readouterr().err
    assert str(junk) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


THREE = {
    "a1.c": "int b1(void); int a1(void) { return b1() + 1; }\n",
    "a2.c": "int a2(void) { return 10; }\n",
    "b1.c": "int c1(void); int b1(void) { return c1() + 1; }\n",
    "b2.c": "int b2(void) { return 20; }\n",
    "c1.c": "int a2(void); int b2(void); int c1(void) { return a2() + b2(); }\n",
    "d1.c": "int a1(void); int d1(void) { return a1(); }\n",
    "main.c": "int d1(void); int main(void) { return d1() == 32 ? 0 : 1; }\n",
}
THREE_CMDS = [
    ["gcc", "-O1", "-c", *[n for n in THREE if n != "main.c"], "main.c"],
    ["ar", "rcs", "liba.a", "a1.o", "a2.o"],
    ["ar", "rcs", "libb.a", "b1.o", "b2.o"],
    ["ar", "rcs", "libc.a", "c1.o"],
    ["ar", "rcs", "libd.a", "d1.o"],
]


@pytest.mark.parametrize("consumer", [True, False])
def test_three_archive_cycle_behind_a_chain(consumer: bool) -> None:
    d = support.build("link-three", THREE, THREE_CMDS)
    libs = [d / n for n in ("libc.a", "liba.a", "libd.a", "libb.a")]
    lo = compute_link_order(libs, [d / "main.o"] if consumer else [])
    assert lo.groups[0] == [d / "libd.a"]
    assert lo.cycles() == [[d / "libc.a", d / "liba.a", d / "libb.a"]]
    assert _link(d, shlex.split(lo.render("ld")))
    rep = [str(p) for p in lo.repeated()]
    assert _link(d, rep)  # GNU ld without groups: the repetition alone must close the cycle
    assert not _link(d, [str(p) for p in lo.order()])
    assert rep[0].endswith("libd.a") and len(rep) > 4


def test_cmake_snippet_links_the_cycle(tmp_path: Path) -> None:
    """The cmake format, included by a real CMake project, links the two-archive cycle."""
    d = support.build("link-cycle", CYCLE, CYCLE_CMDS)
    lo = compute_link_order([d / "liba.a", d / "libb.a"], [d / "main.o"])
    (tmp_path / "order.cmake").write_text(lo.render("cmake") + "\n")
    (tmp_path / "main.c").write_text(CYCLE["main.c"])
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(cyc C)\n"
        "include(${CMAKE_SOURCE_DIR}/order.cmake)\n"
        "add_executable(prog main.c)\n"
        "target_link_libraries(prog PRIVATE ${PREBAKE_LINK_LIBRARIES})\n")
    build = tmp_path / "build"
    support.run(["cmake", "-S", str(tmp_path), "-B", str(build)], tmp_path)
    support.run(["cmake", "--build", str(build)], tmp_path)
    assert support.run([str(build / "prog")], tmp_path, check=False).returncode == 0
    link_line = (build / "CMakeFiles" / "prog.dir" / "link.txt").read_text()
    assert "--start-group" in link_line  # Linux: the RESCAN group, not the repeated fallback
