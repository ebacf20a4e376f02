"""doctor's checks for AMD GPUs (ROCm): access to /dev/kfd, gfx targets missing from the build, overrides, the
wrong Triton beside a ROCm torch, a CUDA torch on an AMD-only machine."""

from __future__ import annotations

from tritonlock.doctor.context import Context, Finding, sync_fix


def _rocm_torch(c: Context) -> str | None:
    """The installed torch's ROCm version when it is a ROCm build (torch.version.hip, else its +rocmX.Y tag)."""
    t = c.venv.torch if c.venv else None
    if t is not None and t.hip:
        return t.hip
    v = c.torch_version() or ""
    local = v.partition("+")[2]
    return local[4:] if local.startswith("rocm") else None


def _amd_gpus(c: Context) -> list[str]:
    return [g.target for g in c.host.vendor_gpus if g.vendor == "amd"]


def _wants_amd(c: Context) -> bool:
    """Something here expects an AMD GPU: detected ones, a ROCm torch, or a lock target with gfx GPUs."""
    if _amd_gpus(c) or _rocm_torch(c):
        return True
    return bool(c.target and any(g.startswith("gfx") for g in c.target.selection.target.gpus))


def _build_targets(c: Context) -> tuple[tuple[str, ...], str]:
    """The gfx targets the installed ROCm torch carries: torch.cuda.get_arch_list(), else the matrix's row."""
    t = c.venv.torch if c.venv else None
    if t is not None and t.arch_list and all(a.startswith("gfx") for a in t.arch_list):
        return tuple(a.split(":")[0] for a in t.arch_list), "torch.cuda.get_arch_list()"
    v = c.torch_version() or ""
    backend = v.partition("+")[2]
    if backend.startswith("rocm"):
        from tritonlock.compat.matrix_vendor import load_vendor_matrix

        b = next((b for b in load_vendor_matrix().rocm_builds(v) if b.backend == backend), None)
        if b is not None:
            return b.gfx, f"compat/rocm.toml: torch {b.torch} {b.backend} gfx ({b.source.split(' ')[0]})"
    return (), ""


def check_amd(c: Context) -> list[Finding]:
    h = c.host
    out: list[Finding] = []
    if not _wants_amd(c):
        return out
    rocm = _rocm_torch(c)
    amd = _amd_gpus(c)
    needed = "error" if (rocm or (c.target and c.target.selection.backend or "").startswith("rocm")) else "warning"
    if h.kfd == "missing":
        if h.wsl:
            out.append(Finding(
                id="amd-kfd-missing-wsl", severity=needed,
                title="/dev/kfd does not exist under WSL2: PyTorch's ROCm wheels cannot reach the AMD GPU here",
                evidence=("WSL2 kernel (/proc/version names Microsoft)", "/dev/kfd: missing (WSL exposes GPUs "
                          "through /dev/dxg, which the Linux ROCm runtime bundled in the wheels does not use)"),
                fix="use AMD's ROCm-on-WSL release (amdgpu-install --usecase=wsl,rocm --no-dkms) with the PyTorch "
                    "wheels AMD publishes for it, or run on native Linux; tritonlock's ROCm locks target native "
                    "Linux"))
        else:
            out.append(Finding(
                id="amd-kfd-missing", severity=needed,
                title="/dev/kfd does not exist: the amdgpu kernel driver is not loaded (or this container was "
                      "started without the device)",
                evidence=("/dev/kfd: missing",) + ((f"container: {h.container}",) if h.container else ()),
                fix=("start the container with `--device=/dev/kfd --device=/dev/dri --group-add render "
                     "--group-add video`" if h.container else
                     "load the amdgpu driver (`sudo modprobe amdgpu`; install it with amdgpu-install if the module "
                     "is missing) and reboot; check with `ls -l /dev/kfd` and `rocminfo`")))
    elif h.kfd == "denied":
        group = h.kfd_group or "render"
        out.append(Finding(
            id="amd-no-gpu-access", severity="error",
            title=f"this user cannot open /dev/kfd: not in the {group} group, so ROCm sees no GPU",
            evidence=(f"/dev/kfd belongs to group {group} and is not readable and writable by this user",
                      "symptom: torch.cuda.is_available() is False, rocminfo says 'Unable to open /dev/kfd'"),
            fix=f"`sudo usermod -aG render,video $USER`, then log out and in (or `newgrp {group}`)"))
    if rocm and amd:
        have, where = _build_targets(c)
        if have:
            from tritonlock.compat.matrix_vendor import gfx_from_override, isa_major

            override = gfx_from_override(h.hsa_override) if h.hsa_override else None
            for gfx in dict.fromkeys(amd):
                runs = override if override and isa_major(override) == isa_major(gfx) else gfx
                if runs not in have:
                    out.append(Finding(
                        id="amd-gfx-not-in-build", severity="error",
                        title=f"torch {c.torch_version()} carries no code for {gfx}"
                              + (f" (run as {runs} through HSA_OVERRIDE_GFX_VERSION)" if runs != gfx else "")
                              + ": its GPU kernels fail with 'invalid device function' / 'no kernel image'",
                        evidence=(f"GPU: {gfx}", f"{where}: {', '.join(have)}"),
                        fix="`tritonlock resolve` picks the newest torch whose ROCm build carries this gfx target "
                            "(AMD GPUs have no cross-target compatibility); then " + sync_fix(c)))
                elif override and runs != gfx and gfx in have:
                    out.append(Finding(
                        id="amd-override-native", severity="warning",
                        title=f"HSA_OVERRIDE_GFX_VERSION={h.hsa_override} makes {gfx} run {runs} code although "
                              f"this torch carries native code for {gfx}",
                        evidence=(f"HSA_OVERRIDE_GFX_VERSION={h.hsa_override} (= {runs})",
                                  f"{where}: {', '.join(have)}"),
                        fix="unset HSA_OVERRIDE_GFX_VERSION (and remove hsa-override from the target): the native "
                            "code is faster and supported"))
    if rocm:
        owners = [d for d in ("triton", "pytorch-triton") if c.dist(d) is not None]
        rocm_triton = [d for d in ("triton-rocm", "pytorch-triton-rocm") if c.dist(d) is not None]
        if owners:
            shown = [f"{d} {c.dist(d).version} ({c.dist(d).location})" for d in owners + rocm_triton]  # type: ignore[union-attr]
            out.append(Finding(
                id="triton-pypi-beside-rocm", severity="error",
                title=f"{owners[0]} (the CUDA Triton from PyPI) is installed beside a ROCm torch"
                      + (f" and {rocm_triton[0]}: both install triton/, one overwrote the other" if rocm_triton else
                         ": its compiler has no AMD backend, so torch.compile and Triton kernels fail"),
                evidence=tuple([f"torch {c.torch_version()} (ROCm {rocm})"] + shown),
                fix=f"`pip uninstall {' '.join(owners)}`, then install the Triton torch requires from the same "
                    "PyTorch rocm index (triton-rocm / pytorch-triton-rocm) — " + sync_fix(c) + " does both"))
    t = c.venv.torch if c.venv else None
    if amd and not h.gpus and not h.driver and t is not None and t.cuda:
        out.append(Finding(
            id="cuda-torch-on-amd-host", severity="error",
            title=f"torch {c.torch_version()} is a CUDA {t.cuda} build, but this machine's GPUs are AMD "
                  f"({', '.join(dict.fromkeys(amd))}): it runs on the CPU only",
            evidence=(f"torch.version.cuda = {t.cuda}", "GPUs: " + ", ".join(amd) + " (KFD / rocminfo)",
                      "no NVIDIA driver"),
            fix="lock for this machine (`tritonlock resolve` picks a ROCm build for gfx GPUs) and " + sync_fix(c)))
    return out
