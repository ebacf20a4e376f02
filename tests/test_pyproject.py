"""The intent inside a user's pyproject.toml: [tool.tritonlock] + [project].dependencies, found from a subdirectory,
added by `init --pyproject` without touching the rest, and its lock stale only when what it locks changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.errors import IntentError
from tritonlock.intent.read import read_intent

PYPROJECT = """\
# the team's project
[project]
name = "myproj"
version = "0.1.0"
description = "a model"
requires-python = ">=3.10"
dependencies = [
  "torch==2.6.0",
  "einops>=0.8",
]

[project.optional-dependencies]
train = ["numpy>=1.26"]
dev = ["pytest"]

[tool.ruff]
line-length = 100
"""


def _table(idx: LocalIndex, extras: str = "") -> str:
    return (f'\n[tool.tritonlock]\n{extras}\n[tool.tritonlock.environment]\npython = "3.11"\n'
            f'\n[tool.tritonlock.indexes]\ntorch = "{idx.url}/whl/{{backend}}"\ndefault = "{idx.index_url("simple")}"\n'
            '\n[[tool.tritonlock.targets]]\nname = "a100"\ndriver = "550.54.15"\ngpus = ["8.0"]\n')


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def test_dependencies_and_selected_extras_are_the_packages(tmp_path: Path, local_index: LocalIndex) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT + _table(local_index, 'extras = ["train"]'))
    intent = read_intent(tmp_path / "pyproject.toml")
    assert intent.packages == ("einops>=0.8", "numpy>=1.26")  # dev is not selected; torch is the torch specifier
    assert intent.torch == "==2.6.0"
    assert [t.name for t in intent.targets] == ["a100"]
    assert intent.torch_index == f"{local_index.url}/whl/{{backend}}"


def test_torch_in_both_places_means_both_hold(tmp_path: Path) -> None:
    text = PYPROJECT.replace('"torch==2.6.0"', '"torch>=2.6"') + '[tool.tritonlock.environment]\ntorch = "<2.8"\n'
    (tmp_path / "pyproject.toml").write_text(text)
    assert read_intent(tmp_path / "pyproject.toml").torch == "<2.8,>=2.6"


def test_problems_name_the_pyproject_line_and_the_full_key(tmp_path: Path) -> None:
    text = PYPROJECT.replace('"einops>=0.8"', '"einops>>0.8"') + (
        '[tool.tritonlock]\nextras = ["trian"]\n[tool.tritonlock.environment]\npython = "3.11"\ncuda = "cu999"\n')
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(IntentError) as err:
        read_intent(tmp_path / "pyproject.toml")
    lines = str(err.value).splitlines()
    assert lines[0] == f"3 problems in {tmp_path / 'pyproject.toml'}:"
    where = f"{tmp_path / 'pyproject.toml'}"
    assert any(line.strip().startswith(f"{where}:19: tool.tritonlock.extras[0]: 'trian' is not a group in "
                                       "[project.optional-dependencies] — did you mean \"train\"? (its groups: dev, train)")
               for line in lines)
    assert any(line.strip().startswith(f"{where}:7: project.dependencies[1]: 'einops>>0.8' is not a valid requirement")
               for line in lines)
    assert any(line.strip().startswith(f"{where}:22: tool.tritonlock.environment.cuda: unknown backend 'cu999'")
               for line in lines)


def test_torch_with_a_marker_is_refused_with_the_key(tmp_path: Path) -> None:
    text = PYPROJECT.replace('"torch==2.6.0"', '"torch>=2.6; sys_platform == \'linux\'"') + "[tool.tritonlock]\n"
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(IntentError, match=r"pyproject.toml:7: project.dependencies\[0\]: .*tritonlock picks torch's "
                                          r"build per target"):
        read_intent(tmp_path / "pyproject.toml")


def test_dynamic_dependencies_cannot_be_locked(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\ndynamic = ["dependencies"]\n'
                                             "[tool.tritonlock]\n")
    with pytest.raises(IntentError, match=r"pyproject.toml:4: project.dynamic: the dependencies are dynamic"):
        read_intent(tmp_path / "pyproject.toml")


def test_found_from_a_subdirectory_and_a_pyproject_without_the_table_is_not_a_project(
        tmp_path: Path, local_index: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT + _table(local_index))
    sub = tmp_path / "src" / "pkg"
    sub.mkdir(parents=True)
    (sub / "pyproject.toml").write_text('[project]\nname = "inner"\n# [tool.tritonlock] only in a comment\n')
    monkeypatch.chdir(sub)
    code, out = _run("resolve", "--dry-run")
    assert code == 0, out
    assert "target a100: torch 2.6.0 (cu124)" in out


def test_both_intent_files_is_a_clear_error(tmp_path: Path, local_index: LocalIndex) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT + _table(local_index))
    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.11"\n')
    code, out = _run("resolve", "--dry-run", "-p", str(tmp_path))
    assert code == 2
    assert (f"error: {tmp_path / 'triton-env.toml'} and {tmp_path / 'pyproject.toml'} ([tool.tritonlock]) both state "
            "this project's intent — keep one") in out


def test_init_pyproject_adds_the_table_and_keeps_every_other_byte(tmp_path: Path, local_index: LocalIndex) -> None:
    original = PYPROJECT.replace("\n", "\r\n").encode() + b"[tool.other]\nx = 'no newline at end'"
    (tmp_path / "pyproject.toml").write_bytes(original)
    code, out = _run("init", "--pyproject", "--no-index-check", "-p", str(tmp_path))
    assert code == 0, out
    new = (tmp_path / "pyproject.toml").read_bytes()
    assert new.startswith(original + b"\n")  # everything before the table, byte for byte
    assert not (tmp_path / "triton-env.toml").exists()
    intent = read_intent(tmp_path / "pyproject.toml")  # the added table reads back
    assert intent.packages == ("einops>=0.8",) and intent.torch == "==2.6.0"  # torch from [project], not the starter
    code, out = _run("init", "--pyproject", "--no-index-check", "-p", str(tmp_path))
    assert code == 2 and "already has a [tool.tritonlock] table" in out
    assert (tmp_path / "pyproject.toml").read_bytes() == new


def test_lock_from_pyproject_goes_stale_on_dependencies_not_on_description(tmp_path: Path,
                                                                            local_index: LocalIndex) -> None:
    py = tmp_path / "pyproject.toml"
    py.write_text(PYPROJECT + _table(local_index))
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0, out
    lock = (tmp_path / "triton-env.lock").read_text()
    assert 'name = "einops"' in lock and 'name = "torch"' in lock
    py.write_text(py.read_text().replace('description = "a model"', 'description = "a better model"')
                  .replace('version = "0.1.0"', 'version = "0.2.0"'))
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0 and "is up to date" in out, out
    from tritonlock._fast import lock_is_fresh

    assert lock_is_fresh(py, tmp_path / "triton-env.lock", None)  # the fast path agrees: no TOML re-resolve
    code, out = _run("check", "-p", str(tmp_path))
    assert code == 0, out
    py.write_text(py.read_text().replace('"einops>=0.8",', '"einops>=0.8",\n  "typing-extensions>=4",'))
    assert not lock_is_fresh(py, tmp_path / "triton-env.lock", None)
    code, out = _run("check", "-p", str(tmp_path))
    assert code == 1 and f"{py} changed since the lock was written" in out, out
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0, out
    assert 'name = "typing-extensions"' in (tmp_path / "triton-env.lock").read_text()
    assert os.path.exists(tmp_path / "triton-env.lock") and not (tmp_path / "triton-env.toml").exists()


@pytest.mark.parametrize("req", ["torch[,]", "torch[a,,b]", "einops[,]", "torch[cuda,]"])
def test_a_requirement_packaging_refuses_is_a_clean_error_never_a_traceback(tmp_path: Path, req: str) -> None:
    """The quick check of a requirement once let through what packaging refuses, and the next parse raised."""
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "x"\nversion = "1"\ndependencies = ["{req}"]\n'
                                             '[tool.tritonlock.environment]\npython = "3.11"\n')
    r = CliRunner().invoke(main, ["resolve", "--dry-run", "-p", str(tmp_path)])
    assert r.exit_code == 2 and r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert f"project.dependencies[0]: '{req}' is not a valid requirement" in r.output, r.output


@pytest.mark.parametrize("deps", ["1", '"torch"', "{ torch = 1 }", "true"])
def test_init_pyproject_when_dependencies_is_not_a_list(tmp_path: Path, deps: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "x"\nversion = "1"\ndependencies = {deps}\n')
    r = CliRunner().invoke(main, ["init", "--pyproject", "--no-index-check", "-p", str(tmp_path)])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code == 0 and "[tool.tritonlock]" in (tmp_path / "pyproject.toml").read_text(), r.output
    r = CliRunner().invoke(main, ["resolve", "--dry-run", "-p", str(tmp_path)])  # and resolve names the problem
    assert r.exit_code == 2 and "project.dependencies: expected a list of requirement strings" in r.output, r.output
def test_init_pyproject_where_only_the_default_index_answers_then_resolve_works(
        tmp_path: Path, local_index: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """The only-PyPI machine, pyproject way: the torch = "default" its note says it wrote is set (not commented out
    as the [environment] torch was), and resolve works — no loop of fixes that the file ignores."""
    from tritonlock.compat.matrix import Matrix
    from tritonlock.lock.index import default_index

    default_index.cache_clear()
    monkeypatch.setenv("PIP_INDEX_URL", local_index.index_url("simple"))
    monkeypatch.setattr(Matrix, "index_url", lambda self, backend: f"http://127.0.0.1:9/whl/{backend}")
    py = tmp_path / "pyproject.toml"
    py.write_text(PYPROJECT)  # its dependencies name torch==2.6.0
    code, out = _run("init", "--pyproject", "-p", str(tmp_path))
    default_index.cache_clear()
    assert code == 0, out
    assert '([tool.tritonlock.indexes] torch = "default")' in out, out
    intent = read_intent(py)
    assert intent.torch_index == "default" and intent.torch == "==2.6.0"
    assert '\ntorch = "default"' in py.read_text()  # the line the note names, as a line the reader takes
    code, out = _run("resolve", "-p", str(tmp_path))
    default_index.cache_clear()
    assert code == 0, out
    assert f"index: {local_index.index_url('simple')}" in out


def test_an_unreachable_torch_index_fix_names_the_pyproject_table(tmp_path: Path, local_index: LocalIndex,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """resolve's way out for a pyproject project names [tool.tritonlock.indexes] (a top-level [indexes] there is not
    read); doing what it says makes the next resolve work."""
    from tritonlock.lock.index import default_index

    default_index.cache_clear()
    monkeypatch.setenv("PIP_INDEX_URL", local_index.index_url("simple"))
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    py = tmp_path / "pyproject.toml"
    py.write_text(PYPROJECT + '\n[tool.tritonlock.environment]\npython = "3.11"\n'
                  '\n[tool.tritonlock.indexes]\ntorch = "http://127.0.0.1:9/whl/{backend}"\n')
    code, out = _run("resolve", "-p", str(tmp_path))
    default_index.cache_clear()
    assert code == 4, out
    assert f"fix: take torch from the default index — add to {py}:\n    [tool.tritonlock.indexes]\n" in out, out
    assert "    [indexes]\n" not in out and "triton-env.toml" not in out
    py.write_text(py.read_text().replace('torch = "http://127.0.0.1:9/whl/{backend}"', 'torch = "default"'))
    code, out = _run("resolve", "-p", str(tmp_path))
    default_index.cache_clear()
    assert code == 0, out


def test_a_self_reference_in_the_dependencies_pulls_in_its_group(tmp_path: Path, local_index: LocalIndex) -> None:
    """`"myproj[train]"` in [project].dependencies installs the train group with the project: it is locked (not
    dropped with the self-reference), and a change to that group makes the lock stale."""
    text = PYPROJECT.replace('  "einops>=0.8",\n', '  "einops>=0.8",\n  "MyProj[train]",\n')
    py = tmp_path / "pyproject.toml"
    py.write_text(text + _table(local_index))
    intent = read_intent(py)
    assert intent.packages == ("einops>=0.8", "numpy>=1.26"), intent.packages  # dev is still not selected
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0, out
    assert 'name = "numpy"' in (tmp_path / "triton-env.lock").read_text()
    py.write_text(py.read_text().replace('train = ["numpy>=1.26"]', 'train = ["numpy>=1.26", "typing-extensions>=4"]'))
    code, out = _run("check", "-p", str(tmp_path))
    assert code == 1 and "changed since the lock was written" in out, out


def test_groups_chained_through_the_projects_name_are_each_taken_once_in_order() -> None:
    """g0 pulls in "myproj[g1]", g1 "MyProj[G2]" (the names in any case), …: every group in the chain, each once
    and in the order found, a cycle ending where it closes; the digest a lock keeps holds exactly those groups (the
    5,000-group chain of the attack run, read in linear time: bench/chained_groups_bench.py)."""
    import json

    from tritonlock._discover import intent_bytes, pyproject_groups

    n = 5000
    groups = {f"g{i}": ([f"MyProj[G{i + 1}]"] if i % 2 else [f"myproj[g{i + 1}]"]) + [f"pkg{i}"] for i in range(n)}
    groups["g4999"] = ["myproj[g0, g17]", "pkg4999"]  # back to the start: a cycle
    groups["unused"] = ["nothing"]
    project = {"name": "myproj", "dependencies": ["einops"], "optional-dependencies": groups}
    assert pyproject_groups(project, ["g0"]) == [f"g{i}" for i in range(n)]
    again = pyproject_groups(project, ["g4998"])
    assert again[:4] == ["g4998", "g4999", "g0", "g17"] and sorted(again) == sorted(groups.keys() - {"unused"})
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        py = Path(tmp) / "pyproject.toml"
        py.write_text('[project]\nname = "myproj"\ndependencies = ["einops"]\n[project.optional-dependencies]\n'
                      + "".join(f"{k} = {json.dumps(v)}\n" for k, v in groups.items())
                      + 'G0 = ["shadowed"]\n[tool.tritonlock]\nextras = ["g4990"]\n')
        doc = json.loads(intent_bytes(py).decode().removeprefix("pyproject:"))
    chosen = doc["optional-dependencies"]
    # from g4990 to g4999, then g0 — which G0 replaces, chaining no further — and g17 on to g4989
    assert list(chosen) == sorted(chosen) and set(chosen) == {"g0"} | {f"g{i}" for i in range(17, n)}, len(chosen)
    assert chosen["g0"] == ["shadowed"] and chosen["g20"] == groups["g20"]  # (G0 is g0: the later key wins, as read)
