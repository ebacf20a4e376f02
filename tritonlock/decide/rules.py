"""The host rules, one small named predicate each: given a target (and a torch release, build or Triton), the
reason it does not work there, or None. Pure: matrix facts only, no network, no host probing.

The resolver's search (search.py) and the advice (why.py) both ask these; a new rule is one function here, one
entry in the search where it applies, and one test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tritonlock._archs import arch_tuple, cc_tuple, gpu_runs
from tritonlock.compat.matrix import Matrix, branch_floor, driver_branch_number
from tritonlock.compat.rows import Ptxas, TorchRelease, TritonRelease, TritonWindowsRelease, Variant
from tritonlock.models import Intent, TargetSpec

_CC = re.compile(r"^[0-9]+\.[0-9]+\Z")  # an NVIDIA GPU's compute capability, as matrix_vendor.vendor_of reads it

_PLATFORM = {("linux", "x86_64"): "linux_x86_64", ("linux", "aarch64"): "linux_aarch64",
             ("windows", "x86_64"): "win_amd64", ("macos", "aarch64"): "macos_arm64",
             ("macos", "arm64"): "macos_arm64"}

# Every Apple-silicon Mac runs macOS 11 or newer: wheels tagged macosx_11_0 need no word, newer floors do.
MACOS_ANY = "11.0"


def platform_of(target: TargetSpec) -> str:
    return _PLATFORM.get((target.os, target.arch), f"{target.os}_{target.arch}")


def _v(s: str) -> Version:
    return Version(s)


def arch_range(archs: tuple[str, ...]) -> str:
    """'sm_50…sm_90' for a build's SASS archs."""
    plain = sorted({a for a in archs if arch_tuple(a)}, key=lambda a: arch_tuple(a) or (0, 0, False))
    if not plain:
        return "no GPU archs"
    return plain[0] if len(plain) == 1 else f"{plain[0]}…{plain[-1]}"


def sm(cc: str) -> str:
    """'8.0' -> 'sm_80'."""
    return "sm_" + cc.replace(".", "")


def driver_given_as_branch(driver: str | None) -> bool:
    """'535' (a branch, no release number) rather than '535.104.05'."""
    return driver is not None and "." not in driver


@dataclass(frozen=True, kw_only=True, slots=True)
class Host:
    """One target as the rules see it: the intent's choices, the matrix, and what follows from the target."""

    intent: Intent
    matrix: Matrix
    target: TargetSpec
    python: str  # the Python asked for: a minor ("3.12") or a specifier
    platform: str  # "linux_x86_64"
    gpu: bool  # the target has an NVIDIA driver
    from_default: bool  # [indexes] torch = "default": torch from the default index (PyPI)
    tegra: bool  # a Jetson: its driver is numbered by branch ("580.00")
    by_branch: bool = False  # the driver is held to floors by branch: a Jetson's, or one given as a branch ("535")

    @classmethod
    def of(cls, intent: Intent, matrix: Matrix, target: TargetSpec, default_python: str) -> Host:
        gpu = target.driver is not None
        from_default = intent.torch_index == "default"
        return cls(intent=intent, matrix=matrix, target=target,
                   python=target.python or intent.python or default_python, platform=platform_of(target), gpu=gpu,
                   # PyPI ships one build per platform: with cuda = "cpu" only where that build is the CPU one
                   # (macOS, Windows) — cuda = "cpu" never gets a CUDA build (the search says what would fit instead).
                   from_default=from_default,
                   # A Jetson's driver comes with JetPack and is numbered by branch ("580.00" on JetPack 7.0/7.1,
                   # CUDA 13.0): it is held to the branch of each floor, not to a dGPU driver number (gpus.toml
                   # `integrated`).
                   tegra=(tegra := gpu and any((g := matrix.gpu_family(cc)) is not None and g.integrated
                                               for cc in target.gpus)),
                   # driver = "535" names the R535 branch: its first release (535.54.03) already supports CUDA 12.2,
                   # so it is held to each floor's branch, as a Jetson's driver is
                   by_branch=tegra or driver_given_as_branch(target.driver))

    @property
    def ccs(self) -> list[str]:
        """The target's compute capabilities, each once, oldest first — NVIDIA GPUs only: an AMD gfx target or an
        Intel device name is no compute capability, and the CUDA rules have nothing to say about it."""
        return sorted({g for g in self.target.gpus if _CC.match(g)}, key=cc_tuple)

    def floor(self, driver: str | None) -> str | None:
        """A driver floor as this target's driver is numbered: by branch on a Jetson ('580.65.06' -> '580.00')."""
        return branch_floor(driver) if driver and self.by_branch else driver

    def max_cuda(self) -> str | None:
        """The CUDA version the target's driver supports natively: as reported, else from the driver table."""
        if self.target.cuda:
            return self.target.cuda
        t = self.target
        return self.matrix.max_cuda_for_driver(t.driver, t.os, by_branch=self.by_branch) if t.driver else None


# --- the GPU and its driver (before any torch release) -------------------------------------------------------

def gpu_has_pytorch_wheels(h: Host, cc: str) -> str | None:
    """An integrated Jetson GPU: PyTorch's wheel index builds nothing for it (only NVIDIA's JetPack wheels do)."""
    jetson = h.matrix.jetpack_only(cc)
    if jetson is None:
        return None
    return (f"compute capability {cc} is an integrated {jetson.family} GPU: no torch release on PyTorch's wheel "
            "index is built for it (its aarch64 CUDA wheels are for server Arm, SBSA)")


def driver_knows_gpu(h: Host, cc: str) -> str | None:
    """The driver must be at least the branch of the first CUDA toolkit that supports the GPU's architecture
    (gpus.toml first_cuda; cuda.toml's release driver of that toolkit)."""
    g = h.matrix.gpu_family(cc)
    found = h.matrix.gpu_driver_floor(cc, h.target.os)
    if g is None or found is None or h.target.driver is None:
        return None
    have, need = driver_branch_number(h.target.driver), driver_branch_number(found[0])
    if have >= need:
        return None
    return (f"GPU {sm(cc)} ({g.family}) needs a driver of the R{need} branch or newer: CUDA {g.first_cuda} is the "
            f"first toolkit that supports it, and its driver is >= {found[0]}; driver {h.target.driver} does not "
            "know this GPU, so no CUDA build runs on it")


def driver_still_drives_gpu(h: Host, cc: str) -> str | None:
    """No driver branch newer than the last that drives the GPU (gpus.toml last_branch: NVIDIA's legacy list)."""
    g = h.matrix.gpu_family(cc)
    if g is None or g.last_branch is None or h.target.driver is None:
        return None
    have = driver_branch_number(h.target.driver)
    if have <= g.last_branch:
        return None
    return (f"GPU {sm(cc)} ({g.family}) is driven only up to the R{g.last_branch} branch (NVIDIA's legacy GPU "
            f"list); driver {h.target.driver} (R{have}) does not drive it")


# --- a torch release on this target --------------------------------------------------------------------------

def python_candidates(h: Host, release: TorchRelease) -> list[str]:
    """Candidate Python minors for a release on this platform, best first."""
    have = release.pythons(h.platform)
    spec = h.python
    if spec and spec[0].isdigit():
        return [spec] if spec in have else []
    s = SpecifierSet(spec) if spec else SpecifierSet()
    return sorted((p for p in have if Version(p) in s), key=Version, reverse=True)


def release_supports_python(h: Host, release: TorchRelease) -> str | None:
    """torch publishes wheels for the Python asked for (torch.toml python / python_by_platform)."""
    if python_candidates(h, release):
        return None
    on = release.pythons(h.platform)
    where = f" on {h.platform}" if on != release.python else ""
    return f"supports Python {on[0]}–{on[-1]}{where}, not {h.python}"


def release_has_platform(h: Host, release: TorchRelease) -> str | None:
    """torch publishes wheels for this OS and architecture."""
    if any(h.platform in v.platforms for v in release.variants):
        return None
    return f"no wheels for {h.platform}"


def default_index_backend(h: Host, release: TorchRelease) -> str | None:
    """The one build the default index (PyPI) ships of this release for this platform, or None."""
    return release.pypi_backends.get(h.platform) or (release.pypi_backend if h.platform == "linux_x86_64" else None)


def default_index_has_build(h: Host, release: TorchRelease) -> str | None:
    """With [indexes] torch = "default", PyPI must ship a build of the release for this platform."""
    if not h.from_default:
        return None
    pb = default_index_backend(h, release)
    if any(v.backend == pb and h.platform in v.platforms for v in release.variants):
        return None
    return f"the default index (PyPI) has no build of it for {h.platform}"


def glibc_fits(h: Host, release: TorchRelease) -> str | None:
    """The release's manylinux tag: its glibc floor on this platform (torch.toml glibc)."""
    floor = release.glibc.get(h.platform)
    if floor and h.target.glibc and _v(h.target.glibc) < _v(floor):
        return f"wheels need glibc >= {floor}; this target has {h.target.glibc}"
    return None


def build_glibc_fits(h: Host, release: TorchRelease, v: Variant) -> str | None:
    """One build's own glibc floor, where it differs from the release's (torch.toml variant glibc)."""
    floor = release.glibc_for(h.platform, v.backend)
    if floor and h.target.glibc and _v(h.target.glibc) < _v(floor):
        return f"{v.backend} wheels need glibc >= {floor}; this target has {h.target.glibc}"
    return None


# Asked in this order of every torch release; the first reason rules it out (macOS is asked with the Pythons left).
RELEASE_RULES = (release_supports_python, release_has_platform, default_index_has_build, glibc_fits)


def release_problem(h: Host, release: TorchRelease) -> str | None:
    """The first release rule a torch release breaks on this target, or None."""
    return next((why for rule in RELEASE_RULES if (why := rule(h, release))), None)


def macos_pythons(h: Host, release: TorchRelease, pythons: list[str]) -> list[str]:
    """The Pythons whose macOS wheels install on the stated macOS (all of them when none is stated)."""
    if h.target.os != "macos" or not release.macos.get(h.platform) or not h.target.macos:
        return pythons
    mac = _v(h.target.macos)
    return [p for p in pythons if _v(release.macos_floor(h.platform, p) or "0") <= mac]


def macos_fits(h: Host, release: TorchRelease, pythons: list[str]) -> str | None:
    """The wheels' macosx_X_Y tag is the least macOS they install on (torch.toml macos, per Python where it
    differs): a stated macOS below it rules the release out."""
    if not pythons or macos_pythons(h, release, pythons):
        return None
    need = min((release.macos_floor(h.platform, p) or "0" for p in pythons), key=_v)
    return f"its macOS wheels need macOS >= {need}; this target has {h.target.macos}"


# --- one build (variant) of a release on this target's driver and GPUs -----------------------------------------

def build_wanted(h: Host, v: Variant) -> bool:
    """Whether the intent's cuda asks for this build at all (not a reason: the search filters with it)."""
    cuda = h.intent.cuda
    if not (v.backend == "cpu" or v.backend.startswith("cu")):
        return False
    if cuda == "auto" and not h.gpu and h.from_default:
        return True  # PyPI's one build runs on the CPU too, whatever CUDA it carries
    if cuda == "cpu" or (cuda == "auto" and not h.gpu):
        return v.backend == "cpu"
    if cuda == "auto":
        return v.cuda is not None
    if cuda.startswith("cu"):
        return v.backend == cuda
    return v.cuda is not None and Version(v.cuda) in SpecifierSet(cuda)


def driver_floor_for(h: Host, v: Variant) -> str | None:
    """The least driver that runs build v under the intent's policy, as this target's driver is numbered."""
    if v.cuda is None or h.target.driver is None:
        return None
    return h.floor(h.matrix.driver_floor(v.cuda, h.target.os, h.intent.cuda_policy))


def build_needs_no_driver(h: Host, v: Variant) -> str | None:
    """A CUDA build on a target with no NVIDIA driver: only where the default index's one build is taken to run
    on the CPU."""
    if v.cuda is None or h.target.driver is not None:
        return None
    if h.from_default and h.intent.cuda == "auto":
        return None
    return f"{v.backend} needs an NVIDIA driver; this target has none"


def driver_runs_cuda(h: Host, v: Variant) -> str | None:
    """The driver runs the build's CUDA: at or above the floor of the policy (cuda.toml: the toolkit's release
    driver, or its major's minor-version-compatibility floor)."""
    if v.cuda is None or h.target.driver is None:
        return None
    policy = h.intent.cuda_policy
    floor = driver_floor_for(h, v)
    if floor is None:
        return f"CUDA {v.cuda} is not in the matrix's driver table"
    if _v(h.target.driver) < _v(floor):
        return f"CUDA {v.cuda} needs driver >= {floor} ({policy} policy)"
    return None


def strict_cuda_fits(h: Host, v: Variant) -> str | None:
    """cuda-policy = "strict": the build's CUDA is no newer than the CUDA the driver supports natively."""
    if v.cuda is None or h.target.driver is None or h.intent.cuda_policy != "strict":
        return None
    max_cuda = h.max_cuda()
    if max_cuda and _v(v.cuda) > _v(max_cuda):
        return f"CUDA {v.cuda} is newer than the CUDA {max_cuda} driver {h.target.driver} supports (strict policy)"
    return None


def gpu_arch_in_build(h: Host, v: Variant) -> str | None:
    """The build carries machine code (or PTX that JITs forward) for every GPU of the target."""
    if v.cuda is None or not h.target.gpus:
        return None
    missing = [cc for cc in h.ccs if gpu_runs(cc, v.archs, v.ptx) is None]
    if not missing:
        return None
    return f"{v.backend} carries code for {arch_range(v.archs)}, not for compute capability {', '.join(missing)}"


def build_problem(h: Host, release: TorchRelease, v: Variant) -> str | None:
    """The first rule a build breaks on this target, or None: the build rules in the order the search asks them."""
    return build_glibc_fits(h, release, v) or next((why for rule in BUILD_RULES if (why := rule(h, v))), None)


# Asked in this order of every build the intent wants (after build_glibc_fits); the first reason rules it out.
BUILD_RULES = (build_needs_no_driver, driver_runs_cuda, strict_cuda_fits, gpu_arch_in_build)


# Warnings that go with a build that runs: not reasons to pass it over, but worth saying.

def build_warnings(h: Host, v: Variant) -> list[str]:
    """What a user should know about running build v here (the default index's CUDA build on a CPU, CUDA
    minor-version compatibility, PTX JIT at first use)."""
    out: list[str] = []
    if v.cuda is None:
        return out
    if h.target.driver is None:
        if h.from_default and h.intent.cuda == "auto":
            out.append(f"the default index's torch is the {v.backend} build: on this target without an "
                       "NVIDIA driver it runs on the CPU and its CUDA libraries go unused")
    max_cuda = h.max_cuda() if h.target.driver is not None else None
    if h.intent.cuda_policy != "strict" and max_cuda and _v(v.cuda) > _v(max_cuda):
        out.append(f"{v.backend} runs on driver {h.target.driver} (CUDA {max_cuda}) through CUDA minor-version "
                   f"compatibility: torch's own kernels work; code that needs a newer driver (PTX "
                   f"newer than {max_cuda}, some cuda-python features) does not")
    if h.target.gpus:
        for cc in h.ccs:
            if gpu_runs(cc, v.archs, v.ptx) == "ptx":
                out.append(f"GPU {cc} has no machine code in {v.backend}; its kernels are JIT-compiled from PTX "
                           f"at first use (slow first start)")
    return out


# --- Triton on this target -----------------------------------------------------------------------------------

def triton_in_spec(h: Host, pin: str) -> str | None:
    """The triton torch pins is inside the intent's triton specifier."""
    want = h.intent.triton
    if want in ("auto", "none") or Version(pin) in SpecifierSet(want):
        return None
    return f"pins triton {pin}, outside triton = {want!r}"


def triton_source_reason(h: Host, release: TorchRelease, v: Variant, pin: str) -> str:
    """Where a build's triton comes from when PyTorch's index for it publishes none (meta.toml
    triton_from_default: the cpu backend), and why."""
    return (f"triton {pin}: the version torch {release.version}'s CUDA wheels require, kept for Triton's interpreter "
            f"(its {v.backend} wheels require no triton); it comes from the default index, not PyTorch's "
            f"{v.backend} index, which publishes no triton (compat/meta.toml triton_from_default) — pinned to that "
            "version and locked by hash")


def triton_wheel_for_python(h: Host, tr: TritonRelease) -> str | None:
    """Triton publishes a wheel for the target's Python (triton.toml python)."""
    if h.python[0].isdigit() and tr.python and h.python not in tr.python:
        return f"its triton {tr.version} publishes no wheel for Python {h.python}"
    return None


def triton_wheel_for_platform(h: Host, tr: TritonRelease) -> str | None:
    """Triton publishes wheels for this platform (triton.toml platforms)."""
    if h.platform not in tr.platforms:
        return f"its triton {tr.version} publishes no wheels for {h.platform}"
    return None


def triton_supports_gpu(h: Host, tr: TritonRelease) -> str | None:
    """Triton compiles for every GPU of the target: compute capability >= its min_cc (triton.toml)."""
    low = [cc for cc in h.ccs if cc_tuple(cc) < cc_tuple(tr.min_cc)]
    if not low:
        return None
    return (f"its triton {tr.version} cannot compile for compute capability {', '.join(low)} "
            f"(Triton needs >= {tr.min_cc})")


# What a GPU below 8.0 costs under Triton (triton-lang/triton#5066, "Deprecate MMAv1; fallback to FMA for
# computeCapability < 80"): tl.dot has no tensor-core (mma) path there.
_BELOW_AMPERE = ("tl.dot has no tensor-core (mma) path below 8.0 and falls back to FMA on the CUDA cores, so "
                 "matmul and attention kernels run several times slower than the GPU's tensor cores would, and "
                 "bf16/fp8 kernels fail")


def triton_gpu_warnings(h: Host, tr: TritonRelease) -> list[str]:
    """GPUs Triton compiles for but below its officially supported compute capability, and what that costs."""
    return [f"Triton {tr.version} runs on compute capability {cc} but supports >= {tr.supported_cc} officially: "
            + (_BELOW_AMPERE if cc_tuple(cc) < (8, 0) else "some kernels (tl.dot with bf16/fp8) may fail")
            for cc in h.ccs if cc_tuple(cc) < cc_tuple(tr.supported_cc)]


def triton_windows_gpu_warnings(h: Host, tw: TritonWindowsRelease) -> list[str]:
    """GPUs a triton-windows series does not support (triton.toml triton_windows supported_cc: Turing and Volta
    from the 3.3 series on), and what that costs; the same GPUs get the same word on Linux."""
    if not tw.supported_cc:
        return []
    return [f"triton-windows {tw.version} (the series for torch {tw.torch}) does not support compute capability "
            f"{cc} (it supports >= {tw.supported_cc}; triton-windows<3.3, torch 2.6, is the last series for "
            f"Turing and Volta): " + (_BELOW_AMPERE if cc_tuple(cc) < (8, 0) else "some kernels may fail")
            for cc in h.ccs if cc_tuple(cc) < cc_tuple(tw.supported_cc)]


def ptxas_driver_floor(h: Host, cuda: str) -> str | None:
    """The least driver that loads code from a ptxas of CUDA `cuda`, as this target's driver is numbered (its
    major's minor-version-compatibility floor); None when the matrix has none."""
    floor = h.matrix.ptxas_floor(cuda, h.target.os)
    return (h.floor(floor[0]) or floor[0]) if floor else None


def ptxas_loads_on_driver(h: Host, cuda: str) -> str | None:
    """The driver loads the cubins Triton's bundled ptxas (CUDA `cuda`) makes: at or above its major's
    minor-version-compatibility floor."""
    need = ptxas_driver_floor(h, cuda)
    if need is None or h.target.driver is None or _v(h.target.driver) >= _v(need):
        return None
    major = cuda.split(".")[0]
    return f"whose kernels need driver >= {need} (CUDA {major}.x minor-version compatibility)"


def ptxas_knows_gpu(h: Host, cuda: str, cc: str) -> str | None:
    """Triton's bundled ptxas (CUDA `cuda`) must know the GPU's architecture, not only make code the driver loads:
    a ptxas older than the first toolkit that supports the architecture (gpus.toml first_cuda: 12.9 for sm_103
    and sm_121, 13.0 for sm_110) rejects it ("Unknown target"), and every Triton kernel fails to compile."""
    g = h.matrix.gpu_family(cc)
    if g is None or g.first_cuda is None:
        return None
    have = ".".join(cuda.split(".")[:2])
    if _v(have) >= _v(g.first_cuda):
        return None
    return f"which does not know {sm(cc)} (CUDA {g.first_cuda} is the first toolkit that compiles for it)"


def ptxas_uses(h: Host, row: Ptxas) -> dict[tuple[str, str, str], list[str]]:
    """(binary, CUDA version, override variable) -> the target's GPUs Triton compiles with it ('?' without GPUs)."""
    uses: dict[tuple[str, str, str], list[str]] = {}
    for cc in h.ccs or ["?"]:
        key = row.for_cc(cc) if cc != "?" else ("ptxas", row.ptxas, "TRITON_PTXAS_PATH")
        uses.setdefault(key, []).append(cc)
    return uses


def triton_windows_wheel_for_python(h: Host, tw: TritonWindowsRelease) -> str | None:
    """triton-windows publishes a wheel of the series for the target's Python (triton.toml triton_windows)."""
    if h.python[0].isdigit() and h.python not in tw.python:
        return (f"triton-windows {tw.version} (the series for torch {tw.torch}) publishes no wheel for Python "
                f"{h.python}")
    return None


def triton_windows_in_spec(h: Host, tw: TritonWindowsRelease, row: Ptxas) -> str | None:
    """The triton-windows build that goes with the torch is inside the intent's triton specifier."""
    want = h.intent.triton
    if want in ("auto", "none") or SpecifierSet(want).contains(Version(row.version), prereleases=True):
        return None
    return f"goes with triton-windows {tw.version}, outside triton = {want!r}"
