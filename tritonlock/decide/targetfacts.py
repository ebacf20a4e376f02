"""What the search and `why` both say of a target: the target in one line, its driver's branch, the newer drivers worth
trying, the triton its torch pins when the lock has no Triton of its own."""

from __future__ import annotations

from packaging.version import Version

from tritonlock.compat.matrix import Matrix, branch_floor
from tritonlock.decide import rules
from tritonlock.decide.rules import platform_of
from tritonlock.models import Selection, TargetSpec


def driver_branch(driver: str) -> str:
    """'580.65.06' -> 'the R580 branch' (NVIDIA names driver branches by their first number)."""
    return f"the R{driver.split('.')[0]} branch"


def driver_candidates(matrix: Matrix, target: TargetSpec) -> list[str]:
    """Drivers newer than the target's worth trying, least first: every floor the matrix knows (toolkit release
    drivers, minor-version floors) for its OS — numbered by branch on a Jetson ("580.00"), as its driver is."""
    if target.driver is None:
        return []
    tegra = any((g := matrix.gpu_family(cc)) is not None and g.integrated for cc in target.gpus) \
        or rules.driver_given_as_branch(target.driver)
    floors: set[str] = set()
    for d in [tk.linux_driver if target.os == "linux" else tk.windows_driver for tk in matrix.cuda] + \
             [mc.linux_driver if target.os == "linux" else mc.windows_driver for mc in matrix.minor_compat]:
        if d:
            floors.add(branch_floor(d) if tegra else d)
    return sorted((f for f in floors if Version(f) > Version(target.driver)), key=Version)


def _describe(t: TargetSpec, python: str) -> str:
    parts = [f"{t.os}/{t.arch}", f"Python {python}"]
    if t.glibc:
        parts.append(f"glibc {t.glibc}")
    if t.macos:
        parts.append(f"macOS {t.macos}")
    parts.append(f"driver {t.driver}" if t.driver else "no NVIDIA driver")
    if t.gpus:
        parts.append("GPUs " + ", ".join(t.gpus))
    return ", ".join(parts)


def pinned_triton(matrix: Matrix, sel: Selection) -> str | None:
    """The triton a selection's torch wheels require when the lock has no Triton of its own (triton = "none"): the
    Linux CUDA wheels pin one, so it is installed all the same (unchecked); None where nothing pins one."""
    rel = matrix.torch_release(sel.torch or "") if sel.ok else None
    if rel is None or not rel.triton or not (sel.backend or "").startswith("cu"):
        return None
    if platform_of(sel.target) not in rel.triton_platforms:
        return None
    if rel.triton_python_below and sel.python and Version(sel.python) >= Version(rel.triton_python_below):
        return None
    return rel.triton


def describe_target(target: TargetSpec, python: str) -> str:
    """"linux/x86_64, Python 3.10, glibc 2.31, driver 535.104.05, GPUs 8.0, 8.0"."""
    return _describe(target, python)
