"""The engines table as data (``src/prebake/engines.toml``) and what ``prebake.engines`` makes
of a binary's facts: every feature the wasm reader can name maps to one row, each row cites
sources the table lists, a malformed row is refused naming it, and the needs and verdicts
follow the facts (the encoding of exceptions, JSPI from the loader, a partial feature list).
tests/integration/test_engine_probes.py holds the cells to the engines here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from prebake import abikeys, engines
from prebake.inspect.facts import Abi, Facts


def _facts(kind: str = "module", **abi: object) -> Facts:
    return Facts(path="m.wasm", format="wasm", kind=kind, os="emscripten", arch="wasm32",
                 abi=Abi(**abi))  # type: ignore[arg-type]


def test_every_feature_the_reader_names_has_one_row() -> None:
    mapped = engines.table().by_wasm_feature()
    # exception-handling is two rows, told apart by the encoding the code holds; LLVM's
    # bulk-memory-opt and call-indirect-overlong (an object's target_features) are parts of
    # bulk memory and reference types
    assert sorted(mapped) == sorted({*abikeys.KNOWN_WASM_FEATURES, "bulk-memory-opt",
                                     "call-indirect-overlong"} - {"exception-handling"})
    assert (mapped["bulk-memory-opt"], mapped["call-indirect-overlong"]) == (
        "bulk-memory", "reference-types")
    assert {f.encoding for f in engines.table().features.values() if f.encoding} == {
        "legacy", "exnref"}


def test_every_row_cites_its_sources_and_every_engine_is_named() -> None:
    t = engines.table()
    assert list(t.engines) == ["chrome", "firefox", "safari", "node", "deno", "bun"]
    for feature in t.features.values():
        assert feature.sources and all(s in t.sources for s in feature.sources), feature.id
        for engine, cell in feature.cells.items():
            assert engine in t.engines and cell.known
    # Bun: no source says anything, so nothing is claimed
    assert all(not f.cell("bun").known for f in t.features.values())


@pytest.fixture
def table_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "engines.toml"
    monkeypatch.setattr(engines, "TABLE", path)
    engines.table.cache_clear()
    yield path
    engines.table.cache_clear()


@pytest.mark.parametrize(("row", "said"), [
    ('chrome = "soon"', 'features.simd.chrome: a release like "137" or false'),
    ('chrom = "91"', "features.simd: unknown keys ['chrom']"),
    ('sources = ["a-blog"]', "sources must name entries of [sources]"),
])
def test_a_malformed_row_is_named(table_file: Path, row: str, said: str) -> None:
    lines = ["[sources]", 'w = "the feature table"', "[engines.chrome]", 'title = "Chrome"',
             "[features.simd]", 'wasm_features = ["simd128"]']
    lines += [row] if row.startswith("sources") else ['sources = ["w"]', row]
    table_file.write_text("\n".join(lines) + "\n")
    with pytest.raises(engines.TableError) as err:
        engines.table()
    assert str(err.value).startswith("engines.toml: features.simd") and said in str(err.value)


@pytest.mark.parametrize(("text", "said"), [
    ("chrome", "'chrome' is not ENGINE>=RELEASE"),
    ("chrome>=", "'chrome>=' is not ENGINE>=RELEASE"),
    ("firefx>=131", "unknown engine 'firefx' (did you mean 'firefox'?)"),
    ("safari>=18.4.1.2.3", "is not ENGINE>=RELEASE"),
])
def test_a_floor_that_is_not_engine_and_release_is_one_line(text: str, said: str) -> None:
    with pytest.raises(ValueError) as err:
        engines.parse_floor(text)
    assert said in str(err.value) and "\n" not in str(err.value)


def test_floors_compare_number_by_number() -> None:
    assert engines.parse_floor(" safari >= 18.4 ") == engines.Floor("safari", "18.4")
    assert engines.release_key("156.0.8078.129") > engines.release_key("137")
    assert engines.release_key("24.21.0") > engines.release_key("24.15")
    assert engines.release_key("18.4") < engines.release_key("18.10")


def test_the_encoding_decides_which_exceptions_row() -> None:
    feats = ["exception-handling", "simd128"]
    for encoding, rows in (("legacy", {"exceptions-legacy"}), ("exnref", {"exceptions-exnref"}),
                           ("both", {"exceptions-legacy", "exceptions-exnref"}), ("none", set())):
        need = engines.needs(_facts("object", wasm_features=feats, wasm_eh_encoding=encoding,
                                    wasm_features_complete=True))
        assert need is not None
        assert {f for f in need.certain if f.startswith("exceptions")} == rows, encoding
        assert need.unsure == {}
    unread = engines.needs(_facts("object", wasm_features=feats, wasm_features_complete=True))
    assert unread is not None and set(unread.unsure) == {"exceptions-legacy", "exceptions-exnref"}


def test_jspi_comes_from_the_loader_and_is_unsure_without_one() -> None:
    jspi = engines.needs(_facts(wasm_features=[], async_="jspi", wasm_features_complete=True))
    assert jspi is not None and jspi.certain == ("jspi",)
    bare = engines.needs(_facts(wasm_features=[], wasm_features_complete=True))
    assert bare is not None and "JS loader" in bare.unsure["jspi"]
    (lack,) = engines.judge(bare, engines.parse_floor("firefox>=131"))
    assert lack.text() == ("JSPI: cannot tell whether it needs it (no JS loader beside the "
                           "module says whether it suspends (JSPI)) and Firefox 131 lacks it "
                           "(from 153)")
    assert engines.judge(bare, engines.parse_floor("chrome>=137")) == []
    # an archive's objects never show JSPI: the consumer's link decides
    obj = engines.needs(_facts("object", wasm_features=[], wasm_features_complete=True))
    assert obj is not None and obj.unsure == {}


def test_the_verdict_names_the_engine_and_the_feature() -> None:
    need = engines.needs(_facts(wasm_features=["relaxed-simd", "simd128"], async_="none",
                                wasm_features_complete=True, relaxed_simd=True))
    assert need is not None and need.certain == ("simd", "relaxed-simd")
    (lack,) = engines.judge(need, engines.parse_floor("safari>=18.4"))
    assert lack.text() == "relaxed SIMD: Safari 18.4 lacks it (no release has it)"
    (lack,) = engines.judge(need, engines.parse_floor("firefox>=131"))
    assert lack.text() == "relaxed SIMD: Firefox 131 lacks it (from 146)"
    v = engines.verdict(need)
    assert v.runs == {"chrome": "114", "firefox": "146", "node": "21.0", "deno": "1.33"}
    assert v.lacks == {"safari": ("relaxed-simd",)} and list(v.undecided) == ["bun"]
    assert v.line() == ("chrome>=114, firefox>=146, node>=21.0, deno>=1.33; not safari "
                        "(relaxed SIMD); undecided: bun")


def test_a_partial_feature_list_decides_no_engine() -> None:
    need = engines.needs(_facts(wasm_features=["simd128"], async_="none",
                                wasm_features_complete=False))
    assert need is not None and need.partial
    v = engines.verdict(need)
    assert v.runs == {} and set(v.undecided) == set(engines.table().engines)
    assert engines.needs(Facts(path="x.o", format="elf", kind="object", arch="x86_64")) is None


def test_a_feature_no_row_means_decides_no_engine() -> None:
    """fp16 (LLVM's half precision) has no row: every engine is undecided, a floor refused."""
    need = engines.needs(_facts("object", wasm_features=["fp16", "simd128"],
                                wasm_features_complete=True))
    assert need is not None and need.foreign == ("fp16",)
    assert engines.verdict(need).runs == {}
    (lack,) = engines.judge(need, engines.parse_floor("chrome>=150"))
    assert lack.text() == "fp16: a feature engines.toml has no row for"
