"""doctor: the installed Triton's ptxas against the driver, with the real triton of the test venv and recorded hosts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tritonlock.doctor import examine
from tritonlock.compat.matrix import load_matrix
from tritonlock.models import Gpu, HostProfile

M = load_matrix()


def _host(driver: str, cuda: str, *gpus: tuple[str, str]) -> HostProfile:
    return HostProfile(os="linux", arch="x86_64", python="3.12.3", glibc="2.39", driver=driver, cuda_driver=cuda,
                       gpus=tuple(Gpu(index=i, name=n, cc=cc) for i, (n, cc) in enumerate(gpus)))


def _toolkit(root: Path, release: str, version: str) -> Path:
    d = root / f"cuda-{release}" / "bin"
    d.mkdir(parents=True)
    exe = d / "ptxas"
    exe.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{version}'\n")
    exe.chmod(0o755)
    return exe


@pytest.fixture
def no_toolkits(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A PATH and CUDA_HOME that show only the toolkits a test makes (the glob of /usr/local/cuda* stays)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    return bin_dir


def _facts(triton: str) -> tuple[Any, str, str]:
    """The installed triton's bundled ptxas facts (compat/, read from its wheel) and the least driver for each."""
    row = M.ptxas_build("triton", triton, "linux_x86_64")
    assert row is not None and row.blackwell is not None
    floors = {mc.major: mc.linux_driver for mc in M.minor_compat}
    return row, floors[int(row.ptxas.split(".")[0])], floors[int(row.blackwell.split(".")[0])]


def _cuda(version: str) -> str:
    return ".".join(version.split(".")[:2])


def test_a_good_venv_has_no_ptxas_finding(tmp_path: Path, real_torch_python: str, real_triton: str) -> None:
    # a driver that loads what both of the installed triton's ptxas binaries make (sm_90 and sm_120)
    row, hopper, blackwell = _facts(real_triton)
    driver = max(hopper, blackwell, key=lambda v: tuple(int(x) for x in v.split(".")))
    host = _host(driver, "13.0", ("NVIDIA H200", "9.0"), ("NVIDIA GeForce RTX 5090", "12.0"))
    r = examine(tmp_path, real_torch_python, host=host, matrix=M)
    assert "triton-ptxas-too-new" not in [f.id for f in r.findings]


def test_triton_ptxas_newer_than_the_driver_is_an_error_with_both_versions(
        tmp_path: Path, real_torch_python: str, real_triton: str, no_toolkits: Path) -> None:
    row, hopper, blackwell = _facts(real_triton)
    host = _host("470.82.01", "11.4", ("Tesla T4", "7.5"), ("NVIDIA GeForce RTX 5090", "12.0"))
    r = examine(tmp_path, real_torch_python, host=host, matrix=M)
    f, bw = [f for f in r.findings if f.id == "triton-ptxas-too-new"]
    assert f.severity == "error" and r.exit_code == 1
    assert f.title == (f"Triton {real_triton} compiles with a CUDA {_cuda(row.ptxas)} ptxas whose kernels driver "
                       "470.82.01 cannot load: Triton kernels and torch.compile fail on GPU 0 (Tesla T4)")
    assert f.evidence[0].endswith(f"triton/backends/nvidia/bin/ptxas --version: release {_cuda(row.ptxas)}, "
                                  f"V{row.ptxas} (bundled with triton; triton {real_triton} compiles with it for "
                                  "compute capability 7.5)")
    assert f.evidence[1].startswith(f"driver 470.82.01 supports CUDA 11.4 at most; code from a CUDA "
                                    f"{row.ptxas.split('.')[0]}.x ptxas needs driver >= {hopper}")
    assert f.fix.startswith(f"upgrade the NVIDIA driver to >= {hopper} (the R{hopper.split('.')[0]} branch), or keep "
                            "this driver: install a CUDA toolkit this driver supports (CUDA 11.4 or older, new enough "
                            "for sm_75)")
    # the Blackwell GPU is judged by the ptxas-blackwell Triton uses for it, and its own variable
    assert bw.title.startswith(f"Triton {real_triton} compiles with a CUDA {_cuda(row.blackwell)} ptxas-blackwell "
                               "whose kernels driver 470.82.01")
    assert bw.title.endswith("fail on GPU 1 (NVIDIA GeForce RTX 5090)")
    assert "point TRITON_PTXAS_BLACKWELL_PATH at its bin/ptxas" in bw.fix


def test_a_local_toolkit_the_driver_loads_is_named_in_the_fix(
        tmp_path: Path, real_torch_python: str, no_toolkits: Path) -> None:
    old = _toolkit(tmp_path, "11.8", "11.8.89")
    (no_toolkits / "ptxas").symlink_to(old)
    r = examine(tmp_path, real_torch_python, host=_host("520.61.05", "11.8", ("Tesla T4", "7.5")), matrix=M)
    (f,) = [f for f in r.findings if f.id == "triton-ptxas-too-new"]
    assert f.fix == ("upgrade the NVIDIA driver to >= 525.60.13 (the R525 branch), or keep this driver and run with "
                     f"TRITON_PTXAS_PATH={no_toolkits / 'ptxas'} (CUDA 11.8, V11.8.89 — this driver loads its code)")


def test_an_override_too_new_for_the_driver_says_to_unset_it(
        tmp_path: Path, real_torch_python: str, real_triton: str, monkeypatch: pytest.MonkeyPatch) -> None:
    row, _, _ = _facts(real_triton)
    assert row.ptxas.startswith("12.")  # (the bundled one, for sm_90: one R570 loads)
    fake = _toolkit(tmp_path, "13.1", "13.1.80")
    monkeypatch.setenv("TRITON_PTXAS_PATH", str(fake))
    r = examine(tmp_path, real_torch_python, host=_host("570.133.07", "12.8", ("NVIDIA H100", "9.0")), matrix=M)
    (f,) = [f for f in r.findings if f.id == "triton-ptxas-too-new"]
    assert f.evidence[0] == (f"{fake} --version: release 13.1, V13.1.80 (chosen by TRITON_PTXAS_PATH; triton "
                             f"{real_triton} compiles with it for compute capability 9.0)")
    assert f.fix == ("upgrade the NVIDIA driver to >= 580.65.06 (the R580 branch), or unset TRITON_PTXAS_PATH: the "
                     f"ptxas (CUDA {_cuda(row.ptxas)}) bundled with triton {real_triton} is one this driver loads")
