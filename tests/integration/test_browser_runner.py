"""``prebake.link.browser`` on a real consumer: a static library and a program that links it
the way the seed's SDK links its addons (``-sJSPI``, native exceptions in the exnref encoding,
``-pthread``, ``-msimd128``), built with Debian sid's Emscripten 6.0.5, loaded from 127.0.0.1
in headless Chromium and headless Firefox. The program throws and catches across the library,
runs a thread (``SharedArrayBuffer``: the page must be cross-origin isolated), suspends on a
JS promise (JSPI), adds vectors and reads and writes a file; each browser must give its
stdout, stderr, exit code and output file, and the run must say what ``engines.toml``
predicted. Then the bad inputs: a module the engine cannot compile (its own message, not a
timeout), JSPI switched off in Firefox (the engine's TypeError), a page that never finishes
(the console's last lines after the bounded wait), a browser that is not installed (one line
naming the Debian package), and the server's headers, types and confinement."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from prebake import engines
from prebake.inspect import inspect
from prebake.link import browser
from tests import toolchains

LIB_CPP = """\
#include <stdexcept>
#include <wasm_simd128.h>
int checked(int x) { if (x < 0) throw std::invalid_argument("negative"); return x * 2; }
int lanes_sum(const int* v) {  // four lanes added at once, from memory: no constant to fold
  v128_t a = wasm_v128_load(v), b = wasm_v128_load(v + 4);
  v128_t s = wasm_i32x4_add(a, b);
  return wasm_i32x4_extract_lane(s, 0) + wasm_i32x4_extract_lane(s, 1) +
         wasm_i32x4_extract_lane(s, 2) + wasm_i32x4_extract_lane(s, 3);
}
"""
MAIN_CPP = """\
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <emscripten.h>
int checked(int x);
int lanes_sum(const int* v);
EM_ASYNC_JS(int, later, (int x), {
  await new Promise((resolve) => setTimeout(resolve, 20));
  return x + 1;
});
int main(int argc, char** argv) {
  if (argc != 3) { std::fprintf(stderr, "usage: consumer IN OUT\\n"); return 2; }
  int v[8] = {0};
  FILE* in = std::fopen(argv[1], "r");
  if (!in) { std::fprintf(stderr, "cannot read %s\\n", argv[1]); return 3; }
  for (int i = 0; i < 8; i++) if (std::fscanf(in, "%d", &v[i]) != 1) return 4;
  std::fclose(in);
  int caught = 0;
  try { checked(-v[0]); } catch (const std::invalid_argument& e) { caught = 1; }
  int from_thread = 0;
  std::thread t([&] { from_thread = checked(v[1]); });
  t.join();
  int sum = lanes_sum(v);
  int resumed = later(sum);
  FILE* out = std::fopen(argv[2], "w");
  std::fprintf(out, "sum %d\\n", sum);
  std::fclose(out);
  std::printf("caught %d thread %d sum %d resumed %d\\n", caught, from_thread, sum, resumed);
  std::fprintf(stderr, "done\\n");
  return 5;
}
"""
FLAGS = ["-O2", "-fwasm-exceptions", "-sWASM_LEGACY_EXCEPTIONS=0", "-pthread", "-msimd128"]
COMMANDS = (
    ["em++", *FLAGS, "-c", "lib.cpp", "-o", "lib.o"],
    ["emar", "rcs", "libcalc.a", "lib.o"],
    ["em++", *FLAGS, "-sJSPI", "-sERROR_ON_UNDEFINED_SYMBOLS=1", "-sEXIT_RUNTIME=1",
     "-sPTHREAD_POOL_SIZE=2", "-sFORCE_FILESYSTEM=1", "-sEXPORTED_RUNTIME_METHODS=FS",
     "main.cpp", "libcalc.a", "-o", "consumer.js"],
)
OUTPUTS = ("libcalc.a", "consumer.js", "consumer.wasm")
NUMBERS = "3 4 5 6 10 20 30 40\n"  # lanes: 13 24 35 46 -> 118


@pytest.fixture(scope="module")
def built() -> Path:
    """The library and its consumer, compiled once and cached by their inputs."""
    return toolchains.sid_build("browser-consumer", {"lib.cpp": LIB_CPP, "main.cpp": MAIN_CPP},
                                COMMANDS, OUTPUTS)


@pytest.fixture
def program(built: Path, tmp_path: Path) -> Path:
    for name in ("consumer.js", "consumer.wasm"):
        shutil.copy2(built / name, tmp_path / name)
    return tmp_path / "consumer.js"


def _gone(group: int | None) -> bool:
    assert group is not None
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_consumer_needs_what_the_sdk_links_with(built: Path) -> None:
    facts = inspect(built / "consumer.wasm")
    need = engines.needs(facts)
    assert need is not None and need.partial is None
    assert {"exceptions-exnref", "jspi", "threads", "simd"} <= set(need.certain)
    assert engines.judge(need, engines.parse_floor("node>=20"))  # Node 20: no exnref, no JSPI


@pytest.mark.parametrize("name", ["chromium", "firefox"])
def test_the_consumer_runs_in_the_browser(program: Path, tmp_path: Path, name: str) -> None:
    engine = browser.find(name)
    numbers, result = tmp_path / "in" / "numbers.txt", tmp_path / "out" / "sum.txt"
    numbers.parent.mkdir()
    result.parent.mkdir()
    numbers.write_text(NUMBERS)
    run = browser.run_program(program, [str(numbers), str(result)], engine=engine,
                              inputs=[numbers], outputs=[result], timeout=90)
    assert (run.outcome, run.returncode) == ("exited", 5), run.failure()
    assert run.stdout == "caught 1 thread 8 sum 118 resumed 119\n"
    assert run.stderr == "done\n"
    assert run.errors == [] and run.isolated is True
    assert result.read_text() == "sum 118\n"
    assert _gone(run.group)  # the browser's whole process group was killed
    prediction = browser.predict(program.with_suffix(".wasm"), engine)
    assert isinstance(prediction, browser.Prediction) and prediction.lacks == ()
    assert prediction.agrees(run) is True


def test_the_command_line_passes_output_and_exit_code_through(program: Path,
                                                              tmp_path: Path) -> None:
    numbers, result, record = tmp_path / "n.txt", tmp_path / "r.txt", tmp_path / "runs.json"
    numbers.write_text(NUMBERS)
    proc = subprocess.run(
        [sys.executable, "-m", "prebake.link.browser", "--browser", "chromium", "--input",
         str(numbers), "--output", str(result), "--json", str(record), str(program),
         str(numbers), str(result)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 5, proc.stderr
    assert proc.stdout == "caught 1 thread 8 sum 118 resumed 119\n"
    assert proc.stderr.startswith("done\n")
    assert "engines.toml predicted it runs" in proc.stderr and "the run agrees" in proc.stderr
    (entry,) = json.loads(record.read_text())
    assert entry["browser"] == "chromium" and entry["version"].startswith("1")
    assert entry["returncode"] == 5 and entry["agrees"] is True
    assert result.read_text() == "sum 118\n"


@pytest.mark.parametrize("name", ["chromium", "firefox"])
def test_a_module_the_engine_cannot_compile_is_its_message_not_a_timeout(
        program: Path, name: str) -> None:
    wasm = program.with_suffix(".wasm")
    wasm.write_bytes(wasm.read_bytes()[: wasm.stat().st_size // 2])
    run = browser.run_program(program, ["a", "b"], engine=browser.find(name), timeout=60)
    assert run.outcome == "refused", run.failure()
    assert "CompileError" in run.reason and run.seconds < 30
    assert _gone(run.group)


def test_an_engine_without_jspi_refuses_with_its_own_error(program: Path, tmp_path: Path
                                                          ) -> None:
    """Firefox with its JSPI preference off is the engine the table's Firefox < 153 rows
    describe: the loader's first WebAssembly.Suspending fails, and the run says so."""
    engine = browser.find("firefox")
    run = browser.run_program(program, ["a", "b"], engine=engine, timeout=60,
                              flags=["javascript.options.wasm_js_promise_integration=false"])
    assert run.outcome == "refused"
    assert "WebAssembly.Suspending is not a constructor" in run.reason
    assert run.stdout == ""
    need = engines.needs(inspect(program.with_suffix(".wasm")))
    assert need is not None
    (lack,) = engines.judge(need, engines.parse_floor("firefox>=152"))
    assert lack.text() == "JSPI: Firefox 152 lacks it (from 153)"


@pytest.mark.parametrize("name", ["chromium", "firefox"])
def test_a_page_that_never_finishes_stops_with_the_console(tmp_path: Path, name: str) -> None:
    (tmp_path / "hang.html").write_text(
        '<!doctype html><script src="/__prebake/page.js"></script>'
        '<script>console.log("still loading the model"); setInterval(() => 0, 1000);</script>')
    run, _ = browser.run_page(tmp_path, browser.find(name), page="hang.html", timeout=6)
    assert run.outcome == "timeout" and 6 <= run.seconds < 15
    assert any("still loading the model" in line for line in run.console), run.console
    assert "after 6 s; the console's last lines:" in run.failure()
    assert "still loading the model" in run.failure()
    assert _gone(run.group)


def test_a_browser_that_is_not_installed_is_one_line(program: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "prebake.link.browser", "--browser", "firefox",
                           str(program)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": "/nonexistent"}, check=False)
    assert proc.returncode == 2
    assert proc.stderr == ("prebake.link.browser: Firefox is not installed: apt-get install "
                           "firefox-esr (Debian's package; scripts/bootstrap installs it)\n")


def test_the_server_isolates_types_and_confines(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "m.wasm").write_bytes(b"\0asm\1\0\0\0")
    (tmp_path / "secret.txt").write_text("outside")
    (site / "link.txt").symlink_to(tmp_path / "secret.txt")
    state = browser._State({"program": None}, [])
    with browser._serving(site.resolve(), state) as base:
        with urllib.request.urlopen(f"{base}/m.wasm") as reply:
            assert reply.headers["Content-Type"] == "application/wasm"
            assert reply.headers["Cross-Origin-Opener-Policy"] == "same-origin"
            assert reply.headers["Cross-Origin-Embedder-Policy"] == "require-corp"
            assert reply.read() == b"\0asm\1\0\0\0"
        for bad in ("/../secret.txt", "/%2e%2e/secret.txt", "/link.txt", "/"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(f"{base}{bad}")
            assert err.value.code == 404, bad


def test_main_returning_is_the_exit_without_exit_runtime(built: Path) -> None:
    """Linked without -sEXIT_RUNTIME=1 (what most programs are), nothing calls onExit: main's
    return is the exit, as in Emscripten's Node loader; a main loop runs on until the bounded
    wait, which says it started (the engine ran it, as predicted)."""
    out = toolchains.sid_build(
        "browser-noexit", {"main.c": STAYS_C, "loop.c": LOOP_C},
        [["emcc", "-O2", "-pthread", "main.c", "-o", "stays.js"],
         ["emcc", "-O2", "loop.c", "-o", "loop.js"]],
        ["stays.js", "stays.wasm", "loop.js", "loop.wasm"])
    engine = browser.find("chromium")
    run = browser.run_program(out / "stays.js", engine=engine, timeout=30)
    assert (run.outcome, run.returncode, run.returned) == ("exited", 3, True), run.failure()
    assert run.stdout == "hi\n" and run.seconds < 15
    assert "main returned and the runtime stays (linked without -sEXIT_RUNTIME=1)" in run.said()
    run = browser.run_program(out / "loop.js", engine=engine, timeout=5)
    assert run.outcome == "timeout" and run.started and run.stdout == "looping\n"
    assert "it started: is it waiting on something, or a main loop?" in run.failure()
    prediction = browser.predict(out / "loop.wasm", engine)
    assert isinstance(prediction, browser.Prediction) and prediction.agrees(run) is True


STAYS_C = '#include <stdio.h>\nint main(void) { puts("hi"); return 3; }\n'
LOOP_C = """\
#include <stdio.h>
#include <emscripten.h>
static void tick(void) {}
int main(void) { puts("looping"); emscripten_set_main_loop(tick, 10, 1); return 0; }
"""
# a stranger's program: it fetches a file relative to its page (data/n.txt, beside js/) while
# suspended (JSPI) and runs a thread, linked each way Emscripten offers to start it
FETCHER_C = """\
#include <pthread.h>
#include <stdio.h>
#include <emscripten.h>
EM_ASYNC_JS(int, fetched, (void), {
  const reply = await fetch("data/n.txt");
  return reply.ok ? Number(await reply.text()) : -1;
});
static void* twice(void* p) { *(int*)p *= 2; return p; }
int main(void) {
  int n = fetched();
  pthread_t t;
  pthread_create(&t, 0, twice, &n);
  pthread_join(t, 0);
  printf("fetched %d\\n", n);
  return n == 84 ? 7 : 1;
}
"""
FETCHER = ["emcc", "-O2", "-pthread", "-sJSPI", "-sPTHREAD_POOL_SIZE=1", "fetcher.c"]
LINKS = {  # the name of the output: how it is linked
    "app": [],  # a script that starts itself, no -sEXIT_RUNTIME=1
    "factory": ["-sMODULARIZE", "-sEXPORT_NAME=createApp", "-sEXIT_RUNTIME=1"],
    "esm": ["-sMODULARIZE", "-sEXPORT_ES6", "-sEXIT_RUNTIME=1"],  # an ES module named .js
    "hidden": ["-sMODULARIZE"],  # a factory's main returns: its status stays inside
}


@pytest.fixture(scope="module")
def strangers() -> Path:
    return toolchains.sid_build(
        "browser-strangers", {"fetcher.c": FETCHER_C},
        [[*FETCHER, *flags, "-o", f"{name}.js"] for name, flags in LINKS.items()],
        [f"{name}.{ext}" for name in LINKS for ext in ("js", "wasm")])


@pytest.mark.parametrize("name", list(LINKS))
def test_a_strangers_program_runs_as_it_was_linked(strangers: Path, tmp_path: Path,
                                                   name: str) -> None:
    """The documented command line on an Emscripten output folder prebake did not make: the
    page sits at the served folder's top (--root), so the program's relative fetch finds the
    folder's file; a script, a -sMODULARIZE factory and an ES module in X.js all start, in
    both browsers, and a factory's hidden exit status is said, not waited for."""
    site = tmp_path / "my site"
    (site / "js").mkdir(parents=True)
    (site / "data").mkdir()
    (site / "data" / "n.txt").write_text("42")
    for ext in ("js", "wasm"):
        shutil.copy2(strangers / f"{name}.{ext}", site / "js" / f"{name}.{ext}")
    # the hidden status is the page's own doing, alike in both: one browser is enough
    only = ["--browser", "chromium"] if name == "hidden" else []
    proc = subprocess.run([sys.executable, "-m", "prebake.link.browser", *only, "--root",
                           str(site), "--timeout", "60", str(site / "js" / f"{name}.js")],
                          capture_output=True, text=True, timeout=240, check=False)
    runs = 1 if only else 2
    assert proc.stdout == "fetched 84\n" * runs, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("prebake.link.browser: ")]
    assert len(lines) == runs and all("the run agrees" in ln for ln in lines), proc.stderr
    if name == "hidden":
        assert proc.returncode == 1
        assert all("-sMODULARIZE program linked without -sEXIT_RUNTIME=1 keeps its exit "
                   "status inside" in ln for ln in lines), lines
    else:
        assert proc.returncode == 7, proc.stderr
        assert [ln.split(" in ")[0] for ln in lines] == [
            "prebake.link.browser: exited with status 7"] * 2
        assert all(("main returned" in ln) == (name == "app") for ln in lines), lines


def test_a_page_given_as_the_program_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "app.html").write_text("<!doctype html>")
    proc = subprocess.run([sys.executable, "-m", "prebake.link.browser", "--browser",
                           "chromium", str(tmp_path / "app.html")], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert proc.stderr == (f"prebake.link.browser: {tmp_path / 'app.html'}: a page; give the "
                           "program's JS (app.js), or --page app.html\n")


WIDE_C = """\
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  unsigned long long a = strtoull(argc > 1 ? argv[1] : "12345678901234567", 0, 10);
  unsigned __int128 p = (unsigned __int128)a * a;  /* i64.mul_wide_u with -mwide-arithmetic */
  printf("%llu %llu\\n", (unsigned long long)(p >> 64), (unsigned long long)p);
  return 0;
}
"""


def test_a_refusal_the_table_predicts_is_the_engines_own_error() -> None:
    """A module with a feature no engine here ships (wide arithmetic: engines.toml says no
    release of Chrome or Firefox has it): each browser refuses it with its own CompileError,
    the table predicted exactly that, and --verdict exits 0 on the agreement."""
    program = toolchains.sid_build(
        "browser-wide", {"wide.c": WIDE_C},
        [["emcc", "-O2", "-mwide-arithmetic", "-sEXIT_RUNTIME=1", "wide.c", "-o", "wide.js"]],
        ["wide.js", "wide.wasm"]) / "wide.js"
    said = {"chromium": "Invalid opcode 0xfc16", "firefox": "unrecognized opcode: fc 16"}
    for name, words in said.items():
        engine = browser.find(name)
        run = browser.run_program(program, engine=engine, timeout=60)
        assert run.outcome == "refused" and "CompileError" in run.reason, run.failure()
        assert words in run.reason and not run.started
        prediction = browser.predict(program.with_suffix(".wasm"), engine)
        assert isinstance(prediction, browser.Prediction)
        assert [lack.text() for lack in prediction.lacks] == [
            f"wide arithmetic: {engine.browser.title.replace('Chromium', 'Chrome')} "
            f"{engine.version} lacks it (no release has it)"]
        assert prediction.agrees(run) is True
    proc = subprocess.run([sys.executable, "-m", "prebake.link.browser", "--verdict",
                           str(program)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("engines.toml predicted it does not: wide arithmetic") == 2
    assert proc.stderr.count("the run agrees") == 2
