"""Source builds are a decision: a package without a wheel for the target is marked in the lock and said by resolve,
show and sync --dry-run; a build that imports torch is built at sync against the locked torch (for real, from an
sdist on the local index); [environment].no-build forbids them; the wider PyTorch index family (xformers…) comes from
the torch index where that backend's index serves it, and from the default index with a note where it does not."""

from __future__ import annotations

from tritonlock import LOCK_VERSION

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import LINUX_TAG, populate, tree, write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.lock.lockfile import read_lock
from tritonlock.models import LockedPackage
from tritonlock.environment.sync import venv_python

TORCH_EXT_LINE = ("torch-ext 1.0 has no wheel for this target: sync builds it from source, which imports torch (built "
                  "against the locked torch, without build isolation)")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = _source_builds_index(LocalIndex(tmp_path_factory.mktemp("source-builds-index")))
    idx.start()
    yield idx
    idx.stop()


def _source_builds_index(idx: LocalIndex) -> LocalIndex:
    populate(idx)
    # Only an sdist, whose build imports torch (and einops, a build requirement besides torch) and records the torch
    # it ran against in the module it builds.
    idx.add_sdist("simple", "torch-ext", "1.0", build_requires=("torch", "einops>=0.7"),
                  prelude="import torch, einops\nBUILT_AGAINST = torch.__version__")
    # A build that imports torch and fails (a missing CUDA header, as a real one would say).
    idx.add_sdist("simple", "broken-ext", "1.0", build_requires=("torch",),
                  prelude="import torch\nraise SystemExit('fatal error: cuda_runtime.h: No such file or directory')")
    # A setup.py that compiles CUDA code: the build needs nvcc and a compiler.
    idx.add_sdist("simple", "cuda-ext", "1.0", build_requires=("torch",),
                  setup_py="import torch\nfrom torch.utils.cpp_extension import CUDAExtension\n"
                           "ext = CUDAExtension(name='cuda_ext._C', sources=['k.cu'])\n")
    # The newest release only as an sdist, the one before with a wheel; and a package with no wheel at all.
    idx.add_sdist("simple", "flashy", "2.0")
    idx.add("simple", "flashy", "1.0", tag=LINUX_TAG)
    idx.add_sdist("simple", "onlysrc", "1.0")
    # flash-attn's shape: only sdists; its 2.x builds carry kernels for sm_80 and newer, 1.x for sm_75 and newer
    # (compat/builds.toml [[build-gpus]])
    idx.add_sdist("simple", "flash-attn", "2.1.0")
    idx.add_sdist("simple", "flash-attn", "1.0.0")
    for name in ("setuptools", "wheel", "packaging", "ninja"):  # (what compat/builds.toml says its build imports)
        idx.add("simple", name, "1.0")
    # xformers: PyTorch's cu126 index serves a build matched to torch's cu126 build; the cpu index has none.
    idx.add("whl/cu126", "xformers", "0.0.30+cu126", requires=("torch==2.6.0",), tag=LINUX_TAG)
    idx.add("simple", "xformers", "0.0.29", requires=("torch>=2.6",), tag=LINUX_TAG)
    return idx


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def _intent(tmp_path: Path, idx: LocalIndex, packages: str, extra: str = "", cuda: str = "cpu") -> Path:
    gpu = '[[targets]]\nname = "gpu"\ndriver = "550.54.15"\ngpus = ["8.0"]\n' if cuda != "cpu" else ""
    write_intent(tmp_path, idx, f'[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "{cuda}"\n'
                                f"packages = [{packages}]\n{extra}{gpu}")
    return tmp_path


def _resolve(proj: Path) -> str:
    code, out = _run("resolve", "-p", str(proj))
    assert code == 0, out
    return out


def test_a_package_without_a_wheel_is_marked_in_the_lock_and_said(tmp_path: Path, index: LocalIndex) -> None:
    proj = _intent(tmp_path, index, '"torch-ext"')
    out = _resolve(proj)
    assert f"  build: {TORCH_EXT_LINE}" in out
    (t,) = read_lock(proj / "triton-env.lock").targets
    pk = {p.name: p for p in t.packages}
    ext = pk["torch-ext"]
    assert (ext.build, ext.build_needs, ext.wheels) == ("source", ("torch",), ())
    assert ext.sdist is not None and ext.build_why == ("torch_ext-1.0.tar.gz: its pyproject.toml [build-system] "
                                                       "requires torch")
    # its build runs in the venv, so what it imports besides torch is locked (hashed) and installed before it
    assert "einops" in pk and pk["einops"].note == ("needed to build torch-ext, whose build imports torch: installed "
                                                    "before it, as that build runs in the venv without isolation")
    assert f"  note: einops: {pk['einops'].note}" in out
    assert pk["torch"].build is None and "typing-extensions" in pk
    text = (proj / "triton-env.lock").read_text()
    assert f'lock-version = "{LOCK_VERSION}"' in text and 'build = "source"\nbuild-needs = ["torch"]\n' in text
    code, out = _run("show", "-p", str(proj))
    assert code == 0 and f"  build: {TORCH_EXT_LINE}" in out and "(built from source at sync)" in out
    code, out = _run("show", "-p", str(proj), "--json")
    (doc,) = json.loads(out)["targets"]
    assert doc["source_builds"] == [{"name": "torch-ext", "version": "1.0", "build": "source", "build_needs": ["torch"],
                                     "build_why": ext.build_why, "build_message": TORCH_EXT_LINE}]
    assert {"name": "einops", "note": pk["einops"].note} in doc["package_notes"]
    assert next(p for p in doc["packages"] if p["name"] == "torch-ext")["build"] == "source"
    code, out = _run("resolve", "-p", str(proj), "--upgrade", "--json")
    assert code == 0 and json.loads(out)["targets"][0]["source_builds"][0]["build_message"] == TORCH_EXT_LINE


def test_a_page_uv_cached_from_another_index_at_the_same_address_is_asked_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """uv's cache holds the pages another index served at this address (yesterday's mirror; another project's index
    on a reused port): the decision's compiles that answer from uv's cache keep an answer only where this run read
    the page online, so the lock pins what this index serves, not what the cache remembers."""
    import socket

    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    locks = []
    for n, module in enumerate(("# an older build of the same name\n", None)):
        idx = _source_builds_index(LocalIndex(tmp_path / f"index-{n}", port=port, prefix="/mirror"))
        if module is not None:  # the same file name, other bytes
            idx.add("simple", "triton", "3.2.0", tag=LINUX_TAG, modules={"triton/__init__.py": module})
        served = {f.name: f for f in (tmp_path / f"index-{n}" / "simple" / "_files").glob("triton-3.2.0-*.whl")}
        idx.start()
        try:
            proj = _intent(tmp_path / f"proj-{n}", idx, '"torch-ext"')
            _resolve(proj)
        finally:
            idx.stop()
        (t,) = read_lock(proj / "triton-env.lock").targets
        (triton,) = [p for p in t.packages if p.name == "triton"]
        (whl,) = triton.wheels
        import hashlib

        assert whl.sha256 == hashlib.sha256(served[whl.name].read_bytes()).hexdigest()
        locks.append(whl.sha256)
    assert locks[0] != locks[1]  # (the two indexes did serve other bytes under one address)


def test_sync_builds_it_against_the_locked_torch(tmp_path: Path, index: LocalIndex) -> None:
    proj = _intent(tmp_path, index, '"torch-ext"')
    _resolve(proj)
    code, out = _run("sync", "-p", str(proj), "--dry-run")
    assert code == 0 and f"  build: {TORCH_EXT_LINE}" in out, out
    code, out = _run("sync", "-p", str(proj), "--dry-run", "--json")
    step = next(s for s in json.loads(out)["plan"] if s["name"] == "torch-ext")
    assert step["action"] == "install" and step["build_needs"] == ["torch"]
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0, out
    assert "building torch-ext from source against torch 2.6.0+cpu (no build isolation: the build imports torch)" in out
    # the module was built by a backend that imported the venv's torch: the locked build, not one from an index
    r = subprocess.run([str(venv_python(proj / ".venv")), "-c", "import torch_ext; print(torch_ext.BUILT_AGAINST)"],
                       capture_output=True, text=True)
    assert r.stdout.strip() == "2.6.0+cpu", r.stderr
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0 and "already matches" in out and "building" not in out


def test_a_wheelhouse_may_hold_the_sdist_of_a_source_build(tmp_path: Path, index: LocalIndex) -> None:
    proj = _intent(tmp_path, index, '"torch-ext"')
    _resolve(proj)
    house = tmp_path / "house"
    house.mkdir()
    for sub in ("simple", "whl/cpu"):
        for f in (index.root / sub / "_files").glob("*.whl"):
            (house / f.name).write_bytes(f.read_bytes())
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--find-links", str(house))
    assert code == 5 and "not in the wheelhouse" in out and "torch_ext-1.0.tar.gz (built from source)" in out, out
    sdist = index.root / "simple" / "_files" / "torch_ext-1.0.tar.gz"
    (house / sdist.name).write_bytes(sdist.read_bytes())
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--find-links", str(house))
    assert code == 0, out
    r = subprocess.run([str(venv_python(proj / ".venv")), "-c", "import torch_ext; print(torch_ext.BUILT_AGAINST)"],
                       capture_output=True, text=True)
    assert r.stdout.strip() == "2.6.0+cpu", r.stderr


def test_a_failed_build_leaves_the_venv_as_it_was(tmp_path: Path, index: LocalIndex) -> None:
    proj = _intent(tmp_path, index, '"einops"')
    _resolve(proj)
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0, out
    venv = proj / ".venv"
    before = tree(venv)
    _intent(tmp_path, index, '"einops", "broken-ext"')
    _resolve(proj)
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code != 0
    assert "broken-ext 1.0 is built from source against torch, so the change is made in a copy" in out
    assert "sync failed; " in out and f"{venv} is unchanged" in out
    assert "building broken-ext 1.0 from source failed (its build imports torch" in out
    assert "cuda_runtime.h: No such file or directory" in out
    assert 'add no-build = ["broken-ext"] to [environment] in triton-env.toml' in out
    assert tree(venv) == before
    assert sorted(p.name for p in proj.iterdir()) == [".venv", "triton-env.lock", "triton-env.toml"]
    # a build that works goes the same way: built in the copy, which then replaces the venv
    _intent(tmp_path, index, '"einops", "torch-ext"')
    _resolve(proj)
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0 and "now matches target host (rebuilt)" in out, out
    r = subprocess.run([str(venv_python(venv)), "-c", "import torch_ext; print(torch_ext.BUILT_AGAINST)"],
                       capture_output=True, text=True)
    assert r.stdout.strip() == "2.6.0+cpu", r.stderr


def test_a_machine_without_nvcc_is_told_before_anything_is_installed(tmp_path: Path, index: LocalIndex,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # As torch.utils.cpp_extension: with $CUDA_HOME set, nvcc is looked for there only (this one has none)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    proj = _intent(tmp_path, index, '"cuda-ext"')
    out = _resolve(proj)
    assert ("cuda-ext 1.0 has no wheel for this target: sync builds it from source, which needs nvcc (the CUDA "
            "compiler) and a C/C++ compiler, and imports torch") in " ".join(out.split())  # (a CPU torch: no major)
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code != 0
    assert f"this machine lacks nvcc (the CUDA compiler): $CUDA_HOME is {tmp_path / 'cuda'}, which has no bin/nvcc" in out
    assert "install the CUDA toolkit (nvcc" in out and 'add no-build = ["cuda-ext"]' in out
    assert "nothing was created" in out and not (proj / ".venv").exists()


def _fake_nvcc(home: Path, says: str) -> None:
    """An nvcc that answers --version as a CUDA toolkit's does (no CUDA toolkit is installed here)."""
    (home / "bin").mkdir(parents=True)
    nvcc = home / "bin" / "nvcc"
    nvcc.write_text(f"#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\necho '{says}'\n")
    nvcc.chmod(0o755)


@pytest.mark.parametrize("release, refused", [("13.0", True), ("11.8", True), ("12.9", False), ("12.1", False)])
def test_nvcc_of_another_major_than_the_locked_torchs_is_told_before_anything_is_installed(
        tmp_path: Path, index: LocalIndex, monkeypatch: pytest.MonkeyPatch, release: str, refused: bool) -> None:
    # torch.utils.cpp_extension raises where nvcc's CUDA major is not torch's ("The detected CUDA version (13.0)
    # mismatches the version that was used to compile PyTorch (12.6)"); a minor apart it builds (with a warning)
    _fake_nvcc(tmp_path / "cuda", f"Cuda compilation tools, release {release}, V{release}.88")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    proj = _intent(tmp_path / "p", index, '"cuda-ext", "torch-ext"', cuda="cu126")
    out = _resolve(proj)
    line = ("cuda-ext 1.0 has no wheel for this target: sync builds it from source, which needs nvcc (the CUDA "
            "compiler) of CUDA 12 (the locked torch's major, cu126) and a C/C++ compiler, and imports torch")
    assert line in " ".join(out.split()), out
    code, out = _run("show", "-p", str(proj), "--json")
    (doc,) = json.loads(out)["targets"]
    builds = {b["name"]: b for b in doc["source_builds"]}
    assert builds["cuda-ext"]["build_nvcc_major"] == 12 and builds["cuda-ext"]["build_message"].startswith(line)
    # a build that runs no nvcc names no CUDA major, whatever the locked torch's CUDA
    assert "build_nvcc_major" not in builds["torch-ext"] and "CUDA" not in builds["torch-ext"]["build_message"]
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--target", "gpu")
    said = " ".join(out.split())
    if refused:
        assert code != 0, out
        assert (f"this machine lacks nvcc of CUDA 12 (the locked torch is a cu126 build): {tmp_path / 'cuda'}/bin/nvcc "
                f"is CUDA {release}, and torch.utils.cpp_extension refuses an nvcc of another major") in said, out
        major = release.split(".")[0]
        assert (f"where this machine's driver runs CUDA {major}, lock a torch of that nvcc's CUDA: cuda = \"{major}\" "
                "in [environment]") in said and 'add no-build = ["cuda-ext"]' in said
        assert "install a CUDA 12 toolkit (the locked torch's major: cu126) and set CUDA_HOME to it" in said
        assert not (proj / ".venv").exists()
    else:  # past the check (the build then runs; this fake nvcc compiles nothing, so it fails there)
        assert "this machine lacks" not in said, out


def test_no_build_takes_the_newest_version_with_a_wheel_or_names_the_package(tmp_path: Path,
                                                                             index: LocalIndex) -> None:
    proj = _intent(tmp_path / "a", index, '"flashy"')
    out = _resolve(proj)
    assert "flashy 2.0 has no wheel for this target: sync builds it from source" in out
    proj = _intent(tmp_path / "b", index, '"flashy"', extra='no-build = ["Flashy"]\n')
    out = _resolve(proj)
    (t,) = read_lock(proj / "triton-env.lock").targets
    flashy = next(p for p in t.packages if p.name == "flashy")
    assert (flashy.version, flashy.build, len(flashy.wheels)) == ("1.0", None, 1) and "build:" not in out
    proj = _intent(tmp_path / "c", index, '"flashy", "onlysrc"', extra="no-build = true\n")
    code, out = _run("resolve", "-p", str(proj))
    assert code == 4 and not (proj / "triton-env.lock").exists()
    assert "with wheels only:" in out and "note: onlysrc has no wheel for this target (Python 3.11 on x86_64-" in out
    assert ") in any version the requirements allow, and [environment].no-build forbids building it from source" in out
    assert "fix: narrow [environment].no-build to let sync build it" in out


def test_no_build_is_validated(tmp_path: Path) -> None:
    from tritonlock.errors import IntentError
    from tritonlock.intent.read import parse_intent

    assert parse_intent("[environment]\nno-build = true\n").no_build == (":all:",)
    assert parse_intent('[environment]\nno-build = ["Flash_Attn", "xformers"]\n').no_build == ("flash-attn",
                                                                                                "xformers")
    plain = parse_intent("[environment]\n")
    assert parse_intent("[environment]\nno-build = false\n").content_hash == plain.content_hash
    assert parse_intent("[environment]\nno-build = true\n").content_hash != plain.content_hash
    with pytest.raises(IntentError) as ei:
        parse_intent("[environment]\nno-build = \"yes\"\n", "t.toml")
    assert str(ei.value) == ("t.toml:2: environment.no-build: expected true, false or a list of package names, got "
                             "'yes' — write no-build = true (wheels only), or a list of package names, e.g. no-build "
                             '= ["flash-attn"]')


@pytest.mark.parametrize("cuda", ["cu126", "cpu"])
def test_xformers_comes_from_the_torch_index_where_that_backend_serves_it(tmp_path: Path, index: LocalIndex,
                                                                         cuda: str) -> None:
    proj = _intent(tmp_path, index, '"xformers"', cuda=cuda)
    out = _resolve(proj)
    (t,) = read_lock(proj / "triton-env.lock").targets
    xf = next(p for p in t.packages if p.name == "xformers")
    if cuda == "cu126":  # the build matched to torch's cu126 build, bound to that index like torch
        assert (xf.version, xf.index, xf.note) == ("0.0.30+cu126", index.index_url("whl/cu126"), None)
        assert "note:" not in out
    else:  # the cpu index does not serve it: the default index's, and the lock says why
        assert (xf.version, xf.index) == ("0.0.29", index.index_url("simple"))
        assert xf.note == (f"from the default index {index.index_url('simple')}: the cpu torch index "
                           f"{index.index_url('whl/cpu')} does not serve it (PyTorch publishes it there for some "
                           "backends only), so this build is not matched to torch's cpu build by the index")
        assert f"  note: xformers: {xf.note}" in out


def _sdist(files: dict[str, str], name: str = "pkg-1.0") -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{name}/{path}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_build_facts_come_from_the_sdist_and_the_curated_rows() -> None:
    from tritonlock.lock import builds

    # flash-attn's shape: no pyproject.toml (PEP 517's setuptools default), a setup.py that imports torch and
    # declares CUDA extensions
    setup = ("import torch\nfrom torch.utils.cpp_extension import BuildExtension, CUDAExtension, CUDA_HOME\n"
             "ext_modules = [CUDAExtension(name='flash_attn_2_cuda', sources=['a.cu'])]\n")
    f = builds.inspect_sdist(_sdist({"setup.py": setup}), "flash_attn-2.8.3.post2.tar.gz")
    assert (f.imports_torch, f.needs, f.requires) == (True, ("nvcc", "compiler"), ("setuptools>=40.8.0",))
    assert f.why == ("flash_attn-2.8.3.post2.tar.gz: its setup.py imports torch; its setup.py builds CUDA extensions")
    # a plain pure-Python sdist
    plain = builds.inspect_sdist(_sdist({"pyproject.toml": '[build-system]\nrequires = ["hatchling"]\n'}), "p.tar.gz")
    assert (plain.imports_torch, plain.needs, plain.requires) == (False, (), ("hatchling",))
    assert plain.why == "p.tar.gz: a plain build (no torch, no CUDA code)"
    # torch in [build-system] requires: imports torch; torch itself is never a build requirement to lock
    t = builds.inspect_sdist(_sdist({"pyproject.toml": '[build-system]\nrequires = ["setuptools", "torch>=2"]\n'}),
                             "t.tar.gz")
    assert (t.imports_torch, t.requires) == (True, ("setuptools",))
    assert builds.inspect_sdist(b"not a tarball", "x.tar.gz").why == "x.tar.gz: not a readable sdist"
    # the curated rows: every one sourced, and merged with what the sdist says
    rows = builds.curated()
    assert {"flash-attn", "xformers", "mamba-ssm", "causal-conv1d", "apex", "deepspeed"} <= set(rows)
    assert all(r.why.startswith("compat/builds.toml: https://") for r in rows.values())
    merged = builds.merge(plain, rows["flash-attn"])
    assert merged.imports_torch and merged.needs == ("nvcc", "compiler")
    assert merged.requires == ("hatchling", "setuptools", "wheel", "packaging", "ninja")
    pkg = LockedPackage(name="flash-attn", version="2.8.3.post2", index="https://i.example/simple",
                        build="source", build_needs=builds.needs_of(merged))
    assert builds.source_line(pkg) == ("flash-attn 2.8.3.post2 has no wheel for this target: sync builds it from "
                                       "source, which needs nvcc (the CUDA compiler) and a C/C++ compiler, and imports "
                                       "torch (built against the locked torch, without build isolation)")


def test_the_lock_keeps_build_fields_and_refuses_bad_ones() -> None:
    from tritonlock.lock import lockfile
    from tritonlock.errors import LockfileError
    from tritonlock.models import Lock, LockedTarget, Selection, TargetSpec, Wheel

    spec = TargetSpec(name="t", os="linux", arch="x86_64")
    sel = Selection(target=spec, ok=True, python="3.12", torch="2.9.1", backend="cu128",
                    index="https://i.example/whl/cu128")
    sd = Wheel(name="flash_attn-2.8.3.tar.gz", url="https://f.example/flash_attn-2.8.3.tar.gz", sha256="a" * 64)
    pk = LockedPackage(name="flash-attn", version="2.8.3", index="https://i.example/simple", sdist=sd, build="source",
                       build_needs=("nvcc", "compiler", "torch"), build_why="compat/builds.toml: https://x",
                       note="a note")
    lock = Lock(lock_version="2.1", created_by="t", intent_hash="sha256:" + "c" * 64, matrix_version="2026.1.1",
                default_index="https://i.example/simple", targets=(LockedTarget(selection=sel, packages=(pk,)),))
    text = lockfile.dumps(lock)
    back = lockfile.loads(text)
    assert back.targets[0].packages == (pk,) and lockfile.dumps(back) == text
    with pytest.raises(LockfileError, match=r"packages\[0\]\.build: 'wheel' is not valid here"):
        lockfile.loads(text.replace('build = "source"', 'build = "wheel"'), "x.lock")


def test_the_wider_family_is_data_with_a_source() -> None:
    from tritonlock.compat.matrix import load_matrix

    m = load_matrix()
    assert {"xformers", "torchao", "torchcodec", "fbgemm-gpu", "torchrec", "torchtune"} <= m.torch_index_packages
    assert not m.torch_index_packages & m.torch_family  # torch, triton…: bound always, never from the default index
    assert not any(n.startswith(("nvidia-", "cuda-")) for n in m.torch_index_packages)
    assert m.served_by_torch_index("xformers") and not m.served_by_torch_index("numpy")


def _gzip_bomb(unpacked: int, name: str = "bomb-1.0") -> bytes:
    """A .tar.gz of about unpacked / 1000 bytes: a first member of `unpacked` zero bytes, then a setup.py that
    imports torch. (gzip members concatenate: one 1 MiB block of zeros, compressed once, repeated.)"""
    import gzip
    import io
    import tarfile

    def header(path: str, size: int) -> bytes:
        info = tarfile.TarInfo(f"{name}/{path}")
        info.size = size
        return info.tobuf(format=tarfile.GNU_FORMAT)

    setup = b"import torch\nfrom torch.utils.cpp_extension import CUDAExtension\n"
    block = gzip.compress(b"\0" * (1 << 20), compresslevel=9)
    tail = header("setup.py", len(setup)) + setup + b"\0" * (-len(setup) % 512) + b"\0" * 1024
    out = io.BytesIO()
    out.write(gzip.compress(header("zeros.bin", unpacked)))
    for _ in range(unpacked >> 20):
        out.write(block)
    out.write(gzip.compress(tail))
    return out.getvalue()


def test_a_gzip_bomb_sdist_is_read_only_up_to_a_bound_on_what_it_unpacks_to(local_index: LocalIndex) -> None:
    """1 GiB of zeros in a 1 MB sdist, before its setup.py: resolve used to unpack all of it (and more, without end,
    for a bigger bomb) to find setup.py. The facts are read from what the first 256 MB unpack to, then given up,
    through the index as resolve fetches them."""
    from tritonlock.lock import builds

    bomb = _gzip_bomb(1 << 30)
    assert len(bomb) < 4 * 1024 * 1024
    f = builds.inspect_sdist(bomb, "bomb-1.0.tar.gz")
    assert f.why == ("bomb-1.0.tar.gz: unpacks to more than 256 MB before its pyproject.toml and setup.py — not read "
                     "(its build facts are unknown)"), f.why
    assert not f.imports_torch
    small = _gzip_bomb(1 << 20)  # the same layout, unpacking to 1 MB: read, and its facts found
    assert builds.inspect_sdist(small, "bomb-1.0.tar.gz").imports_torch
    files = local_index.root / "simple" / "_files"
    files.mkdir(parents=True, exist_ok=True)
    (files / "bomb-1.0.tar.gz").write_bytes(bomb)
    got = builds.facts_for("bomb", f"{local_index.index_url('simple')}/_files/bomb-1.0.tar.gz", "bomb-1.0.tar.gz")
    assert got.why.startswith("bomb-1.0.tar.gz: unpacks to more than 256 MB"), got.why


def test_resolve_runs_the_build_backend_of_an_sdist_without_static_metadata_unless_no_build(
        tmp_path: Path, local_index: LocalIndex) -> None:
    """What docs/lock.md says of resolving ("`resolve` itself runs build backends"): an sdist whose PKG-INFO a resolver cannot trust (Metadata-Version 2.1) is
    built to learn its dependencies — its backend's code runs on this machine at `resolve` — and `no-build` is the
    way to forbid that: then nothing of the package runs, and resolve names it."""
    marker = tmp_path / "backend-ran"
    local_index.add_sdist("simple", "dynmeta", "1.0", static_metadata=False,
                          prelude=f"open({str(marker)!r}, 'a').write('ran\\n')")
    proj = _intent(tmp_path / "a", local_index, '"dynmeta"')
    _resolve(proj)
    assert marker.exists(), "the backend did not run: the README's word on resolving would be wrong"
    marker.unlink()
    proj = _intent(tmp_path / "b", local_index, '"dynmeta"', extra='no-build = ["dynmeta"]\n')
    code, out = _run("resolve", "-p", str(proj))
    assert code == 4 and "dynmeta has no wheel for this target" in out, out
    assert not marker.exists()  # nothing of the package ran
    # static metadata (Metadata-Version 2.2, PEP 643) is read, not built for
    local_index.add_sdist("simple", "statmeta", "1.0", prelude=f"open({str(marker)!r}, 'a').write('ran\\n')")
    _resolve(_intent(tmp_path / "c", local_index, '"statmeta"'))
    assert not marker.exists()
def test_a_swapped_sdist_is_a_hash_mismatch_not_a_failed_build(tmp_path: Path) -> None:
    """The index serves other bytes under the locked sdist's name: uv refuses it for its hash, before any build —
    sync says that (the file is not the one the lock pinned), not "building … from source failed", whose fix
    (install what the build lacks) would not help."""
    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    idx.add_sdist("simple", "torch-ext", "1.0", build_requires=("torch", "einops>=0.7"),
                  prelude="import torch, einops\nBUILT_AGAINST = torch.__version__")
    idx.start()
    try:
        proj = _intent(tmp_path / "p", idx, '"torch-ext"')
        _resolve(proj)
        idx.add_sdist("simple", "torch-ext", "1.0", build_requires=("torch", "einops>=0.7"),
                      prelude="import torch, einops\nBUILT_AGAINST = 'not the locked file'")  # same name, new bytes
        code, out = _run("sync", "-p", str(proj), "--no-verify")
    finally:
        idx.stop()
    assert code == 5, out
    assert re.search(r"(hash|size) mismatch for torch-ext: the file the index served is not the one the lock pinned", out), out
    assert "from source failed" not in out and "no-build" not in out
    assert "sync failed; nothing was created" in out


def test_the_pylock_export_of_a_source_build_carries_its_sdist_and_hash(tmp_path: Path, index: LocalIndex) -> None:
    """A package the lock builds from source has no wheel: the PEP 751 export must carry its sdist — URL, size and
    the sha256 the lock pins — or an installer of the export has nothing to build it from, or to check it against."""
    import tomllib

    proj = _intent(tmp_path, index, '"torch-ext"')
    _resolve(proj)
    (t,) = read_lock(proj / "triton-env.lock").targets
    locked = next(p for p in t.packages if p.name == "torch-ext")
    assert locked.sdist is not None and not locked.wheels
    code, out = _run("export", "--format", "pylock", "-p", str(proj))
    assert code == 0, out
    doc = tomllib.loads(out)
    (pk,) = [p for p in doc["packages"] if p["name"] == "torch-ext"]
    assert "wheels" not in pk or not pk["wheels"]
    assert pk["sdist"]["name"] == locked.sdist.name and pk["sdist"]["url"] == locked.sdist.url
    assert pk["sdist"]["hashes"] == {"sha256": locked.sdist.sha256}, pk


def _gpu_intent(tmp_path: Path, idx: LocalIndex, gpus: list[str], packages: str = '"flash-attn"') -> Path:
    targets = "".join(f'[[targets]]\nname = "g{i}"\ndriver = "550.54.15"\ngpus = {json.dumps(g)}\n'
                      for i, g in enumerate(gpus))
    write_intent(tmp_path, idx, f'[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cu126"\n'
                                f"packages = [{packages}]\n{targets}")
    return tmp_path


@pytest.mark.parametrize(("gpus", "version"), [(["8.0"], "2.1.0"), (["9.0", "8.6"], "2.1.0"), (["7.5"], "1.0.0"),
                                               (["8.0", "7.5"], "1.0.0")])
def test_a_source_build_takes_the_newest_release_with_code_for_the_gpus(tmp_path: Path, index: LocalIndex,
                                                                      gpus: list[str], version: str) -> None:
    proj = _gpu_intent(tmp_path, index, [gpus])
    out = _resolve(proj)
    (t,) = read_lock(proj / "triton-env.lock").targets
    fa = next(p for p in t.packages if p.name == "flash-attn")
    assert (fa.version, fa.build) == (version, "source")
    said = ("flash-attn 2.1.0 built from its sdist, whose kernels are for GPUs of compute capability 8.0 and newer "
            "(compat/builds.toml: https://github.com/Dao-AILab/flash-attention/")
    assert (said in out) == (version == "1.0.0")
    if version == "1.0.0":
        assert "and this target's GPU 7.5 is older; releases from 2.0.0 on left out" in out


@pytest.mark.parametrize("gpus", [["7.0"], ["9.0", "7.0", "7.0"], ["7.5", "7.0"]])
def test_a_source_build_with_no_code_for_the_gpu_is_that_targets_conflict(tmp_path: Path, index: LocalIndex,
                                                                         gpus: list[str]) -> None:
    proj = _gpu_intent(tmp_path, index, [gpus])
    code, out = _run("resolve", "-p", str(proj))
    assert code == 3, out
    assert not (proj / "triton-env.lock").exists()
    low = list(dict.fromkeys(g for g in gpus if g < "8.0"))
    assert "error: target 'g0': flash-attn has no build for this target's GPUs — passed over: flash-attn 2.1.0 built " \
           "from its sdist, whose kernels are for GPUs of compute capability 8.0 and newer" in out
    assert (f"and this target's GPU{'s' if len(low) > 1 else ''} {', '.join(low)} {'are' if len(low) > 1 else 'is'} "
            f"older; no older release's build has code for {'all of them' if len(low) > 1 else 'it'} either") in out
    assert "fix: lock flash-attn for the machines whose GPUs it has code for" in out
    assert "uv finds no lock" not in out and "Traceback" not in out


def test_the_gpu_floor_of_a_source_build_is_per_target(tmp_path: Path, index: LocalIndex) -> None:
    proj = _gpu_intent(tmp_path, index, [["8.0"], ["7.5"], ["7.0"]])
    code, out = _run("resolve", "-p", str(proj))
    assert code == 3 and "target 'g2': flash-attn has no build for this target's GPUs" in out
    assert "target 'g0'" not in out.split("error:", 1)[-1] and "target 'g1':" not in out.split("error:", 1)[-1]


def test_gpu_floor_rows_are_read_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from tritonlock import _data
    from tritonlock.errors import MatrixError
    from tritonlock.lock import builds

    fa = builds.gpu_floors()["flash-attn"]
    assert [(f.since, f.min_cc) for f in fa] == [("2.0.0", (8, 0)), ("", (7, 5))]
    assert all(f.why.startswith("compat/builds.toml: https://github.com/Dao-AILab/flash-attention/") for f in fa)
    for gpus, version, want in [(["7.0"], "2.8.3", (["7.0"], "flash-attn<0")),
                                (["7.5"], "2.8.3", (["7.5"], "flash-attn<2.0.0")),
                                (["7.5"], "2.0.0", (["7.5"], "flash-attn<2.0.0")),
                                (["7.5"], "2.0.0rc1", None),  # (a pre-release of 2.0.0 is in 1.x's span)
                                (["7.0"], "2.0.0rc1", (["7.0"], "flash-attn<0")),
                                (["7.5"], "1.9.9", None), (["8.0"], "2.8.3", None), (["8.9", "7.5"], "1.0.9", None),
                                (["9.0", "7.5", "7.0", "7.5"], "2.8.3", (["7.5", "7.0"], "flash-attn<0")),
                                (["7.0"], "0.2.8", (["7.0"], "flash-attn<0")), (["gfx942"], "2.8.3", None),
                                ([], "2.8.3", None), (["7.0"], "not-a-version", None), (["7.5.1", "7"], "2.8.3", None)]:
        got = builds.gpus_below("flash-attn", version, gpus)
        assert (got if got is None else (got[1], got[2])) == want, (gpus, version)
    assert builds.gpus_below("xformers", "0.0.30", ["6.1"]) is None  # no row: nothing known, nothing refused
    compat = tmp_path / "compat"
    shutil.copytree(_data.compat_root(), compat)  # type: ignore[arg-type]
    monkeypatch.setattr(_data, "compat_root", lambda: compat)
    base = (compat / "builds.toml").read_text()
    bad = [('name = "x"\nmin-cc = "8"\nsource = "https://s"\n', "build-gpus[2]"),
           ('name = "x"\nsince = "1.0"\nmin-cc = "8.0"\n', "build-gpus[2]"),
           ('name = "x"\nsince = "one"\nmin-cc = "8.0"\nsource = "https://s"\n', "build-gpus[2]"),
           ('name = "flash-attn"\nsince = "3.0"\nmin-cc = "7.0"\nsource = "https://s"\n', "rows of flash-attn"),
           ('name = "flash-attn"\nsince = "2.0.0"\nmin-cc = "9.0"\nsource = "https://s"\n', "rows of flash-attn"),
           ('name = "flash-attn"\nsince = "2.0.0"\nmin-cc = "8.0"\nsource = "https://s"\n', "rows of flash-attn")]
    try:
        for row, where in bad:
            (compat / "builds.toml").write_text(base + "\n[[build-gpus]]\n" + row)
            builds.gpu_floors.cache_clear()
            with pytest.raises(MatrixError, match=re.escape(where)):
                builds.gpu_floors()
        (compat / "builds.toml").write_text(base + '\n[[build-gpus]]\nname = "flash-attn"\nsince = "3.0"\n'
                                                   'min-cc = "9.0"\nsource = "https://s"\n')
        builds.gpu_floors.cache_clear()
        assert builds.gpus_below("flash-attn", "3.1", ["8.0"])[2] == "flash-attn<3.0"  # type: ignore[index]
        assert builds.gpus_below("flash-attn", "3.1", ["7.9"])[2] == "flash-attn<2.0.0"  # type: ignore[index]
    finally:
        builds.gpu_floors.cache_clear()


def test_a_gpu_floor_row_judges_source_builds_only(tmp_path: Path, index: LocalIndex,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A wheel's GPU code is read from the wheel (the native rule): a [[build-gpus]] row never refuses one —
    xformers' wheel is locked on a V100 beside a row that says its source build needs sm_80."""
    import shutil

    from tritonlock import _data
    from tritonlock.lock import builds

    compat = tmp_path / "compat"
    shutil.copytree(_data.compat_root(), compat)  # type: ignore[arg-type]
    with (compat / "builds.toml").open("a") as f:
        f.write('\n[[build-gpus]]\nname = "xformers"\nmin-cc = "8.0"\nsource = "https://s"\n')
    monkeypatch.setattr(_data, "compat_root", lambda: compat)
    builds.gpu_floors.cache_clear()
    try:
        proj = _gpu_intent(tmp_path / "p", index, [["7.0"]], packages='"xformers"')
        code, out = _run("resolve", "-p", str(proj))
        assert code == 0, out
        (t,) = read_lock(proj / "triton-env.lock").targets
        xf = next(p for p in t.packages if p.name == "xformers")
        assert (xf.version, xf.build) == ("0.0.30+cu126", None) and "built from its sdist" not in out
    finally:
        builds.gpu_floors.cache_clear()


def test_the_words_of_an_impossible_target_name_each_cause_and_its_fix() -> None:
    from types import SimpleNamespace

    from tritonlock.decide._pkgwords import impossible
    from tritonlock.errors import ClosureError

    sc = SimpleNamespace(target=SimpleNamespace(name="t"))
    err = ClosureError("x", uv="Because you require a, we can conclude that your requirements are unsatisfiable.")
    gpu_all = ("fa 2.0 built from its sdist, whose kernels are for GPUs of compute capability 8.0 and newer (s), and "
               "this target's GPU 7.0 is older; no older release's build has code for it either")
    gpu_some = ("fa 2.0 built from its sdist, whose kernels are for GPUs of compute capability 8.0 and newer (s), and "
                "this target's GPU 7.5 is older; releases from 2.0 on left out")
    unbuilt = "fa 1.0's sdist, which uv could not build here to read its requirements (E: x); took fa's wheels only"
    nvcc = "ext 1.0 as a source build (no wheel for macOS; its build needs nvcc, the CUDA compiler, which …)"
    cuda = "lib 2.0 (a CUDA 13 build, which needs driver >= 580.65.06; this driver is 535.1)"
    msg = impossible(sc, [gpu_all], err)  # type: ignore[arg-type]
    assert msg.startswith("target 't': fa has no build for this target's GPUs — passed over: ") and "uv finds" not in msg
    assert msg.endswith("fix: lock fa for the machines whose GPUs it has code for (a target of their own, or "
                        "[[targets]] without these GPUs), or leave it out of this target's packages")
    two = impossible(sc, [unbuilt, unbuilt.replace("fa", "fb")], err)  # type: ignore[arg-type]
    assert two.startswith("target 't': the packages need fa, fb, whose sdists uv could not build here to read their "
                          "requirements (and no release with a wheel fits) — passed over: "), two
    assert two.endswith("fix: make the sdists of fa, fb buildable here (what their builds need: the errors above), or "
                        "name a release with a wheel for this target"), two
    for passed, fixes in [([gpu_some], ["lock fa"]), ([gpu_all, unbuilt], ["lock fa", "make fa's sdist"]),
                          ([unbuilt], ["make fa's sdist"]), ([nvcc, gpu_all], ["lock the packages that need nvcc",
                                                                               "lock fa"]),
                          ([cuda], ["a driver new enough"]), ([gpu_all, cuda], ["lock fa", "a driver new enough"]),
                          ([gpu_all, unbuilt.replace("fa", "other")], ["lock fa", "make other's sdist"])]:
        msg = impossible(sc, passed, err)  # type: ignore[arg-type]
        generic = passed != [gpu_all] and not (passed == [gpu_all, cuda]) and passed != [unbuilt]
        assert msg.startswith("target 't': the packages need what this target cannot have — passed over: ") == generic
        # (only what this machine could not build: its doing, named — not the target's)
        assert msg.startswith("target 't': the packages need fa, whose sdist uv could not build here to read its "
                              "requirements (and no release with a wheel fits) — passed over: ") == (passed == [unbuilt])
        assert ("without it, uv finds no lock: " in msg) == (generic or passed == [unbuilt]), msg
        got = msg.split("\n  fix: ", 1)[1].split("; or ")
        assert len(got) == len(fixes) and all(g.startswith(f) for g, f in zip(got, fixes)), got
