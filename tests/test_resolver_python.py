"""The interpreter uv's compiles get for a target's Python (tritonlock._subprocess.find_resolver_python): found by
`uv python find` (the real uv) once, then kept a day under what the answer depends on — PATH and its folders' times,
uv's own Pythons' folder — so the next resolve neither searches again nor lets its first compile search itself."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tritonlock import _subprocess

NOWHERE = "3.99"  # a Python version no machine has: uv finds none, and the compiles get this interpreter


@pytest.fixture
def finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Each `uv python find` run (the real one runs); a private cache and a PATH of one folder of our own + uv's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("UV_PYTHON_INSTALL_DIR", raising=False)
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "bin"), os.path.dirname(_subprocess.uv_bin()),
                                                "/usr/bin", "/bin"]))
    monkeypatch.setattr(_subprocess, "_PYTHONS", {})
    seen: list[list[str]] = []
    real = subprocess.run

    def spy(args: list[str], **kw: object) -> object:
        if args[1:3] == ["python", "find"]:
            seen.append(list(args))
        return real(args, **kw)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "run", spy)
    return seen


def _found(version: str) -> str | None:
    """Start the search and wait for its answer (the thread's), as a compile would see it."""
    _subprocess.find_resolver_python(version)
    for _ in range(600):
        got = _subprocess.resolver_python(version)
        if got:
            return got
        time.sleep(0.05)
    return None


def test_this_pythons_version_is_this_interpreter_without_asking_uv(finds: list[list[str]]) -> None:
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert _found(here) == sys.executable
    assert finds == []


def test_uv_is_asked_once_and_its_answer_kept_for_the_next_run(finds: list[list[str]],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    assert _found(NOWHERE) == sys.executable  # none of that version: this one, uv's own fallback
    assert len(finds) == 1 and finds[0][-1] == NOWHERE and "--no-python-downloads" in finds[0]
    kept = Path(_subprocess._kept_file(NOWHERE))
    assert kept.read_text(encoding="utf-8") == f"tritonlock-python {NOWHERE}\n\n"  # "none found", kept
    assert oct(kept.stat().st_mode & 0o777) == "0o600"
    monkeypatch.setattr(_subprocess, "_PYTHONS", {})  # the next run
    _subprocess.find_resolver_python(NOWHERE)
    assert _subprocess.resolver_python(NOWHERE) == sys.executable  # at once, before any thread could answer
    assert len(finds) == 1


def test_an_interpreter_installed_on_path_is_found_again(finds: list[list[str]], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    assert _found(NOWHERE) == sys.executable
    time.sleep(0.01)
    (tmp_path / "bin" / "python3.99").write_text("#!/bin/sh\nexit 1\n")  # the folder's time changes
    monkeypatch.setattr(_subprocess, "_PYTHONS", {})
    assert _found(NOWHERE) == sys.executable
    assert len(finds) == 2


def test_another_path_or_uvs_pythons_folder_is_another_answer(finds: list[list[str]], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    first = _subprocess._kept_file(NOWHERE)
    monkeypatch.setenv("UV_PYTHON_INSTALL_DIR", str(tmp_path / "uvpy"))
    second = _subprocess._kept_file(NOWHERE)
    monkeypatch.setenv("PATH", os.environ["PATH"] + os.pathsep + str(tmp_path))
    assert len({first, second, _subprocess._kept_file(NOWHERE), _subprocess._kept_file("3.98")}) == 4
    assert finds == []


@pytest.mark.parametrize("age", [86400 - 60, 86400 + 60])
def test_an_answer_is_kept_a_day(finds: list[list[str]], monkeypatch: pytest.MonkeyPatch, age: int) -> None:
    _subprocess._keep_python(NOWHERE, "")
    kept = _subprocess._kept_file(NOWHERE)
    os.utime(kept, (time.time() - age, time.time() - age))
    assert _subprocess._kept_python(NOWHERE) == ("" if age < 86400 else None)


def test_a_kept_interpreter_that_is_gone_is_found_again(finds: list[list[str]], tmp_path: Path) -> None:
    gone = tmp_path / "python3.99"
    gone.write_text("")
    _subprocess._keep_python(NOWHERE, str(gone))
    assert _subprocess._kept_python(NOWHERE) == str(gone)
    gone.unlink()
    assert _subprocess._kept_python(NOWHERE) is None
    assert _found(NOWHERE) == sys.executable and len(finds) == 1


@pytest.mark.parametrize("text", ["", "tritonlock-python 3.98\n\n", f"tritonlock-python {NOWHERE}\n/a\n/b\n",
                                  "garbage", f"tritonlock-python {NOWHERE}"])
def test_a_kept_file_that_is_not_one_is_no_answer(finds: list[list[str]], text: str) -> None:
    kept = Path(_subprocess._kept_file(NOWHERE))
    kept.parent.mkdir(parents=True)
    kept.write_text(text, encoding="utf-8")
    assert _subprocess._kept_python(NOWHERE) is None


def test_a_cache_that_cannot_be_written_keeps_nothing_and_fails_nothing(finds: list[list[str]], tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    assert _found(NOWHERE) == sys.executable
    assert _subprocess._kept_python(NOWHERE) is None


def test_a_python_named_as_a_command_is_the_one_path_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--python python3` (doctor, verify, sync): a name without a separator is what PATH finds for it; a path, or a
    name PATH lacks, stays as given (the commands then say "no such interpreter")."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tl-py").symlink_to(sys.executable)
    (tmp_path / "bin" / "not-exec").write_text("")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert _subprocess.named_python("tl-py") == str(tmp_path / "bin" / "tl-py")
    assert _subprocess.named_python("not-exec") == "not-exec"  # (not executable: not what a shell would run)
    assert _subprocess.named_python("tl-none") == "tl-none"
    assert _subprocess.named_python("./tl-py") == "./tl-py"  # a path, even one PATH would also find
    assert _subprocess.named_python("") == ""


@pytest.mark.parametrize("kind", ["fifo", "dir", "big"])
def test_a_kept_file_that_is_not_a_regular_small_file_is_never_waited_on(finds: list[list[str]], kind: str) -> None:
    """A FIFO (no writer: a plain open() would wait for ever), a folder or a large file where the kept answer would be:
    no answer, at once."""
    kept = Path(_subprocess._kept_file(NOWHERE))
    kept.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(kept)
    elif kind == "dir":
        kept.mkdir()
    else:
        kept.write_text(f"tritonlock-python {NOWHERE}\n\n" + "x" * 10_000, encoding="utf-8")
    assert _subprocess._kept_python(NOWHERE) is None
