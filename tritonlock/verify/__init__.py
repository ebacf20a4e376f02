"""Run the reference kernels inside a target environment's interpreter and report what they did."""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritonlock.errors import VerifyError
from tritonlock.verify import speed
from tritonlock.verify._proc import on_sigterm_stop, read_to_end, stop_group
from tritonlock.verify.speed import GpuFacts, Speed

__all__ = ["Check", "KernelResult", "VerifyResult", "run_verify", "start_verify", "RUNNER"]

# The runner runs under the target venv's interpreter and imports only torch, triton and the
# standard library. It is a folder next to this module that Python runs as it is (`python -I runner`):
# runner/__main__.py and the package runner/tlverify (the harness, one module per kernel family).
RUNNER = Path(__file__).with_name("runner")


def runner_files() -> tuple[tuple[str, str], ...]:
    """(path relative to RUNNER, text) of every file of the runner: what a copy of it needs (export's image)."""
    return tuple((p.relative_to(RUNNER).as_posix(), p.read_text(encoding="utf-8"))
                 for p in sorted(RUNNER.rglob("*.py")) if "__pycache__" not in p.parts)
SCHEMA = 1
_STDERR_TAIL = 2000


@dataclass(frozen=True, kw_only=True, slots=True)
class Check:
    """One environment check: what was found and, when it failed, what to do."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class KernelResult:
    """One reference kernel on one device: correctness against float64 torch, speed against torch."""

    kernel: str
    device: str
    dtype: str
    ok: bool
    max_err: float | None
    metric: str | None  # "GB/s" or "TFLOP/s"; None when not timed (interpreter, --quick)
    value: float | None
    torch_value: float | None
    ratio: float | None  # value / torch_value: above 1 means the Triton kernel is faster
    detail: str = ""
    # how it ran: "gpu", "interpreter", "inductor-triton", "inductor-cpp" or "skipped" (None: an older runner)
    mode: str | None = None
    compile_seconds: float | None = None  # its binaries' compile (or cache load) time before the checks
    generated: tuple[str, ...] = ()  # torch.compile: the kernels Inductor generated
    # torch.compile: when the check passed in this same environment and was not run again ("2026-12-01 16:07 UTC")
    reused: str | None = None
    speed: Speed | None = None  # a timed row against its band (compat/bands.toml); None when not timed
    message_bytes: int | None = None  # the all-reduce: the size of the message it reduced


@dataclass(frozen=True, kw_only=True, slots=True)
class VerifyResult:
    """Everything one verify run found; `ok` is False when any check or kernel failed."""

    ok: bool
    mode: str  # "gpu" or "interpreter"
    python: str
    torch: str | None
    triton: str | None
    checks: tuple[Check, ...]
    kernels: tuple[KernelResult, ...]
    jit_seconds: float | None
    total_seconds: float
    gpus: tuple[str, ...]
    notes: tuple[str, ...]
    compile_seconds: float | None = None  # wall time of the parallel compile step
    caches: tuple[tuple[str, str], ...] = ()  # ("triton", path), ("inductor", path)
    gpu_health: tuple[GpuFacts, ...] = ()  # what NVML said about each GPU while the kernels ran
    gpu_health_error: str | None = None  # why NVML said nothing (None: it answered, or this was no GPU run)

    @property
    def outside_band(self) -> tuple[KernelResult, ...]:
        """The timed rows outside their band (slow or fast): a warning, a failure with --strict-speed."""
        return tuple(k for k in self.kernels if k.speed is not None and k.speed.outside)

    @property
    def failures(self) -> tuple[str, ...]:
        """One line per failed check or kernel, in report order."""
        lines = [f"{c.name}: {c.detail}" for c in self.checks if not c.ok]
        lines += [f"{k.kernel} {k.dtype} on {k.device}: {k.detail}" for k in self.kernels if not k.ok]
        return tuple(lines)

    def to_json(self) -> dict[str, object]:
        return {
            "schema": SCHEMA,
            "ok": self.ok,
            "mode": self.mode,
            "python": self.python,
            "torch": self.torch,
            "triton": self.triton,
            "checks": [
                {"name": c.name, "ok": c.ok, "detail": c.detail, "fix": c.fix} for c in self.checks
            ],
            "kernels": [
                {
                    "kernel": k.kernel, "device": k.device, "dtype": k.dtype, "ok": k.ok,
                    "max_err": k.max_err, "metric": k.metric, "value": k.value,
                    "torch_value": k.torch_value, "ratio": k.ratio, "detail": k.detail,
                    "mode": k.mode, "compile_seconds": k.compile_seconds,
                    **({"generated": list(k.generated)} if k.generated else {}),
                    **({"reused": k.reused} if k.reused else {}),
                    **({"message_bytes": k.message_bytes} if k.message_bytes is not None else {}),
                    "speed": k.speed.to_json() if k.speed else None,
                }
                for k in self.kernels
            ],
            "jit_seconds": self.jit_seconds,
            "compile_seconds": self.compile_seconds,
            "caches": dict(self.caches),
            "total_seconds": self.total_seconds,
            "gpus": list(self.gpus),
            "notes": list(self.notes),
            # what NVML said while the kernels ran, in the runner's own shape (null: no GPU run)
            "gpu_health": speed.facts_doc(self.gpu_health, self.gpu_health_error)
            if self.gpu_health or self.gpu_health_error else None,
        }


# ---------------------------------------------------------------------------------------------
# Running


def run_verify(
    python: str,
    *,
    backend: str | None = None,
    triton: str | None = None,
    expect_gpu: bool | None = None,
    interpret: bool | None = None,
    quick: bool = False,
    profile: str | None = None,
    cold: bool = False,
    reuse: bool = True,
    inject_fault: str | None = None,
    timeout: float = 600,
    seed: int | None = None,
    on_progress: Any = None,
    driver: str | None = None,
    ptxas_floors: dict[str, str] | None = None,
    imports: tuple[str, ...] = (),
    import_scope: tuple[str, ...] | None = None,
    lock_facts: Any = None,
) -> VerifyResult:
    """Run the verify runner under `python` (the venv's interpreter) and parse its report.

    `backend` ("cu130", "cpu", ...) and `triton` ("3.6.0") are what the lock expects; `expect_gpu`
    True makes an unusable CUDA a failed check rather than a quiet switch to the interpreter;
    `interpret` None lets the runner pick (GPU when torch sees one). Raises VerifyError only when
    the runner cannot run or answers something that is not its report. `driver` is the host's
    NVIDIA driver version when the caller has detected it (the runner probes otherwise). `imports`: the packages
    the user named (imported even without native code, beside every distribution that has some); `import_scope`: the
    lock's package names (a preinstalled distribution outside them is not imported: not the lock's); `lock_facts`
    (tritonlock.verify.natives.LockFacts): what the lock knows of their native code, to explain a failed import.
    """
    started = start_verify(python, interpret=interpret, quick=quick, profile=profile, cold=cold, reuse=reuse,
                           inject_fault=inject_fault, timeout=timeout, seed=seed, on_progress=on_progress)
    return started.finish(backend=backend, triton=triton, expect_gpu=expect_gpu, driver=driver,
                          ptxas_floors=ptxas_floors, imports=imports, import_scope=import_scope,
                          lock_facts=lock_facts)


class StartedVerify:
    """A runner already started (its `import torch` under way) that waits on its stdin for what the lock expects:
    `finish()` sends that and reads the report; `abandon()` stops it (the caller's own checks failed first)."""

    def __init__(self, python: str, proc: subprocess.Popen[str], started: float, timeout: float,
                 trace_dir: Path | None = None, profile: str | None = None, progress: int | None = None,
                 on_progress: Any = None) -> None:
        self.python, self.proc, self.started, self.timeout = python, proc, started, timeout
        self.trace_dir, self.profile = trace_dir, profile
        self._old_term = on_sigterm_stop(proc)  # from now until finish() or abandon(), whatever runs meanwhile
        self._reader = None
        if progress is not None:
            self._reader = threading.Thread(target=_read_progress, args=(progress, on_progress), name="verify-progress",
                                            daemon=True)
            self._reader.start()

    def _join_progress(self) -> None:
        if self._reader is not None:
            self._reader.join(timeout=5)  # the pipe ends with the runner (and every child it gave the pipe to)
            self._reader = None

    def finish(self, *, backend: str | None = None, triton: str | None = None, expect_gpu: bool | None = None,
               driver: str | None = None, ptxas_floors: dict[str, str] | None = None,
               imports: tuple[str, ...] = (), import_scope: tuple[str, ...] | None = None,
               lock_facts: Any = None, host_link: Callable[[], tuple[str, str] | None] | None = None,
               ) -> VerifyResult:
        """`imports`: the packages the user named (imported even without native code, beside every distribution
        that has some); `import_scope`: the lock's package names; `lock_facts` (tritonlock.verify.natives.LockFacts): what the lock knows of the packages'
        native code, to explain a failed import; `host_link`: host detection's link between the GPUs, asked only when the
        runner's NVML could not read it (speed.judge_allreduce)."""
        try:
            late = {"backend": backend, "triton": triton, "expect_gpu": expect_gpu, "driver": driver,
                    # the least driver that loads code from a ptxas of each CUDA major (compat/cuda.toml
                    # [[minor_compat]]), so the runner can tell whether Triton's ptxas makes kernels this driver loads
                    "ptxas_floors": ptxas_floors if ptxas_floors is not None else _ptxas_floors(),
                    **({"imports": list(imports)} if imports else {}),
                    **({"import_scope": list(import_scope)} if import_scope is not None else {})}
            _prepare_natives()  # beside the runner: what reading its report needs, imported while it works
            stdout, stderr = _communicate(self.proc, json.dumps(late) + "\n", self.timeout)
            elapsed = time.perf_counter() - self.started
            self._join_progress()
            if self.trace_dir is not None and self.profile is not None:
                stdout = _place_trace(self.trace_dir / "trace.json", Path(self.profile), stdout)
        except KeyboardInterrupt:  # (Ctrl-C while what the lock expects was being put together, too)
            stop_group(self.proc)
            raise
        finally:
            self._drop_trace()
            self._restore_sigterm()
        try:
            doc = json.loads(stdout)
        except ValueError:
            try:
                code: int | str = self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                code = "unknown (it has not ended)"
            raise VerifyError(
                f"verify: the runner under {self.python} exited with code {code} without a report"
                f"{_stderr_words(stderr)}"
            ) from None
        return _with_natives(_parse(doc, elapsed, host_link), doc, lock_facts)

    def _restore_sigterm(self) -> None:
        if self._old_term is not None:
            signal.signal(signal.SIGTERM, self._old_term)
            self._old_term = None

    def _drop_trace(self) -> None:
        if self.trace_dir is not None:
            shutil.rmtree(self.trace_dir, ignore_errors=True)
            self.trace_dir = None

    def abandon(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError, ValueError, subprocess.SubprocessError):
            self.proc.communicate(timeout=60)
        self._join_progress()
        self._drop_trace()
        self._restore_sigterm()


def start_verify(python: str, *, interpret: bool | None = None, quick: bool = False, profile: str | None = None,
                 cold: bool = False, reuse: bool = True, inject_fault: str | None = None,
                 timeout: float = 600, seed: int | None = None, on_progress: Any = None) -> StartedVerify:
    """Start the runner under `python` with what the command line says (mode, sizes, caches), before the lock and the
    host are read: its `import torch` (seconds) then overlaps tritonlock's own work, and the lock's expectations follow
    on its stdin (StartedVerify.finish). `on_progress(event)`: called, from a thread of its own, with each progress
    event the runner sends as it goes (a dict: {"phase": "importing torch", "state": "start"}, ...)."""
    if profile is not None:  # by the rule every writer follows, before anything runs
        from tritonlock._files import check_writes

        check_writes([Path(profile)], what="verify --profile", force=False, force_flag=None)
    # a bare name ("python3") is looked up on PATH, like the shell would
    found = shutil.which(python) if os.sep not in python else python
    exe = Path(found or python)
    if found is None or not exe.exists():
        raise VerifyError(f"verify: the environment's interpreter {python} does not exist; "
                          "create the environment first (`tritonlock sync`)")
    if not exe.is_absolute() and ".." not in exe.parts[sum(1 for _ in itertools.takewhile("..".__eq__, exe.parts)):]:
        # The runner reports its sys.executable: from a subdirectory that read "/p/src/../.venv/bin/python".
        # ".."s that lead a relative path are exact against the (physical) working directory; nothing is resolved
        # past them, so a symlinked venv interpreter stays the venv's.
        exe = Path(os.path.normpath(os.path.join(os.getcwd(), exe)))
    # The runner (torch) writes the trace into a private directory; it is put in place from there by tritonlock's
    # own writer (never over a device, pipe or link, nor over a file tritonlock did not write).
    trace_dir = Path(tempfile.mkdtemp(prefix="tritonlock-profile-")) if profile else None
    args = {
        "interpret": interpret, "quick": quick, "profile": str(trace_dir / "trace.json") if trace_dir else None,
        "cold": cold,
        # an older runner has no such option: sent only when it asks for something
        **({} if reuse else {"no_reuse": True}),
        **({} if seed is None else {"seed": seed}),
        "inject_fault": inject_fault, "late_args": True,
    }
    env = dict(os.environ)
    # TRITON_INTERPRET is read when triton is imported: the interpreter choice must be in the
    # environment from the start (the runner also sets it itself when it picks the interpreter).
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    read_fd = write_fd = None
    if on_progress is not None:
        read_fd, write_fd = os.pipe()
        args["progress_fd"] = write_fd
    # -I: judge the venv by itself, without PYTHONPATH, the user site or the working directory.
    cmd = [str(exe), "-I", str(RUNNER), "--json-args", json.dumps(args)]
    started = time.perf_counter()
    try:
        # its own process group: on a timeout the whole group goes, including the processes the runner spawns
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, start_new_session=True,
                                pass_fds=(write_fd,) if write_fd is not None else ())
    except OSError as e:
        if trace_dir is not None:
            shutil.rmtree(trace_dir, ignore_errors=True)
        for fd in (read_fd, write_fd):
            if fd is not None:
                os.close(fd)
        raise VerifyError(f"verify: cannot start {cmd[0]}: {e.strerror or e}") from None
    if write_fd is not None:
        os.close(write_fd)  # the runner holds the only writing end: the pipe ends when it does
    return StartedVerify(python, proc, started, timeout, trace_dir=trace_dir, profile=profile, progress=read_fd,
                         on_progress=on_progress)


def _read_progress(fd: int, on_progress: Any) -> None:
    """The runner's progress events, one JSON object a line, handed on as they arrive; anything else is skipped (a
    watcher never fails verify)."""
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        buf = b""
        while True:
            try:
                chunk = pipe.read(4096)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    with contextlib.suppress(Exception):
                        on_progress(event)


NATIVES_MODULES = tuple(f"tritonlock.{m}" for m in (  # what _with_natives imports (a test checks the list)
    "_archs", "compat.pkgbuilds", "native.elf", "native.elfdyn", "native.gpucode", "native.rangefile", "native.rule",
    "verify.natives", "verify.runner.tlverify.imports"))


def _prepare_natives() -> threading.Thread:
    """Import what `_with_natives` needs (a few tenths of a second) in a thread while the runner works, not after its
    report. A failure here is left for `_with_natives` to meet again."""
    import importlib

    def run() -> None:
        with contextlib.suppress(Exception):
            for name in NATIVES_MODULES:
                importlib.import_module(name)
            from tritonlock.compat.pkgbuilds import optional_gpu_code

            optional_gpu_code()

    thread = threading.Thread(target=run, name="verify-natives-prepare", daemon=True)
    thread.start()
    return thread


def _with_natives(result: VerifyResult, doc: Any, lock_facts: Any) -> VerifyResult:
    """The runner's import rows as checks, explained with the lock's facts, and the installed GPU code checked
    against the GPUs the runner saw."""
    import dataclasses

    from tritonlock.verify import natives

    rows = natives.parse_rows(doc.get("imports") if isinstance(doc, dict) else None)
    if not rows:
        return result
    site = [s for s in doc.get("site", []) if isinstance(s, str)] if isinstance(doc.get("site"), list) else []
    found = natives.import_checks(rows, torch=result.torch, lock=lock_facts, site=site)
    found += natives.gpu_code_checks(site, rows, result.gpus)
    checks = result.checks + tuple(Check(name=n, ok=ok, detail=d, fix=f) for n, ok, d, f in found)
    return dataclasses.replace(result, checks=checks, ok=result.ok and all(c.ok for c in checks))


def _place_trace(made: Path, profile: Path, stdout: str) -> str:
    """Put the runner's trace at --profile, marked as tritonlock's (a "tritonlock" key in the JSON object) so that a
    later run may replace it; the runner's report then names that path."""
    from tritonlock._files import read_bytes, write_file

    try:
        data = read_bytes(made, limit=4 * 1024**3)
    except OSError:
        return stdout  # no trace (the profile check failed and says so)
    head = data.lstrip()
    if head.startswith(b"{") and not head[1:].lstrip().startswith(b"}"):
        data = b'{"tritonlock": {"generated-by": "tritonlock verify --profile"}, ' + head[1:]
    write_file(profile, data, what="verify --profile", force=False, force_flag=None)
    return stdout.replace(json.dumps(str(made))[1:-1], json.dumps(str(profile.absolute()))[1:-1])


def _ptxas_floors() -> dict[str, str] | None:
    from tritonlock.errors import TritonlockError
    from tritonlock.compat.matrix import load_matrix

    try:
        m = load_matrix()
    except TritonlockError:
        return None  # verify still runs; the ptxas check then only reports what Triton uses
    windows = os.name == "nt"
    return {str(mc.major): d for mc in m.minor_compat if (d := mc.windows_driver if windows else mc.linux_driver)}


def _communicate(proc: subprocess.Popen[str], stdin: str, timeout: float) -> tuple[str, str]:
    """The runner's stdout and stderr once its pipes end (its exit is not waited for: _proc.read_to_end)."""
    def kill() -> None:
        with contextlib.suppress(ProcessLookupError):  # the group may be gone already
            os.killpg(proc.pid, signal.SIGKILL)

    try:
        stdout, stderr, late = read_to_end(proc, stdin, timeout, kill)
    except KeyboardInterrupt:
        stop_group(proc)
        raise
    if late:
        raise VerifyError(f"verify: the runner did not finish within {timeout:g} s{_stderr_words(stderr)}")
    return stdout, stderr


def _stderr_words(stderr: str | None) -> str:
    tail = (stderr or "").strip()
    if not tail:
        return ""
    if len(tail) > _STDERR_TAIL:
        tail = "..." + tail[-_STDERR_TAIL:]
    return f"; its stderr ends with:\n{tail}"


# ---------------------------------------------------------------------------------------------
# Parsing the runner's JSON (the boundary: nothing past here sees a dict)


def _parse(doc: object, elapsed: float,
           host_link: Callable[[], tuple[str, str] | None] | None = None) -> VerifyResult:
    d = _obj(doc, "report")
    schema = d.get("schema")
    if schema != SCHEMA:
        raise VerifyError(f"verify: the runner answered report schema {schema!r}, expected {SCHEMA}")
    checks = tuple(
        Check(name=_str(c, "name", f"checks[{i}]"), ok=_bool(c, "ok", f"checks[{i}]"),
              detail=_str(c, "detail", f"checks[{i}]"), fix=_opt_str(c, "fix", f"checks[{i}]"))
        for i, c in enumerate(_objs(d, "checks"))
    )
    kernels = tuple(
        KernelResult(
            kernel=_str(k, "kernel", f"kernels[{i}]"), device=_str(k, "device", f"kernels[{i}]"),
            dtype=_str(k, "dtype", f"kernels[{i}]"), ok=_bool(k, "ok", f"kernels[{i}]"),
            max_err=_opt_num(k, "max_err", f"kernels[{i}]"), metric=_opt_str(k, "metric", f"kernels[{i}]"),
            value=_opt_num(k, "value", f"kernels[{i}]"),
            torch_value=_opt_num(k, "torch_value", f"kernels[{i}]"),
            ratio=_opt_num(k, "ratio", f"kernels[{i}]"), detail=_str(k, "detail", f"kernels[{i}]"),
            mode=_opt_str(k, "mode", f"kernels[{i}]"),
            compile_seconds=_opt_num(k, "compile_seconds", f"kernels[{i}]"),
            generated=tuple(_str_list(k, "generated")) if "generated" in k else (),
            reused=_opt_str(k, "reused", f"kernels[{i}]"),
            message_bytes=None if k.get("message_bytes") is None else int(
                _opt_num(k, "message_bytes", f"kernels[{i}]") or 0),
        )
        for i, k in enumerate(_objs(d, "kernels"))
    )
    mode = _str(d, "mode", "report")
    if mode not in ("gpu", "interpreter"):
        raise VerifyError(f"verify: the runner answered an unknown mode {mode!r}")
    gpus = tuple(_str_list(d, "gpus"))
    facts, nvml_error = speed.parse_facts(d.get("gpu_health"))
    kernels = _judged(kernels, gpus, facts, host_link)
    return VerifyResult(
        # recomputed rather than trusted, so a report can never say ok over a failed row
        ok=_bool(d, "ok", "report") and all(c.ok for c in checks) and all(k.ok for k in kernels),
        mode=mode, python=_str(d, "python", "report"), torch=_opt_str(d, "torch", "report"),
        triton=_opt_str(d, "triton", "report"), checks=checks, kernels=kernels,
        jit_seconds=_opt_num(d, "jit_seconds", "report"), total_seconds=elapsed,
        gpus=gpus, notes=tuple(_str_list(d, "notes")),
        compile_seconds=_opt_num(d, "compile_seconds", "report"),
        caches=tuple(sorted(_caches(d).items())), gpu_health=facts,
        gpu_health_error=nvml_error if mode == "gpu" else None,
    )


def _judged(kernels: tuple[KernelResult, ...], gpus: tuple[str, ...], facts: tuple[GpuFacts, ...],
            host_link: Callable[[], tuple[str, str] | None] | None = None) -> tuple[KernelResult, ...]:
    """Each timed row with its speed verdict against compat/bands.toml."""
    import dataclasses

    if not any(k.ratio is not None or k.value is not None for k in kernels):
        return kernels
    bands = speed.load_bands()
    names = speed.gpu_names(gpus)
    out = []
    for k in kernels:
        dev = k.device.split(" ")[0]
        if k.kernel == "nccl_all_reduce":
            verdict = speed.judge_allreduce(dev, k.value, k.message_bytes, names, bands, facts,
                                             host_link) if k.ok else None
            out.append(dataclasses.replace(k, speed=verdict) if verdict is not None else k)
            continue
        verdict = speed.judge(k.kernel, k.dtype, dev, k.value, k.ratio, k.metric, names.get(dev), bands,
                              speed.facts_for(dev, facts)) if k.ok else None
        out.append(dataclasses.replace(k, speed=verdict) if verdict is not None else k)
    return tuple(out)


def _caches(d: dict[str, Any]) -> dict[str, str]:
    v = d.get("caches", {})
    if not isinstance(v, dict) or not all(isinstance(k, str) and isinstance(x, str) for k, x in v.items()):
        raise _bad("caches", "is not an object of strings")
    return dict(v)


def _bad(path: str, what: str) -> VerifyError:
    return VerifyError(f"verify: the runner's report is malformed: {path} {what}")


def _obj(v: object, path: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _bad(path, "is not an object")
    return v


def _objs(d: dict[str, Any], key: str) -> list[dict[str, Any]]:
    v = d.get(key)
    if not isinstance(v, list):
        raise _bad(key, "is not a list")
    return [_obj(x, f"{key}[{i}]") for i, x in enumerate(v)]


def _str(d: dict[str, Any], key: str, path: str) -> str:
    v = d.get(key)
    if not isinstance(v, str):
        raise _bad(f"{path}.{key}", "is not a string")
    return v


def _opt_str(d: dict[str, Any], key: str, path: str) -> str | None:
    return None if d.get(key) is None else _str(d, key, path)


def _bool(d: dict[str, Any], key: str, path: str) -> bool:
    v = d.get(key)
    if not isinstance(v, bool):
        raise _bad(f"{path}.{key}", "is not true or false")
    return v


def _opt_num(d: dict[str, Any], key: str, path: str) -> float | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _bad(f"{path}.{key}", "is not a finite number")
    return float(v)


def _str_list(d: dict[str, Any], key: str) -> list[str]:
    v = d.get(key)
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _bad(key, "is not a list of strings")
    return list(v)
