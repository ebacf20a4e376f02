"""Hostile input: every malformed intent, lock, override or setting gets one clean error and exit 2 — never a
traceback, never a hang, never a conflict (3) for what is really bad input. (How fast such input is answered is
measured in bench/hostile_bench.py, not asserted here: a timed assertion fails on a busy machine.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tritonlock.cli import main

DEEP = "[" * 1000 + "]" * 1000


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), env=env)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.output


def _unless_it_hangs(*args: str) -> tuple[int, str]:
    """The command in its own process, which must end by itself: a read that blocks forever (a FIFO) is the bug
    this catches. The bound is not a speed limit — it is far past any answer — only where waiting stops."""
    import subprocess
    import sys

    try:
        p = subprocess.run([sys.executable, "-m", "tritonlock", *args], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"`tritonlock {' '.join(args)}` never ended (a read that blocks?)") from None
    return p.returncode, p.stdout + p.stderr


@pytest.mark.parametrize("body, expected", [
    (f"x = {DEEP}\n", "TOML syntax error: arrays or tables nested too deeply"),
    (f"[environment]\npackages = {DEEP}\n", "nested too deeply"),
    ('[[targets]]\nname = "a"\nglibc = "2.٣١"\n', "targets[0].glibc: '2.٣١' is not a glibc version"),
    ('[[targets]]\nname = "a"\ndriver = "٥٣٥.104.05"\n', "targets[0].driver: '٥٣٥.104.05' is not an NVIDIA driver"),
    ('[[targets]]\nname = "a"\ndriver = "535.104.05\\n"\n', "targets[0].driver: '535.104.05\\n' is not an NVIDIA"),
    ('[[targets]]\nname = "a"\ndriver = "550.54.15"\ngpus = ["٨.٠"]\n', "targets[0].gpus[0]: unknown GPU '٨.٠'"),
    ('[environment]\npython = "3.١٢"\n', "environment.python: '3.١٢' is not a valid PEP 440 version specifier"),
    ('[environment]\ntorch = "2.٣"\n', "environment.torch: '2.٣' is not a valid PEP 440"),
    ('[environment]\ncuda = "cu١٢٦"\n', "environment.cuda: 'cu١٢٦' is not a valid PEP 440"),
    ('[indexes]\ntorch = "https://x.example/{nope}"\n', "indexes.torch: 'https://x.example/{nope}' has a brace"),
    ('[indexes]\ntorch = "https://x.example/{0}"\n', "indexes.torch: 'https://x.example/{0}' has a brace"),
    ('[indexes]\ntorch = "https://x.example/}{backend}"\n', "has a brace that is not {backend}"),
    ('[indexes]\ndefault = "https://x.example/{backend}"\n', "indexes.default: "),
    ('[indexes]\ndefault = "https://"\n', "indexes.default: 'https://' names no valid host"),
    ('[indexes]\ndefault = "https://exa mple.com"\n', "indexes.default: 'https://exa mple.com' has spaces"),
    ('[indexes]\ndefault = "https://x.example/simple\\n"\n', "has spaces, newlines or control characters"),
    ('[indexes]\ndefault = "http://[::1/simple"\n', "is not a valid URL (bad host, port or brackets)"),
    ('[indexes]\ndefault = "https://x.example:99999/simple"\n', "is not a valid URL"),
    ('[indexes]\ndefault = "ftp://x.example/simple"\n', "is not an http(s):// or file:// URL"),
    ('[environment]\npackages = ["-rfoo"]\n', "environment.packages[0]: '-rfoo' is not a valid requirement"),
    ('[environment]\npackages = ["--index-url=http://evil"]\n', "is not a valid requirement"),
    ('[environment]\npackages = ["a @ http://[::1/a.whl"]\n', "its URL is not a valid URL"),
    ('[environment]\npackages = ["a @ https://u:tok@x.example/a-1-py3-none-any.whl"]\n', "its URL carries credentials"),
    # a token or a signature in the query, or in a fragment that is not the file's hash: refused, and never shown
    ('[environment]\npackages = ["a @ https://x.example/a-1-py3-none-any.whl?token=S3CRET-T0KEN"]\n',
     "'a @ https://x.example/a-1-py3-none-any.whl?***': its URL has a query (?…), which would be written into the "
     "lock — a token or a signature there is a secret — name the file by a plain http(s):// or file:// URL"),
    ('[environment]\npackages = ["a @ https://x.example/a-1-py3-none-any.whl?X-Amz-Signature=S3CRET-T0KEN&b=1"]\n',
     "a-1-py3-none-any.whl?***': its URL has a query (?…)"),
    ('[environment]\npackages = ["a @ https://x.example/a-1-py3-none-any.whl#token=S3CRET-T0KEN"]\n',
     "a-1-py3-none-any.whl#***': its URL has a fragment (#…) that is not a file hash"),
    ('[environment]\npackages = ["a @ https://x.example/a-1-py3-none-any.whl?x#sha256=S3CRET-T0KEN"]\n',
     "a-1-py3-none-any.whl?***#***': its URL has a query (?…)"),
    ('[[targets]]\nname = "a\\nb"\n', "targets[0].name: 'a\\nb' is not a usable target name"),
    ('[[targets]]\nname = ""\n', "targets[0].name: '' is not a usable target name"),
    ('[environment]\npython = 1979-05-27\n', "environment.python: expected a string, got date"),
    ('[[targets]]\nname = "a"\ndriver = 99999999999999999999999\n', "targets[0].driver: expected a string, got int"),
])
def test_bad_intent_is_one_clean_error_exit_2(tmp_path: Path, body: str, expected: str) -> None:
    (tmp_path / "triton-env.toml").write_text(body, encoding="utf-8")
    for args in (("resolve", "--dry-run"), ("resolve", "--dry-run", "--json"), ("resolve",)):
        code, out = _run(*args, "-p", str(tmp_path))
        assert code == 2, out
        assert out.startswith("error: ") and expected in out, out
        assert "Traceback" not in out and len(out.splitlines()) == 1, out
        assert "S3CRET" not in out, out


def test_a_bom_is_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "triton-env.toml").write_text('\ufeff[environment]\npython = "3.11"\n', encoding="utf-8")
    code, out = _run("resolve", "--dry-run", "--json", "-p", str(tmp_path))
    assert code == 0, out


@pytest.mark.parametrize("body", [
    "".join(f"k{i} = 1\n" for i in range(5000)),
    "[environment]\n" + "".join(f"k{i} = 1\n" for i in range(5000)),
    "".join(f'[[targets]]\nname = "t{i}"\ndriver = "x"\ngpus = ["nope"]\n' for i in range(3000)),
    "[environment]\npackages = [" + ", ".join('"-x"' for _ in range(5000)) + "]\n",
])
def test_thousands_of_problems_are_capped(tmp_path: Path, body: str) -> None:
    (tmp_path / "triton-env.toml").write_text(body, encoding="utf-8")
    code, out = _run("resolve", "--dry-run", "-p", str(tmp_path))
    assert code == 2 and "Traceback" not in out
    lines = out.splitlines()
    assert lines[0].startswith("error: ") and "problems in" in lines[0]
    assert len(lines) == 22 and lines[-1].startswith("  … and ") and lines[-1].endswith(" more"), lines[-3:]


def test_the_first_problem_keeps_its_line_number(tmp_path: Path) -> None:
    body = '[environment]\npython = "3.11"\n\n' + "".join(f"k{i} = 1\n" for i in range(30))
    (tmp_path / "triton-env.toml").write_text(body, encoding="utf-8")
    code, out = _run("resolve", "--dry-run", "-p", str(tmp_path))
    assert code == 2 and f"{tmp_path / 'triton-env.toml'}:4: environment.k0: unknown key" in out
    assert f"{tmp_path / 'triton-env.toml'}:23: environment.k19: unknown key" in out and "… and 10 more" in out


@pytest.mark.parametrize("env, expected", [
    ({"PIP_INDEX_URL": "https://exa mple.com/simple"}, "PIP_INDEX_URL: 'https://exa mple.com/simple' has spaces"),
    ({"PIP_INDEX_URL": "https://"}, "PIP_INDEX_URL: 'https://' names no valid host"),
    ({"PIP_INDEX_URL": "http://[::1/simple"}, "is not a valid URL"),
    ({"PIP_INDEX_URL": "--extra-index-url=http://evil"}, "is not an http(s):// or file:// URL"),
])
def test_bad_pip_configuration_is_bad_input(tmp_path: Path, env: dict[str, str], expected: str) -> None:
    from tritonlock.lock.index import default_index

    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.11"\ncuda = "cpu"\n')
    default_index.cache_clear()
    try:
        code, out = _run("resolve", "-p", str(tmp_path), env=env)
    finally:
        default_index.cache_clear()
    assert code == 2 and out.startswith("error: ") and expected in out, out
    assert len(out.splitlines()) == 1


@pytest.mark.parametrize("args, expected", [
    (("host", "--driver", "٥٣٥.104.05"), 'host override driver="٥٣٥.104.05": expected a driver version'),
    (("host", "--glibc", "2.x"), 'host override glibc="2.x"'),
    (("host", "--python", "3.١٢"), 'host override python="3.١٢"'),
    (("host", "--gpus", "٨.٠"), 'host override gpus="٨.٠"'),
])
def test_bad_overrides_are_exit_2(args: tuple[str, ...], expected: str) -> None:
    code, out = _run(*args)
    assert code == 2 and expected in out and "Traceback" not in out, out


@pytest.mark.parametrize("body, expected", [
    (f"[[targets]]\nname = {DEEP}\n", "not valid TOML: arrays or tables nested too deeply"),
    ('[[targets]]\nname = "a"\nos = "linux"\narch = "x86_64"\nglibc = "2.٣١"\n', 'targets[0].glibc = "2.٣١": expected'),
    ('[[targets]]\nname = "a\\u0007"\nos = "linux"\narch = "x86_64"\n', "targets[0].name = 'a\\x07': expected a short"),
    ("[[targets]]\nname = 'a'\nos = 'linux'\narch = 'x86_64'\n" + "".join(f"k{i} = 1\n" for i in range(5000)),
     "… and 4980 more"),
])
def test_bad_saved_target_is_exit_2(tmp_path: Path, body: str, expected: str) -> None:
    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.11"\n')
    (tmp_path / "m.toml").write_text(body, encoding="utf-8")
    code, out = _run("resolve", "--dry-run", "-p", str(tmp_path), "--target-file", str(tmp_path / "m.toml"))
    assert code == 2 and expected in out and "Traceback" not in out, out


def test_an_unwritable_path_is_a_clean_error(tmp_path: Path) -> None:
    # (a missing folder is made: `host --save hosts/NAME.toml` in a new project; a file in the way is not)
    (tmp_path / "no").write_text("")
    code, out = _run("host", "--save", str(tmp_path / "no" / "such" / "dir.toml"))
    assert code == 2 and out.startswith("error: ") and "Not a directory" in out and "Traceback" not in out


@pytest.mark.parametrize("pattern, expected", [
    ("a" + "*" * 70 + "/*", "is not a usable glob"),
    (".", "is not a usable glob"),
    ("../*", "must be a relative path or glob inside the project"),
    ("/etc/*", "must be a relative path or glob inside the project"),
])
def test_bad_target_files_globs_are_exit_2(tmp_path: Path, pattern: str, expected: str) -> None:
    (tmp_path / "triton-env.toml").write_text(f'target-files = ["{pattern}"]\n[environment]\npython = "3.11"\n')
    code, out = _run("resolve", "--dry-run", "-p", str(tmp_path))
    assert code == 2 and expected in out and "Traceback" not in out, out


def test_a_glob_sweeping_the_project_skips_the_intent_and_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "triton-env.toml").write_text('target-files = ["**/*"]\n[environment]\npython = "3.11"\n')
    (tmp_path / "hosts").mkdir()
    (tmp_path / "hosts" / "a.toml").write_text('[[targets]]\nname = "a"\nos = "linux"\narch = "x86_64"\n')
    code, out = _run("resolve", "--dry-run", "--json", "-p", str(tmp_path))
    assert code == 0, out  # triton-env.toml itself is not read as a host file
    many = tmp_path / "many"
    many.mkdir()
    for i in range(1001):
        (many / f"{i}.toml").write_text("")
    code, out = _run("resolve", "--dry-run", "-p", str(tmp_path))
    assert code == 2 and "matches 1002 files" in out, out


def test_report_merge_survives_hostile_json(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "triton-env.toml").write_text('[environment]\npython = "3.11"\n')
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "node1.json").write_text("[" * 100_000 + "]" * 100_000)
    (runs / "node2.json").write_text('{"ok": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, out = _run("report", "merge", str(runs), "-p", str(tmp_path / "p"))
    assert code in (0, 1) and "Traceback" not in out and "RecursionError" not in out, out


# ---------------------------------------------------------------- files that are not files, files that are not text


@pytest.mark.parametrize("what", ["fifo", "devzero", "dir"])
@pytest.mark.parametrize("name", ["triton-env.toml", "triton-env.lock", "triton-env.verified.toml"])
def test_a_path_that_is_not_a_regular_file_is_an_error_not_a_hang(tmp_path: Path, what: str, name: str) -> None:
    import os

    from test_lockfile import sample
    from tritonlock.lock import lockfile

    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.11"\n')
    (tmp_path / "triton-env.lock").write_text(lockfile.dumps(sample()))
    p = tmp_path / name
    p.unlink(missing_ok=True)
    {"fifo": lambda: os.mkfifo(p), "devzero": lambda: p.symlink_to("/dev/zero"), "dir": p.mkdir}[what]()
    for args in (("resolve", "--dry-run"), ("show",), ("check",), ("sync", "--dry-run", "--no-verify"),
                 ("export", "--format", "requirements", "--target", "h200"), ("export", "--format", "slurm"),
                 ("why",), ("check", "--require-verified")):
        code, out = _unless_it_hangs(*args, "-p", str(tmp_path))  # (a FIFO nobody writes to blocked the read forever)
        assert code in (0, 1, 2, 4, 5) and "Traceback" not in out, (args, code, out)
        if name == "triton-env.lock" and args[0] in ("show", "export"):
            assert code == 2 and "not a regular file" in out or "a directory" in out, (args, out)


@pytest.mark.parametrize("body", [b"\x82\xff binary", "\ufeff[x]".encode("utf-16"), b"\x00" * 64])
def test_check_on_a_lock_that_is_not_text_is_a_problem_not_a_traceback(tmp_path: Path, body: bytes) -> None:
    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.11"\n')
    (tmp_path / "triton-env.lock").write_bytes(body)
    for args in (("check",), ("check", "--json"), ("check", "--require-verified")):
        code, out = _run(*args, "-p", str(tmp_path))
        assert code == 1 and "Traceback" not in out and "triton-env.lock" in out, (args, out)


# ---------------------------------------------------------------- report merge: what nodes leave behind


@pytest.mark.parametrize("files", [
    {"n1.json": '{"ok": false, "failures": 5}'},
    {"n1.json": '{"ok": false, "checks": 7}'},
    {"n1.json": '{"ok": false, "checks": [1, "x", null]}'},
    {"n1.json": '{"ok": true, "record": {"kernels": 5}}'},
    {"n1.json": '{"ok": "false"}'},  # a string: not a pass
    {"n1.json": '{"ok": 1}'},
    {"n1.sync.rc": "²", "n1.started": "x"},  # "²".isdigit() is True, int("²") fails
    {"n1.verify.rc": "٣", "n1.sync.rc": "0"},
])
def test_report_merge_never_trusts_the_shape_of_a_node_report(tmp_path: Path, files: dict[str, str]) -> None:
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "triton-env.toml").write_text('[environment]\npython = "3.11"\n')
    runs = tmp_path / "runs"
    runs.mkdir()
    for name, text in files.items():
        (runs / name).write_text(text, encoding="utf-8")
    for extra in ((), ("--json",), ("--html", str(tmp_path / "r.html")), ("--update-records",)):
        code, out = _run("report", "merge", str(runs), "-p", str(proj), *extra)
        assert code == 1 and "Traceback" not in out, (extra, out)  # the node failed: never counted as a pass
        if extra == ("--json",):
            doc = json.loads(out[out.index("{"):])
            assert doc["passed"] == 0 and doc["total"] == 1, doc


def test_report_merge_shows_names_from_nodes_as_text_never_as_markup_or_terminal_codes(tmp_path: Path) -> None:
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "triton-env.toml").write_text('[environment]\npython = "3.11"\n')
    runs = tmp_path / "runs"
    runs.mkdir()
    evil = "<script>alert(1)</script>\x1b[2J\nx ok-looking row https://alice:s3cr3t@x.example/simple"
    (runs / "n1.json").write_text(json.dumps({"ok": False, "failures": [evil]}))
    (runs / "n2\x1b[31m.sync.rc").write_text("5")
    (runs / "n2\x1b[31m.sync.log").write_text(f"error: {evil}\n")
    code, out = _run("report", "merge", str(runs), "-p", str(proj), "--html", str(tmp_path / "r.html"))
    assert code == 1 and "\x1b" not in out and "<script>" in out, out  # (shown as text, escaped for a terminal)
    assert not any(line.startswith("x ok-looking row") for line in out.splitlines()), out
    page = (tmp_path / "r.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page and "\x1b" not in page
    assert "s3cr3t" not in out + page and "https://***@x.example" in out  # a log's credential stays out of the table


# ---------------------------------------------------------------- names that end up in file names and scripts


def test_a_target_name_never_picks_where_a_file_is_written(tmp_path: Path, local_index: Any) -> None:
    from conftest import write_intent

    proj = tmp_path / "p"
    write_intent(proj, local_index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n'
                                    '[[targets]]\nname = "../../escaped"\nos = "linux"\narch = "x86_64"\n'
                                    '[[targets]]\nname = "my laptop"\nos = "linux"\narch = "x86_64"\n')
    code, out = _run("resolve", "-p", str(proj))
    assert code == 0, out
    before = {p for p in tmp_path.rglob("*")}
    for name in ("../../escaped", "my laptop"):
        code, out = _run("export", "--format", "dockerfile", "--target", name, "-p", str(proj), "-o",
                         str(proj / "Dockerfile"))
        assert code == 0, out
        new = {p for p in tmp_path.rglob("*")} - before
        assert all(p.is_relative_to(proj) for p in new), new  # nothing outside the project
        (req,) = [p for p in new if p.name.startswith("requirements-")]
        assert req.parent == proj / "tritonlock-image" and " " not in req.name and ".." not in req.name
        copy = [x for x in (proj / "Dockerfile").read_text().splitlines() if "requirements-" in x]
        assert copy == [f"COPY tritonlock-image/{req.name} /tmp/requirements.txt"], copy  # one source, one dest
        before |= new


def test_fleet_hosts_takes_no_file_name_or_toml_line_from_a_node(tmp_path: Path) -> None:
    from tritonlock.fleet.nodes import FleetError, parse_probes, write_host_files

    good = {"node": "gpu-01", "name": "../../../escaped", "os": "linux", "arch": "x86_64", "glibc": "2.35",
            "python": "3.11", "driver": "550.54.15", "cuda": "12.4", "gpus": ["8.0"], "gpu_names": ["NVIDIA A100"]}
    probes = parse_probes("0: " + json.dumps(good) + "\n", "srun output")
    (path, _), = write_host_files(probes, tmp_path / "hosts")
    assert path.parent == tmp_path / "hosts" and ".." not in path.name
    from tritonlock.intent.read import parse_intent

    (tmp_path / "triton-env.toml").write_text('target-files = ["hosts/*.toml"]\n')
    assert [t.name for t in parse_intent('target-files = ["hosts/*.toml"]\n',
                                         str(tmp_path / "triton-env.toml")).targets] == ["../../../escaped"]
    for key, value in (("node", "n1\n[[targets]]\nname = 'evil'"), ("name", "a\x1b[2J"), ("gpus", [1]),
                       ("driver", "550\n"), ("node", ""), ("gpus", "8.0")):
        with pytest.raises(FleetError, match=r"srun output: line 1: ") as ei:
            parse_probes(json.dumps({**good, key: value}), "srun output")
        assert "\n" not in str(ei.value) and "\x1b" not in str(ei.value)


def _sbatch(tmp_path: Path, *args: str) -> tuple[int, str]:
    from test_lockfile import sample
    from tritonlock.lock import lockfile

    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.11"\n')
    (tmp_path / "triton-env.lock").write_text(lockfile.dumps(sample()))
    r = CliRunner().invoke(main, ["export", "--format", "slurm", "-p", str(tmp_path), *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.stdout if r.exit_code == 0 else r.output


def test_sbatch_script_keeps_paths_as_paths(tmp_path: Path) -> None:
    import subprocess

    proj = tmp_path / "My Projects" / "$(touch PWNED)'x\""
    proj.mkdir(parents=True)
    code, script = _sbatch(proj, "--reports", str(tmp_path / "r $(touch PWNED2)"), "--tritonlock",
                           "/opt/tl venv/bin/tritonlock".replace(" ", "_"))
    assert code == 0, script
    # run the script's own variable set-up, as the job would, and read back what it set
    setup = script[script.index("set -uo pipefail"):script.index("mkdir -p")]
    r = subprocess.run(["bash", "-c", setup + 'printf "%s\\n" "$TRITONLOCK_PROJECT" "$TRITONLOCK_REPORTS" '
                        '"$TRITONLOCK_CMD"'], capture_output=True, text=True, cwd=tmp_path,
                       env={"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "7"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [str(proj.resolve()), str(tmp_path / "r $(touch PWNED2)"),
                                     "/opt/tl_venv/bin/tritonlock"], r.stdout
    assert not list(tmp_path.rglob("PWNED*"))
    # the default reports directory under such a project is that path too (quotes were kept as characters)
    code, script = _sbatch(proj)
    setup = script[script.index("set -uo pipefail"):script.index("mkdir -p")]
    r = subprocess.run(["bash", "-c", setup + 'printf "%s\\n" "$TRITONLOCK_REPORTS"'], capture_output=True,
                       text=True, env={"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "7"})
    assert r.stdout.splitlines() == [f"{proj.resolve()}/tritonlock-reports/7"], r.stdout


@pytest.mark.parametrize("args, expected", [
    (("--partition", "gpu\nrm -rf ~"), "--partition 'gpu\\nrm -rf ~': expected one Slurm name"),
    (("--account", "a;b"), "--account 'a;b': expected one Slurm name"),
    (("--time", "٣٠"), "--time '٣٠': expected Slurm's"),
    (("--time", "30\n"), "--time '30\\n': expected Slurm's"),
    (("--sync-args", "--offline\necho pwned"), "--sync-args '--offline\\necho pwned': control characters"),
    (("--verify-args", "--quick 'unclosed"), "--verify-args \"--quick 'unclosed\": No closing quotation"),
    (("--tritonlock", 'tl"; echo pwned; "'), "expected a command and its options as plain words"),
    (("--tritonlock", ""), "--tritonlock"),
])
def test_sbatch_values_that_would_become_shell_are_bad_input(tmp_path: Path, args: tuple[str, str],
                                                              expected: str) -> None:
    code, out = _sbatch(tmp_path, *args)
    assert code == 2 and out.startswith("error: ") and expected in out and "Traceback" not in out, out


def test_sbatch_passes_options_through_as_words(tmp_path: Path) -> None:
    code, script = _sbatch(tmp_path, "--sync-args", "--offline --find-links '/w h/x' ; echo pwned",
                           "--verify-args", "--quick $(id)")
    assert code == 0, script
    # words handed to sync and verify as they are: ";" is one of them, not the end of a command; $(id) runs nothing
    assert "--offline --find-links '/w h/x' ';' echo pwned" in script and "--quick '$(id)'" in script


@pytest.mark.parametrize("record, expected", [
    ("a.py,sha256=x,²\n", "its RECORD is torn (line 1 is not path,hash,size"),  # a size in other digits: not a size
    ("a\x00b.py,sha256=x,1\n", "1 of 1 files are missing"),  # a NUL: os.stat raised ValueError
    ("x" * 200_000 + ",sha256=x,1\n", "its RECORD cannot be read (field larger than field limit"),
    ("\x1b[2J.py,sha256=x,1\n", "missing (\\x1b[2J.py)"),  # shown, never sent to the terminal
])
def test_a_damaged_record_file_is_damage_not_a_traceback(tmp_path: Path, record: str, expected: str) -> None:
    """RECORD files are read by sync (after a kill) and doctor: whatever a killed installer or a stranger left."""
    from tritonlock.environment._venv import venv_damage

    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    d = site / "x-1.0.dist-info"
    d.mkdir(parents=True)
    (d / "METADATA").write_text("Metadata-Version: 2.1\nName: x\nVersion: 1.0\n\n")
    (d / "RECORD").write_text(record, encoding="utf-8")
    (damage,) = venv_damage(tmp_path / "venv")
    assert expected in damage.problem and "\x1b" not in damage.problem, damage.problem


@pytest.mark.parametrize("args, expected", [
    (("host", "--save", "{d}/h.toml", "--name", "a\nb"), "--name 'a\\nb': not a usable target name"),
    (("host", "--save", "{d}/h.toml", "--name", "x" * 101), "not a usable target name"),
    (("host", "--save", "{d}/h.toml", "--name", "host"), "--name 'host': not a usable target name"),
    (("fleet", "hosts", "--slurm", "--timeout", "nan"), "nan is not a number of seconds"),
    (("fleet", "hosts", "--slurm", "--timeout", "-1"), "is not in the range"),
    (("fleet", "hosts", "--slurm", "--nodelist", "a\nb"), "--nodelist 'a\\nb': expected one Slurm name"),
])
def test_bad_option_values_of_the_new_commands_are_exit_2(tmp_path: Path, args: tuple[str, ...],
                                                           expected: str) -> None:
    code, out = _run(*(a.replace("{d}", str(tmp_path)) for a in args))
    assert code == 2 and expected in out and "Traceback" not in out, out
    assert not (tmp_path / "h.toml").exists()  # (a name the intent then refused was written)


@pytest.mark.parametrize("body, expected", [
    (b"\x82\xff\x00", "'utf-8' codec can't decode"),
    (b"[global]\nindex-url = https://mirror.example/simple\n[global]\ntimeout = 5\n", "section 'global' already exists"),
    (b"[global]\nindex-url = https://a.example/simple\nindex-url = https://b.example/simple\n", "already exists"),
    (b"index-url = https://mirror.example/simple\n", "File contains no section headers"),
])
def test_a_pip_configuration_file_pip_refuses_is_bad_input_not_skipped(tmp_path: Path, body: bytes, expected: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Skipping it quietly used pip's default index instead of the mirror the file names."""
    from tritonlock.lock import index

    conf = tmp_path / "pip.conf"
    conf.write_bytes(body)
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.setattr(index, "_pip_config_files", lambda: [tmp_path / "absent.conf", conf])
    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.11"\ncuda = "cpu"\n')
    index.default_index.cache_clear()
    try:
        code, out = _run("resolve", "-p", str(tmp_path))
    finally:
        index.default_index.cache_clear()
    assert code == 2 and out.startswith(f"error: {conf}: pip cannot use this configuration file") and expected in out
    assert len(out.splitlines()) == 1 and "Traceback" not in out, out


def test_thousands_of_targets_for_one_machine_give_few_warnings(tmp_path: Path) -> None:
    (tmp_path / "hosts").mkdir()
    (tmp_path / "triton-env.toml").write_text('target-files = ["hosts/*.toml"]\n[environment]\npython = "3.11"\n')
    (tmp_path / "hosts" / "many.toml").write_text(
        "".join(f'[[targets]]\nname = "t{i}"\nos = "linux"\narch = "x86_64"\n' for i in range(2000)))
    code, out = _run("check", "-p", str(tmp_path))
    assert code == 2 and "Traceback" not in out  # (no lock: bad input)
    warnings = [x for x in out.splitlines() if x.startswith("warning:")]
    assert len(warnings) == 21 and warnings[-1] == "warning: … and 1979 more", warnings[-2:]


def test_names_that_clean_to_one_stem_never_share_a_file(tmp_path: Path) -> None:
    """"a b" became "a-b-<hash>", and a target named exactly that took the same file (one Dockerfile installing
    another target's packages, fleet hosts overwriting a file); names differing in case did the same on macOS."""
    from tritonlock._files import file_stem
    from tritonlock.fleet.nodes import parse_probes, write_host_files

    hashed = file_stem("a b")
    names = ["a b", hashed, "a-b", "A-B", "a_b", "H200", "h200", "x" * 100, "x" * 101]
    stems = [file_stem(n) for n in names]
    assert len({s.casefold() for s in stems}) == len(names), stems
    assert file_stem("h200") == "h200" and file_stem("a100-80gb") == "a100-80gb"  # plain names stay as they are
    base = {"os": "linux", "arch": "x86_64", "glibc": "2.35", "python": "3.11", "cuda": "12.4", "gpus": ["8.0"]}
    lines = [json.dumps({**base, "node": f"n{i}", "name": n, "driver": f"55{i}.54.15"}) for i, n in
             enumerate(["a b", hashed, "H200", "h200"])]
    written = write_host_files(parse_probes("\n".join(lines), "srun output"), tmp_path / "hosts")
    assert len(written) == 4 and len({str(p).casefold() for p, _ in written}) == 4
    assert len(list((tmp_path / "hosts").iterdir())) == 4


def test_fleet_hosts_keeps_a_hand_written_file(tmp_path: Path) -> None:
    from tritonlock.errors import UsageError
    from tritonlock.fleet.nodes import parse_probes, write_host_files

    probe = {"node": "n1", "name": "a100", "os": "linux", "arch": "x86_64", "glibc": "2.35", "python": "3.11",
             "driver": "550.54.15", "cuda": "12.4", "gpus": ["8.0"], "gpu_names": ["NVIDIA A100"]}
    probes = parse_probes(json.dumps(probe), "srun output")
    hosts = tmp_path / "hosts"
    hosts.mkdir()
    (hosts / "a100.toml").write_text("# hand-written\n[[targets]]\nname = \"a100\"\n")
    with pytest.raises(UsageError, match="a100.toml exists and was not written by tritonlock"):
        write_host_files(probes, hosts)
    assert (hosts / "a100.toml").read_text().startswith("# hand-written")
    write_host_files(probes, hosts, force=True)
    assert "gathered by `tritonlock fleet hosts`" in (hosts / "a100.toml").read_text()
    write_host_files(probes, hosts)  # its own file: written again


@pytest.mark.parametrize("shape", ["key", "spaced", "quoted", "header", "array-header", "inline"])
def test_a_long_dotted_key_is_refused_fast_and_small(tmp_path: Path, shape: str) -> None:
    """An 80 KB intent holding one dotted key took 27 s and 9 GB (tomllib's work grows with the square of the
    parts) and died with MemoryError under a limit. Under a 1 GiB address-space limit and a 20 s timeout it is now
    one clean error naming the file and line."""
    import os
    import subprocess
    import sys

    n = 40_000
    body = {"key": "a" + ".a" * n + " = 1", "spaced": "a" + " . a" * (n // 2) + " = 1",
            "quoted": '"a"' + '."a"' * (n // 2) + " = 1", "header": "[" + "a." * n + "a]\nx = 1",
            "array-header": "[[" + "a." * n + "a]]\nx = 1", "inline": "x = { " + "a." * n + "a = 1 }"}[shape]
    (tmp_path / "triton-env.toml").write_text(f'[environment]\npython = "3.11"\n\n{body}\n')
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
            "from tritonlock.cli import main; sys.argv = ['tritonlock', 'resolve', '--dry-run', '-p', sys.argv[1]]; "
            "main()")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=20,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.startswith(f"error: {tmp_path / 'triton-env.toml'}:4: TOML syntax error: a dotted key or table "
                               "name of "), r.stderr[:500]
    assert "parts (at most 64 are read)" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("kind", ["keys", "tables", "inline"])
def test_many_dotted_keys_just_under_the_cap_are_refused_small(tmp_path: Path, kind: str) -> None:
    """One key of 63 parts is fine; 13 MB of them cost tomllib minutes and died with MemoryError. Under a 1 GiB
    address-space limit, the whole file's key paths are bounded: one clean error naming the file and a line."""
    import os
    import subprocess
    import sys

    part = ".".join(f"p{j}" for j in range(62))
    one = {"keys": "k{i}." + part + " = 1", "tables": "[k{i}." + part + "]",
           "inline": "x{i} = {{ a." + part + " = 1 }}"}[kind]
    lines, size = [], 0
    while size < 13_000_000:
        lines.append(one.format(i=len(lines)))
        size += len(lines[-1]) + 1
    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.11"\n' + "\n".join(lines) + "\n")
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
            "from tritonlock.cli import main; sys.argv = ['tritonlock', 'resolve', '--dry-run', '-p', sys.argv[1]]; "
            "main()")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.startswith(f"error: {tmp_path / 'triton-env.toml'}:"), r.stderr[:500]
    assert "TOML syntax error: its keys and table names hold" in r.stderr and "Traceback" not in r.stderr


def test_dotted_keys_a_real_file_has_still_read() -> None:
    from tritonlock import _toml

    assert _toml.loads("# " + "v." * 100 + "1\n") == {}  # a comment is not a key
    assert _toml.loads('a.b.c = 1\n[x.y]\nz = "1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.16.17.18.19.20.21.22.23.24.25.26.'
                       '27.28.29.30.31.32.33.34.35.36.37.38.39.40.41.42.43.44.45.46.47.48.49.50.51.52.53.54.55.56.57.'
                       '58.59.60.61.62.63.64.65.66"\n') == {"a": {"b": {"c": 1}}, "x": {"y": {"z": (
                           ".".join(str(i) for i in range(1, 67)))}}}


def test_a_direct_url_over_http_or_with_its_hash_is_taken(tmp_path: Path) -> None:
    """What the docs allow: a plain http:// (a mirror on the LAN; the lock's sha256 holds later installs to the bytes)
    and a #sha256= fragment (pip's way to name the file's hash) are a direct URL like any other."""
    from tritonlock.intent.read import parse_intent

    for url in ("http://x.example/a-1-py3-none-any.whl", "https://x.example/a-1-py3-none-any.whl#sha256=" + "ab" * 32,
                "file:///srv/wheels/a-1-py3-none-any.whl"):
        assert parse_intent(f'[environment]\npackages = ["a @ {url}"]\n').packages == (f"a @ {url}",), url
