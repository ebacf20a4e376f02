"""A mirror that serves other bytes than its index pages list: the closure uv computes from those bytes (a wheel
swapped under its name, other METADATA beside it, other bytes to the resolver's range reads) is checked against the
hashes the lock records — the METADATA each locked file's hash vouches for must be what the closure was computed
from — or `resolve` fails (exit 4) and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import populate, write_intent
from pkgindex import LocalIndex, build_wheel, core_metadata
from tritonlock.cli import main
from tritonlock.lock.lockfile import read_lock

INTENT = '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\npackages = ["einops"]\n'


def _index(tmp_path: Path, **kw: object) -> LocalIndex:
    idx = LocalIndex(tmp_path / "index", **kw)  # type: ignore[arg-type]
    populate(idx)
    return idx


def _einops_without_its_dependency(tmp_path: Path) -> bytes:
    """einops 0.8.0 as the mirror swaps it in: the same name and version, no Requires-Dist on typing-extensions."""
    return build_wheel(tmp_path / "swapped", "einops", "0.8.0").read_bytes()


def _resolve(root: Path) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["resolve", "-p", str(root)])
    return r.exit_code, r.output


def test_a_wheel_swapped_under_its_name_fails_the_resolve(tmp_path: Path) -> None:
    """Every GET of the wheel gets the swapped bytes while the page keeps the real file's hash and size: uv computes
    the closure from bytes the lock's hash never vouched for (one dependency short) and pins the page's hash."""
    idx = _index(tmp_path)
    idx.tampered[("einops-0.8.0-py3-none-any.whl", "file")] = _einops_without_its_dependency(tmp_path)
    idx.start()
    try:
        root = tmp_path / "proj"
        write_intent(root, idx, INTENT)
        code, out = _resolve(root)
    finally:
        idx.stop()
    assert code == 4, out
    assert "the closure was computed from other files than the lock pins" in out, out
    assert "einops-0.8.0-py3-none-any.whl (einops 0.8.0): the index serves a file with sha256" in out
    assert not (root / "triton-env.lock").exists()


def test_metadata_that_does_not_match_its_listed_hash_fails_the_resolve(tmp_path: Path) -> None:
    """An index that lists core-metadata hashes (PEP 658/714, as PyPI): uv reads the `.metadata` beside the wheel;
    one that is not what the page's hash says is refused."""
    idx = _index(tmp_path, core_metadata=True)
    swapped = tmp_path / "swapped" / "x.whl"
    swapped.parent.mkdir()
    swapped.write_bytes(_einops_without_its_dependency(tmp_path))
    idx.tampered[("einops-0.8.0-py3-none-any.whl", "metadata")] = core_metadata(
        next((tmp_path / "swapped").glob("einops-*.whl"))) or b""
    idx.start()
    try:
        root = tmp_path / "proj"
        write_intent(root, idx, INTENT)
        code, out = _resolve(root)
    finally:
        idx.stop()
    assert code == 4, out  # (uv checks this hash itself; tritonlock would refuse it too, below)
    assert ("Hash mismatch for package metadata" in out
            or "einops-0.8.0-py3-none-any.whl.metadata: the index serves METADATA with sha256" in out), out
    assert not (root / "triton-env.lock").exists()


@pytest.mark.parametrize("core_metadata", [True, False])
def test_an_honest_index_resolves_and_the_lock_holds_every_dependency(tmp_path: Path, core_metadata: bool) -> None:
    idx = _index(tmp_path, core_metadata=core_metadata)
    idx.start()
    try:
        root = tmp_path / "proj"
        write_intent(root, idx, INTENT)
        code, out = _resolve(root)
    finally:
        idx.stop()
    assert code == 0, out
    (t,) = read_lock(root / "triton-env.lock").targets
    assert {"einops", "typing-extensions", "torch", "filelock"} <= {p.name for p in t.packages}
    assert "was not checked" not in out


def test_a_second_resolve_downloads_no_checked_file_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mirror without PEP 658 hashes: the first resolve downloads each locked file to check it against its hash;
    what the hash vouched for is kept per sha256, so `resolve --upgrade` reads none of them again — and a file
    served with other bytes under a hash never checked is still refused."""
    idx = _index(tmp_path)
    idx.start()
    try:
        root = tmp_path / "proj"
        write_intent(root, idx, INTENT)
        code, out = _resolve(root)
        assert code == 0, out
        locked = {w.name for t in read_lock(root / "triton-env.lock").targets for p in t.packages for w in p.wheels}

        def checked() -> set[str]:  # the locked files tritonlock itself downloaded (uv's own downloads aside)
            return {s.rsplit("/", 1)[-1] for s, agent in idx.served_to if not agent.startswith("uv/")} & locked

        assert checked() == locked  # (each was downloaded to be checked: the case is the one claimed)
        idx.served_to.clear()
        idx.asked_by.clear()
        r = CliRunner().invoke(main, ["resolve", "-p", str(root), "--upgrade"])
        assert r.exit_code == 0, r.output
        assert checked() == set(), idx.served_to
        # nor their pages: the sha256 each pins is one uv read from its page in this run, and what the file requires
        # is known from its own bytes (the decision itself reads only the pages of einops, torch and triton)
        read = {s for s, agent in idx.asked_by if not agent.startswith("uv/")}
        others = {f"/{i}/{p.name}/" for t in read_lock(root / "triton-env.lock").targets for p in t.packages
                  for i in ("simple", "whl/cpu") if p.name not in ("einops", "torch", "triton")}
        assert others and not read & others, read & others
        # the mirror now swaps einops under its name: uv (its cache empty) computes the closure from the swapped
        # bytes; what the real file's hash vouched for, kept, still says typing-extensions is missing
        idx.tampered[("einops-0.8.0-py3-none-any.whl", "file")] = _einops_without_its_dependency(tmp_path)
        monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "empty-uv-cache"))
        other = tmp_path / "other"
        write_intent(other, idx, INTENT)
        code, out = _resolve(other)
    finally:
        idx.stop()
    assert code == 4, out
    assert "einops-0.8.0-py3-none-any.whl (checked against its hash) requires typing-extensions>=4, which the " \
           "closure does not hold" in out, out
    assert not (other / "triton-env.lock").exists()


def test_a_file_too_large_to_fetch_without_a_metadata_hash_is_said_to_be_unchecked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tritonlock.lock import integrity

    monkeypatch.setattr(integrity, "MAX_FILE_BYTES", 1000)  # every test wheel is about 1 kB
    idx = _index(tmp_path)
    idx.start()
    try:
        root = tmp_path / "proj"
        write_intent(root, idx, INTENT)
        code, out = _resolve(root)
    finally:
        idx.stop()
    assert code == 0, out
    (note,) = [x for x in out.splitlines() if x.startswith("note: ")]
    assert "warning" not in out  # a plain note, once: not an alarm
    # its claims, checked on the lock: which files are over the bound, each pinned by its sha256, the rest checked
    files = [w for t in read_lock(root / "triton-env.lock").targets for p in t.packages for w in p.wheels]
    large = [w for w in files if w.size is not None and w.size > 1000]
    assert len(large) == 4 and all(len(w.sha256) == 64 for w in large)
    named = note.split(" (", 1)[1].split(" and 1 more)")[0].split(", ")
    assert note.startswith("note: 4 locked files over 1.0 KB (") and len(named) == 3
    assert set(named) <= {w.name for w in large}  # the files named are the ones over the bound
    assert note.endswith(
        " and 1 more) are pinned by their sha256, but were not downloaded to check the dependencies their index lists "
        f"for them (it lists no hash for those, PEP 658); the other {len(files) - 4} files' dependencies were checked "
        "against a hash (the file's, or that of its metadata where the index lists one). `tritonlock sync` installs only files whose sha256 matches the lock, and `tritonlock "
        "verify` imports them — nothing to do, unless you distrust that index: then resolve against one that lists "
        "PEP 658 hashes")


def test_the_large_file_note_says_one_file_and_no_others_in_words(tmp_path: Path) -> None:
    from tritonlock.lock.integrity import large_note

    assert large_note(["torch-2.11.0-cp311-none-linux_x86_64.whl"], 1, 64 * 2**20) == (
        "1 locked file over 67.1 MB (torch-2.11.0-cp311-none-linux_x86_64.whl) is pinned by its sha256, but was not "
        "downloaded to check the dependencies its index lists for it (it lists no hash for those, PEP 658); the other "
        "file's dependencies were checked against a hash (the file's, or that of its metadata where the index lists "
        "one). `tritonlock sync` installs only files whose sha256 "
        "matches the lock, and `tritonlock verify` imports them — nothing to do, unless you distrust that index: then "
        "resolve against one that lists PEP 658 hashes")
    assert "; the other" not in large_note(["a.whl", "b.whl"], 0, 100)
    assert large_note([f"{i}.whl" for i in range(5)], 2, 100).startswith(
        "5 locked files over 100 B (0.whl, 1.whl, 2.whl and 2 more) are pinned by their sha256")


def test_sync_installs_only_files_whose_sha256_is_the_locks(tmp_path: Path) -> None:
    """The note's word on sync, checked: a file the index swaps after the lock was written (the torch wheel, one the
    resolve did not download) is refused at install — exit 5 naming it — and nothing of it lands in the venv."""
    idx = _index(tmp_path)
    idx.start()
    try:
        root = tmp_path / "proj"
        write_intent(root, idx, INTENT)
        assert _resolve(root)[0] == 0
        (t,) = read_lock(root / "triton-env.lock").targets
        (torch_wheel,) = next(p for p in t.packages if p.name == "torch").wheels
        idx.tampered[(torch_wheel.name, "file")] = build_wheel(tmp_path / "other", "torch", "2.6.0+cpu",
                                                               tag="py3-none-manylinux_2_17_x86_64").read_bytes()
        r = CliRunner().invoke(main, ["sync", "--no-verify", "-p", str(root)])
    finally:
        idx.stop()
    assert r.exit_code == 5, r.output
    assert "torch" in r.output and "mismatch" in r.output.lower(), r.output
    assert not list((root / ".venv").glob("lib/python*/site-packages/torch")), "the swapped torch was installed"


def test_the_check_itself_refuses_what_its_hashes_do_not_vouch_for(tmp_path: Path) -> None:
    """The check on a lock as uv might have made it from a mirror: METADATA whose listed hash does not match, a
    file whose bytes do not, and a closure missing what a checked METADATA requires — each refused, by name."""
    import dataclasses

    from tritonlock.errors import ClosureError
    from tritonlock.lock.integrity import check_lock

    idx = _index(tmp_path, core_metadata=True)
    idx.start()
    try:
        root = tmp_path / "proj"
        write_intent(root, idx, INTENT)
        assert _resolve(root)[0] == 0
        lock = read_lock(root / "triton-env.lock")
        assert check_lock(lock) == ((), ())
        (t,) = lock.targets
        short = dataclasses.replace(t, packages=tuple(p for p in t.packages if p.name != "typing-extensions"))
        with pytest.raises(ClosureError, match=r"einops-0.8.0-py3-none-any.whl \(checked against its hash\) requires "
                                               r"typing-extensions>=4, which the closure does not hold"):
            check_lock(dataclasses.replace(lock, targets=(short,)))
        idx.tampered[("einops-0.8.0-py3-none-any.whl", "metadata")] = b"Metadata-Version: 2.1\nName: einops\n"
        with pytest.raises(ClosureError, match=r"einops-0.8.0-py3-none-any.whl.metadata: the index serves METADATA "
                                               r"with sha256 [0-9a-f]{64}, its page lists"):
            check_lock(lock)
        idx.tampered.clear()
        idx.core_metadata = False
        idx.tampered[("einops-0.8.0-py3-none-any.whl", "file")] = _einops_without_its_dependency(tmp_path)
        with pytest.raises(ClosureError, match=r"the index serves a file with sha256"):
            check_lock(lock)
    finally:
        idx.stop()


def test_a_check_still_waiting_on_its_index_never_holds_the_commands_exit(tmp_path: Path) -> None:
    """A closure's checks start as soon as uv names it; when the decision replaces that answer, a check may still
    wait on its index (a page on the way, a name lookup stalled for seconds). Once the lock is written the command
    exits: such a check never holds it (its threads are the process's helpers, not joined at exit) — here an index
    that accepts the connection and never answers, held open until the process has ended."""
    import socket
    import subprocess
    import sys

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(120)  # (a child that failed before its check started: the test fails, it does not hang)
    port = server.getsockname()[1]
    child = tmp_path / "child.py"
    child.write_text(
        "import sys, threading\n"
        "from tritonlock.lock.integrity import Early\n"
        "from tritonlock.models import LockedPackage, Wheel\n"
        f"index = 'http://127.0.0.1:{port}/simple/'\n"
        "w = Wheel(name='slowpkg-1.0-py3-none-any.whl', url=index + 'slowpkg/slowpkg-1.0-py3-none-any.whl',\n"
        "          sha256='0' * 64, size=10)\n"
        "e = Early()\n"
        "e.start((LockedPackage(name='slowpkg', version='1.0', index=index, wheels=(w,)),))\n"
        "sys.stdin.readline()  # the index has the connection\n"
        "e.close()\n"
        "held = [t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]\n"
        "print('joined at exit:', held, flush=True)\n", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(child)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    conn, _ = server.accept()  # the check is under way, and gets no answer
    try:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, _ = proc.communicate(timeout=120)  # (the index still holds the connection: the check cannot end)
        assert proc.returncode == 0 and "joined at exit: []" in out, out
    finally:
        proc.kill()
        conn.close()
        server.close()
