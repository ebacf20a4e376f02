"""A cheap fingerprint of the machine as host detection sees it (a leaf module: standard library only)."""

from __future__ import annotations

import hashlib
import json


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def raw_machine_key() -> str | None:
    """A cheap fingerprint of what host detection reads on Linux; None elsewhere (detect instead).

    It changes with the driver (/proc/driver/nvidia), the GPUs (their /proc entries and /dev nodes, which a
    container without --gpus lacks), glibc, the Python, and the variables that steer detection.
    """
    import glob
    import os
    import sys

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
        [_read(f) for f in sorted(glob.glob("/proc/driver/nvidia/gpus/*/information"))],
        sorted(glob.glob("/dev/nvidia[0-9]*")), wsl_stat,
        sorted((k, v) for k, v in os.environ.items()
               if k.startswith("TRITONLOCK_") or k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")),
        # AMD and Intel GPUs: KFD's nodes, the amdgpu module, /dev/kfd, the override; display devices on the bus
        [_read(f) for f in sorted(glob.glob("/sys/class/kfd/kfd/topology/nodes/*/gpu_id"))],
        _read("/sys/module/amdgpu/version"), os.path.exists("/dev/kfd"),
        sorted((k, v) for k, v in os.environ.items()
               if k in ("HSA_OVERRIDE_GFX_VERSION", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")),
        sorted(glob.glob("/sys/bus/pci/drivers/xe/0000:*") + glob.glob("/sys/bus/pci/drivers/i915/0000:*")),
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()
