"""Turn a target's top-level pins into its full, hashed package set by driving `uv pip compile`: the decision's
LockPlan, carried out (everything it needs of compat/ is in the plan)."""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from packaging.utils import NormalizedName, canonicalize_name

from tritonlock import _subprocess, _urls
from tritonlock.errors import ClosureError, IntentError, TritonlockError
from tritonlock.lock import _fromcache, _pagesread, _silent
from tritonlock.lock._closurewords import no_build_note, unpinnable
from tritonlock.lock.lockfile import toml_value
from tritonlock.models import LockedPackage, LockPlan, Selection, Wheel


def python_platform(sel: Selection, glibc_floor: str | None) -> str:
    """uv's --python-platform for a target (the machine being locked for, not this one)."""
    t = sel.target
    if t.os == "windows":
        return "x86_64-pc-windows-msvc"
    if t.os == "macos":
        return "aarch64-apple-darwin"
    glibc = t.glibc or glibc_floor or "2.28"
    minor = int(glibc.split(".")[1])
    # uv knows manylinux_2_17 … manylinux_2_40; clamp so a brand-new glibc still works.
    minor = max(17, min(minor, 40))
    return f"{t.arch}-manylinux_2_{minor}"


def requirements(sel: Selection, torch_spec: str | None = None) -> list[str]:
    """The top-level requirements of one compile. With `torch_spec` (the torch releases that fit the target, as a
    specifier) the user's packages come first and torch last, with no triton pin (torch pins its own): uv decides the
    packages before torch, so each gets its newest version that some fitting torch allows (tritonlock.decide.packages)."""
    if torch_spec is not None:
        return list(sel.packages) + [f"torch{torch_spec}"]
    reqs = [f"torch=={sel.torch}"]
    if sel.triton_package and sel.triton:
        op = "" if sel.triton[0] in "<>=!~" else "=="
        reqs.append(f"{sel.triton_package}{op}{sel.triton}")
    return reqs + list(sel.packages)


def _own_name(package: str) -> str:
    """The uv index name of a package's own build index ("build-vllm")."""
    return "build-" + re.sub(r"[^a-z0-9]+", "-", package.lower())


def _pyproject(sel: Selection, reqs: list[str], torch_pkgs: Sequence[str], own: dict[str, str],
              flat: set[str]) -> str:
    lines = ["[project]", 'name = "tritonlock-closure"', 'version = "0"',
             f'requires-python = ">={sel.python}"', "dependencies = ["]
    lines += [f"  {toml_value(r)}," for r in reqs]
    lines += ["]", "", "[[tool.uv.index]]", 'name = "torch"', f"url = {toml_value(sel.index or '')}",
              "explicit = true"]
    for name, url in sorted(own.items()):
        lines += ["", "[[tool.uv.index]]", f"name = {toml_value(_own_name(name))}", f"url = {toml_value(url)}",
                  "explicit = true"] + (['format = "flat"'] if name in flat else [])
    lines += ["", "[tool.uv.sources]"]
    lines += [f'{toml_value(p)} = {{ index = "torch" }}' for p in torch_pkgs]
    lines += [f"{toml_value(n)} = {{ index = {toml_value(_own_name(n))} }}" for n in sorted(own)]
    return "\n".join(lines) + "\n"


def bound_to_torch_index(plan: LockPlan, name: str) -> bool:
    """Whether a package must come from the selection's torch index (the torch family, compat/meta.toml) — triton
    only where that backend's index publishes it (meta.toml triton_from_default: not for cpu). For a rocm* build
    also the ROCm SDK family (compat/rocm.toml [binding] rocm_only: rocm, rocm-sdk-*, …), always, and the names of
    rocm_served (a "rocm" or "amd" in the name) wherever that index serves them."""
    name = canonicalize_name(name)
    sel = plan.selection
    if _matches(name, plan.rocm_only):  # ROCm SDK wheels: only the rocm* index has the right ones
        return True
    if _matches(name, plan.rocm_served) and sel.index and _served(sel.index, name):
        return True
    return name in plan.torch_bound


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _served(index_url: str, name: str) -> bool:
    from tritonlock.lock import index

    try:
        return index.serves(index_url, name)
    except TritonlockError:
        return False


# the packages a failed `uv pip compile` names as missing or unsatisfiable
_UV_NAMED = re.compile(r"(?:no versions? of |versions of |depend on |depends on )([A-Za-z0-9][A-Za-z0-9._-]*)"
                       r"|([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])? was not found in the package registry")


def uv_named(output: str) -> set[NormalizedName]:
    """The distribution names uv's resolution failure is about ("no version of rocm[libraries]==7.14.0",
    "rocm-sdk-device-gfx942 was not found in the package registry")."""
    return {canonicalize_name(a or b) for a, b in _UV_NAMED.findall(output)}


def not_served_error(err: ClosureError, plan: LockPlan, bound: Collection[str]) -> ClosureError:
    """A failed compile whose cause is a ROCm SDK package the rocm* torch index lacks: the error names it (the torch
    index is the only place it may come from); any other failure is returned as it is."""
    sel = plan.selection
    if not (sel.backend or "").startswith("rocm") or not sel.index:
        return err
    lacking = sorted(n for n in uv_named(str(err)) if n in bound and _matches(n, plan.rocm_only)
                     and not _served(sel.index, n))
    if not lacking:
        return err
    what = " and ".join(lacking)
    one = len(lacking) == 1
    return ClosureError(
        f"target {sel.target.name!r}: {what} {'is' if one else 'are'} part of the ROCm SDK that torch {sel.torch} "
        f"({sel.backend}) needs, taken only from its torch index {sel.index}, and that index does not serve "
        f"{'it' if one else 'them'} — a same-named package on another index is never taken for "
        f"{'it' if one else 'them'} (PyPI holds placeholders of some of these names)\n  fix: point [indexes].torch "
        f"at an index that serves the {sel.backend} torch build with its ROCm SDK wheels, or pin a torch whose ROCm "
        "build bundles its libraries (an older torch in triton-env.toml)")


def triton_owner_problem(plan: LockPlan, pkgs: Sequence[LockedPackage]) -> str | None:
    """Two distributions that both install the top-level `triton/` package (triton and triton-rocm, say) overwrite
    each other in one environment: which one `import triton` finds depends on install order. A lock holds one."""
    sel = plan.selection
    owners = set(plan.triton_owners)
    both = sorted(p.name for p in pkgs if p.name in owners)
    if len(both) < 2:
        return None
    keep = sel.triton_package or both[0]
    others = [n for n in both if n != keep]
    return (f"target {sel.target.name!r}: {' and '.join(both)} would both be locked, and each installs the "
            f"top-level triton/ package (one overwrites the other). torch {sel.torch} ({sel.backend}) goes with "
            f"{keep}; {', '.join(others)} came in through another requirement — drop or pin that requirement so "
            f"only {keep} is needed, or set triton = \"none\" if nothing here needs Triton")


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*", re.ASCII)
# How many times a newly found torch-family package may bring another one (torchvision → torch → triton).
_PASSES = 5


def compile_key(plan: LockPlan, default_index: str, *, no_build: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Everything compile_target's answer depends on: targets with equal keys can share one compile."""
    sel = plan.selection
    return (*requirements(sel, plan.torch_spec), sel.index or "", sel.python or "",
            python_platform(sel, plan.glibc_floor), default_index, plan.macos or "",
            *(f"no-build:{n}" for n in no_build), *(f"constraint:{c}" for c in plan.triton_constraints))


def _torch_index_serves(sel: Selection, name: str, default_index: str) -> str | None:
    """For a member of the wider PyTorch index family (compat/meta.toml torch_index_packages: xformers, torchao…):
    None when the selection's torch index serves it (it is bound there, like torch), else why it comes from the
    default index — the index is asked, through the index client, whether it has the project at all."""
    from tritonlock.lock import index

    assert sel.index
    try:
        if index.serves(sel.index, name):
            return None
    except TritonlockError as err:
        return (f"from the default index {default_index}: the torch index {sel.index} could not be asked for it "
                f"({str(err).splitlines()[0][:160]})")
    return (f"from the default index {default_index}: the {sel.backend} torch index {sel.index} does not serve it "
            f"(PyTorch publishes it there for some backends only), so this build is not matched to torch's "
            f"{sel.backend} build by the index")


def compile_target(plan: LockPlan, default_index: str, *, timeout: float = 900,
                   no_build: tuple[str, ...] = (), offline: bool = False,
                   constraints: tuple[str, ...] = (), build_facts: bool = True,
                   package_indexes: tuple[tuple[str, str, str], ...] = (),
                   guess: bool = False) -> tuple[LockedPackage, ...]:
    """The full transitive set for the plan's ok selection, each package bound to exactly one index.

    uv honours [tool.uv.sources] for direct requirements only, so a torch-family package that enters the closure
    through another package (a library needing torchvision; the triton torch pins) would come from the default
    index — where a same-named decoy may wait (PyTorch's Dec 2022 torchtriton incident). Each family member found
    that way is added as a bare direct requirement bound to the torch index and the closure is computed again,
    until no family member is left unbound; if the torch index cannot serve it, the lock is refused.

    The wider PyTorch index family (xformers, torchao, …: compat/meta.toml torch_index_packages) is bound the same
    way where the torch index serves the package, and otherwise comes from the default index with a note saying so.
    A package locked without a wheel for the target is marked `build = "source"` with what its build needs; when
    that build imports torch, its other build requirements are locked too (sync builds it without isolation).
    `no_build` (the intent's [environment].no-build; ":all:" for every package) forbids source builds.
    `constraints` (PEP 508 lines, uv's --constraint) narrow what may be locked without asking for it (the decision's
    checks and the CUDA libraries a driver cannot load). `offline`: answer from uv's cache, as a check right after a
    compile can (uv asks the network again only where its cache lacks something). `build_facts` False: a package
    without a wheel is marked `build = "source"` without reading its sdist (what its build needs, what it imports)
    and without locking its build requirements — an answer the decision may still replace, read in full once kept.
    `package_indexes` ((name, url, "simple" | "flat"), …): a package taken from an index of its own (its per-CUDA
    builds, as vLLM publishes them; "flat": a page of links), bound there like the torch family.
    `guess`: uv's answer from its cache alone (--offline, nothing read online, no sdist read), which the online
    answer usually repeats: what `guessing` starts reading early. ClosureError where uv finds none there, in the
    words an online compile's failure has (`cache_missed`: where its cache lacks what the answer needs).
    """
    sel, torch_spec = plan.selection, plan.torch_spec
    assert sel.ok and sel.torch and sel.index and sel.python
    build_facts = build_facts and not guess
    reqs = requirements(sel, torch_spec)
    names = {canonicalize_name(m.group(0)) for r in reqs if (m := _NAME.match(r))}
    notes: dict[str, str] = {}
    own_index = sel.index != default_index  # [indexes].torch = "default": every package comes from one index

    def binds(n: str) -> bool:
        if bound_to_torch_index(plan, n):
            return True
        if not own_index or n not in plan.torch_served:
            return False
        if n not in notes:
            why = _torch_index_serves(sel, n, default_index)
            notes[n] = why or ""
        return not notes[n]

    own_builds: dict[str, str] = {canonicalize_name(n): u for n, u, _ in package_indexes}
    flat: set[str] = {canonicalize_name(n) for n, _, f in package_indexes if f == "flat"}
    bound = {n for n in names if binds(n) and n not in own_builds}
    floor = plan.glibc_floor
    pulled: list[str] = []  # family members that came in through other packages
    extra: list[str] = []  # build requirements of sdists whose build imports torch
    macos = plan.macos
    facts: dict[str, Any] = {}  # sdist url → builds.BuildFacts
    build_reqs: dict[str, str] = {}  # requirement name → the package whose torch-importing build needs it
    for npass in range(_PASSES):
        try:
            raw = _compile(sel, reqs + pulled + extra, sorted(bound), default_index, floor, timeout, pulled, macos,
                           no_build=no_build, build_reqs={r: build_reqs[_canon(r)] for r in extra},
                           # (a later pass online too: it reads pages the first did not — the family members'
                           # on the torch index — and uv --offline would take a stale copy of those from its cache)
                           offline=offline,
                           constraints=(*constraints, *plan.triton_constraints), own=own_builds,
                           flat=flat, guess=guess)
        except ClosureError as err:
            # a torch-family member the failure names (rocm[libraries], looked up on the default index as a
            # dependency of torch) is bound to the torch index and the compile repeated
            retry = sorted(n for n in uv_named(str(err)) - bound if own_index and binds(n))
            if not retry:
                raise not_served_error(err, plan, bound) from None
            bound.update(retry)
            pulled += retry
            continue
        found = {canonicalize_name(str(r["name"])) for r in raw}
        # torch from the default index ([indexes] torch = "default"): one index serves every package, so a family
        # member that came in through another package needs no binding (and no second compile, as with uv alone)
        unbound = sorted(n for n in found - bound if binds(n)) if own_index else []
        more = _build_requirements(raw, facts, build_reqs) if build_facts else []
        if not unbound and not more:
            break
        bound.update(unbound)
        pulled += unbound
        extra += more
    else:
        raise ClosureError(f"target {sel.target.name!r}: the torch family and build requirements kept growing after "
                           f"{_PASSES} passes ({', '.join(pulled + extra)}) — report this with your triton-env.toml")
    pkgs: list[LockedPackage] = []
    for r in raw:
        name = canonicalize_name(str(r["name"]))
        index = own_builds.get(name) or (sel.index if name in bound else default_index)
        wheels = tuple(_file(w) for w in r.get("wheels", []))
        sdist = _file(r["sdist"]) if "sdist" in r else None
        if isinstance(r.get("archive"), dict):  # a direct reference (`pkg @ https://…/pkg-1.0-….whl`): its own file,
            direct = _file(r["archive"])       # which is where it comes from (no index lists it)
            wheels, sdist = ((direct,), None) if direct.name.endswith(".whl") else ((), direct)
            index = direct.url
        if not wheels and sdist is None:  # a folder or a checkout: no file whose sha256 the lock could pin
            raise IntentError(unpinnable(name, r))
        note = notes.get(name) or None
        if name in build_reqs and name not in names:
            note = (f"{note}; " if note else "") + (f"needed to build {build_reqs[name]}, whose build imports torch: "
                                                    "installed before it, as that build runs in the venv without "
                                                    "isolation")
        pkg = LockedPackage(name=name, version=str(r["version"]), index=index, wheels=wheels, sdist=sdist, note=note)
        if not wheels and sdist is not None:
            from tritonlock.lock import builds

            if not build_facts:
                pkg = dataclasses.replace(pkg, build="source")
            else:
                f = facts.get(sdist.url) or builds.facts_for(name, sdist.url, sdist.name)
                pkg = dataclasses.replace(pkg, build="source", build_needs=builds.needs_of(f), build_why=f.why)
        pkgs.append(pkg)
    problem = triton_owner_problem(plan, pkgs)
    if problem is not None:
        raise ClosureError(problem)
    return tuple(sorted(pkgs, key=lambda p: p.name))


def guessing(compile: Callable[..., tuple[LockedPackage, ...]],
             heard: Callable[[Selection, tuple[LockedPackage, ...]], None]) -> Callable[..., tuple[LockedPackage, ...]]:
    """`compile` (compile_target) that, for a compile asked online, has uv answer from its cache alone beside it
    (`guess`: a second or two, where online takes several) and hands that answer to `heard` unless the online one
    came first. The orchestrator starts reading the guessed wheels' binary facts: an online answer that repeats the
    guess finds them read or under way (they are kept per sha256); one that differs costs those reads, never a fact.
    What is locked is the online answer alone."""
    import threading

    def run(plan: LockPlan, default_index: str, **kw: Any) -> tuple[LockedPackage, ...]:
        if kw.get("offline") or kw.get("guess"):
            return compile(plan, default_index, **kw)
        answered = threading.Event()

        def guess() -> None:
            try:
                pkgs = compile(plan, default_index, **{**kw, "guess": True})
                if not answered.is_set():
                    heard(plan.selection, pkgs)
            except Exception:  # noqa: BLE001 — no answer in uv's cache (or any failure): no guess, nothing else
                return

        # not a daemon: a guess still under way when tritonlock exits finishes (a second or so), so its uv leaves no
        # temporary folder behind
        threading.Thread(target=guess, name="closure-guess").start()
        try:
            return compile(plan, default_index, **kw)
        finally:
            answered.set()

    return run


def _canon(req: str) -> str:
    m = _NAME.match(req)
    return canonicalize_name(m.group(0)) if m else ""


def _build_requirements(raw: list[dict[str, Any]], facts: dict[str, Any], needed_by: dict[str, str]) -> list[str]:
    """The build requirements (besides torch) of the sdist-only packages whose build imports torch, not asked for
    yet: sync builds those without isolation, inside the venv, so what the build imports is locked too (each one
    added as a requirement, so that its version also meets the build's own specifier)."""
    from tritonlock.lock import builds

    more: list[str] = []
    for r in raw:
        if r.get("wheels") or not isinstance(r.get("sdist"), dict):
            continue
        name = canonicalize_name(str(r["name"]))
        sd = _file(r["sdist"])
        f = facts.get(sd.url)
        if f is None:
            f = facts[sd.url] = builds.facts_for(name, sd.url, sd.name)
        if not f.imports_torch:
            continue
        for req in f.requires:
            n = _canon(req)
            if n and n != name and n not in needed_by:
                needed_by[n] = name
                more.append(req)
    return more


def cache_missed(err: object) -> bool:
    """Whether a compile asked of uv's cache alone failed for what the cache lacks (not for a conflict)."""
    return isinstance(err, ClosureError) and bool(_fromcache.CACHE_MISS.search(err.uv or str(err)))


def new_run(pythons: Iterable[str] = ()) -> None:
    """Forget what earlier runs read online (one process may lock many times: a test suite, a service): uv's cache
    answers offline only what this run read online; and which torch indexes did not answer. And start finding the
    interpreters the compiles for these Python versions get (_subprocess.resolver_python)."""
    _pagesread.READ.clear()
    _silent.forget()
    for py in dict.fromkeys(pythons):
        _subprocess.find_resolver_python(py)


# The pins an existing lock had, per target name, that every compile of this run prefers (uv reads the output file it
# is about to write as preferences: a pinned version is kept where the requirements still allow it, as `uv lock
# --upgrade-package` keeps every other package). Set for one locking run by `preferring`; empty otherwise.
_PREFER: dict[str, dict[str, str]] = {}


class preferring:
    """Within this block, each compile for a target prefers the versions `pins` gives for it (target name → package
    name → version); a package left out (the one to upgrade) is free to move."""

    def __init__(self, pins: dict[str, dict[str, str]]) -> None:
        self.pins = pins

    def __enter__(self) -> None:
        _PREFER.clear()
        _PREFER.update(self.pins)

    def __exit__(self, *exc: object) -> None:
        _PREFER.clear()


def _preferences(sel: Selection, out: Path) -> None:
    """Write the target's preferred pins where uv will write its answer: uv reads them as its preferences."""
    pins = _PREFER.get(sel.target.name)
    if not pins:
        return
    lines = ['lock-version = "1.0"', 'created-by = "tritonlock"']
    for name, version in sorted(pins.items()):
        lines += ["", "[[packages]]", f"name = {toml_value(name)}", f"version = {toml_value(version)}"]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _read_project(sel: Selection, torch_pkgs: Sequence[str], own: dict[str, str], flat: set[str],
                  wanted: dict[str, str]) -> str:
    """The pyproject.toml of uv's read of these packages' pages (name → specifier), each bound to the index the
    compile binds it to."""
    names = set(wanted)
    return _pyproject(sel, [f"{n}{v}" for n, v in sorted(wanted.items())],
                      [t for t in torch_pkgs if canonicalize_name(t) in names],
                      {n: u for n, u in own.items() if canonicalize_name(n) in names}, flat)


@_silent.down_first
def _compile(sel: Selection, reqs: list[str], torch_pkgs: list[str], default_index: str, floor: str | None,
             timeout: float, pulled: list[str], macos: str | None = None, *,
             no_build: tuple[str, ...] = (), build_reqs: dict[str, str] | None = None, offline: bool = False,
             constraints: tuple[str, ...] = (), own: dict[str, str] | None = None,
             flat: set[str] | None = None, guess: bool = False) -> list[dict[str, Any]]:
    """One `uv pip compile` for the target's platform and Python: the [[packages]] tables of its pylock output.

    Index addresses go to uv without credentials; credentials (and pip's TLS settings) go in uv's environment,
    never on its command line or in a file. As pip, keyring is asked only when an index wants credentials.
    """
    from tritonlock.lock import index

    assert sel.python and sel.index
    with tempfile.TemporaryDirectory(prefix="tritonlock-closure-") as tmp:
        pyproject = Path(tmp) / "pyproject.toml"
        pyproject.write_text(_pyproject(sel, reqs, torch_pkgs, own or {}, flat or set()), encoding="utf-8")
        out = Path(tmp) / "pylock.toml"
        _preferences(sel, out)
        interpreter = _subprocess.resolver_python(sel.python)
        common = ["--no-config", "--no-header", "--quiet", f"--python-version={sel.python}",
                  f"--python-platform={python_platform(sel, floor)}", "--no-python-downloads",
                  *([f"--python={interpreter}"] if interpreter else [])]
        args = [_subprocess.uv_bin(), "pip", "compile", str(pyproject), *common, "--generate-hashes", "-o", str(out)]
        # [environment].no-build: uv takes the newest version with a wheel for the target, or fails naming it
        args += [f"--only-binary={n}" for n in no_build]
        if constraints:
            (Path(tmp) / "constraints.txt").write_text("".join(f"{c}\n" for c in constraints), encoding="utf-8")
            args += ["--constraint", str(Path(tmp) / "constraints.txt")]
        for keyring in (False, True):
            env = index.uv_env(named={"torch": sel.index, **{_own_name(n): u for n, u in (own or {}).items()}},
                               default=default_index, keyring=keyring)
            if macos:
                env["MACOSX_DEPLOYMENT_TARGET"] = macos
            unset = (*index.UV_UNSET, "MACOSX_DEPLOYMENT_TARGET")  # this machine's setting says nothing of the target

            def uv(argv: list[str], at: str = tmp, log: str = "") -> subprocess.CompletedProcess[str]:
                return _subprocess.run(argv, cwd=at, timeout=timeout, env={**env, "RUST_LOG": log} if log else env,
                                       unset=unset)

            if guess:
                proc = uv([*args, "--offline"])
                break
            proc = _fromcache.from_cache(uv, args, common, out, functools.partial(
                _read_project, sel, torch_pkgs, own or {}, flat or set())) if offline else uv(args)
            if proc.returncode == 0 or not index.asked_for_credentials(proc.stderr) or not index.network().keyring:
                break
        if proc.returncode != 0:
            raw = index.explain((proc.stderr or proc.stdout).strip().replace(str(pyproject), "the requirements"))
            # (the project uv resolves is tritonlock's wrapping of the user's requirements: never named to them)
            msg = re.sub(r"\btritonlock-closure's requirements\b", "your requirements",
                         re.sub(r"\btritonlock-closure depends on\b", "you require", raw))
            shown = [r for r in reqs if r not in pulled]
            why = (f"\n  note: {', '.join(pulled)} {'is' if len(pulled) == 1 else 'are'} needed by other packages and, "
                   f"being in the torch family, {'is' if len(pulled) == 1 else 'are'} taken only from the torch index "
                   f"{sel.index} (never from the default index, where a same-named package may be a decoy)"
                   if pulled else "")
            if build_reqs:
                why += "".join(f"\n  note: {r} is a build requirement of {pkg}, whose build imports torch: it runs in "
                               "the venv without isolation, so what it imports is locked too"
                               for r, pkg in build_reqs.items())
            nb = no_build_note(proc.stderr or proc.stdout or "", no_build, sel.python, python_platform(sel, floor))
            if nb:
                raise ClosureError(f"uv could not resolve target {sel.target.name!r} ({', '.join(shown)}) with "
                                   f"wheels only:\n{msg}{why}{nb}", uv=raw)
            raise ClosureError(f"uv could not resolve target {sel.target.name!r} "
                               f"({', '.join(shown)}; torch index {sel.index}; default index {default_index}):\n"
                               f"{msg}{why}\n  fix: check that both indexes are reachable and serve these versions "
                               f"for Python {sel.python} on {python_platform(sel, floor)}"
                               + (f" (macOS {macos})" if macos else "")
                               # (pip's extra-index-url is the cause only of a package no index was found to serve)
                               + (index.extra_index_note() if _NOT_FOUND.search(msg) else ""), uv=raw)
        packages = _fromcache.answer(out)
    if guess:
        return packages  # read from the cache alone: nothing this run read online
    # (an offline answer reaches here only when all of it was so read)
    _pagesread.READ.update(_pagesread.keys(packages))
    return packages


# uv: "Because einopz was not found in the package registry" (not a DNS failure, not a version conflict)
_NOT_FOUND = re.compile(r"was not found in the package registr|not found in the provided package locations")


def _file(raw: dict[str, object]) -> Wheel:
    """A file of uv's pylock answer: from an index or a direct https:// reference (`url`), or a local one — a
    `pkg @ file:///…/pkg.whl` requirement, which uv answers with the file's absolute `path` — as a file:// URL."""
    size = raw.get("size")
    if "url" in raw:
        url = _urls.strip_credentials(str(raw["url"]))
    elif isinstance(raw.get("path"), str) and os.path.isabs(str(raw["path"])):
        path = Path(str(raw["path"]))
        url = path.as_uri()
        if not isinstance(size, int):
            try:
                size = path.stat().st_size
            except OSError:
                size = None
    else:
        raise ClosureError(f"uv gave a file with neither a URL nor an absolute path ({_urls.redact(str(raw))[:200]}) — "
                           "name local wheels as file:///absolute/path/name.whl")
    hashes = raw.get("hashes")
    sha = hashes.get("sha256") if isinstance(hashes, dict) else None
    if not isinstance(sha, str):
        raise ClosureError(f"uv gave no sha256 for {url} — the index must publish hashes")
    from urllib.parse import unquote, urlsplit

    name = unquote(urlsplit(url).path).rsplit("/", 1)[-1]
    return Wheel(name=name, url=url, sha256=sha, size=size if isinstance(size, int) else None)
