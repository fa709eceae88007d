"""Contract rules on hand-made facts: each rule fails on evidence, passes on unknown or equal."""

from __future__ import annotations

from pathlib import Path

import pytest

from prebake.contract import Contract, load_contract_file
from prebake.contract.check import CheckReport, check_facts, check_paths
from prebake.contract.rules import RULES, RULES_BY_KEY, matching_exports, version_tuple
from prebake.contract.terms import SETTINGS
from prebake.errors import ConfigError, PrebakeError
from prebake.inspect.facts import Abi, Facts, Symbols


def wasm_obj(name: str, **abi: object) -> Facts:
    return Facts(path=f"libx.a({name})", format="wasm", kind="object", os="emscripten",
                 arch="wasm32", abi=Abi(**abi))  # type: ignore[arg-type]


def archive(*members: Facts) -> Facts:
    return Facts(path="libx.a", format="archive", kind="static-library", members=list(members))


def test_every_contract_key_has_a_rule() -> None:
    """Every key but the settings and the one judged on a recipe's license proof."""
    keys = set(Contract.__dataclass_fields__) - set(SETTINGS) - {"allowed_licenses"}
    assert SETTINGS == ("allow_unknown",)
    assert {r.key for r in RULES} == keys


def test_eh_names_offending_members_with_evidence() -> None:
    legacy = wasm_obj("session.o", eh="emscripten-legacy")
    legacy.note("eh", "references __resumeException, invoke_vii")
    ok = [wasm_obj(f"m{i}.o", eh="wasm") for i in range(3)] + [wasm_obj("c.o", eh="none")]
    vs = check_facts(archive(legacy, *ok), Contract(eh="wasm"))
    assert len(vs) == 1
    v = vs[0]
    assert (v.rule, v.expected, v.found, v.members, v.total) == (
        "eh", "wasm", "emscripten-legacy", ["session.o"], 5)
    assert v.detail == ("eh: required wasm, found emscripten-legacy in 1 of 5 members: "
                        "session.o (references __resumeException, invoke_vii)")


def test_eh_unknown_and_none_pass() -> None:
    assert not check_facts(archive(wasm_obj("a.o"), wasm_obj("b.o", eh="none")),
                           Contract(eh="wasm"))
    assert check_facts(wasm_obj("a.o", eh="wasm"), Contract(eh="none"))


def test_lto_from_member_format() -> None:
    bc = Facts(path="liby.a(f.o)", format="llvm-bitcode", kind="object")
    v = check_facts(archive(bc), Contract(lto="none"))[0]
    assert v.found == "llvm-bitcode" and v.members == ["f.o"]


def test_threads_reports_the_linker_message() -> None:
    bad = wasm_obj("thr.o", wasm_features=["-shared-mem"])
    good = wasm_obj("ok.o", wasm_features=["atomics", "bulk-memory", "mutable-globals"])
    v = check_facts(archive(bad, good), Contract(threads=True))[0]
    assert v.members == ["thr.o"]
    assert ("--shared-memory is disallowed by thr.o because it was not compiled with "
            "'atomics' or 'bulk-memory' features") in v.detail
    lacking = wasm_obj("simd.o", wasm_features=["simd128"])
    v2 = check_facts(archive(lacking), Contract(threads=True))[0]
    assert v2.members == ["simd.o"] and "'atomics' and 'bulk-memory'" in v2.detail


def test_threads_on_a_linked_module() -> None:
    mod = Facts(path="a.wasm", format="wasm", kind="module", abi=Abi(threads=False))
    v = check_facts(mod, Contract(threads=True))[0]
    assert v.found == "false" and v.members == [] and v.total is None


def test_features_forbidden_and_required_per_member() -> None:
    rel = wasm_obj("relaxed.o", wasm_features=["relaxed-simd", "simd128"])
    plain = wasm_obj("plain.o", wasm_features=["simd128"])
    c = Contract(features_forbidden=("relaxed-simd",), features_required=("simd128",))
    vs = {v.rule: v for v in check_facts(archive(rel, plain), c)}
    assert set(vs) == {"features_forbidden"}
    assert vs["features_forbidden"].members == ["relaxed.o"]
    c2 = Contract(features_required=("exception-handling",))
    assert check_facts(archive(rel, plain), c2)[0].members == ["relaxed.o", "plain.o"]


def test_relaxed_simd_fact_counts_as_the_feature() -> None:
    mod = Facts(path="m.wasm", format="wasm", kind="module", abi=Abi(relaxed_simd=True))
    assert check_facts(mod, Contract(features_forbidden=("relaxed-simd",)))


def test_glibc_max_uses_versions_when_no_evidence() -> None:
    so = Facts(path="libz.so", format="elf", kind="shared-library", abi=Abi(glibc_max="2.34"),
               symbols=Symbols(versions={"dlopen": "GLIBC_2.34", "memcpy": "GLIBC_2.14"}))
    v = check_facts(so, Contract(glibc_max="2.28"))[0]
    assert v.found == "2.34" and "dlopen@GLIBC_2.34" in v.detail and "memcpy" not in v.detail
    assert not check_facts(so, Contract(glibc_max="2.34"))
    assert version_tuple("2.9") < version_tuple("2.28")


def test_macos_min_per_object() -> None:
    objs = [Facts(path=f"lib.a({n}.o)", format="macho", kind="object", os="macos",
                  arch="aarch64", abi=Abi(macos_min=v)) for n, v in (("a", "13.0"), ("b", "14.0"))]
    v = check_facts(archive(*objs), Contract(macos_min="13.3"))[0]
    assert v.members == ["b.o"] and v.found == "14.0"


def test_arch_on_a_fat_binary_needs_one_matching_slice() -> None:
    fat = Facts(path="u.dylib", format="macho-fat", slices=[
        Facts(path="u.dylib[x86_64]", arch="x86_64"), Facts(path="u.dylib[arm64]", arch="aarch64")])
    assert not check_facts(fat, Contract(arch="aarch64"))
    assert check_facts(fat, Contract(arch="arm"))


def test_equal_rules() -> None:
    obj = Facts(path="w.obj", format="coff", kind="object", os="windows", arch="x86_64",
                abi=Abi(msvc_runtime="MT", cxx_stdlib="libc++"))
    got = {v.rule for v in check_facts(obj, Contract(
        os="linux", arch="aarch64", msvc_runtime="MD", cxx_stdlib="libstdc++"))}
    assert got == {"os", "arch", "msvc_runtime", "cxx_stdlib"}
    assert not check_facts(obj, Contract(os="windows", arch="x86_64", msvc_runtime="MT"))


def test_allowed_needed_globs() -> None:
    so = Facts(path="l.so", format="elf", kind="shared-library",
               needed=["libc.so.6", "libm.so.6", "libprotobuf.so.32"])
    v = check_facts(so, Contract(allowed_needed=("libc.so.*", "libm.so.6")))[0]
    assert v.found == "libprotobuf.so.32"
    dll = Facts(path="x.dll", format="pe", kind="shared-library", needed=["KERNEL32.dll"])
    assert not check_facts(dll, Contract(allowed_needed=("kernel32.dll",)))
    assert check_facts(dll, Contract(allowed_needed=()))


def test_forbid_exports_mangled_demangled_and_macho() -> None:
    names = ["_ZN4absl12lts_202301257StrCatB5cxx11ERKNS0_8AlphaNumES3_", "OrtGetApiBase",
             "_ZN6google8protobuf7MessageD2Ev"]
    assert matching_exports(names, ["_ZN4absl*"], macho=False) == [names[0]]
    assert matching_exports(names, ["google::protobuf::*"], macho=False) == [names[2]]
    assert matching_exports(["__ZN4absl3FooEv"], ["_ZN4absl*"], macho=True)
    so = Facts(path="l.so", format="elf", kind="shared-library",
               symbols=Symbols(exports=names))
    v = check_facts(so, Contract(forbid_exports=("_ZN4absl*", "_ZN6google8protobuf*")))[0]
    assert v.found == "2 forbidden export(s)"
    static = Facts(path="l.a", format="archive", kind="static-library", members=[
        Facts(path="l.a(x.o)", kind="object", symbols=Symbols(exports=names))])
    assert not check_facts(static, Contract(forbid_exports=("_ZN4absl*",)))


def test_report_json_and_render() -> None:
    r = CheckReport(Contract(eh="wasm"), files=["a"], violations=check_facts(
        wasm_obj("a.o", eh="emscripten-legacy"), Contract(eh="wasm")))
    j = r.to_json()
    assert j["schema_version"] == 1 and j["ok"] is False and j["violations"][0]["rule"] == "eh"
    assert "1 violation(s)" in r.render()
    assert RULES_BY_KEY["eh"].expected("wasm") == "wasm"


def test_load_contract_file(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text('[contract]\neh = "wasm"\nthreads = true\nglibc_max = "2.28"\n')
    assert load_contract_file(f) == Contract(eh="wasm", threads=True, glibc_max="2.28")
    f.write_text('eh = "wasm"\nglibc = "2.28"\n')
    with pytest.raises(ConfigError, match="did you mean 'glibc_max'"):
        load_contract_file(f)
    f.write_text("eh = \n")
    with pytest.raises(PrebakeError, match="not valid TOML"):
        load_contract_file(f)


def test_many_members_are_summarised() -> None:
    bad = []
    for i in range(8):
        m = wasm_obj(f"m{i}.o", eh="emscripten-legacy")
        m.note("eh", f"references invoke_v{i}")
        bad.append(m)
    good = [wasm_obj(f"g{i}.o", eh="none") for i in range(33)]
    v = check_facts(archive(*bad, *good), Contract(eh="wasm"))[0]
    assert v.total == 41 and len(v.members) == 8 and len(v.evidence) == 8
    assert "in 8 of 41 members: m0.o (references invoke_v0), " in v.detail
    assert v.detail.endswith("m4.o (references invoke_v4), … (3 more)")


def test_members_with_errors_fail_the_inspect_rule_and_nested_archives_are_walked() -> None:
    """A member that could not be read is no leaf of the other rules, and fails the file
    with the ``inspect`` rule (no rule could be checked on it); a data member does not."""
    broken = Facts(path="libx.a(bad.o)", error="truncated")
    data = Facts(path="libx.a(note.txt)", error="not a binary format prebake knows",
                 details={"not_binary": True})
    inner = archive(wasm_obj("deep.o", eh="emscripten-legacy"))
    found = check_facts(archive(broken, data, inner), Contract(eh="wasm"))
    assert [v.rule for v in found] == ["inspect", "eh"]
    assert found[0].members == ["bad.o"] and "truncated" in found[0].detail
    assert found[1].members == ["deep.o"] and found[1].total == 1


def test_undecided_rules_fail_closed_unless_the_contract_allows_them(tmp_path: Path) -> None:
    f = tmp_path / "libx.a"
    f.write_bytes(b"!<arch>\n")
    blind = wasm_obj("blind.o")
    blind.evidence["eh"] = ["import names are minified"]
    facts = archive(wasm_obj("known.o", eh="wasm"), blind)
    r = check_paths([f], Contract(eh="wasm", glibc_max="2.28"), inspect_fn=lambda _p: facts)
    assert not r.ok and not r.violations
    assert [(u.rule, u.members, u.total, u.allowed) for u in r.unknown] == [
        ("eh", ["blind.o"], 2, False)]
    assert "eh: unknown for 1 of 2 member(s) (import names are minified)" in r.unknown[0].message()
    assert "fails closed" in r.render() and "could not be read" in r.render()
    assert r.to_json()["unknown"][0]["members"] == ["blind.o"]
    assert r.to_json()["ok"] is False
    # the explicit opt-out: it passes, and the report still lists the rule as not checked
    r = check_paths([f], Contract(eh="wasm", allow_unknown=("eh",)), inspect_fn=lambda _p: facts)
    assert r.ok
    assert [(u.rule, u.allowed) for u in r.unknown] == [("eh", True)]
    assert "not checked (allow_unknown)" in r.unknown[0].message()
    assert r.to_json()["contract"]["allow_unknown"] == ["eh"]


def test_allow_unknown_names_contract_keys_only() -> None:
    from prebake.contract.terms import parse_contract

    c, problems = parse_contract({"eh": "wasm", "allow_unknown": ["eh", "lt0"]})
    assert c.allow_unknown == ("eh", "lt0")
    assert [(p.key, p.message) for p in problems] == [
        ("contract.allow_unknown", "'lt0' is not a contract key (did you mean 'lto'?)")]


def test_wasm_eh_encoding_names_members_passes_none_and_fails_closed_on_unknown(
        tmp_path: Path) -> None:
    exn = wasm_obj("session.o", wasm_eh_encoding="exnref")
    exn.note("wasm_eh_encoding", "11 exnref instructions (try_table/throw_ref)")
    members = [exn, wasm_obj("a.o", wasm_eh_encoding="legacy"),
               wasm_obj("b.o", wasm_eh_encoding="none")]
    (v,) = check_facts(archive(*members), Contract(wasm_eh_encoding="legacy"))
    assert (v.rule, v.expected, v.found, v.members) == (
        "wasm_eh_encoding", "legacy", "exnref", ["session.o"])
    both = wasm_obj("m.o", wasm_eh_encoding="both")
    (v,) = check_facts(archive(both), Contract(wasm_eh_encoding="exnref"))
    assert v.found == "both"
    blind = wasm_obj("u.o")
    blind.evidence["wasm_eh_encoding"] = ["a function body could not be decoded: …"]
    unknown = archive(blind)
    f = tmp_path / "libx.a"
    f.write_bytes(b"!<arch>\n")
    r = check_paths([f], Contract(wasm_eh_encoding="legacy"), inspect_fn=lambda _p: unknown)
    assert not r.ok and [(u.rule, u.members) for u in r.unknown] == [
        ("wasm_eh_encoding", ["u.o"])]
    assert "could not be decoded" in r.unknown[0].message()
    r = check_paths([f], Contract(wasm_eh_encoding="legacy", allow_unknown=("wasm_eh_encoding",)),
                    inspect_fn=lambda _p: unknown)
    assert r.ok
