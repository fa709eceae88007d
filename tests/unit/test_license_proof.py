"""The license proof on crafted libraries: each file holds the two strings FFmpeg compiles into
its libraries (``lib<name> license: <text>`` and the configure line, NUL-delimited, among
other bytes), read with the built-in FFmpeg recipe's own patterns and table. A library whose
text and configuration disagree, or that says too little or too much, fails in one line
naming it; hostile and truncated bytes cost one bounded pass and never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from prebake.contract.check import check_paths
from prebake.contract.licenses import judge
from prebake.contract.terms import Contract, parse_contract
from prebake.package.license_proof import MAX_DISTINCT, prove_license, prove_text, switch_on
from prebake.recipes import LicenseString, LicenseText, Recipe, validate_recipe
from prebake.recipes.builtin.ffmpeg.recipe import LICENSE_TEXT, LICENSES, RECIPE, license_check

CHECK = license_check(("avutil", "avcodec"))
LINE = "--enable-cross-compile --target-os=linux --cc=cc --enable-shared --disable-doc"


def _lib(folder: Path, stem: str, text: str | None, line: str | None,
         junk: bytes = b"\x7fELF\x02\x01\x01" + bytes(64)) -> str:
    """A file shaped like FFmpeg's rodata: other strings, the license, the configure line."""
    body = junk + b"\x00some other string\x00"
    if text is not None:
        body += f"lib{stem} license: {text}\x00".encode()
    body += b"\x00%s: %d\x00"
    if line is not None:
        body += b"\x00" + line.encode() + b"\x00"
    body += b"FFmpeg version 7.1.5\x00" + bytes(16)
    rel = f"lib/lib{stem}.so"
    (folder / "lib").mkdir(exist_ok=True)
    (folder / rel).write_bytes(body)
    return rel


def _prove(folder: Path, libs: dict[str, tuple[str | None, str | None]],
           check: LicenseString = CHECK) -> tuple[str | None, list[str]]:
    paths = {_lib(folder, stem, text, line): stem for stem, (text, line) in libs.items()}
    proof, problems = prove_license("ffmpeg", check, folder, paths)
    return (proof.spdx if proof else None), problems


@pytest.mark.parametrize(("switches", "text", "spdx"), [
    ("", "LGPL version 2.1 or later", "LGPL-2.1-or-later"),
    (" --enable-gpl", "GPL version 2 or later", "GPL-2.0-or-later"),
    (" --enable-version3", "LGPL version 3 or later", "LGPL-3.0-or-later"),
    (" --enable-version3 --enable-gpl", "GPL version 3 or later", "GPL-3.0-or-later"),
    (" --enable-gpl --enable-nonfree", "nonfree and unredistributable",
     "LicenseRef-FFmpeg-nonfree"),
    # configure takes the last of --enable-X/--disable-X
    (" --enable-gpl --disable-gpl", "LGPL version 2.1 or later", "LGPL-2.1-or-later"),
    # a quoted value that merely mentions a switch turns nothing on
    (" --extra-cflags='-DX --enable-gpl'", "LGPL version 2.1 or later", "LGPL-2.1-or-later"),
])
def test_the_configuration_selects_the_text_every_library_holds(
        tmp_path: Path, switches: str, text: str, spdx: str) -> None:
    got, problems = _prove(tmp_path, {"avutil": (text, LINE + switches),
                                      "avcodec": (text, LINE + switches)})
    assert problems == [] and got == spdx


def test_the_line_is_found_where_a_wasm_object_puts_it(tmp_path: Path) -> None:
    """A wasm object's data segment holds the line after its offset expression and size (a
    LEB128), not after a NUL; the text likewise (FFmpeg's version.o in libavutil.a)."""
    (tmp_path / "lib").mkdir()
    line = (LINE + " --enable-gpl " + "--enable-decoder=x " * 300).strip()  # > 4 KiB: a
    size = len(line) + 1  # two-byte size whose last byte is printable
    leb = bytes([0x80 | (size & 0x7F), size >> 7])
    assert 0x20 <= leb[-1] < 0x7F
    (tmp_path / "lib" / "libavutil.a").write_bytes(
        b"!<arch>\nversion.o/ \x00asm\x01\x00\x00\x00" + b"\x00A\x1b\x0b" + leb
        + line.encode() + b"\x00\x00A\x80\x0b\x2clibavutil license: GPL version 2 or later\x00")
    proof, problems = prove_license("ffmpeg", license_check(("avutil",)), tmp_path,
                                    {"lib/libavutil.a": "avutil"})
    assert problems == [] and proof is not None and proof.spdx == "GPL-2.0-or-later"


def test_a_text_the_configuration_does_not_select_fails_naming_the_library(
        tmp_path: Path) -> None:
    got, problems = _prove(tmp_path, {"avutil": ("LGPL version 2.1 or later",
                                                 LINE + " --enable-gpl"),
                                      "avcodec": ("GPL version 2 or later",
                                                  LINE + " --enable-gpl")})
    assert got is None
    assert problems == ["ffmpeg: license: lib/libavutil.so says its license is 'LGPL version 2.1 "
                        "or later' but its configuration (--enable-gpl) selects 'GPL version 2 "
                        "or later'"]


def test_libraries_that_disagree_with_each_other_fail(tmp_path: Path) -> None:
    got, problems = _prove(tmp_path, {
        "avutil": ("LGPL version 2.1 or later", LINE),
        "avcodec": ("GPL version 2 or later", LINE + " --enable-gpl")})
    assert got is None and len(problems) == 1
    assert "disagree" in problems[0] and "lib/libavcodec.so GPL-2.0-or-later" in problems[0]


@pytest.mark.parametrize(("text", "line", "why"), [
    (None, LINE, "holds no license string"),
    ("LGPL version 2.1 or later", None, "holds no configuration string"),
    ("Beerware", LINE, "which the recipe's table does not map"),
    ("LGPL version 2.1 or later", LINE + " --cc='unbalanced",
     "cannot be read as a configure line"),
    # a line whose first word is not the recipe's: not read from its middle
    ("LGPL version 2.1 or later", "--enable-gpl " + LINE, "holds no configuration string"),
])
def test_a_library_that_says_too_little_fails_in_one_line(
        tmp_path: Path, text: str | None, line: str | None, why: str) -> None:
    got, problems = _prove(tmp_path, {"avutil": (text, line),
                                      "avcodec": ("LGPL version 2.1 or later", LINE)})
    assert got is None and len(problems) == 1 and why in problems[0], problems
    assert problems[0].startswith("ffmpeg: license: lib/libavutil.so")
    assert "\n" not in problems[0]


def test_two_configuration_lines_or_two_texts_are_ambiguous(tmp_path: Path) -> None:
    rel = _lib(tmp_path, "avutil", "LGPL version 2.1 or later", LINE + " --enable-gpl",
               junk=b"\x00" + LINE.encode() + b"\x00")
    proof, problems = prove_license("ffmpeg", license_check(("avutil",)), tmp_path,
                                    {rel: "avutil"})
    assert proof is None and "several configuration strings" in problems[0]
    rel = _lib(tmp_path, "avutil", "LGPL version 2.1 or later", LINE,
               junk=b"libavutil license: GPL version 2 or later\x00")
    proof, problems = prove_license("ffmpeg", license_check(("avutil",)), tmp_path,
                                    {rel: "avutil"})
    assert proof is None and "several license strings" in problems[0]


def test_hostile_and_truncated_bytes_are_read_once_and_refused(tmp_path: Path) -> None:
    check = license_check(("avutil",))
    (tmp_path / "lib").mkdir()
    cases = {
        # cut in the middle of the license text: no NUL ends it
        "cut": b"\x00libavutil license: LGPL version 2.1 or la",
        # thousands of different texts: stops after MAX_DISTINCT, ambiguous
        "many": b"".join(f"libavutil license: L{i}\x00".encode() for i in range(5000)),
        # one endless string without a NUL: no match, one pass
        "endless": b"\x00--" + b"a" * (4 << 20),
        "empty": b"",
    }
    for name, data in cases.items():
        (tmp_path / "lib" / f"{name}.so").write_bytes(data)
        proof, problems = prove_license("ffmpeg", check, tmp_path,
                                        {f"lib/{name}.so": "avutil"})
        assert proof is None and len(problems) == 1 and "\n" not in problems[0], (name, problems)
    many = prove_license("ffmpeg", check, tmp_path, {"lib/many.so": "avutil"})[1][0]
    assert f"more than {MAX_DISTINCT} different license strings" in many


def test_a_named_library_this_platform_does_not_ship_is_not_read_but_one_must_be(
        tmp_path: Path) -> None:
    """FFmpeg's wasm leg builds no libavdevice; the libraries it does build still decide."""
    rel = _lib(tmp_path, "avutil", "GPL version 2 or later", LINE + " --enable-gpl")
    proof, problems = prove_license("ffmpeg", CHECK, tmp_path, {rel: "avutil"})
    assert problems == [] and proof is not None and proof.spdx == "GPL-2.0-or-later"
    proof, problems = prove_license("ffmpeg", license_check(("avcodec",)), tmp_path,
                                    {rel: "avutil"})
    assert proof is None
    assert problems == ["ffmpeg: license: license_check: none of the libraries it names "
                        "(avcodec) is shipped here"]


def test_switches_are_on_when_their_last_word_enables_them() -> None:
    assert switch_on(["--enable-gpl"], "--enable-gpl")
    assert not switch_on(["--enable-gpl", "--disable-gpl"], "--enable-gpl")
    assert switch_on(["--disable-gpl", "--enable-gpl"], "--enable-gpl")
    assert not switch_on(["--enable-gplv3"], "--enable-gpl")


def test_the_recipe_validates_its_license_table() -> None:
    assert validate_recipe(RECIPE) == []
    from dataclasses import replace
    bad = replace(RECIPE, license_check=LicenseString(
        LICENSE_TEXT, "no group", (*LICENSES[1:], LICENSES[0])))
    problems = [p.message for p in validate_recipe(bad)]
    assert any("needs a group" in p for p in problems), problems
    assert any("last row must be the default" in p for p in problems), problems
    # a name no platform ships is a typo, refused when the recipe loads, not skipped
    typo = replace(RECIPE, license_check=license_check(("avutil", "avutill")))
    assert [p.message for p in validate_recipe(typo)] == [
        "'avutill' names no library of outputs.libs on any platform"]


def test_allowed_licenses_is_a_contract_key_matched_like_spdx() -> None:
    contract, problems = parse_contract({"allowed_licenses": ["LGPL-*", "MIT"]})
    assert problems == [] and contract.allowed_licenses == ("LGPL-*", "MIT")
    assert judge("LGPL-2.1-or-later", contract.allowed_licenses).ok
    assert judge("lgpl-3.0-or-later", contract.allowed_licenses).ok
    assert not judge("GPL-2.0-or-later", contract.allowed_licenses).ok
    assert not judge("LicenseRef-FFmpeg-nonfree", contract.allowed_licenses).ok
    assert parse_contract({"allowed_licenses": "LGPL-*"})[1]  # a list, not a string


LGPL = ("LGPL-*",)


def test_an_and_is_allowed_only_when_every_operand_is() -> None:
    """The issue's: a glob over the whole text let LGPL-* take the GPL half too."""
    judged = judge("LGPL-2.1-or-later AND GPL-3.0-or-later", LGPL)
    assert judged.refused == ("GPL-3.0-or-later",)
    assert judged.refusal(LGPL) == ("the contract's allowed_licenses (LGPL-*) refuses it "
                                    "(GPL-3.0-or-later not allowed)")
    assert judge("LGPL-2.1-or-later AND LGPL-3.0-only", LGPL).ok
    assert judge("(LGPL-2.1-only AND MIT) AND (GPL-2.0-only OR LGPL-3.0-only)",
                 ("LGPL-*", "MIT")).ok
    assert judge("LGPL-2.1-only AND (MIT OR GPL-2.0-only)", LGPL).refused == (
        "MIT", "GPL-2.0-only")
    assert not judge("lgpl-2.1-or-later and gpl-3.0-or-later", LGPL).ok  # any spelling


def test_an_or_is_allowed_when_one_choice_is_wholly_allowed() -> None:
    assert judge("GPL-3.0-or-later OR MIT", ("MIT",)).ok
    assert judge("GPL-3.0-only OR (MIT AND BSD-3-Clause)", ("MIT", "BSD-*")).ok
    assert judge("GPL-3.0-only OR (MIT AND BSD-3-Clause)", ("MIT",)).refused == (
        "GPL-3.0-only", "BSD-3-Clause")


def test_an_exception_is_named_and_judged_with_its_license() -> None:
    classpath = "GPL-2.0-only WITH Classpath-exception-2.0"
    assert judge(classpath, ("GPL-2.0-only",)).ok  # an exception only adds permissions
    assert judge(classpath, ("GPL-2.0-only WITH Classpath-exception-2.0",)).ok
    assert judge(classpath, ("GPL-2.0-only WITH *",)).ok
    assert judge(classpath, LGPL).refused == (classpath,)
    assert not judge("GPL-2.0-only", ("GPL-2.0-only WITH Classpath-exception-2.0",)).ok
    # an exception that is not one (a license after WITH) is no SPDX expression
    assert judge("GPL-2.0-only WITH MIT", ("*",)).problem


def test_what_is_no_spdx_expression_fails_closed() -> None:
    for text in ("", "LGPL-2.1-or-later AND", "(LGPL-2.1-only", "Totally-Free-1.0",
                 "LGPL-2.1-only AND some words", "x" * 5000):
        judged = judge(text, ("*",))
        assert not judged.ok and judged.problem, text
        assert "cannot judge it" in judged.refusal(("*",))
    assert judge("LicenseRef-Acme-1.0", ("LicenseRef-Acme-*",)).ok
    assert judge("GPL-2.0+", ("GPL-2.0-or-later",)).ok  # the deprecated spelling


def test_a_pattern_is_one_license_not_an_expression() -> None:
    _contract, problems = parse_contract({"allowed_licenses": ["MIT OR Apache-2.0", "LGPL-*",
                                                               "GPL-2.0-only WITH *"]})
    assert [p.message for p in problems] == [
        "'MIT OR Apache-2.0': one license per entry (a glob like LGPL-*, optionally 'WITH "
        "exception'); an expression is judged operand by operand, so list each license it "
        "may hold"]


def test_prebake_check_cannot_judge_a_license_from_a_binary_and_fails_closed() -> None:
    binary = Path(sys.executable).resolve()  # an ELF image: any binary says no license
    report = check_paths([binary], Contract(allowed_licenses=("LGPL-*",)))
    assert not report.ok
    assert [u.rule for u in report.unreadable] == ["allowed_licenses"]
    allowed = check_paths([binary], Contract(allowed_licenses=("LGPL-*",),
                                             allow_unknown=("allowed_licenses",)))
    assert allowed.ok and [u.rule for u in allowed.unknown] == ["allowed_licenses"]


DAV1D_COPYING = """\
Copyright \u00a9 2018-2025, VideoLAN and dav1d authors
All rights reserved.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice, this
   list of conditions and the following disclaimer.

2. Redistributions in binary form must reproduce the above copyright notice,
   this list of conditions and the following disclaimer in the documentation
   and/or other materials provided with the distribution.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND
ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED
WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT OWNER OR CONTRIBUTORS BE LIABLE FOR
ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES
(INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES;
LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND
ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT
(INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF THIS
SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""
COPYING = "share/licenses/dav1d/COPYING"


@pytest.mark.parametrize(("change", "ok"), [
    ((), True),  # dav1d 1.5.4's COPYING, as shipped
    (("1. Redistributions", "-  Redistributions"), True),  # another bullet
    (("SUCH DAMAGE.\n", "SUCH DAMAGE.\n\n3. Neither the name of the copyright holder nor the "
      "names of its contributors may be used to endorse or promote products.\n"), False),
    (("2. Redistributions in binary form must reproduce the above copyright notice,\n"
      "   this list of conditions and the following disclaimer in the documentation\n"
      "   and/or other materials provided with the distribution.\n", ""), False),
    (("MERCHANTABILITY AND ", ""), False),  # a warranty disclaimed no more
    (("Redistribution and use", "Commercial use is forbidden. Redistribution and use"), False),
])
def test_a_license_text_is_proven_from_the_shipped_file(
        tmp_path: Path, change: tuple[str, str], ok: bool) -> None:
    """dav1d's license is no configuration's: the shipped COPYING must be BSD-2-Clause's text
    (its notice and holders free, every clause as the SPDX list states it)."""
    text = DAV1D_COPYING.replace(*change) if change else DAV1D_COPYING
    assert text != DAV1D_COPYING or not change
    (tmp_path / COPYING).parent.mkdir(parents=True)
    (tmp_path / COPYING).write_text(text)
    proof, problems = prove_text("dav1d", LicenseText("BSD-2-Clause"), tmp_path, COPYING)
    if ok:
        assert proof is not None and proof.spdx == "BSD-2-Clause" and not problems
        assert proof.text == "Copyright \u00a9 2018-2025, VideoLAN and dav1d authors"
    else:
        assert proof is None and problems == [
            f"dav1d: license: {COPYING} is not the text of BSD-2-Clause (a clause added, "
            "removed or changed: prebake proves only the license it states)"]


def test_a_license_text_prebake_does_not_keep_or_a_missing_file_fails(tmp_path: Path) -> None:
    _, none = prove_text("x", LicenseText("MIT"), tmp_path, COPYING)
    assert none == ["x: license: prebake keeps no text of MIT to prove it by (kept: "
                    "BSD-2-Clause)"]
    _, missing = prove_text("x", LicenseText("BSD-2-Clause"), tmp_path, COPYING)
    assert missing == [f"x: license: {COPYING} is not a license file of at most 262144 bytes "
                       "in the install"]
    problems = validate_recipe(Recipe("x", "x", license_check=LicenseText("MIT")))
    assert {p.key.rsplit(".", 1)[-1] for p in problems} >= {"spdx", "license_check"}
