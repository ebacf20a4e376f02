# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""The runner's report: one JSON document on stdout (schema 1; fields are only ever added)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import threading
import time
from typing import Any, Iterator

SCHEMA = 1


class Report:
    """What the runner found; serialised to the one JSON document on stdout. Safe to fill from several threads."""

    def __init__(self) -> None:
        self.mode = "gpu"
        self.python = f"{sys.version.split()[0]} ({sys.executable})"
        self.torch: str | None = None
        self.triton: str | None = None
        self.checks: list[dict[str, Any]] = []
        self.kernels: list[dict[str, Any]] = []
        self.jit_seconds: float | None = None
        self.compile_seconds: float | None = None  # wall time of the parallel compile step
        self.gpus: list[str] = []
        self.notes: list[str] = []
        self.caches: dict[str, str] = {}
        self.imports: list[dict[str, Any]] = []  # per distribution with native code (imports.py)
        import sysconfig

        paths = sysconfig.get_paths()
        # where the distributions are: the environment's own, then what it sees beyond (--system-site-packages), in
        # import order
        self.site = list(dict.fromkeys([paths["purelib"], paths["platlib"]] + [
            p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)]))
        self.gpu_health: dict[str, Any] | None = None  # gpuhealth.Monitor.facts(): what NVML saw
        self.seed: int | None = None  # the checks' inputs (--seed repeats them)
        self.started = time.perf_counter()
        self.phases: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        self.progress_fd: int | None = None  # tritonlock's progress pipe (--progress-fd): one JSON line per event

    def say(self, **event: Any) -> None:
        """One progress event for tritonlock's live lines ({"phase": "import torch", "state": "start"}, ...); nothing
        without a progress pipe, and never an error (a closed pipe means nobody is watching)."""
        if self.progress_fd is None:
            return
        line = (json.dumps(event) + "\n").encode()
        with contextlib.suppress(OSError):
            os.write(self.progress_fd, line)

    @contextlib.contextmanager
    def phase(self, name: str, say: str | None = None) -> Iterator[None]:
        """Time one step; the times end up in a note, so a slow verify says where it went. `say`: the words of a live
        progress line for it (sent when it starts and when it ends)."""
        t0 = time.perf_counter()
        if say is not None:
            self.say(phase=say, state="start")
        try:
            yield
        finally:
            took = time.perf_counter() - t0
            with self._lock:
                self.phases.append((name, took))
            if say is not None:
                self.say(phase=say, state="end", seconds=round(took, 2))

    def check(self, name: str, ok: bool, detail: str, fix: str | None = None) -> bool:
        with self._lock:
            self.checks.append({"name": name, "ok": ok, "detail": detail, "fix": None if ok else fix})
        return ok

    def kernel(self, kernel: str, device: str, dtype: str, ok: bool, max_err: float | None,
               detail: str, timing: tuple[str, float, float | None] | None = None, *,
               mode: str | None = None, compile_seconds: float | None = None,
               generated: list[str] | None = None, order: tuple[int, int] = (0, 0),
               extra: dict[str, Any] | None = None) -> None:
        """One row. `mode` says how it ran (gpu, interpreter, inductor-triton, inductor-cpp, skipped);
        `order` (device index, step index) puts rows written by concurrent devices back in report order; `extra`: a
        row's own fields beside the common ones (the all-reduce's message size and GPU count)."""
        metric = value = torch_value = ratio = None
        if timing is not None:
            metric, value, torch_value = timing
            ratio = value / torch_value if torch_value else None
        row: dict[str, Any] = {
            "kernel": kernel, "device": device, "dtype": dtype, "ok": ok,
            "max_err": finite(max_err), "metric": metric, "value": finite(value),
            "torch_value": finite(torch_value), "ratio": finite(ratio), "detail": detail,
            "mode": mode or self.mode, "compile_seconds": finite(compile_seconds),
        }
        if generated is not None:
            row["generated"] = list(generated)
        for key, v in (extra or {}).items():
            row.setdefault(key, v)
        with self._lock:
            row["_order"] = (*order, len(self.kernels))
            self.kernels.append(row)

    def merge(self, doc: dict[str, Any], order: tuple[int, int]) -> None:
        """Take the rows and notes of a child runner's report (the torch.compile process)."""
        with self._lock:
            for c in doc.get("checks", []):
                self.checks.append(c)
            for k in doc.get("kernels", []):
                k = dict(k)
                k["_order"] = (*order, len(self.kernels))
                self.kernels.append(k)
            self.notes += [n for n in doc.get("notes", []) if not n.startswith("time: ")]

    def to_json(self) -> dict[str, Any]:
        ok = all(c["ok"] for c in self.checks) and all(k["ok"] for k in self.kernels) and all(
            i["ok"] for i in self.imports)
        notes = list(self.notes)
        if self.phases:
            notes.append("time: " + ", ".join(f"{n} {t:.2f} s" for n, t in self.phases))
        rows = [{k: v for k, v in row.items() if k != "_order"}
                for row in sorted(self.kernels, key=lambda row: row["_order"])]
        return {
            "schema": SCHEMA, "ok": ok, "mode": self.mode, "python": self.python,
            "torch": self.torch, "triton": self.triton, "checks": self.checks,
            "kernels": rows, "jit_seconds": self.jit_seconds,
            "compile_seconds": finite(self.compile_seconds), "caches": self.caches,
            "total_seconds": time.perf_counter() - self.started, "gpus": self.gpus,
            "notes": notes, **({"imports": self.imports} if self.imports else {}), "site": self.site,
            **({"seed": self.seed} if self.seed is not None else {}),
            **({"gpu_health": self.gpu_health} if self.gpu_health is not None else {}),
        }


def finite(x: float | None) -> float | None:
    # JSON has no NaN/inf; a non-finite number here always means "no meaningful value".
    return x if x is not None and math.isfinite(x) else None


def tail(text: str, limit: int = 600) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]
