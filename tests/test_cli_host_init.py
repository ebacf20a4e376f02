"""`tritonlock init` and `tritonlock host` as a user types them (this machine has no GPU)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.host import clear_cache
from tritonlock.intent.read import read_intent


@pytest.fixture(autouse=True)
def _fresh_detection() -> None:
    clear_cache()


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), env=env)
    return r.exit_code, r.output


def test_init_writes_a_valid_commented_intent_and_refuses_to_overwrite(tmp_path: Path) -> None:
    code, out = _run("init", "-p", str(tmp_path), "--no-index-check")
    assert code == 0 and "next: `tritonlock resolve`" in out
    text = (tmp_path / "triton-env.toml").read_text()
    assert text.startswith("# triton-env.toml") and "no NVIDIA GPU" in text
    it = read_intent(tmp_path / "triton-env.toml")
    assert it.torch == ">=2.6" and it.python is not None
    code, out = _run("init", "-p", str(tmp_path), "--no-index-check")
    assert code == 2 and "already exists — edit it, or pass --force" in out


def test_host_json_and_overrides_beat_detection() -> None:
    code, out = _run("host", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["os"] == "linux" and doc["driver"] is None and doc["gpus"] == []
    code, out = _run("host", "--json", "--driver", "535.104.05", "--gpus", "A100,A100", "--glibc", "2.31",
                     env={"TRITONLOCK_DRIVER": "470.82.01"})
    doc = json.loads(out)
    assert (doc["driver"], [g["cc"] for g in doc["gpus"]], doc["glibc"]) == ("535.104.05", ["8.0", "8.0"], "2.31")
    code, out = _run("host", "--json", env={"TRITONLOCK_DRIVER": "470.82.01"})
    assert json.loads(out)["driver"] == "470.82.01"


def test_host_save_round_trips_into_resolve(tmp_path: Path) -> None:
    saved = tmp_path / "a100.toml"
    code, out = _run("host", "--save", str(saved), "--name", "a100", "--driver", "535.104.05", "--gpus", "8.0",
                     "--glibc", "2.31", "--python", "3.10")
    assert code == 0 and "wrote target 'a100'" in out
    (tmp_path / "triton-env.toml").write_text('[environment]\ntorch = ">=2.4"\n')
    code, out = _run("resolve", "-p", str(tmp_path), "--dry-run", "--json", "--target-file", str(saved))
    assert code == 0, out
    (t,) = json.loads(out)["targets"]
    assert t["name"] == "a100" and t["python"] == "3.10" and t["backend"].startswith("cu12")


def test_host_save_in_a_new_project_makes_hosts_and_names_the_pattern_from_the_intent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/fleets.md and init's template say `tritonlock host --save hosts/NAME.toml`: in a new project hosts/ does not
    exist yet (it failed: "cannot write it (No such file or directory)"), and run from a subdirectory the advice
    named a target-files pattern relative to that subdirectory, not to triton-env.toml as target-files are read."""
    (tmp_path / "triton-env.toml").write_text('[environment]\ntorch = ">=2.4"\n')
    (tmp_path / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "src" / "deep")
    code, out = _run("host", "--save", "hosts/me.toml", "--name", "me")
    assert code == 0, out
    assert (tmp_path / "src" / "deep" / "hosts" / "me.toml").is_file()
    assert out.strip() == ("wrote target 'me' to hosts/me.toml — include it from ../../triton-env.toml: add "
                           'target-files = ["src/deep/hosts/*.toml"] at its top (before any [table]), paste it there, '
                           "or pass `tritonlock resolve --target-file hosts/me.toml`")
    # the advice, followed, works: the intent now includes the saved machine
    intent = tmp_path / "triton-env.toml"
    intent.write_text('target-files = ["src/deep/hosts/*.toml"]\n' + intent.read_text())
    assert [t.name for t in read_intent(intent).targets] == ["me"]
    code, out = _run("host", "--help")  # it said "the hostname's first GPU model": no hostname is used
    assert "(default: the first GPU's model, e.g. h200 or rtx-4090; cpu without one)" in " ".join(out.split())
    code, out = _run("host", "--save", "hosts/me.toml", "--name", "me")
    assert code == 0 and out.strip().endswith('includes it (target-files = ["src/deep/hosts/*.toml"]): '
                                              "`tritonlock resolve` locks for it")


def test_bad_override_is_a_clean_error() -> None:
    code, out = _run("host", "--driver", "banana")
    assert code == 2 and "Traceback" not in out and "driver" in out


def test_missing_intent_says_what_to_do(tmp_path: Path) -> None:
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 2 and out.strip() == f"error: {tmp_path / 'triton-env.toml'}: no such file — run `tritonlock init` to write one"


def test_intent_python_beats_the_running_interpreter_for_the_host(tmp_path: Path) -> None:
    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.12"\ntorch = "==2.6.0"\n')
    code, out = _run("resolve", "-p", str(tmp_path), "--dry-run", "--json")
    assert code == 0, out
    (t,) = json.loads(out)["targets"]
    assert (t["name"], t["python"]) == ("host", "3.12")  # this interpreter is 3.11


def test_init_shows_this_machine_as_host_save_writes_it(tmp_path: Path) -> None:
    """The commented [[targets]] table in the starter is, uncommented, exactly what `host --save` writes."""
    from tritonlock import _toml

    code, out = _run("init", "-p", str(tmp_path), "--no-index-check")
    assert code == 0, out
    text = (tmp_path / "triton-env.toml").read_text()
    block = text.split("This machine, as `tritonlock host --save` writes it:\n", 1)[1]
    uncommented = "\n".join(line.removeprefix("# ") for line in block.splitlines())
    code, out = _run("host", "--save", str(tmp_path / "host.toml"))
    assert code == 0, out
    saved = _toml.loads((tmp_path / "host.toml").read_text())
    assert _toml.loads(uncommented) == saved and saved["targets"][0]["name"] == "cpu"
    assert "[indexes]" not in text.replace("# [indexes]", "")  # no index question was asked
    lines = text.splitlines()
    columns = {line.index(" # ") for line in lines if line[:1].isalpha() and " # " in line}
    assert len(columns) == 1, lines  # the [environment] comments line up


@pytest.fixture
def torch_index(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Point PyTorch's index (compat/'s template) somewhere else for this test."""
    from tritonlock.compat.matrix import Matrix

    def point(template: str) -> None:
        monkeypatch.setattr(Matrix, "index_url", lambda self, backend: template.format(backend=backend))
    return point


def test_init_where_only_the_default_index_answers(tmp_path: Path, local_index: LocalIndex,
                                                    torch_index: Callable[[str], None],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The only-PyPI machine: init takes torch from the default index, and the first resolve works (not exit 4)."""
    from tritonlock.lock.index import default_index

    default_index.cache_clear()
    monkeypatch.setenv("PIP_INDEX_URL", local_index.index_url("simple"))
    torch_index("http://127.0.0.1:9/whl/{backend}")  # a closed port: nothing answers
    code, out = _run("init", "-p", str(tmp_path))
    assert code == 0, out
    assert ("note: PyTorch's index (http://127.0.0.1:9/whl) did not answer when `tritonlock init` ran "
            "(ConnectionError); your default index") in out
    assert read_intent(tmp_path / "triton-env.toml").torch_index == "default"
    intent = tmp_path / "triton-env.toml"
    intent.write_text(intent.read_text().replace('torch = ">=2.6"', 'torch = "==2.6.0"'))
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 0, out
    assert f"index: {local_index.index_url('simple')}" in out
    # where PyTorch's index answers, the [indexes] table stays a comment
    torch_index(local_index.url + "/whl/{backend}")
    code, out = _run("init", "-p", str(tmp_path), "--force")
    assert code == 0 and "did not answer" not in out and read_intent(intent).torch_index is None
    # where nothing answers, init says so and leaves the choice to the user
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    default_index.cache_clear()
    torch_index("http://127.0.0.1:9/whl/{backend}")
    code, out = _run("init", "-p", str(tmp_path), "--force")
    assert code == 0 and "warning: neither PyTorch's index" in out and read_intent(intent).torch_index is None
    default_index.cache_clear()


def test_resolve_names_an_unreachable_torch_index_and_the_way_out(tmp_path: Path, local_index: LocalIndex,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 4 still (an index failed), but the message says which one and how to do without it."""
    from tritonlock.lock.index import default_index

    default_index.cache_clear()
    monkeypatch.setenv("PIP_INDEX_URL", local_index.index_url("simple"))
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")  # the closed port will not open: fail fast
    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.11"\ntorch = "==2.6.0"\n'
                                              '[indexes]\ntorch = "http://127.0.0.1:9/whl/{backend}"\n')
    code, out = _run("resolve", "-p", str(tmp_path))
    default_index.cache_clear()
    assert code == 4
    assert ("cause: the torch index does not answer from here: http://127.0.0.1:9/whl/cpu (ConnectionError); your "
            f"default index ({local_index.index_url('simple')}) does") in out
    assert "  fix: take torch from the default index — add to " in out and '    torch = "default"' in out
    assert out.count("fix:") == 1


def test_an_unreachable_torch_index_for_amd_and_intel_targets_names_a_mirror_not_the_default_index(
        tmp_path: Path, local_index: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyPI has no ROCm or XPU build of torch: taking torch from the default index is no way out for those targets."""
    from tritonlock.lock.index import default_index

    default_index.cache_clear()
    monkeypatch.setenv("PIP_INDEX_URL", local_index.index_url("simple"))
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    body = ('[environment]\npython = "3.11"\ntorch = "==2.13.0"\n'
            '[indexes]\ntorch = "http://127.0.0.1:9/whl/{backend}"\n'
            '[[targets]]\nname = "mi300x"\ngpus = ["gfx942"]\n[[targets]]\nname = "arc"\ngpus = ["bmg"]\n')
    (tmp_path / "triton-env.toml").write_text(body)
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 4, out
    assert "http://127.0.0.1:9/whl/rocm7.2" in out and "but PyPI has no ROCm or XPU build of torch" in out, out
    assert 'torch = "default"' not in out and '    torch = "https://mirror.example/whl/{backend}"' in out
    assert "on a machine that reaches 127.0.0.1:9" in out and out.count("fix:") == 1
    assert not (tmp_path / "triton-env.lock").exists()
    # beside a CUDA machine the default index is the way out for it, and the mirror for the AMD and Intel ones
    (tmp_path / "triton-env.toml").write_text(body + '[[targets]]\nname = "h100"\ndriver = "580.95.05"\n'
                                                     'gpus = ["9.0"]\n')
    code, out = _run("resolve", "-p", str(tmp_path))
    default_index.cache_clear()
    assert code == 4, out
    assert '    torch = "default"' in out
    assert "; the AMD and Intel targets (arc, mi300x) need the mirror: PyPI has no ROCm or XPU build of torch" in out


def test_host_save_replaces_only_a_file_it_wrote(tmp_path: Path) -> None:
    saved = tmp_path / "a100.toml"
    saved.write_text("# my notes about the cluster\n")
    code, out = _run("host", "--save", str(saved), "--name", "a100", "--driver", "535.104.05", "--gpus", "8.0")
    assert code == 2 and f"host --save: {saved} exists and was not written by tritonlock" in out, out
    assert saved.read_text() == "# my notes about the cluster\n"
    code, out = _run("host", "--save", str(saved), "--name", "a100", "--driver", "535.104.05", "--gpus", "8.0",
                     "--force")
    assert code == 0 and 'name = "a100"' in saved.read_text()
    code, out = _run("host", "--save", str(saved), "--name", "a100b", "--driver", "535.104.05", "--gpus", "8.0")
    assert code == 0 and 'name = "a100b"' in saved.read_text()  # its own file: saved again
    # a failed save leaves no directory behind (a file name longer than the file system takes)
    code, out = _run("host", "--save", str(tmp_path / "new" / "hosts" / ("x" * 300 + ".toml")))
    assert code == 2 and "cannot write it" in out, out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a100.toml"]


def test_the_fix_for_a_broken_host_file_works_when_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hint pointed at `tritonlock host --save`, which (rightly) refuses to replace a file tritonlock did not
    write: the hint now names the command that works, and it does."""
    import re
    import shlex

    monkeypatch.chdir(tmp_path)
    (tmp_path / "hosts").mkdir()
    (tmp_path / "triton-env.toml").write_text('target-files = ["hosts/*.toml"]\n[environment]\npython = "3.11"\n')
    for broken in ("[[targets]\nname = 'x'\n", "# nothing here\n"):
        (tmp_path / "hosts" / "box.toml").write_text(broken)
        code, out = _run("resolve", "--dry-run")
        assert code == 2, out
        (cmd,) = re.findall(r"`(tritonlock host --save [^`]+)`", out)
        code, out = _run(*shlex.split(cmd)[1:], "--name", "box")
        assert code == 0, out
        code, out = _run("resolve", "--dry-run")
        assert code == 0 and "target box:" in out, out


def test_host_save_never_suggests_or_trips_on_an_absolute_target_files_pattern(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An absolute pattern in target-files gave a traceback (pathlib refuses to glob one), and the advice for a file
    saved outside a project suggested exactly such a pattern — which the intent reader then refuses."""
    import re

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "triton-env.toml").write_text('target-files = ["/etc/*"]\n[environment]\npython = "3.11"\n')
    monkeypatch.chdir(proj)
    code, out = _run("host", "--save", "hosts/x.toml", "--name", "x")
    assert code == 0 and "Traceback" not in out, out
    assert 'add target-files = ["hosts/*.toml"]' in out
    # saved outside that project: no target-files pattern at all (it could only be absolute, or reach outside)
    code, out = _run("host", "--save", str(tmp_path / "elsewhere" / "y.toml"), "--name", "y")
    assert code == 0 and "is outside the project" in out and "target-files = [" not in out, out
    # no project here: the pattern it names is relative, and followed, it works
    bare = tmp_path / "bare"
    bare.mkdir()
    monkeypatch.chdir(bare)
    saved = tmp_path / "fleet" / "hosts" / "z.toml"
    code, out = _run("host", "--save", str(saved), "--name", "z")
    assert code == 0, out
    m = re.search(r'include it from a triton-env.toml in (\S+) \(target-files = \["([^"]+)"\]', out)
    assert m is not None and not Path(m[2]).is_absolute(), out
    intent = Path(m[1]) / "triton-env.toml"
    intent.write_text(f'target-files = ["{m[2]}"]\n[environment]\npython = "3.11"\n')
    assert [t.name for t in read_intent(intent).targets] == ["z"]
