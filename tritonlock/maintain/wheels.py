"""Inside the wheels, read with HTTP Range: the ptxas a Triton wheel bundles and which GPUs use it, the build a torch
wheel is (torch/version.py), and the GPU code its libraries carry (lock/gpucode.py over ranged reads)."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.version import Version

from tritonlock.compat.rows import Ptxas
from tritonlock.native.gpucode import GpuCode, gpu_code_from
from tritonlock.lock.index import IndexFile
from tritonlock.native.remotezip import RemoteZip
from tritonlock.maintain.tags import wheels

_RELEASE = re.compile(rb"Cuda compilation tools, release (\d+\.\d+), V(\d+\.\d+\.\d+)")


@dataclass(frozen=True)
class WheelPtxas:
    """What one Triton wheel really ships: its ptxas binaries' CUDA versions and which GPUs use which."""

    url: str
    sha256: str | None
    ptxas: str | None  # "12.9.86"
    blackwell: str | None
    blackwell_from: str | None  # compute capability, from compiler.py's get_ptxas
    blackwell_env: str | None
    read_bytes: int


def _blackwell_from(compiler: str, windows: bool) -> str | None:
    """From which compute capability get_ptxas picks ptxas-blackwell ("10.0" for `arch >= 100`), or None."""
    m = re.search(r"^def get_ptxas\(.*?(?=^\S)", compiler, re.M | re.S)
    if not m:
        return None  # triton <= 3.2: one ptxas, found by _path_to_binary / path_to_ptxas
    body = "\n".join(line.split("#", 1)[0] for line in m.group(0).splitlines())
    if "blackwell" not in body or (windows and 'os.name == "nt"' in body):
        return None
    ge, lt = re.search(r"arch\s*>=\s*(\d+)", body), re.search(r"arch\s*<\s*(\d+)", body)
    found = ge or lt
    if not found:
        return None
    n = int(found.group(1))
    return f"{n // 10}.{n % 10}"


def read_wheel_ptxas(session: object, file: IndexFile) -> WheelPtxas:
    """Read a triton / triton-windows wheel's bundled ptxas versions and its ptxas selection rule."""
    z = RemoteZip(session, file.url, file.size)
    names = z.members()
    windows = "win_amd64" in file.filename
    exe = ".exe" if windows else ""
    bin_dir = next((d for d in ("triton/backends/nvidia/bin/", "triton/third_party/cuda/bin/")
                    if d + "ptxas" + exe in names), None)

    def version(member: str) -> str | None:
        if bin_dir is None or bin_dir + member not in names:
            return None
        m = _RELEASE.search(z.read(bin_dir + member, until=_RELEASE))
        return m.group(2).decode() if m else None

    ptxas, blackwell = version("ptxas" + exe), version("ptxas-blackwell" + exe)
    rule = env = None
    if "triton/backends/nvidia/compiler.py" in names:
        compiler = z.read("triton/backends/nvidia/compiler.py").decode("utf-8", "replace")
        rule = _blackwell_from(compiler, windows)
        if rule is not None:
            knobs = z.read("triton/knobs.py").decode("utf-8", "replace") if "triton/knobs.py" in names else ""
            # knobs.env_nvidia_tool: f"TRITON_{binary.upper().replace('-', '_')}_PATH"; before knobs (3.3),
            # _path_to_binary read f"TRITON_{binary.upper()}_PATH", i.e. TRITON_PTXAS-BLACKWELL_PATH.
            env = ("TRITON_PTXAS_BLACKWELL_PATH" if "replace('-', '_')" in knobs or 'replace("-", "_")' in knobs
                   else "TRITON_PTXAS-BLACKWELL_PATH")
    return WheelPtxas(url=file.url, sha256=file.sha256, ptxas=ptxas, blackwell=blackwell if rule else None,
                      blackwell_from=rule if blackwell else None, blackwell_env=env if blackwell else None,
                      read_bytes=z.bytes_read)


def ptxas_wheel(files: Iterable[IndexFile], package: str, version: str, platform: str) -> IndexFile | None:
    """The wheel a [[ptxas]] row is read from: the first (by name) for that release and platform."""
    mine = [w for w in wheels(files) if str(w.version) == str(Version(version)) and w.platform == platform]
    return min((w.file for w in mine), key=lambda f: f.filename, default=None)


def check_ptxas(row: Ptxas, got: WheelPtxas) -> list[str]:
    found = []
    where = f"ptxas {row.package} {row.version} {row.platform}"
    for key, want, have in (("ptxas", row.ptxas, got.ptxas), ("blackwell", row.blackwell, got.blackwell),
                            ("blackwell_from", row.blackwell_from, got.blackwell_from),
                            ("blackwell_env", row.blackwell_env, got.blackwell_env)):
        if want != have:
            found.append(f"{where}: {key}: the wheel says {have}, compat has {want}")
    if got.sha256 and got.sha256 not in row.source:
        found.append(f"{where}: source: names another file than {got.url} (sha256 {got.sha256})")
    return found


def read_torch_build(session: object, file: IndexFile) -> str:
    """The backend a torch wheel is built for, from its own torch/version.py ("cu132", "cpu")."""
    z = RemoteZip(session, file.url, file.size)
    text = z.read("torch/version.py").decode("utf-8", "replace")
    m = re.search(r"^cuda\b[^=\n]*=\s*(?:'([\d.]+)'|\"([\d.]+)\"|None)", text, re.M)
    cuda = (m.group(1) or m.group(2)) if m else None
    return "cu" + "".join(cuda.split(".")[:2]) if cuda else "cpu"




# --- the GPU code of a wheel's libraries -------------------------------------------------------------------

_BLOCK = 1 << 16


class _Ranged:
    """read(off, n) over a stored (uncompressed) zip member: HTTP Range reads in 64 KB blocks, each read once."""

    def __init__(self, z: RemoteZip, start: int, size: int) -> None:
        self.z, self.start, self.size = z, start, size
        self.blocks: dict[int, bytes] = {}

    def __call__(self, off: int, n: int) -> bytes:
        out = b""
        end = min(self.size, off + n)
        while off < end:
            b = off // _BLOCK
            if b not in self.blocks:
                lo = self.start + b * _BLOCK
                self.blocks[b] = self.z.get(lo, min(self.start + self.size, lo + _BLOCK) - 1)
            chunk = self.blocks[b][off - b * _BLOCK:end - b * _BLOCK]
            if not chunk:
                break
            out += chunk
            off += len(chunk)
        return out


class _Inflating:
    """read(off, n) over a deflated zip member, decompressed as it streams by: forward reads cost only what lies
    between; a read behind the kept window starts the stream again (the ELF header, then its section headers at the
    end, then the fatbin sections in the middle: at most two passes over the member)."""

    WINDOW = 8 << 20

    def __init__(self, z: RemoteZip, start: int, csize: int) -> None:
        self.z, self.start, self.csize = z, start, csize
        self.small: dict[tuple[int, int], bytes] = {}
        self._restart()

    def _restart(self) -> None:
        self.inflate = zlib.decompressobj(-15)
        self.cpos = 0  # compressed bytes consumed
        self.wstart, self.window = 0, b""  # uncompressed bytes kept: [wstart, wstart + len(window))

    def __call__(self, off: int, n: int) -> bytes:
        if (off, n) in self.small:
            return self.small[(off, n)]
        if off < self.wstart:
            self._restart()
        while self.wstart + len(self.window) < off + n and self.cpos < self.csize:
            raw = self.z.get(self.start + self.cpos, self.start + min(self.csize, self.cpos + (1 << 20)) - 1)
            self.cpos += len(raw)
            self.window += self.inflate.decompress(raw)
            keep = max(0, len(self.window) - self.WINDOW)
            drop = min(keep, max(0, off - self.wstart))  # never drop what this read asks for
            self.window, self.wstart = self.window[drop:], self.wstart + drop
        got = self.window[off - self.wstart:off - self.wstart + n]
        if n <= 4096:
            self.small[(off, n)] = got
        return got


def member_gpu_code(z: RemoteZip, name: str) -> GpuCode:
    """The GPU code of one library inside a wheel: its ELF section headers, then only its fatbin sections' container
    headers (lock/gpucode.py), read with HTTP Range requests."""
    method, start, csize, usize = z.span(name)
    if method == 0:
        return gpu_code_from(_Ranged(z, start, usize), usize)
    if method == 8:
        return gpu_code_from(_Inflating(z, start, csize), usize)
    return GpuCode((), (), (), f"{name}: zip compression method {method} is not read")


def read_wheel_gpu_code(session: object, file: IndexFile, kind: str, budget: int = 2 << 30) -> tuple[GpuCode, str]:
    """(GPU code, the library it was read from) of a torch wheel: its torch/lib/ libraries with "cuda" (kind
    "cuda") or "hip" (kind "rocm") in the name, smallest first, until one carries GPU code or `budget` bytes are
    read."""
    z = RemoteZip(session, file.url, file.size)
    word = "hip" if kind == "rocm" else "cuda"
    libs = sorted((n for n, m in z.members().items() if n.startswith("torch/lib/") and word in n.rsplit("/", 1)[-1]
                   and re.search(r"\.so(\.|$)", n)), key=lambda n: z.members()[n][1])
    for name in libs:
        if z.bytes_read > budget:
            return GpuCode((), (), (), f"stopped after {z.bytes_read >> 20} MB: no library read carries GPU code"), ""
        code = member_gpu_code(z, name)
        if code.any or code.unreadable:
            return code, name
    return GpuCode((), (), (), f"no torch/lib/ library with {word!r} in its name carries GPU code"), ""
