"""Slurm end to end against real daemons: export → sbatch → sync → verify (interpreter) → records → report merge.

Several nodes are simulated by running jobs on the one local node with different host profiles (TRITONLOCK_*
overrides); one of them matches no lock target, so its job fails and the report must say why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import need_system_packages, real_stack_index
from slurmcluster import SlurmCluster, missing_binaries
from tritonlock.records import read_records

pytestmark = pytest.mark.slow
TL = [sys.executable, "-m", "tritonlock"]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    missing = missing_binaries()
    if missing:
        need_system_packages(f"Slurm is not installed ({', '.join(missing)} missing): apt-get install slurm-wlm "
                             "munge (bash .ci/run does)")
    if os.geteuid() != 0:
        need_system_packages("slurmd runs as root: run the Slurm tests as root (bash .ci/run does, in a container)")
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def _tl(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TL, *args], capture_output=True, text=True, env=env, timeout=timeout)


def test_slurm_end_to_end(tmp_path: Path, slurm: SlurmCluster, real_torch_python: str,
                          real_torch_backend: str) -> None:
    idx = real_stack_index(tmp_path, real_torch_python, real_torch_backend)
    try:
        proj = tmp_path / "proj"
        (proj / "hosts").mkdir(parents=True)
        numpy = subprocess.run([real_torch_python, "-c", "import numpy; print(numpy.__version__)"],
                               capture_output=True, text=True, check=True).stdout.strip()
        # the lock is for the build the venv holds: the CPU build from a CPU index (no triton: the venv's is the
        # interpreter's), or the CUDA build from the default index, as a user who reaches only PyPI locks it
        build = ('triton = "none"\ncuda = "cpu"\n' if real_torch_backend == "cpu" else "")
        torch_index = f"{idx.url}/whl/{{backend}}" if real_torch_backend == "cpu" else "default"
        (proj / "triton-env.toml").write_text(f"""
target-files = ["hosts/*.toml"]
[environment]
python = "3.11"
torch = "==2.13.0"
{build}packages = ["numpy=={numpy}"]
[indexes]
torch = "{torch_index}"
default = "{idx.index_url("simple")}"
""")
        (proj / "hosts" / "cpu-node.toml").write_text(
            '[[targets]]\nname = "cpu-node"\nos = "linux"\narch = "x86_64"\nglibc = "2.28"\npython = "3.11"\n')
        r = _tl("resolve", "-p", str(proj))
        assert r.returncode == 0, r.stderr
        assert f"target cpu-node: torch 2.13.0 ({real_torch_backend})" in r.stdout, r.stdout
        assert _tl("check", "-p", str(proj)).returncode == 0

        script = tmp_path / "verify.sbatch"
        cmd = " ".join(TL)
        r = _tl("export", "--format", "slurm", "-p", str(proj), "-o", str(script), "--tritonlock", cmd,
                "--sync-args", f"--system-site-packages --python {real_torch_python}", "--verify-args", "--quick",
                "--time", "00:10:00")
        assert r.returncode == 0, r.stderr
        text = script.read_text()
        assert "#SBATCH --nodes=1" in text and "srun --ntasks-per-node=1" in text and "--gres" not in text
        reports = tmp_path / "reports"
        env = {**slurm.env, "TRITONLOCK_REPORTS": str(reports), "UV_PYTHON_DOWNLOADS": "never"}
        # three "nodes": this machine as it is, one claiming another glibc (another fingerprint), and one
        # claiming to be an aarch64 box, which no lock target fits
        nodes = {"sim-a": "", "sim-b": "TRITONLOCK_GLIBC=2.31", "sim-arm": "TRITONLOCK_ARCH=aarch64"}
        jobs = []
        for node, extra in nodes.items():
            exports = ",".join(x for x in ("ALL", f"TRITONLOCK_NODE={node}", extra) if x)
            out = subprocess.run(["sbatch", "--parsable", f"--export={exports}", f"--chdir={tmp_path}",
                                  str(script)], capture_output=True, text=True, env=env, timeout=30)
            assert out.returncode == 0, out.stderr
            jobs.append(out.stdout.strip().split(";")[0])
        slurm.wait(jobs, timeout=420)
        # each job's exit code is its own nodes' verdict: the two that passed exit 0 (they used to exit 1, because
        # the job's closing `report merge` also counted the failed node another job left in the shared directory)
        codes = {node: slurm.exit_codes(job)[job] for node, job in zip(nodes, jobs)}
        assert codes == {"sim-a": "0:0", "sim-b": "0:0", "sim-arm": "2:0"}, codes

        r = _tl("report", "merge", str(reports), "--json", "--expect", "3", "--html", str(tmp_path / "r.html"))
        assert r.returncode == 1, r.stdout + r.stderr  # one node failed
        doc = json.loads(r.stdout)
        by = {n["node"]: n for n in doc["nodes"]}
        assert set(by) == {"sim-a", "sim-b", "sim-arm"}, doc
        for ok in ("sim-a", "sim-b"):
            assert by[ok]["ok"] and by[ok]["status"] == "pass" and by[ok]["mode"] == "interpreter", by[ok]
            assert by[ok]["target"] == "cpu-node"
        bad = by["sim-arm"]
        assert not bad["ok"] and bad["status"] == "sync failed"
        assert "no target in" in bad["error"] and "fits this host" in bad["error"], bad
        assert doc["passed"] == 2 and doc["total"] == 3
        page = (tmp_path / "r.html").read_text()
        assert "<script" not in page and "sim-arm" in page and "no target in" in page
        # the job's own merge step wrote its table too
        assert (reports / "report.txt").exists() and (reports / "report.html").exists()

        recs = read_records(proj / "triton-env.verified.toml")
        assert {r.host for r in recs} == {"sim-a", "sim-b"} and all(r.ok for r in recs)
        assert len({r.fingerprint for r in recs}) == 2 and {r.glibc for r in recs} >= {"2.31"}
        r = _tl("check", "-p", str(proj), "--require-verified")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "verified: cpu-node" in r.stdout
        show = _tl("show", "-p", str(proj))
        assert "on sim-a" in show.stdout and "on sim-b" in show.stdout and "passed" in show.stdout
    finally:
        idx.stop()


def test_slurm_job_array_with_gres_and_failing_nodes(tmp_path: Path, slurm: SlurmCluster) -> None:
    """A job array asking for GRES runs every task; tasks that fail (here: the project has no lock) end with
    tritonlock's own words and exit code in the merged report, not a hang."""
    from tritonlock.fleet.slurm import SlurmJob, sbatch_script

    proj = tmp_path / "proj"
    proj.mkdir()
    script = tmp_path / "array.sbatch"

    script.write_text(sbatch_script(SlurmJob(project=str(proj), nodes=2, array=True, gpus_per_node=1,
                                             tritonlock=" ".join(TL), time="00:05:00", sync_timeout=60,
                                             verify_timeout=60)))
    reports = tmp_path / "reports"
    env = {**slurm.env, "TRITONLOCK_REPORTS": str(reports)}
    out = subprocess.run(["sbatch", "--parsable", f"--chdir={tmp_path}", str(script)], capture_output=True, text=True,
                         env=env, timeout=30)
    assert out.returncode == 0, out.stderr  # GRES gpu:1 accepted by the node's two gpus
    job = out.stdout.strip().split(";")[0]
    slurm.wait([job], timeout=180)
    assert slurm.exit_codes(job) == {f"{job}_0": "2:0", f"{job}_1": "2:0"}  # sync's exit 2, as each task's
    r = _tl("report", "merge", str(reports), "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 1 and doc["total"] == 2, doc
    for n in doc["nodes"]:
        assert n["status"] == "sync failed" and n["error"].startswith("exit 2: "), n
        # (no intent beside it either: the first step named is init, then resolve)
        assert "triton-env.lock: no such file — and there is no triton-env.toml beside it either: run `tritonlock " \
               "init`" in n["error"] and n["error"].endswith("then `tritonlock resolve`"), n
    assert {n["tag"].rsplit("-", 1)[1] for n in doc["nodes"]} == {"0", "1"}


def test_fleet_hosts_through_srun(tmp_path: Path, slurm: SlurmCluster) -> None:
    env = {**slurm.env, "TRITONLOCK_DRIVER": "550.54.15", "TRITONLOCK_GPUS": "8.9,8.9", "TRITONLOCK_GLIBC": "2.35"}
    r = subprocess.run([*TL, "fleet", "hosts", "--slurm", "--nodes", "1", "--out", str(tmp_path / "hosts"),
                        "--tritonlock", " ".join(TL), "--timeout", "120"], capture_output=True, text=True, env=env,
                       timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    (f,) = (tmp_path / "hosts").glob("*.toml")
    from tritonlock.host import load_saved_target

    t = load_saved_target(str(f))
    assert (t.driver, t.gpus, t.glibc) == ("550.54.15", ("8.9", "8.9"), "2.35")
    assert f"1 node(s): {slurm.hostname}" in f.read_text()
    # a request the cluster cannot meet (3 nodes of 1) is an error after --timeout, not an endless wait,
    # and the pending job is cancelled
    r = subprocess.run([*TL, "fleet", "hosts", "--slurm", "--nodes", "3", "--out", str(tmp_path / "h2"),
                        "--tritonlock", " ".join(TL), "--timeout", "10"], capture_output=True, text=True,
                       env=slurm.env, timeout=120)
    assert r.returncode == 1 and "srun did not finish within 10 s" in r.stderr, r.stderr
    assert not (tmp_path / "h2").exists()
    q = subprocess.run(["squeue", "-h"], capture_output=True, text=True, env=slurm.env, timeout=30)
    assert q.stdout.strip() == "", q.stdout
