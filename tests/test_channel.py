"""channel = "nightly" | "test": torch from PyTorch's nightly (or test) index — dated versions, the nightly Triton
(pytorch-triton) pinned exactly from the wheel's METADATA — decided by the nearest release's facts, and said so."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import LINUX_TAG, write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.errors import IntentError
from tritonlock.intent.read import parse_intent
from tritonlock.compat.matrix import load_matrix

NIGHTLY_TRITON = "3.7.0+git1a2b3c4d"


@pytest.fixture
def nightly_index(tmp_path: Path) -> LocalIndex:
    """A nightly-shaped index: per backend, dated torch builds pinning pytorch-triton, which is served there too;
    the default index holds the CUDA runtime, filelock, and a pytorch-triton placeholder that must never be taken."""
    m = load_matrix()
    idx = LocalIndex(tmp_path / "index")
    backends = {v.backend for v in m.torch[0].variants}
    for b in backends:
        reqs: tuple[str, ...] = ("filelock>=3.0",)
        if b != "cpu":
            reqs += (f"pytorch-triton=={NIGHTLY_TRITON}; platform_system == 'Linux'",)
            idx.add(f"whl/nightly/{b}", "pytorch-triton", NIGHTLY_TRITON, tag=LINUX_TAG)
        for day in ("20261129", "20261130"):
            idx.add(f"whl/nightly/{b}", "torch", f"2.17.0.dev{day}+{b}", requires=reqs, tag=LINUX_TAG)
    idx.add("simple", "filelock", "3.16.1")
    idx.add("simple", "pytorch-triton", "0.0.1")  # the placeholder (dependency confusion)
    for t in {r.version for r in m.triton[-3:]}:
        idx.add("simple", "triton", t, tag=LINUX_TAG)
    idx.start()
    yield idx
    idx.stop()


INTENT = """
[environment]
python = "3.12"
channel = "nightly"

[[targets]]
name = "h100"
driver = "580.65.06"
gpus = ["9.0"]
"""


def test_nightly_locks_a_dated_torch_and_its_exact_pytorch_triton(tmp_path: Path, nightly_index: LocalIndex) -> None:
    m = load_matrix()
    root = tmp_path / "proj"
    intent = write_intent(root, nightly_index, INTENT)
    intent.write_text(intent.read_text().replace("/whl/{backend}", "/whl/nightly/{backend}"))
    r = CliRunner().invoke(main, ["resolve", "-p", str(root)])
    assert r.exit_code == 0, r.output
    lock = (root / "triton-env.lock").read_text()
    assert 'name = "torch"\nversion = "2.17.0.dev20261130+cu' in lock
    assert f'name = "pytorch-triton"\nversion = "{NIGHTLY_TRITON}"' in lock
    assert 'version = "0.0.1"' not in lock  # not the default index's placeholder
    assert "the newest nightly build for cu" in r.output and "built 2026-11-30" in r.output
    assert ("a nightly build of PyTorch's main branch, not a release; the matrix's rules (the cu" in r.output
            and f"apply by the facts of the nearest release it knows, torch {m.torch[0].version}" in r.output)
    assert f"pytorch-triton {NIGHTLY_TRITON}: the exact Triton torch 2.17.0.dev20261130 requires" in r.output
    # the release's own picks are gone, not left beside what replaced them (its torch line, its Triton's checks)
    from tritonlock.lock.lockfile import read_lock

    (t,) = read_lock(root / "triton-env.lock").targets
    nearest, triton = m.torch[0].version, m.torch[0].triton
    assert not [x for x in t.selection.reasons if x.startswith((f"torch {nearest}:", f"triton {triton}"))], \
        t.selection.reasons
    assert any(x.startswith("cu") and f"of torch {nearest}" in x for x in t.selection.reasons)  # its facts stay
    assert f"the matrix's Triton checks (GPU support, the bundled ptxas and this driver) are of triton {triton}" in \
        r.output
    code = CliRunner().invoke(main, ["check", "-p", str(root)])
    assert code.exit_code == 0, code.output
    why = CliRunner().invoke(main, ["show", "-p", str(root)])
    assert "2.17.0.dev20261130" in why.output


def test_dry_run_names_the_channel_index_without_network(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "triton-env.toml").write_text(INTENT)
    r = CliRunner().invoke(main, ["resolve", "--dry-run", "-p", str(root)])
    assert r.exit_code == 0, r.output
    assert "index: https://download.pytorch.org/whl/nightly/cu" in r.output
    assert "the nightly build is picked from https://download.pytorch.org/whl/nightly/cu" in r.output


def test_unknown_channel_is_bad_input() -> None:
    with pytest.raises(IntentError, match=r"triton-env.toml:2: environment.channel: unknown channel 'nighty' — use "
                                          r"\"release\", \"nightly\" or \"test\""):
        parse_intent('[environment]\nchannel = "nighty"\n')


def test_release_intents_keep_their_hash() -> None:
    assert parse_intent('[environment]\npython = "3.12"\n').content_hash == parse_intent(
        '[environment]\npython = "3.12"\nchannel = "release"\n').content_hash
    assert parse_intent('[environment]\npython = "3.12"\n').content_hash != parse_intent(
        '[environment]\npython = "3.12"\nchannel = "nightly"\n').content_hash


def test_test_channel_takes_the_release_candidate_and_its_triton(tmp_path: Path) -> None:
    """The test channel serves the next release's candidates under their final version; triton is pinned as its
    METADATA says, from that index."""
    m = load_matrix()
    idx = LocalIndex(tmp_path / "index")
    for b in {v.backend for v in m.torch[0].variants} - {"cpu"}:
        idx.add(f"whl/test/{b}", "torch", f"2.16.0+{b}", requires=("triton==3.10.0; platform_system == 'Linux'",),
                tag=LINUX_TAG)
        idx.add(f"whl/test/{b}", "torch", f"2.16.0.dev20261101+{b}", tag=LINUX_TAG)  # not a candidate: older
        idx.add(f"whl/test/{b}", "triton", "3.10.0", tag=LINUX_TAG)
    idx.add("simple", "triton", "3.10.0", tag="py3-none-any")  # a decoy on the default index
    idx.start()
    try:
        root = tmp_path / "proj"
        intent = write_intent(root, idx, INTENT.replace('"nightly"', '"test"'))
        intent.write_text(intent.read_text().replace("/whl/{backend}", "/whl/test/{backend}"))
        r = CliRunner().invoke(main, ["resolve", "-p", str(root)])
    finally:
        idx.stop()
    assert r.exit_code == 0, r.output
    lock = (root / "triton-env.lock").read_text()
    assert 'name = "torch"\nversion = "2.16.0+cu' in lock
    assert 'name = "triton"\nversion = "3.10.0"\nindex = "' + idx.url + '/whl/test/cu' in lock
    assert "torch 2.16.0: the newest test build for cu" in r.output and "a release candidate, not a release" in r.output
