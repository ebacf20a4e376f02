"""The resolver against the shipped matrix, for host profiles of real machines from the last four years."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from tritonlock.intent.read import parse_intent
from tritonlock.compat.matrix import load_matrix
from tritonlock.models import Selection
from tritonlock.decide.resolve import gpu_runs, resolve, selection_json

M = load_matrix()


def pick(env: str = "", **target: object) -> Selection:
    target.setdefault("name", "t")
    body = "\n".join(f"{k} = {json.dumps(v)}" for k, v in target.items())
    it = parse_intent(f"[environment]\n{env}\n[[targets]]\n{body}\n")
    (sel,) = resolve(it, M, it.targets, "3.12")
    return sel


def test_gpu_runs_follows_cuda_binary_compatibility() -> None:
    assert gpu_runs("8.6", ("sm_80",), ()) == "sass"       # same major, newer minor
    assert gpu_runs("9.0", ("sm_80", "sm_86"), ()) is None  # never across majors
    assert gpu_runs("9.0", ("sm_80",), ("sm_80",)) == "ptx"  # PTX JITs forward
    assert gpu_runs("8.0", ("sm_90a",), ()) is None and gpu_runs("9.0", ("sm_90a",), ()) == "sass"
    assert gpu_runs("7.5", ("sm_80",), ("sm_80",)) is None   # PTX never runs backwards


def test_h200_on_driver_580_gets_a_cuda13_build_of_the_newest_torch() -> None:
    host = json.loads((Path(__file__).parent / "fixtures" / "hosts" / "h200.json").read_text())
    sel = pick('torch = ">=2.6"', driver=host["nvml_driver"], gpus=["9.0"], glibc="2.39", python="3.12")
    assert sel.ok and sel.torch == M.torch[0].version
    assert sel.backend is not None and sel.backend.startswith("cu13")
    assert sel.triton == M.torch_release(sel.torch).triton  # type: ignore[union-attr]
    assert gpu_runs("9.0", sel.archs, sel.ptx) == "sass"
    assert sel.index == f"https://download.pytorch.org/whl/{sel.backend}"


def test_strict_policy_keeps_the_build_at_or_below_the_drivers_cuda() -> None:
    sel = pick('cuda-policy = "strict"', driver="535.104.05", gpus=["8.0"], python="3.10", glibc="2.31")
    assert sel.ok and sel.backend in ("cu118", "cu121")
    loose = pick("", driver="535.104.05", gpus=["8.0"], python="3.10", glibc="2.31")
    assert loose.backend is not None and loose.backend.startswith("cu12")  # minor-version compatibility
    assert Version(loose.torch or "0") > Version(sel.torch or "0")
    assert any("minor-version compatibility" in w for w in loose.warnings)


def test_blackwell_rtx5090_gets_a_build_with_sm_120() -> None:
    sel = pick("", driver="570.133.07", gpus=["RTX 5090"], python="3.12", glibc="2.35")
    assert sel.ok and "sm_120" in sel.archs
    assert Version(sel.torch or "0") >= Version("2.7.0")
    # on a cu126 build, which stops at sm_90, the same card cannot run
    assert pick('cuda = "cu126"', driver="570.133.07", gpus=["12.0"], python="3.12").ok is False


def test_pascal_gtx1080_on_470_is_a_conflict_for_triton_and_fits_without_it() -> None:
    sel = pick("", driver="470.256.02", gpus=["GTX 1080"], python="3.10", glibc="2.31")
    assert not sel.ok and sel.conflict is not None
    msg = sel.conflict.message
    assert "torch 2.7.1: its triton 3.3.1 cannot compile for compute capability 6.1 (Triton needs >= 7.0)" in msg
    assert ('fix: set triton = "none" to lock torch 2.7.1 (cu118) with the triton it pins: torch runs on this GPU, '
            "Triton does not") in msg
    # the claim in the fix: with triton = "none" this target gets exactly that
    alone = pick('triton = "none"', driver="470.256.02", gpus=["GTX 1080"], python="3.10", glibc="2.31")
    assert alone.ok and (alone.torch, alone.backend) == ("2.7.1", "cu118")
    assert gpu_runs("6.1", alone.archs, alone.ptx) is not None


def test_centos7_glibc_217_is_held_to_manylinux2014_wheels() -> None:
    sel = pick("", driver="550.54.15", gpus=["8.0"], python="3.10", glibc="2.17")
    assert sel.ok and Version(sel.torch or "0") < Version("2.7")
    assert any("glibc >= 2.28; this target has 2.17" in r for r in sel.reasons)


def test_python_38_stops_at_the_last_release_supporting_it() -> None:
    sel = pick("", driver="550.54.15", gpus=["8.6"], python="3.8", glibc="2.31")
    assert sel.ok and sel.torch == "2.4.1"


def test_no_driver_gets_cpu_and_macos_gets_no_triton() -> None:
    cpu = pick("", python="3.12", glibc="2.35")
    assert (cpu.backend, cpu.triton_package) == ("cpu", "triton")
    mac = pick("", os="macos", arch="arm64", python="3.12")
    assert mac.ok and mac.backend == "cpu" and mac.triton_package is None
    assert "Triton publishes no wheels for macos_arm64; the lock has no triton" in mac.warnings


def test_windows_uses_triton_windows_when_the_matrix_knows_one() -> None:
    known = [t.torch for t in M.triton_windows]
    assert known, "compat/ must carry triton-windows rows"
    series = sorted(known, key=Version)[-1]
    sel = pick(f'torch = "=={series}.*"', os="windows", driver="566.36", gpus=["8.9"], python="3.12")
    assert sel.ok and sel.triton_package == "triton-windows"


def test_conflict_names_the_driver_and_the_way_out() -> None:
    sel = pick('torch = ">=2.9"', driver="470.82.01", gpus=["8.0"], python="3.10")
    assert not sel.ok and sel.conflict is not None
    msg = sel.conflict.message
    assert msg.startswith("nothing fits target 't' (linux/x86_64, Python 3.10, driver 470.82.01, GPUs 8.0):")
    assert "which need driver >= 525.60.13; this driver is 470.82.01" in msg
    assert "fix: upgrade the NVIDIA driver to >= 525.60.13" in msg
    # older torch runs on 470 (cu118), but every Triton's bundled ptxas is CUDA 12.x: only without the Triton rule
    assert 'allow torch <= 2.7.1 and set triton = "none" (torch 2.7.1 runs here, its Triton does not)' in msg
    d = selection_json(sel)
    assert d["ok"] is False and d["conflict"] == msg and d["torch"] is None


def test_a_gpu_too_old_for_triton_gets_one_way_out_not_two_run_together() -> None:
    """A GTX 1080 (6.1) on driver 470: torch 2.7.1 (cu118) runs, no Triton does. The fix read "set triton = "none"
    to lock torch 2.7.1 (cu118) …: torch runs on this GPU, Triton does not or allow torch <= 2.3.1 and set triton =
    "none" …" — the second way is the first one with an older torch."""
    sel = pick('torch = ">=2.4"', driver="470.82.01", gpus=["6.1"], python="3.12")
    assert not sel.ok and sel.conflict is not None
    fix = sel.conflict.message.splitlines()[-1]
    assert fix == ('  fix: set triton = "none" to lock torch 2.7.1 (cu118) with the triton it pins: torch runs on this '
                   'GPU, Triton does not')


def test_no_release_matches_the_torch_specifier() -> None:
    sel = pick('torch = ">=9"', python="3.12")
    assert not sel.ok and "no torch release in the matrix matches torch = '>=9'" in sel.conflict.message  # type: ignore[union-attr]


def test_triton_specifier_outside_the_pin_skips_releases() -> None:
    newest = M.torch[0]
    sel = pick(f'triton = "<{newest.triton}"', python="3.12")
    assert sel.ok and Version(sel.triton or "0") < Version(newest.triton or "0")
    assert any(f"pins triton {newest.triton}" in r for r in sel.reasons)
    none = pick('triton = "none"', python="3.12")
    assert none.ok and none.triton is None and none.triton_package is None


def test_explicit_backend_and_cuda_specifier() -> None:
    sel = pick('cuda = "cu124"', driver="550.54.15", gpus=["9.0"], python="3.11")
    assert sel.backend == "cu124" and sel.torch in {r.version for r in M.torch
                                                    if any(v.backend == "cu124" for v in r.variants)}
    spec = pick('cuda = "<12.5"', driver="550.54.15", gpus=["9.0"], python="3.11")
    assert spec.ok and Version(spec.backend[2:-1] + "." + spec.backend[-1]) < Version("12.5")  # type: ignore[index]
    cpu = pick('cuda = "cpu"', driver="550.54.15", gpus=["9.0"], python="3.11")
    assert cpu.backend == "cpu"


def test_resolution_is_deterministic() -> None:
    it = parse_intent(Path(__file__).parents[1].joinpath("examples", "clusters", "triton-env.toml").read_text())
    a = resolve(it, M, it.targets, "3.12")
    b = resolve(it, M, it.targets, "3.12")
    assert a == b and all(s.ok for s in a)


@pytest.mark.parametrize("index, expected", [
    ("https://mirror.example/whl/{backend}", "https://mirror.example/whl/cu126"),
    ("https://mirror.example/torch-cu126", "https://mirror.example/torch-cu126"),
])
def test_torch_index_template(index: str, expected: str) -> None:
    it = parse_intent(f'[environment]\ncuda = "cu126"\ntorch = "==2.6.0"\n[indexes]\ntorch = "{index}"\n'
                      '[[targets]]\nname = "t"\ndriver = "560.35.03"\ngpus = ["8.0"]\n')
    (sel,) = resolve(it, M, it.targets, "3.12")
    assert sel.index == expected


def test_torch_from_the_default_index_takes_the_build_pypi_ships() -> None:
    rel = M.torch_release("2.6.0")
    assert rel is not None and rel.pypi_backend == "cu124"  # PyPI's torch 2.6.0 pins the CUDA 12.4 runtime
    env = 'torch = "==2.6.0"\n[indexes]\ntorch = "default"'
    gpu = pick(env, driver="550.54.15", gpus=["8.0"], python="3.11")
    assert (gpu.ok, gpu.backend, gpu.index) == (True, "cu124", "default")
    cpu = pick(env, python="3.11")
    assert cpu.ok and cpu.backend == "cu124" and "runs on the CPU" in cpu.warnings[0]
    # only PyPI's build exists there: a driver too old for it is a conflict, not a silent other variant
    old = pick(env, driver="470.82.01", gpus=["8.0"], python="3.11")
    assert not old.ok and "only for CUDA 12.4 on linux_x86_64, which need driver >= 525.60.13" in old.conflict.message  # type: ignore[union-attr]
    mac = pick(env, os="macos", arch="arm64", python="3.11")
    assert mac.ok and mac.backend == "cpu"


def test_jetson_is_told_to_use_jetpack_wheels() -> None:
    sel = pick("", arch="aarch64", driver="540.4.0", gpus=["Jetson AGX Orin"], python="3.10")
    assert not sel.ok and sel.conflict is not None
    assert sel.conflict.facts == ("compute capability 8.7 is an integrated Jetson Orin GPU: no torch release on "
                                  "PyTorch's wheel index is built for it (its aarch64 CUDA wheels are for server Arm, "
                                  "SBSA)",)
    assert "JetPack" in sel.conflict.message
    assert pick('cuda = "cpu"', arch="aarch64", driver="540.4.0", gpus=["8.7"], python="3.10").ok
    # a GH200 is server Arm: the aarch64 CUDA wheels are for it
    gh = pick("", arch="aarch64", driver="560.35.03", gpus=["GH200"], python="3.12")
    assert gh.ok and gh.backend is not None and gh.backend.startswith("cu")
