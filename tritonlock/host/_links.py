"""The links between this machine's NVIDIA GPUs: NVML's P2P status and NVLink state, else `nvidia-smi topo -m`."""

from __future__ import annotations

import functools
import re
import shutil
from dataclasses import dataclass
from types import ModuleType

from tritonlock.host import _probes as p

# nvmlGpuP2PCapsIndex_t: READ 0, NVLINK 2; nvmlGpuP2PStatus_t: 0 is OK (NVML API reference, nvmlDeviceGetP2PStatus)
_P2P_READ, _P2P_NVLINK, _P2P_OK = 0, 2, 0
_P2P_WORDS = {1: "the chipset does not support it", 2: "the GPU does not support it",
              3: "the I/O hub topology does not support it", 4: "disabled by a driver registry key",
              5: "not supported", 6: "unknown"}
# `nvidia-smi topo -m`'s legend: NV# a bonded set of # NVLinks; PIX, PXB, PHB, NODE, SYS paths over PCIe (SYS also
# across the SMP interconnect between NUMA nodes); X the GPU itself
_TOPO_NVLINK = re.compile(r"NV([0-9]{1,3})\Z")
_TOPO_PCIE = ("PIX", "PXB", "PHB", "NODE", "SYS")
_TOPO_GPU = re.compile(r"GPU([0-9]{1,3})\Z")


@dataclass(frozen=True, kw_only=True, slots=True)
class GpuLink:
    """How two GPUs (NVML's indices, nvidia-smi's GPU numbers) reach each other."""

    a: int
    b: int
    kind: str  # "nvlink" | "pcie" (P2P over PCIe, or a PCIe path whose P2P state nobody read) | "none" (P2P off)
    detail: str  # "NV18", "18 NVLink links active", "PHB", "P2P read: disabled by a driver registry key"
    source: str  # "nvml" | "nvidia-smi topo -m"


def _nvml_pairs(nvml: ModuleType) -> tuple[GpuLink, ...] | None:
    try:
        nvml.nvmlInit()
    except (nvml.NVMLError, OSError):
        return None
    try:
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(int(nvml.nvmlDeviceGetCount()))]
        active = [_nvlinks_up(nvml, h) for h in handles]
        out = []
        for a in range(len(handles)):
            for b in range(a + 1, len(handles)):
                over_nvlink = int(nvml.nvmlDeviceGetP2PStatus(handles[a], handles[b], _P2P_NVLINK))
                read = int(nvml.nvmlDeviceGetP2PStatus(handles[a], handles[b], _P2P_READ))
                if over_nvlink == _P2P_OK:
                    up = min(active[a], active[b])
                    out.append(GpuLink(a=a, b=b, kind="nvlink", source="nvml",
                                       detail=f"{up} NVLink links active" if up else "P2P over NVLink"))
                elif read == _P2P_OK:
                    out.append(GpuLink(a=a, b=b, kind="pcie", source="nvml", detail="P2P over PCIe (no NVLink: "
                                       f"{_P2P_WORDS.get(over_nvlink, f'status {over_nvlink}')})"))
                else:
                    out.append(GpuLink(a=a, b=b, kind="none", source="nvml", detail="P2P off (read: "
                                       f"{_P2P_WORDS.get(read, f'status {read}')}): NCCL copies through host memory"))
    except (nvml.NVMLError, ValueError, TypeError):
        return None
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass
    return tuple(out)


def _nvlinks_up(nvml: ModuleType, handle: object) -> int:
    """NVLink links of a GPU in state enabled (nvmlDeviceGetNvLinkState), up to the first one NVML does not know."""
    up = 0
    for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))):
        try:
            up += int(nvml.nvmlDeviceGetNvLinkState(handle, link)) == 1  # NVML_FEATURE_ENABLED
        except nvml.NVMLError:
            break  # NOT_SUPPORTED / INVALID_ARGUMENT: no such link (or no NVLink at all)
    return up


@functools.lru_cache(maxsize=None)
def nvml_links() -> tuple[GpuLink, ...] | None:
    """Every pair of GPUs as NVML reports it; None when NVML cannot answer."""
    if p._no_driver_here():
        return None
    module = p._nvml_module()
    return _nvml_pairs(module) if module is not None else None


def parse_topo(text: str) -> tuple[GpuLink, ...] | None:
    """The GPU-to-GPU cells of `nvidia-smi topo -m` (its matrix; NIC columns and the legend ignored); None when the
    text is not such a matrix or a cell is not in its legend."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    columns = lines[0].split()
    gpus = []
    for cell in columns:
        m = _TOPO_GPU.match(cell)
        if m is None:
            break
        gpus.append(int(m[1]))
    if len(gpus) < 2 or gpus != list(range(len(gpus))):
        return None
    rows: dict[int, list[str]] = {}
    for line in lines[1:]:
        cells = line.split()
        m = _TOPO_GPU.match(cells[0]) if cells else None
        if m is not None and int(m[1]) in gpus:
            rows[int(m[1])] = cells[1:1 + len(gpus)]
    if sorted(rows) != gpus or any(len(r) != len(gpus) for r in rows.values()):
        return None
    out = []
    for a in gpus:
        if rows[a][a] != "X":
            return None
        for b in gpus[a + 1:]:
            cell = rows[a][b]
            if cell != rows[b][a]:
                return None  # the matrix is symmetric; one that is not was not read right
            if _TOPO_NVLINK.match(cell):
                out.append(GpuLink(a=a, b=b, kind="nvlink", detail=cell, source="nvidia-smi topo -m"))
            elif cell in _TOPO_PCIE:
                out.append(GpuLink(a=a, b=b, kind="pcie", detail=cell, source="nvidia-smi topo -m"))
            else:
                return None
    return tuple(out)


@functools.lru_cache(maxsize=None)
def smi_topo_links() -> tuple[GpuLink, ...] | None:
    exe = shutil.which("nvidia-smi")
    out = p._run([exe, "topo", "-m"]) if exe is not None else None
    return parse_topo(out) if out is not None else None


@functools.lru_cache(maxsize=None)
def links() -> tuple[GpuLink, ...] | None:
    """The links between every pair of this machine's NVIDIA GPUs: NVML first, then `nvidia-smi topo -m`."""
    return nvml_links() or smi_topo_links()


def one_link(found: tuple[GpuLink, ...] | None, gpus: int) -> tuple[str, str] | None:
    """The one link kind every pair of `gpus` GPUs shares, with words saying where it was read — or None when the
    links differ between pairs (which pair a run's GPUs were cannot be told then) or cover fewer GPUs."""
    if not found or gpus < 2:
        return None
    kinds = {link.kind for link in found}
    covered = {i for link in found for i in (link.a, link.b)}
    if len(kinds) != 1 or len(covered) < gpus:
        return None
    (kind,) = kinds
    details = sorted({link.detail for link in found})
    source = found[0].source
    return kind, f"{source}: {', '.join(details)} between each pair of the machine's {len(covered)} GPUs"


def clear_cache() -> None:
    for probe in (nvml_links, smi_topo_links, links):
        probe.cache_clear()
