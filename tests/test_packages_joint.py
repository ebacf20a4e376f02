"""The packages decision as one search (issue 39): the facts that decide what can load where — each release's torch
requirement and the native code of its wheel — are read before uv is asked and become per-torch-line constraints; the
best answer is picked by the stated order (the packages as the user wrote them, each at its newest release lockable
with the ones before it, then torch newest); a package none of whose releases can load is its target's conflict at
once, on that target only. Every extension here is a real shared object (tests/nativebuild.py) on a local index
shaped like PyPI: torch 2.10.0 is a CUDA 12.8 build, 2.11.0 a CUDA 13.0 one (compat/torch.toml)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nativebuild import extension, library, stub_library
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.compat.matrix import load_matrix
from tritonlock.lock.lockfile import read_lock

CP = "cp311-cp311-manylinux_2_17_x86_64"
LINUX = "py3-none-manylinux_2_17_x86_64"
H100 = 'driver = "580.95.05"\ngpus = ["9.0"]'
V100 = 'driver = "580.95.05"\ngpus = ["7.0"]'
# the same torch release's C++ API: a symbol torch 2.10's libc10 stub defines (the label says which torch it was for)
C10 = "_ZN3c1014only_in_2_10v1Ev"


@pytest.fixture(scope="module")
def joint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    tmp = tmp_path_factory.mktemp("joint-build")
    idx = LocalIndex(tmp_path_factory.mktemp("joint-index"))
    stubs = {name: stub_library(tmp / name.split(".so")[0], name, syms) for name, syms in (
        ("libcudart.so.12", ("cudaRuntimeGetVersion",)), ("libcudart.so.13", ("cudaRuntimeGetVersion",)),
        ("libcuda.so.1", ("cuInit",)), ("libc10.so", ("c10_stub", C10)))}

    def kern(name: str, cudart: str, archs: tuple[tuple[int, ...], ...], *, driver: bool = True,
             cxx: bool = False) -> bytes:
        links = {stubs[cudart]: ("cudaRuntimeGetVersion",)}
        if driver:
            links[stubs["libcuda.so.1"]] = ("cuInit",)
        if cxx:
            links[stubs["libc10.so"]] = (C10,)
        return extension(tmp / f"{name}-{cudart}-{len(archs)}-{driver}-{cxx}", f"{name}._C", links=links,
                         fatbin=archs)

    m = load_matrix()
    for tv, runtime in (("2.10.0", "nvidia-cuda-runtime-cu12==12.8.90"), ("2.11.0", "nvidia-cuda-runtime==13.0.96"),
                        ("2.12.0", "nvidia-cuda-runtime==13.0.96")):
        rel = m.torch_release(tv)
        assert rel is not None and rel.triton
        idx.add("simple", "triton", rel.triton, tag=LINUX)
        idx.add("simple", "torch", tv, tag=CP, requires=(runtime, f"triton=={rel.triton}; platform_system == 'Linux'"),
                modules={"torch/__init__.py": ""})
        idx.add("simple", "torch", tv, tag="cp311-none-macosx_11_0_arm64", modules={"torch/__init__.py": ""})
    idx.add("simple", "nvidia-cuda-runtime-cu12", "12.8.90", tag=LINUX,
            modules={"nvidia/cuda_runtime/lib/libcudart.so.12": stubs["libcudart.so.12"].read_bytes()})
    idx.add("simple", "nvidia-cuda-runtime", "13.0.96", tag=LINUX,
            modules={"nvidia/cu13/lib/libcudart.so.13": stubs["libcudart.so.13"].read_bytes()})
    # linepkg 3.0 links torch 2.10's C++ API (its label says so) and CUDA 12: it loads beside torch 2.10 only; 2.0 is a
    # CUDA 13 build on the stable ABI, which loads beside torch 2.11 only
    idx.add("simple", "linepkg", "2.0", tag=CP, requires=("torch>=2.10",), uploaded="2026-05-01", modules={
        "linepkg/__init__.py": "", "linepkg/_C.so": kern("linepkg", "libcudart.so.13", ((2, 90),))})
    idx.add("simple", "linepkg", "3.0+pt210cu128", tag=CP, requires=("torch>=2.10",), uploaded="2026-06-01", modules={
        "linepkg/__init__.py": "", "linepkg/_C.so": kern("linepkg", "libcudart.so.12", ((2, 90),), cxx=True)})
    # voltakern: every release has code for sm_80 and sm_90 only (no PTX): nothing of it runs on a V100
    for n in range(1, 5):
        idx.add("simple", "voltakern", f"{n}.0", tag=CP, requires=("torch>=2.10",), uploaded=f"2026-0{n}-01",
                modules={"voltakern/__init__.py": "",
                         "voltakern/_C.so": kern("voltakern", "libcudart.so.13" if n > 2 else "libcudart.so.12",
                                                 ((2, 80), (2, 90)))})
    # cudartlib: a CUDA 12 runtime user that needs no driver to import (as a CPU fallback path would)
    idx.add("simple", "cudartlib", "1.0", tag=CP, requires=("torch>=2.10",), modules={
        "cudartlib/__init__.py": "", "cudartlib/_C.so": kern("cudartlib", "libcudart.so.12", (), driver=False)})
    # bringpkg links the CUDA 12 runtime and requires the NVIDIA wheel that brings it (as cupy's cuda extras do)
    idx.add("simple", "bringpkg", "1.0", tag=CP, requires=("torch>=2.10", "nvidia-cuda-runtime-cu12==12.8.90"),
            modules={"bringpkg/__init__.py": "", "bringpkg/_C.so": kern("bringpkg", "libcudart.so.12", ((2, 90),))})
    # pinkern pins torch 2.10.0 itself (as vllm 0.19.1 does) and links the CUDA 12 runtime
    idx.add("simple", "pinkern", "1.0", tag=CP, requires=("torch==2.10.0",), modules={
        "pinkern/__init__.py": "", "pinkern/_C.so": kern("pinkern", "libcudart.so.12", ((2, 90),))})
    # wrapgpu is pure Python and requires voltakern (which has no code for a V100)
    idx.add("simple", "wrapgpu", "1.0", requires=("voltakern", "torch>=2.10"))
    # symkern 1.0 links torch 2.10's C++ API and no CUDA: it loads beside torch 2.10 only, which no requirement says
    idx.add("simple", "symkern", "1.0+pt210", tag=CP, modules={"symkern/__init__.py": "", "symkern/_C.so": extension(
        tmp / "symkern", "symkern._C", links={stubs["libc10.so"]: (C10,)})})
    # manymod 2.0 (built for torch 2.11): beside torch 2.10 on an R550 driver its native code fails three ways — a CUDA
    # 13 runtime no locked wheel brings, a CUDA the driver cannot run, torch 2.11's C++ API (1.0: a CUDA 12 build)
    idx.add("simple", "manymod", "1.0", tag=CP, uploaded="2026-03-01", modules={
        "manymod/__init__.py": "", "manymod/_C.so": kern("manymod", "libcudart.so.12", ((2, 90),))})
    idx.add("simple", "manymod", "2.0+pt211", tag=CP, uploaded="2026-04-01", modules={
        "manymod/__init__.py": "", "manymod/_m0.so": kern("manymod0", "libcudart.so.13", ((2, 90),)),
        "manymod/_m1.so": extension(tmp / "manymod1", "manymod._m1", links={stubs["libc10.so"]: (C10,)})})
    # pinapp 2.0 pins torch 2.11.0 (its own module a CUDA 13 build) and requires cu12kern, a CUDA 12 build that loads
    # beside torch 2.10 only (as sglang 0.5.23[all] pins torch 2.14.1 and requires st_attn 0.0.7, a CUDA 12 build)
    idx.add("simple", "cu12kern", "1.0", tag=CP, requires=("torch>=2.10",), modules={
        "cu12kern/__init__.py": "", "cu12kern/_C.so": kern("cu12kern", "libcudart.so.12", ((2, 90),))})
    idx.add("simple", "pinapp", "1.0", requires=("torch==2.10.0", "cu12kern"), uploaded="2026-04-01")
    idx.add("simple", "pinapp", "2.0", tag=CP, requires=("torch==2.11.0", "cu12kern"), uploaded="2026-09-01", modules={
        "pinapp/__init__.py": "", "pinapp/_C.so": kern("pinapp", "libcudart.so.13", ((2, 90),))})
    # mixghost 2.0 has code for sm_80 only; 1.5 is a CUDA 12 build with sm_90 code (it loads beside torch 2.10 only)
    # and needs ghostpkg, as 1.0 does (the index never served it): on an H100 uv finds no lock
    idx.add("simple", "mixghost", "1.0", requires=("torch>=2.10", "ghostpkg"), uploaded="2026-02-01")
    idx.add("simple", "mixghost", "1.5", tag=CP, requires=("torch>=2.10", "ghostpkg"), uploaded="2026-04-01",
            modules={"mixghost/__init__.py": "", "mixghost/_C.so": kern("mixghost15", "libcudart.so.12", ((2, 90),))})
    idx.add("simple", "mixghost", "2.0", tag=CP, requires=("torch>=2.10",), uploaded="2026-06-01", modules={
        "mixghost/__init__.py": "", "mixghost/_C.so": kern("mixghost20", "libcudart.so.12", ((2, 80),))})
    # audiokit 2.0 names no torch between 1.0 (torch==2.10.0) and 2.1 (torch>=2.11), as torchaudio 2.11.0 does
    idx.add("simple", "audiokit", "1.0", requires=("torch==2.10.0",), uploaded="2026-03-01")
    idx.add("simple", "audiokit", "2.0", uploaded="2026-09-01")
    idx.add("simple", "audiokit", "2.1", requires=("torch>=2.11",), uploaded="2026-10-01")
    # audioapp pins torch 2.11.0 and audiokit 2.0 (as vllm 0.33.0 pins torch 2.14.0 and torchaudio 2.11.0)
    idx.add("simple", "audioapp", "1.0", requires=("torch==2.11.0", "audiokit==2.0"), uploaded="2026-09-15")
    # audiokit2 likewise, but its 1.0 pins torch 2.11.0
    idx.add("simple", "audiokit2", "1.0", requires=("torch==2.11.0",), uploaded="2026-03-01")
    idx.add("simple", "audiokit2", "2.0", uploaded="2026-09-01")
    idx.add("simple", "audiokit2", "2.1", requires=("torch>=2.11",), uploaded="2026-10-01")
    # nestwrap's extra `all` asks for its own extra `srt`, which requires voltakern (sglang[all] -> sglang[srt] ->
    # sgl-kernel); nestghost likewise, and its 0.5 needs a package the index never served (sglang 0.4.0: flashinfer)
    for name in ("nestwrap", "nestghost"):
        for n in (1, 2):
            idx.add("simple", name, f"{n}.0", requires=("torch>=2.10", f"{name}[srt]; extra == 'all'",
                                                        f"voltakern>={n}.0; extra == 'srt'"),
                    extras=("all", "srt"), uploaded=f"2026-0{n + 4}-01")
    idx.add("simple", "nestghost", "0.5", requires=("torch>=2.10", "ghostpkg; extra == 'all'"), extras=("all", "srt"),
            uploaded="2026-02-01")
    # cudnnuser links cuDNN, which nothing here brings (the rule on the closure refuses it, line after line)
    cudnn = stub_library(tmp / "cudnn", "libcudnn.so.9", ("cudnnCreate",))
    idx.add("simple", "cudnnuser", "1.0", tag=CP, requires=("torch>=2.10",), modules={
        "cudnnuser/__init__.py": "", "cudnnuser/_C.so": extension(tmp / "cudnnuser", "cudnnuser._C",
                                                                  links={cudnn: ("cudnnCreate",)})})
    idx.add("simple", "usescudnn", "1.0", requires=("cudnnuser",))
    # cudnnmany: five releases, each linking cuDNN; 3.0 also requires a (hollow) NVIDIA wheel the others do not
    idx.add("simple", "nvidia-cudnn-hollow", "9.0", tag=LINUX)
    for n in range(1, 6):
        idx.add("simple", "cudnnmany", f"{n}.0", tag=CP, requires=("torch>=2.10", *(
            ("nvidia-cudnn-hollow",) if n == 3 else ())), modules={
            "cudnnmany/__init__.py": "", "cudnnmany/_C.so": extension(tmp / f"cudnnmany{n}", "cudnnmany._C",
                                                                      links={cudnn: ("cudnnCreate",)})})
    idx.add("simple", "usesmany", "1.0", requires=("cudnnmany",))
    # linuxonly: Linux wheels only, no sdist (as NVIDIA's libraries)
    idx.add("simple", "linuxonly", "1.0", tag=LINUX)
    idx.add("simple", "linuxonly", "2.0", tag=LINUX)
    # newapp 2.0 pins torch 2.11, 1.0 torch 2.10; oldkern's releases were all built for torch 2.10's C++ API
    idx.add("simple", "newapp", "1.0", requires=("torch==2.10.0",), uploaded="2026-04-01")
    idx.add("simple", "newapp", "2.0", requires=("torch==2.11.0",), uploaded="2026-09-01")
    for n in (1, 2):
        idx.add("simple", "oldkern", f"{n}.0+pt210cu128", tag=CP, requires=("torch>=2.10",),
                uploaded=f"2026-0{n + 3}-01", modules={
                    "oldkern/__init__.py": "", "oldkern/_C.so": kern("oldkern", "libcudart.so.12", ((2, 90),),
                                                                     cxx=True)})
    # prekern / prekern2: an sdist-only 0.5 whose requirements its PKG-INFO does not vouch for (Metadata-Version 2.1:
    # only a build shows them — it pins torch 2.10.0, as lmcache 0.3.0 pins torch 2.7.0), final releases all built for
    # torch 2.10's C++ API, and a pre-release newer than them all: prekern's 3.0rc1 a CUDA 13 build on the stable ABI
    # (it loads beside torch 2.11), prekern2's built for torch 2.10 too (as lmcache 0.5.7rc2 beside torch 2.14)...
    for name, pre_cxx in (("prekern", False), ("prekern2", True)):
        idx.add_sdist("simple", name, "0.5", requires=("torch==2.10.0",), static_metadata=False,
                      uploaded="2026-01-01")
        for n in (1, 2):
            idx.add("simple", name, f"{n}.0", tag=CP, requires=("torch>=2.10",), uploaded=f"2026-0{n + 3}-01",
                    modules={f"{name}/__init__.py": "", f"{name}/_C.so": kern(name, "libcudart.so.12", ((2, 90),),
                                                                            cxx=True)})
        idx.add("simple", name, "3.0rc1", tag=CP, requires=("torch>=2.10",), uploaded="2026-10-01",
                modules={f"{name}/__init__.py": "", f"{name}/_C.so": kern(
                    name, "libcudart.so.12" if pre_cxx else "libcudart.so.13", ((2, 90),), cxx=pre_cxx)})
    # pinlater requires newapp below 2.0, and is a CUDA 13 build: its facts allow it beside torch 2.11 only, uv's not
    idx.add("simple", "pinlater", "1.0", tag=CP, requires=("newapp<2.0",), modules={
        "pinlater/__init__.py": "", "pinlater/_C.so": kern("pinlater", "libcudart.so.13", ((2, 90),))})
    # oldsrc: 3.0 pins torch 2.11.0, 2.0 is an sdist whose build cannot run here (as vllm 0.1.1's setup.py wants
    # CUDA_HOME) and whose PKG-INFO does not vouch for its requirements, 1.0 a wheel for any torch
    idx.add("simple", "oldsrc", "3.0", requires=("torch==2.11.0",), uploaded="2026-09-01")
    idx.add_sdist("simple", "oldsrc", "2.0", static_metadata=False, uploaded="2026-05-01",
                  prelude="raise RuntimeError('Cannot find CUDA at CUDA_HOME: /usr/local')")
    idx.add("simple", "oldsrc", "1.0", requires=("torch>=2.10",), uploaded="2026-01-01")
    # usestub 2.0 needs stubdep, an sdist alone whose build stands in for another index's wheel (as tensorrt-cu13-libs'
    # placeholder on PyPI, which torch-tensorrt needs): its build fails here with its message on the lines after the
    # exception's name; usestub 1.0 has a wheel for another Python only
    idx.add("simple", "usestub", "2.0", requires=("stubdep==1.0", "torch>=2.10"), uploaded="2026-09-01")
    idx.add("simple", "usestub", "1.0", tag="cp39-cp39-manylinux_2_17_x86_64", uploaded="2026-01-01")
    idx.add_sdist("simple", "stubdep", "1.0", static_metadata=False, uploaded="2026-09-01", prelude=(
        "class InstallFailedError(Exception):\n    pass\n"
        "raise InstallFailedError('\\n' + '*' * 40 + '\\n\\nThe installation of stubdep for version 1.0 failed.\\n\\n"
        "This is a special placeholder package which downloads a real wheel package\\nfrom another index. If it is "
        "not reachable, we\\ncannot download the real wheel file to install.\\n\\n' + '*' * 40)"))
    # ... with an alpha before it (prekern's built for torch 2.10 too: the newest pre-release is the one asked for)
    idx.add("simple", "prekern", "3.0a1", tag=CP, requires=("torch>=2.10",), uploaded="2026-09-01",
            modules={"prekern/__init__.py": "", "prekern/_C.so": kern("prekern", "libcudart.so.12", ((2, 90),),
                                                                      cxx=True)})
    # ... and prekern2 an old pre-release that loads beside torch 2.11: older than its releases, never the fix
    idx.add("simple", "prekern2", "0.9rc1", tag=CP, requires=("torch>=2.10",), uploaded="2026-02-01",
            modules={"prekern2/__init__.py": "", "prekern2/_C.so": kern("prekern2", "libcudart.so.13", ((2, 90),))})
    # bitsandbytes (compat/packages.toml [[cuda-build-pick]]): one library per CUDA release that no module links,
    # loaded by name at run time for torch's CUDA — the exact release below 0.46, any of its major from 0.50
    # (0.42.0 as bitsandbytes 0.42 and older ship it: a py3-none-any wheel that carries the libraries)
    for v, cudas in (("0.42.0", ("126", "128")), ("0.43.3", ("126", "128")), ("0.45.0", ("126", "129")),
                     ("0.50.0", ("126", "129")), ("0.50.1", ("129", "131"))):
        idx.add("simple", "bitsandbytes", v, tag="py3-none-any" if v == "0.42.0" else LINUX, requires=(
            "torch>=2.10",), modules={
            "bitsandbytes/__init__.py": "", **{f"bitsandbytes/libbitsandbytes_cuda{c}.so": stub_library(
                tmp / f"bnb{c}", f"libbitsandbytes_cuda{c}.so").read_bytes() for c in cudas}})
    # onnxruntime-gpu (compat/packages.toml [[dlopen-needed]]: its CUDA provider, a library of its wheel it loads by
    # name) and otherort, the same files under a name no row names: 2.0's provider is a CUDA 13 build, 1.0's CUDA 12
    for name, top in (("onnxruntime-gpu", "onnxruntime"), ("otherort", "otherort")):
        for n, cudart in (("1.0", "libcudart.so.12"), ("2.0", "libcudart.so.13")):
            idx.add("simple", name, n, tag=CP, modules={
                f"{top}/__init__.py": f"from {top} import _state\n",
                f"{top}/_state.so": extension(tmp / f"{name}{n}s", f"{top}._state", links={}),
                f"{top}/libonnxruntime_providers_cuda.so": library(
                    tmp / f"{name}{n}p", "libonnxruntime_providers_cuda.so",
                    links={stubs[cudart]: ("cudaRuntimeGetVersion",)})})
    idx.start()
    yield idx
    idx.stop()


def _project(root: Path, idx: LocalIndex, packages: list[str], *targets: str, torch: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    body = "".join(f"\n[[targets]]\nname = \"{t.split('|')[0]}\"\n{t.split('|', 1)[1]}\n" for t in targets)
    (root / "triton-env.toml").write_text(
        f'[environment]\npython = "3.11"\npackages = {json.dumps(packages)}\n' + (f'torch = "{torch}"\n' if torch else "")
        + f'[indexes]\ntorch = "default"\ndefault = "{idx.index_url("simple")}"\n{body}', encoding="utf-8")
    return root


def _linux(name: str, spec: str) -> str:
    return f'{name}|glibc = "2.35"\n{spec}'


MAC = 'mac|os = "macos"\narch = "arm64"\nmacos = "14.5"'


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def _target(root: Path, name: str) -> tuple[dict[str, str], object]:
    (t,) = [t for t in read_lock(root / "triton-env.lock").targets if t.name == name]
    return {p.name: p.version for p in t.packages}, t.selection


def test_a_release_that_loads_beside_one_torch_line_only_is_locked_on_that_line(tmp_path: Path,
                                                                               joint: LocalIndex) -> None:
    """linepkg 3.0 loads beside torch 2.10 only (CUDA 12, torch 2.10's C++ API): the package gets its newest release
    and torch the line it loads beside — the packages come before torch. With torch = "==2.11.*", 3.0 is passed over
    for that line alone and 2.0 (CUDA 13) is locked, the reason quoting the facts of 3.0's wheel."""
    root = _project(tmp_path / "free", joint, ["linepkg"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root, "gpu")
    assert (versions["linepkg"], versions["torch"]) == ("3.0+pt210cu128", "2.10.0"), versions
    assert sel.reasons[0] == ("torch 2.10.0 (cu128): the newest torch build that brings CUDA 12, which linepkg 3.0's "
                              "native code needs; torch 2.12.0 (cu130) would fit this target"), sel.reasons
    assert not [w for w in sel.warnings if "is locked, not its newest" in w]
    pinned = _project(tmp_path / "pinned", joint, ["linepkg"], _linux("gpu", H100), torch="==2.11.*")
    code, out = _run("resolve", "-p", str(pinned))
    assert code == 0, out
    versions, sel = _target(pinned, "gpu")
    assert (versions["linepkg"], versions["torch"]) == ("2.0", "2.11.0"), versions
    (w,) = [w for w in sel.warnings if w.startswith("linepkg 2.0 is locked, not its newest release 3.0: ")]
    assert ("its native code cannot load on this target: linepkg/_C.so in linepkg-3.0+pt210cu128-" in w
            and "links torch's C++ API and was built for torch 2.10" in w), w


def test_a_newest_release_that_loads_beside_an_older_torch_line_reads_no_older_release(tmp_path: Path,
                                                                                       joint: LocalIndex) -> None:
    """linepkg's newest (3.0) cannot load beside torch 2.12 or 2.11 but loads beside 2.10: the packages come before
    torch, so 3.0 + torch 2.10 is the answer whatever older releases load beside the newer lines — linepkg 2.0's
    wheel (which loads beside 2.11) is never read (its METADATA is: the torch it admits). With torch = "==2.11.*" 2.0 is needed: then it
    is read."""
    def wheels_read(since: int, name: str) -> list[str]:  # tritonlock's reads of the wheels (METADATA aside)
        return [s for s, agent in joint.asked_by[since:] if "/_files/" in s and not agent.startswith("uv/")
                and s.rsplit("/", 1)[-1].startswith(name) and s.endswith(".whl")]

    before = len(joint.asked_by)
    root = _project(tmp_path / "free", joint, ["linepkg"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, _ = _target(root, "gpu")
    assert (versions["linepkg"], versions["torch"]) == ("3.0+pt210cu128", "2.10.0"), versions
    assert wheels_read(before, "linepkg-3.0") and not wheels_read(before, "linepkg-2.0"), joint.asked_by[before:]
    before = len(joint.asked_by)
    pinned = _project(tmp_path / "pinned", joint, ["linepkg"], _linux("gpu", H100), torch="==2.11.*")
    code, out = _run("resolve", "-p", str(pinned))
    assert code == 0, out
    assert _target(pinned, "gpu")[0]["linepkg"] == "2.0"
    assert wheels_read(before, "linepkg-2.0"), joint.asked_by[before:]


def test_a_package_with_no_code_for_one_gpu_is_that_targets_conflict_at_once(tmp_path: Path,
                                                                            joint: LocalIndex) -> None:
    """voltakern has code for sm_80/sm_90 only, in every release: the V100 is a conflict naming the package, the GPU
    code and the least change, its four releases read and named; the H100 beside it is locked (exit 3, one lock)."""
    root = _project(tmp_path, joint, ["voltakern"], _linux("h100", H100), _linux("v100", V100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    versions, _ = _target(root, "h100")
    assert versions["voltakern"] == "4.0"
    (v100,) = [t for t in read_lock(root / "triton-env.lock").targets if t.name == "v100"]
    assert not v100.selection.ok and v100.selection.conflict is not None
    msg = v100.selection.conflict.message
    assert msg.startswith("target 'v100': voltakern's native code cannot load on this target: voltakern 4.0: its GPU "
                          "code is built for sm_80, sm_90 (no PTX), which has no code for this target's GPU "
                          "(compute capability 7.0)"), msg
    assert "  tried and rejected: voltakern 4.0, 3.0, 2.0, 1.0\n" in msg, msg
    assert msg.endswith("fix: a build of voltakern with code for sm_70 (none of the releases tried has it), or a "
                        "target without voltakern for these GPUs"), msg


def test_reading_down_a_packages_releases_is_bounded_and_goes_on_in_the_next_resolve(
        tmp_path: Path, joint: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a budget of one release's wheel a resolve (and one release a batch), the V100's conflict names what was
    read and what was not — never "none can load" for releases not read — and a second resolve reads on from there
    (what was read is kept), until every release is read: then the conflict names them all."""
    from tritonlock.decide import _pkgload

    monkeypatch.setattr(_pkgload, "READ_BUDGET", 1)
    monkeypatch.setattr(_pkgload, "LOOK", 1)
    root = _project(tmp_path, joint, ["voltakern"], _linux("v100", V100))
    said = []
    for _ in range(3):
        code, out = _run("resolve", "-p", str(root))
        assert code == 3, out
        said.append(out[out.index("error: target 'v100': "):])
    assert "  tried and rejected: voltakern 4.0, 3.0\n" in said[0], said[0]
    assert ("  with those passed over: not read: the 2 releases of voltakern older than 3.0 (2.0 … 1.0) — a resolve "
            "reads at most 1 B of a package's wheels looking for a release that can load: resolve again to read on "
            "(what was read is kept), or name one in [environment].packages (\"voltakern==2.0\")") in said[0], said[0]
    assert "  tried and rejected: voltakern 4.0, 3.0, 2.0\n" in said[1] and "not read: voltakern 1.0 — " in said[1]
    assert "  tried and rejected: voltakern 4.0, 3.0, 2.0, 1.0\n" in said[2] and "not read" not in said[2], said[2]


def test_a_hopeless_package_is_found_from_the_facts_without_asking_uv_for_an_answer(tmp_path: Path,
                                                                                     joint: LocalIndex) -> None:
    """The decision itself, with a compile that records what it is asked and never answers: the V100's conflict comes
    from the wheels' facts alone — uv is asked once at most, in the background, to warm its cache while they are
    read; the search asks it nothing."""
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.decide.packages import Native, decide
    from tritonlock.decide.resolve import feasible
    from tritonlock.errors import ClosureError
    from tritonlock.intent.read import read_intent
    from tritonlock.native.read import Reader
    from tritonlock.project import native_wanted, select

    root = _project(tmp_path, joint, ["voltakern"], _linux("v100", V100))
    intent = read_intent(root / "triton-env.toml")
    matrix = load_matrix()
    (sel,) = select(intent)
    asked: list[str] = []
    lock = threading.Lock()

    def no_answer(plan, default_index, **kw):  # type: ignore[no-untyped-def]
        with lock:
            asked.append(str(plan.torch_spec))
        raise ClosureError("no answer here", uv="")

    reader = Reader()
    try:
        chosen, packages = decide(sel, feasible(intent, matrix, sel.target, "3.11"), intent, matrix,
                                  joint.index_url("simple"), compile=no_answer, default_python="3.11",
                                  native=Native(wanted=native_wanted, facts=reader.facts, read=reader.read))
    finally:
        reader.close()
    assert not chosen.ok and packages == () and chosen.conflict is not None
    assert "voltakern's native code cannot load on this target" in chosen.conflict.message
    assert "sm_70" in chosen.conflict.message
    assert len(asked) <= 1, asked  # (the background warm-up alone)


def test_a_named_package_with_linux_wheels_only_is_the_macs_conflict_not_every_targets(tmp_path: Path,
                                                                                     joint: LocalIndex) -> None:
    """linuxonly has Linux wheels and no sdist: the two Linux targets are locked, the Mac is a conflict (exit 3) naming
    the platform and the least change — not exit 4 for all of them ("check that both indexes are reachable")."""
    root = _project(tmp_path, joint, ["linuxonly"], MAC, _linux("h100", H100), _linux("v100", V100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "reachable" not in out and "Traceback" not in out
    assert _target(root, "h100")[0]["linuxonly"] == "2.0" and _target(root, "v100")[0]["linuxonly"] == "2.0"
    (mac,) = [t for t in read_lock(root / "triton-env.lock").targets if t.name == "mac"]
    assert mac.selection.conflict is not None
    assert mac.selection.conflict.message == (
        "target 'mac': linuxonly has no release that installs on Python 3.11 on macOS arm64 14.5: its wheels are for "
        f"manylinux_2_17_x86_64 only, and it has no sdist (read from {joint.index_url('simple')})\n"
        "  fix: lock linuxonly for the machines that can install it only (a target or environment of their own), or "
        "drop it from [environment].packages for this target (a marker: \"linuxonly; sys_platform == 'linux'\")")
    # the fix works: with the marker, the Mac is locked without it
    intent = root / "triton-env.toml"
    intent.write_text(intent.read_text().replace('"linuxonly"', '"linuxonly; sys_platform == \'linux\'"'))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert "linuxonly" not in _target(root, "mac")[0]


def test_a_target_without_a_driver_moves_torch_for_a_cuda_12_build(tmp_path: Path, joint: LocalIndex) -> None:
    """cudartlib needs the CUDA 12 runtime (and no driver): on a laptop, where the default index's torch is taken to
    run on the CPU, the decision takes torch 2.10 — whose build brings CUDA 12 — as it does on a GPU box; torch 2.11's
    CUDA 13 build would leave the import without libcudart.so.12."""
    root = _project(tmp_path, joint, ["cudartlib"], 'laptop|glibc = "2.35"\ngpus = []', _linux("h100", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    for name in ("laptop", "h100"):
        versions, sel = _target(root, name)
        assert (versions["cudartlib"], versions["torch"], versions["nvidia-cuda-runtime-cu12"]) == (
            "1.0", "2.10.0", "12.8.90"), (name, versions)
        assert sel.reasons[0].startswith("torch 2.10.0 (cu128): the newest torch build that brings CUDA 12, which "
                                         "cudartlib 1.0's native code needs"), sel.reasons


@pytest.mark.parametrize("order", [["newapp", "oldkern"], ["oldkern", "newapp"]])
def test_two_packages_whose_newest_exclude_each_other_follow_the_order_written(tmp_path: Path, joint: LocalIndex,
                                                                              order: list[str]) -> None:
    """newapp 2.0 needs torch 2.11; every oldkern was built for torch 2.10's C++ API. Named first, newapp keeps its
    newest and oldkern — named after it — may not hold it back: a conflict naming both, whose fix (newapp at most
    1.0, the newest that admits oldkern) is checked and works. Named first, oldkern keeps its newest and newapp is
    held back to 1.0, the warning saying why."""
    root = _project(tmp_path, joint, order, _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    if order[0] == "oldkern":
        assert code == 0, out
        versions, sel = _target(root, "gpu")
        assert (versions["oldkern"], versions["newapp"], versions["torch"]) == ("2.0+pt210cu128", "1.0", "2.10.0")
        (w,) = [w for w in sel.warnings if w.startswith("newapp 1.0 is locked, not its newest release 2.0: ")]
        # the reason the torch line was kept, not only uv's check beside it ("you require torch==2.10.0")
        assert w.startswith("newapp 1.0 is locked, not its newest release 2.0: newapp 2.0 requires torch==2.11.0, and "
                            "beside torch 2.11.0 (cu130) oldkern 2.0, named before it, cannot be locked: "
                            "its native code cannot load there: "), w
        # (newapp 2.0's METADATA, read for the decision, answers the check beside torch 2.10.0: uv is not asked)
        assert w.endswith("(checked: newapp 2.0's METADATA requires torch==2.11.0, and torch 2.10.0 is locked here)"), w
        return
    assert code == 3, out
    assert not (root / "triton-env.lock").exists()
    msg = out[out.index("error: target 'gpu': "):].removeprefix("error: ")
    assert msg.startswith("target 'gpu': oldkern cannot be locked beside newapp 2.0 (the newest that can be locked "
                          "here, with torch 2.11.0) — and oldkern, named after it, may not hold it back (the packages "
                          "keep the order you wrote): oldkern 2.0's native code cannot load there: "), msg
    assert "was built for torch 2.10" in msg, msg
    assert ('  fix: add "newapp<=1.0" to [environment].packages (checked: uv then locks newapp 1.0, oldkern 2.0 with '
            "torch 2.10.0), or put oldkern in an environment (or target) of its own") in msg, msg
    intent = root / "triton-env.toml"
    intent.write_text(intent.read_text().replace('"newapp"', '"newapp<=1.0"'))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert _target(root, "gpu")[0]["newapp"] == "1.0"


@pytest.mark.parametrize("kern", ["prekern", "prekern2"])
def test_a_later_package_that_uv_alone_rules_out_beside_the_first_ones_newest_is_a_conflict_not_a_demotion(
        tmp_path: Path, joint: LocalIndex, kern: str) -> None:
    """newapp 2.0 needs torch 2.11, where no final release of the kernel package the facts read loads (each a CUDA 12
    build that links torch 2.10's C++ API) and its sdist 0.5 — whose requirements only a build shows — pins torch 2.10.0 (the facts
    cannot rule it out: uv does). Beside newapp 2.0, uv then reaches for the pre-release nobody asked for, which is
    passed over, and finds nothing. That is not a reason to demote newapp, named first, to 1.0 in silence: it is a
    conflict naming both, which quotes the facts it read and uv's words for the release it could not read, with the
    fixes checked — newapp at most 1.0; and, where the kernel's pre-release loads beside newapp 2.0's torch, asking for
    that pre-release. Each fix, applied, locks."""
    root = _project(tmp_path, joint, ["newapp", kern], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert not (root / "triton-env.lock").exists()
    msg = out[out.index("error: target 'gpu': "):].removeprefix("error: ")
    assert msg.startswith(f"target 'gpu': {kern} cannot be locked beside newapp 2.0 (the newest that can be locked "
                          f"here, with torch 2.11.0) — and {kern}, named after it, may not hold it back"), msg
    assert f"{kern} 2.0's native code cannot load there: {kern}/_C.so in {kern}-2.0-{CP}.whl needs libcudart.so.12" in msg, msg
    # the two final wheels read, the sdist not: the count claims only what was read, uv's words say the rest
    assert f"{kern} 1.0's native code cannot load there: " in msg and "(and so for" not in msg, msg
    assert (f"the other release, {kern} 0.5 (whose requirements the facts read do not show) uv does not lock there "
            f"either: {kern}") in msg, msg
    assert "depends on torch==2.10.0" in msg.split("uv does not lock there either: ")[1], msg
    fix = msg[msg.index("  fix: "):]
    assert fix.startswith('  fix: add "newapp<=1.0" to [environment].packages (checked: uv then locks newapp 1.0, '
                          f"{kern} 2.0 with torch 2.10.0)"), fix
    pre = (f"ask for {kern}'s pre-release: \"{kern}>=3.0rc1\" in [environment].packages (checked: uv then locks "
           f"newapp 2.0, {kern} 3.0rc1 with torch 2.11.0, and their native code loads there)")
    # (prekern2's pre-release loads only beside torch 2.10, with newapp 1.0: no fix; its old 0.9rc1 is not newer)
    assert (pre in fix) == (kern == "prekern") and ("pre-release" in fix) == (kern == "prekern"), fix
    assert fix.rstrip().endswith(f"or put {kern} in an environment (or target) of its own"), fix
    intent = root / "triton-env.toml"
    text = intent.read_text()
    intent.write_text(text.replace('"newapp"', '"newapp<=1.0"'))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert [_target(root, "gpu")[0][n] for n in ("newapp", kern, "torch")] == ["1.0", "2.0", "2.10.0"]
    if kern == "prekern":
        intent.write_text(text.replace(f'"{kern}"', f'"{kern}>=3.0rc1"'))
        code, out = _run("resolve", "-p", str(root), "--upgrade")
        assert code == 0, out
        assert [_target(root, "gpu")[0][n] for n in ("newapp", kern, "torch")] == ["2.0", "3.0rc1", "2.11.0"]


def test_resolve_says_what_it_is_doing_in_plain_lines_and_nothing_under_json(tmp_path: Path,
                                                                            joint: LocalIndex) -> None:
    """Off a terminal, what the search does is said on stderr in plain lines (the releases read, the torch lines asked
    of uv), each once; under --json, stdout is the document alone and nothing else is said."""
    root = _project(tmp_path, joint, ["voltakern"], _linux("v100", V100), _linux("h100", H100))
    r = CliRunner().invoke(main, ["resolve", "-p", str(root)])
    assert r.exit_code == 3, r.output
    lines = r.stderr.splitlines()
    assert "target v100: reading the native code of voltakern 4.0…" in lines, lines
    assert any(line.startswith("target h100: asking uv for the packages with torch") for line in lines), lines
    assert len(lines) == len(set(lines)) and "reading the native code" not in r.stdout
    r = CliRunner().invoke(main, ["resolve", "-p", str(root), "--json", "--upgrade"])
    assert r.exit_code == 3 and r.stderr == "", r.stderr
    doc = json.loads(r.stdout)
    assert {t["name"]: t["ok"] for t in doc["targets"]} == {"v100": False, "h100": True}


def test_on_a_terminal_the_search_is_one_live_line(tmp_path: Path, joint: LocalIndex) -> None:
    """On a terminal the same words are the target's live line (rich), redrawn in place."""
    import os
    import pty
    import subprocess
    import sys

    root = _project(tmp_path, joint, ["linepkg"], _linux("h100", H100))
    leader, follower = pty.openpty()
    env = dict(os.environ, COLUMNS="160", TERM="xterm")
    proc = subprocess.Popen([sys.executable, "-m", "tritonlock", "resolve", "-p", str(root)], stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=300)
    os.close(leader)
    shown = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0, shown
    assert ("target h100: asking uv for the packages with torch" in shown or "target h100: reading the native code"
            in shown or "target h100: checking the native code" in shown) and "\r" in shown, shown
    assert "…\n" not in shown.split("wrote ")[0]  # (no plain lines: the live line is redrawn)


def test_a_cuda_library_the_release_requires_itself_does_not_move_torch(tmp_path: Path, joint: LocalIndex) -> None:
    """bringpkg links libcudart.so.12 and requires nvidia-cuda-runtime-cu12, which brings it: beside torch 2.12 (CUDA
    13) it loads, so the newest torch is locked — its facts pass it over for no line."""
    root = _project(tmp_path, joint, ["bringpkg"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root, "gpu")
    assert (versions["bringpkg"], versions["torch"], versions["nvidia-cuda-runtime-cu12"]) == ("1.0", "2.12.0",
                                                                                                "12.8.90"), versions
    assert not any(r.startswith("passed over what this target cannot have") for r in sel.reasons), sel.reasons


@pytest.mark.parametrize(("driver", "loads"), [("580.65.06", True), ("580.65.05", False), ("580.65.07", True),
                                               ("580.64.99", False)])
def test_a_cuda_13_build_on_a_driver_exactly_at_cuda_13s_floor_loads(tmp_path: Path, driver: str,
                                                                      loads: bool) -> None:
    """CUDA 13's minor-version-compatibility floor is 580.65.06: a driver exactly there runs a CUDA 13 build (the
    rule on one release beside a line, as the search asks it), a driver one patch below does not."""
    import hashlib

    from pkgindex import build_wheel
    from tritonlock.models import Selection, TargetSpec
    from tritonlock.native.judge import release_problems
    from tritonlock.native.read import read_file
    from tritonlock.native.rule import Item

    cudart = stub_library(tmp_path / "c13", "libcudart.so.13", ("cudaRuntimeGetVersion",))
    whl = build_wheel(tmp_path / "w", "c13pkg", "1.0", tag=CP, modules={
        "c13pkg/_C.so": extension(tmp_path / "e", "c13pkg._C", links={cudart: ("cudaRuntimeGetVersion",)},
                                  fatbin=((2, 90),))})
    facts = read_file(whl, hashlib.sha256(whl.read_bytes()).hexdigest())
    target = TargetSpec(name="gpu", os="linux", arch="x86_64", glibc="2.35", driver=driver, gpus=("9.0",))
    line = Selection(target=target, ok=True, python="3.11", torch="2.11.0", backend="cu130", index="x")
    found = release_problems(line, Item(name="c13pkg", version="1.0", facts=facts), {"libcudart.so.13"},
                             matrix=load_matrix())
    assert (not found) is loads, found
    if not loads:
        assert [p.kind for p in found] == ["cuda-driver"] and "needs driver >= 580.65.06" in found[0].text


def test_a_packages_own_torch_pin_is_why_torch_is_held_not_its_cuda(tmp_path: Path, joint: LocalIndex) -> None:
    """pinkern 1.0 requires torch==2.10.0 and links the CUDA 12 runtime: torch is held at 2.10.0 by that pin, which
    the reason quotes — not "the torch build that brings CUDA 12", true but not why."""
    root = _project(tmp_path, joint, ["pinkern"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root, "gpu")
    assert versions["torch"] == "2.10.0"
    assert sel.reasons[0] == ("torch 2.10.0: the newest torch the packages allow (pinkern 1.0 requires "
                              "torch==2.10.0); torch 2.15.0 would fit this target"), sel.reasons[0]
    assert not any("brings CUDA 12" in w for w in sel.warnings), sel.warnings


def test_a_package_whose_every_release_the_facts_read_fails_and_uv_rules_out_the_rest_is_a_conflict(
        tmp_path: Path, joint: LocalIndex) -> None:
    """prekern alone with torch 2.11: its final wheels cannot load there, its sdist 0.5's requirements only a build
    shows (it pins torch 2.10.0), and uv — once the unasked pre-release it reached for is passed over — finds no lock.
    That is a conflict of the package (exit 3) naming the facts read, counting only the releases they ruled out, and
    quoting uv for the one they could not read; never uv's raw error with "check that both indexes are reachable"."""
    root = _project(tmp_path, joint, ["prekern"], _linux("gpu", H100), torch="==2.11.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert not (root / "triton-env.lock").exists()
    assert "error: target 'gpu': prekern's native code cannot load on this target: prekern 2.0: " in out, out
    assert "  tried and rejected: prekern 2.0, 1.0\n" in out, out
    assert ("uv does not lock the other release, prekern 0.5 (whose requirements the facts read do not show), either: "
            "prekern") in out, out
    assert "depends on torch==2.10.0" in out.split("either: ")[1], out
    assert "indexes are reachable" not in out and "No solution found" not in out, out


def test_a_later_package_whose_facts_allow_it_but_uv_does_not_beside_the_first_ones_newest_says_so(
        tmp_path: Path, joint: LocalIndex) -> None:
    """pinlater's facts allow it beside torch 2.11 (a CUDA 13 build, no torch requirement), but it requires newapp
    below 2.0: beside newapp 2.0 (named first) uv finds no lock. A conflict naming both, which does not say the facts
    ruled pinlater out there (they did not), and quotes uv for it. (No fix has both: beside newapp 1.0's torch 2.10,
    pinlater cannot load.)"""
    root = _project(tmp_path, joint, ["newapp", "pinlater"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    msg = out[out.index("error: target 'gpu': "):]
    assert msg.startswith("error: target 'gpu': pinlater cannot be locked beside newapp 2.0 (the newest that can be "
                          "locked here, with torch 2.11.0)"), msg
    assert ("may not hold it back (the packages keep the order you wrote): uv does not lock pinlater 1.0 there, "
            "though its facts allow it: all versions of pinlater depend on newapp<2.0") in msg, msg
    assert "native code" not in msg and "whose requirements the facts read do not show" not in msg, msg
    assert "  fix: put pinlater and newapp in two environments (or targets), or drop pinlater" in msg, msg


def test_an_sdist_uv_cannot_build_here_is_passed_over_not_the_end_of_the_search(tmp_path: Path,
                                                                               joint: LocalIndex) -> None:
    """With torch 2.10, oldsrc 3.0 (torch 2.11 only) is out, and uv, reaching for 2.0, must build its sdist to read its
    requirements — a build that fails here. That is no answer: 2.0 is passed over (its wheels only: it has none), said
    so, and 1.0 is locked."""
    root = _project(tmp_path, joint, ["oldsrc"], _linux("gpu", H100), torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root, "gpu")
    assert (versions["oldsrc"], versions["torch"]) == ("1.0", "2.10.0")
    (passed,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have: ")]
    assert ("oldsrc 2.0's sdist, which uv could not build here to read its requirements (RuntimeError: Cannot find "
            "CUDA at CUDA_HOME: /usr/local); took oldsrc's wheels only") in passed, passed
    # the held-back line says why not 3.0 (its torch), not the build
    (w,) = [w for w in sel.warnings if w.startswith("oldsrc 1.0 is locked, not its newest release 3.0: ")]
    assert "torch==2.11.0" in w, w


def test_uvs_failure_to_build_an_sdist_is_kept_for_the_same_question_and_asked_again_for_another(
        tmp_path: Path, joint: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """The failed build of oldsrc 2.0's sdist is kept (a file per question in tritonlock's cache): the same resolve
    again takes uv's words from it — a planted change to them shows — and gives the same lock; another build
    environment (CUDA_HOME), a record older than a day, or one that is not a build failure, asks uv again."""
    import os
    import time

    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    root = _project(tmp_path / "p", joint, ["oldsrc"], _linux("gpu", H100), torch="==2.10.*")
    real = ("oldsrc 2.0's sdist, which uv could not build here to read its requirements (RuntimeError: Cannot find "
            "CUDA at CUDA_HOME: /usr/local); took oldsrc's wheels only")

    def passed() -> str:
        code, out = _run("resolve", "-p", str(root), "--upgrade")
        assert code == 0, out
        versions, sel = _target(root, "gpu")
        assert (versions["oldsrc"], versions["torch"]) == ("1.0", "2.10.0")
        (line,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have: ")]
        return line

    assert real in passed()
    kept = sorted((cache / "tritonlock" / "failed-builds").iterdir())
    assert len(kept) == 1 and kept[0].stat().st_mode & 0o777 == 0o600
    record = json.loads(kept[0].read_text())
    assert "Failed to build `oldsrc==2.0`" in record["uv"]
    # planted: the same question answers from the record, not from uv
    record["uv"] = record["uv"].replace("Cannot find CUDA at CUDA_HOME: /usr/local", "planted words")
    kept[0].write_text(json.dumps(record))
    hour_ago = time.time() - 3600
    os.utime(kept[0], (hour_ago, hour_ago))
    assert "(RuntimeError: planted words)" in passed()
    assert abs(kept[0].stat().st_mtime - hour_ago) < 1  # (a record served is not written again: its day runs on)
    # a day old: uv is asked again (and the record made anew)
    old = time.time() - 86400 - 60
    os.utime(kept[0], (old, old))
    assert real in passed()
    assert "planted" not in kept[0].read_text() and kept[0].stat().st_mtime > old + 3600
    # not a build failure: never taken
    kept[0].write_text(json.dumps({"message": "x", "uv": "No solution found"}))
    assert real in passed()
    # another build environment: another question (uv asked, a second record)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    line = passed()
    assert "oldsrc 2.0's sdist, which uv could not build here" in line
    assert len(list((cache / "tritonlock" / "failed-builds").iterdir())) == 2


def test_a_kept_questions_key_is_the_same_in_every_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key of a kept build failure is plain data: sets sorted (Python's string hashes differ per process),
    dataclasses by field, anything else not kept at all."""
    import dataclasses

    from tritonlock.decide._pkgcompile import _canonical, _failed_build_file, keep_build_failure, kept_build_failure
    from tritonlock.errors import ClosureError

    @dataclasses.dataclass(frozen=True)
    class Q:
        names: frozenset[str]
        pairs: tuple[tuple[str, int], ...]

    many = [f"n{i:02d}" for i in range(40)]  # (in a set, in no order a process could guess)
    q = Q(names=frozenset({"b", "a", "c"}), pairs=(("x", 1),))
    assert _canonical(q) == {"": "Q", "names": ["a", "b", "c"], "pairs": [["x", 1]]}
    assert _canonical(frozenset(reversed(many))) == many
    assert _canonical({"z": {2, 1}, "a": None}) == {"a": None, "z": [1, 2]}
    with pytest.raises(ValueError):
        _canonical(object())
    assert _failed_build_file((object(),)) is None
    keep_build_failure((object(),), ClosureError("x", uv="Failed to build `a==1`"))  # (nothing kept, nothing raised)
    assert kept_build_failure((object(),)) is None
    f1, f2 = _failed_build_file(("a", q)), _failed_build_file(("a", Q(names=frozenset({"c", "a", "b"}), pairs=(("x", 1),))))
    assert f1 == f2 and f1 != _failed_build_file(("a", Q(names=frozenset({"a"}), pairs=(("x", 1),))))
    # only uv's failure to build an sdist is kept, and only a ClosureError of its own
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    class Other(ClosureError):
        pass

    keep_build_failure(("a",), ClosureError("no", uv="No solution found when resolving dependencies"))
    keep_build_failure(("a",), Other("no", uv="Failed to build `a==1`"))
    keep_build_failure(("a",), RuntimeError("Failed to build `a==1`"))
    assert kept_build_failure(("a",)) is None and not (tmp_path / "tritonlock").exists()
    keep_build_failure(("a",), ClosureError("said", uv="  x Failed to build `a==1`\n  RuntimeError: y"))
    got = kept_build_failure(("a",))
    assert type(got) is ClosureError and (str(got), got.uv) == ("said", "  x Failed to build `a==1`\n  RuntimeError: y")
    assert kept_build_failure(("b",)) is None
    # records past their day are removed when one is kept; nothing else in the folder is touched
    import os
    import time

    folder = tmp_path / "tritonlock" / "failed-builds"
    old, young, other, link = folder / ("0" * 40), folder / ("1" * 40), folder / "notes.txt", folder / ("2" * 40)
    for f in (old, young, other):
        f.write_text("{}")
    link.symlink_to(old)
    past = time.time() - 86400 - 60
    for f in (old, other):
        os.utime(f, (past, past))
    os.utime(link, (past, past), follow_symlinks=False)
    os.utime(young, (time.time() - 86400 + 600,) * 2)
    keep_build_failure(("c",), ClosureError("said", uv="Failed to build `c==1`"))
    assert not old.exists() and young.exists() and other.exists() and link.is_symlink()
    assert kept_build_failure(("c",)) is not None and kept_build_failure(("a",)) is not None


def test_where_only_an_unbuildable_sdist_is_allowed_the_error_says_so_not_no_build(tmp_path: Path,
                                                                                  joint: LocalIndex) -> None:
    """oldsrc==2.0 (its sdist only, whose build fails here): no lock, and the error names what was passed over and
    why — never "[environment].no-build forbids building it", which the user did not write."""
    root = _project(tmp_path, joint, ["oldsrc==2.0"], _linux("gpu", H100), torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code in (3, 4) and not (root / "triton-env.lock").exists(), out
    assert "no-build" not in out and "Traceback" not in out, out
    assert ("passed over: oldsrc 2.0's sdist, which uv could not build here to read its requirements (RuntimeError: "
            "Cannot find CUDA at CUDA_HOME: /usr/local); took oldsrc's wheels only") in out, out
    assert "make oldsrc's sdist buildable here (what its build needs: the error above), or name a release with a " \
           "wheel for this target" in out, out


def test_a_placeholder_sdist_that_cannot_be_built_here_is_named_with_its_builds_words_not_a_platform(
        tmp_path: Path, joint: LocalIndex) -> None:
    """usestub 2.0 needs stubdep, whose sdist's build fails here (a placeholder for another index's wheel, its message
    on the lines after "InstallFailedError:"); usestub's only other release has no wheel for this Python. No lock, and
    the error names stubdep, the build's own words and what to do — not "usestub has no wheel that installs on Python
    3.11", which uv's derivation passes on its way (as torch-tensorrt's cp312-less old releases did for
    tensorrt-cu13-libs on PyPI)."""
    root = _project(tmp_path, joint, ["usestub"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code in (3, 4) and not (root / "triton-env.lock").exists(), out
    assert "Traceback" not in out and "no-build" not in out, out
    assert "has no wheel that installs" not in out, out
    assert ("the packages need stubdep, whose sdist uv could not build here to read its requirements (and no release "
            "with a wheel fits)") in out, out
    assert ("passed over: stubdep 1.0's sdist, which uv could not build here to read its requirements "
            "(_tl_backend.InstallFailedError: The installation of stubdep for version 1.0 failed. This is a special placeholder "
            "package which downloads a real wheel package from another index. If it is not reachable, we cannot "
            "download the real wheel file to install.); took stubdep's wheels only") in " ".join(out.split()), out
    assert "make stubdep's sdist buildable here (what its build needs: the error above)" in out, out


def test_a_failed_builds_words_are_its_last_exception_with_a_message_on_the_next_lines() -> None:
    from tritonlock.decide._pkgwords import build_error

    assert build_error("x\n  RuntimeError: Cannot find CUDA\n\nhint: y") == "RuntimeError: Cannot find CUDA"
    assert build_error("  E: first\n  ValueError:\n   ****\n\n   line one\n   line two\n  ****\nhint: z\n  more") == \
        "ValueError: line one line two"
    assert build_error("no exception here") == ""
    assert build_error("KeyError:") == "KeyError:"
    long = build_error("OSError:\n" + "word " * 200)
    assert len(long) == 300 and long.endswith("…") and long.startswith("OSError: word word")
    assert build_error("OSError: " + "x" * 400, most=50) == "OSError: " + "x" * 40 + "…"


def test_a_package_held_by_one_named_before_it_says_which_and_why_beside_the_torch_it_needs(
        tmp_path: Path, joint: LocalIndex) -> None:
    """pinkern 1.0 (named first) pins torch 2.10.0; newapp's newest, 2.0, requires torch 2.11.0. newapp 1.0 is
    locked, and its held-back line says why in the user's terms — beside torch 2.11.0 pinkern 1.0 cannot be locked,
    by its own requirement — not only uv's check beside the torch the decision chose ("you require torch==2.10.0")."""
    root = _project(tmp_path, joint, ["pinkern", "newapp"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root, "gpu")
    assert (versions["pinkern"], versions["newapp"], versions["torch"]) == ("1.0", "1.0", "2.10.0")
    (w,) = [w for w in sel.warnings if w.startswith("newapp 1.0 is locked, not its newest release 2.0: ")]
    assert w.startswith("newapp 1.0 is locked, not its newest release 2.0: newapp 2.0 requires torch==2.11.0, and "
                        "beside torch 2.11.0 (cu130) pinkern 1.0, named before it, cannot be locked: it requires "
                        "torch==2.10.0 (checked: newapp 2.0's METADATA requires torch==2.11.0, and torch 2.10.0 is "
                        "locked here)"), w
    # named the other way round, newapp keeps its newest: pinkern (named after it) is what cannot be locked
    root = _project(tmp_path / "other", joint, ["newapp", "pinkern"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "pinkern cannot be locked beside newapp 2.0 (the newest that can be locked here, with torch 2.11.0)" in out
    assert "pinkern 1.0 requires torch==2.10.0" in out, out


def test_a_named_package_whose_requirement_cannot_load_anywhere_is_a_conflict_naming_both(tmp_path: Path,
                                                                                        joint: LocalIndex) -> None:
    """wrapgpu is pure Python; voltakern, which it requires, has no code for a V100: the V100 is a conflict whose
    words are voltakern's facts and whose fix names wrapgpu as what to lock elsewhere."""
    root = _project(tmp_path, joint, ["wrapgpu"], _linux("v100", V100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    msg = out[out.index("error: target 'v100': "):].removeprefix("error: ")
    assert msg.startswith("target 'v100': voltakern's native code cannot load on this target: voltakern "), msg
    assert "which has no code for this target's GPU (compute capability 7.0)" in msg, msg
    assert "fix: a build of voltakern with code for sm_70" in msg, msg


def test_a_requirement_an_extra_reaches_through_another_extra_gates_the_release_like_a_direct_one(
        tmp_path: Path, joint: LocalIndex) -> None:
    """nestwrap[all] reaches voltakern through its own extra `srt` (as sglang[all] reaches sgl-kernel): on a V100 no
    release can be locked, and the conflict is voltakern's GPU code with nestwrap as what to lock elsewhere (the
    facts' answer, as for a direct requirement); on an H100 the newest release is locked."""
    root = _project(tmp_path, joint, ["nestwrap[all]"], _linux("v100", V100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3 and not (root / "triton-env.lock").exists(), out
    msg = out[out.index("error: target 'v100': "):].removeprefix("error: ")
    assert msg.startswith("target 'v100': voltakern's native code cannot load on this target: voltakern "), msg
    assert "which has no code for this target's GPU (compute capability 7.0)" in msg, msg
    root = _project(tmp_path / "h100", joint, ["nestwrap[all]"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, _ = _target(root, "gpu")
    assert (versions["nestwrap"], versions["voltakern"]) == ("2.0", "4.0"), versions


def test_a_torch_held_below_the_newest_by_a_locked_releases_native_code_says_so_not_uvs_words(
        tmp_path: Path, joint: LocalIndex) -> None:
    """symkern requires no torch, but its one release was built against torch 2.10's C++ API: torch 2.10.0 is locked,
    and the first reason names symkern's native code beside the newest torch — not "uv found no solution", which uv
    never said."""
    root = _project(tmp_path, joint, ["symkern"], _linux("gpu", H100), torch="<=2.12.0")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root, "gpu")
    assert versions["torch"] == "2.10.0", versions
    first = sel.reasons[0]  # type: ignore[attr-defined]
    assert first.startswith("torch 2.10.0: the newest torch the packages allow (symkern 1.0's native code "
                            "cannot load beside torch 2.12.0 (cu130): "), first
    assert "uv found no solution" not in first and first.endswith("; torch 2.12.0 would fit this target"), first


def test_a_passed_over_release_whose_every_module_fails_is_one_readable_reason(tmp_path: Path,
                                                                               joint: LocalIndex) -> None:
    """manymod 2.0's native code fails three ways beside torch 2.10 (cu128) on an R550 host: it is passed over, and
    the reason says the first two problems and counts the third — not a page of them."""
    root = _project(tmp_path, joint, ["manymod"], _linux("gpu", 'driver = "550.54.15"\ngpus = ["9.0"]'),
                    torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root, "gpu")
    assert versions["manymod"] == "1.0", versions
    (reason,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have: ")]  # type: ignore
    assert reason.count("manymod-2.0+pt211-") == 2, reason
    assert reason.endswith("; and 1 more problem of its native code)"), reason


def test_a_newest_release_held_off_by_its_own_torch_pin_is_explained_beside_that_torch(tmp_path: Path,
                                                                                      joint: LocalIndex) -> None:
    """pinapp 2.0 pins torch 2.11.0 and requires cu12kern, which loads beside torch 2.10 only: pinapp 1.0 and torch
    2.10.0 are locked, and why 2.0 is not is said beside torch 2.11.0 — cu12kern's CUDA 12 there — not pinapp 2.0's
    own native code beside torch 2.10, which it never asked for."""
    root = _project(tmp_path, joint, ["pinapp"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root, "gpu")
    assert (versions["pinapp"], versions["torch"]) == ("1.0", "2.10.0"), versions
    (w,) = [w for w in sel.warnings if w.startswith("pinapp 1.0 is locked, not its newest release 2.0: ")]  # type: ignore
    assert w.startswith("pinapp 1.0 is locked, not its newest release 2.0: it cannot be locked beside torch 2.11.0 "
                        "(cu130), the newest torch it allows here: it requires cu12kern, and cu12kern 1.0 cannot load "
                        "beside torch 2.11.0 (cu130): cu12kern/_C.so in "), w
    assert "needs libcudart.so.12" in w and "its native code cannot load" not in w, w
    (r,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have: ")]  # type: ignore
    assert "pinapp 2.0 (it cannot be locked beside torch 2.11.0 (cu130)" in r and "pinapp/_C.so" not in r, r


@pytest.mark.parametrize("spec", ["audiokit", "audiokit>=2.0", "audiokit2"])
def test_a_release_that_names_no_torch_between_ones_that_do_is_passed_over_for_the_newest_that_locks(
        tmp_path: Path, joint: LocalIndex, spec: str) -> None:
    """pinkern (named first) pins torch 2.10.0; audiokit 2.1 needs torch >= 2.11, and 2.0 names no torch at all (uv
    would take it: it only stands in). audiokit 1.0, which pins torch 2.10.0, is locked, the reasons naming 2.0 as
    passed over — where the user's range leaves only 2.0 and 2.1, or no release that names its torch allows
    pinkern's (audiokit2), a conflict naming both that says why each release is left out."""
    root = _project(tmp_path, joint, ["pinkern", spec], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    if spec != "audiokit":  # (no release left that names its torch and allows 2.10.0: a conflict naming both)
        name = spec.split(">")[0]
        assert code == 3 and not (root / "triton-env.lock").exists(), out
        assert f"{name} cannot be locked beside pinkern 1.0 (the newest that can be locked here, with torch " \
               "2.10.0)" in out, out
        assert f"{name} 2.0: its requirements name no torch, where the releases around it do: a release that " \
               "only stands in" in out, out
        if name == "audiokit":  # (1.0 out of the range: why each release is left out)
            assert "audiokit 2.1 requires torch>=2.11; audiokit 2.0: its requirements name no torch, where the " \
                   "releases around it do: a release that only stands in (inferred: audiokit 2.1 requires " \
                   "torch>=2.11)" in out, out
        return
    assert code == 0, out
    versions, sel = _target(root, "gpu")
    assert (versions["pinkern"], versions["audiokit"], versions["torch"]) == ("1.0", "1.0", "2.10.0"), versions
    (r,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have: ")]  # type: ignore
    assert "audiokit 2.0 (its requirements name no torch, where the releases around it do: a release that only " \
           "stands in (inferred: audiokit 2.1 requires torch>=2.11))" in r, r
    (w,) = [w for w in sel.warnings if w.startswith("audiokit 1.0 is locked, not its newest release 2.1: ")]  # type: ignore
    assert "pinkern 1.0, named before it, cannot be locked" in w, w


def test_a_release_that_names_no_torch_is_taken_beside_a_torch_the_next_release_allows(tmp_path: Path,
                                                                                      joint: LocalIndex) -> None:
    """audioapp (named first) pins torch 2.11.0 and audiokit 2.0, which names no torch: beside torch 2.11.0 — which
    audiokit 2.1 allows — 2.0 is taken to be its own answer (as vllm 0.33.0's torchaudio 2.11.0 beside torch 2.14.0),
    not a stand-in to pass over or a conflict."""
    root = _project(tmp_path, joint, ["audioapp", "audiokit"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, _ = _target(root, "gpu")
    assert (versions["audioapp"], versions["audiokit"], versions["torch"]) == ("1.0", "2.0", "2.11.0"), versions


def test_where_uv_finds_no_lock_the_conflict_names_the_releases_the_facts_passed_over_on_every_line(
        tmp_path: Path, joint: LocalIndex) -> None:
    """nestghost 1.0 and 2.0 need voltakern (no code for a V100) through a nested extra; 0.5 needs a package the
    index never served, so uv finds no lock with what is left. The conflict quotes uv and says what uv's words do
    not: the releases passed over beside every torch line, the package that stops them and its fact."""
    root = _project(tmp_path, joint, ["nestghost[all]"], _linux("v100", V100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3 and not (root / "triton-env.lock").exists(), out
    msg = out[out.index("error: target 'v100': "):]
    assert "the packages cannot be locked with any torch that fits this target" in msg, msg
    assert "ghostpkg" in msg and "uv: " in msg, msg
    line = next((x for x in msg.splitlines() if "tritonlock passed over nestghost" in x), "")
    assert line.startswith("  tritonlock passed over nestghost 2.0, 1.0 beside every torch line that fits here — the "
                           "newest, nestghost 2.0: it requires voltakern>=2.0, and voltakern 4.0 cannot load beside "
                           "torch "), msg
    assert "which has no code for this target's GPU (compute capability 7.0)" in line, line
    assert "0.5" not in line, line


def test_the_conflict_names_only_releases_passed_over_beside_every_line_not_one_that_loads_beside_some(
        tmp_path: Path, joint: LocalIndex) -> None:
    """mixghost 2.0 has no code for an H100 (passed over beside every line); 1.5 loads beside torch 2.10 (its CUDA
    12) though not beside 2.11 or 2.12, and needs a package the index never served, as 1.0 does. The conflict names
    2.0 as passed over everywhere — never 1.5, which the facts let load beside one line (uv's words say the rest)."""
    root = _project(tmp_path, joint, ["mixghost"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3 and not (root / "triton-env.lock").exists(), out
    msg = out[out.index("error: target 'gpu': "):]
    assert "ghostpkg" in msg, msg
    passed = [x for x in msg.splitlines() if "tritonlock passed over" in x]
    assert len(passed) == 1 and passed[0].startswith(
        "  tritonlock passed over mixghost 2.0 beside every torch line that fits here: "), msg
    assert "which has no code for this target's GPU (compute capability 9.0)" in passed[0], passed[0]


def test_a_refusal_for_a_library_no_torch_build_here_brings_holds_for_the_lines_of_that_build(
        tmp_path: Path, joint: LocalIndex) -> None:
    """cudnnuser links cuDNN, which no locked wheel brings beside any torch here: refused beside torch 2.12 (cu130),
    it is passed over beside 2.11 (cu130) too without asking uv again for that line — the search asks uv once per
    torch build, not once per release — and the target is a conflict naming the library."""
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.decide.packages import Native, decide
    from tritonlock.decide.resolve import feasible
    from tritonlock.intent.read import read_intent
    from tritonlock.lock.closure import compile_target
    from tritonlock.native.read import Reader
    from tritonlock.project import native_wanted, select

    root = _project(tmp_path, joint, ["usescudnn"], _linux("gpu", H100))
    intent = read_intent(root / "triton-env.toml")
    matrix = load_matrix()
    (sel,) = select(intent)
    asked: list[str] = []
    lock = threading.Lock()

    def counting(plan, default_index, **kw):  # type: ignore[no-untyped-def]
        with lock:
            asked.append(f"{plan.torch_spec} {','.join(kw.get('constraints') or ())}")
        return compile_target(plan, default_index, **kw)

    import dataclasses

    lines = tuple(dataclasses.replace(c, index=joint.index_url("simple")) for c in feasible(intent, matrix, sel.target,
                                                                                            "3.11"))
    reader = Reader()
    try:
        chosen, _ = decide(sel, lines, intent, matrix,
                           joint.index_url("simple"), compile=counting, default_python="3.11",
                           native=Native(wanted=native_wanted, facts=reader.facts, read=reader.read))
    finally:
        reader.close()
    assert not chosen.ok and chosen.conflict is not None
    assert "cudnnuser/_C.so in cudnnuser-1.0-" in chosen.conflict.message and "libcudnn.so.9" in chosen.conflict.message
    # past the background warm-up (every line the matrix has, the index's or not), uv asked twice: the cu130 lines
    # together, then the cu128 line — not once more for torch 2.11, which the refusal beside 2.12 already covers
    # (a question asked of uv's cache first and then online, where the cache lacked a page, is one question)
    said = [a.split()[0] for a in asked[1:]]
    assert [a for i, a in enumerate(said) if not i or a != said[i - 1]] == [">=2.10.0,<=2.12.0", "==2.10.0"], asked


def test_a_library_no_wheel_of_the_closure_brings_passes_over_the_releases_that_need_it_too_a_batch_at_a_time(
        tmp_path: Path, joint: LocalIndex) -> None:
    """cudnnmany (in usesmany's closure) links cuDNN, which no locked wheel brings: refused at 5.0, the next releases
    whose own modules need libcudnn.so.9 too, and whose requirements on NVIDIA's wheels are 5.0's, are passed over
    with it (one uv answer, not one per release: cupy-cuda12x 13.x beside torch 2.8.0, eleven answers); 3.0 requires
    an NVIDIA wheel 5.0 does not — the closure may then differ — and is refused on its own when uv picks it, and 2.0
    and 1.0 with it: two refusals per torch build, not five."""
    root = _project(tmp_path, joint, ["usesmany"], _linux("gpu", H100))
    r = CliRunner().invoke(main, ["resolve", "-p", str(root)])
    assert r.exit_code == 3, r.output
    refused = [line.split(" ")[3] for line in r.stderr.splitlines() if line.startswith("target gpu: cudnnmany ")
               and "'s native code cannot load beside torch 2.12.0" in line]
    assert refused == ["5.0's", "3.0's"], r.stderr
    assert "tried and rejected: cudnnmany 5.0, 4.0, … 1.0 (5 releases)" in r.output, r.output


@pytest.mark.parametrize(("name", "versions", "uv", "said"), [
    # the clause whose range holds the release the facts could not read, not the others (nor its words' full stop)
    ("prekern", ["0.5"], "Because prekern<=0.5 depends on torch==2.10.0 and prekern>=2.0 depends on torch>=2.11, "
     "we can conclude that prekern>=2.0 cannot be used.", "prekern<=0.5 depends on torch==2.10.0"),
    ("prekern", ["2.5"], "Because prekern<=0.5 depends on torch==2.10.0 and prekern>=2.0 depends on torch>=2.11.",
     "prekern>=2.0 depends on torch>=2.11"),
    ("prekern", ["0.5"], "Because prekern<=0.5 depends on torch==2.10.0 and prekern==0.5 depends on numpy<2. And "
     "because prekern<=0.5 depends on torch==2.10.0, ...", "prekern<=0.5 depends on torch==2.10.0; prekern==0.5 "
     "depends on numpy<2"),
    # uv's spelling of the name (its separators), a range of two bounds, a clause with no range
    ("pre_kern", ["0.4"], "And because pre-kern>=0.3,<0.5 depends on torch==2.7.0.", "pre-kern>=0.3,<0.5 depends on "
     "torch==2.7.0"),
    ("prekern", ["0.4"], "Because prekern depends on numpy<2 and you require numpy>=2.", "prekern depends on numpy<2"),
    # another package whose name begins alike, and a range that holds none of them: nothing
    ("prekern", ["0.4"], "Because prekernel==0.4 depends on torch==2.7.0.", ""),
    ("prekern", ["0.4"], "Because prekern>=1.0 depends on torch==2.7.0.", ""),
    # uv's words for every release at once
    ("pre_kern", ["0.4", "0.5"], "Because all versions of pre-kern depend on newapp<2.0 and you require newapp==2.0.",
     "all versions of pre-kern depend on newapp<2.0"),
    ("prekern", ["0.4"], "Because all versions of prekernel depend on newapp<2.0.", ""),
])
def test_uvs_words_for_the_releases_the_facts_could_not_read(name: str, versions: list[str], uv: str,
                                                             said: str) -> None:
    from tritonlock.decide._pkgexplain import _depends

    assert _depends(name, versions, uv) == said


@pytest.mark.parametrize(("uv", "found"), [
    ("error: Failed to build `vllm==0.1.1`\n  cause: The build backend returned an error\n"
     "         RuntimeError: Cannot find CUDA at CUDA_HOME: /usr/local. CUDA must be available\n",
     ("vllm", "0.1.1", "vllm 0.1.1's sdist, which uv could not build here to read its requirements (RuntimeError: "
                       "Cannot find CUDA at CUDA_HOME: /usr/local. CUDA must be available); took vllm's wheels only")),
    ("error: Failed to download and build `Flash_Attn==2.8.3`\n  cause: no module named torch\n",
     ("Flash_Attn", "2.8.3", "flash-attn 2.8.3's sdist, which uv could not build here to read its requirements; took "
                            "flash-attn's wheels only")),
    ("error: Failed to build `pkg @ file:///tmp/pkg`", None),
    ("Because there is no version of a==1 and you require a==1, ...", None),
])
def test_uvs_words_for_an_sdist_it_could_not_build_name_the_release(uv: str, found: tuple[str, str, str] | None) -> None:
    from tritonlock.decide._pkgcheck import BUILD_FAILED
    from tritonlock.decide._pkgwords import unbuildable

    m = BUILD_FAILED.search(uv)
    assert (m is None) == (found is None)
    if m is not None and found is not None:
        assert (m[1], m[2], unbuildable(m[1], m[2], uv)) == found


@pytest.mark.parametrize("pin, torch", [("==0.43.3", "2.10.0"), ("==0.50.0", "2.10.0"), ("==0.50.1", "2.12.0"),
                                        ("", "2.12.0"), ("==0.42.0", "2.10.0")])
def test_a_package_that_picks_its_cuda_build_at_run_time_moves_torch_to_a_cuda_it_has_a_build_for(
        tmp_path: Path, joint: LocalIndex, pin: str, torch: str) -> None:
    """bitsandbytes 0.43.3 has builds for CUDA 12.6 and 12.8 and loads the one for torch's exact CUDA: beside the
    CUDA 13.0 torches (2.12, 2.11) it would load none, so torch 2.10.0 (cu128) is locked and the reason says why;
    0.50.0 (12.6, 12.9) takes any of torch's major: 2.10.0 too; 0.50.1 (12.9, 13.1) loads beside the newest torch.
    0.42.0's wheel is tagged py3-none-any, as bitsandbytes' were up to 0.42: read all the same."""
    root = _project(tmp_path, joint, [f"bitsandbytes{pin}"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root, "gpu")
    assert versions["torch"] == torch, versions
    if torch == "2.10.0":
        # (the matrix's newest torch, 2.15.0, is not on this index: said, and what holds torch below the newest
        # the index serves)
        first = sel.reasons[0]
        assert first.startswith("torch 2.10.0: the newest torch the packages allow (torch 2.15.0 is not on "), first
        assert (f"; bitsandbytes {versions['bitsandbytes']}'s native code cannot load beside torch 2.12.0 (cu130): "
                "bitsandbytes/libbitsandbytes_*.so in ") in first and "none for CUDA 13.0" in first, first


def test_a_package_with_no_build_for_any_torch_lines_cuda_is_a_conflict_naming_the_builds(tmp_path: Path,
                                                                                        joint: LocalIndex) -> None:
    """bitsandbytes 0.45.0 has builds for CUDA 12.6 and 12.9 only and picks the exact release: no torch line here
    (12.8, 13.0) has one — a conflict that names the builds and a fix, not a lock whose bitsandbytes runs on the CPU."""
    root = _project(tmp_path, joint, ["bitsandbytes==0.45.0"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "is built for CUDA 12.6, 12.9, none for CUDA 12.8" in out or "none for CUDA 13.0" in out, out
    assert not (root / "triton-env.lock").exists()
    assert ("fix: a torch built for CUDA 12.6 or 12.9 (torch = \"...\" or [environment].cuda = \"cu126\"), or a "
            "bitsandbytes release with a build for CUDA 13.0") in out, out


def test_a_library_a_package_loads_by_name_and_cannot_do_without_moves_it_to_a_release_whose_library_loads(
        tmp_path: Path, joint: LocalIndex) -> None:
    """onnxruntime-gpu 2.0's CUDA provider (a library of its wheel no module links: it loads it by name) is a CUDA 13
    build; an R550 host runs no CUDA 13, so with the shipped [[dlopen-needed]] row the provider is judged as loaded
    and 1.0 (a CUDA 12 provider) is locked, the warning naming the row as inferred; otherort, the same files under a
    name no row names, keeps 2.0 and a warning that what loads its provider fails here. On the H100 (R580) both
    lock 2.0 beside a CUDA 13 torch."""
    r550 = 'driver = "550.54.15"\ngpus = ["8.9"]'
    root = _project(tmp_path / "r550", joint, ["onnxruntime-gpu", "otherort"], _linux("gpu", r550))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root, "gpu")
    assert (versions["onnxruntime-gpu"], versions["otherort"], versions["torch"]) == ("1.0", "2.0", "2.10.0"), versions
    (held,) = [w for w in sel.warnings if w.startswith("onnxruntime-gpu 1.0 is locked, not its newest release 2.0")]
    assert "libonnxruntime_providers_cuda.so" in held and "[[dlopen-needed]]; inferred" in held, held
    (other,) = [w for w in sel.warnings if w.startswith("otherort 2.0: ")]
    assert "itself at run time, by its own choice" in other, other
    assert not any(w.startswith("onnxruntime-gpu 1.0: ") for w in sel.warnings), sel.warnings
    new = _project(tmp_path / "r580", joint, ["onnxruntime-gpu", "otherort"], _linux("gpu", H100))
    code, out = _run("resolve", "-p", str(new))
    assert code == 0, out
    versions, _ = _target(new, "gpu")
    assert (versions["onnxruntime-gpu"], versions["otherort"], versions["torch"]) == ("2.0", "2.0", "2.12.0"), versions
