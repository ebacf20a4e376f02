"""ELF facts of a shared object (its dynamic segment read by tritonlock.native.elfdyn, its GPU code by
tritonlock.native.gpucode), over whatever gives its bytes (a file on disk, a zip member
inflated from an index): the libraries it needs (DT_NEEDED), whether it is a Python extension module, whether it
links torch's C++ API (one torch release) or torch's stable C ABI, and the GPU code its fatbins carry; and the torch
a wheel was built for, from its METADATA or its version's label."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from tritonlock.models import NativeMember as Member

SO = re.compile(r"\.so(\.[0-9]+)*\Z")
# libraries whose use means CUDA / HIP code: their members' GPU code is read
# (auditwheel renames a bundled one "libcudart-5e6f7a8b.so.12")
_GPU_LIBS = (r"lib(?:cudart|cuda|cublas|cublasLt|cufft|curand|cusolver|cusparse|nvrtc|nvJitLink|cudnn|nccl|"
             r"torch_cuda|c10_cuda|amdhip64|torch_hip|c10_hip|rocblas|hipblas|MIOpen)[._-]")
_GPU_LIB = re.compile("^" + _GPU_LIBS)
# The same names anywhere in a file's bytes: a file whose dynamic strings hold none of them links no GPU library
GPU_LIB_BYTES = re.compile(_GPU_LIBS.encode())



def elf_links(read: Callable[[int, int], bytes], size: int,
              module: str = "") -> tuple[tuple[str, ...], bool, str, str | None]:
    """(DT_NEEDED, is a Python extension module, torch ABI, problem) of an ELF file, from its program headers and
    dynamic segment (tritonlock.native.elfdyn); the undefined dynamic symbols are read only where the file links
    torch. `module`: the file name, which says whether it is an extension module ("_C.abi3.so",
    "x.cpython-312-x86_64-linux-gnu.so", a plain "name.so" not named lib*)."""
    needed, extension, abi, problem, _ = _links(read, size, module)
    return needed, extension, abi, problem


def _links(read: Callable[[int, int], bytes], size: int,
           module: str = "") -> tuple[tuple[str, ...], bool, str, str | None, tuple[str, ...]]:
    """elf_links, and the undefined symbols of torch's C++ API a "cxx" file needs (its weak references left out:
    a weak symbol nothing defines does not fail the load), sorted."""
    import struct

    from tritonlock.native.elfdyn import TORCH_CXX, ElfError, dynamic

    extension = bool(module) and not module.startswith("lib")
    try:
        dyn = dynamic(read, size)
        if dyn is None:
            return (), extension, "", None, ()  # statically linked: needs nothing
        needed = dyn.needed()
        if not any(n.startswith(("libtorch", "libc10")) for n in needed):
            return needed, extension, "", None, ()
        cxx: set[bytes] = set()
        strong: set[bytes] = set(dyn.undefined_names(strong=True))
        for name in dyn.undefined_names():
            if TORCH_CXX.match(name):
                cxx.add(name)
        symbols = tuple(sorted(n.decode("ascii", "replace") for n in cxx & strong))
        return needed, extension, "cxx" if cxx else "stable", None, symbols
    except (ElfError, struct.error, OverflowError, MemoryError) as err:
        return (), False, "", f"not an ELF file it can read ({str(err)[:100]})", ()


# A shared library named in a file's strings: the C string is the soname ("libcublas.so.12") or a path ending in one
# (a message that mentions a library is no dlopen target)
SONAME_STRING = re.compile(rb"(?:[A-Za-z0-9_.+$@/-]*/)?(lib[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*\.so(?:\.[0-9]+)+)\Z")
_SO_DOT = b".so."
_MAX_NAMES = 512


class SoNames:
    """The library names in a file's bytes, found as they stream by (`feed`: each piece right after the last), by
    file offset: the C strings that are a soname with its version number ("libcudart.so.12") or a path ending in
    one. Which of them sit in the file's read-only data (not its dynamic strings: DT_NEEDED) is told from its section
    table afterwards (`names_in`); a section's first string starts at the section, whatever byte is before it. Nothing
    is kept but the strings and the last few hundred bytes."""

    def __init__(self) -> None:
        self.found: list[tuple[int, bytes]] = []  # (file offset, the bytes from the last NUL before to the next)
        self._carry = b""
        self._carry_at = 0
        self._resume = 0  # the file offset the next look for ".so." starts at

    def feed(self, base: int, piece: bytes) -> None:
        if len(self.found) >= _MAX_NAMES or not piece:
            return
        data, start = (self._carry + piece, self._carry_at) if self._carry else (piece, base)
        pos, resume = max(0, self._resume - start), None
        while True:
            i = data.find(_SO_DOT, pos)
            if i < 0:
                break
            tail = data.find(b"\0", i + 4, i + 68)
            if tail < 0 and len(data) - i < 68:
                resume = i  # the string may end in the next piece
                break
            pos = i + 4
            if tail < 0:
                continue  # no C string this short around it
            head = data.rfind(b"\0", max(0, i - 256), i) + 1 or max(0, i - 256)
            text = data[head:tail]
            if _SONAME_END.search(text):
                self.found.append((start + head, bytes(text)))
                if len(self.found) >= _MAX_NAMES:
                    return
        if resume is None:
            resume = max(len(data) - 3, pos)  # (".so." may straddle the pieces)
        keep = max(0, min(resume, len(data)) - 256)
        self._carry, self._carry_at = bytes(data[keep:]), start + keep
        self._resume = start + resume

    def names_in(self, ranges: Iterable[tuple[int, int]]) -> tuple[str, ...]:
        """The names of the strings inside the given [start, end) file ranges (the read-only data sections), a
        string cut at a range's start where it runs into it from before, sorted."""
        out: set[str] = set()
        for a, b in ranges:
            for at, text in self.found:
                if at + len(text) <= a or at >= b:
                    continue
                m = SONAME_STRING.match(text[max(0, a - at):])
                if m:
                    out.add(m[1].decode("ascii"))
        return tuple(sorted(out))


_SONAME_END = re.compile(rb"lib[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*\.so(?:\.[0-9]+)+\Z")


def rodata(read: Callable[[int, int], bytes], size: int) -> list[tuple[int, int]] | None:
    """The file ranges of its read-only data sections (.rodata, .rodata.*); None where its section table cannot be
    read."""
    import struct

    from tritonlock.native.elfdyn import ElfError, header, sections

    try:
        h = header(read(0, 64))
        return [(off, min(off + n, size)) for name, kind, flags, off, n in sections(read, h, size)
                if (name == ".rodata" or name.startswith(".rodata.")) and kind == 1 and not flags & 0x5
                and off < size]
    except (ElfError, struct.error, OverflowError, MemoryError, UnicodeDecodeError):
        return None


def dlopen_names(read: Callable[[int, int], bytes], size: int, needed: tuple[str, ...],
                 found: SoNames | None = None) -> tuple[str, ...]:
    """The libraries a file's read-only strings name (what it may dlopen by name), but not the ones it links
    (DT_NEEDED): from `found` (a streaming pass) or by reading its read-only data sections."""
    ranges = rodata(read, size)
    if not ranges:
        return ()
    if found is None:
        names: set[str] = set()
        for a, b in ranges:
            one = SoNames()  # (a range of its own: its bytes do not follow the last range's)
            for at in range(a, b, 1 << 20):
                one.feed(at, read(at, min(1 << 20, b - at)))
            names.update(one.names_in([(a, b)]))
        return tuple(sorted(n for n in names if n not in needed))
    return tuple(n for n in found.names_in(ranges) if n not in needed)


def member_facts(path: str, read: Callable[[int, int], bytes], size: int, *, gpu: bool,
                 nv_fatbin: Callable[[int, int], tuple[tuple[str, ...], tuple[str, ...], str | None]] | None = None,
                 names: SoNames | None = None) -> Member:
    """One shared object's facts; its GPU code only where `gpu` and it links a GPU library (`nv_fatbin`: see
    gpucode.gpu_code_from); `names`: the library names a streaming pass found in its bytes (else its read-only data
    is read for them)."""
    from tritonlock.native.gpucode import gpu_code_from

    needed, pyinit, abi, problem, symbols = _links(read, size, path.rsplit("/", 1)[-1])
    if problem:
        return Member(path=path, extension=False, gpu=problem)
    m = Member(path=path, extension=pyinit, needed=needed, torch_abi=abi, torch_symbols=symbols,
               dlopen=dlopen_names(read, size, needed, names))
    if not any(_GPU_LIB.match(n) for n in needed):
        return m
    if not gpu:
        return _replace(m, gpu="not read (not asked for)")
    code = gpu_code_from(read, size, nv_fatbin=nv_fatbin)
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


def read_installed(root: Path, files: Iterable[str], *, gpu: bool = True) -> list[Member]:
    """The shared objects of an installed distribution (its RECORD's paths under site-packages `root`)."""
    out = []
    for rel in files:
        if not SO.search(rel):
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


@functools.lru_cache(maxsize=1)
def system_sonames() -> frozenset[str]:
    """The libraries this machine's loader finds by name outside any venv (its `ldconfig -p` cache: a CUDA toolkit
    installed system-wide, the driver's own libraries)."""
    import shutil
    import subprocess

    exe = shutil.which("ldconfig") or next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if Path(p).exists()),
                                           None)
    if exe is None:
        return frozenset()
    try:
        out = subprocess.run([exe, "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(line.split()[0] for line in out.splitlines()[1:] if line.strip())
