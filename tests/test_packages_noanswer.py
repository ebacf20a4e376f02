"""uv finding no answer where no fact of tritonlock's explains it (decide/_pkgwords._no_answer): the target's conflict
(exit 3, the other targets locked) in uv's words, naming each package the index has no page for — not exit 4's "check
that both indexes are reachable", which stays for an index that lacks what the newest release of a named package
needs. On a local index (tests/pkgindex.py), uv resolving for real."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pkgindex import LocalIndex
from tritonlock.cli import main


def _conflicted(tmp_path: Path, *, newest_needs_ghost: bool) -> LocalIndex:
    """mixkit: 2.0 needs depa 1.0 and depb>=2, while depa 1.0 needs depb<2 (uv finds no answer: no fact of tritonlock's
    explains it); 1.0 needs ghostdep, which the index has never served (as sglang 0.4.0 needs `flashinfer`, which PyPI
    does not have). With `newest_needs_ghost`, 2.0 needs ghostdep too: then the index lacks what the newest release
    needs, and that is the index's doing."""
    from conftest import populate

    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    idx.add("simple", "depa", "1.0", requires=("depb<2",))
    idx.add("simple", "depb", "1.0")
    idx.add("simple", "depb", "2.0")
    idx.add("simple", "mixkit", "1.0", requires=("ghostdep>=1",), uploaded="2025-01-01")
    idx.add("simple", "mixkit", "2.0", requires=("depa==1.0", "depb>=2", *(("ghostdep",) if newest_needs_ghost else ())),
            uploaded="2026-01-01")
    return idx


@pytest.mark.parametrize("newest_needs_ghost", [False, True])
def test_uv_finding_no_answer_is_the_targets_conflict_unless_the_index_lacks_what_the_newest_needs(
        tmp_path: Path, newest_needs_ghost: bool) -> None:
    """uv finds no answer for mixkit on any torch line, and no fact of tritonlock's says why: that is the target's
    conflict (exit 3, uv's reason quoted, the package the index lacks named), not exit 4's "check that both indexes
    are reachable" — which stays where the newest release needs a package the index does not serve (a mirror that
    lacks it)."""
    from conftest import write_intent

    idx = _conflicted(tmp_path, newest_needs_ghost=newest_needs_ghost)
    idx.start()
    try:
        root = tmp_path / "proj"
        write_intent(root, idx, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n'
                                'packages = ["mixkit"]\n')
        r = CliRunner().invoke(main, ["resolve", "-p", str(root)])
        assert "Traceback" not in r.output
        if newest_needs_ghost:
            assert r.exit_code == 4, r.output
            assert "reachable" in r.output and "ghostdep" in r.output
        else:
            assert r.exit_code == 3, r.output
            assert "reachable" not in r.output
            assert "the packages cannot be locked with any torch that fits this target" in r.output
            assert f"ghostdep is not on {idx.index_url('simple')}" in r.output
            assert "uv: " in r.output and "depb" in r.output
        assert not (root / "triton-env.lock").exists()
    finally:
        idx.stop()
