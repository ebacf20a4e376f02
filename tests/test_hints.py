"""Every hint points at a step that works: the fix a message names, done, gets past that message (an empty
directory is told `init` first, not `resolve`; verify is told what sync needs first where sync would fail), and
every failure exits with the code the README's table gives it (no uv: 4 while resolving, 5 for sync; no lock for
`check`: 2; a lock target that export cannot write: 2)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.lock import lockfile


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), env=env)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.output


@pytest.mark.parametrize("args", [("sync", "--no-verify"), ("sync", "--dry-run"), ("show",),
                                  ("export", "--format", "requirements"), ("export", "--format", "pixi")])
def test_an_empty_directory_is_told_init_first(tmp_path: Path, args: tuple[str, ...]) -> None:
    """`resolve` in an empty directory asks for `init`: a hint to run resolve there points at a step that fails."""
    code, out = _run(*args, "-p", str(tmp_path))
    assert code == 2, out
    assert "run `tritonlock init`" in out and "then `tritonlock resolve`" in out, out
    code, resolved = _run("resolve", "-p", str(tmp_path))
    assert code == 2 and "run `tritonlock init`" in resolved  # (what resolve would have said)
    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.11"\n')
    code, out = _run(*args, "-p", str(tmp_path))
    assert code == 2 and "run `tritonlock resolve` first" in out and "init" not in out, out


def test_verify_without_a_venv_names_the_step_that_works(tmp_path: Path, local_index: LocalIndex) -> None:
    code, out = _run("verify", "-p", str(tmp_path))
    assert code == 2 and "run `tritonlock init`, `tritonlock resolve`, then `tritonlock sync`" in out, out
    assert "create the venv with `tritonlock sync` first" not in out
    # a lock with no target for this machine: sync would fail, so verify does not send the user there
    write_intent(tmp_path, local_index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\n\n[[targets]]\n'
                 'name = "a100"\ndriver = "550.54.15"\ngpus = ["8.0"]\n')
    assert _run("resolve", "-p", str(tmp_path))[0] == 0
    code, out = _run("verify", "-p", str(tmp_path))
    assert code == 2 and "`tritonlock sync` cannot make it here (no target in" in out, out
    code, sync_out = _run("sync", "-p", str(tmp_path), "--no-verify")
    assert code == 2 and "no target in" in sync_out  # what verify said sync would say
    # a lock that fits this machine: then sync is the step
    write_intent(tmp_path, local_index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\n')
    assert _run("resolve", "-p", str(tmp_path))[0] == 0
    code, out = _run("verify", "-p", str(tmp_path))
    assert code == 2 and "create the venv with `tritonlock sync` first" in out, out


def test_check_without_a_lock_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.11"\n')
    code, out = _run("check", "-p", str(tmp_path))
    assert code == 2 and "triton-env.lock: no such file" in out, out
    code, out = _run("check", "-p", str(tmp_path), "--json")
    assert code == 2 and '"kind": "lock"' in out


def _lock_with_a_conflict(root: Path) -> None:
    from test_lockfile import sample
    from tritonlock.models import Conflict, LockedTarget, Selection, TargetSpec

    good = sample()
    spec = TargetSpec(name="old", os="linux", arch="x86_64", glibc="2.17", python="3.12", driver="470.82.01",
                      gpus=("6.1",))
    bad = LockedTarget(selection=Selection(target=spec, ok=False, conflict=Conflict(
        target="old", message="nothing fits target 'old'")))
    root.mkdir(parents=True, exist_ok=True)
    (root / "triton-env.toml").write_text('[environment]\npython = "3.12"\n')
    (root / "triton-env.lock").write_text(lockfile.dumps(dataclasses.replace(good, targets=good.targets + (bad,))))


@pytest.mark.parametrize("fmt", ["slurm", "k8s"])
def test_a_lock_target_that_holds_a_conflict_is_not_exported_with_exit_0(tmp_path: Path, fmt: str) -> None:
    """D15: a fleet export wrote its job for the targets that fit and skipped (or shipped) the one that holds a
    conflict, exit 0; the README's table says a target export cannot write is exit 2 — and nothing is written."""
    _lock_with_a_conflict(tmp_path)
    out_file = tmp_path / f"job.{fmt}"
    for extra in ((), ("--target", "old")):
        code, out = _run("export", "--format", fmt, "--image", "img", "-p", str(tmp_path), "-o", str(out_file), *extra)
        assert code == 2, out
        assert "target 'old' cannot be exported: nothing fits target 'old'" in out and "--target h200" in out, out
        assert not out_file.exists()
    code, out = _run("export", "--format", fmt, "--image", "img", "-p", str(tmp_path), "-o", str(out_file),
                     "--target", "h200")
    assert code == 0 and out_file.is_file(), out  # the way out it names works


# ---------------------------------------------------------------- no uv


def _without_uv(tmp_path: Path) -> dict[str, str]:
    """An environment where uv cannot be found: not as the `uv` package (sitecustomize hides it), not on PATH."""
    hide = tmp_path / "hide-uv"
    hide.mkdir(exist_ok=True)
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['uv'] = None\n")
    bins = tmp_path / "bin"
    bins.mkdir(exist_ok=True)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), str(Path(__file__).parents[1])]),
            "PATH": str(bins)}


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from tritonlock._entry import main; main()", *args],
                          capture_output=True, text=True, env=env, timeout=300)


def test_without_uv_resolve_exits_4_and_sync_exits_5_saying_the_venv_state(tmp_path: Path,
                                                                           local_index: LocalIndex) -> None:
    proj = tmp_path / "p"
    write_intent(proj, local_index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n')
    env = _without_uv(tmp_path)
    r = _cli(["resolve", "-p", str(proj)], env)
    assert r.returncode == 4, r.stderr
    assert "uv is not installed" in r.stderr and "Traceback" not in r.stderr and not (proj / "triton-env.lock").exists()
    assert _run("resolve", "-p", str(proj))[0] == 0  # (with uv)
    r = _cli(["sync", "-p", str(proj), "--no-verify"], env)
    assert r.returncode == 5, r.stderr
    assert f"sync failed; nothing was created ({proj / '.venv'} does not exist): uv is not installed" in r.stderr
    assert not (proj / ".venv").exists()


# ---------------------------------------------------------------- a project that cannot be written


@pytest.fixture
def read_only_project(local_index: LocalIndex) -> Iterator[tuple[Path, list[str], dict[str, str]]]:
    """A locked project whose directory this user cannot write (as root, sync runs as `nobody`), with the prefix
    that runs a command as that user and an environment whose caches it can write."""
    root = Path(tempfile.mkdtemp(prefix="tritonlock-ro-"))
    try:
        os.chmod(root, 0o755)
        proj = root / "p"
        write_intent(proj, local_index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n')
        assert _run("resolve", "-p", str(proj))[0] == 0
        cache = root / "cache"
        cache.mkdir()
        os.chmod(cache, 0o777)
        env = {**os.environ, "XDG_CACHE_HOME": str(cache), "UV_CACHE_DIR": str(cache / "uv"), "HOME": str(cache)}
        prefix: list[str] = []
        if os.geteuid() == 0:
            if shutil.which("setpriv") is None:
                pytest.skip("running as root without setpriv: no user here that cannot write the project")
            prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            probe = subprocess.run([*prefix, sys.executable, "-c", "import tritonlock.cli"], capture_output=True,
                                   text=True, env=env, cwd=root, timeout=120)
            if probe.returncode != 0:  # (a checkout or venv in a 0700 folder, as /root/…: nobody cannot read it)
                pytest.skip(f"the user this test drops to (nobody) cannot run {sys.executable} with tritonlock "
                            f"from {Path(__file__).parents[1]} — a folder above them is not readable to others "
                            f"({probe.stderr.strip().splitlines()[-1][:200] if probe.stderr.strip() else 'no output'})")
            for p in proj.rglob("*"):
                os.chmod(p, 0o755 if p.is_dir() else 0o644)
        os.chmod(proj, 0o555)
        yield proj, prefix, env
    finally:
        os.chmod(root / "p", 0o755)
        shutil.rmtree(root, ignore_errors=True)


def test_a_read_only_project_names_the_real_cause(read_only_project: tuple[Path, list[str], dict[str, str]]) -> None:
    proj, prefix, env = read_only_project
    r = subprocess.run([*prefix, sys.executable, "-c", "from tritonlock._entry import main; main()", "sync", "-p",
                        str(proj), "--no-verify"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 5, (r.stdout, r.stderr)
    assert f"fix: {proj} cannot be written here (read-only, or not yours)" in r.stderr, r.stderr
    assert "install Python" not in r.stderr and not (proj / ".venv").exists()
