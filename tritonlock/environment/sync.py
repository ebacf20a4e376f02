"""Make a venv match the lock's target for the running host: pick, plan, apply through uv — and never destroy
a venv before its replacement is complete (a new venv is built beside the old one and swapped in)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tritonlock.environment import _apply, _venv
from tritonlock.environment import _interp
from tritonlock._files import read_bytes
from tritonlock.environment._apply import venv_lock
from tritonlock.environment._interp import find_base_python, python_minor_of
from tritonlock.environment._plan import Plan, Step, format_plan, plan, with_download
from tritonlock.environment._venv import Damage, siblings, venv_config, venv_damage, venv_python, venv_python_minor
from tritonlock.errors import NoFittingTargetError, SyncError, TritonlockError, UsageError

if TYPE_CHECKING:
    from packaging.version import Version

    from tritonlock.models import HostProfile, Lock, LockedTarget

__all__ = ["Damage", "Plan", "Step", "SyncOutcome", "check_venv", "find_base_python", "format_plan", "pick_target",
           "plan", "python_minor_of", "siblings", "sync_project", "target_fit", "venv_config", "venv_damage",
           "venv_lock", "venv_python", "venv_python_minor"]


# ---------------------------------------------------------------- choosing the target


def _v(s: str) -> Version:
    from packaging.version import Version

    return Version(s)


def target_fit(t: LockedTarget, host: HostProfile, python: str | None = None) -> str | None:
    """Why target t does not fit this host (every reason, "; "-joined: fixing one should not reveal the next), or
    None when it does."""
    from tritonlock._archs import gpu_runs

    sel, spec = t.selection, t.selection.target
    if not sel.ok:
        return "the lock holds a conflict for it, not packages"
    if (spec.os, spec.arch) != (host.os, host.arch):  # another platform: nothing else about it can be fixed here
        return f"it is for {spec.os}/{spec.arch}; this host is {host.os}/{host.arch}"
    why: list[str] = []
    if python and sel.python and sel.python != python:
        why.append(f"it is for Python {sel.python}; this environment has {python}")
    if spec.glibc and host.glibc and _v(host.glibc) < _v(spec.glibc):
        why.append(f"it needs glibc >= {spec.glibc}; this host has {host.glibc}")
    if spec.macos and host.macos and _v(host.macos) < _v(spec.macos):
        why.append(f"it is for macOS {spec.macos} or newer; this Mac has {host.macos}")
    if sel.backend and sel.backend.startswith("cu") and spec.driver is not None:
        # (a target locked without a driver runs its build on the CPU: PyPI's CUDA wheel on a laptop)
        if host.driver is None:
            why.append(f"it is a CUDA target ({sel.backend}) and this host has no NVIDIA driver")
        elif sel.driver_floor and _v(host.driver) < _v(sel.driver_floor):
            why.append(f"{sel.backend} needs driver >= {sel.driver_floor}; this host has {host.driver}")
        why += [f"its build ({sel.backend}) has no code for {g.name} (compute capability {g.cc})"
                for g in host.gpus if gpu_runs(g.cc, sel.archs, sel.ptx) is None]
    if sel.backend and sel.backend.startswith(("rocm", "xpu")):
        # AMD / Intel builds: this host's GPUs of that vendor, each one's target in the build (no cross-target
        # compatibility on AMD GPUs; an override counts only as the target records it)
        vendor = "amd" if sel.backend.startswith("rocm") else "intel"
        mine = [g for g in host.vendor_gpus if g.vendor == vendor]
        if not mine:
            why.append(f"it is an {'AMD' if vendor == 'amd' else 'Intel'} target ({sel.backend}) and this host has "
                       "no such GPU")
        from tritonlock.compat.matrix_vendor import gfx_from_override, isa_major

        override = gfx_from_override(spec.hsa_override) if spec.hsa_override else None
        for vg in mine:
            runs = (override if override and vg.vendor == "amd" and isa_major(override) == isa_major(vg.target)
                    else vg.target)
            if runs not in sel.archs:
                why.append(f"its build ({sel.backend}) has no code for {vg.target}")
    return "; ".join(dict.fromkeys(why)) or None


def pick_target(lock: Lock, host: HostProfile, *, name: str | None = None, python: str | None = None,
                lock_path: str = "triton-env.lock") -> LockedTarget:
    """The lock target for this host: the named one, else the best fit (GPU over CPU, exact GPUs first)."""
    if name is not None:
        from tritonlock.lock.lockfile import named_target

        return named_target(lock, name, lock_path)
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
        raise NoFittingTargetError(f"no target in {lock_path} fits this host ({desc}):\n" + "\n".join(misses)
                        + "\n  fix: add a target for this machine (`tritonlock host --save host.toml`, paste it into "
                        "triton-env.toml) and run `tritonlock resolve`")
    host_ccs = sorted([g.cc for g in host.gpus] + [g.target for g in host.vendor_gpus])

    here = ".".join(host.python.split(".")[:2])

    def score(t: LockedTarget) -> tuple[int, int, int, Version]:
        sel = t.selection
        gpu = 1 if sel.backend and (sel.backend.startswith("cu") and sel.target.driver
                                    or sel.backend.startswith(("rocm", "xpu"))) else 0
        exact = 1 if sorted(sel.target.gpus) == host_ccs else 0
        return (gpu, exact, int(sel.python == here), _v(sel.driver_floor or "0"))

    return max(fits, key=score)


# ---------------------------------------------------------------- looking before acting


@dataclass(frozen=True, kw_only=True, slots=True)
class _State:
    exists: bool
    rebuild: str | None  # why the venv must be rebuilt beside the old one (None: update it in place)
    ssp: bool  # --system-site-packages, asked for or as the venv was made
    inherited: bool  # ssp comes from how the venv was made, not from the command line
    base: str | None  # the interpreter with the preinstalled stack (ssp), or the one --python names
    base_sites: list[str] | None  # where the preinstalled stack lives (None: unknown without asking)
    dists: dict[str, str]
    system: dict[str, str] | None
    damage: tuple[Damage, ...]


def _look(venv: Path, python: str, flag: bool | None, base_given: str | None) -> _State:
    exists = venv_python(venv).exists()
    if not exists and venv.exists() and any(venv.iterdir()) and not (venv / "pyvenv.cfg").exists():
        raise UsageError(f"{venv} exists and is not a virtual environment (no pyvenv.cfg); tritonlock replaces only "
                         "venvs — pass another --venv, or move it away")
    cfg_ssp = exists and _venv.venv_ssp(venv)
    made = _venv.read_made(venv) if exists else None
    ssp = flag if flag is not None else cfg_ssp
    made_base = made.get("base-python") if made and made.get("system-site-packages") else None
    base = base_given or ((made_base if made_base and Path(made_base).exists() else None) if ssp else None)
    have = venv_python_minor(venv) if exists else None
    reason = None
    if not exists:
        reason = "it does not exist"
    elif have != python:
        reason = f"it has Python {have}; the lock wants Python {python}"
    elif cfg_ssp != ssp:
        reason = ("it was made without --system-site-packages" if ssp else
                  "it was made with --system-site-packages and --no-system-site-packages asks for one without")
    elif ssp and base_given and made_base and os.path.realpath(made_base) != os.path.realpath(base_given):
        reason = f"it is built on {made_base}; --python asks for {base_given}"
    if reason is not None:
        if ssp and base is None:
            base = find_base_python(python, _own_prefixes(venv))
            if base is None:
                raise SyncError(f"--system-site-packages: no Python {python} interpreter found to build {venv} on "
                                f"(tritonlock's own environment, {sys.prefix}, does not count)\n"
                                "  fix: pass --python PATH, the interpreter that has the preinstalled packages")
        system = _interp.system_dists(Path(base)) if ssp and base else None
        return _State(exists=exists, rebuild=reason, ssp=ssp, inherited=flag is None and ssp, base=base,
                      base_sites=None, dists={}, system=system, damage=())
    dists = _venv.venv_dists(venv)
    base_sites: list[str] | None = None
    system = None
    if ssp:
        if made and isinstance(made.get("base-sites"), list):
            base_sites = [str(s) for s in made["base-sites"]]
            system = _interp.dists_in(base_sites)
        else:  # a venv made by an older tritonlock or by hand: ask its interpreter what it sees
            system = _interp.system_dists(venv_python(venv))
        system = {k: v for k, v in system.items() if k not in dists}
    # Every package's files, every time the full path runs: the stamp only lets a no-op answer early (file and
    # directory times); it never outranks what the files themselves say (a file deleted, a RECORD torn).
    damage = tuple(venv_damage(venv, base_sites=base_sites or (_base_sites(venv) if ssp else ())))
    return _State(exists=True, rebuild=None, ssp=ssp, inherited=flag is None and ssp, base=base,
                  base_sites=base_sites, dists=dists, system=system, damage=damage)


def source_build_rebuild(p: Plan, target: LockedTarget) -> str | None:
    """Why the venv is rebuilt beside itself rather than changed in place: the plan builds a package whose build
    imports torch, which runs after torch is installed and may fail — then the venv must be the one it was."""
    from tritonlock.lock.builds import TORCH

    todo = {s.name for s in p.steps if s.action in ("install", "upgrade", "reinstall")}
    built = [pk for pk in target.packages if pk.name in todo and pk.build == "source" and TORCH in pk.build_needs]
    if not built:
        return None
    return (f"{', '.join(f'{pk.name} {pk.version}' for pk in built)} {'is' if len(built) == 1 else 'are'} built from "
            "source against torch, so the change is made in a copy (a failed build leaves this venv as it is)")


def _reinstall_names(target: LockedTarget, names: tuple[str, ...] | None, lock_path: str) -> frozenset[str]:
    """The locked packages `sync --reinstall` names (every one when none is named); a name the target does not
    lock is bad input."""
    if names is None:
        return frozenset()
    locked = {p.name for p in target.packages}
    if not names:
        return frozenset(locked)
    want = {_venv.normalize(n): n for n in names}
    unknown = [n for k, n in want.items() if k not in locked]
    if unknown:
        from tritonlock._term import printable

        raise UsageError(f"--reinstall {', '.join(printable(n, 100) for n in unknown)}: target {target.name!r} in "
                         f"{lock_path} does not lock {'it' if len(unknown) == 1 else 'them'} — name packages the lock "
                         "lists (`tritonlock show`), or give --reinstall alone to reinstall every package")
    return frozenset(want)


def _still_damaged(venv: Path, p: Plan) -> None:
    """The claim "repaired" / "now matches", checked: the packages just installed have every file their RECORD
    lists."""
    done = {s.name for s in p.steps if s.action in ("install", "upgrade", "reinstall")}
    left = venv_damage(venv, names=done) if done else []
    if left:
        from tritonlock._term import printable

        raise SyncError(f"{venv} is still damaged after the install (checked against each package's RECORD): "
                        + "; ".join(printable(f"{d.name}: {d.problem}", 300) for d in left)
                        + "\n  fix: `tritonlock sync --reinstall " + " ".join(d.name for d in left) + "`, or remove "
                        f"{venv} and sync again")


def _own_prefixes(venv: Path) -> tuple[Path, ...]:
    """Environments that are never the base of a --system-site-packages venv: tritonlock's own, the venv itself."""
    own = (Path(sys.prefix),) if sys.prefix != sys.base_prefix else ()
    return (*own, venv, *siblings(venv))


def check_venv(venv: Path) -> list[Damage]:
    """Every distribution in the venv whose files do not match its RECORD, or that is installed twice, and files of
    its own that shadow a package (its own or a preinstalled one it sees): what the next `sync` repairs; for
    doctor."""
    return venv_damage(venv, base_sites=_base_sites(venv))


def _base_sites(venv: Path) -> list[str]:
    """The preinstalled site directories a --system-site-packages venv sees: as sync recorded them when it made the
    venv, else as its interpreter's sys.path has them beyond its own (a venv made by hand or an older tritonlock);
    none for a venv without the flag."""
    from tritonlock.environment._noop import read_made

    if not _venv.venv_ssp(venv):
        return []
    made = read_made(venv) or {}
    if isinstance(made.get("base-sites"), list):
        return [str(x) for x in made["base-sites"]]
    own = {os.path.realpath(s) for s in _venv.site_dirs(venv)}
    return [s for s in _interp.path_sites(str(venv_python(venv))) if os.path.realpath(s) not in own]


# ---------------------------------------------------------------- the whole command


@dataclass(frozen=True, kw_only=True, slots=True)
class SyncOutcome:
    target: LockedTarget
    plan: Plan
    applied: bool
    venv: Path
    host: HostProfile
    rebuilt: bool = False
    strays_removed: int = 0  # files of the venv's own that shadowed preinstalled packages, removed


def sync_project(project: Path, *, venv: Path | None = None, dry_run: bool = False, locked: bool = False,
                 offline: bool = False, find_links: Path | None = None, system_site_packages: bool | None = None,
                 python: str | None = None, target_name: str | None = None, host: HostProfile | None = None,
                 reinstall: tuple[str, ...] | None = None, say: Callable[[str], None] = lambda s: None,
                 show_plan: Callable[[Plan], None] = lambda p: None, install_project: bool = True) -> SyncOutcome:
    """Read the lock, pick this host's target, plan, and (unless dry_run) apply. `system_site_packages` None
    means "as the venv was made"; `reinstall` names packages to install again whatever their state (() means
    all of them); `show_plan` sees the plan before anything is installed. `install_project`: where the intent is a
    buildable project's pyproject.toml, the project itself is installed editable once the venv matches the lock
    (tritonlock.environment._project)."""
    out = _sync(project, venv=venv, dry_run=dry_run, locked=locked, offline=offline, find_links=find_links,
                system_site_packages=system_site_packages, python=python, target_name=target_name, host=host,
                reinstall=reinstall, say=say, show_plan=show_plan)
    if not install_project:
        return out
    from tritonlock.environment import _project

    p = _project.buildable(project)
    if p is None:
        return out
    why = _project.why_install(p, out.venv, _venv.venv_dists(out.venv) if out.venv.is_dir() else {})
    if why is None:
        return out
    if dry_run:
        say(f"would be {why}")
        return out
    from tritonlock.lock.lockfile import read_lock

    say(why)
    with _apply.venv_lock(out.venv):
        _project.install(p, out.venv, default_index=read_lock(project / "triton-env.lock").default_index,
                         offline=offline or find_links is not None, say=say)
        _noop_restamp(out.venv)
    import dataclasses

    return dataclasses.replace(out, applied=True)


def _project_key(project: Path, intent_path: Path) -> str:
    """The project's part of the no-op key (see _noop.matching_stamp): only a pyproject.toml intent has one."""
    if intent_path.name != "pyproject.toml":
        return ""
    from tritonlock.environment._project import key_part

    return key_part(project)


def _noop_restamp(venv: Path) -> None:
    """The completed-sync stamp written again for the venv as it now is (the project just installed into it), with
    the same key: the next no-op check sees the project's files too."""
    from tritonlock.environment._noop import read_made, read_synced

    data = read_synced(venv)
    if data is None:
        return
    made = read_made(venv) or {}
    base = made.get("base-sites") if isinstance(made.get("base-sites"), list) else []
    _venv.write_synced(venv, key=data.get("key"), target=str(data.get("target")), packages=int(data["packages"]),
                       system_site_packages=bool(data.get("system-site-packages")), base_sites=base or [])


def _sync(project: Path, *, venv: Path | None, dry_run: bool, locked: bool, offline: bool, find_links: Path | None,
          system_site_packages: bool | None, python: str | None, target_name: str | None, host: HostProfile | None,
          reinstall: tuple[str, ...] | None, say: Callable[[str], None],
          show_plan: Callable[[Plan], None]) -> SyncOutcome:
    import re

    from tritonlock.lock.lockfile import read_lock

    lock_path = project / "triton-env.lock"
    lock = read_lock(lock_path)
    try:
        lock_bytes = read_bytes(lock_path)  # for the no-op stamp (a lock changed in between fails its key: safe)
    except OSError:
        lock_bytes = b""
    from tritonlock._discover import intent_bytes as relevant_bytes, intent_file

    intent_path = intent_file(project)
    intent_bytes = None
    stale = None
    from tritonlock._machine import raw_machine_key

    if intent_path.exists():
        from tritonlock.intent.read import read_intent
        from tritonlock.lock.lockfile import staleness
        from tritonlock.compat.matrix import load_matrix

        intent_bytes = relevant_bytes(intent_path)
        from tritonlock import _fast

        # a lock written from exactly these bytes (the intent's and its target files') is fresh without parsing them
        fresh = lock.inputs_from != "file" and _fast.lock_is_fresh(intent_path, lock_path, None)
        stale = None if fresh else staleness(lock, read_intent(intent_path), load_matrix().version)
        if fresh and b"@" in intent_bytes:  # (not parsed: its index credentials are still needed to install)
            from tritonlock.intent.read import learn_credentials

            learn_credentials(intent_path)
        if stale and locked:
            from tritonlock.errors import LockfileError

            raise LockfileError(f"{lock_path} is stale: {stale} — run `tritonlock resolve` and commit the lock "
                                "(--locked refuses to sync a stale lock)")
        if stale:
            say(f"warning: {lock_path} is stale ({stale}); syncing it as it is — run `tritonlock resolve` to update "
                "it (`sync --locked` refuses a stale lock instead)")
    elif locked:
        from tritonlock.errors import LockfileError

        raise LockfileError(f"{intent_path}: no such file — --locked needs the intent to check the lock against")
    if host is None:
        from tritonlock.host import detect

        host = detect()
    venv = venv or project / ".venv"
    from tritonlock._subprocess import named_python

    base_given = named_python(python) if python and not re.fullmatch(r"3\.\d+", python) else None
    want_py = python if python and base_given is None else None
    if base_given:
        if not Path(base_given).exists():
            raise UsageError(f"--python {base_given}: no such interpreter — pass a path to a Python, or a version "
                             "like 3.12")
        want_py = _interp.python_minor_of(base_given)
    target = pick_target(lock, host, name=target_name, python=want_py, lock_path=str(lock_path))
    sel = target.selection
    assert sel.python is not None
    if want_py and want_py != sel.python:
        raise UsageError(f"--python {python} is Python {want_py}; target {target.name!r} is locked for Python "
                         f"{sel.python} — pass a Python {sel.python} interpreter")
    equivalent = None
    if sel.torch:
        try:
            from tritonlock.compat.matrix import load_matrix

            rel = load_matrix().torch_release(sel.torch)
            equivalent = rel.pypi_backend if rel else None
        except TritonlockError:  # the matrix is advisory here; the lock alone is enough to sync
            equivalent = None
    key = None if stale else _venv.sync_key(lock_bytes=lock_bytes, intent_bytes=intent_bytes,
                                            machine=raw_machine_key(), target=target_name, python=python,
                                            files=_venv.target_files(project, intent_bytes)
                                            + _project_key(project, intent_path))
    from tritonlock.environment import _project

    own_project = _project.installed_here(venv) if venv.is_dir() else None
    again = _reinstall_names(target, reinstall, str(lock_path))

    def decide() -> tuple[_State, Plan]:
        st = _look(venv, sel.python or "", system_site_packages, base_given)
        p = plan(target, st.dists, st.system, equivalent,
                 {d.name: d.problem for d in st.damage if d.kind != "stray-base"}, again,
                 project=own_project)
        why = source_build_rebuild(p, target) if st.rebuild is None and not st.ssp else None
        if why:  # a build that may fail after torch is in: never in the venv itself
            import dataclasses

            st = dataclasses.replace(st, rebuild=why)
        return st, p

    if dry_run:
        st, p = decide()
        if st.rebuild and st.exists:
            say(f"would rebuild {venv} beside the old one: {st.rebuild}")
        for d in (d for d in st.damage if d.kind == "stray-base"):
            say(f"{venv}: {d.problem}; sync would remove {'it' if len(d.strays) == 1 else 'them'}")
        return SyncOutcome(target=target, plan=with_download(p, target, sel.python), applied=False, venv=venv,
                           host=host)
    def need_uv(st: _State) -> None:
        """uv installs every change: without it nothing is changed, and the error says so (exit 5, as sync's)."""
        from tritonlock._subprocess import uv_bin
        from tritonlock.errors import UvMissingError

        try:
            uv_bin()
        except UvMissingError as err:
            state = f"{venv} is unchanged" if st.exists else f"nothing was created ({venv} does not exist)"
            raise SyncError(f"sync failed; {state}: {err}") from None

    with _apply.venv_lock(venv):
        _apply.recover(venv, say)
        st, p = decide()
        if not p.noop or st.rebuild is not None:
            need_uv(st)
        if st.inherited and not p.noop:
            say(f"keeping --system-site-packages: {venv} was made with it"
                + (f" on {st.base}" if st.base else "") + " (pass --no-system-site-packages to rebuild it without)")
        if st.rebuild is None:
            from tritonlock._term import printable

            junk = p.of("leave")
            if junk and not p.noop:
                dirs = ", ".join(printable(str(d), 300) for d in _venv.invalid_dist_infos(venv))
                raise SyncError(f"{venv} holds distributions whose names are not valid ({dirs}): installers refuse "
                                "to work on such a venv, and tritonlock never hands such a name to one; nothing was "
                                "changed\n  fix: remove those directories (no installer made them), then sync again")
            for j in junk:
                say(f"warning: {venv} holds a .dist-info named {printable(repr(j.name), 300)}, which is not a valid "
                    "distribution name — remove it by hand")
            over = [d for d in st.damage if d.kind == "stray-base"]
            for d in over:  # no installer wrote them, and the preinstalled copy they shadow is intact
                say(f"{venv}: {d.problem}; removing {'it' if len(d.strays) == 1 else 'them'}")
                _apply.remove_strays(d.strays)
            left = [x for x in venv_damage(venv, base_sites=st.base_sites or _base_sites(venv))
                    if x.kind == "stray-base"] if over else []
            if left:
                raise SyncError(f"{venv}: could not remove " + ", ".join(x for d in left for x in d.strays)
                                + "\n  fix: remove them by hand, then sync again")
            if p.noop:
                _apply.stamp(venv, key, target, p, st.ssp, st.base_sites)
                return SyncOutcome(target=target, plan=p, applied=bool(over), venv=venv, host=host,
                                   strays_removed=sum(len(d.strays) for d in over))
            strays = [d for d in st.damage if d.kind == "stray"]
            broken = [d for d in st.damage if d.kind not in ("stray", "stray-base")]
            if broken:
                say(f"{venv}: {len(broken)} package(s) damaged (a sync or install was stopped half-way?); "
                    "reinstalling them")
            for d in strays:
                say(f"{venv}: {d.problem}; removing {'it' if len(d.strays) == 1 else 'them'} and reinstalling {d.name}")
            show_plan(with_download(p, target, sel.python))
            stopped = _apply.apply(p, lock, target, venv, offline=offline or find_links is not None,
                                   wheelhouse=find_links, say=say, damage=st.damage)
            _still_damaged(venv, p)
            _apply.stamp(venv, key, target, p, st.ssp, st.base_sites)
            if stopped:
                from tritonlock.errors import SyncInterrupted

                raise SyncInterrupted(f"interrupted (Ctrl-C) while installing into {venv}, which was let finish: it "
                                      f"now matches target {target.name} (checked: every installed package's files "
                                      "as its RECORD lists); nothing after the install was run")
            return SyncOutcome(target=target, plan=p, applied=True, venv=venv, host=host)
        p = _apply.rebuild(venv, st.rebuild if st.exists else None, sel.python, lock, target, equivalent,
                           system_site_packages=st.ssp, base=st.base, key=key,
                           offline=offline or find_links is not None, wheelhouse=find_links, say=say,
                           show_plan=show_plan)
        return SyncOutcome(target=target, plan=p, applied=True, venv=venv, host=host, rebuilt=st.exists)

