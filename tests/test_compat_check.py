"""`tritonlock compat check` against a real local index: a stale copy of compat/ fails naming the releases it lacks;
an index that does not answer is listed as not checked and never gives an all-clear; it says what it compared; the
arch lists of the rows are compared with the GPU code of the wheels' own libraries (read by HTTP Range)."""

from __future__ import annotations

import io
import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from pkgindex import LocalIndex
from test_gpucode import bundle, gcc_so, nvcc_so
from tritonlock.cli import main
from tritonlock.compat.matrix import load_matrix
from tritonlock.compat.rows import TorchRelease
from tritonlock.compat.matrix_vendor import load_vendor_matrix

COMPAT = Path(__file__).parent.parent / "compat"
REL = "2.13.0"
_PLAT_TAG = {"linux_x86_64": "manylinux_{g}_x86_64", "linux_aarch64": "manylinux_{g}_aarch64", "win_amd64": "win_amd64",
             "macos_arm64": "macosx_{m}_arm64"}


def compat_copy(tmp: Path, template: str, *, drop_torch: tuple[str, ...] = (), drop_triton: tuple[str, ...] = ()) -> Path:
    """compat/ copied, PyTorch's index template pointed at `template`, the named releases' rows removed."""
    root = tmp / "compat"
    shutil.copytree(COMPAT, root)
    meta = root / "meta.toml"
    meta.write_text(re.sub(r'torch_index_template = "[^"]*"', f'torch_index_template = "{template}"',
                           meta.read_text()), encoding="utf-8")
    for file, table, versions in (("torch.toml", "torch", drop_torch), ("triton.toml", "triton", drop_triton)):
        if versions:
            (root / file).write_text(_drop(table, versions, (root / file).read_text()), encoding="utf-8")
    return root


def _drop(table: str, versions: tuple[str, ...], text: str) -> str:
    """Remove the [[table]] rows of `versions` with the [[table.*]] rows under them, and [[ptxas]] rows of them."""
    blocks = re.split(r"(?m)^(?=\[\[)", text)
    out, dropping = [], False
    for b in blocks:
        head = b.split("\n", 1)[0]
        version = re.search(r'(?m)^version = "([^"]+)"', b)
        if head == f"[[{table}]]":
            dropping = bool(version and version.group(1) in versions)
        elif not head.startswith(f"[[{table}."):
            dropping = head == "[[ptxas]]" and bool(version and version.group(1) in versions) and 'package = "triton"' in b
        if not dropping:
            out.append(b)
    return "".join(out)


def serve_release(idx: LocalIndex, rel: TorchRelease, index: str = "simple") -> None:
    """Wheels on the default index that agree with a torch.toml row: its Pythons per platform, tags, glibc and macOS
    floors, and a METADATA with its triton pin and CUDA runtime, torch/version.py saying its build."""
    tri = f"triton{rel.triton_requirement}; platform_system == 'Linux' and python_version < '{rel.triton_python_below}'"
    cuda = rel.pypi_backend or "cpu"
    runtime = f"cuda-toolkit[cudart]=={cuda[2:-1]}.{cuda[-1]}.2; platform_system == 'Linux'" if cuda != "cpu" else None
    for plat in rel.pypi_backends:
        tag = _PLAT_TAG[plat].format(g=(rel.glibc.get(plat) or "2.28").replace(".", "_"),
                                     m=(rel.macos_floor(plat, None) or "11.0").replace(".", "_"))
        pys = list(rel.pythons(plat)) + (list(rel.free_threaded) if plat == "linux_x86_64" else [])
        for py in pys:
            cp = "cp" + py.replace(".", "").rstrip("t")
            abi = cp + ("t" if py.endswith("t") else "")
            linux = plat.startswith("linux")
            idx.add(index, "torch", rel.version, tag=f"{cp}-{abi}-{tag}",
                    requires=((tri,) if linux else ()) + ((runtime,) if linux and runtime else ()),
                    modules={"torch/__init__.py": "", "torch/version.py": f"cuda = {cuda[2:-1] + '.' + cuda[-1]!r}\n"
                             if linux and cuda != "cpu" else "cuda = None\n"})


@pytest.fixture(scope="module")
def rel() -> TorchRelease:
    r = load_matrix().torch_release(REL)
    assert r is not None
    return r


def compat_check(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["compat", "check", *args])
    return r.exit_code, r.output


def test_a_stale_compat_fails_and_names_the_releases_it_lacks(tmp_path: Path, rel: TorchRelease) -> None:
    m = load_matrix()
    newest, top_triton = m.torch[0].version, max((t.version for t in m.triton), key=lambda v: tuple(map(int, v.split("."))))
    idx = LocalIndex(tmp_path / "idx")
    serve_release(idx, rel)
    idx.add("simple", "torch", newest, tag="cp312-cp312-manylinux_2_28_x86_64")
    idx.add("simple", "triton", top_triton, tag="cp312-cp312-manylinux_2_28_x86_64")
    idx.start()
    try:
        stale = compat_copy(tmp_path, "https://download.pytorch.org/whl/{backend}", drop_torch=(newest,),
                            drop_triton=(top_triton,))
        code, out = compat_check("--compat", str(stale), "--index", idx.index_url("simple"), "--versions", REL,
                                 "--wheels", "none", "--no-vendor")
        fresh_code, fresh = compat_check("--index", idx.index_url("simple"), "--versions", REL, "--wheels", "none",
                                         "--no-vendor")
    finally:
        idx.stop()
    assert code == 1, out
    lines = out.splitlines()
    assert (f"torch {newest}: on the index, not in compat/torch.toml (`tritonlock compat check --new` drafts its rows)"
            in lines)
    assert f"triton {top_triton}: on the index, not in compat/triton.toml (`tritonlock compat check --new` drafts its rows)" \
        in lines
    assert lines[-1].startswith("2 disagreement(s) with ")  # the 2.13.0 row itself agrees with its wheels
    assert "compared: 1 torch releases (tags, METADATA)" in out
    # the shipped compat/ has both: the same index agrees with it, and it says what it left out
    assert fresh_code == 0, fresh
    assert "left out: CUDA variants, ROCm and XPU rows and arch lists on PyTorch's indexes (--no-vendor)" in fresh
    assert fresh.splitlines()[-1].endswith("everything listed was checked")


def test_an_index_that_does_not_answer_is_no_all_clear(tmp_path: Path, rel: TorchRelease) -> None:
    idx = LocalIndex(tmp_path / "idx")
    serve_release(idx, rel)
    idx.start()
    try:
        copy = compat_copy(tmp_path, "http://127.0.0.1:9/whl/{backend}")  # nothing listens on port 9
        args = ("--compat", str(copy), "--index", idx.index_url("simple"), "--versions", REL, "--wheels", "none")
        code, out = compat_check(*args)
        ok_code, accepted = compat_check(*args, "--allow-unchecked")
        json_code, as_json = compat_check(*args, "--json")
    finally:
        idx.stop()
    assert code == 7, out
    assert "0 disagreement(s)" not in out and "everything listed was checked" not in out
    assert out.splitlines()[-1].startswith("no disagreement in what was read, but ")
    assert "not an all-clear — exit 7; --allow-unchecked accepts it" in out
    vm = load_vendor_matrix(str(copy))
    doc = json.loads(as_json)
    backends = list(dict.fromkeys([v.backend for v in rel.variants if v.cuda] + [b.backend for b in vm.rocm_builds(REL)]
                                  + ["xpu"]))
    for backend in backends:  # --json lists each row
        assert any(u.startswith(f"{backend} torch {REL}: ") for u in doc["unchecked"]), backend
    # the text says the one cause once: every row of the host that did not answer on one line, named, with the count
    (grouped,) = [x for x in out.splitlines() if "127.0.0.1:9 did not answer" in x]
    n = sum(1 for u in doc["unchecked"] if "127.0.0.1:9" in u)
    assert n >= len(backends) and f"({n} rows on PyTorch's index): 127.0.0.1:9 did not answer for http://127.0.0.1:9/"         in grouped
    assert grouped.startswith(f"not checked: {backends[0]} torch {REL}, ")
    assert len([x for x in out.splitlines() if x.startswith("not checked: ")]) < n
    assert "could not be checked" in out.splitlines()[-1] and f"but {len(doc['unchecked'])} thing(s)" in out
    assert ok_code == 0 and "not checked: " in accepted and "(accepted: --allow-unchecked)" in accepted
    assert json_code == 7 and doc["exit_code"] == 7 and doc["disagreements"] == [] and doc["unchecked"]


def test_what_could_not_be_checked_is_grouped_by_its_cause() -> None:
    """Offline, one unreachable host made 116 of 135 lines: each cause is one line, its rows named (12 at most)."""
    from tritonlock.maintain.compat_check import grouped_unchecked

    why = "pt.example did not answer for https://pt.example/whl/cu130 (cannot reach https://pt.example/whl/cu130/torch/"
    unchecked = (
        "torch 2.14.1: no readable METADATA for linux_x86_64: its pins are unread",
        "torch 2.14.1: no readable METADATA for linux_aarch64: its pins are unread",
        "torch 2.14.0: no readable METADATA for linux_aarch64: its pins are unread",
        "cu130 torch 2.15.0: https://pt.example/whl/cu130 did not answer (cannot reach https://pt.example/whl/cu130/torch/",
        f"cu132 torch 2.15.0: https://pt.example/whl/cu132 was not asked: {why}",
        f"rocm7.14 torch 2.15.0: arch list not read (https://pt.example/whl/rocm7.14 was not asked: {why})",
        "cu126 torch 2.15.0: arch list not read (no linux_x86_64 torch-2.15.0+cu126 wheel on https://other.example/)",
        *(f"cu126 torch 2.{i}.0: https://pt.example/whl/cu126 was not asked: {why}" for i in range(12)),
    )
    assert grouped_unchecked(unchecked, (("pt.example", why),)) == [
        "torch 2.14.1: no readable METADATA for linux_x86_64: its pins are unread",
        "torch 2.14.1, torch 2.14.0: no readable METADATA for linux_aarch64: its pins are unread",
        "cu130 torch 2.15.0, cu132 torch 2.15.0, rocm7.14 torch 2.15.0 (arch list), "
        + ", ".join(f"cu126 torch 2.{i}.0" for i in range(9)) + " and 3 more (--json lists each) (15 rows on "
        f"PyTorch's index): {why}",
        "cu126 torch 2.15.0: arch list not read (no linux_x86_64 torch-2.15.0+cu126 wheel on https://other.example/)"]
    assert grouped_unchecked(unchecked[:1], ()) == [unchecked[0]]


def _wheel(idx: LocalIndex, index: str, version: str, tag: str, files: dict[str, bytes], requires: tuple[str, ...]) -> str:
    """A torch wheel whose torch/lib holds real shared objects (build_wheel writes text modules only)."""
    path = idx.add(index, "torch", version, tag=tag, requires=requires, modules={"torch/__init__.py": ""})
    buf = io.BytesIO()
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item))
        for name, data in files.items():
            dst.writestr(name, data)
    path.write_bytes(buf.getvalue())
    return path.name


def test_arch_lists_are_read_from_the_wheels_libraries(tmp_path: Path, rel: TorchRelease) -> None:
    """The cu130 wheel's libc10_cuda.so (nvcc: sm_80 cubins, compute_90 PTX) and the rocm7.2 wheel's libtorch_hip.so
    (offload bundles for the row's targets but gfx1103) against the 2.13.0 rows: each difference is a disagreement;
    a row written from the wheel agrees and may say `source = "read from <wheel>"`."""
    vm = load_vendor_matrix()
    b = next(x for x in vm.rocm_builds(REL) if x.backend == "rocm7.2")
    assert "gfx1103" in b.gfx  # the row's inferred target
    cuda_lib = nvcc_so(tmp_path / "nvcc", "libc10_cuda.so", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                       "arch=compute_90,code=compute_90")
    hip_targets = [g for g in b.gfx if g != "gfx1103"]
    hip_lib = gcc_so(tmp_path / "gcc", bundle(*hip_targets[:8]) + bundle(*hip_targets[8:], "gfx942"))
    idx = LocalIndex(tmp_path / "idx")
    serve_release(idx, rel)
    tag = "cp312-cp312-manylinux_2_28_x86_64"
    cu = _wheel(idx, "whl/cu130", f"{REL}+cu130", tag, {"torch/lib/libc10_cuda.so": cuda_lib,
                                                       "torch/lib/libtorch_cpu.so": gcc_so(tmp_path / "cpu")}, ())
    ro = _wheel(idx, "whl/rocm7.2", f"{REL}+rocm7.2", tag, {"torch/lib/libtorch_hip.so": hip_lib},
                (f"triton-rocm=={rel.triton}; platform_system == 'Linux'",))
    idx.start()
    try:
        copy = compat_copy(tmp_path, idx.url + "/whl/{backend}")
        args = ("--index", idx.index_url("simple"), "--versions", REL)
        code, out = compat_check("--compat", str(copy), *args)
        v = next(x for x in rel.variants if x.backend == "cu130" and "linux_x86_64" in x.platforms)
        # written from the wheels: the cu130 row and the rocm7.2 list as read
        (copy / "torch.toml").write_text(_rewrite_variant((copy / "torch.toml").read_text(), REL, "cu130",
                                                          f'archs = ["sm_80"]\nptx = ["sm_90"]\n'
                                                          f'source = "read from {cu}"\n'), encoding="utf-8")
        (copy / "rocm.toml").write_text(_rewrite_rocm((copy / "rocm.toml").read_text(), "2.13", "rocm7.2",
                                                      [g for g in b.gfx if g != "gfx1103"], ro), encoding="utf-8")
        after_code, after = compat_check("--compat", str(copy), *args)
    finally:
        idx.stop()
    assert code == 1, out
    lines = out.splitlines()
    assert (f"cu130 torch {REL}: archs: the wheel's fatbins carry cubins for sm_80, compat has {', '.join(v.archs)} "
            f"(torch/lib/libc10_cuda.so of {cu}; the row may then say source = \"read from {cu}\")") in lines
    assert any(ln.startswith(f"cu130 torch {REL}: ptx: the wheel's fatbins carry PTX for compute_90, compat has none")
               for ln in lines)
    assert any(ln.startswith(f"rocm7.2 torch {REL}: gfx: the wheel's HIP offload bundles carry ")
               and "(the wheel lacks gfx1103)" in ln and f"torch/lib/libtorch_hip.so of {ro}" in ln for ln in lines)
    assert "arch lists read from wheels" in out
    # backends the local index does not serve are said, not skipped
    assert f"not checked: cu126 torch {REL}: arch list not read (no linux_x86_64 torch-{REL}+cu126 wheel on " in out
    assert after_code == 1 and "arch lists read from wheels" in after, after  # other backends still not served
    assert not any(f"cu130 torch {REL}: archs" in ln or f"rocm7.2 torch {REL}: gfx" in ln or
                   f"cu130 torch {REL}: ptx" in ln for ln in after.splitlines()), after


def _rewrite_variant(text: str, version: str, backend: str, facts: str) -> str:
    """torch.toml with the linux_x86_64 `backend` variant of `version` given `facts` for its archs/ptx/source."""
    head, rest = text.split(f'version = "{version}"', 1)
    blocks = re.split(r"(?m)^(?=\[\[)", rest)
    for i, b in enumerate(blocks):
        if b.startswith("[[torch]]"):
            break
        if f'backend = "{backend}"' in b and 'platforms = ["linux_x86_64"]' in b:
            kept = [ln for ln in b.splitlines() if not ln.startswith(("archs =", "ptx =", "source =", "note ="))]
            blocks[i] = "\n".join(kept[:-1] if kept[-1] == "" else kept) + "\n" + facts + "\n"
            break
    return head + f'version = "{version}"' + "".join(blocks)


def _rewrite_rocm(text: str, series: str, backend: str, gfx: list[str], wheel: str) -> str:
    """rocm.toml with one build's gfx list as read from `wheel` (its inferred targets no longer inferred)."""
    start = text.index(f'torch = "{series}"')
    end = text.index("[[rocm]]", start)
    parts = text[start:end].split("  [[rocm.variant]]")
    for i, part in enumerate(parts):
        if f'backend = "{backend}"' in part:
            lines = [ln for ln in part.splitlines() if not ln.startswith(("  gfx_inferred", "  note ="))]
            lines = [f"  gfx = [{', '.join(repr(g).replace(chr(39), chr(34)) for g in gfx)}]" if ln.startswith("  gfx =")
                     else f'  gfx_source = "read from {wheel}"' if ln.startswith("  gfx_source =") else ln
                     for ln in lines]
            parts[i] = "\n".join(lines) + "\n\n"
    return text[:start] + "  [[rocm.variant]]".join(parts) + text[end:]
