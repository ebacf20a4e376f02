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


def run(args: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
        timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """Run and capture; the caller decides what a non-zero exit means."""
    full_env = dict(os.environ)
    full_env.setdefault("UV_NO_PROGRESS", "1")
    if env:
        full_env.update(env)
    return subprocess.run(list(args), env=full_env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False)


def run_shielded(args: Sequence[str], *, env: Mapping[str, str] | None = None, capture: bool = True,
                 on_interrupt: Callable[[str], None] = lambda s: None) -> tuple[int, str]:
    """Run a step that must not stop half-way (an install): Ctrl-C reaches only us, the child finishes.

    The child gets its own session, so the terminal's SIGINT is not delivered to it. A first Ctrl-C
    says so and keeps waiting; a second one stops the child and re-raises KeyboardInterrupt.
    """
    import tempfile

    full_env = dict(os.environ)
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
