"""What can load where, decided before uv is asked: a package's releases on one target, newest first, with the facts
that say whether each can load beside a torch line — its torch requirement (the release's METADATA) and its native
code (the binary facts of the wheel the target installs: the CUDA major it links, the torch build and release it was
built for, the GPU code it carries) — read a batch at a time, each once, and judged per torch line."""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from tritonlock.decide._pkgfacts import Facts, install_order, parse_version, releases
from tritonlock.models import NativeFacts, Selection, TargetSpec

if TYPE_CHECKING:
    from tritonlock.compat.pkgbuilds import BuildChoice
    from tritonlock.models import Intent
    from tritonlock.native.rule import Item, Problem

# (url, size, sha256, file name, only what it brings): a wheel whose binary facts the lock stage reads
Wanted = tuple[str, "int | None", str, str, bool]

# Releases whose wheels are read at once, and their bytes at most (a batch always reads at least one)
LOOK = 6
LOOK_BYTES = 600 << 20
# The bytes of one package's wheels one resolve reads from the index looking down its releases for one that can
# load (facts already kept cost nothing): past it, the releases left are said not read — a resolve answers in
# minutes, not after downloading every release of a package of 500 MB wheels. A second resolve reads on from there.
READ_BUDGET = 2_000_000_000
# How far ahead _meta reads the METADATA of releases that are an sdist alone, beside the next 8 releases
SDISTS_AT_ONCE = 32
# The releases whose METADATA _meta reads at once: 8, then each further batch of one package's twice the last, up to
# META_MOST — a walk down all of xformers' 50 releases (none admits the torch line) is 3 round trips, not 7
META_AT_ONCE = 8
META_MOST = 32
# torch's own family moves with torch (its pins are the line's own, not a package's)
_FAMILY = {"torch", "torchvision", "torchaudio", "triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu",
           "triton-windows", "triton-xpu", "triton-rocm"}
# sonames whose number is the CUDA major (cuFFT, cuDNN, NCCL … number their own: the rule on the closure checks them)
_MAJOR_LIB = re.compile(r"^lib(cudart|cublas|cublasLt|nvrtc|nvJitLink)\.so\.([0-9]+)\Z")


def line_cuda(sel: Selection) -> int | None:
    """The CUDA major a torch build brings ("cu128" -> 12); None for a CPU, ROCm or XPU build."""
    m = re.fullmatch(r"cu([0-9]+)([0-9])", sel.backend or "")
    return int(m[1]) if m else None


def torch_admits(spec: SpecifierSet, sel: Selection) -> bool:
    assert sel.torch
    return spec.contains(sel.torch, prereleases=True) or spec.contains(f"{sel.torch}+{sel.backend}", prereleases=True)


@dataclass(frozen=True, kw_only=True, slots=True)
class Env:
    """What a table reads and judges with: the target and its Python, the index facts, the wheel reader (the lock
    stage's, handed in: None where the rule is off), the rule on one release beside one torch line, own builds."""

    target: TargetSpec
    python: str
    facts: Facts
    read: Callable[[list[Wanted]], dict[str, NativeFacts]] | None
    judge: Callable[[Selection, Item, set[str]], list[Problem]] | None
    choose: Callable[[str, str, Selection], BuildChoice | None] = lambda name, version, sel: None
    say: Callable[[str], None] = lambda text: None


@dataclass(kw_only=True)
class Table:
    """One package's releases on the target, newest first: those its requirement admits (no pre-release unless it asks
    for one, nothing yanked) with a file the target installs; what each one's facts say beside each torch line."""

    env: Env
    name: str
    index: str
    req: Requirement | None = None
    extras: tuple[str, ...] = ()
    versions: list[str] = field(default_factory=list)
    every: list[str] = field(default_factory=list)  # also those without a file the target installs (a check asks)
    state: str = "ok"  # "unknown" (the index could not be asked), "missing" (it serves no such project), "none-fit"
    # the releases whose wheels have been read (or have nothing to read): their facts (None: no native code)
    native: dict[str, NativeFacts | None] = field(default_factory=dict)
    # releases the rule on a closure refused beside a line (what a release's own facts do not show): version -> ranks
    refused: dict[str, dict[int, str]] = field(default_factory=dict)
    own_failed: set[str] = field(default_factory=set)  # releases whose own build's index did not serve them
    # what its requirements meet beside a line (the packages with native code they require, by their facts): the
    # search's, set for the named packages — a reason where the release cannot be locked there, else None
    gate: Callable[[str, Selection, int], str | None] | None = None
    _lacks: dict[str, bool] = field(default_factory=dict)  # release -> it lacks an extra asked for
    _torch: dict[str, tuple[Requirement, ...]] = field(default_factory=dict)  # release -> its torch requirements
    _anywhere: bool | None = None  # some release declares the extras asked for
    _batches: int = 0  # batches of METADATA _meta has read (each reads twice as many releases as the last)
    spent: int = 0  # bytes of its wheels read from the index in this resolve (see READ_BUDGET)
    stopped: int | None = None  # where reading stopped for READ_BUDGET: versions[stopped:] were not read
    _judged: dict[tuple[str, str | None, str | None], list[Problem]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        files = self.env.facts.files(self.index, self.name)
        if files is None:
            self.state = "unknown"
            return
        if not files:
            self.state = "missing"
            return
        req = self.req or Requirement(self.name)
        self.every = [str(v) for v in reversed(releases(self.env.facts, self.index, req))]
        t, py = self.env.target, self.env.python
        self.versions = [v for v in self.every if self.env.facts.fits(self.index, self.name, v, t, py)]
        if self.every and not self.versions:
            self.state = "none-fit"

    # --- the release's own facts ---------------------------------------------------------------------------------

    def torch_reqs(self, version: str) -> list[Requirement] | None:
        """The release's torch requirements — its own, and those of a package it pins to one release (unsloth's extra
        pins xformers==0.0.28.post1, which pins torch==2.4.1: a torch pin one step away), from their METADATA."""
        kept = self._torch.get(version)
        if kept is not None:  # (asked for each release on every line weighed: unsloth's 288 releases, 6,300 times)
            return list(kept)
        reqs = self.env.facts.requires(self.index, self.name, version, self.env.target, self.env.python, self.extras)
        if reqs is None:
            return None
        out = [r for r in reqs if canonicalize_name(r.name) == "torch"]
        if any(s.operator in ("==", "===") for r in out for s in r.specifier):
            self._torch[version] = tuple(out)
            return out  # (it pins torch itself: what it pins beside says no more — vllm pins a dozen packages)
        for r in reqs:
            pins = [s.version for s in r.specifier if s.operator in ("==", "===") and "*" not in s.version]
            name = canonicalize_name(r.name)
            if len(pins) != 1 or name in _FAMILY or r.url is not None:
                continue
            theirs = self.env.facts.requires(self.index, name, pins[0], self.env.target, self.env.python,
                                             tuple(sorted(r.extras)))
            out += [Requirement(f"torch{q.specifier}") for q in theirs or () if canonicalize_name(q.name) == "torch"]
        self._torch[version] = tuple(out)  # (what Facts answers of a release, None too, holds for the run)
        return out

    def lacks_extras(self, version: str) -> bool:
        """Whether the release does not declare an extra the requirement asks for (its METADATA: Provides-Extra) —
        unsloth's `cu124-torch240` exists in some releases only, and a release without it is not what was asked."""
        if not self.extras or not self._extra_anywhere():
            return False  # (an extra no release declares is uv's to warn about: the package is what was asked)
        if version not in self._lacks:  # (an extra declared empty and then dropped is not lacking: Facts says)
            self._lacks[version] = self.env.facts.lacks_extras(self.index, self.name, version, self.env.target,
                                                               self.env.python, self.extras)
        return self._lacks[version]

    def _extra_anywhere(self) -> bool:
        """Whether some release declares the extras asked for (its METADATA read newest first, eight at a time)."""
        if self._anywhere is None:
            self._anywhere = False
            for i, v in enumerate(self.versions):
                if i % 8 == 0:
                    self._meta(i)
                if self.env.facts.provides_extras(self.index, self.name, v, self.env.target, self.env.python,
                                                  self.extras):
                    self._anywhere = True
                    break
        return self._anywhere

    def excluded_by_torch(self, version: str, sel: Selection) -> Requirement | None:
        """The release's torch requirement that leaves out `sel`'s torch (its METADATA; None: it admits it)."""
        for r in self.torch_reqs(version) or ():
            if not torch_admits(r.specifier, sel):
                return r
        return None

    def wheel(self, version: str) -> Wanted | None:
        """The wheel of the release the target installs, where it may hold native code (None: a pure-Python wheel, an
        sdist, a file listed without its sha256 — nothing to read)."""
        from tritonlock.compat.pkgbuilds import any_wheel_natives
        from tritonlock.native.read import may_hold_native_code
        from tritonlock.native.rule import is_provider

        if is_provider(self.name):  # (torch's family, Triton, NVIDIA's libraries: what the others need, not judged)
            return None
        files = {f.filename: f for f in self.env.facts.release_files(self.index, self.name, version)}
        first = install_order(files, self.env.target, self.env.python)[:1]
        f = files[first[0]] if first else None
        if f is None or not may_hold_native_code(f.filename, any_wheel_natives()) or not f.sha256:
            return None
        return (f.url, f.size, f.sha256, f.filename, False)

    def _meta(self, start: int) -> None:
        """The METADATA of the next releases, read side by side (each once per run, and kept per file): 8 of them,
        and each further batch of this package twice the last (META_MOST at most); nothing where the next 8 are known
        already. Where the next ones include a release of an sdist alone, the sdist-only releases after them are read beside them: an
        index serves an sdist's METADATA seldom (PEP 658), so each is a round trip to it every resolve — vLLM's and
        xformers' first releases, 0.3 s each batch."""
        facts = self.env.facts

        def unknown(v: str) -> bool:
            return not facts.has_metadata(self.index, self.name, v)

        if not any(unknown(v) for v in self.versions[start:start + META_AT_ONCE]):
            return  # (what the walk looks at next is known: an earlier, wider batch read it)
        todo = [v for v in self.versions[start:] if unknown(v)][:min(META_AT_ONCE << self._batches, META_MOST)]
        if any(self._sdist_only(v) for v in todo):
            todo += [v for v in self.versions[start:start + SDISTS_AT_ONCE]
                     if v not in todo and self._sdist_only(v) and unknown(v)]
        if len(todo) > 1:
            self._batches += 1
            self.read_torch_reqs(todo, at_once=len(todo))

    def read_torch_reqs(self, versions: list[str], at_once: int = 16) -> None:
        """The torch requirements of each of `versions` not known yet, read side by side (16 at a time) before a walk
        asks for them one by one: a release whose index serves no PEP 658 METADATA is a few ranged reads of its
        wheel (sgl-kernel's 57 releases a conflict counts, 15 s in a row from empty caches)."""
        todo = [v for v in dict.fromkeys(versions) if v not in self._torch]
        if len(todo) > 1:
            with ThreadPoolExecutor(max_workers=min(at_once, len(todo))) as pool:
                list(pool.map(self.torch_reqs, todo))

    def _sdist_only(self, version: str) -> bool:
        return not any(f.filename.endswith(".whl") for f in self.env.facts.release_files(self.index, self.name, version))

    def decided(self, version: str) -> bool:
        """Whether the release's wheel was read (or there is nothing of it to read)."""
        return version in self.native

    def read(self, versions: list[str]) -> bool:
        """The binary facts of these releases' wheels (their first is the one needed now; the rest are read beside it,
        the releases after a passed-over one that are likely to fail the same way), at most LOOK releases or
        LOOK_BYTES at once; False where READ_BUDGET stops the reading (`stopped`: the first release left unread)."""
        batch: list[tuple[str, Wanted]] = []
        size = 0
        for v in versions:
            if v in self.native:
                continue
            w = self.wheel(v) if self.env.read is not None else None
            if w is None:
                self.native[v] = None
                continue
            if batch and size + (w[1] or 0) > LOOK_BYTES:  # (how many: the caller's, LOOK)
                break
            batch.append((v, w))
            size += w[1] or 0
        if not batch:
            return True
        if any(self.native.get(v) is not None or v in self.refused for v in self.versions):
            # (looking down past a release that was read: bounded, one batch more a resolve always)
            from tritonlock.native.read import cached

            cost = sum(w[1] or 0 for _, w in batch if cached(w[2], gpu=True) is None)
            if cost and self.spent and self.spent + cost > READ_BUDGET:
                self.stopped = self.versions.index(batch[0][0])
                return False
            self.spent += cost
        assert self.env.read is not None
        self.env.say(f"reading the native code of {self.name} {batch[0][0]}"
                     + (f"–{batch[-1][0]} ({len(batch)} releases)" if len(batch) > 1 else ""))
        got = self.env.read([w for _, w in batch])
        for v, w in batch:
            f = got.get(w[2])
            self.native[v] = f if f is not None and not f.problem and f.native else None
        return True

    def problems(self, version: str, sel: Selection) -> list[Problem]:
        """What in the release's own native code cannot load beside `sel`'s torch build, whatever else is locked
        beside it: its GPU code, its CUDA against the driver, the torch build and release it links, and a CUDA
        library of another major than the torch brings (unless the release requires the NVIDIA wheels that bring
        it). Empty where its wheels are not read yet or hold no native code."""
        f = self.native.get(version)
        if f is None or self.env.judge is None:
            return []
        key = (version, sel.torch, sel.backend)
        if key not in self._judged:
            from tritonlock.native.rule import Item

            major = line_cuda(sel)
            mine = self._brings(version)
            needed = {lib for m in f.members for lib in m.needed}
            brought = {lib for lib in needed if not (m := _MAJOR_LIB.match(lib)) or int(m[2]) in (major, *mine)}
            self._judged[key] = self.env.judge(sel, Item(name=self.name, version=version, facts=f),
                                               brought | set(f.provides))
        return self._judged[key]

    def _brings(self, version: str) -> set[int]:
        """The CUDA majors whose libraries the release's own requirements bring (nvidia-cuda-runtime-cu12, …)."""
        from tritonlock.decide import cudalibs

        out: set[int] = set()
        reqs = self.env.facts.requires(self.index, self.name, version, self.env.target, self.env.python, self.extras)
        for r in reqs or ():
            name = canonicalize_name(r.name)
            if not name.startswith(("nvidia-", "cuda-toolkit")):
                continue
            pins = [s.version for s in r.specifier if s.operator in ("==", "~=", ">=")]
            major = cudalibs.cuda_major(name, pins[0] if pins else "0")
            if major is not None:
                out.add(major)
        return out

    # --- beside one torch line --------------------------------------------------------------------------------------

    def own(self, version: str, sel: Selection) -> BuildChoice | None:
        """The release's own build for the torch's CUDA (compat/packages.toml, [[package-builds]]), where what keeps
        it from loading is only its CUDA (a CUDA library the torch does not bring, a CUDA the driver does not run)."""
        probs = self.problems(version, sel)
        if not probs or version in self.own_failed or any(p.kind not in ("cuda-library", "cuda-driver") for p in probs):
            return None
        return self.env.choose(self.name, version, sel)

    def loads(self, version: str, sel: Selection, rank: int) -> bool:
        """Whether the release may load beside the line, by its own facts and the rule's findings so far."""
        if rank in self.refused.get(version, {}):
            return False
        if self.gate is not None and self.gate(version, sel, rank) is not None:
            return False
        return not self.problems(version, sel) or self.own(version, sel) is not None

    def first(self, sel: Selection, rank: int, *, torch: bool = True, floor: Version | None = None,
              start: int = 0, spec: SpecifierSet | None = None, known: bool = False,
              wheels: bool = False) -> int | None:
        """The place of the newest release (from `start`) that can be locked beside the line by its facts (with
        `torch`: its torch requirement admits the line's torch; and its native code may load there); None when none
        can (or reading stopped: `stopped`). `floor`: stop below it (the caller only needs to know whether some
        release at or above it can): -1. Only the releases that could be locked there by their METADATA are read.
        `known`: only releases whose METADATA could be read (an sdist whose requirements the index does not serve is
        left to uv, whose answer the caller has). `wheels`: only releases with a wheel (no-build)."""
        def candidate(v: str) -> bool:
            return not ((spec is not None and not spec.contains(v, prereleases=True)) or self.lacks_extras(v)
                        or (torch and self.excluded_by_torch(v, sel) is not None)
                        or (known and self.torch_reqs(v) is None) or (wheels and self._sdist_only(v)))

        passed = False
        i = start
        while i < len(self.versions):
            v = self.versions[i]
            if floor is not None and (parse_version(v) or Version("0")) < floor:
                return -1
            if i % 8 == 0 or i == start:
                self._meta(i)
            if not candidate(v):
                i += 1
                continue
            if v not in self.native:
                ahead = [v]
                if passed:  # (the ones after a release passed over: read beside it)
                    for j in range(i + 1, len(self.versions)):
                        if len(ahead) >= LOOK or (floor is not None
                                                  and (parse_version(self.versions[j]) or Version("0")) < floor):
                            break  # (below `floor`: not wanted now)
                        if j % 8 == 0:
                            self._meta(j)
                        if candidate(self.versions[j]):
                            ahead.append(self.versions[j])
                if not self.read(ahead) or v not in self.native:
                    return None  # (not read: READ_BUDGET — `stopped` says where)
            if self.loads(v, sel, rank):
                return i
            passed = True
            i += 1
        return None

    def meta_first(self, sel: Selection, floor: Version | None = None) -> int | None:
        """The place of the newest release whose torch requirement admits the line (its native code not judged);
        None when none does; -1 where the releases at or above `floor` do not."""
        for i, v in enumerate(self.versions):
            if floor is not None and (parse_version(v) or Version("0")) < floor:
                return -1
            if i % 8 == 0:
                self._meta(i)
            if not self.lacks_extras(v) and self.excluded_by_torch(v, sel) is None:
                return i
        return None

    def top(self, sel: Selection, rank: int) -> str | None:
        """The newest release not known to fail beside the line (nothing more is read for it): what a check asks for
        (one without a file for the target too: uv's words then say why)."""
        return next((v for v in self.every if not self._lacks.get(v) and (v not in self.native
                                                                             or self.loads(v, sel, rank))), None)

    def excluded(self, sel: Selection, rank: int) -> list[str]:
        """The releases read so far that cannot load beside the line (to pass over: uv is told `name!=version`), the
        newest first, with those the rule refused there and those without an extra asked for."""
        out = [v for v in self.versions if v in self.native and not self.loads(v, sel, rank)]
        out += [v for v, ranks in self.refused.items() if rank in ranks and v not in out]
        return out + [v for v, lacks in self._lacks.items() if lacks and v not in out]

    def signature(self, sel: Selection, rank: int) -> tuple[object, ...]:
        """What the facts read so far say beside this line (lines alike here are compiled together)."""
        return tuple(self.says(v, sel, rank) for v in self.versions if v in self.native)

    def says(self, version: str, sel: Selection, rank: int) -> tuple[object, ...]:
        """What the facts say of one release read so far beside the line: a part of its signature."""
        return version, self.loads(version, sel, rank), (c := self.own(version, sel)) and c.url

    def why(self, version: str, sel: Selection, rank: int) -> str:
        """Why the release cannot load beside the line, in words (its native code's problems, or the rule's)."""
        probs = self.problems(version, sel)
        if probs:
            return "; ".join(p.text for p in probs)
        gated = self.gate(version, sel, rank) if self.gate is not None else None
        return gated or self.refused.get(version, {}).get(rank, "")


def choose_build(intent: Intent, name: str, version: str, sel: Selection) -> Any:
    from tritonlock.compat import pkgbuilds

    return pkgbuilds.choose(name, version, sel.torch or "", sel.backend or "", cuda_major=None,
                            extra=intent.package_builds)


def candidate_lines(candidates: tuple[Selection, ...], intent: Intent,
           more: Callable[[int], tuple[Selection, ...]] | None) -> list[Selection]:
    """The torch lines the packages choose among, newest torch first, each release's preferred build first; with
    `cuda = "auto"`, also the builds of each release for the other CUDA majors the target runs (a package built
    for CUDA 12 beside a torch whose preferred build is CUDA 13: that torch's CUDA 12 build, or an older torch's)."""
    out = list(candidates)
    preferred = {(c.torch, c.backend) for c in candidates}
    if more is not None and intent.cuda == "auto":
        seen = set(preferred)
        for n in (14, 13, 12, 11):
            for c in more(n):
                if (c.torch, c.backend) not in seen:
                    seen.add((c.torch, c.backend))
                    out.append(c)
    order = {id(c): i for i, c in enumerate(out)}
    return sorted(out, key=lambda c: (tuple(-x for x in (parse_version(c.torch) or Version("0")).release),
                                      (c.torch, c.backend) not in preferred, -(line_cuda(c) or 0), order[id(c)]))
