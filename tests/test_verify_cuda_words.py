"""verify's words when a CUDA build of torch cannot start CUDA on a host whose driver answers: the next step follows
the runtime's own reason (a driver older than the build, no GPU for this process, anything else), names commands
that exist, and the triton check is still made where no kernel can run. torch here stands for what cannot exist on
this machine: a driver that answers while CUDA does not start."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest

from tritonlock.verify import RUNNER

sys.path.insert(0, str(RUNNER))
from tlverify import envchecks  # noqa: E402
from tlverify.report import Report  # noqa: E402


def _torch(reason: str) -> Any:
    def init() -> None:
        raise RuntimeError(reason)

    return SimpleNamespace(__version__="2.11.0+cu130", version=SimpleNamespace(cuda="13.0", hip=None),
                           cuda=SimpleNamespace(is_available=lambda: False, init=init))


def _fix(reason: str) -> tuple[str, str]:
    r = Report()
    assert envchecks.check_cuda(r, _torch(reason), True, "535.183.01") is False
    (c,) = r.checks
    assert not c["ok"] and c["name"] == "CUDA available"
    return c["detail"], c["fix"]


@pytest.mark.parametrize("reason", [
    "The NVIDIA driver on your system is too old (found version 12020).",
    "CUDA driver version is insufficient for CUDA runtime version",
    "CUDA error 35"])
def test_a_driver_older_than_the_build_is_told_to_resolve_for_this_driver(reason: str) -> None:
    detail, fix = _fix(reason)
    assert detail == ("torch.cuda.is_available() is False although this host has NVIDIA driver 535.183.01: torch "
                      f"2.11.0+cu130 is built for CUDA 13.0 and could not initialise CUDA: {reason}")
    assert fix.startswith("the driver is older than torch's CUDA build: pick a build this driver runs "
                          "(`tritonlock resolve` decides")


@pytest.mark.parametrize("reason", [
    "CUDA error: no CUDA-capable device is detected", "cudaErrorNoDevice: CUDA error 100",
    "CUDA error: all CUDA-capable devices are busy or unavailable"])
def test_no_gpu_for_this_process_is_not_blamed_on_the_driver(reason: str) -> None:
    _, fix = _fix(reason)
    assert fix.startswith("the driver answers but gives this process no GPU: `nvidia-smi` lists what the driver sees")
    assert "older" not in fix and "update the driver" not in fix


def test_another_reason_points_at_nvidia_smi_and_doctor() -> None:
    _, fix = _fix("CUDA error: unknown error")
    assert fix.startswith("`nvidia-smi` shows the driver's view of the GPUs; `tritonlock doctor` names")
    assert "older than torch's CUDA" in fix  # (one of the causes doctor checks, not a verdict)


def test_no_fix_names_a_command_tritonlock_does_not_have() -> None:
    from click.testing import CliRunner

    from tritonlock.cli import main

    commands = set(main.commands)  # type: ignore[attr-defined]
    text = RUNNER.joinpath("tlverify", "envchecks.py").read_text(encoding="utf-8")
    import re

    named = set(re.findall(r"`tritonlock ([a-z-]+)", text))
    assert named and named <= commands, named - commands
    assert CliRunner().invoke(main, ["--help"]).exit_code == 0


def test_the_triton_version_is_checked_from_its_metadata_where_triton_is_not_imported() -> None:
    r = Report()
    envchecks.check_triton_version(r, "3.5.0", "3.6.0")
    envchecks.check_triton_version(r, "3.6.0", "3.6.0")
    assert [(c["ok"], c["detail"].split(":")[0]) for c in r.checks] == [
        (False, "triton is 3.6.0 but the lock pins triton==3.5.0"), (True, "triton 3.6.0, as the lock pins")]
    assert envchecks.installed_version("surely-not-installed-dist") is None
    assert envchecks.installed_version("pytest") == __import__("pytest").__version__
