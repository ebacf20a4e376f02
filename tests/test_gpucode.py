"""native/gpucode.py on real binaries: a shared object nvcc builds (cubins and PTX in `.nv_fatbin`), and a gcc-built
shared object given a `.hip_fatbin` section of clang offload bundles laid out as ClangOffloadBundler.rst documents
(plain, zlib- and zstd-compressed "CCOB" bundles)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from tritonlock.native.gpucode import BUNDLE_MAGIC, GpuCode, gpu_code, gpu_code_from

NVCC = shutil.which("nvcc") or next((str(p) for p in (Path("/usr/local/cuda/bin/nvcc"),) if p.exists()), None)
KERNEL = """
__global__ void add(float* a, const float* b, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += b[i]; }
extern "C" void launch(float* a, const float* b, int n) { add<<<(n + 255) / 256, 256>>>(a, b, n); }
"""


def nvcc_so(tmp: Path, name: str, *flags: str) -> bytes:
    if NVCC is None:
        pytest.skip("nvcc is not installed (CI machines have CUDA 13.0 at /usr/local/cuda/bin/nvcc)")
    tmp.mkdir(parents=True, exist_ok=True)
    src = tmp / "k.cu"
    src.write_text(KERNEL, encoding="utf-8")
    out = tmp / name
    subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", *flags, "-o", str(out), str(src)], check=True,
                   capture_output=True, timeout=300)
    return out.read_bytes()


@pytest.fixture(scope="module")
def cuda_so(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return nvcc_so(tmp_path_factory.mktemp("nvcc"), "libk.so", "-gencode", "arch=compute_80,code=sm_80",
                   "-gencode", "arch=compute_90,code=compute_90")


def test_nvcc_cubins_and_ptx(cuda_so: bytes) -> None:
    assert gpu_code(cuda_so) == GpuCode(sm=("sm_80",), ptx=("compute_90",), gfx=(), unreadable=None)


def test_compressed_and_arch_specific_entries(tmp_path: Path) -> None:
    """-Xfatbin -compress-all compresses the payloads; only the entry headers are read. sm_90a is its own code."""
    so = nvcc_so(tmp_path, "libkc.so", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                 "arch=compute_90a,code=sm_90a", "-gencode", "arch=compute_90,code=compute_90", "-Xfatbin",
                 "-compress-all")
    assert gpu_code(so) == GpuCode(sm=("sm_80", "sm_90a"), ptx=("compute_90",), gfx=())


def test_only_headers_are_read(cuda_so: bytes) -> None:
    """Through a reader of ranges: the ELF header, section headers and the container headers, not the file."""
    asked: list[int] = []

    def read(off: int, n: int) -> bytes:
        asked.append(n)
        return cuda_so[off:off + n]

    assert gpu_code_from(read, len(cuda_so)).sm == ("sm_80",)
    assert sum(asked) < len(cuda_so) // 4


def test_a_library_without_gpu_code_and_a_file_that_is_no_elf(tmp_path: Path) -> None:
    plain = gcc_so(tmp_path)
    assert gpu_code(plain) == GpuCode((), (), ())
    got = gpu_code(b"PK\x03\x04 not an ELF")
    assert not got.any and got.unreadable and got.unreadable.startswith("not an ELF file it can read")


# ---- HIP offload bundles --------------------------------------------------------------------------------------

def bundle(*targets: str, align: int = 4096) -> bytes:
    """A clang offload bundle: magic, entry count, (offset, size, id length, id) per entry, then the code objects."""
    ids = ["host-x86_64-unknown-linux-gnu-"] + [f"hipv4-amdgcn-amd-amdhsa--{t}" for t in targets]
    table_size = 24 + 8 + sum(24 + len(i) for i in ids)
    objects = [b""] + [b"\x7fELF" + t.encode() * 50 for t in targets]  # stand-ins for the code objects
    head, body, off = bytearray(BUNDLE_MAGIC + struct.pack("<Q", len(ids))), bytearray(), -(-table_size // align) * align
    for i, obj in zip(ids, objects):
        head += struct.pack("<QQQ", off if obj else 0, len(obj), len(i)) + i.encode()
    body = bytearray(head) + bytes(-(-table_size // align) * align - len(head))
    for obj in objects[1:]:
        body += obj + bytes(-len(obj) % align)
    return bytes(body)


def ccob(inner: bytes, method: int = 0, version: int = 3) -> bytes:
    """A compressed offload bundle as clang-offload-bundler writes it: zlib (method 0) or zstd (method 1)."""
    if method == 0:
        data = zlib.compress(inner)
    else:
        import zstandard

        data = zstandard.ZstdCompressor(level=3).compress(inner)
    if version == 3:
        return b"CCOB" + struct.pack("<HHQQQ", 3, method, 32 + len(data), len(inner), 0) + data
    return b"CCOB" + struct.pack("<HHIIQ", 2, method, 24 + len(data), len(inner), 0) + data


def gcc_so(tmp: Path, section: bytes | None = None) -> bytes:
    """A shared object gcc builds, with `section` added as .hip_fatbin by objcopy (as hipcc's output carries it)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None or shutil.which("objcopy") is None:
        pytest.skip("gcc and objcopy (binutils) are needed to build the test library")
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "h.c").write_text("int hip_host_stub(int x) { return x + 1; }\n", encoding="utf-8")
    so = tmp / "libhost.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(so), str(tmp / "h.c")], check=True, capture_output=True)
    if section is None:
        return so.read_bytes()
    (tmp / "fatbin.bin").write_bytes(section)
    out = tmp / "libhip.so"
    subprocess.run(["objcopy", "--add-section", f".hip_fatbin={tmp / 'fatbin.bin'}", "--set-section-flags",
                    ".hip_fatbin=alloc,readonly", str(so), str(out)], check=True, capture_output=True)
    return out.read_bytes()


def test_hip_offload_bundles(tmp_path: Path) -> None:
    """Two translation units' bundles in one section (hipcc aligns them): the union of their targets."""
    so = gcc_so(tmp_path, bundle("gfx942", "gfx90a:xnack-") + bundle("gfx1100", "gfx942"))
    assert gpu_code(so) == GpuCode(sm=(), ptx=(), gfx=("gfx90a:xnack-", "gfx942", "gfx1100"))


def test_compressed_bundles_zlib_and_zstd_are_read(tmp_path: Path) -> None:
    """ROCm's offload compression writes zstd bundles (and zlib ones): the targets of both are read."""
    plain = bundle("gfx950")
    so = gcc_so(tmp_path, ccob(bundle("gfx1151", "gfx1201"), version=2) + bytes(12) + ccob(plain)
                + ccob(bundle("gfx1103"), method=1) + ccob(bundle("gfx942", "gfx90a"), method=1, version=2))
    got = gpu_code(so)
    assert got.gfx == ("gfx90a", "gfx942", "gfx950", "gfx1103", "gfx1151", "gfx1201"), got
    assert got.unreadable is None, got.unreadable


def test_a_zstd_bundle_without_a_decompressor_is_said_not_guessed(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no zstd decompressor can be imported (Python < 3.14 without the zstandard package), a zstd bundle's
    targets are unread and said so, with how to read them; the zlib ones are still read."""
    import sys

    so = gcc_so(tmp_path, ccob(bundle("gfx950")) + ccob(bundle("gfx1103"), method=1))
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard -> ImportError
    monkeypatch.setitem(sys.modules, "compression", None)
    got = gpu_code(so)
    assert got.gfx == ("gfx950",)  # gfx1103 is in the zstd bundle: not guessed
    assert got.unreadable == (".hip_fatbin: 1 compressed offload bundle(s) use zstd (CCOB method 1), and no zstd "
                              "decompressor is installed here (Python 3.14's compression.zstd, or `pip install "
                              "zstandard`): their targets are not read")


def test_a_zstd_bomb_is_read_only_up_to_its_entry_table_bound(tmp_path: Path) -> None:
    """A hostile bundle: zstd of 64 MiB of zeros (a few KiB on disk) — no bundle magic, so no entry table: the
    reader stops at the first bytes it decompressed, it never inflates the rest."""
    import zstandard

    bomb = zstandard.ZstdCompressor(level=3).compress(bytes(64 << 20))
    data = b"CCOB" + struct.pack("<HHQQQ", 3, 1, 32 + len(bomb), 64 << 20, 0) + bomb
    so = gcc_so(tmp_path, data + ccob(bundle("gfx942"), method=1))
    got = gpu_code(so)
    assert got.gfx == ("gfx942",) and got.unreadable == (".hip_fatbin: 1 offload bundle(s) have no readable entry "
                                                         "table"), got


def test_family_and_arch_specific_cubins_and_ptx_are_told_apart(tmp_path: Path) -> None:
    """nvcc's family-specific (sm_100f, compute_100f) and arch-specific (sm_100a, sm_90a, compute_120a) targets: each
    read with its suffix — never as plain sm_100 (which PTX would JIT onward from) — whatever order nvcc writes them."""
    so = nvcc_so(tmp_path, "libkf.so", "-gencode", "arch=compute_100f,code=sm_100f", "-gencode",
                 "arch=compute_100a,code=sm_100a", "-gencode", "arch=compute_90a,code=sm_90a", "-gencode",
                 "arch=compute_100f,code=compute_100f", "-gencode", "arch=compute_120a,code=compute_120a",
                 "-gencode", "arch=compute_80,code=sm_80")
    got = gpu_code(so)
    assert got == GpuCode(sm=("sm_80", "sm_90a", "sm_100a", "sm_100f"), ptx=("compute_100f", "compute_120a"), gfx=())
    from tritonlock._archs import gpu_runs

    assert gpu_runs("10.3", got.sm, got.ptx) == "sass"  # (sm_100f: family 10)
    assert gpu_runs("12.0", got.sm, got.ptx) == "ptx"  # (compute_120a: that GPU alone)
    assert gpu_runs("12.1", got.sm, got.ptx) is None  # (neither compute_100f nor compute_120a JITs to 12.1)
