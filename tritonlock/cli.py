"""Command line: parse, call one function, print. Heavy imports stay inside the commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from tritonlock import __version__
from tritonlock.errors import TritonlockError

INTENT_FILE = "triton-env.toml"
LOCK_FILE = "triton-env.lock"

EXIT_CODES = """\b
Exit codes:
  0  success
  1  a check failed (verify) or doctor found an error
  2  bad input: triton-env.toml, triton-env.lock, compat/ data or an option
  3  conflict: nothing in the matrix fits a target
  4  a package index or uv failed
  5  sync failed (the previous environment is left as it was)
  6  the verify runner could not run
"""


def _fail(err: TritonlockError) -> NoReturn:
    click.echo(f"error: {err}", err=True)
    sys.exit(err.exit_code)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True))


class _Group(click.Group):
    """Turns TritonlockError into one clean message and its exit code (never a traceback)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except TritonlockError as err:
            _fail(err)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)


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
    root = Path(project)
    return root / INTENT_FILE, root / LOCK_FILE


_project_opt = click.option("--project", "-p", default=".", show_default=True, metavar="DIR",
                            help="Directory holding triton-env.toml and triton-env.lock.")
_json_opt = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


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
@_project_opt
@click.option("--force", is_flag=True, help="Overwrite an existing triton-env.toml.")
def init(project: str, force: bool) -> None:
    """Write a commented triton-env.toml for this machine."""
    from tritonlock import host
    from tritonlock.intent import starter
    from tritonlock.lockfile import write_atomic

    intent_path, _ = _project_paths(project)
    if intent_path.exists() and not force:
        raise TritonlockError(f"{intent_path} already exists — edit it, or pass --force to overwrite it")
    prof = host.detect()
    gpus = ", ".join(f"{g.name} ({g.cc})" for g in prof.gpus) or "no NVIDIA GPU"
    comment = (f"# Written by `tritonlock init` on a {prof.os}/{prof.arch} host: {gpus}"
               + (f", driver {prof.driver} (CUDA {prof.cuda_driver})" if prof.driver else "") + ".")
    py = ".".join(prof.python.split(".")[:2])
    Path(project).mkdir(parents=True, exist_ok=True)
    write_atomic(intent_path, starter(py, comment))
    click.echo(f"wrote {intent_path} — next: `tritonlock resolve`")


@main.command("host")
@_json_opt
@click.option("--save", metavar="FILE", help="Write this machine as a [[targets]] table to FILE.")
@click.option("--name", default=None, help="Target name for --save (default: the hostname's first GPU model).")
@_with_overrides
def host_cmd(as_json: bool, save: str | None, name: str | None, driver: str | None, cuda_: str | None,
             gpus: str | None, os_: str | None, arch: str | None, glibc: str | None, python_: str | None) -> None:
    """Show what tritonlock detects on this machine (driver, CUDA, GPUs, glibc, Python)."""
    from tritonlock import host

    prof = host.detect(_host_overrides(driver=driver, cuda=cuda_, gpus=gpus, os=os_, arch=arch, glibc=glibc,
                                       python=python_))
    if save:
        from tritonlock.lockfile import write_atomic

        tname = name or host.default_target_name(prof)
        write_atomic(save, host.target_toml(prof, tname))
        click.echo(f"wrote target {tname!r} to {save} — paste it into triton-env.toml, or pass "
                   f"`tritonlock resolve --target-file {save}`", err=True)
    if as_json:
        _echo_json(host.profile_json(prof))
    elif not save:
        click.echo(host.format_profile(prof))


@main.command()
@_project_opt
@click.option("--upgrade", is_flag=True, help="Re-resolve even when nothing changed (picks up newer releases).")
@click.option("--dry-run", is_flag=True, help="Print the decisions only: no lock is written, no network is used.")
@_json_opt
@click.option("--target-file", metavar="FILE", help="Lock for a machine saved with `tritonlock host --save`.")
def resolve(project: str, upgrade: bool, dry_run: bool, as_json: bool, target_file: str | None) -> None:
    """Resolve triton-env.toml into triton-env.lock (pinned, with sha256 hashes)."""
    from tritonlock.project import conflicts_error, lock_project, select

    intent_path, lock_path = _project_paths(project)
    if dry_run:
        from tritonlock.intent import read_intent
        from tritonlock.resolve import selection_json

        sels = select(read_intent(intent_path), target_file)
        if as_json:
            _echo_json({"targets": [selection_json(s) for s in sels]})
            if not all(s.ok for s in sels):
                sys.exit(3)
            return
        if not all(s.ok for s in sels):
            raise conflicts_error(sels)
        for s in sels:
            click.echo(_selection_text(s))
        return
    out = lock_project(intent_path, lock_path, upgrade=upgrade, target_file=target_file)
    if as_json:
        from tritonlock.resolve import selection_json

        _echo_json({"written": out.written, "reason": out.reason,
                    "targets": [selection_json(s) for s in out.selections]})
        return
    if not out.written:
        click.echo(f"{out.reason} (use --upgrade to re-resolve)")
        return
    for s in out.selections:
        click.echo(_selection_text(s))
    n = sum(len(t.packages) for t in out.lock.targets) if out.lock else 0
    click.echo(f"wrote {lock_path} ({len(out.selections)} target(s), {n} packages; {out.reason})")


def _selection_text(s: Any) -> str:
    lines = [f"target {s.target.name}: torch {s.torch} ({s.backend}) + "
             f"{s.triton_package or 'no triton'} {s.triton or ''} on Python {s.python}".rstrip(),
             f"  index: {s.index}"]
    lines += [f"  why: {r}" for r in s.reasons]
    lines += [f"  warning: {w}" for w in s.warnings]
    return "\n".join(lines)


@main.command()
@_project_opt
@_json_opt
@click.option("--target", "target_name", help="Show one target only.")
def show(project: str, as_json: bool, target_name: str | None) -> None:
    """Show the lock as a table: per target, the decision and every pinned package."""
    from tritonlock.lockfile import read_lock
    from tritonlock.resolve import selection_json

    _, lock_path = _project_paths(project)
    lock = read_lock(lock_path)
    targets = [t for t in lock.targets if target_name in (None, t.name)]
    if target_name and not targets:
        raise TritonlockError(f"{lock_path} has no target {target_name!r} (it has: "
                              f"{', '.join(t.name for t in lock.targets)})")
    if as_json:
        _echo_json({"lock-version": lock.lock_version, "matrix-version": lock.matrix_version, "targets": [
            {**selection_json(t.selection), "packages": [
                {"name": p.name, "version": p.version, "index": p.index, "files": len(p.wheels) + bool(p.sdist)}
                for p in t.packages]} for t in targets]})
        return
    for t in targets:
        click.echo(_selection_text(t.selection))
        width = max((len(p.name) for p in t.packages), default=4)
        vwidth = max((len(p.version) for p in t.packages), default=7)
        click.echo(f"  {'package'.ljust(width)}  {'version'.ljust(vwidth)}  index")
        for p in t.packages:
            click.echo(f"  {p.name.ljust(width)}  {p.version.ljust(vwidth)}  {p.index}")
        click.echo("")
if __name__ == "__main__":  # pragma: no cover
    main()
