"""ar archives: GNU/SysV (``/``, ``/SYM64/``, ``//``), BSD/Darwin (``__.SYMDEF``, ``#1/NN``),
GNU thin archives, and Windows COFF ``.lib`` (two linker members, import libraries).

Layout per docs/binary-formats.md §1: an 8-byte magic, then members with a 60-byte ASCII header
(name[16] mtime[12] uid[6] gid[6] mode[8] size[10] fmag ``\\x60\\n``) and data padded to an even
offset. Index offsets point at member *headers*, so members are keyed by header offset, never
by name (duplicate names are legal; import libraries repeat the DLL name for every member).

Members are parsed by dispatching back into ``inspect_bytes``; the archive's own facts are a
summary: the common value when members agree, ``"mixed"`` for ``eh``/``lto`` when they do not,
the highest version for floors, and ``counts`` of every disagreement.
"""

from __future__ import annotations

import copy
import hashlib
import mmap
import os
import stat
import struct
import sys
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import chain
from pathlib import Path

from prebake import abikeys
from prebake.abikeys import AbiKey, Combine
from prebake.errors import FormatError
from prebake.inspect import hotloops, magic
from prebake.inspect.binreader import Buffer, FileWindow, Source, Truncated, part, table
from prebake.inspect.dispatch import OverBudget, grant, inspect, inspect_bytes, own_file
from prebake.inspect.facts import Facts, Symbols
from prebake.inspect.glibc import version_key
from prebake.inspect.reader import ParseOptions

AR_MAGIC = magic.AR
THIN_MAGIC = magic.AR_THIN
HEADER = struct.Struct("16s12s6s6s8s10s2s")
FMAG = b"`\n"
U32BE = struct.Struct(">I")
U64BE = struct.Struct(">Q")
BSD_INDEX = ("__.SYMDEF", "__.SYMDEF SORTED", "__.SYMDEF_64", "__.SYMDEF_64 SORTED")
COFF_SPECIAL = ("/<ECSYMBOLS>/", "/<HYBRIDMAP>/")
NOT_BINARY = "not a binary format"  # the start of inspect_bytes' error for unknown bytes
EVIDENCE_MEMBERS = 8  # members named per value in archive evidence, then "+N more"


class IndexKind(StrEnum):
    GNU32 = "gnu"
    GNU64 = "gnu64"
    BSD = "bsd"
    BSD64 = "bsd64"


@dataclass(frozen=True, slots=True)
class Member:
    """One regular member. ``data_off``/``size`` locate its bytes (thin: ``size`` of the file)."""

    name: str
    header_off: int
    data_off: int
    size: int


@dataclass(slots=True)
class Archive:
    """What the member headers of an ar archive say (``read_archive``): members and index."""

    thin: bool
    members: list[Member]
    index_kind: IndexKind | None
    # the index's symbol names, entry by entry ([] if read without names): a list of its own,
    # not (name, offset) pairs, since the symbol listing wants the names alone (280 000 for
    # LLVM's archives) and pairs cost a tuple each
    index_names: list[str]
    linker_members: int  # 2 for COFF .lib files with the second linker member
    # member header offset of every index entry (always read: counts and dangling entries)
    index_offsets: Sequence[int] = ()

    @property
    def index(self) -> list[tuple[str, int]]:
        """(symbol, member header offset) per index entry; [] if read without names."""
        return list(zip(self.index_names, self.index_offsets, strict=False))


def is_archive(head: bytes) -> bool:
    return head[:8] in (AR_MAGIC, THIN_MAGIC)


def _num(field: bytes, what: str, off: int) -> int:
    """A decimal header field, padded with spaces (or NULs): ASCII digits only, as GNU ar and
    the linkers read it (Python's ``int`` would also take ``1_168`` or ``+5``, which GNU ar
    refuses, and a reader that sizes members differently from the linker judges other bytes)."""
    text = field.strip(b" \0")
    if not text:
        return 0
    if not text.isdigit():  # bytes.isdigit: ASCII digits only
        raise Truncated(f"member header at {off}: {what} {field!r} is not a number")
    return int(text)


def read_archive(data: Source, index_names: bool = True) -> Archive:
    """Walk member headers only (no member data is touched except names and the index).

    ``index_names=False`` leaves a GNU index's names undecoded (``index`` stays empty, only
    ``index_offsets`` is filled): the facts summary needs the count, and decoding the names of
    a big C++ archive's index costs more than walking all its members.
    """
    head = bytes(data[:8])
    if head not in (AR_MAGIC, THIN_MAGIC):
        raise Truncated("not an ar archive (bad magic)")
    thin = head == THIN_MAGIC
    size = len(data)
    off = 8
    longnames = b""
    members: list[Member] = []
    index_kind: IndexKind | None = None
    index_raw: tuple[IndexKind, Buffer] | None = None  # in place: read once, maybe not copied
    slash_seen = 0
    while off < size:
        if off + HEADER.size > size:
            if bytes(data[off:size]).strip(b"\n") == b"":
                break  # trailing padding some writers leave
            raise Truncated(f"member header at {off} is cut short ({size - off} bytes left)")
        raw_name, _mt, _uid, _gid, _mode, raw_size, fmag = HEADER.unpack(
            data[off : off + HEADER.size])
        if fmag != FMAG:
            raise Truncated(f"member header at {off} has a bad terminator {fmag!r}")
        msize = _num(raw_size, "size", off)
        data_off = off + HEADER.size
        name = raw_name.decode("latin-1").rstrip(" ")
        special = name in ("/", "//", "/SYM64/") or name in COFF_SPECIAL
        stored = msize  # bytes that follow the header in this file
        if thin and not special:
            stored = 0  # thin members live outside the archive
        if data_off + stored > size:
            raise Truncated(
                f"member {name!r} at {off} declares {msize} bytes, only {size - data_off} left"
            )
        if name == "/":
            slash_seen += 1
            if slash_seen == 1:
                index_raw = (IndexKind.GNU32, data[data_off : data_off + msize])
            # a second "/" is the COFF second linker member: same symbols, sorted; skip it
        elif name == "/SYM64/":
            index_raw = (IndexKind.GNU64, data[data_off : data_off + msize])
        elif name == "//":
            longnames = bytes(data[data_off : data_off + msize])
        elif name in COFF_SPECIAL:
            pass
        else:
            real, skip = _member_name(name, longnames, data, data_off, msize, off)
            if real in BSD_INDEX:
                kind = IndexKind.BSD64 if "_64" in real else IndexKind.BSD
                index_raw = (kind, data[data_off + skip : data_off + msize])
            else:
                members.append(
                    Member(real, off, data_off + skip, msize - skip if not thin else msize)
                )
        off = data_off + stored + (stored & 1)
    names: list[str] = []
    offsets: Sequence[int] = ()
    if index_raw is not None:
        index_kind = index_raw[0]
        if index_names or index_kind not in (IndexKind.GNU32, IndexKind.GNU64):
            names, offsets = _parse_index(index_kind, bytes(index_raw[1]))
        else:
            offsets = _gnu_index_offsets(*index_raw)
    return Archive(thin, members, index_kind, names, slash_seen, offsets)


def _member_name(
    name: str, longnames: bytes, data: Source, data_off: int, msize: int, off: int
) -> tuple[str, int]:
    """The real member name and how many data bytes it occupies (BSD ``#1/NN``)."""
    if name.startswith("#1/"):
        n = _num(name[3:].encode(), "BSD name length", off)
        if n > msize:
            raise Truncated(f"member at {off}: BSD name length {n} exceeds member size {msize}")
        real = bytes(data[data_off : data_off + n]).split(b"\0", 1)[0].decode("utf-8", "replace")
        return real, n
    if name.startswith("/") and name[1:].isdigit():
        pos = int(name[1:])
        if pos >= len(longnames):
            raise Truncated(f"member at {off}: long name offset {pos} outside the // table")
        end = longnames.find(b"\n", pos)
        raw = longnames[pos:] if end < 0 else longnames[pos:end]
        return raw.decode("utf-8", "replace").removesuffix("/"), 0
    return (name[:-1] if name.endswith("/") else name), 0


def _gnu_index_offsets(kind: IndexKind, raw: Buffer) -> Sequence[int]:
    """The offsets of a GNU index, with the same checks as ``_parse_index`` (names counted,
    not decoded: UTF-8 decoding with "replace" keeps every NUL)."""
    word = U32BE if kind == IndexKind.GNU32 else U64BE
    if len(raw) < word.size:
        return []
    count = word.unpack_from(raw, 0)[0]
    end = word.size * (count + 1)
    if end > len(raw):
        raise Truncated(f"symbol index declares {count} entries, has room for fewer")
    names = hotloops.scan.count_byte(raw, 0, end) + 1
    if names < count:
        raise Truncated(f"symbol index lists {count} offsets but only {names} names")
    return _offsets(word, bytes(raw[word.size : end]))


def _dangling(offsets: Sequence[int], heads: set[int]) -> int:
    """How many distinct index offsets name no member header (one lookup per run of equal
    offsets in C: an index repeats its member's offset for each of 280 000 symbols)."""
    if isinstance(offsets, array):
        return hotloops.scan.dangling(offsets, heads)
    return 0 if heads.issuperset(offsets) else len(set(offsets) - heads)


def _offsets(word: struct.Struct, raw: bytes) -> array[int]:
    offsets = array("I" if word is U32BE else "Q")
    if offsets.itemsize != word.size:
        offsets = array("L" if word is U32BE else "Q")
    offsets.frombytes(raw)
    if sys.byteorder == "little":
        offsets.byteswap()
    return offsets


def _parse_index(kind: IndexKind, raw: bytes) -> tuple[list[str], Sequence[int]]:
    """The symbol names and member header offsets of the index, one of each per entry."""
    if kind in (IndexKind.GNU32, IndexKind.GNU64):
        word = U32BE if kind == IndexKind.GNU32 else U64BE
        if len(raw) < word.size:
            return [], []
        count = word.unpack_from(raw, 0)[0]
        end = word.size * (count + 1)
        if end > len(raw):
            raise Truncated(f"symbol index declares {count} entries, has room for fewer")
        offsets = _offsets(word, raw[word.size : end])
        names = raw[word.size * (count + 1) :].decode("utf-8", "replace").split("\0")
        if len(names) < count:
            raise Truncated(f"symbol index lists {count} offsets but only {len(names)} names")
        del names[count:]  # the text after the last name's NUL (padding), if any
        return names, offsets
    word = struct.Struct("<I") if kind == IndexKind.BSD else struct.Struct("<Q")
    if len(raw) < word.size:
        return [], []
    nbytes = word.unpack_from(raw, 0)[0]
    pairs = table(
        raw,
        word.size,
        nbytes // (2 * word.size),
        struct.Struct("<" + word.format[-1] * 2),
        "__.SYMDEF",
    )
    stroff = word.size + nbytes
    if stroff + word.size > len(raw):
        raise Truncated("__.SYMDEF string table size is cut short")
    strsize = word.unpack_from(raw, stroff)[0]
    strtab = raw[stroff + word.size : stroff + word.size + strsize]
    out = []
    for so, _ in pairs:
        if so >= len(strtab):
            raise Truncated(f"__.SYMDEF name offset {so} outside its string table")
        end = strtab.find(b"\0", so)
        out.append((strtab[so:] if end < 0 else strtab[so:end]).decode("utf-8", "replace"))
    return out, [mo for _, mo in pairs]


def member_digests(path: str | Path) -> dict[str, list[str]] | None:
    """Each regular member's name and the sha256 of its bytes (a name used twice, twice), for
    the callers that must know two members are the same object (``contract.clash``,
    ``link.whole``); ``None`` for a thin archive (its members are other files) or one that
    cannot be read."""
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            ar = read_archive(mm, index_names=False)
            if ar.thin:
                return None
            out: dict[str, list[str]] = {}
            for m in ar.members:
                if m.data_off + m.size <= len(mm):
                    out.setdefault(m.name, []).append(
                        hashlib.sha256(mm[m.data_off:m.data_off + m.size]).hexdigest())
            return out
    except (OSError, ValueError, FormatError):
        return None


def read_index(path: str | Path) -> list[tuple[str, str]]:
    """(symbol, member name) pairs from the archive's index alone: the cheap "who defines X".

    Empty when the archive has no index (GNU ar writes none for wasm members).
    """
    with open(path, "rb") as fh:
        if not is_archive(fh.read(8)):
            raise FormatError(str(path), "not an ar archive")
        try:
            ar = read_archive(FileWindow(fh.fileno(), 0, os.fstat(fh.fileno()).st_size))
        except Truncated as exc:
            raise FormatError(str(path), f"truncated or corrupt archive: {exc}") from None
    by_off = {m.header_off: m.name for m in ar.members}
    return [(sym, by_off.get(off, f"@{off}")) for sym, off in ar.index]


# --------------------------------------------------------------------------------------------
# facts


class ArchiveReader:
    name = "archive"
    windowed = True  # reads member headers, the index, and each member through its reader

    def sniff(self, head: bytes) -> bool:
        return is_archive(head)

    def parse(self, data: Source, path: str, opts: ParseOptions) -> Facts:
        lists = opts.symbols and opts.archive_lists
        ar = read_archive(data, index_names=lists)
        facts = Facts(path=path, format="archive", kind="static-library")
        facts.details["thin"] = ar.thin
        facts.details["index"] = (
            {"kind": ar.index_kind.value, "symbols": len(ar.index_offsets)}
            if ar.index_kind
            else None
        )
        if ar.linker_members > 1:
            facts.details["coff_linker_members"] = ar.linker_members
        heads = {m.header_off for m in ar.members}
        if _dangling(ar.index_offsets, heads):
            raise FormatError(path, _dangling_entry(data, ar, heads))
        members: list[Facts] = []
        files = _thin_files(ar, path, opts.root) if ar.thin else []
        thin = _ThinReads(path)
        if ar.thin:
            thin.total(ar.members, files)  # before any member is read
        for i, m in enumerate(ar.members):
            mpath = f"{path}({m.name})"
            try:
                if ar.thin:
                    mf = thin.member(files[i], mpath, opts)
                else:
                    mf = inspect_bytes(part(data, m.data_off, m.data_off + m.size), mpath, opts)
            except OverBudget:
                raise  # the whole file's budget: the next member would spend it again
            except FormatError as exc:
                mf = Facts(path=mpath, size=m.size, error=exc.reason)
                if exc.reason.startswith(NOT_BINARY):
                    mf.details["not_binary"] = True  # data, not code: nothing to judge
            mf.details["member"] = m.name
            mf.details["offset"] = m.header_off
            members.append(mf)
        facts.members = members
        summarise(facts, members)
        if lists:
            facts.symbols = _archive_symbols(ar, members)
        return facts


def _dangling_entry(data: Source, ar: Archive, heads: set[int]) -> str:
    """The error for an index whose entries do not all land on a member header the walk found.

    A linker takes the index at its word: GNU ld and lld read a member at the offset an entry
    names, even inside another member's data (a text member carrying an embedded header and
    an object that throws). Facts of the members the walk found would say nothing about that
    object, so the archive is refused, naming the first such entry."""
    if not ar.index_names:  # read without names (the facts summary): decode them for the error
        ar = read_archive(data, index_names=True)
    for i, off in enumerate(ar.index_offsets):
        if off not in heads:
            sym = ar.index_names[i][:80] if i < len(ar.index_names) else "?"
            n = _dangling(ar.index_offsets, heads)
            return (f"symbol index entry {i} ({sym!r}) points at offset {off}, where no member "
                    f"header starts ({n} such offset{'s' if n != 1 else ''}); a linker would "
                    "read a member there that prebake did not, so the archive is not judged")
    return "symbol index entries point at no member"  # not reached: _dangling found one


def _thin_files(ar: Archive, path: str, root: str | None = None) -> list[Path]:
    """The file each member of a thin archive names, every one inside the archive's folder
    (or inside ``root``, the tree being checked, when the archive lies in it).

    A thin archive's member names are paths, and they come from the input: followed as they
    are, ``/etc/hostname`` or ``../../etc/hostname`` would make prebake read (and quote) a
    file of the archive's choosing. So, as for symlinks in a tree (``prebake.inspect.resolve``),
    a name resolves only inside the folder the archive is in: an absolute name, one that
    climbs out, or a link inside the folder that leads out is an error naming the archive and
    the member, raised before any member is read. A thin archive that is not itself a file on
    disk (an archive member, a fat slice) has no folder, and is refused the same way.
    """
    own = own_file(path)
    if own is None:
        raise FormatError(path, "a thin archive inside another binary: its member names "
                                "are relative to a folder it does not have; not followed")
    try:
        folder = own.resolve().parent
        tree = Path(root).resolve() if root is not None else None
    except (OSError, RuntimeError) as exc:
        raise FormatError(path, f"cannot resolve the archive's folder: {exc}") from None
    # the tree being checked, when the archive is in it; else the archive's own folder
    base = tree if tree is not None and folder.is_relative_to(tree) else folder
    where = "the tree being checked" if base != folder else "the archive's folder"
    out = []
    for m in ar.members:
        name = m.name
        why = None
        if not name or "\0" in name:
            why = "is empty or holds a NUL byte"
        elif name.startswith("/"):
            why = "is an absolute path"
        else:
            try:
                real = (folder / name).resolve()  # names are relative to the archive
            except (OSError, RuntimeError, ValueError):
                why = "cannot be resolved (a symlink loop?)"
            else:
                if real in (base, folder):
                    why = "names a folder, not a file"
                elif not real.is_relative_to(base):
                    why = (f"climbs out of {where}" if ".." in Path(name).parts
                           else f"leads out of {where} through a symlink")
        if why is not None:
            raise FormatError(path, f"thin archive member {name!r} {why}; a thin archive's "
                                    f"members must be files inside {where} (not read)")
        out.append(real)
    return out


#: bytes of member files one thin archive may have read, repeats counted (a release's
#: biggest thin archives, LLVM's, name a few hundred MB of objects)
MAX_THIN_BYTES = 4 * 1024**3


class _ThinReads:
    """The member files of one thin archive, each read once: a name repeated (a 778-byte
    archive can name one 1 GiB file a hundred times) gets the facts of the first read, and
    the sizes of all entries, repeats counted, stay under ``MAX_THIN_BYTES``."""

    def __init__(self, archive: str) -> None:
        self.archive = archive
        self.read: dict[Path, Facts | FormatError] = {}
        self.spent = 0

    def total(self, members: list[Member], files: list[Path]) -> None:
        """Refuse the archive before any member is read when its entries, repeats counted,
        add up past ``MAX_THIN_BYTES``: each entry at the size its header records or its
        file has, the larger (a header may understate). Stats, no reads: a 778-byte archive
        naming one 1 GiB file ten times used to be refused after the first 1 GiB read."""
        sizes: dict[Path, int] = {}
        total = 0
        for m, file in zip(members, files, strict=True):
            if file not in sizes:
                try:
                    sizes[file] = file.stat().st_size
                except OSError:
                    sizes[file] = 0  # missing: ``_thin_member`` says so
            total += max(m.size, sizes[file])
            if total > MAX_THIN_BYTES:
                raise self._over()

    def _over(self) -> OverBudget:
        return OverBudget(self.archive, f"thin archive members add up to more than "
                                        f"{MAX_THIN_BYTES} bytes (repeats counted); "
                                        "not read further")

    def member(self, file: Path, mpath: str, opts: ParseOptions) -> Facts:
        try:
            size = file.stat().st_size
        except OSError:
            size = 0  # missing: ``_thin_member`` says so
        self.spent += size
        if self.spent > MAX_THIN_BYTES:  # a file grown since ``total`` saw it
            raise self._over()
        got = self.read.get(file)
        if got is None:
            try:
                got = _thin_member(file, mpath, opts)
            except FormatError as exc:
                got = exc
            self.read[file] = got
        if isinstance(got, FormatError):
            raise FormatError(mpath, got.reason)
        mf = copy.deepcopy(got)
        for f in mf.walk():
            f.path = mpath + f.path[len(got.path):] if f.path.startswith(got.path) else f.path
        return mf


def _thin_member(file: Path, mpath: str, opts: ParseOptions) -> Facts:
    """A thin archive's member, read from its own file inside the archive's folder
    (``file`` is already resolved and confined by ``_thin_files``).

    GNU ar flattens nested thin archives, so a member that is itself an archive is refused:
    following it could loop (an archive listing itself) or multiply work without bound.
    """
    try:
        # O_NOFOLLOW: the resolved name must still be the file, not a link swapped in since;
        # O_NONBLOCK: a FIFO swapped in must not block the open
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise FormatError(mpath, "thin archive member is missing") from None
    except OSError as exc:
        raise FormatError(mpath, f"thin archive member: {exc.strerror or exc}") from None
    with open(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # a FIFO or device would block or never end
            raise FormatError(mpath, "thin archive member is not a regular file")
        head = fh.read(8)
    if is_archive(head):
        raise FormatError(mpath, "a thin archive member that is itself an archive")
    grant(st.st_size)  # a file of its own: its own room for nested parses
    mf = inspect(file, opts)
    mf.path = mpath
    return mf


def _archive_symbols(ar: Archive, members: list[Facts]) -> Symbols:
    """Defined: the index (or the members' definitions); undefined: what no member defines."""
    lists = [m.symbols for m in members if m.symbols is not None]
    if ar.index_names:
        defined = dict.fromkeys(ar.index_names)
    else:
        defined = dict.fromkeys(chain.from_iterable(sy.defined for sy in lists))
    undefined = dict.fromkeys(chain.from_iterable(sy.undefined for sy in lists))
    weak: set[str] = set().union(*(sy.weak for sy in lists))
    names = list(defined)
    return Symbols(
        defined=names,
        undefined=[n for n in undefined if n not in defined],
        exports=names,
        weak=weak & defined.keys(),
    )


def _short(m: Facts) -> str:
    return str(m.details.get("member", m.path))


def _named(members: list[Facts]) -> str:
    names = [_short(m) for m in members[:EVIDENCE_MEMBERS]]
    more = len(members) - len(names)
    return ", ".join(names) + (f" (+{more} more)" if more > 0 else "")


def summarise(facts: Facts, members: list[Facts]) -> None:
    """Archive-level facts from member facts (also used for folders and assets by callers).

    A value is reported only when it is honest for the whole archive: the common value, or an
    explicit aggregate (``mixed``, the highest floor, a union of features). Members that could
    not be parsed are listed in ``details["errors"]`` and left out of the summary.
    """
    good = [m for m in members if m.error is None]
    bad = [m for m in members if m.error is not None]
    if bad:
        facts.details["errors"] = {_short(m): m.error for m in bad}
    kinds = {m.kind for m in good}
    if good and kinds == {"import-library"}:
        facts.kind = "import-library"
    fmts = Counter(str(m.format) for m in good)
    if fmts:
        facts.details["member_formats"] = dict(fmts)
    for key in abikeys.KEYS:  # each fact as the table says members add up
        if key.members is Combine.NONE:
            continue
        attr = key.attribute
        top = key.fact == "top"
        vals = [(m, getattr(m if top else m.abi, attr)) for m in good
                if key.only is None or m.format == key.only]
        value = _COMBINE[key.members](facts, key, vals)
        setattr(facts if top else facts.abi, attr, value)


def _combined_common(facts: Facts, key: AbiKey, vals: list[tuple[Facts, object]]) -> object:
    return _common(facts, key.attribute, vals, mixed=key.mixed, ignore=key.ignore)


def _combined_highest(facts: Facts, key: AbiKey, vals: list[tuple[Facts, object]]) -> object:
    return _highest(facts, key.attribute, vals)


def _combined_any(facts: Facts, key: AbiKey, vals: list[tuple[Facts, object]]) -> object:
    return _any(facts, key.attribute, vals)


def _union(facts: Facts, key: AbiKey, vals: list[tuple[Facts, object]]) -> object:
    """Every member's list together; the items not every member has are counted."""
    lists = [v for _m, v in vals if isinstance(v, list)]
    if not lists:
        return None
    partial = {f: n for f, n in Counter(f for fs in lists for f in fs).items()
               if n != len(lists)}
    if partial:
        facts.counts[key.name] = dict(sorted(partial.items()))
    return sorted(set().union(*lists))


def _all(facts: Facts, key: AbiKey, vals: list[tuple[Facts, object]]) -> object:
    """False when a member says false, true when every member that says anything says
    true, unknown when none does."""
    said = [v for _m, v in vals if v is not None]
    if not said:
        return None
    return False not in said


_COMBINE: dict[Combine, Callable[[Facts, AbiKey, list[tuple[Facts, object]]], object]] = {
    Combine.COMMON: _combined_common, Combine.HIGHEST: _combined_highest,
    Combine.ANY: _combined_any, Combine.UNION: _union, Combine.ALL: _all}


def _group(vals: list[tuple[Facts, object]]) -> dict[object, list[Facts]]:
    groups: dict[object, list[Facts]] = {}
    for m, v in vals:
        groups.setdefault(v, []).append(m)
    return groups


def _record(facts: Facts, fact: str, groups: dict[object, list[Facts]]) -> None:
    key = "async" if fact == "async_" else fact
    facts.counts[key] = {str(v) if v is not None else "null": len(ms) for v, ms in groups.items()}
    for v, ms in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        facts.note(key, f"{v if v is not None else 'unknown'}: {_named(ms)}")


def _common(
    facts: Facts,
    fact: str,
    vals: list[tuple[Facts, object]],
    mixed: str | None = None,
    ignore: tuple[str, ...] = (),
) -> str | None:
    groups = _group(vals)
    known = {v for v in groups if v is not None and v not in ignore}
    if len(groups) > 1:
        _record(facts, fact, groups)
    if len(known) == 1:
        # every member that has the fact agrees (unknown members are counted, not guessed)
        return str(known.pop())
    if len(known) == 0:
        present = [v for v in groups if v is not None]
        return str(present[0]) if present and len(groups) == 1 else None
    return mixed


def _highest(facts: Facts, fact: str, vals: list[tuple[Facts, object]]) -> str | None:
    known = [(m, str(v)) for m, v in vals if v is not None]
    if not known:
        return None
    best = max((v for _, v in known), key=version_key)
    groups = _group([(m, v) for m, v in known])
    if len(groups) > 1 or len(known) != len(vals):
        facts.counts[fact] = {str(v): len(ms) for v, ms in groups.items()}
    facts.note(fact, f"{best}: {_named(groups[best])}")
    return best


def _any(facts: Facts, fact: str, vals: list[tuple[Facts, object]]) -> bool | None:
    groups = _group(vals)
    if len(groups) > 1:
        _record(facts, fact, groups)
    if True in groups:
        return True
    if False in groups:
        return False
    return None


READER = ArchiveReader()
