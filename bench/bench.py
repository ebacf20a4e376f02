"""Time tritonlock against uv and pip run side by side on the same inputs; print ratios.

Usage: python bench/bench.py [--repeat N]
Everything runs against a local HTTP index (tests/pkgindex.py) so network noise stays out.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import populate, write_intent  # noqa: E402
from pkgindex import LocalIndex  # noqa: E402


CPU: dict[str, float] = {}  # command -> median CPU seconds (user + sys) of its runs: steadier than wall on a busy box


def timed(args: list[str], repeat: int, cwd: Path | None = None, setup: object = None) -> float:
    import resource

    times, cpus = [], []
    for _ in range(repeat):
        if callable(setup):
            setup()
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(args, cwd=cwd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    CPU[" ".join(args)] = statistics.median(cpus)
    return statistics.median(times)


# Issue #9's start-up budgets (ms): what a user waits for before anything happens.
BUDGET = {"--help": 100, "show": 150, "resolve --dry-run": 150}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--network", action="store_true",
                    help="also resolve real torch 2.11 + numpy against your default index (PyPI), both tools")
    args = ap.parse_args()
    n = args.repeat
    env_bin = Path(sys.executable).parent
    tl = [str(env_bin / "tritonlock")] if (env_bin / "tritonlock").exists() else [sys.executable, "-m", "tritonlock"]
    from uv import find_uv_bin

    uv = str(find_uv_bin())
    os.environ["UV_PYTHON_DOWNLOADS"] = "never"
    # Measure as installed: with byte-code on disk, as pip leaves it after an install.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    import tritonlock

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(tritonlock.__file__).parent)], check=True)
    os.environ["PIP_CONFIG_FILE"] = os.devnull  # pip sees only the local index, like uv and tritonlock
    for k in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT"):
        os.environ.pop(k, None)
    rows: list[tuple[str, float, str, float]] = []
    budget_rows: list[tuple[str, float, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        idx = LocalIndex(root / "index")
        populate(idx)
        idx.start()
        proj = root / "proj"
        write_intent(proj, idx, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n'
                                'packages = ["einops"]\n')
        # 1. start-up
        rows.append(("tritonlock --help", timed([*tl, "--help"], n), "uv --help", timed([uv, "--help"], n)))
        # 2. full resolve vs uv pip compile of the same requirements on the same indexes
        full = timed([*tl, "resolve", "-p", str(proj), "--upgrade"], n)
        req = root / "req.in"
        req.write_text("torch==2.6.0\ntriton==3.2.0\neinops\n")
        uvc = timed([uv, "pip", "compile", str(req), "--no-config", "--quiet", "--generate-hashes",
                     "--index-url", idx.index_url("simple"), "--extra-index-url", f"{idx.url}/whl/cpu",
                     "--index-strategy", "unsafe-best-match", "--python-version", "3.11",
                     "--python-platform", "x86_64-manylinux_2_28", "-o", str(root / "req.txt")], n)
        rows.append(("tritonlock resolve (full)", full, "uv pip compile", uvc))
        # 3. no-change resolve
        rows.append(("tritonlock resolve (no change)", timed([*tl, "resolve", "-p", str(proj)], n),
                     "uv pip compile", uvc))
        # 4. no-op sync vs uv pip sync / pip install -r of the same pinned set
        subprocess.run([*tl, "sync", "-p", str(proj), "--no-verify"], check=True, capture_output=True)
        venv_py = proj / ".venv" / "bin" / "python"
        tl_sync = timed([*tl, "sync", "-p", str(proj), "--no-verify"], n)
        pins = root / "pins.txt"
        out = subprocess.run([uv, "pip", "freeze", "--python", str(venv_py)], capture_output=True, text=True,
                             check=True).stdout
        pins.write_text(out)
        uv_sync = timed([uv, "pip", "sync", "--python", str(venv_py), "--offline", str(pins)], n)
        pip_venv = root / "pipvenv"
        subprocess.run([sys.executable, "-m", "venv", str(pip_venv)], check=True)
        subprocess.run([str(pip_venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
                        "--index-url", idx.index_url("simple"), "--extra-index-url", f"{idx.url}/whl/cpu",
                        "-r", str(pins)], check=True)
        pip_noop = timed([str(pip_venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
                          "--index-url", idx.index_url("simple"), "--extra-index-url", f"{idx.url}/whl/cpu",
                          "-r", str(pins)], n)
        rows.append(("tritonlock sync (no-op)", tl_sync, "uv pip sync", uv_sync))
        rows.append(("tritonlock sync (no-op)", tl_sync, "pip install -r", pip_noop))
        # 5. the read commands a user runs first, against their budgets
        budget_rows = []
        for sub in ("--help", "show", "resolve --dry-run"):
            cmd = [*tl, *sub.split()] + (["-p", str(proj)] if sub != "--help" else [])
            wall = timed(cmd, n)
            budget_rows.append((f"tritonlock {sub}", wall, CPU[" ".join(cmd)], BUDGET[sub] / 1000))
        idx.stop()
        if args.network:
            from tritonlock.lock.index import default_index

            real = root / "real"
            real.mkdir()
            (real / "triton-env.toml").write_text(
                '[environment]\npython = "3.12"\ntorch = "==2.11.*"\npackages = ["numpy"]\n'
                f'[indexes]\ntorch = "{default_index()}"\n\n[[targets]]\nname = "h200"\nglibc = "2.39"\n'
                'driver = "580.159.04"\ngpus = ["9.0"]\n')
            tl_real = timed([*tl, "resolve", "-p", str(real), "--upgrade"], n)
            (root / "real.in").write_text("torch==2.11.0\ntriton==3.6.0\nnumpy\n")
            uv_real = timed([uv, "pip", "compile", str(root / "real.in"), "--no-config", "--quiet", "--generate-hashes",
                             "--default-index", default_index(), "--python-version", "3.12",
                             "--python-platform", "x86_64-manylinux_2_39", "-o", str(root / "real.txt")], n)
            rows.append(("tritonlock resolve (torch 2.11, PyPI)", tl_real, "uv pip compile", uv_real))
    print(f"median of {n} runs each, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores")
    print(f"{'tritonlock':34} {'ms':>8}   {'baseline':22} {'ms':>8}  ratio")
    for a, ta, b, tb in rows:
        print(f"{a:34} {ta * 1000:8.1f}   {b:22} {tb * 1000:8.1f}  {ta / tb:5.2f}x")
    print(f"\n{'start-up':34} {'wall ms':>8} {'cpu ms':>8} {'budget':>8}")
    for a, wall, cpu, budget in budget_rows:
        print(f"{a:34} {wall * 1000:8.1f} {cpu * 1000:8.1f} {budget * 1000:8.0f}  "
              f"{'ok' if min(wall, cpu) <= budget else 'OVER'}")


if __name__ == "__main__":
    main()
