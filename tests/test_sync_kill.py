"""kill -9 of tritonlock *and* uv at random moments of a sync (upgrades, downgrades, Python changes); the next
sync must leave the venv exactly as locked — checked file by file against the locked wheels themselves.

The quick run is in the normal suite; `pytest -m long tests/test_sync_kill.py` runs 60 rounds
(TRITONLOCK_KILL_ROUNDS=N for another count)."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from conftest import write_intent
from pkgindex import LocalIndex
from test_sync_safety import python312
from tritonlock.environment import _venv
from tritonlock.lock.lockfile import read_lock
from tritonlock.environment.sync import siblings, venv_python

VARIANTS = {  # name: (python, packages)
    "a": ("3.11", '"bulk==1.0", "filelock==3.12.0"'),
    "b": ("3.11", '"bulk==2.0", "einops"'),
    "c": ("3.12", '"bulk==2.0"'),
}


def _bulk(version: str, n: int) -> dict[str, str]:
    """Many files, different per version, so an install has a long window to be killed in."""
    mods = {"bulk/__init__.py": f"__version__ = {version!r}\n"}
    for i in range(n):
        body = hashlib.sha256(f"{version}-{i}".encode()).hexdigest() * (20 + i % 40)
        mods[f"bulk/m{i:04d}.py"] = f"DATA = {body!r}\n"
    return mods


@pytest.fixture(scope="module")
def variants(local_index: LocalIndex, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    local_index.add("simple", "bulk", "1.0", modules=_bulk("1.0", 700))
    local_index.add("simple", "bulk", "2.0", modules=_bulk("2.0", 900))
    out = {}
    for name, (python, packages) in VARIANTS.items():
        d = tmp_path_factory.mktemp(f"variant-{name}")
        write_intent(d, local_index, f'[environment]\npython = "{python}"\ntorch = "==2.6.0"\ncuda = "cpu"\n'
                                     f"packages = [{packages}]\n")
        r = subprocess.run([sys.executable, "-m", "tritonlock", "resolve", "-p", str(d)], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        out[name] = d
    return out


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _kill_tree(pid: int) -> int:
    """SIGSTOP the whole tree until no new process appears (a stopped process cannot start one), then SIGKILL
    every one of them at once: tritonlock and uv die together, as in a power cut."""
    seen: set[int] = set()
    while True:
        new = ({pid} | _descendants(pid) | {d for s in seen for d in _descendants(s)}) - seen
        if not new:
            break
        for p in new:
            try:
                os.kill(p, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        seen |= new
    for p in seen:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(seen)


def _sync_args(proj: Path, variant: str) -> list[str]:
    args = [sys.executable, "-m", "tritonlock", "sync", "-p", str(proj), "--no-verify"]
    return args + (["--python", python312()] if VARIANTS[variant][0] == "3.12" else [])


def _use(proj: Path, src: Path) -> None:
    for f in ("triton-env.toml", "triton-env.lock"):
        shutil.copy(src / f, proj / f)


def _wheel_file(index: LocalIndex, name: str, sha256: str) -> Path:
    for p in index.root.rglob(name):
        if hashlib.sha256(p.read_bytes()).hexdigest() == sha256:
            return p
    raise AssertionError(f"{name} with sha256 {sha256} is not in the test index")


def mismatches(venv: Path, lock_dir: Path, index: LocalIndex) -> list[str]:
    """Everything in which the venv differs from the lock, judged from the locked wheels' own bytes (not by
    tritonlock's code): Python, the set of distributions, every file each wheel holds, one copy of each."""
    lock = read_lock(lock_dir / "triton-env.lock")
    target = lock.targets[0]
    problems = []
    if _venv.venv_python_minor(venv) != target.selection.python:
        problems.append(f"python {_venv.venv_python_minor(venv)} != {target.selection.python}")
    sites = _venv.site_dirs(venv)
    if len(sites) != 1:
        return problems + [f"site dirs: {sites}"]
    site = sites[0]
    infos = sorted(d.name for d in _venv.dist_infos(site))
    want = {p.name: p for p in target.packages}
    have = [_venv.normalize(i[: -len(".dist-info")].rsplit("-", 1)[0]) for i in infos]
    if sorted(have) != sorted(want):
        problems.append(f"distributions {infos} != {sorted(want)}")
    for p in want.values():
        w = p.wheels[0]
        with zipfile.ZipFile(_wheel_file(index, w.name, w.sha256)) as zf:
            for item in zf.infolist():
                if item.filename.endswith("/RECORD"):
                    continue
                f = site / item.filename
                if not f.is_file() or f.read_bytes() != zf.read(item):
                    problems.append(f"{p.name}: {item.filename} missing or different")
    problems += [f"left beside the venv: {s}" for s in siblings(venv) if s.exists()]
    return problems


def _wait_until_changing(proc: subprocess.Popen[bytes], venv: Path, timeout: float = 60) -> bool:
    """Wait until the sync starts changing the venv: the completed-sync stamp is gone (removed right before an
    install in place) or a venv is being built beside it. False when the sync ended first."""
    new = siblings(venv)[0]
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        if new.exists() or not (venv / _venv.SYNCED).exists():
            return True
        time.sleep(0.002)
    return False


def rounds(index: LocalIndex, variants: dict[str, Path], proj: Path, n: int, seed: int,
           landed: bool = False) -> dict[str, int]:
    """`landed`: each kill is aimed at the moment the venv changes (after the stamp is removed or the new venv
    appears, plus a random 0-150 ms), not at a random time since start-up."""
    rng = random.Random(seed)
    _use(proj, variants["a"])
    assert subprocess.run(_sync_args(proj, "a"), capture_output=True).returncode == 0
    venv = proj / ".venv"
    stats = {"rounds": 0, "not as locked after the kill": 0, "damaged packages or leftovers after the kill": 0,
             "repaired by the next sync": 0, "killed while the venv was changing": 0}
    names = sorted(VARIANTS)
    for i in range(n):
        v = rng.choice([x for x in names if x != (names[i % 3])]) if i else "b"
        _use(proj, variants[v])
        started = time.monotonic()
        proc = subprocess.Popen(_sync_args(proj, v), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        if landed:
            changing = _wait_until_changing(proc, venv)
            time.sleep(rng.uniform(0.0, 0.15))
        else:
            time.sleep(rng.uniform(0.05, 1.6))
            changing = proc.poll() is None and (siblings(venv)[0].exists() or not (venv / _venv.SYNCED).exists())
        alive = proc.poll() is None
        _kill_tree(proc.pid)
        stats["killed while the venv was changing"] += changing and alive
        proc.wait(timeout=30)
        stats["rounds"] += 1
        broken = mismatches(venv, variants[v], index) if venv_python(venv).exists() else ["no venv"]
        stats["not as locked after the kill"] += bool(broken)
        stats["damaged packages or leftovers after the kill"] += bool(
            _venv.venv_damage(venv) or any(s.exists() for s in siblings(venv)))
        r = subprocess.run(_sync_args(proj, v), capture_output=True, text=True)
        assert r.returncode == 0, f"round {i} (variant {v}, killed after {time.monotonic() - started:.2f} s): " \
                                  f"{r.stdout}{r.stderr}"
        left = mismatches(venv, variants[v], index)
        assert not left, f"round {i}: the re-sync left it broken:\n{r.stdout}\n" + "\n".join(left)
        stats["repaired by the next sync"] += bool(broken)
        # and a third sync agrees that nothing is left to do
        r = subprocess.run(_sync_args(proj, v), capture_output=True, text=True)
        assert r.returncode == 0 and "already matches" in r.stdout, r.stdout + r.stderr
    return stats


def test_kill_during_sync_quick(local_index: LocalIndex, variants: dict[str, Path], tmp_path: Path) -> None:
    stats = rounds(local_index, variants, tmp_path, 5, seed=7, landed=True)
    print(f"\nkill -9 rounds: {stats}")
    assert stats["rounds"] == 5
    # the kills landed while the venv changed, and left it, at least once, not as locked (then repaired)
    assert stats["killed while the venv was changing"] >= 3, stats
    assert stats["not as locked after the kill"] >= 1 and stats["repaired by the next sync"] >= 1, stats


@pytest.mark.long
def test_kill_during_sync_many(local_index: LocalIndex, variants: dict[str, Path], tmp_path: Path) -> None:
    n = int(os.environ.get("TRITONLOCK_KILL_ROUNDS", "60"))
    stats = rounds(local_index, variants, tmp_path, n, seed=int(os.environ.get("TRITONLOCK_KILL_SEED", "1")))
    print(f"\nkill -9 rounds: {stats}")
    assert stats["rounds"] == n
