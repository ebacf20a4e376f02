"""What the packages decision says: held-back lines built from the check that failed (uv's own words, with the
host's facts where they are the cause), what holds torch, and the conflicts — never from pairing two packages'
requirement ranges."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from tritonlock.decide._pkgfacts import file_fits, public
from tritonlock.decide._pkgload import torch_admits
from tritonlock.decide._pkgpins import pin_fixes
from tritonlock.errors import ClosureError, ResolveError, TritonlockError
from tritonlock.models import LockedPackage, Selection, TargetSpec

if TYPE_CHECKING:
    from tritonlock.decide._pkgscene import Check, Demoted, Fallback, Fix, Outcome, Scene
    from tritonlock.lock.builds import GpuFloor

# torch's own family moves with torch: it is never what holds torch back
_MOVES_WITH_TORCH = {"torch", "torchvision", "torchaudio", "triton", "pytorch-triton", "pytorch-triton-rocm",
                     "pytorch-triton-xpu", "triton-windows", "triton-xpu", "triton-rocm"}


def spec_text(req: Requirement) -> str:
    return f"{req.name}{req.specifier}" if str(req.specifier) else req.name


def where(target: TargetSpec, python: str) -> str:
    platform = {"linux": f"linux/{target.arch}" + (f" (glibc {target.glibc})" if target.glibc else ""),
                "windows": f"windows/{target.arch}", "macos": "macOS arm64" + (f" {target.macos}" if target.macos
                                                                               else "")}.get(target.os, target.os)
    return f"Python {python} on {platform}"


def uv_reason(text: str, limit: int = 480) -> str:
    """uv's explanation on one line: its 'No solution found' banner, the cause/hint labels and the tree marks off;
    the project tritonlock hands uv is the user's requirements ("you require"), except for what tritonlock itself
    passed over (`pkg<0`, `pkg!=1.0`: "tritonlock passes over"); at most `limit` characters."""
    lines = []
    for line in text.splitlines():
        line = line.strip().lstrip("×╰─▶│ ").strip()
        line = re.sub(r"^(error|cause|caused by):\s*", "", line)
        if not line or line.startswith("hint:") or re.match(r"No solution found when resolving dependencies", line):
            continue
        lines.append(line)
    out = _DEPENDS.sub(_whose, " ".join(lines))
    out = re.sub(r"\btritonlock-closure's requirements\b", "your requirements", out)
    out = re.sub(r"\btritonlock-closure\b(?: \(pyproject\.toml\))?", "your requirements", out)
    return out if len(out) <= limit else out[:limit - 3].rstrip() + "..."


# uv names the project it resolves when it reports what it depends on: "tritonlock-closure depends on vllm>=0.33"
_DEPENDS = re.compile(r"\btritonlock-closure depends on ([A-Za-z0-9][A-Za-z0-9._-]*)((?:\[[^\]]*\])?[^\s,]*"
                      r"(?:,\s*[<>=!~]=?[^\s,]+)*)")


def _whose(m: re.Match[str]) -> str:
    """'you require X' for the user's part of a requirement, 'tritonlock passes over' for its own `<0` / `!=`."""
    name, spec = m[1], m[2]
    parts = [p for p in re.split(r",\s*", spec.split("]", 1)[-1]) if p]
    ours = [p for p in parts if p == "<0" or p.startswith("!=")]
    yours = [p for p in parts if p not in ours]
    if not ours:
        return f"you require {name}{spec}"
    said = "every release" if "<0" in ours else ", ".join(p[2:] for p in ours)
    head = f"you require {name}{','.join(yours)} and " if yours else ""
    return f"{head}tritonlock passes over {name} {said} (what this target cannot have)"


def packages_key(intent_path: str) -> str:
    return "[project].dependencies" if intent_path.endswith("pyproject.toml") else "[environment].packages"


# --- what the target cannot have --------------------------------------------------------------------------------

def cuda_build(p: LockedPackage, major: int, floor: str, target: TargetSpec) -> str:
    return (f"{p.name} {p.version} (a CUDA {major} build, which needs driver >= {floor}; this driver is "
            f"{target.driver})")


def nvcc_build(p: LockedPackage, target: TargetSpec, python: str) -> str:
    from tritonlock.decide.cudalibs import nvcc_platforms

    return (f"{p.name} {p.version} as a source build (no wheel for {where(target, python)}; its build needs nvcc, "
            f"the CUDA compiler, which NVIDIA ships only for {', '.join(nvcc_platforms())})")


def gpu_build(p: LockedPackage, floor: GpuFloor, low: list[str], constraint: str) -> str:
    """A source build whose kernels are for newer GPUs than some of the target's."""
    cc = ".".join(map(str, floor.min_cc))
    older = (f"; no older release's build has code for {'all of them' if len(low) > 1 else 'it'} either" if constraint.endswith("<0") else
             f"; releases from {constraint.split('<', 1)[1]} on left out")
    return (f"{p.name} {p.version} built from its sdist, whose kernels are for GPUs of compute capability {cc} and "
            f"newer ({floor.why}), and this target's GPU{'s' if len(low) > 1 else ''} {', '.join(low)} "
            f"{'are' if len(low) > 1 else 'is'} older{older}")


def unbuildable(name: str, version: str, uv: str) -> str:
    """What was passed over where uv could not build a release's sdist to read its requirements."""
    why = build_error(uv)
    return (f"{canonicalize_name(name)} {version}'s sdist, which uv could not build here to read its requirements"
            + (f" ({why})" if why else "") + f"; took {canonicalize_name(name)}'s wheels only")


def build_error(uv: str, most: int = 300) -> str:
    """The exception a failed build ended with, in uv's words: its last "…Error: …" line — with the lines after it
    where its message starts on the next line (a placeholder sdist's "InstallFailedError:" and its banner: what
    the build wanted), up to uv's hint, without the banner's rules; cut at `most` characters."""
    lines = uv.splitlines()
    at = next((i for i in range(len(lines) - 1, -1, -1) if re.search(r"\w(Error|Exception):", lines[i])), None)
    if at is None:
        return ""
    why = lines[at].strip()
    if why.endswith(":"):
        more: list[str] = []
        for line in lines[at + 1:]:
            text = line.strip()
            if text.startswith(("hint:", "help:")) or len(" ".join(more)) > most:
                break
            if re.search(r"[A-Za-z0-9]", text):
                more.append(text)
        why = " ".join([why, *more])
    return why if len(why) <= most else why[:most - 1] + "…"


def impossible(sc: Scene, passed: list[str], err: ClosureError) -> str:
    """uv found no answer once what the target cannot have was passed over."""
    reason = uv_reason(err.uv or str(err))
    nvcc = [p for p in passed if "as a source build" in p]
    gpu = [p.split(" ", 1)[0] for p in passed if " built from its sdist, whose kernels are for GPUs " in p]
    unbuilt = list(dict.fromkeys(p.split(" ", 1)[0] for p in passed
                                 if "which uv could not build here to read its requirements" in p))
    names = ", ".join(dict.fromkeys(gpu))
    head = (f"{names} has no build for this target's GPUs" if gpu and all(
        "no older release's build has code for " in p for p in passed if p.startswith(tuple(gpu)))
            and not nvcc and not unbuilt else "the packages need what this target cannot have")
    if unbuilt and all("which uv could not build here to read its requirements" in p for p in passed):
        many = len(unbuilt) > 1  # (this machine's doing, not the target's)
        head = (f"the packages need {', '.join(unbuilt)}, whose sdist{'s' if many else ''} uv could not build here "
                f"to read {'their' if many else 'its'} requirements (and no release with a wheel fits)")
    fixes = []
    if nvcc:
        fixes.append("lock the packages that need nvcc for the GPU machines only (a target of their own), or name a "
                     "release with a wheel for this platform")
    if gpu:
        fixes.append(f"lock {names} for the machines whose GPUs it has code for (a target of their own, or "
                     "[[targets]] without these GPUs), or leave it out of this target's packages")
    if unbuilt:
        fixes.append((f"make {unbuilt[0]}'s sdist buildable here (what its build needs: the error above)"
                      if len(unbuilt) == 1 else f"make the sdists of {', '.join(unbuilt)} buildable here (what their "
                      "builds need: the errors above)") + ", or name a release with a wheel for this target")
    if not fixes or any("which needs driver >= " in p for p in passed):
        fixes.append("a driver new enough for those builds (`tritonlock why` shows what a newer driver unlocks), or "
                     "a release of the package built for this driver's CUDA")
    said = "" if head.endswith("GPUs") else f"; without it, uv finds no lock: {reason}"
    return f"target {sc.target.name!r}: {head} — passed over: {'; '.join(passed)}{said}\n  fix: {'; or '.join(fixes)}"


# --- a named package below its newest --------------------------------------------------------------------------

def _torch_limit(sc: Scene, pkg: str, version: str, treq: Requirement) -> str:
    """Why no torch that `pkg version` allows fits: the host (with the blocking fact), or the intent."""
    from tritonlock.decide.resolve import release_problem

    intent, matrix = sc.intent, sc.matrix
    allowed = [r for r in matrix.torch if treq.specifier.contains(r.version, prereleases=True)]
    head = f"{pkg} {version} requires {spec_text(treq)}"
    if not allowed:
        return f"{head}, a torch matrix {matrix.version} does not know"
    if intent.torch:
        spec = SpecifierSet(intent.torch)
        if not any(spec.contains(r.version) for r in allowed):
            return f"{head}, outside torch = {intent.torch!r} in {sc.intent_file}"
    free = dataclasses.replace(intent, torch="")
    release = allowed[0]
    problem = release_problem(free, matrix, sc.target, release, sc.default_python)
    if problem:
        out = f"{head}; torch {release.version} does not fit this target: {problem}"
        if intent.torch_index == "default" and release_problem(dataclasses.replace(free, torch_index=None), matrix,
                                                               sc.target, release, sc.default_python) is None:
            out += (f" (PyTorch's index has a build of torch {release.version} that fits: without [indexes] torch = "
                    f"\"default\" in {sc.intent_file} the lock could take it)")
        return out
    return f"{head}; torch {release.version} is not among this target's candidates"


def asked_extras(sc: Scene, name: str) -> tuple[str, ...]:
    """The extras the user asks of a named package, sorted (() where none)."""
    return next((tuple(sorted(r.extras)) for r in sc.reqs if canonicalize_name(r.name) == name), ())


def _target_fact(sc: Scene, name: str, locked: LockedPackage, top: str) -> str | None:
    """A fact of the newest release alone that keeps it off this target: no file for its platform, a Python floor,
    or a torch requirement no fitting torch meets (the host or the intent) — read from the index, not paired."""
    target, python = sc.target, sc.python
    extras = asked_extras(sc, name)
    if sc.facts.lacks_extras(locked.index, name, top, target, python, extras):
        return (f"{name} {top} has no extra {', '.join(extras)} (its METADATA declares no such Provides-Extra): it "
                "is not what was asked for")
    files = sc.facts.release_files(locked.index, name, top)
    if files and not any(file_fits(f.filename, target, python) for f in files):
        return f"{name} {top} has no wheel for {where(target, python)} (and no sdist)"
    rp = next((f.requires_python for f in files if f.requires_python), None)
    if rp:
        try:
            if not SpecifierSet(rp).contains(f"{python}.0", prereleases=True) and not SpecifierSet(rp).contains(
                    f"{python}.99", prereleases=True):
                return f"{name} {top} requires Python {rp} (this target: Python {python})"
        except InvalidSpecifier:
            pass
    for treq in [r for r in sc.requires(locked.index, name, top) or [] if canonicalize_name(r.name) == "torch"]:
        if not any(torch_admits(treq.specifier, c) for c in sc.candidates):
            asked, _ = sc.facts.between(locked.index, name, locked.version, top, target, python, extras)
            fits = next((v for v in asked if (q := sc.torch_reqs(locked.index, name, v, extras)) is not None
                         and all(any(torch_admits(r.specifier, c) for c in sc.candidates) for r in q)), None)
            named = f"{name}[{', '.join(extras)}]" if extras else name
            return _torch_limit(sc, name, top, treq) + (  # ("newest whose torch fits" only where none above it does)
                f"; the newest {named} whose torch fits here is {public(locked.version)}" if fits is None else
                f"; {name} {fits}, the newest release whose torch fits here, cannot be locked here with the rest")
    return None


def _pinned_by(sc: Scene, name: str, top: str, packages: tuple[LockedPackage, ...]) -> str | None:
    """Another package the user named whose locked release's own requirement excludes `name`'s newest release."""
    for oname, olocked, theirs in sc.others(packages, name):
        for oreq in theirs:
            if canonicalize_name(oreq.name) == name and not oreq.specifier.contains(top, prereleases=True):
                return f"{oname} {public(olocked.version)} requires {spec_text(oreq)}"
    return None


def held_back(sc: Scene, name: str, locked: LockedPackage, top: str, check: Check | None,
              passed: tuple[str, ...] = (), packages: tuple[LockedPackage, ...] = (), *,
              native: str | None = None, fact: str | None = None) -> str:
    """Why `name` is locked below `top`: where its native code cannot load here, or beside the torch it requires
    (`native`, in words: read from its wheel and those of what it requires), that; else the check that failed (uv's
    words), after the target's own fact where one keeps the newest release off it (or the named package whose
    release pins it, or — `fact` — one named before it that cannot be locked beside the torch it requires), and what
    was passed over where uv's words name it."""
    if native is not None:
        return native
    fact = _target_fact(sc, name, locked, top) or _pinned_by(sc, name, top, packages) or fact
    extras = asked_extras(sc, name)
    _, lacking = sc.facts.between(locked.index, name, locked.version, top, sc.target, sc.python, extras) if extras \
        else ((), ())
    if lacking:  # (passed over for it, whatever the newest's fact: said, or the user wonders why not these)
        one = len(lacking) == 1
        fact = "; ".join(filter(None, (fact, f"{name} {', '.join(lacking[:3])}{' …' if len(lacking) > 3 else ''} "
                                             f"{'has' if one else 'have'} no extra {', '.join(extras)} ("
                                             f"{'its METADATA declares' if one else 'their METADATA declare'} no "
                                             "such Provides-Extra)")))
    if check is None:
        return fact or f"uv's answer with the packages in the order you named them ({name} {top} was not checked)"
    said = ""
    if check.meta:  # (not asked of uv: the release's own METADATA answers it)
        torch = next((public(p.version) for p in packages if p.name == "torch"), None)
        said = check.meta + (f", and torch {torch} is locked here" if torch else "") + ("; " if check.uv else "")
    if check.uv:
        asked = check.asked + (f" with {', '.join(check.held)}" if check.held else "")
        said += f"uv finds no lock with {asked}: {uv_reason(check.uv)}" + _ours(passed, check.uv)
    return f"{fact} (checked: {said})" if fact else f"checked: {said}"


def _ours(passed: tuple[str, ...], uv: str | None) -> str:
    """What tritonlock passed over (in words) that uv's words name: uv says "does not allow any versions" alone."""
    text = "; ".join(ours := [p for p in passed if uv and p.split(" ", 1)[0] in uv])
    return f" (tritonlock passed over {text if len(text) <= 400 else text[:397] + '...'})" if ours else ""


# uv: "Because xformers==0.0.28.post1 depends on torch==2.4.1 and ...", "xfmr<=0.0.28 depends on torch==2.10.0",
# "all versions of xfmr depend on torch==2.10.0"
_DEPENDS_ON_TORCH = re.compile(r"(?:all versions of )?([A-Za-z0-9][A-Za-z0-9._-]*?)(?:\[[^\]]*\])?(?:[<>=!~]=?[^\s,]+)?"
                               r" depends? on torch((?:[<>=!~]=?[^\s,]+)(?:,\s*[<>=!~]=?[^\s,]+)*)")


def own_torch_limits(sc: Scene, packages: tuple[LockedPackage, ...]) -> list[str]:
    """The packages the user named whose own locked release excludes the newest torch that fits (`sc.sel`): a fact
    of that release's METADATA, which no other answer for it changes."""
    said: list[str] = []
    for r in sc.reqs:
        name = canonicalize_name(r.name)
        p = next((x for x in packages if x.name == name), None)
        if p is None:
            continue
        for treq in [q for q in sc.requires(p.index, name, p.version, tuple(sorted(r.extras))) or []
                     if canonicalize_name(q.name) == "torch"]:
            if not torch_admits(treq.specifier, sc.sel):
                said.append(f"{name} {public(p.version)} requires {spec_text(treq)}")
        if len(said) >= 3:
            break
    return said


def torch_held_by(sc: Scene, chosen: Selection, packages: tuple[LockedPackage, ...],
                  check: Check | None, native: str | None = None) -> tuple[str, bool]:
    """Which locked package keeps torch below `sc.sel`'s (the newest that fits the target), in words; True when it
    is the index (it does not serve that torch), not a package. `native`: a locked release whose native code cannot
    load beside that torch, in words (said before uv's words: it is why uv was not asked there, or found nothing)."""
    top = sc.sel
    said = own_torch_limits(sc, packages)
    if said:
        return "; ".join(said), False
    torch = next((x for x in packages if x.name == "torch"), None)
    if torch is not None and sc.facts.files(torch.index, "torch") is not None and not sc.facts.release_files(
            torch.index, "torch", top.torch or ""):  # (and, where a package holds it below the newest served, that)
        return (f"torch {top.torch} is not on {torch.index}" + (f"; {native}" if native else ""),
                native is None)
    if native is not None:
        return native, False
    if check is not None:
        reason = uv_reason(check.uv)
        locked = {p.name: public(p.version) for p in packages}
        holders = [(canonicalize_name(n), s) for n, s in _DEPENDS_ON_TORCH.findall(reason)
                   if canonicalize_name(n) not in _MOVES_WITH_TORCH and canonicalize_name(n) in locked]
        checked = f"checked: uv finds no lock with torch=={top.torch} and the packages where they are: {reason}"
        if holders:
            n, s = holders[0]
            return f"{n} {locked[n]} requires torch{s} — {checked}", False
        return checked, False
    return f"the packages' requirements (uv found no solution with torch {top.torch})", False


# --- no torch that fits allows the packages ---------------------------------------------------------------------

_MISSING = re.compile(r"(?:no versions? of|Because) ([A-Za-z0-9][A-Za-z0-9._-]*)(?:[<>=!~][^\s,]*)? (?:was not found|"
                      r"has no versions|\(?not found)", re.I)


def no_torch_fits(sc: Scene, failures: list[tuple[str, TritonlockError]],
                  passed: Sequence[str] = ()) -> TritonlockError:
    """No fitting torch can be locked with the packages: the packages whose torch does not fit, a torch-family package
    the torch index lacks, or what the target cannot have — with uv's words, and the releases the facts passed over
    on every line (`passed`, in words: what uv's words do not say). Where none of that explains it (an index that does
    not answer, no-build, a package that does not exist), uv's own error stands, with its own fix."""
    from tritonlock.decide._pkgfacts import newest

    for _, err in failures:
        if isinstance(err, ResolveError):  # what the target cannot have (packages.Impossible)
            return ResolveError(str(err))
    uv = next((e.uv or str(e) for _, e in failures if isinstance(e, ClosureError)), "")
    lines: list[str] = []
    index = sc.sel.index or ""
    for name in dict.fromkeys(canonicalize_name(m) for m in _MISSING.findall(uv_reason(uv))):
        if name in ("torch",) or not sc.matrix.bound_to_torch_index(name, sc.sel.backend) or index == sc.default_index:
            continue
        if sc.facts.files(index, name) == ():  # the torch index answered, and has no such project
            lines.append(f"the torch index {index} does not serve {name}, which the packages need (the torch family "
                         "is taken only from the torch index, never from the default index)")
    for r in sc.reqs:
        if r.url is not None:
            continue
        name = canonicalize_name(r.name)
        top = newest(sc.facts, sc.index_for(name), r)
        if top is None:
            continue
        for treq in [q for q in sc.requires(sc.index_for(name), name, top) or [] if canonicalize_name(q.name) == "torch"]:
            if not any(torch_admits(treq.specifier, c) for c in sc.candidates):
                lines.append(_torch_limit(sc, name, top, treq))
    if not lines:
        platform = no_wheel_here(sc, uv)
        if platform is not None:
            return ResolveError(platform)
    answerless = None if lines or not failures else _no_answer(sc, uv, str(failures[0][1]))
    if answerless is not None:  # (uv's resolution ran and found nothing: the target's conflict, in uv's words)
        lines += answerless
    elif not lines and failures:
        return failures[0][1]
    if not lines and answerless is None:  # (no line was left to ask uv about, and no fact above explains it)
        return ResolveError(f"target {sc.target.name!r}: no torch line that fits this target admits a release of "
                            f"every package named ({', '.join(str(r) for r in sc.reqs)})\n  fix: `tritonlock why` "
                            "shows what stands between this target and other torch lines")
    if lines and lines[0].startswith("the torch index ") and failures:
        # the index's doing (exit 4, as for any index that lacks what is needed): that first, then uv's own error
        return ClosureError(f"target {sc.target.name!r}: {lines[0]}\n{failures[0][1]}", uv=uv)
    candidates = sc.candidates
    span = (f"torch {candidates[-1].torch}–{candidates[0].torch}" if len(candidates) > 1
            else f"torch {candidates[0].torch}")
    msg = [f"target {sc.target.name!r}: the packages cannot be locked with any torch that fits this target ({span})"]
    msg += [f"  {line}" for line in [*lines, *passed[:_PASSED]]]
    if len(passed) > _PASSED:
        msg.append(f"  (and {len(passed) - _PASSED} more groups of releases passed over likewise)")
    if uv:
        msg += ["  uv: " + uv_reason(uv)]
    key = packages_key(sc.intent.path)
    msg += pin_fixes(uv, key, sc.index_for)
    msg.append(f"  fix: loosen the package's version in {packages_key(sc.intent.path)} (an older release may "
               "allow a torch that fits), or lift what the target's limit names — `tritonlock why` shows the "
               "least change")
    return ResolveError("\n".join(msg))


_PASSED = 3  # groups of passed-over releases a conflict names

# uv's words on a resolution that ran and found no answer, and on a package the index has no page for
_NO_SOLUTION = re.compile(r"No solution found when resolving dependencies")
_REFUSED = re.compile(r"HTTP 40[13]\b|credentials")
_NOT_IN_REGISTRY = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])? was not found in the package registry")


def _no_answer(sc: Scene, uv: str, said: str) -> list[str] | None:
    """uv's resolution ran and found no answer, though the index serves what the newest release of each named package
    needs: the target's conflict (exit 3; the other targets are locked), its lines naming each package uv found no
    page for (sglang[all]==0.4.* on a V100: the releases left need torch 2.4 or 2.5, or `flashinfer`, which PyPI has
    never served). None — uv's own error stands (exit 4) — where no resolution ran (a fetch failed), no-build's, or
    where the newest release of a named package, or the torch family, needs a package the index lacks (a mirror
    short of it; an index that refused tritonlock's credentials, which uv reports as a package not found)."""
    from tritonlock.decide._pkgfacts import newest

    if not _NO_SOLUTION.search(uv) or "has no usable wheels" in uv or _REFUSED.search(said):
        return None
    missing = sorted({canonicalize_name(m) for m in _NOT_IN_REGISTRY.findall(uv)})
    if any(m in sc.matrix.torch_family for m in missing):  # (the torch index's, or triton's from the default one)
        return None
    needed = {canonicalize_name(r.name) for r in sc.reqs}
    for r in sc.reqs:
        name = canonicalize_name(r.name)
        top = None if r.url is not None else newest(sc.facts, sc.index_for(name), r)
        if top is not None:
            needed.update(canonicalize_name(q.name) for q in sc.requires(sc.index_for(name), name, top) or [])
    if any(m in needed for m in missing):
        return None
    return [f"{m} is not on {sc.index_for(m)}: a release that needs it cannot be locked from there" for m in missing]


# uv: "Because pkg==1.0 has no wheels with a matching platform tag (e.g., `macosx_14_0_arm64`)", "… Python ABI tag"
# ("has no usable wheels" is [environment].no-build's doing: uv's own error, with its note, stands for that)
# (a name starts a word and with a letter, a range may have several parts: "x>=1.13.0,<1.18.0 has no wheels" names x,
# not "1.18.0"; "all versions of x have no wheels")
_NO_WHEEL = re.compile(r"(?:^|(?<=[\s(]))([A-Za-z][A-Za-z0-9._-]*?)(?:\[[^\]]*\])?"
                       r"(?:[<>=!~]=?[^\s,]+(?:,\s*[<>=!~]=?[^\s,]+)*)? (?:has|have) no wheels with a "
                       r"matching (?:platform|Python ABI|Python implementation) tag")


def no_wheel_here(sc: Scene, uv: str) -> str | None:
    """uv failed because a package has no file this platform can install: the platform is the cause (a conflict,
    exit 3), not the indexes."""
    names = list(dict.fromkeys(canonicalize_name(n) for n in _NO_WHEEL.findall(uv_reason(uv))))
    if not names or "has no usable wheels" in uv:
        # (an sdist passed over, the user's no-build or the decision's where uv could not build it, is the cause: the
        # platform tags uv names on its way there are not — torch-tensorrt's cp312-less old releases, where its
        # newest needs tensorrt-cu13-libs, a placeholder sdist that cannot be built here)
        return None
    named = {canonicalize_name(r.name) for r in sc.reqs}
    needed = [n for n in names if n not in named]
    who = (f" (needed by {', '.join(sorted(named & set(uv_reason(uv).replace(',', ' ').split())))})"
           if needed and named & set(uv_reason(uv).replace(",", " ").split()) else "")
    return (f"target {sc.target.name!r}: {', '.join(names)} {'has' if len(names) == 1 else 'have'} no wheel that "
            f"installs on {where(sc.target, sc.python)}{who}, in any release the requirements allow: uv: "
            f"{uv_reason(uv)}\n  fix: lock {'them' if len(names) > 1 else 'it'} for the machines that can install "
            f"{'them' if len(names) > 1 else 'it'} only (a target or environment of their own), or drop the package "
            "that needs it")


# --- a fallback: the conflict, both sides, and the least fix --------------------------------------------------------

def fallback_conflict(sc: Scene, fb: Fallback, fix: Fix, passed: tuple[str, ...] = ()) -> str:
    """`passed`: what the target cannot have, passed over (said where uv's words name it)."""
    locked = public(fb.locked.version)
    key = packages_key(sc.intent.path)
    lines = [f"target {sc.target.name!r}: {fb.name} cannot be locked at a recent release — {fb.name} {locked}, the "
             f"newest uv finds with the other requirements, only stands in for it: {'; '.join(fb.why)}"]
    accept = f"or accept {fb.name} {locked} by pinning it (\"{fb.name}=={locked}\" in {key})"
    if fix.change and fix.gives and fix.change.startswith("torch"):
        lines.append(f"  {fb.name} {fb.since} or newer cannot be installed with torch = {sc.intent.torch!r}"
                     + (f": uv: {uv_reason(fix.uv)}{_ours(passed, fix.uv)}" if fix.uv else ""))
        lines.append(f"  fix: {fix.change} in {sc.intent_file} (checked: uv then locks {fix.gives}), {accept}")
    elif fix.change and fix.gives and ">=" in fix.change:
        lines.append(f"  uv's answer in the order you named them gives up {fb.name}, but both can be recent together")
        lines.append(f"  fix: require {fix.change} in {key} (checked: uv then locks {fix.gives}), {accept}")
    elif fix.change and fix.gives:
        lines.append(f"  {fb.name} {fb.since} or newer installs only if {', '.join(fix.others)} moves down")
        lines.append(f"  fix: add {fix.change} to {key} (checked: uv then locks {fix.gives}), {accept}, or put them "
                     "in two targets or environments")
    elif fix.mutual:
        beside = " and ".join(f"{n} >= {v}" for n, v in fix.mutual)
        lines.append(f"  no {fb.name} >= {fb.since} installs beside {beside} (each older release only stands in, as "
                     f"above): uv: {uv_reason(fix.uv)}{_ours(passed, fix.uv)}")
        lines.append(f"  fix: put {fb.name} and {', '.join(n for n, _ in fix.mutual)} in two environments (or "
                     f"targets), or accept an old release of one of them by pinning it, e.g. \"{fb.name}=={locked}\" "
                     f"in {key}")
    elif fix.others:
        lines.append(f"  no {fb.name} >= {fb.since} installs beside {', '.join(fix.others)}: uv: {uv_reason(fix.uv)}"
                     + _ours(passed, fix.uv))
        lines.append(f"  fix: put {fb.name} and {', '.join(fix.others)} in two environments (or targets), pin one of "
                     f"them to a release that allows the other, {accept}")
    else:  # (Fix.native: the rule's words where uv locks it recent, and the search found no answer so)
        said = f"installs on this target: uv: {uv_reason(fix.uv)}{_ours(passed, fix.uv)}" if fix.uv else \
            "installs on this target"
        lines += [f"  no {fb.name} >= {fb.since} {fix.native or said}", "  fix: " + (
            fix.native_fix or "`tritonlock why` shows the change to the machine that would allow it") + f", {accept}"]
    return "\n".join(lines)


# --- what the facts say before uv is asked ------------------------------------------------------------------------

def not_served(sc: Scene, name: str, index: str) -> ClosureError:
    """A named package the index answers it does not have: a misspelling most often, said as that, with the nearest
    names it serves (exit 4, as for anything an index lacks)."""
    from tritonlock.lock.index import extra_index_note

    near = sc.facts.nearest(index, name)
    hint = f" (the nearest names it serves: {', '.join(near)})" if near else ""
    return ClosureError(f"target {sc.target.name!r}: no index serves a package named {name!r}: {index} answers that "
                        f"it has no such project — check the spelling in {packages_key(sc.intent.path)}{hint}"
                        + extra_index_note(), uv=f"{name} was not found in the package registry")


def no_file_here(sc: Scene, name: str, index: str, req: Requirement) -> str:
    """A named package none of whose releases (that the requirement admits) has a file the target installs."""
    from tritonlock.decide._pkgfacts import releases

    found = releases(sc.facts, index, req)
    files = sc.facts.release_files(index, name, str(found[-1])) if found else []
    platforms = sorted({f.filename[:-4].rsplit("-", 1)[-1] for f in files if f.filename.endswith(".whl")})
    shown = ", ".join(platforms[:4]) + (f" and {len(platforms) - 4} more" if len(platforms) > 4 else "")
    return (f"target {sc.target.name!r}: {name} has no release that installs on {where(sc.target, sc.python)}: "
            f"{'its wheels are for ' + shown + ' only, and it has no sdist' if platforms else 'no file of it fits'}"
            f" (read from {index})\n  fix: lock {name} for the machines that can install it only (a target or "
            f"environment of their own), or drop it from {packages_key(sc.intent.path)} for this target (a marker: "
            f"\"{name}; sys_platform == 'linux'\")")


def demoted(sc: Scene, d: Demoted, packages: tuple[LockedPackage, ...], candidate: Selection) -> str:
    """A package named later would hold back one named earlier: the earlier one's newest release admits no release of
    the later one. The fix that keeps both is the answer uv found (the earlier one lower), checked."""
    mine = next((p for p in packages if p.name == d.name), None)
    theirs = next((p for p in packages if p.name == d.by), None)
    key = packages_key(sc.intent.path)
    lines = [f"target {sc.target.name!r}: {d.by} cannot be locked beside {d.name} {d.top}, the newest {d.name} that "
             f"can be locked here — and {d.by}, named after it, may not hold it back (the packages keep the order you "
             f"wrote): uv finds no lock with {d.name}=={d.top} and {d.by}: {uv_reason(d.uv)}"]
    if mine is not None and theirs is not None:
        lines.append(f"  fix: add \"{d.name}<={public(mine.version)}\" to {key} (checked: uv then locks {d.name} "
                     f"{public(mine.version)}, {d.by} {public(theirs.version)} with torch {candidate.torch}), or put "
                     f"{d.name} and {d.by} in two environments (or targets), or drop {d.by}")
    else:
        lines.append(f"  fix: put {d.name} and {d.by} in two environments (or targets), or drop {d.by}")
    return "\n".join(lines)


def left_out(sc: Scene, missing: str, before: list[tuple[str, str]], candidate: Selection, why: str,
             full: Outcome | None, pre: tuple[str, Outcome] | None = None) -> str:
    """No release of `missing` can be locked beside the packages named before it at their newest (`before`, with
    `candidate`'s torch): the facts that say so, and the best answer that has them all (`full`, checked by uv); where
    a pre-release of `missing` newer than its releases gives an answer that has them all (`pre`: the pre-release and
    that answer, checked the same way), asking for it is a fix too."""
    key = packages_key(sc.intent.path)
    them = ", ".join(f"{n} {v}" for n, v in before)
    lines = [f"target {sc.target.name!r}: {missing} cannot be locked beside {them} (the newest that can be locked "
             f"here, with torch {candidate.torch}) — and {missing}, named after {'it' if len(before) == 1 else 'them'},"
             f" may not hold {'it' if len(before) == 1 else 'them'} back (the packages keep the order you wrote): "
             f"{why}"]
    fixes: list[str] = []
    if full is not None:
        moved = [(n, public(p.version)) for n, v in before if (p := next((q for q in full.packages if q.name == n),
                                                                          None)) is not None and public(p.version) != v]
        got = next((q for q in full.packages if q.name == missing), None)
        pins = ", ".join(f'"{n}<={v}"' for n, v in moved)
        if pins and got is not None:
            fixes.append(f"add {pins} to {key} (checked: uv then locks "
                         f"{', '.join(f'{n} {v}' for n, v in moved)}, {missing} {public(got.version)} with torch "
                         f"{full.candidate.torch})")
    if pre is not None:
        version, o = pre
        got_all = ", ".join(f"{n} {public(p.version)}" for n in [*(n for n, _ in before), missing]
                            if (p := next((q for q in o.packages if q.name == n), None)) is not None)
        fixes.append(f'ask for {missing}\'s pre-release: "{missing}>={version}" in {key} (checked: uv then locks '
                     f"{got_all} with torch {o.candidate.torch}, and their native code loads there)")
    if fixes:
        lines.append("  fix: " + "; or ".join(fixes) + f", or put {missing} in an environment (or target) of its own")
        return "\n".join(lines)
    names = " and ".join(n for n, _ in before)
    lines.append(f"  fix: put {missing} and {names} in two environments (or targets), or drop {missing}")
    return "\n".join(lines)


def also_tried(err: ClosureError, tried: list[str], intent_file: str) -> ClosureError:
    """uv's failure with what the decision tried beside it; where a package's own page of builds did not answer,
    the fix is that page (reach it, or a mirror of it), not uv's generic one."""
    down = [m for t in tried if (m := re.match(r"(\S+)'s builds at (\S+) \(not reachable from here", t))]
    text = str(err)
    if down:
        text = "\n".join(line for line in text.splitlines() if not line.startswith("  fix: "))
    text += "\n  also tried: " + "; ".join(tried)
    if down:
        pages = ", ".join(dict.fromkeys(m[2] for m in down))
        names = ", ".join(dict.fromkeys(m[1] for m in down))
        text += (f"\n  fix: {names}'s builds are on {pages}, which does not answer from here: resolve where it does, "
                 f"or name a mirror of it for {names} in {intent_file} (a [[package-builds]] table with "
                 "its index)")
    return ClosureError(text, uv=err.uv)
