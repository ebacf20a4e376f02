"""`tritonlock tree`: the locked graph from the lock alone — its edges read at lock time from each locked file's
checked METADATA (markers for the target, extras followed) — drawn as uv draws it, or inverted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.requirements import Requirement

from conftest import populate, write_intent
from pkgindex import LocalIndex
from tritonlock import LOCK_VERSION
from tritonlock.cli import main
from tritonlock.lock.edges import closure_edges
from tritonlock.models import LockedPackage, Wheel

INTENT = """
[environment]
python = "3.11"
torch = "==2.6.0"
cuda = "cpu"
packages = ["einops", "app[extra]"]
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("tree-index"))
    populate(idx)
    idx.add("simple", "app", "1.0", extras=("extra",),
            requires=("lib>=1", 'plugin; extra == "extra"', "winonly; sys_platform == 'win32'"))
    idx.add("simple", "lib", "1.0", requires=("typing-extensions>=4",))
    idx.add("simple", "plugin", "1.0", extras=("deep",), requires=("lib", 'deeper; extra == "deep"'))
    idx.add("simple", "winonly", "1.0")
    idx.add("simple", "deeper", "1.0")
    idx.start()
    yield idx
    idx.stop()


def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture
def proj(tmp_path: Path, index: LocalIndex) -> Path:
    write_intent(tmp_path, index, INTENT)
    code, out, err = _run("resolve", "-p", str(tmp_path))
    assert code == 0, out + err
    return tmp_path


TREE = """\
torch v2.6.0+cpu
└── filelock v3.16.1
triton v3.2.0
einops v0.8.0
└── typing-extensions v4.12.2
app v1.0
├── lib v1.0
│   └── typing-extensions v4.12.2
└── plugin v1.0
    └── lib v1.0 (*)
numpy v1.26.4
"""


def test_tree_draws_the_locked_graph_with_extras_and_markers_followed(proj: Path) -> None:
    code, out, err = _run("tree", "-p", str(proj))
    assert code == 0, err
    assert out == TREE  # app's extra brings plugin; winonly is Windows-only, so neither locked nor drawn


def test_invert_says_who_pulls_a_package_in_up_to_what_asked_for_it(proj: Path) -> None:
    code, out, err = _run("tree", "-p", str(proj), "--invert", "typing-extensions")
    assert code == 0, err
    assert out == ("typing-extensions v4.12.2\n"
                   "├── einops v0.8.0 (requested: einops)\n"
                   "└── lib v1.0\n"
                   "    ├── app v1.0 (requested: app[extra])\n"
                   "    └── plugin v1.0\n"
                   "        └── app v1.0 (requested: app[extra])\n")
    code, out, _ = _run("tree", "-p", str(proj), "-i", "filelock")
    assert out == "filelock v3.16.1\n└── torch v2.6.0+cpu (the torch decision)\n"
    code, out, _ = _run("tree", "-p", str(proj), "-i", "numpy")
    assert out == "numpy v1.26.4 (added by the decision — `tritonlock show` says why)\n"


def test_a_package_s_subtree_its_depth_and_json(proj: Path) -> None:
    assert _run("tree", "-p", str(proj), "app", "--depth", "1")[1] == "app v1.0\n├── lib v1.0\n└── plugin v1.0\n"
    assert _run("tree", "-p", str(proj), "App", "--depth", "0")[1] == "app v1.0\n"
    code, out, _ = _run("tree", "-p", str(proj), "--json")
    data = json.loads(out)
    (t,) = data["targets"]
    assert data["lock-version"] == LOCK_VERSION and t["name"] == "host" and t["roots"][:2] == ["torch", "triton"]
    pk = {p["name"]: p for p in t["packages"]}
    assert pk["lib"] == {"name": "lib", "version": "1.0", "dependencies": ["typing-extensions"],
                         "required-by": ["app", "plugin"], "root": None}
    assert pk["app"]["root"] == "requested: app[extra]" and pk["app"]["dependencies"] == ["lib", "plugin"]


@pytest.mark.parametrize("args,words", [
    (["nosuch"], "locks no package named 'nosuch' in target 'host'"),
    (["--target", "nope"], "has no target 'nope'"),
    (["--depth", "-1"], "-1 is not in the range"),
])
def test_what_tree_cannot_draw_is_bad_input(proj: Path, args: list[str], words: str) -> None:
    code, out, err = _run("tree", "-p", str(proj), *args)
    assert code == 2 and words in err, err


def test_tree_needs_no_index_and_no_venv(tmp_path: Path) -> None:
    """From the lock alone: the index that served it is gone, there is no venv."""
    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    idx.start()
    try:
        write_intent(tmp_path / "p", idx, INTENT.replace(', "app[extra]"', ""))
        assert _run("resolve", "-p", str(tmp_path / "p"))[0] == 0
    finally:
        idx.stop()
    n = len(idx.requests)
    code, out, _ = _run("tree", "-p", str(tmp_path / "p"), "-i", "typing-extensions")
    assert code == 0 and out == "typing-extensions v4.12.2\n└── einops v0.8.0 (requested: einops)\n"
    assert len(idx.requests) == n and not (tmp_path / "p" / ".venv").exists()


def test_an_older_lock_without_edges_says_how_to_get_them(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock as tritonlock 3.0 wrote it (its own digests, no edges): still read, and `tree` names the way on."""
    import dataclasses

    from tritonlock.lock import lockfile

    lock = proj / "triton-env.lock"
    old = lockfile.read_lock(lock)
    bare = dataclasses.replace(old, targets=tuple(dataclasses.replace(t, packages=tuple(
        dataclasses.replace(p, dependencies=None) for p in t.packages)) for t in old.targets))
    with monkeypatch.context() as m:
        m.setattr(lockfile, "LOCK_VERSION", "3.0")
        lock.write_text(lockfile.dumps(bare))
    assert 'lock-version = "3.0"' in lock.read_text() and "dependencies" not in lock.read_text()
    assert _run("show", "-p", str(proj))[0] == 0
    code, out, err = _run("tree", "-p", str(proj))
    assert code == 2, out
    assert "(lock-version 3.0, written by tritonlock 0.1.0) records no dependency edges" in err
    assert "`tritonlock resolve --upgrade-package PKG`" in err and "`tritonlock resolve --upgrade`" in err


def test_targets_with_other_graphs_are_drawn_each_under_its_name(tmp_path: Path, index: LocalIndex) -> None:
    body = INTENT.replace('packages = ["einops", "app[extra]"]', 'packages = ["einops", "winonly; sys_platform == \'linux\'"]')
    body += ('\n[[targets]]\nname = "box"\nos = "linux"\narch = "x86_64"\nglibc = "2.35"\n'
             '\n[[targets]]\nname = "box2"\nos = "linux"\narch = "x86_64"\nglibc = "2.31"\n')
    write_intent(tmp_path, index, body)
    code, out, err = _run("resolve", "-p", str(tmp_path))
    assert code == 0, out + err
    code, out, _ = _run("tree", "-p", str(tmp_path), "-i", "typing-extensions")
    # the two machines share one graph: drawn once, without a heading
    assert out == "typing-extensions v4.12.2\n└── einops v0.8.0 (requested: einops)\n"
    code, out, _ = _run("tree", "-p", str(tmp_path), "--target", "box2", "winonly")
    assert out == "winonly v1.0\n"


# ---------------------------------------------------------------- the edges themselves

def _pkg(name: str) -> LockedPackage:
    return LockedPackage(name=name, version="1", index="https://i.example/simple",
                         wheels=(Wheel(name=f"{name}-1-py3-none-any.whl", url=f"https://i.example/{name}.whl",
                                       sha256="a" * 64),))


ENV = {"python_version": "3.11", "python_full_version": "3.11.0", "sys_platform": "linux", "platform_system": "Linux",
       "platform_machine": "x86_64", "os_name": "posix", "implementation_name": "cpython",
       "platform_python_implementation": "CPython"}


def test_edges_follow_extras_to_a_fixed_point_and_evaluate_markers_for_the_target() -> None:
    meta = {
        "a": "Name: a\nRequires-Dist: b[x]\nRequires-Dist: w ; sys_platform == 'win32'\n\nRequires-Dist: body-not-read",
        "b": "Name: b\nRequires-Dist: c ; extra == 'x'\nRequires-Dist: d ; extra == 'y'\nRequires-Dist: b\n",
        "c": "Name: c\nRequires-Dist: d ; python_version < '3.12'\nRequires-Dist: not-locked\n",
        "d": "Name: d\nRequires-Dist: this is not a requirement\n",
        "w": "Name: w\n",
    }
    pkgs = tuple(_pkg(n) for n in ("a", "b", "c", "d", "w", "e"))
    edges = closure_edges(pkgs, [Requirement("a")], ENV, lambda p: meta.get(p.name))
    assert edges == {"a": ("b",), "b": ("c",), "c": ("d",), "d": (), "w": (), "e": None}
    # the extra asked for by the root itself, and a marker that no longer holds on another Python
    without_a = tuple(p for p in pkgs if p.name != "a")
    edges = closure_edges(without_a, [Requirement("b[y]")], {**ENV, "python_version": "3.12"},
                          lambda p: meta.get(p.name))
    assert edges["b"] == ("d",) and edges["c"] == ()


def test_a_wheel_the_check_could_not_read_has_its_metadata_read_from_inside_it(tmp_path: Path) -> None:
    """A file too large for the integrity check on an index without PEP 658 hashes (torch on a plain mirror): its
    METADATA is read from inside the wheel with ranged reads, for the edges alone (and kept, as served)."""
    import hashlib

    from tritonlock.lock.edges import file_metadata
    from tritonlock.lock.integrity import kept_metadata

    idx = LocalIndex(tmp_path / "index")
    whl = idx.add("simple", "bigthing", "1.0", requires=("lib>=1", "other; sys_platform == 'win32'"))
    idx.start()
    try:
        sha = hashlib.sha256(whl.read_bytes()).hexdigest()
        p = LockedPackage(name="bigthing", version="1.0", index=idx.index_url("simple"),
                          wheels=(Wheel(name=whl.name, url=f"{idx.index_url('simple')}/_files/{whl.name}",
                                        sha256=sha),))
        get = file_metadata({}, [p])
        meta = get(p)
        assert meta is not None and "Requires-Dist: lib>=1" in meta
        assert kept_metadata(sha, served=True) == meta and kept_metadata(sha) is None  # never taken as checked
        assert closure_edges((p, _pkg("lib")), [], ENV, get)["bigthing"] == ("lib",)
        # an index that does not answer: no edge, no error
        idx.stop()
        gone = LockedPackage(name="gone", version="1", index=idx.index_url("simple"),
                             wheels=(Wheel(name="gone-1-py3-none-any.whl", url="http://127.0.0.1:9/x.whl",
                                           sha256="b" * 64),))
        assert file_metadata({}, [gone])(gone) is None
    finally:
        idx.stop()


def test_a_cycle_in_the_graph_is_drawn_once_and_ends() -> None:
    """Two packages that require each other (it happens: uv locks them): each drawn once, the repeat marked (*)."""
    from tritonlock.lock.tree import Graph, lines

    pk = {n: _pkg(n) for n in ("a", "b", "c")}
    g = Graph(packages=pk, requires={"a": ("b",), "b": ("a", "c"), "c": ()}, roots={"a": "requested: a"})
    assert lines(g) == ["a v1", "└── b v1", "    ├── a v1 (*)", "    └── c v1"]
    assert lines(g, packages=("c",), invert=True) == ["c v1", "└── b v1", "    └── a v1 (requested: a)",
                                                      "        └── b v1 (*)"]


def test_the_integrity_check_reads_the_metadata_of_a_wheel_too_large_to_check_as_it_starts(tmp_path: Path) -> None:
    """A wheel over the check's bound on an index without PEP 658 hashes: the check, started as the closure is seen,
    reads its METADATA from inside it (ranged reads) and keeps it as served — the edges then need no read after the
    decision — never as checked; a second wheel of the package (not the one the edges read) is not read."""
    import hashlib

    from tritonlock.lock.integrity import Early, kept_metadata

    idx = LocalIndex(tmp_path / "index")
    whl = idx.add("simple", "bigearly", "1.0", requires=("lib>=1",))
    other = idx.add("simple", "bigearly", "1.0", tag="py3-none-manylinux_2_17_x86_64", requires=("lib>=1",))
    idx.start()
    try:
        wheels = tuple(Wheel(name=f.name, url=f"{idx.index_url('simple')}/_files/{f.name}",
                             sha256=hashlib.sha256(f.read_bytes()).hexdigest()) for f in (whl, other))
        p = LockedPackage(name="bigearly", version="1.0", index=idx.index_url("simple"), wheels=wheels)
        with Early(max_bytes=16) as early:  # (every file is over 16 bytes: none is downloaded to be checked)
            early.start((p,))
            got = [early.result(p, w) for w in wheels]
        assert [c.unchecked for c in got] == [w.name for w in wheels]
        meta = kept_metadata(wheels[0].sha256, served=True)
        assert meta is not None and "Requires-Dist: lib>=1" in meta
        assert kept_metadata(wheels[0].sha256) is None and kept_metadata(wheels[1].sha256, served=True) is None
    finally:
        idx.stop()
