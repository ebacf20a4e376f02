"""A package's "newest release", as the lock's `direct` list and `resolve --json` state it: the newest the index
serves that the requirement admits — a pre-release only where the requirement asks for one (as uv and pip choose)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from conftest import populate, write_intent
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
