"""tritonlock's folder in the user's cache, one rule for every cache it keeps (the kept check, the kept interpreter,
the native facts, the host, the matrix, the venv locks): $XDG_CACHE_HOME when it is absolute, else ~/.cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tritonlock._files import user_cache


def test_an_absolute_xdg_cache_home_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert user_cache() == os.path.join(str(tmp_path), "tritonlock")
    assert user_cache("check", "x") == os.path.join(str(tmp_path), "tritonlock", "check", "x")


@pytest.mark.parametrize("value", ["", "relative/cache", ".cache", "~/.cache"])
def test_an_unset_empty_or_relative_xdg_cache_home_means_the_home_cache(value: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The XDG base directory rules: a relative path is invalid and ignored (it would land in the working folder)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", value)
    assert user_cache("pythons") == os.path.join(str(tmp_path), ".cache", "tritonlock", "pythons")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert user_cache() == os.path.join(str(tmp_path), ".cache", "tritonlock")


def test_every_cache_tritonlock_keeps_is_under_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tritonlock import _kept, _subprocess
    from tritonlock.native.read import cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("TRITONLOCK_NATIVE_CACHE", raising=False)
    root = os.path.join(str(tmp_path), "tritonlock")
    assert _kept._folder() == os.path.join(root, "check")
    assert str(cache_dir()).startswith(root + os.sep)
    assert _subprocess._kept_file("3.12").startswith(os.path.join(root, "pythons") + os.sep)
