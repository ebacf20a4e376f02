"""Command line: parse, call one function, print. Heavy imports stay inside the commands."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from tritonlock import __version__
from tritonlock.errors import TritonlockError, UsageError

INTENT_FILE = "triton-env.toml"
LOCK_FILE = "triton-env.lock"

EXIT_CODES = """\b
Exit codes:
  0  success
  1  a check failed: verify found a problem, doctor found an error, check found a problem, or a node in report merge failed
  2  bad input: triton-env.toml, triton-env.lock (missing, unknown version, edited by hand,
     stale with --locked), compat/ data, pip's configuration (PIP_INDEX_URL, pip.conf), a lock
     with no target for this machine (sync, verify --record, export), a lock target export cannot
     write, or a command-line value (an unknown --target, an override, a path that is not there,
     a path that is not a regular file — a device, pipe, socket, directory or link, refused even
     with --force —, a file init would overwrite, or one a command would replace that tritonlock
     did not write: pass --force)
  3  conflict: nothing in the matrix fits a target, no torch that fits allows the packages you
     named, a package only an ancient release could satisfy, or what the platform cannot have (the
     message names both sides and a fix; the targets that fit are still locked)
  4  a package index or uv failed while resolving (or uv is not installed)
  5  sync failed (the message says what state the venv is in; also when uv is missing)
  6  the verify runner could not run at all
  7  compat check: what it read agrees, but some rows could not be checked (--allow-unchecked accepts that)
  130  interrupted (Ctrl-C); sync says, as checked, what state the venv is in
"""


def _echo(message: Any = "", *, err: bool = False, nl: bool = True) -> None:
    """The one way cli.py prints. Whatever a lock, an index, a node or a venv put into the text, it reaches the
    terminal with every control character escaped (tritonlock's own colours kept, on a colour terminal only) and
    without user:token@ in any URL."""
    from tritonlock._term import clean, colour
    from tritonlock._urls import redact

    click.echo(clean(redact(str(message)), styles=colour(sys.stderr if err else sys.stdout)), err=err, nl=nl)
# The project the command works on, once its --project option is known: messages name the tables of that project's
# own intent file (a pyproject.toml keeps them under [tool.tritonlock]).
_PROJECT: list[str] = []


def _words(text: str) -> str:
    """`text` as the project's intent file spells its tables (see tritonlock._discover.intent_words)."""
    if not _PROJECT:
        return text
    from tritonlock._discover import intent_words

    try:
        return intent_words(text, _PROJECT[-1])
    except OSError:
        return text


def _fail(err: TritonlockError) -> NoReturn:
    from tritonlock._urls import redact

    from tritonlock._term import styled

    _echo(styled("error:", err=True, fg="red", bold=True) + f" {_words(redact(str(err)))}", err=True)  # no user:token@
    sys.exit(err.exit_code)


def _echo_json(data: Any) -> None:
    _echo(json.dumps(data, indent=2, sort_keys=True))


def _show_warning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    from tritonlock._term import styled

    _echo(styled("warning:", err=True, fg="yellow") + f" {_words(str(message))}", err=True)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that Python's own flush at exit does not fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class _Group(click.Group):
    """Turns TritonlockError into one clean message and its exit code (never a traceback), and our
    warnings (a newer lock format) into one `warning:` line each."""

    def invoke(self, ctx: click.Context) -> Any:
        import warnings

        from tritonlock.errors import LockfileWarning

        _PROJECT.clear()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("once", LockfileWarning)
                warnings.showwarning = _show_warning
                return super().invoke(ctx)
        except TritonlockError as err:
            _fail(err)
        except BrokenPipeError:  # `tritonlock show | head`: the reader has all it wanted; nothing went wrong here
            _quiet_stdout()
            sys.exit(141)  # 128 + SIGPIPE, as a shell reports a pipeline member that the pipe closed on
        except OSError as err:  # a file we were asked to write or read: say which, never a traceback
            name = err.filename if isinstance(err.filename, str) else ""
            _echo(f"error: {name + ': ' if name else ''}{err.strerror or err} — check the path and its "
                  "permissions", err=True)
            sys.exit(2)  # a path that is not there or not ours: bad input, as WriteError says
        except KeyboardInterrupt:
            _echo("interrupted", err=True)
            sys.exit(130)
        except MemoryError:  # (the readers bound their work; this is the last word, never a traceback)
            _echo("error: ran out of memory — is an input (the intent, a host file, the lock) far larger than any "
                  "real one? check the files this command reads", err=True)
            sys.exit(2)


@click.group(cls=_Group, epilog=EXIT_CODES)
@click.version_option(__version__, prog_name="tritonlock")
def main() -> None:
    """Pinned, hash-verified PyTorch + CUDA + Triton environments.

    \b
    Typical use:
      tritonlock init       # write triton-env.toml for this machine
      tritonlock resolve    # write triton-env.lock
      tritonlock sync       # make .venv match the lock, then verify it
    """


def _project_paths(project: str) -> tuple[Path, Path]:
    from tritonlock._discover import intent_file

    root = Path(project)
    return intent_file(root), root / LOCK_FILE  # triton-env.toml, or pyproject.toml with [tool.tritonlock]


def _discover(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    if value is None:
        from tritonlock._discover import find_project

        value = find_project()
    _PROJECT.append(value)
    return value


_project_opt = click.option("--project", "-p", default=None, callback=_discover, metavar="DIR",
                            help="Directory holding triton-env.toml and triton-env.lock (default: the nearest one "
                                 "from here up that holds either, else this directory).")
_json_opt = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def _finite(param: click.Parameter, value: float) -> float:
    import math

    if not math.isfinite(value):  # FloatRange lets NaN through (every comparison with it is False)
        raise click.BadParameter(f"{value} is not a number of seconds", param=param)
    return value


def _host_overrides(**kw: str | None) -> dict[str, str]:
    return {k: v for k, v in kw.items() if v is not None}


_override_opts = [
    click.option("--driver", help="Pretend this NVIDIA driver version ('none' for no driver). Env: TRITONLOCK_DRIVER."),
    click.option("--cuda", "cuda_", help="Pretend the driver supports this CUDA version. Env: TRITONLOCK_CUDA."),
    click.option("--gpus", help="Comma-separated compute capabilities or GPU names. Env: TRITONLOCK_GPUS."),
    click.option("--os", "os_", help="linux | windows | macos. Env: TRITONLOCK_OS."),
    click.option("--arch", help="x86_64 | aarch64. Env: TRITONLOCK_ARCH."),
    click.option("--glibc", help="glibc version, e.g. 2.31. Env: TRITONLOCK_GLIBC."),
    click.option("--python", "python_", help="Python version, e.g. 3.12. Env: TRITONLOCK_PYTHON."),
]


def _with_overrides(f: Any) -> Any:
    for opt in reversed(_override_opts):
        f = opt(f)
    return f


@main.command()
@click.option("--project", "-p", default=".", show_default=True, metavar="DIR",
              help="Directory to write triton-env.toml in.")
@click.option("--force", is_flag=True, help="Overwrite an existing triton-env.toml.")
@click.option("--no-index-check", "check_index", is_flag=True, flag_value=False, default=True,
              help="Do not ask the package indexes whether they answer (no network).")
@click.option("--pyproject", "in_pyproject", is_flag=True,
              help="Add a [tool.tritonlock] table to the project's existing pyproject.toml instead (its "
                   "[project].dependencies are the packages; nothing else in the file changes).")
def init(project: str, force: bool, check_index: bool, in_pyproject: bool = False) -> None:
    """Write a commented triton-env.toml for this machine.

    It asks PyTorch's wheel index and your default index (pip's configuration) whether they answer: when only the
    default index does (PyPI or a mirror), it sets [indexes] torch = "default", so `tritonlock resolve` works here.
    """
    from tritonlock import host
    from tritonlock._files import check_writes, write_file
    from tritonlock.intent.read import starter

    _PROJECT.append(project)
    if in_pyproject:
        intent_path = Path(project) / "pyproject.toml"
        if (Path(project) / INTENT_FILE).is_file():
            raise UsageError(f"{Path(project) / INTENT_FILE} already states this project's intent — one project has "
                             f"one: move it into {intent_path} by hand, or keep it and leave pyproject.toml be")
    else:
        intent_path, _ = _project_paths(project)
    # never a device, pipe, socket, directory or link, with or without --force (init -p DIR makes DIR when missing)
    check_writes([intent_path], what="init", force=True, replace="edit", parents=True)
    if os.path.lexists(intent_path) and not force and not in_pyproject:
        raise UsageError(f"{intent_path} already exists — edit it, or pass --force to overwrite it")
    prof = host.detect()
    gpus = ", ".join(f"{g.name} ({g.cc})" for g in prof.gpus) or "no NVIDIA GPU"
    comment = (f"# Written by `tritonlock init` on a {prof.os}/{prof.arch} host: {gpus}"
               + (f", driver {prof.driver} (CUDA {prof.cuda_driver})" if prof.driver else "") + ".")
    py = ".".join(prof.python.split(".")[:2])
    torch_default, note = "", ""
    if check_index:
        from tritonlock.project import index_reachability

        torch_default, note = index_reachability()
    Path(project).mkdir(parents=True, exist_ok=True)
    text = starter(py, comment, this_machine=host.target_toml(prof, host.default_target_name(prof)),
                   torch_default=torch_default)
    if in_pyproject:
        from tritonlock.decide.pyproject import add_tritonlock_table, dependencies_name_torch, pyproject_starter

        add_tritonlock_table(intent_path, pyproject_starter(
            text, torch_in_dependencies=dependencies_name_torch(intent_path)))
    else:
        write_file(intent_path, text, what="init", force=True, parents=True)
    if note:
        _echo(_words(note), err=True)
    from tritonlock._discover import find_project

    outer = find_project(str(Path(project).resolve().parent))
    if (Path(outer) / "triton-env.toml").is_file() or (Path(outer) / "triton-env.lock").is_file():
        here = "here" if Path(project) == Path(".") else f"in {project}"
        _echo(f"note: {outer} holds another project; commands run {here} and below now use this new one",
              err=True)
    _echo(f"wrote {intent_path} — next: `tritonlock resolve`")


@main.command("host")
@_json_opt
@click.option("--save", metavar="FILE", help="Write this machine as a [[targets]] table to FILE.")
@click.option("--name", default=None, help="Target name for --save (default: the first GPU's model, e.g. "
                                           "h200 or rtx-4090; cpu without one).")
@click.option("--force", is_flag=True, help="With --save: replace FILE even when tritonlock did not write it.")
@_with_overrides
def host_cmd(as_json: bool, save: str | None, name: str | None, force: bool, driver: str | None, cuda_: str | None,
             gpus: str | None, os_: str | None, arch: str | None, glibc: str | None, python_: str | None) -> None:
    """Show what tritonlock detects on this machine (driver, CUDA, GPUs, glibc, Python)."""
    from tritonlock import host

    prof = host.detect(_host_overrides(driver=driver, cuda=cuda_, gpus=gpus, os=os_, arch=arch, glibc=glibc,
                                       python=python_))
    if save:
        from tritonlock._discover import find_project
        from tritonlock.project import saved_host_advice

        tname = name or host.default_target_name(prof)
        if not tname.strip() or not tname.isprintable() or len(tname) > 100 or tname == "host":
            # the rule triton-env.toml applies to a target's name: refuse now, not when the file is included
            raise UsageError(f"--name {tname!r}: not a usable target name (empty, 'host', over 100 characters, or "
                             "with control characters or line breaks) — give a short name, e.g. --name a100-cluster")
        from tritonlock._files import write_files

        if save == "-":  # standard output, not a file named "-"
            if as_json:
                raise UsageError("--save - and --json both write to standard output — pass one of them, or --save "
                                 "FILE")
            _echo(host.target_toml(prof, tname), nl=False)
            return
        # `host --save hosts/NAME.toml` in a new project creates hosts/ (and removes it again if the write fails)
        write_files([(Path(save), host.target_toml(prof, tname))], what="host --save", force=force, parents=True)
        _echo(f"wrote target {tname!r} to {save} — {saved_host_advice(Path(save), Path(find_project()))}",
              err=True)
    if as_json:
        _echo_json(host.profile_json(prof))
    elif not save:
        _echo(host.format_profile(prof))


@main.command()
@_project_opt
@click.option("--upgrade", is_flag=True, help="Re-resolve even when nothing changed (picks up newer releases).")
@click.option("--dry-run", is_flag=True, help="Print the decisions only: no lock is written, no network is used (see --packages).")
@click.option("--packages", "decide_packages", is_flag=True,
              help="With --dry-run: also decide [environment].packages' versions — and so the torch they allow — "
                   "with uv and the indexes, as `resolve` does (uses the network).")
@_json_opt
@click.option("--target-file", metavar="FILE", help="Lock for a machine saved with `tritonlock host --save`.")
def resolve(project: str, upgrade: bool, dry_run: bool, as_json: bool, target_file: str | None,
            decide_packages: bool) -> None:
    """Resolve triton-env.toml into triton-env.lock (pinned, with sha256 hashes)."""
    intent_path, lock_path = _project_paths(project)
    if dry_run:
        from tritonlock.intent.read import read_intent
        from tritonlock.project import conflicts_error, select
        from tritonlock.decide.resolve import selection_json

        intent = read_intent(intent_path)
        for w in intent.warnings:
            _echo(f"warning: {_words(w)}", err=True)
        sels = select(intent, target_file)
        if intent.packages and all(s.ok for s in sels):
            from tritonlock.project import decided

            sels = decided(intent, sels, packages=decide_packages)
        if as_json:
            _echo_json({"targets": [selection_json(s) for s in sels]})
            if not all(s.ok for s in sels):
                sys.exit(3)
            return
        if not all(s.ok for s in sels):
            raise conflicts_error(sels)
        for s in sels:
            _echo(_selection_text(s))
        return
    if not upgrade and not as_json:
        from tritonlock._fast import lock_is_fresh

        if lock_is_fresh(intent_path, lock_path, target_file):
            _echo(f"{lock_path} is up to date (use --upgrade to re-resolve)")
            _exit_on_recorded_conflicts(lock_path)
            return
    from tritonlock._term import Quiet, TargetProgress
    from tritonlock.project import lock_project

    with (Quiet() if as_json else TargetProgress()) as progress:
        out = lock_project(intent_path, lock_path, upgrade=upgrade, target_file=target_file, progress=progress)
    for w in out.warnings:
        from tritonlock._term import styled

        _echo(styled("warning:", err=True, fg="yellow") + f" {_words(w)}", err=True)
    conflicts = [s for s in out.selections if not s.ok]
    if as_json:
        from tritonlock.decide.resolve import selection_json

        locked = {t.name: t for t in out.lock.targets} if out.lock else {}
        _echo_json({"written": out.written, "reason": out.reason,
                    "targets": [{**selection_json(s), **_builds_json(locked.get(s.target.name))}
                                for s in out.selections]})
        if conflicts:
            sys.exit(3)
        return
    if not out.written:
        _echo(f"{out.reason} (use --upgrade to re-resolve)")
        _exit_on_recorded_conflicts(lock_path)
        return
    locked = {t.name: t for t in out.lock.targets} if out.lock else {}
    for s in out.selections:
        if not s.ok:
            continue
        _echo(_selection_text(s))
        for line in _build_lines(locked.get(s.target.name)):
            _echo(line)
    n = sum(len(t.packages) for t in out.lock.targets) if out.lock else 0
    k = len(out.selections) - len(conflicts)
    recorded = (f" locked, {len(conflicts)} recorded as a conflict ({', '.join(s.target.name for s in conflicts)})"
                if conflicts else "")
    _echo(f"wrote {lock_path} ({k} target{'' if k == 1 else 's'}{recorded}, {n} packages; {out.reason})")
    if conflicts:
        _print_conflicts(conflicts)
        sys.exit(3)


def _print_conflicts(selections: Any) -> None:
    from tritonlock._term import styled

    for s in selections:
        assert s.conflict is not None
        _echo(styled("error:", err=True, fg="red", bold=True) + f" {s.conflict.message}", err=True)


def _exit_on_recorded_conflicts(lock_path: Path) -> None:
    """An up-to-date lock that records a target's conflict: say it again, and exit 3 as when it was written."""
    from tritonlock.lock.lockfile import read_lock

    try:
        lock = read_lock(lock_path)
    except TritonlockError:
        return
    conflicts = [t.selection for t in lock.targets if not t.selection.ok and t.selection.conflict]
    if conflicts:
        _print_conflicts(conflicts)
        sys.exit(3)


def _warn_if_stale(project: str, lock: Any, doing: str) -> None:
    from tritonlock.project import stale_warning

    line = stale_warning(Path(project), lock, doing)
    if line:
        from tritonlock._term import styled

        _echo(styled("warning:", err=True, fg="yellow") + line.removeprefix("warning:"), err=True)


def _build_lines(t: Any, only: set[str] | None = None) -> list[str]:
    """A locked target's source builds and package notes, one indented line each (`only`: these packages)."""
    if t is None:
        return []
    from tritonlock.lock import builds
    from tritonlock._term import styled

    pkgs = [p for p in t.packages if only is None or p.name in only]
    return (["  " + styled("build:", fg="yellow") + f" {line}" for line in builds.source_lines(pkgs)]
            + ["  " + styled("note:", dim=True) + f" {line}" for line in builds.note_lines(pkgs)])


def _package_build_json(p: Any) -> dict[str, Any]:
    from tritonlock.lock import builds

    return builds.package_json(p) if p is not None else {}


def _builds_json(t: Any) -> dict[str, Any]:
    """--json: a locked target's source builds and package notes."""
    if t is None:
        return {}
    from tritonlock.lock import builds

    return {"source_builds": [{"name": p.name, "version": p.version, **builds.package_json(p)}
                              for p in t.packages if p.build],
            "package_notes": [{"name": p.name, "note": p.note} for p in t.packages if p.note]}


def _selection_text(s: Any) -> str:
    from tritonlock._term import styled

    lines = [styled(f"target {s.target.name}:", bold=True) + f" torch {s.torch} ({s.backend}) + "
             f"{s.triton_package or 'no triton'} {s.triton or ''} on Python {s.python}".rstrip(),
             f"  index: {s.index}"]
    lines += ["  " + styled("why:", dim=True) + f" {_words(r)}" for r in s.reasons]
    lines += ["  " + styled("warning:", fg="yellow") + f" {_words(w)}" for w in s.warnings]
    return "\n".join(lines)


@main.command()
@_project_opt
@_json_opt
@click.option("--target", "target_name", help="Show one target only.")
def show(project: str, as_json: bool, target_name: str | None) -> None:
    """Show the lock as a table: per target, the decision and every pinned package."""
    from tritonlock.lock.lockfile import read_lock

    _, lock_path = _project_paths(project)
    lock = read_lock(lock_path)
    _warn_if_stale(project, lock, "showing")
    if target_name is not None:
        from tritonlock.lock.lockfile import named_target

        targets = [named_target(lock, target_name, lock_path, otherwise="show them all")]
    else:
        targets = list(lock.targets)
    from tritonlock import records

    judged = records.judge(records.read_records(lock_path.parent / records.RECORDS_FILE), lock)
    if as_json:
        from tritonlock.decide.resolve import selection_json

        _echo_json({"lock-version": lock.lock_version, "matrix-version": lock.matrix_version, "targets": [
            {**selection_json(t.selection), "packages": [
                {"name": p.name, "version": p.version, "index": p.index, "files": len(p.wheels) + bool(p.sdist),
                 **_package_build_json(p)}
                for p in t.packages], **_builds_json(t),
             "verified": [{**records.record_json(j.record), "stale": j.stale} for j in judged
                          if j.record.target == t.name]} for t in targets]})
        return
    # a fleet's targets of one kind of machine share their decision and packages (lock-version 3): shown once, with
    # the names of the others
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for t in targets:
        sel = t.selection
        key = (sel.ok, sel.python, sel.torch, sel.backend, sel.index, sel.triton_package, sel.triton, sel.packages,
               sel.driver_floor, sel.archs, sel.ptx, sel.reasons, sel.warnings, sel.direct,
               sel.conflict.message if sel.conflict else None, t.packages)
        groups.setdefault(key if sel.ok else ("conflict", t.name), []).append(t)
    out: list[str] = []
    for t, *others in groups.values():
        if not t.selection.ok:  # recorded as a conflict: nothing is locked for it
            from tritonlock._term import styled

            message = t.selection.conflict.message if t.selection.conflict else "nothing fits"
            out.append(styled(f"target {t.name}:", bold=True) + " " + styled("conflict", fg="red")
                       + " — nothing is locked for it (`tritonlock resolve` exits 3 until it is fixed)")
            out += [f"  {line}" for line in message.splitlines()]
            out.append("")
            continue
        out.append(_selection_text(t.selection))
        width = max((len(p.name) for p in t.packages), default=4)
        vwidth = max((len(p.version) for p in t.packages), default=7)
        out.append(f"  {'package'.ljust(width)}  {'version'.ljust(vwidth)}  index")
        out += [f"  {p.name.ljust(width)}  {p.version.ljust(vwidth)}  {p.index}"
                + ("  (built from source at sync)" if p.build == "source" else "") for p in t.packages]
        out += _build_lines(t)
        out += [f"  {line}" for line in records.verified_lines(judged, t)]
        if others:
            out.append(f"  the same decision and packages for {len(others)} more target(s): "
                       + ", ".join(o.name for o in others))
            for o in others:
                if any(j.record.target == o.name for j in judged):
                    out += [f"  {o.name}: {line}" for line in records.verified_lines(judged, o)]
        out.append("")
    _echo("\n".join(out))


@main.command()
@_project_opt
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
@click.option("--reinstall", is_flag=True,
              help="Install the named packages (PKG…) again from the lock, whatever state they are in; every locked "
                   "package when none is named.")
@click.argument("packages", nargs=-1, metavar="[PKG]...")
@_json_opt
def sync(project: str, venv: str | None, dry_run: bool, locked: bool, offline: bool, find_links: str | None,
         system_site_packages: bool | None, python_: str | None, target_name: str | None, no_verify: bool,
         reinstall: bool, packages: tuple[str, ...], as_json: bool) -> None:
    """Make the venv match the lock for this machine, then verify it with Triton kernels.

    The plan (with the download size) is printed before anything is installed. A venv that must be rebuilt (another
    Python, --system-site-packages changed) is built beside the old one and replaces it only when complete.
    Every package's files are checked against its RECORD, and damaged ones (a file or folder deleted, a RECORD
    torn by a kill) are installed again; `--reinstall [PKG]...` does so on request. Ctrl-C stops at once and
    exits 130 (a venv being built beside the old one is removed; an in-place install is let finish first).
    """
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
            _echo(line)
            return
    from tritonlock.environment.sync import format_plan, sync_project

    from tritonlock._term import colour, styled

    tty = sys.stderr.isatty()
    style = click.style if colour(sys.stdout) else None

    def say(msg: str) -> None:
        head, sep, rest = msg.partition(": ")
        if head == "warning" and sep:
            msg = styled("warning:", err=True, fg="yellow") + " " + rest
        _echo(msg, err=True)

    def show_plan(p: Any) -> None:
        if not as_json:
            _echo(format_plan(p, style=style))

    out = sync_project(root, venv=venv_dir, dry_run=dry_run, locked=locked,
                       offline=offline, find_links=Path(find_links) if find_links else None,
                       system_site_packages=system_site_packages, python=python_, target_name=target_name,
                       reinstall=packages if reinstall else None,
                       say=say if (tty or not as_json) else (lambda m: None), show_plan=show_plan)
    result = None
    if not as_json:
        _sync_state_lines(out, dry_run, show_plan)  # what state the venv is in, said before verify starts
    if not dry_run and not no_verify:
        try:
            from tritonlock.lock.lockfile import read_lock

            result = _run_verify(out.venv, out.target.selection, out.host,
                                 **_native_args(read_lock(root / LOCK_FILE), out.target))
        except KeyboardInterrupt:
            from tritonlock.errors import SyncInterrupted

            raise SyncInterrupted(f"interrupted (Ctrl-C) during verify; {out.venv} "
                                  + ("was changed and " if out.applied else "")
                                  + f"matches target {out.target.name} (checked before verify started); verify did "
                                    "not finish and its runner was stopped — `tritonlock verify` runs it again"
                                  ) from None
    if as_json:
        _echo_json({"target": out.target.name, "venv": str(out.venv), "applied": out.applied, "rebuilt": out.rebuilt,
                    "plan": [{"name": s.name, "action": s.action, "have": s.have, "want": s.want, "note": s.note,
                              **_package_build_json(next((p for p in out.target.packages if p.name == s.name
                                                          and s.action in ("install", "upgrade", "reinstall")), None))}
                             for s in out.plan.steps],
                    "verify": result.to_json() if result is not None else None})
    elif result is not None:
        from tritonlock._term import highlight
        from tritonlock.verify import format_report

        _echo(highlight(format_report(result)))
    if result is not None and not result.ok:
        sys.exit(1)


def _sync_state_lines(out: Any, dry_run: bool, show_plan: Any) -> None:
    """sync's account of the venv (its plan with --dry-run): printed as soon as the venv is in that state, before
    verify starts, so that a verify stopped by Ctrl-C leaves the state said."""
    if dry_run:
        show_plan(out.plan)
        todo = {s.name for s in out.plan.steps if s.action in ("install", "upgrade", "reinstall")}
        for line in _build_lines(out.target, todo):
            _echo(line)
    elif not out.applied:
        _echo(f"{out.venv} already matches target {out.target.name} ({len(out.plan.steps)} packages)")
    else:
        done = [f"{len(out.plan.of(a))} {w}" for a, w in (("install", "installed"), ("upgrade", "upgraded"),
                                                          ("reinstall", "repaired"), ("remove", "removed"))
                if out.plan.of(a)]
        asked = sum(1 for st in out.plan.of("reinstall") if st.note == "--reinstall")  # (sync --reinstall)
        if asked:
            fixed = len(out.plan.of("reinstall")) - asked
            done = [d for d in done if not d.endswith(" repaired")]
            done[len(done) - (1 if out.plan.of("remove") else 0):0] = (
                [f"{fixed} repaired"] if fixed else []) + [f"{asked} reinstalled"]
        _echo(f"{out.venv} now matches target {out.target.name}" + (" (rebuilt)" if out.rebuilt else "")
                   + f": {', '.join(done) or 'nothing to change'}")


def _run_verify(venv: Path, sel: Any, host: Any, **kw: Any) -> Any:
    from tritonlock.environment.sync import venv_python
    from tritonlock.verify import run_verify

    gpu_build = bool(sel.backend and sel.backend.startswith("cu") and sel.target.driver)
    return run_verify(str(venv_python(venv)), backend=sel.backend, triton=sel.triton,
                      expect_gpu=gpu_build and host.driver is not None, driver=host.driver, **kw)


def _native_args(lock: Any, locked: Any) -> dict[str, Any]:
    """What verify needs of the lock for the packages' native code: the packages the user named, and the facts."""
    from tritonlock.verify.natives import lock_facts

    return {"imports": tuple(d.name for d in locked.selection.direct),
            "lock_facts": lock_facts(locked.packages, lock.native)}


@main.command()
@_project_opt
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
@click.option("--strict-speed", is_flag=True,
              help="Fail (exit 1) when a timed row is outside the band expected for this GPU (compat/bands.toml); "
                   "by default that is a warning.")
@_json_opt
def verify(project: str, venv: str | None, python_: str | None, quick: bool, cold: bool, no_reuse: bool,
           profile: str | None, interpret: bool, record: bool, target_name: str | None, strict_speed: bool,
           as_json: bool) -> None:
    """Prove the environment works: imports, CUDA build, GPU archs, then Triton kernels vs torch, each timed row
    judged against the speed expected for this GPU (with the likely cause when it is outside)."""
    from tritonlock._files import check_writes
    from tritonlock.environment.sync import venv_python
    from tritonlock.verify import format_report, start_verify

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
    interp = python_ or str(venv_python(env_dir))
    if not Path(interp).exists():
        raise UsageError(f"{interp}: no such interpreter — " + ("pass --python PATH to an existing interpreter"
                         if python_ else _make_venv_step(root, env_dir, target_name)))
    if record and not lock_path.exists():
        raise UsageError(f"{lock_path}: no such file — --record names the lock target it verified; run "
                         "`tritonlock resolve` first")
    # the runner first: its `import torch` (seconds) overlaps reading the host and the lock below, and what the lock
    # expects follows on its stdin
    started = start_verify(interp, interpret=True if interpret else None, quick=quick, profile=profile, cold=cold,
                           reuse=not no_reuse)
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
                _warn_if_stale(project, lock, "checking against")
                locked = pick_target(lock, host, name=target_name, lock_path=str(lock_path))
                sel = locked.selection
            except TritonlockError as err:
                if record or target_name:
                    raise
                # every target's blocker, as sync names them (the fix line is sync's, not verify's)
                lines = [x for x in str(err).splitlines() if not x.strip().startswith("fix:")]
                _echo("\n".join([f"warning: not checking against the lock: {lines[0]}", *lines[1:]]), err=True)
            else:
                backend, triton = sel.backend, sel.triton
                expect_gpu = (bool(backend and backend.startswith("cu") and sel.target.driver)
                              and host.driver is not None)
                native = _native_args(lock, locked)
    except BaseException:
        started.abandon()
        raise
    result = started.finish(backend=backend, triton=triton, expect_gpu=expect_gpu, driver=driver, **native)
    rec = None
    if record:
        from tritonlock import records

        made_in = env_dir if not python_ else Path(python_).absolute().parent.parent
        caveats = records.run_caveats(host, result, interpreter=interp, target=locked.name,
                                      venv=made_in if (made_in / "pyvenv.cfg").is_file() else None)
        rec = records.make_record(locked, host, result, caveats=caveats)
        records.add_records(root / records.RECORDS_FILE, [rec])
    if as_json:
        _echo_json({**result.to_json(), **({"record": records.record_json(rec)} if rec else {})})
    else:
        from tritonlock._term import highlight

        _echo(highlight(format_report(result)))
        if rec:
            _echo(f"recorded: target {rec.target} on {rec.host} ({'passed' if rec.ok else 'FAILED'}) in "
                  f"{root / records.RECORDS_FILE}")
            for c in rec.caveats:
                _echo(f"  caveat: {c}" + (" — this record does not count for a GPU target"
                                               if records.is_gpu_target(locked) else ""))
    slow = result.outside_band
    if strict_speed and slow and not as_json:
        _echo(f"error: --strict-speed: {len(slow)} timed row(s) outside the band expected for this GPU "
              "(see the speed lines above)", err=True)
    sys.exit(0 if result.ok and not (strict_speed and slow) else 1)


def _make_venv_step(root: Path, env_dir: Path, target_name: str | None) -> str:
    """What makes the venv verify was asked to check, where that step would work here: `sync` — or, where sync would
    fail (no lock, no intent, no lock target for this machine), the step before it, and the way around it."""
    from tritonlock.lock.lockfile import read_lock

    other = "or pass --venv DIR or --python PATH to an environment that exists"
    lock_path = root / LOCK_FILE
    if not lock_path.is_file():
        intent_path = _project_paths(str(root))[0]
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


@main.command()
@_project_opt
@click.option("--venv", metavar="DIR", help="The environment to examine (default: PROJECT/.venv).")
@click.option("--python", "python_", metavar="PATH", help="Examine this interpreter's environment instead of a venv.")
@_json_opt
def doctor(project: str, venv: str | None, python_: str | None, as_json: bool) -> None:
    """Diagnose the host and the venv: each finding with evidence and a fix. Changes nothing.

    Exits 1 when any finding is an error. Host facts honour the TRITONLOCK_* overrides (see `tritonlock host`).
    """
    from tritonlock.doctor import examine, format_report, report_json, venv_python

    report = examine(Path(project), python_ or (str(venv_python(Path(venv))) if venv else None))
    if as_json:
        _echo_json(report_json(report))
    else:
        from tritonlock._term import highlight

        _echo(highlight(format_report(report)))
    sys.exit(report.exit_code)


def _fleet_export_opts(f: Any) -> Any:
    opts = [
        click.option("--nodes", type=click.IntRange(1), default=1, show_default=True,
                     help="[slurm, k8s] Nodes to verify on (one task or pod per node)."),
        click.option("--array", is_flag=True, help="[slurm] A job array, one node per task, instead of one job."),
        click.option("--gpus-per-node", type=click.IntRange(0), default=None,
                     help="[slurm] GPUs to request as GRES (default: the target's GPU count; 0 for CPU targets)."),
        click.option("--partition", help="[slurm] Partition."),
        click.option("--account", help="[slurm] Account."),
        click.option("--time", "time_", default="00:30:00", show_default=True, help="[slurm, k8s] Time limit."),
        click.option("--reports", metavar="DIR", help="[slurm] Shared reports directory "
                                                      "(default: PROJECT/tritonlock-reports/JOBID)."),
        click.option("--tritonlock", "tritonlock_cmd", default="tritonlock", show_default=True,
                     help="[slurm] The command that runs tritonlock on the nodes."),
        click.option("--sync-args", default="", help="[slurm, k8s] Extra `tritonlock sync` options for the nodes."),
        click.option("--verify-args", default="", help="[slurm, k8s] Extra `tritonlock verify` options."),
        click.option("--image", help="[k8s] Container image with Python, uv and tritonlock."),
        click.option("--namespace", help="[k8s] Namespace of the objects."),
        click.option("--reports-claim", default="tritonlock-reports", show_default=True,
                     help="[k8s] ReadWriteMany PersistentVolumeClaim the pods write reports to."),
        click.option("--node-selector", multiple=True, metavar="KEY=VALUE", help="[k8s] Extra node selector."),
        click.option("--toleration", multiple=True, metavar="KEY[=VALUE]:EFFECT", help="[k8s] Extra toleration."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


@main.command()
@_project_opt
@click.option("--format", "fmt", required=True,
              type=click.Choice(["pylock", "requirements", "dockerfile", "devcontainer", "slurm", "k8s", "uv", "wheelhouse", "pixi"]),
              help="pylock: PEP 751 pylock.toml; requirements: requirements.txt with --hash; dockerfile: "
                   "multi-stage image on nvidia/cuda; devcontainer: .devcontainer/ (devcontainer.json + Dockerfile); uv: "
                   "[tool.uv] index/sources (an extra per target) into a pyproject.toml; pixi: a pixi.toml, an "
                   "environment per target; wheelhouse: every file into -o DIR for `sync --find-links DIR`.")
@click.option("--target", "target_name", help="Lock target to export (default: the one for this machine).")
@click.option("-o", "--output", metavar="PATH",
              help="Write here instead of stdout (devcontainer: the directory, default PROJECT/.devcontainer).")
@click.option("--force", is_flag=True, help="Replace output files that tritonlock did not write (by default they "
                                            "are left alone and the command stops).")
@_fleet_export_opts
def export(project: str, fmt: str, target_name: str | None, output: str | None, force: bool, **fleet: Any) -> None:
    """Write the lock for one target as pylock.toml, requirements.txt, a Dockerfile or a devcontainer.

    slurm and k8s write a job that syncs and verifies the lock on every node (see `tritonlock report merge`).
    """
    if output == "-":  # standard output, as without -o (never a file named "-"); a directory cannot go there
        if fmt in ("wheelhouse", "devcontainer"):
            raise UsageError(f"-o -: --format {fmt} writes a directory, which standard output cannot hold — pass "
                             "-o DIR; nothing was written")
        output = None
    if fmt in ("slurm", "k8s"):
        _export_fleet(project, fmt, target_name, output, force=force, **fleet)
        return
    if fmt == "uv":
        _export_uv(project, target_name, output, force=force)
        return
    if fmt == "wheelhouse":
        _export_wheelhouse(project, target_name, output, force=force)
        return
    if fmt == "pixi":
        _export_pixi(project, target_name, output, force=force)
        return
    from tritonlock import export as ex

    lock, target = _export_target(project, target_name)
    out_dir = Path(output) if fmt == "devcontainer" and output else Path(project) / ".devcontainer"
    context = os.path.relpath(Path(project).resolve(), out_dir.resolve()) if fmt == "devcontainer" else ".."
    files = ex.export(lock, target, fmt, context=context)
    if fmt in ("dockerfile", "devcontainer"):
        for line in ex.image_warnings(lock, target):
            _echo(line, err=True)
    if fmt != "devcontainer" and output is not None:
        ex.check_output_name(fmt, output)
    # Every destination is checked before anything is written: a missing -o directory, anything but a regular file
    # (with or without --force) or a file tritonlock did not write (without --force) stops the command with nothing
    # written; a write that fails takes back the others.
    from tritonlock._files import check_writes, write_files

    what = f"export --format {fmt}"
    main_files = [f for f in files if not f.in_context]
    writes = [(Path(project) / f.path, f.text) for f in files if f.in_context]
    if fmt == "devcontainer":
        writes += [(out_dir / f.path, f.text) for f in main_files]
        if output is not None:  # -o DIR: the directory must be there (only the default .devcontainer/ is made)
            check_writes([out_dir / f.path for f in main_files], what=what, force=force)
    elif output is not None:
        writes.append((Path(output), main_files[0].text))
        check_writes([Path(output)], what=what, force=force)
    # the build context (tritonlock-image/) and the default .devcontainer/ are made in the project when missing
    write_files(writes, what=what, force=force, parents=True)
    for p, _ in writes:
        if fmt == "devcontainer" and p.parent == out_dir:
            _echo(f"wrote {p}", err=True)
        elif output is None or p != Path(output):
            _echo(f"wrote {p} (the Dockerfile copies it from the build context)", err=True)
    if output is None and fmt != "devcontainer":
        _echo(main_files[0].text, nl=False)
    elif fmt != "devcontainer":
        _echo(f"wrote {output} (target {target.name})", err=True)


def _export_target(project: str, target_name: str | None) -> tuple[Any, Any]:
    """The project's lock (a stale one with its warning) and the target to export: --target's, else the one this
    machine fits where the lock has several."""
    from tritonlock import export as ex
    from tritonlock.lock.lockfile import read_lock

    _, lock_path = _project_paths(project)
    lock = read_lock(lock_path)
    _warn_if_stale(project, lock, "exporting")
    host_profile = None
    if target_name is None and len(lock.targets) > 1:
        from tritonlock.host import detect

        host_profile = detect(toolkit=False, cached=True)
    return lock, ex.choose_target(lock, target_name, host_profile, str(lock_path))


def _lock_to_export(project: str, target_name: str | None) -> Any:
    """The project's lock (a stale one with its warning), narrowed to --target's target when one is named."""
    import dataclasses

    from tritonlock.lock.lockfile import named_target, read_lock

    _, lock_path = _project_paths(project)
    lock = read_lock(lock_path)
    _warn_if_stale(project, lock, "exporting")
    if target_name is not None:
        lock = dataclasses.replace(lock, targets=(named_target(lock, target_name, str(lock_path)),))
    return lock


def _export_pixi(project: str, target_name: str | None, output: str | None, *, force: bool) -> None:
    """A pixi.toml: one feature and environment per target (or --target's), to -o FILE or stdout."""
    import re

    from tritonlock._files import check_writes, write_file
    from tritonlock.export.pixi import render

    if output is not None:
        check_writes([Path(output)], what="export --format pixi", force=force)
    lock = _lock_to_export(project, target_name)
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(project).resolve().name).strip("-._") or "project"
    text = render(lock, name)
    if output is None:
        _echo(text, nl=False)
        return
    write_file(output, text, what="export --format pixi", force=force)
    _echo(f"wrote {output} — then `pixi install -e ENV` with ENV one of: "
          + ", ".join(re.sub(r"[^a-z0-9]+", "-", t.name.lower()).strip("-") for t in lock.targets), err=True)


def _export_wheelhouse(project: str, target_name: str | None, output: str | None, *, force: bool) -> None:
    """Every file the target installs into -o DIR, checked against the lock's sha256, for `sync --find-links DIR`."""
    from tritonlock.export.wheelhouse import build, size_text

    if not output:
        raise UsageError("--format wheelhouse needs -o DIR (the directory to fill; a second run fetches only what is "
                         "missing)")
    lock, target = _export_target(project, target_name)
    intent_path, _ = _project_paths(project)
    if intent_path.exists():  # the credentials written in [indexes] reach the downloads, as they reach sync's
        from tritonlock.intent.read import read_intent

        try:
            read_intent(intent_path)
        except TritonlockError:
            pass  # (a stale or broken intent: pip's configuration, ~/.netrc and keyring still apply)
    r = build(target, Path(output), force=force, say=lambda line: _echo(line, err=True))
    again = f", {r.refetched} fetched again" if r.refetched else ""
    _echo(f"wrote {output}: {r.files} files, {size_text(r.bytes_total)} for target {target.name} "
          f"({r.downloaded} downloaded, {size_text(r.bytes_downloaded)}; {r.reused} already there{again}) — on "
          f"the machine without network: tritonlock sync --find-links {output}", err=True)


def _export_uv(project: str, target_name: str | None, output: str | None, *, force: bool) -> None:
    """uv's tables from the lock: into -o FILE (a pyproject.toml, edited in place, the rest kept), else stdout."""
    from tritonlock._files import check_writes, write_file
    from tritonlock.export.uv import render

    if output is not None:  # a pyproject.toml is edited in place (the rest kept), never through a link or a pipe
        check_writes([Path(output)], what="export --format uv", force=force, replace="edit")
    lock = _lock_to_export(project, target_name)
    text = None
    if output is not None and os.path.lexists(output):
        from tritonlock._files import read_text

        text = read_text(output)
    name = Path(output).resolve().parent.name if output else Path(project).resolve().name
    import re

    out, plan = render(lock, text, project_name=re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._") or "project")
    if output is None:
        _echo(out, nl=False)
    else:
        write_file(output, out, what="export --format uv", force=force, replace="edit")
        _echo(f"wrote {output} ([[tool.uv.index]], [tool.uv.sources]"
              + (", an extra per target and [tool.uv] conflicts" if plan.extras else "") + ")", err=True)
    for target, cmd in plan.commands:
        _echo(f"target {target}: {cmd}", err=True)


@main.command()
@_project_opt
@click.option("--target", "target_name", help="Only this target of triton-env.toml.")
@click.option("--torch", "torch_version", metavar="VERSION", help="Only this torch release or line (2.15 or 2.15.0).")
@click.option("--target-file", metavar="FILE", help="Advise for a machine saved with `tritonlock host --save`.")
@click.option("--sources", "sources", is_flag=True, help="Also list the compat/ rows each line rests on.")
@click.option("--no-sources", is_flag=True, hidden=True, help="Leave out the compat/ rows (the default).")
@_json_opt
def why(project: str, target_name: str | None, torch_version: str | None, target_file: str | None, sources: bool,
        no_sources: bool, as_json: bool) -> None:
    """What stands between each target and each newer torch/triton line, and the least change that unlocks it.

    Each line names the change (driver >= X, Python, glibc, or the intent) and what the target would then get;
    --sources adds the compat/ rows it rests on (--json always has them). Resolves decisions only: no network,
    nothing written.
    """
    from tritonlock.errors import UnknownTargetError
    from tritonlock.intent.read import read_intent
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.project import running_python, targets_for
    from tritonlock.decide.why import advice_json, advise, format_advice

    intent_path, _ = _project_paths(project)
    intent = read_intent(intent_path)
    targets = [t for t in targets_for(intent, target_file) if target_name in (None, t.name)]
    if not targets:
        raise UnknownTargetError(f"{intent_path} has no target {target_name!r} (it has: "
                                 f"{', '.join(t.name for t in targets_for(intent, target_file))}) — pass one of those to --target")
    matrix = load_matrix()
    if torch_version and not any(r.version == torch_version.lstrip("=") or r.version.startswith(
            torch_version.lstrip("=") + ".") for r in matrix.torch):
        raise UnknownTargetError(f"--torch {torch_version}: the matrix knows torch {matrix.torch[-1].version}–"
                                 f"{matrix.torch[0].version} — give one of those (or a line like 2.15)")
    advice = [advise(intent, matrix, t, running_python(), torch_version) for t in targets]
    locked = _locked_selections(project, intent_path) if intent.packages else {}
    if locked:
        import dataclasses

        from tritonlock.decide.why import package_advice

        advice = [dataclasses.replace(a, packages=package_advice(intent, matrix, a.target, running_python(), a,
                                                                 locked.get(a.target.name))) for a in advice]
    if as_json:
        _echo_json({"matrix-version": matrix.version, "targets": [advice_json(a) for a in advice]})
        return
    _echo("\n\n".join(format_advice(a, sources=sources and not no_sources) for a in advice))


def _locked_selections(project: str, intent_path: Path) -> dict[str, Any]:
    """The lock's decisions by target name, for `why`'s word on the packages — only from a lock that is readable and
    fresh (a stale one decided for another intent; `why` then says nothing of the packages rather than old news)."""
    from tritonlock.errors import TritonlockError
    from tritonlock.lock.lockfile import read_lock
    from tritonlock.project import lock_staleness

    _, lock_path = _project_paths(project)
    if not lock_path.is_file():
        return {}
    try:
        lock = read_lock(lock_path)
        if lock_staleness(Path(project), lock) is not None:
            return {}
    except TritonlockError:
        return {}
    return {t.name: t.selection for t in lock.targets}


# ---------------------------------------------------------------- fleets: check, records, Slurm, Kubernetes


def _seconds(time_: str) -> int:
    from tritonlock.fleet.slurm import check_time

    check_time(time_)
    days, _, rest = time_.rpartition("-")
    parts = [int(x) for x in rest.split(":")]
    if len(parts) == 1:
        secs = parts[0] * 60  # Slurm: a bare number is minutes
    else:
        while len(parts) < 3:
            parts.insert(0, 0)
        secs = parts[0] * 3600 + parts[1] * 60 + parts[2]
    return secs + int(days or 0) * 86400


def _export_fleet(project: str, fmt: str, target_name: str | None, output: str | None, *, force: bool, nodes: int,
                  array: bool,
                  gpus_per_node: int | None, partition: str | None, account: str | None, time_: str,
                  reports: str | None, tritonlock_cmd: str, sync_args: str, verify_args: str, image: str | None,
                  namespace: str | None, reports_claim: str, node_selector: tuple[str, ...],
                  toleration: tuple[str, ...]) -> None:
    from tritonlock.fleet.steps import Steps
    from tritonlock.lock.lockfile import read_lock

    root = Path(project)
    _, lock_path = _project_paths(project)
    lock = read_lock(lock_path)
    chosen = None
    if target_name is not None:
        from tritonlock.lock.lockfile import named_target

        chosen = named_target(lock, target_name, lock_path, otherwise="run them all")
    from tritonlock.export import exportable

    exportable(lock, [chosen] if chosen else list(lock.targets), str(lock_path))  # a conflict is not a job to run
    if fmt == "slurm":
        from tritonlock.fleet.slurm import SlurmJob, gpus_of, sbatch_script

        text = sbatch_script(SlurmJob(
            project=str(root.resolve()), nodes=nodes, array=array,
            gpus_per_node=gpus_of(chosen) if gpus_per_node is None else gpus_per_node, partition=partition,
            account=account, time=time_, reports=reports, tritonlock=tritonlock_cmd, sync_args=sync_args,
            verify_args=verify_args, target=target_name))
    else:
        from tritonlock.fleet.k8s import K8sJob, manifests, project_files, to_yaml

        if not image:
            raise UsageError("--format k8s needs --image: a container image with Python, uv and tritonlock "
                             "(the pods run `tritonlock sync --locked` and `tritonlock verify` in it)")
        selectors = []
        for item in node_selector:
            key, eq, value = item.partition("=")
            if not eq or not key:
                raise UsageError(f"--node-selector {item!r}: expected KEY=VALUE")
            selectors.append((key, value))
        job = K8sJob(image=image, namespace=namespace, nodes=nodes, reports_claim=reports_claim,
                     node_selector=tuple(selectors), tolerations=toleration, deadline_seconds=_seconds(time_),
                     steps=Steps(sync_args=sync_args, verify_args=verify_args))
        targets = [chosen] if chosen else list(lock.targets)
        text = to_yaml(manifests(lock, targets, project_files(root, lock), job))
    if output is None:
        _echo(text, nl=False)
        return
    from tritonlock._files import write_file

    write_file(output, text, what=f"export --format {fmt}", force=force)
    _echo(f"wrote {output}" + (f" — submit it with `sbatch {output}`" if fmt == "slurm" else
                                    f" — apply it with `kubectl apply -f {output}`")
, err=True)


@main.command()
@_project_opt
@_json_opt
@click.option("--host", "check_host", is_flag=True, help="Also fail when this machine matches no lock target.")
@click.option("--require-verified", is_flag=True,
              help="Also fail for targets never verified with the current lock (triton-env.verified.toml).")
def check(project: str, as_json: bool, check_host: bool, require_verified: bool) -> None:
    """For CI: is the lock still right? One line per problem; exit 1 when there is any.

    Fails when the lock is stale against triton-env.toml (or its target files), when a target's decision would
    change under this tritonlock's matrix, when a package file has no sha256 hash, and with --host when this
    machine matches no target. Changes nothing and needs no network.
    """
    from tritonlock.check import format_report, report_json, run_check

    host = None
    if check_host:
        from tritonlock.host import detect

        host = detect()
    report = run_check(Path(project), host=host, require_verified=require_verified)
    if as_json:
        text = json.dumps(report_json(report), indent=2, sort_keys=True)
    else:
        text = format_report(report, str(_project_paths(project)[1]))
    _echo(text)
    if report.ok and not check_host and not require_verified:
        from tritonlock import _kept

        # the same check of the same inputs answers from this (tritonlock._entry), without deciding every target again
        _kept.remember_check(project, as_json, text + "\n")
    sys.exit(report.exit_code)


@main.group()
def fleet() -> None:
    """Fleets through the schedulers you already run (Slurm, Kubernetes)."""


@fleet.command("hosts")
@click.option("--slurm", "use_slurm", is_flag=True, required=True, help="Ask the nodes through Slurm's srun.")
@click.option("--nodes", type=click.IntRange(1), default=1, show_default=True, help="Nodes to probe (one task each).")
@click.option("--nodelist", "-w", help="Exactly these nodes (Slurm's --nodelist).")
@click.option("--partition", help="Partition.")
@click.option("--account", help="Account.")
@click.option("--time", "time_", default="00:05:00", show_default=True, help="Time limit of the probe step.")
@click.option("--tritonlock", "tritonlock_cmd", default="tritonlock", show_default=True,
              help="The command that runs tritonlock on the nodes.")
@click.option("--timeout", type=click.FloatRange(min=1, max=7 * 86400), default=600, show_default=True,
              callback=lambda ctx, param, v: _finite(param, v), help="Seconds to wait for srun.")
@click.option("--out", "out_dir", default="hosts", show_default=True, metavar="DIR",
              help="Where to write one NAME.toml per distinct machine (for target-files).")
@click.option("--force", is_flag=True, help="Replace files in DIR that tritonlock did not write.")
@_json_opt
def fleet_hosts(use_slurm: bool, nodes: int, nodelist: str | None, partition: str | None, account: str | None,
                time_: str, tritonlock_cmd: str, timeout: float, out_dir: str, force: bool, as_json: bool) -> None:
    """Probe every node with `tritonlock host` and write hosts/NAME.toml, one per distinct machine.

    Identical nodes share one file (its comment names them). Point triton-env.toml at them with
    target-files = ["hosts/*.toml"], then `tritonlock resolve`.
    """
    del use_slurm
    from tritonlock.fleet.nodes import write_host_files
    from tritonlock.fleet.slurm import GatherJob, gather_probes

    probes = gather_probes(GatherJob(nodes=nodes, nodelist=nodelist, partition=partition, account=account,
                                     time=time_, tritonlock=tritonlock_cmd, timeout=timeout))
    written = write_host_files(probes, Path(out_dir), force=force)
    if as_json:
        _echo_json({"files": [{"path": str(p), "nodes": [m.node for m in members]} for p, members in written]})
        return
    for path, members in written:
        _echo(f"wrote {path} ({len(members)} node(s): {', '.join(m.node for m in members)})")
    _echo(f'next: target-files = ["{Path(out_dir).as_posix()}/*.toml"] in triton-env.toml, then '
          "`tritonlock resolve`")


@fleet.command("probe", hidden=True)
def fleet_probe() -> None:
    """One line of JSON about this node (what `fleet hosts` runs on each node)."""
    from tritonlock.fleet.nodes import probe_json
    from tritonlock.host import detect
    from tritonlock.records import node_name

    _echo(json.dumps(probe_json(node_name(), detect()), sort_keys=True))


@main.group()
def report() -> None:
    """Reports that nodes leave behind."""


@report.command("merge")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@_json_opt
@click.option("--html", "html_out", metavar="FILE", help="Also write a self-contained HTML page.")
@click.option("--out", "text_out", metavar="FILE", help="Write the table to FILE instead of stdout.")
@click.option("--expect", type=click.IntRange(0), help="Nodes that should have reported; the missing ones fail.")
@click.option("--outlier", type=click.FloatRange(0, 1), default=0.8, show_default=True,
              help="Mark a node below this fraction of the median of its peers (same GPU model).")
@click.option("--update-records", is_flag=True,
              help="Also add the nodes' records to PROJECT/triton-env.verified.toml (e.g. after a Kubernetes run).")
@click.option("--force", is_flag=True, help="Replace an --out or --html file that tritonlock did not write.")
@_project_opt
def report_merge(directory: Path, as_json: bool, html_out: str | None, text_out: str | None, expect: int | None,
                 outlier: float, update_records: bool, project: str, force: bool = False) -> None:
    """One table across the nodes of a Slurm or Kubernetes run: node, GPU, driver, target, pass/fail, vector add
    GB/s, matmul TFLOP/s and the ratios to torch, with nodes far below their peers marked. Exit 1 when a node
    failed or is missing.

    \b
    Reads, per node TAG, the files the Slurm and Kubernetes job scripts leave in DIRECTORY:
      TAG.started                  the node started
      TAG.sync.rc, TAG.sync.log    `tritonlock sync`'s exit code and output
      TAG.json                     `tritonlock verify --json --record`'s report (a pass needs its record)
      TAG.verify.rc, TAG.verify.log  verify's exit code and output
    Files of other names are ignored, and so are report.json and summary.json."""
    from tritonlock._files import MARKERS, check_writes, write_file
    from tritonlock._term import printable
    from tritonlock.fleet.nodes import read_report_dir
    from tritonlock.fleet.report import rows, table_html, table_json, table_text

    if html_out == "-" and (text_out in (None, "-")):
        raise UsageError("--html - and the table both go to standard output — pass --html FILE, or --out FILE for "
                         "the table")
    files = [Path(f) for f in (html_out, text_out) if f not in (None, "-")]
    check_writes(files, what="report merge", force=force)  # before anything is read or written
    reports = read_report_dir(directory)
    if not reports and not expect:
        raise UsageError(f"{directory}: no node reports in it (TAG.json, TAG.sync.rc, … as the job scripts "
                         "write them) — is this the reports directory of the job?")
    table = rows(reports, expect=expect, threshold=outlier)
    if html_out:
        page = table_html(table, subtitle=f"{len(table)} node(s) from {directory}")
        if html_out == "-":
            _echo(page)
        else:
            write_file(html_out, page, what="report merge", force=force)
    if update_records:
        from tritonlock import records

        recs = [r.record for r in reports if r.record is not None]
        records.add_records(Path(project) / records.RECORDS_FILE, recs)
        _echo(f"recorded {len(recs)} run(s) in {Path(project) / records.RECORDS_FILE}", err=True)
    text = json.dumps(table_json(table), indent=2, sort_keys=True) if as_json else table_text(table)
    if text_out and text_out != "-":
        # the file says who wrote it, so that the next merge may replace it (JSON: its "generated-by" key)
        text = (json.dumps({"generated-by": f"tritonlock report merge {directory}", **table_json(table)}, indent=2,
                           sort_keys=True) if as_json else f"# {MARKERS['report merge']} {printable(str(directory), 300)}`\n{text}")
        write_file(text_out, text + "\n", what="report merge", force=force)
    else:
        _echo(text)
    sys.exit(0 if all(r.ok for r in table) else 1)


@report.command("bands")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@_project_opt
@_json_opt
def report_bands(files: tuple[Path, ...], project: str, as_json: bool) -> None:
    """What the team's own `verify --record` runs say of each timed row, per GPU model, beside the speed band
    compat/bands.toml ships for it, with a band drawn from the runs by the same rule: where to refine a band, or which
    machines sit outside theirs. Reads FILES (records files), by default PROJECT/triton-env.verified.toml."""
    from tritonlock import records
    from tritonlock.fleet.report import band_rows, bands_text

    paths = list(files) or [Path(project) / records.RECORDS_FILE]
    recs = [r for p in paths for r in records.read_records(p)]
    if not recs:
        raise UsageError(f"{', '.join(map(str, paths))}: no records — run `tritonlock verify --record` on the "
                         "machines first")
    rows = band_rows(recs)
    if as_json:
        import dataclasses

        _echo_json({"rows": [dataclasses.asdict(r) for r in rows]})
    else:
        _echo(bands_text(rows))


@main.group()
def compat() -> None:
    """The curated compatibility matrix shipped in compat/."""


@compat.command("check")
@click.option("--index", "index_url", metavar="URL", help="Index to compare with (default: your pip configuration).")
@click.option("--versions", metavar="V,V", help="Only these torch/triton versions (default: all).")
@click.option("--wheels", type=click.Choice(["newest", "all", "none"]), default="newest", show_default=True,
              help="Which releases to also read from inside their wheels (HTTP Range reads): torch/version.py, "
                   "Triton's bundled ptxas versions and selection rule, and the GPU code (sm/compute, gfx) of torch's "
                   "CUDA and ROCm libraries.")
@click.option("--new", "new", is_flag=True,
              help="Instead: draft compat/ rows for each torch and triton on the index newer than the matrix knows, "
                   "read from the wheels (tags, METADATA, torch/version.py, bundled ptxas), each fact marked "
                   "'inferred:' with its source, for a maintainer to review.")
@click.option("-o", "--output", metavar="FILE", help="With --new: write the draft here instead of stdout.")
@click.option("--no-vendor", is_flag=True, help="Leave out PyTorch's per-backend indexes (CUDA variants, ROCm and XPU "
                                                "rows, arch lists).")
@click.option("--compat", "compat_dir", metavar="DIR", help="Check this copy of compat/ instead of the shipped one.")
@click.option("--allow-unchecked", is_flag=True,
              help="Exit 0, not 7, when everything read agrees but some rows could not be checked (an index that "
                   "does not answer, unreadable METADATA or libraries).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--force", is_flag=True, help="With -o: replace FILE even when tritonlock did not write it.")
def compat_check(index_url: str | None, versions: str | None, wheels: str, new: bool = False,
                 output: str | None = None, no_vendor: bool = False, compat_dir: str | None = None,
                 allow_unchecked: bool = False, as_json: bool = False, force: bool = False) -> None:
    """Compare compat/ with live index metadata: wheel tags (Python, platform, glibc), pinned triton, PyPI's torch
    build, the ptxas each Triton wheel bundles, the CUDA variants, ROCm and XPU builds on PyTorch's indexes and the
    Triton they require, and the GPU code inside torch's wheels. Says what it compared and what it could not check.

    Exit 0: everything checked agrees; 1: a disagreement (or a torch/triton release on the index that the matrix
    lacks: --new drafts its rows); 7: what was read agrees but some of it could not be checked (--allow-unchecked
    accepts that)."""
    if new:
        from tritonlock._files import check_writes, write_file
        from tritonlock.maintain.drafts import main_new

        output = None if output == "-" else output  # standard output, never a file named "-"
        if output:
            check_writes([Path(output)], what="compat check --new", force=force)
        text, said = main_new(index_url, compat_dir)
        for line in said:
            _echo(line, err=True)
        if text and output:
            write_file(output, text + "\n", what="compat check --new", force=force)
            _echo(f"wrote {output} — review every `inferred:` line, then move the rows into compat/", err=True)
        elif text:
            _echo(text)
        sys.exit(0)
    from tritonlock.lock.index import default_index
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.maintain.compat_check import Index, check

    matrix = load_matrix(compat_dir)
    out = check(matrix, Index(index_url or default_index()), versions=set(versions.split(",")) if versions else None,
                inside=wheels, vendor=not no_vendor, compat=compat_dir)
    if as_json:
        _echo(json.dumps(out.as_json(allow_unchecked), indent=2, sort_keys=True))
    else:
        for line in out.text(allow_unchecked):
            _echo(line)
    sys.exit(out.exit_code(allow_unchecked))


if __name__ == "__main__":  # pragma: no cover
    main()
