"""Words the resolvers share: releases blocked for one reason, said once."""

from __future__ import annotations


def grouped(skipped: list[tuple[str, str]]) -> list[str]:
    """'torch 2.13.0–2.15.0: why' for consecutive releases blocked for the same reason."""
    out: list[str] = []
    i = 0
    while i < len(skipped):
        j = i
        while j + 1 < len(skipped) and skipped[j + 1][1] == skipped[i][1]:
            j += 1
        span = skipped[i][0] if i == j else f"{skipped[j][0]}–{skipped[i][0]}"
        out.append(f"torch {span}: {skipped[i][1]}")
        i = j + 1
    return out
