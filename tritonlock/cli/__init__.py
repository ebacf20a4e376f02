"""Command line: parse, call one function, print. Heavy imports stay inside the commands; each command group is a
small module of its own (tritonlock.cli.cmd_*), and what they share — the one way they print — is cli._base."""

from __future__ import annotations

import click

from tritonlock import __version__
from tritonlock.cli import cmd_compat, cmd_env, cmd_export, cmd_fleet, cmd_lock, cmd_verbs
from tritonlock.cli._base import Group

EXIT_CODES = """\b
Exit codes:
  0  success
  1  a check failed: verify found a problem, doctor found an error, check found a problem, or a node in report merge failed
  2  bad input: triton-env.toml, triton-env.lock (missing, unknown version, edited by hand,
     stale with --locked), compat/ data, pip's configuration (PIP_INDEX_URL, pip.conf), a lock
     with no target for this machine (sync, verify --record; export only where the lock has several
     targets and --target names none), a venv that does not match the lock (run --no-sync), a lock
     target export cannot write, or a command-line value (an unknown --target, an override, a path
     that is not there, a path that is not a regular file — a device, pipe, socket, directory or
     link, refused even with --force —, a file init would overwrite, or one a command would replace
     that tritonlock did not write: pass --force)
  3  conflict: nothing in the matrix fits a target, no torch that fits allows the packages you
     named, a package only an ancient release could satisfy, what the platform cannot have, or uv
     finds no answer though the index serves what the newest releases need (the message names
     both sides and a fix; the targets that fit are still locked — add and remove then change
     nothing)
  4  a package index failed while resolving (unreachable, refused the credentials, or lacks what
     the torch family or a named package's newest release needs), uv failed (or is not
     installed), or a locked wheel's native code could not be read (resolve
     --allow-unchecked-native locks it unchecked)
  5  sync failed (the message says what state the venv is in; also when uv is missing)
  6  the verify runner could not run at all
  7  compat check: what it read agrees, but some rows could not be checked (--allow-unchecked accepts that)
  130  interrupted (Ctrl-C); sync says, as checked, what state the venv is in
  run: these codes only before CMD starts (the last line on stderr: "(the command was not run)");
  once CMD runs, its exit code and its signals are its own
"""


@click.group(cls=Group, epilog=EXIT_CODES)
@click.version_option(__version__, prog_name="tritonlock")
def main() -> None:
    """Pinned, hash-verified PyTorch + CUDA + Triton environments.

    \b
    Typical use:
      tritonlock init       # write triton-env.toml for this machine
      tritonlock resolve    # write triton-env.lock
      tritonlock sync       # make .venv match the lock, then verify it
      tritonlock add vllm   # add a package: edit the intent, lock, sync
      tritonlock run -- python train.py   # run in .venv, synced first
    """


for _command in (cmd_lock.init, cmd_lock.host_cmd, cmd_lock.resolve, cmd_lock.show, cmd_lock.why, cmd_lock.check,
                 cmd_env.sync, cmd_env.verify, cmd_env.doctor, cmd_export.export, cmd_fleet.fleet, cmd_fleet.report,
                 cmd_compat.compat, cmd_verbs.tree, cmd_verbs.add, cmd_verbs.remove,
                 cmd_verbs.run):
    main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    main()
