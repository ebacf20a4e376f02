"""The words sync says of the venv it made: the plan's source builds, the state it left ("now matches … 3 installed,
1 removed"), and its --json — returned for the CLI to print."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tritonlock.environment.sync import SyncOutcome


def plan_build_lines(out: SyncOutcome) -> list[str]:
    """With --dry-run: the source builds and package notes of what the plan would install."""
    from tritonlock.lock.report import build_lines

    todo = {s.name for s in out.plan.steps if s.action in ("install", "upgrade", "reinstall")}
    return build_lines(out.target, todo)


def state_line(out: SyncOutcome) -> str:
    """What state sync left the venv in, as checked: already matching, or what it changed to match."""
    if not out.applied:
        return f"{out.venv} already matches target {out.target.name} ({len(out.plan.steps)} packages)"
    from tritonlock.environment._plan import is_downgrade

    down = sum(1 for s in out.plan.of("upgrade") if is_downgrade(s))
    asked = sum(1 for st in out.plan.of("reinstall") if st.note == "--reinstall")  # (sync --reinstall)
    counts = ((len(out.plan.of("install")), "installed"), (len(out.plan.of("upgrade")) - down, "upgraded"),
              (down, "downgraded"), (len(out.plan.of("reinstall")) - asked, "repaired"), (asked, "reinstalled"),
              (len(out.plan.of("remove")), "removed"), (out.strays_removed, "stray file(s) removed"))
    done = [f"{n} {w}" for n, w in counts if n]
    return (f"{out.venv} now matches target {out.target.name}" + (" (rebuilt)" if out.rebuilt else "")
            + f": {', '.join(done) or 'nothing to change'}")


def first_use_lines(out: SyncOutcome) -> list[str]:
    """A locked package that compiles its CUDA kernels when first called (compat/packages.toml
    [[kernels-at-first-use]]) without the packages that carry them prebuilt, on a machine with no nvcc where it
    would look (CUDA_HOME, PATH, /usr/local/cuda): its first call fails here — said, the venv is as locked."""
    if not (out.target.selection.backend or "").startswith("cu"):  # (no CUDA kernel to build: nothing imported)
        return []
    from tritonlock.compat.firstuse import found
    from tritonlock.lock.builds import find_nvcc

    fs = [f for f in found(out.target.packages, (), out.target.selection.backend) if f.missing]
    if not fs or find_nvcc() is not None:
        return []
    backend = out.target.selection.backend
    return [f"warning: {f.package} {f.version} compiles its CUDA kernels when first called, with nvcc, and this "
            f"machine has none (not in $CUDA_HOME, on PATH or in /usr/local/cuda): its kernels fail here at first "
            f"use — install a CUDA toolkit of the locked torch's CUDA ({backend}) and set CUDA_HOME to it, or add "
            f"{' and '.join(f.missing)} (its prebuilt kernels) to [environment].packages and run `tritonlock "
            "resolve`, then `tritonlock sync`" for f in fs]


def sync_json(out: SyncOutcome, verify: dict[str, Any] | None) -> dict[str, Any]:
    """`sync --json`: the target, the venv, what was done, each step of the plan, and verify's report."""
    from tritonlock.lock.report import package_build_json

    return {"target": out.target.name, "venv": str(out.venv), "applied": out.applied, "rebuilt": out.rebuilt,
            "plan": [{"name": s.name, "action": s.action, "have": s.have, "want": s.want, "note": s.note,
                      **package_build_json(next((p for p in out.target.packages if p.name == s.name
                                                 and s.action in ("install", "upgrade", "reinstall")), None),
                                         out.target.selection.backend)}
                     for s in out.plan.steps],
            "warnings": [line.removeprefix("warning: ") for line in first_use_lines(out)],
            "verify": verify}
