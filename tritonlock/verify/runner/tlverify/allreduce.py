# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""Several GPUs: an NCCL all-reduce across one spawned process per GPU (gloo over CPU processes is the test hook).

Its set-up costs seconds (a process per GPU: Python's start, `import torch`, a CUDA context, NCCL's communicator),
more than every kernel on two GPUs together, so it overlaps them: `AllReduce.start` spawns the processes as soon as
the runner has imported torch (never before: nothing may slow that import), each one imports torch, binds its GPU
and forms its communicator at once (init_process_group with device_id: NCCL's init runs then, not at the first
collective), says it is ready and waits. `finish`, once every kernel's timing is done, lets them go: the all-reduce
itself (its sum checked on every rank, then timed) never lands inside a kernel's timing.
"""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

import datetime
import json
import os
import shutil
import tempfile
import time
from typing import Any

from .report import Report, tail as _tail

ORDER = (1 << 20, 0)  # after every device's rows
MESSAGE_BYTES_GPU = 256 << 20  # 256 MiB of fp32: bandwidth rather than latency (compat/bands.toml states the size)
MESSAGE_BYTES_CPU = 1 << 18  # a token size for gloo on the CPU
GO_TIMEOUT = 1800.0  # a rank left waiting this long (its runner gone) gives up
FAULTS = ("setup", "crash", "sum")  # test hooks: a rank's set-up raises, a rank dies in its set-up, a wrong sum


def allreduce_worker(rank: int, world: int, backend: str, init: str, outdir: str, numel: int, go: Any,
                     fault: str | None = None) -> None:
    """One rank: set up (torch, the device, the process group), say ready, wait for `go`; then all-reduce rank+1
    from everyone, check the sum, time a few more rounds."""
    t0 = time.perf_counter()
    gpu = backend == "nccl"
    result: dict[str, Any] = {"rank": rank, "ok": False, "pid": os.getpid()}
    try:
        import torch
        import torch.distributed as dist

        if fault == "crash" and rank == world - 1:
            os._exit(3)  # a rank that dies in its set-up, without a word
        if fault == "setup" and rank == world - 1:
            raise RuntimeError("injected set-up failure (test hook)")
        kw: dict[str, Any] = {}
        if gpu:
            torch.cuda.set_device(rank)
            kw["device_id"] = torch.device("cuda", rank)  # NCCL's communicator formed now, not at the first call
        try:
            dist.init_process_group(backend, init_method=init, rank=rank, world_size=world,
                                    timeout=datetime.timedelta(seconds=120), **kw)
        except TypeError:  # a torch before device_id: the communicator forms at the first all-reduce
            kw.pop("device_id", None)
            dist.init_process_group(backend, init_method=init, rank=rank, world_size=world,
                                    timeout=datetime.timedelta(seconds=120))
        x = torch.empty((numel,), device=f"cuda:{rank}" if gpu else "cpu")
        result["setup_seconds"] = time.perf_counter() - t0
        _write(outdir, f"rank{rank}.ready", {"setup_seconds": result["setup_seconds"]})
        if not go.wait(GO_TIMEOUT):
            raise TimeoutError(f"the runner did not start the all-reduce within {GO_TIMEOUT:g} s")
        sync = torch.cuda.synchronize if gpu else (lambda: None)
        x.fill_(float(rank + 1) + (0.5 if fault == "sum" and rank == world - 1 else 0.0))
        dist.all_reduce(x)
        sync()
        want = world * (world + 1) / 2
        result["max_err"] = float((x - want).abs().max())
        result["ok"] = bool((x == want).all())
        for _ in range(2):
            dist.all_reduce(x)
        sync()
        dist.barrier()
        iters = 10
        t1 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        sync()
        sec = (time.perf_counter() - t1) / iters
        # bus bandwidth as nccl-tests defines it for all-reduce: algorithm bandwidth (bytes / time) x 2(n-1)/n
        result["busbw"] = numel * 4 / sec / 1e9 * 2 * (world - 1) / world
        dist.destroy_process_group()
    except Exception as e:  # noqa: BLE001 - the rank's error goes on the all-reduce's row
        result["error"] = f"{type(e).__name__}: {e}"
    _write(outdir, f"rank{rank}.json", result)


def _write(outdir: str, name: str, doc: dict[str, Any]) -> None:
    tmp = os.path.join(outdir, name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    os.replace(tmp, os.path.join(outdir, name))


def _read(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


class AllReduce:
    """The all-reduce's processes: started early (`start`), released and judged once the kernels are done
    (`finish`), killed when the run ends without it (`abandon`)."""

    def __init__(self, n: int, backend: str = "nccl", fault: str | None = None) -> None:
        self.n, self.backend, self.fault = n, backend, fault
        self.numel = (MESSAGE_BYTES_GPU if backend == "nccl" else MESSAGE_BYTES_CPU) // 4
        self.kernel = f"{backend}_all_reduce"
        self.label = f"cuda:0..{n - 1}" if backend == "nccl" else f"cpu x{n}"
        self.procs: list[Any] = []
        self.tmp: str | None = None
        self.go: Any = None
        self.start_error: str | None = None
        self.started_at: float | None = None

    def start(self, r: Report) -> None:
        """Spawn one process per rank; they set up while the kernels run. A failure here is kept for the row."""
        with r.phase(f"{'NCCL' if self.backend == 'nccl' else 'gloo'} all-reduce start"):
            self.started_at = time.perf_counter()
            try:
                import multiprocessing

                ctx = multiprocessing.get_context("spawn")
                self.tmp = tempfile.mkdtemp(prefix="tritonlock-allreduce-")
                self.go = ctx.Event()
                init = "file://" + os.path.join(self.tmp, "rendezvous")
                for rank in range(self.n):
                    p = ctx.Process(target=allreduce_worker, name=f"allreduce-{rank}", daemon=True,
                                    args=(rank, self.n, self.backend, init, self.tmp, self.numel, self.go, self.fault))
                    p.start()
                    self.procs.append(p)
            except Exception as e:  # noqa: BLE001 - reported on the all-reduce's row by finish()
                self.start_error = f"{type(e).__name__}: {e}"
                self.abandon()

    def ready(self) -> int:
        """How many ranks have finished their set-up so far."""
        return sum(1 for i in range(self.n) if self.tmp and os.path.exists(os.path.join(self.tmp, f"rank{i}.ready")))

    def finish(self, r: Report, timeout: float = 300.0) -> None:
        """Let the ranks run the all-reduce; wait for them (a rank that dies or fails stops the others); the row."""
        ready_before = self.ready()
        say = f"{'NCCL' if self.backend == 'nccl' else 'gloo'} all-reduce across {self.n} " + (
            "GPUs" if self.backend == "nccl" else "processes")
        with r.phase(f"{'NCCL' if self.backend == 'nccl' else 'gloo'} all-reduce (waited for)", say=say):
            if self.start_error is not None:
                self._fail(r, f"the all-reduce processes could not start: {_tail(self.start_error)}")
                return
            self.go.set()
            ranks = self._wait(timeout)
        self.abandon()
        bad = [x for x in ranks if not x.get("ok")]
        if bad:
            words = "; ".join(f"rank {x['rank']}: {x.get('error') or 'wrong sum (off by %g)' % x.get('max_err', 0)}"
                              for x in bad)
            self._fail(r, f"all-reduce over {self.n} processes failed: {words}")
            return
        busbw = min(float(x["busbw"]) for x in ranks)
        setup = max(float(x.get("setup_seconds") or 0.0) for x in ranks)
        mib = self.numel * 4 / 2 ** 20
        r.kernel(self.kernel, self.label, "fp32", True, max(float(x["max_err"]) for x in ranks),
                 f"{self.n} processes, {mib:g} MiB all-reduce ({self.backend}) gave the right sum on every rank; "
                 f"value is bus bandwidth (nccl-tests' busbw; no torch comparison); set-up {setup:.1f} s, "
                 f"{'overlapping the kernels' if ready_before == self.n else 'partly after the kernels'}",
                 ("GB/s", busbw, None), order=ORDER, extra={
                     "message_bytes": self.numel * 4, "gpus": self.n, "setup_seconds": round(setup, 3),
                     "setup_overlapped": ready_before == self.n})

    def _fail(self, r: Report, detail: str) -> None:
        r.kernel(self.kernel, self.label, "fp32", False, None, detail, order=ORDER,
                 extra={"message_bytes": self.numel * 4, "gpus": self.n})

    def _wait(self, timeout: float) -> list[dict[str, Any]]:
        """Every rank's result; a rank that exits without one, or reports an error, ends the wait for the others (a
        rank stuck in the rendezvous would wait for the dead one until NCCL's own time-out)."""
        deadline = time.monotonic() + timeout
        results: dict[int, dict[str, Any]] = {}
        assert self.tmp is not None
        while len(results) < self.n:
            failed = False
            for i, p in enumerate(self.procs):
                if i in results:
                    continue
                doc = _read(os.path.join(self.tmp, f"rank{i}.json"))
                if doc is not None:
                    results[i] = doc
                    # (a rank that raised ends the wait; a wrong sum is every rank's, and each finishes its run)
                    failed |= bool(doc.get("error"))
                elif not p.is_alive():
                    results[i] = {"rank": i, "ok": False, "error": f"its process exited with code {p.exitcode} "
                                  "without a result"}
                    failed = True
            if failed or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        for i in range(self.n):
            if i not in results:
                results[i] = {"rank": i, "ok": False, "error": "stopped: another rank failed" if any(
                    not x.get("ok") for x in results.values()) else f"no result within {timeout:g} s"}
        return [results[i] for i in range(self.n)]

    def abandon(self) -> None:
        """Stop whatever is left (a run that ended before the all-reduce, or ranks left waiting on a failed one)."""
        for p in self.procs:
            if p.is_alive():
                p.terminate()
        for p in self.procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join(5)
        self.procs = []
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None


def wanted(opts: Any, torch: Any) -> AllReduce | None:
    """The all-reduce this run will do, started at once: gloo over --allreduce-cpu N processes (the test hook), or
    NCCL across every visible GPU of a full GPU run. None: no all-reduce (finish() says why in a note)."""
    fault = getattr(opts, "allreduce_fault", None)
    if getattr(opts, "allreduce_cpu", 0):
        return AllReduce(int(opts.allreduce_cpu), "gloo", fault)
    if opts.quick or opts.interpret is True or not (torch.version.cuda or getattr(torch.version, "hip", None)):
        return None
    try:
        n = int(torch.cuda.device_count())
    except Exception:  # noqa: BLE001 - CUDA's own check says what is wrong
        return None
    return AllReduce(n, "nccl", fault) if n > 1 else None


def skipped(quick: bool, n: int, hook: bool = False) -> str:
    """The note of a GPU run without the NCCL all-reduce: why."""
    return "NCCL all-reduce skipped: " + ("only 1 GPU visible (it needs 2 or more)" if n < 2 else "--quick" if quick
                                          else "the --allreduce-cpu test hook ran gloo instead")
