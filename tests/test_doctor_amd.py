"""doctor on AMD machines: hand-written host facts (tests/fixtures/hosts/amd_*) × real venvs with ROCm-shaped torch."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from test_doctor import doctor, ids, make_venv, only, pkg, torch_files, triton_pkg  # noqa: E402
from tritonlock.doctor import format_report  # noqa: E402
from tritonlock.models import HostProfile, VendorGpu  # noqa: E402


def amd_host(*gfx: str, **kw: object) -> HostProfile:
    """An AMD machine as host.detect reports it from KFD (no NVIDIA driver)."""
    base: dict[str, object] = dict(
        os="linux", arch="x86_64", python="3.12.3", glibc="2.35",
        vendor_gpus=tuple(VendorGpu(index=i, vendor="amd", target=g) for i, g in enumerate(gfx or ("gfx942",))),
        amdgpu="6.12.12", kfd="ok", kfd_group="render",
        probes=("amd gpus: /sys/class/kfd/kfd/topology/nodes/*/properties (gfx_target_version)",))
    base.update(kw)
    return HostProfile(**base)  # type: ignore[arg-type]


def rocm_torch(version: str, hip: str, archs: tuple[str, ...]) -> tuple[str, str, dict[str, object]]:
    """A torch package that answers like a ROCm build: torch.version.hip set, cuda None, gfx arch list."""
    cuda_py = textwrap.dedent(f"""\
        def is_available():
            return True
        def device_count():
            return 1
        def get_arch_list():
            return {list(archs)!r}
        def get_device_capability(i):
            return (9, 4)
        def get_device_name(i):
            return "AMD Instinct MI300X"
        """)
    files = {"torch/__init__.py": f"__version__ = {version!r}\nfrom torch import version, cuda\n",
             "torch/version.py": f"__version__ = {version!r}\ncuda = None\nhip = {hip!r}\n",
             "torch/cuda/__init__.py": cuda_py}
    return pkg("torch", version, files)


GFX_72 = ("gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1102")


def test_healthy_mi300x_has_no_amd_findings(tmp_path: Path) -> None:
    make_venv(tmp_path, triton_pkg("3.7.1", name="triton-rocm"), rocm_torch("2.13.0+rocm7.2", "7.2.26015", GFX_72))
    r = doctor(tmp_path, amd_host("gfx942"))
    assert [i for i in ids(r) if i[0].startswith(("amd", "triton-pypi", "cuda-torch", "no-driver"))] == []
    assert "torch 2.13.0+rocm7.2 (ROCm 7.2.26015, available: yes)" in r.summary[1]
    assert "AMD GPU 0 gfx942" in r.summary[0]


def test_gfx_not_in_the_build(tmp_path: Path) -> None:
    make_venv(tmp_path, rocm_torch("2.13.0+rocm7.2", "7.2.26015", GFX_72))
    f = only(doctor(tmp_path, amd_host("gfx1201")), "amd-gfx-not-in-build")
    assert f.severity == "error" and f.title.startswith("torch 2.13.0+rocm7.2 carries no code for gfx1201")
    assert f.evidence[1].startswith("torch.cuda.get_arch_list(): gfx900")


def test_override_on_a_natively_supported_gpu(tmp_path: Path) -> None:
    make_venv(tmp_path, rocm_torch("2.13.0+rocm7.2", "7.2.26015", GFX_72))
    f = only(doctor(tmp_path, amd_host("gfx1101", hsa_override="11.0.0")), "amd-override-native")
    assert f.title == ("HSA_OVERRIDE_GFX_VERSION=11.0.0 makes gfx1101 run gfx1100 code although this torch carries "
                       "native code for gfx1101")


def test_triton_from_pypi_beside_a_rocm_torch(tmp_path: Path) -> None:
    make_venv(tmp_path, triton_pkg("3.7.1", name="triton-rocm"), triton_pkg("3.7.1"),
              rocm_torch("2.13.0+rocm7.2", "7.2.26015", GFX_72))
    f = only(doctor(tmp_path, amd_host("gfx942")), "triton-pypi-beside-rocm")
    assert f.title == ("triton (the CUDA Triton from PyPI) is installed beside a ROCm torch and triton-rocm: both "
                       "install triton/, one overwrote the other")
    assert f.fix.startswith("`pip uninstall triton`")


def test_user_not_in_the_render_group(tmp_path: Path) -> None:
    f = only(doctor(tmp_path, amd_host("gfx1100", kfd="denied", kfd_group="render")), "amd-no-gpu-access")
    assert f.fix == "`sudo usermod -aG render,video $USER`, then log out and in (or `newgrp render`)"


def test_wsl_has_no_dev_kfd(tmp_path: Path) -> None:
    make_venv(tmp_path, rocm_torch("2.13.0+rocm7.2", "7.2.26015", GFX_72))
    r = doctor(tmp_path, amd_host(wsl=True, kfd="missing", vendor_gpus=()))
    f = only(r, "amd-kfd-missing-wsl")
    assert f.severity == "error"  # a ROCm torch is installed: it cannot work here


def test_cuda_torch_on_an_amd_only_host(tmp_path: Path) -> None:
    make_venv(tmp_path, pkg("torch", "2.13.0+cu130", torch_files("2.13.0+cu130", "13.0")))
    r = doctor(tmp_path, amd_host("gfx1100"))
    f = only(r, "cuda-torch-on-amd-host")
    assert f.title.startswith("torch 2.13.0+cu130 is a CUDA 13.0 build, but this machine's GPUs are AMD (gfx1100)")
    assert "no-driver" not in [i for i, _ in ids(r)], format_report(r)


def test_kfd_access_from_the_device_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe behind amd-no-gpu-access: /dev/kfd's group and mode against this user's groups."""
    from tritonlock.host import _probes as p
    from tritonlock.host import _vendor as hv

    monkeypatch.setattr(p, "ROOT", str(tmp_path))
    assert hv.kfd_access() == ("missing", None)
    kfd = tmp_path / "dev" / "kfd"
    kfd.parent.mkdir()
    kfd.write_text("")
    os.chown(kfd, 0, 4242)  # a render group of gid 4242
    kfd.chmod(0o660)
    monkeypatch.setattr(hv, "_identity", lambda: (1000, {1000}))
    assert hv.kfd_access()[0] == "denied"
    monkeypatch.setattr(hv, "_identity", lambda: (1000, {1000, 4242}))
    assert hv.kfd_access()[0] == "ok"
