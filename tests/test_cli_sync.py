"""`tritonlock sync` end to end: real local index, real venvs, real uv."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import tree, write_default_index_intent, write_intent
from pkgindex import LocalIndex, build_wheel
from tritonlock.cli import main
from tritonlock.environment._venv import read_dists as _read_dists, site_dirs as _site_dirs, venv_python

INTENT = """
[environment]
python = "3.11"
torch = "==2.6.0"
cuda = "cpu"
packages = [{extra}]
"""


def _uv() -> str:
    """The uv that tritonlock drives (the `uv` package's binary), never one found on PATH."""
    from tritonlock._subprocess import uv_bin

    return uv_bin()


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner(mix_stderr=False).invoke(main, list(args)) if _mix_ok() else CliRunner().invoke(main, list(args))
    out = r.output + (getattr(r, "stderr", "") if _mix_ok() else "")
    return r.exit_code, out


def _mix_ok() -> bool:
    import inspect

    return "mix_stderr" in inspect.signature(CliRunner.__init__).parameters


def _dists(venv: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for s in _site_dirs(venv):
        out.update(_read_dists(s))
    out.pop("pip", None)
    return out


def _project(tmp_path: Path, idx: LocalIndex, extra: str = '"einops"') -> Path:
    write_intent(tmp_path, idx, INTENT.format(extra=extra))
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0, out
    return tmp_path


def test_sync_installs_then_noop_then_removes_extras(tmp_path: Path, local_index: LocalIndex) -> None:
    proj = _project(tmp_path, local_index)
    code, out = _run("sync", "-p", str(proj), "--dry-run")
    assert code == 0 and "plan for target host" in out and "+ torch 2.6.0+cpu" in out
    assert not (proj / ".venv").exists()  # a dry run changes nothing
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0, out
    # the plan comes once, with what it will download, then one line saying what was done
    assert out.count("plan for target host") == 1 and out.count("+ torch 2.6.0+cpu") == 1
    from tritonlock.lock.lockfile import read_lock

    size = sum(p.wheels[0].size or 0 for p in read_lock(proj / "triton-env.lock").targets[0].packages)
    assert f"6 to install, 0 to remove, 0 unchanged; download {size / 1000:.1f} KB" in out, out
    assert ".venv now matches target host: 6 installed" in out
    # nothing else lands in the project: the sync lock was a stray `..venv.tritonlock-lock` beside the venv
    assert sorted(os.listdir(proj)) == [".venv", "triton-env.lock", "triton-env.toml"]
    venv = proj / ".venv"
    assert _dists(venv) == {"torch": "2.6.0+cpu", "triton": "3.2.0", "filelock": "3.16.1", "einops": "0.8.0",
                            "typing-extensions": "4.12.2", "numpy": "1.26.4"}  # numpy: Triton's interpreter
    r = subprocess.run([str(venv_python(venv)), "-c", "import torch; print(torch.version.cuda)"],
                       capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "None"
    n_requests = len(local_index.requests)
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0 and "already matches target host" in out
    assert len(local_index.requests) == n_requests  # the no-op path touches no index
    # something the lock does not list is removed; a changed version is put back
    extra = build_wheel(tmp_path / "w", "stray", "1.0")
    fl = build_wheel(tmp_path / "w", "filelock", "3.0.0")
    subprocess.run([_uv(), "pip", "install", "--python", str(venv_python(venv)), "--no-deps", str(extra), str(fl)],
                   check=True, capture_output=True)
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0, out
    assert "- stray 1.0" in out and "~ filelock 3.0.0 -> 3.16.1" in out
    assert "1 upgraded, 1 removed" in out
    assert "stray" not in _dists(venv) and _dists(venv)["filelock"] == "3.16.1"


def test_tampered_lock_is_refused_naming_the_package(tmp_path: Path, local_index: LocalIndex) -> None:
    proj = _project(tmp_path, local_index)
    lock = proj / "triton-env.lock"
    text = lock.read_text()
    lock.write_text(text.replace('version = "3.16.1"', 'version = "3.16.2"'))
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 2 and "(filelock): version 3.16.2 does not match its file filelock-3.16.1" in out
    h = re.search(r'sha256 = "([0-9a-f]{64})"', text).group(1)  # type: ignore[union-attr]
    lock.write_text(text.replace(h, "0" * 64, 1))
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 2 and "edited after the lock was generated" in out
    assert not (proj / ".venv").exists()


def test_locked_refuses_a_stale_lock(tmp_path: Path, local_index: LocalIndex) -> None:
    proj = _project(tmp_path, local_index)
    intent = proj / "triton-env.toml"
    intent.write_text(intent.read_text().replace('packages = ["einops"]', "packages = []"))
    code, out = _run("sync", "-p", str(proj), "--locked", "--no-verify")
    assert code == 2 and "is stale" in out and "changed since the lock was written" in out
    assert not (proj / ".venv").exists()


def test_failed_install_leaves_the_old_venv_working(tmp_path: Path, local_index: LocalIndex) -> None:
    proj = _project(tmp_path, local_index, extra='"filelock==3.12.0"')
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    before = _dists(venv)
    files_before = tree(venv)
    assert before["filelock"] == "3.12.0"
    intent = proj / "triton-env.toml"
    intent.write_text(intent.read_text().replace('"filelock==3.12.0"', '"filelock==3.16.1", "einops"'))
    assert _run("resolve", "-p", str(proj))[0] == 0
    # the index now serves a different file under the pinned name: uv must refuse it by hash
    files = local_index.root / "simple" / "_files"
    good = (files / "einops-0.8.0-py3-none-any.whl").read_bytes()
    try:
        build_wheel(files, "einops", "0.8.0", modules={"einops/__init__.py": "raise SystemExit('evil')\n"})
        code, out = _run("sync", "-p", str(proj), "--no-verify")
        assert code == 5, out
        assert "mismatch for einops: the file the index served is not the one the lock pinned" in out
        # the plan was shown before the install was tried; the claim about the venv is checked below
        assert out.index("plan for target host") < out.index("mismatch for einops")
        assert re.search(f"sync failed; {re.escape(str(venv))} is unchanged \\(checked: the same \\d+ files, sizes and "
                         "times\\)", out), out
    finally:
        (files / "einops-0.8.0-py3-none-any.whl").write_bytes(good)
    assert _dists(venv) == before and tree(venv) == files_before  # byte for byte
    subprocess.run([str(venv_python(venv)), "-c", "import filelock, torch"], check=True)
    code, out = _run("sync", "-p", str(proj), "--no-verify")  # the index is fixed: the same sync now works
    assert code == 0 and "2 installed, 1 upgraded" in out, out


def test_offline_wheelhouse_and_missing_wheel(tmp_path: Path, local_index: LocalIndex) -> None:
    proj = _project(tmp_path, local_index)
    house = tmp_path / "house"
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--find-links", str(house))
    assert code == 5 and f"6 package(s) to install are not in the wheelhouse {house}: einops 0.8.0, filelock" in out
    assert f"nothing was created ({proj / '.venv'} does not exist)" in out and not (proj / ".venv").exists()
    assert [p.name for p in proj.iterdir() if "tritonlock-new" in p.name or "tritonlock-old" in p.name] == []
    house.mkdir()
    for sub in ("simple", "whl/cpu"):
        for f in (local_index.root / sub / "_files").glob("*.whl"):
            (house / f.name).write_bytes(f.read_bytes())
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--find-links", str(house))
    assert code == 0, out
    assert _dists(proj / ".venv")["einops"] == "0.8.0"


def test_two_syncs_at_once_do_not_corrupt_the_venv(tmp_path: Path, local_index: LocalIndex) -> None:
    proj = _project(tmp_path, local_index)
    results: list[int] = []

    def go() -> None:
        p = subprocess.run([sys.executable, "-m", "tritonlock", "sync", "-p", str(proj), "--no-verify"],
                           capture_output=True, text=True)
        results.append(p.returncode)

    threads = [threading.Thread(target=go) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [0, 0]
    assert _dists(proj / ".venv")["torch"] == "2.6.0+cpu"


def test_no_target_fits_names_the_closest(tmp_path: Path, local_index: LocalIndex) -> None:
    write_intent(tmp_path, local_index, """
[environment]
python = "3.11"
torch = "==2.6.0"
[[targets]]
name = "a100"
driver = "550.54.15"
gpus = ["8.0"]
""")
    assert _run("resolve", "-p", str(tmp_path))[0] == 0
    code, out = _run("sync", "-p", str(tmp_path), "--no-verify")
    assert code == 2  # bad input, as export and verify --record say for the same lock
    assert "no target in" in out and "a100: it is a CUDA target (cu124) and this host has no NVIDIA driver" in out
    assert "tritonlock host --save" in out
    assert not (tmp_path / ".venv").exists()
    code, out = _run("verify", "-p", str(tmp_path), "--record", "--python", sys.executable)
    assert code == 2 and "no target in" in out, out
    assert not (tmp_path / "triton-env.verified.toml").exists()


def test_system_site_packages_reuses_a_preinstalled_stack(tmp_path: Path, local_index: LocalIndex) -> None:
    """Like an NGC image: the interpreter is itself a venv holding torch; only what is missing goes in."""
    write_intent(tmp_path / "proj", local_index, """
[environment]
python = "3.11"
torch = "==2.6.0"
cuda = "cu124"
packages = ["einops"]
[[targets]]
name = "gpu-box"
driver = "550.54.15"
gpus = ["8.0"]
""")
    proj = tmp_path / "proj"
    assert _run("resolve", "-p", str(proj))[0] == 0
    base = tmp_path / "base"
    subprocess.run([_uv(), "venv", "-q", "--python", sys.executable, str(base)], check=True)
    files = local_index.root / "simple" / "_files"
    # the default index's plain torch 2.6.0 (PyPI's build of 2.6.0 is the cu124 one), triton, and an old filelock
    subprocess.run([_uv(), "pip", "install", "-q", "--python", str(venv_python(base)), "--no-deps",
                    str(next(files.glob("torch-2.6.0-*.whl"))), str(next(files.glob("triton-3.2.0-*.whl"))),
                    str(files / "filelock-3.12.0-py3-none-any.whl")], check=True)
    code, out = _run("sync", "-p", str(proj), "--target", "gpu-box", "--no-verify", "--system-site-packages",
                     "--python", str(venv_python(base)))
    assert code == 0, out
    assert "= torch 2.6.0  (preinstalled; the default index's 2.6.0 is the cu124 build)" in out
    assert "= triton 3.2.0  (preinstalled)" in out
    assert "+ filelock 3.16.1  (preinstalled 3.12.0 differs; installing the locked one into the venv)" in out
    venv = proj / ".venv"
    own = _dists(venv)
    assert "torch" not in own and "triton" not in own and own["filelock"] == "3.16.1" and "einops" in own
    r = subprocess.run([str(venv_python(venv)), "-c", "import torch, filelock, einops; print(torch.__file__)"],
                       capture_output=True, text=True, check=True)
    assert str(base) in r.stdout  # torch comes from the preinstalled stack
    code, out = _run("sync", "-p", str(proj), "--target", "gpu-box", "--no-verify", "--system-site-packages",
                     "--python", str(venv_python(base)))
    assert code == 0 and "already matches target gpu-box" in out
    # doctor judges drift by the same plan: the preinstalled torch and triton count, nothing is missing
    import json

    r = CliRunner().invoke(main, ["doctor", "-p", str(proj), "--json"],
                           env={"TRITONLOCK_DRIVER": "550.54.15", "TRITONLOCK_GPUS": "8.0"})
    ids = [f["id"] for f in json.loads(r.output)["findings"]]
    assert "venv-drift" not in ids and "lock-no-target" not in ids, r.output
    # …and a real difference still shows
    subprocess.run([_uv(), "pip", "uninstall", "-q", "--python", str(venv_python(venv)), "einops"], check=True)
    r = CliRunner().invoke(main, ["doctor", "-p", str(proj), "--json"],
                           env={"TRITONLOCK_DRIVER": "550.54.15", "TRITONLOCK_GPUS": "8.0"})
    drift = [f for f in json.loads(r.output)["findings"] if f["id"] == "venv-drift"]
    assert drift and drift[0]["evidence"] == ["missing: einops 0.8.0"]


def test_pypi_cuda_build_syncs_onto_a_machine_without_a_driver(tmp_path: Path, local_index: LocalIndex) -> None:
    """[indexes].torch = "default" on a laptop: PyPI's CUDA build is the one there is, and it runs on the CPU."""
    write_default_index_intent(tmp_path, local_index)
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0 and "runs on the CPU and its CUDA libraries go unused" in out
    code, out = _run("sync", "-p", str(tmp_path), "--no-verify")
    assert code == 0, out
    assert _dists(tmp_path / ".venv")["torch"] == "2.6.0"


def test_sync_warns_where_a_locked_package_needs_nvcc_this_machine_lacks(tmp_path: Path, local_index: LocalIndex,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """flashinfer-python (compat/packages.toml [[kernels-at-first-use]]: its kernels built with nvcc when first
    called) beside PyPI's CUDA torch: resolve says so; sync installs it all the same and warns — on stderr, and in
    --json — only on a machine with no nvcc where it looks ($CUDA_HOME alone when set)."""
    import json

    write_default_index_intent(tmp_path, local_index)
    intent = tmp_path / "triton-env.toml"
    intent.write_text(intent.read_text().replace("[indexes]", 'packages = ["flashinfer-python"]\n[indexes]'))
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0 and "flashinfer-python 0.6.6 compiles its CUDA kernels when first called" in out, out
    home = tmp_path / "toolkit"
    (home / "bin").mkdir(parents=True)
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    said = "flashinfer-python 0.6.6 compiles its CUDA kernels when first called, with nvcc, and this machine has none"
    code, out = _run("sync", "-p", str(tmp_path), "--no-verify")
    assert code == 0 and f"warning: {said}" in out, out
    assert _dists(tmp_path / ".venv")["flashinfer-python"] == "0.6.6"
    r = CliRunner().invoke(main, ["sync", "-p", str(tmp_path), "--no-verify", "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert [w[:len(said)] for w in got["warnings"]] == [said], got
    nvcc = home / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    code, out = _run("sync", "-p", str(tmp_path), "--no-verify")
    assert code == 0 and "nvcc" not in out, out
