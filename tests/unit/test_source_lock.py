"""prebake.sources.lock: resolving recipe URLs, reading the lock (bounded, one-line errors),
and the validation rule that a templated URL takes its digest from the lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from prebake.errors import PrebakeError
from prebake.recipes import Build, Recipe, Repackage, UrlSource
from prebake.recipes.validate import validate_recipe
from prebake.sources.lock import (
    MAX_LOCK_BYTES,
    Locked,
    Pending,
    SourceLock,
    locked_recipe,
    read_source_lock,
    url_refs,
)

A = "a" * 64
RECIPE = Recipe(
    name="zstd", pin="zstd",
    sources=(UrlSource("https://x.invalid/zstd-{version}-{pins[tag]}.tar.gz",
                       mirrors=("https://m.invalid/zstd-{version}.tar.gz",)),),
    platforms={"*": Build(commands=("true",)),
               "linux-x86_64": Repackage("https://x.invalid/{os}-{arch}/zstd-{version}.tgz",
                                         layout={"*": "lib"})},
)
PINS = {"zstd": "1.5.7", "tag": "r1"}


def test_urls_resolve_every_placeholder_and_name_the_pins_they_read() -> None:
    refs = url_refs(RECIPE, "linux-x86_64", "linux", "x86_64", PINS)
    assert [(r.where, r.url) for r in refs] == [
        ("sources[0]", "https://x.invalid/zstd-1.5.7-r1.tar.gz"),
        ("platforms['linux-x86_64']", "https://x.invalid/linux-x86_64/zstd-1.5.7.tgz")]
    assert refs[0].mirrors == ("https://m.invalid/zstd-1.5.7.tar.gz",)
    assert refs[0].pins == (("zstd", "1.5.7"), ("tag", "r1"))
    assert refs[0].command == "prebake pin zstd 1.5.7"
    # another platform: the "*" Build strategy, so only the source URL
    assert len(url_refs(RECIPE, "wasm", "emscripten", "wasm32", PINS)) == 1


def test_locked_recipe_takes_digests_from_the_lock(tmp_path: Path) -> None:
    lock = SourceLock(tmp_path / "prebake.sources.lock")
    lock.entries["https://x.invalid/zstd-1.5.7-r1.tar.gz"] = Locked(
        "https://x.invalid/zstd-1.5.7-r1.tar.gz", A, 10)
    lock.pending["https://x.invalid/linux-x86_64/zstd-1.5.7.tgz"] = Pending(
        "https://x.invalid/linux-x86_64/zstd-1.5.7.tgz", "prebake pin zstd 1.5.7", "offline")
    r, unlocked = locked_recipe(RECIPE, "linux-x86_64", "linux", "x86_64", PINS, lock)
    src = r.sources[0]
    assert isinstance(src, UrlSource) and src.sha256 == A and "{" not in src.url
    strat = r.strategy_for("linux-x86_64")
    assert isinstance(strat, Repackage) and strat.sha256 == ""
    assert unlocked == ["zstd on linux-x86_64: https://x.invalid/linux-x86_64/zstd-1.5.7.tgz "
                        "has no digest in prebake.sources.lock (offline); run `prebake pin "
                        "zstd 1.5.7` where its host is reachable"]


def test_lock_round_trip_is_sorted_and_deterministic(tmp_path: Path) -> None:
    one = SourceLock(tmp_path / "prebake.sources.lock")
    for url in ("https://b.invalid/x", "https://a.invalid/\"quoted\""):
        one.entries[url] = Locked(url, A, 3)
    one.pending["https://c.invalid/y"] = Pending("https://c.invalid/y", "prebake pin x 1", "no")
    one.write()
    text = one.path.read_text()
    back = read_source_lock(tmp_path)
    assert back.entries == one.entries and back.pending == one.pending
    assert text.index("a.invalid") < text.index("b.invalid")
    back.write()
    assert one.path.read_text() == text


@pytest.mark.parametrize(("text", "message"), [
    ("version = [", "not a source lock"),
    ("version = 2", "lock version 2"),
    ("version = 1\ncolour = 1", "unknown key(s) colour"),
    ('version = 1\n[[source]]\nurl = "u"\nsha256 = "XYZ"\nsize = 1', "not 64 lowercase hex"),
    (f'version = 1\n[[source]]\nurl = "u"\nsha256 = "{A}"\nsize = -1', "not a byte count"),
    (f'version = 1\n[[source]]\nurl = "u"\nsha256 = "{A}"\nsize = 1\n'
     f'[[source]]\nurl = "u"\nsha256 = "{A}"\nsize = 1', "locked twice"),
    ("version = 1\nsource = 3", "array of tables"),
    ("version = 1\n" + "#" * (MAX_LOCK_BYTES + 1), "larger than"),
    (b"\xff\xfe".decode("latin-1"), "not a source lock"),
])
def test_a_malformed_lock_is_one_line_naming_it(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "prebake.sources.lock"
    p.write_text(text, encoding="latin-1" if "\xff" in text else "utf-8")
    with pytest.raises(PrebakeError) as info:
        read_source_lock(tmp_path)
    assert message in str(info.value) and str(p) in str(info.value)
    assert "\n" not in str(info.value)


def test_a_templated_url_may_not_carry_a_digest() -> None:
    bad = Recipe(name="z", pin="z", sources=(UrlSource("https://x.invalid/z-{version}.tgz",
                                                       sha256=A),),
                 platforms={"*": Repackage("https://x.invalid/{version}/z.tgz", sha256=A,
                                           layout={"*": "lib"})})
    problems = validate_recipe(bad)
    keys = sorted(p.key.rsplit("RECIPE", 1)[1] for p in problems)
    assert keys == [".platforms['*'].sha256", ".sources[0].sha256"]
    assert all("cannot follow the pin" in p.message for p in problems)
    literal = Recipe(name="z", pin="z", sources=(UrlSource("https://x.invalid/z-1.0.tgz",
                                                           sha256=A),),
                     platforms={"*": Build(commands=("true",))})
    assert validate_recipe(literal) == []
    wrong = Recipe(name="z", pin="z", sources=(UrlSource("https://x.invalid/z.tgz", "nope"),),
                   platforms={"*": Build(commands=("true",))})
    assert [p.message for p in validate_recipe(wrong)] == [
        "not a sha256 (64 lowercase hex digits): 'nope'"]


def test_a_provided_archive_keeps_the_url_it_stands_for(tmp_path: Path) -> None:
    """The lock swaps in the workspace's archive and keeps the upstream URL it stands for
    (what the SBOM names); a recipe may not claim that itself."""
    upstream = "https://x.invalid/dep-2.0.zip"
    provider = "http://mirror.invalid/dep_2.0.orig.tar.gz"
    recipe = Recipe(name="z", pin="z", sources=(UrlSource(upstream, sha256=A),),
                    platforms={"*": Build(commands=("true",))})
    lock = SourceLock(tmp_path / "prebake.sources.lock",
                      {provider: Locked(provider, "b" * 64, 10)})
    locked, problems = locked_recipe(recipe, "linux-x86_64", "linux", "x86_64", {"z": "1"},
                                     lock, {upstream: provider})
    assert problems == []
    src = locked.sources[0]
    assert isinstance(src, UrlSource)
    assert (src.url, src.sha256, src.provides) == (provider, "b" * 64, upstream)
    claimed = Recipe(name="z", pin="z",
                     sources=(UrlSource(upstream, sha256=A, provides=upstream),),
                     platforms={"*": Build(commands=("true",))})
    assert [p.key.rsplit("RECIPE", 1)[-1] for p in validate_recipe(claimed)] == [
        ".sources[0].provides"]


def test_the_lock_keys_urls_without_their_credentials(tmp_path: Path) -> None:
    """A token in a source URL never reaches the committed lock; the URL still finds its
    entry, and a lock written with the raw URL (before this rule) is read the same way."""
    from prebake.sources.lock import lock_key

    url = "https://x-access-token:ghs_T0ken99@h.example/a.tar.gz?X-Amz-Signature=ff00&v=1"
    lock = SourceLock(tmp_path / "prebake.sources.lock")
    lock.entries[lock_key(url)] = Locked(lock_key(url), "a" * 64, 294)
    lock.write()
    text = lock.path.read_text()
    assert "ghs_T0ken99" not in text and "ff00" not in text
    assert read_source_lock(tmp_path).status(url) == "locked"
    lock.path.write_text(text.replace(lock_key(url), url))
    assert url in lock.path.read_text()
    again = read_source_lock(tmp_path)
    assert again.status(url) == "locked" and list(again.entries) == [lock_key(url)]


def test_a_provided_line_with_a_pin_follows_the_pin() -> None:
    """``{pins[NAME]}`` on both sides: the upstream URL and its provider move together, and
    the ref says it reads the pin; two lines giving one URL two providers are an error."""
    recipe = Recipe(name="ffmpeg", pin="ffmpeg",
                    sources=(UrlSource("https://ffmpeg.org/releases/ffmpeg-{version}.tar.xz"),),
                    platforms={"*": Build(commands=("true",))})
    provided = {"https://ffmpeg.org/releases/ffmpeg-{pins[ffmpeg]}.tar.xz":
                "http://deb.invalid/ffmpeg_{pins[ffmpeg]}.orig.tar.xz"}
    for version in ("7.1.5", "8.1.2"):
        (ref,) = url_refs(recipe, "linux-x86_64", "linux", "x86_64", {"ffmpeg": version},
                          provided)
        assert ref.url == f"http://deb.invalid/ffmpeg_{version}.orig.tar.xz"
        assert ref.provides == f"https://ffmpeg.org/releases/ffmpeg-{version}.tar.xz"
        assert ref.pins == (("ffmpeg", version),)
    clash = {**provided, "https://ffmpeg.org/releases/ffmpeg-8.1.2.tar.xz": "http://o.invalid/f"}
    with pytest.raises(PrebakeError, match=r"ffmpeg-8\.1\.2\.tar\.xz is provided by both"):
        url_refs(recipe, "linux-x86_64", "linux", "x86_64", {"ffmpeg": "8.1.2"}, clash)
    # the same line written for one release stands for that release only
    assert url_refs(recipe, "linux-x86_64", "linux", "x86_64", {"ffmpeg": "7.1.5"},
                    clash)[0].url == "http://deb.invalid/ffmpeg_7.1.5.orig.tar.xz"


@pytest.mark.parametrize(("line", "message"), [
    ('"https://u.invalid/a-{pins[ffmpeg]}.tgz" = "http://p.invalid/a.tgz"',
     "the upstream URL reads pins ['ffmpeg'] but its provider []"),
    ('"https://u.invalid/a.tgz" = "http://p.invalid/a-{pins[ffmpeg]}.tgz"',
     "the upstream URL reads pins [] but its provider ['ffmpeg']"),
    ('"https://u.invalid/a-{version}.tgz" = "http://p.invalid/a-{version}.tgz"',
     "{version} is not {pins[NAME]}"),
    ('"https://u.invalid/a-{pins[ffpeg]}.tgz" = "http://p.invalid/a-{pins[ffpeg]}.tgz"',
     "reads pin 'ffpeg', which [pins] does not set (did you mean 'ffmpeg'?)"),
    ('"https://u.invalid/a.tgz" = "ftp://p.invalid/a.tgz"', "not a http(s) or file URL"),
])
def test_a_provided_line_that_cannot_follow_a_pin_is_refused(tmp_path: Path, line: str,
                                                             message: str) -> None:
    from prebake.errors import ConfigError
    from prebake.intake import load_workspace

    (tmp_path / "prebake.toml").write_text(
        '[project]\nname = "p"\nversion = "1.0.0"\n\n[pins]\nffmpeg = "7.1.5"\n\n'
        f"[sources.provided]\n{line}\n")
    with pytest.raises(ConfigError) as info:
        load_workspace(tmp_path)
    (problem,) = info.value.problems
    assert problem.key.startswith("sources.provided.") and message in problem.message
