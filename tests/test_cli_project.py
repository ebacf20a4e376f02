"""What every command shares: the project is found from a subdirectory, the same mistake gets the same exit code,
a stale lock gets the same warning, and README's exit-code table is `--help`'s."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock.cli import EXIT_CODES, main

INTENT = """
[environment]
python = "3.11"
torch = "==2.6.0"

[[targets]]
name = "a100"
driver = "550.54.15"
gpus = ["8.0"]

[[targets]]
name = "laptop"
"""
README = Path(__file__).resolve().parents[1] / "README.md"


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


@pytest.fixture
def project(tmp_path: Path, local_index: LocalIndex) -> Path:
    root = tmp_path / "proj"
    write_intent(root, local_index, INTENT)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    return root


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    out = []
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            out += _commands(cmd, prefix + (name,))
        else:
            out.append((prefix + (name,), cmd))
    return out


def _required(cmd: click.Command) -> list[str]:
    """The least arguments that make a command's other options valid (a choice's first value)."""
    args = []
    for p in cmd.params:
        if isinstance(p, click.Option) and p.required:
            assert isinstance(p.type, click.Choice), (cmd.name, p.name)
            args += [p.opts[0], str(p.type.choices[0])]
    return args


WITH_TARGET = [(path, cmd) for path, cmd in _commands(main)
               if any("--target" in p.opts for p in cmd.params if isinstance(p, click.Option))]


def test_the_commands_with_target_are_found() -> None:
    assert {" ".join(path) for path, _ in WITH_TARGET} >= {"export", "show", "sync"}


@pytest.mark.parametrize("path,cmd", [pytest.param(path, cmd, id=" ".join(path)) for path, cmd in WITH_TARGET])
def test_every_command_with_target_says_unknown_target_with_exit_2(project: Path, path: tuple[str, ...],
                                                                   cmd: click.Command) -> None:
    """An unknown --target is bad input (2) in every command that takes one, naming the targets there are."""
    code, out = _run(*path, "-p", str(project), "--target", "nope", *_required(cmd))
    assert code == 2, out
    assert "has no target 'nope' (it has: a100, laptop) — pass one of those to --target" in out
    assert "Traceback" not in out


def test_commands_find_the_project_from_a_subdirectory(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    code, out = _run("resolve", "--dry-run", "--json")
    assert code == 0 and [t["name"] for t in json.loads(out)["targets"]] == ["a100", "laptop"]
    code, out = _run("resolve")
    assert (code, out.strip()) == (0, "../../triton-env.lock is up to date (use --upgrade to re-resolve)")
    code, out = _run("show", "--target", "laptop")
    assert code == 0 and out.startswith("target laptop: torch 2.6.0 (cpu)")
    code, out = _run("export", "--format", "requirements", "--target", "a100")
    assert code == 0 and "torch @ " in out
    code, out = _run("doctor", "--json")
    assert "lock:  ../../triton-env.lock, target laptop" in json.loads(out)["summary"][2]
    code, out = _run("sync", "--dry-run", "--target", "laptop")
    assert code == 0 and out.startswith("plan for target laptop")
    assert not (sub / ".venv").exists() and not (project / ".venv").exists()
    # init writes where it is asked to, never into a parent project — and says that one is there
    code, out = _run("init", "--no-index-check")
    assert code == 0 and (sub / "triton-env.toml").is_file()
    assert f"note: {project} holds another project; commands run here and below now use this new one" in out


def test_outside_any_project_the_error_names_this_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = _run("show")
    assert (code, out.strip()) == (2, "error: triton-env.lock: no such file — and there is no triton-env.toml beside "
                                      "it either: run `tritonlock init` (it writes triton-env.toml for this machine), "
                                      "then `tritonlock resolve`")


def test_a_stale_lock_warns_in_show_export_and_verify(project: Path) -> None:
    intent = project / "triton-env.toml"
    intent.write_text(intent.read_text().replace('torch = "==2.6.0"', 'torch = "==2.7.1"'))
    why = f"{project / 'triton-env.lock'} is stale ({intent} changed since the lock was written)"
    for args, doing in ((("show",), "showing"), (("export", "--format", "requirements", "--target", "a100"),
                                                  "exporting")):
        r = CliRunner().invoke(main, [*args, "-p", str(project)])
        assert r.exit_code == 0, r.output
        assert f"warning: {why}; {doing} it as it is — run `tritonlock resolve` to update it" in r.output
    # a fresh lock says nothing
    intent.write_text(intent.read_text().replace('torch = "==2.7.1"', 'torch = "==2.6.0"'))
    r = CliRunner().invoke(main, ["show", "-p", str(project)])
    assert r.exit_code == 0 and "is stale" not in r.output


def test_readme_exit_codes_are_the_help_text() -> None:
    """The list in README.md and `tritonlock --help` say the same words for every code (130 too)."""
    helped = dict(re.findall(r"^  (\d+)  (.+)$", EXIT_CODES.replace("\n     ", " "), re.M))
    section = README.read_text(encoding="utf-8").split("## Exit codes", 1)[1].strip().split("\n\n", 1)[0]
    listed = re.findall(r"^\* `(\d+)` (.+?)(?=^\* |\Z)", section.strip() + "\n", re.M | re.S)
    table = {code: " ".join(text.split()).replace("`", "") for code, text in listed}
    assert table == helped
    r = CliRunner().invoke(main, ["--help"])
    shown = [line.strip() for line in r.output.split("Exit codes:", 1)[1].strip().splitlines()]
    assert shown == [line.strip() for line in EXIT_CODES.split("Exit codes:", 1)[1].strip().splitlines()]


def test_a_path_that_is_not_there_is_bad_input_everywhere(project: Path, tmp_path: Path) -> None:
    """Exit 2 with one line naming the path, never a traceback — whichever command is given it."""
    nowhere = tmp_path / "nowhere"
    cases = [
        (("verify", "-p", str(project), "--python", str(nowhere / "python")),
         f"{nowhere / 'python'}: no such interpreter — pass --python PATH to an existing interpreter"),
        (("verify", "-p", str(project)),
         f"{project / '.venv' / 'bin' / 'python'}: no such interpreter — create the venv with `tritonlock sync` "
         "first, or pass --venv DIR or --python PATH"),
        (("doctor", "-p", str(project), "--python", str(nowhere / "python")), f"{nowhere / 'python'}: no such "
         "interpreter"),
        (("host", "--save", str(project / "triton-env.toml" / "host.toml")), f"{project / 'triton-env.toml' / 'host.toml'}"
         ": cannot write it (Not a directory) — check that its directory exists and that you may write there"),
        (("export", "-p", str(project), "--format", "pylock", "--target", "a100", "-o", str(nowhere / "pylock.toml")),
         f"export --format pylock: {nowhere} does not exist (for {nowhere / 'pylock.toml'}) — create it first or fix "
         "the path; nothing was written"),
        (("init", "-p", str(project)), f"{project / 'triton-env.toml'} already exists — edit it, or pass --force"),
        (("show", "-p", str(nowhere)), f"{nowhere / 'triton-env.lock'}: no such file"),
        (("resolve", "-p", str(nowhere)), f"{nowhere / 'triton-env.toml'}: no such file"),
        (("report", "merge", str(nowhere)), f"{nowhere}: no such directory"),
        (("export", "-p", str(project), "--format", "slurm", "--time", "soon"), "--time 'soon': expected Slurm's"),
        (("export", "-p", str(project), "--format", "k8s", "--image", "i", "--toleration", "gpu"),
         "--toleration 'gpu': expected"),
        (("export", "-p", str(project), "--format", "k8s"), "--format k8s needs --image"),
        (("export", "-p", str(project), "--format", "slurm", "--target", "nope"), f"{project / 'triton-env.lock'} has "
         "no target 'nope' (it has: a100, laptop) — pass one of those to --target"),
    ]
    for args, words in cases:
        code, out = _run(*args)
        assert code == 2 and out.startswith(f"error: {words}") and "Traceback" not in out, (args, out)


def test_a_reader_that_stops_early_is_not_an_error(project: Path) -> None:
    """`tritonlock show | head -1`: the pipe closes under show; it stops quietly (no 'error:' line, no traceback)."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "tritonlock", "show", "-p", str(project)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # what `head -1` does after its line: here before the first one, so the pipe surely breaks
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) in (0, 141) and "error" not in err.lower() and "Traceback" not in err, err
