"""A release a package pins that its index has yanked (PEP 592), or a pre-release it pins beside the same package named
plainly: uv takes either only where a requirement the user writes pins it, so the package cannot be locked until the
user does — the conflict says so, and the pin works (sglang 0.5.3 pins transformers 4.57.0, which PyPI yanked: "Error
in the setup causing installation issues", and flashinfer-python 0.4.0rc3). And a pin with a local label its index
does not serve ("torchvision==0.20.1+cu124", as `pip freeze` writes PyTorch's builds, against PyPI)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.compat.matrix import load_matrix
from tritonlock.lock.lockfile import read_lock

LINUX = "py3-none-manylinux_2_17_x86_64"
CP = "cp311-cp311-manylinux_2_17_x86_64"
H100 = 'driver = "580.95.05"\ngpus = ["9.0"]\nglibc = "2.35"'


@pytest.fixture(scope="module")
def yanks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("yanked-index"))
    rel = load_matrix().torch_release("2.11.0")
    assert rel is not None and rel.triton
    idx.add("simple", "triton", rel.triton, tag=LINUX)
    idx.add("simple", "nvidia-cuda-runtime", "13.0.96", tag=LINUX, modules={"nvidia/cu13/lib/README": ""})
    idx.add("simple", "torch", "2.11.0", tag=CP, modules={"torch/__init__.py": ""},
            requires=("nvidia-cuda-runtime==13.0.96", f"triton=={rel.triton}; platform_system == 'Linux'"))
    for v in ("0.9", "1.0"):
        idx.add("simple", "yankdep", v, tag="py3-none-any", modules={"yankdep/__init__.py": ""})
    idx.yanked["yankdep-1.0-py3-none-any.whl"] = "Error in the setup"
    idx.add("simple", "yankapp", "1.0", tag="py3-none-any", requires=("torch>=2.10", "yankdep==1.0"),
            modules={"yankapp/__init__.py": ""})
    # the same, yanked without a reason
    idx.add("simple", "quietdep", "2.0", tag="py3-none-any", modules={"quietdep/__init__.py": ""})
    idx.yanked["quietdep-2.0-py3-none-any.whl"] = ""
    idx.add("simple", "quietapp", "1.0", tag="py3-none-any", requires=("quietdep==2.0",),
            modules={"quietapp/__init__.py": ""})
    # a pre-release a package pins, beside the same package named plainly (uv shuts the pre-release out)
    for v in ("1.0", "2.0rc1"):
        idx.add("simple", "predep", v, tag="py3-none-any", modules={"predep/__init__.py": ""})
    idx.add("simple", "preapp", "1.0", tag="py3-none-any", requires=("predep==2.0rc1",),
            modules={"preapp/__init__.py": ""})
    idx.add("simple", "labelpkg", "1.0", tag="py3-none-any", modules={"labelpkg/__init__.py": ""})
    idx.start()
    yield idx
    idx.stop()


def _project(root: Path, idx: LocalIndex, packages: list[str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "triton-env.toml").write_text(
        f'[environment]\npython = "3.11"\npackages = {json.dumps(packages)}\n[indexes]\ntorch = "default"\n'
        f'default = "{idx.index_url("simple")}"\n\n[[targets]]\nname = "gpu"\n{H100}\n', encoding="utf-8")
    return root


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def test_a_pinned_release_its_index_yanked_is_a_conflict_whose_fix_pins_it_and_the_fix_locks(tmp_path: Path,
                                                                                              yanks: LocalIndex) -> None:
    """yankapp pins yankdep 1.0, which its index yanked: uv refuses it; the conflict names the pin that takes it (with
    the index's reason), and with that pin in the intent the lock takes yankdep 1.0. Yanked without a reason: the
    fix says none."""
    root = _project(tmp_path / "a", yanks, ["yankapp"])
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert ('  fix: add "yankdep==1.0" to [environment].packages — yankdep 1.0 is a yanked release (its index says: '
            '"Error in the setup"), and uv takes one only where a requirement pins it exactly (not checked: whether '
            "it then locks)") in out, out
    assert not (root / "triton-env.lock").exists()
    fixed = _project(tmp_path / "b", yanks, ["yankapp", "yankdep==1.0"])
    code, out = _run("resolve", "-p", str(fixed))
    assert code == 0, out
    (t,) = read_lock(fixed / "triton-env.lock").targets
    assert {p.name: p.version for p in t.packages}["yankdep"] == "1.0"
    # the lock says what it holds: a release its index withdrew, pinned by the intent
    assert [w for w in t.selection.warnings if "yanked" in w] == [
        'yankdep 1.0 is a yanked release (its index says: "Error in the setup"): locked because '
        "[environment].packages pins it (yankdep==1.0) — its index has withdrawn it; sync installs it all the same"]
    quiet = _project(tmp_path / "c", yanks, ["quietapp"])
    code, out = _run("resolve", "-p", str(quiet))
    assert code == 3, out
    assert ('  fix: add "quietdep==2.0" to [environment].packages — quietdep 2.0 is a yanked release, and uv takes '
            "one only where") in out, out
    # the same from an index that serves PEP 503 HTML pages only (data-yanked, without a reason)
    yanks.json = False
    try:
        pinned = _project(tmp_path / "d", yanks, ["quietapp", "quietdep==2.0"])
        code, out = _run("resolve", "-p", str(pinned))
    finally:
        yanks.json = True
    assert code == 0, out
    (t,) = read_lock(pinned / "triton-env.lock").targets
    assert [w for w in t.selection.warnings if "yanked" in w] == [
        "quietdep 2.0 is a yanked release: locked because [environment].packages pins it (quietdep==2.0) — its index "
        "has withdrawn it; sync installs it all the same"]


def test_the_fix_reads_uvs_words_with_a_reason_in_parentheses_and_names_each_release_once() -> None:
    """uv's words for sglang 0.5.3 on PyPI (2026-12-06); a text naming two yanked releases, one of them twice; a
    reason with parentheses of its own."""
    from tritonlock.decide._pkgpins import yanked_fixes

    uv = ("Because transformers==4.57.0 was yanked (reason: Error in the setup causing installation issues) and "
          "sglang==0.5.3 depends on transformers==4.57.0, we can conclude that sglang==0.5.3 cannot be used.")
    assert yanked_fixes(uv, "[environment].packages") == [
        '  fix: add "transformers==4.57.0" to [environment].packages — transformers 4.57.0 is a yanked release (its '
        'index says: "Error in the setup causing installation issues"), and uv takes one only where a requirement '
        "pins it exactly (not checked: whether it then locks)"]
    two = ("Because a-b==1.0 was yanked and x depends on a-b==1.0, … Because c_d==2.0rc1 was yanked (reason: bad) and "
           "y depends on c_d==2.0rc1, … Because a-b==1.0 was yanked and z depends on a-b==1.0")
    assert [f.split(" — ")[0] for f in yanked_fixes(two, "K")] == ['  fix: add "a-b==1.0" to K',
                                                                  '  fix: add "c_d==2.0rc1" to K']
    assert yanked_fixes("Because x==1.0 depends on y==2.0 and y==2.0 was not found", "K") == []
    paren = "Because e==3 was yanked (reason: broken (see #12)) and f depends on e==3."
    assert '(its index says: "broken (see #12)")' in yanked_fixes(paren, "K")[0]


def test_a_prerelease_a_package_pins_beside_the_package_named_plainly_gets_the_fix_that_pins_it(
        tmp_path: Path, yanks: LocalIndex) -> None:
    """preapp pins predep 2.0rc1; "predep" named plainly shuts the pre-release out (uv's words, wrapped over lines):
    the conflict names the pin, and the pin locks it."""
    root = _project(tmp_path / "a", yanks, ["preapp", "predep"])
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert ('  fix: add "predep==2.0rc1" to [environment].packages — predep 2.0rc1 is a pre-release, and uv takes one '
            "only where a requirement you write names a pre-release (not checked: whether it then locks)") in out, out
    fixed = _project(tmp_path / "b", yanks, ["preapp", "predep==2.0rc1"])
    code, out = _run("resolve", "-p", str(fixed))
    assert code == 0, out
    (t,) = read_lock(fixed / "triton-env.lock").targets
    assert {p.name: p.version for p in t.packages}["predep"] == "2.0rc1"
    assert not [w for w in t.selection.warnings if "yanked" in w], t.selection.warnings  # (a pre-release is not)


def test_only_a_prerelease_uv_shut_out_gets_the_pin_fix() -> None:
    from tritonlock.decide._pkgpins import prerelease_fixes

    shut = ("Because a==1.0 depends on b==2.0rc1 and you require a==1.0, we can conclude that you require b==2.0rc1.\n"
            "      And because you require one of:\n          b<2.0rc1\n          b>2.0rc1\n      we can conclude …")
    assert [f.split(" — ")[0] for f in prerelease_fixes(shut, "K")] == ['  fix: add "b==2.0rc1" to K']
    final = shut.replace("2.0rc1", "2.0")  # (a final release left out so is the user's own exclusion, not uv's rule)
    assert prerelease_fixes(final, "K") == []
    assert prerelease_fixes("Because a==1.0 depends on b==2.0rc1 and b==2.0rc1 has no wheels", "K") == []
    assert prerelease_fixes("Because a==1.0 depends on b==not.a.version and you require one of: b<not.a.version "
                            "b>not.a.version", "K") == []


def test_a_pin_with_a_local_label_its_index_does_not_serve_gets_the_fix_without_the_label(tmp_path: Path,
                                                                                          yanks: LocalIndex) -> None:
    root = _project(tmp_path / "a", yanks, ["labelpkg==1.0+cu124"])
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert ('  fix: write "labelpkg==1.0" in [environment].packages — "+cu124" names a local build (PyTorch\'s own '
            "indexes serve torch's family so: torch 2.5.1+cu124), which " + yanks.index_url("simple")
            + " does not serve (not checked: whether that release locks)") in out, out
    fixed = _project(tmp_path / "b", yanks, ["labelpkg==1.0"])
    code, out = _run("resolve", "-p", str(fixed))
    assert code == 0, out
