"""AMD and Intel GPU probes: each reads one source (under _host_probes.ROOT, tools on PATH) and returns None when
that source cannot tell — never a guess."""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
from dataclasses import dataclass

from tritonlock.host import _probes as p
from tritonlock.models import VendorGpu

KFD_NODES = "sys/class/kfd/kfd/topology/nodes"
AMDGPU_VERSION = "sys/module/amdgpu/version"
ROCM_INFO = "opt/rocm/.info/version"
PCI_DEVICES = "sys/bus/pci/devices"
ROCM_BIN = "opt/rocm/bin"  # where rocminfo and friends live when /opt/rocm/bin is not on PATH

AMD_PCI_VENDOR = "0x1002"
INTEL_PCI_VENDOR = "0x8086"
NVIDIA_PCI_VENDOR = "0x10de"

_GFX_IN_TEXT = re.compile(r"\bgfx([0-9]{1,2}[0-9a-f]{2})\b")
_VERSION = re.compile(r"^([0-9]+(?:\.[0-9]+)+)")


def at(*parts: str) -> str:
    """A path under the probed root: TRITONLOCK_SYSFS_ROOT (a copied /sys, /opt/rocm tree of another machine, for
    `tritonlock host` on a recorded machine), else the root every probe reads under (_host_probes.ROOT)."""
    return os.path.join(os.environ.get("TRITONLOCK_SYSFS_ROOT") or p.ROOT, *parts)


@dataclass(frozen=True, slots=True)
class VendorReading:
    """What the AMD/Intel sources told."""

    gpus: tuple[VendorGpu, ...] = ()
    amdgpu: str | None = None
    rocm: str | None = None
    hsa_override: str | None = None
    nvidia_pci: int = 0  # NVIDIA display devices on the PCI bus (a mixed host is seen even without NVIDIA's driver)
    probes: tuple[str, ...] = ()


def _tool(name: str) -> str | None:
    """An AMD tool on PATH, else in /opt/rocm/bin."""
    found = shutil.which(name)
    if found:
        return found
    fallback = at(ROCM_BIN, name)
    return fallback if os.access(fallback, os.X_OK) else None


# ---- AMD ---------------------------------------------------------------------------------------------------

def kfd_targets() -> tuple[str, ...] | None:
    """gfx targets of the GPU nodes of KFD's topology (gfx_target_version; CPU nodes report 0); None without KFD."""
    from tritonlock.compat.matrix_vendor import gfx_from_target_version

    nodes = sorted(glob.glob(os.path.join(at(KFD_NODES), "*", "properties")),
                   key=lambda s: int(re.sub(r"\D", "", os.path.basename(os.path.dirname(s))) or 0))
    if not nodes:
        return None
    out: list[str] = []
    for path in nodes:
        text = p._read(path)  # noqa: SLF001 - the same narrow reader as every probe
        if text is None:
            continue
        m = re.search(r"^gfx_target_version\s+([0-9]+)\s*$", text, re.MULTILINE)
        gfx = gfx_from_target_version(int(m.group(1))) if m else None
        if gfx is not None:
            out.append(gfx)
    return tuple(out)


def rocminfo_targets(text: str) -> tuple[str, ...] | None:
    """gfx targets of the GPU agents in `rocminfo` output (each agent: 'Name: gfx942', 'Device Type: GPU')."""
    agents = re.split(r"\n\*{5,}\s*\nAgent \d+\s*\n\*{5,}", text)
    out: list[str] = []
    for agent in agents[1:]:
        if not re.search(r"Device Type:\s*GPU", agent):
            continue
        m = re.search(r"^\s*Name:\s*(gfx[0-9a-f]+)", agent, re.MULTILINE)
        if m:
            out.append(m.group(1))
    return tuple(out) if agents[1:] else None


def enumerator_targets(text: str) -> tuple[str, ...] | None:
    """`rocm_agent_enumerator`: one target per line, gfx000 for the CPU."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines or not all(_GFX_IN_TEXT.fullmatch(ln) for ln in lines):
        return None
    return tuple(ln for ln in lines if ln != "gfx000")


def amd_smi_targets(text: str) -> tuple[str, ...] | None:
    """`amd-smi static --asic`: 'TARGET_GRAPHICS_VERSION: gfx942' per GPU."""
    found = re.findall(r"TARGET_GRAPHICS_VERSION\"?\s*[:=]\s*\"?(gfx[0-9a-f]+)", text)
    return tuple(found) if found else None


@functools.cache
def amd_targets() -> tuple[tuple[str, ...], str] | None:
    """The GPUs' gfx targets and where they came from: KFD first (no process), then the tools."""
    from tritonlock.compat.matrix_vendor import normalize_gfx

    kfd = kfd_targets()
    if kfd:
        return kfd, f"/{KFD_NODES}/*/properties (gfx_target_version)"
    for name, argv, parse in (("amd-smi", ["static", "--asic"], amd_smi_targets),
                              ("rocminfo", [], rocminfo_targets),
                              ("rocm_agent_enumerator", [], enumerator_targets)):
        exe = _tool(name)
        if exe is None:
            continue
        out = p._run([exe, *argv])  # noqa: SLF001
        found = parse(out) if out is not None else None
        if found:
            return tuple(g for g in (normalize_gfx(x) for x in found) if g), exe
    return None


def amdgpu_module() -> str | None:
    """The amdgpu DKMS module version ('6.12.12'); None for an in-kernel amdgpu (no version file) or none."""
    text = p._read(at(AMDGPU_VERSION))  # noqa: SLF001
    m = _VERSION.match(text.strip()) if text else None
    return m.group(1) if m else None


def rocm_version() -> str | None:
    """/opt/rocm/.info/version ('6.4.1-120' -> '6.4.1'): the ROCm installed on the host (the wheels bring their own)."""
    text = p._read(at(ROCM_INFO))  # noqa: SLF001
    m = _VERSION.match(text.strip()) if text else None
    return m.group(1) if m else None


def hsa_override() -> str | None:
    value = os.environ.get("HSA_OVERRIDE_GFX_VERSION", "").strip()
    return value or None


# ---- PCI (Intel GPUs; NVIDIA devices for the mixed-host check) -----------------------------------------------

def pci_display_devices() -> list[tuple[str, str, str, str | None]] | None:
    """(address, vendor, device, driver) of every display-class PCI device; None without /sys/bus/pci."""
    root = at(PCI_DEVICES)
    if not os.path.isdir(root):
        return None
    out = []
    for dev in sorted(glob.glob(os.path.join(root, "*"))):
        cls = (p._read(os.path.join(dev, "class")) or "").strip()  # noqa: SLF001
        if not cls.startswith("0x03"):  # 0x03xxxx: display controller (VGA, 3D, other)
            continue
        vendor = (p._read(os.path.join(dev, "vendor")) or "").strip().lower()  # noqa: SLF001
        device = (p._read(os.path.join(dev, "device")) or "").strip().lower()  # noqa: SLF001
        link = os.path.join(dev, "driver")
        driver = os.path.basename(os.path.realpath(link)) if os.path.islink(link) else None
        if driver is None:
            driver = (p._read(os.path.join(dev, "driver_name")) or "").strip() or None  # noqa: SLF001 - fixtures
        out.append((os.path.basename(dev), vendor, device, driver))
    return out


def intel_gpus(devices: list[tuple[str, str, str, str | None]]) -> tuple[VendorGpu, ...]:
    """Intel GPUs bound to xe or i915 whose PCI device id the matrix knows; others are left out (not guessed)."""
    from tritonlock.compat.matrix_vendor import load_vendor_matrix

    vm = load_vendor_matrix()
    out: list[VendorGpu] = []
    for addr, vendor, device, driver in devices:
        if vendor != INTEL_PCI_VENDOR or driver not in ("xe", "i915"):
            continue
        target = vm.intel_target_for_pci(device)
        if target is None:
            continue
        g = vm.intel_gpu(target)
        out.append(VendorGpu(index=len(out), vendor="intel", target=target, name=g.family if g else "", pci=addr))
    return tuple(out)


@functools.cache
def read() -> VendorReading:
    """Everything the AMD/Intel sources tell about this machine."""
    probes: list[str] = []
    gpus: list[VendorGpu] = []
    amd = amd_targets()
    if amd:
        from tritonlock.compat.matrix_vendor import load_vendor_matrix

        vm = load_vendor_matrix()
        for i, gfx in enumerate(amd[0]):
            g = vm.amd_gpu(gfx)
            gpus.append(VendorGpu(index=i, vendor="amd", target=gfx, name=g.family if g else ""))
        probes.append(f"amd gpus: {amd[1]}")
    module = amdgpu_module()
    if module:
        probes.append(f"amdgpu: /{AMDGPU_VERSION}")
    rocm = rocm_version()
    if rocm:
        probes.append(f"rocm: /{ROCM_INFO}")
    devices = pci_display_devices() or []
    intel = intel_gpus(devices)
    if intel:
        probes.append(f"intel gpus: /{PCI_DEVICES}/*/device (driver xe/i915)")
        gpus += list(intel)
    nvidia = sum(1 for _, vendor, _, _ in devices if vendor == NVIDIA_PCI_VENDOR)
    override = hsa_override()
    if override:
        probes.append("hsa override: HSA_OVERRIDE_GFX_VERSION")
    return VendorReading(gpus=tuple(gpus), amdgpu=module, rocm=rocm, hsa_override=override, nvidia_pci=nvidia,
                         probes=tuple(probes))


def _identity() -> tuple[int, set[int]]:
    """This process's user and groups (the one indirection tests replace: they run as root)."""
    return os.geteuid(), set(os.getgroups()) | {os.getegid()}


def kfd_access() -> tuple[str, str | None]:
    """('ok' | 'missing' | 'denied', the group owning /dev/kfd): ROCm opens /dev/kfd and /dev/dri/renderD*, which
    belong to the render (or video) group; a user outside it sees no GPU ("HSA_STATUS_ERROR_OUT_OF_RESOURCES",
    torch.cuda.is_available() False)."""
    import grp
    import stat

    path = at("dev", "kfd")
    try:
        st = os.stat(path)
    except OSError:
        return "missing", None
    try:
        group: str | None = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    uid, gids = _identity()
    mode = stat.S_IMODE(st.st_mode)
    rw_owner, rw_group, rw_other = mode & 0o600 == 0o600, mode & 0o060 == 0o060, mode & 0o006 == 0o006
    ok = uid == 0 or (st.st_uid == uid and rw_owner) or (st.st_gid in gids and rw_group) or rw_other
    return ("ok" if ok else "denied"), group


def clear_cache() -> None:
    amd_targets.cache_clear()
    read.cache_clear()
