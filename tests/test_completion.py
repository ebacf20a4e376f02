"""Shell completion, as README documents it: click's own, through the console script — `_TRITONLOCK_COMPLETE=
bash_source tritonlock` prints the script a shell sources, and the completions it asks for name the commands and
options there are (the new verbs too)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "tritonlock"  # the console script `pip install` wrote beside this Python


def _complete(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert SCRIPT.is_file(), f"{SCRIPT}: the console script is missing — install tritonlock (pip install -e .)"
    return subprocess.run([str(SCRIPT)], capture_output=True, text=True, env={**os.environ, **env}, timeout=60)


def test_the_documented_line_is_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert 'eval "$(_TRITONLOCK_COMPLETE=bash_source tritonlock)"' in readme
    assert "_TRITONLOCK_COMPLETE=fish_source tritonlock | source" in readme


@pytest.mark.parametrize("shell,marker", [("bash", "complete -o nosort -F _tritonlock_completion tritonlock"),
                                          ("zsh", "#compdef tritonlock"), ("fish", "complete --no-files --command "
                                                                                 "tritonlock")])
def test_each_shell_gets_a_script(shell: str, marker: str) -> None:
    r = _complete({"_TRITONLOCK_COMPLETE": f"{shell}_source"})
    assert r.returncode == 0 and marker in r.stdout and r.stderr == "", r


@pytest.mark.parametrize("words,cword,want", [("tritonlock ad", "1", "plain,add"), ("tritonlock ru", "1", "plain,run"),
                                              ("tritonlock tree --inv", "2", "plain,--invert"),
                                              ("tritonlock resolve --upgrade-p", "2", "plain,--upgrade-package")])
def test_the_completions_name_the_verbs_and_their_options(words: str, cword: str, want: str) -> None:
    r = _complete({"_TRITONLOCK_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": cword})
    assert r.returncode == 0 and r.stdout.splitlines() == [want], r
