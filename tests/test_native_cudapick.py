"""A package that loads one of its per-CUDA libraries by name at run time, picked by torch's CUDA release
(bitsandbytes' libbitsandbytes_cuda124.so … _cuda132.so; compat/packages.toml [[cuda-build-pick]]): with no build for
the torch's CUDA by its rule — the exact release, or any of the major — the native-code rule says so (kind
"cuda-build"); builds named for a CUDA major only are taken for that major (inferred), builds named for a minor with no
row are not judged, and a library a module links is not one picked at run time. And a library of the package's own
wheel that it loads by name and cannot do without (compat/packages.toml [[dlopen-needed]]: onnxruntime-gpu's CUDA
provider) is judged on a CUDA torch as if its import loaded it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from nativebuild import stub_library
from pkgindex import build_wheel
from tritonlock.compat.pkgbuilds import cuda_build_picks
from tritonlock.models import NativeFacts, NativeMember
from tritonlock.native.read import read_file
from tritonlock.native.rule import Item, Setting, check, hopeless, with_reach
from tritonlock.native.variants import Pick, missing_runtime_build

CP = "cp311-cp311-manylinux_2_17_x86_64"
EXACT = Pick(name="pk", versions="<2.0", pick="exact", without="it loads its CPU library", source="https://x/a b")
MAJOR = Pick(name="pk", versions=">=2.0", pick="major", without="its calls fail", source="https://x/c")


def _facts(*paths: str, linked: tuple[str, ...] = (), ext: tuple[str, ...] = ()) -> NativeFacts:
    members = [NativeMember(path="pk/_C.so", extension=True, needed=linked)]
    members += [NativeMember(path=p, extension=p in ext) for p in paths]
    return NativeFacts(sha256="a" * 64, filename="pk-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", tops=("pk",),
                       members=tuple(members))


def _at(backend: str, picks: tuple[Pick, ...] = (EXACT, MAJOR), torch: str = "2.10.0") -> Setting:
    return Setting(torch=torch, backend=backend, driver="580.95.05", gpus=("9.0",), floors={}, cuda_picks=picks)


def _kinds(item: Item, at: Setting) -> list[str]:
    return [p.needs for p in check([item], set(), at) if p.kind == "cuda-build"]


BNB = ("pk/libpk_cpu.so", "pk/libpk_cuda124.so", "pk/libpk_cuda126.so", "pk/libpk_cuda124_nocublaslt.so",
       "pk/libpk_cuda126_nocublaslt.so")


@pytest.mark.parametrize("version, backend, missing", [
    ("1.0", "cu124", None), ("1.0", "cu126", None),  # exact: a build for each
    ("1.0", "cu128", "CUDA 12.8"), ("1.0", "cu121", "CUDA 12.1"),  # exact: none for 12.8 (above) nor 12.1 (below)
    ("1.0", "cu130", "CUDA 13.0"),
    ("2.0", "cu128", None), ("2.0", "cu121", None),  # major: 12.6 or 12.4 serves any CUDA 12
    ("2.0", "cu130", "CUDA 13.0"), ("2.0", "cu118", "CUDA 11.8"),  # no build of the major
    ("1.0", "cpu", None), ("1.0", "rocm7.2", None), ("1.0", "xpu", None),  # no CUDA to pick by
])
def test_a_build_picked_by_torchs_cuda_is_judged_by_the_packages_rule(version: str, backend: str,
                                                                      missing: str | None) -> None:
    item = Item(name="pk", version=version, facts=_facts(*BNB))
    assert _kinds(item, _at(backend)) == ([missing] if missing else [])


def test_the_problem_says_which_builds_there_are_the_torchs_cuda_and_what_the_package_does_then() -> None:
    item = Item(name="pk", version="1.0", facts=_facts(*BNB))
    (p,) = check([item], set(), _at("cu128"))
    assert (p.kind, p.needs, p.package, p.version) == ("cuda-build", "CUDA 12.8", "pk", "1.0")
    assert p.text == ("pk/libpk_*.so in pk-1.0-cp311-cp311-manylinux_2_17_x86_64.whl, one library per CUDA release, "
                      "is built for CUDA 12.4, 12.6, none for CUDA 12.8 (torch 2.10.0 (cu128)): pk loads the build "
                      "for torch's exact CUDA release at run time, else none: it loads its CPU library "
                      "(compat/packages.toml [[cuda-build-pick]], from https://x/a)"), p.text
    (q,) = check([Item(name="pk", version="2.0", facts=_facts(*BNB))], set(), _at("cu130"))
    assert "pk loads a build of torch's CUDA major at run time, else none: its calls fail" in q.text, q.text
    many = Item(name="pk", version="1.0", facts=_facts(*(f"pk/libpk_cuda{v}.so" for v in (117, 118, 120, 121, 125))))
    (r,) = check([many], set(), _at("cu128"))
    assert "is built for CUDA 11.7, 11.8, … 12.5, none for CUDA 12.8" in r.text, r.text
    # a per-CUDA library picked at run time is no fact of the wheel alone: never hopeless (another torch has one)
    assert hopeless(item, _at("cu128")) == []


def test_builds_named_for_a_cuda_major_are_taken_for_that_major_as_inferred_and_minors_without_a_row_are_not_judged(
        ) -> None:
    majors = Item(name="other", version="1.0", facts=_facts("pk/libhook_cu12.so", "pk/libhook_cu13.so"))
    assert _kinds(majors, _at("cu128", ())) == [] and _kinds(majors, _at("cu130", ())) == []
    (p,) = check([majors], set(), _at("cu118", ()))
    assert p.needs == "CUDA 11.8" and "(inferred: other picks it by torch's CUDA at run time)" in p.text, p.text
    folders = Item(name="other", version="1.0", facts=_facts("pk/cu12/libx.so", "pk/cu13/libx.so"))
    assert _kinds(folders, _at("cu118", ())) == ["CUDA 11.8"] and _kinds(folders, _at("cu130", ())) == []
    minors = Item(name="other", version="1.0", facts=_facts("pk/libpk_cuda124.so", "pk/libpk_cuda126.so"))
    assert _kinds(minors, _at("cu128", ())) == []  # (how it picks is unknown: no row)
    # a row for another package, or for other releases, is not this one's
    assert _kinds(minors, _at("cu128", (EXACT,))) == []
    assert _kinds(Item(name="pk", version="2.0", facts=minors.facts), _at("cu128", (EXACT,))) == []
    # one build alone is no set per CUDA release (nothing to pick from)
    one = Item(name="pk", version="1.0", facts=_facts("pk/libpk_cuda124.so", "pk/libpk_cpu.so"))
    assert _kinds(one, _at("cu128")) == []


def test_a_build_a_module_links_or_that_is_a_module_is_not_one_picked_at_run_time() -> None:
    linked = Item(name="pk", version="1.0", facts=_facts(*BNB[:3], linked=("libpk_cuda124.so",)))
    assert _kinds(linked, _at("cu128")) == []
    ext = Item(name="pk", version="1.0", facts=_facts(*BNB[:3], ext=("pk/libpk_cuda126.so",)))
    assert _kinds(ext, _at("cu128")) == []
    # each set on its own: the _nocublaslt builds beside linked plain ones are still picked at run time
    both = Item(name="pk", version="1.0", facts=_facts(*BNB, linked=("libpk_cuda124.so",)))
    assert _kinds(both, _at("cu128")) == ["CUDA 12.8"]
    assert missing_runtime_build(_facts(*BNB[:3]).members, {"pk/libpk_cuda124.so"}, "pk", "1.0", "cu128",
                                 (EXACT,)) is None
    assert missing_runtime_build(_facts(*BNB).members, set(), "pk", "1.0", "cu128", (EXACT,)) is not None


def test_a_build_under_an_import_name_nothing_imports_is_not_judged() -> None:
    facts = NativeFacts(sha256="b" * 64, filename="pk-1.0.whl", tops=("pk", "pk_extra"), members=(
        NativeMember(path="pk/_C.so", extension=True), NativeMember(path="pk_extra/_e.so", extension=True),
        NativeMember(path="pk_extra/libe_cuda124.so", extension=False),
        NativeMember(path="pk_extra/libe_cuda126.so", extension=False)))
    (alone,) = with_reach([Item(name="pk", version="1.0", facts=facts)], [])
    assert _kinds(alone, _at("cu128")) == []
    (named,) = with_reach([Item(name="pk", version="1.0", facts=facts)], ["pk_extra"])
    assert _kinds(named, _at("cu128")) == ["CUDA 12.8"]


@pytest.mark.parametrize("version, pick", [("0.43.3", "exact"), ("0.45.5", "exact"), ("0.46.0", "exact"),
                                           ("0.49.2", "exact"), ("0.50.0", "major"), ("0.50.2", "major"),
                                           ("0.51.0rc1", "major")])
def test_the_shipped_rows_pick_bitsandbytes_builds_as_its_releases_do(version: str, pick: str) -> None:
    rows = [p for p in cuda_build_picks() if p.holds("bitsandbytes", version)]
    assert [p.pick for p in rows] == [pick], version
    assert rows[0].source.startswith("https://github.com/bitsandbytes-foundation/bitsandbytes/blob/")
    assert all(p.without for p in cuda_build_picks())


def test_a_real_wheels_libraries_are_read_and_judged(tmp_path: Path) -> None:
    """bitsandbytes-like: a wheel whose per-CUDA libraries are real shared objects that no module links, read by
    the wheel reader: judged by the shipped row for bitsandbytes < 0.46 (the exact release)."""
    libs = {f"bitsandbytes/libbitsandbytes_{v}.so": stub_library(tmp_path / v, f"libbitsandbytes_{v}.so").read_bytes()
            for v in ("cpu", "cuda121", "cuda124")}
    whl = build_wheel(tmp_path / "w", "bitsandbytes", "0.43.3", tag=CP,
                      modules={"bitsandbytes/__init__.py": "", **libs})
    facts = read_file(whl, hashlib.sha256(whl.read_bytes()).hexdigest())
    item = Item(name="bitsandbytes", version="0.43.3", facts=facts)
    picks = cuda_build_picks()
    assert _kinds(item, _at("cu124", picks)) == []
    assert _kinds(item, _at("cu126", picks)) == ["CUDA 12.6"]
    (p,) = check([item], set(), _at("cu128", picks))
    assert "it loads its CPU library instead" in p.text and "bitsandbytes/libbitsandbytes_*.so" in p.text, p.text


def test_doctor_names_a_venvs_bitsandbytes_that_has_no_build_for_its_torchs_cuda(tmp_path: Path) -> None:
    """A venv made by hand: torch 2.11.0+cu130 (CUDA 13.0) and a bitsandbytes 0.43.3 whose libraries are for CUDA
    12.1 and 12.4: doctor reads the installed files and says it has no build for CUDA 13.0 (an error, with the fix);
    with a build for 13.0 beside them, nothing."""
    from test_doctor import H200_ARCHS, doctor, host, ids, make_venv, pkg, torch_files, triton_pkg

    def venv(root: Path, cudas: tuple[str, ...]) -> None:
        libs: dict[str, str | bytes] = {
            f"bitsandbytes/libbitsandbytes_{v}.so": stub_library(tmp_path / f"s{v}", f"libbitsandbytes_{v}.so")
            .read_bytes() for v in ("cpu", *cudas)}
        make_venv(root, triton_pkg("3.6.0"), pkg("torch", "2.11.0+cu130", torch_files(
            "2.11.0+cu130", "13.0", available=True, archs=H200_ARCHS, devices=(("NVIDIA H200", "9.0"),)),
            requires=("triton==3.6.0; platform_system == 'Linux'",)),
            pkg("bitsandbytes", "0.43.3", {"bitsandbytes/__init__.py": "", **libs}))  # type: ignore[dict-item]

    bad = tmp_path / "bad"
    venv(bad, ("cuda121", "cuda124"))
    r = doctor(bad, host())
    (f,) = [f for f in r.findings if f.id == "native-cuda-build"]
    assert f.severity == "error" and f.title == ("bitsandbytes 0.43.3 has no build for CUDA 13.0, this venv's torch's: "
                                                 "what it loads by torch's CUDA at run time is not there"), f.title
    assert "is built for CUDA 12.1, 12.4, none for CUDA 13.0" in f.evidence[0] and "CPU library" in f.evidence[0]
    assert f.fix.startswith("install a release of the package with a build for this torch's CUDA")
    good = tmp_path / "good"
    venv(good, ("cuda124", "cuda130"))
    assert ("native-cuda-build", "error") not in ids(doctor(good, host()))


# --- a library of its own wheel the package loads by name and cannot do without ---------------------------------------

def _ort(provider_needs: tuple[str, ...]) -> Item:
    facts = NativeFacts(sha256="c" * 64, filename="onnxruntime_gpu-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
                        tops=("onnxruntime",), members=(
                            NativeMember(path="onnxruntime/capi/_state.so", extension=True, needed=("libstdc++.so.6",)),
                            NativeMember(path="onnxruntime/capi/libonnxruntime_providers_cuda.so", extension=False,
                                         needed=provider_needs),
                            NativeMember(path="onnxruntime/capi/libonnxruntime_providers_tensorrt.so", extension=False,
                                         needed=("libnvinfer.so.10",))))
    return Item(name="onnxruntime-gpu", version="1.0", facts=facts)


ROW = frozenset({("onnxruntime-gpu", "libonnxruntime_providers_cuda.so")})


def _ort_at(backend: str, rows: frozenset[tuple[str, str]] = ROW, driver: str | None = "580.95.05") -> Setting:
    return Setting(torch="2.10.0", backend=backend, driver=driver, gpus=("8.9",), floors={13: "580.65.06"},
                   dlopen_needed=rows)


def test_a_library_its_row_names_is_judged_as_loaded_on_a_cuda_torch_and_said_as_inferred() -> None:
    ort = _ort(("libcublasLt.so.13", "libcudart.so.13"))
    (p, q) = check([ort], {"libcublasLt.so.12", "libcudart.so.12"}, _ort_at("cu128"))
    assert {p.kind, q.kind} == {"cuda-library"} and {p.needs, q.needs} == {"libcublasLt.so.13", "libcudart.so.13"}
    assert p.text.startswith("onnxruntime/capi/libonnxruntime_providers_cuda.so in onnxruntime_gpu-1.0-"), p.text
    assert p.text.endswith(" — onnxruntime-gpu loads libonnxruntime_providers_cuda.so by name at run time, and "
                           "without it is not what it is locked for (compat/packages.toml [[dlopen-needed]]; "
                           "inferred: the row says why)"), p.text
    assert not p.guarded
    # brought: nothing; a driver below CUDA 13's floor: the driver's problem too
    assert check([ort], {"libcublasLt.so.13", "libcudart.so.13"}, _ort_at("cu130")) == []
    old = {p.kind for p in check([ort], {"libcublasLt.so.13", "libcudart.so.13"},
                                 _ort_at("cu130", driver="550.54.15"))}
    assert "cuda-driver" in old, old
    # no row, or a torch with no CUDA (a CPU target: its import is all that is asked), or another package's row:
    # not judged (the TensorRT provider beside it never is)
    assert check([ort], set(), _ort_at("cu128", frozenset())) == []
    assert check([ort], set(), _ort_at("cpu")) == []
    assert check([ort], set(), _ort_at("cu128", frozenset({("other", "libonnxruntime_providers_cuda.so")}))) == []
    assert not any("libnvinfer" in p.needs for p in check([ort], set(), _ort_at("cu128")))
    # the row's library must be the wheel's own: a name it does not carry adds nothing
    bare = Item(name="onnxruntime-gpu", version="1.0", facts=NativeFacts(
        sha256="d" * 64, filename="x.whl", tops=("onnxruntime",), members=(
            NativeMember(path="onnxruntime/capi/_state.so", extension=True),)))
    assert check([bare], set(), _ort_at("cu128")) == []


def test_the_run_time_warning_is_not_said_of_a_library_judged_as_loaded() -> None:
    from tritonlock.native.notes import run_time_libraries

    ort = _ort(("libcublasLt.so.13", "libcudart.so.13"))
    provided = {"libcublasLt.so.12", "libcudart.so.12"}
    assert run_time_libraries([ort], provided, _ort_at("cu128")) == []
    (w,) = run_time_libraries([ort], provided, _ort_at("cu128", frozenset()))
    assert "loads onnxruntime/capi/libonnxruntime_providers_cuda.so itself at run time, by its own choice" in w, w


def test_the_shipped_row_names_onnxruntime_gpus_cuda_provider() -> None:
    from tritonlock.compat.pkgbuilds import dlopen_needed

    assert ("onnxruntime-gpu", "libonnxruntime_providers_cuda.so") in dlopen_needed()


def test_every_shipped_pick_row_is_read() -> None:
    """A row the loader would leave out (no name, a pick other than "exact" or "major", no source) is none."""
    import tomllib

    from tritonlock._data import compat_root

    root = compat_root()
    assert root is not None
    raw = tomllib.loads((root / "packages.toml").read_text(encoding="utf-8"))["cuda-build-pick"]
    assert len(raw) == len(cuda_build_picks()) >= 3
