"""Glue for the lock workflow: intent + matrix + host → selections → closure → triton-env.lock."""

from __future__ import annotations

import dataclasses
import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tritonlock import __version__
from tritonlock.errors import ClosureError, ResolveError, TritonlockError
from tritonlock.models import Intent, Lock, LockedPackage, LockedTarget, NativeFacts, Selection, TargetSpec

if TYPE_CHECKING:
    from collections.abc import Callable

    from tritonlock._term import TargetProgress
    from tritonlock.decide._pkgfacts import Facts
    from tritonlock.compat.matrix import Matrix
    from tritonlock.native.read import Reader

INTENT_FILE = "triton-env.toml"
LOCK_FILE = "triton-env.lock"


@dataclass(frozen=True, kw_only=True, slots=True)
class LockOutcome:
    lock: Lock | None
    selections: tuple[Selection, ...]
    written: bool
    reason: str  # why it was (or was not) re-resolved
    warnings: tuple[str, ...] = ()  # the intent's (two targets describing one machine)
    notes: tuple[str, ...] = ()  # what was not checked, said plainly (files too large to fetch: lock.integrity)
    upgraded: tuple[str, ...] = ()  # --upgrade-package's names (or what `add` added), canonical
    kept_from: Lock | None = None  # the lock whose pins were kept (--upgrade-package, add, remove): what moved is told


def running_python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def host_target(target_file: str | None = None) -> TargetSpec:
    """The machine we lock for when the intent names none: a saved profile, or this host."""
    from tritonlock import host

    if target_file:
        return host.load_saved_target(target_file)
    return host.to_target(host.detect(toolkit=False, cached=True), name="host")


def targets_for(intent: Intent, target_file: str | None = None) -> tuple[TargetSpec, ...]:
    if intent.targets and not target_file:
        return intent.targets
    target = host_target(target_file)
    if intent.python and not target_file:
        # [environment].python beats the interpreter tritonlock happens to run on; a saved machine's
        # own Python (--target-file) is a per-target fact and stays.
        import dataclasses

        target = dataclasses.replace(target, python=None)
    return (target,)


def saved_host_advice(saved: Path, project: Path) -> str:
    """What to do with a file `tritonlock host --save` just wrote: target-files globs are relative to the intent and
    stay inside its project (an absolute pattern is refused), so the advice names a relative pattern from the
    project's directory — or says that the intent already includes the file."""
    from tritonlock._discover import intent_bytes, intent_file, target_file_globs

    try:
        intent_path = intent_file(project)
    except TritonlockError:
        intent_path = project / INTENT_FILE
    try:
        rel = saved.resolve().relative_to(project.resolve())
    except (OSError, ValueError):
        rel = None
    if rel is None and intent_path.is_file():
        return (f"it is outside the project of {intent_path}, whose target-files take only files inside it: save it "
                f"there (`tritonlock host --save {project / 'hosts' / saved.name}`), or pass `tritonlock resolve "
                f"--target-file {saved}`")
    if rel is None or not intent_path.is_file():
        # no intent yet: a triton-env.toml one level above the file's folder includes it with a relative pattern, as
        # every target-files entry must be
        home, pattern = (saved.parent.parent, f"{saved.parent.name}/*.toml") if saved.parent.name else (
            saved.parent, saved.name)
        return (f"include it from a triton-env.toml in {home} (target-files = [\"{pattern}\"] at its top), paste it "
                f"there, or pass `tritonlock resolve --target-file {saved}`")
    try:
        globs = target_file_globs(intent_path, intent_bytes(intent_path)) or []
    except (OSError, UnicodeDecodeError, ValueError):
        globs = []
    globs = [globs] if isinstance(globs, str) else globs
    for pattern in globs if isinstance(globs, list) else []:
        if not isinstance(pattern, str) or not pattern or Path(pattern).is_absolute() or pattern.startswith(("/", "\\")):
            continue  # not a usable entry (the intent reader names it): it includes nothing
        try:
            if saved.resolve() in {f.resolve() for f in project.glob(pattern)}:
                return f"{intent_path} includes it (target-files = [\"{pattern}\"]): `tritonlock resolve` locks for it"
        except (ValueError, IndexError, OSError, NotImplementedError):
            continue
    pattern = (rel.parent / "*.toml").as_posix() if rel.parent != Path(".") else rel.as_posix()
    where = "its [tool.tritonlock] table" if intent_path.name == "pyproject.toml" else "its top (before any [table])"
    return (f"include it from {intent_path}: add target-files = [\"{pattern}\"] at {where}, "
            f"paste it there, or pass `tritonlock resolve --target-file {saved}`")


def _default_index(intent: Intent) -> str:
    if intent.default_index:
        return intent.default_index
    from tritonlock.lock.index import default_index

    return default_index()


def _bind_default(selections: tuple[Selection, ...], intent: Intent) -> tuple[Selection, ...]:
    """[indexes].torch = "default": the torch family comes from the default index's address."""
    if intent.torch_index != "default":
        return selections
    import dataclasses

    url = _default_index(intent)
    return tuple(dataclasses.replace(s, index=url) if s.index == "default" else s for s in selections)


# Without an NVIDIA driver, Triton kernels run only in Triton's interpreter (TRITON_INTERPRET=1, which
# `tritonlock verify` uses there), and the interpreter imports numpy (triton/runtime/interpreter.py:
# `import numpy as np`) although neither torch nor triton requires it.
INTERPRETER_NEEDS = "numpy"
INTERPRETER_REASON = ("numpy: added because this target has no NVIDIA driver, so Triton kernels run here only in "
                      "Triton's interpreter (TRITON_INTERPRET=1, what `tritonlock verify` uses), which needs numpy")


def _requirement_name(req: str) -> str:
    import re

    from packaging.utils import canonicalize_name

    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    return canonicalize_name(m[1]) if m else ""


@functools.lru_cache(maxsize=16)
def _names(packages: tuple[str, ...]) -> frozenset[str]:
    """The names a tuple of requirements names. Every candidate of every target carries the intent's one tuple:
    read once, not once per candidate (50,000 packages × 20 candidates × 8 targets was 40 s of a dry run)."""
    return frozenset(_requirement_name(r) for r in packages)


def _interpreter_deps(selections: tuple[Selection, ...]) -> tuple[Selection, ...]:
    """A target without a driver that carries Triton also locks what Triton's interpreter imports."""
    import dataclasses

    out = []
    for s in selections:
        if (s.ok and s.triton_package and s.target.driver is None
                and not (s.backend or "").startswith(("rocm", "xpu"))  # AMD/Intel GPUs run Triton's own backend
                and INTERPRETER_NEEDS not in _names(s.packages)):
            s = dataclasses.replace(s, packages=s.packages + (INTERPRETER_NEEDS,),
                                    reasons=s.reasons + (INTERPRETER_REASON,))
        out.append(s)
    return tuple(out)


def _complete(selections: tuple[Selection, ...], intent: Intent) -> tuple[Selection, ...]:
    """What the lock needs beyond the resolver's decision: the default index's address, the interpreter's deps."""
    return _interpreter_deps(_bind_default(selections, intent))


def select(intent: Intent, target_file: str | None = None) -> tuple[Selection, ...]:
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.decide.resolve import resolve

    targets = targets_for(intent, target_file)
    from tritonlock.decide import channel

    # a nightly/test channel: the nearest release's decision, from the channel's index (no network here)
    return channel.mark(_complete(resolve(intent, load_matrix(), targets, running_python()), intent), intent)


def conflicts_error(selections: tuple[Selection, ...]) -> ResolveError:
    """Nothing fits any target: their conflicts in one error (exit 3), which keeps the selections (`resolve --json`
    prints them)."""
    err = ResolveError("\n".join(s.conflict.message for s in selections if s.conflict))
    err.selections = selections  # type: ignore[attr-defined]
    return err


def _same_targets(lock: Lock, targets: tuple[TargetSpec, ...]) -> bool:
    return tuple(t.selection.target for t in lock.targets) == targets


def _pin_triton(sel: Selection, packages: tuple[LockedPackage, ...]) -> Selection:
    """The decision records the triton version the closure really holds (triton-windows is a series)."""
    import dataclasses

    for p in packages:
        if sel.triton_package and p.name == sel.triton_package and p.version != sel.triton:
            return dataclasses.replace(sel, triton=p.version)
    return sel


def _candidates(intent: Intent, matrix: Matrix, sel: Selection) -> tuple[Selection, ...]:
    """The fitting torch releases the packages choose among (newest first); only `sel` when torch is pinned."""
    from tritonlock.decide.requirements import exact_torch
    from tritonlock.decide.resolve import feasible

    if exact_torch(intent):
        return (sel,)
    return _complete(feasible(intent, matrix, sel.target, running_python()), intent) or (sel,)


def _host_candidates(intent: Intent, matrix: Matrix, sel: Selection) -> tuple[Selection, ...]:
    """The torch releases the target runs with the intent's torch = lifted: what a torch pin could reach."""
    from tritonlock.decide.resolve import feasible

    return _complete(feasible(dataclasses.replace(intent, torch=""), matrix, sel.target, running_python()), intent)


def lock_targets(intent: Intent, matrix: Matrix, selections: tuple[Selection, ...], dindex: str, *,
                 progress: TargetProgress | None = None,
                 reader: Reader | None = None) -> list[tuple[Selection, tuple[LockedPackage, ...]]]:
    """Each ok target's final selection and its closure. Without packages the resolver's torch is locked as it is;
    with packages, tritonlock.decide.packages picks among the fitting torch releases the one that gives the packages their
    newest versions. Targets whose inputs are the same share one computation (a fleet of 32 machines is a handful of
    distinct closures, so lock time grows with those, not the machines)."""
    from tritonlock._subprocess import uv_bin
    from tritonlock.decide.lockplan import lock_plan
    from tritonlock.decide.requirements import needs_decision
    from tritonlock.lock.closure import compile_key, compile_target, new_run

    uv_bin()  # locate uv before the worker threads do
    new_run(s.python for s in selections if s.ok and s.python)  # (and the interpreters uv's compiles get)
    # a nightly/test channel's torch is that channel's one newest build: nothing for the packages to choose among
    cands = [_candidates(intent, matrix, s) if needs_decision(intent, s) and intent.channel == "release" else None
             for s in selections]

    def key(s: Selection, c: tuple[Selection, ...] | None) -> tuple[str, ...]:
        if c is None:
            return compile_key(lock_plan(s, matrix), dindex, no_build=intent.no_build)
        versions = tuple(f"{x.torch}@{x.index}" for x in c)
        # the explanations name the machine's facts (its driver, GPUs): only machines alike share them
        machine = repr(dataclasses.replace(s.target, name="", origin=""))
        return ("packages", *compile_key(lock_plan(s, matrix, ""), dindex, no_build=intent.no_build), *versions,
                machine)

    keys = [key(s, c) for s, c in zip(selections, cands)]
    firsts = {k: (s, c) for k, s, c in reversed(list(zip(keys, selections, cands)))}
    names = {k: ", ".join(dict.fromkeys(t.target.name for kk, t in zip(keys, selections) if kk == k)) for k in firsts}
    from tritonlock.decide._pkgfacts import Facts
    from tritonlock.native.read import Reader

    facts = Facts()
    mine = reader is None
    reader = reader or Reader()  # the binary facts of the locked wheels, read once for every target sharing them

    def one(k: tuple[str, ...], pair: tuple[Selection, tuple[Selection, ...] | None]) -> tuple[
            Selection, tuple[LockedPackage, ...]]:
        s, c = pair
        if progress is not None:
            progress.start(names[k], f"locking torch {s.torch} ({s.backend}) with uv" if c is None else
                           f"locking the packages with torch {c[-1].torch}–{c[0].torch} with uv" if len(c) > 1
                           else f"locking the packages with torch {s.torch} ({s.backend}) with uv")
        try:
            if c is None:
                out = (s, compile_target(lock_plan(s, matrix), dindex, no_build=intent.no_build))
            else:
                cache: list[tuple[Selection, ...]] = []

                def host() -> tuple[Selection, ...]:
                    if not cache:
                        cache.append(_host_candidates(intent, matrix, s))
                    return cache[0]

                out = decide_native(s, c, intent, matrix, dindex, facts=facts, host=host, reader=reader,
                                    say=(lambda text: progress.doing(names[k], text)) if progress is not None else None)
        except BaseException:
            if progress is not None:
                progress.failed(names[k])
            raise
        if progress is not None:
            if out[0].ok:
                progress.done(names[k], f"{len(out[1])} packages locked" + (
                    f" (torch {out[0].torch})" if c is not None else ""))
            else:
                progress.failed(names[k])
        return out

    from concurrent.futures import ThreadPoolExecutor

    try:
        with ThreadPoolExecutor(max_workers=max(1, min(4, len(firsts)))) as pool:
            done = dict(zip(firsts, pool.map(one, firsts, firsts.values())))
    finally:
        if mine:
            reader.close()
    from tritonlock.lock.lockread import for_target

    out = []
    for k, s in zip(keys, selections):
        chosen, pkgs = done[k]
        # targets sharing a computation keep their own name (also in the words) and machine facts
        out.append((for_target(chosen, s.target) if chosen.target != s.target else chosen, pkgs))
    return out


def packages_decision(intent: Intent, targets: tuple[TargetSpec, ...], *,
                      progress: TargetProgress | None = None) -> tuple[Selection, ...]:
    """What `resolve` would lock on each target — the matrix's decision, then the user's packages decided with uv and
    the indexes — written nowhere: `why` hands each change it names to this, to check it unlocks what it says."""
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.decide import channel
    from tritonlock.decide.resolve import resolve

    matrix = load_matrix()
    sels = channel.apply(_complete(resolve(intent, matrix, targets, running_python()), intent), intent)
    fitting = tuple(s for s in sels if s.ok)
    done = iter(lock_targets(intent, matrix, fitting, _default_index(intent), progress=progress) if fitting else ())
    return tuple(next(done)[0] if s.ok else s for s in sels)


def native_wanted(sel: Selection, packages: tuple[LockedPackage, ...]) -> list[tuple[str, int | None, str, str, bool]]:
    """The wheels whose binary facts the rule needs (tritonlock.native.judge.wheels_to_read)."""
    from tritonlock.native.judge import wheels_to_read

    return wheels_to_read(sel, packages, sel.python or running_python())


def decide_native(s: Selection, c: tuple[Selection, ...], intent: Intent, matrix: Matrix, dindex: str, *,
                  facts: Facts, host: Callable[[], tuple[Selection, ...]], reader: Reader,
                  say: Callable[[str], None] | None = None) -> tuple[Selection, tuple[LockedPackage, ...]]:
    """The packages decision (tritonlock.decide.packages, one search), handed what it needs of the lock stage: uv's
    compile (with uv's cached answer read early), the wheel reader for the native-code rule, and the quick question
    whether a package's own page of builds answers."""
    from tritonlock.decide.packages import Native, decide
    from tritonlock.lock.closure import compile_target, guessing
    from tritonlock.lock.index import unreachable

    def lines(n: int) -> tuple[Selection, ...]:  # the torch choices whose build is CUDA n (as `cuda = "n"` says)
        from tritonlock.decide.resolve import feasible

        return _complete(feasible(dataclasses.replace(intent, cuda=f"=={n}.*"), matrix, s.target, running_python()),
                         intent)

    # uv's cached answer, while the online one comes: its wheels' facts are read from then on
    compiled = guessing(compile_target, lambda sel, pkgs: reader.prefetch(native_wanted(sel, pkgs), guess=True)) \
        if reader.early and s.target.name not in reader.from_lock else compile_target
    native = Native(wanted=native_wanted, facts=reader.facts, read=reader.read,
                    seen=lambda sel, pkgs: reader.seen(native_wanted(sel, pkgs), pkgs), reader=reader)
    return decide(s, c, intent, matrix, dindex, compile=compiled, facts=facts, default_python=running_python(),
                  host=host, native=native, more_lines=lines, say=say, reachable=unreachable)


def decided(intent: Intent, selections: tuple[Selection, ...], *, packages: bool,
            allow_unchecked: bool = False) -> tuple[Selection, ...]:
    """`resolve --dry-run`: with `packages` (--packages), the selections as the lock would make them — uv and the
    indexes decide the packages' versions and so, perhaps, an older torch; without it (no network), each target whose
    packages could hold torch back says so in a warning instead of claiming a torch the lock may not hold."""
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.decide.requirements import exact_torch, needs_decision

    if (not all(s.ok for s in selections) or not any(needs_decision(intent, s) for s in selections)
            or exact_torch(intent)):  # a pinned torch stays what it is: nothing for the packages to move
        return selections
    if packages:
        from tritonlock.native.read import Reader
        from tritonlock.native.unread import unread_native

        reader = Reader()
        try:
            done = lock_targets(intent, load_matrix(), selections, _default_index(intent), reader=reader)
        finally:
            reader.close()
        out, _, error = unread_native(done, reader, intent, allow_unchecked)
        if error is not None:
            raise error
        return tuple(s for s, _ in out)
    note = ("the packages were not resolved (--dry-run without --packages uses no network): torch {} is the newest "
            "this target allows, and the packages you named may hold it back — `tritonlock resolve` (or --dry-run "
            "--packages) decides them with uv and the indexes")
    matrix = load_matrix()
    # only where there is an older torch to hold back to: with one fitting release, the packages cannot move it
    return tuple(dataclasses.replace(s, warnings=s.warnings + (note.format(s.torch),))
                 if needs_decision(intent, s) and len(_candidates(intent, matrix, s)) > 1 else s for s in selections)


def lock_project(intent_path: Path, lock_path: Path, *, upgrade: bool = False,
                 target_file: str | None = None, progress: TargetProgress | None = None,
                 upgrade_packages: tuple[str, ...] = (), strict: bool = False,
                 keep_pins: bool = False, allow_unchecked: bool = False) -> LockOutcome:
    """Re-resolve when the intent, the matrix or the target machines changed (or upgrade); write atomically.
    `progress` hears when each target's closure starts and ends (the slow part: uv and the indexes).
    `upgrade_packages`: lock again keeping every other pin of the existing lock (tritonlock.upgrade). `strict`: a
    conflict in any target writes nothing (ResolveError, exit 3), as `add` and `remove` need. `keep_pins` (`add`,
    `remove`): an intent that changed is locked keeping the existing lock's pins where it can be read, the packages
    `upgrade_packages` names (requirements: what `add` added) free to move. `allow_unchecked`
    (--allow-unchecked-native): a locked wheel whose binary facts could not be read is locked unchecked, and the lock
    says so (else, or without the intent's allow-unchecked-native, resolve fails)."""
    from tritonlock.lock import lockfile
    from tritonlock.intent.read import read_intent
    from tritonlock.compat.matrix import load_matrix

    intent = read_intent(intent_path)
    matrix = load_matrix()
    targets = targets_for(intent, target_file)
    kept: Lock | None = None
    if upgrade_packages and not keep_pins:
        from tritonlock import upgrade as keeping

        kept = keeping.old_lock(lock_path)
        upgrade_packages = keeping.names(upgrade_packages, kept, intent, lock_path)
        reason = f"--upgrade-package {', '.join(upgrade_packages)}; every other pin kept"
    elif lock_path.exists() and not upgrade:
        try:
            old = lockfile.read_lock(lock_path)
        except TritonlockError as err:  # a broken lock is never up to date: it is replaced, and we say so
            why_bad, _, fix = str(err).splitlines()[0].rpartition(" — ")
            why_bad = why_bad if "tritonlock resolve" in fix else str(err).splitlines()[0]
            reason = f"the existing lock was refused ({why_bad}); re-resolving"
        else:
            why = lockfile.staleness(old, intent, matrix.version)
            if why is None and _same_targets(old, targets):
                return LockOutcome(lock=old, selections=tuple(t.selection for t in old.targets), written=False,
                                   reason=f"{lock_path} is up to date", warnings=intent.warnings)
            reason = why or "the target machines changed"
            if keep_pins:  # `add` / `remove`: every pin the change does not move stays
                kept = old
                upgrade_packages = tuple(dict.fromkeys(_requirement_name(r) for r in upgrade_packages))
                reason += "; every other pin kept"
    else:
        reason = "--upgrade" if upgrade else f"no {lock_path.name} yet"
    from tritonlock._files import check_writes

    # before the slow part: the lock goes only over nothing or a lock tritonlock wrote (never a link, pipe or device)
    check_writes([lock_path], what="resolve", force=False, force_flag=None, fix=lockfile.LOCK_FOREIGN_FIX)
    from tritonlock.decide.resolve import resolve

    selections = _complete(resolve(intent, matrix, targets, running_python()), intent)
    if not any(s.ok for s in selections) or (strict and not all(s.ok for s in selections)):
        # nothing to lock anywhere (or, strict, somewhere): no lock is written (an earlier one stays)
        raise conflicts_error(tuple(s for s in selections if not s.ok))
    from tritonlock.decide import channel

    selections = channel.apply(selections, intent)  # a nightly/test channel: its newest build for each decision
    dindex = _default_index(intent)
    fitting = tuple(s for s in selections if s.ok)
    news = _release_day_beside(matrix, [s.index for s in selections if s.index] + [dindex])
    from tritonlock.lock.integrity import Early, check_lock
    from tritonlock.native.read import Reader, reads_likely
    from tritonlock.native.unread import unread_native

    with Early() as early:  # each closure's files are checked against their hashes from uv's answer on
        reader = Reader(early=reads_likely(lock_path), checks=early)
        try:
            if reader.early and lock_path.is_file():  # the lock replaced: the closure it locks is read from now on
                reader.from_lock = reader.prefetch_lock(lock_path, native_wanted, intent.content_hash)
            if kept is not None:
                from tritonlock import upgrade as keeping

                done = iter(keeping.lock_keeping(
                    kept, upgrade_packages, intent, matrix, fitting,
                    complete=lambda sels, it: channel.apply(_complete(sels, it), it), lock_targets=lock_targets,
                    python=running_python(), lock_path=lock_path, default_index=dindex, progress=progress,
                    reader=reader))
            else:
                done = iter(lock_targets(intent, matrix, fitting, dindex, progress=progress, reader=reader))
        except ClosureError as err:
            raise _unreachable_torch_index(err, intent, selections, dindex) from None
        finally:
            reader.close()
        # one target's conflict does not block the others: each target that fits is locked, each that does not is
        # recorded with its conflict (resolve then exits 3), so `why` and `check` have it to read
        decided = [next(done) if s.ok else (s, ()) for s in selections]
        # (a wheel whose facts could not be read fails the resolve after the closure's hash checks, which say more
        # where an index serves other bytes than it lists)
        decided, unread_notes, unread_error = unread_native(decided, reader, intent, allow_unchecked)
        if not any(s.ok for s, _ in decided) or (strict and not all(s.ok for s, _ in decided)):
            raise unread_error or conflicts_error(tuple(s for s, _ in decided if not s.ok))
        selections = tuple(_pin_triton(s, p) if s.ok else s for s, p in decided)
        closures = [p for _, p in decided]
        from tritonlock import _fast
        from tritonlock._discover import intent_bytes as relevant_bytes

        inputs_from = "file" if target_file else ("intent" if intent.targets else "host")

        intent_bytes = relevant_bytes(intent_path)  # of a pyproject.toml, only what the lock depends on
        key = _fast.machine_key(inputs_from, target_file) + _fast.target_files_key(intent_path, intent_bytes)
        digest = _fast.input_digest(intent_bytes, matrix.version, key)
        lock = Lock(lock_version=lockfile.LOCK_VERSION, created_by=f"tritonlock {__version__}",
                    intent_hash=intent.content_hash, matrix_version=matrix.version, default_index=dindex,
                    targets=tuple(LockedTarget(selection=s, packages=p) for s, p in zip(selections, closures)),
                    input_digest=digest, inputs_from=inputs_from, native=_native_of(closures, reader))
        metadata: dict[str, str] = {}
        checked, notes = check_lock(lock, early=early, metadata=metadata)  # what the closure was computed from
        if unread_error is not None:
            raise unread_error
    from tritonlock.lock.edges import file_metadata, with_edges

    lock = with_edges(lock, file_metadata(metadata, (p for t in lock.targets for p in t.packages)))  # (3.1)
    lockfile.write_lock(lock, lock_path)
    return LockOutcome(lock=lock, selections=selections, written=True, reason=reason,
                       warnings=intent.warnings + checked + news() + unread_notes, notes=notes,
                       upgraded=upgrade_packages,
                       kept_from=kept)


def _release_day_beside(matrix: Matrix, indexes: list[str]) -> Callable[[], tuple[str, ...]]:
    """The torch and triton releases the indexes serve that the matrix lacks (decide.releaseday), read in a thread
    while the closures are locked; the function returned waits for the lines."""
    import threading

    from tritonlock.decide.releaseday import release_day

    got: list[tuple[str, ...]] = []
    thread = threading.Thread(target=lambda: got.append(release_day(matrix, indexes)), daemon=True,
                              name="tritonlock-release-day")
    thread.start()

    def lines() -> tuple[str, ...]:
        thread.join()
        return got[0] if got else ()

    return lines


def _native_of(closures: list[tuple[LockedPackage, ...]], reader: Reader) -> tuple[NativeFacts, ...]:
    """The binary facts the lock keeps: of the locked wheels the rule read that carry native code or bring it, and
    of those whose facts could not be read (locked unchecked: the lock says so)."""
    shas = {w.sha256 for pkgs in closures for p in pkgs for w in p.wheels}
    return tuple(f for sha, f in sorted(reader.read.items()) if sha in shas and
                 (f.problem or f.members or f.provides))


def index_reachability() -> tuple[str, str]:
    """For `init`: (why [indexes].torch should be "default", or ""; a note for the user, or "").

    PyTorch's own index is the default source of the torch family; where it does not answer but the default index
    (PyPI or the mirror pip is configured with) does, the starter intent takes torch from the default index instead,
    so that the first `tritonlock resolve` works."""
    from tritonlock.lock.index import default_index, unreachable
    from tritonlock.compat.matrix import load_matrix

    torch_url = load_matrix().index_url("cpu")
    torch_problem = unreachable(torch_url, "torch")
    if torch_problem is None:
        return "", ""
    try:
        dindex = default_index()
    except TritonlockError as err:
        return "", f"warning: PyTorch's index ({torch_url}) did not answer ({torch_problem}), and {err}"
    default_problem = unreachable(dindex, "torch")
    if default_problem is not None:
        return "", (f"warning: neither PyTorch's index ({torch_url}: {torch_problem}) nor your default index "
                    f"({dindex}: {default_problem}) answered — `tritonlock resolve` needs one of them (or a mirror "
                    "in [indexes])")
    why = (f"PyTorch's index ({torch_url.rsplit('/', 1)[0]}) did not answer when `tritonlock init` ran "
           f"({torch_problem}); your default index ({dindex}) did.")
    return why, (f"note: {why} torch will come from the default index ([indexes] torch = \"default\"); on Linux that "
                 "is a CUDA build of several GB, also on a machine without a GPU")


def _unreachable_torch_index(err: ClosureError, intent: Intent, selections: tuple[Selection, ...],
                             dindex: str) -> ClosureError:
    """uv failed: when the reason is a torch index that does not answer while the default index does, say so and
    name the way out ([indexes].torch = "default"); otherwise uv's own words stand."""
    if intent.torch_index == "default":
        return err
    from tritonlock.lock.index import unreachable

    urls = sorted({s.index for s in selections if s.index and s.index != dindex})
    down = [(u, why) for u in urls if (why := unreachable(u, "torch")) is not None]
    if not down or unreachable(dindex, "torch") is not None:
        return err
    where = ", ".join(f"{u} ({why})" for u, why in down)
    text = str(err)
    text = text.rpartition("\n  fix: ")[0] or text  # uv's generic fix gives way to the real one
    gone = {u for u, _ in down}
    builds = {s.backend or "" for s in selections if s.index in gone}
    if builds and all(b.startswith(("rocm", "xpu")) for b in builds):  # the default index has no such torch
        kinds = " or ".join(sorted({"ROCm" if b.startswith("rocm") else "XPU" for b in builds}))
        from urllib.parse import urlsplit

        hosts = ", ".join(sorted({urlsplit(u).netloc for u in gone}))
        return ClosureError(f"{text}\n  cause: the torch index does not answer from here: {where}; your default "
                            f"index ({dindex}) does, but PyPI has no {kinds} build of torch (its Linux torch is a "
                            "CUDA build)\n  fix: name a mirror of PyTorch's index in "
                            f"{intent.path}:\n    [indexes]\n    torch = \"https://mirror.example/whl/{{backend}}\"\n"
                            f"  or run `tritonlock resolve` on a machine that reaches {hosts}")
    vendors = sorted({s.target.name for s in selections
                      if s.index in gone and (s.backend or "").startswith(("rocm", "xpu"))})
    return ClosureError(f"{text}\n  cause: the torch index does not answer from here: {where}; your default index "
                        f"({dindex}) does\n  fix: take torch from the default index — add to {intent.path}:\n"
                        "    [indexes]\n    torch = \"default\"\n  (PyPI ships one torch build per platform: CUDA on "
                        "Linux, a GPU-less build elsewhere), or name a mirror of PyTorch's index: torch = "
                        "\"https://mirror.example/whl/{backend}\"" + (
                            f"; the AMD and Intel targets ({', '.join(vendors)}) need the mirror: PyPI has no ROCm or "
                            "XPU build of torch" if vendors else ""))
