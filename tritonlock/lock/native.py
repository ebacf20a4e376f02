"""Native code in locked wheels, read without installing: for each extension module and bundled library, the shared
libraries it needs (ELF DT_NEEDED), whether it links torch's C++ API (one torch version) or its stable ABI, the GPU
code its fatbins carry; for each wheel, the libraries it brings and the torch it was built for. Read from the index
with ranged reads (the zip's central directory, then only the members and bytes needed) or from a file on disk, and
kept per file sha256 so that a later resolve reads nothing again."""

from __future__ import annotations

import io
import json
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from tritonlock.models import NativeFacts
from tritonlock.models import NativeMember as Member

# v2: a member's `gpu` says whether its GPU code was read ("read", "none", or why not)
_CACHE_VERSION = "native-v2"

# A Python extension module defines PyInit_<name>; anything else in the wheel ending in .so is a library it loads.
_SO = re.compile(r"\.so(\.[0-9]+)*\Z")
# torch's C++ API (c10::, at::, torch:: — mangled): an extension that calls into it is built for one torch release;
# one that calls only the stable C shim (aoti_torch_*, torch_* C functions; `*_stable_libtorch.abi3.so`) is not
_TORCH_CXX = re.compile(r"^_Z(?:N|NK|TV|TI|TS|ZN)?(?:N|K)?(?:3c10|2at|5torch)[0-9A-Z_]")
# libraries whose use means CUDA / HIP code: their members' GPU code is read
_GPU_LIB = re.compile(r"^lib(?:cudart|cuda|cublas|cublasLt|cufft|curand|cusolver|cusparse|nvrtc|nvJitLink|cudnn|nccl|"
                      r"torch_cuda|c10_cuda|amdhip64|torch_hip|c10_hip|rocblas|hipblas|MIOpen)[._]")
# Bytes of a library's start inflated at most to find its dynamic section, symbols and string table.
_HEAD_MAX = 64 << 20


def may_hold_native_code(filename: str) -> bool:
    """A wheel tagged for a platform (not `*-none-any`) may carry native code; an sdist is not read."""
    return filename.endswith(".whl") and not filename[:-4].endswith("-any")


# --- reading: ELF through pyelftools over what is there ------------------------------------------------------------

class _Bytes(io.RawIOBase):
    """A seekable file over `read(offset, n)` of a known size, so pyelftools reads only the ranges it parses."""

    def __init__(self, read: Callable[[int, int], bytes], size: int) -> None:
        self._read, self._size, self._pos = read, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self._pos = offset if whence == 0 else self._pos + offset if whence == 1 else self._size + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, n: int = -1) -> bytes:
        n = self._size - self._pos if n is None or n < 0 else min(n, max(0, self._size - self._pos))
        data = self._read(self._pos, n) if n > 0 else b""
        self._pos += len(data)
        return data


def elf_links(read: Callable[[int, int], bytes], size: int) -> tuple[tuple[str, ...], bool, str, str | None]:
    """(DT_NEEDED, defines PyInit_*, torch ABI, problem) of an ELF file, from its program headers and dynamic segment
    only (near its start): no section header is read, so a library inflated from a zip is read no further."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSegment
    from elftools.elf.elffile import ELFFile

    class _Segments(ELFFile):
        """pyelftools' ELFFile as for a file whose section table is stripped (which it supports): the dynamic
        segment's own tags find the string and symbol tables."""

        def _get_section_header_stringtable(self) -> None:
            return None

        def num_sections(self) -> int:
            return 0

        def iter_sections(self, type: str | None = None) -> Iterator[Any]:  # noqa: A002
            return iter(())

    try:
        elf = _Segments(cast("IO[bytes]", _Bytes(read, size)))
        dyn = next((s for s in elf.iter_segments() if isinstance(s, DynamicSegment)), None)
        if dyn is None:
            return (), False, "", None  # statically linked: needs nothing
        needed = tuple(str(getattr(t, "needed")) for t in dyn.iter_tags() if t.entry.d_tag == "DT_NEEDED")
        pyinit = cxx = False
        for sym in dyn.iter_symbols():
            name = sym.name
            if sym["st_shndx"] == "SHN_UNDEF":
                cxx = cxx or bool(_TORCH_CXX.match(name))
            elif name.startswith("PyInit_"):
                pyinit = True
        torchy = any(n.startswith(("libtorch", "libc10")) for n in needed)
        return needed, pyinit, ("cxx" if cxx else "stable") if torchy else "", None
    except (ELFError, ValueError, KeyError, IndexError, OSError, AttributeError) as err:
        return (), False, "", f"not an ELF file pyelftools can read ({str(err)[:100]})"


def member_facts(path: str, read: Callable[[int, int], bytes], size: int, *, gpu: bool) -> Member:
    """One shared object's facts; its GPU code only where `gpu` and it links a GPU library."""
    from tritonlock.lock.gpucode import gpu_code_from

    needed, pyinit, abi, problem = elf_links(read, size)
    if problem:
        return Member(path=path, extension=False, gpu=problem)
    m = Member(path=path, extension=pyinit, needed=needed, torch_abi=abi)
    if not any(_GPU_LIB.match(n) for n in needed):
        return m
    if not gpu:
        return _replace(m, gpu="not read (not asked for)")
    code = gpu_code_from(read, size)
    return _replace(m, sm=tuple(code.sm), ptx=tuple(code.ptx), gfx=tuple(code.gfx),
                    gpu=f"read; {code.unreadable}" if code.unreadable else "read")


def _replace(m: Member, **kw: Any) -> Member:
    from dataclasses import replace

    return replace(m, **kw)


# --- the torch a wheel was built for ------------------------------------------------------------------------------

# local labels and file names of per-torch builds: "+pt29cu128" (PyG), "+cu12torch2.8cxx11abiTRUE" (flash-attn's
# releases), "+torch2.5" — the torch minor they were built against
_TORCH_TAG = re.compile(r"(?:\bpt|torch)(?P<major>[0-9])(?:\.?(?P<minor>[0-9]{1,2}))")


def built_for_torch(filename: str, metadata: str | None) -> str | None:
    """The torch minor ("2.9") a wheel was built against: its METADATA's exact `torch==` pin (a wheel that pins one
    torch was built for it), else a per-torch tag in its version's local label or file name."""
    for line in (metadata or "").splitlines():
        m = re.match(r"Requires-Dist:\s*torch\s*(?:\[[^\]]*\])?\s*\(?\s*==\s*([0-9]+)\.([0-9]+)", line, re.I)
        if m and ";" not in line.split("==", 1)[0]:
            return f"{m[1]}.{m[2]}"
    local = filename.split("-")[1] if filename.count("-") >= 2 else ""
    m = _TORCH_TAG.search(local.split("+", 1)[1] if "+" in local else "")
    return f"{m['major']}.{m['minor']}" if m and m["minor"] else None


# --- a wheel: on an index (ranged reads) or on disk ------------------------------------------------------------------

class _Inflating:
    """One deflated zip member read forward on demand: the compressed bytes come in chunks as far as a read needs,
    are inflated and kept (a library's start for its dynamic section, all of it for its GPU code)."""

    def __init__(self, fetch: Callable[[int, int], bytes], start: int, csize: int, usize: int, method: int) -> None:
        self._fetch, self._pos, self._end, self.size = fetch, start, start + csize, usize
        self._z = zlib.decompressobj(-15) if method == 8 else None
        self._buf = bytearray()

    def read(self, off: int, n: int) -> bytes:
        want = min(off + n, self.size)
        while len(self._buf) < want and self._pos < self._end:
            step = max(1 << 20, min(want - len(self._buf), 16 << 20))
            raw = self._fetch(self._pos, min(self._end, self._pos + step) - 1)
            if not raw:
                break
            self._pos += len(raw)
            self._buf += self._z.decompress(raw) if self._z else raw
        return bytes(self._buf[off:want])


def read_wheel(filename: str, sha256: str, *, members: dict[str, tuple[int, int, int, int]],
               fetch: Callable[[int, int], bytes], gpu: bool, source: str, names_only: bool = False) -> NativeFacts:
    """Facts of a wheel whose zip central directory (`members`: name -> method, compressed size, size, header
    offset) is known and whose bytes `fetch(start, end)` gives; `names_only`: what it brings, nothing inside."""
    import struct

    provides = tuple(sorted({n.rsplit("/", 1)[-1] for n in members if _SO.search(n)}))
    if names_only:
        return NativeFacts(sha256=sha256, filename=filename, provides=provides, source=source, names_only=True)
    out: list[Member] = []
    meta = None
    for name, (method, csize, usize, offset) in sorted(members.items()):
        if re.fullmatch(r"[^/]+\.dist-info/METADATA", name):
            meta = _member_bytes(fetch, offset, csize, method).decode("utf-8", "replace")
            continue
        if not _SO.search(name) or method not in (0, 8):
            continue
        head = fetch(offset, offset + 29)
        nlen, elen = struct.unpack("<HH", head[26:30])
        reader = _Inflating(fetch, offset + 30 + nlen + elen, csize, usize, method)
        if reader.read(0, 4) != b"\x7fELF":
            continue
        out.append(member_facts(name, reader.read, usize, gpu=gpu))
    return NativeFacts(sha256=sha256, filename=filename, provides=provides, members=tuple(out),
                       built_for_torch=built_for_torch(filename, meta) if out else None, source=source)


def _member_bytes(fetch: Callable[[int, int], bytes], offset: int, csize: int, method: int) -> bytes:
    import struct

    head = fetch(offset, offset + 29)
    nlen, elen = struct.unpack("<HH", head[26:30])
    raw = fetch(offset + 30 + nlen + elen, offset + 30 + nlen + elen + csize - 1) if csize else b""
    return zlib.decompress(raw, -15) if method == 8 else raw


def read_remote(url: str, size: int | None, sha256: str, filename: str, *, session: Any, gpu: bool,
                names_only: bool = False) -> NativeFacts:
    """Facts of a wheel on an index, by HTTP Range requests (tritonlock.lock.remotezip)."""
    from tritonlock.lock.remotezip import RemoteZip

    z = RemoteZip(session, url, size)
    return read_wheel(filename, sha256, members=z.members(), fetch=z.read_range, gpu=gpu,
                      source=f"read from {filename} by ranged reads", names_only=names_only)


def read_file(path: Path, sha256: str, *, gpu: bool = True) -> NativeFacts:
    """Facts of a wheel file on disk (a wheelhouse, uv's cache)."""
    import zipfile

    with zipfile.ZipFile(path) as zf:
        members = {i.filename: (i.compress_type, i.compress_size, i.file_size, i.header_offset) for i in zf.infolist()}
    with open(path, "rb") as fh:
        def fetch(start: int, end: int) -> bytes:
            fh.seek(start)
            return fh.read(end - start + 1)

        return read_wheel(path.name, sha256, members=members, fetch=fetch, gpu=gpu, source=f"read from {path}")


def read_installed(root: Path, files: Iterable[str], *, gpu: bool = True) -> list[Member]:
    """The shared objects of an installed distribution (its RECORD's paths under site-packages `root`)."""
    out = []
    for rel in files:
        if not _SO.search(rel):
            continue
        p = root / rel
        try:
            with open(p, "rb") as fh:
                if fh.read(4) != b"\x7fELF":
                    continue
                size = os.fstat(fh.fileno()).st_size

                def read(o: int, n: int, f: IO[bytes] = fh) -> bytes:
                    f.seek(o)
                    return f.read(n)

                out.append(member_facts(rel, read, size, gpu=gpu))
        except OSError:
            continue
    return out


# --- kept per sha256 -----------------------------------------------------------------------------------------------

def cache_dir() -> Path:
    """$TRITONLOCK_NATIVE_CACHE, else tritonlock's folder in the user's cache (facts are keyed by file sha256)."""
    explicit = os.environ.get("TRITONLOCK_NATIVE_CACHE")
    if explicit:
        return Path(explicit)
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(home) / "tritonlock" / _CACHE_VERSION


def cached(sha256: str, *, gpu: bool, names_only: bool = False) -> NativeFacts | None:
    try:
        d = json.loads((cache_dir() / f"{sha256}.json").read_text(encoding="utf-8"))
        facts = NativeFacts.from_json(d)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if facts.sha256 != sha256 or (gpu and any(m.gpu.startswith("not read") for m in facts.members)):
        return None
    if facts.names_only and not names_only:
        return None  # what it brings was read, not what is inside
    return facts


def keep(facts: NativeFacts) -> None:
    """Into the cache, atomically (a reader never sees half a file); a cache that cannot be written is no error."""
    if facts.problem:
        return
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{facts.sha256}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(facts.to_json(), sort_keys=True), encoding="utf-8")
        os.replace(tmp, d / f"{facts.sha256}.json")
    except OSError:
        pass


@dataclass(kw_only=True)
class Reader:
    """Reads the facts of many wheels at once (threads), each once per sha256 (and per process, and across runs
    through the cache); shared by the targets of one resolve."""

    gpu: bool = True
    workers: int = 6
    read: dict[str, NativeFacts] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import threading

        self._lock = threading.Lock()

    def facts(self, wheels: Iterable[tuple[str, int | None, str, str, bool]]) -> dict[str, NativeFacts]:
        """Facts by sha256 of each (url, size, sha256, filename, names only), from the cache or the index; a wheel
        that cannot be read gets facts whose `problem` says why (the rule then cannot check that package)."""
        from concurrent.futures import ThreadPoolExecutor

        from tritonlock.lock.index import session

        todo = []
        with self._lock:
            for url, size, sha, name, names in dict.fromkeys(wheels):
                have = self.read.get(sha)
                if have is not None and (names or not have.names_only):
                    continue
                hit = cached(sha, gpu=self.gpu, names_only=names)
                if hit is not None:
                    self.read[sha] = hit
                else:
                    todo.append((url, size, sha, name, names))
        if todo:
            s = session()

            def one(w: tuple[str, int | None, str, str, bool]) -> NativeFacts:
                url, size, sha, name, names = w
                try:
                    f = read_remote(url, size, sha, name, session=s, gpu=self.gpu, names_only=names)
                except Exception as err:  # noqa: BLE001 — an unreadable wheel is a fact to report, not a crash
                    from tritonlock._urls import redact

                    return NativeFacts(sha256=sha, filename=name, problem=redact(str(err))[:200] or type(err).__name__)
                keep(f)
                return f

            with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(todo)))) as pool:
                for f in pool.map(one, todo):
                    with self._lock:
                        self.read[f.sha256] = f
        with self._lock:
            return dict(self.read)
