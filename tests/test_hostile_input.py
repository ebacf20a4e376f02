"""Hostile input: every malformed intent, lock, override or setting gets one clean error and exit 2 — never a
traceback, never a hang, never a conflict (3) for what is really bad input — and answers in well under a second."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tritonlock.cli import main

DEEP = "[" * 1000 + "]" * 1000


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), env=env)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.output


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
def test_thousands_of_problems_answer_fast_and_are_capped(tmp_path: Path, body: str) -> None:
    (tmp_path / "triton-env.toml").write_text(body, encoding="utf-8")
    started = time.perf_counter()
    code, out = _run("resolve", "--dry-run", "-p", str(tmp_path))
    elapsed = time.perf_counter() - started
    assert code == 2 and "Traceback" not in out
    lines = out.splitlines()
    assert lines[0].startswith("error: ") and "problems in" in lines[0]
    assert len(lines) == 22 and lines[-1].startswith("  … and ") and lines[-1].endswith(" more"), lines[-3:]
    assert elapsed < 1.0, f"{elapsed:.2f} s"


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
    from tritonlock.index import default_index

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
    started = time.perf_counter()
    code, out = _run("resolve", "--dry-run", "-p", str(tmp_path), "--target-file", str(tmp_path / "m.toml"))
    assert code == 2 and expected in out and "Traceback" not in out, out
    assert time.perf_counter() - started < 1.0


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
    started = time.perf_counter()
    code, out = _run("resolve", "--dry-run", "-p", str(tmp_path))
    assert code == 2 and "matches 1002 files" in out, out
    assert time.perf_counter() - started < 2.0


def test_report_merge_survives_hostile_json(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "triton-env.toml").write_text('[environment]\npython = "3.11"\n')
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "node1.json").write_text("[" * 100_000 + "]" * 100_000)
    (runs / "node2.json").write_text('{"ok": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, out = _run("report", "merge", str(runs), "-p", str(tmp_path / "p"))
    assert code in (0, 1) and "Traceback" not in out and "RecursionError" not in out, out
