"""How the packages decision asks uv: each question answered once a process (the checks, the warm-up and the
search ask some more than once), uv's failure to build an sdist kept a day per question, and the first question
asked in the background while the facts are read."""

from __future__ import annotations

import dataclasses
from typing import Any

from tritonlock.decide._pkgcheck import BUILD_FAILED, Search
from tritonlock.decide._pkgscene import Compile, Scene
from tritonlock.errors import ClosureError, TritonlockError
from tritonlock.models import LockedPackage, Selection


# A compile that ended in uv's failure to build an sdist (to read its requirements) is kept a day, keyed by the whole
# question (the plan, the index, the constraints and builds) and what the build ran with here (uv itself, PATH, the
# CUDA and compiler variables): asked again — the same resolve once more, or `--upgrade` — uv would try the same
# build and fail the same way (vllm 0.1.1's setup.py wanting CUDA_HOME: 4-5 s each time), so its words are given
# again at once. Any change to the question or to those variables asks uv again.
_FAILED_BUILD_SECONDS = 86400
_BUILD_ENV = ("PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CC", "CXX", "TORCH_CUDA_ARCH_LIST", "LD_LIBRARY_PATH")


def _canonical(obj: object) -> object:
    """`obj` as plain JSON data, the same in every process (sets sorted); a ValueError for anything else."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"": type(obj).__name__, **{f.name: _canonical(getattr(obj, f.name)) for f in dataclasses.fields(obj)}}
    if isinstance(obj, (frozenset, set)):
        return sorted((_canonical(x) for x in obj), key=lambda x: repr(x))
    if isinstance(obj, (tuple, list)):
        return [_canonical(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): _canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    raise ValueError(f"not kept: {type(obj).__name__}")


def _failed_build_file(question: object) -> str | None:
    import hashlib
    import json
    import os

    from tritonlock._files import user_cache
    from tritonlock._subprocess import uv_bin

    try:
        uv = uv_bin()
        env = [os.environ.get(k, "") for k in _BUILD_ENV]
        text = json.dumps([_canonical(question), uv, os.stat(uv).st_mtime_ns, env], sort_keys=True)
    except (OSError, ValueError, TypeError):
        return None
    return user_cache("failed-builds", hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:40])


def kept_build_failure(question: object) -> ClosureError | None:
    """uv's failure to build an sdist, kept for this very compile within a day; None where none is."""
    import json
    import os
    import time

    from tritonlock._files import read_text

    path = _failed_build_file(question)
    try:
        if path is None or time.time() - os.stat(path).st_mtime > _FAILED_BUILD_SECONDS:
            return None
        d = json.loads(read_text(path, limit=1 << 20))
        message, uv = d["message"], d["uv"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(message, str) or not isinstance(uv, str) or not BUILD_FAILED.search(uv):
        return None
    return ClosureError(message, uv=uv)


def keep_build_failure(question: object, err: BaseException) -> None:
    """Keep `err` for this compile where it is uv's failure to build an sdist (nothing else is kept)."""
    import json
    import os

    if type(err) is not ClosureError or not BUILD_FAILED.search(err.uv or ""):
        return
    path = _failed_build_file(question)
    if path is None:
        return
    from tritonlock._files import write_atomic

    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        write_atomic(path, json.dumps({"message": str(err), "uv": err.uv}), mode=0o600, what="resolve")
    except Exception:  # noqa: BLE001 — a record that cannot be written is simply not kept
        return
    _forget_old(os.path.dirname(path))


def _forget_old(folder: str) -> None:
    """Records past their day, removed (the folder holds a file per question ever asked: it must not grow forever);
    only regular files named as records are, never a link or anything else found there."""
    import os
    import re
    import stat
    import time

    now = time.time()
    try:
        with os.scandir(folder) as entries:
            for e in entries:
                if not re.fullmatch(r"[0-9a-f]{40}", e.name):
                    continue
                st = e.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and now - st.st_mtime > _FAILED_BUILD_SECONDS:
                    os.unlink(e.path)
    except OSError:
        pass


def _question(plan: Any, default_index: str, kw: dict[str, Any]) -> tuple[object, ...]:
    """What a compile asks (how it is asked — online or from the cache, within how long — left out)."""
    return (plan, default_index, *sorted((k, v) for k, v in kw.items() if k not in ("offline", "timeout")))


def memo(compile: Compile) -> Compile:
    """`compile`, answering a compile asked again (the same plan, constraints and builds) with its first answer: the
    checks, the warm-up and the search ask the same question more than once."""
    import threading
    from concurrent.futures import Future

    answers: dict[object, Future[tuple[LockedPackage, ...]]] = {}
    lock = threading.Lock()

    def run(plan: Any, default_index: str, **kw: Any) -> tuple[LockedPackage, ...]:
        key = _question(plan, default_index, kw)
        with lock:
            fut = answers.get(key)
            mine = fut is None
            if fut is None:
                fut = answers[key] = Future()
        if mine:
            kept = None
            try:
                kept = kept_build_failure(key)
                if kept is not None:  # (uv failed to build an sdist for this very question, within a day)
                    raise kept
                fut.set_result(compile(plan, default_index, **kw))
            except BaseException as err:
                if err is not kept:
                    keep_build_failure(key, err)
                fut.set_exception(err)
        return fut.result()

    return run


# uv's background answer is given up after this long (the search asks again what it needs)
_WARM_UP_S = 120


class WarmUp:
    """uv's answer in the background (warm_up): `is_set`/`wait` as an Event set once it is done; `stop` ends it
    (its uv killed) where the decision no longer needs it."""

    def __init__(self) -> None:
        import threading

        self.done, self.stopped = threading.Event(), threading.Event()

    def is_set(self) -> bool:
        return self.done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self.done.wait(timeout)

    def stop(self) -> None:
        self.stopped.set()


def warm_up(sc: Scene, lines: list[Selection], compile: Compile) -> WarmUp | None:
    """uv's answer for the newest torch index's lines and the packages as written, asked in the background while
    the facts are read (it reads the pages every later compile needs: they then answer from uv's cache, and
    its closure's wheels are read from its guess); None where there is nothing to ask."""
    if not lines:
        return None
    import threading

    from tritonlock._subprocess import stoppable

    index = lines[0].index
    search = Search(sc, [c for c in lines if c.index == index], compile, timeout=_WARM_UP_S)
    warm = WarmUp()

    def go() -> None:
        try:
            with stoppable(warm.stopped):
                search.lock([str(r) for r in sc.reqs])
        except Exception:  # noqa: BLE001 — what it found is asked again, and said, by the search itself
            pass
        finally:
            warm.done.set()

    # not a daemon: uv leaves no temporary folder behind (and the decision waits for it: nothing runs on after it)
    threading.Thread(target=go, name="packages-warm-up").start()
    return warm


class Ahead:
    """The decision's compiles while the warm-up (uv online, reading every page of the first question's closure) is
    under way: each answered at once from uv's cache alone, and kept. Once the warm-up is done, each is asked again
    (in the background, two at a time) as the decision asks then — pages read online in this run, as `compile`
    answers — and the search run on the cache's answers stands only where every answer is the same (`confirmed`;
    else it runs again, asked that way). A question whose pages uv's cache lacks (a first run) waits for the
    warm-up, as does every question after it."""

    def __init__(self, compile: Compile, raw: Compile, warmup: Any) -> None:
        import threading

        self._compile, self._raw, self._warmup = compile, raw, warmup  # (raw: not memo's, whose answers are uv's now)
        self._asked: dict[tuple[object, ...], tuple[Any, str, dict[str, Any], object, float]] = {}
        self._same: dict[tuple[object, ...], bool] = {}
        self._claimed: set[tuple[object, ...]] = set()  # asked again (or being asked) by one of the threads
        self._lock = threading.Lock()
        self._checker: threading.Thread | None = None
        self._pages: bool | None = None  # uv's cache holds a page (_cache_has_pages)

    def __call__(self, plan: Any, default_index: str, **kw: Any) -> tuple[LockedPackage, ...]:
        import threading
        import time

        from tritonlock.lock.closure import cache_missed

        if not self._warmup.is_set() and self._cache_has_pages():
            key = _question(plan, default_index, kw)
            with self._lock:
                got = self._asked[key][3] if key in self._asked else None
            took = 0.0
            if got is None:
                took = time.monotonic()
                try:
                    got = kept_build_failure(key) or self._raw(plan, default_index, **{**kw, "guess": True})
                except TritonlockError as err:
                    got = err
                    keep_build_failure(key, err)
                took = time.monotonic() - took
            # (one answered after the warm-up was done: uv is asked now as the decision asks it then, not twice)
            if not cache_missed(got) and not (took and self._warmup.is_set()):
                with self._lock:
                    got = self._asked.setdefault(key, (plan, default_index, kw, got, took))[3]
                    if self._checker is None:  # (not a daemon: it asks uv, whose temporary folders it leaves clean)
                        self._checker = threading.Thread(target=self._check, name="packages-confirm")
                        self._checker.start()
                if isinstance(got, BaseException):
                    raise got
                return got  # type: ignore[return-value]
        self._warmup.wait()
        return self._compile(plan, default_index, **kw)

    def _cache_has_pages(self) -> bool:
        """Whether uv's cache holds any page (looked at once): where it holds none (a first run), no question is asked
        of it alone — each waits for the warm-up."""
        if self._pages is None:
            from tritonlock.native.uvcache import has_pages

            self._pages = has_pages()
        return self._pages

    def _check(self) -> None:
        """Each question kept so far asked again once the warm-up is done, and whether uv answers it alike."""
        self._warmup.wait()
        self._validate(self._compile)

    def _validate(self, ask: Compile, locks_only: bool = False) -> None:
        from concurrent.futures import ThreadPoolExecutor

        with self._lock:  # (the longest first: two at a time, the last to end ends soonest)
            asked = sorted(((k, q) for k, q in self._asked.items() if k not in self._claimed and
                            not (locks_only and isinstance(q[3], BaseException))), key=lambda kq: -kq[1][4])
            self._claimed.update(k for k, _ in asked)

        def same(kq: tuple[tuple[object, ...], tuple[Any, str, dict[str, Any], object, float]]) -> None:
            key, (plan, default_index, kw, then, _) = kq
            try:
                now: object = ask(plan, default_index, **kw)
            except TritonlockError as err:
                now = err
            if isinstance(then, BaseException) or isinstance(now, BaseException):
                alike = type(now) is type(then) and str(now) == str(then) and \
                    getattr(now, "uv", None) == getattr(then, "uv", None)
            else:
                alike = now == then
            with self._lock:
                self._same[key] = alike

        with ThreadPoolExecutor(max_workers=2) as pool:  # (each a short uv --offline: two at once on two cores)
            list(pool.map(same, asked))

    def confirmed(self) -> bool:
        """Whether uv, asked now, answers each question as its cache did. Each lock kept is asked at once, the
        warm-up still under way: `compile` has uv read online the pages of that lock this run has not read (a few
        hundred, --no-deps: a second), beside the warm-up, which may be backtracking through many more (an older
        driver's torch lines: vLLM's releases down to 0.19) — where every answer kept is a lock, the decision may then
        stop the warm-up. A failure kept waits for the warm-up's pages, as a failure answered after it would: only
        those are left for after it (vllm + xformers on an H200: 0.8 s of asking again after uv's 2.5 s -> 0.2 s)."""
        if not self._warmup.is_set():  # (not memo's compile: the warm-up, asking the same question online, would
            self._validate(self._raw, locks_only=True)  # be waited for)
        with self._lock:
            rest = any(k not in self._same for k in self._asked)
        if rest:  # the failures kept, or what the checker took (the warm-up ended): asked after the warm-up
            if self._checker is not None:
                self._checker.join()
            self._check()  # (a question kept as the warm-up ended, after the checker took its list)
        with self._lock:
            return all(self._same.get(k, False) for k in self._asked)
