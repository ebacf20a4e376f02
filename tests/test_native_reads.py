"""A wheel's binary facts, read from any index: one that answers HTTP Range requests, one that does not (a static file
server, as `python -m http.server` is), and ones that answer wrongly, slowly or not at all — and from hostile zips.
Every read is bounded (the bytes asked for, a deadline, what a member inflates to, the memory kept); a read that
fails by ranges is made again from the whole file, downloaded; one that fails both ways is said — `resolve` exits 4
naming the wheel and why, or, allowed, locks it unchecked, and `show`, `check` and `verify` say so — never taken as
"no native code". Real local HTTP servers (tests/pkgindex.py's, with a hook that misbehaves); no mock of requests."""

from __future__ import annotations

import io
import json
import re
import struct
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nativebuild import extension, stub_library
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.compat.matrix import load_matrix
from tritonlock.lock.lockfile import read_lock
from tritonlock.native import members
from tritonlock.native import read as native
from tritonlock.native.remotezip import Deadline, OutOfTime, ReadFailed, ZipBroken, directory, watched

CP = "cp311-cp311-manylinux_2_17_x86_64"
LINUX = "py3-none-manylinux_2_17_x86_64"


# --- a small index: torch (PyPI's CUDA 12.8 build, as stubs), and hostpkg, whose extension needs the driver ------

@pytest.fixture(scope="module")
def idx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    tmp = tmp_path_factory.mktemp("reads-build")
    index = LocalIndex(tmp_path_factory.mktemp("reads-index"), core_metadata=True)
    libs = {name: stub_library(tmp / name.split(".so")[0], name, (sym,)) for name, sym in (
        ("libcudart.so.12", "cudaRuntimeGetVersion"), ("libcuda.so.1", "cuInit"), ("libtorch.so", "torch_stub"),
        ("libtorch_cuda.so", "torch_cuda_stub"), ("libc10.so", "c10_stub"), ("libc10_cuda.so", "c10_cuda_stub"))}
    rel = load_matrix().torch_release("2.10.0")
    assert rel is not None and rel.triton
    index.add("simple", "triton", rel.triton, tag=LINUX)
    index.add("simple", "torch", "2.10.0", tag=CP, requires=("nvidia-cuda-runtime-cu12==12.8.90",
                                                             f"triton=={rel.triton}; platform_system == 'Linux'"),
              modules={"torch/__init__.py": "__version__ = '2.10.0'\n",
                       **{f"torch/lib/{n}": libs[n].read_bytes() for n in ("libtorch.so", "libtorch_cuda.so",
                                                                           "libc10.so", "libc10_cuda.so")}})
    index.add("simple", "nvidia-cuda-runtime-cu12", "12.8.90", tag=LINUX,
              modules={"nvidia/cuda_runtime/lib/libcudart.so.12": libs["libcudart.so.12"].read_bytes()})
    index.add("simple", "hostpkg", "1.0", tag=CP, requires=("torch>=2.10",), modules={
        # (a member nothing reads first: every read of the wheel's members starts past the file's first byte, so an
        # answer with another range than asked is another range — __init__.py is read for what it imports)
        "hostpkg/py.typed": "",
        "hostpkg/__init__.py": "from hostpkg import _C\n",
        "hostpkg/_C.so": extension(tmp / "host", "hostpkg._C",
                                   links={libs["libcudart.so.12"]: ("cudaRuntimeGetVersion",),
                                          libs["libcuda.so.1"]: ("cuInit",)}),
        # a bundled library beside it, stored (not deflated): both methods a wheel uses are read
        "hostpkg/lib/libhelper.so": stub_library(tmp / "helper", "libhelper.so", ("helper",)).read_bytes()})
    # a package that pins its torch exactly (as vLLM does): `compat native` follows the pin to torch, and torch's to
    # its CUDA runtime (tests/test_native_shipped.py)
    index.add("simple", "pinpkg", "1.0", tag=CP, requires=("torch==2.10.0",), modules={
        "pinpkg/__init__.py": "", "pinpkg/_C.so": extension(tmp / "pin", "pinpkg._C", links={})})
    index.start()
    yield index
    index.stop()


@pytest.fixture(autouse=True)
def _fresh(idx: LocalIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test reads from the index (nothing kept from another), with the index behaving unless it says otherwise."""
    monkeypatch.setenv("TRITONLOCK_NATIVE_CACHE", str(tmp_path / "facts"))
    monkeypatch.setenv("UV_NO_CACHE", "1")  # (a wheel uv unpacked would be read there, not from the index)
    idx.hook = None
    yield
    idx.hook = None


def _file(idx: LocalIndex, name: str) -> tuple[str, int, str, str]:
    from tritonlock.lock.index import project_files

    (f,) = [f for f in project_files(idx.index_url("simple"), name) if f.filename.endswith(".whl")]
    assert f.size is not None and f.sha256
    return f.url, f.size, f.sha256, f.filename


def _read(idx: LocalIndex, name: str = "hostpkg", seconds: float = 60, **kw: Any) -> native.NativeFacts:
    from tritonlock.lock.index import session

    url, size, sha, filename = _file(idx, name)
    return native.read_remote(url, size, sha, filename, session=watched(session()), gpu=True,
                              deadline=Deadline(at=time.monotonic() + seconds, what=f"the test's {seconds} s"), **kw)


def _range(h: Any) -> tuple[int, int] | None:
    m = re.fullmatch(r"bytes=(\d+)-(\d+)", h.headers.get("Range", ""))
    return (int(m[1]), int(m[2])) if m else None


def _ours(h: Any) -> bool:
    """A request of tritonlock's (not uv's own reads of the index)."""
    return not h.headers.get("User-Agent", "").startswith("uv/")


def _answer(h: Any, status: int, body: bytes, headers: dict[str, str] | None = None) -> bool:
    h.send_response(status)
    for k, v in (headers if headers is not None else {"Content-Length": str(len(body))}).items():
        h.send_header(k, v)
    h.end_headers()
    if h.command != "HEAD":
        try:
            h.wfile.write(body)
        except OSError:
            pass
    return True


def no_range(h: Any, name: str, data: bytes) -> bool:
    """As a static file server: Range is not looked at, every GET gets the whole file (for every client, uv too)."""
    return _answer(h, 200, data)


def _ranged_only(answer: Callable[[Any, bytes, int, int], bool]) -> Callable[[Any, str, bytes], bool]:
    """A hook that answers tritonlock's Range requests for hostpkg's wheel so (a whole-file GET is served right)."""
    def hook(h: Any, name: str, data: bytes) -> bool:
        rng = _range(h)
        if rng is None or not name.startswith("hostpkg") or not _ours(h):
            return False
        return answer(h, data, *rng)
    return hook


def _cr(a: int, b: int, size: int) -> dict[str, str]:
    return {"Content-Range": f"bytes {a}-{b}/{size}", "Content-Length": str(b - a + 1)}


# what each wrong answer is first found as (the source of the facts read whole says it)
FIRST_CAUSE = {
    "HTTP 500": r"with HTTP 500 \(3 tries\)",
    "another range than asked": r"of a [0-9]+-byte file with Content-Range 'bytes 0-",
    "no Content-Range": r"with no Content-Range",
    "another file's size": r"of a [0-9]+-byte file with Content-Range 'bytes [0-9]+-[0-9]+/[0-9]+'",
    # (the test's wheel is smaller than the end read: that first read, of the whole file, is right by chance)
    "the right header over the wrong bytes": r"the local header where the wheel's directory puts it is of another "
                                             r"member",
    "a body longer than asked": r"with Content-Length [0-9]+, not [0-9]+",
    "a body cut short": r"the connection failed after [0-9]+ bytes",
    "a gzip-encoded body": r"encoded \(gzip\), not as the file's own bytes",
}

BROKEN_RANGES: dict[str, Callable[[Any, bytes, int, int], bool]] = {
    "HTTP 500": lambda h, d, a, b: _answer(h, 500, b"no"),
    "another range than asked": lambda h, d, a, b: _answer(h, 206, d[0:b - a + 1], _cr(0, b - a, len(d))),
    "no Content-Range": lambda h, d, a, b: _answer(h, 206, d[a:b + 1]),
    "another file's size": lambda h, d, a, b: _answer(h, 206, d[a:b + 1], {
        "Content-Range": f"bytes {a}-{b}/{len(d) + 7}", "Content-Length": str(b - a + 1)}),
    # the header right, the bytes from the file's start: the zip's own checks (end record, local headers, CRC-32)
    "the right header over the wrong bytes": lambda h, d, a, b: _answer(h, 206, d[:b - a + 1], _cr(a, b, len(d))),
    "a body longer than asked": lambda h, d, a, b: _answer(h, 206, d[a:] + b"x" * 100, {
        "Content-Range": f"bytes {a}-{b}/{len(d)}", "Content-Length": str(len(d) - a + 100)}),
    "a body cut short": lambda h, d, a, b: _answer(h, 206, d[a:a + (b - a) // 2], _cr(a, b, len(d))),
    "a gzip-encoded body": lambda h, d, a, b: _answer(h, 206, d[a:b + 1], {
        **_cr(a, b, len(d)), "Content-Encoding": "gzip"}),
}


def test_an_index_without_range_requests_gives_the_same_facts_from_the_whole_file(idx: LocalIndex) -> None:
    """A static file server answers a Range request with the whole file (HTTP 200): the wheel is downloaded whole
    (its sha256 checked) and read on disk — the same facts as by ranges, and the source says how they were read."""
    ranged = _read(idx)
    assert {m.path for m in ranged.members} == {"hostpkg/_C.so", "hostpkg/lib/libhelper.so"}
    assert ranged.source.endswith("by ranged reads")
    idx.hook = no_range
    whole = _read(idx)
    assert (whole.members, whole.provides, whole.built_for_torch, whole.problem) == (
        ranged.members, ranged.provides, ranged.built_for_torch, None)
    assert "downloaded whole (its sha256 checked; the index answered a request for bytes" in whole.source
    assert "with the whole file (HTTP 200): it does not answer HTTP Range requests" in whole.source


@pytest.mark.parametrize("how", list(BROKEN_RANGES))
def test_a_wrong_range_answer_is_a_failed_read_then_the_whole_file_is_read(idx: LocalIndex, how: str) -> None:
    """Every way an index answers a Range request wrongly is caught (none reads as "no native code"): the wheel
    is then downloaded whole and read — the same facts — and the source says what went wrong first."""
    ranged = _read(idx)
    idx.hook = _ranged_only(BROKEN_RANGES[how])
    got = _read(idx)
    assert got.members == ranged.members and got.problem is None, how
    assert "downloaded whole (its sha256 checked; " in got.source, got.source
    assert re.search(FIRST_CAUSE[how], got.source), got.source


def test_a_range_answer_is_read_to_the_bytes_asked_and_no_further(idx: LocalIndex) -> None:
    """A 206 whose body goes on without end (no Content-Length): the reader reads what it asked for, sees one byte
    more, and stops — a failed read, not an endless one."""
    from tritonlock.lock.index import session
    from tritonlock.native.remotezip import RemoteZip

    sent: list[int] = []

    def endless(h: Any, d: bytes, a: int, b: int) -> bool:
        h.send_response(206)
        h.send_header("Content-Range", f"bytes {a}-{b}/{len(d)}")
        h.end_headers()
        n = 0
        try:
            while n < 1 << 30:
                h.wfile.write(b"\0" * 65536)
                n += 65536
                sent.append(n)
        except OSError:
            pass
        return True

    idx.hook = _ranged_only(endless)
    url, size, _, _ = _file(idx, "hostpkg")
    z = RemoteZip(watched(session()), url, size, deadline=Deadline(at=time.monotonic() + 60, what="60 s"))
    with pytest.raises(ReadFailed, match=r"with more bytes than the 100 asked for"):
        z.read_range(0, 99)
    assert z.bytes_read == 100


@pytest.mark.parametrize("how", ["trickle", "stall", "slow headers"])
def test_a_slow_or_stalled_answer_ends_at_the_deadline(idx: LocalIndex, how: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow loris (a byte every 50 ms, for ever), an answer that sends its headers and then nothing, and one whose
    headers themselves trickle: the read ends at its deadline (a watchdog shuts the connection, whatever the read
    waits for), as OutOfTime naming it — where before it read on for as long as the server sent."""
    stop = threading.Event()

    def trickle(h: Any, name: str, data: bytes) -> bool:
        if not name.startswith("hostpkg") or not _ours(h):
            return False
        try:
            if how == "slow headers":
                for c in b"HTTP/1.1 206 Partial Content\r\nX-Slow: " + b"a" * 100000:
                    h.wfile.write(bytes([c]))
                    h.wfile.flush()
                    if stop.wait(0.05):
                        break
                return True
            h.send_response(200)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.flush()
            for i in range(len(data)):
                if stop.wait(0.05 if how == "trickle" else 3600):
                    break
                h.wfile.write(data[i:i + 1])
                h.wfile.flush()
        except OSError:
            pass
        return True

    monkeypatch.setenv("UV_HTTP_TIMEOUT", "600")  # (not the stall timeout: the deadline ends it)
    idx.hook = trickle
    done: list[BaseException] = []

    def run() -> None:
        try:
            _read(idx, seconds=2)
        except BaseException as err:  # noqa: BLE001
            done.append(err)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(120)  # (not a timing: unbounded, it would never end)
    stop.set()
    assert not t.is_alive(), f"the read of a {how} answer did not end"
    (err,) = done
    assert isinstance(err, OutOfTime), repr(err)
    assert "the test's 2 s ran out" in str(err)


def test_a_stall_ends_after_the_stall_time_and_is_tried_again(idx: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer that sends nothing for the stall time (uv's, UV_HTTP_TIMEOUT) is given up and asked again; an index
    that stalls every time is a failed read that says so."""
    asked: list[str] = []

    def stall(h: Any, name: str, data: bytes) -> bool:
        if not name.startswith("hostpkg") or not _ours(h):
            return False
        asked.append(h.headers.get("Range", "whole"))
        time.sleep(3)
        return True

    monkeypatch.setenv("UV_HTTP_TIMEOUT", "0.5")
    idx.hook = stall
    with pytest.raises(ReadFailed) as err:
        _read(idx)
    assert not isinstance(err.value, OutOfTime)
    assert re.fullmatch(r"the index sent nothing for 0.5 s \(3 tries\); then, downloading it whole: the index sent "
                        r"nothing for 0.5 s \(3 tries\)", str(err.value)), str(err.value)
    assert len(asked) == 3 + 3  # three tries of the directory's read, three of the download


def test_an_index_that_answers_nothing_well_is_a_failed_read_naming_both_causes(idx: LocalIndex) -> None:
    idx.hook = lambda h, name, data: name.startswith("hostpkg") and _ours(h) and _answer(h, 403, b"no")
    with pytest.raises(ReadFailed) as err:
        _read(idx)
    assert re.fullmatch(r"the index answered a request for bytes [0-9]+-[0-9]+ with HTTP 403; then, downloading it "
                        r"whole: the index answered a download of the whole file with HTTP 403", str(err.value)), err


def test_a_whole_download_of_other_bytes_gives_no_facts(idx: LocalIndex) -> None:
    """Without Range, the whole file is downloaded: where its bytes are not the sha256 the index lists, nothing read
    from them counts."""
    def other(h: Any, name: str, data: bytes) -> bool:
        if not name.startswith("hostpkg"):
            return False
        return _answer(h, 200, data[:-1] + bytes([data[-1] ^ 1]))

    idx.hook = other
    with pytest.raises(ReadFailed, match="the index serves other bytes than the sha256 its page lists"):
        _read(idx)


# --- hostile zips ---------------------------------------------------------------------------------------------

def _so(tmp: Path) -> bytes:
    return stub_library(tmp / "x", "libx.so", ("x",)).read_bytes()


def _zip(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytearray:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return bytearray(buf.getvalue())


def _eocd(data: bytearray) -> int:
    return data.rfind(b"PK\x05\x06")


def _cd_entry(data: bytearray, name: str) -> int:
    """Where the directory entry of `name` starts."""
    pos, = struct.unpack_from("<I", data, _eocd(data) + 16)
    while data[pos:pos + 4] == b"PK\x01\x02":
        nlen, elen, clen = struct.unpack_from("<HHH", data, pos + 28)
        if data[pos + 46:pos + 46 + nlen] == name.encode():
            return pos
        pos += 46 + nlen + elen + clen
    raise AssertionError(name)


def _wheel_file(tmp: Path, data: bytes) -> Path:
    p = tmp / "x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    p.write_bytes(bytes(data))
    return p


def _damaged(tmp: Path, how: str) -> bytes:
    so = _so(tmp)
    meta = b"Metadata-Version: 2.1\nName: x\nVersion: 1.0\n"
    d = _zip({"x/_C.so": so, "x/libk.so": so, "x-1.0.dist-info/METADATA": meta})
    e = _eocd(d)
    if how == "an entry count the directory does not hold":
        struct.pack_into("<HH", d, e + 8, 4, 4)
    elif how == "fewer entries than the directory holds":
        struct.pack_into("<HH", d, e + 8, 2, 2)
    elif how == "a directory offset that is not the directory's":
        cd_off, = struct.unpack_from("<I", d, e + 16)
        struct.pack_into("<I", d, e + 16, cd_off - 1)
    elif how == "bytes after the end record":
        d += b"junk"
    elif how == "two entries at one offset (a member inside another)":
        c = _cd_entry(d, "x/libk.so")
        struct.pack_into("<I", d, c + 42, struct.unpack_from("<I", d, _cd_entry(d, "x/_C.so") + 42)[0])
    elif how == "a name twice":
        d = bytearray(bytes(_zip({"x/_C.so": so, "x/_D.so": so})).replace(b"x/_D.so", b"x/_C.so"))
    elif how == "a member past the directory's start":
        c = _cd_entry(d, "x/libk.so")
        struct.pack_into("<I", d, c + 42, struct.unpack_from("<I", d, e + 16)[0] - 10)
    elif how == "an encrypted member":
        c = _cd_entry(d, "x/_C.so")
        struct.pack_into("<H", d, c + 8, 1)
    elif how == "a member whose bytes are not its CRC-32":
        c = _cd_entry(d, "x/_C.so")
        struct.pack_into("<I", d, c + 16, struct.unpack_from("<I", d, c + 16)[0] ^ 1)
    elif how == "a member that inflates past its size":
        c = _cd_entry(d, "x/_C.so")
        struct.pack_into("<I", d, c + 24, len(so) - 100)
    elif how == "a member that inflates short of its size":
        c = _cd_entry(d, "x/_C.so")
        struct.pack_into("<I", d, c + 24, len(so) + 100)
    elif how == "a local header of another member":
        d = bytearray(bytes(d).replace(b"x/_C.so", b"x/_D.so", 1))  # (the local header's name; the directory's kept)
    elif how == "a stored member whose sizes differ":
        d = _zip({"x/_C.so": so, "x-1.0.dist-info/METADATA": meta}, zipfile.ZIP_STORED)
        c = _cd_entry(d, "x/_C.so")
        struct.pack_into("<I", d, c + 24, len(so) + 1)
    elif how == "no end record":
        d = d[:e]
    elif how == "an ELF file that cannot be read as one":
        d = _zip({"x/_C.so": b"\x7fELF" + b"\xff" * 60, "x-1.0.dist-info/METADATA": meta})
    else:
        raise AssertionError(how)
    return bytes(d)


DAMAGE = {
    "an entry count the directory does not hold": r"its directory holds 3 entries where its end record says 4",
    "fewer entries than the directory holds": r"its directory has [0-9]+ bytes after the 2 entries its end record says",
    "a directory offset that is not the directory's": r"its end record says the directory spans bytes [0-9]+-[0-9]+, "
                                                      r"and the end record itself is at [0-9]+",
    "bytes after the end record": r"no zip end-of-central-directory record at the file's end",
    "two entries at one offset (a member inside another)": r"its members x/_C.so and x/libk.so overlap",
    "a name twice": r"two entries are named x/_C.so",
    "a member past the directory's start": r"x/libk.so: its directory entry puts its [0-9]+ bytes at [0-9]+, past "
                                           r"where the directory starts",
    "an encrypted member": r"x/_C.so is encrypted",
    "a member whose bytes are not its CRC-32": r"x/_C.so: its bytes do not have the CRC-32 its zip directory entry "
                                               r"states",
    "a member that inflates past its size": r"x/_C.so inflates past the [0-9]+ bytes the wheel's zip directory says",
    "a member that inflates short of its size": r"x/_C.so inflates to [0-9]+ bytes, not the [0-9]+ the wheel's zip "
                                                r"directory says",
    "a local header of another member": r"x/_C.so: the local header where the wheel's directory puts it is of another "
                                        r"member \(b'x/_D.so', method 8\)",
    "a stored member whose sizes differ": r"x/_C.so is stored, and its directory entry gives it [0-9]+ bytes stored, "
                                          r"[0-9]+ in all",
    "no end record": r"no zip end-of-central-directory record at the file's end",
    "an ELF file that cannot be read as one": r"x/_C.so starts as an ELF file and cannot be read as one \(not an ELF "
                                              r"file it can read",
}


@pytest.mark.parametrize("how", list(DAMAGE))
def test_a_zip_whose_directory_disagrees_with_the_file_is_a_failed_read(tmp_path: Path, how: str) -> None:
    """Each way a zip's directory can disagree with its bytes (its entry count, its extent, its sizes, its CRC-32, a
    member inside another, a local header not where or not what it says) is ZipBroken naming what — from the disk
    as from an index — never facts that say "no native code"."""
    data = _damaged(tmp_path, how)
    with pytest.raises(ZipBroken) as err:
        native.read_file(_wheel_file(tmp_path, data), "0" * 64)
    assert re.fullmatch(DAMAGE[how], str(err.value)) or re.match(DAMAGE[how], str(err.value)), str(err.value)


def test_an_intact_zip_reads(tmp_path: Path) -> None:
    """(The damage above is what fails: the same wheel intact reads, both members.)"""
    so = _so(tmp_path)
    d = _zip({"x/_C.so": so, "x/libk.so": so, "x-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: x\n"})
    got = native.read_file(_wheel_file(tmp_path, d), "0" * 64)
    assert [m.path for m in got.members] == ["x/_C.so", "x/libk.so"] and got.problem is None


def _bomb(tmp: Path, usize: int, csize_of: Callable[[int], int] | None = None) -> bytes:
    """A wheel whose one shared object declares (honestly or not) `usize` bytes: an ELF header and zeros."""
    import zlib

    head = _so(tmp)[:64]
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = comp.compress(head)
    left = usize - len(head)
    block = b"\0" * (1 << 24)
    while left > 0:
        body += comp.compress(block[:min(left, len(block))])
        left -= len(block)
    body += comp.flush()
    out = io.BytesIO()
    name = b"x/_C.so"
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, 0, len(body), usize, len(name), 0) + name
    out.write(local + body)
    cd_off = out.tell()
    out.write(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, 0, len(body), usize, len(name),
                          0, 0, 0, 0, 0, 0) + name)
    cd_size = out.tell() - cd_off
    out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, cd_size, cd_off, 0))
    return out.getvalue()


def test_a_zip_bomb_declared_honestly_is_refused_before_it_is_inflated(tmp_path: Path) -> None:
    """A 2 MB wheel whose library inflates to 2 GB of zeros, as its directory says: refused from the directory alone
    (more than 100 times its compressed size), in no time and no memory — it took 3–4 GB before."""
    data = _bomb(tmp_path, 2 << 30)
    assert len(data) < 3 << 20
    with pytest.raises(ZipBroken, match=r"x/_C.so would inflate [0-9]+ times over .*: a zip bomb, not read"):
        native.read_file(_wheel_file(tmp_path, data), "0" * 64)


def test_a_member_that_inflates_past_what_it_declares_is_stopped_there(tmp_path: Path) -> None:
    """The same zeros under a declared size of 1 MB: inflating stops a piece past 1 MB (ZipBroken), not at 64 MB."""
    data = _bomb(tmp_path, 64 << 20)
    d = bytearray(data)
    e = _eocd(d)
    c, = struct.unpack_from("<I", d, e + 16)
    struct.pack_into("<I", d, c + 24, 1 << 20)
    struct.pack_into("<I", d, 22, 1 << 20)
    with pytest.raises(ZipBroken, match=r"x/_C.so inflates past the 1048576 bytes"):
        native.read_file(_wheel_file(tmp_path, d), "0" * 64)


def test_what_a_read_keeps_in_memory_is_bounded_and_a_library_past_it_is_read_on_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reads under way keep at most KEPT_MAX bytes of the libraries they stream; a library whose parts do not fit
    is read again from a temporary file — the same facts (here with a budget of 1 kB: nothing fits)."""
    so = extension(tmp_path / "e", "x._C", links={stub_library(tmp_path / "rt", "libcudart.so.12", ("f",)): ("f",)})
    whl = _wheel_file(tmp_path, _zip({"x/_C.so": so, "x-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\n"}))
    roomy = native.read_file(whl, "0" * 64)
    tight = members._Kept(1024)
    monkeypatch.setattr(members, "KEPT", tight)
    again: list[str] = []
    real = members.read_span

    def spy(pieces: Any, start: int, wanted: Any, gpu: bool, *, whole: bool = False) -> Any:
        if whole:
            again.extend(w.name for w in wanted)
        return real(pieces, start, wanted, gpu, whole=whole)

    monkeypatch.setattr(members, "read_span", spy)
    assert native.read_file(whl, "0" * 64) == roomy
    assert again == ["x/_C.so"] and tight.used == 0  # (read on disk; every byte granted given back)
    assert members.KEPT_MAX <= 256 << 20


def test_the_directory_reader_takes_zip64_and_long_comments(tmp_path: Path) -> None:
    """(The checks do not refuse what zips legitimately are: a zip64 end record, the longest comment.)"""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", allowZip64=True) as z:
        for i in range(70000):  # more entries than a plain end record counts: a zip64 one
            z.writestr(f"d/{i}", b"")
        z.comment = b"c" * 65535
    data = buf.getvalue()
    got, crcs = directory(lambda a, b: data[a:b + 1], len(data))
    assert len(got) == 70000 and len(crcs) == 70000


# --- the resolve ----------------------------------------------------------------------------------------------

def _project(root: Path, idx: LocalIndex, extra: str = "", driver: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    target = 'driver = "580.95.05"\ngpus = ["9.0"]' if driver else "gpus = []"
    (root / "triton-env.toml").write_text(
        f'[environment]\npython = "3.11"\npackages = ["hostpkg"]\ntorch = "==2.10.*"\n{extra}'
        f'[indexes]\ntorch = "default"\ndefault = "{idx.index_url("simple")}"\n'
        f'\n[[targets]]\nname = "{"gpu" if driver else "laptop"}"\nglibc = "2.35"\n{target}\n', encoding="utf-8")
    return root


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def _tritonlock_cannot_read_hostpkg(h: Any, name: str, data: bytes) -> bool:
    """An index whose every answer to tritonlock for hostpkg's wheel is HTTP 500 (uv is served)."""
    return name.startswith("hostpkg") and _ours(h) and _answer(h, 500, b"no")


def test_a_range_less_index_gives_the_same_answer(idx: LocalIndex, tmp_path: Path) -> None:
    """The issue's case: on a driverless target hostpkg's native code cannot load (it needs libcuda.so.1). An index
    that answers HTTP Range says so (exit 3); a static file server that does not answer it says the same — where
    before the read failed in silence, and resolve exited 0 with no [[native]] table."""
    root = _project(tmp_path / "ranged", idx, driver=False)
    code, ranged = _run("resolve", "-p", str(root))
    assert code == 3, ranged
    assert "error: target 'laptop': hostpkg's native code cannot load on this target: hostpkg 1.0: hostpkg/_C.so " \
           "in hostpkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl needs libcuda.so.1" in ranged, ranged
    idx.hook = no_range
    root = _project(tmp_path / "static", idx, driver=False)
    code, static = _run("resolve", "-p", str(root))
    assert code == 3, static
    assert static == ranged
    # and on a GPU box both lock it, its facts read (the same [[native]] tables)
    idx.hook = None
    a = _project(tmp_path / "a", idx)
    assert _run("resolve", "-p", str(a))[0] == 0
    idx.hook = no_range
    b = _project(tmp_path / "b", idx)
    assert _run("resolve", "-p", str(b))[0] == 0
    native_a = [(f.sha256, f.members) for f in read_lock(a / "triton-env.lock").native]
    assert any(m for _, m in native_a) and native_a == [(f.sha256, f.members)
                                                        for f in read_lock(b / "triton-env.lock").native]


def test_a_wheel_whose_facts_cannot_be_read_fails_the_resolve_naming_it(idx: LocalIndex, tmp_path: Path) -> None:
    """Ranged reads and a whole download both refused: resolve exits 4 naming the wheel, the package and target, and
    both causes, says how to go on, and writes nothing (before: exit 0, no word, no [[native]] table)."""
    idx.hook = _tritonlock_cannot_read_hostpkg
    root = _project(tmp_path, idx)
    code, out = _run("resolve", "-p", str(root))
    assert code == 4, out
    assert "error: the native code of 1 wheel could not be read, so whether it loads on the target is not known" in out
    assert ("  hostpkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl (hostpkg 1.0, target 'gpu'): the index answered a "
            "request for bytes ") in out, out
    assert "with HTTP 500 (3 tries); then, downloading it whole: the index answered a download of the whole file " \
           "with HTTP 500 (3 tries)" in out, out
    assert "--allow-unchecked-native" in out and "Traceback" not in out
    assert not (root / "triton-env.lock").exists()


def test_allowed_a_wheel_that_cannot_be_read_is_locked_unchecked_and_every_command_says_so(
        idx: LocalIndex, tmp_path: Path) -> None:
    """--allow-unchecked-native: the lock is written, the wheel's [[native]] table says `unchecked` and why (the lock
    is 3.2, so an older tritonlock warns that it reads only what it knows), resolve and show warn, show marks the
    package, check says the native code of it was NOT checked (text and --json), and verify is told to import it."""
    idx.hook = _tritonlock_cannot_read_hostpkg
    root = _project(tmp_path, idx)
    code, out = _run("resolve", "-p", str(root), "--allow-unchecked-native")
    assert code == 0, out
    assert "warning: hostpkg 1.0: its native code was NOT checked — hostpkg-1.0-cp311-cp311-manylinux_2_17_x86_64." \
           "whl could not be read (the index answered" in out, out
    text = (root / "triton-env.lock").read_text(encoding="utf-8")
    from tritonlock import LOCK_VERSION
    from tritonlock.lock.lockfile import UNCHECKED_LOCK_VERSION

    assert f'\nlock-version = "{UNCHECKED_LOCK_VERSION}"\n' in text and UNCHECKED_LOCK_VERSION > LOCK_VERSION
    lock = read_lock(root / "triton-env.lock")
    (f,) = [f for f in lock.native if f.filename.startswith("hostpkg")]
    assert f.problem and "HTTP 500" in f.problem and f.members == ()
    assert '\nunchecked = "the index answered a request for bytes ' in text
    code, shown = _run("show", "-p", str(root))
    assert code == 0 and re.search(r"\n  hostpkg +1\.0 .*\(native code NOT checked: its wheel could not be read\)",
                                   shown), shown
    assert "its native code was NOT checked" in shown
    code, shown_json = _run("show", "-p", str(root), "--json")
    (t,) = json.loads(shown_json)["targets"]
    assert [u["name"] for u in t["unchecked_native"]] == ["hostpkg"]
    code, checked = _run("check", "-p", str(root))
    assert code == 0, checked
    assert "warning: target 'gpu': hostpkg 1.0's native code was NOT checked (hostpkg-1.0-" in checked, checked
    assert "; the native code of 1 locked package NOT checked (hostpkg)" in checked, checked
    code, checked_json = _run("check", "-p", str(root), "--json")
    (u,) = json.loads(checked_json)["unchecked_native"]
    assert (u["target"], u["name"], u["version"]) == ("gpu", "hostpkg", "1.0") and "HTTP 500" in u["why"]
    from tritonlock.cli.cmd_env import _native_args

    assert "hostpkg" in _native_args(lock, lock.targets[0])["imports"]
    # and a lock whose facts were all read says none of it
    idx.hook = None
    clean = _project(tmp_path / "clean", idx)
    assert _run("resolve", "-p", str(clean))[0] == 0
    code, checked = _run("check", "-p", str(clean))
    assert code == 0 and "NOT checked" not in checked and "unchecked" not in checked
    assert f'\nlock-version = "{LOCK_VERSION}"\n' in (clean / "triton-env.lock").read_text(encoding="utf-8")
    assert json.loads(_run("check", "-p", str(clean), "--json")[1])["unchecked_native"] == []


@pytest.mark.parametrize("allowed, code", [("true", 0), ('["hostpkg"]', 0), ('["otherpkg"]', 4), ("false", 4)])
def test_the_intents_allow_unchecked_native_key(idx: LocalIndex, tmp_path: Path, allowed: str, code: int) -> None:
    """[environment] allow-unchecked-native: true, or a list naming the package, allows it; a list without it, or
    false, does not."""
    idx.hook = _tritonlock_cannot_read_hostpkg
    root = _project(tmp_path, idx, extra=f"allow-unchecked-native = {allowed}\n")
    got, out = _run("resolve", "-p", str(root))
    assert got == code, out
    assert (root / "triton-env.lock").exists() == (code == 0)


# --- the folders tritonlock keeps answers in, and local files: only regular files, and only so much ------------

def _planted(path: Path, kind: str) -> None:
    """A FIFO nobody writes to, a link to /dev/zero, or a 2 GB (sparse) file at `path`."""
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "/dev/zero":
        path.symlink_to("/dev/zero")
    else:
        with open(path, "wb") as fh:
            fh.truncate(2 << 30)


def _ends(fn: Callable[[], Any]) -> Any:
    """fn's answer, from a thread (a read that waits on a FIFO, or reads /dev/zero, would never end)."""
    got: list[Any] = []
    t = threading.Thread(target=lambda: got.append(fn()), daemon=True)
    t.start()
    t.join(60)  # (not a timing: an unbounded read never ends)
    assert not t.is_alive(), "the read did not end"
    return got[0] if got else None


KINDS = ["fifo", "/dev/zero", "2 GB"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_planted_file_in_the_fact_cache_is_passed_over(tmp_path: Path, kind: str) -> None:
    """The binary facts kept per sha256 (and the integrity check's METADATA beside them): a FIFO, a link to
    /dev/zero or a 2 GB file where one is kept is no answer — never waited on, never read whole."""
    from tritonlock.lock.integrity import kept_metadata

    sha = "ab" * 32
    _planted(native.cache_dir() / f"{sha}.json", kind)
    _planted(native.cache_dir() / f"{sha}.metadata.json", kind)
    assert _ends(lambda: native.cached(sha, gpu=True)) is None
    assert _ends(lambda: kept_metadata(sha)) is None


@pytest.mark.parametrize("kind", KINDS)
def test_a_planted_file_in_the_check_cache_is_passed_over(tmp_path: Path, kind: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A passing check's answer is kept under the hash of its inputs (tritonlock._kept): a FIFO, a link to /dev/zero
    or a 2 GB file there makes `check` answer in full, not hang or take gigabytes (the attack run's finding)."""
    from tritonlock import _kept

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "triton-env.toml").write_text('[environment]\npython = "3.11"\n', encoding="utf-8")
    (tmp_path / "p" / "triton-env.lock").write_text("# a lock\n", encoding="utf-8")
    key = _kept.check_key(str(tmp_path / "p"), False)
    assert key is not None
    _planted(Path(_kept._folder()) / f"{key}.txt", kind)
    assert _ends(lambda: _kept.cached_check(str(tmp_path / "p"), False)) is None


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_file_url_to_a_fifo_or_a_device_is_refused_not_waited_on(tmp_path: Path, kind: str) -> None:
    """A `file:` wheel (`pkg @ file:///…whl`) that is a FIFO or a link to a device: its facts' read, and the
    integrity check's, refuse it at once."""
    from tritonlock.lock.integrity import _check_file
    from tritonlock.models import LockedPackage, Wheel

    path = tmp_path / "x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    _planted(path, kind)

    def read() -> BaseException | None:
        try:
            native.read_remote(path.as_uri(), None, "0" * 64, path.name, session=None, gpu=True)
        except OSError as err:
            return err
        return None

    err = _ends(read)
    assert isinstance(err, OSError) and "is not a regular file" in str(err), err
    w = Wheel(name=path.name, url=path.as_uri(), sha256="0" * 64, size=None)
    checked = _ends(lambda: _check_file(LockedPackage(name="x", version="1.0", index=path.as_uri(), wheels=(w,)),
                                        w, 64 << 20, None))  # type: ignore[arg-type]
    assert checked.unchecked and "could not be checked" in checked.unchecked and "not a regular file" in \
        checked.unchecked


def test_a_fifo_in_uvs_cache_is_passed_over(tmp_path: Path) -> None:
    """uv's pointer files (and an unpacked wheel's RECORD) as FIFOs: the wheel is not found there (the index is read
    instead), and nothing waits."""
    from tritonlock.native import uvcache

    cache = tmp_path / "uv"
    (cache / "archive-v0").mkdir(parents=True)
    _planted(cache / "wheels-v5" / "pypi" / "x" / "1.0-cp311-cp311-manylinux_2_17_x86_64.http", "fifo")
    assert _ends(lambda: uvcache.Pointers(cache).find("x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", "0" * 64)) is None
    folder = cache / "archive-v0" / "abc"
    _planted(folder / "x-1.0.dist-info" / "RECORD", "fifo")
    assert _ends(lambda: uvcache.read(folder, "0" * 64, "x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl")) is None


def test_the_resolves_deadline_ends_a_slow_index_with_exit_4_naming_it(idx: LocalIndex, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """An index that trickles hostpkg's bytes to tritonlock for ever: the reads of one resolve end at
    TRITONLOCK_NATIVE_TIMEOUT, and resolve exits 4 naming the wheel and that deadline (before: a stalled read was
    tried for 6 minutes, a trickling one for as long as it trickled)."""
    stop = threading.Event()

    def trickle(h: Any, name: str, data: bytes) -> bool:
        if not name.startswith("hostpkg") or not _ours(h):
            return False
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        try:
            for i in range(len(data)):
                if stop.wait(0.05):
                    break
                h.wfile.write(data[i:i + 1])
        except OSError:
            pass
        return True

    monkeypatch.setenv("TRITONLOCK_NATIVE_TIMEOUT", "3")
    idx.hook = trickle
    try:
        root = _project(tmp_path, idx)
        code, out = _run("resolve", "-p", str(root))
    finally:
        stop.set()
    assert code == 4, out
    assert "hostpkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl (hostpkg 1.0, target 'gpu'): " in out, out
    assert "the 3 s allowed for reading the wheels of one resolve ($TRITONLOCK_NATIVE_TIMEOUT) ran out" in out, out


def test_a_dry_run_that_decides_the_packages_says_an_unread_wheel_too(idx: LocalIndex, tmp_path: Path) -> None:
    """`resolve --dry-run --packages` decides as resolve does: an unreadable locked wheel is exit 4 there too, and
    --allow-unchecked-native lets it through."""
    idx.hook = _tritonlock_cannot_read_hostpkg
    root = _project(tmp_path, idx)
    code, out = _run("resolve", "-p", str(root), "--dry-run", "--packages")
    assert code == 4 and "hostpkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl (hostpkg 1.0, target 'gpu')" in out, out
    code, out = _run("resolve", "-p", str(root), "--dry-run", "--packages", "--allow-unchecked-native")
    assert code == 0 and "hostpkg 1.0: its native code was NOT checked" in out, out


def test_reading_a_large_hostile_library_stays_under_512_mb(tmp_path: Path) -> None:
    """A 600 MB library (compressed 20-40 times, so no zip bomb) whose ELF header asks the streaming pass to keep
    everything (no section count: "to the end"): the pass keeps 256 MiB at most, the library is read again from a
    temporary file, and the process's peak memory stays under 512 MB (before: the whole library was kept)."""
    import os
    import random
    import subprocess
    import sys
    import zlib

    head = bytearray(_so(tmp_path)[:64])
    struct.pack_into("<QIHHHHHH", head, 40, 64, 0, 64, 56, 0, 64, 0, 0)  # e_shoff 64, e_phnum 0, e_shnum 0
    usize = 600 << 20
    rnd = random.Random(5)
    name = b"x/_C.so"
    path = tmp_path / "x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    comp = zlib.compressobj(1, zlib.DEFLATED, -15)
    crc, csize = zlib.crc32(bytes(head)), 0
    with open(path, "wb") as fh:
        local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, 0, 0, usize, len(name), 0) + name
        fh.write(local)
        out_piece = comp.compress(bytes(head))
        left = usize - len(head)
        while left > 0:  # 1 MiB pieces of zeros with 12,000 random bytes each: about 30 times compressible
            block = bytearray(min(left, 1 << 20))
            for _ in range(12000):
                block[rnd.randrange(len(block))] = rnd.randrange(256)
            crc = zlib.crc32(block, crc)
            out_piece += comp.compress(bytes(block))
            fh.write(out_piece)
            csize += len(out_piece)
            out_piece = b""
            left -= len(block)
        tail = comp.flush()
        fh.write(tail)
        csize += len(tail)
        cd_off = fh.tell()
        entry = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc, csize, usize,
                            len(name), 0, 0, 0, 0, 0, 0) + name
        fh.write(entry)
        fh.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(entry), cd_off, 0))
        fh.seek(14)
        fh.write(struct.pack("<II", crc, csize))
    assert members.BOMB_RATIO * csize > usize > 20 * csize  # (not refused as a bomb: it is read)
    # (the peak of the child's own memory: VmHWM, which exec starts afresh — ru_maxrss would carry this process's)
    code = ("import re; from pathlib import Path; from tritonlock.native import read; "
            f"f = read.read_file(Path({str(path)!r}), '0' * 64); "
            "hwm = re.search(r'VmHWM:\\s*([0-9]+) kB', open('/proc/self/status').read())[1]; "
            "print(len(f.members), f.members[0].gpu, hwm)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "TMPDIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    n, gpu, peak_kb = out.stdout.split()
    assert n == "1" and int(peak_kb) < 512 * 1024, out.stdout


def test_the_inflation_bounds_refuse_a_wheel_from_its_directory_at_their_edges() -> None:
    """MEMBER_MAX, METADATA_MAX, WHEEL_MAX and the bomb ratio, each at its edge: at the bound a wheel is read, one
    byte past it refused before a byte is inflated — and a small member (under BOMB_FLOOR) may be all zeros."""
    def wanted(**members: tuple[int, int]) -> list[Any]:
        return members_mod.wanted_members({n.replace("__", "/").replace("_so", ".so"): (8, c, u, i * 100)
                                           for i, (n, (c, u)) in enumerate(members.items())})

    members_mod = members
    floor, ratio = members.BOMB_FLOOR, members.BOMB_RATIO
    assert wanted(x___C_so=(1, floor))  # small: any ratio
    assert wanted(x___C_so=((floor + 1) // ratio + 1, floor + 1))
    with pytest.raises(ZipBroken, match="a zip bomb, not read"):
        wanted(x___C_so=(floor // ratio, floor + 1))
    assert wanted(x___C_so=(members.MEMBER_MAX // 2, members.MEMBER_MAX))
    with pytest.raises(ZipBroken, match=r"x/_C.so would inflate to [0-9]+ bytes, more than the 4096 MiB read of it"):
        wanted(x___C_so=(members.MEMBER_MAX // 2, members.MEMBER_MAX + 1))
    meta = {"x-1.0.dist-info/METADATA": (8, members.METADATA_MAX // 50, members.METADATA_MAX, 0)}
    assert members.wanted_members(meta)
    with pytest.raises(ZipBroken, match="more than the 8 MiB read of it"):
        members.wanted_members({"x-1.0.dist-info/METADATA": (8, members.METADATA_MAX, members.METADATA_MAX + 1, 0)})
    four = {f"x/_{i}.so": (8, 1 << 30, members.WHEEL_MAX // 4, i * 100) for i in range(4)}
    assert members.wanted_members(four)
    assert members.WHEEL_MAX // 4 <= members.MEMBER_MAX
    four["x/_4.so"] = (8, 1, 1, 400)
    with pytest.raises(ZipBroken, match="more than the 16 GiB read of one wheel"):
        members.wanted_members(four)


def _member_zip(tmp: Path, stream: bytes, usize: int, crc: int) -> Path:
    """A wheel of one deflated library whose compressed bytes are `stream`, as its entries say."""
    name = b"x/_C.so"
    out = io.BytesIO()
    out.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(stream), usize, len(name), 0)
              + name + stream)
    cd_off = out.tell()
    entry = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc, len(stream), usize, len(name),
                        0, 0, 0, 0, 0, 0) + name
    out.write(entry + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(entry), cd_off, 0))
    return _wheel_file(tmp, out.getvalue())


@pytest.mark.parametrize("how", ["bytes after its deflate stream", "its deflate stream cut short"])
def test_a_deflate_stream_that_is_not_the_members_extent_is_a_failed_read(tmp_path: Path, how: str) -> None:
    import zlib

    so = _so(tmp_path)
    comp = zlib.compressobj(6, zlib.DEFLATED, -15)
    stream = comp.compress(so) + comp.flush()
    if how == "bytes after its deflate stream":
        path, said = _member_zip(tmp_path, stream + b"more", len(so), zlib.crc32(so)), "goes on past the end"
    else:
        path, said = _member_zip(tmp_path, stream[:-3], len(so), zlib.crc32(so)), "ends before its deflate stream"
    with pytest.raises(ZipBroken, match=said):
        native.read_file(path, "0" * 64)
    assert native.read_file(_member_zip(tmp_path, stream, len(so), zlib.crc32(so)), "0" * 64).members


def test_a_requests_deadline_grows_with_what_it_asks_for_and_the_resolves_comes_first() -> None:
    """A request ends after 30 s and a second per 256 KiB it asks for (a stalled or trickling answer ends there),
    counted from when it is made — a read that waits its turn behind a large wheel's is not cut short for it — or at
    the resolve's deadline where that is sooner."""
    from tritonlock.native.remotezip import request_deadline

    now = time.monotonic()
    small, big = request_deadline(1000), request_deadline(256 << 20)
    assert 29 <= small.at - now <= 31 and small.what == "the 30 s allowed for a request of 1000 bytes"
    assert 30 + 1024 - 1 <= big.at - now <= 30 + 1024 + 1 and big.what == ("the 1054 s allowed for a request of "
                                                                           "268.4 MB")
    soon = Deadline(at=now + 5, what="the resolve's")
    assert request_deadline(256 << 20, soon) is soon
    assert request_deadline(1000, Deadline(at=now + 3600, what="x")).what == small.what


def test_the_intents_allow_unchecked_native_must_be_a_bool_or_names(tmp_path: Path) -> None:
    from tritonlock.errors import IntentError
    from tritonlock.intent.read import parse_intent

    for good, want in (("true", True), ("false", False), ('["HostPkg", "a_b"]', ("a-b", "hostpkg"))):
        got = parse_intent(f'[environment]\nallow-unchecked-native = {good}\n', "triton-env.toml")
        assert got.allow_unchecked_native == want
    for bad in ('"yes"', "1", '["not a name!"]'):
        with pytest.raises(IntentError, match=r"triton-env.toml:2: environment.allow-unchecked-native"):
            parse_intent(f'[environment]\nallow-unchecked-native = {bad}\n', "triton-env.toml")
    # not part of the intent's hash: allowing it does not make a lock stale
    a = parse_intent('[environment]\npython = "3.11"\n', "t.toml")
    b = parse_intent('[environment]\npython = "3.11"\nallow-unchecked-native = true\n', "t.toml")
    assert a.content_hash == b.content_hash


def test_a_conflict_while_a_wheel_was_unread_is_exit_4_and_an_unread_wheel_not_locked_a_warning() -> None:
    """unread_native on its own: a wheel the decision asked for and could not read, not locked — with a target in
    conflict that is a failed resolve (the conflict may be the unread facts' doing); with every target locked it is a
    warning naming it. A wheel never asked for (a guess) says nothing."""
    from tritonlock.models import Conflict, Intent, NativeFacts, Selection, TargetSpec
    from tritonlock.native.read import Reader
    from tritonlock.native.unread import unread_native

    reader = Reader()
    try:
        reader.read["ab" * 32] = NativeFacts(sha256="ab" * 32, filename="old-1.0-cp311-cp311-manylinux_2_17_x86_64.whl",
                                             problem="the index answered … with HTTP 500")
        reader.read["cd" * 32] = NativeFacts(sha256="cd" * 32, filename="guess-1.0-py3-none-manylinux_2_17_x86_64.whl",
                                             problem="HTTP 500")
        reader.asked.add("ab" * 32)
        intent = Intent(path="t.toml", content_hash="")
        ok = Selection(target=TargetSpec(name="gpu", os="linux", arch="x86_64"), ok=True)
        bad = Selection(target=TargetSpec(name="laptop", os="linux", arch="x86_64"), ok=False,
                        conflict=Conflict(target="laptop", message="…"))
        out, notes, error = unread_native([(ok, ())], reader, intent, False)
        assert error is None and out == [(ok, ())]
        (note,) = notes
        assert note.startswith("old-1.0-cp311-cp311-manylinux_2_17_x86_64.whl: its native code could not be read (")
        out, notes, error = unread_native([(ok, ()), (bad, ())], reader, intent, False)
        assert error is not None and error.exit_code == 4
        assert "old-1.0-cp311-cp311-manylinux_2_17_x86_64.whl (a release the decision weighed, which ended in a " \
               "conflict)" in str(error) and "guess-1.0" not in str(error)
        assert unread_native([(ok, ()), (bad, ())], reader, intent, True)[2] is None
    finally:
        reader.close()


def test_a_fatbin_of_more_entries_than_the_walk_records_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fatbin container whose entries (48 bytes each, no payload) go on and on: the streaming walk records
    _MAX_ENTRIES at most (each recorded entry is memory) and then says Miss — the library is read again from a
    temporary file, where gpucode's walk keeps nothing per entry."""
    from tritonlock.native import stream
    from tritonlock.native.stream import FatbinScan, Miss

    monkeypatch.setattr(stream, "_MAX_ENTRIES", 1000)
    n = 3000
    entry = struct.pack("<HHIQ", 2, 0, 48, 0) + b"\0" * 12 + struct.pack("<I", 80) + b"\0" * 8 + struct.pack("<Q", 0)
    assert len(entry) == 48
    data = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, n * 48) + entry * n
    scan = FatbinScan()
    for i in range(0, len(data), 4096):
        scan.feed(i, data[i:i + 4096])
    scan.finish(len(data))
    assert sum(len(c.entries or ()) for c in scan.containers.values()) <= 1000 + 4096 // 48 + 1
    with pytest.raises(Miss, match="entries: not walked"):
        scan.targets(0, len(data))
