"""One link, two kinds of transfer (tritonlock/_link.py): while a read the decision waits for is in flight, at most
FEW of the integrity check's whole-file downloads run; the others start once the reads are done, or at once when the
lock waits for them (check_lock). And the round trips a mirror without PEP 658 costs: a `.metadata` its page does
not list is no longer asked once the index has answered one such question with nothing (lock/index.py), and the
search reads the METADATA of a package's releases in growing batches (decide/_pkgload.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import populate, write_intent
from pkgindex import LocalIndex

# How long a test lets a transfer that must wait show that it does (it can only pass falsely: a transfer that should
# have waited and did not is seen at once on a local index); what must go may take as long as a busy machine needs.
SHOWN_S = 0.5
GOES_S = 60.0


@contextmanager
def _held(link: object, count: int) -> Iterator[None]:
    """`count` downloads running on `link` (each in a thread, held until the block ends)."""
    release = threading.Event()
    inside = threading.Semaphore(0)

    def one() -> None:
        with link.download():  # type: ignore[attr-defined]
            inside.release()
            release.wait(GOES_S)

    threads = [threading.Thread(target=one, daemon=True) for _ in range(count)]
    for t in threads:
        t.start()
    for _ in threads:
        assert inside.acquire(timeout=GOES_S)
    try:
        yield
    finally:
        release.set()
        for t in threads:
            t.join(GOES_S)


def _download_in_thread(link: object, hurried: threading.Event | None = None) -> tuple[threading.Event,
                                                                                         threading.Event]:
    """A download on `link` in a thread: (it started, let it end)."""
    started, end = threading.Event(), threading.Event()

    def go() -> None:
        with link.download(hurried):  # type: ignore[attr-defined]
            started.set()
            end.wait(GOES_S)

    threading.Thread(target=go, daemon=True).start()
    return started, end


def test_a_download_waits_while_a_read_is_in_flight_and_few_run() -> None:
    from tritonlock._link import FEW, Link

    link = Link()
    with _held(link, FEW):
        with link.read():
            started, end = _download_in_thread(link)
            assert not started.wait(SHOWN_S)  # FEW run, a read in flight: it waits its turn
        assert started.wait(GOES_S)  # the read done: it goes
        end.set()


def test_downloads_beside_a_read_run_up_to_few_at_once() -> None:
    from tritonlock._link import FEW, Link

    link = Link()
    with link.read():
        with _held(link, FEW - 1):  # (one place left)
            started, end = _download_in_thread(link)
            assert started.wait(GOES_S)
            second, end2 = _download_in_thread(link)
            assert not second.wait(SHOWN_S)
            end.set()  # one of the FEW ends: the next takes its place
            assert second.wait(GOES_S)
            end2.set()


def test_without_a_read_every_download_runs_at_once() -> None:
    from tritonlock._link import FEW, Link

    link = Link()
    runs = [_download_in_thread(link) for _ in range(FEW + 3)]
    assert all(started.wait(GOES_S) for started, _ in runs)
    assert link.downloads == FEW + 3
    for _, end in runs:
        end.set()


def test_a_hurried_download_goes_though_a_read_is_in_flight() -> None:
    from tritonlock._link import FEW, Link

    link = Link()
    hurried = threading.Event()
    with _held(link, FEW), link.read():
        started, end = _download_in_thread(link, hurried)
        assert not started.wait(SHOWN_S)
        hurried.set()  # the lock waits for it now
        assert started.wait(GOES_S)
        end.set()


def test_a_read_counts_while_it_runs_and_after_a_failure_no_longer() -> None:
    from tritonlock._link import Link

    link = Link()
    with pytest.raises(RuntimeError):
        with link.read():
            assert link.reads == 1
            raise RuntimeError("the read failed")
    assert link.reads == 0


def _index(tmp_path: Path, **kw: object) -> LocalIndex:
    idx = LocalIndex(tmp_path / "index", **kw)  # type: ignore[arg-type]
    populate(idx)
    return idx


def test_the_integrity_checks_download_gives_way_to_the_decisions_reads(tmp_path: Path) -> None:
    """integrity._download, the check's whole file (an index without PEP 658 hashes), is not even asked of the index
    while a read is in flight and FEW downloads run; once the read ends it is — and with the lock waiting for it
    (`hurried`), at once."""
    from tritonlock._link import FEW, LINK
    from tritonlock.lock.index import IndexClient
    from tritonlock.lock.integrity import MAX_FILE_BYTES, _download

    idx = _index(tmp_path)
    idx.start()
    try:
        client = IndexClient(idx.index_url("simple"))
        (f,) = [f for f in client.files("einops") if f.filename == "einops-0.8.0-py3-none-any.whl"]
        path = f.url.split(idx.url, 1)[1]
        got: list[bytes | None] = []
        hurried = threading.Event()
        for hurry in (False, True):
            got.clear()
            t = threading.Thread(target=lambda: got.append(_download(client, f.url, MAX_FILE_BYTES, hurried)),
                                 daemon=True)
            with _held(LINK, FEW), LINK.read():
                t.start()
                if hurry:
                    hurried.set()
                    t.join(GOES_S)
                    assert got and got[0] is not None and len(got[0]) == f.size
                else:
                    t.join(SHOWN_S)
                    assert not got and not any(p.endswith(path) for p, _ in idx.asked_by)
            t.join(GOES_S)
            assert got and got[0] is not None and len(got[0]) == f.size
    finally:
        idx.stop()


def test_check_lock_does_not_wait_for_reads_once_the_lock_waits_for_it(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The final check (check_lock) downloads what it has to though reads still run (a read of an answer the decision
    replaced may go on for minutes): its downloads are hurried."""
    from click.testing import CliRunner

    from tritonlock._link import FEW, LINK
    from tritonlock.cli import main
    from tritonlock.lock.integrity import check_lock
    from tritonlock.lock.lockfile import read_lock

    idx = _index(tmp_path)  # (no PEP 658 hashes: the check downloads each file)
    idx.start()
    try:
        root = tmp_path / "proj"
        write_intent(root, idx, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n'
                                'packages = ["einops"]\n')
        r = CliRunner().invoke(main, ["resolve", "-p", str(root)])
        assert r.exit_code == 0, r.output
        lock = read_lock(root / "triton-env.lock")
        monkeypatch.setenv("TRITONLOCK_NATIVE_CACHE", str(tmp_path / "fresh"))  # (no METADATA kept: downloaded)
        before = len(idx.served)
        done: list[object] = []
        with _held(LINK, FEW), LINK.read():
            t = threading.Thread(target=lambda: done.append(check_lock(lock)), daemon=True)
            t.start()
            t.join(GOES_S)
            assert done == [((), ())]
        assert any(p.endswith("einops-0.8.0-py3-none-any.whl") for p in idx.served[before:])
    finally:
        idx.stop()


def test_a_metadata_file_the_page_does_not_list_is_not_asked_of_an_index_that_served_none(tmp_path: Path) -> None:
    """PEP 658: a mirror that lists no `.metadata` serves none (this one answers 404). The first wheel is asked for
    it; the next is not (one round trip saved per release read). An sdist's question is told apart: its 404 does not
    stop the wheels' questions. An index whose first answer served one is asked on; one that lists them, always."""
    from tritonlock.lock.index import IndexClient

    idx = LocalIndex(tmp_path / "index")
    for v in ("1.0", "2.0", "3.0"):
        idx.add("simple", "quietlib", v)
    idx.add_sdist("simple", "quietlib", "0.5")
    idx.start()
    try:
        client = IndexClient(idx.index_url("simple"))
        files = {f.filename: f for f in client.files("quietlib")}
        sdist = files["quietlib-0.5.tar.gz"]
        wheels = [files[f"quietlib-{v}-py3-none-any.whl"] for v in ("1.0", "2.0", "3.0")]
        assert not any(f.has_metadata for f in files.values())

        def asked(f: object) -> int:
            return sum(p.endswith(f.filename + ".metadata") for p, _ in idx.asked_by)  # type: ignore[attr-defined]

        assert client.metadata(sdist) is None and asked(sdist) == 1  # (an sdist's: none served)
        assert client.metadata(sdist) is None and asked(sdist) == 1  # (and not asked again)
        for w in wheels:
            idx.tampered[(w.filename, "metadata")] = None  # type: ignore[assignment]
        assert client.metadata(wheels[0]) is None and asked(wheels[0]) == 1  # (the sdist's answer did not stop it)
        assert client.metadata(wheels[1]) is None and asked(wheels[1]) == 0  # it served none: no more questions
        assert IndexClient(idx.index_url("simple")).metadata(wheels[2]) is None and asked(wheels[2]) == 0
    finally:
        idx.stop()
    served = LocalIndex(tmp_path / "served")
    for v in ("1.0", "2.0", "3.0"):
        served.add("simple", "somelib", v)
    served.start()
    try:
        client = IndexClient(served.index_url("simple"))
        a, b, c = sorted((f for f in client.files("somelib")), key=lambda f: f.filename)
        assert "Name: somelib" in (client.metadata(a) or "")  # unlisted, and served: asked on
        served.tampered[(b.filename, "metadata")] = None  # type: ignore[assignment]
        assert client.metadata(b) is None
        assert "Name: somelib" in (client.metadata(c) or "")
    finally:
        served.stop()
    listed = LocalIndex(tmp_path / "listed", core_metadata=True)
    for v in ("1.0", "2.0"):
        listed.add("simple", "loudlib", v)
    listed.start()
    try:
        client = IndexClient(listed.index_url("simple"))
        one, two = sorted((f for f in client.files("loudlib") if f.filename.endswith(".whl")),
                          key=lambda f: f.filename)
        assert one.has_metadata and two.has_metadata
        listed.tampered[(one.filename, "metadata")] = None  # type: ignore[assignment]
        assert client.metadata(one) is None
        assert "Name: loudlib" in (client.metadata(two) or "")  # listed: asked, though one was not served
    finally:
        listed.stop()


def test_the_search_reads_a_packages_metadata_in_growing_batches(tmp_path: Path) -> None:
    """Looking down 70 releases (none admits the line: a walk to the end), the METADATA is read in batches that
    double (META_MOST at most): 4 round trips where 8 at a time took 9."""
    from tritonlock.decide._pkgfacts import Facts
    from tritonlock.decide._pkgload import META_AT_ONCE, META_MOST, Env, Table
    from tritonlock.models import TargetSpec

    assert (META_AT_ONCE, META_MOST) == (8, 32)
    idx = LocalIndex(tmp_path / "index")
    for i in range(70):
        idx.add("simple", "longlib", f"1.{i}")
    idx.start()
    try:
        facts = Facts()
        target = TargetSpec(name="gpu", os="linux", arch="x86_64", glibc="2.35")
        index = idx.index_url("simple")
        t = Table(env=Env(target=target, python="3.11", facts=facts, read=None, judge=None), name="longlib",
                  index=index)

        def asked() -> int:
            return sum(1 for v in t.versions if facts.has_metadata(index, "longlib", v))

        seen = []
        for i in range(0, len(t.versions), 8):  # (as the search asks: at every eighth release it looks at)
            t._meta(i)
            seen.append(asked())
        assert seen == [8, 24, 24, 56, 56, 56, 56, 70, 70]  # 8, then 16, then 32 (META_MOST), then the 14 left
        assert t._batches == 4
        assert [v for v in t.versions if facts.has_metadata(index, "longlib", v)] == t.versions
    finally:
        idx.stop()


def test_a_read_pool_starts_workers_as_jobs_wait_and_never_more_than_its_size() -> None:
    """native/members.Jobs: no thread before a job; jobs waiting at once get a worker each, up to the pool's size —
    the rest wait their turn and every job ends."""
    import time

    from tritonlock.native.members import Jobs

    def workers() -> int:
        return sum(1 for t in threading.enumerate() if t.name == "test-read-pool")

    pool = Jobs(3, name="test-read-pool")
    assert workers() == 0
    release = threading.Event()
    running: list[int] = []
    most = [0]
    lock = threading.Lock()

    def job(n: int) -> int:
        with lock:
            running.append(n)
            most[0] = max(most[0], len(running))
        release.wait(GOES_S)
        with lock:
            running.remove(n)
        return n

    futures = [pool.submit(n, lambda n=n: job(n)) for n in range(7)]
    end = time.monotonic() + GOES_S
    while time.monotonic() < end:  # (three take a job; the other four wait)
        with lock:
            if len(running) == 3:
                break
        time.sleep(0.02)
    assert workers() == 3
    release.set()
    assert sorted(f.result(GOES_S) for f in futures) == list(range(7))
    assert most[0] == 3 and workers() == 3
    pool.close()


def test_the_decisions_reads_count_on_the_link_while_they_reach_the_index(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A wheel's binary facts (native/read.Reader) and a release's METADATA read from inside its wheel
    (decide/_pkgfacts, an index that serves no `.metadata`) are reads the decision waits for: while their requests
    reach the index, LINK counts them (the integrity check's downloads give way)."""
    from tritonlock._link import LINK
    from tritonlock.decide._pkgfacts import _read_metadata
    from tritonlock.lock.index import IndexClient
    from tritonlock.native.read import Reader

    monkeypatch.setenv("TRITONLOCK_NATIVE_CACHE", str(tmp_path / "facts"))
    idx = LocalIndex(tmp_path / "index")
    idx.add("simple", "seenlib", "1.0", modules={"seenlib/__init__.py": "", "seenlib/_C.so": "not an ELF file"})
    idx.add("simple", "metalib", "1.0")
    counted: list[tuple[str, int]] = []

    def hook(handler: object, name: str, data: bytes) -> bool:
        counted.append((name, LINK.reads))
        return False  # (served as usual)

    idx.hook = hook
    idx.start()
    try:
        client = IndexClient(idx.index_url("simple"))
        (seen,) = [f for f in client.files("seenlib") if f.filename.endswith(".whl")]
        (meta,) = [f for f in client.files("metalib") if f.filename.endswith(".whl")]
        idx.tampered[(meta.filename, "metadata")] = None  # type: ignore[assignment]
        reader = Reader()
        try:
            reader.facts([(seen.url, seen.size, seen.sha256, seen.filename, False)])
        finally:
            reader.close()
        assert "Name: metalib" in (_read_metadata(idx.index_url("simple"), meta) or "")
        for name in (seen.filename, meta.filename):
            got = [n for f, n in counted if f == name]
            assert got and min(got) >= 1, (name, counted)
        assert LINK.reads == 0
    finally:
        idx.stop()
