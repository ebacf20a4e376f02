"""How fast tritonlock answers hostile input: thousands of problems in one intent, a saved target file with thousands
of keys, a target-files glob that sweeps a thousand files, two thousand targets for one machine. The tests check
what is answered (one clean error, capped lists); how long it takes is measured here, where a busy machine makes a
number slower rather than a test fail.

Usage: python bench/hostile_bench.py [--repeat N]
Prints the median wall and CPU seconds, the peak memory and the exit codes of each command (the CLI in its own
process, as a user runs it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

CASES: dict[str, Callable[[Path], list[str]]] = {}


def case(name: str) -> Callable[[Callable[[Path], list[str]]], Callable[[Path], list[str]]]:
    def add(fn: Callable[[Path], list[str]]) -> Callable[[Path], list[str]]:
        CASES[name] = fn
        return fn
    return add


@case("5,000 unknown keys in [environment] (resolve --dry-run)")
def _keys(d: Path) -> list[str]:
    (d / "triton-env.toml").write_text("[environment]\n" + "".join(f"k{i} = 1\n" for i in range(5000)))
    return ["resolve", "--dry-run", "-p", str(d)]


@case("3,000 bad [[targets]] (resolve --dry-run)")
def _targets(d: Path) -> list[str]:
    (d / "triton-env.toml").write_text("".join(f'[[targets]]\nname = "t{i}"\ndriver = "x"\ngpus = ["nope"]\n'
                                               for i in range(3000)))
    return ["resolve", "--dry-run", "-p", str(d)]


@case("5,000 bad packages (resolve --dry-run)")
def _packages(d: Path) -> list[str]:
    (d / "triton-env.toml").write_text("[environment]\npackages = [" + ", ".join('"-x"' for _ in range(5000)) + "]\n")
    return ["resolve", "--dry-run", "-p", str(d)]


@case("a saved target with 5,000 extra keys (resolve --dry-run --target-file)")
def _saved(d: Path) -> list[str]:
    (d / "triton-env.toml").write_text('[environment]\npython = "3.11"\n')
    (d / "m.toml").write_text("[[targets]]\nname = 'a'\nos = 'linux'\narch = 'x86_64'\n"
                              + "".join(f"k{i} = 1\n" for i in range(5000)))
    return ["resolve", "--dry-run", "-p", str(d), "--target-file", str(d / "m.toml")]


@case("target-files sweeping 1,002 files (resolve --dry-run)")
def _glob(d: Path) -> list[str]:
    (d / "triton-env.toml").write_text('target-files = ["**/*"]\n[environment]\npython = "3.11"\n')
    (d / "many").mkdir()
    for i in range(1001):
        (d / "many" / f"{i}.toml").write_text("")
    return ["resolve", "--dry-run", "-p", str(d)]


@case("2,000 targets for one machine (check)")
def _fleet(d: Path) -> list[str]:
    (d / "hosts").mkdir()
    (d / "triton-env.toml").write_text('target-files = ["hosts/*.toml"]\n[environment]\npython = "3.11"\n')
    (d / "hosts" / "many.toml").write_text(
        "".join(f'[[targets]]\nname = "t{i}"\nos = "linux"\narch = "x86_64"\n' for i in range(2000)))
    return ["check", "-p", str(d)]


def _dotted(d: Path, size: int) -> list[str]:
    part = ".".join(f"p{j}" for j in range(62))
    lines, n = [], 0
    while n < size:
        lines.append(f"k{len(lines)}.{part} = 1")
        n += len(lines[-1]) + 1
    (d / "triton-env.toml").write_text('[environment]\npython = "3.11"\n' + "\n".join(lines) + "\n")
    return ["resolve", "--dry-run", "-p", str(d)]


@case("2.7 MB of 63-part dotted keys (resolve --dry-run; issue 23: 16 s, 744 MB)")
def _dotted_small(d: Path) -> list[str]:
    return _dotted(d, 2_700_000)


@case("13 MB of 63-part dotted keys (resolve --dry-run; issue 23: MemoryError)")
def _dotted_large(d: Path) -> list[str]:
    return _dotted(d, 13_000_000)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    repeat = ap.parse_args().repeat
    print(f"{'case':<80} {'wall s':>7} {'cpu s':>7} {'max MB':>7} exit")
    for name, make in CASES.items():
        with tempfile.TemporaryDirectory(prefix="tritonlock-hostile-") as tmp:
            args = [sys.executable, "-m", "tritonlock", *make(Path(tmp))]
            walls, cpus, rss, codes = [], [], [], set()
            for _ in range(repeat):
                t0 = time.perf_counter()
                proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                _, status, use = os.wait4(proc.pid, 0)  # this child's own rusage: its CPU and its peak memory
                proc.returncode = os.waitstatus_to_exitcode(status)
                walls.append(time.perf_counter() - t0)
                cpus.append(use.ru_utime + use.ru_stime)
                rss.append(use.ru_maxrss / 1024)
                codes.add(proc.returncode)
            print(f"{name:<80} {statistics.median(walls):>7.2f} {statistics.median(cpus):>7.2f} "
                  f"{max(rss):>7.0f} {','.join(map(str, sorted(codes)))}")


if __name__ == "__main__":
    main()
