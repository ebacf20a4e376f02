"""AMD (ROCm) and Intel (XPU) facts from compat/rocm.toml, compat/xpu.toml and gpus.toml, and questions about them."""

from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from tritonlock.errors import MatrixError
from tritonlock.compat.rowreader import PLATFORMS
from tritonlock.compat.rowreader import RowReader as _Row  # the same typed row reader as the CUDA rows
from tritonlock.compat.rowreader import read_compat_file as _read

FILES = ("rocm.toml", "xpu.toml", "gpus.toml")

_SERIES = re.compile(r"^[0-9]+\.[0-9]+\Z")
_ROCM = re.compile(r"^[0-9]+\.[0-9]+(\.[0-9]+)?\Z")
_GFX = re.compile(r"^gfx[0-9]{1,2}[0-9a-f]{2}\Z")
_GLIBC = re.compile(r"^2\.[0-9]+\Z")
_TAG = re.compile(r"^(linux|manylinux_2_[0-9]+)_x86_64\Z")
_INTEL = re.compile(r"^[a-z][a-z0-9]{1,3}(-[a-z])?\Z")
_PCI = re.compile(r"^0x[0-9a-f]{4}\Z")
_PKG = re.compile(r"^[a-z0-9][a-z0-9-]*\Z")
_DRV = re.compile(r"^[0-9]+\.[0-9]+\Z")
_CC = re.compile(r"^[0-9]+\.[0-9]+\Z")


@dataclass(frozen=True, kw_only=True, slots=True)
class RocmBuild:
    """One ROCm build of a torch minor series on PyTorch's index (`rocm6.4`)."""

    torch: str  # series, "2.9"
    backend: str  # "rocm6.4"
    rocm: str  # "6.4"
    platforms: tuple[str, ...]
    glibc: str  # the wheels' glibc floor
    wheel_tag: str  # "manylinux_2_28_x86_64" | "linux_x86_64"
    gfx: tuple[str, ...]  # PYTORCH_ROCM_ARCH: targets with native code objects
    stable: bool  # RELEASE.md's "Stable ROCm" for the series
    triton_package: str  # "pytorch-triton-rocm" | "triton-rocm"
    bundles_runtime: bool  # the wheel carries the ROCm user space
    source: str
    note: str = ""  # "inferred: ..." where the build's facts (its gfx list) were not read for it
    series_note: str = ""  # the series row's "inferred: ..." (its variants, which one is stable)
    stable_note: str = ""  # "inferred: ..." where the stable variant was not read from RELEASE.md
    triton_note: str = ""  # "inferred: ..." for the Triton package name
    gfx_source: str = ""
    gfx_inferred: tuple[str, ...] = ()  # listed targets no source shows in this build
    gfx_inferred_note: str = ""  # why they are listed
    gfx_unusable: tuple[str, ...] = ()  # listed targets the bundled ROCm libraries have no kernels for
    gfx_unusable_source: str = ""
    sdk_wheels: bool = False  # the ROCm libraries come from TheRock's SDK wheels (rocm[libraries]), not the wheel

    def inferred(self) -> str:
        """The build's own "inferred: ..." note, else the series row's; "" when its facts were read."""
        return next((n for n in (self.note, self.series_note) if n.startswith("inferred")), "")


@dataclass(frozen=True, kw_only=True, slots=True)
class AmdgpuDriver:
    """An amdgpu kernel-driver release and the ROCm user spaces AMD supports on it."""

    release: str  # "6.4" | "30.10"
    module: str  # the DKMS module version prefix it reports, "6.12"; "" when not read (matched by release only)
    user_space: tuple[str, ...]  # ("6.1", ..., "7.0")
    source: str
    note: str = ""
    module_note: str = ""  # "inferred: ..." where the module version was not read


@dataclass(frozen=True, kw_only=True, slots=True)
class TritonAmd:
    """From this Triton release on: gfx targets its AMD backend supports, and those it compiles for unofficially."""

    triton: str
    supported: tuple[str, ...]
    runs: tuple[str, ...]
    source: str
    note: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class XpuBuild:
    """The XPU build of a torch minor series."""

    torch: str
    platforms: tuple[str, ...]
    glibc: str
    triton_package: str  # "pytorch-triton-xpu" | "triton-xpu"
    triton_platforms: tuple[str, ...]  # the platforms whose xpu wheels require the Triton package
    devices: tuple[str, ...]  # AOT device names of the supported families, "pvc", "bmg"
    source: str
    note: str = ""
    triton_platforms_source: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class AmdGpu:
    gfx: str
    family: str
    names: tuple[str, ...]
    apu: bool
    source: str


@dataclass(frozen=True, kw_only=True, slots=True)
class IntelGpu:
    target: str
    family: str
    names: tuple[str, ...]
    pci: tuple[str, ...]
    source: str


@dataclass(frozen=True, kw_only=True, slots=True)
class VendorMatrix:
    rocm: tuple[RocmBuild, ...]
    amdgpu: tuple[AmdgpuDriver, ...]
    triton_amd: tuple[TritonAmd, ...]  # oldest first
    xpu: tuple[XpuBuild, ...]
    amd_gpus: tuple[AmdGpu, ...]
    intel_gpus: tuple[IntelGpu, ...]
    rocm_only: tuple[str, ...] = ()  # name patterns ("*": any run of characters) bound to the rocm* index
    triton_owners: tuple[str, ...] = ()  # distributions that install the top-level triton/ package
    rocm_served: tuple[str, ...] = ()  # name patterns bound to the rocm* index where that index serves them

    def rocm_only_name(self, name: str) -> bool:
        """Whether a distribution is of the ROCm SDK family, taken only from a rocm* torch index (rocm.toml
        [binding] rocm_only: rocm, rocm-sdk-*, ...)."""
        return any(fnmatch.fnmatchcase(name, n) for n in self.rocm_only)

    def rocm_served_name(self, name: str) -> bool:
        """Whether a distribution is bound to a rocm* torch index wherever that index serves it (rocm_served)."""
        return any(fnmatch.fnmatchcase(name, n) for n in self.rocm_served)

    # -- ROCm
    def rocm_builds(self, torch_version: str) -> tuple[RocmBuild, ...]:
        """The ROCm builds of the series a torch release belongs to ("2.9.1" -> 2.9's), newest ROCm first."""
        series = _series(torch_version)
        return tuple(sorted((b for b in self.rocm if b.torch == series), key=lambda b: Version(b.rocm), reverse=True))

    def first_series_with(self, gfx: str) -> str | None:
        """The oldest torch series with a ROCm build carrying native code for `gfx` ("2.5")."""
        have = sorted({b.torch for b in self.rocm if gfx in b.gfx}, key=Version)
        return have[0] if have else None

    def last_series_with(self, gfx: str) -> str | None:
        have = sorted({b.torch for b in self.rocm if gfx in b.gfx}, key=Version)
        return have[-1] if have else None

    def amd_gpu(self, gfx: str) -> AmdGpu | None:
        return next((g for g in self.amd_gpus if g.gfx == gfx), None)

    def amd_gfx_for_name(self, name: str) -> str | None:
        """'MI300X' / 'AMD Instinct MI300X' / 'RX 7900 XTX' -> the gfx target; None when unknown."""
        return _best_name(name, ((g.names, g.gfx) for g in self.amd_gpus))

    def amdgpu_releases(self, module_version: str) -> tuple[AmdgpuDriver, ...]:
        """The amdgpu driver releases a DKMS module version ('6.12.12') or release name ('6.4', '30.10.1') may be:
        one, or several where releases ship the same module (30.20 and 30.30: 6.16.x); () when unknown."""
        parts = module_version.split(".")
        two = ".".join(parts[:2])
        by_release = tuple(d for d in self.amdgpu if d.release == two)
        if by_release and (len(parts) <= 2 or int(parts[0]) >= 30):
            return by_release
        by_module = tuple(d for d in self.amdgpu if d.module and d.module == two)
        return by_module or by_release

    def amdgpu_release(self, module_version: str) -> AmdgpuDriver | None:
        """The (oldest) amdgpu driver release a module version or release name is; None when unknown."""
        found = self.amdgpu_releases(module_version)
        return min(found, key=lambda d: Version(d.release)) if found else None

    def amdgpu_supports(self, driver: str, rocm: str) -> bool | None:
        """Whether the amdgpu driver supports ROCm `rocm` ("6.2.4" -> 6.2) in AMD's table: True only when every
        release the driver may be supports it; None when the driver is unknown."""
        found = self.amdgpu_releases(driver)
        if not found:
            return None
        minor = ".".join(rocm.split(".")[:2])
        return all(minor in d.user_space for d in found)

    def amdgpu_window(self, rocm: str) -> tuple[AmdgpuDriver, ...]:
        """The driver releases that support ROCm `rocm`, oldest first (AMD's window runs both ways)."""
        minor = ".".join(rocm.split(".")[:2])
        return tuple(sorted((d for d in self.amdgpu if minor in d.user_space), key=lambda d: Version(d.release)))

    def least_amdgpu_for(self, rocm: str) -> AmdgpuDriver | None:
        """The oldest driver release that supports ROCm user space `rocm`."""
        window = self.amdgpu_window(rocm)
        return window[0] if window else None

    def newer_amdgpu_for(self, driver: str, rocm: str) -> AmdgpuDriver | None:
        """The oldest driver release newer than `driver` that supports ROCm `rocm`; None when none is (the ROCm is
        older than the driver supports, or no release newer than the driver's is in the table)."""
        have = self.amdgpu_release(driver)
        if have is None:
            return None
        return next((d for d in self.amdgpu_window(rocm) if Version(d.release) > Version(have.release)), None)

    def newest_amdgpu(self) -> AmdgpuDriver | None:
        return max(self.amdgpu, key=lambda d: Version(d.release), default=None)

    def triton_amd_row(self, triton: str) -> TritonAmd | None:
        """The [[triton_amd]] row a Triton release falls under (the newest at or below it)."""
        row = None
        for r in self.triton_amd:
            if Version(r.triton) <= Version(triton.split("+")[0]):
                row = r
        return row

    def triton_amd_support(self, triton: str, gfx: str) -> str | None:
        """'supported', 'runs' (compiles, not in Triton's CI) or None (no AMD backend support) for a Triton release."""
        row = self.triton_amd_row(triton)
        if row is None:
            return None
        return "supported" if gfx in row.supported else "runs" if gfx in row.runs else None

    # -- XPU
    def xpu_build(self, torch_version: str) -> XpuBuild | None:
        series = _series(torch_version)
        return next((b for b in self.xpu if b.torch == series), None)

    def first_xpu_series_with(self, device: str) -> str | None:
        have = sorted({b.torch for b in self.xpu if device in b.devices}, key=Version)
        return have[0] if have else None

    def intel_gpu(self, target: str) -> IntelGpu | None:
        return next((g for g in self.intel_gpus if g.target == target), None)

    def intel_target_for_name(self, name: str) -> str | None:
        """'Arc B580' / 'Intel(R) Data Center GPU Max 1550' / 'bmg' -> the AOT device name; None when unknown."""
        low = name.strip().lower()
        if any(g.target == low for g in self.intel_gpus):
            return low
        return _best_name(name, ((g.names, g.target) for g in self.intel_gpus))

    def intel_target_for_pci(self, device_id: str) -> str | None:
        want = device_id.strip().lower()
        return next((g.target for g in self.intel_gpus if want in g.pci), None)


# ---- names and targets (pure) ------------------------------------------------------------------------------

_GFX_ANY = re.compile(r"^(gfx[0-9]{1,2}[0-9a-f]{2})((:[a-z0-9-]+[+-])*)\Z", re.IGNORECASE)


def normalize_gfx(text: str) -> str | None:
    """'gfx942:sramecc+:xnack-' -> 'gfx942' (the features do not change which code objects a build carries: PyTorch
    builds target-ID-free code objects that load with any xnack/sramecc setting); None when it is no gfx name."""
    m = _GFX_ANY.match(text.strip())
    return m.group(1).lower() if m else None


def gfx_from_target_version(value: int) -> str | None:
    """KFD's gfx_target_version (90402) -> 'gfx942'; None for 0 (a CPU node) or nonsense."""
    if value <= 0:
        return None
    major, minor, step = value // 10000, (value // 100) % 100, value % 100
    if not (6 <= major <= 99) or minor > 15 or step > 15:
        return None
    return f"gfx{major}{minor:x}{step:x}"


def gfx_from_override(value: str) -> str | None:
    """HSA_OVERRIDE_GFX_VERSION '11.0.0' -> 'gfx1100', '9.4.2' -> 'gfx942'; None when malformed."""
    m = re.fullmatch(r"([0-9]{1,2})\.([0-9]{1,2})\.([0-9]{1,2})", value.strip())
    if not m:
        return None
    major, minor, step = (int(x) for x in m.groups())
    return gfx_from_target_version(major * 10000 + minor * 100 + step)


def isa_major(gfx: str) -> str:
    """'gfx1100' -> 'gfx11', 'gfx90a' -> 'gfx9': the ISA generation an override may never cross."""
    digits = gfx[3:]
    return "gfx" + digits[:-2]


def vendor_of(gpu: str) -> str:
    """A target's GPU entry as intent and host write it: '8.0' (NVIDIA), 'gfx942' (AMD), 'pvc' (Intel)."""
    if _CC.match(gpu):
        return "nvidia"
    if gpu.startswith("gfx"):
        return "amd"
    return "intel"


def target_vendor(gpus: tuple[str, ...]) -> str | None:
    """The one vendor of a target's GPUs; None without GPUs. Mixed vendors are refused where targets are read."""
    vendors = {vendor_of(g) for g in gpus}
    return vendors.pop() if len(vendors) == 1 else None


# ---- loading ------------------------------------------------------------------------------------------------

def load_vendor_matrix(path: str | None = None) -> VendorMatrix:
    """Load the AMD/Intel rows of compat/ (the shipped copy when path is None); MatrixError names file and key."""
    if path is None:
        return _load_default()
    return _load(Path(path))


@functools.lru_cache(maxsize=1)
def _load_default() -> VendorMatrix:
    from tritonlock._data import compat_root

    root = compat_root()
    if root is None:
        raise MatrixError("no compat data next to tritonlock — reinstall tritonlock")
    return _load(root)


def _load(root: Path) -> VendorMatrix:
    problems: list[str] = []
    rocm_f, xpu_f, gpus_f = (_read(root, n, problems) for n in FILES)
    if problems:
        raise MatrixError("\n".join(problems))
    builds: list[RocmBuild] = []
    for row in rocm_f.rows("rocm"):
        series = row.get("torch", _SERIES, "2.9") or ""
        stable = row.get("stable", _ROCM, "6.4") or ""
        row.get("stable_source", None, "https://github.com/pytorch/pytorch/blob/main/RELEASE.md")
        pkg = row.get("triton_package", re.compile(r"^(pytorch-triton-rocm|triton-rocm)\Z"), "triton-rocm") or ""
        row.get("triton_package_source", None, "https://...")
        tnote = row.get("triton_package_note", None, "inferred: ...", required=False) or ""
        snote = row.get("stable_note", None, "inferred: ...", required=False) or ""
        bundles = row.boolean("bundles_runtime")
        row.get("bundles_runtime_source", None, "https://...")
        src = row.source()
        series_note = row.get("note", None, "inferred: ...", required=False) or ""
        variants = row.rows("variant")
        for vr in variants:
            rocm = vr.get("rocm", _ROCM, "6.4") or ""
            backend = vr.get("backend", re.compile(r"^rocm[0-9]+(\.[0-9]+)+\Z"), "rocm6.4") or ""
            if rocm and backend and backend != f"rocm{rocm}":
                vr.bad("backend", f"{backend!r} does not match rocm = {rocm!r}")
            gfx = vr.strings("gfx", _GFX, "gfx942")
            inferred = vr.strings("gfx_inferred", _GFX, "gfx1103", required=False)
            inferred_note = vr.get("gfx_inferred_note", None, "pytorch #179653 ...", required=bool(inferred)) or ""
            unusable = vr.strings("gfx_unusable", _GFX, "gfx906", required=False)
            unusable_src = vr.get("gfx_unusable_source", None, "https://github.com/ROCm/ROCm/issues/4625",
                                  required=bool(unusable)) or ""
            sdk = vr.boolean("sdk_wheels")
            if sdk:
                vr.get("sdk_wheels_source", None, "https://github.com/pytorch/test-infra/...")
            for key, names in (("gfx_inferred", inferred), ("gfx_unusable", unusable)):
                for g in names:
                    if g not in gfx:
                        vr.bad(key, f"{g!r} is not in this variant's gfx list")
            b = RocmBuild(torch=series, backend=backend, rocm=rocm,
                          platforms=vr.strings("platforms", lambda s: s in PLATFORMS, "linux_x86_64"),
                          glibc=vr.get("glibc", _GLIBC, "2.28") or "", wheel_tag=vr.get("wheel_tag", _TAG,
                                                                                      "manylinux_2_28_x86_64") or "",
                          gfx=gfx, stable=rocm == stable, triton_package=pkg, bundles_runtime=bundles and not sdk,
                          source=vr.source(inherited=src), note=vr.get("note", None, "inferred: ...", required=False) or "",
                          series_note=series_note, stable_note=snote, triton_note=tnote,
                          gfx_source=vr.get("gfx_source", None,
                                            "https://github.com/pytorch/pytorch/blob/main/.ci/docker/manywheel/build.sh")
                          or "",
                          gfx_inferred=inferred, gfx_inferred_note=inferred_note, gfx_unusable=unusable,
                          gfx_unusable_source=unusable_src, sdk_wheels=sdk)
            vr.done()
            builds.append(b)
        if variants and stable and not any(b.torch == series and b.stable for b in builds):
            row.bad("stable", f"ROCm {stable} is none of this row's variants")
        row.done()
    drivers: list[AmdgpuDriver] = []
    for row in rocm_f.rows("amdgpu"):
        d = AmdgpuDriver(release=row.get("release", _DRV, "6.4") or "",
                         module=row.get("module", _DRV, "6.12", required=False) or "",
                         user_space=row.strings("user_space", _DRV, "6.4"), source=row.source(),
                         note=row.get("note", None, "inferred: ...", required=False) or "",
                         module_note=row.get("module_note", None, "inferred: ...", required=False) or "")
        row.done()
        drivers.append(d)
    tamd: list[TritonAmd] = []
    for row in rocm_f.rows("triton_amd"):
        tamd.append(TritonAmd(triton=row.get("triton", re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+\Z"), "3.1.0") or "0",
                              supported=row.strings("supported", _GFX, "gfx942"),
                              runs=row.strings("runs", _GFX, "gfx1030", required=False), source=row.source(),
                              note=row.get("note", None, "inferred: ...", required=False) or ""))
        row.done()
    for row in rocm_f.rows("generic-target", required=False):  # (read by tritonlock.native.rule.gfx_runs)
        row.get("name", re.compile(r"^gfx[0-9]+(?:-[0-9]+)?-generic\Z"), "gfx11-generic")
        row.strings("members", _GFX, "gfx1100")
        row.source()
        row.done()
    bind = _Row(rocm_f.data.get("binding") or {}, "binding", rocm_f.file, problems)
    rocm_f.seen.add("binding")
    rocm_only = bind.strings("rocm_only", re.compile(r"^[a-z0-9*][a-z0-9*-]*\Z"), "rocm-sdk-*")
    served = bind.strings("rocm_served", re.compile(r"^[a-z0-9*][a-z0-9*-]*\Z"), "*rocm*", required=False)
    owners = bind.strings("triton_owners", _PKG, "triton-rocm")
    bind.source()
    bind.get("note", None, "inferred: ...", required=False)
    bind.done()
    rocm_f.done()
    xpus: list[XpuBuild] = []
    for row in xpu_f.rows("xpu"):
        xpus.append(XpuBuild(
            torch=row.get("torch", _SERIES, "2.9") or "",
            platforms=row.strings("platforms", lambda s: s in PLATFORMS, "linux_x86_64"),
            glibc=row.get("glibc", _GLIBC, "2.28") or "",
            triton_package=row.get("triton_package", re.compile(r"^(pytorch-triton-xpu|triton-xpu)\Z"), "triton-xpu") or "",
            triton_platforms=row.strings("triton_platforms", lambda s: s in PLATFORMS, "linux_x86_64", required=False),
            triton_platforms_source=row.get("triton_platforms_source", None, "https://github.com/pytorch/pytorch/pull/148755",
                                            required=False) or "",
            devices=row.strings("devices", _INTEL, "pvc"), source=row.source(),
            note=row.get("note", None, "inferred: ...", required=False) or ""))
        row.done()
    xpu_f.done()
    amd: list[AmdGpu] = []
    for row in gpus_f.rows("amd_gpu"):
        amd.append(AmdGpu(gfx=row.get("gfx", _GFX, "gfx942") or "", family=row.get("family", None, "CDNA 3") or "",
                          names=row.strings("names", lambda s: bool(s.strip()), "Instinct MI300X"),
                          apu=row.boolean("apu"), source=row.source()))
        row.done()
    intel: list[IntelGpu] = []
    for row in gpus_f.rows("intel_gpu"):
        intel.append(IntelGpu(target=row.get("target", _INTEL, "pvc") or "", family=row.get("family", None, "Max") or "",
                              names=row.strings("names", lambda s: bool(s.strip()), "Arc B580"),
                              pci=row.strings("pci", _PCI, "0x0bd5"), source=row.source()))
        row.done()
    # cross-row facts
    seen: set[tuple[str, str]] = set()
    for b in builds:
        if (b.torch, b.backend) in seen:
            problems.append(f"{rocm_f.file}: torch {b.torch} lists {b.backend} twice — keep one variant")
        seen.add((b.torch, b.backend))
    known_intel = {g.target for g in intel}
    for i, x in enumerate(xpus):
        for dev in x.devices:
            if dev not in known_intel:
                problems.append(f"{xpu_f.file}: xpu[{i}].devices: {dev!r} is not an [[intel_gpu]] target in "
                                f"{gpus_f.file} — add it there")
    if problems:
        raise MatrixError("\n".join(problems))
    return VendorMatrix(rocm=tuple(builds), amdgpu=tuple(drivers),
                        triton_amd=tuple(sorted(tamd, key=lambda r: Version(r.triton))), xpu=tuple(xpus),
                        amd_gpus=tuple(amd), intel_gpus=tuple(intel), rocm_only=rocm_only, triton_owners=owners,
                        rocm_served=served)


# ---- helpers ------------------------------------------------------------------------------------------------

def _series(version: str) -> str:
    return ".".join(version.split("+")[0].split(".")[:2])


_BRAND = {"AMD", "ATI", "INTEL", "R", "TM", "GRAPHICS", "CORPORATION", "INSTINCT", "RADEON", "PRO"}


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[^A-Z0-9]+", name.upper()) if w and w not in _BRAND]


@functools.lru_cache(maxsize=256)
def _known_words(known: str) -> tuple[str, ...]:
    return tuple(_words(known))


def _best_name(name: str, rows: object) -> str | None:
    """The longest listed name whose words appear in order in `name` (vendor words dropped)."""
    words = tuple(_words(name))
    best: tuple[int, str] | None = None
    for names, value in rows:  # type: ignore[attr-defined]
        for known in names:
            k = _known_words(known)
            n = len(k)
            if n and any(words[i:i + n] == k for i in range(len(words) - n + 1)):
                size = len(" ".join(k))
                if best is None or size > best[0]:
                    best = (size, value)
    return best[1] if best else None
