"""ROCm 7.14 builds take their libraries from TheRock's SDK wheels (torch requires rocm[libraries,…]; rocm brings
rocm-sdk-core, rocm-sdk-libraries and rocm-sdk-device-<gfx>). A real lock against a local index shaped like PyTorch's
whl/rocm7.14, with same-named placeholders on the default index (PyPI holds rocm-sdk-device-gfx942 ones): the SDK
comes from the ROCm index only, and when that index lacks one, the error names it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.compat.matrix import load_matrix
from tritonlock.lock.lockfile import read_lock

TAG = "py3-none-manylinux_2_28_x86_64"
SDK = "7.14.0"
INTENT = ('[environment]\npython = "3.11"\ntorch = "==2.14.0"\n\n[[targets]]\nname = "mi300x"\ngpus = ["gfx942"]\n'
          'amdgpu = "30.30"\n')


def rocm_index(root: Path, *, lacks: tuple[str, ...] = (), decoys: bool = True) -> LocalIndex:
    idx = LocalIndex(root)
    rel = load_matrix().torch_release("2.14.0")
    assert rel is not None and rel.triton
    pin = rel.triton
    w = "whl/rocm7.14"
    idx.add(w, "torch", "2.14.0+rocm7.14", tag=TAG,
            requires=("filelock>=3.0", f"triton-rocm=={pin}; platform_system == 'Linux'",
                      f"rocm[libraries,device-gfx942]=={SDK}; platform_system == 'Linux'"),
            modules={"torch/__init__.py": "__version__ = '2.14.0+rocm7.14'\n"})
    idx.add(w, "triton-rocm", pin, tag=TAG, modules={"triton/__init__.py": ""})
    sdk = {
        "rocm": dict(requires=(f"rocm-sdk-core=={SDK}", f"rocm-sdk-libraries=={SDK}; extra == 'libraries'",
                               f"rocm-sdk-device-gfx942=={SDK}; extra == 'device-gfx942'"),
                     extras=("libraries", "device-gfx942"), modules={"rocm_sdk/__init__.py": ""}),
        "rocm-sdk-core": dict(tag=TAG, modules={"_rocm_sdk_core/__init__.py": ""}),
        "rocm-sdk-libraries": dict(tag=TAG, requires=(f"rocm-sdk-core=={SDK}",),
                                   modules={"_rocm_sdk_libraries/__init__.py": ""}),
        "rocm-sdk-device-gfx942": dict(tag=TAG, requires=(f"rocm-sdk-libraries=={SDK}",),
                                       modules={"_rocm_sdk_device_gfx942/__init__.py": ""}),
    }
    for name, kw in sdk.items():
        if name not in lacks:
            idx.add(w, name, SDK, **kw)  # type: ignore[arg-type]
    idx.add("simple", "filelock", "3.16.1")
    if decoys:  # same names on the default index, one newer than the SDK: never to stand in for it
        for name in sdk:
            idx.add("simple", name, SDK, modules={f"decoy_{name.replace('-', '_')}/__init__.py": "# placeholder\n"})
        idx.add("simple", "rocm-sdk-core", "7.99.0", modules={"decoy_new/__init__.py": ""})
    return idx.start()


@pytest.fixture(params=[True, False], ids=["decoys-on-default", "default-lacks-them"])
def full(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = rocm_index(tmp_path_factory.mktemp("rocm714"), decoys=request.param)
    yield idx
    idx.stop()


def test_the_sdk_comes_from_the_rocm_index_only(tmp_path: Path, full: LocalIndex) -> None:
    write_intent(tmp_path, full, INTENT)
    r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path)])
    assert r.exit_code == 0, r.output
    (t,) = read_lock(tmp_path / "triton-env.lock").targets
    pkgs = {p.name: p for p in t.packages}
    assert pkgs["torch"].version == "2.14.0+rocm7.14"
    rocm_url = full.index_url("whl/rocm7.14")
    for name in ("rocm", "rocm-sdk-core", "rocm-sdk-libraries", "rocm-sdk-device-gfx942", "triton-rocm"):
        assert (pkgs[name].index, pkgs[name].version if name != "triton-rocm" else SDK) == (rocm_url, SDK), name
        assert all("/whl/rocm7.14/" in w.url for w in pkgs[name].wheels), name
    assert pkgs["filelock"].index == full.index_url("simple")
    assert any(r.startswith("the rocm7.14 wheels take the ROCm 7.14 libraries from TheRock's SDK wheels")
               for r in t.selection.reasons)


@pytest.mark.parametrize("decoys", [True, False], ids=["decoy-on-default", "nowhere-else"])
def test_an_sdk_wheel_the_rocm_index_lacks_is_named(tmp_path: Path, decoys: bool) -> None:
    idx = rocm_index(tmp_path / "idx", lacks=("rocm-sdk-device-gfx942",), decoys=decoys)
    try:
        write_intent(tmp_path / "p", idx, INTENT)
        r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path / "p")])
    finally:
        idx.stop()
    assert r.exit_code == 4, r.output
    assert ("rocm-sdk-device-gfx942 is part of the ROCm SDK that torch 2.14.0 (rocm7.14) needs, taken only from "
            f"its torch index {idx.index_url('whl/rocm7.14')}, and that index does not serve it") in r.output
    assert "check that both indexes are reachable" not in r.output
    assert not (tmp_path / "p" / "triton-env.lock").exists()
