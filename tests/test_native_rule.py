"""tritonlock/native/rule.py and notes.py at their edges, on real shared objects built here (tests/nativebuild.py) and
read from real wheels (tritonlock.native.read.read_file): what is reached (the import names imported), a library a
module names in its strings (dlopen), torch symbols against a torch's exports, GPU code for each kind of target
(family "f" and arch-specific "a" cubins and PTX, every LLVM generic AMD target), a stable-ABI build on another
torch, op libraries and at::-only modules."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from nativebuild import extension, stub_library
from pkgindex import build_wheel
from tritonlock._archs import gpu_runs
from tritonlock.models import NativeFacts, NativeMember
from tritonlock.native.notes import dlopen_warnings, optional_parts, ptx_only, unknown_torch
from tritonlock.native.read import read_file
from tritonlock.native.rule import Item, Setting, check, generic_targets, gfx_runs, hopeless, own_names, with_reach

CP = "cp311-cp311-manylinux_2_17_x86_64"
C10_ANY = "_ZN3c1010TensorImpl7releaseEv"
C10_NEW = "_ZN3c1014only_in_2_13v1Ev"
AT_ONLY = "_ZNK2at6Tensor3dimEv"
A, F = 0x100000, 0x200000


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("rule-stubs")
    return {n: stub_library(d / n.split(".so")[0], n, syms) for n, syms in (
        ("libcudart.so.12", ("cudaRuntimeGetVersion",)), ("libcudart.so.13", ("cudaRuntimeGetVersion",)),
        ("libc10.so", ("c10_stub", C10_ANY, C10_NEW)), ("libtorch.so", ("torch_stub", AT_ONLY)),
        ("libtorch_cuda.so", ("torch_cuda_stub",)))}


def _item(tmp: Path, name: str, modules: dict[str, bytes | str], version: str = "1.0",
          requires: tuple[str, ...] = ()) -> Item:
    whl = build_wheel(tmp / f"{name}-{version}", name, version, tag=CP, modules=modules, requires=requires)
    facts = read_file(whl, hashlib.sha256(whl.read_bytes()).hexdigest())
    assert facts.problem is None, facts.problem
    return Item(name=name, version=version, facts=facts)


def _cuda(tmp: Path, libs: dict[str, Path], module: str, cudart: str = "libcudart.so.13",
          fatbin: tuple[tuple[int, ...], ...] = ((2, 80), (2, 90)), strings: tuple[str, ...] = ()) -> bytes:
    return extension(tmp / module.replace(".", "-"), module, links={libs[cudart]: ("cudaRuntimeGetVersion",)},
                     fatbin=fatbin, strings=strings)


def _at(cc: str = "8.0", backend: str = "cu130", **kw: object) -> Setting:
    return Setting(torch=kw.pop("torch", "2.11.0"), backend=backend, driver="580.95.05", gpus=(cc,), floors={},  # type: ignore[arg-type]
                   **kw)  # type: ignore[arg-type]


# --- what is reached ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dist, names", [
    ("nixl-cu12", {"nixl_cu12", "nixl"}), ("nixl_cu13", {"nixl_cu13", "nixl"}), ("cupy-cuda12x", {"cupy_cuda12x", "cupy"}),
    ("flashinfer-python", {"flashinfer_python", "flashinfer"}), ("sgl-kernel", {"sgl_kernel"}),
    ("Torch.Memory_Saver", {"torch_memory_saver"}), ("cu12", {"cu12"}), ("pkg-cu128", {"pkg_cu128", "pkg"}),
    ("foo-rocm6-2", {"foo_rocm6_2", "foo"}),
])
def test_the_import_names_a_distributions_own_name_stands_for(dist: str, names: set[str]) -> None:
    assert own_names(dist) == names


def test_a_second_top_level_package_is_judged_only_where_it_is_reached(tmp_path: Path, libs: dict[str, Path]) -> None:
    """main (no CUDA) and main_ep (CUDA 12, sm_90 only) in one wheel: beside a CUDA 13 torch on an A100, main alone is
    judged and main_ep is an optional part (a warning naming what `import main_ep` would need); reached — named by
    the user, imported by main's own Python, or a locked package's — it is judged and refused."""
    ep = _cuda(tmp_path, libs, "main_ep._ep", "libcudart.so.12", ((2, 90),))
    plain = extension(tmp_path / "main", "main._C", links={})
    modules: dict[str, bytes | str] = {"main/__init__.py": "from . import _C\n", "main/_C.so": plain,
                                       "main_ep/__init__.py": "from main_ep import _ep\n", "main_ep/_ep.so": ep}
    item = _item(tmp_path, "main", modules)
    assert item.facts.tops == ("main", "main_ep")
    provided = {"libcudart.so.13"}
    (alone,) = with_reach([item], [])
    assert alone.reach == frozenset({"main"})
    assert check([alone], provided, _at()) == []
    assert hopeless(alone, _at()) == []  # (older releases are not passed over for it either)
    (w,) = optional_parts([alone], provided, _at())
    assert w.startswith("main 1.0: `import main_ep` would need libcudart.so.12, sm_80: main_ep/_ep.so in main-1.0-"), w
    for named in (["main_ep"], ["Main-EP"], ["main_ep.sub"]):
        (it,) = with_reach([item], [n.split(".")[0] for n in named])
        assert {p.needs for p in check([it], provided, _at())} == {"libcudart.so.12", "sm_80"}, named
        assert optional_parts([it], provided, _at()) == []
    # imported by the package's own __init__ (or a module of its folder that __init__ imports)
    for init, extra in (("import main_ep\n", {}), ("from ._api import *\n", {"main/_api.py": "from main_ep import x\n"}),
                        ("import importlib\nimportlib.import_module('main_ep')\n", {})):
        imp = _item(tmp_path / f"imp{len(init)}", "main", {**modules, "main/__init__.py": init, **extra})
        (it,) = with_reach([imp], [])
        assert "main_ep" in (it.reach or ()), init
        assert check([it], provided, _at()) != []
    # imported in a function (when called, as cffi imports _cffi_backend): the package uses it, so it is reached;
    # a name in a string or a comment is no import
    lazy = _item(tmp_path / "lazy", "main", {**modules, "main/__init__.py": "def f():\n    import main_ep\n"})
    assert check(with_reach([lazy], []), provided, _at()) != []
    said = _item(tmp_path / "said", "main", {**modules, "main/__init__.py": "'import main_ep'  # import main_ep\n"})
    assert check(with_reach([said], []), provided, _at()) == []
    # another locked package's Python imports it
    user = Item(name="user", version="1.0", facts=NativeFacts(sha256="u" * 64, filename="user-1.0.whl", tops=("user",),
                                                            imports=(("user", "main_ep"),), members=(NativeMember(
                                                                path="user/_u.so", extension=True),)))
    both = with_reach([item, user], [])
    assert both[0].reach == frozenset({"main", "main_ep"})
    # a wheel none of whose import names is its own: every one is judged (None)
    (other,) = with_reach([dataclasses.replace(item, name="something-else")], [])
    assert other.reach is None and check([other], provided, _at()) != []
    # facts of an older reader (no import names): every member judged
    (old,) = with_reach([dataclasses.replace(item, facts=dataclasses.replace(item.facts, tops=()))], [])
    assert old.reach is None and check([old], provided, _at()) != []


def test_a_root_module_named_after_the_package_is_its_own_and_a_folder_of_libraries_is_judged(
        tmp_path: Path, libs: dict[str, Path]) -> None:
    """torch_memory_saver's hooks sit at the wheel's root beside its package (torch_memory_saver_hook_mode_*.so), as
    cffi's _cffi_backend beside cffi: the package loads them, so they are judged, whatever their name; a folder of
    plain libraries (sgl-kernel's lib/) is no import name: an extension-looking file there is judged as before; a
    second package (deep_gemm) nothing imports is optional."""
    hook = _cuda(tmp_path, libs, "tms_hook_mode", "libcudart.so.12", ((2, 80),))
    backend = _cuda(tmp_path, libs, "_backend", "libcudart.so.12", ((2, 80),))
    item = _item(tmp_path, "tms", {"tms/__init__.py": "", "tms_hook_mode.abi3.so": hook, "_backend.so": backend})
    (it,) = with_reach([item], [])
    assert it.reach == frozenset({"tms", "tms_hook_mode", "_backend"})
    assert [p.needs for p in check([it], {"libcudart.so.13"}, _at())] == ["libcudart.so.12"]
    assert {p.text.split(" ")[0] for p in check([it], {"libcudart.so.13"}, _at())} <= {"tms_hook_mode.abi3.so",
                                                                                      "_backend.so"}
    lib = _cuda(tmp_path, libs, "mscclpp", "libcudart.so.12", ((2, 80),))
    other = _item(tmp_path, "skern", {"skern/__init__.py": "", "lib/mscclpp.so": lib, "deep_gemm/__init__.py": "",
                                      "deep_gemm/dg.abi3.so": _cuda(tmp_path, libs, "deep_gemm.dg", "libcudart.so.12")})
    assert other.facts.tops == ("deep_gemm", "skern")
    (it,) = with_reach([other], [])
    probs = check([it], {"libcudart.so.13"}, _at())
    assert [(p.needs, p.text.split(" ")[0]) for p in probs] == [("libcudart.so.12", "lib/mscclpp.so")], probs
    (w,) = optional_parts([it], {"libcudart.so.13"}, _at())
    assert w.startswith("skern 1.0: `import deep_gemm` would need libcudart.so.12"), w


# --- dlopen ---------------------------------------------------------------------------------------------------------

def test_a_library_a_module_names_in_its_strings_is_a_warning_unless_brought_or_the_drivers(
        tmp_path: Path, libs: dict[str, Path]) -> None:
    mod = _cuda(tmp_path, libs, "dl._C", strings=("libcublas.so.12", "libcuda.so.1", "libnvidia-ml.so.1",
                                                   "/usr/local/cuda/lib64/libcufft.so.11", "libfoo.so.3",
                                                   "could not load libcurand.so.10 here", "libnvrtc.so"))
    item = _item(tmp_path, "dl", {"dl/__init__.py": "", "dl/_C.so": mod})
    (m,) = item.facts.members
    assert m.dlopen == ("libcublas.so.12", "libcuda.so.1", "libcufft.so.11", "libfoo.so.3", "libnvidia-ml.so.1")
    items = with_reach([item], [])
    provided = {"libcudart.so.13", "libcublas.so.13", "libcublas.so.11", "libcublasLt.so.13"}
    got = dlopen_warnings(items, provided, _at())
    assert [w.split(" names ")[1].split(" ")[0] for w in got] == ["libcublas.so.12", "libcufft.so.11"], got
    assert "the lock's nearest is libcublas.so.13 (cuBLAS 13)" in got[0]  # (13 and 11 are as near: the newer)
    assert "nearest" not in got[1]
    assert check(items, provided, _at()) == []  # a warning, not a refusal
    assert dlopen_warnings(items, provided | {"libcublas.so.12", "libcufft.so.11"}, _at()) == []
    assert dlopen_warnings(items, provided, _at(backend="cpu")) == []  # (no CUDA to load it into)
    # mandatory where its documentation says so (compat/packages.toml [[dlopen-needed]]): a refusal, no warning
    strict = _at(dlopen_needed=frozenset({("dl", "libcublas.so.12")}))
    (p,) = check(items, provided, strict)
    assert (p.kind, p.needs) == ("cuda-library", "libcublas.so.12") and "[[dlopen-needed]]" in p.text
    assert [w.split(" names ")[1].split(" ")[0] for w in dlopen_warnings(items, provided, strict)] == ["libcufft.so.11"]
    # a ROCm library on a ROCm torch
    rocm = dataclasses.replace(item, facts=dataclasses.replace(item.facts, members=(dataclasses.replace(
        m, dlopen=("libamdhip64.so.7", "libcublas.so.12")),)))
    got = dlopen_warnings([rocm], {"libamdhip64.so.6"}, _at(cc="gfx942", backend="rocm6.4"))
    assert len(got) == 1 and "libamdhip64.so.7" in got[0] and "libamdhip64.so.6 (HIP 6)" in got[0], got


def test_a_module_nothing_loads_is_not_asked_what_it_dlopens(tmp_path: Path, libs: dict[str, Path]) -> None:
    """A bundled library nothing links (one of several per-CUDA builds the package picks itself) is not loaded: its
    strings say nothing; one an extension links is loaded, and its strings count."""
    quiet = stub_library(tmp_path / "q", "libquiet.so.1")
    data = quiet.read_bytes()
    named = extension(tmp_path / "n", "libnamed", links={}, strings=("libcublas.so.12",))
    item = _item(tmp_path, "bund", {"bund/__init__.py": "", "bund/.libs/libquiet.so.1": data,
                                    "bund/libnamed.so": named})
    assert dlopen_warnings(with_reach([item], []), set(), _at()) == []


# --- torch symbols --------------------------------------------------------------------------------------------------

class _Exports:
    """What a torch build exports (the symbols given), as tritonlock.native.torchsyms.Exports answers."""

    def __init__(self, names: set[str], what: str = "torch 2.11.0 (torch-2.11.0.whl)") -> None:
        self.names, self.what, self.rate = names, what, ""

    def has(self, n: str) -> bool:
        return n in self.names

    def missing(self, names: tuple[str, ...]) -> list[str]:
        return [n for n in names if n not in self.names]


def test_torch_symbols_decide_a_cxx_build_and_weak_references_stable_abi_and_at_only_modules(
        tmp_path: Path, libs: dict[str, Path]) -> None:
    weak = extension(tmp_path / "w", "cxx._C", links={libs["libc10.so"]: (C10_ANY, C10_NEW)}, weak=("_ZN3c104weakEv",))
    item = _item(tmp_path, "cxx", {"cxx/__init__.py": "", "cxx/_C.so": weak})
    (m,) = item.facts.members
    assert (m.torch_abi, m.torch_symbols) == ("cxx", tuple(sorted((C10_ANY, C10_NEW))))  # (the weak one is not needed)
    items = with_reach([item], [])
    old = _Exports({C10_ANY})
    (p,) = check(items, set(), _at(exports=old))
    assert (p.kind, p.needs, p.symbols) == ("torch-symbol", "c10::only_in_2_13v1()", (C10_NEW,))
    assert p.text.startswith("cxx/_C.so in cxx-1.0-cp311-cp311-manylinux_2_17_x86_64.whl calls c10::only_in_2_13v1() "
                             f"({C10_NEW}) of torch's C++ API, which torch 2.11.0 (torch-2.11.0.whl) does not export "
                             "(1 of the 2 torch symbols it needs)"), p.text
    assert p.text.endswith(f"(its wheel names none): the import would fail ('undefined symbol: {C10_NEW}')")
    assert check(items, set(), _at(exports=_Exports({C10_ANY, C10_NEW}))) == []
    assert unknown_torch(items, "2.11.0", "cu130", exports=_Exports({C10_ANY, C10_NEW})) == []
    (u,) = unknown_torch(items, "2.11.0", "cu130", exports=None)
    assert "names no torch release they were built for" in u
    assert check(items, set(), _at()) == []  # (exports not known: no symbol problem, the warning above instead)
    # at:: alone is torch's C++ API too; a module of the stable C ABI (no C++ symbol) is no torch-release problem
    at_only = _item(tmp_path / "at", "atonly", {"atonly/_C.so": extension(
        tmp_path / "ato", "atonly._C", links={libs["libtorch.so"]: (AT_ONLY,)})}, requires=("torch==2.9.0",))
    (am,) = at_only.facts.members
    assert (am.torch_abi, am.torch_symbols, at_only.facts.built_for_torch) == ("cxx", (AT_ONLY,), "2.9")
    assert [p.kind for p in check([at_only], set(), _at())] == ["torch-release"]
    stable = _item(tmp_path / "st", "stablepkg", {"stablepkg/_C.so": extension(
        tmp_path / "sto", "stablepkg._C", links={libs["libtorch.so"]: ("torch_stub",)})}, requires=("torch==2.9.0",))
    assert stable.facts.members[0].torch_abi == "stable"
    assert check([stable], set(), _at(exports=old)) == []
    # a torch op library (lib*.so, no PyInit: torch.ops.load_library loads it) is judged like an extension
    oplib = extension(tmp_path / "op", "libops", links={libs["libc10.so"]: (C10_NEW,)})
    ops = _item(tmp_path / "ops", "opspkg", {"opspkg/__init__.py": "", "opspkg/libops.so": oplib})
    assert ops.facts.members[0].extension is False
    assert [p.kind for p in check(with_reach([ops], []), set(), _at(exports=old))] == ["torch-symbol"]
    # a wheel's only per-torch build (its name says torch 2.9) is the one loaded, and judged
    only = _item(tmp_path / "only", "onlyb", {"onlyb/__init__.py": "", "onlyb/_C_torch29.so": extension(
        tmp_path / "o29", "onlyb._C_torch29", links={libs["libc10.so"]: (C10_NEW,)})})
    (p,) = check(with_reach([only], []), set(), _at(exports=old))
    assert p.kind == "torch-symbol" and p.built_for == "2.9" and "(its file name says torch 2.9)" in p.text


# --- GPU code: families and arch-specific code, generic AMD targets -------------------------------------------------

@pytest.mark.parametrize("cc, sm, ptx, runs", [
    ("10.0", ("sm_100f",), (), "sass"), ("10.3", ("sm_100f",), (), "sass"), ("10.3", ("sm_103f",), (), "sass"),
    ("10.0", ("sm_103f",), (), None), ("12.0", ("sm_100f",), (), None), ("11.0", ("sm_100f",), (), None),
    ("10.0", ("sm_100a",), (), "sass"), ("10.3", ("sm_100a",), (), None), ("9.0", ("sm_90a",), (), "sass"),
    ("10.0", ("sm_90a",), (), None), ("9.0", ("sm_90",), (), "sass"), ("10.0", ("sm_90",), (), None),
    ("8.6", ("sm_80",), (), "sass"), ("8.0", ("sm_86",), (), None),
    ("12.0", (), ("compute_100f",), None), ("10.3", (), ("compute_100f",), "ptx"), ("10.0", (), ("compute_100f",), "ptx"),
    ("10.0", (), ("compute_90a",), None), ("9.0", (), ("compute_90a",), "ptx"), ("10.0", (), ("compute_90",), "ptx"),
    ("8.9", (), ("compute_90",), None), ("12.1", (), ("compute_120f",), "ptx"), ("12.0", (), ("compute_120a",), "ptx"),
    # plain PTX at its own arch exactly, and a newer major (the driver JITs it up); family PTX not across majors
    ("9.0", (), ("compute_90",), "ptx"), ("12.0", (), ("compute_80",), "ptx"), ("11.0", (), ("compute_100f",), None),
    ("12.1", (), ("compute_120a",), None), ("10.3", ("sm_100",), (), "sass"), ("10.0", ("sm_100a", "sm_90"), (), "sass"),
])
def test_family_and_arch_specific_code_runs_where_cuda_says(cc: str, sm: tuple[str, ...], ptx: tuple[str, ...],
                                                           runs: str | None) -> None:
    """sm_100f: the family (10.0 and 10.3), as sm_100 itself; sm_100a: 10.0 alone; PTX: compute_90a for 9.0 alone,
    compute_100f within family 10, plain PTX for every GPU at or above it."""
    assert gpu_runs(cc, sm, ptx) == runs


def test_a_package_of_family_code_counts_it_and_one_of_arch_specific_code_alone_is_left_out(
        tmp_path: Path, libs: dict[str, Path]) -> None:
    """A module of sm_100f code is general code for family 10: on a B300 (10.3) it runs, on an H100 it is a
    problem; a module of sm_100a code alone does not count against any GPU (it runs on one, by construction)."""
    fam = _item(tmp_path / "f", "fampkg", {"fampkg/_C.so": _cuda(tmp_path / "f", libs, "fampkg._C", fatbin=((2, 100, F),))})
    assert fam.facts.members[0].sm == ("sm_100f",)
    assert check([fam], {"libcudart.so.13"}, _at("10.3")) == []
    assert [p.needs for p in check([fam], {"libcudart.so.13"}, _at("9.0"))] == ["sm_90"]
    spec = _item(tmp_path / "a", "apkg", {"apkg/_C.so": _cuda(tmp_path / "a", libs, "apkg._C", fatbin=((2, 100, A),))})
    assert spec.facts.members[0].sm == ("sm_100a",)
    assert check([spec], {"libcudart.so.13"}, _at("9.0")) == []
    (w,) = ptx_only([_item(tmp_path / "p", "ppkg", {"ppkg/_C.so": _cuda(tmp_path / "p", libs, "ppkg._C",
                                                                          fatbin=((1, 100, F), (2, 80)))})],
                    _at("10.3"))
    assert "compute capability 10.3" in w and "only PTX" in w


def test_every_generic_amd_target_runs_on_each_processor_its_family_lists_and_no_other() -> None:
    families = generic_targets()
    assert set(families) == {"gfx9-generic", "gfx9-4-generic", "gfx10-1-generic", "gfx10-3-generic", "gfx11-generic",
                             "gfx12-generic"}
    every = sorted(set().union(*families.values()) | {"gfx908", "gfx90a", "gfx1250"})
    for name, members in families.items():
        for gfx in every:
            assert gfx_runs(gfx, (name,)) == (gfx in members), (name, gfx)
            assert gfx_runs(f"{gfx}:sramecc+:xnack-", (f"{name}:xnack-",)) == (gfx in members), (name, gfx)
    assert gfx_runs("gfx942", ("gfx9-4-generic",)) and gfx_runs("gfx950", ("gfx9-4-generic",))
    assert not gfx_runs("gfx90a", ("gfx9-4-generic",)) and not gfx_runs("gfx942", ("gfx9-generic",))
    assert not gfx_runs("gfx1201", ("gfx11-generic",)) and gfx_runs("gfx1153", ("gfx11-generic",))
    assert not gfx_runs("gfx1100", ("gfx11-7-generic",))  # (a generic target the table does not know: nothing)
    assert gfx_runs("gfx90a", ("gfx90a:xnack-",)) and not gfx_runs("gfx90a", ("gfx908",))


def test_generic_code_on_a_rocm_torch_is_judged_by_its_family(tmp_path: Path) -> None:
    """The rule on an MI300X (gfx942) and an MI250 (gfx90a): gfx9-4-generic code runs on the first, not the
    second."""
    item = Item(name="amdpkg", version="1.0", facts=NativeFacts(sha256="a" * 64, filename="amdpkg-1.0.whl", members=(
        NativeMember(path="amdpkg/_C.so", extension=True, needed=("libamdhip64.so.7",), gfx=("gfx9-4-generic",),
                     gpu="read"),)))
    assert check([item], {"libamdhip64.so.7"}, _at("gfx942", "rocm7.0")) == []
    (p,) = check([item], {"libamdhip64.so.7"}, _at("gfx90a", "rocm7.0"))
    assert (p.kind, p.needs) == ("gpu-code", "gfx90a")


# --- the rule's edges on facts as a reader or a cache gives them ----------------------------------------------------

def _hand(name: str, *members: NativeMember, built: str | None = None) -> Item:
    return Item(name=name, version="1.0", facts=NativeFacts(sha256="0" * 64, filename=f"{name}-1.0-{CP}.whl",
                                                            members=members, built_for_torch=built))


@pytest.mark.parametrize("driver, refused", [("580.65.06", False), ("580.65.05", True), ("580.65.07", False),
                                             ("575.99.99", True), ("590.0", False)])
def test_a_cuda_13_build_meets_its_driver_floor_exactly(driver: str, refused: bool) -> None:
    """The driver at the floor CUDA 13 needs runs it; one patch below does not. Only CUDA 13's floor is asked (CUDA
    12's, set high here, is another major's)."""
    item = _hand("c13", NativeMember(path="c13/_C.so", extension=True, needed=("libcudart.so.13",)))
    at = dataclasses.replace(_at(), driver=driver, floors={12: "999.0", 13: "580.65.06", 14: "999.0"})
    found = [p for p in check([item], {"libcudart.so.13"}, at) if p.kind == "cuda-driver"]
    assert bool(found) == refused, found
    if refused:
        assert found[0].needs == "CUDA 13" and f"needs driver >= 580.65.06; this driver is {driver}" in found[0].text
    # no floor known for the major: nothing said of the driver; no driver (a driverless target): its own problem
    assert not [p for p in check([item], {"libcudart.so.13"}, dataclasses.replace(at, floors={12: "999.0"}))
                if p.kind == "cuda-driver"]


def test_a_stable_abi_module_is_never_symbol_checked_and_a_torch_build_problem_hides_the_symbols() -> None:
    """An extension of torch's stable C ABI is not checked against torch's C++ exports (even where facts of a cache
    list symbols); a module that needs torch's CUDA libraries on a CPU torch is that problem, not a missing symbol."""
    none = _Exports(set())
    stable = _hand("st", NativeMember(path="st/_C.so", extension=True, needed=("libtorch.so",), torch_abi="stable",
                                      torch_symbols=(C10_NEW,)))
    assert check([stable], set(), _at(exports=none)) == []
    cxx = _hand("cx", NativeMember(path="cx/_C.so", extension=True, needed=("libc10.so",), torch_abi="cxx",
                                   torch_symbols=(C10_NEW,)))
    assert [p.kind for p in check([cxx], set(), _at(exports=none))] == ["torch-symbol"]
    on_cpu = _hand("cc", NativeMember(path="cc/_C.so", extension=True, needed=("libc10_cuda.so",), torch_abi="cxx",
                                      torch_symbols=(C10_NEW,)))
    assert [p.kind for p in check([on_cpu], set(), _at(backend="cpu", exports=none))] == ["torch-build"]
    assert [p.kind for p in check([on_cpu], set(), _at(exports=none))] == ["torch-symbol"]


def test_gpu_code_is_judged_on_its_own_vendors_torch_only() -> None:
    """CUDA code on a ROCm or CPU torch, AMD code on a CUDA torch: not this GPU's code to judge (the torch build's
    problem is said elsewhere); on its own vendor's torch the same code is refused for the GPU it lacks."""
    nv = _hand("nv", NativeMember(path="nv/_C.so", extension=True, sm=("sm_90",), gpu="read"))
    assert [p.needs for p in check([nv], set(), _at("8.0"))] == ["sm_80"]
    assert check([nv], set(), _at("8.0", backend="rocm7.0")) == []
    assert check([nv], set(), _at("8.0", backend="cpu")) == []
    amd = _hand("amd", NativeMember(path="amd/_C.so", extension=True, gfx=("gfx942",), gpu="read"))
    assert [p.needs for p in check([amd], set(), _at("gfx90a", backend="rocm7.0"))] == ["gfx90a"]
    assert check([amd], set(), _at("gfx90a")) == []
    assert check([amd], set(), _at("gfx942", backend="rocm7.0")) == []


def test_a_module_of_arch_specific_and_general_code_counts_and_one_of_arch_specific_code_alone_does_not() -> None:
    from tritonlock.native.rule import gpu_code_modules

    mixed = NativeMember(path="m/_C.so", extension=True, sm=("sm_80", "sm_90a"), gpu="read")
    only = NativeMember(path="m/_C_90a.so", extension=True, sm=("sm_90a",), ptx=("compute_90a",), gpu="read")
    family = NativeMember(path="m/_C_100f.so", extension=True, sm=("sm_100f",), gpu="read")
    assert gpu_code_modules([mixed, only, family]) == [mixed, family]
    # (an A100 runs the mixed module's sm_80: no problem; with the 90a-only module alone, nothing is judged)
    assert check([_hand("m", mixed, only)], set(), _at("8.0")) == []
    assert check([_hand("o", only)], set(), _at("8.0")) == []


@pytest.mark.parametrize("torch_lib", ["libtorch_cuda.so", "libc10_cuda.so"])
def test_either_cuda_library_of_torch_needs_torchs_cuda_build(torch_lib: str) -> None:
    item = _hand("tc", NativeMember(path="tc/_C.so", extension=True, needed=(torch_lib,)))
    (p,) = check([item], set(), _at(backend="cpu"))
    assert (p.kind, p.needs) == ("torch-build", "torch's CUDA build") and torch_lib in p.text
    assert check([item], set(), _at()) == []


def test_a_library_a_module_links_is_no_dlopen_name_and_the_driver_is_never_one() -> None:
    """A library both in DT_NEEDED and among the strings is judged as needed (a cuda-library problem), not again as
    a name it may load; libcuda.so.1 among the strings is the driver's, never a warning."""
    from tritonlock.native.rule import dlopen_found

    m = NativeMember(path="d/_C.so", extension=True, needed=("libcublas.so.13",),
                     dlopen=("libcublas.so.13", "libcuda.so.1", "libcufft.so.12"))
    item = _hand("d", m)
    assert [lib for _, lib, _ in dlopen_found(item, [m], set(), _at())] == ["libcufft.so.12"]
    assert [lib for _, lib, _ in dlopen_found(item, [m], {"libcufft.so.12"}, _at())] == []
