"""GPU architectures: compute capabilities, SM/PTX targets, and whether code built for some runs on a GPU (CUDA's
binary compatibility) — shared ground for the decision, verify and doctor."""

from __future__ import annotations


def cc_tuple(cc: str) -> tuple[int, int]:
    """"8.6" -> (8, 6)."""
    major, _, minor = cc.partition(".")
    return int(major), int(minor or 0)


def arch_tuple(arch: str) -> tuple[int, int, bool] | None:
    """'sm_86' -> (8, 6, False); 'sm_90a' -> (9, 0, True); 'compute_120' -> (12, 0, False)."""
    digits = arch.split("_", 1)[-1]
    special = digits.endswith(("a", "f"))
    digits = digits.rstrip("af")
    if not digits.isdigit() or len(digits) < 2:
        return None
    return int(digits[:-1]), int(digits[-1]), special


def gpu_runs(cc: str, archs: tuple[str, ...], ptx: tuple[str, ...]) -> str | None:
    """How a build runs on a GPU: 'sass' (exact or same-major older minor), 'ptx' (JIT), or None."""
    major, minor = cc_tuple(cc)
    # CUDA binary compatibility: SASS for X.y runs on X.z with z >= y, never across majors; the
    # arch-specific "a"/"f" targets (sm_90a) run only on exactly that GPU.
    for a in archs:
        n = arch_tuple(a)
        if n and ((n[0] == major and n[1] <= minor and not n[2]) or (n[2] and (n[0], n[1]) == (major, minor))):
            return "sass"
    # PTX is JIT-compiled by the driver for any GPU at or above its virtual arch.
    for a in ptx:
        n = arch_tuple(a)
        if n and (n[0], n[1]) <= (major, minor):
            return "ptx"
    return None
