"""`tritonlock run -- CMD`: the venv checked against the lock (and synced, saying so, where it does not match), then
CMD in its place — its exit code, its signals, its stdout its own; a failure before it starts is tritonlock's, and
says so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import populate, write_intent
from pkgindex import LocalIndex
import tritonlock
from tritonlock.cli import main

SOURCE = str(Path(tritonlock.__file__).resolve().parents[1])

INTENT = """
[environment]
python = "3.11"
torch = "==2.6.0"
cuda = "cpu"
packages = ["einops"]
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("run-index"))
    populate(idx)
    idx.add("simple", "beta", "1.0")
    idx.start()
    yield idx
    idx.stop()


def _tl(proj: Path, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    """The console script in its own process, in the project's directory, as a user runs it."""
    # (the tritonlock the test process imports: the no-op check keys the venv by the code's own files, so a sync done
    # in-process and a `run` in a process of its own must be the same tree — a clone's tritonlock/, not the copy that
    # `pip install .` put in site-packages)
    return subprocess.run([sys.executable, "-m", "tritonlock", *args], cwd=proj, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": SOURCE}, **kw)  # type: ignore[call-overload]


def _project(tmp_path: Path, idx: LocalIndex, sync: bool = True) -> Path:
    proj = tmp_path / "proj"
    write_intent(proj, idx, INTENT)
    assert CliRunner().invoke(main, ["resolve", "-p", str(proj)]).exit_code == 0
    if sync:
        assert CliRunner().invoke(main, ["sync", "-p", str(proj), "--no-verify"]).exit_code == 0
    return proj


PRINT_ENV = ("import os, sys; print(sys.prefix); print(os.environ['VIRTUAL_ENV']); "
             "print(os.environ['PATH'].split(os.pathsep)[0]); import einops; print(einops.__version__)")


def test_run_in_a_matching_venv_is_the_command_and_nothing_else(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    venv = proj / ".venv"
    r = _tl(proj, "run", "--", "python", "-c", PRINT_ENV)
    assert r.returncode == 0, r
    assert r.stdout.splitlines() == [str(venv), str(venv), str(venv / "bin"), "0.8.0"]
    assert r.stderr == ""  # nothing of tritonlock's own around the command's output
    r = _tl(proj, "run", "python", "-c", "raise SystemExit(7)")  # without `--`, and its exit code passed through
    assert r.returncode == 7 and r.stderr == "", r


def test_run_syncs_an_out_of_date_venv_first_saying_so_on_stderr(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    assert CliRunner().invoke(main, ["add", "-p", str(proj), "--no-sync", "beta"]).exit_code == 0
    r = _tl(proj, "run", "--", "python", "-c", PRINT_ENV + "; import beta, sys; print(beta.__version__); sys.exit(3)")
    assert r.returncode == 3, r
    venv = proj / ".venv"  # the command's own output alone on stdout, in the venv as in the fast path
    assert r.stdout.splitlines() == [str(venv), str(venv), str(venv / "bin"), "0.8.0", "1.0"]
    assert "run: syncing .venv to the lock first" in r.stderr and "+ beta 1.0" in r.stderr
    assert ".venv now matches target host: 1 installed" in r.stderr
    # the next run finds it matching and says nothing
    r = _tl(proj, "run", "--", "python", "-c", "import beta")
    assert r.returncode == 0 and r.stderr == "", r


def test_run_locks_a_stale_lock_first_and_locked_refuses_it(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    intent = proj / "triton-env.toml"
    intent.write_text(intent.read_text().replace('["einops"]', '["einops", "beta"]'))
    before = (proj / "triton-env.lock").read_bytes()
    r = _tl(proj, "run", "--locked", "--", "python", "-c", "open('ran', 'w')")
    assert r.returncode == 2 and r.stderr.rstrip().endswith("(the command was not run)"), r
    assert "is stale (triton-env.toml changed since the lock was written)" in r.stderr
    assert not (proj / "ran").exists() and (proj / "triton-env.lock").read_bytes() == before
    r = _tl(proj, "run", "--", "python", "-c", "import beta; print('ok')")
    assert r.returncode == 0 and r.stdout == "ok\n", r
    assert "locking first (as `tritonlock resolve`)" in r.stderr and "wrote triton-env.lock" in r.stderr


def test_no_sync_refuses_an_out_of_date_venv_before_the_command_starts(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    assert CliRunner().invoke(main, ["add", "-p", str(proj), "--no-sync", "beta"]).exit_code == 0
    r = _tl(proj, "run", "--no-sync", "--", "python", "-c", "open('ran', 'w')")
    assert r.returncode == 2 and not (proj / "ran").exists(), r
    assert "does not match target host" in r.stderr and "1 to install" in r.stderr
    assert r.stderr.rstrip().endswith("(the command was not run)") and r.stdout == ""
    # a venv that matches (its stamp gone: the full check decides) runs without a sync
    assert CliRunner().invoke(main, ["sync", "-p", str(proj), "--no-verify"]).exit_code == 0
    (proj / ".venv" / ".tritonlock-synced.json").unlink()
    r = _tl(proj, "run", "--no-sync", "--", "python", "-c", "open('ran', 'w')")
    assert r.returncode == 0 and (proj / "ran").exists(), r


@pytest.mark.parametrize("args,code,words", [
    (["run", "--", "no-such-command-here"], 2, "'no-such-command-here': no such command in"),
    (["run"], 2, "name the command to run"),
])
def test_a_failure_before_the_command_starts_says_so(tmp_path: Path, index: LocalIndex, args: list[str], code: int,
                                                      words: str) -> None:
    proj = _project(tmp_path, index)
    r = _tl(proj, *args)
    assert r.returncode == code and words in r.stderr and "Traceback" not in r.stderr, r
    assert r.stderr.rstrip().endswith("the command was not run)") or "the command was not run" in r.stderr


def test_run_outside_any_project_says_what_to_do(tmp_path: Path) -> None:
    r = _tl(tmp_path, "run", "--", "python", "-c", "print(1)")
    assert r.returncode == 2 and "run `tritonlock init`" in r.stderr and "(the command was not run)" in r.stderr, r
    assert r.stdout == ""


def test_signals_reach_the_command_and_its_death_by_one_is_its_own(tmp_path: Path, index: LocalIndex) -> None:
    """The command takes tritonlock's place (exec): a SIGTERM sent to the process `tritonlock run` started is the
    command's to handle; one it does not handle ends it as a signal does."""
    proj = _project(tmp_path, index)
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *a: sys.exit(42))\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)\n")
    for handled, want in ((True, 42), (False, -signal.SIGTERM)):
        proc = subprocess.Popen([sys.executable, "-m", "tritonlock", "run", "--", "python", "-c",
                                 code if handled else code.replace("signal.signal(", "(")],
                                cwd=proj, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": SOURCE})
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"  # the command runs: now the signal
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == want
        proc.stdout.close()
        assert proc.stderr is not None and proc.stderr.read() == ""
        proc.stderr.close()
