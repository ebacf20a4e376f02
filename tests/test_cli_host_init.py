"""`tritonlock init` and `tritonlock host` as a user types them (this machine has no GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tritonlock.cli import main
from tritonlock.host import clear_cache
from tritonlock.intent import read_intent


@pytest.fixture(autouse=True)
def _fresh_detection() -> None:
    clear_cache()


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), env=env)
    return r.exit_code, r.output


def test_init_writes_a_valid_commented_intent_and_refuses_to_overwrite(tmp_path: Path) -> None:
    code, out = _run("init", "-p", str(tmp_path))
    assert code == 0 and "next: `tritonlock resolve`" in out
    text = (tmp_path / "triton-env.toml").read_text()
    assert text.startswith("# triton-env.toml") and "no NVIDIA GPU" in text
    it = read_intent(tmp_path / "triton-env.toml")
    assert it.torch == ">=2.6" and it.python is not None
    code, out = _run("init", "-p", str(tmp_path))
    assert code == 2 and "already exists — edit it, or pass --force" in out


def test_host_json_and_overrides_beat_detection() -> None:
    code, out = _run("host", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["os"] == "linux" and doc["driver"] is None and doc["gpus"] == []
    code, out = _run("host", "--json", "--driver", "535.104.05", "--gpus", "A100,A100", "--glibc", "2.31",
                     env={"TRITONLOCK_DRIVER": "470.82.01"})
    doc = json.loads(out)
    assert (doc["driver"], [g["cc"] for g in doc["gpus"]], doc["glibc"]) == ("535.104.05", ["8.0", "8.0"], "2.31")
    code, out = _run("host", "--json", env={"TRITONLOCK_DRIVER": "470.82.01"})
    assert json.loads(out)["driver"] == "470.82.01"


def test_host_save_round_trips_into_resolve(tmp_path: Path) -> None:
    saved = tmp_path / "a100.toml"
    code, out = _run("host", "--save", str(saved), "--name", "a100", "--driver", "535.104.05", "--gpus", "8.0",
                     "--glibc", "2.31", "--python", "3.10")
    assert code == 0 and "wrote target 'a100'" in out
    (tmp_path / "triton-env.toml").write_text('[environment]\ntorch = ">=2.4"\n')
    code, out = _run("resolve", "-p", str(tmp_path), "--dry-run", "--json", "--target-file", str(saved))
    assert code == 0, out
    (t,) = json.loads(out)["targets"]
    assert t["name"] == "a100" and t["python"] == "3.10" and t["backend"].startswith("cu12")


def test_bad_override_is_a_clean_error() -> None:
    code, out = _run("host", "--driver", "banana")
    assert code == 2 and "Traceback" not in out and "driver" in out


def test_missing_intent_says_what_to_do(tmp_path: Path) -> None:
    code, out = _run("resolve", "-p", str(tmp_path))
    assert code == 2 and out.strip() == f"error: {tmp_path / 'triton-env.toml'}: no such file — run `tritonlock init` to write one"


def test_intent_python_beats_the_running_interpreter_for_the_host(tmp_path: Path) -> None:
    (tmp_path / "triton-env.toml").write_text('[environment]\npython = "3.12"\ntorch = "==2.6.0"\n')
    code, out = _run("resolve", "-p", str(tmp_path), "--dry-run", "--json")
    assert code == 0, out
    (t,) = json.loads(out)["targets"]
    assert (t["name"], t["python"]) == ("host", "3.12")  # this interpreter is 3.11
