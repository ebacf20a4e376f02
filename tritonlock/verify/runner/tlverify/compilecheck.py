# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""The torch.compile check of a full run: its process (Inductor's imports and compiles beside the kernels' checks,
its GPU work held until their timings are done), the key that lets a warm run reuse its passing row (memo.py), and
the process's own main."""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import traceback
from typing import Any

from . import envchecks, memo
from .options import LATE
from .report import Report

RUNNER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPILE_CHECK_ORDER = 1 << 19  # the torch.compile row comes after its device's kernel rows


def start_compile_check(opts: argparse.Namespace) -> subprocess.Popen[str] | None:
    # what the lock expects stays with this process (its own checks say it); the child proves torch.compile works
    args = {k: v for k, v in vars(opts).items()
            if k not in ("json_args", "json", "late_args", "late_ready", "progress_fd", *LATE) and v is not None}
    args.update(compile_check_only=True, allreduce_cpu=0, allreduce_fault=None, profile=None, cold=False,
                no_reuse=False, gated=True)
    # in-process compiles: a pool of compile workers costs more to start than one small graph takes
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1")
    try:
        return subprocess.Popen([sys.executable, "-I", RUNNER_DIR, "--json-args", json.dumps(args)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    except OSError:
        traceback.print_exc()
        return None


def finish_compile_check(r: Report, proc: subprocess.Popen[str] | None, label: str,
                         timeout: float = 600) -> list[dict[str, Any]]:
    """Merge the process's rows into the report; returns them (none when it failed to report)."""
    if proc is None:
        r.kernel("torch_compile", label, "fp32", False, None, "could not start the torch.compile check's process",
                 order=(0, COMPILE_CHECK_ORDER))
        return []
    try:
        out, _ = proc.communicate(timeout=timeout)
        doc = json.loads(out)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        r.kernel("torch_compile", label, "fp32", False, None, f"torch.compile did not finish within {timeout:g} s",
                 order=(0, COMPILE_CHECK_ORDER))
        return []
    except ValueError:
        r.kernel("torch_compile", label, "fp32", False, None,
                 f"the torch.compile check's process exited with code {proc.returncode} without a report "
                 "(its error is on stderr)", order=(0, COMPILE_CHECK_ORDER))
        return []
    doc["checks"] = [c for c in doc.get("checks", []) if not c.get("ok")]  # its import checks repeat ours
    r.merge(doc, order=(0, COMPILE_CHECK_ORDER))
    return list(doc.get("kernels", [])) if not doc["checks"] else []


KEY_SCAN = ("import argparse, sys; sys.path.insert(0, sys.argv[1]); from tlverify import memo; "
            "print(memo.compile_check_key(argparse.Namespace(interpret={interpret!r})))")


def start_key_scan(opts: argparse.Namespace) -> subprocess.Popen[str] | None:
    """memo.compile_check_key in a process of its own (this interpreter, this environment's variables): its scan of the
    installed distributions holds a GIL for a few tenths of a second, which is not this process's then."""
    try:
        return subprocess.Popen([sys.executable, "-I", "-c", KEY_SCAN.format(interpret=opts.interpret), RUNNER_DIR],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    except OSError:
        return None


def finish_key_scan(proc: subprocess.Popen[str] | None, opts: argparse.Namespace) -> str:
    """The key the process computed; computed here where it could not (the same function: the same key)."""
    if proc is not None:
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        else:
            key = out.strip()
            if proc.returncode == 0 and len(key) == 64 and all(c in "0123456789abcdef" for c in key):
                return key
    return memo.compile_check_key(opts)


class CompileCheck:
    """The torch.compile check of a full run: its own process, started once this process has imported torch, so that
    Inductor's imports and compiles overlap the kernels' checks but not torch's import; or, in a warm run whose
    environment memo.py finds unchanged since the check last passed, that passing row, said to be reused.

    `start` (after torch's import) begins the environment's key — a scan of the installed distributions — in a process
    of its own, so that it runs beside triton's import rather than before it; `resolve` (once triton is imported)
    reads the key and either takes the passing row or starts the check's process."""

    def __init__(self, opts: argparse.Namespace, memo_dir: str | None) -> None:
        self.opts, self.memo_dir = opts, memo_dir
        self.released = False
        self.devices: list[str] | None = None
        self.key: str | None = None
        self.reused: dict[str, Any] | None = None
        self.proc: subprocess.Popen[str] | None = None
        self.scan: subprocess.Popen[str] | None = None
        self.started = self.resolved = False

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        if self.memo_dir:
            self.scan = start_key_scan(self.opts)

    def resolve(self) -> None:
        if self.resolved:
            return
        self.start()
        self.resolved = True
        opts, memo_dir = self.opts, self.memo_dir
        self.key = finish_key_scan(self.scan, opts) if memo_dir else None
        self.scan = None
        self.reused = memo.load_compile_check(memo_dir, self.key) if self.key and not opts.no_reuse else None
        if self.reused is not None and self.devices is not None and self.reused.get("devices") != self.devices:
            self.reused = None  # a reused row must have passed on the same GPUs
        self.proc = None if self.reused else start_compile_check(opts)
        if self.devices == []:
            self.release()  # no GPU timing to keep clear of

    def devices_seen(self, devices: list[str]) -> None:
        """The GPUs CUDA shows (names and capabilities): a reused row must have passed on the same ones."""
        self.devices = devices
        if not self.resolved:
            return  # resolve() compares them
        if self.reused is not None and self.reused.get("devices") != devices:
            self.reused = None
            self.released = False
            self.proc = start_compile_check(self.opts)
        if not devices:
            self.release()  # no GPU timing to keep clear of

    def release(self) -> None:
        """Let the torch.compile process use the GPU: it imports and prepares beside everything else, but runs its
        graph (Inductor compiles, autotunes and launches kernels there) only once the timings are done, so that
        none of its GPU work lands inside them."""
        proc = self.proc
        if proc is not None and proc.stdin is not None and not self.released:
            self.released = True
            with contextlib.suppress(OSError, ValueError):  # a process that is gone is reported by finish()
                proc.stdin.write("go\n")
                proc.stdin.flush()  # kept open: communicate() closes it

    def finish(self, r: Report, label: str) -> None:
        self.resolve()
        self.release()
        if self.reused is not None:
            row = dict(self.reused["row"])
            row["detail"] = (f"not compiled again: torch.compile passed on {self.reused.get('when')} in this same "
                             "environment (installed packages, interpreter, driver, GPUs, variables and tritonlock's "
                             "checks unchanged); `tritonlock verify --no-reuse` runs it again. That run: "
                             + str(row.get("detail", "")))
            row["reused"] = self.reused.get("when")
            row["compile_seconds"] = None
            r.merge({"kernels": [row]}, order=(0, COMPILE_CHECK_ORDER))
            return
        rows = finish_compile_check(r, self.proc, label)
        self.proc = None
        if self.key is None:
            return
        if len(rows) == 1 and rows[0].get("ok"):
            memo.save_compile_check(self.memo_dir, self.key, rows[0], self.devices or [])
        else:
            memo.forget_compile_check(self.memo_dir)

    def abandon(self) -> None:
        if self.scan is not None and self.scan.poll() is None:
            self.scan.kill()
            self.scan.communicate()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def compile_check_main(opts: argparse.Namespace, r: Report) -> None:
    """The torch.compile process: Inductor on the first GPU, or its CPU backend."""
    from . import inductor

    torch = envchecks.import_torch(r)
    if torch is None:
        return
    r.checks.clear()
    gpu = opts.interpret is not True and bool(torch.cuda.is_available())
    r.mode = "gpu" if gpu else "interpreter"

    def gate() -> None:
        if opts.gated:
            sys.stdin.readline()  # the parent's "go" (or its end: EOF) — see CompileCheck.release

    inductor.run(r, torch, "cuda:0" if gpu else "cpu", "cuda:0" if gpu else "cpu", gate=gate)
