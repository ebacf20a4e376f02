"""What-if advice: for a target, what stands between it and each newer torch/triton line, and the least change
that unlocks it — each line citing the compat/ rows it rests on, each checked by resolving again with its change
(offline, from compat/); where the user names packages, each change is also applied to the whole decision, the
packages locked with uv through a callable the orchestrator hands in (`check_packages`). Nothing is installed."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from packaging.version import Version

from tritonlock._archs import cc_tuple, gpu_runs
from tritonlock.compat.matrix import Matrix, driver_branch_number
from tritonlock.compat.rows import Ptxas, TorchRelease
from tritonlock.models import Intent, Selection, TargetSpec
from tritonlock.decide import rules
from tritonlock.decide.resolve import platform_of, release_problem, resolve_one, selection_json
from tritonlock.decide.targetfacts import describe_target, driver_branch, driver_candidates, pinned_triton


@dataclass(frozen=True, kw_only=True, slots=True)
class Change:
    """One change to the machine or the intent, with the matrix row that makes it necessary."""

    kind: str  # "driver" | "python" | "glibc" | "macos" | "triton" | "cuda" | "cuda-policy" | "torch"
    have: str | None
    need: str
    words: str  # "driver >= 580.65.06 (you have 535.104.05; the R580 branch)"
    sources: tuple[str, ...]  # the compat/ rows it rests on: "minor_compat 13: https://..."


@dataclass(frozen=True, kw_only=True, slots=True)
class Checked:
    """A change applied to the whole decision: what locking the user's packages with it gave (uv and the indexes)."""

    checked: bool  # False: not checked (words say why)
    words: str
    then: Selection | None = None  # what the lock would hold with the change (None: not checked)


@dataclass(frozen=True, kw_only=True, slots=True)
class Line:
    """One newer torch line (its newest release) and what it would take on this target."""

    torch: str
    triton_package: str | None
    triton: str | None
    status: str  # "available": fits as is | "excluded": fits, the intent rules it out | "blocked" | "unreachable"
    blocker: str | None  # the resolver's own words for what stops it here
    changes: tuple[Change, ...]  # the least change that unlocks it (empty when available or unreachable)
    then: Selection | None  # what the target would get after those changes
    sources: tuple[str, ...]  # every compat/ row the line rests on
    # with the user's packages: the change applied to the whole decision (uv and the indexes), or why not checked
    with_packages: Checked | None = None

    @property
    def summary(self) -> str:
        head = f"torch {self.torch}" + (f" + {self.triton_package} {self.triton}" if self.triton else "")
        if self.status == "available":
            return f"{head}: fits this target as it is"
        if self.status == "unreachable":
            return f"{head}: {self.blocker}"
        return f"{head}: needs " + " and ".join(c.words for c in self.changes)


@dataclass(frozen=True, kw_only=True, slots=True)
class Advice:
    target: TargetSpec
    python: str
    now: Selection
    lines: tuple[Line, ...]
    matrix: Matrix | None = None  # the facts it was made from (what a lock with triton = "none" still installs)
    packages: tuple[str, ...] = ()  # what the user's packages hold back, from the lock (package_advice)
    checked: str = ""  # how the lines were checked, where the user names packages ("" without packages)


# --- the search ----------------------------------------------------------------------------------------------

def advise(intent: Intent, matrix: Matrix, target: TargetSpec, default_python: str,
           torch: str | None = None) -> Advice:
    """What stands between `target` and each newer torch line (or only `torch`: "2.15" or "2.15.0")."""
    now = resolve_one(intent, matrix, target, default_python)
    python = target.python or intent.python or default_python
    lines: list[Line] = []
    stopped = False
    releases = _releases(matrix, now, torch)
    for i, r in enumerate(releases):
        ln = _line(intent, matrix, target, default_python, r, now)
        lines.append(ln)
        if not now.ok and not torch and ln.status == "blocked" and len(ln.changes) == 1 \
                and ln.changes[0].kind not in INTENT_KINDS:
            stopped = True  # nothing fits now: newest lines down to the first that one machine change unlocks,
            # then each older line that a strictly smaller machine change unlocks (R580 -> 2.15, then R525 -> 2.14.1)
            for older in releases[i + 1:]:
                nxt = _line(intent, matrix, target, default_python, older, now)
                if nxt.status != "blocked" or not _smaller(nxt.changes, lines[-1].changes):
                    break
                lines.append(nxt)
            break
    if not now.ok and not torch and not stopped:
        # no single machine change helps: down to the first line a machine change alone unlocks, else any change
        tests: list[Callable[[Line], bool]] = [
            lambda ln: ln.status == "blocked" and not {c.kind for c in ln.changes} & INTENT_KINDS,
            lambda ln: ln.status != "unreachable"]
        for test in tests:
            cut = next((i for i, ln in enumerate(lines) if test(ln)), None)
            if cut is not None:
                lines = lines[:cut + 1]
                break
    return Advice(target=target, python=python, now=now, lines=tuple(lines), matrix=matrix)


INTENT_KINDS = {"triton", "cuda", "cuda-policy", "torch"}
_ORDERED_KINDS = {"driver", "glibc", "macos"}  # machine changes whose size is their version: smaller is less work


def _smaller(these: tuple[Change, ...], than: tuple[Change, ...]) -> bool:
    """Whether machine changes `these` are strictly less than `than`: no kind `than` lacks, no larger value, and
    at least one smaller value or one change fewer (a Python change counts only when it is the same one)."""
    if not these or {c.kind for c in these} & INTENT_KINDS:
        return False
    big = {c.kind: c.need for c in than}
    less = len(these) < len(than)
    for c in these:
        if c.kind not in big:
            return False
        if c.kind in _ORDERED_KINDS:
            if Version(c.need) > Version(big[c.kind]):
                return False
            less = less or Version(c.need) < Version(big[c.kind])
        elif c.need != big[c.kind]:
            return False
    return less


def _releases(matrix: Matrix, now: Selection, torch: str | None) -> list[TorchRelease]:
    """The newest release of each minor line newer than what the target gets now (every line on a conflict)."""
    if torch:
        want = torch.strip().lstrip("=")
        exact = [r for r in matrix.torch if r.version == want]
        return exact or [r for r in matrix.torch if r.version.startswith(want + ".")][:1]
    floor = Version(now.torch) if now.ok and now.torch else None
    out: list[TorchRelease] = []
    seen: set[tuple[int, ...]] = set()
    for r in matrix.torch:  # newest first
        v = Version(r.version)
        if floor is not None and v <= floor:
            break
        if v.release[:2] not in seen:
            seen.add(v.release[:2])
            out.append(r)
    return out


def _line(intent: Intent, matrix: Matrix, target: TargetSpec, default_python: str, rel: TorchRelease,
          now: Selection) -> Line:
    pinned = dataclasses.replace(intent, torch=f"=={rel.version}")
    tri = _triton_of(matrix, rel, target)
    here = resolve_one(pinned, matrix, target, default_python, advise=False)
    if here.ok:
        status = "available" if now.ok and now.torch == rel.version else "excluded"
        blocker = None if status == "available" else (
            f"torch = {intent.torch!r} in triton-env.toml rules it out" if intent.torch else
            "the intent's choices rule it out")
        changes: tuple[Change, ...] = () if status == "available" else (Change(
            kind="torch", have=intent.torch or "*", need=f">={rel.version}",
            words=f"torch = \">={rel.version}\" in triton-env.toml (it fits this machine as it is)",
            sources=(_row("torch", rel.version, rel.source),)),)
        return Line(torch=rel.version, triton_package=here.triton_package, triton=here.triton, status=status,
                    blocker=blocker, changes=changes, then=here, sources=_sources(matrix, here, changes))
    blocker = release_problem(pinned, matrix, target, rel, default_python) or "; ".join(here.reasons)
    found = _least_change(intent, matrix, target, default_python, rel)
    if found is None:
        return Line(torch=rel.version, triton_package=tri[0], triton=tri[1], status="unreachable",
                    blocker=_unreachable(matrix, target, rel, blocker), changes=(), then=None,
                    sources=_rel_sources(matrix, target, rel))
    changes, then = found
    return Line(torch=rel.version, triton_package=then.triton_package, triton=then.triton, status="blocked",
                blocker=blocker, changes=changes, then=then, sources=_sources(matrix, then, changes))


def _triton_of(matrix: Matrix, rel: TorchRelease, target: TargetSpec) -> tuple[str | None, str | None]:
    if target.os == "windows":
        tw = matrix.triton_windows_for(rel.version)
        return ("triton-windows", tw.version) if tw else (None, None)
    return ("triton", rel.triton) if target.os == "linux" and rel.triton else (None, None)


def _least_change(intent: Intent, matrix: Matrix, target: TargetSpec, default_python: str,
                  rel: TorchRelease) -> tuple[tuple[Change, ...], Selection] | None:
    """The fewest, smallest changes (driver, Python, glibc, then the intent's Triton/CUDA choices) under which the
    resolver itself picks this release — every answer is checked by resolving again, never inferred."""
    platform = platform_of(target)
    dims: list[list[tuple[str, str]]] = []
    if target.driver is not None:
        dims.append([("driver", d) for d in driver_candidates(matrix, target)])
    if target.amdgpu is not None:  # AMD: newer amdgpu kernel-driver releases (compat/rocm.toml [[amdgpu]])
        dims.append([("amdgpu", d) for d in _amdgpu_candidates(target.amdgpu)])
    py = target.python or intent.python or default_python
    if py[:1].isdigit():
        here = Version(py)
        cands = sorted((p for p in rel.pythons(platform) if p != py),
                       key=lambda p: (abs(Version(p).minor - here.minor), Version(p) < here))
        dims.append([("python", p) for p in cands])
    if target.glibc:
        floors = {f for v in rel.variants if platform in v.platforms
                  if (f := rel.glibc_for(platform, v.backend)) and Version(f) > Version(target.glibc)}
        dims.append([("glibc", f) for f in sorted(floors, key=Version)])
    if target.os == "macos" and target.macos:
        floors = {f for f in [*rel.macos.values(), *rel.macos_by_python.values()] if Version(f) > Version(target.macos)}
        dims.append([("macos", f) for f in sorted(floors, key=Version)])
    intent_dims: list[tuple[str, str]] = []
    if intent.cuda_policy == "strict":
        intent_dims.append(("cuda-policy", "compatible"))
    if intent.cuda not in ("auto", "cpu"):
        intent_dims.append(("cuda", "auto"))
    if intent.triton not in ("auto", "none"):
        intent_dims.append(("triton", "auto"))  # a specifier that rules out the line's triton: drop it, keep Triton
    if intent.triton not in ("none",):
        intent_dims.append(("triton", "none"))
    dims = [d for d in dims if d]
    pinned = dataclasses.replace(intent, torch=f"=={rel.version}")

    def attempt(choice: tuple[tuple[str, str], ...]) -> Selection | None:
        t, it = target, pinned
        for kind, value in choice:
            if kind == "driver":
                t = dataclasses.replace(t, driver=value, cuda=None)
            elif kind == "amdgpu":
                t = dataclasses.replace(t, amdgpu=value)
            elif kind == "python":
                t = dataclasses.replace(t, python=value)
            elif kind == "glibc":
                t = dataclasses.replace(t, glibc=value)
            elif kind == "macos":
                t = dataclasses.replace(t, macos=value)
            elif kind == "cuda-policy":
                it = dataclasses.replace(it, cuda_policy=value)
            elif kind == "cuda":
                it = dataclasses.replace(it, cuda=value)
            else:
                it = dataclasses.replace(it, triton=value)
        sel = resolve_one(it, matrix, t, default_python, advise=False)
        return sel if sel.ok and sel.torch == rel.version else None

    # Machine changes first (fewest dimensions, then the smallest values), then each intent change on its own or
    # with them: "triton = none" is an escape hatch, offered only when no machine change unlocks the line.
    for extra in [()] + [(x,) for x in intent_dims]:
        for k in range(0 if extra else 1, len(dims) + 1):
            for group in itertools.combinations(dims, k):
                for values in sorted(itertools.product(*group), key=lambda c: sum(_rank(group, c))):
                    choice = tuple(values) + extra
                    sel = attempt(choice)
                    if sel is not None:
                        why_not = None
                        if extra and extra[0][0] == "triton":  # what stops its Triton once the machine changed
                            why_not = release_problem(pinned, matrix, sel.target, rel, default_python)
                        return tuple(_change(matrix, target, intent, py, rel, sel, c, why_not) for c in choice), sel
    return None


def _rank(group: tuple[list[tuple[str, str]], ...], values: tuple[tuple[str, str], ...]) -> list[int]:
    return [dim.index(v) for dim, v in zip(group, values)]


def _change(matrix: Matrix, target: TargetSpec, intent: Intent, python: str, rel: TorchRelease, then: Selection,
            choice: tuple[str, str], why_not: str | None = None) -> Change:
    kind, value = choice
    if kind == "amdgpu":
        from tritonlock.compat.matrix_vendor import load_vendor_matrix

        d = load_vendor_matrix().amdgpu_release(value)
        return Change(kind=kind, have=target.amdgpu, need=value,
                      words=f"amdgpu driver >= {value} (you have {target.amdgpu}; it supports the ROCm "
                            f"{then.backend[4:] if then.backend else '?'} user space of {then.backend})",
                      sources=(_row("amdgpu", value, d.source),) if d else ())
    if kind == "driver":
        return Change(kind=kind, have=target.driver, need=value,
                      words=f"driver >= {value} (you have {target.driver}; {driver_branch(value)})",
                      sources=_driver_sources(matrix, target, then))
    if kind == "python":
        own = target.python and target.origin == "intent"
        where = f"python = \"{value}\"" + (f" for target {target.name!r}" if own else " in [environment]")
        lo, hi = rel.pythons(platform_of(target))[0], rel.pythons(platform_of(target))[-1]
        return Change(kind=kind, have=python, need=value,
                      words=f"Python {value} (you have {python}; torch {rel.version} supports {lo}–{hi}: {where})",
                      sources=(_row("torch", rel.version, rel.source),))
    if kind == "macos":
        return Change(kind=kind, have=target.macos, need=value,
                      words=f"macOS >= {value} (you have {target.macos}; torch {rel.version} ships "
                            f"macosx_{value.replace('.', '_')} wheels)",
                      sources=(_row("torch", rel.version, rel.source),))
    if kind == "glibc":
        return Change(kind=kind, have=target.glibc, need=value,
                      words=f"glibc >= {value} (you have {target.glibc}: a newer OS image)",
                      sources=(_row("torch", rel.version, rel.source),))
    if kind == "triton" and value == "auto":
        tri = then.triton_package or "triton"
        return Change(kind=kind, have=intent.triton, need=value,
                      words=f"triton = \"auto\" ({tri} {then.triton}, the one torch {rel.version} goes with, is "
                            f"outside triton = {intent.triton!r})",
                      sources=(_row("torch", rel.version, rel.source),))
    if kind == "triton":
        row = _ptxas_row(matrix, target, rel)
        tr = matrix.triton_release(rel.triton or "")
        words = "triton = \"none\" (" + (why_not or "torch runs here, its Triton does not")
        if why_not and "minor-version compatibility" in why_not:
            env = "TRITON_PTXAS_BLACKWELL_PATH" if "ptxas-blackwell" in why_not else "TRITON_PTXAS_PATH"
            words += f"; with it, point {env} at a ptxas this driver loads to keep Triton kernels working"
        return Change(kind=kind, have=intent.triton, need=value, words=words + ")",
                      sources=tuple(x for x in (
                          _row("ptxas", f"{row.package} {row.version} {row.platform}", row.source) if row else "",
                          _row("triton", tr.version, tr.source) if tr else "") if x))
    if kind == "cuda":
        return Change(kind=kind, have=intent.cuda, need=value, words=f"cuda = \"auto\" (not {intent.cuda!r})",
                      sources=(_row("torch", rel.version, rel.source),))
    return Change(kind=kind, have=intent.cuda_policy, need=value,
                  words="cuda-policy = \"compatible\" (CUDA minor-version compatibility)",
                  sources=tuple(x for x in (_minor_source(matrix, then),) if x))


def _driver_sources(matrix: Matrix, target: TargetSpec, then: Selection) -> tuple[str, ...]:
    """The rows that set the driver floor: the build's CUDA and its floors, and Triton's bundled ptxas."""
    out: list[str] = []
    for cc in sorted(set(_nvidia(target)), key=cc_tuple):  # the GPU itself: a driver older than its first toolkit's branch
        found = matrix.gpu_driver_floor(cc, target.os)
        if found is not None and target.driver is not None \
                and driver_branch_number(target.driver) < driver_branch_number(found[0]):
            out.append(_row("gpu", f"{found[1].family} first_cuda {found[1].first_cuda}", found[1].first_cuda_source))
    rel = matrix.torch_release(then.torch or "")
    var = rel.variant(then.backend or "", platform_of(target)) if rel else None
    if rel is not None and var is not None and var.cuda:
        out.append(_row("torch.variant", f"{rel.version} {var.backend}", var.source))
        tk = matrix.toolkit(var.cuda)
        if tk is not None:
            out.append(_row("cuda", tk.version, tk.source))
    out.append(_minor_source(matrix, then))
    if rel is not None:
        row = _ptxas_row(matrix, target, rel)
        if row is not None:
            out.append(_row("ptxas", f"{row.package} {row.version} {row.platform}", row.source))
    return tuple(dict.fromkeys(x for x in out if x))


def _minor_source(matrix: Matrix, then: Selection) -> str:
    rel = matrix.torch_release(then.torch or "")
    var = next((v for v in rel.variants if v.backend == then.backend), None) if rel else None
    major = int(var.cuda.split(".")[0]) if var and var.cuda else None
    mc = next((m for m in matrix.minor_compat if m.major == major), None)
    return _row("minor_compat", str(mc.major), mc.source) if mc else ""


def _ptxas_row(matrix: Matrix, target: TargetSpec, rel: TorchRelease) -> Ptxas | None:
    pkg, ver = _triton_of(matrix, rel, target)
    if pkg is None or ver is None:
        return None
    return matrix.ptxas_build(pkg, ver, platform_of(target) if pkg == "triton" else "win_amd64")


def _amdgpu_candidates(have: str) -> list[str]:
    """amdgpu driver releases newer than `have`, oldest first (AMD's support matrix rows)."""
    from tritonlock.compat.matrix_vendor import load_vendor_matrix

    vm = load_vendor_matrix()
    now = vm.amdgpu_release(have)
    base = Version(now.release) if now else None
    return [d.release for d in sorted(vm.amdgpu, key=lambda d: Version(d.release))
            if base is None or Version(d.release) > base]


def _nvidia(target: TargetSpec) -> list[str]:
    """The target's NVIDIA GPUs (compute capabilities); AMD/Intel targets' gfx and device names are not."""
    from tritonlock.compat.matrix_vendor import vendor_of

    return [g for g in target.gpus if vendor_of(g) == "nvidia"]


def _unreachable(matrix: Matrix, target: TargetSpec, rel: TorchRelease, blocker: str) -> str:
    """No driver, Python or glibc change unlocks it: say which GPU the builds dropped, when that is why."""
    platform = platform_of(target)
    h = rules.Host.of(Intent(path=""), matrix, target, "")
    jetson = next((why for cc in h.ccs if (why := rules.gpu_has_pytorch_wheels(h, cc))), None)
    if jetson is not None and target.driver is not None:  # no machine change makes PyTorch's index build for it
        return (f"no driver, Python or glibc change unlocks it here: {jetson}; install NVIDIA's PyTorch wheels for "
                "JetPack on that machine, or set cuda = \"cpu\" to lock the CPU build")
    gone = [cc for cc in sorted(set(_nvidia(target)), key=cc_tuple)
            if not any(gpu_runs(cc, v.archs, v.ptx) for v in rel.variants if platform in v.platforms and v.cuda)]
    if not gone:
        return f"no driver, Python or glibc change unlocks it here ({blocker})"
    words = []
    for cc in gone:
        last = next((r.version for r in matrix.torch
                     if any(gpu_runs(cc, v.archs, v.ptx) for v in r.variants if platform in v.platforms and v.cuda)),
                    None)
        arch = "sm_" + cc.replace(".", "")
        words.append(f"your GPU ({arch}) is not in any build of torch {rel.version} for {platform}"
                     + (f"; the newest torch with one is {last}" if last else ""))
    return "; ".join(words)


def _rel_sources(matrix: Matrix, target: TargetSpec, rel: TorchRelease) -> tuple[str, ...]:
    platform = platform_of(target)
    out = [_row("torch", rel.version, rel.source)]
    out += [_row("torch.variant", f"{rel.version} {v.backend}", v.source) for v in rel.variants
            if platform in v.platforms and v.cuda]
    return tuple(dict.fromkeys(out))


def _sources(matrix: Matrix, then: Selection, changes: Iterable[Change]) -> tuple[str, ...]:
    out = [src for c in changes for src in c.sources]
    rel = matrix.torch_release(then.torch or "")
    if rel is not None:
        out.append(_row("torch", rel.version, rel.source))
    return tuple(dict.fromkeys(out))


def _row(table: str, key: str, source: str) -> str:
    return f"{table} {key}: {source}"


# --- output --------------------------------------------------------------------------------------------------

def advice_json(a: Advice) -> dict[str, object]:
    """The public `why --json` shape of one target (a documented contract: docs/decision.md, "`tritonlock why` — what would it take?")."""
    return {
        "name": a.target.name,
        "target": describe_target(a.target, a.python),
        "now": selection_json(a.now),
        "lines": [{
            "torch": ln.torch, "triton_package": ln.triton_package, "triton": ln.triton, "status": ln.status,
            "summary": ln.summary, "blocker": ln.blocker,
            "changes": [{"kind": c.kind, "have": c.have, "need": c.need, "words": c.words,
                         "sources": list(c.sources)} for c in ln.changes],
            "then": selection_json(ln.then) if ln.then is not None else None,
            "sources": list(ln.sources),
            "with_packages": None if ln.with_packages is None else {
                "checked": ln.with_packages.checked, "words": ln.with_packages.words,
                "then": selection_json(ln.with_packages.then) if ln.with_packages.then is not None else None},
        } for ln in a.lines],
        "packages": list(a.packages),
        "checked": a.checked,
    }


def format_advice(a: Advice, sources: bool = True) -> str:
    s = a.now
    now = (f"torch {s.torch} ({s.backend}) + {s.triton_package or 'no triton'} {s.triton or ''}".rstrip()
           if s.ok else "nothing fits (see `tritonlock resolve --dry-run`)")
    out = [f"target {a.target.name} ({describe_target(a.target, a.python)})", f"  now: {now}"]
    if a.packages:
        out.append("  your packages (triton-env.lock):")
        for p in a.packages:  # the claim, then how it was checked on a line of its own
            for sep in (" — checked with uv: ", " — not checked with uv"):
                claim, found, rest = p.partition(sep)
                if found:
                    out += [f"    {claim}", f"      {found[3:]}{rest}"]
                    break
            else:
                out.append(f"    {p}")
    if not a.lines:
        out.append("  nothing newer: this is the newest torch line the matrix knows")
    for group in _runs(a.lines):
        ln = group[0]
        summary = ln.summary
        if len(group) > 1:  # consecutive lines that need the same change read as one
            oldest = group[-1]
            span = f"torch {oldest.torch}–{ln.torch}"
            if ln.triton and oldest.triton:
                span += f" + {ln.triton_package} " + (ln.triton if ln.triton == oldest.triton
                                                      else f"{oldest.triton}–{ln.triton}")
            summary = span + summary[summary.index(":"):]
        out.append(f"  {summary}")
        if ln.blocker and ln.status == "blocked":
            out.append(f"      because: {ln.blocker}")
        if ln.then is not None and ln.status != "available":
            t = ln.then
            pin = pinned_triton(a.matrix, t) if a.matrix is not None and not t.triton else None
            tri = (f"triton {pin} (the one its wheels require, installed but not checked)" if pin
                   else f"{t.triton_package or 'no triton'} {t.triton or ''}".rstrip())
            out.append(f"      then: torch {t.torch} ({t.backend}) + {tri}")
        if ln.with_packages is not None:
            out.append(f"      {ln.with_packages.words}")
        if sources:
            out += [f"      rests on {src}" for src in dict.fromkeys(x for g in group for x in g.sources)]
    return "\n".join(out)


def _runs(lines: tuple[Line, ...]) -> list[list[Line]]:
    """Consecutive lines with the same status, blocker kind and changes (the torch version aside)."""
    def key(ln: Line) -> tuple[object, ...]:
        words = tuple(c.words.replace(f"torch {ln.torch} ", "torch ") for c in ln.changes)
        return (ln.status, words, (ln.blocker or "").split(":")[0] if ln.status == "blocked" else ln.blocker,
                ln.with_packages.words if ln.with_packages else None)
    out: list[list[Line]] = []
    for ln in lines:
        if out and key(out[-1][-1]) == key(ln) and ln.status in ("blocked", "excluded", "unreachable"):
            out[-1].append(ln)
        else:
            out.append([ln])
    return out
