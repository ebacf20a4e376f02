"""The console script's fast paths (issue 26): `--help` from the text click renders, a passing `check` answered again
for exactly the same inputs, and the no-op `sync`'s readers, which import nothing Python's start-up has not loaded.
Each gives what the full path gives; none is timed here (bench/startup26.py measures them)."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from tritonlock import _help, _machine
from tritonlock.environment import _noop

SCRIPT = Path(sys.executable).with_name("tritonlock")


def _console(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env={**os.environ, **(env or {})},
                          cwd=cwd, timeout=300)


def _click(*args: str, columns: str) -> str:
    code = "import sys; sys.argv = ['tritonlock', *sys.argv[1:]]\nfrom tritonlock.cli import main\nmain()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": columns}).stdout


def test_the_shipped_help_is_what_click_renders() -> None:
    sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
    from render_help import rendered, source

    assert _help.HELP == rendered(), "run `python tools/render_help.py`"
    assert (Path(_help.__file__).read_text(encoding="utf-8") == source(rendered()))


@pytest.mark.skipif(not SCRIPT.exists(), reason="needs the console script of an installed tritonlock")
def test_help_prints_what_click_prints_at_every_width() -> None:
    for columns in ("80", "120", "300"):
        fast = _console("--help", env={"COLUMNS": columns})
        assert fast.returncode == 0 and fast.stdout == _click("--help", columns=columns)
    narrow = _console("--help", env={"COLUMNS": "60"})  # narrower than 80: click wraps it, so click answers
    assert narrow.stdout == _click("--help", columns="60") and narrow.stdout != _help.HELP


@pytest.mark.skipif(not SCRIPT.exists(), reason="needs the console script of an installed tritonlock")
def test_a_passing_check_is_answered_again_only_for_the_same_inputs(tmp_path: Path, local_index: object) -> None:
    from conftest import write_intent

    proj = tmp_path / "proj"
    write_intent(proj, local_index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n')  # type: ignore[arg-type]
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "UV_PYTHON_DOWNLOADS": "never"}
    assert _console("resolve", "-p", str(proj), env=env).returncode == 0
    first = _console("check", "-p", str(proj), env=env)
    assert first.returncode == 0 and first.stdout.startswith("ok: ")
    kept = list((tmp_path / "cache" / "tritonlock" / "check").glob("*.txt"))
    assert len(kept) == 1 and kept[0].read_text().split("\n", 1)[1] == first.stdout
    # the kept answer is what prints (planted: a mark only the kept file has)
    kept[0].write_text(kept[0].read_text().replace("ok: ", "ok (kept): ", 1))
    assert _console("check", "-p", str(proj), env=env).stdout.startswith("ok (kept): ")
    # any input changed: the full check runs, and says what it finds
    intent = proj / "triton-env.toml"
    intent.write_text(intent.read_text().replace("==2.6.0", "==2.7.0"))
    stale = _console("check", "-p", str(proj), env=env)
    assert stale.returncode == 1 and "is stale" in stale.stdout
    assert len(list((tmp_path / "cache" / "tritonlock" / "check").glob("*.txt"))) == 1  # a failure is not kept
    json_run = _console("check", "-p", str(proj), "--json", env=env)
    assert json.loads(json_run.stdout)["ok"] is False


def test_the_no_op_sync_imports_nothing_heavy(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import sys
        before = set(sys.modules)
        from tritonlock._entry import _noop_sync
        _noop_sync(["sync", "--no-verify", "-p", sys.argv[1]])
        print(" ".join(sorted(set(sys.modules) - before)))
    """)
    proj = tmp_path / "p"
    (proj / ".venv").mkdir(parents=True)
    (proj / ".venv" / _noop.SYNCED).write_text('{"format": 1, "key": "x"}')
    out = subprocess.run([sys.executable, "-I", "-c", code, str(proj)], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}).stdout.split()
    assert not {"pathlib", "typing", "re", "json", "hashlib", "glob"} & set(out), out


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                       max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(JSONISH)
def test_the_marker_reader_is_json_loads(doc: object) -> None:
    for text in (json.dumps(doc), json.dumps(doc, indent=1, sort_keys=True) + "\n", " " + json.dumps(doc) + " \n"):
        assert _noop._loads(text) == json.loads(text)
    with pytest.raises(ValueError):
        _noop._loads(json.dumps(doc) + " x")


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner), max_leaves=20))
def test_the_machine_key_encoding_is_json_dumps(value: object) -> None:
    assert _machine._json(value) == json.dumps(value)
    import hashlib

    assert _machine.sha256_hex(repr(value).encode()) == hashlib.sha256(repr(value).encode()).hexdigest()


def test_the_machine_key_lists_what_glob_lists(tmp_path: Path) -> None:
    for name in ("nvidia0", "nvidia12", "nvidiactl", "nvidia-uvm", ".nvidia1", "x", "0000:01:00.0"):
        (tmp_path / name).mkdir()
    (tmp_path / "nvidia0" / "information").write_text("x")
    (tmp_path / "x" / "information").write_text("x")
    assert _machine._entries(str(tmp_path), lambda n: True, "information") == sorted(
        glob.glob(f"{tmp_path}/*/information"))
    assert _machine._entries(str(tmp_path), lambda n: n.startswith("nvidia") and len(n) > 6 and "0" <= n[6] <= "9") \
        == sorted(glob.glob(f"{tmp_path}/nvidia[0-9]*"))
    assert _machine._entries(str(tmp_path), lambda n: n.startswith("0000:")) == sorted(glob.glob(f"{tmp_path}/0000:*"))


def test_the_venv_listing_is_what_pathlib_glob_gives(tmp_path: Path) -> None:
    venv = tmp_path / "v"
    for d in ("lib/python3.11/site-packages/a-1.dist-info", "lib/python3.12/site-packages/b-2.dist-info",
              "lib/python3.12/site-packages/c.dist-info-not", "lib/pythonx/site-packages/d-1.dist-info"):
        (venv / d).mkdir(parents=True)
    (venv / "lib/python3.12/site-packages/e-1.dist-info").write_text("a file, not a folder")
    assert _noop.site_dirs(venv) == sorted((venv / "lib").glob("python3*/site-packages"))
    for site in _noop.site_dirs(venv):
        assert _noop.dist_infos(site) == sorted(p for p in site.iterdir() if p.name.endswith(".dist-info")
                                                and p.is_dir())
    assert set(_noop.fingerprint(venv)) == {"a-1.dist-info", "b-2.dist-info"}
    for v in ("proj/.venv", ".venv", ".", "a/../b/.venv"):
        assert tuple(map(str, _noop.siblings(Path(v)))) == _noop._siblings(v)


def test_a_marker_nested_too_deeply_is_not_json() -> None:
    for text in ("{" * 100000, "[" * 100000, '{"a": ' * 5000):
        with pytest.raises((ValueError, RecursionError)):
            _noop._loads(text)


@pytest.mark.skipif(not SCRIPT.exists(), reason="needs the console script of an installed tritonlock")
def test_the_kept_check_answer_imports_neither_click_nor_the_resolver(tmp_path: Path, local_index: object) -> None:
    from conftest import write_intent

    proj = tmp_path / "proj"
    write_intent(proj, local_index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n')  # type: ignore[arg-type]
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "UV_PYTHON_DOWNLOADS": "never"}
    assert _console("resolve", "-p", str(proj), env=env).returncode == 0
    assert _console("check", "-p", str(proj), env=env).returncode == 0
    code = textwrap.dedent("""
        import sys
        from tritonlock._entry import _passed_check
        text = _passed_check(["check", "-p", sys.argv[1]])
        print(text is not None, " ".join(sorted(sys.modules)))
    """)
    out = subprocess.run([sys.executable, "-I", "-c", code, str(proj)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, **env, "PYTHONPATH": str(Path(__file__).parents[1])}).stdout.split()
    assert out[0] == "True"
    assert not {"click", "tritonlock.cli", "tritonlock.decide.resolve", "tritonlock.lock.lockfile", "tomllib",
                "hashlib", "json"} & set(out[1:]), out
