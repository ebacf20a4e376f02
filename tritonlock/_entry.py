"""The console script: a no-op `tritonlock sync --no-verify` is answered from the venv's completed-sync stamp
before the CLI (click and the rest) is imported; every other command line goes to `tritonlock.cli`."""

from __future__ import annotations

import sys


def main() -> None:
    line = _noop_sync(sys.argv[1:])
    if line is not None:
        from tritonlock._term import clean

        sys.stdout.write(clean(line) + "\n")  # (as every line the CLI prints: no control character raw)
        return
    from tritonlock.cli import main as cli

    cli()


def _noop_sync(args: list[str]) -> str | None:
    """The "already matches" line for `sync --no-verify [--locked] [-p DIR | --project DIR] [--venv DIR]` in any
    order — only
    those — when the stamp says so; None sends the command line to the CLI, which does the same check itself."""
    if not args or args[0] != "sync":
        return None
    values: dict[str, str] = {}
    no_verify = locked = False
    i = 1
    while i < len(args):
        a = args[i]
        name, eq, value = a.partition("=")
        if a == "--no-verify":
            no_verify = True
        elif a == "--locked":  # (the stamp is written only for a lock that was fresh against these same inputs)
            locked = True
        elif eq and name in ("--project", "--venv") and value:
            values[name] = value
        elif a in ("-p", "--project", "--venv") and i + 1 < len(args) and args[i + 1]:
            values["--venv" if a == "--venv" else "--project"] = args[i + 1]
            i += 1
        else:
            return None
        i += 1
    if not no_verify:
        return None
    from pathlib import Path

    from tritonlock._discover import find_project
    from tritonlock.environment._noop import already_synced

    project = Path(values.get("--project") or find_project())
    venv = Path(values["--venv"]) if "--venv" in values else project / ".venv"
    try:
        return already_synced(project, venv, target=None, python=None, system_site_packages=None, locked=locked)
    except (OSError, ValueError):  # any doubt: the full command decides
        return None
