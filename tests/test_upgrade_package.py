"""`resolve --upgrade-package NAME`: only NAME and what it forces move, every other pin as the lock had it (uv's way:
the lock's versions are preferences); torch's decision stays unless NAME is torch's family; what moved is said."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import populate, write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.lock.lockfile import read_lock

INTENT = """
[environment]
python = "3.11"
torch = "{torch}"
cuda = "cpu"
packages = ["alpha", "gamma"]
"""


def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.stdout, r.stderr


def _locked(proj: Path) -> dict[str, str]:
    (t,) = read_lock(proj / "triton-env.lock").targets
    return {p.name: p.version for p in t.packages}


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, LocalIndex]:
    """A project locked yesterday; today every package it holds has a newer release."""
    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    idx.add("simple", "alpha", "1.0", requires=("beta>=1",))
    idx.add("simple", "beta", "1.0")
    idx.add("simple", "gamma", "1.0", requires=("delta",))
    idx.add("simple", "delta", "1.0")
    idx.start()
    proj = tmp_path / "proj"
    write_intent(proj, idx, INTENT.format(torch="==2.6.0"))
    code, out, err = _run("resolve", "-p", str(proj))
    assert code == 0, out + err
    idx.add("simple", "alpha", "2.0", requires=("beta>=2",))  # alpha 2.0 forces beta up
    idx.add("simple", "beta", "2.0")
    idx.add("simple", "gamma", "1.1", requires=("delta",))
    idx.add("simple", "delta", "1.1")
    idx.add("simple", "filelock", "3.17.0")
    yield proj, idx
    idx.stop()


BEFORE = {"alpha": "1.0", "beta": "1.0", "gamma": "1.0", "delta": "1.0", "filelock": "3.16.1", "numpy": "1.26.4",
          "torch": "2.6.0+cpu", "triton": "3.2.0"}


def test_only_the_package_and_what_it_forces_move(world: tuple[Path, LocalIndex]) -> None:
    proj, _ = world
    assert _locked(proj) == BEFORE
    code, out, err = _run("resolve", "-p", str(proj), "--upgrade-package", "alpha")
    assert code == 0, out + err
    assert _locked(proj) == {**BEFORE, "alpha": "2.0", "beta": "2.0"}
    assert ("wrote " + str(proj / "triton-env.lock") + " (1 target, 8 packages; --upgrade-package alpha; every other "
            "pin kept)") in out
    assert out.endswith("target host:\n"
                        "  ~ alpha 1.0 -> 2.0 (asked for)\n"
                        "  ~ beta 1.0 -> 2.0 (required by alpha 2.0)\n"
                        "  every other pin kept as the lock had it (6 packages)\n"), out
    # the lock's decision says why torch and the kept package are where they are
    (t,) = read_lock(proj / "triton-env.lock").targets
    assert t.selection.packages == ("alpha", "gamma", "numpy")  # the intent's words, not the pins it was held by
    assert any(r.startswith("packages kept as the lock had it (--upgrade-package alpha") and "gamma 1.0" in r
               for r in t.selection.reasons), t.selection.reasons
    assert "ok: " in _run("check", "-p", str(proj))[1]  # and the lock is fresh and right for CI


def test_a_transitive_package_moves_alone_and_a_second_name_too(world: tuple[Path, LocalIndex]) -> None:
    proj, _ = world
    code, out, err = _run("resolve", "-p", str(proj), "-P", "filelock", "--upgrade-package", "delta")
    assert code == 0, out + err
    assert _locked(proj) == {**BEFORE, "filelock": "3.17.0", "delta": "1.1"}
    assert "~ filelock 3.16.1 -> 3.17.0 (asked for)" in out and "~ delta 1.0 -> 1.1 (asked for)" in out
    # asked for, already at its newest: it stays, and says so
    code, out, err = _run("resolve", "-p", str(proj), "-P", "delta")
    assert code == 0 and "= delta 1.1: stays — already the newest release the rest of the lock allows" in out, out


def test_torch_stays_unless_it_is_asked_for(world: tuple[Path, LocalIndex]) -> None:
    proj, _ = world
    intent = proj / "triton-env.toml"
    intent.write_text(INTENT.format(torch=">=2.6") + intent.read_text().split("\n[indexes]", 1)[1].join(
        ["\n[indexes]", ""]))
    code, out, err = _run("resolve", "-p", str(proj), "-P", "gamma")
    assert code == 0, out + err
    assert _locked(proj) == {**BEFORE, "gamma": "1.1"}  # delta is not forced (gamma 1.1 takes any delta)
    (t,) = read_lock(proj / "triton-env.lock").targets
    assert t.selection.reasons[0].startswith("torch 2.6.0: kept as the lock had it (triton-env.lock; "
                                             "--upgrade-package gamma moves only it and what it forces)")
    code, out, err = _run("resolve", "-p", str(proj), "-P", "torch")
    assert code == 0, out + err
    assert _locked(proj) == {**BEFORE, "gamma": "1.1", "torch": "2.7.1+cpu", "triton": "3.3.1"}
    assert "~ torch 2.6.0+cpu -> 2.7.1+cpu (asked for)" in out and "~ triton 3.2.0 -> 3.3.1" in out, out


@pytest.mark.parametrize("args,words", [
    (["-P", "nosuchpkg"], "--upgrade-package nosuchpkg: "),
    (["-P", "alpha", "--upgrade"], "does not go with it"),
    (["-P", "alpha", "--dry-run"], "does not go with it"),
])
def test_what_upgrade_package_cannot_do_is_bad_input(world: tuple[Path, LocalIndex], args: list[str],
                                                      words: str) -> None:
    proj, _ = world
    before = (proj / "triton-env.lock").read_bytes()
    code, out, err = _run("resolve", "-p", str(proj), *args)
    assert code == 2 and words in err, out + err
    assert (proj / "triton-env.lock").read_bytes() == before


def test_upgrade_package_without_a_lock_says_to_resolve(tmp_path: Path, local_index: LocalIndex) -> None:
    write_intent(tmp_path, local_index, INTENT.format(torch="==2.6.0"))
    code, out, err = _run("resolve", "-p", str(tmp_path), "-P", "alpha")
    assert code == 2 and "there is none — run `tritonlock resolve` first" in err, err
    assert not (tmp_path / "triton-env.lock").exists()
