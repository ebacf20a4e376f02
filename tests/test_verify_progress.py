"""verify shows what it does (issue 41): its header at once — before the runner has imported torch — then a line per
phase as it happens (rich's live lines on a terminal, plain lines elsewhere), nothing extra under --json. The output
is read as it arrives, through a pseudo-terminal, from a venv whose `torch` waits for the test's word."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

STUB = '''
import os, time
here = os.path.dirname(__file__)
open(os.path.join(here, "import-began"), "w").close()
for _ in range(1200):  # the test's word, or two minutes
    if os.path.exists(os.path.join(here, "release")):
        break
    time.sleep(0.1)
raise ImportError("stub torch: released by the test")
'''


@pytest.fixture
def stub_venv(tmp_path: Path) -> tuple[Path, Path]:
    """A venv whose `torch` records that its import began, then waits for a file named release beside it."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip())
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(STUB)
    return venv / "bin" / "python", site / "torch"


def _read_until(fd: int, want: bytes, seen: bytearray, limit: float = 120) -> bool:
    end = time.monotonic() + limit
    while want not in seen and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                return want in seen
            if not chunk:
                break
            seen += chunk
    return want in seen


def test_the_header_comes_at_once_and_the_phase_live_before_torch_is_imported(stub_venv: tuple[Path, Path],
                                                                                 tmp_path: Path) -> None:
    python, torch_dir = stub_venv
    parent, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tritonlock", "verify", "--python", str(python), "--quick",
                             "--project", str(tmp_path)], stdin=subprocess.DEVNULL, stdout=child, stderr=child,
                            cwd=tmp_path, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "120"})
    os.close(child)
    seen = bytearray()
    try:
        assert _read_until(parent, f"verify: checking {python}".encode(), seen), bytes(seen)
        # the live line of the phase while torch's import is under way, and the import has not finished: it waits
        assert _read_until(parent, "importing torch".encode(), seen), bytes(seen)
        assert (torch_dir / "import-began").exists() or _wait_file(torch_dir / "import-began")
        assert not (torch_dir / "release").exists()
        header_at = bytes(seen).index(b"verify: checking")
        assert header_at < bytes(seen).index(b"importing torch")
        (torch_dir / "release").touch()
        _read_until(parent, b"RESULT: FAILED", seen)
    finally:
        (torch_dir / "release").touch()
        proc.wait(timeout=120)
        os.close(parent)
    assert b"RESULT: FAILED" in seen and b"stub torch: released by the test" in seen
    assert proc.returncode == 1


def _wait_file(path: Path, limit: float = 60) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if path.exists():
            return True
        time.sleep(0.1)
    return False


def test_plain_lines_when_not_a_terminal_and_nothing_extra_under_json(stub_venv: tuple[Path, Path],
                                                                     tmp_path: Path) -> None:
    python, torch_dir = stub_venv
    (torch_dir / "release").touch()
    plain = subprocess.run([sys.executable, "-m", "tritonlock", "verify", "--python", str(python), "--quick",
                            "--project", str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    lines = plain.stderr.splitlines()
    assert lines[0] == f"verify: checking {python}"
    assert "  importing torch…" in lines and any(x.startswith("  importing torch: done (") for x in lines), lines
    assert "\x1b" not in plain.stderr  # no terminal codes in a pipe
    as_json = subprocess.run([sys.executable, "-m", "tritonlock", "verify", "--python", str(python), "--quick",
                              "--json", "--project", str(tmp_path)], capture_output=True, text=True, timeout=300,
                             cwd=tmp_path)
    assert "importing torch" not in as_json.stderr and "verify: checking" not in as_json.stderr
    doc = json.loads(as_json.stdout)
    assert doc["ok"] is False and doc["checks"][0]["name"] == "torch imports"
