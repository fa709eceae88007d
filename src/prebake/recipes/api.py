"""The Recipe API: how one dependency is produced, written as data in a Python file.

A recipe file defines ``RECIPE = Recipe(...)``. Python (not TOML) so a recipe can compute its
command lists with a helper function, yet the result is plain frozen data that the plan hashes
and the build engineer executes. Lists given by recipe authors are normalised to tuples so a
recipe is immutable after loading; validation (``prebake.recipes.validate``) reports every
problem at once instead of failing in a constructor.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

# Placeholders a Build command may use (the build fills them in; ``{pins[NAME]}`` too).
# docs/reference.md lists them with their meaning (prebake/reference/descriptions.toml).
PLACEHOLDERS = (
    "src", "build", "prefix", "deps_prefix", "jobs", "version", "pins", "cc", "cxx", "ar",
    "platform", "os", "arch", "cmake_toolchain", "host_tools", "macos_min", "work", "python",
    "recipe_dir", "release", "tools", "triple", "build_triple", "meson_cross",
)
# ``{tools[ROLE]}``: the platform's tools a configure script is given by one word on PATH, and
# each one's word after the target's triple (``prebake.toolchain.configure`` writes them).
TOOL_ROLES: Mapping[str, str] = {"cc": "cc", "cxx": "c++", "ar": "ar", "ranlib": "ranlib",
                                 "nm": "nm", "strip": "strip", "windres": "windres",
                                 "pkg_config": "pkg-config"}
# A recipe's ``platforms``/``kind``/``outputs.libs`` key meaning "every platform not named".
ANY_PLATFORM = "*"

Command = tuple[str, ...] | str
Kind = Literal["static", "shared"]


def _tuple(value: Any) -> Any:
    """Recipe authors write lists; frozen data keeps tuples (strings stay strings)."""
    if isinstance(value, list):
        return tuple(_tuple(v) for v in value)
    return value


def _freeze(obj: object, *names: str) -> None:
    for name in names:
        object.__setattr__(obj, name, _tuple(getattr(obj, name)))


@dataclass(frozen=True)
class GitSource:
    """A git checkout at a tag or commit (``ref`` may use ``{version}``)."""

    url: str
    ref: str
    submodules: bool = True
    shallow: bool = False
    dest: str = "src"
    # Set by the source lock, never in a recipe: the commit ``ref`` resolved to when
    # ``prebake pin`` locked it; the build checks that commit out, and refuses a moved tag.
    commit: str = ""


@dataclass(frozen=True)
class UrlSource:
    """An archive download. A templated ``url`` (``{version}``, ``{pins[NAME]}``…) takes its
    digest from ``prebake.sources.lock`` (``prebake pin`` writes it); only a literal URL may
    carry its ``sha256`` here, since a digest next to a template cannot follow the pin."""

    url: str
    sha256: str = ""
    mirrors: tuple[str, ...] = ()
    dest: str = "src"
    strip_components: int = 1
    # False: the verified archive itself is placed at ``dest`` (a file), for a build that
    # unpacks it on its own (CMake's FetchContent, which also applies upstream's patches).
    unpack: bool = True
    # The recipe versions this source belongs to (a dependency that one release's
    # ``deps.txt`` names); empty: every version.
    versions: tuple[str, ...] = ()
    # Patch files (relative to the recipe's folder, part of the input hash) applied with
    # ``patch -p1`` to the unpacked tree; a patch that does not apply fails the build.
    patches: tuple[str, ...] = ()
    # Paths of the unpacked tree (after strip_components) to take, each a file or a folder
    # with all under it; empty: the whole archive. A package that stands in for one header
    # library (a Debian -dev .deb) holds far more than the build reads.
    members: tuple[str, ...] = ()
    # Paths of the unpacked tree left out (each must name a member), for an archive of which
    # the build needs all but a big folder: onnxruntime's CUDA kernels, two thirds of its
    # source archive, are read only by CUDA builds.
    skip: tuple[str, ...] = ()
    # Set by the source lock, never in a recipe: the recipe's upstream URL that this archive
    # stands for when the workspace provides it with another ([sources.provided]).
    provides: str = ""
    # Set by the source lock, never in a recipe: the locked size in bytes; a download stops
    # there (-1: not known, the digest alone decides).
    size: int = -1

    def __post_init__(self) -> None:
        _freeze(self, "mirrors", "versions", "patches", "members", "skip")

    def used_by(self, version: str) -> bool:
        return not self.versions or version in self.versions


@dataclass(frozen=True)
class LocalSource:
    """A folder next to the recipe file (``path`` relative to the recipe's folder).

    Its whole tree (relative paths and contents) is part of the unit's input hash.
    """

    path: str
    dest: str = "src"


Source = GitSource | UrlSource | LocalSource


@dataclass(frozen=True)
class Build:
    """Build from source: commands run in order in a sanitised environment.

    A command is an argv tuple or a string (split like a shell line, no shell features).
    ``env`` adds variables, ``env_unset`` removes them on top of the platform's own policy.
    """

    commands: tuple[Command, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    env_unset: tuple[str, ...] = ()
    # the toolchain family this leg builds with only (``appleclang``: CoreML needs Xcode's
    # SDK), and why: a platform whose compiler is another family refuses the unit
    toolchain_family: str = ""
    toolchain_reason: str = ""
    # What the build enabled, as CMake configured it: these entries of ``cmake_cache`` (a
    # template, ``{build}/Release/CMakeCache.txt``) go into the manifest's recipe entry
    # (``build_settings``); a cache or an entry that is missing fails the unit.
    cmake_cache: str = ""
    record: tuple[str, ...] = ()
    # A configure script's own log (a template: ``{build}/config.log``, FFmpeg's
    # ``{build}/ffbuild/config.log``): when a command fails after writing it, the unit's
    # failure is its last error in one line, and the whole log is kept beside the build log.
    config_log: str = ""
    # Import libraries written from a DLL's own exports after the commands, as a Repackage's
    # (``{"bin/avcodec-*.dll": ("lib/avcodec.lib",)}``: a glob matching one DLL).
    import_libs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _freeze(self, "commands", "env_unset", "record")
        object.__setattr__(self, "import_libs",
                           {k: _tuple(v) for k, v in dict(self.import_libs).items()})


@dataclass(frozen=True)
class Repackage:
    """Repackage an upstream prebuilt archive: files matching each glob go to a prefix folder.

    ``url`` and ``mirrors`` are templates with ``{version}``; the archive's digest comes from
    ``prebake.sources.lock`` like a ``UrlSource``'s (``sha256`` only for a literal URL).
    """

    url: str
    sha256: str = ""
    mirrors: tuple[str, ...] = ()
    layout: Mapping[str, str] = field(default_factory=dict)
    # Globs over the recipe's unpacked sources (``src/include/*.h``; the first folder is a
    # source's ``dest``, and only the sources named so are fetched) → prefix folders: the
    # headers and licences a prebuilt without them (a wheel) ships with.
    source_layout: Mapping[str, str] = field(default_factory=dict)
    # Symlinks to make in the prefix when the archive has none there (a wheel's library has
    # no soname chain): ``{"lib/libx.so.1": "libx.so.{version}"}``.
    links: Mapping[str, str] = field(default_factory=dict)
    # Import libraries generated from a DLL's own export table: ``{"bin/x.dll":
    # ("lib/x.lib", "lib/libx.dll.a")}`` (``.lib``: MSVC, llvm-dlltool; ``.dll.a``: MinGW).
    import_libs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Set by the source lock, never in a recipe: the archive's locked size in bytes; the
    # download stops there (-1: not known, the digest alone decides).
    size: int = -1

    def __post_init__(self) -> None:
        _freeze(self, "mirrors")
        object.__setattr__(self, "import_libs",
                           {k: _tuple(v) for k, v in dict(self.import_libs).items()})


Strategy = Build | Repackage


@dataclass(frozen=True)
class Outputs:
    """What the prefix must contain after the build: libraries per platform, headers, license.

    ``public_symbols`` (globs such as ``"ZSTD_*"``) name the exports that are API beyond what
    the installed headers declare; ``prebake diff`` counts a removed export as breaking only
    when a header declares it or a glob here matches it (the rest is internal).
    """

    libs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    headers: tuple[str, ...] = ()
    license: str | None = None
    public_symbols: tuple[str, ...] = ()
    # The upstream CMake target(s) the asset's ``<name>::<name>`` stands for, when the install
    # has its own CMake package (zstd's ``zstd::libzstd_static``): the upstream package is kept
    # and ``<name>::<name>`` wraps these, carrying their usage requirements.
    cmake_target: str | tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _freeze(self, "headers", "public_symbols")
        if isinstance(self.cmake_target, str):
            object.__setattr__(self, "cmake_target", (self.cmake_target,))
        _freeze(self, "cmake_target")
        object.__setattr__(self, "libs", {k: _tuple(v) for k, v in dict(self.libs).items()})

    @property
    def cmake_targets(self) -> tuple[str, ...]:
        return tuple(self.cmake_target)

    def libs_for(self, platform: str) -> tuple[str, ...]:
        return tuple(self.libs.get(platform, self.libs.get(ANY_PLATFORM, ())))


@dataclass(frozen=True)
class Snippet:
    """A tiny consumer compiled and linked against the library by the link test.

    ``flags`` are this snippet's own compile and link flags (``-std=c++17``), added after the
    platform's ``link_test.flags``; they live in the recipe file, so they change only this
    recipe's input hash. ``allow_undefined`` names (or ``prefix*`` globs) the symbols the
    consumer is expected to provide: the whole-archive proof lets exactly those stay undefined
    and the manifest lists each of them. ``code`` may be empty: the whole-archive proof (and
    ``symbols``) still run.
    """

    code: str = ""
    lang: Literal["c", "c++"] = "c++"
    symbols: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    allow_undefined: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _freeze(self, "symbols", "flags", "allow_undefined")


@dataclass(frozen=True)
class VersionCheck:
    """Where the installed headers spell the library's version, to be compared with the pin.

    ``header`` is relative to the install prefix (or several, searched in order: FFmpeg keeps
    ``LIBAVCODEC_VERSION_MAJOR`` in ``version_major.h`` and the rest in ``version.h``);
    ``macros`` is one macro holding the whole version (``"1.5.4"``) or one macro per
    component, most significant first (``ZSTD_VERSION_MAJOR``, ``ZSTD_VERSION_MINOR``,
    ``ZSTD_VERSION_RELEASE``).

    ``library`` (a stem: ``avcodec``): the header spells that library's own version, not the
    release's (FFmpeg 7.1.5 ships libavcodec 61.19.101). The library's other evidence — its
    ``.pc`` file's ``Version:``, its file name and soname, its DLL's name and version
    resource, its Mach-O current version — is then held to that version instead of the pin.

    ``abi`` (with ``library``): the header spells the library's ABI version, the one its
    binary is named by, while its package states the release: dav1d 1.5.4's
    ``DAV1D_API_VERSION_*`` are 7.0.0, its file ``libdav1d.so.7.0.0``, soname
    ``libdav1d.so.7``, DLL version resource 7.0.0 and Mach-O current version say so, and its
    ``dav1d.pc`` says ``Version: 1.5.4``. The binary's evidence is then held to the header's
    version and the ``.pc`` and CMake version files to the pin.
    """

    header: str | tuple[str, ...]
    macros: tuple[str, ...]
    # the one macro spells only this component of the version (0 major, 1 minor…):
    # onnxruntime's ORT_API_VERSION is its minor number
    component: int | None = None
    library: str = ""
    abi: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.macros, str):
            object.__setattr__(self, "macros", (self.macros,))
        _freeze(self, "macros", "header")

    @property
    def headers(self) -> tuple[str, ...]:
        return (self.header,) if isinstance(self.header, str) else tuple(self.header)


@dataclass(frozen=True)
class VersionString:
    """The release as a string in the bytes of the libraries the recipe ships (a regular
    expression whose first group is the version): FFmpeg compiles ``"FFmpeg version 7.1.5"``
    into its libraries (``av_version_info()``). ``libraries`` names the ones that hold it
    by stem (empty: every one); a library without it, or holding another release, fails the
    version proof."""

    pattern: str
    libraries: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _freeze(self, "libraries")


VersionEvidence = VersionCheck | VersionString


@dataclass(frozen=True)
class Licensed:
    """One license a configuration can select, in a ``LicenseString``'s table: the text the
    libraries then spell (``"GPL version 2 or later"``), its SPDX expression, and the
    configure switches that select it (all of them on; ``--enable-X`` counts unless a later
    ``--disable-X`` turns it off)."""

    text: str
    spdx: str
    when: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _freeze(self, "when")


@dataclass(frozen=True)
class LicenseString:
    """The license the build was configured with, as the libraries spell it in their bytes.

    FFmpeg compiles ``"libavutil license: LGPL version 2.1 or later"`` (``avutil_license()``)
    and its configure line (``avutil_configuration()``) into every library. ``pattern``'s first
    group is the license text, ``configuration``'s the configure line; ``table`` lists the
    licenses in the order configure decides them (the first row whose switches the line has
    on wins). Each library named in ``libraries`` (stems; empty: every one) must hold exactly
    one of each, its text must be in the table and be the one its line selects, and every
    library must agree: the asset's license is then that row's SPDX expression, in the
    manifest and the SBOM, and the contract's ``allowed_licenses`` judges it."""

    pattern: str
    configuration: str
    table: tuple[Licensed, ...]
    libraries: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _freeze(self, "table", "libraries")


@dataclass(frozen=True)
class LicenseText:
    """The license as the license file the asset ships states it (``Outputs.license``,
    installed as ``share/licenses/<recipe>/<file>``): for a dependency whose license no
    configuration changes (dav1d's ``COPYING``). The file must be the text of ``spdx`` as
    prebake keeps it (``prebake/recipes/license_texts/<spdx>.txt``: the SPDX list's text, its
    variable parts — the copyright notice, the holders named in the disclaimer — bounded
    patterns), whitespace, case and line breaks aside; a text with a clause added, removed or
    changed is refused. The asset's license is then ``spdx``, in the manifest and the SBOM,
    and the contract's ``allowed_licenses`` judges it."""

    spdx: str


LicenseCheck = LicenseString | LicenseText
# the license texts a LicenseText proves by, one ``<SPDX>.txt`` each (package data)
LICENSE_TEXTS = Path(__file__).parent / "license_texts"


def kept_license_texts() -> tuple[str, ...]:
    """The SPDX identifiers prebake keeps a license text of."""
    return tuple(sorted(p.stem for p in LICENSE_TEXTS.glob("*.txt")))


@dataclass(frozen=True)
class Component:
    """A library bundled inside the output, as the SBOM reports it.

    ``version`` is the one upstream's build of ``versions`` (empty: every release of the
    recipe) compiles in; ``source`` is the URL its code comes from there (a ``deps.txt``
    entry). A from-source build whose workspace provides that URL with another archive
    compiles that archive instead, so the SBOM names the archive and leaves the version
    unknown rather than repeating upstream's. A component compiled in only when a build
    option is on (``when``, a CMake cache variable: XNNPACK under ``--use_xnnpack``) is listed
    only for a build whose recorded CMake cache (``Build.record``) shows that option on."""

    name: str
    version: str
    source: str = ""
    versions: tuple[str, ...] = ()
    when: str = ""

    def __post_init__(self) -> None:
        _freeze(self, "versions")


@dataclass(frozen=True)
class MinToolchain:
    """The oldest release of a toolchain family (``prebake.toolchain.families``) a recipe
    builds with, and why: a platform whose compiler reports an older one refuses the unit."""

    family: str
    version: str
    reason: str


@dataclass(frozen=True)
class HostTool:
    """A program the build runs on the build machine (a code generator such as ``protoc`` or
    ``flatc``), never a binary built for the target: ``{host_tools[NAME]}`` is its absolute path
    on the build's ``PATH``, after it reported ``version`` (a release, as precise as wanted) in
    the output of ``version_args``; ``version_pattern``'s first group is the release it reports.
    ``package`` says where it comes from (named in the error when it is missing or wrong).
    ``with_prebake``: installed into prebake's own environment (a pinned PyPI tool), so
    looked for beside prebake's interpreter before the build's ``PATH``."""

    name: str
    version: str
    version_args: tuple[str, ...] = ("--version",)
    version_pattern: str = r"(\d+(?:\.\d+)+)"
    package: str = ""
    with_prebake: bool = False

    def __post_init__(self) -> None:
        _freeze(self, "version_args")


# The Meson build family's host tools, pinned once for every recipe that names
# ``{meson_cross}`` (``prebake.toolchain.mesonfile``): PyPI's meson and ninja, dependencies of
# prebake itself (pyproject.toml) and looked for beside its interpreter first. ninja's wheel reports
# "1.13.2.git.kitware.jobserver-pipe-1": the default pattern reads its release.
MESON_VERSION = "1.12.1"
NINJA_VERSION = "1.13.2"
_MESON_INSTALL = (f"pip install meson=={MESON_VERSION} ninja=={NINJA_VERSION} into prebake's "
                  "environment: both come with prebake")
MESON_TOOLS = (
    HostTool("meson", MESON_VERSION, with_prebake=True,
             package=f"PyPI's meson {MESON_VERSION} ({_MESON_INSTALL})"),
    HostTool("ninja", NINJA_VERSION, with_prebake=True,
             package=f"PyPI's ninja {NINJA_VERSION} ({_MESON_INSTALL})"),
)


@dataclass(frozen=True)
class OtherCompiler:
    """Files a recipe ships on purpose from a compiler the platform does not pin (a prebuilt
    upstream library it repackages): ``files`` are globs relative to the prefix
    (``lib/libonnxruntime.so*``), ``producers`` globs over what their bytes name
    (``abi.producer``: ``gcc 14.*``; ``*`` any compiler; ``none`` also a file that names
    none), ``why`` is said wherever the exemption is (the build's output, the manifest's
    ``guards.producer``), ``platforms`` the legs it applies to (empty: every one). The
    contract's ``producer`` rule holds those files to these globs instead of the platform's
    toolchain; every other file stays held to the toolchain."""

    files: tuple[str, ...]
    producers: tuple[str, ...]
    why: str
    platforms: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _freeze(self, "files", "producers", "platforms")

    def applies(self, platform: str) -> bool:
        return not self.platforms or platform in self.platforms


@dataclass(frozen=True)
class Since:
    """The arguments a release of the dependency takes from ``version`` on, in a recipe's
    ``releases`` table: a command's ``{release[NAME]}`` becomes the ``argv`` of the newest
    entry not newer than the pinned version (``Since("0", ...)`` covers every older one), so
    a release's own build options (onnxruntime's ``--enable_wasm_jspi`` from 1.24) are data,
    printed by ``build --dry-run`` as the build runs them."""

    version: str
    argv: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _freeze(self, "argv")


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".") if x.isdigit())


@dataclass(frozen=True)
class Recipe:
    """One dependency. ``pin`` names the pin holding its version; ``pins`` any others it reads.

    ``deps`` names recipes (in stages this recipe's stage comes ``after``) whose installed
    prefix it builds against; the build passes them as ``{deps_prefix}``.
    ``path`` is set by the loader to the recipe file (its bytes are part of the input hash).
    """

    name: str
    pin: str
    pins: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ()
    platforms: Mapping[str, Strategy] = field(default_factory=dict)
    outputs: Outputs = field(default_factory=Outputs)
    kind: Mapping[str, Kind] = field(default_factory=dict)
    link_test: Snippet | None = None
    files: tuple[str, ...] = ()
    bundled: tuple[Component, ...] = ()
    deps: tuple[str, ...] = ()
    description: str = ""
    toolchain_min: tuple[MinToolchain, ...] = ()
    # one check or several (a per-library header, the release string in the bytes)
    version_check: VersionEvidence | tuple[VersionEvidence, ...] | None = None
    # the license the configuration selected, proven from the libraries' bytes, or the one
    # the shipped license file's text is
    license_check: LicenseCheck | None = None
    host_tools: tuple[HostTool, ...] = ()
    # files shipped on purpose from another compiler than the platform's (a prebuilt library)
    other_compilers: tuple[OtherCompiler, ...] = ()
    # ``{release[NAME]}``: per-release arguments, each table newest entry first
    releases: Mapping[str, tuple[Since, ...]] = field(default_factory=dict)
    path: Path | None = None

    def __post_init__(self) -> None:
        _freeze(self, "pins", "sources", "files", "bundled", "deps", "toolchain_min",
                "host_tools", "version_check", "other_compilers")
        object.__setattr__(self, "platforms", dict(self.platforms))
        object.__setattr__(self, "kind", dict(self.kind))
        object.__setattr__(self, "releases",
                           {k: _tuple(v) for k, v in dict(self.releases).items()})

    def release_argv(self, version: str) -> dict[str, tuple[str, ...]]:
        """``{release[NAME]}`` for ``version``: each table's newest entry not newer than it
        (a table with no such entry is left out; validation requires a ``Since("0")``)."""
        want = _release_key(version)
        out = {}
        for name, table in self.releases.items():
            hits = [s for s in table if _release_key(s.version) <= want]
            if hits:
                out[name] = max(hits, key=lambda s: _release_key(s.version)).argv
        return out

    @property
    def version_checks(self) -> tuple[VersionEvidence, ...]:
        check = self.version_check
        return () if check is None else check if isinstance(check, tuple) else (check,)

    @property
    def folder(self) -> Path:
        if self.path is None:
            raise ValueError(f"recipe {self.name!r} was not loaded from a file")
        return self.path.parent

    def sources_for(self, version: str) -> tuple[tuple[int, Source], ...]:
        """The sources a build of ``version`` fetches, with their index in ``sources``."""
        return tuple((i, s) for i, s in enumerate(self.sources)
                     if not isinstance(s, UrlSource) or s.used_by(version))

    def bundled_for(self, version: str) -> tuple[Component, ...]:
        """The components a build of ``version`` bundles."""
        return tuple(c for c in self.bundled if not c.versions or version in c.versions)

    def fetched_sources(self, platform: str, version: str) -> tuple[Source, ...]:
        """What a unit of ``platform`` fetches: a Build every source of the version, a
        Repackage only those its ``source_layout`` names (by ``dest``, the globs' first
        folder)."""
        strat = self.strategy_for(platform)
        used = ({pattern.split("/", 1)[0] for pattern in strat.source_layout}
                if isinstance(strat, Repackage) else None)
        return tuple(s for _, s in self.sources_for(version) if used is None or s.dest in used)

    def strategy_for(self, platform: str) -> Strategy | None:
        """The strategy for ``platform`` (``"*"`` covers platforms not named), else ``None``."""
        return self.platforms.get(platform, self.platforms.get(ANY_PLATFORM))

    def kind_for(self, platform: str) -> Kind:
        return self.kind.get(platform, self.kind.get(ANY_PLATFORM, "static"))

    def pins_read(self, platform: str | None = None, toolchain_pin: str | None = None
                  ) -> tuple[str, ...]:
        """Every pin whose value can change this recipe's output (on ``platform`` if given).

        That is its own ``pin``, the declared ``pins``, the platform toolchain's pin, and any
        ``{pins[NAME]}`` the platform's strategy uses — derived, so it cannot drift.
        """
        names = [self.pin, *self.pins]
        strategies = ([self.strategy_for(platform)] if platform is not None
                      else list(self.platforms.values()))
        for strat in strategies:
            if strat is not None:
                names.extend(template_pins(strategy_templates(strat)))
        if toolchain_pin:
            names.append(toolchain_pin)
        return tuple(dict.fromkeys(names))


def host_tools_used(recipe: Recipe, platform: str) -> tuple[HostTool, ...]:
    """The host tools the platform's strategy names (``{host_tools[NAME]}``, or
    ``{tools[NAME]}``: the same tool as one word on PATH): only those are asked for,
    verified and hashed on that platform. A strategy that names ``{meson_cross}`` gets
    prebake's pinned ``meson`` and ``ninja`` (``MESON_TOOLS``) unless it declares its own."""
    strat = recipe.strategy_for(platform)
    if strat is None:
        return ()
    fields = template_fields(strategy_templates(strat))
    names = {n[n.index("[") + 1:-1] for n in fields
             if n.startswith(("host_tools[", "tools[")) and n.endswith("]")}
    own = tuple(t for t in recipe.host_tools if t.name in names)
    if "meson_cross" not in fields:
        return own
    declared = {t.name for t in recipe.host_tools}
    return (*own, *(t for t in MESON_TOOLS if t.name not in declared))


def strategy_templates(strat: Strategy) -> list[str]:
    """Every template string of a strategy (commands, env values, URLs)."""
    if isinstance(strat, Build):
        out: list[str] = []
        for cmd in strat.commands:
            out.extend([cmd] if isinstance(cmd, str) else list(cmd))
        out.extend(strat.env.values())
        if strat.cmake_cache:
            out.append(strat.cmake_cache)
        if strat.config_log:
            out.append(strat.config_log)
        return out
    return [strat.url, *strat.mirrors]


def template_fields(templates: list[str]) -> list[str]:
    """Placeholder names (``pins[x]`` stays whole) in ``str.format`` templates; bad ones skipped."""
    names: list[str] = []
    for template in templates:
        try:
            names.extend(n for _, n, _, _ in string.Formatter().parse(template) if n)
        except ValueError:
            continue
    return names


def template_pins(templates: list[str]) -> list[str]:
    return [n[5:].rstrip("]") for n in template_fields(templates) if n.startswith("pins[")]
