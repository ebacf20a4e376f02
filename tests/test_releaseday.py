"""Release day: the index serves a torch (or Triton) the matrix does not know; resolve says so in one line and does
not take it; `compat check --new` drafts rows for it from the wheels, each marked inferred."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import LINUX_TAG, populate, write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.compat.matrix import load_matrix

INTENT = """
[environment]
python = "3.11"

[[targets]]
name = "a100"
driver = "550.54.15"
gpus = ["8.0"]
"""


def _next_minor(version: str) -> str:
    major, minor = (int(x) for x in version.split(".")[:2])
    return f"{major}.{minor + 1}.0"


@pytest.fixture
def new_index(tmp_path: Path) -> LocalIndex:
    """The test index, plus a torch and a triton newer than any the matrix knows (on every CUDA index)."""
    m = load_matrix()
    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    new_torch, new_triton = _next_minor(m.torch[0].version), _next_minor(max(
        (r.version for r in m.triton), key=lambda v: tuple(int(x) for x in v.split("."))))
    for backend in ("cu124", "cu126"):
        idx.add(f"whl/{backend}", "torch", f"{new_torch}+{backend}", tag=LINUX_TAG,
                requires=(f"triton=={new_triton}",))
        idx.add(f"whl/{backend}", "triton", new_triton, tag=LINUX_TAG)
    idx.start()
    yield idx
    idx.stop()


def test_resolve_names_the_torch_and_triton_the_matrix_lacks_and_does_not_take_them(
        tmp_path: Path, new_index: LocalIndex) -> None:
    m = load_matrix()
    root = tmp_path / "proj"
    write_intent(root, new_index, INTENT.replace('python = "3.11"', 'python = "3.11"\ntorch = "<2.8"'))
    r = CliRunner().invoke(main, ["resolve", "-p", str(root)])
    assert r.exit_code == 0, r.output
    new_torch = _next_minor(m.torch[0].version)
    line = (f"warning: torch {new_torch} is on the index but not in matrix {m.version}; it is not considered (the "
            f"newest the matrix knows is {m.torch[0].version};")
    assert line in r.output
    assert "warning: triton " in r.output and f"is on the index but not in matrix {m.version}" in r.output
    lock = (root / "triton-env.lock").read_text()
    assert f'version = "{new_torch}+' not in lock  # not taken


def test_no_line_when_the_index_has_nothing_new(tmp_path: Path, local_index: LocalIndex) -> None:
    root = tmp_path / "proj"
    write_intent(root, local_index, INTENT.replace('python = "3.11"', 'python = "3.11"\ntorch = "<2.8"'))
    r = CliRunner().invoke(main, ["resolve", "-p", str(root)])
    assert r.exit_code == 0, r.output
    assert "not in matrix" not in r.output


def test_compat_check_new_drafts_rows_from_the_wheels_marked_inferred(tmp_path: Path) -> None:
    m = load_matrix()
    new_torch = _next_minor(m.torch[0].version)
    new_triton = _next_minor(max((r.version for r in m.triton), key=lambda v: tuple(int(x) for x in v.split("."))))
    idx = LocalIndex(tmp_path / "index")
    tag = "cp312-cp312-manylinux_2_28_x86_64"
    torch = idx.add("simple", "torch", new_torch, tag=tag,
                    requires=(f"triton=={new_triton}; platform_system == 'Linux'", "cuda-toolkit[cudart]==13.2.2"),
                    modules={"torch/__init__.py": "", "torch/version.py": f"__version__ = '{new_torch}+cu132'\n"
                                                                           "cuda = '13.2'\n"})
    idx.add("simple", "torch", new_torch, tag="cp313-cp313-manylinux_2_28_x86_64")
    idx.add("simple", "torch", m.torch[0].version, tag=tag)  # known: no row for it
    idx.add("simple", "triton", new_triton, tag="cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64", modules={
        "triton/__init__.py": "",
        "triton/backends/nvidia/bin/ptxas": "\x7fELF...Cuda compilation tools, release 13.1, V13.1.80\nBuild...",
    })
    idx.start()
    try:
        r = CliRunner().invoke(main, ["compat", "check", "--new", "--index", idx.index_url("simple")])
    finally:
        idx.stop()
    assert r.exit_code == 0, r.output
    out = r.output
    assert f"torch {new_torch}: drafted a [[torch]] row for compat/torch.toml" in out
    assert f"triton {new_triton}: drafted [[triton]] and [[ptxas]] rows" in out
    assert f'version = "{m.torch[0].version}"' not in out
    for line in (f'version = "{new_torch}"', 'python = ["3.12", "3.13"]', f'triton = "{new_triton}"',
                 f'triton_requirement = "=={new_triton}"', 'pypi_backend = "cu132"',
                 f"# inferred: torch/version.py of {torch.name} says the build is cu132",
                 'glibc = { linux_x86_64 = "2.28" }', 'ptxas = "13.1.80"',
                 "# inferred: triton from METADATA Requires-Dist"):
        assert line in out, line
    # the draft parses as TOML, each row with a source
    import tomllib

    body = out[out.index("# Drafted by"):]
    doc = tomllib.loads(body)
    assert all("source" in row for key in ("torch", "triton", "ptxas") for row in doc[key])
