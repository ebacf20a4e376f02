"""One target's packages decision as every part of it reads it (the Scene), and what one uv answer found (Check,
Outcome): the plain types the search, its checks and its words share — so none of them imports another for its
types."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tritonlock.decide._pkgfacts import Facts, newest, parse_version, public
from tritonlock.decide._pkgload import Env, Table, Wanted
from tritonlock.errors import TritonlockError
from tritonlock.models import Intent, LockedPackage, NativeFacts, Selection, TargetSpec

if TYPE_CHECKING:
    from tritonlock.compat.matrix import Matrix
    from tritonlock.native.rule import Problem

# compile(plan, default_index, *, offline, constraints, no_build) -> the closure of a LockPlan (decide.lockplan); the
# lock stage's compile_target, handed in by tritonlock.project (the decision does not call into the lock stage itself)
Compile = Callable[..., tuple[LockedPackage, ...]]

ZERO = Version("0")


def locked(packages: tuple[LockedPackage, ...], name: str) -> LockedPackage | None:
    want = canonicalize_name(name)
    return next((p for p in packages if p.name == want), None)


def vkey(p: LockedPackage | None) -> Version:
    """A locked package's public version (ZERO when it is not locked)."""
    return (parse_version(public(p.version)) or ZERO) if p is not None else ZERO


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Scene:
    """What every step of one target's decision reads: the target's newest fitting selection (`sel`), the fitting
    torch lines, the intent, the matrix, the index facts and the packages the user named (in the user's order)."""

    sel: Selection
    candidates: tuple[Selection, ...]
    intent: Intent
    matrix: Matrix
    facts: Facts
    reqs: list[Requirement]
    python: str
    default_python: str
    default_index: str
    # the releases the target could run with the intent's torch = lifted (for "a torch pin would fix it")
    host: Callable[[], tuple[Selection, ...]] | None = None
    package_indexes: tuple[tuple[str, str, str], ...] = ()  # (name, index, format): a package's own build
    # hears of every closure a compile gives (the orchestrator starts reading its wheels' binary facts early)
    seen: Callable[[Selection, tuple[LockedPackage, ...]], None] | None = None

    @property
    def target(self) -> TargetSpec:
        return self.sel.target

    @property
    def intent_file(self) -> str:
        """The intent's file as the project names it (its name, never the path resolve ran from: a lock's bytes do
        not depend on the folder it was resolved in)."""
        return self.intent.path.replace("\\", "/").rsplit("/", 1)[-1] or self.intent.path

    def index_for(self, name: str) -> str:
        """The index a package comes from: its own build's index where the decision took one, the torch index for
        the torch family, else the default index."""
        own = {n: u for n, u, _ in self.package_indexes}.get(canonicalize_name(name))
        if own:
            return own
        bound = self.sel.index and self.matrix.bound_to_torch_index(canonicalize_name(name), self.sel.backend)
        return self.sel.index if bound and self.sel.index else self.default_index

    def requires(self, index: str, name: str, version: str, extras: tuple[str, ...] = ()) -> list[Requirement] | None:
        return self.facts.requires(index, name, version, self.target, self.python, extras)

    @property
    def reach(self) -> tuple[str, ...]:
        """What the user imports: the packages they name and [environment].imports (the native rule judges what
        these reach of each wheel; a second top-level package nothing imports is an optional part)."""
        return (*(r.name for r in self.reqs), *self.intent.imports)

    def served(self, name: str) -> bool:
        """Whether the default index serves `name` (a package's build for the other CUDA major, for a conflict's
        fix); LookupError where the index could not be asked (the fix says it as a maybe)."""
        got = self.facts.files(self.default_index, name)
        if got is None:
            raise LookupError(name)
        return bool(got)

    def torch_reqs(self, index: str, name: str, version: str, extras: tuple[str, ...] = ()) -> list[Requirement] | None:
        reqs = self.requires(index, name, version, extras)
        return None if reqs is None else [r for r in reqs if canonicalize_name(r.name) == "torch"]

    def newest(self, req: Requirement) -> str | None:
        return newest(self.facts, self.index_for(req.name), req) if req.url is None else None

    def others(self, packages: tuple[LockedPackage, ...],
               name: str) -> Iterator[tuple[str, LockedPackage, list[Requirement]]]:
        """The other packages the user named, as locked, with what they require on the target."""
        for other in self.reqs:
            oname = canonicalize_name(other.name)
            olocked = locked(packages, oname)
            if oname != name and olocked is not None:
                yield oname, olocked, self.requires(olocked.index, oname, olocked.version) or []


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Check:
    """A check that failed: what was asked of uv, and uv's own words."""

    asked: str  # "sglang==0.5.23"
    held: tuple[str, ...]  # the packages named before it, kept at least where they were ("vllm>=0.33.0")
    uv: str
    # where the newest was not asked of uv: its own torch requirement, read from its METADATA, that admits none of
    # the line's torch releases ("vllm 0.34.0's METADATA requires torch==2.14.0", beside torch 2.13.0); `asked` and
    # `uv` are then the check of the newest release below it that may fit, where one was made
    meta: str = ""


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Demoted:
    """A package named earlier that uv locks at `top` with the ones before it, but not with `by`, named later: the
    later one may not hold it back (the user's order), so this is a conflict naming both."""

    name: str
    top: str
    by: str  # the later named package
    uv: str  # uv's words for the earlier one at `top` with the later one


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    candidate: Selection
    packages: tuple[LockedPackage, ...]
    checks: tuple[tuple[str, Check], ...] = ()  # per named package below its newest: the check that failed
    passed_over: tuple[str, ...] = ()  # what the target cannot have, in words (CUDA builds, impossible builds)
    constraints: tuple[str, ...] = ()
    no_build: tuple[str, ...] = ()
    package_indexes: tuple[tuple[str, str, str], ...] = ()
    demoted: tuple[Demoted, ...] = ()
    # the named packages before the first that has no release here (a line whose facts leave one out: only what
    # comes before it was locked, to know whether the ones before it are lockable at all); None: all of them
    prefix: int | None = None
    # uv's words for the named packages whole on this line, where they lock only without the ones from `prefix` on
    # (the facts read did not rule those out: uv did — a release whose METADATA the index does not serve)
    left_uv: str = ""

    def check(self, name: str) -> Check | None:
        return next((c for n, c in self.checks if n == name), None)


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Fallback:
    """A named package locked at a release that only stands in for it (`locked`), and the releases that would be an
    answer: `reference` (the newest that fits the target on its own) and `since` (the oldest without the defect)."""

    req: Requirement
    name: str
    locked: LockedPackage
    reference: str
    since: str
    why: tuple[str, ...]  # words: "needs a source build (0.33.0 has a wheel for this target)", …
    torchless: bool = False  # its one defect: it names no torch, where a newer release names one


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Fix:
    """What the checks found for a fallback: uv's words for the package at a recent release with the others, and
    the least change that gives a lock (checked), if any."""

    uv: str
    change: str | None = None  # "torch = \"==2.14.*\"", "\"vllm<=0.18.1\""
    gives: str | None = None  # what that lock holds: "vllm 0.33.0 with torch 2.14.0"
    others: tuple[str, ...] = ()  # the other named packages on the other side
    mutual: tuple[tuple[str, str], ...] = ()  # others that are recent only from a release on: (name, since)
    # where uv locks the package recent but no check found the other side: what the rule finds in that lock, and the
    # fix it suggests, in words
    native: str = ""
    native_fix: str = ""


# a component of a line's bound or an answer's key: (1, version) for a release, (0, 0) for none (below any release)
Key = tuple[Any, ...]
NONE = (0, ZERO)
DOMINATED = object()
# the components after the one a deferred bound (Run.bound's `beat`) stops at: below any release and NONE
LOW = (-1, ZERO)


def out_of_search(b: Any, best_key: Key | None, complete: bool) -> bool:
    """Whether a line with this bound is out of the search: nothing to lock there, or it cannot beat the best (with
    `complete`: a named package has no release there)."""
    return b is None or b is DOMINATED or (complete and NONE in b) or (best_key is not None and b <= best_key)


def torch_served(facts: Facts, line: Selection) -> bool:
    """Whether the line's torch index serves its torch release (True where the index could not be asked)."""
    if not line.index or not line.torch or facts.files(line.index, "torch") is None:
        return True
    return bool(facts.release_files(line.index, "torch", line.torch))


def deferred(bound: Any) -> bool:
    """Whether a line's bound is an upper bound only (Run.bound's `beat`): to refine before the line is worked on."""
    return isinstance(bound, tuple) and LOW in bound


@dataclasses.dataclass(kw_only=True)
class Native:
    """The native-code rule as the lock stage hands it in (tritonlock.project): the wheels of a closure to read
    (`wanted`), the reader (`facts`: waits for them; `seen`: starts reading an answer's wheels early), and what it
    has read so far (`read`)."""

    wanted: Callable[[Selection, tuple[LockedPackage, ...]], list[Wanted]]
    facts: Callable[[list[Wanted]], dict[str, NativeFacts]]
    seen: Callable[[Selection, tuple[LockedPackage, ...]], None] | None = None
    read: dict[str, NativeFacts] = dataclasses.field(default_factory=dict)
    # the wheel reader itself (tritonlock.native.read.Reader), for `held`: its reads with hold=True, its `keep`
    reader: Any = None

    def held(self) -> tuple[Native, Callable[[], None]]:
        """This rule for a search on answers not yet confirmed (uv's cache: _pkgcompile.Ahead): the wheels it reads
        are used at once but their facts are not kept (tritonlock's cache outlives the run) until the second value,
        called once the answers are confirmed, keeps them. An answer that uv, asked online, does not repeat leaves
        nothing behind (the resolve that named another release keeps that one's facts alone)."""
        reader = self.reader
        if reader is None:
            return self, lambda: None
        asked: set[str] = set()

        def facts(wheels: list[Wanted]) -> dict[str, NativeFacts]:
            asked.update(w[2] for w in wheels)
            return reader.facts(wheels, hold=True)  # type: ignore[no-any-return]

        def seen(sel: Selection, packages: tuple[LockedPackage, ...]) -> None:
            wheels = self.wanted(sel, packages)
            asked.update(w[2] for w in wheels)
            reader.seen(wheels, packages, hold=True)

        return dataclasses.replace(self, facts=facts, seen=seen), lambda: reader.keep(asked)


@dataclasses.dataclass(kw_only=True)
class Run:
    """One target's search: its scene, the lines (newest torch first, the preferred build first), the named
    packages' tables (and those of dependencies the rule refused a release of), and what uv was asked."""

    sc: Scene
    lines: list[Selection]
    tables: dict[str, Table]
    deps: dict[str, Table]
    env: Env
    compile: Compile
    native: Native | None
    say: Callable[[str], None]
    failures: list[tuple[str, TritonlockError]] = dataclasses.field(default_factory=list)
    structural: tuple[Selection, list[Problem]] | None = None  # what no release or line changes, found in a closure
    warm: bool = False
    epoch: int = 0  # how many times the rule refused something: what the facts say of a line may change with it
    gated: dict[tuple[object, ...], str | None] = dataclasses.field(default_factory=dict)
    gated_by: dict[tuple[str, str], str] = dataclasses.field(default_factory=dict)  # (name, version) -> its dependency
    # what the rule found in a closure, per (package, release, line) it refused there: the conflict's words where
    # no release is left (a torch symbol the line's torch lacks shows only beside that torch's wheel)
    found: dict[tuple[str, str, int], Problem] = dataclasses.field(default_factory=dict)
    # why a package's own build index does not answer from here (lock.index.unreachable), per host: such an index is
    # not handed to uv (which would retry it for seconds a compile); None: asked, it answers
    reachable: Callable[[str, str], str | None] | None = None
    down: dict[str, str | None] = dataclasses.field(default_factory=dict)
    # whether a failure a package's own `try` catches (Problem.guarded) counts only for the named packages (the
    # second search, `relax()`'s); `noted`: whether the rule found such a failure (a list, shared with the tables'
    # judge): then the second search may beat this one by the stated order
    lenient: bool = False
    noted: list[bool] = dataclasses.field(default_factory=list)
    relax: Callable[[], Run] | None = None
    # packages whose sdist uv could not build here to read its requirements (Search.unbuilt): each compile of the run
    # takes only their wheels (uv would try, and fail, again: seconds a compile)
    unbuilt: list[str] = dataclasses.field(default_factory=list)

    def unreached(self, url: str, name: str) -> str | None:
        """Why `url` (a package's own build index) does not answer from here, asked once per host; None if it does."""
        if self.reachable is None:
            return None
        host = url.split("/")[2] if "://" in url else url
        if host not in self.down:
            self.down[host] = self.reachable(url, name)
            if self.down[host]:
                self.say(f"{name}'s builds at {url}: not reachable from here ({self.down[host]})")
        return self.down[host]

    @property
    def seeing(self) -> list[Requirement]:
        """The named packages whose facts the search reads (an index that answered, releases that fit)."""
        return [r for r in self.sc.reqs if (t := self.tables.get(canonicalize_name(r.name))) is not None
                and t.state == "ok" and t.versions]

    def bound(self, rank: int, best: Key | None, *, native: bool, beat: Key | None = None) -> Any:
        """What line `rank` could give at best by its facts: per named package its newest release that can be locked
        beside it, then its torch; None where the first named package has none (nothing to lock there); DOMINATED
        where it cannot beat `best`. `beat`: the bound of the line it must beat to be worked on next — where it
        cannot, only that is learnt (no release below that line's is read for it now): an upper bound holding LOW
        (`deferred`), refined once the line is the most promising again."""
        sel, out = self.lines[rank], list[Any]()
        for i, r in enumerate(self.seeing):
            t = self.tables[canonicalize_name(r.name)]
            floor = best[i][1] if best is not None and tuple(out) == best[:i] and best[i][0] else None
            other = beat[i][1] if beat is not None and tuple(out) == beat[:i] and beat[i][0] == 1 else None
            higher = native and other is not None and (floor is None or other > floor)  # `beat`'s floor, not best's
            at = t.first(sel, rank, floor=other if higher else floor) if native else t.meta_first(sel, floor)
            if at == -1:
                if higher:
                    # below `beat`'s release here, by how much is not read yet: a bound above the line's true one
                    return (*out, (1, other), *[LOW] * (len(self.seeing) - i - 1), LOW, -rank)
                return DOMINATED
            if at is None:
                if i == 0:
                    return None
                out += [NONE] * (len(self.seeing) - i)
                break
            out.append((1, parse_version(t.versions[at]) or ZERO))
        return (*out, (1, parse_version(sel.torch) or ZERO), -rank)

    def key(self, o: Outcome) -> Key:
        rank = self.rank(o.candidate)
        seeing = self.seeing
        out = [(1, parse_version(public(p.version)) or ZERO) if (p := locked(o.packages, r.name)) is not None
               and (o.prefix is None or i < o.prefix) else NONE for i, r in enumerate(seeing)]
        return (*out, (1, parse_version(o.candidate.torch) or ZERO), -rank)

    def rank(self, sel: Selection) -> int:
        """The line's place (-1: not one of the lines, a torch its index does not serve)."""
        return next((i for i, x in enumerate(self.lines) if (x.torch, x.backend, x.index) == (sel.torch, sel.backend,
                                                                                            sel.index)), -1)

    def all_tables(self) -> list[Table]:
        return [*(t for t in self.tables.values() if t.state == "ok"), *self.deps.values()]

    def signature(self, rank: int) -> tuple[object, ...]:
        sel = self.lines[rank]
        return (sel.index, *(t.signature(sel, rank) for t in self.all_tables()))

    def alike(self, rank: int, other: int) -> bool:
        """signature(rank) == signature(other), judged a release at a time up to the first that differs — each
        release judged beside each line costs the native rule a call (sgl-kernel's 64 read releases beside a dozen
        lines: most of a resolve). Both signatures are taken whole, as they always were, where a judgement left out
        could matter: where the rule has refused a dependency's release (`deps`: judging one may read more wheels),
        and where a release read has modules its package loads inside a `try` (NativeFacts.guarded) while the rule
        has noted no such failure yet (`noted`: whether the second search runs)."""
        if self.deps or (not self.noted and any(
                (f := t.native.get(v)) is not None and f.guarded for t in self.all_tables() for v in t.versions)):
            return self.signature(rank) == self.signature(other)
        a, b = self.lines[rank], self.lines[other]
        if a.index != b.index:
            return False
        return all(t.says(v, a, rank) == t.says(v, b, other) for t in self.all_tables()
                   for v in t.versions if v in t.native)
