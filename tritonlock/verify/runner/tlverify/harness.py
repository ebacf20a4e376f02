# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""The harness: caches, the order of the steps, parallel compiles, every GPU at once, and the report.

Steps, in time order:
1. where the binaries are not known to be compiled yet (a cold run), compile workers start (precompile.py: they
   import triton, not torch); NVML's first look and the driver's start (cuInit) in threads (gpuhealth.py,
   envchecks.preinit_cuda);
2. torch imports (no other process importing torch beside it, no scan in this process); then, in
   `after_torch_import`: the packages' import checks start (imports.py: their processes run beside everything
   below), and the torch.compile check's key (full runs only: memo.py's scan of the installed distributions, in a
   process of its own); the CUDA build / driver / arch checks; on a GPU, torch's first calls of the kernels the
   checks and timings use start in threads (torchside.FirstCalls: a first call loads a kernel, picks a cuBLAS
   algorithm, builds a cuDNN plan), before Triton is imported; triton imports; then the torch.compile check starts in
   a process of its own, so Inductor's imports and compiles overlap the kernels' checks — or, in a warm run whose
   environment is unchanged since the check last passed, that row is reused, and said so; Triton's ptxas;
3. every kernel binary the checks launch is compiled by the workers, or loaded from Triton's cache in threads, once
   per kind of GPU (the other GPUs load the binaries from the cache), while torch's first calls go on;
4. each GPU runs every kernel family at the same time as the others (one thread per GPU): its reference, its
   tolerance, its timing against torch;
5. the NCCL all-reduce across GPUs (its processes were spawned right after step 2's `import torch` and set up while
   the kernels ran: allreduce.py); the torch.compile process's rows are merged in.
"""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
from typing import Any, Callable

from . import envchecks, gpuhealth, memo
from .common import Ctx, Plan
from .compilecheck import COMPILE_CHECK_ORDER, CompileCheck, compile_check_main
from .options import late, parse_options, read_late_args
from .precompile import WorkerPool, precompile
from .report import Report, tail
from .torchside import FirstCalls, first_calls

INTERPRETER_NOTE = "GPU not tested: ran the kernels in the Triton interpreter on the CPU"
RUNNER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def families() -> list[Any]:
    """The kernel families in report order (imported here: they import triton, which must come after the
    TRITON_INTERPRET decision)."""
    from . import k_attention, k_fp8, k_matmul, k_softmax, k_vector_add

    return [k_vector_add, k_matmul, k_softmax, k_attention, k_fp8]


# ---------------------------------------------------------------------------------------------
# Caches


def setup_caches(r: Report, cold: bool) -> tuple[str | None, str | None]:
    """Point Triton's and Inductor's caches at folders that outlive this run: inside the venv, so they go with it
    (a recreated venv starts cold, never stale). A variable the user set wins. `cold`: fresh, empty folders, removed
    afterwards. Returns (the cold run's folder to remove, the folder for memo.py's records: None outside a venv)."""
    if cold:
        tmp = tempfile.mkdtemp(prefix="tritonlock-verify-cache-")
        os.environ["TRITON_CACHE_DIR"] = r.caches["triton"] = os.path.join(tmp, "triton")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = r.caches["inductor"] = os.path.join(tmp, "inductor")
        r.notes.append("cold: compiled into fresh, empty Triton and Inductor caches")
        return tmp, os.path.join(tmp, "memo")
    base = os.path.join(sys.prefix, ".tritonlock-cache") if sys.prefix != sys.base_prefix else None
    for var, name in (("TRITON_CACHE_DIR", "triton"), ("TORCHINDUCTOR_CACHE_DIR", "inductor")):
        if os.environ.get(var):
            r.caches[name] = os.environ[var]
            continue
        if base is None:
            continue  # not a venv: leave the tools' own per-user defaults alone
        path = os.path.join(base, name)
        try:
            os.makedirs(path, exist_ok=True)
        except OSError:
            continue
        if os.access(path, os.W_OK):
            os.environ[var] = r.caches[name] = path
    memo_dir = os.path.join(base, "memo") if base is not None else None
    if memo_dir is not None:
        try:
            os.makedirs(memo_dir, exist_ok=True)
        except OSError:
            memo_dir = None
    if memo_dir is not None and not os.access(memo_dir, os.W_OK):
        memo_dir = None
    return None, memo_dir


# ---------------------------------------------------------------------------------------------
# Concurrency


def run_concurrently(items: list[Any], fn: Callable[[Any], None]) -> list[BaseException | None]:
    """fn(item) for every item at once, one thread each (inline for a single item); each item's exception, or None,
    in item order. One item failing never stops the others."""
    errors: list[BaseException | None] = [None] * len(items)

    def one(i: int) -> None:
        try:
            fn(items[i])
        except BaseException as e:  # noqa: BLE001 - reported per item by the caller
            errors[i] = e

    if len(items) <= 1:
        for i in range(len(items)):
            one(i)
        return errors
    threads = [threading.Thread(target=one, args=(i,), name=f"verify-{i}") for i in range(len(items))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def run_devices(r: Report, torch: Any, ctxs: list[Ctx], fams: list[Any], interpret: bool,
                explain: Callable[[int, str], str] | None = None,
                compiled: threading.Event | None = None, first: FirstCalls | None = None) -> None:
    """Every family on every device; devices run at the same time, one thread each. `compiled`: set once the compile
    step (running in another thread) is done; each device waits for torch's first calls (`first`: started with CUDA;
    else made here), then for it."""
    many = len(ctxs) > 1

    def device_run(ctx: Ctx) -> None:
        with contextlib.nullcontext() if interpret else torch.cuda.device(ctx.index):
            if compiled is not None:
                with r.phase(f"torch first calls {ctx.device}" if many else "torch first calls"):
                    if first is not None:
                        first.wait(ctx)
                    else:
                        first_calls(ctx)
                with r.phase(f"compile (waited for) {ctx.device}" if many else "compile (waited for)"):
                    compiled.wait()
            for fam in fams:
                try:
                    with r.phase(f"{fam.FAMILY} {ctx.device}" if many else fam.FAMILY):
                        fam.run(ctx)
                except Exception as e:  # a compile error or a crash in one kernel must not hide the others
                    why = explain(ctx.index, str(e)) if explain is not None else ""
                    # the row keeps the name and dtype of the check that raised (the family's, before any began)
                    kernel, dtype = ctx.current or (fam.FAMILY, "-")
                    ctx.current = None
                    ctx.step += 1
                    r.kernel(kernel, ctx.label, dtype, False, None,
                             f"{fam.FAMILY}: the check raised {type(e).__name__}: {tail(str(e))}{why}"
                             f"; the family's later checks on {ctx.label} did not run",
                             order=(ctx.index, ctx.step))
                    traceback.print_exc()

    for ctx, err in zip(ctxs, run_concurrently(ctxs, device_run)):
        if err is not None:
            kernel, dtype = ctx.current or ("device run", "-")
            r.kernel(kernel, ctx.label, dtype, False, None, f"the device's run crashed: {type(err).__name__}: "
                     f"{tail(str(err))}", order=(ctx.index, 1 << 18))


# ---------------------------------------------------------------------------------------------
# Profile


def write_profile(r: Report, torch: Any, path: str, interpret: bool) -> None:
    from torch.profiler import ProfilerActivity, profile

    from . import k_matmul, k_softmax, k_vector_add

    acts = [ProfilerActivity.CPU] + ([] if interpret else [ProfilerActivity.CUDA])
    ctx = Ctx(Report(), torch, Plan(not interpret, quick=True), "cpu" if interpret else "cuda:0", 1, None, interpret)
    with profile(activities=acts) as prof:
        k_vector_add.run(ctx)
        k_matmul.check(ctx, torch.float16)
        k_softmax.run(ctx)
        ctx.sync()
    prof.export_chrome_trace(path)
    r.notes.append(f"profile: chrome trace of the kernels written to {path}")


# ---------------------------------------------------------------------------------------------
# Main


# On a machine with this many cores or more (the GPU machines), the packages' import server and the torch.compile
# check's key scan start before this process's `import torch`: the server imports torch once on a core of its own,
# then the packages (a torch + torchvision lock on one H200: verify 5.8 -> 3.8 s, as long as a bare `import torch,
# torchvision`), and the scan stats the installed files in a process of its own. On a smaller machine they start after
# it: on two cores a second `import torch` beside it doubled its time. TRITONLOCK_VERIFY_EARLY=1 (or 0) says which.
EARLY_IMPORTS_CPUS = 8


def starts_early(cores: int) -> bool:
    """Whether what imports torch beside this process starts before its own import (see EARLY_IMPORTS_CPUS)."""
    said = os.environ.get("TRITONLOCK_VERIFY_EARLY", "").strip()
    return said == "1" if said in ("0", "1") else cores >= EARLY_IMPORTS_CPUS


def verify(opts: argparse.Namespace, r: Report, memo_dir: str | None = None) -> None:
    # a GPU host whose GPUs this process cannot see: said before anything is started or imported
    hidden = envchecks.hidden_gpus() if opts.interpret is not True else None
    if hidden is not None and late(opts).expect_gpu is False:
        hidden = None  # a lock target without a GPU: the interpreter is what it expects
    if hidden is not None and opts.expect_gpu is True:
        r.check("GPU visible", False, *hidden)
        return
    monitor = None
    if opts.interpret is not True and hidden is None:
        monitor = gpuhealth.Monitor()  # NVML's first look, before this process touches the GPU
        envchecks.preinit_cuda()  # the driver's start overlaps `import torch`
    # first: where the binaries are not known to be compiled (a cold run), the compile workers, which import triton
    # but not torch, so that their start overlaps it (not yet where the GPUs are hidden: whether that fails the run is
    # known once torch says which build it is)
    with r.phase("start"):
        pool = WorkerPool.early(opts.quick, memo_dir) if opts.interpret is not True and hidden is None else None
    check = CompileCheck(opts, memo_dir) if not opts.quick and hidden is None else None
    imports = Imports(opts)
    cores = os.cpu_count() or 1
    if hidden is None and starts_early(cores):
        imports.start(eager=True)  # a GPU machine's spare cores: the imports' server imports torch beside this one
        r.notes.append(f"imports: the packages' import checks started beside `import torch` ({cores} cores)")
        if check is not None:
            check.start()  # (the torch.compile check's key: its scan of the installed files in a process beside too)

    def after_torch_import() -> None:
        """What runs beside the kernels' checks but must not slow this process's `import torch` starts here, once
        it is done: the packages' import checks where they did not start before it (EARLY_IMPORTS_CPUS; their scan
        of the installed distributions would hold this process's GIL, their processes import torch themselves), then the torch.compile check's key (the same kind of
        scan, in a process of its own; the check's process, which imports torch too, starts at CompileCheck.resolve
        unless its row is reused). Another process or thread to start beside the kernels (after torch's import)
        belongs here."""
        imports.start()
        if check is not None:
            check.start()

    early: list[Any] = []  # the all-reduce (allreduce.AllReduce), once _verify has started it
    try:
        _verify(opts, r, check, memo_dir, pool, monitor, hidden, after_torch_import, early)
    finally:
        for ar in early:
            ar.abandon()  # (a run that ended before the all-reduce: its processes go)
        if pool is not None:
            pool.close()
        if check is not None:
            check.abandon()
        imports.start()  # (when _verify returned before torch was imported: the rows are still wanted)
        if imports.checks is not None:
            with r.phase("package imports (waited for)", say="importing the packages"):
                imports.finish(r, gpu=r.mode == "gpu")
        if monitor is not None:
            monitor.stop()


class Imports:
    """The package import checks (imports.ImportChecks), started on demand, once."""

    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.checks: Any = None
        self.started = False

    def start(self, eager: bool = False) -> None:
        if self.started or self.opts.no_imports:
            return
        self.started = True
        from .imports import ImportChecks

        opts = self.opts
        self.checks = ImportChecks(RUNNER_DIR, lambda: (late(opts).imports, opts.import_scope), eager=eager)

    def finish(self, r: Report, gpu: bool) -> None:
        if self.checks is not None:
            self.checks.finish(r, gpu=gpu)


def _verify(opts: argparse.Namespace, r: Report, check: CompileCheck | None, memo_dir: str | None,
            pool: WorkerPool | None = None, monitor: gpuhealth.Monitor | None = None,
            hidden: tuple[str, str] | None = None, after_torch: Callable[[], None] | None = None,
            early: list[Any] | None = None) -> None:
    with r.phase("import torch", say="importing torch"):
        torch = envchecks.import_torch(r)
    if torch is None:
        return
    if after_torch is not None:
        after_torch()  # what must not slow torch's import starts now (the package imports, the torch.compile check)
    if early is not None and hidden is None:
        # the all-reduce's processes set up (torch, CUDA context, NCCL communicator) while the kernels run
        from .allreduce import wanted
        ar = wanted(opts, torch)
        if ar is not None:
            ar.start(r)
            early.append(ar)
    if not opts.late_ready.is_set():
        with r.phase("waiting for tritonlock (the lock's expectations)"):
            late(opts)
    envchecks.check_backend(r, torch, opts.backend)
    if hidden is not None and torch.version.cuda:
        # a CUDA build of torch on a host whose GPUs are hidden from it: the interpreter would prove nothing
        r.check("GPU visible", False, *hidden)
        return
    with r.phase("CUDA init"):
        cuda_ok = envchecks.check_cuda(r, torch, opts.expect_gpu, opts.driver)
        if cuda_ok:
            torch.zeros(1, device="cuda")  # create the context here, not inside the first kernel's time
    if (not cuda_ok and opts.interpret is not True and opts.expect_gpu is not False and torch.version.cuda
            and (opts.expect_gpu is True or envchecks.host_gpus()
                 or (monitor is not None and monitor.gpu_count(0.5)))):
        # the driver has GPUs (or the lock expects one) and this CUDA torch cannot use them: the failed check says
        # why; running the kernels in the interpreter instead would take minutes and prove nothing about the GPU
        if all(c["ok"] for c in r.checks):
            r.check("GPU visible", False, "this host has NVIDIA GPUs (its driver says so), but torch "
                    f"{torch.__version__} sees none", "see the checks above; `tritonlock verify --interpret` runs "
                    "the kernels in Triton's interpreter on purpose")
        installed = envchecks.installed_version("triton")  # (read, not imported: no kernel runs from here on)
        if installed is not None:
            envchecks.check_triton_version(r, opts.triton, installed)
        return
    if opts.interpret is True:
        interpret = True
    elif opts.interpret is False:
        if not cuda_ok:
            r.check("GPU mode", False, "GPU mode was asked for (no interpreter) but CUDA is not "
                    "available, so no kernel ran", "see the CUDA available check")
            return
        interpret = False
    else:
        interpret = not cuda_ok
    r.mode = "interpreter" if interpret else "gpu"
    if check is not None:
        check.devices_seen([f"{torch.cuda.get_device_name(i)} {tuple(torch.cuda.get_device_capability(i))}"
                            for i in range(torch.cuda.device_count())] if cuda_ok else [])
    if cuda_ok:
        envchecks.check_archs(r, torch)
    if interpret and not envchecks.check_interpreter_deps(r, asked=opts.interpret is True):
        return
    plan = Plan(gpu=not interpret, quick=opts.quick)
    n = 0 if interpret else torch.cuda.device_count()
    # each check draws its inputs from its own generator, seeded by this and its name (common.row_seed): --seed N
    # repeats them
    seed = int(opts.seed) if opts.seed is not None else int.from_bytes(os.urandom(4), "little")
    ctxs = [Ctx(r, torch, plan, "cpu", 0, opts.inject_fault, True, seed=seed)] if interpret else \
        [Ctx(r, torch, plan, f"cuda:{i}", i, opts.inject_fault, False, seed=seed) for i in range(n)]
    tf32 = first = None
    if not interpret:
        # torch's fp32 matmul on tf32 too while timing, as the Triton kernel does (set before its first call: cuBLAS
        # picks its kernel then)
        tf32, torch.backends.cuda.matmul.allow_tf32 = torch.backends.cuda.matmul.allow_tf32, True
        # torch's first calls from now on, beside Triton's import, the checks below and the compile step
        first = FirstCalls(ctxs)
    with r.phase("import triton"):
        loaded = envchecks.load_triton(r, interpret)
    if not loaded:
        if first is not None:
            first.join()  # (no CUDA work of theirs left running as the process ends)
        if tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32 = tf32
        return
    envchecks.check_triton_version(r, opts.triton)
    if check is not None:
        with r.phase("torch.compile check: reuse or start"):
            check.resolve()  # the key's scan ran beside triton's import
    with r.phase("import kernels"):
        fams = families()
    if not interpret:
        said = memo.install_triton_key(memo_dir)
        if said:
            r.notes.append(said)
    driver = opts.driver or (envchecks.driver_version() if not interpret else None)
    ptxas: dict[int, dict[str, Any]] = {}
    if not interpret and not getattr(torch.version, "hip", None):  # ROCm: Triton's AMD backend uses no ptxas
        ptxas = envchecks.check_ptxas(r, torch, driver, opts.ptxas_floors, memo_dir)
    torch.manual_seed(seed)  # the timed sizes' inputs (never checked)
    r.seed = seed
    r.notes.append(f"inputs: random numbers of seed {seed}" + (" (given)" if opts.seed is not None else
                   f"; `tritonlock verify --seed {seed}` repeats them"))
    compiled = compiler = None
    if not interpret:
        # the compile step in a thread of its own; the devices make torch's first calls meanwhile
        compiled = threading.Event()

        def compile_step() -> None:
            try:
                with r.phase("compile"):
                    precompile(r, torch, ctxs, fams, memo_dir, pool, say=r.say)
            except Exception:  # noqa: BLE001 - whatever did not compile compiles at its first launch, and says so
                traceback.print_exc()
            finally:
                compiled.set()

        compiler = threading.Thread(target=compile_step, name="compile-step", daemon=True)
        compiler.start()
    if monitor is not None:
        monitor.timing(True)
    where = ("in Triton's interpreter on the CPU" if interpret else
             "on " + " and ".join([", ".join(c.device for c in ctxs[:-1]), ctxs[-1].device] if len(ctxs) > 1
                                  else [ctxs[0].device]))
    r.say(phase=f"running the kernels {where}", state="start")
    t_run = time.perf_counter()
    try:
        run_devices(r, torch, ctxs, fams, interpret,
                    explain=lambda i, text: envchecks.explain_load_failure(text, ptxas.get(i), driver,
                                                                         opts.ptxas_floors),
                    compiled=compiled, first=first)
    finally:
        r.say(phase=f"running the kernels {where}", state="end", seconds=round(time.perf_counter() - t_run, 2))
        if monitor is not None:
            monitor.timing(False)
        if check is not None:
            check.release()  # the timings are done: the torch.compile process may use the GPU now
        if compiler is not None:
            compiler.join()
        if tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32 = tf32
    if monitor is not None and not interpret:
        # what NVML saw (processes, clocks, limits, the link) for verify's speed verdicts
        r.gpu_health = monitor.facts([gpuhealth.cuda_uuid(torch, i) for i in range(n)])
    if n > 1:
        r.notes.append(f"the {n} GPUs ran their kernels at the same time, one thread each")
    if interpret:  # said only once the kernels really ran
        r.notes.append(INTERPRETER_NOTE)
    for ar in early or []:
        ar.finish(r)  # started after torch's import; the all-reduce itself runs now, after every timing
    if not interpret and not any(ar.backend == "nccl" for ar in early or []):
        from .allreduce import skipped
        r.notes.append(skipped(opts.quick, n, bool(early)))
    label = "cpu" if interpret else "cuda:0"
    if opts.quick:
        r.kernel("torch_compile", label, "fp32", True, None,
                 "skipped: --quick (a full `tritonlock verify` compiles a function with torch.compile / Inductor)",
                 mode="skipped", order=(0, COMPILE_CHECK_ORDER))
    elif check is not None:
        with r.phase("torch.compile (waited for)", say="torch.compile check" + (" (reused)" if check.reused else "")):
            check.finish(r, label)
    if opts.profile:
        try:
            write_profile(r, torch, opts.profile, interpret)
        except Exception as e:
            r.check("profile", False, f"could not write the profile: {type(e).__name__}: {e}",
                    "check that the profile path is writable")


# the pipes tritonlock reads beside stdout and stderr (the progress pipe), for __main__ to close before its exit
PIPES: list[int] = []


def main(argv: list[str] | None = None) -> int:
    opts = parse_options(sys.argv[1:] if argv is None else argv)
    if opts.compile_worker:
        from .precompile import worker_main
        return worker_main()
    if opts.import_job:
        from .imports import import_job_main
        return import_job_main(json.loads(opts.import_job))
    if opts.import_server:
        from .imports import import_server_main
        return import_server_main(eager_torch=opts.eager_torch)
    # Keep stdout for the JSON alone: triton, torch and the compilers may print, even from C.
    sys.stdout.flush()
    json_fd = os.dup(1)
    os.dup2(2, 1)
    r = Report()
    r.mode = "interpreter" if opts.interpret else "gpu"  # until the runner decides
    cache_dir = None
    try:
        if opts.compile_check_only:
            compile_check_main(opts, r)
        else:
            r.progress_fd = opts.progress_fd
            if opts.progress_fd is not None:
                PIPES.append(opts.progress_fd)
            r.say(event="started", python=sys.version.split()[0], executable=sys.executable)
            if opts.late_args:
                read_late_args(opts)
            cache_dir, memo_dir = setup_caches(r, opts.cold)
            verify(opts, r, memo_dir)
    except BaseException as e:  # report whatever happened, in JSON, rather than die silently
        traceback.print_exc()
        r.check("runner", False, f"the verify runner crashed: {type(e).__name__}: {tail(str(e))}",
                "report this as a tritonlock bug, with the runner's stderr")
    finally:
        if cache_dir:
            shutil.rmtree(cache_dir, ignore_errors=True)
        sys.stdout.flush()
        doc = json.dumps(r.to_json(), indent=1) + "\n"
        with os.fdopen(json_fd, "w", encoding="utf-8") as out:
            out.write(doc)
    return 0 if r.to_json()["ok"] else 1
