"""Verified-on records (file format, merging, concurrency) and `report merge` (table, outliers, JSON, HTML)."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tritonlock.cli import main
from tritonlock.records import KernelSummary, Record, add_records, dumps, loads, read_records, record_json

H200 = json.loads((Path(__file__).parents[1] / "bench" / "h200" / "verify.json").read_text())


def _record(host: str, *, target: str = "h200", fp: str = "sha256:aa", when: str = "2026-11-30T10:00:00Z",
            scale: float = 1.0, ok: bool = True, gpus: tuple[str, ...] = ("NVIDIA H200 (9.0)",)) -> Record:
    ks = tuple(KernelSummary(kernel=k["kernel"], dtype=k["dtype"], device=k["device"], ok=k["ok"], metric=k["metric"],
                             value=k["value"] * scale, torch_value=k["torch_value"], ratio=k["ratio"] * scale)
               for k in H200["kernels"])
    return Record(target=target, fingerprint=fp, packages_digest="sha256:d1", when=when, host=host, ok=ok, mode="gpu",
                  os="linux", arch="x86_64", glibc="2.39", python="3.12", driver="580.159.04", cuda="13.0", gpus=gpus,
                  torch="2.11.0+cu130", triton="3.6.0", tritonlock="0.1.0",
                  failures=() if ok else ("matmul fp16 on cuda:0: wrong result",), kernels=ks)


def test_records_round_trip_sorted_and_deterministic() -> None:
    a, b = _record("n2", fp="sha256:bb"), _record("n1", fp="sha256:aa", target="a100")
    text = dumps([a, b])
    assert text == dumps([b, a])  # same records, same bytes, whatever the order
    assert text.index('target = "a100"') < text.index('target = "h200"')
    back = loads(text)
    assert [r.host for r in back] == ["n1", "n2"] and dumps(back) == text  # measurements keep 4 digits
    assert back[1].kernels[0].value == 4240.0 and back[1].kernels[0].ratio == 0.9998


def test_a_merge_that_kept_both_sides_reads_as_the_newer_entry() -> None:
    old, new = _record("n1", when="2026-11-01T00:00:00Z"), _record("n1", when="2026-11-30T00:00:00Z", scale=0.5)
    both = dumps([old]) + "\n" + dumps([new]).split("\n", 3)[3]  # a git merge keeping both tables
    (rec,) = loads(both)
    assert rec.when == new.when


def _add(args: tuple[str, int]) -> None:
    path, i = args
    add_records(path, [_record(f"node{i}", fp=f"sha256:{i:02d}")])


def test_many_nodes_record_into_one_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "triton-env.verified.toml"
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_add, [(str(path), i) for i in range(16)])
    assert sorted(r.host for r in read_records(path)) == sorted(f"node{i}" for i in range(16))
    # the lock that serialised them is gone: the project holds the records file and nothing else
    assert sorted(p.name for p in tmp_path.iterdir()) == ["triton-env.verified.toml"]


def test_a_broken_records_file_is_named() -> None:
    from tritonlock.errors import LockfileError
    import pytest

    with pytest.raises(LockfileError, match=r"x.toml: verified\[0\].ok: unexpected value 'yes'"):
        loads('[[verified]]\ntarget = "t"\nfingerprint = "f"\npackages-digest = "d"\nwhen = "w"\nhost = "h"\n'
              'ok = "yes"\nmode = "gpu"\nos = "linux"\narch = "x86_64"\n', "x.toml")
    with pytest.raises(LockfileError, match="x.toml:2: not valid TOML"):
        loads("[[verified]]\n<<<<<<< HEAD\n", "x.toml")


def _node_dir(tmp: Path) -> Path:
    d = tmp / "reports"
    d.mkdir()
    for host, scale in (("gpu-01", 1.0), ("gpu-02", 0.98), ("gpu-03", 0.55)):
        rec = _record(host, scale=scale)
        doc = {**H200, "ok": True, "record": record_json(rec)}
        (d / f"{host}.json").write_text(json.dumps(doc))
        (d / f"{host}.started").write_text("x")
        (d / f"{host}.sync.rc").write_text("0")
        (d / f"{host}.verify.rc").write_text("0")
    (d / "gpu-04.started").write_text("x")
    (d / "gpu-04.sync.rc").write_text("5\n")
    (d / "gpu-04.sync.log").write_text("resolving…\nerror: no target in triton-env.lock fits this host (linux/x86_64)\n"
                                       "  - h200: driver 535.104.05 is older than 580.65.06\n  fix: add a target\n")
    (d / "gpu-05.started").write_text("x")
    (d / "gpu-05.sync.rc").write_text("0")
    (d / "gpu-05.verify.rc").write_text("124")
    (d / "gpu-06.started").write_text("x")  # killed before it wrote anything else
    return d


def test_report_merge_marks_failures_and_outliers(tmp_path: Path) -> None:
    d = _node_dir(tmp_path)
    r = CliRunner().invoke(main, ["report", "merge", str(d), "--json", "--expect", "7", "--html", str(tmp_path / "r.html")])
    assert r.exit_code == 1
    doc = json.loads(r.output)
    by = {n["node"]: n for n in doc["nodes"]}
    assert doc["passed"] == 3 and doc["total"] == 7
    assert by["gpu-01"]["status"] == "pass" and round(by["gpu-01"]["vector_add_gbs"]) == 4240
    assert round(by["gpu-01"]["matmul_tflops"]) == 678 and by["gpu-01"]["outlier"] is None
    assert by["gpu-03"]["outlier"].startswith("vector add 2,332 GB/s is 56% of its peers' median 4,155")
    assert by["gpu-04"]["status"] == "sync failed" and by["gpu-04"]["error"] == (
        "exit 5: no target in triton-env.lock fits this host (linux/x86_64); h200: driver 535.104.05 is older than "
        "580.65.06; fix: add a target")
    assert by["gpu-05"]["status"] == "verify failed" and by["gpu-05"]["error"].startswith("timed out: ")
    assert by["gpu-06"]["status"] == "no result" and "killed, out of time" in by["gpu-06"]["error"]
    assert by["(missing 1)"]["status"] == "missing"
    page = (tmp_path / "r.html").read_text()
    assert page.count("<svg") == 6 and "<script" not in page and "http" not in page.replace("http-equiv", "")
    assert "far below its peers (NVIDIA H200)" in page


def test_report_merge_text_table(tmp_path: Path) -> None:
    d = _node_dir(tmp_path)
    r = CliRunner().invoke(main, ["report", "merge", str(d)])
    lines = r.output.splitlines()
    assert lines[0].split() == ["node", "GPU", "driver", "target", "result", "add", "GB/s", "add", "×torch",
                                "matmul", "TFLOP/s", "mm", "×torch"]
    row = next(x for x in lines if x.startswith("gpu-03 !"))
    assert "NVIDIA H200" in row and "580.159.04" in row and "pass" in row and "2,332" in row
    assert "3 of 6 node(s) passed" in r.output
    assert "! gpu-03: far below its peers (NVIDIA H200): vector add" in r.output
    assert "x gpu-04: sync failed: exit 5: no target in triton-env.lock fits this host" in r.output


def test_report_merge_updates_records_and_needs_reports(tmp_path: Path) -> None:
    d = _node_dir(tmp_path)
    proj = tmp_path / "proj"
    proj.mkdir()
    r = CliRunner().invoke(main, ["report", "merge", str(d), "--update-records", "-p", str(proj)])
    assert "recorded 3 run(s)" in r.output
    assert {x.host for x in read_records(proj / "triton-env.verified.toml")} <= {"gpu-01", "gpu-02", "gpu-03"}
    empty = tmp_path / "empty"
    empty.mkdir()
    r = CliRunner().invoke(main, ["report", "merge", str(empty)])
    assert r.exit_code == 2 and "no node reports in it" in r.output  # bad input: the wrong directory


def test_node_step_keeps_one_venv_per_project_on_a_node(tmp_path: Path) -> None:
    """Two projects synced on one node (or a re-run from another checkout) never share a node-local venv: a venv
    left by one project answered "already matches" for another one (seen: a stale stub torch, verify crashed)."""
    import subprocess

    from tritonlock.fleet.steps import Steps, node_step

    venvs = []
    for name in ("proj-a", "proj-b", "proj-a"):
        project, reports = tmp_path / name, tmp_path / f"reports-{len(venvs)}"
        project.mkdir(exist_ok=True)
        reports.mkdir()
        script = node_step(Steps(), index_var="SLURM_ARRAY_TASK_ID") + "node_step\n"
        env = {"PATH": "/usr/bin:/bin", "TRITONLOCK_CMD": "echo", "TRITONLOCK_PROJECT": str(project),
               "TRITONLOCK_REPORTS": str(reports), "TRITONLOCK_NODE": "node1", "TMPDIR": str(tmp_path)}
        subprocess.run(["sh", "-c", script], env=env, check=True, timeout=30)
        words = (reports / "node1.sync.log").read_text().split()
        venvs.append(words[words.index("--venv") + 1])
    assert venvs[0] == venvs[2] != venvs[1]
    assert all(v.startswith(f"{tmp_path}/tritonlock-{os.getuid()}/venv-") and v.endswith("-node1") for v in venvs)


def test_node_step_keeps_its_venv_where_no_other_user_can_reach(tmp_path: Path) -> None:
    """The venv was /tmp/tritonlock-venv-<cksum>-<node>: a name anyone on the node could create first (and so pick
    the interpreter the job runs). Now it is in a directory of mode 0700 owned by the job's user; a directory of that
    name that is not (a link, another owner, another mode) is never used."""
    import stat
    import subprocess

    from tritonlock.fleet.steps import Steps, node_step

    def venv_of(env_extra: dict[str, str]) -> Path:
        project, reports = tmp_path / "proj", tmp_path / f"reports-{len(list(tmp_path.iterdir()))}"
        project.mkdir(exist_ok=True)
        reports.mkdir()
        script = node_step(Steps(), index_var="SLURM_ARRAY_TASK_ID") + "node_step\n"
        env = {"PATH": "/usr/bin:/bin", "TRITONLOCK_CMD": "echo", "TRITONLOCK_PROJECT": str(project),
               "TRITONLOCK_REPORTS": str(reports), "TRITONLOCK_NODE": "node1", **env_extra}
        subprocess.run(["sh", "-c", script], env=env, check=True, timeout=30)
        words = (reports / "node1.sync.log").read_text().split()
        return Path(words[words.index("--venv") + 1])

    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    v = venv_of({"TMPDIR": str(shared)})
    st = os.stat(v.parent)
    assert v.parent == shared / f"tritonlock-{os.getuid()}" and stat.S_IMODE(st.st_mode) == 0o700
    assert st.st_uid == os.getuid()
    # $SLURM_TMPDIR (the job's own) comes first
    job_tmp = tmp_path / "job-tmp"
    job_tmp.mkdir()
    assert venv_of({"TMPDIR": str(shared), "SLURM_TMPDIR": str(job_tmp)}).parent.parent == job_tmp
    # someone else got the name first: a link to their directory, or a directory others may write to
    for taken in ("link", "open") + (("owner",) if os.getuid() == 0 else ()):
        base = tmp_path / f"tmp-{taken}"
        base.mkdir()
        theirs = tmp_path / f"theirs-{taken}"
        theirs.mkdir(mode=0o777)
        if taken == "link":
            (base / f"tritonlock-{os.getuid()}").symlink_to(theirs)
        elif taken == "open":
            (base / f"tritonlock-{os.getuid()}").mkdir()
            os.chmod(base / f"tritonlock-{os.getuid()}", 0o777)
        else:  # private, but another user's
            (base / f"tritonlock-{os.getuid()}").mkdir(mode=0o700)
            os.chown(base / f"tritonlock-{os.getuid()}", 65534, 65534)
        v = venv_of({"TMPDIR": str(base)})
        assert v.parent.parent == base and v.parent.name.startswith("tritonlock.") and not v.parent.is_symlink()
        assert stat.S_IMODE(os.stat(v.parent).st_mode) == 0o700 and os.stat(v.parent).st_uid == os.getuid()


# ---------------------------------------------------------------- what a record proves (and what an edit undoes)


def _lock_and_record(**result_kw: object) -> tuple[object, Record]:
    import dataclasses
    from types import SimpleNamespace

    from test_lockfile import sample
    from tritonlock.models import Gpu, HostProfile
    from tritonlock.records import make_record

    lock = sample()
    (t,) = lock.targets
    host = HostProfile(os="linux", arch="x86_64", python="3.12.3", glibc="2.39", driver="580.159.04", cuda_driver="13.0",
                       gpus=(Gpu(index=0, name="NVIDIA H200", cc="9.0"),))
    kern = SimpleNamespace(kernel="vector_add", dtype="fp32", device="cuda:0", ok=True, metric="GB/s",
                           value=4123.456789, torch_value=4000.0, ratio=1.0308641975)
    result = SimpleNamespace(**{"ok": True, "mode": "gpu", "torch": "2.11.0+cu130", "triton": "3.6.0",
                                "failures": (), "kernels": (kern,), **result_kw})
    rec = make_record(t, host, result, node="gpu-01")
    return dataclasses.replace(lock), rec


def test_a_record_proves_only_what_it_was_made_for() -> None:
    import dataclasses

    from tritonlock.records import judge, proves

    lock, rec = _lock_and_record()
    (t,) = lock.targets
    back = loads(dumps([rec]))[0]  # what the file holds reads back as it was made, digest and all
    assert back == rec and rec.digest.startswith("sha256:") and proves(back, t)
    # hand edits: a failure turned into a pass, another lock's packages, another target's name
    for edit in ({"ok": False}, {"packages_digest": "sha256:" + "0" * 64}, {"host": "elsewhere"},
                 {"gpus": ("NVIDIA H100 (9.0)",)}, {"when": "2099-01-01T00:00:00Z"}):
        forged = dataclasses.replace(rec, **edit)  # (the digest is not recomputed, as a hand edit would not)
        assert not proves(forged, t), edit
        (j,) = judge((forged,), lock)
        assert j.stale and "edited after it was recorded" in j.why, j
    # a record without a digest (hand-written, or an older tritonlock) proves nothing either
    assert not proves(dataclasses.replace(rec, digest=""), t)
    text = dumps([rec]).replace("ok = true", "ok = false")
    assert not proves(loads(text)[0], t)


def test_a_record_from_a_machine_the_target_is_not_for_proves_nothing() -> None:
    import dataclasses

    from tritonlock.records import _signed, judge, proves

    lock, rec = _lock_and_record()
    (t,) = lock.targets
    # `verify --record --target h200` run on a CPU laptop, or on a GPU the build has no code for, re-signed
    for machine in ({"driver": None, "cuda": None, "gpus": ()}, {"gpus": ("Tesla K80 (3.7)",)},
                    {"os": "windows"}, {"python": "3.10"}, {"driver": "535.104.05"}):
        other = _signed(dataclasses.replace(rec, **machine))
        assert not proves(other, t), machine
        (j,) = judge((other,), lock)
        assert j.stale and "ran on a machine this target is not for" in j.why, (machine, j.why)


def test_a_failed_run_never_proves_even_if_its_verdict_says_so() -> None:
    from types import SimpleNamespace

    from tritonlock.records import proves

    lock, rec = _lock_and_record(ok=True, failures=("matmul fp16 on cuda:0: wrong result",))
    assert not proves(rec, lock.targets[0])
    bad = SimpleNamespace(kernel="matmul", dtype="fp16", device="cuda:0", ok=False, metric=None, value=None,
                          torch_value=None, ratio=None)
    lock, rec = _lock_and_record(kernels=(bad,))
    assert not proves(rec, lock.targets[0])


def test_records_with_odd_characters_are_written_readable_and_read_strictly(tmp_path: Path) -> None:
    import pytest

    from tritonlock.errors import LockfileError

    lock, rec = _lock_and_record(failures=("a \x7f DEL, a \x1b[2J escape\nand a newline",), torch="2.11.0\x7f")
    path = tmp_path / "triton-env.verified.toml"
    add_records(path, [rec])
    (back,) = read_records(path)  # (a raw DEL made the whole file unreadable TOML)
    assert back.failures == rec.failures and back.digest == rec.digest and "\x7f" not in back.torch
    body = dumps([rec])
    for key, value, expected in (("host", '"a\\u001b[2Jb"', "verified[0].host: 'a\\x1b[2Jb' is not one printable"),
                                 ("target", '"t\\nu"', "verified[0].target: 't\\nu' is not one printable line"),
                                 ("when", '"9999"', "verified[0].when: '9999' is not a UTC time"),
                                 ("mode", '"gpu!"', "verified[0].mode: 'gpu!' is not")):
        edited = "\n".join(f"{key} = {value}" if line.startswith(f"{key} = ") else line for line in body.splitlines())
        with pytest.raises(LockfileError, match=None) as ei:
            loads(edited, "x.toml")
        assert str(ei.value).startswith(f"x.toml: {expected}"), str(ei.value)


def test_one_verdict_per_node_in_the_row_the_count_the_json_and_the_exit_code(tmp_path: Path) -> None:
    """A report that says ok but has no record, whose record failed, or whose verify exited non-zero is a failed
    node everywhere: the row, "N of M passed", --json and the exit code (it used to be 'verify failed' in the row,
    '1 of 1 node(s) passed' below it and exit 0)."""
    cases = {
        "no-record": ({**H200, "ok": True}, "0", "has no record"),
        "record-failed": ({**H200, "ok": True, "record": record_json(_record("record-failed", ok=False))}, "0",
                          "its record says failed"),
        "rc-1": ({**H200, "ok": True, "record": record_json(_record("rc-1"))}, "1", "verify exited 1"),
    }
    for tag, (doc, rc, why) in cases.items():
        d = tmp_path / tag
        d.mkdir()
        (d / f"{tag}.json").write_text(json.dumps(doc))
        (d / f"{tag}.sync.rc").write_text("0")
        (d / f"{tag}.verify.rc").write_text(rc)
        r = CliRunner().invoke(main, ["report", "merge", str(d)])
        assert r.exit_code == 1 and "0 of 1 node(s) passed" in r.output and why in r.output, r.output
        assert " pass " not in r.output
        r = CliRunner().invoke(main, ["report", "merge", str(d), "--json"])
        (node,) = json.loads(r.output)["nodes"]
        assert r.exit_code == 1 and json.loads(r.output)["passed"] == 0 and node["ok"] is False, r.output
        assert node["status"] != "pass" and why in node["error"]


def test_report_merge_help_names_the_files_it_reads() -> None:
    out = CliRunner().invoke(main, ["report", "merge", "--help"]).output
    for name in ("TAG.started", "TAG.sync.rc", "TAG.sync.log", "TAG.json", "TAG.verify.rc", "TAG.verify.log"):
        assert name in out


def test_an_interpreter_run_or_a_run_with_caveats_never_counts_for_a_gpu_target() -> None:
    """Mutations the suite must catch: an interpreter-mode record counted for a GPU target, and a record made under
    TRITONLOCK_* overrides or from a foreign interpreter counted for one. Each is re-signed, as verify writes it."""
    import dataclasses

    from tritonlock.records import _signed, proves, why_not

    lock, rec = _lock_and_record()
    (t,) = lock.targets
    assert proves(rec, t) and why_not(rec, t) is None
    interp = _signed(dataclasses.replace(rec, mode="interpreter"))
    assert not proves(interp, t) and why_not(interp, t) == "it ran only in Triton's interpreter, not on a GPU"
    caveat = "host facts set by TRITONLOCK_DRIVER, TRITONLOCK_GPUS, not detected"
    under = _signed(dataclasses.replace(rec, caveats=(caveat,)))
    assert loads(dumps([under]))[0] == under  # the file keeps the caveats, under the digest
    assert not proves(under, t) and why_not(under, t) == f"it cannot stand for a GPU run: {caveat}"
    # a CPU target is proven by an interpreter run, caveats or not
    cpu = dataclasses.replace(t, selection=dataclasses.replace(t.selection, backend="cpu"))
    assert proves(interp, cpu) and proves(_signed(dataclasses.replace(interp, caveats=(caveat,))), cpu)


def test_a_record_without_caveats_keeps_the_digest_it_had_before_caveats_existed() -> None:
    import hashlib

    from tritonlock.records import entry_digest

    _, rec = _lock_and_record()
    doc = record_json(rec)
    doc.pop("digest")
    doc.pop("caveats")
    old = "sha256:" + hashlib.sha256(json.dumps(doc, sort_keys=True, ensure_ascii=True).encode()).hexdigest()
    assert entry_digest(rec) == rec.digest == old


def test_check_names_the_real_reason_a_gpu_record_does_not_count(tmp_path: Path) -> None:
    """An edited record is "edited", not "ran only in Triton's interpreter"; a pass faked on a machine with no GPU
    (TRITONLOCK_DRIVER / TRITONLOCK_GPUS and a --python that prints a passing report) says so and counts for nothing."""
    import stat

    from test_lockfile import sample
    from tritonlock.lock import lockfile

    lockfile.write_lock(sample(), tmp_path / "triton-env.lock")
    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.12"\n')
    fake = tmp_path / "fake-python"
    report = Path(__file__).parents[1] / "bench" / "h200" / "verify.json"
    fake.write_text(f"#!/bin/sh\ncat '{report}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = {"TRITONLOCK_DRIVER": "580.159.04", "TRITONLOCK_GPUS": "9.0", "TRITONLOCK_CUDA": "13.0",
           "TRITONLOCK_PYTHON": "3.12", "TRITONLOCK_GLIBC": "2.39", "TRITONLOCK_NODE": "laptop"}
    r = CliRunner().invoke(main, ["verify", "-p", str(tmp_path), "--python", str(fake), "--record"], env=env)
    assert r.exit_code == 0 and "recorded: target h200 on laptop (passed)" in r.output, r.output
    assert ("caveat: host facts set by TRITONLOCK_DRIVER, TRITONLOCK_CUDA, TRITONLOCK_GPUS, TRITONLOCK_GLIBC, "
            "TRITONLOCK_PYTHON, not detected — this record does not count for a GPU target") in r.output
    assert f"caveat: interpreter {fake} is not in a venv that `tritonlock sync` made for target h200" in r.output
    records_path = tmp_path / "triton-env.verified.toml"
    assert "caveats = [" in records_path.read_text()
    assert not (tmp_path / ".triton-env.verified.toml.lock").exists()  # nothing left behind in the project
    r = CliRunner().invoke(main, ["check", "-p", str(tmp_path), "--require-verified"], env={k: "" for k in env})
    assert r.exit_code == 1 and "does not count: it cannot stand for a GPU run: host facts set by" in r.output, r.output
    assert "interpreter" not in r.output.split("cannot stand for a GPU run")[0]
    # the same record edited by hand into a clean one: the reason is the digest, not the interpreter
    text = records_path.read_text()
    start = text.index("caveats = [")
    records_path.write_text(text[:start] + text[text.index("]\n", start) + 2:])
    r = CliRunner().invoke(main, ["check", "-p", str(tmp_path), "--require-verified"], env={k: "" for k in env})
    assert r.exit_code == 1 and "does not count: it was edited after it was recorded (its digest does not match)" \
        in r.output, r.output
    assert "Triton's interpreter" not in r.output


def test_a_passing_report_without_a_record_is_not_called_a_failed_verify(tmp_path: Path) -> None:
    """verify passed but left no record: the node does not count (nothing says which machine and lock target it
    proved), and its row says that — not "verify failed", which a look at its report contradicts."""
    d = tmp_path / "runs"
    d.mkdir()
    (d / "gpu-01.json").write_text(json.dumps({**H200, "ok": True}))
    (d / "gpu-01.sync.rc").write_text("0")
    (d / "gpu-01.verify.rc").write_text("0")
    r = CliRunner().invoke(main, ["report", "merge", str(d), "--json"])
    (node,) = json.loads(r.output)["nodes"]
    assert r.exit_code == 1 and node["ok"] is False
    assert node["status"] == "not recorded" and "verify passed" in node["error"] and "has no record" in node["error"]
    r = CliRunner().invoke(main, ["report", "merge", str(d)])
    assert "verify failed" not in r.output and "x gpu-01: not recorded: " in r.output


def test_two_copies_of_one_report_are_one_node(tmp_path: Path) -> None:
    """The same run's report twice (copied, gathered twice) — or two runs of one node — is one node that passed, not
    two: the count, --expect and the records say so, and the row names the copy."""
    d = tmp_path / "runs"
    d.mkdir()
    doc = json.dumps({**H200, "ok": True, "record": record_json(_record("gpu-01"))})
    for tag in ("gpu-01", "gpu-01-again"):
        (d / f"{tag}.json").write_text(doc)
        (d / f"{tag}.sync.rc").write_text("0")
        (d / f"{tag}.verify.rc").write_text("0")
    later = record_json(_record("gpu-02", when="2026-11-30T11:00:00Z"))
    earlier = record_json(_record("gpu-02", when="2026-11-30T09:00:00Z", ok=False))
    for tag, rec in (("gpu-02.1", earlier), ("gpu-02.2", later)):  # two array tasks on one node
        (d / f"{tag}.json").write_text(json.dumps({**H200, "ok": rec["ok"], "record": rec}))
    r = CliRunner().invoke(main, ["report", "merge", str(d), "--json"])
    out = json.loads(r.output)
    assert (out["passed"], out["total"]) == (2, 2), out
    by = {n["node"]: n for n in out["nodes"]}
    assert by["gpu-01"]["copies"] == ["gpu-01-again"] and by["gpu-02"]["copies"] == ["gpu-02.1"]
    assert by["gpu-02"]["ok"] is True and r.exit_code == 0  # the newest run of the node speaks for it
    r = CliRunner().invoke(main, ["report", "merge", str(d), "--expect", "3"])
    assert r.exit_code == 1 and "2 of 3 node(s) passed" in r.output
    assert "= gpu-01: 1 more report of this node and target (gpu-01-again) counted as this one node" in r.output


def test_a_gpu_record_forged_with_a_fake_nvidia_smi_and_a_swapped_interpreter_does_not_count(
        tmp_path: Path, local_index: object) -> None:
    """The forgery: an `nvidia-smi` on PATH that prints an A100 and a driver (no NVIDIA kernel module here), a venv
    that `tritonlock sync` really made for the GPU target, then its interpreter swapped for a script that prints a
    passing GPU report. The record binds what can be checked — the interpreter is the one the venv was made on, the
    driver is the kernel's — says what it could not, and so does not count for the GPU target."""
    import stat
    import subprocess
    import sys

    from conftest import write_intent

    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir()
    smi = fake_bin / "nvidia-smi"
    smi.write_text("#!/bin/sh\ncase \"$1\" in\n--query-gpu=*)\n"
                   "echo 'index, name, driver_version, compute_cap, memory.total [MiB], pci.bus_id, uuid'\n"
                   "echo '0, NVIDIA A100-SXM4-80GB, 550.54.15, 8.0, 81920 MiB, 00000000:07:00.0, GPU-1'\n;;\n"
                   "*) echo '| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |' ;;\nesac\n")
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}", "TRITONLOCK_NODE": "gpu-01"}
    proj = tmp_path / "p"
    write_intent(proj, local_index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\n\n[[targets]]\n'  # type: ignore[arg-type]
                 'name = "a100"\ndriver = "550.54.15"\ngpus = ["8.0"]\n')

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "tritonlock", *args, "-p", str(proj)], capture_output=True,
                              text=True, env=env)

    assert cli("resolve").returncode == 0
    r = cli("sync", "--no-verify")
    assert r.returncode == 0 and "now matches target a100" in r.stdout, r.stdout + r.stderr
    report = Path(__file__).parents[1] / "bench" / "h200" / "verify.json"
    python = proj / ".venv" / "bin" / "python"
    python.unlink()
    python.write_text(f"#!/bin/sh\ncat '{report}'\n")  # the swapped interpreter: a passing GPU report, whatever runs
    python.chmod(0o755)
    r = cli("verify", "--record")
    assert r.returncode == 0 and "recorded: target a100 on gpu-01 (passed)" in r.stdout, r.stdout + r.stderr
    assert f"caveat: interpreter {python} is not the Python its venv was made on" in r.stdout, r.stdout
    assert (f"caveat: the NVIDIA driver (550.54.15) and GPUs were read only from {smi} (NVML did not answer), and "
            "the kernel shows no NVIDIA driver") in r.stdout
    r = cli("check", "--require-verified")
    assert r.returncode == 1, r.stdout
    assert "does not count: it cannot stand for a GPU run: " in r.stdout and "was replaced after the venv" in r.stdout


def test_a_record_goes_stale_when_a_locked_files_sha256_changes_under_the_same_name(tmp_path: Path) -> None:
    """The same package, version, file name and URL with another sha256 (the lock re-resolved after an index
    replaced the file): a record of the old bytes no longer speaks for the lock — `show` says STALE and `check
    --require-verified` does not count it; the sdist of a source build likewise."""
    import dataclasses

    from tritonlock import records
    from tritonlock.lock import lockfile
    from tritonlock.models import Wheel

    lock, rec = _lock_and_record()
    (t,) = lock.targets  # type: ignore[attr-defined]
    assert records.doubt(rec, t) is None
    torch = next(p for p in t.packages if p.name == "torch")
    swapped = dataclasses.replace(torch, wheels=tuple(dataclasses.replace(w, sha256="f" * 64) for w in torch.wheels))
    t2 = dataclasses.replace(t, packages=tuple(swapped if p is torch else p for p in t.packages))
    assert [w.name for w in swapped.wheels] == [w.name for w in torch.wheels]  # only the bytes differ
    assert records.doubt(rec, t2) == "the target's packages changed since"
    sdist = dataclasses.replace(torch, sdist=Wheel(name="torch-2.11.0.tar.gz", url="https://x/torch-2.11.0.tar.gz",
                                                   sha256="1" * 64))
    other = dataclasses.replace(sdist, sdist=dataclasses.replace(sdist.sdist, sha256="2" * 64))  # type: ignore[arg-type]
    assert records.target_digest(dataclasses.replace(t, packages=(sdist,))) != records.target_digest(
        dataclasses.replace(t, packages=(other,)))
    # end to end: the lock on disk, the record beside it
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "triton-env.toml").write_text('[environment]\npython = "3.12"\n')
    new_lock = dataclasses.replace(lock, targets=(t2,))  # type: ignore[call-arg]
    lockfile.write_lock(new_lock, proj / "triton-env.lock")
    records.add_records(proj / records.RECORDS_FILE, [rec])
    r = CliRunner().invoke(main, ["show", "-p", str(proj)])
    assert "STALE: the target's packages changed since" in r.output, r.output
    r = CliRunner().invoke(main, ["check", "-p", str(proj), "--require-verified"])
    assert r.exit_code == 1 and "packages changed since" in r.output, r.output
def test_records_keep_each_timed_rows_speed_verdict() -> None:
    import dataclasses

    from tritonlock.records import entry_digest, _signed

    (plain,) = loads(dumps([_record("n1")]))  # measurements as the file keeps them (4 digits)
    assert all("speed" not in k for k in record_json(plain)["kernels"])  # a record made before verdicts: as it was
    judged = _signed(dataclasses.replace(plain, kernels=tuple(
        dataclasses.replace(k, speed="slow" if k.kernel == "matmul" else "ok") for k in plain.kernels)))
    text = dumps([judged])
    assert 'records-version = "1.4"' in text and 'speed = "slow"' in text
    (back,) = loads(text)
    assert [k.speed for k in back.kernels] == [k.speed for k in judged.kernels] and back.digest == entry_digest(back)
    # the verdict is covered by the entry's digest: "slow" edited into "ok" no longer matches
    edited = text.replace('speed = "slow"', 'speed = "ok"', 1)
    assert loads(edited)[0].digest != entry_digest(loads(edited)[0])
    import pytest
    from tritonlock.errors import LockfileError

    with pytest.raises(LockfileError, match=r"kernels\[0\].speed: 'quick' is not one of ok, slow, fast, no-band"):
        loads(text.replace('speed = "ok"', 'speed = "quick"', 1))


def test_report_merge_shows_a_node_far_from_its_peers_in_any_row(tmp_path: Path) -> None:
    import dataclasses

    from tritonlock.records import _signed

    d = tmp_path / "reports"
    d.mkdir()
    for host in ("gpu-01", "gpu-02", "gpu-03"):
        rec = _record(host)
        if host == "gpu-03":  # only its softmax is slow; vector add and matmul as its peers'
            rec = _signed(dataclasses.replace(rec, kernels=tuple(
                dataclasses.replace(k, value=k.value * 0.5 if k.value else k.value,
                                    speed="slow") if k.kernel == "softmax" else dataclasses.replace(k, speed="ok")
                for k in rec.kernels)))
        (d / f"{host}.json").write_text(json.dumps({**H200, "ok": True, "record": record_json(rec)}))
        for suffix, text in (("started", "x"), ("sync.rc", "0"), ("verify.rc", "0")):
            (d / f"{host}.{suffix}").write_text(text)
    r = CliRunner().invoke(main, ["report", "merge", str(d)])
    assert r.exit_code == 0, r.output
    far = next(line for line in r.output.splitlines() if line.startswith("! gpu-03"))
    assert far.startswith("! gpu-03: far below its peers (NVIDIA H200): softmax fp32 ") and "is 50% of its peers'" in far
    assert "~ gpu-03: 1 of 5 timed rows outside the band expected for its GPU: softmax fp32 on cuda:0 slow" in r.output
    assert not any(line.startswith(("! gpu-01", "~ gpu-01")) for line in r.output.splitlines())
    doc = json.loads(CliRunner().invoke(main, ["report", "merge", str(d), "--json"]).output)
    by = {n["node"]: n for n in doc["nodes"]}
    assert by["gpu-03"]["outside_band"] == ["softmax fp32 on cuda:0 slow"] and by["gpu-03"]["judged"] == 5


def test_report_bands_shows_a_teams_runs_beside_the_shipped_bands(tmp_path: Path) -> None:
    import dataclasses

    from tritonlock.records import _signed

    def rec(host: str, fp: str, fp8: float, gpus: tuple[str, ...] = ("NVIDIA H200 (9.0)",)) -> Record:
        k = KernelSummary(kernel="fp8_matmul", dtype="e4m3", device="cuda:0", ok=True, metric="TFLOP/s",
                          value=1500.0 * fp8, torch_value=1460.0, ratio=1500.0 * fp8 / 1460.0)
        return _signed(dataclasses.replace(_record(host, fp=fp, gpus=gpus), kernels=(k,)))

    path = tmp_path / "triton-env.verified.toml"
    add_records(path, [rec("a", "sha256:01", 1.0), rec("b", "sha256:02", 1.02), rec("c", "sha256:03", 0.5),
                       rec("d", "sha256:04", 1.0, gpus=("NVIDIA B200 (10.0)",))])
    r = CliRunner().invoke(main, ["report", "bands", str(path)])
    assert r.exit_code == 0, r.output
    h200 = next(line for line in r.output.splitlines() if line.startswith("NVIDIA H200"))
    # three runs: ratios 0.51 / 1.03 / 1.05, the shipped band, the band the runs draw, one run outside
    assert h200.split()[4:7] == ["3", "0.51/1.03/1.05", "0.93–1.12"] and h200.split()[7] == "0.44–1.13"
    assert h200.rstrip().endswith(" 1")
    assert "no band ships for: NVIDIA B200" in r.output
    assert "rows with runs outside their shipped band" in r.output
    doc = json.loads(CliRunner().invoke(main, ["report", "bands", str(path), "--json"]).output)
    assert {row["gpu"] for row in doc["rows"]} == {"NVIDIA H200", "NVIDIA B200"}
    empty = CliRunner().invoke(main, ["report", "bands", str(tmp_path / "none.toml")])
    assert empty.exit_code == 2 and "no records" in empty.output


# ---------------------------------------------------------------- the all-reduce in records and report merge (#44)


def _ar_record(node: str, doc: dict[str, object]) -> Record:
    """A record as `verify --record` makes it from a runner's report of a host of 2 H200s (verify's own parse)."""
    from test_lockfile import sample
    from tritonlock.models import Gpu, HostProfile
    from tritonlock.records import make_record
    from tritonlock.verify import _parse

    (t,) = sample().targets
    host = HostProfile(os="linux", arch="x86_64", python="3.12.3", glibc="2.39", driver="580.159.04",
                       cuda_driver="13.0", gpus=(Gpu(index=0, name="NVIDIA H200", cc="9.0"),
                                                 Gpu(index=1, name="NVIDIA H200", cc="9.0")))
    return make_record(t, host, _parse(doc, 3.0), node=node)


BUSY = ("cuda:1: another process is using this GPU: pid 3931 (python3) holding 1,002 MiB; the GPU was 100% busy "
        "before verify started — verify's kernels shared the GPU with it")


def test_a_record_keeps_the_allreduces_figure_band_link_and_cause() -> None:
    from test_verify_speed import _two_gpus
    from tritonlock.records import entry_digest

    rec = _ar_record("gpu-02", _two_gpus(121.0, busy_second=True))
    ar = rec.kernels[-1]
    assert (ar.kernel, ar.device, ar.value, ar.speed) == ("nccl_all_reduce", "cuda:0..1", 121.0, "slow")
    assert ar.band == (250.0, 450.0) and ar.inferred and ar.link == "nvlink" and ar.message_bytes == 256 << 20
    assert ar.causes == (BUSY,)  # the busy GPU only: nothing is said of cuda:0
    # the kernels' rows carry none of the all-reduce's keys: what they were before
    assert set(record_json(rec)["kernels"][0]) == {"kernel", "dtype", "device", "ok", "metric", "value", "torch",
                                                   "ratio", "speed"}
    text = dumps([rec])
    assert 'records-version = "1.4"' in text
    line = next(x for x in text.splitlines() if "nccl_all_reduce" in x)
    assert ('speed = "slow", band = [250.0, 450.0], inferred = true, link = "nvlink", message_bytes = 268435456, '
            f'causes = ["{BUSY}"] }},') in line
    (back,) = loads(text)
    assert back == rec and back.digest == entry_digest(back)
    # the cause and the band are under the entry's digest: edited, the record no longer matches
    for old, new in ((BUSY, BUSY.replace("cuda:1", "cuda:0")), ("inferred = true, ", ""), ("250.0", "100.0")):
        (edited,) = loads(text.replace(old, new, 1))
        assert edited.digest != entry_digest(edited), old
    # in band, the record keeps the band and link with no cause
    ok = _ar_record("gpu-01", _two_gpus(297.0)).kernels[-1]
    assert ok.speed == "ok" and ok.band == (250.0, 450.0) and ok.causes == () and ok.link == "nvlink"
    # no band over PCIe: the link and the words why go in, no band, nothing inferred
    pcie = _ar_record("gpu-04", _two_gpus(40.0, nvlink=5, read=0)).kernels[-1]
    assert pcie.speed == "no-band" and pcie.band is None and not pcie.inferred and pcie.link == "pcie"
    assert pcie.causes == ("no NVLink between cuda:0 and cuda:1 (NVML's P2P status over NVLink: not supported): P2P "
                           "over PCIe",)
    # 3 GPUs: no band, and why — never a band of 2 GPUs
    three = _ar_record("gpu-05", _two_gpus(297.0, n=3)).kernels[-1]
    assert three.speed == "no-band" and three.band is None and three.link == "nvlink"


def test_a_record_from_before_the_allreduce_fields_still_reads_and_keeps_its_digest() -> None:
    from test_verify_speed import _two_gpus
    from tritonlock.records import entry_digest

    rec = _ar_record("gpu-02", _two_gpus(121.0, busy_second=True))
    line = next(x for x in dumps([rec]).splitlines() if "nccl_all_reduce" in x)
    # as tritonlock 1.3 wrote it: the verdict, nothing else
    old_line = line.split(", band = ")[0] + " },"
    old_text = dumps([rec]).replace(line, old_line).replace('records-version = "1.4"', 'records-version = "1.3"')
    (old,) = loads(old_text)
    ar = old.kernels[-1]
    assert ar.speed == "slow" and ar.band is None and ar.link is None and ar.causes == () and not ar.inferred
    assert ar.message_bytes is None and "band" not in record_json(old)["kernels"][-1]
    # the digest covers exactly what 1.3 covered: an entry signed then still matches
    from tritonlock.records import _signed

    assert entry_digest(_signed(old)) == _signed(old).digest and dumps([_signed(old)]).count("causes") == 0


def _ar_nodes(tmp: Path) -> Path:
    from test_verify_speed import _two_gpus

    d = tmp / "runs"
    d.mkdir()
    recs = {"gpu-01": _ar_record("gpu-01", _two_gpus(297.0)),
            "gpu-02": _ar_record("gpu-02", _two_gpus(121.0, busy_second=True)),
            "gpu-03": _ar_record("gpu-03", _two_gpus(40.0, nvlink=5, read=0)),
            "gpu-04": _record("gpu-04")}  # one GPU: no all-reduce
    for host, rec in recs.items():
        (d / f"{host}.json").write_text(json.dumps({**H200, "ok": True, "record": record_json(rec)}))
        for suffix, text in (("started", "x"), ("sync.rc", "0"), ("verify.rc", "0")):
            (d / f"{host}.{suffix}").write_text(text)
    return d


def test_report_merge_names_the_allreduces_band_link_and_cause(tmp_path: Path) -> None:
    d = _ar_nodes(tmp_path)
    r = CliRunner().invoke(main, ["report", "merge", str(d), "--html", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert ("· gpu-01: all-reduce on cuda:0..1 over NVLink: 297 GB/s at 256 MiB, band 250–450 GB/s (inferred) — "
            "in band") in lines
    assert ("≈ gpu-02: all-reduce on cuda:0..1 over NVLink: 121 GB/s at 256 MiB, band 250–450 GB/s (inferred) — SLOW; "
            f"likely cause: {BUSY}") in lines
    assert ("· gpu-03: all-reduce on cuda:0..1 over PCIe (P2P): 40 GB/s at 256 MiB — no band; likely cause: no NVLink "
            "between cuda:0 and cuda:1 (NVML's P2P status over NVLink: not supported): P2P over PCIe") in lines
    assert not any("gpu-04: all-reduce" in x for x in lines)
    assert "~ gpu-02: 1 of 11 timed rows outside the band expected for its GPU: nccl_all_reduce fp32 on cuda:0..1 " \
           "slow" in r.output
    # 2 GPUs over PCIe are not peers of 2 over NVLink: the PCIe node's lower figure is no outlier; over NVLink, 121
    # against 297 is
    assert not any(x.startswith("! gpu-03") for x in lines), r.output
    assert "! gpu-02: far below its peers (NVIDIA H200): nccl_all_reduce fp32 (cuda:0..1 over NVLink) 121 GB/s is 58% " \
           "of its peers' median 209" in lines
    doc = json.loads(CliRunner().invoke(main, ["report", "merge", str(d), "--json"]).output)
    by = {n["node"]: n for n in doc["nodes"]}
    assert by["gpu-02"]["allreduce"] == {"device": "cuda:0..1", "value": 121.0, "metric": "GB/s",
                                         "message_bytes": 256 << 20, "band": [250.0, 450.0], "band_inferred": True,
                                         "link": "nvlink", "verdict": "slow", "causes": [BUSY], "ok": True}
    assert by["gpu-01"]["allreduce"]["verdict"] == "ok" and by["gpu-01"]["allreduce"]["causes"] == []
    assert by["gpu-03"]["allreduce"]["band"] is None and by["gpu-03"]["allreduce"]["band_inferred"] is None
    assert by["gpu-03"]["allreduce"]["link"] == "pcie" and by["gpu-04"]["allreduce"] is None
    page = (tmp_path / "r.html").read_text()
    assert "<h2>NCCL all-reduce across each node's GPUs</h2>" in page
    assert ("<li><b>gpu-02</b> — all-reduce on cuda:0..1 over NVLink: 121 GB/s at 256 MiB, band 250–450 GB/s "
            "(inferred) — SLOW; likely cause: cuda:1: another process") in page
    assert page.count("(inferred)") == 2  # wherever the band is shown, and nowhere else


def test_report_merge_reads_an_allreduce_recorded_before_its_fields(tmp_path: Path) -> None:
    """A node's record from tritonlock before 1.4: the verdict alone; the line says what it can, no band invented."""
    import dataclasses

    from tritonlock.records import _signed

    d = _ar_nodes(tmp_path)
    rec = _ar_record("gpu-02", __import__("test_verify_speed")._two_gpus(121.0, busy_second=True))
    old = _signed(dataclasses.replace(rec, kernels=(*rec.kernels[:-1], dataclasses.replace(
        rec.kernels[-1], band=None, inferred=False, link=None, message_bytes=None, causes=()))))
    (d / "gpu-02.json").write_text(json.dumps({**H200, "ok": True, "record": record_json(old)}))
    r = CliRunner().invoke(main, ["report", "merge", str(d)])
    assert r.exit_code == 0, r.output
    assert "≈ gpu-02: all-reduce on cuda:0..1 (link not recorded): 121 GB/s — SLOW" in r.output.splitlines()
    unjudged = _signed(dataclasses.replace(old, kernels=(*old.kernels[:-1], dataclasses.replace(old.kernels[-1],
                                                                                                  speed=None))))
    (d / "gpu-02.json").write_text(json.dumps({**H200, "ok": True, "record": record_json(unjudged)}))
    r = CliRunner().invoke(main, ["report", "merge", str(d)])
    assert ("· gpu-02: all-reduce on cuda:0..1 (link not recorded): 121 GB/s — not judged (recorded before verify "
            "judged the all-reduce)") in r.output.splitlines()


@pytest.mark.parametrize(("old", "new", "words"), [
    ("band = [250.0, 450.0]", "band = [450.0, 250.0]", "band: [450.0, 250.0] is not [low, high], two numbers, low first"),
    ("band = [250.0, 450.0]", "band = [250.0]", "band: [250.0] is not [low, high]"),
    ("band = [250.0, 450.0], inferred = true", "inferred = true", "inferred: says a band is inferred, but the row has "
                                                                   "no band"),
    ('link = "nvlink"', 'link = "infiniband"', "link: 'infiniband' is not one of nvlink, pcie, none"),
    ("message_bytes = 268435456", "message_bytes = 0", "message_bytes: 0 is not a positive number of bytes"),
    ("message_bytes = 268435456", 'message_bytes = "256 MiB"', "message_bytes: unexpected value '256 MiB'"),
    ('causes = ["', 'causes = ["a\\nb", "', "causes: expected at most 16 printable lines of at most 500 characters"),
])
def test_a_broken_allreduce_field_in_a_record_is_named(old: str, new: str, words: str) -> None:
    from test_verify_speed import _two_gpus
    from tritonlock.errors import LockfileError

    text = dumps([_ar_record("gpu-02", _two_gpus(121.0, busy_second=True))])
    assert old in text
    n = text.count("kernel = ") - 1
    with pytest.raises(LockfileError) as e:
        loads(text.replace(old, new, 1), "x.toml")
    assert str(e.value).startswith(f"x.toml: verified[0].kernels[{n}].{words}"), str(e.value)


def _two_gpu_record(host: str, fp: str, slow: float = 1.0, *, ok: bool = True, mode: str = "gpu",
                    gpus: tuple[str, ...] = ("NVIDIA H200 (9.0)", "NVIDIA H200 (9.0)")) -> Record:
    """A node with two GPUs: every timed row on cuda:0 as the H200 run measured it, and on cuda:1 times `slow`."""
    import dataclasses

    from tritonlock.records import _signed

    base = _record(host, fp=fp, ok=ok, gpus=gpus)
    second = tuple(dataclasses.replace(k, device="cuda:1", value=k.value * slow if k.value else k.value,
                                       ratio=k.ratio * slow if k.ratio else k.ratio) for k in base.kernels)
    return _signed(dataclasses.replace(base, mode=mode, kernels=base.kernels + second))


def test_report_bands_counts_every_device_of_passing_gpu_runs_and_nothing_else(tmp_path: Path) -> None:
    """A band drawn from a team's runs: each GPU of a node is a run of its own (a slow second GPU is not hidden
    behind the first), under its own model on a node of two models; a failed run and an interpreter run add
    nothing (their figures would widen the band they are meant to check)."""
    path = tmp_path / "triton-env.verified.toml"
    add_records(path, [
        _two_gpu_record("a", "sha256:01", slow=0.5),                    # cuda:1 at half speed
        _two_gpu_record("b", "sha256:02"),
        _two_gpu_record("failed", "sha256:03", slow=9.0, ok=False),     # a failed run: wild figures
        _two_gpu_record("interp", "sha256:04", slow=0.01, mode="interpreter"),
        _two_gpu_record("mixed", "sha256:05", slow=1.1, gpus=("NVIDIA H200 (9.0)", "NVIDIA B200 (10.0)")),
    ])
    doc = json.loads(CliRunner().invoke(main, ["report", "bands", str(path), "--json"]).output)
    rows = {(r["gpu"], r["kernel"], r["dtype"]): r for r in doc["rows"]}
    add = rows[("NVIDIA H200", "vector_add", "fp32")]
    ratio = H200["kernels"][0]["ratio"]
    # runs: a's two GPUs, b's two, mixed's cuda:0 — not the failed or interpreter runs, not mixed's B200
    assert add["runs"] == 5, add
    assert [round(x, 3) for x in add["ratios"]] == [round(ratio * 0.5, 3), round(ratio, 3), round(ratio, 3)], add
    assert add["outside"] == 1  # a's slow GPU, outside the shipped band
    b200 = rows[("NVIDIA B200", "vector_add", "fp32")]
    assert b200["runs"] == 1 and round(b200["ratios"][0], 3) == round(ratio * 1.1, 3), b200


def test_report_merge_shows_a_nodes_slowest_gpu(tmp_path: Path) -> None:
    """A node whose second GPU is slow: its row shows that GPU's figures (the fleet table shows each node's slowest
    device), and it is marked against its peers — in the rows the table shows and in every other timed row."""
    d = tmp_path / "reports"
    d.mkdir()
    for host, slow in (("gpu-01", 1.0), ("gpu-02", 1.0), ("gpu-03", 0.5)):
        rec = _two_gpu_record(host, f"sha256:{host}", slow=slow)
        (d / f"{host}.json").write_text(json.dumps({**H200, "ok": True, "record": record_json(rec)}))
        for suffix, text in (("started", "x"), ("sync.rc", "0"), ("verify.rc", "0")):
            (d / f"{host}.{suffix}").write_text(text)
    doc = json.loads(CliRunner().invoke(main, ["report", "merge", str(d), "--json"]).output)
    by = {n["node"]: n for n in doc["nodes"]}
    add, mm = H200["kernels"][0], H200["kernels"][1]
    slow = by["gpu-03"]
    assert round(slow["vector_add_gbs"]) == round(add["value"] * 0.5) and slow["gpu"] == "NVIDIA H200 ×2", slow
    assert round(slow["matmul_tflops"], 1) == round(mm["value"] * 0.5, 1)
    assert round(slow["vector_add_ratio"], 3) == round(add["ratio"] * 0.5, 3)
    assert round(slow["matmul_ratio"], 3) == round(mm["ratio"] * 0.5, 3)
    assert slow["outlier"].startswith("vector add 2,120 GB/s is 50% of its peers' median 4,240; matmul 339 TFLOP/s "
                                      "is 50% of its peers' median 678; matmul bf16 373 TFLOP/s is 50%"), slow["outlier"]
    assert by["gpu-01"]["outlier"] is None and round(by["gpu-01"]["vector_add_gbs"]) == round(add["value"])


def test_the_fast_reading_of_a_records_files_kernel_lines_agrees_with_tomllib() -> None:
    """The writer's kernel lines are read without tomllib (20,000 runs in seconds): whatever the writer writes —
    any figures, missing ones, odd names — reads back the same as tomllib reads it, and a file edited out of that
    shape (another key order, an escape, another table) is read by tomllib, with its errors."""
    import dataclasses

    import pytest
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from tritonlock.errors import LockfileError
    from tritonlock.records import _signed

    floats = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e-5,
                                                                                                    1.5e20, 3.0]))
    names = st.one_of(st.sampled_from(["vector_add", "attention d128 causal", "é", "a\"b", "a\\b", "x\ty", ""]),
                      st.text(max_size=8))
    plain = st.builds(KernelSummary, kernel=names, dtype=names, device=st.sampled_from(["cuda:0", "cuda:1", "xpu"]),
                      ok=st.booleans(), metric=st.one_of(st.none(), names), value=floats, torch_value=floats,
                      ratio=floats, speed=st.one_of(st.none(), st.sampled_from(["ok", "slow", "fast", "no-band"])))
    # an all-reduce's row carries more keys (its band, link, message size, causes): its list is tomllib's to read
    allreduce = st.builds(lambda k, band, link, size, causes: dataclasses.replace(
        k, band=band, inferred=band is not None, link=link, message_bytes=size, causes=causes), plain,
        st.one_of(st.none(), st.tuples(st.floats(0, 1000), st.floats(0, 1000))), st.one_of(st.none(), names),
        st.one_of(st.none(), st.integers(0, 2**40)), st.lists(names, max_size=2).map(tuple))  # (some refused)
    kernels = st.one_of(plain, plain, plain, allreduce)

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.lists(st.lists(kernels, max_size=4), min_size=1, max_size=3))
    def check(per_record: list[list[KernelSummary]]) -> None:
        recs = [_signed(dataclasses.replace(_record(f"n{i}", fp=f"sha256:{i:02d}"), kernels=tuple(ks)))
                for i, ks in enumerate(per_record)]
        text = dumps(recs)

        def outcome(fast_lines: bool) -> object:  # the records, or the error (an all-reduce row may be refused)
            try:
                return loads(text, fast_lines=fast_lines)
            except LockfileError as err:
                return str(err)

        assert outcome(True) == outcome(False)

    check()
    text = dumps([_record("n1")])
    bare = dumps([dataclasses.replace(_record("n1"), kernels=())])
    line = next(x for x in text.splitlines() if x.startswith("  { kernel = "))
    for edited in (text.replace(line, line.replace("dtype = ", "dtype  = ")),                   # spacing
                   text.replace(line, "  { dtype = \"fp32\", kernel = \"vector_add\", device = \"cuda:0\", ok = true },"),
                   text.replace(line, line.replace('"vector_add"', '"vector\\u005fadd"')),    # an escape
                   text + '\n[extra]\nx = 1\n',
                   # a multi-line string holding what looks like a kernels list: tomllib's to read, as a string
                   text.replace('os = "linux"', 'os = """\nkernels = [\n' + line + '\n]\n"""', 1),
                   bare.replace('os = "linux"', 'kernels = []\nos = """\nkernels = [\n' + line + '\n]\n"""', 1),
                   text.split(line)[0] + line,                                       # cut short: not TOML
                   # a header tomllib takes that is not the writer's, after an entry with an empty list of its own
                   bare.replace("\n[[verified]]\n", "\n[[verified]]\nkernels = []\n") + "\n[[ verified ]]\n"
                   + text.split("\n[[verified]]\n")[1].replace('"n1"', '"n2"').replace("sha256:aa", "sha256:bb"),
                   text.replace("kernels = [", "kernels = [\n" + line + "\n]\nkernels = [", 1),  # twice: an error
                   text + "oops = \n"):                            # an error after the lines: its own line number
        try:
            want: object = loads(edited, fast_lines=False)
        except LockfileError as err:
            with pytest.raises(LockfileError) as got:
                loads(edited)
            assert str(got.value) == str(err)
        else:
            assert loads(edited) == want
    with pytest.raises(LockfileError, match=r"kernels\[0\].speed: 'quick' is not one of"):
        loads(text.replace(line, line.replace(' }', ', speed = "quick" }')))
