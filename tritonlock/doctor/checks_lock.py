"""doctor's checks against the project's lock: unreadable, stale, no target for this host, driver floor, drift."""

from __future__ import annotations

from packaging.utils import canonicalize_name

from tritonlock.doctor.context import Context, Finding, older, sync_fix
from tritonlock.models import LockedTarget


def check_lock(c: Context) -> list[Finding]:
    lk = c.lock
    if lk is None:
        return [Finding(id="no-lock", severity="info", title="no triton-env.lock in the project: the venv was not "
                        "compared with a lock", fix="`tritonlock resolve` writes one")]
    if lk.error:
        return [Finding(id="lock-unreadable", severity="error", title=lk.error.split("\n")[0],
                        evidence=tuple(lk.error.split("\n")[1:]), fix="`tritonlock resolve`")]
    out = []
    if lk.stale:
        out.append(Finding(id="lock-stale", severity="warning", title=f"{lk.path} is stale: {lk.stale}",
                           fix="`tritonlock resolve`, then `tritonlock sync`"))
    if lk.target is None:
        lines = [x.strip().removeprefix("- ") for x in (lk.target_error or "").split("\n")]
        out.append(Finding(id="lock-no-target", severity="warning", title=lines[0].rstrip(":"),
                           evidence=tuple(x for x in lines[1:] if x and not x.startswith("fix:")),
                           fix="add a target for this machine to triton-env.toml (`tritonlock host --save host.toml`)"
                               " and run `tritonlock resolve`"))
        return out
    sel, h = lk.target.selection, c.host
    if sel.driver_floor and h.driver and older(h.driver, sel.driver_floor):
        out.append(Finding(id="driver-below-lock-floor", severity="error",
                           title=f"the lock's target {lk.target.name!r} ({sel.backend}) needs driver >= "
                                 f"{sel.driver_floor}; this host has {h.driver}",
                           evidence=(f"{lk.path}: target {lk.target.name}: driver-floor = {sel.driver_floor}",
                                     f"nvidia-smi/NVML: {c.driver_line()}"),
                           fix="update the NVIDIA driver, or lock for this machine: `tritonlock host --save host.toml`,"
                               " add it to triton-env.toml, `tritonlock resolve`"))
    if c.venv is not None:
        out += _drift(c, lk.target)
    return out


def _drift(c: Context, t: LockedTarget) -> list[Finding]:
    """The venv against the lock, judged by sync's own plan (so doctor and sync never disagree)."""
    from pathlib import Path

    from tritonlock.environment.sync import plan, venv_config

    assert c.venv
    prefix = Path(c.venv.prefix)
    # A venv built on a preinstalled stack (sync --system-site-packages) counts what it sees there.
    shared = (venv_config(prefix).get("include-system-site-packages", "false").lower() == "true"
              or any(prefix.glob("lib/python3*/site-packages/_tritonlock_base.pth")))
    own: dict[str, str] = {}
    system: dict[str, str] = {}
    for d in c.venv.dists:  # in sys.path order: the first copy of a name is the one imported
        name = canonicalize_name(d.name)
        if d.location.startswith(c.venv.prefix):
            own.setdefault(name, d.version)
        elif shared:
            system.setdefault(name, d.version)
    rel = c.matrix.torch_release(t.selection.torch) if c.matrix and t.selection.torch else None
    steps = plan(t, own, {k: v for k, v in system.items() if k not in own}, rel.pypi_backend if rel else None).steps
    ev: list[str] = []
    extras: list[str] = []
    for st in steps:
        if st.action == "install":
            ev.append(f"missing: {st.name} {st.want}" + (f" ({st.note})" if st.note else ""))
        elif st.action == "upgrade":
            ev.append(f"{st.name}: {st.have} installed, {st.want} locked")
        elif st.action == "remove" and st.name not in ("setuptools", "wheel"):
            extras.append(f"{st.name} {st.have}")
    if not ev and not extras:
        return []
    lock_path = c.lock.path if c.lock else "the lock"
    if not c.venv.managed:
        # An environment tritonlock did not make (`--python` at a system or image interpreter): it holds what its
        # owner installed, so differences are worth knowing, not errors, and its extras are only counted.
        if extras:
            ev.append(f"and {len(extras)} installed package(s) the lock does not list")
        return [Finding(id="venv-drift", severity="warning" if ev[:-1] or not extras else "info",
                        title=f"{c.where} (not made by `tritonlock sync`) differs from {lock_path} (target {t.name!r})",
                        evidence=tuple(ev),
                        fix="`tritonlock sync` builds a venv that matches the lock (with --system-site-packages it "
                            "reuses this interpreter's packages where they match)")]
    ev += [f"not in the lock: {x}" for x in extras]
    errors = any(not e.startswith("not in the lock") for e in ev)
    return [Finding(id="venv-drift", severity="error" if errors else "warning",
                    title=f"{c.where} differs from {lock_path} (target {t.name!r})",
                    evidence=tuple(ev), fix=sync_fix(c))]
