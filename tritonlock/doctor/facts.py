"""doctor's facts: probe a venv's interpreter, read the project's lock, load the matrix — no judgement yet."""

from __future__ import annotations

import json
import os
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonlock import _subprocess
from tritonlock.errors import TritonlockError
from tritonlock.models import HostProfile, Lock, LockedTarget, NativeFacts

if TYPE_CHECKING:  # matrix is imported lazily: its data may be missing, and doctor must still run
    from tritonlock.compat.matrix import Matrix

_MARK = "@@tritonlock-doctor@@"
_PROBE = Path(__file__).with_name("_probe.py")


class DoctorError(TritonlockError):
    """doctor could not look at the environment it was pointed at (no interpreter, a probe that answers garbage)."""

    exit_code = 2


@dataclass(frozen=True, kw_only=True, slots=True)
class Dist:
    """An installed distribution as the venv's own importlib.metadata sees it."""

    name: str  # as in METADATA; compare through canonicalize_name
    version: str
    location: str
    installer: str | None = None
    requires_python: str | None = None
    requires: tuple[str, ...] = ()  # only the Requires-Dist lines about torch / triton
    tags: tuple[str, ...] = ()  # WHEEL Tag lines


@dataclass(frozen=True, kw_only=True, slots=True)
class TorchFacts:
    """What `import torch` did inside the venv."""

    error: str | None = None  # "ImportError: …" when the import failed
    traceback: str | None = None
    version: str | None = None
    file: str | None = None
    cuda: str | None = None  # torch.version.cuda; None = CPU build
    cuda_error: str | None = None
    cuda_available: bool | None = None
    device_count: int | None = None
    arch_list: tuple[str, ...] = ()
    devices: tuple[tuple[str, str], ...] = ()  # (name, cc) as torch sees them
    warnings: tuple[str, ...] = ()
    hip: str | None = None  # torch.version.hip: a ROCm build ("6.4.43482"); cuda is None there


@dataclass(frozen=True, kw_only=True, slots=True)
class TritonPtxas:
    """The ptxas the venv's Triton compiles with for one GPU, found as that Triton finds it (verify's runner)."""

    cc: str  # "9.0"
    path: str | None = None
    binary: str | None = None  # "ptxas" | "ptxas-blackwell"
    release: str | None = None  # "12.8"
    version: str | None = None  # "12.8.93"
    override: str | None = None  # the variable that chose it (TRITON_PTXAS_PATH, ...), "PATH" for another, None
    error: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolkitPtxas:
    """A CUDA toolkit's ptxas on this machine (PATH, nvcc's directory, $CUDA_HOME, /usr/local/cuda*)."""

    path: str
    release: str  # "12.2"
    version: str  # "12.2.140"


@dataclass(frozen=True, kw_only=True, slots=True)
class VenvFacts:
    """Everything the probe learned about one interpreter's environment."""

    interpreter: str
    python: str  # "3.12.3"
    prefix: str
    glibc: str | None = None
    markers: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    sys_path: tuple[str, ...] = ()
    dists: tuple[Dist, ...] = ()
    conda_packages: tuple[str, ...] | None = None  # None: the prefix is not a conda environment
    torch_dirs: tuple[str, ...] = ()
    triton_dirs: tuple[str, ...] = ()
    ld_library_path_libs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    wheel_libs: tuple[str, ...] = ()
    import_crash: str | None = None  # the import phase died (signal, exit code, no answer)
    libcuda: str | None = None  # path libcuda.so.1 loads from
    libcuda_error: str | None = None
    torch: TorchFacts | None = None  # None when the import phase did not answer
    triton_version: str | None = None
    triton_file: str | None = None
    triton_error: str | None = None
    loaded_libs: tuple[str, ...] = ()
    damaged: tuple[str, ...] = ()  # "name version: problem" for packages whose files are missing or half-installed
    modified: tuple[str, ...] = ()  # likewise, for packages whose files are all there but of other sizes
    stray: tuple[str, ...] = ()  # files no distribution owns under an installed module's import name (their paths)
    managed: bool = False  # made by `tritonlock sync` (its marker file), or the project's own .venv
    ptxas: tuple[TritonPtxas, ...] = ()  # per GPU of the host (probe_ptxas), when triton imports
    toolkit_ptxas: tuple[ToolkitPtxas, ...] = ()  # the machine's own ptxas binaries, a TRITON_PTXAS_PATH can use
    # the installed distributions' native code, read from their files (tritonlock.native): (name, version, facts)
    native: tuple[tuple[str, str, NativeFacts], ...] = ()
    system_libs: frozenset[str] = frozenset()  # what this machine's loader finds outside the venv (ldconfig -p)

    @property
    def minor(self) -> str:
        return ".".join(self.python.split(".")[:2])


@dataclass(frozen=True, kw_only=True, slots=True)
class LockFacts:
    """The project's lock as doctor sees it: the target for this host, or why there is none."""

    path: str
    lock: Lock | None = None
    error: str | None = None  # unreadable lock
    target: LockedTarget | None = None
    target_error: str | None = None  # no target fits this host
    stale: str | None = None


# ---------------------------------------------------------------- probing a venv


def _strs(v: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in v) if isinstance(v, list) else ()


def _opt(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _answer(stdout: str) -> dict[str, Any] | None:
    # torch may print while importing: the answer is the last line carrying the marker.
    for line in reversed(stdout.splitlines()):
        if line.startswith(_MARK):
            try:
                data = json.loads(line[len(_MARK):])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _died(rc: int, stderr: str) -> str:
    if rc < 0:
        try:
            how = f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            how = f"killed by signal {-rc}"
    else:
        how = f"exit code {rc}"
    tail = " | ".join(stderr.strip().splitlines()[-3:])
    return how + (f" ({tail})" if tail else "")


def _torch_facts(raw: Any) -> TorchFacts:
    d = raw if isinstance(raw, dict) else {}
    devices = tuple((str(x.get("name")), str(x.get("cc"))) for x in d.get("devices") or [] if isinstance(x, dict))
    return TorchFacts(
        error=_opt(d.get("error")), traceback=_opt(d.get("traceback")), version=_opt(d.get("version")),
        file=_opt(d.get("file")), cuda=_opt(d.get("cuda")), cuda_error=_opt(d.get("cuda_error")),
        cuda_available=d.get("cuda_available") if isinstance(d.get("cuda_available"), bool) else None,
        device_count=d.get("device_count") if isinstance(d.get("device_count"), int) else None,
        arch_list=_strs(d.get("arch_list")), devices=devices, warnings=_strs(d.get("warnings")),
        hip=_opt(d.get("hip")))


def _dist(raw: dict[str, Any]) -> Dist:
    return Dist(name=str(raw.get("name")), version=str(raw.get("version")), location=str(raw.get("location")),
                installer=_opt(raw.get("installer")), requires_python=_opt(raw.get("requires_python")),
                requires=_strs(raw.get("requires")), tags=_strs(raw.get("tags")))


def probe(python: str, *, timeout: float = 300) -> VenvFacts:
    """Run the probe with `python`: a static pass, then a pass that imports torch and triton."""
    python = _subprocess.named_python(python)
    if not Path(python).exists():
        raise DoctorError(f"{python}: no such interpreter — pass --python PATH to a venv's python, or create the "
                          "project's .venv with `tritonlock sync`")
    # -c, not the script path: running a file puts its directory (tritonlock/) first on the venv's sys.path.
    source = _PROBE.read_text(encoding="utf-8")
    try:
        first = _subprocess.run([python, "-c", source, "static"], timeout=60)
    except OSError as err:
        raise DoctorError(f"{python}: cannot run it ({err}) — pass --python PATH to a working interpreter") from None
    static = _answer(first.stdout)
    if first.returncode != 0 or static is None:
        raise DoctorError(f"{python}: the doctor probe failed ({_died(first.returncode, first.stderr)}) — is it a "
                          "Python 3.8+ interpreter?")
    try:
        second = _subprocess.run([python, "-c", source, "import"], timeout=timeout)
        imported, crash = _answer(second.stdout), None
        if second.returncode != 0 or imported is None:
            imported, crash = None, _died(second.returncode, second.stderr)
    except Exception as err:  # noqa: BLE001 - a hang (TimeoutExpired) is evidence too
        imported, crash = None, f"no answer ({type(err).__name__}: {err})"
    got: dict[str, Any] = imported or {}
    libcuda = got["libcuda"] if isinstance(got.get("libcuda"), dict) else {}
    triton = got["triton"] if isinstance(got.get("triton"), dict) else {}
    ld = static.get("ld_library_path_libs") or {}
    from tritonlock.environment._noop import MADE

    damage = integrity(str(static.get("prefix")))
    return VenvFacts(
        interpreter=python, python=str(static.get("python")), prefix=str(static.get("prefix")),
        glibc=_opt(static.get("glibc")),
        markers={str(k): str(v) for k, v in (static.get("markers") or {}).items()},
        env={str(k): str(v) for k, v in (static.get("env") or {}).items()},
        sys_path=_strs(static.get("sys_path")),
        dists=tuple(_dist(d) for d in static.get("dists") or [] if isinstance(d, dict)),
        conda_packages=_strs(static["conda_packages"]) if isinstance(static.get("conda_packages"), list) else None,
        torch_dirs=_strs(static.get("torch_dirs")), triton_dirs=_strs(static.get("triton_dirs")),
        ld_library_path_libs={str(k): _strs(v) for k, v in ld.items()} if isinstance(ld, dict) else {},
        wheel_libs=_strs(static.get("wheel_libs")), import_crash=crash,
        libcuda=_opt(libcuda.get("path")), libcuda_error=_opt(libcuda.get("error")),
        torch=_torch_facts(imported.get("torch")) if imported else None,
        triton_version=_opt(triton.get("version")), triton_file=_opt(triton.get("file")),
        triton_error=_opt(triton.get("error")), loaded_libs=_strs(got.get("loaded_libs")),
        damaged=damage[0], modified=damage[1], stray=damage[2],
        managed=(Path(str(static.get("prefix"))) / MADE).is_file(),
        native=installed_native(tuple(_dist(d) for d in static.get("dists") or [] if isinstance(d, dict))),
        system_libs=frozenset(_system_sonames()),
    )


def _system_sonames() -> frozenset[str]:
    from tritonlock.native.elf import system_sonames

    return system_sonames()


def installed_native(dists: tuple[Dist, ...]) -> tuple[tuple[str, str, NativeFacts], ...]:
    """The native code of each installed distribution, read from its files: whole for the packages whose code is
    judged, only what it brings for the providers (torch, Triton, NVIDIA's libraries)."""
    from tritonlock.native.elf import SO, built_for_torch, read_installed
    from tritonlock.native.pysource import folder_imports
    from tritonlock.native.rule import is_provider

    out = []
    for d in dists:
        root = Path(d.location)
        want = re.sub(r"[-_.]+", "_", d.name).lower()
        info = next((p for p in sorted(root.glob("*.dist-info")) if p.name.lower().split("-", 1)[0] == want
                     and (p / "RECORD").is_file()), None)
        if info is None:
            continue
        try:
            paths = [line.split(",", 1)[0] for line in (info / "RECORD").read_text(encoding="utf-8",
                                                                                    errors="replace").splitlines()]
        except OSError:
            continue
        sos = [p for p in paths if SO.search(p)]
        if not sos:
            continue
        provides = tuple(sorted({p.rsplit("/", 1)[-1] for p in sos}))
        members = () if is_provider(d.name) else tuple(read_installed(root, sos))
        meta = "\n".join(f"Requires-Dist: {r}" for r in d.requires)
        tops, imports, guarded = folder_imports(root, dict.fromkeys(paths)) if members else ((), (), ())
        out.append((d.name, d.version, NativeFacts(
            sha256="", filename=f"{d.name} {d.version} in {root}", provides=provides, members=members,
            built_for_torch=built_for_torch(f"{d.name}-{d.version}-x.whl", meta) if members else None,
            names_only=not members, source=f"read from the files in {root}", tops=tops, imports=imports,
            guarded=guarded)))
    return tuple(out)


def integrity(prefix: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Packages of a venv whose files are not what their RECORD lists, or that are installed twice — sync's own
    check (what the next `tritonlock sync` repairs); "name version: problem" each, as (damaged, modified, stray):
    files missing, RECORD/METADATA gone or two copies, apart from files that are all there with other sizes, and
    apart from files no distribution owns that take an installed module's name (the stray files' paths). Only for
    venvs."""
    from tritonlock.environment.sync import check_venv

    p = Path(prefix)
    if not (p / "pyvenv.cfg").is_file():
        return (), (), ()
    damage = check_venv(p)
    found = [(d.kind, f"{d.name} {d.version or '(unknown version)'}: {d.problem}") for d in damage]
    return (tuple(text for kind, text in found if kind not in ("modified", "stray", "stray-base")),
            tuple(text for kind, text in found if kind == "modified"),
            tuple(path for d in damage if d.kind in ("stray", "stray-base") for path in d.strays))


# ---------------------------------------------------------------- Triton's ptxas

_PTXAS_RELEASE = re.compile(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)")


def probe_ptxas(python: str, ccs: tuple[str, ...], *, timeout: float = 120) -> tuple[TritonPtxas, ...]:
    """Which ptxas the venv's Triton uses for each compute capability: verify's runner function, run by the venv."""
    if not ccs:
        return ()
    from tritonlock.verify import RUNNER

    archs = {cc: int(cc.split(".")[0]) * 10 + int(cc.split(".")[1]) for cc in ccs}
    code = ("import json, sys\n"
            f"sys.path.insert(0, {str(RUNNER)!r})\n"
            "from tlverify import envchecks as R\n"
            "import triton\nR.triton = triton\n"
            f"print({_MARK!r} + json.dumps({{cc: R.triton_ptxas(a) for cc, a in {archs!r}.items()}}))\n")
    try:
        proc = _subprocess.run([python, "-I", "-c", code], timeout=timeout)
    except Exception as err:  # noqa: BLE001 - a hang or a missing interpreter: the check says it could not tell
        return tuple(TritonPtxas(cc=cc, error=f"{type(err).__name__}: {err}") for cc in ccs)
    got = _answer(proc.stdout)
    if got is None:
        return tuple(TritonPtxas(cc=cc, error=_died(proc.returncode, proc.stderr)) for cc in ccs)
    out = []
    for cc in ccs:
        raw = got.get(cc)
        d: dict[str, Any] = raw if isinstance(raw, dict) else {}
        out.append(TritonPtxas(cc=cc, path=_opt(d.get("path")), binary=_opt(d.get("binary")),
                               release=_opt(d.get("release")), version=_opt(d.get("version")),
                               override=_opt(d.get("override")), error=_opt(d.get("error"))))
    return tuple(out)


def toolkit_ptxas() -> tuple[ToolkitPtxas, ...]:
    """The ptxas of each CUDA toolkit on this machine: PATH, next to nvcc, $CUDA_HOME/$CUDA_PATH, /usr/local/cuda*."""
    import glob
    import shutil

    exe = "ptxas.exe" if os.name == "nt" else "ptxas"
    cands = [shutil.which(exe)]
    nvcc = shutil.which("nvcc")
    cands.append(os.path.join(os.path.dirname(nvcc), exe) if nvcc else None)
    cands += [os.path.join(os.environ[v], "bin", exe) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    cands += sorted(glob.glob(f"/usr/local/cuda*/bin/{exe}")) + [f"/opt/cuda/bin/{exe}"]
    out: list[ToolkitPtxas] = []
    seen: set[str] = set()
    for c in cands:
        if not c or not os.path.isfile(c) or os.path.realpath(c) in seen:
            continue
        seen.add(os.path.realpath(c))
        try:
            text = _subprocess.run([c, "--version"], timeout=30).stdout
        except Exception:  # noqa: BLE001 - a broken binary is simply not offered
            continue
        m = _PTXAS_RELEASE.search(text)
        if m:
            out.append(ToolkitPtxas(path=c, release=m.group(1), version=m.group(2)))
    return tuple(out)


# ---------------------------------------------------------------- the lock and the matrix


def lock_facts(project: Path, host: HostProfile, matrix: Matrix | None, python: str | None = None) -> LockFacts | None:
    """Read the project's lock (None when there is none) and pick this host's target."""
    from tritonlock.lock import lockfile
    from tritonlock.export import choose_target

    path = project / "triton-env.lock"
    if not path.exists():
        return None
    try:
        lock = lockfile.read_lock(path)
    except TritonlockError as err:
        return LockFacts(path=str(path), error=str(err))
    stale = None
    from tritonlock._discover import intent_file

    try:
        intent_path = intent_file(project)
    except TritonlockError as err:
        return LockFacts(path=str(path), error=str(err))
    if intent_path.exists():
        try:
            from tritonlock.intent.read import read_intent

            intent = read_intent(intent_path)
        except TritonlockError as err:
            stale = f"{intent_path} cannot be read ({err})"
        else:
            if matrix is not None:
                stale = lockfile.staleness(lock, intent, matrix.version)
            elif lock.intent_hash != intent.content_hash:
                stale = f"{intent_path} changed since the lock was written"
    target, target_error = None, None
    try:
        if len(lock.targets) > 1:  # the one sync would pick for this host and this venv's Python
            from tritonlock.environment.sync import pick_target

            target = pick_target(lock, host, python=python, lock_path=str(path))
        else:
            target = choose_target(lock, None, host, str(path))
    except ImportError:
        target = choose_target(lock, None, host, str(path))
    except TritonlockError as err:
        target_error = str(err)
    return LockFacts(path=str(path), lock=lock, target=target, target_error=target_error, stale=stale)


def load_matrix_or_error() -> tuple[Matrix | None, str | None]:
    try:
        from tritonlock.compat.matrix import load_matrix

        return load_matrix(), None
    except (TritonlockError, NotImplementedError, ImportError, OSError) as err:
        return None, str(err) or type(err).__name__


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
