"""`export --format uv`: uv's own tables make `uv lock` take the torch files triton-env.lock took (real uv, the local
index), in a new pyproject.toml or in place in the user's, and `check` says when uv.lock drifts from the lock."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock._subprocess import uv_bin
from tritonlock.cli import main
from tritonlock.lock.lockfile import read_lock
from tritonlock.export.uv import pinned

pytestmark = pytest.mark.slow

TWO = """
[environment]
python = "3.11"
torch = "==2.6.0"
packages = ["einops>=0.8"]

[[targets]]
name = "a100"
driver = "550.54.15"
gpus = ["8.0"]

[[targets]]
name = "laptop"
"""


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def _uv_lock(root: Path, tmp_path: Path) -> dict:
    env = dict(os.environ, UV_PYTHON_DOWNLOADS="never", UV_CACHE_DIR=str(tmp_path / "uv-cache"), UV_PYTHON=sys.executable)
    p = subprocess.run([uv_bin(), "lock"], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    import tomllib

    return tomllib.loads((root / "uv.lock").read_text())


def _same_files(root: Path, uv: dict) -> int:
    """Every package the export pins, for every target: uv.lock holds its version from the same index with the same
    sha256 as triton-env.lock. Returns how many packages were compared."""
    lock = read_lock(root / "triton-env.lock")
    n = 0
    for t in lock.targets:
        for p in pinned(lock, t):
            entries = [e for e in uv["package"] if e["name"] == p.name and e["version"] == p.version
                       and e["source"]["registry"].rstrip("/") == p.index.rstrip("/")]  # the same index
            assert len(entries) == 1, (t.name, p.name, p.version)
            hashes = {w["hash"] for e in entries for w in e.get("wheels", [])}
            assert {f"sha256:{w.sha256}" for w in p.wheels} <= hashes, (t.name, p.name)
            n += 1
    return n


def test_two_backends_become_extras_with_conflicts_and_uv_locks_the_same_files(tmp_path: Path,
                                                                               local_index: LocalIndex) -> None:
    root = tmp_path / "proj"
    write_intent(root, local_index, TWO)
    assert _run("resolve", "-p", str(root))[0] == 0
    code, out = _run("export", "-p", str(root), "--format", "uv", "-o", str(root / "pyproject.toml"))
    assert code == 0, out
    assert "target a100: uv lock && uv sync --extra a100" in out
    assert "target laptop: uv lock && uv sync --extra laptop" in out
    import tomllib

    doc = tomllib.loads((root / "pyproject.toml").read_text())
    assert doc["tool"]["uv"]["conflicts"] == [[{"extra": "a100"}, {"extra": "laptop"}]]
    assert all(e.get("explicit") or e.get("default") for e in doc["tool"]["uv"]["index"])
    assert doc["project"]["optional-dependencies"]["a100"][:1] == ["torch==2.6.0+cu124"]
    uv = _uv_lock(root, tmp_path)
    assert _same_files(root, uv) == 4  # torch + triton for each target
    code, out = _run("check", "-p", str(root))
    assert code == 0, out
    # uv.lock drifts (a hand edit, another uv lock with other sources): check names it
    text = (root / "uv.lock").read_text()
    lock = read_lock(root / "triton-env.lock")
    sha = next(p for p in lock.targets[0].packages if p.name == "torch").wheels[0].sha256
    (root / "uv.lock").write_text(text.replace(sha, "0" * 64))
    code, out = _run("check", "-p", str(root))
    assert code == 1
    assert "torch 2.6.0+cu124: torch-2.6.0+cu124-py3-none-manylinux_2_17_x86_64.whl has another sha256 in uv.lock" in out


def test_one_target_in_place_keeps_the_users_file_and_pins_the_family(tmp_path: Path,
                                                                      local_index: LocalIndex) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    original = (
        "# my project\n[project]\nname = \"myproj\"  # keep me\nversion = \"1.0\"\nrequires-python = \">=3.11\"\n"
        "dependencies = [\n  'torch>=2.6,<2.8',\n  \"einops>=0.8\",\n]\n\n[tool.ruff]\nline-length = 100\n\n"
        "[tool.tritonlock.environment]\npython = \"3.11\"\n\n"
        f"[tool.tritonlock.indexes]\ntorch = \"{local_index.url}/whl/{{backend}}\"\n"
        f"default = \"{local_index.index_url('simple')}\"\n\n"
        "[[tool.tritonlock.targets]]\nname = \"a100\"\ndriver = \"550.54.15\"\ngpus = [\"8.0\"]\n")
    (root / "pyproject.toml").write_text(original)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    code, out = _run("export", "-p", str(root), "--format", "uv", "-o", str(root / "pyproject.toml"))
    assert code == 0, out
    new = (root / "pyproject.toml").read_text()
    assert new.startswith(original)  # the user's file, byte for byte, then uv's tables
    import tomllib

    doc = tomllib.loads(new)
    assert doc["project"]["dependencies"] == ["torch>=2.6,<2.8", "einops>=0.8"]
    assert doc["tool"]["uv"]["sources"]["torch"] == {"index": "tritonlock-cu126"} or \
        doc["tool"]["uv"]["sources"]["torch"]["index"].startswith("tritonlock-cu")
    assert "torch==2.7.1+cu126" in doc["tool"]["uv"]["constraint-dependencies"] or any(
        c.startswith("torch==") for c in doc["tool"]["uv"]["constraint-dependencies"])
    code, out = _run("check", "-p", str(root))  # adding uv's tables does not make the lock stale
    assert code == 0, out
    code, out = _run("export", "-p", str(root), "--format", "uv", "-o", str(root / "pyproject.toml"))
    assert code == 0 and (root / "pyproject.toml").read_text() == new  # a re-export changes nothing
    uv = _uv_lock(root, tmp_path)
    assert _same_files(root, uv) == 2
    assert _run("check", "-p", str(root))[0] == 0


def test_the_targets_platforms_are_added_to_the_users_uv_environments(tmp_path: Path,
                                                                       local_index: LocalIndex) -> None:
    """`uv lock` resolves for every platform unless [tool.uv] environments says which: the export adds the targets'
    (the lock decided for them alone), keeps the user's own entries, and a re-export adds nothing twice."""
    root = tmp_path / "proj"
    root.mkdir()
    original = (
        "[project]\nname = \"myproj\"\nversion = \"1.0\"\nrequires-python = \">=3.11\"\ndependencies = []\n\n"
        "[tool.uv]\nenvironments = [\"sys_platform == 'darwin'\"]\n\n"
        "[tool.tritonlock.environment]\npython = \"3.11\"\ntorch = \"==2.6.0\"\n\n"
        f"[tool.tritonlock.indexes]\ntorch = \"{local_index.url}/whl/{{backend}}\"\n"
        f"default = \"{local_index.index_url('simple')}\"\n\n"
        "[[tool.tritonlock.targets]]\nname = \"a100\"\ndriver = \"550.54.15\"\ngpus = [\"8.0\"]\n")
    (root / "pyproject.toml").write_text(original)
    assert _run("resolve", "-p", str(root))[0] == 0
    code, out = _run("export", "-p", str(root), "--format", "uv", "-o", str(root / "pyproject.toml"))
    assert code == 0, out
    import tomllib

    new = (root / "pyproject.toml").read_text()
    assert tomllib.loads(new)["tool"]["uv"]["environments"] == [
        "sys_platform == 'darwin'", "sys_platform == 'linux' and platform_machine == 'x86_64'"]
    code, out = _run("export", "-p", str(root), "--format", "uv", "-o", str(root / "pyproject.toml"))
    assert code == 0 and (root / "pyproject.toml").read_text() == new, out
    bad = new.replace("environments = [", "environments = [1, ", 1)
    (root / "pyproject.toml").write_text(bad)
    code, out = _run("export", "-p", str(root), "--format", "uv", "-o", str(root / "pyproject.toml"))
    assert code == 2 and "tool.uv.environments[0] is " in out and "nothing was written" in out, out
    assert (root / "pyproject.toml").read_text() == bad

def test_an_inline_index_array_is_kept_extended_and_read_by_uv(tmp_path: Path, local_index: LocalIndex) -> None:
    """`index = [{...}]` under [tool.uv] is valid uv configuration (it was a traceback): the user's entry stays,
    tritonlock's are added in the same layout, a re-export changes nothing, and the real `uv lock` takes torch and
    triton from the lock's index with the lock's sha256. A shape uv refuses (index a string) is a clean error."""
    import tomllib

    root = tmp_path / "proj"
    write_intent(root, local_index, TWO)
    assert _run("resolve", "-p", str(root))[0] == 0
    mine = local_index.index_url("simple")
    pyproject = root / "pyproject.toml"
    pyproject.write_text('[project]\nname = "myproj"\nversion = "1.0"\nrequires-python = ">=3.11"\n'
                         'dependencies = ["einops>=0.8"]\n\n[tool.uv]\n'
                         f'index = [{{ name = "mine", url = "{mine}" }}]\n')
    code, out = _run("export", "-p", str(root), "--format", "uv", "-o", str(pyproject))
    assert code == 0, out
    text = pyproject.read_text()
    assert "[[tool.uv.index]]" not in text  # the user's layout, kept
    doc = tomllib.loads(text)
    names = [e["name"] for e in doc["tool"]["uv"]["index"]]
    assert names[0] == "mine" and "tritonlock-cu124" in names, names
    assert _run("export", "-p", str(root), "--format", "uv", "-o", str(pyproject))[0] == 0
    assert pyproject.read_text() == text
    assert _same_files(root, _uv_lock(root, tmp_path)) == 4
    pyproject.write_text('[project]\nname = "myproj"\n[tool.uv]\nindex = "https://x.example/simple"\n')
    code, out = _run("export", "-p", str(root), "--format", "uv", "-o", str(pyproject))
    assert code == 2 and ("pyproject.toml: tool.uv.index is a string, where uv expects a list of index tables — fix "
                          "it") in out, out
def test_a_cpu_target_keeps_its_triton_and_check_agrees(tmp_path: Path, local_index: LocalIndex) -> None:
    """A CPU build requires no triton; the lock keeps one (from the default index, for Triton's interpreter), and so
    must uv.lock — else `check` sends the user to re-export the same tables, forever."""
    root = tmp_path / "proj"
    write_intent(root, local_index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\n\n[[targets]]\nname = "laptop"\n')
    assert _run("resolve", "-p", str(root))[0] == 0
    lock = read_lock(root / "triton-env.lock")
    assert "triton" in {p.name for p in pinned(lock, lock.targets[0])}
    code, out = _run("export", "-p", str(root), "--format", "uv", "-o", str(root / "pyproject.toml"))
    assert code == 0, out
    import tomllib

    assert "triton" in tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    uv = _uv_lock(root, tmp_path)
    assert _same_files(root, uv) == 2  # torch and triton, the same files from the same indexes
    code, out = _run("check", "-p", str(root))
    assert code == 0, out
