"""The everyday verbs of uv, GPU-aware: add, remove, run, tree."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from tritonlock.cli._base import echo, echo_json, json_opt, project_opt, project_paths, warn_if_stale


@click.command()
@project_opt
@click.argument("packages", nargs=-1, metavar="[PKG]...")
@click.option("--target", "target_name", help="Only this lock target (default: every target).")
@click.option("--invert", "-i", is_flag=True,
              help="Show who requires each package (with PKG: who pulls PKG in), down to what the lock was asked "
                   "for.")
@click.option("--depth", "-d", type=click.IntRange(min=0), default=255, show_default=True,
              help="How many levels deep to draw.")
@json_opt
def tree(project: str, packages: tuple[str, ...], target_name: str | None, invert: bool, depth: int,
         as_json: bool) -> None:
    """Show the locked dependency graph of each target, from triton-env.lock alone (no network, no venv).

    With PKG, only PKG's subtree; with --invert, the packages that require it, up to what the lock was asked for
    (torch's decision, your packages). Targets with the same graph are drawn once.
    """
    from tritonlock.lock import tree as locktree
    from tritonlock.lock.lockfile import named_target, read_lock

    _, lock_path = project_paths(project)
    lock = read_lock(lock_path)
    warn_if_stale(project, lock, "showing")
    targets = ([named_target(lock, target_name, lock_path, otherwise="show them all")] if target_name is not None
               else list(lock.targets))
    if locktree.no_edges(lock, str(lock_path)):
        raise locktree.no_edges_error(lock, str(lock_path))
    names = locktree.check_names(targets, packages, str(lock_path)) if packages else ()
    if as_json:
        echo_json(locktree.as_json(lock, targets))
        return
    echo(locktree.text(targets, packages=names, invert=invert, depth=depth))


_sync_opts = [
    click.option("--no-sync", is_flag=True, help="Stop after the lock: leave the venv as it is."),
    click.option("--verify", "verify_after", is_flag=True,
                 help="After the sync, verify the venv with Triton kernels (as plain `tritonlock sync` does)."),
    click.option("--venv", metavar="DIR", help="The environment to sync (default: PROJECT/.venv)."),
    click.option("--target-file", metavar="FILE", help="Lock for a machine saved with `tritonlock host --save`."),
]


def _with_sync_opts(f: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(_sync_opts):
        f = opt(f)
    return f


def _edit_lock_sync(ctx: click.Context, project: str, verb: str, edit: object, no_sync: bool, verify_after: bool,
                    venv: str | None, target_file: str | None, free: tuple[str, ...] = ()) -> None:
    """What add and remove share once the intent's edit is known: say it, lock every target (or put both files back),
    then sync this machine's target."""
    from tritonlock._term import TargetProgress
    from tritonlock.cli.cmd_lock import said_lock
    from tritonlock.verbs import edit_and_lock

    _, lock_path = project_paths(project)
    with TargetProgress() as progress:
        out = edit_and_lock(edit, lock_path, verb=verb, target_file=target_file, progress=progress,  # type: ignore[arg-type]
                            free=free)
    for line in edit.said:  # type: ignore[attr-defined]
        echo(line)
    said_lock(out, lock_path, False)
    if no_sync:
        echo(f"not synced (--no-sync): `tritonlock sync` makes {Path(venv) if venv else Path(project) / '.venv'} "
             "match the lock")
        return
    _sync_after(ctx, project, venv, verify_after, verb)


def _sync_after(ctx: click.Context, project: str, venv: str | None, verify_after: bool, verb: str) -> None:
    """`tritonlock sync` of this machine's target, as if typed (its plan, its state line); where no lock target fits
    this machine, a note instead of an error: the intent and the lock are done."""
    from tritonlock.cli.cmd_env import sync
    from tritonlock.errors import NoFittingTargetError, SyncError

    try:
        ctx.invoke(sync, project=project, venv=venv, dry_run=False, locked=False, offline=False, find_links=None,
                   system_site_packages=None, python_=None, target_name=None, no_verify=not verify_after,
                   reinstall=False, packages=(), as_json=False)
    except NoFittingTargetError as err:
        echo(f"note: not synced — {str(err).splitlines()[0]} (the lock is written; `tritonlock sync --target NAME` "
             "installs a target by name)", err=True)
        return
    except SyncError as err:
        _, lock_path = project_paths(project)
        intent_path, _ = project_paths(project)
        err.args = (f"{err}\n  {intent_path.name} and {lock_path.name} hold the change (`tritonlock {verb}` is "
                    "done with them); `tritonlock sync` tries the sync again", *err.args[1:])
        raise
    if not verify_after:
        echo("not verified: plain `tritonlock sync` (or `tritonlock verify`) runs the Triton kernels", err=True)


@click.command()
@project_opt
@click.argument("requirements", nargs=-1, metavar="PKG...")
@_with_sync_opts
@click.pass_context
def add(ctx: click.Context, project: str, requirements: tuple[str, ...], no_sync: bool, verify_after: bool,
        venv: str | None, target_file: str | None) -> None:
    """Add packages to the intent, lock, and sync — as `uv add`.

    PKG takes the forms uv takes: "vllm", "vllm>=0.19", "vllm[audio]", "vllm; sys_platform == 'linux'", "pkg @
    https://…/pkg.whl". A package the intent already names (with the same markers) has its requirement replaced; torch
    and triton set [environment].torch / .triton. The intent keeps its comments and layout (triton-env.toml's
    [environment].packages, or pyproject.toml's [project].dependencies). When any target cannot be locked, nothing is
    changed — the intent and the lock stay as they were — and the error says why (exit 3 for a conflict).
    """
    from tritonlock.intent.edit import add as add_edit

    intent_path, _ = project_paths(project)
    edit = add_edit(intent_path, requirements)
    _edit_lock_sync(ctx, project, "add", edit, no_sync, verify_after, venv, target_file, free=requirements)


@click.command()
@project_opt
@click.argument("names", nargs=-1, metavar="PKG...")
@_with_sync_opts
@click.pass_context
def remove(ctx: click.Context, project: str, names: tuple[str, ...], no_sync: bool, verify_after: bool,
           venv: str | None, target_file: str | None) -> None:
    """Remove packages from the intent, lock, and sync — as `uv remove`.

    Every entry of each named package goes (whatever its markers); what no other package requires leaves the lock and
    the venv with it. A package the intent does not name is bad input (exit 2) and nothing is changed; so is a lock
    that cannot be written for every target.
    """
    from tritonlock.intent.edit import remove as remove_edit

    intent_path, _ = project_paths(project)
    edit = remove_edit(intent_path, names)
    _edit_lock_sync(ctx, project, "remove", edit, no_sync, verify_after, venv, target_file)


NOT_RUN = "the command was not run"


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@project_opt
@click.option("--target", "target_name", help="Use this lock target instead of the one that fits this host.")
@click.option("--venv", metavar="DIR", help="The environment to run in (default: PROJECT/.venv).")
@click.option("--no-sync", is_flag=True,
              help="Do not sync: run only when the venv already matches the lock, else refuse (exit 2).")
@click.option("--locked", is_flag=True,
              help="Refuse a lock that is stale against the intent (exit 2) instead of locking it again first.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[--] CMD [ARGS]...")
@click.pass_context
def run(ctx: click.Context, project: str, target_name: str | None, venv: str | None, no_sync: bool, locked: bool,
        command: tuple[str, ...]) -> None:
    """Run a command in the project's venv, synced to the lock first — as `uv run`.

    The venv is checked against the lock (the no-op check of `sync`); where it does not match, it is synced first
    (saying so, on stderr; without verify) — and where the intent changed since the lock was written, locked first.
    Then CMD runs in the venv (its bin/ first on PATH, VIRTUAL_ENV set) in tritonlock's place: its exit code and any
    signal are its own. Before CMD starts, a failure exits with tritonlock's own code (2 bad input or the venv out of
    date with --no-sync, 3 a conflict, 4 an index or uv, 5 the sync) and a line on stderr ending "the command was not
    run".
    """
    from tritonlock.errors import TritonlockError, UsageError

    root = Path(project)
    if target_name is not None and (root / "triton-env.lock").is_file():  # an unknown --target first, as everywhere
        from tritonlock.lock.lockfile import named_target, read_lock

        try:
            named_target(read_lock(root / "triton-env.lock"), target_name, root / "triton-env.lock")
        except TritonlockError as err:
            err.args = (f"{err}\n({NOT_RUN})", *err.args[1:])
            raise
    if not command:
        raise UsageError(f"run: name the command to run, e.g. `tritonlock run -- python -c \"import torch\"`; {NOT_RUN}")
    venv_dir = Path(venv) if venv else root / ".venv"
    try:
        _ready(ctx, project, root, venv_dir, target_name, no_sync, locked)
        argv, env = _argv(venv_dir, command)
    except TritonlockError as err:
        err.args = (f"{err}\n({NOT_RUN})", *err.args[1:])
        raise
    from tritonlock.environment._exec import become

    become(argv, env)


def _ready(ctx: click.Context, project: str, root: Path, venv_dir: Path, target_name: str | None, no_sync: bool,
           locked: bool) -> None:
    """The venv as the lock has it: checked (the no-op check), else — the lock first when the intent changed — synced
    (as `tritonlock sync --no-verify`, its words on stderr); with --no-sync, a venv that does not match is refused."""
    from tritonlock.environment._noop import already_synced
    from tritonlock.errors import UsageError

    if already_synced(root, venv_dir, target=target_name, python=None, system_site_packages=None,
                      locked=locked) is not None:
        return
    intent_path, lock_path = project_paths(project)
    if not lock_path.is_file() and (no_sync or locked or not intent_path.is_file()):
        from tritonlock.lock.lockfile import read_lock

        read_lock(lock_path)  # (its error names the next step)
    stale = None
    if lock_path.is_file() and intent_path.is_file():
        from tritonlock.lock.lockfile import read_lock
        from tritonlock.staleness import lock_staleness

        stale = lock_staleness(root, read_lock(lock_path))
    if (stale or not lock_path.is_file()) and not no_sync:
        if locked:
            raise UsageError(f"{lock_path} is stale ({stale}) — run `tritonlock resolve` (and commit the lock), or "
                             "drop --locked to lock it again first")
        with _to_stderr():
            echo(f"run: {f'{lock_path} is stale ({stale})' if stale else f'no {lock_path.name} yet'}: locking first "
                 "(as `tritonlock resolve`)", err=True)
            from tritonlock._term import TargetProgress
            from tritonlock.cli.cmd_lock import said_lock
            from tritonlock.project import lock_project

            with TargetProgress() as progress:
                out = lock_project(intent_path, lock_path, progress=progress, strict=True)
            said_lock(out, lock_path, False)
    if no_sync:
        from tritonlock.environment.sync import sync_project
        from tritonlock.environment._plan import format_plan

        looked = sync_project(root, venv=venv_dir, dry_run=True, target_name=target_name)
        if looked.plan.noop and venv_dir.is_dir():
            return
        plan = format_plan(looked.plan).splitlines()
        raise UsageError(f"{venv_dir} does not match target {looked.target.name} of {lock_path} ("
                         f"{plan[0] if plan else ''}) — run `tritonlock sync`, or drop --no-sync to sync it first")
    from tritonlock.cli.cmd_env import sync

    with _to_stderr():
        echo(f"run: syncing {venv_dir} to the lock first (as `tritonlock sync --no-verify`)", err=True)
        ctx.invoke(sync, project=project, venv=str(venv_dir), dry_run=False, locked=locked, offline=False,
                   find_links=None, system_site_packages=None, python_=None, target_name=target_name, no_verify=True,
                   reinstall=False, packages=(), as_json=False)


class _to_stderr:
    """Standard output sent to standard error for a while (the file descriptor itself, so uv's output too): what
    tritonlock says before CMD runs never mixes into CMD's own output."""

    def __enter__(self) -> None:
        import os

        sys.stdout.flush()
        self.saved = os.dup(1)
        os.dup2(2, 1)

    def __exit__(self, *exc: object) -> None:
        import os

        sys.stdout.flush()
        os.dup2(self.saved, 1)
        os.close(self.saved)


def _argv(venv_dir: Path, command: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of CMD in the venv (tritonlock._entry.in_venv: the one place that says how)."""
    from tritonlock.environment._exec import in_venv
    from tritonlock.errors import UsageError

    found = in_venv(str(venv_dir), list(command))
    if found is None:
        from tritonlock._term import printable

        where = venv_dir.absolute() / ("Scripts" if sys.platform == "win32" else "bin")
        raise UsageError(f"run: {printable(command[0], 200)!r}: no such command in {where} or on PATH — "
                         f"install it into the venv (add it with `tritonlock add`), or give its path")
    return found
