"""`export --format wheelhouse`: every file a lock target installs, downloaded once and checked against the lock's
sha256, in one flat directory with a find-links page — what `sync --find-links DIR` installs from on a machine
without network (an air-gapped cluster's GPU nodes)."""

from __future__ import annotations

import hashlib
import html
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from tritonlock.errors import TritonlockError
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
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fetch(w: Wheel, dest: Path, session: object) -> int:
    """Download (or copy, for file://) one file to dest through a .part file; the sha256 is checked before the
    rename, so a file under its real name is always the pinned one. Returns the bytes written."""
    part = dest.with_name(dest.name + ".part")
    h = hashlib.sha256()
    n = 0
    try:
        if w.url.startswith("file:"):
            src = Path(unquote(urlsplit(w.url).path))
            with src.open("rb") as fin, part.open("wb") as fout:
                for chunk in iter(lambda: fin.read(1 << 20), b""):
                    h.update(chunk)
                    fout.write(chunk)
                    n += len(chunk)
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
            if resp.status_code != 200:
                raise WheelhouseError(f"{w.name}: {_urls.redact(w.url)} answered HTTP {resp.status_code} — run the "
                                      "export again later, or `tritonlock resolve --upgrade` if the index dropped it")
            with part.open("wb") as fout:
                for chunk in resp.iter_content(1 << 20):
                    h.update(chunk)
                    fout.write(chunk)
                    n += len(chunk)
        if h.hexdigest() != w.sha256:
            raise WheelhouseError(f"{w.name}: the downloaded file has sha256 {h.hexdigest()}, the lock pins {w.sha256} "
                                  "— the index serves another file under this name; do not install it (run "
                                  "`tritonlock resolve --upgrade` if the change is expected)")
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
    return n


def build(target: LockedTarget, out: Path, *, say: Callable[[str], None] = lambda s: None) -> WheelhouseResult:
    """Fill `out` with the target's files. Resumable: a file already there with the pinned sha256 is kept; one with
    other bytes (a download cut off, a disk error) is fetched again."""
    from tritonlock.lock import index

    out.mkdir(parents=True, exist_ok=True)
    wheels = [w for p in target.packages for w in p.wheels]
    if not wheels:
        raise WheelhouseError(f"target {target.name!r} lists no wheel files — run `tritonlock resolve`")
    no_wheel = [f"{p.name} {p.version}" for p in target.packages if not p.wheels]
    if no_wheel:
        raise WheelhouseError(f"target {target.name!r}: {', '.join(no_wheel)} has only a source distribution, which "
                              "`sync --find-links` cannot install offline — build a wheel of it into the wheelhouse")
    from tritonlock._term import sizes_text

    unsized = sum(1 for w in wheels if w.size is None)  # said, never dropped from the total in silence
    say(f"wheelhouse {out}: {len(wheels)} files, {sizes_text(sum(w.size or 0 for w in wheels), unsized)} for target "
        f"{target.name}")
    session = None
    downloaded = reused = refetched = got = 0
    for i, w in enumerate(wheels, start=1):
        dest = out / w.name
        if dest.is_file():
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
    write_page(out, wheels)
    # every file is there now, checked: the total is what the directory holds, unknown sizes included
    total = sum((out / w.name).stat().st_size for w in {w.name: w for w in wheels}.values())
    return WheelhouseResult(files=len(wheels), downloaded=downloaded, reused=reused, refetched=refetched,
                            bytes_total=total, bytes_downloaded=got)


def write_page(out: Path, wheels: list[Wheel]) -> None:
    """A find-links page (PEP 503 anchors with #sha256=) for serving the directory over HTTP; `--find-links DIR`
    reads the directory itself."""
    from tritonlock.lock.lockfile import write_atomic

    links = "".join(f'<a href="{html.escape(w.name)}#sha256={w.sha256}">{html.escape(w.name)}</a><br>\n'
                    for w in sorted(wheels, key=lambda w: w.name))
    write_atomic(out / INDEX_PAGE, f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n")
