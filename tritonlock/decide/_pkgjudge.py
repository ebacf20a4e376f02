"""The native-code rule as the packages search asks it: on one release beside a torch line (a lenient judge lets a
failure the package's own `try` catches pass for the packages the user does not name, and every judge notes where
it found one), and what a line's torch wheel exports of torch's C++ API where compat/torch-symbols/ ships it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tritonlock.compat.matrix import Matrix
    from tritonlock.decide._pkgfacts import Facts
    from tritonlock.models import Intent, Selection
    from tritonlock.native.rule import Item, Problem


class _Judge:
    """The rule on one release beside a line (judge.release_problems), noting in `noted` where it found a failure
    the package's own `try` catches (what a lenient second search may let pass). What the rule finds is kept in
    `found` (a dict the two searches of one decision share): the lenient judge's answer is the strict one's with the
    guarded failures of the packages not named left out (judge.counted), so the second search judges nothing twice
    (sgl-kernel's 64 releases beside a dozen lines, again: 0.4 s)."""

    def __init__(self, matrix: Matrix, intent: Intent, reach: tuple[str, ...], exports: Callable[[Selection], Any],
                 lenient: bool, noted: list[bool], found: dict[tuple[object, ...], list[Problem]]) -> None:
        from tritonlock.native import judge

        self.noted, self._found, self._lenient, self._reach = noted, found, lenient, reach
        self._counted = judge.counted
        self._of = functools.partial(judge.release_problems, matrix=matrix, policy=intent.cuda_policy,
                                     optional=intent.optional_gpu_code, imports=reach, exports=exports, lenient=False)

    def __call__(self, sel: Selection, item: Item, brought: set[str]) -> list[Problem]:
        key = (sel, item.name, item.version, item.facts, frozenset(brought))
        strict = self._found.get(key)
        if strict is None:
            strict = self._found[key] = self._of(sel, item, brought)
        found: list[Problem] = self._counted(list(strict), sel, self._reach, self._lenient)
        if any(p.guarded for p in found) and not self.noted:
            self.noted.append(True)
        return found


def judge_of(matrix: Matrix, intent: Intent, reach: tuple[str, ...], exports: Callable[[Selection], Any],
             lenient: bool = False, noted: list[bool] | None = None,
             found: dict[tuple[object, ...], list[Problem]] | None = None) -> Callable[..., list[Problem]]:
    """The rule on one release beside a line; `found`: what another judge of the same decision found (shared)."""
    return _Judge(matrix, intent, reach, exports, lenient, [] if noted is None else noted,
                  {} if found is None else found)


def line_exports(facts: Facts, python: str) -> Callable[[Selection], Any]:
    """What a CUDA line's torch wheel for the target exports of torch's C++ API, where compat/torch-symbols/ ships
    its set (by its sha256: exactly the wheel the line locks), so that a build its symbols rule out is passed over
    before uv is asked — a release at a time beside each line otherwise; None where not shipped."""
    from tritonlock.decide._pkgfacts import install_order
    from tritonlock.native import judge

    memo: dict[tuple[str | None, str | None, str | None], Any] = {}

    def exports(sel: Selection) -> Any:
        key = (sel.index, sel.torch, sel.backend)
        if key not in memo:
            memo[key] = None
            if sel.index and sel.torch and (sel.backend or "").startswith("cu"):
                files = facts.release_files(sel.index, "torch", sel.torch)
                mine = [f for f in files if f.filename.split("-")[1].partition("+")[2] == sel.backend] or [
                    f for f in files if "+" not in f.filename.split("-")[1]]
                by_name = {f.filename: f for f in mine}
                first = install_order(by_name, sel.target, python)[:1]
                f = by_name[first[0]] if first else None
                memo[key] = judge.shipped_exports(f.sha256, f.filename) if f is not None and f.sha256 else None
        return memo[key]
    return exports
