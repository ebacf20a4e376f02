"""The commands of the intent and the lock: init, host, resolve, show, why, check."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from tritonlock.cli._base import (INTENT_FILE, PROJECT, echo, echo_json, exit_on_recorded_conflicts,
                                  host_overrides, json_opt, print_conflicts, project_opt, project_paths,
                                  warn_if_stale, with_overrides, words)
from tritonlock.errors import UsageError


@click.command()
@click.option("--project", "-p", default=".", show_default=True, metavar="DIR",
              help="Directory to write triton-env.toml in.")
@click.option("--force", is_flag=True, help="Overwrite an existing triton-env.toml.")
@click.option("--no-index-check", "check_index", is_flag=True, flag_value=False, default=True,
              help="Do not ask the package indexes whether they answer (no network).")
@click.option("--pyproject/--no-pyproject", "in_pyproject", default=None,
              help="Add a [tool.tritonlock] table to the project's existing pyproject.toml instead (its "
                   "[project].dependencies are the packages; nothing else in the file changes). The default where "
                   "DIR has a pyproject.toml with a [project] table and no triton-env.toml; --no-pyproject writes "
                   "triton-env.toml there instead.")
def init(project: str, force: bool, check_index: bool, in_pyproject: bool | None = None) -> None:
    """Write a commented triton-env.toml for this machine — or, in a Python project (a pyproject.toml with a
    [project] table), its [tool.tritonlock] table.

    It asks PyTorch's wheel index and your default index (pip's configuration) whether they answer: when only the
    default index does (PyPI or a mirror), it sets [indexes] torch = "default", so `tritonlock resolve` works here.
    """
    from tritonlock import host
    from tritonlock._files import check_writes, write_file
    from tritonlock.intent.read import starter

    PROJECT.append(project)
    chosen = in_pyproject is None and _python_project(Path(project))
    if in_pyproject is None:
        in_pyproject = chosen
    if in_pyproject:
        intent_path = Path(project) / "pyproject.toml"
        if (Path(project) / INTENT_FILE).is_file():
            raise UsageError(f"{Path(project) / INTENT_FILE} already states this project's intent — one project has "
                             f"one: move it into {intent_path} by hand, or keep it and leave pyproject.toml be")
    else:
        intent_path, _ = project_paths(project)
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
        echo(words(note), err=True)
    if chosen:
        echo(f"note: {intent_path} has a [project] table, so tritonlock's intent goes there: its "
             "[project].dependencies are the packages to lock (`tritonlock init --no-pyproject` writes a "
             "triton-env.toml instead)", err=True)
    from tritonlock._discover import find_project

    outer = find_project(str(Path(project).resolve().parent))
    if (Path(outer) / "triton-env.toml").is_file() or (Path(outer) / "triton-env.lock").is_file():
        here = "here" if Path(project) == Path(".") else f"in {project}"
        echo(f"note: {outer} holds another project; commands run {here} and below now use this new one",
              err=True)
    echo(f"wrote {intent_path} — next: `tritonlock resolve` (or `tritonlock add PKG` to add a package, lock and sync)")


def _python_project(root: Path) -> bool:
    """Whether DIR is a Python project whose pyproject.toml should hold the intent: a [project] table, no
    [tool.tritonlock] yet, no triton-env.toml (a file that is not TOML is left alone: init writes triton-env.toml)."""
    from tritonlock import _toml
    from tritonlock._files import read_text

    py = root / "pyproject.toml"
    if (root / INTENT_FILE).exists() or not py.is_file():
        return False
    try:
        data = _toml.loads(read_text(py, encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, _toml.TOMLDecodeError):
        return False
    tool = data.get("tool")
    return isinstance(data.get("project"), dict) and not (isinstance(tool, dict) and "tritonlock" in tool)


@click.command("host")
@json_opt
@click.option("--save", metavar="FILE", help="Write this machine as a [[targets]] table to FILE.")
@click.option("--name", default=None, help="Target name for --save (default: the first GPU's model, e.g. "
                                           "h200 or rtx-4090; cpu without one).")
@click.option("--force", is_flag=True, help="With --save: replace FILE even when tritonlock did not write it.")
@with_overrides
def host_cmd(as_json: bool, save: str | None, name: str | None, force: bool, driver: str | None, cuda_: str | None,
             gpus: str | None, os_: str | None, arch: str | None, glibc: str | None, python_: str | None) -> None:
    """Show what tritonlock detects on this machine (driver, CUDA, GPUs, glibc, Python)."""
    from tritonlock import host

    prof = host.detect(host_overrides(driver=driver, cuda=cuda_, gpus=gpus, os=os_, arch=arch, glibc=glibc,
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
            echo(host.target_toml(prof, tname), nl=False)
            return
        # `host --save hosts/NAME.toml` in a new project creates hosts/ (and removes it again if the write fails)
        write_files([(Path(save), host.target_toml(prof, tname))], what="host --save", force=force, parents=True)
        echo(f"wrote target {tname!r} to {save} — {saved_host_advice(Path(save), Path(find_project()))}",
              err=True)
    if as_json:
        echo_json(host.profile_json(prof, host.gpu_links(prof)))
    elif not save:
        echo(host.format_profile(prof, host.gpu_links(prof)))


@click.command()
@project_opt
@click.option("--upgrade", is_flag=True, help="Re-resolve even when nothing changed (picks up newer releases).")
@click.option("--dry-run", is_flag=True, help="Print the decisions only: no lock is written, no network is used (see --packages).")
@click.option("--packages", "decide_packages", is_flag=True,
              help="With --dry-run: also decide the versions of the packages you named ([environment].packages, or "
                   "[project].dependencies in pyproject.toml) — and so the torch they allow — with uv and the indexes, "
                   "as `resolve` does (uses the network).")
@json_opt
@click.option("--target-file", metavar="FILE", help="Lock for a machine saved with `tritonlock host --save`.")
@click.option("--upgrade-package", "-P", "upgrade_packages", multiple=True, metavar="NAME",
              help="Lock again keeping every pin of the existing lock but NAME's (repeatable): only NAME and what it "
                   "forces move; torch's decision stays unless NAME is torch's family or forces it. Says what "
                   "moved and why.")
@click.option("--allow-unchecked-native", "allow_unchecked", is_flag=True,
              help="Where a locked wheel's native code cannot be read (an index that answers neither HTTP Range "
                   "requests nor a download of it), lock it unchecked instead of failing: the lock, `show` and "
                   "`check` say so, and `verify` imports it (as [environment] allow-unchecked-native = true).")
def resolve(project: str, upgrade: bool, dry_run: bool, as_json: bool, target_file: str | None,
            decide_packages: bool, upgrade_packages: tuple[str, ...] = (), allow_unchecked: bool = False) -> None:
    """Resolve the intent (triton-env.toml, or pyproject.toml's [tool.tritonlock]) into triton-env.lock (pinned, with
    sha256 hashes)."""
    intent_path, lock_path = project_paths(project)
    if upgrade_packages and (upgrade or dry_run):
        raise UsageError(f"--upgrade-package keeps every other pin of the lock; {'--upgrade' if upgrade else '--dry-run'}"
                         " does not go with it — pass one or the other")
    if dry_run:
        from tritonlock.intent.read import read_intent
        from tritonlock.lock import report
        from tritonlock.project import conflicts_error, select
        from tritonlock.decide.resolve import selection_json

        intent = read_intent(intent_path)
        for w in intent.warnings:
            echo(f"warning: {words(w)}", err=True)
        sels = select(intent, target_file)
        if intent.packages and all(s.ok for s in sels):
            from tritonlock.project import decided

            sels = decided(intent, sels, packages=decide_packages, allow_unchecked=allow_unchecked)
        if as_json:
            echo_json({"targets": [selection_json(s) for s in sels]})
            if not all(s.ok for s in sels):
                sys.exit(3)
            return
        if not all(s.ok for s in sels):
            raise conflicts_error(sels)
        for s in sels:
            echo(report.selection_text(s, words))
        return
    if not upgrade and not as_json and not upgrade_packages:
        from tritonlock._fast import lock_is_fresh

        if lock_is_fresh(intent_path, lock_path, target_file):
            echo(f"{lock_path} is up to date (use --upgrade to re-resolve)")
            exit_on_recorded_conflicts(lock_path)
            return
    from tritonlock._term import Quiet, TargetProgress
    from tritonlock.project import lock_project

    from tritonlock.errors import ResolveError

    with (Quiet() if as_json else TargetProgress()) as progress:
        try:
            out = lock_project(intent_path, lock_path, upgrade=upgrade, target_file=target_file, progress=progress,
                               upgrade_packages=upgrade_packages, allow_unchecked=allow_unchecked)
        except ResolveError as err:
            if not as_json or not hasattr(err, "selections"):
                raise
            # every target a conflict: no lock is written, and --json still says so, target by target
            from tritonlock.decide.resolve import selection_json

            echo_json({"written": False, "reason": "every target is a conflict: no lock written",
                       "targets": [selection_json(s) for s in err.selections]})
            sys.exit(3)
    said_lock(out, lock_path, as_json)


def said_lock(out: Any, lock_path: Path, as_json: bool) -> None:
    """What `resolve` (and `add`, `remove`) print of a locking run: warnings, each target's decision, the lock written
    — where it kept the pins of the lock before (--upgrade-package, add, remove), what moved and why; exit 3 for a
    target recorded as a conflict."""
    from tritonlock.lock import report

    for w in out.warnings:
        from tritonlock._term import styled

        echo(styled("warning:", err=True, fg="yellow") + f" {words(w)}", err=True)
    for note in out.notes:
        echo(f"note: {words(note)}", err=True)
    conflicts = [s for s in out.selections if not s.ok]
    if as_json:
        from tritonlock.decide.resolve import selection_json

        locked = {t.name: t for t in out.lock.targets} if out.lock else {}
        echo_json({"written": out.written, "reason": out.reason,
                    "targets": [{**selection_json(s), **report.builds_json(locked.get(s.target.name))}
                                for s in out.selections]})
        if conflicts:
            sys.exit(3)
        return
    if not out.written:
        echo(f"{out.reason} (use --upgrade to re-resolve)")
        exit_on_recorded_conflicts(lock_path)
        return
    locked = {t.name: t for t in out.lock.targets} if out.lock else {}
    for s in out.selections:
        if not s.ok:
            continue
        echo(report.selection_text(s, words))
        for line in report.build_lines(locked.get(s.target.name)):
            echo(line)
    n = sum(len(t.packages) for t in out.lock.targets) if out.lock else 0
    k = len(out.selections) - len(conflicts)
    recorded = (f" locked, {len(conflicts)} recorded as a conflict ({', '.join(s.target.name for s in conflicts)})"
                if conflicts else "")
    echo(f"wrote {lock_path} ({k} target{'' if k == 1 else 's'}{recorded}, {n} packages; {out.reason})")
    if out.kept_from is not None and out.lock is not None:
        from tritonlock.lock import moved

        for line in moved.lines(out.kept_from, out.lock, out.upgraded):
            echo(line)
    if conflicts:
        print_conflicts(conflicts)
        sys.exit(3)


@click.command()
@project_opt
@json_opt
@click.option("--target", "target_name", help="Show one target only.")
def show(project: str, as_json: bool, target_name: str | None) -> None:
    """Show the lock as a table: per target, the decision and every pinned package."""
    from tritonlock.lock import report
    from tritonlock.lock.lockfile import read_lock

    _, lock_path = project_paths(project)
    lock = read_lock(lock_path)
    warn_if_stale(project, lock, "showing")
    if target_name is not None:
        from tritonlock.lock.lockfile import named_target

        targets = [named_target(lock, target_name, lock_path, otherwise="show them all")]
    else:
        targets = list(lock.targets)
    from tritonlock import records

    judged = records.judge(records.read_records(lock_path.parent / records.RECORDS_FILE), lock)
    if as_json:
        from tritonlock.decide.resolve import selection_json

        echo_json({"lock-version": lock.lock_version, "matrix-version": lock.matrix_version, "targets": [
            {**selection_json(t.selection), "packages": [
                {"name": p.name, "version": p.version, "index": p.index, "files": len(p.wheels) + bool(p.sdist),
                 **report.package_build_json(p, t.selection.backend)}
                for p in t.packages], **report.builds_json(t),
             "unchecked_native": report.unchecked_json(t, lock.native),
             "verified": [{**records.record_json(j.record), "stale": j.stale} for j in judged
                          if j.record.target == t.name]} for t in targets]})
        return
    echo(report.show_text(targets, verified=lambda t: records.verified_lines(judged, t),
                          recorded=lambda name: any(j.record.target == name for j in judged), words=words,
                          native=lock.native))


@click.command()
@project_opt
@click.option("--target", "target_name", help="Only this target of triton-env.toml.")
@click.option("--torch", "torch_version", metavar="VERSION", help="Only this torch release or line (2.15 or 2.15.0).")
@click.option("--target-file", metavar="FILE", help="Advise for a machine saved with `tritonlock host --save`.")
@click.option("--sources", "sources", is_flag=True, help="Also list the compat/ rows each line rests on.")
@click.option("--no-sources", is_flag=True, hidden=True, help="Leave out the compat/ rows (the default).")
@click.option("--offline", is_flag=True,
              help="Check each change against compat/ only, not by locking your packages with uv (it says so).")
@json_opt
def why(project: str, target_name: str | None, torch_version: str | None, target_file: str | None, sources: bool,
        no_sources: bool, offline: bool, as_json: bool) -> None:
    """What stands between each target and each newer torch/triton line, and the least change that unlocks it.

    Each line names the change (driver >= X, Python, glibc, or the intent) and what the target would then get;
    --sources adds the compat/ rows it rests on (--json always has them). Every change is checked by resolving again
    with it against compat/ (no network); where you name packages and the lock is fresh, also by locking them with uv
    and the indexes with the change applied, which says what the lock would then get and what still holds a package
    back (--offline skips that). Nothing is written.
    """
    from tritonlock.errors import UnknownTargetError
    from tritonlock.intent.read import read_intent
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.project import running_python, targets_for
    from tritonlock.decide.why import advice_json, advise, format_advice

    intent_path, _ = project_paths(project)
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
    if intent.packages:
        from tritonlock._term import Quiet, TargetProgress
        from tritonlock.decide.why_packages import check_packages
        from tritonlock.models import Intent, Selection, TargetSpec
        from tritonlock.project import packages_decision

        locked = _locked_selections(project, intent_path)
        skip = ("--offline" if offline else None if locked is not None else
                f"no fresh {project_paths(project)[1].name}: run `tritonlock resolve`, then `why` checks that too")

        def decide(it: Intent, ts: tuple[TargetSpec, ...]) -> tuple[Selection, ...]:
            with (Quiet() if as_json else TargetProgress()) as progress:
                return packages_decision(it, ts, progress=progress)

        advice = check_packages(advice, intent, matrix, running_python(), locked or {}, decide, skip)
    if as_json:
        echo_json({"matrix-version": matrix.version, "targets": [advice_json(a) for a in advice]})
        return
    from tritonlock.decide.why_packages import format_checked

    echo("\n\n".join([*(format_advice(a, sources=sources and not no_sources) for a in advice),
                       *filter(None, [format_checked(advice)])]))


def _locked_selections(project: str, intent_path: Path) -> dict[str, Any] | None:
    """The lock's decisions by target name, for `why`'s word on the packages — only from a lock that is readable and
    fresh (None otherwise: a stale one decided for another intent; `why` then says nothing of the packages rather
    than old news)."""
    from tritonlock.errors import TritonlockError
    from tritonlock.lock.lockfile import read_lock
    from tritonlock.staleness import lock_staleness

    _, lock_path = project_paths(project)
    if not lock_path.is_file():
        return None
    try:
        lock = read_lock(lock_path)
        if lock_staleness(Path(project), lock) is not None:
            return None
    except TritonlockError:
        return None
    return {t.name: t.selection for t in lock.targets}


@click.command()
@project_opt
@json_opt
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
        text = format_report(report, str(project_paths(project)[1]))
    echo(text)
    if report.ok and not check_host and not require_verified:
        from tritonlock import _kept

        # the same check of the same inputs answers from this (tritonlock._entry), without deciding every target again
        _kept.remember_check(project, as_json, text + "\n")
    sys.exit(report.exit_code)
