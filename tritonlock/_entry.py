"""The console script: a no-op `tritonlock sync --no-verify` is answered from the venv's completed-sync stamp (a plain
`sync`, from that and the record of a verify that passed on exactly that venv), and `tritonlock run CMD` on a venv
that matches its lock becomes CMD, before the CLI (click and the rest) is imported; every other command line goes to
`tritonlock.cli`."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        _main()
    except KeyboardInterrupt:  # Ctrl-C before the CLI's own handler is in place (while it is imported): as there
        _interrupted()


def _interrupted() -> None:
    """End as the CLI ends on Ctrl-C: "interrupted" and exit 130, never a traceback; a second Ctrl-C meanwhile is
    ignored (nothing was started that needs stopping: the command had not begun)."""
    import os
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for stream, text in ((sys.stdout, ""), (sys.stderr, "interrupted\n")):
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):  # (a closed pipe: nothing more can be said)
            pass
    os._exit(130)


def _main() -> None:
    _run_matching(sys.argv[1:])  # (returns only when the CLI must decide)
    line = _noop_sync(sys.argv[1:])
    if line is not None:
        sys.stdout.write(_clean(line) + "\n")  # (as every line the CLI prints: no control character raw)
        return
    text = _help(sys.argv[1:]) or _passed_check(sys.argv[1:])
    if text is not None:
        from tritonlock._term import clean

        sys.stdout.write(clean(text))  # kept as the CLI printed it; no control character raw either way
        return
    from tritonlock.cli import _base, main as cli

    _base.OWN_PROCESS = True  # this process is the command: how it ends is tritonlock's to decide
    _collect_less()
    cli()


def _collect_less() -> None:
    """A command is one short process that builds large graphs of objects it keeps to the end (pages, facts,
    closures): Python's cyclic collector walking them again and again stalls every thread (0.15 s of a warm 0.9 s
    sgl-kernel resolve, while reading METADATA made thousands of objects). What the imports made is frozen out of
    every collection, and a collection comes after 200,000 new objects, not 700 (as mypy does): garbage that forms
    cycles is still collected, less often (a vllm + sglang resolve peaks at the same 180 MB)."""
    import gc

    gc.freeze()
    gc.set_threshold(200_000, 30, 30)


def _clean(line: str) -> str:
    """tritonlock._term.clean for one line: imported only where the line holds a character that is not printable
    (that module brings typing and enum: a tenth of a no-op sync's time)."""
    if line.isprintable():
        return line
    from tritonlock._term import clean

    return clean(line)


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
    order — only those — when the stamp says so, and the "verified at" line for the same without --no-verify when the
    venv's verify record holds too; None sends the command line to the CLI, which does the same check itself."""
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
    import os

    from tritonlock._discover import find_project
    from tritonlock.environment._noop import already_synced, already_verified

    project = values.get("--project") or find_project()
    venv = values["--venv"] if "--venv" in values else os.path.join(project, ".venv")
    check = already_synced if no_verify else already_verified  # plain sync: only a venv verified as it is now
    try:
        return check(project, venv, target=None, python=None, system_site_packages=None, locked=locked)
    except (OSError, ValueError):  # any doubt: the full command decides
        return None


def _run_matching(args: list[str]) -> None:
    """`tritonlock run [-p DIR | --project DIR] [--venv DIR] [--target T] [--no-sync] [--locked] [--] CMD…` on a venv
    whose stamp says it matches the lock: exec CMD in the venv now, as the CLI would after the same check. Returns
    (to the CLI) on anything else: another option, no match, a doubt."""
    if not args or args[0] != "run":
        return
    values: dict[str, str] = {}
    locked = False
    i = 1
    while i < len(args):
        a = args[i]
        name, eq, value = a.partition("=")
        if a == "--":
            i += 1
            break
        if a in ("--no-sync", "--locked"):
            locked = locked or a == "--locked"
        elif eq and name in ("--project", "--venv", "--target") and value:
            values[name] = value
        elif a in ("-p", "--project", "--venv", "--target") and i + 1 < len(args) and args[i + 1]:
            values["--project" if a == "-p" else a] = args[i + 1]
            i += 1
        elif a.startswith("-"):
            return  # (--help, an unknown option: the CLI says it)
        else:
            break
        i += 1
    command = args[i:]
    if not command:
        return
    import os

    from tritonlock._discover import find_project
    from tritonlock.environment._noop import matching_stamp

    project = values.get("--project") or find_project()
    venv = values["--venv"] if "--venv" in values else os.path.join(project, ".venv")
    try:
        if matching_stamp(project, venv, target=values.get("--target"), python=None, system_site_packages=None,
                          locked=locked) is None:
            return
        from tritonlock.environment._exec import become, in_venv

        found = in_venv(venv, command)
    except (OSError, ValueError):
        return
    if found is not None:  # (else the CLI says that no such command was found)
        become(*found)
