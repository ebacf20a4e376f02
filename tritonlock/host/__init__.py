"""Detect the running machine as a HostProfile; overrides let a user describe another one."""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from tritonlock.host import _probes as p
from tritonlock.host import _links, described
from tritonlock.host.described import OVERRIDE_KEYS, load_saved_target  # the package's face (__all__) names them
from tritonlock.errors import HostError
from tritonlock.models import Gpu, HostProfile, TargetSpec

__all__ = [
    "OVERRIDE_KEYS",
    "clear_cache",
    "default_target_name",
    "detect",
    "format_profile",
    "gpu_links",
    "load_saved_target",
    "profile_json",
    "shared_gpu_link",
    "target_toml",
    "to_target",
]


NO_DRIVER = "no NVIDIA driver found (NVML, nvidia-smi, /proc/driver/nvidia/version): this is a CPU target"
MIXED_VENDORS = ("this machine has NVIDIA and AMD GPUs: a lock target is one vendor's, so say which to lock for — "
                 "TRITONLOCK_GPUS=gfx942 (its AMD GPUs, as `tritonlock host` lists them) or TRITONLOCK_GPUS=9.0 "
                 "(its NVIDIA GPUs)")

T = TypeVar("T")


def clear_cache() -> None:
    """Forget every probe's answer (tests; a long-lived process after a driver change)."""
    from tritonlock.host import _links
    from tritonlock.host import _vendor as _host_vendor

    p.clear_cache()
    _host_vendor.clear_cache()
    _links.clear_cache()


# ---- detection -----------------------------------------------------------------------------


def _first(key: str, pick: Callable[[p.DriverReading], T | None], probes: list[str]) -> T | None:
    # Sources in order of trust (NVML, WSL's NVML, nvidia-smi, /proc); each runs only when
    # every source before it could not tell this fact, and answers are cached.
    for probe in p.DRIVER_PROBES:
        reading = probe()
        if reading is None:
            continue
        value = pick(reading)
        if value is not None:
            probes.append(f"{key}: {reading.source}")
            return value
    return None


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


@dataclass(frozen=True, kw_only=True, slots=True)
class DriverFacts:
    """What the driver probes (NVML, nvidia-smi, /proc) told: cached between runs by `detect(cached=True)`."""

    driver: str | None
    cuda: str | None
    gpus: tuple[Gpu, ...] | None
    probes: tuple[str, ...]


def _driver_cache_path() -> str | None:
    """Keyed by what detection reads (the driver's /proc files, GPU nodes, steering variables: `_fast`) and by
    the probing code itself; None off Linux, where no such cheap fingerprint exists."""
    import hashlib

    from tritonlock._machine import raw_machine_key

    key = raw_machine_key()
    if key is None:
        return None
    h = hashlib.sha256(f"{key}\0{p.ROOT}".encode())
    for path in (__file__, p.__file__):
        try:
            h.update(open(path, "rb").read())
        except OSError:
            return None
    from tritonlock._files import user_cache

    return user_cache(f"host-{h.hexdigest()[:32]}.json")


_DRIVER_CACHE_SECONDS = 24 * 3600  # the key covers what changes; the age bound covers what a key cannot see


def _probe_driver(cached: bool) -> DriverFacts:
    """Driver, its CUDA and the GPUs from the probes — or, with `cached`, from the last run on this same machine
    (NVML's start-up is most of a `resolve --dry-run` on a GPU machine)."""
    from pathlib import Path

    path = _driver_cache_path() if cached else None
    if path is not None:
        import time

        from tritonlock.compat import _matrix_cache

        try:
            fresh = time.time() - os.stat(path).st_mtime < _DRIVER_CACHE_SECONDS
        except OSError:
            fresh = False
        found = _matrix_cache.read(Path(path), DriverFacts) if fresh else None
        if found is not None:
            return found
    probes: list[str] = []
    driver = _first("driver", lambda r: r.driver, probes)
    cuda = _first("cuda", lambda r: r.cuda, probes)
    gpus = _first("gpus", lambda r: r.gpus, probes)
    facts = DriverFacts(driver=driver, cuda=cuda, gpus=gpus, probes=tuple(probes))
    if path is not None and facts.driver is not None and facts.gpus:
        from tritonlock.compat import _matrix_cache

        _matrix_cache.write(Path(path), facts)
    return facts


def detect(overrides: Mapping[str, str] | None = None, *, toolkit: bool = True, cached: bool = False) -> HostProfile:
    """Probe this machine; `overrides` (flags) beat TRITONLOCK_* variables, which beat probing. `toolkit=False`
    skips the CUDA toolkit (`nvcc --version`, a process start): nothing that picks a lock target needs it.
    `cached=True` may answer the driver and GPUs from the last run on this machine (same driver files, GPU nodes
    and variables, within a day): for commands that pick a target, never for `host` or `doctor`."""
    ov = described._overrides(overrides)
    given, values = ov.where, ov.values
    probes = [f"{key}: override ({where})" for key, where in given.items()]
    warnings: list[str] = []

    os_name = values.get("os") or p.os_name()
    arch = values.get("arch") or p.arch(os_name)
    python = values.get("python") or p.python()
    gpus: tuple[Gpu, ...] | None
    if not ({"driver", "cuda"} & given.keys()) and ov.gpus is None:
        facts = _probe_driver(cached)
        driver, cuda, gpus = facts.driver, facts.cuda, facts.gpus
        probes += facts.probes
    else:
        driver = values["driver"] if "driver" in given else _first("driver", lambda r: r.driver, probes)
        # A driver named by hand says nothing about this machine's CUDA: leave it to the matrix.
        if "cuda" in given or "driver" in given:
            cuda = values.get("cuda")
        else:
            cuda = _first("cuda", lambda r: r.cuda, probes)
        if ov.gpus is not None:
            gpus = ov.gpus
        elif "driver" in given and driver is None:
            gpus = ()
        else:
            gpus = _first("gpus", lambda r: r.gpus, probes)

    if "glibc" in given:
        glibc = values["glibc"]
    elif os_name != "linux":
        glibc = None  # this machine's glibc says nothing about the windows/macos machine named by hand
    else:
        found = p.glibc()
        glibc = found[0] if found else None
        probes += [f"glibc: {found[1]}"] if found else []

    if "macos" in given:
        macos = values["macos"]
    elif os_name == "macos" and "os" not in given:
        macos = p.macos_version()
        probes += ["macos: platform.mac_ver"] if macos else []
    else:
        macos = None  # a macos machine named by hand: its version is not this one's

    found_container = p.container()
    container = found_container[0] if found_container else None
    probes += [f"container: {found_container[1]}"] if found_container else []
    wsl = p.wsl()
    probes += [f"wsl: /{p.PROC_VERSION}"] if wsl else []
    found_nvcc = p.nvcc() if toolkit else None
    nvcc = found_nvcc[0] if found_nvcc else None
    probes += [f"nvcc: {found_nvcc[1]}"] if found_nvcc else []

    from tritonlock.host import _vendor as _host_vendor

    if ov.vendor_gpus is not None:  # TRITONLOCK_GPUS named the GPUs: no AMD/Intel probing
        vendor = _host_vendor.VendorReading(gpus=ov.vendor_gpus, hsa_override=_host_vendor.hsa_override())
    elif ov.gpus is not None:
        vendor = _host_vendor.VendorReading(hsa_override=_host_vendor.hsa_override())
    else:
        vendor = _host_vendor.read()
    probes += list(vendor.probes)
    amdgpu = values.get("amdgpu") if "amdgpu" in given else vendor.amdgpu
    if vendor.hsa_override:
        warnings.append(f"HSA_OVERRIDE_GFX_VERSION={vendor.hsa_override} is set: AMD GPUs of its ISA generation run "
                        "the code of another gfx target (an unsupported opt-in; the lock records it as hsa-override)")
    amd_here = any(g.vendor == "amd" for g in vendor.gpus)
    if amd_here and (gpus or vendor.nvidia_pci):
        warnings.append(MIXED_VENDORS)
    if driver is None and "driver" not in given and not vendor.gpus:
        warnings.append(NO_DRIVER)
    # /dev/kfd of this machine: only when it is the machine described (no GPUs named by hand)
    kfd = _host_vendor.kfd_access() if os_name == "linux" and ov.gpus is None and ov.vendor_gpus is None else None
    if driver is not None and gpus is None and "driver" not in given:
        warnings.append(_no_gpu_warning(driver, container))
    if nvcc is not None and cuda is not None and _version(nvcc) > _version(cuda):
        warnings.append(
            f"nvcc {nvcc} is newer than the CUDA {cuda} this driver supports: code built with this nvcc"
            " may fail with cudaErrorInsufficientDriver; PyTorch wheels bring their own runtime,"
            " so this does not affect torch"
        )
    return HostProfile(
        os=os_name,
        arch=arch,
        python=python,
        glibc=glibc,
        driver=driver,
        cuda_driver=cuda,
        gpus=gpus or (),
        nvcc=nvcc,
        container=container,
        wsl=wsl,
        probes=tuple(probes),
        warnings=tuple(warnings),
        macos=macos,
        vendor_gpus=vendor.gpus,
        amdgpu=amdgpu,
        rocm=vendor.rocm,
        hsa_override=vendor.hsa_override,
        kfd=kfd[0] if kfd else None,
        kfd_group=kfd[1] if kfd else None,
    )


def _no_gpu_warning(driver: str, container: str | None) -> str:
    if container is not None:
        # /proc/driver/nvidia is the host kernel's: a container sees it without any GPU access.
        return (
            f"NVIDIA driver {driver} is loaded but no GPU is visible in this {container} container"
            " (NVML and nvidia-smi did not answer): start it with GPU access (docker run --gpus all,"
            " NVIDIA Container Toolkit), or set TRITONLOCK_GPUS"
        )
    return (
        f"NVIDIA driver {driver} found but no GPU could be listed with its compute capability"
        " (NVML and nvidia-smi gave none): set TRITONLOCK_GPUS, e.g. TRITONLOCK_GPUS=8.0"
    )


# ---- links between GPUs --------------------------------------------------------------------


def gpu_links(profile: HostProfile) -> tuple[_links.GpuLink, ...] | None:
    """The links between the profile's NVIDIA GPUs, read from this machine (NVML, else `nvidia-smi topo -m`); () for
    fewer than 2 GPUs or GPUs named by hand (TRITONLOCK_GPUS, --gpus: not this machine's), None when nothing told."""
    from tritonlock.host import _links

    if len(profile.gpus) < 2 or any(x.startswith("gpus: override") for x in profile.probes):
        return ()
    return _links.links()


def shared_gpu_link() -> tuple[str, str] | None:
    """The link every pair of this machine's GPUs shares ("nvlink", "pcie", "none") and where it was read, for verify
    to judge an all-reduce by when its runner's NVML could not say; None when the pairs differ or nothing told."""
    from tritonlock.host import _links

    return _links.one_link(_links.links(), 2)


# ---- projections ---------------------------------------------------------------------------


def to_target(profile: HostProfile, name: str = "host") -> TargetSpec:
    if profile.vendor_gpus:
        if MIXED_VENDORS in profile.warnings:
            raise HostError(MIXED_VENDORS)
        amd = all(g.vendor == "amd" for g in profile.vendor_gpus)
        return TargetSpec(
            name=name, os=profile.os, arch=profile.arch, glibc=profile.glibc,
            python=".".join(profile.python.split(".")[:2]), gpus=tuple(g.target for g in profile.vendor_gpus),
            origin="host", macos=profile.macos, amdgpu=profile.amdgpu if amd else None,
            hsa_override=profile.hsa_override if amd else None)
    return TargetSpec(
        name=name,
        os=profile.os,
        arch=profile.arch,
        glibc=profile.glibc,
        python=".".join(profile.python.split(".")[:2]),
        driver=profile.driver,
        cuda=profile.cuda_driver,
        gpus=tuple(gpu.cc for gpu in profile.gpus),
        origin="host",
        macos=profile.macos,
    )


_VENDOR_WORDS = re.compile(r"\b(nvidia|geforce|tesla|quadro)\b")


def default_target_name(profile: HostProfile) -> str:
    """Name for `host --save`: the first GPU's model ("h200", "rtx-4090", "a100-sxm4-80gb"), else "cpu"."""
    if profile.vendor_gpus and not profile.gpus:
        return profile.vendor_gpus[0].target
    if not profile.gpus:
        return "cpu"
    first = profile.gpus[0]
    slug = re.sub(r"[^a-z0-9]+", "-", _VENDOR_WORDS.sub("", first.name.lower())).strip("-")
    return slug or f"sm{first.cc.replace('.', '')}"


def _gpu_models(gpus: tuple[Gpu, ...]) -> str:
    counts: dict[str, int] = {}
    for gpu in gpus:
        label = gpu.name or f"GPU with compute capability {gpu.cc}"
        counts[label] = counts.get(label, 0) + 1
    return ", ".join(f"{n}x {label}" for label, n in counts.items()) or "no NVIDIA GPU (CPU target)"


def target_toml(profile: HostProfile, name: str, *, today: datetime.date | None = None) -> str:
    """A [[targets]] table to paste into triton-env.toml (also what `tritonlock host --save` writes)."""
    target = to_target(profile, name)
    import tomlkit  # only --save writes TOML; keep detection's import light

    table = tomlkit.table()
    table.add("name", target.name)
    for key in ("os", "arch", "glibc", "python", "driver", "cuda"):
        value = getattr(target, key)
        if value is not None:
            table.add(key, value)
    table.add("gpus", list(target.gpus))
    if target.macos is not None:
        table.add("macos", target.macos)
    if target.amdgpu is not None:
        table.add("amdgpu", target.amdgpu)
    if target.hsa_override is not None:
        table.add("hsa-override", target.hsa_override)
    targets = tomlkit.aot()
    targets.append(table)
    doc = tomlkit.document()
    doc.add("targets", targets)
    when = (today or datetime.date.today()).isoformat()
    models = (", ".join(f"{g.name or g.target} ({g.target})" for g in profile.vendor_gpus) if profile.vendor_gpus
              else _gpu_models(profile.gpus))
    return f"# {models}; detected by tritonlock host on {when}\n" + tomlkit.dumps(doc)


def profile_json(profile: HostProfile, links: tuple[_links.GpuLink, ...] | None = ()) -> dict[str, object]:
    """`tritonlock host --json`. Stable keys, always all present (null when unknown):
    os, arch, python, glibc, driver, cuda_driver, nvcc, container (str | null), wsl (bool),
    gpus (list of {index, name, cc, memory_mib, uuid}), probes, warnings (lists of str), macos (str | null),
    gpu_links (list of {a, b, kind, detail, source}: [] under 2 GPUs, null when 2 or more and nothing told)."""
    return {
        "os": profile.os,
        "arch": profile.arch,
        "python": profile.python,
        "glibc": profile.glibc,
        "driver": profile.driver,
        "cuda_driver": profile.cuda_driver,
        "nvcc": profile.nvcc,
        "container": profile.container,
        "wsl": profile.wsl,
        "gpus": [
            {"index": g.index, "name": g.name, "cc": g.cc, "memory_mib": g.memory_mib, "uuid": g.uuid}
            for g in profile.gpus
        ],
        "probes": list(profile.probes),
        "warnings": list(profile.warnings),
        "macos": profile.macos,
        # AMD and Intel (always present; empty / null when none)
        "vendor_gpus": [{"index": g.index, "vendor": g.vendor, "target": g.target, "name": g.name, "pci": g.pci}
                        for g in profile.vendor_gpus],
        "amdgpu": profile.amdgpu,
        "rocm": profile.rocm,
        "hsa_override": profile.hsa_override,
        "gpu_links": None if links is None else [
            {"a": x.a, "b": x.b, "kind": x.kind, "detail": x.detail, "source": x.source} for x in links],
    }


_KIND_WORDS = {"nvlink": "NVLink", "pcie": "PCIe", "none": "no P2P"}


def format_profile(profile: HostProfile, links: tuple[_links.GpuLink, ...] | None = ()) -> str:
    """Human-readable text for `tritonlock host`; `links` from gpu_links (None: 2 or more GPUs, nothing told)."""
    lines = [
        f"os         {profile.os} {profile.arch}"
        + (f", glibc {profile.glibc}" if profile.glibc else "")
        + (f", macOS {profile.macos}" if profile.macos else "")
        + (" (WSL)" if profile.wsl else "")
        + (f", in a {profile.container} container" if profile.container else ""),
        f"python     {profile.python}",
        "driver     "
        + (
            f"{profile.driver}" + (f", supports CUDA {profile.cuda_driver}" if profile.cuda_driver else "")
            if profile.driver
            else "none (CPU target)"
        ),
    ]
    for gpu in profile.gpus:
        extra = [f"{gpu.memory_mib} MiB"] if gpu.memory_mib is not None else []
        extra += [gpu.uuid] if gpu.uuid else []
        lines.append(f"gpu {gpu.index:<6} {gpu.name or '(unnamed)'}, cc {gpu.cc}" + "".join(f", {e}" for e in extra))
    for vg in profile.vendor_gpus:
        lines.append(f"gpu {vg.index:<6} {vg.vendor.upper() if vg.vendor == 'amd' else 'Intel'} {vg.target}"
                     + (f" ({vg.name})" if vg.name else "") + (f", PCI {vg.pci}" if vg.pci else ""))
    if links is None:
        lines.append("link       not read (NVML gave no P2P status, `nvidia-smi topo -m` no matrix): verify judges "
                     "no all-reduce band by it")
    for x in links or ():
        lines.append(f"link       gpu {x.a} - gpu {x.b}: {_KIND_WORDS[x.kind]} ({x.detail}; {x.source})")
    if profile.amdgpu:
        lines.append(f"amdgpu     {profile.amdgpu}")
    if profile.rocm:
        lines.append(f"rocm       {profile.rocm} (/opt/rocm; PyTorch's ROCm wheels bring their own)")
    if profile.hsa_override:
        lines.append(f"override   HSA_OVERRIDE_GFX_VERSION={profile.hsa_override}")
    if not profile.gpus and not profile.vendor_gpus:
        lines.append("gpus       none")
    lines.append(f"nvcc       {profile.nvcc or 'not found'}")
    lines += [f"probe      {probe}" for probe in profile.probes]
    lines += [f"warning    {warning}" for warning in profile.warnings]
    return "\n".join(lines)
