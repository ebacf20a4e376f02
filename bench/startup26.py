"""The CPU box's fast paths side by side (issue 26): `tritonlock --help`, `check`, `show` and a no-op
`sync --no-verify` against uv's own no-op install of the same pins and a bare `python -c pass`, interleaved round by
round; each figure is the CPU time (user + system) of the process and its children, the median of the rounds —
steadier than wall time on a shared machine, and what an idle machine shows as wall time.

    python bench/startup26.py [--rounds 21] [--tritonlock PATH]

Runs against the tests' local HTTP index (tests/pkgindex.py): a CPU project (torch 2.6 CPU + einops) locked and
synced once, untimed. Goals: --help <= 40 ms, check <= 60 ms, no-op sync <= 2x uv's no-op install.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import populate, write_intent  # noqa: E402
from pkgindex import LocalIndex  # noqa: E402


def cpu(args: list[str], cwd: Path | None = None) -> float:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--tritonlock", default=str(Path(sys.executable).with_name("tritonlock")))
    ap.add_argument("--before", metavar="PATH", help="another tritonlock (the code before) to time beside it")
    args = ap.parse_args()
    tools = {"": args.tritonlock, **({"before: ": args.before} if args.before else {})}
    from uv import find_uv_bin

    uv = str(find_uv_bin())
    os.environ["UV_PYTHON_DOWNLOADS"] = "never"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        idx = LocalIndex(root / "index")
        populate(idx)
        idx.start()
        try:
            cmds: dict[str, list[str]] = {"python -c pass": [sys.executable, "-c", "pass"]}
            # tritonlock's user cache (the matrix's, a passing check's answers) in a folder of the bench's own
            os.environ["XDG_CACHE_HOME"] = str(root / "cache")
            kept = root / "cache" / "tritonlock" / "check"
            for label, tl in tools.items():
                proj = root / f"proj{len(cmds)}"
                write_intent(proj, idx, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n'
                                        'packages = ["einops"]\n')
                subprocess.run([tl, "resolve", "-p", str(proj)], check=True, capture_output=True)
                subprocess.run([tl, "sync", "-p", str(proj), "--no-verify"], check=True, capture_output=True)
                venv_py = proj / ".venv" / "bin" / "python"
                cmds.update({
                    f"{label}tritonlock --help": [tl, "--help"],
                    f"{label}tritonlock check": [tl, "check", "-p", str(proj)],
                    **({} if label else {f"{label}tritonlock check (no kept answer)": [tl, "check", "-p", str(proj)]}),
                    f"{label}tritonlock show": [tl, "show", "-p", str(proj)],
                    f"{label}tritonlock sync --no-verify (no-op)": [tl, "sync", "-p", str(proj), "--no-verify"],
                })
            pins = root / "pins.txt"
            pins.write_text(subprocess.run([uv, "pip", "freeze", "--python", str(venv_py)], capture_output=True,
                                           text=True, check=True).stdout)
            cmds["uv pip install --offline -r pins (no-op)"] = [uv, "pip", "install", "--offline", "--no-deps",
                                                                 "--python", str(venv_py), "-r", str(pins)]
            for c in cmds.values():  # warm the file cache and byte-code
                cpu(c)
            times: dict[str, list[float]] = {k: [] for k in cmds}
            for _ in range(args.rounds):
                for name, c in cmds.items():
                    if "no kept answer" in name:  # the full check: its kept answers removed first
                        shutil.rmtree(kept, ignore_errors=True)
                    times[name].append(cpu(c))
        finally:
            idx.stop()
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    print(f"CPU ms (user + sys), median of {args.rounds} interleaved rounds, {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.1f}")
    for k, v in med.items():
        print(f"  {k:44} {v:7.1f}   (fastest {min(times[k]) * 1000:.1f})")
    noop, uvi = med["tritonlock sync --no-verify (no-op)"], med["uv pip install --offline -r pins (no-op)"]
    print(f"goals: --help {med['tritonlock --help']:.0f} <= 40; check {med['tritonlock check']:.0f} <= 60; "
          f"no-op sync {noop:.0f} <= 2 x uv {uvi:.0f} = {2 * uvi:.0f} ({noop / uvi:.2f}x)")


if __name__ == "__main__":
    main()
