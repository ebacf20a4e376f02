# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""Environment checks run before any kernel: torch and triton import, the CUDA build, the GPU arch, Triton's ptxas."""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
import warnings
from typing import Any

from .report import Report, tail as _tail

_SYNC_FIX = "recreate the environment from the lock (`tritonlock sync`) instead of mixing pip installs"

# Filled by load_triton() once the interpreter decision is made: TRITON_INTERPRET is read
# when triton is imported and when a kernel is decorated, so neither may happen earlier.
triton: Any = None


def _explain_import_error(pkg: str, text: str, missing: str | None = None) -> tuple[str, str]:
    """Plain words and a fix for an ImportError text; `missing` is ModuleNotFoundError.name."""
    if missing and missing.split(".")[0] != pkg:
        return (f"{pkg} is installed, but importing it needs the module {missing!r}, which this environment "
                f"lacks ({text})", f"install what provides {missing!r}: lock it (add it to packages in "
                "triton-env.toml, `tritonlock resolve`) and `tritonlock sync`")
    if "undefined symbol" in text:
        return (f"{pkg} failed to import: {text}. An 'undefined symbol' means a torch/triton/CUDA "
                "library mix: a library built against a different version of another was loaded",
                _SYNC_FIX)
    if "cannot open shared object file" in text or re.search(r"lib(cu|nv|cudnn|nccl)\w*\.so", text):
        return (f"{pkg} failed to import: {text}. A CUDA library {pkg} needs is missing or not on "
                "the loader path (the nvidia-* wheels of this torch build are not all installed)",
                _SYNC_FIX)
    if text.startswith("No module named"):
        return f"{pkg} is not installed in this environment ({text})", "install the lock: `tritonlock sync`"
    return f"{pkg} failed to import: {text}", _SYNC_FIX


def import_torch(r: Report) -> Any:
    try:
        import torch
    except Exception as e:  # ImportError, OSError from the dynamic loader, anything from torch init
        text = str(e) if isinstance(e, ModuleNotFoundError) else f"{type(e).__name__}: {e}"
        detail, fix = _explain_import_error("torch", text, e.name if isinstance(e, ModuleNotFoundError) else None)
        r.check("torch imports", False, detail, fix)
        return None
    r.torch = torch.__version__
    r.check("torch imports", True, f"torch {torch.__version__} from {os.path.dirname(torch.__file__)}")
    return torch


def expected_cuda(backend: str) -> tuple[str, str | None] | None:
    """("cuda"|"hip", version or None) for a backend name; None when it is not one we can check."""
    if backend == "cpu":
        return ("cuda", None)
    m = re.fullmatch(r"cu(\d+)(\d)", backend)
    if m:
        return ("cuda", f"{int(m.group(1))}.{m.group(2)}")
    m = re.fullmatch(r"rocm(\d+\.\d+)(?:\.\d+)?", backend)
    if m:
        return ("hip", m.group(1))
    return None


def check_backend(r: Report, torch: Any, backend: str | None) -> None:
    cuda = torch.version.cuda
    hip = getattr(torch.version, "hip", None)
    built = f"CUDA {cuda}" if cuda else (f"ROCm {hip}" if hip else "CPU only")
    if backend is None:
        r.check("torch CUDA build", True, f"torch is built for {built} (no backend to compare with)")
        return
    want = expected_cuda(backend)
    if want is None:
        r.check("torch CUDA build", True, f"torch is built for {built}; backend {backend!r} is not one "
                "this check knows how to compare")
        return
    kind, version = want
    if kind == "hip":
        ok = bool(hip) and str(hip).startswith(version or "")
    else:
        ok = cuda == version and not hip
    want_words = "CPU only (torch.version.cuda is None)" if version is None else (
        f"{'ROCm' if kind == 'hip' else 'CUDA'} {version}")
    if ok:
        r.check("torch CUDA build", True, f"torch {torch.__version__} is built for {built}, as backend "
                f"{backend} expects")
    else:
        r.check("torch CUDA build", False,
                f"the lock's backend is {backend} ({want_words}) but torch {torch.__version__} is built "
                f"for {built} (torch.version.cuda is {cuda!r}): a torch wheel from another index "
                "was installed",
                f"reinstall torch from the {backend} index: `tritonlock sync`")


def driver_version() -> str | None:
    """The NVIDIA kernel driver version, or None when none is visible to this process."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as f:
            m = re.search(r"\b(\d{3,}\.\d+(?:\.\d+)?)\b", f.readline())
            if m:
                return m.group(1)
    except OSError:
        pass
    try:  # WSL and some containers have no /proc entry but a working nvidia-smi
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        return out.split()[0] if out.split() else None
    except (OSError, subprocess.SubprocessError):
        return None


def check_cuda(r: Report, torch: Any, expect_gpu: bool | None, driver: str | None) -> bool:
    """True when the GPU path can be used; records the check."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = bool(torch.cuda.is_available())
    if available:
        n = torch.cuda.device_count()
        r.check("CUDA available", True, f"torch.cuda.is_available() is True; {n} GPU(s) visible")
        return True
    driver = driver or driver_version()  # what the caller detected beats probing again
    if expect_gpu is not True:
        why = "no GPU expected" if expect_gpu is False else "no GPU visible"
        r.check("CUDA available", True, f"{why}: torch.cuda.is_available() is False "
                f"(torch.version.cuda is {torch.version.cuda!r}, driver {driver or 'none found'})")
        return False
    host = f"this host has NVIDIA driver {driver}" if driver else "a GPU was expected"
    head = f"torch.cuda.is_available() is False although {host}"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if torch.version.cuda is None and not getattr(torch.version, "hip", None):
        detail = (f"{head}: this is a CPU-only torch ({torch.__version__}, torch.version.cuda is None), "
                  "so it can never use the GPU")
        fix = "install the lock's CUDA build of torch: `tritonlock sync` (check that no CPU wheel from another index replaced it)"
    elif visible is not None and visible.strip() in ("", "-1", "none", "NoDevFiles"):
        detail = f"{head}: CUDA_VISIBLE_DEVICES={visible!r} hides every GPU from this process"
        fix = "unset CUDA_VISIBLE_DEVICES or list the GPUs to use"
    elif driver is None:
        detail = (f"{head}, but no NVIDIA driver is visible to this process "
                  "(/proc/driver/nvidia/version is missing and nvidia-smi does not answer)")
        fix = "install the NVIDIA driver, or in a container pass the GPU through (docker run --gpus all)"
    else:
        reason = "; ".join(str(w.message) for w in caught).strip()
        try:
            torch.cuda.init()
        except Exception as e:  # the real reason CUDA is unusable is only in this exception's text
            reason = f"{reason}; {e}".strip("; ")
        detail = (f"{head}: torch {torch.__version__} is built for CUDA {torch.version.cuda} and could "
                  f"not initialise CUDA: {reason or 'no reason given'}")
        fix = _cuda_init_fix(reason)
    r.check("CUDA available", False, detail, fix)
    return False


# What CUDA's runtime says when it cannot start (cudaGetErrorString's words, as torch passes them on), by cause: the
# driver older than the build's CUDA (cudaErrorInsufficientDriver, 35), or no GPU this process can use
# (cudaErrorNoDevice, 100; cudaErrorDevicesUnavailable, 46: every GPU busy in an exclusive compute mode)
_DRIVER_TOO_OLD = ("too old", "insufficient", "driver version is insufficient", "error 35")
_NO_DEVICE = ("no cuda-capable device", "no_device", "error 100", "devices unavailable", "busy or unavailable",
              "error 46")


def _cuda_init_fix(reason: str) -> str:
    """The next step for a CUDA torch that cannot start CUDA although a driver is there, from the runtime's words."""
    said = reason.lower()
    if any(w in said for w in _DRIVER_TOO_OLD):
        return ("the driver is older than torch's CUDA build: pick a build this driver runs (`tritonlock resolve` "
                "decides for this host's driver; a lock made elsewhere: `tritonlock host` shows what it sees) or "
                "update the driver")
    if any(w in said for w in _NO_DEVICE):
        return ("the driver answers but gives this process no GPU: `nvidia-smi` lists what the driver sees; in a "
                "container, pass the GPU through (docker run --gpus all; Kubernetes: an nvidia.com/gpu resource); "
                "a GPU in exclusive compute mode may be held by another process")
    return ("`nvidia-smi` shows the driver's view of the GPUs; `tritonlock doctor` names the classic causes (a driver "
            "older than torch's CUDA, a container without the GPU, a hidden device)")


def _arch_runs(entry: str, major: int, minor: int) -> bool:
    """Whether one torch.cuda.get_arch_list() entry can run on a GPU of compute capability major.minor.

    CUDA compatibility rules: SASS (sm_XY) runs on the same major with an equal or higher minor
    (sm_80 runs on 8.6 and 8.9, never on 9.0); arch-specific sm_XYa only on exactly X.Y; family
    sm_XYf on the same major with minor >= Y; PTX (compute_XY) is JIT-compiled by the driver for
    any GPU with capability >= X.Y.
    """
    m = re.fullmatch(r"(sm|compute)_(\d+)(\d)([af]?)", entry)
    if not m:
        return False
    kind, emaj, emin, suffix = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
    if kind == "compute":
        return (major, minor) >= (emaj, emin) and suffix != "a"
    if suffix == "a":
        return (major, minor) == (emaj, emin)
    return major == emaj and minor >= emin


def check_archs_hip(r: Report, torch: Any) -> None:
    """ROCm: each GPU's gfx target (gcnArchName) must be in the build (no cross-target compatibility), and which
    Triton backend compiles for it."""
    archs = {a.split(":")[0] for a in torch.cuda.get_arch_list()}
    try:
        import triton

        target = triton.runtime.driver.active.get_current_target()
        tbackend = f"{target.backend} {target.arch}"
    except Exception as exc:  # noqa: BLE001 - an old or broken Triton: a fact to report, not a crash
        tbackend = f"unknown ({type(exc).__name__})"
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        gfx = str(getattr(props, "gcnArchName", "") or "?").split(":")[0]
        r.gpus.append(f"cuda:{i} {props.name} ({gfx}, {props.total_memory / 2**30:.1f} GiB; HIP "
                      f"{torch.version.hip}; Triton backend {tbackend})")
        r.check(f"GPU arch cuda:{i}", gfx in archs,
                f"{props.name} is {gfx}; torch {torch.__version__} is built for {', '.join(sorted(archs))}"
                + ("" if gfx in archs else f": no code object for {gfx}, so torch's own GPU code cannot run"),
                None if gfx in archs else "`tritonlock resolve` picks a ROCm build that carries this gfx target")


def check_archs(r: Report, torch: Any) -> None:
    if getattr(torch.version, "hip", None):
        return check_archs_hip(r, torch)
    archs = list(torch.cuda.get_arch_list())
    for i in range(torch.cuda.device_count()):
        major, minor = torch.cuda.get_device_capability(i)
        props = torch.cuda.get_device_properties(i)
        label = f"cuda:{i} {props.name} (sm_{major}{minor}, {props.total_memory / 2**30:.1f} GiB)"
        r.gpus.append(label)
        runs = [a for a in archs if _arch_runs(a, major, minor)]
        if runs:
            r.check(f"GPU arch cuda:{i}", True, f"{props.name} is compute capability {major}.{minor}; "
                    f"torch is built with {', '.join(runs)} for it")
        else:
            r.check(f"GPU arch cuda:{i}", False,
                    f"{props.name} is compute capability {major}.{minor}, and torch {torch.__version__} "
                    f"is built only for {', '.join(archs) or 'no CUDA architectures'}: neither sm_{major}x "
                    f"machine code nor PTX <= compute_{major}{minor} is in it, so torch's own GPU code cannot run",
                    f"pick a torch backend whose build includes sm_{major}{minor} (newer CUDA backends add "
                    "newer GPUs): `tritonlock resolve` re-resolves for this host")


def load_triton(r: Report, interpret: bool) -> bool:
    global triton
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    try:
        import triton as _triton
        import triton.language  # noqa: F401
    except Exception as e:
        text = str(e) if isinstance(e, ModuleNotFoundError) else f"{type(e).__name__}: {e}"
        detail, fix = _explain_import_error("triton", text, e.name if isinstance(e, ModuleNotFoundError) else None)
        r.check("triton imports", False, detail, fix)
        return False
    triton = _triton
    r.triton = triton.__version__
    r.check("triton imports", True, f"triton {triton.__version__} from {os.path.dirname(triton.__file__)}")
    return True


_PTXAS_RELEASE = re.compile(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)")
# An override a Triton release reads for a binary: knobs (3.4+) TRITON_PTXAS_BLACKWELL_PATH; 3.3 read
# f"TRITON_{binary.upper()}_PATH", i.e. TRITON_PTXAS-BLACKWELL_PATH.
_PTXAS_ENV = {"ptxas": ("TRITON_PTXAS_PATH",),
              "ptxas-blackwell": ("TRITON_PTXAS_BLACKWELL_PATH", "TRITON_PTXAS-BLACKWELL_PATH")}


def _version_text(path: str, memo_dir: str | None) -> str:
    """`ptxas --version`'s output (a tenth of a second): kept in the memo folder under the binary's size, mtime and
    inode, so a warm run does not start it again; any change to the file runs it again."""
    st = os.stat(path)
    key = f"{os.path.abspath(path)}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}"
    memo_path = os.path.join(memo_dir, "ptxas-version.json") if memo_dir else None
    doc: dict[str, Any] = {}
    if memo_path:
        try:
            with open(memo_path, encoding="utf-8") as f:
                loaded = json.load(f)
            doc = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            doc = {}
        if isinstance(doc.get(key), str):
            return str(doc[key])
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    if memo_path and _PTXAS_RELEASE.search(out):
        doc = {k: v for k, v in doc.items() if isinstance(v, str)}
        doc[key] = out
        with contextlib.suppress(OSError):
            tmp = f"{memo_path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(dict(list(doc.items())[-8:]), f)
            os.replace(tmp, memo_path)
    return out


def triton_ptxas(arch: int, memo_dir: str | None = None) -> dict[str, Any]:
    """The ptxas this Triton compiles with for a GPU of capability `arch` (90 = sm_90), found the way Triton
    itself finds it in each release: get_ptxas(arch) (3.3, 3.6+), get_ptxas() (3.4-3.5), _path_to_binary
    ("ptxas") (3.0-3.2), path_to_ptxas() (2.x). Keys: path, binary, release ("12.8"), version ("12.8.93"),
    override (the variable that chose it, or None); or error."""
    import inspect

    tool: Any = None
    try:
        try:
            from triton.backends.nvidia import compiler as nv
        except ImportError:
            nv = None
        if nv is not None and hasattr(nv, "get_ptxas"):
            takes_arch = bool(inspect.signature(nv.get_ptxas).parameters)
            tool = nv.get_ptxas(arch) if takes_arch else nv.get_ptxas()
        elif nv is not None and hasattr(nv, "_path_to_binary"):
            tool = nv._path_to_binary("ptxas")
        else:
            try:
                from triton.common.backend import path_to_ptxas  # 2.1-2.3
            except ImportError:
                from triton.compiler import path_to_ptxas  # 2.0
            tool = path_to_ptxas()
    except Exception as e:  # Triton raises RuntimeError("Cannot find ptxas") and friends
        return {"error": f"{type(e).__name__}: {_tail(str(e), 300)}"}
    path = getattr(tool, "path", None) or (tool[0] if isinstance(tool, (tuple, list)) and tool else None)
    if not path:
        return {"error": f"this triton answered {tool!r} for its ptxas"}
    path = str(path)
    try:
        out = _version_text(path, memo_dir)
    except (OSError, subprocess.SubprocessError) as e:
        return {"path": path, "error": f"{path} --version failed: {e}"}
    m = _PTXAS_RELEASE.search(out)
    binary = "ptxas-blackwell" if os.path.basename(path).startswith("ptxas-blackwell") else "ptxas"
    bundled = os.path.join(os.path.dirname(os.path.abspath(triton.__file__)), "")
    override = None
    if not os.path.abspath(path).startswith(bundled):
        override = next((v for names in _PTXAS_ENV.values() for v in names
                         if os.environ.get(v) and os.path.abspath(os.environ[v]) == os.path.abspath(path)), "PATH")
    return {"path": path, "binary": binary, "release": m.group(1) if m else None,
            "version": m.group(2) if m else None, "override": override}


def ptxas_floor(info: dict[str, Any], floors: dict[str, str] | None) -> str | None:
    """Least driver that loads code from this ptxas (its CUDA major's minor-version-compatibility floor)."""
    if not floors or not info.get("release"):
        return None
    return floors.get(str(info["release"]).split(".")[0])


def _ver(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def check_ptxas(r: Report, torch: Any, driver: str | None, floors: dict[str, str] | None,
                memo_dir: str | None = None) -> dict[int, dict[str, Any]]:
    """Which ptxas Triton compiles with for each GPU, and whether this driver loads what it makes."""
    found: dict[int, dict[str, Any]] = {}
    for i in range(torch.cuda.device_count()):
        major, minor = torch.cuda.get_device_capability(i)
        info = triton_ptxas(major * 10 + minor, memo_dir)
        found[i] = info
        name = f"Triton ptxas cuda:{i}"
        if "error" in info:
            r.check(name, False, f"could not tell which ptxas triton {r.triton} uses for sm_{major}{minor}: "
                    f"{info['error']}", "reinstall triton from the lock (`tritonlock sync`)")
            continue
        where = "bundled with triton" if info["override"] is None else (
            f"from {info['override']}" if info["override"] != "PATH" else "not the bundled one")
        what = (f"triton {r.triton} compiles for sm_{major}{minor} with {info['path']} ({where}; CUDA "
                f"{info['release']}, V{info['version']})")
        floor = ptxas_floor(info, floors)
        if driver is None or floor is None:
            r.check(name, True, what + ("" if driver else "; no driver version to compare with"))
        elif _ver(driver) >= _ver(floor):
            r.check(name, True, f"{what}: driver {driver} >= {floor} loads its kernels")
        else:
            env = _PTXAS_ENV[info["binary"]][0]
            r.check(name, False,
                    f"{what}: its kernels need driver >= {floor} (CUDA {info['release'].split('.')[0]}.x "
                    f"minor-version compatibility) and this driver is {driver}, so every Triton kernel on this GPU "
                    "fails to load (\"device kernel image is invalid\")",
                    f"upgrade the NVIDIA driver to >= {floor}, or point {env} at the ptxas of a CUDA toolkit this "
                    f"driver supports (e.g. {env}=/usr/local/cuda/bin/ptxas)")
    return found


_LOAD_FAILURE = re.compile(r"device kernel image is invalid|CUDA_ERROR_INVALID_IMAGE|UNSUPPORTED_PTX_VERSION|"
                           r"unsupported toolchain|no kernel image is available", re.I)


def explain_load_failure(text: str, info: dict[str, Any] | None, driver: str | None,
                         floors: dict[str, str] | None) -> str:
    """A kernel that failed to load: name Triton's ptxas vs the driver as the cause when it applies."""
    if not _LOAD_FAILURE.search(text) or not info or "error" in info:
        return ""
    floor = ptxas_floor(info, floors)
    if driver and floor and _ver(driver) < _ver(floor):
        return (f" — cause: Triton compiled it with {info['path']} (CUDA {info['release']}), whose code needs driver "
                f">= {floor}; this driver is {driver}. Upgrade the driver, or point "
                f"{_PTXAS_ENV[info['binary']][0]} at a ptxas this driver loads")
    return (f" — Triton compiled it with {info['path']} (CUDA {info['release']}): if the driver ({driver or 'unknown'})"
            " is older than that ptxas needs, the driver cannot load its kernels")


def _torch_triton_pin() -> str | None:
    """The triton version torch's own metadata pins (torch CUDA wheels say triton==X on Linux)."""
    try:
        for req in importlib.metadata.requires("torch") or ():
            m = re.match(r"\s*(?:pytorch-)?triton\s*==\s*([^\s;,]+)", req)
            if m:
                return m.group(1)
    except importlib.metadata.PackageNotFoundError:
        return None
    return None


def installed_version(dist: str) -> str | None:
    """A distribution's version from its metadata, without importing it; None where it is not installed."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_triton_version(r: Report, pin: str | None, have: str | None = None) -> None:
    """The triton installed (`have`: read from its metadata where triton was not imported) against the pin."""
    if have is None:
        have = triton.__version__
    source = "the lock pins"
    if pin is None:
        pin, source = _torch_triton_pin(), "torch's metadata requires"
    if pin is None:
        r.check("triton version", True, f"triton {have} (no pin to compare with)")
        return
    if have == pin or have.split("+")[0] == pin.split("+")[0]:
        r.check("triton version", True, f"triton {have}, as {source}")
        return
    r.check("triton version", False,
            f"triton is {have} but {source} triton=={pin}: each torch release is built and tested "
            "against one triton release, and another one can fail to compile or import",
            f"install triton=={pin} from the lock: `tritonlock sync`")


def check_interpreter_deps(r: Report, asked: bool) -> bool:
    # Looked up, not imported, and before triton: with TRITON_INTERPRET=1, importing triton itself
    # imports its interpreter (triton/runtime/interpreter.py: `import numpy as np`).
    if importlib.util.find_spec("numpy") is None:
        r.check("numpy (Triton interpreter)", False,
                ("the Triton interpreter was asked for (--interpret)" if asked else "no GPU to run Triton "
                 "kernels on, so they run in Triton's interpreter on the CPU") + ", which needs numpy — this "
                "environment lacks it, so no kernel ran",
                "lock numpy and install it: `tritonlock resolve --upgrade` (a lock for a target without an NVIDIA "
                "driver includes numpy), then `tritonlock sync`; or `pip install numpy` into this environment")
        try:  # not imported (it would fail), but installed: the report names the version that is there
            r.triton = importlib.metadata.version("triton")
        except importlib.metadata.PackageNotFoundError:
            pass
        return False
    try:
        version = importlib.metadata.version("numpy")
    except importlib.metadata.PackageNotFoundError:
        version = "(version unknown)"
    r.check("numpy (Triton interpreter)", True, f"numpy {version}")
    return True



# ---------------------------------------------------------------------------------------------
# Before torch: a GPU host whose GPUs this process cannot see


_HIDING = ("", "-1", "none", "nodevfiles", "void")


def _root() -> str:
    # test hook: a folder standing in for / where the driver's files are read (recorded driver facts on a machine
    # without an NVIDIA driver)
    return os.environ.get("TRITONLOCK_VERIFY_DRIVER_ROOT") or "/"


def host_gpus() -> int:
    """How many NVIDIA GPUs the host's driver has (its /proc/driver/nvidia/gpus entries; 0 where that is absent).
    Readable also where this process is kept from the GPUs (CUDA_VISIBLE_DEVICES, a container without /dev/nvidia*)."""
    try:
        return len([e for e in os.listdir(os.path.join(_root(), "proc/driver/nvidia/gpus")) if not e.startswith(".")])
    except OSError:
        return 0


def device_nodes() -> list[str]:
    try:
        return sorted(e for e in os.listdir(os.path.join(_root(), "dev")) if re.fullmatch(r"nvidia[0-9]+", e))
    except OSError:
        return []


def hidden_gpus(nvml_count: int | None = None) -> tuple[str, str] | None:
    """(what hides the host's GPUs from this process, the fix) when the driver says the host has GPUs but CUDA here
    cannot see any of them; None otherwise (also on a host without an NVIDIA driver). Read before torch is imported:
    a hidden GPU is a failed check within a second, not minutes of the interpreter and CPU Inductor."""
    if not sys.platform.startswith("linux"):
        return None
    n = host_gpus() or (nvml_count or 0)
    if not n:
        return None
    interp = "or `tritonlock verify --interpret` to run the kernels in Triton's interpreter on purpose"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        first = visible.split(",")[0].strip()
        if first.lower() in _HIDING:
            return (f"this host's NVIDIA driver has {n} GPU(s) (/proc/driver/nvidia/gpus), but "
                    f"CUDA_VISIBLE_DEVICES={visible!r} hides every one of them from this process",
                    f"unset CUDA_VISIBLE_DEVICES or list the GPUs to use (CUDA_VISIBLE_DEVICES=0), {interp}")
        if first.isdigit() and int(first) >= n:
            return (f"this host's NVIDIA driver has {n} GPU(s), numbered 0 to {n - 1}, but CUDA_VISIBLE_DEVICES="
                    f"{visible!r} starts with {first}: CUDA stops at the first GPU that does not exist, so it sees "
                    "none", f"list GPUs between 0 and {n - 1} in CUDA_VISIBLE_DEVICES, or unset it, {interp}")
    if host_gpus() and not device_nodes() and os.path.isdir(os.path.join(_root(), "dev")):
        return (f"this host's NVIDIA driver has {n} GPU(s) (/proc/driver/nvidia/gpus), but /dev has no nvidia0, "
                "nvidia1, … device nodes: a container started without its GPUs passed through",
                f"start the container with the GPUs (docker run --gpus all, podman --device nvidia.com/gpu=all, or "
                f"the NVIDIA container runtime), {interp}")
    return None


def preinit_cuda() -> threading.Thread | None:
    """cuInit and each visible GPU's primary context, through the driver's own library, in a thread started before
    torch is imported: the driver's start (a few hundred milliseconds) overlaps the import, and torch then finds the
    contexts made. Nothing is judged from it: torch's own calls decide and report. TRITONLOCK_VERIFY_NO_PREINIT=1
    turns it off."""
    if os.environ.get("TRITONLOCK_VERIFY_NO_PREINIT") or not sys.platform.startswith("linux"):
        return None

    def run() -> None:
        import ctypes

        try:
            cuda = ctypes.CDLL("libcuda.so.1")
            if cuda.cuInit(0) != 0:
                return
            n = ctypes.c_int(0)
            if cuda.cuDeviceGetCount(ctypes.byref(n)) != 0:
                return
            for i in range(n.value):
                dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
                if cuda.cuDeviceGet(ctypes.byref(dev), i) == 0:
                    cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
        except (OSError, AttributeError):
            return

    t = threading.Thread(target=run, name="cuda-preinit", daemon=True)
    t.start()
    return t
