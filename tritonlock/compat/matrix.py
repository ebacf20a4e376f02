"""Load the curated compatibility data in compat/ into a Matrix and answer questions about it."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from tritonlock import _toml
from tritonlock._archs import cc_tuple, gpu_runs
from tritonlock.errors import MatrixError

PLATFORMS = ("linux_x86_64", "linux_aarch64", "win_amd64", "macos_arm64", "macos_x86_64")
FILES = ("meta.toml", "cuda.toml", "torch.toml", "triton.toml", "gpus.toml")


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


@dataclass(frozen=True, kw_only=True, slots=True)
class Matrix:
    version: str
    cuda: tuple[CudaToolkit, ...]
    minor_compat: tuple[MinorCompat, ...]
    torch: tuple[TorchRelease, ...]  # newest first
    triton: tuple[TritonRelease, ...]
    triton_windows: tuple[TritonWindowsRelease, ...]
    gpus: tuple[GpuModel, ...]
    torch_index_template: str  # "https://download.pytorch.org/whl/{backend}"
    torch_family: frozenset[str]  # package names bound to the torch index
    ptxas: tuple[Ptxas, ...] = ()
    # Backends whose PyTorch index does not publish triton (their torch wheels do not require it): triton is
    # bound to the default index, where triton-lang publishes it, for these.
    triton_from_default: frozenset[str] = frozenset()
    # The wider family PyTorch's per-backend indexes serve (xformers, torchao, torchcodec, fbgemm-gpu…): bound to
    # the torch index where that backend's index has the package, else from the default index with a note.
    torch_index_packages: frozenset[str] = frozenset()

    def bound_to_torch_index(self, name: str, backend: str | None) -> bool:
        """Whether package `name` comes from the torch index (else the default index) for `backend`."""
        if name == "triton" and backend in self.triton_from_default:
            return False
        return name in self.torch_family

    def served_by_torch_index(self, name: str) -> bool:
        """Whether PyTorch's per-backend indexes publish `name` for some backend (compat/meta.toml)."""
        return name in self.torch_index_packages

    def ptxas_build(self, package: str, version: str, platform: str) -> Ptxas | None:
        """The bundled-compiler facts of one wheel; for a specifier (triton-windows series) the newest in it."""
        rows = [p for p in self.ptxas if p.package == package and p.platform == platform]
        exact = _public(version) if not version[:1] in "<>=!~" else None
        if exact is not None:
            return next((p for p in rows if _public(p.version) == exact), None)
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            spec = SpecifierSet(version)
        except InvalidSpecifier:
            return None
        inside = [p for p in rows if (v := _public(p.version)) is not None and spec.contains(v, prereleases=False)]
        return max(inside, key=lambda p: Version(p.version), default=None)

    def ptxas_floor(self, cuda: str, os: str = "linux") -> tuple[str, MinorCompat] | None:
        """Least driver that loads code from a ptxas of CUDA `cuda` ("13.1.80"): its major's minor-version floor."""
        major = int(cuda.split(".")[0])
        mc = next((m for m in self.minor_compat if m.major == major), None)
        if mc is None:
            return None
        floor = mc.linux_driver if os == "linux" else mc.windows_driver
        return (floor, mc) if floor else None

    def torch_release(self, version: str) -> TorchRelease | None:
        want = _public(version)
        return next((r for r in self.torch if want is not None and Version(r.version) == want), None)

    def toolkit(self, cuda: str) -> CudaToolkit | None:
        minor = ".".join(cuda.split(".")[:2])  # "12.6.3" is a 12.6 toolkit
        return next((t for t in self.cuda if t.version == minor), None)

    def max_cuda_for_driver(self, driver: str, os: str = "linux", by_branch: bool = False) -> str | None:
        """Newest toolkit whose release driver is <= driver (what the driver supports natively); by_branch for a
        Tegra driver, numbered by branch ("580.00" is the R580 driver that CUDA 13.0 ships with)."""
        have = _public(branch_floor(driver) if by_branch else driver)
        if have is None:
            return None
        fits = [t for t in self.cuda if (d := _driver(t, os)) is not None
                and Version(branch_floor(d) if by_branch else d) <= have]
        return max(fits, key=lambda t: Version(t.version)).version if fits else None

    def branch_release(self, branch: str, os: str = "linux") -> tuple[str, str] | None:
        """A driver given by branch alone ("535": R535) as the first release of that branch that NVIDIA's Table 3
        lists, and the CUDA it came with (("535.54.03", "12.2")); None when no toolkit shipped with that branch."""
        rows = [(d, t.version) for t in self.cuda if (d := _driver(t, os)) is not None
                and d.split(".")[0] == branch.strip()]
        return min(rows, key=lambda r: Version(r[0])) if rows else None

    def driver_floor(self, cuda: str, os: str = "linux", policy: str = "compatible") -> str | None:
        """Least driver that runs a build for `cuda` under `policy` ("compatible" | "strict")."""
        if policy not in ("compatible", "strict"):
            raise ValueError(f"policy must be 'compatible' or 'strict', not {policy!r}")
        tk = self.toolkit(cuda)
        strict = _driver(tk, os) if tk else None
        major = int(cuda.split(".")[0])
        mc = next((m for m in self.minor_compat if m.major == major), None)
        compat = (mc.linux_driver if os == "linux" else mc.windows_driver) if mc else None
        if policy == "strict":
            # Table 3 lists no Windows driver from CUDA 13.1 on ("N/A": the toolkit no longer bundles one): the
            # floor is then the major's, and strict's other half — the build's CUDA <= the CUDA the driver reports
            # (nvidia-smi) — decides.
            return strict or (compat if tk is not None and os == "windows" else None)
        if compat is None or strict is None:
            return (strict or compat) if tk else None
        # Minor-version compatibility never asks for more than the toolkit's own driver.
        return min(compat, strict, key=Version)

    def triton_release(self, version: str) -> TritonRelease | None:
        want = _public(version)
        return next((t for t in self.triton if want is not None and Version(t.version) == want), None)

    def triton_windows_for(self, torch: str) -> TritonWindowsRelease | None:
        minor = ".".join(torch.split("+")[0].split(".")[:2])
        return next((t for t in self.triton_windows if t.torch == minor), None)

    def gpu_cc(self, name: str) -> str | None:
        """Compute capability for a GPU name like "A100" or "NVIDIA GeForce RTX 4090"."""
        words = _words(name)
        best: tuple[int, GpuModel] | None = None
        present = set(words)
        for known, size, gpu in _gpu_words(self.gpus):
            if known[0] in present and _contains(words, known) and (best is None or size > best[0]):
                best = (size, gpu)
        return best[1].cc if best else None

    def nearest_gpu(self, name: str) -> GpuModel | None:
        """The known GPU a name that gpu_cc does not know most likely means ("RTX4090" → "RTX 4090"): the same
        letters and digits without spaces, else the closest spelling; None when nothing is close."""
        import difflib

        def squeeze(text: str) -> str:
            return "".join(_words(text)).replace("O", "0")  # a letter O typed for a zero: "A10O"

        want = squeeze(name)
        if not want:
            return None
        by = {squeeze(g.name): g for g in self.gpus}
        if want in by:
            return by[want]
        close = difflib.get_close_matches(want, list(by), n=1, cutoff=0.75)
        return by[close[0]] if close else None

    def gpu_family(self, cc: str) -> GpuModel | None:
        """The gpus.toml row of a compute capability (every name in a row shares its facts); None when unknown."""
        return next((g for g in self.gpus if g.cc == cc), None)

    def gpu_driver_floor(self, cc: str, os: str = "linux") -> tuple[str, GpuModel] | None:
        """The least driver that knows a GPU of compute capability `cc`: the release driver (Table 3) of the first
        toolkit that supports its architecture (gpus.toml first_cuda); None when the matrix sets no floor."""
        g = self.gpu_family(cc)
        tk = self.toolkit(g.first_cuda) if g is not None and g.first_cuda else None
        d = _driver(tk, os) if tk is not None else None
        return (d, g) if d is not None and g is not None else None

    def jetpack_only(self, cc: str) -> GpuModel | None:
        """The integrated (Jetson) GPU with this compute capability, when only JetPack wheels serve it."""
        return next((g for g in self.gpus if g.cc == cc and g.wheels == "jetpack"), None)

    def index_url(self, backend: str) -> str:
        return self.torch_index_template.format(backend=backend)


def load_matrix(path: str | None = None) -> Matrix:
    """Load compat/ (the shipped copy when path is None); MatrixError names file and key on bad data."""
    return _load_default() if path is None else _load(Path(path))


def _default_root() -> Path:
    from tritonlock._data import compat_root

    root = compat_root()
    if root is None:
        raise MatrixError(f"no compat data next to {Path(__file__).parents[1]} (looked for _compat_data/ and "
                          "../compat/) — reinstall tritonlock")
    return root


def cache_path(root: Path) -> Path | None:
    """Where the parsed matrix is cached: keyed by the bytes of every data file and of the code that
    builds the objects, so any edit to either invalidates it (None when a file cannot be read)."""
    import hashlib
    import os

    from tritonlock.compat import _matrix_cache

    digest = hashlib.sha256()
    for path in (Path(__file__), Path(_matrix_cache.__file__), *(root / name for name in FILES)):
        try:
            digest.update(path.read_bytes())
        except OSError:
            return None
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache_home) / "tritonlock" / f"matrix-{digest.hexdigest()[:32]}.json"


@functools.lru_cache(maxsize=1)
def _load_default() -> Matrix:
    # Parsing ~100 KB of TOML costs more than the rest of a resolve: keep the validated Matrix in the
    # user's cache as plain JSON — data only, so a planted file can never run code; one we did not
    # write (another owner, writable by others, or not exactly a Matrix) is ignored and rebuilt.
    from tritonlock.compat import _matrix_cache

    root = _default_root()
    cache = cache_path(root)
    if cache is None:
        return _load(root)
    cached = _matrix_cache.read(cache, Matrix)
    if cached is not None:
        return cached
    matrix = _load(root)
    _matrix_cache.write(cache, matrix)
    return matrix


# --- parsing -----------------------------------------------------------------------------------------------

_BACKEND = re.compile(r"^(cpu|cu[0-9]{3}|rocm[0-9]+(\.[0-9]+)*|xpu)\Z")
_CUDA = re.compile(r"^[0-9]+\.[0-9]+\Z")
_DRIVER = re.compile(r"^[0-9]+\.[0-9]+(\.[0-9]+)?\Z")
_PY = re.compile(r"^3\.[0-9]+\Z")
_PYT = re.compile(r"^3\.[0-9]+t\Z")
_ARCH = re.compile(r"^sm_[0-9]+\Z")
_CC = re.compile(r"^[0-9]+\.[0-9]\Z")
_GLIBC = re.compile(r"^2\.[0-9]+\Z")
_TOOLKIT = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+\Z")
_MACOS = re.compile(r"^[0-9]{2}\.[0-9]+\Z")


class _Row:
    """One TOML table being read: typed getters that record problems under the row's key path."""

    def __init__(self, data: dict[str, Any], where: str, file: str, problems: list[str]) -> None:
        self.data, self.where, self.file, self.problems = data, where, file, problems
        self.seen: set[str] = set()

    def bad(self, key: str, what: str) -> None:
        self.problems.append(f"{self.file}: {self.where}.{key}: {what} — fix the row")

    def get(self, key: str, check: re.Pattern[str] | Callable[[str], bool] | None, like: str,
            required: bool = True) -> str | None:
        self.seen.add(key)
        if key not in self.data:
            if required:
                self.bad(key, f"missing (expected a string like {like!r})")
            return None
        val = self.data[key]
        ok = isinstance(val, str) and (check is None or (check.match(val) if isinstance(check, re.Pattern) else check(val)))
        if not ok:
            self.bad(key, f"expected a string like {like!r}, got {val!r}")
            return None
        return str(val)

    def integer(self, key: str, like: int) -> int | None:
        self.seen.add(key)
        val = self.data.get(key)
        if not isinstance(val, int) or isinstance(val, bool):
            self.bad(key, f"expected an integer like {like}, got {val!r}")
            return None
        return val

    def boolean(self, key: str) -> bool:
        """An optional true/false (absent: false)."""
        self.seen.add(key)
        val = self.data.get(key, False)
        if not isinstance(val, bool):
            self.bad(key, f"expected true or false, got {val!r}")
            return False
        return val

    def strings(self, key: str, check: re.Pattern[str] | Callable[[str], bool], like: str,
                required: bool = True) -> tuple[str, ...]:
        self.seen.add(key)
        val = self.data.get(key)
        if val is None and not required:
            return ()
        if not isinstance(val, list) or not all(isinstance(x, str) for x in val) or (required and not val):
            self.bad(key, f"expected a list of strings like [{like!r}], got {val!r}")
            return ()
        wrong = [x for x in val if not (check.match(x) if isinstance(check, re.Pattern) else check(x))]
        if wrong:
            self.bad(key, f"expected entries like {like!r}, got {', '.join(map(repr, wrong))}")
        return tuple(x for x in val if x not in wrong)

    def mapping(self, key: str, value: re.Pattern[str], like: str, required: bool = True) -> dict[str, str]:
        self.seen.add(key)
        val = self.data.get(key)
        if val is None and not required:
            return {}
        if not isinstance(val, dict):
            self.bad(key, f"expected a table like {{ linux_x86_64 = {like!r} }}, got {val!r}")
            return {}
        out: dict[str, str] = {}
        for k, v in val.items():
            if k not in PLATFORMS:
                self.bad(f"{key}.{k}", f"unknown platform (known: {', '.join(PLATFORMS)})")
            elif not isinstance(v, str) or not value.match(v):
                self.bad(f"{key}.{k}", f"expected a string like {like!r}, got {v!r}")
            else:
                out[k] = v
        return out

    def keyed(self, key: str, keys: re.Pattern[str], value: re.Pattern[str], like: str) -> dict[str, str]:
        """An optional table of string -> string whose keys are not platforms: { "3.14" = "14.0" }."""
        self.seen.add(key)
        val = self.data.get(key)
        if val is None:
            return {}
        if not isinstance(val, dict):
            self.bad(key, f"expected a table like {{ \"3.14\" = {like!r} }}, got {val!r}")
            return {}
        out: dict[str, str] = {}
        for k, v in val.items():
            if not keys.match(k):
                self.bad(f"{key}.{k}", "expected a Python minor like \"3.14\" as the key")
            elif not isinstance(v, str) or not value.match(v):
                self.bad(f"{key}.{k}", f"expected a string like {like!r}, got {v!r}")
            else:
                out[k] = v
        return out

    def lists(self, key: str, check: re.Pattern[str], like: str) -> dict[str, tuple[str, ...]]:
        """An optional table of platform -> list of strings: { linux_aarch64 = ["3.12"] }."""
        self.seen.add(key)
        val = self.data.get(key)
        if val is None:
            return {}
        if not isinstance(val, dict):
            self.bad(key, f"expected a table like {{ linux_aarch64 = [{like!r}] }}, got {val!r}")
            return {}
        out: dict[str, tuple[str, ...]] = {}
        for k, v in val.items():
            if k not in PLATFORMS:
                self.bad(f"{key}.{k}", f"unknown platform (known: {', '.join(PLATFORMS)})")
            elif not isinstance(v, list) or not v or not all(isinstance(x, str) and check.match(x) for x in v):
                self.bad(f"{key}.{k}", f"expected a list of strings like [{like!r}], got {v!r}")
            else:
                out[k] = tuple(v)
        return out

    def rows(self, key: str, required: bool = True) -> list[_Row]:
        self.seen.add(key)
        val = self.data.get(key, [] if not required else None)
        if not isinstance(val, list) or not all(isinstance(x, dict) for x in val) or (required and not val):
            self.bad(key, f"expected one or more [[{self.where + '.' if self.where != '' else ''}{key}]] tables, got {val!r}")
            return []
        prefix = f"{self.where}." if self.where else ""
        return [_Row(x, f"{prefix}{key}[{i}]", self.file, self.problems) for i, x in enumerate(val)]

    def source(self, inherited: str | None = None) -> str:
        got = self.get("source", None, "https://...", required=inherited is None)
        if got is not None and not got.strip():
            self.bad("source", "empty — every row names a source a reviewer can open")
        return got or inherited or ""

    def done(self) -> None:
        extra = sorted(set(self.data) - self.seen)
        for key in extra:
            self.bad(key, f"unknown key (known here: {', '.join(sorted(self.seen))})")


# The typed row reader and file reader, for the AMD/Intel rows (tritonlock.compat.matrix_vendor) to read compat/ the same way.
RowReader = _Row


def read_compat_file(root: Path, name: str, problems: list[str]) -> _Row:
    return _read(root, name, problems)


def _is_version(s: str) -> bool:
    return _public(s) is not None


def _index_template_ok(s: str) -> bool:
    """An http(s) URL with {backend} and no other placeholder (str.format would choke on one)."""
    from tritonlock._urls import problem

    rest = s.replace("{backend}", "cu126")
    return "{backend}" in s and "{" not in rest and "}" not in rest and problem(rest) is None


def _read(root: Path, name: str, problems: list[str]) -> _Row:
    label = f"{root.name}/{name}"
    try:
        data = _toml.loads((root / name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        problems.append(f"{label}: missing — the compat data set needs {', '.join(FILES)}")
        data = {}
    except (_toml.TOMLDecodeError, UnicodeDecodeError) as exc:
        line, msg = _toml.decode_error_line(exc)
        problems.append(f"{label}:{line or '?'}: not valid TOML ({msg}) — fix the file")
        data = {}
    return _Row(data, "", label, problems)


def _load(root: Path) -> Matrix:
    problems: list[str] = []
    meta_f, cuda_f, torch_f, triton_f, gpus_f = (_read(root, n, problems) for n in FILES)
    if problems:  # a missing or unparsable file makes every other message noise
        raise MatrixError("\n".join(problems))

    meta_f.seen.add("meta")
    meta = _Row(meta_f.data.get("meta") or {}, "meta", meta_f.file, problems)
    version = meta.get("version", re.compile(r"^[0-9]{4}\.[0-9]{1,2}\.[0-9]{1,2}\Z"), "2026.11.30") or ""
    template = meta.get("torch_index_template", _index_template_ok, "https://.../whl/{backend}") or ""
    family = frozenset(meta.strings("torch_family", re.compile(r"^[a-z0-9][a-z0-9._-]*\Z"), "torch"))
    triton_default = frozenset(meta.strings("triton_from_default", _BACKEND, "cpu", required=False))
    index_pkgs = frozenset(meta.strings("torch_index_packages", re.compile(r"^[a-z0-9][a-z0-9._-]*\Z"), "xformers",
                                        required=False))
    if index_pkgs:
        meta.get("torch_index_packages_source", None, "https://...")
    if triton_default:
        meta.get("triton_from_default_source", None, "https://...")
    meta.source()
    meta.done()
    meta_f.done()

    cuda: list[CudaToolkit] = []
    for row in cuda_f.rows("cuda"):
        v, lin = row.get("version", _CUDA, "12.6"), row.get("linux_driver", _DRIVER, "560.28.03")
        win, src = row.get("windows_driver", _DRIVER, "560.76", required=False), row.source()
        if v and lin:
            cuda.append(CudaToolkit(version=v, linux_driver=lin, windows_driver=win, source=src))
        row.done()
    compat: list[MinorCompat] = []
    for row in cuda_f.rows("minor_compat"):
        major, lin = row.integer("major", 12), row.get("linux_driver", _DRIVER, "525.60.13")
        win, src = row.get("windows_driver", _DRIVER, "527.41", required=False), row.source()
        if major is not None and lin:
            compat.append(MinorCompat(major=major, linux_driver=lin, windows_driver=win, source=src))
        row.done()
    cuda_f.done()
    known_cuda = {t.version for t in cuda}

    releases = [_torch_row(row, known_cuda) for row in torch_f.rows("torch")]
    torch_f.done()

    tritons: list[TritonRelease] = []
    for row in triton_f.rows("triton"):
        v = row.get("version", _is_version, "3.2.0")
        t = TritonRelease(
            version=v or "", python=row.strings("python", _PY, "3.12"),
            free_threaded=row.strings("free_threaded", _PYT, "3.13t", required=False),
            platforms=row.strings("platforms", lambda s: s in PLATFORMS, "linux_x86_64"),
            glibc=row.mapping("glibc", _GLIBC, "2.17"), min_cc=row.get("min_cc", _CC, "7.0") or "",
            supported_cc=row.get("supported_cc", _CC, "8.0") or "", source=row.source())
        row.done()
        if v:
            tritons.append(t)
    windows: list[TritonWindowsRelease] = []
    for row in triton_f.rows("triton_windows"):
        tw = TritonWindowsRelease(
            torch=row.get("torch", re.compile(r"^[0-9]+\.[0-9]+\Z"), "2.6") or "",
            version=row.get("version", None, ">=3.2,<3.3") or "",
            python=row.strings("python", _PY, "3.12"), source=row.source(),
            supported_cc=row.get("supported_cc", _CC, "8.0", required=False) or "")
        row.done()
        windows.append(tw)
    ptxas: list[Ptxas] = []
    for row in triton_f.rows("ptxas", required=False):
        px = Ptxas(
            package=row.get("package", re.compile(r"^triton(-windows)?$"), "triton") or "",
            version=row.get("version", _is_version, "3.9.0") or "",
            platform=row.get("platform", lambda s: s in PLATFORMS, "linux_x86_64") or "",
            ptxas=row.get("ptxas", _TOOLKIT, "12.9.86") or "",
            blackwell=row.get("blackwell", _TOOLKIT, "13.4.59", required=False),
            blackwell_from=row.get("blackwell_from", _CC, "10.0", required=False),
            blackwell_env=row.get("blackwell_env", re.compile(r"^TRITON_PTXAS[-_]BLACKWELL_PATH$"),
                                  "TRITON_PTXAS_BLACKWELL_PATH", required=False),
            source=row.source())
        if px.blackwell and not (px.blackwell_from and px.blackwell_env):
            row.bad("blackwell_from", "a wheel with ptxas-blackwell must say from which compute capability "
                    "Triton uses it (blackwell_from) and its variable (blackwell_env)")
        row.done()
        ptxas.append(px)
    triton_f.done()

    gpus: list[GpuModel] = []
    gpus_f.seen.update(("amd_gpu", "intel_gpu"))  # AMD and Intel names: read by tritonlock.compat.matrix_vendor
    for row in gpus_f.rows("gpu"):
        cc, family_name = row.get("cc", _CC, "8.0"), row.get("family", None, "Ampere", required=False) or ""
        wheels = row.get("wheels", re.compile(r"^jetpack\Z"), "jetpack", required=False) or ""
        names, src = row.strings("names", lambda s: bool(_words(s)), "A100"), row.source()
        first = row.get("first_cuda", _CUDA, "12.8", required=False)
        if first is not None and first not in known_cuda:
            row.bad("first_cuda", f"CUDA {first} is not in cuda.toml — add the toolkit there (its driver is the floor)")
        first_src = row.get("first_cuda_source", None, "https://docs.nvidia.com/cuda/...", required=first is not None) or ""
        last = row.integer("last_branch", 470) if "last_branch" in row.data else None
        last_src = row.get("last_branch_source", None, "https://...", required=last is not None) or ""
        integrated = row.boolean("integrated")
        row.done()
        gpus += [GpuModel(name=n, cc=cc, source=src, family=family_name, wheels=wheels, first_cuda=first,
                          first_cuda_source=first_src, last_branch=last, last_branch_source=last_src,
                          integrated=integrated) for n in names if cc]
    gpus_f.done()

    # Cross-file facts: a pin or a CUDA a row names must exist where it is defined.
    have_triton = {Version(t.version) for t in tritons}
    for i, rel in enumerate(releases):
        if rel.triton and _public(rel.triton) not in have_triton:
            problems.append(f"{torch_f.file}: torch[{i}].triton: {rel.triton} is not in {triton_f.file} — add it there")
    seen: dict[Version, int] = {}
    for i, rel in enumerate(releases):
        if (pv := _public(rel.version)) is not None and seen.setdefault(pv, i) != i:
            problems.append(f"{torch_f.file}: torch[{i}].version: {rel.version} repeats torch[{seen[pv]}] — keep one row")
    by_name: dict[tuple[str, ...], GpuModel] = {}
    for g in gpus:
        other = by_name.setdefault(tuple(_words(g.name)), g)
        if other.cc != g.cc:
            problems.append(f"{gpus_f.file}: gpu name {g.name!r} is listed with cc {other.cc} and {g.cc} — keep one")
    seen_px: set[tuple[str, str, str]] = set()
    for px in ptxas:
        if (px.package, px.version, px.platform) in seen_px:
            problems.append(f"{triton_f.file}: ptxas {px.package} {px.version} {px.platform} is listed twice — keep one")
        seen_px.add((px.package, px.version, px.platform))
    if problems:
        raise MatrixError("\n".join(problems))
    return Matrix(
        version=version, cuda=tuple(sorted(cuda, key=lambda t: Version(t.version))), minor_compat=tuple(compat),
        torch=tuple(sorted(releases, key=lambda r: Version(r.version), reverse=True)),
        triton=tuple(sorted(tritons, key=lambda t: Version(t.version), reverse=True)),
        triton_windows=tuple(windows), gpus=tuple(gpus), torch_index_template=template, torch_family=family,
        ptxas=tuple(ptxas), triton_from_default=triton_default, torch_index_packages=index_pkgs - family)


def _torch_row(row: _Row, known_cuda: set[str]) -> TorchRelease:
    src = row.source()
    variants: list[Variant] = []
    for vr in row.rows("variant"):
        backend = vr.get("backend", _BACKEND, "cu126")
        cuda = vr.get("cuda", _CUDA, "12.6", required=backend is not None and backend.startswith("cu"))
        if backend and backend.startswith("cu") and cuda and backend != "cu" + cuda.replace(".", ""):
            vr.bad("cuda", f"{cuda} does not match backend {backend!r}")
        elif cuda and cuda not in known_cuda:
            vr.bad("cuda", f"CUDA {cuda} is not in cuda.toml — add the toolkit there")
        var = Variant(
            backend=backend or "", cuda=cuda,
            platforms=vr.strings("platforms", lambda s: s in PLATFORMS, "linux_x86_64"),
            archs=vr.strings("archs", _ARCH, "sm_90", required=False),
            ptx=vr.strings("ptx", _ARCH, "sm_120", required=False),
            glibc=vr.mapping("glibc", _GLIBC, "2.28", required=False),
            note=vr.get("note", None, "inferred: ...", required=False) or "", source=vr.source(inherited=src))
        if cuda and not var.archs:
            vr.bad("archs", "a CUDA build must list the SM archs it carries")
        vr.done()
        variants.append(var)
    triton = row.get("triton", _is_version, "3.2.0", required=False)
    rel = TorchRelease(
        version=row.get("version", _is_version, "2.6.0") or "", python=row.strings("python", _PY, "3.12"),
        free_threaded=row.strings("free_threaded", _PYT, "3.13t", required=False), triton=triton,
        triton_requirement=row.get("triton_requirement", re.compile(r"^(==|~=)\S+\Z"), "==3.2.0",
                                   required=False) or (f"=={triton}" if triton else ""),
        triton_platforms=row.strings("triton_platforms", lambda s: s in PLATFORMS, "linux_x86_64", required=False),
        triton_python_below=row.get("triton_python_below", _PY, "3.13", required=False),
        pypi_backend=row.get("pypi_backend", _BACKEND, "cu126", required=False),
        pypi_backends=row.mapping("pypi_backends", _BACKEND, "cu126", required=False),
        glibc=row.mapping("glibc", _GLIBC, "2.28"), variants=tuple(variants), source=src,
        note=row.get("note", None, "inferred: ...", required=False) or "",
        python_by_platform=row.lists("python_by_platform", _PY, "3.12"),
        macos=row.mapping("macos", _MACOS, "14.0", required=False),
        macos_by_python=row.keyed("macos_by_python", _PY, _MACOS, "14.0"),
        stable_cuda=row.strings("stable_cuda", _CUDA, "12.6", required=False),
        experimental_cuda=row.strings("experimental_cuda", _CUDA, "12.8", required=False))
    if rel.stable_cuda or rel.experimental_cuda:
        row.get("cuda_support_source", None, "https://github.com/pytorch/pytorch/blob/main/RELEASE.md")
    row.done()
    return rel


# --- small helpers -------------------------------------------------------------------------------------------

def _public(version: str) -> Version | None:
    """The public part of a version ("2.6.0+cu126" -> 2.6.0); None when it is not a version."""
    try:
        return Version(version.split("+")[0].strip())
    except InvalidVersion:
        return None


def _driver(tk: CudaToolkit, os: str) -> str | None:
    return tk.linux_driver if os == "linux" else tk.windows_driver if os == "windows" else None


def driver_branch_number(driver: str) -> int:
    """'580.65.06' -> 580: NVIDIA numbers a driver branch by the first part of its version."""
    return int(driver.split(".")[0])


def branch_floor(driver: str) -> str:
    """'580.65.06' -> '580.00': the floor as a driver numbered by branch (Jetson's) reads it."""
    return f"{driver_branch_number(driver)}.00"


# Brand words NVIDIA prefixes to product names; dropping them lets "NVIDIA GeForce RTX 4090" meet "RTX 4090".
_BRAND = {"NVIDIA", "GEFORCE", "TESLA", "QUADRO"}


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[^A-Z0-9]+", name.upper()) if w and w not in _BRAND]


@functools.lru_cache(maxsize=4)
def _gpu_words(gpus: tuple[GpuModel, ...]) -> tuple[tuple[list[str], int, GpuModel], ...]:
    """Each model's name words, split once (a file naming thousands of GPUs must not split them every time)."""
    return tuple((w, len(" ".join(w)), g) for g in gpus if (w := _words(g.name)))


def _contains(words: list[str], known: list[str]) -> bool:
    n = len(known)
    return any(words[i:i + n] == known for i in range(len(words) - n + 1))
