"""The matrix cache is plain data: a planted file never runs code, anything we did not write is rebuilt."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from tritonlock.compat import _matrix_cache, matrix
from tritonlock._data import compat_root

EXAMPLE = Path(__file__).parents[1] / "examples" / "clusters"


class _Boom:
    """A pickle that runs a shell command when loaded (what the old cache format allowed)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


def _resolve(cache_home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    return subprocess.run([sys.executable, "-m", "tritonlock", "resolve", "--dry-run", "--json", "-p", str(EXAMPLE)],
                          capture_output=True, text=True, env=env, timeout=120)


def _cache(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    root = compat_root()
    assert root is not None
    path = matrix.cache_path(root)
    assert path is not None and path.parent == cache_home / "tritonlock"
    return path


def test_cache_round_trips_to_an_equal_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _cache(tmp_path, monkeypatch)
    root = compat_root()
    assert root is not None
    fresh = matrix._load(root)
    _matrix_cache.write(path, fresh)
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text())["version"] == fresh.version  # readable JSON, nothing else
    assert _matrix_cache.read(path, matrix.Matrix) == fresh


@pytest.mark.parametrize("payload", ["pickle", "pickle-at-old-name", "json-of-wrong-shape", "not-json"])
def test_a_planted_file_runs_no_code_and_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    payload: str) -> None:
    path = _cache(tmp_path / "cache", monkeypatch)
    marker = tmp_path / "pwned"
    path.parent.mkdir(parents=True, mode=0o700)
    evil = pickle.dumps(_Boom(marker))
    if payload == "pickle":
        path.write_bytes(evil)
    elif payload == "pickle-at-old-name":  # where tritonlock 0.1 read its pickle from
        path.with_suffix(".pickle").write_bytes(evil)
    elif payload == "json-of-wrong-shape":
        path.write_text(json.dumps({"version": 1, "__reduce__": "os.system"}))
    else:
        path.write_text("{" * 5000)
    proc = _resolve(tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert json.loads(proc.stdout)["targets"]
    assert _matrix_cache.read(path, matrix.Matrix) is not None  # replaced by a good cache


def test_a_cache_others_can_write_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _cache(tmp_path, monkeypatch)
    root = compat_root()
    assert root is not None
    good = matrix._load(root)
    _matrix_cache.write(path, good)
    doc = json.loads(path.read_text())
    doc["torch_index_template"] = "http://attacker.invalid/{backend}"
    path.write_text(json.dumps(doc))
    path.chmod(0o666)
    assert _matrix_cache.read(path, matrix.Matrix) is None
    path.chmod(0o600)
    path.parent.chmod(0o777)
    assert _matrix_cache.read(path, matrix.Matrix) is None
    path.parent.chmod(0o700)
    assert _matrix_cache.read(path, matrix.Matrix).torch_index_template.startswith("http://attacker")  # type: ignore[union-attr]
    link = path.with_name("link.json")
    link.symlink_to(path)
    assert _matrix_cache.read(link, matrix.Matrix) is None


def test_wrong_types_are_refused_not_coerced() -> None:
    root = compat_root()
    assert root is not None
    doc = _matrix_cache.encode(matrix._load(root))
    for field, bad in [("version", 2026), ("torch_family", "torch"), ("cuda", [{"version": "12.6"}]),
                       ("gpus", [{"name": "A100", "cc": 8.0, "source": "x"}])]:
        with pytest.raises(ValueError):
            _matrix_cache.decode(matrix.Matrix, {**doc, field: bad})


def test_the_cache_key_reads_the_code_of_everything_the_cached_matrix_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit to a module that defines a class the cached Matrix holds, or to the reader that checks compat/'s rows,
    must miss the cache: the key hashes each of those files (they are several modules, not matrix.py alone)."""
    import dataclasses
    import typing

    hashed: list[Path] = []
    real = Path.read_bytes

    def spy(self: Path) -> bytes:
        hashed.append(self.resolve())
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", spy)
    root = compat_root()
    assert root is not None
    assert matrix.cache_path(root) is not None
    classes, todo = set(), [matrix.Matrix]
    while todo:
        cls = todo.pop()
        if cls in classes:
            continue
        classes.add(cls)
        hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        todo += [t for h in hints.values() for t in (h, *typing.get_args(h))
                 if isinstance(t, type) and dataclasses.is_dataclass(t)]
    code = {Path(sys.modules[m].__file__ or "").resolve()
            for m in {c.__module__ for c in classes} | {matrix._Row.__module__, _matrix_cache.__name__}}
    assert len(classes) > 5 and code <= set(hashed), sorted(map(str, code - set(hashed)))
