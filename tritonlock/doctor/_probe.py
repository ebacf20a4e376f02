"""Facts about one Python environment for `tritonlock doctor`, printed as JSON by that environment's interpreter."""

# Runs inside the venv being examined, on whatever Python it has (3.8+): standard library only, no
# tritonlock import, no annotations that need a newer Python. torch and triton are imported only in the
# "import" phase, every step guarded, so a broken install yields facts instead of a traceback; doctor
# runs the "static" phase first so that even an import that kills the interpreter leaves evidence.

from __future__ import annotations

import importlib
import json
import os
import platform
import re
import sys
import traceback
import warnings
from typing import Any

# Libraries the NVIDIA wheels ship and a system CUDA/cuDNN install also provides: the ones that shadow.
CUDA_LIB = re.compile(r"^lib(cudnn\w*|cublas\w*|cudart|nccl|cusparse\w*|cufft\w*|curand|cusolver\w*|nvrtc\w*|"
                      r"nvJitLink|cupti|nvToolsExt|cuda)\.so(\.\d+)*$")
ENV_KEYS = ("LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX",
            "PYTHONPATH", "PYTHONNOUSERSITE", "TRITON_PTXAS_PATH", "NVIDIA_DRIVER_CAPABILITIES")


def _err(exc: BaseException) -> str:
    return "%s: %s" % (type(exc).__name__, exc)


def _glibc() -> str | None:
    try:
        found = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        return None
    parts = found.split()
    return parts[1] if len(parts) == 2 and parts[0] == "glibc" else None


def _markers() -> dict[str, str]:
    # The PEP 508 marker environment, computed as packaging.markers.default_environment() does.
    impl = sys.implementation
    iv = impl.version
    impl_version = "%d.%d.%d" % (iv.major, iv.minor, iv.micro)
    if iv.releaselevel != "final":
        impl_version += iv.releaselevel[0] + str(iv.serial)
    return {
        "implementation_name": impl.name, "implementation_version": impl_version, "os_name": os.name,
        "platform_machine": platform.machine(), "platform_release": platform.release(),
        "platform_system": platform.system(), "platform_version": platform.version(),
        "python_full_version": platform.python_version(), "platform_python_implementation":
        platform.python_implementation(), "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    }


def _dists() -> list[dict[str, Any]]:
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8: doctor reports the interpreter as too old instead
        return []
    out = []
    for d in metadata.distributions():
        try:
            name = d.metadata["Name"]
            if not name:
                continue
            reqs = [r for r in (d.requires or []) if re.match(r"\s*(torch|triton|pytorch-triton)\b", r, re.I)]
            wheel = d.read_text("WHEEL") or ""
            out.append({
                "name": name, "version": d.version, "location": str(d.locate_file("")),
                "installer": (d.read_text("INSTALLER") or "").strip() or None,
                "requires_python": d.metadata["Requires-Python"], "requires": reqs,
                "tags": [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")],
            })
        except Exception:  # noqa: BLE001 - one broken dist-info must not hide the others
            continue
    return out


def _package_dirs(name: str) -> list[str]:
    found = []
    for entry in sys.path:
        if entry and os.path.isfile(os.path.join(entry, name, "__init__.py")):
            found.append(os.path.join(os.path.abspath(entry), name))
    return found


def _lib_dir_files(dirs: list[str]) -> dict[str, list[str]]:
    out = {}
    for d in dirs:
        try:
            names = sorted(n for n in os.listdir(d) if CUDA_LIB.match(n))
        except OSError:
            continue
        if names:
            out[d] = names
    return out


def _wheel_libs() -> list[str]:
    # Shared libraries the nvidia-* wheels put under site-packages/nvidia/<component>/lib.
    out = []
    for entry in sys.path:
        root = os.path.join(entry or ".", "nvidia")
        if not os.path.isdir(root):
            continue
        for comp in sorted(os.listdir(root)):
            lib = os.path.join(root, comp, "lib")
            if os.path.isdir(lib):
                out += [os.path.join(lib, n) for n in sorted(os.listdir(lib)) if CUDA_LIB.match(n)]
    return out


def _conda_packages() -> list[str] | None:
    meta = os.path.join(sys.prefix, "conda-meta")
    if not os.path.isdir(meta):
        return None
    # conda-meta/<name>-<version>-<build>.json: the name is all but the last two dash-separated fields.
    return sorted(f[:-5].rsplit("-", 2)[0] for f in os.listdir(meta) if f.endswith(".json") and f.count("-") >= 2)


def static() -> dict[str, Any]:
    ld = os.environ.get("LD_LIBRARY_PATH") or ""
    return {
        "phase": "static", "python": platform.python_version(), "executable": sys.executable,
        "prefix": sys.prefix, "base_prefix": getattr(sys, "base_prefix", sys.prefix), "glibc": _glibc(),
        "markers": _markers(), "env": {k: os.environ.get(k) for k in ENV_KEYS if os.environ.get(k) is not None},
        "sys_path": [p for p in sys.path if p], "dists": _dists(), "conda_packages": _conda_packages(),
        "torch_dirs": _package_dirs("torch"), "triton_dirs": _package_dirs("triton"),
        "ld_library_path_libs": _lib_dir_files([d for d in ld.split(os.pathsep) if d]),
        "wheel_libs": _wheel_libs(),
    }


def _loaded_libs() -> list[str]:
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split(None, 5)[5].strip() for line in fh if len(line.split(None, 5)) == 6}
    except OSError:
        return []
    return sorted(p for p in paths if CUDA_LIB.match(os.path.basename(p)))


def _libcuda() -> dict[str, Any]:
    if not sys.platform.startswith("linux"):
        return {}
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return {"error": str(exc)}
    paths = [p for p in _loaded_libs() if os.path.basename(p).startswith("libcuda.so")]
    return {"path": paths[0] if paths else None}


def _torch() -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        torch = importlib.import_module("torch")
    except BaseException as exc:  # noqa: BLE001 - ImportError, OSError, even SystemExit from a broken install
        out["error"] = _err(exc)
        out["traceback"] = traceback.format_exc()[-4000:]
        return out
    out["version"] = str(getattr(torch, "__version__", "")) or None
    out["file"] = getattr(torch, "__file__", None)
    out["hip"] = getattr(torch.version, "hip", None)  # a ROCm build: torch.version.cuda is None there
    try:
        out["cuda"] = torch.version.cuda
    except Exception as exc:  # noqa: BLE001
        out["cuda_error"] = _err(exc)
        return out
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out["cuda_available"] = bool(torch.cuda.is_available())
            out["device_count"] = int(torch.cuda.device_count())
            out["arch_list"] = list(torch.cuda.get_arch_list())
            devices = []
            for i in range(out["device_count"] if out["cuda_available"] else 0):
                cc = torch.cuda.get_device_capability(i)
                devices.append({"name": torch.cuda.get_device_name(i), "cc": "%d.%d" % tuple(cc)})
            out["devices"] = devices
        except Exception as exc:  # noqa: BLE001 - a failed CUDA init is a fact to report
            out["cuda_error"] = _err(exc)
    out["warnings"] = [str(w.message) for w in caught]
    return out


def _triton() -> dict[str, Any]:
    try:
        triton = importlib.import_module("triton")
    except BaseException as exc:  # noqa: BLE001
        return {"error": _err(exc)}
    return {"version": str(getattr(triton, "__version__", "")) or None, "file": getattr(triton, "__file__", None)}


def imports() -> dict[str, Any]:
    out: dict[str, Any] = {"phase": "import", "libcuda": _libcuda()}
    out["torch"] = _torch()
    out["triton"] = _triton()
    out["loaded_libs"] = _loaded_libs()
    return out


def main() -> None:
    phase = sys.argv[1] if len(sys.argv) > 1 else "static"
    facts = imports() if phase == "import" else static()
    sys.stdout.write("\n@@tritonlock-doctor@@" + json.dumps(facts) + "\n")


if __name__ == "__main__":
    main()
