"""The rows of compat/'s CUDA matrix as frozen data: CUDA toolkits and their minor-version floors, torch releases and
their builds, Triton releases and the ptxas they bundle, GPU models (tritonlock.compat.matrix reads them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tritonlock._archs import cc_tuple, gpu_runs


@dataclass(frozen=True, kw_only=True, slots=True)
class CudaToolkit:
    """A CUDA toolkit minor release and the drivers it needs."""

    version: str  # "12.6"
    linux_driver: str  # the driver the toolkit's GA release shipped with / requires without compat
    windows_driver: str | None
    source: str


@dataclass(frozen=True, kw_only=True, slots=True)
class MinorCompat:
    """CUDA minor-version compatibility floor for a major (11, 12, 13)."""

    major: int
    linux_driver: str
    windows_driver: str | None
    source: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Variant:
    """One CUDA (or CPU) build of a torch release on PyTorch's wheel index."""

    backend: str  # "cu126" | "cpu" | "rocm6.2" (non-NVIDIA backends are carried but never chosen)
    cuda: str | None  # "12.6"; None for cpu
    platforms: tuple[str, ...]  # "linux_x86_64" | "linux_aarch64" | "win_amd64" | "macos_arm64"
    archs: tuple[str, ...] = ()  # SM archs with SASS, "sm_90"
    ptx: tuple[str, ...] = ()  # archs with PTX embedded
    source: str = ""
    glibc: dict[str, str] = field(default_factory=dict)  # overrides the release's floor for this build
    note: str = ""  # "inferred: ..." where a fact was not read at the release tag

    def runs_on(self, cc: str) -> bool:
        """Whether this build has code for a GPU of compute capability `cc` ("8.9")."""
        return gpu_runs(cc, self.archs, self.ptx) is not None


@dataclass(frozen=True, kw_only=True, slots=True)
class TorchRelease:
    """A torch release: Pythons, variants, pinned triton, glibc floors."""

    version: str  # "2.6.0"
    python: tuple[str, ...]  # ("3.9", ..., "3.13")
    triton: str | None  # exact triton the Linux CUDA wheels require, None if none
    pypi_backend: str | None  # variant the default index (PyPI) ships for linux_x86_64
    glibc: dict[str, str]  # platform -> manylinux glibc floor, {"linux_x86_64": "2.28"}
    variants: tuple[Variant, ...]
    source: str
    free_threaded: tuple[str, ...] = ()  # ("3.13t",)
    triton_requirement: str = ""  # the Requires-Dist specifier as written: "==3.2.0", "~=3.8.0"
    triton_platforms: tuple[str, ...] = ()  # platforms whose wheels pull triton (the marker)
    triton_python_below: str | None = None  # 'python_version < "3.12"' on that Requires-Dist -> "3.12"
    pypi_backends: dict[str, str] = field(default_factory=dict)  # platform -> what PyPI's wheel is
    note: str = ""
    # Where a platform's wheels cover other Pythons than `python` (torch 2.5: no cp313 for aarch64/Windows).
    python_by_platform: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # RELEASE.md "Release Compatibility Matrix": the Stable / Experimental CUDA columns ("12.6"); both empty
    # when the release has no row there.
    stable_cuda: tuple[str, ...] = ()
    experimental_cuda: tuple[str, ...] = ()
    # The macOS floor of the wheels per platform ({"macos_arm64": "14.0"}, from macosx_14_0_arm64 tags), and the
    # Pythons whose macos_arm64 wheels are tagged higher than that (2.10.0: cp314 -> 14.0).
    macos: dict[str, str] = field(default_factory=dict)
    macos_by_python: dict[str, str] = field(default_factory=dict)

    def macos_floor(self, platform: str, python: str | None) -> str | None:
        """The least macOS the release's wheels for this platform (and Python) install on; None off macOS."""
        floor = self.macos.get(platform)
        if floor and python and platform == "macos_arm64":
            return self.macos_by_python.get(python, floor)
        return floor

    def pythons(self, platform: str) -> tuple[str, ...]:
        """CPython minors with a wheel for this platform."""
        return self.python_by_platform.get(platform, self.python)

    def cuda_support(self, cuda: str | None) -> str | None:
        """'stable' or 'experimental' per RELEASE.md; None for CPU builds or releases without a row."""
        if cuda is None or not (self.stable_cuda or self.experimental_cuda):
            return None
        return "stable" if cuda in self.stable_cuda else "experimental"

    def variant(self, backend: str, platform: str) -> Variant | None:
        return next((v for v in self.variants if v.backend == backend and platform in v.platforms), None)

    def backends(self, platform: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.backend for v in self.variants if platform in v.platforms))

    def glibc_for(self, platform: str, backend: str | None = None) -> str | None:
        """glibc floor of a build: the variant's own where it differs from the release's."""
        var = self.variant(backend, platform) if backend else None
        return (var.glibc.get(platform) if var else None) or self.glibc.get(platform)


@dataclass(frozen=True, kw_only=True, slots=True)
class TritonRelease:
    """A triton release (Linux wheels from PyPI)."""

    version: str
    python: tuple[str, ...]
    platforms: tuple[str, ...]
    glibc: dict[str, str]
    min_cc: str  # below this Triton cannot run at all
    supported_cc: str  # below this it runs but is not officially supported (warn)
    source: str
    free_threaded: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class TritonWindowsRelease:
    """triton-windows: which version series goes with which torch minor."""

    torch: str  # torch minor series, "2.6"
    version: str  # specifier or version for triton-windows, e.g. ">=3.2,<3.3"
    python: tuple[str, ...]
    source: str
    supported_cc: str = ""  # below this the series does not support the GPU (warn); "" = as upstream Triton


@dataclass(frozen=True, kw_only=True, slots=True)
class Ptxas:
    """The ptxas a Triton wheel bundles (and, from triton 3.3, its second `ptxas-blackwell`), read from the wheel.

    Triton compiles PTX to a cubin with it and the driver loads that cubin: a CUDA 12.x ptxas needs a driver at
    or above the 12.x minor-version-compatibility floor, a 13.x ptxas the 13.x floor.
    """

    package: str  # "triton" | "triton-windows"
    version: str  # "3.9.0", "3.8.0.post29"
    platform: str  # "linux_x86_64"
    ptxas: str  # "12.9.86": `ptxas --version` says "Cuda compilation tools, release 12.9, V12.9.86"
    blackwell: str | None = None  # the same for bin/ptxas-blackwell; None when the wheel has none
    blackwell_from: str | None = None  # compute capability from which Triton compiles with ptxas-blackwell
    blackwell_env: str | None = None  # the variable that overrides ptxas-blackwell (TRITON_PTXAS_PATH: ptxas)
    source: str = ""

    def for_cc(self, cc: str) -> tuple[str, str, str]:
        """(binary, CUDA version, override variable) Triton uses to compile for a GPU of compute capability `cc`."""
        if self.blackwell and self.blackwell_from and cc_tuple(cc) >= cc_tuple(self.blackwell_from):
            return "ptxas-blackwell", self.blackwell, self.blackwell_env or "TRITON_PTXAS_BLACKWELL_PATH"
        return "ptxas", self.ptxas, "TRITON_PTXAS_PATH"


@dataclass(frozen=True, kw_only=True, slots=True)
class GpuModel:
    name: str  # "A100"
    cc: str  # "8.0"
    source: str
    family: str = ""
    wheels: str = ""  # "jetpack": integrated (Tegra) GPUs that PyTorch's wheel index does not build for
    first_cuda: str | None = None  # the first CUDA toolkit that supports the architecture ("12.8" for sm_120)
    first_cuda_source: str = ""
    last_branch: int | None = None  # the last driver branch that drives it (470 for Kepler)
    last_branch_source: str = ""
    integrated: bool = False  # a Tegra GPU: its driver (JetPack's) is versioned by branch, "580.00"
