"""The GPU code an ELF shared object carries, read from its section headers and the container headers inside its
fatbin sections only (never the code itself): CUDA's `.nv_fatbin` (sm_XX cubins, compute_XX PTX) and HIP's
`.hip_fatbin` offload bundles (gfx targets). Pure functions over bytes, or over a reader of byte ranges."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, cast

from tritonlock.native.rangefile import RangeFile

# read(offset, length) -> the bytes there (fewer at the end); offsets are relative to what is read
Reader = Callable[[int, int], bytes]

# CUDA fatbin container (the `.nv_fatbin` section is a run of them, each 8-aligned): u32 magic, u16 version,
# u16 header size, u64 size of the entries that follow. Each entry: u16 kind (1 PTX, 2 ELF cubin), u16 version,
# u32 header size, u64 payload size, ..., u32 arch at +28 ("80" for sm_80), u64 flags at +40 (0x100000 arch-specific
# "a", 0x200000 family "f"). Checked against nvcc 13.0's output (tests/test_gpucode.py builds one).
FATBIN_MAGIC = 0xBA55ED50
FATBIN_HEAD = struct.Struct("<IHHQ")
ENTRY_HEAD = struct.Struct("<HHIQ")
KIND_PTX, KIND_ELF = 1, 2
FLAG_A, FLAG_F = 0x100000, 0x200000

# Clang offload bundles (ClangOffloadBundler.rst, "Bundled Code Object Layout"): the 24-byte magic, u64 number of
# entries, then per entry u64 offset (from the bundle's start), u64 size, u64 id length, the id
# ("hipv4-amdgcn-amd-amdhsa--gfx942", "host-x86_64-unknown-linux-gnu-"). Compressed bundles ("CCOB": u16 version,
# u16 method (llvm::compression::Format: 0 zlib, 1 zstd), u32/u64 total size (v2/v3; none in v1), u32/u64
# uncompressed size, u64 hash) hold one such bundle compressed.
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
_CCOB_METHODS = {0: "zlib", 1: "zstd"}
_SECTIONS = (".nv_fatbin", ".hip_fatbin")


@dataclass(frozen=True, slots=True)
class GpuCode:
    """What GPU code a library carries: sm ("sm_80", "sm_90a") with cubins, ptx ("compute_90") with PTX, gfx target
    IDs ("gfx942", "gfx90a:xnack-") with AMD code objects; `unreadable` says what could not be read (None: all)."""

    sm: tuple[str, ...]
    ptx: tuple[str, ...]
    gfx: tuple[str, ...]
    unreadable: str | None = None

    @property
    def any(self) -> bool:
        return bool(self.sm or self.ptx or self.gfx)


def gpu_code(elf: bytes) -> GpuCode:
    """The GPU code of the ELF shared object `elf` (all its bytes)."""
    return gpu_code_from(lambda off, n: elf[off:off + n], len(elf))


def gpu_code_from(read: Reader, size: int, *,
                  nv_fatbin: Callable[[int, int], tuple[tuple[str, ...], tuple[str, ...], str | None]] | None = None
                  ) -> GpuCode:
    """The GPU code of an ELF file of `size` bytes that `read` gives ranges of: the ELF header, the section headers
    and their names, then only the container headers inside `.nv_fatbin` / `.hip_fatbin`. `nv_fatbin(offset,
    size)`: what a `.nv_fatbin` section carries where it was read otherwise (tritonlock.native.stream's walk)."""
    sections = fatbin_sections(read, size)
    if isinstance(sections, str):
        return GpuCode((), (), (), sections)
    sm: set[str] = set()
    ptx: set[str] = set()
    gfx: set[str] = set()
    problems: list[str] = []
    for name, off, length in sections:
        def sub(o: int, n: int, base: int = off, end: int = length) -> bytes:
            return read(base + o, max(0, min(n, end - o)))
        if name == ".nv_fatbin":
            s, p, problem = nv_fatbin(off, length) if nv_fatbin else fatbin_targets(sub, length)
            sm |= set(s)
            ptx |= set(p)
        else:
            g, problem = bundle_targets(sub, length)
            gfx |= set(g)
        if problem:
            problems.append(f"{name}: {problem}")
    return GpuCode(arch_sorted(sm), arch_sorted(ptx), tuple(sorted(gfx, key=gfx_order)), "; ".join(problems) or None)


def fatbin_sections(read: Reader, size: int) -> list[tuple[str, int, int]] | str:
    """(name, file offset, size) of the GPU-code sections, read with pyelftools; a string says why the file is no
    ELF it can read."""
    from elftools.common.exceptions import ELFError
    from elftools.construct import ConstructError
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(cast("IO[bytes]", RangeFile(read, size)))
        out = []
        for sec in elf.iter_sections():
            if sec.name in _SECTIONS and sec["sh_type"] != "SHT_NOBITS" and sec["sh_size"]:
                out.append((sec.name, int(sec["sh_offset"]), int(sec["sh_size"])))
        return out
    except (ELFError, ConstructError, struct.error, AssertionError, ValueError, KeyError, IndexError, OSError,
            AttributeError) as err:  # a damaged file: pyelftools asserts, too
        return f"not an ELF file it can read ({str(err)[:120]})"


def fatbin_targets(read: Reader, size: int) -> tuple[tuple[str, ...], tuple[str, ...], str | None]:
    """(sm, ptx, problem) of a `.nv_fatbin` section: every container's entry headers, payloads skipped."""
    sm: set[str] = set()
    ptx: set[str] = set()
    pos = 0
    while pos + FATBIN_HEAD.size <= size:
        head = read(pos, FATBIN_HEAD.size)
        magic, _, hsize, fat = FATBIN_HEAD.unpack(head)
        if magic != FATBIN_MAGIC:
            nxt = _find(read, struct.pack("<I", FATBIN_MAGIC), pos + 1, size, align=8)
            if nxt is None:
                break
            pos = nxt
            continue
        e, end = pos + hsize, min(size, pos + hsize + fat)
        while e + 48 <= end:
            entry = read(e, 48)
            kind, _, ehsize, payload = ENTRY_HEAD.unpack_from(entry)
            arch, = struct.unpack_from("<I", entry, 28)
            flags, = struct.unpack_from("<Q", entry, 40)
            if ehsize < 48 or not 10 <= arch < 1000:
                return arch_sorted(sm), arch_sorted(ptx), f"a fatbin entry at +{e} has no readable header"
            add_entry(sm, ptx, kind, arch, flags)
            e += ehsize + payload
        pos = max(end, pos + 1)
    return arch_sorted(sm), arch_sorted(ptx), None


def add_entry(sm: set[str], ptx: set[str], kind: int, arch: int, flags: int) -> None:
    """One fatbin entry's target into `sm` (a cubin: "sm_90a") or `ptx` (PTX: "compute_90"); other kinds: nothing."""
    suffix = "a" if flags & FLAG_A else "f" if flags & FLAG_F else ""
    if kind == KIND_ELF:
        sm.add(f"sm_{arch}{suffix}")
    elif kind == KIND_PTX:
        ptx.add(f"compute_{arch}{suffix}")


class NoZstd(Exception):
    """No zstd decompressor here (Python < 3.14 without the zstandard package)."""


def _zstd_ids(read: Reader, start: int, limit: int) -> list[str] | None:
    """The entry IDs of a zstd-compressed bundle (as ROCm's offload compression writes them): decompressed through a
    bounded reader (compression.zstd on Python ≥ 3.14, else the zstandard package) only until its entry table, at
    most 1 MiB of output. NoZstd where neither exists."""
    src = RangeFile(lambda o, n: read(start + o, max(0, min(n, limit - start - o))), limit - start)
    try:
        from compression import zstd as _z  # type: ignore[import-not-found]  # Python ≥ 3.14

        stream: Any = _z.ZstdFile(src)
        errors: tuple[type[BaseException], ...] = (_z.ZstdError, EOFError, OSError)
    except ImportError:
        try:
            import zstandard
        except ImportError:
            raise NoZstd() from None
        stream = zstandard.ZstdDecompressor().stream_reader(cast(IO[bytes], src), read_across_frames=False)
        errors = (zstandard.ZstdError, EOFError, OSError)
    data = b""
    try:
        while len(data) < 1 << 20:
            chunk = stream.read(65536)
            if not chunk:
                break
            data += chunk
            if len(data) >= 32 and data.startswith(BUNDLE_MAGIC):
                n, = struct.unpack_from("<Q", data, 24)
                if not 0 < n < 4096:
                    return None
                ids, _ = _parse_table(data[32:], n)
                if ids is not None:
                    return ids
            elif len(data) >= len(BUNDLE_MAGIC):
                return None
    except errors:
        return None
    return None


def bundle_targets(read: Reader, size: int) -> tuple[tuple[str, ...], str | None]:
    """(gfx target IDs, problem) of a `.hip_fatbin` section: every offload bundle's entry table, plain or compressed
    (zlib or zstd: only as much decompressed as the entry table needs; zstd without a decompressor here: counted as
    unreadable, never guessed)."""
    gfx: set[str] = set()
    zstd = bad = 0
    pos = 0
    while pos < size:
        magic = read(pos, 24)
        if magic.startswith(BUNDLE_MAGIC):
            ids, end = _bundle_ids(read, pos, size)
            if ids is None:
                bad += 1
            else:
                gfx |= _gfx_of(ids)
        elif magic.startswith(CCOB_MAGIC):
            ids, end, method = _ccob_ids(read, pos, size)
            if method == "zstd, not decompressed here":
                zstd += 1
            elif ids is None:
                bad += 1
            else:
                gfx |= _gfx_of(ids)
        else:
            end = pos
        nxt = _find_any(read, (BUNDLE_MAGIC, CCOB_MAGIC), max(end, pos + 1), size)
        if nxt is None:
            break
        pos = nxt
    problems = []
    if zstd:
        problems.append(f"{zstd} compressed offload bundle(s) use zstd (CCOB method 1), and no zstd decompressor is "
                        "installed here (Python 3.14's compression.zstd, or `pip install zstandard`): their targets "
                        "are not read")
    if bad:
        problems.append(f"{bad} offload bundle(s) have no readable entry table")
    return tuple(sorted(gfx, key=gfx_order)), "; ".join(problems) or None


# ---- helpers -------------------------------------------------------------------------------------------------

def _bundle_ids(read: Reader, pos: int, size: int) -> tuple[list[str] | None, int]:
    """The entry IDs of the plain bundle at `pos`, and where its last code object ends."""
    head = read(pos, 32)
    if len(head) < 32:
        return None, pos + 1
    n, = struct.unpack_from("<Q", head, 24)
    if not 0 < n < 4096:
        return None, pos + 1
    table = read(pos + 32, min(size - pos - 32, n * (24 + 256)))
    ids, end = _parse_table(table, n)
    return ids, (pos + end if ids is not None else pos + 1)


def _parse_table(table: bytes, n: int) -> tuple[list[str] | None, int]:
    """Entry IDs of a bundle's entry table (the bytes after magic and count), and the end of its last code object
    counted from the bundle's start; None when the table is cut short or nonsense."""
    ids: list[str] = []
    q, end = 0, 0
    for _ in range(n):
        if q + 24 > len(table):
            return None, 0
        off, length, idlen = struct.unpack_from("<QQQ", table, q)
        if idlen > 1024 or q + 24 + idlen > len(table):
            return None, 0
        ids.append(table[q + 24:q + 24 + idlen].decode("ascii", "replace"))
        end = max(end, off + length)
        q += 24 + idlen
    return ids, end


def _ccob_ids(read: Reader, pos: int, size: int) -> tuple[list[str] | None, int, str]:
    """(entry IDs, end, method) of the compressed bundle at `pos`: decompress (zlib) only until its entry table."""
    head = read(pos, 32)
    if len(head) < 24:
        return None, pos + 1, "?"
    version, method = struct.unpack_from("<HH", head, 4)
    name = _CCOB_METHODS.get(method, f"method {method}")
    if version == 1:
        hsize, total = 20, None
    elif version == 2:
        hsize, total = 24, struct.unpack_from("<I", head, 8)[0]
    elif version == 3:
        hsize, total = 32, struct.unpack_from("<Q", head, 8)[0]
    else:
        return None, pos + 1, name
    end = pos + total if total else pos + hsize
    if name == "zstd":
        try:
            return _zstd_ids(read, pos + hsize, min(size, pos + total) if total else size), end, name
        except NoZstd:
            return None, end, "zstd, not decompressed here"
    if name != "zlib":
        return None, end, name
    inflate = zlib.decompressobj()
    data, q, limit = b"", pos + hsize, min(size, pos + total) if total else size
    while q < limit:
        chunk = read(q, min(16384, limit - q))
        if not chunk:
            break
        q += len(chunk)
        try:
            data += inflate.decompress(chunk, 1 << 20)
        except zlib.error:
            return None, end, name
        if len(data) >= 32 and data.startswith(BUNDLE_MAGIC):
            n, = struct.unpack_from("<Q", data, 24)
            if not 0 < n < 4096:
                return None, end, name
            ids, _ = _parse_table(data[32:], n)
            if ids is not None:
                return ids, end, name
        if inflate.eof or len(data) > 1 << 20:
            break
    return None, end, name


def _gfx_of(ids: list[str]) -> set[str]:
    """'hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-' -> 'gfx90a:xnack-'; host and non-AMD entries are left out."""
    out = set()
    for i in ids:
        kind, _, triple_target = i.partition("-")
        if kind in ("hip", "hipv4", "openmp") and "amdgcn-amd-amdhsa" in triple_target:
            target = triple_target.split("--", 1)[-1]  # the triple amdgcn-amd-amdhsa- (empty environment), "-", the ID
            if target.startswith("gfx"):
                out.add(target)
    return out


def _find(read: Reader, needle: bytes, start: int, size: int, *, align: int = 1) -> int | None:
    """The offset of `needle` at or after `start` (on an `align` boundary), reading in growing windows."""
    hit = _find_any(read, (needle,), start, size)
    while hit is not None and hit % align:
        hit = _find_any(read, (needle,), hit + 1, size)
    return hit


def _find_any(read: Reader, needles: tuple[bytes, ...], start: int, size: int) -> int | None:
    window, pos = 4096, start
    keep = max(len(n) for n in needles) - 1
    while pos < size:
        chunk = read(pos, min(window, size - pos))
        if not chunk:
            return None
        hits = [i for n in needles if (i := chunk.find(n)) >= 0]
        if hits:
            return pos + min(hits)
        if pos + len(chunk) >= size:
            return None
        pos += max(1, len(chunk) - keep)
        window = min(window * 2, 1 << 22)
    return None


def arch_sorted(names: set[str]) -> tuple[str, ...]:
    def key(s: str) -> tuple[int, str]:
        digits = "".join(ch for ch in s.split("_", 1)[-1] if ch.isdigit())
        return int(digits or 0), s
    return tuple(sorted(names, key=key))


def gfx_order(target: str) -> tuple[int, str]:
    """gfx942 after gfx90a after gfx908; gfx1030 after all gfx9: the ISA's major, then its name."""
    base = target.split(":")[0][3:]
    generic = base.split("-", 1)[0] if "-" in base else None  # gfx11-generic, gfx9-4-generic: the family's major
    major = generic if generic is not None else base[:-2]
    return (int(major) if major.isdigit() else 0, target)
