"""Plain frozen objects that cross module boundaries (no dicts, no click objects)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any



@dataclass(frozen=True, kw_only=True, slots=True)
class Gpu:
    """One visible NVIDIA GPU."""

    index: int
    name: str
    cc: str  # compute capability "major.minor", e.g. "9.0"
    memory_mib: int | None = None
    uuid: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class TargetSpec:
    """A machine to lock for: from intent [[targets]], a saved host profile, or the detected host."""

    name: str
    os: str  # "linux" | "windows" | "macos"
    arch: str  # "x86_64" | "aarch64" | "arm64"
    glibc: str | None = None  # linux only; None = unknown (assume the matrix floor is met)
    python: str | None = None  # "3.12" or a specifier; None = intent's [environment].python
    driver: str | None = None  # NVIDIA driver version; None = no driver (CPU target)
    cuda: str | None = None  # max CUDA the driver reports ("13.0"); derived from the driver when None
    gpus: tuple[str, ...] = ()  # compute capabilities, one per GPU
    origin: str = "intent"  # "intent" | "host" | "file:<path>"
    macos: str | None = None  # macos targets: the macOS version ("14.5"); None = not stated (the wheels' floor)
    # AMD targets (gpus are gfx names, "gfx942"): the amdgpu kernel-driver release ("6.4", "30.10") or the DKMS
    # module version ("6.12.12"); None = not stated (not checked). hsa_override: HSA_OVERRIDE_GFX_VERSION as an
    # explicit opt-in ("11.0.0"): the GPU runs the code of that gfx target instead of its own.
    amdgpu: str | None = None
    hsa_override: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class VendorGpu:
    """One visible AMD or Intel GPU."""

    index: int
    vendor: str  # "amd" | "intel"
    target: str  # "gfx942" (AMD gfx target) | "pvc" (Intel AOT device name)
    name: str = ""
    pci: str | None = None  # "0000:03:00.0"


@dataclass(frozen=True, kw_only=True, slots=True)
class HostProfile:
    """What host detection found; `probes` says how each fact was learned."""

    os: str
    arch: str
    python: str  # full version of the running interpreter, "3.12.3"
    glibc: str | None = None
    driver: str | None = None
    cuda_driver: str | None = None  # max CUDA version the driver supports, "13.0"
    gpus: tuple[Gpu, ...] = ()
    nvcc: str | None = None  # CUDA toolkit on PATH, "13.0"
    container: str | None = None  # "docker" | "podman" | "kubernetes" | ... | None
    wsl: bool = False
    probes: tuple[str, ...] = ()  # e.g. ("driver: nvml", "gpus: nvidia-smi")
    warnings: tuple[str, ...] = ()
    macos: str | None = None  # the macOS version on a Mac, "14.5"
    vendor_gpus: tuple[VendorGpu, ...] = ()  # AMD and Intel GPUs (KFD, rocminfo, amd-smi, PCI)
    amdgpu: str | None = None  # amdgpu kernel module version (/sys/module/amdgpu/version), "6.12.12"
    rocm: str | None = None  # /opt/rocm/.info/version, "6.4.1-120" -> "6.4.1"
    hsa_override: str | None = None  # HSA_OVERRIDE_GFX_VERSION as set in the environment
    kfd: str | None = None  # /dev/kfd (ROCm's compute device): "ok" | "missing" | "denied"; None off Linux
    kfd_group: str | None = None  # the group that owns /dev/kfd ("render"), when it exists


@dataclass(frozen=True, kw_only=True, slots=True)
class PackageBuilds:
    """A package's own per-CUDA builds on an index of its own (compat/packages.toml, [[package-builds]])."""

    name: str
    index: str  # template: {version}, {cuda}, {torch}
    cuda: tuple[str, ...]  # "cu129"
    flat: bool = False  # a page of links (pip's find-links), not a PEP 503 index
    inferred: str = ""  # what the row rests on that no source states ("" when all of it is read)
    source: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Intent:
    """triton-env.toml, validated."""

    path: str
    python: str | None = None  # version or specifier; None = the running interpreter's minor
    torch: str = ""  # PEP 440 specifier; "" = any
    triton: str = "auto"  # "auto" | "none" | a specifier
    packages: tuple[str, ...] = ()  # extra requirements (PEP 508 strings)
    cuda: str = "auto"  # "auto" | "cpu" | "cu126" | a specifier on the CUDA version (">=12.4")
    cuda_policy: str = "compatible"  # "compatible" | "strict"
    torch_index: str | None = None  # template with {backend}
    default_index: str | None = None  # None = pip's configuration
    targets: tuple[TargetSpec, ...] = ()
    # [environment].no-build: packages never built from source — (":all:",) for every package, as pip spells it
    no_build: tuple[str, ...] = ()
    content_hash: str = ""  # "sha256:<hex>" of the canonical intent
    target_files: tuple[str, ...] = ()  # target-files globs (relative to the intent); their targets are in targets
    warnings: tuple[str, ...] = ()  # worth saying, not wrong (two targets describing the same machine)
    channel: str = "release"  # "release" | "nightly" | "test": which of PyTorch's indexes torch comes from
    package_builds: tuple[PackageBuilds, ...] = ()  # [[package-builds]]: per-CUDA builds of packages, by index
    # [environment].optional-gpu-code: packages whose kernels are for some GPUs only, called only there (normalized)
    optional_gpu_code: tuple[str, ...] = ()
    # [environment].allow-unchecked-native: true (every package), or the packages whose wheels may be locked with
    # their native code unchecked where their binary facts cannot be read (else resolve fails, exit 4)
    allow_unchecked_native: bool | tuple[str, ...] = False
    # [environment].imports: top-level modules the user imports beside their packages' own (a wheel's second package,
    # an optional part): the native-code rule judges them as it judges the packages' own
    imports: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class Conflict:
    """Why nothing fits a target, in words a user can act on."""

    target: str
    message: str
    facts: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class DirectPackage:
    """A package the user named, as the decision locked it: its newest release, and what held it below that."""

    name: str  # normalized (PEP 503)
    requirement: str  # as the intent wrote it, "vllm>=0.30"
    version: str | None = None  # locked
    newest: str | None = None  # the newest release on its index that the requirement admits; None = unknown
    held_by: str | None = None  # why the locked version is not the newest, in words; None when it is


@dataclass(frozen=True, kw_only=True, slots=True)
class Selection:
    """The resolver's decision for one target (ok) or its conflict (not ok)."""

    target: TargetSpec
    ok: bool
    python: str | None = None  # "3.12"
    torch: str | None = None  # public version, "2.11.0"
    backend: str | None = None  # "cu130" | "cpu"
    index: str | None = None  # where the torch family comes from
    triton_package: str | None = None  # "triton" | "triton-windows" | None
    triton: str | None = None  # version the lock holds
    packages: tuple[str, ...] = ()  # extra requirements carried from the intent
    driver_floor: str | None = None  # the least driver the chosen backend runs on under the policy
    archs: tuple[str, ...] = ()  # SM archs with machine code in the build, "sm_90"
    ptx: tuple[str, ...] = ()  # archs with PTX embedded (JIT-able on newer GPUs)
    warnings: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    conflict: Conflict | None = None
    direct: tuple[DirectPackage, ...] = ()  # the user's packages as locked (tritonlock.decide.packages decides them)


@dataclass(frozen=True, kw_only=True, slots=True)
class LockPlan:
    """What the decision hands the lock stage for one compile of one ok selection, complete: the lock carries it out
    and asks the matrix nothing (tritonlock.decide.lockplan builds it from the selection and compat/)."""

    selection: Selection
    # The torch releases that fit the target, as a specifier: the user's packages decide torch among them (None:
    # the selection's own torch and triton are locked).
    torch_spec: str | None = None
    glibc_floor: str | None = None  # the build's glibc floor: the platform uv resolves for when the target states none
    macos: str | None = None  # the MACOSX_DEPLOYMENT_TARGET uv resolves a macos target for (None: uv's own)
    # Names always taken from the selection's torch index (the torch family, compat/meta.toml; triton only where
    # that backend's index publishes it).
    torch_bound: frozenset[str] = frozenset()
    # Names bound to the torch index where it serves them, else from the default index with a note (the wider
    # family: compat/meta.toml torch_index_packages).
    torch_served: frozenset[str] = frozenset()
    # For a rocm* build: name patterns only its torch index may serve (the ROCm SDK, compat/rocm.toml [binding]
    # rocm_only), and patterns bound to it wherever it serves them (rocm_served).
    rocm_only: tuple[str, ...] = ()
    rocm_served: tuple[str, ...] = ()
    # What a Triton no requirement asked for may be, if another package pulls it in (PEP 508 constraints).
    triton_constraints: tuple[str, ...] = ()
    triton_owners: tuple[str, ...] = ()  # distributions that install the top-level triton/ package (one per lock)


@dataclass(frozen=True, kw_only=True, slots=True)
class Wheel:
    """One file of a locked package (PEP 751 [[packages.wheels]])."""

    name: str  # file name
    url: str
    sha256: str
    size: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class LockedPackage:
    """One pinned distribution of a target, bound to exactly one index."""

    name: str  # normalized (PEP 503)
    version: str  # including any local tag, "2.11.0+cu130"
    index: str
    wheels: tuple[Wheel, ...] = ()
    sdist: Wheel | None = None
    # "source": no wheel fits the target, so sync builds the sdist (None: installed from a wheel).
    build: str | None = None
    # What that build needs beyond Python: "torch" (its build imports torch: built without isolation against the
    # locked torch, after it), "nvcc" (compiles CUDA code), "compiler" (a C/C++ compiler). See tritonlock/lock/builds.py.
    build_needs: tuple[str, ...] = ()
    build_why: str | None = None  # where those needs were read: the sdist's pyproject/setup.py, or compat/builds.toml
    # Why this package comes from the index it does where that is not the rule (a torch-index family member the
    # backend's index does not serve comes from the default index), or what it is there for (a build requirement).
    note: str | None = None
    # The locked packages this one requires on its target (Requires-Dist whose markers hold there, extras included),
    # by name: the edges of `tritonlock tree` (lock-version 3.1). None: not recorded (an older lock, or METADATA that
    # could not be read when the lock was written).
    dependencies: tuple[str, ...] | None = None

    @property
    def direct(self) -> bool:
        """A direct reference (`pkg @ https://…/pkg-1.0-….whl`): its one file is its index — no index page lists it."""
        return any(f.url == self.index for f in (*self.wheels, *((self.sdist,) if self.sdist else ())))


@dataclass(frozen=True, kw_only=True, slots=True)
class LockedTarget:
    """A target in the lock: what it was resolved for, what was decided, and its packages."""

    selection: Selection
    packages: tuple[LockedPackage, ...] = ()

    @property
    def name(self) -> str:
        return self.selection.target.name


@dataclass(frozen=True, kw_only=True, slots=True)
class NativeMember:
    """One shared object in a wheel: an extension module (imported by Python) or a library it loads."""

    path: str  # "vllm/_C.abi3.so", as in the wheel
    extension: bool
    needed: tuple[str, ...] = ()  # DT_NEEDED sonames
    torch_abi: str = ""  # "" (links no torch), "stable" (torch's stable C ABI) or "cxx" (torch's C++ API)
    sm: tuple[str, ...] = ()  # "sm_80", "sm_90a": cubins
    ptx: tuple[str, ...] = ()  # "compute_90": PTX the driver can JIT
    gfx: tuple[str, ...] = ()  # "gfx942": AMD code objects
    gpu: str = "none"  # "read" (sm/ptx/gfx are what it carries), "none" (it links no GPU library), or why not read
    # the shared libraries its read-only strings name ("libcublas.so.12"), beside DT_NEEDED: what it may dlopen by name
    # (inferred: a name in its strings is not proof of a call)
    dlopen: tuple[str, ...] = ()
    # its undefined symbols of torch's C++ API (c10::, at::, torch::, caffe2::; mangled, sorted), for a "cxx" module:
    # checked against the exports of the torch it is locked with (kept per sha256; not written into the lock)
    torch_symbols: tuple[str, ...] = ()

    @property
    def module(self) -> str | None:
        """The module name Python imports it as ("vllm._C"), for an extension module."""
        if not self.extension:
            return None
        parts = self.path.split("/")
        if any(p.endswith((".data", ".libs", ".dist-info")) for p in parts[:-1]):
            return None
        base = parts[-1].split(".", 1)[0]
        return ".".join([*parts[:-1], base]) if base.isidentifier() else None


@dataclass(frozen=True, kw_only=True, slots=True)
class NativeFacts:
    """What one wheel file's native code needs and brings; `problem` says what could not be read."""

    sha256: str
    filename: str
    provides: tuple[str, ...] = ()  # the file names of every shared object in the wheel (what its loader finds)
    members: tuple[NativeMember, ...] = ()
    built_for_torch: str | None = None  # "2.9": its METADATA's exact torch pin, its local label or file name
    source: str = ""  # where the facts were read
    problem: str | None = None
    names_only: bool = False  # only what the wheel brings was read (a provider's: torch's, NVIDIA's libraries)
    # the import names the wheel installs (top-level packages and modules: its top_level.txt, else its file names);
    # () where not read (facts of an older reader: every member is then judged as reached)
    tops: tuple[str, ...] = ()
    # (top-level name, a top-level name its __init__ imports at package import): what importing one part loads of
    # another (of this wheel or another's), read from the package's Python
    imports: tuple[tuple[str, str], ...] = ()
    # the extension modules (member paths) the package loads only inside a `try` that catches their failure, read
    # from its Python (pysource.guarded_loads): one that cannot load here leaves the import working without it
    guarded: tuple[str, ...] = ()

    @property
    def native(self) -> bool:
        return bool(self.members)

    def to_json(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> NativeFacts:
        members = tuple(NativeMember(path=m["path"], extension=bool(m["extension"]), needed=tuple(m.get("needed", ())),
                               torch_abi=m.get("torch_abi", ""), sm=tuple(m.get("sm", ())),
                               ptx=tuple(m.get("ptx", ())), gfx=tuple(m.get("gfx", ())), gpu=m.get("gpu", "none"),
                               dlopen=tuple(m.get("dlopen", ())), torch_symbols=tuple(m.get("torch_symbols", ())))
                        for m in d.get("members", []))
        return cls(sha256=d["sha256"], filename=d["filename"], provides=tuple(d.get("provides", [])),
                   members=members, built_for_torch=d.get("built_for_torch"), source=d.get("source", ""),
                   problem=d.get("problem"), names_only=bool(d.get("names_only")), tops=tuple(d.get("tops", ())),
                   imports=tuple((str(a), str(b)) for a, b in d.get("imports", ())),
                   guarded=tuple(str(g) for g in d.get("guarded", ())))


@dataclass(frozen=True, kw_only=True, slots=True)
class Lock:
    """triton-env.lock."""

    lock_version: str
    created_by: str
    intent_hash: str
    matrix_version: str
    default_index: str
    targets: tuple[LockedTarget, ...] = field(default_factory=tuple)
    input_digest: str = ""  # raw intent bytes + matrix version + machine: the no-change fast path
    inputs_from: str = ""  # "intent" | "host" | "file": where the targets came from
    native: tuple[NativeFacts, ...] = ()  # the binary facts of the locked wheels with native code, by sha256 (2.2)
