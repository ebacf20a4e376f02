"""A real Slurm cluster on loopback for tests: munged, slurmctld and slurmd from one generated slurm.conf.

One node (this machine, 127.0.0.1) with two generic "gpu" resources so jobs that ask for GRES are accepted;
every daemon runs as root from a private directory with its own munge key and socket, on free loopback ports.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "sinfo", "scontrol")


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


@dataclass
class SlurmCluster:
    root: Path
    conf: Path = Path()
    hostname: str = ""

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def start(self, timeout: float = 60) -> None:
        r = self.root
        for d in ("munge", "state", "spool", "log"):
            (r / d).mkdir(parents=True, exist_ok=True)
        (r / "munge").chmod(0o700)
        key = r / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        sock = r / "munge" / "munge.sock"
        subprocess.run([_bin("munged"), "--force", f"--socket={sock}", f"--key-file={key}",
                        f"--pid-file={r / 'munge' / 'munged.pid'}", f"--log-file={r / 'munge' / 'munged.log'}",
                        f"--seed-file={r / 'munge' / 'seed'}"], check=True, timeout=30)
        self.hostname = socket.gethostname().split(".")[0]
        ctld, slurmd = _free_port(), _free_port()
        cpus = os.cpu_count() or 2
        # two stand-in "GPUs" (device files every machine has): Slurm hands them out as GRES and sets
        # CUDA_VISIBLE_DEVICES, as it does for real ones
        (r / "gres.conf").write_text(f"AutoDetect=off\nNodeName={self.hostname} Name=gpu File=/dev/null,/dev/zero\n")
        self.conf = r / "slurm.conf"
        self.conf.write_text(f"""ClusterName=tritonlocktest
SlurmctldHost={self.hostname}(127.0.0.1)
SlurmctldPort={ctld}
SlurmdPort={slurmd}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'slurmctld.pid'}
SlurmdPidFile={r / 'slurmd.pid'}
SlurmctldLogFile={r / 'log' / 'slurmctld.log'}
SlurmdLogFile={r / 'log' / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
GresTypes=gpu
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
NodeName={self.hostname} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=4000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes={self.hostname} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
""")
        env = self.env
        subprocess.run([_bin("slurmctld"), "-f", str(self.conf)], check=True, env=env, timeout=30)
        subprocess.run([_bin("slurmd"), "-f", str(self.conf)], check=True, env=env, timeout=30)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = subprocess.run([_bin("sinfo"), "-h", "-o", "%t"], capture_output=True, text=True, env=env,
                                 timeout=10)
            if out.returncode == 0 and out.stdout.strip() in ("idle", "mix", "alloc"):
                return
            time.sleep(0.5)
        raise RuntimeError(f"Slurm did not come up within {timeout:.0f} s:\n{self.logs()}")

    def logs(self) -> str:
        out = []
        for f in (self.root / "log" / "slurmctld.log", self.root / "log" / "slurmd.log",
                  self.root / "munge" / "munged.log"):
            try:
                out.append(f"--- {f.name}\n" + "\n".join(f.read_text(errors="replace").splitlines()[-15:]))
            except OSError:
                pass
        return "\n".join(out)

    def stop(self) -> None:
        """End the three daemons this cluster started, by their pid files, and wait for them to go."""
        for pidfile in (self.root / "slurmd.pid", self.root / "slurmctld.pid", self.root / "munge" / "munged.pid"):
            try:
                pid = int(pidfile.read_text().strip())
            except (OSError, ValueError):
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def exit_codes(self, job_id: str) -> dict[str, str]:
        """Each job (or array task) of `job_id` → its Slurm ExitCode ("0:0", "2:0"), read from slurmctld, which keeps
        a finished job for MinJobAge seconds (no accounting database here)."""
        out = subprocess.run([_bin("scontrol"), "show", "job", "-o", job_id], capture_output=True, text=True,
                             env=self.env, timeout=10)
        if out.returncode != 0:
            raise RuntimeError(f"scontrol show job {job_id}: {out.stderr.strip()}")
        codes = {}
        for line in out.stdout.splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            task = fields.get("ArrayTaskId")
            codes[f"{fields['JobId']}" if not task else f"{fields.get('ArrayJobId')}_{task}"] = fields["ExitCode"]
        return codes

    def wait(self, job_ids: list[str], timeout: float) -> None:
        """Until none of the jobs is queued or running; on timeout, cancel them and raise with the logs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = subprocess.run([_bin("squeue"), "-h", "-j", ",".join(job_ids), "-o", "%i %T"],
                                 capture_output=True, text=True, env=self.env, timeout=10)
            if out.returncode == 0 and not out.stdout.strip():
                return
            time.sleep(1)
        subprocess.run([_bin("scancel"), *job_ids], env=self.env, timeout=10, check=False)
        raise TimeoutError(f"jobs {job_ids} still running after {timeout:.0f} s (cancelled):\n{self.logs()}")
