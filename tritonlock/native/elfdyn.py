"""An ELF file's headers and dynamic segment, read with `struct` from the ELF specification's layouts (the System V
ABI's ELF chapter; the GNU hash table as the GNU linker writes it): the ELF and program headers, the dynamic tags,
the libraries a file needs, and its dynamic symbols. Each read is one `read(offset, n)` of what it needs, so a file
streamed from a wheel (tritonlock.native.stream) is read without parsing one structure at a time.

A damaged file raises ElfError (or struct.error); a read of bytes the caller did not keep raises whatever its
`read` raises."""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

Read = Callable[[int, int], bytes]

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_HASH, DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SYMENT = 0, 1, 4, 5, 6, 10, 11
DT_GNU_HASH = 0x6FFFFEF5
PN_XNUM = 0xFFFF


_ODD = bytes(i & 1 for i in range(256))  # bytes.translate: 1 where a byte's low bit is set


class ElfError(ValueError):
    """Not an ELF file, or one whose headers or dynamic segment do not hold together."""


@dataclass(frozen=True)
class Header:
    """The ELF header's fields these reads use."""

    little: bool
    wide: bool  # ELFCLASS64
    phoff: int
    phnum: int
    phentsize: int
    shoff: int
    shnum: int
    shentsize: int
    shstrndx: int = 0

    @property
    def end(self) -> str:
        return "<" if self.little else ">"


@dataclass(frozen=True)
class Segment:
    type: int
    flags: int
    offset: int
    vaddr: int
    filesz: int


def header(data: bytes) -> Header:
    """The ELF header from the file's first bytes (64 are enough for either class)."""
    if data[:4] != b"\x7fELF":
        raise ElfError("no ELF magic")
    if len(data) < 52 or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise ElfError(f"an ELF class {data[4] if len(data) > 4 else '?'} / data encoding "
                       f"{data[5] if len(data) > 5 else '?'} this reader does not know")
    little, wide = data[5] == 1, data[4] == 2
    e = "<" if little else ">"
    if wide:
        if len(data) < 64:
            raise ElfError("the ELF header is cut short")
        phoff, shoff = struct.unpack_from(e + "QQ", data, 32)
        phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from(e + "HHHHH", data, 54)
    else:
        phoff, shoff = struct.unpack_from(e + "II", data, 28)
        phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from(e + "HHHHH", data, 42)
    return Header(little, wide, phoff, phnum, phentsize, shoff, shnum, shentsize, shstrndx)


def phnum(read: Read, h: Header) -> int:
    """The number of program headers (PN_XNUM: section 0's sh_info holds it)."""
    if h.phnum < PN_XNUM:
        return h.phnum
    at = h.shoff + (44 if h.wide else 28)
    return int(struct.unpack(h.end + "I", _exact(read, at, 4))[0])


SHN_XINDEX = 0xFFFF
_MAX_SECTIONS = 1 << 20


def sections(read: Read, h: Header, size: int) -> list[tuple[str, int, int, int, int]]:
    """(name, sh_type, sh_flags, sh_offset, sh_size) of each section, from the section table and its names
    (.shstrtab); [] for a file without a section table."""
    if not h.shoff:
        return []
    entsize = 64 if h.wide else 40
    if h.shentsize < entsize:
        raise ElfError(f"section headers of {h.shentsize} bytes")
    fmt = struct.Struct(h.end + ("IIQQQQ" if h.wide else "IIIIII"))
    first = _exact(read, h.shoff, entsize)
    _, _, _, _, _, size0 = fmt.unpack_from(first)
    count = h.shnum or size0  # (e_shnum 0: the count is section 0's sh_size)
    if count > _MAX_SECTIONS or h.shoff + count * h.shentsize > size:
        raise ElfError(f"a section table of {count} entries past the file's end")
    table = _exact(read, h.shoff, count * h.shentsize)
    rows = [fmt.unpack_from(table, i * h.shentsize) for i in range(count)]
    strndx = h.shstrndx
    if strndx == SHN_XINDEX:
        strndx = struct.unpack_from(h.end + "I", table, 40 if h.wide else 24)[0]  # section 0's sh_link
    if not 0 < strndx < count:
        return [("", kind, flags, off, n) for _, kind, flags, _, off, n in rows]
    _, _, _, _, str_off, str_size = rows[strndx]
    names = read(str_off, min(str_size, 1 << 20))
    out = []
    for name, kind, flags, _, off, n in rows:
        end = names.find(b"\0", name)
        out.append((names[name:end].decode("ascii", "replace") if 0 <= name < len(names) and end >= 0 else "",
                    kind, flags, off, n))
    return out


def segments(read: Read, h: Header) -> list[Segment]:
    n = phnum(read, h)
    size = 56 if h.wide else 32
    if n and h.phentsize < size:
        raise ElfError(f"program headers of {h.phentsize} bytes")
    table = _exact(read, h.phoff, n * h.phentsize) if n else b""
    out = []
    for i in range(n):
        at = i * h.phentsize
        if h.wide:
            p_type, flags, offset, vaddr, _, filesz = struct.unpack_from(h.end + "IIQQQQ", table, at)
        else:
            p_type, offset, vaddr, _, filesz, _, flags = struct.unpack_from(h.end + "IIIIIII", table, at)
        out.append(Segment(p_type, flags, offset, vaddr, filesz))
    return out


def _exact(read: Read, offset: int, n: int) -> bytes:
    got = read(offset, n)
    if len(got) != n:
        raise ElfError(f"the file ends inside the {n} bytes at {offset}")
    return got


class Dynamic:
    """The dynamic segment's tags (up to DT_NULL), and what they point to: the string table, the symbols."""

    def __init__(self, read: Read, h: Header, segs: list[Segment], dyn: Segment) -> None:
        self.read, self.h, self.loads = read, h, [s for s in segs if s.type == PT_LOAD]
        self.tags = self._tags(dyn) if dyn.filesz else []
        self._first: dict[int, int] = {}
        for tag, val in self.tags:
            self._first.setdefault(tag, val)
        self._strtab = self.offset_of(self._first.get(DT_STRTAB, 0))
        if self.tags and self._strtab is None:
            raise ElfError("its dynamic string table (DT_STRTAB) is in no loadable segment")
        self._strings: bytes | None = None

    def _tags(self, dyn: Segment) -> list[tuple[int, int]]:
        fmt = self.h.end + ("qQ" if self.h.wide else "iI")
        size = struct.calcsize(fmt)
        out: list[tuple[int, int]] = []
        pos, want = dyn.offset, max(dyn.filesz, size)
        while True:  # to DT_NULL (which a damaged segment may lack: then on past its end, to the file's)
            chunk = self.read(pos, want)
            whole = len(chunk) - len(chunk) % size
            for tag, val in struct.iter_unpack(fmt, chunk[:whole]):
                out.append((tag, val))
                if tag == DT_NULL:
                    return out
            if whole < want:
                raise ElfError("the dynamic segment has no DT_NULL before the file ends")
            pos, want = pos + whole, 4096

    def offset_of(self, address: int) -> int | None:
        """The file offset of a virtual address, through the first loadable segment that holds it (None for 0)."""
        if not address:
            return None
        return next((address - s.vaddr + s.offset for s in self.loads if s.vaddr <= address < s.vaddr + s.filesz),
                    None)

    def string(self, at: int) -> str:
        """The string at `at` in the dynamic string table ("" where the file ends before its NUL)."""
        assert self._strtab is not None
        table = self._string_table()
        end = table.find(b"\0", at) if at < len(table) else -1
        if end >= 0:
            raw = table[at:end]
        else:  # past DT_STRSZ (a damaged size): read on to the NUL
            pos, parts = self._strtab + at, []
            while True:
                chunk = self.read(pos, 64)
                head, sep, _ = chunk.partition(b"\0")
                parts.append(head)
                if sep:
                    break
                if len(chunk) < 64:
                    return ""
                pos += 64
            raw = b"".join(parts)
        return raw.decode("utf-8", "replace")

    def _string_table(self) -> bytes:
        if self._strings is None:
            size = self._first.get(DT_STRSZ, 0)
            self._strings = self.read(self._strtab, size) if self._strtab is not None and size else b""
        return self._strings

    def needed(self) -> tuple[str, ...]:
        return tuple(self.string(v) for t, v in self.tags if t == DT_NEEDED)

    def num_symbols(self) -> int:
        """The dynamic symbol count, from the GNU hash table, else the SysV hash table (its nchain), else up to
        the next address a tag names past DT_SYMTAB (or the end of its segment)."""
        e = self.h.end
        gnu = self.offset_of(self._first.get(DT_GNU_HASH, 0))
        if gnu is not None:
            nbuckets, symoffset, bloom_size, _ = struct.unpack(e + "IIII", _exact(self.read, gnu, 16))
            xword = 8 if self.h.wide else 4
            at = gnu + 16 + bloom_size * xword
            if nbuckets == 0:
                raise ElfError("a GNU hash table with no buckets")
            top = int(max(struct.unpack(e + f"{nbuckets}I", _exact(self.read, at, 4 * nbuckets))))
            if top < symoffset:
                return int(symoffset)
            pos = at + 4 * nbuckets + (top - symoffset) * 4
            low = 0 if self.h.little else 3  # the chain's words' low bytes
            while True:  # walk the last bucket's chain to its end (a word with the low bit set), a page at a time
                chunk = self.read(pos, 4096)
                ends = chunk[low:len(chunk) - len(chunk) % 4:4].translate(_ODD).find(1)
                if ends >= 0:
                    return top + ends + 1
                if len(chunk) < 4096:
                    raise ElfError("the GNU hash table's last chain runs to the end of the file")
                top, pos = top + 1024, pos + 4096
        sysv = self.offset_of(self._first.get(DT_HASH, 0))
        if sysv is not None:
            return int(struct.unpack(e + "II", _exact(self.read, sysv, 8))[1])
        tab = self._first.get(DT_SYMTAB, 0)
        if self.offset_of(tab) is None:
            raise ElfError("no DT_SYMTAB in a loadable segment")
        above = [v for _, v in self.tags if v > tab]
        end = min(above) if above else next((s.vaddr + s.filesz for s in self.loads
                                             if s.vaddr <= tab <= s.vaddr + s.filesz), tab)
        return (end - tab) // self.sym_size

    @property
    def sym_size(self) -> int:
        return 24 if self.h.wide else 16

    def symbols(self) -> Iterator[tuple[bytes, int, int, int]]:
        """(name, st_info, st_other, st_shndx) of each dynamic symbol, in table order."""
        symtab = self.offset_of(self._first.get(DT_SYMTAB, 0))
        if symtab is None or self._strtab is None:
            return
        entsize = self._first.get(DT_SYMENT) or self.sym_size
        if entsize < self.sym_size:
            raise ElfError(f"dynamic symbols of {entsize} bytes")
        count = self.num_symbols()
        table = self.read(symtab, count * entsize)
        names = self._string_table()
        yield from symbol_entries(table, names, entsize, wide=self.h.wide, little=self.h.little)

    def undefined_names(self, *, strong: bool = False) -> Iterator[bytes]:
        """The names of the undefined dynamic symbols (st_shndx SHN_UNDEF), in table order; `strong`: not the weak
        ones (a weak reference nothing defines is no load failure)."""
        for name, info, _, shndx in self.symbols():
            if shndx == 0 and not (strong and info >> 4 == STB_WEAK):
                yield name

    def defined_names(self) -> Iterator[bytes]:
        """The names the file exports: defined, global, weak or unique, of default or protected visibility."""
        for name, info, other, shndx in self.symbols():
            if shndx != 0 and info >> 4 in EXPORTED_BINDS and other & 3 in (0, 3) and name:
                yield name


STB_WEAK = 2
EXPORTED_BINDS = (1, 2, 10)  # STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE


def symbol_entries(table: bytes, names: bytes, entsize: int, *, wide: bool = True,
                   little: bool = True) -> Iterator[tuple[bytes, int, int, int]]:
    """(name, st_info, st_other, st_shndx) of each entry of a symbol table's bytes, its names in `names`."""
    e = "<" if little else ">"
    fmt = struct.Struct(e + "IBBH" if wide else e + "I8xBBH")
    for at in range(0, len(table) - entsize + 1, entsize):
        start, info, other, shndx = fmt.unpack_from(table, at)
        end = names.find(b"\0", start)
        yield names[start:end if end >= 0 else len(names)], info, other, shndx


def dynamic(raw: Read, size: int) -> Dynamic | None:
    """The file's dynamic segment (None: it has none, a statically linked file). No read goes past `size`."""
    def read_in(offset: int, n: int) -> bytes:
        return raw(offset, max(0, min(n, size - offset)))

    h = header(read_in(0, 64))
    segs = segments(read_in, h)
    dyn = next((s for s in segs if s.type == PT_DYNAMIC), None)
    return None if dyn is None else Dynamic(read_in, h, segs, dyn)


# torch's C++ API (c10::, at::, torch:: — mangled): an extension that calls into it is built for one torch release;
# one that calls only the stable C shim (aoti_torch_*, torch_* C functions; `*_stable_libtorch.abi3.so`) is not
# (also its typeinfo and vtables, _ZTI/_ZTS/_ZTV, and const or ref-qualified members, _ZNK/_ZNR/_ZNO)
TORCH_CXX = re.compile(rb"_Z(?:T[VIS]|Z)?N[rVKRO]*(?:3c10|2at|5torch|6caffe2)[0-9A-Z_]")
