"""`tritonlock add` / `remove` end to end (real local index, real uv, real venvs): the intent edited where it lives
with its comments and layout kept, every target locked, the venv synced — or, when any target cannot be locked,
nothing changed, byte for byte, and the error saying so."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import populate, tree, write_intent
from pkgindex import LocalIndex, build_wheel
from tritonlock.cli import main
from tritonlock.environment._venv import read_dists, site_dirs
from tritonlock.lock.lockfile import read_lock

INTENT = """\
# our training box
[environment]
python = "3.11"     # the cluster's Python
torch = "==2.6.0"
cuda = "cpu"
packages = [
  "einops",  # rearrange everywhere
]
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    """The shared fake torch family, and packages that conflict with it or move it."""
    idx = LocalIndex(tmp_path_factory.mktemp("add-index"))
    populate(idx)
    idx.add("simple", "needsold", "1.0", requires=("torch<2.0",))
    idx.add("simple", "holder", "1.0", requires=("torch<2.7",))
    idx.add("simple", "needs27", "1.0", requires=("torch>=2.7",))
    idx.add("simple", "beta", "1.0")
    idx.add("simple", "gamma", "1.0")
    idx.add("simple", "alpha", "1.0", requires=("beta>=1", 'gamma; extra == "more"'), extras=("more",))
    idx.add("simple", "onlylinux", "1.0")
    idx.add("simple", "flex", "1.0", requires=("torch<2.7",))  # its newest release needs a newer torch
    idx.add("simple", "flex", "2.0", requires=("torch>=2.7",))
    idx.start()
    yield idx
    idx.stop()


def _run(*args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the CLI in this process."""
    r = CliRunner().invoke(main, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.stdout, r.stderr


def _dists(venv: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for s in site_dirs(venv):
        out.update(read_dists(s))
    out.pop("pip", None)
    return out


def _locked(proj: Path) -> dict[str, str]:
    (t,) = read_lock(proj / "triton-env.lock").targets
    return {p.name: p.version for p in t.packages}


def _project(tmp_path: Path, idx: LocalIndex, body: str = INTENT, sync: bool = True) -> Path:
    proj = tmp_path / "proj"
    write_intent(proj, idx, body)
    code, out, err = _run("resolve", "-p", str(proj))
    assert code == 0, out + err
    if sync:
        code, out, err = _run("sync", "-p", str(proj), "--no-verify")
        assert code == 0, out + err
    return proj


def test_add_keeps_comments_locks_and_syncs(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    intent = proj / "triton-env.toml"
    before = intent.read_text()
    code, out, err = _run("add", "-p", str(proj), "alpha[more]", "onlylinux; sys_platform == 'linux'")
    assert code == 0, out + err
    # every byte the user wrote is still there; the two requirements are appended, as typed, in the array's style
    assert intent.read_text() == before.replace(
        '  "einops",  # rearrange everywhere\n',
        '  "einops",  # rearrange everywhere\n  "alpha[more]",\n  "onlylinux; sys_platform == \'linux\'",\n')
    assert ('added "alpha[more]" to [environment].packages of triton-env.toml' in out
            and 'added "onlylinux; sys_platform == \'linux\'" to [environment].packages of triton-env.toml' in out)
    # the extra's own requirement (gamma) is locked and installed too, as is alpha's plain one (beta)
    assert {"alpha": "1.0", "beta": "1.0", "gamma": "1.0", "onlylinux": "1.0"}.items() <= _locked(proj).items()
    assert {"alpha": "1.0", "beta": "1.0", "gamma": "1.0", "onlylinux": "1.0"}.items() <= _dists(proj / ".venv").items()
    assert "+ alpha 1.0 (asked for)" in out and "+ gamma 1.0 (required by alpha 1.0)" in out, out
    assert "now matches target host" in out and "not verified" in err
    # the lock is fresh: resolve has nothing to do, sync nothing to install
    assert "is up to date" in _run("resolve", "-p", str(proj))[1]
    assert "already matches" in _run("sync", "-p", str(proj), "--no-verify")[1]


def test_adding_a_conflicting_package_changes_nothing_byte_for_byte_and_exits_3(tmp_path: Path,
                                                                                 index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    files = {p: p.read_bytes() for p in (proj / "triton-env.toml", proj / "triton-env.lock")}
    venv = tree(proj / ".venv")
    code, out, err = _run("add", "-p", str(proj), "needsold")
    assert code == 3, out + err
    assert "needsold 1.0 requires torch<2.0" in err and "fix:" in err, err  # the conflict, in its own words
    assert ("nothing was changed: triton-env.toml and triton-env.lock are as they were — `tritonlock add` changes "
            "them only when every target locks") in err
    assert {p: p.read_bytes() for p in files} == files and tree(proj / ".venv") == venv
    assert "added" not in out  # what was never kept is never said to be done
    # no lock yet: the intent alone is put back, and nothing else appears
    (proj / "triton-env.lock").unlink()
    code, out, err = _run("add", "-p", str(proj), "--no-sync", "needsold")
    assert code == 3 and "triton-env.toml is as it was (no lock was written)" in err, err
    assert not (proj / "triton-env.lock").exists() and (proj / "triton-env.toml").read_bytes() == files[
        proj / "triton-env.toml"]


def test_a_package_no_index_has_exits_4_and_changes_nothing(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index, sync=False)
    files = {p: p.read_bytes() for p in (proj / "triton-env.toml", proj / "triton-env.lock")}
    code, out, err = _run("add", "-p", str(proj), "no-such-package-here")
    assert code == 4 and "no-such-package-here" in err and "nothing was changed" in err, out + err
    assert {p: p.read_bytes() for p in files} == files


def test_adding_an_existing_package_replaces_its_requirement_as_uv_does(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index, sync=False)
    intent = proj / "triton-env.toml"
    code, out, err = _run("add", "-p", str(proj), "--no-sync", "einops>=0.7")
    assert code == 0, out + err
    assert '  "einops>=0.7",  # rearrange everywhere\n' in intent.read_text()  # in place, its comment kept
    assert 'replaced "einops" with "einops>=0.7"' in out
    assert "not synced (--no-sync)" in out and not (proj / ".venv").exists()
    # the same requirement again: nothing to change, and the lock is already right
    code, out, err = _run("add", "-p", str(proj), "--no-sync", "einops >= 0.7")
    assert code == 0 and "nothing to change there" in out and "is up to date" in out, out + err
    # another marker is another requirement (uv keeps both)
    code, out, err = _run("add", "-p", str(proj), "--no-sync", "einops; sys_platform == 'win32'")
    assert code == 0, out + err
    assert intent.read_text().count('"einops') == 2
    # torch and triton are the stack's own keys in triton-env.toml
    code, out, err = _run("add", "-p", str(proj), "--no-sync", "torch==2.7.1")
    assert code == 0, out + err
    assert 'torch = "==2.7.1"\n' in intent.read_text()
    assert "torch" not in intent.read_text().split("packages")[1].split("[indexes]")[0]
    assert 'set [environment].torch of triton-env.toml to "==2.7.1" (was "==2.6.0")' in out
    assert _locked(proj)["torch"] == "2.7.1+cpu"


@pytest.mark.parametrize("bad,words", [
    ("numpy>>1", "not a requirement"), ("", "an empty requirement"),
    ("torch[cuda]>=2.6", "takes a plain version specifier"), ("triton; sys_platform == 'linux'", "plain version"),
])
def test_a_requirement_add_cannot_take_is_bad_input_and_nothing_is_written(tmp_path: Path, index: LocalIndex,
                                                                          bad: str, words: str) -> None:
    proj = _project(tmp_path, index, sync=False)
    before = (proj / "triton-env.toml").read_bytes()
    code, out, err = _run("add", "-p", str(proj), bad)
    assert code == 2 and words in err, out + err
    assert (proj / "triton-env.toml").read_bytes() == before


def test_add_a_wheel_by_url_and_remove_it_again(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    wheel = build_wheel(tmp_path / "wheels", "localthing", "0.3")
    code, out, err = _run("add", "-p", str(proj), f"localthing @ {wheel.as_uri()}")
    assert code == 0, out + err
    assert _locked(proj)["localthing"] == "0.3" and _dists(proj / ".venv")["localthing"] == "0.3"
    code, out, err = _run("remove", "-p", str(proj), "localthing")
    assert code == 0, out + err
    assert "localthing" not in (proj / "triton-env.toml").read_text()
    assert "localthing" not in _locked(proj) and "localthing" not in _dists(proj / ".venv")
    assert "- localthing 0.3 (no longer required)" in out


def test_remove_takes_the_package_and_what_only_it_required_out_of_lock_and_venv(tmp_path: Path,
                                                                                 index: LocalIndex) -> None:
    body = INTENT.replace('  "einops",  # rearrange everywhere\n',
                          '  "einops",  # rearrange everywhere\n  "alpha",  # the model\n')
    proj = _project(tmp_path, index, body)
    intent = proj / "triton-env.toml"
    assert {"alpha", "beta"} <= set(_dists(proj / ".venv"))
    code, out, err = _run("remove", "-p", str(proj), "Alpha")  # any spelling of the name
    assert code == 0, out + err
    assert intent.read_text() == INTENT.replace("\n[indexes]", "\n[indexes]") + intent.read_text()[len(INTENT):]
    assert 'removed "alpha" from [environment].packages of triton-env.toml' in out
    assert not {"alpha", "beta"} & set(_locked(proj)) and not {"alpha", "beta"} & set(_dists(proj / ".venv"))
    assert _dists(proj / ".venv")["einops"] == "0.8.0"
    # a package the intent does not name: bad input, nothing changed (a dependency leaves with what requires it)
    before = intent.read_bytes(), (proj / "triton-env.lock").read_bytes()
    code, out, err = _run("remove", "-p", str(proj), "typing-extensions")
    assert code == 2 and "does not name 'typing-extensions' in [environment].packages" in err, err
    assert (intent.read_bytes(), (proj / "triton-env.lock").read_bytes()) == before
    code, out, err = _run("remove", "-p", str(proj), "torch")
    assert code == 2 and "change it with `tritonlock add \"torch>=…\"`" in err, err


def test_add_and_remove_keep_every_other_pin(tmp_path: Path, index: LocalIndex) -> None:
    """As uv: the lock's pins stay where the change does not force them; only what was asked for (and what it
    forces) moves — a newer filelock published since the lock was written stays out."""
    own = LocalIndex(tmp_path / "own-index")
    populate(own)
    own.start()
    try:
        proj = _project(tmp_path, own, sync=False)
        assert _locked(proj)["filelock"] == "3.16.1"
        own.add("simple", "filelock", "3.17.0")
        own.add("simple", "delta", "1.0", requires=("typing-extensions>=4",))
        code, out, err = _run("add", "-p", str(proj), "--no-sync", "delta")
        assert code == 0, out + err
        assert _locked(proj)["filelock"] == "3.16.1" and _locked(proj)["delta"] == "1.0"
        assert "+ delta 1.0 (asked for)" in out and "every other pin kept as the lock had it" in out, out
        code, out, err = _run("remove", "-p", str(proj), "--no-sync", "delta")
        assert code == 0 and _locked(proj)["filelock"] == "3.16.1" and "delta" not in _locked(proj), out + err
        # a plain re-resolve takes the newest, as it always has
        assert _run("resolve", "-p", str(proj), "--upgrade")[0] == 0 and _locked(proj)["filelock"] == "3.17.0"
    finally:
        own.stop()


def test_what_an_added_package_forces_moves_and_nothing_else(tmp_path: Path, index: LocalIndex) -> None:
    """torch is held where the lock had it unless the package asked for needs another one: holder keeps torch at
    2.6; without it torch stays at 2.6 (remove moves nothing); needs27 then moves torch — it forces it."""
    body = INTENT.replace('torch = "==2.6.0"', 'torch = ">=2.6"').replace('  "einops",', '  "einops",\n  "holder",')
    proj = _project(tmp_path, index, body, sync=False)
    assert _locked(proj)["torch"] == "2.6.0+cpu"
    code, out, err = _run("add", "-p", str(proj), "--no-sync", "needs27")
    assert code == 3 and "holder" in err and "nothing was changed" in err, out + err
    code, out, err = _run("remove", "-p", str(proj), "--no-sync", "holder")
    assert code == 0, out + err
    assert _locked(proj)["torch"] == "2.6.0+cpu"  # kept: nothing asked for a newer one
    code, out, err = _run("add", "-p", str(proj), "--no-sync", "needs27")
    assert code == 0, out + err
    assert _locked(proj)["torch"] == "2.7.1+cpu" and _locked(proj)["needs27"] == "1.0"
    assert "~ torch 2.6.0+cpu -> 2.7.1+cpu (required by needs27 1.0)" in out, out


def test_an_added_package_gets_its_newest_release_even_where_that_moves_torch(tmp_path: Path,
                                                                                index: LocalIndex) -> None:
    """flex 1.0 fits the lock's torch 2.6, flex 2.0 needs 2.7: holding torch would add an old flex, so torch moves
    (as `resolve` would give it flex 2.0); a package the lock keeps stays."""
    body = INTENT.replace('torch = "==2.6.0"', 'torch = ">=2.6"').replace('  "einops",', '  "einops",\n  "holder",')
    proj = _project(tmp_path, index, body, sync=False)
    assert _run("remove", "-p", str(proj), "--no-sync", "holder")[0] == 0
    assert _locked(proj)["torch"] == "2.6.0+cpu"
    code, out, err = _run("add", "-p", str(proj), "--no-sync", "flex")
    assert code == 0, out + err
    assert _locked(proj)["flex"] == "2.0" and _locked(proj)["torch"] == "2.7.1+cpu", out
    assert _locked(proj)["einops"] == "0.8.0"


def test_add_edits_a_pyproject_intent_where_uv_would(tmp_path: Path, index: LocalIndex) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    text = ('[project]\nname = "mytrainer"\nversion = "0.1"\n# what we import\ndependencies = [\n'
            '    "einops",  # tensors\n]\n\n[tool.tritonlock.environment]\npython = "3.11"\ntorch = "==2.6.0"\n'
            f'cuda = "cpu"\n\n[tool.tritonlock.indexes]\ntorch = "{index.url}/whl/{{backend}}"\n'
            f'default = "{index.index_url("simple")}"\n')
    (proj / "pyproject.toml").write_text(text)
    code, out, err = _run("add", "-p", str(proj), "--no-sync", "beta>=1")
    assert code == 0, out + err
    assert (proj / "pyproject.toml").read_text() == text.replace('    "einops",  # tensors\n',
                                                                 '    "einops",  # tensors\n    "beta>=1",\n')
    assert 'added "beta>=1" to [project].dependencies of pyproject.toml' in out
    assert _locked(proj)["beta"] == "1.0"
    code, out, err = _run("remove", "-p", str(proj), "--no-sync", "beta")
    assert code == 0 and (proj / "pyproject.toml").read_text() == text, out + err


def test_the_edit_keeps_a_bom_crlf_and_a_dotted_table(tmp_path: Path) -> None:
    from tritonlock.intent.edit import add, remove

    path = tmp_path / "triton-env.toml"
    raw = '\ufeff# x\r\nenvironment.packages = ["einops"] # mine\r\nenvironment.torch = "==2.6.0"\r\n'
    path.write_bytes(raw.encode())
    edit = add(path, ["beta"])
    assert edit.after == raw.replace('["einops"]', '["einops", "beta"]').encode()
    assert path.read_bytes() == raw.encode()  # nothing is written by the edit itself
    path.write_bytes(edit.after)
    assert remove(path, ["beta"]).after == raw.encode()
    # no [environment] table at all: one is made for the packages
    path.write_text('# only indexes\n[indexes]\ndefault = "https://mirror.example/simple"\n')
    assert add(path, ["beta"]).after.decode().endswith('\n[environment]\npackages = ["beta"]\n')


def test_an_edit_that_would_make_the_intent_invalid_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    from tritonlock.errors import IntentError
    from tritonlock.intent.edit import add

    path = tmp_path / "triton-env.toml"
    path.write_text('[environment]\npackages = []\n')
    with pytest.raises(IntentError) as err:
        add(path, ["pkg @ https://user:secret@host.example/pkg-1.0-py3-none-any.whl"])
    assert "credentials" in str(err.value) and "nothing was changed" in str(err.value) and "secret" not in str(err.value)
    assert path.read_text() == '[environment]\npackages = []\n'

    path.write_text('[environment]\npackages = "einops"\n')  # the file itself is not a valid intent: its error
    with pytest.raises(IntentError, match=r"triton-env.toml:2: environment\.packages: expected a list"):
        add(path, ["beta"])


def test_add_with_no_intent_says_to_init_first(tmp_path: Path) -> None:
    code, out, err = _run("add", "-p", str(tmp_path), "einops")
    assert code == 2 and "run `tritonlock init`" in err, err
    assert not any(tmp_path.iterdir())


def test_add_from_the_console_script_exits_3_and_leaves_the_files(tmp_path: Path, index: LocalIndex) -> None:
    """The real process, as the held-out session runs it: exit 3, both files byte for byte."""
    proj = _project(tmp_path, index, sync=False)
    files = {p: p.read_bytes() for p in (proj / "triton-env.toml", proj / "triton-env.lock")}
    r = subprocess.run([sys.executable, "-m", "tritonlock", "add", "needsold"], cwd=proj, capture_output=True,
                       text=True, env={**os.environ, "NO_COLOR": "1"})
    assert r.returncode == 3, r
    assert "Traceback" not in r.stderr and "nothing was changed" in r.stderr
    assert {p: p.read_bytes() for p in files} == files


def test_add_changes_nothing_while_any_target_cannot_be_locked(tmp_path: Path, index: LocalIndex) -> None:
    """`resolve` locks the targets that fit and records the others as conflicts (exit 3); `add` changes the files
    only when every target locks: with one target that cannot (Python 3.14 for torch 2.6), nothing changes."""
    body = ('[environment]\ntorch = "==2.6.0"\ncuda = "cpu"\npackages = ["einops"]\n\n'
            '[[targets]]\nname = "laptop"\nglibc = "2.35"\npython = "3.11"\n\n'
            '[[targets]]\nname = "new-python"\nglibc = "2.35"\npython = "3.14"\n')
    proj = tmp_path / "proj"
    write_intent(proj, index, body)
    code, out, err = _run("resolve", "-p", str(proj))
    assert code == 3 and "1 recorded as a conflict (new-python)" in out, out + err
    files = {p: p.read_bytes() for p in (proj / "triton-env.toml", proj / "triton-env.lock")}
    asked = len(index.requests)
    code, out, err = _run("add", "-p", str(proj), "typing-extensions")
    assert code == 3, out + err
    assert len(index.requests) == asked  # refused before anything was locked: no index was asked
    assert "torch 2.6.0: supports Python 3.9–3.13, not 3.14" in err and "nothing was changed" in err
    assert {p: p.read_bytes() for p in files} == files and not (proj / ".venv").exists()
