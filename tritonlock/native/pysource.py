"""What a wheel installs to import, and what importing each part loads of the others: its import names (top-level
packages and modules, from top_level.txt and its file names) and, from its packages' Python (parsed with `ast`,
never run), the top-level names each one imports when it is imported. A wheel may ship a second top-level package
its users import only by name (nixl-cu12's nixl_ep_cu12 beside nixl_cu12): the rule judges what is reached."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping
from typing import cast
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
        def read(src: str, path: str, top: str = top) -> list[str]:
            found = _module_imports(src, top, path)
            out.update((top, name) for name, _ in found if name != top)
            return [local for name, local in found if name == top and local]

        _follow(top, text, [f"{top}/__init__.py", f"{top}.py"], read)
    return tuple(sorted(out))


def _follow(top: str, text: Callable[[str], str | None], start: list[str],
            read: Callable[[str, str], list[str]]) -> None:
    """Each module of `top`'s own folder that importing it runs, from `start`: `read(src, path)` is told each one's
    text and answers the modules of the folder it imports (followed: `top/x.py`, `top/x/__init__.py`)."""
    todo, seen = list(start), set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        src = text(path)
        if src is not None:
            todo += [f"{top}/{local}{tail}" for local in read(src, path) for tail in (".py", "/__init__.py")]


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


def folder_imports(root: Path, sizes: Mapping[str, int | None]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...],
                                                                   tuple[str, ...]]:
    """(tops, imports, guarded) of an unpacked or installed distribution: wheel_imports and guarded_loads of its
    files (RECORD's paths under `root`, with their sizes where RECORD gives them), read in place."""
    wanted = set(sources_wanted({n: s if s is not None else 0 for n, s in sizes.items()}))

    def text(path: str) -> str | None:
        if path not in wanted:
            return None
        try:
            with open(root / path, "rb") as fh:
                return fh.read(_ONE_MAX).decode("utf-8", "replace")
        except OSError:
            return None

    tops, imports = wheel_imports(sizes, text)
    return tops, imports, guarded_loads(tops, text, sizes)


def is_metadata(name: str) -> bool:
    return re.fullmatch(r"[^/]+\.dist-info/METADATA", name) is not None


def texts_wanted(members: Mapping[str, tuple[int, int, int, int]]) -> set[str]:
    """The zip members (name -> (method, compressed size, size, offset)) read as text: METADATA, and for a wheel
    with shared objects the sources_wanted (stored or deflated)."""
    meta = {n for n in members if is_metadata(n)}
    if not any(re.search(r"\.so(\.[0-9]+)*\Z", n) for n in members):
        return meta
    return meta | set(sources_wanted({n: v[2] for n, v in members.items() if v[0] in (0, 8)}))


# --- loads inside a `try` that catches their failure ------------------------------------------------------------------

# What a failed load raises: an extension module imported by name, ImportError (an undefined symbol, a library it
# needs missing); a library loaded by path (torch.ops.load_library, ctypes.CDLL), OSError. A handler of either, of
# Exception or BaseException, or a bare `except:` catches it.
_CATCH = {"import": {"ImportError", "Exception", "BaseException"},
          "dynamic": {"OSError", "EnvironmentError", "IOError", "Exception", "BaseException"}}
# calls that load a shared object by its path: torch.ops.load_library, ctypes.CDLL / cdll.LoadLibrary / PyDLL
_LOADERS = {"load_library", "CDLL", "PyDLL", "LoadLibrary"}
_TRIES: tuple[type, ...] = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))


def _catches(handlers: list[ast.ExceptHandler], kind: str) -> bool:
    def name(node: ast.expr) -> str | None:
        return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None

    for h in handlers:
        if h.type is None:
            return True
        kinds = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
        if any(name(k) in _CATCH[kind] for k in kinds):
            return True
    return False


def _loads(src: str, top: str, path: str) -> list[tuple[str, str, tuple[str, ...], frozenset[str]]]:
    """(kind, the module of `top`'s own folder it names or "", the file-name patterns the load names, the failures
    caught around it) of each load the module makes when it runs: "import" of a module of its folder by name, and
    "dynamic" (torch.ops.load_library, ctypes.CDLL: a shared object by path; the patterns are the string constants
    of the call, else of the `try` around it, that look like file names: "_C*.so"). A load in a function body runs
    when the function is called, where no `try` of the module is around it: none caught there but its own."""
    try:
        tree = ast.parse(src, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    out: list[tuple[str, str, tuple[str, ...], frozenset[str]]] = []
    todo: list[tuple[ast.AST, frozenset[str], tuple[str, ...]]] = [(n, frozenset(), ()) for n in tree.body]
    while todo:
        node, caught, names = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            caught, names = frozenset(), ()
        if isinstance(node, _TRIES):
            node = cast(ast.Try, node)  # (TryStar, `except*`, has the same fields)
            inner = caught | {k for k in _CATCH if _catches(node.handlers, k)}
            strings = tuple(c.value for n in node.body for c in ast.walk(n)
                            if isinstance(c, ast.Constant) and isinstance(c.value, str) and _file_like(c.value))
            todo += [(n, inner, names + strings) for n in node.body]
            todo += [(n, caught, names) for n in [*node.handlers, *node.orelse, *node.finalbody]]
            continue
        if isinstance(node, ast.ImportFrom) and node.level <= 1 and (node.level == 1 and "/" in path
                                                                     or node.module and node.module.split(".")[0] == top):
            parts = (node.module or "").split(".") if node.level == 0 else [top, *(node.module or "").split(".")]
            parts = [p for p in parts if p]
            local = [parts[1]] if len(parts) > 1 else [a.name for a in node.names if a.name != "*"]
            out += [("import", x, (), caught) for x in local]
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == top and len(parts) > 1:
                    out.append(("import", parts[1], (), caught))
        elif isinstance(node, ast.Call):
            f = node.func
            called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if called in _LOADERS:
                own = tuple(c.value for a in node.args for c in ast.walk(a)
                            if isinstance(c, ast.Constant) and isinstance(c.value, str) and _file_like(c.value))
                out.append(("dynamic", "", own or names, caught))
            elif (name := _named_import(node)) is not None and name.split(".")[0] == top and "." in name:
                out.append(("import", name.split(".")[1], (), caught))
        todo += [(n, caught, names) for n in ast.iter_child_nodes(node)]
    return out


def _file_like(s: str) -> bool:
    """A string that names shared objects by file name or pattern: "_C*.so", "libfoo.so", "*.pyd"."""
    return len(s) < 200 and bool(re.search(r"\.(?:so|pyd|dll)\b|\*", s)) and "/" not in s.strip("/*")


def guarded_loads(tops: Iterable[str], text: Callable[[str], str | None], paths: Iterable[str]) -> tuple[str, ...]:
    """The extension modules and libraries of each import name's own folder (`top/x.so`) that the package loads only
    inside a `try` that catches their failure (torchao's `_C*.so`, loaded with torch.ops.load_library in a `try`
    around which `import torchao` goes on without them): read from the Python of the folder that runs at package
    import (its __init__.py and the modules of the folder it imports), never run. A module loaded both ways, or not
    at all by what is read, is none of them: everything else is judged as loaded (inferred from its Python)."""
    import fnmatch

    paths = list(paths)
    out: list[str] = []
    for top in tops:
        mine = [p for p in paths if p.startswith(f"{top}/") and p.count("/") == 1 and re.search(r"\.(?:so|pyd)(?:\.|\Z)",
                                                                                                  p)]
        if not mine:
            continue
        loads: list[tuple[str, str, tuple[str, ...], frozenset[str]]] = []

        def read(src: str, path: str, top: str = top) -> list[str]:
            found = _loads(src, top, path)
            loads.extend(found)
            return [local for kind, local, _, _ in found if kind == "import"]

        _follow(top, text, [f"{top}/__init__.py"], read)  # (the modules imported at package import)
        for p in mine:
            base = p.split("/", 1)[1]
            module = base.split(".", 1)[0]
            reaching = [(kind, caught) for kind, local, pats, caught in loads
                        if (kind == "import" and local == module)
                        or (kind == "dynamic" and (not pats or any(fnmatch.fnmatchcase(base, x) for x in pats)))]
            if reaching and all(kind in caught for kind, caught in reaching):
                out.append(p)
    return tuple(sorted(out))
