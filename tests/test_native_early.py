"""The binary facts are read early: while uv's online answer is awaited, the closure it will most likely give — the
lock being replaced, else uv's answer from its cache alone — is read already. A guessed read counts only once an
index's answer names the same address and sha256: what is locked, and the facts kept, never come from a guess the
answer did not confirm. Every wheel here carries a real shared object (tests/nativebuild.py) on the local index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nativebuild import extension, stub_library
from pkgindex import LocalIndex
from tritonlock.compat.matrix import load_matrix
from tritonlock.lock.lockfile import read_lock

CP = "cp311-cp311-manylinux_2_17_x86_64"
LINUX = "py3-none-manylinux_2_17_x86_64"


@pytest.fixture(scope="module")
def early(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    tmp = tmp_path_factory.mktemp("early-build")
    cudart = stub_library(tmp / "cudart", "libcudart.so.12", ("cudaRuntimeGetVersion",))
    idx = LocalIndex(tmp_path_factory.mktemp("early-index"))
    rel = load_matrix().torch_release("2.10.0")
    assert rel is not None and rel.triton
    idx.add("simple", "triton", rel.triton, tag=LINUX)
    idx.add("simple", "torch", "2.10.0", tag=CP, requires=("nvidia-cuda-runtime-cu12==12.8.90",
                                                           f"triton=={rel.triton}; platform_system == 'Linux'"),
            modules={"torch/__init__.py": "__version__ = '2.10.0'\n"})
    idx.add("simple", "nvidia-cuda-runtime-cu12", "12.8.90", tag=LINUX,
            modules={"nvidia/cuda_runtime/lib/libcudart.so.12": cudart.read_bytes()})
    idx.add("simple", "earlypkg", "1.0", tag=CP, requires=("torch>=2.10",), modules={
        "earlypkg/__init__.py": "", "earlypkg/_C.so": extension(tmp / "e10", "earlypkg._C",
                                                               links={cudart: ("cudaRuntimeGetVersion",)})})
    # another package's wheel: other bytes on the same index (for a lock edited to point earlypkg's sha256 at them)
    idx.add("simple", "otherpkg", "1.0", tag=CP, modules={
        "otherpkg/__init__.py": "", "otherpkg/_other.so": extension(tmp / "o10", "otherpkg._other", links={})})
    idx.start()
    yield idx
    idx.stop()


def _project(root: Path, idx: LocalIndex) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "triton-env.toml").write_text(
        '[environment]\npython = "3.11"\ntorch = "==2.10.*"\npackages = ["earlypkg"]\n'
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


def _facts_cache() -> Path:
    return Path(os.environ["TRITONLOCK_NATIVE_CACHE"])


def _forget_facts() -> None:
    """The binary facts kept per sha256 removed (the integrity check's METADATA stays): the next resolve reads."""
    for f in _facts_cache().glob("*.json"):
        if not f.name.endswith(".metadata.json"):
            f.unlink()


def _wheel(idx: LocalIndex, name: str, version: str) -> tuple[str, str, str]:
    return _file(idx, name, version)[:3]


def _file(idx: LocalIndex, name: str, version: str) -> tuple[str, str, str, int | None]:
    from tritonlock.lock.index import project_files

    (f,) = [f for f in project_files(idx.index_url("simple"), name) if f.filename.startswith(f"{name}-{version}-")]
    return f.filename, f.url, f.sha256 or "", f.size


def _gets(idx: LocalIndex, since: int, filename: str) -> int:
    """tritonlock's GETs of the file (uv fetches a wheel too, for its metadata, as it sees fit)."""
    return sum(1 for path, agent in idx.asked_by[since:] if path.endswith("/" + filename) and not agent.startswith("uv/"))


def _lock_native(root: Path) -> dict[str, list[str]]:
    return {f.filename: [m.path for m in f.members] for f in read_lock(root / "triton-env.lock").native}


@pytest.mark.parametrize("guess", ["the lock replaced", "uv's cache"])
def test_the_closure_is_read_while_uvs_online_answer_is_awaited(tmp_path: Path, early: LocalIndex,
                                                                guess: str) -> None:
    """With every page uv asks for held back, the wheel's bytes are already asked for (from the lock being
    replaced, or uv's answer from its cache alone); once the pages come, the answer names the same wheel, whose
    read is used as it is — one read in all (as many requests as one read of it makes) — and kept."""
    from tritonlock.native import read as native
    from tritonlock.lock.index import session

    root = _project(tmp_path / "p", early)
    _done(_resolve(root))  # uv's cache now holds the pages; a lock is written
    filename, url, sha, size = _file(early, "earlypkg", "1.0")
    before = len(early.asked_by)
    native.read_remote(url, size, sha, filename, session=session(), gpu=True)  # as a resolve reads it
    one_read = _gets(early, before, filename)
    assert one_read >= 1
    if guess == "uv's cache":
        (root / "triton-env.lock").unlink()
    _forget_facts()
    gate = threading.Event()
    early.uv_pages_gate = gate
    try:
        before = len(early.asked_by)
        proc = _resolve(root, "--upgrade")
        deadline = time.monotonic() + 90

        def seen() -> tuple[int, int]:
            held = sum(1 for p, agent in early.asked_by[before:] if agent.startswith("uv/") and p.endswith("/"))
            return _gets(early, before, filename), held

        while min(seen()) == 0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        read_early, held = seen()
        running = proc.poll() is None  # uv's online answer cannot have come: its pages are held
    finally:
        gate.set()
        early.uv_pages_gate = None
    _done(proc)
    assert held and running, "uv asked no page online (its answer did not wait): nothing was shown"
    assert read_early, "the wheel was not read while uv's pages were held"
    assert _gets(early, before, filename) == one_read  # the early read was the read: none again
    assert _lock_native(root)[filename] == ["earlypkg/_C.so"]
    assert json.loads((_facts_cache() / f"{sha}.json").read_text())["members"][0]["path"] == "earlypkg/_C.so"


def test_a_guess_the_answer_does_not_repeat_is_neither_locked_nor_kept(tmp_path: Path, early: LocalIndex) -> None:
    """uv's cache still holds the page without earlypkg 1.1 (published after the last resolve): the guess reads
    1.0, the online answer locks 1.1 — the lock and its facts are 1.1's, and 1.0's guessed facts are not kept (no
    index named that wheel in this resolve)."""
    root = _project(tmp_path / "p", early)
    _done(_resolve(root))
    (root / "triton-env.lock").unlink()  # the guess is uv's cached answer
    _forget_facts()
    tmp = tmp_path / "build"
    cudart = stub_library(tmp / "cudart", "libcudart.so.12", ("cudaRuntimeGetVersion",))
    wheel = early.add("simple", "earlypkg", "1.1", tag=CP, requires=("torch>=2.10",), modules={
        "earlypkg/__init__.py": "", "earlypkg/_C11.so": extension(tmp / "e11", "earlypkg._C11",
                                                                 links={cudart: ("cudaRuntimeGetVersion",)})})
    gate = threading.Event()
    try:
        old_name, _, old_sha = _wheel(early, "earlypkg", "1.0")
        new_name, _, new_sha = _wheel(early, "earlypkg", "1.1")
        before = len(early.asked_by)
        # uv's online pages are held until the guess has read 1.0's wheel: the case this test is about comes every
        # time, whatever the machine's load (the online answer could come first and leave nothing to guess)
        early.uv_pages_gate = gate
        proc = _resolve(root, "--upgrade")
        deadline = time.monotonic() + 120
        while not _gets(early, before, old_name) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        guessed = _gets(early, before, old_name)
        gate.set()
        _done(proc)
        assert guessed >= 1, "the guess did not read 1.0's wheel while uv's online answer was held"
        assert {p.name: p.version for t in read_lock(root / "triton-env.lock").targets
                for p in t.packages}["earlypkg"] == "1.1"
        assert [n for n in _lock_native(root) if n.startswith("earlypkg")] == [new_name]
        assert _lock_native(root)[new_name] == ["earlypkg/_C11.so"]
        assert (_facts_cache() / f"{new_sha}.json").is_file()
        assert not (_facts_cache() / f"{old_sha}.json").exists()
    finally:
        gate.set()
        early.uv_pages_gate = None
        wheel.unlink()


@pytest.mark.parametrize("intent_changed", [False, True])
def test_a_lock_that_pairs_a_wheels_sha256_with_other_bytes_never_gives_it_their_facts(tmp_path: Path,
                                                                                      early: LocalIndex,
                                                                                      intent_changed: bool) -> None:
    """A lock edited so that earlypkg's file (name and sha256 kept) is at an address serving otherpkg's bytes, its
    digests made again (as anyone can: a hand edit alone is refused): the guess reads those bytes, but the index's
    answer names earlypkg's own address, so earlypkg's facts are read from it — its own module, in the lock and in
    what is kept for its sha256. A lock of another intent (its packages may differ) is not guessed from at all."""
    import dataclasses

    from tritonlock.lock.lockfile import write_lock

    root = _project(tmp_path / "p", early)
    _done(_resolve(root))
    filename, url, sha = _wheel(early, "earlypkg", "1.0")
    other_name, _, _ = _wheel(early, "otherpkg", "1.0")
    elsewhere = early.root / "simple" / "_files" / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    (elsewhere / filename).write_bytes((early.root / "simple" / "_files" / other_name).read_bytes())
    lock = root / "triton-env.lock"
    old = read_lock(lock)
    moved = url.replace("/_files/", "/_files/elsewhere/")
    write_lock(dataclasses.replace(old, targets=tuple(dataclasses.replace(t, packages=tuple(
        dataclasses.replace(p, wheels=tuple(dataclasses.replace(w, url=moved) if w.url == url else w
                                            for w in p.wheels)) for p in t.packages)) for t in old.targets)), lock)
    assert moved in lock.read_text(encoding="utf-8") and read_lock(lock)
    if intent_changed:
        intent = root / "triton-env.toml"
        intent.write_text(intent.read_text(encoding="utf-8").replace('"==2.10.*"', '"==2.10.0"'), encoding="utf-8")
    _forget_facts()
    before = len(early.asked_by)
    _done(_resolve(root, "--upgrade"))
    guessed_from_lock = _gets(early, before, "elsewhere/" + filename)
    assert (guessed_from_lock == 0) if intent_changed else (guessed_from_lock >= 1)
    assert _lock_native(root)[filename] == ["earlypkg/_C.so"]
    kept = json.loads((_facts_cache() / f"{sha}.json").read_text())
    assert [m["path"] for m in kept["members"]] == ["earlypkg/_C.so"]


def test_the_hash_checks_start_from_uvs_answer_and_a_wheel_read_whole_is_downloaded_once(tmp_path: Path,
                                                                                          early: LocalIndex) -> None:
    """The integrity check of each locked file (this index lists no core-metadata hashes, so it downloads the file)
    starts once uv's online answer names it, beside the reading of the binary facts: with every ranged read held
    back, the files not read for their code (torch, triton, the CUDA runtime's wheel) are already downloaded. The
    wheel whose code is read (earlypkg) is downloaded whole by that read, which waits behind the held read of its
    zip directory; the check waits for it and takes the METADATA the read vouched for: one download of it in all."""
    root = _project(tmp_path / "p", early)
    _done(_resolve(root))
    for f in _facts_cache().glob("*.json"):  # nothing kept: the facts, and the checked METADATA
        f.unlink()
    filename, _, sha = _wheel(early, "earlypkg", "1.0")
    gate = threading.Event()
    early.reads_gate = gate
    try:
        before = len(early.served_to)
        proc = _resolve(root, "--upgrade")
        deadline = time.monotonic() + 90

        def downloaded() -> list[str]:
            return [path.rsplit("/", 1)[-1].split("-")[0] for path, agent in early.served_to[before:]
                    if not agent.startswith("uv/")]

        while len(set(downloaded())) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # (a download of earlypkg by the check, were it to start, would be in by now)
        held, running = downloaded(), proc.poll() is None
    finally:
        gate.set()
        early.reads_gate = None
    out = _done(proc)
    assert running, out
    assert sorted(held) == ["nvidia_cuda_runtime_cu12", "torch", "triton"], held
    assert downloaded().count("earlypkg") == 1, downloaded()  # the read's download; the check made none
    assert _lock_native(root)[filename] == ["earlypkg/_C.so"]
    kept = json.loads((_facts_cache() / f"{sha}.metadata.json").read_text())
    assert "Name: earlypkg" in kept["metadata"] and kept["sha256"] == sha


def test_a_wheel_read_whole_whose_bytes_are_not_its_sha256_gives_no_facts_and_fails_the_resolve(
        tmp_path: Path, early: LocalIndex) -> None:
    """The index serves other bytes for earlypkg's file than its page's sha256 (a mirror): the read downloads them
    whole, finds they are not the sha256's, and neither keeps their facts nor vouches their METADATA; the integrity
    check then refuses the resolve (exit 4), and a resolve against the honest index reads the real file's facts."""
    root = _project(tmp_path / "p", early)
    _done(_resolve(root))
    for f in _facts_cache().glob("*.json"):
        f.unlink()
    filename, _, sha = _wheel(early, "earlypkg", "1.0")
    real = (early.root / "simple" / "_files" / filename).read_bytes()
    early.tampered[(filename, "range")] = real  # (uv reads the real METADATA by ranged reads)
    early.tampered[(filename, "file")] = real[:-1] + bytes([real[-1] ^ 1])  # a whole download gets other bytes
    try:
        proc = _resolve(root, "--upgrade")
        out, _ = proc.communicate(timeout=300)
    finally:
        early.tampered.pop((filename, "file"), None)
        early.tampered.pop((filename, "range"), None)
    assert proc.returncode == 4, out
    assert f"{filename} (earlypkg 1.0): the index serves a file with sha256" in out, out
    assert not (_facts_cache() / f"{sha}.json").exists()
    assert not (_facts_cache() / f"{sha}.metadata.json").exists()
    _done(_resolve(root, "--upgrade"))
    assert _lock_native(root)[filename] == ["earlypkg/_C.so"]


def test_a_hash_check_started_for_an_answer_not_locked_fails_nothing(tmp_path: Path, early: LocalIndex) -> None:
    """A check started early for a closure the decision then replaced finds a file the index serves other bytes
    for: the lock that does not hold that file passes; the lock that does is refused, in the check's words."""
    import dataclasses
    import hashlib

    from tritonlock.errors import ClosureError
    from tritonlock.lock.integrity import Early, check_lock
    from tritonlock.models import LockedPackage, Wheel

    root = _project(tmp_path / "p", early)
    _done(_resolve(root))
    lock = read_lock(root / "triton-env.lock")
    bad = early.add("simple", "badpkg", "1.0")
    real = bad.read_bytes()
    early.tampered[(bad.name, "file")] = real[:-1] + bytes([real[-1] ^ 1])
    try:
        name, url, _ = _wheel(early, "badpkg", "1.0")
        badpkg = LockedPackage(name="badpkg", version="1.0", index=early.index_url("simple"), wheels=(
            Wheel(name=name, url=url, sha256=hashlib.sha256(real).hexdigest(), size=len(real)),))
        (t,) = lock.targets
        with Early() as started:
            started.start(t.packages + (badpkg,))  # the answer the decision replaced also held badpkg
            assert check_lock(lock, early=started) == ((), ())
            with pytest.raises(ClosureError, match=r"badpkg-1.0-\S+ \(badpkg 1.0\): the index serves a file with "
                                                   r"sha256"):
                check_lock(dataclasses.replace(lock, targets=(dataclasses.replace(t, packages=t.packages + (
                    badpkg,)),)), early=started)
    finally:
        early.tampered.pop((bad.name, "file"), None)
        bad.unlink()


def test_reads_are_likely_without_a_lock_or_where_a_locked_wheels_facts_are_not_kept(tmp_path: Path) -> None:
    from tritonlock.native.read import reads_likely

    lock = tmp_path / "triton-env.lock"
    assert reads_likely(lock)  # no lock yet
    a, b = "a" * 64, "b" * 64
    lock.write_text(f'lock-version = 1\n\n[[native]]\nsha256 = "{a}"\nfile = "x.whl"\n\n[[native]]\nsha256 = "{b}"\n'
                    'file = "y.whl"\n', encoding="utf-8")
    assert reads_likely(lock)  # neither is kept
    (_facts_cache()).mkdir(parents=True, exist_ok=True)
    (_facts_cache() / f"{a}.json").write_text("{}")
    assert reads_likely(lock)  # one is not
    (_facts_cache() / f"{b}.json").write_text("{}")
    assert not reads_likely(lock)
    lock.write_text("lock-version = 1\n", encoding="utf-8")
    assert not reads_likely(lock)  # no native code in the last lock
    lock.unlink()
    lock.mkdir()
    assert not reads_likely(lock)  # not a file to read: nothing said


def test_a_guess_is_heard_only_before_the_online_answer_and_never_replaces_it() -> None:
    """`guessing`: the answer returned is the online compile's; the cached answer is heard while the online one is
    awaited, not after it; a guess that fails is not heard; a compile asked from the cache (a later round) starts
    no guess."""
    from tritonlock.lock.closure import guessing

    class Plan:
        selection = "sel"

    heard: list[tuple[object, object]] = []
    online_go, guess_go = threading.Event(), threading.Event()

    def compile_(plan: object, index: str, **kw: object) -> tuple[str, ...]:
        if kw.get("guess"):
            guess_go.wait(10)
            if kw.get("fail"):
                raise RuntimeError("no answer in the cache")
            return ("cached",)
        online_go.wait(10)
        return ("online",)

    run = guessing(compile_, lambda sel, pkgs: heard.append((sel, pkgs)))
    # the guess answers first: heard, and the online answer is what is returned
    guess_go.set()
    deadline = time.monotonic() + 10
    t = threading.Thread(target=lambda: heard.append(("returned", run(Plan(), "idx"))))
    t.start()
    while not heard and time.monotonic() < deadline:
        time.sleep(0.01)
    online_go.set()
    t.join(10)
    assert heard == [("sel", ("cached",)), ("returned", ("online",))]
    # the online answer first: the guess that comes after is not heard
    heard.clear()
    guess_go.clear()
    assert run(Plan(), "idx") == ("online",)
    guess_go.set()
    time.sleep(0.2)
    assert heard == []
    # a failing guess: nothing heard; an offline compile: no guess at all
    assert run(Plan(), "idx", fail=True) == ("online",)
    time.sleep(0.1)
    assert heard == []
    calls: list[dict[str, object]] = []
    offline = guessing(lambda plan, index, **kw: calls.append(kw) or ("cache",), lambda sel, pkgs: heard.append(1))
    assert offline(Plan(), "idx", offline=True) == ("cache",)
    time.sleep(0.1)
    assert calls == [{"offline": True}] and heard == []


def test_reads_asked_for_together_start_with_the_largest_wheel(early: LocalIndex) -> None:
    """The wheels of every target's guessed closure are asked for at once and handed to the readers the largest
    first, whatever order they were named in (the smallest first here, as a lock's packages come sorted by name):
    each reader that is free takes the next one as it is handed over, so handing them over as named would start the
    small ones first and leave the longest read for last, behind the workers a resolve has."""
    from tritonlock.native.read import Reader

    _forget_facts()
    named = sorted((_file(early, n, v) for n, v in (("earlypkg", "1.0"), ("otherpkg", "1.0"), ("torch", "2.10.0"))),
                   key=lambda f: f[3] or 0)
    assert len({f[3] for f in named}) == 3, "the three wheels must differ in size for the order to show"
    reader = Reader(workers=1)
    handed: list[int] = []
    submit = reader._pool.submit
    reader._pool.submit = lambda size, fn: handed.append(size) or submit(size, fn)  # type: ignore[method-assign]
    try:
        facts = reader.facts([(url, size, sha, filename, False) for filename, url, sha, size in named])
    finally:
        reader.close()
    assert {f.filename for f in facts.values()} == {f[0] for f in named}
    assert handed == sorted((f[3] or 0 for f in named), reverse=True)


def test_reads_held_back_are_used_at_once_but_kept_only_once_confirmed(early: LocalIndex) -> None:
    """The decision's search on uv's cached answers (not yet confirmed by uv online) reads with `hold`: the facts
    serve the search at once, but none is kept until `keep` confirms its sha256 or an answer asked without `hold`
    names the wheel — and that costs no second read. What a resolve held and never confirmed is gone with it: the
    next resolve reads that wheel again."""
    from tritonlock.native.read import Reader

    _forget_facts()
    files = {n: _file(early, n, "1.0") for n in ("earlypkg", "otherpkg")}
    wheel = {n: (url, size, sha, filename, False) for n, (filename, url, sha, size) in files.items()}
    kept = {n: _facts_cache() / f"{f[2]}.json" for n, f in files.items()}
    before = len(early.asked_by)
    reader = Reader()
    try:
        got = reader.facts([wheel["earlypkg"], wheel["otherpkg"]], hold=True)
        assert {f.filename for f in got.values()} == {f[0] for f in files.values()}
        assert not kept["earlypkg"].exists() and not kept["otherpkg"].exists()
        reads = {n: _gets(early, before, f[0]) for n, f in files.items()}
        assert all(reads.values())
        reader.keep({files["earlypkg"][2]})
        assert kept["earlypkg"].is_file() and not kept["otherpkg"].exists()
        reader.facts([wheel["otherpkg"]])  # an answer asked online names it: kept, from the read already made
        assert kept["otherpkg"].is_file()
        assert {n: _gets(early, before, f[0]) for n, f in files.items()} == reads
    finally:
        reader.close()
    _forget_facts()
    reader = Reader()
    try:  # held, guessed first, never confirmed: used, not kept — and the next resolve's reader reads it again
        reader.prefetch([wheel["earlypkg"]], guess=True)
        reader.seen([wheel["earlypkg"]], (), hold=True)
        assert files["earlypkg"][0] in {f.filename for f in reader.facts([wheel["earlypkg"]], hold=True).values()}
    finally:
        reader.close()
    assert not kept["earlypkg"].exists()
    held_twice = _gets(early, before, files["earlypkg"][0])
    again = Reader()
    try:
        again.facts([wheel["earlypkg"]])
    finally:
        again.close()
    assert kept["earlypkg"].is_file() and _gets(early, before, files["earlypkg"][0]) > held_twice


def test_the_held_rule_reads_with_hold_and_keeps_what_it_asked_once_confirmed() -> None:
    """Native.held(): the search on unconfirmed answers reads through the reader with hold (facts and seen alike)
    and the second value keeps every sha256 that search asked for, whichever way; a rule without the reader is used
    as it is."""
    from tritonlock.decide._pkgscene import Native

    calls: list[tuple[object, ...]] = []

    class Reader:
        def facts(self, wheels: object, *, hold: bool = False) -> dict[str, object]:
            calls.append(("facts", wheels, hold))
            return {}

        def seen(self, wheels: object, packages: object, *, hold: bool = False) -> None:
            calls.append(("seen", wheels, hold))

        def keep(self, shas: set[str]) -> None:
            calls.append(("keep", sorted(shas)))

    wanted: dict[str, list[tuple[str, int | None, str, str, bool]]] = {
        "a": [("u1", 1, "s1", "f1", False)], "b": [("u2", 2, "s2", "f2", True), ("u3", 3, "s3", "f3", False)]}
    rule = Native(wanted=lambda sel, pkgs: wanted[sel],  # type: ignore[index]
                  facts=lambda ws: {}, seen=lambda sel, pkgs: None, reader=Reader())
    held, keep = rule.held()
    assert held is not rule and held.wanted is rule.wanted and held.read is rule.read
    held.facts(wanted["a"])
    assert held.seen is not None
    held.seen("b", ())  # type: ignore[arg-type]
    assert calls == [("facts", wanted["a"], True), ("seen", wanted["b"], True)]
    keep()
    assert calls[-1] == ("keep", ["s1", "s2", "s3"])
    plain = Native(wanted=rule.wanted, facts=rule.facts, seen=rule.seen)
    same, nothing = plain.held()
    assert same is plain
    nothing()
    assert len(calls) == 3
