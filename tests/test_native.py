"""The packages' native code is part of the decision: binary facts of locked wheels (read by ranged reads, kept per
sha256), and the rule on the closure — a CUDA library no locked wheel brings, the NVIDIA driver a target lacks,
GPU code without the target's GPU — re-decided (the package's own build for torch's CUDA, then an older release)
or refused naming the package and what it needs. Every extension here is a real shared object built by the test
(tests/nativebuild.py), served from the local index."""

from __future__ import annotations

import json
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
R580_H100 = 'driver = "580.95.05"\ngpus = ["9.0"]'
R580_V100 = 'driver = "580.95.05"\ngpus = ["7.0"]'
# a c10:: function (torch's C++ API, mangled) that torch 2.9's libc10 stub defines and no other libc10 does
C10_CXX = "_ZN3c1013only_in_2_9v1Ev"
# one every torch's libc10 stub here exports (c10::TensorImpl::release())
C10_ANY = "_ZN3c1010TensorImpl7releaseEv"
# one the real torch 2.13's libc10 exports (c10::TensorImpl::release_resources())
C10_REAL = "_ZN3c1010TensorImpl17release_resourcesEv"


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("stubs")
    out = {name: stub_library(d / name.split(".so")[0], name, syms) for name, syms in (
        ("libcudart.so.12", ("cudaRuntimeGetVersion",)), ("libcudart.so.13", ("cudaRuntimeGetVersion",)),
        ("libcuda.so.1", ("cuInit",)), ("libtorch.so", ("torch_stub",)), ("libtorch_cuda.so", ("torch_cuda_stub",)),
        ("libc10.so", ("c10_stub", C10_ANY)), ("libc10_cuda.so", ("c10_cuda_stub",)),
        ("libcublas.so.13", ("cublasCreate_v2",)))}
    # torch 2.9's libc10 has the C++ symbol a 2.9-built extension calls; the 2.10 stub above does not
    out["libc10.so@2.9"] = stub_library(d / "c10-29", "libc10.so", ("c10_stub", C10_CXX, C10_ANY))
    return out


def _kernel(tmp: Path, stubs: dict[str, Path], cudart: str, fatbin: tuple[tuple[int, ...], ...],
            name: str = "kernelpkg") -> bytes:
    return extension(tmp, f"{name}._C", links={stubs[cudart]: ("cudaRuntimeGetVersion",),
                                              stubs["libcuda.so.1"]: ("cuInit",),
                                              stubs["libtorch_cuda.so"]: ("torch_cuda_stub",)}, fatbin=fatbin)


@pytest.fixture(scope="module")
def pypi(tmp_path_factory: pytest.TempPathFactory, stubs: dict[str, Path]) -> Iterator[LocalIndex]:
    tmp = tmp_path_factory.mktemp("native-build")
    idx = LocalIndex(tmp_path_factory.mktemp("native-index"))
    m = load_matrix()
    torch_libs = {f"torch/lib/{n}": stubs[n].read_bytes() for n in ("libtorch.so", "libtorch_cuda.so", "libc10.so",
                                                                     "libc10_cuda.so")}
    # PyPI's builds: 2.10.0 is CUDA 12.8 (CUDA 12 runtime wheels), 2.11.0 CUDA 13.0 (compat/torch.toml)
    for tv, runtime in (("2.10.0", "nvidia-cuda-runtime-cu12==12.8.90"), ("2.11.0", "nvidia-cuda-runtime==13.0.96")):
        rel = m.torch_release(tv)
        assert rel is not None and rel.triton
        idx.add("simple", "triton", rel.triton, tag=LINUX)
        idx.add("simple", "torch", tv, tag=CP, requires=(runtime, f"triton=={rel.triton}; platform_system == 'Linux'"),
                modules={"torch/__init__.py": f"__version__ = {tv!r}\n", **torch_libs})
    idx.add("simple", "nvidia-cuda-runtime-cu12", "12.8.90", tag=LINUX,
            modules={"nvidia/cuda_runtime/lib/libcudart.so.12": stubs["libcudart.so.12"].read_bytes()})
    idx.add("simple", "nvidia-cuda-runtime", "13.0.96", tag=LINUX,
            modules={"nvidia/cu13/lib/libcudart.so.13": stubs["libcudart.so.13"].read_bytes()})
    # kernelpkg 1.0: CUDA 12, code for sm_70/sm_80 and PTX 8.0; 2.0: CUDA 13, code for sm_80/sm_90 and PTX 9.0
    idx.add("simple", "kernelpkg", "1.0", tag=CP, requires=("torch>=2.10",), uploaded="2026-01-10", modules={
        "kernelpkg/__init__.py": "from kernelpkg import _C\n",
        "kernelpkg/_C.so": _kernel(tmp / "k1", stubs, "libcudart.so.12", ((2, 70), (2, 80), (1, 80)))})
    idx.add("simple", "kernelpkg", "2.0", tag=CP, requires=("torch>=2.10",), uploaded="2026-09-10", modules={
        "kernelpkg/__init__.py": "from kernelpkg import _C\n",
        "kernelpkg/_C.so": _kernel(tmp / "k2", stubs, "libcudart.so.13", ((2, 80), (2, 90), (1, 90)))})
    # kernelpkg 2.0's own CUDA 12.8 build, on a per-release index of its own (as vLLM publishes them)
    idx.add("kbuilds/2.0/cu128", "kernelpkg", "2.0+cu128", tag=CP, requires=("torch>=2.10",), modules={
        "kernelpkg/__init__.py": "from kernelpkg import _C\n",
        "kernelpkg/_C.so": _kernel(tmp / "k2cu128", stubs, "libcudart.so.12", ((2, 80), (2, 90), (1, 90)))})
    # a build for one torch release (PyG-style local label) that links torch's C++ API and pins no torch
    idx.add("simple", "tiedpkg", "1.0+pt29cu128", tag=CP, requires=("torch",), modules={
        "tiedpkg/_C.so": extension(tmp / "tied", "tiedpkg._C", links={stubs["libc10.so@2.9"]: (C10_CXX,)})})
    # the same C++-API build with nothing saying which torch (as sgl-kernel's wheels: no torch requirement at all)
    idx.add("simple", "anontied", "1.0", tag=CP, modules={
        "anontied/_C.so": extension(tmp / "anon", "anontied._C", links={stubs["libc10.so@2.9"]: (C10_CXX,)})})
    # the same, calling only what every torch here exports: its symbols decide that it loads
    idx.add("simple", "anonok", "1.0", tag=CP, modules={
        "anonok/_C.so": extension(tmp / "anonok", "anonok._C", links={stubs["libc10.so"]: (C10_ANY,)},
                                  weak=(C10_CXX,))})
    # realok calls only what the real torch 2.13 exports: it imports beside it (verify and doctor's real torch)
    real_c10 = stub_library(tmp / "c10real", "libc10.so", ("c10_stub", C10_REAL))
    idx.add("simple", "realok", "1.0", tag=CP, modules={
        "realok/__init__.py": "", "realok/_C.so": extension(tmp / "realok", "realok._C", links={real_c10: ()},
                                                            refs=(C10_REAL,))})
    # twopkg: its own module links no CUDA; 2.0 ships a second top-level package (as nixl-cu12's nixl_ep_cu12) built
    # for Hopper alone and CUDA 12, which nothing imports unless named; 1.0 has none
    ep = _kernel(tmp / "two-ep", stubs, "libcudart.so.12", ((2, 90),), "twopkg_ep")
    for v, extra in (("1.0", {}), ("2.0", {"twopkg_ep/__init__.py": "from twopkg_ep import _ep\n",
                                           "twopkg_ep/_ep.so": ep})):
        idx.add("simple", "twopkg", v, tag=CP, requires=("torch>=2.10",), uploaded=f"2026-0{int(v[0]) + 2}-10", modules={
            "twopkg/__init__.py": "from twopkg import _C\n", **extra,
            "twopkg/_C.so": extension(tmp / f"two{v}", "twopkg._C", links={})})
    # the same wheel whose own package imports the second one at package import: that loads it, so it is judged
    idx.add("simple", "twoimp", "1.0", tag=CP, requires=("torch>=2.10",), modules={
        "twoimp/__init__.py": "from twoimp import _C\nimport twoimp_ep\n", "twoimp_ep/__init__.py": "",
        "twoimp_ep/_ep.so": _kernel(tmp / "twoimp-ep", stubs, "libcudart.so.12", ((2, 90),), "twoimp_ep"),
        "twoimp/_C.so": extension(tmp / "twoimp", "twoimp._C", links={})})
    # dlpkg loads cuBLAS by name (the string is in its read-only data, DT_NEEDED names none): libcublas.so.12, beside
    # a lock whose nvidia-cublas brings libcublas.so.13
    idx.add("simple", "nvidia-cublas", "13.1.0.3", tag=LINUX,
            modules={"nvidia/cu13/lib/libcublas.so.13": stubs["libcublas.so.13"].read_bytes()})
    idx.add("simple", "dlpkg", "1.0", tag=CP, requires=("torch>=2.10", "nvidia-cublas"), modules={
        "dlpkg/__init__.py": "", "dlpkg/_C.so": extension(tmp / "dl", "dlpkg._C", links={},
                                                          strings=("libcublas.so.12", "libcuda.so.1"))})
    # CuPy built for CUDA 12 and for CUDA 13 (its modules link that CUDA's libraries, as cupy-cuda12x 14's link
    # libcublas.so.12 and libnvrtc.so.12): judged as any package's, not as a library others need
    for major in (12, 13):
        idx.add("simple", f"cupy-cuda{major}x", "14.0", tag=CP, modules={
            "cupy/__init__.py": "", "cupy/_core/core.cpython-311-x86_64-linux-gnu.so": extension(
                tmp / f"cupy{major}", "core", links={stubs[f"libcudart.so.{major}"]: ("cudaRuntimeGetVersion",)})})
    # ptxpkg: GPU code that is PTX alone (compute_80): an H100 runs it after the driver compiles it
    idx.add("simple", "ptxpkg", "1.0", tag=CP, requires=("torch>=2.10",), modules={
        "ptxpkg/__init__.py": "", "ptxpkg/_C.so": _kernel(tmp / "ptx", stubs, "libcudart.so.13", ((1, 80),), "ptxpkg")})
    # a package built per CUDA major under two names (as nixl-cu12 and nixl-cu13)
    for major in (12, 13):
        idx.add("simple", f"sibpkg-cu{major}", "1.0", tag=CP, requires=("torch>=2.10",), modules={
            f"sibpkg_cu{major}/__init__.py": "", f"sibpkg_cu{major}/_C.so": _kernel(
                tmp / f"sib{major}", stubs, f"libcudart.so.{major}", ((2, 80), (2, 90)), f"sibpkg_cu{major}")})
    # a package whose own import works and one part of which needs a library outside the torch/GPU stack that
    # nothing installs (as cupy's cuTENSOR module, numba's TBB pool); one whose part needs the CUDA 12 runtime; one
    # whose native code did not load and says so in its own words (as torchvision built for another torch)
    cutensor = stub_library(tmp / "cutensor", "libcutensor.so.2", ("cutensorCreate",))
    idx.add("simple", "optpkg", "1.0", tag=CP, modules={
        "optpkg/__init__.py": "", "optpkg/_cutensor.so": extension(tmp / "opt", "optpkg._cutensor",
                                                                   links={cutensor: ("cutensorCreate",)})})
    idx.add("simple", "halfpkg", "1.0", tag=CP, modules={
        "halfpkg/__init__.py": "", "halfpkg/_gpu.so": extension(
            tmp / "half", "halfpkg._gpu", links={stubs["libcudart.so.12"]: ("cudaRuntimeGetVersion",)})})
    idx.add("simple", "opspkg", "1.0", tag=CP, requires=("torch==2.9.0",), modules={
        "opspkg/__init__.py": "import opspkg._C\nraise RuntimeError('operator opspkg::nms does not exist')\n",
        "opspkg/_C.so": extension(tmp / "ops", "opspkg._C", links={})})
    # one module built per torch release (as nixl-cu12's nixl_ep_cpp_torch211.so, _torch212.so, …): the build for
    # torch 2.10 is CUDA 12 with sm_90 code; the one for 2.11 CUDA 13 with sm_100 code only
    idx.add("simple", "eppkg", "1.0", tag=CP, requires=("torch>=2.10",), modules={
        "eppkg/__init__.py": "",
        "eppkg/_ep_torch210.so": _kernel(tmp / "ep210", stubs, "libcudart.so.12", ((2, 80), (2, 90)), "eppkg"),
        "eppkg/_ep_torch211.so": _kernel(tmp / "ep211", stubs, "libcudart.so.13", ((2, 100),), "eppkg")})
    # the same for verify, beside the real torch (2.13): the build for 2.13 loads; the one for 2.12 links a C++
    # symbol of another torch's libc10 (importing it fails: the package itself never does)
    idx.add("simple", "variantpkg", "1.0", tag=CP, modules={
        "variantpkg/__init__.py": "",
        "variantpkg/_ops_torch213.so": extension(tmp / "v213", "variantpkg._ops_torch213", links={}),
        "variantpkg/_ops_torch212.so": extension(tmp / "v212", "variantpkg._ops_torch212",
                                                 links={stubs["libc10.so@2.9"]: (C10_CXX,)})})
    # one release, two Linux wheels the glibc 2.35 target could take: pip and uv install the manylinux_2_28 one (the
    # more specific tag), which is CUDA 12; the manylinux_2_17 one needs the CUDA 13 runtime
    for tag, cudart in (("cp311-cp311-manylinux_2_17_x86_64", "libcudart.so.13"),
                        ("cp311-cp311-manylinux_2_28_x86_64", "libcudart.so.12")):
        idx.add("simple", "pickpkg", "1.0", tag=tag, requires=("torch>=2.10",), modules={
            "pickpkg/__init__.py": "", "pickpkg/_C.so": _kernel(tmp / f"pick-{tag}", stubs, cudart, ((2, 90),),
                                                                "pickpkg")})
    # backpkg: 1.0 carries sm_70 code; 2.0–7.0 only sm_80/sm_90 (as torchao and xformers dropped Volta): six releases
    # a V100 cannot run, more than the rounds a decision has; its 0.5 is pure Python. cu13pkg: 1.0 is CUDA 12, 2.0–6.0
    # CUDA 13 (which torch 2.10's CUDA 12.8 does not bring: another closure could)
    volta = _kernel(tmp / "back1", stubs, "libcudart.so.12", ((2, 70), (2, 80)), "backpkg")
    newer = _kernel(tmp / "back2", stubs, "libcudart.so.12", ((2, 80), (2, 90)), "backpkg")
    idx.add("simple", "backpkg", "0.5", tag="py3-none-any", uploaded="2026-01-01", modules={"backpkg/__init__.py": ""})
    for n in range(1, 8):
        idx.add("simple", "backpkg", f"{n}.0", tag=CP, uploaded=f"2026-0{n + 1}-10", modules={
            "backpkg/__init__.py": "", "backpkg/_C.so": volta if n == 1 else newer})
    # and a nightly, pure Python (as xformers' 0.0.35.devN): with 2.0–7.0 passed over it is all uv has above 1.0, and
    # uv takes a pre-release "if necessary" — nobody asked for it
    idx.add("simple", "backpkg", "7.1.dev20260901", tag="py3-none-any", uploaded="2026-09-01",
            modules={"backpkg/__init__.py": ""})
    cu12 = _kernel(tmp / "c12", stubs, "libcudart.so.12", ((2, 80), (2, 90)), "cu13pkg")
    cu13 = _kernel(tmp / "c13", stubs, "libcudart.so.13", ((2, 80), (2, 90)), "cu13pkg")
    for n in range(1, 7):
        idx.add("simple", "cu13pkg", f"{n}.0", tag=CP, requires=("torch>=2.10",), uploaded=f"2026-0{n + 1}-10",
                modules={"cu13pkg/__init__.py": "", "cu13pkg/_C.so": cu12 if n == 1 else cu13})
    # tenpkg: 1.0 is CUDA 12, its eleven newer releases CUDA 13 (more than any round limit would reach)
    for n in range(1, 13):
        idx.add("simple", "tenpkg", f"{n}.0", tag=CP, requires=("torch>=2.10",), uploaded=f"2026-{n:02d}-11",
                modules={"tenpkg/__init__.py": "", "tenpkg/_C.so": cu12 if n == 1 else cu13})
    # cu12only: every release a CUDA 12 build that names no torch (as sgl-kernel on PyPI), beside PyPI's CUDA 13
    # torch 2.11; tiedcu12: 2.0 is CUDA 12 but needs torch >= 2.11 (CUDA 13 only), 1.0 is CUDA 13
    for n in (1, 2):
        idx.add("simple", "cu12only", f"{n}.0", tag=CP, uploaded=f"2026-0{n + 4}-10",
                modules={"cu12only/__init__.py": "", "cu12only/_C.so": cu12})
    idx.add("simple", "tiedcu12", "1.0", tag=CP, requires=("torch>=2.10",), uploaded="2026-05-10",
            modules={"tiedcu12/__init__.py": "", "tiedcu12/_C.so": cu13})
    idx.add("simple", "tiedcu12", "2.0", tag=CP, requires=("torch>=2.11",), uploaded="2026-06-10",
            modules={"tiedcu12/__init__.py": "", "tiedcu12/_C.so": cu12})
    # tiedmany 2.0–5.0: CUDA 12 builds that each need torch >= 2.11 (CUDA 13 only): every torch line is undone, more
    # of them than the rounds; 1.0 is a CUDA 13 build
    idx.add("simple", "tiedmany", "1.0", tag=CP, requires=("torch>=2.10",), uploaded="2026-01-10",
            modules={"tiedmany/__init__.py": "", "tiedmany/_C.so": cu13})
    for n in range(2, 6):
        idx.add("simple", "tiedmany", f"{n}.0", tag=CP, requires=("torch>=2.11",), uploaded=f"2026-0{n}-10",
                modules={"tiedmany/__init__.py": "", "tiedmany/_C.so": cu12})
    # percuda: one library per CUDA major, picked by torch's CUDA (as torch_memory_saver's hook_cu12 / hook_cu13, its
    # unsuffixed build being for ROCm), and one per CUDA folder (as nccl_extensions' lib/cu12/, lib/cu13/)
    def hook(tag: str, cudart: str) -> bytes:
        return extension(tmp / f"hook{tag}", f"percuda_hook{tag}", links={stubs[cudart]: ("cudaRuntimeGetVersion",),
                                                                            stubs["libcuda.so.1"]: ("cuInit",)})
    idx.add("simple", "percuda", "1.0", tag=CP, modules={
        "percuda/__init__.py": "", "percuda_hook_cu12.abi3.so": hook("_cu12", "libcudart.so.12"),
        "percuda_hook_cu13.abi3.so": hook("_cu13", "libcudart.so.13"),
        "percuda_hook.abi3.so": hook("", "libcudart.so.12"),
        "percuda/cu12/_pc.so": extension(tmp / "pc12", "percuda.cu12._pc",
                                         links={stubs["libcudart.so.12"]: ("cudaRuntimeGetVersion",)}),
        "percuda/cu13/_pc.so": extension(tmp / "pc13", "percuda.cu13._pc",
                                         links={stubs["libcudart.so.13"]: ("cudaRuntimeGetVersion",)})})
    # zgpuapp needs the driver, and so does adep, which it requires (as vLLM and humming-kernels): adep sorts first
    idx.add("simple", "adep", "1.0", tag=CP, modules={
        "adep/__init__.py": "", "adep/_C.so": _kernel(tmp / "adep", stubs, "libcudart.so.13", ((2, 90),), "adep")})
    idx.add("simple", "zgpuapp", "1.0", tag=CP, requires=("adep", "torch>=2.10"), modules={
        "zgpuapp/__init__.py": "", "zgpuapp/_C.so": _kernel(tmp / "zapp", stubs, "libcudart.so.13", ((2, 90),),
                                                             "zgpuapp")})
    # pygpkg: the default index serves only an sdist whose build imports torch (as PyG's torch-scatter on PyPI);
    # its builds are on pages per torch and CUDA (data.pyg.org/whl/torch-2.8.0+cu128.html): here for torch 2.10 only
    idx.add_sdist("simple", "pygpkg", "2.1.2", prelude="import torch", static_metadata=False)
    idx.add("pyg/torch-2.10.0+cu128", "pygpkg", "2.1.2+pt210cu128", tag=CP, modules={
        "pygpkg/__init__.py": "", "pygpkg/_C.so": _kernel(tmp / "pyg", stubs, "libcudart.so.12", ((2, 80), (2, 90)),
                                                          "pygpkg")})
    idx.add("simple", "zwrap", "1.0", requires=("adep",), modules={"zwrap/__init__.py": ""})  # (pure Python)
    # movepkg 2.0 is a CUDA 12 build of torch 2.11's C++ API (its label says so), 1.0 a CUDA 13 build on the stable ABI
    idx.add("simple", "movepkg", "2.0+pt211cu128", tag=CP, uploaded="2026-06-10", modules={
        "movepkg/__init__.py": "", "movepkg/_C.so": extension(tmp / "move2", "movepkg._C", links={
            stubs["libcudart.so.12"]: ("cudaRuntimeGetVersion",), stubs["libc10.so@2.9"]: (C10_CXX,)})})
    idx.add("simple", "movepkg", "1.0", tag=CP, uploaded="2026-05-10",
            modules={"movepkg/__init__.py": "", "movepkg/_C.so": cu13})
    # an Intel GPU package: its extension links torch's XPU library (as intel-extension-for-pytorch's do)
    torch_xpu = stub_library(tmp / "xpu", "libtorch_xpu.so", ("torch_xpu_stub",))
    idx.add("simple", "xpupkg", "1.0", tag=CP, requires=("torch>=2.10",), modules={
        "xpupkg/__init__.py": "", "xpupkg/_C.so": extension(tmp / "xpupkg", "xpupkg._C",
                                                            links={torch_xpu: ("torch_xpu_stub",)})})
    # guardpkg loads its C++ module inside a `try` that catches the failure (as torchao loads its _C*.so): 1.0 is a
    # CUDA 12 build, 2.0 CUDA 13; hardpkg the same, its module imported plainly. wantsguard 2.0 pins torch 2.10
    # (CUDA 12.8) and needs guardpkg >= 2.0 (as unsloth's newest pins torch 2.4.1 beside torchao >= 0.13, whose
    # extensions are built for newer torch); its 1.0 takes any
    guard_init = ("import ctypes, pathlib\ntry:\n    for f in pathlib.Path(__file__).parent.glob('_C*.so'):\n"
                  "        ctypes.CDLL(str(f))\nexcept OSError:\n    pass\n")
    for v, cudart in (("1.0", "libcudart.so.12"), ("2.0", "libcudart.so.13")):
        for name, init in (("guardpkg", guard_init), ("hardpkg", "from hardpkg import _C\n")):
            idx.add("simple", name, v, tag=CP, requires=("torch>=2.10",), uploaded=f"2026-0{int(v[0]) + 2}-12",
                    modules={f"{name}/__init__.py": init,
                             f"{name}/_C.so": _kernel(tmp / f"{name}{v}", stubs, cudart, ((2, 80), (2, 90)), name)})
    for v, reqs in (("1.0", ("torch>=2.10", "{}")), ("2.0", ("torch==2.10.*", "{}>=2.0"))):
        for name, dep in (("wantsguard", "guardpkg"), ("wantshard", "hardpkg")):
            idx.add("simple", name, v, tag="py3-none-any", uploaded=f"2026-0{int(v[0]) + 4}-12",
                    requires=tuple(r.format(dep) for r in reqs), modules={f"{name}/__init__.py": ""})
    # firstkit 2.0 pins torch 2.11, 1.0 torch 2.10; latekit 1.0 (and latehard 1.0) pins torch 2.10 and needs
    # guardpkg (hardpkg) >= 2.0, a CUDA 13 build; their 0.1 names no torch (as sglang 0.5.3-0.5.10 pin torch 2.9.1
    # and torchao 0.9.0, whose extensions need torch 2.6 and load inside a `try`; sglang 0.5.2 names no torch)
    for v, reqs in (("1.0", ("torch==2.10.*",)), ("2.0", ("torch==2.11.*",))):
        idx.add("simple", "firstkit", v, tag="py3-none-any", uploaded=f"2026-0{int(v[0]) + 4}-16", requires=reqs,
                modules={"firstkit/__init__.py": ""})
    for name, dep in (("latekit", "guardpkg"), ("latehard", "hardpkg")):
        for v, reqs in (("0.1", ()), ("1.0", ("torch==2.10.*", f"{dep}>=2.0"))):
            idx.add("simple", name, v, tag="py3-none-any", uploaded=f"2026-0{int(v[0]) + 4}-18", requires=reqs,
                    modules={f"{name}/__init__.py": ""})
    # wantsgone 2.0 needs a package the index does not serve: uv holds it at 1.0 (a check, in uv's words)
    for v, reqs in (("1.0", ("torch>=2.10",)), ("2.0", ("torch>=2.10", "goneplug>=1"))):
        idx.add("simple", "wantsgone", v, tag="py3-none-any", uploaded=f"2026-0{int(v[0]) + 4}-14", requires=reqs,
                modules={"wantsgone/__init__.py": ""})
    # rtpkg: its import loads _C.so alone (no CUDA); it loads its CUDA provider itself at run time (as onnxruntime's
    # libonnxruntime_providers_cuda.so, nothing names it), a CUDA 13 build that needs its common library (named:
    # not a second root, and what it needs, cuBLAS 13, is the provider's); a per-CUDA build beside them (as bitsandbytes' libbitsandbytes_cuda130.so: loaded() picks
    # those), a library that only needs something outside CUDA's stack (an optional backend: TensorRT's), and CUDA 12
    # libraries under a second top-level name nothing imports (not reached) and in a vendored folder that is no import
    # name (a plugin, as nixl's .nixl_cu12.mesonpy.libs/plugins): no warning beside a CUDA 13 torch
    cu13 = {stubs["libcudart.so.13"]: ("cudaRuntimeGetVersion",)}
    common = library(tmp / "rt-common", "librtpkg_common.so", links={stubs["libcublas.so.13"]: ("cublasCreate_v2",)})
    nvinfer = stub_library(tmp / "nvinfer", "libnvinfer.so.10", ("createInferBuilder",))
    # (a CUDA library wheel's own libraries are what others need, never "loaded at run time by its own choice")
    idx.add("simple", "nvidia-rtlib", "1.0", tag=LINUX, modules={
        "nvidia/rtlib/lib/librtlib.so.1": library(tmp / "rtlib", "librtlib.so.1", links=cu13)})
    idx.add("simple", "rtpkg", "1.0", tag=CP, requires=("torch>=2.10", "nvidia-rtlib"), modules={
        "rtpkg/__init__.py": "from rtpkg import _C\n", "rtpkg/_C.so": extension(tmp / "rt", "rtpkg._C", links={}),
        "rtpkg/capi/librtpkg_common.so": common,
        "rtpkg/capi/librtpkg_providers_cuda.so": library(
            tmp / "rt-cuda", "librtpkg_providers_cuda.so", links={**cu13, tmp / "rt-common" / "librtpkg_common.so": (
                "tl_provider_start",)}),
        "rtpkg/capi/librtpkg_providers_rtc.so": library(tmp / "rt-rtc", "librtpkg_providers_rtc.so", links={
            stub_library(tmp / "nvrtc13", "libnvrtc.so.13", ("nvrtcVersion",)): ("nvrtcVersion",)}),
        "rtpkg/capi/librtpkg_cuda130.so": library(tmp / "rt-130", "librtpkg_cuda130.so", links=cu13),
        "rtpkg/capi/librtpkg_providers_trt.so": library(tmp / "rt-trt", "librtpkg_providers_trt.so",
                                                        links={nvinfer: ("createInferBuilder",)}),
        "rtpkg_extra/__init__.py": "", "rtpkg_extra/librtpkg_extra.so": library(tmp / "rt-extra", "librtpkg_extra.so", links={
            stubs["libcudart.so.12"]: ("cudaRuntimeGetVersion",)}),
        ".rtpkg.mesonpy.libs/plugins/libplugin_gds.so": library(tmp / "rt-gds", "libplugin_gds.so", links={
            stubs["libcudart.so.12"]: ("cudaRuntimeGetVersion",)})})
    # rtsib: one build per CUDA under two names, both required (as nixl's nixl-cu12 and nixl-cu13), each with its
    # provider loaded at run time: only the one named for the torch's CUDA runs
    for major in (12, 13):
        idx.add("simple", f"rtsib-cu{major}", "1.0", tag=CP, modules={
            f"rtsib_cu{major}/__init__.py": "", f"rtsib_cu{major}/librtsib_provider.so": library(
                tmp / f"rtsib{major}", "librtsib_provider.so",
                links={stubs[f"libcudart.so.{major}"]: ("cudaRuntimeGetVersion",)})})
    idx.add("simple", "rtsib", "1.0", tag="py3-none-any", requires=("torch>=2.10", "rtsib-cu12", "rtsib-cu13"),
            modules={"rtsib/__init__.py": ""})
    # flashinfer-python's shape: a py3-none-any wheel that builds its CUDA kernels when first called (compat/
    # packages.toml [[kernels-at-first-use]]); flashinfer-cubin carries some of them prebuilt; servepkg requires it
    # (flashinfer-python refuses to import beside a flashinfer-cubin of another release; this cubin stops at 0.6.6)
    for v in ("0.6.5", "0.6.6", "0.6.7"):
        idx.add("simple", "flashinfer-python", v, tag="py3-none-any", requires=("torch>=2.10",),
                modules={"flashinfer/__init__.py": ""})
    for v in ("0.6.5", "0.6.6"):
        idx.add("simple", "flashinfer-cubin", v, tag="py3-none-any", modules={"flashinfer_cubin/__init__.py": ""})
    idx.add("simple", "servepkg", "1.0", tag="py3-none-any", requires=("torch>=2.10", "flashinfer-python"),
            modules={"servepkg/__init__.py": ""})
    idx.add("simple", "cubinpin", "1.0", tag="py3-none-any", requires=("flashinfer-cubin==0.6.6",),
            modules={"cubinpin/__init__.py": ""})
    # standpkg 2.0 pins flashinfer-python 0.6.7; 1.0 names no torch and no flashinfer (a release that only stands in)
    idx.add("simple", "standpkg", "1.0", tag="py3-none-any", uploaded="2026-01-10", modules={"standpkg/__init__.py": ""})
    idx.add("simple", "standpkg", "2.0", tag="py3-none-any", uploaded="2026-09-10",
            requires=("torch>=2.10", "flashinfer-python==0.6.7"), modules={"standpkg/__init__.py": ""})
    idx.start()
    yield idx
    idx.stop()


def _project(root: Path, idx: LocalIndex, packages: list[str], *targets: str, torch: str = "",
             extra: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    body = "".join(f"\n[[targets]]\nname = \"{t.split('|')[0]}\"\nglibc = \"2.35\"\n{t.split('|', 1)[1]}\n"
                   for t in targets)
    (root / "triton-env.toml").write_text(
        f'[environment]\npython = "3.11"\npackages = {json.dumps(packages)}\n' + (f'torch = "{torch}"\n' if torch else "")
        + f'[indexes]\ntorch = "default"\ndefault = "{idx.index_url("simple")}"\n{extra}{body}', encoding="utf-8")
    return root


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def _target(root: Path, name: str = "gpu") -> tuple[dict[str, str], object]:
    lock = read_lock(root / "triton-env.lock")
    (t,) = [t for t in lock.targets if t.name == name]
    return {p.name: p.version for p in t.packages}, t.selection


def test_binary_facts_of_a_wheel_by_ranged_reads(pypi: LocalIndex, tmp_path: Path) -> None:
    """The wheel's ELF says what its extension needs and carries; only byte ranges of the wheel are read."""
    from tritonlock.native import read as native
    from tritonlock.lock.index import project_files, session

    (f,) = [f for f in project_files(pypi.index_url("simple"), "kernelpkg") if "-2.0-" in f.filename]
    before = len(pypi.requests)
    facts = native.read_remote(f.url, f.size, f.sha256 or "", f.filename, session=session(), gpu=True)
    (m,) = facts.members
    assert (m.path, m.extension, m.module) == ("kernelpkg/_C.so", True, "kernelpkg._C")
    assert {"libcudart.so.13", "libcuda.so.1", "libtorch_cuda.so"} <= set(m.needed)
    assert (m.sm, m.ptx, m.gpu, m.torch_abi) == (("sm_80", "sm_90"), ("compute_90",), "read", "stable")
    assert facts.provides == ("_C.so",) and facts.built_for_torch is None
    assert len(pypi.requests) - before >= 2  # the central directory, then the member
    # a C++-API build for one torch: its label says which
    (t,) = project_files(pypi.index_url("simple"), "tiedpkg")
    tied = native.read_remote(t.url, t.size, t.sha256 or "", t.filename, session=session(), gpu=True)
    assert (tied.members[0].torch_abi, tied.built_for_torch) == ("cxx", "2.9")


def test_the_wheel_judged_is_the_one_that_installs_and_the_others_are_not_read(tmp_path: Path,
                                                                             pypi: LocalIndex) -> None:
    """Of a release's wheels that fit the target, an installer takes the most specific tag (manylinux_2_28 before
    manylinux_2_17 on glibc 2.35): that one is read and judged — a CUDA 12 build beside torch 2.10's CUDA 12.8 — and
    the other, which would need CUDA 13, is not read for its native code (the lock's facts have only the first).
    The lock keeps both files, as uv installs from it."""
    root = _project(tmp_path, pypi, ["pickpkg"], f"gpu|{R580_H100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert versions["pickpkg"] == "1.0"
    assert any(r.startswith("native code checked: 1 shared object of 1 package (pickpkg)") for r in sel.reasons)
    lock = read_lock(root / "triton-env.lock")
    (pick,) = [p for t in lock.targets for p in t.packages if p.name == "pickpkg"]
    assert sorted(w.name.split("-")[-1] for w in pick.wheels) == ["manylinux_2_17_x86_64.whl",
                                                                   "manylinux_2_28_x86_64.whl"]
    assert [f.filename for f in lock.native if f.filename.startswith("pickpkg")] == [
        "pickpkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"]


def test_a_cuda_13_build_beside_a_cuda_12_torch_is_passed_over_for_the_release_that_loads(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """torch = "==2.10.*" is PyPI's CUDA 12.8 build; kernelpkg 2.0's extension needs libcudart.so.13, which no
    locked wheel brings: the lock takes kernelpkg 1.0 (CUDA 12), and says why."""
    root = _project(tmp_path, pypi, ["kernelpkg"], f"gpu|{R580_H100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["kernelpkg"], versions["torch"]) == ("1.0", "2.10.0")
    passed = [r for r in sel.reasons if r.startswith("passed over what this target cannot have")]
    assert passed and ("kernelpkg 2.0 (its native code cannot load here: kernelpkg/_C.so in kernelpkg-2.0-"
                       in passed[0])
    assert "needs libcudart.so.13, which no locked wheel brings (torch 2.10.0 (cu128) brings CUDA 12.8" in passed[0]
    assert any(r.startswith("native code checked: 1 shared object of 1 package (kernelpkg)") for r in sel.reasons)
    (w,) = [w for w in sel.warnings if w.startswith("kernelpkg 1.0 is locked, not its newest release 2.0: ")]
    assert w.endswith("its native code cannot load on this target: kernelpkg/_C.so in kernelpkg-2.0-cp311-cp311-"
                      "manylinux_2_17_x86_64.whl needs libcudart.so.13, which no locked wheel brings (torch 2.10.0 "
                      "(cu128) brings CUDA 12.8; nvidia-cuda-runtime would bring it)")
    # without the torch pin, the CUDA 13 torch brings what 2.0 needs
    free = _project(tmp_path / "free", pypi, ["kernelpkg"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(free))
    assert code == 0, out
    assert _target(free)[0]["kernelpkg"] == "2.0" and _target(free)[0]["nvidia-cuda-runtime"] == "13.0.96"



def test_cupy_is_judged_as_any_package_its_cuda_moves_torch_to_a_build_that_brings_it(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """cupy-cuda12x's modules link CUDA 12's libraries: beside torch 2.11 (CUDA 13) they cannot load, so torch 2.10
    (CUDA 12.8) is locked and the reasons say why; cupy-cuda13x takes torch 2.11. (CuPy was once taken as a library
    others need, its wheels read by file name only: locked beside any torch, said nowhere.)"""
    root = _project(tmp_path / "12", pypi, ["cupy-cuda12x"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["cupy-cuda12x"], versions["torch"]) == ("14.0", "2.10.0"), versions
    assert any(r.startswith("torch 2.10.0 (cu128): the newest torch build that brings CUDA 12, which cupy-cuda12x "
                            "14.0's native code needs") for r in sel.reasons), sel.reasons
    (claim,) = [r for r in sel.reasons if r.startswith("native code checked: ")]
    assert "cupy-cuda12x" in claim, claim
    root = _project(tmp_path / "13", pypi, ["cupy-cuda13x"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["cupy-cuda13x"], versions["torch"]) == ("14.0", "2.11.0"), versions
    root = _project(tmp_path / "pinned", pypi, ["cupy-cuda12x"], f"gpu|{R580_H100}", torch="==2.11.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3 and "cupy-cuda12x" in out and "libcudart.so.12" in out, out


def test_a_library_a_package_loads_at_run_time_built_for_another_cuda_is_a_warning_with_its_fix(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """rtpkg's import loads only _C.so; its CUDA provider, which it loads itself at run time (nothing names it, as
    onnxruntime-gpu's), is a CUDA 13 build. Beside torch 2.10 (CUDA 12.8) on an H100 it is locked with a warning
    naming the provider and the fix, and the reason line says only what the imports load was found whole; beside
    torch 2.11 (CUDA 13) there is nothing to say; on an R550 driver the CUDA 13 it needs is said first. Its per-CUDA
    build (judged by loaded()), the shared library the provider names and the provider that needs only a library
    outside CUDA's stack are never the warning's."""
    root = _project(tmp_path / "cu12", pypi, ["rtpkg"], f"gpu|{R580_H100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["rtpkg"], versions["torch"]) == ("1.0", "2.10.0"), versions
    (w,) = [w for w in sel.warnings if w.startswith("rtpkg 1.0: ")]
    assert w == ("rtpkg 1.0: rtpkg/capi/librtpkg_providers_cuda.so in rtpkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl "
                 "needs libcudart.so.13, which no locked wheel brings (torch 2.10.0 (cu128) brings CUDA 12.8; "
                 "nvidia-cuda-runtime would bring it) (and 2 more) — rtpkg loads rtpkg/capi/librtpkg_providers_cuda.so "
                 "and 1 more of its libraries itself at run time, by its own choice (no module of `import rtpkg` names "
                 "them: inferred from its files), so the import works and what loads them fails here: to have them, "
                 "lock a rtpkg release built for CUDA 12, the CUDA torch 2.10.0 (cu128) brings"), w
    assert not [w for w in sel.warnings if w.startswith("nvidia-rtlib")], sel.warnings
    (claim,) = [r for r in sel.reasons if r.startswith("native code checked: ")]
    assert claim.startswith("native code checked: 8 shared objects of 1 package (rtpkg): what their imports load "
                            "finds the libraries"), claim
    code, out = _run("show", "-p", str(root))
    assert code == 0 and "itself at run time, by its own choice" in out, out
    code, out = _run("why", "-p", str(root))
    assert "native code: rtpkg 1.0: rtpkg/capi/librtpkg_providers_cuda.so in " in " ".join(out.split()), out
    new = _project(tmp_path / "cu13", pypi, ["rtpkg"], f"gpu|{R580_H100}", torch="==2.11.*")
    code, out = _run("resolve", "-p", str(new))
    assert code == 0, out
    assert not [w for w in _target(new)[1].warnings if w.startswith("rtpkg 1.0")], _target(new)[1].warnings
    r550 = 'driver = "550.54.15"\ngpus = ["8.9"]'
    old = _project(tmp_path / "r550", pypi, ["rtpkg"], f"gpu|{r550}", "laptop|gpus = []", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(old))
    assert code == 0, out
    (w,) = [w for w in _target(old)[1].warnings if w.startswith("rtpkg 1.0: ")]
    assert w.startswith("rtpkg 1.0: rtpkg/capi/librtpkg_providers_cuda.so in rtpkg-1.0-cp311-cp311-manylinux_2_17_"
                        "x86_64.whl is built for CUDA 13 (libcudart.so.13), which needs driver >= 580.65.06; this "
                        "driver is 550.54.15 (and 3 more) — rtpkg loads rtpkg/capi/librtpkg_providers_cuda.so and 1 "
                        "more of its libraries itself at run time"), w
    assert w.endswith("lock a rtpkg release built for CUDA 12, the CUDA torch 2.10.0 (cu128) brings"), w
    # a package built per CUDA under two names, both locked: the one for the other CUDA is not said, either way; named
    # alone beside the other CUDA's torch, it is
    for torch, name in (("==2.11.*", "rtsib-cu12"), ("==2.10.*", "rtsib-cu13")):
        both = _project(tmp_path / f"sib{torch[2:6]}", pypi, ["rtsib"], f"gpu|{R580_H100}", torch=torch)
        code, out = _run("resolve", "-p", str(both))
        assert code == 0, out
        assert not [w for w in _target(both)[1].warnings if w.startswith("rtsib")], _target(both)[1].warnings
        alone = _project(tmp_path / f"alone{torch[2:6]}", pypi, [name], f"gpu|{R580_H100}", torch=torch)
        code, out = _run("resolve", "-p", str(alone))
        assert code == 0, out
        assert [w for w in _target(alone)[1].warnings if w.startswith(f"{name} 1.0: {name.replace('-', '_')}/")]
    # a machine without an NVIDIA driver runs no CUDA at all (its torch is PyPI's CUDA build all the same): nothing to
    # say of a CUDA library there
    assert not [w for w in _target(old, "laptop")[1].warnings if w.startswith("rtpkg 1.0")]


def test_the_decisions_later_compiles_have_uv_read_each_page_once(tmp_path: Path, pypi: LocalIndex) -> None:
    """The round that passes kernelpkg 2.0 over, and the checks, answer from uv's cache: uv reads online only what
    its cache lacks for them (a release's metadata, a page this run did not read), never every page of the closure
    again (asked online in full, every later compile read them all again: 3 to 4 times here, a minute for vLLM +
    SGLang). Each page is read once — or twice where a check's compile answered from the cache before the warm-up
    (uv online, in the background) had ended: the search never waits for the warm-up (a slow page of it must not
    hold the answer: tests/test_packages_ahead.py), so that check reads its few pages itself."""
    from collections import Counter

    # uv's cache holds kernelpkg 1.0's metadata (an earlier resolve locked it), as it does once other tests of this
    # module ran: else the round that passes 2.0 over has uv read 1.0's metadata with what it needs — kernelpkg's,
    # torch's and triton's pages a second time (lock/_fromcache.read_online: a `--no-deps` read brings no metadata)
    first = _project(tmp_path / "first", pypi, ["kernelpkg==1.0"], f"gpu|{R580_H100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(first))
    assert code == 0, out
    root = _project(tmp_path, pypi, ["kernelpkg"], f"gpu|{R580_H100}", torch="==2.10.*")
    before = len(pypi.asked_by)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert _target(root)[0]["kernelpkg"] == "1.0"
    pages = Counter(path for path, agent in pypi.asked_by[before:]
                    if agent.startswith("uv/") and path.endswith("/"))
    assert {"/simple/kernelpkg/", "/simple/torch/"} <= set(pages) and set(pages.values()) <= {1, 2}, pages

def test_a_packages_own_build_for_torchs_cuda_is_taken_from_its_index(tmp_path: Path, pypi: LocalIndex) -> None:
    """[[package-builds]] names where kernelpkg's per-CUDA builds are: 2.0's CUDA 12.8 build is taken from there,
    bound to that index, instead of falling back to 1.0."""
    extra = (f'\n[[package-builds]]\nname = "kernelpkg"\nindex = "{pypi.url}/kbuilds/{{version}}/{{cuda}}"\n'
             'cuda = ["cu128"]\n')
    root = _project(tmp_path, pypi, ["kernelpkg"], f"gpu|{R580_H100}", torch="==2.10.*", extra=extra)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    lock = read_lock(root / "triton-env.lock")
    kp = next(p for p in lock.targets[0].packages if p.name == "kernelpkg")
    assert (kp.version, kp.index) == ("2.0+cu128", f"{pypi.url}/kbuilds/2.0/cu128")
    sel = lock.targets[0].selection
    assert any("kernelpkg 2.0's build from its default index" in r and "took kernelpkg's cu128 build from its own "
               f"index {pypi.url}/kbuilds/2.0/cu128" in r for r in sel.reasons)


def test_a_packages_own_build_index_that_does_not_answer_is_not_handed_to_uv(tmp_path: Path, pypi: LocalIndex,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """kernelpkg's own build index (its CUDA 12.8 build of 2.0) does not answer from here: it is asked once (headers
    only), never given to uv (which retries an index that does not answer for seconds a compile), and the decision
    goes on as where that index lacks the build: kernelpkg 1.0, whose default-index build loads beside torch 2.10."""
    import socket

    from tritonlock import _subprocess

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # (closed again: nothing listens there)
    real = _subprocess.run
    given: list[str] = []

    def spy(args: list[str], **kw: object) -> object:
        if args[1:3] == ["pip", "compile"]:
            given.append(Path(args[3]).read_text(encoding="utf-8"))
        return real(args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(_subprocess, "run", spy)
    extra = (f'\n[[package-builds]]\nname = "kernelpkg"\nindex = "http://127.0.0.1:{port}/kbuilds/{{version}}/{{cuda}}"\n'
             'cuda = ["cu128"]\n')
    root = _project(tmp_path, pypi, ["kernelpkg"], f"gpu|{R580_H100}", torch="==2.10.*", extra=extra)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, _ = _target(root)
    assert versions["kernelpkg"] == "1.0", versions
    assert given and not any(f"127.0.0.1:{port}" in g for g in given), given
    assert f"kernelpkg's builds at http://127.0.0.1:{port}/kbuilds/2.0/cu128: not reachable from here (" in out, out


def test_the_uv_and_pixi_exports_keep_the_build_and_releases_the_native_rule_decided(tmp_path: Path,
                                                                                    pypi: LocalIndex) -> None:
    """kernelpkg 2.0 is locked as its CUDA 12.8 build from its own index (the default index's 2.0 is a CUDA 13 build,
    which torch 2.10 does not bring). The exported pyproject.toml pins it and binds it to that index, so a real
    `uv lock` takes the same file (and `check` compares it); pixi.toml pins it on that index. Before, both named it
    unpinned and uv took the CUDA 13 build."""
    import os
    import subprocess
    import sys
    import tomllib

    from tritonlock._subprocess import uv_bin

    extra = (f'\n[[package-builds]]\nname = "kernelpkg"\nindex = "{pypi.url}/kbuilds/{{version}}/{{cuda}}"\n'
             'cuda = ["cu128"]\n')
    root = _project(tmp_path, pypi, ["kernelpkg"], f"gpu|{R580_H100}", torch="==2.10.*", extra=extra)
    assert _run("resolve", "-p", str(root))[0] == 0
    code, out = _run("export", "-p", str(root), "--format", "uv", "-o", str(root / "pyproject.toml"))
    assert code == 0, out
    doc = tomllib.loads((root / "pyproject.toml").read_text())
    linux = "sys_platform == 'linux' and platform_machine == 'x86_64'"
    assert f"kernelpkg==2.0+cu128; {linux}" in doc["tool"]["uv"]["constraint-dependencies"]
    assert doc["tool"]["uv"]["environments"] == [linux]  # the lock's platform: uv lock resolves for it alone
    (entry,) = [e for e in doc["tool"]["uv"]["index"] if e["url"] == f"{pypi.url}/kbuilds/2.0/cu128"]
    assert entry["explicit"] and doc["tool"]["uv"]["sources"]["kernelpkg"] == {"index": entry["name"]}
    env = dict(os.environ, UV_PYTHON_DOWNLOADS="never", UV_CACHE_DIR=str(tmp_path / "uv-cache"),
               UV_PYTHON=sys.executable)
    p = subprocess.run([uv_bin(), "lock"], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    uv = tomllib.loads((root / "uv.lock").read_text())
    (kp,) = [e for e in uv["package"] if e["name"] == "kernelpkg"]
    assert (kp["version"], kp["source"]["registry"]) == ("2.0+cu128", f"{pypi.url}/kbuilds/2.0/cu128"), kp
    lock = read_lock(root / "triton-env.lock")
    (locked,) = [q for q in lock.targets[0].packages if q.name == "kernelpkg"]
    assert {f"sha256:{w.sha256}" for w in locked.wheels} <= {w["hash"] for w in kp["wheels"]}
    code, out = _run("check", "-p", str(root))
    assert code == 0, out
    code, out = _run("export", "-p", str(root), "--format", "pixi", "-o", str(tmp_path / "pixi.toml"))
    assert code == 0, out
    assert (f'kernelpkg = {{ version = "==2.0+cu128", index = "{pypi.url}/kbuilds/2.0/cu128" }}'
            in (tmp_path / "pixi.toml").read_text())

def test_gpu_code_without_the_targets_gpu_takes_a_release_that_has_it(tmp_path: Path, pypi: LocalIndex) -> None:
    """A V100 (7.0): kernelpkg 2.0 carries sm_80/sm_90 and PTX 9.0 only — its first launch would fail there."""
    root = _project(tmp_path, pypi, ["kernelpkg"], f"gpu|{R580_V100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert versions["kernelpkg"] == "1.0"
    assert any("its GPU code is built for sm_80, sm_90 and PTX compute_90, which has no code for this target's GPU "
               "(compute capability 7.0)" in r for r in sel.reasons)
    # the uv and pixi exports keep the release the rule decided (uv resolving afresh would take 2.0)
    code, out = _run("export", "-p", str(root), "--format", "uv", "-o", str(tmp_path / "pyproject.toml"))
    assert code == 0 and '"kernelpkg==1.0; sys_platform' in (tmp_path / "pyproject.toml").read_text(), out
    code, out = _run("export", "-p", str(root), "--format", "pixi", "-o", str(tmp_path / "pixi.toml"))
    assert code == 0 and 'kernelpkg = { version = "==1.0" }' in (tmp_path / "pixi.toml").read_text(), out


def test_releases_no_closure_could_run_are_passed_over_together_back_to_one_that_loads(tmp_path: Path,
                                                                                        pypi: LocalIndex) -> None:
    """backpkg 7.0 has no code for a V100 and neither have 6.0–2.0: their wheels are read in one batch before uv is
    asked, all six are passed over for the V100 at once, and the lock takes 1.0 (sm_70); the reasons name the six in
    one line, with what they lack."""
    root = _project(tmp_path, pypi, ["backpkg"], f"gpu|{R580_V100}", torch="==2.10.*")
    before = len(pypi.asked_by)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert versions["backpkg"] == "1.0"
    (passed,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have")]
    assert ("backpkg 7.0, 6.0, 5.0, 4.0, 3.0, 2.0 (its native code cannot load here: its GPU code is built for sm_80, "
            "sm_90 (no PTX), which has no code for this target's GPU (compute capability 7.0)") in passed, passed
    # uv was asked for backpkg's page and metadata in the first compile only, and 1.0's wheel was read once
    wheels = [path for path, agent in pypi.asked_by[before:] if "/backpkg-1.0-" in path and path.endswith(".whl")]
    assert wheels and not any(path.endswith("backpkg-0.5-py3-none-any.whl") for path, _ in pypi.asked_by[before:])
    assert not any("7.1.dev" in r for r in sel.reasons + sel.warnings)  # the nightly nobody asked for: not locked
    # asked for, the nightly is what the lock takes
    root = _project(tmp_path / "nightly", pypi, ["backpkg>=7.1.dev0"], f"gpu|{R580_V100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert _target(root)[0]["backpkg"] == "7.1.dev20260901"


def test_no_release_with_code_for_the_gpu_is_a_conflict_naming_the_releases_passed_over(tmp_path: Path,
                                                                                        pypi: LocalIndex) -> None:
    """The same V100 with backpkg >= 2: no release left has sm_70 code. A conflict (exit 3) that leads with the GPU
    code, names the releases passed over in one line, and says what the decision found with them passed over."""
    root = _project(tmp_path, pypi, ["backpkg>=2"], f"gpu|{R580_V100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert not (root / "triton-env.lock").exists()  # its only target is a conflict: nothing is written
    msg = out[out.index("error: target 'gpu': "):].removeprefix("error: ")
    assert msg.startswith("target 'gpu': backpkg's native code cannot load on this target: backpkg 7.0: its GPU code "
                          "is built for sm_80, sm_90 (no PTX), which has no code for this target's GPU"), msg
    assert "  tried and rejected: backpkg 7.0, 6.0, … 2.0 (6 releases)\n" in msg, msg
    assert "  with those passed over: " in msg and "backpkg" in msg.split("with those passed over: ")[1], msg
    assert msg.rstrip().endswith("fix: a build of backpkg with code for sm_70 (none of the releases tried has it), or "
                                 "a target without backpkg for these GPUs"), msg


def test_there_is_no_round_limit_releases_that_cannot_load_are_passed_over_until_one_can(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """cu13pkg 6.0–2.0 need the CUDA 13 runtime, which torch 2.10's CUDA 12.8 does not bring: they are passed over for
    that torch line (their wheels read before uv is asked) and 1.0, a CUDA 12 build, is locked. tenpkg's eleven
    newest releases cannot load there either, more than any round limit would have tried: the lock takes the one
    that can, with uv asked once."""
    root = _project(tmp_path, pypi, ["cu13pkg"], f"gpu|{R580_H100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["cu13pkg"], versions["torch"]) == ("1.0", "2.10.0")
    (passed,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have")]
    assert ("cu13pkg 6.0, 5.0, 4.0, 3.0, 2.0 (its native code cannot load here: cu13pkg/_C.so in each one's wheel "
            "needs libcudart.so.13, which no locked wheel brings (torch 2.10.0 (cu128) brings CUDA 12.8") in passed, passed
    (w,) = [w for w in sel.warnings if w.startswith("cu13pkg 1.0 is locked, not its newest release 6.0: ")]
    assert "its native code cannot load on this target: cu13pkg/_C.so in cu13pkg-6.0-" in w, w
    root = _project(tmp_path / "ten", pypi, ["tenpkg"], f"gpu|{R580_H100}", torch="==2.10.*")
    before = len(pypi.asked_by)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert versions["tenpkg"] == "1.0"
    (passed,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have")]
    assert "tenpkg 12.0, 11.0, 10.0, … 2.0 (11 releases) (its native code cannot load here: " in passed, passed
    assert len(passed) < 700, passed  # (a reason is a line, not a page)
    # the eleven wheels were read before uv was asked, in two batches, each once
    reads = [p for p, agent in pypi.asked_by[before:] if not agent.startswith("uv/") and "/tenpkg-" in p
             and p.endswith(".whl")]
    assert {p.split("/tenpkg-")[1].split("-")[0] for p in reads} == {f"{n}.0" for n in range(1, 13)}, reads


def test_a_package_built_for_an_older_cuda_than_the_newest_torch_takes_the_torch_line_that_brings_it(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """cu12only's releases are all CUDA 12 builds and name no torch (as sgl-kernel's PyPI wheels); the newest torch,
    2.11, is PyPI's CUDA 13 build. Passing its releases over could never help: the decision takes the torch line whose
    build brings CUDA 12 instead, keeps cu12only at its newest release, and says why torch is held back."""
    root = _project(tmp_path, pypi, ["cu12only"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["cu12only"], versions["torch"], versions["nvidia-cuda-runtime-cu12"]) == ("2.0", "2.10.0",
                                                                                               "12.8.90")
    assert sel.reasons[0] == ("torch 2.10.0 (cu128): the newest torch build that brings CUDA 12, which cu12only 2.0's "
                              "native code needs; torch 2.11.0 (cu130) would fit this target"), sel.reasons
    (passed,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have")]
    assert "torch 2.11.0 (cu130) and the torch builds that bring no CUDA 12 (cu12only 2.0's native code needs CUDA 12: " \
           "cu12only/_C.so in cu12only-2.0-" in passed, passed
    assert any(w.startswith("torch 2.10.0 (cu128) is locked, not 2.11.0 (cu130): cu12only 2.0's native code needs "
                            "CUDA 12, which torch 2.11.0's cu130 build does not bring") for w in sel.warnings), sel.warnings
    assert "cu12only 1.0" not in passed  # no release of it was passed over
    code, out = _run("check", "-p", str(root))  # the torch the packages' native code chose is no drift
    assert code == 0 and "decisions unchanged under matrix" in out, out


def test_on_pytorchs_index_the_same_torch_release_is_taken_in_its_build_for_the_packages_cuda(
        tmp_path: Path, stubs: dict[str, Path]) -> None:
    """PyTorch's index serves torch 2.11.0 for CUDA 12.6/12.8/12.9 and 13.0; on an R580 driver the newest CUDA, cu130, is
    the first choice. cu12only is a CUDA 12 build: the lock keeps torch 2.11.0 in its CUDA 12 build (not an older torch)
    with the CUDA 12 runtime, and cu12only at its newest release."""
    idx = LocalIndex(tmp_path / "index")
    m = load_matrix()
    rel = m.torch_release("2.11.0")
    assert rel is not None and rel.triton
    libs = {f"torch/lib/{n}": stubs[n].read_bytes() for n in ("libtorch.so", "libtorch_cuda.so", "libc10.so",
                                                              "libc10_cuda.so")}
    for backend, runtime in (("cu126", "nvidia-cuda-runtime-cu12==12.8.90"), ("cu128", "nvidia-cuda-runtime-cu12==12.8.90"),
                             ("cu129", "nvidia-cuda-runtime-cu12==12.8.90"), ("cu130", "nvidia-cuda-runtime==13.0.96")):
        idx.add(f"whl/{backend}", "triton", rel.triton, tag=LINUX)
        idx.add(f"whl/{backend}", "torch", f"2.11.0+{backend}", tag=CP,
                requires=(runtime, f"triton=={rel.triton}; platform_system == 'Linux'"), modules=libs)
    idx.add("simple", "nvidia-cuda-runtime-cu12", "12.8.90", tag=LINUX,
            modules={"nvidia/cuda_runtime/lib/libcudart.so.12": stubs["libcudart.so.12"].read_bytes()})
    idx.add("simple", "nvidia-cuda-runtime", "13.0.96", tag=LINUX,
            modules={"nvidia/cu13/lib/libcudart.so.13": stubs["libcudart.so.13"].read_bytes()})
    idx.add("simple", "cu12only", "2.0", tag=CP, modules={
        "cu12only/__init__.py": "", "cu12only/_C.so": _kernel(tmp_path / "k", stubs, "libcudart.so.12", ((2, 90),),
                                                              "cu12only")})
    idx.start()
    try:
        root = tmp_path / "proj"
        root.mkdir()
        (root / "triton-env.toml").write_text(
            '[environment]\npython = "3.11"\ntorch = "==2.11.*"\npackages = ["cu12only"]\n'
            f'[indexes]\ntorch = "{idx.url}/whl/{{backend}}"\ndefault = "{idx.index_url("simple")}"\n'
            f'\n[[targets]]\nname = "gpu"\nglibc = "2.35"\n{R580_H100}\n', encoding="utf-8")
        code, out = _run("resolve", "-p", str(root))
        assert code == 0, out
        versions, sel = _target(root)
    finally:
        idx.stop()
    code, out = _run("check", "-p", str(root))  # the same torch in the build for cu12only's CUDA: no drift
    assert code == 0 and "decisions unchanged under matrix" in out, out
    assert versions["cu12only"] == "2.0" and "nvidia-cuda-runtime" not in versions, versions
    assert versions["torch"] in ("2.11.0+cu126", "2.11.0+cu128", "2.11.0+cu129"), versions
    assert versions["nvidia-cuda-runtime-cu12"] == "12.8.90"
    assert any(w.startswith(f"torch 2.11.0 ({sel.backend}) is locked, not 2.11.0 (cu130): cu12only 2.0's native code "
                            "needs CUDA 12, which torch 2.11.0's cu130 build does not bring") for w in sel.warnings), \
        sel.warnings
    (passed,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have")]
    assert "torch 2.11.0 (cu130) and the torch builds that bring no CUDA 12" in passed, passed


def test_a_torch_line_the_package_itself_rules_out_passes_the_release_over_instead(tmp_path: Path,
                                                                                  pypi: LocalIndex) -> None:
    """tiedcu12 2.0 is a CUDA 12 build that needs torch >= 2.11, which PyPI builds for CUDA 13 only: the torch line
    that brings CUDA 12 cannot lock it. The decision goes back, passes 2.0 over and locks 1.0 (CUDA 13) with torch
    2.11, and the reasons say both."""
    root = _project(tmp_path, pypi, ["tiedcu12"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["tiedcu12"], versions["torch"]) == ("1.0", "2.11.0")
    (passed,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have")]
    assert "tiedcu12 2.0 (its native code cannot load here: tiedcu12/_C.so in tiedcu12-2.0-" in passed, passed
    assert "no torch release whose build brings CUDA 12 fits it)" in passed, passed
    assert "and the torch builds that bring no CUDA 12" not in passed
    assert not any(w.startswith("torch 2.11.0 (cu130) is locked") for w in sel.warnings), sel.warnings


def test_torch_lines_undone_release_after_release_go_on_past_the_rounds_to_a_release_that_locks(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """tiedmany 5.0–2.0 are CUDA 12 builds that each need torch >= 2.11 (CUDA 13 only): each one's torch line is
    tried and undone, more of them than the decision's rounds (a resolve once ended in a traceback there). The
    decision goes on to 1.0, a CUDA 13 build, and names the four releases it passed over."""
    root = _project(tmp_path, pypi, ["tiedmany"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert "Traceback" not in out
    versions, sel = _target(root)
    assert (versions["tiedmany"], versions["torch"]) == ("1.0", "2.11.0")
    (passed,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have")]
    assert ("tiedmany 5.0, 4.0, 3.0, 2.0 (its native code cannot load here: tiedmany/_C.so in each one's wheel needs "
            "libcudart.so.12") in passed, passed
    assert "no torch release whose build brings CUDA 12 fits it" in passed, passed
    assert "nvidia-cuda-runtime-cu12" not in versions


def test_a_library_built_once_per_cuda_is_judged_in_the_build_for_the_torchs_cuda(tmp_path: Path,
                                                                                  pypi: LocalIndex) -> None:
    """percuda carries its hook once per CUDA major (percuda_hook_cu12 / _cu13, and an unsuffixed build for ROCm,
    CUDA 12 here; as torch_memory_saver) and a module per CUDA folder (cu12/, cu13/): the package loads the build for
    its torch's CUDA. On torch 2.11 (CUDA 13) the CUDA 12 builds are not judged, so nothing is passed over and no CUDA
    12 runtime is locked; on an R535 A100 (torch 2.10, CUDA 12.8) the CUDA 13 builds are not judged either."""
    root = _project(tmp_path, pypi, ["percuda"], f"h100|{R580_H100}", 'a100|driver = "535.183.01"\ngpus = ["8.0"]')
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    for name, torch, runtime in (("h100", "2.11.0", "nvidia-cuda-runtime"),
                                 ("a100", "2.10.0", "nvidia-cuda-runtime-cu12")):
        versions, sel = _target(root, name)
        assert (versions["percuda"], versions["torch"]) == ("1.0", torch), (name, versions)
        other = ({"nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12"} - {runtime}).pop()
        assert runtime in versions and other not in versions, (name, versions)
        assert not any(r.startswith("passed over what this target cannot have") for r in sel.reasons), sel.reasons
        assert not any("percuda" in w for w in sel.warnings), sel.warnings


def test_the_per_cuda_builds_judged_follow_the_torchs_cuda_and_none_is_dropped_without_its_own(tmp_path: Path) -> None:
    """The rule on one wheel's facts: a CUDA 13 torch judges the _cu13 builds only, a CUDA 12.8 torch the _cu12
    builds (not the unsuffixed one beside them); a CUDA 11.8 torch, which has no build of its own, judges all of
    them, and so does a CPU torch; a ROCm torch judges the unsuffixed one; `hopeless` counts none of them as what
    every torch loads. The verify runner picks the same modules to import, and reads torch's CUDA from its
    version.py."""
    import hashlib

    from pkgindex import build_wheel
    from nativebuild import stub_library
    from tritonlock.native.read import read_file
    from tritonlock.native.rule import Item, Setting, check, hopeless
    from tritonlock.verify.natives import _torch_backend
    from tritonlock.verify.runner.tlverify.imports import _for_this_cuda

    cudart = {n: stub_library(tmp_path / n, f"libcudart.so.{n}", ("cudaRuntimeGetVersion",))
              for n in ("11", "12", "13")}

    def ext(mod: str, major: str) -> bytes:
        return extension(tmp_path / mod.replace(".", "-"), mod, links={cudart[major]: ("cudaRuntimeGetVersion",)})

    whl = build_wheel(tmp_path / "w", "pc", "1.0", tag=CP, modules={
        "pc_hook_cu12.abi3.so": ext("pc_hook_cu12", "12"), "pc_hook_cu13.abi3.so": ext("pc_hook_cu13", "13"),
        "pc_hook.abi3.so": ext("pc_hook", "12"), "pc/cu12/_x.so": ext("pc.cu12._x", "12"),
        "pc/cu13/_x.so": ext("pc.cu13._x", "13")})
    item = Item(name="pc", version="1.0", facts=read_file(whl, hashlib.sha256(whl.read_bytes()).hexdigest()))

    def needs(backend: str, runtime: str) -> set[str]:
        at = Setting(torch="2.11.0", backend=backend, driver="580.95.05", gpus=("9.0",), floors={})
        return {p.needs for p in check([item], {runtime}, at)}

    assert needs("cu130", "libcudart.so.13") == set()
    assert needs("cu128", "libcudart.so.12") == set()
    assert needs("cu118", "libcudart.so.11") == {"libcudart.so.12", "libcudart.so.13"}  # (no build of its own)
    assert needs("cpu", "") == {"libcudart.so.12", "libcudart.so.13"}  # (a CPU torch loads no build of its own)
    at_r535 = Setting(torch="2.10.0", backend="cu128", driver="535.183.01", gpus=("8.0",), floors={13: "580.65.06"})
    assert hopeless(item, at_r535) == []  # (the CUDA 13 builds are not what every torch loads)
    modules = ["pc_hook_cu12", "pc_hook_cu13", "pc_hook", "pc.cu12._x", "pc.cu13._x", "pc._plain"]
    assert _for_this_cuda(modules, (13, 0)) == ["pc_hook_cu13", "pc.cu13._x", "pc._plain"]
    assert _for_this_cuda(modules, (12, 8)) == ["pc_hook_cu12", "pc.cu12._x", "pc._plain"]
    assert _for_this_cuda(["m_cuda118", "m_cuda128", "m_cuda130"], (12, 8)) == ["m_cuda128"]
    assert _for_this_cuda(modules, (11, 8)) == modules and _for_this_cuda(modules, None) == modules
    # a ROCm torch loads the build that names no CUDA (torch_memory_saver's ROCm build), none of the per-CUDA ones
    # beside it; builds with no such sibling (pc/cu12/, pc/cu13/) are all judged, as for a CPU torch
    from tritonlock.native.rule import loaded

    def paths(backend: str) -> set[str]:
        return {m.path for m in loaded(item.facts.members, "2.11.0", backend)}

    assert paths("rocm7.2") == {"pc_hook.abi3.so", "pc/cu12/_x.so", "pc/cu13/_x.so"}
    assert paths("cpu") == paths("xpu") == {m.path for m in item.facts.members}
    assert _for_this_cuda(modules, "rocm") == ["pc_hook", "pc.cu12._x", "pc.cu13._x", "pc._plain"]
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "version.py").write_text("cuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n")
    assert _torch_backend([str(site)]) == "cu130"
    (site / "torch" / "version.py").write_text("cuda: Optional[str] = None\n")
    assert _torch_backend([str(site)]) is None
    (site / "torch" / "version.py").write_text("cuda: Optional[str] = None\nhip: Optional[str] = '7.2.26015'\n")
    assert _torch_backend([str(site)]) == "rocm"


def test_a_package_its_default_index_cannot_lock_is_taken_from_its_page_of_builds_per_torch(tmp_path: Path,
                                                                                         pypi: LocalIndex) -> None:
    """pygpkg's default index serves only an sdist whose build imports torch (uv finds no closure with it, as with
    torch-scatter on PyPI); [[package-builds]] names its flat pages per torch and CUDA. The decision takes the newest
    torch whose CUDA the pages are built for and whose page serves it (torch 2.10.0, cu128: 2.11's CUDA 13 has none),
    locks pygpkg's build from that page, reads its native code, and says why torch is held back."""
    extra = (f'\n[[package-builds]]\nname = "pygpkg"\nindex = "{pypi.url}/pyg/torch-{{torch}}+{{cuda}}.html"\n'
             'format = "flat"\ncuda = ["cu126", "cu128"]\n')
    root = _project(tmp_path, pypi, ["pygpkg"], f"gpu|{R580_H100}", extra=extra)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["pygpkg"], versions["torch"]) == ("2.1.2+pt210cu128", "2.10.0"), versions
    lock = read_lock(root / "triton-env.lock")
    (pkg,) = [q for q in lock.targets[0].packages if q.name == "pygpkg"]
    assert all("/pyg/torch-2.10.0+cu128/_files/" in w.url for w in pkg.wheels) and pkg.wheels, pkg
    assert any(n.filename.startswith("pygpkg-2.1.2+pt210cu128-") and n.members for n in lock.native), lock.native
    (passed,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have")]
    assert "pygpkg from the default index (uv finds no closure with it there: " in passed, passed
    assert f"took pygpkg's cu128 build from its own index {pypi.url}/pyg/torch-2.10.0+cu128.html, for torch 2.10.0 " \
           "(cu128)" in passed, passed
    assert sel.reasons[0].startswith("torch 2.10.0 (cu128): the newest torch build pygpkg's own index has a build "
                                     "for"), \
        sel.reasons[0]
    assert any(w.startswith("torch 2.10.0 (cu128) is locked, not ") and ": pygpkg's builds on its own index are made "
               "per torch and CUDA, and the default index serves none uv can lock (" in w for w in sel.warnings), \
        sel.warnings
    code, out = _run("sync", "-p", str(root), "--target", "gpu", "--no-verify")  # (installed from that page)
    assert code == 0, out
    assert list((root / ".venv").glob("lib/python*/site-packages/pygpkg-2.1.2+pt210cu128.dist-info")), out


def test_a_wheel_named_by_its_url_is_locked_with_its_hash_checked_by_the_rule_and_synced(tmp_path: Path,
                                                                                       pypi: LocalIndex) -> None:
    """`kernelpkg @ https://…/kernelpkg-2.0-….whl`, as flash-attn's release wheels are named: its native code is read
    and judged like an index's (CUDA 13 beside a CUDA 12 torch on R535: refused, exit 3). The CUDA 12 1.0 on an H100
    is locked with its file and sha256 (uv's pylock `archive`; before, the lock held it with no file and could not be
    read back), its bytes checked, and it is synced, checked and exported as that file."""
    import tomllib

    files = sorted(x.name for x in (pypi.root / "simple" / "_files").iterdir())
    url = {v: f"{pypi.url}/simple/_files/" + next(f for f in files if f.startswith(f"kernelpkg-{v}-")) for v in
           ("1.0", "2.0")}
    root = _project(tmp_path / "r535", pypi, [f"kernelpkg @ {url['2.0']}"], 'gpu|driver = "535.183.01"\ngpus = ["8.0"]')
    code, out = _run("resolve", "-p", str(root))
    assert code == 3 and not (root / "triton-env.lock").exists(), out
    assert ("kernelpkg 2.0: kernelpkg/_C.so in kernelpkg-2.0-cp311-cp311-manylinux_2_17_x86_64.whl is built for CUDA "
            "13 (libcudart.so.13), which needs driver >= 580.65.06; this driver is 535.183.01") in out, out
    root = _project(tmp_path / "h100", pypi, [f"kernelpkg @ {url['1.0']}"], f"gpu|{R580_H100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert "native code checked: 1 shared object of 1 package (kernelpkg)" in out
    lock = read_lock(root / "triton-env.lock")
    (kp,) = [q for q in lock.targets[0].packages if q.name == "kernelpkg"]
    (w,) = kp.wheels
    assert (kp.version, kp.index, w.url, kp.direct) == ("1.0", url["1.0"], url["1.0"], True)
    import hashlib

    assert w.sha256 == hashlib.sha256((pypi.root / "simple" / "_files" / w.name).read_bytes()).hexdigest()
    assert any(n.sha256 == w.sha256 and n.members for n in lock.native)
    code, out = _run("check", "-p", str(root))
    assert code == 0 and "every file hashed" in out, out
    code, out = _run("export", "-p", str(root), "--format", "requirements")
    assert f"kernelpkg @ {url['1.0']} \\\n    --hash=sha256:{w.sha256}" in out, out
    code, out = _run("export", "-p", str(root), "--format", "pixi")
    assert f'kernelpkg = {{ url = "{url["1.0"]}" }}' in out, out
    code, out = _run("export", "-p", str(root), "--format", "pylock", "-o", str(tmp_path / "pylock.toml"))
    pylock = tomllib.loads((tmp_path / "pylock.toml").read_text())
    (entry,) = [q for q in pylock["packages"] if q["name"] == "kernelpkg"]
    assert "index" not in entry and entry["wheels"][0]["url"] == url["1.0"], entry  # (PEP 751: an index's address)
    code, out = _run("sync", "-p", str(root), "--target", "gpu", "--no-verify")
    assert code == 0, out
    assert list((root / ".venv").glob("lib/python*/site-packages/kernelpkg-1.0.dist-info")), out
    # uv's tables: the project names the file (no index entry for it), and the real `uv lock` takes the same one
    import os
    import subprocess
    import sys

    from tritonlock._subprocess import uv_bin

    code, out = _run("export", "-p", str(root), "--format", "uv", "-o", str(root / "pyproject.toml"))
    assert code == 0, out
    doc = tomllib.loads((root / "pyproject.toml").read_text())
    assert f"kernelpkg @ {url['1.0']}" in doc["project"]["dependencies"]
    assert not any(e["url"] == url["1.0"] for e in doc["tool"]["uv"]["index"]), doc["tool"]["uv"]["index"]
    env = dict(os.environ, UV_PYTHON_DOWNLOADS="never", UV_CACHE_DIR=str(tmp_path / "uv-cache"),
               UV_PYTHON=sys.executable)
    p = subprocess.run([uv_bin(), "lock"], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    (entry,) = [e for e in tomllib.loads((root / "uv.lock").read_text())["package"] if e["name"] == "kernelpkg"]
    assert entry["source"] == {"url": url["1.0"]}, entry
    code, out = _run("check", "-p", str(root))  # uv.lock beside the lock: the same file
    assert code == 0, out

def test_a_wheel_named_by_its_file_url_is_locked_checked_and_synced(tmp_path: Path, pypi: LocalIndex) -> None:
    """`kernelpkg @ file:///…/kernelpkg-1.0-….whl` (the documented local form): uv's answer names the file by its path,
    with no URL — every resolve failed on it with a traceback (KeyError 'url'). It is locked as its file:// URL with its
    sha256 and size, its native code read and judged, and it is synced and exported as that file."""
    import hashlib
    import shutil

    src = next((pypi.root / "simple" / "_files").glob("kernelpkg-1.0-*.whl"))
    whl = tmp_path / "my wheels" / src.name  # (a space in the path: the URL is percent-encoded, the name is not)
    whl.parent.mkdir()
    shutil.copy(src, whl)
    root = _project(tmp_path / "p", pypi, [f"kernelpkg @ {whl.as_uri()}"], f"gpu|{R580_H100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert "native code checked: 1 shared object of 1 package (kernelpkg)" in out and "Traceback" not in out
    lock = read_lock(root / "triton-env.lock")
    (kp,) = [q for q in lock.targets[0].packages if q.name == "kernelpkg"]
    (w,) = kp.wheels
    assert (kp.version, kp.index, w.url, w.name, kp.direct) == ("1.0", whl.as_uri(), whl.as_uri(), src.name, True)
    assert (w.sha256, w.size) == (hashlib.sha256(whl.read_bytes()).hexdigest(), whl.stat().st_size)
    code, out = _run("check", "-p", str(root))
    assert code == 0 and "every file hashed" in out, out
    code, out = _run("export", "-p", str(root), "--format", "requirements")
    assert f"kernelpkg @ {whl.as_uri()} \\\n    --hash=sha256:{w.sha256}" in out, out
    code, out = _run("sync", "-p", str(root), "--target", "gpu", "--no-verify")
    assert code == 0, out
    assert list((root / ".venv").glob("lib/python*/site-packages/kernelpkg-1.0.dist-info")), out


def test_a_package_from_a_folder_is_refused_with_the_way_to_pin_it(tmp_path: Path, pypi: LocalIndex) -> None:
    """`mylib @ file:///…/mylib` (a folder, or a git checkout): uv locks it with no file, so there is no sha256 to pin.
    Before, the lock was written without a file for it and could not be read back; now resolve says so (exit 2),
    names the folder and the way to pin it, and writes nothing."""
    src = tmp_path / "mylib"
    (src / "mylib").mkdir(parents=True)
    (src / "mylib" / "__init__.py").write_text("")
    (src / "pyproject.toml").write_text('[project]\nname = "mylib"\nversion = "0.1"\n')
    root = _project(tmp_path / "p", pypi, [f"mylib @ {src.as_uri()}"], f"gpu|{R580_H100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 2 and not (root / "triton-env.lock").exists(), out
    assert f"mylib comes from a folder ({src}), which has no file whose sha256 a lock can pin" in out, out
    assert "name that wheel in the packages (mylib @ <the wheel's https:// or file:// URL>)" in out
    assert "Traceback" not in out

def test_a_page_of_builds_this_machine_cannot_reach_is_named_beside_uvs_answer(tmp_path: Path,
                                                                              pypi: LocalIndex) -> None:
    """The same, with pygpkg's pages on a host that does not answer: uv's own answer is the error (exit 4), with the
    page it could not ask named after it, asked once (not once per torch), and no lock written."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # (closed again: nothing listens there)
    extra = (f'\n[[package-builds]]\nname = "pygpkg"\n'
             f'index = "http://127.0.0.1:{port}/whl/torch-{{torch}}+{{cuda}}.html"\n'
             'format = "flat"\ncuda = ["cu118", "cu126", "cu128"]\n')
    root = _project(tmp_path, pypi, ["pygpkg"], f"gpu|{R580_H100}", extra=extra)
    code, out = _run("resolve", "-p", str(root))
    assert code == 4, out
    assert not (root / "triton-env.lock").exists()  # (uv quotes the sdist build's own traceback: its words)
    assert out.count("also tried: ") == 1 and out.count(f"127.0.0.1:{port}") == 2, out
    assert f"also tried: pygpkg's builds at http://127.0.0.1:{port}/whl/torch-2.10.0+cu128.html (not reachable from " \
           "here: ConnectionError" in out, out
    # the fix is that page, not uv's generic one
    assert out.count("fix: ") == 1 and out.rstrip().endswith(
        f"fix: pygpkg's builds are on http://127.0.0.1:{port}/whl/torch-2.10.0+cu128.html, which does not answer from "
        "here: resolve where it does, or name a mirror of it for pygpkg in triton-env.toml (a [[package-builds]] table "
        "with its index)"), out


def test_a_module_for_one_gpu_family_alone_and_a_package_that_calls_its_kernels_only_there_are_no_refusal(
        tmp_path: Path, stubs: dict[str, Path]) -> None:
    """Code for one GPU family alone (sm_90a: torchao's _C_cutlass_90a) runs on no other GPU: a module of nothing else
    does not count against an A100 or a V100, while the package's general module (sm_80, sm_86) still does on the
    V100. torchao's modules (sm_90a; sm_100 and PTX compute_120, as its 0.16's) carry nothing for an A100: it is in
    compat/packages.toml's [[optional-gpu-code]], so it is no problem there but a warning saying why, marked inferred;
    the same files under another name are a problem."""
    import hashlib

    from pkgindex import build_wheel
    from tritonlock.compat.pkgbuilds import optional_gpu_code as rows
    from tritonlock.native.read import read_file
    from tritonlock.native.notes import optional_gpu_code
    from tritonlock.native.rule import Item, Setting, check

    def item(name: str, modules: dict[str, tuple[tuple[int, ...], ...]]) -> Item:
        whl = build_wheel(tmp_path / name, name, "1.0", tag=CP, modules={
            path: _kernel(tmp_path / name / path.replace("/", "-"), stubs, "libcudart.so.12", code, name)
            for path, code in modules.items()})
        return Item(name=name, version="1.0", facts=read_file(whl, hashlib.sha256(whl.read_bytes()).hexdigest()))

    def at(cc: str) -> Setting:
        return Setting(torch="2.10.0", backend="cu128", driver="580.95.05", gpus=(cc,), floors={},
                       optional_gpu=frozenset(rows()))

    a = 0x100000
    mixed = item("mixedpkg", {"mixedpkg/_C.so": ((2, 80), (2, 86)), "mixedpkg/_C_90a.so": ((2, 90, a),)})
    only = item("onlypkg", {"onlypkg/_C_90a.so": ((2, 90, a),)})
    provided = {"libcudart.so.12"}
    assert check([mixed, only], provided, at("8.0")) == []
    (p,) = check([mixed, only], provided, at("7.0"))
    assert (p.package, p.kind) == ("mixedpkg", "gpu-code")
    assert p.text.startswith("its GPU code is built for sm_80, sm_86 (no PTX), which has no code for this target's "
                             "GPU (compute capability 7.0)"), p.text
    tao = {"torchao/_C_cutlass_90a.abi3.so": ((2, 90, a),), "torchao/_C_mxfp8.so": ((2, 100), (1, 120))}
    torchao, other = item("torchao", tao), item("otherao", tao)
    assert check([torchao], provided, at("8.0")) == []
    assert [q.needs for q in check([other], provided, at("8.0"))] == ["sm_80"]
    (w,) = optional_gpu_code([torchao, other], at("8.0"), rows())
    assert w.startswith("torchao 1.0: its GPU code is built for sm_100, sm_90a and PTX compute_120, none of it for "
                        "this target's GPU (compute capability 8.0); it is locked all the same"), w
    assert "(inferred: that torchao calls its C++ kernels only on the GPUs they are built for" in w, w
    assert optional_gpu_code([torchao], at("9.0"), rows()) == []  # (its sm_90a runs on an H100)


def test_optional_gpu_code_in_the_intent_locks_the_newest_release_with_a_warning(tmp_path: Path,
                                                                                pypi: LocalIndex) -> None:
    """[environment].optional-gpu-code = ["backpkg"]: backpkg 7.0 has no code for the V100, and the user says it calls
    its kernels only where they run. The lock keeps 7.0 (no release passed over) and warns, saying it rests on the
    intent; a bad entry is an error naming the key."""
    root = _project(tmp_path, pypi, ["backpkg"], f"gpu|{R580_V100}", torch="==2.10.*")
    intent = root / "triton-env.toml"
    intent.write_text(intent.read_text().replace("[environment]\n", '[environment]\noptional-gpu-code = ["BackPkg"]\n'))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert versions["backpkg"] == "7.0"
    assert not any(r.startswith("passed over what this target cannot have") for r in sel.reasons), sel.reasons
    (w,) = [w for w in sel.warnings if w.startswith("backpkg 7.0: its GPU code is built for sm_80, sm_90")]
    assert "(inferred: the intent's [environment].optional-gpu-code says so)" in w, w
    intent.write_text(intent.read_text().replace('["BackPkg"]', '["back pkg"]'))
    code, out = _run("resolve", "-p", str(root))
    assert code == 2 and "environment.optional-gpu-code[0]" in out and "is not a package name" in out, out


def test_amd_code_objects_are_checked_against_each_gfx_gpu_on_a_rocm_torch(tmp_path: Path) -> None:
    """A wheel whose extension carries HIP offload bundles for gfx90a and gfx942 (read from the wheel's ELF, as a
    resolve reads it): on a ROCm torch an MI300X (gfx942) finds its code, an RX 7900 XTX (gfx1100) does not — a
    problem naming the gfx targets read and the GPU; a gfx11-generic bundle covers gfx1100 and gfx1101, not gfx1030."""
    import hashlib
    import subprocess

    from nativebuild import OBJCOPY
    from pkgindex import build_wheel
    from test_gpucode import bundle
    from tritonlock.native.read import read_file
    from tritonlock.native.rule import Item, Setting, check, hopeless

    hip_runtime = stub_library(tmp_path / "hip", "libamdhip64.so.6", ("hipGetDeviceCount",))

    def facts(name: str, *targets: str):  # type: ignore[no-untyped-def]
        extension(tmp_path / name, f"{name}._hip", links={hip_runtime: ("hipGetDeviceCount",)})  # (as hipcc links)
        (tmp_path / name / "bundles").write_bytes(bundle(*targets))
        subprocess.run([OBJCOPY, "--add-section", f".hip_fatbin={tmp_path / name / 'bundles'}", "--set-section-flags",
                        ".hip_fatbin=alloc,readonly", str(tmp_path / name / "_hip.so")], check=True, capture_output=True)
        so = (tmp_path / name / "_hip.so").read_bytes()
        whl = build_wheel(tmp_path / f"{name}-whl", name, "1.0", tag=CP, modules={f"{name}/_hip.so": so})
        got = read_file(whl, hashlib.sha256(whl.read_bytes()).hexdigest())
        assert got.members and not got.problem, got
        return got

    hip = facts("hippkg", "gfx90a:xnack-", "gfx942")
    assert hip.members[0].gfx == ("gfx90a:xnack-", "gfx942")

    def at(*gpus: str, backend: str = "rocm6.4") -> Setting:
        return Setting(torch="2.9.0", backend=backend, driver=None, gpus=gpus, floors={})

    item = Item(name="hippkg", version="1.0", facts=hip)
    assert check([item], set(), at("gfx942", "gfx942")) == []
    (p,) = check([item], set(), at("gfx942", "gfx1100"))
    assert (p.kind, p.needs) == ("gpu-code", "gfx1100")
    assert p.text.startswith("its GPU code is built for gfx90a:xnack-, gfx942, which has no code for this target's GPU "
                             "(gfx1100): loading its kernels would fail ('hipErrorNoBinaryForGpu'; read from hippkg-1.0-")
    assert hopeless(item, at("gfx1100")) == [p]  # no other closure gives it code for gfx1100: passed over together
    assert check([item], set(), at("gfx1100", backend="cpu")) == []  # (a CPU torch: no GPU code runs, none judged)
    generic = Item(name="genpkg", version="1.0", facts=facts("genpkg", "gfx11-generic"))
    assert check([generic], set(), at("gfx1100", "gfx1101")) == []
    assert [q.needs for q in check([generic], set(), at("gfx1030"))] == ["gfx1030"]


def test_a_release_passed_over_after_torch_moved_for_it_takes_torch_back(tmp_path: Path, pypi: LocalIndex) -> None:
    """movepkg 2.0 needs CUDA 12 (torch 2.10's build brings it) and was built for torch 2.11's C++ API (so it cannot
    load on 2.10 either): its facts rule it out beside both lines, so 1.0 (CUDA 13) is locked with torch 2.11 — not
    on the torch line that only 2.0 could have wanted — and the reason says what each line lacks."""
    root = _project(tmp_path, pypi, ["movepkg"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["movepkg"], versions["torch"]) == ("1.0", "2.11.0"), versions
    (passed,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have")]
    assert ("; nor beside the torch builds that bring CUDA 12, tried for it and not kept: torch 2.10.0 (cu128): "
            "movepkg/_C.so in movepkg-2.0+pt211cu128-") in passed, passed
    assert "movepkg 2.0 (its native code cannot load here: movepkg/_C.so in movepkg-2.0+pt211cu128-" in passed, passed
    assert "was built for torch 2.11" in passed and not any(w.startswith("torch 2.11.0 (cu130) is locked")
                                                            for w in sel.warnings)


def test_an_intel_gpu_package_on_an_nvidia_target_is_a_conflict_naming_torchs_xpu_build(tmp_path: Path,
                                                                                      pypi: LocalIndex) -> None:
    """xpupkg's extension links libtorch_xpu.so, which only torch's XPU builds have: on the H100 box no release can
    change that (exit 3 at once), and the fix names the Intel machines, not torch's CUDA build."""
    root = _project(tmp_path, pypi, ["xpupkg"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "xpupkg/_C.so in xpupkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl needs libtorch_xpu.so, which only " \
           "torch's XPU builds (Intel GPUs) have; torch 2.11.0 here is the cu130 build" in out, out
    assert "fix: xpupkg needs an Intel GPU and torch's XPU build: lock it for those machines only" in out, out
    assert "tried and rejected" not in out


def test_a_target_without_a_driver_beside_a_gpu_box_is_a_conflict_naming_the_library(tmp_path: Path,
                                                                                      pypi: LocalIndex) -> None:
    """A laptop beside the GPU box in one lock: kernelpkg's extension needs libcuda.so.1, which only an NVIDIA
    driver has. The GPU box is locked; the laptop is a conflict (exit 3) saying so, with the change that fixes it."""
    root = _project(tmp_path, pypi, ["kernelpkg"], f"gpu|{R580_H100}", "laptop|gpus = []")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    lock = read_lock(root / "triton-env.lock")
    gpu, laptop = lock.targets
    assert gpu.selection.ok and not laptop.selection.ok and laptop.selection.conflict is not None
    msg = laptop.selection.conflict.message
    assert msg.startswith("target 'laptop': kernelpkg's native code cannot load on this target: kernelpkg 2.0: "
                          "kernelpkg/_C.so in kernelpkg-2.0-")
    assert "needs libcuda.so.1, the NVIDIA driver's library, and this target has no NVIDIA driver" in msg
    assert "fix: kernelpkg needs an NVIDIA GPU: lock it for the GPU machines only" in msg


def test_the_conflict_leads_with_the_package_the_user_named_not_its_dependency(tmp_path: Path,
                                                                             pypi: LocalIndex) -> None:
    """zgpuapp and adep, which it requires, both need the NVIDIA driver: on a laptop the conflict names zgpuapp, the
    package the user asked for, first and in its fix (adep follows as "also"), not the dependency that sorts first.
    Where the package named is pure Python (zwrap) and only its dependency needs the driver, the fix names both."""
    root = _project(tmp_path, pypi, ["zgpuapp"], "laptop|gpus = []")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    msg = out[out.index("error: target 'laptop'"):].removeprefix("error: ")
    assert not (root / "triton-env.lock").exists()
    assert msg.startswith("target 'laptop': zgpuapp's native code cannot load on this target: zgpuapp 1.0: "), msg
    assert "fix: zgpuapp needs an NVIDIA GPU: lock it for the GPU machines only" in msg, msg
    # zwrap is pure Python and requires adep: the fix names zwrap as what to lock elsewhere
    root = _project(tmp_path / "wrap", pypi, ["zwrap"], "laptop|gpus = []")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "error: target 'laptop': adep's native code cannot load on this target: adep 1.0: " in out, out
    assert "fix: adep, which zwrap requires, needs an NVIDIA GPU: lock zwrap for the GPU machines only" in out, out


def test_a_build_for_another_torch_release_is_refused_with_the_torch_it_was_built_for(tmp_path: Path,
                                                                                      pypi: LocalIndex) -> None:
    """tiedpkg 1.0+pt29cu128 links torch's C++ API and was built for torch 2.9 (its label); no torch 2.9 is served,
    so nothing can load it: a conflict naming the torch it needs."""
    root = _project(tmp_path, pypi, ["tiedpkg"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "tiedpkg's native code cannot load on this target" in out
    assert "links torch's C++ API and was built for torch 2.9" in out and "undefined symbol" in out
    assert 'fix: torch = "==2.9.*"' in out and "Traceback" not in out


# --- verify: the packages' native code, loaded for real ---------------------------------------------------------

@pytest.fixture(scope="module")
def broken_venv(real_torch_python: str, pypi: LocalIndex, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The real torch + triton venv (linked), with kernelpkg 1.0 — a CUDA 12 build — put in by hand, and no CUDA 12
    runtime (installed or on this machine: its system toolkit is CUDA 13): a wrong pairing made by hand."""
    return _beside_real_torch(real_torch_python, tmp_path_factory.mktemp("broken") / "venv", pypi,
                              ("kernelpkg-1.0", "tiedpkg"))


def _beside_real_torch(real_torch_python: str, venv: Path, idx: LocalIndex, wheels: tuple[str, ...]) -> str:
    """A venv that sees the real torch + triton venv's packages (linked) and has these wheels of `idx` put in by
    hand (name-version prefixes of their file names); its interpreter."""
    import subprocess
    import sys

    from tritonlock._subprocess import uv_bin

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    src = Path(subprocess.run([real_torch_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip())
    dst = next((venv / "lib").glob("python3*/site-packages"))
    for entry in src.iterdir():
        (dst / entry.name).symlink_to(entry)
    files = [next((idx.root / "simple" / "_files").glob(f"{n}-*.whl")) for n in wheels]
    subprocess.run([uv_bin(), "pip", "install", "--python", str(venv / "bin" / "python"), "--no-deps", "--offline",
                    *map(str, files)], check=True, capture_output=True)
    return str(venv / "bin" / "python")


def test_verify_imports_a_stray_native_build_and_names_what_it_cannot_load(
        broken_venv: str, stubs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The import is real: the loader cannot find libcudart.so.12. verify fails naming kernelpkg, says it is a CUDA 12
    build that nothing installed brings the runtime of, and how to fix it; numpy (native too) imports. (A stub
    libcuda.so.1 on the loader's path stands in for the NVIDIA driver this machine has not.)"""
    from tritonlock.verify import run_verify

    monkeypatch.setenv("LD_LIBRARY_PATH", str(stubs["libcuda.so.1"].parent))
    result = run_verify(broken_venv, interpret=True, quick=True, imports=("kernelpkg",))
    checks = {c.name: c for c in result.checks}
    bad = checks["import kernelpkg"]
    assert not bad.ok and not result.ok
    assert bad.detail.startswith("kernelpkg 1.0: importing kernelpkg failed: it needs libcudart.so.12, which no "
                                 "installed package brings: kernelpkg 1.0 is a CUDA 12 build")
    assert "libcudart.so.12: cannot open shared object file" in bad.detail  # the loader's own words
    assert bad.fix and "`tritonlock resolve` picks a pair that loads" in bad.fix
    assert checks["import numpy"].ok and "extension module" in checks["import numpy"].detail
    assert "kernelpkg" in " ".join(result.failures)


def test_a_cuda_extension_on_a_cpu_torch_is_said_as_that() -> None:
    from tritonlock.verify.natives import ImportRow, explain

    row = ImportRow(dist="xformers", version="0.0.33", ok=False, native=True, module="xformers._C",
                    error="ImportError: libtorch_cuda.so: cannot open shared object file: No such file or directory")
    detail, fix = explain(row, torch="2.13.0+cpu", lock=None)
    assert detail.startswith("xformers 0.0.33: importing xformers._C failed: it needs libtorch_cuda.so, which only "
                             "torch's CUDA builds have, and this environment's torch 2.13.0+cpu is not one")
    assert fix and fix.startswith("torch's CUDA build")


def test_without_a_driver_the_other_missing_library_is_still_found(broken_venv: str) -> None:
    """On a machine without a driver the loader may stop at libcuda.so.1 (not a failure there by itself); the
    installed files still say libcudart.so.12 is missing whatever the machine — that is the failure. The row is what
    the runner reports on such a machine; the files are the real installed ones."""
    import subprocess

    from tritonlock.verify.natives import ImportRow, import_checks

    site = subprocess.run([broken_venv, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    row = ImportRow(dist="kernelpkg", version="1.0", ok=True, native=True, needs_driver=True, module="kernelpkg",
                    error="ImportError: libcuda.so.1: cannot open shared object file", modules=("kernelpkg._C",))
    ((name, ok, detail, _),) = import_checks([row], torch="2.13.0+cpu", lock=None, site=[site])
    assert (name, ok) == ("import kernelpkg", False)
    assert "it needs libcudart.so.12, which no installed package brings" in detail
    assert detail.endswith("the import stopped earlier, at libcuda.so.1 (no NVIDIA driver here)")
    # a library this machine's own loader finds (its CUDA 13 toolkit) is no such failure
    from tritonlock.native.elf import system_sonames

    if "libcudart.so.13" in system_sonames():
        row13 = ImportRow(dist="numpy", version="x", ok=True, needs_driver=True)
        assert import_checks([row13], torch=None, lock=None, site=[site])[0][1] is True


def test_without_a_driver_only_the_build_for_the_installed_torch_counts(tmp_path: Path,
                                                                       stubs: dict[str, Path]) -> None:
    """The same driverless machine, a package that carries its module built for torch 2.13 (CUDA 12, whose runtime
    is installed) and for 2.12 (CUDA 11, whose runtime is not): with torch 2.13 the package loads the 2.13 build
    only, so nothing is missing; with torch 2.12 the CUDA 11 runtime is."""
    from tritonlock.verify.natives import ImportRow, import_checks

    site = tmp_path / "site"
    files = {"varcuda/__init__.py": b""}
    cuda11 = stub_library(tmp_path / "rt11", "libcudart.so.11", ("cudaRuntimeGetVersion",))
    for release, cudart in (("213", stubs["libcudart.so.12"]), ("212", cuda11)):
        files[f"varcuda/_k_torch{release}.so"] = extension(
            tmp_path / release, f"varcuda._k_torch{release}",
            links={cudart: ("cudaRuntimeGetVersion",), stubs["libcuda.so.1"]: ("cuInit",)})
    runtime = {"nvidia/cuda_runtime/lib/libcudart.so.12": stubs["libcudart.so.12"].read_bytes()}
    for dist, members in (("varcuda-1.0", files), ("nvidia_cuda_runtime_cu12-12.8.90", runtime)):
        for rel, data in members.items():
            (site / rel).parent.mkdir(parents=True, exist_ok=True)
            (site / rel).write_bytes(data)
        (site / f"{dist}.dist-info").mkdir()
        (site / f"{dist}.dist-info" / "RECORD").write_text("".join(f"{rel},,\n" for rel in members), encoding="utf-8")
    row = ImportRow(dist="varcuda", version="1.0", ok=True, native=True, needs_driver=True, module="varcuda",
                    error="ImportError: libcuda.so.1: cannot open shared object file",
                    modules=("varcuda._k_torch213", "varcuda._k_torch212"))
    ((_, ok, detail, _),) = import_checks([row], torch="2.13.0+cpu", lock=None, site=[str(site)])
    assert ok, detail
    ((_, ok, detail, _),) = import_checks([row], torch="2.12.0+cpu", lock=None, site=[str(site)])
    assert not ok and "it needs libcudart.so.11, which no installed package brings" in detail, detail


def test_verify_names_the_locked_wheel_that_should_have_brought_the_library(
        broken_venv: str, stubs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{stubs['libcuda.so.1'].parent}:{stubs['libtorch_cuda.so'].parent}")
    from tritonlock.verify import run_verify
    from tritonlock.verify.natives import LockFacts

    lock = LockFacts(brings={"libcudart.so.12": "nvidia-cuda-runtime-cu12 12.8.90"}, facts={})
    result = run_verify(broken_venv, interpret=True, quick=True, lock_facts=lock)
    bad = next(c for c in result.checks if c.name == "import kernelpkg")
    assert ("it needs libcudart.so.12, which the lock's nvidia-cuda-runtime-cu12 12.8.90 brings, and the loader finds "
            "none here") in bad.detail and bad.fix == "`tritonlock sync` makes the environment match the lock"


def test_installed_gpu_code_is_checked_against_each_gpu(broken_venv: str) -> None:
    """What an import cannot show: kernelpkg 1.0's files carry sm_70/sm_80 and PTX 8.0; a P100 (6.0) gets none of it,
    an H100 (9.0) runs it only through PTX. The files are the installed ones; only the GPU lines stand in for a GPU."""
    import subprocess

    from tritonlock.verify.natives import ImportRow, gpu_code_checks

    site = subprocess.run([broken_venv, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    row = ImportRow(dist="kernelpkg", version="1.0", ok=True, modules=("kernelpkg._C",))
    ((name, ok, detail, fix),) = gpu_code_checks([site], [row], ["cuda:0 Tesla P100-PCIE-16GB (sm_60, 15.9 GiB)"])
    assert (name, ok) == ("GPU code kernelpkg", False)
    assert detail.startswith("kernelpkg 1.0's extension modules carry code for sm_70, sm_80 and PTX compute_80, and "
                             "none for cuda:0 Tesla P100-PCIE-16GB (compute capability 6.0)")
    ((_, ok, detail, _),) = gpu_code_checks([site], [row], ["cuda:0 NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)"])
    assert ok and "only through PTX (compute_80)" in detail
    assert gpu_code_checks([site], [row], ["cuda:0 NVIDIA A100-SXM4-80GB (sm_80, 79.1 GiB)"]) == []


def test_verify_passes_a_gpu_without_code_for_a_package_that_calls_its_kernels_only_where_they_run(
        tmp_path: Path, stubs: dict[str, Path]) -> None:
    """The installed files of torchao (compat/packages.toml's [[optional-gpu-code]]) carry sm_90a and sm_100 + PTX
    compute_120 only: on an A100 verify's GPU-code row passes and says why, inferred; the same files as another
    package fail it. A module of sm_90a code alone is left out of what is counted."""
    import subprocess

    from pkgindex import build_wheel
    from tritonlock._subprocess import uv_bin
    from tritonlock.verify.natives import ImportRow, gpu_code_checks

    a100 = ["cuda:0 NVIDIA A100-SXM4-80GB (sm_80, 79.1 GiB)"]
    site = tmp_path / "site"
    for name in ("torchao", "otherao"):
        whl = build_wheel(tmp_path / name, name, "1.0", tag=CP, modules={
            f"{name}/_C_cutlass_90a.so": _kernel(tmp_path / f"{name}90a", stubs, "libcudart.so.12", ((2, 90, 0x100000),),
                                                 name),
            f"{name}/_C_mxfp8.so": _kernel(tmp_path / f"{name}mx", stubs, "libcudart.so.12", ((2, 100), (1, 120)),
                                           name)})
        subprocess.run([uv_bin(), "pip", "install", "--target", str(site), "--no-deps", "--offline", str(whl)],
                       check=True, capture_output=True)
    rows = [ImportRow(dist=n, version="1.0", ok=True, modules=(f"{n}._C_mxfp8",)) for n in ("torchao", "otherao")]
    got = {name: (ok, detail) for name, ok, detail, _ in gpu_code_checks([str(site)], rows, a100)}
    ok, detail = got["GPU code torchao"]
    assert ok and detail.startswith("torchao 1.0's extension modules carry code for sm_100 and PTX compute_120, and "
                                    "none for cuda:0 NVIDIA A100-SXM4-80GB (compute capability 8.0): it calls those "
                                    "kernels only on the GPUs they are for (inferred: that torchao calls"), detail
    ok, detail = got["GPU code otherao"]
    assert not ok and "carry code for sm_100 and PTX compute_120, and none for" in detail, detail


def test_doctor_reports_the_same_on_a_venv_tritonlock_did_not_make(broken_venv: str) -> None:
    """doctor reads the installed files: kernelpkg 1.0 needs libcudart.so.12, which nothing installed (nor this
    machine's loader) brings."""
    code, out = _run("doctor", "--python", broken_venv)
    assert code == 1, out
    assert "kernelpkg 1.0's native code cannot load here: it needs libcudart.so.12" in out
    assert "kernelpkg/_C.so in kernelpkg 1.0 in " in out and "Traceback" not in out


def test_a_build_for_another_torch_fails_verify_and_doctor_naming_the_torch(
        broken_venv: str, real_torch_version: str, real_torch_backend: str) -> None:
    """tiedpkg 1.0+pt29cu128 links torch's C++ API (built for torch 2.9); this venv's torch is 2.13: the import
    fails for real with an undefined symbol, and both verify and doctor say which torch it was built for — and
    which build of torch 2.13 this is (the CPU build, or the CUDA build the default index ships)."""
    from tritonlock.verify import run_verify

    result = run_verify(broken_venv, interpret=True, quick=True)
    bad = next(c for c in result.checks if c.name == "import tiedpkg")
    assert not bad.ok and C10_CXX in bad.detail
    assert f"it was built for torch 2.9, and this environment has torch {real_torch_version}" in bad.detail
    assert real_torch_version.startswith("2.13.0+"), real_torch_version
    code, out = _run("doctor", "--python", broken_venv)
    assert code == 1
    build = " (CPU build)" if real_torch_backend == "cpu" else \
        f" CUDA {real_torch_backend[2:-1]}.{real_torch_backend[-1]}"
    assert (f"tiedpkg 1.0+pt29cu128 was built for torch 2.9 CUDA 12.8; this venv has torch {real_torch_version}"
            f"{build}: its native code fails to load (an undefined symbol)") in out


def test_doctor_names_the_symbol_the_installed_torch_lacks_and_the_import_fails_with_it(
        real_torch_python: str, real_torch_version: str, pypi: LocalIndex, tmp_path: Path) -> None:
    """Beside the real torch 2.13: anontied calls c10::only_in_2_9v1(), which torch 2.13's libc10 does not export —
    doctor says so, demangled, reading the installed torch's libraries, and importing it fails with that very symbol;
    realok calls c10::TensorImpl::release_resources(), which torch exports: no finding, and it imports."""
    import subprocess

    python = _beside_real_torch(real_torch_python, tmp_path / "venv", pypi, ("anontied-1.0", "realok-1.0"))
    code, out = _run("doctor", "--python", python)
    assert code == 1, out
    assert (f"anontied 1.0 calls c10::only_in_2_9v1(), which this venv's torch {real_torch_version} does not export: "
            "it was built against another torch, and its import fails with an undefined symbol") in out, out
    assert f"({C10_CXX}) of torch's C++ API, which torch {real_torch_version} (its libraries in " in out, out
    assert "realok" not in out, out
    bad = subprocess.run([python, "-c", "import torch, anontied._C"], capture_output=True, text=True)
    assert bad.returncode != 0 and f"undefined symbol: {C10_CXX}" in bad.stderr, bad.stderr[-500:]
    ok = subprocess.run([python, "-c", "import torch, realok._C"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr[-500:]


def test_a_cxx_build_whose_symbols_the_locked_torch_lacks_is_refused_naming_the_symbol(tmp_path: Path,
                                                                                      pypi: LocalIndex) -> None:
    """As sgl-kernel's wheels: torch's C++ API, no torch requirement, no per-torch label. Its undefined c10:: symbol is
    checked against what the torch wheel's libraries export (read from the wheel, kept per sha256): torch 2.10's and
    2.11's libc10 lack it, so it is refused naming the symbol, demangled, and the torch — not locked with "not known
    from its files" (the old answer, wrong: the files decide)."""
    root = _project(tmp_path, pypi, ["anontied"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "anontied's native code cannot load on this target" in out, out
    assert ("anontied/_C.so in anontied-1.0-cp311-cp311-manylinux_2_17_x86_64.whl calls c10::only_in_2_9v1() "
            "(_ZN3c1013only_in_2_9v1Ev) of torch's C++ API, which torch 2.") in out, out
    assert "does not export (1 of the 1 torch symbols it needs): it was built against another torch (its wheel names " \
           "none): the import would fail ('undefined symbol: _ZN3c1013only_in_2_9v1Ev')" in out, out
    assert "is not known from its files" not in out and "Traceback" not in out


def test_a_cxx_build_whose_symbols_the_torch_exports_is_locked_without_a_warning(tmp_path: Path,
                                                                                pypi: LocalIndex) -> None:
    """anonok names no torch either, but every c10:: symbol it needs (its weak references aside) is among torch's
    exports: it loads, and the lock says nothing is unknown about it. The torch's exports are kept per sha256: a
    second resolve reads no torch wheel."""
    from tritonlock.native import torchsyms

    torchsyms._MEMO.clear()  # (what an earlier test of this process read is not in this test's cache)
    root = _project(tmp_path, pypi, ["anonok"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert versions["anonok"] == "1.0"
    assert not [w for w in sel.warnings if w.startswith("anonok")], sel.warnings
    lock = read_lock(root / "triton-env.lock")
    (torch,) = [p for p in lock.targets[0].packages if p.name == "torch"]
    sha = torch.wheels[0].sha256
    assert torchsyms._kept(sha), "the torch build's exports are kept per sha256"
    torchsyms._MEMO.clear()  # (a new process: what is kept answers, no wheel is read — this address serves nothing)
    got = torchsyms.exports("http://127.0.0.1:9/nothing.whl", 1, sha, torch.wheels[0].name)
    assert not isinstance(got, str) and got.has(C10_ANY) and not got.has(C10_CXX), got


def test_a_lines_torch_whose_exports_are_shipped_rules_a_build_out_before_uv_is_asked(
        tmp_path: Path, pypi: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where compat/torch-symbols/ ships the exports of a line's torch wheel (its sha256: the very wheel the line
    locks), a build whose torch symbols it lacks is passed over by its own facts, before uv is asked — not found in a
    closure and passed over a release at a time. Here the set of torch 2.11.0's wheel on this index is shipped (as
    read from it), torch 2.10.0's is not: the first line rules anontied out at once, the second in a closure."""
    from tritonlock.native import torchsyms

    torchsyms._MEMO.clear()
    first = _project(tmp_path / "ok", pypi, ["anonok"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(first))
    assert code == 0, out
    (torch,) = [p for p in read_lock(first / "triton-env.lock").targets[0].packages if p.name == "torch"]
    assert torch.version.startswith("2.11.0")
    sha = torch.wheels[0].sha256
    kept = torchsyms._kept(sha)
    assert kept and torchsyms._kept(sha) is not None
    row = torchsyms.Shipped(torch="2.11.0", platform="linux_x86_64", file="test.gcs", symbols=len(kept), modulus=0,
                            bits=0, sha256=(sha,), wheels=(torch.wheels[0].name,), source="this test")
    monkeypatch.setattr(torchsyms, "shipped", lambda: [row])
    monkeypatch.setattr(torchsyms, "_shipped_set", lambda r: kept if r is row else None)
    root = _project(tmp_path / "tied", pypi, ["anontied"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "anontied 1.0's native code cannot load beside torch 2.11.0" not in out, out  # (no closure to find it)
    assert "anontied 1.0's native code cannot load beside torch 2.10.0" in out, out  # (not shipped: its closure)
    assert "calls c10::only_in_2_9v1() (_ZN3c1013only_in_2_9v1Ev) of torch's C++ API, which torch 2." in out, out


def test_a_second_top_level_package_nothing_imports_is_an_optional_part_not_a_refusal(tmp_path: Path,
                                                                                    pypi: LocalIndex) -> None:
    """twopkg 2.0's own package links no CUDA; its second top-level package twopkg_ep is CUDA 12 with Hopper code
    only, and nothing imports it. On an A100 beside torch 2.11 (CUDA 13), the newest release is locked with a warning
    saying what `import twopkg_ep` would need (before: twopkg held back to 1.0). Named in [environment].imports, it
    is judged: 2.0 is passed over. A wheel whose own package imports the second one at import is judged whole."""
    a100 = 'driver = "580.95.05"\ngpus = ["8.0"]'
    root = _project(tmp_path / "a", pypi, ["twopkg"], f"gpu|{a100}", torch="==2.11.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert versions["twopkg"] == "2.0", versions
    (w,) = [w for w in sel.warnings if w.startswith("twopkg 2.0: ")]
    assert w.startswith("twopkg 2.0: `import twopkg_ep` would need libcudart.so.12, sm_80: twopkg_ep/_ep.so in "), w
    assert ("nothing locked or named imports twopkg_ep (the package's own import is twopkg, which does not load it), "
            "so it is locked as an optional part — name it in [environment].imports to have it judged") in w, w
    named = _project(tmp_path / "b", pypi, ["twopkg"], f"gpu|{a100}", torch="==2.11.*")
    intent = named / "triton-env.toml"
    intent.write_text(intent.read_text().replace("[environment]\n", '[environment]\nimports = ["twopkg_ep"]\n'))
    code, out = _run("resolve", "-p", str(named))
    assert code == 0, out
    versions, sel = _target(named)
    assert versions["twopkg"] == "1.0", versions
    assert any("twopkg 2.0 (its native code cannot load here: twopkg_ep/_ep.so" in r for r in sel.reasons), sel.reasons
    imp = _project(tmp_path / "c", pypi, ["twoimp"], f"gpu|{a100}", torch="==2.11.*")
    code, out = _run("resolve", "-p", str(imp))
    assert code == 3 and "twoimp_ep/_ep.so in twoimp-1.0" in out and "libcudart.so.12" in out, out


def test_a_library_loaded_by_name_that_nothing_brings_is_a_warning_naming_the_locks_nearest(tmp_path: Path,
                                                                                           pypi: LocalIndex) -> None:
    """dlpkg's module names libcublas.so.12 in its strings (what it would dlopen; DT_NEEDED names none) and
    libcuda.so.1 (the driver's: not a wheel's to bring). The lock brings cuBLAS 13 (nvidia-cublas): a warning naming
    the library, marked inferred (dlopen), and the lock's nearest one; no refusal. `why` says it too."""
    root = _project(tmp_path, pypi, ["dlpkg"], f"gpu|{R580_H100}", torch="==2.11.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert versions["dlpkg"] == "1.0" and "nvidia-cublas" in versions
    (w,) = [w for w in sel.warnings if w.startswith("dlpkg 1.0: ")]
    assert w == ("dlpkg 1.0: dlpkg/_C.so in dlpkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl names libcublas.so.12 "
                 "among its strings (inferred (dlopen): it may load it by name at run time), which no locked wheel "
                 "brings — the lock's nearest is libcublas.so.13 (cuBLAS 13): what of dlpkg loads it would fail "
                 "('libcublas.so.12: cannot open shared object file')"), w
    assert "libcuda.so.1" not in w
    code, out = _run("why", "-p", str(root))
    assert code == 0 and "names libcublas.so.12 among its strings (inferred (dlopen)" in out, out


def test_a_gpu_its_code_reaches_only_through_ptx_gets_the_jit_warning(tmp_path: Path, pypi: LocalIndex) -> None:
    """ptxpkg carries PTX for compute_80 and no machine code: an H100 runs it once the driver has compiled it."""
    root = _project(tmp_path, pypi, ["ptxpkg"], f"gpu|{R580_H100}", torch="==2.11.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    (w,) = [w for w in _target(root)[1].warnings if w.startswith("ptxpkg 1.0: ")]
    assert w.startswith("ptxpkg 1.0: this target's GPU (compute capability 9.0) has no machine code in its GPU code "
                        "(PTX compute_80 alone (no machine code)), only PTX: the driver compiles its kernels from PTX at their first "
                        "use (JIT: a slow first start"), w


def test_the_fix_names_the_packages_build_for_the_other_cuda_major(tmp_path: Path, pypi: LocalIndex) -> None:
    """sibpkg-cu12 is a CUDA 12 build; torch is held at 2.11 (CUDA 13): the conflict's fix names sibpkg-cu13, which
    the index serves."""
    root = _project(tmp_path, pypi, ["sibpkg-cu12"], f"gpu|{R580_H100}", torch="==2.11.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert ("fix: sibpkg-cu13 (sibpkg-cu12's build for CUDA 13, which torch 2.11.0 brings), or a torch build that "
            "brings libcudart.so.12") in out, out


def test_verify_imports_the_locks_packages_not_what_a_preinstalled_stack_holds_beside_them(
        broken_venv: str, pypi: LocalIndex, tmp_path: Path, stubs: dict[str, Path],
        monkeypatch: pytest.MonkeyPatch, real_torch_version: str) -> None:
    """On the H200 a lock of torch + torchvision, synced onto the image with --system-site-packages, failed verify on
    the image's own cuda-core, cupy and numba — packages the lock does not hold — and took 3–5 s more importing ~50
    of them. With the lock's names, verify imports the lock's packages and whatever sits in the venv's own site
    (put there by hand), not the preinstalled rest; a part of a package that needs a library outside the torch/GPU
    stack, which nothing installs, is said (inferred optional) without failing; a build whose native code did not
    load is explained by the torch its METADATA pins. Without a lock, everything is imported, as before."""
    import subprocess

    from tritonlock._subprocess import uv_bin
    from tritonlock.environment import _apply
    from tritonlock.verify import run_verify

    monkeypatch.setenv("LD_LIBRARY_PATH", str(stubs["libcuda.so.1"].parent))
    venv = tmp_path / "venv"
    # the real code path that makes a --system-site-packages venv on an interpreter that is itself a venv
    base_sites = _apply.create(venv, "3.11", system_site_packages=True, base=broken_venv)
    assert base_sites
    python = str(venv / "bin" / "python")
    files = pypi.root / "simple" / "_files"
    mine = [next(files.glob(f"{n}-1.0-*.whl")) for n in ("optpkg", "halfpkg", "opspkg")]
    subprocess.run([uv_bin(), "pip", "install", "-q", "--python", python, "--no-deps", "--offline", *map(str, mine)],
                   check=True)
    scope = ("torch", "triton", "numpy", "filelock")  # the lock's names (not optpkg & co: they came in by hand)
    result = run_verify(python, interpret=True, quick=True, import_scope=scope)
    checks = {c.name: c for c in result.checks}
    # kernelpkg and tiedpkg (broken, preinstalled in the base, not the lock's) are not imported, and that is said
    assert "import kernelpkg" not in checks and "import tiedpkg" not in checks, sorted(checks)
    assert any("preinstalled distribution(s) with native code that the lock does not hold" in n
               for n in result.notes), result.notes
    assert checks["import numpy"].ok  # a lock package preinstalled in the base: imported
    opt = checks["import optpkg"]
    assert opt.ok and opt.detail == ("optpkg 1.0: imported; its module optpkg._cutensor cannot load: it needs "
                                     "libcutensor.so.2, which no installed package brings — inferred optional: "
                                     "optpkg imports without it")
    half = checks["import halfpkg"]  # a library of the CUDA stack is no optional part
    assert not half.ok and "halfpkg 1.0: importing halfpkg._gpu failed: it needs libcudart.so.12" in half.detail
    ops = checks["import opspkg"]
    assert not ops.ok and ops.detail.startswith("opspkg 1.0: importing opspkg failed: RuntimeError: operator "
                                                "opspkg::nms does not exist")
    assert ops.detail.endswith("opspkg 1.0 was built for torch 2.9 (it requires torch==2.9.0), and this environment "
                               f"has torch {real_torch_version}") and ops.fix and "build for torch 2.13.0" in ops.fix
    assert not result.ok
    # no lock: every distribution with native code the interpreter sees, the preinstalled ones too
    everything = {c.name: c for c in run_verify(python, interpret=True, quick=True).checks}
    assert not everything["import kernelpkg"].ok and not everything["import tiedpkg"].ok


def test_of_a_module_built_once_per_torch_release_only_the_build_for_the_locked_torch_is_judged(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """eppkg carries _ep_torch210.so (CUDA 12, sm_90) and _ep_torch211.so (CUDA 13, sm_100 only), and loads the one
    for the torch it runs with: beside torch 2.10 (CUDA 12.8) on an H100 the 2.11 build's CUDA 13 runtime and GPU
    code are no problem; beside torch 2.11 its build for 2.11 is judged, and has no code for the H100."""
    root = _project(tmp_path, pypi, ["eppkg"], f"gpu|{R580_H100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["eppkg"], versions["torch"]) == ("1.0", "2.10.0")
    assert not [w for w in sel.warnings if "eppkg" in w], sel.warnings
    other = _project(tmp_path / "211", pypi, ["eppkg"], f"gpu|{R580_H100}", torch="==2.11.*")
    code, out = _run("resolve", "-p", str(other))
    assert code == 3, out
    assert "eppkg 1.0: its GPU code is built for sm_100 (no PTX), which has no code for this target's GPU " \
           "(compute capability 9.0)" in out, out


def test_verify_imports_only_the_build_for_the_installed_torch_of_a_module_built_per_torch(
        real_torch_python: str, pypi: LocalIndex, tmp_path: Path) -> None:
    """variantpkg carries _ops_torch213.so and _ops_torch212.so and loads the one for the torch installed: verify
    beside the real torch imports that one (and passes), not the other torch's build (whose import fails)."""
    import subprocess

    from tritonlock.verify import run_verify

    python = _beside_real_torch(real_torch_python, tmp_path / "venv", pypi, ("variantpkg-1.0",))
    torch = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                           check=True, capture_output=True, text=True).stdout.strip()
    assert torch.startswith("2.13.")  # (the builds above are named for it)
    result = run_verify(python, interpret=True, quick=True, imports=("variantpkg",))
    row = {c.name: c for c in result.checks}["import variantpkg"]
    assert row.ok, row.detail
    # (what it says it imported is what it imported: the other torch's build counted apart)
    assert row.detail == ("variantpkg 1.0: imported, with its 1 extension module (1 more: its builds for another "
                          "torch or CUDA than this one's, which it does not load)"), row.detail


def test_verify_says_a_second_top_level_package_that_cannot_load_is_an_optional_part(
        real_torch_python: str, pypi: LocalIndex, tmp_path: Path) -> None:
    """twopkg 2.0 beside the real torch: `import twopkg` works; its second top-level package twopkg_ep cannot load
    here (CUDA 12, no such runtime): verify passes the row and says it is an optional part, as resolve did. twoimp's
    own package imports its second one: that failure is the package's, and fails the row."""
    from tritonlock.verify import run_verify

    python = _beside_real_torch(real_torch_python, tmp_path / "venv", pypi, ("twopkg-2.0", "twoimp-1.0"))
    result = run_verify(python, interpret=True, quick=True, imports=("twopkg", "twoimp"))
    rows = {c.name: c for c in result.checks}
    two = rows["import twopkg"]
    assert two.ok, two.detail
    assert two.detail.startswith("twopkg 2.0: imported; twopkg_ep, a second top-level package of its wheel, did not "
                                 "(ImportError: "), two.detail
    assert two.detail.endswith("nothing you named imports it, so it is an optional part (name it in "
                               "[environment].imports to have it checked)"), two.detail
    imp = rows["import twoimp"]
    assert not imp.ok and "twoimp" in imp.detail and "cannot open shared object file" in imp.detail, imp.detail


def test_verify_imports_the_build_for_torchs_cuda_of_a_module_built_per_cuda_and_listed_as_top_level(
        stubs: dict[str, Path], tmp_path: Path) -> None:
    """tmslike carries its hook per CUDA major (tmslike_hook_cu12 / _cu13) and unsuffixed (CUDA 12), each a top-level
    module that its top_level.txt lists (as torch-memory-saver's does); torch's version.py says CUDA 13.0. The import
    job in a real venv imports the package and the _cu13 hook only — the CUDA 12 builds, whose import would fail (no
    libcudart.so.12 here: found so on the H200), are neither imported as modules nor as top-level names."""
    import json
    import subprocess
    import sys

    from tritonlock._subprocess import uv_bin
    from pkgindex import build_wheel

    def hook(name: str, cudart: str) -> bytes:
        return extension(tmp_path / name, name, links={stubs[cudart]: ("cudaRuntimeGetVersion",)})

    torch = build_wheel(tmp_path / "w", "torch", "2.11.0", modules={
        "torch/__init__.py": "", "torch/version.py": "__version__ = '2.11.0'\ncuda: Optional[str] = '13.0'\n"})
    tops = "tmslike\ntmslike_hook\ntmslike_hook_cu12\ntmslike_hook_cu13\n"
    tms = build_wheel(tmp_path / "w", "tmslike", "1.0", tag=CP, modules={
        "tmslike/__init__.py": "", "tmslike_hook_cu12.abi3.so": hook("tmslike_hook_cu12", "libcudart.so.12"),
        "tmslike_hook_cu13.abi3.so": hook("tmslike_hook_cu13", "libcudart.so.13"),
        "tmslike_hook.abi3.so": hook("tmslike_hook", "libcudart.so.12"),
        "libcudart.so.13": stubs["libcudart.so.13"].read_bytes(), "tmslike-1.0.dist-info/top_level.txt": tops})
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([uv_bin(), "pip", "install", "--python", py, "--no-deps", "--offline", str(torch), str(tms)],
                   check=True, capture_output=True)
    runner = Path(__file__).parents[1] / "tritonlock" / "verify" / "runner"
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); from tlverify.imports import "
            "installed_with_native_code, import_job_main, torch_cuda; print(json.dumps(torch_cuda())); "
            "jobs, _ = installed_with_native_code(['tmslike']); "
            "[import_job_main(j) for j in jobs if j['dist'] == 'tmslike']")
    out = subprocess.run([py, "-I", "-c", code, str(runner)], check=True, capture_output=True, text=True).stdout
    cuda, rows = out.splitlines()
    assert json.loads(cuda) == [13, 0]
    got = {r["module"]: r["ok"] for r in json.loads(rows)}
    assert got == {"tmslike": True, "tmslike_hook_cu13": True}, rows
    # (the CUDA 12 hook's import is a real failure here: what verify would have reported)
    bad = subprocess.run([py, "-I", "-c", "import tmslike_hook_cu12"], capture_output=True, text=True)
    assert bad.returncode != 0 and "libcudart.so.12" in bad.stderr, bad.stderr


@pytest.mark.parametrize("files, comment", [(3, 0), (4000, 0), (30, 65535)])
def test_a_wheels_zip_directory_is_read_in_one_request_where_the_end_holds_it(tmp_path: Path, files: int,
                                                                              comment: int) -> None:
    """The end record and the central directory come in one ranged read where the file's end holds both; a large
    directory (4,000 members) gets one more read for what the first did not reach, and one that the longest zip
    comment pushes out of the first read gets a read of its own — the members the same as zipfile's in every case."""
    import os
    import zipfile

    from tritonlock.lock.index import session
    from tritonlock.native.remotezip import RemoteZip

    idx = LocalIndex(tmp_path / "index").start()
    try:
        d = tmp_path / "index" / "simple" / "_files"
        d.mkdir(parents=True)
        whl = d / "many-1.0-py3-none-any.whl"
        with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("many/big.bin", os.urandom(200_000), compress_type=zipfile.ZIP_STORED)
            for i in range(files):
                zf.writestr(f"many/pkg/module_with_a_long_name_{i:05d}.py", f"x = {i}\n")
            zf.comment = b"c" * comment
        before = len(idx.requests)
        got = RemoteZip(session(), f"{idx.url}/simple/_files/{whl.name}", whl.stat().st_size).members()
        with zipfile.ZipFile(whl) as zf:
            want = {i.filename: (i.compress_type, i.compress_size, i.file_size, i.header_offset)
                    for i in zf.infolist()}
        assert got == want
        assert len(idx.requests) - before == (1 if files < 1000 and not comment else 2)
    finally:
        idx.stop()


def _native_tables(lock: Path) -> str:
    text = lock.read_text(encoding="utf-8")
    return text[text.index("[[native]]"):]


def _facts_forgotten() -> None:
    """The binary facts kept per sha256, not the integrity check's METADATA beside them."""
    from tritonlock.native import read as native

    for f in native.cache_dir().glob("*.json"):
        if not f.name.endswith("metadata.json"):
            f.unlink()


def test_after_a_sync_the_wheels_uv_unpacked_are_read_in_its_cache_not_on_the_index(
        tmp_path: Path, pypi: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sync leaves each locked wheel unpacked in uv's cache, under the sha256 uv hashed it by: a resolve that keeps
    no binary facts then reads them there, asking the index for none of those files, and locks the same facts as
    ranged reads of the index gave. A shared object changed there (its size no longer the one the wheel's RECORD
    lists) is not believed: that wheel is read from the index again."""
    from tritonlock.native import read as native, uvcache

    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    root = _project(tmp_path / "p", pypi, ["kernelpkg"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    lock = read_lock(root / "triton-env.lock")
    tables = _native_tables(root / "triton-env.lock")
    files = {f.filename: f.sha256 for f in lock.native}
    assert {n.split("-")[0] for n in files} >= {"kernelpkg", "torch", "nvidia_cuda_runtime"}, files
    assert all(uvcache.unpacked(n, sha) is None for n, sha in files.items())  # nothing installed yet
    code, out = _run("sync", "-p", str(root), "--target", "gpu", "--no-verify")
    assert code == 0, out
    folders = {n: uvcache.unpacked(n, sha) for n, sha in files.items()}
    assert all(folders.values()), folders
    assert uvcache.unpacked(next(iter(files)), "0" * 64) is None  # another sha256 is another file
    with monkeypatch.context() as m:  # uv told to keep no cache: nothing is taken from one either
        m.setenv("UV_NO_CACHE", "1")
        assert all(uvcache.unpacked(n, sha) is None for n, sha in files.items())

    def reads_of_locked_wheels(since: int) -> list[str]:
        return [p for p, agent in pypi.asked_by[since:] if not agent.startswith("uv/") and p.rsplit("/", 1)[-1]
                in files]

    _facts_forgotten()
    (root / "triton-env.lock").unlink()
    before = len(pypi.asked_by)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert reads_of_locked_wheels(before) == []
    assert _native_tables(root / "triton-env.lock") == tables
    kept = {n: native.cached(sha, gpu=True, names_only=True) for n, sha in files.items()}
    assert all(f is not None and f.source.startswith(f"read from the files uv unpacked {n} into") for n, f in
               kept.items()), kept
    # kernelpkg's extension changed in uv's cache: read from the index again, the same facts locked
    (kname,) = [n for n in files if n.startswith("kernelpkg-")]
    with open(folders[kname] / "kernelpkg" / "_C.so", "ab") as fh:
        fh.write(b"\0" * 16)
    assert uvcache.read(folders[kname], files[kname], kname) is None
    _facts_forgotten()
    (root / "triton-env.lock").unlink()
    before = len(pypi.asked_by)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert {p.rsplit("/", 1)[-1] for p in reads_of_locked_wheels(before)} == {kname}
    assert _native_tables(root / "triton-env.lock") == tables


def test_a_module_a_dependency_loads_inside_a_try_does_not_cost_the_named_package_its_newest(tmp_path: Path,
                                                                                            pypi: LocalIndex) -> None:
    """wantsguard 2.0 (the newest) pins torch 2.10 (CUDA 12.8) and needs guardpkg >= 2.0, a CUDA 13 build whose
    module guardpkg loads inside a `try` that catches its failure: beside torch 2.10 `import guardpkg` works without
    it. The named package keeps its newest (as unsloth's newest with torch 2.4.1 beside torchao's extensions built
    for newer torch), with a warning saying what is off; the same with the module imported plainly (hardpkg) cannot
    load: wantshard 1.0 with torch 2.11. Named itself, guardpkg is judged whole (1.0, whose module loads, beside
    torch 2.10); a dependency with a release whose module loads keeps that one."""
    root = _project(tmp_path / "a", pypi, ["wantsguard"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["wantsguard"], versions["guardpkg"], versions["torch"]) == ("2.0", "2.0", "2.10.0"), versions
    (w,) = [w for w in sel.warnings if w.startswith("guardpkg 2.0: ")]
    assert w.startswith("guardpkg 2.0: guardpkg/_C.so in guardpkg-2.0-cp311-cp311-manylinux_2_17_x86_64.whl needs "
                        "libcudart.so.13, which no locked wheel brings"), w
    assert ("guardpkg loads that module inside a `try` that catches the failure (inferred from its Python), so "
            "`import guardpkg` works without it") in w, w
    assert "warning: guardpkg 2.0: " in out
    hard = _project(tmp_path / "b", pypi, ["wantshard"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(hard))
    assert code == 0, out
    versions, sel = _target(hard)
    assert (versions["wantshard"], versions["hardpkg"], versions["torch"]) == ("1.0", "2.0", "2.11.0"), versions
    assert not any("inside a `try`" in w for w in sel.warnings)
    named = _project(tmp_path / "c", pypi, ["guardpkg"], f"gpu|{R580_H100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(named))
    assert code == 0, out
    versions, sel = _target(named)
    assert versions["guardpkg"] == "1.0", versions
    assert not any("inside a `try`" in w for w in sel.warnings)
    pinned = _project(tmp_path / "e", pypi, ["wantsguard==2.0"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(pinned))  # (the first search alone: no answer at all)
    assert code == 0, out
    versions, sel = _target(pinned)
    assert (versions["guardpkg"], versions["torch"]) == ("2.0", "2.10.0"), versions
    assert any(w.startswith("guardpkg 2.0: ") and "inside a `try`" in w for w in sel.warnings), sel.warnings
    dep = _project(tmp_path / "d", pypi, ["wantsguard==1.0"], f"gpu|{R580_H100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(dep))
    assert code == 0, out
    versions, sel = _target(dep)
    assert (versions["guardpkg"], versions["torch"]) == ("1.0", "2.10.0"), versions
    assert not any("inside a `try`" in w for w in sel.warnings)


def test_the_first_search_stops_at_a_failure_a_package_catches_and_where_it_ties_the_second_its_closure_stands(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """wantsguard 1.0 with torch 2.10: uv's first answer holds guardpkg 2.0, whose module (loaded inside a `try`)
    cannot load there — the first search goes no further, the second (lenient) one answers wantsguard 1.0 with
    wantsgone held at 1.0 by uv (2.0 needs a package no index serves). The first search, asked at that answer's
    point alone, ties it with guardpkg 1.0, whose module loads: that closure is locked, and wantsgone's warning quotes
    the check uv made in the second search."""
    root = _project(tmp_path / "a", pypi, ["wantsguard==1.0", "wantsgone"], f"gpu|{R580_H100}", torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    lines = out.splitlines()
    passed = next(i for i, x in enumerate(lines) if "guardpkg 2.0's native code cannot load beside torch" in x)
    again = next(i for i, x in enumerate(lines) if "weighing again with the failures packages catch" in x)
    assert passed < again and not any("asking uv" in x for x in lines[passed:again]), out
    versions, sel = _target(root)
    assert (versions["wantsguard"], versions["guardpkg"], versions["wantsgone"], versions["torch"]) == \
        ("1.0", "1.0", "1.0", "2.10.0"), versions
    (w,) = [w for w in sel.warnings if w.startswith("wantsgone 1.0 is locked, not its newest release 2.0: ")]
    assert "checked: uv finds no lock with wantsgone==2.0 with wantsguard==1.0" in w and "goneplug" in w, w
    assert not any("inside a `try`" in w for w in sel.warnings), sel.warnings


@pytest.mark.parametrize("packages", [["wantsguard", "hardpkg==2.0"], ["hardpkg==2.0", "wantsguard"]])
def test_where_the_second_search_locks_the_named_packages_only_in_part_the_first_search_answers_whole(
        tmp_path: Path, pypi: LocalIndex, packages: list[str]) -> None:
    """wantsguard 2.0 pins torch 2.10 (CUDA 12.8), beside which guardpkg 2.0 (loaded inside a `try`) cannot load
    and hardpkg 2.0 (imported plainly, CUDA 13) cannot either: the second search locks wantsguard 2.0 there without
    hardpkg — no answer — so the first search is run whole after all: wantsguard 1.0 with hardpkg 2.0 on torch 2.11."""
    root = _project(tmp_path / "a", pypi, packages, f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["wantsguard"], versions["hardpkg"], versions["guardpkg"], versions["torch"]) == \
        ("1.0", "2.0", "2.0", "2.11.0"), versions
    (w,) = [w for w in sel.warnings if w.startswith("wantsguard 1.0 is locked, not its newest release 2.0: ")]
    assert "requires torch==2.10.*" in w, w


@pytest.mark.parametrize("late", ["latekit", "latehard"])
def test_a_fix_only_the_second_searchs_rule_allows_is_found_where_the_answer_is_the_first_searchs(
        tmp_path: Path, pypi: LocalIndex, late: str) -> None:
    """firstkit first: its newest (2.0) pins torch 2.11, beside which only latekit 0.1, naming no torch, locks — a
    stand-in, so a conflict (the first search's answer: nothing on its way failed). latekit 1.0 pins torch 2.10 and
    needs guardpkg >= 2.0, whose module (loaded inside a `try`) cannot load there: held recent, the first search's
    rule refuses every closure, the second's lets that failure pass — its fix is the conflict's, checked, and it locks
    when applied (lmcache + sglang on an R550 host, where sglang 0.5.3-0.5.10 bring torchao 0.9.0: not "no sglang
    >= 0.5.3 installs on this target"). With hardpkg, imported plainly, latehard 1.0 cannot load on this target at
    all: no fix is offered, and the conflict says what the rule finds in uv's lock of it."""
    root = _project(tmp_path / "a", pypi, ["firstkit", late], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert (f"error: target 'gpu': {late} cannot be locked at a recent release — {late} 0.1, the newest uv finds "
            f"with the other requirements, only stands in for it: its requirements name no torch, where {late} 1.0 "
            "requires torch==2.10.*\n") in out, out
    if late == "latehard":  # (the rule's words on uv's lock with latehard recent: no check found another side)
        assert ("  no latehard >= 1.0 can be locked here beside recent releases of the other packages so that the "
                "native code loads: with torch 2.10.0 (cu128), uv locks latehard 1.0, and hardpkg 2.0's native code "
                "cannot load there: hardpkg/_C.so in hardpkg-2.0-") in out and "fix: add" not in out, out
        assert "  fix: change what holds hardpkg 2.0 (a requirement in [environment].packages that pins it or " in out
        return
    assert "  latekit 1.0 or newer installs only if firstkit moves down\n" in out, out
    assert ('  fix: add "firstkit<=1.0" to [environment].packages (checked: uv then locks latekit 1.0, firstkit 1.0 '
            "with torch 2.10.0)") in out, out
    assert not (root / "triton-env.lock").exists()
    intent = root / "triton-env.toml"
    intent.write_text(intent.read_text().replace('"firstkit"', '"firstkit<=1.0"'))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["firstkit"], versions["latekit"], versions["guardpkg"], versions["torch"]) == \
        ("1.0", "1.0", "2.0", "2.10.0"), versions
    assert any(w.startswith("guardpkg 2.0: ") and "inside a `try`" in w for w in sel.warnings), sel.warnings


@pytest.mark.parametrize("first", ["guardpkg==2.0", "hardpkg==2.0", "guardpkg>=2.0"])
def test_a_named_package_whose_native_code_fails_beside_the_others_recent_releases_is_named_in_the_conflict(
        tmp_path: Path, pypi: LocalIndex, first: str) -> None:
    """guardpkg 2.0 named (its module's failure counts, though guardpkg catches it) beside latekit: latekit 1.0 pins
    torch 2.10, beside which guardpkg 2.0, a CUDA 13 build, cannot load — uv locks them (it does not weigh native
    code), so no uv check finds the other side; latekit 0.1, naming no torch, only stands in. The conflict says what
    the rule finds in uv's lock with latekit recent — guardpkg 2.0's module and the CUDA runtime it needs — never "no
    latekit >= 1.0 installs on this target" (torchao==0.9.* beside sglang: sglang 0.5.23 installs on an H200)."""
    late = "latehard" if first.startswith("hardpkg") else "latekit"
    dep = first.split("=")[0].split(">")[0]
    root = _project(tmp_path / "a", pypi, [first, late], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert (f"error: target 'gpu': {late} cannot be locked at a recent release — {late} 0.1, the newest uv finds") \
        in out, out
    assert (f"  no {late} >= 1.0 can be locked here beside recent releases of the other packages so that the native "
            f"code loads: with torch 2.10.0 (cu128), uv locks {late} 1.0, and {dep} 2.0's native code cannot load "
            f"there: {dep}/_C.so in {dep}-2.0-cp311-cp311-manylinux_2_17_x86_64.whl needs libcudart.so.13") in out, out
    assert (f"  fix: change what holds {dep} 2.0 (a requirement in [environment].packages that pins it or brings "
            f"it), or lock them for machines where it loads (a target of their own), or accept {late} 0.1 by pinning "
            f"it (\"{late}==0.1\" in [environment].packages)") in out, out
    assert "installs on this target" not in out and not (root / "triton-env.lock").exists()


@pytest.mark.parametrize("packages", [["wantsguard==2.0", "hardpkg==2.0"], ["wantsguard==2.0", "hardpkg>=2.0"]])
def test_where_only_a_caught_failure_stands_in_the_first_searchs_way_the_conflict_names_the_package_left_out(
        tmp_path: Path, pypi: LocalIndex, packages: list[str]) -> None:
    """wantsguard==2.0 pins torch 2.10 (CUDA 12.8); hardpkg 2.0, a CUDA 13 build imported plainly, cannot load there.
    The first search finds nothing (guardpkg's module, loaded inside a `try`, fails beside torch 2.10 too); the
    second locks wantsguard alone: the conflict names hardpkg and its native code — as the other order's names
    wantsguard's torch pin — not guardpkg, whose import works without its module."""
    root = _project(tmp_path / "a", pypi, packages, f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "error: target 'gpu': hardpkg cannot be locked beside wantsguard 2.0 (the newest that can be locked here, " \
           "with torch 2.10.0)" in out, out
    assert "hardpkg 2.0's native code cannot load there: hardpkg/_C.so in hardpkg-2.0-" in out, out
    assert "guardpkg" not in out.split("error: ", 1)[1], out
    assert not (root / "triton-env.lock").exists()
    other = _project(tmp_path / "b", pypi, packages[::-1], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(other))
    assert code == 3, out
    assert "error: target 'gpu': wantsguard cannot be locked beside hardpkg 2.0" in out and \
        "wantsguard 2.0 requires torch==2.10.*" in out, out


def test_doctor_says_a_module_a_package_loads_inside_a_try_is_off_and_the_import_works(
        real_torch_python: str, pypi: LocalIndex, tmp_path_factory: pytest.TempPathFactory) -> None:
    """guardpkg 1.0 (its CUDA 12 module loaded inside a `try`) beside the real torch, with no CUDA 12 runtime: doctor
    warns that the module cannot load and that the import works without it — no error — and the import does work."""
    import subprocess

    python = _beside_real_torch(real_torch_python, tmp_path_factory.mktemp("guarded") / "venv", pypi,
                                ("guardpkg-1.0", "hardpkg-1.0"))
    code, out = _run("doctor", "--python", python)
    assert "guardpkg 1.0 has a module that cannot load here, which it loads inside a `try`: its import works without " \
           "it" in out, out
    assert "guardpkg/_C.so in guardpkg 1.0 in " in out and "needs libcudart.so.12" in out, out
    assert "guardpkg 1.0's native code cannot load here" not in out and "Traceback" not in out, out
    assert "hardpkg 1.0's native code cannot load here: it needs libcudart.so.12" in out, out
    r = subprocess.run([python, "-c", "import guardpkg, ctypes, pathlib\n"
                                      "f = next(pathlib.Path(guardpkg.__file__).parent.glob('_C*.so'))\n"
                                      "try:\n    ctypes.CDLL(str(f))\nexcept OSError as e:\n    print('off:', e)\n"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("off: ") and "libcudart.so.12" in r.stdout, (r.stdout, r.stderr)


def test_verify_passes_a_module_the_lock_says_its_package_loads_inside_a_try_and_fails_one_imported_plainly(
        real_torch_python: str, pypi: LocalIndex, tmp_path: Path) -> None:
    """guardpkg 1.0 and hardpkg 1.0 (CUDA 12 modules, no CUDA 12 runtime) beside the real torch, with the lock's
    facts (read from their wheels): guardpkg's row passes saying its module is off, as the lock's warning said;
    hardpkg's fails. Without the lock's facts nothing says the module is guarded: guardpkg's row fails."""
    import hashlib

    from tritonlock.models import LockedPackage, Wheel
    from tritonlock.native.read import read_file
    from tritonlock.verify import run_verify
    from tritonlock.verify.natives import lock_facts

    python = _beside_real_torch(real_torch_python, tmp_path / "venv", pypi, ("guardpkg-1.0", "hardpkg-1.0"))
    packages, facts = [], []
    for name in ("guardpkg", "hardpkg"):
        whl = next((pypi.root / "simple" / "_files").glob(f"{name}-1.0-*.whl"))
        sha = hashlib.sha256(whl.read_bytes()).hexdigest()
        facts.append(read_file(whl, sha))
        packages.append(LockedPackage(name=name, version="1.0", index="x", wheels=(Wheel(name=whl.name, url="x",
                                                                                         sha256=sha),)))
    assert facts[0].guarded == ("guardpkg/_C.so",) and facts[1].guarded == ()
    result = run_verify(python, interpret=True, quick=True, lock_facts=lock_facts(packages, facts))
    rows = {c.name: c for c in result.checks}
    g = rows["import guardpkg"]
    assert g.ok, g.detail
    assert g.detail.startswith("guardpkg 1.0: imported; its module guardpkg._C cannot load (") and \
        "libcudart.so.12" in g.detail, g.detail
    assert g.detail.endswith("guardpkg loads it inside a `try` that catches the failure (the lock's facts, inferred "
                             "from its Python), so what needs it is off: a guardpkg built for this torch would have "
                             "it"), g.detail
    h = rows["import hardpkg"]
    assert not h.ok and "libcudart.so.12" in h.detail, h.detail
    bare = run_verify(python, interpret=True, quick=True)
    assert not {c.name: c for c in bare.checks}["import guardpkg"].ok


@pytest.fixture(scope="module")
def three_lines(tmp_path_factory: pytest.TempPathFactory, stubs: dict[str, Path]) -> Iterator[LocalIndex]:
    """torch 2.9.0 and 2.10.0 (PyPI's CUDA 12.8 builds; only 2.9's libc10 exports C10_CXX) and 2.11.0 (CUDA 13.0);
    symcu12, a CUDA 12 build of torch 2.9's C++ API that names no torch (as sgl-kernel's wheels)."""
    tmp = tmp_path_factory.mktemp("three-build")
    idx = LocalIndex(tmp_path_factory.mktemp("three-index"))
    m = load_matrix()
    for tv, runtime, c10 in (("2.9.0", "nvidia-cuda-runtime-cu12==12.8.90", "libc10.so@2.9"),
                             ("2.10.0", "nvidia-cuda-runtime-cu12==12.8.90", "libc10.so"),
                             ("2.11.0", "nvidia-cuda-runtime==13.0.96", "libc10.so")):
        rel = m.torch_release(tv)
        assert rel is not None and rel.triton and rel.pypi_backend.startswith("cu1")
        libs = {f"torch/lib/{n}": stubs[n].read_bytes() for n in ("libtorch.so", "libtorch_cuda.so", "libc10_cuda.so")}
        idx.add("simple", "triton", rel.triton, tag=LINUX)
        idx.add("simple", "torch", tv, tag=CP, requires=(runtime, f"triton=={rel.triton}; platform_system == 'Linux'"),
                modules={"torch/__init__.py": f"__version__ = {tv!r}\n", **libs,
                         "torch/lib/libc10.so": stubs[c10].read_bytes()})
    idx.add("simple", "nvidia-cuda-runtime-cu12", "12.8.90", tag=LINUX,
            modules={"nvidia/cuda_runtime/lib/libcudart.so.12": stubs["libcudart.so.12"].read_bytes()})
    idx.add("simple", "nvidia-cuda-runtime", "13.0.96", tag=LINUX,
            modules={"nvidia/cu13/lib/libcudart.so.13": stubs["libcudart.so.13"].read_bytes()})
    idx.add("simple", "symcu12", "1.0", tag=CP, modules={
        "symcu12/__init__.py": "from . import _C\n", "symcu12/_C.so": extension(
            tmp / "sym", "symcu12._C", links={stubs["libcudart.so.12"]: ("cudaRuntimeGetVersion",),
                                              stubs["libc10.so@2.9"]: (C10_CXX,)})})
    idx.start()
    yield idx
    idx.stop()


def test_torch_held_for_a_cuda_12_build_says_why_a_newer_cuda_12_torch_was_not_taken(
        tmp_path: Path, three_lines: LocalIndex) -> None:
    """symcu12 needs CUDA 12 (torch 2.11's build brings 13) and a symbol torch 2.10's libc10 lacks: torch 2.9.0 is
    locked. Its reason is not "the newest torch build that brings CUDA 12" alone (2.10.0 brings it too): it says
    that 2.10.0 was passed over, and for what (as sgl-kernel 0.3.21 gets torch 2.9.1 on PyPI)."""
    root = _project(tmp_path, three_lines, ["symcu12"], f"gpu|{R580_H100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert versions["torch"] == "2.9.0", versions
    (why,) = [r for r in sel.reasons if r.startswith("torch 2.9.0 (cu128): ")]
    assert why.startswith("torch 2.9.0 (cu128): the newest torch build that brings CUDA 12, which symcu12 1.0's "
                          "native code needs, and beside which it loads; torch 2.10.0 (cu128) brings CUDA 12 too, but "
                          "symcu12 1.0 cannot load beside it: symcu12/_C.so in symcu12-1.0-"), why
    assert "c10::only_in_2_9v1()" in why and why.endswith("; torch 2.11.0 (cu130) would fit this target"), why
    (w,) = [w for w in sel.warnings if w.startswith("torch 2.9.0 (cu128) is locked, not 2.11.0 (cu130): ")]
    assert "; torch 2.10.0 (cu128) brings CUDA 12 too, but symcu12 1.0 cannot load beside it: " in w, w


def test_the_demangler_is_found_without_running_ldconfig_or_a_compiler() -> None:
    """libstdc++ (present wherever torch runs) and libc's free are loaded by name: ctypes.util.find_library, which
    runs ldconfig and the C compiler (0.1-0.2 s of a resolve that demangles one symbol), is asked only where those
    names do not load — and then it is."""
    import ctypes
    import ctypes.util

    from tritonlock.native import demangle as d

    asked: list[str] = []
    real, real_cdll = ctypes.util.find_library, ctypes.CDLL
    d._runtime.cache_clear()
    d.demangle.cache_clear()
    try:
        ctypes.util.find_library = lambda name: asked.append(name)  # type: ignore[assignment,func-returns-value]
        assert d.demangle("_ZN3c1010TensorImpl7releaseEv") == "c10::TensorImpl::release()"
        assert asked == []
        d._runtime.cache_clear()
        d.demangle.cache_clear()

        def only_found(name: object, *a: object, **kw: object) -> object:
            if name in ("libstdc++.so.6", "libc++abi.so.1", "libc++abi.dylib"):
                raise OSError(f"{name}: not here")
            return real_cdll(name, *a, **kw)  # type: ignore[arg-type]

        real_cdll("libstdc++.so.6")  # (loaded: its path is in the process's map)
        path = next(line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()
                    if line.split()[-1].rsplit("/", 1)[-1].startswith("libstdc++.so"))
        ctypes.CDLL = only_found  # type: ignore[assignment,misc]
        ctypes.util.find_library = (  # type: ignore[assignment]
            lambda name: asked.append(name) or (path if name == "stdc++" else None))  # type: ignore[func-returns-value]
        assert d.demangle("_ZN3c1010TensorImpl7releaseEv") == "c10::TensorImpl::release()"
        assert asked == ["stdc++"]
    finally:
        ctypes.util.find_library = real
        ctypes.CDLL = real_cdll  # type: ignore[misc]
        d._runtime.cache_clear()
        d.demangle.cache_clear()


def test_a_package_that_builds_its_kernels_when_first_called_is_judged_by_its_gpu_floor_and_prebuilt_kernels(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """flashinfer-python's shape (compat/packages.toml [[kernels-at-first-use]]: no GPU code in its wheel, kernels
    for compute capability 7.5 and newer built when first called, prebuilt in flashinfer-cubin and
    flashinfer-jit-cache). Named on a V100 it is the target's conflict, naming the GPU, the floor and the change, and
    no lock is written; on a T4 (7.5, the floor itself) it locks; beside a V100 and an H100 in one target it locks
    with a warning for the V100; required by a named package on a V100, a warning — and no word of nvcc, which
    could not help there. Where it can run, the lock says nvcc compiles its kernels and names the prebuilt packages
    it lacks, and only those."""
    def resolve(name: str, packages: list[str], gpus: str) -> tuple[int, str, Path]:
        root = _project(tmp_path / name, pypi, packages, f'gpu|driver = "580.95.05"\ngpus = {gpus}', torch="==2.10.*")
        code, out = _run("resolve", "-p", str(root))
        return code, out, root

    code, out, root = resolve("v100", ["flashinfer-python"], '["7.0"]')
    assert code == 3, out
    assert ("target 'gpu': flashinfer-python 0.6.7 builds its CUDA kernels when first called, for compute capability "
            "7.5 (sm_75) and newer only, and this target's GPU is 7.0 (sm_70): no release of it runs its kernels "
            "here (compat/packages.toml [[kernels-at-first-use]], from https://docs.flashinfer.ai/") in out, out
    assert "fix: leave flashinfer-python out of this target's packages" in out, out
    assert not (root / "triton-env.lock").exists()
    code, out, root = resolve("two-v100", ["flashinfer-python"], '["7.0", "7.0"]')  # (each GPU named once)
    assert code == 3 and "this target's GPU is 7.0 (sm_70): no release" in out, out

    nvcc = "compiles its CUDA kernels when first called, with nvcc from a CUDA toolkit on the machine that runs it"
    code, out, root = resolve("t4", ["flashinfer-python"], '["7.5"]')
    assert code == 0, out
    versions, sel = _target(root)
    assert versions["flashinfer-python"] == "0.6.7"
    (w,) = [w for w in sel.warnings if "flashinfer" in w]
    assert w.startswith(f"flashinfer-python 0.6.7 {nvcc}"), w
    assert ("this lock brings none of flashinfer-cubin, flashinfer-jit-cache, which carry them prebuilt: add "
            "flashinfer-cubin and flashinfer-jit-cache to [environment].packages where an index the intent names "
            "serves them (at flashinfer-python's release: the decision holds them there;") in w, w

    code, out, root = resolve("mixed", ["flashinfer-python"], '["7.0", "9.0"]')
    assert code == 0, out
    gpu, tool = [w for w in (_target(root)[1].warnings) if "flashinfer" in w]
    assert gpu.startswith("flashinfer-python 0.6.7 builds its CUDA kernels when first called, for compute capability "
                          "7.5 and newer only: on this target's GPU 7.0 (sm_70) its kernels cannot run"), gpu
    assert "9.0" not in gpu and tool.startswith(f"flashinfer-python 0.6.7 {nvcc}"), (gpu, tool)

    code, out, root = resolve("dep-v100", ["servepkg"], '["7.0"]')
    assert code == 0, out
    versions, sel = _target(root)
    assert versions["flashinfer-python"] == "0.6.7"
    (w,) = [w for w in sel.warnings if "flashinfer" in w]
    assert w.startswith("flashinfer-python 0.6.7 (not named: required by the packages named) builds its CUDA "
                        "kernels when first called"), w

    code, out, root = resolve("cubin-h100", ["flashinfer-python==0.6.6", "flashinfer-cubin"], '["9.0"]')
    assert code == 0, out
    (w,) = [w for w in _target(root)[1].warnings if "flashinfer" in w]
    assert ("this lock does not bring flashinfer-jit-cache, which carries them prebuilt: add flashinfer-jit-cache to "
            "[environment].packages where an index the intent names serves it (at flashinfer-python's release") in w, w


def test_a_prebuilt_kernel_package_is_locked_at_its_packages_release_or_the_conflict_names_both(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """flashinfer-python refuses to import beside a flashinfer-cubin of another release (compat/packages.toml
    [[kernels-at-first-use]] same-release); this index's cubin stops at 0.6.6, its flashinfer-python at 0.6.7.
    Written as the docs say (both names), uv alone takes each newest — 0.6.7 beside 0.6.6, a venv whose import
    fails: it is the conflict naming both, with the changes (the first checked); flashinfer-python held at 0.6.5
    takes cubin 0.6.5, not its newest; required by a named package, the same conflict and the pin that fixes it."""
    def resolve(name: str, packages: list[str]) -> tuple[int, str, Path]:
        root = _project(tmp_path / name, pypi, packages, f"gpu|{R580_H100}", torch="==2.10.*")
        code, out = _run("resolve", "-p", str(root))
        return code, out, root

    code, out, root = resolve("both", ["flashinfer-python", "flashinfer-cubin"])
    assert code == 3, out
    assert ("target 'gpu': flashinfer-cubin 0.6.6 cannot be locked beside flashinfer-python 0.6.7: flashinfer-python "
            "refuses to import beside a flashinfer-cubin of another release (compat/packages.toml "
            "[[kernels-at-first-use]]") in out, out
    assert ("uv finds no flashinfer-cubin 0.6.7 with the other packages here: Because there is no version of "
            "flashinfer-cubin==0.6.7 and you require flashinfer-cubin==0.6.7") in out, out
    assert ('fix: "flashinfer-python==0.6.6" in [environment].packages (checked: uv locks flashinfer-python 0.6.6 '
            "(from 0.6.7), flashinfer-cubin 0.6.6 with it, torch 2.10.0); or leave flashinfer-cubin out of "
            "[environment].packages") in out, out
    assert "tritonlock-closure" not in out, out
    code, out, root = resolve("floor", ["flashinfer-python>=0.6.7", "flashinfer-cubin"])  # (no release to go back to)
    assert code == 3 and "flashinfer-cubin 0.6.6 cannot be locked beside flashinfer-python 0.6.7" in out, out
    assert "fix: leave flashinfer-cubin out of [environment].packages (flashinfer-python then builds its kernels " \
           "when first called, with nvcc)" in out and "checked" not in out, out
    assert not (root / "triton-env.lock").exists()

    code, out, root = resolve("held", ["flashinfer-python==0.6.5", "flashinfer-cubin"])
    assert code == 0, out
    versions, sel = _target(root)
    assert (versions["flashinfer-python"], versions["flashinfer-cubin"]) == ("0.6.5", "0.6.5"), versions
    (d,) = [d for d in sel.direct if d.name == "flashinfer-cubin"]  # type: ignore[attr-defined]
    said = ("flashinfer-python 0.6.5 refuses to import beside a flashinfer-cubin of another release (compat/"
            "packages.toml [[kernels-at-first-use]], from https://docs.flashinfer.ai/installation.html): "
            "flashinfer-cubin is locked at its release")
    assert (d.version, d.newest, d.held_by) == ("0.6.5", "0.6.6", said), d
    assert f"flashinfer-cubin 0.6.5 is locked, not its newest release 0.6.6: {said}" in sel.warnings  # type: ignore

    # on a V100 the GPU floor is the conflict, not the releases (no release of it runs there)
    root = _project(tmp_path / "v100", pypi, ["flashinfer-python", "flashinfer-cubin"], f"gpu|{R580_V100}",
                    torch="==2.10.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3 and "this target's GPU is 7.0 (sm_70): no release of it runs its kernels here" in out, out
    assert "refuses to import" not in out, out
    # a fix whose lock takes a named package down to a release that only stands in for it is no fix
    code, out, root = resolve("stand", ["standpkg", "flashinfer-cubin"])
    assert code == 3 and "flashinfer-cubin 0.6.6 cannot be locked beside flashinfer-python 0.6.7" in out, out
    assert "fix: leave flashinfer-cubin out of [environment].packages" in out and "checked" not in out, out

    code, out, root = resolve("cubin-dep", ["flashinfer-python", "cubinpin"])  # (a cubin not named: not left out)
    assert code == 3 and "flashinfer-cubin 0.6.6 cannot be locked beside flashinfer-python 0.6.7" in out, out
    assert ('fix: "flashinfer-python==0.6.6" in [environment].packages (checked: uv locks flashinfer-python 0.6.6 '
            "(from 0.6.7), cubinpin 1.0 with it, torch 2.10.0)\n") in out + "\n" and "leave" not in out, out

    code, out, root = resolve("dep", ["servepkg", "flashinfer-cubin"])
    assert code == 3, out
    assert "flashinfer-cubin 0.6.6 cannot be locked beside flashinfer-python 0.6.7" in out, out
    assert ('fix: "flashinfer-python==0.6.6" in [environment].packages (checked: uv locks servepkg 1.0, '
            "flashinfer-cubin 0.6.6 with it, torch 2.10.0); or leave flashinfer-cubin out") in out, out
