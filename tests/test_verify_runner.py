"""verify's runner as a package: finite-but-wrong faults (and the mutation that must catch them), the concurrency
helpers it runs every GPU with, fault names, and the JSON contract it keeps (fields are only ever added)."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tritonlock.verify import RUNNER, VerifyResult, run_verify
from tritonlock.verify.report import format_report

# The Triton kernel families the interpreter runs at --quick (attention: two variants covering both dtypes)
QUICK_TRITON_ROWS = [("vector_add", "fp32"), ("matmul", "fp16"), ("matmul", "bf16"), ("matmul", "fp32"),
                     ("softmax", "fp32"), ("attention d64 causal", "fp16"), ("attention d128", "bf16")]
# What schema 1 rows and reports always had: a newer runner adds, never removes
OLD_ROW_KEYS = {"kernel", "device", "dtype", "ok", "max_err", "metric", "value", "torch_value", "ratio", "detail"}
OLD_REPORT_KEYS = {"schema", "ok", "mode", "python", "torch", "triton", "checks", "kernels", "jit_seconds",
                   "total_seconds", "gpus", "notes"}


def _module(name: str) -> ModuleType:
    if str(RUNNER) not in sys.path:
        sys.path.insert(0, str(RUNNER))
    return importlib.import_module(f"tlverify.{name}")


def _run(python: str, runner: Path, *args: str) -> dict[str, Any]:
    proc = subprocess.run([python, "-I", str(runner), "--interpret", "yes", "--quick", *args],
                          capture_output=True, text=True, timeout=600)
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


# ---------------------------------------------------------------------------------------------
# Finite but wrong: only the tolerance check can catch it


@pytest.fixture(scope="module")
def wrong_run(real_torch_python: str) -> dict[str, Any]:
    return _run(real_torch_python, RUNNER, "--inject-fault", "all:wrong")


@pytest.mark.slow
def test_finite_but_wrong_output_fails_every_kernel(wrong_run: dict[str, Any]) -> None:
    """Each family computes a plausible wrong answer (an extra 1e-3, rows summing to 0.999, a dropped K tile, a
    softmax at the wrong temperature): every value is finite, so no NaN check sees it — the tolerance must."""
    rows = [k for k in wrong_run["kernels"] if k["mode"] == "interpreter"]
    assert [(k["kernel"], k["dtype"]) for k in rows] == QUICK_TRITON_ROWS
    for k in rows:
        assert k["ok"] is False, k
        assert "outputs outside the bound from the arithmetic" in k["detail"] and "NaN" not in k["detail"], k["detail"]
        assert k["max_err"] is not None and k["max_err"] > 0  # finite: written, and wrong
        assert k["detail"].startswith("WRONG RESULTS: fault injected on purpose (--inject-fault all:wrong)")
    assert wrong_run["ok"] is False


@pytest.mark.slow
def test_the_tolerance_check_is_what_catches_it(real_torch_python: str, tmp_path: Path) -> None:
    """The mutation: a copy of the runner whose compare() no longer checks the bound (NaN still fails). The same
    finite-but-wrong kernels then pass — so the test above fails if the bound check is ever disabled."""
    mutant = tmp_path / "runner"
    shutil.copytree(RUNNER, mutant, ignore=shutil.ignore_patterns("__pycache__"))
    common = mutant / "tlverify" / "common.py"
    text = common.read_text()
    check = "if not math.isfinite(max_err) or not worst <= 1.0:"
    assert text.count(check) == 1
    common.write_text(text.replace(check, "if not math.isfinite(max_err):"))
    doc = _run(real_torch_python, mutant, "--inject-fault", "all:wrong")
    rows = [k for k in doc["kernels"] if k["mode"] == "interpreter"]
    assert [(k["kernel"], k["dtype"]) for k in rows] == QUICK_TRITON_ROWS
    assert all(k["ok"] for k in rows), [k["detail"] for k in rows if not k["ok"]]
    # the NaN check alone still catches a kernel that never writes its last block
    doc = _run(real_torch_python, mutant, "--inject-fault", "softmax")
    (softmax,) = [k for k in doc["kernels"] if k["kernel"] == "softmax"]
    assert softmax["ok"] is False and "still NaN" in softmax["detail"]


# ---------------------------------------------------------------------------------------------
# The JSON contract on the CPU: the compile check and the attention kernel, with honest modes


@pytest.mark.slow
def test_quick_json_lists_compile_check_and_attention_with_modes(real_torch_python: str,
                                                                 real_torch_backend: str) -> None:
    r = run_verify(real_torch_python, backend=real_torch_backend, quick=True)
    assert r.ok, format_report(r)
    doc = r.to_json()
    rows = doc["kernels"]
    assert isinstance(rows, list)
    modes = {(k["kernel"], k["dtype"]): k["mode"] for k in rows}
    assert [key for key in modes if key[0].startswith("attention")] == QUICK_TRITON_ROWS[5:]
    assert all(modes[key] == "interpreter" for key in QUICK_TRITON_ROWS)
    assert modes[("fp8_matmul", "e4m3")] == "skipped"
    assert modes[("torch_compile", "fp32")] == "skipped"  # --quick: named, with why, not silently left out
    (tc,) = [k for k in r.kernels if k.kernel == "torch_compile"]
    assert tc.detail.startswith("skipped: --quick")
    text = format_report(r)
    assert "  skip  torch_compile on cpu: --quick" in text and "compile s" in text
    for k in rows:
        assert OLD_ROW_KEYS <= set(k), k
    assert OLD_REPORT_KEYS <= set(doc)
    caches = doc["caches"]
    assert isinstance(caches, dict)
    # the caches persist inside the venv, so a warm verify loads what a cold one compiled
    venv = Path(real_torch_python).parent.parent
    assert caches == {"triton": str(venv / ".tritonlock-cache" / "triton"),
                      "inductor": str(venv / ".tritonlock-cache" / "inductor")}


def test_an_older_runners_report_still_parses(tmp_path: Path) -> None:
    """A report without the added fields (mode, compile_seconds, generated, caches) reads as before."""
    row = {"kernel": "matmul", "device": "cuda:0", "dtype": "fp16", "ok": True, "max_err": 0.06,
           "metric": "TFLOP/s", "value": 700.0, "torch_value": 690.0, "ratio": 1.01, "detail": "x"}
    doc = {"schema": 1, "ok": True, "mode": "gpu", "python": "3.12", "torch": "2.11", "triton": "3.6.0",
           "checks": [], "kernels": [row], "jit_seconds": 0.4, "total_seconds": 4.0, "gpus": ["cuda:0 H200"],
           "notes": []}
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    exe = tmp_path / "python"
    exe.write_text(f"#!/bin/sh\ncat '{tmp_path / 'doc.json'}'\n")
    exe.chmod(0o755)
    r = run_verify(str(exe))
    (k,) = r.kernels
    assert (k.mode, k.compile_seconds, k.generated, r.caches, r.compile_seconds) == (None, None, (), (), None)
    assert r.to_json()["kernels"][0]["ratio"] == 1.01  # type: ignore[index]
    assert "matmul  fp16   cuda:0  -     ok" in format_report(r)


# ---------------------------------------------------------------------------------------------
# Every GPU at once: the concurrency the harness runs devices with (threads, one per device)


def test_devices_run_at_the_same_time_and_failures_stay_per_device() -> None:
    """All four devices' work is running at once: each waits at a barrier the four meet only together (run one after
    the other, the first would wait there for good: the barrier's bound is where waiting stops, not a speed limit)."""
    harness = _module("harness")
    together = threading.Barrier(4, timeout=60)

    def work(i: int) -> None:
        together.wait()
        if i == 2:
            raise RuntimeError("device 2 broke")

    errors = harness.run_concurrently([0, 1, 2, 3], work)
    assert [type(e).__name__ if e else None for e in errors] == [None, None, "RuntimeError", None]


def test_rows_from_concurrent_devices_come_out_in_device_order() -> None:
    report = _module("report")
    r = report.Report()
    turn = [threading.Event() for _ in range(9)]  # the order rows are written in: device 2 first, then 1, then 0
    order = [(i, step) for step in range(1, 4) for i in (2, 1, 0)]

    def device(i: int) -> None:
        for step in range(1, 4):
            n = order.index((i, step))
            if n:
                assert turn[n - 1].wait(timeout=60)
            r.kernel(f"k{step}", f"cuda:{i}", "fp16", True, 0.0, "", order=(i, step))
            turn[n].set()

    threads = [threading.Thread(target=device, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    r.kernel("nccl_all_reduce", "cuda:0..2", "fp32", True, 0.0, "", order=(1 << 20, 0))
    rows = r.to_json()["kernels"]
    assert [(k["device"], k["kernel"]) for k in rows] == [
        (f"cuda:{i}", f"k{s}") for i in range(3) for s in range(1, 4)] + [("cuda:0..2", "nccl_all_reduce")]
    assert all("_order" not in k for k in rows)


def test_torchs_first_calls_need_no_triton_and_the_variants_wait_for_their_check(real_torch_python: str) -> None:
    """torchside starts torch's first calls before Triton is imported, so it never imports Triton. On the CPU (device
    index -1, sizes made small) FirstCalls makes them, and in a timed run leaves the attention variants' threads
    built and waiting (VARIANTS); run(check) then checks every variant once, in report order, one at a time, and
    raises a variant's error once all have run. wait() for a device it did not start makes the calls itself."""
    code = f"""
import sys, threading, torch
sys.path.insert(0, {str(RUNNER)!r})
from tlverify import common, report, torchside
assert "triton" not in sys.modules, "torchside imported triton"
plan = common.Plan(gpu=False, quick=False)
plan.timed, plan.mm_sizes, plan.mm_timed = True, [(8, 8, 8)], (16, 16, 16)
plan.attn_sizes, plan.attn_timed = [(1, 2, 33)], (1, 2, 64)
ctx = common.Ctx(report.Report(), torch, plan, "cpu", -1, None, True, seed=1)
first = torchside.FirstCalls([ctx])
first.wait(ctx)
first.join()
assert "triton" not in sys.modules
group = torchside.VARIANTS.pop(-1)
assert all(t.is_alive() for t in group.threads) and not torchside.VARIANTS
seen, busy, lock = [], [], threading.Lock()
def check(c, dt, d, causal):
    with lock:
        busy.append(1)
        assert len(busy) == 1, "two variants checked at once"
    seen.append((str(dt), d, causal))
    threading.Event().wait(0.01)
    with lock:
        busy.pop()
    if (d, causal) == (64, True) and dt == torch.bfloat16:
        raise ValueError("planted")
try:
    group.run(check)
except ValueError as e:
    assert str(e) == "planted"
else:
    raise AssertionError("the variant's error was not raised")
want = [(str(dt), d, c) for dt, d, c in torchside.variants(torch)]
assert seen == want and len(want) == 8, seen
other = common.Ctx(report.Report(), torch, plan, "cpu", -1, None, True, seed=1)
torchside.FirstCalls([]).wait(other)
assert len(torchside.VARIANTS) == 1
quick = common.Plan(gpu=False, quick=True)
quick.mm_sizes, quick.attn_sizes = [(8, 8, 8)], [(1, 2, 33)]
torchside.VARIANTS.clear()
torchside.first_calls(common.Ctx(report.Report(), torch, quick, "cpu", -1, None, True, seed=1))
assert not torchside.VARIANTS, "an untimed run starts no variant threads"
print("ok")
"""
    proc = subprocess.run([real_torch_python, "-I", "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_one_table_per_gpu() -> None:
    def row(kernel: str, device: str) -> dict[str, Any]:
        return {"kernel": kernel, "device": device, "dtype": "fp16", "ok": True, "max_err": 0.0, "metric": None,
                "value": None, "torch_value": None, "ratio": None, "detail": "", "mode": "gpu",
                "compile_seconds": 1.25}

    from tritonlock.verify import _parse

    doc = {"schema": 1, "ok": True, "mode": "gpu", "python": "3.12", "torch": "2.11", "triton": "3.6.0",
           "checks": [], "kernels": [row("matmul", "cuda:0"), row("matmul", "cuda:1")], "jit_seconds": None,
           "total_seconds": 1.0, "gpus": [], "notes": [], "compile_seconds": 2.5, "caches": {}}
    text = format_report(_parse(doc, 1.0))
    assert "kernels on cuda:0" in text and "kernels on cuda:1" in text
    assert text.index("kernels on cuda:0") < text.index("kernels on cuda:1")
    assert "parallel compile 2.50 s" in text and "1.25" in text


@pytest.mark.parametrize(("value", "want"), [
    (None, (None, 0)), ("matmul", ("matmul", 1)), ("attention:wrong", ("attention", 2)), ("all:wrong", ("all", 2)),
])
def test_fault_names(value: str | None, want: tuple[str | None, int]) -> None:
    assert _module("common").parse_fault(value) == want


@pytest.mark.parametrize("value", ["nope", "matmul:nan", "matmul:", ":wrong"])
def test_bad_fault_names_are_refused(value: str) -> None:
    with pytest.raises(ValueError):
        _module("common").parse_fault(value)
    with pytest.raises(SystemExit):
        _module("options").parse_options(["--inject-fault", value])


def test_verify_result_round_trips_the_added_fields() -> None:
    from tritonlock.verify import KernelResult

    k = KernelResult(kernel="torch_compile", device="cpu", dtype="fp32", ok=True, max_err=1e-5, metric=None,
                     value=None, torch_value=None, ratio=None, detail="d", mode="inductor-cpp", compile_seconds=3.0,
                     generated=("cpp_fused_gelu_sum_0 (cpp)",))
    r = VerifyResult(ok=True, mode="interpreter", python="3.11", torch="2.13", triton="3.6.0", checks=(), kernels=(k,),
                     jit_seconds=None, total_seconds=1.0, gpus=(), notes=(), compile_seconds=None,
                     caches=(("triton", "/v/.tritonlock-cache/triton"),))
    doc = r.to_json()
    from tritonlock.verify import _parse

    again = _parse(json.loads(json.dumps(doc)), 1.0)
    assert again.kernels == (k,) and again.caches == r.caches


@pytest.mark.slow
def test_cold_uses_fresh_caches_and_removes_them(real_torch_python: str, real_torch_backend: str) -> None:
    r = run_verify(real_torch_python, backend=real_torch_backend, quick=True, cold=True)
    assert r.ok, format_report(r)
    assert "cold: compiled into fresh, empty Triton and Inductor caches" in r.notes
    caches = dict(r.caches)
    assert set(caches) == {"triton", "inductor"}
    tmp = Path(caches["triton"]).parent
    assert tmp == Path(caches["inductor"]).parent and tmp.name.startswith("tritonlock-verify-cache-")
    assert not tmp.exists()  # removed after the run: nothing of a cold run is left to warm the next one
    venv = Path(real_torch_python).parent.parent
    assert venv not in tmp.parents


@pytest.mark.slow
def test_a_check_that_raises_keeps_its_kernel_name_and_dtype(real_torch_python: str) -> None:
    """A kernel whose check raises (a compile error, a crash) is reported as that kernel and dtype — not as an
    anonymous "error" row with dtype "-" — and says which of its family's checks did not run."""
    doc = _run(real_torch_python, RUNNER, "--inject-fault", "matmul:raise")
    rows = {(k["kernel"], k["dtype"]): k for k in doc["kernels"] if k["mode"] != "skipped"}
    assert "error" not in {k for k, _ in rows} and doc["ok"] is False
    bad = rows[("matmul", "fp16")]
    assert bad["ok"] is False and bad["detail"].startswith(
        "matmul: the check raised RuntimeError: fault injected on purpose (--inject-fault matmul:raise)")
    assert "the family's later checks on cpu (interpreter) did not run" in bad["detail"]
    assert rows[("vector_add", "fp32")]["ok"] and rows[("softmax", "fp32")]["ok"]  # the other families still ran
    doc = _run(real_torch_python, RUNNER, "--inject-fault", "all:raise")
    failed = [(k["kernel"], k["dtype"]) for k in doc["kernels"] if not k["ok"]]
    assert failed == [("vector_add", "fp32"), ("matmul", "fp16"), ("softmax", "fp32"), ("attention d64 causal", "fp16")]
    from tritonlock.verify import _parse

    text = format_report(_parse(doc, 1.0))
    assert "FAIL  matmul fp16 on cpu (interpreter): matmul: the check raised RuntimeError" in text
    assert "  error " not in text


# Triton APIs a released Triton removed: the runner runs in the user's venv, with whatever Triton its torch pins.
# Triton 3.9.0 (the Triton PyPI's torch 2.15 pins) raises "Block pointers have been removed in favor of the tensor
# descriptor API" for both (a real `tritonlock sync` on torch 2.15.0 + triton 3.9.0 failed its attention row so).
REMOVED_TRITON_API = {"make_block_ptr": "3.9.0", "advance": "3.9.0"}


def test_the_runners_kernels_use_no_triton_api_a_released_triton_removed() -> None:
    import ast

    runner = Path(__file__).resolve().parents[1] / "tritonlock" / "verify" / "runner" / "tlverify"
    used = []
    for f in sorted(runner.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr in REMOVED_TRITON_API and isinstance(node.value, ast.Name)
                    and node.value.id == "tl"):
                gone = REMOVED_TRITON_API[node.attr]
                used.append(f"{f.name}:{node.lineno} tl.{node.attr} (removed in Triton {gone})")
    assert used == []


@pytest.mark.network
def test_the_kernels_pass_with_the_newest_triton_on_the_index(real_torch_python: str, tmp_path: Path) -> None:
    """The reference kernels in the interpreter with the newest Triton the default index has (whatever torch pins
    it), beside the test venv's torch: a Triton release that drops an API the runner uses fails here first."""
    from tritonlock.verify import run_verify

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    src = Path(subprocess.run([real_torch_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip())
    dst = next((venv / "lib").glob("python3*/site-packages"))
    for entry in src.iterdir():
        if not entry.name.startswith("triton"):
            (dst / entry.name).symlink_to(entry)
    from tritonlock._subprocess import uv_bin

    subprocess.run([uv_bin(), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "--no-deps",
                    "triton"], check=True)
    result = run_verify(str(venv / "bin" / "python"), interpret=True, quick=True)
    version = result.triton
    assert [k.kernel for k in result.kernels if not k.ok] == [], (version, [k.detail for k in result.kernels])


# ---------------------------------------------------------------------------------------------
# Nothing that imports torch, or scans the installed distributions, starts beside the runner's own `import torch`

ORDER_STUB = '''
import os, sys, time
here = os.path.dirname(__file__)
LOG = os.path.join(here, "log")


def _say(what):
    with open(LOG, "a") as f:
        f.write(f"{os.getpid()} {what} {time.time()}\\n")


_say("began")
time.sleep(1.5)  # long enough for a process started beside this import to begin its own
_say("ended")
__version__ = "2.13.0+cpu"


class version:
    cuda = None
    hip = None


class cuda:
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def device_count():
        return 0
'''
# triton's stub: imports; the kernels' first `@triton.jit` holds the runner until a second process (the torch.compile
# check's) has begun importing torch, then stops the run
TRITON_STUB = '''
import os, time
__version__ = "3.6.0"
LOG = os.path.join(os.path.dirname(os.path.dirname(__file__)), "torch", "log")


def jit(*args, **kwargs):
    for _ in range(1200):
        with open(LOG) as f:
            if sum(1 for line in f if " began " in line) > 1:
                break
        time.sleep(0.1)
    raise RuntimeError("stub triton: the test has seen what it needs")
'''


def _stub_venv(tmp_path: Path) -> tuple[Path, Path]:
    """A venv whose torch is ORDER_STUB (it logs when each process's import began and ended) beside stand-ins for
    triton and numpy: its interpreter and site directory."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    for name, text in (("torch", ORDER_STUB), ("triton", TRITON_STUB), ("triton/language", "def __getattr__(name):\n"
                       "    return object\n"), ("numpy", "__version__ = '2.0'\n")):
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(text)
    return python, site


@pytest.mark.parametrize("said", ["0", ""])
def test_the_compile_check_process_starts_after_the_runners_torch_import(tmp_path: Path, said: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A full run's torch.compile process imports torch too: it starts once the runner's own import is done, never
    beside it (issue 41: the runner's import was slower than a bare one with processes started beside it); the scan
    that decides whether its row is reused runs in a process of its own. (On this machine of fewer than 8 cores, or
    with TRITONLOCK_VERIFY_EARLY=0, the packages' import server starts after it too.)"""
    monkeypatch.setenv("TRITONLOCK_VERIFY_EARLY", said)
    python, site = _stub_venv(tmp_path)
    result = run_verify(str(python), timeout=300)
    log = [line.split() for line in (site / "torch" / "log").read_text().splitlines()]
    runner = log[0][0]  # the runner's import began first: nothing else was started before it
    ended = [float(t) for pid, what, t in log if pid == runner and what == "ended"]
    others = [(pid, float(t)) for pid, what, t in log if pid != runner and what == "began"]
    assert ended and others, log  # the check's process did start (the stub held the runner until it had)
    assert all(t >= ended[0] for _, t in others), log
    timeline = next(n for n in result.notes if n.startswith("time: "))
    assert timeline.index("import torch") < timeline.index("torch.compile check: reuse or start"), timeline


def test_with_cores_to_spare_the_import_server_imports_torch_beside_the_runners_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU machine's cores (TRITONLOCK_VERIFY_EARLY=1 here: this box has two) the packages' import server starts
    with the runner and imports torch beside the runner's own import, once; the torch.compile check's process still
    starts after it, and the run passes as before."""
    monkeypatch.setenv("TRITONLOCK_VERIFY_EARLY", "1")
    python, site = _stub_venv(tmp_path)
    result = run_verify(str(python), timeout=300)
    log = [line.split() for line in (site / "torch" / "log").read_text().splitlines()]
    began = {pid: float(t) for pid, what, t in log if what == "began"}
    ended = {pid: float(t) for pid, what, t in log if what == "ended"}
    runner = min(began, key=began.__getitem__)
    beside = [pid for pid in began if pid != runner and began[pid] < ended[runner]]
    assert len(beside) == 1, log  # the import server's, alone (the check's process waits for the runner's import)
    assert "imports: the packages' import checks started beside `import torch` (" in " ".join(result.notes)
    server = next(n for n in result.notes if n.startswith("imports: the server was asked at "))
    assert "had torch at " in server and "had torch at -" not in server, server


KEY_PROBE = '''
import argparse, json, sys
sys.path.insert(0, sys.argv[1])
from tlverify import compilecheck, memo

opts = argparse.Namespace(interpret=True)
scan = compilecheck.start_key_scan(opts)
out, _ = scan.communicate(timeout=120)
print(json.dumps([out.strip(), memo.compile_check_key(opts), compilecheck.finish_key_scan(compilecheck.start_key_scan(opts), opts),
                  memo.compile_check_key(argparse.Namespace(interpret=None))]))
'''


def test_the_key_scanned_in_its_own_process_is_the_key_computed_here() -> None:
    """The torch.compile check's key comes from a process of its own (its scan is then not this process's GIL): the
    same key as the runner computes itself, so a row kept by an earlier run is reused."""
    proc = subprocess.run([sys.executable, "-I", "-c", KEY_PROBE, str(RUNNER)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    scanned, here, finished, other_mode = json.loads(proc.stdout)
    assert len(scanned) == 64 and scanned == here == finished
    assert other_mode != here  # (the mode is part of it: the probe's keys are not all alike by accident)


NATIVES_PROBE = '''
import json, sys
from pathlib import Path
from tritonlock import verify

site = Path(sys.argv[1])
verify._prepare_natives().join()
before = {m for m in sys.modules if m.startswith("tritonlock")}
doc = {"imports": [{"dist": "fakevision", "version": "1.0", "ok": True, "native": True, "module": "fakevision",
                    "modules": ["fakevision/_C.so"]}], "site": [str(site)]}
result = verify._parse({"schema": 1, "ok": True, "mode": "gpu", "python": "3.12", "torch": "2.11.0+cu130",
                        "triton": "3.6.0", "checks": [], "kernels": [], "jit_seconds": 0.1, "total_seconds": 1.0,
                        "gpus": ["cuda:0 NVIDIA H200 (sm_90, 139.8 GiB)"], "notes": []}, 1.0)
checked = verify._with_natives(result, doc, None)
print(json.dumps({"new": sorted({m for m in sys.modules if m.startswith("tritonlock")} - before),
                  "checks": [c.name for c in checked.checks]}))
'''


def test_what_reading_the_native_rows_imports_is_imported_while_the_runner_works(tmp_path: Path) -> None:
    """verify's parent imports the native checks' modules in a thread while the runner runs (issue 41: they were
    imported after its report, a few tenths of a second of the command's wall time): reading the report then imports
    nothing more."""
    site = tmp_path / "site"
    (site / "fakevision").mkdir(parents=True)
    (site / "fakevision" / "_C.so").write_bytes(b"\x7fELF" + b"\0" * 60)
    (site / "fakevision-1.0.dist-info").mkdir()
    (site / "fakevision-1.0.dist-info" / "RECORD").write_text("fakevision/_C.so,,64\n")
    proc = subprocess.run([sys.executable, "-c", NATIVES_PROBE, str(site)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["checks"] == ["import fakevision"]  # the rows were read (and the GPU code check looked at its files)
    assert out["new"] == [], out["new"]


def test_finish_prepares_the_native_checks_before_it_waits_for_the_report(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import tritonlock.verify as verify_mod

    seen: list[bool] = []
    marker = tmp_path / "report-read"
    doc = {"schema": 1, "ok": True, "mode": "gpu", "python": "3.12", "torch": "2.11", "triton": "3.6.0",
           "checks": [], "kernels": [], "jit_seconds": 0.1, "total_seconds": 1.0, "gpus": [], "notes": []}
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    exe = tmp_path / "python"  # a "runner" that answers once its stdin (what the lock expects) has come
    exe.write_text(f"#!/bin/sh\nread line\ntouch '{marker}'\ncat '{tmp_path / 'doc.json'}'\n")
    exe.chmod(0o755)
    real = verify_mod._prepare_natives

    def prepare() -> threading.Thread:
        seen.append(marker.exists())  # called while the runner still waits: before its report
        return real()

    monkeypatch.setattr(verify_mod, "_prepare_natives", prepare)
    run_verify(str(exe))
    assert seen == [False]
