"""The runner's process group: ended as a whole, on our SIGTERM too."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from typing import Any


def stop_group(proc: subprocess.Popen[str]) -> None:
    """End the runner and everything it started — the torch.compile check's process, the compile workers, Inductor's
    and NCCL's processes: they share its process group (its own session, so a terminal's Ctrl-C reaches only us)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the group may be gone already
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=2 if sig == signal.SIGTERM else 30)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            with contextlib.suppress(ProcessLookupError, PermissionError):  # a worker that outlived the runner
                os.killpg(proc.pid, signal.SIGKILL)
        return


def on_sigterm_stop(proc: subprocess.Popen[str]) -> Any:
    """SIGTERM (a scheduler's job kill, `timeout`) while the runner runs — tritonlock reading the host and the lock,
    or waiting for the report: the runner's group goes with us, and we exit 143. Returns the handler it replaced
    (None off the main thread, where Python runs no handler)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: object) -> None:
        stop_group(proc)
        raise SystemExit(128 + signal.SIGTERM)

    return signal.signal(signal.SIGTERM, handler)
