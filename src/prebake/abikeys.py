"""The one table of ABI keys: each fact the inspector reads and each contract key, one entry.

An entry states everything about its key: the fact's JSON name (under ``abi``, or at the top
of a result), the kind of value and its choices (so its Python type and its JSON Schema), how
an archive's members add up to the archive's value, the oses a contract key applies to and
whether a rule judges it, how a change of it is classified by ``prebake diff``, the column of
``prebake inspect``'s member table and of the report's matrix that shows it, and one line of
meaning. Everything else follows from the table, never restated by hand:

* ``inspect.facts.Abi`` and ``contract.terms.Contract`` (their fields are generated into those
  modules by ``python -m prebake.reference``; a test fails when they are stale);
* ``inspect --json``'s ``abi`` fields, the human view's order and its member table
  (``prebake.inspect.facts``, ``prebake.inspect.render``), ``schemas/inspect.schema.json``
  (generated), how archive members combine (``prebake.inspect.archive.summarise``);
* contract parsing and validation, ``ONLY_FOR_OS`` (``prebake.contract.terms``), the rules in
  the order the contract lists them (``prebake.contract.rules.RULES``: each rule is bound to
  its key there, by name, and a key without its rule fails at import);
* the diff's ``FACT_RULES`` and ``TOP_LEVEL_FACTS`` (``prebake.diff.compare``), the report's
  ``CELL_FACTS`` (``prebake.report.data``);
* the contract part of ``docs/reference.md`` and ``schemas/prebake-toml.schema.json``
  (``prebake.reference``).

Why a module of frozen values and not a TOML file: the choices are the same tuples the readers
use (``OSES``, ``EH_MODELS``…), mypy checks every entry, and nothing needs parsing or
validating at run time. The module imports nothing from prebake, so every layer may read it.
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
# Every feature the wasm reader can report (LLVM's target_features spelling, and wasm-tools'
# for proposals LLVM has no feature for: typed function references, compact imports, custom
# page sizes), so that a contract may name each.
KNOWN_WASM_FEATURES = (
    "atomics", "bulk-memory", "exception-handling", "extended-const", "memory64",
    "multimemory", "multivalue", "mutable-globals", "nontrapping-fptoint", "reference-types",
    "relaxed-simd", "sign-ext", "simd128", "tail-call", "gc", "function-references",
    "wide-arithmetic", "compact-imports", "custom-page-sizes",
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


class Combine(Enum):
    """How an archive's members add up to the archive's value of a fact (members that could
    not be read are left out; ``AbiKey.ignore`` values agree with any other)."""

    NONE = "none"  # the archive's reader says it itself (or nothing does)
    COMMON = "common"  # the one value the members agree on, else ``AbiKey.mixed`` (or unknown)
    HIGHEST = "highest"  # the highest version any member has
    ANY = "any"  # true when one member is, false when none is and one says so
    UNION = "union"  # every member's list together (those not in all are counted)
    ALL = "all"  # true when every member that says is, false when one is not


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
    # how an archive's members add up (``mixed``: the value when they disagree; ``only``: the
    # members of that format alone count)
    members: Combine = Combine.NONE
    mixed: str | None = None
    ignore: tuple[str, ...] = ()
    only: str | None = None
    # the contract key: a rule judges it (bound to the name in ``prebake.contract.rules``)
    rule: bool = False
    wanted: tuple[str, ...] = ()  # what a contract may ask for, when not every one of choices
    setting: bool = False  # a contract key that changes how rules judge, not a rule itself
    # a contract key the build's guards judge on what a recipe proved about itself (its
    # license, ``prebake.package.license_proof``), not a rule over one binary's facts: a
    # binary alone cannot say, so ``prebake check`` holds it undecided (fails closed)
    recipe: bool = False
    empty_rule: bool = False  # a list key whose empty list is a rule of its own (none allowed)
    reads: tuple[str, ...] = ()  # the facts the rule reads (the reference's column)
    oses: tuple[str, ...] = ()  # the contract key applies only to binaries of these oses
    default: str = ""  # the contract key's default, in words (the reference)
    diff: Diff | None = None
    report: bool = False  # a column of the report's matrix
    # the column of ``prebake inspect``'s member table that shows it ("other": the last one,
    # shared, first value wins; ``label`` goes in front of the value there)
    column: str | None = None
    label: str = ""
    describe: str = ""  # the schema's description of the fact, when it needs one

    @property
    def attribute(self) -> str:
        return self.attr or self.name

    @property
    def contract_choices(self) -> tuple[str, ...]:
        return self.wanted or self.choices

    @property
    def contract(self) -> bool:
        return self.rule or self.setting or self.recipe


_FEATS = "abi.wasm_features"
KEYS: tuple[AbiKey, ...] = (
    AbiKey("format", "the container format", Value.CHOICE, FORMATS, fact="top",
           column="format",
           diff=Diff("changed", "consumers built for the old format cannot link it")),
    AbiKey("kind", "what the file is (object, library, module…)", Value.CHOICE, KINDS,
           fact="top",
           diff=Diff("changed", "static vs shared changes how consumers link and ship it")),
    AbiKey("os", "the binary's operating system", Value.CHOICE, OSES, fact="top",
           members=Combine.COMMON, rule=True, reads=("os",), default="the platform's os"),
    AbiKey("arch", "the binary's architecture (a fat Mach-O passes when one slice has it)",
           Value.CHOICE, ARCHES, fact="top", members=Combine.COMMON, rule=True,
           reads=("arch",), default="the platform's arch", report=True, column="arch",
           diff=Diff("changed", "consumers built for the old architecture cannot link it")),
    AbiKey("eh", "exception-handling model; an object that throws nothing passes any model",
           Value.CHOICE, EH_MODELS, fact="abi", members=Combine.COMMON, mixed="mixed",
           # EH-free members link with either EH model: an archive of legacy-EH and EH-free
           # members is a legacy-EH archive, not "mixed"
           ignore=("none",), rule=True, reads=("abi.eh",), report=True, column="eh",
           diff=Diff("changed", "mixing exception-handling models fails at link or run time")),
    AbiKey("wasm_eh_encoding", "wasm: the encoding of native exceptions the code holds: "
           "`legacy` (try/catch/delegate), `exnref` (try_table/throw_ref, the exnref type), "
           "`both`, `none` (neither); read from the instructions of every function. As a "
           "contract key: the encoding every wasm binary must use; one without EH code passes",
           Value.CHOICE, WASM_EH_ENCODINGS, fact="abi",
           # members in one encoding and members in the other make an archive whose link
           # holds both; members without EH code link with either (their counts are kept)
           members=Combine.COMMON, mixed="both", ignore=("none",), only="wasm", rule=True,
           report=True, wanted=WASM_EH_WANTED, reads=("abi.wasm_eh_encoding",),
           oses=WASM_OSES,
           describe="wasm: which encoding of native exceptions the code holds, read from every "
                    "function's instructions (docs/binary-formats.md §3.6); null: a body could "
                    "not be decoded (evidence says why) or not wasm",
           diff=Diff("changed", "an engine without exnref (or without legacy EH) refuses the "
                                "module")),
    # LTO keeps "mixed": a native linker cannot use the bitcode members of a half-bitcode archive
    AbiKey("lto", "LTO kind: `none` refuses bitcode/GIMPLE objects tied to one compiler",
           Value.CHOICE, LTO_KINDS, fact="abi", members=Combine.COMMON, mixed="mixed",
           rule=True, reads=("abi.lto", "format"), report=True, column="lto",
           diff=Diff("changed", "LTO objects are tied to one compiler version")),
    AbiKey("glibc_max", "newest GLIBC symbol version an image may require (the glibc floor)",
           Value.VERSION, fact="abi", members=Combine.HIGHEST, rule=True,
           reads=("abi.glibc_max", "symbols"), oses=("linux",), report=True, column="glibc",
           diff=Diff("raised", "needs a newer glibc than systems the old one ran on")),
    AbiKey("glibcxx_max", "newest GLIBCXX symbol version an image may require", Value.VERSION,
           fact="abi", members=Combine.HIGHEST, rule=True,
           reads=("abi.glibcxx_max", "symbols"), oses=("linux",), report=True,
           diff=Diff("raised", "needs a newer libstdc++ than systems the old one ran on")),
    AbiKey("cxx_stdlib", "C++ standard library; a binary that needs none passes", Value.CHOICE,
           CXX_STDLIBS, fact="abi", members=Combine.COMMON, ignore=("none",), rule=True,
           reads=("abi.cxx_stdlib",), report=True, column="c++",
           diff=Diff("changed", "libstdc++ and libc++ objects do not mix")),
    AbiKey("macos_min", "highest macOS deployment target a binary may have", Value.VERSION,
           fact="abi", members=Combine.HIGHEST, rule=True, reads=("abi.macos_min",),
           oses=("macos",), report=True, column="other", label="macos",
           diff=Diff("raised", "needs a newer macOS than the old deployment target")),
    AbiKey("macos_sdk", "the macOS SDK a Mach-O binary was built with", Value.VERSION,
           fact="abi", members=Combine.HIGHEST),
    AbiKey("msvc_runtime", "MSVC C runtime (`/MD`, `/MT`…)", Value.CHOICE, MSVC_RUNTIMES,
           fact="abi", members=Combine.COMMON, rule=True, reads=("abi.msvc_runtime",),
           oses=("windows",), report=True, column="other",
           diff=Diff("changed", "MD vs MT runtimes do not mix in one link")),
    AbiKey("threads", "wasm: shared memory (objects: atomics + bulk-memory features)",
           Value.BOOL, fact="abi", members=Combine.ANY, rule=True,
           reads=("abi.threads", _FEATS), oses=WASM_OSES, report=True,
           diff=Diff("changed", "consumers must match the thread model (wasm shared memory)")),
    AbiKey("simd128", "wasm: uses or enables 128-bit SIMD", Value.BOOL, fact="abi",
           members=Combine.ANY),
    AbiKey("relaxed_simd", "wasm: uses or enables relaxed SIMD", Value.BOOL, fact="abi",
           members=Combine.ANY),
    AbiKey("async", "linked wasm module: how it suspends (JSPI or Asyncify)", Value.CHOICE,
           ASYNC_KINDS, fact="abi", attr="async_", members=Combine.COMMON,
           diff=Diff("changed", "JSPI vs Asyncify must match the consumer's link flags")),
    AbiKey("wasm_features", "wasm features declared (target_features) or used", Value.FEATURES,
           fact="abi", members=Combine.UNION, report=True, column="other",
           diff=Diff("added", "consumers must enable the new wasm features")),
    AbiKey("wasm_features_complete", "whether wasm_features is the whole list", Value.BOOL,
           fact="abi", members=Combine.ALL,
           describe="whether wasm_features is the whole list (false: some code "
                    "or section could not be read; the evidence says why)"),
    AbiKey("exec_stack", "ELF: the binary asks for an executable stack (an image's "
           "`PT_GNU_STACK` is executable; an object's `.note.GNU-stack` is, and a link makes "
           "that the executable's); unknown when it has neither. As a contract key: `false` "
           "refuses such a binary", Value.BOOL, fact="abi", members=Combine.ANY, rule=True,
           reads=("abi.exec_stack",), oses=("linux",),
           describe="ELF: whether the binary asks for an executable stack (PT_GNU_STACK of an "
                    "image, .note.GNU-stack of an object); null: it has neither, or not ELF",
           diff=Diff("changed", "an executable stack turns off no-execute stack protection "
                                "for every process that loads it")),
    AbiKey("features_required", "wasm features every binary must have", Value.FEATURES,
           rule=True, reads=(_FEATS, "abi.simd128"), oses=WASM_OSES),
    AbiKey("features_forbidden", "wasm features no binary may have (e.g. relaxed-simd)",
           Value.FEATURES, rule=True, reads=(_FEATS, "abi.relaxed_simd"), oses=WASM_OSES),
    AbiKey("needed", "shared libraries needed at load time", Value.STRINGS, fact="top",
           diff=Diff("added", "a new library must be present at load time")),
    AbiKey("delay_needed", "PE delay-loaded DLLs", Value.STRINGS, fact="top",
           describe="PE delay-loaded DLLs (loaded on first call, not at load time; not in "
                    "needed); null for other formats",
           diff=Diff("added", "a new delay-loaded DLL must be present on first call")),
    AbiKey("soname", "the shared library's soname or install name", Value.TEXT, fact="top",
           diff=Diff("changed",
                     "consumers linked against the old soname do not load the new one")),
    AbiKey("allowed_needed", "globs of the only shared libraries an image may need, load-time "
           "(`needed`) and delay-loaded (`delay_needed`) alike", Value.STRINGS, rule=True,
           empty_rule=True, reads=("needed",)),
    AbiKey("forbid_exports", "globs of symbols no image may export (raw, without Mach-O's `_`, "
           "or demangled)", Value.STRINGS, rule=True, reads=("symbols",)),
    AbiKey("allowed_licenses", "globs of the only licenses an asset's recipes may have "
           "(`LGPL-*`, `GPL-2.0-only WITH *`: one license each), judged case-insensitively "
           "operand by operand of each recipe's SPDX expression as proven from its libraries' "
           "bytes (`Recipe.license_check`): every operand of an `AND`, one whole choice of an "
           "`OR`, `L WITH E` by itself or by `L`; what is no SPDX expression fails. The build "
           "refuses any other before packaging, naming the library and the operand. A recipe "
           "that proves no license fails closed unless `allow_unknown` names this key",
           Value.STRINGS,
           recipe=True, reads=("recipes[].license",)),
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


def python_type(key: AbiKey, *, contract: bool = False) -> tuple[str, str]:
    """``(annotation, default)`` of the key's field: in ``inspect.facts.Abi`` (a fact unknown
    is None) or, with ``contract``, in ``contract.terms.Contract`` (None or empty: no rule)."""
    if key.value in (Value.STRINGS, Value.FEATURES, Value.KEYS):
        if not contract:
            return "list[str] | None", "None"
        return ("tuple[str, ...] | None", "None") if key.empty_rule else ("tuple[str, ...]", "()")
    if key.value is Value.BOOL:
        return "bool | None", "None"
    return "str | None", "None"
