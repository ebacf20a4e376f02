"""What a closure was computed from, checked against the hashes the lock records: a mirror that serves other bytes
than its index page lists (another wheel under the name, other METADATA beside it, other bytes to the resolver's
range reads) gives uv a closure the locked files do not have — a dependency missing, and a lock that pins the real
files. Before the lock is written, each locked file's METADATA is taken from a source its hash vouches for (the
index's core-metadata hash, PEP 658/714; else the file itself, downloaded within a bound and checked against the
lock's sha256), and every requirement it states for the target must be in the closure."""

from __future__ import annotations

import errno
import functools
import hashlib
import io
import re
import threading
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.markers import Marker
from packaging.utils import canonicalize_name

from tritonlock import _urls
from tritonlock._term import human_size
from tritonlock.errors import ClosureError, IndexError_, TritonlockError
from tritonlock.models import Lock, LockedPackage, LockedTarget, Wheel

# A file larger than this is not downloaded to be checked (a torch wheel is GBs): where its index lists no
# core-metadata hash either, the lock says it was not checked rather than fetching it.
MAX_FILE_BYTES = 64 * 2**20
_THREADS = 32  # pages and files fetched at once (uv itself fetches up to 50)
_MARKER_VARS = frozenset({"python_version", "python_full_version", "os_name", "sys_platform", "platform_system",
                          "platform_machine", "implementation_name", "platform_python_implementation", "extra"})


@dataclass(frozen=True, kw_only=True, slots=True)
class _Checked:
    """One locked file: the METADATA its hash vouches for (None when it could not be had), or why not."""

    package: LockedPackage
    file: Wheel
    metadata: str | None = None
    problem: str | None = None  # the index serves other bytes than it lists: the resolve fails
    # not checked: its name (too large to fetch, no metadata hash on its page), or why not in words — said, not failed
    unchecked: str | None = None


class Early:
    """The checks of each closure's files, started as soon as uv's online answer names them: beside the reading of
    the binary facts, not after it (on an index without PEP 658 hashes they download about 1 GB for a vLLM closure).
    Each check is of one file alone (its page, its hash), so an answer the decision later replaces costs only time;
    check_lock takes the checks of the files it locks, and does what none started."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.bound = MAX_FILE_BYTES if max_bytes is None else max_bytes
        self.clients = _Clients()
        # daemon threads, started with the first check: a check of an answer the decision replaced (its page or file
        # still on the way, or a name lookup stalled) never holds the command's exit once the lock is written
        self._pool: Any = None
        self._lock = threading.Lock()
        self._started: dict[tuple[str, str, str, str, str], Any] = {}
        self._reads: dict[str, Any] = {}  # sha256 -> the binary read downloading that whole file (see `whole`)

    def start(self, packages: tuple[LockedPackage, ...]) -> None:
        with self._lock:
            for p in packages:
                for w in _files(p):
                    key = _key(p, w)
                    if key not in self._started:
                        if self._pool is None:
                            from tritonlock.native.members import Jobs

                            self._pool = Jobs(_THREADS, name="integrity")
                        self._started[key] = self._pool.submit(0, functools.partial(
                            _check_file, p, w, self.bound, self.clients, self._read_of))

    def result(self, p: LockedPackage, w: Wheel) -> _Checked:
        with self._lock:
            fut = self._started.get(_key(p, w))
        return fut.result() if fut is not None else _check_file(p, w, self.bound, self.clients, self._read_of)

    # A wheel whose binary facts are read and whose METADATA is not kept, within the bound: the reading downloads it
    # whole (one request, not ranged reads) and hashes it; where its bytes are the sha256's, its METADATA is kept
    # (`vouch`), as this check's own download would keep it, and the check waits for that read instead of downloading
    # the file a second time (473 MB of the vLLM closure of examples/inference on an index without PEP 658 hashes)
    def whole(self, sha256: str, size: int | None) -> bool:
        return size is not None and size <= self.bound and kept_metadata(sha256) is None

    def reading(self, sha256: str, fut: Any) -> None:
        with self._lock:
            self._reads.setdefault(sha256.lower(), fut)

    @staticmethod
    def vouch(sha256: str, metadata: str) -> None:
        keep_metadata(sha256, metadata)

    def _read_of(self, sha256: str) -> None:
        from concurrent.futures import wait

        with self._lock:
            fut = self._reads.get(sha256.lower())
        if fut is not None:
            wait([fut])  # (cancelled, failed or done: the check then finds the METADATA kept, or fetches it)

    def close(self) -> None:
        """What no lock will wait for is not started (a check already running ends by itself, or with the process)."""
        with self._lock:
            for fut in self._started.values():
                fut.cancel()
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def __enter__(self) -> Early:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _key(p: LockedPackage, w: Wheel) -> tuple[str, str, str, str, str]:
    return (p.index, p.name, p.version, w.url, w.sha256)


def check_lock(lock: Lock, *, max_bytes: int | None = None, early: Early | None = None,
               metadata: dict[str, str] | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Raise ClosureError (exit 4; no lock is written) when a locked file's bytes or METADATA are not what its index
    page lists, or when what a file's checked METADATA requires for its target is missing from the closure; return
    (warnings, notes): a warning per file that could not be checked for another reason (its index failed, a file:
    URL), and one plain note for the files too large to fetch whose page lists no metadata hash. `early`: the checks
    already started (their bound is theirs). `metadata`, when given, receives each checked file's METADATA by its
    sha256 (what the lock's dependency edges are read from)."""
    early = early or Early(max_bytes)
    early.clients.hurried.set()  # the lock waits for every check now: none gives way to reads any longer
    bound = early.bound
    jobs = {(p.index, w.url): (p, w) for t in lock.targets for p in t.packages for w in _files(p)}
    with ThreadPoolExecutor(max_workers=_THREADS) as pool:  # (network-bound: pages, .metadata files, downloads)
        checked = dict(zip(jobs, pool.map(lambda pw: early.result(pw[0], pw[1]), jobs.values())))
    problems = [c.problem for c in checked.values() if c.problem]
    if metadata is not None:
        metadata.update({c.file.sha256.lower(): c.metadata for c in checked.values() if c.metadata is not None})
    for t in lock.targets:
        problems += _missing(t, [checked[(p.index, w.url)] for p in t.packages for w in _files(p)])
    if problems:
        raise ClosureError("the closure was computed from other files than the lock pins — the index (a mirror?) "
                           "serves other bytes than its pages list, so nothing was written:\n"
                           + "\n".join(f"  - {p}" for p in dict.fromkeys(problems))
                           + "\n  fix: resolve against an index that serves the files its pages list (ask the "
                             "mirror's owner, or point [indexes] at another), then `tritonlock resolve`")
    large = list(dict.fromkeys(c.unchecked for c in checked.values() if c.unchecked == c.file.name))
    other = list(dict.fromkeys(c.unchecked for c in checked.values() if c.unchecked and c.unchecked != c.file.name))
    vouched = sum(1 for c in checked.values() if c.metadata is not None and not c.unchecked)
    return tuple(other), ((large_note(large, vouched, bound),) if large else ())


def large_note(large: list[str], vouched: int, bound: int) -> str:
    """What was and was not checked of a lock with files too large to fetch whose page lists no metadata hash (most
    of a CUDA torch closure on PyPI), and what stands between them and an install: said once, plainly — a first
    resolve should not read as an alarm, nor hide what was not done."""
    n, many = len(large), len(large) > 1
    names = ", ".join(large[:3]) + (f" and {n - 3} more" if n > 3 else "")
    return (f"{n} locked file{'s' if many else ''} over {human_size(bound)} ({names}) {'are' if many else 'is'} "
            f"pinned by {'their' if many else 'its'} sha256, but {'were' if many else 'was'} not downloaded to check "
            f"the dependencies {'their' if many else 'its'} index lists for {'them' if many else 'it'} (it lists no "
            "hash for those, PEP 658)"
            + (f"; the other {vouched} files' dependencies were checked against a hash (the file's, or that of its "
               "metadata where the index lists one)" if vouched > 1 else
               "; the other file's dependencies were checked against a hash (the file's, or that of its metadata "
               "where the index lists one)" if vouched == 1 else "")
            + ". `tritonlock sync` installs only files whose sha256 matches the lock, and `tritonlock verify` imports "
            "them — nothing to do, unless you distrust that index: then resolve against one that lists PEP 658 "
            "hashes")


def _files(p: LockedPackage) -> tuple[Wheel, ...]:
    return p.wheels or ((p.sdist,) if p.sdist else ())


class _Clients:
    """One index client per index for all the checks' threads (its session keeps its connections alive)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_index: dict[str, object] = {}
        # set once the lock waits for these checks (check_lock): their downloads no longer give way to the
        # decision's reads (tritonlock._link)
        self.hurried = threading.Event()

    def get(self, index: str) -> Any:
        from tritonlock.lock.index import IndexClient

        with self._lock:
            if index not in self._by_index:
                self._by_index[index] = IndexClient(index, timeout=60)
            return self._by_index[index]


def _check_file(p: LockedPackage, w: Wheel, max_bytes: int, clients: _Clients,
                read_of: Callable[[str], None] | None = None) -> _Checked:
    try:
        return _check(p, w, max_bytes, clients, read_of)
    except (IndexError_, OSError) as err:
        return _Checked(package=p, file=w, unchecked=f"{w.name} ({p.name} {p.version}) could not be checked against "
                                                     f"its index ({str(err).splitlines()[0][:200]})")


_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


# A downloaded file's METADATA, kept per sha256 in tritonlock's cache (beside the binary facts) once its bytes matched
# that hash: a file of that sha256 has that METADATA for ever, so on an index without PEP 658 hashes (where the check
# downloads whole files: a mirror, about 900 MB for a vLLM closure) a later resolve downloads none of them again, and
# reads no page for it either — the sha256 the lock pins is one uv read from the page in this run (closure.py answers
# from uv's cache only what this run read online), and what the file requires is known from its own bytes. Where the
# page lists a core-metadata hash, page and `.metadata` file are read and checked every time. "": nothing static to
# compare (an sdist whose requirements are dynamic). `served` (the decision's words, never this check): METADATA as an
# index served it (PEP 658 file or ranged read), kept apart, so that nothing served is ever taken as checked.
def kept_metadata(sha256: str, *, served: bool = False) -> str | None:
    """The METADATA kept for a file of this sha256 (see above), else the headers the matrix ships for it
    (tritonlock.lock.shippedmeta: as checked only where read from the whole file); None when neither is."""
    import json

    if not _HEX64.fullmatch(sha256):
        return None

    from tritonlock._files import read_text
    from tritonlock.native.read import KEPT_FILE_MAX, cache_dir

    try:  # (a FIFO, a link to a device or a huge file there is passed over: never waited on, never read whole)
        d = json.loads(read_text(cache_dir() / _kept_name(sha256, served), limit=KEPT_FILE_MAX))
    except (OSError, ValueError, RecursionError):
        d = None
    if not isinstance(d, dict) or d.get("sha256") != sha256.lower() or not isinstance(d.get("metadata"), str):
        from tritonlock.lock.shippedmeta import shipped_metadata

        return shipped_metadata(sha256, checked=not served)  # (none kept here: what the matrix ships, if any)
    return str(d["metadata"])


def keep_metadata(sha256: str, metadata: str, *, served: bool = False) -> None:
    import json

    from tritonlock._files import write_atomic
    from tritonlock.native.read import cache_folder

    if not _HEX64.fullmatch(sha256):
        return
    try:
        write_atomic(cache_folder() / _kept_name(sha256, served),
                     json.dumps({"sha256": sha256.lower(), "metadata": metadata}),
                     what="keep a locked file's METADATA")
    except (OSError, TritonlockError):
        pass  # a cache that cannot be written is no error: the next resolve reads it again


def _kept_name(sha256: str, served: bool) -> str:
    return f"{sha256.lower()}.{'served-' if served else ''}metadata.json"


def _check(p: LockedPackage, w: Wheel, max_bytes: int, clients: _Clients,
           read_of: Callable[[str], None] | None = None) -> _Checked:
    scheme = urlsplit(w.url).scheme
    if scheme == "file":  # a folder on this disk is the index: its bytes are what uv read
        from tritonlock._files import read_bytes

        path = unquote(urlsplit(w.url).path)
        try:  # (only a regular file: a FIFO or a device there is refused, never waited on or read without end)
            local = read_bytes(path, limit=max_bytes)
        except OSError as err:
            if err.errno != errno.EFBIG:
                raise
            return _Checked(package=p, file=w, unchecked=w.name)
        return _from_bytes(p, w, local, max_bytes)
    if scheme not in ("http", "https"):
        return _Checked(package=p, file=w, unchecked=f"{w.name}: not checked (a {scheme}: URL)")
    kept = kept_metadata(w.sha256)
    if kept is None and read_of is not None:  # the binary read downloading this file whole: its METADATA, if vouched
        read_of(w.sha256)
        kept = kept_metadata(w.sha256)
    if kept is not None:  # checked against this sha256 before (here, or by the matrix's tool): its METADATA is known
        return _Checked(package=p, file=w, metadata=kept or None)
    if p.direct:  # a direct reference: no page lists it; its bytes are checked against the sha256 uv hashed
        data = _download(clients.get(lock_index_of(w.url)), w.url, max_bytes, clients.hurried) if (w.size or 0) <= max_bytes else None
        if data is None:
            return _Checked(package=p, file=w, unchecked=w.name)
        checked = _from_bytes(p, w, data, max_bytes)
        if checked.problem is None and checked.unchecked is None:
            keep_metadata(w.sha256, checked.metadata or "")
        return checked
    client = clients.get(p.index)
    listed = {f.filename: f for f in client.files(p.name, only=w.name)}
    entry = listed.get(w.name)
    if entry is None:
        return _Checked(package=p, file=w, problem=f"{w.name} ({p.name} {p.version}): its index page {p.index} does "
                                                   "not list it")
    if entry.sha256 and entry.sha256.lower() != w.sha256.lower():
        return _Checked(package=p, file=w, problem=f"{w.name}: its index page lists sha256 {entry.sha256}, the "
                                                   f"closure pinned {w.sha256}")
    if entry.metadata_sha256 and w.name.endswith(".whl"):
        meta = client.metadata_bytes(entry)
        if meta is None:
            return _Checked(package=p, file=w, problem=f"{w.name}: its index page lists a metadata hash but serves no "
                                                       f"{w.name}.metadata")
        got = hashlib.sha256(meta).hexdigest()
        if got != entry.metadata_sha256.lower():
            return _Checked(package=p, file=w, problem=f"{w.name}.metadata: the index serves METADATA with sha256 "
                                                       f"{got}, its page lists {entry.metadata_sha256}")
        return _Checked(package=p, file=w, metadata=meta.decode("utf-8", "replace"))
    size = w.size if w.size is not None else entry.size
    data = _download(client, entry.url, max_bytes, clients.hurried) if size is None or size <= max_bytes else None
    if data is None:  # too large to fetch here, and nothing smaller vouched for by a hash: said, by name
        if p.wheels and w.name == p.wheels[0].name and kept_metadata(w.sha256, served=True) is None:
            _keep_served(client, entry, w)
        return _Checked(package=p, file=w, unchecked=w.name)
    checked = _from_bytes(p, w, data, max_bytes)
    if checked.problem is None and checked.unchecked is None:
        keep_metadata(w.sha256, checked.metadata or "")
    return checked


def _keep_served(client: Any, entry: Any, w: Wheel) -> None:
    """The METADATA inside a wheel this check cannot vouch for, read now by ranged reads and kept as served: what the
    lock's dependency edges are drawn from (tritonlock.lock.edges.file_metadata would read it after the decision —
    0.78 s of a first resolve of numpy + requests, for torch's CUDA closure — where the checks start as soon as a
    closure is seen). Never taken as checked; a failure leaves it to file_metadata."""
    from tritonlock.native.remotezip import wheel_metadata

    try:
        meta = wheel_metadata(client, entry, deep=True)
    except Exception:  # noqa: BLE001 — the edges' own read tries again, and says nothing either
        return
    if meta:
        keep_metadata(w.sha256, meta, served=True)


def lock_index_of(url: str) -> str:
    """The folder a direct reference's file is in: an address for the client whose session downloads it."""
    return url.rsplit("/", 1)[0]


def _download(client: object, url: str, max_bytes: int, hurried: threading.Event | None = None) -> bytes | None:
    """The whole file, with the index's credentials and TLS settings, reading at most max_bytes (None past it); it
    starts when the decision's reads leave room (tritonlock._link), or at once once `hurried` is set."""
    import requests

    from tritonlock._link import LINK
    from tritonlock.lock.index import credentials

    session = client.session  # type: ignore[attr-defined]
    try:
        with LINK.download(hurried), session.get(url, stream=True, timeout=120, auth=credentials(url), verify=session.verify) as resp:
            if resp.status_code != 200:
                raise IndexError_(f"{_urls.redact(url)} answered HTTP {resp.status_code}")
            buf = io.BytesIO()
            for chunk in resp.iter_content(1 << 20):
                buf.write(chunk)
                if buf.tell() > max_bytes:
                    return None
            return buf.getvalue()
    except requests.RequestException as err:
        raise IndexError_(f"cannot download {_urls.redact(url)} ({_urls.redact(str(err))[:200]})") from None


def _from_bytes(p: LockedPackage, w: Wheel, data: bytes, max_bytes: int) -> _Checked:
    if len(data) > max_bytes:
        return _Checked(package=p, file=w, unchecked=w.name)
    got = hashlib.sha256(data).hexdigest()
    if got != w.sha256.lower():
        return _Checked(package=p, file=w, problem=f"{w.name} ({p.name} {p.version}): the index serves a file with "
                                                   f"sha256 {got}; its page lists (and the closure pinned) {w.sha256}")
    return _Checked(package=p, file=w, metadata=metadata_in(w.name, data))


def metadata_in(name: str, data: bytes) -> str | None:
    """A wheel's METADATA, or an sdist's PKG-INFO where its requirements are static (Metadata-Version 2.2+, not
    Dynamic): what the resolver read (for anything else, uv built the metadata: nothing static to compare)."""
    try:
        if name.endswith(".whl"):
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                member = next((n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1),
                              None)
                return zf.read(member).decode("utf-8", "replace") if member else None
        if name.endswith((".tar.gz", ".tgz")):
            import tarfile

            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tf:
                info = next((m for m in tf.getmembers() if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO")
                             and m.isfile() and m.size < 2**20), None)
                fh = tf.extractfile(info) if info is not None else None
                text = fh.read().decode("utf-8", "replace") if fh is not None else None
            if text is None or _header(text, "Metadata-Version") < "2.2" or any(
                    v.lower() == "requires-dist" for v in _headers(text, "Dynamic")):
                return None
            return text
    except (zipfile.BadZipFile, OSError, EOFError, KeyError, ValueError):
        return None
    return None


def _headers(text: str, key: str) -> Iterator[str]:
    from tritonlock.lock._requires import metadata_fields

    for v in metadata_fields(text).get(key.lower(), ()):  # (the headers only: a description follows them)
        yield v.strip()


def _header(text: str, key: str) -> str:
    return next(_headers(text, key), "")


def marker_environment(t: LockedTarget) -> dict[str, str]:
    """The marker environment uv resolved the target for (its --python-version and --python-platform)."""
    spec, py = t.selection.target, t.selection.python or ""
    system = {"linux": "Linux", "macos": "Darwin", "windows": "Windows"}.get(spec.os, spec.os)
    machine = {"windows": "AMD64", "macos": "arm64"}.get(spec.os, spec.arch)
    return {"python_version": py, "python_full_version": f"{py}.0", "os_name": "nt" if spec.os == "windows" else "posix",
            "sys_platform": {"linux": "linux", "macos": "darwin", "windows": "win32"}.get(spec.os, spec.os),
            "platform_system": system, "platform_machine": machine, "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "extra": ""}


def _decidable(marker: Marker) -> bool:
    """Whether a marker uses only what the target says (not platform_release and the like, which uv judges itself)."""
    import re

    names = set(re.findall(r"[a-z_]+", str(marker))) & {"python_version", "python_full_version", "os_name",
                                                          "sys_platform", "platform_system", "platform_machine",
                                                          "implementation_name", "platform_python_implementation",
                                                          "extra", "platform_release", "platform_version",
                                                          "implementation_version", "os_name"}
    return names <= _MARKER_VARS


def _missing(t: LockedTarget, checked: list[_Checked]) -> list[str]:
    """Each requirement a locked file's checked METADATA states for this target that the closure does not meet."""
    if not t.selection.ok or not t.selection.python:
        return []
    env = marker_environment(t)
    have = {p.name: p.version for p in t.packages}
    out: list[str] = []
    from tritonlock.lock._requires import parsed_requirement  # (once a process: the closure's edges parse them too)

    for c in checked:
        if c.metadata is None:
            continue
        for line in _headers(c.metadata, "Requires-Dist"):
            req = parsed_requirement(line)
            if req is None:
                continue
            if req.url or (req.marker is not None and (not _decidable(req.marker) or not _evaluate(req.marker, env))):
                continue
            name = canonicalize_name(req.name)
            version = have.get(name)
            if version is None:
                out.append(f"target {t.name!r}: {c.file.name} (checked against its hash) requires {req}, which the "
                           "closure does not hold")
            elif req.specifier and not req.specifier.contains(version, prereleases=True):
                out.append(f"target {t.name!r}: {c.file.name} (checked against its hash) requires {req}; the closure "
                           f"holds {name} {version}")
    return out


def _evaluate(marker: Marker, env: dict[str, str]) -> bool:
    try:
        return bool(marker.evaluate(env))
    except (TritonlockError, ValueError, TypeError, KeyError):
        return True  # undecidable here: counted as wanted (a missing requirement is the safe thing to report)
