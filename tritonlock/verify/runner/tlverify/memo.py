# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""What a warm verify may skip, each keyed on everything it depends on, stored beside the venv's Triton and Inductor
caches (`<venv>/.tritonlock-cache`):

- Triton's `triton_key()`: the hash of Triton's own sources that prefixes every kernel's cache key. Triton computes it
  once per process by reading and hashing every compiler file (about 0.4 s on an H200 host); kept here under the
  size, mtime and inode of each of those files, so an install, upgrade or edit of Triton computes it again.
- The torch.compile check's passing row: Inductor's imports alone take seconds in every new process. Kept under the
  installed distributions (every RECORD on sys.path, every file it lists with its size and time, what the folders of
  installed files hold: at least what sync's damage check looks at), the interpreter, the NVIDIA driver and GPUs, the variables
  torch, Inductor and Triton read, and this runner's own sources; reused only by a warm run that finds all of them
  unchanged, and said so in its row. A failing row is never kept; `--no-reuse` and `--cold` always compile again.
- Which binaries a previous run compiled into the Triton cache ("warm"): a run without that record compiles them in
  worker processes rather than threads (see precompile.py).

Nothing here can change a verdict: a stale or unreadable record only costs the time it would have saved (a compile
check that runs, a triton_key() that is computed, binaries that Triton finds in its own cache anyway).
"""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
import time
from typing import Any

RUNNER_PACKAGE = os.path.dirname(os.path.abspath(__file__))
# environment variables that change what torch.compile, Inductor and Triton do (the compile check's key)
_ENV_PREFIXES = ("TORCH", "TRITON", "CUDA", "NVIDIA", "HIP", "ROCM", "ROCR", "HSA", "PYTORCH", "INDUCTOR", "CC",
                 "CXX", "LD_", "PATH", "ZE_", "ONEAPI", "SYCL")


def _hash(parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def read(path: str | None) -> dict[str, Any] | None:
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def write(path: str | None, doc: dict[str, Any]) -> None:
    """Atomically (a reader never sees half a file); silently not at all where the folder is not writable."""
    if not path:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".memo-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        os.replace(tmp, path)
    except OSError:
        pass


@functools.lru_cache(maxsize=None)
def tree_stat(root: str) -> list[tuple[str, int, int, int]]:
    """(relative path, size, mtime_ns, inode) of every file under root, byte-code caches aside."""
    out: list[tuple[str, int, int, int]] = []
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            path = os.path.join(here, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            out.append((os.path.relpath(path, root), st.st_size, st.st_mtime_ns, st.st_ino))
    return out


@functools.lru_cache(maxsize=None)
def runner_sources() -> str:
    """sha256 over this runner's own files: a new tritonlock (new checks, new kernels) is a new key."""
    h = hashlib.sha256()
    for name in sorted(os.listdir(RUNNER_PACKAGE)):
        if name.endswith(".py"):
            with open(os.path.join(RUNNER_PACKAGE, name), "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# Triton's triton_key()


def install_triton_key(memo_dir: str | None) -> str:
    """Serve Triton's triton_key() from the record when Triton's files are unchanged; otherwise let Triton compute it
    and record what it returns. Returns what happened, in words, for the report's notes ("" when nothing did)."""
    if not memo_dir:
        return ""
    try:
        import triton
        import triton.runtime.cache as cache
    except Exception:  # noqa: BLE001 - an unusual Triton: nothing to save
        return ""
    original = getattr(cache, "triton_key", None)
    get_cache_key = getattr(cache, "get_cache_key", None)
    # only a Triton whose cache keys are built by this module's get_cache_key calling its triton_key
    code = getattr(get_cache_key, "__code__", None)
    if original is None or code is None or "triton_key" not in code.co_names:
        return ""
    path = os.path.join(memo_dir, "triton-key.json")
    fingerprint = _hash([triton.__version__, os.path.dirname(triton.__file__),
                         tree_stat(os.path.dirname(triton.__file__))])
    doc = read(path)
    if doc and doc.get("fingerprint") == fingerprint and isinstance(doc.get("key"), str):
        key: str = doc["key"]

        def remembered() -> str:
            return key

        for mod_name in ("triton.runtime.cache", "triton.runtime.autotuner", "triton.compiler.compiler"):
            mod = sys.modules.get(mod_name)
            if mod is not None and getattr(mod, "triton_key", None) is original:
                setattr(mod, "triton_key", remembered)
        return "Triton's source hash (triton_key) read from the record kept with the Triton cache (Triton's files " \
               "are unchanged since it was computed)"

    written: list[bool] = []

    def computed() -> str:
        key = str(original())  # Triton's own lru_cache: computed once per process
        if not written:
            written.append(True)
            write(path, {"fingerprint": fingerprint, "key": key, "triton": triton.__version__})
        return key

    setattr(cache, "triton_key", computed)  # computed on first use, as before, and recorded for the next run
    return ""


# ---------------------------------------------------------------------------------------------
# The torch.compile check's row


def _recorded_files(entry: str, dist_info: str) -> list[str]:
    """The files a distribution's RECORD lists (byte-code caches aside), as paths under the sys.path entry."""
    try:
        with open(os.path.join(entry, dist_info, "RECORD"), encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return []
    if '"' in text:  # a quoted path (a comma in a name): the csv module reads it; plain rows need no parser
        import csv

        paths = [row[0] for row in csv.reader(text.splitlines()) if row]
    else:
        paths = [line.split(",", 1)[0] for line in text.splitlines()]
    return [p for p in paths if p and "__pycache__" not in p]


def _distributions() -> list[Any]:
    """Everything of the installed distributions on sys.path that sync's own check of a venv looks at, and more: every
    RECORD and metadata file, every file a RECORD lists with its size and modification time (an edit in place
    changes it, as a reinstall of the same version does), and what each folder holding installed files lists besides
    byte-code caches (a stray module beside an installed one). Any install, upgrade, reinstall, removal, edit or
    stray file changes it — the key is at least as strong as the damage check of `tritonlock sync` and doctor."""
    out: list[Any] = []
    folders: set[str] = set()
    stat = os.stat
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        out.append(("folder", entry, [n for n in names if n != "__pycache__"]))
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            for leaf in ("RECORD", "METADATA", "PKG-INFO"):
                path = os.path.join(entry, name, leaf)
                try:
                    st = stat(path)
                except OSError:
                    continue
                out.append((path, st.st_size, st.st_mtime_ns))
            for rel in _recorded_files(entry, name):
                path = os.path.normpath(os.path.join(entry or ".", rel))
                try:
                    st = stat(path)
                    out.append((path, st.st_size, st.st_mtime_ns))
                except (OSError, ValueError):
                    out.append((path, None, None))
                folders.add(os.path.dirname(path))
    for folder in sorted(folders):
        try:
            out.append(("folder", folder, sorted(n for n in os.listdir(folder) if n != "__pycache__")))
        except OSError:
            out.append(("folder", folder, None))
    return out


def _gpu_facts() -> list[str]:
    """What the kernel driver says about itself and its GPUs, read without CUDA: the NVIDIA driver's version and
    each GPU's information file; the visible-devices variables are in the environment part of the key."""
    out: list[str] = []
    for path in ("/proc/driver/nvidia/version", "/sys/module/amdgpu/version"):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                out.append(f.read())
        except OSError:
            pass
    gpus = "/proc/driver/nvidia/gpus"
    try:
        for bus in sorted(os.listdir(gpus)):
            with open(os.path.join(gpus, bus, "information"), encoding="utf-8", errors="replace") as f:
                out.append(f.read())
    except OSError:
        pass
    return out


def compile_check_key(opts: Any) -> str:
    """What the check's row depends on. Not what the lock expects (backend, triton pin): the check proves that
    torch.compile works in this environment, whatever a lock says of it, and the runner's own checks compare the
    environment with the lock on every run; the driver is in the GPU facts."""
    # tritonlock's own variables (TRITONLOCK_NODE, TRITONLOCK_VERIFY_*) change nothing torch.compile does
    env = {k: v for k, v in os.environ.items() if k.upper().startswith(_ENV_PREFIXES)
           and not k.upper().startswith("TRITONLOCK")}
    mode = {k: getattr(opts, k, None) for k in ("interpret",)}
    return _hash([sys.version, sys.executable, sys.prefix, _distributions(), _gpu_facts(), env, mode,
                  runner_sources()])


def compile_check_path(memo_dir: str | None) -> str | None:
    return os.path.join(memo_dir, "torch-compile-check.json") if memo_dir else None


def load_compile_check(memo_dir: str | None, key: str) -> dict[str, Any] | None:
    """The stored passing row when its key is this run's key, else None."""
    doc = read(compile_check_path(memo_dir))
    if not doc or doc.get("key") != key or not isinstance(doc.get("row"), dict) or not doc["row"].get("ok"):
        return None
    return doc


def save_compile_check(memo_dir: str | None, key: str, row: dict[str, Any], devices: list[str]) -> None:
    """Keep a passing row (a failing one is never kept: the next run compiles again)."""
    if row.get("ok") and row.get("mode") != "skipped":
        write(compile_check_path(memo_dir), {"key": key, "row": row, "devices": devices,
                                             "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())})


def forget_compile_check(memo_dir: str | None) -> None:
    path = compile_check_path(memo_dir)
    if path:
        try:
            os.unlink(path)
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# Which binaries are in the Triton cache


def _triton_dir() -> str | None:
    """Where triton is installed, found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    return os.path.dirname(spec.origin) if spec is not None and spec.origin else None


def _binaries_base(triton_dir: str | None) -> list[Any]:
    return [os.environ.get("TRITON_CACHE_DIR"), triton_dir, tree_stat(triton_dir) if triton_dir else None,
            runner_sources()]


def binaries_key(devices: list[str], job_keys: list[str]) -> str:
    return _hash([_binaries_base(_triton_dir()), devices, job_keys])


def _binaries_doc(memo_dir: str | None) -> dict[str, Any]:
    return read(os.path.join(memo_dir, "binaries.json") if memo_dir else None) or {}


def binaries_warm(memo_dir: str | None, key: str) -> bool:
    keys = _binaries_doc(memo_dir).get("keys")
    return isinstance(keys, list) and key in keys


def binaries_likely_warm(memo_dir: str | None, quick: bool) -> bool:
    """Before torch is imported (no GPUs known yet): did an earlier run of this runner, full or --quick as this one,
    compile its binaries with this Triton into this cache?"""
    likely = _binaries_doc(memo_dir).get("likely")
    return isinstance(likely, list) and _hash([_binaries_base(_triton_dir()), quick]) in likely


def save_binaries(memo_dir: str | None, key: str, quick: bool) -> None:
    """Record this run's binaries as compiled (the last few sets: full and --quick runs, several GPU kinds)."""
    if not memo_dir:
        return
    doc = _binaries_doc(memo_dir)
    out = {}
    for name, value in (("keys", key), ("likely", _hash([_binaries_base(_triton_dir()), quick]))):
        old = doc.get(name)
        out[name] = ([value] + [k for k in (old if isinstance(old, list) else []) if k != value])[:8]
    write(os.path.join(memo_dir, "binaries.json"), out)
