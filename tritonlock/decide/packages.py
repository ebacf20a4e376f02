"""The user's packages in the decision: the fitting torch that gives each package its newest version, and why not."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from tritonlock.errors import ClosureError, ResolveError, TritonlockError
from tritonlock.models import DirectPackage, Intent, LockedPackage, Selection, TargetSpec

if TYPE_CHECKING:
    from tritonlock.lock.index import IndexFile
    from tritonlock.decide.matrix import Matrix

Compile = Callable[..., tuple[LockedPackage, ...]]

# How many times a compile may land on a torch the matrix does not know (a release newer than the matrix, or a
# patch it lacks) before the decision gives up on that index: each one is excluded and uv asked again.
_UNKNOWN_TORCH_RETRIES = 3


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def _version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def user_requirements(intent: Intent) -> list[Requirement]:
    """The intent's packages as requirements (the intent checked them); URL requirements have no 'newest'."""
    return list(_parsed(intent.packages))  # (parsed once per intent, not once per target: 50,000 packages)


@functools.lru_cache(maxsize=8)
def _parsed(packages: tuple[str, ...]) -> tuple[Requirement, ...]:
    out: list[Requirement] = []
    for text in packages:
        try:
            out.append(Requirement(text))
        except InvalidRequirement:
            continue
    return tuple(out)


def exact_torch(intent: Intent) -> bool:
    """torch = "==2.13.0" (or a local pin, "==2.13.0+cpu"): nothing for the packages to choose."""
    try:
        specs = list(SpecifierSet(intent.torch)) if intent.torch else []
    except InvalidSpecifier:
        return False
    return len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version


def torch_spec(versions: Iterable[str], known: Iterable[str]) -> str:
    """A specifier admitting exactly `versions` among the `known` releases (and, between them, nothing the matrix
    knows otherwise): ">=2.9.0,<=2.14.0,!=2.10.0"."""
    vs = sorted({Version(v) for v in versions})
    if len(vs) == 1:
        return f"=={vs[0]}"
    lo, hi = vs[0], vs[-1]
    holes = sorted({Version(k) for k in known if lo < Version(k) < hi} - set(vs))
    return ",".join([f">={lo}", f"<={hi}"] + [f"!={h}" for h in holes])


# --- the target as markers and wheel tags see it -------------------------------------------------------------------

def marker_env(target: TargetSpec, python: str) -> dict[str, str]:
    """PEP 508 marker values of the target machine (not this one)."""
    system = {"linux": "Linux", "windows": "Windows", "macos": "Darwin"}.get(target.os, "Linux")
    machine = target.arch
    if target.os == "windows":
        machine = "AMD64" if target.arch == "x86_64" else "ARM64"
    elif target.os == "macos":
        machine = "arm64"
    return {"python_version": python, "python_full_version": f"{python}.0", "implementation_name": "cpython",
            "implementation_version": f"{python}.0", "platform_python_implementation": "CPython",
            "sys_platform": {"Linux": "linux", "Windows": "win32", "Darwin": "darwin"}[system],
            "platform_system": system, "os_name": "nt" if system == "Windows" else "posix",
            "platform_machine": machine, "platform_release": "", "platform_version": "", "extra": ""}


def _platform_fits(platform: str, target: TargetSpec) -> bool:
    import re

    if platform == "any":
        return True
    if target.os == "windows":
        return platform == ("win_amd64" if target.arch == "x86_64" else "win_arm64")
    if target.os == "macos":
        m = re.fullmatch(r"macosx_(\d+)_(\d+)_(\w+)", platform)
        if not m or m[3] not in ("arm64", "universal2"):
            return False
        return target.macos is None or (int(m[1]), int(m[2])) <= _mm(target.macos)
    arch = target.arch
    legacy = {f"manylinux1_{arch}": (2, 5), f"manylinux2010_{arch}": (2, 12), f"manylinux2014_{arch}": (2, 17),
              f"linux_{arch}": (0, 0)}
    if platform in legacy:
        glibc = legacy[platform]
    else:
        m = re.fullmatch(rf"manylinux_(\d+)_(\d+)_{re.escape(arch)}", platform)
        if not m:
            return False
        glibc = (int(m[1]), int(m[2]))
    return target.glibc is None or glibc <= _mm(target.glibc)


def _mm(version: str) -> tuple[int, int]:
    parts = (version.split(".") + ["0"])[:2]
    try:
        return int(parts[0]), int(parts[1])
    except ValueError:
        return (0, 0)


def file_fits(filename: str, target: TargetSpec, python: str) -> bool:
    """Whether a wheel installs on the target's Python and platform (an sdist always can, by building it)."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    if not filename.endswith(".whl"):
        return True
    try:
        _, _, _, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return False
    major, minor = _mm(python)
    cp = f"cp{major}{minor}"
    for t in tags:
        if t.interpreter.startswith("cp") and t.abi == "abi3":
            try:
                ok_interp = int(t.interpreter[3:] or 0) <= minor and t.interpreter[2:3] == str(major)
            except ValueError:
                ok_interp = False
        else:
            ok_interp = t.interpreter in (cp, f"py{major}{minor}", f"py{major}") and t.abi in ("none", cp)
        if ok_interp and _platform_fits(t.platform, target):
            return True
    return False


# --- what an index says of a package ------------------------------------------------------------------------------

def _file_version(filename: str) -> Version | None:
    from packaging.utils import (InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename,
                                 parse_wheel_filename)

    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        if filename.endswith((".tar.gz", ".zip")):
            return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return None


class Facts:
    """Index facts the decision explains itself with: files per project, metadata per release (cached per run)."""

    def __init__(self) -> None:
        import threading

        self._files: dict[tuple[str, str], Future[tuple[IndexFile, ...] | None]] = {}
        self._meta: dict[tuple[str, str, str], str | None] = {}
        self._lock = threading.Lock()

    def files(self, index: str, name: str) -> tuple[IndexFile, ...] | None:
        """None when the index cannot be asked (the explanation then says less, never something false). Threads
        asking for the same page wait for one request."""
        key = (index, canonicalize_name(name))
        with self._lock:
            future = self._files.get(key)
            mine = future is None
            if future is None:
                future = self._files[key] = Future()
        if mine:
            from tritonlock.lock.index import project_files

            try:
                future.set_result(project_files(index, name))
            except (TritonlockError, OSError, ValueError):
                future.set_result(None)
            except BaseException:
                future.set_result(None)  # no thread waits forever on a page that will never come
                raise
        return future.result()

    def prefetch(self, pairs: Iterable[tuple[str, str]]) -> None:
        todo = [p for p in dict.fromkeys(pairs) if (p[0], canonicalize_name(p[1])) not in self._files]
        if not todo:
            return
        with ThreadPoolExecutor(max_workers=min(16, len(todo))) as pool:
            list(pool.map(lambda p: self.files(*p), todo))

    def release_files(self, index: str, name: str, version: str) -> list[IndexFile]:
        want = _version(version)
        return [f for f in self.files(index, name) or () if not f.yanked and _file_version(f.filename) is not None
                and _version(_public(str(_file_version(f.filename)))) == _version(_public(str(want)))]

    def metadata(self, index: str, name: str, version: str, target: TargetSpec, python: str) -> str | None:
        """Core metadata of one release (PEP 658), from the file that would install on the target if any."""
        key = (index, canonicalize_name(name), version)
        if key not in self._meta:
            files = self.release_files(index, name, version)
            files.sort(key=lambda f: (not (f.filename.endswith(".whl") and file_fits(f.filename, target, python)),
                                      not f.filename.endswith(".whl")))
            text = None
            for f in files[:3]:
                text = _read_metadata(index, f)
                if text:
                    break
            self._meta[key] = text
        return self._meta[key]

    def requires(self, index: str, name: str, version: str, target: TargetSpec,
                 python: str) -> list[Requirement] | None:
        """The release's Requires-Dist that apply on the target (markers evaluated there); None when unknown."""
        text = self.metadata(index, name, version, target, python)
        if text is None:
            return None
        env = marker_env(target, python)
        out: list[Requirement] = []
        for line in _headers(text, "Requires-Dist"):
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if req.marker is None or req.marker.evaluate(env):
                out.append(req)
        return out


def _read_metadata(index: str, f: IndexFile) -> str | None:
    """PEP 658's `.metadata` beside the file, else (an index without it, as many mirrors) the wheel's METADATA read
    with HTTP Range requests — the zip's central directory and one member, a few kB of a wheel of any size, as uv
    does."""
    import re

    from tritonlock.lock.index import IndexClient

    try:
        client = IndexClient(index, timeout=30, retries=2)
        text = client.metadata(f)
        if text or not f.filename.endswith(".whl"):
            return text or None
        from tritonlock.lock.remotezip import RemoteZip

        z = RemoteZip(client.session, f.url, f.size)
        name = next((n for n in z.members() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
        return z.read(name).decode("utf-8", "replace") if name else None
    except (TritonlockError, OSError, ValueError, KeyError, IndexError):
        return None


def _headers(text: str, field: str) -> list[str]:
    from email.parser import HeaderParser

    return [str(v) for v in HeaderParser().parsestr(text).get_all(field) or []]


def newest(facts: Facts, index: str, req: Requirement) -> str | None:
    """The newest release on the index that the requirement admits (no pre-release unless it asks for one, nothing
    yanked); None when the index cannot be read or has none."""
    files = facts.files(index, req.name)
    if not files:
        return None
    versions = {v for f in files if not f.yanked and (v := _file_version(f.filename)) is not None}
    admitted = [v for v in versions if req.specifier.contains(v, prereleases=bool(req.specifier.prereleases))]
    return str(max(admitted)) if admitted else None


# --- the decision --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class _Outcome:
    candidate: Selection
    packages: tuple[LockedPackage, ...]


def _locked(packages: tuple[LockedPackage, ...], name: str) -> LockedPackage | None:
    want = canonicalize_name(name)
    return next((p for p in packages if p.name == want), None)


def _torch_in(spec: SpecifierSet, sel: Selection) -> bool:
    assert sel.torch
    return spec.contains(sel.torch, prereleases=True) or spec.contains(f"{sel.torch}+{sel.backend}", prereleases=True)


def decide(sel: Selection, candidates: tuple[Selection, ...], intent: Intent, matrix: Matrix, default_index: str,
           *, compile: Compile | None = None, facts: Facts | None = None,
           default_python: str = "") -> tuple[Selection, tuple[LockedPackage, ...]]:
    """Lock one target whose intent names packages: among the fitting torch releases (`candidates`, newest first,
    `sel` the newest), the combination that gives every package its newest version the target allows, then the
    newest torch. uv decides (the packages listed before torch); the torch releases are grouped by the index they
    come from (one compile per index), and the best outcome wins. Returns the selection, with its reasons, warnings
    and `direct` records, and the target's packages."""
    from tritonlock.lock.closure import compile_target

    if compile is None:
        def compile(s: Selection, m: Matrix, d: str, **kw: object) -> tuple[LockedPackage, ...]:
            return compile_target(s, m, d, no_build=intent.no_build, **kw)  # type: ignore[arg-type]
    facts = facts or Facts()
    reqs = user_requirements(intent)
    python = sel.python or default_python
    if not candidates:
        candidates = (sel,)
    groups: dict[str, list[Selection]] = {}
    for c in candidates:
        groups.setdefault(c.index or "", []).append(c)
    known = [r.version for r in matrix.torch]
    sc = _Scene(sel=sel, candidates=candidates, intent=intent, matrix=matrix, facts=facts, reqs=reqs, python=python,
                default_python=default_python, default_index=default_index)
    # the packages' own index pages (for their newest releases) load while uv works
    where = [(sc.index_for(r.name), r.name) for r in reqs if r.url is None]
    pool = ThreadPoolExecutor(max_workers=1)
    pool.submit(facts.prefetch, where)
    pool.shutdown(wait=False)
    outcomes: list[_Outcome] = []
    failures: list[tuple[str, ClosureError]] = []
    newest_of: dict[str, str | None] = {}
    for index, group in groups.items():
        try:
            outcome = _compile_group(group, known, matrix, default_index, compile)
        except ClosureError as err:
            failures.append((index, err))
            continue
        outcomes.append(outcome)
        _learn_newest(facts, reqs, outcome.packages, newest_of)
        if all(_at_newest(outcome.packages, r, newest_of) for r in reqs):
            break  # nothing can beat every package at its newest with this index's newest allowed torch
    if not outcomes:
        raise _no_torch_fits(sc, failures)
    best = max(outcomes, key=lambda o: _score(o, reqs))
    chosen, packages = best.candidate, best.packages
    if not _triton_as_decided(chosen, packages):
        # the range compile could not pin what the resolver decided for this torch (triton-windows is a series
        # torch does not pin): lock the chosen torch exactly, as without packages
        packages = compile(chosen, matrix, default_index)
    return _explained(sc, chosen, packages, newest_of), packages


def _compile_group(group: list[Selection], known: list[str], matrix: Matrix, default_index: str,
                   compile: Compile) -> _Outcome:
    versions = [c.torch for c in group if c.torch]
    extra_known = list(known)
    last: ClosureError | None = None
    for _ in range(_UNKNOWN_TORCH_RETRIES):
        spec = torch_spec(versions, extra_known)
        packages = compile(group[0], matrix, default_index, torch_spec=spec)
        torch = _locked(packages, "torch")
        if torch is None:
            raise ClosureError(f"uv locked no torch for target {group[0].target.name!r}")
        public = _public(torch.version)
        match = next((c for c in group if c.torch == public), None)
        if match is not None:
            return _Outcome(candidate=match, packages=packages)
        # a torch the matrix does not know (newer than it, or a patch it lacks): never locked; ask again without it
        extra_known.append(public)
        last = ClosureError(f"uv chose torch {public}, which matrix {matrix.version} does not know")
    raise last or ClosureError("no torch")


def _learn_newest(facts: Facts, reqs: list[Requirement], packages: tuple[LockedPackage, ...],
                  newest_of: dict[str, str | None]) -> None:
    todo = [(p.index, r) for r in reqs if canonicalize_name(r.name) not in newest_of and r.url is None
            and (p := _locked(packages, r.name)) is not None]
    facts.prefetch((index, r.name) for index, r in todo)
    for index, r in todo:
        newest_of[canonicalize_name(r.name)] = newest(facts, index, r)


def _at_newest(packages: tuple[LockedPackage, ...], req: Requirement, newest_of: dict[str, str | None]) -> bool:
    p = _locked(packages, req.name)
    top = newest_of.get(canonicalize_name(req.name))
    if p is None or top is None:
        return True  # nothing to compare with: not a reason to keep searching
    return _version(_public(p.version)) == _version(_public(top))


def _score(o: _Outcome, reqs: list[Requirement]) -> tuple[Version, ...]:
    zero = Version("0")
    out = []
    for r in reqs:
        p = _locked(o.packages, r.name)
        out.append(_version(_public(p.version)) or zero if p else zero)
    out.append(_version(o.candidate.torch) or zero)
    return tuple(out)


def _triton_as_decided(sel: Selection, packages: tuple[LockedPackage, ...]) -> bool:
    if not sel.triton_package or not sel.triton:
        return True
    p = _locked(packages, sel.triton_package)
    if p is None:
        return False
    spec = sel.triton if sel.triton[:1] in "<>=!~" else f"=={sel.triton}"
    try:
        return SpecifierSet(spec).contains(_public(p.version), prereleases=True)
    except InvalidSpecifier:
        return False


# --- words ---------------------------------------------------------------------------------------------------------

def _where(target: TargetSpec, python: str) -> str:
    platform = {"linux": f"linux/{target.arch}" + (f" (glibc {target.glibc})" if target.glibc else ""),
                "windows": f"windows/{target.arch}", "macos": "macOS arm64" + (f" {target.macos}" if target.macos
                                                                               else "")}.get(target.os, target.os)
    return f"Python {python} on {platform}"


def _spec_text(req: Requirement) -> str:
    return f"{req.name}{req.specifier}" if str(req.specifier) else req.name


def _torch_reqs(reqs: list[Requirement] | None) -> list[Requirement]:
    return [r for r in reqs or [] if canonicalize_name(r.name) == "torch"]


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class _Scene:
    """What every explanation of one target's decision reads: the target's newest fitting selection (`sel`), the
    fitting releases, the intent, the matrix, the index facts and the packages the user named."""

    sel: Selection
    candidates: tuple[Selection, ...]
    intent: Intent
    matrix: Matrix
    facts: Facts
    reqs: list[Requirement]
    python: str
    default_python: str
    default_index: str

    @property
    def target(self) -> TargetSpec:
        return self.sel.target

    def index_for(self, name: str) -> str:
        """The index a package comes from: the torch index for the torch family, else the default index."""
        bound = self.sel.index and self.matrix.bound_to_torch_index(canonicalize_name(name), self.sel.backend)
        return self.sel.index if bound and self.sel.index else self.default_index

    def requires(self, index: str, name: str, version: str) -> list[Requirement] | None:
        return self.facts.requires(index, name, version, self.target, self.python)

    def others(self, packages: tuple[LockedPackage, ...],
               name: str) -> Iterator[tuple[str, LockedPackage, list[Requirement]]]:
        """The other packages the user named, as locked, with what they require on the target."""
        for other in self.reqs:
            oname = canonicalize_name(other.name)
            olocked = _locked(packages, oname)
            if oname != name and olocked is not None:
                yield oname, olocked, self.requires(olocked.index, oname, olocked.version) or []


def _torch_limit(sc: _Scene, pkg: str, version: str, treq: Requirement) -> str:
    """Why no torch that `pkg version` allows fits: the host (with the blocking fact), or the intent."""
    from tritonlock.decide.resolve import release_problem

    intent, matrix = sc.intent, sc.matrix
    allowed = [r for r in matrix.torch if treq.specifier.contains(r.version, prereleases=True)]
    head = f"{pkg} {version} requires {_spec_text(treq)}"
    if not allowed:
        return f"{head}, a torch matrix {matrix.version} does not know"
    if intent.torch:
        spec = SpecifierSet(intent.torch)
        if not any(spec.contains(r.version) for r in allowed):
            return f"{head}, outside torch = {intent.torch!r} in {intent.path}"
    free = dataclasses.replace(intent, torch="")
    release = allowed[0]
    problem = release_problem(free, matrix, sc.target, release, sc.default_python)
    if problem:
        return f"{head}; torch {release.version} does not fit this target: {problem}"
    return f"{head}; torch {release.version} is not among this target's candidates"


def _held_back(sc: _Scene, name: str, locked: LockedPackage, top: str, packages: tuple[LockedPackage, ...]) -> str:
    """In words: what held `name` at its locked version below `top`, its newest release."""
    target, python = sc.target, sc.python
    files = sc.facts.release_files(locked.index, name, top)
    if files and not any(file_fits(f.filename, target, python) for f in files):
        return f"{name} {top} has no wheel for {_where(target, python)} (and no sdist)"
    rp = next((f.requires_python for f in files if f.requires_python), None)
    if rp:
        try:
            if not SpecifierSet(rp).contains(f"{python}.0", prereleases=True) and not SpecifierSet(rp).contains(
                    f"{python}.99", prereleases=True):
                return f"{name} {top} requires Python {rp} (this target: Python {python})"
        except InvalidSpecifier:
            pass
    deps = sc.requires(locked.index, name, top)
    for treq in _torch_reqs(deps):
        if not any(_torch_in(treq.specifier, c) for c in sc.candidates):
            return (_torch_limit(sc, name, top, treq)
                    + f"; the newest {name} whose torch fits here is {_public(locked.version)}")
        for oname, olocked, theirs in sc.others(packages, name):
            for oreq in _torch_reqs(theirs):
                if not any(_torch_in(treq.specifier, c) and _torch_in(oreq.specifier, c) for c in sc.candidates):
                    return (f"{name} {top} requires {_spec_text(treq)}, and {oname} {_public(olocked.version)} "
                            f"requires {_spec_text(oreq)}")
    for oname, olocked, theirs in sc.others(packages, name):  # another package the user named pins this one
        for oreq in theirs:
            if canonicalize_name(oreq.name) == name and not oreq.specifier.contains(top, prereleases=True):
                return f"{oname} {_public(olocked.version)} requires {_spec_text(oreq)}"
    direct = {canonicalize_name(r.name) for r in sc.reqs}
    for dep in deps or []:
        dname = canonicalize_name(dep.name)
        dl = _locked(packages, dname)
        if dname in direct and dname != name and dl is not None and not dep.specifier.contains(
                _public(dl.version), prereleases=True):
            return f"{name} {top} requires {_spec_text(dep)}, and {dname} {_public(dl.version)} is locked"
    for dep in deps or []:  # a shared dependency the other packages hold where this release cannot have it
        dname = canonicalize_name(dep.name)
        dl = _locked(packages, dname)
        if dname in direct or dl is None or dep.specifier.contains(_public(dl.version), prereleases=True):
            continue
        for oname, olocked, theirs in sc.others(packages, name):
            for oreq in theirs:
                if canonicalize_name(oreq.name) == dname and str(oreq.specifier) and oreq.specifier.contains(
                        _public(dl.version), prereleases=True):
                    return (f"{name} {top} requires {_spec_text(dep)}, and {oname} {_public(olocked.version)} "
                            f"requires {_spec_text(oreq)}")
        return f"{name} {top} requires {_spec_text(dep)}; the packages hold {dname} {_public(dl.version)}"
    if sc.intent.torch and deps is not None:
        return (f"{name} {top} cannot be installed with the other requirements on this target (torch = "
                f"{sc.intent.torch!r}, the other packages)")
    return f"{name} {top} cannot be installed with the other requirements on this target"


def _torch_held_by(sc: _Scene, chosen: Selection, packages: tuple[LockedPackage, ...]) -> str:
    """Which locked package keeps torch below `sc.sel`'s (the newest that fits the target), in words."""
    top = sc.sel
    said: list[str] = []
    names = [canonicalize_name(r.name) for r in sc.reqs]
    family = [p.name for p in packages if p.name not in names and p.name not in ("torch", "triton")
              and sc.matrix.bound_to_torch_index(p.name, chosen.backend)]
    for name in names + family:
        p = _locked(packages, name)
        if p is None:
            continue
        for treq in _torch_reqs(sc.requires(p.index, name, p.version)):
            if not _torch_in(treq.specifier, top):
                said.append(f"{name} {_public(p.version)} requires {_spec_text(treq)}")
        if len(said) >= 3:
            break
    if said:
        return "; ".join(said)
    torch = _locked(packages, "torch")
    if torch is not None and sc.facts.files(torch.index, "torch") is not None and not sc.facts.release_files(
            torch.index, "torch", top.torch or ""):
        return f"torch {top.torch} is not on {torch.index}"
    return f"the packages' requirements (uv found no solution with torch {top.torch})"


def _explained(sc: _Scene, chosen: Selection, packages: tuple[LockedPackage, ...],
               newest_of: dict[str, str | None]) -> Selection:
    sel = sc.sel
    direct: list[DirectPackage] = []
    warnings: list[str] = []
    at_newest: list[str] = []
    _learn_newest(sc.facts, sc.reqs, packages, newest_of)
    for r in sc.reqs:
        name = canonicalize_name(r.name)
        p = _locked(packages, name)
        top = newest_of.get(name)
        version = _public(p.version) if p else None
        held = None
        if p is not None and top is not None and (_version(version) or Version("0")) < (_version(top) or Version("0")):
            held = _held_back(sc, name, p, top, packages)
            warnings.append(f"{name} {version} is locked, not its newest release {top}: {held}")
        elif version is not None:
            at_newest.append(f"{name} {version}")
        direct.append(DirectPackage(name=name, requirement=str(r), version=version, newest=top, held_by=held))
    reasons = list(sel.reasons)
    base = sel
    if chosen.torch != sel.torch:
        held_by = _torch_held_by(sc, chosen, packages)
        lacking = held_by.startswith(f"torch {sel.torch} is not on ")  # the index, not a package, held it
        first = (f"torch {chosen.torch}: the newest torch {'the index serves' if lacking else 'the packages allow'} "
                 f"({held_by}); torch {sel.torch} would fit this target")
        passed = [r for r in sel.reasons if r.startswith("passed over ")]
        rest = [r for r in chosen.reasons[1:] if not r.startswith("passed over ")]
        reasons = [first, *passed, *rest]
        base = chosen
    warnings = list(base.warnings) + warnings
    if at_newest:  # after the torch lines (what the packages decided), before the build's own facts
        at = next((i for i, r in enumerate(reasons) if i and not r.startswith("passed over ")), len(reasons))
        reasons.insert(at, "packages at their newest release: " + ", ".join(at_newest))
    return dataclasses.replace(base, reasons=tuple(reasons), warnings=tuple(warnings), direct=tuple(direct),
                               packages=sel.packages)


def _no_torch_fits(sc: _Scene, failures: list[tuple[str, ClosureError]]) -> TritonlockError:
    """No fitting torch can be locked with the packages: name the packages whose torch does not fit, and uv's words.
    Where no package's torch requirement explains it (an index that does not answer, no-build, a package that does
    not exist), uv's own error stands, with its own fix."""
    lines: list[str] = []
    for r in sc.reqs:
        if r.url is not None:
            continue
        name = canonicalize_name(r.name)
        index = sc.index_for(name)
        top = newest(sc.facts, index, r)
        if top is None:
            continue
        for treq in _torch_reqs(sc.requires(index, name, top)):
            if not any(_torch_in(treq.specifier, c) for c in sc.candidates):
                lines.append(_torch_limit(sc, name, top, treq))
    if not lines and failures:
        return failures[0][1]
    candidates = sc.candidates
    span = (f"torch {candidates[-1].torch}–{candidates[0].torch}" if len(candidates) > 1
            else f"torch {candidates[0].torch}")
    uv = str(failures[0][1]).strip() if failures else ""
    msg = [f"target {sc.target.name!r}: the packages cannot be locked with any torch that fits this target ({span})"]
    msg += [f"  {line}" for line in lines]
    if uv:
        msg += ["  uv: " + uv.replace("\n", "\n  ")]
    msg.append("  fix: loosen the package's version in [environment].packages (an older release may allow a torch "
               "that fits), or lift what the target's limit names — `tritonlock why` shows the least change")
    return ResolveError("\n".join(msg))


def needs_decision(intent: Intent, sel: Selection) -> bool:
    """Whether the user's packages take part in this target's decision (any ok target of an intent that names some)."""
    return bool(sel.ok and user_requirements(intent))
