"""Source builds: what building a package without a wheel for the target needs, read from its sdist and
compat/builds.toml, said in one line, and checked on the machine before sync builds it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from tritonlock.models import LockedPackage

# Names a build may need (the lock's `build-needs`): torch is imported by the build; the others are tools it runs.
TORCH, NVCC, COMPILER = "torch", "nvcc", "compiler"
_WORDS = {NVCC: "nvcc (the CUDA compiler)", COMPILER: "a C/C++ compiler"}
# PEP 517: a source tree without [build-system] is built with setuptools ("requires = setuptools>=40.8.0").
_DEFAULT_REQUIRES = ("setuptools>=40.8.0",)
_MAX_SDIST = 256 * 1024 * 1024  # an sdist larger than this is not read (its build facts stay unknown)


@dataclass(frozen=True, kw_only=True, slots=True)
class BuildFacts:
    imports_torch: bool
    needs: tuple[str, ...] = ()  # NVCC, COMPILER
    requires: tuple[str, ...] = ()  # build requirements besides torch (PEP 508), locked when the build imports torch
    why: str = ""  # where the facts were read


@lru_cache(maxsize=1)
def curated() -> dict[str, BuildFacts]:
    """compat/builds.toml, by normalized name."""
    from tritonlock import _toml
    from tritonlock._data import compat_root
    from tritonlock.errors import MatrixError

    root = compat_root()
    path = root / "builds.toml" if root else None
    if path is None or not path.is_file():
        return {}
    data = _toml.loads(path.read_text(encoding="utf-8"))
    out: dict[str, BuildFacts] = {}
    for i, row in enumerate(data.get("build", [])):
        name, src = row.get("name"), row.get("source")
        needs, reqs = row.get("needs", []), row.get("requires", [])
        if (not isinstance(name, str) or not isinstance(src, str) or not isinstance(row.get("imports_torch"), bool)
                or not all(n in _WORDS for n in needs) or not all(isinstance(r, str) for r in reqs)):
            raise MatrixError(f"{path}: build[{i}]: needs name, imports_torch (true/false), needs (nvcc, compiler), "
                              "requires (strings) and source — fix the row")
        out[_canon(name)] = BuildFacts(imports_torch=row["imports_torch"], needs=tuple(needs), requires=tuple(reqs),
                                       why=f"compat/builds.toml: {src}")
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class GpuFloor:
    """compat/builds.toml [[build-gpus]]: the oldest GPU a package's source build carries code for, for a span of
    its releases (what its build compiles, read from its setup.py or README)."""

    name: str
    since: str  # the span's first release ("" for every release before the next row's)
    min_cc: tuple[int, int]  # the compute capability its kernels need at least
    why: str


@lru_cache(maxsize=1)
def gpu_floors() -> dict[str, tuple[GpuFloor, ...]]:
    """compat/builds.toml [[build-gpus]], by normalized name, each package's rows newest span first. A row's span runs
    from its `since` to the next row's; floors only rise with newer releases (a row that lowers one is refused)."""
    from packaging.version import InvalidVersion, Version

    from tritonlock import _toml
    from tritonlock._data import compat_root
    from tritonlock.errors import MatrixError

    root = compat_root()
    path = root / "builds.toml" if root else None
    if path is None or not path.is_file():
        return {}
    rows: dict[str, list[tuple[Version, GpuFloor]]] = {}
    for i, row in enumerate(_toml.loads(path.read_text(encoding="utf-8")).get("build-gpus", [])):
        name, since, cc, src = row.get("name"), row.get("since", ""), row.get("min-cc"), row.get("source")
        try:
            key = Version(since) if since else Version("0")
            ok = isinstance(name, str) and isinstance(src, str) and isinstance(cc, str)
            major, minor = (int(x) for x in cc.split(".")) if ok else (0, 0)
        except (InvalidVersion, TypeError, ValueError):
            ok = False
        if not ok or not isinstance(since, str):
            raise MatrixError(f"{path}: build-gpus[{i}]: needs name, min-cc (\"8.0\"), source and, but for a "
                              "package's oldest span, since (a release) — fix the row")
        rows.setdefault(_canon(name), []).append(
            (key, GpuFloor(name=_canon(name), since=since, min_cc=(major, minor), why=f"compat/builds.toml: {src}")))
    out: dict[str, tuple[GpuFloor, ...]] = {}
    for name, spans in rows.items():
        spans.sort(key=lambda kv: kv[0], reverse=True)
        if any(newer.min_cc < older.min_cc for (_, newer), (_, older) in zip(spans, spans[1:])) \
                or len({k for k, _ in spans}) != len(spans):
            raise MatrixError(f"{path}: build-gpus rows of {name}: two rows for one release, or a newer span with a "
                              "lower floor than an older one — fix the rows")
        out[name] = tuple(f for _, f in spans)
    return out


def gpus_below(name: str, version: str, gpus: Iterable[str]) -> tuple[GpuFloor, list[str], str] | None:
    """Where `name version`'s source build has no code for some of `gpus` (compute capabilities, "7.0"): its row,
    those GPUs, and the constraint that leaves out every release whose build has none for them (this one's span and
    every older span whose floor is above them too: "flash-attn<2.0" — or "<0" where no release has any)."""
    from packaging.version import InvalidVersion, Version

    spans = gpu_floors().get(_canon(name), ())
    ccs = [(g, tuple(int(x) for x in g.split("."))) for g in gpus if re.fullmatch(r"\d+\.\d+", g)]
    try:
        v = Version(version)
        row = next((f for f in spans if not f.since or Version(f.since) <= v), None)
    except InvalidVersion:
        return None
    if row is None:
        return None
    low = list(dict.fromkeys(g for g, cc in ccs if cc < row.min_cc))
    if not low:
        return None
    worst = min(cc for g, cc in ccs if g in low)
    bound = "0"
    for f in spans[spans.index(row):]:
        if worst >= f.min_cc:  # an older span whose build has code for every such GPU: releases from it stay
            break
        bound = f.since or "0"
    return row, low, f"{name}<{bound}"


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name(req: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    return _canon(m[1]) if m else ""


# What is read of an sdist is bounded by what it *unpacks* to, not by its size: a 1 MB .tar.gz can hold 10 GB of
# zeros before its setup.py, and tarfile decompresses everything it skips. Past these, the facts stay unknown.
_MAX_UNPACKED = 256 * 1024 * 1024
_MAX_MEMBERS = 100_000
_MAX_MEMBER = 16 * 1024 * 1024  # pyproject.toml and setup.py are small


class _TooLarge(OSError):
    pass


class _Bounded:
    """A file object over a decompressor that stops after `limit` unpacked bytes (raising _TooLarge)."""

    def __init__(self, raw: object, limit: int) -> None:
        self.raw, self.left = raw, limit

    def read(self, n: int = -1) -> bytes:
        want = self.left + 1 if n is None or n < 0 else min(n, self.left + 1)
        data: bytes = self.raw.read(want)  # type: ignore[attr-defined]
        self.left -= len(data)
        if self.left < 0:
            raise _TooLarge(f"unpacks to more than {_MAX_UNPACKED // (1024 * 1024)} MB")
        return data


def _members(data: bytes, filename: str) -> dict[str, bytes]:
    """pyproject.toml and setup.py at the top of an sdist (a .tar.gz or .zip), by name; reading stops once both are
    found, and after _MAX_UNPACKED unpacked bytes or _MAX_MEMBERS members (_TooLarge)."""
    import bz2
    import gzip
    import io
    import lzma
    import tarfile
    import zipfile

    want = ("pyproject.toml", "setup.py")
    out: dict[str, bytes] = {}
    if filename.endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
            if len(infos) > _MAX_MEMBERS:
                raise _TooLarge(f"has more than {_MAX_MEMBERS} members")
            for info in infos:
                parts = info.filename.split("/")
                if len(parts) == 2 and parts[1] in want and info.file_size <= _MAX_MEMBER:
                    with zf.open(info) as f:  # (reads at most the size its entry declares)
                        out[parts[1]] = f.read(_MAX_MEMBER + 1)[:_MAX_MEMBER]
        return out
    raw: object = io.BytesIO(data)
    if data[:2] == b"\x1f\x8b":
        raw = gzip.GzipFile(fileobj=io.BytesIO(data))
    elif data[:3] == b"BZh":
        raw = bz2.BZ2File(io.BytesIO(data))
    elif data[:6] == b"\xfd7zXZ\x00":
        raw = lzma.LZMAFile(io.BytesIO(data))
    with tarfile.open(fileobj=_Bounded(raw, _MAX_UNPACKED), mode="r|") as tf:  # type: ignore[call-overload]
        for count, m in enumerate(tf):
            if count >= _MAX_MEMBERS:
                raise _TooLarge(f"has more than {_MAX_MEMBERS} members")
            parts = m.name.split("/")
            if m.isfile() and len(parts) == 2 and parts[1] in want and m.size <= _MAX_MEMBER:
                f = tf.extractfile(m)
                if f is not None:
                    out[parts[1]] = f.read()
                if len(out) == len(want):
                    break
    return out


_IMPORTS_TORCH = re.compile(r"^\s*(import\s+torch\b|from\s+torch[\s.])", re.M)
_EXTENSION = re.compile(r"\b(CUDAExtension|CppExtension|Extension)\s*\(")


def inspect_sdist(data: bytes, filename: str) -> BuildFacts:
    """What an sdist's build needs, from its pyproject.toml ([build-system] requires) and setup.py (imports)."""
    import tarfile
    import zipfile

    from tritonlock import _toml

    try:
        files = _members(data, filename)
    except _TooLarge as err:
        return BuildFacts(imports_torch=False, why=f"{filename}: {err} before its pyproject.toml and setup.py — "
                                                   "not read (its build facts are unknown)")
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, ValueError):
        return BuildFacts(imports_torch=False, why=f"{filename}: not a readable sdist")
    requires: tuple[str, ...] = _DEFAULT_REQUIRES
    why: list[str] = []
    if "pyproject.toml" in files:
        try:
            doc = _toml.loads(files["pyproject.toml"].decode("utf-8", "replace"))
        except _toml.TOMLDecodeError:
            doc = {}
        bs = doc.get("build-system")
        raw = bs.get("requires") if isinstance(bs, dict) else None
        if isinstance(raw, list) and all(isinstance(r, str) for r in raw):
            requires = tuple(raw)
    torch_req = any(_req_name(r) == TORCH for r in requires)
    if torch_req:
        why.append("its pyproject.toml [build-system] requires torch")
    setup = files.get("setup.py", b"").decode("utf-8", "replace")
    torch_import = bool(_IMPORTS_TORCH.search(setup))
    if torch_import:
        why.append("its setup.py imports torch")
    needs: list[str] = []
    if "CUDAExtension" in setup or re.search(r"\bnvcc\b", setup):
        needs.append(NVCC)
        why.append("its setup.py builds CUDA extensions")
    if _EXTENSION.search(setup):
        needs.append(COMPILER)
    return BuildFacts(imports_torch=torch_req or torch_import, needs=tuple(needs),
                      requires=tuple(r for r in requires if _req_name(r) != TORCH),
                      why=f"{filename}: " + ("; ".join(why) if why else "a plain build (no torch, no CUDA code)"))


def merge(sdist: BuildFacts, known: BuildFacts | None) -> BuildFacts:
    """The sdist's own facts and compat/builds.toml's row for it (either may know what the other does not)."""
    if known is None:
        return sdist
    reqs = list(dict.fromkeys([*sdist.requires, *(r for r in known.requires
                                                  if _req_name(r) not in {_req_name(x) for x in sdist.requires})]))
    return BuildFacts(imports_torch=sdist.imports_torch or known.imports_torch,
                      needs=tuple(dict.fromkeys([*sdist.needs, *known.needs])), requires=tuple(reqs),
                      why=f"{sdist.why}; {known.why}")


@lru_cache(maxsize=256)
def facts_for(name: str, sdist_url: str, filename: str) -> BuildFacts:
    """Download the sdist (through the index client: pip's credentials and TLS settings) and read its facts."""
    from tritonlock.lock.index import fetch_file

    known = curated().get(_canon(name))
    try:
        data = fetch_file(sdist_url, max_bytes=_MAX_SDIST)
    except Exception as err:  # noqa: BLE001 — the facts are advice; the curated row (or nothing) still stands
        if known is not None:
            return known
        return BuildFacts(imports_torch=False, why=f"{filename}: could not be read ({str(err)[:120]})")
    return merge(inspect_sdist(data, filename), known)


def needs_of(f: BuildFacts) -> tuple[str, ...]:
    """The lock's build-needs: the tools, then torch when the build imports it."""
    return (*f.needs, *((TORCH,) if f.imports_torch else ()))


# ---------------------------------------------------------------- what is said


def cuda_major(backend: str | None) -> int | None:
    """The CUDA major of a torch build's backend ("cu130" → 13); None for a CPU, ROCm or XPU build."""
    from tritonlock.native.variants import backend_cuda_release

    release = backend_cuda_release(backend)
    return release[0] if release else None


def source_line(p: LockedPackage, backend: str | None = None) -> str:
    """'flash-attn 2.8.3.post2 has no wheel for this target: sync builds it from source, which needs nvcc (the CUDA
    compiler) of CUDA 13 (the locked torch's major, cu130) and a C/C++ compiler, and imports torch (built
    against the locked torch)' — the major named where the locked torch (`backend`) is a CUDA build:
    torch.utils.cpp_extension refuses an nvcc of another major."""
    major = cuda_major(backend)
    tools = [_WORDS[n] + (f" of CUDA {major} (the locked torch's major, {backend})"
                          if n == NVCC and major is not None else "") for n in p.build_needs if n in _WORDS]
    parts = [f"needs {' and '.join(tools)}"] if tools else []
    if TORCH in p.build_needs:
        parts.append("imports torch (built against the locked torch, without build isolation)")
    which = f", which {', and '.join(parts)}" if parts else ""
    return f"{p.name} {p.version} has no wheel for this target: sync builds it from source{which}"


def source_lines(packages: Iterable[LockedPackage], backend: str | None = None) -> list[str]:
    return [source_line(p, backend) for p in packages if p.build == "source"]


def note_lines(packages: Iterable[LockedPackage]) -> list[str]:
    """'NAME, NAME: note', one line per distinct note (the build requirements of one build share one)."""
    by_note: dict[str, list[str]] = {}
    for p in packages:
        if p.note:
            by_note.setdefault(p.note, []).append(p.name)
    return [f"{', '.join(names)}: {note}" for note, names in by_note.items()]


def package_json(p: LockedPackage, backend: str | None = None) -> dict[str, object]:
    """The --json fields of a package's build and note (empty for a package installed from a wheel)."""
    out: dict[str, object] = {}
    if p.build:
        out.update({"build": p.build, "build_needs": list(p.build_needs), "build_why": p.build_why,
                    "build_message": source_line(p, backend)})
        major = cuda_major(backend)
        if NVCC in p.build_needs and major is not None:
            out["build_nvcc_major"] = major
    if p.note:
        out["note"] = p.note
    return out


# ---------------------------------------------------------------- on the machine that builds


def _cuda_home() -> tuple[str, str] | None:
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return var, os.environ[var]
    return None


def find_nvcc() -> str | None:
    """nvcc where torch.utils.cpp_extension looks for it: in $CUDA_HOME (or $CUDA_PATH) when set — and then only
    there — else on PATH, else in /usr/local/cuda."""
    home = _cuda_home()
    if home is not None:
        nvcc = os.path.join(home[1], "bin", "nvcc")
        return nvcc if os.access(nvcc, os.X_OK) else None
    found = shutil.which("nvcc")
    if found:
        return found
    default = "/usr/local/cuda/bin/nvcc"
    return default if os.access(default, os.X_OK) else None


def find_compiler() -> str | None:
    """A C/C++ compiler as setuptools finds one: $CXX / $CC, else c++, g++, cc, gcc, clang on PATH."""
    for var in ("CXX", "CC"):
        cmd = os.environ.get(var, "").split()
        if cmd and shutil.which(cmd[0]):
            return cmd[0]
    for name in ("c++", "g++", "cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    return None


def nvcc_release(nvcc: str) -> str | None:
    """The CUDA release `nvcc --version` names ("12.4"), or None where it does not run or says none."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return release_of(out)


def release_of(said: str) -> str | None:
    """The release `nvcc --version` printed ("Cuda compilation tools, release 12.4, V12.4.131" → "12.4")."""
    m = re.search(r"\brelease (\d{1,3})\.(\d{1,3})\b", said)
    return f"{int(m[1])}.{int(m[2])}" if m else None


def nvcc_mismatch(backend: str | None) -> tuple[int, str, str] | None:
    """(the locked torch's CUDA major, the nvcc a build finds, its release) where that nvcc is of another major —
    torch.utils.cpp_extension refuses it; None where it is of that major, none is found, it names no release, or
    the torch (`backend`) is no CUDA build."""
    major, nvcc = cuda_major(backend), find_nvcc()
    release = nvcc_release(nvcc) if major is not None and nvcc is not None else None
    if nvcc is None or major is None or release is None or int(release.split(".")[0]) == major:
        return None
    return major, nvcc, release


def missing_tools(p: LockedPackage, backend: str | None = None) -> list[str]:
    """What this machine lacks to build `p` (empty: it can try): nvcc, one of the locked torch's CUDA major where
    that torch (`backend`) is a CUDA build; a C/C++ compiler."""
    out: list[str] = []
    if NVCC in p.build_needs and find_nvcc() is None:
        home = _cuda_home()
        out.append(f"nvcc (the CUDA compiler): ${home[0]} is {home[1]}, which has no bin/nvcc" if home else
                   "nvcc (the CUDA compiler): not on PATH, and no /usr/local/cuda/bin/nvcc ($CUDA_HOME is not set)")
    elif NVCC in p.build_needs and (wrong := nvcc_mismatch(backend)) is not None:
        major, nvcc, release = wrong
        out.append(f"nvcc of CUDA {major} (the locked torch is a {backend} build): {nvcc} is CUDA {release}, and "
                   f"torch.utils.cpp_extension refuses an nvcc of another major ('The detected CUDA version "
                   f"({release}) mismatches the version that was used to compile PyTorch')")
    if COMPILER in p.build_needs and find_compiler() is None:
        out.append("a C/C++ compiler: none of $CXX, $CC, c++, g++, cc, gcc, clang is on PATH")
    return out
