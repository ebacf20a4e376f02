"""Nothing a user or a lock supplies reaches uv as an option: names are checked against the PEP 508 name grammar
where they enter (intent, lock), values are passed as --opt=value, paths as absolute paths."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock.lock import lockfile
from tritonlock.cli import main
from tritonlock.errors import LockfileError


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.output


@pytest.mark.parametrize("venv", ["-x", "--seed", "--python=/usr/bin/false"])
def test_a_venv_path_that_looks_like_an_option_is_a_path(tmp_path: Path, local_index: LocalIndex,
                                                         monkeypatch: pytest.MonkeyPatch, venv: str) -> None:
    write_intent(tmp_path, local_index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n')
    assert _run("resolve", "-p", str(tmp_path))[0] == 0
    monkeypatch.chdir(tmp_path)
    code, out = _run("sync", "-p", ".", f"--venv={venv}", "--no-verify")
    assert code == 0, out
    made = tmp_path / venv
    assert (made / "pyvenv.cfg").is_file()
    site = next((made / "lib").glob("python3*/site-packages"))
    assert (site / "torch").is_dir() and not list(site.glob("pip-*.dist-info"))  # `--seed` would have added pip


@pytest.mark.parametrize("name", ["-rfoo", "--index-url=http://evil.example/simple", "--no-deps", "a b", "ü"])
def test_names_from_a_lock_are_names(tmp_path: Path, name: str) -> None:
    from test_lockfile import _restamp, sample

    text = _restamp(lockfile.dumps(sample()).replace('name = "filelock"', f'name = "{name}"'))
    with pytest.raises(LockfileError, match=r"closures\[0\]\.packages\[0\]\.name: .* is not valid here"):
        lockfile.loads(text, "x.lock")


@pytest.mark.parametrize("req", ["-rfoo", "--extra-index-url=http://evil.example", "-e .", "numpy; --no-deps"])
def test_requirements_in_the_intent_are_requirements(tmp_path: Path, req: str) -> None:
    (tmp_path / "triton-env.toml").write_text(f'[environment]\npackages = ["{req}"]\n')
    code, out = _run("resolve", "--dry-run", "-p", str(tmp_path))
    assert code == 2 and "environment.packages[0]" in out and "is not a valid requirement" in out, out
