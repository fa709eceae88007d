"""Mutants of real ELF and wasm objects and ar archives through the C extension built with ASan +
UBSan.

    .venv/bin/python scripts/fuzz_scan.py --mutants 200000      # the long run (docs/)

What it proves: for every mutant, the reader with the C loops (``prebake.inspect._scan``)
and the reader with its pure-Python loops give the same facts and symbols, or the same
error, and the C code never reads outside a buffer or does undefined arithmetic (the
sanitizers abort the run at the first report). Every buffer the C functions see ends at the
input's last byte: each mutant lives in a ``malloc`` block of exactly its size (a ctypes
buffer, with ``PYTHONMALLOC=malloc``), so a read one byte past it hits ASan's red zone.

How: the extension is compiled out of tree (``-fsanitize=address,undefined
-fno-sanitize-recover=all``) into a cache folder next to a copy of the ``prebake`` package,
and a child Python runs the corpus with libasan preloaded (``LD_PRELOAD`` of gcc's
``libasan.so``: a sanitized extension cannot be loaded into an interpreter that was not).

The seeds are real objects from real compilers, both ELF classes and byte orders (gcc for
x86-64; clang for i686, aarch64, 32-bit big-endian MIPS and 64-bit big-endian PowerPC, C and
C++ with exceptions), a shared library, wasm objects from Emscripten (C++ with native wasm
exceptions, threaded C with SIMD), two modules from ``wasm-tools smith`` (every WebAssembly
3.0 proposal) and archives of them: GNU (``/``), ``/SYM64/``, BSD
``__.SYMDEF``, GNU thin (``!<thin>``), emar's.
Mutations are byte flips, boundary values written over
the fields the readers trust (ELF header, section headers, symbols, archive member sizes and
the index count), spliced ranges and truncation. The corpus is a pure function of
``--seed`` and ``--mutants``.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "prebake" / "inspect" / "_scan.c"
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer", "-g", "-O1"]

C_SRC = """\
int g = 1; static int s; __thread int tls;
__attribute__((weak)) int w(void) { return 2; }
__attribute__((visibility("hidden"))) int h(void) { return 3; }
extern int ext(int);
int api(int x) { return ext(x) + s + g + tls; }
"""
CXX_SRC = """\
struct E {};
int f(int x) { if (x) throw E(); return 0; }
int g2() { try { return f(1); } catch (E&) { return 1; } }
namespace google { namespace protobuf { int tag() { return 7; } } }
"""
TARGETS = ["i686-linux-gnu", "aarch64-linux-gnu", "mips-linux-gnu", "powerpc64-linux-gnu"]


def _seed_commands() -> list[list[str]]:
    cmds = [["gcc", "-O1", "-c", "c.c", "-o", "c-x86_64.o"],
            ["g++", "-O1", "-c", "e.cpp", "-o", "e-x86_64.o"],
            ["gcc", "-O1", "-shared", "-fPIC", "c.c", "-o", "libc-x86_64.so",
             "-Wl,--unresolved-symbols=ignore-all"]]
    for t in TARGETS:
        cmds.append(["clang", f"--target={t}", "-O1", "-c", "c.c", "-o", f"c-{t}.o"])
        cmds.append(["clang++", f"--target={t}", "-O1", "-c", "e.cpp", "-o", f"e-{t}.o"])
    cmds += [["ar", "rcs", "libgnu.a", "c-x86_64.o", "e-x86_64.o"],
             ["ar", "rcs", "libbe.a", "c-mips-linux-gnu.o", "e-powerpc64-linux-gnu.o"],
             ["env", "SYM64_THRESHOLD=0", "llvm-ar", "--format=gnu", "rcs", "libsym64.a",
              "c-x86_64.o", "e-i686-linux-gnu.o"],
             ["llvm-ar", "--format=bsd", "rcs", "libbsd.a", "c-aarch64-linux-gnu.o",
              "e-x86_64.o"],
             ["ar", "rcsT", "libthin.a", "c-x86_64.o", "e-x86_64.o"]]
    # wasm objects (Debian's Emscripten): C++ with native wasm exceptions, threaded C, and an
    # archive of both, for the wasm loops (bodies, the EH scan, imports, types, symbols)
    cmds += [["em++", "-O1", "-fwasm-exceptions", "-c", "e.cpp", "-o", "e-wasm.o"],
             ["emcc", "-O1", "-pthread", "-msimd128", "-c", "c.c", "-o", "c-wasm.o"],
             ["emar", "rcs", "libwasm.a", "c-wasm.o", "e-wasm.o"]]
    # linked modules from wasm-tools smith (every 3.0 proposal: GC and rec groups, exnref and
    # try_table, typed references, SIMD and relaxed SIMD, threads, memory64, tail calls), for
    # the type walk and the deep decode beyond what Emscripten 3.1.6 emits
    smith = Path(sys.executable).with_name("wasm-tools")
    for i in (1, 2):
        cmds.append(["sh", "-c", f"{sys.executable} -c 'import random, sys; sys.stdout.buffer"
                     f".write(random.Random({i}).randbytes(6000))' | {smith} smith "
                     "--min-funcs 4 -o smith-" + str(i) + ".wasm"])
    return cmds


def _cache_root(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    base = os.environ.get("PREBAKE_TEST_CACHE") or str(Path.home() / ".cache" / "prebake-tests")
    return Path(base) / "fuzz-scan"


def _keyed(cache: Path, name: str, parts: list[str]) -> tuple[Path, bool]:
    """A cache folder named by a hash of ``parts``; whether it is complete already."""
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
    out = cache / f"{name}-{key}"
    return out, (out / ".done").exists()


def _publish(tmp: Path, out: Path) -> Path:
    (tmp / ".done").write_text("ok\n")
    if (out / ".done").exists():  # another run finished first
        shutil.rmtree(tmp, ignore_errors=True)
        return out
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def build_seeds(cache: Path) -> Path:
    cmds = _seed_commands()
    out, done = _keyed(cache, "seeds", [C_SRC, CXX_SRC, *("\x1f".join(c) for c in cmds)])
    if done:
        return out
    tmp = Path(tempfile.mkdtemp(prefix="seeds.", dir=cache))
    (tmp / "c.c").write_text(C_SRC)
    (tmp / "e.cpp").write_text(CXX_SRC)
    for cmd in cmds:
        subprocess.run(cmd, cwd=tmp, check=True, capture_output=True)
    return _publish(tmp, out)


def build_sanitized(cache: Path) -> Path:
    """A copy of the ``prebake`` package whose ``_scan`` is the sanitized build."""
    src = SOURCE.read_bytes().decode()
    consts = SOURCE.with_name("_scan_consts.h").read_bytes().decode()  # #included by it
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    tree = ROOT / "src" / "prebake"
    digest = hashlib.sha256()
    for f in sorted(tree.rglob("*.py")):
        digest.update(str(f.relative_to(tree)).encode() + b"\0" + f.read_bytes())
    out, done = _keyed(cache, "asan", [src, consts, include, suffix, *SANITIZE, digest.hexdigest()])
    if done:
        return out
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="asan.", dir=cache))
    shutil.copytree(tree, tmp / "prebake",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    subprocess.run(["gcc", *SANITIZE, "-std=c11", "-D_GNU_SOURCE", "-fPIC", "-shared",
                    f"-I{include}", str(SOURCE), "-o",
                    str(tmp / "prebake" / "inspect" / f"_scan{suffix}")],
                   check=True, capture_output=True, text=True)
    return _publish(tmp, out)


def libasan() -> str:
    path = subprocess.run(["gcc", "-print-file-name=libasan.so"], check=True,
                          capture_output=True, text=True).stdout.strip()
    if not Path(path).is_absolute():
        raise SystemExit("fuzz_scan: gcc has no libasan.so (install libasan for gcc)")
    return path


# --- the child: the corpus, run both ways ------------------------------------------------

INTERESTING = [0, 1, 2, 4, 7, 8, 0x10, 0x28, 0x40, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000,
               0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**63 - 1, 2**64 - 1]


def _hot_fields(data: bytes) -> list[tuple[int, int, str]]:
    """(offset, width, byte order) of fields the readers trust: ELF header, section headers,
    symbol names; the archive index count and member header sizes are mutated as text/BE."""
    out: list[tuple[int, int, str]] = []
    if data[:4] == b"\x7fELF" and len(data) >= 52 and data[4] in (1, 2) and data[5] in (1, 2):
        is64, e = data[4] == 2, "<" if data[5] == 1 else ">"
        if is64:
            fields = [(16, 2), (32, 8), (40, 8), (58, 2), (60, 2), (62, 2)]
            shoff, shentsize, shnum = (struct.unpack_from(e + "Q", data, 40)[0],
                                       *struct.unpack_from(e + "HH", data, 58))
            sh = [(4, 4), (24, 8), (32, 8), (40, 4), (56, 8)]  # type, offset, size, link, entsize
        else:
            fields = [(16, 2), (28, 4), (32, 4), (46, 2), (48, 2), (50, 2)]
            shoff, shentsize, shnum = (struct.unpack_from(e + "I", data, 32)[0],
                                       *struct.unpack_from(e + "HH", data, 46))
            sh = [(4, 4), (16, 4), (20, 4), (24, 4), (36, 4)]
        out += [(o, w, e) for o, w in fields]
        for i in range(shnum):
            base = shoff + i * shentsize
            if base + shentsize > len(data):
                break
            out += [(base + o, w, e) for o, w in sh]
            stype = struct.unpack_from(e + "I", data, base + 4)[0]
            if stype in (2, 11):  # SYMTAB, DYNSYM: every symbol's st_name, info, shndx
                off, size = (struct.unpack_from(e + "QQ", data, base + 24) if is64
                             else struct.unpack_from(e + "II", data, base + 16))
                es = 24 if is64 else 16
                for s in range(min(size // es, 64)):
                    sym = off + s * es
                    out += [(sym, 4, e), (sym + (4 if is64 else 12), 1, e),
                            (sym + (6 if is64 else 14), 2, e)]
    return [(o, w, e) for o, w, e in out if o + w <= len(data)]


def _ar_heads(data: bytes) -> list[int]:
    """Offsets of the member headers of an ar archive (thin members carry no data)."""
    heads, off, thin = [], 8, data[:8] == b"!<thin>\n"
    while off + 60 <= len(data) and data[off + 58:off + 60] == b"`\n":
        heads.append(off)
        try:
            size = int(data[off + 48:off + 58].strip() or b"0")
        except ValueError:
            break
        name = data[off:off + 16].rstrip(b" ")
        special = name in (b"/", b"//", b"/SYM64/")
        stored = 0 if thin and not special else size
        off += 60 + stored + (stored & 1)
    return heads


class Mutator:
    def __init__(self, seeds: list[bytes], rng: random.Random) -> None:
        self.seeds = seeds
        self.rng = rng
        self.hot = [_hot_fields(s) for s in seeds]
        self.heads = [_ar_heads(s) if s[:2] == b"!<" else [] for s in seeds]

    def mutant(self) -> bytes:
        rng = self.rng
        i = rng.randrange(len(self.seeds))
        b = bytearray(self.seeds[i])
        for _ in range(rng.choice((1, 1, 2, 3, 5))):
            op = rng.random()
            if op < 0.35 and self.hot[i]:
                off, width, e = rng.choice(self.hot[i])
                value = rng.choice([*INTERESTING, len(b), len(b) - 1, len(b) + 1,
                                    rng.getrandbits(32)]) % (1 << (8 * width))
                b[off:off + width] = value.to_bytes(width, "little" if e == "<" else "big")
            elif op < 0.55 and self.heads[i]:
                head = rng.choice(self.heads[i])
                which = rng.random()
                if which < 0.6:  # the size field, as text
                    text = str(rng.choice([*INTERESTING[:18], len(b), len(b) - head]))
                    b[head + 48:head + 58] = text[:10].ljust(10).encode()
                elif which < 0.8 and head + 64 <= len(b):  # an index's count (BE u32)
                    v = rng.choice(INTERESTING) % (1 << 32)
                    b[head + 60:head + 64] = v.to_bytes(4, "big")
                else:  # the name field
                    b[head:head + 16] = rng.choice(
                        [b"/", b"//", b"/SYM64/", b"#1/20", b"/0", b"/99999", b"__.SYMDEF"]
                    ).ljust(16)
            elif op < 0.8 and b:
                for _ in range(rng.randint(1, 8)):
                    b[rng.randrange(len(b))] = rng.getrandbits(8)
            elif op < 0.9 and len(b) > 8:
                n = rng.randint(1, min(64, len(b) // 2))
                src, dst = rng.randrange(len(b) - n), rng.randrange(len(b) - n)
                b[dst:dst + n] = b[src:src + n]
            elif b:
                del b[rng.randint(1, len(b)):]  # truncated: a buffer that ends anywhere
        return bytes(b)


def _exact(data: bytes) -> tuple[Any, memoryview]:
    """``data`` in a malloc block of exactly its size, as the byte view the readers take."""
    if not data:
        return None, memoryview(b"")
    buf = (ctypes.c_char * len(data)).from_buffer_copy(data)
    return buf, memoryview(buf).cast("B")


def _switches() -> Callable[[bool], None]:
    """A switch between the C loops and the Python ones (``hotloops.scan``, which every reader
    calls through), and the readers' cached tables dropped."""
    import prebake.inspect
    from prebake.inspect import archive, elf, hotloops, hotloops_py  # noqa: F401 -- the users, loaded

    ext = hotloops.scan
    assert hotloops.BUILT, "the extension is not loaded"
    caches = [f for name, m in list(sys.modules.items())
              if name.startswith("prebake.inspect") and m is not None
              for f in vars(m).values() if callable(getattr(f, "cache_clear", None))]

    def use_c(on: bool) -> None:
        hotloops.scan = ext if on else hotloops_py
        for f in caches:
            f.cache_clear()

    del prebake
    return use_c


def _answer(data: memoryview, symbols: bool) -> str:
    """The reader's whole answer; for an archive also its header walk and index alone (what a
    thin archive read from memory stops after: the index's name count and dangling offsets).
    Without ``symbols`` the index's names are counted, not decoded (``count_byte``)."""
    from prebake.errors import FormatError
    from prebake.inspect import ParseOptions, archive, inspect_bytes
    from prebake.inspect.binreader import Truncated

    out = ""
    if bytes(data[:2]) == b"!<":
        try:
            ar = archive.read_archive(data, index_names=symbols)
            heads = {m.header_off for m in ar.members}
            out = (f"archive: {[(m.name, m.header_off, m.size) for m in ar.members]} "
                   f"{ar.index_kind} {len(ar.index_offsets)} {len(ar.index_names)} "
                   f"{archive._dangling(ar.index_offsets, heads)}\n")
        except (Truncated, ValueError, OverflowError) as exc:
            out = f"archive error: {exc}\n"
    try:
        facts = inspect_bytes(data, "m", ParseOptions(symbols=symbols))
    except FormatError as exc:
        return out + "error: " + exc.reason
    return out + json.dumps(facts.to_json(symbols=symbols), sort_keys=True, default=str)


def _direct_edges() -> int:
    """The C functions called at the edges the readers guard today (so a guard lost in a
    refactor cannot hide a bad read): a count of 0 with an offset far past the data, a symbol
    or section name offset of 2^32 - 1, empty tables."""
    from prebake.inspect.hotloops import scan

    assert scan is not None
    cases = 0
    for shoff in (0, 5, 2**62, 2**63 - 1):
        for entsize in (0, 8, 64):
            assert scan.first_type(b"", shoff, 0, entsize, True, 2) == -1
            cases += 1
    for is64 in (True, False):
        for little in (True, False):
            e = "<" if little else ">"
            row = (struct.pack(e + "IBBHQQ", 0xFFFFFFFF, 0x12, 0, 1, 0, 0) if is64
                   else struct.pack(e + "IIIBBH", 0xFFFFFFFF, 0, 0, 0x12, 0, 1))
            for strtab in (b"", b"\0", b"abc"):
                _keep, sym = _exact(row)
                _keep2, st = _exact(strtab)
                assert scan.object_symbols(sym, st, is64, little) == ([], [], [], set())
                cases += 1
    _k, empty = _exact(b"")
    assert scan.count_byte(empty, 0, 0) == 0 and scan.occurs(empty, (b"ab",)) == 0
    cases += 2
    # named: sh_name at and past a name table's last bytes, 2^31 and 2^32 - 1
    for little in (True, False):
        e = "<" if little else ">"
        for off in (0, 1, 8, 9, 2**31, 2**32 - 1):
            _keep_h, heads = _exact(struct.pack(e + "I", off) + bytes(36))
            for names in (b"", b".", b".comment", b".comment\0"):
                _keep_n, table = _exact(names)
                want = [0] if names[off : off + 9] == b".comment\0" else []
                assert scan.named(heads, 1, 40, little, table, b".comment\0") == want
                cases += 1
    # the wasm loops: extents outside the buffer, a LEB of 10 bytes of ones, a count of 2^64-1
    from prebake.inspect import wasm_code

    big = b"\xff" * 9 + b"\x01"
    for blob in (b"", b"\x00", big, b"\x01\x02\x00\x0b", b"\x01" + big):
        keep, view = _exact(blob)
        n = len(blob)
        for start, end in ((0, n), (0, n + 1), (n, n), (-1, n), (n + 5, n + 9), (2**62, 2**62)):
            outside = start < 0 or end > n or start > end
            types = wasm_code.type_tables()
            got = (scan.wasm_locals(view, start, end), scan.wasm_types(view, start, end, types),
                   scan.wasm_imports(view, start, end, types),
                   scan.wasm_symbols(view, start, end, ([], [], [], [])))
            deep = scan.wasm_deep_scan(view, [(start, end)], *wasm_code.deep_tables())
            # outside the buffer: no answer, only "ask the reference"; inside: an answer's shape
            assert all(g is None for g in got) if outside else \
                all(g is None or isinstance(g, (tuple, list)) for g in got), (blob, start, end, got)
            # the deep decode names the body it cannot read (the first, here), or counts
            assert deep == 0 if outside else deep == 0 or isinstance(deep, tuple), deep
            cases += 5
        sections = scan.wasm_sections(view, bytes(256), ("",) * 14)
        assert sections is None or isinstance(sections, list), sections
        for start, end in ((0, n), (0, n + 1), (-1, n), (2**62, 2**62)):
            data = scan.wasm_data(view, start, end)
            assert data is None or isinstance(data, tuple), data
        cases += 5
        del view, keep
    return cases


def child(seed_dir: Path, mutants: int, seed: int) -> int:
    from prebake.inspect import hotloops

    assert hotloops.scan is not None and "asan-" in str(hotloops.scan.__file__), hotloops.scan
    edges = _direct_edges()
    seeds = [p.read_bytes() for p in sorted(seed_dir.iterdir())
             if p.suffix in (".o", ".so", ".a", ".wasm")]
    use_c = _switches()
    mut = Mutator(seeds, random.Random(seed))
    t0 = time.monotonic()
    differ: list[dict[str, str]] = []
    errors = 0
    for i in range(mutants):
        data = mut.mutant()
        keep, view = _exact(data)
        symbols = i % 2 == 0  # half the corpus without symbol lists: other C paths
        use_c(True)
        with_c = _answer(view, symbols)
        use_c(False)
        without = _answer(view, symbols)
        del view, keep
        errors += "error: " in with_c.rsplit("\n", 1)[-1][:7]
        if with_c != without:
            differ.append({"mutant": str(i), "sha256": hashlib.sha256(data).hexdigest(),
                           "c": with_c[:300], "python": without[:300]})
            (seed_dir.parent / f"differ-{i}.bin").write_bytes(data)
            if len(differ) >= 10:
                break
    print(json.dumps({"mutants": i + 1 if mutants else 0, "seeds": len(seeds),
                      "edge_cases": edges, "errors": errors, "differ": differ,
                      "seconds": round(time.monotonic() - t0, 1)}))
    return 1 if differ else 0


# --- the parent -------------------------------------------------------------------------


def run(mutants: int, seed: int, cache: Path) -> tuple[int, dict[str, Any] | None, str]:
    """Build what is missing, run the child; (exit code, its summary, its stderr)."""
    cache.mkdir(parents=True, exist_ok=True)
    seeds = build_seeds(cache)
    tree = build_sanitized(cache)
    env = dict(os.environ)
    env.update({
        "LD_PRELOAD": libasan(),
        "PYTHONPATH": str(tree),
        "PYTHONMALLOC": "malloc",  # every Python buffer its own malloc block: red zones
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:exitcode=86",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                           str(seeds), "--mutants", str(mutants), "--seed", str(seed)],
                          env=env, capture_output=True, text=True)
    summary = None
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            summary = json.loads(line)
            break
    return proc.returncode, summary, proc.stderr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutants", type=int, default=20000, help="how many mutants (20000)")
    ap.add_argument("--seed", type=int, default=27, help="the corpus's random seed (27)")
    ap.add_argument("--cache", help="build folder ($PREBAKE_TEST_CACHE/fuzz-scan)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(Path(args.child), args.mutants, args.seed)
    rc, summary, stderr = run(args.mutants, args.seed, _cache_root(args.cache))
    if stderr.strip():
        sys.stderr.write(stderr)
    print(json.dumps(summary, indent=2) if summary else "no summary: the run was cut short")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
