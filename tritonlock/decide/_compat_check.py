"""Check compat/ against the default package index: file tags (Python, platform, glibc), wheel METADATA pins, and
what is inside the wheels (torch/version.py; Triton's bundled ptxas and which GPUs use it), read with HTTP Range."""

from __future__ import annotations

import argparse
import re
import struct
import sys
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from tritonlock.errors import TritonlockError
from tritonlock.lock.remotezip import RemoteZip
from tritonlock.lock.index import IndexClient, IndexFile, default_index
from tritonlock.decide.matrix import Matrix, Ptxas, TorchRelease, TritonRelease, load_matrix

Index = IndexClient  # the check reads the index through the project's one client


@dataclass(frozen=True)
class Wheel:
    version: Version
    python: str  # "3.12" or "3.13t"
    platform: str | None  # tritonlock platform name, None for ones the matrix does not track
    glibc: str | None
    file: IndexFile
    macos: str | None = None  # the macOS floor of a macosx_X_Y tag: "14.0"


def _platform(tag: str) -> tuple[str | None, str | None]:
    """(tritonlock platform, glibc floor) of a wheel platform tag; manylinux1 -> 2.5, manylinux2014 -> 2.17."""
    if tag.startswith("win_amd64"):
        return "win_amd64", None
    if tag.startswith("macosx") and tag.endswith("arm64"):
        return "macos_arm64", None
    if tag.startswith("macosx") and tag.endswith("x86_64"):
        return "macos_x86_64", None
    m = re.match(r"manylinux(?:_(\d+)_(\d+)|(2014)|(2010)|(1))_(x86_64|aarch64)$", tag)
    if not m:
        return None, None
    glibc = f"2.{m.group(2)}" if m.group(1) else "2.17" if m.group(3) else "2.12" if m.group(4) else "2.5"
    return f"linux_{m.group(6)}", glibc


def wheels(files: Iterable[IndexFile]) -> list[Wheel]:
    out = []
    for f in files:
        if not f.filename.endswith(".whl") or f.yanked:
            continue
        _, version, _, tags = parse_wheel_filename(f.filename)
        for tag in tags:
            plat, glibc = _platform(tag.platform)
            mac = re.match(r"macosx_(\d+)_(\d+)_", tag.platform)
            macos = f"{mac.group(1)}.{mac.group(2)}" if mac else None
            ft = tag.abi.endswith("t") and tag.abi.startswith("cp")
            py = f"{tag.interpreter[2]}.{tag.interpreter[3:]}" + ("t" if ft else "")
            if tag.abi == "abi3":  # one wheel for this Python and every later 3.x
                out += [Wheel(version, f"3.{m}", plat, glibc, f, macos) for m in range(int(tag.interpreter[3:]), 16)]
            elif tag.interpreter.startswith("cp"):
                out.append(Wheel(version, py, plat, glibc, f, macos))
    return out


def _cuda_of(reqs: list[Requirement]) -> str | None:
    """CUDA of a build from its runtime pins: nvidia-cuda-runtime-cu12==12.4.127 or cuda-toolkit[...]==13.0.2."""
    for r in reqs:
        if r.name in ("cuda-toolkit",) or re.fullmatch(r"nvidia-cuda-runtime(-cu\d+)?", r.name):
            spec = next(iter(r.specifier), None)
            if spec is not None:
                major, minor = spec.version.split(".")[:2]
                return f"cu{major}{minor}"
    return None


def wheel_metadata(index: Index, file: IndexFile, deep: bool) -> str | None:
    """A wheel's METADATA: the PEP 658 file beside it, else (deep) read from inside the wheel with Range requests."""
    meta = index.metadata(file)
    if meta is None and deep:
        z = RemoteZip(index.session, file.url, file.size)
        name = next((n for n in z.members() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
        meta = z.read(name).decode("utf-8", "replace") if name else None
    return meta


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
            say(f"note: torch {rel.version}: no readable METADATA for {plat}; pins not checked")
            continue
        reqs = [Requirement(line.split(":", 1)[1].strip()) for line in meta.splitlines()
                if line.startswith("Requires-Dist:")]
        machine = plat.split("_", 1)[1]
        env = {"platform_system": "Linux", "platform_machine": machine, "sys_platform": "linux",
               "python_version": rel.python[0]}
        active = [r for r in reqs if r.marker is None or r.marker.evaluate(env)]
        backend = _cuda_of(active) or "cpu"
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


def check_vendor(matrix: Matrix, make_index: object = None, versions: set[str] | None = None) -> list[str]:
    """compat/rocm.toml and xpu.toml against PyTorch's per-backend indexes: for every release of a series, a
    torch+rocmX.Y / +xpu wheel for each Python, tagged as the row says, whose METADATA requires the row's Triton
    package at the release's pin. An index that cannot be reached gives one "note:" line (not a failure)."""
    from tritonlock.errors import TritonlockError
    from tritonlock.decide.matrix_vendor import load_vendor_matrix

    vm = load_vendor_matrix()
    new = make_index if callable(make_index) else Index
    found: list[str] = []
    builds: list[tuple[str, str, tuple[str, ...], str, tuple[str, ...]]] = []  # backend, series, platforms, pkg, tags
    builds += [(b.backend, b.torch, b.platforms, b.triton_package, (b.wheel_tag,)) for b in vm.rocm]
    builds += [("xpu", x.torch, x.platforms, x.triton_package, ()) for x in vm.xpu]
    clients: dict[str, object] = {}
    for backend, series, platforms, pkg, tags in builds:
        rels = [r for r in matrix.torch if ".".join(r.version.split(".")[:2]) == series
                and (versions is None or r.version in versions)]
        if not rels:
            continue
        url = matrix.index_url(backend)
        if url not in clients:
            try:
                index = new(url)
                clients[url] = wheels(index.files("torch"))
                clients[url + "#client"] = index
            except TritonlockError as err:
                clients[url] = None
                found.append(f"note: {url}: not checked ({str(err)[:160]})")
        files = clients[url]
        if files is None:
            continue
        index = clients[url + "#client"]
        for rel in rels:
            local = f"{rel.version}+{backend}"
            mine = [w for w in files if str(w.version) == local]  # type: ignore[attr-defined]
            if not mine:
                found.append(f"{backend} torch {rel.version}: no torch-{local} wheel on {url}")
                continue
            if tags:
                wrong = sorted({w.file.filename for w in mine if not w.file.filename.endswith(f"-{tags[0]}.whl")})
                if wrong:
                    found.append(f"{backend} torch {rel.version}: wheel_tag: compat has {tags[0]}, the index has "
                                 f"{wrong[0]}")
            try:  # the PEP 658 file, else the METADATA member read from inside the wheel (HTTP Range)
                meta = wheel_metadata(index, mine[0].file, deep=True)  # type: ignore[arg-type]
            except (TritonlockError, OSError, ValueError, KeyError, struct.error, zlib.error):
                meta = _small_wheel_metadata(index, mine[0].file)
            if meta is None:
                found.append(f"note: {backend} torch {rel.version}: no METADATA beside {mine[0].file.filename}")
                continue
            reqs = [Requirement(v.strip()) for k, v in (ln.split(":", 1) for ln in meta.splitlines() if ":" in ln)
                    if k == "Requires-Dist"]
            tri = [r for r in reqs if r.name.replace("_", "-").lower() in ("triton-rocm", "pytorch-triton-rocm",
                                                                          "triton-xpu", "pytorch-triton-xpu")]
            if rel.triton and not tri:
                found.append(f"{backend} torch {rel.version}: triton_package: METADATA requires no Triton, compat "
                             f"has {pkg}")
            for r in tri:
                name = r.name.replace("_", "-").lower()
                if name != pkg:
                    found.append(f"{backend} torch {rel.version}: triton_package: METADATA says {name}, compat has {pkg}")
                pins = {s.version.split("+")[0] for s in r.specifier}
                if rel.triton and pins and rel.triton not in pins:
                    found.append(f"{backend} torch {rel.version}: triton: METADATA pins {sorted(pins)}, compat has "
                                 f"{rel.triton}")
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--compat", help="compat directory (default: the shipped one)")
    ap.add_argument("--index", help="default index (default: PIP_INDEX_URL / pip config / pip's default)")
    ap.add_argument("--versions", help="comma-separated torch/triton versions to check (default: all)")
    ap.add_argument("--wheels", choices=("newest", "all", "none"), default="newest",
                    help="which releases to also check from inside their wheels (torch/version.py, Triton's bundled "
                         "ptxas; HTTP Range reads of a few MB each): the newest torch/triton/triton-windows "
                         "(default), all, or none")
    ap.add_argument("--no-vendor", action="store_true",
                    help="leave out the ROCm and XPU rows (checked against PyTorch's rocm*/xpu indexes)")
    args = ap.parse_args(argv)
    matrix = load_matrix(args.compat)
    index = Index(args.index or default_index())
    found = run(matrix, index, set(args.versions.split(",")) if args.versions else None, inside=args.wheels)
    if not args.no_vendor:
        found += check_vendor(matrix, versions=set(args.versions.split(",")) if args.versions else None)
    from tritonlock._term import clean
    from tritonlock._urls import redact

    for line in found:  # (words from an index: shown as the CLI shows everything, no control character raw)
        print(clean(redact(line)))
    bad = [f for f in found if not f.startswith("note:")]
    print(clean(redact(f"{len(bad)} disagreement(s) with {index.url} (matrix {matrix.version})")), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())


# --- inside the wheels ---------------------------------------------------------------------------------------

_RELEASE = re.compile(rb"Cuda compilation tools, release (\d+\.\d+), V(\d+\.\d+\.\d+)")


@dataclass(frozen=True)
class WheelPtxas:
    """What one Triton wheel really ships: its ptxas binaries' CUDA versions and which GPUs use which."""

    url: str
    sha256: str | None
    ptxas: str | None  # "12.9.86"
    blackwell: str | None
    blackwell_from: str | None  # compute capability, from compiler.py's get_ptxas
    blackwell_env: str | None
    read_bytes: int


def _blackwell_from(compiler: str, windows: bool) -> str | None:
    """From which compute capability get_ptxas picks ptxas-blackwell ("10.0" for `arch >= 100`), or None."""
    m = re.search(r"^def get_ptxas\(.*?(?=^\S)", compiler, re.M | re.S)
    if not m:
        return None  # triton <= 3.2: one ptxas, found by _path_to_binary / path_to_ptxas
    body = "\n".join(line.split("#", 1)[0] for line in m.group(0).splitlines())
    if "blackwell" not in body or (windows and 'os.name == "nt"' in body):
        return None
    ge, lt = re.search(r"arch\s*>=\s*(\d+)", body), re.search(r"arch\s*<\s*(\d+)", body)
    found = ge or lt
    if not found:
        return None
    n = int(found.group(1))
    return f"{n // 10}.{n % 10}"


def read_wheel_ptxas(session: object, file: IndexFile) -> WheelPtxas:
    """Read a triton / triton-windows wheel's bundled ptxas versions and its ptxas selection rule."""
    z = RemoteZip(session, file.url, file.size)
    names = z.members()
    windows = "win_amd64" in file.filename
    exe = ".exe" if windows else ""
    bin_dir = next((d for d in ("triton/backends/nvidia/bin/", "triton/third_party/cuda/bin/")
                    if d + "ptxas" + exe in names), None)

    def version(member: str) -> str | None:
        if bin_dir is None or bin_dir + member not in names:
            return None
        m = _RELEASE.search(z.read(bin_dir + member, until=_RELEASE))
        return m.group(2).decode() if m else None

    ptxas, blackwell = version("ptxas" + exe), version("ptxas-blackwell" + exe)
    rule = env = None
    if "triton/backends/nvidia/compiler.py" in names:
        compiler = z.read("triton/backends/nvidia/compiler.py").decode("utf-8", "replace")
        rule = _blackwell_from(compiler, windows)
        if rule is not None:
            knobs = z.read("triton/knobs.py").decode("utf-8", "replace") if "triton/knobs.py" in names else ""
            # knobs.env_nvidia_tool: f"TRITON_{binary.upper().replace('-', '_')}_PATH"; before knobs (3.3),
            # _path_to_binary read f"TRITON_{binary.upper()}_PATH", i.e. TRITON_PTXAS-BLACKWELL_PATH.
            env = ("TRITON_PTXAS_BLACKWELL_PATH" if "replace('-', '_')" in knobs or 'replace("-", "_")' in knobs
                   else "TRITON_PTXAS-BLACKWELL_PATH")
    return WheelPtxas(url=file.url, sha256=file.sha256, ptxas=ptxas, blackwell=blackwell if rule else None,
                      blackwell_from=rule if blackwell else None, blackwell_env=env if blackwell else None,
                      read_bytes=z.bytes_read)


def ptxas_wheel(files: Iterable[IndexFile], package: str, version: str, platform: str) -> IndexFile | None:
    """The wheel a [[ptxas]] row is read from: the first (by name) for that release and platform."""
    mine = [w for w in wheels(files) if str(w.version) == str(Version(version)) and w.platform == platform]
    return min((w.file for w in mine), key=lambda f: f.filename, default=None)


def check_ptxas(row: Ptxas, got: WheelPtxas) -> list[str]:
    found = []
    where = f"ptxas {row.package} {row.version} {row.platform}"
    for key, want, have in (("ptxas", row.ptxas, got.ptxas), ("blackwell", row.blackwell, got.blackwell),
                            ("blackwell_from", row.blackwell_from, got.blackwell_from),
                            ("blackwell_env", row.blackwell_env, got.blackwell_env)):
        if want != have:
            found.append(f"{where}: {key}: the wheel says {have}, compat has {want}")
    if got.sha256 and got.sha256 not in row.source:
        found.append(f"{where}: source: names another file than {got.url} (sha256 {got.sha256})")
    return found


def read_torch_build(session: object, file: IndexFile) -> str:
    """The backend a torch wheel is built for, from its own torch/version.py ("cu132", "cpu")."""
    z = RemoteZip(session, file.url, file.size)
    text = z.read("torch/version.py").decode("utf-8", "replace")
    m = re.search(r"^cuda\b[^=\n]*=\s*(?:'([\d.]+)'|\"([\d.]+)\"|None)", text, re.M)
    cuda = (m.group(1) or m.group(2)) if m else None
    return "cu" + "".join(cuda.split(".")[:2]) if cuda else "cpu"


# --- release day: draft rows for releases the index has and the matrix lacks ---------------------------------


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
            cuda = _cuda_of(reqs)
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
