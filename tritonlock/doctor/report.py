"""doctor's report: run every check over the facts, in order, and format the findings (text or JSON)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tritonlock.doctor import checks_amd, checks_host, checks_install, checks_lock, checks_native, checks_torch
from tritonlock.doctor.context import Context, Finding
from tritonlock.errors import TritonlockError
from tritonlock.doctor.facts import (DoctorError, LockFacts, VenvFacts, load_matrix_or_error, lock_facts, probe,
                                     probe_ptxas, toolkit_ptxas, venv_python)
from tritonlock.models import HostProfile

if TYPE_CHECKING:
    from tritonlock.compat.matrix import Matrix

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True, kw_only=True, slots=True)
class Report:
    summary: tuple[str, ...]
    findings: tuple[Finding, ...]

    @property
    def errors(self) -> int:
        return sum(f.severity == "error" for f in self.findings)

    @property
    def exit_code(self) -> int:
        return 1 if self.errors else 0


# sync makes the venv from the lock, which resolve makes from the intent: where the project has none, init comes first
_FIRST_STEPS = "`tritonlock init` (no triton-env.toml here yet), then `tritonlock resolve` and `tritonlock sync`"


def diagnose(host: HostProfile, venv: VenvFacts | None, lock: LockFacts | None, matrix: Matrix | None, *,
             venv_path: str = ".venv", broken: str | None = None, intent: bool = True) -> tuple[Finding, ...]:
    """All findings for these facts, in check order (pure: no probing, no I/O); `intent`: whether the project has
    one (triton-env.toml, or a pyproject.toml's [tool.tritonlock]) — the fixes start from `init` where it has not."""
    where = venv.prefix if venv else os.path.dirname(os.path.dirname(venv_path)) or venv_path
    checks: tuple[Callable[[Context], list[Finding]], ...] = (
        checks_host.check_driver, checks_host.check_driver_knows_gpus, checks_host.check_toolkit,
        checks_torch.check_torch, checks_install.check_triton,
        checks_torch.check_triton_gpu, checks_torch.check_triton_ptxas, checks_torch.check_triton_interpreter,
        checks_install.check_duplicates,
        checks_install.check_conda, checks_install.check_shadowing, checks_install.check_wsl_libcuda,
        checks_install.check_glibc, checks_install.check_integrity, checks_install.check_stray,
        checks_native.check_native, checks_lock.check_lock, checks_amd.check_amd)
    c = Context(host=host, venv=venv, lock=lock, matrix=matrix, where=where)
    out: list[Finding] = []
    if venv is None and broken:
        out.append(Finding(id="venv-broken", severity="error", title=f"the venv at {where} cannot run: its Python "
                           "interpreter is gone or broken", evidence=(broken,),
                           fix=f"remove {where} and run `tritonlock sync` to recreate it" if intent or lock else
                           f"remove {where}; {_FIRST_STEPS} make a new one"))
    elif venv is None:
        out.append(Finding(id="venv-missing", severity="warning", title=f"no venv at {where}: only the host was "
                           "examined", fix=("`tritonlock sync` creates it" if intent or lock else
                                            f"{_FIRST_STEPS} create it") + "; or pass --python PATH for another one"))
    for check in checks:
        for f in check(c):
            if f.id == "no-lock" and not intent:
                f = dataclasses.replace(f, fix="`tritonlock init` first (no triton-env.toml here yet), then "
                                               "`tritonlock resolve` writes one")
            if f not in out:
                out.append(f)
    return tuple(out)


def summary(host: HostProfile, venv: VenvFacts | None, lock: LockFacts | None, interpreter: str) -> tuple[str, ...]:
    h = host
    parts = [f"{h.os}/{h.arch}"] + ([f"glibc {h.glibc}"] if h.glibc else [])
    parts.append(f"driver {h.driver} (CUDA {h.cuda_driver or '?'})" if h.driver else "no NVIDIA driver")
    parts += [f"GPU {g.index} " + (f"{g.name} ({g.cc})" if g.name else f"(compute capability {g.cc})") for g in h.gpus]
    parts += [f"{'AMD' if g.vendor == 'amd' else 'Intel'} GPU {g.index} {g.target}" for g in h.vendor_gpus]
    parts += [f"nvcc {h.nvcc}"] if h.nvcc else []
    parts += [f"in a {h.container} container"] if h.container else []
    parts += ["WSL2"] if h.wsl else []
    lines = ["host:  " + ", ".join(parts)]
    if venv is None:
        lines.append(f"venv:  none ({interpreter} does not exist)")
    else:
        t = venv.torch
        torch = ("torch: import crashed" if t is None else f"torch: {t.error.splitlines()[0][:100]}" if t.error
                 else f"torch {t.version} (" + (f"CUDA {t.cuda}, available: {'yes' if t.cuda_available else 'no'}"
                                                if t.cuda else f"ROCm {t.hip}, available: "
                                                f"{'yes' if t.cuda_available else 'no'}" if t.hip
                                                else "CPU build") + ")")
        triton = f"triton {venv.triton_version}" if venv.triton_version else "no triton"
        lines.append(f"venv:  {venv.prefix} (Python {venv.python}): {torch}, {triton}")
    if lock is None:
        lines.append("lock:  none")
    elif lock.target is not None:
        s = lock.target.selection
        lines.append(f"lock:  {lock.path}, target {lock.target.name} (torch {s.torch}, {s.backend})")
    else:
        lines.append(f"lock:  {lock.path} (no target for this host)")
    return tuple(lines)


# ---------------------------------------------------------------- running and reporting


def examine(project: Path, python: str | None = None, *, host: HostProfile | None = None,
            matrix: Matrix | None | Literal["load"] = "load") -> Report:
    """Look at the host and the venv (the project's .venv, or `python`), and the project's lock if any."""
    if host is None:
        from tritonlock import host as host_mod

        host = host_mod.detect()
    matrix_error = None
    if matrix == "load":
        matrix, matrix_error = load_matrix_or_error()
    interpreter = python or str(venv_python(project / ".venv"))
    venv, broken = None, None
    if python is not None or Path(interpreter).exists():
        try:
            venv = probe(interpreter)
            if python is None:  # the project's own .venv is the one sync manages, marker or not
                venv = dataclasses.replace(venv, managed=True)
        except DoctorError as err:
            if python is not None:
                raise  # the interpreter the user named: a bad option, not a finding
            broken = str(err)
        if venv is not None and venv.triton_version and host.gpus and host.driver:
            # the ptxas this Triton compiles with for each GPU, and the toolkits' own a TRITON_PTXAS_PATH could use
            ccs = tuple(dict.fromkeys(g.cc for g in host.gpus))
            venv = dataclasses.replace(venv, ptxas=probe_ptxas(interpreter, ccs), toolkit_ptxas=toolkit_ptxas())
    elif os.path.islink(interpreter):
        # A venv's python is a symlink to the interpreter it was made with; upgrading or removing that one
        # (pyenv, Homebrew, apt) leaves the venv dead.
        broken = f"{interpreter} points to {os.readlink(interpreter)}, which no longer exists"
    lock = lock_facts(project, host, matrix, venv.minor if venv else None)
    try:
        from tritonlock._discover import intent_file

        intent = intent_file(project).is_file()
    except TritonlockError:  # two intents at once: there is one, the lock's checks say the rest
        intent = True
    findings = diagnose(host, venv, lock, matrix, venv_path=interpreter, broken=broken, intent=intent)
    if matrix_error is not None:
        findings += (Finding(id="matrix-unavailable", severity="info",
                             title="the compatibility data (compat/) could not be loaded: checks that need it were "
                                   "skipped (Python range, Triton's minimum GPU, driver floors)",
                             evidence=(matrix_error,), fix="reinstall tritonlock (its compat/ data ships with it)"),)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    findings = tuple(sorted(findings, key=lambda f: order[f.severity]))
    return Report(summary=summary(host, venv, lock, interpreter), findings=findings)


def report_json(report: Report) -> dict[str, Any]:
    """`tritonlock doctor --json`: {summary: [str], errors: int, findings: [{id, severity, title, evidence, fix}]}."""
    return {"summary": list(report.summary), "errors": report.errors, "findings": [
        {"id": f.id, "severity": f.severity, "title": f.title, "evidence": list(f.evidence), "fix": f.fix}
        for f in report.findings]}


EVIDENCE_SHOWN = 12  # a finding's evidence lines in the text report; --json carries them all


def format_report(report: Report) -> str:
    lines = list(report.summary) + [""]
    for f in report.findings:
        lines.append(f"{f.severity.upper()} [{f.id}] {f.title}")
        shown = f.evidence if len(f.evidence) <= EVIDENCE_SHOWN + 1 else f.evidence[:EVIDENCE_SHOWN]
        lines += [f"    evidence: {e}" for e in shown]
        if len(shown) < len(f.evidence):
            lines.append(f"    evidence: … and {len(f.evidence) - len(shown)} more (`tritonlock doctor --json` lists all)")
        if f.fix:
            lines.append(f"    fix: {f.fix}")
        lines.append("")
    counts = {s: sum(f.severity == s for f in report.findings) for s in SEVERITIES}
    if report.findings:
        lines.append(", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items()))
    else:
        lines.append("no problems found")
    return "\n".join(lines)
