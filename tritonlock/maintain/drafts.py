"""Release day: draft compat/ rows for the torch and Triton releases the index has and the matrix lacks, each fact
marked `inferred:` with where it was read (`tritonlock compat check --new`)."""

from __future__ import annotations

from collections.abc import Iterable

from packaging.requirements import Requirement
from packaging.version import Version

from tritonlock.errors import TritonlockError
from tritonlock.compat.matrix import Matrix, load_matrix
from tritonlock.compat.rows import TritonRelease
from tritonlock.lock.index import IndexClient as Index
from tritonlock.lock.index import default_index
from tritonlock.native.remotezip import wheel_metadata
from tritonlock.maintain.tags import Wheel, cuda_of, wheels
from tritonlock.maintain.wheels import read_torch_build, read_wheel_ptxas


def _newer(files: list[Wheel], known: Iterable[str]) -> list[Version]:
    known_v = [Version(Version(k).public) for k in known]
    top = max(known_v) if known_v else None
    return sorted({Version(w.version.public) for w in files
                   if not w.version.is_prerelease and not w.version.is_devrelease
                   and (top is None or Version(w.version.public) > top)}, reverse=True)


def _toml_list(items: Iterable[str]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


def _facts_from_tags(mine: list[Wheel]) -> tuple[list[str], list[str], dict[str, str], dict[str, str]]:
    pys = sorted({w.python for w in mine if not w.python.endswith("t")}, key=Version)
    fts = sorted({w.python for w in mine if w.python.endswith("t")}, key=lambda s: Version(s[:-1]))
    glibc: dict[str, str] = {}
    macos: dict[str, str] = {}
    for w in mine:
        if w.platform and w.glibc:
            glibc[w.platform] = min(glibc.get(w.platform, w.glibc), w.glibc, key=Version)
        if w.platform and w.macos:
            macos[w.platform] = min(macos.get(w.platform, w.macos), w.macos, key=Version)
    return pys, fts, glibc, macos


def _inline(d: dict[str, str]) -> str:
    return "{ " + ", ".join(f'{k} = "{v}"' for k, v in sorted(d.items())) + " }"


def draft_torch(version: Version, mine: list[Wheel], index: Index) -> list[str]:
    """A [[torch]] row for a release the matrix lacks: what its wheels' tags, METADATA and torch/version.py say, each
    fact marked `inferred:` with where it was read; the CUDA variants on PyTorch's index and the arch lists are not in
    the wheels on this index and are left for the maintainer."""
    pys, fts, glibc, macos = _facts_from_tags(mine)
    lines = ["[[torch]]", f'version = "{version}"',
             f"# inferred: python, free_threaded, glibc, macos from the file tags of {len(mine)} wheel(s) on {index.url}",
             f"python = {_toml_list(pys)}", f"free_threaded = {_toml_list(fts)}"]
    linux = next((w for w in sorted(mine, key=lambda w: w.file.filename) if w.platform == "linux_x86_64"), None)
    source = []
    if linux is not None:
        meta = None
        try:
            meta = wheel_metadata(index, linux.file, deep=True)
        except (OSError, ValueError) as err:
            lines.append(f"# inferred: METADATA not readable ({str(err)[:120]}) — fill triton and pypi_backend by hand")
        if meta:
            reqs = []
            for line in meta.splitlines():
                if line.startswith("Requires-Dist:"):
                    try:
                        reqs.append(Requirement(line.split(":", 1)[1].strip()))
                    except ValueError:
                        continue
            triton = next((r for r in reqs if r.name == "triton"), None)
            if triton is not None:
                spec = next(iter(triton.specifier), None)
                lines.append(f"# inferred: triton from METADATA Requires-Dist: {triton}")
                if spec is not None:
                    lines += [f'triton = "{spec.version}"', f'triton_requirement = "{triton.specifier}"']
            cuda = cuda_of(reqs)
            if cuda:
                lines += ["# inferred: pypi_backend from METADATA's CUDA runtime pin", f'pypi_backend = "{cuda}"']
        try:
            build = read_torch_build(index.session, linux.file)
        except (OSError, ValueError, KeyError, TritonlockError) as err:
            lines.append(f"# inferred: torch/version.py not readable ({str(err)[:120]})")
        else:
            lines.append(f"# inferred: torch/version.py of {linux.file.filename} says the build is {build}")
        source.append(f"{linux.file.url}" + (f"#sha256={linux.file.sha256}" if linux.file.sha256 else "")
                      + " (file tags, METADATA, torch/version.py)")
    lines += [f"glibc = {_inline(glibc)}"] + ([f"macos = {_inline(macos)}"] if macos else [])
    lines.append("# TODO maintainer: [[torch.variant]] rows (backends on PyTorch's index, archs) — RELEASE.md and "
                 "generate_binary_build_matrix.py at the release tag")
    lines.append(f'source = "{"; ".join(source) or index.url + "/torch/ (file tags)"}"')
    return lines


def draft_triton(version: Version, mine: list[Wheel], index: Index, like: TritonRelease | None) -> list[str]:
    pys, _, glibc, _ = _facts_from_tags(mine)
    plats = sorted({w.platform for w in mine if w.platform})
    lines = ["[[triton]]", f'version = "{version}"',
             f"# inferred: python, platforms, glibc from the file tags of {len(mine)} wheel(s) on {index.url}",
             f"python = {_toml_list(pys)}", f"platforms = {_toml_list(plats)}", f"glibc = {_inline(glibc)}"]
    if like is not None:
        lines += [f"# inferred: min_cc, supported_cc copied from triton {like.version} (the wheels do not say) — "
                  "check triton's README Compatibility", f'min_cc = "{like.min_cc}"',
                  f'supported_cc = "{like.supported_cc}"']
    linux = next((w for w in sorted(mine, key=lambda w: w.file.filename) if w.platform == "linux_x86_64"), None)
    lines.append(f'source = "{linux.file.url if linux else index.url + "/triton/"} (file tags)"')
    if linux is not None:
        try:
            got = read_wheel_ptxas(index.session, linux.file)
        except (OSError, ValueError, KeyError, TritonlockError) as err:
            lines.append(f"# inferred: bundled ptxas not readable ({str(err)[:120]})")
        else:
            lines += ["", "[[ptxas]]", 'package = "triton"', f'version = "{version}"', 'platform = "linux_x86_64"',
                      f"# inferred: ptxas versions from the bundled binaries' --version text in {linux.file.filename}"]
            lines += [f'ptxas = "{got.ptxas}"'] if got.ptxas else ["# ptxas: not found in the wheel"]
            if got.blackwell:
                lines += [f'blackwell = "{got.blackwell}"', f'blackwell_from = "{got.blackwell_from}"',
                          f'blackwell_env = "{got.blackwell_env}"']
            lines.append(f'source = "{got.url}' + (f"#sha256={got.sha256}" if got.sha256 else "") + ' (bin/ptxas)"')
    return lines


def draft_new(matrix: Matrix, index: Index) -> tuple[list[str], list[str]]:
    """(draft TOML rows, one-line summaries) for every torch and triton on the index newer than the matrix knows."""
    torch_files, triton_files = wheels(index.files("torch")), wheels(index.files("triton"))
    rows: list[str] = []
    said: list[str] = []
    for v in _newer(torch_files, [r.version for r in matrix.torch]):
        mine = [w for w in torch_files if Version(w.version.public) == v]
        rows += draft_torch(v, mine, index) + [""]
        said.append(f"torch {v}: drafted a [[torch]] row for compat/torch.toml")
    newest = max(matrix.triton, key=lambda t: Version(t.version), default=None)
    for v in _newer(triton_files, [t.version for t in matrix.triton]):
        mine = [w for w in triton_files if Version(w.version.public) == v]
        rows += draft_triton(v, mine, index, newest) + [""]
        said.append(f"triton {v}: drafted [[triton]] and [[ptxas]] rows for compat/triton.toml")
    return rows, said


def main_new(index_url: str | None, compat: str | None = None) -> tuple[str, list[str]]:
    matrix = load_matrix(compat)
    index = Index(index_url or default_index())
    rows, said = draft_new(matrix, index)
    if not rows:
        return "", [f"nothing new: the index ({index.url}) has no torch or triton newer than matrix {matrix.version}"]
    head = [f"# Drafted by `tritonlock compat check --new` against {index.url}, matrix {matrix.version}.",
            "# Every line marked `inferred:` was read by a program, not reviewed: check each against its source,",
            "# fill the TODOs, then move the rows into compat/ and bump [meta].version."]
    return "\n".join(head + [""] + rows), said
