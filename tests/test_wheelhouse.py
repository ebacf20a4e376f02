"""`export --format wheelhouse`: the target's files once, checked, resumable; then `sync --find-links DIR` installs
with every index unreachable (the index is stopped)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import populate, write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main

pytestmark = pytest.mark.slow

INTENT = """
[environment]
python = "3.11"
torch = "==2.6.0"
packages = ["einops>=0.8"]

[[targets]]
name = "laptop"
"""


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def test_wheelhouse_is_resumable_checked_and_syncs_offline(tmp_path: Path) -> None:
    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    idx.start()
    root = tmp_path / "proj"
    write_intent(root, idx, INTENT)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    house = tmp_path / "house"
    code, out = _run("export", "-p", str(root), "--format", "wheelhouse", "-o", str(house))
    assert code == 0, out
    wheels = sorted(p.name for p in house.glob("*.whl"))
    assert {w.split("-")[0] for w in wheels} == {"torch", "triton", "filelock", "einops", "typing_extensions", "numpy"}
    assert "(6 downloaded" in out and "0 already there" in out
    assert "[1/6]" in out and " KB" in out  # progress and sizes
    page = (house / "index.html").read_text()
    assert all(f'href="{w}#sha256=' in page for w in wheels)
    # a second run downloads nothing
    before = len([r for r in idx.requests if "/_files/" in r])
    code, out = _run("export", "-p", str(root), "--format", "wheelhouse", "-o", str(house))
    assert code == 0 and "(0 downloaded, 0 B; 6 already there)" in out, out
    assert len([r for r in idx.requests if "/_files/" in r]) == before
    # a cut-off file is fetched again, and only it
    torch = next(house.glob("torch-*.whl"))
    good = torch.read_bytes()
    torch.write_bytes(good[: len(good) // 2])
    code, out = _run("export", "-p", str(root), "--format", "wheelhouse", "-o", str(house))
    assert code == 0 and "(1 downloaded" in out and "1 fetched again" in out, out
    assert torch.read_bytes() == good
    # no network: the index is gone
    idx.stop()
    venv = tmp_path / "venv"
    code, out = _run("sync", "-p", str(root), "--venv", str(venv), "--find-links", str(house), "--no-verify")
    assert code == 0, out
    got = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch, einops; print(torch.__version__)"],
                         capture_output=True, text=True)
    assert got.stdout.strip() == "2.6.0+cpu", got.stderr


def test_a_file_the_index_changed_is_refused(tmp_path: Path) -> None:
    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    idx.start()
    root = tmp_path / "proj"
    write_intent(root, idx, INTENT)
    assert _run("resolve", "-p", str(root))[0] == 0
    for f in (tmp_path / "index").rglob("einops-*.whl"):
        f.write_bytes(f.read_bytes() + b"tampered")
    house = tmp_path / "house"
    code, out = _run("export", "-p", str(root), "--format", "wheelhouse", "-o", str(house))
    idx.stop()
    assert code == 4
    assert "einops-0.8.0-py3-none-any.whl: the downloaded file has sha256" in out and "the lock pins" in out
    assert not list(house.glob("einops*"))  # neither the file nor a .part is left


def test_wheelhouse_needs_an_output_directory(tmp_path: Path, local_index: LocalIndex) -> None:
    root = tmp_path / "proj"
    write_intent(root, local_index, INTENT)
    assert _run("resolve", "-p", str(root))[0] == 0
    code, out = _run("export", "-p", str(root), "--format", "wheelhouse")
    assert code == 2 and "--format wheelhouse needs -o DIR" in out


def test_sizes_are_in_one_unit_and_unknown_ones_are_said(tmp_path: Path) -> None:
    """The summary mixed 1024-based sizes with decimal labels (and sync's plan counts decimal), and left files whose
    size the lock does not record out of its total in silence: an index that serves only PEP 503 HTML gives no sizes."""
    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    idx.json = False  # HTML pages only: the lock records no sizes
    idx.start()
    root = tmp_path / "proj"
    write_intent(root, idx, INTENT)
    assert _run("resolve", "-p", str(root))[0] == 0
    house = tmp_path / "house"
    code, out = _run("export", "-p", str(root), "--format", "wheelhouse", "-o", str(house))
    idx.stop()
    assert code == 0, out
    assert "wheelhouse " + str(house) + ": 6 files, 6 files of unknown size for target laptop" in out, out
    on_disk = sum(p.stat().st_size for p in house.glob("*.whl"))
    from tritonlock._term import human_size

    assert f"wrote {house}: 6 files, {human_size(on_disk)} for target laptop" in out, out
    assert human_size(1_500_000) == "1.5 MB" and human_size(1_048_576) == "1.0 MB"  # decimal, as sync's plan
    for line in out.splitlines():
        if line.startswith("[") and line.endswith(")"):
            name, size = line.split(" ", 1)[1].rsplit(" (", 1)
            assert size[:-1] == human_size((house / name).stat().st_size), line
