"""A passing `tritonlock check`'s answer, kept for exactly the same inputs (a leaf module: os and the interpreter's
own sha256 only, so that `tritonlock._entry` answers the same check again at little more than Python's start-up)."""

from __future__ import annotations

import os

from tritonlock._files import read_bytes, user_cache
from tritonlock._machine import sha256_hex
from tritonlock._stamp import code_stamp


_KEPT_LIMIT = 4 * 1024 * 1024  # a passing check's answer is a line, or a JSON document of a few KB


def _folder() -> str:
    return user_cache("check")


def check_key(project: str, as_json: bool) -> str | None:
    """Everything `tritonlock check [--json]` (no --host, no --require-verified) answers from: the lock's bytes, the
    intent's and its target files', a uv.lock beside them, this tritonlock's code and its compat/ data (the matrix;
    code_stamp), and the words of the command. None when it cannot be told cheaply (the full check runs)."""
    from tritonlock._discover import PYPROJECT, has_tritonlock_table, intent_bytes

    try:
        env, py = os.path.join(project, "triton-env.toml"), os.path.join(project, PYPROJECT)
        in_py = has_tritonlock_table(py)
        if in_py and os.path.isfile(env):
            return None  # (two intents: the full check says so)
        intent = py if in_py else env
        parts = [read_bytes(os.path.join(project, "triton-env.lock")), intent_bytes(intent)]
        if b"target-files" in parts[1]:
            from pathlib import Path

            from tritonlock._fast import target_files_key

            parts.append(target_files_key(Path(intent), parts[1]).encode())
        uv_lock = os.path.join(project, "uv.lock")
        parts.append(read_bytes(uv_lock) if os.path.exists(uv_lock) else b"\0none")
    except (OSError, ValueError):
        return None
    parts.append(repr([project, as_json, code_stamp()]).encode("utf-8", "surrogateescape"))
    return sha256_hex(b"".join(sha256_hex(p).encode() for p in parts))


def cached_check(project: str, as_json: bool) -> str | None:
    """What a passing `check` printed for exactly these inputs, or None."""
    key = check_key(project, as_json)
    if key is None:
        return None
    try:  # a regular file, and a small one: a FIFO, a device or a huge file put there is no answer (nor a hang)
        text = read_bytes(os.path.join(_folder(), key + ".txt"), limit=_KEPT_LIMIT).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    head, sep, body = text.partition("\n")
    return body if sep and head == f"tritonlock-check {key} ok" else None


def remember_check(project: str, as_json: bool, output: str) -> None:
    """Keep a passing check's output under its inputs (check_key): the same check again prints it without deciding
    every target again. Quietly not at all where the cache cannot be written, or for a lock of another format version
    (which warned on stderr)."""
    from tritonlock import LOCK_VERSION

    key = check_key(project, as_json)
    try:
        current = f'\nlock-version = "{LOCK_VERSION}"\n'.encode() in read_bytes(os.path.join(project, "triton-env.lock"))
    except OSError:
        current = False
    if key is None or not current:
        return
    from tritonlock._files import write_atomic
    from tritonlock.errors import TritonlockError

    folder = _folder()
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        write_atomic(os.path.join(folder, key + ".txt"), f"tritonlock-check {key} ok\n{output}", mode=0o600,
                     what="check")
    except (OSError, TritonlockError):  # (refused over a planted link or device over a planted link or device: the answer is simply not kept)
        pass
