"""Slurm: an sbatch script that syncs and verifies the lock on every node, and host gathering through srun.

Job shapes follow the sbatch/srun man pages: `--nodes` with one task per node run through `srun`, or a job
array (`--array`, one node per task); GPUs are requested as generic resources (`--gres=gpu:N`).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass

from tritonlock.errors import UsageError
from tritonlock.fleet.nodes import FleetError, Probe, parse_probes
from tritonlock.fleet.steps import Steps, node_step
from tritonlock.models import LockedTarget

_TIME = re.compile(r"([0-9]+-)?[0-9]{1,2}(:[0-9]{2}){0,2}|[0-9]+")  # ASCII digits: Slurm reads no others
# A partition, account or node list as an #SBATCH line or an srun option holds it: one word, no shell or line breaks.
_WORD = re.compile(r"[A-Za-z0-9_.,:+@%=/\[\]-]+")


@dataclass(frozen=True, kw_only=True, slots=True)
class SlurmJob:
    """What the job asks the scheduler for, and how each node runs the two steps."""

    project: str  # absolute path of the project on the shared file system
    nodes: int = 1
    array: bool = False  # a job array of `nodes` tasks, one node each, instead of one job over `nodes` nodes
    gpus_per_node: int = 0
    partition: str | None = None
    account: str | None = None
    time: str = "00:30:00"
    reports: str | None = None  # default: PROJECT/tritonlock-reports/JOBID
    tritonlock: str = "tritonlock"  # the command on the nodes
    sync_args: str = ""  # extra `tritonlock sync` options (e.g. --offline --find-links DIR)
    verify_args: str = ""  # extra `tritonlock verify` options (e.g. --quick)
    sync_timeout: int = 1800
    verify_timeout: int = 900
    target: str | None = None  # the lock target the nodes are expected to be (a comment; sync picks by host)


def check_time(value: str) -> str:
    if not _TIME.fullmatch(value):
        raise UsageError(f"--time {value!r}: expected Slurm's [D-]HH:MM:SS, MM:SS or minutes (e.g. 00:30:00)")
    return value


def check_word(option: str, value: str | None) -> str | None:
    """A value that becomes one `#SBATCH --option=value` line (or one srun argument): a newline in it would start a
    line of its own in the script — a command — so only the characters Slurm's names use are taken."""
    if value is not None and not _WORD.fullmatch(value):
        raise UsageError(f"{option} {value!r}: expected one Slurm name (letters, digits and . _ - , : + @ % = / [ ]), "
                         "without spaces, quotes or line breaks")
    return value


def shell_words(option: str, value: str) -> str:
    """Options passed through to a command on the nodes, as shell words each quoted on its own: what the user
    split with quotes stays one word, and nothing in them runs (no `;`, `$(…)` or line break becomes shell)."""
    if any(not c.isprintable() for c in value):
        raise UsageError(f"{option} {value!r}: control characters or line breaks — give the options on one line")
    try:
        words = shlex.split(value)
    except ValueError as err:
        raise UsageError(f"{option} {value!r}: {err} — quote as a shell would") from None
    return shlex.join(words)


def gpus_of(t: LockedTarget | None) -> int:
    """GPUs a node of this target has: GRES to request (0 for a CPU target or no target)."""
    if t is None or not t.selection.target.gpus:
        return 0
    backend = t.selection.backend or ""
    if backend.startswith("cu") and t.selection.target.driver:
        return len(t.selection.target.gpus)
    # AMD (ROCm) and Intel (XPU) builds run on their GPUs too: GRES gpu is vendor-neutral in Slurm
    return len(t.selection.target.gpus) if backend.startswith(("rocm", "xpu")) else 0


def _q(s: str) -> str:
    return shlex.quote(s)


def sbatch_script(job: SlurmJob) -> str:
    """The sbatch script. Every step has a timeout; a node that fails leaves its exit code and log, so
    `tritonlock report merge` names what broke instead of waiting for it."""
    if job.nodes < 1:
        raise UsageError("--nodes must be at least 1")
    check_time(job.time)
    check_word("--partition", job.partition)
    check_word("--account", job.account)
    tritonlock = shell_words("--tritonlock", job.tritonlock)
    if not tritonlock or tritonlock.split() != shlex.split(tritonlock) or any(c in tritonlock for c in "*?["):
        # $TRITONLOCK_CMD is expanded unquoted on the nodes (it may be several words, "uvx tritonlock"): a word that
        # needs quotes would be split or globbed there
        raise UsageError(f"--tritonlock {job.tritonlock!r}: expected a command and its options as plain words "
                         "(e.g. /opt/venv/bin/tritonlock or 'uvx tritonlock'), without quotes, spaces inside a word "
                         "or wildcards")
    steps = Steps(sync_args=shell_words("--sync-args", job.sync_args),
                  verify_args=shell_words("--verify-args", job.verify_args), sync_timeout=job.sync_timeout,
                  verify_timeout=job.verify_timeout)
    head = ["#!/bin/bash",
            "# Generated by `tritonlock export --format slurm`: on every node, `tritonlock sync --locked` into a",
            "# node-local venv, then `tritonlock verify --json --record`; reports go to one shared directory.",
            "# Submit: sbatch THIS_FILE    Then: tritonlock report merge REPORTS (printed in the job's output)",
            "#SBATCH --job-name=tritonlock-verify"]
    if job.target:
        head.insert(3, f"# Lock target expected on these nodes: {_q(job.target)}")
    if job.array:
        head += [f"#SBATCH --array=0-{job.nodes - 1}", "#SBATCH --nodes=1", "#SBATCH --ntasks=1"]
    else:
        head += [f"#SBATCH --nodes={job.nodes}", "#SBATCH --ntasks-per-node=1"]
    if job.gpus_per_node:
        head.append(f"#SBATCH --gres=gpu:{job.gpus_per_node}")
    head.append(f"#SBATCH --time={job.time}")
    if job.partition:
        head.append(f"#SBATCH --partition={job.partition}")
    if job.account:
        head.append(f"#SBATCH --account={job.account}")
    head.append("#SBATCH --output=tritonlock-verify-%j.out" if not job.array else
                "#SBATCH --output=tritonlock-verify-%A_%a.out")
    if job.reports is not None and any(not c.isprintable() for c in job.reports):
        raise UsageError(f"--reports {job.reports!r}: control characters or line breaks in a path")
    # Each value is assigned as one shell-quoted word (never inside "${VAR:-…}", where quotes would be kept as
    # characters and $(…) would run): a project under "My Projects" or a path with $ in it stays that path.
    reports = _q(job.reports) if job.reports else f'{_q(job.project)}/tritonlock-reports/"${{SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}}"'
    body = f'''
set -uo pipefail
[ -n "${{TRITONLOCK_PROJECT:-}}" ] || TRITONLOCK_PROJECT={_q(job.project)}
[ -n "${{TRITONLOCK_REPORTS:-}}" ] || TRITONLOCK_REPORTS={reports}
[ -n "${{TRITONLOCK_CMD:-}}" ] || TRITONLOCK_CMD={_q(tritonlock)}
export TRITONLOCK_PROJECT TRITONLOCK_REPORTS TRITONLOCK_CMD
mkdir -p "$TRITONLOCK_REPORTS" || exit 1

'''+node_step(steps, index_var="SLURM_ARRAY_TASK_ID")
    if job.array:
        tail = '''
node_step
rc=$?
echo "tritonlock: reports in $TRITONLOCK_REPORTS — when every task is done: $TRITONLOCK_CMD report merge $TRITONLOCK_REPORTS"
exit "$rc"
'''
    else:
        tail = '''
export -f node_step
srun --ntasks-per-node=1 --kill-on-bad-exit=0 bash -c node_step
rc=$?
$TRITONLOCK_CMD report merge "$TRITONLOCK_REPORTS" --expect "${SLURM_JOB_NUM_NODES:-1}" \\
  --html "$TRITONLOCK_REPORTS/report.html" --out "$TRITONLOCK_REPORTS/report.txt"
merged=$?
cat "$TRITONLOCK_REPORTS/report.txt"
echo "tritonlock: reports in $TRITONLOCK_REPORTS (report.txt, report.html)"
# The job's exit code is its own nodes' verdict (srun's: non-zero when any of its tasks failed). The merged table
# may also hold nodes another job left in a shared reports directory; they do not fail this job. A merge that could
# not run at all (exit 2 or more) does.
[ "$rc" -ne 0 ] && exit "$rc"
[ "$merged" -eq 1 ] && exit 0
exit "$merged"
'''
    return "\n".join(head) + "\n" + body + tail


@dataclass(frozen=True, kw_only=True, slots=True)
class GatherJob:
    nodes: int = 1
    nodelist: str | None = None
    partition: str | None = None
    account: str | None = None
    time: str = "00:05:00"
    tritonlock: str = "tritonlock"
    timeout: float = 600  # seconds to wait for srun before giving up


def srun_probe_args(job: GatherJob) -> list[str]:
    check_word("--nodelist", job.nodelist)
    check_word("--partition", job.partition)
    check_word("--account", job.account)
    args = ["srun", f"--nodes={job.nodes}", "--ntasks-per-node=1", "--label", f"--time={check_time(job.time)}"]
    if job.nodelist:
        args.append(f"--nodelist={job.nodelist}")
    if job.partition:
        args.append(f"--partition={job.partition}")
    if job.account:
        args.append(f"--account={job.account}")
    return args + [*shlex.split(job.tritonlock), "fleet", "probe"]


def gather_probes(job: GatherJob) -> list[Probe]:
    """Run `tritonlock fleet probe` on each node through srun and read what they said."""
    args = srun_probe_args(job)
    try:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True)
    except FileNotFoundError:
        raise FleetError("srun: not found — run this on a Slurm login node (or put Slurm's commands on PATH)") from None
    try:
        stdout, stderr = proc.communicate(timeout=job.timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()  # srun cancels its own job on SIGTERM; a SIGKILL would leave it queued
        try:
            proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        raise FleetError(f"srun did not finish within {job.timeout:.0f} s ({' '.join(args)}) — the nodes may be "
                         "busy, down or fewer than asked for; check `squeue`/`sinfo`, or raise --timeout") from None
    probes = parse_probes(stdout, "srun output")
    if proc.returncode != 0 or len(probes) < job.nodes:
        err = " ".join((stderr or "").strip().splitlines()[-3:]) or f"exit {proc.returncode}"
        got = ", ".join(p.node for p in probes) or "none"
        raise FleetError(f"srun answered for {len(probes)} of {job.nodes} node(s) (got: {got}): {err}")
    return probes
