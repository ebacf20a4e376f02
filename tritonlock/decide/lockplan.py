"""What the decision hands the lock stage: one LockPlan per compile, with every fact of compat/ the lock needs (the
glibc and macOS it resolves for, which index each package is bound to, what Triton may be), so that the lock only
carries it out."""

from __future__ import annotations

from packaging.version import Version

from tritonlock.compat.matrix import Matrix
from tritonlock.decide.rules import platform_of
from tritonlock.models import LockPlan, Selection

# uv resolves `aarch64-apple-darwin` for macOS 13.0 unless MACOSX_DEPLOYMENT_TARGET says otherwise (its
# --python-platform help; checked: a macosx_14_0_arm64 wheel is skipped without it and taken with "14.0").
_UV_MACOS_DEFAULT = "13.0"


def lock_plan(sel: Selection, matrix: Matrix, torch_spec: str | None = None) -> LockPlan:
    """The complete description of one compile of `sel` (with `torch_spec`: the packages decide torch among the
    releases it admits)."""
    from tritonlock.compat.matrix_vendor import load_vendor_matrix

    vm = load_vendor_matrix()
    rocm = (sel.backend or "").startswith("rocm")
    family = matrix.torch_family - ({"triton"} if sel.backend in matrix.triton_from_default else set())
    return LockPlan(selection=sel, torch_spec=torch_spec, glibc_floor=glibc_floor(sel, matrix),
                    macos=macos_deployment_target(sel, matrix), torch_bound=frozenset(family),
                    torch_served=matrix.torch_index_packages, rocm_only=vm.rocm_only if rocm else (),
                    rocm_served=vm.rocm_served if rocm else (),
                    triton_constraints=tuple(triton_constraints(sel, matrix, torch_spec)),
                    triton_owners=vm.triton_owners)


def glibc_floor(sel: Selection, matrix: Matrix) -> str | None:
    """The glibc the chosen build needs: a ROCm / XPU build's (compat/rocm.toml, xpu.toml), else the torch
    release's for the target's platform and backend (torch.toml)."""
    release = matrix.torch_release(sel.torch or "")
    return _vendor_glibc(sel) or (release.glibc_for(platform_of(sel.target), sel.backend) if release else None)


def macos_deployment_target(sel: Selection, matrix: Matrix) -> str | None:
    """The macOS uv must resolve a macos target for: the version the target states, else the floor of the chosen
    torch's wheels (torch.toml `macos`, e.g. 2.15.0's macosx_14_0_arm64) where it is above uv's own assumption."""
    t = sel.target
    if t.os != "macos":
        return None
    if t.macos:
        return t.macos
    release = matrix.torch_release(sel.torch or "")
    floor = release.macos_floor(platform_of(t), sel.python) if release else None
    return floor if floor and Version(floor) > Version(_UV_MACOS_DEFAULT) else None


def triton_constraints(sel: Selection, matrix: Matrix, torch_spec: str | None = None) -> list[str]:
    """What a package the decision did not ask for may be, if another package pulls it in. A target whose decision
    holds no Triton (triton = "none", or a CPU build: torch's CPU wheels require none) still locks one when a package
    needs it, and where the backend's index has none (the cpu index: compat/meta.toml triton_from_default) it comes
    from the default index — never at whatever version that index serves newest (a decoy `triton 99.0`, which the
    matrix does not know): it is held to the Triton the torch release(s) pin, as a constraint (nothing is added)."""
    if sel.triton_package or (sel.backend or "") not in matrix.triton_from_default or not sel.torch:
        return []
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if torch_spec is None:
        release = matrix.torch_release(sel.torch)
        pins = [release.triton] if release is not None and release.triton else []
    else:
        try:
            spec = SpecifierSet(torch_spec)
        except InvalidSpecifier:
            return []
        pins = [r.triton for r in matrix.torch if r.triton and spec.contains(r.version, prereleases=True)]
    if not pins:
        return []
    low, high = min(pins, key=Version), max(pins, key=Version)
    return [f"triton=={low}" if low == high else f"triton>={low},<={high}"]


def _vendor_glibc(sel: Selection) -> str | None:
    """The glibc floor of a ROCm / XPU build (compat/rocm.toml, xpu.toml); None for the CUDA and CPU builds."""
    backend = sel.backend or ""
    if not backend.startswith(("rocm", "xpu")) or not sel.torch:
        return None
    from tritonlock.compat.matrix_vendor import load_vendor_matrix

    vm = load_vendor_matrix()
    if backend == "xpu":
        x = vm.xpu_build(sel.torch)
        return x.glibc if x else None
    return next((b.glibc for b in vm.rocm_builds(sel.torch) if b.backend == backend), None)
