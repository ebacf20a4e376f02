"""Where a warm `tritonlock verify` spends its time, thread by thread (issue 41): a sampling profiler for the runner.

    python bench/verify_timeline.py install SITE_PACKAGES OUTDIR   # into the project venv (a .pth file + this module)
    tritonlock verify ...                                           # each runner process writes OUTDIR/<pid>.txt
    python bench/verify_timeline.py uninstall SITE_PACKAGES

Installed, every Python process of that venv started with `--json-args` (the runner, the torch.compile check) or as
`tritonlock` (the command itself, installed the same way into tritonlock's own venv) starts a
thread that looks at every other thread's Python stack every 2 ms (sys._current_frames) and, just before the runner's
os._exit, writes each thread's segments: from when to when its stack's signature (the innermost frame of the runner's
own code and the innermost frame of all) stayed the same. A gap in the samples is time when a thread held the GIL in
C (an import's dlopen, a C call that does not release it): the sampler could not run then, and the line says so.
"""

from __future__ import annotations

import os
import sys
import time

BOOT = "tl_timeline_boot"
T0 = time.perf_counter()
EPOCH = time.time()
INTERVAL = 0.002
OWN = int(os.environ.get("TL_TIMELINE_OWN", "2"))  # how many of tritonlock's own frames each signature names


def _sig(frame, depth: int = 80) -> str:
    """The innermost frame of all, and the two innermost of tritonlock's own code (the runner's included)."""
    inner = None
    own: list[str] = []
    n = 0
    while frame is not None and n < depth:
        code = frame.f_code
        where = f"{code.co_name} {os.path.basename(code.co_filename)}:{frame.f_lineno}"
        if inner is None:
            inner = where
        if len(own) < OWN and ("tlverify" in code.co_filename or "/tritonlock/" in code.co_filename):
            own.append(where)
        frame = frame.f_back
        n += 1
    return f"{' < '.join(own) or '-'} | {inner}"


def start(outdir: str) -> None:
    import threading

    segs: dict[str, list[list]] = {}  # thread name -> [[t0, t1, sig, n]]
    gaps: list[tuple[float, float]] = []
    names: dict[int, str] = {}

    def loop() -> None:
        me = threading.get_ident()
        last = time.perf_counter() - T0
        while True:
            time.sleep(INTERVAL)
            t = time.perf_counter() - T0
            if t - last > 0.02:
                gaps.append((last, t))
            last = t
            for th in threading.enumerate():
                names.setdefault(th.ident or 0, th.name)
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                name = names.get(ident) or str(ident)
                s = _sig(frame)
                rows = segs.setdefault(name, [])
                if rows and rows[-1][2] == s and t - rows[-1][1] < 0.05:
                    rows[-1][1] = t
                    rows[-1][3] += 1
                else:
                    rows.append([t, t, s, 1])

    def dump() -> None:
        path = os.path.join(outdir, f"{os.getpid()}.txt")
        with open(path, "w") as f:
            f.write(f"argv {sys.argv[:2]} started at epoch {EPOCH:.3f} dumped at {time.perf_counter() - T0:.3f} s\n")
            for a, b in gaps:
                f.write(f"GAP (no sample: a thread held the GIL) {a:.3f}-{b:.3f} ({b - a:.3f} s)\n")
            for name, rows in segs.items():
                f.write(f"\n== thread {name}\n")
                for a, b, s, n in rows:
                    if b - a >= 0.004:
                        f.write(f"{a:7.3f}-{b:7.3f} {b - a:6.3f}  {s}\n")

    real_exit = os._exit

    def exit_(code: int) -> None:
        try:
            dump()
        finally:
            real_exit(code)

    os._exit = exit_  # the runner ends with os._exit (no atexit)
    import atexit

    atexit.register(dump)
    threading.Thread(target=loop, name="timeline-sampler", daemon=True).start()


_BOOTED: list[bool] = []


def boot() -> None:
    outdir = os.environ.get("TL_TIMELINE_DIR")
    if _BOOTED:
        return  # (a venv whose lib64 links to lib reads the .pth file twice)
    _BOOTED.append(True)
    if outdir and ("--json-args" in sys.argv or os.path.basename(sys.argv[0] if sys.argv else "") == "tritonlock"):
        start(outdir)


def main(argv: list[str]) -> int:
    verb, site = argv[0], argv[1]
    if verb == "install":
        os.makedirs(argv[2], exist_ok=True)
        with open(__file__) as src, open(os.path.join(site, BOOT + ".py"), "w") as dst:
            dst.write(src.read())
        with open(os.path.join(site, "tl_timeline.pth"), "w") as pth:
            pth.write(f"import {BOOT}; {BOOT}.boot()\n")
        print(f"installed: runner processes with TL_TIMELINE_DIR set write there ({argv[2]})")
    else:
        for name in (BOOT + ".py", "tl_timeline.pth"):
            try:
                os.remove(os.path.join(site, name))
            except FileNotFoundError:
                pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
