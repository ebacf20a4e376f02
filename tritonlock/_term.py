"""Terminal feedback: colour and per-target progress on a TTY (rich, imported only then), plain lines otherwise.

Colour follows the NO_COLOR convention (no-color.org: a non-empty NO_COLOR turns it off) and is used only when the
stream is a terminal; CI logs and pipes get plain text.
"""

from __future__ import annotations

import os
import re
import sys
import time
from types import TracebackType
from typing import IO, Any


def printable(text: str, limit: int = 1000) -> str:
    """Text from another machine or a file (a node's name, a log line) made safe to show: every character that is
    not printable — a newline that would forge a table row, an escape sequence that would drive the terminal — as
    its \\x/\\u escape; cut at `limit` characters."""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# The colour codes tritonlock itself writes (click.style: reset, bold, dim, red, green, yellow, magenta, cyan): the
# only escape sequences `clean` lets through, and only on a colour terminal. None of them moves the cursor, hides
# text, sets a title or makes a link.
_OURS = re.compile(r"\x1b\[(?:0|1|2|22|31|32|33|35|36|39)m")


def _escape(text: str) -> str:
    return "".join(c if c.isprintable() or c in "\n\t" else c.encode("unicode_escape").decode("ascii") for c in text)


def clean(text: str, *, styles: bool = False) -> str:
    """Text about to be printed, whole (a report, a table, a message): every control character in it but newline
    and tab shown as its \\x/\\u escape, so that nothing a lock, an index, a node or a venv holds can drive the
    terminal (an escape sequence, a carriage return that overwrites a line). `styles`: keep tritonlock's own colour
    codes (the caller checked that the stream is a colour terminal)."""
    if _printable_lines(text):
        return text
    if not styles:
        return _escape(text)
    out, pos = [], 0
    for m in _OURS.finditer(text):
        out += [_escape(text[pos:m.start()]), m.group(0)]
        pos = m.end()
    out.append(_escape(text[pos:]))
    return "".join(out)


def _printable_lines(text: str) -> bool:
    return all(line.isprintable() for line in text.replace("\t", " ").split("\n"))
def human_size(n: int) -> str:
    """A size in one unit system everywhere tritonlock prints one: decimal (1 MB = 1,000,000 bytes, as download
    tools and index pages count), never mixed with binary MiB."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"  # pragma: no cover


def sizes_text(known: int, unknown: int) -> str:
    """A total that says what it leaves out: "3.2 GB", "3.2 GB + 2 files of unknown size", "2 files of unknown size"."""
    parts = [human_size(known)] if known or not unknown else []
    if unknown:
        parts.append(f"{unknown} file{'s' if unknown != 1 else ''} of unknown size")
    return " + ".join(parts)


def colour(stream: IO[str] | None = None) -> bool:
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")


def styled(text: str, *, err: bool = False, **style: Any) -> str:
    """click.style when the stream is a colour terminal, else the text itself."""
    if not colour(sys.stderr if err else sys.stdout):
        return text
    import click

    return click.style(text, **style)


# Report words that carry the verdict, coloured where they start a line (verify's checks, doctor's findings).
_MARKS = (("  FAIL ", "red"), ("  ok ", "green"), ("RESULT: FAILED", "red"), ("RESULT: OK", "green"),
          ("ERROR [", "red"), ("WARNING [", "yellow"), ("INFO [", "cyan"))


def highlight(report: str) -> str:
    """A plain report with its verdict words coloured when stdout is a colour terminal."""
    if not colour(sys.stdout):
        return report
    import click

    out = []
    for line in report.split("\n"):
        for mark, fg in _MARKS:
            if line.startswith(mark):
                word = mark.strip(" [")
                line = line.replace(word, click.style(word, fg=fg, bold=fg == "red"), 1)
                break
        out.append(line)
    return "\n".join(out)


class TargetProgress:
    """What a long step reports per target: `start(name, doing)`, then `done(name, result)` or `failed(name)`.
    On a terminal, one spinner line per target (rich); elsewhere one plain line when each starts and ends."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stderr
        self._rich: Any = None
        self._tasks: dict[str, Any] = {}
        self._began: dict[str, float] = {}
        self._said: dict[str, str] = {}

    def __enter__(self) -> TargetProgress:
        if getattr(self.stream, "isatty", lambda: False)():
            from rich.console import Console
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            console = Console(file=self.stream, no_color=bool(os.environ.get("NO_COLOR")))
            self._rich = Progress(SpinnerColumn(finished_text="[green]✓[/]"), TextColumn("{task.description}"),
                                  TimeElapsedColumn(), console=console, transient=False)
            self._rich.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        if self._rich is not None:
            self._rich.stop()

    def start(self, name: str, doing: str) -> None:
        self._began[name] = time.monotonic()
        if self._rich is not None:
            self._tasks[name] = self._rich.add_task(f"target {name}: {doing}", total=1)  # rich markup: names are
            # [A-Za-z0-9._-], versions and backends too
        else:
            self.stream.write(f"target {name}: {doing}…\n")
            self.stream.flush()

    def doing(self, name: str, text: str) -> None:
        """What the target's step is doing now (releases read, torch lines asked): the live line on a terminal,
        a plain line elsewhere (each once)."""
        if self._rich is not None:
            if name in self._tasks:
                from rich.markup import escape

                self._rich.update(self._tasks[name], description=escape(f"target {name}: {text}"))
            return
        if self._said.get(name) == text:
            return
        self._said[name] = text
        self.stream.write(f"target {name}: {text}…\n")
        self.stream.flush()

    def done(self, name: str, result: str) -> None:
        if self._rich is not None:
            self._rich.update(self._tasks[name], description=f"target {name}: {result}", completed=1)
        else:
            took = time.monotonic() - self._began.get(name, time.monotonic())
            self.stream.write(f"target {name}: {result} ({took:.1f} s)\n")
            self.stream.flush()

    def failed(self, name: str) -> None:
        if self._rich is not None:
            from rich.markup import escape

            self._rich.update(self._tasks[name], description=escape(f"target {name}: failed"), completed=1)
        else:
            self.stream.write(f"target {name}: failed\n")
            self.stream.flush()


class Quiet(TargetProgress):
    """No feedback (--json: stdout carries the document, and nothing else is said)."""

    def __enter__(self) -> TargetProgress:
        return self

    def start(self, name: str, doing: str) -> None:
        pass

    def doing(self, name: str, text: str) -> None:
        pass

    def done(self, name: str, result: str) -> None:
        pass

    def failed(self, name: str) -> None:
        pass


class PhaseProgress:
    """verify's live lines: a header at once, then one line per phase the runner reports (its progress events:
    {"phase": words, "state": "start"|"end", "seconds": s}). On a terminal, rich's spinners, each line ticked off with
    its time when its phase ends; elsewhere one plain line when a phase starts and one when it ends. Use as a context
    manager; `event` may be called from any thread."""

    def __init__(self, header: str, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stderr
        self.header = header
        self._rich: Any = None
        self._tasks: dict[str, Any] = {}
        import threading

        self._lock = threading.Lock()

    def __enter__(self) -> PhaseProgress:
        self.stream.write(printable(self.header) + "\n")
        self.stream.flush()
        # rich (a tenth of a second to import) is set up at the first phase, in the thread that reads the runner's
        # events, not here: the runner starts after this line, and nothing should delay it
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._open = True
        return self

    def _live(self) -> Any:
        """rich's live lines, started on first use (under self._lock) while this progress is open on a terminal."""
        if self._rich is None and getattr(self, "_tty", False) and getattr(self, "_open", False):
            from rich.console import Console
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            console = Console(file=self.stream, no_color=bool(os.environ.get("NO_COLOR")))
            self._rich = Progress(SpinnerColumn(finished_text="[green]✓[/]"), TextColumn("{task.description}"),
                                  TimeElapsedColumn(), console=console, transient=False)
            self._rich.start()
        return self._rich

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        with self._lock:
            self._open = False
            if self._rich is not None:
                for task in self._tasks.values():  # a phase the runner never ended (it stopped): left as it was
                    self._rich.stop_task(task)
                self._rich.stop()
                self._rich = None

    def event(self, event: dict[str, Any]) -> None:
        phase, state = event.get("phase"), event.get("state")
        if not isinstance(phase, str) or state not in ("start", "end"):
            return
        words = printable(phase, 200)
        more = event.get("words")
        seconds = event.get("seconds")
        took = f" ({seconds:.1f} s)" if isinstance(seconds, (int, float)) else ""
        with self._lock:
            if self._live() is not None:
                from rich.markup import escape

                if state == "start":
                    self._tasks[phase] = self._rich.add_task(escape(words) + "…", total=1)
                elif phase in self._tasks:
                    done = words + (f": {printable(more, 200)}" if isinstance(more, str) and more else "")
                    self._rich.update(self._tasks.pop(phase), description=escape(done), completed=1)
                return
            if state == "start":
                self.stream.write(f"  {words}…\n")
            else:
                self.stream.write(f"  {words}: done{took}"
                                  + (f"; {printable(more, 200)}" if isinstance(more, str) and more else "") + "\n")
            self.stream.flush()
