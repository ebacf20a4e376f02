"""The symbols of torch's C++ API a torch build exports, and whether an extension's undefined ones are among them:
the "undefined symbol" at import, found before install. Read from the torch wheel's own libraries (torch/lib/
libtorch*.so, libc10*.so): the dynamic symbol table and its strings sit at the start of each library, so each is
inflated only that far (never the whole 1 GB). Kept per wheel sha256 on this machine, and shipped in compat/ for
PyPI's torch builds the matrix knows (compat/torch-symbols/): a Golomb-coded set of hashes of the exported names
whose false-match rate is stated (an absent symbol taken as present: one in 2**bits)."""

from __future__ import annotations

import functools
import hashlib
import re
import struct
import sys
import threading
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritonlock.native.elfdyn import TORCH_CXX
from tritonlock.native.gcs import gcs_decode, symbol_hash

# The libraries of a torch wheel whose exports an extension links: libtorch*.so, libc10*.so (not its test libraries)
_LIB = re.compile(r"^torch/lib/lib(?:torch|c10)(?:_(?!test)[a-z0-9]+)*\.so(?:\.[0-9]+)*\Z")
# The most of one library inflated to find its symbols; the most symbols read from one
_PREFIX_MAX = 256 << 20
_SYMBOLS_MAX, _MAGIC = 4_000_000, b"TLSYMS2\n"  # (then the body's sha256, then the values)


@functools.lru_cache(maxsize=1 << 16)
def _name_hash(name: str) -> int:
    """symbol_hash of a name, once a process (the search asks the same few thousand names of every torch line)."""
    return symbol_hash(name.encode("ascii", "replace"))


@functools.lru_cache(maxsize=4096)
def _reduced(names: tuple[str, ...], modulus: int) -> tuple[int, ...]:
    return tuple(_name_hash(n) % modulus if modulus else _name_hash(n) for n in names)


@dataclass(frozen=True)
class Exports:
    """What one torch build exports of its C++ API: hashes of the names, reduced modulo `modulus` (0: the full 64
    bits, as read on this machine; N * 2**bits in a shipped set, whose false-match rate is one in 2**bits)."""

    what: str  # "torch 2.13.0 (torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl)"
    hashes: frozenset[int]
    modulus: int = 0
    bits: int = 0
    source: str = ""

    def has(self, name: str) -> bool:
        return not self.missing((name,))

    def missing(self, names: Iterable[str]) -> list[str]:
        names = tuple(names)  # (hashed and reduced once a process for a member's names, asked of each torch line)
        reduced = _reduced(names, self.modulus)
        absent = set(reduced).difference(self.hashes)  # (one set operation: most names are there)
        return [n for n, h in zip(names, reduced) if h in absent] if absent else []

    @property
    def rate(self) -> str:
        """The false-match rate, in words ("" for a set read here, whose 64-bit hashes make it nil in practice)."""
        return "" if not self.bits else (f"from the set shipped in compat/ (false-match rate 1 in {2 ** self.bits:,}: "
                                         "of that many symbols torch lacks, one would be taken as present)")


# --- the dynamic symbols at the start of an ELF file ---------------------------------------------------------------

_SYM = struct.Struct("<IBBHQQ")


def _plausible(table: bytes, at: int) -> bool:
    """Whether the 24 bytes at `at` read as an ELF64 symbol (the section symbols and names a linker writes)."""
    name, info, other, shndx, _, _ = _SYM.unpack_from(table, at)
    return (name < 1 << 28 and info & 0xF in (0, 1, 2, 3, 4, 5, 6, 10) and info >> 4 in (0, 1, 2, 10)
            and other & 0x7C == 0 and (shndx < 0xFF00 or shndx in (0xFFF1, 0xFFF2)))


_NONZERO = re.compile(rb"[^\x00]")


class NotHere(Exception):
    """The file's dynamic symbols are not at its start in the layout this reads (read it whole instead)."""


def locate(head: bytes, complete: bool = False) -> tuple[int, int, int, int] | None:
    """(symbol table offset, its count, string table offset, the bytes of strings its names span) of a 64-bit
    little-endian ELF file's dynamic symbols, from its first bytes alone, where its linker put .dynstr right after
    .dynsym (GNU ld, gold and the layout of torch's own libraries): the table is found from its null first entry
    after the program headers and the notes, each entry checked, and its names must be C strings of what follows
    (exported_from_head checks every one). None: more bytes are needed (never where `head` is the whole file,
    `complete`); NotHere: not this layout."""
    if len(head) < 64 and not complete:
        return None
    if head[:4] != b"\x7fELF" or len(head) < 64 or head[4] != 2 or head[5] != 1:
        raise NotHere("not a 64-bit little-endian ELF file")
    phoff, = struct.unpack_from("<Q", head, 32)
    phentsize, phnum = struct.unpack_from("<HH", head, 54)
    start = phoff + phentsize * phnum
    if phoff > 1 << 20:  # (a BOLTed library's program headers, hundreds of MB in: read through, ElfStream)
        raise NotHere("its program headers are far into the file")
    if start > len(head):
        if complete:
            raise NotHere("its program headers run past its end")
        return None
    for i in range(phnum):  # the symbol table is after the notes (PT_NOTE)
        p_type, _, p_off, _, _, p_filesz = struct.unpack_from("<IIQQQQ", head, phoff + i * phentsize)
        if p_type == 4 and p_off < 1 << 20:
            start = max(start, p_off + p_filesz)
    at = (start + 7) & ~7
    zeros = bytes(24)
    while at < start + (1 << 20):  # (the table starts within a MiB of the headers, or not at the start)
        if at + 48 > len(head):
            if complete:
                break
            return None
        nxt = head.find(zeros, at, start + (1 << 20) + 24)  # (the next run of 24 zero bytes: a candidate)
        if nxt < 0:  # (none in what is here: more bytes may hold one, unless the window is all here)
            if not complete and len(head) < start + (1 << 20) + 24:
                return None
            break
        at = (nxt + 7) & ~7
        if at + 48 > len(head):
            continue
        if head[at + 24:at + 48] == zeros:  # (a run of zeros, padding: the table is where it ends, if at all)
            more = _NONZERO.search(head, at + 24)
            if more is None:
                if complete:
                    break
                return None
            at = max(at + 8, (more.start() - 48) & ~7)
            continue
        if head[at:at + 24] == zeros and _plausible(head, at + 24):
            try:
                got = _table(head, at)
            except _More:
                if not complete:
                    raise
                got = None
            if got is not None:
                return got
        at += 8
    raise NotHere("no symbol table in its first MiB")


def _table(head: bytes, at: int) -> tuple[int, int, int, int] | None:
    """The table at `at` where its entries run up to a string table (a NUL, then a name); None where they do not
    (not the table) — or where `head` ends first (then locate, asked again with more bytes, tries again)."""
    n = 1
    while True:
        pos = at + 24 * n
        if pos + 24 > len(head):
            raise _More()
        if not _plausible(head, pos) or head[pos:pos + 24] == bytes(24):  # (no symbol after the first is null)
            break
        n += 1
        if n > _SYMBOLS_MAX:
            return None
    strtab = at + 24 * n
    if n < 2 or head[strtab] != 0 or not 32 < head[strtab + 1] < 127:
        return None
    names = [_SYM.unpack_from(head, at + 24 * i)[0] for i in range(1, n)]
    if any(x and head[strtab + x - 1:strtab + x] not in (b"\0", b"") for x in names[:64]):
        return None
    return at, n, strtab, max(names) + 4096


class _More(Exception):
    """`head` ends inside the table."""


def exported_from_head(head: bytes, found: tuple[int, int, int, int]) -> set[bytes] | None:
    """The exported names of torch's C++ API (TORCH_CXX) in the located table, once `head` holds every name (None:
    more bytes are needed); NotHere where a name is no C string of the table (the layout was misread)."""
    from tritonlock.native.elfdyn import EXPORTED_BINDS

    at, n, strtab, _ = found
    out: set[bytes] = set()
    for i in range(1, n):
        name, info, other, shndx, _, _ = _SYM.unpack_from(head, at + 24 * i)
        s = strtab + name
        end = head.find(b"\0", s)
        if end < 0:
            return None
        if name == 0 or head[s - 1] != 0:
            if name:
                raise NotHere(f"symbol {i}'s name is not a string of the table")
            continue
        text = head[s:end]
        if not text or not all(32 < c < 127 for c in text[:64]):
            raise NotHere(f"symbol {i}'s name is not printable")
        if shndx != 0 and info >> 4 in EXPORTED_BINDS and other & 3 in (0, 3) and TORCH_CXX.match(text):
            out.add(text)
    return out


def exports_of_elf(read: Callable[[int, int], bytes], size: int) -> set[bytes]:
    """The exported names of torch's C++ API of an ELF file read at random (an installed torch's, a file on disk),
    through its dynamic segment."""
    from tritonlock.native.elfdyn import dynamic

    dyn = dynamic(read, size)
    return set() if dyn is None else {n for n in dyn.defined_names() if TORCH_CXX.match(n)}


def exports_of_stream(pieces: Iterator[bytes], size: int | None = None) -> set[bytes]:
    """The exported names of an ELF file of `size` bytes whose bytes come in `pieces` (inflated from the wheel):
    where its linker left .dynstr right after .dynsym at its start (the layout torch's own build writes), only as
    far as its symbols' strings; where patchelf moved the strings to a segment at the end (PyPI's torch wheels, after
    auditwheel), the whole file streams by and only what the dynamic symbols need is kept (tritonlock.native.stream:
    its start, its dynamic segment, its small loadable segments). NotHere where neither holds."""
    head = bytearray()
    found = None
    whole: Any = None  # an ElfStream, once the start is known not to hold the strings
    tried = 0  # how far `head` went when the table was last looked for (looked for again each 64 KiB more)
    for piece in pieces:
        if whole is not None:
            whole.feed(piece)
            continue
        head += piece
        if found is None and len(head) >= max(4096, tried * 2):  # (again only with twice the bytes: log-many)
            tried = len(head)
            try:
                found = locate(bytes(head))
            except _More:
                found = None
            except NotHere:
                if size is None:
                    raise
                whole = _whole(bytes(head), size)
                head = bytearray()
                continue
            if found is not None and found[2] + found[3] > _PREFIX_MAX:
                raise NotHere("its symbol strings run past the first 256 MiB")
        if found is not None and len(head) >= found[2] + found[3]:
            got = exported_from_head(bytes(head), found)
            if got is not None:
                return got
            found = (*found[:3], found[3] + (1 << 20))  # (a name runs on: wait for a MiB more)
        if len(head) > _PREFIX_MAX:
            if size is None:
                raise NotHere("its symbols are not within its first 256 MiB")
            whole = _whole(bytes(head), size)  # (read through after all)
            head = bytearray()
    if whole is not None:
        return _from_whole(whole, size or 0)
    if found is None:
        try:
            found = locate(bytes(head), complete=True)
        except NotHere:
            found = None
        if found is None and size:  # (a small file, whole in `head`: read through its dynamic segment)
            return _from_whole(_whole(bytes(head), size), size)
        if found is None:
            raise NotHere("the file ends before its symbols")
    got = exported_from_head(bytes(head), found)
    if got is None:
        raise NotHere("the file ends inside its symbols' strings")
    return got


def _whole(start: bytes, size: int) -> Any:
    from tritonlock.native.stream import ElfStream

    s = ElfStream(size, tail=True)
    s.feed(start)
    return s


def _from_whole(s: Any, size: int) -> set[bytes]:
    from tritonlock.native.elfdyn import ElfError
    from tritonlock.native.stream import Miss

    s.finish()
    try:
        return exports_of_elf(s.read, size)
    except (Miss, ElfError, struct.error) as err:
        try:  # (its dynamic segment went by unkept: its section table says where the symbols and their strings are)
            return _by_sections(s.read, size)
        except (Miss, ElfError, struct.error, UnicodeDecodeError):
            raise NotHere(f"its dynamic symbols were not read ({err})") from None


def _by_sections(read: Callable[[int, int], bytes], size: int) -> set[bytes]:
    """The exported names through the section table's .dynsym and the .dynstr it links to."""
    from tritonlock.native.elfdyn import EXPORTED_BINDS, ElfError, header, sections, symbol_entries

    h = header(read(0, 64))
    if not h.wide or not h.little:
        raise ElfError("not a 64-bit little-endian file")
    secs = sections(read, h, size)
    sym = next((x for x in secs if x[1] == 11), None)  # SHT_DYNSYM
    strs = next((x for x in secs if x[0] == ".dynstr" and x[1] == 3), None)
    if sym is None or strs is None:
        raise ElfError("no .dynsym and .dynstr sections")
    names = read(strs[3], strs[4])
    out = set()
    for name, info, other, shndx in symbol_entries(read(sym[3], sym[4]), names, 24):
        if shndx != 0 and info >> 4 in EXPORTED_BINDS and other & 3 in (0, 3) and TORCH_CXX.match(name):
            out.add(name)
    return out


# --- a torch wheel's exports: read once, kept per sha256, shipped for known builds ----------------------------------

def read_wheel(members: dict[str, tuple[int, int, int, int]], member_bytes: Callable[[str], Iterator[bytes]]) -> set[bytes]:
    """The exports of a torch wheel's libraries: `members` its zip directory (name -> (method, compressed size,
    size, offset)), `member_bytes(name)` a member's inflated bytes as they come (stopped once its symbols are in)."""
    out: set[bytes] = set()
    libs = sorted(n for n in members if _LIB.match(n))
    if not libs:
        raise NotHere("the wheel has no torch/lib/libtorch*.so or libc10*.so")
    for name in libs:
        pieces = member_bytes(name)
        try:
            out |= exports_of_stream(pieces, members[name][2])
        except NotHere as err:
            raise NotHere(f"{name}: {err}") from None
        finally:
            close = getattr(pieces, "close", None)
            if close is not None:
                close()
    return out


def _inflated(raw: Iterator[bytes], method: int) -> Iterator[bytes]:
    """A zip member's bytes out of its stored or deflated data as it comes."""
    if method not in (0, 8):
        raise NotHere(f"a zip member compressed with method {method}")
    z = zlib.decompressobj(-15) if method == 8 else None
    try:
        for chunk in raw:
            out = z.decompress(chunk, 16 << 20) if z is not None else chunk
            while out:
                yield out
                out = z.decompress(z.unconsumed_tail, 16 << 20) if z is not None and z.unconsumed_tail else b""
    finally:
        close = getattr(raw, "close", None)
        if close is not None:
            close()


def read_remote(url: str, size: int | None, session: Any) -> set[bytes]:
    """A torch wheel's exports by HTTP Range reads: its zip directory, then the start of each library."""
    from tritonlock.native.remotezip import RemoteZip

    return read_zip(RemoteZip(session, url, size))


def read_zip(z: Any) -> set[bytes]:
    """read_remote's reads, through a tritonlock.native.remotezip.RemoteZip (its `bytes_read` counts them)."""
    members = z.members()

    def member_bytes(name: str) -> Iterator[bytes]:
        method, start, csize, _ = z.span(name)
        return _inflated(z.stream(start, start + csize - 1, chunk=1 << 18), method)

    return read_wheel(members, member_bytes)


def read_path(path: Path) -> set[bytes]:
    """A torch wheel's exports from a file on disk."""
    import zipfile

    with zipfile.ZipFile(path) as zf:
        members = {i.filename: (i.compress_type, i.compress_size, i.file_size, i.header_offset) for i in zf.infolist()}

        def member_bytes(name: str) -> Iterator[bytes]:
            with zf.open(name) as fh:
                while chunk := fh.read(1 << 20):
                    yield chunk

        return read_wheel(members, member_bytes)


def read_installed(lib_dir: Path) -> set[bytes]:
    """An installed torch's exports, from the libraries in its torch/lib."""
    import os

    out: set[bytes] = set()
    for p in sorted(lib_dir.glob("lib*.so*")):
        if not _LIB.match(f"torch/lib/{p.name}"):
            continue
        with open(p, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size

            def read(o: int, n: int, fd: int = fh.fileno()) -> bytes:
                return os.pread(fd, max(0, n), o)

            out |= exports_of_elf(read, size)
    return out


# The local cache: sorted 64-bit hashes of the names (8 bytes each; ~35,000–60,000 names per torch build)

def _cache_file(sha256: str) -> Path:
    from tritonlock.native.read import cache_dir

    return cache_dir() / "torch-exports" / f"{sha256}.bin"


def _keep(sha256: str, hashes: Iterable[int]) -> None:
    from tritonlock._files import write_atomic
    from tritonlock.errors import TritonlockError

    values = array("Q", sorted(set(hashes)))
    if sys.byteorder == "little":
        values.byteswap()  # (kept big-endian: the same file on any machine)
    body = values.tobytes()
    data = _MAGIC + hashlib.sha256(body).digest() + body
    try:
        _cache_file(sha256).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(_cache_file(sha256), data, what="keep a torch build's exported symbols")
    except (OSError, TritonlockError):
        pass


def _kept(sha256: str) -> frozenset[int] | None:
    try:
        with open(_cache_file(sha256), "rb") as fh:
            data = fh.read(64 << 20)
    except OSError:
        return None
    head = len(_MAGIC) + 32
    if not data.startswith(_MAGIC) or (len(data) - head) % 8 or hashlib.sha256(data[head:]).digest() != data[
            len(_MAGIC):head]:
        return None  # (not this format, or damaged: read or decoded again)
    values = array("Q", data[head:])
    if sys.byteorder == "little":
        values.byteswap()
    return frozenset(values)


@dataclass(frozen=True)
class Shipped:
    """One torch build's set in compat/torch-symbols/index.toml."""

    torch: str
    platform: str
    file: str
    symbols: int  # values in the set (names whose hashes reduce to one value are one)
    modulus: int
    bits: int
    sha256: tuple[str, ...]
    wheels: tuple[str, ...]
    source: str


def shipped() -> list[Shipped]:
    """compat/torch-symbols/index.toml's builds (none where it is missing), read once a process."""
    from tritonlock._data import compat_root

    root = compat_root()
    return list(_shipped_rows(str(root))) if root is not None else []


@functools.lru_cache(maxsize=4)
def _shipped_rows(where: str) -> tuple[Shipped, ...]:
    from tritonlock import _toml

    root = Path(where)
    try:
        rows = _toml.loads((root / "torch-symbols" / "index.toml").read_text(encoding="utf-8")).get("build", [])
    except (OSError, _toml.TOMLDecodeError):
        return ()
    out = []
    for r in rows if isinstance(rows, list) else []:
        try:
            out.append(Shipped(torch=str(r["torch"]), platform=str(r["platform"]), file=str(r["file"]),
                               symbols=int(r["symbols"]), modulus=int(r["modulus"]), bits=int(r["bits"]),
                               sha256=tuple(r["sha256"]),
                               wheels=tuple(r.get("wheels", ())), source=str(r["source"])))
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(out)


_SETS: dict[str, frozenset[int] | None] = {}
_SETS_LOCK = threading.Lock()


def _shipped_set(row: Shipped) -> frozenset[int] | None:
    """A shipped set's values, decoded once a process and kept decoded beside the facts (keyed by the set's sha256; a
    kept file whose values' sha256 does not match is decoded again): decoding one takes ~30 ms, a resolve asks a dozen."""
    from tritonlock._data import compat_root

    with _SETS_LOCK:
        if row.file in _SETS:
            return _SETS[row.file]
        root = compat_root()
        values: frozenset[int] | None = None
        try:
            data = (root / "torch-symbols" / row.file).read_bytes() if root is not None else b""
            if data:
                key = "gcs-" + hashlib.sha256(data).hexdigest()
                values = _kept(key)
                if values is None:
                    values = gcs_decode(data, row.symbols, row.bits)
                    _keep(key, values)
        except (OSError, ValueError):
            values = None
        _SETS[row.file] = values
        return values


# --- what the rule asks --------------------------------------------------------------------------------------------

_MEMO: dict[str, Exports | str] = {}
_MEMO_LOCK = threading.Lock()
_LOCKS: dict[str, threading.Lock] = {}


def exports(url: str, size: int | None, sha256: str, filename: str, *, session: Any = None) -> Exports | str:
    """What the torch wheel `filename` (its sha256) exports of its C++ API: the set shipped in compat/ for it, else
    the one kept on this machine, else read from the wheel (by ranged reads of the start of each library) and kept;
    a string says why it could not be read (the rule then cannot decide by symbols)."""
    with _MEMO_LOCK:
        got = _MEMO.get(sha256)
        lock = _LOCKS.setdefault(sha256, threading.Lock())
    if got is not None:
        return got
    with lock:  # (one read per wheel, whichever target asks first)
        with _MEMO_LOCK:
            got = _MEMO.get(sha256)
        if got is None:
            got = _exports(url, size, sha256, filename, session)
            with _MEMO_LOCK:
                _MEMO[sha256] = got
    return got


def _exports(url: str, size: int | None, sha256: str, filename: str, session: Any) -> Exports | str:
    version = filename.split("-")[1] if filename.count("-") >= 2 else "?"
    what = f"torch {version} ({filename})"
    for row in shipped():
        if sha256 in row.sha256:
            values = _shipped_set(row)
            if values is not None:
                return Exports(what=what, hashes=values, modulus=row.modulus, bits=row.bits,
                               source=f"compat/torch-symbols/{row.file}")
    kept = _kept(sha256)
    if kept is not None:
        return Exports(what=what, hashes=kept, source="read from the wheel before (kept per sha256)")
    try:
        from tritonlock.native.uvcache import unpacked

        folder = unpacked(filename, sha256)  # (a wheel uv unpacked: its libraries read in place, at random)
        if folder is not None and (folder / "torch" / "lib").is_dir():
            names = read_installed(folder / "torch" / "lib")
        elif url.startswith("file://"):
            from urllib.parse import unquote, urlsplit

            names = read_path(Path(unquote(urlsplit(url).path)))
        else:
            if session is None:
                from tritonlock.lock.index import session as new_session

                session = new_session()
            names = read_remote(url, size, session)
    except NotHere as err:
        return f"its libraries' symbols are not where this reads them ({err})"
    except Exception as err:  # noqa: BLE001 — a wheel that cannot be read is said, never taken as "no symbols"
        from tritonlock._urls import redact

        return f"{filename} could not be read ({redact(str(err))[:160] or type(err).__name__})"
    hashes = frozenset(symbol_hash(n) for n in names)
    if not hashes:
        return f"{filename}'s libraries export no symbol of torch's C++ API"
    _keep(sha256, hashes)
    return Exports(what=what, hashes=hashes, source=f"read from {filename}")


def shipped_holding(symbols: Iterable[str], platform: str) -> list[str]:
    """The torch releases of the sets shipped for `platform` ("linux_x86_64") that export every one of `symbols`
    (newest first): the torch an extension was built against, where its wheel names none."""
    from packaging.version import InvalidVersion, Version

    names = list(symbols)
    out = []
    for row in shipped():
        if row.platform != platform:
            continue
        values = _shipped_set(row)
        if values is None:
            continue
        ex = Exports(what=row.torch, hashes=values, modulus=row.modulus, bits=row.bits)
        if not ex.missing(names):
            out.append(row.torch)

    def key(v: str) -> Any:
        try:
            return Version(v)
        except InvalidVersion:
            return Version("0")

    return sorted(set(out), key=key, reverse=True)
