"""doctor: recorded host facts × real broken venvs built here, each with the breakage an install guide reports."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))

from pkgindex import build_wheel  # noqa: E402
from tritonlock.lock import lockfile# noqa: E402
from tritonlock.cli import main  # noqa: E402
from tritonlock.doctor import Finding, Report, examine, format_report, report_json  # noqa: E402
from tritonlock.compat.matrix import Matrix  # noqa: E402
from tritonlock.compat.rows import CudaToolkit, MinorCompat, TorchRelease, TritonRelease  # noqa: E402
from tritonlock.models import (  # noqa: E402
    Gpu, HostProfile, Lock, LockedPackage, LockedTarget, Selection, TargetSpec, Wheel,
)

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
LINUX = "py3-none-manylinux_2_17_x86_64"
TORCH_PIN = "triton==3.2.0; platform_system == 'Linux' and platform_machine == 'x86_64'"

# ---------------------------------------------------------------- recorded hosts

H200_FILE = Path(__file__).resolve().parent / "fixtures" / "hosts" / "h200.json"  # copied from shared/hosts


def host(**kw: object) -> HostProfile:
    """The real H200 machine of shared/hosts/h200.json (NVML answers, nvcc, glibc), changed by kw."""
    base: dict[str, object] = dict(
        os="linux", arch="x86_64", python="3.12.3", glibc="2.39", driver="580.159.04", cuda_driver="13.0",
        gpus=(Gpu(index=0, name="NVIDIA H200", cc="9.0", memory_mib=143771,
                  uuid="GPU-b6e7c911-47bf-4c6f-0de1-8309803e1a0e"),),
        nvcc="13.0", probes=("driver: nvml", "cuda: nvml", "gpus: nvml"))
    base.update(kw)
    return HostProfile(**base)  # type: ignore[arg-type]


def gpu(name: str, cc: str) -> tuple[Gpu, ...]:
    return (Gpu(index=0, name=name, cc=cc),)


# Hosts from install-guide reports: `nvidia-smi` header + `nvcc --version` as users pasted them.
A100_SMI_122_NVCC_124 = dict(driver="535.183.01", cuda_driver="12.2", nvcc="12.4", glibc="2.35",
                             gpus=gpu("NVIDIA A100-SXM4-80GB", "8.0"))
RTX5090 = dict(driver="570.124.06", cuda_driver="12.8", nvcc=None, gpus=gpu("NVIDIA GeForce RTX 5090", "12.0"))
GTX1080 = dict(driver="550.120", cuda_driver="12.4", nvcc=None, gpus=gpu("NVIDIA GeForce GTX 1080", "6.1"))
NO_GPU = "NVIDIA driver 580.159.04 is loaded but no GPU is visible in this docker container"


def test_h200_facts_match_the_recording() -> None:
    rec = json.loads(H200_FILE.read_text())
    h = host()
    assert (h.driver, h.cuda_driver, rec["nvml_cuda_driver"]) == (rec["nvml_driver"], "13.0", 13000)
    assert [(g.name, g.cc) for g in h.gpus] == [(d["name"], ".".join(map(str, d["cc"]))) for d in rec["nvml_devices"]]
    assert h.glibc == rec["libc"][1] and "release 13.0" in rec["nvcc"]


MATRIX = Matrix(
    version="test-1",
    cuda=(CudaToolkit(version="12.4", linux_driver="550.54.14", windows_driver="551.61",
                      source="CUDA 12.4 release notes, table 3"),
          CudaToolkit(version="13.0", linux_driver="580.65.06", windows_driver="580.88",
                      source="CUDA 13.0 release notes, table 3")),
    minor_compat=(MinorCompat(major=12, linux_driver="525.60.13", windows_driver="527.41",
                              source="CUDA release notes, minor version compatibility"),),
    torch=(TorchRelease(version="2.6.0", python=("3.9", "3.10", "3.11", "3.12", "3.13"), triton="3.2.0",
                        pypi_backend="cu124", glibc={"linux_x86_64": "2.28"}, variants=(), source="RELEASE.md"),
           TorchRelease(version="2.9.0", python=("3.12", "3.13"), triton="3.5.0", pypi_backend="cu128",
                        glibc={"linux_x86_64": "2.28"}, variants=(), source="test row")),
    triton=(TritonRelease(version="3.2.0", python=("3.11",), platforms=("linux_x86_64",), glibc={}, min_cc="7.0",
                          supported_cc="8.0", source="triton README"),),
    triton_windows=(), gpus=(), torch_index_template="http://127.0.0.1:9/whl/{backend}",
    torch_family=frozenset({"torch", "triton"}),
)

# ---------------------------------------------------------------- real venvs with fake torch / triton


def torch_files(version: str, cuda: str | None, *, available: bool = False, archs: tuple[str, ...] = (),
                devices: tuple[tuple[str, str], ...] = (), warn: str | None = None, init: str | None = None,
                ) -> dict[str, str]:
    """A torch package that behaves like the real one where doctor looks (version, cuda, arch list)."""
    cuda_py = textwrap.dedent(f"""\
        import warnings
        _AVAILABLE, _ARCHS, _DEVICES, _WARN = {available!r}, {list(archs)!r}, {list(devices)!r}, {warn!r}
        def is_available():
            if _WARN:
                warnings.warn(_WARN)
            return _AVAILABLE
        def device_count():
            return len(_DEVICES) if _AVAILABLE else 0
        def get_arch_list():  # like torch: empty when CUDA is unavailable
            return list(_ARCHS) if _AVAILABLE else []
        def get_device_capability(i):
            return tuple(int(x) for x in _DEVICES[i][1].split("."))
        def get_device_name(i):
            return _DEVICES[i][0]
        """)
    return {"torch/__init__.py": init or f"__version__ = {version!r}\nfrom torch import version, cuda\n",
            "torch/version.py": f"__version__ = {version!r}\ncuda = {cuda!r}\n", "torch/cuda/__init__.py": cuda_py}


def pkg(name: str, version: str, files: dict[str, str] | None = None, **kw: object) -> tuple[str, str, dict[str, object]]:
    return name, version, {"modules": files, "tag": LINUX, **kw}


def torch_pkg(version: str, cuda: str | None, pin: bool = True, **kw: object) -> tuple[str, str, dict[str, object]]:
    return pkg("torch", version, torch_files(version, cuda, **kw),  # type: ignore[arg-type]
               requires=(TORCH_PIN,) if pin else ())


def triton_pkg(version: str, init: str | None = None, name: str = "triton") -> tuple[str, str, dict[str, object]]:
    return pkg(name, version, {"triton/__init__.py": init or f"__version__ = {version!r}\n"})


def uv(*args: str) -> None:
    from uv import find_uv_bin

    r = subprocess.run([find_uv_bin(), *args], capture_output=True, text=True,
                       env={**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"})
    assert r.returncode == 0, r.stderr


def make_venv(project: Path, *pkgs: tuple[str, str, dict[str, object]]) -> Path:
    """project/.venv with these wheels installed one by one, in order (a later one overwrites shared files)."""
    venv = project / ".venv"
    uv("venv", "-q", "--python", sys.executable, str(venv))
    for i, (name, version, kw) in enumerate(pkgs):
        kw = dict(kw)
        extra = kw.pop("install_args", ())
        whl = build_wheel(project / "wheels" / str(i), name, version, **kw)  # type: ignore[arg-type]
        uv("pip", "install", "-q", "--python", str(venv / "bin" / "python"), "--no-deps", "--no-index",
           *extra, str(whl))  # type: ignore[arg-type]
    return venv


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def doctor(project: Path, h: HostProfile, matrix: Matrix | None = None) -> Report:
    return examine(project, host=h, matrix=matrix)


def only(report: Report, fid: str) -> Finding:
    found = [f for f in report.findings if f.id == fid]
    assert len(found) == 1, format_report(report)
    return found[0]


def ids(report: Report) -> list[tuple[str, str]]:
    return [(f.id, f.severity) for f in report.findings]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # The probe inherits doctor's environment, as it does for a user: start every test from a clean one.
    for k in ("LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES", "PYTHONPATH", "CONDA_PREFIX",
              "TRITON_PTXAS_PATH"):
        monkeypatch.delenv(k, raising=False)


H200_ARCHS = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")  # torch 2.11.0+cu130 on the H200


def healthy_h200_venv(project: Path) -> Path:
    return make_venv(project, triton_pkg("3.6.0"), pkg("torch", "2.11.0+cu130", torch_files(
        "2.11.0+cu130", "13.0", available=True, archs=H200_ARCHS, devices=(("NVIDIA H200", "9.0"),)),
        requires=("triton==3.6.0; platform_system == 'Linux'",)))


# ---------------------------------------------------------------- healthy


def test_healthy_h200_has_no_findings(tmp_path: Path) -> None:
    venv = healthy_h200_venv(tmp_path)
    r = doctor(tmp_path, host())
    assert ids(r) == [("no-lock", "info")]
    assert r.exit_code == 0
    assert r.summary == (
        "host:  linux/x86_64, glibc 2.39, driver 580.159.04 (CUDA 13.0), GPU 0 NVIDIA H200 (9.0), nvcc 13.0",
        f"venv:  {venv} (Python {sys.version.split()[0]}): torch 2.11.0+cu130 (CUDA 13.0, available: yes), "
        "triton 3.6.0",
        "lock:  none")


# ---------------------------------------------------------------- driver / toolkit


def test_nvidia_smi_12_2_with_nvcc_12_4_says_what_breaks(tmp_path: Path) -> None:
    make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu124", "12.4", available=True, archs=("sm_80",),
                                                       devices=(("NVIDIA A100-SXM4-80GB", "8.0"),)))
    r = doctor(tmp_path, host(**A100_SMI_122_NVCC_124), MATRIX)
    f = only(r, "nvcc-newer-than-driver")
    assert f.severity == "warning"
    assert f.title == "the CUDA toolkit (nvcc 12.4) is newer than the CUDA 12.2 driver 535.183.01 supports"
    assert f.evidence == (
        "nvidia-smi/NVML: driver 535.183.01 supports CUDA 12.2 at most (the newest CUDA the driver runs, not an "
        "installed toolkit)",
        "nvcc --version: release 12.4",
        "not affected: the torch and triton wheels, which bring their own CUDA runtime (nvidia-* wheels) and ptxas",
        "affected: programs built with this nvcc (CUDA extensions compiled from source: flash-attn, apex, "
        "torch.utils.cpp_extension builds) run through minor-version compatibility but cannot JIT their PTX: 'the "
        "provided PTX was compiled with an unsupported toolchain'")
    assert f.fix == ("nothing to do if you only use wheels; to build CUDA code, update the driver to one for CUDA 12.4 "
                     "(>= 550.54.14), or put a CUDA 12.2 toolkit first on PATH and in CUDA_HOME (e.g. "
                     "/usr/local/cuda-12.2)")
    # torch cu124 on a 12.2 driver runs through minor-version compatibility: a warning, not an error
    m = only(r, "torch-cuda-minor-compat")
    assert m.title == ("torch 2.6.0+cu124 is built for CUDA 12.4, newer than the CUDA 12.2 driver 535.183.01 "
                       "supports: it runs through minor-version compatibility")
    assert "CUDA 12.x minor-version compatibility needs driver >= 525.60.13; this host has 535.183.01" in m.evidence
    assert r.exit_code == 0


def test_toolkit_of_another_major_breaks_built_code_and_extension_builds(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu124", "12.4", available=True, archs=("sm_80",)))
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/usr/local/cuda-13.0/bin/ptxas")
    r = doctor(tmp_path, host(**{**A100_SMI_122_NVCC_124, "nvcc": "13.0"}))
    f = only(r, "nvcc-newer-than-driver")
    assert f.evidence[3].endswith("fail at run time: 'CUDA driver version is insufficient for CUDA runtime version'")
    assert f.evidence[4] == ("affected: Triton, because TRITON_PTXAS_PATH=/usr/local/cuda-13.0/bin/ptxas replaces its "
                             "bundled ptxas")
    assert f.fix.endswith("(e.g. /usr/local/cuda-12.2); unset TRITON_PTXAS_PATH")
    m = only(r, "nvcc-torch-mismatch")
    assert m.evidence[2] == ("torch.utils.cpp_extension raises: The detected CUDA version (13.0) mismatches the "
                             "version that was used to compile PyTorch (12.4)")
    assert m.fix.startswith("install a CUDA 12.4 toolkit and point CUDA_HOME at it")


def test_torch_built_for_a_newer_cuda_major_than_the_driver(tmp_path: Path) -> None:
    warn = ("CUDA initialization: The NVIDIA driver on your system is too old (found version 12020). Please update "
            "your GPU driver by downloading and installing a new version from the URL: "
            "http://www.nvidia.com/Download/index.aspx")
    make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.9.0+cu130", "13.0", warn=warn))
    r = doctor(tmp_path, host(**{**A100_SMI_122_NVCC_124, "nvcc": None}), MATRIX)
    f = only(r, "torch-cuda-too-new")
    assert f.severity == "error"
    assert f.title == "torch 2.9.0+cu130 is built for CUDA 13.0, but driver 535.183.01 supports CUDA 12.2 at most"
    assert f.evidence == ("torch 2.9.0+cu130: torch.version.cuda = 13.0",
                          "nvidia-smi/NVML: driver 535.183.01 supports CUDA 12.2 at most", warn)
    assert f.fix == ("update the NVIDIA driver to one for CUDA 13.0 (>= 580.65.06), or lock a build this driver runs: "
                     "`tritonlock resolve` (cuda = \"auto\") then `tritonlock sync`")
    u = only(r, "cuda-unavailable")
    assert u.title == "torch.cuda.is_available() is False in " + str(tmp_path / ".venv") + \
        " although this host has 1 NVIDIA GPU"
    assert "likely cause: the driver is older than this build's CUDA (see torch-cuda-too-new)" in u.evidence
    assert u.fix == "update the driver or lock a build this driver runs (`tritonlock resolve`, `tritonlock sync`)"
    assert r.exit_code == 1


def test_cuda_unavailable_because_cuda_visible_devices_hides_the_gpus(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu126", "12.6"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    u = only(doctor(tmp_path, host()), "cuda-unavailable")
    assert u.evidence[:3] == ("torch 2.6.0+cu126 (CUDA 12.6): torch.cuda.is_available() = False",
                              "GPU 0: NVIDIA H200 (compute capability 9.0)",
                              "likely cause: CUDA_VISIBLE_DEVICES='' hides every GPU")
    assert u.fix == "unset CUDA_VISIBLE_DEVICES (or list the GPUs to use: CUDA_VISIBLE_DEVICES=0)"


def test_cuda_unavailable_with_error_804_names_forward_compat(tmp_path: Path) -> None:
    warn = ("CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
            "calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was "
            "attempted on non supported HW")
    make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu126", "12.6", warn=warn))
    u = only(doctor(tmp_path, host(gpus=gpu("NVIDIA GeForce RTX 4090", "8.9"))), "cuda-unavailable")
    assert ("likely cause: CUDA forward-compatibility libraries are in use on a GPU that does not support them (error "
            "804) — remove the cuda-compat directory from LD_LIBRARY_PATH") in u.evidence


def test_no_driver_with_cuda_torch_is_info_on_a_cpu_machine_but_error_for_a_gpu_lock(tmp_path: Path) -> None:
    make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cpu", None, pin=False),
              pkg("numpy", "1.26.4", {"numpy/__init__.py": ""}))  # Triton's interpreter needs it on this host
    cpu_host = host(driver=None, cuda_driver=None, gpus=(), nvcc=None)
    r = doctor(tmp_path, cpu_host)
    assert ids(r) == [("no-driver", "info"), ("no-lock", "info")]
    assert r.exit_code == 0
    write_lock(tmp_path, [("torch", "2.6.0+cpu"), ("triton", "3.2.0")], backend="cu126", floor="525.60.13")
    r = doctor(tmp_path, cpu_host)
    f = only(r, "no-driver")
    assert (f.severity, f.title) == ("error", "no NVIDIA driver on this host, but the lock's target 'host' is a "
                                               "cu126 build")
    assert f.fix.startswith("install the NVIDIA driver (>= 525.60.13 for the locked build) and reboot")


def test_nvml_unreadable_after_a_driver_upgrade(tmp_path: Path) -> None:
    make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu126", "12.6"))
    h = host(driver="550.54.15", cuda_driver=None, gpus=(), probes=("driver: /proc/driver/nvidia/version",),
             warnings=("NVIDIA driver 550.54.15 found but no GPU could be listed with its compute capability (NVML and "
                       "nvidia-smi did not answer): set TRITONLOCK_GPUS, e.g. TRITONLOCK_GPUS=8.0",))
    f = only(doctor(tmp_path, h), "nvml-unreadable")
    assert f.severity == "error"
    assert f.title == ("NVIDIA driver 550.54.15 is loaded but NVML lists no GPU, but torch 2.6.0+cu126 in "
                       f"{tmp_path / '.venv'} is a CUDA 12.6 build")
    assert "Driver/library version mismatch" in f.fix


# ---------------------------------------------------------------- containers and WSL


def test_container_started_without_gpus(tmp_path: Path) -> None:
    make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu126", "12.6"))
    h = host(container="docker", gpus=(), cuda_driver=None, nvcc=None,
             probes=("driver: /proc/driver/nvidia/version", "container: /.dockerenv"), warnings=(NO_GPU,))
    r = doctor(tmp_path, h)
    f = only(r, "container-no-gpu")
    assert f.severity == "error"
    assert f.title == (f"no GPU is visible inside this docker container, but torch 2.6.0+cu126 in {tmp_path / '.venv'}"
                       " is a CUDA 12.6 build")
    assert f.evidence == ("container: /.dockerenv", "the host's driver 580.159.04 is loaded (/proc/driver/nvidia is "
                          "shared with containers), but NVML and nvidia-smi list no GPU")
    assert f.fix.startswith("run it with `docker run --gpus all …`")
    assert "nvidia-ctk runtime configure --runtime=docker" in f.fix
    k = only(doctor(tmp_path, host(container="kubernetes", gpus=(), driver=None)), "container-no-gpu")
    assert k.fix.startswith("request the GPU in the pod spec (resources.limits: nvidia.com/gpu: 1)")


def test_wsl_without_the_windows_driver(tmp_path: Path) -> None:
    make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu126", "12.6"))
    f = only(doctor(tmp_path, host(wsl=True, driver=None, cuda_driver=None, gpus=(), nvcc=None)), "wsl-no-gpu")
    assert f.severity == "error"
    assert f.evidence[:2] == ("WSL2 kernel (/proc/version names Microsoft)", "driver: none found; GPUs: none listed")
    assert f.evidence[2].startswith("loading libcuda.so.1: libcuda.so.1: cannot open shared object file")
    assert "do not install a Linux NVIDIA driver inside WSL" in f.fix


def _stub_so(path: Path, soname: str) -> Path:
    """A real shared library with a SONAME, built with the system C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build a stub shared library")
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.with_suffix(".c")
    src.write_text("int tritonlock_stub(void) { return 0; }\n")
    subprocess.run([cc, "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(path), str(src)], check=True)
    return path


def test_wsl_with_a_linux_libcuda_shadowing_the_windows_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu126", "12.6", available=True, archs=("sm_89",)))
    lib = _stub_so(tmp_path / "linux-driver" / "libcuda.so.1", "libcuda.so.1")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(lib.parent))
    r = doctor(tmp_path, host(wsl=True, driver="566.36", cuda_driver="12.7", gpus=gpu("NVIDIA GeForce RTX 4090", "8.9")))
    f = only(r, "wsl-libcuda-shadowed")
    assert f.title == (f"libcuda.so.1 loads from {lib}, not from WSL's /usr/lib/wsl/lib: a Linux driver library "
                       "shadows the one the Windows driver provides")
    assert f.evidence == (f"dlopen(libcuda.so.1) → {lib}", "WSL2 kernel", f"LD_LIBRARY_PATH={lib.parent}")
    assert r.exit_code == 1


# ---------------------------------------------------------------- torch builds


def test_cpu_only_torch_on_a_gpu_host(tmp_path: Path) -> None:
    venv = make_venv(tmp_path, torch_pkg("2.6.0+cpu", None, pin=False))
    r = doctor(tmp_path, host())
    f = only(r, "torch-cpu-only")
    assert f == Finding(
        id="torch-cpu-only", severity="error",
        title=f"CPU-only torch 2.6.0+cpu is installed in {venv}, but this host has 1 NVIDIA GPU",
        evidence=(f"torch 2.6.0+cpu: torch.version.cuda = None ({site_packages(venv)}/torch/__init__.py)",
                  "GPU 0: NVIDIA H200 (compute capability 9.0)",
                  "the +cpu local version: the build came from the torch index's cpu variant"),
        fix="lock a CUDA build: cuda = \"auto\" in triton-env.toml (not \"cpu\"), `tritonlock resolve`, then "
            "`tritonlock sync`")
    assert r.exit_code == 1
    write_lock(tmp_path, [("torch", "2.6.0+cu126")], backend="cu126")
    r = doctor(tmp_path, host())
    assert only(r, "torch-cpu-only").fix == "`tritonlock sync` installs the locked cu126 build"
    assert only(r, "venv-drift").evidence == ("torch: 2.6.0+cpu installed, 2.6.0+cu126 locked",)


@pytest.mark.parametrize(("gpu_", "archs", "start"), [
    (gpu("NVIDIA GeForce RTX 5090", "12.0"), ("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"),
     "this GPU is newer than the build: Blackwell GPUs (sm_100, sm_120) need a CUDA 12.8+ build (torch >= 2.7, "
     "backend cu128 or newer) — "),
    (gpu("NVIDIA GeForce GTX 1080", "6.1"), ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"),
     "this GPU is older than the build, which starts at sm_75: newer CUDA builds dropped old GPUs, a cu126 build "
     "still has sm_50…sm_90 (cuda = \"cu126\" in triton-env.toml) — "),
])
def test_gpu_missing_from_the_build_arch_list(tmp_path: Path, gpu_: tuple[Gpu, ...], archs: tuple[str, ...],
                                              start: str) -> None:
    g = gpu_[0]
    warn = (f"{g.name} with CUDA capability sm_{g.cc.replace('.', '')} is not compatible with the current PyTorch "
            f"installation.\nThe current PyTorch install supports CUDA capabilities {' '.join(archs)}.")
    make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu124", "12.4", available=True, archs=archs,
                                                       devices=((g.name, g.cc),), warn=warn))
    r = doctor(tmp_path, host(driver="570.124.06", cuda_driver="12.8", nvcc=None, gpus=gpu_))
    f = only(r, "gpu-arch-missing")
    assert f.title == (f"{g.name} (sm_{g.cc.replace('.', '')}) is not in the arch list of torch 2.6.0+cu124: its CUDA "
                       "kernels cannot run on this GPU")
    assert f.evidence == (f"torch.cuda.get_arch_list(): {' '.join(archs)}", f"GPU 0: {g.name} (compute capability "
                          f"{g.cc})", f"torch warned: {warn}")
    assert f.fix == start + (f"add \"{g.cc}\" to the target's gpus in triton-env.toml, `tritonlock resolve`, then "
                             "`tritonlock sync`")


def test_gpu_too_old_for_triton(tmp_path: Path) -> None:
    make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu126", "12.6", available=True, archs=("sm_60", "sm_70")))
    r = doctor(tmp_path, host(driver="550.120", cuda_driver="12.4", gpus=gpu("Tesla P100-PCIE-16GB", "6.0")), MATRIX)
    f = only(r, "gpu-too-old-for-triton")
    assert f.title == ("Tesla P100-PCIE-16GB (compute capability 6.0) is too old for Triton 3.2.0, which needs compute "
                       "capability >= 7.0")
    assert f.evidence[0] == "compat/: triton 3.2.0: min_cc = 7.0 (triton README)"
    assert not [x for x in r.findings if x.id == "gpu-arch-missing"]
    t4 = doctor(tmp_path, host(gpus=gpu("Tesla T4", "7.5")), MATRIX)
    assert [(x.id, x.severity) for x in t4.findings if "triton" in x.id] == [("gpu-below-triton-support", "warning")]


def test_python_outside_the_lock_and_the_build(tmp_path: Path) -> None:
    other = "3.12" if PY != "3.12" else "3.13"
    make_venv(tmp_path, triton_pkg("3.5.0"), pkg("torch", "2.9.0+cu128", torch_files("2.9.0+cu128", "12.8"),
                                                 requires_python=">=3.12",
                                                 install_args=("--python-version", "3.12")))  # as if on 3.12
    write_lock(tmp_path, [("torch", "2.9.0+cu128"), ("triton", "3.5.0")], python=other)
    r = doctor(tmp_path, host(), MATRIX)
    m = only(r, "python-mismatch")
    assert m.title == (f"{tmp_path / '.venv'} runs Python {sys.version.split()[0]}, but the lock's target 'host' is for "
                       f"Python {other}")
    u = only(r, "python-unsupported")
    assert u.title == f"torch 2.9.0+cu128 is not built for Python {PY} ({tmp_path / '.venv'})"
    assert u.evidence[1:] == ("torch 2.9.0+cu128 METADATA: Requires-Python >=3.12",
                              "compat/: torch 2.9.0 publishes wheels for Python 3.12, 3.13 (test row)")


def test_glibc_older_than_the_installed_wheels_need(tmp_path: Path) -> None:
    # A venv built on a newer machine and copied to a CentOS 7 host (glibc 2.17): the wheels' tags tell.
    make_venv(tmp_path, triton_pkg("3.2.0"), pkg("torch", "2.6.0+cu118", torch_files("2.6.0+cu118", "11.8"),
                                                 tag="cp311-cp311-manylinux_2_28_x86_64", requires=(TORCH_PIN,)))
    r = doctor(tmp_path, host(glibc="2.17", driver="470.82.01", cuda_driver="11.4", nvcc=None,
                              gpus=gpu("Tesla V100-SXM2-16GB", "7.0")))
    f = only(r, "glibc-too-old")
    assert f.title == f"1 installed wheel in {tmp_path / '.venv'} need glibc >= 2.28; this host has 2.17"
    assert f.evidence == ("torch 2.6.0+cu118: wheel tag cp311-cp311-manylinux_2_28_x86_64 needs glibc >= 2.28",
                          "this host: glibc 2.17")


# ---------------------------------------------------------------- triton and mixed installs


def test_triton_missing(tmp_path: Path) -> None:
    make_venv(tmp_path, torch_pkg("2.6.0+cu126", "12.6", available=True, archs=("sm_90",)))
    f = only(doctor(tmp_path, host()), "triton-missing")
    assert f.title == f"torch 2.6.0+cu126 requires triton==3.2.0, which is not installed in {tmp_path / '.venv'}"
    assert f.evidence == (f"torch 2.6.0+cu126 METADATA: Requires-Dist: {TORCH_PIN}",
                          "torch.compile fails with: Cannot find a working triton installation")
    assert f.fix == "`tritonlock resolve` and `tritonlock sync`"


def test_triton_other_than_the_one_torch_pins(tmp_path: Path) -> None:
    venv = make_venv(tmp_path, triton_pkg("3.1.0"), torch_pkg("2.6.0+cu126", "12.6", available=True, archs=("sm_90",)))
    r = doctor(tmp_path, host())
    f = only(r, "triton-version-mismatch")
    assert f.title == "triton 3.1.0 is installed, but torch 2.6.0+cu126 pins triton==3.2.0"
    assert f.evidence[1] == f"triton 3.1.0 in {site_packages(venv)}"
    assert f.fix == "`tritonlock resolve` and `tritonlock sync`; by hand: `pip install 'triton==3.2.0'`"


def test_leftover_pytorch_triton_and_its_undefined_symbol(tmp_path: Path) -> None:
    err = ("ImportError: /x/site-packages/triton/_C/libtriton.so: undefined symbol: "
           "_ZN4mlir6triton3gpu15TritonGPUDialectC1EPNS_11MLIRContextE")
    venv = make_venv(tmp_path, torch_pkg("2.6.0+cu126", "12.6", available=True, archs=("sm_90",)),
                     triton_pkg("3.2.0"),
                     triton_pkg("3.3.0+git35c6c7c6", name="pytorch-triton",
                                init=f"raise ImportError({err.split(': ', 1)[1]!r})\n"))
    r = doctor(tmp_path, host())
    left = only(r, "pytorch-triton-leftover")
    sp = site_packages(venv)
    assert left.title == ("pytorch-triton 3.3.0+git35c6c7c6 and triton 3.2.0 are both installed: both write the same "
                          "`triton` package, so its files are a mix of the two")
    assert left.evidence == (f"triton 3.2.0 in {sp}", f"pytorch-triton 3.3.0+git35c6c7c6 in {sp}")
    assert left.fix == ("`pip uninstall -y pytorch-triton triton` (uv: `uv pip uninstall pytorch-triton triton`), then "
                        "`tritonlock resolve` and `tritonlock sync`; pytorch-triton belongs to nightly torch builds "
                        "only")
    sym = only(r, "undefined-symbol")
    assert sym.title == ("`import triton` fails: libtriton.so needs symbol "
                         "_ZN4mlir6triton3gpu15TritonGPUDialectC1EPNS_11MLIRContextE, which the loaded libraries lack "
                         "— a mixed install")
    assert sym.evidence == (err, f"likely cause: {left.title}")
    assert sym.fix == left.fix
    assert r.exit_code == 1


def _second_torch(project: Path, venv: Path, version: str) -> Path:
    """Another torch copy in a directory a .pth file in the venv puts on sys.path (`pip install --target` + .pth)."""
    other = project / "shared-libs"
    whl = build_wheel(project / "wheels" / "other", "torch", version, tag=LINUX, modules=torch_files(version, "12.4"))
    import zipfile

    zipfile.ZipFile(whl).extractall(other)
    (site_packages(venv) / "shared_libs.pth").write_text(str(other) + "\n")
    return other


def test_two_torch_copies_and_the_undefined_symbol_they_cause(tmp_path: Path) -> None:
    err = ("/x/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister")
    venv = make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu126", "12.6", init=f"raise ImportError({err!r})\n"))
    other = _second_torch(tmp_path, venv, "2.4.1+cu124")
    r = doctor(tmp_path, host())
    dup = only(r, "duplicate-torch")
    assert dup.title == (f"2 copies of torch are importable in {venv}: their compiled libraries and Python files get "
                         "mixed")
    assert dup.evidence == (f"torch 2.6.0+cu126 in {site_packages(venv)}", f"torch 2.4.1+cu124 in {other}")
    assert dup.fix == (f"remove the copies outside the venv ({other}: a .pth file in site-packages (or PYTHONPATH) adds "
                       "that directory: remove it), then `tritonlock resolve` and `tritonlock sync`")
    sym = only(r, "undefined-symbol")
    assert sym.title == ("`import torch` fails: libtorch_cuda.so needs symbol ncclCommRegister, which the loaded "
                         "libraries lack — a mixed install")
    assert sym.evidence == (f"ImportError: {err}", f"likely cause: {dup.title}")
    assert sym.fix == dup.fix


def test_undefined_symbol_with_no_visible_cause_says_rebuild(tmp_path: Path) -> None:
    err = "/x/torch/lib/libtorch_cpu.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev"
    venv = make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu126", "12.6", init=f"raise ImportError({err!r})\n"))
    sym = only(doctor(tmp_path, host()), "undefined-symbol")
    assert sym.evidence[1] == ("no second copy, conda mix, leftover package or shadowing library found: the files of "
                               "one package are from two different builds")
    assert sym.fix == (f"a partial upgrade left files of two builds: rebuild the venv from the lock — remove {venv} and "
                       "run `tritonlock sync`")


def test_import_that_kills_the_interpreter(tmp_path: Path) -> None:
    make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu126", "12.6",
                                                       init="import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"))
    r = doctor(tmp_path, host())
    f = only(r, "torch-import-crash")
    assert f.evidence == ("import phase: killed by SIGSEGV",)
    assert r.summary[1].endswith("torch: import crashed, no triton")


def test_conda_environment_with_pip_installed_torch(tmp_path: Path) -> None:
    venv = make_venv(tmp_path, triton_pkg("3.2.0"), torch_pkg("2.6.0+cu126", "12.6", available=True, archs=("sm_90",)))
    meta = venv / "conda-meta"
    meta.mkdir()
    for f in ("pytorch-2.5.1-py3.11_cuda12.4_cudnn9.1.0_0.json", "pytorch-cuda-12.4-hc786d27_7.json",
              "python-3.11.7-hab00c5b_1_cpython.json"):
        (meta / f).write_text("{}")
    f = only(doctor(tmp_path, host()), "conda-pip-mix")
    assert f.severity == "warning"
    assert f.title == (f"{venv} is a conda environment whose conda packages (pytorch, pytorch-cuda) overlap the torch "
                       "stack installed with uv")
    assert f.evidence[0] == f"{venv}/conda-meta: pytorch, pytorch-cuda"


def test_system_cudnn_on_ld_library_path_shadows_the_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system = tmp_path / "usr-local-cuda" / "lib64"
    _stub_so(system / "libcudnn.so.9", "libcudnn.so.9")
    # torch loads cuDNN by its SONAME, as libtorch_cuda.so's DT_NEEDED does: LD_LIBRARY_PATH wins over the wheel.
    init = "__version__ = '2.6.0+cu126'\nimport ctypes\nctypes.CDLL('libcudnn.so.9')\nfrom torch import version, cuda\n"
    venv = make_venv(tmp_path, triton_pkg("3.2.0"),
                     pkg("nvidia-cudnn-cu12", "9.1.0.70", {"nvidia/cudnn/lib/libcudnn.so.9": "not loaded\n"}),
                     torch_pkg("2.6.0+cu126", "12.6", available=True, archs=("sm_90",), init=init))
    monkeypatch.setenv("LD_LIBRARY_PATH", str(system))
    r = doctor(tmp_path, host())
    f = only(r, "cuda-lib-shadow")
    wheel_lib = site_packages(venv) / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    assert (f.severity, f.title) == ("error", "system CUDA libraries shadow the ones the venv's nvidia-* wheels ship, "
                                              "and torch loaded them")
    assert f.evidence == (f"LD_LIBRARY_PATH={system}",
                          f"LD_LIBRARY_PATH dir {system} holds libcudnn.so.9; the venv's wheels ship libcudnn.so.9",
                          f"torch loaded {system / 'libcudnn.so.9'} instead of the wheel's {wheel_lib}")
    assert f.fix.startswith("unset LD_LIBRARY_PATH (or drop those directories from it) when using this venv")
    # A torch that loads the wheel's copy by path (as torch >= 2.x does for its nvidia-* libraries, seen on the
    # H200) escapes this time: still a warning, since anything loading cuDNN by name gets the system copy.
    lib = site_packages(venv) / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    _stub_so(lib, "libcudnn.so.9")
    (site_packages(venv) / "torch" / "__init__.py").write_text(init.replace("'libcudnn.so.9'", repr(str(lib))))
    w = only(doctor(tmp_path, host()), "cuda-lib-shadow")
    assert (w.severity, w.evidence[2]) == ("warning", "torch loaded the wheels' own copies this time: libcudnn.so.9")
    assert w.title == ("LD_LIBRARY_PATH puts system CUDA libraries ahead of the ones the venv's nvidia-* wheels ship: "
                       "whatever loads them by name gets the system copy")
    monkeypatch.delenv("LD_LIBRARY_PATH")
    assert not [x for x in doctor(tmp_path, host()).findings if x.id == "cuda-lib-shadow"]


# ---------------------------------------------------------------- the lock


def write_lock(project: Path, pkgs: list[tuple[str, str]], *, backend: str = "cu130", python: str = PY,
               floor: str | None = None, intent_hash: str = "sha256:old") -> Lock:
    """A real triton-env.lock (read back through lockfile's checks) for one target named "host"."""
    packages = []
    for name, version in pkgs:
        fname = f"{name}-{version}-{LINUX}.whl"
        packages.append(LockedPackage(name=name, version=version, index="http://127.0.0.1:9/simple", wheels=(
            Wheel(name=fname, url=f"http://127.0.0.1:9/simple/_files/{fname}",
                  sha256=hashlib.sha256(fname.encode()).hexdigest(), size=1),)))
    # a CUDA target is locked for a machine with a driver (the resolver gives driverless targets CPU builds)
    driver = (floor or "580.65.06") if backend.startswith("cu") else None
    sel = Selection(target=TargetSpec(name="host", os="linux", arch="x86_64", python=python, driver=driver),
                    ok=True, python=python,
                    torch=pkgs[0][1].split("+")[0], backend=backend, index="http://127.0.0.1:9/whl/" + backend,
                    triton_package="triton", triton="3.2.0", driver_floor=floor)
    lock = Lock(lock_version="1.0", created_by="tritonlock test", intent_hash=intent_hash, matrix_version="test-1",
                default_index="http://127.0.0.1:9/simple",
                targets=(LockedTarget(selection=sel, packages=tuple(packages)),))
    lockfile.write_lock(lock, project / "triton-env.lock")
    return lock


def test_venv_drift_and_a_stale_lock(tmp_path: Path) -> None:
    from tritonlock.intent.read import read_intent, starter

    healthy_h200_venv(tmp_path)
    (tmp_path / "triton-env.toml").write_text(starter(PY))
    write_lock(tmp_path, [("torch", "2.11.0+cu130"), ("triton", "3.6.0")],
               intent_hash=read_intent(tmp_path / "triton-env.toml").content_hash)
    assert ids(doctor(tmp_path, host())) == []
    write_lock(tmp_path, [("torch", "2.11.0+cu130"), ("triton", "3.5.0"), ("filelock", "3.16.1")])
    r = doctor(tmp_path, host())
    assert ids(r) == [("venv-drift", "error"), ("lock-stale", "warning")]
    assert only(r, "lock-stale").title == (f"{tmp_path / 'triton-env.lock'} is stale: {tmp_path / 'triton-env.toml'} "
                                           "changed since the lock was written")
    d = only(r, "venv-drift")
    assert d.title == f"{tmp_path / '.venv'} differs from {tmp_path / 'triton-env.lock'} (target 'host')"
    assert d.evidence == ("missing: filelock 3.16.1", "triton: 3.6.0 installed, 3.5.0 locked")
    assert d.fix == "`tritonlock sync` (it installs the locked files and removes the rest)"


def test_unreadable_lock_and_driver_below_the_lock_floor(tmp_path: Path) -> None:
    healthy_h200_venv(tmp_path)
    write_lock(tmp_path, [("torch", "2.11.0+cu130"), ("triton", "3.6.0")], floor="580.65.06")
    f = only(doctor(tmp_path, host(driver="575.51.03", cuda_driver="12.9")), "driver-below-lock-floor")
    assert f.title == "the lock's target 'host' (cu130) needs driver >= 580.65.06; this host has 575.51.03"
    (tmp_path / "triton-env.lock").write_text('lock-version = "9.0"\n')
    f = only(doctor(tmp_path, host()), "lock-unreadable")
    assert f.title == (f"{tmp_path / 'triton-env.lock'}: lock-version 9.0 is not supported by this tritonlock (reads "
                       "2.x and 3.x) — upgrade tritonlock, or regenerate the lock with `tritonlock resolve`")


def test_lock_with_no_target_for_this_host(tmp_path: Path) -> None:
    from dataclasses import replace

    healthy_h200_venv(tmp_path)
    one = write_lock(tmp_path, [("torch", "2.11.0+cu130"), ("triton", "3.6.0")])
    t = one.targets[0]
    win = replace(t, selection=replace(t.selection, target=replace(t.selection.target, name="laptop", os="windows")))
    arm = replace(t, selection=replace(t.selection, target=replace(t.selection.target, name="gh200", arch="aarch64")))
    lockfile.write_lock(replace(one, targets=(win, arm)), tmp_path / "triton-env.lock")
    r = doctor(tmp_path, host())
    f = only(r, "lock-no-target")
    assert f.severity == "warning"
    assert f.title.startswith(f"no target in {tmp_path / 'triton-env.lock'} fits this host (linux/x86_64, Python {PY}")
    assert f.evidence == ("laptop: it is for windows/x86_64; this host is linux/x86_64",
                          "gh200: it is for linux/aarch64; this host is linux/x86_64")
    assert "venv-drift" not in [x.id for x in r.findings]


# ---------------------------------------------------------------- CLI


def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), env=env)
    return r.exit_code, r.output


H200_ENV = {"TRITONLOCK_DRIVER": "580.159.04", "TRITONLOCK_CUDA": "13.0", "TRITONLOCK_GPUS": "9.0"}


def test_cli_json_and_exit_code(tmp_path: Path) -> None:
    make_venv(tmp_path, torch_pkg("2.6.0+cpu", None, pin=False))
    code, out = _cli("doctor", "-p", str(tmp_path), "--json", env=H200_ENV)
    assert code == 1
    data = json.loads(out)
    assert set(data) == {"summary", "errors", "findings"} and data["errors"] == 1
    cpu = next(f for f in data["findings"] if f["id"] == "torch-cpu-only")
    assert set(cpu) == {"id", "severity", "title", "evidence", "fix"} and cpu["severity"] == "error"
    code, out = _cli("doctor", "-p", str(tmp_path), env=H200_ENV)
    assert code == 1
    assert f"ERROR [torch-cpu-only] CPU-only torch 2.6.0+cpu is installed in {tmp_path / '.venv'}" in out
    assert out.rstrip().splitlines()[-1].startswith("1 error, ")


def test_cli_other_interpreter_and_missing_one(tmp_path: Path) -> None:
    venv = healthy_h200_venv(tmp_path / "elsewhere")
    code, out = _cli("doctor", "-p", str(tmp_path), "--python", str(venv / "bin" / "python"), "--json", env=H200_ENV)
    data = json.loads(out)
    assert code == 0, out
    assert data["summary"][1].startswith(f"venv:  {venv} ")
    code, out = _cli("doctor", "-p", str(tmp_path), "--venv", str(venv), "--json", env=H200_ENV)
    assert code == 0 and json.loads(out)["summary"][1].startswith(f"venv:  {venv} ")
    # a command's name is the interpreter PATH finds for it (as uv and a shell take `--python python3`)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "tl-test-python").symlink_to(venv / "bin" / "python")
    os.environ["PATH"] = f"{bindir}{os.pathsep}{os.environ['PATH']}"
    try:
        code, out = _cli("doctor", "-p", str(tmp_path), "--python", "tl-test-python", "--json", env=H200_ENV)
    finally:
        os.environ["PATH"] = os.environ["PATH"].split(os.pathsep, 1)[1]
    assert code == 0 and json.loads(out)["summary"][1].startswith("venv:  "), out
    code, out = _cli("doctor", "-p", str(tmp_path), "--python", "tl-no-such-python")
    assert code == 2 and out.startswith("error: tl-no-such-python: no such interpreter"), out
    code, out = _cli("doctor", "-p", str(tmp_path), "--python", str(tmp_path / "nope" / "python"))
    assert code == 2
    assert out == (f"error: {tmp_path / 'nope' / 'python'}: no such interpreter — pass --python PATH to a venv's "
                   "python, or create the project's .venv with `tritonlock sync`\n")


def test_no_venv_examines_the_host_only(tmp_path: Path) -> None:
    r = doctor(tmp_path, host())
    assert ids(r) == [("venv-missing", "warning"), ("no-lock", "info")]
    assert r.summary[1] == f"venv:  none ({tmp_path / '.venv' / 'bin' / 'python'} does not exist)"
    assert report_json(r)["errors"] == 0


def test_doctor_in_an_empty_folder_starts_the_fix_at_init(tmp_path: Path) -> None:
    """No intent here: `sync` cannot make the venv (it asks for `init`), so doctor's fixes start at `init`; with an
    intent they name `sync` and `resolve` as before."""
    r = doctor(tmp_path, host())
    assert [f.fix for f in r.findings] == [
        "`tritonlock init` (no triton-env.toml here yet), then `tritonlock resolve` and `tritonlock sync` create it; "
        "or pass --python PATH for another one",
        "`tritonlock init` first (no triton-env.toml here yet), then `tritonlock resolve` writes one"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # the claim: nothing here
    code, out = _cli("sync", "-p", str(tmp_path))  # and what sync says there
    assert code == 2 and "tritonlock init" in out, out
    (tmp_path / "triton-env.toml").write_text("[environment]\n")
    r = doctor(tmp_path, host())
    assert [f.fix for f in r.findings] == ["`tritonlock sync` creates it; or pass --python PATH for another one",
                                           "`tritonlock resolve` writes one"]
    (tmp_path / "triton-env.toml").unlink()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.tritonlock]\n')  # an intent too
    assert doctor(tmp_path, host()).findings[0].fix.startswith("`tritonlock sync` creates it")
    (tmp_path / "pyproject.toml").unlink()
    write_lock(tmp_path, [("torch", "2.11.0+cu130"), ("triton", "3.6.0")])  # a lock alone: sync makes the venv
    assert only(doctor(tmp_path, host()), "venv-missing").fix.startswith("`tritonlock sync` creates it")


def test_venv_whose_python_was_removed(tmp_path: Path) -> None:
    (tmp_path / "triton-env.toml").write_text("[environment]\n")  # sync can recreate it (no intent: init first)
    venv = make_venv(tmp_path, triton_pkg("3.2.0"))
    gone = tmp_path / "pyenv" / "versions" / "3.11.4" / "bin" / "python3.11"  # upgraded away
    (venv / "bin" / "python").unlink()
    (venv / "bin" / "python").symlink_to(gone)
    r = doctor(tmp_path, host())
    f = only(r, "venv-broken")
    assert f == Finding(id="venv-broken", severity="error",
                        title=f"the venv at {venv} cannot run: its Python interpreter is gone or broken",
                        evidence=(f"{venv / 'bin' / 'python'} points to {gone}, which no longer exists",),
                        fix=f"remove {venv} and run `tritonlock sync` to recreate it")
    assert "venv-missing" not in [x.id for x in r.findings]
    (tmp_path / "triton-env.toml").unlink()
    assert only(doctor(tmp_path, host()), "venv-broken").fix == (
        f"remove {venv}; `tritonlock init` (no triton-env.toml here yet), then `tritonlock resolve` and `tritonlock "
        "sync` make a new one")


def test_real_torch_on_a_gpu_host(tmp_path: Path, real_torch_python: str, real_torch_backend: str,
                                  real_torch_version: str) -> None:
    """The real torch venv examined on recorded GPU hosts: its CPU build (PyTorch's CPU index) is named as such on
    the H200; a CUDA build (the default index's) is not, and on a driver older than its CUDA it is named as too new."""
    ids_of = lambda r: [f.id for f in r.findings]  # noqa: E731
    h200 = examine(tmp_path, real_torch_python, host=host(), matrix=None)
    old = examine(tmp_path, real_torch_python, host=host(driver="535.104.05", cuda_driver="12.2"), matrix=None)
    if real_torch_backend == "cpu":
        f = only(h200, "torch-cpu-only")
        assert f.severity == "error"
        assert f.title.startswith(f"CPU-only torch {real_torch_version} is installed in ")
        assert "torch-cuda-too-new" not in ids_of(old)
    else:
        cuda = f"{real_torch_backend[2:-1]}.{real_torch_backend[-1]}"
        assert "torch-cpu-only" not in ids_of(h200) and "torch-cuda-too-new" not in ids_of(h200), ids_of(h200)
        f = only(old, "torch-cuda-too-new")
        assert f.severity == "error" and f.title == (f"torch {real_torch_version} is built for CUDA {cuda}, but "
                                                     "driver 535.104.05 supports CUDA 12.2 at most"), f.title


CPU_HOST = dict(driver=None, cuda_driver=None, gpus=(), nvcc=None, probes=())


@pytest.mark.slow
def test_real_venv_without_numpy_on_a_cpu_host_is_not_healthy(tmp_path: Path, no_numpy_python: str,
                                                               real_torch_python: str, real_triton: str,
                                                               real_torch_backend: str,
                                                               real_torch_version: str) -> None:
    """What `verify` fails on (Triton's interpreter needs numpy), doctor reports too — and not when numpy is there."""
    r = examine(tmp_path, no_numpy_python, host=host(**CPU_HOST), matrix=None)
    f = only(r, "triton-interpreter-no-numpy")
    venv = Path(no_numpy_python).parent.parent
    assert f.severity == "error" and r.exit_code == 1
    assert f.title == (f"Triton kernels cannot run in {venv}: this host has no NVIDIA GPU, so they run only in "
                       "Triton's interpreter, which needs numpy, and numpy is not installed")
    assert f.evidence[0].startswith(f"triton {real_triton} in ")
    assert f.fix.startswith("lock numpy: `tritonlock resolve --upgrade`")
    healthy = examine(tmp_path, real_torch_python, host=host(**CPU_HOST), matrix=None)
    assert "triton-interpreter-no-numpy" not in [x.id for x in healthy.findings]
    # with a GPU, Triton compiles for it: a CUDA build of torch needs no numpy there; the CPU build is its own
    # finding, and numpy still matters
    on_gpu = examine(tmp_path, no_numpy_python, host=host(), matrix=None)
    if real_torch_backend == "cpu":
        assert only(on_gpu, "triton-interpreter-no-numpy").title.endswith(
            f"torch {real_torch_version} is a CPU build, so they run only in Triton's interpreter, which needs numpy, "
            "and numpy is not installed")
    else:
        assert "triton-interpreter-no-numpy" not in [x.id for x in on_gpu.findings], on_gpu.findings


def test_an_image_interpreter_named_with_python_is_compared_without_false_errors(tmp_path: Path) -> None:
    """The H200 image's /opt/torch/.venv, examined with --python in a project: its 170 extra packages and the CA
    bundle it swapped into certifi are what its owner installed, not damage or an error (seen on the GPU machine)."""
    from tritonlock.doctor import format_report

    image = tmp_path / "image"
    venv = healthy_h200_venv(image)
    extras = [pkg(f"extra{i}", "1.0") for i in range(15)]
    for i, (name, version, kw) in enumerate([pkg("certifi", "2026.7.22", {"certifi/cacert.pem": "bundle\n"}),
                                             *extras]):
        whl = build_wheel(image / "more" / str(i), name, version, **kw)  # type: ignore[arg-type]
        uv("pip", "install", "-q", "--python", str(venv / "bin" / "python"), "--no-deps", "--no-index", str(whl))
    bundle = site_packages(venv) / "certifi" / "cacert.pem"
    bundle.unlink()  # (the image put a file of its own there, as a COPY or a package manager does: not a hard link)
    bundle.write_text("the system's CA bundle, longer\n")
    project = tmp_path / "proj"
    project.mkdir()
    write_lock(project, [("torch", "2.11.0+cu130"), ("triton", "3.6.0")])
    r = examine(project, str(venv / "bin" / "python"), host=host())
    assert r.exit_code == 0, format_report(r)
    modified = only(r, "venv-modified")
    assert modified.severity == "warning"
    assert modified.evidence == ("certifi 2026.7.22: 1 files have another size than RECORD says (certifi/cacert.pem)",)
    drift = only(r, "venv-drift")
    assert drift.severity == "info" and "not made by `tritonlock sync`" in drift.title
    assert drift.evidence == ("and 16 installed package(s) the lock does not list",)
    # the same venv as the project's own .venv is sync's to manage: extras are listed (capped in the text report),
    # and a missing file is damage
    (site_packages(venv) / "extra3" / "__init__.py").unlink()
    (project / ".venv").symlink_to(venv)
    r = examine(project, host=host())
    assert ("venv-damaged", "error") in ids(r)
    drift = only(r, "venv-drift")
    assert drift.severity == "warning" and len(drift.evidence) == 16
    text = format_report(r)
    assert "    evidence: … and 4 more (`tritonlock doctor --json` lists all)" in text
    assert text.count("evidence: not in the lock:") == 12


def test_a_driver_that_does_not_know_the_gpu(tmp_path: Path) -> None:
    """gpus.toml first_cuda / last_branch: an RTX 5090 named by TRITONLOCK_GPUS on R535 (NVML lists none there),
    a Kepler card on a driver past R470; the recorded H200 on R580 and a Jetson Thor's 580.00 are fine."""
    from tritonlock.compat.matrix import load_matrix

    m = load_matrix()
    r = doctor(tmp_path, host(driver="535.104.05", cuda_driver="12.2", nvcc=None,
                              gpus=gpu("RTX 5090", "12.0")), matrix=m)
    f = only(r, "driver-too-old-for-gpu")
    assert (f.severity, f.title) == ("error", "NVIDIA driver 535.104.05 (R535) does not know RTX 5090 (sm_120, Blackwell "
                                              "consumer / workstation (GB20x)): it needs the R570 branch or newer")
    assert f.fix.startswith("install an NVIDIA driver >= 570.26 (the R570 branch or newer)")
    assert any("first_cuda = 12.8 (https://docs.nvidia.com/" in e for e in f.evidence)
    k80 = only(doctor(tmp_path, host(driver="535.104.05", cuda_driver="12.2", nvcc=None, gpus=gpu("Tesla K80", "3.7")),
                      matrix=m), "driver-too-new-for-gpu")
    assert "the R470 branch is the last that does" in k80.title and "R470 legacy driver" in k80.fix
    for ok in (host(), host(driver="580.00", cuda_driver="13.0", arch="aarch64", gpus=gpu("NVIDIA Thor", "11.0"))):
        assert not [x for x in doctor(tmp_path, ok, matrix=m).findings if x.id.startswith("driver-too-")]


def test_a_jetson_thors_driver_is_judged_by_its_branch(tmp_path: Path) -> None:
    """JetPack 7.0/7.1 reports driver 580.00 (the R580 branch, CUDA 13.0): a cu132 torch runs there through 13.x
    minor-version compatibility (>= 580), it is not 'too new' for a driver below the dGPU number 580.65.06."""
    from tritonlock.compat.matrix import load_matrix

    make_venv(tmp_path, triton_pkg("3.9.0"), torch_pkg("2.15.0+cu132", "13.2", available=True, archs=("sm_110",)))
    thor = host(arch="aarch64", driver="580.00", cuda_driver="13.0", nvcc=None, gpus=gpu("NVIDIA Thor", "11.0"))
    r = doctor(tmp_path, thor, load_matrix())
    assert "torch-cuda-too-new" not in [f.id for f in r.findings], format_report(r)
    f = only(r, "torch-cuda-minor-compat")
    assert f.severity == "warning" and "580.65.06" in " ".join(f.evidence)
    # the same numbers on a discrete GPU are below the floor
    dgpu = host(driver="580.00", cuda_driver="13.0", nvcc=None, gpus=gpu("NVIDIA H200", "9.0"))
    assert "torch-cuda-too-new" in [x.id for x in doctor(tmp_path, dgpu, load_matrix()).findings]
