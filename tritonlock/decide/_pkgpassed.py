"""What the facts passed over where uv's words do not say it: the releases of a named package that cannot load beside
any torch line that admits them (and the package whose native code stops them), the locked release whose native code
keeps torch below the newest line, and each in a line a reader can take in (a cause, the first problems, a count)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name

from tritonlock.decide import _pkgwords as words
from tritonlock.decide._pkgfacts import public
from tritonlock.decide._pkgfallback import inferred_torch, read_torch_reqs
from tritonlock.decide._pkgload import Table, torch_admits
from tritonlock.decide._pkgscene import Fallback, Outcome, Run, locked
from tritonlock.models import Selection

if TYPE_CHECKING:
    from tritonlock.native.rule import Problem

# At most this many releases passed over are named one by one in a reason; the rest are counted
NAMED = 6


def releases(vs: list[str]) -> str:
    """Releases in a reason: each by name, or the first three, the last and a count."""
    return ", ".join(vs) if len(vs) <= NAMED else f"{', '.join(vs[:3])}, … {vs[-1]} ({len(vs)} releases)"


def why_short(t: Table, v: str, sel: Selection, rank: int, most: int = 2) -> str:
    """t.why, its first `most` problems and a count of the others (a reason line stays readable: a wheel whose every
    module fails says so once per module, each with the symbols it misses)."""
    probs = t.problems(v, sel)
    if len(probs) <= most:
        return t.why(v, sel, rank)
    n = len(probs) - most
    return "; ".join(p.text for p in probs[:most]) + f"; and {n} more problem{'s' if n > 1 else ''} of its native code"


def refused_problem(run: Run, t: Table, version: str, rank: int) -> Problem:
    """What the rule found refusing the release beside line `rank` (its words where the finding was not kept)."""
    from tritonlock.native.rule import Problem as P

    kept = run.found.get((t.name, version, rank))
    if kept is not None:
        return kept
    return P(package=t.name, version=version, kind="refused", needs="", text=t.refused.get(version, {}).get(rank, ""))


def native_holds(run: Run, o: Outcome) -> str | None:
    """A locked release whose native code cannot load beside the newest torch line (a named package's first), in
    words: what keeps torch below it where no requirement does (sgl-kernel 0.3.21, built against torch 2.9.1, calls
    symbols torch 2.10.0 does not export)."""
    top = run.lines[0]
    for t in sorted(run.all_tables(), key=lambda x: x.name not in run.tables):
        p = locked(o.packages, t.name)
        if p is None:
            continue
        v = public(p.version)
        probs = t.problems(v, top) or ([refused_problem(run, t, v, 0)] if 0 in t.refused.get(v, {}) else [])
        if probs:
            return (f"{t.name} {v}'s native code cannot load beside torch {top.torch} ({top.backend}): "
                    + short(probs[0].text) + (f" (and {len(probs) - 1} more)" if len(probs) > 1 else ""))
    return None


def passed_everywhere(run: Run) -> list[str]:
    """The releases of each named package that their torch requirement admits beside some line and that the facts
    pass over beside every such line, in words, grouped by what stops them (the package and the kind of fact) — what
    uv's words do not say when it then finds no lock with the releases left (sglang 0.4.1 … 0.4.10 on a V100: the
    sgl-kernel each requires has no code for sm_70)."""
    out: list[str] = []
    for r in run.sc.reqs:
        t = run.tables.get(canonicalize_name(r.name))
        if t is None or t.state != "ok":
            continue
        groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for v in t.versions:
            fits = [(rank, sel) for rank, sel in enumerate(run.lines) if t.excluded_by_torch(v, sel) is None]
            if not fits or t.lacks_extras(v) or any(t.loads(v, sel, rank) for rank, sel in fits):
                continue
            key, text = _blocker(run, t, v, *fits[0][::-1])
            groups.setdefault(key, []).append((v, text))
        for found in groups.values():
            vs = [v for v, _ in found]
            out.append(f"tritonlock passed over {t.name} {releases(vs)} beside every torch line that fits here"
                       + (f": {found[0][1]}" if len(vs) == 1 else f" — the newest, {t.name} {vs[0]}: {found[0][1]}"))
    return out


def beside_its_torch(run: Run, t: Table, v: str, chosen: Selection) -> tuple[str, str] | None:
    """A release whose own torch requirement leaves out the line chosen, where it admits other lines that fit: why
    it cannot load beside them — (what stops it, in words; the group it is named in), ("", "") where the facts let it
    load beside one of them (uv's answer, not a fact, is then why it is not locked). None where the chosen line
    admits its torch, or no line that fits does (the target's own facts say it)."""
    if t.excluded_by_torch(v, chosen) is None:
        return None
    fits = [(rank, sel) for rank, sel in enumerate(run.lines) if t.excluded_by_torch(v, sel) is None]
    if not fits:
        return None
    if any(t.loads(v, sel, rank) for rank, sel in fits):
        return "", ""
    rank, sel = fits[0]
    key, text = _blocker(run, t, v, sel, rank)
    return f"beside torch {sel.torch} ({sel.backend}), the newest torch it allows here: {text}", "/".join(key)


def _blocker(run: Run, t: Table, v: str, sel: Selection, rank: int) -> tuple[tuple[str, str], str]:
    """Why the release cannot load beside the line, down to what stops it — its own native code, else the release of
    a package with native code it requires (a failure its import would not survive before one it would) — with the
    package and the kind of fact that stops it (the group it is named in)."""
    own = t.problems(v, sel) or ([refused_problem(run, t, v, rank)] if rank in t.refused.get(v, {}) else [])
    if own:
        return (t.name, own[0].kind), short(t.why(v, sel, rank))
    found: list[tuple[bool, str, str, str]] = []
    for q in t.env.facts.requires(t.index, t.name, v, sel.target, run.sc.python, t.extras) or []:
        d = run.deps.get(canonicalize_name(q.name))
        if d is None or d is t:
            continue
        admitted = [x for x in d.versions if q.specifier.contains(x, prereleases=True)]
        if not admitted or any(d.loads(x, sel, rank) for x in admitted):
            continue
        # (GPU code first: what no torch line changes)
        probs = sorted(d.problems(admitted[0], sel), key=lambda x: x.kind != "gpu-code") or [
            refused_problem(run, d, admitted[0], rank)]
        found.append((all(p.guarded for p in probs), d.name, probs[0].kind,
                      f"it requires {words.spec_text(q)}, and {d.name} {admitted[0]} cannot load beside torch "
                      f"{sel.torch} ({sel.backend}): {probs[0].text}"))
    if not found:
        return (t.name, "gate"), short(t.why(v, sel, rank))
    _, name, kind, text = min(found)
    return (name, kind), short(text)


def short(text: str, limit: int = 360) -> str:
    """One fact's words cut to a line's worth (a module's missing symbols can run to pages)."""
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


TORCHLESS = "its requirements name no torch, where the releases around it do: a release that only stands in"


def pass_torchless(run: Run, fb: Fallback) -> bool:
    """Where a named package's release only stands in because its requirements name no torch, where a newer release
    requires one, and it lies between releases that name theirs (torchaudio 2.11.0, between 2.10.0 and 2.11.1):
    pass over each such release beside the lines whose torch the next newer release's requirement leaves out
    (inferred: its own METADATA says nothing), so the search finds the newest release that can be locked there with
    the ones named before it (torchaudio 2.5.1 beside torchvision 0.20.1) — a conflict only where none can. False
    where the release is a stand-in for another reason too (years older, a source build: the conflict's), or
    nothing new was passed over."""
    t = run.tables.get(fb.name)
    if t is None or not fb.torchless:
        return False
    extras, new = tuple(sorted(fb.req.extras)), False
    read_torch_reqs(run.sc, t.index, fb.name, t.versions, extras)  # (each release's, and its neighbours' mostly)
    for v in t.versions:
        guess = inferred_torch(run.sc, t.index, fb.name, v, extras)
        if guess is None:
            continue
        said = f"{TORCHLESS} (inferred: {fb.name} {guess[0]} requires {words.spec_text(guess[1][0])})"
        for rank, sel in enumerate(run.lines):
            if not all(torch_admits(q.specifier, sel) for q in guess[1]) and rank not in t.refused.get(v, {}):
                t.refused.setdefault(v, {})[rank] = said
                new = True
    if new:
        run.epoch += 1
    return new
