"""The intent's packages and torch as requirements and specifiers: parsed once per intent, narrowed, and the torch
specifier that admits exactly a set of releases."""

from __future__ import annotations

import functools

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from tritonlock.models import Intent, Selection


def user_requirements(intent: Intent) -> list[Requirement]:
    """The intent's packages as requirements, in the order the user wrote them (the intent checked them); URL
    requirements have no 'newest'."""
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


def torch_spec(versions: list[str] | tuple[str, ...], known: list[str] | tuple[str, ...]) -> str:
    """A specifier admitting exactly `versions` among the `known` releases (and, between them, nothing the matrix
    knows otherwise): ">=2.9.0,<=2.14.0,!=2.10.0"."""
    vs = sorted({Version(v) for v in versions})
    if len(vs) == 1:
        return f"=={vs[0]}"
    lo, hi = vs[0], vs[-1]
    holes = sorted({Version(k) for k in known if lo < Version(k) < hi} - set(vs))
    return ",".join([f">={lo}", f"<={hi}"] + [f"!={h}" for h in holes])


def needs_decision(intent: Intent, sel: Selection) -> bool:
    """Whether the user's packages take part in this target's decision (any ok target of an intent that names some)."""
    return bool(sel.ok and user_requirements(intent))


def with_spec(req: Requirement, spec: str) -> str:
    """The requirement (its extras and marker kept) narrowed by `spec`: `vllm[audio]>=0.30` + `==0.33.0`."""
    r = Requirement(str(req))
    r.specifier = SpecifierSet(",".join(s for s in (str(req.specifier), spec) if s))
    return str(r)
