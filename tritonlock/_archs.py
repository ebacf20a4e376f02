"""GPU architectures: compute capabilities, SM/PTX targets, and whether code built for some runs on a GPU (CUDA's
binary compatibility) — shared ground for the decision, verify and doctor."""

from __future__ import annotations


def cc_tuple(cc: str) -> tuple[int, int]:
    """"8.6" -> (8, 6)."""
    major, _, minor = cc.partition(".")
    return int(major), int(minor or 0)


def arch_tuple(arch: str) -> tuple[int, int, bool] | None:
    """'sm_86' -> (8, 6, False); 'sm_90a' -> (9, 0, True); 'compute_120' -> (12, 0, False)."""
    k = arch_kind(arch)
    return (k[0], k[1], bool(k[2])) if k else None


def arch_kind(arch: str) -> tuple[int, int, str] | None:
    """'sm_86' -> (8, 6, ''); 'sm_90a' -> (9, 0, 'a'); 'sm_100f' -> (10, 0, 'f'); 'compute_120' -> (12, 0, '')."""
    digits = arch.split("_", 1)[-1]
    suffix = digits[-1] if digits.endswith(("a", "f")) else ""
    digits = digits[:-1] if suffix else digits
    if not digits.isdigit() or len(digits) < 2:
        return None
    return int(digits[:-1]), int(digits[-1]), suffix


def gpu_runs(cc: str, archs: tuple[str, ...], ptx: tuple[str, ...]) -> str | None:
    """How a build runs on a GPU: 'sass' (exact or same-major older minor), 'ptx' (JIT), or None."""
    major, minor = cc_tuple(cc)
    # CUDA binary compatibility: SASS for X.y runs on X.z with z >= y, never across majors; the arch-specific "a"
    # targets (sm_90a) run only on exactly that GPU, the family-specific "f" ones (sm_100f) on the GPUs of its family,
    # X.z with z >= y, as plain SASS does (CUDA 12.9's family-specific features: sm_100f runs on 10.0 and 10.3).
    for a in archs:
        n = arch_kind(a)
        if n and n[0] == major and (n[1] == minor if n[2] == "a" else n[1] <= minor):
            return "sass"
    # PTX is JIT-compiled by the driver for any GPU at or above its virtual arch — arch-specific PTX (compute_90a)
    # for that GPU alone, family-specific PTX (compute_100f) within its family only.
    for a in ptx:
        n = arch_kind(a)
        if not n:
            continue
        if n[2] == "a":
            ok = (n[0], n[1]) == (major, minor)
        elif n[2] == "f":
            ok = n[0] == major and n[1] <= minor
        else:
            ok = (n[0], n[1]) <= (major, minor)
        if ok:
            return "ptx"
    return None
