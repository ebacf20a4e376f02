"""Feedback on long work: per-target progress (a spinner on a terminal, plain lines elsewhere, nothing with --json),
and colour only on a terminal that NO_COLOR does not turn off."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock import _term
from tritonlock.cli import main

INTENT = ('[environment]\npython = "3.11"\ntorch = "==2.6.0"\n'
          '[[targets]]\nname = "a100"\ndriver = "550.54.15"\ngpus = ["8.0"]\n[[targets]]\nname = "laptop"\n')
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def test_resolve_says_per_target_what_it_does_in_plain_lines_when_not_a_terminal(tmp_path: Path,
                                                                                local_index: LocalIndex) -> None:
    write_intent(tmp_path, local_index, INTENT)
    r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path)])
    assert r.exit_code == 0, r.output
    lines = r.stderr.splitlines()
    assert "target a100: locking torch 2.6.0 (cu124) with uv…" in lines
    assert "target laptop: locking torch 2.6.0 (cpu) with uv…" in lines
    done = [line for line in lines if re.fullmatch(r"target (a100|laptop): \d+ packages locked \(\d+\.\d s\)", line)]
    assert len(done) == 2 and not ANSI_COLOUR.search(r.output)
    assert "wrote " in r.stdout and "locking" not in r.stdout  # the result on stdout, the feedback on stderr
    r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path), "--upgrade", "--json"])
    assert r.exit_code == 0 and r.stderr == ""  # --json: the document and nothing else


def _on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """Run the CLI with stdout and stderr on a pseudo-terminal; what the terminal showed."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tritonlock", *args], stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(leader)
    assert proc.returncode == 0, b"".join(chunks).decode(errors="replace")
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("no_color", [False, True])
def test_on_a_terminal_a_spinner_per_target_and_colour_unless_no_color(tmp_path: Path, local_index: LocalIndex,
                                                                       no_color: bool) -> None:
    write_intent(tmp_path, local_index, INTENT)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"COLUMNS": "120", "TERM": "xterm"}
    if no_color:
        env["NO_COLOR"] = "1"
    shown = _on_a_terminal(["resolve", "-p", str(tmp_path), "--upgrade"], env)
    assert "target a100: locking torch 2.6.0 (cu124) with uv" in shown  # rich's live line
    assert re.search(r"target a100: \d+ packages locked", shown) and "✓" in shown
    assert "\r" in shown  # redrawn in place, not one line per update
    assert bool(ANSI_COLOUR.search(shown)) is not no_color


def test_highlight_colours_verdicts_only_on_a_colour_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    report = "checks\n  ok    torch imports: fine\n  FAIL  triton imports: broken\nRESULT: FAILED (1 problem)"
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert _term.highlight(report) == report  # a pipe: plain
    monkeypatch.setattr(sys, "stdout", Tty())
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = _term.highlight(report)
    assert ANSI_COLOUR.sub("", coloured) == report and "\x1b[31" in coloured and "\x1b[32m" in coloured
    monkeypatch.setenv("NO_COLOR", "1")
    assert _term.highlight(report) == report


# ---------------------------------------------------------------- text from a lock never drives the terminal

# What a hostile lock (its digests recomputed) carries in its free-text fields: a screen clear, a window title, text
# made invisible, a carriage return that overwrites the line, a bell, a hyperlink.
EVIL = "\x1b[2J\x1b]0;owned\x07\x1b[8mhidden\x1b[0m\roverwrite\x07\x1b]8;;http://x.example/\x1b\\link"
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")


def _hostile_lock(root: Path, idx: LocalIndex, *, stale: bool) -> None:
    import dataclasses

    from tritonlock.lock import lockfile

    write_intent(root, idx, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\npackages = ["einops"]\n'
                            '[[targets]]\nname = "laptop"\n')
    r = CliRunner().invoke(main, ["resolve", "-p", str(root)])
    assert r.exit_code == 0, r.output
    lock = lockfile.read_lock(root / "triton-env.lock")
    t = lock.targets[0]
    sel = dataclasses.replace(t.selection, reasons=(*t.selection.reasons, f"because {EVIL}"),
                              warnings=(f"careful {EVIL}",),
                              direct=tuple(dataclasses.replace(d, held_by=f"held {EVIL}") for d in t.selection.direct))
    pkgs = tuple(dataclasses.replace(p, note=f"note {EVIL}") for p in t.packages)
    lock = dataclasses.replace(lock, targets=(dataclasses.replace(t, selection=sel, packages=pkgs),))
    if stale:
        lock = dataclasses.replace(lock, matrix_version=f"2020.1 {EVIL}", created_by=f"tritonlock {EVIL}")
    (root / "triton-env.lock").write_text(lockfile.dumps(lock), encoding="utf-8")  # digests as dumps computes them
    assert lockfile.read_lock(root / "triton-env.lock").targets[0].selection.warnings == (f"careful {EVIL}",)


@pytest.mark.parametrize("stale", [False, True])
def test_no_command_prints_a_locks_control_characters(tmp_path: Path, local_index: LocalIndex, stale: bool) -> None:
    """show, sync --dry-run, why, check, doctor and the exports, on a lock whose text fields hold terminal escapes:
    each field is shown, its control characters as visible escapes, never raw."""
    _hostile_lock(tmp_path, local_index, stale=stale)
    p = ["-p", str(tmp_path)]
    for args in (["show"], ["show", "--json"], ["sync", "--dry-run"], ["sync", "--dry-run", "--json"], ["why"],
                 ["check"], ["check", "--json"], ["doctor"], ["export", "--format", "requirements"],
                 ["export", "--format", "pylock"], ["export", "--format", "dockerfile"], ["export", "--format", "uv"],
                 ["export", "--format", "pixi"], ["export", "--format", "slurm"], ["verify"]):
        r = CliRunner().invoke(main, [*args, *p])
        assert r.exception is None or isinstance(r.exception, SystemExit), (args, repr(r.exception))
        shown = r.stdout + r.stderr
        assert not RAW.search(shown), (args, shown[:2000])
        if args == ["show"]:
            assert "careful \\x1b[2J\\x1b]0;owned\\x07" in shown and "\\roverwrite" in shown, shown


def test_on_a_colour_terminal_only_tritonlocks_own_colours_pass(tmp_path: Path, local_index: LocalIndex) -> None:
    _hostile_lock(tmp_path, local_index, stale=False)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"COLUMNS": "120", "TERM": "xterm"}
    shown = _on_a_terminal(["show", "-p", str(tmp_path)], env)
    assert ANSI_COLOUR.search(shown)  # tritonlock's own colours: still there
    assert "\x1b[2J" not in shown and "\x1b]" not in shown and "\x1b[8m" not in shown and "\x07" not in shown
    assert "\\x1b[2J" in shown  # shown, as text


def test_clean_keeps_text_and_its_lines() -> None:
    assert _term.clean("a — b\n\tc ✓") == "a — b\n\tc ✓"
    assert _term.clean("x\x1b[31my\x1b[0m", styles=True) == "x\x1b[31my\x1b[0m"
    assert _term.clean("x\x1b[31my\x1b[0m") == "x\\x1b[31my\\x1b[0m"
    assert _term.clean("\x1b[2J\x1b[1m", styles=True) == "\\x1b[2J\x1b[1m"
