"""README.md and the manual in docs/ are real: every `tritonlock …` command they show in a fenced block is run here
(against the repository's examples, a project locked against the tests' local index, or `--dry-run` forms that need no
network) or listed as not run with the reason; the JSON and text they show come from real runs (with "..." marking
what is left out); their links lead somewhere; the README stays a front door (two opening commands, short lines)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = {p.name: p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))}
PAGES = {"README.md": README, **{f"docs/{name}": text for name, text in DOCS.items()}}
EXAMPLES = ROOT / "examples"
PY = f"{sys.version_info.major}.{sys.version_info.minor}"


# ---------------------------------------------------------------- the commands the pages show

@dataclass(frozen=True)
class Run:
    """Run the command as written, in `where`, and expect exit code `code`.

    where: "repo" — the repository's root (examples/; nothing is written there); "project" — a copy of a project
    locked against the local test index (targets a100 and laptop from hosts/*.toml, einops; tritonlock-reports/1234
    holds one node's report); "new" — an empty directory; "init" — an empty directory on a machine where only the
    default index (the local one) answers, as on one that reaches only PyPI; "pyproject" — that, with a
    pyproject.toml holding [project] dependencies."""

    where: str
    code: int = 0
    process: bool = False  # in a process of its own (`run` execs the command in tritonlock's place)


REPO, PROJECT, NEW = Run("repo"), Run("project"), Run("new")
PROCESS = Run("project", process=True)

RUN: dict[str, Run] = {
    # README.md
    "tritonlock init": Run("init"),
    "tritonlock resolve": PROJECT,
    "tritonlock check": PROJECT,
    "tritonlock host --save hosts/laptop.toml --name laptop": NEW,
    "tritonlock host --save hosts/a100.toml --name a100-cluster --driver 535.104.05 --gpus A100,A100 --glibc 2.31 "
    "--python 3.10": NEW,
    # docs/intent.md
    "tritonlock init --pyproject": Run("pyproject"),
    "tritonlock host --save hosts/a100.toml --name a100-cluster --driver 535.104.05 --gpus A100,A100 --glibc 2.31": NEW,
    # docs/decision.md
    "tritonlock resolve --dry-run --project examples/clusters": REPO,
    "tritonlock why --project examples/clusters": REPO,
    "tritonlock resolve --dry-run --packages": PROJECT,
    "tritonlock why --project examples/clusters --target a100-cluster --torch 2.15 --sources": REPO,
    # docs/lock.md
    "tritonlock resolve --upgrade": PROJECT,
    "tritonlock resolve --target-file hosts/a100.toml": PROJECT,
    "tritonlock show": PROJECT,
    "tritonlock show --target a100 --json": PROJECT,
    # docs/sync.md
    "tritonlock sync --dry-run": PROJECT,
    "tritonlock sync --locked --no-verify": PROJECT,
    "tritonlock sync --target laptop --dry-run": PROJECT,
    "tritonlock sync --reinstall torch --no-verify": PROJECT,
    "tritonlock sync --offline --dry-run": PROJECT,
    # docs/doctor.md
    "tritonlock doctor": PROJECT,
    "tritonlock doctor --json": PROJECT,
    # docs/export.md
    "tritonlock export --format pylock -o pylock.toml": PROJECT,
    "tritonlock export --format requirements -o requirements.txt": PROJECT,
    "tritonlock export --format dockerfile --target a100 -o Dockerfile": PROJECT,
    "tritonlock export --format devcontainer": PROJECT,
    "tritonlock export --format uv -o pyproject.toml": PROJECT,
    "tritonlock export --format pixi -o pixi.toml": PROJECT,
    "tritonlock export --format wheelhouse --target a100 -o wheelhouse/": PROJECT,
    "tritonlock export --format slurm --nodes 4 --partition gpu -o verify.sbatch": PROJECT,
    "tritonlock export --format k8s --image registry.example/tritonlock:1 --nodes 4 -o verify.yaml": PROJECT,
    # docs/fleets.md
    "tritonlock resolve --dry-run -p examples/fleet": REPO,
    "tritonlock host": REPO,
    "tritonlock host --json": REPO,
    "tritonlock host --save hosts/NAME.toml": NEW,
    "TRITONLOCK_GPUS=8.9 TRITONLOCK_DRIVER=550.54.15 tritonlock host": REPO,
    "tritonlock check --json": PROJECT,
    "tritonlock check --host --require-verified": Run("project", 1),  # never verified: one problem per target
    "tritonlock export --format slurm --nodes 8 --array --sync-args \"--offline --find-links /shared/wheelhouse\" "
    "-o verify.sbatch": PROJECT,
    "tritonlock report merge tritonlock-reports/1234": Run("project", 1),  # the node's sync failed
    "tritonlock report merge tritonlock-reports/1234 --expect 4 --html report.html --update-records": Run("project", 1),
    "tritonlock report bands": Run("project", 2),  # no records yet: exit 2
    # README.md's first session (also run as one session, in order: test_the_readme_session_runs_in_order)
    "tritonlock add einops": PROJECT,
    "tritonlock run -- python -c \"import torch, einops; print(torch.__version__)\"": PROCESS,
    "tritonlock tree --invert typing-extensions": PROJECT,
    # docs/add.md
    "tritonlock add numpy": PROJECT,
    "tritonlock add \"einops>=0.8\" --no-sync": PROJECT,
    "tritonlock add \"einops[torch]; sys_platform == 'linux'\"": PROJECT,
    "tritonlock remove einops": PROJECT,
    # docs/lock.md
    "tritonlock resolve --upgrade-package einops": PROJECT,
    "tritonlock resolve -P torch -P einops": PROJECT,
    # docs/run.md
    "tritonlock run -- python -c \"import torch; print(torch.__version__)\"": PROCESS,
    "tritonlock run --no-sync -- python -c \"import torch\"": Run("project", 2, process=True),  # no .venv yet
    "tritonlock run --target laptop -- python -c \"import einops\"": PROCESS,
    # docs/sync.md
    "tritonlock sync --no-install-project --no-verify": PROJECT,
    # docs/tree.md
    "tritonlock tree": PROJECT,
    "tritonlock tree --target a100 torch --depth 1": PROJECT,
    "tritonlock tree --json": PROJECT,
    # docs/amd-intel.md
    "tritonlock resolve --dry-run -p examples/amd": REPO,
    "tritonlock why -p examples/amd --target mi300x": REPO,
    "TRITONLOCK_GPUS=gfx942 TRITONLOCK_AMDGPU=6.4 tritonlock host": REPO,
}

NOT_RUN: dict[str, str] = {
    "python3 -m venv .venv && . .venv/bin/activate && pip install . && tritonlock resolve --project examples/pypi "
    "&& tritonlock show --project examples/pypi":
        "README's set-up: installs tritonlock into a venv and locks examples/pypi from PyPI (network); "
        "test_readme_opens_with_set_up_and_the_tests checks its shape, and a fresh clone runs it before a release",
    "tritonlock sync":
        "installs torch for real (GBs from the network) and runs verify's kernels on it; tests/test_sync*.py and "
        "tests/test_verify.py run sync and verify on real venvs with real torch",
    "tritonlock verify": "needs a venv with real torch and Triton; tests/test_verify.py runs it",
    "tritonlock verify --quick": "needs a venv with real torch and Triton; tests/test_verify.py runs it",
    "tritonlock verify --record": "needs real torch; tests/test_check.py and tests/test_cli_sync.py record real runs",
    "tritonlock verify --python /opt/conda/bin/python --json": "an interpreter of the reader's own (a conda Python)",
    "tritonlock verify --seed 2730376912": "needs a venv with real torch and Triton; "
                                         "tests/test_verify_bounds.py runs verify --seed and repeats a run's inputs",
    "tritonlock sync --find-links wheelhouse/":
        "installs and verifies real torch from a wheelhouse; tests/test_wheelhouse.py stops the index and syncs from one",
    "gpu-node$ tritonlock sync --find-links wheelhouse/": "on the GPU node of the air-gapped example (as above)",
    "tritonlock fleet hosts --slurm --nodes 4 --partition gpu":
        "needs a Slurm cluster; tests/test_fleet_slurm.py runs it on slurmctld/slurmd started on loopback",
    "tritonlock compat check": "needs the live indexes (network); tests/test_compat_live.py runs it with -m network",
    "tritonlock compat check --wheels all": "needs the live indexes (network), about two minutes",
    "tritonlock compat check --versions 2.15.0,3.9.0 --json": "needs the live indexes (network)",
    "tritonlock compat check --new -o draft.toml": "needs the live indexes (network); tests/test_releaseday.py "
                                                   "runs it against a local index",
}


def _strip_comment(line: str) -> str:
    """The line without a shell comment (a # that starts a word outside quotes)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


PROMPT = re.compile(r"^\S*\$ ")  # "$ " or "gpu-node$ "


def fenced_commands(text: str) -> Iterator[str]:
    """Each command line of the page's bash/sh/console blocks (continuations joined, comments dropped); in a
    session with prompts, only what follows a prompt (the rest is output)."""
    for lang, body in re.findall(r"^```([a-z]*)\n(.*?)^```", text, re.M | re.S):
        if lang not in ("", "bash", "sh", "shell", "console"):
            continue
        lines = body.splitlines()
        prompted = lang == "console" or any(PROMPT.match(x) for x in lines)
        cmds: list[str] = []
        for raw in lines:
            line = _strip_comment(raw).strip()
            if cmds and cmds[-1].endswith("\\"):
                cmds[-1] = cmds[-1][:-1].rstrip() + " " + line
            elif line and (not prompted or PROMPT.match(raw)):
                cmds.append(line)
        for cmd in cmds:
            yield re.sub(r"^\$ ", "", " ".join(cmd.split()))


def _is_tritonlock(cmd: str) -> bool:
    """Whether a part of the command line (between &&) runs tritonlock, after any VAR=value assignments."""
    return any(re.match(r"(\S*\$ )?([A-Z_]+=\S+ )*tritonlock( |$)", part.strip()) for part in cmd.split("&&"))


def doc_examples() -> dict[str, list[str]]:
    """command → the pages that show it (only commands that run tritonlock)."""
    out: dict[str, list[str]] = {}
    for page, text in PAGES.items():
        for cmd in fenced_commands(text):
            if _is_tritonlock(cmd):
                out.setdefault(cmd, []).append(page)
    return out


EXAMPLES_SHOWN = doc_examples()


def test_every_command_example_is_run_or_says_why_not() -> None:
    """A new example on a page needs its line here (run, or the reason it is not); a line whose example left the
    pages goes too. So no page shows a command the tests never tried."""
    unlisted = sorted(c for c in EXAMPLES_SHOWN if c not in RUN and c not in NOT_RUN)
    assert not unlisted, f"commands on the pages that test_readme neither runs nor excuses: {unlisted}"
    gone = sorted(c for c in [*RUN, *NOT_RUN] if c not in EXAMPLES_SHOWN)
    assert not gone, f"listed in test_readme but on no page: {gone}"
    assert not set(RUN) & set(NOT_RUN)
    assert all(why for c, why in NOT_RUN.items() if _is_tritonlock(c)), "a command not run needs its reason"


# ---------------------------------------------------------------- where they run

def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def _intent(root: Path, idx: LocalIndex) -> None:
    write_intent(root, idx, f'target-files = ["hosts/*.toml"]\n\n[environment]\npython = "{PY}"\ntorch = "==2.6.0"\n'
                            'packages = ["einops"]\n')
    (root / "hosts").mkdir()  # as `tritonlock host --save` writes them
    (root / "hosts" / "a100.toml").write_text(
        '# 2x A100; detected by tritonlock host\n[[targets]]\nname = "a100"\nos = "linux"\narch = "x86_64"\n'
        f'glibc = "2.31"\npython = "{PY}"\ndriver = "550.54.15"\ngpus = ["8.0", "8.0"]\n', encoding="utf-8")
    (root / "hosts" / "laptop.toml").write_text(
        '# no NVIDIA GPU (CPU target); detected by tritonlock host\n[[targets]]\nname = "laptop"\nos = "linux"\n'
        f'arch = "x86_64"\npython = "{PY}"\ngpus = []\n', encoding="utf-8")


@pytest.fixture(scope="module")
def cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def isolated(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tritonlock's user caches (matrix, host, native facts, check answers) in a folder of the tests' own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory, local_index: LocalIndex, cache_home: Path) -> Path:
    """One project, locked once, that every "project" command gets a fresh copy of."""
    root = tmp_path_factory.mktemp("locked") / "my-project"
    _intent(root, local_index)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(cache_home))
        code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    reports = root / "tritonlock-reports" / "1234"
    reports.mkdir(parents=True)
    (reports / "node-a.started").write_text("node-a\n")
    (reports / "node-a.sync.rc").write_text("5\n")
    (reports / "node-a.sync.log").write_text("error: no target in triton-env.lock fits this host\n")
    return root


def _only_the_default_index_answers(monkeypatch: pytest.MonkeyPatch, idx: LocalIndex) -> None:
    """As on a machine that reaches only PyPI: PyTorch's index at a closed port, the default index the local one."""
    from tritonlock.compat.matrix import Matrix
    from tritonlock.lock.index import default_index

    default_index.cache_clear()
    monkeypatch.setenv("PIP_INDEX_URL", idx.index_url("simple"))
    monkeypatch.setattr(Matrix, "index_url", lambda self, backend: f"http://127.0.0.1:9/whl/{backend}")


def _place(where: str, tmp_path: Path, locked: Path, idx: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> Path:
    if where == "repo":
        return ROOT
    if where == "project":
        shutil.copytree(locked, tmp_path / "my-project", symlinks=True)
        return tmp_path / "my-project"
    here = tmp_path / "my-project"
    here.mkdir()
    if where in ("init", "pyproject"):
        _only_the_default_index_answers(monkeypatch, idx)
    if where == "pyproject":
        (here / "pyproject.toml").write_text('[project]\nname = "mymodel"\nversion = "0.1"\n'
                                             'dependencies = ["torch>=2.6", "einops>=0.8"]\n', encoding="utf-8")
    return here


def _words(cmd: str) -> list[list[str]]:
    """The tritonlock invocations of a command line, with their environment assignments kept in front."""
    return [shlex.split(part) for part in cmd.split("&&")]


@pytest.mark.usefixtures("isolated")
@pytest.mark.parametrize("cmd", sorted(RUN), ids=lambda c: c[:90])
def test_the_command_the_pages_show_runs(cmd: str, tmp_path: Path, locked: Path, local_index: LocalIndex,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    how = RUN[cmd]
    here = _place(how.where, tmp_path, locked, local_index, monkeypatch)
    monkeypatch.chdir(here)
    before = _files(EXAMPLES)
    for words in _words(cmd):
        while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
            name, value = words.pop(0).split("=", 1)
            monkeypatch.setenv(name, value)
        assert words[0] == "tritonlock", cmd
        code, out = _process(here, *words[1:]) if how.process else _run(*words[1:])
        assert "Traceback" not in out and "No such option" not in out and "Usage:" not in out, out
        assert code == how.code, f"{cmd}: exit {code}, the pages' example expects {how.code}:\n{out}"
    assert _files(EXAMPLES) == before, "a command the pages show changed the repository's examples"


def _process(here: Path, *args: str) -> tuple[int, str]:
    """The console script in its own process, in `here` (what `run` execs replaces that process, not the tests')."""
    import subprocess

    import os

    import tritonlock

    # (the tree the test process imports: the no-op check keys a venv by the code's own files, so the in-process
    # `add` that synced it and this process must be the same tritonlock — a clone's, not pip's copy of it)
    source = str(Path(tritonlock.__file__).resolve().parents[1])
    r = subprocess.run([sys.executable, "-m", "tritonlock", *args], cwd=here, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": source})
    return r.returncode, r.stdout + r.stderr


@pytest.mark.usefixtures("isolated")
def test_the_readme_session_runs_in_order(tmp_path: Path, local_index: LocalIndex,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """README's first session, one command after another in one new project, on a machine where only the default
    index answers (as one that reaches only PyPI): init, add, run, tree — each as the page shows it (sync runs real
    torch's kernels: tests/test_sync_noop.py runs that twice)."""
    block = README.split("Then, in a project of your own", 1)[1].split("```console\n", 1)[1].split("\n```", 1)[0]
    cmds = list(fenced_commands("```console\n" + block + "\n```\n"))
    assert [c.split()[1] for c in cmds] == ["init", "add", "run", "tree", "sync"]
    here = _place("init", tmp_path, tmp_path, local_index, monkeypatch)
    monkeypatch.chdir(here)
    for cmd in cmds:
        if cmd in NOT_RUN:
            continue
        words = shlex.split(cmd)
        code, out = _process(here, *words[1:]) if RUN[cmd].process else _run(*words[1:])
        assert code == 0 and "Traceback" not in out, f"{cmd}:\n{out}"
        if words[1] == "run":
            assert out.splitlines()[-1] == "2.6.0", out  # the command's own output, from the venv's torch
        if words[1] == "tree":
            assert out == "typing-extensions v4.12.2\n└── einops v0.8.0 (requested: einops)\n", out
    assert "einops" in (here / "triton-env.toml").read_text()


@pytest.mark.usefixtures("isolated")
def test_the_tree_shown_is_a_real_run(tmp_path: Path, locked: Path) -> None:
    shutil.copytree(locked, tmp_path / "p")
    code, out = _run("tree", "--invert", "typing-extensions", "-p", str(tmp_path / "p"))
    assert code == 0 and out == _text_after("docs/tree.md", "`tree --invert typing-extensions`:") + "\n", out


def _files(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p), p.stat().st_mtime_ns) for p in root.rglob("*"))


# ---------------------------------------------------------------- what they print

def _block_after(page: str, heading: str, fence: str = "```json\n") -> Any:
    section = PAGES[page].split(heading, 1)[1]
    return json.loads(section.split(fence, 1)[1].split("\n```", 1)[0])


def _text_after(page: str, heading: str, fence: str = "```text\n") -> str:
    return PAGES[page].split(heading, 1)[1].split(fence, 1)[1].split("\n```", 1)[0]


def _shown(shown: Any, real: Any, where: str = "$") -> None:
    """`shown` is `real` with parts left out: "..." as a string (or a list item) stands for anything, a string
    with "..." in it for the text between its pieces, a "..." key for the keys not shown."""
    if isinstance(shown, str) and "..." in shown:
        assert isinstance(real, str), where
        pos = 0
        for piece in shown.split("..."):
            found = real.find(piece, pos)
            assert found >= 0, f"{where}: the page shows {piece!r}, the real run says {real!r}"
            pos = found + len(piece)
    elif isinstance(shown, list):
        assert isinstance(real, list), where
        i = 0
        for n, item in enumerate(shown):
            if item == "...":
                continue
            while i < len(real):
                try:
                    _shown(item, real[i], f"{where}[{n}]")
                    break
                except AssertionError:
                    i += 1
            assert i < len(real), f"{where}[{n}]: the page shows {item!r}; the real run has no such item (in order)"
            i += 1
    elif isinstance(shown, dict):
        assert isinstance(real, dict), where
        keys = set(shown) - {"..."}
        assert keys <= set(real), f"{where}: the page shows keys {sorted(keys - set(real))} the real run lacks"
        if "..." not in shown:
            assert keys == set(real), f"{where}: the real run also has {sorted(set(real) - keys)}"
        for k in keys:
            _shown(shown[k], real[k], f"{where}.{k}")
    else:
        assert shown == real, f"{where}: the page shows {shown!r}, the real run says {real!r}"


def _lines_shown(shown: str, real: str) -> None:
    """Every line the page shows is a line of the real output, in order ("..." and "…" lines stand for others)."""
    real_lines = real.splitlines()
    i = 0
    for line in shown.splitlines():
        if line.strip() in ("...", "…"):
            continue
        while i < len(real_lines) and real_lines[i] != line:
            i += 1
        assert i < len(real_lines), f"the page shows {line!r}; the real run has no such line (in order):\n{real}"
        i += 1


def _old_box(tmp_path: Path) -> Path:
    """examples/clusters' A100 cluster beside a GTX 1080 box on driver 470, as docs/lock.md says."""
    clusters = (EXAMPLES / "clusters" / "triton-env.toml").read_text(encoding="utf-8")
    a100 = clusters[clusters.index('[[targets]]                 # the shared A100'):].split("\n\n", 1)[0]
    env = clusters[clusters.index("[environment]"):].split("\n\n", 1)[0]
    (tmp_path / "triton-env.toml").write_text(f'{env}\n\n{a100}\n\n[[targets]]\nname = "old-box"\nglibc = "2.35"\n'
                                              'driver = "470.82.01"\ngpus = ["6.1"]\n')
    return tmp_path


def test_the_dry_run_json_is_a_real_run(tmp_path: Path) -> None:
    code, out = _run("resolve", "--dry-run", "--json", "-p", str(_old_box(tmp_path)))
    assert code == 3, out  # exit 3 when any target has a conflict
    _shown(_block_after("docs/lock.md", "### `resolve --dry-run --json`"), json.loads(out))


def test_the_conflict_shown_is_a_real_run(tmp_path: Path) -> None:
    code, out = _run("resolve", "--dry-run", "-p", str(_old_box(tmp_path)))
    assert code == 3, out
    _lines_shown(_text_after("docs/decision.md", "**Conflicts.**"), out)


def test_the_decision_shown_is_a_real_run() -> None:
    code, out = _run("resolve", "--dry-run", "-p", str(EXAMPLES / "clusters"))
    assert code == 0, out
    _lines_shown(_text_after("docs/decision.md", "also name each newer release passed over"), out)


def test_the_why_json_is_a_real_run() -> None:
    code, out = _run("why", "--json", "-p", str(EXAMPLES / "clusters"))
    assert code == 0, out
    _shown(_block_after("docs/decision.md", "--json` is a public contract:"), json.loads(out))


@pytest.mark.usefixtures("isolated")
def test_the_lock_contracts_are_real_runs(tmp_path: Path, locked: Path) -> None:
    """resolve --json (from no lock), show --json, check --json and sync --dry-run --json on the locked project."""
    project = tmp_path / "p"
    shutil.copytree(locked, project)
    code, out = _run("show", "--json", "-p", str(project))
    assert code == 0, out
    _shown(_block_after("docs/lock.md", "### `show --json`"), json.loads(out))
    code, out = _run("check", "--json", "-p", str(project))
    assert code == 0, out
    _shown(_block_after("docs/lock.md", "### `check --json`"), json.loads(out))
    listed = PAGES["docs/lock.md"].split("### `check --json`", 1)[1].split("`:", 1)[0]
    keys = set(re.findall(r'"([a-z_]+)"', listed)) - {"kind", "target", "message"}
    assert keys == set(json.loads(out)), "the keys check --json is said to have are its keys"
    code, out = _run("sync", "--dry-run", "--json", "-p", str(project))
    assert code == 0, out
    _shown(_block_after("docs/sync.md", "## JSON"), json.loads(out))
    (project / "triton-env.lock").unlink()
    code, out = _run("resolve", "--json", "-p", str(project))
    assert code == 0, out
    _shown(_block_after("docs/lock.md", "### `resolve --json`"), json.loads(out))


def test_the_check_kinds_listed_are_the_kinds_check_has() -> None:
    from tritonlock import check

    kinds = set(re.findall(r'Problem\(kind="([a-z]+)"', Path(check.__file__).read_text(encoding="utf-8")))
    listed = PAGES["docs/lock.md"].split("`kind` is ", 1)[1].split(";", 1)[0]
    assert set(re.findall(r"`([a-z]+)`", listed)) == kinds


def test_the_intent_errors_shown_are_a_real_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = PAGES["docs/intent.md"]
    section = page.split("## Errors", 1)[1]
    intent = section.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "triton-env.toml").write_text(intent, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out = _run("resolve", "--dry-run")
    assert code == 2
    assert out.strip() == section.split("```text\n", 1)[1].split("\n```", 1)[0].strip()


def test_every_key_the_intent_reads_is_on_its_page() -> None:
    """docs/intent.md names every key of triton-env.toml, [[targets]], [[package-builds]] and [tool.tritonlock]."""
    from tritonlock.intent import read as intent
    from tritonlock.intent import targets

    page = PAGES["docs/intent.md"]
    keys = {*intent._ENV_KEYS, *intent._INDEX_KEYS, *targets._TARGET_KEYS, *intent._BUILD_KEYS,
            "target-files", "package-builds", "extras"}
    missing = sorted(k for k in keys if not any(f in page for f in (f"`{k}`", f"{k} =", f"[[{k}]]", f"[{k}]")))
    assert not missing, f"docs/intent.md does not name {missing}"


# ---------------------------------------------------------------- links and the front door

def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(text: str) -> set[str]:
    body = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", body, re.M)}


@pytest.mark.parametrize("page", [*PAGES, "CONTRIBUTING.md"])
def test_the_links_lead_somewhere(page: str) -> None:
    path = ROOT / page
    text = path.read_text(encoding="utf-8")
    body = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", body):
        if re.match(r"[a-z]+://", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        assert dest.exists(), f"{page}: a link to {target}, which is not there"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest.read_text(encoding="utf-8")), f"{page}: no heading for #{anchor} in {file}"


def test_the_readme_is_a_front_door() -> None:
    lines = README.splitlines()
    assert len(lines) <= 250
    long = [(n + 1, len(x)) for n, x in enumerate(lines) if len(x) > 120]
    assert not long, f"README lines over 120 characters: {long}"


def test_readme_opens_with_set_up_and_the_tests() -> None:
    """The first fenced command installs tritonlock and runs the main job on an example; the second runs the tests,
    and CI (.ci/run) runs that same test command."""
    first, second = list(fenced_commands(README))[:2]
    assert first.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install . && ")
    assert "tritonlock resolve --project examples/pypi" in first and "tritonlock show --project examples/pypi" in first
    assert second == "pip install '.[test]' && python -m pytest -q"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert second in ci, "CI must run the README's test command as it is written"
    assert second == list(fenced_commands(README[README.index("\n## Tests\n"):]))[0], "the Tests section shows it too"


def test_ci_examples_install_tritonlock_from_where_it_is() -> None:
    """tritonlock is not on PyPI: `pip install tritonlock==0.1.0` in the CI examples failed for everyone who copied
    them. They install it from one variable that says where it comes from."""
    for name in ("github-actions.yml", "gitlab-ci.yml"):
        text = (EXAMPLES / "ci" / name).read_text(encoding="utf-8")
        assert "tritonlock==" not in text, name
        installs = re.findall(r"pip install (.+)", text)
        assert installs and all(i.strip() == '"$TRITONLOCK"' for i in installs), (name, installs)
        assert 'TRITONLOCK: "tritonlock @ git+https://' in text and "not published on PyPI" in text


def test_the_wheel_the_install_section_names_is_the_one_pip_wheel_builds() -> None:
    """README's tool install names the wheel `pip wheel --no-deps . -w dist/` writes: its version is pyproject's, so
    a release that bumps the version and not the README fails here, not in a newcomer's pipx."""
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"dist/(tritonlock-[^\s]+\.whl)", text))
    assert named == {f"tritonlock-{version}-py3-none-any.whl"}, named
