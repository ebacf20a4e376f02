"""doctor's checks of the host, the toolkit and the torch build: pure functions from facts to findings."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from tritonlock.doctor import Dist, Finding, LockFacts, VenvFacts
from tritonlock.models import HostProfile, LockedTarget

if TYPE_CHECKING:
    from tritonlock.matrix import Matrix

_HIDDEN = ("", "-1", "none", "NoDevFiles")  # CUDA_VISIBLE_DEVICES values that hide every GPU
# Error texts of cudaGetDeviceCount / cuInit that name their cause (CUDA runtime API, cudaError_t).
_CUDA_INIT_CAUSES = (
    ("too old", "the driver is older than this torch build's CUDA"),
    ("803", "the user-space driver library and the kernel module differ (error 803: unsupported display driver / "
            "cuda driver combination) — usually a driver upgrade without a reboot, or cuda-compat libraries on "
            "LD_LIBRARY_PATH"),
    ("804", "CUDA forward-compatibility libraries are in use on a GPU that does not support them (error 804) — "
            "remove the cuda-compat directory from LD_LIBRARY_PATH"),
    ("999", "the CUDA driver is in a bad state (error 999, unknown error) — often the nvidia_uvm module after "
            "suspend: `sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm`, or reboot"),
    ("no NVIDIA driver", "no NVIDIA driver is visible to this process"),
)


def _v(s: str | None) -> Version | None:
    try:
        return Version(s) if s else None
    except InvalidVersion:
        return None


def _lt(a: str, b: str) -> bool:
    """a < b as versions; False when either is not a version."""
    va, vb = _v(a), _v(b)
    return va is not None and vb is not None and va < vb


def _major(cuda: str) -> int:
    return int(cuda.split(".")[0])


def _sm(cc: str) -> str:
    return "sm_" + cc.replace(".", "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _cuda_of_local(version: str) -> tuple[bool, str | None]:
    """From a version's local tag: (known, CUDA) — '2.6.0+cu126' → (True, '12.6'); '+cpu' → (True, None)."""
    local = version.partition("+")[2]
    if local == "cpu":
        return True, None
    m = re.fullmatch(r"cu(\d+)(\d)", local)
    return (True, f"{m[1]}.{m[2]}") if m else (False, None)


def _glibc_needed(tags: tuple[str, ...]) -> str | None:
    """The least glibc any of a wheel's tags runs on; None when a tag needs none (pure or non-manylinux)."""
    need: list[tuple[int, int]] = []
    for tag in tags:
        for plat in tag.split("-")[-1].split("."):
            m = re.match(r"manylinux_(\d+)_(\d+)_", plat)
            legacy = {"manylinux2014": (2, 17), "manylinux2010": (2, 12), "manylinux1": (2, 5)}
            found = (int(m[1]), int(m[2])) if m else legacy.get(plat.split("_")[0])
            if found is None:
                return None
            need.append(found)
    return f"{min(need)[0]}.{min(need)[1]}" if need else None


@dataclass(frozen=True, kw_only=True, slots=True)
class _Ctx:
    host: HostProfile
    venv: VenvFacts | None
    lock: LockFacts | None
    matrix: Matrix | None
    where: str  # the venv (or interpreter) as the user named it

    @property
    def target(self) -> LockedTarget | None:
        return self.lock.target if self.lock else None

    def dists(self, name: str) -> list[Dist]:
        """Installed copies of a distribution, in sys.path order (the first one is what imports)."""
        if self.venv is None:
            return []
        return [d for d in self.venv.dists if canonicalize_name(d.name) == canonicalize_name(name)]

    def dist(self, name: str) -> Dist | None:
        found = self.dists(name)
        return found[0] if found else None

    def torch_ok(self) -> bool:
        return bool(self.venv and self.venv.torch and not self.venv.torch.error and self.venv.torch.version)

    def torch_version(self) -> str | None:
        if self.venv and self.venv.torch and self.venv.torch.version:
            return self.venv.torch.version
        d = self.dist("torch")
        return d.version if d else None

    def torch_cuda(self) -> tuple[bool, str | None]:
        """(known, CUDA version of the installed torch build; None = CPU build)."""
        if self.torch_ok():
            assert self.venv and self.venv.torch
            return True, self.venv.torch.cuda
        v = self.torch_version()
        return _cuda_of_local(v) if v else (False, None)

    def gpu_expected(self) -> bool:
        if self.target is not None and self.target.selection.target.driver is None:
            return False  # the lock's target is a machine without a driver: its build runs on the CPU
        known, cuda = self.torch_cuda()
        if known and cuda:
            return True
        sel = self.target.selection if self.target else None
        return bool(sel and sel.backend and sel.backend.startswith("cu"))

    def gpu_list(self) -> str:
        return "; ".join(f"GPU {g.index}: {g.name or 'unnamed'} (compute capability {g.cc})" for g in self.host.gpus)

    def driver_line(self) -> str:
        h = self.host
        return f"driver {h.driver}" + (f" supports CUDA {h.cuda_driver} at most" if h.cuda_driver else "")


# ---------------------------------------------------------------- host


def _container_fix(kind: str) -> str:
    if kind == "kubernetes":
        return ("request the GPU in the pod spec (resources.limits: nvidia.com/gpu: 1) on a node running the NVIDIA "
                "device plugin")
    if kind == "podman":
        return ("run it with `podman run --device nvidia.com/gpu=all …` after generating the CDI spec on the host: "
                "`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`")
    return ("run it with `docker run --gpus all …` (compose: deploy.resources.reservations.devices with "
            "capabilities: [gpu]); on the host, install nvidia-container-toolkit and run `sudo nvidia-ctk runtime "
            "configure --runtime=docker && sudo systemctl restart docker`")


def check_driver(c: _Ctx) -> list[Finding]:
    h = c.host
    # Without anything that wants a GPU, a GPU-less container or WSL is a fact, not a problem.
    sev = "error" if c.gpu_expected() else "info"
    why = _why_gpu(c)
    if h.wsl and (h.driver is None or not h.gpus):
        ev = ["WSL2 kernel (/proc/version names Microsoft)", f"driver: {h.driver or 'none found'}; GPUs: none listed"]
        if c.venv and c.venv.libcuda_error:
            ev.append(f"loading libcuda.so.1: {c.venv.libcuda_error}")
        return [Finding(id="wsl-no-gpu", severity=sev, title="WSL2 shows no NVIDIA GPU" + why, evidence=tuple(ev),
                        fix="install or update the NVIDIA driver on Windows (it provides /usr/lib/wsl/lib/libcuda.so.1 "
                            "to WSL), run `wsl --update` and `wsl --shutdown` in Windows, and do not install a Linux "
                            "NVIDIA driver inside WSL")]
    if h.container and not h.gpus:
        seen = (f"the host's driver {h.driver} is loaded (/proc/driver/nvidia is shared with containers), but NVML "
                "and nvidia-smi list no GPU" if h.driver else "no NVIDIA driver or GPU is visible")
        probe = next((p for p in h.probes if p.startswith("container:")), f"container: {h.container}")
        return [Finding(id="container-no-gpu", severity=sev, title=f"no GPU is visible inside this {h.container} "
                        "container" + why, evidence=(probe, seen), fix=_container_fix(h.container))]
    if h.driver is None:
        floor = c.target.selection.driver_floor if c.target else None
        return [Finding(id="no-driver", severity=sev if c.gpu_expected() else "info",
                        title="no NVIDIA driver on this host" + why,
                        evidence=("NVML, nvidia-smi and /proc/driver/nvidia/version found no driver",),
                        fix="install the NVIDIA driver" + (f" (>= {floor} for the locked build)" if floor else "")
                            + " and reboot, then check with `nvidia-smi`; for a machine without a GPU, lock a CPU "
                            "build: cuda = \"cpu\" in triton-env.toml, then `tritonlock resolve`")]
    if not h.gpus:
        return [Finding(id="nvml-unreadable", severity="error" if c.gpu_expected() else "warning",
                        title=f"NVIDIA driver {h.driver} is loaded but NVML lists no GPU" + why,
                        evidence=tuple(h.probes) + tuple(h.warnings),
                        fix="after a driver upgrade the kernel module and the user-space library differ until a "
                            "reboot (nvidia-smi then says 'Failed to initialize NVML: Driver/library version "
                            "mismatch'): reboot, or reinstall the driver so both match; check that /dev/nvidia* "
                            "exist and are readable. Until NVML answers, name the GPUs: TRITONLOCK_GPUS=8.0")]
    return []


def _why_gpu(c: _Ctx) -> str:
    known, cuda = c.torch_cuda()
    if known and cuda:
        return f", but torch {c.torch_version()} in {c.where} is a CUDA {cuda} build"
    if c.target and c.gpu_expected():
        return f", but the lock's target {c.target.name!r} is a {c.target.selection.backend} build"
    return ""


def _toolkit_floor(c: _Ctx, cuda: str) -> str | None:
    if c.matrix is None:
        return None
    for tk in c.matrix.cuda:
        if tk.version == cuda:
            return tk.windows_driver if c.host.os == "windows" else tk.linux_driver
    return None


def check_toolkit(c: _Ctx) -> list[Finding]:
    h, out = c.host, []
    nvcc, dc = _v(h.nvcc), _v(h.cuda_driver)
    if h.nvcc and h.cuda_driver and nvcc and dc and nvcc > dc:
        floor = _toolkit_floor(c, h.nvcc)
        same = _major(h.nvcc) == _major(h.cuda_driver)
        broken = ("programs built with this nvcc (CUDA extensions compiled from source: flash-attn, apex, "
                  "torch.utils.cpp_extension builds) " + (
                      "run through minor-version compatibility but cannot JIT their PTX: 'the provided PTX was "
                      "compiled with an unsupported toolchain'" if same else
                      "fail at run time: 'CUDA driver version is insufficient for CUDA runtime version'"))
        ev = [f"nvidia-smi/NVML: {c.driver_line()} (the newest CUDA the driver runs, not an installed toolkit)",
              f"nvcc --version: release {h.nvcc}",
              "not affected: the torch and triton wheels, which bring their own CUDA runtime (nvidia-* wheels) and "
              "ptxas", f"affected: {broken}"]
        ptxas = c.venv.env.get("TRITON_PTXAS_PATH") if c.venv else None
        if ptxas:
            ev.append(f"affected: Triton, because TRITON_PTXAS_PATH={ptxas} replaces its bundled ptxas")
        fix = (f"nothing to do if you only use wheels; to build CUDA code, update the driver to one for CUDA {h.nvcc}"
               + (f" (>= {floor})" if floor else "") + f", or put a CUDA {h.cuda_driver} toolkit first on PATH and "
               f"in CUDA_HOME (e.g. /usr/local/cuda-{h.cuda_driver})" + ("; unset TRITON_PTXAS_PATH" if ptxas else ""))
        out.append(Finding(id="nvcc-newer-than-driver", severity="warning",
                           title=f"the CUDA toolkit (nvcc {h.nvcc}) is newer than the CUDA {h.cuda_driver} driver "
                                 f"{h.driver} supports", evidence=tuple(ev), fix=fix))
    known, tc = c.torch_cuda()
    if h.nvcc and known and tc and _major(h.nvcc) != _major(tc):
        out.append(Finding(
            id="nvcc-torch-mismatch", severity="warning",
            title=f"nvcc {h.nvcc} and torch's CUDA {tc} differ in major version: building CUDA extensions against "
                  "this torch fails",
            evidence=(f"nvcc --version: release {h.nvcc}", f"torch {c.torch_version()}: torch.version.cuda = {tc}",
                      f"torch.utils.cpp_extension raises: The detected CUDA version ({h.nvcc}) mismatches the "
                      f"version that was used to compile PyTorch ({tc})"),
            fix=f"install a CUDA {tc} toolkit and point CUDA_HOME at it (e.g. CUDA_HOME=/usr/local/cuda-{tc}) before "
                "building extensions; using the wheels alone is not affected"))
    return out


# ---------------------------------------------------------------- torch


def _sync_fix(c: _Ctx) -> str:
    if c.lock and c.lock.lock is not None:
        return "`tritonlock sync` (it installs the locked files and removes the rest)"
    return "`tritonlock resolve` and `tritonlock sync`"


def check_torch(c: _Ctx) -> list[Finding]:
    from tritonlock._doctor_mixed import _causes, _symbol_fix, _undefined_symbol

    v = c.venv
    if v is None:
        return []
    if v.torch is None:
        return [Finding(id="torch-import-crash", severity="error",
                        title=f"the interpreter died while importing torch and triton in {c.where}",
                        evidence=(f"import phase: {v.import_crash}",), fix=_symbol_fix(c, _causes(c, ""), c.where))]
    t = v.torch
    if t.error:
        if "No module named 'torch'" in t.error and not c.dists("torch"):
            return [Finding(id="torch-missing", severity="warning", title=f"torch is not installed in {c.where}",
                            fix=_sync_fix(c))]
        if "undefined symbol" in t.error:
            return [_undefined_symbol(c, "torch", t.error)]
        ev = [t.error] + [f"needs {g}" for g in re.findall(r"GLIBC_[\d.]+", t.error)]
        return [Finding(id="torch-import-error", severity="error", title=f"`import torch` fails in {c.where}",
                        evidence=tuple(ev), fix=_symbol_fix(c, _causes(c, t.error), c.where))]
    out: list[Finding] = []
    gpus = c.host.gpus
    if t.cuda is None and (gpus or c.host.driver):
        ev = [f"torch {t.version}: torch.version.cuda = None ({t.file})", c.gpu_list() or c.driver_line()]
        if (t.version or "").endswith("+cpu"):
            ev.append("the +cpu local version: the build came from the torch index's cpu variant")
        elif v.markers.get("platform_system") == "Windows":
            ev.append("PyPI's torch for Windows is a CPU-only build")
        sel = c.target.selection if c.target else None
        fix = (f"`tritonlock sync` installs the locked {sel.backend} build" if sel and sel.backend
               and sel.backend.startswith("cu") else "lock a CUDA build: cuda = \"auto\" in triton-env.toml (not "
               "\"cpu\"), `tritonlock resolve`, then `tritonlock sync`")
        out.append(Finding(id="torch-cpu-only", severity="error", title=f"CPU-only torch {t.version} is installed in "
                           f"{c.where}, but this host has " + (_plural(len(gpus), "NVIDIA GPU") if gpus else
                                                              f"NVIDIA driver {c.host.driver}"),
                           evidence=tuple(ev), fix=fix))
    too_new = _torch_cuda_too_new(c)
    out += too_new
    if t.cuda and t.cuda_available is False and (gpus or c.host.driver):
        out.append(_cuda_unavailable(c, bool(too_new)))
    if t.cuda:
        out += _arch_findings(c)
    out += _python_range(c)
    return out


def _torch_cuda_too_new(c: _Ctx) -> list[Finding]:
    assert c.venv and c.venv.torch
    t, h = c.venv.torch, c.host
    if not t.cuda or not h.cuda_driver or not h.driver or not _lt(h.cuda_driver, t.cuda):
        return []
    ev = [f"torch {t.version}: torch.version.cuda = {t.cuda}", f"nvidia-smi/NVML: {c.driver_line()}"]
    ev += [w for w in t.warnings if "driver" in w.lower()]
    need = _toolkit_floor(c, t.cuda)
    refix = (f"update the NVIDIA driver to one for CUDA {t.cuda}" + (f" (>= {need})" if need else "")
             + ", or lock a build this driver runs: "
             "`tritonlock resolve` (cuda = \"auto\") then `tritonlock sync`")
    floor = None
    if c.matrix is not None and _major(t.cuda) == _major(h.cuda_driver):
        row = next((m for m in c.matrix.minor_compat if m.major == _major(t.cuda)), None)
        floor = (row.windows_driver if h.os == "windows" else row.linux_driver) if row else None
    if _major(t.cuda) == _major(h.cuda_driver) and (floor is None or (_v(h.driver) or Version("0")) >= Version(floor)):
        ev.append(f"CUDA {_major(t.cuda)}.x minor-version compatibility" + (f" needs driver >= {floor}" if floor
                                                                             else "") + f"; this host has {h.driver}")
        return [Finding(id="torch-cuda-minor-compat", severity="warning",
                        title=f"torch {t.version} is built for CUDA {t.cuda}, newer than the CUDA {h.cuda_driver} "
                              f"driver {h.driver} supports: it runs through minor-version compatibility",
                        evidence=tuple(ev), fix="works for wheels; what needs the newer driver is PTX JIT (GPUs the "
                        f"build has no machine code for) and newer CUDA features — {refix}")]
    if floor:
        ev.append(f"CUDA {_major(t.cuda)}.x minor-version compatibility needs driver >= {floor}")
    return [Finding(id="torch-cuda-too-new", severity="error",
                    title=f"torch {t.version} is built for CUDA {t.cuda}, but driver {h.driver} supports CUDA "
                          f"{h.cuda_driver} at most", evidence=tuple(ev), fix=refix)]


def _cuda_unavailable(c: _Ctx, driver_too_old: bool) -> Finding:
    assert c.venv and c.venv.torch
    t, env = c.venv.torch, c.venv.env
    ev = [f"torch {t.version} (CUDA {t.cuda}): torch.cuda.is_available() = False", c.gpu_list() or c.driver_line()]
    ev += [f"torch warned: {w}" for w in t.warnings] + ([f"CUDA init: {t.cuda_error}"] if t.cuda_error else [])
    text = " ".join(t.warnings) + " " + (t.cuda_error or "")
    causes: list[tuple[str, str]] = []
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None and (cvd.strip() in _HIDDEN or all(p.strip() in _HIDDEN for p in cvd.split(","))):
        causes.append((f"CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU", "unset CUDA_VISIBLE_DEVICES (or list the "
                       "GPUs to use: CUDA_VISIBLE_DEVICES=0)"))
    if driver_too_old:
        causes.append(("the driver is older than this build's CUDA (see torch-cuda-too-new)",
                       "update the driver or lock a build this driver runs (`tritonlock resolve`, `tritonlock sync`)"))
    for needle, cause in _CUDA_INIT_CAUSES:
        if needle in text and not (needle == "too old" and driver_too_old):
            causes.append((cause, "see the cause"))
    if c.venv.libcuda_error and not causes:  # the driver's CUDA library itself: the last link in the chain
        caps = env.get("NVIDIA_DRIVER_CAPABILITIES")
        causes.append((f"libcuda.so.1 cannot be loaded ({c.venv.libcuda_error})" + (
            f"; NVIDIA_DRIVER_CAPABILITIES={caps} leaves out compute" if caps and not {"compute", "all"} & set(
                caps.split(",")) else ""), "install the driver's user-space libraries (libcuda.so.1); in a container, "
                       "start it with --gpus all and NVIDIA_DRIVER_CAPABILITIES=compute,utility"))
    if not c.host.gpus:
        causes.append(("no GPU is visible to this process (see the driver findings above)", "fix that first"))
    ev += [f"likely cause: {cause}" for cause, _ in causes]
    fixes = [f for _, f in causes if f not in ("see the cause", "fix that first")]
    fix = "; ".join(dict.fromkeys(fixes)) or ("check `nvidia-smi` in the same shell; if it lists the GPU, reinstall "
                                             f"the venv from the lock: {_sync_fix(c)}")
    return Finding(id="cuda-unavailable", severity="error",
                   title=f"torch.cuda.is_available() is False in {c.where} although this host has "
                         + (_plural(len(c.host.gpus), "NVIDIA GPU") if c.host.gpus else f"driver {c.host.driver}"),
                   evidence=tuple(ev), fix=fix)


def _arch_findings(c: _Ctx) -> list[Finding]:
    from tritonlock.matrix import gpu_runs

    assert c.venv and c.venv.torch
    t = c.venv.torch
    archs = tuple(a for a in t.arch_list if a.startswith("sm_"))
    ptx = tuple(a for a in t.arch_list if a.startswith("compute_"))
    source = "torch.cuda.get_arch_list()"
    sel = c.target.selection if c.target else None
    if not archs and sel and sel.torch and t.version and (_v(t.version) or Version("0")).public == sel.torch:
        archs, ptx, source = sel.archs, sel.ptx, f"the lock's archs for {sel.backend} (CUDA is unavailable here)"
    if not archs:
        return []
    out = []
    nums = sorted((int(a[3:].rstrip("af")), a) for a in archs if a[3:].rstrip("af").isdigit())
    for g in c.host.gpus:
        if gpu_runs(g.cc, archs, ptx) is not None:
            continue
        ev = [f"{source}: {' '.join(archs + ptx)}", f"GPU {g.index}: {g.name} (compute capability {g.cc})"]
        ev += [f"torch warned: {w}" for w in t.warnings if "not compatible" in w]
        newer = bool(nums) and int(g.cc.replace(".", "")) > nums[-1][0]
        if newer:
            fix = ("this GPU is newer than the build: Blackwell GPUs (sm_100, sm_120) need a CUDA 12.8+ build "
                   "(torch >= 2.7, backend cu128 or newer) — ")
        else:
            fix = (f"this GPU is older than the build, which starts at {nums[0][1] if nums else '?'}: newer CUDA "
                   "builds dropped old GPUs, a cu126 build still has sm_50…sm_90 (cuda = \"cu126\" in "
                   "triton-env.toml) — ")
        fix += (f"add \"{g.cc}\" to the target's gpus in triton-env.toml, `tritonlock resolve`, then `tritonlock sync`")
        out.append(Finding(id="gpu-arch-missing", severity="error",
                           title=f"{g.name} ({_sm(g.cc)}) is not in the arch list of torch {t.version}: its CUDA "
                                 "kernels cannot run on this GPU", evidence=tuple(ev), fix=fix))
    return out


def _python_range(c: _Ctx) -> list[Finding]:
    assert c.venv
    out, py, tv = [], c.venv.minor, c.torch_version()
    sel = c.target.selection if c.target else None
    if sel and sel.python and sel.python != py:
        out.append(Finding(id="python-mismatch", severity="error",
                           title=f"{c.where} runs Python {c.venv.python}, but the lock's target {sel.target.name!r} is "
                                 f"for Python {sel.python}",
                           evidence=(f"{c.venv.interpreter}: Python {c.venv.python}",
                                     f"{c.lock.path if c.lock else 'lock'}: target {sel.target.name}: python = "
                                     f"{sel.python}"),
                           fix=f"recreate the venv with Python {sel.python}: remove {c.where} and run `tritonlock "
                               "sync`; or change python in triton-env.toml and run `tritonlock resolve`"))
    d = c.dist("torch")
    ranges: list[str] = []
    if d and d.requires_python:
        try:
            if py not in SpecifierSet(d.requires_python) and c.venv.python not in SpecifierSet(d.requires_python):
                ranges.append(f"torch {d.version} METADATA: Requires-Python {d.requires_python}")
        except InvalidSpecifier:
            pass
    if c.matrix is not None and tv:
        public = (_v(tv) or Version("0")).public
        rel = next((r for r in c.matrix.torch if r.version == public), None)
        if rel and rel.python and py not in rel.python:
            ranges.append(f"compat/: torch {public} publishes wheels for Python {', '.join(rel.python)} ({rel.source})")
    if ranges:
        out.append(Finding(id="python-unsupported", severity="error",
                           title=f"torch {tv} is not built for Python {py} ({c.where})",
                           evidence=(f"{c.venv.interpreter}: Python {c.venv.python}", *ranges),
                           fix="use a Python this torch supports: set python in triton-env.toml, `tritonlock "
                               "resolve`, then `tritonlock sync`"))
    return out


# ---------------------------------------------------------------- triton


def check_triton_gpu(c: _Ctx) -> list[Finding]:
    """GPUs below Triton's minimum compute capability (compat/ triton rows: min_cc, supported_cc)."""
    if c.matrix is None or not c.host.gpus:
        return []
    d = c.dist("triton") or c.dist("pytorch-triton")
    tv = (c.venv.triton_version if c.venv else None) or (d.version if d else None)
    if tv is None and c.target and c.target.selection.triton_package == "triton":
        tv = c.target.selection.triton
    public = str((_v(tv) or Version("0")).public) if tv else None
    rel = next((r for r in c.matrix.triton if r.version == public), None)
    if rel is None:
        return []
    out = []
    for g in c.host.gpus:
        cc = _v(g.cc)
        if cc is None:
            continue
        gpu = f"{g.name or 'GPU ' + str(g.index)} (compute capability {g.cc})"
        if cc < Version(rel.min_cc):
            out.append(Finding(
                id="gpu-too-old-for-triton", severity="error",
                title=f"{gpu} is too old for Triton {tv}, which needs compute capability >= {rel.min_cc}",
                evidence=(f"compat/: triton {rel.version}: min_cc = {rel.min_cc} ({rel.source})",
                          f"GPU {g.index}: {g.name} (compute capability {g.cc})",
                          f"torch.compile refuses it: Found {g.name} which is too old to be supported by the triton "
                          "GPU compiler"),
                fix=f"torch runs eagerly on this GPU, but torch.compile and Triton kernels cannot: use a GPU with "
                    f"compute capability >= {rel.min_cc} for them, or keep torch.compile off here "
                    "(torch.compile(backend=\"eager\"))"))
        elif cc < Version(rel.supported_cc):
            out.append(Finding(
                id="gpu-below-triton-support", severity="warning",
                title=f"{gpu} runs Triton {tv} but is below the compute capability Triton supports "
                      f"({rel.supported_cc})",
                evidence=(f"compat/: triton {rel.version}: supported_cc = {rel.supported_cc} ({rel.source})",),
                fix="expect some Triton kernels (bf16, fp8, tensor-core dots) to fail to compile or run slowly here; "
                    "`tritonlock verify` shows which"))
    return out


# ---------------------------------------------------------------- mixed installs


# ---------------------------------------------------------------- undefined symbols


# ---------------------------------------------------------------- the lock


# ---------------------------------------------------------------- entry points


def diagnose(host: HostProfile, venv: VenvFacts | None, lock: LockFacts | None, matrix: Matrix | None, *,
             venv_path: str = ".venv", broken: str | None = None) -> tuple[Finding, ...]:
    """All findings for these facts, in check order (pure: no probing, no I/O)."""
    where = venv.prefix if venv else os.path.dirname(os.path.dirname(venv_path)) or venv_path
    from tritonlock import _doctor_mixed as mixed

    checks: tuple[Callable[[_Ctx], list[Finding]], ...] = (
        check_driver, check_toolkit, check_torch, mixed.check_triton, check_triton_gpu, mixed.check_duplicates,
        mixed.check_conda, mixed.check_shadowing, mixed.check_wsl_libcuda, mixed.check_glibc, mixed.check_lock)
    c = _Ctx(host=host, venv=venv, lock=lock, matrix=matrix, where=where)
    out: list[Finding] = []
    if venv is None and broken:
        out.append(Finding(id="venv-broken", severity="error", title=f"the venv at {where} cannot run: its Python "
                           "interpreter is gone or broken", evidence=(broken,),
                           fix=f"remove {where} and run `tritonlock sync` to recreate it"))
    elif venv is None:
        out.append(Finding(id="venv-missing", severity="warning", title=f"no venv at {where}: only the host was "
                           "examined", fix="`tritonlock sync` creates it; or pass --python PATH for another one"))
    for check in checks:
        for f in check(c):
            if f not in out:
                out.append(f)
    return tuple(out)


def summary(host: HostProfile, venv: VenvFacts | None, lock: LockFacts | None, interpreter: str) -> tuple[str, ...]:
    h = host
    parts = [f"{h.os}/{h.arch}"] + ([f"glibc {h.glibc}"] if h.glibc else [])
    parts.append(f"driver {h.driver} (CUDA {h.cuda_driver or '?'})" if h.driver else "no NVIDIA driver")
    parts += [f"GPU {g.index} " + (f"{g.name} ({g.cc})" if g.name else f"(compute capability {g.cc})") for g in h.gpus]
    parts += [f"nvcc {h.nvcc}"] if h.nvcc else []
    parts += [f"in a {h.container} container"] if h.container else []
    parts += ["WSL2"] if h.wsl else []
    lines = ["host:  " + ", ".join(parts)]
    if venv is None:
        lines.append(f"venv:  none ({interpreter} does not exist)")
    else:
        t = venv.torch
        torch = ("torch: import crashed" if t is None else f"torch: {t.error.splitlines()[0][:100]}" if t.error
                 else f"torch {t.version} (" + (f"CUDA {t.cuda}, available: {'yes' if t.cuda_available else 'no'}"
                                                if t.cuda else "CPU build") + ")")
        triton = f"triton {venv.triton_version}" if venv.triton_version else "no triton"
        lines.append(f"venv:  {venv.prefix} (Python {venv.python}): {torch}, {triton}")
    if lock is None:
        lines.append("lock:  none")
    elif lock.target is not None:
        s = lock.target.selection
        lines.append(f"lock:  {lock.path}, target {lock.target.name} (torch {s.torch}, {s.backend})")
    else:
        lines.append(f"lock:  {lock.path} (no target for this host)")
    return tuple(lines)
