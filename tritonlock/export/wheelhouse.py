"""`export --format wheelhouse`: every file a lock target installs, downloaded once and checked against the lock's
sha256, in one flat directory with a find-links page — what `sync --find-links DIR` installs from on a machine
without network (an air-gapped cluster's GPU nodes)."""

from __future__ import annotations

import contextlib
import hashlib
import html
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from tritonlock.errors import TritonlockError, UsageError
from tritonlock.models import LockedTarget, Wheel

INDEX_PAGE = "index.html"


class WheelhouseError(TritonlockError):
    """A file could not be fetched, or is not the one the lock pinned."""

    exit_code = 4


@dataclass(frozen=True, kw_only=True, slots=True)
class WheelhouseResult:
    files: int
    downloaded: int
    reused: int
    refetched: int  # present but not the pinned bytes (a cut-off download): fetched again
    bytes_total: int
    bytes_downloaded: int


def size_text(n: int) -> str:
    """Sizes as everything else tritonlock prints them (decimal units; sync's download size too)."""
    from tritonlock._term import human_size

    return human_size(n)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    try:  # O_NONBLOCK: a FIFO under the name never blocks the open; it is no file, and has no hash
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return ""
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# A download whose size the lock does not record (an index page without sizes) is still bounded: no wheel on any
# index is near this (torch's largest CUDA wheels are about 2.5 GB).
UNKNOWN_SIZE_CAP = 8 * 1024**3


def _limit(w: Wheel) -> int:
    return w.size if w.size is not None else UNKNOWN_SIZE_CAP


def _too_big(w: Wheel, n: int) -> WheelhouseError:
    if w.size is None:
        return WheelhouseError(f"{w.name}: the download passed {size_text(UNKNOWN_SIZE_CAP)} and was stopped (the lock "
                               "records no size for it, and no wheel is that large) — check the index; nothing was "
                               "kept")
    return WheelhouseError(f"{w.name}: the index sent more than the {w.size} bytes the lock records; the download was "
                           "stopped there and nothing was kept — the index serves another file under this name; do not "
                           "install it (run `tritonlock resolve --upgrade` if the change is expected)")


def _short(w: Wheel, n: int, why: str = "") -> WheelhouseError:
    return WheelhouseError(f"{w.name}: the download ended after {n} of {w.size if w.size is not None else '?'} bytes"
                           f"{f' ({why})' if why else ' (the connection was cut?)'} — a network problem: run the "
                           "export again (files already there are kept)")


def _fetch(w: Wheel, dest: Path, session: object) -> int:
    """Download (or copy, for file://) one file to dest through a temp file beside it (a new name, made with
    O_EXCL: a link planted under any name is never followed, and two exports into one directory never share one);
    no more bytes are read than the lock records, and the sha256 is checked before the rename, so a file under its
    real name is always the pinned one. Returns the bytes written."""
    from tritonlock._files import commit, temp_beside

    limit = _limit(w)
    h = hashlib.sha256()
    n = 0
    fd, part = temp_beside(dest)
    committed = False

    def put(chunk: bytes) -> None:
        nonlocal n
        if n + len(chunk) > limit:
            raise _too_big(w, n + len(chunk))
        h.update(chunk)
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view):]
        n += len(chunk)

    try:
        if w.url.startswith("file:"):
            src = Path(unquote(urlsplit(w.url).path))
            try:  # a regular file only (a FIFO or device under the name would never end), and only up to its size
                sfd = os.open(src, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            except OSError as err:
                raise WheelhouseError(f"{w.name}: cannot read {src} ({err.strerror or err}) — is the lock's file:// "
                                      "path on this machine? run `tritonlock resolve` where it is") from None
            with os.fdopen(sfd, "rb") as fin:
                if not stat.S_ISREG(os.fstat(fin.fileno()).st_mode):
                    raise WheelhouseError(f"{w.name}: {src} is not a regular file (a pipe, socket or device) — the "
                                          "lock's file:// path must name the wheel itself")
                for chunk in iter(lambda: fin.read(1 << 20), b""):
                    put(chunk)
        else:
            import requests

            from tritonlock import _urls
            from tritonlock.lock import index

            try:
                resp = session.get(w.url, stream=True, timeout=60, auth=index.credentials(w.url),  # type: ignore[attr-defined]
                                   verify=session.verify)  # type: ignore[attr-defined]
            except requests.RequestException as err:
                raise WheelhouseError(f"{w.name}: cannot download {_urls.redact(w.url)} ({_urls.redact(str(err))[:200]}) "
                                      "— check the network and run the export again (files already there are kept)"
                                      ) from None
            with resp:
                if resp.status_code != 200:
                    hint = (" — give the index's credentials as sync takes them: in its URL ([indexes] in "
                            "triton-env.toml, PIP_INDEX_URL or pip.conf), in ~/.netrc, or in your keyring"
                            if resp.status_code in (401, 403) else
                            " — run the export again later, or `tritonlock resolve --upgrade` if the index dropped it")
                    raise WheelhouseError(f"{w.name}: {_urls.redact(w.url)} answered HTTP {resp.status_code}{hint}")
                announced = resp.headers.get("Content-Length", "")
                if announced.isdigit() and int(announced) > limit:
                    raise _too_big(w, int(announced))
                try:
                    for chunk in resp.iter_content(1 << 20):
                        put(chunk)  # (a disk error here is an OSError the CLI names with its path)
                except requests.RequestException as err:  # a body cut off or stalled: the network, not a path
                    raise _short(w, n, _urls.redact(str(err))[:200]) from None
        if w.size is not None and n < w.size:
            raise _short(w, n)
        if h.hexdigest() != w.sha256:
            raise WheelhouseError(f"{w.name}: the downloaded file has sha256 {h.hexdigest()}, the lock pins {w.sha256} "
                                  "— the index serves another file under this name; do not install it (run "
                                  "`tritonlock resolve --upgrade` if the change is expected)")
        os.fsync(fd)
        os.close(fd)
        fd = -1
        commit(part, dest, what="export --format wheelhouse")
        committed = True
    finally:
        if fd >= 0:
            os.close(fd)
        if not committed:
            part.unlink(missing_ok=True)
    return n


def _listed(out: Path) -> dict[str, str]:
    """The files (name → sha256) that the wheelhouse's own index page lists: files an earlier export put there."""
    from tritonlock._files import read_text, written_by_us

    page = out / INDEX_PAGE
    if not written_by_us(page):
        return {}
    try:
        text = read_text(page, limit=64 * 1024 * 1024)
    except (OSError, UnicodeDecodeError):
        return {}
    return {html.unescape(m.group(1)): m.group(2) for m in re.finditer(r'<a href="([^"#]+)#sha256=([0-9a-f]{64})">',
                                                                         text)}


def _plan(target: LockedTarget, out: Path, wheels: list[Wheel], *, force: bool) -> None:
    """Before anything is fetched: the directory, its index page and every file's place follow the rule every writer
    follows (tritonlock._files) — only regular files, and only the wheelhouse's own (or with --force)."""
    from tritonlock._files import check_writes, missing_dir, not_a_file

    what = "export --format wheelhouse"
    if os.path.lexists(out) and not out.is_dir():
        raise UsageError(f"{what}: -o {out} {not_a_file(out) or 'is a file'}, not a directory — pass a directory "
                         "(it is made when missing); nothing was written")
    if not os.path.lexists(out) and not out.parent.is_dir():
        raise UsageError(f"{what}: {out.parent} {missing_dir(out.parent)} — create it first or fix the path (the "
                         "wheelhouse directory itself is made when missing); nothing was written")
    check_writes([out / INDEX_PAGE], what=what, force=force, parents=True)
    listed = _listed(out)
    odd, theirs = [], []
    for w in wheels:
        dest = out / w.name
        why = not_a_file(dest)
        if why is not None and not (why.endswith("(a regular file)") and _sha256(dest) == w.sha256):
            odd.append(f"{dest} {why}")  # (a link to the pinned file itself is only read, and kept)
        elif why is None and os.path.lexists(dest) and w.name not in listed and not force and \
                _sha256(dest) != w.sha256:
            theirs.append(dest)
    if odd:
        raise UsageError(f"{what}: {'; '.join(odd)} — tritonlock replaces only regular files, never a device, pipe, "
                         "socket, directory or symbolic link; nothing was written; remove it from the wheelhouse or "
                         "pass another directory")
    if theirs:
        one = len(theirs) == 1
        raise UsageError(f"{what}: {', '.join(str(p) for p in theirs)} {'is' if one else 'are'} in the wheelhouse "
                         f"with other bytes than the lock pins, and {'was' if one else 'were'} not fetched by "
                         "tritonlock (its index.html does not list "
                         f"{'it' if one else 'them'}) — nothing was written; move {'it' if one else 'them'} away, "
                         "or pass --force to replace them with the pinned files")


def build(target: LockedTarget, out: Path, *, force: bool = False,
          say: Callable[[str], None] = lambda s: None) -> WheelhouseResult:
    """Fill `out` with the target's files. Resumable: a file already there with the pinned sha256 is kept; one the
    wheelhouse's own page lists with other bytes (a disk error, a copy cut off) is fetched again; one tritonlock
    did not put there is replaced only with `force`. Several exports (targets) may share one directory: the page
    lists them all."""
    from tritonlock.lock import index

    wheels = [w for p in target.packages for w in p.wheels]
    if not wheels:
        raise WheelhouseError(f"target {target.name!r} lists no wheel files — run `tritonlock resolve`")
    no_wheel = [f"{p.name} {p.version}" for p in target.packages if not p.wheels]
    if no_wheel:
        raise WheelhouseError(f"target {target.name!r}: {', '.join(no_wheel)} has only a source distribution, which "
                              "`sync --find-links` cannot install offline — build a wheel of it into the wheelhouse")
    _plan(target, out, wheels, force=force)
    try:
        out.mkdir(exist_ok=True)  # the wheelhouse directory itself (its parent is there: checked)
    except OSError as err:
        raise UsageError(f"export --format wheelhouse: cannot make {out} ({err.strerror or err}) — check the path "
                         "and its permissions; nothing was written") from None
    from tritonlock._term import sizes_text

    unsized = sum(1 for w in wheels if w.size is None)  # said, never dropped from the total in silence
    say(f"wheelhouse {out}: {len(wheels)} files, {sizes_text(sum(w.size or 0 for w in wheels), unsized)} for target "
        f"{target.name}")
    session = None
    downloaded = reused = refetched = got = 0
    for i, w in enumerate(wheels, start=1):
        dest = out / w.name
        if os.path.lexists(dest):
            if _sha256(dest) == w.sha256:
                reused += 1
                continue
            refetched += 1
            say(f"[{i}/{len(wheels)}] {w.name}: not the pinned file (cut off?) — fetching it again")
        if session is None:
            session = index.session()
        n = _fetch(w, dest, session)
        downloaded += 1
        got += n
        say(f"[{i}/{len(wheels)}] {w.name} ({size_text(n)})")
    write_page(out, wheels, force=force)
    # every file is there now, checked: the total is what the directory holds, unknown sizes included
    total = sum((out / w.name).stat().st_size for w in {w.name: w for w in wheels}.values())
    return WheelhouseResult(files=len(wheels), downloaded=downloaded, reused=reused, refetched=refetched,
                            bytes_total=total, bytes_downloaded=got)


def write_page(out: Path, wheels: list[Wheel], *, force: bool = False) -> None:
    """A find-links page (PEP 503 anchors with #sha256=) for serving the directory over HTTP; `--find-links DIR`
    reads the directory itself. The files an earlier export listed stay listed while they are there (several
    targets share one wheelhouse); two exports finishing at once take turns (a lock on the directory)."""
    from tritonlock._files import MARKERS, not_a_file, write_file

    with _dir_lock(out):
        entries = {name: sha for name, sha in _listed(out).items()
                   if "/" not in name and not_a_file(out / name) is None and os.path.lexists(out / name)}
        entries.update({w.name: w.sha256 for w in wheels})
        links = "".join(f'<a href="{html.escape(name)}#sha256={sha}">{html.escape(name)}</a><br>\n'
                        for name, sha in sorted(entries.items()))
        write_file(out / INDEX_PAGE, f"<!DOCTYPE html>\n{MARKERS['wheelhouse']} — a find-links page -->\n"
                                     f"<html><body>\n{links}</body></html>\n",
                   what="export --format wheelhouse", force=force)


@contextlib.contextmanager
def _dir_lock(out: Path) -> Iterator[None]:
    """An exclusive lock on the directory itself (no lock file left in it)."""
    if os.name == "nt":
        yield
        return
    import fcntl

    fd = os.open(out, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
