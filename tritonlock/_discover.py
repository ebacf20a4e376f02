"""Find the project a command works on: the nearest directory, from here up, that holds triton-env.toml,
triton-env.lock, or a pyproject.toml with a [tool.tritonlock] table — as uv finds pyproject.toml and git finds .git.
Standard library only: every command runs it."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # (pathlib, re and typing are imported where they are needed: the no-op sync reads this module)
if TYPE_CHECKING:
    from pathlib import Path

PROJECT_FILES = ("triton-env.toml", "triton-env.lock")
PYPROJECT = "pyproject.toml"
# a [tool.tritonlock] table, one of its sub-tables, or [[tool.tritonlock.targets]] — not a comment, not a string
_TABLE_RE = (rb"""^[ \t]*\[\[?[ \t]*(?:"tool"|'tool'|tool)[ \t]*\.[ \t]*(?:"tritonlock"|'tritonlock'|tritonlock)"""
             rb"""[ \t]*[.\]]""")


def has_tritonlock_table(path: str | Path) -> bool:
    """Whether a pyproject.toml carries tritonlock's intent ([tool.tritonlock…]); a cheap look at the bytes, before any
    TOML is parsed (the intent reader says what is wrong with the rest)."""
    try:
        if not os.path.isfile(path):
            return False
        with open(path, "rb") as fh:
            data = fh.read(4 * 1024 * 1024)
    except OSError:
        return False
    if b"tritonlock" not in data:
        return False
    import re

    return re.search(_TABLE_RE, data, re.M) is not None


def _holds_project(here: str) -> bool:
    return (any(os.path.isfile(os.path.join(here, name)) for name in PROJECT_FILES)
            or has_tritonlock_table(os.path.join(here, PYPROJECT)))


def find_project(start: str = ".") -> str:
    """The project directory for a command run in `start`, as a path relative to it ("." here, ".." one level
    up, …), so that messages stay short; `start` itself when no directory up to the root holds a project file."""
    here = os.path.abspath(start)
    up = 0
    while True:
        if _holds_project(here):
            return os.path.normpath(os.path.join(start, *([os.pardir] * up))) if up else start
        parent = os.path.dirname(here)
        if parent == here:
            return start
        here, up = parent, up + 1


def intent_file(project: str | Path) -> Path:
    """The project's intent: triton-env.toml, or pyproject.toml when that holds a [tool.tritonlock] table (and no
    triton-env.toml is beside it); triton-env.toml when there is neither, so that "no such file" names the usual one.
    Both at once is bad input: one project, one statement of intent."""
    from pathlib import Path

    root = Path(project)
    env, py = root / PROJECT_FILES[0], root / PYPROJECT
    has_py = has_tritonlock_table(py)
    if env.is_file() and has_py:
        from tritonlock.errors import IntentError

        raise IntentError(f"{env} and {py} ([tool.tritonlock]) both state this project's intent — keep one: move "
                          f"what {env.name} says into [tool.tritonlock] and delete it, or remove [tool.tritonlock] "
                          f"from {py.name}")
    return py if has_py else env


# How a message's fix names tritonlock's tables, and where a pyproject.toml project keeps them instead (a top-level
# [indexes] in pyproject.toml is not read: the fix must name the table that is).
_PYPROJECT_WORDS = (("[environment].packages", "[project].dependencies"),
                    ("[environment]", "[tool.tritonlock.environment]"), ("[indexes]", "[tool.tritonlock.indexes]"),
                    ("[[targets]]", "[[tool.tritonlock.targets]]"), ("triton-env.toml", "pyproject.toml"))


def is_pyproject_project(project: str | Path) -> bool:
    """Whether the project's intent is a pyproject.toml's [tool.tritonlock] (and no triton-env.toml beside it)."""
    from pathlib import Path

    root = Path(project)
    return not (root / PROJECT_FILES[0]).is_file() and has_tritonlock_table(root / PYPROJECT)


def intent_words(text: str, project: str | Path | None) -> str:
    """A message in the words of the project's own intent file: for a pyproject.toml project, the tables under
    [tool.tritonlock] ([tool.tritonlock.indexes], …) and [project].dependencies for the packages."""
    if project is None or not is_pyproject_project(project):
        return text
    for old, new in _PYPROJECT_WORDS:
        text = text.replace(old, new)
    return text


def _canon(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject_groups(project: dict[str, object], extras: list[str]) -> list[str]:
    """The optional-dependency groups a pyproject intent locks: those [tool.tritonlock] extras names, and the groups
    pulled in through the project's own name ("myproj[cuda]" in [project].dependencies, or inside a group), in a
    stable order."""
    groups = project.get("optional-dependencies")
    groups = groups if isinstance(groups, dict) else {}
    by_canon = {_canon(k): k for k in groups if isinstance(k, str)}
    name = project.get("name")
    own = _canon(name) if isinstance(name, str) else None

    def named_by(reqs: object) -> list[str]:
        """The groups a list of requirements asks for by the project's own name."""
        found: list[str] = []
        for req in reqs if isinstance(reqs, list) else []:
            m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*\[([^\]]*)\]", req) if isinstance(req, str) else None
            if m and own is not None and _canon(m[1]) == own:
                found += [_canon(x.strip()) for x in m[2].split(",") if x.strip()]
        return found

    import re
    from collections import deque

    out: dict[str, None] = {}  # (in the order found; a set's lookups: 5,000 chained groups are linear, not quadratic)
    queue = deque([_canon(e) for e in extras if isinstance(e, str)] + named_by(project.get("dependencies")))
    while queue:
        g = queue.popleft()
        if g in out or g not in by_canon:
            continue
        out[g] = None
        queue += named_by(groups[by_canon[g]])
    return list(out)


def intent_bytes(path: str | Path) -> bytes:
    """What of an intent file the lock depends on, as bytes for the no-change digests: all of triton-env.toml; of a
    pyproject.toml only [tool.tritonlock], [project].dependencies and the optional-dependency groups it selects —
    a new description or version of the project does not make its lock stale, a new dependency does."""
    from tritonlock._files import read_bytes

    raw = read_bytes(path)
    if os.path.basename(os.fspath(path)) != PYPROJECT:
        return raw
    import json

    from tritonlock import _toml

    try:
        data = _toml.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, _toml.TOMLDecodeError):
        return raw  # the full path reads it and says what is wrong
    tool = data.get("tool")
    table = tool.get("tritonlock") if isinstance(tool, dict) else None
    table = table if isinstance(table, dict) else {}
    project = data.get("project")
    project = project if isinstance(project, dict) else {}
    extras = table.get("extras")
    groups = pyproject_groups(project, extras if isinstance(extras, list) else [])
    opt = project.get("optional-dependencies")
    opt = opt if isinstance(opt, dict) else {}
    by_canon = {_canon(k): v for k, v in opt.items() if isinstance(k, str)}  # (each name once: not groups × names)
    chosen = {g: by_canon[g] for g in groups if g in by_canon}
    doc = {"tool.tritonlock": table, "dependencies": project.get("dependencies"), "optional-dependencies": chosen,
           "dynamic": project.get("dynamic")}
    return ("pyproject:" + json.dumps(doc, sort_keys=True, default=str)).encode()


def target_file_globs(intent_path: Path, data: bytes) -> object:
    """The target-files value of an intent, from what `intent_bytes` returned (TOML, or a pyproject's digest)."""
    import json

    from tritonlock import _toml

    if data.startswith(b"pyproject:"):
        table = json.loads(data[len(b"pyproject:"):].decode()).get("tool.tritonlock", {})
        return table.get("target-files") if isinstance(table, dict) else None
    return _toml.loads(data.decode("utf-8")).get("target-files")
