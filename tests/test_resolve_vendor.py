"""AMD (ROCm) and Intel (XPU) targets: `resolve --dry-run --json` on host profiles, and a real lock against a local
index serving ROCm- and XPU-shaped wheels (+rocm7.2 / +xpu local versions and their Triton packages)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.lock.lockfile import read_lock
from tritonlock.compat.matrix import load_matrix
from tritonlock.compat.matrix_vendor import load_vendor_matrix
from tritonlock.models import Intent, TargetSpec
from tritonlock.decide.resolve import resolve_one


def _dry(tmp: Path, body: str) -> dict[str, dict[str, Any]]:
    (tmp / "triton-env.toml").write_text(body, encoding="utf-8")
    r = CliRunner().invoke(main, ["resolve", "-p", str(tmp), "--dry-run", "--json"])
    assert r.exit_code in (0, 3), r.output
    return {t["name"]: t for t in json.loads(r.output)["targets"]}


PROFILES = """
[environment]
python = "3.12"

[[targets]]
name = "mi300x"
gpus = ["AMD Instinct MI300X", "gfx942:sramecc+:xnack-"]
amdgpu = "30.30"

[[targets]]
name = "rx7900xtx"
gpus = ["Radeon RX 7900 XTX"]

[[targets]]
name = "rhel7-mi250"
glibc = "2.17"
gpus = ["MI250X"]

[[targets]]
name = "renoir-apu"
gpus = ["gfx90c"]

[[targets]]
name = "arc-b580"
gpus = ["Intel Arc B580"]

[[targets]]
name = "tigerlake"
gpus = ["tgl"]
"""


def test_amd_and_intel_profiles(tmp_path: Path) -> None:
    got = _dry(tmp_path, PROFILES)
    newest = load_matrix().torch[0].version
    mi = got["mi300x"]
    assert (mi["ok"], mi["torch"], mi["backend"], mi["triton_package"]) == (True, newest, "rocm7.14", "triton-rocm")
    assert mi["index"] == "https://download.pytorch.org/whl/rocm7.14"
    assert mi["triton"] == load_matrix().torch[0].triton
    assert any("stable ROCm variant" in r for r in mi["reasons"])
    rx = got["rx7900xtx"]
    assert rx["backend"].startswith("rocm") and rx["torch"] == newest
    assert any("the amdgpu kernel driver is not stated" in w for w in rx["warnings"])
    # glibc 2.17: only torch 2.5's ROCm wheels (linux_x86_64, CentOS 7 builds) install there
    old = got["rhel7-mi250"]
    assert (old["torch"], old["backend"], old["triton_package"], old["triton"]) == (
        "2.5.1", "rocm6.2", "pytorch-triton-rocm", "3.1.0")
    assert any("need glibc >= 2.28; this target has 2.17" in r for r in old["reasons"])
    apu = got["renoir-apu"]
    assert apu["ok"] and apu["backend"] == "cpu"
    assert apu["warnings"][0].startswith("GPU gfx90c (Vega APU (Renoir/Cezanne/Lucienne)) is in no PyTorch ROCm build")
    arc = got["arc-b580"]
    assert (arc["backend"], arc["triton_package"], arc["index"]) == (
        "xpu", "triton-xpu", "https://download.pytorch.org/whl/xpu")
    tgl = got["tigerlake"]
    assert tgl["backend"] == "cpu" and "is in no PyTorch XPU build" in tgl["warnings"][0]


def test_pinned_torch_predating_the_gfx_target_says_from_which_torch(tmp_path: Path) -> None:
    got = _dry(tmp_path, '[environment]\npython = "3.12"\ntorch = "<2.8"\n\n[[targets]]\nname = "mi355"\n'
                         'gpus = ["MI355X"]\n')
    c = got["mi355"]
    assert not c["ok"]
    # gfx950 came only with the ROCm >= 7.0 images (torch 2.10's), not 2.8/2.9's rocm6.4 (pytorch #167299)
    assert "  - gfx950 is in ROCm builds from torch 2.10\n" in c["conflict"]
    assert "torch 2.7.0–2.7.1: rocm6.3 carries code for gfx900…gfx1201, not for gfx950" in c["conflict"]
    assert 'fix: allow torch >= 2.10.0 (torch = ">=2.10.0" in triton-env.toml)' in c["conflict"]


def test_old_amdgpu_driver_holds_torch_to_the_rocm_it_supports(tmp_path: Path) -> None:
    got = _dry(tmp_path, '[environment]\npython = "3.12"\n\n[[targets]]\nname = "mi210"\ngpus = ["MI210"]\n'
                         'amdgpu = "6.1"\n')
    t = got["mi210"]
    # amdgpu 6.1.x supports ROCm 5.7 … 6.4 (AMD's table): torch 2.9's rocm6.4 is the newest that fits
    assert (t["torch"], t["backend"]) == ("2.9.1", "rocm6.4")
    assert any("rocm7.0: ROCm 7.0 is not supported on amdgpu driver 6.1 (AMD's amdgpu compatibility matrix; amdgpu "
               "6.1 supports ROCm 5.7–6.4); amdgpu 6.2 or newer supports it" in r for r in t["reasons"])
    # as an NVIDIA target is told of its driver: what a newer one would allow
    assert ("newer torch 2.10.0–2.15.0 has ROCm builds for gfx90a that amdgpu 6.1 does not support (it supports ROCm "
            "5.7–6.4); the lock holds torch 2.9.1 — amdgpu 6.2 or newer (AMD's amdgpu compatibility matrix) would "
            "allow torch 2.10.0, amdgpu 6.4 or newer torch 2.15.0") in t["warnings"]


def test_override_is_an_opt_in_with_warnings(tmp_path: Path) -> None:
    got = _dry(tmp_path, '[environment]\npython = "3.12"\n\n[[targets]]\nname = "rx6700"\ngpus = ["RX 6700 XT"]\n'
                         '\n[[targets]]\nname = "rx6700-override"\ngpus = ["RX 6700 XT"]\nhsa-override = "10.3.0"\n')
    plain = got["rx6700"]
    assert plain["backend"] == "cpu"  # gfx1031 is only inferred in rocm7.14: never silently treated as gfx1030
    forced = got["rx6700-override"]
    assert forced["backend"].startswith("rocm")
    assert any("gfx1031 runs gfx1030 code — an unsupported opt-in" in w for w in forced["warnings"])


def test_stable_rocm_is_preferred_over_the_newer_variant() -> None:
    m = load_matrix()
    vm = load_vendor_matrix()
    rel = m.torch_release("2.13.0")
    assert rel is not None
    intent = Intent(path="x", python="3.12", torch="==2.13.0")
    sel = resolve_one(intent, m, TargetSpec(name="t", os="linux", arch="x86_64", gpus=("gfx942",)), "3.12")
    stable = [b.backend for b in vm.rocm_builds("2.13.0") if b.stable]
    assert sel.backend == stable[0] == "rocm7.2"


def test_a_windows_amd_target_has_no_rocm_build(tmp_path: Path) -> None:
    got = _dry(tmp_path, '[environment]\npython = "3.12"\n\n[[targets]]\nname = "win"\nos = "windows"\n'
                         'gpus = ["gfx1100"]\n')
    assert not got["win"]["ok"]
    assert "PyTorch publishes ROCm builds for linux_x86_64 only, not win_amd64" in got["win"]["conflict"]


# ---- a real lock against a local index ----------------------------------------------------------------------

TAG = "py3-none-manylinux_2_28_x86_64"


@pytest.fixture
def rocm_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    """PyTorch's rocm7.2 and xpu indexes in miniature, and a default index with same-named decoys."""
    idx = LocalIndex(tmp_path_factory.mktemp("rocm-index"))
    rel = load_matrix().torch_release("2.13.0")
    assert rel is not None and rel.triton
    pin = rel.triton
    for backend, tri in (("rocm7.2", "triton-rocm"), ("xpu", "triton-xpu")):
        v = f"2.13.0+{backend}"
        idx.add(f"whl/{backend}", "torch", v, tag=TAG,
                requires=("filelock>=3.0", f"{tri}=={pin}; platform_system == 'Linux'"),
                modules={"torch/__init__.py": f"__version__ = {v!r}\n"})
        idx.add(f"whl/{backend}", tri, pin, tag=TAG, modules={"triton/__init__.py": f"__version__ = {pin!r}\n"})
    # the rocm index also serves a plain triton (as PyPI's name), and a library pulls it in
    idx.add("whl/rocm7.2", "triton", pin, tag=TAG, modules={"triton/__init__.py": "# CUDA build\n"})
    idx.add("simple", "filelock", "3.16.1")
    idx.add("simple", "triton-rocm", pin, tag=TAG, modules={"triton/__init__.py": "# stale decoy\n"})
    idx.add("simple", "needs-triton", "1.0", requires=("triton",))
    idx.add("simple", "triton", pin, tag=TAG, modules={"triton/__init__.py": "# PyPI's CUDA build\n"})
    idx.start()
    yield idx
    idx.stop()


def test_rocm_and_xpu_lock_take_their_triton_from_the_torch_index(tmp_path: Path, rocm_index: LocalIndex) -> None:
    write_intent(tmp_path, rocm_index, '[environment]\npython = "3.11"\ntorch = "==2.13.0"\n\n[[targets]]\n'
                                       'name = "mi300x"\ngpus = ["gfx942"]\n\n[[targets]]\nname = "arc"\n'
                                       'gpus = ["bmg"]\n')
    r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path)])
    assert r.exit_code == 0, r.output
    lock = read_lock(tmp_path / "triton-env.lock")
    by = {t.name: t for t in lock.targets}
    rocm_pkgs = {p.name: p for p in by["mi300x"].packages}
    assert rocm_pkgs["torch"].version == "2.13.0+rocm7.2"
    assert rocm_pkgs["triton-rocm"].index == rocm_index.index_url("whl/rocm7.2")  # not the default index's decoy
    assert rocm_pkgs["filelock"].index == rocm_index.index_url("simple")
    assert "numpy" not in rocm_pkgs  # Triton runs on the GPU here, not in its interpreter
    assert by["mi300x"].selection.target.gpus == ("gfx942",)
    xpu_pkgs = {p.name: p for p in by["arc"].packages}
    assert xpu_pkgs["torch"].version == "2.13.0+xpu"
    assert xpu_pkgs["triton-xpu"].index == rocm_index.index_url("whl/xpu")
    # sync's choice of target on the machine itself: the one whose build carries this GPU's code
    from tritonlock.errors import NoFittingTargetError
    from tritonlock.models import HostProfile, VendorGpu
    from tritonlock.environment.sync import pick_target

    def machine(vendor: str, target: str) -> HostProfile:
        return HostProfile(os="linux", arch="x86_64", python="3.11.7", glibc="2.35",
                           vendor_gpus=(VendorGpu(index=0, vendor=vendor, target=target),))

    assert pick_target(lock, machine("amd", "gfx942")).name == "mi300x"
    assert pick_target(lock, machine("intel", "bmg")).name == "arc"
    with pytest.raises(NoFittingTargetError, match="  - mi300x: its build \\(rocm7.2\\) has no code for gfx90c"):
        pick_target(lock, machine("amd", "gfx90c"))


def test_packages_on_amd_and_intel_targets_choose_among_their_own_torch_builds(tmp_path: Path,
                                                                                rocm_index: LocalIndex) -> None:
    """A torch range and packages: the decision chooses among the torch releases each target runs, which on an AMD or
    Intel GPU are its ROCm and XPU builds (never the CPU build a GPU-less host would get)."""
    write_intent(tmp_path, rocm_index, '[environment]\npython = "3.11"\ntorch = ">=2.13,<2.14"\n'
                                       'packages = ["filelock"]\n\n[[targets]]\nname = "mi300x"\ngpus = ["gfx942"]\n\n'
                                       '[[targets]]\nname = "arc"\ngpus = ["bmg"]\n')
    r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path)])
    assert r.exit_code == 0, r.output
    by = {t.name: {p.name: p.version for p in t.packages} for t in read_lock(tmp_path / "triton-env.lock").targets}
    assert by["mi300x"]["torch"] == "2.13.0+rocm7.2" and "triton-rocm" in by["mi300x"]
    assert by["arc"]["torch"] == "2.13.0+xpu" and "triton-xpu" in by["arc"]
    assert by["mi300x"]["filelock"] == by["arc"]["filelock"] == "3.16.1"


def test_two_triton_owners_never_share_a_lock(tmp_path: Path, rocm_index: LocalIndex) -> None:
    write_intent(tmp_path, rocm_index, '[environment]\npython = "3.11"\ntorch = "==2.13.0"\n'
                                       'packages = ["needs-triton"]\n\n[[targets]]\nname = "mi300x"\ngpus = ["gfx942"]\n')
    r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path)])
    assert r.exit_code != 0
    assert ("target 'mi300x': triton and triton-rocm would both be locked, and each installs the top-level triton/ "
            "package") in r.output
    assert not (tmp_path / "triton-env.lock").exists()


def test_why_names_the_amdgpu_driver_that_unlocks_newer_torch(tmp_path: Path) -> None:
    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.12"\n\n[[targets]]\nname = "mi210"\n'
                                              'gpus = ["gfx90a"]\namdgpu = "6.0"\n', encoding="utf-8")
    r = CliRunner().invoke(main, ["why", "-p", str(tmp_path), "--no-sources"])
    assert r.exit_code == 0, r.output
    assert "  now: torch 2.7.1 (rocm6.2.4) + pytorch-triton-rocm 3.3.1" in r.output
    assert ("needs amdgpu driver >= 6.4 (you have 6.0; it supports the ROCm 7.2 user space of rocm7.2)"
            in r.output)


def test_rocm_wheels_that_pin_no_triton_on_a_python(tmp_path: Path) -> None:
    # torch 2.5's wheels require their Triton only for Python < 3.13 (the marker the CUDA pin carries too)
    got = _dry(tmp_path, '[environment]\npython = "3.13"\ntorch = "==2.5.1"\n\n[[targets]]\nname = "mi250"\n'
                         'gpus = ["MI250X"]\n')
    t = got["mi250"]
    assert (t["ok"], t["backend"], t["triton_package"], t["triton"]) == (True, "rocm6.2", None, None)
    assert ("torch 2.5.1's wheels pin pytorch-triton-rocm only for Python < 3.13: on Python 3.13 the lock has no "
            "Triton") in t["warnings"]


def test_older_rocm_builds_lock_with_their_own_tags(tmp_path: Path) -> None:
    """torch 2.6's ROCm wheels are manylinux_2_28 (a target without glibc must still get them), torch 2.5's are
    tagged plain linux_x86_64 (CentOS 7 builds, for a glibc 2.17 target); each pins pytorch-triton-rocm."""
    idx = LocalIndex(tmp_path / "idx")
    for version, backend, tag, tri in (("2.6.0", "rocm6.2.4", "py3-none-manylinux_2_28_x86_64", "3.2.0"),
                                       ("2.5.1", "rocm6.2", "py3-none-linux_x86_64", "3.1.0")):
        idx.add(f"whl/{backend}", "torch", f"{version}+{backend}", tag=tag,
                requires=(f"pytorch-triton-rocm=={tri}; platform_system == 'Linux'",),
                modules={"torch/__init__.py": "\n"})
        idx.add(f"whl/{backend}", "pytorch-triton-rocm", tri, tag=tag, modules={"triton/__init__.py": "\n"})
    idx.start()
    try:
        write_intent(tmp_path / "p", idx, '[environment]\npython = "3.11"\ntorch = "<2.7"\n\n[[targets]]\n'
                                          'name = "mi250"\ngpus = ["MI250X"]\n\n[[targets]]\nname = "rhel7"\n'
                                          'glibc = "2.17"\ngpus = ["MI250X"]\n')
        r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path / "p")])
    finally:
        idx.stop()
    assert r.exit_code == 0, r.output
    by = {t.name: {p.name: p.version for p in t.packages} for t in read_lock(tmp_path / "p" / "triton-env.lock").targets}
    assert by["mi250"] == {"torch": "2.6.0+rocm6.2.4", "pytorch-triton-rocm": "3.2.0"}
    assert by["rhel7"] == {"torch": "2.5.1+rocm6.2", "pytorch-triton-rocm": "3.1.0"}


# ---- the facts the audit found wrong, tried as a new user would ---------------------------------------------

def _one(tmp: Path, env: str, target: str) -> dict[str, Any]:
    tmp.mkdir(parents=True, exist_ok=True)
    got = _dry(tmp, '[environment]\npython = "3.12"\n' + env + '\n[[targets]]\nname = "t"\n' + target)
    return got["t"]


@pytest.mark.parametrize("torch, gpu, gfx, first", [
    ("==2.5.1", "RX 7800 XT", "gfx1101", "2.6"),  # pytorch #141667
    ("==2.9.1", "Radeon 8060S", "gfx1151", "2.10"),  # Strix Halo; #167299: ROCm >= 7.0 builds only
    ("==2.9.1", "MI355X", "gfx950", "2.10"),
    ("==2.6.0", "RX 7600", "gfx1102", "2.7"),  # #147761
])
def test_a_pinned_torch_whose_build_lacks_the_gpu_is_refused(tmp_path: Path, torch: str, gpu: str, gfx: str,
                                                             first: str) -> None:
    t = _one(tmp_path, f'torch = "{torch}"\n', f'gpus = ["{gpu}"]\n')
    assert not t["ok"], t
    assert f"  - {gfx} is in ROCm builds from torch {first}" in t["conflict"]
    assert f'fix: allow torch >= {first}.0 (torch = ">={first}.0" in triton-env.toml)' in t["conflict"]


def test_gfx1103_is_inferred_and_said_so(tmp_path: Path) -> None:
    """Radeon 780M (gfx1103): not in 2.11/2.12's builds; in 2.13+ only inferred (#179653's landing not read)."""
    pinned_old = _one(tmp_path / "a", 'torch = "==2.12.1"\n', 'gpus = ["Radeon 780M"]\n')
    assert not pinned_old["ok"]
    assert ("  - gfx1103 is in ROCm builds from torch 2.13 (inferred: pytorch #179653 added gfx1103 to the manywheel "
            "PYTORCH_ROCM_ARCH on main after the 2.12 branch") in pinned_old["conflict"]
    assert 'allow torch == 2.13.0 (torch = "==2.13.0" in triton-env.toml; its code for gfx1103 is inferred' \
        in pinned_old["conflict"]
    # unpinned: the surely right choice (the CPU build), and what would take the ROCm one
    free = _one(tmp_path / "b", "", 'gpus = ["Radeon 780M"]\n')
    assert (free["ok"], free["backend"]) == (True, "cpu")
    assert free["reasons"][0].startswith("cpu: no PyTorch ROCm build surely carries code for gfx1103: gfx1103 in "
                                         "torch 2.15's rocm7.14 build is inferred (TheRock's SDK has device packages "
                                         "for them, mirrored as this build's dependencies (test-infra "
                                         "update_dependencies.py at 61a7757), and the torch wheel's own list was not "
                                         "read (gfx1103 too: pytorch #179653")
    newest = load_matrix().torch[0].version
    assert any(f'torch = "=={newest}" in triton-env.toml takes its rocm7.14 build' in w for w in free["warnings"])
    # an exact pin takes it, with the warning
    taken = _one(tmp_path / "c", 'torch = "==2.13.0"\n', 'gpus = ["gfx1103"]\n')
    assert (taken["ok"], taken["backend"]) == (True, "rocm7.2")
    assert ("gfx1103 in torch 2.13's rocm7.2 build is inferred (pytorch #179653 added gfx1103 to the manywheel "
            "PYTORCH_ROCM_ARCH on main after the 2.12 branch; that it reached this release branch is not read); "
            "`tritonlock verify` on the machine settles it") in taken["warnings"]


def test_reasons_on_inferred_rows_say_so_and_cite_no_table_they_did_not_read(tmp_path: Path) -> None:
    newest = load_matrix().torch[0].version
    t = _one(tmp_path, "", 'gpus = ["MI300X"]\namdgpu = "30.30"\n')
    assert (t["torch"], t["backend"]) == (newest, "rocm7.14")
    stable = next(r for r in t["reasons"] if r.startswith("rocm7.14: "))
    assert "inferred" in stable and "RELEASE.md" not in stable
    code = next(r for r in t["reasons"] if r.startswith("rocm7.14 carries native code for gfx942"))
    assert "— inferred: " in code
    tri = next(r for r in t["reasons"] if "AMD backend compiles for gfx942" in r)
    assert "(compat/rocm.toml triton_amd 3.3.0 — inferred: " in tri
    # the 7.14 wheels take their libraries from TheRock's SDK wheels: they do not bundle the ROCm user space
    assert not any("bundle the ROCm" in r for r in t["reasons"])
    assert any(r.startswith("the rocm7.14 wheels take the ROCm 7.14 libraries from TheRock's SDK wheels") for r in
               t["reasons"])


def test_amdgpu_30_30_runs_rocm_6_3(tmp_path: Path) -> None:
    """AMD's matrix: 30.30.x with ROCm 6.3 … 7.14 (amdgpu-docs #97)."""
    t = _one(tmp_path, 'torch = "==2.7.1"\n', 'gpus = ["MI300X"]\namdgpu = "30.30"\n')
    assert (t["ok"], t["backend"]) == (True, "rocm6.3")


def test_an_mi300x_on_amdgpu_6_4_is_told_what_a_newer_driver_unlocks(tmp_path: Path) -> None:
    newest = load_matrix().torch[0].version
    t = _one(tmp_path, "", 'gpus = ["MI300X"]\namdgpu = "6.4"\n')
    assert (t["torch"], t["backend"]) == (newest, "rocm7.2")  # 6.4 supports ROCm 6.1 … 7.2, a year apart
    assert (f"torch {newest}'s stable rocm7.14 build is not supported on amdgpu 6.4: the lock holds its rocm7.2 build "
            "— amdgpu 30.10 or newer (AMD's amdgpu compatibility matrix) would allow rocm7.14") in t["warnings"]


def test_conflict_texts_name_only_real_levers(tmp_path: Path) -> None:
    """A host already past the newest driver that supports an old ROCm is not told to update it; glibc that blocks
    nothing is not offered as a way out."""
    t = _one(tmp_path, 'torch = "==2.5.1"\n', 'glibc = "2.35"\ngpus = ["MI300X"]\namdgpu = "30.30"\n')
    assert not t["ok"]
    assert ("rocm6.2: ROCm 6.2 is not supported on amdgpu driver 30.30 (AMD's amdgpu compatibility matrix; amdgpu 30.30 "
            "supports ROCm 6.3–10.0); it is older than this driver supports (amdgpu 6.0–30.10 support ROCm 6.2)"
            in t["conflict"])
    assert "or newer supports it" not in t["conflict"]
    assert "update the amdgpu kernel driver" not in t["conflict"] and "glibc" not in t["conflict"].split("fix:")[1]
    assert 'fix: allow torch >= 2.7.0 (torch = ">=2.7.0" in triton-env.toml)' in t["conflict"]
    # an older driver is told which newer one would do
    old = _one(tmp_path / "b", 'torch = "==2.10.0"\n', 'gpus = ["MI210"]\namdgpu = "6.1"\n')
    assert "update the amdgpu kernel driver to 6.2 or newer (amdgpu-install)" in old["conflict"].split("fix:")[1]


def test_a_listed_target_without_library_kernels_does_not_run_the_build(tmp_path: Path) -> None:
    """MI50 (gfx906): the rocm6.4+ builds list it but ship a rocBLAS without its Tensile library (ROCm #4625): the
    newest build that runs it is 2.9's rocm6.3."""
    t = _one(tmp_path, 'triton = "none"\n', 'gpus = ["gfx906"]\n')
    assert (t["ok"], t["torch"], t["backend"]) == (True, "2.9.1", "rocm6.3")
    assert any("rocm6.4 lists gfx906 but its bundled ROCm 6.4 libraries have no kernels for it" in r
               for r in t["reasons"])


def test_intel_on_windows_gets_the_triton_its_xpu_wheels_require(tmp_path: Path) -> None:
    rel = load_matrix().torch_release("2.13.0")
    assert rel is not None
    t = _one(tmp_path, 'torch = "==2.13.0"\n', 'os = "windows"\ngpus = ["Arc B580"]\n')
    assert (t["backend"], t["triton_package"], t["triton"]) == ("xpu", "triton-xpu", rel.triton)
    old = _one(tmp_path / "b", 'torch = "==2.6.0"\n', 'os = "windows"\ngpus = ["Arc B580"]\n')
    assert old["triton_package"] is None
    assert "torch 2.6.0's XPU wheels for win_amd64 pin no Triton: the lock has none" in old["warnings"]
def test_an_intel_gpu_missing_from_a_releases_xpu_device_list_is_refused(tmp_path: Path) -> None:
    """Each release's XPU build lists the GPU families it carries code for (compat/xpu.toml devices): one not listed
    is refused — never locked onto a build that has no code for it — with the release that added it."""
    got = _dry(tmp_path, '[environment]\npython = "3.12"\ntorch = "==2.9.1"\n\n[[targets]]\nname = "ptl"\n'
                         'gpus = ["ptl-h"]\n')["ptl"]
    assert not got["ok"] and got["backend"] is None, got
    assert "torch 2.9.1: its xpu build supports pvc, dg2, mtl-h, bmg, lnl-m, arl-h, not ptl-h" in got["conflict"]
    assert "ptl-h is in the XPU builds from torch 2.10" in got["conflict"]
    # the first release that lists it takes it
    later = _dry(tmp_path, '[environment]\npython = "3.12"\ntorch = "==2.10.0"\n\n[[targets]]\nname = "ptl"\n'
                           'gpus = ["ptl-h"]\n')["ptl"]
    assert (later["ok"], later["backend"], later["torch"]) == (True, "xpu", "2.10.0"), later
    # an Arc B580 (bmg) under torch 2.5, whose list predates it
    arc = _dry(tmp_path, '[environment]\npython = "3.12"\ntorch = "<2.6"\n\n[[targets]]\nname = "arc"\n'
                         'gpus = ["Arc B580"]\n')["arc"]
    assert not arc["ok"] and "its xpu build supports pvc, dg2, mtl-h, not bmg" in arc["conflict"], arc


def test_a_cuda_extension_is_refused_on_amd_and_intel_targets_and_a_hip_one_locks_on_amd_only(tmp_path: Path) -> None:
    """Real ELF extensions on a torch range: the decision reads them against each target's own torch build (ROCm,
    XPU), refuses the one that links torch's CUDA library, and locks the HIP one for the AMD GPU alone."""
    from nativebuild import extension, stub_library

    st = {n: stub_library(tmp_path / "stubs" / n.split(".so")[0], n, (s,)) for n, s in (
        ("libcudart.so.12", "cudaRuntimeGetVersion"), ("libtorch_cuda.so", "torch_cuda_stub"),
        ("libtorch_hip.so", "torch_hip_stub"), ("libamdhip64.so.7", "hipInit"))}
    idx = LocalIndex(tmp_path / "idx")
    rel = load_matrix().torch_release("2.13.0")
    assert rel is not None and rel.triton
    for backend, tri, libs in (("rocm7.2", "triton-rocm", ("libtorch_hip.so",)), ("xpu", "triton-xpu", ())):
        idx.add(f"whl/{backend}", "torch", f"2.13.0+{backend}", tag=TAG,
                requires=(f"{tri}=={rel.triton}; platform_system == 'Linux'",),
                modules={"torch/__init__.py": "", **{f"torch/lib/{n}": st[n].read_bytes() for n in libs}})
        idx.add(f"whl/{backend}", tri, rel.triton, tag=TAG, modules={"triton/__init__.py": ""})
    cp = "cp311-cp311-manylinux_2_17_x86_64"
    for name, runtime, torchlib, sym in (("cudakern", "libcudart.so.12", "libtorch_cuda.so", "cudaRuntimeGetVersion"),
                                         ("hipkern", "libamdhip64.so.7", "libtorch_hip.so", "hipInit")):
        so = extension(tmp_path / name, f"{name}._C", links={st[runtime]: (sym,), st[torchlib]: (st[torchlib].stem
                                                                                                 + "_stub",)})
        idx.add("simple", name, "1.0", tag=cp, requires=("torch>=2.10",),
                modules={f"{name}/__init__.py": f"from {name} import _C\n", f"{name}/_C.so": so})
    # a CUDA runtime alone (no torch library): a CUDA runtime wheel would let it import, not run on these GPUs
    so = extension(tmp_path / "cudartonly", "cudartonly._C", links={st["libcudart.so.12"]: ("cudaRuntimeGetVersion",)})
    idx.add("simple", "cudartonly", "1.0", tag=cp, requires=("torch>=2.10",),
            modules={"cudartonly/__init__.py": "from cudartonly import _C\n", "cudartonly/_C.so": so})
    idx.start()
    out = {}
    try:
        for name in ("cudakern", "hipkern", "cudartonly"):
            write_intent(tmp_path / name, idx, f'[environment]\npython = "3.11"\ntorch = ">=2.12"\npackages = '
                                               f'["{name}"]\n\n[[targets]]\nname = "mi300x"\ngpus = ["gfx942"]\n\n'
                                               '[[targets]]\nname = "arc"\ngpus = ["bmg"]\n')
            out[name] = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path / name)])
    finally:
        idx.stop()
    r = out["cudakern"]
    assert r.exit_code == 3 and not (tmp_path / "cudakern" / "triton-env.lock").exists(), r.output
    for target, build in (("mi300x", "rocm7.2"), ("arc", "xpu")):
        assert (f"target '{target}': cudakern's native code cannot load on this target: cudakern 1.0: cudakern/_C.so "
                f"in cudakern-1.0-{cp}.whl needs libtorch_cuda.so, which only torch's CUDA builds have; torch 2.13.0 "
                f"here is the {build} build") in r.output
    assert "fix: cudakern needs an NVIDIA GPU: lock it for the GPU machines only" in r.output
    r = out["hipkern"]
    assert r.exit_code == 3, r.output
    by = {t.name: t for t in read_lock(tmp_path / "hipkern" / "triton-env.lock").targets}
    assert {p.name: p.version for p in by["mi300x"].packages}["torch"] == "2.13.0+rocm7.2"
    assert "hipkern" in {p.name for p in by["mi300x"].packages} and not by["arc"].packages
    assert ("needs libtorch_hip.so, which only torch's ROCm builds have; torch 2.13.0 here is the xpu build"
            in r.output)
    assert "hipkern needs an AMD GPU and torch's ROCm build" in r.output
    r = out["cudartonly"]
    assert r.exit_code == 3 and not (tmp_path / "cudartonly" / "triton-env.lock").exists(), r.output
    assert ("needs libcudart.so.12, which no locked wheel brings (torch 2.13.0 is the rocm7.2 build, which brings no "
            "CUDA; a CUDA library runs on NVIDIA GPUs only)") in r.output
    assert r.output.count("fix: cudartonly needs an NVIDIA GPU: lock it for the GPU machines only") == 2, r.output
    assert "nvidia-cuda-runtime" not in r.output and "a torch build that brings" not in r.output



INFERRED_714 = ("in torch 2.15's rocm7.14 build is inferred (TheRock's SDK has device packages for them, mirrored as "
                "this build's dependencies (test-infra update_dependencies.py at 61a7757), and the torch wheel's own "
                "list was not read (gfx1103 too: pytorch #179653 added it to PYTORCH_ROCM_ARCH after the 2.12 "
                "branch)); `tritonlock verify` on the machine settles it")


def test_an_rx_6700_xt_is_told_its_rocm_build_is_inferred_not_that_none_exists(tmp_path: Path) -> None:
    """gfx1031: torch's rocm7.14 build takes its libraries from TheRock's SDK, which has gfx1031's device package;
    whether the torch wheel carries gfx1031 code is not read. The lock holds the CPU build and says it as inferred
    (never "no PyTorch ROCm build carries code for gfx1031"); an exact pin takes the ROCm build, warning so."""
    free = _one(tmp_path / "a", "", 'gpus = ["RX 6700 XT"]\n')
    assert (free["ok"], free["backend"]) == (True, "cpu")
    assert free["reasons"][0] == f"cpu: no PyTorch ROCm build surely carries code for gfx1031: gfx1031 {INFERRED_714}"
    assert ("the lock holds the CPU build, which does not use the GPU: torch 2.15.0's rocm7.14 build is only inferred "
            "to carry code for gfx1031; torch = \"==2.15.0\" in triton-env.toml takes its rocm7.14 build (`tritonlock "
            "verify` on the machine then settles whether its code runs here)") in free["warnings"]
    assert not any("no PyTorch ROCm build carries code" in x for x in free["reasons"] + free["warnings"])
    taken = _one(tmp_path / "b", 'torch = "==2.15.0"\n', 'gpus = ["gfx1031"]\n')
    assert (taken["ok"], taken["backend"]) == (True, "rocm7.14")
    assert f"gfx1031 {INFERRED_714}" in taken["warnings"]


def test_a_gpu_whose_triton_has_no_backend_says_torchs_code_for_it_is_inferred_too(tmp_path: Path) -> None:
    """RX 5700 (gfx1010, RDNA1): Triton's AMD backend has no support for it, and torch's rocm7.14 code for it is
    only inferred: the fix `triton = "none"` does not claim torch runs there."""
    t = _one(tmp_path, "", 'gpus = ["gfx1010"]\n')
    assert not t["ok"]
    assert "  - torch 2.15.0: its triton-rocm 3.9.0 has no AMD backend support for gfx1010" in t["conflict"]
    assert (f'fix: set triton = "none" (its Triton does not run on this GPU, and torch only may: gfx1010 '
            f'{INFERRED_714}) or set cuda = "cpu" for the CPU build') in t["conflict"]
    assert "torch runs on this GPU" not in t["conflict"]
    # where torch's code for the GPU is read (gfx900 in torch 2.7's rocm6.3 list), the fix says torch runs there
    sure = _one(tmp_path / "sure", 'torch = "==2.7.1"\n', 'gpus = ["gfx900"]\n')
    assert not sure["ok"] and "has no AMD backend support for gfx900" in sure["conflict"], sure
    assert 'fix: set triton = "none" (torch runs on this GPU, its Triton does not)' in sure["conflict"]
