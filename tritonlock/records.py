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
import socket
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tritonlock import _toml
from tritonlock.errors import LockfileError
from tritonlock.models import HostProfile, Lock, LockedTarget

RECORDS_FILE = "triton-env.verified.toml"
RECORDS_VERSION = "1.0"
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

    @property
    def key(self) -> tuple[str, str]:
        return (self.target, self.fingerprint)


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordStatus:
    """A record judged against the current lock."""

    record: Record
    stale: bool  # the lock target's packages changed since (or the target is gone)
    why: str = ""


# ---------------------------------------------------------------- facts


def node_name() -> str:
    """The name a node reports under: TRITONLOCK_NODE, else Slurm's node name, else the hostname."""
    return (os.environ.get("TRITONLOCK_NODE") or os.environ.get("SLURMD_NODENAME") or socket.gethostname()).strip()


def target_digest(t: LockedTarget) -> str:
    """A target's packages digest (lockfile.packages_digest: everything installable), what records are keyed by."""
    from tritonlock.lockfile import packages_digest

    return packages_digest(tuple(sorted(t.packages, key=lambda p: p.name)))


def fingerprint(host: HostProfile) -> str:
    """The machine facts a lock target depends on: platform, glibc, Python minor, driver, GPU models."""
    py = ".".join(host.python.split(".")[:2])
    doc = [host.os, host.arch, host.glibc, py, host.driver, host.cuda_driver,
           sorted([g.name, g.cc] for g in host.gpus)]
    return "sha256:" + hashlib.sha256(json.dumps(doc).encode()).hexdigest()[:16]


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def make_record(target: LockedTarget, host: HostProfile, result: Any, *, node: str | None = None,
                now: datetime.datetime | None = None) -> Record:
    """A record of one verify result (a verify.VerifyResult) for a lock target on this host."""
    from tritonlock import __version__

    when = (now or datetime.datetime.now(datetime.timezone.utc)).astimezone(datetime.timezone.utc)
    kernels = tuple(KernelSummary(kernel=k.kernel, dtype=k.dtype, device=k.device, ok=k.ok, metric=k.metric,
                                  value=_num(k.value), torch_value=_num(k.torch_value), ratio=_num(k.ratio))
                    for k in result.kernels)
    return Record(
        target=target.name, fingerprint=fingerprint(host), packages_digest=target_digest(target),
        when=when.strftime("%Y-%m-%dT%H:%M:%SZ"), host=node or node_name(), ok=bool(result.ok), mode=result.mode,
        os=host.os, arch=host.arch, glibc=host.glibc, python=".".join(host.python.split(".")[:2]),
        driver=host.driver, cuda=host.cuda_driver, gpus=tuple(f"{g.name} ({g.cc})" for g in host.gpus),
        torch=result.torch, triton=result.triton, tritonlock=__version__, failures=tuple(result.failures),
        kernels=kernels)


def proves(record: Record, target: LockedTarget) -> bool:
    """Whether a record shows this target working with the current lock: same packages, passed, and on a GPU
    when the target is a GPU target (an interpreter run proves the packages import and compute, not the GPU)."""
    sel = target.selection
    gpu_target = bool(sel.backend and sel.backend.startswith("cu") and sel.target.driver)
    return (record.target == target.name and record.packages_digest == target_digest(target) and record.ok
            and (record.mode == "gpu" or not gpu_target))


def judge(records: tuple[Record, ...], lock: Lock) -> tuple[RecordStatus, ...]:
    """Each record with whether it still speaks for the lock."""
    by_name = {t.name: t for t in lock.targets}
    out: list[RecordStatus] = []
    for r in records:
        t = by_name.get(r.target)
        if t is None:
            out.append(RecordStatus(record=r, stale=True, why=f"the lock has no target {r.target!r} any more"))
        elif r.packages_digest != target_digest(t):
            out.append(RecordStatus(record=r, stale=True, why="the target's packages changed since"))
        else:
            out.append(RecordStatus(record=r, stale=False))
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
    from tritonlock.lockfile import toml_value

    return toml_value(value)


def dumps(records: tuple[Record, ...] | list[Record]) -> str:
    lines = [HEADER.rstrip("\n"), f"records-version = {_v(RECORDS_VERSION)}"]
    for r in sorted(records, key=lambda r: r.key):
        lines += ["", "[[verified]]"]
        for k, v in (("target", r.target), ("fingerprint", r.fingerprint), ("packages-digest", r.packages_digest),
                     ("when", r.when), ("host", r.host), ("ok", r.ok), ("mode", r.mode), ("os", r.os),
                     ("arch", r.arch), ("glibc", r.glibc), ("python", r.python), ("driver", r.driver),
                     ("cuda", r.cuda), ("gpus", list(r.gpus)), ("torch", r.torch), ("triton", r.triton),
                     ("tritonlock", r.tritonlock or None)):
            if v is not None:
                lines.append(f"{k} = {_v(v)}")
        if r.failures:
            lines.append("failures = [")
            lines += [f"  {_v(f)}," for f in r.failures]
            lines.append("]")
        if r.kernels:
            lines.append("kernels = [")
            lines += [f"  {_v({'kernel': k.kernel, 'dtype': k.dtype, 'device': k.device, 'ok': k.ok, 'metric': k.metric, 'value': k.value, 'torch': k.torch_value, 'ratio': k.ratio})},"
                      for k in r.kernels]
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


def loads(text: str, path: str = RECORDS_FILE) -> tuple[Record, ...]:
    """Parse a records file; a broken one is refused with the entry and key that are wrong."""
    r = _R(path)
    try:
        data = _toml.loads(text)
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
        rec = _entry(r, e, f"verified[{i}]")
        old = out.get(rec.key)
        if old is None or old.when <= rec.when:  # a merge that kept both sides of one entry: the newer wins
            out[rec.key] = rec
    return tuple(sorted(out.values(), key=lambda x: x.key))


def _entry(r: _R, e: Any, w: str) -> Record:
    if not isinstance(e, dict):
        raise r.fail(w, "expected a table")
    kernels = []
    for j, k in enumerate(r.get(e, "kernels", list, w, False) or []):
        kw = f"{w}.kernels[{j}]"
        if not isinstance(k, dict):
            raise r.fail(kw, "expected an inline table")
        kernels.append(KernelSummary(
            kernel=r.get(k, "kernel", str, kw), dtype=r.get(k, "dtype", str, kw), device=r.get(k, "device", str, kw),
            ok=r.get(k, "ok", bool, kw), metric=r.get(k, "metric", str, kw, False),
            value=_num(r.get(k, "value", (int, float), kw, False)),
            torch_value=_num(r.get(k, "torch", (int, float), kw, False)),
            ratio=_num(r.get(k, "ratio", (int, float), kw, False))))
    strs = r.get(e, "gpus", list, w, False) or []
    fails = r.get(e, "failures", list, w, False) or []
    if not all(isinstance(x, str) for x in (*strs, *fails)):
        raise r.fail(w, "gpus and failures must be lists of strings")
    return Record(
        target=r.get(e, "target", str, w), fingerprint=r.get(e, "fingerprint", str, w),
        packages_digest=r.get(e, "packages-digest", str, w), when=r.get(e, "when", str, w),
        host=r.get(e, "host", str, w), ok=r.get(e, "ok", bool, w), mode=r.get(e, "mode", str, w),
        os=r.get(e, "os", str, w), arch=r.get(e, "arch", str, w), glibc=r.get(e, "glibc", str, w, False),
        python=r.get(e, "python", str, w, False), driver=r.get(e, "driver", str, w, False),
        cuda=r.get(e, "cuda", str, w, False), gpus=tuple(strs), torch=r.get(e, "torch", str, w, False),
        triton=r.get(e, "triton", str, w, False), tritonlock=r.get(e, "tritonlock", str, w, False) or "",
        failures=tuple(fails), kernels=tuple(kernels))


def read_records(path: str | Path) -> tuple[Record, ...]:
    """The records in a file; none when the file does not exist."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ()
    except (OSError, UnicodeDecodeError) as err:
        raise LockfileError(f"{p}: cannot read ({err})") from None
    return loads(text, str(p))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock around read-modify-write: many nodes of one job record into one shared file."""
    import fcntl

    lock = path.with_name(f".{path.name}.lock")
    with open(lock, "a") as fh:
        fcntl.lockf(fh, fcntl.LOCK_EX)  # POSIX locks also hold across NFS clients (lockd)
        try:
            yield
        finally:
            fcntl.lockf(fh, fcntl.LOCK_UN)


def add_records(path: str | Path, new: tuple[Record, ...] | list[Record]) -> tuple[Record, ...]:
    """Insert or replace entries (same target × fingerprint: the newer run wins); write atomically."""
    from tritonlock.lockfile import write_atomic

    p = Path(path)
    with _locked(p):
        merged = {r.key: r for r in read_records(p)}
        for rec in new:
            old = merged.get(rec.key)
            if old is None or old.when <= rec.when:
                merged[rec.key] = rec
        out = tuple(sorted(merged.values(), key=lambda x: x.key))
        write_atomic(p, dumps(out))
    return out


def record_json(r: Record) -> dict[str, Any]:
    return {"target": r.target, "fingerprint": r.fingerprint, "packages_digest": r.packages_digest, "when": r.when,
            "host": r.host, "ok": r.ok, "mode": r.mode, "os": r.os, "arch": r.arch, "glibc": r.glibc,
            "python": r.python, "driver": r.driver, "cuda": r.cuda, "gpus": list(r.gpus), "torch": r.torch,
            "triton": r.triton, "tritonlock": r.tritonlock, "failures": list(r.failures),
            "kernels": [{"kernel": k.kernel, "dtype": k.dtype, "device": k.device, "ok": k.ok, "metric": k.metric,
                         "value": k.value, "torch": k.torch_value, "ratio": k.ratio} for k in r.kernels]}


def record_from_json(d: Any, where: str) -> Record:
    """The inverse of record_json (a node's report); raises LockfileError naming `where`."""
    if not isinstance(d, dict):
        raise LockfileError(f"{where}: record: expected an object")
    e = {k.replace("_", "-"): v for k, v in d.items() if v is not None}
    e["kernels"] = [{k: v for k, v in x.items() if v is not None} if isinstance(x, dict) else x
                    for x in d.get("kernels") or []]
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
    return replace(r, host=host)


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
        out.append(f"verified {r.when[:10]} on {r.host}: {machine}, driver {r.driver or 'none'}, "
                   f"{r.os}/{r.arch} — {state}" + (f"; {nums}" if nums else ""))
    return out
