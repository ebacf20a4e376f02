"""AMD and Intel host detection from hand-written sysfs trees and tool outputs (tests/fixtures/hosts/amd_*, intel_*)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tritonlock.host import _probes as p
from tritonlock.host import described
from tritonlock.host import _vendor as hv
from tritonlock import host
from tritonlock.errors import HostError

FIXTURES = Path(__file__).parent / "fixtures" / "hosts"
REPO = Path(__file__).parent.parent


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


class Machine:
    """A recorded machine: its files under a fake root, its tools first on PATH, its environment."""

    def __init__(self, tmp: Path, mp: pytest.MonkeyPatch) -> None:
        self.tmp, self.mp = tmp, mp
        self.root, self.bin = tmp / "root", tmp / "bin"
        self.root.mkdir()
        self.bin.mkdir()

    def install(self, name: str) -> dict[str, Any]:
        fx = load(name)
        for rel, text in fx["files"].items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for tool, out in fx["tools"].items():
            answer = self.tmp / f"{tool}.out"
            answer.write_text(out)
            exe = self.bin / tool
            exe.write_text(f"#!/bin/sh\n/bin/cat {shlex.quote(str(answer))}\n")
            exe.chmod(0o755)
        for key, value in fx["env"].items():
            self.mp.setenv(key, value)
        return fx

    def env(self) -> dict[str, str]:
        """The environment for a `tritonlock` subprocess on this machine."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITONLOCK_", "HSA_"))}
        env.update(PATH=f"{self.bin}:/usr/bin:/bin", PYTHONPATH=str(REPO), TRITONLOCK_SYSFS_ROOT=str(self.root))
        return env


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    for key in described.OVERRIDE_KEYS:
        monkeypatch.delenv(described.ENV_PREFIX + key.upper(), raising=False)
    monkeypatch.delenv("HSA_OVERRIDE_GFX_VERSION", raising=False)
    monkeypatch.setattr(p, "ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVIDIA driver on these machines
    host.clear_cache()
    yield Machine(tmp_path, monkeypatch)
    host.clear_cache()


def test_mi300x_from_kfd_topology(machine: Machine) -> None:
    machine.install("amd_mi300x_x8")
    prof = host.detect(toolkit=False)
    assert [g.target for g in prof.vendor_gpus] == ["gfx942"] * 8
    assert prof.amdgpu == "6.12.12" and prof.rocm == "6.4.1"
    assert "amd gpus: /sys/class/kfd/kfd/topology/nodes/*/properties (gfx_target_version)" in prof.probes
    assert host.NO_DRIVER not in prof.warnings  # an AMD machine is not a CPU target
    t = host.to_target(prof)
    assert t.gpus == ("gfx942",) * 8 and t.amdgpu == "6.12.12" and t.driver is None


def test_rx7900xtx_from_rocminfo_when_kfd_is_not_visible(machine: Machine) -> None:
    machine.install("amd_rx7900xtx_rocminfo")
    prof = host.detect(toolkit=False)
    assert [g.target for g in prof.vendor_gpus] == ["gfx1100"]
    assert any(pr.startswith("amd gpus: ") and pr.endswith("/rocminfo") for pr in prof.probes)
    assert prof.amdgpu is None  # in-kernel amdgpu: no version file, nothing guessed


def test_rocminfo_parser_skips_cpu_agents() -> None:
    text = load("amd_rx7900xtx_rocminfo")["tools"]["rocminfo"]
    assert hv.rocminfo_targets(text) == ("gfx1100",)
    assert hv.rocminfo_targets("no agents here") is None
    assert hv.enumerator_targets("gfx000\ngfx942\ngfx942\n") == ("gfx942", "gfx942")
    assert hv.enumerator_targets("error: something\n") is None
    assert hv.amd_smi_targets("GPU: 0\n    ASIC:\n        TARGET_GRAPHICS_VERSION: gfx90a\n") == ("gfx90a",)


def test_override_is_seen_and_reported(machine: Machine) -> None:
    machine.install("amd_strix_halo_override")
    prof = host.detect(toolkit=False)
    assert [g.target for g in prof.vendor_gpus] == ["gfx1151"]
    assert prof.hsa_override == "11.0.0"
    assert any(w.startswith("HSA_OVERRIDE_GFX_VERSION=11.0.0 is set") for w in prof.warnings)
    assert host.to_target(prof).hsa_override == "11.0.0"
    assert "override   HSA_OVERRIDE_GFX_VERSION=11.0.0" in host.format_profile(prof)


def test_intel_arc_from_pci_on_xe(machine: Machine) -> None:
    machine.install("intel_arc_b580")
    prof = host.detect(toolkit=False)
    assert [(g.vendor, g.target, g.pci) for g in prof.vendor_gpus] == [("intel", "bmg", "0000:03:00.0")]


def test_intel_max_from_pci_on_i915(machine: Machine) -> None:
    machine.install("intel_max1550_x4")
    assert host.to_target(host.detect(toolkit=False)).gpus == ("pvc",) * 4


def test_mixed_nvidia_and_amd_host_needs_a_choice(machine: Machine) -> None:
    machine.install("mixed_rtx4090_rx7900xtx")
    prof = host.detect(toolkit=False)
    assert host.MIXED_VENDORS in prof.warnings
    with pytest.raises(HostError, match="say which to lock for"):
        host.to_target(prof)
    machine.mp.setenv("TRITONLOCK_GPUS", "gfx1100")
    host.clear_cache()
    chosen = host.to_target(host.detect(toolkit=False))
    assert chosen.gpus == ("gfx1100",)


def test_gpus_override_takes_amd_and_intel_names_and_refuses_mixing(machine: Machine) -> None:
    assert host.to_target(host.detect({"gpus": "MI300X,gfx942:sramecc+:xnack-"}, toolkit=False)).gpus == (
        "gfx942", "gfx942")
    assert host.to_target(host.detect({"gpus": "Arc B580"}, toolkit=False)).gpus == ("bmg",)
    with pytest.raises(HostError, match="NVIDIA and AMD GPUs in one machine description"):
        host.detect({"gpus": "A100,gfx942"}, toolkit=False)
    t = host.to_target(host.detect({"gpus": "gfx90a", "amdgpu": "6.4"}, toolkit=False))
    assert t.amdgpu == "6.4"


def test_nothing_amd_is_guessed_on_a_plain_machine(machine: Machine) -> None:
    prof = host.detect(toolkit=False)
    assert prof.vendor_gpus == () and prof.amdgpu is None and prof.rocm is None
    assert host.NO_DRIVER in prof.warnings


def test_saved_amd_target_round_trips(machine: Machine, tmp_path: Path) -> None:
    machine.install("amd_strix_halo_override")
    prof = host.detect(toolkit=False)
    f = tmp_path / "halo.toml"
    f.write_text(host.target_toml(prof, "halo"))
    t = host.load_saved_target(str(f))
    assert (t.gpus, t.amdgpu, t.hsa_override) == (("gfx1151",), "6.16.13", "11.0.0")


def test_host_json_lists_amd_gpus(machine: Machine) -> None:
    machine.install("amd_mi300x_x8")
    out = host.profile_json(host.detect(toolkit=False))
    assert out["vendor_gpus"][0] == {"index": 0, "vendor": "amd", "target": "gfx942", "name": "CDNA 3", "pci": None}
    assert (out["amdgpu"], out["rocm"], out["hsa_override"]) == ("6.12.12", "6.4.1", None)


def test_cli_host_on_a_recorded_amd_machine(machine: Machine) -> None:
    machine.install("amd_mi300x_x8")
    run = subprocess.run([sys.executable, "-m", "tritonlock", "host", "--json"], capture_output=True, text=True,
                         env=machine.env(), cwd=machine.tmp, timeout=120)
    assert run.returncode == 0, run.stderr
    assert [g["target"] for g in json.loads(run.stdout)["vendor_gpus"]] == ["gfx942"] * 8


def _cli(machine: Machine, *args: str) -> subprocess.CompletedProcess[str]:
    project = machine.tmp / "project"
    project.mkdir(exist_ok=True)
    (project / "triton-env.toml").write_text('[environment]\npython = "3.12"\n', encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "tritonlock", *args, "-p", str(project)], capture_output=True,
                          text=True, env=machine.env(), cwd=project, timeout=180)


def test_resolve_on_a_recorded_mi300x_host_locks_rocm(machine: Machine) -> None:
    machine.install("amd_mi300x_x8")
    run = _cli(machine, "resolve", "--dry-run", "--json")
    assert run.returncode == 0, run.stderr
    (t,) = json.loads(run.stdout)["targets"]
    # amdgpu 6.12.12 is the ROCm 6.4 driver: ROCm 6.1 … 7.2 (AMD's compatibility matrix) -> the newest torch's rocm7.2
    assert (t["name"], t["backend"], t["triton_package"]) == ("host", "rocm7.2", "triton-rocm")
    assert ("amdgpu driver module 6.12.12, taken as release 6.4 (inferred: amdgpu-dkms 6.12.x shipped with ROCm 6.4, not "
            "read from a host) supports ROCm 7.2 (AMD's amdgpu compatibility matrix)") in t["reasons"]
    assert any(w.endswith("the lock holds its rocm7.2 build — amdgpu 30.10 or newer (AMD's amdgpu compatibility "
                          "matrix) would allow rocm7.14") for w in t["warnings"])


def test_resolve_on_a_mixed_nvidia_amd_host_asks_for_a_choice(machine: Machine) -> None:
    machine.install("mixed_rtx4090_rx7900xtx")
    run = _cli(machine, "resolve", "--dry-run", "--json")
    assert run.returncode != 0 and run.stdout == ""
    assert "this machine has NVIDIA and AMD GPUs" in run.stderr and "TRITONLOCK_GPUS=gfx942" in run.stderr
    assert "Traceback" not in run.stderr


def test_verified_on_records_tell_amd_machines_apart(machine: Machine) -> None:
    from tritonlock.records import fingerprint

    machine.install("amd_mi300x_x8")
    mi300 = host.detect(toolkit=False)
    other = host.detect({"gpus": "gfx90a"}, toolkit=False)
    assert fingerprint(mi300) != fingerprint(other)
