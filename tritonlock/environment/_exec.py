"""`tritonlock run`'s last step: a command line in the project's venv, run in tritonlock's place. Standard library
only, and of that only what Python's start-up has loaded (the console script execs a command on a matching venv
before the CLI is loaded)."""

from __future__ import annotations

import os
import sys


def in_venv(venv: str, command: list[str]) -> tuple[list[str], dict[str, str]] | None:
    """The command line and environment of CMD run in the venv (its bin/ first on PATH, VIRTUAL_ENV set, PYTHONHOME
    unset); None when no such program is found there or on PATH."""
    bin_dir = os.path.join(os.path.abspath(venv), "Scripts" if os.name == "nt" else "bin")
    path = os.pathsep.join([bin_dir, *([os.environ["PATH"]] if os.environ.get("PATH") else [])])
    exe = _which(command[0], path)
    if exe is None:
        return None
    env = dict(os.environ)
    env["VIRTUAL_ENV"], env["PATH"] = os.path.abspath(venv), path
    env.pop("PYTHONHOME", None)
    return [exe, *command[1:]], env


def become(argv: list[str], env: dict[str, str]) -> None:
    """Exec: the command takes this process's place — its exit code, signals, stdin and terminal are its own."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.execve(argv[0], argv, env)


def _which(name: str, path: str) -> str | None:
    """shutil.which(name, path=path) on POSIX, without importing shutil (and the `re` and `fnmatch` it brings)."""

    def ok(p: str) -> bool:
        return os.path.isfile(p) and os.access(p, os.X_OK)

    if os.sep in name or (os.altsep and os.altsep in name):
        return name if ok(name) else None
    for d in path.split(os.pathsep):
        p = os.path.join(d or ".", name)
        if ok(p):
            return p
    return None
