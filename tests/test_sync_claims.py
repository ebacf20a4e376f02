"""Every claim `sync` makes about a venv is true, checked against the venv itself: damage outranks the no-op stamp
(a torn RECORD is damage too), `--reinstall` reinstalls, `--locked` sees host files, Ctrl-C stops with 130 and
leaves nothing half-built, and the user's own uv settings never reach the lock or the install."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import populate, tree, write_intent
from pkgindex import LocalIndex
from tritonlock.environment import _venv
from tritonlock.cli import main
from tritonlock.environment.sync import siblings, venv_python

INTENT = """
[environment]
python = "{python}"
torch = "==2.6.0"
cuda = "cpu"
packages = [{extra}]
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    """An index of its own: the Ctrl-C tests hold its downloads (`gate`)."""
    idx = LocalIndex(tmp_path_factory.mktemp("claims-index"))
    populate(idx)
    idx.start()
    yield idx
    idx.stop()


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), env=env)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.output


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The console script, in its own process, as a user runs it."""
    return subprocess.run([sys.executable, "-c", "from tritonlock._entry import main; main()", *args],
                          capture_output=True, text=True, env={**os.environ, **(env or {})})


def _project(root: Path, idx: LocalIndex, python: str = "3.11", extra: str = '"einops"') -> Path:
    write_intent(root, idx, INTENT.format(python=python, extra=extra))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    return root


def _site(venv: Path) -> Path:
    return _venv.site_dirs(venv)[0]


def _imports(venv: Path, code: str = "import torch, einops, filelock") -> int:
    return subprocess.run([str(venv_python(venv)), "-c", code], capture_output=True, text=True).returncode


def _doctor_damage(proj: Path) -> list[str]:
    r = CliRunner().invoke(main, ["doctor", "-p", str(proj), "--json"])
    return [e for f in json.loads(r.output)["findings"] if f["id"] == "venv-damaged" for e in f["evidence"]]


# ---------------------------------------------------------------- a torn RECORD is damage


def test_a_torn_record_is_damage_for_doctor_and_sync_and_is_repaired(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    site = _site(venv)
    # killed while the installer wrote the RECORD: its last line is cut in the middle of a hash
    record = site / "einops-0.8.0.dist-info" / "RECORD"
    good = record.read_bytes()
    record.write_bytes(good[: good.index(b"sha256=", len(good) // 2) + 9])
    (found,) = _doctor_damage(proj)
    assert found == "einops 0.8.0: its RECORD is torn (its last line is cut short: a kill while it was written?)"
    r = _cli("sync", "-p", str(proj), "--no-verify")
    assert r.returncode == 0 and "1 repaired" in r.stdout, r
    assert "! einops 0.8.0  (damaged: its RECORD is torn (its last line is cut short" in r.stdout
    assert record.read_bytes() == good and _venv.venv_damage(venv) == [] and _doctor_damage(proj) == []
    # a garbled row (bad CSV) in the RECORD of a package that a later lock upgrades: the upgrade repairs it
    record = site / "filelock-3.16.1.dist-info" / "RECORD"
    record.write_text(record.read_text().replace(",sha256=", ',"sha256=', 1))
    assert [d.name for d in _venv.venv_damage(venv)] == ["filelock"]
    assert "line 1 is not path,hash,size" in _doctor_damage(proj)[0]
    _project(proj, index, extra='"einops", "filelock==3.12.0"')
    r = _cli("sync", "-p", str(proj), "--no-verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "~ filelock 3.16.1 -> 3.12.0  (damaged: its RECORD is torn (line 1 is not path,hash,size" in r.stdout
    assert _venv.venv_dists(venv)["filelock"] == "3.12.0" and not (site / "filelock-3.16.1.dist-info").exists()
    assert _venv.venv_damage(venv) == [] and _imports(venv) == 0
    assert "already matches" in _cli("sync", "-p", str(proj), "--no-verify").stdout


# ---------------------------------------------------------------- sync --reinstall


def test_reinstall_named_packages_or_all(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    init = _site(venv) / "einops" / "__init__.py"
    good = init.read_bytes()
    bad = b"1/0\n"
    init.write_bytes(bad + good[len(bad):])  # the same size: no check by RECORD sizes can see it
    assert _venv.venv_damage(venv) == [] and _imports(venv) != 0
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--reinstall", "EINOPS")
    assert code == 0, out
    assert "1 to reinstall, 0 to remove" in out and "! einops 0.8.0  (--reinstall)" in out and "now matches target host: 1 reinstalled" in out
    assert init.read_bytes() == good and _imports(venv) == 0
    # every locked package when none is named
    before = {p.name: p.stat().st_mtime_ns for p in _site(venv).glob("*.dist-info")}
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--reinstall")
    assert code == 0 and "now matches target host: 6 reinstalled" in out, out
    after = {p.name: p.stat().st_mtime_ns for p in _site(venv).glob("*.dist-info")}
    assert before.keys() == after.keys() and all(before[k] != after[k] for k in before)
    assert _venv.venv_damage(venv) == [] and "already matches" in _run("sync", "-p", str(proj), "--no-verify")[1]
    # bad input names what is wrong and changes nothing
    snap = tree(venv)
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--reinstall", "nope")
    assert code == 2 and "--reinstall nope: target 'host' in" in out and "does not lock it" in out, out
    code, out = _run("sync", "-p", str(proj), "--no-verify", "einops")
    assert code == 2 and "sync takes package names only with --reinstall" in out, out
    assert tree(venv) == snap
    r = CliRunner().invoke(main, ["sync", "--help"])
    assert "--reinstall" in r.output and "[PKG]..." in r.output


# ---------------------------------------------------------------- --locked and host files


HOST = '[[targets]]\nname = "box"\nos = "linux"\narch = "x86_64"\nglibc = "2.17"\n'


def _host_project(root: Path, idx: LocalIndex) -> Path:
    (root / "hosts").mkdir()
    (root / "hosts" / "box.toml").write_text(HOST)
    write_intent(root, idx, 'target-files = ["hosts/*.toml"]\n' + INTENT.format(python="3.11", extra=""))
    assert _run("resolve", "-p", str(root))[0] == 0
    assert _run("sync", "-p", str(root), "--no-verify", "--locked")[0] == 0
    return root


def test_locked_refuses_a_lock_made_stale_by_a_host_file(tmp_path: Path, index: LocalIndex) -> None:
    proj = _host_project(tmp_path, index)
    # a comment in the host file: the full path runs, finds the lock fresh, and says so
    (proj / "hosts" / "box.toml").write_text("# the build box\n" + HOST)
    r = _cli("sync", "--locked", "-p", str(proj), "--no-verify")
    assert r.returncode == 0 and "already matches" in r.stdout, r
    # an edit that changes the target: every command agrees that the lock is stale
    (proj / "hosts" / "box.toml").write_text(HOST.replace("2.17", "2.18"))
    for args in (("sync", "--locked", "--no-verify"), ("sync", "--locked", "--dry-run"),
                 ("sync", "--locked", "--no-verify", "--target", "box")):
        r = _cli(*args, "-p", str(proj))
        assert r.returncode == 2 and "is stale" in r.stderr and "--locked refuses" in r.stderr, (args, r)
        code, out = _run(*args, "-p", str(proj))
        assert code == 2 and "--locked refuses" in out, out
    assert _run("check", "-p", str(proj))[0] == 1


def test_the_no_op_fast_path_covers_sync_locked(tmp_path: Path, index: LocalIndex) -> None:
    proj = _host_project(tmp_path, index)
    code = ("import sys\nfrom tritonlock._entry import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('click', 'tritonlock.cli', 'tritonlock.environment.sync', 'tritonlock.lock.lockfile') "
            "if m in sys.modules))")
    for argv in (["sync", "--locked", "-p", str(proj), "--no-verify"], ["sync", "--no-verify", "--locked",
                                                                        f"--project={proj}"]):
        r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
        assert r.stdout.splitlines() == [f"{proj / '.venv'} already matches target box (4 packages)", "[]"], r
    # --locked without the intent: never answered early (the full path says the intent is missing)
    (proj / "triton-env.toml").rename(proj / "intent.bak")
    r = _cli("sync", "--locked", "-p", str(proj), "--no-verify")
    assert r.returncode == 2 and "--locked needs the intent" in r.stderr, r


# ---------------------------------------------------------------- Ctrl-C


def _start_sync(proj: Path, *args: str, cache: Path) -> subprocess.Popen[str]:
    # its own session and process group, as a shell's foreground job: the terminal's Ctrl-C goes to that group
    return subprocess.Popen([sys.executable, "-m", "tritonlock", "sync", "-p", str(proj), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "UV_CACHE_DIR": str(cache)})


def _wait_for_install(proc: subprocess.Popen[str], index: LocalIndex, seen: list[str]) -> None:
    """Read stderr until the install step has started, then wait until uv asks the index for a file — which the
    closed gate holds: the state a Ctrl-C "during the install" must find (no guessed time)."""
    assert proc.stderr is not None
    before = sum("/_files/" in r for r in index.requests)
    while True:
        line = proc.stderr.readline()
        assert line, f"sync ended before its install step: {seen}"
        seen.append(line)
        if line.startswith("installing "):
            break
    while sum("/_files/" in r for r in index.requests) == before:
        assert proc.poll() is None, (seen, proc.communicate())
        time.sleep(0.01)


def _ctrl_c(proc: subprocess.Popen[str]) -> None:
    os.killpg(proc.pid, signal.SIGINT)


def test_ctrl_c_while_building_beside_stops_at_once_and_removes_the_half_built_venv(
        tmp_path: Path, index: LocalIndex) -> None:
    from test_sync_safety import python312

    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    before = tree(venv)
    _project(proj, index, python="3.12")  # a rebuild beside the old venv
    index.gate = threading.Event()  # downloads wait until it opens
    try:
        proc = _start_sync(proj, "--python", python312(), cache=tmp_path / "cache")
        seen: list[str] = []
        _wait_for_install(proc, index, seen)
        assert siblings(venv)[0].exists()  # the half-built venv, beside
        served = len(index.served)
        _ctrl_c(proc)  # one Ctrl-C
        out, err = proc.communicate(timeout=300)
        # at once, not after the downloads: the gate is still shut, and not one more file was served
        assert len(index.served) == served and not index.gate.is_set()
    finally:
        index.gate.set()
        index.gate = None
    assert proc.returncode == 130, (seen, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err  # one clean line: no "press Ctrl-C again", no repeated line
    assert re.fullmatch(rf"error: interrupted \(Ctrl-C\); the venv being built beside was removed; "
                        rf"{re.escape(str(venv))} is unchanged \(checked: still Python 3\.11, the same \d+ files, "
                        r"sizes and times\)", lines[0]), lines[0]
    assert not any(p.exists() for p in siblings(venv)) and tree(venv) == before and _imports(venv) == 0


def test_ctrl_c_during_an_install_in_place_lets_it_finish_then_exits_130(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    _project(proj, index, extra='"einops", "filelock==3.12.0"')
    index.gate = threading.Event()
    try:
        proc = _start_sync(proj, cache=tmp_path / "cache")  # with verify: it must not run after a Ctrl-C
        seen: list[str] = []
        _wait_for_install(proc, index, seen)
        _ctrl_c(proc)
        assert proc.stderr is not None
        first = proc.stderr.readline()  # the Ctrl-C was seen: sync says it lets the install finish...
        assert first.startswith("interrupted: letting the install finish"), (seen, first)
        index.gate.set()  # ...and it does, once the downloads may go on
        out, err = proc.communicate(timeout=300)
    finally:
        index.gate.set()
        index.gate = None
    assert proc.returncode == 130, (seen, out, err)
    assert "RESULT" not in out  # verify did not run
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0] == (f"error: interrupted (Ctrl-C) while installing into {venv}, which was let finish: it now "
                        "matches target host (checked: every installed package's files as its RECORD lists); "
                        "nothing after the install was run")
    assert _venv.venv_dists(venv)["filelock"] == "3.12.0" and _venv.venv_damage(venv) == []
    assert "already matches" in _cli("sync", "-p", str(proj), "--no-verify").stdout
    # a second Ctrl-C stops uv at once; the message says what state the venv is in, as checked
    _project(proj, index, extra='"einops", "filelock==3.16.1"')
    index.gate = threading.Event()
    try:
        snap = tree(venv)
        proc = _start_sync(proj, "--no-verify", cache=tmp_path / "cache2")
        _wait_for_install(proc, index, [])
        _ctrl_c(proc)
        assert proc.stderr is not None
        assert proc.stderr.readline().startswith("interrupted: letting the install finish")  # the first was seen
        _ctrl_c(proc)
        out, err = proc.communicate(timeout=300)
        assert not index.gate.is_set()  # stopped with the downloads still held: at once
    finally:
        index.gate.set()
        index.gate = None
    assert proc.returncode == 130, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and re.fullmatch(
        rf"error: interrupted \(Ctrl-C\); {re.escape(str(venv))} is unchanged \(checked: the same \d+ files, sizes "
        r"and times\)", lines[0]), err
    now = tree(venv)
    assert now == snap, {k: (snap.get(k), now.get(k)) for k in set(snap) | set(now) if snap.get(k) != now.get(k)}
    assert _imports(venv) == 0, subprocess.run([str(venv_python(venv)), "-c", "import torch, einops, filelock"],
                                               capture_output=True, text=True).stderr


# ---------------------------------------------------------------- names from a venv never drive the terminal


def test_names_and_versions_from_a_venv_reach_the_terminal_escaped(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    site = _site(venv)
    evil = site / "evil\x1b]0;pwned\x07-1.0.dist-info"  # a directory name that sets the terminal's title
    evil.mkdir()
    (evil / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\x1b[2J\nVersion: 1.0\x1b[31m\n")
    (evil / "RECORD").write_text(f"{evil.name}/METADATA,,\nevil/gone.py,sha256=abc,12\n")
    odd = site / "oddver-1.0.dist-info"  # a valid name whose version clears the screen
    odd.mkdir()
    (odd / "METADATA").write_text("Metadata-Version: 2.1\nName: oddver\nVersion: 1.0\x1b[2J\n")
    (odd / "RECORD").write_text("oddver-1.0.dist-info/METADATA,,\noddver/gone.py,sha256=abc,12\n")
    outputs = []
    for args in (("sync", "--no-verify"), ("sync", "--dry-run"), ("doctor",), ("doctor", "--json")):
        r = _cli(*args, "-p", str(proj))
        outputs.append((args, r.returncode, r.stdout + r.stderr))
    for args, rc, out in outputs:
        assert "\x1b" not in out and "\x07" not in out, (args, out)
    (_, rc, out), (_, _, dry) = outputs[0], outputs[1]
    assert rc == 5 and "holds distributions whose names are not valid (" in out and "\\x1b]0;pwned\\x07" in out, out
    assert "? evil\\x1b[2j 1.0\\x1b[31m" in dry and "- oddver 1.0\\x1b[2J" in dry, dry


def test_doctors_advice_for_a_modified_file_is_what_repairs_it(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    init = _site(venv) / "einops" / "__init__.py"
    good = init.read_bytes()
    with init.open("ab") as fh:  # written in place: no folder's time changes, the RECORD stays as it was
        fh.write(b"raise SystemExit('edited')\n")
    r = CliRunner().invoke(main, ["doctor", "-p", str(proj), "--json"])
    (f,) = [f for f in json.loads(r.output)["findings"] if f["id"] == "venv-modified"]
    assert f["fix"] == ("if the change was not deliberate: `tritonlock sync --reinstall einops` installs it again "
                        "from the lock")
    r2 = _cli(*f["fix"].split("`")[1].split()[1:], "-p", str(proj), "--no-verify")
    assert r2.returncode == 0 and "now matches target host: 1 repaired" in r2.stdout, r2
    assert init.read_bytes() == good and _venv.venv_damage(venv) == [] and _imports(venv) == 0


# ---------------------------------------------------------------- files no distribution owns, edits in place


def _doctor(proj: Path) -> dict[str, dict[str, object]]:
    r = CliRunner().invoke(main, ["doctor", "-p", str(proj), "--json"])
    return {str(f["id"]): f for f in json.loads(r.output)["findings"]}


@pytest.mark.parametrize("stray", ["triton.py", "torch/cuda/__init__.py", "filelock.cpython-311-x86_64-linux-gnu.so"])
def test_a_stray_module_under_a_locked_import_name_is_damage(tmp_path: Path, index: LocalIndex, stray: str) -> None:
    """A file no locked distribution owns, sitting under a locked import name (a triton.py dropped beside triton/; a
    torch/cuda/ package that wins over the module torch/cuda.py; an extension module beside filelock/): doctor names
    the file, and sync — with or without --no-verify — removes it instead of saying the venv "already matches"."""
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    path = _site(venv) / stray
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("raise ImportError('a stray copy')\n")
    owner = stray.split("/")[0].split(".")[0]
    (d,) = [x for x in _venv.venv_damage(venv) if x.kind == "stray"]
    strayed = path.parent if stray.endswith("__init__.py") else path  # a package: its folder is the stray
    assert d.name == owner and d.strays == (str(strayed),), d
    found = _doctor(proj)
    assert "venv-stray-module" in found and str(strayed) in str(found["venv-stray-module"]["title"]), found
    assert "partial upgrade" not in json.dumps(found)
    r = _cli("sync", "-p", str(proj), "--no-verify")
    assert r.returncode == 0 and "already matches" not in r.stdout, r
    assert "now matches target host: 1 repaired" in r.stdout, r.stdout
    assert f"{strayed} is no installed distribution's file and takes the import name of {owner}'s own module" in r.stderr
    assert not strayed.exists() and _venv.venv_damage(venv) == [] and _imports(venv) == 0
    assert "venv-stray-module" not in _doctor(proj)
    assert "already matches" in _cli("sync", "-p", str(proj), "--no-verify").stdout


def test_both_forms_of_sync_agree_about_a_file_edited_in_place(tmp_path: Path, index: LocalIndex) -> None:
    """An edit that changes a file's size is damage to the full check (which plain `sync` runs); `sync --no-verify`
    answered "already matches" from folder times alone (an edit in place changes none). Now both repair it; an edit
    of the same size is seen by neither (only `--reinstall` fixes that), and both say so alike."""
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    init = _site(venv) / "einops" / "__init__.py"
    good = init.read_bytes()
    init.write_bytes(good + b"raise ImportError('edited')\n")
    r = _cli("sync", "-p", str(proj), "--no-verify")
    assert r.returncode == 0 and "already matches" not in r.stdout, r
    assert "now matches target host: 1 repaired" in r.stdout and init.read_bytes() == good, r.stdout
    bad = b"1/0\n"
    init.write_bytes(bad + good[len(bad):])  # the same size: the RECORD's sizes cannot tell
    fast = _cli("sync", "-p", str(proj), "--no-verify").stdout
    full = _run("sync", "-p", str(proj), "--dry-run")[1]  # what plain sync's full check plans
    assert "already matches" in fast and "0 to install, 0 to remove, 6 unchanged" in full, (fast, full)


def test_a_newer_build_put_in_by_hand_is_said_to_be_downgraded(tmp_path: Path, index: LocalIndex) -> None:
    """The H200 run's stray torchvision 0.28.0 over the locked 0.26.0: sync put 0.26.0 back and said "1 upgraded".
    A step to an older version is a downgrade, in the plan and in what sync says it did."""
    proj = _project(tmp_path, index, extra='"filelock==3.12.0"')
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    newer = next((index.root / "simple" / "_files").glob("filelock-3.16.1-*.whl"))
    from tritonlock._subprocess import uv_bin

    subprocess.run([uv_bin(), "pip", "install", "-q", "--python", str(venv_python(venv)), "--no-deps", "--offline",
                    str(newer)], check=True)
    assert _venv.venv_dists(venv)["filelock"] == "3.16.1"
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--dry-run")
    assert code == 0 and "0 to install, 1 to downgrade, 0 to remove" in out and "~ filelock 3.16.1 -> 3.12.0" in out
    r = _cli("sync", "-p", str(proj), "--no-verify")
    assert r.returncode == 0 and "now matches target host: 1 downgraded" in r.stdout, r.stdout + r.stderr
    assert "upgraded" not in r.stdout and _venv.venv_dists(venv)["filelock"] == "3.12.0"
