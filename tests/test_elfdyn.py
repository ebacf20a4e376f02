"""native/elfdyn.py, the ELF headers and dynamic segment read with struct: on every class and byte order (files
built here to the ELF specification's layouts, with a SysV and a GNU hash table), on the libraries this test
compiles, and on the interpreter's own extension modules, it reads what pyelftools reads — the needed libraries,
the dynamic symbol count, the undefined symbols; a damaged file is a clean ElfError, quickly."""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path

import pytest

from tritonlock.native import elfdyn
from tritonlock.native.elf import elf_links, member_facts

NEEDED = ("libfoo.so.1", "libc10.so")
C10 = "_ZN3c105ErrorC1Ev"
SYMS = (("", 0), (C10, 0), ("bar", 7), ("baz", 0), ("qux", 7))  # (name, st_shndx): 0 is undefined


def synthetic(wide: bool, little: bool, gnu: bool | str, *, chain_end: bool = True, strsz: int | None = None) -> bytes:
    """A shared object's headers, dynamic segment, strings, symbols and hash table, each at its own offset in one
    loadable segment (virtual address = file offset + 0x10000)."""
    e = "<" if little else ">"
    base = 0x10000
    strtab = b"\0" + b"".join(s.encode() + b"\0" for s in NEEDED) + b"".join(n.encode() + b"\0" for n, _ in SYMS[1:])
    name_at = {}
    for s in (*NEEDED, *(n for n, _ in SYMS[1:])):
        name_at[s] = strtab.index(b"\0" + s.encode() + b"\0") + 1
    sym = b""
    for n, shndx in SYMS:
        st_name = name_at.get(n, 0)
        sym += (struct.pack(e + "IBBHQQ", st_name, 0x12, 0, shndx, 0, 0) if wide
                else struct.pack(e + "IIIBBH", st_name, 0, 0, 0x12, 0, shndx))
    xword = "Q" if wide else "I"
    if gnu == "unhashed":  # every symbol below symoffset (none hashed): the count is symoffset
        hashtab = struct.pack(e + "IIII", 1, len(SYMS), 1, 6) + struct.pack(e + xword, 0) + struct.pack(e + "I", 0)
    elif gnu:  # one bucket starting at symbol 1; chain words of symbols 1..4, the last with the low bit set
        hashtab = struct.pack(e + "IIII", 1, 1, 1, 6) + struct.pack(e + xword, 0) + struct.pack(e + "I", 1)
        hashtab += struct.pack(e + "IIII", 2, 4, 6, 9 if chain_end else 8)
        if not chain_end:
            hashtab += struct.pack(e + "I", 10) * 5000  # a chain that never ends (the hash table is the file's end)
    else:
        hashtab = struct.pack(e + "II", 1, len(SYMS)) + struct.pack(e + "I", 1) + struct.pack(e + "I" * len(SYMS),
                                                                                             *[0] * len(SYMS))
    ehsize, phsize = (64, 56) if wide else (52, 32)
    phoff = ehsize
    str_off = phoff + 2 * phsize
    sym_off = (str_off + len(strtab) + 7) & ~7
    dyn_off = (sym_off + len(sym) + 7) & ~7
    hash_off = dyn_off + 16 * 8 if wide else dyn_off + 8 * 8  # last: a chain that never ends runs to the file's end
    tags = [(elfdyn.DT_NEEDED, name_at[n]) for n in NEEDED] + [
        (elfdyn.DT_STRTAB, base + str_off), (elfdyn.DT_STRSZ, len(strtab) if strsz is None else strsz),
        (elfdyn.DT_SYMTAB, base + sym_off),
        (elfdyn.DT_SYMENT, len(sym) // len(SYMS)), (elfdyn.DT_GNU_HASH if gnu else elfdyn.DT_HASH, base + hash_off),
        (elfdyn.DT_NULL, 0)]
    dyn = b"".join(struct.pack(e + ("qQ" if wide else "iI"), t, v) for t, v in tags)
    size = hash_off + len(hashtab)
    ident = b"\x7fELF" + bytes([2 if wide else 1, 1 if little else 2, 1]) + b"\0" * 9
    if wide:
        hdr = ident + struct.pack(e + "HHIQQQIHHHHHH", 3, 62, 1, 0, phoff, 0, 0, ehsize, phsize, 2, 64, 0, 0)
        ph = (struct.pack(e + "IIQQQQQQ", 1, 4, 0, base, 0, size, size, 0x1000)  # (physical addresses: 0)
              + struct.pack(e + "IIQQQQQQ", 2, 6, dyn_off, base + dyn_off, 0, len(dyn), len(dyn), 8))
    else:
        hdr = ident + struct.pack(e + "HHIIIIIHHHHHH", 3, 3, 1, 0, phoff, 0, 0, ehsize, phsize, 2, 40, 0, 0)
        ph = (struct.pack(e + "IIIIIIII", 1, 0, base, 0, size, size, 4, 0x1000)
              + struct.pack(e + "IIIIIIII", 2, dyn_off, base + dyn_off, 0, len(dyn), len(dyn), 6, 4))
    out = bytearray(size)
    for at, part in ((0, hdr), (phoff, ph), (str_off, strtab), (sym_off, sym), (hash_off, hashtab), (dyn_off, dyn)):
        out[at:at + len(part)] = part
    return bytes(out)


def pyelftools_reads(data: bytes) -> tuple[tuple[str, ...], int, list[str]]:
    from elftools.elf.dynamic import DynamicSegment
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(data))
    seg = next(s for s in elf.iter_segments() if isinstance(s, DynamicSegment))
    needed = tuple(str(getattr(t, "needed")) for t in seg.iter_tags() if t.entry.d_tag == "DT_NEEDED")
    undefined = [s.name for s in seg.iter_symbols() if s["st_shndx"] == "SHN_UNDEF"]
    return needed, seg.num_symbols(), undefined


def elfdyn_reads(data: bytes) -> tuple[tuple[str, ...], int, list[str]]:
    d = elfdyn.dynamic(lambda o, n: data[o:o + n], len(data))
    assert d is not None
    return d.needed(), d.num_symbols(), [n.decode() for n in d.undefined_names()]


@pytest.mark.parametrize("gnu", [False, True, "unhashed"], ids=["sysv-hash", "gnu-hash", "gnu-unhashed"])
@pytest.mark.parametrize("wide, little", [(True, True), (True, False), (False, True), (False, False)],
                         ids=["64-le", "64-be", "32-le", "32-be"])
def test_every_class_and_byte_order_reads_as_pyelftools_reads_it(wide: bool, little: bool, gnu: bool | str) -> None:
    data = synthetic(wide, little, gnu)
    got = elfdyn_reads(data)
    assert got == pyelftools_reads(data)
    assert got == (NEEDED, len(SYMS), ["", C10, "baz"])  # what was built (both readers agreeing on nothing fails)
    assert elf_links(lambda o, n: data[o:o + n], len(data), "_C.so") == (NEEDED, True, "cxx", None)


def test_a_gnu_hash_chain_that_never_ends_is_a_damaged_file_said_quickly() -> None:
    data = synthetic(True, True, True, chain_end=False)
    with pytest.raises(elfdyn.ElfError, match="runs to the end"):
        elfdyn.dynamic(lambda o, n: data[o:o + n], len(data)).num_symbols()  # type: ignore[union-attr]
    m = member_facts("x/_C.so", lambda o, n: data[o:o + n], len(data), gpu=True)
    assert m.gpu.startswith("not an ELF file it can read") and m.needed == ()


@pytest.mark.parametrize("cut", [3, 40, 60, 100, 200])
def test_a_file_cut_short_or_with_sizes_past_its_end_is_a_clean_error(cut: int) -> None:
    data = synthetic(True, True, False)
    got = elf_links(lambda o, n: data[o:o + n], cut, "_C.so")
    assert got[3] and got[3].startswith("not an ELF file it can read"), got
    # a string table size far past the file: reads stop at its end (no giant read), the facts the same
    huge = synthetic(True, True, False, strsz=1 << 60)
    assert elf_links(lambda o, n: huge[o:o + n], len(huge), "_C.so") == (NEEDED, True, "cxx", None)


def _real_files() -> list[Path]:
    dynload = Path(os.__file__).parent / "lib-dynload"  # the base interpreter's (a venv has none of its own)
    return sorted(p for p in dynload.glob("*.so") if p.read_bytes()[:4] == b"\x7fELF")[:40]


def test_the_interpreters_own_extension_modules_read_as_pyelftools_reads_them() -> None:
    files = _real_files()
    if not files:
        pytest.skip("this Python has no lib-dynload extension modules (a static build)")
    for p in files:
        data = p.read_bytes()
        assert elfdyn_reads(data) == pyelftools_reads(data), p
        needed = elf_links(lambda o, n: data[o:o + n], len(data), p.name)[0]
        assert needed == pyelftools_reads(data)[0]


def test_the_compiled_libraries_read_as_pyelftools_reads_them(tmp_path: Path) -> None:
    """The test-built ones: an extension linking torch's C++ API and the CUDA runtime, nvcc's where it is installed,
    a decoy, and one that patchelf rewrote five times (its dynamic segment and strings moved to the file's end)."""
    from test_native_stream import build_libs

    built = build_libs(tmp_path)
    assert {"cxx", "patched", "plain"} <= set(built)
    for name, data in built.items():
        assert elfdyn_reads(data) == pyelftools_reads(data), name
