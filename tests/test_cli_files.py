"""Every file a command writes (intent, saved host, lock, exports, devcontainer) gets the user's umask, and a file
it replaces keeps its mode: atomic writes must not leave them 0600."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock.lock import lockfile
from tritonlock.cli import main


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _ok(*args: str) -> str:
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_write_atomic_follows_the_umask(tmp_path: Path, umask: None, mask: int) -> None:
    os.umask(mask)
    path = tmp_path / "f.toml"
    lockfile.write_atomic(path, "x = 1\n")
    assert _mode(path) == 0o666 & ~mask and path.read_text() == "x = 1\n"
    path.chmod(0o640)  # a mode the user chose survives a rewrite
    lockfile.write_atomic(path, "x = 2\n")
    assert _mode(path) == 0o640 and path.read_text() == "x = 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.toml"]


def test_every_written_file_is_readable_by_others(tmp_path: Path, local_index: LocalIndex, umask: None) -> None:
    project = tmp_path / "p"
    _ok("init", "-p", str(project), "--no-index-check")
    assert _mode(project / "triton-env.toml") == 0o644
    _ok("host", "--save", str(tmp_path / "host.toml"))
    assert _mode(tmp_path / "host.toml") == 0o644
    write_intent(project, local_index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\n'
                                         '[[targets]]\nname = "a100"\ndriver = "550.54.15"\ngpus = ["8.0"]\n')
    _ok("resolve", "-p", str(project))
    assert _mode(project / "triton-env.lock") == 0o644
    for fmt, name in (("pylock", "pylock.toml"), ("requirements", "requirements.txt"), ("dockerfile", "Dockerfile")):
        _ok("export", "-p", str(project), "--format", fmt, "-o", str(project / name))
        assert _mode(project / name) == 0o644, fmt
    _ok("export", "-p", str(project), "--format", "devcontainer")
    files = sorted((project / ".devcontainer").iterdir())
    assert files and all(_mode(f) == 0o644 for f in files)
    (project / "triton-env.lock").chmod(0o664)  # group-writable by the team's choice: kept
    _ok("resolve", "-p", str(project), "--upgrade")
    assert _mode(project / "triton-env.lock") == 0o664
