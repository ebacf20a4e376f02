"""The lock is the contract: an edit to what is installed, or to which target a host gets, is refused by every
command (with `--locked` or not); a newer minor format gives one `warning:` line."""

from __future__ import annotations

from tritonlock import LOCK_VERSION

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main

INTENT = """
[environment]
python = "3.11"
torch = "==2.6.0"

[[targets]]
name = "a100"
driver = "550.54.15"
gpus = ["8.0"]

[[targets]]
name = "laptop"
"""


def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr if r.stderr_bytes is not None else ""


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory, local_index: LocalIndex) -> str:
    root = tmp_path_factory.mktemp("contract")
    write_intent(root, local_index, INTENT)
    code, out, err = _run("resolve", "-p", str(root))
    assert code == 0, out + err
    return (root / "triton-env.lock").read_text(encoding="utf-8")


def _a100(text: str, old: str, new: str) -> str:
    """Edit what is the first target's only: its table, or the decision or closure only it names."""
    from tritonlock import _toml

    data = _toml.loads(text)
    (t,) = [t for t in data["targets"] if t["name"] == "a100"]
    for key in ("decision", "closure"):
        assert sum(x.get(key) == t[key] for x in data["targets"]) == 1  # the laptop's are others
    mine = {("targets", "a100"), ("decisions", t["decision"]), ("closures", t["closure"])}
    blocks = text.split("\n\n[[")
    owner: tuple[str, str] | None = None
    for i, block in enumerate(blocks):
        table = block.split("]]", 1)[0]
        if table in ("targets", "decisions", "closures"):  # a new entry: named by its first line's value
            owner = (table, block.split('"')[1])
        if owner in mine and old in block:
            blocks[i] = block.replace(old, new, 1)
            return "\n\n[[".join(blocks)
    raise AssertionError(old)


@pytest.mark.parametrize("old, new", [
    ('driver = "550.54.15"\n', ""),            # a CUDA target with no driver would fit a CPU-only host
    ('gpus = ["8.0"]\n', ""),
    ('python = "3.11"\ntorch', 'python = "3.12"\ntorch'),  # a venv with another Python
    ('backend = "cu124"', 'backend = "cpu"'),  # cu124: 2.6's stable CUDA (RELEASE.md)
    ('driver-floor = "525.60.13"', 'driver-floor = "400.00"'),
])
@pytest.mark.parametrize("locked_flag", [True, False])
def test_sync_refuses_an_edited_target_with_or_without_locked(tmp_path: Path, locked: str, old: str, new: str,
                                                             locked_flag: bool, local_index: LocalIndex) -> None:
    write_intent(tmp_path, local_index, INTENT)
    (tmp_path / "triton-env.lock").write_text(_a100(locked, old, new), encoding="utf-8")
    code, out, err = _run("sync", "-p", str(tmp_path), "--no-verify", "--dry-run", "--target", "a100",
                          *(["--locked"] if locked_flag else []))
    assert code == 2, out + err
    assert err.strip() == (f"error: {tmp_path / 'triton-env.lock'}: target 'a100' was edited after the lock was "
                           "generated (its digest, which covers its constraints, decision and packages, does not "
                           "match) — regenerate it with `tritonlock resolve`")
    assert not (tmp_path / ".venv").exists()
    for cmd in (("show",), ("export", "--format", "requirements", "--target", "laptop")):
        code, out, err = _run(*cmd, "-p", str(tmp_path))
        assert code == 2 and "target 'a100' was edited" in err and "Traceback" not in out + err


def test_reordered_packages_are_accepted(tmp_path: Path, locked: str) -> None:
    head, *pkgs = locked.split("\n[[closures]]\n")[1].split("\n[[closures.packages]]\n")
    assert len(pkgs) > 2
    shuffled = locked.replace("\n[[closures.packages]]\n".join([head, *pkgs]),
                              "\n[[closures.packages]]\n".join([head, *(p.rstrip("\n") + "\n" for p in pkgs[::-1])]))
    assert shuffled != locked
    (tmp_path / "triton-env.lock").write_text(shuffled, encoding="utf-8")
    code, out, err = _run("show", "-p", str(tmp_path), "--target", "a100")
    assert code == 0, err
    assert "torch" in out and "2.6.0+cu124" in out


def test_a_newer_minor_lock_gives_one_warning_line(tmp_path: Path, locked: str) -> None:
    from tritonlock import _toml
    from tritonlock.lock import lockfile

    text = locked.replace(f'lock-version = "{lockfile.LOCK_VERSION}"', 'lock-version = "3.9"')
    data = _toml.loads(text)
    digests = [t["digest"] for t in data["targets"]]
    old_head = re.search(r'^digest = "(.*)"$', text, re.M).group(1)  # type: ignore[union-attr]
    text = text.replace(old_head, lockfile.header_digest(data, digests, [d["id"] for d in data["decisions"]],
                                                         [c["id"] for c in data["closures"]]), 1)
    (tmp_path / "triton-env.lock").write_text(text, encoding="utf-8")
    code, out, err = _run("show", "-p", str(tmp_path), "--json")
    assert code == 0, err
    from tritonlock.lock.lockread import NEWEST_READ

    assert err == (f"warning: {tmp_path / 'triton-env.lock'}: lock-version 3.9 is newer than this tritonlock's "
                   f"{NEWEST_READ}; reading only the fields it knows — upgrade tritonlock\n")


def test_a_lock_from_the_old_format_says_regenerate(tmp_path: Path, locked: str) -> None:
    text = locked.replace(f'lock-version = "{LOCK_VERSION}"', 'lock-version = "1.0"')
    (tmp_path / "triton-env.lock").write_text(text, encoding="utf-8")
    code, out, err = _run("sync", "-p", str(tmp_path), "--dry-run")
    assert code == 2
    assert "was written by an older tritonlock" in err and "regenerate it with `tritonlock resolve`" in err


def test_resolve_replaces_a_lock_of_the_old_format(tmp_path: Path, locked: str, local_index: LocalIndex) -> None:
    write_intent(tmp_path, local_index, INTENT)
    (tmp_path / "triton-env.lock").write_text(locked.replace(f'lock-version = "{LOCK_VERSION}"', 'lock-version = "1.0"'))
    code, out, err = _run("resolve", "-p", str(tmp_path))
    assert code == 0, err
    assert "written by an older tritonlock" in out and "re-resolving" in out
    assert (tmp_path / "triton-env.lock").read_text() == locked
