"""`tritonlock why`: what stands between a target and each newer torch line, the least change that unlocks it
(checked by resolving again), and the compat/ rows each line rests on."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tritonlock.cli import main
from tritonlock.intent.read import parse_intent
from tritonlock.compat.matrix import load_matrix
from tritonlock.decide.resolve import resolve_one
from tritonlock.decide.why import Advice, advise, format_advice

M = load_matrix()
EXAMPLES = Path(__file__).parents[1] / "examples"


def _advise(env: str, torch: str | None = None, **target: object) -> Advice:
    target.setdefault("name", "t")
    body = "\n".join(f"{k} = {json.dumps(v)}" for k, v in target.items())
    it = parse_intent(f"[environment]\n{env}\n[[targets]]\n{body}\n")
    return advise(it, M, it.targets[0], "3.12", torch)


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def test_an_a100_on_r535_needs_the_r580_driver_and_python_311_for_torch_215() -> None:
    a = _advise("", driver="535.104.05", gpus=["A100", "A100"], python="3.10", glibc="2.31")
    assert a.now.ok and a.now.torch == "2.14.1"
    (line,) = a.lines
    assert (line.torch, line.triton, line.status) == ("2.15.0", "3.9.0", "blocked")
    assert line.summary == ("torch 2.15.0 + triton 3.9.0: needs driver >= 580.65.06 (you have 535.104.05; the R580 "
                            "branch) and Python 3.11 (you have 3.10; torch 2.15.0 supports 3.11–3.15: python = \"3.11\" "
                            "for target 't')")
    assert [(c.kind, c.have, c.need) for c in line.changes] == [("driver", "535.104.05", "580.65.06"),
                                                                 ("python", "3.10", "3.11")]
    assert any(s.startswith("minor_compat 13: https://docs.nvidia.com/") for s in line.sources)
    assert any(s.startswith("ptxas triton 3.9.0 linux_x86_64: https://") for s in line.sources)
    assert any(s.startswith("torch 2.15.0: https://") for s in line.sources)
    # the claim: with exactly those changes the resolver picks torch 2.15.0
    it = parse_intent('[[targets]]\nname = "t"\ndriver = "580.65.06"\ngpus = ["8.0"]\npython = "3.11"\nglibc = "2.31"\n')
    assert resolve_one(it, M, it.targets[0], "3.12").torch == "2.15.0"
    it = parse_intent('[[targets]]\nname = "t"\ndriver = "575.51.03"\ngpus = ["8.0"]\npython = "3.11"\nglibc = "2.31"\n')
    assert resolve_one(it, M, it.targets[0], "3.12").torch != "2.15.0"  # and the driver is the least that does


def test_blackwell_on_r575_is_told_the_triton_ptxas_is_what_blocks_213() -> None:
    a = _advise("", driver="575.57.08", gpus=["RTX 5090"], python="3.12", glibc="2.35")
    assert a.now.torch == "2.11.0"
    by = {ln.torch: ln for ln in a.lines}
    assert set(by) == {"2.15.0", "2.14.1", "2.13.0", "2.12.1"}
    line = by["2.13.0"]
    assert line.blocker is not None and "bundled ptxas-blackwell (CUDA 13.1), whose kernels need driver >= 580.65.06" \
        in line.blocker
    assert [(c.kind, c.need) for c in line.changes] == [("driver", "580.65.06")]
    assert any(s.startswith("ptxas triton 3.7.1 linux_x86_64: https://files.pythonhosted.org/") for s in line.sources)


def test_pascal_is_told_which_build_dropped_it() -> None:
    a = _advise("", driver="470.256.02", gpus=["GTX 1080"], python="3.10", glibc="2.31")
    assert not a.now.ok
    first, second = a.lines
    assert first.status == "unreachable" and first.summary == (
        "torch 2.15.0 + triton 3.9.0: your GPU (sm_61) is not in any build of torch 2.15.0 for linux_x86_64; the "
        "newest torch with one is 2.14.1")
    assert any(s.startswith("torch.variant 2.15.0 cu130: ") for s in first.sources)
    assert second.torch == "2.14.1" and [(c.kind, c.need) for c in second.changes] == [
        ("driver", "525.60.13"), ("triton", "none")]
    assert "its triton 3.8.0 cannot compile for compute capability 6.1" in second.changes[1].words
    assert second.then is not None and (second.then.backend, second.then.triton_package) == ("cu126", None)


def test_glibc_217_lines_that_need_the_same_change_read_as_one() -> None:
    a = _advise("", driver="550.54.15", gpus=["A100"], python="3.10", glibc="2.17")
    assert a.now.torch == "2.6.0"
    glibc = [ln for ln in a.lines if [c.kind for c in ln.changes] == ["glibc"]]
    assert [ln.torch for ln in glibc] == ["2.14.1", "2.13.0", "2.12.1", "2.11.0", "2.10.0", "2.9.1", "2.8.0", "2.7.1"]
    assert all(ln.changes[0].need == "2.28" for ln in glibc)
    text = format_advice(a, sources=False)
    assert "  torch 2.7.1–2.14.1 + triton 3.3.1–3.8.0: needs glibc >= 2.28 (you have 2.17: a newer OS image)" in text


def test_a_line_the_intent_rules_out_says_so() -> None:
    a = _advise('torch = "<2.14"', driver="580.95.05", gpus=["9.0"], python="3.12", glibc="2.39")
    assert a.now.torch == "2.13.0"
    assert [(ln.torch, ln.status) for ln in a.lines] == [("2.15.0", "excluded"), ("2.14.1", "excluded")]
    assert a.lines[0].summary == ('torch 2.15.0 + triton 3.9.0: needs torch = ">=2.15.0" in triton-env.toml (it fits '
                                  "this machine as it is)")
    assert a.lines[0].blocker == "torch = '<2.14' in triton-env.toml rules it out"


def test_cli_why_on_the_cluster_example_and_its_json_contract() -> None:
    code, out = _run("why", "-p", str(EXAMPLES / "clusters"), "--no-sources")
    assert code == 0, out
    assert "target a100-cluster (linux/x86_64, Python 3.10, glibc 2.31, driver 535.104.05, GPUs 8.0, 8.0)" in out
    assert "  torch 2.15.0 + triton 3.9.0: needs driver >= 580.65.06 (you have 535.104.05; the R580 branch)" in out
    assert "target h200 " in out and "nothing newer: this is the newest torch line the matrix knows" in out
    code, out = _run("why", "-p", str(EXAMPLES / "clusters"), "--json", "--target", "rtx5090-workstation",
                     "--torch", "2.13")
    assert code == 0, out
    doc = json.loads(out)
    assert set(doc) == {"matrix-version", "targets"}
    (t,) = doc["targets"]
    assert set(t) == {"name", "target", "now", "lines", "packages", "checked"}
    (line,) = t["lines"]
    assert set(line) == {"torch", "triton_package", "triton", "status", "summary", "blocker", "changes", "then",
                         "sources", "with_packages"}
    assert line["with_packages"] is None and t["checked"].endswith("(no fresh triton-env.lock: run `tritonlock "
                                                                   "resolve`, then `why` checks that too)")
    assert (line["torch"], line["status"], line["then"]["torch"]) == ("2.13.0", "blocked", "2.13.0")
    (change,) = line["changes"]
    assert set(change) == {"kind", "have", "need", "words", "sources"}
    assert (change["kind"], change["need"]) == ("driver", "580.65.06") and change["sources"]


def test_cli_why_bad_options_are_bad_input() -> None:
    code, out = _run("why", "-p", str(EXAMPLES / "clusters"), "--target", "nope")
    assert code == 2 and "has no target 'nope' (it has: h200, a100-cluster, rtx5090-workstation, laptop) — pass one" in out
    code, out = _run("why", "-p", str(EXAMPLES / "clusters"), "--torch", "9.9")
    assert code == 2 and "--torch 9.9: the matrix knows torch 2.0.0–2.15.0" in out


def test_the_manual_shows_what_why_really_says_for_the_cluster_example() -> None:
    page = (Path(__file__).parents[1] / "docs" / "decision.md").read_text(encoding="utf-8")
    shown = page.split("For [`examples/clusters`](../examples/clusters/triton-env.toml):\n\n```\n", 1)[1].split("\n```", 1)[0]
    code, out = _run("why", "-p", str(EXAMPLES / "clusters"))
    assert code == 0 and out.rstrip() == shown


def test_why_reads_in_one_screen_and_its_sources_are_behind_a_flag() -> None:
    code, plain = _run("why", "-p", str(EXAMPLES / "clusters"))
    assert code == 0 and "rests on" not in plain and "https://" not in plain
    assert max(len(line) for line in plain.splitlines()) < 400 and len(plain.splitlines()) < 40
    code, cited = _run("why", "-p", str(EXAMPLES / "clusters"), "--sources")
    assert code == 0 and "      rests on torch 2.15.0: https://" in cited
    code, old = _run("why", "-p", str(EXAMPLES / "clusters"), "--no-sources")  # still accepted
    assert code == 0 and old == plain


def test_why_for_amd_and_intel_targets_answers_without_a_traceback(tmp_path: Path) -> None:
    """AMD gfx targets and Intel device names are no compute capabilities: the CUDA rules once parsed them as
    such (`cc_tuple('gfx1100')`). `why` now answers for each target, in every form."""
    (tmp_path / "triton-env.toml").write_text(
        '[environment]\npython = "3.12"\n'
        '[[targets]]\nname = "mi300x"\ngpus = ["MI300X"]\namdgpu = "6.4"\n'
        '[[targets]]\nname = "arc"\ngpus = ["Arc B580"]\n'
        '[[targets]]\nname = "rx-win"\ngpus = ["gfx1100"]\namdgpu = "6.4"\nos = "windows"\n'
        '[[targets]]\nname = "apu-arm"\ngpus = ["gfx942"]\namdgpu = "6.4"\narch = "aarch64"\n')
    for args in (["why"], ["why", "--json"], ["why", "--sources"], ["why", "--torch", "2.9"]):
        r = CliRunner().invoke(main, [*args, "-p", str(tmp_path)])
        assert r.exception is None or isinstance(r.exception, SystemExit), (args, repr(r.exception))
        assert r.exit_code == 0, (args, r.output)
    text = CliRunner().invoke(main, ["why", "-p", str(tmp_path)]).output
    for name in ("mi300x", "arc", "rx-win", "apu-arm"):
        assert f"target {name} (" in text
    assert "PyTorch publishes ROCm builds for linux_x86_64 only, not win_amd64" in text
