# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""Every kernel binary the checks launch, compiled or loaded before anything is timed.

A warm run (the binaries are in Triton's cache) loads them in threads: loading is file reads, the driver's module load
and a launcher, mostly outside the GIL.

A cold run compiles them in worker processes: Triton's front end (Python walking each kernel's AST) holds the GIL,
so threads compile one kernel at a time for much of the work. The main process asks Triton, through its
`jit_cache_hook`, for each binary's specialization (the argument types, alignments and constants it would compile
for) without compiling; workers (`python -I runner --compile-worker`, which import triton but never torch or CUDA)
compile each specialization for the GPU's target into the same Triton cache; the main process then loads them as in
a warm run. Whatever a worker cannot do, the main process's own load compiles, with its error, as before.
"""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import json
import os
import subprocess
import sys
import threading
import time
import traceback
from typing import Any, Callable, Iterator, Tuple

from . import memo
from .common import Ctx
from .report import Report, tail

RUNNER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
Job = Tuple[Ctx, str, Callable[[], Any]]  # typing's Tuple: the runner also runs on Pythons before 3.9


def compile_workers(n_jobs: int) -> int:
    """Threads or processes for the compile step; TRITONLOCK_VERIFY_COMPILE_THREADS overrides (1: one at a time)."""
    env = os.environ.get("TRITONLOCK_VERIFY_COMPILE_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(n_jobs, os.cpu_count() or 4, 16))


# ---------------------------------------------------------------------------------------------
# Triton's launchers, loaded safely from threads

# Triton builds each kernel's launcher as a C extension module named "__triton_launcher" (single-phase init, one file
# per launcher source) and loads it with importlib. CPython loads a file it has loaded before by taking the module
# object sys.modules holds under that name and overwriting its dict with this file's functions; the file loaded
# first puts its module there. So two threads loading two launchers at once can share one module object, and a
# launcher can take the other's `launch`: a TMA kernel then goes through a pointer kernel's launcher and fails with
# "function takes exactly 39 arguments (43 given)" — a false failure, seen in 2 of 39 warm verifies on an H100
# (bench/h200/verify-ab-1205/fail-B-12.json). tests/test_verify_launchers.py shows CPython doing it.
_LOADS = threading.Lock()


def _guard(holder: Any, attr: str, name_of: Callable[[tuple[Any, ...]], str]) -> bool:
    """Wrap holder.attr (a load, or a launcher's constructor) once: each call under one lock, with the module name
    `name_of(args)` out of sys.modules during the call and after it (a module that was there before is put back), so
    every load makes a module object of its own. False where holder has no attr."""
    fn = getattr(holder, attr, None)
    if fn is None:
        return False
    if getattr(fn, "tritonlock_guarded", False):
        return True

    def guarded(*args: Any, **kw: Any) -> Any:
        name = name_of(args)
        with _LOADS:
            before = sys.modules.pop(name, None)
            try:
                return fn(*args, **kw)
            finally:
                sys.modules.pop(name, None)
                if before is not None:
                    sys.modules[name] = before

    guarded.tritonlock_guarded = True  # type: ignore[attr-defined]
    setattr(holder, attr, guarded)
    return True


def _guard_loads(build: Any) -> bool:
    """Triton 3.4+: `build._load_module_from_path(name, path)`, the load alone (a millisecond's dlopen); building a
    launcher that is not in the cache yet still runs in parallel."""
    return _guard(build, "_load_module_from_path", lambda args: str(args[0]))


def _guard_launchers(driver: Any) -> bool:
    """Older Tritons load the module inside the launcher's constructor: each launcher is made under the guard."""
    return _guard(driver, "launcher_cls", lambda args: "__triton_launcher")


def guard_launcher_loads() -> str:
    """Make Triton's launcher loads safe from threads (see above), before any is loaded: "loads" (Triton 3.4+),
    "launchers" (older), or "" where this Triton has neither hook."""
    try:
        from triton.runtime import build
    except ImportError:
        build = None
    if build is not None and _guard_loads(build):
        return "loads"
    try:
        import triton

        driver = triton.runtime.driver.active
    except Exception:  # noqa: BLE001 - no driver: nothing will be launched
        return ""
    return "launchers" if _guard_launchers(driver) else ""


def precompile(r: Report, torch: Any, ctxs: list[Ctx], fams: list[Any], memo_dir: str | None = None,
               pool: WorkerPool | None = None, say: Callable[..., None] | None = None) -> None:
    """Compile or load every binary the checks will launch, once per kind of GPU (the other GPUs load it from the
    cache). Each job's seconds go to its row's compile column. A job that fails is left for its check to hit again,
    which reports it with its explanation. `pool`: workers started early (WorkerPool.early), used if the binaries
    turn out not to be compiled yet, else let go."""
    guard_launcher_loads()  # before the load threads below, and any kernel's first launch
    first: dict[tuple[int, int], Ctx] = {}
    for ctx in ctxs:
        first.setdefault(tuple(torch.cuda.get_device_capability(ctx.index)), ctx)
    jobs: list[Job] = []
    for ctx in first.values():
        with torch.cuda.device(ctx.index):
            for fam in fams:
                try:
                    jobs += [(ctx, key, fn) for key, fn in fam.jobs(ctx)]
                except Exception:  # noqa: BLE001 - the family's check reports it
                    traceback.print_exc()
    # Triton creates a kernel's per-device cache on its first use, unguarded: two threads getting there at once
    # each make one, and the binaries compiled into the one that loses are forgotten (compiled again at launch).
    # Create them here, one thread, first.
    for ctx in first.values():
        with torch.cuda.device(ctx.index):
            for fam in fams:
                for kernel in getattr(fam, "KERNELS", ()):
                    with contextlib.suppress(Exception):  # a Triton without device_caches
                        kernel.device_caches[torch.cuda.current_device()]
    devices = [f"{torch.cuda.get_device_name(c.index)} {tuple(cap)}" for cap, c in first.items()]
    warm_key = memo.binaries_key(devices, [key for _, key, _ in jobs])
    t0 = time.perf_counter()
    threads = compile_workers(len(jobs))
    by_workers = None
    warm = memo.binaries_warm(memo_dir, warm_key)
    words = f"compiling {len(jobs)} kernels ({'all cached' if warm else 'not all cached yet'})"
    if say is not None:
        say(phase=words, state="start")
    if not warm and threads > 1 and len(jobs) > 1:
        if pool is None:
            pool = WorkerPool(min(threads, len(jobs)), memo_dir)
        by_workers = pool.compile(torch, jobs)
        memo.install_triton_key(memo_dir)  # the workers recorded Triton's source hash: no need to compute it
    if pool is not None:
        pool.close()
    with triton_compiles() as here:
        failed = load(torch, jobs, threads)
    r.compile_seconds = time.perf_counter() - t0
    if say is not None:
        said = ""
        if here is not None:
            said = (f"{len(jobs)} kernels: {here['hit']} cached, "
                    f"{here['compiled'] + (by_workers or {}).get('compiled', 0)} compiled")
        say(phase=words, state="end", seconds=round(r.compile_seconds, 2), words=said)
    r.notes.append(f"compile: {len(jobs)} kernel binaries{_words(by_workers, pool, here, threads)} in "
                   f"{r.compile_seconds:.2f} s, before any timing")
    if not failed:
        memo.save_binaries(memo_dir, warm_key, ctxs[0].plan.quick)


def _words(by_workers: dict[str, int] | None, pool: WorkerPool | None, here: dict[str, int] | None,
           threads: int) -> str:
    """What happened to the binaries, as counted by Triton's compilation listener (nothing is said that was not
    counted): ": 20 compiled and 7 found in Triton's cache by 16 worker processes; then 27 loaded here"."""
    parts = []
    if by_workers is not None and pool is not None:
        parts.append(f"{by_workers['compiled']} compiled and {by_workers['hit']} found in Triton's cache by "
                     f"{pool.size} worker processes")
    if here is not None:
        what = [f"{here['hit']} loaded from Triton's cache"] + \
            ([f"{here['compiled']} compiled on {threads} thread(s)"] if here["compiled"] else [])
        parts.append(("then " if parts else "") + " and ".join(what))
    return ": " + "; ".join(parts) if parts else ""


@contextlib.contextmanager
def triton_compiles() -> Iterator[dict[str, int] | None]:
    """Count what Triton's compiler does inside the block — {"compiled": n, "hit": n} (a hit is a binary read from
    its cache) — through its compilation listener (Triton 3.4+); None with a Triton that has none."""
    try:
        from triton import knobs
    except ImportError:
        yield None
        return
    if not hasattr(getattr(knobs, "compilation", None), "listener"):
        yield None
        return
    counts = {"compiled": 0, "hit": 0}
    lock = threading.Lock()
    saved = knobs.compilation.listener

    def listener(**kw: Any) -> None:
        with lock:
            counts["hit" if kw.get("cache_hit") else "compiled"] += 1
        if saved is not None:
            saved(**kw)

    knobs.compilation.listener = listener
    try:
        yield counts
    finally:
        knobs.compilation.listener = saved


def load(torch: Any, jobs: list[Job], workers: int) -> int:
    """Each job through Triton's own path (its cache, or its compiler on a miss), in threads; the number that
    failed."""
    lock = threading.Lock()
    failed = 0

    def do(job: Job) -> None:
        nonlocal failed
        ctx, key, fn = job
        t0 = time.perf_counter()
        try:
            with torch.cuda.device(ctx.index):
                kernel = fn()
                # load it and build its launcher now, in parallel, rather than at its first launch
                getattr(kernel, "_init_handles", lambda: None)()
        except Exception:  # noqa: BLE001 - see precompile
            traceback.print_exc()
            with lock:
                failed += 1
        with lock:
            ctx.compile_seconds[key] = ctx.compile_seconds.get(key, 0.0) + time.perf_counter() - t0

    if workers == 1:
        for job in jobs:
            do(job)
    else:
        with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="compile") as pool:
            list(pool.map(do, jobs))
    return failed


# ---------------------------------------------------------------------------------------------
# Cold: specializations out, worker processes compile


def specializations(torch: Any, jobs: list[Job]) -> list[dict[str, Any]] | None:
    """For each job, what Triton would compile: {"job", "module", "name", "spec", "target"}; None where this Triton
    has no jit_cache_hook (then the threads compile, as before)."""
    try:
        import triton
        from triton import knobs
        from triton.runtime.jit import JITFunction
    except ImportError:
        return None
    if not hasattr(knobs, "runtime") or not hasattr(knobs.runtime, "jit_cache_hook"):
        return None
    found: list[dict[str, Any]] = []
    current: list[int] = [0]

    def hook(**kw: Any) -> bool:
        jit = getattr(kw.get("fn"), "jit_function", None)
        data = (kw.get("compile") or {}).get("specialization_data")
        if isinstance(jit, JITFunction) and isinstance(data, str):
            target = triton.runtime.driver.active.get_current_target()
            found.append({"job": current[0], "module": jit.fn.__module__, "name": jit.fn.__name__, "spec": data,
                          "target": [target.backend, target.arch, target.warp_size]})
        return True  # compile nothing here

    saved = knobs.runtime.jit_cache_hook
    knobs.runtime.jit_cache_hook = hook
    try:
        for i, (ctx, _key, fn) in enumerate(jobs):
            current[0] = i
            try:
                with torch.cuda.device(ctx.index):
                    fn()
            except Exception:  # noqa: BLE001 - the load step meets it again and reports it
                traceback.print_exc()
    finally:
        knobs.runtime.jit_cache_hook = saved
    return found


class WorkerPool:
    """Compile workers: `python -I runner --compile-worker` processes that import triton (never torch or CUDA) and
    compute Triton's source hash as soon as they start, then wait for their share of the specializations."""

    def __init__(self, size: int, memo_dir: str | None) -> None:
        env = dict(os.environ)
        env.pop("TRITON_INTERPRET", None)
        if memo_dir:
            env["TRITONLOCK_VERIFY_MEMO_DIR"] = memo_dir
        self.procs: list[subprocess.Popen[str]] = []
        for _ in range(size):
            try:
                self.procs.append(subprocess.Popen([sys.executable, "-I", RUNNER_DIR, "--compile-worker"],
                                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env))
            except OSError:
                traceback.print_exc()
                break
        self.size = len(self.procs)

    @classmethod
    def early(cls, quick: bool, memo_dir: str | None) -> WorkerPool | None:
        """Started with the runner, before torch is imported, so that the workers' own start overlaps it: only where
        a GPU driver is present and no earlier run recorded compiling this runner's binaries with this Triton."""
        if not (os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/kfd")):
            return None
        if memo.binaries_likely_warm(memo_dir, quick):
            return None
        n = compile_workers(11 if quick else 27)
        return cls(n, memo_dir) if n > 1 else None

    def compile(self, torch: Any, jobs: list[Job]) -> dict[str, int] | None:
        """Compile the jobs' specializations: {"compiled": n, "hit": n} as the workers' Triton counted them, or None
        when this Triton cannot say what it would compile (or no worker started). Each job's compile seconds go to its
        row."""
        specs = specializations(torch, jobs) if self.procs else None
        if not specs:
            return None
        # longest first, dealt round-robin: attention kernels take the longest, vector add the shortest
        order = sorted(range(len(specs)), key=lambda i: -_weight(specs[i]["name"]))
        shares: list[list[dict[str, Any]]] = [[] for _ in self.procs]
        for n, i in enumerate(order):
            shares[n % len(shares)].append(specs[i])
        results: list[str] = []

        def one(i: int) -> None:
            proc = self.procs[i]
            try:
                out, _ = proc.communicate(json.dumps(shares[i]), timeout=600)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            except OSError:  # the worker died before reading its share
                out = ""
            results.append(out or "")

        with concurrent.futures.ThreadPoolExecutor(len(self.procs), thread_name_prefix="compile-worker") as pool:
            list(pool.map(one, range(len(self.procs))))
        counts = {"compiled": 0, "hit": 0}
        for line in "\n".join(results).splitlines():
            try:
                res = json.loads(line)
                ctx, key, _ = jobs[int(res["job"])]
            except (ValueError, KeyError, IndexError, TypeError):
                continue
            ctx.compile_seconds[key] = ctx.compile_seconds.get(key, 0.0) + float(res.get("seconds", 0.0))
            if res.get("ok"):
                counts["hit" if res.get("cache_hit") else "compiled"] += 1
            else:
                print(f"compile worker: {key}: {res.get('error')}", file=sys.stderr)
        return counts

    def close(self) -> None:
        """Let every worker go (an empty share: it exits at once)."""
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    proc.communicate("[]", timeout=60)
                except (subprocess.TimeoutExpired, OSError, ValueError):
                    proc.kill()
        self.procs = []


def _weight(name: str) -> int:
    return 3 if "attention" in name else 2 if "matmul" in name else 1


def _decode(spec: str) -> tuple[str, dict[str, Any], dict[Any, Any], dict[Any, Any], dict[str, Any]]:
    """(name, signature, constexprs, attrs, options) from Triton's serialized specialization (JSON: tuples came
    back as lists, dtypes as their names, constexpr values as {"constexpr": value})."""
    import triton.language as tl

    def tuples(x: Any) -> Any:
        return tuple(tuples(v) for v in x) if isinstance(x, list) else x

    obj = json.loads(spec)
    constexprs = {}
    for k, v in zip(obj["constant_keys"], obj["constant_vals"]):
        if isinstance(v, str) and tl.dtype.is_dtype(v):
            v = tl.dtype(v)
        elif isinstance(v, dict) and "constexpr" in v:
            v = tl.constexpr(v["constexpr"])
        constexprs[tuple(k)] = v
    attrs = {tuple(k): v for k, v in zip(obj["attrs_keys"], obj["attrs_vals"])}
    signature = {k: tuples(v) for k, v in obj["signature"].items()}
    options = {k: tuples(v) for k, v in obj["options"].items()}
    return obj["name"], signature, constexprs, attrs, options


def worker_main() -> int:
    """`--compile-worker`: compile the specializations given on stdin (a JSON list) into the Triton cache; one JSON
    line per job on stdout: {"job", "ok", "seconds", "cache_hit", "error"}."""
    # stdout carries the JSON lines alone: the compilers may print, even from C
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    # Triton's source hash now, while the main process is still importing torch
    memo.install_triton_key(os.environ.get("TRITONLOCK_VERIFY_MEMO_DIR"))
    with contextlib.suppress(Exception):
        import triton.runtime.cache

        triton.runtime.cache.triton_key()
    for item in json.loads(sys.stdin.read() or "[]"):
        t0 = time.perf_counter()
        res: dict[str, Any] = {"job": item.get("job")}
        try:
            fn = getattr(importlib.import_module(item["module"]), item["name"])
            while not isinstance(fn, JITFunction):  # an autotuner or heuristics wrapper
                fn = fn.fn
            _, signature, constexprs, attrs, options = _decode(item["spec"])
            with triton_compiles() as counts:
                triton.compile(ASTSource(fn, signature, constexprs, attrs), target=GPUTarget(*item["target"]),
                               options=options)
            res["ok"] = True
            if counts is not None:
                res["cache_hit"] = counts["compiled"] == 0 and counts["hit"] > 0
        except Exception as e:  # noqa: BLE001 - the main process compiles it again and reports it
            res.update(ok=False, error=f"{type(e).__name__}: {tail(str(e))}")
        res["seconds"] = time.perf_counter() - t0
        out.write(json.dumps(res) + "\n")
        out.flush()
    return 0
