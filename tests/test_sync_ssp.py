"""`sync --system-site-packages` the way users run it: tritonlock in its own venv (pipx style), the preinstalled
stack in another interpreter that is itself a venv (as /opt/torch/.venv on the GPU machine), no index reachable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import tree, write_intent
from pkgindex import LocalIndex
from tritonlock.environment import _venv
from tritonlock.environment.sync import find_base_python, venv_python

INTENT = """
[environment]
python = "3.11"
torch = "==2.6.0"
cuda = "cu124"
packages = ["einops"]
[[targets]]
name = "gpu-box"
driver = "550.54.15"
gpus = ["8.0"]
"""
GPU = {"TRITONLOCK_DRIVER": "550.54.15", "TRITONLOCK_GPUS": "8.0"}


def _uv() -> str:
    from uv import find_uv_bin

    return str(find_uv_bin())


@pytest.fixture
def world(tmp_path: Path, local_index: LocalIndex) -> dict[str, Path]:
    """tritonlock's own venv, a base interpreter with torch and triton preinstalled, a project, a wheelhouse
    holding only what the base lacks."""
    uv = _uv()
    own = tmp_path / "tritonlock-venv"  # tritonlock's own environment: it has click & co, never torch
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(own)], check=True)
    repo = Path(__file__).resolve().parents[1]
    (_venv.site_dirs(own)[0] / "_tritonlock_dev.pth").write_text(
        f"{repo}\n{sysconfig.get_paths()['purelib']}\n", encoding="utf-8")
    base = tmp_path / "opt-torch" / ".venv"  # the image's preinstalled stack
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(base)], check=True)
    files = local_index.root / "simple" / "_files"
    # the default index's plain torch 2.6.0 (PyPI's build of 2.6.0 is the cu124 one), triton, an old filelock
    subprocess.run([uv, "pip", "install", "-q", "--python", str(venv_python(base)), "--no-deps",
                    str(next(files.glob("torch-2.6.0-*.whl"))), str(next(files.glob("triton-3.2.0-*.whl"))),
                    str(next(files.glob("nvidia_cuda_runtime_cu12-12.4.127-*.whl"))),
                    str(files / "filelock-3.12.0-py3-none-any.whl")], check=True)
    proj = tmp_path / "work" / "proj"
    write_intent(proj, local_index, INTENT)
    r = subprocess.run([str(venv_python(own)), "-m", "tritonlock", "resolve", "-p", str(proj)],
                       capture_output=True, text=True, env={**os.environ, **GPU})
    assert r.returncode == 0, r.stderr
    house = tmp_path / "house"  # no torch, no triton: those must come from the base
    house.mkdir()
    for name in ("filelock-3.16.1-py3-none-any.whl", "einops-0.8.0-py3-none-any.whl",
                 "typing_extensions-4.12.2-py3-none-any.whl"):
        shutil.copy(files / name, house / name)
    return {"own": own, "base": base, "proj": proj, "house": house}


def _tl(w: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    """Run tritonlock from its own venv, with that venv first on PATH (activated) and the base after it."""
    path = os.pathsep.join([str(w["own"] / "bin"), str(w["base"] / "bin"), str(Path(_uv()).parent),
                            os.environ.get("PATH", "")])
    env = {**os.environ, **GPU, "PATH": path, "UV_OFFLINE": "1"}
    return subprocess.run([str(venv_python(w["own"])), "-m", "tritonlock", *args, "-p", str(w["proj"])],
                          capture_output=True, text=True, env=env, cwd=w["proj"].parent)


def _where(venv: Path, module: str) -> str:
    r = subprocess.run([str(venv_python(venv)), "-c", f"import {module}; print({module}.__file__)"],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


def test_first_sync_judges_the_base_interpreter_not_tritonlocks_own(world: dict[str, Path]) -> None:
    w = world
    r = _tl(w, "sync", "--system-site-packages", "--find-links", str(w["house"]), "--no-verify")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout + r.stderr
    venv = w["proj"] / ".venv"
    assert f"creating {venv} with Python 3.11 on {w['base'] / 'bin' / 'python3.11'}" in out
    assert "= torch 2.6.0  (preinstalled; the default index's 2.6.0 is the cu124 build)" in out
    assert "= triton 3.2.0  (preinstalled)" in out and "= nvidia-cuda-runtime-cu12 12.4.127  (preinstalled)" in out
    assert "+ filelock 3.16.1  (preinstalled 3.12.0 differs; installing the locked one into the venv)" in out
    own = _venv.venv_dists(venv)
    assert "torch" not in own and "triton" not in own and own["filelock"] == "3.16.1"
    assert _where(venv, "torch").startswith(str(w["base"]))  # the preinstalled stack is what runs
    assert _where(venv, "filelock").startswith(str(venv))


def test_a_later_plain_sync_keeps_the_preinstalled_stack(world: dict[str, Path]) -> None:
    w = world
    assert _tl(w, "sync", "--system-site-packages", "--find-links", str(w["house"]), "--no-verify").returncode == 0
    venv = w["proj"] / ".venv"
    before, stats = tree(venv), _venv.snapshot(venv)
    ino = venv.stat().st_ino
    # the flag forgotten: nothing to do, nothing rebuilt, nothing downloaded
    r = _tl(w, "sync", "--no-verify")
    assert r.returncode == 0 and "already matches target gpu-box" in r.stdout, r.stdout + r.stderr
    assert tree(venv) == before and venv.stat().st_ino == ino
    r = _tl(w, "sync", "--no-verify", "--json")  # the full path (no stamp shortcut): it too leaves the venv alone
    assert r.returncode == 0 and json.loads(r.stdout)["applied"] is json.loads(r.stdout)["rebuilt"] is False, r.stdout
    assert tree(venv) == before and _venv.snapshot(venv) == stats  # not a byte, not an mtime
    # something to do: done in place, on the same base, saying so
    subprocess.run([_uv(), "pip", "uninstall", "-q", "--python", str(venv_python(venv)), "einops"], check=True)
    r = _tl(w, "sync", "--find-links", str(w["house"]), "--no-verify")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert (f"keeping --system-site-packages: {venv} was made with it on {w['base'] / 'bin' / 'python3.11'} "
            "(pass --no-system-site-packages to rebuild it without)") in out
    assert "+ einops 0.8.0" in out and "1 installed" in out and "rebuilt" not in out
    assert venv.stat().st_ino == ino and _where(venv, "torch").startswith(str(w["base"]))
    # asked to drop the stack: rebuilt beside; without torch in the wheelhouse that fails, and the venv stays
    before = tree(venv)
    r = _tl(w, "sync", "--no-system-site-packages", "--find-links", str(w["house"]), "--no-verify")
    out = r.stdout + r.stderr
    assert r.returncode == 5, out
    assert (f"rebuilding {venv}: it was made with --system-site-packages and --no-system-site-packages asks for one "
            "without") in out
    assert ("3 package(s) to install are not in the wheelhouse " f"{w['house']}: nvidia-cuda-runtime-cu12 12.4.127, "
            "torch 2.6.0+cu124, triton 3.2.0") in out and f"{venv} is unchanged (checked:" in out
    assert tree(venv) == before and venv.stat().st_ino == ino
    assert _where(venv, "torch").startswith(str(w["base"]))
    r = _tl(w, "sync", "--no-verify", "--dry-run")
    assert r.returncode == 0 and "0 to install, 0 to remove, 6 unchanged" in r.stdout, r.stdout + r.stderr


def test_the_base_search_skips_tritonlocks_own_venv(world: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    w = world
    monkeypatch.setenv("PATH", os.pathsep.join([str(w["own"] / "bin"), str(w["base"] / "bin")]))
    assert find_base_python("3.11", (w["own"],)) == str(w["base"] / "bin" / "python3.11")
    assert find_base_python("3.11", ()) == str(w["own"] / "bin" / "python3.11")


@pytest.mark.parametrize("stray", ["triton.py", "torch"])
def test_a_file_of_the_venvs_own_that_shadows_a_preinstalled_package_is_found_and_removed(
        world: dict[str, Path], stray: str) -> None:
    """On the H200 a triton.py dropped into a --system-site-packages venv's own site-packages shadowed the image's
    triton: `sync` said "already matches" and left it, doctor blamed a partial upgrade. It takes the import name of a
    preinstalled package (seen through the flag), so it is damage: doctor names the file, dry-run says it would go,
    sync removes it — and only it — and says so; the next sync matches."""
    w = world
    assert _tl(w, "sync", "--system-site-packages", "--find-links", str(w["house"]), "--no-verify").returncode == 0
    venv = w["proj"] / ".venv"
    site = _venv.site_dirs(venv)[0]
    path = site / stray
    if stray == "torch":  # a folder: a package named like the preinstalled one
        path.mkdir()
        (path / "__init__.py").write_text("raise ImportError('a stray torch')\n")
    else:
        path.write_text("raise ImportError('a stray triton')\n")
    owner = stray.removesuffix(".py")
    before = tree(venv)
    doc = json.loads(_tl(w, "doctor", "--json").stdout)
    found = {f["id"]: f for f in doc["findings"]}
    assert "venv-stray-module" in found and str(path) in found["venv-stray-module"]["title"], found
    assert "partial upgrade" not in json.dumps(found)
    r = _tl(w, "sync", "--no-verify", "--dry-run")
    assert (f"{path} is no installed distribution's file and takes the import name {owner!r} of the preinstalled "
            f"{owner} ") in r.stderr and "sync would remove it" in r.stderr, r.stdout + r.stderr
    assert tree(venv) == before  # (a dry run changes nothing)
    r = _tl(w, "sync", "--no-verify")
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "already matches" not in out, out
    assert "which the venv sees through --system-site-packages: it shadows the preinstalled one; removing it" in out
    assert "now matches target gpu-box: 1 stray file(s) removed" in r.stdout, out
    assert not path.exists() and _where(venv, owner).startswith(str(w["base"]))  # the preinstalled one imports
    rel = str(path.relative_to(venv))
    assert set(before) - set(tree(venv)) == {k for k in before if k == rel or k.startswith(rel + "/")}  # only it
    assert "already matches target gpu-box" in _tl(w, "sync", "--no-verify").stdout
    assert "venv-stray-module" not in {f["id"] for f in json.loads(_tl(w, "doctor", "--json").stdout)["findings"]}
