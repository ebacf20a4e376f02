"""A cheap fingerprint of the machine as host detection sees it (a leaf module: standard library only, and of that
only what Python's start-up has already loaded — the no-op sync computes it)."""

from __future__ import annotations

import os
import sys


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def _entries(folder: str, match: object, leaf: str = "") -> list[str]:
    """What glob.glob(folder + "/PATTERN" + leaf) gives (sorted): the entries of `folder` that `match` accepts, not
    hidden, joined with `leaf` where that exists."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    out = []
    for n in names:
        if n.startswith(".") or not match(n):  # type: ignore[operator]
            continue
        path = os.path.join(folder, n, leaf) if leaf else os.path.join(folder, n)
        if not leaf or os.path.lexists(path):
            out.append(path)
    return sorted(out)


def _json(v: object) -> str:
    """json.dumps(v) for what the key holds (strings, numbers, booleans, lists and tuples of them), without
    importing json: the digest of every lock's input stays what it was."""
    if isinstance(v, str):
        try:
            from _json import encode_basestring_ascii
        except ImportError:  # pragma: no cover - an interpreter without the C accelerator
            import json

            return json.dumps(v)
        return str(encode_basestring_ascii(v))
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_json(x) for x in v) + "]"
    raise TypeError(type(v))


def _sha256() -> object:
    try:
        from _sha2 import sha256  # type: ignore[import-not-found, unused-ignore]  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found, no-redef, unused-ignore]
        except ImportError:  # pragma: no cover
            from hashlib import sha256
    return sha256


_SHA256: list[object] = []


def sha256_hex(data: bytes) -> str:
    """hashlib.sha256(data).hexdigest() through the interpreter's own sha256 where it has one (hashlib's first import
    loads OpenSSL, about as long as the rest of a no-op sync)."""
    if not _SHA256:
        _SHA256.append(_sha256())
    return str(_SHA256[0](data).hexdigest())  # type: ignore[operator]


def raw_machine_key() -> str | None:
    """A cheap fingerprint of what host detection reads on Linux; None elsewhere (detect instead).

    It changes with the driver (/proc/driver/nvidia), the GPUs (their /proc entries and /dev nodes, which a
    container without --gpus lacks), glibc, the Python, and the variables that steer detection.
    """
    if not sys.platform.startswith("linux"):
        return None
    wsl = "/usr/lib/wsl/lib/libnvidia-ml.so.1"
    try:
        wsl_stat = str(os.stat(wsl).st_mtime_ns)
    except OSError:
        wsl_stat = ""
    parts = [
        os.uname().machine, os.confstr("CS_GNU_LIBC_VERSION") or "", list(sys.version_info[:2]),
        _read("/proc/driver/nvidia/version"),
        [_read(f) for f in _entries("/proc/driver/nvidia/gpus", lambda n: True, "information")],
        _entries("/dev", lambda n: n.startswith("nvidia") and len(n) > 6 and "0" <= n[6] <= "9"), wsl_stat,
        sorted((k, v) for k, v in os.environ.items()
               if k.startswith("TRITONLOCK_") or k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")),
        # AMD and Intel GPUs: KFD's nodes, the amdgpu module, /dev/kfd, the override; display devices on the bus
        [_read(f) for f in _entries("/sys/class/kfd/kfd/topology/nodes", lambda n: True, "gpu_id")],
        _read("/sys/module/amdgpu/version"), os.path.exists("/dev/kfd"),
        sorted((k, v) for k, v in os.environ.items()
               if k in ("HSA_OVERRIDE_GFX_VERSION", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")),
        sorted(_entries("/sys/bus/pci/drivers/xe", lambda n: n.startswith("0000:"))
               + _entries("/sys/bus/pci/drivers/i915", lambda n: n.startswith("0000:"))),
    ]
    return sha256_hex(_json(parts).encode())
