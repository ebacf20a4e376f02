"""A pyproject.toml's intent: [tool.tritonlock] and [project].dependencies, read as triton-env.toml's keys."""

from __future__ import annotations

import re
from typing import Any

from tritonlock import _toml, _urls
from tritonlock.intent import _checks
from tritonlock.intent._checks import normalize_torch_spec


def _from_pyproject(p: _checks._Problems, data: dict[str, Any]) -> dict[str, Any]:
    """A pyproject.toml's intent as triton-env.toml's keys: [tool.tritonlock] holds environment, indexes, targets and
    target-files (and `extras`, the optional-dependency groups to lock); [project].dependencies and those groups are
    the packages. A torch or triton requirement among them is the torch or triton specifier (with the table's, when
    it gives one too: both hold). Problems name pyproject.toml:LINE and the full key (tool.tritonlock.…)."""
    from tritonlock._discover import pyproject_groups

    tool = data.get("tool")
    table = tool.get("tritonlock") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        p.add(("tool", "tritonlock"), "no [tool.tritonlock] table", "add one with `tritonlock init --pyproject`",
              absolute=True)
        p.raise_if_any()
        return {}
    assert isinstance(table, dict)
    p.prefix = ("tool", "tritonlock")
    out = {k: v for k, v in table.items() if k != "extras"}
    project = data.get("project", {})
    if not isinstance(project, dict):
        p.add(("project",), "expected a table", "write it as [project]", absolute=True)
        project = {}
    extras = table.get("extras", [])
    if not isinstance(extras, list) or not all(isinstance(e, str) for e in extras):
        p.add(("extras",), f"expected a list of optional-dependency group names, got {_toml.shown(extras)}",
              'write e.g. extras = ["train"]')
        extras = []
    groups = project.get("optional-dependencies", {})
    groups = groups if isinstance(groups, dict) else {}
    known = {re.sub(r"[-_.]+", "-", k).lower(): k for k in groups}
    for i, e in enumerate(extras):
        if re.sub(r"[-_.]+", "-", e).lower() not in known:
            near = _toml.nearest(e, groups) if len(p.items) < 20 else None
            p.add(("extras", i), f"{_toml.shown(e)} is not a group in [project.optional-dependencies]",
                  (f'did you mean "{near}"? (its groups: {", ".join(sorted(groups))})' if near else
                   f"use one of: {', '.join(sorted(groups)) or '(none: add the group there first)'}"))
    dynamic = project.get("dynamic", [])
    if isinstance(dynamic, list) and "dependencies" in dynamic:
        p.add(("project", "dynamic"), "the dependencies are dynamic (a build backend computes them), so tritonlock "
              "cannot read them", "list them in [project].dependencies", absolute=True)
    reqs: list[tuple[tuple[str | int, ...], Any]] = []
    deps = project.get("dependencies", [])
    if not isinstance(deps, list):
        p.add(("project", "dependencies"), f"expected a list of requirement strings, got {_toml.shown(deps)}",
              'write e.g. dependencies = ["numpy>=1.26"]', absolute=True)
        deps = []
    reqs += [(("project", "dependencies", i), r) for i, r in enumerate(deps)]
    for g in pyproject_groups(project, extras):
        name = known[g]
        members = groups[name]
        if not isinstance(members, list):
            p.add(("project", "optional-dependencies", name), f"expected a list of requirement strings, got "
                  f"{_toml.shown(members)}", f'write e.g. {name} = ["numpy>=1.26"]', absolute=True)
            continue
        reqs += [(("project", "optional-dependencies", name, i), r) for i, r in enumerate(members)]
    own = re.sub(r"[-_.]+", "-", project["name"]).lower() if isinstance(project.get("name"), str) else None
    env = out.get("environment", {})
    env = dict(env) if isinstance(env, dict) else env
    if not isinstance(env, dict):
        return out  # the shared checks say what is wrong with it
    packages = list(env["packages"]) if isinstance(env.get("packages"), list) else env.get("packages", [])
    for key, req in reqs:
        if not isinstance(req, str):
            p.add(key, f"expected a string, got {_toml.shown(req)}", 'write e.g. "numpy>=1.26"', absolute=True)
            continue
        parsed = _checks._requirement(req)
        if isinstance(parsed, str):
            p.add(key, f"{_toml.shown(req)} is not a valid requirement ({parsed})", 'write e.g. "numpy>=1.26"',
                  absolute=True)
            continue
        name, text = parsed
        canon = re.sub(r"[-_.]+", "-", name).lower()
        if canon == own:
            continue  # "myproj[train]": the groups it names are already in
        if canon not in ("torch", "triton"):
            url_problem = _checks._requirement_url_problem(text)
            if url_problem:
                p.add(key, f"{_urls.redact(_toml.shown(req, 120))}: {url_problem}", _checks.URL_FIX, absolute=True)
            elif isinstance(packages, list):
                packages.append(req)
            continue
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            r = Requirement(req)
        except InvalidRequirement as err:  # (the fast check above agrees with packaging; this is its backstop)
            p.add(key, f"{_toml.shown(req)} is not a valid requirement ({str(err).splitlines()[0]})",
                  f'write e.g. "{canon}>=2.6"', absolute=True)
            continue
        if r.marker is not None or r.url or r.extras:
            p.add(key, f"{_toml.shown(req, 120)}: tritonlock picks {canon}'s build per target, so it takes a plain "
                  "version specifier here", f'write e.g. "{canon}>=2.6" (no extras, markers or URL)', absolute=True)
            continue
        spec = str(r.specifier)
        mine = env.get(canon)
        if canon == "triton" and isinstance(mine, str) and mine.strip() == "none":
            p.add(key, "triton is listed here but tool.tritonlock.environment.triton is \"none\"",
                  "remove one of them", absolute=True)
        elif not isinstance(mine, str) or mine.strip() in ("", "*", "auto"):
            env[canon] = spec or "*" if canon == "torch" else spec or "auto"
        elif spec and not _checks._LOCAL.fullmatch(mine):  # both hold
            env[canon] = f"{normalize_torch_spec(mine)},{spec}"
    env["packages"] = packages
    out["environment"] = env
    return out
