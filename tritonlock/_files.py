"""Reading the files users (and other machines) hand tritonlock: only regular files, and only up to a size.

A path in a project can be a FIFO, a device or a symlink to one (`/dev/zero`, a named pipe nobody writes to): a
plain `open().read()` then blocks forever or reads without end. Every reader of an input file goes through here,
so that such a path is one clean error instead of a hang. Standard library only (the no-op sync imports it).
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # (typing itself is not imported: the no-op sync reads this module)
if TYPE_CHECKING:
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
    that "../../x", "a b" or "<x>" can neither leave the directory nor break a Dockerfile's COPY line.

    Distinct names never share a file, also where file names ignore case (macOS, Windows): a name is its own stem
    only when it is lower-case, needs no change and does not end like a hashed stem (`-` and 8 hex digits); every
    other name gets a short hash of itself ("a b" → "a-b-1a2b3c4d", and the name "a-b-1a2b3c4d" → "a-b-1a2b3c4d-…")."""
    import hashlib
    import re

    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-")[:80] or "target"
    if stem == name and stem == stem.lower() and not re.search(r"-[0-9a-f]{8}\Z", stem):
        return stem
    return f"{stem}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


# ---------------------------------------------------------------- files tritonlock writes: one rule for every writer
#
# Every file tritonlock writes, for the user or for itself, goes through this section: `write_files` (or
# `write_file`) for a command's outputs, `write_atomic` for its own files inside a venv or a cache, `temp_beside` +
# `commit` for a download, `open_lock_file` for a lock file. The rule (docs/export.md, "Files tritonlock writes: one rule for every writer"):
#
# * Only a regular file, or nothing, is ever replaced: a device node, a FIFO, a socket, a directory or a symbolic
#   link (to anything) at the path is refused with or without --force — `--force` replaces a user's *file*, never
#   /dev/null.
# * An existing regular file is replaced only when tritonlock wrote it (its marker, below, in its first 2 KB) or
#   with --force; a command that edits a file in place (`init --pyproject`, `export --format uv`) keeps what it does
#   not own and may edit any regular file.
# * A missing directory is not created unless the command documents it (`host --save hosts/X.toml`, the wheelhouse
#   directory, the Dockerfile's build context); every destination is checked before anything is written, and a
#   failed write takes back what the command had created.
# * Bytes go to a new temp file in the target's directory, created with O_EXCL (a link planted under any name is
#   never followed), then renamed over the target: readers never see half a file.
#
# tests/test_writers.py enumerates every write in the package and every command-line option that names a path, so a
# new writer cannot skip the rule.

# How a file tritonlock wrote is recognised: its first lines say so. Each writer's marker, by what writes it.
MARKERS: dict[str, str] = {
    "export": "Generated by `tritonlock ",  # pylock, requirements, Dockerfile, pixi, slurm, k8s, uv (new file)
    # JSON, which has no comments: devcontainer.json (customizations.tritonlock.generated-by), verify --profile's
    # trace (a "tritonlock" key)
    "devcontainer": '"generated-by": "tritonlock',
    "host --save": "detected by tritonlock host",
    "fleet hosts": "gathered by `tritonlock fleet hosts`",
    "verify runner": "Standalone verify runner, run by the target venv's interpreter",
    "verify runner package": "# tritonlock verify runner: runs in the target venv",
    "lock": "generated by tritonlock; do not edit",
    "records": "written by `tritonlock verify --record`",
    "report merge": "Generated by `tritonlock report merge",  # the table (--out) and the page (--html)
    "report merge --json": '"generated-by": "tritonlock report merge',
    "wheelhouse": "<!-- Generated by `tritonlock export --format wheelhouse`",
    "compat check --new": "Drafted by `tritonlock compat check --new`",
}


# Files of the project's state that tritonlock wrote, which only the commands named here may replace: another command
# writing there (`export --format pixi -o triton-env.lock`) would destroy them, and "tritonlock wrote it" is no
# permission then — not even with --force. Kind (a MARKERS key) → (what it is, the commands that write it).
PROTECTED: dict[str, tuple[str, tuple[str, ...]]] = {
    "lock": ("a lock", ("resolve",)),
    "records": ("verify records", ("verify --record",)),
    "host --save": ("a host file", ("host --save", "fleet hosts")),
    "fleet hosts": ("a host file", ("host --save", "fleet hosts")),
}


def written_by_us(path: str | Path) -> bool:
    """Whether `path` is a regular file tritonlock wrote (a marker in its first 2 KB); False when it is not there
    or is anything else (a link is never ours: it is not followed)."""
    return written_kind(path) is not None


def written_kind(path: str | Path) -> str | None:
    """What kind of file tritonlock wrote `path` as (the MARKERS key whose marker comes first in its first 2 KB);
    None when it did not write it, or it is not there or not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
                     | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, 2048).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    # the file's own header comes first (a k8s manifest quotes the lock further on); at one place, the longest
    found = [(head.find(marker), -len(marker), kind) for kind, marker in MARKERS.items() if marker in head]
    return min(found)[2] if found else None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def not_a_file(path: str | Path) -> str | None:
    """What stands at `path` when it is not a regular file ("is a named pipe (FIFO)", "is a symbolic link to
    /dev/null (a character device)"); None when nothing is there or a regular file is. Never follows a link."""
    try:
        st = os.lstat(path)
    except OSError:  # not there (or a name too long, a part of the path not a directory: the write says so)
        return None
    if stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            to = os.readlink(path)
        except OSError:
            to = "?"
        try:
            what = _kind(os.stat(path).st_mode)
        except OSError:
            what = "which leads nowhere"
        return f"is a symbolic link to {to} ({what})"
    return f"is {_kind(st.st_mode)}"


def _usage(text: str) -> Exception:
    from tritonlock.errors import UsageError

    return UsageError(text)


def missing_dir(d: Path) -> str:
    """What is wrong with a directory a file should go in: it is not there, or something else is in its place."""
    return "is not a directory" if os.path.lexists(d) else "does not exist"


def _names(paths: list[Path]) -> str:
    return ", ".join(str(p) for p in paths)


def check_writes(paths: list[Path] | tuple[Path, ...], *, what: str, force: bool, force_flag: str | None = "--force",
                 replace: str = "ours", parents: bool = False, fix: str = "") -> None:
    """Before anything is written: every destination is one this command may write, else one UsageError (exit 2)
    naming every path of the first kind of problem, with "nothing was written".

    `replace`: "ours" — an existing regular file only when tritonlock wrote it, or with `force`; "never" — any
    existing file only with `force` (`init`: an intent is the user's once written); "edit" — any regular file (the
    command edits it in place and keeps what it does not own). `force_flag` is the option that gives `force`, named
    in the advice (None: the command has none). `parents`: missing directories above a path may be created (the
    command documents that); otherwise each path's directory must be there. `fix` replaces the advice for a file
    tritonlock did not write."""
    from pathlib import Path

    dash = [p for p in paths if str(p) == "-"]
    if dash:
        raise _usage(f"{what}: '-' means standard output, and this output cannot go there — pass a path; nothing "
                     "was written")
    odd = [(p, why) for p in paths if (why := not_a_file(p)) is not None]
    if odd:
        links = all(why.startswith("is a symbolic link to") and why.endswith("(a regular file)") for _, why in odd)
        shown = "; ".join(f"{p} {why}" for p, why in odd)
        fix = ("pass the path of the file it points at, or another path" if links else "pass another path")
        raise _usage(f"{what}: {shown} — tritonlock replaces only regular files, never a device, pipe, socket, "
                     f"directory or symbolic link; nothing was written; {fix}")
    if not parents:
        nodir: dict[Path, list[Path]] = {}  # the missing directory → the files that would go in it
        for p in paths:
            if not Path(p).parent.is_dir():
                nodir.setdefault(Path(p).parent, []).append(Path(p))
        if nodir:
            shown = "; ".join(f"{d} {missing_dir(d)} (for {_names(ps)})" for d, ps in nodir.items())
            raise _usage(f"{what}: {shown} — create it first or fix the path; nothing was written")
    state = [(p, PROTECTED[k][0]) for p in paths if (k := written_kind(p)) in PROTECTED
             and what not in PROTECTED[k][1]]
    if state:
        shown = "; ".join(f"{p} is {kind} tritonlock wrote" for p, kind in state)
        raise _usage(f"{what}: {shown} — {what} never replaces it, not even with --force; nothing was written; pass "
                     "another path")
    if force or replace == "edit":
        return
    theirs = [p for p in paths if os.path.lexists(p) and (replace == "never" or not written_by_us(p))]
    if theirs:
        one = len(theirs) == 1
        how = fix or (f"move it away, pass another path, or pass {force_flag} to replace it" if force_flag else
                      "move it away or pass another path")
        if replace == "never":
            raise _usage(f"{what}: {_names(theirs)} already {'exists' if one else 'exist'} — nothing was written; {how}")
        raise _usage(f"{what}: {_names(theirs)} {'exists' if one else 'exist'} and {'was' if one else 'were'} not "
                     f"written by tritonlock — nothing was written; {how}")


def refuse_foreign(paths: list[Path] | tuple[Path, ...], *, force: bool, what: str) -> None:
    """check_writes for a command with --force whose files carry tritonlock's marker."""
    check_writes(paths, what=what, force=force)


def _write_error(target: Path, err: OSError) -> Exception:
    from tritonlock.errors import WriteError

    why = err.strerror or str(err)
    return WriteError(f"{target}: cannot write it ({why}) — check that its directory exists and that you may write "
                      "there")


def temp_beside(target: str | Path, mode: int = 0o666) -> tuple[int, Path]:
    """A new, empty temp file next to `target`, open for writing: created with O_EXCL (a link planted under its
    name is never followed — it is another name, tried again) and O_NOFOLLOW, with `mode` before the umask
    (tempfile.mkstemp would make it 0600, and the rename would hand that mode to a file others must read)."""
    from pathlib import Path

    import secrets

    t = Path(target)
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
             | getattr(os, "O_CLOEXEC", 0))
    for _ in range(100):
        tmp = t.parent / f".{t.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, mode), tmp
        except FileExistsError:
            continue
        except OSError as err:
            raise _write_error(t, err) from None
    raise _write_error(t, FileExistsError(errno.EEXIST, "no free temporary name beside it"))


def commit(tmp: Path, target: str | Path, *, what: str = "write") -> None:
    """Rename the finished temp file over `target` — checked again just before: only over a regular file or
    nothing (a FIFO or link that appeared meanwhile is refused, and the temp file removed)."""
    from pathlib import Path

    why = not_a_file(target)
    if why is not None:
        Path(tmp).unlink(missing_ok=True)
        raise _usage(f"{what}: {target} {why} — tritonlock replaces only regular files, never a device, pipe, "
                     "socket, directory or symbolic link; nothing was written there; pass another path")
    try:
        os.replace(tmp, target)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise _write_error(Path(target), err) from None


def write_atomic(path: str | Path, data: str | bytes, *, mode: int | None = None, what: str = "write") -> None:
    """Write `data` (text: UTF-8, newlines as given) via a temp file beside `path` and rename, so readers never see
    half a file. Only over a regular file or nothing. A new file gets `mode` (default: what the umask gives); a
    replaced one keeps its mode."""
    from pathlib import Path

    target = Path(path)
    why = not_a_file(target)
    if why is not None:
        raise _usage(f"{what}: {target} {why} — tritonlock replaces only regular files, never a device, pipe, "
                     "socket, directory or symbolic link; nothing was written; pass another path")
    try:
        keep: int | None = stat.S_IMODE(os.lstat(target).st_mode)
    except OSError:
        keep = None
    fd, tmp = temp_beside(target, 0o666 if mode is None else mode)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        try:
            view = memoryview(raw)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
            if keep is not None and hasattr(os, "fchmod"):
                os.fchmod(fd, keep)
        finally:
            os.close(fd)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise _write_error(target, err) from None
        raise
    commit(tmp, target, what=what)


def write_file(path: str | Path, data: str | bytes, *, what: str, force: bool, force_flag: str | None = "--force",
               replace: str = "ours", parents: bool = False, fix: str = "") -> None:
    """One output file, by the rule above (check_writes, then written atomically)."""
    from pathlib import Path

    write_files([(Path(path), data)], what=what, force=force, force_flag=force_flag, replace=replace, parents=parents,
                fix=fix)


def write_files(files: list[tuple[Path, str]] | list[tuple[Path, str | bytes]], *, what: str, force: bool,
                force_flag: str | None = "--force", replace: str = "ours", parents: bool = False,
                fix: str = "") -> None:
    """Several output files as one step: all checked first (check_writes), then each written atomically; when one
    fails, the files and directories this call created are removed again (a replaced file keeps its new text), so
    a failed command leaves nothing behind."""
    check_writes([p for p, _ in files], what=what, force=force, force_flag=force_flag, replace=replace,
                 parents=parents, fix=fix)
    created: list[Path] = []
    try:
        for path, text in files:
            if parents:
                missing = [d for d in (path.parent, *path.parent.parents) if not os.path.lexists(d)]
                for d in reversed(missing):
                    try:
                        d.mkdir()
                    except FileExistsError:
                        continue
                    except OSError as err:
                        raise _write_error(path, err) from None
                    created.append(d)
            existed = os.path.lexists(path)
            write_atomic(path, text, what=what)
            if not existed:
                created.append(path)
    except BaseException:
        for p in reversed(created):
            try:
                p.rmdir() if p.is_dir() and not p.is_symlink() else p.unlink()
            except OSError:
                pass
        raise


def open_lock_file(path: str | Path) -> int:
    """A descriptor of the lock file at `path` (for flock/lockf), created when missing: never through a link,
    never a FIFO (which would block the open) or a device. Raises OSError naming the path otherwise."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP:  # O_NOFOLLOW met a link
            raise OSError(errno.EINVAL, "is a symbolic link, not a lock file", str(path)) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"is {_kind(mode)}, not a lock file", str(path))
    return fd


_FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)


def clones(source_dir: Path, target_dir: Path) -> bool:
    """Whether a file in `source_dir` can be cloned copy-on-write into `target_dir` (tried with two small files,
    which are removed again): Linux's FICLONE, macOS's clonefile."""
    import contextlib
    import sys
    import tempfile
    from pathlib import Path

    src = dst = None
    try:
        source_dir.mkdir(parents=True, exist_ok=True)  # (uv's cache directory: uv makes it too)
        fd, name = tempfile.mkstemp(prefix=".tritonlock-clone-", dir=source_dir)
        src = Path(name)
        with os.fdopen(fd, "wb") as fh:
            fh.write(b"\0" * 4096)
        dst = target_dir / f".tritonlock-clone-{os.getpid()}-{src.name[-8:]}"
        if sys.platform == "darwin":
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            return bool(libc.clonefile(os.fsencode(src), os.fsencode(dst), 0) == 0)
        if not sys.platform.startswith("linux"):
            return False
        import fcntl

        with open(src, "rb") as a, open(dst, "xb") as b:
            fcntl.ioctl(b.fileno(), _FICLONE, a.fileno())
        return True
    except (OSError, AttributeError, ValueError):
        return False
    finally:
        for f in (src, dst):
            if f is not None:
                with contextlib.suppress(OSError):
                    f.unlink()


def user_cache(*parts: str) -> str:
    """tritonlock's folder in the user's cache, with `parts` below it: $XDG_CACHE_HOME/tritonlock where that is an
    absolute path (the XDG base directory rules: a relative one is ignored), else ~/.cache/tritonlock."""
    home = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(home):
        home = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(home, "tritonlock", *parts)
