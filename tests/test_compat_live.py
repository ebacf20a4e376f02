"""compat/ against the live default index (tools/compat_check.py): wheel tags and METADATA pins agree."""

from __future__ import annotations

import dataclasses
from types import ModuleType

import pytest

from tritonlock.matrix import load_matrix

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def check() -> ModuleType:
    from tritonlock import _compat_check

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
