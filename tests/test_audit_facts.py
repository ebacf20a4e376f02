"""Issue 14's facts and advice, each against the row it rests on: every test here failed before its fix."""

from __future__ import annotations

import dataclasses
import json

from tritonlock.intent.read import parse_intent
from tritonlock.compat.matrix import load_matrix
from tritonlock.models import Selection
from tritonlock.decide.resolve import resolve_one
from tritonlock.decide.why import advise, format_advice

M = load_matrix()


def target(env: str = "", **t: object) -> tuple[object, object]:
    t.setdefault("name", "t")
    body = "\n".join(f"{k} = {json.dumps(v)}" for k, v in t.items())
    it = parse_intent(f"[environment]\n{env}\n[[targets]]\n{body}\n")
    return it, it.targets[0]


def pick(env: str = "", **t: object) -> Selection:
    it, tg = target(env, **t)
    return resolve_one(it, M, tg, "3.12")  # type: ignore[arg-type]


# --- Triton's bundled ptxas must know the GPU (gpus.toml first_cuda: 12.9 for sm_103/sm_121, 13.0 for sm_110) ---

def test_b300_on_r575_with_python_39_is_not_locked_with_triton_340() -> None:
    sel = pick('python = "3.9"', driver="575.57.08", gpus=["10.3"], glibc="2.35")
    assert not sel.ok
    assert sel.conflict is not None and "does not know sm_103" in sel.conflict.message
    assert 'use Python 3.10 (python = "3.10")' in sel.conflict.message  # the way out that keeps Triton


def test_blackwell_ultra_and_gb10_pinned_to_291_and_thor_to_2110_get_no_triton_that_cannot_compile_for_them() -> None:
    for torch, t, arch in (("2.9.1", dict(driver="580.65.06", gpus=["10.3"]), "sm_103"),
                           ("2.9.1", dict(arch="aarch64", driver="580.95.05", gpus=["12.1"]), "sm_121"),
                           ("2.11.0", dict(arch="aarch64", driver="580.00", gpus=["11.0"]), "sm_110")):
        sel = pick(f'torch = "=={torch}"', python="3.12", **t)  # type: ignore[arg-type]
        assert not sel.ok, (torch, t, sel.triton)
        assert sel.conflict is not None and f"does not know {arch}" in sel.conflict.message
        assert "at the ptxas of a CUDA >= " in sel.conflict.message  # the escape hatch names the toolkit it needs
        # the ptxas that knows it (a newer torch's Triton) is taken when the intent allows it
        newer = pick("", python="3.12", **t)  # type: ignore[arg-type]
        assert newer.ok and newer.triton and newer.torch != torch


def test_why_offers_no_torch_291_with_triton_351_to_a_b300() -> None:
    it, t = target('python = "3.9"', driver="575.57.08", gpus=["10.3"], glibc="2.35")
    text = format_advice(advise(it, M, t, "3.12"), sources=False)  # type: ignore[arg-type]
    assert "3.5.1" not in text and "2.9.1" not in text, text


# --- Windows: its own build matrix, not Linux's -------------------------------------------------------------------

def test_a_windows_rtx_5090_on_r570_gets_no_cu129_pytorch_never_built_for_windows() -> None:
    sel = pick("", os="windows", driver="572.16", gpus=["RTX 5090"], python="3.12")
    assert sel.ok and sel.backend != "cu129" and (sel.torch, sel.backend) == ("2.11.0", "cu128")
    for version in ("2.9.1", "2.10.0", "2.11.0", "2.12.1", "2.13.0"):  # Linux keeps its cu129
        rel = M.torch_release(version)
        assert rel is not None and rel.variant("cu129", "win_amd64") is None and rel.variant("cu129", "linux_x86_64")
    pinned = pick('torch = "==2.13.0"', os="windows", driver="572.16", gpus=["RTX 5090"], python="3.12")
    assert not pinned.ok  # 13.x needs R580 on Windows, cu126 has no sm_120, and there is no cu129


def test_windows_cu128_kept_volta_through_210() -> None:
    for version in ("2.8.0", "2.9.1", "2.10.0"):
        sel = pick(f'torch = "=={version}"', os="windows", driver="572.16", gpus=["V100"], python="3.12")
        assert sel.ok and sel.backend == "cu128", (version, sel.conflict)
    rel = M.torch_release("2.11.0")
    assert rel is not None and not rel.variant("cu128", "win_amd64").runs_on("7.0")  # type: ignore[union-attr]


def test_triton_windows_warns_turing_and_volta_as_linux_does_and_says_what_it_costs() -> None:
    for gpu in ("V100", "T4", "RTX 2080"):
        win = pick("", os="windows", driver="572.16", gpus=[gpu], python="3.12")
        lin = pick("", driver="572.16", gpus=[gpu], python="3.12", glibc="2.35")
        assert win.ok and lin.ok
        for sel in (win, lin):
            assert any("tl.dot has no tensor-core (mma) path below 8.0" in w and "FMA" in w for w in sel.warnings), \
                (gpu, sel.warnings)
        assert any("triton-windows<3.3" in w for w in win.warnings)
    # the series for torch 2.6 still supported them: no such word there
    old = pick('torch = "<2.7"', os="windows", driver="572.16", gpus=["T4"], python="3.12")
    assert old.ok and old.torch and old.torch.startswith("2.6") and not any("triton-windows<3.3" in w for w in old.warnings)


# --- why: the smallest step, no contradictions, and what the lock really installs ---------------------------------

def test_why_offers_the_smallest_driver_step_that_resolve_itself_suggests() -> None:
    it, t = target('python = "3.12"', driver="470.82.01", gpus=["8.0"], glibc="2.31")
    now = resolve_one(it, M, t, "3.12")  # type: ignore[arg-type]
    assert not now.ok and now.conflict is not None and "upgrade the NVIDIA driver to >= 525.60.13" in now.conflict.message
    a = advise(it, M, t, "3.12")  # type: ignore[arg-type]
    steps = [(ln.torch, [(c.kind, c.need) for c in ln.changes]) for ln in a.lines]
    assert steps == [("2.15.0", [("driver", "580.65.06")]), ("2.14.1", [("driver", "525.60.13")])], steps


def test_jetson_orins_why_says_one_thing() -> None:
    it, t = target('python = "3.10"', arch="aarch64", driver="540.4.0", gpus=["Jetson AGX Orin"], glibc="2.35")
    text = format_advice(advise(it, M, t, "3.12"), sources=False)  # type: ignore[arg-type]
    assert "integrated Jetson Orin GPU" in text and "JetPack" in text
    assert "the newest torch with one is" not in text and "supports Python" not in text, text
    assert len(text.splitlines()) == 3, text  # the target, now, and one line for every torch


def test_pascals_why_says_the_lock_keeps_the_triton_torch_pins() -> None:
    it, t = target('python = "3.10"', driver="535.104.05", gpus=["GTX 1080"], glibc="2.35")
    sel = resolve_one(it, M, t, "3.12")  # type: ignore[arg-type]
    assert sel.conflict is not None and "with the triton it pins" in sel.conflict.message
    text = format_advice(advise(it, M, t, "3.12"), sources=False)  # type: ignore[arg-type]
    assert "no triton" not in text
    assert "then: torch 2.14.1 (cu126) + triton 3.8.0 (the one its wheels require, installed but not checked)" in text
    locked = resolve_one(dataclasses.replace(it, triton="none"), M, t, "3.12")  # type: ignore[arg-type]
    rel = M.torch_release(locked.torch or "")
    assert locked.ok and rel is not None and rel.triton == "3.8.0"  # the pin the lock's closure installs


def test_a_driver_given_as_a_branch_is_read_as_that_branch() -> None:
    sel = pick("", driver="535", gpus=["A100"], python="3.12", glibc="2.35")
    # the intent reads a bare branch as its first release (535.54.03, with a warning of its own): R535 is CUDA 12.2
    assert sel.ok and any("(CUDA 12.2)" in w for w in sel.warnings), sel.warnings
    assert not any("CUDA 12.1" in x for x in sel.warnings + sel.reasons)
    full = pick("", driver="535.54.03", gpus=["A100"], python="3.12", glibc="2.35")
    assert (full.torch, full.backend, full.triton) == (sel.torch, sel.backend, sel.triton)
