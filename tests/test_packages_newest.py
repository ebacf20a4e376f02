"""A package's "newest release", as the lock's `direct` list and `resolve --json` state it: the newest the index
serves that the requirement admits — a pre-release only where the requirement asks for one (as uv and pip choose)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from click.testing import CliRunner

from conftest import LINUX_TAG, populate, write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.lock.lockfile import read_lock


def test_a_pre_release_is_not_a_packages_newest(tmp_path: Path) -> None:
    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    idx.add("simple", "prerel", "1.0")
    idx.add("simple", "prerel", "2.0rc1")  # on the index, newer, and a release candidate
    idx.start()
    try:
        for requirement, want in (("prerel", "1.0"), ("prerel>=2.0rc1", "2.0rc1")):
            root = tmp_path / requirement.replace(">=", "-")
            write_intent(root, idx, f'[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n'
                                    f'packages = ["{requirement}"]\n')
            r = CliRunner().invoke(main, ["resolve", "-p", str(root), "--json"])
            assert r.exit_code == 0, r.output
            (t,) = json.loads(r.output)["targets"]
            (d,) = [x for x in t["direct"] if x["name"] == "prerel"]
            assert (d["version"], d["newest"], d["at_newest"], d["held_by"]) == (want, want, True, None), d
            (locked,) = read_lock(root / "triton-env.lock").targets
            assert {p.name: p.version for p in locked.packages}["prerel"] == want
            assert not [w for w in locked.selection.warnings if "prerel" in w], locked.selection.warnings
    finally:
        idx.stop()


def test_a_local_build_of_the_newest_release_is_that_release(tmp_path: Path) -> None:
    """PyTorch's index serves torchvision 0.21.0 as local builds (0.21.0+cu124, +cu126): the locked +cu126 build is
    the newest release, in the `direct` contract and the warnings — the local label is left off both sides."""
    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    backends = sorted(p.name for p in (tmp_path / "index" / "whl").iterdir() if p.name.startswith("cu"))
    for b in backends:
        idx.add(f"whl/{b}", "torchvision", f"0.21.0+{b}", requires=("torch==2.6.0",), tag=LINUX_TAG)
        idx.add(f"whl/{b}", "torchvision", f"0.20.1+{b}", requires=("torch==2.5.1",), tag=LINUX_TAG)
    idx.start()
    try:
        write_intent(tmp_path / "p", idx, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\n'
                                          'packages = ["torchvision"]\n[[targets]]\nname = "gpu"\n'
                                          'driver = "570.86.15"\ngpus = ["8.0"]\n')
        r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path / "p"), "--json"])
        assert r.exit_code == 0, r.output
        (t,) = json.loads(r.output)["targets"]
        (d,) = [x for x in t["direct"] if x["name"] == "torchvision"]
        assert (d["version"], d["newest"], d["at_newest"], d["held_by"]) == ("0.21.0", "0.21.0", True, None), d
        (locked,) = read_lock(tmp_path / "p" / "triton-env.lock").targets
        tv = {p.name: p.version for p in locked.packages}["torchvision"]
        assert tv.startswith("0.21.0+cu"), tv  # (the local build was locked: the case is the one it claims)
        assert not [w for w in locked.selection.warnings if "torchvision" in w], locked.selection.warnings
    finally:
        idx.stop()


def test_a_releases_files_are_its_local_builds_too(tmp_path: Path) -> None:
    """What the decision's words read of one release (its files: whether it has a wheel, when it was uploaded, its
    METADATA) is every build of it the index serves — "2.0+cu128" is release 2.0, asked for either way — and no
    other release's."""
    from tritonlock.decide._pkgfacts import Facts

    idx = LocalIndex(tmp_path / "index")
    idx.add("simple", "kbuild", "2.0")
    idx.add("simple", "kbuild", "2.0+cu128", tag=LINUX_TAG)
    idx.add("simple", "kbuild", "2.0.1")
    idx.add("simple", "kbuild", "1.0")
    idx.start()
    try:
        facts = Facts()
        for asked in ("2.0", "2.0+cu128", "2.0.0"):
            got = sorted(f.filename for f in facts.release_files(idx.index_url("simple"), "kbuild", asked))
            assert len(got) == 2 and all(n.startswith("kbuild-2.0-") or n.startswith("kbuild-2.0+cu128-")
                                         for n in got), (asked, got)
        assert facts.release_files(idx.index_url("simple"), "kbuild", "3.0") == []
        assert facts.release_files(idx.index_url("simple"), "kbuild", "not a version") == []
    finally:
        idx.stop()


def test_the_wheel_an_installer_takes_comes_first() -> None:
    """pip's and uv's order (packaging.tags for the target): this CPython's own ABI, then abi3 builds for newer to
    older CPythons, then py3; within each, the newest manylinux the target's glibc allows; a higher build number
    first; a wheel the target cannot install is not listed."""
    from tritonlock.decide._pkgfacts import install_order
    from tritonlock.models import TargetSpec

    files = ["c-1-cp39-abi3-manylinux_2_34_x86_64.whl", "c-1-cp311-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
             "c-1-cp311-abi3-manylinux_2_34_x86_64.whl", "c-1-cp311-abi3-manylinux_2_28_x86_64.whl",
             "c-1-py3-none-any.whl", "c-1-cp312-cp312-manylinux_2_39_x86_64.whl",
             "c-1-cp312-abi3-macosx_11_0_arm64.whl", "c-1-cp312-cp312-manylinux_2_17_x86_64.whl",
             "c-1-2-cp312-cp312-manylinux_2_17_x86_64.whl"]
    linux = TargetSpec(name="x", os="linux", arch="x86_64", glibc="2.35")
    assert install_order(files, linux, "3.12") == [
        "c-1-2-cp312-cp312-manylinux_2_17_x86_64.whl", "c-1-cp312-cp312-manylinux_2_17_x86_64.whl",
        "c-1-cp311-abi3-manylinux_2_34_x86_64.whl", "c-1-cp311-abi3-manylinux_2_28_x86_64.whl",
        "c-1-cp311-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", "c-1-cp39-abi3-manylinux_2_34_x86_64.whl",
        "c-1-py3-none-any.whl"]
    older = TargetSpec(name="x", os="linux", arch="x86_64", glibc="2.31")
    assert install_order(files, older, "3.12")[2] == "c-1-cp311-abi3-manylinux_2_28_x86_64.whl"
    mac = TargetSpec(name="m", os="macos", arch="arm64", macos="14.5")
    assert install_order(files, mac, "3.12") == ["c-1-cp312-abi3-macosx_11_0_arm64.whl", "c-1-py3-none-any.whl"]


@pytest.mark.parametrize(("filename", "fits"), [
    ("xformers-0.0.35-py39-none-manylinux_2_28_x86_64.whl", True),  # (an older pure-Python minor: installs on 3.12)
    ("x-1.0-py312-none-any.whl", True), ("x-1.0-py313-none-any.whl", False), ("x-1.0-py3-none-any.whl", True),
    ("x-1.0-py2-none-any.whl", False), ("x-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", False),
    ("x-1.0-cp312-cp312-manylinux_2_28_x86_64.whl", True), ("x-1.0-py39-cp39-manylinux_2_28_x86_64.whl", False),
])
def test_a_wheel_for_an_older_python_minor_without_an_abi_installs_on_a_newer_one(filename: str, fits: bool) -> None:
    """pip and uv install a `py39-none` wheel on Python 3.12 (packaging.tags.compatible_tags lists py39 there):
    xformers 0.0.35's Linux wheel is one; taken as not installable, its native code went unread."""
    from tritonlock.decide._pkgfacts import file_fits, install_order
    from tritonlock.models import TargetSpec

    target = TargetSpec(name="gpu", os="linux", arch="x86_64", glibc="2.35")
    assert file_fits(filename, target, "3.12") is fits
    assert install_order([filename], target, "3.12") == ([filename] if fits else [])


def test_a_wheel_name_or_requires_python_read_once_a_process_answers_as_when_read_each_time() -> None:
    """A file name is parsed once a process (an index page lists thousands, looked at by release, by fit, by install
    order) and a Requires-Python once per Python: a name that is no valid wheel name never fits, is never ordered
    and gives no release, asked once or twice; a Requires-Python answers for the Python asked, at its exact floor."""
    from tritonlock.decide._pkgfacts import _file_version, _python_admits, file_fits, install_order
    from tritonlock.models import TargetSpec

    target = TargetSpec(name="gpu", os="linux", arch="x86_64", glibc="2.35")
    for _ in range(2):
        for bad in ("x-1.0.bad-py3-none-any.whl", "x-py3-none-any.whl"):
            assert not file_fits(bad, target, "3.12") and install_order([bad], target, "3.12") == []
            assert _file_version(bad) is None
        assert str(_file_version("x-2.0-py3-none-any.whl")) == "2.0" and str(_file_version("x-2.1.tar.gz")) == "2.1"
        assert install_order(["x-1.0-py3-none-any.whl", "x-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"], target,
                             "3.12") == ["x-1.0-cp312-cp312-manylinux_2_28_x86_64.whl", "x-1.0-py3-none-any.whl"]
    assert _python_admits(">=3.12", "3.12.0") and not _python_admits(">=3.12", "3.11.0")
    assert not _python_admits(">=3.13", "3.12.0") and _python_admits("<3.13,>=3.10", "3.12.0")
    assert _python_admits("not a specifier", "3.12.0")  # (as the index page's own reader: nothing to hold it back)
