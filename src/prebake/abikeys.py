"""The one table of ABI keys: each fact the inspector reads and each contract key, one entry.

An entry carries everything about its key: the fact's JSON name (under ``abi``, or at the top
of a result), the kind of value and its choices, the oses a contract key applies to, the rule
function that judges it (by name, in ``prebake.contract.rules``), how a change of it is
classified by ``prebake diff``, whether the report's matrix shows it, and one line of meaning.
The other views are derived from this table, never restated:

* ``inspect --json``'s ``abi`` fields and the human view's order (``prebake.inspect.facts``);
* contract parsing and validation, ``ONLY_FOR_OS`` (``prebake.contract.terms``);
* the rules registry ``RULES`` (``prebake.contract.rules``);
* the diff's ``FACT_RULES`` and ``TOP_LEVEL_FACTS`` (``prebake.diff.compare``);
* the report's ``CELL_FACTS`` (``prebake.report.data``);
* the contract part of ``docs/reference.md`` and ``schemas/prebake-toml.schema.json``
  (``prebake.reference``); ``tests/unit/test_abikeys.py`` holds ``schemas/inspect.schema.json``
  to it (each fact's enum, type and pattern follow from its ``value`` and ``choices``).

Why a module of frozen values and not a TOML file: the choices are the same tuples the readers
use (``OSES``, ``EH_MODELS``…), mypy checks every entry, and nothing needs parsing or
validating at run time. The module imports nothing from prebake, so every layer may read it.
The rule is named, not imported: the rules read ``Facts``, which is itself derived from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

FORMATS = ("elf", "macho", "macho-fat", "pe", "coff", "wasm", "llvm-bitcode", "gcc-lto", "archive")
KINDS = ("object", "static-library", "shared-library", "executable", "module", "import-library")
OSES = ("linux", "macos", "windows", "emscripten", "wasi", "none")
ARCHES = ("x86_64", "aarch64", "arm", "i686", "wasm32", "wasm64")
EH_MODELS = ("wasm", "emscripten-legacy", "none", "native", "mixed")
# "msvc-ltcg": a cl /GL anonymous object (MSVC link-time code generation), not LLVM bitcode.
LTO_KINDS = ("none", "llvm-bitcode", "gcc-lto", "msvc-ltcg", "mixed")
CXX_STDLIBS = ("libstdc++", "libc++", "msvc", "none")
MSVC_RUNTIMES = ("MD", "MT", "MDd", "MTd")
ASYNC_KINDS = ("jspi", "asyncify", "none")
# The two encodings of native wasm exceptions (docs/binary-formats.md §3.6): what a binary
# holds ("both": mixed in one file; "none": no instruction or type of either) and what a
# contract may ask for.
WASM_EH_ENCODINGS = ("legacy", "exnref", "both", "none")
WASM_EH_WANTED = ("legacy", "exnref")
KNOWN_WASM_FEATURES = (
    "atomics", "bulk-memory", "exception-handling", "extended-const", "memory64",
    "multimemory", "multivalue", "mutable-globals", "nontrapping-fptoint", "reference-types",
    "relaxed-simd", "sign-ext", "simd128", "tail-call", "gc",
)
WASM_OSES = ("emscripten", "wasi")


class Value(Enum):
    """The kind of value a key holds, which decides its parsing and its schema."""

    CHOICE = "choice"  # one of ``choices``
    VERSION = "version"  # "2.28"
    BOOL = "bool"
    TEXT = "text"  # any string (soname)
    STRINGS = "strings"  # a list of strings (globs, library names)
    FEATURES = "features"  # a list of wasm feature names (``KNOWN_WASM_FEATURES``)
    KEYS = "keys"  # a list of contract keys (``allow_unknown``)


@dataclass(frozen=True)
class Diff:
    """How ``prebake diff`` classifies a change of the fact, and why it matters to a consumer.

    ``changed``: any difference between two known values breaks; ``raised``: a higher version
    (or a floor appearing) breaks, a lower one is compatible; ``added``: list items appearing
    break, items disappearing are compatible."""

    how: str
    why: str


@dataclass(frozen=True)
class AbiKey:
    """One ABI key: a fact the inspector reads, a contract key, or both under one name."""

    name: str
    text: str  # one line of meaning (the reference)
    value: Value
    choices: tuple[str, ...] = ()
    # the fact: where its value sits in ``inspect --json`` ("abi": under ``abi``; "top": beside
    # ``format``); None for a contract key that reads other facts (``features_required``)
    fact: str | None = None
    attr: str | None = None  # the ``Abi`` attribute when it differs from the name (a keyword)
    # the contract key: the name of its ``Rule`` in ``prebake.contract.rules`` (None: no key)
    rule: str | None = None
    wanted: tuple[str, ...] = ()  # what a contract may ask for, when not every one of choices
    setting: bool = False  # a contract key that changes how rules judge, not a rule itself
    reads: tuple[str, ...] = ()  # the facts the rule reads (the reference's column)
    oses: tuple[str, ...] = ()  # the contract key applies only to binaries of these oses
    default: str = ""  # the contract key's default, in words (the reference)
    diff: Diff | None = None
    report: bool = False  # a column of the report's matrix
    describe: str = ""  # the schema's description of the fact, when it needs one

    @property
    def attribute(self) -> str:
        return self.attr or self.name

    @property
    def contract_choices(self) -> tuple[str, ...]:
        return self.wanted or self.choices

    @property
    def contract(self) -> bool:
        return self.rule is not None or self.setting


_FEATS = "abi.wasm_features"
KEYS: tuple[AbiKey, ...] = (
    AbiKey("os", "the binary's operating system", Value.CHOICE, OSES, fact="top",
           rule="OS", reads=("os",), default="the platform's os"),
    AbiKey("arch", "the binary's architecture (a fat Mach-O passes when one slice has it)",
           Value.CHOICE, ARCHES, fact="top", rule="ARCH", reads=("arch",),
           default="the platform's arch", report=True,
           diff=Diff("changed", "consumers built for the old architecture cannot link it")),
    AbiKey("format", "the container format", Value.CHOICE, FORMATS, fact="top",
           diff=Diff("changed", "consumers built for the old format cannot link it")),
    AbiKey("kind", "what the file is (object, library, module…)", Value.CHOICE, KINDS,
           fact="top",
           diff=Diff("changed", "static vs shared changes how consumers link and ship it")),
    AbiKey("eh", "exception-handling model; an object that throws nothing passes any model",
           Value.CHOICE, EH_MODELS, fact="abi", rule="EH", reads=("abi.eh",), report=True,
           diff=Diff("changed", "mixing exception-handling models fails at link or run time")),
    AbiKey("wasm_eh_encoding", "wasm: the encoding of native exceptions the code holds: "
           "`legacy` (try/catch/delegate), `exnref` (try_table/throw_ref, the exnref type), "
           "`both`, `none` (neither); read from the instructions of every function. As a "
           "contract key: the encoding every wasm binary must use; one without EH code passes",
           Value.CHOICE, WASM_EH_ENCODINGS, fact="abi", rule="WASM_EH_ENCODING", report=True,
           wanted=WASM_EH_WANTED, reads=("abi.wasm_eh_encoding",), oses=WASM_OSES,
           describe="wasm: which encoding of native exceptions the code holds, read from every "
                    "function's instructions (docs/binary-formats.md §3.6); null: a body could "
                    "not be decoded (evidence says why) or not wasm",
           diff=Diff("changed", "an engine without exnref (or without legacy EH) refuses the "
                                "module")),
    AbiKey("lto", "LTO kind: `none` refuses bitcode/GIMPLE objects tied to one compiler",
           Value.CHOICE, LTO_KINDS, fact="abi", rule="LTO", reads=("abi.lto", "format"),
           report=True, diff=Diff("changed", "LTO objects are tied to one compiler version")),
    AbiKey("glibc_max", "newest GLIBC symbol version an image may require (the glibc floor)",
           Value.VERSION, fact="abi", rule="GLIBC_MAX", reads=("abi.glibc_max", "symbols"),
           oses=("linux",), report=True,
           diff=Diff("raised", "needs a newer glibc than systems the old one ran on")),
    AbiKey("glibcxx_max", "newest GLIBCXX symbol version an image may require", Value.VERSION,
           fact="abi", rule="GLIBCXX_MAX", reads=("abi.glibcxx_max", "symbols"),
           oses=("linux",), report=True,
           diff=Diff("raised", "needs a newer libstdc++ than systems the old one ran on")),
    AbiKey("cxx_stdlib", "C++ standard library; a binary that needs none passes", Value.CHOICE,
           CXX_STDLIBS, fact="abi", rule="CXX_STDLIB", reads=("abi.cxx_stdlib",), report=True,
           diff=Diff("changed", "libstdc++ and libc++ objects do not mix")),
    AbiKey("macos_min", "highest macOS deployment target a binary may have", Value.VERSION,
           fact="abi", rule="MACOS_MIN", reads=("abi.macos_min",), oses=("macos",),
           report=True, diff=Diff("raised", "needs a newer macOS than the old deployment target")),
    AbiKey("macos_sdk", "the macOS SDK a Mach-O binary was built with", Value.VERSION,
           fact="abi"),
    AbiKey("msvc_runtime", "MSVC C runtime (`/MD`, `/MT`…)", Value.CHOICE, MSVC_RUNTIMES,
           fact="abi", rule="MSVC_RUNTIME", reads=("abi.msvc_runtime",), oses=("windows",),
           report=True, diff=Diff("changed", "MD vs MT runtimes do not mix in one link")),
    AbiKey("threads", "wasm: shared memory (objects: atomics + bulk-memory features)",
           Value.BOOL, fact="abi", rule="THREADS", reads=("abi.threads", _FEATS),
           oses=WASM_OSES, report=True,
           diff=Diff("changed", "consumers must match the thread model (wasm shared memory)")),
    AbiKey("simd128", "wasm: uses or enables 128-bit SIMD", Value.BOOL, fact="abi"),
    AbiKey("relaxed_simd", "wasm: uses or enables relaxed SIMD", Value.BOOL, fact="abi"),
    AbiKey("async", "linked wasm module: how it suspends (JSPI or Asyncify)", Value.CHOICE,
           ASYNC_KINDS, fact="abi", attr="async_",
           diff=Diff("changed", "JSPI vs Asyncify must match the consumer's link flags")),
    AbiKey("wasm_features", "wasm features declared (target_features) or used", Value.FEATURES,
           fact="abi", report=True,
           diff=Diff("added", "consumers must enable the new wasm features")),
    AbiKey("wasm_features_complete", "whether wasm_features is the whole list", Value.BOOL,
           fact="abi", describe="whether wasm_features is the whole list (false: read without "
                                "decoding the code)"),
    AbiKey("features_required", "wasm features every binary must have", Value.FEATURES,
           rule="FEATURES_REQUIRED", reads=(_FEATS, "abi.simd128"), oses=WASM_OSES),
    AbiKey("features_forbidden", "wasm features no binary may have (e.g. relaxed-simd)",
           Value.FEATURES, rule="FEATURES_FORBIDDEN", reads=(_FEATS, "abi.relaxed_simd"),
           oses=WASM_OSES),
    AbiKey("needed", "shared libraries needed at load time", Value.STRINGS, fact="top",
           diff=Diff("added", "a new library must be present at load time")),
    AbiKey("delay_needed", "PE delay-loaded DLLs", Value.STRINGS, fact="top",
           diff=Diff("added", "a new delay-loaded DLL must be present on first call")),
    AbiKey("soname", "the shared library's soname or install name", Value.TEXT, fact="top",
           diff=Diff("changed",
                     "consumers linked against the old soname do not load the new one")),
    AbiKey("allowed_needed", "globs of the only shared libraries an image may need, load-time "
           "(`needed`) and delay-loaded (`delay_needed`) alike", Value.STRINGS,
           rule="ALLOWED_NEEDED", reads=("needed",)),
    AbiKey("forbid_exports", "globs of symbols no image may export (raw, without Mach-O's `_`, "
           "or demangled)", Value.STRINGS, rule="FORBID_EXPORTS", reads=("symbols",)),
    AbiKey("allow_unknown", "contract keys whose fact may be unreadable: such a binary passes "
           "that rule, and the report says so (without it, an unreadable fact fails)",
           Value.KEYS, setting=True),
)

BY_NAME: Mapping[str, AbiKey] = {k.name: k for k in KEYS}


def abi_facts() -> tuple[AbiKey, ...]:
    """The facts under ``abi``, in the order the human view lists them."""
    return tuple(k for k in KEYS if k.fact == "abi")


def contract_keys() -> tuple[AbiKey, ...]:
    """The contract's keys, rules and settings, in the order the reference lists them."""
    return tuple(k for k in KEYS if k.contract)
