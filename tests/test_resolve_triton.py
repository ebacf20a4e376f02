"""The Triton-aware rule: a stack works on a target only when Triton compiles for every GPU with a ptxas whose
kernels the target's driver loads (compat/triton.toml [[ptxas]], read from the wheels)."""

from __future__ import annotations

import dataclasses
import json

from packaging.version import Version

from tritonlock.intent.read import parse_intent
from tritonlock.compat.matrix import load_matrix
from tritonlock.models import Selection
from tritonlock.decide.resolve import resolve

M = load_matrix()


def pick(env: str = "", matrix: object = M, default_python: str = "3.12", **target: object) -> Selection:
    target.setdefault("name", "t")
    body = "\n".join(f"{k} = {json.dumps(v)}" for k, v in target.items())
    it = parse_intent(f"[environment]\n{env}\n[[targets]]\n{body}\n")
    (sel,) = resolve(it, matrix, it.targets, default_python)  # type: ignore[arg-type]
    return sel


def test_the_matrix_knows_each_triton_wheels_ptxas_and_which_gpus_use_it() -> None:
    t39 = M.ptxas_build("triton", "3.9.0", "linux_x86_64")
    t38 = M.ptxas_build("triton", "3.8.0", "linux_x86_64")
    t33 = M.ptxas_build("triton", "3.3.1", "linux_x86_64")
    assert t39 is not None and t38 is not None and t33 is not None
    # 3.9 compiles Hopper and newer with ptxas-blackwell (get_ptxas: `if arch < 90: ptxas`), 3.8 only sm_100+
    assert t39.for_cc("9.0") == ("ptxas-blackwell", "13.4.59", "TRITON_PTXAS_BLACKWELL_PATH")
    assert t39.for_cc("8.9") == ("ptxas", "12.9.86", "TRITON_PTXAS_PATH")
    assert t38.for_cc("9.0") == ("ptxas", "12.9.86", "TRITON_PTXAS_PATH")
    assert t38.for_cc("12.0")[:2] == ("ptxas-blackwell", "13.3.33")
    # 3.3 read the override as f"TRITON_{binary.upper()}_PATH": a hyphen in the variable's name
    assert t33.for_cc("10.0") == ("ptxas-blackwell", "12.8.61", "TRITON_PTXAS-BLACKWELL_PATH")
    assert M.ptxas_build("triton", "3.5.1", "linux_aarch64").blackwell is None  # type: ignore[union-attr]
    # triton-windows: one ptxas for every GPU; a series resolves to its newest post release
    tw = M.ptxas_build("triton-windows", ">=3.7,<3.8", "win_amd64")
    assert tw is not None and tw.version == "3.7.1.post27" and tw.for_cc("12.0")[0] == "ptxas"
    assert M.ptxas_floor("13.4.59") is not None and M.ptxas_floor("13.4.59")[0] == "580.65.06"  # type: ignore[index]
    assert M.ptxas_floor("12.8.93", "windows")[0] == "527.41"  # type: ignore[index]
    every = {p.version for p in M.ptxas if p.package == "triton" and p.platform == "linux_x86_64"}
    assert every == {t.version for t in M.triton}  # a row for every triton release
    assert all(p.source.startswith("https://") and "#sha256=" in p.source for p in M.ptxas)


def test_blackwell_on_r570_passes_over_torch_whose_triton_ptxas_is_cuda13() -> None:
    sel = pick("", driver="570.133.07", gpus=["RTX 5090"], python="3.12", glibc="2.35")
    assert sel.ok and (sel.torch, sel.backend, sel.triton) == ("2.11.0", "cu128", "3.6.0")
    why = "\n".join(sel.reasons)
    assert ("passed over torch 2.12.1–2.13.0: its Triton (triton 3.7.1) compiles for compute capability 12.0 with "
            "its bundled ptxas-blackwell (CUDA 13.1), whose kernels need driver >= 580.65.06 (CUDA 13.x "
            "minor-version compatibility); driver 570.133.07 cannot load them") in why
    assert ("triton 3.6.0 compiles for compute capability 12.0 with its bundled ptxas-blackwell (CUDA 12.9): driver "
            "570.133.07 >= 525.60.13 loads its kernels") in why
    (warn,) = [w for w in sel.warnings if w.startswith("newer torch")]
    assert "newer torch 2.12.1–2.13.0 runs on this target but its Triton does not" in warn
    assert warn.endswith("a driver >= 580.65.06 (the R580 branch) would allow torch 2.13.0")
    # the claims: torch 2.13.0 itself runs here (cu129), and with that driver its Triton works
    assert pick('triton = "none"', driver="570.133.07", gpus=["12.0"], python="3.12").torch == "2.13.0"
    newer = pick('torch = "==2.13.0"', driver="580.65.06", gpus=["12.0"], python="3.12")
    assert newer.ok and newer.triton == "3.7.1"


def test_triton_none_drops_the_rule() -> None:
    sel = pick('triton = "none"', driver="570.133.07", gpus=["RTX 5090"], python="3.12", glibc="2.35")
    assert sel.ok and sel.torch == "2.13.0" and sel.triton_package is None
    assert not [w for w in sel.warnings if "Triton does not" in w]
    assert "triton = 'none' in the intent" in "\n".join(sel.reasons)


def test_t4_on_470_is_a_conflict_naming_the_driver_and_the_escape_hatches() -> None:
    sel = pick("", driver="470.82.01", gpus=["T4"], python="3.10", glibc="2.31")
    assert not sel.ok and sel.conflict is not None
    msg = sel.conflict.message
    assert ("torch 2.7.1: its Triton (triton 3.3.1) compiles for compute capability 7.5 with its bundled ptxas "
            "(CUDA 12.4), whose kernels need driver >= 525.60.13") in msg
    assert ("fix: upgrade the NVIDIA driver to >= 525.60.13 (the R525 branch), which loads the kernels of triton "
            "3.8.0 (torch 2.14.1)") in msg
    assert ('keep this driver: set triton = "none" (locks torch 2.7.1 (cu118) with the triton it pins, without the '
            "Triton check) and point TRITON_PTXAS_PATH at the ptxas of a CUDA 11.x toolkit") in msg
    # both claims hold
    up = pick("", driver="525.60.13", gpus=["T4"], python="3.10", glibc="2.31")
    assert up.ok and (up.torch, up.triton) == ("2.14.1", "3.8.0")
    alone = pick('triton = "none"', driver="470.82.01", gpus=["T4"], python="3.10", glibc="2.31")
    assert alone.ok and (alone.torch, alone.backend) == ("2.7.1", "cu118")


def test_windows_uses_triton_windows_ptxas_and_the_windows_floor() -> None:
    sel = pick("", os="windows", driver="520.06", gpus=["RTX 3080"], python="3.12")
    assert not sel.ok and sel.conflict is not None
    msg = sel.conflict.message
    assert ("its Triton (triton-windows 3.3.1.post21) compiles for compute capability 8.6 with its bundled ptxas "
            "(CUDA 12.8), whose kernels need driver >= 527.41") in msg
    assert 'keep this driver: set triton = "none" (locks torch 2.7.1 (cu118) without triton-windows)' in msg
    ok = pick("", os="windows", driver="576.02", gpus=["RTX 5090"], python="3.13")
    # PyTorch builds no CUDA 12.9 for Windows from 2.9.1 (compat/torch.toml): 2.11.0's cu128 is the newest that runs
    assert ok.ok and ok.triton_package == "triton-windows" and ok.triton == ">=3.6,<3.7" and ok.torch == "2.11.0"
    assert any("triton-windows 3.6.0.post26 compiles for compute capability 12.0 with its bundled ptxas (CUDA 12.8)"
               in r for r in ok.reasons)


def test_triton_windows_needs_a_wheel_for_the_targets_python() -> None:
    tw = M.triton_windows_for("2.14.0")
    assert tw is not None
    narrow = dataclasses.replace(M, triton_windows=tuple(
        dataclasses.replace(t, python=("3.10", "3.11")) if t is tw else t for t in M.triton_windows))
    sel = pick("", matrix=narrow, os="windows", driver="580.88", gpus=["8.6"], python="3.12")
    assert sel.ok and Version(sel.torch or "0") < Version("2.14")
    assert any("triton-windows >=3.8,<3.9 (the series for torch 2.14) publishes no wheel for Python 3.12" in r
               for r in sel.reasons)


def test_cpu_targets_and_cpu_builds_are_not_held_to_the_rule() -> None:
    laptop = pick("", python="3.12", glibc="2.35")
    assert laptop.ok and laptop.backend == "cpu" and laptop.torch == M.torch[0].version
    assert not [r for r in laptop.reasons if "ptxas" in r]
    gpu_cpu = pick('cuda = "cpu"', driver="470.82.01", gpus=["T4"], python="3.12", glibc="2.35")
    assert gpu_cpu.ok and gpu_cpu.backend == "cpu" and gpu_cpu.torch == M.torch[0].version


def test_a_driver_without_listed_gpus_checks_the_plain_ptxas_and_warns_about_blackwell() -> None:
    sel = pick('torch = "==2.13.0"', driver="570.133.07", python="3.12", glibc="2.35")
    assert sel.ok and sel.torch == "2.13.0"
    assert any("compiles for its GPUs with its bundled ptxas (CUDA 12.8)" in r for r in sel.reasons)
    assert any(w.startswith("this target lists no GPUs: on GPUs of compute capability >= 10.0 triton 3.7.1 compiles "
                            "with ptxas-blackwell (CUDA 13.1), which needs driver >= 580.65.06") for w in sel.warnings)


def test_a_stable_variant_that_runs_beats_an_experimental_one() -> None:
    sel = pick('torch = "==2.8.0"', driver="580.65.06", gpus=["H100"], python="3.12", glibc="2.35")
    assert sel.ok and sel.backend == "cu128"  # stable; cu129 is experimental for 2.8 (RELEASE.md)
    assert ("cu129 also runs here but is experimental for torch 2.8.0 (RELEASE.md): the stable cu128 is preferred"
            in sel.reasons)
    bw = pick('torch = "==2.7.1"', driver="575.51.03", gpus=["RTX 5090"], python="3.12", glibc="2.35")
    assert bw.ok and bw.backend == "cu128"  # the only build with sm_120 is the experimental one
    assert any("it is experimental in RELEASE.md, and no stable one runs here" in r for r in bw.reasons)
    assert any(r.startswith("stable variants do not run here: ") and "cu126 carries code for sm_50…sm_90" in r
               for r in bw.reasons)


def test_triton_30_and_31_support_volta_and_turing_officially() -> None:
    for v in ("3.0.0", "3.1.0"):
        assert M.triton_release(v).supported_cc == "7.0"  # type: ignore[union-attr]
    old = pick('torch = "==2.5.1"', driver="550.54.15", gpus=["T4"], python="3.11", glibc="2.31")
    assert old.ok and not [w for w in old.warnings if "officially" in w]
    new = pick('torch = "==2.6.0"', driver="550.54.15", gpus=["T4"], python="3.11", glibc="2.31")
    assert new.ok and any("supports >= 8.0 officially" in w for w in new.warnings)


def test_python_lists_are_per_platform() -> None:
    rel = M.torch_release("2.5.1")
    assert rel is not None and "3.13" in rel.pythons("linux_x86_64") and "3.13" not in rel.pythons("win_amd64")
    win = pick('torch = "==2.5.1"', os="windows", driver="560.94", gpus=["8.6"], python="3.13")
    assert not win.ok and "torch 2.5.1: supports Python 3.9–3.12 on win_amd64, not 3.13" in win.conflict.message  # type: ignore[union-attr]
    # on linux_x86_64 torch 2.5.1 has cp313 wheels, but its triton 3.1.0 has none (torch's Requires-Dist carries
    # python_version < "3.13"): Triton does not work there, so only without the Triton rule
    lin = pick('torch = "==2.5.1"', driver="560.28.03", gpus=["8.6"], python="3.13", glibc="2.35")
    assert not lin.ok and "torch 2.5.1: its triton 3.1.0 publishes no wheel for Python 3.13" in lin.conflict.message  # type: ignore[union-attr]
    assert 'allow torch >= 2.6.0 (torch = ">=2.6.0" in triton-env.toml)' in lin.conflict.message  # type: ignore[union-attr]
    assert pick('torch = "==2.5.1"\ntriton = "none"', driver="560.28.03", gpus=["8.6"], python="3.13").ok


def test_pypi_torch_2150_is_the_cu132_build() -> None:
    rel = M.torch_release("2.15.0")
    assert rel is not None and rel.pypi_backend == "cu132"
    assert rel.pypi_backends["linux_x86_64"] == rel.pypi_backends["linux_aarch64"] == "cu132"
    assert rel.triton_python_below == "3.16" and "torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl#sha256=" in rel.source
    sel = pick('[indexes]\ntorch = "default"', driver="580.95.05", gpus=["9.0"], python="3.12", glibc="2.39")
    assert sel.ok and (sel.torch, sel.backend) == ("2.15.0", "cu132")


def test_python_reasons_say_where_the_python_came_from() -> None:
    asked = pick("", driver="580.95.05", gpus=["9.0"], python="3.12")
    assert "Python 3.12: target 't' asks for '3.12'" in asked.reasons
    env = parse_intent('[environment]\npython = ">=3.11"\n[[targets]]\nname = "t"\n')
    (sel,) = resolve(env, M, env.targets, "3.10")
    assert any(r.startswith("Python 3.15: the newest that torch 2.15.0 supports within '>=3.11' ([environment].python "
                            "is '>=3.11')") for r in sel.reasons)
    bare = parse_intent('[[targets]]\nname = "t"\n')
    (sel,) = resolve(bare, M, bare.targets, "3.11")
    assert "Python 3.11: the interpreter tritonlock runs on (no python in triton-env.toml)" in sel.reasons
    host = dataclasses.replace(bare.targets[0], python="3.11", origin="host")
    (sel,) = resolve(bare, M, (host,), "3.11")
    assert any(r.startswith("Python 3.11: the interpreter tritonlock runs on (set python") for r in sel.reasons)
    assert not [r for r in sel.reasons if "as asked" in r]


def test_cpu_reason_says_what_was_asked() -> None:
    asked = pick('cuda = "cpu"', python="3.12")
    assert "cpu: cuda = 'cpu' asked for" in asked.reasons
    nodriver = pick("", python="3.12")
    assert "cpu: no NVIDIA driver on this target" in nodriver.reasons


CPU_FIX = ('fix: for a CPU-only torch take it from PyTorch\'s cpu index (remove [indexes] torch = "default"; where only '
           "your default index is reachable, name a mirror of PyTorch's index there: [indexes] torch = "
           '"https://<your mirror>/whl/{backend}"), or set cuda = "auto" to lock the build the default index ships')


def test_cuda_cpu_from_the_default_index() -> None:
    """cuda = "cpu" never locks a CUDA build: where the default index ships only CUDA builds (Linux), nothing fits,
    and the conflict says so with both ways out; where its one build is the CPU one (macOS), that is locked."""
    laptop = pick('cuda = "cpu"\n[indexes]\ntorch = "default"', python="3.12", glibc="2.35")
    assert not laptop.ok and laptop.conflict is not None and laptop.backend is None
    assert (f"torch {M.torch[0].version}: the default index ships only the {M.torch[0].pypi_backend} build of it for "
            "linux_x86_64, no CPU-only build") in laptop.conflict.message
    assert CPU_FIX in laptop.conflict.message
    mac = pick('cuda = "cpu"\n[indexes]\ntorch = "default"', os="macos", arch="arm64", python="3.12")
    assert mac.ok and mac.backend == "cpu" and not mac.warnings[:0]
    gpu = pick('cuda = "cpu"\n[indexes]\ntorch = "default"', driver="570.133.07", gpus=["8.9"], python="3.12")
    assert not gpu.ok and gpu.conflict is not None
    assert "no CPU-only build" in gpu.conflict.message
    assert CPU_FIX in gpu.conflict.message
    assert 'set cuda = "cpu"' not in gpu.conflict.message
