"""`tritonlock add` / `remove`: the intent edited where it lives — triton-env.toml's [environment] (packages, torch,
triton), or a pyproject.toml's [project].dependencies and [tool.tritonlock.environment].packages — through tomlkit,
so every comment, blank line, quote and line ending the user wrote stays as it was. Nothing is written here: the
edit is the new bytes, checked as an intent, for the caller to write (and to put back if the lock fails)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritonlock.errors import IntentError, UsageError

_BOM = "\ufeff"
FORMS = '"vllm", "vllm>=0.19", "vllm[audio]", "vllm; sys_platform == \'linux\'" or "pkg @ https://…/pkg.whl"'


@dataclass(frozen=True, kw_only=True, slots=True)
class Edit:
    """The intent file before and after, and what changed in words (one line each)."""

    path: Path
    before: bytes
    after: bytes
    said: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True, slots=True)
class _Req:
    text: str  # as the user typed it (what the file gets)
    name: str  # canonical
    marker: str | None
    same: str  # the requirement normalized, to tell an identical one from another


def _q(text: str) -> str:
    """A requirement as the file spells a string: in double quotes."""
    import json

    return json.dumps(text, ensure_ascii=False)


def _parse(text: str, verb: str) -> _Req:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    from tritonlock._term import printable

    shown = printable(text, 200)
    if not text.strip():
        raise UsageError(f"{verb}: an empty requirement — give a package, e.g. {FORMS}")
    try:
        r = Requirement(text.strip())
    except InvalidRequirement as err:
        raise UsageError(f"{verb} {shown!r}: not a requirement ({str(err).splitlines()[0]}) — write it as uv takes "
                         f"it: {FORMS}") from None
    return _Req(text=text.strip(), name=canonicalize_name(r.name), marker=str(r.marker) if r.marker else None,
                same=str(r))


def _name_of(item: Any) -> tuple[str, str | None, str] | None:
    """(canonical name, marker, normalized text) of one entry of a requirements array; None for what is no
    requirement (the intent reader names it)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    if not isinstance(item, str):
        return None
    try:
        r = Requirement(str(item))
    except InvalidRequirement:
        return None
    return canonicalize_name(r.name), (str(r.marker) if r.marker else None), str(r)


def _load(path: Path) -> tuple[bytes, str, str, Any]:
    """(bytes, text without a BOM, the BOM or "", tomlkit document). The file must already be a valid intent: an
    edit never starts from a broken one (its own error names the line)."""
    import tomlkit

    from tritonlock._files import read_bytes
    from tritonlock.intent.read import read_intent

    read_intent(path)  # (IntentError names file:line and the fix)
    raw = read_bytes(path)
    text = raw.decode("utf-8")
    bom = _BOM if text.startswith(_BOM) else ""
    text = text[len(bom):]
    return raw, text, bom, tomlkit.parse(text)


def _finish(path: Path, before: bytes, bom: str, doc: Any, said: list[str]) -> Edit:
    """The new bytes, read back as an intent before anything is written: an edit that would make the file invalid
    (a torch requirement with extras in pyproject.toml, a URL with credentials) is refused with the reader's words."""
    import tomlkit

    from tritonlock.intent.read import parse_intent

    after = (bom + tomlkit.dumps(doc)).encode("utf-8")
    if after != before:
        try:
            parse_intent(after.decode("utf-8-sig").replace("\r\n", "\n"), str(path))
        except IntentError as err:
            raise IntentError(f"{err} (in {path} as the edit would leave it; nothing was changed)") from None
    return Edit(path=path, before=before, after=after, said=tuple(said))


def _array(table: Any, key: str) -> Any:
    """table[key] as a tomlkit array, created (empty, inline) where the key is missing."""
    import tomlkit

    if key not in table:
        table[key] = tomlkit.array()
    return table[key]


def _put(arr: Any, req: _Req, where: str) -> str:
    """Add `req` to a requirements array as uv does: an entry of the same package and the same markers is replaced
    (the first in place, keeping its comment; any others dropped), else it is appended."""
    same = [i for i, item in enumerate(arr) if (n := _name_of(item)) is not None and n[:2] == (req.name, req.marker)]
    if not same:
        arr.append(req.text)
        return f"added {_q(req.text)} to {where}"
    first = same[0]
    old = str(arr[first])
    for i in reversed(same[1:]):
        del arr[i]
    if _name_of(old) is not None and _name_of(old)[2] == req.same and len(same) == 1:  # type: ignore[index]
        return f"{_q(req.text)} is already in {where}: nothing to change there"
    arr[first] = req.text
    return f"replaced {_q(old)} with {_q(req.text)} in {where}"


def _drop(arr: Any, name: str) -> list[str]:
    """Remove every entry of the package from a requirements array (whatever its markers); what was removed."""
    gone: list[str] = []
    for i in reversed(range(len(arr))):
        n = _name_of(arr[i])
        if n is not None and n[0] == name:
            gone.insert(0, str(arr[i]))
            del arr[i]
    return gone


def _env_table(doc: Any) -> Any:
    import tomlkit

    if "environment" not in doc:
        doc["environment"] = tomlkit.table()
    return doc["environment"]


def _torch_value(req: _Req, verb: str) -> str:
    """triton-env.toml's torch / triton key for a requirement of it: its specifier alone (tritonlock picks the build
    per target, so extras, markers and URLs have no place there)."""
    from packaging.requirements import Requirement

    r = Requirement(req.text)
    if r.extras or r.marker is not None or r.url:
        raise UsageError(f"{verb} {_q(req.text)}: tritonlock picks {req.name}'s build for each target, so it takes a "
                         f"plain version specifier — e.g. `tritonlock {verb} \"{req.name}>=2.7\"` (no extras, markers "
                         "or URL)")
    spec = str(r.specifier)
    return spec or ("*" if req.name == "torch" else "auto")


def add(path: Path, requirements: Sequence[str]) -> Edit:
    """The intent with each requirement added (or, for a package it already names with the same markers, replacing
    that requirement)."""
    from tritonlock._discover import PYPROJECT

    reqs = [_parse(r, "add") for r in requirements]
    if not reqs:
        raise UsageError(f"add: name a package to add, e.g. `tritonlock add vllm` ({FORMS})")
    before, _, bom, doc = _load(path)
    said: list[str] = []
    if path.name == PYPROJECT:
        for req in reqs:
            said.append(_add_pyproject(doc, req, path.name))
    else:
        env = _env_table(doc)
        for req in reqs:
            if req.name in ("torch", "triton"):
                value = _torch_value(req, "add")
                old = env.get(req.name)
                key = f"[environment].{req.name} of {path.name}"
                if old is not None and str(old) == value:
                    said.append(f"{key} is already {_q(value)}: nothing to change there")
                    continue
                env[req.name] = value
                said.append(f"set {key} to {_q(value)}" + (f" (was {_q(str(old))})" if old is not None else ""))
                continue
            said.append(_put(_array(env, "packages"), req, f"[environment].packages of {path.name}"))
    return _finish(path, before, bom, doc, said)


def _tool_packages(doc: Any) -> Any | None:
    tool = doc.get("tool")
    table = tool.get("tritonlock") if tool is not None and hasattr(tool, "get") else None
    env = table.get("environment") if table is not None and hasattr(table, "get") else None
    pk = env.get("packages") if env is not None and hasattr(env, "get") else None
    return pk if isinstance(pk, list) else None


def _add_pyproject(doc: Any, req: _Req, file: str) -> str:
    """uv's place for a requirement, [project].dependencies — or, where the package is already named in
    [tool.tritonlock.environment].packages (requirements for tritonlock only), there."""
    tool = _tool_packages(doc)
    if tool is not None and any((n := _name_of(x)) is not None and n[:2] == (req.name, req.marker) for x in tool):
        return _put(tool, req, f"[tool.tritonlock.environment].packages of {file}")
    if "project" not in doc:
        if tool is None:
            import tomlkit

            table = doc["tool"]["tritonlock"]
            if "environment" not in table:
                table["environment"] = tomlkit.table()
            return _put(_array(table["environment"], "packages"), req,
                        f"[tool.tritonlock.environment].packages of {file}")
        return _put(tool, req, f"[tool.tritonlock.environment].packages of {file}")
    return _put(_array(doc["project"], "dependencies"), req, f"[project].dependencies of {file}")


def remove(path: Path, names: Sequence[str]) -> Edit:
    """The intent without the named packages (every entry of each, whatever its markers). A package the intent does
    not name is bad input — nothing is changed (uv refuses the same way)."""
    from packaging.utils import canonicalize_name

    from tritonlock._discover import PYPROJECT
    from tritonlock._term import printable

    wanted = [canonicalize_name(_parse(n, "remove").name) for n in names]
    if not wanted:
        raise UsageError("remove: name a package to remove, e.g. `tritonlock remove vllm`")
    before, _, bom, doc = _load(path)
    said: list[str] = []
    missing: list[str] = []
    for name in dict.fromkeys(wanted):
        if path.name != PYPROJECT:
            if name in ("torch", "triton"):
                raise UsageError(f"remove {name}: {name} is part of the stack tritonlock locks for every target "
                                 f"({'[environment].torch, a specifier' if name == 'torch' else '[environment].triton'}"
                                 f") — change it with `tritonlock add \"{name}>=…\"`"
                                 + (', or set triton = "none" in [environment]' if name == "triton" else "")
                                 + "; nothing was changed")
            env = doc.get("environment")
            arr = env.get("packages") if env is not None and hasattr(env, "get") else None
            gone = _drop(arr, name) if isinstance(arr, list) else []
            if gone:
                said.append(f"removed {', '.join(_q(g) for g in gone)} from [environment].packages of {path.name}")
            else:
                missing.append(name)
            continue
        gone_here: list[str] = []
        project = doc.get("project")
        deps = project.get("dependencies") if project is not None and hasattr(project, "get") else None
        if isinstance(deps, list):
            gone = _drop(deps, name)
            if gone:
                gone_here.append(f"removed {', '.join(_q(g) for g in gone)} from [project].dependencies of "
                                 f"{path.name}")
        tool = _tool_packages(doc)
        if tool is not None:
            gone = _drop(tool, name)
            if gone:
                gone_here.append(f"removed {', '.join(_q(g) for g in gone)} from "
                                 f"[tool.tritonlock.environment].packages of {path.name}")
        if gone_here:
            said += gone_here
        else:
            missing.append(name)
    if missing:
        where = _elsewhere(doc, missing) if path.name == PYPROJECT else ""
        listed = "[project].dependencies" if path.name == PYPROJECT else "[environment].packages"
        raise UsageError(f"remove: {path} does not name {', '.join(repr(printable(m, 100)) for m in missing)} in "
                         f"{listed}{where} — nothing was changed (`tritonlock show` lists what the lock holds; a "
                         "package another one requires leaves with it)")
    return _finish(path, before, bom, doc, said)


def _elsewhere(doc: Any, names: list[str]) -> str:
    """Where else in a pyproject.toml a package is named: an optional-dependency group (edited by hand there)."""
    project = doc.get("project")
    groups = project.get("optional-dependencies") if project is not None and hasattr(project, "get") else None
    found = []
    for group, reqs in (groups.items() if groups is not None and hasattr(groups, "items") else ()):
        if isinstance(reqs, list) and any((n := _name_of(x)) is not None and n[0] in names for x in reqs):
            found.append(str(group))
    if not found:
        return ""
    return (f" (it is in [project.optional-dependencies] {', '.join(found)}: edit that group by hand, or drop it from "
            "[tool.tritonlock].extras)")
