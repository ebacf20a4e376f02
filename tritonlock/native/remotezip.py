"""A wheel on an index, read without downloading it: HTTP Range reads of the zip central directory and single
members. Every read is bounded — the bytes asked for and not one more, a deadline a stalled or trickling answer
cannot outlast (a watchdog shuts the connection), a directory checked against the file before any member is trusted
— and every answer that is not what was asked is a ReadFailed naming what went wrong, never a short or a long read."""

from __future__ import annotations

import heapq
import itertools
import os
import re
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tritonlock.errors import IndexError_

# A request waits this long for its connection, and a read this long for its next byte before it counts as stalled
# (uv's own default read timeout; UV_HTTP_TIMEOUT / UV_REQUEST_TIMEOUT set it for both, as for uv)
CONNECT_SECONDS = 10.0
TRIES = 3  # a request that failed on the way (a connection reset, a 5xx, a stall) is tried again, deadline allowing
# One request (and its answer) ends after REQUEST_SECONDS, plus a second for each REQUEST_RATE bytes it asks for: a
# trickling answer ends there (counted from when the request is made: a read waiting its turn is not slowed by it)
REQUEST_SECONDS = 30.0
REQUEST_RATE = 256 << 10
CHUNK = 1 << 20
# A zip's central directory and its entries at most (a wheel with 100,000 files has a directory of about 10 MB)
DIRECTORY_MAX = 64 << 20
ENTRIES_MAX = 1_000_000


def stall_seconds() -> float:
    for name in ("UV_HTTP_TIMEOUT", "UV_REQUEST_TIMEOUT"):
        try:
            value = float(os.environ.get(name, ""))
        except ValueError:
            continue
        if value > 0:
            return value
    return 30.0


class ReadFailed(IndexError_):
    """A wheel's bytes could not be read as asked: the index's answer, or the zip it holds, is not what it should be
    (a failed read of a wheel's facts is never taken as "no native code")."""


class NoRange(ReadFailed):
    """The index answered a Range request with the whole file (HTTP 200), as a static file server does."""


class OutOfTime(ReadFailed):
    """The deadline passed (the read was stopped there)."""


class ZipBroken(ValueError, ReadFailed):
    """The zip's directory disagrees with the file (its entry count, sizes or offsets), or a member with its entry."""


@dataclass(frozen=True)
class Deadline:
    """When reading must stop (time.monotonic()), and in words what allowed that long."""

    at: float
    what: str

    def left(self) -> float:
        """Seconds left; OutOfTime once there are none."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise OutOfTime(f"{self.what} ran out")
        return left

    def sooner(self, other: Deadline | None) -> Deadline:
        return self if other is None or self.at <= other.at else other


NEVER = Deadline(at=float("inf"), what="")


def request_deadline(n: int, outer: Deadline | None = None) -> Deadline:
    """The deadline of a request for `n` bytes made now (REQUEST_SECONDS and a second per REQUEST_RATE bytes), or
    `outer` (the resolve's) where that comes first."""
    secs = REQUEST_SECONDS + n / REQUEST_RATE
    own = Deadline(at=time.monotonic() + secs, what=f"the {secs:.0f} s allowed for a request of "
                                                     f"{n / 1e6:.1f} MB" if n >= 100_000 else
                   f"the {secs:.0f} s allowed for a request of {n} bytes")
    return own.sooner(outer)


# --- the watchdog: a connection whose deadline passed is shut, whatever the read is waiting for ----------------

class _Held:
    """The connection one request is using (set by the pool as it hands it out, then by the answer), and the
    deadline the watchdog shuts it at."""

    __slots__ = ("conn", "resp", "killed", "deadline")

    def __init__(self, deadline: Deadline) -> None:
        self.conn: Any = None
        self.resp: Any = None
        self.killed = False
        self.deadline = deadline

    def shut(self) -> None:
        self.killed = True
        raw = getattr(self.resp, "raw", None)
        # the socket, wherever it is: the connection's (the connection lets go of it once an answer that ends with
        # the connection's close is under way), then the answer's own file over it
        fp = getattr(getattr(getattr(raw, "_fp", None), "fp", None), "raw", None)
        for sock in (getattr(getattr(raw, "_connection", None), "sock", None), getattr(fp, "_sock", None),
                     getattr(self.conn, "sock", None)):
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)  # (a recv() blocked in another thread returns at once)
                except OSError:
                    pass


class _Watch:
    """One thread that shuts the connections of requests whose deadline passed."""

    def __init__(self) -> None:
        self._heap: list[list[Any]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, at: float, held: _Held) -> list[Any]:
        entry = [at, next(self._seq), held]
        with self._cond:
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="tritonlock-read-watch")
                self._thread.start()
            self._cond.notify()
        return entry

    def disarm(self, entry: list[Any]) -> None:
        with self._cond:  # (after this, the connection — back in its pool, perhaps another request's — is not shut)
            entry[2] = None

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][2] is None:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(min(wait, 3600))
                    continue
                held = heapq.heappop(self._heap)[2]
                if held is not None:
                    held.shut()  # (under the lock: never a connection its request has let go of; shutdown is quick)


_WATCH = _Watch()
_CURRENT = threading.local()  # the _Held of the request this thread is making


def watched(session: Any) -> Any:
    """The session, its connection pools made to tell the watchdog which connection each request takes (so that a
    deadline also ends an answer whose headers trickle in); a session whose pools are not urllib3's is left as is
    (the watchdog then sees the connection once the headers are in)."""
    pools = _pools()
    for adapter in getattr(session, "adapters", {}).values():
        manager = getattr(adapter, "poolmanager", None)
        if pools is not None and manager is not None and isinstance(getattr(manager, "pool_classes_by_scheme", None),
                                                                    dict):
            manager.pool_classes_by_scheme = pools
    return session


_POOLS: dict[str, type] | None = None


def _pools() -> dict[str, type] | None:
    global _POOLS
    if _POOLS is None:
        try:
            from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
        except ImportError:  # pragma: no cover — requests brings urllib3
            return None

        def told(base: type) -> type:
            def _get_conn(self: Any, timeout: float | None = None) -> Any:
                conn = base._get_conn(self, timeout)  # type: ignore[attr-defined]
                held = getattr(_CURRENT, "held", None)
                if held is not None:
                    held.conn = conn
                return conn

            return type(f"Watched{base.__name__}", (base,), {"_get_conn": _get_conn})

        _POOLS = {"http": told(HTTPConnectionPool), "https": told(HTTPSConnectionPool)}
    return _POOLS


def _shown(url: str) -> str:
    from tritonlock._urls import redact

    return redact(url)


class RemoteZip:
    """A wheel on an index, read without downloading it: the central directory, then only the members asked for;
    each request within its own deadline (request_deadline) and `deadline` (the resolve's, or a caller's)."""

    def __init__(self, session: object, url: str, size: int | None, *, deadline: Deadline | None = None) -> None:
        self.session, self.url = session, url
        self._keyring = False  # asked once the index answered 401/403, as pip and the index client do
        self.deadline = deadline or NEVER
        self.bytes_read = 0
        self.crc: dict[str, int] = {}  # name -> the CRC-32 its directory entry states
        self._members: dict[str, tuple[int, int, int, int]] | None = None  # name -> (method, csize, usize, offset)
        self.size = size if size is not None else self._length()

    # -- requests ---------------------------------------------------------------------------------------------

    def _request(self, method: str, headers: dict[str, str], n: int) -> tuple[Any, _Held, list[Any]]:
        """One request for `n` bytes, its connection watched until its deadline; (answer, what the watchdog shuts,
        its entry)."""
        deadline = request_deadline(n, self.deadline)
        left = deadline.left()
        held = _Held(deadline)
        entry = _WATCH.arm(deadline.at, held)
        _CURRENT.held = held
        from tritonlock.lock.index import credentials

        try:
            # the credentials the index's pages were read with (written in its URL, learned from the intent or pip's
            # configuration, ~/.netrc; keyring after a 401): sent to the index's own host only, as uv and pip do
            auth = credentials(self.url, keyring=self._keyring)
            resp = self.session.request(  # type: ignore[attr-defined]
                method, self.url, headers={"Accept-Encoding": "identity", **headers}, stream=True, auth=auth,
                allow_redirects=True, timeout=(min(CONNECT_SECONDS, left), min(stall_seconds(), left)))
        except Exception as err:  # noqa: BLE001 — every way a request fails is a failed read, said in words
            _WATCH.disarm(entry)
            raise self._broke(err, held, 0) from None
        finally:
            _CURRENT.held = None
        held.resp = resp
        return resp, held, entry

    def _keyring_has(self) -> bool:
        """Whether keyring holds credentials for this file's index (asked once, after the index wanted some)."""
        from tritonlock.lock.index import credentials, network

        self._keyring = True
        return bool(network().keyring) and credentials(self.url, keyring=True) is not None

    def _broke(self, err: BaseException, held: _Held, got: int) -> ReadFailed:
        if held.killed or isinstance(err, OutOfTime):
            return OutOfTime(f"{held.deadline.what} ran out")
        said = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        if "timed out" in said.lower() or "timeout" in type(err).__name__.lower():
            return _Stalled(f"the index sent nothing for {stall_seconds():g} s"
                            + (f" after {got} bytes" if got else ""))
        return _Transient(f"the connection failed{f' after {got} bytes' if got else ''} ({_shown(said)})")

    def _body(self, resp: Any, held: _Held, want: int | None, what: str) -> Iterator[bytes]:
        """The answer's body: exactly `want` bytes (None: up to the end, `self.size` at most), in pieces; an answer
        that sends more than that, or fewer, is a ReadFailed."""
        raw = resp.raw
        cap = want if want is not None else self.size
        got = 0
        try:
            while got < cap:
                piece = raw.read(min(CHUNK, cap - got), decode_content=False)
                if not piece:
                    break
                got += len(piece)
                self.bytes_read += len(piece)
                yield piece
            more = raw.read(1, decode_content=False) if got == cap else b""
        except ReadFailed:
            raise
        except Exception as err:  # noqa: BLE001
            raise self._broke(err, held, got) from None
        if more:
            raise ReadFailed(f"the index answered {what} with more bytes than the {cap} asked for")
        if want is not None and got != want:
            raise ReadFailed(f"the index's answer to {what} was cut off ({got} of {want} bytes)")

    def _answered(self, headers: dict[str, str], what: str, ok: int, check: Callable[[Any], None],
                  n: int) -> Iterator[tuple[Any, _Held]]:
        """The one answer of status `ok` to a GET (`check` raising for one that is not what was asked), its
        connection watched; a request that failed on the way, a 408, 429 or 5xx, or a stall before the answer is
        asked again (TRIES in all, deadline allowing). The connection is let go when the caller is done."""
        last: ReadFailed | None = None
        for attempt in range(TRIES):
            if attempt:
                time.sleep(min(0.5 * attempt, max(0.0, self.deadline.at - time.monotonic())))
            try:
                resp, held, entry = self._request("GET", headers, n)
            except _Transient as err:
                last = err
                continue
            try:
                status = resp.status_code
                if status in (401, 403) and not self._keyring and self._keyring_has():
                    last = _Transient(f"the index answered {what} with HTTP {status}")
                    continue
                if status in (408, 429) or status >= 500:
                    last = _Transient(f"the index answered {what} with HTTP {status}")
                    continue
                if status == 200 and ok == 206:
                    raise NoRange(f"the index answered {what} with the whole file (HTTP 200): it does not answer "
                                  "HTTP Range requests")
                if status != ok:
                    raise ReadFailed(f"the index answered {what} with HTTP {status}")
                check(resp)
                yield resp, held
                return
            finally:
                _WATCH.disarm(entry)
                resp.close()
        assert last is not None
        raise type(last)(f"{last} ({TRIES} tries)")

    def _ranged(self, start: int, end: int) -> Iterator[bytes]:
        """Bytes start..end (inclusive) in pieces, from one request (asked again where it failed before its first
        byte came)."""
        what = f"a request for bytes {start}-{end}"
        for resp, held in self._answered({"Range": f"bytes={start}-{end}"}, what, 206,
                                         lambda resp: self._check_range(resp, start, end, what), end - start + 1):
            yield from self._body(resp, held, end - start + 1, what)

    def _check_range(self, resp: Any, start: int, end: int, what: str) -> None:
        encoding = resp.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise ReadFailed(f"the index answered {what} encoded ({encoding}), not as the file's own bytes")
        said = resp.headers.get("Content-Range", "")
        m = re.fullmatch(r"\s*bytes\s+([0-9]+)-([0-9]+)/([0-9]+|\*)\s*", said)
        if not m or (int(m[1]), int(m[2])) != (start, end) or (m[3] != "*" and int(m[3]) != self.size):
            raise ReadFailed(f"the index answered {what} of a {self.size}-byte file with "
                             f"{('Content-Range ' + repr(said[:80])) if said else 'no Content-Range'}")
        length = resp.headers.get("Content-Length")
        if length is not None and length.strip() != str(end - start + 1):
            raise ReadFailed(f"the index answered {what} with Content-Length {length.strip()[:20]}, not "
                             f"{end - start + 1}")

    def _length(self) -> int:
        what = "a HEAD request"
        resp, held, entry = self._request("HEAD", {}, 0)
        try:
            length = resp.headers.get("Content-Length", "") if resp.status_code == 200 else ""
            if not length.strip().isdigit():
                raise ReadFailed(f"the index answered {what} with HTTP {resp.status_code} and "
                                 f"{'Content-Length ' + repr(length[:20]) if length else 'no Content-Length'}: the "
                                 "file's size is not known")
            return int(length)
        finally:
            _WATCH.disarm(entry)
            resp.close()

    # -- reads --------------------------------------------------------------------------------------------------

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes start..end (inclusive) of the file."""
        return self._get(start, end)

    def _get(self, start: int, end: int) -> bytes:
        """Bytes start..end (inclusive)."""
        if not 0 <= start <= end < self.size:
            raise ZipBroken(f"bytes {start}-{end} are outside the {self.size}-byte file")
        return b"".join(self._ranged(start, end))

    def get(self, start: int, end: int) -> bytes:
        """Bytes start..end (inclusive) of the wheel file itself."""
        return self._get(start, end)

    def stream(self, start: int, end: int, *, chunk: int = CHUNK) -> Iterator[bytes]:
        """Bytes start..end (inclusive) in pieces as they arrive, in one request (many members at once cost one
        round trip, not several each)."""
        if not 0 <= start <= end < self.size:
            raise ZipBroken(f"bytes {start}-{end} are outside the {self.size}-byte file")
        return self._ranged(start, end)

    def download(self, *, chunk: int = CHUNK) -> Iterator[bytes]:
        """The whole file in pieces as they arrive, in one plain GET (as an installer downloads it): exactly
        `size` bytes."""
        what = "a download of the whole file"

        def check(resp: Any) -> None:
            encoding = resp.headers.get("Content-Encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise ReadFailed(f"the index answered {what} encoded ({encoding}), not as the file's own bytes")
            length = resp.headers.get("Content-Length")
            if length is not None and length.strip() != str(self.size):
                raise ReadFailed(f"the index answered {what} with Content-Length {length.strip()[:20]}, not the "
                                 f"{self.size} bytes its page lists")

        for resp, held in self._answered({}, what, 200, check, self.size):
            yield from self._body(resp, held, self.size, what)

    def members(self) -> dict[str, tuple[int, int, int, int]]:
        if self._members is None:
            self._members, self.crc = directory(self._get, self.size)
        return self._members

    def span(self, name: str) -> tuple[int, int, int, int]:
        """(compression method, where the member's data starts in the wheel, its compressed and its real size)."""
        method, csize, usize, offset = self.members()[name]
        head = self._get(offset, offset + 29)
        nlen, elen = struct.unpack("<HH", head[26:30])
        return method, offset + 30 + nlen + elen, csize, usize

    def read(self, name: str, until: re.Pattern[bytes] | None = None, chunk: int = 1 << 20,
             limit: int = 256 << 20) -> bytes:
        """A member's bytes (`limit` at most: a larger one is a ReadFailed); with `until`, stream it and stop at
        the first match (returning that match only)."""
        method, start, csize, usize = self.span(name)
        if until is None and usize > limit:
            raise ReadFailed(f"{name} inflates to {usize} bytes, more than the {limit} read of it")
        end = start + csize
        inflate = zlib.decompressobj(-15) if method == 8 else None
        data = b""
        pos = start
        while pos < end:
            raw = self._get(pos, min(end, pos + chunk) - 1)
            pos += len(raw)
            while raw:  # inflated 16 MiB at a time: a member that inflates without end is stopped, not held
                out = inflate.decompress(raw, 16 << 20) if inflate else raw
                raw = inflate.unconsumed_tail if inflate else b""
                data += out
                if until is not None:
                    m = until.search(data)
                    if m:
                        return m.group(0)
                    data = data[-256:]  # a match may straddle two chunks
                elif len(data) > usize:
                    raise ZipBroken(f"{name} inflates past the {usize} bytes its directory entry says")
        return b"" if until is not None else data


class _Transient(ReadFailed):
    """A failure another try may not meet (a reset connection, a 5xx)."""


class _Stalled(_Transient):
    """No byte for the stall time."""


# --- the zip's directory, checked against the file ----------------------------------------------------------------

def directory(get: Callable[[int, int], bytes], size: int
              ) -> tuple[dict[str, tuple[int, int, int, int]], dict[str, int]]:
    """(name -> (method, compressed size, size, local header offset), name -> CRC-32) of the zip of `size` bytes
    whose bytes start..end (inclusive) `get` reads. One read of the file's end for the end record and, mostly, the
    whole central directory with it (0.4% of a large wheel); a second only for what that did not reach. A directory
    that disagrees with the file — its end record's entry count or extent, an entry past the directory, members that
    overlap, a name twice, an encrypted or multi-disk zip — is ZipBroken, never an empty wheel."""
    if size < 22:
        raise ZipBroken(f"the file has {size} bytes: too few for a zip")
    tail_at = max(0, size - max(22 + 0xFFFF, min(size // 256, 1 << 20)))  # (the longest comment)
    tail = get(tail_at, size - 1)
    if len(tail) != size - tail_at:
        raise ZipBroken(f"the read of the file's last {size - tail_at} bytes gave {len(tail)}")
    p = len(tail)
    while True:  # the last end record whose comment runs exactly to the file's end
        p = tail.rfind(b"PK\x05\x06", 0, p)
        if p < 0:
            raise ZipBroken("no zip end-of-central-directory record at the file's end")
        if p + 22 <= len(tail) and p + 22 + struct.unpack_from("<H", tail, p + 20)[0] == len(tail):
            break
    disk, cd_disk, here, total, cd_size, cd_off = struct.unpack_from("<HHHHII", tail, p + 4)
    end_at = tail_at + p  # where the directory must end: the end record, or the zip64 end record before it
    if 0xFFFF in (here, total) or 0xFFFFFFFF in (cd_size, cd_off):
        loc = tail[p - 20:p] if p >= 20 else get(end_at - 20, end_at - 1) if end_at >= 20 else b""
        if len(loc) != 20 or loc[:4] != b"PK\x06\x07":
            raise ZipBroken("its end record says zip64, and no zip64 end-record locator precedes it")
        z64_at, = struct.unpack_from("<Q", loc, 8)
        if z64_at + 56 > end_at - 20:
            raise ZipBroken(f"its zip64 end record is said to be at {z64_at}, past the end of the file's records")
        z64 = tail[z64_at - tail_at:z64_at - tail_at + 56] if z64_at >= tail_at else get(z64_at, z64_at + 55)
        if z64[:4] != b"PK\x06\x06":
            raise ZipBroken(f"no zip64 end record at {z64_at}, where its locator says")
        disk, cd_disk, here, total, cd_size, cd_off = struct.unpack_from("<IIQQQQ", z64, 16)
        end_at = z64_at
    if disk or cd_disk or here != total:
        raise ZipBroken("it is a zip spanning several disks")
    if cd_off + cd_size != end_at:
        raise ZipBroken(f"its end record says the directory spans bytes {cd_off}-{cd_off + cd_size - 1}, and the "
                        f"end record itself is at {end_at}")
    if cd_size > DIRECTORY_MAX or total > ENTRIES_MAX:
        raise ZipBroken(f"its directory has {total} entries in {cd_size} bytes, more than the {ENTRIES_MAX} entries "
                        f"and {DIRECTORY_MAX >> 20} MiB read")
    cd = tail[cd_off - tail_at:cd_off - tail_at + cd_size] if cd_off >= tail_at else \
        (get(cd_off, tail_at - 1) + tail)[:cd_size]
    if len(cd) != cd_size:
        raise ZipBroken(f"its directory should have {cd_size} bytes, the file gave {len(cd)}")
    out: dict[str, tuple[int, int, int, int]] = {}
    crcs: dict[str, int] = {}
    spans: list[tuple[int, int, str]] = []
    pos = 0
    for i in range(total):
        if cd[pos:pos + 4] != b"PK\x01\x02" or pos + 46 > cd_size:
            raise ZipBroken(f"its directory holds {i} entries where its end record says {total}")
        flags, method = struct.unpack_from("<HH", cd, pos + 8)
        crc, csize, usize = struct.unpack_from("<III", cd, pos + 16)
        nlen, elen, clen = struct.unpack_from("<HHH", cd, pos + 28)
        offset, = struct.unpack_from("<I", cd, pos + 42)
        if pos + 46 + nlen + elen + clen > cd_size:
            raise ZipBroken(f"its directory entry {i} runs past the directory's end")
        name = cd[pos + 46:pos + 46 + nlen].decode("utf-8", "replace")
        extra, q = cd[pos + 46 + nlen:pos + 46 + nlen + elen], 0
        while q + 4 <= len(extra):  # zip64 extended information: the 0xFFFFFFFF fields, in this order
            hid, hlen = struct.unpack_from("<HH", extra, q)
            if hid == 1:
                vals, k = extra[q + 4:q + 4 + hlen], 0
                try:
                    if usize == 0xFFFFFFFF:
                        usize, = struct.unpack_from("<Q", vals, k)
                        k += 8
                    if csize == 0xFFFFFFFF:
                        csize, = struct.unpack_from("<Q", vals, k)
                        k += 8
                    if offset == 0xFFFFFFFF:
                        offset, = struct.unpack_from("<Q", vals, k)
                except struct.error:
                    raise ZipBroken(f"{name}: its zip64 sizes are cut short") from None
            q += 4 + hlen
        if flags & 1:
            raise ZipBroken(f"{name} is encrypted")
        if name in out:
            raise ZipBroken(f"two entries are named {name}")
        if method == 0 and csize != usize:
            raise ZipBroken(f"{name} is stored, and its directory entry gives it {csize} bytes stored, {usize} in all")
        if offset + 30 + nlen + csize > cd_off:
            raise ZipBroken(f"{name}: its directory entry puts its {csize} bytes at {offset}, past where the directory "
                            f"starts ({cd_off})")
        out[name] = (method, csize, usize, offset)
        crcs[name] = crc
        spans.append((offset, offset + 30 + nlen + csize, name))
        pos += 46 + nlen + elen + clen
    if pos != cd_size:
        raise ZipBroken(f"its directory has {cd_size - pos} bytes after the {total} entries its end record says")
    spans.sort()
    for (_, end, a), (start, _, b) in zip(spans, spans[1:]):
        if start < end:
            raise ZipBroken(f"its members {a} and {b} overlap")
    return out, crcs


def wheel_metadata(index: object, file: object, deep: bool) -> str | None:
    """A wheel's METADATA: the PEP 658 file beside it on the index, else (deep) the member read from inside the wheel
    with Range requests. `index` is an IndexClient and `file` one of its IndexFiles."""
    meta: str | None = index.metadata(file)  # type: ignore[attr-defined]
    if meta is None and deep:
        z = RemoteZip(index.session, file.url, file.size)  # type: ignore[attr-defined]
        name = next((n for n in z.members() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
        meta = z.read(name).decode("utf-8", "replace") if name else None
    return meta
