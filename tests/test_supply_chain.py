"""Dependency confusion: every torch-family package comes from the torch index wherever it enters the closure —
directly, through another package, or pinned by torch itself — and a decoy on the default index is never
locked, installed or imported."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import LINUX_TAG, populate, write_intent
from pkgindex import LocalIndex, build_wheel
from tritonlock.cli import main
from tritonlock.lock.lockfile import read_lock
from tritonlock.environment.sync import venv_python

DECOY = "raise SystemExit('DECOY {name} from the default index was imported')\n"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("confusion-index"))
    populate(idx)
    for backend in ("cpu", "cu126"):
        idx.add(f"whl/{backend}", "torchvision", f"0.21.0+{backend}", requires=("torch==2.6.0",), tag=LINUX_TAG)
    # The default index: a library that needs torchvision, one that needs torchaudio (which the torch index lacks),
    # and decoys of the family — newer versions, or the very version torch pins, with other contents.
    idx.add("simple", "visionuser", "1.0", requires=("torchvision>=0.20",))
    idx.add("simple", "audiouser", "1.0", requires=("torchaudio",))
    idx.add("simple", "torchvision", "0.99.0", modules={"torchvision/__init__.py": DECOY.format(name="torchvision")})
    idx.add("simple", "torchaudio", "9.9.9", modules={"torchaudio/__init__.py": DECOY.format(name="torchaudio")})
    for f in (idx.root / "simple" / "_files").glob("triton-*.whl"):
        version = f.name.split("-")[1]
        f.unlink()
        build_wheel(f.parent, "triton", version, tag=LINUX_TAG,
                    modules={"triton/__init__.py": DECOY.format(name="triton")})
    idx.start()
    yield idx
    idx.stop()


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def _sha(idx: LocalIndex, index: str, name: str, version: str) -> str:
    (f,) = [f for f in (idx.root / index / "_files").glob(f"{name}-{version}-*.whl")]
    return hashlib.sha256(f.read_bytes()).hexdigest()


def _lock(tmp_path: Path, idx: LocalIndex, env: str) -> dict[str, tuple[str, str, str, str]]:
    write_intent(tmp_path, idx, env)
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0, out
    (t,) = read_lock(tmp_path / "triton-env.lock").targets
    return {p.name: (p.version, p.index, p.wheels[0].url, p.wheels[0].sha256) for p in t.packages}


@pytest.mark.parametrize("cuda", ["cpu", "cu126"])
def test_a_family_member_pulled_by_another_package_comes_from_the_torch_index(tmp_path: Path, index: LocalIndex,
                                                                             cuda: str) -> None:
    pk = _lock(tmp_path, index, f'[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "{cuda}"\n'
                                f'packages = ["visionuser"]\n' + ('[[targets]]\nname = "gpu"\ndriver = "550.54.15"\n'
                                                                  'gpus = ["8.0"]\n' if cuda != "cpu" else ""))
    torch_index = index.index_url(f"whl/{cuda}")
    assert pk["torchvision"][:2] == (f"0.21.0+{cuda}", torch_index)  # not the decoy 0.99.0
    assert pk["torchvision"][2].startswith(torch_index + "/")
    assert pk["torchvision"][3] == _sha(index, f"whl/{cuda}", "torchvision", f"0.21.0+{cuda}")
    assert pk["visionuser"][1] == index.index_url("simple")


@pytest.mark.parametrize("cuda", ["cpu", "cu126"])
def test_triton_pinned_by_torch_comes_from_the_torch_index_even_with_triton_none(tmp_path: Path, index: LocalIndex,
                                                                                cuda: str) -> None:
    pk = _lock(tmp_path, index, f'[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "{cuda}"\n'
                                'triton = "none"\n' + ('[[targets]]\nname = "gpu"\ndriver = "550.54.15"\n'
                                                       'gpus = ["8.0"]\n' if cuda != "cpu" else ""))
    if cuda == "cpu":
        # torch's CPU builds require no triton (compat/meta.toml triton_from_default): none is locked, and so no
        # decoy of it either
        assert "triton" not in pk
        return
    torch_index = index.index_url(f"whl/{cuda}")
    version, where, url, sha = pk["triton"]
    assert (where, sha) == (torch_index, _sha(index, f"whl/{cuda}", "triton", version))
    assert sha != _sha(index, "simple", "triton", version)  # the same-version decoy on the default index lost


def test_a_family_member_the_torch_index_lacks_is_refused_clearly(tmp_path: Path, index: LocalIndex) -> None:
    write_intent(tmp_path, index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n'
                                  'packages = ["audiouser"]\n')
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 4, out
    assert f"the torch index {index.index_url('whl/cpu')} does not serve torchaudio, which the packages need" in out
    assert "note: torchaudio is needed by other packages and, being in the torch family, is taken only from the " \
           f"torch index {index.index_url('whl/cpu')} (never from the default index" in out
    assert "Traceback" not in out and not (tmp_path / "triton-env.lock").exists()


def test_sync_installs_and_imports_the_real_ones(tmp_path: Path, index: LocalIndex) -> None:
    pk = _lock(tmp_path, index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\ntriton = "none"\n'
                                'packages = ["visionuser"]\n')
    assert {pk[n][1] for n in ("torch", "torchvision")} == {index.index_url("whl/cpu")}
    assert "triton" not in pk  # torch's CPU build requires none
    code, out = _run("sync", "-p", str(tmp_path), "--no-verify")
    assert code == 0, out
    py = str(venv_python(tmp_path / ".venv"))
    r = subprocess.run([py, "-c", "import torchvision; print(torchvision.__version__)"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "DECOY" not in r.stdout + r.stderr, r.stderr
    assert r.stdout.split() == ["0.21.0+cpu"]
