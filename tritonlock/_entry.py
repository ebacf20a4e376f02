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
    text = _help(sys.argv[1:]) or _passed_check(sys.argv[1:])
    if text is not None:
        from tritonlock._term import clean

        sys.stdout.write(clean(text))  # kept as the CLI printed it; no control character raw either way
        return
    from tritonlock.cli import _base, main as cli

    _base.OWN_PROCESS = True  # this process is the command: how it ends is tritonlock's to decide
    cli()


def _help(args: list[str]) -> str | None:
    """`tritonlock --help` as click writes it 80 columns wide (tritonlock/_help.py, which a test keeps equal to
    click's own), where click would write it so: COLUMNS or the terminal at least that wide, or no terminal."""
    import os

    if args != ["--help"] or os.path.basename(sys.argv[0]) != "tritonlock":  # (click names the program after it)
        return None

    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:  # as shutil.get_terminal_size, which click asks
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    if columns < 80:
        return None
    from tritonlock._help import HELP

    return HELP


def _passed_check(args: list[str]) -> str | None:
    """What `tritonlock check [--json] [-p DIR]` printed when it last passed with exactly these inputs (the lock, the
    intent and its target files, the matrix, this tritonlock: tritonlock._fast.check_key), else None (the full
    check)."""
    if not args or args[0] != "check":
        return None
    project, as_json, i = None, False, 1
    while i < len(args):
        a = args[i]
        if a == "--json":
            as_json = True
        elif a in ("-p", "--project") and i + 1 < len(args) and args[i + 1]:
            project, i = args[i + 1], i + 1
        elif a.startswith("--project=") and len(a) > len("--project="):
            project = a.partition("=")[2]
        else:
            return None
        i += 1
    from tritonlock._discover import find_project
    from tritonlock._kept import cached_check

    try:
        return cached_check(project or find_project(), as_json)
    except (OSError, ValueError):
        return None


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
    import os

    from tritonlock._discover import find_project
    from tritonlock.environment._noop import already_synced

    project = values.get("--project") or find_project()
    venv = values["--venv"] if "--venv" in values else os.path.join(project, ".venv")
    try:
        return already_synced(project, venv, target=None, python=None, system_site_packages=None, locked=locked)
    except (OSError, ValueError):  # any doubt: the full command decides
        return None
