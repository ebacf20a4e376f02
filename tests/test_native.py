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

from nativebuild import extension, stub_library
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.decide.matrix import load_matrix
from tritonlock.lock.lockfile import read_lock

CP = "cp311-cp311-manylinux_2_17_x86_64"
LINUX = "py3-none-manylinux_2_17_x86_64"
R580_H100 = 'driver = "580.95.05"\ngpus = ["9.0"]'
R580_V100 = 'driver = "580.95.05"\ngpus = ["7.0"]'
C10_CXX = "_ZN3c106detail14torchCheckFailEPKcS2_jS2_"  # c10::detail::torchCheckFail — torch's C++ API


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("stubs")
    out = {name: stub_library(d / name.split(".so")[0], name, syms) for name, syms in (
        ("libcudart.so.12", ("cudaRuntimeGetVersion",)), ("libcudart.so.13", ("cudaRuntimeGetVersion",)),
        ("libcuda.so.1", ("cuInit",)), ("libtorch.so", ("torch_stub",)), ("libtorch_cuda.so", ("torch_cuda_stub",)),
        ("libc10.so", ("c10_stub",)), ("libc10_cuda.so", ("c10_cuda_stub",)))}
    # torch 2.9's libc10 has the C++ symbol a 2.9-built extension calls; the 2.10 stub above does not
    out["libc10.so@2.9"] = stub_library(d / "c10-29", "libc10.so", ("c10_stub", C10_CXX))
    return out


def _kernel(tmp: Path, stubs: dict[str, Path], cudart: str, fatbin: tuple[tuple[int, int], ...],
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
    from tritonlock.lock import native
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


def test_gpu_code_without_the_targets_gpu_takes_a_release_that_has_it(tmp_path: Path, pypi: LocalIndex) -> None:
    """A V100 (7.0): kernelpkg 2.0 carries sm_80/sm_90 and PTX 9.0 only — its first launch would fail there."""
    root = _project(tmp_path, pypi, ["kernelpkg"], f"gpu|{R580_V100}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _target(root)
    assert versions["kernelpkg"] == "1.0"
    assert any("its GPU code is built for sm_80, sm_90 and PTX compute_90, which has no code for this target's GPU "
               "(compute capability 7.0)" in r for r in sel.reasons)


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
