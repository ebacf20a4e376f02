"""Native code in locked wheels, read without installing (tritonlock.native reads the ELF files): for each extension
module and bundled library, what it needs and carries; for each wheel, the libraries it brings and the torch it was
built for. Read from the index with ranged reads (the zip's central directory, then only the members and bytes
needed) or, where those fail, from the whole file downloaded within a bound; or from a file on disk; and kept per
file sha256 so that a later resolve reads nothing again. Every read is bounded (tritonlock.native.remotezip: the
bytes asked for, a deadline per wheel and per resolve; here: what a member inflates to, in all and against its
compressed size, and the memory kept while reading), and a read that fails is a failed read, said as one — never
"no native code"."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tritonlock.models import LockedPackage, NativeFacts, Selection
from tritonlock.native.elf import SO as _SO
from tritonlock.native.members import Jobs, Want, file_reader, is_metadata, jobs, read_span, wanted_members
from tritonlock.native.members import provides, read_members

# v2: a member's `gpu` says whether its GPU code was read ("read", "none", or why not); v3: GPU code is read where a
# module links an auditwheel-renamed CUDA library ("libcudart-5e6f7a8b.so.12"), which v2 facts left unread; v4: the
# wheel's import names and what they import (tops, imports), each member's dlopen names and torch symbols; v5: the
# extensions the package loads only inside a `try` that catches their failure (guarded)
_CACHE_VERSION = "native-v5"
READER_VERSION = _CACHE_VERSION  # what the facts' shape and reading are: a shipped fact of another is not used

# A wheel downloaded whole (where ranged reads failed) has this many bytes at most; it is written to a temporary file
WHOLE_MAX = 4 << 30
# All reads of one resolve end after RESOLVE_SECONDS ($TRITONLOCK_NATIVE_TIMEOUT); each request of a wheel's read
# ends sooner by its own (tritonlock.native.remotezip.request_deadline: 30 s and a second per 256 KiB asked for)
RESOLVE_SECONDS = 600.0


def resolve_seconds() -> float:
    try:
        value = float(os.environ.get("TRITONLOCK_NATIVE_TIMEOUT", ""))
    except ValueError:
        return RESOLVE_SECONDS
    return value if value > 0 else RESOLVE_SECONDS


def may_hold_native_code(filename: str, any_of: frozenset[str] = frozenset()) -> bool:
    """A wheel tagged for a platform (not `*-none-any`) may carry native code; an sdist is not read. So may a
    `*-none-any` wheel of a package in `any_of` (normalized names: compat/packages.toml [[cuda-build-pick]]'s, which
    pick a per-CUDA library at run time — bitsandbytes 0.42 and older ship theirs in a py3-none-any wheel)."""
    if not filename.endswith(".whl"):
        return False
    if not filename[:-4].endswith("-any"):
        return True
    return bool(any_of) and re.sub(r"[-_.]+", "-", filename.split("-", 1)[0]).lower() in any_of


def read_remote(url: str, size: int | None, sha256: str, filename: str, *, session: Any, gpu: bool,
                names_only: bool = False, vouch: Callable[[str, str], None] | None = None,
                deadline: Any = None) -> NativeFacts:
    """Facts of a wheel on an index, by HTTP Range requests (tritonlock.native.remotezip): its central directory,
    then its shared objects, streamed (never written to disk) and inflated as they come — a request for each large
    one, one for each run of small ones. `vouch`: the file is downloaded whole in one request instead and hashed;
    where its bytes are the sha256's, its METADATA is handed to `vouch` (the integrity check then downloads none).
    Where the ranged reads fail (an index that does not answer HTTP Range, answers it wrongly, an answer cut off, a
    zip whose directory disagrees with its bytes), the file is downloaded whole — WHOLE_MAX at most, within the
    deadline — into a temporary file, its sha256 checked, and read there; where that fails too, a ReadFailed says
    both causes. A `file:` URL is read from the disk. Each request ends by its own deadline; `deadline`
    (remotezip.Deadline, the resolve's): when reading stops, for good (an OutOfTime, no download after it)."""
    from urllib.parse import unquote, urlsplit

    from tritonlock.native.remotezip import OutOfTime, ReadFailed

    if urlsplit(url).scheme == "file":
        return read_file(Path(unquote(urlsplit(url).path)), sha256, gpu=gpu, names_only=names_only, verify=True,
                         filename=filename)
    try:
        return _read_ranged(url, size, sha256, filename, session=session, gpu=gpu, names_only=names_only,
                            vouch=vouch, deadline=deadline)
    except OutOfTime:
        raise
    except Exception as err:  # noqa: BLE001 — whatever failed, the whole file is the next try
        first = _said(err)
    try:
        return _read_downloaded(url, size, sha256, filename, session=session, gpu=gpu, names_only=names_only,
                                deadline=deadline, why=first)
    except OutOfTime as err:
        raise OutOfTime(f"{first}; then, downloading it whole: {_said(err)}") from None
    except Exception as err:  # noqa: BLE001
        raise ReadFailed(f"{first}; then, downloading it whole: {_said(err)}") from None


def _said(err: BaseException) -> str:
    from tritonlock._urls import redact

    text = str(err).splitlines()[0] if str(err).strip() else type(err).__name__
    return "".join(c if c.isprintable() else " " for c in redact(text))[:400]


def _read_ranged(url: str, size: int | None, sha256: str, filename: str, *, session: Any, gpu: bool,
                 names_only: bool, vouch: Callable[[str, str], None] | None, deadline: Any) -> NativeFacts:
    from tritonlock.native.remotezip import RemoteZip

    z = RemoteZip(session, url, size, deadline=deadline)
    members = z.members()
    source = f"read from {filename} by ranged reads"
    if names_only:
        return NativeFacts(sha256=sha256, filename=filename, provides=provides(members), source=source,
                           names_only=True)
    wanted = wanted_members(members, z.crc)
    first = None
    if vouch is not None:  # (also a wheel without shared objects: the check would download it for its METADATA)
        first = jobs().submit(z.size, lambda: _read_whole(z, sha256, members, wanted, gpu, vouch)).result()
        if first is None:  # nothing read from other bytes counts, nor is kept (the integrity check says the rest)
            return NativeFacts(sha256=sha256, filename=filename, problem="the index serves other bytes than the "
                               "sha256 its page lists")
        source = f"read from {filename}, downloaded whole (its sha256 checked)"
    if not any(_SO.search(w.name) for w in wanted):
        return NativeFacts(sha256=sha256, filename=filename, source=source)
    return read_members(filename, sha256, provides(members), wanted,
                         lambda a, b: z.stream(a, min(b, z.size) - 1), gpu=gpu, source=source, first=first)


def _read_whole(z: Any, sha256: str, members: dict[str, tuple[int, int, int, int]], wanted: list[Want], gpu: bool,
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

    stream = pieces()
    got = read_span(stream, 0, wanted, gpu)
    for _ in stream:  # (the rest of the file, for its hash)
        pass
    if digest.hexdigest() != sha256.lower():
        return None
    meta = [n for n in members if is_metadata(n)]
    if not meta:
        vouch(sha256, "")
    elif len(meta) == 1 and members[meta[0]][0] in (0, 8) and isinstance(got.get(meta[0]), str):
        vouch(sha256, got[meta[0]])
    return got


def _read_downloaded(url: str, size: int | None, sha256: str, filename: str, *, session: Any, gpu: bool,
                     names_only: bool, deadline: Any, why: str) -> NativeFacts:
    """The wheel downloaded whole into a temporary file (WHOLE_MAX at most), its sha256 checked, then read there."""
    import hashlib
    import tempfile

    from tritonlock.native.remotezip import ReadFailed, RemoteZip

    if size is not None and size > WHOLE_MAX:
        raise ReadFailed(f"it has {size} bytes, more than the {WHOLE_MAX >> 30} GiB downloaded whole")
    z = RemoteZip(session, url, size, deadline=deadline)
    if z.size > WHOLE_MAX:
        raise ReadFailed(f"it has {z.size} bytes, more than the {WHOLE_MAX >> 30} GiB downloaded whole")
    digest = hashlib.sha256()
    with tempfile.TemporaryFile(prefix="tritonlock-wheel-") as fh:
        for piece in z.download():
            digest.update(piece)
            fh.write(piece)
        fh.flush()
        if digest.hexdigest() != sha256.lower():
            raise ReadFailed(f"the index serves other bytes than the sha256 its page lists ({digest.hexdigest()[:16]}"
                             f"… for {sha256[:16]}…)")
        facts = _read_open(fh, z.size, sha256, filename, gpu=gpu, names_only=names_only,
                           source=f"read from {filename}, downloaded whole (its sha256 checked; {why})")
    return facts


def read_file(path: Path, sha256: str, *, gpu: bool = True, names_only: bool = False, verify: bool = False,
              filename: str | None = None) -> NativeFacts:
    """Facts of a wheel file on disk (a wheelhouse, uv's cache, a `file:` URL): only a regular file (a FIFO or a
    device is refused, never waited on or read without end), WHOLE_MAX at most; with `verify`, its sha256 checked
    first (the facts are kept by it)."""
    import errno
    import hashlib
    import stat

    from tritonlock.native.remotezip import ReadFailed

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "is not a regular file (a pipe, socket or device)", str(path))
        if st.st_size > WHOLE_MAX:
            raise ReadFailed(f"{path} has {st.st_size} bytes, more than the {WHOLE_MAX >> 30} GiB read of a wheel")
        if verify:
            digest = hashlib.sha256()
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
            if digest.hexdigest() != sha256.lower():
                raise ReadFailed(f"{path} does not have the sha256 the lock pins ({digest.hexdigest()[:16]}… for "
                                 f"{sha256[:16]}…)")
        return _read_open(fh, st.st_size, sha256, filename or Path(path).name, gpu=gpu, names_only=names_only,
                          source=f"read from {path}")


def _read_open(fh: IO[bytes], size: int, sha256: str, filename: str, *, gpu: bool, names_only: bool,
               source: str) -> NativeFacts:
    """Facts of a wheel in an open file of `size` bytes: its directory checked as an index's is, its members read
    as they are from an index."""
    from tritonlock.native.remotezip import ZipBroken, directory

    read = file_reader(fh, limit=size + 1)

    def get(a: int, b: int) -> bytes:
        data = read(a, b - a + 1)
        if len(data) != b - a + 1:
            raise ZipBroken(f"bytes {a}-{b} are past the file's end")
        return data

    members, crcs = directory(get, size)
    if names_only:
        return NativeFacts(sha256=sha256, filename=filename, provides=provides(members), source=source,
                           names_only=True)
    wanted = wanted_members(members, crcs)
    if not any(_SO.search(w.name) for w in wanted):
        return NativeFacts(sha256=sha256, filename=filename, source=source)

    def span(a: int, b: int) -> Iterator[bytes]:
        b = min(b, size)
        while a < b:
            chunk = read(a, min(1 << 20, b - a))
            if not chunk:
                return
            a += len(chunk)
            yield chunk

    return read_members(filename, sha256, provides(members), wanted, span, gpu=gpu, source=source)


# --- kept per sha256 -----------------------------------------------------------------------------------------------

def cache_dir() -> Path:
    """$TRITONLOCK_NATIVE_CACHE, else tritonlock's folder in the user's cache (facts are keyed by file sha256)."""
    explicit = os.environ.get("TRITONLOCK_NATIVE_CACHE")
    if explicit:
        return Path(explicit)
    from tritonlock._files import user_cache

    return Path(user_cache(_CACHE_VERSION))


# A kept fact is this large at most (vLLM's largest is about 30 kB): a larger file in the cache is not read
KEPT_FILE_MAX = 16 << 20


def cached(sha256: str, *, gpu: bool, names_only: bool = False) -> NativeFacts | None:
    """The facts kept for this sha256; None where none are (or the file there is not a regular file of at most
    KEPT_FILE_MAX bytes holding them: a FIFO, a link to a device or a huge file is passed over, never waited on)."""
    from tritonlock._files import read_text

    if not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
        return None
    try:
        d = json.loads(read_text(cache_dir() / f"{sha256}.json", limit=KEPT_FILE_MAX))
        facts = NativeFacts.from_json(d)
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    if facts.sha256 != sha256 or (gpu and any(m.gpu.startswith("not read") for m in facts.members)):
        return None
    if facts.names_only and not names_only:
        return None  # what it brings was read, not what is inside
    return facts


def shipped(sha256: str, *, gpu: bool, names_only: bool = False) -> NativeFacts | None:
    """The facts compat/native/ ships for this sha256, read by this reader's version (tritonlock.native.shipped);
    kept in the user's cache as a read would be. None where it ships none."""
    from tritonlock.native.shipped import lookup

    facts = lookup(sha256, READER_VERSION)
    if facts is None or (facts.names_only and not names_only):
        return None
    if gpu and any(m.gpu.startswith("not read") for m in facts.members):
        return None
    keep(facts)
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
    from tritonlock._files import read_text

    try:
        text = read_text(lock_path)
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
    workers: int = 32  # each reads a central directory, then waits for its members (Jobs reads those)
    read: dict[str, NativeFacts] = field(default_factory=dict)
    # the integrity check (tritonlock.lock.integrity.Early): told of each closure uv's online answer names, as its
    # reads start; the wheels it would download whole are read whole, their METADATA vouched for it
    checks: Any = None
    # the sha256s `facts` was asked for: what the decision used (a failed read among them is said: `unread`)
    asked: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        import threading
        from concurrent.futures import Future

        self._lock = threading.Lock()
        self._pending: dict[tuple[str, bool], Future[NativeFacts]] = {}
        self._guessed: dict[tuple[str, bool, str], Future[NativeFacts]] = {}  # (sha256, names only, address)
        self._held: dict[str, list[Future[NativeFacts]]] = {}  # reads held back from the cache (`hold`), by sha256
        self._pool = Jobs(self.workers, name="native-facts")
        self._session: Any = None
        import time

        from tritonlock.native.remotezip import Deadline
        from tritonlock.native.uvcache import Pointers

        self._uv = Pointers()  # wheels uv has unpacked in its cache are read there, listed once (first read)
        secs = resolve_seconds()
        # every read of this resolve ends by then (each wheel's own deadline comes first where it is sooner)
        self.deadline = Deadline(at=time.monotonic() + secs, what=f"the {secs:.0f} s allowed for reading the wheels "
                                 "of one resolve ($TRITONLOCK_NATIVE_TIMEOUT)")

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
                from tritonlock.native.remotezip import watched

                self._session = watched(session())
        from tritonlock._link import LINK

        try:
            with LINK.read():  # (the decision waits for it: the integrity check's downloads give way)
                f = read_remote(url, size, sha, name, session=self._session, gpu=self.gpu, names_only=names,
                                vouch=self.checks.vouch if whole else None, deadline=self.deadline)
        except Exception as err:  # noqa: BLE001 — an unreadable wheel is a fact to report (unread), not a crash
            return NativeFacts(sha256=sha, filename=name, problem=_said(err))
        if kept:
            keep(f)
        return f

    def _start(self, wheels: Iterable[tuple[str, int | None, str, str, bool]], guess: bool = False,
               hold: bool = False) -> list[Any]:
        futures = []
        with self._lock:
            # the largest first: a read starts as soon as it is asked for while workers are free, so asking in this
            # order is what puts the longest reads first (the rest queue behind them, the largest first too)
            for url, size, sha, name, names in sorted(dict.fromkeys(wheels), key=lambda w: -(w[1] or 0)):
                if not (guess or hold):  # a read held back that this answer names: kept now
                    self._keep_held(sha)
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
                    if hold:
                        self._held.setdefault(sha, []).append(guessed)
                    else:
                        guessed.add_done_callback(_keep_done)
                    futures.append(guessed)
                    continue
                hit = cached(sha, gpu=self.gpu, names_only=names) or shipped(sha, gpu=self.gpu, names_only=names)
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
                    size or 0, lambda job=job, whole=whole, kept=not hold: self._one(job, kept=kept, whole=whole))
                if hold:
                    self._held.setdefault(sha, []).append(fut)
                if whole:
                    self.checks.reading(sha, fut)
                futures.append(fut)
        return futures

    def _keep_held(self, sha: str) -> None:
        for fut in self._held.pop(sha, ()):
            fut.add_done_callback(_keep_done)

    def prefetch(self, wheels: Iterable[tuple[str, int | None, str, str, bool]], *, guess: bool = False,
                 hold: bool = False) -> None:
        """Start reading these wheels' facts (what `facts` will ask for soon), without waiting. `guess`: the wheels
        of a guessed closure (uv's answer from its cache, the lock being replaced), whose addresses and sha256 no
        index has just named: what is read is used, and kept, only once an answer names the same address and sha256
        (a lock edited to pair a known sha256 with other bytes never gives that sha256 facts). `hold`: the wheels of
        an answer not yet confirmed (the decision's search on uv's cached answers): read for it to use, but kept
        only once `keep` confirms them or an answer asked without `hold` names the same sha256."""
        self._start(wheels, guess=guess, hold=hold)

    def keep(self, shas: Iterable[str]) -> None:
        """The reads held back (`hold`) of these sha256s: their answers are confirmed, their facts kept."""
        with self._lock:
            for sha in shas:
                self._keep_held(sha)

    def seen(self, wheels: Iterable[tuple[str, int | None, str, str, bool]],
             packages: tuple[LockedPackage, ...], *, hold: bool = False) -> None:
        """A closure uv's online answer names (`hold`: an answer not yet confirmed): the reads of its wheels start,
        and the integrity check's."""
        self.prefetch(wheels, hold=hold)
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

    def facts(self, wheels: Iterable[tuple[str, int | None, str, str, bool]], *,
              hold: bool = False) -> dict[str, NativeFacts]:
        """Facts by sha256 of each (url, size, sha256, filename, names only), from the cache or the index; a wheel
        that cannot be read gets facts whose `problem` says why (the rule then cannot check that package). `hold`:
        as `prefetch`'s."""
        wheels = list(wheels)
        with self._lock:
            self.asked.update(w[2] for w in wheels)
        for fut in self._start(wheels, hold=hold):
            f = fut.result()
            with self._lock:
                have = self.read.get(f.sha256)
                if have is None or have.names_only:
                    self.read[f.sha256] = f
        with self._lock:
            return dict(self.read)

    def unread(self, shas: Iterable[str]) -> dict[str, NativeFacts]:
        """Of these sha256s, the wheels whose facts could not be read (by ranges, nor downloaded whole): sha256 ->
        facts whose `problem` says why. Nothing about such a wheel's native code is known: the caller says so."""
        with self._lock:
            return {sha: f for sha in shas if (f := self.read.get(sha)) is not None and f.problem}

    def close(self) -> None:
        """Reads not started are not made; the threads end with the reads under way."""
        with self._lock:
            for fut in (*self._pending.values(), *self._guessed.values()):
                fut.cancel()
        self._pool.close()
