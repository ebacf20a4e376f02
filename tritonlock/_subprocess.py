"""The one place that runs other programs: argument lists, no shell, captured output."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence


_UV_BIN: list[str] = []
_UV_BIN_LOCK = threading.Lock()


def uv_bin() -> str:
    """The uv binary shipped by the `uv` package, else one on PATH, found once, under a lock: sysconfig (which the
    `uv` package asks) is not thread-safe, and a resolve's reader threads may ask while the main thread does."""
    with _UV_BIN_LOCK:
        if not _UV_BIN:
            _UV_BIN.append(_find_uv_bin())
        return _UV_BIN[0]


def _find_uv_bin() -> str:
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found is None:
            from tritonlock.errors import UvMissingError

            raise UvMissingError("uv is not installed — `pip install uv` in tritonlock's environment (tritonlock "
                                 "drives uv for resolution and installs)")
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


def named_python(given: str) -> str:
    """A --python given as a command's name (python3, python3.12) is the interpreter PATH finds for it, as uv and a
    shell take it; a path (anything with a separator), or a name PATH does not have, stays as given."""
    # (shutil.which takes a path with a separator as it is: the path itself where it is an executable, else None)
    return (shutil.which(given) or given) if given else given


_PYTHONS: dict[str, str] = {}  # target Python version → the interpreter uv's compiles get (see resolver_python)


def find_resolver_python(version: str) -> None:
    """Start finding the interpreter for `version` in the background (resolver_python says once it is found)."""
    import threading

    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        _PYTHONS[version] = sys.executable
    elif version not in _PYTHONS:
        kept = _kept_python(version)
        if kept is not None:  # what uv found last time, where nothing it looks at changed since
            _PYTHONS[version] = kept or sys.executable
            return
        _PYTHONS.setdefault(version, "")
        threading.Thread(target=_find_python, args=(version,), daemon=True, name="tritonlock-find-python").start()


def resolver_python(version: str) -> str | None:
    """The interpreter `uv pip compile` gets for a target's Python `version`, once find_resolver_python found it: one
    of that version on this machine where uv finds one, else this one (uv's own fallback) — never downloaded. Passed
    with --python, it spares each compile uv's own discovery (about half a second a compile; with Python downloads
    allowed, uv fetches a CPython build just to resolve for another version). None while it is being found: that
    compile lets uv look itself. The interpreter only runs source builds for their metadata; what is locked follows
    --python-version and --python-platform."""
    return _PYTHONS.get(version) or None


def _find_python(version: str) -> None:
    try:
        # --system: not a project's .venv (it may be broken, or anything) — any interpreter of the version will do
        proc = subprocess.run([uv_bin(), "python", "find", "--system", "--no-config", "--no-python-downloads",
                               version], capture_output=True, text=True, timeout=60, env=clean_env(), check=False)
        found = proc.stdout.strip().splitlines()[-1:] if proc.returncode == 0 else []
    except (OSError, subprocess.SubprocessError):
        found = []
    got = found[0] if found and os.path.isfile(found[0]) else ""
    _keep_python(version, got)  # (kept before it is told: whoever sees the answer finds it kept)
    _PYTHONS[version] = got or sys.executable


# uv's answer to `uv python find VERSION` is kept a day, under what it depends on: the version, PATH and the times of
# its folders (an interpreter installed or removed there, a pyenv rehash, changes them), uv's own Pythons' folder and
# preference. A kept interpreter that is gone is found again. (It spares each resolve for another Python than this one
# the search — about 0.4 s here — and lets the first compile have its interpreter.)
_KEPT_SECONDS = 86400


def _kept_file(version: str) -> str:
    import hashlib

    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    places = [*os.environ.get("PATH", "").split(os.pathsep),
              os.environ.get("UV_PYTHON_INSTALL_DIR") or os.path.join(data, "uv", "python")]
    parts = [version, os.environ.get("UV_PYTHON_PREFERENCE", ""), sys.executable]
    for place in places:
        try:
            parts.append(f"{place}\0{os.stat(place).st_mtime_ns}")
        except (OSError, ValueError):
            parts.append(f"{place}\0-")
    key = hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    from tritonlock._files import user_cache

    return user_cache("pythons", key)


def _kept_python(version: str) -> str | None:
    """The interpreter kept for `version` ("" for none found), or None: nothing kept, too old, or gone."""
    import time

    try:
        path = _kept_file(version)
        if time.time() - os.stat(path).st_mtime > _KEPT_SECONDS:
            return None
        from tritonlock._files import read_text

        text = read_text(path, limit=4096)  # (a regular file only: a FIFO or device planted there is never waited on)
    except (OSError, ValueError):
        return None
    lines = text.split("\n")  # the header, the interpreter ("" for none found), nothing after the last newline
    if len(lines) != 3 or lines[0] != f"tritonlock-python {version}" or lines[2]:
        return None
    return lines[1] if not lines[1] or os.path.isfile(lines[1]) else None


def _keep_python(version: str, got: str) -> None:
    from tritonlock._files import write_atomic

    try:
        path = _kept_file(version)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        write_atomic(path, f"tritonlock-python {version}\n{got}\n", mode=0o600, what="resolve")
    except Exception:  # noqa: BLE001 — a cache that cannot be written is simply not kept (a planted link, a full disk)
        pass


# The user's uv settings that may reach tritonlock's uv runs: where uv keeps its cache and Pythons, how it talks to
# the network, how it links files. Every other UV_* variable (UV_OVERRIDE, UV_CONSTRAINT, UV_RESOLUTION,
# UV_PRERELEASE, UV_INDEX*, UV_EXTRA_INDEX_URL, UV_FIND_LINKS, UV_NO_BINARY, UV_OFFLINE, UV_PYTHON, …) would change
# what is locked or installed behind the lock's back, and is dropped: tritonlock passes what it means explicitly.
UV_ALLOWED = frozenset({
    "UV_CACHE_DIR", "UV_NO_CACHE", "UV_PYTHON_DOWNLOADS", "UV_PYTHON_INSTALL_DIR", "UV_PYTHON_PREFERENCE",
    "UV_NO_PROGRESS", "UV_NO_COLOR", "UV_HTTP_TIMEOUT", "UV_REQUEST_TIMEOUT", "UV_HTTP_RETRIES",
    "UV_CONCURRENT_DOWNLOADS", "UV_CONCURRENT_BUILDS", "UV_CONCURRENT_INSTALLS", "UV_LINK_MODE",
    "UV_SYSTEM_CERTS", "UV_NATIVE_TLS",
})


def clean_env(unset: Sequence[str] = ()) -> dict[str, str]:
    """This process's environment for a child: without `unset`, without any UV_* setting outside UV_ALLOWED, and
    without RUST_LOG (a Rust developer's own setting would have uv write its log into the words tritonlock reads and
    shows; a compile that wants uv's warnings asks for them itself)."""
    return {k: v for k, v in os.environ.items()
            if k not in unset and k != "RUST_LOG" and not (k.startswith("UV_") and k not in UV_ALLOWED)}


# The Event that stops the runs of the thread it is set in (`stoppable`): a background answer no longer needed
_STOP = threading.local()


class stoppable:
    """Within this block, a `run` of this thread stops (its child killed, subprocess.TimeoutExpired raised) once
    `event` is set: uv's background answer to the packages decision, once the decision no longer needs it."""

    def __init__(self, event: threading.Event) -> None:
        self.event = event

    def __enter__(self) -> None:
        _STOP.event = self.event

    def __exit__(self, *exc: object) -> None:
        _STOP.event = None


# uv looks names up itself (tritonlock's own lookups: tritonlock._dns). Two uv processes started in the same instant ask
# the name server at once, and a resolver that drops one query of such a burst (the conntrack race of parallel UDP
# queries that Kubernetes pods are known for; this project's own build box) answers it only after its retry timeout,
# 5 s by default: measured, two `uv pip compile --no-deps` reads of vLLM's closure started together — one took 5.8 s
# instead of 0.9 s in 7 pairs of 14; started 0.15 s or 0.4 s apart, in 0 of 8 each. So the uv runs that go online
# start STAGGER_S apart (a wait only where one started that recently; offline runs look nothing up).
STAGGER_S = 0.2
_online_start = [float("-inf")]
_online_lock = threading.Lock()


def _stagger(args: Sequence[str]) -> None:
    import time

    # (UV_OFFLINE never reaches a child: clean_env drops it, and tritonlock says --offline where it means it)
    if not args or os.path.basename(str(args[0])) not in ("uv", "uv.exe") or "--offline" in args:
        return
    with _online_lock:  # (held while waiting: each start waits its turn)
        wait = _online_start[0] + STAGGER_S - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        _online_start[0] = time.monotonic()


def run(args: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
        timeout: float | None = None, unset: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """Run and capture; the caller decides what a non-zero exit means. `unset` drops inherited variables (and
    every UV_* setting outside UV_ALLOWED is dropped always). uv runs that go online start STAGGER_S apart."""
    full_env = clean_env(unset)
    full_env.setdefault("UV_NO_PROGRESS", "1")
    if env:
        full_env.update(env)
    _stagger(args)
    stop = getattr(_STOP, "event", None)
    if stop is None:
        return subprocess.run(list(args), env=full_env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              check=False)
    import time

    end = None if timeout is None else time.monotonic() + timeout
    with subprocess.Popen(list(args), env=full_env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        while True:
            try:
                out, err = proc.communicate(timeout=0.05)
                return subprocess.CompletedProcess(list(args), proc.returncode, out, err)
            except subprocess.TimeoutExpired:
                if stop.is_set() or (end is not None and time.monotonic() > end):
                    proc.kill()
                    proc.communicate()
                    raise subprocess.TimeoutExpired(list(args), timeout or 0) from None


def run_shielded(args: Sequence[str], *, env: Mapping[str, str] | None = None, capture: bool = True,
                 on_interrupt: Callable[[str], None] = lambda s: None, unset: Sequence[str] = (),
                 shield: bool = True) -> tuple[int, str, bool]:
    """Run a step that must not stop half-way (an install into a venv in use): Ctrl-C reaches only us, and the
    child finishes. Returns (exit code, captured stderr, whether Ctrl-C was pressed meanwhile).

    The child gets its own session, so the terminal's SIGINT is not delivered to it. A first Ctrl-C
    says so and keeps waiting; a second one stops the child and re-raises KeyboardInterrupt. With `shield` False
    (nothing to protect: a venv built beside the old one) the first Ctrl-C stops the child at once and re-raises.
    """
    import tempfile

    full_env = clean_env(unset)
    if env:
        full_env.update(env)
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as err:
        proc = subprocess.Popen(list(args), env=full_env, stdout=subprocess.DEVNULL if capture else None,
                                stderr=err if capture else None, start_new_session=True, text=True)
        interrupted = False
        try:
            while True:
                try:
                    rc = proc.wait()
                    break
                except KeyboardInterrupt:
                    if interrupted or not shield:
                        raise
                    interrupted = True
                    on_interrupt("interrupted: letting the install finish so the environment is not left "
                                 "half-done (press Ctrl-C again to stop now)")
        except KeyboardInterrupt:
            # wherever the second Ctrl-C lands — in the wait, or while the first one is being said — the child stops
            # with it: one left running would go on changing the venv after its state was reported
            _stop(proc)
            raise
        err.seek(0)
        return rc, err.read() if capture else "", interrupted


def _stop(proc: subprocess.Popen[str]) -> None:
    """Stop a child (and what it started: it leads its own session) now; a third Ctrl-C does not interrupt this."""
    import signal

    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 30.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError, AttributeError):
            proc.terminate() if sig == signal.SIGTERM else proc.kill()
        while True:
            try:
                proc.wait(timeout=wait)
                return
            except KeyboardInterrupt:
                continue
            except subprocess.TimeoutExpired:
                break
