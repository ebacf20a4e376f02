"""The index client against the real local test index, and where the default index comes from."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pkgindex import LocalIndex
from tritonlock.lock import index as idx_mod
from tritonlock.errors import IndexError_
from tritonlock.lock.index import IndexClient, default_index, project_files


def test_files_over_json_with_hashes(local_index: LocalIndex) -> None:
    files = project_files(local_index.index_url("simple"), "Filelock")  # names are normalized
    assert sorted(f.filename for f in files) == ["filelock-3.12.0-py3-none-any.whl", "filelock-3.16.1-py3-none-any.whl"]
    f = next(f for f in files if "3.16.1" in f.filename)
    data = (local_index.root / "simple" / "_files" / f.filename).read_bytes()
    assert (f.sha256, f.size) == (hashlib.sha256(data).hexdigest(), len(data))
    assert f.url.startswith(local_index.url + "/simple/_files/")


def test_files_over_html_when_json_is_not_offered(local_index: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(idx_mod, "PEP691", "application/x-nothing")  # ask for what the server never sends
    files = IndexClient(local_index.index_url("whl/cu126")).files("torch")
    assert [f.filename for f in files] == ["torch-2.6.0+cu126-py3-none-manylinux_2_17_x86_64.whl",
                                           "torch-2.7.1+cu126-py3-none-manylinux_2_17_x86_64.whl"]
    assert all(f.sha256 and len(f.sha256) == 64 and f.size is None for f in files)


def test_missing_project_and_metadata(local_index: LocalIndex) -> None:
    client = IndexClient(local_index.index_url("simple"))
    assert client.files("no-such-project") == ()
    (f,) = [f for f in client.files("einops")]
    # the test index serves PEP 658 files beside wheels, as PyPI does; a file without one is None
    assert client.metadata(f) == "Metadata-Version: 2.1\nName: einops\nVersion: 0.8.0\nRequires-Dist: typing-extensions>=4\n"
    import dataclasses

    assert client.metadata(dataclasses.replace(f, url=f.url.replace("einops-0.8.0", "einops-9.9.9"))) is None


def test_unreachable_index_is_a_clean_error() -> None:
    with pytest.raises(IndexError_, match=r"cannot reach http://127.0.0.1:9/simple/torch/ .* check the address"):
        IndexClient("http://127.0.0.1:9/simple", retries=1, timeout=2).files("torch")


def test_default_index_follows_pip_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "none"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("HOME", str(tmp_path))
    conf = tmp_path / "cfg" / "pip" / "pip.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("[global]\nindex-url = https://mirror.example/simple/\n")
    default_index.cache_clear()
    try:
        monkeypatch.setattr(idx_mod, "_pip_config_files", lambda: [conf])
        assert default_index() == "https://mirror.example/simple"
        default_index.cache_clear()
        monkeypatch.setenv("PIP_INDEX_URL", "https://env.example/simple")
        assert default_index() == "https://env.example/simple"  # the environment beats pip.conf
        default_index.cache_clear()
        monkeypatch.delenv("PIP_INDEX_URL")
        monkeypatch.setattr(idx_mod, "_pip_config_files", lambda: [])
        from pip._internal.models.index import PyPI

        assert default_index() == PyPI.simple_url.rstrip("/")  # pip's own default, never a literal of ours
    finally:
        default_index.cache_clear()


def test_default_index_without_pip_is_uvs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`uv tool install tritonlock` gives a venv with no pip: the default index is then uv's own default (the same
    address pip has), never "no package index configured" (found by a new user: resolve failed with exit 4)."""
    import sys

    from pip._internal.models.index import PyPI

    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.setattr(idx_mod, "_pip_config_files", lambda: [])
    monkeypatch.setitem(sys.modules, "pip._internal.models.index", None)  # `import` of it now raises ImportError
    default_index.cache_clear()
    try:
        assert default_index() == PyPI.simple_url.rstrip("/")
    finally:
        default_index.cache_clear()


def _pips_index(env: dict[str, str]) -> str:
    """The index real pip installs from under `env` (its "Looking in indexes" line; none: pip's own default)."""
    import os
    import subprocess
    import sys

    from pip._internal.models.index import PyPI

    full = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "XDG_"))} | env
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--retries", "0",
                          "--timeout", "1", "--disable-pip-version-check", "nothere-xyz"],
                         capture_output=True, text=True, env=full).stdout
    found = [line.split(": ", 1)[1].split(",")[0] for line in out.splitlines() if line.startswith("Looking in indexes")]
    return found[0].rstrip("/") if found else PyPI.simple_url.rstrip("/")


# (files under tmp_path → their text; PIP_CONFIG_FILE: None unset, else a path under tmp_path or os.devnull;
#  XDG_CONFIG_DIRS entries; the index pip then uses)
_LAYOUTS = {
    "the user's file": ({"cfg/pip/pip.conf": "[global]\nindex-url = http://127.0.0.1:9/user\n"}, None, ["sys"],
                        "http://127.0.0.1:9/user"),
    "PIP_CONFIG_FILE beats the user's file": (
        {"cfg/pip/pip.conf": "[global]\nindex-url = http://127.0.0.1:9/user\n",
         "env.conf": "[global]\nindex-url = http://127.0.0.1:9/env\n"}, "env.conf", ["sys"], "http://127.0.0.1:9/env"),
    # a PIP_CONFIG_FILE that exists turns the user's files off, also where it does not set the option
    "PIP_CONFIG_FILE without the option hides the user's": (
        {"cfg/pip/pip.conf": "[global]\nindex-url = http://127.0.0.1:9/user\n", "env.conf": "[global]\ntimeout = 5\n",
         "sys/pip/pip.conf": "[global]\nindex-url = http://127.0.0.1:9/system\n"}, "env.conf", ["sys"],
        "http://127.0.0.1:9/system"),
    "a PIP_CONFIG_FILE that is not there hides nothing": (
        {"cfg/pip/pip.conf": "[global]\nindex-url = http://127.0.0.1:9/user\n"}, "absent.conf", ["sys"],
        "http://127.0.0.1:9/user"),
    "PIP_CONFIG_FILE=os.devnull reads no file": (
        {"cfg/pip/pip.conf": "[global]\nindex-url = http://127.0.0.1:9/user\n",
         "sys/pip/pip.conf": "[global]\nindex-url = http://127.0.0.1:9/system\n"}, "devnull", ["sys"], None),
    "the last XDG_CONFIG_DIRS entry wins": (
        {"a/pip/pip.conf": "[global]\nindex-url = http://127.0.0.1:9/a\n",
         "b/pip/pip.conf": "[global]\nindex-url = http://127.0.0.1:9/b\n"}, None, ["a", "b"], "http://127.0.0.1:9/b"),
    "[install] in a system file beats [global] in the user's": (
        {"sys/pip/pip.conf": "[install]\nindex-url = http://127.0.0.1:9/install\n",
         "cfg/pip/pip.conf": "[global]\nindex-url = http://127.0.0.1:9/user\n"}, None, ["sys"],
        "http://127.0.0.1:9/install"),
    "an empty value in a later file clears an earlier one": (
        {"sys/pip/pip.conf": "[global]\nindex-url = http://127.0.0.1:9/system\n",
         "cfg/pip/pip.conf": "[global]\nindex-url =\n"}, None, ["sys"], None),
    "an empty [install] value leaves [global]'s": (
        {"sys/pip/pip.conf": "[global]\nindex-url = http://127.0.0.1:9/system\n",
         "cfg/pip/pip.conf": "[install]\nindex-url =\n"}, None, ["sys"], "http://127.0.0.1:9/system"),
}


@pytest.mark.parametrize("layout", list(_LAYOUTS))
def test_the_default_index_is_the_one_pip_itself_uses(layout: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """pip's rules for its configuration files (PIP_CONFIG_FILE, os.devnull, the user's files, XDG_CONFIG_DIRS,
    sections, empty values), checked against real pip in the same environment."""
    import os

    from pip._internal.models.index import PyPI

    files, env_file, xdg, want = _LAYOUTS[layout]
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_CONFIG_DIRS": os.pathsep.join(str(tmp_path / d) for d in xdg)}
    if env_file is not None:
        env["PIP_CONFIG_FILE"] = os.devnull if env_file == "devnull" else str(tmp_path / env_file)
    for k in [k for k in os.environ if k.startswith(("PIP_", "XDG_"))]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    default_index.cache_clear()
    try:
        ours = default_index()
    finally:
        default_index.cache_clear()
    assert ours == (want or PyPI.simple_url.rstrip("/")), layout
    assert ours == _pips_index(env), layout
