"""Ctrl-C in the first moments of a command — while the console script imports the CLI, before the CLI's own
handler is in place — ends it as any Ctrl-C does: "interrupted", exit 130, no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# The child: the console script's main() with an import hook that holds the command at the import of `held`, says
# so on stdout, and waits there for the test's real SIGINT (the test waits for that line, never for a time).
CHILD = """
import sys, time
held = sys.argv[1]
class Hold:
    def find_spec(self, name, path=None, target=None):
        if name == held:
            sys.stdout.write("holding " + name + "\\n")
            sys.stdout.flush()
            while True:
                time.sleep(0.05)
        return None
sys.meta_path.insert(0, Hold())
sys.argv = ["tritonlock", *sys.argv[2:]]
from tritonlock._entry import main
main()
"""


@pytest.mark.parametrize("held, args", [
    ("click", ["resolve", "--dry-run"]),                           # the CLI itself, every ordinary command
    ("tritonlock.environment._noop", ["sync", "--no-verify"]),     # the no-op sync's answer, before the CLI
    ("tritonlock._kept", ["check"]),                               # a passed check's answer, before the CLI
])
def test_ctrl_c_while_the_command_starts_is_a_quiet_exit_130(tmp_path: Path, held: str, args: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, held, *args, "-p", str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == f"holding {held}\n", (line, proc.stderr.read() if proc.stderr else "")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (proc.returncode, err) == (130, "interrupted\n"), (proc.returncode, out, err)
