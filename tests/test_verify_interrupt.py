"""Ctrl-C (or SIGTERM) during `verify`, or during sync's verify step, ends the runner and everything it started —
the torch.compile check's process, compile workers, anything torch spawned — not ~17 s later (on a GPU node they held
the GPU); and an interrupted sync has said what state the venv is in before verify started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main

# A torch whose import starts a child process and then waits: the runner (and the torch.compile check's process,
# which imports torch too) never finishes on its own. Each importing process writes "its pid, its child's pid".
BLOCKING_TORCH = """\
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
marker = os.path.join(os.environ["TL_MARKERS"], str(os.getpid()))
with open(marker + ".tmp", "w") as fh:
    fh.write(f"{os.getpid()} {child.pid}\\n")
os.replace(marker + ".tmp", marker)
time.sleep(600)
"""


@pytest.fixture(scope="module")
def blocking_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("blocking-index"))
    idx.add("whl/cpu", "torch", "2.6.0+cpu", requires=("filelock>=3.0",), tag="py3-none-manylinux_2_17_x86_64",
            modules={"torch/__init__.py": BLOCKING_TORCH})
    idx.add("simple", "filelock", "3.16.1")
    idx.add("simple", "numpy", "1.26.4", tag="py3-none-manylinux_2_17_x86_64")
    from tritonlock.compat.matrix import load_matrix

    rel = load_matrix().torch_release("2.6.0")
    assert rel is not None and rel.triton
    idx.add("simple", "triton", rel.triton, tag="py3-none-manylinux_2_17_x86_64")
    idx.start()
    yield idx
    idx.stop()


def _synced(tmp_path: Path, idx: LocalIndex) -> Path:
    proj = tmp_path / "p"
    write_intent(proj, idx, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n')
    r = CliRunner().invoke(main, ["resolve", "-p", str(proj)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["sync", "-p", str(proj), "--no-verify"])
    assert r.exit_code == 0, r.output
    return proj


def _start(args: list[str], markers: Path) -> subprocess.Popen[str]:
    """tritonlock as a terminal runs it: the leader of its own process group, which Ctrl-C signals as a whole."""
    return subprocess.Popen([sys.executable, "-m", "tritonlock", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "TL_MARKERS": str(markers)})


def _wait_for_runner(proc: subprocess.Popen[str], markers: Path) -> None:
    """Until the runner has imported torch (its marker is there): the state the signal must find."""
    while not any(markers.iterdir()):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")  # a zombie is dead (only not yet reaped by its new parent)


def _started(markers: Path) -> list[int]:
    return [int(x) for f in markers.iterdir() for x in f.read_text().split()]


def _all_gone(pids: list[int]) -> None:
    """Every process the runner started is ended (a kill is delivered at once; this waits only for it to land)."""
    deadline = time.monotonic() + 120  # not a timing assertion: only how long a dead process may take to show it
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if _alive(p)], [p for p in pids if _alive(p)]


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 128 + signal.SIGTERM)])
def test_a_signal_during_verify_ends_the_runner_and_all_it_started(tmp_path: Path, blocking_index: LocalIndex,
                                                                   sig: int, code: int) -> None:
    proj = _synced(tmp_path, blocking_index)
    markers = tmp_path / "markers"
    markers.mkdir()
    proc = _start(["verify", "-p", str(proj)], markers)
    _wait_for_runner(proc, markers)
    pids = _started(markers)
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)  # what the terminal does on Ctrl-C: our group only (the runner has a session)
    else:
        os.kill(proc.pid, sig)  # a scheduler's kill, or `timeout`: tritonlock alone
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, (out, err)
    assert "Traceback" not in err
    _all_gone(pids + _started(markers))


@pytest.mark.slow
def test_ctrl_c_during_syncs_verify_says_the_venv_state_first(tmp_path: Path, blocking_index: LocalIndex) -> None:
    proj = _synced(tmp_path, blocking_index)
    markers = tmp_path / "markers"
    markers.mkdir()
    proc = _start(["sync", "-p", str(proj)], markers)
    _wait_for_runner(proc, markers)
    pids = _started(markers)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert f"{proj / '.venv'} already matches target host" in out  # said before verify started
    assert (f"error: interrupted (Ctrl-C) during verify; {proj / '.venv'} matches target host (checked before verify "
            "started); verify did not finish and its runner was stopped") in err, err
    _all_gone(pids + _started(markers))
