"""A wheel's members read as their bytes stream by — from an index's ranged answer, a downloaded file or a file on
disk — for tritonlock.native.read: each inflated as it comes (a piece at a time) and checked against its directory
entry (its size, its CRC-32, where its compressed data ends), the shared objects' facts read from only the bytes they
are in (tritonlock.native.stream) within a memory budget, or from a temporary file where that pass could not read
them; METADATA whole. Bounded: what a member inflates to, in all and against its compressed size."""

from __future__ import annotations

import collections
import itertools
import os
import re
import threading
import zlib
from collections.abc import Callable, Iterable
from typing import IO, Any, NamedTuple

from tritonlock.native.elf import SO as _SO
from tritonlock.native.elf import built_for_torch, member_facts
from tritonlock.models import NativeFacts
from tritonlock.models import NativeMember as Member

# A shared object inflates to this much at most, a wheel's shared objects to this much in all, and a member larger
# than BOMB_FLOOR to at most BOMB_RATIO times its compressed size (deflate reaches about 1,030x on zeros alone; real
# libraries 2-10x): past that a wheel is refused unread, as a zip bomb
MEMBER_MAX = 4 << 30
WHEEL_MAX = 16 << 30
BOMB_FLOOR = 64 << 20
BOMB_RATIO = 100
METADATA_MAX = 8 << 20  # a wheel's METADATA
# The bytes the reads under way keep in memory at most (of each library, the parts its facts are read from); what
# does not fit is read again from a temporary file. With the pieces in flight, a resolve stays under 512 MB.
KEPT_MAX = 256 << 20
_PIECE = 1 << 20  # inflated at a time

class _Kept:
    """The memory budget of what the reads under way keep (shared by every read of the process)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0
        self._lock = threading.Lock()

    def grant(self, n: int) -> bool:
        with self._lock:
            if self.used + n > self.limit:
                return False
            self.used += n
            return True

    def release(self, n: int) -> None:
        with self._lock:
            self.used = max(0, self.used - n)


KEPT = _Kept(KEPT_MAX)


class Want(NamedTuple):
    """One zip member the facts need."""

    name: str
    method: int  # 0 stored, 8 deflated
    csize: int
    usize: int
    offset: int  # of its local header
    crc: int | None = None  # its CRC-32, as its directory entry states
    text: bool = False  # read as text (top_level.txt, the Python that says what it imports: pysource), not an ELF


def is_metadata(name: str) -> bool:
    return re.fullmatch(r"[^/]+\.dist-info/METADATA", name) is not None


def wanted_members(members: dict[str, tuple[int, int, int, int]],
                   crcs: dict[str, int] | None = None) -> list[Want]:
    """The members read: every shared object stored or deflated (the two methods wheels use), and METADATA; a wheel
    whose shared objects would inflate past the bounds is refused here, before any is read."""
    from tritonlock.native.remotezip import ZipBroken

    from tritonlock.native.pysource import texts_wanted

    texts = texts_wanted(members)  # (METADATA, and what says what the wheel's import names import)
    out = sorted((Want(n, *v, (crcs or {}).get(n), n in texts) for n, v in members.items()
                  if n in texts or (_SO.search(n) and v[0] in (0, 8))), key=lambda w: w.offset)
    for w in out:
        limit = METADATA_MAX if w.text else MEMBER_MAX
        if w.usize > limit:
            raise ZipBroken(f"{w.name} would inflate to {w.usize} bytes, more than the {limit >> 20} MiB read of it")
        if w.usize > BOMB_FLOOR and w.usize > BOMB_RATIO * max(1, w.csize):
            raise ZipBroken(f"{w.name} would inflate {w.usize // max(1, w.csize)} times over (from {w.csize} to "
                            f"{w.usize} bytes): a zip bomb, not read")
    if sum(w.usize for w in out) > WHEEL_MAX:
        raise ZipBroken(f"its shared objects would inflate to {sum(w.usize for w in out)} bytes in all, more than "
                        f"the {WHEEL_MAX >> 30} GiB read of one wheel")
    return out


def zlib_module() -> Any:
    """The inflater: python-isal's zlib (ISA-L, about twice zlib's speed; a dependency where it has wheels), else
    Python's own. Both release the GIL while they inflate, so members inflate side by side on every core."""
    try:
        from isal import isal_zlib

        return isal_zlib
    except ImportError:
        return zlib


def _inflate_errors() -> tuple[type[BaseException], ...]:
    z = zlib_module()
    return (zlib.error,) if z is zlib else (zlib.error, z.error)


class _Inflated:
    """A member's bytes as the decompressor gave them, kept in its pieces (never joined into one buffer):
    `read(offset, n)` joins only the pieces a read spans. For METADATA (METADATA_MAX at most)."""

    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces
        self._starts = [0, *itertools.accumulate(len(p) for p in pieces)]
        self.size = self._starts[-1]

    def read(self, off: int, n: int) -> bytes:
        import bisect

        end = min(off + n, self.size)
        if off < 0 or off >= end:
            return b""
        i = bisect.bisect_right(self._starts, off) - 1
        out = []
        while off < end:
            base = self._starts[i]
            piece = self._pieces[i][off - base:end - base]
            out.append(piece)
            off += len(piece)
            i += 1
        return out[0] if len(out) == 1 else b"".join(out)


def file_reader(fh: IO[bytes], limit: int = 256 << 20) -> Callable[[int, int], bytes]:
    """read(offset, n) of an open file, at most `limit` bytes a read (a parser asking for more is given a MemoryError,
    which it reports as a file it cannot read: a hostile size never becomes an allocation)."""
    fd = fh.fileno()

    def read(offset: int, n: int) -> bytes:
        if n > limit:
            raise MemoryError(f"a read of {n} bytes")
        return os.pread(fd, max(0, n), offset) if offset >= 0 else b""

    return read


class _Sink:
    """One member's compressed bytes in, inflated as they come (a piece at a time: a member that inflates past its
    size is stopped there) and checked against its directory entry (its size, its CRC-32, its compressed data ending
    where its entry says): a shared object into an ElfStream (only what its facts are read from is kept, within the
    memory budget), or with `whole` into a temporary file; METADATA whole. A `.so` that does not start as an ELF file
    is dropped unread."""

    def __init__(self, w: Want, whole: bool) -> None:
        from tritonlock.native.stream import ElfStream

        self.want = w
        self.meta = is_metadata(w.name) or w.text
        self._z = zlib_module().decompressobj(-15) if w.method == 8 else None
        self._crc_of = zlib_module().crc32
        self.crc = 0
        self.pieces: list[bytes] = []
        self.file: IO[bytes] | None = None
        if whole and not self.meta:
            import tempfile

            self.file = tempfile.TemporaryFile(prefix="tritonlock-member-")
        self.stream = ElfStream(w.usize, grant=KEPT.grant) if not self.meta and self.file is None else None
        self.size = 0
        self.elf: bool | None = None  # None until its first 4 bytes are in (held back till then)
        self._held = b""

    def feed(self, raw: memoryview) -> None:
        from tritonlock.native.remotezip import ZipBroken

        if self.elf is False:
            return
        if self._z is None:
            self._out(raw.tobytes())
            return
        data: bytes | memoryview = raw
        try:
            while data:
                if self._z.eof:
                    raise ZipBroken(f"{self.want.name}: its compressed data goes on past the end of its deflate "
                                    "stream")
                self._out(self._z.decompress(data, _PIECE))
                data = self._z.unconsumed_tail
                if self._z.eof and self._z.unused_data:
                    raise ZipBroken(f"{self.want.name}: its compressed data goes on past the end of its deflate "
                                    "stream")
        except _inflate_errors() as err:
            raise ZipBroken(f"{self.want.name}: its compressed data is damaged ({err})") from None

    def _out(self, out: bytes) -> None:
        from tritonlock.native.remotezip import ZipBroken

        if not out:
            return
        if self.elf is None and not self.meta:
            self._held += out  # a piece may bring fewer than 4 bytes (a stored member cut at a chunk's end)
            if len(self._held) < 4:
                return
            out, self._held = self._held, b""
            self.elf = out[:4] == b"\x7fELF"
            if not self.elf:
                return
        self.size += len(out)
        if self.size > self.want.usize:  # a member that inflates past its size is not inflated on (a zip bomb)
            raise ZipBroken(f"{self.want.name} inflates past the {self.want.usize} bytes the wheel's zip directory "
                            "says")
        self.crc = self._crc_of(out, self.crc)
        if self.meta:
            self.pieces.append(out)
        elif self.file is not None:
            self.file.write(out)
        else:
            assert self.stream is not None
            self.stream.feed(out)

    def finish(self) -> None:
        from tritonlock.native.remotezip import ZipBroken

        if self.elf is False:
            return
        if self._z is not None:
            try:
                self._out(self._z.flush())
            except _inflate_errors() as err:
                raise ZipBroken(f"{self.want.name}: its compressed data is damaged ({err})") from None
            if not self._z.eof:
                raise ZipBroken(f"{self.want.name}: its compressed data ends before its deflate stream does")
        if self.elf is None and not self.meta:
            if len(self._held) + self.size != self.want.usize:
                raise ZipBroken(f"{self.want.name} inflates to {len(self._held)} bytes, not the {self.want.usize} "
                                "the wheel's zip directory says")
            self.elf = False  # fewer than 4 bytes in all: no ELF file
            return
        if self.size != self.want.usize:
            raise ZipBroken(f"{self.want.name} inflates to {self.size} bytes, not the {self.want.usize} the wheel's "
                            "zip directory says")
        if self.want.crc is not None and self.crc != self.want.crc:
            raise ZipBroken(f"{self.want.name}: its bytes do not have the CRC-32 its zip directory entry states")
        if self.stream is not None:
            self.stream.finish()

    def close(self) -> None:
        if self.stream is not None:
            KEPT.release(self.stream.kept)
            self.stream = None
        if self.file is not None:
            self.file.close()
            self.file = None


# What one member came to: its facts, None (not an ELF file), its METADATA's text, or _AGAIN (read it again whole)
_AGAIN = object()


def _facts_of(sink: _Sink, gpu: bool) -> Member | str | None | object:
    from tritonlock.native.stream import Miss

    name = sink.want.name
    if sink.meta:
        return _Inflated(sink.pieces).read(0, sink.size).decode("utf-8", "replace")
    if sink.elf is not True:
        return None
    if sink.file is not None:
        sink.file.flush()
        return member_facts(name, file_reader(sink.file), sink.size, gpu=gpu)
    assert sink.stream is not None
    try:
        return member_facts(name, sink.stream.read, sink.size, gpu=gpu, nv_fatbin=sink.stream.scan.targets,
                            names=sink.stream.names)
    except Miss:
        return _AGAIN


def read_span(pieces: Iterable[bytes], start: int, wanted: list[Want], gpu: bool, *,
               whole: bool = False) -> dict[str, Any]:
    """The facts of the wanted members (by header offset), out of a stream of the wheel's bytes from `start` on:
    each member's data inflated as it comes, its facts read as soon as its last byte is in. name -> what it came to
    (see _facts_of); `whole`: each member inflated into a temporary file and read there (the second read of one the
    stream could not read). A local header that is not where, or not what, the directory says is ZipBroken."""
    import struct

    from tritonlock.native.remotezip import ZipBroken

    out: dict[str, Any] = {}
    todo = collections.deque(wanted)
    pos = start
    head = bytearray()
    sink: _Sink | None = None
    left = 0  # the current member's data still to come (while `sink`)
    try:
        for chunk in pieces:
            view, at = memoryview(chunk), pos
            pos += len(chunk)
            while view and todo:
                w = todo[0]
                if sink is None:
                    if at < w.offset:  # bytes before the member's local header (other members)
                        skip = min(len(view), w.offset - at)
                        view, at = view[skip:], at + skip
                        continue
                    if not head and at != w.offset:
                        raise ZipBroken(f"{w.name}: its local header at {w.offset} lies inside another member")
                    need = 30 + sum(struct.unpack_from("<HH", head, 26)) if len(head) >= 30 else 30
                    take = min(len(view), need - len(head))
                    head += view[:take]
                    view, at = view[take:], at + take
                    if len(head) < 30:
                        continue
                    if head[:4] != b"PK\x03\x04":
                        raise ZipBroken(f"{w.name}: no zip local header where the wheel's directory says it is")
                    if len(head) < 30 + sum(struct.unpack_from("<HH", head, 26)):
                        continue
                    nlen, = struct.unpack_from("<H", head, 26)
                    method, = struct.unpack_from("<H", head, 8)
                    if bytes(head[30:30 + nlen]).decode("utf-8", "replace") != w.name or method != w.method:
                        raise ZipBroken(f"{w.name}: the local header where the wheel's directory puts it is of "
                                        f"another member ({bytes(head[30:30 + nlen])[:80]!r}, method {method})")
                    sink, left, head = _Sink(w, whole), w.csize, bytearray()
                take = min(len(view), left)
                if take:
                    sink.feed(view[:take])
                    view, at, left = view[take:], at + take, left - take
                if left == 0:
                    sink.finish()
                    try:
                        out[w.name] = _facts_of(sink, gpu)
                    finally:
                        sink.close()
                    todo.popleft()
                    sink = None
    finally:
        if sink is not None:
            sink.close()
    if todo:
        raise ZipBroken(f"the wheel's bytes ended before {todo[0].name} did")
    return out


class Jobs:
    """The reads of every wheel's members, a few at a time, the largest first (they take longest): a read streams
    its bytes and inflates them as they come (outside the GIL, so reads run side by side on every core)."""

    def __init__(self, workers: int, name: str = "native-read") -> None:
        import queue

        self._queue: queue.PriorityQueue[tuple[float, int, Any, Any]] = queue.PriorityQueue()
        self._seq = itertools.count()
        self._workers, self._name = workers, name
        # workers start as jobs wait for one, up to `workers` (a resolve that reads nothing starts none: 40 threads
        # started up front cost 0.04 s of a 0.9 s resolve)
        self._started = self._idle = 0
        self._count = threading.Lock()

    def submit(self, size: int, fn: Any) -> Any:
        from concurrent.futures import Future

        fut: Future[Any] = Future()
        self._queue.put((-size, next(self._seq), fn, fut))
        with self._count:
            if self._started < self._workers and self._queue.qsize() > self._idle:
                self._started += 1
                threading.Thread(target=self._run, daemon=True, name=self._name).start()
        return fut

    def close(self) -> None:
        """The workers end once the jobs before them are done (or cancelled)."""
        for _ in range(self._workers):
            self._queue.put((float("inf"), next(self._seq), None, None))

    def _run(self) -> None:
        while True:
            with self._count:
                self._idle += 1
            _, _, fn, fut = self._queue.get()
            with self._count:
                self._idle -= 1
            if fn is None:
                return
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except BaseException as err:  # noqa: BLE001 — the wheel's reader says what went wrong
                fut.set_exception(err)


_JOBS: Jobs | None = None
_JOBS_LOCK = threading.Lock()


def jobs() -> Jobs:
    global _JOBS
    with _JOBS_LOCK:
        if _JOBS is None:
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2)
            _JOBS = Jobs(min(16, max(2, cores)))  # (16 at most: what each holds in flight counts against memory)
        return _JOBS


# A member this large is read by a request of its own (a read per core); smaller ones share one per run
_OWN_READ = 8 << 20


def _groups(wanted: list[Want]) -> list[list[Want]]:
    """The members in runs read by one request each: a large member alone, the small ones between together."""
    out: list[list[Want]] = []
    for w in wanted:
        if w.csize >= _OWN_READ or not out or out[-1][-1].csize >= _OWN_READ:
            out.append([w])
        else:
            out[-1].append(w)
    return out


def read_members(filename: str, sha256: str, provides: tuple[str, ...], wanted: list[Want],
                  span: Any, *, gpu: bool, source: str, first: dict[str, Any] | None = None) -> NativeFacts:
    """The wheel's facts: its members read in runs (`span(start, end)` streams bytes start..end), side by side;
    a library the streaming pass could not read is read again, whole, on disk. `first`: what one pass already read.
    A shared object that starts as an ELF file and cannot be read as one makes the read fail (it is not "no native
    code")."""
    from tritonlock.native.remotezip import ZipBroken

    def run(group: list[Want], whole: bool = False) -> dict[str, Any]:
        start = group[0].offset
        end = group[-1].offset + group[-1].csize + 30 + 0xFFFF * 2  # + the last local header's name and extra field
        return read_span(span(start, end), start, group, gpu, whole=whole)

    futures = [] if first is not None else [jobs().submit(sum(w.csize for w in g), lambda g=g: run(g))
                                            for g in _groups(wanted)]
    got: dict[str, Any] = dict(first or {})
    try:
        for f in futures:
            got.update(f.result())
    finally:
        for f in futures:
            f.cancel()
    for w in wanted:
        if got.get(w.name) is _AGAIN:
            got.update(run([w], whole=True))
    meta = next((v for n, v in got.items() if is_metadata(n)), None)
    out = [m for n, m in sorted(got.items()) if isinstance(m, Member)]
    bad = next((m for m in out if m.gpu.startswith("not an ELF file it can read")), None)
    if bad is not None:
        raise ZipBroken(f"{bad.path} starts as an ELF file and cannot be read as one ({bad.gpu})")
    from tritonlock.native.pysource import guarded_loads, wheel_imports

    text = {w.name: got.get(w.name) for w in wanted if w.text}.get
    tops, imports = wheel_imports([w.name for w in wanted], text)
    return NativeFacts(sha256=sha256, filename=filename, provides=provides, members=tuple(out), tops=tops,
                       built_for_torch=built_for_torch(filename, meta) if out else None, source=source, imports=imports,
                       guarded=guarded_loads(tops, text, [m.path for m in out]) if out else ())


def provides(members: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({n.rsplit("/", 1)[-1] for n in members if _SO.search(n)}))
