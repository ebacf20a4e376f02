"""verify's tolerances are bounds on the arithmetic (issue 41): the fault switch's smallest fault (one output wrong by
one term) fails every row, a seed repeats a run's inputs, the bounds hold for the arithmetic they bound (a small
version of bench/verify_tolerance_sweep.py), and each bound's parts are what the derivation says."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tritonlock.verify import RUNNER

ROOT = Path(__file__).resolve().parents[1]
QUICK_TRITON_ROWS = [("vector_add", "fp32"), ("matmul", "fp16"), ("matmul", "bf16"), ("matmul", "fp32"),
                     ("softmax", "fp32"), ("attention d64 causal", "fp16"), ("attention d128", "bf16")]


def _run(python: str, *args: str) -> dict[str, Any]:
    proc = subprocess.run([python, "-I", str(RUNNER), "--interpret", "yes", "--quick", "--no-imports", *args],
                          capture_output=True, text=True, timeout=600)
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def _rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [k for k in doc["kernels"] if k["mode"] == "interpreter"]


@pytest.fixture(scope="module")
def one_run(real_torch_python: str) -> dict[str, Any]:
    return _run(real_torch_python, "--inject-fault", "all:one", "--seed", "11")


def test_one_wrong_output_fails_every_row_and_only_that_output(one_run: dict[str, Any]) -> None:
    """The smallest fault: exactly one output of each row's first check is off by one term; the bound sees it."""
    rows = _rows(one_run)
    assert [(k["kernel"], k["dtype"]) for k in rows] == QUICK_TRITON_ROWS
    for k in rows:
        assert k["ok"] is False, k
        assert k["detail"].startswith("WRONG RESULTS: fault injected on purpose (--inject-fault all:one)"), k
        assert ": 1 of " in k["detail"] and "outputs outside the bound from the arithmetic" in k["detail"], k
    assert one_run["ok"] is False


def test_the_same_seed_passes_without_the_fault_and_repeats_its_inputs(real_torch_python: str,
                                                                        one_run: dict[str, Any]) -> None:
    """Without the fault the same seed passes (so the one term was what failed), and a second run with that seed
    computes the same outputs (the same errors to the last digit): --seed repeats a run's inputs."""
    a = _run(real_torch_python, "--seed", "11")
    b = _run(real_torch_python, "--seed", "11")
    assert a["ok"] is True, [k["detail"] for k in a["kernels"] if not k["ok"]]
    assert a["seed"] == b["seed"] == 11
    assert "inputs: random numbers of seed 11 (given)" in a["notes"]
    assert [k["max_err"] for k in _rows(a)] == [k["max_err"] for k in _rows(b)]
    c = _run(real_torch_python, "--seed", "12")
    assert [k["max_err"] for k in _rows(a)] != [k["max_err"] for k in _rows(c)]


def test_an_unseeded_run_names_the_seed_that_repeats_it(real_torch_python: str) -> None:
    doc = _run(real_torch_python)
    seed = doc["seed"]
    assert f"inputs: random numbers of seed {seed}; `tritonlock verify --seed {seed}` repeats them" in doc["notes"]
    again = _run(real_torch_python, "--seed", str(seed))
    assert [k["max_err"] for k in _rows(doc)] == [k["max_err"] for k in _rows(again)]


def test_the_cli_passes_seed_to_the_runner(real_torch_python: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "tritonlock", "verify", "--python", real_torch_python, "--quick",
                           "--interpret", "--seed", "99", "--json", "--project", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    doc = json.loads(proc.stdout)
    assert "inputs: random numbers of seed 99 (given)" in doc["notes"], doc["notes"]
    bad = subprocess.run([sys.executable, "-m", "tritonlock", "verify", "--seed", "-1", "--project", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2 and "--seed" in bad.stderr


def test_the_sweep_finds_every_bound_holds_and_every_fault_caught(real_torch_python: str, tmp_path: Path) -> None:
    """The bench's sweep, small: every row and size, the arithmetic emulated, no error over its bound, every one-term
    fault over it (the bench itself runs >= 10,000 problems per row and size: bench/RESULTS.md)."""
    out = tmp_path / "sweep.json"
    proc = subprocess.run([real_torch_python, str(ROOT / "bench" / "verify_tolerance_sweep.py"), "--problems", "200",
                           "--json", str(out)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    names = {r["row"] for r in doc["rows"]}
    assert {"vector_add fp32", "matmul fp16", "matmul bf16", "matmul fp32", "matmul fp32 (tf32)", "softmax fp32",
            "attention d64 fp16", "attention d128 bf16", "fp8_matmul e4m3 (13 bits)",
            "fp8_matmul e4m3 (12 bits)"} <= names
    for r in doc["rows"]:
        assert r["over"] == 0 and r["max_share_of_bound"] <= 1.0, r
        assert r["faults_caught"] == r["faults"] > 0, r


# ---------------------------------------------------------------------------------------------
# The bounds' parts


def _module(name: str) -> ModuleType:
    if str(RUNNER) not in sys.path:
        sys.path.insert(0, str(RUNNER))
    return importlib.import_module(f"tlverify.{name}")


def test_dot_fp32_is_the_stated_formula() -> None:
    bounds = _module("bounds")
    assert bounds.dot_fp32(1008, 1.0) == 2.0 ** -23 * (3 * 1008 + 34)
    assert bounds.dot_fp32(1, 2.0) == 2.0 ** -23 * 37 * 2


def test_stored_types_round_by_their_unit_and_the_interpreter_cuts_bf16() -> None:
    bounds = _module("bounds")
    assert bounds.stored(0.0, 1.0, "fp16") == 2.0 ** -11 + bounds.TINY
    assert bounds.stored(0.0, 1.0, "bf16") == 2.0 ** -8 + bounds.TINY
    assert bounds.stored(0.0, 1.0, "bf16", interpret=True) == 2.0 ** -7 + bounds.TINY
    assert bounds.stored(0.0, 1.0, "fp16", interpret=True) == 2.0 ** -11 + bounds.TINY
    assert bounds.stored(1.0, 0.0, "fp32") == 1 + 2.0 ** -24 + bounds.TINY


def _in_torch(python: str, code: str) -> None:
    """Run `code` (asserts) under the real-torch interpreter with the runner's package importable."""
    head = f"import sys, torch\nsys.path.insert(0, {str(RUNNER)!r})\nfrom tlverify import bounds, common\n"
    proc = subprocess.run([python, "-I", "-c", head + code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_fp8_accumulation_counts_only_the_terms_of_one_sign(real_torch_python: str) -> None:
    """One block of four products +1 (operands 1 x 1) with an empty sum: the largest exponent is 0, each term may
    lose 2^-12, and all four of one sign may lose together: 4 x 2^-12, plus the fp32 rounding of the sum 4; two of
    each sign: only two add up. The pairwise form gives the grid's diagonal."""
    _in_torch(real_torch_python, """
f64 = torch.float64
b = torch.ones(4, 1, dtype=f64)
e = float(bounds.fp8_accumulation(torch, torch.ones(1, 4, dtype=f64), b)[0, 0])
want = 4 * 2.0 ** -12 + 2.0 ** -23 * (4 + 4 * 2.0 ** -12)
assert abs(e - want) <= 1e-15 * want, (e, want)
a2 = torch.tensor([[1.0, 1.0, -1.0, -1.0]], dtype=f64)
e2 = float(bounds.fp8_accumulation(torch, a2, b)[0, 0])
want2 = 2 * 2.0 ** -12 + 2.0 ** -23 * 2 * 2.0 ** -12
assert abs(e2 - want2) <= 1e-15 * want2, (e2, want2)
x, y = torch.eye(3, 64, dtype=f64) * 3 + 0.5, torch.eye(64, 3, dtype=f64) - 0.25
assert torch.equal(torch.diagonal(bounds.fp8_accumulation(torch, x, y)), bounds.fp8_accumulation(torch, x, y, pairs=True))
""")


def test_compare_fails_past_the_edge_and_passes_on_it(real_torch_python: str) -> None:
    _in_torch(real_torch_python, """
ref = torch.tensor([1.0, 2.0], dtype=torch.float64)
bound = torch.tensor([0.5, 0.25], dtype=torch.float64)
ok, err, words = common.compare(torch, torch.tensor([1.5, 2.25]), ref, bound)
assert ok and err == 0.5 and words == "max |error| 0.5 (100% of its bound)", words
ok, err, words = common.compare(torch, torch.tensor([1.5, 2.5]), ref, bound)
assert not ok and words == ("1 of 2 outputs outside the bound from the arithmetic; max |error| 0.5; the worst at "
                            "flat index 1: |error| 0.5 against a bound of 0.25"), words
ok, err, words = common.compare(torch, torch.tensor([float("nan"), 2.0]), ref, bound)
assert not ok and err is None and "1 of 2 outputs are still NaN" in words, words
""")


def test_fault_names_take_one() -> None:
    common = _module("common")
    assert common.parse_fault("matmul:one") == ("matmul", common.FAULT_ONE)
    with pytest.raises(ValueError):
        common.parse_fault("matmul:two")


def test_row_seeds_differ_by_name_and_repeat_by_seed() -> None:
    common = _module("common")
    assert common.row_seed(5, "matmul fp16 a") == common.row_seed(5, "matmul fp16 a")
    assert common.row_seed(5, "matmul fp16 a") != common.row_seed(5, "matmul fp16 b")
    assert common.row_seed(5, "x") != common.row_seed(6, "x")
    assert 0 <= common.row_seed(2**32 - 1, "x") < 2**63
