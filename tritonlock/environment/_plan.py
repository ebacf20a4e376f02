"""The plan, pure: what to install, upgrade, repair, remove and keep so a venv matches a lock target; its
download size and its text."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from tritonlock._term import human_size as human_size  # one unit system for every size tritonlock prints
from tritonlock.environment import _venv

if TYPE_CHECKING:
    from tritonlock.models import LockedPackage, LockedTarget

# Installer tooling a venv may carry that the lock does not manage (removing pip surprises people).
TOOLING = frozenset({"pip"})
# Distributions whose default-index build equals a local-tagged build on the torch index.
LOCAL_TAGGED = frozenset({"torch", "torchvision", "torchaudio"})


@dataclass(frozen=True, kw_only=True, slots=True)
class Step:
    name: str
    action: str  # "install" | "upgrade" | "reinstall" | "remove" | "keep" | "leave"
    have: str | None = None
    want: str | None = None
    note: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    target: str
    steps: tuple[Step, ...]
    download: int | None = None  # bytes of the wheels to fetch (the sizes the lock records)
    unsized: int = 0  # packages to fetch whose size the lock does not record

    def of(self, action: str) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.action == action)

    @property
    def noop(self) -> bool:
        return all(s.action in ("keep", "leave") for s in self.steps)


def _same(locked: LockedPackage, have: str, equivalent_backend: str | None) -> str | None:
    """'' when identical, a note when equivalent (PyPI's build of the locked torch variant), None otherwise."""
    from packaging.version import InvalidVersion, Version

    try:
        hv, lv = Version(have), Version(locked.version)
    except InvalidVersion:
        return "" if have == locked.version else None
    if hv == lv:
        return ""
    if (locked.name in LOCAL_TAGGED and not hv.local and lv.local and hv.public == lv.public
            and equivalent_backend == lv.local):
        return f"the default index's {have} is the {lv.local} build"
    return None


def plan(target: LockedTarget, venv_dists: dict[str, str], system_dists: dict[str, str] | None = None,
         equivalent_backend: str | None = None, damaged: Mapping[str, str] | None = None,
         again: Collection[str] = (), project: str | None = None) -> Plan:
    """Pure: what to install, upgrade, reinstall (damaged, or named in `again`: `sync --reinstall`), remove and
    keep so the venv matches the target. `project`: the project itself, installed editable by sync (kept)."""
    steps: list[Step] = []
    system = system_dists or {}
    broken = damaged or {}
    locked = {p.name: p for p in target.packages}
    for name, pkg in sorted(locked.items()):
        have = venv_dists.get(name)
        if have is not None:
            note = _same(pkg, have, equivalent_backend)
            if name in broken:
                steps.append(Step(name=name, action="reinstall" if note is not None else "upgrade", have=have,
                                  want=pkg.version, note=f"damaged: {broken[name]}"))
                continue
            if name in again:
                steps.append(Step(name=name, action="reinstall" if note is not None else "upgrade", have=have,
                                  want=pkg.version, note="--reinstall"))
                continue
            steps.append(Step(name=name, action="keep" if note is not None else "upgrade", have=have,
                              want=pkg.version, note=note or ""))
            continue
        sys_have = system.get(name)
        if sys_have is not None:
            note = _same(pkg, sys_have, equivalent_backend)
            if note is not None:
                steps.append(Step(name=name, action="keep", have=sys_have, want=pkg.version,
                                  note=("preinstalled" + (f"; {note}" if note else ""))))
                continue
            steps.append(Step(name=name, action="install", have=None, want=pkg.version,
                              note=f"preinstalled {sys_have} differs; installing the locked one into the venv"))
            continue
        steps.append(Step(name=name, action="install", want=pkg.version,
                          note=f"damaged: {broken[name]}" if name in broken else ""))
    for name, have in sorted(venv_dists.items()):
        if name in locked or name in TOOLING:
            continue
        if name == project and name not in broken:
            steps.append(Step(name=name, action="keep", have=have, want=have, note="the project itself (editable)"))
            continue
        if not _venv.valid_name(name):
            # Never handed to an installer: a name like "-r" or "--all" would be read as an option.
            steps.append(Step(name=name, action="leave", have=have,
                              note="not a valid distribution name: no installer can remove it — remove its "
                                   ".dist-info directory by hand"))
        else:
            steps.append(Step(name=name, action="remove", have=have))
    return Plan(target=target.name, steps=tuple(steps))


@functools.lru_cache(maxsize=8)
def _tag_priority(python: str) -> dict[Any, int]:
    """This host's wheel tags for a Python, best first (thousands: computed once per Python, not per package)."""
    from packaging import tags

    major, minor = (int(x) for x in python.split(".")[:2])
    platforms = list(tags.platform_tags())
    prio: dict[Any, int] = {}
    for i, tag in enumerate([*tags.cpython_tags((major, minor), platforms=platforms),
                             *tags.compatible_tags((major, minor), platforms=platforms)]):
        prio.setdefault(tag, i)
    return prio


def wheel_for(pkg: LockedPackage, python: str) -> Any:
    """The wheel uv would pick for this host and Python (by tag priority), or None."""
    from packaging.utils import parse_wheel_filename

    if not pkg.wheels:
        return None
    prio = _tag_priority(python)
    best, rank = None, len(prio)
    for w in pkg.wheels:
        try:
            wtags = parse_wheel_filename(w.name)[3]
        except ValueError:
            continue
        r = min((prio[t] for t in wtags if t in prio), default=None)
        if r is not None and r < rank:
            best, rank = w, r
    return best


def with_download(p: Plan, target: LockedTarget, python: str) -> Plan:
    """The plan with the total size of the wheels it will fetch (from the sizes the lock records)."""
    pkgs = {x.name: x for x in target.packages}
    total, unsized = 0, 0
    for s in p.steps:
        if s.action not in ("install", "upgrade", "reinstall") or s.name not in pkgs:
            continue
        w = wheel_for(pkgs[s.name], python)
        if w is None or w.size is None:
            unsized += 1
        else:
            total += w.size
    return replace(p, download=total, unsized=unsized)




def is_downgrade(s: Step) -> bool:
    """An "upgrade" step (the installed version replaced by the locked one) that goes to an older version: said as
    a downgrade (a build put in by hand that is newer than the lock's)."""
    if s.action != "upgrade" or not s.have or not s.want:
        return False
    from packaging.version import InvalidVersion, Version

    try:
        return Version(s.want) < Version(s.have)
    except InvalidVersion:
        return False


_SIGN = {"install": "+", "upgrade": "~", "reinstall": "!", "remove": "-", "keep": "=", "leave": "?"}
_COLOUR = {"install": "green", "upgrade": "yellow", "reinstall": "magenta", "remove": "red", "keep": None,
           "leave": "red"}


def format_plan(p: Plan, *, style: Callable[..., str] | None = None) -> str:
    """The plan, one line per package that changes (or is kept for a reason); `style` is click.style on a
    terminal that wants colour, else None."""
    def st(text: str, **kw: Any) -> str:
        return style(text, **kw) if style else text

    asked = sum(1 for s in p.of("reinstall") if s.note == "--reinstall")
    down = sum(1 for s in p.of("upgrade") if is_downgrade(s))
    counts = [(len(p.of(a)) - (asked if a == "reinstall" else down if a == "upgrade" else 0), w)
              for a, w in (("install", "to install"), ("upgrade", "to upgrade"), ("reinstall", "to repair"))]
    counts += [(down, "to downgrade"), (asked, "to reinstall"), (len(p.of("remove")), "to remove")]
    head = ", ".join(f"{n} {w}" for n, w in counts if n or w in ("to install", "to remove"))
    head += f", {len(p.of('keep'))} unchanged"
    if p.download is not None and (p.download or p.unsized):
        size = human_size(p.download) if p.download else ""
        extra = f"{p.unsized} of unknown size" if p.unsized else ""
        head += f"; download {' + '.join(x for x in (size, extra) if x)}"
    from tritonlock._term import printable  # names and versions read from a venv's files: never raw escapes

    lines = [st(f"plan for target {p.target}: {head}", bold=True)]
    for s in p.steps:
        if s.action == "keep" and not s.note:
            continue
        ver = {"install": s.want, "upgrade": f"{s.have} -> {s.want}", "reinstall": s.want, "remove": s.have,
               "keep": s.have, "leave": s.have}[s.action]
        line = printable(f"  {_SIGN[s.action]} {s.name} {ver}", 400)
        colour = _COLOUR[s.action]
        lines.append((st(line, fg=colour) if colour else st(line, dim=True))
                     + (f"  ({printable(s.note, 600)})" if s.note else ""))
    return "\n".join(lines)
