"""A venv tritonlock makes owns its files: uv installs from its cache by hard link on Linux, and then a debugging
edit in one venv's site-packages changed every venv synced from the same cache, and the cache. Each venv gets copies
(copy-on-write clones where the filesystem makes them); hard links only where the user asks (UV_LINK_MODE=hardlink),
and then doctor names the shared bytes as the cause of a changed file."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import populate
from pkgindex import LocalIndex
from tritonlock._files import clones
from tritonlock.environment import _apply


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("links-index"))
    populate(idx)
    idx.add("simple", "jinjaish", "1.0", modules={"jinjaish/__init__.py": "X = 1\n",
                                                  "jinjaish/utils.py": "def f():\n    return 1\n"})
    idx.start()
    yield idx
    idx.stop()


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "TRITONLOCK_"))}
    env.update({"PIP_CONFIG_FILE": os.devnull, "UV_PYTHON_DOWNLOADS": "never", "UV_CACHE_DIR": str(tmp_path / "uvc"),
                "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"), **extra})
    return env


def _project(root: Path, idx: LocalIndex, env: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    (root / "triton-env.toml").write_text(
        '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\npackages = ["jinjaish"]\n'
        f'[indexes]\ntorch = "{idx.url}/whl/{{backend}}"\ndefault = "{idx.index_url("simple")}"\n')
    for args in (("resolve",), ("sync", "--no-verify")):
        r = subprocess.run([sys.executable, "-m", "tritonlock", *args, "-p", str(root)], capture_output=True,
                           text=True, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
    return root


def _site_file(proj: Path) -> Path:
    return next((proj / ".venv").glob("lib/python*/site-packages/jinjaish/utils.py"))


def _installed_files(proj: Path) -> list[Path]:
    site = _site_file(proj).parent.parent
    return [p for p in site.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            and p.suffix != ".pyc" and not p.name.startswith("_tritonlock")]


def _cached(tmp_path: Path) -> list[Path]:
    return [p for p in (tmp_path / "uvc").rglob("utils.py") if "jinjaish" in p.parts]


def test_a_venv_tritonlock_made_shares_no_file_and_an_edit_in_one_stays_there(tmp_path: Path,
                                                                             index: LocalIndex) -> None:
    env = _env(tmp_path)
    a, b = _project(tmp_path / "a", index, env), _project(tmp_path / "b", index, env)
    files = _installed_files(a) + _installed_files(b)
    assert files and [f for f in files if os.stat(f).st_nlink != 1] == []  # (a clone or a copy: its own inode)
    with open(_site_file(a), "a") as fh:
        fh.write("# debug\n")
    assert "# debug" not in _site_file(b).read_text()
    assert _cached(tmp_path) and not any("# debug" in p.read_text() for p in _cached(tmp_path))
    c = _project(tmp_path / "c", index, env)  # a venv synced afterwards from the same cache: the lock's bytes
    assert "# debug" not in _site_file(c).read_text()


def test_hard_links_are_the_users_choice_and_doctor_names_them_as_the_cause(tmp_path: Path,
                                                                          index: LocalIndex) -> None:
    """UV_LINK_MODE=hardlink (uv's own setting): the venv shares its files with uv's cache, as asked. An edit made
    through the cache's name of a file (as an edit in another venv linked to it is) shows in this venv, and doctor
    says why — not "cut short by a killed install" — and how to mend the cache too."""
    env = _env(tmp_path, UV_LINK_MODE="hardlink")
    a = _project(tmp_path / "a", index, env)
    mine = _site_file(a)
    shared = [p for p in _cached(tmp_path) if os.path.samefile(p, mine)]
    assert os.stat(mine).st_nlink > 1 and shared, "hard links, as the user asked"
    with open(shared[0], "a") as fh:
        fh.write("# debug\n")
    assert "# debug" in mine.read_text()
    r = subprocess.run([sys.executable, "-m", "tritonlock", "doctor", "-p", str(a)], capture_output=True, text=True,
                       env=env)
    out = " ".join((r.stdout + r.stderr).split())
    assert ("1 package in " in out and "has files of another size than their RECORD lists — hard links whose bytes "
            "uv's cache and other venvs share, so an edit made through any of them changed them all") in out, out
    assert ("jinjaish 1.0: 1 files have another size than RECORD says (jinjaish/utils.py); it is a hard link to a "
            "file outside this venv — uv's cache and every venv installed from it by hard link") in out, out
    assert "`uv cache clean jinjaish` (the cache's copy holds the edit too), then `tritonlock sync --reinstall " \
           "jinjaish`" in out, out
    assert "cut short by a killed install" not in out


def test_the_link_mode_is_a_clone_only_where_the_filesystem_makes_one(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """uv's own clone mode falls back to a hard link where the filesystem cannot clone (ext4): tritonlock asks for a
    clone only where a clone was made for real, else for copies; the user's UV_LINK_MODE is left to uv."""
    monkeypatch.delenv("UV_LINK_MODE", raising=False)
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "venv").mkdir()
    made = clones(tmp_path / "cache", tmp_path / "venv")
    assert _apply.link_mode(tmp_path / "venv") == ("clone" if made else "copy")
    assert sorted(os.listdir(tmp_path / "venv")) == [] and sorted(os.listdir(tmp_path / "cache")) == []
    probe = subprocess.run(["cp", "--reflink=always", __file__, str(tmp_path / "venv" / "probe")], capture_output=True)
    assert made == (probe.returncode == 0), probe.stderr  # (coreutils' own answer for this filesystem)
    assert not clones(tmp_path / "no-such-dir-and-a-file" / "x", Path("/proc"))
    monkeypatch.setenv("UV_LINK_MODE", "hardlink")
    assert _apply.link_mode(tmp_path / "venv") is None
