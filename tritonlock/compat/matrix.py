"""Load the curated compatibility data in compat/ into a Matrix and answer questions about it."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from tritonlock.compat.rowreader import FILES, PLATFORMS
from tritonlock.compat.rowreader import RowReader as _Row  # the typed row reader every compat/ file is read with
from tritonlock.compat.rowreader import read_compat_file as _read
from tritonlock.compat.rows import (CudaToolkit, GpuModel, MinorCompat, Ptxas, TorchRelease, TritonRelease,
                                    TritonWindowsRelease, Variant)
from tritonlock.errors import MatrixError


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

    from tritonlock.compat import _matrix_cache, rowreader, rows

    digest = hashlib.sha256()
    code = (Path(__file__), Path(rows.__file__), Path(rowreader.__file__), Path(_matrix_cache.__file__))
    for path in (*code, *(root / name for name in FILES)):
        try:
            digest.update(path.read_bytes())
        except OSError:
            return None
    from tritonlock._files import user_cache

    return Path(user_cache(f"matrix-{digest.hexdigest()[:32]}.json"))


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

def _is_version(s: str) -> bool:
    return _public(s) is not None


def _index_template_ok(s: str) -> bool:
    """An http(s) URL with {backend} and no other placeholder (str.format would choke on one)."""
    from tritonlock._urls import problem

    rest = s.replace("{backend}", "cu126")
    return "{backend}" in s and "{" not in rest and "}" not in rest and problem(rest) is None

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
