"""Packages that build their CUDA kernels when first called (compat/packages.toml [[kernels-at-first-use]]): the
shipped row, which locked files count, the GPU floor at its edge, the prebuilt packages a lock lacks, and what sync
says on a machine without nvcc (end to end, with real uv and a venv, in tests/test_cli_sync.py)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from tritonlock.compat import firstuse, pkgbuilds
from tritonlock.models import LockedPackage, Wheel

ANY = "flashinfer_python-0.6.6-py3-none-any.whl"


def _pkg(name: str, files: tuple[str, ...] = (ANY,), sdist: bool = False,
         dependencies: tuple[str, ...] | None = None) -> LockedPackage:
    return LockedPackage(name=name, version="0.6.6", index="https://example.invalid/simple",
                         wheels=tuple(Wheel(name=f, url=f"https://example.invalid/{f}", sha256="0" * 64)
                                      for f in files),
                         sdist=Wheel(name=f"{name}-0.6.6.tar.gz", url="https://example.invalid/s.tar.gz",
                                     sha256="1" * 64) if sdist else None, dependencies=dependencies)


def test_the_shipped_row_reads_with_its_floor_prebuilt_packages_and_an_openable_source() -> None:
    (row,) = pkgbuilds.kernels_at_first_use().values()
    assert (row.name, row.min_gpu, row.prebuilt) == ("flashinfer-python", (7, 5),
                                                     ("flashinfer-cubin", "flashinfer-jit-cache"))
    assert row.source.startswith("https://") and "sm75" in row.source and row.same_release
    assert "does not match flashinfer version" in row.source  # (what same-release rests on)


@pytest.mark.parametrize("row", [
    {"name": "p", "min-gpu": "sm75", "source": "https://x"},  # (not "7.5")
    {"name": "p", "min-gpu": "7", "source": "https://x"},
    {"name": "p", "min-gpu": "7.5"},  # (no source)
    {"min-gpu": "7.5", "source": "https://x"},
    "p",
])
def test_a_row_without_a_name_a_floor_like_7_5_or_a_source_is_left_out(monkeypatch: pytest.MonkeyPatch,
                                                                       row: object) -> None:
    good = {"name": "Good_Pkg", "min-gpu": "8.0", "source": "https://x", "prebuilt": ["Pre_Built", 3]}
    monkeypatch.setattr(pkgbuilds, "_table", lambda: ("packages.toml", {"kernels-at-first-use": [row, good]}))
    got = pkgbuilds.kernels_at_first_use.__wrapped__()
    assert list(got) == ["good-pkg"]
    assert got["good-pkg"].min_gpu == (8, 0) and got["good-pkg"].prebuilt == ("pre-built",)


@pytest.mark.parametrize(("files", "sdist", "counts"), [
    ((ANY,), False, True),
    ((ANY, "flashinfer_python-0.6.6-py3-none-any.whl"), True, True),
    ((), True, True),  # (an sdist alone: built as published, no GPU code of its own)
    ((), False, False),
    (("flashinfer_python-0.2.5+cu124torch2.4-cp38-abi3-linux_x86_64.whl",), False, False),  # (its kernels compiled)
    ((ANY, "flashinfer_python-0.2.5-cp38-abi3-linux_x86_64.whl"), False, False),
])
def test_only_files_with_no_gpu_code_of_their_own_build_their_kernels_at_first_use(
        files: tuple[str, ...], sdist: bool, counts: bool) -> None:
    assert firstuse.builds_kernels_itself(_pkg("flashinfer-python", files, sdist)) is counts
    assert bool(firstuse.found([_pkg("flashinfer-python", files, sdist)], ("9.0",), "cu128")) is counts


@pytest.mark.parametrize("backend", [None, "", "cpu", "rocm6.4", "xpu"])
def test_no_cuda_torch_no_finding(backend: str | None) -> None:
    assert firstuse.found([_pkg("flashinfer-python")], ("7.0",), backend) == []


@pytest.mark.parametrize(("gpus", "below", "every"), [
    (("7.0",), ("7.0",), True),
    (("7.4",), ("7.4",), True),
    (("7.5",), (), False),  # (the floor itself)
    (("7.6",), (), False),
    (("8.0",), (), False),
    (("10.0",), (), False),  # (not compared as text: "10.0" < "7.5" as strings)
    (("7.0", "9.0"), ("7.0",), False),
    (("6.1", "7.0"), ("6.1", "7.0"), True),
    (("7",), ("7",), True),  # (a major alone: 7.0)
    (("gfx942",), (), False),  # (not a compute capability: never below, and not every GPU below)
    (("gfx942", "7.0"), ("7.0",), False),
    ((), (), False),
    (("", "7.", ".5", "7.5.1", "sm_70", "７.0"), (), False),  # (what is no compute capability is never below)
])
def test_the_gpu_floor_at_its_edge(gpus: tuple[str, ...], below: tuple[str, ...], every: bool) -> None:
    (f,) = firstuse.found([_pkg("flashinfer-python")], gpus, "cu128")
    assert (f.below, f.every_gpu_below, f.min_gpu) == (below, every, "7.5")


def test_the_prebuilt_packages_the_lock_lacks_and_who_requires_it() -> None:
    lock = [_pkg("flashinfer-python"), _pkg("vllm", ("vllm-1-cp38-abi3-manylinux_2_31_x86_64.whl",),
                                            dependencies=("flashinfer-python", "torch")),
            _pkg("sglang", dependencies=("flashinfer-python",)), _pkg("torch", dependencies=())]
    (f,) = firstuse.found(lock, ("9.0",), "cu130")
    assert f.missing == ("flashinfer-cubin", "flashinfer-jit-cache") and f.brought_by == ("sglang", "vllm")
    (f,) = firstuse.found([*lock, _pkg("flashinfer-jit-cache", ("x-cp39-abi3-manylinux_2_28_x86_64.whl",))],
                          ("9.0",), "cu130")
    assert f.missing == ("flashinfer-cubin",)
    (f,) = firstuse.found([*lock, _pkg("flashinfer-jit-cache"), _pkg("flashinfer-cubin")], ("9.0",), "cu130")
    assert f.missing == ()
    assert firstuse.found([_pkg("flashinfer-cubin"), _pkg("vllm")], ("9.0",), "cu130") == []


def _sel(gpus: tuple[str, ...], named: tuple[str, ...]) -> object:
    from tritonlock.models import DirectPackage, Selection, TargetSpec

    target = TargetSpec(name="gpu", os="linux", arch="x86_64", gpus=gpus, driver="580.95.05")
    return Selection(target=target, ok=True, torch="2.10.0",
                     backend="cu128", direct=tuple(DirectPackage(name=n, requirement=n, version="1") for n in named))


def test_the_decisions_words_conflict_only_where_named_and_every_gpu_below() -> None:
    from tritonlock.decide import firstuse as words

    lock = (_pkg("flashinfer-python"), _pkg("torch"))
    sel, pkgs = words.judged(_sel(("7.0", "6.1"), ("flashinfer-python",)), lock)  # type: ignore[arg-type]
    assert not sel.ok and pkgs == () and sel.conflict is not None
    assert ("this target's GPUs are 7.0 (sm_70), 6.1 (sm_61): no release of it runs its kernels here"
            in sel.conflict.message), sel.conflict.message
    assert sel.conflict.message.startswith("target 'gpu': flashinfer-python 0.6.6 builds its CUDA kernels")
    for gpus, named in ((("7.0",), ("servepkg",)), (("7.0", "8.0"), ("flashinfer-python",))):
        sel, pkgs = words.judged(_sel(gpus, named), lock)  # type: ignore[arg-type]
        assert sel.ok and pkgs == lock
        (w, *rest) = [w for w in sel.warnings if "flashinfer" in w]
        assert "its kernels cannot run" in w and "7.0 (sm_70)" in w and "8.0" not in w, w
        assert [("nvcc" in r) for r in rest] == ([] if len(gpus) == 1 else [True]), rest  # (nvcc only where it helps)
    sel, pkgs = words.judged(_sel(("9.0",), ()), (*lock, _pkg("flashinfer-cubin"), _pkg("flashinfer-jit-cache")))
    assert sel.ok and not [w for w in sel.warnings if "flashinfer" in w]  # type: ignore[attr-defined]


def _outcome(packages: list[LockedPackage], backend: str = "cu128") -> object:
    return SimpleNamespace(target=SimpleNamespace(packages=packages, selection=SimpleNamespace(backend=backend)))


def test_sync_warns_where_this_machine_has_no_nvcc_for_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nvcc where flashinfer (and torch's cpp_extension) look: $CUDA_HOME alone when set, else PATH, else
    /usr/local/cuda — a CUDA_HOME without bin/nvcc is no toolkit, whatever PATH holds."""
    from tritonlock.environment.report import first_use_lines

    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    lock = [_pkg("flashinfer-python"), _pkg("flashinfer-cubin")]
    (line,) = first_use_lines(_outcome(lock))  # type: ignore[arg-type]
    assert line.startswith("warning: flashinfer-python 0.6.6 compiles its CUDA kernels when first called, with nvcc, "
                           "and this machine has none"), line
    assert "CUDA toolkit of the locked torch's CUDA (cu128)" in line, line
    assert "add flashinfer-jit-cache (its prebuilt" in line, line
    assert first_use_lines(_outcome(lock, "cpu")) == []  # type: ignore[arg-type]
    assert first_use_lines(_outcome([*lock, _pkg("flashinfer-jit-cache")])) == []  # type: ignore[arg-type]
    nvcc = home / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\n")
    assert first_use_lines(_outcome(lock)) != []  # type: ignore[arg-type]  (not executable: not found)
    os.chmod(nvcc, 0o755)
    assert first_use_lines(_outcome(lock)) == []  # type: ignore[arg-type]


def _at(name: str, version: str, files: tuple[str, ...] = ()) -> LockedPackage:
    return LockedPackage(name=name, version=version, index="https://example.invalid/simple",
                         wheels=tuple(Wheel(name=f, url=f"https://example.invalid/{f}", sha256="0" * 64)
                                      for f in files or (f"{name.replace('-', '_')}-{version}-py3-none-any.whl",)))


@pytest.mark.parametrize(("cubin", "jit", "mismatched"), [
    ("0.6.15.post1", "0.6.15.post1+cu130", ()),  # (a local label aside: the same release)
    ("0.6.15.post1", None, ()),
    (None, "0.6.15.post1+cu128", ()),
    ("0.6.13", None, (("flashinfer-cubin", "0.6.13"),)),
    ("0.6.15", "0.6.15+cu130", (("flashinfer-cubin", "0.6.15"), ("flashinfer-jit-cache", "0.6.15+cu130"))),
    ("0.6.15.post1", "0.6.15.post2+cu130", (("flashinfer-jit-cache", "0.6.15.post2+cu130"),)),
    ("0.6.15.post01", None, ()),  # (PEP 440: the same release written otherwise)
])
def test_prebuilt_packages_of_another_release_are_found(cubin: str | None, jit: str | None,
                                                        mismatched: tuple[tuple[str, str], ...]) -> None:
    lock = [_at("flashinfer-python", "0.6.15.post1")]
    lock += [_at("flashinfer-cubin", cubin)] if cubin else []
    lock += [_at("flashinfer-jit-cache", jit, ("j-cp39-abi3-manylinux_2_28_x86_64.whl",))] if jit else []
    (f,) = firstuse.found(lock, ("9.0",), "cu130")
    assert f.mismatched == mismatched


@pytest.mark.parametrize(("value", "same"), [(True, True), (False, False), ("true", False), (1, False), (None, False)])
def test_same_release_is_read_only_as_true(monkeypatch: pytest.MonkeyPatch, value: object, same: bool) -> None:
    row: dict[str, object] = {"name": "p", "min-gpu": "7.5", "source": "https://x", "prebuilt": ["q"]}
    if value is not None:
        row["same-release"] = value
    monkeypatch.setattr(pkgbuilds, "_table", lambda: ("packages.toml", {"kernels-at-first-use": [row]}))
    monkeypatch.setattr(firstuse, "kernels_at_first_use", pkgbuilds.kernels_at_first_use.__wrapped__)
    assert pkgbuilds.kernels_at_first_use.__wrapped__()["p"].same_release is same
    (f,) = firstuse.found([_at("p", "1.0"), _at("q", "2.0")], ("9.0",), "cu130")
    assert f.mismatched == ((("q", "2.0"),) if same else ())
