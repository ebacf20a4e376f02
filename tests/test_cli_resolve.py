"""`tritonlock resolve` end to end against a real local index, and `show`."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from conftest import write_default_index_intent, write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.lock.lockfile import read_lock

INTENT = """
[environment]
python = "3.11"
torch = "==2.6.0"
packages = ["einops"]

[[targets]]
name = "a100"
driver = "550.54.15"
gpus = ["8.0", "8.0"]
glibc = "2.31"

[[targets]]
name = "laptop"
"""


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def test_resolve_writes_a_complete_lock(tmp_path: Path, local_index: LocalIndex) -> None:
    write_intent(tmp_path, local_index, INTENT)
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0, out
    lock = read_lock(tmp_path / "triton-env.lock")
    a100, laptop = lock.targets
    n = len(a100.packages) + len(laptop.packages)
    assert f"wrote {tmp_path}/triton-env.lock (2 targets, {n} packages; no triton-env.lock yet)" in out  # not "2 target(s)"
    # cu124 and cu118 are 2.6's stable CUDA (RELEASE.md); cu126 is experimental, so cu124 is preferred
    assert (a100.selection.torch, a100.selection.backend, a100.selection.triton) == ("2.6.0", "cu124", "3.2.0")
    assert laptop.selection.backend == "cpu"
    pk = {p.name: p for p in a100.packages}
    assert set(pk) == {"torch", "triton", "filelock", "nvidia-cuda-runtime-cu12", "einops", "typing-extensions"}
    assert pk["torch"].version == "2.6.0+cu124"
    torch_index = f"{local_index.url}/whl/cu124"
    # each package bound to exactly one index: the torch family to the torch index, the rest to the default
    assert pk["torch"].index == pk["triton"].index == torch_index
    # triton for the CPU build comes from the default index: PyTorch's cpu index does not publish it
    lk = {p.name: p for p in laptop.packages}
    assert lk["torch"].index == f"{local_index.url}/whl/cpu"
    assert lk["triton"].index == local_index.index_url("simple") and lk["triton"].version == "3.2.0"
    assert pk["filelock"].index == local_index.index_url("simple")
    assert pk["filelock"].version == "3.16.1"  # not the decoy 99.0 on the torch index
    assert all(w.url.startswith(p.index.rsplit("/", 1)[0]) for p in a100.packages for w in p.wheels)
    for p in a100.packages:
        assert p.wheels and all(len(w.sha256) == 64 and w.size for w in p.wheels)
    assert {p.name: p.version for p in laptop.packages}["torch"] == "2.6.0+cpu"


def test_a_target_without_a_driver_locks_numpy_for_tritons_interpreter(tmp_path: Path, local_index: LocalIndex) -> None:
    """`verify` runs Triton kernels in the interpreter where there is no driver; the interpreter imports numpy."""
    from tritonlock.project import INTERPRETER_REASON

    write_intent(tmp_path, local_index, INTENT)
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0, out
    a100, laptop = read_lock(tmp_path / "triton-env.lock").targets
    assert laptop.selection.triton_package == "triton"
    assert laptop.selection.packages == ("einops", "numpy")
    assert laptop.selection.reasons[-1] == INTERPRETER_REASON and f"why: {INTERPRETER_REASON}" in out
    assert {p.name: p.version for p in laptop.packages}["numpy"] == "1.26.4"
    assert a100.selection.packages == ("einops",) and "numpy" not in {p.name for p in a100.packages}
    # the dry run says the same; a numpy the intent asks for is not added twice
    code, out = _run("resolve", "-p", str(tmp_path), "--dry-run", "--json")
    assert code == 0 and INTERPRETER_REASON in json.loads(out)["targets"][1]["reasons"]
    write_intent(tmp_path, local_index, INTENT.replace('["einops"]', '["NumPy>=1.20"]'))
    code, out = _run("resolve", "-p", str(tmp_path), "--dry-run", "--json")
    laptop_json = json.loads(out)["targets"][1]
    assert code == 0 and INTERPRETER_REASON not in laptop_json["reasons"]


def test_resolve_is_deterministic_and_skips_when_nothing_changed(tmp_path: Path, local_index: LocalIndex) -> None:
    write_intent(tmp_path, local_index, INTENT)
    assert _run("resolve", "-p", str(tmp_path))[0] == 0
    first = (tmp_path / "triton-env.lock").read_bytes()
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0 and "is up to date" in out
    code, out = _run("resolve", "-p", str(tmp_path), "--upgrade")
    assert code == 0 and "wrote" in out
    assert (tmp_path / "triton-env.lock").read_bytes() == first
    # a comment-only edit keeps the lock fresh; a real change re-resolves
    intent = tmp_path / "triton-env.toml"
    intent.write_text("# a comment\n" + intent.read_text())
    assert "is up to date" in _run("resolve", "-p", str(tmp_path))[1]
    intent.write_text(intent.read_text().replace('packages = ["einops"]', "packages = []"))
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0 and "changed since the lock was written" in out
    assert "einops" not in (tmp_path / "triton-env.lock").read_text()


def test_dry_run_json_contract_needs_no_network(tmp_path: Path) -> None:
    (tmp_path / "triton-env.toml").write_text(
        INTENT + '\n[indexes]\ntorch = "http://127.0.0.1:9/whl/{backend}"\ndefault = "http://127.0.0.1:9/simple"\n')
    code, out = _run("resolve", "-p", str(tmp_path), "--dry-run", "--json")
    assert code == 0, out
    doc = json.loads(out)
    a100 = doc["targets"][0]
    assert set(a100) == {"name", "ok", "python", "torch", "backend", "index", "triton_package", "triton",
                         "warnings", "reasons"}
    assert (a100["name"], a100["ok"], a100["torch"], a100["backend"], a100["triton"], a100["triton_package"]) == (
        "a100", True, "2.6.0", "cu124", "3.2.0", "triton")
    assert a100["index"] == "http://127.0.0.1:9/whl/cu124"
    assert not (tmp_path / "triton-env.lock").exists()


def test_conflict_exits_3_names_the_facts_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "triton-env.toml").write_text("""
[environment]
python = "3.11"
torch = ">=2.9"
[[targets]]
name = "old-driver"
driver = "470.82.01"
gpus = ["8.0"]
""")
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 3
    assert "nothing fits target 'old-driver'" in out
    assert "470.82.01" in out and "fix:" in out
    assert "Traceback" not in out
    assert not (tmp_path / "triton-env.lock").exists()
    code, out = _run("resolve", "-p", str(tmp_path), "--dry-run", "--json")
    assert code == 3
    t = json.loads(out)["targets"][0]
    assert t["ok"] is False and "470.82.01" in t["conflict"]


def test_show_prints_every_package(tmp_path: Path, local_index: LocalIndex) -> None:
    write_intent(tmp_path, local_index, INTENT)
    assert _run("resolve", "-p", str(tmp_path))[0] == 0
    code, out = _run("show", "-p", str(tmp_path), "--target", "a100")
    assert code == 0
    assert "torch 2.6.0 (cu124)" in out and "2.6.0+cu124" in out and "einops" in out
    code, out = _run("show", "-p", str(tmp_path), "--target", "nope")
    assert code == 2 and "has no target 'nope'" in out


def test_torch_from_the_default_index(tmp_path: Path, local_index: LocalIndex) -> None:
    write_default_index_intent(tmp_path, local_index, '[[targets]]\nname = "gpu"\ndriver = "550.54.15"\ngpus = ["8.0"]\n')
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0, out
    (t,) = read_lock(tmp_path / "triton-env.lock").targets
    assert t.selection.backend == "cu124" and t.selection.index == local_index.index_url("simple")
    pk = {p.name: p for p in t.packages}
    assert pk["torch"].version == "2.6.0" and pk["torch"].index == local_index.index_url("simple")
    assert all(p.index == local_index.index_url("simple") for p in t.packages)


def test_every_example_resolves_without_network() -> None:
    examples = sorted((Path(__file__).parents[1] / "examples").glob("*/triton-env.toml"))
    assert {p.parent.name for p in examples} >= {"clusters", "pypi", "quickstart"}
    for intent in examples:
        code, out = _run("resolve", "-p", str(intent.parent), "--dry-run", "--json")
        assert code == 0, (intent, out)
        targets = json.loads(out)["targets"]
        assert targets and all(t["ok"] and t["torch"] and t["backend"] for t in targets), (intent, out)


def test_inputs_users_write_local_labels_and_unknown_backends(tmp_path: Path) -> None:
    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.12"\ntorch = "==2.13.0+cpu"\n'
                                              '[[targets]]\nname = "box"\ndriver = "580.65.06"\ngpus = ["9.0"]\n')
    code, out = _run("resolve", "--dry-run", "--json", "-p", str(tmp_path))
    assert code == 0, out
    (box,) = json.loads(out)["targets"]
    assert (box["ok"], box["torch"], box["backend"]) == (True, "2.13.0", "cpu")
    assert "cpu: cuda = 'cpu' asked for" in box["reasons"]
    (tmp_path / "triton-env.toml").write_text('[environment]\ncuda = "cu999"\n')
    code, out = _run("resolve", "--dry-run", "--json", "-p", str(tmp_path))
    assert code == 2 and "unknown backend 'cu999' — use one of: auto, cpu, cu117" in out


def test_a_lock_other_commands_refuse_is_never_up_to_date(tmp_path: Path, local_index: LocalIndex) -> None:
    """Not valid TOML, or a table edited after the lock was written: `resolve` replaces it and says why, instead of
    calling it "up to date" (its header alone still matched)."""
    write_intent(tmp_path, local_index, INTENT)
    assert _run("resolve", "-p", str(tmp_path))[0] == 0
    lock_path = tmp_path / "triton-env.lock"
    good = lock_path.read_text()
    edits = {
        "not valid TOML": good + "\n[[targets\n",
        "was edited after the lock was generated": good.replace("the exact version torch 2.6.0 requires",
                                                                "edited by hand", 1),
        "header or its list of targets was edited": good.replace('digest = "sha256:', 'digest = "sha256:0', 1),
    }
    for why, text in edits.items():
        lock_path.write_text(text)
        assert _run("show", "-p", str(tmp_path))[0] == 2  # every other command refuses it
        code, out = _run("resolve", "-p", str(tmp_path))
        assert code == 0, out
        assert "up to date" not in out and "regenerate it" not in out
        assert "; the existing lock was refused (" in out and "); re-resolving)" in out and why in out, out
        assert lock_path.read_text() == good
        read_lock(lock_path)


def test_cuda_cpu_from_a_default_index_with_only_cuda_builds_is_a_conflict(tmp_path: Path,
                                                                          local_index: LocalIndex) -> None:
    """cuda = "cpu" with torch = "default" on Linux, where the default index ships torch only as a CUDA build: no lock
    of that CUDA build with exit 0 — a conflict naming why and the two ways out, and no lock written."""
    (tmp_path / "triton-env.toml").write_text(
        f'[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n[indexes]\ntorch = "default"\n'
        f'default = "{local_index.index_url("simple")}"\n', encoding="utf-8")
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 3, out
    assert "torch 2.6.0: the default index ships only the cu124 build of it for linux_x86_64, no CPU-only build" in out
    assert "fix: for a CPU-only torch take it from PyTorch's cpu index" in out
    assert not (tmp_path / "triton-env.lock").exists()
    # the way the fix names for a machine that reaches only its default index: a mirror of PyTorch's index (here the
    # test index's whl/ tree) in [indexes] torch — the small CPU build is then locked
    form = re.search(r'\[indexes\] torch = "(https://<your mirror>(/whl/\{backend\}))"', out)
    assert form is not None, out
    (tmp_path / "triton-env.toml").write_text(
        f'[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n[indexes]\n'
        f'torch = "{local_index.url}{form[2]}"\ndefault = "{local_index.index_url("simple")}"\n', encoding="utf-8")
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0, out
    (t,) = read_lock(tmp_path / "triton-env.lock").targets
    assert t.selection.backend == "cpu" and t.selection.index == f"{local_index.url}/whl/cpu"
    assert {p.name: p.version for p in t.packages}["torch"] == "2.6.0+cpu"
