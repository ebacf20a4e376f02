"""The one place that runs other programs: argument lists, no shell, captured output."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence


@functools.lru_cache(maxsize=1)
def uv_bin() -> str:
    """The uv binary shipped by the `uv` package, else one on PATH (found once: sysconfig is not thread-safe)."""
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found is None:
            from tritonlock.errors import TritonlockError

            raise TritonlockError("uv is not installed — `pip install uv` (tritonlock drives uv for resolution "
                                  "and installs)")
        return found


@functools.lru_cache(maxsize=1)
def uv_version() -> tuple[int, ...]:
    """uv's version as numbers ((0, 13, 9)); (0,) when it cannot be told."""
    import re

    try:
        out = subprocess.run([uv_bin(), "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return (0,)
    m = re.search(r"([0-9]+)\.([0-9]+)(?:\.([0-9]+))?", out)
    return tuple(int(x) for x in m.groups(default="0")) if m else (0,)


def run(args: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
        timeout: float | None = None, unset: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """Run and capture; the caller decides what a non-zero exit means. `unset` drops inherited variables."""
    full_env = {k: v for k, v in os.environ.items() if k not in unset}
    full_env.setdefault("UV_NO_PROGRESS", "1")
    if env:
        full_env.update(env)
    return subprocess.run(list(args), env=full_env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False)


def run_shielded(args: Sequence[str], *, env: Mapping[str, str] | None = None, capture: bool = True,
                 on_interrupt: Callable[[str], None] = lambda s: None, unset: Sequence[str] = ()) -> tuple[int, str]:
    """Run a step that must not stop half-way (an install): Ctrl-C reaches only us, the child finishes.

    The child gets its own session, so the terminal's SIGINT is not delivered to it. A first Ctrl-C
    says so and keeps waiting; a second one stops the child and re-raises KeyboardInterrupt.
    """
    import tempfile

    full_env = {k: v for k, v in os.environ.items() if k not in unset}
    if env:
        full_env.update(env)
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as err:
        proc = subprocess.Popen(list(args), env=full_env, stdout=subprocess.DEVNULL if capture else None,
                                stderr=err if capture else None, start_new_session=True, text=True)
        interrupted = False
        while True:
            try:
                rc = proc.wait()
                break
            except KeyboardInterrupt:
                if interrupted:
                    proc.terminate()
                    proc.wait()
                    raise
                interrupted = True
                on_interrupt("interrupted: letting the install finish so the environment is not left half-done "
                             "(press Ctrl-C again to stop now)")
        err.seek(0)
        return rc, err.read() if capture else ""
