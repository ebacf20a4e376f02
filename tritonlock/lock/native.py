"""Native code in locked wheels, read without installing (tritonlock.binary reads the ELF files): for each extension
module and bundled library, what it needs and carries; for each wheel, the libraries it brings and the torch it was
built for. Read from the index with ranged reads (the zip's central directory, then only the members and bytes
needed) or from a file on disk, and kept per file sha256 so that a later resolve reads nothing again."""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonlock.binary.elf import SO as _SO
from tritonlock.binary.elf import built_for_torch, member_facts
from tritonlock.models import NativeFacts
from tritonlock.models import NativeMember as Member

# v2: a member's `gpu` says whether its GPU code was read ("read", "none", or why not)
_CACHE_VERSION = "native-v2"



def may_hold_native_code(filename: str) -> bool:
    """A wheel tagged for a platform (not `*-none-any`) may carry native code; an sdist is not read."""
    return filename.endswith(".whl") and not filename[:-4].endswith("-any")


# --- a wheel: on an index (ranged reads) or on disk ------------------------------------------------------------------

class _Inflating:
    """One deflated zip member read forward on demand: the compressed bytes come in chunks as far as a read needs,
    are inflated and kept (a library's start for its dynamic section, all of it for its GPU code)."""

    def __init__(self, fetch: Callable[[int, int], bytes], start: int, csize: int, usize: int, method: int) -> None:
        self._fetch, self._pos, self._end, self.size = fetch, start, start + csize, usize
        self._z = zlib.decompressobj(-15) if method == 8 else None
        self._buf = bytearray()

    def read(self, off: int, n: int) -> bytes:
        want = min(off + n, self.size)
        while len(self._buf) < want and self._pos < self._end:
            step = max(1 << 20, min(want - len(self._buf), 16 << 20))
            raw = self._fetch(self._pos, min(self._end, self._pos + step) - 1)
            if not raw:
                break
            self._pos += len(raw)
            self._buf += self._z.decompress(raw) if self._z else raw
        return bytes(self._buf[off:want])


def read_wheel(filename: str, sha256: str, *, members: dict[str, tuple[int, int, int, int]],
               fetch: Callable[[int, int], bytes], gpu: bool, source: str, names_only: bool = False) -> NativeFacts:
    """Facts of a wheel whose zip central directory (`members`: name -> method, compressed size, size, header
    offset) is known and whose bytes `fetch(start, end)` gives; `names_only`: what it brings, nothing inside."""
    import struct

    provides = tuple(sorted({n.rsplit("/", 1)[-1] for n in members if _SO.search(n)}))
    if names_only:
        return NativeFacts(sha256=sha256, filename=filename, provides=provides, source=source, names_only=True)
    out: list[Member] = []
    meta = None
    for name, (method, csize, usize, offset) in sorted(members.items()):
        if re.fullmatch(r"[^/]+\.dist-info/METADATA", name):
            meta = _member_bytes(fetch, offset, csize, method).decode("utf-8", "replace")
            continue
        if not _SO.search(name) or method not in (0, 8):
            continue
        head = fetch(offset, offset + 29)
        nlen, elen = struct.unpack("<HH", head[26:30])
        reader = _Inflating(fetch, offset + 30 + nlen + elen, csize, usize, method)
        if reader.read(0, 4) != b"\x7fELF":
            continue
        out.append(member_facts(name, reader.read, usize, gpu=gpu))
    return NativeFacts(sha256=sha256, filename=filename, provides=provides, members=tuple(out),
                       built_for_torch=built_for_torch(filename, meta) if out else None, source=source)


def _member_bytes(fetch: Callable[[int, int], bytes], offset: int, csize: int, method: int) -> bytes:
    import struct

    head = fetch(offset, offset + 29)
    nlen, elen = struct.unpack("<HH", head[26:30])
    raw = fetch(offset + 30 + nlen + elen, offset + 30 + nlen + elen + csize - 1) if csize else b""
    return zlib.decompress(raw, -15) if method == 8 else raw


def read_remote(url: str, size: int | None, sha256: str, filename: str, *, session: Any, gpu: bool,
                names_only: bool = False) -> NativeFacts:
    """Facts of a wheel on an index, by HTTP Range requests (tritonlock.lock.remotezip)."""
    from tritonlock.lock.remotezip import RemoteZip

    z = RemoteZip(session, url, size)
    members = z.members()
    if names_only:
        return read_wheel(filename, sha256, members=members, fetch=z.read_range, gpu=gpu,
                          source=f"read from {filename} by ranged reads", names_only=True)
    wanted = [v for n, v in members.items() if _SO.search(n) or re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
    if not wanted:
        return read_wheel(filename, sha256, members=members, fetch=z.read_range, gpu=gpu,
                          source=f"read from {filename} by ranged reads")
    # the shared objects' span of the zip in one request, into a temporary file; parsed from there
    start = min(v[3] for v in wanted)
    end = min(z.size, max(v[3] + v[1] for v in wanted) + 64 * 1024) - 1  # + their local headers' names
    import tempfile

    with tempfile.TemporaryFile(prefix="tritonlock-wheel-") as fh:
        z.span_to(start, end, fh)

        def fetch(a: int, b: int) -> bytes:
            if a < start or b > end:
                return z.read_range(a, b)
            fh.seek(a - start)
            return fh.read(b - a + 1)

        return read_wheel(filename, sha256, members=members, fetch=fetch, gpu=gpu,
                          source=f"read from {filename} by ranged reads")


def read_file(path: Path, sha256: str, *, gpu: bool = True) -> NativeFacts:
    """Facts of a wheel file on disk (a wheelhouse, uv's cache)."""
    import zipfile

    with zipfile.ZipFile(path) as zf:
        members = {i.filename: (i.compress_type, i.compress_size, i.file_size, i.header_offset) for i in zf.infolist()}
    with open(path, "rb") as fh:
        def fetch(start: int, end: int) -> bytes:
            fh.seek(start)
            return fh.read(end - start + 1)

        return read_wheel(path.name, sha256, members=members, fetch=fetch, gpu=gpu, source=f"read from {path}")


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


@dataclass(kw_only=True)
class Reader:
    """Reads the facts of many wheels at once (a few threads), each once per sha256 (and across runs through the
    cache); shared by the targets of one resolve. `prefetch` starts reads without waiting (what a first answer
    locks, while the decision goes on); `facts` waits for what it asks."""

    gpu: bool = True
    workers: int = 4
    read: dict[str, NativeFacts] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import threading
        from concurrent.futures import Future, ThreadPoolExecutor

        self._lock = threading.Lock()
        self._pending: dict[tuple[str, bool], Future[NativeFacts]] = {}
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="native-facts")
        self._session: Any = None

    def _one(self, w: tuple[str, int | None, str, str, bool]) -> NativeFacts:
        url, size, sha, name, names = w
        with self._lock:
            if self._session is None:
                from tritonlock.lock.index import session

                self._session = session()
        try:
            f = read_remote(url, size, sha, name, session=self._session, gpu=self.gpu, names_only=names)
        except Exception as err:  # noqa: BLE001 — an unreadable wheel is a fact to report, not a crash
            from tritonlock._urls import redact

            return NativeFacts(sha256=sha, filename=name, problem=redact(str(err))[:200] or type(err).__name__)
        keep(f)
        return f

    def _start(self, wheels: Iterable[tuple[str, int | None, str, str, bool]]) -> list[Any]:
        futures = []
        with self._lock:
            for url, size, sha, name, names in dict.fromkeys(wheels):
                have = self.read.get(sha)
                if have is not None and (names or not have.names_only):
                    continue
                pending = self._pending.get((sha, names)) or (self._pending.get((sha, False)) if names else None)
                if pending is not None:
                    futures.append(pending)
                    continue
                hit = cached(sha, gpu=self.gpu, names_only=names)
                if hit is not None:
                    self.read[sha] = hit
                    continue
                fut = self._pending[(sha, names)] = self._pool.submit(self._one, (url, size, sha, name, names))
                futures.append(fut)
        return futures

    def prefetch(self, wheels: Iterable[tuple[str, int | None, str, str, bool]]) -> None:
        """Start reading these wheels' facts (what `facts` will ask for soon), without waiting."""
        self._start(wheels)

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
        self._pool.shutdown(wait=False, cancel_futures=True)
