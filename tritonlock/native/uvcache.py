"""Wheels uv has unpacked into its cache (a `sync`, any `uv pip install` on this machine): where the file a lock pins
is there, by the sha256 uv recorded when it downloaded it, its binary facts are read from the unpacked files on disk
instead of the index — nothing downloaded, nothing inflated.

uv keeps, for each wheel from an index, a small pointer file (`wheels-v*/{pypi,index/*,url/*}/<package>/<version
and tags>.http`) that holds the archive's id, the hashes uv computed of the file, and its name, beside a link to the
unpacked archive (`archive-v0/<id>/`). Only a pointer that names both the file and its sha256 counts; a wheel uv
took from a folder or link (no hash recorded) is read from the index as before. The layout is uv's own and may
change: anything not found is no error, only a read from the index."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tritonlock.models import NativeFacts

_ROOTS: dict[tuple[str | None, str | None], Path | None] = {}
_ROOTS_LOCK = threading.Lock()


def root() -> Path | None:
    """uv's cache folder as tritonlock's own uv runs use it (`uv cache dir --no-config`, with the environment they
    get), asked once per process and setting; None with UV_NO_CACHE, or where uv cannot say."""
    from tritonlock import _subprocess

    if os.environ.get("UV_NO_CACHE", "").strip().lower() in ("1", "true", "yes", "on"):
        return None
    key = (os.environ.get("UV_CACHE_DIR"), os.environ.get("XDG_CACHE_HOME"))
    with _ROOTS_LOCK:
        if key in _ROOTS:
            return _ROOTS[key]
    try:
        proc = subprocess.run([_subprocess.uv_bin(), "cache", "dir", "--no-config"], capture_output=True, text=True,
                              timeout=30, env=_subprocess.clean_env(), check=False)
        lines = proc.stdout.strip().splitlines() if proc.returncode == 0 else []
        found = Path(lines[-1]) if lines and os.path.isdir(lines[-1]) else None
    except Exception:  # noqa: BLE001 — no uv, or it failed: nothing is read from its cache
        found = None
    if found is not None:  # (a folder uv has not made yet is asked again later: a read may come before uv runs)
        with _ROOTS_LOCK:
            _ROOTS[key] = found
    return found


def has_pages() -> bool:
    """Whether uv's cache holds an index page (in its simple-v*/ folders): where it holds none — a first run, or no
    cache (UV_NO_CACHE) — uv cannot answer from it alone, and asking costs a uv run (0.5 s on a 2-core machine,
    beside the online compile it slows)."""
    found = root()
    if found is None:
        return False
    try:
        return any(d.is_dir() and any(d.iterdir()) for d in found.glob("simple-v*"))
    except OSError:
        return True  # (cannot tell: asked, as before)


def _normalized(filename: str) -> str:
    return re.sub(r"[-_.]+", "-", filename.split("-", 1)[0]).lower()


def _archive_id(pointer: bytes) -> str | None:
    """The archive id a pointer starts with (a MessagePack array whose first item is a short string)."""
    if len(pointer) < 2 or not 0x90 <= pointer[0] <= 0x9F or not 0xA0 <= pointer[1] <= 0xBF:
        return None
    n = pointer[1] - 0xA0
    ident = pointer[2:2 + n].decode("ascii", "replace")
    return ident if re.fullmatch(r"[A-Za-z0-9_-]+", ident) else None


class Pointers:
    """uv's pointer folders, listed once (for one resolve): each package's folders under `wheels-v*/pypi`,
    `wheels-v*/index/*` and `wheels-v*/url/*`, newest bucket first. A cache that has seen many indexes holds over a
    thousand of them, too many to list again for each of a resolve's hundreds of wheels."""

    def __init__(self, cache: Path | None = None) -> None:
        self._cache = cache
        self._by_package: dict[str, list[Path]] | None = None
        self._archives: Path | None = None
        self._lock = threading.Lock()

    def _listing(self) -> tuple[dict[str, list[Path]], Path | None]:
        with self._lock:
            if self._by_package is None:
                self._by_package = {}
                cache = self._cache if self._cache is not None else root()
                if cache is not None:
                    self._archives = (cache / "archive-v0").resolve()
                    self._list(cache)
            return self._by_package, self._archives

    def _list(self, cache: Path) -> None:
        assert self._by_package is not None
        try:
            buckets = sorted((d for d in os.scandir(cache) if re.fullmatch(r"wheels-v[0-9]+", d.name) and d.is_dir()),
                             key=lambda d: -int(d.name[8:]))
        except OSError:
            return
        for bucket in buckets:
            tops = [Path(bucket.path) / "pypi"]
            for kind in ("index", "url"):
                try:
                    tops += [Path(h.path) for h in os.scandir(Path(bucket.path) / kind) if h.is_dir()]
                except OSError:
                    pass
            for top in tops:
                try:
                    for pkg in os.scandir(top):
                        if pkg.is_dir():
                            self._by_package.setdefault(pkg.name, []).append(Path(pkg.path))
                except OSError:
                    pass

    def find(self, filename: str, sha256: str) -> Path | None:
        """The folder uv unpacked `filename` into, where a pointer names that file and sha256; else None."""
        if not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
            return None
        by_package, archives = self._listing()
        sha, name = sha256.lower().encode(), filename.encode()
        for d in by_package.get(_normalized(filename), ()):
            try:
                pointers = [e.path for e in os.scandir(d) if e.name.endswith(".http") and e.is_file()]
                for p in pointers:
                    data = _head(p, 1 << 16)
                    if sha not in data or name not in data:
                        continue
                    ident = _archive_id(data)
                    for folder in (Path(p[:-len(".http")]), archives / ident if archives and ident else None):
                        if folder is not None and folder.is_dir():
                            real = folder.resolve()
                            if real.parent == archives:
                                return real
            except OSError:
                continue
        return None

    def facts(self, sha256: str, filename: str, *, gpu: bool, names_only: bool) -> NativeFacts | None:
        """The facts of a wheel uv has unpacked in its cache, read there; None where it has not, or where they
        cannot be read there (the index is read instead)."""
        try:
            folder = self.find(filename, sha256)
            return None if folder is None else read(folder, sha256, filename, gpu=gpu, names_only=names_only)
        except Exception:  # noqa: BLE001 — whatever is odd in uv's cache, the index still has the wheel
            return None


def _head(path: str, n: int) -> bytes:
    """The first n bytes of a regular file (a FIFO or a device there is refused: never waited on)."""
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return os.pread(fd, n, 0)
    finally:
        os.close(fd)


def unpacked(filename: str, sha256: str, cache: Path | None = None) -> Path | None:
    """The folder uv unpacked `filename` into, where a pointer in its cache names that file and sha256; else None
    (one look: a resolve keeps one Pointers for all its wheels)."""
    return Pointers(cache).find(filename, sha256)


def read(folder: Path, sha256: str, filename: str, *, gpu: bool = True, names_only: bool = False) -> NativeFacts | None:
    """Facts of a wheel from the files uv unpacked it into (`unpacked`), read in place: of each shared object only the bytes its facts are in (`names_only`: only which it has, as read_remote
    gives them). The wheel's RECORD says which files it has: None (read the wheel itself) where it is missing, or
    where a shared object it lists is absent or not of its size."""
    import csv

    from tritonlock.native.elf import SO, built_for_torch, member_facts
    from tritonlock.models import NativeFacts, NativeMember

    from tritonlock._files import read_text

    records = list(folder.glob("*.dist-info/RECORD"))
    if len(records) != 1:
        return None
    try:  # (only a regular file, 64 MiB at most: a FIFO or a device there is passed over, never waited on)
        rows = list(csv.reader(read_text(records[0]).splitlines()))
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    sizes: dict[str, int | None] = {}
    for row in rows:
        if row and row[0] and not row[0].startswith(("/", "../")):
            sizes[row[0]] = int(row[2]) if len(row) > 2 and row[2].isdigit() else None
    names = sorted(n for n in sizes if SO.search(n))
    provides = tuple(sorted({n.rsplit("/", 1)[-1] for n in names}))
    source = f"read from the files uv unpacked {filename} into ({folder})"
    if names_only:
        return NativeFacts(sha256=sha256, filename=filename, provides=provides, source=source,
                           names_only=True)
    meta: str | None = None
    out: list[NativeMember] = []
    dist_info = records[0].parent.name
    try:
        if (folder / dist_info / "METADATA").is_file():
            meta = read_text(folder / dist_info / "METADATA", errors="replace", limit=8 << 20)
        for n in names:
            path = folder / n
            if not path.is_file() or path.is_symlink() or not path.resolve().is_relative_to(folder) or (
                    sizes[n] is not None and path.stat().st_size != sizes[n]):
                return None
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if fh.read(4) != b"\x7fELF":
                    continue
                m = member_facts(n, _reader(fh.fileno()), size, gpu=gpu)
                if m.gpu.startswith("not an ELF file it can read"):
                    return None  # (the wheel itself is read: a file that cannot be read is a failed read there)
                out.append(m)
    except OSError:
        return None
    from tritonlock.native.pysource import folder_imports

    tops, imports, guarded = folder_imports(folder, sizes) if out else ((), (), ())
    return NativeFacts(sha256=sha256, filename=filename, provides=provides, members=tuple(out),
                       built_for_torch=built_for_torch(filename, meta) if out else None, source=source, tops=tops,
                       imports=imports, guarded=guarded)


def _reader(fd: int) -> Callable[[int, int], bytes]:
    def read(offset: int, n: int) -> bytes:
        if n > 256 << 20:  # (a parser asking this much: a file it cannot read, never an allocation of that size)
            raise MemoryError(f"a read of {n} bytes")
        return os.pread(fd, max(0, n), offset)

    return read
