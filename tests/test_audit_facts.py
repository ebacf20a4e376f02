"""Issue 14's facts and advice, each against the row it rests on: every test here failed before its fix."""

from __future__ import annotations

import dataclasses
import json

from tritonlock.intent import parse_intent
from tritonlock.matrix import load_matrix
from tritonlock.models import Selection
from tritonlock.resolve import resolve_one
from tritonlock.why import advise, format_advice

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
