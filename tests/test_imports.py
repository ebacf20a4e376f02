"""Each module imports on its own (no cycles), and `tritonlock --help` stays light."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import tritonlock

MODULES = sorted(m.name for m in pkgutil.walk_packages(tritonlock.__path__, "tritonlock.")
                 if not m.name.endswith(("__main__", "_runner", "_doctor_probe")))


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_alone(module: str) -> None:
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)


def test_help_does_not_import_heavy_modules() -> None:
    code = ("import sys; from click.testing import CliRunner; from tritonlock.cli import main; "
            "r = CliRunner().invoke(main, ['--help']); assert r.exit_code == 0, r.output; "
            "heavy = [m for m in ('torch', 'triton', 'requests', 'pynvml', 'uv', 'tomlkit', 'packaging.requirements',"
            " 'tritonlock.resolve', 'tritonlock.matrix', 'tritonlock.host', 'tritonlock.sync') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


def test_every_command_has_help() -> None:
    from click.testing import CliRunner

    from tritonlock.cli import main

    for name in ("init", "host", "resolve", "show", "sync", "verify"):
        r = CliRunner().invoke(main, [name, "--help"])
        assert r.exit_code == 0 and "Usage:" in r.output, name
