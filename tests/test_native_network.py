"""The binary facts of real PyPI wheels, read by ranged reads (the wheels are not downloaded whole where the zip's
members are what is asked for): what each one's native code needs. Marked `network` (run with -m network): they
need your default index, and read a few hundred MB."""

from __future__ import annotations

import pytest

from tritonlock.native import read as native
from tritonlock.lock.index import default_index, project_files, session
from tritonlock.native.rule import loaded

pytestmark = pytest.mark.network


def _facts(name: str, version: str, like: str = "manylinux") -> native.NativeFacts:
    files = [f for f in project_files(default_index(), name) if f"-{version}-" in f.filename
             and f.filename.endswith(".whl") and "x86_64" in f.filename and like in f.filename]
    assert files, f"{name} {version} has no x86_64 wheel on {default_index()}"
    f = files[0]
    facts = native.read_remote(f.url, f.size, f.sha256 or "", f.filename, session=session(), gpu=True)
    assert facts.problem is None
    return facts


def test_vllm_0_33_is_a_cuda_13_build_on_the_stable_abi_for_torch_2_14() -> None:
    f = _facts("vllm", "0.33.0")
    assert f.built_for_torch == "2.14"  # its METADATA pins torch==2.14.0
    ext = [m for m in f.members if m.extension]
    assert len(ext) >= 10 and all(m.torch_abi == "stable" for m in ext)  # no c10::/at:: symbols
    needs = {n for m in ext for n in m.needed}
    assert {"libcudart.so.13", "libcuda.so.1", "libtorch_cuda.so"} <= needs
    sm = {a for m in ext for a in m.sm}
    assert {"sm_80", "sm_90", "sm_100"} <= sm and "sm_70" not in sm  # no V100 code


def test_xformers_op_library_is_loaded_by_torch_and_needs_cuda_12() -> None:
    f = _facts("xformers", "0.0.35")
    (c,) = [m for m in f.members if m.path == "xformers/_C.so"]
    assert c.torch_abi and c in loaded(f.members)  # it links torch: loaded at import (torch.ops.load_library)
    assert "libcudart.so.12" in c.needed and "libtorch_cuda.so" in c.needed


def test_sgl_kernel_links_torchs_cxx_api_and_names_no_torch() -> None:
    f = _facts("sgl-kernel", "0.3.21")
    assert f.built_for_torch is None
    assert any(m.torch_abi == "cxx" for m in loaded(f.members))


def test_bitsandbytes_per_cuda_libraries_are_loaded_by_its_own_choice() -> None:
    """Its libbitsandbytes_cudaNNN.so are ctypes-loaded by the runtime's CUDA: none is judged as always loaded."""
    f = _facts("bitsandbytes", "0.50.2")
    libs = {m.path.rsplit("/", 1)[-1]: m for m in f.members}
    assert "libcudart.so.13" in libs["libbitsandbytes_cuda130.so"].needed
    assert "libcudart.so.12" in libs["libbitsandbytes_cuda128.so"].needed
    assert loaded(f.members) == []


def test_torchao_kernels_are_cuda_13_builds() -> None:
    f = _facts("torchao", "0.18.0")
    assert all("libcudart.so.13" in m.needed for m in f.members if m.torch_abi)


def _resolve(tmp_path, packages: list[str], target: str):  # type: ignore[no-untyped-def]
    """`tritonlock resolve` of `packages` for one target against your default index (PyPI's torch builds)."""
    import json

    from click.testing import CliRunner

    from tritonlock.cli import main
    from tritonlock.lock.lockfile import read_lock

    (tmp_path / "triton-env.toml").write_text(
        f'[environment]\npython = "3.12"\npackages = {json.dumps(packages)}\n[indexes]\ntorch = "default"\n'
        f'\n[[targets]]\nname = "gpu"\nglibc = "2.35"\n{target}\n', encoding="utf-8")
    r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path)])
    assert r.exit_code == 0, r.output
    (t,) = read_lock(tmp_path / "triton-env.lock").targets
    return t, r.output


def test_sgl_kernel_gets_the_torch_whose_build_brings_the_cuda_its_wheel_needs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """sgl-kernel names no torch; its PyPI wheel is built for one CUDA major. The lock pairs it with a torch whose
    build brings that major (PyPI's newest torch may be another CUDA's build: then torch is held back, and said)."""
    t, out = _resolve(tmp_path, ["sgl-kernel"], 'driver = "580.95.05"\ngpus = ["9.0"]')
    sgl = next(p for p in t.packages if p.name == "sgl-kernel")
    assert any(r.startswith("packages at their newest release: ") and "sgl-kernel" in r for r in t.selection.reasons)
    f = _facts("sgl-kernel", sgl.version)
    majors = {lib.rsplit(".", 1)[-1] for m in loaded(f.members) for lib in m.needed if lib.startswith("libcudart.so.")}
    assert len(majors) == 1, majors
    backend = t.selection.backend or ""
    assert backend.startswith(f"cu{majors.pop()}"), (backend, out)


def test_torch_memory_saver_loads_its_hook_for_the_torchs_cuda_major() -> None:
    """torch-memory-saver 0.0.10 (sglang requires it) carries each hook once per CUDA major (_cu12, _cu13) and once
    unsuffixed (CUDA 12 here; its ROCm slot): on torch's CUDA 13 build only the _cu13 hooks are judged, so it locks
    beside sglang's CUDA 13 torch; on a CUDA 12.8 build only the _cu12 ones."""
    from tritonlock.native.rule import Item, Setting, check

    f = _facts("torch-memory-saver", "0.0.10")
    names = {m.path for m in f.members}
    assert {"torch_memory_saver_hook_mode_torch_cu12.abi3.so", "torch_memory_saver_hook_mode_torch_cu13.abi3.so",
            "torch_memory_saver_hook_mode_torch.abi3.so"} <= names
    assert {m.path for m in loaded(f.members, "2.14.1", "cu130")} == {
        n for n in names if "_cu13" in n}
    assert {m.path for m in loaded(f.members, "2.10.0", "cu128")} == {n for n in names if "_cu12" in n}
    item = Item(name="torch-memory-saver", version="0.0.10", facts=f)
    at = Setting(torch="2.14.1", backend="cu130", driver="580.95.05", gpus=("9.0",), floors={})
    assert check([item], {"libcudart.so.13"}, at) == []


def test_torchao_kernels_are_for_hopper_and_blackwell_and_an_a100_locks_it_with_a_warning() -> None:
    """torchao 0.16.0 ships _C_cutlass_90a (sm_90a alone) and _C_mxfp8 (sm_100, PTX compute_120): nothing for an A100,
    which runs its quantization through Triton. It is compat/packages.toml's [[optional-gpu-code]]: no problem on an
    A100, a warning that says so; on an H100 no warning (its sm_90a runs there)."""
    from tritonlock.compat.pkgbuilds import optional_gpu_code as rows
    from tritonlock.native.notes import optional_gpu_code
    from tritonlock.native.rule import Item, Setting, check

    f = _facts("torchao", "0.16.0")
    sm = {a for m in f.members for a in m.sm}
    assert sm == {"sm_90a", "sm_100"}, sm
    item = Item(name="torchao", version="0.16.0", facts=f)

    def at(cc: str) -> Setting:
        return Setting(torch="2.10.0", backend="cu128", driver="580.95.05", gpus=(cc,), floors={},
                       optional_gpu=frozenset(rows()))

    assert check([item], {"libcudart.so.12"}, at("8.0")) == []
    (w,) = optional_gpu_code([item], at("8.0"), rows())
    assert "none of it for this target's GPU (compute capability 8.0)" in w and "(inferred: " in w
    assert optional_gpu_code([item], at("9.0"), rows()) == []


def _torch_exports(version: str, tag: str = "cp312-cp312-manylinux_2_28_x86_64") -> object:
    from tritonlock.native import torchsyms

    (f,) = [f for f in project_files(default_index(), "torch") if f.filename == f"torch-{version}-{tag}.whl"]
    got = torchsyms.exports(f.url, f.size, f.sha256 or "", f.filename, session=session())
    assert not isinstance(got, str), got
    return got


def test_sgl_kernel_calls_torch_symbols_torch_2_13_does_not_export() -> None:
    """sgl-kernel 0.3.21 names no torch; its modules' c10::/at::/torch:: symbols against torch 2.13's exports (shipped
    in compat/ for PyPI's wheel, or read from it): some are missing — the import would fail — and the refusal names
    one, demangled."""
    from tritonlock.native.rule import Item, Setting, check, with_reach

    f = _facts("sgl-kernel", "0.3.21")
    ex = _torch_exports("2.13.0")
    (item,) = with_reach([Item(name="sgl-kernel", version="0.3.21", facts=f)], [])
    at = Setting(torch="2.13.0", backend="cu130", driver="580.95.05", gpus=("9.0",), floors={}, exports=ex)
    probs = [p for p in check([item], {"libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12", "libnvrtc.so.12"},
                              at) if p.kind == "torch-symbol"]
    assert probs and all(p.symbols for p in probs)
    assert any("::" in p.needs and "(" in p.needs for p in probs), [p.needs for p in probs]  # demangled


def test_nixl_cu12s_expert_parallel_package_is_an_optional_part_on_an_a100() -> None:
    """nixl-cu12 1.5.1: nixl_cu12 (its own) links no CUDA; nixl_ep_cu12, a second top-level package nothing imports
    unless named, is CUDA 12 for Hopper and newer. Beside torch 2.11 (CUDA 13) on an A100 its own import is judged
    and loads; the expert-parallel part is a warning — named, it is judged (and cannot load)."""
    from tritonlock.native.notes import optional_parts
    from tritonlock.native.rule import Item, Setting, check, with_reach

    f = _facts("nixl-cu12", "1.5.1", like="cp312")
    assert "nixl_cu12" in f.tops and "nixl_ep_cu12" in f.tops
    item = Item(name="nixl-cu12", version="1.5.1", facts=f)
    at = Setting(torch="2.11.0", backend="cu130", driver="580.95.05", gpus=("8.0",), floors={})
    provided = {"libcudart.so.13"}
    (alone,) = with_reach([item], [])
    assert "nixl_ep_cu12" not in (alone.reach or ())
    assert [p for p in check([alone], provided, at) if p.kind in ("gpu-code", "cuda-library")] == [], \
        check([alone], provided, at)
    assert any(w.startswith("nixl-cu12 1.5.1: `import nixl_ep_cu12` would need ") for w in
               optional_parts([alone], provided, at))
    (named,) = with_reach([item], ["nixl_ep_cu12"])
    assert check([named], provided, at)
