"""A no-op `tritonlock sync` of a real torch venv beside uv's own no-op, in CPU time (user + system) and wall time.

Usage: python bench/noop_bench.py [--repeat N] [--wheels DIR] [--keep DIR] [--tritonlock PATH]

--tritonlock: the console script to time (default: the one beside this Python). Measure a regular install, as users
have it: `uv venv /tmp/tl && uv pip install --python /tmp/tl/bin/python .`, then --tritonlock /tmp/tl/bin/tritonlock
(an editable install adds its import hook to every start-up).

The venv is what `tritonlock sync` makes of a lock of torch 2.13.0 (its CPU build, ~12,000 files) with triton and
torch's dependencies, from a local index (tests/pkgindex.py) serving wheel files found on this machine: --wheels DIR
(default: pip's find-links folders and /tmp/vbench-wheels), else `pip download` fetches them there first (your pip
configuration: PyPI or a mirror). Rows, each the median of --repeat runs, interleaved:

  tritonlock sync --no-verify     the venv matches the lock: "already matches"
  tritonlock sync                 the same, after a passing verify of exactly this venv: "verified at …" (the record
                                  of that verify is written the way sync writes it after one, so the bench does not
                                  spend two minutes verifying on a CPU box; a real one is in tests/test_sync_noop.py)
  tritonlock run -- true          the check `run` makes before it execs the command (and the exec of /bin/true)
  uv pip install --offline -r pins (the same venv; uv's own no-op)
  python -c pass                  the interpreter's start-up alone
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from pkgindex import LocalIndex  # noqa: E402

TORCH = "2.13.0"
WANT = ["torch==2.13.0+cpu", "triton==3.7.1", "numpy", "filelock", "typing-extensions", "setuptools", "sympy",
        "mpmath", "networkx", "jinja2", "markupsafe", "fsspec"]


def _find(dirs: list[str]) -> dict[str, list[str]]:
    """Every wheel file of each wanted project found in these folders (uv picks among them as from any index)."""
    out: dict[str, list[str]] = {}
    for d in dirs:
        for f in sorted(glob.glob(os.path.join(d, "*.whl"))):
            name = os.path.basename(f).split("-")[0].lower().replace("_", "-")
            version = os.path.basename(f).split("-")[1]
            for w in WANT:
                wn, _, wv = w.partition("==")
                if name == wn and (not wv or version == wv) and ("cp311" in f or "py3-none" in f or "py2.py3" in f):
                    out.setdefault(wn, []).append(f)
    return out


def cpu_run(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return wall, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, proc.stdout + proc.stderr


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--wheels", default="/tmp/vbench-wheels")
    ap.add_argument("--keep", default=None, help="build the project here (and keep it) instead of a temp folder")
    ap.add_argument("--tritonlock", default=None, help="the console script to time")
    args = ap.parse_args()
    bin_dir = Path(sys.executable).parent
    tl = args.tritonlock or str(bin_dir / "tritonlock")
    from uv import find_uv_bin

    uv = str(find_uv_bin())
    os.environ["UV_PYTHON_DOWNLOADS"] = "never"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    import tritonlock

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(tritonlock.__file__).parent)], check=True)
    tl_python = Path(tl).parent / "python"
    if tl_python.exists():  # (byte-code on disk for the timed install too, as pip leaves it)
        subprocess.run([str(tl_python), "-c", "import compileall, tritonlock, os; "
                        "compileall.compile_dir(os.path.dirname(tritonlock.__file__), quiet=1)"], check=True,
                       cwd=tempfile.gettempdir())
    links = [x for x in (os.environ.get("PIP_FIND_LINKS") or "").split() if x]
    wheels = _find([args.wheels, *links, "/opt/pypi/files"])
    missing = [w for w in WANT if w.partition("==")[0] not in wheels]
    if missing:
        os.makedirs(args.wheels, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                        "--python-version", "3.11", "-d", args.wheels, *missing], check=True)
        wheels = _find([args.wheels, *links, "/opt/pypi/files"])
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="noop-bench-"))
    idx = LocalIndex(root / "index")
    files = root / "index" / "simple" / "_files"
    files.mkdir(parents=True, exist_ok=True)
    for f in (f for fs in wheels.values() for f in fs):
        if not (files / os.path.basename(f)).exists():
            shutil.copy(f, files)
    idx.start()
    proj = root / "proj"
    proj.mkdir(exist_ok=True)
    (proj / "triton-env.toml").write_text(
        f'[environment]\npython = "3.11"\ntorch = "=={TORCH}"\npackages = ["numpy"]\n[indexes]\ntorch = "default"\n'
        f'default = "{idx.index_url("simple")}"\n', encoding="utf-8")
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
    for k in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL"):
        env.pop(k, None)
    print("resolve:", cpu_run([tl, "resolve", "-p", str(proj), "--upgrade"], env)[2].splitlines()[-1])
    print("sync:", cpu_run([tl, "sync", "-p", str(proj), "--no-verify"], env)[2].splitlines()[-1])
    venv = proj / ".venv"
    py = venv / "bin" / "python"
    n_files = sum(len(fs) for _, _, fs in os.walk(venv))
    pins = root / "pins.txt"
    pins.write_text(subprocess.run([uv, "pip", "freeze", "--python", str(py)], capture_output=True, text=True,
                                   check=True).stdout)
    # the record a passing verify leaves (sync writes it so after verify): see the module docstring
    # (by the timed tritonlock's own code: the stamp is keyed on the code that wrote it)
    record = ("import sys; from tritonlock.environment import _noop; "
              "s = _noop.matching_stamp(sys.argv[1], sys.argv[2], target=None, python=None, system_site_packages=None); "
              "assert s is not None, 'the sync left no stamp that matches'; "
              "_noop.write_verified(__import__('pathlib').Path(sys.argv[2]), ok=True, stamp=s)")
    has_record = subprocess.run([str(tl_python if tl_python.exists() else sys.executable), "-c", record, str(proj),
                                 str(venv)], cwd=root).returncode == 0  # (not in the repository: `python -c` would
    # import its tritonlock first); an older tritonlock (--tritonlock) has no such record: its row is left out
    rows = {
        "tritonlock sync --no-verify": [tl, "sync", "-p", str(proj), "--no-verify"],
        **({"tritonlock sync (verified, nothing changed)": [tl, "sync", "-p", str(proj)],
            "tritonlock run -- true": [tl, "run", "-p", str(proj), "--", "true"]} if has_record else {}),
        "uv pip install --offline -r pins": [uv, "pip", "install", "--offline", "--python", str(py), "-r", str(pins)],
        "python -c pass": [sys.executable, "-c", "pass"],
    }
    for label, cmd in rows.items():  # warm-up, and each says what it did
        out = cpu_run(cmd, env)[2].strip().splitlines()
        print(f"  {label}: {out[-1] if out else ''}")
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in rows}
    for _ in range(args.repeat):
        for label, cmd in rows.items():
            wall, cpu, _ = cpu_run(cmd, env)
            times[label].append((wall, cpu))
    idx.stop()
    print(f"\n{n_files} files in the venv; median of {args.repeat} interleaved runs, {time.strftime('%Y-%m-%d')}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    uv_cpu = statistics.median(c for _, c in times["uv pip install --offline -r pins"])
    print(f"{'command':46} {'wall ms':>8} {'cpu ms':>8} {'cpu/uv':>7}")
    for label, vals in times.items():
        wall = statistics.median(w for w, _ in vals)
        cpu = statistics.median(c for _, c in vals)
        print(f"{label:46} {wall * 1000:8.1f} {cpu * 1000:8.1f} {cpu / uv_cpu:6.2f}x")


if __name__ == "__main__":
    main()
