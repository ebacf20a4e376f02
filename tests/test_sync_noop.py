"""A plain `sync` that costs nothing when nothing changed: a venv that matches its lock (the no-op check: every file's
size and time, the folders, the inputs) and passed verify exactly as it is now is not verified again — sync says
when it was. Anything verify depends on that changed (a file, the lock, the driver, a variable torch reads) and
verify runs; what the no-op check finds (an edit, a missing file, a stray module) is still repaired."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import populate, real_stack_index, tree, write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.environment import _noop
from tritonlock.environment._venv import site_dirs, venv_python

INTENT = """
[environment]
python = "3.11"
torch = "==2.6.0"
cuda = "cpu"
packages = ["einops"]
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("noop-index"))
    populate(idx)
    idx.start()
    yield idx
    idx.stop()


def _tl(proj: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The console script in its own process (its fast path included), as a user runs it."""
    return subprocess.run([sys.executable, "-c", "from tritonlock._entry import main; main()", *args, "-p",
                           str(proj)], capture_output=True, text=True, env={**os.environ, **(env or {})})


def _synced(tmp_path: Path, idx: LocalIndex) -> Path:
    proj = tmp_path / "proj"
    write_intent(proj, idx, INTENT)
    assert CliRunner().invoke(main, ["resolve", "-p", str(proj)]).exit_code == 0
    r = _tl(proj, "sync", "--no-verify")
    assert r.returncode == 0, r
    return proj


def _passed(proj: Path, when: float = 1_800_000_000.0) -> None:
    """What sync records after a verify that passed (tritonlock.cli.cmd_env._record_verify): the fake torch of these
    tests cannot pass a real verify (tests/test_sync_noop.py's last test runs a real one)."""
    venv = proj / ".venv"
    stamp = _noop.matching_stamp(proj, venv, target=None, python=None, system_site_packages=None)
    assert stamp is not None
    _noop.write_verified(venv, ok=True, stamp=stamp, when=when)


WHEN = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(1_800_000_000.0))


def _verified_line(proj: Path) -> str:
    return (f"{proj / '.venv'} matches target host (6 packages); verified at {WHEN} with nothing changed since "
            "(`tritonlock sync --verify` verifies again)\n")


def test_a_verified_venv_is_not_verified_again_until_something_changes(tmp_path: Path, index: LocalIndex) -> None:
    proj = _synced(tmp_path, index)
    venv = proj / ".venv"
    # no record yet: plain sync verifies (this fake torch fails it: verify ran) and records nothing
    r = _tl(proj, "sync")
    assert r.returncode == 1 and "RESULT" in r.stdout and not (venv / _noop.VERIFIED).exists(), r
    _passed(proj)
    before = tree(venv)
    for _ in range(2):
        r = _tl(proj, "sync")
        assert r.returncode == 0 and r.stdout == _verified_line(proj) and r.stderr == "", r
    assert tree(venv) == before  # a no-op writes nothing, its markers included
    # the same answer from the CLI's own path (no console-script fast path), and `--no-verify` is unchanged
    r2 = CliRunner().invoke(main, ["sync", "-p", str(proj)])
    assert r2.exit_code == 0 and r2.output == _verified_line(proj)
    assert "already matches target host (6 packages)" in _tl(proj, "sync", "--no-verify").stdout
    # --verify runs it anyway; its failure drops the record
    r = _tl(proj, "sync", "--verify")
    assert r.returncode == 1 and "RESULT" in r.stdout and not (venv / _noop.VERIFIED).exists(), r


@pytest.mark.parametrize("change", ["variable", "driver", "lock", "file", "python-cache"])
def test_what_verify_depends_on_changes_and_verify_runs_again(tmp_path: Path, index: LocalIndex,
                                                              change: str) -> None:
    proj = _synced(tmp_path, index)
    venv = proj / ".venv"
    _passed(proj)
    env: dict[str, str] = {}
    if change == "variable":  # a variable torch, Triton or Inductor reads
        env = {"TORCHINDUCTOR_MAX_AUTOTUNE": "1"}
    elif change == "driver":  # another driver, as far as host detection knows
        env = {"TRITONLOCK_DRIVER": "550.54.15"}
    elif change == "lock":
        intent = proj / "triton-env.toml"
        intent.write_text(intent.read_text().replace('["einops"]', '["einops", "typing-extensions"]'))
        assert CliRunner().invoke(main, ["resolve", "-p", str(proj)]).exit_code == 0
    elif change == "file":  # an edit in place: the no-op check sees it, sync repairs it, verify runs on the repair
        init = site_dirs(venv)[0] / "einops" / "__init__.py"
        init.write_text(init.read_text() + "raise ImportError('edited')\n")
    elif change == "python-cache":  # only a byte-code cache appears (Python wrote it): nothing verify proved changed
        subprocess.run([str(venv_python(venv)), "-c", "import einops"], check=True,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
        assert (site_dirs(venv)[0] / "einops" / "__pycache__").is_dir()
    if change == "python-cache":
        assert _noop.already_verified(proj, venv, target=None, python=None, system_site_packages=None) is not None
        r = _tl(proj, "sync", env=env)
        assert r.returncode == 0 and r.stdout == _verified_line(proj), r
        return
    os.environ.update(env)
    try:
        assert _noop.already_verified(proj, venv, target=None, python=None, system_site_packages=None) is None
    finally:
        for k in env:
            del os.environ[k]
    r = _tl(proj, "sync", env=env)
    assert r.returncode == 1 and "verified at" not in r.stdout and "RESULT" in r.stdout, r  # verify ran (and failed)
    if change == "file":
        assert "now matches target host: 1 repaired" in r.stdout, r.stdout
        assert "raise ImportError" not in (site_dirs(venv)[0] / "einops" / "__init__.py").read_text()


@pytest.mark.parametrize("stray", ["triton.py", "einops/stray_shadow.py"])
def test_a_stray_module_still_ends_the_no_op(tmp_path: Path, index: LocalIndex, stray: str) -> None:
    """A module dropped into site-packages after the verify (a triton.py beside triton/ takes its import name) is what
    the no-op check exists for: the record no longer holds, sync removes what shadows, and verify runs again — also
    for a file no import finds on its own (inside a package): something changed since the verify."""
    proj = _synced(tmp_path, index)
    _passed(proj)
    path = site_dirs(proj / ".venv")[0] / stray
    path.write_text("raise ImportError('a stray copy')\n")
    r = _tl(proj, "sync")
    assert "verified at" not in r.stdout and "RESULT" in r.stdout, r
    if stray == "triton.py":
        assert not path.exists() and "1 repaired" in r.stdout, r.stdout
    assert _noop.read_synced(proj / ".venv") is not None


def test_a_verify_record_edited_by_hand_is_ignored_never_trusted(tmp_path: Path, index: LocalIndex) -> None:
    proj = _synced(tmp_path, index)
    _passed(proj)
    path = proj / ".venv" / _noop.VERIFIED
    good = json.loads(path.read_text())
    for bad in ({**good, "key": "0" * 64}, {**good, "when": "yesterday"}, {**good, "target": "other"},
                {k: v for k, v in good.items() if k != "key"}, [good], "not json"):
        path.write_text(bad if isinstance(bad, str) else json.dumps(bad))
        assert _noop.already_verified(proj, proj / ".venv", target=None, python=None, system_site_packages=None) is None
        r = _tl(proj, "sync")
        assert "verified at" not in r.stdout and r.returncode == 1, r


def test_the_interpreter_is_part_of_the_key(tmp_path: Path) -> None:
    """A Python upgraded in place (the file the venv's python resolves to) is another interpreter: the record no
    longer holds."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    exe = tmp_path / "python3.11"
    exe.write_bytes(b"one")
    (venv / "bin" / "python").symlink_to(exe)
    stamp = {"key": "k", "target": "host", "dists": {}, "base": [], "cfg": "", "files-digest": "0:1"}
    a = _noop.verified_key(venv, stamp)
    exe.write_bytes(b"two, longer")
    assert _noop.verified_key(venv, stamp) != a
    assert _noop.verified_key(venv, {**stamp, "files-digest": "0:2"}) != _noop.verified_key(venv, stamp)


def test_a_real_verify_is_recorded_and_the_second_sync_is_a_no_op(tmp_path: Path, real_torch_python: str,
                                                                   real_torch_backend: str) -> None:
    """End to end with real torch and Triton (Triton's interpreter on the CPU): the first plain sync runs verify and
    it passes; the second says when, and runs nothing. The lock is for the build the real venv holds (the CPU build
    from a CPU index, or PyPI's CUDA build from the default index), so the sync installs nothing over it."""
    base = real_torch_python
    idx = real_stack_index(tmp_path, base, real_torch_backend)
    try:
        proj = tmp_path / "proj"
        proj.mkdir()
        build = 'triton = "none"\ncuda = "cpu"\n' if real_torch_backend == "cpu" else ""
        torch_index = f"{idx.url}/whl/{{backend}}" if real_torch_backend == "cpu" else "default"
        version = subprocess.run([base, "-c", "import torch; print(torch.__version__.split('+')[0])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        (proj / "triton-env.toml").write_text(
            f'[environment]\npython = "3.11"\ntorch = "=={version}"\n{build}'
            f'[indexes]\ntorch = "{torch_index}"\ndefault = "{idx.index_url("simple")}"\n')
        r = CliRunner().invoke(main, ["resolve", "-p", str(proj)])
        assert r.exit_code == 0, r.output
        first = _tl(proj, "sync", "--system-site-packages", "--python", base)
        assert first.returncode == 0 and "RESULT: OK" in first.stdout, first
        assert (proj / ".venv" / _noop.VERIFIED).is_file()
        second = _tl(proj, "sync")
        assert second.returncode == 0 and second.stderr == "", second
        assert second.stdout.startswith(f"{proj / '.venv'} matches target host (") and "verified at " in second.stdout
        assert "with nothing changed since" in second.stdout and "RESULT" not in second.stdout
    finally:
        idx.stop()
