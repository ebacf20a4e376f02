"""target-files in the intent, and `tritonlock check`: fresh, then stale, drifted, unhashed, off-host, unverified."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.errors import IntentError
from tritonlock.intent.read import read_intent
from tritonlock.records import read_records

A100 = '[[targets]]\nname = "a100"\nos = "linux"\narch = "x86_64"\nglibc = "2.31"\ndriver = "550.54.15"\ngpus = ["8.0", "8.0"]\n'
LAPTOP = '# no NVIDIA GPU; detected by tritonlock host\n[[targets]]\nname = "laptop"\nos = "linux"\narch = "x86_64"\nglibc = "2.35"\n'
BODY = '''target-files = ["hosts/*.toml"]
[environment]
python = "3.11"
torch = "==2.6.0"
'''


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), env=env)
    return r.exit_code, r.output


def _project(root: Path, idx: LocalIndex) -> Path:
    (root / "hosts").mkdir(parents=True)
    (root / "hosts" / "a100.toml").write_text(A100)
    (root / "hosts" / "laptop.toml").write_text(LAPTOP)
    write_intent(root, idx, BODY)
    return root


# ---------------------------------------------------------------- target-files


def test_target_files_are_read_in_order_and_hashed(tmp_path: Path) -> None:
    (tmp_path / "hosts").mkdir()
    (tmp_path / "hosts" / "b.toml").write_text(LAPTOP)
    (tmp_path / "hosts" / "a.toml").write_text(A100)
    (tmp_path / "triton-env.toml").write_text(BODY + '[[targets]]\nname = "inline"\n')
    it = read_intent(tmp_path / "triton-env.toml")
    assert [t.name for t in it.targets] == ["inline", "a100", "laptop"]  # inline first, then files sorted
    assert [t.origin for t in it.targets] == ["intent", "file:hosts/a.toml", "file:hosts/b.toml"]
    assert it.targets[1].gpus == ("8.0", "8.0") and it.target_files == ("hosts/*.toml",)
    before = it.content_hash
    (tmp_path / "hosts" / "a.toml").write_text(A100.replace("550.54.15", "560.35.03"))
    assert read_intent(tmp_path / "triton-env.toml").content_hash != before  # a host file edit makes the lock stale


def test_target_file_errors_name_the_file_line_and_key(tmp_path: Path) -> None:
    (tmp_path / "hosts").mkdir()
    (tmp_path / "hosts" / "bad.toml").write_text('[[targets]]\nname = "x"\ndriver = "five"\nflavor = "y"\n')
    (tmp_path / "hosts" / "broken.toml").write_text("[[targets]\n")
    (tmp_path / "triton-env.toml").write_text('target-files = ["hosts/*.toml", "nope/*.toml"]\n')
    with pytest.raises(IntentError) as ei:
        read_intent(tmp_path / "triton-env.toml")
    msg = str(ei.value)
    assert f"{tmp_path}/hosts/bad.toml:3: targets[0].driver: 'five' is not an NVIDIA driver version" in msg
    assert f"{tmp_path}/hosts/bad.toml:4: targets[0].flavor: unknown key" in msg
    assert f"{tmp_path}/hosts/broken.toml:1: TOML syntax error" in msg
    assert "target-files[1]: 'nope/*.toml' matches no file" in msg and "triton-env.toml:1" in msg


def test_duplicate_names_are_errors_and_same_machines_are_reported(tmp_path: Path) -> None:
    (tmp_path / "hosts").mkdir()
    (tmp_path / "hosts" / "a.toml").write_text(A100)
    (tmp_path / "hosts" / "b.toml").write_text(A100)
    (tmp_path / "triton-env.toml").write_text('target-files = ["hosts/*.toml"]\n')
    with pytest.raises(IntentError, match=r"hosts/b.toml:2: targets\[0\].name: duplicate target name 'a100'"):
        read_intent(tmp_path / "triton-env.toml")
    (tmp_path / "hosts" / "b.toml").write_text(A100.replace('"a100"', '"a100-b"'))
    it = read_intent(tmp_path / "triton-env.toml")
    assert it.warnings == ("targets 'a100' (hosts/a.toml) and 'a100-b' (hosts/b.toml) describe the same machine; "
                           "both get the same lock — keep one of them",)
    code, out = _run("resolve", "--dry-run", "-p", str(tmp_path))
    assert code == 0 and "warning: targets 'a100' (hosts/a.toml) and 'a100-b'" in out


def test_absolute_or_escaping_globs_are_refused(tmp_path: Path) -> None:
    (tmp_path / "triton-env.toml").write_text('target-files = ["/etc/*.toml", "../x.toml", 3]\n')
    with pytest.raises(IntentError) as ei:
        read_intent(tmp_path / "triton-env.toml")
    assert "expected a list of glob strings" in str(ei.value)
    (tmp_path / "triton-env.toml").write_text('target-files = ["/etc/*.toml", "../x.toml"]\n')
    with pytest.raises(IntentError) as ei:
        read_intent(tmp_path / "triton-env.toml")
    assert str(ei.value).count("must be a relative path or glob inside the project") == 2


# ---------------------------------------------------------------- check


@pytest.fixture
def locked(tmp_path: Path, local_index: LocalIndex) -> Iterator[Path]:
    proj = _project(tmp_path / "proj", local_index)
    code, out = _run("resolve", "-p", str(proj))
    assert code == 0, out
    yield proj


def test_check_passes_on_a_fresh_lock(locked: Path) -> None:
    code, out = _run("check", "-p", str(locked))
    assert code == 0, out
    assert out.startswith(f"ok: {locked}/triton-env.lock is fresh — 2 targets, ")
    code, out = _run("check", "-p", str(locked), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] and doc["problems"] == [] and doc["targets"] == 2


def test_check_fails_after_an_intent_edit(locked: Path) -> None:
    p = locked / "triton-env.toml"
    p.write_text(p.read_text().replace('torch = "==2.6.0"', 'torch = "==2.7.1"'))
    code, out = _run("check", "-p", str(locked))
    assert code == 1
    lines = out.strip().splitlines()
    assert lines[0] == (f"{locked}/triton-env.lock is stale: {p} changed since "
                        "the lock was written — run `tritonlock resolve` and commit triton-env.lock")
    assert ("target 'a100': the decision would change with the current triton-env.toml and matrix "
            in out and "torch 2.6.0 → 2.7.1" in out)
    # the lock is then made fresh again: check passes
    assert _run("resolve", "-p", str(locked))[0] == 0
    assert _run("check", "-p", str(locked))[0] == 0


def test_check_fails_after_a_host_file_edit_naming_the_target(locked: Path) -> None:
    h = locked / "hosts" / "a100.toml"
    h.write_text(h.read_text().replace("550.54.15", "560.35.03"))
    code, out = _run("check", "-p", str(locked), "--json")
    doc = json.loads(out)
    assert code == 1 and [p["kind"] for p in doc["problems"]] == ["stale", "stale"]
    assert doc["problems"][1] == {"kind": "stale", "target": "a100", "message":
                                  "target 'a100': the machine changed (driver 550.54.15 → 560.35.03) — run "
                                  "`tritonlock resolve` and commit triton-env.lock"}
    # the file that changed is named, not triton-env.toml (which did not change) — by check, show and resolve
    assert doc["problems"][0]["message"] == (f"{locked}/triton-env.lock is stale: {h} changed since the lock was "
                                             "written — run `tritonlock resolve` and commit triton-env.lock")
    code, out = _run("show", "-p", str(locked))
    assert f"is stale ({h} changed since the lock was written)" in out and "triton-env.toml changed" not in out
    # and `resolve` sees it too, without --upgrade (the no-change check reads the host files)
    code, out = _run("resolve", "-p", str(locked))
    assert code == 0 and "wrote" in out and f"{h} changed since the lock was written" in out


def test_check_fails_for_a_missing_hash(locked: Path) -> None:
    lock = locked / "triton-env.lock"
    text = lock.read_text()
    i = text.index("hashes = { sha256 = ")
    lock.write_text(text[:i - 2] + text[text.index("}", i) + 1:])
    code, out = _run("check", "-p", str(locked))
    assert code == 1
    (line,) = out.strip().splitlines()
    assert line.startswith("target 'a100': package ") and " has no sha256 hash — run `tritonlock resolve`" in line


def test_check_fails_when_the_matrix_changes_a_decision(locked: Path, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    """A newer compat/ where torch 2.6.0 lost the build a100 got: its decision moves to another backend."""
    from tritonlock import _data, _fast
    from tritonlock.compat import matrix

    compat = tmp_path / "compat"
    shutil.copytree(_data.compat_root(), compat)  # type: ignore[arg-type]
    torch_toml = compat / "torch.toml"
    text = torch_toml.read_text()
    start = text.index('version = "2.6.0"')
    from tritonlock.lock.lockfile import read_lock

    was = read_lock(locked / "triton-env.lock").targets[0].selection.backend
    cu126 = text.index(f'\nbackend = "{was}"', start)
    block_start = text.rindex("[[torch.variant]]", start, cu126)
    block_end = text.index("[[torch", cu126)
    torch_toml.write_text(text[:block_start] + text[block_end:])
    meta = compat / "meta.toml"
    meta.write_text(re.sub(r'^version = "[^"]+"', 'version = "2099.1.1"', meta.read_text(), count=1, flags=re.M))
    monkeypatch.setattr(_data, "compat_root", lambda: compat)
    monkeypatch.setattr(_fast, "compat_root", lambda: compat)
    matrix._load_default.cache_clear()
    try:
        code, out = _run("check", "-p", str(locked))
    finally:
        matrix._load_default.cache_clear()
    assert code == 1, out
    assert "was written with compatibility matrix" in out and "`sync --locked` refuses it" in out
    assert "target 'a100': the decision would change under matrix 2099.1.1" in out and f"backend {was} → cu" in out
    assert "laptop" not in out  # its CPU build did not change


def test_check_host_and_require_verified(locked: Path, real_torch_python: str, real_triton: str,
                                        real_torch_backend: str, real_torch_version: str) -> None:
    code, out = _run("check", "-p", str(locked), "--host", env={"TRITONLOCK_ARCH": "aarch64"})
    assert code == 1 and out.startswith(f"this machine matches no target in {locked}/triton-env.lock (")
    assert "save it with `tritonlock host --save hosts/NAME.toml`" in out
    # passing, `--host` says which target this machine fits (the ok line read the same with and without --host)
    code, out = _run("check", "-p", str(locked), "--host", env={"TRITONLOCK_DRIVER": "none", "TRITONLOCK_GLIBC": "2.36"})
    assert code == 0 and out.rstrip().endswith("; this machine fits target 'laptop'"), out
    code, out = _run("check", "-p", str(locked), "--host", "--json",
                     env={"TRITONLOCK_DRIVER": "none", "TRITONLOCK_GLIBC": "2.36"})
    assert code == 0 and json.loads(out)["host_target"] == "laptop"
    assert json.loads(_run("check", "-p", str(locked), "--json")[1])["host_target"] is None
    code, out = _run("check", "-p", str(locked), "--require-verified")
    assert code == 1
    assert "target 'a100' was never verified with the current lock (no record)" in out
    assert "target 'laptop' was never verified with the current lock (no record)" in out
    # verify --record on the laptop target, with torch 2.13 + its triton where the lock pins 2.6 + 3.2: the run
    # is recorded as failed, and a failed run proves nothing (the passing path: test_fleet_slurm)
    env = {"TRITONLOCK_DRIVER": "none", "TRITONLOCK_NODE": "ci-runner-1", "TRITONLOCK_GLIBC": "2.36"}
    code, out = _run("verify", "-p", str(locked), "--python", real_torch_python, "--quick", "--record",
                     "--target", "laptop", env=env)
    assert code == 1 and "recorded: target laptop on ci-runner-1 (FAILED)" in out, out
    code, out = _run("check", "-p", str(locked), "--require-verified", "--json")
    doc = json.loads(out)
    assert [p["target"] for p in doc["problems"]] == ["a100", "laptop"] and doc["verified"] == [], doc
    # the problem names the run's first failure: with torch's CPU build (the lock's backend) the triton beside it;
    # with a CUDA build (what the default index ships) the build itself, before the triton
    (record,) = read_records(locked / "triton-env.verified.toml")
    wrong_triton = f"triton version: triton is {real_triton} but the lock pins triton==3.2.0"
    assert any(f.startswith(wrong_triton) for f in record.failures), record.failures
    first = wrong_triton if real_torch_backend == "cpu" else (
        "torch CUDA build: the lock's backend is cpu (CPU only (torch.version.cuda is None)) but torch "
        f"{real_torch_version} is built")
    assert record.failures[0].startswith(first), (real_torch_backend, record.failures)
    assert f"its last verify failed on ci-runner-1 ({record.when}: {record.failures[0]})" in doc["problems"][1]["message"]
    code, out = _run("show", "-p", str(locked), "--target", "laptop")
    assert "verified 20" in out and "on ci-runner-1: no GPU (interpreter), driver none, linux/x86_64 — FAILED" in out
    # a new lock for the laptop (another numpy, say) makes the record stale
    p = locked / "triton-env.toml"
    p.write_text(p.read_text().replace('python = "3.11"', 'python = "3.11"\npackages = ["einops"]'))
    assert _run("resolve", "-p", str(locked))[0] == 0
    code, out = _run("check", "-p", str(locked), "--require-verified")
    assert code == 1 and "target 'laptop' was never verified with the current lock (1 record(s) are stale" in out
    code, out = _run("show", "-p", str(locked), "--target", "laptop")
    assert "STALE: the target's packages changed since" in out


def test_check_calls_a_malformed_sha256_a_hash_problem(tmp_path: Path) -> None:
    """A file whose sha256 is there but not a sha256 (too short, not hex): a hash problem naming the file (kind
    "hash"), as a missing one is — not "the lock is unreadable", and not "has no hash"."""
    from test_lockfile import sample
    from tritonlock.lock import lockfile

    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.12"\n')
    good = lockfile.dumps(sample())
    for bad in ("abc", "z" * 64, "A" * 64, "b" * 63):
        (tmp_path / "triton-env.lock").write_text(good.replace('"' + "b" * 64 + '"', f'"{bad}"'))
        code, out = _run("check", "-p", str(tmp_path), "--json")
        problems = json.loads(out)["problems"]
        assert code == 1 and [p["kind"] for p in problems] == ["hash"], (bad, problems)
        assert ("package filelock 3.16.1 file filelock-3.16.1-py3-none-any.whl has a malformed sha256 "
                f"({bad!r}"[:120]) in problems[0]["message"], problems
    (tmp_path / "triton-env.lock").write_text(good.replace('hashes = { sha256 = "' + "b" * 64 + '" }', "hashes = {}"))
    problems = json.loads(_run("check", "-p", str(tmp_path), "--json")[1])["problems"]
    assert [p["kind"] for p in problems] == ["hash"] and "has no sha256 hash" in problems[0]["message"], problems


@pytest.mark.parametrize("planted", ["a FIFO", "a link to /dev/zero", "a 2 GB file", "not UTF-8"])
def test_a_kept_check_answer_that_is_not_a_small_file_is_no_answer(locked: Path, tmp_path: Path, planted: str) -> None:
    """check's kept answer (~/.cache/tritonlock/check/KEY.txt) replaced by a FIFO, a link to /dev/zero, a 2 GB file
    or bytes that are not text: `check` (the console script's fast path, then the full check) answers as if none were
    kept — it hung on the FIFO and read /dev/zero until memory ran out."""
    import os
    import subprocess
    import sys

    from tritonlock import _kept

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "tritonlock", "check", "-p", str(locked)], capture_output=True,
                              text=True, env=env, timeout=120)

    first = check()
    assert first.returncode == 0, first.stdout + first.stderr
    (kept,) = list((tmp_path / "cache" / "tritonlock" / "check").glob("*.txt"))
    kept.unlink()
    if planted == "a FIFO":
        os.mkfifo(kept)
    elif planted == "a link to /dev/zero":
        kept.symlink_to("/dev/zero")
    elif planted == "a 2 GB file":
        with open(kept, "wb") as fh:
            fh.truncate(2 * 1024 ** 3)  # (sparse: no disk)
    else:
        kept.write_bytes(b"tritonlock-check \xff\xfe ok\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        assert _kept.cached_check(str(locked), False) is None
    again = check()
    assert (again.returncode, again.stdout) == (0, first.stdout), again.stderr
