"""A CPU target's triton: PyTorch's cpu index publishes none, so it comes from the default index — the lock, its
reason line and the manual (docs/lock.md) say the same."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.lock.lockfile import read_lock
from tritonlock.compat.matrix import load_matrix

LOCK_DOC = (Path(__file__).parents[1] / "docs" / "lock.md").read_text(encoding="utf-8")


def test_a_cpu_targets_triton_comes_from_the_default_index_and_its_reason_says_where_and_why(
        tmp_path: Path, local_index: LocalIndex) -> None:
    write_intent(tmp_path, local_index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n')
    r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path)])
    assert r.exit_code == 0, r.output
    (t,) = read_lock(tmp_path / "triton-env.lock").targets
    pk = {p.name: p for p in t.packages}
    assert pk["torch"].index == local_index.index_url("whl/cpu")
    assert pk["triton"].index == local_index.index_url("simple")  # the one family member the cpu index lacks
    (line,) = [x for x in t.selection.reasons if x.startswith("triton ")]
    assert "comes from the default index" in line and "publishes no triton" in line and "triton_from_default" in line
    assert "the exact version torch 2.6.0 requires" not in line  # its CPU wheels require none


def test_the_manual_names_the_exception_the_matrix_makes() -> None:
    m = load_matrix()
    lock_section = LOCK_DOC.split("## Where each package comes from", 1)[1].split("\n## ", 1)[0]
    assert m.triton_from_default == frozenset({"cpu"})
    assert "`triton_from_default`" in lock_section and "PyTorch's `cpu` index publishes no triton" in lock_section


def test_triton_none_on_a_cpu_target_never_locks_a_decoy_from_the_default_index(tmp_path: Path) -> None:
    """triton = "none", and a package that needs triton (unpinned): the CPU target's triton comes from the default
    index, where a `triton 99.0` waits that the matrix does not know ("not considered", the warning says). The lock
    holds the triton torch 2.6.0 pins, never the decoy; and nothing that needs no triton gets one."""
    from conftest import populate

    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    idx.add("simple", "triton", "99.0", tag="py3-none-manylinux_2_17_x86_64")  # the decoy, newest on the index
    idx.add("simple", "needs-triton", "1.0", requires=("triton",))
    idx.start()
    try:
        pin = load_matrix().torch_release("2.6.0").triton  # type: ignore[union-attr]
        for packages, want in (('["needs-triton"]', pin), ('["einops"]', None)):
            write_intent(tmp_path / "p", idx, f'[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n'
                                              f'triton = "none"\npackages = {packages}\n')
            r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path / "p")])
            assert r.exit_code == 0, r.output
            (t,) = read_lock(tmp_path / "p" / "triton-env.lock").targets
            got = {p.name: p.version for p in t.packages}.get("triton")
            assert got == want, (packages, got, r.output)
    finally:
        idx.stop()
