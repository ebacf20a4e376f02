"""Facts about the nodes of a fleet: host probes turned into target files, and the reports nodes leave behind."""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritonlock._files import read_text
from tritonlock.errors import TritonlockError, UsageError
from tritonlock.records import Record, record_from_json


class FleetError(TritonlockError):
    """A scheduler could not run the job, or a node's answer could not be read."""

    exit_code = 1


# ---------------------------------------------------------------- host probes → hosts/*.toml


@dataclass(frozen=True, kw_only=True, slots=True)
class Probe:
    """What one node said about itself (`tritonlock fleet probe`)."""

    node: str
    name: str  # the target name `host --save` would pick ("h200", "cpu")
    os: str
    arch: str
    glibc: str | None
    python: str | None
    driver: str | None
    cuda: str | None
    gpus: tuple[str, ...]  # compute capabilities
    gpu_names: tuple[str, ...]

    @property
    def machine(self) -> tuple[object, ...]:
        return (self.os, self.arch, self.glibc, self.python, self.driver, self.cuda, self.gpus)


def probe_json(node: str, profile: Any) -> dict[str, Any]:
    """One node's probe, one JSON line: its name and the target `tritonlock host --save` would write."""
    from tritonlock.host import default_target_name, to_target

    t = to_target(profile, default_target_name(profile))
    return {"node": node, "name": t.name, "os": t.os, "arch": t.arch, "glibc": t.glibc, "python": t.python,
            "driver": t.driver, "cuda": t.cuda, "gpus": list(t.gpus), "gpu_names": [g.name for g in profile.gpus]}


def parse_probes(output: str, where: str) -> list[Probe]:
    """Probes from a scheduler's output: one JSON object per line, maybe behind srun's "N: " label."""
    out: list[Probe] = []
    for no, line in enumerate(output.splitlines(), 1):
        text = re.sub(r"^\s*\d+:\s*", "", line).strip()
        if not text.startswith("{"):
            continue
        try:
            d = json.loads(text)
            if not isinstance(d, dict) or not isinstance(d["gpus"], list):
                raise TypeError("expected an object with a list of gpus")
            gpus = tuple(_line(g, where, no, "gpus") for g in d["gpus"])
            names = d.get("gpu_names", [])
            out.append(Probe(node=_line(d["node"], where, no, "node"), name=_line(d["name"], where, no, "name"),
                             os=_line(d["os"], where, no, "os"), arch=_line(d["arch"], where, no, "arch"),
                             glibc=_opt(d.get("glibc"), where, no, "glibc"),
                             python=_opt(d.get("python"), where, no, "python"),
                             driver=_opt(d.get("driver"), where, no, "driver"),
                             cuda=_opt(d.get("cuda"), where, no, "cuda"), gpus=gpus,
                             gpu_names=tuple(_line(g, where, no, "gpu_names", empty=True) for g in
                                             (names if isinstance(names, list) else []))))
        except (ValueError, KeyError, TypeError, RecursionError) as err:
            from tritonlock._term import printable

            raise FleetError(f"{where}: line {no}: not a node probe ({err}): {printable(text, 120)}") from None
    return out


def _toml_str(v: str) -> str:
    from tritonlock.lock.lockfile import toml_value

    return toml_value(v)


def _line(v: object, where: str, no: int, key: str, *, empty: bool = False) -> str:
    """One field of a node's probe: a printable line (it goes into a file name, a TOML file and a comment)."""
    if not isinstance(v, str) or not (v.strip() or empty) or not v.isprintable() or len(v) > 200:
        from tritonlock._term import printable

        raise FleetError(f"{where}: line {no}: {key}: {printable(repr(v), 80)} is not a short printable name")
    return v


def _opt(v: object, where: str, no: int, key: str) -> str | None:
    return None if v is None else _line(v, where, no, key)


def group_probes(probes: list[Probe]) -> list[tuple[str, list[Probe]]]:
    """One target per distinct machine (identical nodes share one file), with unique names."""
    groups: dict[tuple[object, ...], list[Probe]] = {}
    for p in sorted(probes, key=lambda p: p.node):
        groups.setdefault(p.machine, []).append(p)
    used: set[str] = set()  # case-folded: two targets "H200" and "h200" would be one file where case is ignored
    out: list[tuple[str, list[Probe]]] = []
    for members in sorted(groups.values(), key=lambda m: (m[0].name, m[0].node)):
        base = members[0].name
        name = base
        if name.casefold() in used and members[0].driver:
            name = f"{base}-{members[0].driver.split('.')[0]}"
        n = 2
        while name.casefold() in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name.casefold())
        out.append((name, members))
    return out


def host_file_text(name: str, members: list[Probe], *, today: datetime.date | None = None) -> str:
    """A target file as `tritonlock host --save` writes it, naming the nodes it stands for."""
    p = members[0]
    when = (today or datetime.date.today()).isoformat()
    models = ", ".join(sorted(set(p.gpu_names))) or "no NVIDIA GPU"
    nodes = ", ".join(m.node for m in members)
    lines = [f"# {models}; gathered by `tritonlock fleet hosts` on {when} from {len(members)} node(s): {nodes}",
             "[[targets]]", f"name = {_toml_str(name)}", f"os = {_toml_str(p.os)}", f"arch = {_toml_str(p.arch)}"]
    for key in ("glibc", "python", "driver", "cuda"):
        value = getattr(p, key)
        if value is not None:
            lines.append(f"{key} = {_toml_str(value)}")
    lines.append("gpus = [" + ", ".join(_toml_str(g) for g in p.gpus) + "]")
    return "\n".join(lines) + "\n"


def write_host_files(probes: list[Probe], out_dir: Path, *, force: bool = False) -> list[tuple[Path, list[Probe]]]:
    """One NAME.toml per distinct machine; a file there that tritonlock did not write stops it (unless `force`)
    before anything is written."""
    from tritonlock._files import file_stem, write_files

    # a node's answer never picks where a file goes; distinct names never share a file (file_stem)
    planned = [(out_dir / f"{file_stem(name)}.toml", name, members) for name, members in group_probes(probes)]
    if len({str(p).casefold() for p, _, _ in planned}) != len(planned):  # file_stem's promise, kept by a check
        raise FleetError(f"two machines would share a file in {out_dir} — give the nodes distinct names")
    # --out DIR is made when missing (the default, hosts/, in a new project)
    write_files([(p, host_file_text(name, members)) for p, name, members in planned], what="fleet hosts",
                force=force, parents=True)
    return [(p, members) for p, _, members in planned]


# ---------------------------------------------------------------- what nodes leave in a report directory


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeReport:
    """One node's outcome: its record when verify ran, else the stage that failed and its words."""

    tag: str  # the report's file stem: node name (and array task)
    node: str
    record: Record | None  # None when verify did not answer
    ok: bool
    # "verify" | "sync" | "start" (nothing after the job started) | "report" (unreadable) | "record" (verify passed
    # and left no record: it does not say which machine and lock target it verified)
    stage: str
    error: str = ""
    exit_code: int | None = None
    copies: tuple[str, ...] = ()  # the tags of other reports of this same run or machine, merged into this one


_STEP = re.compile(r"^(?P<tag>.+?)\.(?P<kind>json|started|sync\.log|sync\.rc|verify\.log|verify\.rc)$")


def _read(p: Path) -> str:
    try:
        return read_text(p, errors="replace")
    except OSError:
        return ""


def _rc(p: Path) -> int | None:
    text = _read(p).strip()
    return int(text) if re.fullmatch(r"-?[0-9]{1,9}", text) else None  # ASCII digits: "²".isdigit() is True


def _last_error(log: str) -> str:
    """The line of a log that says what went wrong (tritonlock's "error: ..." first, else the last line)."""
    lines = [x.rstrip() for x in log.splitlines() if x.strip()]
    for i, line in enumerate(lines):
        if line.startswith("error:"):
            more = [x.strip().lstrip("- ") for x in lines[i + 1:i + 4] if x.startswith("  ")]
            return "; ".join([line[6:].strip().rstrip(":"), *more])
    return lines[-1].strip() if lines else ""


def _list(v: object) -> list[Any]:
    return v if isinstance(v, list) else []  # a node's report is read, never trusted to be of the right shape


def _shown(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _timed_out(rc: int | None) -> bool:
    return rc in (124, 137)  # coreutils timeout: 124, or 128+9 after its -k


def read_report_dir(directory: Path) -> list[NodeReport]:
    """Every node that left a trace in `directory` (the job scripts' files: TAG.started, TAG.sync.rc,
    TAG.sync.log, TAG.json from `verify --json --record`, TAG.verify.rc, TAG.verify.log)."""
    if not directory.is_dir():
        raise UsageError(f"{directory}: no such directory — pass the reports directory the job wrote into")
    tags: dict[str, set[str]] = {}
    for f in directory.iterdir():
        m = _STEP.match(f.name)
        if m and f.is_file():
            tags.setdefault(m.group("tag"), set()).add(m.group("kind"))
    out = [_node(directory, tag, kinds) for tag, kinds in sorted(tags.items())]
    return _one_per_machine([r for r in out if r is not None])


def _one_per_machine(reports: list[NodeReport]) -> list[NodeReport]:
    """One report per machine: copies of one report (a file copied or gathered twice) and runs of one node (a job
    array whose tasks landed on one node) — the same node, machine and lock target — count as one node, the newest
    run speaking for it; the others' tags are kept in `copies`."""
    import dataclasses

    groups: dict[tuple[str, str, str], list[NodeReport]] = {}
    order: list[tuple[str, str, str] | str] = []
    for r in reports:
        if r.record is None:
            order.append(r.tag)
            continue
        key = (r.record.host, r.record.fingerprint, r.record.target)
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append(r)
    by_tag = {r.tag: r for r in reports if r.record is None}
    out: list[NodeReport] = []
    for k in order:
        if isinstance(k, str):
            out.append(by_tag[k])
            continue
        same = groups[k]
        # the newest run speaks; of one run seen twice, a failed copy wins over a passing one (never a doubt hidden)
        best = max(same, key=lambda r: (r.record.when if r.record else "", not r.ok))
        out.append(dataclasses.replace(best, copies=tuple(r.tag for r in same if r is not best)))
    return out


def _node(d: Path, tag: str, kinds: set[str]) -> NodeReport | None:
    if kinds == {"json"} and tag in ("report", "summary"):
        return None  # report merge's own output
    sync_rc = _rc(d / f"{tag}.sync.rc") if "sync.rc" in kinds else None
    verify_rc = _rc(d / f"{tag}.verify.rc") if "verify.rc" in kinds else None
    node = tag
    if "json" in kinds:
        text = _read(d / f"{tag}.json")
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than Python reads
            doc = None
        if isinstance(doc, dict) and "ok" in doc and not isinstance(doc["ok"], bool):
            return NodeReport(tag=tag, node=node, record=None, ok=False, stage="report",
                              error=f"{d / (tag + '.json')}: ok: expected true or false, got {_shown(doc['ok'])}")
        if isinstance(doc, dict) and "ok" in doc:
            rec = None
            if "record" in doc:
                try:
                    rec = record_from_json(doc["record"], str(d / f"{tag}.json"))
                except TritonlockError as err:
                    return NodeReport(tag=tag, node=node, record=None, ok=False, stage="report", error=str(err))
                node = rec.host
            failures = [str(x) for x in _list(doc.get("failures"))] or [
                f"{c.get('name')}: {c.get('detail')}" for c in _list(doc.get("checks"))
                if isinstance(c, dict) and not c.get("ok")]
            # One verdict: a pass needs the report's ok, its record's ok and verify's exit code to agree.
            if doc["ok"] and rec is None:
                failures = [f"{d / (tag + '.json')} has no record: verify passed, but the report does not say which "
                            "machine and lock target it verified — the job runs `tritonlock verify --json --record`; "
                            "run that on the node"]
            elif doc["ok"] and rec is not None and not rec.ok:
                failures = [f"{d / (tag + '.json')}: the report says ok but its record says failed"]
            elif doc["ok"] and verify_rc not in (None, 0):
                failures = [f"the report says ok but verify exited {verify_rc} "
                            f"({_last_error(_read(d / f'{tag}.verify.log')) or 'no output'})"]
            ok = bool(doc["ok"]) and rec is not None and rec.ok and verify_rc in (None, 0)
            unrecorded = bool(doc["ok"]) and rec is None and verify_rc in (None, 0)
            return NodeReport(tag=tag, node=node, record=rec, ok=ok, stage="record" if unrecorded else "verify",
                              error="; ".join(failures[:2]) if not ok else "", exit_code=verify_rc)
    if sync_rc not in (None, 0):
        why = ("timed out" if _timed_out(sync_rc) else f"exit {sync_rc}") + ": "
        return NodeReport(tag=tag, node=node, record=None, ok=False, stage="sync", exit_code=sync_rc,
                          error=why + (_last_error(_read(d / f"{tag}.sync.log")) or "no output"))
    if sync_rc == 0 or "verify.rc" in kinds or "verify.log" in kinds:
        why = ("timed out" if _timed_out(verify_rc) else f"exit {verify_rc}" if verify_rc is not None
               else "no answer") + ": "
        return NodeReport(tag=tag, node=node, record=None, ok=False, stage="verify", exit_code=verify_rc,
                          error=why + (_last_error(_read(d / f"{tag}.verify.log")) or "verify wrote no report"))
    return NodeReport(tag=tag, node=node, record=None, ok=False, stage="start",
                      error="started but left no result (killed, out of time, or still running)")
