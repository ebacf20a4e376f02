"""An ELF file read once as it streams by (inflated from a wheel on an index), keeping only the bytes its facts are
read from: its first loadable segment (the ELF and program headers, the dynamic symbols and strings), its dynamic
segment, its section table with what comes just before it (the section names), and — found by walking the
stream — the headers of the CUDA fatbin containers and their entries, and the library names in its strings (what it
may dlopen; which of them are in its read-only data is told from the section table). Where the facts would need
anything else,
`Miss` says so and the file is read again whole (so what is read never differs from tritonlock.native.gpucode's
walk over the whole file: a layout it does not expect costs time, never a wrong fact)."""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass, field

from tritonlock.native.elf import GPU_LIB_BYTES, SoNames
from tritonlock.native.gpucode import ENTRY_HEAD, FATBIN_HEAD, FATBIN_MAGIC, add_entry
from tritonlock.native.gpucode import arch_sorted as _arch_sorted

_MAGIC = struct.pack("<I", FATBIN_MAGIC)
# The start kept at most (the first loadable segment holds the dynamic symbols and strings; a file linked without
# separate code segments has its code there too, which is not needed)
HEAD_MAX = 64 << 20
# Bytes kept before the section table: the section names (.shstrtab) sit right before it where linkers put them
_BEFORE_SECTIONS = 1 << 20
# Loadable segments this small are kept whole: data, and what patchelf adds
_SMALL_SEGMENT = 8 << 20
# Kept past each range's end: a parser reads strings in chunks that may run past the segment they are in
_MARGIN = 64 << 10
# Container headers the walk records at most (vLLM's largest library has a few thousand), and entry headers in all
_MAX_CONTAINERS = 100_000
_MAX_ENTRIES = 1_000_000


class Miss(Exception):
    """A read of bytes the streaming pass did not keep (not an ELF error: no parser catches it)."""


@dataclass
class _Container:
    hsize: int
    fat: int
    # (offset, kind, arch, flags, entry header size, payload size), in the walk's order; None: its header was not
    # walked (not a fatbin container header this walk follows)
    entries: list[tuple[int, int, int, int, int, int]] | None = field(default_factory=list)


class FatbinScan:
    """CUDA fatbin containers found as the bytes stream by, before it is known where `.nv_fatbin` is: each
    container's entry headers by file offset (payloads skipped, as gpucode.fatbin_targets skips them), and the
    stretches searched for the next container. `targets(start, size)` answers what fatbin_targets answers for the
    section at `start`, or raises Miss where this walk went another way than that section's walk."""

    def __init__(self) -> None:
        self.containers: dict[int, _Container] = {}
        self._searched: list[tuple[int, int]] = []  # [from, to) stretches where every magic was seen
        self._starts: list[int] = []
        self._q = 0  # searching from here (state "search"), or the next entry header (state "entry")
        self._from = 0  # where the current search began
        self._cur: _Container | None = None  # the container being walked (state "entry")
        self._cstart = self._cend = 0
        self._carry = b""
        self._stopped = False
        self._entries = 0

    def stop(self) -> None:
        """Walk no further (the file links no GPU library: its GPU code is not read); `targets` then raises Miss."""
        self._stopped = True

    def feed(self, base: int, piece: bytes) -> None:
        """The bytes at file offset `base` (each piece right after the last)."""
        if self._stopped or len(self.containers) > _MAX_CONTAINERS or self._entries > _MAX_ENTRIES:
            return  # (a file of magic numbers: given up, Miss)
        if self._carry and self._cur is None and len(piece) >= 3 and (self._carry + piece[:3]).find(_MAGIC) < 0:
            self._carry, self._q = b"", max(self._q, base)  # searching, and no magic across the boundary: no join
        data = self._carry + piece if self._carry else piece  # (a header across the boundary: joined, rarely)
        start, end = base - len(self._carry), base + len(piece)
        while True:
            cur = self._cur
            if cur is not None:
                e = self._q
                if e + 48 > self._cend:  # the container's end: search again from there, as the walk does
                    self._cur = None
                    self._q = self._from = max(self._cend, self._cstart + 1)
                    continue
                if e + 48 > end:
                    break
                kind, _, ehsize, payload = ENTRY_HEAD.unpack_from(data, e - start)
                arch, = struct.unpack_from("<I", data, e - start + 28)
                flags, = struct.unpack_from("<Q", data, e - start + 40)
                assert cur.entries is not None
                cur.entries.append((e, kind, arch, flags, ehsize, payload))
                self._entries += 1
                if ehsize < 48 or not 10 <= arch < 1000:  # the walk stops here (a problem where this is the section)
                    self._cur = None
                    self._q = self._from = e + 48  # searched from here on; what the entry skipped is not
                    continue
                self._q = e + ehsize + payload
                continue
            p = self._search(data, start, end)
            if p is None:
                break
            if p + FATBIN_HEAD.size > end:
                self._q = p  # its header straddles the next piece
                break
            _, version, hsize, fat = FATBIN_HEAD.unpack_from(data, p - start)
            self._searched.append((self._from, p + 1))
            self._q = self._from = p + 1
            if (version, hsize) != (1, 16):  # not followed (the walk may read it: then the member is read whole)
                self.containers[p] = _Container(hsize, fat, None)
                continue
            self._cur = self.containers[p] = _Container(hsize, fat)
            self._q, self._cstart, self._cend = p + hsize, p, p + hsize + fat
        self._carry = bytes(data[max(self._q, end - 64, start) - start:]) if self._q < end else b""

    def _search(self, data: bytes, start: int, end: int) -> int | None:
        """The next magic at or after the search position (any alignment: the section's own is not known yet)."""
        i = data.find(_MAGIC, max(self._q, start) - start)
        if i < 0:
            self._q = max(self._q, end - 3)
            return None
        return start + i

    def finish(self, size: int) -> None:
        """The stream ended at `size` bytes."""
        if self._cur is None:
            self._searched.append((self._from, size))
        merged: list[tuple[int, int]] = []
        for a, b in sorted(self._searched):
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        self._searched = merged
        self._starts = [a for a, _ in merged]

    def _covered(self, a: int, b: int) -> bool:
        """Whether every offset in [a, b) was searched."""
        if a >= b:
            return True
        i = bisect.bisect_right(self._starts, a) - 1
        return i >= 0 and self._searched[i][1] >= b

    def targets(self, start: int, size: int) -> tuple[tuple[str, ...], tuple[str, ...], str | None]:
        """(sm, ptx, problem) of the `.nv_fatbin` section at file offset `start`, `size` bytes: fatbin_targets'
        walk, over what the stream kept."""
        if len(self.containers) > _MAX_CONTAINERS or self._entries > _MAX_ENTRIES:
            raise Miss(f"more than {_MAX_CONTAINERS} fatbin containers or {_MAX_ENTRIES} entries: not walked")
        if self._stopped:
            raise Miss("the walk stopped where the file's start named no GPU library")
        sm: set[str] = set()
        ptx: set[str] = set()
        pos, limit = start, start + size
        hits = sorted(p for p in self.containers if (p - start) % 8 == 0)  # the walk's search: 8-aligned in the section
        while pos + FATBIN_HEAD.size <= limit:
            c = self.containers.get(pos)
            if c is None:
                if not self._covered(pos, pos + 1):
                    raise Miss(f"no fatbin header looked for at {pos}")
                i = bisect.bisect_right(hits, pos)
                nxt = hits[i] if i < len(hits) and hits[i] < limit else None
                if not self._covered(pos + 1, nxt + 1 if nxt is not None else limit):
                    raise Miss(f"the stretch after {pos} was not searched")
                if nxt is None:
                    break
                pos = nxt
                continue
            if c.entries is None:
                raise Miss(f"the container at {pos} was not walked")
            end = min(limit, pos + c.hsize + c.fat)
            e = pos + c.hsize
            for off, kind, arch, flags, ehsize, payload in c.entries:
                if e + 48 > end:
                    break
                if off != e:
                    raise Miss(f"the walk of the container at {pos} went another way")
                if ehsize < 48 or not 10 <= arch < 1000:
                    return (_arch_sorted(sm), _arch_sorted(ptx),
                            f"a fatbin entry at +{e - start} has no readable header")
                add_entry(sm, ptx, kind, arch, flags)
                e += ehsize + payload
            else:
                if e + 48 <= end:
                    raise Miss(f"the walk of the container at {pos} stopped short")
            pos = max(end, pos + 1)
        return _arch_sorted(sm), _arch_sorted(ptx), None


class ElfStream:
    """One ELF file fed piece by piece (`feed`, then `finish`); `read(offset, n)` then serves what was kept, and
    raises Miss for the rest. `grant(n)`: whether n more bytes may be kept (a memory budget shared by the reads
    under way); once refused, nothing more is kept (a read of it is a Miss: the file is read again, on disk). `tail`:
    also keep the loadable segments after the dynamic segment's, whatever their size (up to HEAD_MAX each) — where
    patchelf put the dynamic strings and symbol hashes it moved (tritonlock.native.torchsyms)."""

    def __init__(self, size: int, grant: Callable[[int], bool] | None = None, *, tail: bool = False) -> None:
        self.size = size
        self._grant = grant
        self.kept = 0  # bytes granted
        self._full = False
        self._tail = tail
        self._late: tuple[tuple[int, int], Any] | None = None  # (program headers' range, ELF header): see _plan
        self.scan = FatbinScan()
        self.names = SoNames()  # the library names in its strings (what it may dlopen), found as they stream by
        self._head = bytearray()
        self._head_max = 64 << 10  # until the program headers say how far the first loadable segment goes
        self._ranges: list[tuple[int, int, bytearray]] = []  # (start, end, bytes so far) kept past the head
        self._planned = False
        self._judged = False  # whether the first segment was looked at for GPU library names
        self._first_end: int | None = None  # where the first loadable segment ends, if the dynamic strings are in it
        self._pos = 0

    def _take(self, n: int) -> bool:
        if self._full or n <= 0:
            return not self._full
        if self._grant is not None and not self._grant(n):
            self._full = True
            return False
        self.kept += n
        return True

    def _grow_head(self, piece: bytes, base: int, end: int) -> None:
        if self._take(min(end, self._head_max) - len(self._head)):
            self._head += piece[len(self._head) - base:self._head_max - base]
        else:
            self._head_max = len(self._head)  # (refused: no more of it is kept)

    def feed(self, piece: bytes) -> None:
        base = self._pos
        end = self._pos = base + len(piece)
        self.scan.feed(base, piece)
        self.names.feed(base, piece)
        if base <= len(self._head) < self._head_max:
            self._grow_head(piece, base, end)
            # (planned again while the start grows within this piece: program headers far in — a BOLTed library's
            # are 2 MiB in — are found in the same piece that brings them)
            while not self._planned and (len(self._head) >= self._head_max or end >= self.size):
                before = self._head_max
                self._plan(end)
                if base <= len(self._head) < self._head_max:
                    self._grow_head(piece, base, end)
                if not self._planned and self._head_max == before:
                    break
        if self._first_end is not None and not self._judged and len(self._head) >= min(self._first_end, self.size):
            self._judged = True
            if not GPU_LIB_BYTES.search(self._head, 0, self._first_end):
                # its dynamic strings (in its first segment) name no GPU library: no GPU code is read from it, and
                # the fatbin walk stops (where that is wrong, a linker having put them elsewhere: Miss, read whole)
                self.scan.stop()
        for a, b, buf in self._ranges:
            lo, hi = a + len(buf), min(end, b)
            if base <= lo < hi and self._take(hi - lo):
                buf += piece[lo - base:hi - base]
        if self._late is not None and len(self._ranges[0][2]) == self._ranges[0][1] - self._ranges[0][0]:
            self._plan_late(end)

    def _plan_late(self, pos: int) -> None:
        """Program headers that came after the start: the loadable segments after them that are no code (where the
        dynamic strings a patchelf or BOLT moved are), kept as they stream by from `pos` on."""
        import struct as _struct

        from tritonlock.native import elfdyn

        assert self._late is not None
        (a, _), hdr = self._late
        self._late = None
        table = bytes(self._ranges[0][2])
        try:
            segs = elfdyn.segments(lambda o, n: table[o - a:o - a + n], hdr)
        except (elfdyn.ElfError, _struct.error):
            return
        for seg in segs:
            if seg.type == elfdyn.PT_LOAD and seg.offset >= pos and not seg.flags & 1 and seg.filesz <= HEAD_MAX:
                self._ranges.append((seg.offset, min(self.size, seg.offset + seg.filesz), bytearray()))

    def _plan(self, seen: int) -> None:
        """From the ELF and program headers: how much of the start to keep (at least all `seen` so far), and which
        ranges further on."""
        import struct as _struct

        from tritonlock.native import elfdyn

        h = bytes(self._head)
        try:
            hdr = elfdyn.header(h)
        except (elfdyn.ElfError, _struct.error):
            self._planned = True  # not an ELF file this reads: the facts' read says so
            return
        phoff, phnum, phentsize = hdr.phoff, hdr.phnum, hdr.phentsize
        if phnum == elfdyn.PN_XNUM or phoff + phnum * phentsize > len(h):
            if phnum != elfdyn.PN_XNUM and phoff + phnum * phentsize <= HEAD_MAX:
                self._head_max = phoff + phnum * phentsize  # read on until the program headers are in
            elif self._tail and phnum != elfdyn.PN_XNUM and phoff + phnum * phentsize <= self.size:
                # further in than the start is kept (a BOLTed library: 190 MB in): the start kept as far as it
                # may be, the program headers and the section table when they stream by, and what comes after
                # the program headers planned once they are in (_plan_late)
                self._planned = True
                self._head_max = max(seen, min(HEAD_MAX, phoff))
                table = (phoff, phoff + phnum * phentsize)
                self._late = (table, hdr)
                self._ranges = [(*table, bytearray())]
                if hdr.shoff:
                    # (BOLT writes the section names before the table, more than a MiB before: 16 MiB kept)
                    self._ranges.append((max(table[1], hdr.shoff - 16 * _BEFORE_SECTIONS), self.size, bytearray()))
            else:
                self._planned = True
            return
        self._planned = True
        try:
            segs = elfdyn.segments(lambda o, n: h[o:o + n], hdr)
        except (elfdyn.ElfError, _struct.error):
            return
        first_load, ranges = None, []
        dynamic = next((seg.offset for seg in segs if seg.type == elfdyn.PT_DYNAMIC), None)
        for seg in segs:
            off, filesz = seg.offset, seg.filesz
            if seg.type == elfdyn.PT_LOAD:
                if first_load is None or off < first_load[0]:
                    first_load = (off, filesz)
                if filesz <= _SMALL_SEGMENT or (self._tail and dynamic is not None and off > dynamic
                                                and filesz <= HEAD_MAX):
                    # patchelf's (auditwheel's) new dynamic strings live in segments of their own at the end
                    ranges.append((off, off + filesz))
            elif seg.type == elfdyn.PT_DYNAMIC:
                ranges.append((off, off + filesz))
        self._head_max = max(seen, min(HEAD_MAX, sum(first_load) + _MARGIN if first_load else 0))
        # Where the file is as its linker wrote it (every loadable segment before the section table), its dynamic
        # strings are in its first segment; patchelf appends segments past the section table, moves the strings
        # there and blanks the old ones: then the whole file is walked
        loads_end = max((seg.offset + seg.filesz for seg in segs if seg.type == elfdyn.PT_LOAD), default=0)
        linked = first_load is not None and 0 < loads_end <= hdr.shoff
        self._first_end = min(HEAD_MAX, sum(first_load)) if first_load and linked else None
        shoff, shnum, shentsize = hdr.shoff, hdr.shnum, hdr.shentsize
        if shoff:
            # e_shnum 0: the count is in section 0's header (more than 0xff00 sections): keep to the end
            ranges.append((max(0, shoff - _BEFORE_SECTIONS), shoff + shnum * shentsize if shnum else self.size))
        kept: list[tuple[int, int]] = []
        for a, b in sorted(ranges):
            a, b = max(a, self._head_max), min(b + _MARGIN, self.size)
            if a >= b:
                continue
            if a <= self._head_max and b <= HEAD_MAX:  # right after the start: the start goes on (one read spans both)
                self._head_max = b
                continue
            if kept and a <= kept[-1][1]:
                kept[-1] = (kept[-1][0], max(kept[-1][1], b))
            else:
                kept.append((a, b))
        self._ranges = [(a, b, bytearray()) for a, b in kept]

    def finish(self) -> None:
        self.scan.finish(self._pos)

    def read(self, off: int, n: int) -> bytes:
        end = min(off + n, self.size)
        if off >= end:
            return b""
        if end <= len(self._head):
            return bytes(self._head[off:end])
        for a, _, buf in self._ranges:
            if a <= off and end <= a + len(buf):
                return bytes(buf[off - a:end - a])
        raise Miss(f"bytes {off}-{end} were not kept")
