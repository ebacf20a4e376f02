"""A module a package loads only inside a `try` that catches its failure (torchao's `_C*.so`, loaded with
torch.ops.load_library in a `try: … except Exception`; propcache's `_helpers_c` with a pure-Python fallback): which
ones are, read from the package's Python (tritonlock.native.pysource.guarded_loads), and what the rule makes of a
failure there (Problem.guarded: a refusal for a package the user names, else a warning — the import works)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from nativebuild import extension, stub_library
from pkgindex import build_wheel
from tritonlock.models import NativeFacts, NativeMember
from tritonlock.native.judge import counted, guarded_warnings
from tritonlock.native.pysource import guarded_loads
from tritonlock.native.read import read_file
from tritonlock.native.rule import GUARDED_KINDS, Item, Setting, check

CP = "cp311-cp311-manylinux_2_17_x86_64"
PATHS = ("pkg/_C.abi3.so", "pkg/_C_cutlass.abi3.so", "pkg/_other.cpython-311-x86_64-linux-gnu.so",
         "pkg/sub/_deep.so", "pkg/__init__.py", "pkg/_api.py", "rootmod.abi3.so")


def _guarded(init: str, **files: str) -> tuple[str, ...]:
    texts = {"pkg/__init__.py": init, **{f"pkg/{k}.py": v for k, v in files.items()}}
    return guarded_loads(("pkg",), texts.get, PATHS)


TORCHAO = """
import torch
skip = False
if not skip:
    try:
        from pathlib import Path
        so_files = list(Path(__file__).parent.glob("_C*.so"))
        for file in so_files:
            torch.ops.load_library(str(file))
        from . import ops
    except Exception as e:
        pass
from . import dtypes
"""


def test_torchaos_glob_in_a_try_guards_the_modules_it_names_and_no_other() -> None:
    """torchao's pattern: `Path(__file__).parent.glob("_C*.so")` loaded with torch.ops.load_library inside `try:
    … except Exception`: the `_C*` modules of its folder are guarded; one the pattern does not name, one in a
    subfolder, and a root module are not (judged as loaded, as before)."""
    assert _guarded(TORCHAO) == ("pkg/_C.abi3.so", "pkg/_C_cutlass.abi3.so")


@pytest.mark.parametrize("handler, guarded", [
    ("except:", True), ("except Exception:", True), ("except BaseException as e:", True),
    ("except ImportError:", True), ("except (ValueError, ImportError):", True), ("except builtins.Exception:", True),
    ("except* ImportError:", True),
    # ModuleNotFoundError does not catch the ImportError a module that cannot load raises; OSError is a dlopen's
    ("except ModuleNotFoundError:", False), ("except OSError:", False), ("except (ValueError, KeyError):", False),
])
def test_an_import_by_name_is_guarded_only_by_a_handler_that_catches_an_importerror(handler: str,
                                                                                    guarded: bool) -> None:
    init = f"try:\n    from . import _other\n{handler}\n    _other = None\n"
    assert _guarded(init) == (("pkg/_other.cpython-311-x86_64-linux-gnu.so",) if guarded else ())


@pytest.mark.parametrize("handler, guarded", [
    ("except OSError:", True), ("except EnvironmentError:", True), ("except Exception:", True), ("except:", True),
    ("except ImportError:", False), ("except RuntimeError:", False),
])
def test_a_load_by_path_is_guarded_only_by_a_handler_that_catches_an_oserror(handler: str, guarded: bool) -> None:
    init = f"import ctypes\ntry:\n    ctypes.CDLL('_C.abi3.so')\n{handler}\n    pass\n"
    assert _guarded(init) == (("pkg/_C.abi3.so",) if guarded else ())


@pytest.mark.parametrize("init", [
    # loaded outside any try as well: it loads whenever the package is imported
    "try:\n    from . import _other\nexcept ImportError:\n    pass\nfrom . import _other\n",
    "try:\n    import pkg._other\nexcept ImportError:\n    pass\nimport pkg._other\n",
    # in the try's else, finally or handler: outside the guard
    "try:\n    pass\nexcept ImportError:\n    pass\nelse:\n    from . import _other\n",
    "try:\n    pass\nfinally:\n    from . import _other\n",
    "try:\n    pass\nexcept ImportError:\n    from . import _other\n",
    # in a function: it runs where the function is called, with no try of the module around it
    "try:\n    def load():\n        from . import _other\nexcept ImportError:\n    pass\n",
    # a try whose only handler is for something else, around a try that catches nothing the load raises
    "try:\n    try:\n        from . import _other\n    except KeyError:\n        pass\nexcept ValueError:\n    pass\n",
    # nothing read loads it
    "import os\n",
])
def test_a_module_loaded_outside_a_catching_try_or_not_at_all_is_not_guarded(init: str) -> None:
    assert "pkg/_other.cpython-311-x86_64-linux-gnu.so" not in _guarded(init)


@pytest.mark.parametrize("init, files", [
    ("try:\n    from pkg import _other\nexcept ImportError:\n    pass\n", {}),
    ("try:\n    import importlib\n    importlib.import_module('pkg._other')\nexcept Exception:\n    pass\n", {}),
    ("def f():\n    try:\n        from . import _other\n    except ImportError:\n        return None\n", {}),
    # in a module of the folder that __init__ imports (followed), guarded there
    ("from . import _api\n", {"_api": "try:\n    from ._other import x\nexcept ImportError:\n    x = None\n"}),
    # the inner try catches it, the outer one does not need to
    ("try:\n    try:\n        from . import _other\n    except ImportError:\n        pass\nexcept KeyError:\n"
     "    pass\n", {}),
])
def test_each_way_of_loading_a_module_inside_a_catching_try_guards_it(init: str, files: dict[str, str]) -> None:
    assert _guarded(init, **files) == ("pkg/_other.cpython-311-x86_64-linux-gnu.so",)


def test_a_load_by_path_in_a_module_of_another_folder_or_with_a_pattern_naming_others_guards_nothing_here() -> None:
    """A pattern in the call names the files it loads: "_X*.so" names none of these; a dynamic load without a
    pattern loads any module of its folder; torch.ops.load_library in a function body is no guard."""
    assert _guarded("import torch\ntry:\n    torch.ops.load_library('_X*.so')\nexcept Exception:\n    pass\n") == ()
    assert _guarded("import torch\ntry:\n    torch.ops.load_library(path)\nexcept Exception:\n    pass\n") == (
        "pkg/_C.abi3.so", "pkg/_C_cutlass.abi3.so", "pkg/_other.cpython-311-x86_64-linux-gnu.so")
    assert _guarded("import torch\ndef f(p):\n    torch.ops.load_library(p)\ntry:\n    f(x)\nexcept Exception:\n"
                    "    pass\n") == ()
    assert guarded_loads(("pkg",), {"pkg/__init__.py": TORCHAO}.get, ("pkg/__init__.py",)) == ()
    assert guarded_loads(("pkg",), {}.get, PATHS) == ()  # (its Python not read: nothing is guarded)
    assert _guarded("try:\n    from . import (\n") == ()  # (Python that does not parse: nothing)


# --- the rule ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("guard-stubs")
    return {n: stub_library(d / n.split(".so")[0], n, ("cudaRuntimeGetVersion",))
            for n in ("libcudart.so.12", "libcudart.so.13")}


def _at(**kw: object) -> Setting:
    return Setting(torch="2.10.0", backend="cu128", driver="580.95.05", gpus=("9.0",), floors={}, **kw)  # type: ignore[arg-type]


def _wheel_item(tmp: Path, name: str, modules: dict[str, bytes | str]) -> Item:
    whl = build_wheel(tmp / name, name, "2.0", tag=CP, modules=modules)
    facts = read_file(whl, hashlib.sha256(whl.read_bytes()).hexdigest())
    assert facts.problem is None, facts.problem
    return Item(name=name, version="2.0", facts=facts)


def test_a_wheels_guarded_modules_are_read_with_its_facts_and_their_failure_is_marked(tmp_path: Path,
                                                                                      libs: dict[str, Path]) -> None:
    """A wheel as torchao ships: its CUDA 13 `_C.so` loaded inside a `try`. Beside a CUDA 12.8 torch the failure is
    marked guarded, and said as a warning naming the module and that the import works without it; the same module
    imported plainly is a plain problem."""
    cu13 = extension(tmp_path / "c13", "gpkg._C", links={libs["libcudart.so.13"]: ("cudaRuntimeGetVersion",)})
    item = _wheel_item(tmp_path / "g", "gpkg", {"gpkg/__init__.py": TORCHAO.replace(
        "from . import ops", "pass").replace("from . import dtypes", ""), "gpkg/_C.so": cu13})
    assert item.facts.guarded == ("gpkg/_C.so",)
    (p,) = check([item], {"libcudart.so.12"}, _at())
    assert (p.kind, p.needs, p.guarded) == ("cuda-library", "libcudart.so.13", True)
    (w,) = guarded_warnings([p])
    assert w.startswith("gpkg 2.0: gpkg/_C.so in gpkg-2.0-") and "needs libcudart.so.13" in w, w
    assert "loads that module inside a `try` that catches the failure (inferred from its Python), so `import gpkg` " \
           "works without it" in w, w
    plain = _wheel_item(tmp_path / "p", "ppkg", {"ppkg/__init__.py": "from . import _C\n", "ppkg/_C.so": cu13})
    assert plain.facts.guarded == ()
    (q,) = check([plain], {"libcudart.so.12"}, _at())
    assert not q.guarded and guarded_warnings([q]) == []


def _hand(*members: NativeMember, guarded: tuple[str, ...]) -> Item:
    return Item(name="hpkg", version="1.0", facts=NativeFacts(sha256="0" * 64, filename=f"hpkg-1.0-{CP}.whl",
                                                              members=members, guarded=guarded, tops=("hpkg",)))


def test_only_a_load_failure_of_guarded_modules_alone_is_guarded() -> None:
    """What a `try` around a load catches is a failed load: a missing library (also one only a guarded module needs),
    torch's other build, a torch symbol. A module that loads and has no code for the GPU fails when called (not
    guarded); a problem an unguarded module has too is not guarded; a CUDA the driver cannot run is not either."""
    bundled = NativeMember(path="hpkg.libs/libdep.so", extension=False, needed=("libcudart.so.13",))
    ext = NativeMember(path="hpkg/_C.so", extension=True, needed=("libdep.so",), sm=("sm_80",), gpu="read")
    (p,) = [p for p in check([_hand(ext, bundled, guarded=("hpkg/_C.so",))], set(), _at()) if p.kind == "cuda-library"]
    assert p.guarded and p.needs == "libcudart.so.13"  # (needed by the bundled library only the guarded module links)
    gpu = check([_hand(ext, bundled, guarded=("hpkg/_C.so",))], {"libcudart.so.13"}, _at())
    assert [(p.kind, p.guarded) for p in gpu] == [("gpu-code", False)]
    plain = NativeMember(path="hpkg/_plain.so", extension=True, needed=("libcudart.so.13",))
    both = check([_hand(ext, bundled, plain, guarded=("hpkg/_C.so",))], set(), _at())
    assert [(p.kind, p.guarded) for p in both if p.kind == "cuda-library"] == [("cuda-library", False)]
    old = Setting(torch="2.10.0", backend="cu128", driver="470.57.02", gpus=("9.0",), floors={13: "580.65.06"})
    drv = check([_hand(ext, bundled, guarded=("hpkg/_C.so",))], {"libcudart.so.13"}, old)
    assert ("cuda-driver", False) in [(p.kind, p.guarded) for p in drv]
    assert set(GUARDED_KINDS) == {"driver", "torch-build", "cuda-library", "torch-release", "torch-symbol"}


def test_a_lenient_judge_lets_a_guarded_failure_pass_only_for_a_package_the_user_does_not_name() -> None:
    from tritonlock.models import DirectPackage, Selection, TargetSpec

    ext = NativeMember(path="hpkg/_C.so", extension=True, needed=("libcudart.so.13",))
    found = check([_hand(ext, guarded=("hpkg/_C.so",))], set(), _at())
    assert [p.guarded for p in found] == [True]
    t = TargetSpec(name="h200", os="linux", arch="x86_64", driver="580.95.05", gpus=("9.0",))
    other = Selection(target=t, ok=True, direct=(DirectPackage(name="unsloth", requirement="unsloth"),))
    assert counted(found, other, (), lenient=False) == found
    assert counted(found, other, (), lenient=True) == []
    for sel, imports in ((Selection(target=t, ok=True, direct=(DirectPackage(name="hpkg", requirement="HPkg"),)), ()),
                         (other, ("hpkg",)), (other, ("HPKG",))):
        assert counted(found, sel, imports, lenient=True) == found
    hard = check([_hand(ext, guarded=())], set(), _at())
    assert counted(hard, other, (), lenient=True) == hard


def test_the_lock_keeps_a_wheels_guarded_modules_and_refuses_a_path_out_of_it() -> None:
    """[[native]].guarded round-trips through the lock (absent where nothing is guarded: older locks read the same);
    a path that leaves the wheel, an absolute one or a non-string is refused, naming the key."""
    import dataclasses

    from test_lockfile import sample
    from tritonlock.errors import LockfileError
    from tritonlock.lock import lockfile

    base = sample()
    kern = base.native[1]
    assert "guarded" not in lockfile.dumps(base)
    lock = dataclasses.replace(base, native=(base.native[0], dataclasses.replace(kern, guarded=("kern/_C.abi3.so",))))
    text = lockfile.dumps(lock)
    assert 'guarded = ["kern/_C.abi3.so"]' in text
    assert [f.guarded for f in lockfile.loads(text).native] == [(), ("kern/_C.abi3.so",)]
    for bad in ("../etc/x.so", "/abs.so", "a/../../b.so", "bad path.so", "kern/..", ""):
        hostile = dataclasses.replace(base, native=(base.native[0], dataclasses.replace(kern, guarded=(bad,))))
        with pytest.raises(LockfileError, match=r"native\[1\]\.guarded"):
            lockfile.loads(lockfile.dumps(hostile))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400), st.lists(st.text(max_size=40), max_size=6))
def test_any_python_text_and_member_names_give_an_answer_never_an_error(init: str, names: list[str]) -> None:
    """Hostile or broken Python (and odd member names) never raise: what cannot be read guards nothing."""
    hostile = ("try:\n    from . import _C\nexcept ImportError:\n    pass\n" + init, init)
    for text in hostile:
        got = guarded_loads(("pkg",), {"pkg/__init__.py": text}.get, [*PATHS, *names])
        assert set(got) <= {*PATHS, *names}


def test_the_searchs_lenient_judge_answers_as_the_rule_does_from_what_the_strict_one_found(
        tmp_path: Path, libs: dict[str, Path]) -> None:
    """The packages search's two judges of one decision share what the rule found (decide._pkgjudge): the lenient
    one (the second search's) answers from the strict one's finding as the rule itself answers leniently — a guarded
    failure of a package not named left out, one of a named package kept — and asks the rule nothing again; each
    notes a guarded failure only where its own answer has one."""
    from types import SimpleNamespace

    from tritonlock.compat.matrix import load_matrix
    from tritonlock.decide._pkgjudge import judge_of
    from tritonlock.models import Selection, TargetSpec
    from tritonlock.native.judge import release_problems

    cu13 = extension(tmp_path / "c13", "gpkg._C", links={libs["libcudart.so.13"]: ("cudaRuntimeGetVersion",)})
    item = _wheel_item(tmp_path / "g", "gpkg", {"gpkg/__init__.py": TORCHAO.replace(
        "from . import ops", "pass").replace("from . import dtypes", ""), "gpkg/_C.so": cu13})
    matrix, intent = load_matrix(), SimpleNamespace(cuda_policy="compatible", optional_gpu_code=())
    target = TargetSpec(name="gpu", os="linux", arch="x86_64", glibc="2.35", driver="580.95.05", gpus=("9.0",))
    sel = Selection(target=target, ok=True, python="3.11", torch="2.10.0", backend="cu128", index="https://x/")
    brought = {"libcudart.so.12"}
    for reach in ((), ("gpkg",)):
        rule = {lenient: release_problems(sel, item, brought, matrix=matrix, imports=reach, lenient=lenient)
                for lenient in (False, True)}
        assert [p.guarded for p in rule[False]] == [True]
        found: dict[tuple[object, ...], list[object]] = {}
        noted: dict[bool, list[bool]] = {False: [], True: []}
        judges = {lenient: judge_of(matrix, intent, reach, lambda s: None, lenient, noted[lenient], found)  # type: ignore[arg-type]
                  for lenient in (False, True)}
        assert judges[False](sel, item, brought) == rule[False] and len(found) == 1
        assert judges[True](sel, item, brought) == rule[True] and len(found) == 1
        assert rule[True] == ([] if not reach else rule[False])
        assert noted == {False: [True], True: [] if not reach else [True]}
        # the lenient judge first: it asks the rule (strictly) and keeps that for the strict one
        found.clear()
        again = judge_of(matrix, intent, reach, lambda s: None, True, [], found)  # type: ignore[arg-type]
        assert again(sel, item, brought) == rule[True] and list(found.values()) == [rule[False]]
