"""`export --format pixi`: a pixi.toml read back — one feature/environment per target, the torch family pinned from
its index, [system-requirements] cuda for CUDA builds, and the header saying what pixi cannot express. (pixi itself is
not installable here: PyPI's "pixi" is an unrelated program, so the file is checked by structure.)"""

from __future__ import annotations

import tomllib
from pathlib import Path

from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.lock.lockfile import read_lock

TWO = """
[environment]
python = "3.11"
torch = "==2.6.0"
packages = ["einops>=0.8"]

[[targets]]
name = "a100"
driver = "550.54.15"
gpus = ["8.0"]

[[targets]]
name = "laptop"
"""


def test_pixi_toml_has_an_environment_per_target_with_the_locked_family(tmp_path: Path,
                                                                      local_index: LocalIndex) -> None:
    root = tmp_path / "proj"
    write_intent(root, local_index, TWO)
    assert CliRunner().invoke(main, ["resolve", "-p", str(root)]).exit_code == 0
    r = CliRunner().invoke(main, ["export", "-p", str(root), "--format", "pixi", "-o", str(root / "pixi.toml")])
    assert r.exit_code == 0, r.output
    assert "pixi install -e ENV with ENV one of: a100, laptop" in r.output.replace("`", "")
    text = (root / "pixi.toml").read_text()
    assert "# What pixi cannot express of triton-env.lock" in text and "the sha256 of each file" in text
    doc = tomllib.loads(text)
    lock = read_lock(root / "triton-env.lock")
    assert doc["workspace"]["platforms"] == ["linux-64"]
    assert doc["pypi-options"]["index-url"] == lock.default_index
    assert doc["environments"] == {"a100": {"features": ["a100"], "no-default-feature": False},
                                   "laptop": {"features": ["laptop"], "no-default-feature": False}}
    a100 = doc["feature"]["a100"]
    assert a100["system-requirements"] == {"cuda": "12.4"}
    assert a100["dependencies"] == {"python": "3.11.*"}
    for t in lock.targets:
        feat = doc["feature"][t.name]
        torch = next(p for p in t.packages if p.name == "torch")
        assert feat["pypi-dependencies"]["torch"] == {"version": f"=={torch.version}", "index": torch.index}
        assert feat["pypi-dependencies"]["einops"] == ">=0.8"
    assert "system-requirements" not in doc["feature"]["laptop"]  # a CPU build needs no CUDA
    tri = next(p for p in lock.targets[1].packages if p.name == "triton")
    assert doc["feature"]["laptop"]["pypi-dependencies"]["triton"] == {"version": f"=={tri.version}"}  # default index
