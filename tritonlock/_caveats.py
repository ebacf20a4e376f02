"""What a verify run cannot vouch for (the caveats a record carries): overridden host facts, a foreign interpreter."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from tritonlock.models import HostProfile


def run_caveats(host: HostProfile, result: Any, *, interpreter: str, venv: Path | None,
                target: str) -> tuple[str, ...]:
    """What a verify run on this machine cannot vouch for: host facts that TRITONLOCK_* overrides set instead of
    detection, an interpreter that is not a venv `tritonlock sync` completed for this target (anything could answer
    there, a script that prints a passing report included), and a GPU run reported where no driver was found."""
    from tritonlock.environment._noop import read_synced
    from tritonlock.host.described import ENV_PREFIX, OVERRIDE_KEYS

    out: list[str] = []
    names = [ENV_PREFIX + k.upper() for k in OVERRIDE_KEYS if os.environ.get(ENV_PREFIX + k.upper(), "").strip()]
    if names:
        out.append(f"host facts set by {', '.join(names)}, not detected")
    stamp = read_synced(venv) if venv is not None else None
    if stamp is None or stamp.get("target") != target:
        from tritonlock._term import printable

        out.append(f"interpreter {printable(os.path.abspath(interpreter), 200)} is not in a venv that `tritonlock sync` made for "
                   f"target {target}")
    if result.mode == "gpu" and host.driver is None:
        out.append("the run says it used a GPU, but no NVIDIA driver was found on this machine")
    if venv is not None:
        why = _interpreter_caveat(venv, interpreter)
        if why:
            out.append(why)
    why = _driver_caveat(host)
    if why:
        out.append(why)
    return tuple(out)


def _same_bytes(a: str, b: str) -> bool:
    try:
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return hashlib.sha256(fa.read()).digest() == hashlib.sha256(fb.read()).digest()
    except OSError:
        return False


def _interpreter_caveat(venv: Path, interpreter: str) -> str | None:
    """What ran must be the Python the venv was made on: its pyvenv.cfg names that base interpreter (`home`), and the
    venv's interpreter is a link to it (or, made with --copies or on Windows, a copy of its bytes). One replaced
    after the venv was made — a script that prints a passing report — is not; what answered then cannot be told."""
    from tritonlock._term import printable
    from tritonlock.environment._venv import venv_config

    home = venv_config(venv).get("home")
    exe = os.path.abspath(interpreter)
    if not home:
        return f"{printable(str(venv), 200)}/pyvenv.cfg names no base interpreter (home): what ran cannot be checked"
    real = os.path.realpath(exe)
    names = {os.path.basename(exe), "python", "python3", "python.exe", os.path.basename(real)}
    bases = [os.path.join(home, n) for n in sorted(names) if os.path.isfile(os.path.join(home, n))]
    if any(os.path.realpath(b) == real for b in bases) or (
            not os.path.islink(exe) and any(_same_bytes(exe, os.path.realpath(b)) for b in bases)):
        return None
    return (f"interpreter {printable(exe, 200)} is not the Python its venv was made on (pyvenv.cfg home = "
            f"{printable(home, 200)}): it was replaced after the venv was made, so what answered cannot be told")


def _driver_caveat(host: HostProfile) -> str | None:
    """The NVIDIA driver as read only from an `nvidia-smi` on PATH (NVML did not answer), checked against what the
    kernel says (/proc/driver/nvidia/version): a program on PATH can print any driver and GPU, the kernel module
    cannot be faked without root."""
    import shutil
    import sys

    if host.driver is None or not sys.platform.startswith("linux") or "driver: nvidia-smi" not in host.probes:
        return None
    from tritonlock._term import printable
    from tritonlock.host import _probes

    smi = printable(shutil.which("nvidia-smi") or "nvidia-smi", 200)
    kernel = _probes.proc_driver()
    if kernel is None or kernel.driver is None:
        return (f"the NVIDIA driver ({host.driver}) and GPUs were read only from {smi} (NVML did not answer), and the "
                "kernel shows no NVIDIA driver (/proc/driver/nvidia/version): nothing here shows a GPU was used")
    if kernel.driver != host.driver:
        return (f"{smi} says driver {host.driver}, the kernel's module is {kernel.driver} "
                "(/proc/driver/nvidia/version): not the driver the record names")
    return None
