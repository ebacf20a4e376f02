"""Read triton-env.lock back: every key checked (a lock edited by hand or truncated is refused, naming the key), the
digests verified, lock formats 2.x and 3.x (tritonlock.lock.lockfile writes them)."""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from typing import Any, cast
from urllib.parse import unquote, urlsplit

from tritonlock import _toml
from tritonlock.errors import LockfileError, LockfileWarning
from tritonlock.lock.digests import closure_digest, decision_digest, header_digest, target_digest
from tritonlock.models import (Conflict, DirectPackage, Lock, LockedPackage, LockedTarget, NativeFacts, NativeMember,
                               Selection, TargetSpec, Wheel)

READS = (2, 3)  # the majors this tritonlock reads; it writes LOCK_VERSION's
# the newest version it reads in full: 3.2, which it writes only for a lock with an unchecked [[native]] table
NEWEST_READ = "3.3"


_MACOS = re.compile(r"^[1-9][0-9](\.[0-9]+){0,2}\Z", re.ASCII)
_GLIBC = re.compile(r"^[0-9]+\.[0-9]+\Z", re.ASCII)
_PY_MINOR = re.compile(r"^3\.[0-9]+\Z", re.ASCII)
_DRIVER = re.compile(r"^[0-9]{3,4}(\.[0-9]+){0,2}\Z", re.ASCII)
_CUDA = re.compile(r"^[0-9]+\.[0-9]+\Z", re.ASCII)
_CC = re.compile(r"^[0-9]+\.[0-9]+\Z", re.ASCII)
# a target's GPU: a compute capability (NVIDIA), a gfx target (AMD) or an Intel AOT device name
_GPU = re.compile(r"^([0-9]+\.[0-9]+|gfx[0-9]{1,2}[0-9a-f]{2}|[a-z][a-z0-9]{1,3}(-[a-z])?)\Z", re.ASCII)
# a build's GPU targets: SM archs (CUDA), gfx targets (ROCm), Intel AOT device names (XPU)
_ARCH_ANY = re.compile(r"^((sm|compute)_[0-9]+[af]?|gfx[0-9]{1,2}[0-9a-f]{2}|[a-z][a-z0-9]{1,3}(-[a-z])?)\Z", re.ASCII)
_AMDGPU = re.compile(r"^[0-9]+\.[0-9]+(\.[0-9]+)*\Z", re.ASCII)
_HSA = re.compile(r"^[0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,2}\Z", re.ASCII)
_ARCH_SM = re.compile(r"^(sm|compute)_[0-9]+[af]?\Z", re.ASCII)
_BACKEND = re.compile(r"^[a-z][a-z0-9.]*\Z", re.ASCII)
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*\Z", re.ASCII)
_BUILD_NEED = re.compile(r"^[a-z][a-z0-9+-]*\Z", re.ASCII)
_OS = ("linux", "windows", "macos")
_ARCHES = ("x86_64", "aarch64", "arm64")


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, key: str, what: str) -> LockfileError:
        return LockfileError(f"{self.path}: {key}: {what} — regenerate it with `tritonlock resolve`")

    def get(self, d: dict[str, Any], key: str, kind: type, where: str, required: bool = True,
            check: Any = None, like: str = "") -> Any:
        """A typed value; `check` (a pattern, a tuple of choices, or a function) says which strings are valid."""
        at = f"{where}.{key}" if where else key
        if key not in d:
            if required:
                raise self.fail(at, "missing")
            return None
        v: Any = d[key]
        if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
            raise self.fail(at, f"expected {kind.__name__}, got {_short(v)}")
        if check is not None and not _valid(check, cast(str, v)):
            raise self.fail(at, f"{_short(v)} is not valid here" + (f" (expected e.g. {like})" if like else ""))
        return v

    def strs(self, d: dict[str, Any], key: str, where: str, check: Any = None, like: str = "") -> tuple[str, ...]:
        v = self.get(d, key, list, where, required=False) or []
        if not all(isinstance(x, str) for x in v):
            raise self.fail(f"{where}.{key}", "expected a list of strings")
        bad = [x for x in v if check is not None and not _valid(check, x)]
        if bad:
            raise self.fail(f"{where}.{key}", f"{_short(bad[0])} is not valid here" + (f" (expected e.g. {like})"
                                                                                        if like else ""))
        return tuple(v)


def _short(v: Any) -> str:
    from tritonlock._urls import redact

    text = redact(repr(v))
    return text if len(text) <= 80 else text[:77] + "..."


def _valid(check: Any, v: str) -> bool:
    if isinstance(check, re.Pattern):
        return bool(check.match(v))
    if isinstance(check, tuple):
        return v in check
    return bool(check(v))


def _is_version(s: str) -> bool:
    if re.fullmatch(r"[0-9]{1,9}(\.[0-9]{1,9}){0,5}", s, re.ASCII):
        return True  # a plain release number: valid without importing packaging
    from packaging.version import InvalidVersion, Version

    try:
        Version(s)
    except InvalidVersion:
        return False
    return s.isascii()


def _is_spec_or_version(s: str) -> bool:
    if _is_version(s):
        return True
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        SpecifierSet(s)
    except InvalidSpecifier:
        return False
    return s.isascii()


def _is_python(s: str) -> bool:
    return bool(_PY_MINOR.match(s)) or (s[:1] in "<>=!~" and _is_spec_or_version(s))


def _is_url(s: str) -> bool:
    from tritonlock._urls import problem

    return problem(s) is None


def _is_clean_url(s: str) -> bool:
    from tritonlock._urls import has_credentials

    return _is_url(s) and not has_credentials(s)


def _is_name(s: str) -> bool:
    from tritonlock._urls import NAME

    return bool(NAME.match(s))


def _directs(r: _Reader, d: dict[str, Any], where: str) -> tuple[DirectPackage, ...]:
    out: list[DirectPackage] = []
    for i, raw in enumerate(r.get(d, "direct", list, where, required=False) or []):
        at = f"{where}.direct[{i}]"
        if not isinstance(raw, dict):
            raise r.fail(at, "expected a table")
        out.append(DirectPackage(
            name=r.get(raw, "name", str, at, check=_is_name, like="vllm"),
            requirement=r.get(raw, "requirement", str, at, check=lambda s: bool(s.strip()) and s.isprintable(),
                              like="vllm>=0.30"),
            version=r.get(raw, "version", str, at, False, _is_version, "0.33.0"),
            newest=r.get(raw, "newest", str, at, False, _is_version, "0.33.0"),
            held_by=r.get(raw, "held-by", str, at, False)))
    return tuple(out)


def _wheel(r: _Reader, raw: Any, where: str) -> Wheel:
    if not isinstance(raw, dict):
        raise r.fail(where, "expected a table")
    hashes = r.get(raw, "hashes", dict, where)
    sha = hashes.get("sha256")
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise r.fail(f"{where}.hashes.sha256", f"not a sha256 hex digest: {_short(sha)}")
    size = r.get(raw, "size", int, where, required=False)
    if size is not None and size < 0:
        raise r.fail(f"{where}.size", f"{size} is not a file size")
    return Wheel(name=r.get(raw, "name", str, where), url=r.get(raw, "url", str, where, check=_is_clean_url,
                                                                like="https://host/path/file.whl"),
                 sha256=sha, size=size)


def _canon(name: str) -> str:
    """packaging.utils.canonicalize_name (PEP 503), without importing packaging.tags for it."""
    return re.sub(r"[-_.]+", "-", name).lower()


# A wheel or sdist file name whose name and version read plainly (PEP 427 / sdist); anything else is parsed by
# packaging, which `show` and `sync` need not import when every name reads plainly.
_PLAIN_FILE = re.compile(r"([A-Za-z0-9._]+)-([A-Za-z0-9.!+_]+)(?:-[0-9][^-]*)?(?:-[^-]+-[^-]+-[^-]+\.whl|"
                         r"\.tar\.gz|\.zip)", re.ASCII)


def _check_package(r: _Reader, p: LockedPackage, where: str) -> None:
    """Each file must belong to the package it is listed under: an edited version or url shows here."""
    for w in (*p.wheels, *((p.sdist,) if p.sdist else ())):
        if unquote(urlsplit(w.url).path).rsplit("/", 1)[-1] != w.name:
            raise LockfileError(f"{r.path}: {where} ({p.name}): url {w.url!r} does not end in its file name "
                                f"{w.name!r} — the lock was edited by hand; regenerate it with `tritonlock resolve`")
        plain = _PLAIN_FILE.fullmatch(w.name)
        if plain and _canon(plain[1]) == _canon(p.name) and plain[2] == p.version:
            continue  # the same answer packaging gives for a name and version spelled as the lock spells them
        from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename

        try:
            name, version = (parse_wheel_filename(w.name)[:2] if w.name.endswith(".whl")
                             else parse_sdist_filename(w.name))
        except ValueError as err:
            raise r.fail(f"{where}.wheels", f"bad file name {_short(w.name)} ({err})") from None
        if canonicalize_name(name) != canonicalize_name(p.name) or str(version) != p.version:
            raise LockfileError(f"{r.path}: {where} ({p.name}): version {p.version} does not match its file "
                                f"{w.name} — the lock was edited by hand; regenerate it with `tritonlock resolve`")


def _check_version(r: _Reader, data: dict[str, Any]) -> str:
    """The lock's format version: an older major → regenerate, a newer major → upgrade, a newer minor → warn."""
    version = data.get("lock-version")
    m = re.fullmatch(r"([0-9]{1,6})\.([0-9]{1,6})", version, re.ASCII) if isinstance(version, str) else None
    if m is None:
        raise r.fail("lock-version", "missing" if version is None else f"{_short(version)} is not a lock version")
    have = (int(m.group(1)), int(m.group(2)))
    mine = tuple(int(x) for x in NEWEST_READ.split("."))
    if have[0] in READS and have[0] < mine[0]:
        return str(version)  # an older format this tritonlock still reads (2.x: packages within each target)
    reads = " and ".join(f"{m}.x" for m in READS)
    if have[0] < mine[0]:
        raise LockfileError(f"{r.path}: lock-version {version} was written by an older tritonlock in a format this "
                            f"one no longer reads (it reads {reads}) — regenerate it with `tritonlock resolve`")
    if have[0] > mine[0]:
        raise LockfileError(f"{r.path}: lock-version {version} is not supported by this tritonlock (reads "
                            f"{reads}) — upgrade tritonlock, or regenerate the lock with `tritonlock resolve`")
    if have[1] > mine[1]:
        warnings.warn(LockfileWarning(f"{r.path}: lock-version {version} is newer than this tritonlock's "
                                      f"{NEWEST_READ}; reading only the fields it knows — upgrade tritonlock"),
                      stacklevel=3)
    return str(version)


def _spec(r: _Reader, c: dict[str, Any], cw: str, name: str) -> TargetSpec:
    return TargetSpec(
        name=name, os=r.get(c, "os", str, cw, check=_OS, like="linux"),
        arch=r.get(c, "arch", str, cw, check=_ARCHES, like="x86_64"),
        glibc=r.get(c, "glibc", str, cw, False, _GLIBC, "2.31"),
        python=r.get(c, "python", str, cw, False, _is_python, "3.12"),
        driver=r.get(c, "driver", str, cw, False, _DRIVER, "535.104.05"),
        cuda=r.get(c, "cuda", str, cw, False, _CUDA, "12.2"),
        gpus=r.strs(c, "gpus", cw, _GPU, "8.0"), origin=r.get(c, "origin", str, cw, False) or "intent",
        macos=r.get(c, "macos", str, cw, False, _MACOS, "14.5"),
        amdgpu=r.get(c, "amdgpu", str, cw, False, _AMDGPU, "6.4"),
        hsa_override=r.get(c, "hsa-override", str, cw, False, _HSA, "11.0.0"),
    )


def _selection(r: _Reader, d: dict[str, Any], dw: str, spec: TargetSpec) -> Selection:
    ok = r.get(d, "ok", bool, dw)
    conflict = r.get(d, "conflict", str, dw, False)
    return Selection(
        target=spec, ok=ok, python=r.get(d, "python", str, dw, ok, _PY_MINOR, "3.12"),
        torch=r.get(d, "torch", str, dw, ok, _is_version, "2.6.0"),
        backend=r.get(d, "backend", str, dw, ok, _BACKEND, "cu126"),
        index=r.get(d, "index", str, dw, ok, _is_clean_url, "https://download.example/whl/cu126"),
        triton_package=r.get(d, "triton-package", str, dw, False, _is_name, "triton"),
        triton=r.get(d, "triton", str, dw, False, _is_spec_or_version, "3.2.0"),
        packages=r.strs(d, "packages", dw), driver_floor=r.get(d, "driver-floor", str, dw, False, _DRIVER,
                                                                "525.60.13"),
        archs=r.strs(d, "archs", dw, _ARCH_ANY, "sm_90"), ptx=r.strs(d, "ptx", dw, _ARCH_SM, "sm_90"),
        reasons=r.strs(d, "reasons", dw), warnings=r.strs(d, "warnings", dw),
        conflict=Conflict(target=spec.name, message=conflict) if conflict else None,
        direct=_directs(r, d, dw),
    )


def for_target(sel: Selection, spec: TargetSpec) -> Selection:
    """A decision shared by targets of one kind (written once in the lock, or made once for machines alike), as
    target `spec`'s own: its machine, and its name where the words name the target they were written for
    ("target 'mac-a': the packages need …" reads "target 'mac-b': …" for mac-b)."""
    if sel.target is spec:
        return sel
    first, name = sel.target.name, spec.name

    def words(text: str) -> str:
        return text.replace(f"target {first!r}", f"target {name!r}") if first != name else text

    conflict = sel.conflict
    if conflict is not None:
        conflict = dataclasses.replace(conflict, target=name, message=words(conflict.message),
                                       facts=tuple(words(f) for f in conflict.facts))
    return dataclasses.replace(sel, target=spec, conflict=conflict, reasons=tuple(words(x) for x in sel.reasons),
                               warnings=tuple(words(x) for x in sel.warnings))


def _packages(r: _Reader, raw: list[Any], where: str, owner: str) -> tuple[LockedPackage, ...]:
    """The packages of a target (2.x) or a closure (3.x), each checked; `owner` names it in messages."""
    pkgs: list[LockedPackage] = []
    seen: set[str] = set()
    for j, rp in enumerate(raw):
        pw = f"{where}.packages[{j}]"
        if not isinstance(rp, dict):
            raise r.fail(pw, "expected a table")
        wheels = tuple(_wheel(r, w, f"{pw}.wheels[{k}]") for k, w in
                       enumerate(r.get(rp, "wheels", list, pw, required=False) or []))
        sd = r.get(rp, "sdist", dict, pw, required=False)
        pkg = LockedPackage(name=r.get(rp, "name", str, pw, check=_is_name, like="numpy"),
                            version=r.get(rp, "version", str, pw, check=_is_version, like="1.26.4"),
                            index=r.get(rp, "index", str, pw, check=_is_clean_url, like="https://host/simple"),
                            wheels=wheels, sdist=_wheel(r, sd, f"{pw}.sdist") if sd else None,
                            build=r.get(rp, "build", str, pw, False, ("source",), "source"),
                            build_needs=r.strs(rp, "build-needs", pw, _BUILD_NEED, "nvcc"),
                            build_why=r.get(rp, "build-why", str, pw, False),
                            note=r.get(rp, "note", str, pw, False),
                            dependencies=(r.strs(rp, "dependencies", pw, _is_name, "filelock") if "dependencies" in rp
                                          else None))
        if pkg.build and not pkg.sdist:
            raise r.fail(f"{pw}.build", f"{pkg.name} is to be built from source but has no sdist")
        if not pkg.wheels and not pkg.sdist:
            raise r.fail(pw, f"{pkg.name} has no files")
        if _canon(pkg.name) in seen:
            raise r.fail(f"{pw}.name", f"{pkg.name} appears twice in {owner}")
        seen.add(_canon(pkg.name))
        _check_package(r, pkg, pw)
        pkgs.append(pkg)
    return tuple(sorted(pkgs, key=lambda p: p.name))


def _target_name(r: _Reader, rt: Any, where: str, names: set[str]) -> str:
    if not isinstance(rt, dict):
        raise r.fail(where, "expected a table")
    name: str = r.get(rt, "name", str, where, check=lambda s: bool(s.strip()) and s.isprintable(), like="a100")
    if name in names:
        raise r.fail(f"{where}.name", f"target {name!r} appears twice")
    names.add(name)
    return name


def _targets_2(r: _Reader, data: dict[str, Any]) -> list[LockedTarget]:
    """lock-version 2.x: each target holds its decision and its packages."""
    targets: list[LockedTarget] = []
    names: set[str] = set()
    for i, rt in enumerate(r.get(data, "targets", list, "", required=False) or []):
        where = f"targets[{i}]"
        name = _target_name(r, rt, where, names)
        spec = _spec(r, r.get(rt, "constraints", dict, where), f"{where}.constraints", name)
        sel = _selection(r, r.get(rt, "decision", dict, where), f"{where}.decision", spec)
        pkgs = _packages(r, r.get(rt, "packages", list, where, required=False) or [], where, f"target {name!r}")
        if sel.ok and not pkgs:
            raise r.fail(where, f"target {name!r} is resolved but lists no packages")
        targets.append(LockedTarget(selection=sel, packages=pkgs))
    return targets


_ID = re.compile(r"^sha256:[0-9a-f]{64}\Z", re.ASCII)


def _shared_tables(r: _Reader, data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    raw = r.get(data, key, list, "", required=False) or []
    for i, t in enumerate(raw):
        if not isinstance(t, dict):
            raise r.fail(f"{key}[{i}]", "expected a table")
    return list(raw)


def _targets_3(r: _Reader, data: dict[str, Any]) -> tuple[list[LockedTarget], list[str], list[str]]:
    """lock-version 3.x: targets name their decision and closure by id. Each decision and closure is read (and
    checked) once, whatever the number of targets that share it; (targets, decision ids, closure ids)."""
    # which targets name each decision and closure: an edit inside one is said as an edit of those targets
    users: dict[str, list[str]] = {}
    raw_targets = data.get("targets") if isinstance(data.get("targets"), list) else []
    for rt in raw_targets or []:
        if isinstance(rt, dict) and isinstance(rt.get("name"), str):
            for key in ("decision", "closure"):
                if isinstance(rt.get(key), str):
                    users.setdefault(rt[key], []).append(rt["name"])

    def edited(ident: str, what: str) -> LockfileError:
        names = users.get(ident, [])
        if not names:
            return LockfileError(f"{r.path}: {what} {ident} is named by no target — the lock was edited by hand; "
                                 "regenerate it with `tritonlock resolve`")
        more = f" (and {len(names) - 1} other target(s) that share its {what})" if len(names) > 1 else ""
        return LockfileError(f"{r.path}: target {names[0]!r}{more} was edited after the lock was generated (its "
                             "digest, which covers its constraints, decision and packages, does not match) — "
                             "regenerate it with `tritonlock resolve`")

    decisions: dict[str, tuple[int, dict[str, Any]]] = {}
    for i, rd in enumerate(_shared_tables(r, data, "decisions")):
        ident = r.get(rd, "id", str, f"decisions[{i}]", check=_ID, like="sha256:…")
        if ident in decisions:
            raise r.fail(f"decisions[{i}].id", f"decision {ident} appears twice")
        try:
            fresh = decision_digest(rd)
        except (RecursionError, ValueError, TypeError):
            fresh = ""
        if fresh != ident:
            raise edited(ident, "decision")
        decisions[ident] = (i, rd)
    closures: dict[str, tuple[LockedPackage, ...]] = {}
    for i, rc in enumerate(_shared_tables(r, data, "closures")):
        ident = r.get(rc, "id", str, f"closures[{i}]", check=_ID, like="sha256:…")
        if ident in closures:
            raise r.fail(f"closures[{i}].id", f"closure {ident} appears twice")
        raw = r.get(rc, "packages", list, f"closures[{i}]", required=False) or []
        if not raw:
            raise r.fail(f"closures[{i}]", "a closure without packages")
        owners = users.get(ident, [])
        closures[ident] = _packages(r, raw, f"closures[{i}]", f"target {owners[0]!r}" if owners else f"closure {ident}")
        try:
            fresh = closure_digest(raw)
        except (RecursionError, ValueError, TypeError):
            fresh = ""
        if fresh != ident:
            raise edited(ident, "closure")
    parsed: dict[str, Selection] = {}  # each decision read once; the targets that share it get their own copy
    specs: dict[tuple[Any, ...], TargetSpec] = {}
    targets: list[LockedTarget] = []
    names: set[str] = set()
    used_d: set[str] = set()
    used_c: set[str] = set()
    for i, rt in enumerate(r.get(data, "targets", list, "", required=False) or []):
        where = f"targets[{i}]"
        name = _target_name(r, rt, where, names)
        c = r.get(rt, "constraints", dict, where)
        # a fleet's machines of one kind have the same constraints but their origin: checked once per kind
        origin = c.get("origin")
        shape = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in c.items() if k != "origin")
        try:
            kind = specs.get(shape) if isinstance(origin, str) or origin is None else None
        except TypeError:  # a value of another shape (a table): the full check says what is wrong with it
            kind, shape = None, ()
        if kind is None:
            spec = _spec(r, c, f"{where}.constraints", name)
            if shape:
                specs[shape] = spec
        else:
            spec = dataclasses.replace(kind, name=name, origin=origin or "intent")
        d_id = r.get(rt, "decision", str, where, check=_ID, like="sha256:…")
        if d_id not in decisions:
            raise r.fail(f"{where}.decision", f"no [[decisions]] entry has id {d_id}")
        used_d.add(d_id)
        if d_id not in parsed:
            j, rd = decisions[d_id]
            parsed[d_id] = _selection(r, rd, f"decisions[{j}]", spec)
        sel = for_target(parsed[d_id], spec)
        c_id = r.get(rt, "closure", str, where, False, _ID, "sha256:…")
        if c_id is not None and c_id not in closures:
            raise r.fail(f"{where}.closure", f"no [[closures]] entry has id {c_id}")
        if c_id is not None:
            used_c.add(c_id)
        pkgs = closures[c_id] if c_id is not None else ()
        if sel.ok and not pkgs:
            raise r.fail(where, f"target {name!r} is resolved but names no closure of packages")
        targets.append(LockedTarget(selection=sel, packages=pkgs))
    unused = [("decision", d) for d in decisions if d not in used_d] + [("closure", c) for c in closures
                                                                          if c not in used_c]
    if unused:
        raise edited(unused[0][1], unused[0][0])
    return targets, list(decisions), list(closures)


def _check_target_digests(r: _Reader, data: dict[str, Any]) -> list[str]:
    raw_targets = data.get("targets", [])
    if not isinstance(raw_targets, list) or not all(isinstance(t, dict) for t in raw_targets):
        raise r.fail("targets", "expected [[targets]] tables")
    digests: list[str] = []
    for i, rt in enumerate(raw_targets):
        name = rt.get("name")
        label = f"target {name!r}" if isinstance(name, str) else f"targets[{i}]"
        if "digest" not in rt:
            raise r.fail(f"targets[{i}].digest", "missing")
        try:
            want = target_digest(rt)
        except (RecursionError, ValueError):
            want = ""
        if rt["digest"] != want:
            raise LockfileError(f"{r.path}: {label} was edited after the lock was generated (its digest, which covers "
                                "its constraints, decision and packages, does not match) — regenerate it with "
                                "`tritonlock resolve`")
        digests.append(want)
    return digests


# The [[targets]] of a lock as this writer writes them (a fleet's thousand targets are most of its lines) read
# without tomllib: a line-by-line reader of exactly that shape, whose every value is one JSON value that TOML reads the
# same way. Anything else (a comment, a literal string, a dotted or quoted key, an escape JSON and TOML read apart, a key
# given twice, another table) and the whole file goes to tomllib as before, so a lock reads the same either way
# (tests/test_lockfile.py compares the two on generated and edited locks).
_KV = re.compile(r'([a-z][a-z0-9-]*) = (true|false|-?(?:0|[1-9][0-9]*)|"(?:[^"\\\x00-\x1f\x7f]|\\["\\bfnrt]|'
                 r'\\u[0-9a-fA-F]{4})*"|\[(?:"(?:[^"\\\x00-\x1f\x7f]|\\["\\bfnrt]|\\u[0-9a-fA-F]{4})*"'
                 r'(?:, "(?:[^"\\\x00-\x1f\x7f]|\\["\\bfnrt]|\\u[0-9a-fA-F]{4})*")*)?\])\Z')
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _fast_targets(lines: list[str]) -> list[dict[str, Any]] | None:
    """The [[targets]] tables of these lines (each a [[targets]] header, its keys, an optional [targets.constraints]
    and its keys), or None when any line is of another shape."""
    out: list[dict[str, Any]] = []
    table: dict[str, Any] | None = None
    for line in lines:
        if not line:
            continue
        if line == "[[targets]]":
            table = {}
            out.append(table)
            continue
        if line == "[targets.constraints]":
            if not out or "constraints" in out[-1]:
                return None
            table = out[-1]["constraints"] = {}
            continue
        m = _KV.match(line)
        if m is None or table is None or m[1] in table or _SURROGATE.search(m[2]):
            return None
        table[m[1]] = json.loads(m[2])
    return out


def _parse(text: str) -> dict[str, Any]:
    """tomllib's answer for a lock (TOMLDecodeError as tomllib raises it), with its [[targets]] read by _fast_targets
    where they have this writer's shape."""
    start = text.find("\n[[targets]]\n")
    end = min((i for i in (text.find("\n[[decisions]]\n"), text.find("\n[[closures]]\n")) if i >= 0), default=-1)
    if start < 0 or end < start:
        return _toml.loads(text)
    targets = _fast_targets(text[start + 1:end].split("\n"))
    if targets is None:
        return _toml.loads(text)
    try:
        rest = _toml.loads(text[:start + 1] + text[end + 1:])
    except _toml.TOMLDecodeError:
        return _toml.loads(text)  # raised where the file's own lines say
    if "targets" in rest:
        return _toml.loads(text)
    rest["targets"] = targets
    return rest


def loads(text: str, path: str = "triton-env.lock") -> Lock:
    """Parse and check a lock; a tampered, malformed or unknown-version lock is refused with a named cause."""
    r = _Reader(path)
    try:
        data = _parse(text)
    except _toml.TOMLDecodeError as err:
        line, msg = _toml.decode_error_line(err, text)
        where = f"{path}:{line}" if line else path
        raise LockfileError(f"{where}: not valid TOML ({msg}) — regenerate it with `tritonlock resolve`") from None
    version = _check_version(r, data)
    shared: tuple[list[str], list[str]] | None = None
    if version.split(".")[0] == "2":
        targets = _targets_2(r, data)
    else:
        targets, d_ids, c_ids = _targets_3(r, data)
        shared = (d_ids, c_ids)
    default = r.get(data, "default-index", str, "", False, _is_clean_url, "https://host/simple") or ""
    # Values first (they name the package or key), then the digests catch every other edit.
    digests = _check_target_digests(r, data)
    if "digest" not in data:
        raise r.fail("digest", "missing")
    if data["digest"] != header_digest(data, digests, *(shared or (None, None))):
        raise LockfileError(f"{r.path}: the lock's header or its list of targets was edited after the lock was "
                            "generated (digest does not match) — regenerate it with `tritonlock resolve`")
    native = _read_native(r, data)
    return Lock(lock_version=version, created_by=r.get(data, "created-by", str, ""),
                intent_hash=r.get(data, "intent-hash", str, ""), matrix_version=r.get(data, "matrix-version", str, ""),
                default_index=default, targets=tuple(targets),
                input_digest=r.get(data, "input-digest", str, "", required=False) or "",
                inputs_from=r.get(data, "inputs-from", str, "", required=False) or "", native=native)


_SHA = re.compile(r"^[0-9a-f]{64}\Z", re.ASCII)
_SONAME = re.compile(r"^[A-Za-z0-9._+-]{1,200}\Z", re.ASCII)
# an AMD target ID: a processor or LLVM generic processor, and its features ("gfx90a:xnack-", "gfx11-generic")
_GFX_ID = re.compile(r"^gfx(?:[0-9]{1,2}[0-9a-f]{2}|[0-9]{1,2}(?:-[0-9]{1,2})?-generic)(?::[a-z0-9]{1,16}[+-])*\Z",
                     re.ASCII)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,199}\Z", re.ASCII)
_MEMBER = re.compile(r"^(?!/)(?!.*(?:^|/)\.\.(?:/|\Z))[A-Za-z0-9._+/-]{1,300}\Z", re.ASCII)  # in the wheel, no ".."


def _pairs(r: _Reader, raw: dict[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    """[[native]].imports: [top-level name, a top-level name it imports] pairs."""
    for i, pair in enumerate(pairs := r.get(raw, "imports", list, where, required=False) or []):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) and _IDENT.match(x)
                                                                  for x in pair)):
            raise r.fail(f"{where}.imports[{i}]", "expected [name, name] (two import names)")
    return tuple((a, b) for a, b in pairs)


def _read_native(r: _Reader, data: dict[str, Any]) -> tuple[NativeFacts, ...]:
    out = []
    for i, raw in enumerate(r.get(data, "native", list, "", required=False) or []):
        where = f"native[{i}]"
        if not isinstance(raw, dict):
            raise r.fail(where, "expected a table")
        members = []
        for j, m in enumerate(r.get(raw, "members", list, where, required=False) or []):
            mw = f"{where}.members[{j}]"
            if not isinstance(m, dict):
                raise r.fail(mw, "expected an inline table")
            members.append(NativeMember(
                path=r.get(m, "path", str, mw, check=lambda s: bool(s) and s.isprintable()),
                extension=r.get(m, "extension", bool, mw), needed=r.strs(m, "needed", mw, _SONAME, "libcudart.so.13"),
                torch_abi=r.get(m, "torch-abi", str, mw, False, ("stable", "cxx")) or "",
                sm=r.strs(m, "sm", mw, _ARCH_SM, "sm_90"), ptx=r.strs(m, "ptx", mw, _ARCH_SM, "compute_90"),
                gfx=r.strs(m, "gfx", mw, _GFX_ID, "gfx942"),
                gpu=r.get(m, "gpu", str, mw, False, lambda s: s.isprintable()) or "none",
                dlopen=r.strs(m, "dlopen", mw, _SONAME, "libcublas.so.12")))
        out.append(NativeFacts(
            sha256=r.get(raw, "sha256", str, where, check=_SHA, like="64 hex digits"),
            filename=r.get(raw, "file", str, where, check=lambda s: bool(s) and s.isprintable()),
            provides=r.strs(raw, "provides", where, _SONAME, "libcudart.so.13"), members=tuple(members),
            built_for_torch=r.get(raw, "built-for-torch", str, where, False, _VERSION, "2.9"),
            names_only=bool(r.get(raw, "names-only", bool, where, False)), source="the lock",
            problem=r.get(raw, "unchecked", str, where, False, lambda s: bool(s) and s.isprintable()),
            tops=r.strs(raw, "tops", where, _IDENT, "nixl_cu12"), imports=_pairs(r, raw, where),
            guarded=r.strs(raw, "guarded", where, _MEMBER, "torchao/_C.abi3.so")))
    return tuple(out)
