"""``prebake inspect PATH… [--json] [--symbols] [--deep]``: what each binary really is.

Paths may be binaries, static archives, folders (every binary below them) or ``.tar.xz``
release assets (the binaries under ``lib/``, unpacked into a temporary folder that is removed
afterwards). A path that cannot be read gets an ``error`` entry; the exit code is 2 only when
every path fails, so one odd file does not hide the facts of the others.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prebake.inspect import ParseOptions
    from prebake.inspect.facts import Facts

NAME = "inspect"
HELP = "show the facts of binaries, archives or release assets (format, arch, EH, LTO, floors)"
ORDER = 30
ASSET_SUFFIXES = (".tar.xz", ".txz", ".tar.gz", ".tgz")
MEMBER_ROWS = 60  # archive members listed in the human view before "… N more"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="binaries, archives, folders or .tar.xz assets"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output (schema_version 1)")
    p.add_argument(
        "--symbols",
        action="store_true",
        help="list defined, undefined and exported symbols (with demangled names)",
    )
    p.add_argument(
        "--deep",
        action="store_true",
        help="run expensive passes too (e.g. a full wasm code decode)",
    )
    p.add_argument(
        "--allowed-signers",
        metavar="FILE",
        help="check an asset's <asset>.sig against this allowed-signers file "
        "(default: an 'allowed_signers' file next to the asset)",
    )


def run(args: argparse.Namespace) -> int:
    from prebake.commands._common import print_json
    from prebake.inspect import ParseOptions
    from prebake.inspect.demangle import demangle
    from prebake.jsonio import SCHEMA_VERSION

    opts = ParseOptions(symbols=args.symbols, deep=args.deep)
    results: list[Facts] = []
    unreadable: set[str] = set()  # a path that failed shows its error and nothing else
    for raw in args.paths:
        found = inspect_path(Path(raw), opts)
        if all(f.error is not None for f in found):
            unreadable.add(raw)
        results.extend(found)
    failed = all(f.error is not None for f in results)
    trust = _trust(args, skip=unreadable)
    if args.json:
        payload: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "results": [f.to_json(symbols=args.symbols, demangle=demangle) for f in results],
        }
        if trust:
            payload["trust"] = trust
        print_json(payload)
    else:
        render(results, symbols=args.symbols)
        from prebake.commands._common import console
        from prebake.trust.render import trust_lines

        for t in trust:
            for line in trust_lines(t):
                console().print(line, markup=False, highlight=False)
    if failed:
        return 2
    return 1 if any(t["signature"]["status"] == "invalid" or t["provenance_error"]
                    for t in trust) else 0


def _trust(args: argparse.Namespace, skip: set[str]) -> list[dict[str, Any]]:
    """Provenance and signature status of each readable ``.tar.xz`` asset named."""
    from prebake.trust.hooks import asset_status

    allowed = Path(args.allowed_signers) if args.allowed_signers else None
    return [asset_status(Path(raw), allowed) for raw in args.paths
            if raw.endswith(".tar.xz") and raw not in skip and Path(raw).is_file()]


def inspect_path(path: Path, opts: ParseOptions) -> list[Facts]:
    """Facts for one command-line path: one entry, or one per binary in a folder or asset."""
    from prebake.errors import PrebakeError
    from prebake.inspect import inspect
    from prebake.inspect.facts import Facts

    name = str(path)
    try:
        if path.is_dir():
            return _folder(path, name, opts)
        if name.endswith(ASSET_SUFFIXES):
            return _asset(path, opts)
        return [inspect(path, opts)]
    except PrebakeError as exc:
        reason = getattr(exc, "reason", None) or str(exc).removeprefix(f"{name}: ")
        return [Facts(path=name, error=reason)]
    except OSError as exc:
        return [Facts(path=name, error=exc.strerror or str(exc))]


def _binaries(root: Path) -> Iterator[Path]:
    """Files below ``root`` whose first bytes a reader claims (headers, .pc, .cmake are skipped)."""
    from prebake.inspect import sniff

    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            with open(p, "rb") as fh:
                head = fh.read(64)
            if head and sniff(head) is not None:
                yield p


def _folder(path: Path, name: str, opts: ParseOptions) -> list[Facts]:
    from prebake.inspect import inspect
    from prebake.inspect.facts import Facts

    found = [inspect(p, opts) for p in _binaries(path)]
    return found or [Facts(path=name, error="folder holds no binary prebake knows")]


def _asset(path: Path, opts: ParseOptions) -> list[Facts]:
    """The binaries under ``lib/`` of a release asset, named ``asset.tar.xz!lib/…``."""
    from prebake.consume.unpack import safe_extract
    from prebake.inspect import inspect
    from prebake.inspect.facts import Facts

    with tempfile.TemporaryDirectory(prefix="prebake-inspect-") as tmp:
        dest = Path(tmp) / "asset"
        safe_extract(path, dest)
        lib = dest / "lib"
        out = []
        for p in _binaries(lib) if lib.is_dir() else iter(()):
            rel = p.relative_to(dest).as_posix()
            facts = inspect(p, opts)
            for f in facts.walk():
                f.path = f.path.replace(str(p), f"{path}!{rel}", 1)
            out.append(facts)
    return out or [Facts(path=str(path), error="asset has no binaries under lib/")]


# --------------------------------------------------------------------------------------------
# human output

_ABI_ORDER = (
    "eh",
    "lto",
    "glibc_max",
    "glibcxx_max",
    "cxx_stdlib",
    "macos_min",
    "macos_sdk",
    "msvc_runtime",
    "threads",
    "simd128",
    "relaxed_simd",
    "async",
    "wasm_features",
)


def _fmt(v: Any) -> str:
    if isinstance(v, list):
        return ", ".join(str(x) for x in v) or "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return "—" if v is None else str(v)


def render(results: list[Facts], *, symbols: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    from prebake.commands._common import console, err_console

    out = console()
    for facts in results:
        if facts.error is not None:
            err_console().print(f"prebake: error: {escape(facts.path)}: {escape(facts.error)}")
            continue
        d = facts.to_json()
        title = " ".join(str(x) for x in (d["format"], d["kind"], d["os"], d["arch"]) if x)
        out.print(f"[bold]{escape(facts.path)}[/bold]  {escape(title)}")
        t = Table(show_header=False, box=None, padding=(0, 2))
        for key in _ABI_ORDER:
            val = d["abi"][key]
            if val is not None:
                why = facts.evidence.get(key, [""])[0]
                why = why if len(why) <= 90 else why[:89] + "…"
                t.add_row(key, escape(_fmt(val)), f"[dim]{escape(why)}[/dim]")
        if facts.soname:
            t.add_row("soname", escape(facts.soname), "")
        if facts.needed:
            t.add_row("needed", escape(_fmt(facts.needed)), "")
        for key, counts in facts.counts.items():
            t.add_row(
                f"{key} (members)", escape(", ".join(f"{v}: {n}" for v, n in counts.items())), ""
            )
        out.print(t)
        for sub, label in ((facts.members, "members"), (facts.slices, "slices")):
            if sub:
                out.print(_members_table(sub, label))
        if symbols:
            _render_symbols(facts)
        out.print()


def _members_table(members: list[Facts], label: str) -> Any:
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=f"{len(members)} {label}", title_justify="left")
    for col in ("member", "format", "arch", "eh", "lto", "glibc", "c++", "other"):
        t.add_column(col)
    for m in members[:MEMBER_ROWS]:
        name = str(m.details.get("member", m.path))
        if m.error is not None:
            t.add_row(escape(name), "[red]error[/red]", "", "", "", "", "", escape(m.error))
            continue
        a = m.abi
        other = (a.macos_min and f"macos {a.macos_min}") or a.msvc_runtime or _fmt(a.wasm_features)
        t.add_row(
            escape(name),
            _fmt(m.format),
            _fmt(m.arch),
            _fmt(a.eh),
            _fmt(a.lto),
            _fmt(a.glibc_max),
            _fmt(a.cxx_stdlib),
            escape(other),
        )
    if len(members) > MEMBER_ROWS:
        t.add_row(f"… {len(members) - MEMBER_ROWS} more (use --json)", "", "", "", "", "", "", "")
    return t


def _render_symbols(facts: Facts) -> None:
    """``nm``-style lines (T defined, W weak, U undefined), plain text: archives list 100k+."""
    from prebake.commands._common import console
    from prebake.inspect.demangle import demangle

    out = console()
    out.file.flush()
    lines: list[str] = []
    for f in facts.walk():
        sy = f.symbols
        if sy is None or f.members is not None:
            continue
        where = f"  ({f.details.get('member', f.path)})" if f is not facts else ""
        for kind, names in (("defined", sy.defined), ("undefined", sy.undefined)):
            for n in names:
                dm = demangle(n)
                tag = "U" if kind == "undefined" else ("W" if n in sy.weak else "T")
                lines.append(f"  {tag} {n}" + (f"  {dm}" if dm else "") + where)
    if lines:
        out.file.write("\n".join(lines) + "\n")
        out.file.flush()
