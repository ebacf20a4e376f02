"""What every command shares: the one way the CLI prints (control characters escaped, user:token@ redacted), the
group that turns TritonlockError into a message and an exit code, and the common options."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from tritonlock.errors import TritonlockError


INTENT_FILE = "triton-env.toml"


LOCK_FILE = "triton-env.lock"


def echo(message: Any = "", *, err: bool = False, nl: bool = True) -> None:
    """The one way the CLI prints. Whatever a lock, an index, a node or a venv put into the text, it reaches the
    terminal with every control character escaped (tritonlock's own colours kept, on a colour terminal only) and
    without user:token@ in any URL."""
    from tritonlock._term import clean, colour
    from tritonlock._urls import redact

    click.echo(clean(redact(str(message)), styles=colour(sys.stderr if err else sys.stdout)), err=err, nl=nl)


# The project the command works on, once its --project option is known: messages name the tables of that project's
# own intent file (a pyproject.toml keeps them under [tool.tritonlock]).
PROJECT: list[str] = []


def words(text: str) -> str:
    """`text` as the project's intent file spells its tables (see tritonlock._discover.intent_words)."""
    if not PROJECT:
        return text
    from tritonlock._discover import intent_words

    try:
        return intent_words(text, PROJECT[-1])
    except OSError:
        return text


def fail(err: TritonlockError) -> NoReturn:
    from tritonlock._urls import redact

    from tritonlock._term import styled

    echo(styled("error:", err=True, fg="red", bold=True) + f" {words(redact(str(err)))}", err=True)  # no user:token@
    sys.exit(err.exit_code)


def echo_json(data: Any) -> None:
    echo(json.dumps(data, indent=2, sort_keys=True))


def show_warning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    from tritonlock._term import styled

    echo(styled("warning:", err=True, fg="yellow") + f" {words(str(message))}", err=True)


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so that Python's own flush at exit does not fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class Group(click.Group):
    """Turns TritonlockError into one clean message and its exit code (never a traceback), and our
    warnings (a newer lock format) into one `warning:` line each."""

    def invoke(self, ctx: click.Context) -> Any:
        import warnings

        from tritonlock.errors import LockfileWarning

        PROJECT.clear()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("once", LockfileWarning)
                warnings.showwarning = show_warning
                return super().invoke(ctx)
        except TritonlockError as err:
            fail(err)
        except BrokenPipeError:  # `tritonlock show | head`: the reader has all it wanted; nothing went wrong here
            quiet_stdout()
            sys.exit(141)  # 128 + SIGPIPE, as a shell reports a pipeline member that the pipe closed on
        except OSError as err:  # a file we were asked to write or read: say which, never a traceback
            name = err.filename if isinstance(err.filename, str) else ""
            echo(f"error: {name + ': ' if name else ''}{err.strerror or err} — check the path and its "
                  "permissions", err=True)
            sys.exit(2)  # a path that is not there or not ours: bad input, as WriteError says
        except KeyboardInterrupt:
            if OWN_PROCESS:  # a second Ctrl-C while this is said and the process ends: the same exit 130
                import signal

                signal.signal(signal.SIGINT, signal.SIG_IGN)
            echo("interrupted", err=True)
            if OWN_PROCESS:
                # the process ends here, with 130: what is left of the interpreter's own shutdown (a signal still
                # pending from a child's group, say) cannot turn it into a death by SIGINT (-2) — everything this
                # command started was ended by the code the interruption unwound through
                for stream in (sys.stdout, sys.stderr):
                    try:
                        stream.flush()
                    except (OSError, ValueError):  # (a closed pipe: nothing more can be said)
                        pass
                os._exit(130)
            sys.exit(130)
        except MemoryError:  # (the readers bound their work; this is the last word, never a traceback)
            echo("error: ran out of memory — is an input (the intent, a host file, the lock) far larger than any "
                  "real one? check the files this command reads", err=True)
            sys.exit(2)


def project_paths(project: str) -> tuple[Path, Path]:
    from tritonlock._discover import intent_file

    root = Path(project)
    return intent_file(root), root / LOCK_FILE  # triton-env.toml, or pyproject.toml with [tool.tritonlock]


def discover(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    if value is None:
        from tritonlock._discover import find_project

        value = find_project()
    PROJECT.append(value)
    return value


# True when the console script runs the CLI as this process's command (tritonlock._entry sets it), not a test's
# CliRunner inside another program
OWN_PROCESS = False

project_opt = click.option("--project", "-p", default=None, callback=discover, metavar="DIR",
                            help="Directory holding triton-env.toml (or a pyproject.toml with [tool.tritonlock]) and "
                                 "triton-env.lock (default: the nearest one from here up that holds one of them, else "
                                 "this directory).")


json_opt = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def finite(param: click.Parameter, value: float) -> float:
    import math

    if not math.isfinite(value):  # FloatRange lets NaN through (every comparison with it is False)
        raise click.BadParameter(f"{value} is not a number of seconds", param=param)
    return value


def host_overrides(**kw: str | None) -> dict[str, str]:
    return {k: v for k, v in kw.items() if v is not None}


override_opts = [
    click.option("--driver", help="Pretend this NVIDIA driver version ('none' for no driver). Env: TRITONLOCK_DRIVER."),
    click.option("--cuda", "cuda_", help="Pretend the driver supports this CUDA version. Env: TRITONLOCK_CUDA."),
    click.option("--gpus", help="Comma-separated compute capabilities or GPU names. Env: TRITONLOCK_GPUS."),
    click.option("--os", "os_", help="linux | windows | macos. Env: TRITONLOCK_OS."),
    click.option("--arch", help="x86_64 | aarch64. Env: TRITONLOCK_ARCH."),
    click.option("--glibc", help="glibc version, e.g. 2.31. Env: TRITONLOCK_GLIBC."),
    click.option("--python", "python_", help="Python version, e.g. 3.12. Env: TRITONLOCK_PYTHON."),
]


def with_overrides(f: Any) -> Any:
    for opt in reversed(override_opts):
        f = opt(f)
    return f


def print_conflicts(selections: Any) -> None:
    from tritonlock._term import styled

    for s in selections:
        assert s.conflict is not None
        echo(styled("error:", err=True, fg="red", bold=True) + f" {s.conflict.message}", err=True)


def exit_on_recorded_conflicts(lock_path: Path) -> None:
    """An up-to-date lock that records a target's conflict: say it again, and exit 3 as when it was written."""
    from tritonlock.lock.lockfile import read_lock

    try:
        lock = read_lock(lock_path)
    except TritonlockError:
        return
    conflicts = [t.selection for t in lock.targets if not t.selection.ok and t.selection.conflict]
    if conflicts:
        print_conflicts(conflicts)
        sys.exit(3)


def warn_if_stale(project: str, lock: Any, doing: str) -> None:
    from tritonlock.staleness import stale_warning

    line = stale_warning(Path(project), lock, doing)
    if line:
        from tritonlock._term import styled

        echo(styled("warning:", err=True, fg="yellow") + line.removeprefix("warning:"), err=True)
