"""One rule for every writer (docs/export.md, "Files tritonlock writes: one rule for every writer"): only a regular file, or nothing, is ever replaced —
a device node, a FIFO, a socket, a directory or a symbolic link is refused with or without --force, and the refusal
never recommends --force; a file tritonlock did not write is replaced only with --force; `-o -` is standard output
(or refused); no missing directory is made unless documented; no link planted under a temp name is followed.

The writers are enumerated twice so that a new one cannot skip the rule: every write primitive in the package must
be in `_files.py` or in ALLOWED below (with its reason), and every command-line option that names a path must be
listed here as an input or as one of the WRITERS this file runs against hostile paths."""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock import _files
from tritonlock.cli import main

PKG = Path(__file__).resolve().parent.parent / "tritonlock"
INTENT = '[environment]\npython = "3.11"\ntorch = "==2.6.0"\n[[targets]]\nname = "laptop"\n'
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.output


# ---------------------------------------------------------------- every write primitive in the package

# (file, function) → why this write does not go through tritonlock/_files.py
ALLOWED = {
    ("cli/cmd_lock.py", "init"): "mkdir: `init -p DIR` makes DIR when missing (README)",
    ("cli/_base.py", "quiet_stdout"): "opens the null device to put stdout on it after a closed pipe: writes no file",
    ("compat/_matrix_cache.py", "write"): "mkdir/chmod of tritonlock's own cache directory (0700)",
    ("environment/_apply.py", "venv_lock"): "tritonlock's own cache directory; the lock file via open_lock_file",
    ("environment/_apply.py", "_uv_install"): "a private directory of its own (mkdtemp, 0700)",
    ("environment/_apply.py", "swap"): "renames the venv directories tritonlock built beside the venv",
    ("environment/_apply.py", "recover"): "renames an old venv tritonlock moved aside back into place",
    ("export/wheelhouse.py", "build"): "mkdir: the wheelhouse directory itself, documented, after _plan checked it",
    ("lock/closure.py", "_compile"): "a private directory of its own (mkdtemp, 0700) for uv's input",
    ("lock/_fromcache.py", "read_online"): "a folder inside closure._compile's private directory for uv's input",
    ("lock/closure.py", "_preferences"): "uv's preferences (the pins a lock keeps), in _compile's private directory",
    ("lock/_fromcache.py", "from_cache"): "uv's output file in closure._compile's private directory, put back to the "
                                          "first answer's preferences before uv answers again",
    ("native/read.py", "cache_folder"): "mkdir (0700) of tritonlock's own cache of binary facts, keyed by sha256",
    ("native/torchsyms.py", "_keep"): "mkdir (0700) of torch-exports/ in tritonlock's own cache of binary facts; "
                                      "the file (a torch build's exports, keyed by sha256) by write_atomic",
    ("native/read.py", "_read_downloaded"): "an anonymous temporary file (no name in any directory) for a wheel read "
                                            "whole where the index answers no Range request",
    ("native/members.py", "__init__"): "an anonymous temporary file (no name in any directory) for a member larger "
                                       "than the reader keeps in memory",
    ("maintain/native.py", "write"): "mkdir: compat/native in the maintainers' compat folder (`compat native`); the "
                                     "files by write_atomic",
    ("maintain/metadata.py", "write"): "mkdir: compat/metadata in the maintainers' compat folder (`compat "
                                       "metadata`); the files by write_atomic",
    ("records.py", "_locked"): "the lock file's descriptor from open_lock_file",
    ("_subprocess.py", "_keep_python"): "mkdir (0700) of tritonlock's own cache of the interpreter uv found; the file "
                                        "by write_atomic",
    ("_subprocess.py", "run_shielded"): "an anonymous temporary file (no name in any directory) for uv's output",
    ("decide/_pkgcompile.py", "keep_build_failure"): "mkdir (0700) of tritonlock's own cache of uv's failed builds; "
                                                      "the file by write_atomic",
    ("_kept.py", "remember_check"): "mkdir (0700) of tritonlock's own cache of passing checks; the file by write_atomic",
    ("verify/__init__.py", "start_verify"): "a private directory (mkdtemp, 0700) for the runner's trace, which is then "
                                          "put in place by _files.write_file",
}
RUNNER = "verify/runner/"  # runs in the target venv (standard library only): writes only in directories it makes

_WRITE_CALLS = {"write_text", "write_bytes", "mkdir", "makedirs", "touch", "rename", "renames", "symlink_to",
                "hardlink_to", "mkstemp", "mkdtemp", "NamedTemporaryFile", "TemporaryDirectory", "TemporaryFile",
                "mkfifo", "mknod", "symlink", "link", "copy", "copy2", "copyfile", "copytree", "move", "chmod",
                "truncate"}


def _writes(tree: ast.AST) -> Iterator[tuple[int, str, str]]:
    parents: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                parents.setdefault(id(sub), node.name)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        base = ast.unparse(fn.value) if isinstance(fn, ast.Attribute) else ""
        text = ast.unparse(node)
        hit = name in _WRITE_CALLS and not (name in ("copy", "move") and base not in ("shutil",))
        hit = hit or (name == "replace" and base == "os")
        if name in ("open", "fdopen"):
            modes = [a.value for a in node.args[1:] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            modes += [k.value.value for k in node.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)]
            hit = hit or any(c in str(m) for m in modes for c in "wax+")
            hit = hit or (base == "os" and name == "open" and any(f in text for f in ("O_WRONLY", "O_RDWR", "O_CREAT")))
        if hit:
            yield node.lineno, parents.get(id(node), "<module>"), text[:100]


def test_every_write_in_the_package_goes_through_the_one_helper() -> None:
    """A new writer that opens, renames or creates a file itself (and so could replace /dev/null, write through a
    planted link, or leave half a file) fails here until it uses tritonlock._files — or is added to ALLOWED with
    the reason it is safe."""
    found: set[tuple[str, str]] = set()
    stray = []
    for f in sorted(PKG.rglob("*.py")):
        rel = f.relative_to(PKG).as_posix()
        if rel == "_files.py" or rel.startswith(RUNNER):
            continue
        for line, func, text in _writes(ast.parse(f.read_text(encoding="utf-8"))):
            found.add((rel, func))
            if (rel, func) not in ALLOWED:
                stray.append(f"{rel}:{line} in {func}(): {text}")
    assert not stray, "writes outside tritonlock/_files.py:\n" + "\n".join(stray)
    assert set(ALLOWED) <= found, f"ALLOWED lists writes that are gone: {set(ALLOWED) - found}"


# ---------------------------------------------------------------- every option that names a path

# Options that name something tritonlock reads (or a path on another machine, written into a job script).
INPUTS = {("compat check", "--compat"), ("resolve", "--target-file"), ("why", "--target-file"), ("sync", "--find-links"), ("sync", "--python"),
          ("doctor", "--venv"), ("doctor", "--python"), ("verify", "--venv"), ("verify", "--python"),
          ("export", "--reports"), ("report merge", "DIRECTORY"), ("report bands", "FILES"), ("compat check", "--index"),
          ("sync", "--venv"),  # a venv: built beside and swapped in, never over what is not a venv (test_sync*)
          ("add", "--venv"), ("remove", "--venv"), ("run", "--venv"),  # the same sync (test_cli_add, test_cli_run)
          ("add", "--target-file"), ("remove", "--target-file"),
          ("init", "--project"), ("report merge", "--project"),
          # a maintainers' command: reads locks, writes compat/native/*.toml in the compat folder by write_atomic
          # (test_native_shipped)
          ("compat native", "--lock"), ("compat native", "--compat"),
          # the same for compat/metadata/*.toml (test_shipped_metadata)
          ("compat metadata", "--lock"), ("compat metadata", "--compat")}
# Options (and commands) that write a file: each has a row in WRITERS below.
OUTPUTS = {("init", "--project"), ("host", "--save"), ("export", "--output"), ("report merge", "--out"),
           ("report merge", "--html"), ("compat check", "--output"), ("fleet hosts", "--out"), ("verify", "--profile")}


def _path_options() -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()

    def walk(cmd: click.Command, prefix: str) -> None:
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, f"{prefix} {name}".strip())
            return
        for p in cmd.params:
            metavar = (p.metavar or "") if isinstance(p, click.Option) else ""
            if isinstance(p.type, click.Path) or metavar in ("FILE", "DIR", "PATH"):
                names = [o for o in p.opts if o.startswith("--")] or [p.name.upper() if p.name else "?"]
                out.add((prefix, names[0]))

    walk(main, "")
    return out


def test_every_option_that_names_a_path_is_known_as_an_input_or_a_tested_writer() -> None:
    """A new option that writes somewhere must join OUTPUTS (and WRITERS), or be declared an input."""
    unknown = _path_options() - INPUTS - OUTPUTS - {(c, "--project") for c, _ in _path_options()}
    assert not unknown, f"options naming a path that this test does not know: {sorted(unknown)}"
    assert {(w.command, w.option) for w in WRITERS} >= OUTPUTS - {("fleet hosts", "--out")}  # (needs Slurm: below)


# ---------------------------------------------------------------- the writers, run against hostile paths


@dataclass(frozen=True)
class Writer:
    id: str
    command: str  # as in OUTPUTS
    option: str
    place: Callable[[Path, Path], Path]  # (project, scratch dir) → the path the writer will write
    argv: Callable[[Path, Path], list[str]]  # (project, that path) → the command line
    force: bool = True  # has --force
    replace: str = "ours"  # "ours" | "never" (init) | "edit" (edits in place: any regular file)
    lock: bool = True  # needs the project's lock
    network: bool = False  # only its refusals run here (compat check asks an index after its checks; verify runs
    # torch, which test_verify* do)
    fixed: bool = False  # writes a file of a fixed name in the project (no path option chooses it)


def _first_wheel(text: str) -> str:
    import re

    return re.findall(r'name = "([^"]+\.whl)"', text)[0]


EXPORT = ["export", "--target", "laptop"]
WRITERS = [
    Writer("init", "init", "--project", lambda p, d: p / "triton-env.toml",
           lambda p, t: ["init", "-p", str(p), "--no-index-check"], replace="never", lock=False, fixed=True),
    Writer("init --pyproject", "init", "--project", lambda p, d: p / "pyproject.toml",
           lambda p, t: ["init", "-p", str(p), "--no-index-check", "--pyproject"], force=False, replace="edit",
           lock=False, fixed=True),
    Writer("host --save", "host", "--save", lambda p, d: d / "host.toml",
           lambda p, t: ["host", "--save", str(t), "--name", "box", "--driver", "none"]),
    Writer("resolve", "resolve", "lock", lambda p, d: p / "triton-env.lock", lambda p, t: ["resolve", "-p", str(p)],
           force=False, lock=False, fixed=True),
    Writer("verify --record", "verify", "--record", lambda p, d: p / "triton-env.verified.toml",
           lambda p, t: ["verify", "-p", str(p), "--record"], force=False, replace="edit", fixed=True),
    Writer("verify --profile", "verify", "--profile", lambda p, d: d / "trace.json",
           lambda p, t: ["verify", "-p", str(p), "--profile", str(t)], force=False, lock=False, network=True),
    *[Writer(f"export {fmt}", "export", "--output", lambda p, d, n=name: d / n,
             lambda p, t, f=fmt, x=extra: [*EXPORT, "-p", str(p), "--format", f, "-o", str(t), *x],
             replace="edit" if fmt == "uv" else "ours")
      for fmt, name, extra in (("pylock", "pylock.toml", []), ("requirements", "requirements.txt", []),
                               ("dockerfile", "Dockerfile", []), ("pixi", "pixi.toml", []),
                               ("uv", "pyproject.toml", []), ("slurm", "verify.sbatch", []),
                               ("k8s", "jobs.yaml", ["--image", "x"]))],
    Writer("export dockerfile context", "export", "--output",
           lambda p, d: p / "tritonlock-image" / "requirements-laptop.txt",
           lambda p, t: [*EXPORT, "-p", str(p), "--format", "dockerfile"], fixed=True),
    Writer("export devcontainer", "export", "--output", lambda p, d: d / "dc" / "devcontainer.json",
           lambda p, t: [*EXPORT, "-p", str(p), "--format", "devcontainer", "-o", str(t.parent)]),
    Writer("export devcontainer default", "export", "--output", lambda p, d: p / ".devcontainer" / "Dockerfile",
           lambda p, t: [*EXPORT, "-p", str(p), "--format", "devcontainer"], fixed=True),
    Writer("export wheelhouse page", "export", "--output", lambda p, d: d / "house" / "index.html",
           lambda p, t: [*EXPORT, "-p", str(p), "--format", "wheelhouse", "-o", str(t.parent)]),
    Writer("export wheelhouse file", "export", "--output", lambda p, d: d / "house" / _first_wheel(
        (p / "triton-env.lock").read_text()),
           lambda p, t: [*EXPORT, "-p", str(p), "--format", "wheelhouse", "-o", str(t.parent)]),
    Writer("report merge --out", "report merge", "--out", lambda p, d: d / "table.txt",
           lambda p, t: ["report", "merge", str(p / "runs"), "--expect", "1", "-p", str(p), "--out", str(t)],
           lock=False),
    Writer("report merge --html", "report merge", "--html", lambda p, d: d / "page.html",
           lambda p, t: ["report", "merge", str(p / "runs"), "--expect", "1", "-p", str(p), "--html", str(t)],
           lock=False),
    Writer("compat check --new", "compat check", "--output", lambda p, d: d / "draft.toml",
           lambda p, t: ["compat", "check", "--new", "-o", str(t), "--index", "http://127.0.0.1:9/simple"],
           lock=False, network=True),
]


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory, local_index: LocalIndex) -> Path:
    root = tmp_path_factory.mktemp("writers") / "proj"
    write_intent(root, local_index, INTENT)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    return root


@pytest.fixture
def short() -> Iterator[Path]:
    """A directory with a short path (a socket's path has at most 107 bytes)."""
    d = Path(tempfile.mkdtemp(prefix="tlw", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _project(w: Writer, locked: Path, short: Path) -> Path:
    p = short / "p"
    if w.id.startswith("init"):
        p.mkdir()
    elif w.lock:
        shutil.copytree(locked, p)
    else:
        p.mkdir()
        shutil.copy(locked / "triton-env.toml", p / "triton-env.toml")
    (p / "runs").mkdir()
    (short / "dc").mkdir()
    if w.id == "export wheelhouse file":
        (short / "house").mkdir()
    return p


def tree(root: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for dirpath, dirs, files in os.walk(root):
        for n in dirs + files:
            f = Path(dirpath) / n
            st = os.lstat(f)
            kind: object = stat.S_IFMT(st.st_mode)
            if stat.S_ISREG(st.st_mode):
                kind = hashlib.sha256(f.read_bytes()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                kind = "-> " + os.readlink(f)
            elif stat.S_ISCHR(st.st_mode):
                kind = ("chr", st.st_rdev)
            out[str(f.relative_to(root))] = kind
    return out


def _plant(kind: str, path: Path, short: Path) -> Callable[[], None]:
    """Put something that is not a regular file at `path`; returns what closes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        return s.close
    elif kind == "device":
        if not ROOT:
            pytest.skip("making a device node needs root")
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of our own: harmless if written to
    elif kind == "directory":
        path.mkdir()
        (path / "keep").write_text("mine\n")
    elif kind == "link to /dev/null":
        path.symlink_to(os.devnull)
    elif kind == "link to a fifo":
        os.mkfifo(short / "fifo")
        path.symlink_to(short / "fifo")
    elif kind == "link to a file":
        (short / "victim.txt").write_text("not tritonlock's\n")
        path.symlink_to(short / "victim.txt")
    elif kind == "dangling link":
        path.symlink_to(short / "nowhere.txt")
    return lambda: None


KINDS = ["fifo", "socket", "device", "directory", "link to /dev/null", "link to a fifo", "link to a file",
         "dangling link"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("w", WRITERS, ids=[w.id for w in WRITERS])
def test_no_writer_replaces_or_writes_through_what_is_not_a_regular_file(w: Writer, kind: str, locked: Path,
                                                                           short: Path) -> None:
    project = _project(w, locked, short)
    target = w.place(project, short)
    close = _plant(kind, target, short)
    try:
        for extra in ([], ["--force"] if w.force else []):
            if extra == [] or w.force:
                before = tree(short)
                code, out = _run(*w.argv(project, target), *extra)
                assert code == 2, (w.id, kind, extra, out)
                assert "nothing was written" in out and "--force" not in out and "Traceback" not in out, out
                assert str(target) in out, out
                assert tree(short) == before, (w.id, kind, extra)  # not the node, not its link's target, nothing else
    finally:
        close()


@pytest.mark.parametrize("w", [w for w in WRITERS if w.replace != "edit" and not w.network],
                         ids=[w.id for w in WRITERS if w.replace != "edit" and not w.network])
def test_no_writer_replaces_a_file_it_did_not_write_without_force(w: Writer, locked: Path, short: Path) -> None:
    """A hand-written file at the path: refused (the advice names --force where the command has it), untouched;
    replaced with --force; and the writer's own file is replaced quietly."""
    project = _project(w, locked, short)
    target = w.place(project, short)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("# my own notes\n")
    before = tree(short)
    code, out = _run(*w.argv(project, target))
    assert code == 2 and ("nothing was written" in out or "already exists — edit it" in out), (w.id, out)
    assert ("--force" in out) == w.force, out
    assert tree(short) == before
    if not w.force:
        return
    code, out = _run(*w.argv(project, target), "--force")
    assert code in (0, 1) and target.read_bytes() != b"# my own notes\n", (w.id, out)  # (report merge: a node missing)
    if w.replace == "ours" and not target.name.endswith(".whl"):  # (a wheel is the wheelhouse's when its page lists it)
        assert _files.written_by_us(target), w.id
        code, out = _run(*w.argv(project, target))
        assert code in (0, 1), (w.id, out)


@pytest.mark.parametrize("w", [w for w in WRITERS if not w.fixed], ids=[w.id for w in WRITERS if not w.fixed])
def test_no_writer_makes_a_directory_it_does_not_document(w: Writer, locked: Path, short: Path) -> None:
    """-o into a directory that is not there: exit 2, nothing made (a wheelhouse and a devcontainer make their own
    directory, but not the ones above it; host --save makes its folder: README)."""
    project = _project(w, locked, short)
    target = w.place(project, short / "missing" / "deeper")
    before = tree(short)
    code, out = _run(*w.argv(project, target))
    if w.id == "host --save":
        assert code == 0 and target.is_file(), out  # documented: "the folder is made when missing"
        return
    assert code == 2 and re.search(rf"{re.escape(str(short / 'missing'))}(/deeper)? does not exist", out), (w.id, out)
    assert "— create it first or fix the path" in out, (w.id, out)
    assert "nothing was written" in out and tree(short) == before


@pytest.mark.parametrize("fmt", ["pylock", "requirements", "dockerfile", "pixi", "uv", "slurm", "k8s"])
def test_dash_is_standard_output(fmt: str, locked: Path, short: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(short)
    extra = ["--image", "x"] if fmt == "k8s" else []
    r = CliRunner().invoke(main, [*EXPORT, "-p", str(locked), "--format", fmt, "-o", "-", *extra])
    assert r.exit_code == 0, r.output
    assert r.stdout == CliRunner().invoke(main, [*EXPORT, "-p", str(locked), "--format", fmt, *extra]).stdout
    assert r.stdout.strip() and not (short / "-").exists()


def test_dash_is_refused_where_the_output_is_a_directory_and_means_stdout_elsewhere(locked: Path, short: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(short)
    for fmt in ("wheelhouse", "devcontainer"):
        code, out = _run(*EXPORT, "-p", str(locked), "--format", fmt, "-o", "-")
        assert code == 2 and "which standard output cannot hold" in out and "nothing was written" in out, out
    r = CliRunner().invoke(main, ["host", "--save", "-", "--name", "box", "--driver", "none"])
    assert r.exit_code == 0 and 'name = "box"' in r.stdout, r.output
    (short / "runs").mkdir()
    r = CliRunner().invoke(main, ["report", "merge", str(short / "runs"), "--expect", "1", "--out", "-", "-p",
                                  str(short)])
    assert r.exit_code == 1 and "0 of 1 node(s) passed" in r.stdout, r.output
    r = CliRunner().invoke(main, ["report", "merge", str(short / "runs"), "--expect", "1", "--html", "-",
                                  "--out", str(short / "t.txt"), "-p", str(short)])
    assert r.exit_code == 1 and r.stdout.startswith("<!doctype html>"), r.output
    assert sorted(p.name for p in short.iterdir()) == ["runs", "t.txt"]  # no file named "-"


# ---------------------------------------------------------------- temp files: never a planted link


def test_a_link_planted_under_a_temp_name_is_never_followed(locked: Path, short: Path) -> None:
    """Every name a writer could use beside its file, planted as a link to a victim: the victim stays as it was
    (the wheelhouse once wrote each download through `NAME.part`)."""
    house = short / "house"
    house.mkdir()
    victim = short / "victim"
    victim.write_text("victim\n")
    names = [_first_wheel((locked / "triton-env.lock").read_text()), "index.html"]
    for n in names:
        for fake in (f"{n}.part", f"{n}.tmp", f".{n}.tmp", f"{n}~", f".{n}.part"):
            (house / fake).symlink_to(victim)
    code, out = _run(*EXPORT, "-p", str(locked), "--format", "wheelhouse", "-o", str(house))
    assert code == 0, out
    assert victim.read_text() == "victim\n"
    for n in names:
        assert (house / n).is_file() and not (house / n).is_symlink()
    out_file = short / "pylock.toml"
    for fake in ("pylock.toml.tmp", ".pylock.toml.tmp", "pylock.toml.part"):
        (short / fake).symlink_to(victim)
    assert _run(*EXPORT, "-p", str(locked), "--format", "pylock", "-o", str(out_file))[0] == 0
    assert victim.read_text() == "victim\n" and out_file.is_file()


def test_the_helper_refuses_at_the_last_moment_too(short: Path) -> None:
    """A FIFO that appears between the check and the rename is still never replaced (write_atomic checks again)."""
    target = short / "out.txt"
    os.mkfifo(target)
    with pytest.raises(Exception) as err:
        _files.write_atomic(target, "x\n")
    assert "is a named pipe (FIFO)" in str(err.value) and stat.S_ISFIFO(os.lstat(target).st_mode)
    assert sorted(p.name for p in short.iterdir()) == ["out.txt"]  # no temp file left


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/null", "directory", "link to a file"])
def test_records_and_host_files_follow_the_rule(kind: str, short: Path) -> None:
    """The writers no path option names: verify --record's records file (and its lock file beside it), and the
    files `fleet hosts` writes (which needs Slurm to run as a command)."""
    import json

    from tritonlock import records
    from tritonlock.errors import UsageError
    from tritonlock.fleet.nodes import parse_probes, write_host_files

    for name in (records.RECORDS_FILE, f".{records.RECORDS_FILE}.lock"):
        d = short / f"r{len(list(short.iterdir()))}"
        d.mkdir()
        _plant(kind, d / name, short)
        before = tree(short)
        with pytest.raises((UsageError, OSError)) as err:
            records.add_records(d / records.RECORDS_FILE, [])
        assert "--force" not in str(err.value) and tree(short) == before, str(err.value)
    probe = {"node": "n1", "name": "box", "os": "linux", "arch": "x86_64", "glibc": "2.35", "python": "3.11",
             "driver": None, "cuda": None, "gpus": [], "gpu_names": []}
    hosts = short / "hosts"
    hosts.mkdir()
    _plant(kind, hosts / "box.toml", short)
    before = tree(short)
    with pytest.raises(UsageError) as err2:
        write_host_files(parse_probes(json.dumps(probe), "srun output"), hosts, force=True)
    assert "nothing was written" in str(err2.value) and "--force" not in str(err2.value)
    assert tree(short) == before


def test_what_tritonlock_wrote_is_told_by_the_marker_its_header_carries_first(tmp_path: Path) -> None:
    """A file's kind is its own header's marker: a k8s manifest quoting the lock is an export, a lock is a lock; a
    file without a marker, one that is not there, a directory or a link is nobody's."""
    import os

    from tritonlock._files import MARKERS, written_by_us, written_kind

    cases = {"lock": f"# {MARKERS['lock']}\n", "export": f"# {MARKERS['export']}export --format k8s`\n"
             f"data: |\n  # {MARKERS['lock']}\n", "report merge": f"# {MARKERS['report merge']} x`\n",
             "records": f"# {MARKERS['records']}\n", None: "# my own file\n"}
    for kind, text in cases.items():
        (tmp_path / "f").write_text(text)
        assert (written_kind(tmp_path / "f"), written_by_us(tmp_path / "f")) == (kind, kind is not None), text
    (tmp_path / "d").mkdir()
    os.symlink(tmp_path / "f", tmp_path / "link")
    (tmp_path / "f").write_text(cases["lock"])
    for path in (tmp_path / "absent", tmp_path / "d", tmp_path / "link"):
        assert (written_kind(path), written_by_us(path)) == (None, False), path
