"""Native code in locked wheels, read without installing (tritonlock.native reads the ELF files): for each extension
module and bundled library, what it needs and carries; for each wheel, the libraries it brings and the torch it was
built for. Read from the index with ranged reads (the zip's central directory, then only the members and bytes
needed) or from a file on disk, and kept per file sha256 so that a later resolve reads nothing again."""

from __future__ import annotations

import collections
import itertools
import json
import os
import re
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tritonlock.native.elf import SO as _SO
from tritonlock.native.elf import built_for_torch, member_facts
from tritonlock.models import LockedPackage, NativeFacts, Selection
from tritonlock.models import NativeMember as Member

# v2: a member's `gpu` says whether its GPU code was read ("read", "none", or why not); v3: GPU code is read where a
# module links an auditwheel-renamed CUDA library ("libcudart-5e6f7a8b.so.12"), which v2 facts left unread
_CACHE_VERSION = "native-v3"



def may_hold_native_code(filename: str) -> bool:
    """A wheel tagged for a platform (not `*-none-any`) may carry native code; an sdist is not read."""
    return filename.endswith(".whl") and not filename[:-4].endswith("-any")


# --- a wheel: on an index (ranged reads) or on disk ------------------------------------------------------------------

class _Want(NamedTuple):
    """One zip member the facts need."""

    name: str
    method: int  # 0 stored, 8 deflated
    csize: int
    usize: int
    offset: int  # of its local header


def _is_metadata(name: str) -> bool:
    return re.fullmatch(r"[^/]+\.dist-info/METADATA", name) is not None


def _wanted(members: dict[str, tuple[int, int, int, int]]) -> list[_Want]:
    """The members read: every shared object stored or deflated (the two methods wheels use), and METADATA."""
    return sorted((_Want(n, *v) for n, v in members.items() if (_SO.search(n) and v[0] in (0, 8)) or _is_metadata(n)),
                  key=lambda w: w.offset)


def zlib_module() -> Any:
    """The inflater: python-isal's zlib (ISA-L, about twice zlib's speed; a dependency where it has wheels), else
    Python's own. Both release the GIL while they inflate, so members inflate side by side on every core."""
    try:
        from isal import isal_zlib

        return isal_zlib
    except ImportError:
        return zlib


class _Inflated:
    """A member's bytes as the decompressor gave them, kept in its pieces (never joined into one buffer):
    `read(offset, n)` joins only the pieces a read spans. Only for a library the streaming pass could not read."""

    def __init__(self, pieces: list[bytes]) -> None:
        import itertools

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


class _Sink:
    """One member's compressed bytes in, inflated as they come: a shared object into an ElfStream (only what its
    facts are read from is kept), METADATA whole; a `.so` that does not start as an ELF file is dropped unread."""

    def __init__(self, w: _Want, whole: bool) -> None:
        from tritonlock.native.stream import ElfStream

        self.want, self.whole = w, whole or _is_metadata(w.name)
        self._z = zlib_module().decompressobj(-15) if w.method == 8 else None
        self.pieces: list[bytes] = []
        self.stream = ElfStream(w.usize)
        self.size = 0
        self.elf: bool | None = None  # None until its first 4 bytes are in (held back till then)
        self._held = b""

    def feed(self, raw: memoryview) -> None:
        if self.elf is False:
            return
        self._out(self._z.decompress(raw) if self._z is not None else raw.tobytes())

    def _out(self, out: bytes) -> None:
        if not out:
            return
        if self.elf is None and not _is_metadata(self.want.name):
            self._held += out  # a piece may bring fewer than 4 bytes (a stored member cut at a chunk's end)
            if len(self._held) < 4:
                return
            out, self._held = self._held, b""
            self.elf = out[:4] == b"\x7fELF"
            if not self.elf:
                return
        self.size += len(out)
        if self.size > self.want.usize:  # a member that inflates past its size is not inflated on (a zip bomb)
            raise ValueError(f"{self.want.name} inflates past the {self.want.usize} bytes the wheel's zip directory "
                             "says")
        if self.whole:
            self.pieces.append(out)
        else:
            self.stream.feed(out)

    def finish(self) -> None:
        if self.elf is False:
            return
        if self._z is not None:
            self._out(self._z.flush())
        if self.elf is None:  # fewer than 4 bytes in all: no ELF file
            self.elf = False
            return
        if self.size != self.want.usize:
            raise ValueError(f"{self.want.name} inflates to {self.size} bytes, not the {self.want.usize} the wheel's "
                             "zip directory says")
        self.stream.finish()


# What one member came to: its facts, None (not an ELF file), its METADATA's text, or _AGAIN (read it again whole)
_AGAIN = object()


def _facts_of(sink: _Sink, gpu: bool) -> Member | str | None | object:
    from tritonlock.native.stream import Miss

    name = sink.want.name
    if _is_metadata(name):
        return _Inflated(sink.pieces).read(0, sink.size).decode("utf-8", "replace")
    if sink.elf is not True:
        return None
    if sink.whole:
        got = _Inflated(sink.pieces)
        return member_facts(name, got.read, got.size, gpu=gpu)
    try:
        return member_facts(name, sink.stream.read, sink.size, gpu=gpu, nv_fatbin=sink.stream.scan.targets)
    except Miss:
        return _AGAIN


def _read_span(pieces: Iterable[bytes], start: int, wanted: list[_Want], gpu: bool, *,
               whole: bool = False) -> dict[str, Any]:
    """The facts of the wanted members (by header offset), out of a stream of the wheel's bytes from `start` on:
    each member's data inflated as it comes, its facts read as soon as its last byte is in. name -> what it came to
    (see _facts_of); `whole`: keep every member's bytes (the second read of one the stream could not read)."""
    import struct

    out: dict[str, Any] = {}
    todo = collections.deque(wanted)
    pos = start
    head = bytearray()
    sink: _Sink | None = None
    left = 0  # the current member's data still to come (while `sink`)
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
                need = 30 + sum(struct.unpack_from("<HH", head, 26)) if len(head) >= 30 else 30
                take = min(len(view), need - len(head))
                head += view[:take]
                view, at = view[take:], at + take
                if len(head) < 30:
                    continue
                if head[:4] != b"PK\x03\x04":
                    raise ValueError(f"{w.name}: no zip local header where the wheel's directory says it is")
                if len(head) < 30 + sum(struct.unpack_from("<HH", head, 26)):
                    continue
                sink, left, head = _Sink(w, whole), w.csize, bytearray()
            take = min(len(view), left)
            if take:
                sink.feed(view[:take])
                view, at, left = view[take:], at + take, left - take
            if left == 0:
                sink.finish()
                out[w.name] = _facts_of(sink, gpu)
                todo.popleft()
                sink = None
    if todo:
        raise ValueError(f"the wheel's bytes ended before {todo[0].name} did")
    return out


class _Jobs:
    """The reads of every wheel's members, a few at a time, the largest first (they take longest): a read streams
    its bytes and inflates them as they come (outside the GIL, so reads run side by side on every core)."""

    def __init__(self, workers: int, name: str = "native-read") -> None:
        import queue

        self._queue: queue.PriorityQueue[tuple[float, int, Any, Any]] = queue.PriorityQueue()
        self._seq = itertools.count()
        self._workers = workers
        for _ in range(workers):
            threading.Thread(target=self._run, daemon=True, name=name).start()

    def submit(self, size: int, fn: Any) -> Any:
        from concurrent.futures import Future

        fut: Future[Any] = Future()
        self._queue.put((-size, next(self._seq), fn, fut))
        return fut

    def close(self) -> None:
        """The workers end once the jobs before them are done (or cancelled)."""
        for _ in range(self._workers):
            self._queue.put((float("inf"), next(self._seq), None, None))

    def _run(self) -> None:
        while True:
            _, _, fn, fut = self._queue.get()
            if fn is None:
                return
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn())
            except BaseException as err:  # noqa: BLE001 — the wheel's reader says what went wrong
                fut.set_exception(err)


_JOBS: _Jobs | None = None
_JOBS_LOCK = threading.Lock()


def _jobs() -> _Jobs:
    global _JOBS
    with _JOBS_LOCK:
        if _JOBS is None:
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2)
            _JOBS = _Jobs(max(2, cores))
        return _JOBS


# A member this large is read by a request of its own (a read per core); smaller ones share one per run
_OWN_READ = 8 << 20


def _groups(wanted: list[_Want]) -> list[list[_Want]]:
    """The members in runs read by one request each: a large member alone, the small ones between together."""
    out: list[list[_Want]] = []
    for w in wanted:
        if w.csize >= _OWN_READ or not out or out[-1][-1].csize >= _OWN_READ:
            out.append([w])
        else:
            out[-1].append(w)
    return out


def _read_members(filename: str, sha256: str, provides: tuple[str, ...], wanted: list[_Want],
                  span: Any, *, gpu: bool, source: str, first: dict[str, Any] | None = None) -> NativeFacts:
    """The wheel's facts: its members read in runs (`span(start, end)` streams bytes start..end), side by side;
    a library the streaming pass could not read is read again, whole. `first`: what one pass already read."""
    def run(group: list[_Want], whole: bool = False) -> dict[str, Any]:
        start = group[0].offset
        end = group[-1].offset + group[-1].csize + 30 + 0xFFFF * 2  # + the last local header's name and extra field
        return _read_span(span(start, end), start, group, gpu, whole=whole)

    futures = [] if first is not None else [_jobs().submit(sum(w.csize for w in g), lambda g=g: run(g))
                                            for g in _groups(wanted)]
    got: dict[str, Any] = dict(first or {})
    for f in futures:
        got.update(f.result())
    for w in wanted:
        if got.get(w.name) is _AGAIN:
            got.update(run([w], whole=True))
    meta = next((v for n, v in got.items() if _is_metadata(n)), None)
    out = [m for n, m in sorted(got.items()) if isinstance(m, Member)]
    return NativeFacts(sha256=sha256, filename=filename, provides=provides, members=tuple(out),
                       built_for_torch=built_for_torch(filename, meta) if out else None, source=source)


def _provides(members: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({n.rsplit("/", 1)[-1] for n in members if _SO.search(n)}))


def read_remote(url: str, size: int | None, sha256: str, filename: str, *, session: Any, gpu: bool,
                names_only: bool = False, vouch: Callable[[str, str], None] | None = None) -> NativeFacts:
    """Facts of a wheel on an index, by HTTP Range requests (tritonlock.native.remotezip): its central directory,
    then its shared objects, streamed (never written to disk) and inflated as they come — a request for each large
    one, one for each run of small ones. `vouch`: the file is downloaded whole in one request instead and hashed;
    where its bytes are the sha256's, its METADATA is handed to `vouch` (the integrity check then downloads none)."""
    from tritonlock.native.remotezip import RemoteZip

    z = RemoteZip(session, url, size)
    members = z.members()
    source = f"read from {filename} by ranged reads"
    if names_only:
        return NativeFacts(sha256=sha256, filename=filename, provides=_provides(members), source=source,
                           names_only=True)
    wanted = _wanted(members)
    first = None
    if vouch is not None:  # (also a wheel without shared objects: the check would download it for its METADATA)
        first = _jobs().submit(z.size, lambda: _read_whole(z, sha256, members, wanted, gpu, vouch)).result()
        if first is None:  # nothing read from other bytes counts, nor is kept (the integrity check says the rest)
            return NativeFacts(sha256=sha256, filename=filename, problem="the index serves other bytes than the "
                               "sha256 its page lists")
        source = f"read from {filename}, downloaded whole (its sha256 checked)"
    if not any(_SO.search(w.name) for w in wanted):
        return NativeFacts(sha256=sha256, filename=filename, source=source)
    return _read_members(filename, sha256, _provides(members), wanted,
                         lambda a, b: z.stream(a, min(b, z.size) - 1), gpu=gpu, source=source, first=first)


def _read_whole(z: Any, sha256: str, members: dict[str, tuple[int, int, int, int]], wanted: list[_Want], gpu: bool,
                vouch: Callable[[str, str], None]) -> dict[str, Any] | None:
    """The wanted members' facts out of one download of the whole file, hashed as it streams; None where its bytes
    are not the sha256's. Its METADATA is vouched for where the wheel has one (stored or deflated), as the integrity
    check's own download reads it; none at all is vouched as "" (nothing to compare); several are left to the check."""
    import hashlib

    digest = hashlib.sha256()

    def pieces() -> Iterator[bytes]:
        for piece in z.download():
            digest.update(piece)
            yield piece

    got = _read_span(pieces(), 0, wanted, gpu)
    if digest.hexdigest() != sha256.lower():
        return None
    meta = [n for n in members if _is_metadata(n)]
    if not meta:
        vouch(sha256, "")
    elif len(meta) == 1 and members[meta[0]][0] in (0, 8) and isinstance(got.get(meta[0]), str):
        vouch(sha256, got[meta[0]])
    return got


def read_file(path: Path, sha256: str, *, gpu: bool = True) -> NativeFacts:
    """Facts of a wheel file on disk (a wheelhouse, uv's cache)."""
    import zipfile

    with zipfile.ZipFile(path) as zf:
        members = {i.filename: (i.compress_type, i.compress_size, i.file_size, i.header_offset) for i in zf.infolist()}
    wanted = _wanted(members)
    if not any(_SO.search(w.name) for w in wanted):
        return NativeFacts(sha256=sha256, filename=path.name, source=f"read from {path}")

    def span(a: int, b: int) -> Iterator[bytes]:
        with open(path, "rb") as fh:
            fh.seek(a)
            while a < b and (chunk := fh.read(min(1 << 20, b - a))):
                a += len(chunk)
                yield chunk

    return _read_members(path.name, sha256, _provides(members), wanted, span, gpu=gpu, source=f"read from {path}")


# --- kept per sha256 -----------------------------------------------------------------------------------------------

def cache_dir() -> Path:
    """$TRITONLOCK_NATIVE_CACHE, else tritonlock's folder in the user's cache (facts are keyed by file sha256)."""
    explicit = os.environ.get("TRITONLOCK_NATIVE_CACHE")
    if explicit:
        return Path(explicit)
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(home) / "tritonlock" / _CACHE_VERSION


def cached(sha256: str, *, gpu: bool, names_only: bool = False) -> NativeFacts | None:
    try:
        d = json.loads((cache_dir() / f"{sha256}.json").read_text(encoding="utf-8"))
        facts = NativeFacts.from_json(d)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if facts.sha256 != sha256 or (gpu and any(m.gpu.startswith("not read") for m in facts.members)):
        return None
    if facts.names_only and not names_only:
        return None  # what it brings was read, not what is inside
    return facts


def keep(facts: NativeFacts) -> None:
    """Into the cache, atomically (a reader never sees half a file); a cache that cannot be written is no error."""
    if facts.problem:
        return
    from tritonlock._files import write_atomic
    from tritonlock.errors import TritonlockError

    try:
        write_atomic(cache_folder() / f"{facts.sha256}.json", json.dumps(facts.to_json(), sort_keys=True),
                     what="keep a wheel's binary facts")
    except (OSError, TritonlockError):
        pass


def cache_folder() -> Path:
    """The cache's folder, made (0700) when missing: tritonlock's own."""
    d = cache_dir()
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    return d


def _keep_done(fut: Any) -> None:
    """A guessed read that an answer confirmed: kept as any read is."""
    if not fut.cancelled() and fut.exception() is None:
        keep(fut.result())


# a lock's [[native]] table starts with the file's sha256
_NATIVE_SHA = re.compile(r'^\[\[native\]\]\s*\nsha256 = "([0-9a-f]{64})"', re.M)


def reads_likely(lock_path: Path) -> bool:
    """Whether a resolve will likely read wheels' binary facts (worth starting before uv's online answer): no lock
    yet, or the facts of a wheel the lock's [[native]] tables name are not kept. A lock without native code (or
    that cannot be read) says nothing will be: then only the online answer's wheels are read."""
    try:
        text = lock_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return True
    except (OSError, UnicodeDecodeError):
        return False
    d = cache_dir()
    return any(not (d / f"{sha}.json").is_file() for sha in _NATIVE_SHA.findall(text))


@dataclass(kw_only=True)
class Reader:
    """Reads the facts of many wheels at once (a few threads, the largest wheel first whenever it was asked for),
    each once per sha256 (and across runs through the cache); shared by the targets of one resolve. `prefetch`
    starts reads without waiting (what a first answer locks, while the decision goes on); `facts` waits for what it
    asks."""

    gpu: bool = True
    # whether reads are likely (reads_likely): a guessed closure (the lock replaced, uv's cached answer) is then
    # read while uv's online answer is awaited
    early: bool = True
    from_lock: set[str] = field(default_factory=set)  # targets whose closure was guessed from the lock replaced
    workers: int = 32  # each reads a central directory, then waits for its members (_Jobs reads those)
    read: dict[str, NativeFacts] = field(default_factory=dict)
    # the integrity check (tritonlock.lock.integrity.Early): told of each closure uv's online answer names, as its
    # reads start; the wheels it would download whole are read whole, their METADATA vouched for it
    checks: Any = None

    def __post_init__(self) -> None:
        import threading
        from concurrent.futures import Future

        self._lock = threading.Lock()
        self._pending: dict[tuple[str, bool], Future[NativeFacts]] = {}
        self._guessed: dict[tuple[str, bool, str], Future[NativeFacts]] = {}  # (sha256, names only, address)
        self._pool = _Jobs(self.workers, name="native-facts")
        self._session: Any = None
        from tritonlock.native.uvcache import Pointers

        self._uv = Pointers()  # wheels uv has unpacked in its cache are read there, listed once (first read)

    def _one(self, w: tuple[str, int | None, str, str, bool], kept: bool = True, whole: bool = False) -> NativeFacts:
        url, size, sha, name, names = w
        f = self._uv.facts(sha, name, gpu=self.gpu, names_only=names)
        if f is not None:  # (the integrity check, told of a whole read, then finds no METADATA vouched: it reads it)
            if kept:
                keep(f)
            return f
        with self._lock:
            if self._session is None:
                from tritonlock.lock.index import session

                self._session = session()
        try:
            f = read_remote(url, size, sha, name, session=self._session, gpu=self.gpu, names_only=names,
                            vouch=self.checks.vouch if whole else None)
        except Exception as err:  # noqa: BLE001 — an unreadable wheel is a fact to report, not a crash
            from tritonlock._urls import redact

            return NativeFacts(sha256=sha, filename=name, problem=redact(str(err))[:200] or type(err).__name__)
        if kept:
            keep(f)
        return f

    def _start(self, wheels: Iterable[tuple[str, int | None, str, str, bool]], guess: bool = False) -> list[Any]:
        futures = []
        with self._lock:
            # the largest first: a read starts as soon as it is asked for while workers are free, so asking in this
            # order is what puts the longest reads first (the rest queue behind them, the largest first too)
            for url, size, sha, name, names in sorted(dict.fromkeys(wheels), key=lambda w: -(w[1] or 0)):
                have = self.read.get(sha)
                if have is not None and (names or not have.names_only):
                    continue
                pending = self._pending.get((sha, names)) or (self._pending.get((sha, False)) if names else None)
                if pending is not None:
                    futures.append(pending)
                    continue
                # a guessed read of this very address: an index's answer names it with this sha256, so its facts
                # are as if read now, and kept
                guessed = None if guess else self._guessed.pop((sha, names, url), None) or (
                    self._guessed.pop((sha, False, url), None) if names else None)
                if guessed is not None:
                    self._pending[(sha, names)] = guessed
                    guessed.add_done_callback(_keep_done)
                    futures.append(guessed)
                    continue
                hit = cached(sha, gpu=self.gpu, names_only=names)
                if hit is not None:
                    self.read[sha] = hit
                    continue
                job = (url, size, sha, name, names)
                whole = self.checks is not None and not names and self.checks.whole(sha, size)
                if guess:
                    if (sha, names, url) not in self._guessed and (sha, False, url) not in self._guessed:
                        fut = self._guessed[(sha, names, url)] = self._pool.submit(
                            size or 0, lambda job=job, whole=whole: self._one(job, kept=False, whole=whole))
                        if whole:
                            self.checks.reading(sha, fut)
                    continue
                fut = self._pending[(sha, names)] = self._pool.submit(
                    size or 0, lambda job=job, whole=whole: self._one(job, whole=whole))
                if whole:
                    self.checks.reading(sha, fut)
                futures.append(fut)
        return futures

    def prefetch(self, wheels: Iterable[tuple[str, int | None, str, str, bool]], *, guess: bool = False) -> None:
        """Start reading these wheels' facts (what `facts` will ask for soon), without waiting. `guess`: the wheels
        of a guessed closure (uv's answer from its cache, the lock being replaced), whose addresses and sha256 no
        index has just named: what is read is used, and kept, only once an answer names the same address and sha256
        (a lock edited to pair a known sha256 with other bytes never gives that sha256 facts)."""
        self._start(wheels, guess=guess)

    def seen(self, wheels: Iterable[tuple[str, int | None, str, str, bool]],
             packages: tuple[LockedPackage, ...]) -> None:
        """A closure uv's online answer names: the reads of its wheels start, and the integrity check's."""
        self.prefetch(wheels)
        if self.checks is not None:
            self.checks.start(packages)

    def prefetch_lock(self, lock_path: Path, wanted: Callable[[Selection, tuple[LockedPackage, ...]], list[Any]],
                      intent_hash: str) -> set[str]:
        """Start reading, as a guess, what the lock being replaced locks for each target (`wanted(selection,
        packages)`: its wheels); the names of those targets. Only a lock of the same intent guesses (another intent
        locks other packages: uv's cached answer is the better guess then); one that cannot be read guesses nothing."""
        from tritonlock.lock.lockfile import read_lock

        try:
            old = read_lock(lock_path)
            if old.intent_hash != intent_hash:
                return set()
            # every target's wheels asked for at once (the largest of all first, whichever target locks it)
            self.prefetch([w for t in old.targets if t.selection.ok for w in wanted(t.selection, t.packages)],
                          guess=True)
        except Exception:  # noqa: BLE001 — a lock that cannot be read is replaced; it guesses nothing
            return set()
        return {t.name for t in old.targets if t.selection.ok}

    def facts(self, wheels: Iterable[tuple[str, int | None, str, str, bool]]) -> dict[str, NativeFacts]:
        """Facts by sha256 of each (url, size, sha256, filename, names only), from the cache or the index; a wheel
        that cannot be read gets facts whose `problem` says why (the rule then cannot check that package)."""
        for fut in self._start(wheels):
            f = fut.result()
            with self._lock:
                have = self.read.get(f.sha256)
                if have is None or have.names_only:
                    self.read[f.sha256] = f
        with self._lock:
            return dict(self.read)

    def close(self) -> None:
        """Reads not started are not made; the threads end with the reads under way."""
        with self._lock:
            for fut in (*self._pending.values(), *self._guessed.values()):
                fut.cancel()
        self._pool.close()
