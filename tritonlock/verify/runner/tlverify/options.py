# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""The runner's options: its command line (or tritonlock's --json-args), and what the lock expects, sent on stdin while
torch imports (--late-args)."""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

import argparse
import json
import sys
import threading
import traceback

from .common import FAULT_TARGETS, parse_fault


def parse_options(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="tritonlock verify runner (prints one JSON document)")
    p.add_argument("--json-args", help="all options as one JSON object (what tritonlock passes)")
    p.add_argument("--json", action="store_true", help="accepted for readability; output is always JSON")
    p.add_argument("--backend", help="expected torch backend: cu130, cu126, cpu, rocm6.4 ...")
    p.add_argument("--triton", help="expected triton version (the lock's pin)")
    p.add_argument("--expect-gpu", choices=("yes", "no", "auto"), default="auto")
    p.add_argument("--driver", help="the host's NVIDIA driver version, when the caller knows it")
    p.add_argument("--ptxas-floors", type=json.loads, default=None,
                   help='least driver that loads code from a ptxas of each CUDA major, as JSON: {"12": "525.60.13"}')
    p.add_argument("--interpret", choices=("yes", "no", "auto"), default="auto")
    p.add_argument("--quick", action="store_true", help="correctness only, small sizes, no timing, no torch.compile")
    p.add_argument("--profile", help="write a torch.profiler chrome trace of the kernels here")
    p.add_argument("--cold", action="store_true", help="compile into fresh, empty Triton and Inductor caches")
    p.add_argument("--no-reuse", action="store_true",
                   help="run the torch.compile check even when it passed in this same environment before")
    p.add_argument("--progress-fd", type=int, default=None,
                   help="write progress events (one JSON line each) to this file descriptor, as they happen")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the checks' random inputs (the report names the one it used): repeats a run's inputs")
    p.add_argument("--allreduce-cpu", type=int, default=0, help=argparse.SUPPRESS)  # test hook: gloo over N CPU processes
    p.add_argument("--allreduce-fault", choices=("setup", "crash", "sum"), default=None,
                   help=argparse.SUPPRESS)  # test hook: the last rank's set-up raises, it dies, or its sum is wrong
    p.add_argument("--compile-check-only", action="store_true", help=argparse.SUPPRESS)  # the torch.compile process
    p.add_argument("--compile-worker", action="store_true", help=argparse.SUPPRESS)  # see precompile.py
    p.add_argument("--import-job", help=argparse.SUPPRESS)  # one distribution's imports (imports.py)
    p.add_argument("--import-server", action="store_true", help=argparse.SUPPRESS)  # all of them (imports.py)
    p.add_argument("--eager-torch", action="store_true", help=argparse.SUPPRESS)  # (the server's: torch at once)
    p.add_argument("--imports", type=json.loads, default=[],
                   help='the packages the user named, imported even without native code, as JSON: ["vllm"]')
    p.add_argument("--import-scope", type=json.loads, default=None,
                   help='the lock\'s package names, as JSON: a preinstalled distribution outside them is not imported')
    p.add_argument("--no-imports", action="store_true", help="do not import the packages with native code")
    p.add_argument("--gated", action="store_true", help=argparse.SUPPRESS)  # the torch.compile process: see CompileCheck
    p.add_argument("--late-args", action="store_true",
                   help="read backend, triton, expect_gpu, driver, ptxas_floors, imports and import_scope as one JSON "
                        "line on stdin, while torch imports (what tritonlock does: it starts the runner before it "
                        "reads the lock)")
    p.add_argument("--inject-fault", metavar="KERNEL[:wrong|:raise|:one]",
                   help=f"test hook: KERNEL ({', '.join(FAULT_TARGETS)} or all) skips its last block, with "
                        ":wrong computes a finite but wrong answer, with :one leaves one output wrong by one term")
    ns = p.parse_args(argv)
    tri = {"yes": True, "no": False, "auto": None}
    ns.expect_gpu = tri[ns.expect_gpu]
    ns.interpret = tri[ns.interpret]
    if ns.json_args:
        for key, value in json.loads(ns.json_args).items():
            if not hasattr(ns, key):
                p.error(f"--json-args: unknown option {key!r}")
            setattr(ns, key, value)
    try:
        parse_fault(ns.inject_fault)
    except ValueError:
        p.error(f"--inject-fault: unknown kernel {ns.inject_fault!r}")
    ns.late_ready = threading.Event()
    if not ns.late_args:
        ns.late_ready.set()
    return ns


LATE = ("backend", "triton", "expect_gpu", "driver", "ptxas_floors", "imports", "import_scope")


def read_late_args(opts: argparse.Namespace) -> None:
    """--late-args: one JSON line on stdin, read in a thread while torch imports; EOF or a bad line leaves the
    defaults (nothing expected)."""
    def run() -> None:
        try:
            line = sys.stdin.readline()
            doc = json.loads(line) if line.strip() else {}
            for key in LATE:
                if isinstance(doc, dict) and key in doc:
                    setattr(opts, key, doc[key])
        except (OSError, ValueError):
            traceback.print_exc()
        finally:
            opts.late_ready.set()

    threading.Thread(target=run, name="late-args", daemon=True).start()


def late(opts: argparse.Namespace) -> argparse.Namespace:
    """opts once what the lock expects has arrived (at once without --late-args)."""
    opts.late_ready.wait(600)
    return opts
