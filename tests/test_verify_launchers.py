"""verify's runner loads Triton's kernel launchers from many threads at once; CPython shares one module object between
loads of single-phase extension modules of one name, so a launcher could take another's `launch` (a false failure:
"function takes exactly 39 arguments (43 given)"). These tests show the hazard with Triton's own loader and check the
guard the runner puts around it (precompile.guard_launcher_loads)."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from tritonlock.verify import RUNNER


def _precompile() -> ModuleType:
    if str(RUNNER) not in sys.path:
        sys.path.insert(0, str(RUNNER))
    return importlib.import_module("tlverify.precompile")


# Two launchers as Triton builds them: C extension modules named __triton_launcher, single-phase init, each a file of
# its own in Triton's cache (compile_module_from_src: its build, its cache, its load). `launch` says which it is.
_LOADS = r'''
import json, sys, threading
sys.path.insert(0, sys.argv[1])
from triton.runtime import build
from tlverify import precompile as P

SRC = """#include <Python.h>
static PyObject* launch(PyObject* self, PyObject* args) { return PyLong_FromLong(%d); }
static PyMethodDef M[] = {{"launch", launch, METH_VARARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef D = {PyModuleDef_HEAD_INIT, "__triton_launcher", NULL, -1, M};
PyMODINIT_FUNC PyInit___triton_launcher(void) { return PyModule_Create(&D); }
"""
guarded = ""
if sys.argv[2] == "guard":
    guarded = P.guard_launcher_loads()
    P.guard_launcher_loads()  # a second call wraps nothing twice
load = lambda n: build.compile_module_from_src(SRC % n, "__triton_launcher")
one = load(1)
two = load(2)
again = load(1)  # the first file, loaded a second time
out = {"guarded": guarded, "one": one.launch(), "two": two.launch(), "again": again.launch(),
       "shared": again is two, "left": "__triton_launcher" in sys.modules}
sys.setswitchinterval(1e-6)
wrong = []
def worker(n):
    for _ in range(300):
        got = load(n).launch()
        if got != n:
            wrong.append((n, got))
threads = [threading.Thread(target=worker, args=(1 + i % 2,)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
out["wrong"] = len(wrong)
print(json.dumps(out))
'''


def _loads(python: str, mode: str, cache: Path) -> dict[str, Any]:
    env = {**os.environ, "TRITON_CACHE_DIR": str(cache)}
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run([python, "-I", "-c", _LOADS, str(RUNNER), mode], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.slow
def test_two_triton_launchers_loaded_in_one_process_keep_their_own_launch_once_guarded(
        real_torch_python: str, tmp_path: Path) -> None:
    """Unguarded, CPython's second load of a launcher file hands back the module object of the launcher loaded last
    and overwrites its `launch`: the launcher loaded second then runs the first one's code. The runner's guard gives
    every load a module of its own: each launcher keeps its `launch`, from one thread or eight."""
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("Triton builds its launchers with a C compiler (apt-get install gcc)")
    bare = _loads(real_torch_python, "bare", tmp_path / "bare")
    # the hazard itself, as Triton 3.x and CPython do it (if this stops holding, the guard is no longer needed)
    assert bare["shared"] is True and bare["two"] == 1, bare
    guarded = _loads(real_torch_python, "guard", tmp_path / "guarded")
    assert guarded == {"guarded": "loads", "one": 1, "two": 2, "again": 1, "shared": False, "left": False,
                       "wrong": 0}, guarded


def _at_once(call: Any, n: int = 4) -> None:
    """Run `call` from n threads, all released together."""
    barrier = threading.Barrier(n)

    def go() -> None:
        barrier.wait()
        call()

    threads = [threading.Thread(target=go) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class _Inside:
    """A stand-in for the load it wraps: records how many threads are inside at once, and leaves a module named
    __triton_launcher in sys.modules, as a real load does."""

    def __init__(self) -> None:
        self.now = self.most = self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, *args: Any, **kw: Any) -> Any:
        with self.lock:
            self.now += 1
            self.calls += 1
            self.most = max(self.most, self.now)
        time.sleep(0.02)
        made = ModuleType("__triton_launcher")
        sys.modules["__triton_launcher"] = made
        with self.lock:
            self.now -= 1
        return made


def test_the_guard_lets_one_load_at_a_time_and_leaves_no_module_behind_for_the_next_load_to_share(
        monkeypatch: pytest.MonkeyPatch) -> None:
    P = _precompile()
    inside = _Inside()
    build = SimpleNamespace(_load_module_from_path=inside)
    monkeypatch.delitem(sys.modules, "__triton_launcher", raising=False)
    assert P._guard_loads(build) is True
    wrapped = build._load_module_from_path
    assert P._guard_loads(build) is True and build._load_module_from_path is wrapped  # not wrapped twice
    _at_once(lambda: wrapped("__triton_launcher", "/x.so"))
    assert inside.calls == 4 and inside.most == 1
    assert "__triton_launcher" not in sys.modules
    # a module already registered under the name (Triton's cuda_utils, loaded before the guard) is put back after
    kept = ModuleType("cuda_utils")
    monkeypatch.setitem(sys.modules, "cuda_utils", kept)
    made = wrapped("cuda_utils", "/y.so")
    assert made is not kept and sys.modules["cuda_utils"] is kept
    assert P._guard_loads(SimpleNamespace()) is False  # a Triton without this hook


def test_on_an_older_triton_each_launcher_is_made_under_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    P = _precompile()
    inside = _Inside()
    driver = SimpleNamespace(launcher_cls=inside)
    monkeypatch.delitem(sys.modules, "__triton_launcher", raising=False)
    assert P._guard_launchers(driver) is True
    made = driver.launcher_cls
    assert P._guard_launchers(driver) is True and driver.launcher_cls is made
    _at_once(lambda: made("src", "metadata"))
    assert inside.calls == 4 and inside.most == 1
    assert "__triton_launcher" not in sys.modules
    assert P._guard_launchers(SimpleNamespace()) is False


def test_the_guard_prefers_the_load_hook_and_falls_back_to_the_launchers(monkeypatch: pytest.MonkeyPatch) -> None:
    """guard_launcher_loads on this machine's Tritons: "loads" where triton.runtime.build has the load hook (3.4+),
    else "launchers" through the active driver."""
    P = _precompile()
    inside = _Inside()
    build = ModuleType("triton.runtime.build")
    build._load_module_from_path = inside  # type: ignore[attr-defined]
    runtime = ModuleType("triton.runtime")
    runtime.build = build  # type: ignore[attr-defined]
    driver = SimpleNamespace(launcher_cls=_Inside())
    runtime.driver = SimpleNamespace(active=driver)  # type: ignore[attr-defined]
    triton = ModuleType("triton")
    triton.runtime = runtime  # type: ignore[attr-defined]
    for name, mod in (("triton", triton), ("triton.runtime", runtime), ("triton.runtime.build", build)):
        monkeypatch.setitem(sys.modules, name, mod)
    assert P.guard_launcher_loads() == "loads"
    assert getattr(build._load_module_from_path, "tritonlock_guarded", False)  # type: ignore[attr-defined]
    assert not getattr(driver.launcher_cls, "tritonlock_guarded", False)
    del build._load_module_from_path  # type: ignore[attr-defined]
    assert P.guard_launcher_loads() == "launchers"
    assert getattr(driver.launcher_cls, "tritonlock_guarded", False)
    del driver.launcher_cls
    assert P.guard_launcher_loads() == ""


def test_the_compile_step_guards_the_loads_before_it_loads_any_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """precompile installs the guard before its load threads run the first job (and so before any launch)."""
    P = _precompile()
    report = importlib.import_module("tlverify.report")
    order: list[str] = []
    monkeypatch.setattr(P, "guard_launcher_loads", lambda: order.append("guard") or "loads")

    class Cuda:
        @staticmethod
        def get_device_capability(index: int) -> tuple[int, int]:
            return (9, 0)

        @staticmethod
        def get_device_name(index: int) -> str:
            return "NVIDIA H200"

        @staticmethod
        def device(index: int) -> Any:
            import contextlib
            return contextlib.nullcontext()

        @staticmethod
        def current_device() -> int:
            return 0

    torch = SimpleNamespace(cuda=Cuda)
    ctx = SimpleNamespace(index=0, plan=SimpleNamespace(quick=True), compile_seconds={})
    family = SimpleNamespace(jobs=lambda c: [("vector_add fp32", lambda: order.append("job"))])
    P.precompile(report.Report(), torch, [ctx], [family])
    assert order == ["guard", "job"], order
