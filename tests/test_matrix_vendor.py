"""compat/rocm.toml, xpu.toml and the AMD/Intel rows of gpus.toml: loading, validation, questions, the live check."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from packaging.version import Version

from pkgindex import LocalIndex
from tritonlock.errors import MatrixError
from tritonlock.compat.matrix import load_matrix
from tritonlock.compat.matrix_vendor import (gfx_from_override, gfx_from_target_version, isa_major, load_vendor_matrix,
                                      normalize_gfx, vendor_of)

COMPAT = Path(__file__).parent.parent / "compat"


def test_rows_cover_every_torch_series_from_2_5() -> None:
    vm = load_vendor_matrix()
    series = sorted({".".join(r.version.split(".")[:2]) for r in load_matrix().torch
                     if tuple(map(int, r.version.split(".")[:2])) >= (2, 5)}, key=lambda s: tuple(map(int, s.split("."))))
    assert sorted({b.torch for b in vm.rocm}, key=lambda s: tuple(map(int, s.split(".")))) == series
    assert sorted({x.torch for x in vm.xpu}, key=lambda s: tuple(map(int, s.split(".")))) == series
    for s in series:  # one stable ROCm variant per series (RELEASE.md "Stable ROCm")
        assert len([b for b in vm.rocm if b.torch == s and b.stable]) == 1, s


def test_questions() -> None:
    vm = load_vendor_matrix()
    assert [b.backend for b in vm.rocm_builds("2.9.1")] == ["rocm6.4", "rocm6.3"]
    assert vm.first_series_with("gfx950") == "2.10" and vm.first_series_with("gfx90c") is None
    assert vm.last_series_with("gfx900") == vm.rocm[-1].torch  # the 7.2 builds still carry it
    assert "gfx900" not in next(b for b in vm.rocm_builds("2.14.0") if b.backend == "rocm7.14").gfx
    assert vm.rocm_builds("2.10.0")[0].triton_package == "triton-rocm"
    assert vm.rocm_builds("2.9.0")[0].triton_package == "pytorch-triton-rocm"
    assert vm.amd_gfx_for_name("AMD Instinct MI300X") == "gfx942"
    assert vm.amd_gfx_for_name("Radeon RX 7900 XT") == "gfx1100" and vm.amd_gfx_for_name("RX 7800 XT") == "gfx1101"
    assert vm.intel_target_for_name("Intel(R) Data Center GPU Max 1550") == "pvc"
    assert vm.intel_target_for_pci("0xE20B") == "bmg"
    assert vm.amdgpu_release("6.12.12") is not None and vm.amdgpu_release("6.12.12").release == "6.4"  # type: ignore[union-attr]
    assert vm.amdgpu_supports("6.1", "6.4") is True and vm.amdgpu_supports("6.1", "7.0") is False
    assert vm.amdgpu_supports("5.0.1", "6.4") is None  # unknown driver: not judged
    assert vm.triton_amd_support("3.1.0", "gfx1201") is None and vm.triton_amd_support("3.3.0", "gfx1201") == "supported"


def test_target_names() -> None:
    assert normalize_gfx("gfx942:sramecc+:xnack-") == "gfx942" and normalize_gfx("GFX90A:xnack+") == "gfx90a"
    assert normalize_gfx("MI300X") is None
    assert [gfx_from_target_version(v) for v in (90402, 90010, 110000, 110501, 90012, 0)] == [
        "gfx942", "gfx90a", "gfx1100", "gfx1151", "gfx90c", None]
    assert gfx_from_override("10.3.0") == "gfx1030" and gfx_from_override("11") is None
    assert (isa_major("gfx1100"), isa_major("gfx90a")) == ("gfx11", "gfx9")
    assert [vendor_of(g) for g in ("8.0", "gfx942", "bmg")] == ["nvidia", "amd", "intel"]


def _copy(tmp: Path) -> Path:
    root = tmp / "compat"
    shutil.copytree(COMPAT, root)
    return root


def test_bad_rows_name_file_and_key(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    text = (root / "rocm.toml").read_text()
    text = text.replace('gfx = ["gfx900"', 'gfx = ["sm_90", "gfx900"', 1).replace('stable = "6.2"', 'stable = "6.9"', 1)
    (root / "rocm.toml").write_text(text)
    xpu = (root / "xpu.toml").read_text().replace('devices = ["pvc"', 'devices = ["zz"', 1)
    (root / "xpu.toml").write_text(xpu)
    with pytest.raises(MatrixError) as e:
        load_vendor_matrix(str(root))
    msg = str(e.value).splitlines()
    assert "compat/rocm.toml: rocm[0].variant[0].gfx: expected entries like 'gfx942', got 'sm_90' — fix the row" in msg
    assert "compat/rocm.toml: rocm[0].stable: ROCm 6.9 is none of this row's variants — fix the row" in msg
    assert ("compat/xpu.toml: xpu[0].devices: 'zz' is not an [[intel_gpu]] target in compat/gpus.toml — add it there"
            in msg)


def test_a_row_without_source_is_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    text = (root / "gpus.toml").read_text()
    start = text.index('[[amd_gpu]]\ngfx = "gfx908"')
    end = text.index("\n\n", start)
    block = text[start:end]
    text = text.replace(block, "\n".join(ln for ln in block.splitlines() if not ln.startswith("source")))
    (root / "gpus.toml").write_text(text)
    with pytest.raises(MatrixError, match=r"compat/gpus.toml: amd_gpu\[2\].source: missing"):
        load_vendor_matrix(str(root))


def test_the_live_check_finds_a_missing_build_and_a_wrong_tag(tmp_path: Path) -> None:
    """check_vendor against a local index shaped like PyTorch's rocm7.2 index (the real one is a network test)."""
    from tritonlock.maintain.compat_check import check_vendor

    idx = LocalIndex(tmp_path / "idx")
    idx.add("whl/rocm7.2", "torch", "2.13.0+rocm7.2", tag="cp311-cp311-manylinux_2_28_x86_64",
            requires=("filelock", "triton-rocm==3.6.0; platform_system == 'Linux'"))
    idx.add("whl/rocm7.2", "torch", "2.12.0+rocm7.2", tag="cp311-cp311-linux_x86_64")
    idx.start()
    try:
        m = dataclasses.replace(load_matrix(), torch_index_template=idx.url + "/whl/{backend}")
        found = check_vendor(m, versions={"2.13.0", "2.12.0", "2.12.1"})
    finally:
        idx.stop()
    assert "rocm7.2 torch 2.12.1: no torch-2.12.1+rocm7.2 wheel on " + idx.url + "/whl/rocm7.2" in found
    assert ("rocm7.2 torch 2.12.0: wheel_tag: compat has manylinux_2_28_x86_64, the index has "
            "torch-2.12.0+rocm7.2-cp311-cp311-linux_x86_64.whl") in found
    assert "rocm7.2 torch 2.13.0: triton: METADATA pins ['3.6.0'], compat has 3.7.1" in found


def test_gfx_lists_follow_the_dated_pull_requests() -> None:
    """Each target arrives with the release the PR that added it to PYTORCH_ROCM_ARCH reached: gfx1101 in 2.6
    (pytorch #141667), gfx1102 in 2.7 (#147761), gfx950/gfx1150/gfx1151 with the ROCm >= 7.0 builds of 2.10
    (#167299), gfx1103 not in 2.11/2.12 (#179653; uv #18730 read the 2.11 rocm7.2 wheel's list)."""
    vm = load_vendor_matrix()
    assert {g: vm.first_series_with(g) for g in ("gfx1101", "gfx1102", "gfx950", "gfx1150", "gfx1151", "gfx1103")} == {
        "gfx1101": "2.6", "gfx1102": "2.7", "gfx950": "2.10", "gfx1150": "2.10", "gfx1151": "2.10", "gfx1103": "2.13"}
    for v in ("2.8.0", "2.9.1"):
        assert all(g not in b.gfx for b in vm.rocm_builds(v) for g in ("gfx950", "gfx1150", "gfx1151")), v
    for v in ("2.11.0", "2.12.1"):
        assert all("gfx1103" not in b.gfx for b in vm.rocm_builds(v)), v
    # where a target's presence is not read, the row says so, and the decision can tell
    for b in vm.rocm:
        if "gfx1103" in b.gfx:
            assert "gfx1103" in b.gfx_inferred and "#179653" in b.gfx_inferred_note, (b.torch, b.backend)
    # rocBLAS of ROCm >= 6.4 ships no Tensile library for gfx900/gfx906: listed, not runnable
    assert all(b.gfx_unusable == ("gfx900", "gfx906") for b in vm.rocm
               if Version(b.rocm) >= Version("6.4") and "gfx906" in b.gfx)


def test_amdgpu_window_as_amd_states_it() -> None:
    """AMD's amdgpu compatibility matrix (the edition with 31.50): both ways, a year apart from ROCm 6.4 on."""
    vm = load_vendor_matrix()
    assert vm.amdgpu_supports("30.30", "6.3") is True  # amdgpu-docs #97
    assert vm.amdgpu_supports("30.30", "6.2") is False and vm.amdgpu_supports("30.10", "6.2") is True
    assert vm.amdgpu_supports("6.4", "7.2") is True and vm.amdgpu_supports("6.4", "7.14") is False
    assert vm.amdgpu_supports("6.12.12", "7.1") is True  # the 6.4 driver's DKMS module
    # 30.20 and 30.30 both ship 6.16.x modules: such a host is judged by what both support
    assert [d.release for d in vm.amdgpu_releases("6.16.13")] == ["30.20", "30.30"]
    assert vm.amdgpu_supports("6.16.13", "7.14") is True
    assert vm.newer_amdgpu_for("6.4", "7.14").release == "30.10"  # type: ignore[union-attr]
    assert vm.newer_amdgpu_for("30.30", "6.2") is None  # older than it supports: no newer driver helps
    assert vm.amdgpu_release("31.50.1") is not None and vm.amdgpu_release("31.50.1").module == ""  # type: ignore[union-attr]


def test_the_rocm_sdk_family_is_a_class() -> None:
    """Every name TheRock publishes is bound to the rocm* index, whatever its gfx or family suffix."""
    vm = load_vendor_matrix()
    for name in ("rocm", "rocm-sdk-core", "rocm-sdk-libraries", "rocm-sdk-libraries-gfx94x-dcgpu",
                 "rocm-sdk-device-gfx942", "rocm-sdk-device-gfx1250", "rocm-sdk-devel", "rocm-profiler",
                 "amd-torch-device-gfx1151"):
        assert vm.rocm_only_name(name), name
    assert not vm.rocm_only_name("rocmate") and not vm.rocm_only_name("filelock")
    assert vm.rocm_served_name("amdsmi") and not vm.rocm_served_name("numpy")


def test_xpu_windows_wheels_pin_triton_from_2_7() -> None:
    """pytorch #148755 (2025-03-10) made the Triton XPU package a dependency of the Windows XPU wheel."""
    vm = load_vendor_matrix()
    assert "win_amd64" not in vm.xpu_build("2.6.0").triton_platforms  # type: ignore[union-attr]
    for x in vm.xpu:
        if Version(x.torch) >= Version("2.7"):
            assert x.triton_platforms == ("linux_x86_64", "win_amd64") and "148755" in x.triton_platforms_source


# The rocm-sdk-device-* packages pytorch/test-infra mirrors as the dependencies of torch's rocm7.14 builds
# (s3_management/update_dependencies.py at 61a77570f, PACKAGES_PER_PROJECT, project torch_rocm, target rocm7.14).
ROCM714_SDK_DEVICES = ("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1010", "gfx1011", "gfx1012", "gfx1030", "gfx1031",
                       "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036", "gfx1100", "gfx1101", "gfx1102",
                       "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153", "gfx1200", "gfx1201", "gfx1250")


def test_the_rocm714_rows_name_every_target_its_sdk_serves_and_mark_the_unread_ones_inferred() -> None:
    """The rocm7.14 list was the 7.2 list trimmed: an RX 6700 XT (gfx1031) read as a fact that no build carries its
    code, though the SDK the build takes its libraries from has its device package. Each target the mirrored SDK
    serves is listed; those no source shows in torch's own PYTORCH_ROCM_ARCH are gfx_inferred, with a note that says
    so and a source that names the mirror."""
    vm = load_vendor_matrix()
    rows = [b for b in vm.rocm if b.backend == "rocm7.14"]
    assert [b.torch for b in rows] == ["2.14", "2.15"]
    read_before = {"gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1150",
                   "gfx1151", "gfx1200", "gfx1201"}  # in the 7.2 builds' lists, read from their sources
    for b in rows:
        assert set(b.gfx) == set(ROCM714_SDK_DEVICES), b.torch
        assert set(b.gfx_inferred) == set(ROCM714_SDK_DEVICES) - read_before, b.torch
        assert "update_dependencies.py" in b.gfx_source and "61a7757" in b.gfx_source
        assert b.gfx_inferred_note.startswith("TheRock's SDK has device packages for them") and "not read" in \
            b.gfx_inferred_note
