"""`export --format uv`: the lock's decision as uv's own tables in a pyproject.toml ([[tool.uv.index]], explicit, and
[tool.uv.sources]; one extra per target with [tool.uv] conflicts when targets differ), so that `uv lock` and
`uv sync` take the same torch files — and `check`'s question whether a uv.lock beside the lock still does."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritonlock.errors import TritonlockError
from tritonlock.models import Lock, LockedPackage, LockedTarget

PREFIX = "tritonlock-"  # the [[tool.uv.index]] entries this export owns (a re-export replaces them, keeps the rest)


class UvExportError(ValueError, TritonlockError):
    """The lock cannot be written as uv's tables (a target without a decision, a pyproject.toml we cannot edit)."""

    exit_code = 2


def _extra(name: str) -> str:
    """A target's name as an extra name (PEP 685 normalized)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "target"


def _index_name(t: LockedTarget) -> str:
    return PREFIX + (t.selection.backend or "torch")


def family(lock: Lock, t: LockedTarget) -> tuple[LockedPackage, ...]:
    """The packages of a target that come from its torch index (torch, triton, torchvision…, as the lock bound them);
    none when the torch family comes from the default index."""
    index = t.selection.index
    if not index or index.rstrip("/") == lock.default_index.rstrip("/"):
        return ()
    return tuple(p for p in t.packages if p.index.rstrip("/") == index.rstrip("/"))


def _pins(lock: Lock, t: LockedTarget) -> list[str]:
    """Exact pins for the torch family (torch itself always, from whichever index) and what `pinned` adds: those for
    the target's platform only (`uv lock` resolves for every platform, where another release may be required: vLLM
    pins another protobuf on s390x)."""
    from tritonlock.export import environment_marker

    fam = {p.name for p in family(lock, t)} | {"torch", t.selection.triton_package or "triton"}
    marker = environment_marker(t.selection)
    return sorted(f"{p.name}=={p.version}" + ("" if p.name in fam else f"; {marker}") for p in pinned(lock, t)
                  if not p.direct)  # (a direct reference: the project names its file, which pins it)


def pinned(lock: Lock, t: LockedTarget) -> tuple[LockedPackage, ...]:
    """What the export pins exactly: the torch family and, from wherever the lock took them, torch and Triton; and
    what the native-code rule decided — each package with native code at the release whose binary facts were checked
    against this torch (uv resolving afresh would take the newest, which the rule may have refused: xformers without
    sm_70 code on a V100, a CUDA 13 build beside a CUDA 12 torch), and each package taken from its own index of
    builds (vLLM's CUDA 12.9 build), bound to it."""
    fam = family(lock, t)
    names = {p.name for p in fam}
    top = {"torch", t.selection.triton_package or "triton"}
    native = {n.sha256 for n in lock.native if n.native}
    return fam + tuple(p for p in t.packages if p.name not in names and (
        p.name in top or own_index(lock, t, p) or any(w.sha256 in native for w in p.wheels)))


def own_index(lock: Lock, t: LockedTarget, p: LockedPackage) -> bool:
    """Whether the lock took `p` from an index of its own builds (neither the torch index nor the default one)."""
    index = p.index.rstrip("/")
    return bool(index) and not p.direct and index not in (lock.default_index.rstrip("/"),
                                                          (t.selection.index or "").rstrip("/"))


def _own_indexes(lock: Lock, t: LockedTarget) -> list[tuple[str, str, str]]:
    """(package, index entry name, address) for each package the lock took from an index of its own builds."""
    import hashlib

    return [(p.name, f"{PREFIX}{_extra(p.name)}-{hashlib.sha256(p.index.rstrip('/').encode()).hexdigest()[:8]}",
             p.index) for p in t.packages if own_index(lock, t, p)]


@dataclass(frozen=True, kw_only=True, slots=True)
class UvPlan:
    """What the export writes: index entries, sources, extras (several targets) and the commands to sync each."""

    indexes: tuple[tuple[str, str], ...]  # (name, url), explicit
    default_index: str
    sources: dict[str, Any]
    extras: dict[str, list[str]]  # extra name → pins (several targets)
    constraints: tuple[str, ...]  # one target: the family's exact pins
    commands: tuple[tuple[str, str], ...]  # (target, command)
    requires_python: str
    # one target: what [project].dependencies must name for uv to install it (constraints only pin what something
    # requires): torch, and a Triton that torch does not require (a CPU build's, kept for Triton's interpreter)
    dependencies: tuple[str, ...] = ("torch",)
    # [tool.uv] environments: the targets' platforms, the ones the lock decided for (uv lock resolves for every
    # platform otherwise, where the pinned releases may not resolve: vLLM pins another protobuf on s390x)
    environments: tuple[str, ...] = ()


def plan(lock: Lock) -> UvPlan:
    targets = [t for t in lock.targets]
    for t in targets:
        if not t.selection.ok or not t.packages:
            raise UvExportError(f"target {t.name!r} has no decision in the lock — fix the intent and run "
                                "`tritonlock resolve`")
    indexes: dict[str, str] = {}
    for t in targets:
        if family(lock, t) and t.selection.index:
            indexes.setdefault(_index_name(t), t.selection.index)
    clash = {n for n in indexes if sum(1 for t in targets if _index_name(t) == n
                                       and t.selection.index != indexes[n])}
    if clash:  # two addresses for one backend (a mirror per target): name them apart
        indexes = {}
        for t in targets:
            if family(lock, t) and t.selection.index:
                indexes.setdefault(_index_name(t) + "-" + _extra(t.name), t.selection.index)
    for t in targets:  # a package's own index of builds: one explicit entry per address, the package bound to it
        for _, n, url in _own_indexes(lock, t):
            indexes.setdefault(n, url)

    def name_of(t: LockedTarget) -> str:
        for n, url in indexes.items():
            if url == t.selection.index and (n == _index_name(t) or n == _index_name(t) + "-" + _extra(t.name)):
                return n
        return _index_name(t)

    from tritonlock.export import environment_marker

    envs = tuple(dict.fromkeys(environment_marker(t.selection) for t in targets))
    pythons = sorted({t.selection.python for t in targets if t.selection.python})
    requires = f">={pythons[0]}" if pythons else ">=3.9"
    distinct = {(t.selection.index, tuple(_pins(lock, t))) for t in targets}
    sources: dict[str, Any] = {}
    if len(targets) == 1 or len(distinct) == 1:
        t = targets[0]
        for p in family(lock, t):
            sources[p.name] = {"index": name_of(t)}
        sources.update({name: {"index": n} for name, n, _ in _own_indexes(lock, t)})
        cmd = "uv lock && uv sync"
        return UvPlan(indexes=tuple(indexes.items()), default_index=lock.default_index, sources=sources, extras={},
                      constraints=tuple(_pins(lock, t)), requires_python=requires,
                      commands=tuple((x.name, cmd) for x in targets), dependencies=_needed(t),
                      environments=envs)
    extras: dict[str, list[str]] = {}
    seen: dict[str, str] = {}
    for t in targets:
        e = _extra(t.name)
        if e in seen:
            raise UvExportError(f"targets {seen[e]!r} and {t.name!r} make the same extra name {e!r} — rename one")
        seen[e] = t.name
        extras[e] = _pins(lock, t) + [r for r in t.selection.packages if r not in _base_requirements(lock)]
        for p in family(lock, t):
            sources.setdefault(p.name, []).append({"index": name_of(t), "extra": e})
        for name, n, _ in _own_indexes(lock, t):
            sources.setdefault(name, []).append({"index": n, "extra": e})
    return UvPlan(indexes=tuple(indexes.items()), default_index=lock.default_index, sources=sources, extras=extras,
                  constraints=(), requires_python=requires,
                  commands=tuple((t.name, f"uv lock && uv sync --extra {_extra(t.name)}") for t in targets),
                  environments=envs)


def _needed(t: LockedTarget) -> tuple[str, ...]:
    """torch, and the target's Triton where torch does not bring it: a CPU build requires no triton, and the lock
    keeps one from the default index for Triton's interpreter (a constraint alone would leave it out of uv.lock)."""
    triton = t.selection.triton_package or "triton"
    own = [p for p in t.packages if p.name == triton and p.index.rstrip("/") != (t.selection.index or "").rstrip("/")]
    return ("torch", *(p.name for p in own))


def _base_requirements(lock: Lock) -> list[str]:
    """For a new pyproject.toml: what every target asked for besides torch (the intent's packages); what only some
    targets carry (numpy for Triton's interpreter on a target without a driver) goes into their extras."""
    return [r for r in lock.targets[0].selection.packages if all(r in t.selection.packages for t in lock.targets)]


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return type(value).__name__


def _bad(path: str, value: Any, want: str) -> UvExportError:
    return UvExportError(f"pyproject.toml: {path} is {_kind(value)}, where uv expects {want} — fix it (uv would "
                         "refuse the file too), then export again; nothing was written")


def _table(parent: Any, key: str, path: str, *, super_table: bool = False) -> Any:
    """parent[key] as a table to edit: the one there (a [table], an inline table or dotted keys), else a new one."""
    import tomlkit

    value = parent.get(key)
    if value is None:
        value = tomlkit.inline_table() if _inline(parent) else tomlkit.table(is_super_table=super_table)
        parent[key] = value
        return parent[key]
    if not isinstance(value, dict):
        raise _bad(path, value, "a table")
    return value


def _inline(container: Any) -> bool:
    from tomlkit.items import InlineTable

    return isinstance(container, InlineTable)


def _array(parent: Any, key: str, path: str, want: str = "a list") -> list[Any]:
    value = parent.get(key, [])
    if not isinstance(value, list):
        raise _bad(path, value, want)
    return list(value)


def render(lock: Lock, text: str | None, *, project_name: str = "project") -> tuple[str, UvPlan]:
    """The pyproject.toml text with uv's tables set from the lock. `text` None: a new file (a [project] with the
    intent's packages); else the user's file, every table this export does not own left as it was — in the layout
    the user chose ([[tool.uv.index]] tables, or an inline `index = [{...}]` array). A shape uv itself would refuse
    (tool.uv.index a string, project.dependencies a table) is a clean error, and the result is read back and
    checked before it is handed out."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    p = plan(lock)
    try:
        doc = tomlkit.parse(text) if text is not None else tomlkit.document()
    except TOMLKitError as err:
        raise UvExportError(f"pyproject.toml cannot be read as TOML ({err}) — fix it first") from None
    try:
        _edit(doc, lock, p, project_name)
        out = _one_blank_line_after_index(tomlkit.dumps(doc))
    except (TOMLKitError, ValueError, TypeError, KeyError, AttributeError) as err:
        if isinstance(err, UvExportError):
            raise
        raise UvExportError(f"pyproject.toml: its layout of [project] and [tool.uv] cannot be edited in place "
                            f"({type(err).__name__}: {str(err)[:200]}) — write [tool.uv] as plain tables, or export "
                            "to a new file (-o another/pyproject.toml) and copy the tables; nothing was written") from None
    _check_written(out, p)
    return out, p


def _edit(doc: Any, lock: Lock, p: UvPlan, project_name: str) -> None:
    import tomlkit

    if "project" not in doc:
        proj = tomlkit.table()
        proj.add("name", project_name)
        proj.add("version", "0.0.0")
        proj.add("requires-python", p.requires_python)
        deps = tomlkit.array()
        for r in (list(p.dependencies) if not p.extras else []) + _base_requirements(lock):
            deps.append(r)
        proj.add("dependencies", deps.multiline(True))
        doc.add("project", proj)
    project = _table(doc, "project", "project")
    dynamic = _array(project, "dynamic", "project.dynamic", "a list of field names")
    if not p.extras:
        if "dependencies" in dynamic:
            raise UvExportError("pyproject.toml: project.dependencies is dynamic (a build backend computes it), so "
                                "the export cannot add torch to it — make the dependencies static, or export to a new "
                                "file (-o another/pyproject.toml); nothing was written")
        deps = project.get("dependencies")
        if deps is None:
            deps = project["dependencies"] = tomlkit.array()
        elif not isinstance(deps, list):
            raise _bad("project.dependencies", deps, "a list of requirement strings")
        for name in p.dependencies:
            # the constraints pin it; a project that never names it would not install it
            if not any(re.match(rf"\s*{re.escape(name)}\s*(?:[<>=!~;\[@]|$)", str(d), re.I) for d in deps):
                deps.append(name)
    else:
        if "optional-dependencies" in dynamic:
            raise UvExportError("pyproject.toml: project.optional-dependencies is dynamic, so the export cannot add "
                                "an extra per target to it — make them static, or export to a new file; nothing was "
                                "written")
        opt = _table(project, "optional-dependencies", "project.optional-dependencies")
        for e, pins in p.extras.items():
            arr = tomlkit.array()
            for pin in pins:
                arr.append(pin)
            opt[e] = arr
    tool = _table(doc, "tool", "tool", super_table=True)
    uv = _table(tool, "uv", "tool.uv")
    # [[tool.uv.index]]: ours replaced, the user's kept, in the user's layout
    current = uv.get("index")
    if current is not None and not isinstance(current, list):
        raise _bad("tool.uv.index", current, "a list of index tables")
    for i, e in enumerate(current or []):
        if not isinstance(e, dict):
            raise _bad(f"tool.uv.index[{i}]", e, "a table (name, url)")
    old = [e for e in current or [] if not str(e.get("name", "")).startswith(PREFIX)]
    entries: list[dict[str, Any]] = [{"name": n, "url": u, "explicit": True} for n, u in p.indexes]
    if p.default_index and not any(e.get("default") for e in old):
        entries.append({"name": PREFIX + "default", "url": p.default_index, "default": True})
    from tomlkit.items import AoT

    if isinstance(current, AoT) or (current is None and not _inline(uv)):
        aot = tomlkit.aot()
        for e in old:
            aot.append(e)
        for new in entries:
            t = tomlkit.table()
            t.update(new)
            aot.append(t)
        uv["index"] = aot
    else:  # index = [{...}] (valid uv configuration), or a [tool.uv] written inline
        arr = tomlkit.array()
        for e in old:
            arr.append(e)
        for new in entries:
            it = tomlkit.inline_table()
            it.update(new)
            arr.append(it)
        uv["index"] = arr.multiline(True)
    if p.environments:  # the user's own entries kept, the targets' platforms added
        have = _array(uv, "environments", "tool.uv.environments", "a list of marker strings")
        for i, e in enumerate(have):
            if not isinstance(e, str):
                raise _bad(f"tool.uv.environments[{i}]", e, "a marker string (\"sys_platform == 'linux'\")")
        arr = tomlkit.array()
        for e in have + [m for m in p.environments if m not in have]:
            arr.append(e)
        uv["environments"] = arr
    if p.constraints:
        fam = {re.split(r"[=<>!~ ;\[]", c, maxsplit=1)[0] for c in p.constraints}
        cons = [c for c in _array(uv, "constraint-dependencies", "tool.uv.constraint-dependencies",
                                  "a list of requirement strings")
                if re.split(r"[=<>!~ ;\[]", str(c), maxsplit=1)[0] not in fam]
        arr = tomlkit.array()
        for c in [*cons, *p.constraints]:
            arr.append(c)
        uv["constraint-dependencies"] = arr
    if p.extras:
        ours = set(p.extras)
        keep = [c for c in _array(uv, "conflicts", "tool.uv.conflicts", "a list of lists of {extra = …}")
                if not (isinstance(c, list) and c and all(isinstance(i, dict) and i.get("extra") in ours for i in c))]
        arr = tomlkit.array()
        for c in keep:
            arr.append(c)
        group = tomlkit.array()
        for e in p.extras:
            it = tomlkit.inline_table()
            it.add("extra", e)
            group.append(it)
        arr.append(group)
        uv["conflicts"] = arr
    sources = _table(uv, "sources", "tool.uv.sources")
    for name, value in p.sources.items():
        if isinstance(value, list):
            arr = tomlkit.array()
            for v in value:
                it = tomlkit.inline_table()
                it.update(v)
                arr.append(it)
            sources[name] = arr
        else:
            it = tomlkit.inline_table()
            it.update(value)
            sources[name] = it


def _check_written(out: str, p: UvPlan) -> None:
    """The edited file, read back: uv's tables say what the plan says (a layout tomlkit edits wrongly is refused,
    never written)."""
    from tritonlock import _toml

    try:
        data = _toml.loads(out)
        uv = data["tool"]["uv"]
        got = {e["name"]: e["url"] for e in uv["index"] if str(e.get("name", "")).startswith(PREFIX)}
        want = dict(p.indexes) | ({PREFIX + "default": p.default_index} if PREFIX + "default" in got else {})
        ok = got == want and all(uv["sources"].get(n) == v for n, v in p.sources.items())
        ok = ok and all(data["project"]["optional-dependencies"].get(e) == pins for e, pins in p.extras.items())
        ok = ok and all(c in uv.get("constraint-dependencies", []) for c in p.constraints)
        ok = ok and all(e in uv.get("environments", []) for e in p.environments)
    except (ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise UvExportError("pyproject.toml: its layout of [project] and [tool.uv] cannot be edited in place (the "
                            "result would not say what the lock says) — write [tool.uv] as plain tables, or export to "
                            "a new file (-o another/pyproject.toml) and copy the tables; nothing was written")


def _one_blank_line_after_index(text: str) -> str:
    """tomlkit keeps the blank line after an array of tables with its last entry, so a re-export would drop or double
    it: the export writes exactly one between its last [[tool.uv.index]] entry and the table after it."""
    start = text.rfind("[[tool.uv.index]]")
    if start < 0:
        return text
    text = re.sub(r"\n{3,}(?=\[\[tool\.uv\.index\]\])", "\n\n", text)  # (a kept entry brings its blank line)
    start = text.rfind("[[tool.uv.index]]")
    m = re.compile(r"\n\s*\n?(?=\[)").search(text, start)
    if m is None:
        return text
    return text[:m.start()] + "\n\n" + text[m.end():]


# ---------------------------------------------------------------- check: uv.lock against triton-env.lock


def uv_lock_drift(lock: Lock, uv_lock: Path) -> list[tuple[str, str]]:
    """(target, message) for each torch-family package whose file uv.lock does not pin as triton-env.lock does."""
    from tritonlock import _toml
    from tritonlock._files import read_text

    try:
        data = _toml.loads(read_text(uv_lock))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        return [("", f"{uv_lock}: cannot read ({err}) — run `uv lock` again")]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for pkg in data.get("package", []) if isinstance(data.get("package"), list) else []:
        if isinstance(pkg, dict) and isinstance(pkg.get("name"), str):
            by_name.setdefault(pkg["name"], []).append(pkg)
    out: list[tuple[str, str]] = []
    for t in lock.targets:
        for p in pinned(lock, t):
            entries = by_name.get(p.name, [])
            where = "url" if p.direct else "registry"  # (a direct reference: uv.lock's source is its file)
            same = [e for e in entries if e.get("version") == p.version and isinstance(e.get("source"), dict)
                    and str(e["source"].get(where, "")).rstrip("/") == p.index.rstrip("/")]
            if not same:
                have = ", ".join(sorted({str(e.get("version")) for e in entries})) or "none"
                out.append((t.name, f"{uv_lock}: {p.name} {p.version} (target {t.name!r} in triton-env.lock) is not "
                                    f"in uv.lock from {p.index} (it holds {p.name}: {have}) — run `tritonlock export --format uv -o "
                                    "pyproject.toml`, then `uv lock`"))
                continue
            hashes = {str(w.get("hash", "")).removeprefix("sha256:") for e in same
                      for w in [*e.get("wheels", []), e.get("sdist"), e.get("archive")] if isinstance(w, dict)}
            missing = [w.name for w in p.wheels if w.sha256 not in hashes]
            if missing:
                out.append((t.name, f"{uv_lock}: {p.name} {p.version}: {', '.join(missing)} has another sha256 in "
                                    f"uv.lock than in triton-env.lock (target {t.name!r}) — the index changed the "
                                    "file; run `tritonlock resolve --upgrade` and `uv lock` again"))
    return out
