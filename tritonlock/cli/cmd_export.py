"""export: the lock as pylock, requirements, images, uv, pixi, a wheelhouse, or a Slurm / Kubernetes job."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from tritonlock.cli._base import echo, project_opt, project_paths, warn_if_stale
from tritonlock.errors import TritonlockError, UsageError


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


@click.command()
@project_opt
@click.option("--format", "fmt", required=True,
              type=click.Choice(["pylock", "requirements", "dockerfile", "devcontainer", "slurm", "k8s", "uv", "wheelhouse", "pixi"]),
              help="pylock: PEP 751 pylock.toml; requirements: requirements.txt with --hash; dockerfile: "
                   "multi-stage image on nvidia/cuda; devcontainer: .devcontainer/ (devcontainer.json + Dockerfile); uv: "
                   "[tool.uv] index/sources (an extra per target) into a pyproject.toml; pixi: a pixi.toml, an "
                   "environment per target; wheelhouse: every file into -o DIR for `sync --find-links DIR`.")
@click.option("--target", "target_name", help="Lock target to export (default: the one for this machine).")
@click.option("-o", "--output", metavar="PATH",
              help="Write here instead of stdout (devcontainer: the directory, made when missing; default "
                   "PROJECT/.devcontainer).")
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
            echo(line, err=True)
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
        if output is not None:  # -o DIR: made when missing, as the default .devcontainer/ is — not the folders above
            from tritonlock._files import missing_dir, not_a_file

            if os.path.lexists(out_dir) and not out_dir.is_dir():
                raise UsageError(f"{what}: -o {out_dir} {not_a_file(out_dir) or 'is a file'}, not a directory — pass "
                                 "a directory (it is made when missing); nothing was written")
            if not out_dir.is_dir() and not out_dir.parent.is_dir():
                raise UsageError(f"{what}: {out_dir.parent} {missing_dir(out_dir.parent)} — create it first or fix the "
                                 f"path (the directory {out_dir.name} itself is made when missing); nothing was written")
            check_writes([out_dir / f.path for f in main_files], what=what, force=force, parents=True)
    elif output is not None:
        writes.append((Path(output), main_files[0].text))
        check_writes([Path(output)], what=what, force=force)
    # the build context (tritonlock-image/) and the default .devcontainer/ are made in the project when missing
    write_files(writes, what=what, force=force, parents=True)
    context_files = [p for p, _ in writes if (fmt != "devcontainer" or p.parent != out_dir)
                     and (output is None or p != Path(output))]
    if context_files:  # one line for the build context, however many files the runner has
        ctx = Path(project) / Path(next(f.path for f in files if f.in_context)).parts[0]  # tritonlock-image/
        tops = sorted({"/".join(p.relative_to(ctx).parts[:1]) + ("/" if len(p.relative_to(ctx).parts) > 1 else "")
                       for p in context_files})
        echo(f"wrote {ctx}/ ({len(context_files)} files: {', '.join(tops)}), which the Dockerfile copies from its "
             "build context (the project)", err=True)
    if fmt == "devcontainer":
        echo(f"wrote {', '.join(str(p) for p, _ in writes if p.parent == out_dir)}", err=True)
    if output is None and fmt != "devcontainer":
        echo(main_files[0].text, nl=False)
    elif fmt != "devcontainer":
        echo(f"wrote {output} (target {target.name})", err=True)


def _export_target(project: str, target_name: str | None) -> tuple[Any, Any]:
    """The project's lock (a stale one with its warning) and the target to export: --target's, else the one this
    machine fits where the lock has several."""
    from tritonlock import export as ex
    from tritonlock.lock.lockfile import read_lock

    _, lock_path = project_paths(project)
    lock = read_lock(lock_path)
    warn_if_stale(project, lock, "exporting")
    host_profile = None
    if target_name is None and len(lock.targets) > 1:
        from tritonlock.host import detect

        host_profile = detect(toolkit=False, cached=True)
    return lock, ex.choose_target(lock, target_name, host_profile, str(lock_path))


def _lock_to_export(project: str, target_name: str | None) -> Any:
    """The project's lock (a stale one with its warning), narrowed to --target's target when one is named."""
    import dataclasses

    from tritonlock.lock.lockfile import named_target, read_lock

    _, lock_path = project_paths(project)
    lock = read_lock(lock_path)
    warn_if_stale(project, lock, "exporting")
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
        echo(text, nl=False)
        return
    write_file(output, text, what="export --format pixi", force=force)
    echo(f"wrote {output} — then `pixi install -e ENV` with ENV one of: "
          + ", ".join(re.sub(r"[^a-z0-9]+", "-", t.name.lower()).strip("-") for t in lock.targets), err=True)


def _export_wheelhouse(project: str, target_name: str | None, output: str | None, *, force: bool) -> None:
    """Every file the target installs into -o DIR, checked against the lock's sha256, for `sync --find-links DIR`."""
    from tritonlock.export.wheelhouse import build, size_text

    if not output:
        raise UsageError("--format wheelhouse needs -o DIR (the directory to fill; a second run fetches only what is "
                         "missing)")
    lock, target = _export_target(project, target_name)
    intent_path, _ = project_paths(project)
    if intent_path.exists():  # the credentials written in [indexes] reach the downloads, as they reach sync's
        from tritonlock.intent.read import read_intent

        try:
            read_intent(intent_path)
        except TritonlockError:
            pass  # (a stale or broken intent: pip's configuration, ~/.netrc and keyring still apply)
    r = build(target, Path(output), force=force, say=lambda line: echo(line, err=True))
    again = f", {r.refetched} fetched again" if r.refetched else ""
    echo(f"wrote {output}: {r.files} files, {size_text(r.bytes_total)} for target {target.name} "
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
        echo(out, nl=False)
    else:
        write_file(output, out, what="export --format uv", force=force, replace="edit")
        echo(f"wrote {output} ([[tool.uv.index]], [tool.uv.sources]"
              + (", an extra per target and [tool.uv] conflicts" if plan.extras else "") + ")", err=True)
    for target, cmd in plan.commands:
        echo(f"target {target}: {cmd}", err=True)


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
    _, lock_path = project_paths(project)
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
        echo(text, nl=False)
        return
    from tritonlock._files import write_file

    write_file(output, text, what=f"export --format {fmt}", force=force)
    echo(f"wrote {output}" + (f" — submit it with `sbatch {output}`" if fmt == "slurm" else
                                    f" — apply it with `kubectl apply -f {output}`")
, err=True)
