"""doctor's checks of the host: the driver and GPUs as this process sees them (containers, WSL), the CUDA toolkit."""

from __future__ import annotations

from tritonlock.doctor.context import Context, Finding, cuda_major, parse_version, toolkit_floor


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


def check_driver(c: Context) -> list[Finding]:
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
    if h.driver is None and h.vendor_gpus:
        return []  # an AMD or Intel machine: checks_amd speaks for it
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


def check_driver_knows_gpus(c: Context) -> list[Finding]:
    """A GPU newer than the driver's branch (an RTX 50xx on R535), or older than it drives (Kepler after R470).

    gpus.toml: a driver older than the branch of the first CUDA toolkit supporting an architecture does not know the
    GPU (NVML then often lists none at all); Kepler stops at R470, Maxwell/Pascal/Volta at R580. The GPUs come from
    detection or TRITONLOCK_GPUS (what nvml-unreadable asks for), else from the lock's target for this host.
    """
    h, m = c.host, c.matrix
    if m is None or h.driver is None:
        return []
    from tritonlock.compat.matrix import driver_branch_number

    ccs = [(g.name or f"GPU {g.index}", g.cc) for g in h.gpus]
    source = "detected"
    if not ccs and c.target is not None:
        ccs = [(f"the lock's GPU {cc}", cc) for cc in c.target.selection.target.gpus]
        source = f"the lock's target {c.target.name!r}"
    have = driver_branch_number(h.driver)
    out: list[Finding] = []
    for name, cc in dict.fromkeys(ccs):
        g = m.gpu_family(cc)
        if g is None or g.integrated:
            continue
        arch = "sm_" + cc.replace(".", "")
        found = m.gpu_driver_floor(cc, h.os)
        if found is not None and have < driver_branch_number(found[0]):
            need = driver_branch_number(found[0])
            out.append(Finding(
                id="driver-too-old-for-gpu", severity="error",
                title=f"NVIDIA driver {h.driver} (R{have}) does not know {name} ({arch}, {g.family}): it needs the "
                      f"R{need} branch or newer",
                evidence=(f"{source}: {name}, compute capability {cc}",
                          f"compat/gpus.toml: {g.family} first_cuda = {g.first_cuda} ({g.first_cuda_source})",
                          f"compat/cuda.toml: CUDA {g.first_cuda} release driver >= {found[0]}"),
                fix=f"install an NVIDIA driver >= {found[0]} (the R{need} branch or newer) and reboot; until then no "
                    "CUDA program sees this GPU, torch's or Triton's"))
        if g.last_branch is not None and have > g.last_branch:
            out.append(Finding(
                id="driver-too-new-for-gpu", severity="error",
                title=f"NVIDIA driver {h.driver} (R{have}) no longer drives {name} ({arch}, {g.family}): the "
                      f"R{g.last_branch} branch is the last that does",
                evidence=(f"{source}: {name}, compute capability {cc}",
                          f"compat/gpus.toml: {g.family} last_branch = {g.last_branch} ({g.last_branch_source})"),
                fix=f"install NVIDIA's R{g.last_branch} legacy driver for this GPU"))
    return out


def _why_gpu(c: Context) -> str:
    known, cuda = c.torch_cuda()
    if known and cuda:
        return f", but torch {c.torch_version()} in {c.where} is a CUDA {cuda} build"
    if c.target and c.gpu_expected():
        return f", but the lock's target {c.target.name!r} is a {c.target.selection.backend} build"
    return ""


def check_toolkit(c: Context) -> list[Finding]:
    h, out = c.host, []
    nvcc, dc = parse_version(h.nvcc), parse_version(h.cuda_driver)
    if h.nvcc and h.cuda_driver and nvcc and dc and nvcc > dc:
        floor = toolkit_floor(c, h.nvcc)
        same = cuda_major(h.nvcc) == cuda_major(h.cuda_driver)
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
    if h.nvcc and known and tc and cuda_major(h.nvcc) != cuda_major(tc):
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
