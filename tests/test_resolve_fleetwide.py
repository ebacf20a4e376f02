"""A fleet-wide audit of `tritonlock resolve --dry-run --json`: realistic host profiles, each answer worked out by
hand from the facts in compat/ (and their sources) before it was compared with what tritonlock says.

Each case carries its derivation in `how`. The rules it applies, with the facts they rest on:
  * CUDA builds: compatible policy = driver >= min(the major's minor-version floor, the toolkit's release driver)
    (cuda.toml: 11.x 450.80.02, 12.x 525.60.13, 13.x 580.65.06; Windows 452.39 / 527.41 / 580.88); a build newer
    than the driver's own CUDA (Table 3) runs with a warning. strict = the toolkit's release driver, and the build's
    CUDA <= the driver's.
  * Each build must carry SASS for the GPU's major (an older or equal minor) or PTX at or below it (archs in
    torch.toml); stable variants (RELEASE.md) before experimental ones, then the newest CUDA.
  * Triton (wanted unless triton = "none"): cc >= 7.0 (supported >= 8.0 from 3.2, a warning below), a wheel for the
    Python and platform, and the ptxas it uses for each GPU (triton.toml [[ptxas]]) needs the floor of its CUDA
    major: 12.x >= 525.60.13, 13.x >= 580.65.06. 3.9.0 uses its 13.4 ptxas-blackwell from sm_90, 3.7/3.8 from
    sm_100 (13.1/13.3), 3.6.0 a 12.9 one. triton-windows ships one 12.x ptxas.
  * The GPU itself (gpus.toml): a driver below the branch of the first toolkit that supports it (R570 for sm_100 /
    sm_120, R575 for sm_103 / sm_121, R520 for sm_89 / sm_90, R455 sm_86, R450 sm_80) does not know it; Kepler
    stops at R470; a Jetson's driver (Thor: "580.00", CUDA 13.0) is numbered by branch.
  * Driver -> its CUDA (Table 3): 470.82 11.4, 510.47 11.6, 520.56 11.7, 525.60.13 12.0, 535.104 12.2, 550.54.14+
    12.4, 560.35 / 565.57 12.6, 570.x 12.8, 575.x 12.9, 580.x 13.0 (Windows 566.36 12.6, 576.02 12.9, 581.57 13.0).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tritonlock.cli import main


@dataclass(frozen=True)
class Case:
    id: str
    target: dict[str, Any]
    expect: tuple[str, str, str, str | None, str | None] | None  # python, torch, backend, triton pkg, triton
    how: str
    env: str = ""
    warns: tuple[str, ...] = ()  # each must be in one warning
    no_warnings: bool = False  # and nothing else is said
    conflict: tuple[str, ...] = ()  # each must be in the conflict message
    not_in_conflict: tuple[str, ...] = ()
    index: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def lx(gpus: list[str] | None = None, driver: str | None = None, python: str = "3.12", glibc: str = "2.35",
       arch: str = "x86_64", **kw: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"os": "linux", "arch": arch, "glibc": glibc, "python": python}
    if driver:
        t["driver"] = driver
    if gpus:
        t["gpus"] = gpus
    return t | kw


def win(gpus: list[str] | None = None, driver: str | None = None, python: str = "3.12") -> dict[str, Any]:
    t: dict[str, Any] = {"os": "windows", "arch": "x86_64", "python": python}
    if driver:
        t["driver"] = driver
    if gpus:
        t["gpus"] = gpus
    return t


MVC = "through CUDA minor-version compatibility"
PASSED = "runs on this target but its Triton does not"
STRICT = 'cuda-policy = "strict"'
NONE = 'triton = "none"'
DEFAULT_INDEX = '[indexes]\ntorch = "default"'

CASES: list[Case] = [
    # ---------------------------------------------------------------- Hopper / Ampere datacenter
    Case("h200-r580", lx(["H200"], "580.159.04", glibc="2.39"), ("3.12", "2.15.0", "cu132", "triton", "3.9.0"),
         "2.15.0 has cp312; cu130 and cu132 both carry sm_90; newest cu132 runs through 13.x compatibility "
         "(580.65.06 floor, driver's CUDA 13.0); triton 3.9.0 compiles sm_90 with ptxas-blackwell 13.4 -> 580.65.06 ok",
         warns=("cu132 runs on driver 580.159.04 (CUDA 13.0) " + MVC,)),
    Case("h100-r535-py311", lx(["H100"], "535.104.05", "3.11"), ("3.11", "2.14.1", "cu126", "triton", "3.8.0"),
         "2.15.0 is CUDA 13 only (580.65.06); 2.14.1 cu126 (sm_90) on the 12.x floor 525.60.13, CUDA 12.6 > 12.2: "
         "warning; triton 3.8.0 uses ptxas 12.9 below sm_100 -> 525.60.13",
         warns=("cu126 runs on driver 535.104.05 (CUDA 12.2) " + MVC,)),
    Case("a100-r535-glibc231", lx(["A100", "A100"], "535.104.05", "3.10", "2.31"),
         ("3.10", "2.14.1", "cu126", "triton", "3.8.0"),
         "2.15.0 needs Python >= 3.11; 2.14.1: glibc 2.28 <= 2.31, cu126 sm_80 on 525.60.13",
         warns=(MVC,)),
    Case("a100-r470", lx(["A100"], "470.82.01", "3.10", "2.31"), None,
         "torch runs (2.7.1 cu118 on the 11.x floor 450.80.02) but every triton's ptxas is 12.x -> 525.60.13; "
         "at 525.60.13 2.14.1 cu126 + triton 3.8.0 resolve",
         conflict=("whose kernels need driver >= 525.60.13",
                   "upgrade the NVIDIA driver to >= 525.60.13 (the R525 branch), which loads the kernels of triton "
                   "3.8.0 (torch 2.14.1)", 'set triton = "none" (locks torch 2.7.1 (cu118)', "TRITON_PTXAS_PATH"),
         not_in_conflict=("does not know this GPU",)),
    Case("a100-r450-centos7-py38", lx(["A100"], "450.80.02", "3.8", "2.17"), None,
         "Python 3.8 stops at 2.4.1 (cu118 on 450.80.02); triton 3.0.0's ptxas 12.4 needs 525.60.13; there 2.4.1's "
         "stable cu121 runs and triton 3.0.0 loads",
         conflict=("upgrade the NVIDIA driver to >= 525.60.13 (the R525 branch), which loads the kernels of triton "
                   "3.0.0 (torch 2.4.1)",)),
    Case("a100-r440", lx(["A100"], "440.64.00", "3.10"), None,
         "sm_80 first in CUDA 11.0 (release driver 450.51.05): R440 does not know an A100",
         conflict=("GPU sm_80 (Ampere GA100) needs a driver of the R450 branch or newer",
                   "driver 440.64.00 does not know this GPU", "upgrade the NVIDIA driver to >= 525.60.13")),
    Case("h100-r470", lx(["H100"], "470.82.01", "3.10"), None,
         "sm_90 first in CUDA 11.8 (520.61.05): R470 does not know Hopper; the least driver that resolves with a "
         "working Triton is 525.60.13 (2.14.1 cu126 + 3.8.0)",
         conflict=("GPU sm_90 (Hopper) needs a driver of the R520 branch or newer",
                   "upgrade the NVIDIA driver to >= 525.60.13 (the R525 branch): then torch 2.14.1 (cu126) + triton "
                   "3.8.0", 'or set cuda = "cpu"'),
         not_in_conflict=("TRITON_PTXAS_PATH",)),
    Case("h100-glibc217", lx(["H100"], "550.54.15", "3.10", "2.17"), ("3.10", "2.6.0", "cu124", "triton", "3.2.0"),
         "glibc 2.17 leaves torch <= 2.6.0 (x86_64 release floor 2.17), whose cu126 build needs glibc 2.28; cu124 "
         "(stable) 12.4 <= the driver's 12.4; triton 3.2.0 ptxas 12.4 -> 525.60.13",
         no_warnings=True),
    Case("gh200-r560", lx(["GH200"], "560.35.03", arch="aarch64"), ("3.12", "2.14.1", "cu126", "triton", "3.8.0"),
         "aarch64: 2.15.0 is 13.x only; 2.14.1 aarch64 cu126 carries sm_80/sm_90, 12.6 = the driver's CUDA; "
         "triton 3.8.0 has aarch64 wheels", no_warnings=True),
    Case("gh200-r535-py310", lx(["GH200"], "535.161.07", "3.10", arch="aarch64"),
         ("3.10", "2.14.1", "cu126", "triton", "3.8.0"), "as above on 12.x compatibility", warns=(MVC,)),
    Case("gh200-old-torch", lx(["GH200"], "560.35.03", arch="aarch64"), None,
         "torch < 2.6 publishes only CPU wheels for aarch64; 2.6-2.8 have aarch64 CUDA builds but triton < 3.5 has no "
         "aarch64 wheel; 2.9.0 is the nearest release whose Triton works here",
         env='torch = "<2.6"',
         conflict=("published for linux_aarch64 only as cpu", 'allow torch >= 2.9.0 (torch = ">=2.9.0"')),
    Case("graviton-old-torch", lx(arch="aarch64"), None,
         "triton publishes aarch64 wheels from 3.5 (torch 2.9); no Python changes that; torch's CPU wheels pin no "
         "triton", env='torch = "<2.5"',
         conflict=("its triton 3.0.0 publishes no wheels for linux_aarch64", 'allow torch >= 2.9.0',
                   'set triton = "none" to lock torch 2.4.1 (cpu) without triton'),
         not_in_conflict=("pick a Python", "with the triton it pins", "use Python")),
    Case("gb200-r570", lx(["GB200"], "570.148.08", glibc="2.39", arch="aarch64"),
         ("3.12", "2.11.0", "cu128", "triton", "3.6.0"),
         "aarch64: 2.13.0's cu129 carries sm_100 but triton 3.7.1's ptxas-blackwell is 13.1; 2.11.0's aarch64 cu128 "
         "+ triton 3.6.0 (aarch64 wheels from 3.5)", warns=("newer torch 2.12.1–2.13.0 " + PASSED,)),
    Case("gb10-spark", lx(["GB10"], "580.95.05", glibc="2.39", arch="aarch64"),
         ("3.12", "2.15.0", "cu132", "triton", "3.9.0"),
         "sm_121 (first CUDA 12.9, R575): sm_120 SASS runs on 12.1; ptxas-blackwell 13.4 on R580", warns=(MVC,)),
    # ---------------------------------------------------------------- Blackwell
    Case("b200-r570", lx(["B200"], "570.124.06"), ("3.12", "2.11.0", "cu128", "triton", "3.6.0"),
         "2.13.0/2.12.1 cu129 carry sm_100 and run, but triton 3.7.1 compiles sm_100 with ptxas-blackwell 13.1 -> "
         "580.65.06; 2.11.0: stable cu128 (12.8 = driver) before experimental cu129, triton 3.6.0's ptxas-blackwell "
         "is 12.9 -> 525.60.13",
         warns=("newer torch 2.12.1–2.13.0 " + PASSED, "a driver >= 580.65.06 (the R580 branch) would allow torch 2.13.0")),
    Case("b200-r565", lx(["B200"], "565.57.01"), None,
         "sm_100 first in CUDA 12.8 (570.26): R565 does not know a B200",
         conflict=("GPU sm_100 (Blackwell datacenter (GB100)) needs a driver of the R570 branch or newer",
                   "upgrade the NVIDIA driver to >= 570.26 (the R570 branch): then torch 2.11.0 (cu128) + triton 3.6.0")),
    Case("b200-r580-py314", lx(["B200"], "580.82.07", "3.14", "2.39"), ("3.14", "2.15.0", "cu132", "triton", "3.9.0"),
         "2.15.0 has cp314, triton 3.9.0 too", warns=(MVC,)),
    Case("b300-r575", lx(["B300"], "575.57.08"), ("3.12", "2.11.0", "cu128", "triton", "3.6.0"),
         "sm_103 (CUDA 12.9, R575): sm_100 SASS runs on 10.3; 2.13.0 passed over for triton 3.7.1's 13.1 "
         "ptxas-blackwell", warns=(PASSED,)),
    Case("b300-r570", lx(["B300"], "570.133.20"), None,
         "sm_103 first in CUDA 12.9 (575.51.03): R570 does not know a B300",
         conflict=("GPU sm_103 (Blackwell Ultra (GB110)) needs a driver of the R575 branch or newer",
                   "upgrade the NVIDIA driver to >= 575.51.03 (the R575 branch): then torch 2.11.0 (cu128) + "
                   "triton 3.6.0")),
    Case("rtx5090-r535", lx(["RTX 5090"], "535.104.05"), None,
         "sm_120 first in CUDA 12.8: the 12.x compatibility floor (525.60.13) is no help, R535 does not know Blackwell",
         conflict=("GPU sm_120 (Blackwell consumer / workstation (GB20x)) needs a driver of the R570 branch or newer",
                   "upgrade the NVIDIA driver to >= 570.26 (the R570 branch): then torch 2.11.0 (cu128) + triton 3.6.0"),
         not_in_conflict=("525.60.13",)),
    Case("rtx5090-r570", lx(["RTX 5090"], "570.86.16", glibc="2.39"), ("3.12", "2.11.0", "cu128", "triton", "3.6.0"),
         "as the B200 on R570", warns=(PASSED,)),
    Case("rtx5090-r580", lx(["RTX 5090"], "580.65.06"), ("3.12", "2.15.0", "cu132", "triton", "3.9.0"),
         "580.65.06 is exactly the 13.x floor", warns=(MVC,)),
    Case("rtx4090+5090-r575", lx(["RTX 4090", "RTX 5090"], "575.64.03"), ("3.12", "2.11.0", "cu128", "triton", "3.6.0"),
         "every GPU must work: the 5090 blocks triton 3.7.1 (2.13.0); 2.11.0 cu128 (stable, 12.8 <= 12.9) covers "
         "sm_89 through sm_86 SASS and sm_120", warns=(PASSED,)),
    # ---------------------------------------------------------------- Ada / Ampere workstations and cloud
    Case("rtx4090-r550", lx(["RTX 4090"], "550.54.14", glibc="2.39"), ("3.12", "2.14.1", "cu126", "triton", "3.8.0"),
         "cu126 has no sm_89 but sm_86 SASS runs on 8.9", warns=("(CUDA 12.4) " + MVC,)),
    Case("rtx4090-r520-launch", lx(["RTX 4090"], "520.56.06", "3.10"), None,
         "R520 knows Ada (CUDA 11.8 branch); torch runs (cu118, 11.x floor) but no triton ptxas loads below 525.60.13",
         conflict=("whose kernels need driver >= 525.60.13", "upgrade the NVIDIA driver to >= 525.60.13"),
         not_in_conflict=("does not know this GPU",)),
    Case("rtx3090-r560", lx(["RTX 3090"], "560.35.03"), ("3.12", "2.14.1", "cu126", "triton", "3.8.0"),
         "12.6 = the driver's CUDA: nothing to warn about", no_warnings=True),
    Case("l4-r550", lx(["L4"], "550.90.07", "3.11", "2.28"), ("3.11", "2.14.1", "cu126", "triton", "3.8.0"),
         "glibc 2.28 is exactly the floor", warns=(MVC,)),
    Case("l40s-r570", lx(["L40S"], "570.172.08", glibc="2.34"), ("3.12", "2.14.1", "cu126", "triton", "3.8.0"),
         "13.x builds need R580; cu126 runs natively on CUDA 12.8", no_warnings=True),
    Case("a10-r510-glibc227", lx(["A10"], "510.47.03", "3.9", "2.27"), None,
         "glibc 2.27 leaves torch <= 2.6.0 (and not its cu126); cu118 runs on 11.x compatibility but triton 3.2.0's "
         "ptxas 12.4 needs 525.60.13, where 2.6.0 cu124 + triton 3.2.0 resolve",
         conflict=("upgrade the NVIDIA driver to >= 525.60.13 (the R525 branch), which loads the kernels of triton "
                   "3.2.0 (torch 2.6.0)",)),
    # ---------------------------------------------------------------- Turing / Volta / Pascal / Kepler
    Case("t4-r470", lx(["T4"], "470.82.01", "3.10", "2.31"), None,
         "pytorch/pytorch#119054: torch 2.7.1 cu118 runs, Triton's 12.x ptxas output does not load",
         conflict=("torch 2.7.1: its Triton (triton 3.3.1) compiles for compute capability 7.5 with its bundled ptxas "
                   "(CUDA 12.4), whose kernels need driver >= 525.60.13",
                   'set triton = "none" (locks torch 2.7.1 (cu118)')),
    Case("t4-r470-py312-old-torch", lx(["T4"], "470.82.01"), None,
         "torch < 2.4 on Python 3.12: 2.3.1's CUDA wheels pin triton only below Python 3.12, so without Triton the lock "
         "holds none (no ptxas to point anywhere)", env='torch = "<2.4"',
         conflict=("which loads the kernels of triton 2.3.1 (torch 2.3.1)",
                   'keep this driver: set triton = "none" (locks torch 2.3.1 (cu118) without triton)'),
         not_in_conflict=("TRITON_PTXAS_PATH", "with the triton it pins")),
    Case("t4-r525.60.13", lx(["T4"], "525.60.13", "3.10", "2.31"), ("3.10", "2.14.1", "cu126", "triton", "3.8.0"),
         "525.60.13 is exactly the 12.x floor: cu126 runs (CUDA 12.0 driver: warning), ptxas 12.9 loads; Triton "
         "supports >= 8.0 officially from 3.2",
         warns=("(CUDA 12.0) " + MVC, "Triton 3.8.0 runs on compute capability 7.5 but supports >= 8.0 officially")),
    Case("v100-r535", lx(["V100"], "535.104.05", "3.10", "2.28"), ("3.10", "2.14.1", "cu126", "triton", "3.8.0"),
         "cu126 still carries sm_70 (cu130 does not)",
         warns=(MVC, "Triton 3.8.0 runs on compute capability 7.0 but supports >= 8.0")),
    Case("v100-r450-centos7", lx(["V100"], "450.80.02", "3.8", "2.17"), None,
         "as the A100 on R450: triton 3.0.0 (7.0+ supported) but ptxas 12.4 needs 525.60.13",
         conflict=("which loads the kernels of triton 3.0.0 (torch 2.4.1)",)),
    Case("rtx2080-r470-py39", lx(["RTX 2080"], "470.57.02", "3.9", "2.31"), None,
         "Python 3.9 stops at 2.8.0; at 525.60.13 2.8.0's stable cu128 (sm_75) + triton 3.4.0 resolve; keeping R470 "
         "leaves torch 2.7.1 cu118 without Triton",
         conflict=("which loads the kernels of triton 3.4.0 (torch 2.8.0)", "locks torch 2.7.1 (cu118)")),
    Case("gtx1080-r550", lx(["GTX 1080"], "550.54.15"), None,
         "Triton compiles for cc >= 7.0 only; torch 2.14.1 cu126 runs on 6.1 through its sm_60 SASS",
         conflict=("cannot compile for compute capability 6.1 (Triton needs >= 7.0)",
                   'set triton = "none" to lock torch 2.14.1 (cu126)')),
    Case("p100-r460-centos7", lx(["P100"], "460.106.00", "3.9", "2.17"), None,
         "cc 6.0: no Triton; without it glibc 2.17 leaves 2.6.0, whose cu118 runs on 11.x compatibility",
         conflict=('set triton = "none" to lock torch 2.6.0 (cu118)',)),
    Case("k80-r470-py38", lx(["K80"], "470.82.01", "3.8", "2.17"), None,
         "sm_37 is in the cu118 builds up to 2.7.1; Python 3.8 stops at 2.4.1; Triton needs cc >= 7.0",
         conflict=("cannot compile for compute capability 3.7", 'set triton = "none" to lock torch 2.4.1 (cu118)')),
    Case("gtx980-r590", lx(["GTX 980"], "590.48.01"), None, "R580 is the last branch for Maxwell",
         conflict=("GPU sm_52 (Maxwell GM20x) is driven only up to the R580 branch",
                   "run a driver of the R580 branch")),
    Case("v100-r580-py312", lx(["V100"], "580.95.05"), ("3.12", "2.14.1", "cu126", "triton", "3.8.0"),
         "2.15.0 has no sm_70 build; 2.14.1 cu126 runs natively on a CUDA 13.0 driver",
         warns=("Triton 3.8.0 runs on compute capability 7.0",)),
    Case("k80-r535", lx(["K80"], "535.104.05", "3.10"), None,
         "Kepler is driven only up to the R470 legacy branch",
         conflict=("GPU sm_37 (Kepler GK210) is driven only up to the R470 branch",
                   "run a driver of the R470 branch")),
    # ---------------------------------------------------------------- Jetson
    Case("thor-jp7", lx(["Thor"], "580.00", glibc="2.39", arch="aarch64", cuda="13.0"),
         ("3.12", "2.15.0", "cu132", "triton", "3.9.0"),
         "Thor's JetPack driver 580.00 is the R580 branch (CUDA 13.0): the 13.x floor is met; the aarch64 builds "
         "carry sm_110; cu132 through compatibility", warns=("cu132 runs on driver 580.00 (CUDA 13.0) " + MVC,)),
    Case("orin", lx(["Jetson AGX Orin"], "540.4.0", arch="aarch64"), None,
         "Orin (sm_87) runs only NVIDIA's JetPack wheels", conflict=("integrated Jetson Orin GPU",)),
    # ---------------------------------------------------------------- no driver, other platforms, Pythons
    Case("laptop-py313", lx(python="3.13", glibc="2.39"), ("3.13", "2.15.0", "cpu", "triton", "3.9.0"),
         "no driver: the CPU build; Triton is kept for its interpreter (triton 3.9.0 from the default index)",
         no_warnings=True),
    Case("laptop-centos7-py38", lx(python="3.8", glibc="2.17"), ("3.8", "2.4.1", "cpu", "triton", "3.0.0"),
         "Python 3.8: 2.4.1 is the last release with cp38", no_warnings=True),
    Case("graviton", lx(arch="aarch64", glibc="2.34"), ("3.12", "2.15.0", "cpu", "triton", "3.9.0"),
         "triton has aarch64 wheels from 3.5", no_warnings=True),
    Case("py315-h100", lx(["H100"], "580.82.07", "3.15", "2.39"), ("3.15", "2.15.0", "cu132", "triton", "3.9.0"),
         "only 2.15.0 (and triton 3.9.0) have cp315", warns=(MVC,)),
    Case("py315-rtx4090-r570", lx(["RTX 4090"], "570.133.07", "3.15"), None,
         "only 2.15.0 has cp315 and it is CUDA 13 only",
         conflict=("upgrade the NVIDIA driver to >= 580.65.06 (the R580 branch): then torch 2.15.0 (cu132) + triton "
                   "3.9.0",)),
    Case("macos-py39", {"os": "macos", "arch": "arm64", "python": "3.9"}, ("3.9", "2.8.0", "cpu", None, None),
         "2.8.0 is the last release with cp39 (macosx_11_0 wheels: no macOS word)",
         warns=("Triton publishes no wheels for macos_arm64",), extra={"no_macos_warning": True}),
    Case("macos-py312", {"os": "macos", "arch": "arm64", "python": "3.12"}, ("3.12", "2.15.0", "cpu", None, None),
         "2.15.0's wheels are macosx_14_0_arm64: fine on a Mac of unknown macOS, with a word",
         warns=("torch 2.15.0's wheels for Python 3.12 need macOS >= 14.0",
                "Triton publishes no wheels for macos_arm64")),
    Case("macos-13-py312", {"os": "macos", "arch": "arm64", "python": "3.12", "macos": "13.6"},
         ("3.12", "2.11.0", "cpu", None, None), "2.12.0+ are macosx_14_0 only; 2.11.0 macosx_11_0",
         warns=("Triton publishes no wheels for macos_arm64",), extra={"no_macos_warning": True}),
    Case("macos-13-py314", {"os": "macos", "arch": "arm64", "python": "3.14", "macos": "13.6"},
         ("3.14", "2.11.0", "cpu", None, None), "2.10.0's cp314 wheels alone are macosx_14_0; 2.11.0's are 11_0",
         extra={"no_macos_warning": True}),
    Case("macos-15-py313", {"os": "macos", "arch": "arm64", "python": "3.13", "macos": "15.1"},
         ("3.13", "2.15.0", "cpu", None, None), "15.1 >= 14.0", extra={"no_macos_warning": True}),
    # ---------------------------------------------------------------- Windows (triton-windows)
    Case("win-rtx3090-r566", win(["RTX 3090"], "566.36"),
         ("3.12", "2.14.1", "cu126", "triton-windows", ">=3.8,<3.9"),
         "2.15.0: 13.x needs 580.88 on Windows; 2.14.1 cu126 (12.6 = the driver's); triton-windows 3.8 ptxas 12.9 -> "
         "527.41", no_warnings=True),
    Case("win-rtx5090-r576", win(["RTX 5090"], "576.02"),
         ("3.12", "2.11.0", "cu128", "triton-windows", ">=3.6,<3.7"),
         "R576 knows Blackwell (CUDA 12.8's Windows driver 570.65); 2.12.x-2.14.x have no runnable sm_120 build below "
         "13.x on Windows (no Windows cu129 from 2.9.1: generate_binary_build_matrix.py); 2.11.0's cu128 runs; "
         "triton-windows keeps a 12.8 ptxas",
         no_warnings=True),
    Case("win-rtx4090-py39", win(["RTX 4090"], "560.94", "3.9"),
         ("3.9", "2.8.0", "cu128", "triton-windows", ">=3.4,<3.5"),
         "Python 3.9 -> 2.8.0; its stable variants are 12.6 and 12.8: the newest stable, cu128, on 12.x "
         "compatibility", warns=("cu128 runs on driver 560.94 (CUDA 12.6) " + MVC,)),
    Case("win-rtx4090-r581-py313", win(["RTX 4090"], "581.57", "3.13"),
         ("3.13", "2.14.1", "cu132", "triton-windows", ">=3.8,<3.9"),
         "no triton-windows series for 2.15 yet: passed over; 2.14.1's stable cu132 runs on R581 (13.0) through "
         "compatibility", warns=(MVC, "newer torch 2.15.0 " + PASSED)),
    Case("win-py38-rtx3090", win(["RTX 3090"], "560.94", "3.8"), None,
         "Python 3.8 stops at torch 2.4.1, and triton-windows starts with torch 2.5 (3.1): no Triton on Windows for "
         "3.8; Python 3.9 reaches 2.8.0 + triton-windows 3.4",
         conflict=("no triton-windows release is known for torch 2.4.1",
                   'use Python 3.9 (python = "3.9"): then torch 2.8.0 (cu128) + triton-windows >=3.4,<3.5',
                   'set triton = "none" to lock torch 2.4.1 (cu121) without triton-windows'),
         not_in_conflict=("pick a Python",)),
    Case("win-laptop", win(), ("3.12", "2.14.1", "cpu", "triton-windows", ">=3.8,<3.9"),
         "a CPU target keeps Triton for its interpreter: 2.15.0 has no triton-windows series",
         warns=("newer torch 2.15.0 " + PASSED,)),
    # ---------------------------------------------------------------- strict policy
    Case("strict-h100-r535", lx(["H100"], "535.104.05", "3.11"), ("3.11", "2.7.1", "cu118", "triton", "3.3.1"),
         "strict: cu126 needs 560.28.03, cu124 550.54.14; 2.8-2.15 have nothing <= 12.2; 2.7.1 cu118 (520.61.05, "
         "11.8 <= 12.2); triton 3.3.1's ptxas 12.4 loads through 12.x compatibility",
         env=STRICT, no_warnings=True),
    Case("strict-a100-r550", lx(["A100"], "550.54.15"), ("3.12", "2.7.1", "cu118", "triton", "3.3.1"),
         "strict: 2.7.1 cu118 (cu126 needs 560.28.03) is newer than 2.6.0 cu124", env=STRICT, no_warnings=True),
    Case("strict-h200-r580", lx(["H200"], "580.82.07", glibc="2.39"), ("3.12", "2.15.0", "cu130", "triton", "3.9.0"),
         "strict: cu132 needs 595.45.04", env=STRICT, no_warnings=True),
    Case("strict-rtx5090-r570", lx(["RTX 5090"], "570.133.07"), ("3.12", "2.11.0", "cu128", "triton", "3.6.0"),
         "strict: cu129 needs 575.51.03, so 2.12.1/2.13.0 do not run at all (no Triton warning)",
         env=STRICT, no_warnings=True),
    Case("strict-thor", lx(["Thor"], "580.00", glibc="2.39", arch="aarch64", cuda="13.0"),
         ("3.12", "2.15.0", "cu130", "triton", "3.9.0"), "strict on R580 (by branch): cu130, not cu132",
         env=STRICT, no_warnings=True),
    Case("strict-win-r595-cuda132", win(["RTX 4090"], "595.97") | {"cuda": "13.2"},
         ("3.12", "2.14.1", "cu132", "triton-windows", ">=3.8,<3.9"),
         "Table 3 has no Windows driver for 13.2 (N/A): strict holds it to the 13.x floor (580.88) and to the CUDA "
         "the driver reports (13.2); 2.15.0 has no triton-windows series", env=STRICT,
         warns=("newer torch 2.15.0 " + PASSED,)),
    Case("strict-win-r595", win(["RTX 4090"], "595.97"), ("3.12", "2.14.1", "cu130", "triton-windows", ">=3.8,<3.9"),
         "without the CUDA the driver reports, Table 3's Windows column says no more than 13.0: strict keeps cu130",
         env=STRICT, warns=("newer torch 2.15.0 " + PASSED,)),
    Case("strict-a100-r470", lx(["A100"], "470.82.01", "3.10"), None,
         "strict: nothing below CUDA 11.7 is published; at 525.60.13 2.7.1 cu118 (520.61.05) + triton 3.3.1",
         env=STRICT,
         conflict=("upgrade the NVIDIA driver to >= 525.60.13 (the R525 branch)",)),
    # ---------------------------------------------------------------- triton = "none"
    Case("none-gtx1080", lx(["GTX 1080"], "550.54.15"), ("3.12", "2.14.1", "cu126", None, None),
         "no Triton rule: the newest torch whose build covers sm_61 (via sm_60)", env=NONE, warns=(MVC,)),
    Case("none-k80", lx(["K80"], "470.82.01", "3.8", "2.17"), ("3.8", "2.4.1", "cu118", None, None),
         "cu118 carries sm_37; 11.8 on the 11.x floor", env=NONE, warns=("(CUDA 11.4) " + MVC,)),
    Case("none-t4-r470", lx(["T4"], "470.82.01", "3.10"), ("3.10", "2.7.1", "cu118", None, None),
         "torch's own kernels run on R470", env=NONE, warns=(MVC,)),
    Case("none-rtx5090-r570", lx(["RTX 5090"], "570.133.07"), ("3.12", "2.13.0", "cu129", None, None),
         "without the Triton rule 2.13.0 cu129 is the newest that runs", env=NONE, warns=("(CUDA 12.8) " + MVC,)),
    Case("none-v100-r590", lx(["V100"], "590.48.01"), None, "no build runs on a GPU its driver does not drive",
         env=NONE, conflict=("GPU sm_70 (Volta GV100) is driven only up to the R580 branch",)),
    Case("none-macos", {"os": "macos", "arch": "arm64", "python": "3.12"}, ("3.12", "2.15.0", "cpu", None, None),
         "nothing about Triton to say", env=NONE),
    # ---------------------------------------------------------------- CUDA pinned / specifiers
    Case("cu126-rtx5090", lx(["RTX 5090"], "580.82.07"), None, "cu126 never carries sm_120",
         env='cuda = "cu126"',
         conflict=("cu126 carries code for sm_50…sm_90, not for compute capability 12.0", 'let cuda = "auto"')),
    Case("cu118-h100", lx(["H100"], "580.82.07"), ("3.12", "2.7.1", "cu118", "triton", "3.3.1"),
         "cu118 was last published for 2.7.1", env='cuda = "cu118"', no_warnings=True),
    Case("cuda-ge-12.8-a100", lx(["A100"], "560.35.03"), ("3.12", "2.13.0", "cu129", "triton", "3.7.1"),
         "CUDA >= 12.8: 2.14.x has only 13.x (R580) above 12.8; 2.13.0 cu129 on 12.x compatibility",
         env='cuda = ">=12.8"', warns=("(CUDA 12.6) " + MVC,)),
    Case("cpu-on-h100", lx(["H100"], "580.82.07"), ("3.12", "2.15.0", "cpu", "triton", "3.9.0"),
         'cuda = "cpu" asked for', env='cuda = "cpu"', no_warnings=True),
    # ---------------------------------------------------------------- torch ranges
    Case("torch-ge-3", lx(["H100"], "580.82.07"), None, "no release matches", env='torch = ">=3.0"',
         conflict=("no torch release in the matrix matches torch = '>=3.0' (the matrix knows 2.0.0–2.15.0)",
                   "loosen torch")),
    Case("torch-eq-2.15-a100-r535", lx(["A100"], "535.104.05", "3.11"), None,
         "2.15.0 is CUDA 13 only: R580, or an older torch", env='torch = "==2.15.0"',
         conflict=("torch 2.15.0: published only for CUDA 13.0/13.2 on linux_x86_64, which need driver >= 580.65.06",
                   "upgrade the NVIDIA driver to >= 580.65.06 (the R580 branch): then torch 2.15.0 (cu132) + triton "
                   "3.9.0", 'allow torch <= 2.14.1 (torch = "<=2.14.1"')),
    Case("torch-local-cpu", lx(["H100"], "580.82.07"), ("3.12", "2.13.0", "cpu", "triton", "3.7.1"),
         "'+cpu' picks the cpu backend", env='torch = "==2.13.0+cpu"', no_warnings=True),
    Case("torch-2.6-t4", lx(["T4"], "550.127.05", "3.11"), ("3.11", "2.6.0", "cu124", "triton", "3.2.0"),
         '"2.6" is ==2.6.*; its stable CUDA are 11.8 and 12.4: cu124 before the experimental cu126',
         env='torch = "2.6"', warns=("Triton 3.2.0 runs on compute capability 7.5 but supports >= 8.0",)),
    # ---------------------------------------------------------------- triton specifiers
    Case("triton-lt-3-a100", lx(["A100"], "535.104.05", "3.10", "2.31"), ("3.10", "2.3.1", "cu118", "triton", "2.3.1"),
         "torch 2.3.x pins triton 2.3.x; 2.3.1's stable CUDA is 11.8 (12.1 experimental); the newer releases whose "
         "triton the specifier rules out are reasons, not a warning that their Triton 'does not work'",
         env='triton = "<3.0"', no_warnings=True),
    Case("triton-eq-3.6-rtx5090", lx(["RTX 5090"], "570.133.07"), ("3.12", "2.11.0", "cu128", "triton", "3.6.0"),
         "2.11.0 pins 3.6.0", env='triton = "==3.6.0"', no_warnings=True),
    Case("triton-ge-3.9-h100-r560", lx(["H100"], "560.35.03"), None,
         "only 2.15.0 pins 3.9 and it needs R580: the driver is the change that keeps the intent as written",
         env='triton = ">=3.9"',
         conflict=("upgrade the NVIDIA driver to >= 580.65.06 (the R580 branch): then torch 2.15.0 (cu132) + triton "
                   "3.9.0", "loosen triton")),
    # ---------------------------------------------------------------- the default index's torch (PyPI)
    Case("pypi-h100-r580", lx(["H100"], "580.82.07"), ("3.12", "2.15.0", "cu132", "triton", "3.9.0"),
         "PyPI's 2.15.0 is the cu132 build", env=DEFAULT_INDEX, warns=(MVC,)),
    Case("pypi-a100-r535", lx(["A100"], "535.104.05", "3.11"), ("3.11", "2.10.0", "cu128", "triton", "3.6.0"),
         "PyPI ships cu130 for 2.11-2.14 (R580) and cu128 for 2.10.0", env=DEFAULT_INDEX, warns=(MVC,)),
    Case("pypi-laptop", lx(python="3.12"), ("3.12", "2.15.0", "cu132", "triton", "3.9.0"),
         "PyPI's one build runs on the CPU", env=DEFAULT_INDEX, warns=("runs on the CPU",)),
    Case("pypi-cpu-laptop", lx(python="3.12"), None,
         "issue #23: cuda = cpu never locks PyPI's CUDA build", env='cuda = "cpu"\n' + DEFAULT_INDEX,
         conflict=("no CPU-only build", "for a CPU-only torch take it from PyTorch's cpu index",
                   'or set cuda = "auto" to lock the build the default index ships')),
    Case("pypi-macos", {"os": "macos", "arch": "arm64", "python": "3.12"}, ("3.12", "2.15.0", "cpu", None, None),
         "PyPI's macOS build is the CPU one", env=DEFAULT_INDEX),
    Case("pypi-win-rtx4090", win(["RTX 4090"], "576.02"), None,
         "PyPI's Windows torch is CPU-only: no CUDA build there for a GPU that cuda = 'auto' would use",
         env=DEFAULT_INDEX,
         conflict=("published for win_amd64 only as cpu",
                   'take torch from PyTorch\'s index (remove [indexes] torch = "default"): then torch 2.14.1 (cu126) + '
                   "triton-windows >=3.8,<3.9", 'set cuda = "cpu" to lock the default index\'s CPU build'),
         not_in_conflict=("upgrade the NVIDIA driver",)),
    Case("pypi-gh200-r560", lx(["GH200"], "560.35.03", arch="aarch64"), None,
         "PyPI's aarch64 torch is CPU-only before 2.11, then CUDA 13 (R580)", env=DEFAULT_INDEX,
         conflict=("upgrade the NVIDIA driver to >= 580.65.06",)),
]


def _groups() -> dict[str, list[Case]]:
    out: dict[str, list[Case]] = {}
    for c in CASES:
        out.setdefault(c.env, []).append(c)
    return out


_RESULTS: dict[str, dict[str, Any]] = {}


def _resolve_all(tmp: Path) -> dict[str, dict[str, Any]]:
    """Every case through `tritonlock resolve --dry-run --json`, one project per [environment]."""
    if _RESULTS:
        return _RESULTS
    for n, (env, cases) in enumerate(_groups().items()):
        proj = tmp / f"g{n}"
        proj.mkdir()
        env_lines, _, indexes = env.partition("[indexes]")
        body = f"[environment]\n{env_lines}\n" + (f"[indexes]{indexes}\n" if indexes else "")
        for c in cases:
            body += f'\n[[targets]]\nname = "{c.id}"\n' + "".join(f"{k} = {json.dumps(v)}\n" for k, v in c.target.items())
        (proj / "triton-env.toml").write_text(body, encoding="utf-8")
        r = CliRunner().invoke(main, ["resolve", "--dry-run", "--json", "--project", str(proj)])
        assert r.exit_code in (0, 3), r.output
        doc = json.loads(r.stdout)
        got = {t["name"]: t for t in doc["targets"]}
        assert list(got) == [c.id for c in cases]
        assert r.exit_code == (3 if any(not t["ok"] for t in got.values()) else 0)
        _RESULTS.update(got)
    return _RESULTS


def test_the_fleet_has_enough_profiles() -> None:
    assert len(CASES) >= 40 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_resolve_dry_run_json(case: Case, tmp_path_factory: pytest.TempPathFactory) -> None:
    got = _resolve_all(tmp_path_factory.mktemp("fleet"))[case.id]
    assert set(got) >= {"name", "ok", "python", "torch", "backend", "index", "triton_package", "triton", "warnings",
                        "reasons"}
    if case.expect is None:
        assert not got["ok"], got
        assert (got["python"], got["torch"], got["backend"], got["triton"]) == (None, None, None, None)
        msg = got["conflict"]
        assert msg.startswith(f"nothing fits target '{case.id}' (") and "\n  fix: " in msg
        for words in case.conflict:
            assert words in msg, msg
        for words in case.not_in_conflict:
            assert words not in msg, msg
        return
    assert got["ok"], got.get("conflict")
    assert (got["python"], got["torch"], got["backend"], got["triton_package"], got["triton"]) == case.expect, got
    warnings = got["warnings"]
    for words in case.warns:
        assert any(words in w for w in warnings), (words, warnings)
    if case.no_warnings:
        assert warnings == [], warnings
    if case.extra.get("no_macos_warning"):
        assert not [w for w in warnings if "macOS >=" in w], warnings
    if case.expect[2].startswith("cu") and "default" not in case.env:
        assert got["index"] == f"https://download.pytorch.org/whl/{case.expect[2]}"


# ---------------------------------------------------------------- `tritonlock why` on the same fleet


def _intent_and_target(case: Case) -> tuple[Any, Any]:
    from tritonlock.intent.read import parse_intent

    env_lines, _, indexes = case.env.partition("[indexes]")
    body = f"[environment]\n{env_lines}\n" + (f"[indexes]{indexes}\n" if indexes else "")
    body += f'[[targets]]\nname = "{case.id}"\n' + "".join(f"{k} = {json.dumps(v)}\n" for k, v in case.target.items())
    it = parse_intent(body)
    return it, it.targets[0]


def _apply(intent: Any, target: Any, changes: list[tuple[str, str]], torch: str) -> Any:
    """Resolve again with the changes a `why` line names, torch pinned to that line (never the advisor's code)."""
    import dataclasses

    from tritonlock.compat.matrix import load_matrix
    from tritonlock.decide.resolve import resolve_one

    it = dataclasses.replace(intent, torch=f"=={torch}")
    t = target
    for kind, value in changes:
        if kind == "driver":
            t = dataclasses.replace(t, driver=value, cuda=None)
        elif kind in ("python", "glibc", "macos"):
            t = dataclasses.replace(t, **{kind: value})
        elif kind == "cuda-policy":
            it = dataclasses.replace(it, cuda_policy=value)
        elif kind in ("cuda", "triton"):
            it = dataclasses.replace(it, **{kind: value})
        elif kind != "torch":
            raise AssertionError(kind)
    return resolve_one(it, load_matrix(), t, "3.12", advise=False)


@pytest.mark.parametrize("name", [c.id for c in CASES])
def test_why_each_line_is_unlocked_by_its_change_and_by_no_smaller_one(name: str) -> None:
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.decide.resolve import platform_of
    from tritonlock.decide.targetfacts import driver_candidates
    from tritonlock.decide.why import advise

    m = load_matrix()
    case = next(c for c in CASES if c.id == name)
    intent, target = _intent_and_target(case)
    a = advise(intent, m, target, "3.12")
    assert a.now.ok == (case.expect is not None) and (not a.now.ok or a.now.torch == case.expect[1])
    assert a.lines or (a.now.ok and a.now.torch == m.torch[0].version)
    for ln in a.lines:
        changes = [(c.kind, c.need) for c in ln.changes]
        if ln.status == "available":
            assert a.now.torch == ln.torch
            continue
        if ln.status == "unreachable":  # the claim: no driver, Python or glibc change unlocks it
            rel = m.torch_release(ln.torch)
            assert rel is not None
            drivers = driver_candidates(m, target)[-1:] or [target.driver]
            for py in rel.pythons(platform_of(target)):
                tried = [("python", py), ("glibc", "2.39")] + ([("driver", drivers[0])] if drivers[0] else []) \
                    + ([("macos", "26.0")] if target.os == "macos" else [])
                assert not _apply(intent, target, tried, ln.torch).ok, (ln.torch, tried)
            continue
        assert ln.changes and ln.then is not None
        assert not _apply(intent, target, [], ln.torch).ok or ln.status == "excluded"
        got = _apply(intent, target, changes, ln.torch)
        assert got.ok and got.torch == ln.torch, (ln.summary, got.conflict)
        assert (got.backend, got.triton) == (ln.then.backend, ln.then.triton)
        for i, (kind, need) in enumerate(changes):  # and the driver asked for is the least that does it
            if kind == "driver":
                lower = [d for d in driver_candidates(m, target) if d < need and _vv(d) < _vv(need)]
                if lower:
                    smaller = changes[:i] + [("driver", max(lower, key=_vv))] + changes[i + 1:]
                    assert not _apply(intent, target, smaller, ln.torch).ok, (ln.summary, smaller)
        for c in ln.changes:
            assert c.sources and all(": " in s for s in c.sources), c


def _vv(v: str) -> Any:
    from packaging.version import Version

    return Version(v)


def test_why_never_advises_a_driver_that_does_not_know_the_gpu() -> None:
    """The gap an RTX 5090 on R535 exposed: 525.60.13 (the 12.x compatibility floor) cannot drive Blackwell."""
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.decide.why import advise

    m = load_matrix()
    for name, floor in (("rtx5090-r535", 570), ("b300-r570", 575), ("h100-r470", 520), ("a100-r440", 450)):
        case = next(c for c in CASES if c.id == name)
        intent, target = _intent_and_target(case)
        for ln in advise(intent, m, target, "3.12").lines:
            for c in ln.changes:
                if c.kind == "driver":
                    assert int(c.need.split(".")[0]) >= floor, (name, c.words)
            assert ln.blocker is None or "does not know this GPU" in ln.blocker or ln.status != "blocked"
        sources = [s for ln in advise(intent, m, target, "3.12").lines for c in ln.changes for s in c.sources]
        assert any(s.startswith("gpu ") and "first_cuda" in s for s in sources), (name, sources)
