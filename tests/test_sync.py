"""sync's pure parts (plan, target choice) and its Ctrl-C shield, without an index."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tritonlock.errors import NoFittingTargetError
from tritonlock.models import Gpu, HostProfile, Lock, LockedPackage, LockedTarget, Selection, TargetSpec, Wheel
from tritonlock.environment.sync import pick_target, plan, target_fit


def _pkg(name: str, version: str) -> LockedPackage:
    f = f"{name}-{version}-py3-none-any.whl"
    return LockedPackage(name=name, version=version, index="http://i/simple",
                         wheels=(Wheel(name=f, url=f"http://i/{f}", sha256="0" * 64),))


def _target(name: str, backend: str, *, driver: str | None, floor: str | None = None,
            archs: tuple[str, ...] = (), gpus: tuple[str, ...] = ()) -> LockedTarget:
    spec = TargetSpec(name=name, os="linux", arch="x86_64", glibc="2.31", python="3.12", driver=driver, gpus=gpus)
    sel = Selection(target=spec, ok=True, python="3.12", torch="2.6.0", backend=backend, driver_floor=floor,
                    archs=archs)
    return LockedTarget(selection=sel, packages=(_pkg("torch", f"2.6.0+{backend}"), _pkg("filelock", "3.16.1")))


def _host(driver: str | None = None, ccs: tuple[str, ...] = ()) -> HostProfile:
    return HostProfile(os="linux", arch="x86_64", python="3.12.3", glibc="2.35", driver=driver,
                       gpus=tuple(Gpu(index=i, name="GPU", cc=c) for i, c in enumerate(ccs)))


LOCK = Lock(lock_version="1.0", created_by="t", intent_hash="h", matrix_version="m", default_index="d", targets=(
    _target("cpu", "cpu", driver=None),
    _target("a100", "cu126", driver="550.54.15", floor="525.60.13", archs=("sm_80", "sm_90"), gpus=("8.0",)),
    _target("h100", "cu126", driver="550.54.15", floor="525.60.13", archs=("sm_80", "sm_90"), gpus=("9.0",)),
))


def test_plan_installs_upgrades_removes_and_keeps() -> None:
    t = LOCK.targets[0]
    p = plan(t, {"filelock": "3.0.0", "stray": "1.0", "pip": "24.0"})
    assert [(s.name, s.action) for s in p.steps] == [("filelock", "upgrade"), ("torch", "install"),
                                                      ("stray", "remove")]  # pip is left alone
    assert plan(t, {"filelock": "3.16.1", "torch": "2.6.0+cpu"}).noop


def test_plan_accepts_the_default_index_build_of_the_locked_variant() -> None:
    t = LOCK.targets[1]
    same = plan(t, {}, {"torch": "2.6.0", "filelock": "3.16.1"}, equivalent_backend="cu126")
    assert same.noop and "the default index's 2.6.0 is the cu126 build" in same.steps[1].note
    other = plan(t, {}, {"torch": "2.6.0", "filelock": "3.16.1"}, equivalent_backend="cu124")
    assert [s.action for s in other.steps] == ["keep", "install"]


def test_pick_target_prefers_the_exact_gpus_and_explains_misses() -> None:
    assert pick_target(LOCK, _host("560.35.03", ("9.0",))).name == "h100"
    assert pick_target(LOCK, _host("560.35.03", ("8.6",))).name == "a100"  # sm_80 runs on 8.6
    assert pick_target(LOCK, _host()).name == "cpu"
    only_gpu = Lock(**{**{f: getattr(LOCK, f) for f in LOCK.__slots__}, "targets": LOCK.targets[1:]})  # type: ignore[arg-type]
    with pytest.raises(NoFittingTargetError) as ei:
        pick_target(only_gpu, _host("470.82.01", ("8.0",)))
    msg = str(ei.value)
    assert "a100: cu126 needs driver >= 525.60.13; this host has 470.82.01" in msg
    assert "add a target for this machine" in msg


def test_pick_target_never_takes_a_target_whose_glibc_floor_is_above_the_hosts() -> None:
    """The best-scoring target (GPU, exact GPUs) is passed over when this host's glibc is older than its floor."""
    from dataclasses import replace

    new_glibc = replace(LOCK.targets[2], selection=replace(
        LOCK.targets[2].selection, target=replace(LOCK.targets[2].selection.target, glibc="2.39")))
    lock = replace(LOCK, targets=(LOCK.targets[0], LOCK.targets[1], new_glibc))
    host = _host("560.35.03", ("9.0",))  # glibc 2.35
    assert pick_target(lock, host).name == "a100"
    assert pick_target(lock, replace(host, glibc="2.39")).name == "h100"
    with pytest.raises(NoFittingTargetError) as ei:
        pick_target(replace(lock, targets=(new_glibc,)), host)
    assert "h100: it needs glibc >= 2.39; this host has 2.35" in str(ei.value)


def test_ctrl_c_during_the_install_lets_it_finish(tmp_path: Path) -> None:
    """A terminal Ctrl-C reaches the whole foreground group; the installer must still finish. The "installer" says
    it started (a marker) and finishes only when told to (another marker), once the Ctrl-C was seen: no guessed time."""
    started, go, marker = tmp_path / "started", tmp_path / "go", tmp_path / "installed"
    script = tmp_path / "drive.py"
    installer = (f"import os, time\nopen({str(started)!r}, 'w').close()\n"
                 f"while not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
                 f"open({str(marker)!r}, 'w').write('ok')\n")
    script.write_text(textwrap.dedent(f"""
        import sys
        from tritonlock._subprocess import run_shielded
        child = [sys.executable, "-c", {installer!r}]
        rc, _, stopped = run_shielded(child, on_interrupt=lambda m: print(m, flush=True))
        print("rc", rc, "interrupted", stopped, flush=True)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            start_new_session=True, env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1])))
    while not started.exists():  # the installer runs: the state the Ctrl-C must find
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    assert proc.stdout is not None
    assert "letting the install finish" in proc.stdout.readline()  # the Ctrl-C was seen, the installer still runs
    assert not marker.exists()
    go.touch()
    out, _ = proc.communicate(timeout=120)
    assert "rc 0 interrupted True" in out
    assert marker.read_text() == "ok"


def test_a_target_that_does_not_fit_names_every_blocker() -> None:
    """"No target fits" named one blocker per target: fixing it only revealed the next."""
    from tritonlock.models import Gpu, HostProfile, LockedTarget, Selection, TargetSpec
    from tritonlock.environment.sync import target_fit

    spec = TargetSpec(name="a", os="linux", arch="x86_64", glibc="2.35", driver="580.65.06", gpus=("9.0",))
    sel = Selection(target=spec, ok=True, python="3.12", torch="2.11.0", backend="cu130", index="https://i/cu130",
                    driver_floor="580.65.06", archs=("sm_90",))
    host = HostProfile(os="linux", arch="x86_64", python="3.11.7", glibc="2.31", driver="535.104.05",
                       gpus=(Gpu(index=0, name="NVIDIA A100", cc="8.0"),))
    why = target_fit(LockedTarget(selection=sel), host, "3.11")
    assert why == ("it is for Python 3.12; this environment has 3.11; it needs glibc >= 2.35; this host has 2.31; "
                   "cu130 needs driver >= 580.65.06; this host has 535.104.05; its build (cu130) has no code for "
                   "NVIDIA A100 (compute capability 8.0)")


def test_a_second_ctrl_c_while_the_first_is_being_said_still_stops_the_installer(tmp_path: Path) -> None:
    """The second Ctrl-C can land while the first one's line is being printed: it escaped without stopping the
    installer, which then went on changing the venv after sync had reported its state (seen once the Ctrl-C tests
    stopped sleeping). Here the callback that says the first one raises as the second would."""
    started, pid_file = tmp_path / "started", tmp_path / "pid"
    script = tmp_path / "drive.py"
    installer = (f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                 f"open({str(started)!r}, 'w').close()\ntime.sleep(100000)\n")
    script.write_text(textwrap.dedent(f"""
        import sys
        from tritonlock._subprocess import run_shielded
        def said(message):
            print(message, flush=True)
            raise KeyboardInterrupt  # the second Ctrl-C, arriving while the first is said
        try:
            run_shielded([sys.executable, "-c", {installer!r}], on_interrupt=said)
        except KeyboardInterrupt:
            print("stopped", flush=True)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            start_new_session=True, env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1])))
    while not started.exists():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert "letting the install finish" in out and "stopped" in out, out
    pid = int(pid_file.read_text())
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z", "X"), f"the installer {pid} still runs ({state})"


def test_a_host_whose_driver_equals_a_targets_floor_is_picked() -> None:
    """A driver at exactly a build's floor runs it (the floor is the least driver that does): sync picks that GPU
    target, not the CPU one; one patch release below, the GPU target does not fit and says why."""
    floor = LOCK.targets[2].selection.driver_floor
    assert floor == "525.60.13"
    assert pick_target(LOCK, _host(floor, ("9.0",))).name == "h100"
    below = "525.60.12"
    assert pick_target(LOCK, _host(below, ("9.0",))).name == "cpu"
    assert target_fit(LOCK.targets[2], _host(below, ("9.0",)), "3.12") == f"cu126 needs driver >= {floor}; this " \
        f"host has {below}"
