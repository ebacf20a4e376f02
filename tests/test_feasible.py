"""feasible(): every torch release that fits a target, newest first, each as resolve_one picks it when pinned."""

from __future__ import annotations

import dataclasses
import json

from packaging.version import Version

from tritonlock.intent.read import parse_intent
from tritonlock.compat.matrix import load_matrix
from tritonlock.models import Intent, TargetSpec
from tritonlock.decide.resolve import feasible, resolve_one

M = load_matrix()


def intent_and_target(env: str = "", **target: object) -> tuple[Intent, TargetSpec]:
    target.setdefault("name", "t")
    body = "\n".join(f"{k} = {json.dumps(v)}" for k, v in target.items())
    it = parse_intent(f"[environment]\n{env}\n[[targets]]\n{body}\n")
    return it, it.targets[0]


def test_h200_on_r580_gets_every_release_newest_first_and_the_first_is_resolves_pick() -> None:
    it, t = intent_and_target(driver="580.95.05", gpus=["9.0"], glibc="2.39", python="3.12")
    sels = feasible(it, M, t, "3.12")
    versions = [s.torch for s in sels]
    assert all(s.ok for s in sels) and len(sels) > 5
    assert versions == sorted(versions, key=lambda v: Version(v or "0"), reverse=True)
    best = resolve_one(it, M, t, "3.12")
    assert (sels[0].torch, sels[0].backend, sels[0].triton, sels[0].index) == \
        (best.torch, best.backend, best.triton, best.index)


def test_each_selection_is_what_the_intent_pinned_to_that_release_gets() -> None:
    it, t = intent_and_target(driver="535.104.05", gpus=["8.0"], glibc="2.31", python="3.10")
    sels = feasible(it, M, t, "3.10")
    assert sels
    for s in sels:
        pinned = resolve_one(dataclasses.replace(it, torch=f"=={s.torch}"), M, t, "3.10", advise=False)
        assert (s.torch, s.backend, s.index, s.triton_package, s.triton, s.reasons, s.warnings) == \
            (pinned.torch, pinned.backend, pinned.index, pinned.triton_package, pinned.triton, pinned.reasons,
             pinned.warnings)
    # releases this driver cannot run (or whose Triton it cannot load) are left out, not returned as conflicts
    every = [r.version for r in M.torch]
    missing = [v for v in every if v not in {s.torch for s in sels}]
    assert missing and all(not resolve_one(dataclasses.replace(it, torch=f"=={v}"), M, t, "3.10", advise=False).ok
                           for v in missing)


def test_the_intents_torch_cuda_and_triton_constraints_hold() -> None:
    it, t = intent_and_target('torch = ">=2.6,<2.10"\ncuda = "cu126"', driver="580.95.05", gpus=["9.0"],
                              glibc="2.39", python="3.12")
    sels = feasible(it, M, t, "3.12")
    assert sels and all(Version("2.6") <= Version(s.torch or "0") < Version("2.10") for s in sels)
    assert {s.backend for s in sels} == {"cu126"}
    none = feasible(dataclasses.replace(it, triton="none"), M, t, "3.12")
    assert none and all(s.triton is None for s in none)


def test_a_target_nothing_fits_gives_nothing() -> None:
    it, t = intent_and_target(os="linux", arch="aarch64", driver="540.4.0", gpus=["8.7"], python="3.10")
    assert not resolve_one(it, M, t, "3.10").ok
    assert feasible(it, M, t, "3.10") == ()


def test_machines_alike_are_decided_once_and_named_each_as_their_own() -> None:
    """A fleet's many machines of one kind get exactly what deciding each alone gives, their own name in the words
    (the Python of the saved machine 'b'), conflicts included."""
    from tritonlock.decide.resolve import _FEASIBLE, resolve

    a = TargetSpec(name="node-a", os="linux", arch="x86_64", glibc="2.39", python="3.12", driver="580.159.04",
                   gpus=("9.0",), origin="file:hosts/node-a.toml")
    b = dataclasses.replace(a, name="node-b", origin="file:hosts/node-b.toml")
    old = dataclasses.replace(a, name="kepler", driver="470.82.01", gpus=("3.5",), origin="intent")
    old2 = dataclasses.replace(old, name="kepler-2")
    intent = dataclasses.replace(intent_and_target(glibc="2.39")[0], targets=(a, b, old, old2))
    together = resolve(intent, M, intent.targets, "3.12")
    alone = tuple(resolve_one(intent, M, t, "3.12") for t in intent.targets)
    assert together == alone
    assert "Python 3.12: the Python of the saved machine 'node-b'" in together[1].reasons
    assert not together[3].ok and together[3].conflict is not None and together[3].conflict.target == "kepler-2"
    assert "nothing fits target 'kepler-2'" in together[3].conflict.message
    _FEASIBLE.clear()
    first = feasible(intent, M, a, "3.12")
    assert feasible(intent, M, b, "3.12") == tuple(dataclasses.replace(s, target=b, reasons=tuple(
        r.replace("'node-a'", "'node-b'") for r in s.reasons)) for s in first)
    assert len(_FEASIBLE) == 1  # one machine kind, one decision
