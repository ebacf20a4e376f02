"""sync never destroys a venv before its replacement is complete, repairs what a killed install left behind,
and every message about a venv's state is checked here against the venv itself."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import tree, write_intent
from pkgindex import LocalIndex, build_wheel
from tritonlock.environment import _venv
from tritonlock.cli import main
from tritonlock.environment.sync import siblings, plan, venv_python

INTENT = """
[environment]
python = "{python}"
torch = "==2.6.0"
cuda = "cpu"
packages = [{extra}]
"""
CLI = "tlcli"  # a package with a console script: entry points must survive the move into place


@pytest.fixture(scope="module")
def index(local_index: LocalIndex) -> LocalIndex:
    local_index.add("simple", CLI, "1.0", modules={
        "tlcli/__init__.py": "def main():\n    print('tlcli ok')\n",
        "tlcli-1.0.dist-info/entry_points.txt": "[console_scripts]\ntlcli = tlcli:main\n",
    })
    return local_index


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), env=env)
    return r.exit_code, r.output


def _project(root: Path, idx: LocalIndex, python: str = "3.11", extra: str = f'"einops", "{CLI}"') -> Path:
    write_intent(root, idx, INTENT.format(python=python, extra=extra))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    return root


def _imports(venv: Path, code: str = "import torch, einops, filelock, tlcli, typing_extensions; "
             "torch.version, einops.__version__, filelock.__version__, tlcli.main, typing_extensions.__version__"
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv_python(venv)), "-c", code], capture_output=True, text=True)


def python312() -> str:
    """A Python 3.12 interpreter by path (pyenv's shims do not answer for versions that are not global)."""
    found = sorted(Path("/root/.pyenv/versions").glob("3.12*/bin/python3.12")) or [
        Path(p) for p in (shutil.which("python3.12"),) if p]
    if not found:
        pytest.fail("these tests need a Python 3.12 interpreter (the project's machines have /root/.pyenv/versions/3.12*)")
    return str(found[0])


def _leftovers(venv: Path) -> list[str]:
    return [p.name for p in siblings(venv) if p.exists()]


def _site(venv: Path) -> Path:
    return _venv.site_dirs(venv)[0]


def test_a_python_change_builds_beside_and_a_failure_leaves_the_old_venv(
        tmp_path: Path, index: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    before = tree(venv)
    _project(proj, index, python="3.12")
    py312 = python312()
    # the index is unreachable: offline, with an empty cache
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "empty-cache"))
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--offline", "--python", py312)
    assert code == 5, out
    assert f"rebuilding {venv}: it has Python 3.11; the lock wants Python 3.12" in out
    assert re.search(f"sync failed; {re.escape(str(venv))} is unchanged \\(checked: still Python 3.11, the same "
                     "\\d+ files, sizes and times\\)", out), out
    # the claim, checked: the same files byte for byte, still working, nothing left beside it
    assert tree(venv) == before
    assert _imports(venv).returncode == 0 and _venv.venv_python_minor(venv) == "3.11"
    assert _leftovers(venv) == []
    monkeypatch.delenv("UV_CACHE_DIR")
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--python", py312)
    assert code == 0, out
    assert "now matches target host (rebuilt)" in out
    assert _venv.venv_python_minor(venv) == "3.12" and _imports(venv).returncode == 0
    assert _leftovers(venv) == []
    # built elsewhere, moved into place: its console scripts and activation still point at it
    r = subprocess.run([str(venv / "bin" / CLI)], capture_output=True, text=True)
    assert r.stdout.strip() == "tlcli ok", r.stderr
    r = subprocess.run(["bash", "-c", f". {venv}/bin/activate && echo $VIRTUAL_ENV && command -v python"],
                       capture_output=True, text=True, check=True)
    assert r.stdout.split() == [str(venv.resolve()), str(venv.resolve() / "bin" / "python")]


def test_a_venv_that_is_a_link_is_rebuilt_where_it_points_and_keeps_its_link(tmp_path: Path,
                                                                             index: LocalIndex) -> None:
    """`.venv -> /scratch/envs/x` rebuilt (another Python): the directory it points at is replaced, the link stays
    the user's, nothing is left beside either, and the next sync removes nothing (so says nothing of it)."""
    proj = _project(tmp_path / "proj", index)
    store = tmp_path / "scratch" / "envs"
    store.mkdir(parents=True)
    venv = proj / ".venv"
    assert _run("sync", "-p", str(proj), "--no-verify", "--venv", str(store / "x"))[0] == 0
    venv.symlink_to(store / "x")
    _project(proj, index, python="3.12")
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--python", python312())
    assert code == 0 and "now matches target host (rebuilt)" in out, out
    assert venv.is_symlink() and os.readlink(venv) == str(store / "x")
    assert _venv.venv_python_minor(store / "x") == "3.12" and _imports(venv).returncode == 0
    assert sorted(p.name for p in proj.iterdir() if p.name.startswith(".")) == [".venv"], list(proj.iterdir())
    assert sorted(p.name for p in store.iterdir()) == ["x"]
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0 and "removed" not in out and "already matches" in out, out
    shutil.rmtree(store / "x")  # a link to a venv not made yet: it is made where the link points
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--python", python312())
    assert code == 0 and venv.is_symlink() and _imports(venv).returncode == 0, out
    assert sorted(p.name for p in store.iterdir()) == ["x"]


def test_a_link_an_older_rebuild_left_is_removed_and_what_it_points_at_kept(tmp_path: Path,
                                                                           index: LocalIndex) -> None:
    """An older tritonlock swapped a linked .venv's link itself aside, as `..venv.tritonlock-new`, and every later
    sync said it "removed" it. Now the link goes (and it is said once); the directory it points at stays."""
    proj = _project(tmp_path / "proj", index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    old_venv = tmp_path / "old-venv"
    old_venv.mkdir()
    (old_venv / "keep").write_text("x\n")
    stray = proj / "..venv.tritonlock-new"
    stray.symlink_to(old_venv)
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--reinstall", "einops")
    assert code == 0 and f"removed {stray}" in out and not os.path.lexists(stray), out
    assert (old_venv / "keep").read_text() == "x\n"
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--reinstall", "einops")
    assert code == 0 and "removed" not in out, out


def test_a_first_sync_that_fails_creates_nothing(tmp_path: Path, index: LocalIndex,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    proj = _project(tmp_path, index)
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "empty-cache"))
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--offline")
    assert code == 5 and f"sync failed; nothing was created ({proj / '.venv'} does not exist)" in out, out
    assert not (proj / ".venv").exists() and _leftovers(proj / ".venv") == []
    # no wheelhouse is in use: the fix names uv's cache and how it gets filled, not files to add to a wheelhouse
    assert "fix: --offline installs only from uv's cache, and it lacks these files" in out and "to the wheelhouse" not in out


def test_a_sync_killed_mid_swap_is_undone_by_the_next(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    before = tree(venv)
    new, old = siblings(venv)
    # killed between "move the old venv aside" and "move the new one in", with the new one half-built
    os.rename(venv, old)
    shutil.copytree(old, new, symlinks=True)
    shutil.rmtree(_site(new) / "torch")
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0, out
    assert f"put {venv} back" in out and f"removed {new}" in out and "already matches" in out
    assert tree(venv) == before and _imports(venv).returncode == 0 and _leftovers(venv) == []


def test_damaged_packages_are_repaired(tmp_path: Path, index: LocalIndex) -> None:
    """What a kill -9 of uv leaves: files missing, a RECORD missing, METADATA missing, two copies of one package."""
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    good = tree(venv)
    site = _site(venv)
    (site / "einops" / "__init__.py").unlink()
    (site / "filelock-3.16.1.dist-info" / "RECORD").unlink()
    (site / "filelock" / "__init__.py").unlink()
    (site / "triton-3.2.0.dist-info" / "METADATA").unlink()
    dup = site / "typing_extensions-4.0.0.dist-info"
    shutil.copytree(site / "typing_extensions-4.12.2.dist-info", dup)
    (dup / "METADATA").write_text((dup / "METADATA").read_text().replace("4.12.2", "4.0.0"))
    (venv / _venv.SYNCED).unlink()  # the stamp is removed before every install: a killed one leaves none
    assert _imports(venv).returncode != 0
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0, out
    assert re.search(r"! einops 0.8.0  \(damaged: 1 of \d+ files are missing \(einops/__init__.py\)\)", out), out
    assert "! filelock 3.16.1  (damaged: its RECORD is missing" in out
    assert "+ triton 3.2.0  (damaged: its METADATA is missing or unreadable)" in out
    assert "typing-extensions" in out and "installed twice (4.12.2 and 4.0.0" in out.replace("4.0.0 and 4.12.2",
                                                                                           "4.12.2 and 4.0.0")
    assert _imports(venv).returncode == 0
    assert _venv.venv_damage(venv) == []
    after = tree(venv)
    assert {k for k in good if ".tritonlock" not in k} == {k for k in after if ".tritonlock" not in k}
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0 and "already matches" in out


def test_damage_outranks_the_stamp_doctor_finds_it_and_the_next_sync_repairs_it(tmp_path: Path,
                                                                                  index: LocalIndex) -> None:
    """The completed-sync stamp never answers "already matches" over evidence: a file, or a whole package folder,
    deleted behind sync's back (RECORD untouched) is found by the fast path and the full path alike."""
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    site = _site(venv)
    (site / "einops" / "__init__.py").unlink()
    r = CliRunner().invoke(main, ["doctor", "-p", str(proj), "--json"])
    (f,) = [f for f in json.loads(r.output)["findings"] if f["id"] == "venv-damaged"]
    assert r.exit_code == 1 and f["severity"] == "error"
    assert f["title"] == (f"1 package in {venv} is damaged: files missing or not as their RECORD lists (an install "
                          "that was stopped half-way?)")
    assert re.fullmatch(r"einops 0\.8\.0: 1 of \d+ files are missing \(einops/__init__\.py\)", f["evidence"][0])
    assert f["fix"].startswith("`tritonlock sync`") and "reinstalls the damaged ones" in f["fix"]
    # doctor's advice, as a user runs it (the console script, whose fast path answers before the CLI loads)
    for argv in (["sync", "-p", str(proj), "--no-verify"], ["sync", "-p", str(proj), "--no-verify", "--locked"]):
        if "--locked" in argv:
            shutil.rmtree(site / "einops")  # then the whole folder
        r2 = subprocess.run([sys.executable, "-c", "from tritonlock._entry import main; main()", *argv],
                            capture_output=True, text=True)
        assert r2.returncode == 0 and "1 repaired" in r2.stdout and "already matches" not in r2.stdout, r2
        assert re.search(r"! einops 0\.8\.0  \(damaged: 1 of \d+ files are missing", r2.stdout), r2.stdout
        assert _venv.venv_damage(venv) == [] and _imports(venv).returncode == 0
    # the claim "already matches", checked: only when every package's files are there
    assert _venv.venv_damage(venv) == [] and (site / "einops" / "__init__.py").exists()
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0 and "already matches" in out and _venv.venv_damage(venv) == []
    r = CliRunner().invoke(main, ["doctor", "-p", str(proj), "--json"])
    assert "venv-damaged" not in [f["id"] for f in json.loads(r.output)["findings"]]
    # the full path (a changed lock, as `resolve --upgrade` writes) checks every package's files too
    (site / "einops" / "__init__.py").unlink()
    (venv / _venv.SYNCED).write_text((venv / _venv.SYNCED).read_text().replace('"key": "', '"key": "x'))
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0 and "1 repaired" in out and _venv.venv_damage(venv) == [], out


def test_a_partly_applied_failure_says_so(tmp_path: Path, index: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """When uv fails after it changed the venv, the message says what changed — as found, not assumed."""
    import tritonlock.environment._apply as sync

    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    _project(proj, index, extra=f'"einops", "{CLI}", "filelock==3.12.0"')

    def half(p: object, lock: object, target: object, v: Path, **kw: object) -> None:
        shutil.rmtree(_site(v) / "einops-0.8.0.dist-info")
        (_site(v) / "filelock" / "partial.py").write_text("")
        raise sync.Failed("uv: No space left on device")

    monkeypatch.setattr(sync, "install", half)
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 5
    assert f"sync failed part-way; {venv} was partly changed (removed einops-0.8.0; " in out
    assert "run `tritonlock sync` again" in out and "No space left on device" in out
    assert not (venv / _venv.SYNCED).exists()  # so the next sync checks every package in depth
    monkeypatch.undo()
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0, out
    assert _imports(venv).returncode == 0 and _venv.venv_dists(venv)["filelock"] == "3.12.0"


def test_distribution_names_never_reach_uv_as_options(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    site = _site(venv)
    stray = build_wheel(tmp_path / "w", "stray", "1.0")
    subprocess.run([sys.executable, "-m", "uv", "pip", "install", "-q", "--python", str(venv_python(venv)),
                    "--no-deps", str(stray)], check=True)
    for name in ("--all", "-r"):
        d = site / f"{name}-1.0.dist-info"
        d.mkdir()
        (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (d / "RECORD").write_text(f"{d.name}/METADATA,,\n")

    before = tree(venv)
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 5, out
    assert (f"holds distributions whose names are not valid ({site / '--all-1.0.dist-info'}, {site / '-r-1.0.dist-info'})"
            in out), out
    assert "nothing was changed" in out and tree(venv) == before and _imports(venv).returncode == 0
    for name in ("--all", "-r"):
        shutil.rmtree(site / f"{name}-1.0.dist-info")
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0 and "- stray 1.0" in out and "1 removed" in out, out
    assert not (site / "stray-1.0.dist-info").exists() and _imports(venv).returncode == 0


def test_plan_leaves_invalid_names_alone() -> None:
    from test_sync import LOCK

    p = plan(LOCK.targets[0], {"torch": "2.6.0+cpu", "filelock": "3.16.1", "-r": "1", "ok-name": "1"})
    assert [(s.name, s.action) for s in p.steps if s.action != "keep"] == [("-r", "leave"), ("ok-name", "remove")]


def test_an_unknown_target_is_bad_input(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--target", "nope")
    assert code == 2 and "has no target 'nope' (it has: host) — pass one of those to --target" in out


def test_a_stale_lock_is_named_first(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    intent = proj / "triton-env.toml"
    intent.write_text(intent.read_text().replace('"einops", ', ""))
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0
    assert out.splitlines()[0].startswith(f"warning: {proj / 'triton-env.lock'} is stale (")
    assert "run `tritonlock resolve` to update it (`sync --locked` refuses a stale lock instead)" in out
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--locked")
    assert code == 2 and "--locked refuses to sync a stale lock" in out


def _noop_imports(proj: Path, env: dict[str, str] | None = None) -> tuple[str, list[str]]:
    code = ("import sys, io, contextlib\nfrom tritonlock.cli import main\nbuf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n    try:\n"
            f"        main(['sync', '-p', {str(proj)!r}, '--no-verify'])\n    except SystemExit:\n        pass\n"
            "print(buf.getvalue().strip())\n"
            "print([m for m in ('tritonlock.environment.sync', 'tritonlock.lock.lockfile', 'tritonlock.host', 'tritonlock.compat.matrix',"
            " 'packaging.version') if m in sys.modules])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, **(env or {})})
    line, mods = r.stdout.strip().splitlines()[-2:]
    return line, eval(mods)


def test_a_noop_sync_reads_only_file_stats(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    line, mods = _noop_imports(proj)
    assert line == f"{venv} already matches target host (7 packages)" and mods == []
    # what the answer depends on changes: the full path runs (and gives the same answer, then re-stamps)
    intent = proj / "triton-env.toml"
    intent.write_text("# a comment\n" + intent.read_text())
    line, mods = _noop_imports(proj)
    assert "already matches" in line and "tritonlock.environment.sync" in mods
    assert _noop_imports(proj)[1] == []
    line, mods = _noop_imports(proj, {"TRITONLOCK_DRIVER": "550.54.15"})  # another machine, as far as sync knows
    assert "already matches" in line and "tritonlock.environment.sync" in mods
    assert "tritonlock.environment.sync" in _noop_imports(proj)[1]  # and back
    assert _noop_imports(proj)[1] == []
    # the console script answers before the CLI is imported at all (click included)…
    code = ("import sys\nfrom tritonlock._entry import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('click', 'tritonlock.cli', 'tritonlock.environment.sync', 'tritonlock.lock.lockfile', 'packaging')"
            " if m in sys.modules))")
    for argv in (["sync", "-p", str(proj), "--no-verify"], ["sync", "--no-verify", f"--project={proj}"],
                 ["sync", "--venv", str(venv), "--no-verify", "-p", str(proj)]):
        r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
        assert r.stdout.splitlines() == [f"{venv} already matches target host (7 packages)", "[]"], (argv, r.stdout)
    # …and hands every other command line to it
    for argv in (["sync", "-p", str(proj), "--no-verify", "--target", "host"],
                 ["sync", "-p", str(proj), "--no-verify", "--json"],
                 ["sync", "-p", str(proj), "--no-verify", "--dry-run"], ["--help"]):
        r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
        assert "'click'" in r.stdout.splitlines()[-1], (argv, r.stdout, r.stderr)
    subprocess.run([sys.executable, "-m", "uv", "pip", "uninstall", "-q", "--python", str(venv_python(venv)),
                    "einops"], check=True)
    r = subprocess.run([sys.executable, "-m", "tritonlock", "sync", "-p", str(proj), "--no-verify"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "+ einops 0.8.0" in r.stdout and "1 installed" in r.stdout


def test_the_plan_is_coloured_only_on_a_terminal_without_no_color(tmp_path: Path, index: LocalIndex) -> None:
    import pty

    proj = _project(tmp_path, index)

    def on_tty(extra_env: dict[str, str]) -> str:
        master, slave = pty.openpty()
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        p = subprocess.Popen([sys.executable, "-m", "tritonlock", "sync", "-p", str(proj), "--dry-run"],
                             stdout=slave, stderr=slave, env={**env, **extra_env})
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        p.wait(timeout=60)
        os.close(master)
        return b"".join(chunks).decode()

    coloured = on_tty({})
    assert "\x1b[32m  + torch 2.6.0+cpu" in coloured and "\x1b[1mplan for target host" in coloured
    plain = on_tty({"NO_COLOR": "1"})
    assert "+ torch 2.6.0+cpu" in plain and "\x1b[" not in plain
    code, out = _run("sync", "-p", str(proj), "--dry-run")
    assert "+ torch 2.6.0+cpu" in out and "\x1b[" not in out


def test_a_directory_that_is_not_a_venv_is_never_replaced(tmp_path: Path, index: LocalIndex) -> None:
    proj = _project(tmp_path / "p", index)
    mine = tmp_path / "my-files"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--venv", str(mine))
    assert code == 2 and f"{mine} exists and is not a virtual environment (no pyvenv.cfg)" in out
    assert [p.name for p in mine.iterdir()] == ["thesis.tex"] and _leftovers(mine) == []
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--python", str(tmp_path / "nope" / "python"))
    assert code == 2 and "no such interpreter" in out and not (proj / ".venv").exists()


def test_a_swap_that_fails_half_way_puts_the_old_venv_back(tmp_path: Path, index: LocalIndex,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Where one atomic exchange is not available, the swap is two renames; the second one failing must not lose
    the old venv (nor leave the path empty)."""
    import tritonlock.environment._apply as apply_mod

    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    before = tree(venv)
    _project(proj, index, python="3.12")
    calls = []
    real_rename = os.rename

    def rename(a: object, b: object) -> None:
        calls.append((a, b))
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_rename(a, b)  # type: ignore[arg-type]

    monkeypatch.setattr(apply_mod, "exchange", lambda a, b: False)
    monkeypatch.setattr(apply_mod.os, "rename", rename)
    code, out = _run("sync", "-p", str(proj), "--no-verify", "--python", python312())
    monkeypatch.undo()
    assert code == 5, out
    assert calls[:2] == [(venv, siblings(venv)[1]), (siblings(venv)[0], venv)]
    assert re.search(f"sync failed; {re.escape(str(venv))} is unchanged \\(checked: still Python 3.11", out), out
    assert "No space left on device" in out
    assert tree(venv) == before and _imports(venv).returncode == 0 and _leftovers(venv) == []


@pytest.mark.parametrize("made,synced", [
    ('{"format": 1, "python": "3.11", "system-site-packages": true, "base-python": 5, "base-sites": 7}',
     '{"format": 1, "key": "x", "target": "host", "packages": 1, "system-site-packages": true, "dists": [], '
     '"base": 3, "cfg": ""}'),
    ("[" * 100000, "{" * 100000),
    ('{"format": 1, "python": "3.11", "system-site-packages": false, "base-python": null, "base-sites": [1]}',
     '{"format": 1, "key": null, "target": "host", "packages": 1, "system-site-packages": false, '
     '"dists": {"a": "b"}, "base": [[2]], "cfg": ""}'),
])
def test_markers_edited_by_hand_are_ignored_not_trusted(tmp_path: Path, index: LocalIndex, made: str,
                                                        synced: str) -> None:
    proj = _project(tmp_path, index)
    assert _run("sync", "-p", str(proj), "--no-verify")[0] == 0
    venv = proj / ".venv"
    (venv / _venv.MADE).write_text(made)
    (venv / _venv.SYNCED).write_text(synced)
    (_site(venv) / "einops" / "__init__.py").unlink()  # an untrusted stamp means: check every package
    r = subprocess.run([sys.executable, "-m", "tritonlock", "sync", "-p", str(proj), "--no-verify"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "1 repaired" in r.stdout and _imports(venv).returncode == 0
