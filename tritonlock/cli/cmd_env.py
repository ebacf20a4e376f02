"""The commands of the environment: sync, verify, doctor."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from tritonlock.cli._base import LOCK_FILE, echo, echo_json, json_opt, project_opt, project_paths, warn_if_stale
from tritonlock.errors import TritonlockError, UsageError


@click.command()
@project_opt
@click.option("--venv", metavar="DIR", help="The environment to sync (default: PROJECT/.venv).")
@click.option("--dry-run", is_flag=True, help="Print the plan (install / upgrade / remove / keep) and change nothing.")
@click.option("--locked", is_flag=True,
              help="Refuse a lock that is stale against triton-env.toml (exit 2; for CI). Without it a stale lock "
                   "is synced as it is, after a warning that names the fix (`tritonlock resolve`).")
@click.option("--offline", is_flag=True, help="Use only uv's cache (or --find-links); never the network.")
@click.option("--find-links", metavar="DIR", help="A wheelhouse to install from instead of the indexes (implies --offline).")
@click.option("--system-site-packages/--no-system-site-packages", default=None,
              help="Build the venv on an interpreter that already has torch/triton (--python, else the locked "
                   "Python on PATH) and install only what is missing. Remembered: a later sync keeps it unless "
                   "--no-system-site-packages is given.")
@click.option("--python", "python_", metavar="VERSION|PATH", help="Interpreter for the venv (default: the locked Python).")
@click.option("--target", "target_name", help="Use this lock target instead of the one that fits this host.")
@click.option("--no-verify", is_flag=True, help="Skip running the Triton reference kernels afterwards.")
@click.option("--verify", "force_verify", is_flag=True,
              help="Run the kernels even when they passed on exactly this venv before, with nothing changed since "
                   "(without it, such a sync says \"verified at <time> with nothing changed since\" and runs "
                   "nothing).")
@click.option("--reinstall", is_flag=True,
              help="Install the named packages (PKG…) again from the lock, whatever state they are in; every locked "
                   "package when none is named.")
@click.option("--no-install-project", is_flag=True,
              help="Where the intent is a buildable project's pyproject.toml, do not install the project itself "
                   "(by default it is installed editable, as uv does).")
@click.argument("packages", nargs=-1, metavar="[PKG]...")
@json_opt
def sync(project: str, venv: str | None, dry_run: bool, locked: bool, offline: bool, find_links: str | None,
         system_site_packages: bool | None, python_: str | None, target_name: str | None, no_verify: bool,
         reinstall: bool, packages: tuple[str, ...], as_json: bool, force_verify: bool = False,
         no_install_project: bool = False) -> None:
    """Make the venv match the lock for this machine, then verify it with Triton kernels.

    The plan (with the download size) is printed before anything is installed. A venv that must be rebuilt (another
    Python, --system-site-packages changed) is built beside the old one and replaces it only when complete.
    Every package's files are checked against its RECORD, and damaged ones (a file or folder deleted, a RECORD
    torn by a kill) are installed again; `--reinstall [PKG]...` does so on request. Ctrl-C stops at once and
    exits 130 (a venv being built beside the old one is removed; an in-place install is let finish first).
    A venv that matches the lock and passed verify as it is now (same files, lock, interpreter, driver and GPUs) is
    not verified again: sync says when it was.
    """
    if no_verify and force_verify:
        raise UsageError("--verify and --no-verify ask for opposite things — pass one of them")
    if packages and not reinstall:
        raise UsageError(f"sync takes package names only with --reinstall (got {' '.join(packages)!r}) — "
                         "`tritonlock sync --reinstall PKG...`")
    root = Path(project)
    venv_dir = Path(venv) if venv else root / ".venv"
    if no_verify and not dry_run and not as_json and not reinstall:
        # No-op fast path: the venv's completed-sync stamp vs the lock, intent, matrix and machine (file stats only).
        from tritonlock.environment._venv import already_synced

        line = already_synced(root, venv_dir, target=target_name, python=python_,
                              system_site_packages=system_site_packages, locked=locked)
        if line is not None:
            echo(line)
            return
    reuse = not (no_verify or dry_run or as_json or reinstall or force_verify)
    if reuse:
        # No-op, verified: the same stamp, and a verify that passed on exactly this venv (tritonlock.environment._noop)
        from tritonlock.environment._noop import already_verified

        line = already_verified(root, venv_dir, target=target_name, python=python_,
                                system_site_packages=system_site_packages, locked=locked)
        if line is not None:
            echo(line)
            return
    from tritonlock.environment.sync import format_plan, sync_project

    from tritonlock._term import colour, styled

    tty = sys.stderr.isatty()
    style = click.style if colour(sys.stdout) else None

    def say(msg: str) -> None:
        head, sep, rest = msg.partition(": ")
        if head == "warning" and sep:
            msg = styled("warning:", err=True, fg="yellow") + " " + rest
        echo(msg, err=True)

    def show_plan(p: Any) -> None:
        if not as_json:
            echo(format_plan(p, style=style))

    out = sync_project(root, venv=venv_dir, dry_run=dry_run, locked=locked,
                       offline=offline, find_links=Path(find_links) if find_links else None,
                       system_site_packages=system_site_packages, python=python_, target_name=target_name,
                       reinstall=packages if reinstall else None,
                       say=say if (tty or not as_json) else (lambda m: None), show_plan=show_plan,
                       install_project=not no_install_project)
    result = None
    if reuse and out.plan.noop and not out.applied:  # the full check found nothing to do: verified as it is?
        from tritonlock.environment._noop import matching_stamp, verified_line

        stamp = matching_stamp(root, out.venv, target=target_name, python=python_,
                               system_site_packages=system_site_packages, locked=locked)
        line = verified_line(out.venv, stamp) if stamp is not None else None
        if line is not None:
            echo(line)
            return
    if not as_json:
        _sync_state_lines(out, dry_run, show_plan)  # what state the venv is in, said before verify starts
    if not dry_run and not no_verify:
        try:
            from tritonlock.lock.lockfile import read_lock

            result = _run_verify(out.venv, out.target.selection, out.host, as_json=as_json,
                                 **_native_args(read_lock(root / LOCK_FILE), out.target))
        except KeyboardInterrupt:
            from tritonlock.errors import SyncInterrupted

            raise SyncInterrupted(f"interrupted (Ctrl-C) during verify; {out.venv} "
                                  + ("was changed and " if out.applied else "")
                                  + f"matches target {out.target.name} (checked before verify started); verify did "
                                    "not finish and its runner was stopped — `tritonlock verify` runs it again"
                                  ) from None
        _record_verify(root, out.venv, result.ok, target_name, python_, locked)
    if as_json:
        from tritonlock.environment.report import sync_json

        echo_json(sync_json(out, result.to_json() if result is not None else None))
    elif result is not None:
        from tritonlock._term import highlight
        from tritonlock.verify.report import format_report

        echo(highlight(format_report(result)))
    if result is not None and not result.ok:
        sys.exit(1)


def _record_verify(root: Path, venv: Path, ok: bool, target_name: str | None, python_: str | None,
                   locked: bool) -> None:
    """After verify inside sync: a pass is recorded against the venv as its stamp has it — only when the stamp still
    matches it (nothing changed while verify ran but the byte-code caches verify writes); anything else drops the
    record, so the next plain sync verifies again."""
    from tritonlock.environment import _noop

    stamp = _noop.matching_stamp(root, venv, target=target_name, python=python_, system_site_packages=None,
                                 locked=locked) if ok else None
    if stamp is not None:
        stamp = _noop.settle(venv, stamp)
    _noop.write_verified(venv, ok=ok and stamp is not None, stamp=stamp)


def _sync_state_lines(out: Any, dry_run: bool, show_plan: Any) -> None:
    """sync's account of the venv (its plan with --dry-run): printed as soon as the venv is in that state, before
    verify starts, so that a verify stopped by Ctrl-C leaves the state said."""
    from tritonlock.environment import report

    if dry_run:
        show_plan(out.plan)
        for line in report.plan_build_lines(out):
            echo(line)
    else:
        echo(report.state_line(out))
    for line in report.first_use_lines(out):  # (what this machine lacks for a package's first call)
        from tritonlock._term import styled

        echo(styled("warning:", err=True, fg="yellow") + line.removeprefix("warning:"), err=True)


def _run_verify(venv: Path, sel: Any, host: Any, as_json: bool = False, **kw: Any) -> Any:
    from tritonlock.environment.sync import venv_python
    from tritonlock.verify import run_verify

    gpu_build = bool(sel.backend and sel.backend.startswith("cu") and sel.target.driver)
    python = str(venv_python(venv))
    with _progress(python, as_json) as progress:
        return run_verify(python, backend=sel.backend, triton=sel.triton,
                          expect_gpu=gpu_build and host.driver is not None, driver=host.driver,
                          on_progress=progress.event, **kw)


def _progress(python: str, as_json: bool) -> Any:
    """verify's live lines on stderr: the header at once, then a line per phase of the runner (nothing under --json)."""
    from tritonlock._term import PhaseProgress

    class _Quiet(PhaseProgress):
        def __enter__(self) -> PhaseProgress:
            return self

        def event(self, event: dict[str, Any]) -> None:
            pass

    return (_Quiet if as_json else PhaseProgress)(f"verify: checking {python}")


def _native_args(lock: Any, locked: Any) -> dict[str, Any]:
    """What verify needs of the lock for the packages' native code: the packages the user named, and the facts."""
    from tritonlock.lock.report import unchecked_native
    from tritonlock.verify.natives import lock_facts

    # (a package locked with its native code unchecked is imported too, whatever its files hold: only that proves it)
    unchecked = tuple(p.name for p, _ in unchecked_native(locked, lock.native))
    return {"imports": tuple(dict.fromkeys((*(d.name for d in locked.selection.direct), *unchecked))),
            "import_scope": tuple(p.name for p in locked.packages),
            "lock_facts": lock_facts(locked.packages, lock.native)}


@click.command()
@project_opt
@click.option("--venv", metavar="DIR", help="The environment to verify (default: PROJECT/.venv).")
@click.option("--python", "python_", metavar="PATH", help="Verify this interpreter instead of a venv.")
@click.option("--quick", is_flag=True, help="Correctness only, small sizes, no timing, no torch.compile check.")
@click.option("--cold", is_flag=True, help="Compile into fresh, empty Triton and Inductor caches (cold compile times).")
@click.option("--no-reuse", is_flag=True,
              help="Run the torch.compile check even when it passed in this same environment before.")
@click.option("--profile", metavar="FILE", help="Write a torch.profiler trace of the kernels (chrome JSON).")
@click.option("--interpret", is_flag=True, help="Force the Triton interpreter (CPU), even with a GPU.")
@click.option("--record", is_flag=True,
              help="Record the result in triton-env.verified.toml beside the lock (the lock is not changed).")
@click.option("--target", "target_name", help="Check against this lock target instead of the one that fits this host.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), metavar="N",
              help="Draw the checks' random inputs from seed N (every report names its seed): repeats a run's inputs.")
@click.option("--strict-speed", is_flag=True,
              help="Fail (exit 1) when a timed row is outside the band expected for this GPU (compat/bands.toml); "
                   "by default that is a warning.")
@json_opt
def verify(project: str, venv: str | None, python_: str | None, quick: bool, cold: bool, no_reuse: bool,
           profile: str | None, interpret: bool, record: bool, target_name: str | None, seed: int | None,
           strict_speed: bool, as_json: bool) -> None:
    """Prove the environment works: imports, CUDA build, GPU archs, then Triton kernels vs torch, each timed row
    judged against the speed expected for this GPU (with the likely cause when it is outside)."""
    from tritonlock._files import check_writes
    from tritonlock.environment._venv import venv_python  # (not sync's module: nothing more before the runner starts)
    from tritonlock.verify import start_verify
    from tritonlock.verify.report import format_report

    root = Path(project)
    lock_path = root / LOCK_FILE
    if profile is not None:  # what it will write is checked before anything runs
        check_writes([Path(profile)], what="verify --profile", force=False, force_flag=None)
    if record:
        from tritonlock.records import RECORDS_FILE

        check_writes([root / RECORDS_FILE], what="verify --record", force=False, replace="edit")
    if target_name is not None:  # an unknown --target is bad input before anything else is looked at
        from tritonlock.lock.lockfile import named_target, read_lock

        named_target(read_lock(lock_path), target_name, lock_path)
    env_dir = Path(venv) if venv else root / ".venv"
    from tritonlock._subprocess import named_python

    interp = named_python(python_) if python_ else str(venv_python(env_dir))
    if not Path(interp).exists():
        raise UsageError(f"{interp}: no such interpreter — " + ("pass --python PATH to an existing interpreter"
                         if python_ else _make_venv_step(root, env_dir, target_name)))
    if record and not lock_path.exists():
        raise UsageError(f"{lock_path}: no such file — --record names the lock target it verified; run "
                         "`tritonlock resolve` first")
    # the runner first: its `import torch` (seconds) overlaps reading the host and the lock below, and what the lock
    # expects follows on its stdin; its phases show as they happen (stderr; nothing under --json)
    progress = _progress(interp, as_json)
    progress.__enter__()
    try:
        started = start_verify(interp, interpret=True if interpret else None, quick=quick, profile=profile, cold=cold,
                               reuse=not no_reuse, seed=seed, on_progress=progress.event)
    except BaseException:
        progress.__exit__(None, None, None)
        raise
    try:
        backend = triton = driver = None
        expect_gpu = None
        native: dict[str, Any] = {}
        if lock_path.exists():
            from tritonlock.host import detect
            from tritonlock.lock.lockfile import read_lock
            from tritonlock.environment.sync import pick_target

            # the driver and GPUs as the last run on this machine found them (same driver files, nodes, variables)
            # while the runner waits for them; a run that records what it proved probes afresh
            host = detect(toolkit=False, cached=not record)
            driver = host.driver
            lock = read_lock(lock_path)  # a lock edited by hand or not valid TOML is refused (exit 2), as everywhere
            try:
                warn_if_stale(project, lock, "checking against")
                locked = pick_target(lock, host, name=target_name, lock_path=str(lock_path))
                sel = locked.selection
            except TritonlockError as err:
                if record or target_name:
                    raise
                # every target's blocker, as sync names them (the fix line is sync's, not verify's)
                lines = [x for x in str(err).splitlines() if not x.strip().startswith("fix:")]
                echo("\n".join([f"warning: not checking against the lock: {lines[0]}", *lines[1:]]), err=True)
            else:
                backend, triton = sel.backend, sel.triton
                expect_gpu = (bool(backend and backend.startswith("cu") and sel.target.driver)
                              and host.driver is not None)
                native = _native_args(lock, locked)
    except BaseException:
        started.abandon()
        progress.__exit__(None, None, None)
        raise
    try:
        from tritonlock.host import shared_gpu_link  # asked only when the runner's NVML could not read the link

        result = started.finish(backend=backend, triton=triton, expect_gpu=expect_gpu, driver=driver,
                                host_link=shared_gpu_link, **native)
    finally:
        progress.__exit__(None, None, None)
    rec = None
    if record:
        from tritonlock import records
        from tritonlock._caveats import run_caveats

        made_in = env_dir if not python_ else Path(python_).absolute().parent.parent
        caveats = run_caveats(host, result, interpreter=interp, target=locked.name,
                                      venv=made_in if (made_in / "pyvenv.cfg").is_file() else None)
        rec = records.make_record(locked, host, result, caveats=caveats)
        records.add_records(root / records.RECORDS_FILE, [rec])
    if as_json:
        echo_json({**result.to_json(), **({"record": records.record_json(rec)} if rec else {})})
    else:
        from tritonlock._term import highlight

        echo(highlight(format_report(result)))
        if rec:
            echo(f"recorded: target {rec.target} on {rec.host} ({'passed' if rec.ok else 'FAILED'}) in "
                  f"{root / records.RECORDS_FILE}")
            for c in rec.caveats:
                echo(f"  caveat: {c}" + (" — this record does not count for a GPU target"
                                               if records.is_gpu_target(locked) else ""))
    slow = result.outside_band
    if strict_speed and slow and not as_json:
        echo(f"error: --strict-speed: {len(slow)} timed row(s) outside the band expected for this GPU "
              "(see the speed lines above)", err=True)
    sys.exit(0 if result.ok and not (strict_speed and slow) else 1)


def _make_venv_step(root: Path, env_dir: Path, target_name: str | None) -> str:
    """What makes the venv verify was asked to check, where that step would work here: `sync` — or, where sync would
    fail (no lock, no intent, no lock target for this machine), the step before it, and the way around it."""
    from tritonlock.lock.lockfile import read_lock

    other = "or pass --venv DIR or --python PATH to an environment that exists"
    lock_path = root / LOCK_FILE
    if not lock_path.is_file():
        intent_path = project_paths(str(root))[0]
        if not intent_path.is_file():
            return (f"there is no {lock_path} to sync it from, nor a {intent_path.name} to lock: run `tritonlock init`, "
                    f"`tritonlock resolve`, then `tritonlock sync` — {other}")
        return f"there is no {lock_path} to sync it from: run `tritonlock resolve`, then `tritonlock sync` — {other}"
    from tritonlock.environment.sync import pick_target
    from tritonlock.host import detect

    try:
        pick_target(read_lock(lock_path), detect(toolkit=False), name=target_name, lock_path=str(lock_path))
    except TritonlockError as err:
        first = str(err).splitlines()[0].removesuffix(":")
        return (f"`tritonlock sync` cannot make it here ({first}; `tritonlock sync` says why per target) — {other}, "
                "or lock a target for this machine first")
    venv_opt = f" --venv {env_dir}" if env_dir != root / ".venv" else ""
    return f"create the venv with `tritonlock sync{venv_opt}` first, {other}"


@click.command()
@project_opt
@click.option("--venv", metavar="DIR", help="The environment to examine (default: PROJECT/.venv).")
@click.option("--python", "python_", metavar="PATH", help="Examine this interpreter's environment instead of a venv.")
@json_opt
def doctor(project: str, venv: str | None, python_: str | None, as_json: bool) -> None:
    """Diagnose the host and the venv: each finding with evidence and a fix. Changes nothing.

    Exits 1 when any finding is an error. Host facts honour the TRITONLOCK_* overrides (see `tritonlock host`).
    """
    from tritonlock.doctor import examine, format_report, report_json, venv_python

    report = examine(Path(project), python_ or (str(venv_python(Path(venv))) if venv else None))
    if as_json:
        echo_json(report_json(report))
    else:
        from tritonlock._term import highlight

        echo(highlight(format_report(report)))
    sys.exit(report.exit_code)
