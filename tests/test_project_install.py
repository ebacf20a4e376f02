"""The project in its venv, as uv has it: where the intent is a buildable project's pyproject.toml, `sync` installs the
project itself editable (again when its pyproject.toml changes; never removed as "not in the lock");
`--no-install-project` leaves it out. And `init` in a Python project puts the intent in its pyproject.toml."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.environment._venv import read_dists, site_dirs, venv_python

# A PEP 517/660 backend in the project itself (standard library only): no index is needed to build it.
BACKEND = '''
import base64, hashlib, os, zipfile

NAME, VERSION = "mytrainer", open(os.path.join(os.path.dirname(__file__), "VERSION")).read().strip()


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_wheel(config_settings=None):
    return []


def _wheel(directory, files):
    info = f"{NAME}-{VERSION}.dist-info"
    files = {**files, f"{info}/METADATA": f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {VERSION}\\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
    record = [f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(d.encode()).digest()).rstrip(b'=').decode()},"
              f"{len(d.encode())}" for p, d in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = "\\n".join(record) + "\\n"
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w") as zf:
        for p, d in files.items():
            zf.writestr(p, d)
    return name


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {f"_{NAME}.pth": os.path.dirname(os.path.abspath(__file__)) + "\\n"})


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {f"{NAME}/__init__.py": open(os.path.join(NAME, "__init__.py")).read()})
'''


def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.stdout, r.stderr


def _project(root: Path, idx: LocalIndex, build: bool = True) -> Path:
    root.mkdir(parents=True)
    (root / "backend.py").write_text(BACKEND)
    (root / "VERSION").write_text("0.1\n")
    (root / "mytrainer").mkdir()
    (root / "mytrainer" / "__init__.py").write_text("WHERE = 'source'\n")
    build_system = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n\n' if build else ""
    (root / "pyproject.toml").write_text(
        f'{build_system}[project]\nname = "MyTrainer"\nversion = "0.1"\ndependencies = ["einops"]\n\n'
        '[tool.tritonlock.environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n\n'
        f'[tool.tritonlock.indexes]\ntorch = "{idx.url}/whl/{{backend}}"\ndefault = "{idx.index_url("simple")}"\n')
    code, out, err = _run("resolve", "-p", str(root))
    assert code == 0, out + err
    return root


def _dists(venv: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for s in site_dirs(venv):
        out.update(read_dists(s))
    return out


def _import(venv: Path, cwd: Path) -> str:
    return subprocess.run([str(venv_python(venv)), "-c", "import mytrainer; print(mytrainer.WHERE)"], cwd=cwd,
                          capture_output=True, text=True).stdout.strip()


def test_sync_installs_the_project_itself_editable(tmp_path: Path, local_index: LocalIndex) -> None:
    proj = _project(tmp_path / "proj", local_index)
    venv = proj / ".venv"
    code, out, err = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0, out + err
    assert "installing the project itself, mytrainer (editable, as uv does; --no-install-project leaves it out)" in err
    assert _dists(venv)["mytrainer"] == "0.1" and "einops" in _dists(venv)
    assert _import(venv, tmp_path) == "source"  # from anywhere: the project's own folder is on the venv's path
    (proj / "mytrainer" / "__init__.py").write_text("WHERE = 'edited'\n")
    assert _import(venv, tmp_path) == "edited"  # editable: an edit needs no sync
    # the project is the venv's own, not a stray: the next sync (fast path or full) leaves it
    assert "already matches" in _run("sync", "-p", str(proj), "--no-verify")[1]
    (venv / ".tritonlock-synced.json").unlink()
    code, out, err = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0 and "already matches" in out and "- mytrainer" not in out, out + err
    assert _dists(venv)["mytrainer"] == "0.1"
    # a new version in its pyproject.toml: installed again
    (proj / "VERSION").write_text("0.2\n")
    (proj / "pyproject.toml").write_text((proj / "pyproject.toml").read_text().replace('"0.1"', '"0.2"'))
    code, out, err = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0 and "again: its pyproject.toml changed" in err, out + err
    assert _dists(venv)["mytrainer"] == "0.2"
    assert "already matches" in _run("sync", "-p", str(proj), "--no-verify")[1]


def test_no_install_project_leaves_it_out_and_a_project_that_cannot_be_built_is_never_installed(
        tmp_path: Path, local_index: LocalIndex) -> None:
    proj = _project(tmp_path / "proj", local_index)
    code, out, err = _run("sync", "-p", str(proj), "--no-verify", "--no-install-project")
    assert code == 0 and "mytrainer" not in _dists(proj / ".venv") and "project itself" not in err, out + err
    plain = _project(tmp_path / "plain", local_index, build=False)  # no [build-system]: uv would not build it either
    code, out, err = _run("sync", "-p", str(plain), "--no-verify")
    assert code == 0 and "mytrainer" not in _dists(plain / ".venv") and "project itself" not in err, out + err


def test_a_project_whose_build_fails_leaves_a_venv_that_matches_the_lock_and_says_so(tmp_path: Path,
                                                                                     local_index: LocalIndex) -> None:
    proj = _project(tmp_path / "proj", local_index)
    (proj / "backend.py").write_text("raise RuntimeError('this backend is broken')\n")
    code, out, err = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 5, out + err
    assert "matches the lock, but installing the project itself (mytrainer, editable" in err
    assert "this backend is broken" in err and "`tritonlock sync --no-install-project`" in err
    assert "einops" in _dists(proj / ".venv") and "mytrainer" not in _dists(proj / ".venv")


@pytest.mark.parametrize("pyproject,flag,writes", [
    ('[project]\nname = "x"\ndependencies = ["numpy"]\n', [], "pyproject.toml"),
    ('[project]\nname = "x"\ndependencies = ["numpy"]\n', ["--no-pyproject"], "triton-env.toml"),
    ('[tool.black]\nline-length = 100\n', [], "triton-env.toml"),  # not a Python project's metadata
    ('[project\nname = "x"\n', [], "triton-env.toml"),  # not TOML: left alone
])
def test_init_in_a_python_project_keeps_the_intent_in_its_pyproject(tmp_path: Path, pyproject: str,
                                                                     flag: list[str], writes: str) -> None:
    (tmp_path / "pyproject.toml").write_text(pyproject)
    code, out, err = _run("init", "-p", str(tmp_path), "--no-index-check", *flag)
    assert code == 0, out + err
    assert f"wrote {tmp_path / writes}" in out
    if writes == "pyproject.toml":
        text = (tmp_path / "pyproject.toml").read_text()
        assert text.startswith(pyproject) and "[tool.tritonlock]" in text and not (tmp_path / "triton-env.toml").exists()
        assert "has a [project] table, so tritonlock's intent goes there" in err
        assert "`tritonlock init --no-pyproject` writes a triton-env.toml instead" in err
    else:
        assert (tmp_path / "pyproject.toml").read_text() == pyproject
        assert (tmp_path / "triton-env.toml").is_file() and "intent goes there" not in err


def test_init_then_resolve_locks_the_project_s_dependencies(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["numpy>=1.26"]\n')
    assert _run("init", "-p", str(tmp_path), "--no-index-check")[0] == 0
    from tritonlock.intent.read import read_intent

    assert read_intent(tmp_path / "pyproject.toml").packages == ("numpy>=1.26",)  # what resolve then locks
