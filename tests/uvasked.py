"""What the packages decision asks uv, recorded (tests only): the packages of each question, in the order asked."""

from __future__ import annotations

import pytest


def asked_of_uv(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The packages of every question the decision asks uv (in the order asked), recorded from now on."""
    from tritonlock.decide import packages

    asked: list[tuple[str, ...]] = []
    memo = packages.memo

    def recording(compile):  # type: ignore[no-untyped-def]
        def run(plan, default_index, **kw):  # type: ignore[no-untyped-def]
            asked.append(tuple(plan.selection.packages))
            return compile(plan, default_index, **kw)
        return memo(run)

    monkeypatch.setattr(packages, "memo", recording)
    return asked
