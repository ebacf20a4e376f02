"""`tritonlock doctor`: look at the host and a venv, report findings with evidence and a fix; change nothing.

Read top-down: `facts` (probe the venv, read the lock) → `context` (what a check sees and returns) → the checks by
topic (`checks_host`, `checks_install`, `checks_torch`, `checks_lock`) → `report` (run them all, format).
`_probe.py` is not imported: it is the script the venv's own interpreter runs.
"""

from __future__ import annotations

from tritonlock.doctor.context import Finding
from tritonlock.doctor.facts import Dist, DoctorError, LockFacts, TorchFacts, VenvFacts, probe, venv_python
from tritonlock.doctor.report import Report, diagnose, examine, format_report, report_json, summary

__all__ = ["Dist", "DoctorError", "Finding", "LockFacts", "Report", "TorchFacts", "VenvFacts", "diagnose", "examine",
           "format_report", "probe", "report_json", "summary", "venv_python"]
