"""Check compat/ against the default package index: file tags (Python, platform, glibc), wheel METADATA pins, and
what is inside the wheels (torch/version.py; Triton's bundled ptxas and which GPUs use it), read with HTTP Range."""

from __future__ import annotations

import argparse
import re
import struct
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.version import Version

from tritonlock.errors import TritonlockError
from tritonlock.lock.index import IndexClient, IndexFile, default_index
from tritonlock.native.remotezip import wheel_metadata
from tritonlock.compat.matrix import Matrix, load_matrix
from tritonlock.compat.rows import Ptxas, TorchRelease, TritonRelease
from tritonlock.compat.matrix_vendor import VendorMatrix
from tritonlock.maintain.archs import Indexes, check_archs
from tritonlock.maintain.tags import Wheel, cuda_of, wheels
from tritonlock.maintain.wheels import (WheelPtxas, check_ptxas, ptxas_wheel, read_torch_build,  # noqa: F401
                                        read_wheel_ptxas)

__all__ = ["EXIT_DISAGREES", "EXIT_UNCHECKED", "Index", "Outcome", "WheelPtxas", "Wheel", "check", "check_new_releases",
           "check_ptxas", "check_torch", "check_triton", "check_vendor", "default_index", "main", "ptxas_wheel",
           "read_torch_build", "read_wheel_ptxas", "run", "wheel_metadata", "wheels"]

Index = IndexClient  # the check reads the index through the project's one client


def check_torch(rel: TorchRelease, all_wheels: list[Wheel], index: Index, deep: bool = False) -> list[str]:
    found: list[str] = []
    say = found.append
    mine = [w for w in all_wheels if w.version == Version(rel.version)]
    if not mine:
        return [f"torch {rel.version}: no wheels on the index"]
    pys = sorted({w.python for w in mine if not w.python.endswith("t")}, key=Version)
    fts = sorted({w.python for w in mine if w.python.endswith("t")}, key=lambda s: Version(s[:-1]))
    if pys != list(rel.python):
        say(f"torch {rel.version}: python: index has {pys}, compat has {list(rel.python)}")
    if fts != list(rel.free_threaded):
        say(f"torch {rel.version}: free_threaded: index has {fts}, compat has {list(rel.free_threaded)}")
    plats = {w.platform for w in mine if w.platform}
    for plat in sorted(plats):  # a platform's own Pythons: python_by_platform where they differ from `python`
        on = sorted({w.python for w in mine if w.platform == plat and not w.python.endswith("t")}, key=Version)
        if on != list(rel.pythons(plat)):
            say(f"torch {rel.version}: python_by_platform[{plat}]: index has {on}, compat has {list(rel.pythons(plat))}")
    if plats != set(rel.pypi_backends or {}):
        say(f"torch {rel.version}: platforms: index has {sorted(plats)}, compat pypi_backends has {sorted(rel.pypi_backends)}")
    for plat in sorted(p for p in plats if p.startswith("linux")):
        tag_floor = min((w.glibc for w in mine if w.platform == plat and w.glibc), key=Version)
        have = rel.glibc.get(plat)
        # A curated floor may be stricter than the tag (manylinux1-tagged wheels built on manylinux2014), never looser.
        if have is None or Version(have) < Version(tag_floor) or (Version(tag_floor) >= Version("2.17") and have != tag_floor):
            say(f"torch {rel.version}: glibc[{plat}]: wheel tags say {tag_floor}, compat has {have}")
    for plat in sorted(p for p in plats if p.startswith("macos")):
        # the floor of the regular-ABI wheels, per Python: `macos` for most, `macos_by_python` where one is higher
        tags: dict[str, str] = {}
        for w in mine:
            if w.platform == plat and w.macos and not w.python.endswith("t"):
                tags[w.python] = min(tags.get(w.python, w.macos), w.macos, key=Version)
        for py, floor in sorted(tags.items(), key=lambda x: Version(x[0])):
            have = rel.macos_floor(plat, py)
            if have != floor:
                say(f"torch {rel.version}: macos[{plat}] for Python {py}: wheel tags say {floor}, compat has {have}")
    for plat in ("linux_x86_64", "linux_aarch64"):
        first = min((w.file for w in mine if w.platform == plat), key=lambda f: f.filename, default=None)
        meta = next((m for w in mine if w.platform == plat and (m := index.metadata(w.file))), None)
        if meta is None and deep and first is not None:
            meta = wheel_metadata(index, first, deep)
        if meta is None:
            say(f"note: torch {rel.version}: no readable METADATA for {plat}: its pins are unread")
            continue
        reqs = [Requirement(line.split(":", 1)[1].strip()) for line in meta.splitlines()
                if line.startswith("Requires-Dist:")]
        machine = plat.split("_", 1)[1]
        env = {"platform_system": "Linux", "platform_machine": machine, "sys_platform": "linux",
               "python_version": rel.python[0]}
        active = [r for r in reqs if r.marker is None or r.marker.evaluate(env)]
        backend = cuda_of(active) or "cpu"
        if rel.pypi_backends.get(plat) != backend:
            say(f"torch {rel.version}: pypi_backends[{plat}]: METADATA says {backend}, compat has {rel.pypi_backends.get(plat)}")
        if plat == "linux_x86_64" and rel.pypi_backend != backend:
            say(f"torch {rel.version}: pypi_backend: METADATA says {backend}, compat has {rel.pypi_backend}")
        triton = next((r for r in reqs if r.name == "triton"), None)
        spec = str(triton.specifier) if triton else ""
        # aarch64 wheels of early releases carry no triton line at all; the pin is read from the x86_64 wheel.
        if plat == "linux_x86_64" and spec != rel.triton_requirement:
            say(f"torch {rel.version}: triton_requirement: METADATA says {spec!r}, compat has {rel.triton_requirement!r}")
        if (triton is not None and triton in active) != (plat in rel.triton_platforms):
            say(f"torch {rel.version}: triton_platforms: METADATA {plat} wheel {'pulls' if triton in active else 'does not pull'} "
                f"triton, compat has {list(rel.triton_platforms)}")
        below = re.search(r'python_version < "(3\.\d+)"', str(triton.marker)) if triton else None
        if triton is not None and (below.group(1) if below else None) != rel.triton_python_below:
            say(f"torch {rel.version}: triton_python_below: METADATA says {below.group(1) if below else None}, "
                f"compat has {rel.triton_python_below}")
    return found


def check_triton(t: TritonRelease, all_wheels: list[Wheel]) -> list[str]:
    mine = [w for w in all_wheels if w.version == Version(t.version)]
    if not mine:
        return [f"triton {t.version}: no wheels on the index"]
    found = []
    pys = sorted({w.python for w in mine if not w.python.endswith("t")}, key=Version)
    if pys != list(t.python):
        found.append(f"triton {t.version}: python: index has {pys}, compat has {list(t.python)}")
    plats = sorted({w.platform for w in mine if w.platform}, key=lambda p: p != "linux_x86_64")
    if plats != list(t.platforms):
        found.append(f"triton {t.version}: platforms: index has {plats}, compat has {list(t.platforms)}")
    for plat in plats:
        floor = min((w.glibc for w in mine if w.platform == plat and w.glibc), key=Version)
        if t.glibc.get(plat) != floor:
            found.append(f"triton {t.version}: glibc[{plat}]: wheel tags say {floor}, compat has {t.glibc.get(plat)}")
    return found


def check_inside_torch(rel: TorchRelease, all_wheels: list[Wheel], index: Index) -> list[str]:
    """The backend of PyPI's build per Linux platform, from the wheel's own torch/version.py."""
    found = []
    for plat in ("linux_x86_64", "linux_aarch64"):
        file = min((w.file for w in all_wheels if w.version == Version(rel.version) and w.platform == plat),
                   key=lambda f: f.filename, default=None)
        if file is None:
            continue
        built = read_torch_build(index.session, file)
        if rel.pypi_backends.get(plat) != built:
            found.append(f"torch {rel.version}: pypi_backends[{plat}]: torch/version.py of {file.filename} says "
                         f"{built}, compat has {rel.pypi_backends.get(plat)}")
    return found


def check_inside_ptxas(rows: Iterable[Ptxas], index: Index) -> list[str]:
    found: list[str] = []
    files: dict[str, tuple[IndexFile, ...]] = {}
    for row in rows:
        if row.package not in files:
            files[row.package] = index.files(row.package)
        file = ptxas_wheel(files[row.package], row.package, row.version, row.platform)
        if file is None:
            found.append(f"ptxas {row.package} {row.version} {row.platform}: no such wheel on the index")
            continue
        found += check_ptxas(row, read_wheel_ptxas(index.session, file))
    return found


def run(matrix: Matrix, index: Index, versions: set[str] | None = None, inside: str = "newest") -> list[str]:
    """Every disagreement between compat/ and the index; lines starting "note:" are not failures.

    `inside` says which releases are also checked from inside their wheels (HTTP Range reads: torch/version.py,
    Triton's bundled ptxas): "newest" (the newest torch, triton and triton-windows), "all", or "none".
    """
    torch_files, triton_files = wheels(index.files("torch")), wheels(index.files("triton"))
    found: list[str] = []
    newest = {matrix.torch[0].version} if matrix.torch else set()
    for pkg in ("triton", "triton-windows"):
        mine = [p for p in matrix.ptxas if p.package == pkg and p.platform in ("linux_x86_64", "win_amd64")]
        if mine:
            newest.add(max(mine, key=lambda p: Version(p.version)).version)

    def picked(v: str) -> bool:
        if inside == "none":
            return False
        return v in versions if versions is not None else (inside == "all" or v in newest)

    for rel in matrix.torch:
        if versions is None or rel.version in versions:
            found += check_torch(rel, torch_files, index, deep=picked(rel.version))
    for t in matrix.triton:
        if versions is None or t.version in versions:
            found += check_triton(t, triton_files)
    for rel in matrix.torch:
        if picked(rel.version):
            found += check_inside_torch(rel, torch_files, index)
    rows = [p for p in matrix.ptxas if picked(p.version)
            and (inside == "all" or versions is not None or p.platform in ("linux_x86_64", "win_amd64"))]
    found += check_inside_ptxas(rows, index)
    return found


def check_vendor(matrix: Matrix, make_index: object = None, versions: set[str] | None = None,
                 vm: VendorMatrix | None = None, indexes: Indexes | None = None,
                 counts: Counter[str] | None = None) -> list[str]:
    """compat/rocm.toml and xpu.toml against PyTorch's per-backend indexes: for every release of a series, a
    torch+rocmX.Y / +xpu wheel, tagged as the row says, whose METADATA on each platform requires the row's Triton
    package at the release's pin exactly where the row says it does. What cannot be read is a "note:" line."""
    from tritonlock.compat.matrix_vendor import load_vendor_matrix

    vm = vm or load_vendor_matrix()
    indexes = indexes or Indexes(make=make_index if callable(make_index) else Index)
    counts = Counter() if counts is None else counts
    found: list[str] = []
    builds: list[tuple[str, str, tuple[str, ...], str, tuple[str, ...], tuple[str, ...]]] = []
    builds += [(b.backend, b.torch, b.platforms, b.triton_package, (b.wheel_tag,), ("linux_x86_64",)) for b in vm.rocm]
    builds += [("xpu", x.torch, x.platforms, x.triton_package, (), x.triton_platforms) for x in vm.xpu]
    for backend, series, platforms, pkg, tags, tri_plats in builds:
        rels = [r for r in matrix.torch if ".".join(r.version.split(".")[:2]) == series
                and (versions is None or r.version in versions)]
        if not rels:
            continue
        url = matrix.index_url(backend)
        got = indexes.torch(url)
        if isinstance(got, str):
            found.append(f"note: {backend} torch {', '.join(r.version for r in rels)}: {url} {got}")
            continue
        index, files = got
        for rel in rels:
            local = f"{rel.version}+{backend}"
            mine = [w for w in files if str(w.version) == local]
            if not mine:
                found.append(f"{backend} torch {rel.version}: no torch-{local} wheel on {url}")
                continue
            counts["ROCm/XPU builds"] += 1
            if tags:
                wrong = sorted({w.file.filename for w in mine if not w.file.filename.endswith(f"-{tags[0]}.whl")})
                if wrong:
                    found.append(f"{backend} torch {rel.version}: wheel_tag: compat has {tags[0]}, the index has "
                                 f"{wrong[0]}")
            for plat in platforms:
                first = min((w.file for w in mine if w.platform == plat), key=lambda f: f.filename, default=None)
                if first is None:
                    found.append(f"{backend} torch {rel.version}: platforms: compat has {plat}, the index has no "
                                 f"{plat} wheel of torch-{local}")
                    continue
                found += _vendor_metadata(index, first, backend, rel, plat, pkg, plat in tri_plats)
    return found


def _vendor_metadata(index: Index, file: IndexFile, backend: str, rel: TorchRelease, plat: str, pkg: str,
                     pulls: bool) -> list[str]:
    """The Triton a ROCm/XPU wheel's METADATA requires on its platform, against the row."""
    try:  # the PEP 658 file, else the METADATA member read from inside the wheel (HTTP Range)
        meta = wheel_metadata(index, file, deep=True)
    except (TritonlockError, OSError, ValueError, KeyError, struct.error, zlib.error):
        meta = _small_wheel_metadata(index, file)
    where = f"{backend} torch {rel.version}"
    if meta is None:
        return [f"note: {where}: no readable METADATA for {file.filename}: its Triton pin is unread"]
    reqs = [Requirement(v.strip()) for k, v in (ln.split(":", 1) for ln in meta.splitlines() if ":" in ln)
            if k == "Requires-Dist"]
    env = {"platform_system": "Windows" if plat == "win_amd64" else "Linux", "sys_platform":
           "win32" if plat == "win_amd64" else "linux", "platform_machine": "AMD64" if plat == "win_amd64"
           else "x86_64", "python_version": rel.python[0]}
    tri = [r for r in reqs if r.name.replace("_", "-").lower() in _VENDOR_TRITONS
           and (r.marker is None or r.marker.evaluate(env))]
    out: list[str] = []
    if rel.triton and pulls and not tri:
        out.append(f"{where}: triton_package: the {plat} wheel's METADATA requires no Triton, compat has {pkg}")
    if tri and not pulls:
        out.append(f"{where}: triton_platforms: the {plat} wheel's METADATA requires {tri[0].name}, compat says its "
                   f"{plat} wheels pin no Triton")
    for r in tri:
        name = r.name.replace("_", "-").lower()
        if name != pkg:
            out.append(f"{where}: triton_package: METADATA says {name}, compat has {pkg}")
        pins = {s.version.split("+")[0] for s in r.specifier}
        if rel.triton and pins and rel.triton not in pins:
            out.append(f"{where}: triton: METADATA pins {sorted(pins)}, compat has {rel.triton}")
    return out


_VENDOR_TRITONS = ("triton-rocm", "pytorch-triton-rocm", "triton-xpu", "pytorch-triton-xpu")


def check_cuda_variants(matrix: Matrix, indexes: Indexes, versions: set[str] | None,
                        counts: Counter[str]) -> list[str]:
    """compat/torch.toml's [[torch.variant]] rows against PyTorch's per-backend indexes: a torch-X+cuXYZ wheel for
    every platform the row lists."""
    found: list[str] = []
    for rel in matrix.torch:
        if versions is not None and rel.version not in versions:
            continue
        for v in rel.variants:
            if not v.cuda:
                continue
            url = matrix.index_url(v.backend)
            got = indexes.torch(url)
            if isinstance(got, str):
                found.append(f"note: {v.backend} torch {rel.version}: {url} {got}")
                continue
            local = f"{rel.version}+{v.backend}"
            have = {w.platform for w in got[1] if str(w.version) == local}
            counts["CUDA variants"] += 1
            for plat in v.platforms:
                if plat not in have:
                    found.append(f"{v.backend} torch {rel.version}: platforms: compat has {plat}, {url} has no {plat} "
                                 f"wheel of torch-{local}")
    return found


def check_new_releases(matrix: Matrix, torch_files: list[Wheel], triton_files: list[Wheel]) -> list[str]:
    """Releases the index serves and the matrix lacks (from the oldest release the matrix knows on): each is a
    disagreement, with the way to draft its rows."""
    found: list[str] = []
    for what, files, known, where in (("torch", torch_files, [r.version for r in matrix.torch], "compat/torch.toml"),
                                      ("triton", triton_files, [r.version for r in matrix.triton],
                                       "compat/triton.toml")):
        have = {Version(Version(k).public) for k in known}
        if not have:
            continue
        oldest = min(have)
        served = sorted({Version(w.version.public) for w in files if not w.version.is_prerelease
                         and not w.version.is_devrelease and Version(w.version.public) >= oldest}, reverse=True)
        for v in served:
            if v not in have:
                found.append(f"{what} {v}: on the index, not in {where} (`tritonlock compat check --new` drafts its "
                             "rows)")
    return found


def _small_wheel_metadata(index: object, file: IndexFile) -> str | None:
    """METADATA of a small wheel fetched whole (a server without Range support); None for big or unreadable ones."""
    import io
    import zipfile

    if file.size is None or file.size > 20 << 20:
        return None
    try:
        body = index.session.get(file.url, timeout=60).content  # type: ignore[attr-defined]
        with zipfile.ZipFile(io.BytesIO(body)) as zf:
            name = next((n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
            return zf.read(name).decode("utf-8", "replace") if name else None
    except (OSError, ValueError, zipfile.BadZipFile):
        return None


EXIT_DISAGREES = 1  # a row disagrees with the index or a wheel, or the index serves a release the matrix lacks
EXIT_UNCHECKED = 7  # everything read agrees, but some rows could not be checked (--allow-unchecked accepts that)


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    """What one compat check found: disagreements, what it could not check, and what it compared."""

    index: str
    matrix: str  # the matrix version
    disagreements: tuple[str, ...]
    unchecked: tuple[str, ...]
    compared: tuple[tuple[str, int], ...]  # ("torch releases", 31), ...
    left_out: tuple[str, ...] = ()  # what was not asked for (--versions, --wheels, --no-vendor)
    # the hosts of PyTorch's indexes that did not answer: (host, "HOST did not answer for URL (why)")
    down: tuple[tuple[str, str], ...] = ()

    def exit_code(self, allow_unchecked: bool = False) -> int:
        if self.disagreements:
            return EXIT_DISAGREES
        return EXIT_UNCHECKED if self.unchecked and not allow_unchecked else 0

    def text(self, allow_unchecked: bool = False) -> list[str]:
        lines = list(self.disagreements)
        lines += [f"not checked: {u}" for u in grouped_unchecked(self.unchecked, self.down)]
        lines.append("compared: " + (", ".join(f"{n} {what}" for what, n in self.compared) or "nothing"))
        lines += [f"left out: {x}" for x in self.left_out]
        if self.disagreements:
            lines.append(f"{len(self.disagreements)} disagreement(s) with {self.index} (matrix {self.matrix})")
        elif self.unchecked:
            lines.append(f"no disagreement in what was read, but {len(self.unchecked)} thing(s) could not be checked "
                         f"(matrix {self.matrix}): not an all-clear"
                         + (" (accepted: --allow-unchecked)" if allow_unchecked else
                            f" — exit {EXIT_UNCHECKED}; --allow-unchecked accepts it"))
        else:
            lines.append(f"0 disagreement(s) with {self.index} (matrix {self.matrix}): everything listed was checked")
        return lines

    def as_json(self, allow_unchecked: bool = False) -> dict[str, object]:
        return {"version": 1, "index": self.index, "matrix": self.matrix, "disagreements": list(self.disagreements),
                "unchecked": list(self.unchecked), "compared": dict(self.compared), "left_out": list(self.left_out),
                "exit_code": self.exit_code(allow_unchecked)}


SHOWN = 12  # the rows a grouped "not checked" line names (--json lists every one)


def grouped_unchecked(unchecked: tuple[str, ...], down: tuple[tuple[str, str], ...]) -> list[str]:
    """What could not be checked, one line per cause: every row whose index is on a host that did not answer in one
    line naming the host once (offline, that is most of them), and rows with the same words after their name in one
    line; the rest as they are. The count and the order of first appearance are kept."""
    def name(u: str) -> str:
        subject, _, rest = u.partition(": ")
        return subject + (" (arch list)" if rest.startswith("arch list not read") else "")

    def listed(names: list[str]) -> str:
        shown = ", ".join(names[:SHOWN])
        return shown + (f" and {len(names) - SHOWN} more (--json lists each)" if len(names) > SHOWN else "")

    groups: dict[str, list[str]] = {}  # a cause -> the rows' names
    heads: dict[str, str] = {}
    for u in unchecked:
        host = next((h for h, _ in down if f"{h} did not answer" in u or f"//{h}/" in u and "did not answer" in u),
                    None)
        if host is not None:
            key = f"host {host}"
            heads.setdefault(key, dict(down)[host])
            groups.setdefault(key, []).append(name(u))
            continue
        subject, sep, rest = u.partition(": ")
        key = f"words {rest}" if sep else f"line {u}"
        heads.setdefault(key, rest if sep else u)
        groups.setdefault(key, []).append(subject if sep else u)
    out = []
    for key, names in groups.items():
        if key.startswith("host "):
            n = len(names)
            out.append(f"{listed(names)} ({n} row{'s' if n > 1 else ''} on PyTorch's index): {heads[key]}")
        elif key.startswith("words ") and len(names) > 1:
            out.append(f"{listed(names)}: {heads[key]}")
        else:
            out.append(f"{names[0]}: {heads[key]}" if key.startswith("words ") else names[0])
    return out


def check(matrix: Matrix, index: Index, *, versions: set[str] | None = None, inside: str = "newest",
          vendor: bool = True, compat: str | None = None, make_index: object = None) -> Outcome:
    """compat/ against the default index, PyTorch's per-backend indexes and (`inside`) the wheels themselves."""
    from tritonlock.compat.matrix_vendor import load_vendor_matrix

    counts: Counter[str] = Counter()
    torch_files, triton_files = wheels(index.files("torch")), wheels(index.files("triton"))
    found = check_new_releases(matrix, torch_files, triton_files)
    counts["torch releases (tags, METADATA)"] = sum(1 for r in matrix.torch if versions is None or r.version in versions)
    counts["triton releases (tags)"] = sum(1 for r in matrix.triton if versions is None or r.version in versions)
    found += run(matrix, index, versions, inside=inside)
    counts["ptxas rows (read from wheels)"] = len(_picked_ptxas(matrix, versions, inside))
    left: list[str] = []
    if versions is not None:
        left.append(f"releases other than {', '.join(sorted(versions))} (--versions)")
    if vendor:
        vm = load_vendor_matrix(compat)
        indexes = Indexes(make=make_index if callable(make_index) else Index)
        found += check_cuda_variants(matrix, indexes, versions, counts)
        found += check_vendor(matrix, versions=versions, vm=vm, indexes=indexes, counts=counts)
        picked = [r for r in matrix.torch if _picked(matrix, r.version, versions, inside)]
        found += check_archs(matrix, vm, picked, indexes, counts)
        if inside != "all" and versions is None:
            left.append("arch lists of releases other than the newest (--wheels all reads every wheel's)")
    else:
        left.append("CUDA variants, ROCm and XPU rows and arch lists on PyTorch's indexes (--no-vendor)")
    if inside == "none":
        left.append("everything inside the wheels (--wheels none)")
    bad = tuple(f for f in found if not f.startswith("note:"))
    unchecked = tuple(dict.fromkeys(f[len("note: "):] for f in found if f.startswith("note:")))
    compared = tuple((k, n) for k, n in counts.items() if n)
    down = tuple(sorted((indexes.down or {}).items())) if vendor else ()
    return Outcome(index=index.url, matrix=matrix.version, disagreements=bad, unchecked=unchecked, compared=compared,
                   left_out=tuple(left), down=down)


def _picked(matrix: Matrix, version: str, versions: set[str] | None, inside: str) -> bool:
    if inside == "none":
        return False
    if versions is not None:
        return version in versions
    return inside == "all" or bool(matrix.torch) and version == matrix.torch[0].version


def _picked_ptxas(matrix: Matrix, versions: set[str] | None, inside: str) -> list[Ptxas]:
    newest = set()
    for pkg in ("triton", "triton-windows"):
        mine = [p for p in matrix.ptxas if p.package == pkg and p.platform in ("linux_x86_64", "win_amd64")]
        if mine:
            newest.add(max(mine, key=lambda p: Version(p.version)).version)
    if inside == "none":
        return []
    return [p for p in matrix.ptxas if (p.version in versions if versions is not None else
                                        (inside == "all" or p.version in newest))
            and (inside == "all" or versions is not None or p.platform in ("linux_x86_64", "win_amd64"))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--compat", help="compat directory (default: the shipped one)")
    ap.add_argument("--index", help="default index (default: PIP_INDEX_URL / pip config / pip's default)")
    ap.add_argument("--versions", help="comma-separated torch/triton versions to check (default: all)")
    ap.add_argument("--wheels", choices=("newest", "all", "none"), default="newest",
                    help="which releases to also check from inside their wheels (torch/version.py, Triton's bundled "
                         "ptxas, the GPU code of torch's libraries; HTTP Range reads): the newest (default), all, or "
                         "none")
    ap.add_argument("--no-vendor", action="store_true",
                    help="leave out PyTorch's per-backend indexes (CUDA variants, ROCm and XPU rows, arch lists)")
    ap.add_argument("--allow-unchecked", action="store_true",
                    help=f"exit 0, not {EXIT_UNCHECKED}, when all that was read agrees but some rows could not be read")
    args = ap.parse_args(argv)
    matrix = load_matrix(args.compat)
    index = Index(args.index or default_index())
    out = check(matrix, index, versions=set(args.versions.split(",")) if args.versions else None, inside=args.wheels,
                vendor=not args.no_vendor, compat=args.compat)
    from tritonlock._term import clean
    from tritonlock._urls import redact

    for line in out.text(args.allow_unchecked):  # (words from an index: no control character shown raw)
        print(clean(redact(line)))
    return out.exit_code(args.allow_unchecked)


if __name__ == "__main__":
    raise SystemExit(main())
