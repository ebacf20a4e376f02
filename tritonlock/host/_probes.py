"""Host probes: each reads one source and returns None when that source cannot tell."""

from __future__ import annotations

import functools
import importlib
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tritonlock.errors import MatrixError
from tritonlock.models import Gpu

if TYPE_CHECKING:
    from tritonlock.compat.matrix import Matrix

# Every absolute path is read under ROOT, so tests can point the probes at a fake tree.
ROOT = "/"
PROC_DRIVER = "proc/driver/nvidia/version"
PROC_VERSION = "proc/version"
PROC_CGROUP = "proc/1/cgroup"
# WSL2 exposes the Windows driver's NVML and nvidia-smi here, off the default loader path and PATH.
WSL_LIB = "usr/lib/wsl/lib"
CUDA_DEFAULT = "usr/local/cuda"
# nvidia-smi takes seconds per GPU when persistence mode is off; a hung driver must not hang us.
TIMEOUT_S = 30.0

# Asked by name so the answer can be parsed by its header whatever order or subset comes back.
SMI_FIELDS = ("index", "name", "driver_version", "compute_cap", "memory.total", "pci.bus_id", "uuid")

_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)+\Z")
_CC = re.compile(r"^[0-9]+\.[0-9]+\Z")
_PROC_DRIVER = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+([0-9]+(?:\.[0-9]+)+)")
_BANNER_DRIVER = re.compile(r"Driver Version:\s*([0-9]+(?:\.[0-9]+)+)")
_BANNER_CUDA = re.compile(r"CUDA Version:\s*([0-9]+\.[0-9]+)")
_NVCC = re.compile(r"release ([0-9]+\.[0-9]+)")

def _cdll(path: str) -> object:
    import ctypes  # only for loading NVML by path: most commands never get here

    return ctypes.CDLL(path)


# The one indirection tests replace: NVML's shared library cannot be loaded on a machine without it.
_load_library: Callable[[str], object] = _cdll


def at(*parts: str) -> str:
    return os.path.join(ROOT, *parts)


@dataclass(frozen=True, slots=True)
class DriverReading:
    """What one driver source told; a None field is a fact this source cannot give."""

    source: str
    driver: str | None = None
    cuda: str | None = None
    gpus: tuple[Gpu, ...] | None = None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _run(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, errors="replace", timeout=TIMEOUT_S, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout


def _text(value: str | bytes) -> str:
    # nvidia-ml-py before 11.515 returns bytes, later versions str.
    return value.decode() if isinstance(value, bytes) else value


def cuda_from_int(value: int) -> str:
    # NVML encodes CUDA versions as 1000 * major + 10 * minor: 12020 -> "12.2".
    return f"{value // 1000}.{value % 1000 // 10}"


# ---- NVML ----------------------------------------------------------------------------------


def _nvml_module() -> ModuleType | None:
    try:
        # Imported here: NVML is only needed by `tritonlock host`, and keeps CLI start-up light.
        return importlib.import_module("pynvml")
    except ImportError:
        return None


def _nvml_read(nvml: ModuleType, source: str) -> DriverReading | None:
    try:
        nvml.nvmlInit()
    except (nvml.NVMLError, OSError):
        return None
    try:
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        # _v2 is the documented name since NVML 11.x; older bindings only have the first.
        get_cuda = getattr(nvml, "nvmlSystemGetCudaDriverVersion_v2", None) or (
            nvml.nvmlSystemGetCudaDriverVersion
        )
        cuda = cuda_from_int(int(get_cuda()))
        gpus = tuple(_nvml_gpu(nvml, i) for i in range(int(nvml.nvmlDeviceGetCount())))
    except (nvml.NVMLError, ValueError):
        return None
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass
    return DriverReading(source=source, driver=driver, cuda=cuda, gpus=gpus)


def _nvml_gpu(nvml: ModuleType, index: int) -> Gpu:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
    return Gpu(
        index=index,
        name=_text(nvml.nvmlDeviceGetName(handle)),
        cc=f"{major}.{minor}",
        memory_mib=_nvml_optional(lambda: int(nvml.nvmlDeviceGetMemoryInfo(handle).total) // 2**20, nvml),
        uuid=_nvml_optional(lambda: _text(nvml.nvmlDeviceGetUUID(handle)), nvml),
    )


def _nvml_optional(get: Callable[[], Any], nvml: ModuleType) -> Any:
    # Memory and UUID are NOT_SUPPORTED on some boards (and MIG parents); the GPU still counts.
    try:
        return get()
    except nvml.NVMLError:
        return None


def _no_driver_here() -> bool:
    """On Linux, a loaded NVIDIA kernel module shows in /proc/driver/nvidia (containers see the host's) and its
    device in /dev/nvidiactl: without either, NVML cannot answer — skip importing it (tens of ms)."""
    return (sys.platform.startswith("linux") and not os.path.exists(at("proc/driver/nvidia"))
            and not os.path.exists(at("dev/nvidiactl")))


@functools.lru_cache(maxsize=None)
def nvml() -> DriverReading | None:
    if _no_driver_here():
        return None
    module = _nvml_module()
    return _nvml_read(module, "nvml") if module is not None else None


@functools.lru_cache(maxsize=None)
def wsl_nvml() -> DriverReading | None:
    path = at(WSL_LIB, "libnvidia-ml.so.1")
    if not os.path.exists(path):  # not WSL: skip importing pynvml (tens of ms on every command)
        return None
    module = _nvml_module()
    if module is None:
        return None
    try:
        # pynvml only asks the loader for libnvidia-ml.so.1; handing it the WSL copy makes
        # nvmlInit use that one (it loads a library only while nvmlLib is None).
        setattr(module, "nvmlLib", _load_library(path))
    except OSError:
        return None
    return _nvml_read(module, f"nvml (/{WSL_LIB}/libnvidia-ml.so.1)")


# ---- nvidia-smi ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def nvidia_smi() -> DriverReading | None:
    on_path = shutil.which("nvidia-smi")
    if on_path is not None:
        return _smi_read(on_path, "nvidia-smi")
    in_wsl = at(WSL_LIB, "nvidia-smi")
    return _smi_read(in_wsl, f"/{WSL_LIB}/nvidia-smi") if os.access(in_wsl, os.X_OK) else None


def _smi_read(exe: str, source: str) -> DriverReading | None:
    table = _run([exe, f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv"]) or _run(
        # nvidia-smi of R470 and older refuses the whole query over the compute_cap field.
        [exe, f"--query-gpu={','.join(f for f in SMI_FIELDS if f != 'compute_cap')}", "--format=csv"]
    )
    rows = _smi_rows(table) if table is not None else None
    if rows is None:
        return None
    banner = _run([exe]) or ""
    driver = next((r["driver_version"] for r in rows if _VERSION.match(r.get("driver_version", ""))), None)
    driver_in_banner = _BANNER_DRIVER.search(banner)
    cuda_in_banner = _BANNER_CUDA.search(banner)
    return DriverReading(
        source=source,
        driver=driver or (driver_in_banner.group(1) if driver_in_banner else None),
        cuda=cuda_in_banner.group(1) if cuda_in_banner else None,
        gpus=_smi_gpus(rows),
    )


def _smi_rows(table: str) -> list[dict[str, str]] | None:
    lines = [line for line in table.splitlines() if line.strip()]
    if not lines or "name" not in lines[0]:
        return None
    import csv

    reader = csv.reader(lines, skipinitialspace=True)
    # Header cells carry units ("memory.total [MiB]"); the field name is what precedes them.
    header = [cell.split(" [")[0].strip() for cell in next(reader)]
    return [dict(zip(header, (cell.strip() for cell in row))) for row in reader]


def _smi_gpus(rows: list[dict[str, str]]) -> tuple[Gpu, ...] | None:
    gpus = []
    for position, row in enumerate(rows):
        listed = row.get("compute_cap", "")
        cc = listed if _CC.match(listed) else cc_for_name(row.get("name", ""))
        if cc is None:
            return None  # one GPU of unknown arch makes the whole list unusable for locking
        index = row.get("index", "")
        memory = row.get("memory.total", "").split(" ")[0]
        uuid = row.get("uuid", "")
        gpus.append(
            Gpu(
                index=int(index) if index.isdigit() else position,
                name=row.get("name", ""),
                cc=cc,
                memory_mib=int(memory) if memory.isdigit() else None,
                uuid=uuid if uuid.startswith("GPU-") else None,
            )
        )
    return tuple(gpus)


@functools.lru_cache(maxsize=None)
def gpu_table() -> Matrix | None:
    try:
        from tritonlock.compat.matrix import load_matrix

        return load_matrix()
    except (NotImplementedError, MatrixError, OSError):
        # NotImplementedError: matrix.py may still be a skeleton; names then simply do not map.
        return None


def cc_for_name(name: str) -> str | None:
    """Compute capability of a GPU model from compat/ data; None when unknown or the table is absent."""
    table = gpu_table()
    if table is None or not name:
        return None
    try:
        return table.gpu_cc(name)
    except NotImplementedError:
        return None


# ---- /proc ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def proc_driver() -> DriverReading | None:
    # The kernel module's version only: no CUDA version and, on purpose, no GPU list, since
    # /proc/driver/nvidia/gpus/ also shows the host's GPUs inside a container that cannot use them.
    text = _read(at(PROC_DRIVER))
    found = _PROC_DRIVER.search(text) if text is not None else None
    return DriverReading(source=f"/{PROC_DRIVER}", driver=found.group(1)) if found else None


DRIVER_PROBES: tuple[Callable[[], DriverReading | None], ...] = (nvml, wsl_nvml, nvidia_smi, proc_driver)


# ---- nvcc ----------------------------------------------------------------------------------


def _nvcc_at(exe: str | None, source: str) -> tuple[str, str] | None:
    out = _run([exe, "--version"]) if exe is not None else None
    found = _NVCC.search(out) if out is not None else None
    return (found.group(1), source) if found else None


@functools.lru_cache(maxsize=None)
def nvcc() -> tuple[str, str] | None:
    """(toolkit version, where it was found)."""
    on_path = shutil.which("nvcc")
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    in_home = shutil.which("nvcc", path=os.path.join(home, "bin")) if home else None
    in_default = shutil.which("nvcc", path=at(CUDA_DEFAULT, "bin"))
    return (
        _nvcc_at(on_path, f"{on_path} (PATH)")
        or _nvcc_at(in_home, f"{in_home} (CUDA_HOME)")
        or _nvcc_at(in_default, f"/{CUDA_DEFAULT}/bin/nvcc")
    )


# ---- platform ------------------------------------------------------------------------------

_OS = {"linux": "linux", "win32": "windows", "windows": "windows", "darwin": "macos", "macos": "macos"}
_X86_64 = {"x86_64", "amd64", "x64"}
_ARM64 = {"aarch64", "arm64"}


def normalize_os(name: str) -> str | None:
    return _OS.get(name.lower())


def normalize_arch(machine: str, os_name: str) -> str | None:
    machine = machine.lower()
    if machine in _X86_64:
        return "x86_64"
    if machine in _ARM64:
        # Same silicon, two spellings: wheel tags say aarch64 on Linux and arm64 on macOS/Windows.
        return "aarch64" if os_name == "linux" else "arm64"
    return None


_MACOS = re.compile(r"^[1-9][0-9](\.[0-9]+){0,2}\Z", re.ASCII)

def os_name() -> str:
    return normalize_os(sys.platform) or sys.platform


def arch(os_name: str) -> str:
    machine = platform.machine()
    return normalize_arch(machine, os_name) or machine.lower()


def python() -> str:
    return platform.python_version()


def macos_version() -> str | None:
    """The macOS version ("14.5") on a Mac, from the system (platform.mac_ver reads SystemVersion.plist)."""
    found = platform.mac_ver()[0]
    return found if _MACOS.match(found) else None


def _glibc_confstr() -> str | None:
    try:
        found = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.39"; musl has no such name
    except (ValueError, OSError):
        return None
    name, _, version = (found or "").partition(" ")
    return version if name == "glibc" and _VERSION.match(version) else None


def _glibc_libc_ver() -> str | None:
    name, version = platform.libc_ver()
    return version if name == "glibc" and _VERSION.match(version) else None


@functools.lru_cache(maxsize=None)
def glibc() -> tuple[str, str] | None:
    if not sys.platform.startswith("linux"):
        return None
    found = _glibc_confstr()
    if found is not None:
        return found, "confstr"
    found = _glibc_libc_ver()  # scans the interpreter binary: only when confstr cannot tell
    return (found, "platform.libc_ver") if found is not None else None


@functools.lru_cache(maxsize=None)
def container() -> tuple[str, str] | None:
    """(kind, evidence), most specific evidence first."""
    cgroup = (_read(at(PROC_CGROUP)) or "").lower()
    marker = os.environ.get("container", "")  # systemd's convention; podman and lxc set it
    checks = (
        (bool(os.environ.get("KUBERNETES_SERVICE_HOST")), "kubernetes", "KUBERNETES_SERVICE_HOST"),
        (os.path.exists(at("run/.containerenv")), "podman", "/run/.containerenv"),
        (os.path.exists(at(".dockerenv")), "docker", "/.dockerenv"),
        ("kubepods" in cgroup, "kubernetes", f"/{PROC_CGROUP}"),
        ("docker" in cgroup, "docker", f"/{PROC_CGROUP}"),
        ("libpod" in cgroup, "podman", f"/{PROC_CGROUP}"),
        ("containerd" in cgroup or "lxc" in cgroup, "container", f"/{PROC_CGROUP}"),
        (bool(marker), marker, "$container"),
    )
    return next(((kind, evidence) for hit, kind, evidence in checks if hit), None)


@functools.lru_cache(maxsize=None)
def wsl() -> bool:
    # WSL1 kernels say "Microsoft", WSL2 "microsoft-standard-WSL2".
    return "microsoft" in (_read(at(PROC_VERSION)) or "").lower()


def clear_cache() -> None:
    for probe in (nvml, wsl_nvml, nvidia_smi, proc_driver, gpu_table, nvcc, glibc, container, wsl):
        probe.cache_clear()
