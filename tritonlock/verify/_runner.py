"""Standalone verify runner, run by the target venv's interpreter: imports only torch, triton and the stdlib."""

# This file is executed as a script (`python -I _runner.py --json-args '{...}'`) inside the
# environment under test, so it must not import tritonlock or anything else the venv may lack.
# It prints exactly one JSON document on stdout; everything else (compiler chatter included)
# goes to stderr.

# Triton kernels are untyped by nature (their parameter annotations are Triton's, not Python's),
# and torch/triton live in the target venv, not necessarily where mypy runs.
# mypy: disable-error-code="no-untyped-def,untyped-decorator,no-untyped-call,import-not-found,unused-ignore"

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from typing import Any, Callable, Iterator

SCHEMA = 1
FAULT_TARGETS = ("vector_add", "matmul", "softmax")
INTERPRETER_NOTE = "GPU not tested: ran the kernels in the Triton interpreter on the CPU"
_SYNC_FIX = "recreate the environment from the lock (`tritonlock sync`) instead of mixing pip installs"

# Filled by _load_triton() once the interpreter decision is made: TRITON_INTERPRET is read
# when triton is imported and when a kernel is decorated, so neither may happen earlier.
triton: Any = None
tl: Any = None


# ---------------------------------------------------------------------------------------------
# Report


class Report:
    """What the runner found; serialised to the one JSON document on stdout."""

    def __init__(self) -> None:
        self.mode = "gpu"
        self.python = f"{sys.version.split()[0]} ({sys.executable})"
        self.torch: str | None = None
        self.triton: str | None = None
        self.checks: list[dict[str, Any]] = []
        self.kernels: list[dict[str, Any]] = []
        self.jit_seconds: float | None = None
        self.gpus: list[str] = []
        self.notes: list[str] = []
        self.started = time.perf_counter()
        self.phases: list[tuple[str, float]] = []

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time one step; the times end up in a note, so a slow verify says where it went."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.phases.append((name, time.perf_counter() - t0))

    def check(self, name: str, ok: bool, detail: str, fix: str | None = None) -> bool:
        self.checks.append({"name": name, "ok": ok, "detail": detail, "fix": None if ok else fix})
        return ok

    def kernel(self, kernel: str, device: str, dtype: str, ok: bool, max_err: float | None,
               detail: str, timing: tuple[str, float, float | None] | None = None) -> None:
        metric = value = torch_value = ratio = None
        if timing is not None:
            metric, value, torch_value = timing
            ratio = value / torch_value if torch_value else None
        self.kernels.append({
            "kernel": kernel, "device": device, "dtype": dtype, "ok": ok,
            "max_err": _finite(max_err), "metric": metric, "value": _finite(value),
            "torch_value": _finite(torch_value), "ratio": _finite(ratio), "detail": detail,
        })

    def to_json(self) -> dict[str, Any]:
        ok = all(c["ok"] for c in self.checks) and all(k["ok"] for k in self.kernels)
        notes = list(self.notes)
        if self.phases:
            notes.append("time: " + ", ".join(f"{n} {t:.2f} s" for n, t in self.phases))
        return {
            "schema": SCHEMA, "ok": ok, "mode": self.mode, "python": self.python,
            "torch": self.torch, "triton": self.triton, "checks": self.checks,
            "kernels": self.kernels, "jit_seconds": self.jit_seconds,
            "total_seconds": time.perf_counter() - self.started, "gpus": self.gpus,
            "notes": notes,
        }


def _finite(x: float | None) -> float | None:
    # JSON has no NaN/inf; a non-finite number here always means "no meaningful value".
    return x if x is not None and math.isfinite(x) else None


# ---------------------------------------------------------------------------------------------
# Options


def parse_options(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="tritonlock verify runner (prints one JSON document)")
    p.add_argument("--json-args", help="all options as one JSON object (what tritonlock passes)")
    p.add_argument("--json", action="store_true", help="accepted for readability; output is always JSON")
    p.add_argument("--backend", help="expected torch backend: cu130, cu126, cpu, rocm6.4 ...")
    p.add_argument("--triton", help="expected triton version (the lock's pin)")
    p.add_argument("--expect-gpu", choices=("yes", "no", "auto"), default="auto")
    p.add_argument("--driver", help="the host's NVIDIA driver version, when the caller knows it")
    p.add_argument("--ptxas-floors", type=json.loads, default=None,
                   help='least driver that loads code from a ptxas of each CUDA major, as JSON: {"12": "525.60.13"}')
    p.add_argument("--interpret", choices=("yes", "no", "auto"), default="auto")
    p.add_argument("--quick", action="store_true", help="correctness only, small sizes, no timing")
    p.add_argument("--profile", help="write a torch.profiler chrome trace of the kernels here")
    p.add_argument("--cold", action="store_true", help="compile into a fresh TRITON_CACHE_DIR")
    p.add_argument("--allreduce-cpu", type=int, default=0, help=argparse.SUPPRESS)  # test hook: gloo over N CPU processes
    p.add_argument("--inject-fault", choices=FAULT_TARGETS + ("all",),
                   help="test hook: the named kernel skips its last block")
    ns = p.parse_args(argv)
    tri = {"yes": True, "no": False, "auto": None}
    ns.expect_gpu = tri[ns.expect_gpu]
    ns.interpret = tri[ns.interpret]
    if ns.json_args:
        for key, value in json.loads(ns.json_args).items():
            if not hasattr(ns, key):
                p.error(f"--json-args: unknown option {key!r}")
            setattr(ns, key, value)
    if ns.inject_fault not in (None, *FAULT_TARGETS, "all"):
        p.error(f"--inject-fault: unknown kernel {ns.inject_fault!r}")
    return ns


# ---------------------------------------------------------------------------------------------
# Environment checks


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
        fix = ("pick a backend this driver supports (the driver's CUDA version must be >= torch's, "
               "`tritonlock lock` re-resolves for this host) or update the driver")
    r.check("CUDA available", False, detail, fix)
    return False


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
                    "newer GPUs): `tritonlock lock` re-resolves for this host")


def _load_triton(r: Report, interpret: bool) -> bool:
    global triton, tl
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    try:
        import triton as _triton
        import triton.language as _tl
    except Exception as e:
        text = str(e) if isinstance(e, ModuleNotFoundError) else f"{type(e).__name__}: {e}"
        detail, fix = _explain_import_error("triton", text, e.name if isinstance(e, ModuleNotFoundError) else None)
        r.check("triton imports", False, detail, fix)
        return False
    triton, tl = _triton, _tl
    r.triton = triton.__version__
    r.check("triton imports", True, f"triton {triton.__version__} from {os.path.dirname(triton.__file__)}")
    return True


_PTXAS_RELEASE = re.compile(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)")
# An override a Triton release reads for a binary: knobs (3.4+) TRITON_PTXAS_BLACKWELL_PATH; 3.3 read
# f"TRITON_{binary.upper()}_PATH", i.e. TRITON_PTXAS-BLACKWELL_PATH.
_PTXAS_ENV = {"ptxas": ("TRITON_PTXAS_PATH",),
              "ptxas-blackwell": ("TRITON_PTXAS_BLACKWELL_PATH", "TRITON_PTXAS-BLACKWELL_PATH")}


def triton_ptxas(arch: int) -> dict[str, Any]:
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
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
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


def check_ptxas(r: Report, torch: Any, driver: str | None, floors: dict[str, str] | None) -> dict[int, dict[str, Any]]:
    """Which ptxas Triton compiles with for each GPU, and whether this driver loads what it makes."""
    found: dict[int, dict[str, Any]] = {}
    for i in range(torch.cuda.device_count()):
        major, minor = torch.cuda.get_device_capability(i)
        info = triton_ptxas(major * 10 + minor)
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


def check_triton_version(r: Report, pin: str | None) -> None:
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
# Kernels (defined only after triton is imported with the right TRITON_INTERPRET)


class Kernels:
    """The reference kernels, compiled lazily by triton on first launch."""

    def __init__(self, interpret: bool) -> None:
        @triton.jit
        def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, FAULT: tl.constexpr):
            pid = tl.program_id(0)
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            live = offs < n
            if FAULT:
                # The injected bug: the last program decides it has nothing to do.
                live = live & (pid < tl.num_programs(0) - 1)
            x = tl.load(x_ptr + offs, mask=live)
            y = tl.load(y_ptr + offs, mask=live)
            tl.store(out_ptr + offs, x + y, mask=live)

        @triton.jit
        def softmax(x_ptr, out_ptr, n_cols, x_stride, out_stride, BLOCK: tl.constexpr,
                    FAULT: tl.constexpr):
            # One program per row; the whole row lives in registers (BLOCK >= n_cols).
            row = tl.program_id(0)
            cols = tl.arange(0, BLOCK)
            live = cols < n_cols
            x = tl.load(x_ptr + row.to(tl.int64) * x_stride + cols, mask=live, other=-float("inf"))
            # Subtracting the row maximum keeps exp() from overflowing; padding lanes give exp(-inf) = 0.
            num = tl.exp(x - tl.max(x, axis=0))
            den = tl.sum(num, axis=0)
            if FAULT:
                live = live & (row < tl.num_programs(0) - 1)
            tl.store(out_ptr + row.to(tl.int64) * out_stride + cols, num / den, mask=live)

        @triton.jit
        def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                   stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, K_TILES: tl.constexpr,
                   DOT_FP32: tl.constexpr, FAULT: tl.constexpr):
            pid = tl.program_id(0)
            tiles_m = tl.cdiv(M, BLOCK_M)
            tiles_n = tl.cdiv(N, BLOCK_N)
            # Hand out output tiles in bands of GROUP_M tile-rows, column by column, so the
            # programs resident at one time share A row-panels and B column-panels in L2.
            band = GROUP_M * tiles_n
            first_m = (pid // band) * GROUP_M
            band_rows = tl.minimum(tiles_m - first_m, GROUP_M)
            tile_m = first_m + (pid % band) % band_rows
            tile_n = (pid % band) // band_rows

            offs_m = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
            offs_n = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
            offs_k = tl.arange(0, BLOCK_K)
            m_live = offs_m < M
            n_live = offs_n < N
            a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
            b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # fp32 accumulation for every input type
            # K_TILES > 0 only under the interpreter: triton <= 3.6's interpreter cannot take a
            # runtime loop bound with numpy >= 2.4 (triton-lang/triton#9171); compiled code keeps
            # K dynamic so every size shares one binary.
            for kt in range(K_TILES if K_TILES > 0 else tl.cdiv(K, BLOCK_K)):
                k_left = K - kt * BLOCK_K
                a = tl.load(a_ptrs, mask=m_live[:, None] & (offs_k[None, :] < k_left), other=0.0)
                b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & n_live[None, :], other=0.0)
                if DOT_FP32:
                    # Interpreter only: its tl.dot multiplies bf16 bit patterns as integers.
                    a = a.to(tl.float32)
                    b = b.to(tl.float32)
                acc = tl.dot(a, b, acc)  # fp32 inputs use tf32 tensor cores (triton's default)
                a_ptrs += BLOCK_K * stride_ak
                b_ptrs += BLOCK_K * stride_bk

            c_live = m_live[:, None] & n_live[None, :]
            if FAULT:
                c_live = c_live & (pid < tl.num_programs(0) - 1)
            c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
            tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_live)

        self.vector_add = vector_add
        self.softmax = softmax
        self.matmul_jit = matmul
        self.matmul_configs = _matmul_configs()
        # Tuning benchmarks are short (this is a check, not a tuner) and cached on disk, so a warm
        # verify skips them; the candidates are pruned to what fits the GPU's shared memory.
        self.matmul_tuned = None if interpret else _autotune(matmul, self.matmul_configs)


def _matmul_configs() -> list[Any]:
    """Candidate tilings, best first; each input width takes the first MM_CANDIDATES that fit."""
    def cfg(bm: int, bn: int, bk: int, warps: int, stages: int) -> Any:
        return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                             num_warps=warps, num_stages=stages)
    return [
        # 16-bit inputs (BLOCK_K 64). Large tiles over 8 warps (two warpgroups) feed Hopper's
        # wgmma; the 4-stage 128x256 needs 192 KiB of shared memory (H100/H200: 227 KiB), the
        # 3-stage ones 144 KiB (A100: 163 KiB), 128x128 in 3 stages 96 KiB (RTX 30/40: 99 KiB).
        cfg(128, 256, 64, 8, 4),
        cfg(128, 256, 64, 8, 3),
        cfg(256, 128, 64, 8, 3),
        cfg(128, 128, 64, 4, 4),
        cfg(128, 128, 64, 4, 3),
        cfg(64, 64, 64, 4, 3),
        # fp32 inputs (tf32, BLOCK_K 32: a 4-byte K-slice of the same tiles takes the same memory).
        cfg(128, 256, 32, 8, 4),
        cfg(128, 256, 32, 8, 3),
        cfg(128, 128, 32, 8, 3),
        cfg(128, 128, 32, 4, 3),
        cfg(64, 64, 32, 4, 3),
    ]


# Every candidate costs a compile (about half a second) on a cold verify and a tuning run, so
# only the best two that fit are tried.
MM_CANDIDATES = 2


def _configs_for(configs: list[Any], elem_size: int, max_smem: int | None) -> list[Any]:
    """The candidate configs for one input element size that fit in shared memory."""
    want_k = 64 if elem_size <= 2 else 32
    mine = [c for c in configs if c.kwargs["BLOCK_K"] == want_k]
    if max_smem is not None:
        # Triton's pipeline keeps num_stages copies of the A and B tiles in shared memory.
        fits = [c for c in mine if (c.kwargs["BLOCK_M"] + c.kwargs["BLOCK_N"]) * c.kwargs["BLOCK_K"]
                * elem_size * c.num_stages <= max_smem]
        mine = fits or mine[-1:]
    return mine[:MM_CANDIDATES]


def _max_smem() -> int | None:
    try:
        import torch
        props = triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())
        return int(props["max_shared_mem"])
    except Exception:  # an older triton without this helper: keep every candidate
        return None


def _autotune(fn: Any, configs: list[Any]) -> Any:
    import inspect

    def prune(configs: list[Any], named_args: dict[str, Any], **_: Any) -> list[Any]:
        return _configs_for(configs, named_args["a_ptr"].element_size(), _max_smem())

    def bench(kernel_call: Callable[[], Any], quantiles: Any = None) -> Any:
        return triton.testing.do_bench(kernel_call, warmup=5, rep=25, quantiles=quantiles)

    kwargs: dict[str, Any] = {"prune_configs_by": {"early_config_prune": prune}}
    params = inspect.signature(triton.autotune).parameters
    if "do_bench" in params:
        kwargs["do_bench"] = bench
    if "cache_results" in params:
        kwargs["cache_results"] = True
    return triton.autotune(configs=configs, key=["M", "N", "K"], **kwargs)(fn)


# ---------------------------------------------------------------------------------------------
# Running and checking


class Plan:
    """Sizes and timing for one mode."""

    vadd_timed: int | None
    mm_timed: tuple[int, int, int] | None
    sm_timed: tuple[int, int] | None
    bench: dict[str, int]

    def __init__(self, gpu: bool, quick: bool) -> None:
        self.timed = gpu and not quick
        if gpu:
            self.vadd_block, self.vadd_warps = 1024, 4
            # a multiple of BLOCK and not a multiple; the timed size is 768 MiB of traffic
            self.vadd_sizes = [1024 * 97, 98_765]
            self.vadd_timed = None if quick else 1 << 26
            # 1008 = 16 * 63: masked edges on every axis (not a multiple of any block) while sharing
            # the compiled binary with the timed 8192 (same divisibility by 16); 1000 adds the
            # unaligned specialisation for one config.
            self.mm_sizes = [(1008, 1008, 1008)] if quick else [(1008, 1008, 1008), (1000, 1000, 1000)]
            self.mm_timed = (8192, 8192, 8192)
            self.sm_sizes = [(1823, 781)]
            self.sm_timed = None if quick else (16384, 4000)
            # three alternating rounds of short do_bench runs (milliseconds of warm-up and of
            # timed repeats): steadier against clock drift than one long run, and as quick
            self.bench = {"warmup": 5, "rep": 15}
            self.rounds = 3
        else:
            self.vadd_block, self.vadd_warps = 256, 4
            self.vadd_sizes = [256 * 3, 1031]
            self.vadd_timed = None
            self.mm_sizes = [(67, 45, 99)] if quick else [(64, 64, 64), (67, 45, 99)]
            self.mm_timed = None
            self.sm_sizes = [(9, 100)] if quick else [(9, 100), (4, 256)]
            self.sm_timed = None
            self.bench = {}
            self.rounds = 0


def _dtype_name(torch: Any, dt: Any) -> str:
    return {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dt]


class Checker:
    """Runs each kernel against float64 torch on one device and records the results."""

    def __init__(self, r: Report, torch: Any, k: Kernels, plan: Plan, device: str, fault: str | None,
                 interpret: bool) -> None:
        self.r, self.torch, self.k, self.plan = r, torch, k, plan
        self.device, self.fault, self.interpret = device, fault, interpret
        self.label = "cpu (interpreter)" if interpret else device

    def faulty(self, kernel: str) -> bool:
        return self.fault in (kernel, "all")

    def sync(self) -> None:
        if not self.interpret:
            self.torch.cuda.synchronize()

    def compare(self, out: Any, ref: Any, rtol: float, atol: float) -> tuple[bool, float | None, str]:
        """(ok, max abs error, words) for out against a float64 reference."""
        torch = self.torch
        out64 = out.to(torch.float64)
        unwritten = torch.isnan(out64)
        n_bad = int(unwritten.sum())
        if n_bad:
            first = int(unwritten.flatten().nonzero()[0])
            return False, None, (f"{n_bad} of {out.numel()} outputs are still NaN (the poison written "
                                 f"before the run), first at flat index {first}: never written or "
                                 "computed as NaN")
        err = (out64 - ref).abs()
        limit = atol + rtol * ref.abs()
        worst = float((err / limit).max())
        max_err = float(err.max())
        if worst > 1.0:
            n_out = int((err > limit).sum())
            return False, max_err, (f"{n_out} of {out.numel()} outputs outside tolerance (rtol {rtol:g}, "
                                    f"atol {atol:.3g}); max |error| {max_err:.3g}")
        return True, max_err, f"max |error| {max_err:.3g} ({worst:.0%} of tolerance)"

    def race(self, fn: Callable[[], Any], torch_fn: Callable[[], Any]) -> tuple[float, float]:
        """Median milliseconds of fn and of torch's equivalent.

        Measured in alternating rounds: a big matmul runs at the power limit and the clocks drift
        over seconds, which would otherwise favour whichever side ran first.
        """
        ours: list[float] = []
        theirs: list[float] = []
        for _ in range(self.plan.rounds):
            ours.append(float(triton.testing.do_bench(fn, return_mode="median", **self.plan.bench)))
            theirs.append(float(triton.testing.do_bench(torch_fn, return_mode="median", **self.plan.bench)))
        return sorted(ours)[len(ours) // 2], sorted(theirs)[len(theirs) // 2]

    # -- vector add --------------------------------------------------------------------------

    def vector_add(self, first: bool) -> None:
        torch, p = self.torch, self.plan
        fault = self.faulty("vector_add")
        ok, worst, words = True, 0.0, []  # type: tuple[bool, float | None, list[str]]

        def launch(x: Any, y: Any, out: Any) -> None:
            n = x.numel()
            self.k.vector_add[(triton.cdiv(n, p.vadd_block),)](
                x, y, out, n, BLOCK=p.vadd_block, FAULT=fault, num_warps=p.vadd_warps)

        sizes = list(p.vadd_sizes) + ([p.vadd_timed] if p.vadd_timed else [])
        for i, n in enumerate(sizes):
            x = torch.randn(n, device=self.device)
            y = torch.randn(n, device=self.device)
            out = torch.full_like(x, float("nan"))
            t0 = time.perf_counter()
            launch(x, y, out)
            self.sync()
            if first and i == 0 and not self.interpret:  # the interpreter compiles nothing
                self.r.jit_seconds = time.perf_counter() - t0
            good, err, text = self.compare(out, x.double() + y.double(), rtol=1e-6, atol=1e-6)
            ok &= good
            worst = None if err is None or worst is None else max(worst, err)
            words.append(f"n={n}: {text}")
        timing = None
        if p.timed and ok:
            nt = x.numel()  # the timed size is the last one checked above
            out_t = torch.empty_like(x)
            ms, ms_t = self.race(lambda: launch(x, y, out), lambda: torch.add(x, y, out=out_t))
            gbs = lambda t: 3 * nt * 4 / (t * 1e-3) / 1e9  # noqa: E731 - read x, read y, write out
            timing = ("GB/s", gbs(ms), gbs(ms_t))
            words.append(f"timed n={nt} (BLOCK {p.vadd_block}, {p.vadd_warps} warps) vs torch.add")
        self._record("vector_add", "fp32", ok, worst, words, timing)

    # -- matmul ------------------------------------------------------------------------------

    _MM_TOL = {  # (rtol, atol per sqrt(K)); inputs are N(0, 1) so |C| grows like sqrt(K)
        "fp16": (2e-3, 2e-3),   # fp16 output rounding is 2^-11 relative; products are exact in fp32
        "bf16": (1.6e-2, 2e-3),  # bf16 output rounding is 2^-8 relative
        "fp32": (1e-2, 1e-2),   # tf32 rounds each input to 10 mantissa bits: ~2^-11 per product
    }

    def matmul(self, dt: Any) -> None:
        torch, p = self.torch, self.plan
        name = _dtype_name(torch, dt)
        fault = self.faulty("matmul")
        rtol, atol_k = self._MM_TOL[name]
        ok, worst, words = True, 0.0, []  # type: tuple[bool, float | None, list[str]]
        elem = torch.empty((), dtype=dt).element_size()
        if self.interpret:
            configs = [triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 2})]
        else:
            configs = _configs_for(self.k.matmul_configs, elem, _max_smem())
            if not p.timed:
                configs = configs[:1]

        for si, (m, n, kk) in enumerate(p.mm_sizes):
            a, b = self._mm_inputs(m, n, kk, dt)
            ref = a.double() @ b.double()
            # every candidate config is checked on the first size, the unaligned sizes once
            for cfg in configs if si == 0 else configs[:1]:
                c = torch.full((m, n), float("nan"), device=self.device, dtype=dt)
                self._launch_mm(a, b, c, cfg, fault)
                self.sync()
                good, err, text = self.compare(c, ref, rtol, atol_k * math.sqrt(kk))
                ok &= good
                worst = None if err is None or worst is None else max(worst, err)
                words.append(f"{m}x{n}x{kk} {_cfg_words(cfg, self.interpret)}: {text}")
        timing = None
        if p.timed and ok and self.k.matmul_tuned is not None:
            assert p.mm_timed is not None
            m, n, kk = p.mm_timed
            a, b = self._mm_inputs(m, n, kk, dt)
            c = torch.empty((m, n), device=self.device, dtype=dt)
            tuned = self.k.matmul_tuned
            grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)  # noqa: E731

            def run() -> None:
                tuned[grid](a, b, c, m, n, kk, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), K_TILES=0, DOT_FP32=False, FAULT=False)

            run()
            self.sync()
            # torch may use tf32 for fp32 too, so both sides do the same arithmetic
            prev = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                ms, ms_t = self.race(run, lambda: torch.matmul(a, b))
            finally:
                torch.backends.cuda.matmul.allow_tf32 = prev
            tflops = lambda t: 2 * m * n * kk / (t * 1e-3) / 1e12  # noqa: E731
            timing = ("TFLOP/s", tflops(ms), tflops(ms_t))
            words.append(f"timed {m}x{n}x{kk} with autotuned {_cfg_words(tuned.best_config)} vs torch.matmul")
        self._record("matmul", name + (" (tf32)" if name == "fp32" and not self.interpret else ""),
                     ok, worst, words, timing)

    def _mm_inputs(self, m: int, n: int, kk: int, dt: Any) -> tuple[Any, Any]:
        """A (m x k, row-major) and B (k x n): row-major for 16-bit, K-major for fp32.

        Hopper's tf32 wgmma reads both operands K-major only; a row-major fp32 B drops Triton to a
        path about 4x slower, so fp32 B is the transpose of a row-major n x k tensor (cuBLAS takes
        the same layout for the torch comparison).
        """
        torch = self.torch
        a = torch.randn(m, kk, device=self.device, dtype=dt)
        if dt == torch.float32:
            return a, torch.randn(n, kk, device=self.device, dtype=dt).t()
        return a, torch.randn(kk, n, device=self.device, dtype=dt)

    def _launch_mm(self, a: Any, b: Any, c: Any, cfg: Any, fault: bool) -> None:
        m, kk = a.shape
        n = b.shape[1]
        kw = dict(cfg.all_kwargs())
        grid = (triton.cdiv(m, kw["BLOCK_M"]) * triton.cdiv(n, kw["BLOCK_N"]),)
        k_tiles = triton.cdiv(kk, kw["BLOCK_K"]) if self.interpret else 0
        dot_fp32 = self.interpret and a.dtype == self.torch.bfloat16
        if self.interpret:  # launch options mean nothing to the interpreter
            kw = {k: v for k, v in kw.items() if k in cfg.kwargs}
        self.k.matmul_jit[grid](a, b, c, m, n, kk, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                c.stride(0), c.stride(1), K_TILES=k_tiles, DOT_FP32=dot_fp32,
                                FAULT=fault, **kw)

    # -- softmax -----------------------------------------------------------------------------

    def softmax(self) -> None:
        torch, p = self.torch, self.plan
        fault = self.faulty("softmax")
        ok, worst, words = True, 0.0, []  # type: tuple[bool, float | None, list[str]]

        def launch(x: Any, out: Any) -> None:
            rows, cols = x.shape
            block = triton.next_power_of_2(cols)
            warps = 4 if block <= 1024 else (8 if block <= 4096 else 16)
            self.k.softmax[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=block,
                                    FAULT=fault, num_warps=warps)

        sizes = list(p.sm_sizes) + ([p.sm_timed] if p.sm_timed else [])
        for rows, cols in sizes:
            x = torch.randn(rows, cols, device=self.device) * 4
            out = torch.full_like(x, float("nan"))
            launch(x, out)
            self.sync()
            good, err, text = self.compare(out, torch.softmax(x.double(), dim=-1), rtol=1e-5, atol=1e-7)
            ok &= good
            worst = None if err is None or worst is None else max(worst, err)
            words.append(f"{rows}x{cols}: {text}")
        timing = None
        if p.timed and ok:
            rows, cols = x.shape  # the timed size is the last one checked above
            ms, ms_t = self.race(lambda: launch(x, out), lambda: torch.softmax(x, dim=-1))
            gbs = lambda t: 2 * rows * cols * 4 / (t * 1e-3) / 1e9  # noqa: E731 - read once, write once
            timing = ("GB/s", gbs(ms), gbs(ms_t))
            words.append(f"timed {rows}x{cols} vs torch.softmax")
        self._record("softmax", "fp32", ok, worst, words, timing)

    def _record(self, kernel: str, dtype: str, ok: bool, worst: float | None, words: list[str],
                timing: tuple[str, float, float | None] | None) -> None:
        if not ok and self.faulty(kernel):
            words.insert(0, f"fault injected on purpose (--inject-fault {kernel})")
        if self.interpret:
            words.append("interpreter: no timing (not meaningful on the CPU)")
        elif not self.plan.timed:
            words.append("quick: no timing")
        elif not ok:
            words.append("not timed because the results are wrong")
        head = "" if ok else "WRONG RESULTS: "
        self.r.kernel(kernel, self.label, dtype, ok, worst, head + "; ".join(words), timing)


def _cfg_words(cfg: Any, interpret: bool = False) -> str:
    k = cfg.kwargs
    tile = f"{k['BLOCK_M']}x{k['BLOCK_N']}x{k['BLOCK_K']}"
    return f"[{tile}]" if interpret else f"[{tile}, {cfg.num_warps} warps, {cfg.num_stages} stages]"


def run_kernels(r: Report, torch: Any, k: Kernels, plan: Plan, devices: list[str], fault: str | None,
                interpret: bool, explain: Callable[[int, str], str] | None = None) -> None:
    for i, device in enumerate(devices):
        ctx = contextlib.nullcontext() if interpret else torch.cuda.device(i)
        with ctx:
            ck = Checker(r, torch, k, plan, device, fault, interpret)
            steps: list[tuple[str, Callable[[], None]]] = [
                ("vector_add", lambda: ck.vector_add(first=i == 0)),
                ("matmul fp16", lambda: ck.matmul(torch.float16)),
                ("matmul bf16", lambda: ck.matmul(torch.bfloat16)),
                ("matmul fp32", lambda: ck.matmul(torch.float32)),
                ("softmax", ck.softmax),
            ]
            for name, step in steps:
                try:
                    with r.phase(name if len(devices) == 1 else f"{name} {device}"):
                        step()
                except Exception as e:  # a compile error or a crash in one kernel must not hide the others
                    why = explain(i, str(e)) if explain is not None else ""
                    r.kernel("error", ck.label, "-", False, None,
                             f"a kernel raised {type(e).__name__}: {_tail(str(e))}{why}")
                    traceback.print_exc()


def _tail(text: str, limit: int = 600) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


# ---------------------------------------------------------------------------------------------
# Several GPUs: NCCL all-reduce across spawned processes


def _allreduce_worker(rank: int, world: int, backend: str, init: str, outdir: str, numel: int) -> None:
    """One rank: all-reduce rank+1 from everyone, check the sum, time a few more rounds."""
    import torch
    import torch.distributed as dist

    gpu = backend == "nccl"
    result: dict[str, Any] = {"rank": rank, "ok": False}
    try:
        if gpu:
            torch.cuda.set_device(rank)
        dist.init_process_group(backend, init_method=init, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=120))
        x = torch.full((numel,), float(rank + 1), device=f"cuda:{rank}" if gpu else "cpu")
        sync = torch.cuda.synchronize if gpu else (lambda: None)
        dist.all_reduce(x)
        sync()
        want = world * (world + 1) / 2
        result["ok"] = bool((x == want).all())
        result["max_err"] = float((x - want).abs().max())
        for _ in range(2):
            dist.all_reduce(x)
        sync()
        dist.barrier()
        iters = 10
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        sync()
        sec = (time.perf_counter() - t0) / iters
        # bus bandwidth as nccl-tests defines it: algorithm bandwidth x 2(n-1)/n
        result["busbw"] = numel * 4 / sec / 1e9 * 2 * (world - 1) / world
        dist.destroy_process_group()
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {e}"
    with open(os.path.join(outdir, f"rank{rank}.json"), "w", encoding="utf-8") as f:
        json.dump(result, f)


def run_allreduce(r: Report, n: int, backend: str = "nccl") -> None:
    """All-reduce across n spawned processes (one per GPU for nccl; gloo on the CPU is the test hook)."""
    import torch.multiprocessing as mp

    # 256 MiB of fp32 on GPUs, so bandwidth rather than latency is measured; a token size on the CPU
    numel = (64 << 20) if backend == "nccl" else (1 << 16)
    kernel = f"{backend}_all_reduce"
    label = f"cuda:0..{n - 1}" if backend == "nccl" else f"cpu x{n}"
    with tempfile.TemporaryDirectory(prefix="tritonlock-allreduce-") as tmp:
        init = "file://" + os.path.join(tmp, "rendezvous")
        try:
            mp.start_processes(_allreduce_worker, args=(n, backend, init, tmp, numel), nprocs=n,
                               join=True, start_method="spawn")
        except Exception as e:
            r.kernel(kernel, label, "fp32", False, None, f"the all-reduce processes failed: {_tail(str(e))}")
            return
        ranks = []
        for i in range(n):
            try:
                with open(os.path.join(tmp, f"rank{i}.json"), encoding="utf-8") as f:
                    ranks.append(json.load(f))
            except (OSError, ValueError):
                ranks.append({"rank": i, "ok": False, "error": "no result written"})
    bad = [x for x in ranks if not x.get("ok")]
    if bad:
        words = "; ".join(f"rank {x['rank']}: {x.get('error', 'wrong sum')}" for x in bad)
        r.kernel(kernel, label, "fp32", False, None, f"all-reduce over {n} processes failed: {words}")
        return
    busbw = min(float(x["busbw"]) for x in ranks)
    r.kernel(kernel, label, "fp32", True, max(float(x["max_err"]) for x in ranks),
             f"{n} processes, {numel * 4 / 2**20:g} MiB all-reduce ({backend}) gave the right sum on "
             "every rank; value is bus bandwidth (no torch comparison)", ("GB/s", busbw, None))


# ---------------------------------------------------------------------------------------------
# Profile


def write_profile(r: Report, torch: Any, k: Kernels, plan: Plan, path: str, interpret: bool) -> None:
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([] if interpret else [ProfilerActivity.CUDA])
    device = "cpu" if interpret else "cuda:0"
    ck = Checker(Report(), torch, k, Plan(not interpret, quick=True), device, None, interpret)
    with profile(activities=acts) as prof:
        ck.vector_add(first=False)
        ck.matmul(torch.float16)
        ck.softmax()
        ck.sync()
    prof.export_chrome_trace(path)
    r.notes.append(f"profile: chrome trace of the kernels written to {path}")


# ---------------------------------------------------------------------------------------------
# Main


def verify(opts: argparse.Namespace, r: Report) -> None:
    with r.phase("import torch"):
        torch = import_torch(r)
    if torch is None:
        return
    check_backend(r, torch, opts.backend)
    with r.phase("CUDA init"):
        cuda_ok = check_cuda(r, torch, opts.expect_gpu, opts.driver)
        if cuda_ok:
            torch.zeros(1, device="cuda")  # create the context here, not inside the first kernel's time
    if opts.interpret is True:
        interpret = True
    elif opts.interpret is False:
        if not cuda_ok:
            r.check("GPU mode", False, "GPU mode was asked for (no interpreter) but CUDA is not "
                    "available, so no kernel ran", "see the CUDA available check")
            return
        interpret = False
    else:
        interpret = not cuda_ok
    r.mode = "interpreter" if interpret else "gpu"
    if cuda_ok:
        check_archs(r, torch)
    if interpret and not check_interpreter_deps(r, asked=opts.interpret is True):
        return
    with r.phase("import triton"):
        if not _load_triton(r, interpret):
            return
    check_triton_version(r, opts.triton)
    driver = opts.driver or (driver_version() if not interpret else None)
    ptxas: dict[int, dict[str, Any]] = {}
    if not interpret and not getattr(torch.version, "hip", None):  # ROCm: Triton's AMD backend uses no ptxas
        ptxas = check_ptxas(r, torch, driver, opts.ptxas_floors)
    seed = int.from_bytes(os.urandom(4), "little")
    torch.manual_seed(seed)
    r.notes.append(f"inputs are fresh random numbers (torch seed {seed})")
    kernels = Kernels(interpret)
    plan = Plan(gpu=not interpret, quick=opts.quick)
    n = 0 if interpret else torch.cuda.device_count()
    devices = ["cpu"] if interpret else [f"cuda:{i}" for i in range(n)]
    run_kernels(r, torch, kernels, plan, devices, opts.inject_fault, interpret,
                explain=lambda i, text: explain_load_failure(text, ptxas.get(i), driver, opts.ptxas_floors))
    if interpret:  # said only once the kernels really ran
        r.notes.append(INTERPRETER_NOTE)
    if opts.allreduce_cpu:
        with r.phase("gloo all-reduce"):
            run_allreduce(r, int(opts.allreduce_cpu), backend="gloo")
    if n > 1 and not opts.quick:
        with r.phase("NCCL all-reduce"):
            run_allreduce(r, n)
    elif not interpret:
        r.notes.append("NCCL all-reduce skipped: " + ("--quick" if n > 1 else
                       "only 1 GPU visible (it needs 2 or more)"))
    if opts.profile:
        try:
            write_profile(r, torch, kernels, plan, opts.profile, interpret)
        except Exception as e:
            r.check("profile", False, f"could not write the profile: {type(e).__name__}: {e}",
                    "check that the profile path is writable")


def main(argv: list[str] | None = None) -> int:
    opts = parse_options(sys.argv[1:] if argv is None else argv)
    # Keep stdout for the JSON alone: triton, torch and the compilers may print, even from C.
    sys.stdout.flush()
    json_fd = os.dup(1)
    os.dup2(2, 1)
    r = Report()
    r.mode = "interpreter" if opts.interpret else "gpu"  # until the runner decides
    cache_dir = None
    if opts.cold:
        cache_dir = tempfile.mkdtemp(prefix="tritonlock-verify-cache-")
        os.environ["TRITON_CACHE_DIR"] = cache_dir
        r.notes.append("cold: compiled into a fresh, empty TRITON_CACHE_DIR")
    try:
        verify(opts, r)
    except BaseException as e:  # report whatever happened, in JSON, rather than die silently
        traceback.print_exc()
        r.check("runner", False, f"the verify runner crashed: {type(e).__name__}: {_tail(str(e))}",
                "report this as a tritonlock bug, with the runner's stderr")
    finally:
        if cache_dir:
            shutil.rmtree(cache_dir, ignore_errors=True)
        sys.stdout.flush()
        doc = json.dumps(r.to_json(), indent=1) + "\n"
        with os.fdopen(json_fd, "w", encoding="utf-8") as out:
            out.write(doc)
    return 0 if r.to_json()["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
