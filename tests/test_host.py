"""Host detection against recorded and hand-written machine outputs (tests/fixtures/hosts/)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import shlex
import shutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tritonlock.compat.matrix
from tritonlock.host import _probes as p
from tritonlock.host import described
from tritonlock import host
from tritonlock.errors import HostError
from tritonlock.models import Gpu, HostProfile, TargetSpec

FIXTURES = Path(__file__).parent / "fixtures" / "hosts"
H200_UUID = "GPU-b6e7c911-47bf-4c6f-0de1-8309803e1a0e"
TODAY = datetime.date(2026, 11, 30)


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


class NVMLError(Exception):
    """Stands in for pynvml.NVMLError: the probe must catch the module's own class."""


def fake_pynvml(fx: dict[str, Any], *, init_error: str | None = None, fail_at: str | None = None) -> Any:
    """A pynvml module answering what NVML answered on the recorded machine (NVML is the one mock).

    WSL fixtures only initialise once the probe has handed pynvml the WSL library (nvmlLib set),
    as the real binding does when libnvidia-ml.so.1 is not on the loader path."""
    m: Any = types.ModuleType("pynvml")
    m.NVMLError = NVMLError
    m.nvmlLib = None
    m.calls = []
    old = fx.get("nvml_old_bindings", False)  # nvidia-ml-py < 11.515: bytes, no _v2

    def enc(s: str) -> str | bytes:
        return s.encode() if old else s

    def call(name: str, result: Any) -> Any:
        m.calls.append(name)
        if name == fail_at:
            raise NVMLError("Unknown Error")
        return result() if callable(result) else result

    def init() -> None:
        m.calls.append("nvmlInit")
        if init_error:
            raise NVMLError(init_error)
        if fx.get("wsl") and m.nvmlLib is None:
            raise NVMLError("NVML Shared Library Not Found")

    devices = fx["nvml_devices"]
    m.nvmlInit = init
    m.nvmlShutdown = lambda: m.calls.append("nvmlShutdown")
    m.nvmlSystemGetDriverVersion = lambda: call("driver", enc(fx["nvml_driver"]))
    m.nvmlSystemGetCudaDriverVersion = lambda: call("cuda", fx["nvml_cuda_driver"])
    if not old:
        m.nvmlSystemGetCudaDriverVersion_v2 = lambda: call("cuda_v2", fx["nvml_cuda_driver"])
    m.nvmlDeviceGetCount = lambda: call("count", len(devices))
    m.nvmlDeviceGetHandleByIndex = lambda i: devices[i]
    m.nvmlDeviceGetName = lambda h: enc(h["name"])
    m.nvmlDeviceGetCudaComputeCapability = lambda h: tuple(h["cc"])
    m.nvmlDeviceGetMemoryInfo = lambda h: call("memory", types.SimpleNamespace(total=h["mem"]))
    m.nvmlDeviceGetUUID = lambda h: enc(h["uuid"])
    return m


class World:
    """A fake machine: executables first on PATH, files under a fake root, a fake pynvml."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp, self.mp = tmp, monkeypatch
        self.root, self.bin, self.log = tmp / "root", tmp / "bin", tmp / "calls.log"
        self.root.mkdir()
        self.bin.mkdir()
        self.loaded: list[str] = []

    def tool(self, path: Path, answers: list[tuple[str, str, int]]) -> None:
        """A shell script answering by its arguments: [(case pattern, stdout, exit status)]."""
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["#!/bin/sh", f'echo "{path.name} $*" >> {shlex.quote(str(self.log))}', 'case "$*" in']
        for n, (pattern, out, rc) in enumerate(answers):
            answer = self.tmp / f"{path.name}.{n}.out"
            answer.write_text(out + "\n")
            lines.append(f"  {pattern}) /bin/cat {shlex.quote(str(answer))}; exit {rc} ;;")
        path.write_text("\n".join([*lines, "esac", "exit 1", ""]))
        path.chmod(0o755)

    def file(self, rel: str, text: str = "") -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def install(self, fx: dict[str, Any], *, nvml: bool = True, smi: bool = True, proc: bool = True,
                nvcc: bool = True, **nvml_options: Any) -> Any:
        fake = None
        if nvml and "nvml_devices" in fx:
            fake = fake_pynvml(fx, **nvml_options)
            self.mp.setitem(sys.modules, "pynvml", fake)
            if fx.get("wsl"):
                self.file(f"{p.WSL_LIB}/libnvidia-ml.so.1")
        smi_dir = self.root / p.WSL_LIB if fx.get("wsl") else self.bin
        if smi and "nvidia_smi" in fx:
            self.tool(smi_dir / "nvidia-smi", [
                ("*--query-gpu=*", fx["nvidia_smi"], 0), ('""', fx["nvidia_smi_head"], 0)])
        if smi and "nvidia_smi_query_error" in fx:
            error = fx["nvidia_smi_query_error"]
            self.tool(smi_dir / "nvidia-smi", [
                ("*compute_cap*", error["stdout"], error["rc"]),
                ("*--query-gpu=*", fx["nvidia_smi_legacy"], 0),
                ('""', fx["nvidia_smi_head"], 0)])
        if proc and "proc_driver" in fx:
            self.file(p.PROC_DRIVER, fx["proc_driver"])
        if "proc_version" in fx:
            self.file(p.PROC_VERSION, fx["proc_version"])
        if "cgroup" in fx:
            self.file(p.PROC_CGROUP, fx["cgroup"])
        for name in fx.get("files", []):
            self.file(name)
        if nvcc and "nvcc" in fx:
            where = fx.get("nvcc_location")
            self.tool((self.root / where.lstrip("/") if where else self.bin) / "nvcc", [("--version", fx["nvcc"], 0)])
        return fake

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


def _no_matrix(path: str | None = None) -> Any:
    raise NotImplementedError


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in described.OVERRIDE_KEYS:
        monkeypatch.delenv(described.ENV_PREFIX + key.upper(), raising=False)
    for key in ("CUDA_HOME", "CUDA_PATH", "KUBERNETES_SERVICE_HOST", "container"):
        monkeypatch.delenv(key, raising=False)
    host.clear_cache()
    yield
    host.clear_cache()


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None) -> World:
    monkeypatch.setattr(p, "ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setitem(sys.modules, "pynvml", None)  # None in sys.modules: `import pynvml` fails
    w = World(tmp_path, monkeypatch)

    def load_library(path: str) -> str:
        w.loaded.append(path)
        return f"<CDLL {path}>"

    monkeypatch.setattr(p, "_load_library", load_library)
    # GPU names map through compat/ data; off unless a test gives a table, whatever matrix.py does now.
    monkeypatch.setattr(tritonlock.compat.matrix, "load_matrix", _no_matrix)
    return w


def gpu_names(monkeypatch: pytest.MonkeyPatch, table: dict[str, str]) -> None:
    fake = types.SimpleNamespace(gpu_cc=lambda name: table.get(name))
    monkeypatch.setattr(tritonlock.compat.matrix, "load_matrix", lambda path=None: fake)


H200_GPU = Gpu(index=0, name="NVIDIA H200", cc="9.0", memory_mib=143771, uuid=H200_UUID)


# ---- probe order and fallbacks -------------------------------------------------------------


def test_h200_nvml_is_preferred_and_nvidia_smi_never_runs(world: World) -> None:
    nvml = world.install(fixture("h200"))
    profile = host.detect()
    assert (profile.driver, profile.cuda_driver, profile.gpus) == ("580.159.04", "13.0", (H200_GPU,))
    assert profile.probes[:3] == ("driver: nvml", "cuda: nvml", "gpus: nvml")
    assert profile.nvcc == "13.0"
    assert f"nvcc: {world.bin}/nvcc (PATH)" in profile.probes
    assert profile.warnings == ()
    assert [c for c in world.calls() if c.startswith("nvidia-smi")] == []
    assert nvml.calls[0] == "nvmlInit" and nvml.calls[-1] == "nvmlShutdown"
    assert "cuda_v2" in nvml.calls  # the _v2 call where the binding has it


def test_h200_nvml_init_fails_falls_back_to_nvidia_smi(world: World) -> None:
    nvml = world.install(fixture("h200"), init_error="Driver/library version mismatch")
    profile = host.detect()
    assert nvml.calls == ["nvmlInit"]
    assert profile.driver == "580.159.04"
    assert profile.cuda_driver == "13.0"  # from the banner's "CUDA Version: 13.0"
    # The recorded query had no index/uuid columns: position gives the index, uuid stays unknown.
    assert profile.gpus == (Gpu(index=0, name="NVIDIA H200", cc="9.0", memory_mib=143771, uuid=None),)
    assert profile.probes[:3] == ("driver: nvidia-smi", "cuda: nvidia-smi", "gpus: nvidia-smi")
    query = ",".join(p.SMI_FIELDS)
    assert [c for c in world.calls() if c.startswith("nvidia-smi")] == [
        f"nvidia-smi --query-gpu={query} --format=csv", "nvidia-smi "]


def test_nvml_failing_mid_query_still_shuts_down_and_falls_back(world: World) -> None:
    nvml = world.install(fixture("h200"), fail_at="count")
    profile = host.detect()
    assert nvml.calls[-1] == "nvmlShutdown"
    assert profile.probes[0] == "driver: nvidia-smi"
    assert profile.gpus[0].cc == "9.0"


def test_h200_proc_only_gives_the_driver_and_says_gpus_are_unknown(world: World) -> None:
    world.install(fixture("h200"), nvml=False, smi=False)
    profile = host.detect()
    assert (profile.driver, profile.cuda_driver, profile.gpus) == ("580.159.04", None, ())
    assert profile.probes[0] == "driver: /proc/driver/nvidia/version"
    assert not any(probe.startswith(("cuda:", "gpus:")) for probe in profile.probes)
    assert profile.warnings == (
        "NVIDIA driver 580.159.04 found but no GPU could be listed with its compute capability"
        " (NVML and nvidia-smi gave none): set TRITONLOCK_GPUS, e.g. TRITONLOCK_GPUS=8.0",)


def test_results_are_cached_until_clear_cache(world: World) -> None:
    world.install(fixture("rtx4090x2_550"))
    sys.modules["pynvml"] = None  # type: ignore[assignment]  # undone by monkeypatch
    host.detect()
    host.detect()
    assert len([c for c in world.calls() if c.startswith("nvidia-smi")]) == 2  # query + banner, once
    host.clear_cache()
    host.detect()
    assert len([c for c in world.calls() if c.startswith("nvidia-smi")]) == 4


# ---- the hand-written machines -------------------------------------------------------------


def test_a100_toolkit_newer_than_driver_warns(world: World) -> None:
    world.install(fixture("a100_535_nvcc124"))
    profile = host.detect()
    assert (profile.driver, profile.cuda_driver) == ("535.104.05", "12.2")
    assert [g.cc for g in profile.gpus] == ["8.0"] * 8
    assert profile.gpus[7] == Gpu(index=7, name="NVIDIA A100-SXM4-80GB", cc="8.0", memory_mib=81920,
                                  uuid="GPU-4f7b9d1e-6c8a-4eac-8d5f-7b9d1e3f5a87")
    assert profile.nvcc == "12.4"
    assert "nvcc: /usr/local/cuda/bin/nvcc" in profile.probes  # not on PATH: the default location
    assert profile.warnings == (
        "nvcc 12.4 is newer than the CUDA 12.2 this driver supports: code built with this nvcc may fail"
        " with cudaErrorInsufficientDriver; PyTorch wheels bring their own runtime, so this does not"
        " affect torch",)


def test_nvcc_from_cuda_home(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    fx = fixture("a100_535_nvcc124")
    home = world.tmp / "cuda-12.4"
    world.tool(home / "bin" / "nvcc", [("--version", fx["nvcc"], 0)])
    monkeypatch.setenv("CUDA_HOME", str(home))
    assert p.nvcc() == ("12.4", f"{home}/bin/nvcc (CUDA_HOME)")


def test_dual_4090_from_nvidia_smi_alone(world: World) -> None:
    world.install(fixture("rtx4090x2_550"), nvml=False)
    profile = host.detect()
    assert (profile.driver, profile.cuda_driver) == ("550.107.02", "12.4")
    assert profile.gpus == (
        Gpu(index=0, name="NVIDIA GeForce RTX 4090", cc="8.9", memory_mib=24564,
            uuid="GPU-6a1f3c5e-7b9d-2e4f-8a0c-1e3f5a7b9c0d"),
        Gpu(index=1, name="NVIDIA GeForce RTX 4090", cc="8.9", memory_mib=24564,
            uuid="GPU-8c3e5a7c-9d1f-4a6b-a2c4-3e5a7c9e1f2b"),
    )
    assert profile.nvcc is None
    assert profile.warnings == ()
    assert host.to_target(profile, "ws").gpus == ("8.9", "8.9")


def test_gtx1080_old_bindings_through_nvml(world: World) -> None:
    nvml = world.install(fixture("gtx1080_470"))
    profile = host.detect()
    assert (profile.driver, profile.cuda_driver) == ("470.256.02", "11.4")  # bytes decoded, 11040 -> 11.4
    assert profile.gpus == (Gpu(index=0, name="NVIDIA GeForce GTX 1080", cc="6.1", memory_mib=8192,
                                uuid="GPU-0f5b7d9e-1a3c-5e7f-9b2d-4f6a8c0e2a4b"),)
    assert "cuda" in nvml.calls and "cuda_v2" not in nvml.calls


def test_gtx1080_nvidia_smi_without_compute_cap_and_no_gpu_table(world: World) -> None:
    world.install(fixture("gtx1080_470"), nvml=False)
    profile = host.detect()
    assert (profile.driver, profile.cuda_driver, profile.gpus) == ("470.256.02", "11.4", ())
    assert profile.probes[:2] == ("driver: nvidia-smi", "cuda: nvidia-smi")
    assert profile.warnings[0].startswith("NVIDIA driver 470.256.02 found but no GPU could be listed")
    queries = [c for c in world.calls() if "--query-gpu" in c]
    assert len(queries) == 2 and "compute_cap" in queries[0] and "compute_cap" not in queries[1]


def test_gtx1080_nvidia_smi_names_map_through_the_gpu_table(world: World,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    gpu_names(monkeypatch, {"NVIDIA GeForce GTX 1080": "6.1"})
    world.install(fixture("gtx1080_470"), nvml=False)
    profile = host.detect()
    assert profile.gpus == (Gpu(index=0, name="NVIDIA GeForce GTX 1080", cc="6.1", memory_mib=8192,
                                uuid="GPU-0f5b7d9e-1a3c-5e7f-9b2d-4f6a8c0e2a4b"),)
    assert profile.warnings == ()


def test_wsl2_nvml_from_the_wsl_library(world: World) -> None:
    world.install(fixture("wsl2_rtx3070"))
    profile = host.detect()
    assert world.loaded == [str(world.root / "usr/lib/wsl/lib/libnvidia-ml.so.1")]
    assert profile.wsl is True
    assert (profile.driver, profile.cuda_driver) == ("551.61", "12.4")
    assert profile.gpus[0].cc == "8.6"
    assert profile.probes[0] == "driver: nvml (/usr/lib/wsl/lib/libnvidia-ml.so.1)"
    assert "wsl: /proc/version" in profile.probes


def test_wsl2_nvidia_smi_off_path(world: World) -> None:
    world.install(fixture("wsl2_rtx3070"), nvml=False)
    profile = host.detect()
    assert profile.driver == "551.61"  # the Windows driver, not the banner's NVIDIA-SMI 550.54.10
    assert profile.gpus == (Gpu(index=0, name="NVIDIA GeForce RTX 3070 Laptop GPU", cc="8.6", memory_mib=8192,
                                uuid="GPU-4b6d8f0a-2c4e-6a8c-0e2a-4c6e8a0c2e4f"),)
    assert profile.probes[:3] == (
        "driver: /usr/lib/wsl/lib/nvidia-smi", "cuda: /usr/lib/wsl/lib/nvidia-smi", "gpus: /usr/lib/wsl/lib/nvidia-smi")


def test_docker_without_gpus_sees_the_host_driver_only(world: World) -> None:
    world.install(fixture("docker_no_gpu"))
    profile = host.detect()
    assert (profile.container, profile.driver, profile.gpus) == ("docker", "550.90.07", ())
    assert "container: /.dockerenv" in profile.probes
    assert profile.warnings == (
        "NVIDIA driver 550.90.07 is loaded but no GPU is visible in this docker container (NVML and"
        " nvidia-smi did not answer): start it with GPU access (docker run --gpus all, NVIDIA Container"
        " Toolkit), or set TRITONLOCK_GPUS",)
    assert host.to_target(profile).gpus == ()


def test_no_driver_is_a_cpu_target(world: World) -> None:
    world.install(fixture("no_driver"))
    profile = host.detect()
    assert (profile.driver, profile.cuda_driver, profile.gpus, profile.nvcc) == (None, None, (), None)
    assert (profile.container, profile.wsl) == (None, False)
    assert profile.warnings == (
        "no NVIDIA driver found (NVML, nvidia-smi, /proc/driver/nvidia/version): this is a CPU target",)
    assert not any(probe.startswith(("driver", "cuda", "gpus")) for probe in profile.probes)


def test_a_machine_without_a_driver_never_imports_nvml(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither a loaded driver (/proc, /dev) nor WSL's library: NVML cannot answer, so pynvml (tens of ms of
    import on every command) is not even imported — WSL's probe imported it before looking for its library."""
    world.install(fixture("no_driver"))
    imported: list[int] = []
    real = p._nvml_module
    monkeypatch.setattr(p, "_nvml_module", lambda: imported.append(1) or real())
    assert host.detect().driver is None
    assert imported == []


# ---- overrides -----------------------------------------------------------------------------


def test_flag_beats_env_beats_detection(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.install(fixture("h200"))
    monkeypatch.setenv("TRITONLOCK_CUDA", "12.8")
    monkeypatch.setenv("TRITONLOCK_GLIBC", "2.28")
    profile = host.detect({"cuda": "12.6"})
    assert (profile.cuda_driver, profile.glibc, profile.driver) == ("12.6", "2.28", "580.159.04")
    assert "cuda: override (cuda)" in profile.probes
    assert "glibc: override (TRITONLOCK_GLIBC)" in profile.probes
    assert "cuda: nvml" not in profile.probes
    assert host.detect().cuda_driver == "12.8"


def test_driver_override_does_not_borrow_this_machines_cuda(world: World) -> None:
    world.install(fixture("h200"))
    profile = host.detect({"driver": "535.104.05"})
    assert (profile.driver, profile.cuda_driver) == ("535.104.05", None)
    assert profile.gpus == (H200_GPU,)  # GPUs are still this machine's


def test_driver_none_override_means_cpu_without_warning(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.install(fixture("h200"))
    monkeypatch.setenv("TRITONLOCK_DRIVER", "none")
    profile = host.detect()
    assert (profile.driver, profile.cuda_driver, profile.gpus, profile.warnings) == (None, None, (), ())
    assert profile.probes[0] == "driver: override (TRITONLOCK_DRIVER)"


def test_gpu_overrides_by_compute_capability_and_name(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.install(fixture("no_driver"))
    profile = host.detect({"driver": "550.54.15", "gpus": "8.0, 8.0"})
    assert profile.gpus == (Gpu(index=0, name="", cc="8.0"), Gpu(index=1, name="", cc="8.0"))
    assert profile.warnings == ()
    gpu_names(monkeypatch, {"A100": "8.0", "H100": "9.0"})
    profile = host.detect({"driver": "550.54.15", "gpus": "A100,H100"})
    assert profile.gpus == (Gpu(index=0, name="A100", cc="8.0"), Gpu(index=1, name="H100", cc="9.0"))
    assert host.to_target(profile).gpus == ("8.0", "9.0")


def test_gpu_names_without_a_gpu_table_name_the_value(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.install(fixture("no_driver"))
    monkeypatch.setenv("TRITONLOCK_GPUS", "8.0,A100")
    with pytest.raises(HostError) as e:
        host.detect()
    assert str(e.value) == (
        'host override TRITONLOCK_GPUS="8.0,A100": "A100" is not compute capabilities like "8.0,8.0",'
        ' GPU names like "A100", AMD gfx targets like "gfx942", Intel GPUs like "bmg", or "none"')


def test_bad_overrides_are_all_reported(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.install(fixture("no_driver"))
    monkeypatch.setenv("TRITONLOCK_CUDA", "12")
    with pytest.raises(HostError) as e:
        host.detect({"arch": "sparc", "python": "py3", "driver": "latest", "glibc": "musl", "os": "beos"})
    assert str(e.value) == "\n".join([
        'host override os="beos": expected "linux", "windows" or "macos"',
        'host override arch="sparc": expected "x86_64", "aarch64" or "arm64"',
        'host override driver="latest": expected a driver version like "535.104.05", or "none"',
        'host override TRITONLOCK_CUDA="12": expected a CUDA version like "12.4"',
        'host override glibc="musl": expected a glibc version like "2.35", or "none"',
        'host override python="py3": expected a Python version like "3.12"',
    ])
    assert e.value.exit_code == 2


def test_unknown_and_contradicting_overrides(world: World) -> None:
    world.install(fixture("no_driver"))
    with pytest.raises(HostError) as e:
        host.detect({"gpu": "8.0"})
    assert str(e.value) == 'unknown host override "gpu": expected one of driver, cuda, gpus, os, arch, glibc, python, macos, amdgpu'
    with pytest.raises(HostError) as e:
        host.detect({"driver": "none", "cuda": "12.4", "gpus": "9.0"})
    assert str(e.value) == (
        'host overrides driver="none" and cuda="12.4" contradict: without a driver there is no CUDA\n'
        'host overrides driver="none" and gpus="9.0" contradict: without a driver no GPU is usable')
    with pytest.raises(HostError) as e:
        host.detect({"os": "windows", "glibc": "2.35"})
    assert str(e.value) == 'host overrides os="windows" and glibc="2.35" contradict: glibc is for linux only'


def test_platform_overrides_normalize(world: World) -> None:
    world.install(fixture("no_driver"))
    profile = host.detect({"os": "Darwin", "arch": "arm64", "glibc": "none", "python": "3.13"})
    assert (profile.os, profile.arch, profile.glibc, profile.python) == ("macos", "arm64", None, "3.13")
    assert host.detect({"arch": "arm64"}).arch == "aarch64"  # linux spells it aarch64
    windows = host.detect({"os": "windows", "arch": "AMD64"})
    assert (windows.arch, windows.glibc) == ("x86_64", None)  # this Linux machine's glibc is not carried over
    assert host.detect({"driver": "550.54.15"}).warnings == ()  # a driver named by hand: no "found" warning


# ---- platform probes -----------------------------------------------------------------------


def test_arch_normalization() -> None:
    assert p.normalize_arch("AMD64", "windows") == "x86_64"
    assert p.normalize_arch("x86_64", "linux") == "x86_64"
    assert p.normalize_arch("aarch64", "linux") == "aarch64"
    assert p.normalize_arch("arm64", "macos") == "arm64"
    assert p.normalize_arch("ARM64", "windows") == "arm64"
    assert p.normalize_arch("ppc64le", "linux") is None


def test_glibc_absent_on_musl_and_off_linux(monkeypatch: pytest.MonkeyPatch, clean_env: None) -> None:
    def no_such_name(name: str) -> str:
        raise ValueError("unrecognized configuration name")

    monkeypatch.setattr(os, "confstr", no_such_name)
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))
    assert p.glibc() is None
    host.clear_cache()
    monkeypatch.setattr(platform, "libc_ver", lambda: ("glibc", "2.17"))
    assert p.glibc() == ("2.17", "platform.libc_ver")
    host.clear_cache()
    monkeypatch.setattr(sys, "platform", "darwin")
    assert p.glibc() is None


@pytest.mark.parametrize(("setup", "expected"), [
    ({"env": "KUBERNETES_SERVICE_HOST"}, ("kubernetes", "KUBERNETES_SERVICE_HOST")),
    ({"file": "run/.containerenv"}, ("podman", "/run/.containerenv")),
    ({"cgroup": "12:pids:/kubepods/besteffort/pod1a2b/3c4d\n"}, ("kubernetes", "/proc/1/cgroup")),
    ({"cgroup": "12:devices:/docker/3f2a9c\n"}, ("docker", "/proc/1/cgroup")),
    ({"cgroup": "0::/\n"}, None),
])
def test_container_kinds(world: World, monkeypatch: pytest.MonkeyPatch, setup: dict[str, str],
                         expected: tuple[str, str] | None) -> None:
    if "env" in setup:
        monkeypatch.setenv(setup["env"], "10.96.0.1")
    if "file" in setup:
        world.file(setup["file"])
    if "cgroup" in setup:
        world.file(p.PROC_CGROUP, setup["cgroup"])
    assert p.container() == expected


# ---- projections ---------------------------------------------------------------------------


def h200_profile(world: World) -> HostProfile:
    """The H200 as recorded, with the recorded glibc and Python in place of this machine's."""
    world.install(fixture("h200"))
    profile = host.detect()
    probes = tuple(probe for probe in profile.probes if not probe.startswith("nvcc"))
    return dataclasses.replace(profile, glibc="2.39", python="3.12.3", probes=probes)


def test_to_target(world: World) -> None:
    assert host.to_target(h200_profile(world), "h200") == TargetSpec(
        name="h200", os="linux", arch="x86_64", glibc="2.39", python="3.12", driver="580.159.04",
        cuda="13.0", gpus=("9.0",), origin="host")


def test_target_toml_matches_reference_and_loads_back(world: World, tmp_path: Path) -> None:
    profile = h200_profile(world)
    text = host.target_toml(profile, "h200", today=TODAY)
    assert text == (FIXTURES / "h200.target.toml").read_text()
    saved = tmp_path / "h200.toml"
    saved.write_text(text)
    assert host.load_saved_target(str(saved)) == dataclasses.replace(
        host.to_target(profile, "h200"), origin=f"file:{saved}")


def test_target_toml_for_a_cpu_machine(world: World) -> None:
    world.install(fixture("no_driver"))
    text = host.target_toml(dataclasses.replace(host.detect(), glibc="2.36", python="3.11.2"), "ci", today=TODAY)
    assert text == (
        "# no NVIDIA GPU (CPU target); detected by tritonlock host on 2026-11-30\n"
        '[[targets]]\nname = "ci"\nos = "linux"\narch = "x86_64"\nglibc = "2.36"\npython = "3.11"\ngpus = []\n')


@pytest.mark.parametrize(("gpus", "expected"), [
    ((H200_GPU,), "h200"),
    ((Gpu(index=0, name="NVIDIA A100-SXM4-80GB", cc="8.0"),), "a100-sxm4-80gb"),
    ((Gpu(index=0, name="NVIDIA GeForce RTX 3070 Laptop GPU", cc="8.6"),), "rtx-3070-laptop-gpu"),
    ((Gpu(index=0, name="", cc="8.0"),), "sm80"),
    ((), "cpu"),
])
def test_default_target_name(gpus: tuple[Gpu, ...], expected: str) -> None:
    profile = HostProfile(os="linux", arch="x86_64", python="3.12.3", gpus=gpus)
    assert host.default_target_name(profile) == expected


def test_profile_json_keys_are_stable(world: World) -> None:
    data = host.profile_json(h200_profile(world))
    assert list(data) == ["os", "arch", "python", "glibc", "driver", "cuda_driver", "nvcc", "container",
                          "wsl", "gpus", "probes", "warnings", "macos", "vendor_gpus", "amdgpu", "rocm", "hsa_override",
                          "gpu_links"]
    assert data["gpus"] == [{"index": 0, "name": "NVIDIA H200", "cc": "9.0", "memory_mib": 143771, "uuid": H200_UUID}]
    assert json.loads(json.dumps(data)) == data


def test_format_profile(world: World) -> None:
    assert host.format_profile(h200_profile(world)) == "\n".join([
        "os         linux x86_64, glibc 2.39",
        "python     3.12.3",
        "driver     580.159.04, supports CUDA 13.0",
        f"gpu 0      NVIDIA H200, cc 9.0, 143771 MiB, {H200_UUID}",
        "nvcc       13.0",
        "probe      driver: nvml",
        "probe      cuda: nvml",
        "probe      gpus: nvml",
        "probe      glibc: confstr",
    ])


# ---- saved targets -------------------------------------------------------------------------


def test_load_saved_target_names_file_and_line(tmp_path: Path) -> None:
    saved = tmp_path / "box.toml"
    saved.write_text(
        "# hand-edited\n[[targets]]\nname = \"box\"\nos = \"linux\"\ncuda = \"twelve\"\n"
        "gpus = [\"sm_80\"]\ncolour = \"red\"\ndrivr = \"535.104.05\"\n")
    with pytest.raises(HostError) as e:
        host.load_saved_target(str(saved))
    assert str(e.value) == "\n".join([
        f'{saved}:5: targets[0].cuda = "twelve": expected a CUDA version like "12.4"',
        f"{saved}:6: targets[0].gpus = ['sm_80']: expected a list of compute capabilities like [\"8.0\"]",
        f"{saved}:7: targets[0].colour: unknown key, expected one of name, os, arch, glibc, python, driver, cuda, gpus, macos, "
            "amdgpu, hsa-override",
        f'{saved}:8: targets[0].drivr: unknown key, did you mean "driver"? (expected one of name, os, arch, glibc, '
        "python, driver, cuda, gpus, macos, amdgpu, hsa-override)",
        f"{saved}:2: targets[0].arch is missing",
    ])


def test_load_saved_target_bad_toml_and_shape(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text('[[targets]]\nname = "x"\nos = linux\n')
    with pytest.raises(HostError, match=rf"^{broken}:3: not valid TOML: "):
        host.load_saved_target(str(broken))
    empty = tmp_path / "empty.toml"
    empty.write_text('[environment]\npython = "3.12"\n')
    with pytest.raises(HostError) as e:
        host.load_saved_target(str(empty))
    assert str(e.value) == f"{empty}:1: expected exactly one [[targets]] table, as `tritonlock host --save` writes"
    with pytest.raises(HostError, match=r"cannot read saved target: No such file or directory"):
        host.load_saved_target(str(tmp_path / "missing.toml"))


# ---- this machine, for real ----------------------------------------------------------------

HAS_NVIDIA = bool(shutil.which("nvidia-smi")) or os.path.exists("/proc/driver/nvidia/version")


@pytest.mark.skipif(HAS_NVIDIA, reason="this machine has an NVIDIA driver")
def test_this_machine_is_a_cpu_host(clean_env: None) -> None:
    profile = host.detect()
    assert (profile.driver, profile.cuda_driver, profile.gpus) == (None, None, ())
    assert profile.warnings[0] == host.NO_DRIVER
    assert profile.python == platform.python_version()
    assert profile.os == p.normalize_os(sys.platform)
    assert profile.arch == p.normalize_arch(platform.machine(), profile.os)
    if sys.platform == "linux":
        assert profile.glibc == os.confstr("CS_GNU_LIBC_VERSION").split()[1]  # type: ignore[union-attr]
    assert host.to_target(profile).gpus == ()


@pytest.mark.skipif(not HAS_NVIDIA, reason="no NVIDIA driver on this machine")
def test_this_machine_reports_its_gpus(clean_env: None) -> None:
    profile = host.detect()
    assert profile.driver is not None and profile.gpus
    assert all(gpu.cc.count(".") == 1 for gpu in profile.gpus)


def test_cached_detection_reuses_the_driver_probes_until_the_machine_changes(
        world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`resolve`/`export` ask with cached=True: NVML's answer is kept (as JSON) for the next run on the same
    machine; `host` and `doctor` (cached=False) always probe; another machine key means probing again."""
    import tritonlock._machine

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(tritonlock._machine, "raw_machine_key", lambda: "machine-a")
    nvml = world.install(fixture("h200"))
    first = host.detect(cached=True)
    assert (first.driver, first.gpus) == ("580.159.04", (H200_GPU,)) and nvml.calls[0] == "nvmlInit"
    (cached,) = (tmp_path / "cache" / "tritonlock").glob("host-*.json")
    assert json.loads(cached.read_text())["driver"] == "580.159.04"
    # NVML gone: a cached ask still knows the machine; a fresh one finds what is really there
    monkeypatch.setitem(sys.modules, "pynvml", None)
    host.clear_cache()
    again = host.detect(cached=True)
    assert (again.driver, again.cuda_driver, again.gpus, again.probes[:3]) == (
        "580.159.04", "13.0", (H200_GPU,), ("driver: nvml", "cuda: nvml", "gpus: nvml"))
    host.clear_cache()
    assert host.detect().gpus != (H200_GPU,)
    # another machine (driver files, GPU nodes, steering variables): the cache does not apply
    monkeypatch.setattr(tritonlock._machine, "raw_machine_key", lambda: "machine-b")
    host.clear_cache()
    assert host.detect(cached=True).gpus != (H200_GPU,)
    # overrides always win and never read the cache
    monkeypatch.setattr(tritonlock._machine, "raw_machine_key", lambda: "machine-a")
    monkeypatch.setenv("TRITONLOCK_DRIVER", "none")
    assert host.detect(cached=True).driver is None
    monkeypatch.delenv("TRITONLOCK_DRIVER")
    # a planted or mangled file is only data: ignored, and the probes answer
    cached.write_text('{"driver": "1.0", "cuda": null, "gpus": [{"index": "0"}], "probes": []}')
    host.clear_cache()
    assert host.detect(cached=True).driver != "1.0"
