"""verify names the ptxas Triton compiles with on each GPU (found the way the installed Triton finds it), checks it
against the driver, and names that cause when a kernel fails to load — with the real triton of the test venv."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from tritonlock.compat.matrix import load_matrix
from tritonlock.verify import RUNNER

FLOORS = {"12": "525.60.13", "13": "580.65.06"}


def _in_venv(python: str, body: str, env: dict[str, str] | None = None) -> object:
    """Run `body` inside the real venv with the runner importable as `R` and triton loaded; return its JSON."""
    code = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(RUNNER)!r})
        from tlverify import envchecks as R
        import triton
        R.triton = triton
    """) + textwrap.dedent(body)
    proc = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_installed_triton_reports_the_ptxas_the_matrix_recorded(real_torch_python: str, real_triton: str) -> None:
    got = _in_venv(real_torch_python, "print(json.dumps([R.triton_ptxas(90), R.triton_ptxas(120)]))")
    hopper, blackwell = got  # type: ignore[misc]
    row = load_matrix().ptxas_build("triton", real_triton, "linux_x86_64")
    assert row is not None
    # the same facts compat/ read from the wheel, found at run time the way triton itself finds them
    assert hopper["path"].endswith("triton/backends/nvidia/bin/ptxas") and hopper["override"] is None
    assert (hopper["binary"], hopper["version"]) == ("ptxas", row.ptxas)
    assert blackwell["path"].endswith("triton/backends/nvidia/bin/ptxas-blackwell")
    assert (blackwell["binary"], blackwell["version"]) == ("ptxas-blackwell", row.blackwell)


def test_an_override_is_reported_as_such(real_torch_python: str, tmp_path: Path) -> None:
    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\necho 'ptxas: NVIDIA (R) Ptx optimizing assembler'\n"
                    "echo 'Cuda compilation tools, release 11.8, V11.8.89'\n")
    fake.chmod(0o755)
    got = _in_venv(real_torch_python, "print(json.dumps(R.triton_ptxas(80)))", {"TRITON_PTXAS_PATH": str(fake)})
    assert got == {"path": str(fake), "binary": "ptxas", "release": "11.8", "version": "11.8.89",
                   "override": "TRITON_PTXAS_PATH"}


CHECK = """
class Cuda:
    def device_count(self): return 2
    def get_device_capability(self, i): return [(9, 0), (12, 0)][i]
class Torch:
    cuda = Cuda()
r = R.Report(); r.triton = triton.__version__
R.check_ptxas(r, Torch(), {driver!r}, {floors!r})
print(json.dumps(r.checks))
"""


def test_check_ptxas_per_gpu_against_the_driver(real_torch_python: str, real_triton: str) -> None:
    row = load_matrix().ptxas_build("triton", real_triton, "linux_x86_64")
    assert row is not None and row.blackwell is not None  # the facts compat/ read from this very wheel

    def cuda(v: str) -> str:
        return ".".join(v.split(".")[:2])

    ok = _in_venv(real_torch_python, CHECK.format(driver="580.159.04", floors=FLOORS))
    h, b = ok  # type: ignore[misc]
    assert h["name"] == "Triton ptxas cuda:0" and h["ok"]
    hopper_floor, blackwell_floor = FLOORS[row.ptxas.split(".")[0]], FLOORS[row.blackwell.split(".")[0]]
    assert f"triton {real_triton} compiles for sm_90 with " in h["detail"] and (
        f"(bundled with triton; CUDA {cuda(row.ptxas)}, V{row.ptxas})") in h["detail"] and h["detail"].endswith(
        f"driver 580.159.04 >= {hopper_floor} loads its kernels")
    assert b["ok"] and f"ptxas-blackwell (bundled with triton; CUDA {cuda(row.blackwell)}, V{row.blackwell})" in \
        b["detail"]
    # a CUDA 12 ptxas on an R470 driver: the check fails and names both fixes
    bad = _in_venv(real_torch_python, CHECK.format(driver="470.82.01", floors=FLOORS))
    h, b = bad  # type: ignore[misc]
    assert not h["ok"] and f"its kernels need driver >= {hopper_floor} (CUDA {row.ptxas.split('.')[0]}.x " \
        "minor-version compatibility) and this driver is 470.82.01" in h["detail"]
    assert h["fix"].startswith(f"upgrade the NVIDIA driver to >= {hopper_floor}, or point TRITON_PTXAS_PATH at the "
                               "ptxas")
    assert b["fix"].startswith(f"upgrade the NVIDIA driver to >= {blackwell_floor}, or point "
                               "TRITON_PTXAS_BLACKWELL_PATH ")


def _runner() -> ModuleType:
    """The runner's environment checks, imported in this process (they import nothing but the stdlib at load)."""
    if str(RUNNER) not in sys.path:
        sys.path.insert(0, str(RUNNER))
    return importlib.import_module("tlverify.envchecks")


@pytest.mark.parametrize("error", ["CUDA error: device kernel image is invalid",
                                   "triton.runtime.errors: CUDA_ERROR_INVALID_IMAGE"])
def test_a_kernel_that_fails_to_load_names_the_ptxas_cause(error: str) -> None:
    R = _runner()
    info = {"path": "/v/triton/backends/nvidia/bin/ptxas-blackwell", "binary": "ptxas-blackwell", "release": "13.1",
            "version": "13.1.80", "override": None}
    why = R.explain_load_failure(error, info, "570.133.07", FLOORS)
    assert why == (" — cause: Triton compiled it with /v/triton/backends/nvidia/bin/ptxas-blackwell (CUDA 13.1), whose "
                   "code needs driver >= 580.65.06; this driver is 570.133.07. Upgrade the driver, or point "
                   "TRITON_PTXAS_BLACKWELL_PATH at a ptxas this driver loads")
    assert R.explain_load_failure("out of memory", info, "570.133.07", FLOORS) == ""
    assert "if the driver (580.95.05) is older" in R.explain_load_failure(error, info, "580.95.05", FLOORS)


def test_run_verify_passes_the_floors_from_the_matrix(tmp_path: Path) -> None:
    """The runner gets cuda.toml's minor-version floors (a stand-in interpreter records what tritonlock sends on its
    stdin once it has read the lock and the host: the expectations the runner's checks compare with)."""
    seen = tmp_path / "args.json"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nhead -n 1 > {seen}\nexit 3\n")
    fake.chmod(0o755)
    from tritonlock.errors import VerifyError
    from tritonlock.verify import run_verify

    with pytest.raises(VerifyError):
        run_verify(str(fake))
    args = json.loads(seen.read_text())
    m = load_matrix()
    assert args["ptxas_floors"] == {str(mc.major): mc.linux_driver for mc in m.minor_compat}
