"""`tritonlock resolve` of examples/inference with the native-code rule, beside the same resolve by another
tritonlock (one without the rule), side by side, interleaved: the first run reads every locked wheel's binary facts
(an empty fact cache), the next ones find them kept per sha256.

Usage: python bench/native_bench.py --other PYTHON [--repeat N] [-o FILE]
    PYTHON: the interpreter of a venv with the tritonlock to compare against (e.g. a worktree of the commit before)

Both resolve with uv's cache warm (an untimed run of each first), so what differs is the decision and the reading
of the wheels, not index downloads. The same code with the rule given nothing to read is timed too: what the rule
costs, apart from what later issues added to both (issue 23's integrity check). "Facts read" clears the binary
facts only (the integrity check's kept METADATA, issue 23's, stays): once with the lock the run before wrote, which
the reading takes as its guess of the closure (a re-resolve, a teammate's lock), once with no lock (the guess is uv's
answer from its cache alone). One run with nothing of tritonlock's kept says what a new project pays; then a new
machine (uv's cache empty too) is timed for the code before, this code without the rule and with it, interleaved —
with it twice: without the facts compat/native/ ships (TRITONLOCK_NO_SHIPPED_FACTS=1) and with them (what a new
machine gets). Every other run of this code leaves the shipped facts out, so that "facts read" reads every wheel,
as the code before does. Run it with UV_PYTHON_DOWNLOADS=never where uv cannot download Pythons (the older code does
not pass it itself).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "inference"


# The same tritonlock with the rule given nothing to read: what the rule costs, apart from what came with later
# issues (the integrity check of issue 23 runs in both)
NO_RULE = ("import sys, tritonlock.project as p; p.native_wanted = lambda sel, pkgs: []; "
           "sys.argv = ['tritonlock', 'resolve', '--upgrade', '--json']; from tritonlock._entry import main; main()")


def run(python: str, root: Path, env: dict[str, str], *, rule: bool = True) -> float:
    t0 = time.perf_counter()
    cmd = [python, "-m", "tritonlock", "resolve", "--upgrade", "--json"] if rule else [python, "-c", NO_RULE]
    p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{python}: resolve failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return took


def forget(cache: Path) -> None:
    """The binary facts kept in `cache`, removed; the integrity check's METADATA beside them stays."""
    for f in cache.glob("*.json"):
        if not f.name.endswith("metadata.json"):
            f.unlink()


def main() -> None:
    import os

    ap = argparse.ArgumentParser()
    ap.add_argument("--other", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tl-bench-native-") as tmp:
        root = Path(tmp) / "inference"
        shutil.copytree(EXAMPLE, root)
        (root / "triton-env.lock").unlink(missing_ok=True)
        cache = Path(tmp) / "native-cache"
        base = dict(os.environ, TRITONLOCK_NATIVE_CACHE=str(cache))
        env = dict(base, TRITONLOCK_NO_SHIPPED_FACTS="1")  # (every wheel read, as the code before reads it)
        run(sys.executable, root, env)  # uv's cache warm for both
        run(args.other, root, env)
        first, warm, other, off, empty, fresh, other_read = [], [], [], [], [], [], []

        for _ in range(args.repeat):
            forget(cache)
            (root / "triton-env.lock").unlink()
            fresh.append(run(sys.executable, root, env))  # no lock either: uv's cached answer is the guess
            forget(cache)
            first.append(run(sys.executable, root, env))  # every wheel's facts read (the lock replaced is the guess)
            warm.append(run(sys.executable, root, env))  # kept per sha256
            other.append(run(args.other, root, env))
            forget(cache)
            other_read.append(run(args.other, root, env))  # the other code reading every wheel, as `first` does
            off.append(run(sys.executable, root, env, rule=False))
        shutil.rmtree(cache, ignore_errors=True)
        empty.append(run(sys.executable, root, env))  # nothing kept: facts, and the integrity check's downloads
        # a new machine: nothing kept at all, uv's cache empty too, for each of the three (interleaved)
        new_machine: dict[str, list[float]] = {"before": [], "without": [], "with": [], "shipped": []}
        for _ in range(args.repeat):
            for what, python, rule in (("before", args.other, True), ("without", sys.executable, False),
                                       ("with", sys.executable, True), ("shipped", sys.executable, True)):
                with tempfile.TemporaryDirectory(prefix="tl-bench-new-machine-") as fresh_tmp:
                    (root / "triton-env.lock").unlink(missing_ok=True)
                    fresh_env = dict(env if what != "shipped" else base, UV_CACHE_DIR=f"{fresh_tmp}/uv",
                                     XDG_CACHE_HOME=f"{fresh_tmp}/xdg", TRITONLOCK_NATIVE_CACHE=f"{fresh_tmp}/native")
                    new_machine[what].append(run(python, root, fresh_env, rule=rule))
        o, n = statistics.median(other), statistics.median(off)
        f, w, fr = statistics.median(first), statistics.median(warm), statistics.median(fresh)
        lines = [f"resolve examples/inference (2 targets), median of {args.repeat}, interleaved, {os.cpu_count()} cores:",
                 f"  the other code ({args.other}), its facts kept (before the rule: none to keep): {o:6.1f} s",
                 f"  without the native rule, this code (the rule reads nothing): {n:6.1f} s",
                 f"  with it, facts read (empty cache):  {f:6.1f} s   {f / o:.2f}x the code before, {f / n:.2f}x this "
                 "code without it (goal 1.3x)",
                 f"  the other code, facts read (empty cache): {statistics.median(other_read):6.1f} s: this code's "
                 f"read is {f / statistics.median(other_read):.2f}x it; runs {[round(x, 1) for x in other_read]}",
                 f"  with it, facts read and no lock yet: {fr:6.1f} s   {fr / o:.2f}x the code before, {fr / n:.2f}x "
                 "this code without it",
                 f"  with it, facts cached:              {w:6.1f} s   {w / o:.2f}x the code before, {w / n:.2f}x this "
                 "code without it (goal 1.05x)",
                 f"  runs: before {[round(x, 1) for x in other]} / without {[round(x, 1) for x in off]} / read "
                 f"{[round(x, 1) for x in first]} / read, no lock {[round(x, 1) for x in fresh]} / cached "
                 f"{[round(x, 1) for x in warm]}",
                 f"  with nothing kept at all (facts, and the integrity check's METADATA of each locked file, which "
                 f"an index without PEP 658 hashes makes it download): {empty[0]:6.1f} s   {empty[0] / o:.2f}x",
                 "  a new machine (nothing kept, uv's cache empty too), median of "
                 f"{args.repeat}: before {statistics.median(new_machine['before']):.1f} s, this code without the "
                 f"rule {statistics.median(new_machine['without']):.1f} s, with it "
                 f"{statistics.median(new_machine['with']):.1f} s "
                 f"({statistics.median(new_machine['with']) / statistics.median(new_machine['before']):.2f}x the "
                 f"code before, {statistics.median(new_machine['with']) / statistics.median(new_machine['without']):.2f}"
                 f"x this code without it); with the facts compat/native/ ships "
                 f"{statistics.median(new_machine['shipped']):.1f} s "
                 f"({statistics.median(new_machine['shipped']) / statistics.median(new_machine['with']):.2f}x without "
                 f"them, {statistics.median(new_machine['shipped']) / statistics.median(new_machine['before']):.2f}x "
                 f"the code before); runs {[[round(x, 1) for x in v] for v in new_machine.values()]}",
                 f"  cache: {sum(f.stat().st_size for f in cache.glob('*.json')) / 1e3:.0f} kB in "
                 f"{len(list(cache.glob('*.json')))} files"]
        print("\n".join(lines))
        if args.output:
            Path(args.output).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
