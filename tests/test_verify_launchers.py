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


# bench/launcher_race.py: two launchers as Triton builds them (C extension modules named __triton_launcher,
# single-phase init, each a file of its own in Triton's cache; compile_module_from_src builds, caches and loads them),
# loaded again and again from 8 threads; `launch` says which is which.
RACE = Path(__file__).resolve().parents[1] / "bench" / "launcher_race.py"


def _loads(python: str, mode: str, cache: Path) -> dict[str, Any]:
    env = {**os.environ, "TRITON_CACHE_DIR": str(cache)}
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run([python, "-I", str(RACE), str(RUNNER), mode], capture_output=True, text=True, env=env,
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


@pytest.mark.parametrize("guard, attr, args", [
    ("_guard_loads", "_load_module_from_path", ("__triton_launcher", "/x.so")),  # Triton 3.4+
    ("_guard_launchers", "launcher_cls", ("src", "metadata")),  # older Tritons: the launcher's constructor
])
def test_the_guard_lets_one_load_at_a_time_and_leaves_no_module_behind_for_the_next_load_to_share(
        monkeypatch: pytest.MonkeyPatch, guard: str, attr: str, args: tuple[str, str]) -> None:
    P = _precompile()
    inside = _Inside()
    holder = SimpleNamespace(**{attr: inside})
    monkeypatch.delitem(sys.modules, "__triton_launcher", raising=False)
    assert getattr(P, guard)(holder) is True
    wrapped = getattr(holder, attr)
    assert getattr(P, guard)(holder) is True and getattr(holder, attr) is wrapped  # not wrapped twice
    _at_once(lambda: wrapped(*args))
    assert inside.calls == 4 and inside.most == 1
    assert "__triton_launcher" not in sys.modules
    assert getattr(P, guard)(SimpleNamespace()) is False  # a Triton without this hook


def test_a_module_registered_under_the_name_before_the_guard_is_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Triton's cuda_utils, loaded before the guard: a guarded load of that name makes its own module and leaves
    sys.modules' entry as it was."""
    P = _precompile()
    build = SimpleNamespace(_load_module_from_path=lambda name, path: ModuleType(name))
    assert P._guard_loads(build) is True
    kept = ModuleType("cuda_utils")
    monkeypatch.setitem(sys.modules, "cuda_utils", kept)
    made = build._load_module_from_path("cuda_utils", "/y.so")
    assert made is not kept and sys.modules["cuda_utils"] is kept


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
    assert getattr(build._load_module_from_path, "tritonlock_guarded", False)
    assert not getattr(driver.launcher_cls, "tritonlock_guarded", False)
    del build._load_module_from_path
    assert P.guard_launcher_loads() == "launchers"
    assert getattr(driver.launcher_cls, "tritonlock_guarded", False)
    del driver.launcher_cls
    assert P.guard_launcher_loads() == ""


def test_the_compile_step_guards_the_loads_before_it_loads_any_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """precompile installs the guard before its load threads run the first job (and so before any launch)."""
    P = _precompile()
    report = importlib.import_module("tlverify.report")
    order: list[str] = []

    def guard() -> str:
        order.append("guard")
        return "loads"

    monkeypatch.setattr(P, "guard_launcher_loads", guard)

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
