"""`export --format wheelhouse`: the target's files once, checked, resumable; then `sync --find-links DIR` installs
with every index unreachable (the index is stopped)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import populate, write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main

pytestmark = pytest.mark.slow

INTENT = """
[environment]
python = "3.11"
torch = "==2.6.0"
packages = ["einops>=0.8"]

[[targets]]
name = "laptop"
"""


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def test_wheelhouse_is_resumable_checked_and_syncs_offline(tmp_path: Path) -> None:
    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    idx.start()
    root = tmp_path / "proj"
    write_intent(root, idx, INTENT)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    house = tmp_path / "house"
    code, out = _run("export", "-p", str(root), "--format", "wheelhouse", "-o", str(house))
    assert code == 0, out
    wheels = sorted(p.name for p in house.glob("*.whl"))
    assert {w.split("-")[0] for w in wheels} == {"torch", "triton", "filelock", "einops", "typing_extensions", "numpy"}
    assert "(6 downloaded" in out and "0 already there" in out
    assert "[1/6]" in out and " KB" in out  # progress and sizes
    page = (house / "index.html").read_text()
    assert all(f'href="{w}#sha256=' in page for w in wheels)
    # a second run downloads nothing
    before = len([r for r in idx.requests if "/_files/" in r])
    code, out = _run("export", "-p", str(root), "--format", "wheelhouse", "-o", str(house))
    assert code == 0 and "(0 downloaded, 0 B; 6 already there)" in out, out
    assert len([r for r in idx.requests if "/_files/" in r]) == before
    # a cut-off file is fetched again, and only it
    torch = next(house.glob("torch-*.whl"))
    good = torch.read_bytes()
    torch.write_bytes(good[: len(good) // 2])
    code, out = _run("export", "-p", str(root), "--format", "wheelhouse", "-o", str(house))
    assert code == 0 and "(1 downloaded" in out and "1 fetched again" in out, out
    assert torch.read_bytes() == good
    # no network: the index is gone
    idx.stop()
    venv = tmp_path / "venv"
    code, out = _run("sync", "-p", str(root), "--venv", str(venv), "--find-links", str(house), "--no-verify")
    assert code == 0, out
    got = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch, einops; print(torch.__version__)"],
                         capture_output=True, text=True)
    assert got.stdout.strip() == "2.6.0+cpu", got.stderr


def test_a_file_the_index_changed_is_refused(tmp_path: Path) -> None:
    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    idx.start()
    root = tmp_path / "proj"
    write_intent(root, idx, INTENT)
    assert _run("resolve", "-p", str(root))[0] == 0
    (einops,) = (tmp_path / "index").rglob("einops-*.whl")
    good = einops.read_bytes()
    einops.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))  # the same size, other bytes
    house = tmp_path / "house"
    code, out = _run("export", "-p", str(root), "--format", "wheelhouse", "-o", str(house))
    assert code == 4
    assert "einops-0.8.0-py3-none-any.whl: the downloaded file has sha256" in out and "the lock pins" in out
    assert not [p.name for p in house.iterdir() if "einops" in p.name]  # neither the file nor a temp file is left
    einops.write_bytes(good + b"tampered")  # longer than the lock records: not read past its size
    code, out = _run("export", "-p", str(root), "--format", "wheelhouse", "-o", str(house))
    idx.stop()
    assert code == 4
    assert (f"einops-0.8.0-py3-none-any.whl: the index sent more than the {len(good)} bytes the lock records; the "
            "download was stopped there and nothing was kept") in out, out
    assert not [p.name for p in house.iterdir() if "einops" in p.name]


def test_wheelhouse_needs_an_output_directory(tmp_path: Path, local_index: LocalIndex) -> None:
    root = tmp_path / "proj"
    write_intent(root, local_index, INTENT)
    assert _run("resolve", "-p", str(root))[0] == 0
    code, out = _run("export", "-p", str(root), "--format", "wheelhouse")
    assert code == 2 and "--format wheelhouse needs -o DIR" in out


# ---------------------------------------------------------------- hostile indexes, shared directories, credentials


class _Hostile:
    """A file server on 127.0.0.1 that misbehaves on purpose, per path: /endless/ streams bytes until the client
    stops reading (or 64 MiB); /big/ announces 10 GB; /short/ announces the file's size and sends half of it."""

    def __init__(self, data: bytes) -> None:
        import http.server
        import threading

        self.data, self.sent = data, 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                self.send_response(200)
                kind = self.path.split("/")[1]
                if kind == "big":
                    self.send_header("Content-Length", str(10 * 1024**3))
                elif kind == "short":
                    self.send_header("Content-Length", str(len(outer.data)))
                self.end_headers()
                body = outer.data[: len(outer.data) // 2] if kind == "short" else outer.data
                try:
                    self.wfile.write(body)
                    while kind in ("endless", "big") and outer.sent < 64 * 1024**2:
                        self.wfile.write(b"\0" * 65536)
                        outer.sent += 65536
                except OSError:  # the client stopped reading: what a bounded download does
                    pass
                self.close_connection = True

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _lock_for(root: Path, url: str, data: bytes) -> None:
    """A lock whose one file is served at `url` (its sha256 and size are `data`'s)."""
    import hashlib

    from tritonlock.lock import lockfile
    from tritonlock.models import Lock, LockedPackage, LockedTarget, Selection, TargetSpec, Wheel

    name = url.rsplit("/", 1)[1]
    sel = Selection(target=TargetSpec(name="laptop", os="linux", arch="x86_64", glibc="2.35", python="3.11"),
                    ok=True, python="3.11", torch="2.6.0", backend="cpu", index="http://127.0.0.1:9/whl/cpu")
    pkg = LockedPackage(name="filelock", version="3.16.1", index="http://127.0.0.1:9/simple", wheels=(
        Wheel(name=name, url=url, sha256=hashlib.sha256(data).hexdigest(), size=len(data)),))
    root.mkdir(parents=True, exist_ok=True)
    (root / "triton-env.lock").write_text(lockfile.dumps(Lock(
        lock_version="1.0", created_by="tritonlock test", intent_hash="sha256:" + "0" * 64, matrix_version="x",
        default_index="http://127.0.0.1:9/simple", targets=(LockedTarget(selection=sel, packages=(pkg,)),))))


@pytest.mark.parametrize("kind", ["endless", "big"])
def test_a_download_stops_at_the_size_the_lock_records(tmp_path: Path, kind: str) -> None:
    """An index that sends more than the locked file's 1,007 bytes (without end, or announcing 10 GB): the export
    stops there (exit 4, a network problem), keeps nothing, and has read about the locked size, not the stream."""
    data = b"x" * 1007
    srv = _Hostile(data)
    try:
        _lock_for(tmp_path / "proj", f"{srv.url}/{kind}/filelock-3.16.1-py3-none-any.whl", data)
        house = tmp_path / "house"
        code, out = _run("export", "-p", str(tmp_path / "proj"), "--format", "wheelhouse", "-o", str(house))
    finally:
        srv.stop()
    assert code == 4, out
    assert "filelock-3.16.1-py3-none-any.whl: the index sent more than the 1007 bytes the lock records" in out, out
    assert [p.name for p in house.iterdir()] == []
    assert srv.sent < 16 * 1024**2  # what the socket buffers held when it stopped reading, not 64 MiB


def test_a_cut_off_download_is_a_network_problem(tmp_path: Path) -> None:
    data = b"y" * 5000
    srv = _Hostile(data)
    try:
        _lock_for(tmp_path / "proj", f"{srv.url}/short/filelock-3.16.1-py3-none-any.whl", data)
        code, out = _run("export", "-p", str(tmp_path / "proj"), "--format", "wheelhouse", "-o", str(tmp_path / "h"))
    finally:
        srv.stop()
    assert code == 4, out
    assert "filelock-3.16.1-py3-none-any.whl: the download ended after" in out and "a network problem: run the " \
        "export again" in out, out
    assert [p.name for p in (tmp_path / "h").iterdir()] == []


THREE = """
[environment]
python = "3.11"
torch = "==2.6.0"

[[targets]]
name = "laptop"

[[targets]]
name = "a100"
driver = "550.54.15"
gpus = ["8.0"]

[[targets]]
name = "h100"
driver = "560.35.03"
gpus = ["9.0"]
"""


def _page(house: Path) -> dict[str, str]:
    import re

    return dict(re.findall(r'<a href="([^"#]+)#sha256=([0-9a-f]{64})">', (house / "index.html").read_text()))


def test_three_exports_share_one_wheelhouse(tmp_path: Path, local_index: LocalIndex) -> None:
    """One directory for three targets, one after the other and then all at once: every export succeeds, and the
    page lists every target's files (each with its sha256), not only the last one's."""
    import hashlib
    import os
    import sys

    from tritonlock.lock.lockfile import read_lock

    root = tmp_path / "proj"
    write_intent(root, local_index, THREE)
    assert _run("resolve", "-p", str(root))[0] == 0
    lock = read_lock(root / "triton-env.lock")
    want = {w.name: w.sha256 for t in lock.targets for p in t.packages for w in p.wheels}
    assert len({w for t in lock.targets for p in t.packages for w in p.wheels if p.name == "torch"}) >= 2
    house = tmp_path / "house"
    for t in lock.targets:
        code, out = _run("export", "-p", str(root), "--format", "wheelhouse", "--target", t.name, "-o", str(house))
        assert code == 0, out
    assert _page(house) == want
    together = tmp_path / "together"
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    procs = [subprocess.Popen([sys.executable, "-m", "tritonlock", "export", "-p", str(root), "--format", "wheelhouse",
                               "--target", t.name, "-o", str(together)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env) for t in lock.targets]
    outs = [(p.wait(), p.stdout.read() if p.stdout else "") for p in procs]
    assert all(code == 0 for code, _ in outs), outs
    assert _page(together) == want
    for name, sha in want.items():
        assert hashlib.sha256((together / name).read_bytes()).hexdigest() == sha
    assert sorted(p.name for p in together.iterdir()) == sorted([*want, "index.html"])  # no temp file left


def test_the_wheelhouse_takes_the_credentials_in_the_intent_as_sync_does(tmp_path: Path) -> None:
    """An index that wants a password, which only the intent's [indexes] URLs carry: the export (a process of its
    own, that learned nothing before) gets the files, and prints no secret."""
    import os
    import sys

    user, secret = "alice", "s3cr3t-only-in-the-intent"
    idx = LocalIndex(tmp_path / "index", auth=(user, secret))
    populate(idx)
    idx.start()
    try:
        root = tmp_path / "proj"
        host = idx.url.split("//", 1)[1]
        (root).mkdir()
        (root / "triton-env.toml").write_text(
            INTENT + f'\n[indexes]\ntorch = "http://{user}:{secret}@{host}/whl/{{backend}}"\n'
                     f'default = "http://{user}:{secret}@{host}/simple"\n')
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {
            "UV_PYTHON_DOWNLOADS": "never", "PIP_CONFIG_FILE": os.devnull, "NETRC": str(tmp_path / "no-netrc"),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring", "UV_CACHE_DIR": str(tmp_path / "uv-cache")}
        tl = [sys.executable, "-m", "tritonlock"]
        r = subprocess.run([*tl, "resolve", "-p", str(root)], capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr
        r = subprocess.run([*tl, "export", "-p", str(root), "--format", "wheelhouse", "-o", str(tmp_path / "h")],
                           capture_output=True, text=True, env=env)
    finally:
        idx.stop()
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(list((tmp_path / "h").glob("*.whl"))) == 6
    assert secret not in r.stdout + r.stderr


def test_a_fifo_under_a_wheels_name_is_named_not_waited_on(tmp_path: Path, local_index: LocalIndex) -> None:
    """`sync --find-links DIR` where DIR holds a FIFO under a wheel's name: sync stops naming it (uv never opens
    it — nothing could ever be read from it), and the venv is not made."""
    import os
    import threading

    root = tmp_path / "proj"
    write_intent(root, local_index, INTENT)
    assert _run("resolve", "-p", str(root))[0] == 0
    house = tmp_path / "house"
    assert _run("export", "-p", str(root), "--format", "wheelhouse", "-o", str(house))[0] == 0
    wheel = next(house.glob("einops-*.whl"))
    wheel.unlink()
    os.mkfifo(wheel)
    opened = threading.Event()

    def writer() -> None:  # were the FIFO opened for reading (the old hang), this ends it, and the test sees it
        with open(wheel, "wb") as f:
            opened.set()
            f.write(b"not a wheel")

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    code, out = _run("sync", "-p", str(root), "--find-links", str(house), "--no-verify")
    was_opened = opened.is_set()
    fd = os.open(wheel, os.O_RDONLY | os.O_NONBLOCK)  # let the writer go
    t.join()
    os.close(fd)
    assert code == 5 and f"{wheel} is a named pipe (FIFO)" in out, out
    assert not was_opened
    assert not (root / ".venv").exists()
def test_sizes_are_in_one_unit_and_unknown_ones_are_said(tmp_path: Path) -> None:
    """The summary mixed 1024-based sizes with decimal labels (and sync's plan counts decimal), and left files whose
    size the lock does not record out of its total in silence: an index that serves only PEP 503 HTML gives no sizes."""
    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    idx.json = False  # HTML pages only: the lock records no sizes
    idx.start()
    root = tmp_path / "proj"
    write_intent(root, idx, INTENT)
    assert _run("resolve", "-p", str(root))[0] == 0
    house = tmp_path / "house"
    code, out = _run("export", "-p", str(root), "--format", "wheelhouse", "-o", str(house))
    idx.stop()
    assert code == 0, out
    assert "wheelhouse " + str(house) + ": 6 files, 6 files of unknown size for target laptop" in out, out
    on_disk = sum(p.stat().st_size for p in house.glob("*.whl"))
    from tritonlock._term import human_size

    assert f"wrote {house}: 6 files, {human_size(on_disk)} for target laptop" in out, out
    assert human_size(1_500_000) == "1.5 MB" and human_size(1_048_576) == "1.0 MB"  # decimal, as sync's plan
    for line in out.splitlines():
        if line.startswith("[") and line.endswith(")"):
            name, size = line.split(" ", 1)[1].rsplit(" (", 1)
            assert size[:-1] == human_size((house / name).stat().st_size), line
