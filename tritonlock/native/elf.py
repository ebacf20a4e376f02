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
    import struct

    from tritonlock.native.elfdyn import TORCH_CXX, ElfError, dynamic

    extension = bool(module) and not module.startswith("lib")
    try:
        dyn = dynamic(read, size)
        if dyn is None:
            return (), extension, "", None  # statically linked: needs nothing
        needed = dyn.needed()
        if not any(n.startswith(("libtorch", "libc10")) for n in needed):
            return needed, extension, "", None
        cxx = any(TORCH_CXX.match(name) for name in dyn.undefined_names())
        return needed, extension, "cxx" if cxx else "stable", None
    except (ElfError, struct.error, OverflowError, MemoryError) as err:
        return (), False, "", f"not an ELF file it can read ({str(err)[:100]})"


def member_facts(path: str, read: Callable[[int, int], bytes], size: int, *, gpu: bool,
                 nv_fatbin: Callable[[int, int], tuple[tuple[str, ...], tuple[str, ...], str | None]] | None = None
                 ) -> Member:
    """One shared object's facts; its GPU code only where `gpu` and it links a GPU library (`nv_fatbin`: see
    gpucode.gpu_code_from)."""
    from tritonlock.native.gpucode import gpu_code_from

    needed, pyinit, abi, problem = elf_links(read, size, path.rsplit("/", 1)[-1])
    if problem:
        return Member(path=path, extension=False, gpu=problem)
    m = Member(path=path, extension=pyinit, needed=needed, torch_abi=abi)
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
