"""README.md's examples are real: the JSON contracts it shows come from real runs (with "..." marking what is left
out), and the CI examples install tritonlock the way it is really distributed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tritonlock.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
EXAMPLES = ROOT / "examples"


def _block_after(heading: str, fence: str = "```json\n") -> Any:
    section = README.split(heading, 1)[1]
    return json.loads(section.split(fence, 1)[1].split("\n```", 1)[0])


def _shown(readme: Any, real: Any, where: str = "$") -> None:
    """`readme` is `real` with parts left out: "..." as a string (or a list item) stands for anything, a string
    with "..." in it for the text between its pieces, a "..." key for the keys not shown."""
    if isinstance(readme, str) and "..." in readme:
        assert isinstance(real, str), where
        pos = 0
        for piece in readme.split("..."):
            found = real.find(piece, pos)
            assert found >= 0, f"{where}: README shows {piece!r}, the real run says {real!r}"
            pos = found + len(piece)
    elif isinstance(readme, list):
        assert isinstance(real, list), where
        i = 0
        for n, item in enumerate(readme):
            if item == "...":
                continue
            while i < len(real):
                try:
                    _shown(item, real[i], f"{where}[{n}]")
                    break
                except AssertionError:
                    i += 1
            assert i < len(real), f"{where}[{n}]: README shows {item!r}; the real run has no such item (in order)"
            i += 1
    elif isinstance(readme, dict):
        assert isinstance(real, dict), where
        keys = set(readme) - {"..."}
        assert keys <= set(real), f"{where}: README shows keys {sorted(keys - set(real))} the real run lacks"
        if "..." not in readme:
            assert keys == set(real), f"{where}: the real run also has {sorted(set(real) - keys)}"
        for k in keys:
            _shown(readme[k], real[k], f"{where}.{k}")
    else:
        assert readme == real, f"{where}: README shows {readme!r}, the real run says {real!r}"


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def test_readme_dry_run_json_is_a_real_run(tmp_path: Path) -> None:
    """examples/clusters' A100 cluster beside a GTX 1080 box on driver 470, as README says."""
    clusters = (EXAMPLES / "clusters" / "triton-env.toml").read_text(encoding="utf-8")
    a100 = clusters[clusters.index('[[targets]]                 # the shared A100'):].split("\n\n", 1)[0]
    env = clusters[clusters.index("[environment]"):].split("\n\n", 1)[0]
    (tmp_path / "triton-env.toml").write_text(f'{env}\n\n{a100}\n\n[[targets]]\nname = "old-box"\nglibc = "2.35"\n'
                                              'driver = "470.82.01"\ngpus = ["6.1"]\n')
    code, out = _run("resolve", "--dry-run", "--json", "-p", str(tmp_path))
    assert code == 3, out  # README: exit 3 when any target has a conflict
    _shown(_block_after("## `tritonlock resolve --dry-run --json` (a public contract)"), json.loads(out))


def test_readme_why_json_is_a_real_run() -> None:
    code, out = _run("why", "--json", "-p", str(EXAMPLES / "clusters"))
    assert code == 0, out
    _shown(_block_after("`tritonlock why --json` is a public contract:"), json.loads(out))


def test_readme_check_json_keys_are_the_real_ones(tmp_path: Path) -> None:
    listed = README.split("`--json` gives `", 1)[1].split("`;", 1)[0]
    keys = set(re.findall(r'"([a-z_]+)"', listed)) - {"kind", "target", "message"}
    (tmp_path / "triton-env.toml").write_text('[environment]\ntorch = ">=2.4"\n')
    code, out = _run("check", "--json", "-p", str(tmp_path))  # no lock: one problem, the whole shape
    assert code == 2  # (no lock is bad input)
    doc = json.loads(out)
    assert set(doc) == keys and set(doc["problems"][0]) == {"kind", "target", "message"}


def test_ci_examples_install_tritonlock_from_where_it_is() -> None:
    """tritonlock is not on PyPI: `pip install tritonlock==0.1.0` in the CI examples failed for everyone who copied
    them. They install it from one variable that says where it comes from."""
    for name in ("github-actions.yml", "gitlab-ci.yml"):
        text = (EXAMPLES / "ci" / name).read_text(encoding="utf-8")
        assert "tritonlock==" not in text, name
        installs = re.findall(r"pip install (.+)", text)
        assert installs and all(i.strip() == '"$TRITONLOCK"' for i in installs), (name, installs)
        assert 'TRITONLOCK: "tritonlock @ git+https://' in text and "not published on PyPI" in text
