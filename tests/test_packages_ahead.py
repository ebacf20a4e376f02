"""While uv reads the pages online (the decision's warm-up), the search runs on uv's cache alone; its answer stands
only where uv, asked each question again once the pages are read, answers alike — a page that changed since the last
resolve (a release published) means the search runs again, as uv answers now. On a local index whose pages uv is
made to wait for (tests/pkgindex.py's uv_pages_gate), so the search surely runs on the cache."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pkgindex import LocalIndex
from tritonlock.compat.matrix import load_matrix
from tritonlock.lock.lockfile import read_lock

LINUX = "py3-none-manylinux_2_17_x86_64"


@pytest.fixture()
def ahead(tmp_path: Path) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path / "index")
    rel = load_matrix().torch_release("2.10.0")
    assert rel is not None and rel.triton
    idx.add("simple", "triton", rel.triton, tag=LINUX)
    idx.add("simple", "torch", "2.10.0", tag=LINUX, requires=(f"triton=={rel.triton}; platform_system == 'Linux'",))
    # aheadapp 2.0 needs an aheadlib the index does not serve yet: 1.0 is what can be locked
    idx.add("simple", "aheadlib", "1.0")
    idx.add("simple", "aheadapp", "1.0", requires=("torch>=2.10", "aheadlib>=1"))
    idx.add("simple", "aheadapp", "2.0", requires=("torch>=2.10", "aheadlib>=2"))
    idx.start()
    yield idx
    idx.stop()


def _project(root: Path, idx: LocalIndex, package: str = "aheadapp") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "triton-env.toml").write_text(
        f'[environment]\npython = "3.11"\ntorch = "==2.10.*"\npackages = ["{package}"]\n'
        f'[indexes]\ntorch = "default"\ndefault = "{idx.index_url("simple")}"\n'
        '[[targets]]\nname = "gpu"\nglibc = "2.35"\ndriver = "580.95.05"\ngpus = ["9.0"]\n', encoding="utf-8")
    return root


def _resolve(root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tritonlock", "resolve", "-p", str(root), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ))


def _done(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    return out


def _locked(root: Path) -> dict[str, str]:
    (t,) = read_lock(root / "triton-env.lock").targets
    return {p.name: p.version for p in t.packages}


def _held_resolve(idx: LocalIndex, root: Path) -> tuple[str, bool]:
    """`resolve --upgrade` with every page uv asks for online held until tritonlock has read the named package's
    page itself (the decision has begun) and uv has asked for a page, and two seconds more (the search, a few
    answers from uv's cache, runs on them meanwhile); its output, and whether uv's online answer had to wait."""
    gate = threading.Event()
    before = len(idx.asked_by)
    idx.uv_pages_gate = gate
    try:
        proc = _resolve(root, "--upgrade")
        deadline = time.monotonic() + 120

        def begun() -> bool:
            asked = idx.asked_by[before:]
            return any("/aheadapp" in p and not a.startswith("uv/") for p, a in asked) and \
                any(a.startswith("uv/") for _, a in asked)

        while not begun() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        held = begun() and proc.poll() is None
        time.sleep(2)
    finally:
        gate.set()
        idx.uv_pages_gate = None
    return _done(proc), held


def test_a_search_on_uvs_cache_that_uv_now_answers_otherwise_runs_again(tmp_path: Path, ahead: LocalIndex) -> None:
    """aheadlib 2.0 is published after the last resolve: uv's cache still says aheadapp 2.0 cannot be locked, so the
    search run on it holds aheadapp at 1.0 — but uv, once it has read the pages, locks 2.0: that search does not
    stand, and the lock has aheadapp 2.0 with aheadlib 2.0."""
    root = _project(tmp_path / "p", ahead)
    _done(_resolve(root))
    assert _locked(root)["aheadapp"] == "1.0"  # (what uv's cache now holds: aheadlib 1.0 only)
    ahead.add("simple", "aheadlib", "2.0")
    out, held = _held_resolve(ahead, root)
    assert held, "uv asked no page online while the decision ran: the search did not run on its cache"
    got = _locked(root)
    assert (got["aheadapp"], got["aheadlib"]) == ("2.0", "2.0"), out


def test_a_search_on_uvs_cache_that_uv_answers_alike_stands(tmp_path: Path, ahead: LocalIndex) -> None:
    """Nothing published since: the search run on uv's cache is the answer (aheadapp held at 1.0, with the check
    that failed quoted), the same as a resolve that waited for uv's pages."""
    root = _project(tmp_path / "p", ahead)
    _done(_resolve(root))
    first = (root / "triton-env.lock").read_text(encoding="utf-8")
    out, held = _held_resolve(ahead, root)
    assert held, "uv asked no page online while the decision ran: the search did not run on its cache"
    assert _locked(root)["aheadapp"] == "1.0"
    assert (root / "triton-env.lock").read_text(encoding="utf-8") == first, out


# --- the rule itself (tritonlock.decide._pkgcompile.Ahead), on plain functions standing for uv's two answers --------

class _Uv:
    """uv's answers: from its cache alone (`guess`) and as asked once the pages are read; what each was asked."""

    def __init__(self, cached: dict[str, object], now: dict[str, object]) -> None:
        self.cached, self.now = cached, now
        self.guessed: list[str] = []
        self.asked: list[str] = []
        self.during_guess: threading.Event | None = None  # set while a guess runs (the warm-up ends meanwhile)
        self.early: list[str] = []  # asked again while the warm-up runs
        self.after_early: Callable[[], None] | None = None

    def _answer(self, got: object) -> tuple[str, ...]:
        if isinstance(got, BaseException):
            raise got
        return got  # type: ignore[return-value]

    def raw(self, plan: str, index: str, **kw: object) -> tuple[str, ...]:
        if kw.get("guess") is not True:  # asked again at once, online (the warm-up still under way)
            self.early.append(plan)
            if self.after_early is not None:
                self.after_early()
            return self._answer(self.now[plan])
        self.guessed.append(plan)
        if self.during_guess is not None:
            self.during_guess.set()
        return self._answer(self.cached[plan])

    def compile(self, plan: str, index: str, **kw: object) -> tuple[str, ...]:
        assert "guess" not in kw
        self.asked.append(plan)
        return self._answer(self.now[plan])


def _no_lock(words: str) -> BaseException:
    from tritonlock.errors import ClosureError

    return ClosureError(f"uv could not resolve: {words}", uv=words)


def _ahead(uv: _Uv, warmup: threading.Event, pages: bool = True) -> object:
    """Ahead on uv's answers; `pages`: uv's cache holds pages (else, a first run, nothing is asked of it alone)."""
    from tritonlock.decide._pkgcompile import Ahead

    ahead = Ahead(uv.compile, uv.raw, warmup)
    ahead._pages = pages  # (not this machine's cache: what the test says it holds)
    return ahead


def test_a_first_run_asks_nothing_of_uvs_empty_cache_and_waits_for_the_warm_up() -> None:
    """uv's cache holds no page (a first run): asking it alone costs a uv run beside the warm-up's online one (0.5 s
    of uv's own on a 2-core machine, the warm-up 2.2 -> 1.75 s without it) and can only miss — each question waits for
    the warm-up."""
    uv = _Uv({"a": ("a 1.0",)}, {"a": ("a 1.0",)})
    warmup = threading.Event()
    ask = _ahead(uv, warmup, pages=False)
    timer = threading.Timer(0.2, warmup.set)
    timer.start()
    assert ask("a", "idx") == ("a 1.0",)
    assert uv.guessed == [] and uv.asked == ["a"] and warmup.is_set()


def test_uvs_cache_holds_pages_once_uv_has_read_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tritonlock.native import uvcache

    cache = tmp_path / "uv-cache"
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    monkeypatch.delenv("UV_NO_CACHE", raising=False)
    assert uvcache.has_pages() is False  # (no folder yet)
    (cache / "simple-v28").mkdir(parents=True)
    (cache / "wheels-v8" / "pypi").mkdir(parents=True)
    (cache / "wheels-v8" / "pypi" / "x.rkyv").write_bytes(b"x")
    assert uvcache.has_pages() is False  # (a wheel is no page; an empty simple folder holds none)
    (cache / "simple-v28" / "pypi").mkdir()
    assert uvcache.has_pages() is True
    monkeypatch.setenv("UV_NO_CACHE", "1")
    assert uvcache.has_pages() is False


def test_while_the_warm_up_runs_uvs_cache_answers_and_each_answer_is_asked_again_once() -> None:
    both = {"a": ("a 1.0",), "b": _no_lock("no version of b==2.0")}
    uv = _Uv(dict(both), dict(both))
    warmup = threading.Event()
    ask = _ahead(uv, warmup)
    assert ask("a", "idx", offline=True) == ("a 1.0",)
    with pytest.raises(Exception, match="no version of b==2.0"):
        ask("b", "idx", offline=True)
    assert ask("a", "idx", offline=True) == ("a 1.0",)  # (asked twice: the cache is asked once)
    assert (uv.guessed, uv.asked) == (["a", "b"], [])
    warmup.set()
    assert ask.confirmed() is True  # type: ignore[attr-defined]
    assert sorted(uv.asked) == ["a", "b"]  # each once, as the decision would have asked it after the warm-up


@pytest.mark.parametrize("now", [
    {"a": ("a 2.0",), "b": _no_lock("no version of b==2.0")},  # another lock
    {"a": _no_lock("no version of a"), "b": _no_lock("no version of b==2.0")},  # no lock now
    {"a": ("a 1.0",), "b": ("b 2.0",)},  # a lock where the cache had none
    {"a": ("a 1.0",), "b": _no_lock("b==2.0 needs c>=3")},  # no lock, for another reason
])
def test_an_answer_uv_now_gives_otherwise_means_the_search_does_not_stand(now: dict[str, object]) -> None:
    uv = _Uv({"a": ("a 1.0",), "b": _no_lock("no version of b==2.0")}, now)
    warmup = threading.Event()
    ask = _ahead(uv, warmup)
    ask("a", "idx")
    with pytest.raises(Exception):
        ask("b", "idx")
    warmup.set()
    assert ask.confirmed() is False  # type: ignore[attr-defined]


@pytest.mark.parametrize("now_a", [("a 1.0",), ("a 2.0",)])
def test_the_locks_kept_are_asked_again_at_once_and_only_the_failures_wait_for_the_warm_up(now_a: object) -> None:
    """A lock and a failure kept while the warm-up runs: the lock is asked again at once (uv reads its pages online
    beside the warm-up), the failure once the warm-up is done, each once; the search stands only where both answer
    alike."""
    cached = {"a": ("a 1.0",), "b": _no_lock("no version of b==2.0"), "c": ("c 1.0",)}
    uv = _Uv(dict(cached), {**cached, "a": now_a})
    warmup = threading.Event()
    ask = _ahead(uv, warmup)
    ask("a", "idx")
    with pytest.raises(Exception, match="no version of b==2.0"):
        ask("b", "idx")
    ask("c", "idx")
    seen: list[bool] = []
    uv.after_early = lambda: seen.append(warmup.is_set()) or (len(seen) == 2 and warmup.set())  # type: ignore[func-returns-value]
    late = threading.Timer(10, warmup.set)  # (the warm-up's end, where the locks were not asked at once)
    late.start()
    try:
        assert ask.confirmed() is (now_a == ("a 1.0",))  # type: ignore[attr-defined]
    finally:
        late.cancel()
    assert sorted(uv.early) == ["a", "c"] and seen == [False, False]  # (both before the warm-up ended)
    assert uv.asked == ["b"]


def test_a_question_uvs_cache_cannot_answer_waits_for_the_warm_up_and_is_not_asked_again() -> None:
    uv = _Uv({"a": _no_lock("Because a was not found in the cache and you require a")}, {"a": ("a 1.0",)})
    warmup = threading.Event()
    ask = _ahead(uv, warmup)
    timer = threading.Timer(0.2, warmup.set)
    timer.start()
    assert ask("a", "idx") == ("a 1.0",)  # uv's answer once the warm-up is done, not the cache's miss
    assert warmup.is_set()
    assert ask.confirmed() is True  # type: ignore[attr-defined]
    assert uv.asked == ["a"]  # (nothing kept from the cache to ask again)


def test_a_cache_answer_that_comes_after_the_warm_up_ended_is_not_taken() -> None:
    uv = _Uv({"a": ("a 1.0",)}, {"a": ("a 2.0",)})
    warmup = threading.Event()
    uv.during_guess = warmup  # the warm-up ends while uv's cache is asked
    ask = _ahead(uv, warmup)
    assert ask("a", "idx") == ("a 2.0",)
    assert ask.confirmed() is True  # type: ignore[attr-defined]
    assert uv.asked == ["a"]


def _slowdep_index(path: Path, *, with_lib: bool) -> LocalIndex:
    """Started: torch 2.10 with its triton, slowdep 1.0, aheadnew 1.0 (needing aheadlib, whose 1.0 is served, where
    with_lib) and aheadnew 2.0, which pins a torch this intent leaves out (its METADATA says so) and needs slowdep."""
    idx = LocalIndex(path)
    rel = load_matrix().torch_release("2.10.0")
    assert rel is not None and rel.triton
    idx.add("simple", "triton", rel.triton, tag=LINUX)
    idx.add("simple", "torch", "2.10.0", tag=LINUX, requires=(f"triton=={rel.triton}; platform_system == 'Linux'",))
    idx.add("simple", "slowdep", "1.0")
    if with_lib:
        idx.add("simple", "aheadlib", "1.0")
    idx.add("simple", "aheadnew", "1.0", requires=("torch>=2.10", "aheadlib") if with_lib else ("torch>=2.10",))
    idx.add("simple", "aheadnew", "2.0", requires=("slowdep>=1", "torch==2.14.0"))
    idx.start()
    return idx


def test_a_search_whose_answers_are_all_locks_does_not_wait_for_the_warm_up(tmp_path: Path) -> None:
    """aheadnew 2.0 pins a torch this intent leaves out (its METADATA says so) and needs slowdep, whose page never
    answers uv: uv's background answer, reading from the newest release down, waits on it — but the search (2.0
    passed over by its facts) needs no page of slowdep, its answer is a lock, and uv, asked that lock's pages
    online, confirms it: the resolve ends with aheadnew 1.0 while slowdep's page is still held."""
    idx = _slowdep_index(tmp_path / "index", with_lib=False)
    gate = threading.Event()
    try:
        root = _project(tmp_path / "p", idx, "aheadnew")
        _done(_resolve(root))  # uv's cache holds the pages (slowdep's too)
        idx.uv_pages_gate, idx.uv_pages_only = gate, {"slowdep"}
        before = len(idx.asked_by)
        proc = _resolve(root, "--upgrade")
        try:
            out, _ = proc.communicate(timeout=90)  # (the page is held for 120 s: a resolve that waits for it is late)
        finally:
            gate.set()
        assert proc.returncode == 0, out
        assert any(p.rstrip("/").endswith("/slowdep") and a.startswith("uv/") for p, a in idx.asked_by[before:]), \
            "uv's background answer never asked for slowdep's page: nothing was held"
        assert _locked(root)["aheadnew"] == "1.0"
    finally:
        gate.set()
        idx.stop()


def test_a_lock_from_uvs_cache_whose_dependency_was_published_since_is_not_taken(tmp_path: Path) -> None:
    """As above, uv's background answer held on slowdep's page; aheadlib 1.1 is published after the last resolve, so
    uv's cache answers aheadnew 1.0 with aheadlib 1.0 — asked again with the pages of that lock read online (once
    aheadlib's page, held for three seconds, comes), uv answers aheadlib 1.1: the search does not stand, and the
    lock has aheadlib 1.1."""
    idx = _slowdep_index(tmp_path / "index", with_lib=True)
    gate = threading.Event()
    try:
        root = _project(tmp_path / "p", idx, "aheadnew")
        _done(_resolve(root))
        assert _locked(root)["aheadlib"] == "1.0"
        idx.add("simple", "aheadlib", "1.1")
        # (aheadlib's page held too: else uv's background answer reads it before the search asks uv's cache)
        idx.uv_pages_gate, idx.uv_pages_only = gate, {"slowdep", "aheadlib"}
        proc = _resolve(root, "--upgrade")
        threading.Timer(3, gate.set).start()  # (the search, a few answers from uv's cache, is done well before)
        out = _done(proc)
        got = _locked(root)
        assert (got["aheadnew"], got["aheadlib"]) == ("1.0", "1.1"), out
    finally:
        gate.set()
        idx.stop()


# --- stopping uv's background answer (tritonlock._subprocess.stoppable) ----------------------------------------------

def test_a_run_in_a_stoppable_block_answers_as_any_run_and_ends_once_stopped_or_late(tmp_path: Path) -> None:
    from tritonlock._subprocess import run, stoppable

    stop = threading.Event()
    pid = tmp_path / "pid"
    with stoppable(stop):
        done = run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
        assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
        def stop_once_started() -> None:  # (the child has written its pid: it is running)
            while not (pid.exists() and pid.read_text()):
                time.sleep(0.02)
            stop.set()

        threading.Thread(target=stop_once_started, daemon=True).start()
        with pytest.raises(subprocess.TimeoutExpired):
            run([sys.executable, "-c", f"import os, time; open({str(pid)!r}, 'w').write(str(os.getpid())); "
                 "time.sleep(600)"])
        assert stop.is_set()
        with pytest.raises(ProcessLookupError):  # (the child was killed, and reaped: no such process now)
            os.kill(int(pid.read_text()), 0)
    with stoppable(threading.Event()):
        with pytest.raises(subprocess.TimeoutExpired):
            run([sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5)
    stop.set()  # (outside the block a set Event stops nothing)
    assert run([sys.executable, "-c", "print(1)"]).stdout == "1\n"


def test_two_compiles_lacking_the_same_pages_have_uv_read_each_page_once(tmp_path: Path, ahead: LocalIndex) -> None:
    """uv's cache holds a lock's pages (an earlier resolve), but this run has read none of them online: two --offline
    compiles of it side by side each find the pages unread — one has uv read them, the other waits for that read
    instead of reading them again at once — and both answer the lock."""
    import dataclasses
    from concurrent.futures import ThreadPoolExecutor

    from tritonlock.decide.lockplan import lock_plan
    from tritonlock.decide.resolve import feasible
    from tritonlock.intent.read import read_intent
    from tritonlock.lock import closure
    from tritonlock.project import select

    root = _project(tmp_path / "p", ahead)
    _done(_resolve(root))
    matrix = load_matrix()
    intent = read_intent(root / "triton-env.toml")
    (sel,) = select(intent)
    url = ahead.index_url("simple")
    (line,) = [c for c in feasible(intent, matrix, sel.target, "3.11") if c.torch == "2.10.0"]
    plan = lock_plan(dataclasses.replace(line, index=url, packages=("aheadapp",)), matrix)
    closure.new_run()
    before = len(ahead.asked_by)
    start = threading.Barrier(2)

    def compile(_: int) -> dict[str, str]:
        start.wait()
        return {p.name: p.version for p in closure.compile_target(plan, url, offline=True)}

    with ThreadPoolExecutor(max_workers=2) as pool:
        first, second = pool.map(compile, range(2))
    assert first == second and (first["aheadapp"], first["aheadlib"], first["torch"]) == ("1.0", "1.0", "2.10.0")
    pages = [p for p, agent in ahead.asked_by[before:] if agent.startswith("uv/")]
    assert pages and len(pages) == len(set(pages)), pages


def test_a_claim_yields_the_unread_pages_no_other_compile_reads_and_waits_for_the_others_reads() -> None:
    from tritonlock.lock import _pagesread

    a, b, c = ("i", "a"), ("i", "b"), ("i", "c")
    _pagesread.READ.clear()
    _pagesread.READ.add(c)
    inside, leave, waited = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with pytest.raises(RuntimeError), _pagesread.claim({a, b, c}) as mine:
            assert mine == {a, b}  # (c: read already)
            inside.set()
            leave.wait(30)
            raise RuntimeError  # (a read that failed: its pages are released all the same)

    t = threading.Thread(target=first)
    t.start()
    assert inside.wait(30)

    def second() -> None:
        with _pagesread.claim({b, ("i", "d")}) as mine:
            assert mine == {("i", "d")}  # (b: the first's to read)
        waited.set()

    u = threading.Thread(target=second)
    u.start()
    assert not waited.wait(0.3)  # the second waits for the first's read of b
    leave.set()
    t.join(30)
    u.join(30)
    assert waited.is_set()
    with _pagesread.claim({a, b}) as mine:  # (not read — the read failed — and no longer being read: this one's)
        assert mine == {a, b}
    _pagesread.READ.clear()


def test_uv_runs_that_go_online_start_apart_and_offline_ones_do_not_wait(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """uv looks names up itself, and a name server that drops one of two queries sent in the same instant answers it
    after 5 s: two uv runs that go online, asked for at once, are started STAGGER_S (at least 0.15 s: the spacing
    measured to avoid it) apart; a run with --offline, or of another program, waits for none and leaves the last
    online start as it was."""
    from tritonlock import _subprocess

    uv = tmp_path / "bin" / "uv"
    uv.parent.mkdir()
    uv.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    uv.chmod(0o755)
    started: list[tuple[float, list[str]]] = []
    real = subprocess.run

    def run(args: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        started.append((time.monotonic(), list(args)))
        return real(args, **kw)  # type: ignore[call-overload,no-any-return]

    monkeypatch.setattr(_subprocess.subprocess, "run", run)
    go = threading.Barrier(2)

    def online() -> None:
        go.wait()
        assert _subprocess.run([str(uv), "pip", "compile", "x.in"], cwd=str(tmp_path)).returncode == 0

    threads = [threading.Thread(target=online) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (first, _), (second, _) = sorted(started)
    assert _subprocess.STAGGER_S >= 0.15 and second - first >= _subprocess.STAGGER_S * 0.9  # (a margin: a thread
    # may be paused between its start and its note)
    last = _subprocess._online_start[0]
    assert _subprocess.run([str(uv), "pip", "compile", "x.in", "--offline"], cwd=str(tmp_path)).returncode == 0
    assert _subprocess.run([sys.executable, "-c", "pass"]).returncode == 0
    assert _subprocess._online_start[0] == last and len(started) == 4
