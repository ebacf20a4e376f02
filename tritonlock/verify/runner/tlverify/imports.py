# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""The packages' native code, proven by loading it: every installed distribution whose files hold extension modules
(read from its RECORD, so a build put into the venv by hand is found too) and every package the user named is
imported in a process of its own — torch first where the distribution requires it — and each of its extension
modules loaded by name. The processes run beside the kernels, several at a time; the rows name the distribution
and quote what the loader said (a library it cannot find, a symbol a library lacks)."""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import subprocess
import sys
import threading
import time
from typing import Any

# what the loader says when native code cannot load (anything else a module raises is the module's own business)
NATIVE_ERROR = re.compile(r"cannot open shared object file|undefined symbol|version `[^']+' not found|wrong ELF class|"
                          r"no kernel image|invalid ELF header|cannot enable executable stack", re.I)
# a shared object named like an extension module that is none: a torch op library (torch.ops.load_library loads
# it, as xformers' _C.so) — not imported by name
NOT_A_MODULE = re.compile(r"does not define module export function|dynamic module does not define", re.I)
SKIP_DISTS = {"torch", "triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu", "triton-windows"}
# "pkg/_C.so", "pkg/_C.abi3.so", "pkg/mod.cpython-312-x86_64-linux-gnu.so", "pkg\\_C.cp312-win_amd64.pyd"
_EXT = re.compile(r"^(?P<mod>(?:[A-Za-z_][A-Za-z0-9_]*/)*[A-Za-z_][A-Za-z0-9_]*)(?:\.[^/]*)?\.(?:so|pyd)\Z")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# the libraries of the torch and GPU stack: a module of a package that cannot find one of these is broken whatever
# the package's own import does (tritonlock.native.rule.CUDA_LIB and torch's own, written again here: the runner
# imports nothing of tritonlock)
_STACK_LIB = re.compile(r"^lib(torch[A-Za-z_]*|c10[A-Za-z_]*|cuda|cudart|cublas|cublasLt|cufft|curand|cusolver|cusparse|"
                        r"nvrtc|nvJitLink|cudnn[A-Za-z_]*|nccl|nvshmem[A-Za-z_]*|cupti|nvToolsExt|cufile|amdhip64|"
                        r"hiprtc|rocblas|MIOpen|rccl|hsa-runtime64|sycl|ze_loader|python[0-9.]*)\.so")
_MISSING_LIB = re.compile(r"(\S+?): cannot open shared object file")


def _own_sites() -> list[str]:
    """The environment's own site directories — a venv's, not the base interpreter's it sees through
    --system-site-packages; empty outside a venv (then every directory is the environment's own)."""
    import sysconfig

    if sys.prefix == sys.base_prefix:
        return []
    paths = sysconfig.get_paths()
    return [os.path.realpath(p) for p in dict.fromkeys([paths["purelib"], paths["platlib"]])]


def installed_with_native_code(named: list[str], scope: list[str] | None = None) -> tuple[list[dict[str, Any]], int]:
    """One job per distribution to import: its extension modules (by RECORD), its top-level modules, whether it
    requires torch (then torch is imported first, as its own code would have done). `scope` (the lock's package
    names): a distribution outside it is imported only when the user named it or it sits in the venv's own site
    directory (put there by hand); the others — preinstalled, seen through --system-site-packages — are not the
    lock's, and are counted, not imported. Returns (jobs, how many were left out so)."""
    from importlib import metadata

    wanted = {_norm(n) for n in named}
    inside = {_norm(n) for n in scope} if scope is not None else None
    own = _own_sites() if inside is not None else []
    jobs: dict[str, dict[str, Any]] = {}
    left_out: set[str] = set()
    for dist in metadata.distributions():
        # (its name from its folder's, where importlib knows it: parsing every METADATA of a big image took a
        # second beside torch's import)
        name = _norm(getattr(dist, "_normalized_name", None) or dist.metadata["Name"] or "")
        if not name or name in SKIP_DISTS or name in jobs:
            continue
        record = dist.read_text("RECORD")
        if record is not None and name not in wanted and ".so" not in record and ".pyd" not in record:
            continue  # (no extension module: nothing to import unless named)
        files = ([row[0].replace("\\", "/") for row in csv.reader(record.splitlines()) if row] if record is not None
                 else [str(f).replace("\\", "/") for f in (dist.files or ())])
        modules = []
        for f in files:
            m = _EXT.match(f)
            if m and not m["mod"].rsplit("/", 1)[-1].startswith("lib"):
                modules.append(m["mod"].replace("/", "."))
        if not modules and name not in wanted:
            continue
        if inside is not None and name not in inside and name not in wanted:
            where = os.path.realpath(str(dist.locate_file("")))
            if not any(where == s or where.startswith(s + os.sep) for s in own):
                left_out.add(name)
                continue
        tops = [t.strip() for t in (dist.read_text("top_level.txt") or "").split() if t.strip().isidentifier()]
        if not tops:
            tops = sorted({f.split("/", 1)[0].removesuffix(".py") for f in files
                           if "/" in f and f.split("/", 1)[0].isidentifier()
                           or f.endswith(".py") and "/" not in f and f.removesuffix(".py").isidentifier()})
        requires = [r for r in (dist.requires or []) if re.match(r"torch\b", r) and "extra ==" not in r]
        reached = own_tops(name, tops, files, wanted)
        jobs[name] = {"dist": name, "version": dist.version, "tops": reached[:8], "modules": sorted(set(modules)),
                      "optional_tops": [t for t in tops if t not in reached][:8],
                      "torch": bool(requires) or any(m.startswith("torch") for m in modules),
                      "requires_torch": requires[0] if requires else None, "named": name in wanted}
    return sorted(jobs.values(), key=lambda j: j["dist"]), len(left_out - set(jobs))


# a distribution's name beside its import name: "nixl-cu12" installs nixl_cu12, "cupy-cuda12x" cupy
# (tritonlock.native.rule.own_names, written again here)
_NAME_SUFFIX = re.compile(r"_(?:cu(?:da)?[0-9]{2,3}x?|cpu|rocm[0-9_]*|xpu|python|py|bin|binary)\Z")


def own_tops(dist: str, tops: list[str], files: list[str], named: set[str]) -> list[str]:
    """The import names importing the distribution means: those its own name stands for (with "_" for "-", without a
    per-CUDA suffix), the modules at its wheel's root (its package's own backends: cffi's _cffi_backend), and the
    ones the user named; every one where none is its own. The others (a second top-level package, nixl-cu12's
    nixl_ep_cu12) are parts its users import by name: what its own import loads of them is imported with it."""
    n = re.sub(r"[-_.]+", "_", dist).lower()
    names = {n}
    while (m := _NAME_SUFFIX.search(n)) and m.start() > 0:
        n = n[:m.start()]
        names.add(n)
    own = [t for t in tops if t.lower() in names]
    if not own:
        return tops
    folders = {f.split("/", 1)[0] for f in files if "/" in f}
    want = {re.sub(r"[-_.]+", "_", x).lower() for x in named}
    return [t for t in tops if t in own or t.lower() in want or t not in folders]


# one module built per torch release, the release in its name (nixl_ep_cpp_torch211, _torch212, …): the package
# loads the one for the torch installed, if any (tritonlock.native.rule._TORCH_VARIANT, written again here)
_TORCH_VARIANT = re.compile(r"torch([23])([0-9]{1,2})(?![0-9])")


def _for_this_torch(modules: list[str]) -> list[str]:
    """The modules without the per-torch builds made for another torch than the installed one (a set of two or more
    builds of one module, told by their names: importing another torch's build fails with an undefined symbol,
    and the package never does it)."""
    from importlib import metadata

    try:
        mine = ".".join(metadata.version("torch").split("+")[0].split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return modules
    groups: dict[str, set[str]] = {}
    found: dict[str, tuple[str, str]] = {}
    for mod in modules:
        v = _TORCH_VARIANT.search(mod.rsplit(".", 1)[-1])
        if v:
            stem = mod[:mod.rfind(".") + 1] + mod.rsplit(".", 1)[-1][:v.start()] + "*" \
                + mod.rsplit(".", 1)[-1][v.end():]
            found[mod] = (stem, f"{v[1]}.{v[2]}")
            groups.setdefault(stem, set()).add(f"{v[1]}.{v[2]}")
    return [m for m in modules if m not in found or len(groups[found[m][0]]) < 2 or found[m][1] == mine]


# one library built per CUDA release, the CUDA in its name or its folder's (torch_memory_saver's _cu12 / _cu13,
# lib/cu12/ and lib/cu13/): the package loads the one for torch's CUDA (tritonlock.native.variants.cuda_builds, written
# again here)
_CUDA_IN_NAME = re.compile(r"(?:(?<=[_-])|^)cu(?:da)?(1[0-9])([0-9])?x?(?=[_-]|\Z)")
_CUDA_FOLDER = re.compile(r"cu(?:da)?(1[0-9])([0-9])?x?")


def torch_cuda() -> tuple[int, int] | str | None:
    """The CUDA release the installed torch is built for, from its torch/version.py (not imported); "rocm" for its
    ROCm build."""
    from importlib import metadata

    try:
        from pathlib import Path

        text = Path(str(metadata.distribution("torch").locate_file("torch/version.py"))).read_text(encoding="utf-8")
    except (metadata.PackageNotFoundError, OSError, ValueError):
        return None
    return cuda_of_version_py(text) or ("rocm" if rocm_of_version_py(text) else None)


def rocm_of_version_py(text: str) -> bool:
    """Whether a torch/version.py is a ROCm build's (`hip: Optional[str] = '7.2.…'`)."""
    return re.search(r"^hip\b[^=\n]*=\s*['\"][0-9]", text, re.M) is not None


def cuda_of_version_py(text: str) -> tuple[int, int] | None:
    """(13, 0) from a torch/version.py saying `cuda: Optional[str] = '13.0'`; None for a CPU or ROCm build."""
    m = re.search(r"^cuda\b[^=\n]*=\s*['\"]([0-9]+)\.([0-9]+)", text, re.M)
    return (int(m[1]), int(m[2])) if m else None


def _for_this_cuda(modules: list[str], cuda: tuple[int, int] | str | None) -> list[str]:
    """The modules without the per-CUDA builds torch's CUDA does not load: of a set of two or more builds of one
    module for several CUDA releases, the one for torch's (its release where they name a minor, else its major) —
    and not a build of the same name that names no CUDA; all of them where none is for torch's CUDA. A ROCm torch
    ("rocm") loads the build that names no CUDA where there is one, and none of the per-CUDA builds beside it."""
    if cuda is None:
        return modules
    groups: dict[str, list[tuple[str, str, tuple[int, int | None]]]] = {}
    for mod in modules:
        parts = mod.split(".")
        m = _CUDA_IN_NAME.search(parts[-1])
        if m:
            head, tail = parts[-1][:m.start()], parts[-1][m.end():]
            plain = head.rstrip("_-") + tail if head else tail.lstrip("_-")
            key, same = ".".join([*parts[:-1], head + "*" + tail]), ".".join([*parts[:-1], plain])
        else:
            folders = [(i, f) for i, x in enumerate(parts[:-1]) if (f := _CUDA_FOLDER.fullmatch(x))]
            if not folders:
                continue
            i, m = folders[0]
            key, same = ".".join([*parts[:i], "*", *parts[i + 1:]]), ".".join([*parts[:i], *parts[i + 1:]])
        groups.setdefault(key, []).append((mod, same, (int(m[1]), int(m[2]) if m[2] else None)))
    drop: set[str] = set()
    present = set(modules)
    for builds in groups.values():
        if len({c for _, _, c in builds}) < 2:
            continue
        if isinstance(cuda, str):
            if any(same in present for _, same, _ in builds):
                drop |= {x for x, _, _ in builds}
            continue
        mine = [x for x, _, c in builds if c == cuda] or [x for x, _, c in builds if c == (cuda[0], None)]
        if mine:
            drop |= {x for x, _, _ in builds if x not in mine} | {same for _, same, _ in builds}
    return [m for m in modules if m not in drop]


def import_job_main(job: dict[str, Any]) -> int:
    """In the job's own process: import torch first where asked, the top-level modules, then each extension
    module; one JSON line with what happened to each."""
    out: list[dict[str, Any]] = []

    def attempt(module: str) -> None:
        import importlib

        try:
            importlib.import_module(module)
            out.append({"module": module, "ok": True})
        except BaseException as e:  # noqa: BLE001 - SystemExit from a module's import is a failure to report too
            out.append({"module": module, "ok": False, "error": f"{type(e).__name__}: {str(e)[:600]}"})

    modules = job.get("modules", [])
    mine = _for_this_cuda(_for_this_torch(modules), torch_cuda())
    other = set(modules) - set(mine)  # (top_level.txt lists a per-CUDA build's module as a top-level name too)
    if job.get("torch"):
        attempt("torch")
    for m in job.get("tops", []):
        if m not in other:
            attempt(m)
    # a second top-level package the package's own import loaded is part of it (reached), not an optional part
    reached = [t for t in job.get("optional_tops", []) if t in sys.modules]
    for m in job.get("optional_tops", []):
        if m not in other and m not in reached:
            attempt(m)
    for m in mine:
        attempt(m)
    if reached:
        out.append({"reached": reached})
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


class ImportChecks:
    """The import jobs, started at once (a few processes at a time) and collected into rows at the end. `late`
    gives (the packages the user named, the lock's package names or None) once tritonlock has sent them (on stdin,
    while torch imports): which distributions are the lock's is known only then."""

    def __init__(self, runner_dir: str, late: Any, limit: int | None = None, eager: bool = False) -> None:
        """`eager`: a machine with cores to spare (the runner's own `import torch` is under way beside): the import
        server starts now and imports torch at once, while tritonlock's word on what to import is awaited."""
        self.jobs: list[dict[str, Any]] = []
        self.left_out = 0
        self.results: dict[str, tuple[int, str, str]] = {}
        self._runner = runner_dir
        self._limit = limit or max(2, min(8, os.cpu_count() or 2))
        self._threads: list[threading.Thread] = []
        self._gate = threading.Semaphore(self._limit)
        self._server: subprocess.Popen[str] | None = None
        self._server_error = ""
        self.timing: dict[str, Any] | None = None  # the server's own (import_server_main)
        if hasattr(os, "fork") and hasattr(os, "waitpid"):
            try:
                self._server = subprocess.Popen(
                    [sys.executable, "-I", self._runner, "--import-server", *(["--eager-torch"] if eager else [])],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    env=dict(os.environ, PYTHONWARNINGS="ignore"))
            except OSError as e:
                self._server_error = f"could not start: {e}"
        self._starter = threading.Thread(target=self._start_all, args=(late,), name="import-start", daemon=True)
        self._starter.start()

    def _start_all(self, late: Any) -> None:
        named, scope = late() if callable(late) else late
        if self._server is not None or self._server_error:
            self._serve(list(named or []), scope)
            return
        self.jobs, self.left_out = installed_with_native_code(list(named or []), scope)
        for job in self.jobs:
            t = threading.Thread(target=self._run, args=(job,), name=f"import-{job['dist']}", daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, named: list[str], scope: list[str] | None) -> None:
        """The jobs through one process of their own (import_server_main): it finds the distributions (its scan does
        not hold this process's GIL), imports torch once and forks a process per distribution from there."""
        p = self._server
        if p is None:
            self.jobs, self.left_out = installed_with_native_code(named, scope)
            for job in self.jobs:
                self.results[job["dist"]] = (-1, "", self._server_error)
            return
        err: list[str] = []
        drain = threading.Thread(target=lambda: err.append(p.stderr.read() if p.stderr else ""), daemon=True)
        drain.start()
        assert p.stdin is not None and p.stdout is not None
        with contextlib.suppress(OSError):
            p.stdin.write(json.dumps({"named": named, "scope": scope, "limit": self._limit}) + "\n")
            p.stdin.close()
        found = False
        for line in p.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and "jobs" in msg and not found:
                self.jobs, self.left_out, found = list(msg["jobs"]), int(msg.get("left_out", 0)), True
            elif isinstance(msg, dict) and isinstance(msg.get("timing"), dict):
                self.timing = msg["timing"]
            elif isinstance(msg, dict) and isinstance(msg.get("dist"), str):
                self.results[msg["dist"]] = (int(msg.get("code", -1)), str(msg.get("stdout", "")),
                                             str(msg.get("stderr", ""))[-1500:])
        code = p.wait()
        drain.join(timeout=5)
        if not found:  # (the server died before it listed the jobs: the scan here, each row saying why)
            self.jobs, self.left_out = installed_with_native_code(named, scope)
        for job in self.jobs:
            self.results.setdefault(job["dist"], (-1, "", f"its import process ended (the import server exited with "
                                                          f"code {code}): {''.join(err)[-600:]}"))

    def abandon(self) -> None:
        """The server goes (a run that never asked for the rows)."""
        if self._server is not None and self._server.poll() is None:
            with contextlib.suppress(OSError):
                self._server.kill()

    def _run(self, job: dict[str, Any]) -> None:
        with self._gate:
            env = dict(os.environ, PYTHONWARNINGS="ignore")
            try:
                p = subprocess.run([sys.executable, "-I", self._runner, "--import-job", json.dumps(job)],
                                   capture_output=True, text=True, timeout=300, env=env)
                self.results[job["dist"]] = (p.returncode, p.stdout, p.stderr[-1500:])
            except subprocess.TimeoutExpired:
                self.results[job["dist"]] = (-1, "", "did not finish within 300 s")
            except OSError as e:
                self.results[job["dist"]] = (-1, "", f"could not start: {e}")

    def finish(self, r: Any, gpu: bool) -> None:
        self._starter.join()
        for t in self._threads:
            t.join()
        for job in self.jobs:
            code, stdout, stderr = self.results.get(job["dist"], (-1, "", "no result"))
            r.imports.append(_row(job, code, stdout, stderr, gpu))
        if self.timing is not None:
            r.notes.append("imports: " + timing_words(self.timing))
        if self.left_out:
            r.notes.append(f"imports: {self.left_out} preinstalled distribution(s) with native code that the lock "
                           "does not hold, seen through --system-site-packages, were not imported (not the lock's)")


def _row(job: dict[str, Any], code: int, stdout: str, stderr: str, gpu: bool) -> dict[str, Any]:
    """One distribution's row: ok, or the first failure with the loader's words (the caller explains them)."""
    base = {"dist": job["dist"], "version": job["version"], "named": job["named"], "modules": job["modules"],
            "requires_torch": job["requires_torch"]}
    try:
        tried = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else None
    except ValueError:
        tried = None
    if tried is None:
        why = f"its import process exited with code {code}" + (f" (signal {-code})" if code < 0 else "")
        return {**base, "ok": False, "native": True, "module": None, "error": f"{why}: {stderr.strip()[-600:]}"}
    reached = {r for t in tried if "reached" in t for r in t["reached"]}
    tried = [t for t in tried if "module" in t]
    parts = set(job.get("optional_tops", ())) - reached
    tops_ok = all(t["ok"] for t in tried if t["module"] in job["tops"] or t["module"] == "torch")

    def beside(t: dict[str, Any]) -> bool:
        """A module the package's own import did not need, failing in a way that leaves the package working: named
        by its file but importable under no such name (it lives where no import finds it), or needing a library
        outside the torch and GPU stack that nothing installed brings (an optional part: inferred from the package
        importing without it)."""
        if t["module"] in job["tops"] or not tops_ok:
            return False
        if t["module"].split(".", 1)[0] in parts:
            return True  # a second top-level package nothing named imports: the package imports without it
        if t["error"].startswith("ModuleNotFoundError") and f"'{t['module'].rsplit('.', 1)[-1]}" in t["error"]:
            return True
        lib = _MISSING_LIB.search(t["error"])
        return bool(lib and not _STACK_LIB.match(lib[1]))

    failed = [t for t in tried if not t["ok"] and not NOT_A_MODULE.search(t["error"])]
    optional = [t for t in failed if beside(t) and (_MISSING_LIB.search(t["error"])
                                                    or t["module"].split(".", 1)[0] in parts)]
    failed = [t for t in failed if not beside(t)]
    if not failed:
        # (a per-torch or per-CUDA build for another torch or CUDA than this one is not imported: counted apart)
        left = len(set(job["modules"]) - {t["module"] for t in tried})
        return {**base, "ok": True, "loaded": len(tried), **({"left": left} if left else {}),
                **({"optional": [{"module": t["module"], "error": t["error"],
                                  **({"part": True} if t["module"].split(".", 1)[0] in parts else {})}
                                 for t in optional[:5]]} if optional else {})}
    first = next((t for t in failed if NATIVE_ERROR.search(t["error"])), failed[0])
    native = bool(NATIVE_ERROR.search(first["error"]))
    top = first["module"] in job["tops"] or first["module"] == "torch"
    needs_driver = "libcuda.so" in first["error"] and not gpu
    return {**base, "ok": (not native and not top and not job["named"]) or needs_driver, "native": native,
            "needs_driver": needs_driver, "module": first["module"], "error": first["error"],
            "also": [t["module"] for t in failed if t is not first][:5]}


def import_server_main(eager_torch: bool = False) -> int:
    """The import jobs of ImportChecks from one process: the distributions found here (installed_with_native_code,
    for the request read on stdin), then a process per distribution — one that does not import torch in a fresh
    interpreter (or forked before torch is imported here), one that does forked from this process once it has
    imported torch (once, not in each): each alone in a process of its own (a crash is its row's), without paying for
    torch's import again. With `eager_torch` torch is imported at once, while the request is awaited and the scan
    runs (a thread, joined before anything is forked). On stdout, one JSON line listing the jobs, then one per job as
    it ends (its exit code, what it printed). No CUDA is initialised here, so a forked process may."""
    import tempfile

    t0 = time.monotonic()
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # (what an import prints goes to stderr, never into the lines)
    found: list[Any] = []
    timing: dict[str, Any] = {}

    def scan() -> None:
        try:
            line = sys.stdin.readline()
            if not line.strip():  # (the runner ended before it asked: nothing to import)
                found.append(([], 0, 1))
                return
            request = json.loads(line)
            began = time.monotonic()
            jobs, left_out = installed_with_native_code(list(request.get("named") or []), request.get("scope"))
            timing["asked"], timing["scan"] = round(began - t0, 3), round(time.monotonic() - began, 3)
            found.append((jobs, left_out, max(1, int(request.get("limit") or 4))))
        except BaseException as e:  # noqa: BLE001 - said on stderr: the runner's rows then say the server failed
            found.append(e)

    torch_in = False
    if eager_torch:
        reader = threading.Thread(target=scan, name="import-scan", daemon=True)
        reader.start()
        torch_in = _import_torch()
        timing["torch"] = round(time.monotonic() - t0, 3)
        reader.join()
    else:
        scan()
    if isinstance(found[0], BaseException):
        raise found[0]
    jobs, left_out, limit = found[0]
    out.write(json.dumps({"jobs": jobs, "left_out": left_out}) + "\n")
    out.flush()
    folder = tempfile.mkdtemp(prefix="tlverify-imports-")
    running: dict[int, tuple[dict[str, Any], float, str]] = {}
    started: list[str] = []

    def reap() -> None:
        while running:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                now = time.monotonic()
                for p, (job, began, _) in list(running.items()):
                    if now - began > 300:
                        with contextlib.suppress(OSError):
                            os.kill(p, 9)
                return
            if pid not in running:
                continue
            job, began, base = running.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            texts = []
            for suffix in (".out", ".err"):
                try:
                    with open(base + suffix, encoding="utf-8", errors="replace") as fh:
                        texts.append(fh.read()[-20000:])
                except OSError:
                    texts.append("")
            if code == -9 and time.monotonic() - began > 300:
                texts[1] += "did not finish within 300 s"
            timing.setdefault("jobs", []).append([job["dist"], round(began - t0, 3), round(time.monotonic() - t0, 3)])
            out.write(json.dumps({"dist": job["dist"], "code": code, "stdout": texts[0], "stderr": texts[1]}) + "\n")
            out.flush()

    def spawn(job: dict[str, Any], fresh: bool) -> None:
        while len(running) >= limit:
            reap()
            if len(running) >= limit:
                time.sleep(0.005)
        base = os.path.join(folder, str(len(started)))
        started.append(job["dist"])
        if fresh:  # a new interpreter (this one has torch in it already): its own job's process, as before
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            pid = os.posix_spawn(sys.executable, [sys.executable, "-I", os.path.dirname(os.path.dirname(
                os.path.abspath(__file__))), "--import-job", json.dumps(job)], dict(os.environ), file_actions=[
                (os.POSIX_SPAWN_OPEN, 1, base + ".out", flags, 0o600),
                (os.POSIX_SPAWN_OPEN, 2, base + ".err", flags, 0o600)])
            running[pid] = (job, time.monotonic(), base)
            return
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the job's own process
            code = 1
            try:
                fd_out = os.open(base + ".out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                fd_err = os.open(base + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(fd_out, 1)
                os.dup2(fd_err, 2)
                code = import_job_main(job)
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:  # noqa: BLE001 - the row says the process failed; nothing may escape the fork
                import traceback

                with contextlib.suppress(BaseException):
                    traceback.print_exc()
                    sys.stderr.flush()
            finally:
                os._exit(code)
        running[pid] = (job, time.monotonic(), base)

    for job in [j for j in jobs if not j.get("torch")]:
        spawn(job, fresh=torch_in and hasattr(os, "posix_spawn"))
    if any(j.get("torch") for j in jobs) and not torch_in:
        _import_torch()
        timing["torch"] = round(time.monotonic() - t0, 3)
    for job in [j for j in jobs if j.get("torch")]:
        spawn(job, fresh=False)
    while running:
        reap()
        if running:
            time.sleep(0.005)
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    out.write(json.dumps({"timing": {**timing, "end": round(time.monotonic() - t0, 3)}}) + "\n")
    out.close()
    return 0


def _import_torch() -> bool:
    """torch imported here (a torch that cannot import: each job's own row says so); whether it was."""
    import importlib

    try:
        importlib.import_module("torch")
    except BaseException:  # noqa: BLE001
        return False
    return True


def timing_words(t: dict[str, Any]) -> str:
    """The import server's own times in words (seconds from its start): when tritonlock's word came and how long the
    scan took, when torch was imported, each job's span, the end."""
    def f(key: str) -> str:
        v = t.get(key)
        return f"{v:.2f} s" if isinstance(v, (int, float)) else "-"

    jobs = [j for j in t.get("jobs", []) if isinstance(j, list) and len(j) == 3]
    return (f"the server was asked at {f('asked')} (scan {f('scan')}), had torch at {f('torch')}, ended at "
            f"{f('end')}" + ("; jobs " + ", ".join(f"{d} {a:.2f}-{b:.2f}" for d, a, b in
                                                   sorted(jobs, key=lambda j: -j[2])[:6]) if jobs else ""))
