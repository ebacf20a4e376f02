"""`tritonlock compat metadata`: the METADATA headers of the files typical locks hold, read from their indexes and
written to compat/metadata/ (tritonlock.lock.shippedmeta's format: one file per package, each file keyed by its
sha256 with its name; no index address), so that a first resolve on a new machine fetches only what the matrix does
not know. A file of up to 64 MB (the integrity check's bound) is downloaded whole and its bytes hashed: its row is
`checked` only where they hash to the sha256 the lock pins (a file that does not is not shipped, and said). A larger
one's METADATA is read from inside the wheel by ranged reads (a row not checked: the lock's edges and the decision's
words use it, the integrity check does not). Re-runnable: the rows already there are kept; a row read from the whole
file replaces one that was not."""

from __future__ import annotations

import hashlib
import io
import re
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tritonlock.lock.index import IndexClient, IndexFile


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def chosen(paths: Iterable[Path]) -> list[tuple[str, str, IndexFile]]:
    """Every wheel the locks at `paths` pin (not a direct reference): (package, its index, the file), each sha256
    once."""
    from tritonlock.lock.lockfile import read_lock

    out: dict[str, tuple[str, str, IndexFile]] = {}
    for path in paths:
        for t in read_lock(path).targets:
            for p in t.packages:
                if p.direct:
                    continue
                for w in p.wheels:
                    out.setdefault(w.sha256.lower(), (_norm(p.name), p.index or "", IndexFile(
                        filename=w.name, url=w.url, sha256=w.sha256.lower(), size=w.size)))
    return sorted(out.values(), key=lambda c: (c[0], c[2].filename))


def _whole(client: IndexClient, f: IndexFile, bound: int) -> bytes | None:
    """The whole file (None past `bound` bytes), with the index's credentials and TLS settings."""
    from tritonlock.lock.index import credentials

    session: Any = client.session
    with session.get(f.url, stream=True, timeout=300, auth=credentials(f.url), verify=session.verify) as resp:
        if resp.status_code != 200:
            raise RuntimeError(f"HTTP {resp.status_code}")
        buf = io.BytesIO()
        for chunk in resp.iter_content(1 << 20):
            buf.write(chunk)
            if buf.tell() > bound:
                return None
        return buf.getvalue()


def read_row(client: IndexClient, f: IndexFile, bound: int) -> dict[str, Any]:
    """One file's row (RuntimeError where it cannot be read, or its bytes are not the sha256's)."""
    from tritonlock.lock.integrity import metadata_in
    from tritonlock.lock.shippedmeta import headers_only
    from tritonlock.native.remotezip import wheel_metadata

    data = _whole(client, f, bound) if f.size is None or f.size <= bound else None
    if data is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != f.sha256:
            raise RuntimeError(f"its bytes hash to {got}, the lock pins {f.sha256}")
        meta, checked = metadata_in(f.filename, data), True
    else:
        meta, checked = wheel_metadata(client, f, deep=True), False
    text = headers_only(meta or "")
    if not text:
        raise RuntimeError("no METADATA in it")
    return {"sha256": f.sha256, "filename": f.filename, "checked": checked, "metadata": text}


def existing(folder: Path) -> tuple[dict[str, tuple[str, dict[str, Any]]], list[str]]:
    """The rows there, by sha256 with their package; and the files not used (that do not read)."""
    from tritonlock._files import read_text
    from tritonlock.lock.shippedmeta import loads

    out: dict[str, tuple[str, dict[str, Any]]] = {}
    notes: list[str] = []
    for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
        try:
            rows = loads(read_text(path))
        except (OSError, ValueError) as err:
            notes.append(f"{path.name}: not read ({str(err)[:200]}): its rows are read again")
            continue
        for row in rows:
            out[row["sha256"]] = (path.stem, row)
    return out, notes


def write(folder: Path, rows: dict[str, tuple[str, dict[str, Any]]], budget: int) -> tuple[int, int]:
    """One file per package (a package with no row left loses its file): (files, bytes). Refused (ValueError) past
    `budget` bytes, nothing written."""
    from tritonlock._files import write_atomic
    from tritonlock.lock.shippedmeta import dumps

    by: dict[str, list[dict[str, Any]]] = {}
    for package, row in rows.values():
        by.setdefault(package, []).append(row)
    texts = {f"{name}.toml": dumps(name, items) for name, items in sorted(by.items())}
    total = sum(len(t.encode()) for t in texts.values())
    if total > budget:
        raise ValueError(f"the rows take {total} bytes, more than the {budget} compat/metadata may hold — give fewer "
                         "locks, or raise BUDGET in tritonlock/lock/shippedmeta.py with a reason")
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.toml"):
        if old.name not in texts:
            old.unlink()
    for name, text in texts.items():
        write_atomic(folder / name, text, what="compat metadata")
    return len(texts), total


def main(*, locks: tuple[str, ...], compat: str | None,
         say: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> int:
    from tritonlock._data import compat_root
    from tritonlock.lock.integrity import MAX_FILE_BYTES
    from tritonlock.lock.shippedmeta import BUDGET, FOLDER

    root = Path(compat) if compat else compat_root()
    if root is None:
        say("no compat/ folder found (give --compat DIR)")
        return 2
    folder = root / FOLDER
    rows, notes = existing(folder)
    for n in notes:
        say(n)
    todo = [(pkg, index, f) for pkg, index, f in chosen(Path(p) for p in locks) if index and f.sha256 and (
        f.sha256 not in rows or (not rows[f.sha256][1]["checked"] and (f.size or 0) <= MAX_FILE_BYTES))]
    say(f"{len(rows)} rows in compat/{FOLDER}; {len(todo)} files to read")
    clients: dict[str, IndexClient] = {}
    lock = threading.Lock()
    failed: list[str] = []

    def one(item: tuple[str, str, IndexFile]) -> None:
        pkg, index, f = item
        with lock:
            client = clients.setdefault(index, IndexClient(index, timeout=120))
        try:
            row = read_row(client, f, MAX_FILE_BYTES)
        except Exception as err:  # noqa: BLE001 — a file that cannot be read is not shipped, and said
            with lock:
                failed.append(f"{f.filename}: {str(err).splitlines()[0][:300] if str(err) else type(err).__name__}")
                say(f"  not read: {failed[-1]}")
            return
        with lock:
            rows[row["sha256"]] = (pkg, row)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, todo))
    try:
        files, total = write(folder, rows, BUDGET)
    except ValueError as err:
        say(str(err))
        return 1
    checked = sum(1 for _, r in rows.values() if r["checked"])
    say(f"wrote {files} files in {folder} ({len(rows)} rows, {checked} read from the whole file; {total} bytes of the "
        f"{BUDGET} budget)" + (f"; {len(failed)} files could not be read (not shipped)" if failed else ""))
    return 0
