"""tritonlock inside a user's pyproject.toml: `init --pyproject` adds the [tool.tritonlock] table, and
`export --format uv` writes uv's index and source tables — each edit leaves every other byte of the file as it was."""

from __future__ import annotations

from pathlib import Path

from tritonlock import _toml
from tritonlock._files import read_text
from tritonlock.errors import IntentError, UsageError


def _read(path: Path) -> tuple[str, dict[str, object]]:
    try:
        text = read_text(path, encoding="utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file — `init --pyproject` adds tritonlock's table to an existing "
                         "pyproject.toml (run plain `tritonlock init` for a triton-env.toml)") from None
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{path}: cannot read ({err})") from None
    try:
        data = _toml.loads(text)
    except _toml.TOMLDecodeError as err:
        line, msg = _toml.decode_error_line(err, text)
        raise IntentError(f"{path}:{line or 1}: TOML syntax error: {msg} — fix the syntax first") from None
    return text, data


def pyproject_starter(starter: str, *, torch_in_dependencies: bool) -> str:
    """triton-env.toml's commented starter as [tool.tritonlock] tables: the same keys, each table under tool.tritonlock,
    and the packages taken from [project].dependencies (plus the groups `extras` names)."""
    out = ["", "# [tool.tritonlock] — `tritonlock resolve` locks [project].dependencies (and the extras below) with the",
           "# torch, CUDA build and Triton that fit each target into triton-env.lock.", "[tool.tritonlock]",
           '# extras = ["train"]          # groups of [project.optional-dependencies] to lock too']
    table = ""
    for line in starter.splitlines():
        if line.startswith("# triton-env.toml"):
            continue
        if line.startswith("["):
            table = line.strip()
        if line.startswith("packages = []"):
            line = "# packages = []               # more requirements for tritonlock only; the project's are in [project]"
        if torch_in_dependencies and line.startswith("torch = ") and table == "[environment]":
            # only [environment].torch, the specifier: [indexes].torch = "default" is where torch comes from
            line = "# " + line + " (torch's specifier comes from [project].dependencies)"
        for old, new in (("[environment]", "[tool.tritonlock.environment]"), ("[indexes]", "[tool.tritonlock.indexes]"),
                         ("[[targets]]", "[[tool.tritonlock.targets]]")):
            line = line.replace(old, new)
        line = line.replace("triton-env.toml", "pyproject.toml")
        out.append(line)
    return "\n".join(out) + "\n"


def add_tritonlock_table(path: Path, table_text: str) -> None:
    """Append the [tool.tritonlock] tables to an existing pyproject.toml. Appending keeps every byte before them as it
    was (comments, order, quoting); the result is read back as TOML before it replaces the file."""
    text, data = _read(path)
    tool = data.get("tool")
    if isinstance(tool, dict) and "tritonlock" in tool:
        raise UsageError(f"{path} already has a [tool.tritonlock] table — edit it there")
    raw = path.read_bytes()
    sep = b"" if not raw or raw.endswith(b"\n") else b"\n"
    new = raw + sep + table_text.encode("utf-8")
    try:
        _toml.loads(new.decode("utf-8-sig"))
    except _toml.TOMLDecodeError as err:  # e.g. a [tool] table that already defines tritonlock with dotted keys
        raise UsageError(f"{path}: cannot add [tool.tritonlock] at its end ({err}) — add the table by hand") from None
    from tritonlock._files import write_file

    write_file(path, new, what="init --pyproject", force=False, replace="edit")  # no newline translation: every byte comes back as it was


def dependencies_name_torch(path: Path) -> bool:
    """Whether [project].dependencies lists torch (then the starter leaves torch's specifier to it)."""
    import re

    _, data = _read(path)
    project = data.get("project")
    deps = project.get("dependencies") if isinstance(project, dict) else None
    if not isinstance(deps, list):  # (not a list: resolve names the problem; the starter cannot lean on it)
        return False
    return any(isinstance(d, str) and re.match(r"\s*torch\s*(?:[<>=!~;\[@]|$)", d, re.I) for d in deps)
