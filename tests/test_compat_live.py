"""compat/ against the live default index (tritonlock/maintain/compat_check.py): wheel tags and METADATA pins agree."""

from __future__ import annotations

import dataclasses
from types import ModuleType

import pytest

from tritonlock.compat.matrix import load_matrix

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def check() -> ModuleType:
    from tritonlock.maintain import compat_check as _compat_check

    return _compat_check


@pytest.fixture(scope="module")
def index(check: ModuleType) -> object:
    return check.Index(check.default_index())


def test_compat_agrees_with_the_index(check: ModuleType, index: object) -> None:
    found = check.run(load_matrix(), index)
    assert [f for f in found if not f.startswith("note:")] == []


def test_the_check_catches_a_wrong_pin(check: ModuleType, index: object) -> None:
    m = load_matrix()
    rel = m.torch_release("2.6.0")
    assert rel is not None
    wrong = dataclasses.replace(rel, triton="3.1.0", triton_requirement="==3.1.0", pypi_backend="cu126",
                                python=rel.python[:-1])
    found = check.check_torch(wrong, check.wheels(index.files("torch")), index)  # type: ignore[attr-defined]
    assert "torch 2.6.0: triton_requirement: METADATA says '==3.2.0', compat has '==3.1.0'" in found
    assert "torch 2.6.0: pypi_backend: METADATA says cu124, compat has cu126" in found
    assert any(f.startswith("torch 2.6.0: python: index has ['3.9', '3.10', '3.11', '3.12', '3.13']") for f in found)


def test_the_newest_wheels_are_read_from_inside(check: ModuleType, index: object) -> None:
    """The default check reads torch/version.py of the newest torch and the ptxas of the newest triton(-windows)."""
    m = load_matrix()
    files = index.files("triton")  # type: ignore[attr-defined]
    f = check.ptxas_wheel(files, "triton", "3.9.0", "linux_x86_64")
    got = check.read_wheel_ptxas(index.session, f)  # type: ignore[attr-defined]
    assert (got.ptxas, got.blackwell, got.blackwell_from, got.blackwell_env) == (
        "12.9.86", "13.4.59", "9.0", "TRITON_PTXAS_BLACKWELL_PATH")
    assert got.read_bytes < 40e6  # a few member reads, not the 286 MB wheel
    row = m.ptxas_build("triton", "3.9.0", "linux_x86_64")
    assert row is not None and check.check_ptxas(row, got) == []
    wrong = dataclasses.replace(row, blackwell="13.0.88", blackwell_from="10.0")
    assert check.check_ptxas(wrong, got) == [
        "ptxas triton 3.9.0 linux_x86_64: blackwell: the wheel says 13.4.59, compat has 13.0.88",
        "ptxas triton 3.9.0 linux_x86_64: blackwell_from: the wheel says 9.0, compat has 10.0"]
    rel = m.torch_release("2.15.0")
    assert rel is not None
    wrong_build = dataclasses.replace(rel, pypi_backends={**rel.pypi_backends, "linux_x86_64": "cu130"})
    found = check.check_inside_torch(wrong_build, check.wheels(index.files("torch")), index)  # type: ignore[attr-defined]
    assert len(found) == 1 and found[0].startswith("torch 2.15.0: pypi_backends[linux_x86_64]: torch/version.py of ")
    assert found[0].endswith("says cu132, compat has cu130")


def test_rocm_and_xpu_rows_agree_with_pytorchs_index(check: ModuleType) -> None:
    """compat/rocm.toml and xpu.toml against PyTorch's rocm*/xpu indexes: a torch wheel per release, tagged as the
    row says, requiring the row's Triton package at the release's pin. PyTorch's index must be reachable."""
    found = check.check_vendor(load_matrix())
    assert not any(f.startswith("note:") and ("did not answer" in f or "was not asked" in f) for f in found), found[:3]
    assert [f for f in found if not f.startswith("note:")] == []
