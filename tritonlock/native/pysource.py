"""What a wheel installs to import, and what importing each part loads of the others: its import names (top-level
packages and modules, from top_level.txt and its file names) and, from its packages' Python (parsed with `ast`,
never run), the top-level names each one imports when it is imported. A wheel may ship a second top-level package
its users import only by name (nixl-cu12's nixl_ep_cu12 beside nixl_cu12): the rule judges what is reached."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

# A file is read for its imports only this large, and this many bytes of Python in all per wheel
_ONE_MAX = 512 << 10
_ALL_MAX = 4 << 20
# Python extension modules: "x.abi3.so", "x.cpython-312-x86_64-linux-gnu.so", "x.so" (PEP 3149 tags), ".pyd"
_EXT = re.compile(r"^(?P<base>[A-Za-z_][A-Za-z0-9_]*)(?:\.[^/.]+)*\.(?:so|pyd)\Z")
_TAGGED = re.compile(r"\.(?:abi3|cpython-[^/]+|cp[0-9]+-[^/]+|pypy[^/]*)\.(?:so|pyd)\Z")


def _skipped(first: str) -> bool:
    """A top-level folder that is no import name: the wheel's metadata, its .data, auditwheel's bundled libraries."""
    return first.endswith((".dist-info", ".data", ".libs")) or first.startswith(".")


def tops_of(names: Iterable[str], top_level: str | None = None) -> tuple[str, ...]:
    """The import names a wheel installs: a folder holding Python source or a tagged extension module (at any depth:
    a namespace package too), a module at its root (`name.py`, `name.abi3.so`), and the names its top_level.txt
    lists. A folder of plain libraries (sgl-kernel's lib/mscclpp.so) is none."""
    out: set[str] = set()
    for n in names:
        first, sep, rest = n.partition("/")
        if _skipped(first):
            continue
        if not sep:
            m = _EXT.match(first)
            base = first[:-3] if first.endswith(".py") else m["base"] if m else None
            if base and base.isidentifier() and base != "__init__":
                out.add(base)
        elif first.isidentifier() and (rest.endswith(".py") or _TAGGED.search(rest)):
            out.add(first)
    for line in (top_level or "").splitlines():
        t = line.strip().replace("\\", "/").split("/", 1)[0]
        if t.isidentifier():
            out.add(t)
    return tuple(sorted(out))


def sources_wanted(sizes: Mapping[str, int]) -> list[str]:
    """The wheel's members whose text says what it imports (name -> uncompressed size): its top_level.txt, and the
    Python files of each top-level package's own folder (`pkg/__init__.py`, `pkg/_api.py`) and its root modules —
    each under 512 KiB, 4 MiB in all, each package's __init__.py first."""
    picked: list[str] = []
    total = 0
    def key(n: str) -> tuple[int, int, str]:
        return (0 if n.endswith("top_level.txt") else 1 if n.endswith("/__init__.py") else 2, n.count("/"), n)

    for n in sorted(sizes, key=key):
        size = sizes[n]
        first, _, rest = n.partition("/")
        if re.fullmatch(r"[^/]+\.dist-info/top_level\.txt", n):
            pass
        elif not n.endswith(".py") or _skipped(first) or "/" in rest:
            continue
        elif "/" not in n and not n[:-3].isidentifier():
            continue
        if size > _ONE_MAX or total + size > _ALL_MAX:
            continue
        total += size
        picked.append(n)
    return picked


def imports_of(tops: Iterable[str], text: Callable[[str], str | None]) -> tuple[tuple[str, str], ...]:
    """(top, name): the top-level names each of the wheel's import names imports — its __init__.py (or root module)
    and the modules of its own folder that those import, followed within the folder; at import or in a function
    (cffi imports _cffi_backend when an FFI is made): what the package uses either way. `text(path)`: the file's
    text, or None where it was not read."""
    out: set[tuple[str, str]] = set()
    for top in tops:
        todo = [f"{top}/__init__.py", f"{top}.py"]
        seen: set[str] = set()
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            src = text(path)
            if src is None:
                continue
            for name, local in _module_imports(src, top, path):
                if name != top:
                    out.add((top, name))
                elif local:
                    todo += [f"{top}/{local}.py", f"{top}/{local}/__init__.py"]
    return tuple(sorted(out))


def _module_imports(src: str, top: str, path: str) -> list[tuple[str, str | None]]:
    """(top-level name, the module of `top`'s own folder it names or None) of each import the module makes:
    `import a.b`, `from a import b`, `from . import x` (`top`'s own), importlib.import_module("a.b")."""
    try:
        tree = ast.parse(src, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    out: list[tuple[str, str | None]] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:  # (a function body's imports too: what the package uses, if only when called)
        node = todo.pop()
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                out.append((parts[0], parts[1] if len(parts) > 1 and parts[0] == top else None))
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                parts = node.module.split(".")
                if parts[0] == top and len(parts) > 1:
                    out.append((top, parts[1]))
                elif parts[0] == top:
                    out += [(top, a.name) for a in node.names if a.name != "*"]
                else:
                    out.append((parts[0], None))
            elif node.level == 1 and "/" in path:  # relative to the top-level package's own folder
                if node.module:
                    out.append((top, node.module.split(".")[0]))
                else:
                    out += [(top, a.name) for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Call) and _named_import(node) is not None:
            name = _named_import(node)
            assert name is not None
            parts = name.split(".")
            out.append((parts[0], parts[1] if parts[0] == top and len(parts) > 1 else None))
        todo += list(ast.iter_child_nodes(node))
    return [(n, local) for n, local in out if n.isidentifier()]


def _named_import(call: ast.Call) -> str | None:
    """The module an importlib.import_module("x.y") or __import__("x") call names, where it is a constant."""
    f = call.func
    named = (isinstance(f, ast.Attribute) and f.attr == "import_module") or (
        isinstance(f, ast.Name) and f.id in ("import_module", "__import__"))
    if not named or not call.args or not isinstance(call.args[0], ast.Constant):
        return None
    value = call.args[0].value
    return value if isinstance(value, str) and value and not value.startswith(".") else None


def wheel_imports(names: Iterable[str], text: Callable[[str], str | None]) -> tuple[tuple[str, ...],
                                                                                     tuple[tuple[str, str], ...]]:
    """(tops, imports) of a wheel from its member names and the texts of sources_wanted's members."""
    names = list(names)
    top_level = next((t for n in names if re.fullmatch(r"[^/]+\.dist-info/top_level\.txt", n)
                      and (t := text(n)) is not None), None)
    tops = tops_of(names, top_level)
    return tops, imports_of(tops, text)


def folder_imports(root: Path, sizes: Mapping[str, int | None]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """wheel_imports of an unpacked or installed distribution: its files (RECORD's paths under `root`, with their
    sizes where RECORD gives them) read in place."""
    wanted = set(sources_wanted({n: s if s is not None else 0 for n, s in sizes.items()}))

    def text(path: str) -> str | None:
        if path not in wanted:
            return None
        try:
            with open(root / path, "rb") as fh:
                return fh.read(_ONE_MAX).decode("utf-8", "replace")
        except OSError:
            return None

    return wheel_imports(sizes, text)


def is_metadata(name: str) -> bool:
    return re.fullmatch(r"[^/]+\.dist-info/METADATA", name) is not None


def texts_wanted(members: Mapping[str, tuple[int, int, int, int]]) -> set[str]:
    """The zip members (name -> (method, compressed size, size, offset)) read as text: METADATA, and for a wheel
    with shared objects the sources_wanted (stored or deflated)."""
    meta = {n for n in members if is_metadata(n)}
    if not any(re.search(r"\.so(\.[0-9]+)*\Z", n) for n in members):
        return meta
    return meta | set(sources_wanted({n: v[2] for n, v in members.items() if v[0] in (0, 8)}))
