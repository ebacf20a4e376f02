"""The native-code rule on a target's closure (tritonlock.native.rule's predicates over the binary facts the lock
stage read, tritonlock.native.read): a closure whose extension modules cannot load on the target is no lock; and
when no choice fixes it, the conflict in words, with the least change."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tritonlock.models import LockedPackage, Selection, TargetSpec
from tritonlock.native.rule import Item, Problem, Setting, check, is_provider

if TYPE_CHECKING:
    from collections.abc import Callable

    from tritonlock.compat.matrix import Matrix
    from tritonlock.models import NativeFacts

__all__ = ["Problem", "checked", "is_provider", "problems", "conflict", "release_problems", "target_wheel", "unknowns",
           "wheels_to_read"]


def target_wheel(p: LockedPackage, target: TargetSpec, python: str) -> list[str]:
    """The sha256s of the package's wheels that install on the target (a lock may list several platforms'), the one
    an installer takes first (tag priority); every wheel where none fits."""
    from tritonlock.decide._pkgfacts import install_order

    by_name = {w.name: w.sha256 for w in p.wheels}
    return [by_name[n] for n in install_order(by_name, target, python)] or [w.sha256 for w in p.wheels]


# (url, size, sha256, file name, only what it brings): a wheel whose binary facts the lock stage reads
Wanted = tuple[str, "int | None", str, str, bool]


def wheels_to_read(sel: Selection, packages: tuple[LockedPackage, ...], python: str) -> list[Wanted]:
    """The wheels whose binary facts the rule needs: the platform wheel the target installs of each package (the
    first in tag priority), whole for the packages whose native code is checked, only what it brings for the
    providers (torch, Triton, NVIDIA's libraries). The largest first: they take longest to read."""
    from tritonlock.compat.pkgbuilds import any_wheel_natives
    from tritonlock.native.read import may_hold_native_code

    out, any_of = [], any_wheel_natives()
    for p in packages:
        first = target_wheel(p, sel.target, python)[:1]
        out += [(w.url, w.size, w.sha256, w.name, is_provider(p.name)) for w in p.wheels
                if w.sha256 in first and may_hold_native_code(w.name, any_of)]
    return sorted(out, key=lambda w: (w[4], -(w[1] or 0)))


def problems(sel: Selection, packages: tuple[LockedPackage, ...], facts: dict[str, NativeFacts], matrix: Matrix,
             *, policy: str = "compatible", optional: tuple[str, ...] = (), imports: tuple[str, ...] = (),
             lenient: bool = False) -> list[Problem]:
    """What in the closure's native code cannot load or run on `sel`'s target (empty: the closure is a lock): what
    the packages' imports reach (`imports`: the intent's [environment].imports, the optional parts the user uses),
    each extension's torch symbols checked against what the locked torch build exports. With `lenient`, a failure
    a package's own `try` catches (Problem.guarded) counts only for the packages the user names (see unknowns)."""
    items, provided, at = _judged(sel, packages, facts, matrix, policy, optional, imports)
    return counted(check(items, provided, at), sel, imports, lenient)


def counted(found: list[Problem], sel: Selection, imports: tuple[str, ...], lenient: bool) -> list[Problem]:
    """The problems that refuse: with `lenient`, not a guarded one (a module whose failure the package's own `try`
    catches) of a package the user does not name — the import works without that module, a warning says so."""
    if not lenient:
        return found
    named = {_norm(n) for n in (*(d.name for d in sel.direct), *imports)}
    return [p for p in found if not p.guarded or _norm(p.package) in named]


def _norm(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def _judged(sel: Selection, packages: tuple[LockedPackage, ...], facts: dict[str, NativeFacts], matrix: Matrix,
            policy: str, optional: tuple[str, ...], imports: tuple[str, ...]) -> tuple[list[Item], set[str], Setting]:
    """The items judged (each the wheel that installs on the target, with what of it is reached), what the closure
    brings, and the setting (with the locked torch's exports where an extension links torch's C++ API)."""
    import dataclasses

    from tritonlock.native.rule import with_reach

    target = sel.target
    python = sel.python or "3.12"
    provided: set[str] = set()
    items = []
    for p in packages:
        # the wheel that installs (the others on the lock are not on the target: what they bring is not there)
        shas = [sha for sha in target_wheel(p, target, python) if sha in facts][:1]
        for sha in shas:
            provided.update(facts[sha].provides)
            items.append(Item(name=p.name, version=p.version, facts=facts[sha]))
    items = with_reach(items, [*(d.name for d in sel.direct), *imports])
    at = _setting(sel, matrix, policy, optional)
    if any(m.torch_abi == "cxx" and m.torch_symbols for i in items if not is_provider(i.name)
           for m in i.facts.members):
        got = torch_exports(sel, packages)
        at = dataclasses.replace(at, exports=got if not isinstance(got, str) else None,
                                 exports_why=got if isinstance(got, str) else None)
    return items, provided, at


def torch_exports(sel: Selection, packages: tuple[LockedPackage, ...]) -> Any:
    """What the closure's torch wheel for the target exports of torch's C++ API (tritonlock.native.torchsyms:
    shipped in compat/, kept per sha256, else read from the wheel once); a string says why it is not known."""
    from tritonlock.native import torchsyms

    torch = next((p for p in packages if p.name == "torch"), None)
    if torch is None:
        return "the closure locks no torch"
    first = target_wheel(torch, sel.target, sel.python or "3.12")[:1]
    wheel = next((w for w in torch.wheels if w.sha256 in first), None)
    if wheel is None:
        return "the locked torch has no wheel for this target"
    return torchsyms.exports(wheel.url, wheel.size, wheel.sha256, wheel.name)


def release_problems(sel: Selection, item: Item, brought: set[str], *, matrix: Matrix, policy: str = "compatible",
                     optional: tuple[str, ...] = (), imports: tuple[str, ...] = (),
                     exports: Callable[[Selection], Any] | None = None, lenient: bool = False) -> list[Problem]:
    """What in one release's own native code cannot load beside `sel`'s torch build on its target whatever else is
    locked beside it (`brought`: the libraries taken as there): what the packages decision reads before uv is asked,
    to pass a release over for the torch lines it cannot load beside. What of it is judged is what its imports reach
    (`imports`: the packages the user names and [environment].imports): a second top-level package nothing imports
    is an optional part, never a reason to pass the release over. Its torch symbols are judged here where
    `exports(sel)` knows what the line's torch wheel exports without reading it (shipped_exports), else on the
    closure, against the torch wheel locked there."""
    import dataclasses

    from tritonlock.native.rule import with_reach

    named = [*(d.name for d in sel.direct), *imports]
    at = _setting(sel, matrix, policy, optional)
    if exports is not None and any(m.torch_abi == "cxx" and m.torch_symbols for m in item.facts.members):
        at = dataclasses.replace(at, exports=exports(sel))
    return counted(check(with_reach([item], named), brought, at), sel, imports, lenient)


def shipped_exports(sha256: str, filename: str) -> Any:
    """What the torch wheel of that sha256 exports of torch's C++ API, from the sets shipped in
    compat/torch-symbols/ (no read, no download); None where none is shipped for it."""
    from tritonlock.native import torchsyms

    for row in torchsyms.shipped():
        if sha256 in row.sha256 and (values := torchsyms._shipped_set(row)) is not None:
            return torchsyms.Exports(what=f"torch {filename.split('-')[1]} ({filename})", hashes=values,
                                     modulus=row.modulus, bits=row.bits, source=f"compat/torch-symbols/{row.file}")
    return None


def _setting(sel: Selection, matrix: Matrix, policy: str, optional: tuple[str, ...] = ()) -> Setting:
    """`optional`: the intent's [environment].optional-gpu-code, beside compat/packages.toml's."""
    from tritonlock.compat.pkgbuilds import cuda_build_picks, dlopen_needed, optional_gpu_code

    target = sel.target
    floors = {m: f for m in (11, 12, 13, 14) if (f := matrix.driver_floor(f"{m}.0", target.os, policy))}
    return Setting(torch=sel.torch, backend=sel.backend or "", driver=target.driver, gpus=target.gpus, floors=floors,
                   optional_gpu=frozenset(optional_gpu_code()) | frozenset(optional),
                   dlopen_needed=frozenset(dlopen_needed()), cuda_picks=cuda_build_picks())


def _sibling(sel: Selection, p: Problem, exists: Callable[[str], bool] | None) -> str:
    """"nixl-cu13 (nixl-cu12's build for CUDA 13, which the locked torch brings), " where the package's name carries
    another CUDA major than the torch's and its sibling is served (`exists`; unasked: said as a maybe)."""
    from tritonlock.native.libs import sibling

    major = _backend_major(sel.backend)
    other = sibling(p.package, major) if major is not None else None
    if other is None:
        return ""
    if exists is not None:
        try:
            if not exists(other):
                return ""
        except Exception:  # noqa: BLE001 — an index that cannot be asked: said as a maybe
            exists = None
    return (f"{other} ({p.package}'s build for CUDA {major}, which torch {sel.torch} brings"
            + ("" if exists is not None else ", where the index serves it") + "), or ")


def _symbol_fix(sel: Selection, p: Problem) -> str:
    """The torch a build whose symbols this torch lacks was made for: the one its wheel names, else the releases
    whose exports hold them all (the sets shipped in compat/torch-symbols/ for this platform)."""
    if p.built_for:
        return (f"torch = \"=={p.built_for}.*\" (the torch it was built for), or a {p.package} built for torch "
                f"{sel.torch}")
    from tritonlock.native.torchsyms import shipped_holding

    platform = f"{sel.target.os}_{'aarch64' if sel.target.arch in ('aarch64', 'arm64') else sel.target.arch}"
    holding = [v for v in shipped_holding(p.symbols, platform) if v != sel.torch]
    if holding:
        minor = ".".join(holding[0].split(".")[:2])
        return (f"torch = \"=={minor}.*\" (torch {', '.join(holding[:4])} export every symbol it needs: "
                f"compat/torch-symbols/), or a {p.package} built for torch {sel.torch}")
    return (f"a {p.package} built for torch {sel.torch}, or the torch it was built against (its wheel names none, "
            "and no torch build whose symbols tritonlock ships exports them all)")


def _backend_major(backend: str | None) -> int | None:
    import re

    m = re.fullmatch(r"cu([0-9]+)([0-9])", backend or "")
    return int(m[1]) if m else None


def checked(packages: tuple[LockedPackage, ...], facts: dict[str, NativeFacts]) -> str | None:
    """What the rule checked, in one reason line (None when nothing in the closure carries native code)."""
    with_code = [p for p in packages if any(w.sha256 in facts and facts[w.sha256].native for w in p.wheels)]
    if not with_code:
        return None
    n = sum(max(len(facts[w.sha256].members) for w in p.wheels if w.sha256 in facts) for p in with_code)
    names = ", ".join(p.name for p in with_code[:6]) + (f" and {len(with_code) - 6} more" if len(with_code) > 6 else "")
    return (f"native code checked: {n} shared object{'' if n == 1 else 's'} of {len(with_code)} "
            f"package{'' if len(with_code) == 1 else 's'} ({names}): what their imports load finds the libraries, "
            "torch build and GPU code it needs on this target (read from the wheels; a warning names any part that "
            "would not)")


def unknowns(sel: Selection, packages: tuple[LockedPackage, ...], facts: dict[str, NativeFacts], matrix: Matrix,
             *, policy: str = "compatible", optional: tuple[str, ...] = (), imports: tuple[str, ...] = ()
             ) -> list[str]:
    """Warnings for native code the rule does not refuse and cannot vouch for, or that works with less than it
    could: a build of torch's C++ API whose wheel names no torch and whose symbols could not be checked; a package
    that calls its kernels only on the GPUs they are for, with none for this target's; a GPU its code reaches only
    through PTX (compiled at first use); a library a module may load by name (inferred (dlopen)) that nothing
    brings; an optional part (a second top-level package nothing imports) that cannot load here; a library a package
    loads itself at run time built for a CUDA this target cannot give it (run_time_libraries); a module the
    package loads inside a `try` that cannot load here (the import goes on without it: guarded_warnings)."""
    from tritonlock.compat.pkgbuilds import optional_gpu_code as rows
    from tritonlock.native.notes import (dlopen_warnings, optional_gpu_code, optional_parts, ptx_only,
                                         run_time_libraries, unknown_torch)

    items, provided, at = _judged(sel, packages, facts, matrix, policy, optional, imports)
    why = f"; its symbols could not be checked: {at.exports_why}" if at.exports_why else ""
    return ([f"{u}: whether it loads with torch {sel.torch} is not known from its files (inferred from nothing{why})"
             " — `tritonlock verify` imports it on the machine and says"
             for u in unknown_torch(items, sel.torch, sel.backend, exports=at.exports)]
            + optional_gpu_code(items, at, rows()) + ptx_only(items, at) + dlopen_warnings(items, provided, at)
            + optional_parts(items, provided, at) + run_time_libraries(items, provided, at)
            + guarded_warnings(check(items, provided, at)))


def guarded_warnings(found: list[Problem]) -> list[str]:
    """In words, each failure a package's own `try` catches: what cannot load, and that the import works without it
    (which modules load only inside a `try` is read from the package's Python: inferred)."""
    by: dict[tuple[str, str], list[Problem]] = {}
    for p in found:
        if p.guarded:
            by.setdefault((p.package, p.version), []).append(p)
    return [f"{name} {version}: {'; '.join(p.text for p in probs[:2])}"
            + (f" (and {len(probs) - 2} more)" if len(probs) > 2 else "")
            + f" — {name} loads that module inside a `try` that catches the failure (inferred from its Python), "
              f"so `import {_top(probs[0])}` works without it and what needs it is off: lock a {name} built for this "
              f"torch (a release whose native code loads here) to have it" for (name, version), probs in by.items()]


def _top(p: Problem) -> str:
    """The import name of the module a problem's text names ("torchao/_C.abi3.so in …" -> torchao)."""
    first = p.text.split(" ", 1)[0]
    return first.split("/", 1)[0] if "/" in first else _norm(p.package).replace("-", "_")


def conflict(sel: Selection, found: list[Problem], rejected: list[str], *, left: str | None = None,
             exists: Callable[[str], bool] | None = None) -> str:
    """No choice fixes the closure's native code: the package, what it needs, and the least change. `rejected`: the
    releases tried and passed over; `left`: why the decision with those releases passed over locks nothing. A
    package the user named leads where its problem is of the same kind as a dependency's. `exists(name)`: whether the
    default index serves a package of that name (the fix names a package's build for the other CUDA major only where
    one is; where it cannot be asked, as a maybe)."""
    import re

    from tritonlock.native.rule import HOPELESS

    named = {d.name for d in sel.direct}
    # what no other closure changes first, then the packages the user named (a dependency's problem is theirs too)
    found = sorted(found, key=lambda p: (p.kind not in HOPELESS,
                                         re.sub(r"[-_.]+", "-", p.package).lower() not in named))
    first = found[0]
    lines = [f"target {sel.target.name!r}: {first.package}'s native code cannot load on this target: {first.line}"]
    lines += [f"  also: {p.line}" for p in found[1:3]]
    if rejected:
        lines.append("  tried and rejected: " + _releases(rejected))
    if left:
        lines.append("  with those passed over: " + (left.split(": ", 1)[-1] if left.startswith("target ") else left))
    lines.append("  fix: " + _least_change(sel, first, exists))
    return "\n".join(lines)


def _releases(rejected: list[str]) -> str:
    """'torchao 0.18.0, 0.17.0, … 0.5.0 (14 releases); xformers 0.0.35': the releases per package, in order."""
    by: dict[str, list[str]] = {}
    for r in rejected:
        name, _, version = r.partition(" ")
        by.setdefault(name, []).append(version)
    out = []
    for name, vs in by.items():
        out.append(f"{name} {', '.join(vs)}" if len(vs) <= 4 else
                   f"{name} {', '.join(vs[:2])}, … {vs[-1]} ({len(vs)} releases)")
    return "; ".join(out)


def _least_change(sel: Selection, p: Problem, exists: Callable[[str], bool] | None = None) -> str:
    import re

    named = [d.name for d in sel.direct]
    mine = re.sub(r"[-_.]+", "-", p.package).lower() in named or not named
    # a dependency's problem: the packages named that bring it are what to lock elsewhere
    who, it = (p.package, "it") if mine else (
        f"{p.package}, which {named[0] if len(named) == 1 else 'one of ' + ', '.join(named)} requires,",
        named[0] if len(named) == 1 else "them")
    other = {"torch's ROCm build": "an AMD GPU and torch's ROCm build", "torch's XPU build":
             "an Intel GPU and torch's XPU build"}.get(p.needs) if p.kind == "torch-build" else None
    if other:
        return (f"{who} needs {other}: lock {it} for those machines only (a target or environment of their own), "
                "not for this one")
    if (p.kind in ("driver", "torch-build") and sel.target.driver is None) or (
            p.kind in ("cuda-library", "cuda-driver") and (sel.backend or "").startswith(("rocm", "xpu"))):
        return (f"{who} needs an NVIDIA GPU: lock {it} for the GPU machines only (a target or environment of "
                "their own), not for this one")
    if p.kind == "torch-build":
        return f"torch's CUDA build ([environment].cuda, not \"{sel.backend}\") for {p.package}"
    sib = _sibling(sel, p, exists) if p.kind in ("cuda-library", "cuda-driver") else ""
    if p.kind == "cuda-library":
        return (f"{sib}a torch build that brings {p.needs} (its CUDA major), or a build of {p.package} made for this "
                f"torch's CUDA ([[package-builds]] in triton-env.toml names where its per-CUDA builds are)")
    if p.kind == "cuda-driver":
        return f"{sib}a driver that runs {p.needs} (`tritonlock why` shows what it unlocks), or a {p.package} built " \
               "for an older CUDA"
    if p.kind == "cuda-build":
        have = p.builds
        cu = f" = \"cu{have[0].replace('.', '')}\"" if have and "." in have[0] else ""
        return (f"a torch built for CUDA {' or '.join(have[:2]) if len(have) <= 2 else have[0] + ' … ' + have[-1]} "
                f"(torch = \"...\" or [environment].cuda{cu}), or a {p.package} release with a build for {p.needs}")
    if p.kind == "torch-symbol":
        return _symbol_fix(sel, p)
    if p.kind == "torch-release":
        return f"torch = \"=={p.needs.split()[-1]}.*\" (the torch it was built for), or a {p.package} built for " \
               f"torch {sel.torch}"
    return (f"a build of {p.package} with code for {p.needs} (none of the releases tried has it), or a target "
            f"without {p.package} for these GPUs")
