"""What a warm verify skips, and only when nothing it depends on changed: the torch.compile check's passing row (reused
in the same environment, run again after any install, variable or `--no-reuse`), Triton's source hash (read back only
while Triton's files are unchanged), the record of compiled binaries, and the compile workers that compile binaries
without torch or CUDA (real Triton, cross-compiling for an sm_90 target on this CPU machine)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from click.testing import CliRunner

from tritonlock.cli import main
from tritonlock.verify import RUNNER, VerifyResult, run_verify
from tritonlock.verify.report import format_report


def _module(name: str) -> ModuleType:
    if str(RUNNER) not in sys.path:
        sys.path.insert(0, str(RUNNER))
    return importlib.import_module(f"tlverify.{name}")


def _linked_venv(real_python: str, where: Path) -> tuple[str, Path]:
    """A venv of its own (own sys.prefix, own .tritonlock-cache) whose site-packages links to everything installed in
    the real torch + triton venv: (its python, its site-packages)."""
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    src = Path(subprocess.run([real_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip())
    dst = next((venv / "lib").glob("python3*/site-packages"))
    for entry in src.iterdir():
        (dst / entry.name).symlink_to(entry)
    return str(venv / "bin" / "python"), dst


def _compile_row(r: VerifyResult) -> Any:
    (row,) = [k for k in r.kernels if k.kernel == "torch_compile"]
    return row


# ---------------------------------------------------------------------------------------------
# The torch.compile check's row


@pytest.mark.slow
def test_compile_check_is_reused_only_while_the_environment_is_unchanged(
        real_torch_python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python, site = _linked_venv(real_torch_python, tmp_path)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    # what `tritonlock verify --python PY --interpret` asks for outside a project (no lock: no backend to expect)
    first = run_verify(python, interpret=True)
    row = _compile_row(first)
    assert first.ok and row.ok, format_report(first)
    assert row.reused is None and row.compile_seconds is not None  # compiled: nothing to reuse yet
    assert (Path(python).parent.parent / ".tritonlock-cache" / "memo" / "torch-compile-check.json").is_file()

    again = run_verify(python, interpret=True)
    row = _compile_row(again)
    assert again.ok and row.ok and row.mode == "inductor-cpp"
    assert row.reused is not None and row.compile_seconds is None
    assert row.detail.startswith("not compiled again: torch.compile passed on ")
    assert "--no-reuse" in row.detail and "cpp_fused_" in row.detail  # the run it stands for, in its words
    text = format_report(again)
    assert "not compiled again: it passed on" in text and "reused" in text
    # the Triton kernels themselves always run again
    assert all(k.max_err is not None for k in again.kernels if k.mode == "interpreter")
    assert again.to_json()["kernels"][-1]["reused"] == row.reused

    cli = CliRunner().invoke(main, ["verify", "-p", str(tmp_path), "--python", python, "--interpret", "--no-reuse",
                                    "--json"])
    assert cli.exit_code == 0, cli.output
    (asked,) = [k for k in json.loads(cli.output)["kernels"] if k["kernel"] == "torch_compile"]
    assert "reused" not in asked and asked["compile_seconds"] is not None  # asked for: compiled again

    # anything installed, upgraded or removed: a new distribution on sys.path
    dist = site / "newly_installed-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: newly-installed\nVersion: 1.0\n")
    (dist / "RECORD").write_text("")
    installed = run_verify(python, interpret=True)
    assert _compile_row(installed).reused is None, _compile_row(installed).detail

    # a variable that changes what torch sees
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    changed = run_verify(python, interpret=True)
    assert _compile_row(changed).reused is None
    assert _compile_row(run_verify(python, interpret=True)).reused is not None  # unchanged again

    # one of Inductor's own files edited in place (RECORD and METADATA untouched; doctor and sync see its size):
    # compiled again, never "reused" over the edit. (torch becomes a tree of links to the real one, so that the edit
    # lands in a copy of that one file only.)
    real_torch = (site / "torch").resolve()
    (site / "torch").unlink()
    subprocess.run(["cp", "-rs", str(real_torch), str(site / "torch")], check=True)
    config = site / "torch" / "_inductor" / "config.py"
    text = config.read_text()
    config.unlink()
    config.write_text(text + "\n# edited in place\n")
    edited = run_verify(python, interpret=True)
    assert edited.ok and _compile_row(edited).reused is None, _compile_row(edited).detail


def test_only_a_passing_row_is_kept(tmp_path: Path) -> None:
    memo = _module("memo")
    row = {"kernel": "torch_compile", "ok": True, "mode": "inductor-triton", "detail": "fine"}
    memo.save_compile_check(str(tmp_path), "k1", {**row, "ok": False}, [])
    memo.save_compile_check(str(tmp_path), "k1", {**row, "mode": "skipped"}, [])
    assert memo.load_compile_check(str(tmp_path), "k1") is None and not list(tmp_path.iterdir())
    memo.save_compile_check(str(tmp_path), "k1", row, ["NVIDIA H200 (9, 0)"])
    doc = memo.load_compile_check(str(tmp_path), "k1")
    assert doc is not None and doc["row"] == row and doc["devices"] == ["NVIDIA H200 (9, 0)"]
    assert memo.load_compile_check(str(tmp_path), "k2") is None  # another environment's key
    # a record edited into a failing row is not reused either
    path = tmp_path / "torch-compile-check.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "row": {**row, "ok": False}}))
    assert memo.load_compile_check(str(tmp_path), "k1") is None
    path.write_text("{not json")
    assert memo.load_compile_check(str(tmp_path), "k1") is None
    memo.forget_compile_check(str(tmp_path))
    assert not path.exists()


# ---------------------------------------------------------------------------------------------
# Triton's source hash


_KEY_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from tlverify import memo
said = memo.install_triton_key(sys.argv[2])
import triton.runtime.cache as cache, triton.runtime.autotuner as autotuner
print(json.dumps({"said": said, "key": cache.triton_key(), "original": autotuner.triton_key()}))
"""


def _probe(python: str, memo_dir: Path) -> dict[str, str]:
    out = subprocess.run([python, "-c", _KEY_PROBE, str(RUNNER), str(memo_dir)], check=True, capture_output=True,
                         text=True).stdout
    doc: dict[str, str] = json.loads(out)
    return doc


@pytest.mark.slow
def test_triton_key_is_read_back_only_while_tritons_files_are_unchanged(real_torch_python: str,
                                                                         tmp_path: Path) -> None:
    first = _probe(real_torch_python, tmp_path)
    assert first["said"] == "" and first["key"] == first["original"]  # computed by Triton, then recorded
    stored = json.loads((tmp_path / "triton-key.json").read_text())
    assert stored["key"] == first["key"]
    second = _probe(real_torch_python, tmp_path)
    assert second["said"].startswith("Triton's source hash (triton_key) read from the record")
    assert second["key"] == second["original"] == first["key"]  # exactly what Triton computes
    # Triton's files changed (the record's fingerprint no longer matches): computed again, and recorded again
    (tmp_path / "triton-key.json").write_text(json.dumps({**stored, "fingerprint": "another triton"}))
    third = _probe(real_torch_python, tmp_path)
    assert third["said"] == "" and third["key"] == first["key"]
    assert json.loads((tmp_path / "triton-key.json").read_text())["fingerprint"] == stored["fingerprint"]


def test_tree_fingerprint_sees_an_edited_file(tmp_path: Path) -> None:
    memo = _module("memo")
    (tmp_path / "a.py").write_text("x = 1\n")
    before = memo.tree_stat.__wrapped__(str(tmp_path))
    (tmp_path / "a.py").write_text("x = 22\n")
    assert memo.tree_stat.__wrapped__(str(tmp_path)) != before


def test_binaries_record_keeps_several_sets(tmp_path: Path) -> None:
    memo = _module("memo")
    d = str(tmp_path)
    assert not memo.binaries_warm(d, "full-h200") and not memo.binaries_likely_warm(d, quick=False)
    memo.save_binaries(d, "full-h200", quick=False)
    memo.save_binaries(d, "quick-h200", quick=True)
    assert memo.binaries_warm(d, "full-h200") and memo.binaries_warm(d, "quick-h200")  # one did not evict the other
    assert memo.binaries_likely_warm(d, quick=False) and memo.binaries_likely_warm(d, quick=True)
    assert not memo.binaries_warm(d, "full-a100")
    for i in range(10):
        memo.save_binaries(d, f"k{i}", quick=False)
    assert not memo.binaries_warm(d, "full-h200") and memo.binaries_warm(d, "k9")  # the last few sets only
    assert not memo.binaries_warm(None, "k9")


# ---------------------------------------------------------------------------------------------
# Compile workers


def _spec(block: int, warps: int) -> str:
    """Triton's own serialized specialization (what its jit_cache_hook hands over) of vector_add for an sm_90."""
    return json.dumps({
        "name": "tlverify.k_vector_add.vector_add_kernel",
        "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr",
                      "FAULT": "constexpr"},
        "constant_keys": [[4], [5]], "constant_vals": [block, 0],
        "attrs_keys": [[0], [1], [2], [3]], "attrs_vals": [[["tt.divisibility", 16]]] * 4,
        "options": {"num_warps": warps, "num_stages": 3}, "key": "probe",
    })


@pytest.mark.slow
def test_compile_worker_compiles_for_the_gpu_without_torch(real_torch_python: str, tmp_path: Path) -> None:
    jobs = [
        {"job": 0, "module": "tlverify.k_vector_add", "name": "vector_add_kernel", "spec": _spec(512, 4),
         "target": ["cuda", 90, 32]},
        {"job": 1, "module": "tlverify.k_vector_add", "name": "no_such_kernel", "spec": _spec(512, 4),
         "target": ["cuda", 90, 32]},
        {"job": 2, "module": "tlverify.k_vector_add", "name": "vector_add_kernel", "spec": _spec(256, 8),
         "target": ["cuda", 90, 32]},
    ]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton")
    proc = subprocess.run([real_torch_python, "-X", "importtime", "-I", str(RUNNER), "--compile-worker"],
                          input=json.dumps(jobs), capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]  # stdout: the JSON lines alone
    assert [x["job"] for x in lines] == [0, 1, 2]
    assert lines[0]["ok"] and lines[2]["ok"], lines
    assert lines[0]["cache_hit"] is False and lines[2]["cache_hit"] is False  # as Triton's own listener counted
    assert not lines[1]["ok"] and "no_such_kernel" in lines[1]["error"]  # one bad job never stops the others
    metas = [json.loads(p.read_text()) for p in (tmp_path / "triton").glob("*/vector_add_kernel.json")]
    assert sorted((m["num_warps"], m["target"]["arch"]) for m in metas) == [(4, 90), (8, 90)]
    assert len(list((tmp_path / "triton").glob("*/vector_add_kernel.cubin"))) == 2
    imported = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "triton" in imported and "torch" not in imported  # the workers never pay for torch or CUDA
    # the same jobs again: Triton finds both binaries in its cache, and the workers say so
    again = subprocess.run([real_torch_python, "-I", str(RUNNER), "--compile-worker"], input=json.dumps(jobs),
                           capture_output=True, text=True, env=env, timeout=600)
    lines = [json.loads(line) for line in again.stdout.splitlines()]
    assert [(x["job"], x["ok"], x.get("cache_hit")) for x in lines] == [(0, True, True), (1, False, None),
                                                                      (2, True, True)]


_KEY = """
import json, sys, types
sys.path.insert(0, sys.argv[1])
from tlverify import memo
opts = types.SimpleNamespace(interpret=True, expect_gpu=None, backend=None, triton=None, driver=None)
print(memo.compile_check_key(opts))
"""


def test_the_reuse_key_sees_what_syncs_damage_check_sees(tmp_path: Path, local_index: Any) -> None:
    """The torch.compile reuse key stat-ed only RECORD and METADATA: an installed file edited in place (its size or
    its time), a same-version reinstall, or a stray module beside an installed one left it unchanged — so a broken
    environment was "reused" as passed. Each now changes it; importing (byte-code caches) does not."""
    from tritonlock._subprocess import uv_bin

    venv = tmp_path / "venv"
    subprocess.run([uv_bin(), "venv", "--no-config", "--quiet", "--python", sys.executable, str(venv)], check=True)
    py = str(venv / "bin" / "python")
    env = {**os.environ, "UV_NO_CONFIG": "1"}
    install = [uv_bin(), "pip", "install", "--no-config", "--python", py, "--index-url",
               local_index.index_url("simple"), "einops==0.8.0", "filelock==3.16.1"]
    subprocess.run(install, check=True, capture_output=True, env=env)

    def key() -> str:
        return subprocess.run([py, "-I", "-c", _KEY, str(RUNNER)], check=True, capture_output=True,
                              text=True).stdout.strip()

    site = next((venv / "lib").glob("python3*/site-packages"))
    first = key()
    assert key() == first
    subprocess.run([py, "-c", "import einops, filelock"], check=True)  # byte-code caches written
    assert key() == first
    init = site / "einops" / "__init__.py"
    good = init.read_bytes()
    init.write_bytes(b"#" + good[1:])  # the same size, another time
    os.utime(init, ns=(init.stat().st_atime_ns, init.stat().st_mtime_ns + 10**9))
    edited = key()
    assert edited != first
    init.write_bytes(good + b"# longer\n")  # another size
    assert key() not in (first, edited)
    subprocess.run([*install, "--reinstall"], check=True, capture_output=True, env=env)
    reinstalled = key()  # the same versions, installed again: every file written anew
    assert reinstalled not in (first, edited)
    (site / "filelock" / "asyncio").mkdir(exist_ok=True)  # a stray package in an installed folder
    (site / "filelock" / "asyncio" / "__init__.py").write_text("")
    assert key() != reinstalled


_COUNTS = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from tlverify import k_vector_add, precompile as P
_, signature, constexprs, attrs, options = P._decode(sys.argv[2])
seen = []
for _ in range(2):  # the same binary twice: compiled, then found in Triton's cache
    with P.triton_compiles() as counts:
        triton.compile(ASTSource(k_vector_add.vector_add_kernel, signature, constexprs, attrs),
                       target=GPUTarget("cuda", 90, 32), options=options)
    seen.append(dict(counts))
print(json.dumps(seen))
"""


@pytest.mark.slow
def test_the_compile_note_counts_what_triton_compiled_and_what_it_found_in_its_cache(
        real_torch_python: str, tmp_path: Path) -> None:
    """The note `verify` prints about its compile step ("N compiled and M found in Triton's cache by K worker
    processes; then … loaded here") says what Triton's own compilation listener counted, each number in its place."""
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run([real_torch_python, "-I", "-c", _COUNTS, str(RUNNER), _spec(512, 4)], capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    first, second = json.loads(proc.stdout.strip().splitlines()[-1])
    assert first == {"compiled": 1, "hit": 0} and second == {"compiled": 0, "hit": 1}, (first, second)
    P = _module("precompile")

    class Pool:
        size = 16

    assert P._words({"compiled": 20, "hit": 7}, Pool(), {"compiled": 0, "hit": 27}, 8) == (
        ": 20 compiled and 7 found in Triton's cache by 16 worker processes; then 27 loaded from Triton's cache")
    assert P._words(None, None, {"compiled": 3, "hit": 24}, 8) == (
        ": 24 loaded from Triton's cache and 3 compiled on 8 thread(s)")
    assert P._words(None, None, None, 8) == ""  # a Triton without a listener: nothing said that was not counted
