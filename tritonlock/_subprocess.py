"""The one place that runs other programs: argument lists, no shell, captured output."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence


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
