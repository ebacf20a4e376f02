"""doctor's checks of the torch and Triton builds: import errors, CPU-only torch, CUDA vs driver, GPU archs, Python."""

from __future__ import annotations

import re

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from tritonlock.doctor.checks_install import mixed_causes, symbol_fix, undefined_symbol
from tritonlock.doctor.context import (Context, Finding, cuda_major, older, parse_version, plural, sync_fix,
                                       toolkit_floor)
from tritonlock.doctor.facts import TritonPtxas
from tritonlock.models import Gpu

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


def _sm(cc: str) -> str:
    return "sm_" + cc.replace(".", "")


# ---------------------------------------------------------------- torch


def check_torch(c: Context) -> list[Finding]:
    v = c.venv
    if v is None:
        return []
    if v.torch is None:
        return [Finding(id="torch-import-crash", severity="error",
                        title=f"the interpreter died while importing torch and triton in {c.where}",
                        evidence=(f"import phase: {v.import_crash}",), fix=symbol_fix(c, mixed_causes(c, ""), c.where))]
    t = v.torch
    if t.error:
        if "No module named 'torch'" in t.error and not c.dists("torch"):
            return [Finding(id="torch-missing", severity="warning", title=f"torch is not installed in {c.where}",
                            fix=sync_fix(c))]
        if "undefined symbol" in t.error:
            return [undefined_symbol(c, "torch", t.error)]
        ev = [t.error] + [f"needs {g}" for g in re.findall(r"GLIBC_[\d.]+", t.error)]
        return [Finding(id="torch-import-error", severity="error", title=f"`import torch` fails in {c.where}",
                        evidence=tuple(ev), fix=symbol_fix(c, mixed_causes(c, t.error), c.where))]
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
                           f"{c.where}, but this host has " + (plural(len(gpus), "NVIDIA GPU") if gpus else
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


def _torch_cuda_too_new(c: Context) -> list[Finding]:
    assert c.venv and c.venv.torch
    t, h = c.venv.torch, c.host
    if not t.cuda or not h.cuda_driver or not h.driver or not older(h.cuda_driver, t.cuda):
        return []
    ev = [f"torch {t.version}: torch.version.cuda = {t.cuda}", f"nvidia-smi/NVML: {c.driver_line()}"]
    ev += [w for w in t.warnings if "driver" in w.lower()]
    need = toolkit_floor(c, t.cuda)
    refix = (f"update the NVIDIA driver to one for CUDA {t.cuda}" + (f" (>= {need})" if need else "")
             + ", or lock a build this driver runs: "
             "`tritonlock resolve` (cuda = \"auto\") then `tritonlock sync`")
    floor = None
    if c.matrix is not None and cuda_major(t.cuda) == cuda_major(h.cuda_driver):
        row = next((m for m in c.matrix.minor_compat if m.major == cuda_major(t.cuda)), None)
        floor = (row.windows_driver if h.os == "windows" else row.linux_driver) if row else None
    same_major = cuda_major(t.cuda) == cuda_major(h.cuda_driver)
    if same_major and (floor is None or not c.driver_below(floor)):
        ev.append(f"CUDA {cuda_major(t.cuda)}.x minor-version compatibility"
                  + (f" needs driver >= {floor}" if floor else "") + f"; this host has {h.driver}")
        return [Finding(id="torch-cuda-minor-compat", severity="warning",
                        title=f"torch {t.version} is built for CUDA {t.cuda}, newer than the CUDA {h.cuda_driver} "
                              f"driver {h.driver} supports: it runs through minor-version compatibility",
                        evidence=tuple(ev), fix="works for wheels; what needs the newer driver is PTX JIT (GPUs the "
                        f"build has no machine code for) and newer CUDA features — {refix}")]
    if floor:
        ev.append(f"CUDA {cuda_major(t.cuda)}.x minor-version compatibility needs driver >= {floor}")
    return [Finding(id="torch-cuda-too-new", severity="error",
                    title=f"torch {t.version} is built for CUDA {t.cuda}, but driver {h.driver} supports CUDA "
                          f"{h.cuda_driver} at most", evidence=tuple(ev), fix=refix)]


def _cuda_unavailable(c: Context, driver_too_old: bool) -> Finding:
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
                                             f"the venv from the lock: {sync_fix(c)}")
    return Finding(id="cuda-unavailable", severity="error",
                   title=f"torch.cuda.is_available() is False in {c.where} although this host has "
                         + (plural(len(c.host.gpus), "NVIDIA GPU") if c.host.gpus else f"driver {c.host.driver}"),
                   evidence=tuple(ev), fix=fix)


def _arch_findings(c: Context) -> list[Finding]:
    from tritonlock._archs import gpu_runs

    assert c.venv and c.venv.torch
    t = c.venv.torch
    archs = tuple(a for a in t.arch_list if a.startswith("sm_"))
    ptx = tuple(a for a in t.arch_list if a.startswith("compute_"))
    source = "torch.cuda.get_arch_list()"
    sel = c.target.selection if c.target else None
    if not archs and sel and sel.torch and t.version and (parse_version(t.version) or Version("0")).public == sel.torch:
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


def _python_range(c: Context) -> list[Finding]:
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
        public = (parse_version(tv) or Version("0")).public
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


def check_triton_gpu(c: Context) -> list[Finding]:
    """GPUs below Triton's minimum compute capability (compat/ triton rows: min_cc, supported_cc)."""
    if c.matrix is None or not c.host.gpus:
        return []
    d = c.dist("triton") or c.dist("pytorch-triton")
    tv = (c.venv.triton_version if c.venv else None) or (d.version if d else None)
    if tv is None and c.target and c.target.selection.triton_package == "triton":
        tv = c.target.selection.triton
    public = str((parse_version(tv) or Version("0")).public) if tv else None
    rel = next((r for r in c.matrix.triton if r.version == public), None)
    if rel is None:
        return []
    out = []
    for g in c.host.gpus:
        cc = parse_version(g.cc)
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


def check_triton_ptxas(c: Context) -> list[Finding]:
    """The ptxas the installed Triton compiles with is newer than the driver loads (compat/ [[minor_compat]]):
    torch runs, every Triton kernel and torch.compile fail with "device kernel image is invalid"."""
    v, h = c.venv, c.host
    if v is None or c.matrix is None or not h.driver or not v.ptxas:
        return []
    out: list[Finding] = []
    seen: set[tuple[str | None, str | None]] = set()
    for px in v.ptxas:
        if px.error or not px.release or not px.path or (px.path, px.release) in seen:
            continue
        floor = c.matrix.ptxas_floor(px.release, h.os)
        if floor is None or not c.driver_below(floor[0]):
            continue
        seen.add((px.path, px.release))
        need, mc = floor
        gpus = [g for g in h.gpus if any(q.cc == g.cc and q.path == px.path for q in v.ptxas)]
        env = "TRITON_PTXAS_BLACKWELL_PATH" if px.binary == "ptxas-blackwell" else "TRITON_PTXAS_PATH"
        # a toolkit on this machine whose ptxas this driver loads: its CUDA major's floor is met
        usable = [t for t in v.toolkit_ptxas
                  if (f := c.matrix.ptxas_floor(t.release, h.os)) is not None and not c.driver_below(f[0])]
        usable.sort(key=lambda t: parse_version(t.version) or Version("0"), reverse=True)
        where = "bundled with triton" if px.override is None else f"chosen by {px.override}"
        ev = [f"{px.path} --version: release {px.release}, V{px.version} ({where}; triton {v.triton_version} "
              f"compiles with it for compute capability {', '.join(sorted({g.cc for g in gpus}))})",
              f"{c.driver_line()}; code from a CUDA {cuda_major(px.release)}.x ptxas needs driver >= {need} (CUDA "
              f"minor-version compatibility: {mc.source})"]
        bundled = _bundled_ok(c, px, gpus)
        if px.override and px.override != "PATH" and bundled:
            alt = f"or unset {px.override}: the {bundled} bundled with triton {v.triton_version} is one this driver loads"
        elif usable:
            t = usable[0]
            alt = (f"or keep this driver and run with {env}={t.path} (CUDA {t.release}, V{t.version} — this driver "
                   "loads its code)")
        else:
            sm = ", ".join(sorted({"sm_" + g.cc.replace(".", "") for g in gpus}))
            alt = (f"or keep this driver: install a CUDA toolkit this driver supports (CUDA {h.cuda_driver or '?'} or "
                   f"older, new enough for {sm}) and point {env} at its bin/ptxas (none usable was found on PATH, "
                   "next to nvcc, in $CUDA_HOME or /usr/local/cuda*)")
        if v.toolkit_ptxas and not usable:
            ev.append("toolkit ptxas found but too new for this driver too: " + ", ".join(
                f"{t.path} (CUDA {t.release})" for t in v.toolkit_ptxas))
        out.append(Finding(
            id="triton-ptxas-too-new", severity="error",
            title=(f"Triton {v.triton_version} compiles with a CUDA {px.release} {px.binary or 'ptxas'} whose kernels "
                   f"driver {h.driver} cannot load: Triton kernels and torch.compile fail on "
                   + ", ".join(f"GPU {g.index} ({g.name or g.cc})" for g in gpus)),
            evidence=tuple(ev),
            fix=f"upgrade the NVIDIA driver to >= {need} ({'the R' + need.split('.')[0] + ' branch'}), {alt}"))
    return out


def _bundled_ok(c: Context, px: TritonPtxas, gpus: list[Gpu]) -> str | None:
    """When an override chose this ptxas: the bundled one (compat/ [[ptxas]]) in words, if the driver loads its code."""
    assert c.matrix is not None and c.venv is not None and c.host.driver
    platform = {"windows": "win_amd64"}.get(c.host.os, f"{c.host.os}_{c.host.arch}")
    pkg = "triton-windows" if c.host.os == "windows" else "triton"
    row = c.matrix.ptxas_build(pkg, c.venv.triton_version or "", platform)
    if row is None or not gpus:
        return None
    binary, cuda, _ = row.for_cc(gpus[0].cc)
    floor = c.matrix.ptxas_floor(cuda, c.host.os)
    if floor is None or c.driver_below(floor[0]):
        return None
    return f"{binary} (CUDA {'.'.join(cuda.split('.')[:2])})"


def check_triton_interpreter(c: Context) -> list[Finding]:
    """No GPU Triton can use here: its kernels run only in Triton's interpreter, which imports numpy."""
    v = c.venv
    d = c.dist("triton") or c.dist("triton-windows")
    if v is None or d is None or c.dist("numpy") is not None:
        return []
    known, cuda = c.torch_cuda()
    if c.host.gpus and not (known and cuda is None):
        return []  # a GPU and a CUDA torch (or one not known to be CPU-only): Triton compiles for the GPU
    why = ("this host has no NVIDIA GPU" if not c.host.gpus else f"torch {c.torch_version()} is a CPU build")
    locked = any(p.name == "numpy" for p in (c.target.packages if c.target else ()))
    fix = (sync_fix(c) if locked else "lock numpy: `tritonlock resolve --upgrade` (a lock for a target without an "
           "NVIDIA driver includes it; or add \"numpy\" to packages in triton-env.toml), then `tritonlock sync`")
    return [Finding(id="triton-interpreter-no-numpy", severity="error",
                    title=f"Triton kernels cannot run in {c.where}: {why}, so they run only in Triton's interpreter, "
                          "which needs numpy, and numpy is not installed",
                    evidence=(f"{d.name} {d.version} in {d.location}; no numpy distribution in {c.where}",
                              "TRITON_INTERPRET=1 (what `tritonlock verify` uses without a GPU) imports "
                              "triton/runtime/interpreter.py, which does `import numpy`"),
                    fix=fix)]
