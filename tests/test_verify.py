"""verify: the runner inside a real torch + triton venv (interpreter mode on this CPU host), and its API."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import json
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tritonlock.errors import VerifyError
from tritonlock.verify import RUNNER, VerifyResult, run_verify
from tritonlock.verify.report import format_report

TORCH = "2.13.0"
TRITON_KERNELS = [("vector_add", "fp32"), ("matmul", "fp16"), ("matmul", "bf16"), ("matmul", "fp32"),
                  ("softmax", "fp32")] + [
    (f"attention d{d}{c}", dt) for dt in ("fp16", "bf16") for d in (64, 128) for c in ("", " causal")]
# the interpreter runs every Triton kernel; FP8 needs a GPU (skipped, with why); torch.compile runs Inductor's CPU backend
KERNELS = TRITON_KERNELS + [("fp8_matmul", "e4m3"), ("torch_compile", "fp32")]
REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------
# Fixtures: one real venv (CPU torch + triton + numpy), cached across sessions by version


@pytest.fixture(scope="session")
def venv_python(real_torch_python: str) -> str:
    return real_torch_python


@pytest.fixture(scope="session")
def interpreter_run(venv_python: str, real_torch_backend: str, real_triton: str) -> VerifyResult:
    # reuse=False: the venv is kept between test sessions, and this run must compile (test_verify_memo.py covers reuse)
    return run_verify(venv_python, backend=real_torch_backend, triton=real_triton, reuse=False)


def _other_backend(real_torch_backend: str) -> str:
    """A CUDA backend the real torch venv's build is not (cu126, or cu128 where the venv holds a cu126 build)."""
    return "cu128" if real_torch_backend == "cu126" else "cu126"


@pytest.fixture(scope="session")
def mismatch_run(real_torch_python: str, real_torch_backend: str) -> VerifyResult:
    """The venv's torch where the lock wants another CUDA build, a GPU on driver 580.95.05 (which this machine has
    not), and triton 3.5.0: a CPU build (PyTorch's CPU index) or a CUDA build (the default index's) alike."""
    return run_verify(real_torch_python, backend=_other_backend(real_torch_backend), triton="3.5.0", expect_gpu=True,
                      driver="580.95.05", quick=True)


def _check(result: VerifyResult, name: str) -> Any:
    found = [c for c in result.checks if c.name == name]
    assert len(found) == 1, [c.name for c in result.checks]
    return found[0]


def _runner_module(name: str = "envchecks") -> ModuleType:
    """One of the runner's modules imported in this process (envchecks, common, harness and report import nothing
    but the stdlib at load)."""
    if str(RUNNER) not in sys.path:
        sys.path.insert(0, str(RUNNER))
    return importlib.import_module(f"tlverify.{name}")


# ---------------------------------------------------------------------------------------------
# Interpreter mode with real torch + triton


@pytest.mark.slow
def test_interpreter_mode_passes_every_kernel(interpreter_run: VerifyResult, real_triton: str) -> None:
    r = interpreter_run
    assert r.ok, format_report(r)
    assert r.mode == "interpreter"
    assert r.torch is not None and r.torch.startswith(TORCH)
    assert r.triton == real_triton
    assert [(k.kernel, k.dtype) for k in r.kernels] == KERNELS
    triton_rows = r.kernels[:len(TRITON_KERNELS)]
    assert all(k.ok and k.device == "cpu (interpreter)" and k.mode == "interpreter" for k in triton_rows)
    assert all(k.max_err is not None for k in triton_rows)
    fp8, compiled = r.kernels[len(TRITON_KERNELS):]
    assert (fp8.ok, fp8.mode, fp8.max_err) == (True, "skipped", None)
    assert fp8.detail.startswith("skipped: no GPU: FP8 tensor cores need a GPU of compute capability 8.9")
    assert (compiled.ok, compiled.device, compiled.mode) == (True, "cpu", "inductor-cpp"), compiled.detail
    assert compiled.max_err is not None and compiled.compile_seconds is not None
    assert any(g.startswith("cpp_fused_") and g.endswith("(cpp)") for g in compiled.generated), compiled.generated
    assert "Triton's interpreter was not used" in compiled.detail
    # no timing on the CPU: it would not mean anything
    assert all(k.metric is None and k.value is None and k.ratio is None for k in r.kernels)
    assert r.jit_seconds is None
    assert "GPU not tested: ran the kernels in the Triton interpreter on the CPU" in r.notes
    assert r.gpus == ()
    assert r.total_seconds > 0  # (measured, not bounded: how long is bench/'s question)


@pytest.mark.slow
def test_interpreter_mode_checks(interpreter_run: VerifyResult, real_torch_backend: str, real_triton: str) -> None:
    r = interpreter_run
    assert [c.name for c in r.checks if not c.name.startswith("import ")] == [
        "torch imports", "torch CUDA build", "CUDA available", "numpy (Triton interpreter)", "triton imports",
        "triton version"]
    # and every installed distribution with native code (numpy's extension modules at least) imports
    imports = [c for c in r.checks if c.name.startswith("import ")]
    assert "import numpy" in {c.name for c in imports} and all(c.ok for c in imports)
    assert _check(r, "torch CUDA build").detail.endswith(f"as backend {real_torch_backend} expects")
    assert _check(r, "triton version").detail == f"triton {real_triton}, as the lock pins"
    assert all(c.fix is None for c in r.checks)


@pytest.mark.slow
def test_missing_numpy_is_named_as_the_cause(no_numpy_python: str, real_torch_backend: str, real_triton: str) -> None:
    """Triton's interpreter imports numpy: without it, verify names numpy (not "triton is not installed"), gives a
    fix that locks it, and claims no kernel ran."""
    r = run_verify(no_numpy_python, backend=real_torch_backend, triton=real_triton)
    assert not r.ok and r.kernels == ()
    assert [c.name for c in r.checks if not c.ok] == ["numpy (Triton interpreter)"]
    c = _check(r, "numpy (Triton interpreter)")
    assert c.detail == ("no GPU to run Triton kernels on, so they run in Triton's interpreter on the CPU, which "
                        "needs numpy — this environment lacks it, so no kernel ran")
    assert c.fix is not None and c.fix.startswith("lock numpy and install it: `tritonlock resolve --upgrade`")
    assert not any("ran the kernels" in n for n in r.notes)
    text = format_report(r)
    assert text.splitlines()[0].startswith("verify: no kernel ran;") and "not installed" not in text
    assert text.splitlines()[0].endswith(f"triton {real_triton}")  # installed, even though not imported


def test_import_error_names_the_missing_dependency_not_the_package() -> None:
    runner = _runner_module()
    detail, fix = runner._explain_import_error("triton", "No module named 'numpy'", "numpy")
    assert detail == ("triton is installed, but importing it needs the module 'numpy', which this environment "
                      "lacks (No module named 'numpy')")
    assert "'numpy'" in fix
    detail, _ = runner._explain_import_error("triton", "No module named 'triton'", "triton")
    assert detail == "triton is not installed in this environment (No module named 'triton')"


def _bare_python(tmp_path: Path) -> str:
    """A Python of its own with nothing installed (whatever this machine's interpreters hold: torch, say)."""
    from tritonlock._subprocess import uv_bin

    venv = tmp_path / "bare-venv"
    subprocess.run([uv_bin(), "venv", "-q", "--no-config", "--python", sys.executable, str(venv)], check=True,
                   capture_output=True, env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"})
    return str(venv / "bin" / "python")


def test_the_report_names_the_interpreter_without_dot_dots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a subdirectory of the project, the venv is `../../.venv`: the report said
    "python 3.11.7 (/p/src/deep/../../.venv/bin/python)" — now the plain path."""
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    rel = os.path.relpath(_bare_python(tmp_path))  # "../../…/bin/python": every ".." leads
    assert rel.startswith("..")
    result = run_verify(rel, quick=True)  # this interpreter has no torch: the report still names it
    assert result.python.endswith(f"({os.path.normpath(os.path.join(os.getcwd(), rel))})")
    assert ".." not in result.python


@pytest.mark.slow
def test_report_reads_plainly(interpreter_run: VerifyResult) -> None:
    text = format_report(interpreter_run)
    lines = text.splitlines()
    assert lines[0].startswith("verify: Triton interpreter on the CPU; python ")
    assert any(re.fullmatch(r"  kernel +dtype +device +mode +ok +max err +triton +torch +ratio +compile s", line)
               for line in lines)
    assert any(re.match(r"  matmul +bf16 +cpu \(interpreter\) +interpreter +ok ", line) for line in lines)
    assert any(re.match(r"  attention d128 causal +fp16 +cpu \(interpreter\) +interpreter +ok ", line) for line in lines)
    assert any(re.match(r"  torch_compile +fp32 +cpu +inductor-cpp +ok ", line) for line in lines)
    assert any(line.startswith("  skip  fp8_matmul on cpu (interpreter): no GPU") for line in lines)
    assert "note: GPU not tested: ran the kernels in the Triton interpreter on the CPU" in lines
    assert lines[-1] == "RESULT: OK"


@pytest.mark.slow
def test_json_shape(interpreter_run: VerifyResult) -> None:
    doc = interpreter_run.to_json()
    assert json.loads(json.dumps(doc)) == doc  # plain JSON: no NaN, no tuples, no objects
    # schema 1's fields, in their order, plus the ones added since (never removed: older readers keep working)
    assert list(doc) == ["schema", "ok", "mode", "python", "torch", "triton", "checks", "kernels",
                         "jit_seconds", "compile_seconds", "caches", "total_seconds", "gpus", "notes", "gpu_health"]
    assert doc["gpu_health"] is None  # no GPU run: nothing NVML said
    assert doc["schema"] == 1 and doc["ok"] is True and doc["mode"] == "interpreter"
    assert set(doc["checks"][0]) == {"name", "ok", "detail", "fix"}  # type: ignore[index]
    assert list(doc["kernels"][0]) == ["kernel", "device", "dtype", "ok", "max_err", "metric",  # type: ignore[index]
                                       "value", "torch_value", "ratio", "detail", "mode", "compile_seconds",
                                       "speed"]
    assert doc["kernels"][0]["speed"] is None  # type: ignore[index]  # not timed in the interpreter: no verdict


@pytest.mark.slow
def test_injected_fault_fails_the_named_kernel(venv_python: str) -> None:
    r = run_verify(venv_python, quick=True, inject_fault="vector_add")
    assert not r.ok
    bad = [k for k in r.kernels if not k.ok]
    assert [(k.kernel, k.dtype) for k in bad] == [("vector_add", "fp32")]
    detail = bad[0].detail
    assert detail.startswith("WRONG RESULTS: fault injected on purpose (--inject-fault vector_add); ")
    # the kernel skipped its last block, so the NaN poison is still there
    assert "outputs are still NaN (the poison written before the run)" in detail
    assert bad[0].max_err is None
    assert all(c.ok for c in r.checks)
    text = format_report(r)
    assert "  FAIL  vector_add fp32 on cpu (interpreter): WRONG RESULTS: " in text
    assert text.splitlines()[-1] == "RESULT: FAILED (1 problem)"


@pytest.mark.slow
def test_injected_matmul_fault_fails_every_dtype(venv_python: str) -> None:
    r = run_verify(venv_python, quick=True, inject_fault="matmul")
    assert [(k.kernel, k.dtype) for k in r.kernels if not k.ok] == KERNELS[1:4]


@pytest.mark.slow
def test_a_torch_that_cannot_use_the_gpu_where_one_is_expected_fails_plainly(
        mismatch_run: VerifyResult, real_torch_backend: str, real_torch_version: str) -> None:
    """Where the host has a driver, torch.cuda.is_available() being False is a failure that says why: a CPU build
    can never use a GPU; a CUDA build could not initialise CUDA (here: no GPU, no driver library)."""
    c = _check(mismatch_run, "CUDA available")
    assert not c.ok and not mismatch_run.ok
    head = "torch.cuda.is_available() is False although this host has NVIDIA driver 580.95.05: "
    if real_torch_backend == "cpu":
        assert c.detail == (f"{head}this is a CPU-only torch ({mismatch_run.torch}, torch.version.cuda "
                            "is None), so it can never use the GPU")
        assert c.fix is not None and "tritonlock sync" in c.fix
        # it still ran what it could, in the interpreter, and says so
        assert mismatch_run.mode == "interpreter"
        assert "GPU not tested: ran the kernels in the Triton interpreter on the CPU" in mismatch_run.notes
    else:
        cuda = f"{real_torch_backend[2:-1]}.{real_torch_backend[-1]}"
        assert c.detail.startswith(f"{head}torch {real_torch_version} is built for CUDA {cuda} and could not "
                                   "initialise CUDA: "), c.detail
        assert mismatch_run.torch == real_torch_version


@pytest.mark.slow
def test_backend_mismatch_fails(mismatch_run: VerifyResult, real_torch_backend: str,
                                real_torch_version: str) -> None:
    want = _other_backend(real_torch_backend)
    c = _check(mismatch_run, "torch CUDA build")
    assert not c.ok
    assert c.detail.startswith(f"the lock's backend is {want} (CUDA {want[2:-1]}.{want[-1]}) but torch "
                               f"{real_torch_version} ")
    if real_torch_backend == "cpu":
        assert "is built for CPU only (torch.version.cuda is None)" in c.detail
    else:
        cuda = f"{real_torch_backend[2:-1]}.{real_torch_backend[-1]}"
        assert f"is built for CUDA {cuda} (torch.version.cuda is '{cuda}')" in c.detail, c.detail
    assert c.fix == f"reinstall torch from the {want} index: `tritonlock sync`"


@pytest.mark.slow
def test_wrong_triton_pin_fails(mismatch_run: VerifyResult, real_triton: str, real_torch_python: str,
                                real_torch_backend: str) -> None:
    # (a CUDA build on this GPU-less machine asked for the GPU stops before triton; asked for nothing, it runs the
    # interpreter like the CPU build does)
    run = mismatch_run if real_torch_backend == "cpu" else run_verify(
        real_torch_python, backend=real_torch_backend, triton="3.5.0", quick=True)
    c = _check(run, "triton version")
    assert not c.ok
    assert c.detail.startswith(f"triton is {real_triton} but the lock pins triton==3.5.0: ")
    assert c.fix == "install triton==3.5.0 from the lock: `tritonlock sync`"
    text = format_report(run)
    assert f"  FAIL  triton version: triton is {real_triton} but the lock pins triton==3.5.0" in text
    assert "        fix: install triton==3.5.0 from the lock: `tritonlock sync`" in text
    assert text.splitlines()[-1] == ("RESULT: FAILED (3 problems)" if real_torch_backend == "cpu" else
                                     "RESULT: FAILED (1 problem)")


@pytest.mark.slow
def test_gpu_mode_demanded_without_cuda_runs_nothing(venv_python: str) -> None:
    r = run_verify(venv_python, interpret=False, quick=True)
    assert not r.ok
    assert r.kernels == ()
    c = _check(r, "GPU mode")
    assert c.detail.startswith("GPU mode was asked for (no interpreter) but CUDA is not available")


@pytest.mark.slow
def test_runner_never_imports_tritonlock(venv_python: str, tmp_path: Path) -> None:
    # tritonlock is importable on this PYTHONPATH, so only the runner's own discipline keeps it out
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([venv_python, "-X", "importtime", str(RUNNER), "--quick"],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert json.loads(proc.stdout)["ok"] is True, proc.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "torch" in imported and "triton" in imported
    assert not [m for m in imported if m.split(".")[0] == "tritonlock"]


@pytest.mark.slow
def test_allreduce_plumbing_and_profile(venv_python: str, tmp_path: Path) -> None:
    # The NCCL path needs 2 GPUs; the same spawn + file:// rendezvous + per-rank result files run
    # here with gloo over CPU processes, through the runner's test hook.
    trace = tmp_path / "trace.json"
    proc = subprocess.run([venv_python, "-I", str(RUNNER), "--quick", "--allreduce-cpu", "2",
                           "--profile", str(trace)], capture_output=True, text=True)
    doc = json.loads(proc.stdout)
    assert doc["ok"] is True, proc.stderr[-2000:]
    row = doc["kernels"][-1]
    assert (row["kernel"], row["device"], row["ok"], row["max_err"], row["metric"]) == (
        "gloo_all_reduce", "cpu x2", True, 0.0, "GB/s")
    assert row["detail"].startswith("2 processes, 0.25 MiB all-reduce (gloo) gave the right sum")
    assert "traceEvents" in json.loads(trace.read_text())
    assert f"profile: chrome trace of the kernels written to {trace}" in doc["notes"]
    assert proc.returncode == 0



def _phases(doc: dict[str, Any]) -> list[str]:
    """The runner's phases in the order they ended (its "time:" note)."""
    note = next(n for n in doc["notes"] if n.startswith("time: "))
    return [re.sub(r" [0-9.]+ s$", "", part) for part in note[len("time: "):].split(", ")]


@pytest.mark.slow
def test_allreduce_set_up_starts_after_torch_import_and_overlaps_the_kernels(venv_python: str) -> None:
    # ordered by the runner's own phase events, never by time: the processes are spawned once torch is imported
    # here (nothing slows that import), before any kernel runs; the all-reduce itself comes after the last kernel
    proc = subprocess.run([venv_python, "-I", str(RUNNER), "--quick", "--allreduce-cpu", "2"],
                          capture_output=True, text=True)
    doc = json.loads(proc.stdout)
    assert doc["ok"] is True, proc.stderr[-2000:]
    phases = _phases(doc)
    start, waited = phases.index("gloo all-reduce start"), phases.index("gloo all-reduce (waited for)")
    kernels = [phases.index(f) for f in ("vector_add", "matmul", "softmax", "attention", "fp8_matmul")]
    assert phases.index("import torch") < start < phases.index("CUDA init") < min(kernels)
    assert max(kernels) < waited
    row = doc["kernels"][-1]
    assert (row["gpus"], row["message_bytes"]) == (2, 1 << 18)
    assert isinstance(row["setup_overlapped"], bool) and row["setup_seconds"] > 0
    assert row["value"] > 0 and "set-up " in row["detail"]
    # the note of a GPU run without NCCL never appears in an interpreter run
    assert not [n for n in doc["notes"] if n.startswith("NCCL all-reduce skipped")]


@pytest.mark.slow
@pytest.mark.parametrize("cores", [7, 8])
def test_the_package_imports_start_beside_torchs_import_only_with_cores_to_spare(venv_python: str, cores: int,
                                                                                 tmp_path: Path) -> None:
    """From 8 cores (the GPU machines) the import checks' processes start before the runner's own `import torch`
    and the report says so; below, after it (two cores: a second `import torch` beside it doubled its time). The
    runner is run as tritonlock runs it, with os.cpu_count() answering `cores`; its import rows are there either way."""
    code = (f"import os, runpy, sys; os.cpu_count = lambda: {cores}; sys.argv = [{str(RUNNER)!r}, '--quick']; "
            f"runpy.run_path({str(RUNNER)!r}, run_name='__main__')")
    proc = subprocess.run([venv_python, "-I", "-c", code], capture_output=True, text=True, timeout=600)
    doc = json.loads(proc.stdout)
    assert doc["ok"] is True, proc.stderr[-2000:]
    said = [n for n in doc["notes"] if n.startswith("imports: the packages' import checks started beside")]
    assert said == ([f"imports: the packages' import checks started beside `import torch` ({cores} cores)"]
                    if cores >= 8 else []), doc["notes"]
    assert any(row["dist"] == "numpy" and row["ok"] for row in doc["imports"]), doc["imports"]


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "words"), [
    ("setup", ["rank 1: RuntimeError: injected set-up failure (test hook)"]),
    ("crash", ["rank 1: its process exited with code 3 without a result", "rank 0: stopped: another rank failed"]),
    ("sum", ["rank 0: wrong sum (off by 0.5); rank 1: wrong sum (off by 0.5)"]),  # (a sum is every rank's)
])
def test_allreduce_failure_is_on_its_row_and_the_kernels_still_report(venv_python: str, fault: str,
                                                                      words: list[str]) -> None:
    # a rank that fails its set-up, dies without a word (its peer would wait in the rendezvous for NCCL's time-out:
    # it is stopped) or reduces a wrong sum: the all-reduce's row fails and says which rank and why; every kernel row
    # is still there and passes; the run ends (no hang) and fails
    proc = subprocess.run([venv_python, "-I", str(RUNNER), "--quick", "--allreduce-cpu", "2", "--allreduce-fault",
                           fault], capture_output=True, text=True, timeout=300)
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False and proc.returncode == 1
    row = doc["kernels"][-1]
    assert (row["kernel"], row["device"], row["ok"], row["value"]) == ("gloo_all_reduce", "cpu x2", False, None)
    assert row["detail"].startswith("all-reduce over 2 processes failed: ")
    for w in words:
        assert w in row["detail"]
    others = doc["kernels"][:-1]
    assert {k["kernel"] for k in others} >= {"vector_add", "matmul", "softmax"} and all(k["ok"] for k in others)
    assert all(c["ok"] for c in doc["checks"])


# ---------------------------------------------------------------------------------------------
# The API around the runner (fake interpreters: no torch needed)


def _fake_python(tmp_path: Path, body: str) -> str:
    exe = tmp_path / "python"
    exe.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


def test_missing_interpreter_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "bin" / "python"
    with pytest.raises(VerifyError) as e:
        run_verify(str(missing))
    assert str(e.value) == (f"verify: the environment's interpreter {missing} does not exist; "
                            "create the environment first (`tritonlock sync`)")


def test_bare_interpreter_name_is_looked_up_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(_doc()))
    _fake_python(tmp_path, f"cat '{doc}'\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert run_verify("python").ok
    with pytest.raises(VerifyError, match="interpreter no-such-python3 does not exist"):
        run_verify("no-such-python3")


def test_runner_without_json_is_an_error_with_stderr_tail(tmp_path: Path) -> None:
    python = _fake_python(tmp_path, """\
        echo 'Fatal Python error: init_import_site' >&2
        echo 'not json'
        exit 3
    """)
    with pytest.raises(VerifyError) as e:
        run_verify(python)
    assert str(e.value) == (f"verify: the runner under {python} exited with code 3 without a report; "
                            "its stderr ends with:\nFatal Python error: init_import_site")


def test_the_report_is_read_once_the_runner_has_said_it_not_when_its_process_is_gone(tmp_path: Path) -> None:
    """The runner writes its report and ends with os._exit; the kernel's teardown of its CUDA context comes after its
    pipes close (0.1 s on an H100) and is no part of the answer. A runner that closes its output after the report
    and then never ends: verify answers with the report while it still runs (its being alive is the proof, not a
    clock; before, verify waited for it until the timeout)."""
    doc, pid = tmp_path / "doc.json", tmp_path / "pid"
    doc.write_text(json.dumps(_doc()))
    python = _fake_python(tmp_path, f"""\
        cat '{doc}'
        echo $$ > '{pid}'
        exec >&- 2>&-
        exec sleep 100000
    """)
    try:
        r = run_verify(python, timeout=120)
        assert r.ok and r.kernels[0].value == 4260.0
        state = Path(f"/proc/{int(pid.read_text())}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state not in ("Z", "X"), state  # still running: its exit was not waited for
    finally:
        if pid.exists():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pid.read_text()), signal.SIGKILL)


def test_the_runner_closes_the_pipes_tritonlock_reads_before_it_exits(tmp_path: Path) -> None:
    """The runner's own ending: its stdout, stderr and progress pipe are closed before os._exit — the kernel frees an
    exiting process's memory (CUDA's mappings) before it closes its files, and verify reads each pipe to its end. The
    runner's __main__.py as shipped, beside a harness that records which of those are still open when it exits."""
    folder = tmp_path / "runner"
    (folder / "tlverify").mkdir(parents=True)
    (folder / "__main__.py").write_text((RUNNER / "__main__.py").read_text())
    (folder / "tlverify" / "__init__.py").write_text("")
    record = tmp_path / "open-at-exit.json"
    (folder / "tlverify" / "harness.py").write_text(textwrap.dedent(f"""\
        import json, os
        PIPES = []
        _exit = os._exit

        def main():
            r, w = os.pipe()
            PIPES.append(w)

            def at_exit(code):
                def is_open(fd):
                    try:
                        os.fstat(fd)
                        return True
                    except OSError:
                        return False
                seen = {{"stdout": is_open(1), "stderr": is_open(2), "progress": is_open(w), "read end": is_open(r),
                        "code": code}}  # (before the file below is opened: it may take a number closed just now)
                with open({str(record)!r}, "w") as f:
                    json.dump(seen, f)
                _exit(code)

            os._exit = at_exit
            print("{{}}")
            return 3
    """))
    proc = subprocess.run([sys.executable, "-I", str(folder)], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (3, "{}\n"), proc.stderr
    assert json.loads(record.read_text()) == {"stdout": False, "stderr": False, "progress": False,
                                              "read end": True, "code": 3}


def test_runner_timeout_is_an_error(tmp_path: Path) -> None:
    """A runner that never ends (nor does what it started) is stopped at the timeout, with everything it started:
    they would never end on their own, so their being gone is the proof, not a clock."""
    pids = tmp_path / "pids"
    python = _fake_python(tmp_path, f"""\
        echo 'compiling...' >&2
        sleep 100000 &
        echo "$$ $!" > {pids}
        exec sleep 100000
    """)
    with pytest.raises(VerifyError) as e:
        run_verify(python, timeout=3)  # (long enough for the script to write its pids on a busy machine)
    def alive(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        return state not in ("Z", "X")  # killed (a zombie waits only for its new parent to reap it)

    # a killed process closes its files (the pipes' EOF) a moment before it shows as dead: wait for that to land —
    # they would never end on their own, so this is no clock on verify
    started = list(map(int, pids.read_text().split()))
    deadline = time.monotonic() + 120
    while any(alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in started if alive(p)]
    assert str(e.value) == ("verify: the runner did not finish within 3 s; its stderr ends with:\n"
                            "compiling...")


def _doc(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": 1, "ok": True, "mode": "gpu", "python": "3.12.3", "torch": "2.11.0+cu130",
        "triton": "3.6.0",
        "checks": [{"name": "torch imports", "ok": True, "detail": "torch 2.11.0+cu130", "fix": None}],
        "kernels": [{"kernel": "vector_add", "device": "cuda:0", "dtype": "fp32", "ok": True,
                     "max_err": 2.4e-07, "metric": "GB/s", "value": 4260.0, "torch_value": 4251.0,
                     "ratio": 1.002, "detail": "n=99328: ok"}],
        "jit_seconds": 0.46, "total_seconds": 4.0, "gpus": ["cuda:0 NVIDIA H200 (sm_90, 139.8 GiB)"],
        "notes": [],
    }
    doc.update(changes)
    return doc


def _answering(tmp_path: Path, doc: dict[str, Any]) -> str:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    return _fake_python(tmp_path, f"cat '{path}'\n")


def test_report_is_parsed_into_typed_results(tmp_path: Path) -> None:
    r = run_verify(_answering(tmp_path, _doc()))
    assert r.ok and r.mode == "gpu" and r.gpus == ("cuda:0 NVIDIA H200 (sm_90, 139.8 GiB)",)
    k = r.kernels[0]
    assert (k.metric, k.value, k.torch_value, k.ratio) == ("GB/s", 4260.0, 4251.0, 1.002)
    table = format_report(r).splitlines()
    # an older runner's report (no mode, no compile time) reads with "-" in the added columns; the timed row is
    # judged against the H200's band (compat/bands.toml)
    assert "  kernel      dtype  device  mode  ok  max err      triton       torch  ratio  compile s  speed" in table
    assert "  vector_add  fp32   cuda:0  -     ok  2.4e-07  4,260 GB/s  4,251 GB/s   1.00          -  in band" in table
    assert "  speed: the timed row within its band (H200 bands, compat/bands.toml)" in table
    assert "first kernel launch incl. JIT compile 0.46 s; total " in format_report(r)


def test_report_cannot_claim_ok_over_a_failed_row(tmp_path: Path) -> None:
    doc = _doc()
    doc["kernels"][0]["ok"] = False
    assert run_verify(_answering(tmp_path, doc)).ok is False


@pytest.mark.parametrize(("changes", "message"), [
    ({"schema": 2}, "verify: the runner answered report schema 2, expected 1"),
    ({"mode": "tpu"}, "verify: the runner answered an unknown mode 'tpu'"),
    ({"checks": [{"name": "x", "ok": "yes", "detail": ""}]},
     "verify: the runner's report is malformed: checks[0].ok is not true or false"),
    ({"gpus": "cuda:0"}, "verify: the runner's report is malformed: gpus is not a list of strings"),
])
def test_malformed_report_is_an_error(tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(VerifyError) as e:
        run_verify(_answering(tmp_path, _doc(**changes)))
    assert str(e.value) == message


def test_interpreter_choice_reaches_the_runner_environment(tmp_path: Path) -> None:
    # TRITON_INTERPRET must be in the environment before triton is imported, so the API sets it
    out = tmp_path / "env.txt"
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(_doc()))
    late = tmp_path / "stdin.txt"
    python = _fake_python(tmp_path, f"""\
        echo "TRITON_INTERPRET=${{TRITON_INTERPRET:-unset}} $*" > '{out}'
        head -n 1 > '{late}'
        cat '{doc}'
    """)
    run_verify(python, interpret=True, backend="cpu", expect_gpu=True, driver="580.159.04")
    text = out.read_text()
    assert text.startswith(f"TRITON_INTERPRET=1 -I {RUNNER} --json-args ")
    args = json.loads(text.split("--json-args ", 1)[1])
    # what the command line says is on the runner's command line; what the lock expects follows on its stdin, so the
    # runner starts (and imports torch) before tritonlock has read the lock and the host
    assert args["interpret"] is True and args["late_args"] is True and "backend" not in args
    expected = json.loads(late.read_text())
    assert expected["backend"] == "cpu" and expected["expect_gpu"] is True and expected["driver"] == "580.159.04"
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        run_verify(python, interpret=False)
    finally:
        del os.environ["TRITON_INTERPRET"]
    assert out.read_text().startswith("TRITON_INTERPRET=unset ")


# ---------------------------------------------------------------------------------------------
# The runner's own rules and discipline


def test_runner_imports_only_torch_triton_and_stdlib() -> None:
    files = sorted(RUNNER.rglob("*.py"))
    assert {p.relative_to(RUNNER).as_posix() for p in files} >= {
        "__main__.py", "tlverify/harness.py", "tlverify/options.py", "tlverify/k_vector_add.py",
        "tlverify/k_matmul.py", "tlverify/k_softmax.py", "tlverify/k_attention.py", "tlverify/k_fp8.py",
        "tlverify/inductor.py"}
    names = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    # tlverify is the runner's own package, beside __main__.py
    assert names - set(sys.stdlib_module_names) == {"torch", "triton", "tlverify"}


def test_api_module_stays_light() -> None:
    code = ("import sys, tritonlock.verify; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'triton', 'numpy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(("entry", "cc", "runs"), [
    ("sm_80", (8, 6), True),      # SASS runs on a later minor of the same major
    ("sm_80", (8, 0), True),
    ("sm_86", (8, 0), False),     # ... never on an earlier one
    ("sm_80", (9, 0), False),     # ... nor on another major
    ("sm_90a", (9, 0), True),     # arch-specific: exactly that GPU
    ("sm_90a", (10, 0), False),
    ("sm_100f", (10, 3), True),   # family: same major, later minor
    ("compute_90", (10, 0), True),  # PTX JITs forward
    ("compute_90", (8, 9), False),
    ("sm_120", (12, 0), True),
    ("gfx90a", (9, 0), False),
])
def test_arch_compatibility_rules(entry: str, cc: tuple[int, int], runs: bool) -> None:
    assert _runner_module()._arch_runs(entry, *cc) is runs


@pytest.mark.parametrize(("backend", "want"), [
    ("cu130", ("cuda", "13.0")), ("cu126", ("cuda", "12.6")), ("cu118", ("cuda", "11.8")),
    ("cpu", ("cuda", None)), ("rocm6.4", ("hip", "6.4")), ("xpu", None),
])
def test_backend_names(backend: str, want: tuple[str, str | None] | None) -> None:
    assert _runner_module().expected_cuda(backend) == want


def test_import_errors_are_explained() -> None:
    explain = _runner_module()._explain_import_error
    detail, fix = explain("torch", "ImportError: /x/libtorch_cuda.so: undefined symbol: ncclCommShrink")
    assert "a torch/triton/CUDA library mix" in detail and "tritonlock sync" in fix
    detail, _ = explain("torch", "OSError: libcudnn.so.9: cannot open shared object file")
    assert "A CUDA library torch needs is missing" in detail


def test_runner_without_torch_reports_it(tmp_path: Path) -> None:
    r = run_verify(_bare_python(tmp_path), quick=True)
    assert not r.ok and r.kernels == ()
    c = _check(r, "torch imports")
    assert c.detail == "torch is not installed in this environment (No module named 'torch')"
    assert format_report(r).splitlines()[0].startswith("verify: no kernel ran; python ")


def test_no_cpp_compiler_on_a_gpu_fails_the_torch_compile_row_with_the_fix(real_torch_python: str) -> None:
    """On a GPU a missing compiler is the machine's fault, not a skip — a model's first torch.compile fails there
    too — and the row says what is missing and how to get it instead of torch's bare InvalidCxxCompiler. (No GPU
    here: torch's own InvalidCxxCompiler is raised where torch.compile would build, on a device that is not the CPU.)"""
    script = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(RUNNER)!r})\n"
        "import torch\n"
        "from torch._inductor.exc import InvalidCxxCompiler\n"
        "from tlverify import inductor, report\n"
        "def compile(*a, **k):\n"
        "    def f(*a, **k):\n"
        "        raise InvalidCxxCompiler()\n"
        "    return f\n"
        "torch.compile = compile\n"
        "r = report.Report()\n"
        "inductor.run(r, torch, 'meta', 'cuda:0')\n"
        "print(json.dumps([[k['ok'], k['mode'], k['detail']] for k in r.to_json()['kernels']]))\n")
    out = subprocess.run([real_torch_python, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    ((ok, mode, detail),) = json.loads(out.stdout.strip().splitlines()[-1])
    assert (ok, mode) == (False, "inductor-triton"), detail
    assert detail.startswith("torch.compile (Inductor) failed: no C++ compiler found (No working C++ compiler found"), detail
    assert "`apt-get install g++`" in detail and "point CXX and CC at one" in detail and "InvalidCxxCompiler" not in detail


@pytest.mark.slow
def test_no_cpp_compiler_skips_the_cpu_torch_compile_check_saying_what_is_missing(
        real_torch_python: str, real_torch_backend: str, real_triton: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A slim image without a C++ compiler: Inductor's CPU backend cannot build what it writes. That is no fault of
    the environment — the row says what is missing and how to get it, and it does not fail verify (nor so the first
    sync on such an image); the Triton kernels still run."""
    monkeypatch.setenv("CXX", str(Path("/nonexistent") / "g++"))  # where Inductor looks, and nothing there
    r = run_verify(real_torch_python, backend=real_torch_backend, triton=real_triton, reuse=False)
    (row,) = [k for k in r.kernels if k.kernel == "torch_compile"]
    assert (row.ok, row.mode) == (True, "skipped"), row.detail
    assert row.detail.startswith("skipped: no C++ compiler found (No working C++ compiler found in "), row.detail
    assert "`apt-get install g++`" in row.detail and "point CXX at one" in row.detail
    assert "InvalidCxxCompiler" not in format_report(r)
    assert "torch.compile was not checked: no C++ compiler on this machine (its row says how to get one)" in r.notes
    assert r.ok and all(k.ok for k in r.kernels if k.mode == "interpreter"), format_report(r)
    assert "skip  torch_compile on cpu: no C++ compiler found" in format_report(r)
