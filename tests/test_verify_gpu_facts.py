"""The runner's GPU-side facts, read without a GPU: a host whose GPUs are hidden (recorded driver files standing in
for /proc/driver/nvidia and /dev), the NVML samples' summary, what a warm run keeps (ptxas's version, the torch.compile
check's key), and the attention check's slices of the timed size."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import ModuleType

import pytest

from tritonlock.verify import RUNNER


def _module(name: str) -> ModuleType:
    if str(RUNNER) not in sys.path:
        sys.path.insert(0, str(RUNNER))
    return importlib.import_module(f"tlverify.{name}")


def _driver_root(tmp_path: Path, gpus: int = 1, nodes: bool = True) -> Path:
    """A folder laid out like / on an H200 host (bench/h200/host.txt): the driver's GPU folder and device nodes."""
    root = tmp_path / "root"
    for i in range(gpus):
        (root / "proc/driver/nvidia/gpus" / f"0000:{0x18 + i:02x}:00.0").mkdir(parents=True)
    (root / "dev").mkdir(parents=True)
    if nodes:
        for name in ["nvidiactl", *(f"nvidia{i}" for i in range(gpus))]:
            (root / "dev" / name).write_text("")
    return root


@pytest.mark.parametrize(("visible", "nodes", "start"), [
    ("", True, "this host's NVIDIA driver has 1 GPU(s) (/proc/driver/nvidia/gpus), but CUDA_VISIBLE_DEVICES='' hides "
               "every one of them from this process"),
    ("-1", True, "this host's NVIDIA driver has 1 GPU(s) (/proc/driver/nvidia/gpus), but CUDA_VISIBLE_DEVICES='-1'"),
    ("3", True, "this host's NVIDIA driver has 1 GPU(s), numbered 0 to 0, but CUDA_VISIBLE_DEVICES='3' starts with 3"),
    (None, False, "this host's NVIDIA driver has 1 GPU(s) (/proc/driver/nvidia/gpus), but /dev has no nvidia0"),
])
def test_hidden_gpus_are_named_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, visible: str | None,
                                            nodes: bool, start: str) -> None:
    env = _module("envchecks")
    monkeypatch.setenv("TRITONLOCK_VERIFY_DRIVER_ROOT", str(_driver_root(tmp_path, nodes=nodes)))
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    found = env.hidden_gpus()
    assert found is not None
    detail, fix = found
    assert detail.startswith(start)
    assert "`tritonlock verify --interpret`" in fix


def test_visible_gpus_and_hosts_without_a_driver_are_not_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = _module("envchecks")
    monkeypatch.setenv("TRITONLOCK_VERIFY_DRIVER_ROOT", str(_driver_root(tmp_path, gpus=2)))
    for visible in (None, "0", "1", "0,1", "GPU-5f2c"):
        if visible is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        assert env.hidden_gpus() is None, visible
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("TRITONLOCK_VERIFY_DRIVER_ROOT", str(tmp_path / "no-driver"))
    assert env.hidden_gpus() is None  # a CPU host: the interpreter is what it has


def test_a_hidden_gpu_fails_verify_before_torch_is_imported(real_torch_python: str, tmp_path: Path) -> None:
    root = _driver_root(tmp_path)
    args = {"backend": "cu130", "triton": "3.6.0", "expect_gpu": True}
    t0 = time.monotonic()
    proc = subprocess.run([real_torch_python, "-I", str(RUNNER), "--json-args", json.dumps(args)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TRITONLOCK_VERIFY_DRIVER_ROOT": str(root), "CUDA_VISIBLE_DEVICES": ""})
    took = time.monotonic() - t0
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["ok"] is False
    (check,) = doc["checks"]  # nothing else ran: no torch import, no interpreter, no torch.compile process
    assert check["name"] == "GPU visible" and not check["ok"]
    assert "CUDA_VISIBLE_DEVICES='' hides every one of them" in check["detail"]
    assert check["fix"].startswith("unset CUDA_VISIBLE_DEVICES or list the GPUs to use")
    assert doc["torch"] is None and doc["kernels"] == []
    print(f"hidden GPU reported in {took:.2f} s")


def test_samples_are_summarised_over_the_busy_ones() -> None:
    gh = _module("gpuhealth")
    idle = {"sm": 345, "mem": 3201, "reasons": 0x1, "power": 75.0, "temp": 30, "util": 0, "pcie_gen": 1,
            "pcie_width": 16}
    busy = [{"sm": sm, "mem": 3201, "reasons": bits, "power": p, "temp": 60, "util": 100, "pcie_gen": 5,
             "pcie_width": 16} for sm, bits, p in ((1980, 0x0, 400.0), (1515, 0x4, 690.0), (1530, 0x4, 695.0),
                                                   (1410, 0x44, 699.0))]
    out = gh.summarise([idle, *busy])
    assert out["samples"] == 5 and out["busy_samples"] == 4  # the idle sample's PCIe gen 1 (power saving) is left out
    assert (out["sm_clock_min"], out["sm_clock_median"], out["sm_clock_max"]) == (1410, 1530, 1980)
    assert out["pcie_gen_min"] == 5 and out["power_w_max"] == 699.0
    assert out["reasons"] == ["sw_power_cap", "hw_thermal_slowdown"]
    assert out["reason_share"] == {"hw_thermal_slowdown": 0.25, "sw_power_cap": 0.75}
    assert gh.reason_names(0x8 | 0x80) == ["hw_slowdown", "hw_power_brake_slowdown"]


def test_tritonlocks_own_variables_do_not_rerun_the_torch_compile_check(monkeypatch: pytest.MonkeyPatch) -> None:
    memo = _module("memo")

    class Opts:
        interpret = None

    monkeypatch.setenv("TRITONLOCK_NODE", "h200-a")
    a = memo.compile_check_key(Opts())
    monkeypatch.setenv("TRITONLOCK_NODE", "h200-b")  # `verify --record` from another node name: same environment
    assert memo.compile_check_key(Opts()) == a
    monkeypatch.setenv("TORCHINDUCTOR_MAX_AUTOTUNE", "1")  # a variable Inductor reads: another environment
    assert memo.compile_check_key(Opts()) != a


def test_ptxas_version_is_kept_while_the_binary_is_unchanged(tmp_path: Path) -> None:
    env = _module("envchecks")
    calls = tmp_path / "calls"
    fake = tmp_path / "ptxas"
    fake.write_text(f"#!/bin/sh\necho x >> '{calls}'\necho 'Cuda compilation tools, release 12.8, V12.8.93'\n")
    fake.chmod(0o755)
    memo = tmp_path / "memo"
    memo.mkdir()
    for _ in range(3):
        assert "release 12.8, V12.8.93" in env._version_text(str(fake), str(memo))
    assert calls.read_text().count("x") == 1  # run once; read back twice
    fake.write_text(fake.read_text().replace("12.8", "12.9").replace("V12.9.93", "V12.9.86"))
    os.utime(fake, (time.time() + 5, time.time() + 5))
    assert "release 12.9" in env._version_text(str(fake), str(memo))  # another binary: run again
    assert calls.read_text().count("x") == 2
    assert "release 12.9" in env._version_text(str(fake), None)  # no memo folder: always run
    assert calls.read_text().count("x") == 3


def test_the_timed_attention_is_checked_on_slices_of_its_rows(real_torch_python: str) -> None:
    code = textwrap.dedent(f"""
        import json, sys, torch
        sys.path.insert(0, {str(RUNNER)!r})
        from tlverify.k_attention import reference
        torch.manual_seed(0)
        q, k, v = (torch.randn(1, 2, 96, 16) for _ in range(3))
        out = []
        for causal in (False, True):
            whole = reference(torch, q, k, v, causal)
            for at in (0, 40, 80):
                part = reference(torch, q[:, :, at:at + 16], k, v, causal, first=at)
                out.append(float((part - whole[:, :, at:at + 16]).abs().max()))
        print(json.dumps(out))
    """)
    proc = subprocess.run([real_torch_python, "-I", "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert max(json.loads(proc.stdout)) < 1e-12  # the rows of a slice are the same rows of the whole
