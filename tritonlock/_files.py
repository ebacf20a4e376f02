"""Reading the files users (and other machines) hand tritonlock: only regular files, and only up to a size.

A path in a project can be a FIFO, a device or a symlink to one (`/dev/zero`, a named pipe nobody writes to): a
plain `open().read()` then blocks forever or reads without end. Every reader of an input file goes through here,
so that such a path is one clean error instead of a hang. Standard library only (the no-op sync imports it).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

LIMIT = 64 * 1024 * 1024  # no intent, lock, records file, host file or node report is anywhere near this


def read_bytes(path: str | Path, *, limit: int = LIMIT) -> bytes:
    """The bytes of a regular file. Raises FileNotFoundError when it is not there, and OSError (with strerror and
    filename set) when it is not a regular file, cannot be read, or is larger than `limit` bytes."""
    # O_NONBLOCK: opening a FIFO for reading must not wait for a writer; a regular file ignores the flag.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file (a pipe, socket or device)"
            raise OSError(errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL, f"is {kind}", str(path))
        if st.st_size > limit:
            raise OSError(errno.EFBIG, f"is larger than {limit // (1024 * 1024)} MiB", str(path))
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # it grew while we read it
            raise OSError(errno.EFBIG, f"is larger than {limit // (1024 * 1024)} MiB", str(path))
        return data
    finally:
        os.close(fd)


def read_text(path: str | Path, *, encoding: str = "utf-8", errors: str = "strict", limit: int = LIMIT) -> str:
    """read_bytes, decoded (UnicodeDecodeError when it is not text in `encoding`); newlines as Python's text mode
    reads them (\\r\\n and \\r become \\n)."""
    text = read_bytes(path, limit=limit).decode(encoding, errors)
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def file_stem(name: str) -> str:
    """A name (a lock target's, a node's) as part of a file name: ASCII letters, digits, `.`, `_` and `-` only, so
    that "../../x", "a b" or "<x>" can neither leave the directory nor break a Dockerfile's COPY line. A name that
    had to change gets a short hash of itself, so two names never share a file."""
    import hashlib
    import re

    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-")[:80] or "target"
    if stem == name:
        return stem
    return f"{stem}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
