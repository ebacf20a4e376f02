"""The runner's process group: ended as a whole, on our SIGTERM too."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
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


def read_to_end(proc: subprocess.Popen[str], stdin: str, timeout: float,
                on_timeout: Callable[[], None]) -> tuple[str, str, bool]:
    """Write `stdin` to the process, then read its stdout and stderr to their end, each in a thread (as
    Popen.communicate does on Windows): (stdout, stderr, whether `timeout` s passed first — then `on_timeout()` ended
    the process and what it had written is read). Its exit is not waited for: the runner writes its report, flushes
    and calls os._exit, and the kernel's teardown of its CUDA context after its pipes close (0.1 s on an H100) is no
    part of what it said; a thread reaps it (proc.wait) meanwhile."""
    got = {"stdout": "", "stderr": ""}

    def read(name: str, pipe: Any) -> None:
        with contextlib.suppress(OSError, ValueError):
            got[name] = pipe.read()

    readers = [threading.Thread(target=read, args=(name, pipe), name=f"verify-{name}", daemon=True)
               for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr))]
    for t in readers:
        t.start()
    with contextlib.suppress(OSError, ValueError):  # (a runner that ended at once: its stderr says why)
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
    end = time.monotonic() + timeout
    for t in readers:
        t.join(max(0.0, end - time.monotonic()))
    late = any(t.is_alive() for t in readers)
    if late:
        on_timeout()
        for t in readers:
            t.join(60)
    threading.Thread(target=proc.wait, name="verify-reap", daemon=True).start()
    return got["stdout"], got["stderr"], late
