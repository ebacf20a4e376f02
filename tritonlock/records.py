"""Verified-on records beside the lock (triton-env.verified.toml): where each target was proven to work.

One entry per target × host fingerprint, sorted, each a self-contained table, so that two branches that each
verified on another machine merge without conflict. The lock's bytes are never touched: a record names the
target's packages digest, and a record whose digest no longer matches the lock is stale.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import math
import os
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tritonlock import _recordlines, _toml
from tritonlock.errors import LockfileError
from tritonlock.models import HostProfile, Lock, LockedTarget

RECORDS_FILE = "triton-env.verified.toml"
# 1.1: each entry carries a digest of itself; 1.2: caveats (what a run cannot vouch for); 1.3: each timed kernel's
# speed verdict against compat/bands.toml (`speed`), so a team's runs show which machines sat in their band; 1.4: the
# NCCL all-reduce's band, whether it is inferred, the link between its GPUs and the likely causes of its verdict
RECORDS_VERSION = "1.4"
LINKS = ("nvlink", "pcie", "none")  # how an all-reduce's GPUs reach each other ("none": P2P off, through host memory)
_MAX_CAUSES = 16
HEADER = (
    "# triton-env.verified.toml — where triton-env.lock was proven to work; written by `tritonlock verify --record`.\n"
    "# One [[verified]] entry per target × host fingerprint, sorted. When merging branches, keep both sides' entries.\n"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class KernelSummary:
    """One reference kernel on one device, as verify measured it."""

    kernel: str
    dtype: str
    device: str
    ok: bool
    metric: str | None = None  # "GB/s" | "TFLOP/s"; None when not timed (interpreter, --quick)
    value: float | None = None
    torch_value: float | None = None
    ratio: float | None = None  # Triton / torch: above 1 is faster than torch
    speed: str | None = None  # the verdict against its band: "ok", "slow", "fast", "no-band" (None: not timed)
    # the NCCL all-reduce's row (older records have none of these): the band its bus bandwidth was judged against,
    # whether that band is inferred (specifications and too few runs), the link between its GPUs, the message size,
    # and the likely causes verify named (a GPU busy, a link down, P2P off: "cuda:1: another process …")
    band: tuple[float, float] | None = None
    inferred: bool = False
    link: str | None = None
    message_bytes: int | None = None
    causes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class Record:
    """One verify run of one lock target on one kind of machine."""

    target: str
    fingerprint: str  # the machine's facts that matter to the lock (see fingerprint()); not its name
    packages_digest: str  # the lock target's digest when it was verified
    when: str  # ISO 8601 UTC, seconds
    host: str  # the node that verified it (hostname, SLURMD_NODENAME or TRITONLOCK_NODE)
    ok: bool
    mode: str  # "gpu" | "interpreter"
    os: str
    arch: str
    glibc: str | None = None
    python: str | None = None
    driver: str | None = None
    cuda: str | None = None
    gpus: tuple[str, ...] = ()  # "NVIDIA H200 (9.0)"
    torch: str | None = None
    triton: str | None = None
    tritonlock: str = ""
    failures: tuple[str, ...] = ()
    kernels: tuple[KernelSummary, ...] = ()
    # What the run cannot vouch for (host facts set by TRITONLOCK_* overrides, an interpreter that is not a venv
    # `tritonlock sync` made for the target, …): such a record never counts for a GPU target.
    caveats: tuple[str, ...] = ()
    digest: str = ""  # sha256 of every other field (entry_digest): a hand-edited entry no longer matches it

    @property
    def key(self) -> tuple[str, str]:
        return (self.target, self.fingerprint)


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordStatus:
    """A record judged against the current lock."""

    record: Record
    stale: bool  # it no longer speaks for the lock: packages changed, target gone, edited, or another machine
    why: str = ""


# ---------------------------------------------------------------- facts


def node_name() -> str:
    """The name a node reports under: TRITONLOCK_NODE, else Slurm's node name, else the hostname."""
    return (os.environ.get("TRITONLOCK_NODE") or os.environ.get("SLURMD_NODENAME") or socket.gethostname()).strip()


def target_digest(t: LockedTarget) -> str:
    """A target's packages digest (lockfile.packages_digest: everything installable), what records are keyed by."""
    from tritonlock.lock.lockfile import packages_digest

    return packages_digest(tuple(sorted(t.packages, key=lambda p: p.name)))


def fingerprint(host: HostProfile) -> str:
    """The machine facts a lock target depends on: platform, glibc, Python minor, driver, GPU models."""
    py = ".".join(host.python.split(".")[:2])
    doc: list[object] = [host.os, host.arch, host.glibc, py, host.driver, host.cuda_driver,
           sorted([g.name, g.cc] for g in host.gpus)]
    if host.vendor_gpus:  # AMD/Intel machines (only then: every NVIDIA fingerprint stays what it was)
        doc.append([*sorted(g.target for g in host.vendor_gpus), host.amdgpu or "", host.hsa_override or ""])
    return "sha256:" + hashlib.sha256(json.dumps(doc).encode()).hexdigest()[:16]


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _4(v: float | None) -> float | None:
    """A measurement kept to 4 significant digits (what the file holds, so the digest reads back the same)."""
    return None if v is None else float(f"{v:.4g}")


def entry_digest(r: Record) -> str:
    """sha256 of a record's every field but the digest itself. Like the lock's digests it catches hand edits, bad
    merges and copies that changed a field (a passing verdict, a packages digest, a target name); it does not stop
    someone who rewrites the entry and computes the digest again (the algorithm is public)."""
    doc = record_json(replace(r, digest=""))
    doc.pop("digest", None)
    if not doc.get("caveats"):
        doc.pop("caveats", None)  # so that every record made before caveats existed keeps its digest
    return "sha256:" + hashlib.sha256(json.dumps(doc, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


def _signed(r: Record) -> Record:
    return replace(r, digest=entry_digest(r))


def make_record(target: LockedTarget, host: HostProfile, result: Any, *, node: str | None = None,
                now: datetime.datetime | None = None, caveats: tuple[str, ...] = ()) -> Record:
    """A record of one verify result (a verify.VerifyResult) for a lock target on this host."""
    from tritonlock import __version__

    when = (now or datetime.datetime.now(datetime.timezone.utc)).astimezone(datetime.timezone.utc)
    from tritonlock._term import printable

    def s(v: str | None) -> str | None:  # what the file holds is shown later: one printable line
        return None if v is None else printable(str(v), 200)

    kernels = tuple(KernelSummary(kernel=s(k.kernel) or "", dtype=s(k.dtype) or "", device=s(k.device) or "",
                                  ok=bool(k.ok), metric=s(k.metric), value=_4(_num(k.value)),
                                  torch_value=_4(_num(k.torch_value)), ratio=_4(_num(k.ratio)),
                                  speed=k.speed.verdict if getattr(k, "speed", None) is not None else None,
                                  **_allreduce_fields(k))
                    for k in result.kernels)
    return _signed(Record(
        target=target.name, fingerprint=fingerprint(host), packages_digest=target_digest(target),
        when=when.strftime("%Y-%m-%dT%H:%M:%SZ"), host=s(node or node_name()) or "?", ok=bool(result.ok),
        mode=result.mode, os=host.os, arch=host.arch, glibc=s(host.glibc),
        python=".".join(host.python.split(".")[:2]), driver=s(host.driver), cuda=s(host.cuda_driver),
        gpus=tuple(f"{s(g.name)} ({s(g.cc)})" for g in host.gpus), torch=s(result.torch), triton=s(result.triton),
        tritonlock=__version__, failures=tuple(str(f) for f in result.failures), kernels=kernels,
        caveats=tuple(caveats)))


def _allreduce_fields(k: Any) -> dict[str, Any]:
    """What a record keeps of the all-reduce's verdict beyond its word: band, inferred, link, message size, causes."""
    from tritonlock._term import printable

    sp = getattr(k, "speed", None)
    if k.kernel != "nccl_all_reduce" or sp is None:
        return {}
    band = sp.value_band
    size = getattr(k, "message_bytes", None)
    return {"band": (_4(float(band[0])), _4(float(band[1]))) if band else None,
            "inferred": bool(sp.inferred) and band is not None, "link": sp.link if sp.link in LINKS else None,
            "message_bytes": size if isinstance(size, int) and size > 0 else None,
            "causes": tuple(printable(str(c), 500) for c in sp.causes[:_MAX_CAUSES])}


def machine(record: Record) -> HostProfile | None:
    """The machine a record ran on, as far as the record says (None when its GPU list does not read)."""
    import re

    from tritonlock.models import Gpu

    gpus = []
    for i, g in enumerate(record.gpus):
        m = re.fullmatch(r"(.*) \(([0-9]{1,2}\.[0-9]{1,2})\)", g)
        if m is None:
            return None
        gpus.append(Gpu(index=i, name=m[1], cc=m[2]))
    return HostProfile(os=record.os, arch=record.arch, python=record.python or "", glibc=record.glibc,
                       driver=record.driver, cuda_driver=record.cuda, gpus=tuple(gpus))


def doubt(record: Record, target: LockedTarget) -> str | None:
    """Why a record does not speak for this lock target, or None when it does."""
    if record.digest != entry_digest(record):
        return ("it was edited after it was recorded (its digest does not match)" if record.digest else
                "it carries no digest (recorded by an older tritonlock)") + " — run `tritonlock verify --record` again"
    if record.packages_digest != target_digest(target):
        return "the target's packages changed since"
    from tritonlock.environment.sync import target_fit

    host = machine(record)
    why = "its GPU list does not read" if host is None else target_fit(target, host, record.python)
    if why is not None:
        return f"it ran on a machine this target is not for ({why})"
    return None


def is_gpu_target(target: LockedTarget) -> bool:
    sel = target.selection
    return bool(sel.backend and sel.backend.startswith("cu") and sel.target.driver)


def why_not(record: Record, target: LockedTarget) -> str | None:
    """Why a record does not show this target working with the current lock (the first reason, in the order a user
    fixes them), or None when it does: it must be an unedited entry for these packages, made on a machine this target
    is for, that passed every check and kernel — and for a GPU target, on a GPU (an interpreter run proves the
    packages import and compute, not the GPU), with no caveats (overridden host facts, a foreign interpreter)."""
    if record.target != target.name:
        return f"it is a record of target {record.target!r}"
    why = doubt(record, target)
    if why is not None:
        return why.split(" — ")[0]
    if not record.ok or record.failures or not all(k.ok for k in record.kernels):
        failed = record.failures[0] if record.failures else next(
            (f"{k.kernel} {k.dtype} on {k.device}" for k in record.kernels if not k.ok), "failed")
        return f"its verify failed ({failed})"
    if is_gpu_target(target) and record.mode != "gpu":
        return "it ran only in Triton's interpreter, not on a GPU"
    if is_gpu_target(target) and record.caveats:
        return "it cannot stand for a GPU run: " + "; ".join(record.caveats)
    return None


def proves(record: Record, target: LockedTarget) -> bool:
    """Whether a record shows this target working with the current lock (see why_not)."""
    return why_not(record, target) is None


def judge(records: tuple[Record, ...], lock: Lock) -> tuple[RecordStatus, ...]:
    """Each record with whether it still speaks for the lock."""
    by_name = {t.name: t for t in lock.targets}
    out: list[RecordStatus] = []
    for r in records:
        t = by_name.get(r.target)
        why = f"the lock has no target {r.target!r} any more" if t is None else doubt(r, t)
        out.append(RecordStatus(record=r, stale=why is not None, why=why or ""))
    return tuple(out)


# ---------------------------------------------------------------- the file


def _v(value: Any) -> str:
    """A TOML value; floats keep 4 significant digits (measurements, not identities)."""
    if isinstance(value, float):
        return repr(float(f"{value:.4g}")) if value else "0.0"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_v(x)}" for k, x in value.items() if x is not None) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_v(x) for x in value) + "]"
    from tritonlock.lock.lockfile import toml_value

    return toml_value(value)


def dumps(records: tuple[Record, ...] | list[Record]) -> str:
    lines = [HEADER.rstrip("\n"), f"records-version = {_v(RECORDS_VERSION)}"]
    for r in sorted(records, key=lambda r: r.key):
        lines += ["", "[[verified]]"]
        for k, v in (("target", r.target), ("fingerprint", r.fingerprint), ("packages-digest", r.packages_digest),
                     ("when", r.when), ("host", r.host), ("ok", r.ok), ("mode", r.mode), ("os", r.os),
                     ("arch", r.arch), ("glibc", r.glibc), ("python", r.python), ("driver", r.driver),
                     ("cuda", r.cuda), ("gpus", list(r.gpus)), ("torch", r.torch), ("triton", r.triton),
                     ("tritonlock", r.tritonlock or None), ("digest", r.digest or None)):
            if v is not None:
                lines.append(f"{k} = {_v(v)}")
        if r.caveats:
            lines.append("caveats = [")
            lines += [f"  {_v(c)}," for c in r.caveats]
            lines.append("]")
        if r.failures:
            lines.append("failures = [")
            lines += [f"  {_v(f)}," for f in r.failures]
            lines.append("]")
        if r.kernels:
            lines.append("kernels = [")
            lines += [f"  {_v(_kernel_doc(k))}," for k in r.kernels]
            lines.append("]")
    return "\n".join(lines) + "\n"


class _R:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, where: str, what: str) -> LockfileError:
        return LockfileError(f"{self.path}: {where}: {what} — fix it, or delete the entry and run "
                             "`tritonlock verify --record` again")

    def get(self, d: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str, required: bool = True) -> Any:
        if key not in d:
            if required:
                raise self.fail(f"{where}.{key}", "missing")
            return None
        v = d[key]
        if not isinstance(v, kind) or (isinstance(v, bool) and kind in (int, float, (int, float))):
            raise self.fail(f"{where}.{key}", f"unexpected value {v!r}")
        return v


def loads(text: str, path: str = RECORDS_FILE, *, fast_lines: bool = True) -> tuple[Record, ...]:
    """Parse a records file; a broken one is refused with the entry and key that are wrong (fast_lines: _recordlines)."""
    from tritonlock.verify.speed import VERDICTS

    r = _R(path)
    try:
        data, read = _recordlines.read(text, KernelSummary, VERDICTS if fast_lines else None)
    except _toml.TOMLDecodeError as err:
        line, msg = _toml.decode_error_line(err, text)
        raise LockfileError(f"{path}:{line}: not valid TOML ({msg}) — fix it (a merge conflict left in it?), or "
                            "delete the file and verify again") from None
    version = data.get("records-version", RECORDS_VERSION)
    if not isinstance(version, str) or version.split(".")[0] != RECORDS_VERSION.split(".")[0]:
        raise LockfileError(f"{path}: records-version {version!r} is not supported by this tritonlock (reads "
                            f"{RECORDS_VERSION.split('.')[0]}.x) — upgrade tritonlock")
    raw = data.get("verified", [])
    if not isinstance(raw, list):
        raise r.fail("verified", "expected [[verified]] tables")
    out: dict[tuple[str, str], Record] = {}
    for i, e in enumerate(raw):
        rec = _entry(r, e, f"verified[{i}]", read.get(i))
        old = out.get(rec.key)
        if old is None or old.when <= rec.when:  # a merge that kept both sides of one entry: the newer wins
            out[rec.key] = rec
    return tuple(sorted(out.values(), key=lambda x: x.key))


def _entry(r: _R, e: Any, w: str, read: tuple[KernelSummary, ...] | None = None) -> Record:
    if not isinstance(e, dict):
        raise r.fail(w, "expected a table")
    kernels = list(read or ())
    for j, k in enumerate([] if read is not None else r.get(e, "kernels", list, w, False) or []):
        kw = f"{w}.kernels[{j}]"
        if not isinstance(k, dict):
            raise r.fail(kw, "expected an inline table")
        kernels.append(KernelSummary(
            kernel=r.get(k, "kernel", str, kw), dtype=r.get(k, "dtype", str, kw), device=r.get(k, "device", str, kw),
            ok=r.get(k, "ok", bool, kw), metric=r.get(k, "metric", str, kw, False),
            value=_num(r.get(k, "value", (int, float), kw, False)),
            torch_value=_num(r.get(k, "torch", (int, float), kw, False)),
            ratio=_num(r.get(k, "ratio", (int, float), kw, False)), speed=_speed(r, k, kw), **_allreduce(r, k, kw)))
    strs = r.get(e, "gpus", list, w, False) or []
    fails = r.get(e, "failures", list, w, False) or []
    caveats = r.get(e, "caveats", list, w, False) or []
    if not all(isinstance(x, str) for x in (*strs, *fails, *caveats)):
        raise r.fail(w, "gpus, failures and caveats must be lists of strings")
    rec = Record(
        target=r.get(e, "target", str, w), fingerprint=r.get(e, "fingerprint", str, w),
        packages_digest=r.get(e, "packages-digest", str, w), when=r.get(e, "when", str, w),
        host=r.get(e, "host", str, w), ok=r.get(e, "ok", bool, w), mode=r.get(e, "mode", str, w),
        os=r.get(e, "os", str, w), arch=r.get(e, "arch", str, w), glibc=r.get(e, "glibc", str, w, False),
        python=r.get(e, "python", str, w, False), driver=r.get(e, "driver", str, w, False),
        cuda=r.get(e, "cuda", str, w, False), gpus=tuple(strs), torch=r.get(e, "torch", str, w, False),
        triton=r.get(e, "triton", str, w, False), tritonlock=r.get(e, "tritonlock", str, w, False) or "",
        failures=tuple(fails), kernels=tuple(kernels), caveats=tuple(caveats), digest=r.get(e, "digest", str, w, False) or "")
    for key in ("target", "fingerprint", "packages-digest", "when", "host", "mode", "os", "arch", "glibc", "python",
                "driver", "cuda", "torch", "triton", "tritonlock", "digest"):
        v = e.get(key)
        if isinstance(v, str) and (not v.isprintable() or len(v) > 200):
            raise r.fail(f"{w}.{key}", f"{_shown(v)} is not one printable line of at most 200 characters")
    for j, g in enumerate(strs):
        if not g.isprintable() or len(g) > 200:
            raise r.fail(f"{w}.gpus[{j}]", f"{_shown(g)} is not one printable line of at most 200 characters")
    if isinstance(e.get("when"), str) and not _WHEN.fullmatch(e["when"]):
        raise r.fail(f"{w}.when", f"{_shown(e['when'])} is not a UTC time like 2026-01-31T12:00:00Z")
    if e.get("mode") not in (None, "gpu", "interpreter"):
        raise r.fail(f"{w}.mode", f"{_shown(e['mode'])} is not \"gpu\" or \"interpreter\"")
    return rec


def _speed(r: _R, k: dict[str, Any], where: str) -> str | None:
    from tritonlock.verify.speed import VERDICTS

    v = r.get(k, "speed", str, where, False)
    if v is not None and v not in VERDICTS:
        raise r.fail(f"{where}.speed", f"{_shown(v)} is not one of {', '.join(VERDICTS)}")
    return v  # type: ignore[no-any-return]


def _allreduce(r: _R, k: dict[str, Any], where: str) -> dict[str, Any]:
    """The all-reduce's keys of a kernel row, each checked (all optional: a record before 1.4 has none)."""
    out: dict[str, Any] = {}
    band = r.get(k, "band", list, where, False)
    if band is not None:
        if (len(band) != 2 or not all(_num(x) is not None for x in band)) or band[0] > band[1]:
            raise r.fail(f"{where}.band", f"{_shown(band)} is not [low, high], two numbers, low first")
        out["band"] = (float(band[0]), float(band[1]))
    inferred = r.get(k, "inferred", bool, where, False)
    if inferred and band is None:
        raise r.fail(f"{where}.inferred", "says a band is inferred, but the row has no band")
    out["inferred"] = bool(inferred)
    link = r.get(k, "link", str, where, False)
    if link is not None and link not in LINKS:
        raise r.fail(f"{where}.link", f"{_shown(link)} is not one of {', '.join(LINKS)}")
    out["link"] = link
    size = r.get(k, "message_bytes", int, where, False)
    if size is not None and size <= 0:
        raise r.fail(f"{where}.message_bytes", f"{_shown(size)} is not a positive number of bytes")
    out["message_bytes"] = size
    causes = r.get(k, "causes", list, where, False) or []
    if len(causes) > _MAX_CAUSES or not all(isinstance(c, str) and c.isprintable() and len(c) <= 500 for c in causes):
        raise r.fail(f"{where}.causes", f"expected at most {_MAX_CAUSES} printable lines of at most 500 characters")
    out["causes"] = tuple(causes)
    return out


_WHEN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def _shown(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def read_records(path: str | Path) -> tuple[Record, ...]:
    """The records in a file; none when the file does not exist."""
    from tritonlock._files import read_text

    p = Path(path)
    try:
        text = read_text(p)
    except FileNotFoundError:
        return ()
    except (OSError, UnicodeDecodeError) as err:
        raise LockfileError(f"{p}: cannot read ({err})") from None
    return loads(text, str(p))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock around read-modify-write: many nodes of one job record into one shared file. The lock file
    is removed before the lock is let go, so the project is left as it was; a process that waited on a file that
    is gone (or was replaced) when it gets the lock opens the current one and waits again."""
    import fcntl

    from tritonlock._files import open_lock_file

    lock = path.with_name(f".{path.name}.lock")
    while True:
        fh = os.fdopen(open_lock_file(lock), "r+")  # never through a link planted under its name, never a FIFO
        try:
            fcntl.lockf(fh, fcntl.LOCK_EX)  # POSIX locks also hold across NFS clients (lockd)
            try:
                same = os.path.samestat(os.fstat(fh.fileno()), os.stat(lock))
            except FileNotFoundError:
                same = False
            if not same:
                continue  # the holder before us removed it: lock the file that is there now
            try:
                yield
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(lock)
                fcntl.lockf(fh, fcntl.LOCK_UN)
            return
        finally:
            fh.close()


def add_records(path: str | Path, new: tuple[Record, ...] | list[Record]) -> tuple[Record, ...]:
    """Insert or replace entries (same target × fingerprint: the newer run wins); write atomically."""
    from tritonlock._files import check_writes, write_file

    p = Path(path)
    # the records file is read, merged and written back (what it holds is kept): never a link, device or pipe
    check_writes([p], what="verify --record", force=False, replace="edit")
    with _locked(p):
        merged = {r.key: r for r in read_records(p)}
        for rec in new:
            old = merged.get(rec.key)
            if old is None or old.when <= rec.when:
                merged[rec.key] = rec
        out = tuple(sorted(merged.values(), key=lambda x: x.key))
        write_file(p, dumps(out), what="verify --record", force=False, replace="edit")
    return out


def _kernel_doc(k: KernelSummary) -> dict[str, Any]:
    """One kernel as the file and a node's report hold it; the all-reduce's keys only where they were recorded (an
    older record's rows, and every kernel's, keep the keys and the digest they had)."""
    return {"kernel": k.kernel, "dtype": k.dtype, "device": k.device, "ok": k.ok, "metric": k.metric,
            "value": k.value, "torch": k.torch_value, "ratio": k.ratio,
            **({"speed": k.speed} if k.speed is not None else {}),
            **({"band": list(k.band)} if k.band is not None else {}),
            **({"inferred": True} if k.inferred else {}),
            **({"link": k.link} if k.link is not None else {}),
            **({"message_bytes": k.message_bytes} if k.message_bytes is not None else {}),
            **({"causes": list(k.causes)} if k.causes else {})}


def record_json(r: Record) -> dict[str, Any]:
    return {"target": r.target, "fingerprint": r.fingerprint, "packages_digest": r.packages_digest, "when": r.when,
            "host": r.host, "ok": r.ok, "mode": r.mode, "os": r.os, "arch": r.arch, "glibc": r.glibc,
            "python": r.python, "driver": r.driver, "cuda": r.cuda, "gpus": list(r.gpus), "torch": r.torch,
            "triton": r.triton, "tritonlock": r.tritonlock, "failures": list(r.failures), "digest": r.digest,
            "caveats": list(r.caveats),
            # a record made before speed verdicts keeps its digest: the key is there only when a verdict is
            "kernels": [_kernel_doc(k) for k in r.kernels]}


def record_from_json(d: Any, where: str) -> Record:
    """The inverse of record_json (a node's report); raises LockfileError naming `where`."""
    if not isinstance(d, dict):
        raise LockfileError(f"{where}: record: expected an object")
    e = {k.replace("_", "-"): v for k, v in d.items() if v is not None}
    kernels = d.get("kernels") or []
    if not isinstance(kernels, list):
        raise LockfileError(f"{where}: record.kernels: expected a list")
    e["kernels"] = [{k: v for k, v in x.items() if v is not None} if isinstance(x, dict) else x for x in kernels]
    return _entry(_R(where), e, "record")


def summary(r: Record) -> dict[str, float | None]:
    """The numbers a fleet table shows: the worst device's vector add GB/s and fp16 matmul TFLOP/s, and
    the lowest Triton/torch ratio among the timed kernels."""
    def worst(kernel: str, dtype: str | None = None) -> float | None:
        vals = [k.value for k in r.kernels if k.kernel == kernel and (dtype is None or k.dtype == dtype)
                and k.value is not None]
        return min(vals) if vals else None

    ratios = [k.ratio for k in r.kernels if k.ratio is not None]
    return {"vector_add_gbs": worst("vector_add"), "matmul_tflops": worst("matmul", "fp16") or worst("matmul"),
            "ratio_min": min(ratios) if ratios else None}


def with_host(r: Record, host: str) -> Record:
    return _signed(replace(r, host=host))


def verified_lines(judged: tuple[RecordStatus, ...], target: LockedTarget) -> list[str]:
    """What `show` prints under a target: where it was verified, newest first, stale ones marked."""
    mine = sorted((j for j in judged if j.record.target == target.name), key=lambda j: j.record.when, reverse=True)
    if not mine:
        return ["verified: never (run `tritonlock verify --record` on such a machine)"]
    out = []
    for j in mine:
        r = j.record
        s = summary(r)
        nums = ", ".join(x for x in (
            f"vector add {s['vector_add_gbs']:,.0f} GB/s" if s["vector_add_gbs"] is not None else "",
            f"matmul {s['matmul_tflops']:,.1f} TFLOP/s" if s["matmul_tflops"] is not None else "") if x)
        machine = ", ".join(r.gpus) or f"no GPU ({r.mode})"
        state = "STALE: " + j.why if j.stale else ("passed" if r.ok else "FAILED")
        if r.caveats and not j.stale:
            state += f" (caveats: {'; '.join(r.caveats)}" + (" — does not count for this GPU target)"
                                                             if is_gpu_target(target) else ")")
        out.append(f"verified {r.when[:10]} on {r.host}: {machine}, driver {r.driver or 'none'}, "
                   f"{r.os}/{r.arch} — {state}" + (f"; {nums}" if nums else ""))
    return out
