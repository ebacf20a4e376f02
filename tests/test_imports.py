"""Each module imports on its own, no import circles (lazy imports count), and `tritonlock --help` stays light."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import tritonlock

# Scripts run by another interpreter (a venv's), never imported: the verify runner and doctor's probe.
MODULES = sorted(m.name for m in pkgutil.walk_packages(tritonlock.__path__, "tritonlock.")
                 if not m.name.endswith(("__main__", "._runner", "._probe")))


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_alone(module: str) -> None:
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)


def import_graph(package: Path, *, typing: bool = False) -> dict[str, set[str]]:
    """module -> the package's modules it imports anywhere (top level or inside a function), except under
    `if TYPE_CHECKING:`, which never runs (`typing`: those too). `from pkg import mod` counts as an import of pkg.mod."""
    top = package.name
    files = {".".join(p.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__"): p
             for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges: set[str] = set()
        todo: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
        while todo:
            node = todo.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test) and not typing:
                    todo += child.orelse
                elif isinstance(child, ast.Import):
                    edges |= {a.name for a in child.names}
                elif isinstance(child, ast.ImportFrom):
                    mod = ".".join(base[:len(base) - child.level + 1] + [child.module or ""]).strip(".") \
                        if child.level else child.module or ""
                    edges |= {f"{mod}.{a.name}" if f"{mod}.{a.name}" in files else mod for a in child.names}
                else:
                    todo.append(child)
        graph[name] = {e for e in edges if e in files and e not in (name, top)}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One shortest circle through each module that is on one (breadth-first from each module back to itself)."""
    found: dict[frozenset[str], list[str]] = {}
    for start in sorted(graph):
        paths = {start: [start]}
        queue = [start]
        while queue:
            here = queue.pop(0)
            for nxt in sorted(graph[here]):
                if nxt == start:
                    found.setdefault(frozenset(paths[here]), paths[here] + [start])
                    queue = []
                    break
                if nxt not in paths:
                    paths[nxt] = paths[here] + [nxt]
                    queue.append(nxt)
    return sorted(found.values())


def test_no_import_circles() -> None:
    assert [" → ".join(c) for c in circles(import_graph(Path(tritonlock.__file__).parent))] == []


def test_no_import_circles_through_imports_for_types() -> None:
    """Two modules that import each other only under `if TYPE_CHECKING:` still need each other (the packages
    decision's words once took their types from the search that imports them): no circle of that kind either."""
    assert [" → ".join(c) for c in circles(import_graph(Path(tritonlock.__file__).parent, typing=True))] == []


# The stages, lowest first, each with the modules in it (a name covers its submodules; the longest name wins) and the
# stages below it that it may import. Ground is what every stage shares: data models, errors, file, TOML, URL and
# terminal helpers, the ELF reader, the native-code rule. compat is the curated facts of compat/ (the matrix), read
# by everyone who names a GPU or a build; intent and host are the decision's other two inputs. The lock carries out
# what the decision hands it (a LockPlan): it imports neither the decision nor the facts the decision read.
# project.py alone orchestrates: it hands the decision the lock stage's compile and wheel reader (the packages search
# in decide/packages.py calls them, never imports them); the CLI parses, calls one function and prints. The native
# concept is one folder, tritonlock/native/, whose modules sit at their stages: the binary readers and the rule are
# ground, the wheel reader (index, uv's cache) is the lock's, the rule on a closure is the decision's.
STAGES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ground": (("tritonlock", "tritonlock.models", "tritonlock.errors", "tritonlock._archs", "tritonlock._data",
                "tritonlock._urls", "tritonlock._toml", "tritonlock._files", "tritonlock._term",
                "tritonlock._subprocess", "tritonlock._machine", "tritonlock._stamp", "tritonlock._discover",
                "tritonlock._intenthash", "tritonlock._help", "tritonlock._recordlines", "tritonlock.native"), ()),
    "compat": (("tritonlock.compat",), ("ground",)),
    "intent": (("tritonlock.intent",), ("ground", "compat")),
    "host": (("tritonlock.host",), ("ground", "compat")),
    "lock": (("tritonlock.lock", "tritonlock.native.read", "tritonlock.native.remotezip", "tritonlock.native.uvcache",
              "tritonlock.native.shipped", "tritonlock.native.members", "tritonlock.native.unread",
              "tritonlock.native.torchsyms"),
             ("ground",)),
    "decide": (("tritonlock.decide", "tritonlock.native.judge"), ("ground", "compat", "intent", "lock")),
    "environment": (("tritonlock.environment", "tritonlock._fast"), ("ground", "compat", "intent", "host", "lock")),
    "verify": (("tritonlock.verify",), ("ground", "compat")),
    "around": (("tritonlock.doctor", "tritonlock.fleet", "tritonlock.export", "tritonlock.check", "tritonlock.records",
                "tritonlock._kept", "tritonlock._caveats"),
               ("ground", "compat", "intent", "host", "lock", "decide", "environment", "verify")),
    "maintain": (("tritonlock.maintain",), ("ground", "compat", "lock")),
    "project": (("tritonlock.project", "tritonlock.staleness", "tritonlock.upgrade", "tritonlock.verbs"),
                ("ground", "compat", "intent", "host", "lock", "decide", "environment", "verify", "around")),
    "cli": (("tritonlock.cli", "tritonlock._entry", "tritonlock.__main__"),
            ("ground", "compat", "intent", "host", "lock", "decide", "environment", "verify", "around", "maintain",
             "project")),
}


def stage_of(module: str) -> str | None:
    best = max(((len(p), stage) for stage, (prefixes, _) in STAGES.items() for p in prefixes
                if module == p or module.startswith(p + ".")), default=None)
    return best[1] if best else None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a module from a stage its importer may not look at ("lock.closure → decide.resolve")."""
    bad = []
    for module in sorted(graph):
        stage = stage_of(module)
        assert stage is not None, f"{module} is in no stage: add it to STAGES"
        allowed = {stage, *STAGES[stage][1]}
        bad += [f"{module} ({stage}) → {dep} ({stage_of(dep)})" for dep in sorted(graph[module])
                if stage_of(dep) not in allowed]
    return bad


def test_stages_only_look_down() -> None:
    """No import from a lower stage to a higher one — at the top of a module, inside a function, or for types only."""
    assert upward_imports(import_graph(Path(tritonlock.__file__).parent, typing=True)) == []


def test_each_stage_may_import_only_stages_below_it() -> None:
    order = list(STAGES)
    assert all(order.index(dep) < order.index(stage) for stage, (_, deps) in STAGES.items() for dep in deps)


def test_upward_import_detector_sees_imports_in_functions(tmp_path: Path) -> None:
    pkg = tmp_path / "tritonlock"
    (pkg / "lock").mkdir(parents=True)
    (pkg / "decide").mkdir()
    for f in ("__init__.py", "lock/__init__.py", "decide/__init__.py", "decide/resolve.py", "models.py"):
        (pkg / f).write_text("")
    (pkg / "lock" / "closure.py").write_text("from tritonlock.models import x\n\ndef f():\n"
                                             "    from tritonlock.decide.resolve import platform_of\n")
    (pkg / "lock" / "lockfile.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                              "    from tritonlock.decide import resolve\n")
    assert upward_imports(import_graph(pkg, typing=True)) == [
        "tritonlock.lock.closure (lock) → tritonlock.decide.resolve (decide)",
        "tritonlock.lock.lockfile (lock) → tritonlock.decide.resolve (decide)"]


def test_import_circle_detector_sees_lazy_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from .sub import c\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.d\n"
                                      "def g():\n    from .. import a\n")
    (pkg / "d.py").write_text("import pkg.sub.c\n")
    assert circles(import_graph(pkg)) == [["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]]


def test_help_does_not_import_heavy_modules() -> None:
    code = ("import sys; from click.testing import CliRunner; from tritonlock.cli import main; "
            "r = CliRunner().invoke(main, ['--help']); assert r.exit_code == 0, r.output; "
            "heavy = [m for m in ('torch', 'triton', 'requests', 'pynvml', 'uv', 'tomlkit', 'packaging.requirements',"
            " 'tritonlock.decide.resolve', 'tritonlock.compat.matrix', 'tritonlock.host', 'tritonlock.environment.sync', 'rich') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_every_command_has_help() -> None:
    from click.testing import CliRunner

    from tritonlock.cli import main

    for name in ("init", "host", "resolve", "show", "sync", "verify"):
        r = CliRunner().invoke(main, [name, "--help"])
        assert r.exit_code == 0 and "Usage:" in r.output, name


def test_no_private_names_imported_across_modules() -> None:
    """`from tritonlock.x import _name` couples two files through a private helper; private *modules* are fine."""
    package = Path(tritonlock.__file__).parent
    modules = {".".join(p.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__"): p
               for p in package.rglob("*.py")}
    bad = []
    for name, path in modules.items():
        base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            mod = ".".join(base[:len(base) - node.level + 1] + [node.module or ""]).strip(".") if node.level \
                else node.module or ""
            bad += [f"{name}: {a.name} from {mod}" for a in node.names if mod.startswith("tritonlock")
                    and a.name.startswith("_") and not a.name.startswith("__") and f"{mod}.{a.name}" not in modules]
    assert bad == []


def test_no_module_is_over_600_lines() -> None:
    """A module a reader takes in at one sitting (issue 25): past 600 lines it holds two jobs — split it by them."""
    root = Path(__file__).resolve().parents[1] / "tritonlock"
    long = {str(p.relative_to(root)): n for p in root.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600}
    assert long == {}, long
