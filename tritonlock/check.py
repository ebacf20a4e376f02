"""CI's question "is this lock still right?": staleness, decision drift, hashes, host match, verified-on."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonlock import _toml
from tritonlock.errors import TritonlockError
from tritonlock.models import HostProfile, Intent, Lock, Selection

if TYPE_CHECKING:
    from tritonlock.compat.matrix import Matrix

INTENT_FILE = "triton-env.toml"
LOCK_FILE = "triton-env.lock"
FIX_RESOLVE = "run `tritonlock resolve` and commit triton-env.lock"


@dataclass(frozen=True, kw_only=True, slots=True)
class Problem:
    """One reason the lock is not right; `kind` is stale | drift | hash | lock | host | unverified | uv."""

    kind: str
    message: str
    target: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckReport:
    problems: tuple[Problem, ...]
    warnings: tuple[str, ...]
    targets: int
    packages: int
    matrix_version: str
    verified: tuple[str, ...] = ()  # targets proven with the current lock (--require-verified)
    # packages locked with their native code unchecked: (target, name, version, file, why)
    unchecked: tuple[tuple[str, str, str, str, str], ...] = ()
    host_target: str | None = None  # with --host: the lock target this machine fits
    no_lock: bool = False  # there is no lock to check: bad input (exit 2), as in every command that reads it

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 2 if self.no_lock else 1


# ---------------------------------------------------------------- hashes, read from the raw TOML

_SHA256 = re.compile(r"[0-9a-f]{64}")


def missing_hashes(text: str, path: str) -> list[Problem]:
    """Every package file in the lock without a sha256 (read raw: the strict reader stops at the first)."""
    try:
        data = _toml.loads(text)
    except _toml.TOMLDecodeError:
        return []  # the strict reader words it
    out: list[Problem] = []
    targets = data.get("targets")
    # lock-version 3.x: packages live in the closures the targets name; 2.x: in each target
    closures = {c.get("id"): c.get("packages") for c in data.get("closures", []) if isinstance(c, dict)} \
        if isinstance(data.get("closures"), list) else {}
    for t in targets if isinstance(targets, list) else []:
        if not isinstance(t, dict):
            continue
        tname = str(t.get("name", "?"))
        pkgs = closures.get(t.get("closure")) if "closure" in t else t.get("packages")
        for p in pkgs if isinstance(pkgs, list) else []:
            if not isinstance(p, dict):
                continue
            who = f"{p.get('name', '?')} {p.get('version', '?')}"
            raw_wheels = p.get("wheels")
            wheels: list[Any] = raw_wheels if isinstance(raw_wheels, list) else []
            files = [*wheels, *([p["sdist"]] if isinstance(p.get("sdist"), dict) else [])]
            if not files:
                out.append(Problem(kind="hash", target=tname,
                                   message=f"target {tname!r}: package {who} has no files, so nothing to check its "
                                           f"hash against — {FIX_RESOLVE}"))
            for f in files:
                hashes = f.get("hashes") if isinstance(f, dict) else None
                sha = hashes.get("sha256") if isinstance(hashes, dict) else None
                name = f.get("name", "?") if isinstance(f, dict) else "?"
                if sha is None:
                    out.append(Problem(kind="hash", target=tname,
                                       message=f"target {tname!r}: package {who} file {name} has no sha256 hash — "
                                               f"{FIX_RESOLVE} (never install it without one)"))
                elif not isinstance(sha, str) or _SHA256.fullmatch(sha) is None:
                    from tritonlock._term import printable

                    out.append(Problem(kind="hash", target=tname,
                                       message=f"target {tname!r}: package {who} file {name} has a malformed sha256 "
                                               f"({printable(repr(sha), 80)}: not 64 lowercase hex digits), so "
                                               f"nothing can be checked against it — {FIX_RESOLVE}"))
    return out


# ---------------------------------------------------------------- staleness and drift


def _fmt(key: str, value: Any) -> str:
    if key == "gpus":
        return ",".join(value) or "none"
    return str(value or "none")


def _spec_change(old: Any, new: Any) -> str:
    parts = []
    for key in ("os", "arch", "glibc", "python", "driver", "cuda", "gpus", "macos"):
        a, b = getattr(old, key), getattr(new, key)
        if a != b:
            parts.append(f"{key} {_fmt(key, a)} → {_fmt(key, b)}")
    return ", ".join(parts)


def stale_problems(lock: Lock, intent: Intent, matrix_version: str, lock_path: str) -> list[Problem]:
    """The lock against the intent it was written for: one line for the intent, one per target that differs."""
    out: list[Problem] = []
    if lock.intent_hash != intent.content_hash:
        from tritonlock.lock.lockfile import changed_inputs

        what = changed_inputs(lock, intent)
        out.append(Problem(kind="stale", message=f"{lock_path} is stale: {what} changed since the lock was written — "
                                                 f"{FIX_RESOLVE}"))
        if lock.inputs_from != "host" and intent.targets:
            locked = {t.name: t.selection.target for t in lock.targets}
            wanted = {t.name: t for t in intent.targets}
            for name, spec in wanted.items():
                if name not in locked:
                    where = f" ({spec.origin[5:]})" if spec.origin.startswith("file:") else ""
                    out.append(Problem(kind="stale", target=name,
                                       message=f"target {name!r}{where} is not in the lock yet — {FIX_RESOLVE}"))
                elif (change := _spec_change(locked[name], spec)):
                    out.append(Problem(kind="stale", target=name,
                                       message=f"target {name!r}: the machine changed ({change}) — {FIX_RESOLVE}"))
            for name in locked:
                if name not in wanted:
                    out.append(Problem(kind="stale", target=name,
                                       message=f"target {name!r} is in the lock but no longer in {intent.path} — "
                                               f"{FIX_RESOLVE}"))
    if lock.matrix_version != matrix_version:
        out.append(Problem(kind="stale", message=f"{lock_path} was written with compatibility matrix "
                                                 f"{lock.matrix_version}; this tritonlock has {matrix_version} "
                                                 f"(`sync --locked` refuses it) — {FIX_RESOLVE}"))
    return out


def _same_triton(old: Selection, new: Selection) -> bool:
    if old.triton_package != new.triton_package:
        return False
    if old.triton == new.triton or not new.triton:
        return True
    if new.triton[0] in "<>=!~" and old.triton:  # a series (triton-windows): the lock holds one version of it
        from packaging.specifiers import SpecifierSet

        return SpecifierSet(new.triton).contains(old.triton, prereleases=True)
    return False


def conflict_problems(lock: Lock) -> list[Problem]:
    """A target the lock records as a conflict holds nothing to install: the lock is not right for it."""
    out = []
    for t in lock.targets:
        if not t.selection.ok:
            first = (t.selection.conflict.message if t.selection.conflict else "nothing fits").splitlines()[0]
            out.append(Problem(kind="conflict", target=t.name,
                               message=f"target {t.name!r} is recorded as a conflict, with nothing locked for it: "
                                       f"{first} — `tritonlock resolve` says it in full with its fix"))
    return out


def _packages_choice(intent: Intent, matrix: Matrix, old: Selection, new: Selection) -> Selection:
    """Where the user's packages chose the lock's torch (an older release than the target allows, or the same release
    in the build for their CUDA), the decision to compare with is the one for that torch and build: which torch the
    packages allow is uv's answer, not the matrix's, and `resolve` gives the same lock again."""
    from tritonlock.decide.requirements import needs_decision
    from tritonlock.decide.resolve import resolve

    if (not needs_decision(intent, new) or intent.channel != "release" or not old.torch
            or (old.torch, old.backend) == (new.torch, new.backend)):
        return new
    pinned = dataclasses.replace(intent, torch=f"=={old.torch}")
    if intent.cuda == "auto" and (old.backend or "").startswith("cu") and old.backend != new.backend:
        pinned = dataclasses.replace(pinned, cuda=old.backend or "")  # the torch line their native code needs
    (chosen,) = resolve(pinned, matrix, (old.target,), old.python or "3.12")
    return chosen


def drift_problems(lock: Lock, intent: Intent, *, intent_changed: bool = False) -> list[Problem]:
    """Re-decide every locked target under the matrix this tritonlock ships: any change is a problem.

    Each target is decided for the machine recorded in the lock, with the Python the lock chose as the default
    (the interpreter CI happens to run does not matter)."""
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.decide.resolve import resolve

    matrix = load_matrix()
    under = (f"with the current {Path(intent.path).name} and matrix {matrix.version}" if intent_changed
             else f"under matrix {matrix.version}")
    out: list[Problem] = []
    for t in lock.targets:
        old = t.selection
        if not old.ok:
            continue
        (new,) = resolve(intent, matrix, (old.target,), old.python or "3.12")
        new = _packages_choice(intent, matrix, old, new)
        if intent.channel != "release":  # a nightly/test build: judged as the nearest release it was decided for
            from tritonlock.decide.channel import as_release

            old = as_release(old, new)
        if not new.ok:
            first = (new.conflict.message if new.conflict else "nothing fits").splitlines()
            out.append(Problem(kind="drift", target=t.name,
                               message=f"target {t.name!r}: nothing fits it any more {under} "
                                       f"({' '.join(x.strip() for x in first[:2])}) — {FIX_RESOLVE}"))
            continue
        changes = [f"{k} {old_v} → {new_v}" for k, old_v, new_v in
                   (("python", old.python, new.python), ("torch", old.torch, new.torch),
                    ("backend", old.backend, new.backend)) if old_v != new_v]
        if not _same_triton(old, new):
            changes.append(f"triton {old.triton_package or 'none'} {old.triton or ''} → "
                           f"{new.triton_package or 'none'} {new.triton or ''}".replace("  ", " "))
        if changes:
            out.append(Problem(kind="drift", target=t.name,
                               message=f"target {t.name!r}: the decision would change {under}: "
                                       f"{', '.join(changes)} — {FIX_RESOLVE}"))
    return out


# ---------------------------------------------------------------- host and verified-on


def host_problems(lock: Lock, host: HostProfile, lock_path: str) -> tuple[list[Problem], str | None]:
    """Whether this machine fits a lock target: the problem when none does, else the target's name."""
    from tritonlock.environment.sync import pick_target

    try:
        fits = pick_target(lock, host, lock_path=lock_path)
    except TritonlockError as err:
        lines = str(err).splitlines()
        detail = "; ".join(x.strip(" -") for x in lines[1:] if not x.strip().startswith("fix:"))
        return [Problem(kind="host", message=f"this machine matches no target in {lock_path}"
                                             + (f" ({detail})" if detail else "")
                                             + " — save it with `tritonlock host --save hosts/NAME.toml`, add it "
                                               "to triton-env.toml, and run `tritonlock resolve`")], None
    return [], fits.name


def verified_problems(lock: Lock, records_path: Path) -> tuple[list[Problem], list[str]]:
    from tritonlock.records import proves, read_records, target_digest, why_not

    recs = read_records(records_path)
    out: list[Problem] = []
    proven: list[str] = []
    for t in lock.targets:
        if not t.selection.ok:
            continue
        mine = [r for r in recs if r.target == t.name]
        if any(proves(r, t) for r in mine):
            proven.append(t.name)
            continue
        digest = target_digest(t)
        current = [r for r in mine if r.packages_digest == digest]
        if current:
            r = max(current, key=lambda r: r.when)
            why = (f"its last verify failed on {r.host} ({r.when}: {r.failures[0] if r.failures else 'failed'})"
                   if not r.ok else f"the last record, from {r.host} ({r.when}), does not count: "
                                    f"{why_not(r, t) or 'it does not prove it'}")
        elif mine:
            why = f"{len(mine)} record(s) are stale (the target's packages changed since)"
        else:
            why = "no record"
        out.append(Problem(kind="unverified", target=t.name,
                           message=f"target {t.name!r} was never verified with the current lock ({why}) — run "
                                   f"`tritonlock sync && tritonlock verify --record` on such a machine and commit "
                                   f"{records_path.name}"))
    return out, proven


# ---------------------------------------------------------------- the whole check


def run_check(project: Path, *, host: HostProfile | None = None, require_verified: bool = False) -> CheckReport:
    """Every problem with the project's lock; `host` given = also check that it matches a target."""
    from tritonlock.intent.read import read_intent
    from tritonlock.lock.lockfile import read_lock
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.records import RECORDS_FILE

    from tritonlock._discover import intent_file

    intent_path, lock_path = intent_file(project), project / LOCK_FILE
    from tritonlock import _fast

    # a lock written from exactly these bytes (the intent's and its target files'): nothing in it is stale, and the
    # drift check needs the intent's own settings, not its thousand host files again
    fresh = intent_path.is_file() and _fast.lock_is_fresh(intent_path, lock_path, None)
    intent = read_intent(intent_path, target_files=not fresh)
    matrix_version = load_matrix().version
    from tritonlock._files import read_text

    try:
        text = read_text(lock_path)
    except FileNotFoundError:
        return CheckReport(problems=(Problem(kind="lock", message=f"{lock_path}: no such file — run `tritonlock "
                                                                  "resolve` and commit it"),),
                           warnings=intent.warnings, targets=0, packages=0, matrix_version=matrix_version,
                           no_lock=True)
    except (OSError, UnicodeDecodeError) as err:
        return CheckReport(problems=(Problem(kind="lock", message=f"{lock_path}: cannot read ({err}) — regenerate "
                                                                  "it with `tritonlock resolve`"),),
                           warnings=intent.warnings, targets=0, packages=0, matrix_version=matrix_version)
    try:
        lock = read_lock(lock_path)
    except TritonlockError as err:
        # the strict reader stops at the first problem: every file without a hash is listed from the raw TOML
        problems = missing_hashes(text, str(lock_path)) or [Problem(kind="lock", message=str(err).splitlines()[0])]
        return CheckReport(problems=tuple(problems), warnings=intent.warnings, targets=0, packages=0,
                           matrix_version=matrix_version)
    if fresh and intent.target_files == () and lock.targets:
        # the target files were not read again: their machines are the lock's, and so is the word on duplicates
        from tritonlock.intent.targets import same_machines

        intent = dataclasses.replace(intent, warnings=intent.warnings + same_machines(
            [t.selection.target for t in lock.targets if t.selection.target.origin.startswith("file:")]))
    # (a lock the strict reader took has a sha256 for every file: it refuses any without one)
    problems = [*([] if fresh else stale_problems(lock, intent, matrix_version, str(lock_path))),
                *conflict_problems(lock),
                *drift_problems(lock, intent, intent_changed=not fresh and lock.intent_hash != intent.content_hash)]
    if (project / "uv.lock").is_file():  # a uv project beside the lock: does uv take the same torch files?
        from tritonlock.export.uv import uv_lock_drift

        problems += [Problem(kind="uv", target=t or None, message=m) for t, m in uv_lock_drift(lock, project / "uv.lock")]
    host_target = None
    if host is not None:
        more_host, host_target = host_problems(lock, host, str(lock_path))
        problems += more_host
    proven: list[str] = []
    if require_verified:
        more, proven = verified_problems(lock, project / RECORDS_FILE)
        problems += more
    from tritonlock.lock.report import unchecked_native

    unchecked = tuple((t.name, p.name, p.version, f.filename, f.problem or "") for t in lock.targets
                      for p, f in unchecked_native(t, lock.native))
    said = tuple(f"target {t!r}: {name} {version}'s native code was NOT checked ({file} could not be read: {why}); "
                 "it was locked unchecked (allow-unchecked-native) — `tritonlock verify` on the machine imports it"
                 for t, name, version, file, why in unchecked)
    return CheckReport(problems=tuple(problems), warnings=intent.warnings + said, targets=len(lock.targets),
                       packages=sum(len(t.packages) for t in lock.targets), matrix_version=matrix_version,
                       verified=tuple(proven), host_target=host_target, unchecked=unchecked)


def report_json(r: CheckReport) -> dict[str, Any]:
    """`tritonlock check --json`: ok, problems [{kind, target, message}], warnings, counts."""
    return {"ok": r.ok, "problems": [{"kind": p.kind, "target": p.target, "message": p.message} for p in r.problems],
            "warnings": list(r.warnings), "targets": r.targets, "packages": r.packages,
            "matrix_version": r.matrix_version, "verified": list(r.verified), "host_target": r.host_target,
            "unchecked_native": [{"target": t, "name": n, "version": v, "file": f, "why": w}
                                 for t, n, v, f, w in r.unchecked]}


def format_report(r: CheckReport, lock_path: str) -> str:
    lines = [f"warning: {w}" for w in r.warnings]
    if r.ok:
        extra = f"; verified: {', '.join(r.verified)}" if r.verified else ""
        extra += f"; this machine fits target {r.host_target!r}" if r.host_target else ""
        native = ""
        if r.unchecked:
            names = sorted({n for _, n, _, _, _ in r.unchecked})
            native = (f"; the native code of {len(names)} locked package{'' if len(names) == 1 else 's'} NOT checked "
                      f"({', '.join(names)})")
        lines.append(f"ok: {lock_path} is fresh — {r.targets} target{'' if r.targets == 1 else 's'}, {r.packages} "
                     f"packages, every file hashed, decisions unchanged under matrix {r.matrix_version}{native}"
                     f"{extra}")
    else:
        lines += [p.message for p in r.problems]
    return "\n".join(lines)

