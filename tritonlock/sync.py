"""Make a venv match the lock's target for the running host: pick, plan, apply through uv, atomically."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from tritonlock import _subprocess
from tritonlock.errors import SyncError, TritonlockError
from tritonlock.models import HostProfile, Lock, LockedPackage, LockedTarget

# Installer tooling a venv may carry that the lock does not manage (removing pip surprises people).
_TOOLING = frozenset({"pip"})
# Distributions whose default-index build equals a local-tagged build on the torch index.
_LOCAL_TAGGED = frozenset({"torch", "torchvision", "torchaudio"})


# ---------------------------------------------------------------- choosing the target


def _v(s: str) -> Version:
    return Version(s)


def target_fit(t: LockedTarget, host: HostProfile, python: str | None = None) -> str | None:
    """Why target t does not fit this host, or None when it does."""
    from tritonlock.matrix import gpu_runs

    sel, spec = t.selection, t.selection.target
    if not sel.ok:
        return "the lock holds a conflict for it, not packages"
    if (spec.os, spec.arch) != (host.os, host.arch):
        return f"it is for {spec.os}/{spec.arch}; this host is {host.os}/{host.arch}"
    if python and sel.python and sel.python != python:
        return f"it is for Python {sel.python}; this environment has {python}"
    if spec.glibc and host.glibc and _v(host.glibc) < _v(spec.glibc):
        return f"it needs glibc >= {spec.glibc}; this host has {host.glibc}"
    if sel.backend and sel.backend.startswith("cu") and spec.driver is not None:
        # (a target locked without a driver runs its build on the CPU: PyPI's CUDA wheel on a laptop)
        if host.driver is None:
            return f"it is a CUDA target ({sel.backend}) and this host has no NVIDIA driver"
        if sel.driver_floor and _v(host.driver) < _v(sel.driver_floor):
            return f"{sel.backend} needs driver >= {sel.driver_floor}; this host has {host.driver}"
        for g in host.gpus:
            if gpu_runs(g.cc, sel.archs, sel.ptx) is None:
                return f"its build ({sel.backend}) has no code for {g.name} (compute capability {g.cc})"
    return None


def pick_target(lock: Lock, host: HostProfile, *, name: str | None = None, python: str | None = None,
                lock_path: str = "triton-env.lock") -> LockedTarget:
    """The lock target for this host: the named one, else the best fit (GPU over CPU, exact GPUs first)."""
    if name is not None:
        for t in lock.targets:
            if t.name == name:
                return t
        raise SyncError(f"{lock_path} has no target {name!r} (it has: {', '.join(t.name for t in lock.targets)})")
    fits: list[LockedTarget] = []
    misses: list[str] = []
    for t in lock.targets:
        why = target_fit(t, host, python)
        if why is None:
            fits.append(t)
        else:
            misses.append(f"  - {t.name}: {why}")
    if not fits:
        desc = f"{host.os}/{host.arch}, Python {python or host.python}, " + (
            f"driver {host.driver}" if host.driver else "no NVIDIA driver") + (
            f", GPUs {', '.join(g.cc for g in host.gpus)}" if host.gpus else "")
        raise SyncError(f"no target in {lock_path} fits this host ({desc}):\n" + "\n".join(misses)
                        + "\n  fix: add a target for this machine (`tritonlock host --save host.toml`, paste it into "
                        "triton-env.toml) and run `tritonlock resolve`")
    host_ccs = sorted(g.cc for g in host.gpus)

    here = ".".join(host.python.split(".")[:2])

    def score(t: LockedTarget) -> tuple[int, int, int, Version]:
        sel = t.selection
        gpu = 1 if sel.backend and sel.backend.startswith("cu") and sel.target.driver else 0
        exact = 1 if sorted(sel.target.gpus) == host_ccs else 0
        return (gpu, exact, int(sel.python == here), _v(sel.driver_floor or "0"))

    return max(fits, key=score)


# ---------------------------------------------------------------- looking at a venv


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _site_dirs(venv: Path) -> list[Path]:
    if os.name == "nt":
        return [venv / "Lib" / "site-packages"]
    return sorted((venv / "lib").glob("python3*/site-packages"))


def _read_dists(site: Path) -> dict[str, str]:
    """name → version from *.dist-info directories (cheap: no interpreter is started)."""
    out: dict[str, str] = {}
    for d in site.glob("*.dist-info"):
        meta = d / "METADATA"
        name = version = None
        try:
            with meta.open(encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if line.startswith("Name:"):
                        name = line[5:].strip()
                    elif line.startswith("Version:"):
                        version = line[8:].strip()
                    if (name and version) or line in ("\n", "\r\n"):
                        break
        except OSError:
            continue
        if name and version:
            out[canonicalize_name(name)] = version
    return out


def venv_config(venv: Path) -> dict[str, str]:
    cfg: dict[str, str] = {}
    try:
        for line in (venv / "pyvenv.cfg").read_text(encoding="utf-8").splitlines():
            k, sep, v = line.partition("=")
            if sep:
                cfg[k.strip().lower()] = v.strip()
    except OSError:
        pass
    return cfg


def venv_python_minor(venv: Path) -> str | None:
    cfg = venv_config(venv)
    ver = cfg.get("version_info") or cfg.get("version")
    if ver:
        return ".".join(ver.split(".")[:2])
    sites = _site_dirs(venv)
    m = re.search(r"python(3\.\d+)", str(sites[0])) if sites else None
    return m.group(1) if m else None


def _venv_sites(python: str) -> list[str]:
    """site-packages of `python` when it is itself a venv (empty for a plain interpreter)."""
    code = ("import json, site, sys; print(json.dumps(site.getsitepackages() "
            "if sys.prefix != sys.base_prefix else []))")
    proc = _subprocess.run([python, "-I", "-c", code], timeout=60)
    if proc.returncode != 0:
        return []
    return [p for p in json.loads(proc.stdout or "[]") if Path(p).is_dir()]


def _system_dists(python: Path) -> dict[str, str]:
    """Distributions visible from the base interpreter's site-packages (for --system-site-packages)."""
    code = "import json, site, sys; print(json.dumps([p for p in sys.path if p.endswith(('site-packages', 'dist-packages'))]))"
    proc = _subprocess.run([str(python), "-I", "-c", code], timeout=60)
    if proc.returncode != 0:
        return {}
    out: dict[str, str] = {}
    for p in json.loads(proc.stdout or "[]"):
        for k, v in _read_dists(Path(p)).items():
            out.setdefault(k, v)
    return out


# ---------------------------------------------------------------- plan


@dataclass(frozen=True, kw_only=True, slots=True)
class Step:
    name: str
    action: str  # "install" | "upgrade" | "remove" | "keep"
    have: str | None = None
    want: str | None = None
    note: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    target: str
    steps: tuple[Step, ...]

    def of(self, action: str) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.action == action)

    @property
    def noop(self) -> bool:
        return all(s.action == "keep" for s in self.steps)


def _same(locked: LockedPackage, have: str, equivalent_backend: str | None) -> str | None:
    """'' when identical, a note when equivalent (PyPI's build of the locked torch variant), None otherwise."""
    try:
        hv, lv = Version(have), Version(locked.version)
    except InvalidVersion:
        return "" if have == locked.version else None
    if hv == lv:
        return ""
    if (locked.name in _LOCAL_TAGGED and not hv.local and lv.local and hv.public == lv.public
            and equivalent_backend == lv.local):
        return f"the default index's {have} is the {lv.local} build"
    return None


def plan(target: LockedTarget, venv_dists: dict[str, str], system_dists: dict[str, str] | None = None,
         equivalent_backend: str | None = None) -> Plan:
    """Pure: what to install, upgrade, remove and keep so the venv matches the target."""
    steps: list[Step] = []
    system = system_dists or {}
    locked = {p.name: p for p in target.packages}
    for name, pkg in sorted(locked.items()):
        have = venv_dists.get(name)
        if have is not None:
            note = _same(pkg, have, equivalent_backend)
            steps.append(Step(name=name, action="keep" if note is not None else "upgrade", have=have,
                              want=pkg.version, note=note or ""))
            continue
        sys_have = system.get(name)
        if sys_have is not None:
            note = _same(pkg, sys_have, equivalent_backend)
            if note is not None:
                steps.append(Step(name=name, action="keep", have=sys_have, want=pkg.version,
                                  note=("preinstalled" + (f"; {note}" if note else ""))))
                continue
            steps.append(Step(name=name, action="install", have=None, want=pkg.version,
                              note=f"preinstalled {sys_have} differs; installing the locked one into the venv"))
            continue
        steps.append(Step(name=name, action="install", want=pkg.version))
    for name, have in sorted(venv_dists.items()):
        if name not in locked and name not in _TOOLING:
            steps.append(Step(name=name, action="remove", have=have))
    return Plan(target=target.name, steps=tuple(steps))


def format_plan(p: Plan) -> str:
    sign = {"install": "+", "upgrade": "~", "remove": "-", "keep": "="}
    lines = [f"plan for target {p.target}: {len(p.of('install'))} to install, {len(p.of('upgrade'))} to upgrade, "
             f"{len(p.of('remove'))} to remove, {len(p.of('keep'))} unchanged"]
    for s in p.steps:
        if s.action == "keep" and not s.note:
            continue
        ver = {"install": s.want, "upgrade": f"{s.have} -> {s.want}", "remove": s.have, "keep": s.have}[s.action]
        lines.append(f"  {sign[s.action]} {s.name} {ver}" + (f"  ({s.note})" if s.note else ""))
    return "\n".join(lines)


# ---------------------------------------------------------------- apply


@contextmanager
def venv_lock(venv: Path) -> Iterator[None]:
    """One sync at a time per venv (a second waits, then sees the first one's result)."""
    path = venv.parent / f".{venv.name}.tritonlock-lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as fh:
        if os.name != "nt":
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if os.name != "nt":
                import fcntl

                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _pylock_for(lock: Lock, target: LockedTarget, names: set[str], wheelhouse: Path | None) -> str:
    """A PEP 751 document holding only the packages to install (uv verifies every hash in it)."""
    from tritonlock.lockfile import toml_value, wheel_table

    lines = ['lock-version = "1.0"', f'created-by = {toml_value(lock.created_by)}', ""]
    for p in target.packages:
        if p.name not in names:
            continue
        lines += ["[[packages]]", f"name = {toml_value(p.name)}", f"version = {toml_value(p.version)}"]
        if p.index:
            lines.append(f"index = {toml_value(p.index)}")
        wheels = []
        for w in p.wheels:
            url = w.url
            if wheelhouse is not None:
                local = wheelhouse / w.name
                if not local.exists():
                    continue
                url = local.resolve().as_uri()
            wheels.append({**wheel_table(w), "url": url})
        if wheelhouse is not None and not wheels:
            raise SyncError(f"--offline: {p.name} {p.version} is not in the wheelhouse {wheelhouse} — add one of "
                            f"{', '.join(w.name for w in p.wheels)} (`pip download --no-deps` on a networked machine)")
        lines.append("wheels = [" + ", ".join(toml_value(w) for w in wheels) + "]")
        if p.sdist and wheelhouse is None:
            lines.append(f"sdist = {toml_value(wheel_table(p.sdist))}")
        lines.append("")
    return "\n".join(lines) + "\n"


def _uv_failure(stderr: str) -> str:
    """uv's own words, trimmed, with a hash mismatch called out by package."""
    text = stderr.strip()
    m = re.search(r"(?i)(hash|size) mismatch for `([^`=]+)(==[^`]*)?`", text)
    if m:
        return (f"{m.group(1).lower()} mismatch for {m.group(2)}: the file the index served is not the one the lock "
                f"pinned (it was replaced on the index, or the lock was edited); nothing was installed\n{text}")
    return text


def ensure_venv(venv: Path, python: str, *, system_site_packages: bool, interpreter: str | None = None,
                say: Callable[[str], None] = lambda s: None) -> None:
    """Create the venv with the locked Python (uv finds it) when it is missing or has another Python."""
    have = venv_python_minor(venv) if venv_python(venv).exists() else None
    cfg_ssp = venv_config(venv).get("include-system-site-packages", "false").lower() == "true"
    if have == python and cfg_ssp == system_site_packages:
        return
    if have is not None:
        say(f"recreating {venv}: it has Python {have}" + ("" if have != python else
            f" and include-system-site-packages={str(cfg_ssp).lower()}") + f"; the lock wants Python {python}")
    else:
        say(f"creating {venv} with Python {python}")
    base_sites: list[str] = []
    if system_site_packages:
        import shutil

        interpreter = interpreter or shutil.which(f"python{python}") or shutil.which("python3")
        base_sites = _venv_sites(interpreter) if interpreter else []
    args = [_subprocess.uv_bin(), "venv", "--no-config", "--quiet", "--allow-existing" if have is None else "--clear",
            "--python", interpreter or python, str(venv)]
    if system_site_packages:
        args.append("--system-site-packages")
    proc = _subprocess.run(args, timeout=300)
    if proc.returncode != 0:
        raise SyncError(f"could not create {venv} with Python {python}: {proc.stderr.strip()}\n"
                        f"  fix: install Python {python} (or allow uv to download one: UV_PYTHON_DOWNLOADS=automatic), "
                        "or pass --python PATH")
    if base_sites:
        # The interpreter with the preinstalled stack is itself a venv (NGC images, /opt/*/.venv): a new
        # venv's "system" site is that venv's *base*, so chain its site-packages in explicitly.
        for site in _site_dirs(venv):
            (site / "_tritonlock_base.pth").write_text("\n".join(base_sites) + "\n", encoding="utf-8")
        say(f"{venv} also sees the preinstalled packages in {', '.join(base_sites)}")


def apply(p: Plan, lock: Lock, target: LockedTarget, venv: Path, *, offline: bool = False,
          wheelhouse: Path | None = None, say: Callable[[str], None] = lambda s: None) -> None:
    """Install and upgrade through uv with every hash required, then remove extras; uv fetches and
    checks all files before it changes the venv, so a failed download or hash leaves it as it was."""
    import tempfile

    todo = {s.name for s in p.steps if s.action in ("install", "upgrade")}
    py = str(venv_python(venv))
    if todo:
        with tempfile.TemporaryDirectory(prefix="tritonlock-sync-") as tmp:
            doc = Path(tmp) / "pylock.toml"
            doc.write_text(_pylock_for(lock, target, todo, wheelhouse), encoding="utf-8")
            args = [_subprocess.uv_bin(), "pip", "install", "--no-config", "--preview-features", "pylock",
                    "--python", py, "--no-deps", "-r", str(doc)]
            if offline:
                args.append("--offline")
            tty = sys.stderr.isatty()
            say(f"installing {len(todo)} package(s) into {venv}")
            try:  # on a TTY uv draws its own progress bars; elsewhere its output is kept for the error
                rc, err = _subprocess.run_shielded(args, env=None if tty else {"UV_NO_PROGRESS": "1"},
                                                   capture=not tty, on_interrupt=say)
            except KeyboardInterrupt:
                raise SyncError(f"interrupted while installing into {venv}: some packages may be half-updated "
                                "— run `tritonlock sync` again to finish") from None
            if rc != 0:
                raise SyncError(f"installing into {venv} failed; the environment is as it was before:\n"
                                f"{_uv_failure(err)}" + ("\n  fix: add the missing wheels to the wheelhouse, or "
                                                         "drop --offline" if offline else ""))
    removes = [s.name for s in p.of("remove")]
    if removes:
        say(f"removing {len(removes)} package(s) the lock does not list: {', '.join(removes)}")
        proc = _subprocess.run([_subprocess.uv_bin(), "pip", "uninstall", "--no-config", "--python", py, *removes])
        if proc.returncode != 0:
            raise SyncError(f"removing {', '.join(removes)} from {venv} failed: {proc.stderr.strip()}")


# ---------------------------------------------------------------- the whole command


@dataclass(frozen=True, kw_only=True, slots=True)
class SyncOutcome:
    target: LockedTarget
    plan: Plan
    applied: bool
    venv: Path
    host: HostProfile


def sync_project(project: Path, *, venv: Path | None = None, dry_run: bool = False, locked: bool = False,
                 offline: bool = False, find_links: Path | None = None, system_site_packages: bool = False,
                 python: str | None = None, target_name: str | None = None, host: HostProfile | None = None,
                 say: Callable[[str], None] = lambda s: None) -> SyncOutcome:
    """Read the lock, pick this host's target, plan, and (unless dry_run) apply."""
    from tritonlock.lockfile import read_lock

    lock_path = project / "triton-env.lock"
    lock = read_lock(lock_path)
    intent_path = project / "triton-env.toml"
    if intent_path.exists():
        from tritonlock.intent import read_intent
        from tritonlock.lockfile import staleness
        from tritonlock.matrix import load_matrix

        why = staleness(lock, read_intent(intent_path), load_matrix().version)
        if why and locked:
            from tritonlock.errors import LockfileError

            raise LockfileError(f"{lock_path} is stale: {why} — run `tritonlock resolve` and commit the lock "
                                "(--locked refuses to sync a stale lock)")
        if why:
            say(f"warning: {lock_path} is stale ({why}); syncing it as it is — run `tritonlock resolve` to update")
    elif locked:
        from tritonlock.errors import LockfileError

        raise LockfileError(f"{intent_path}: no such file — --locked needs the intent to check the lock against")
    if host is None:
        from tritonlock.host import detect

        host = detect()
    venv = venv or project / ".venv"
    have_py = venv_python_minor(venv) if venv_python(venv).exists() else None
    if python and re.fullmatch(r"3\.\d+", python):
        want_py: str | None = python
    else:
        want_py = None
    target = pick_target(lock, host, name=target_name, python=want_py, lock_path=str(lock_path))
    sel = target.selection
    assert sel.python is not None
    equivalent = None
    if sel.torch:
        try:
            from tritonlock.matrix import load_matrix

            rel = load_matrix().torch_release(sel.torch)
            equivalent = rel.pypi_backend if rel else None
        except TritonlockError:  # the matrix is advisory here; the lock alone is enough to sync
            equivalent = None
    usable = have_py == sel.python and (venv_config(venv).get("include-system-site-packages", "false").lower()
                                         == "true") == system_site_packages
    dists = {}
    for site in _site_dirs(venv) if usable else []:
        dists.update(_read_dists(site))
    system = None
    if system_site_packages:
        base = python if python and not re.fullmatch(r"3\.\d+", python) else None
        system = _system_dists(Path(base) if base else (venv_python(venv) if usable else Path(sys.executable)))
        for k in list(system):
            if k in dists:
                del system[k]
    p = plan(target, dists, system, equivalent)
    if dry_run or (usable and p.noop):
        return SyncOutcome(target=target, plan=p, applied=False, venv=venv, host=host)
    with venv_lock(venv):
        ensure_venv(venv, sel.python, system_site_packages=system_site_packages,
                    interpreter=python if python and not re.fullmatch(r"3\.\d+", python) else None, say=say)
        if not usable:  # a new venv: plan again against what it really holds
            dists = {}
            for site in _site_dirs(venv):
                dists.update(_read_dists(site))
            p = plan(target, dists, system, equivalent)
        apply(p, lock, target, venv, offline=offline or find_links is not None, wheelhouse=find_links, say=say)
    return SyncOutcome(target=target, plan=p, applied=True, venv=venv, host=host)
