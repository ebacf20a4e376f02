"""What reaches uv from the user's environment: pip's credentials reach `sync` as they reached `resolve` (each in
its own process, as users run them), pip's extra-index-url is named as not used, and the user's own UV_* settings
never change the lock or the install."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import populate
from pkgindex import LocalIndex
from tritonlock import _urls
from tritonlock.environment import _venv

USER = "alice"
SECRET = "p@ss-s3cr3t-9f2e"  # a raw @ in the password, as people paste it
INTENT = '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\npackages = [{extra}]\n'


@pytest.fixture(scope="module")
def auth_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("env-auth-index"), auth=(USER, SECRET))
    populate(idx)
    idx.add("extra", "onlyextra", "1.0")  # a second index, as pip's extra-index-url names one
    idx.start()
    yield idx
    idx.stop()


@pytest.fixture(scope="module")
def plain_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("env-plain-index"))
    populate(idx)
    idx.add("extra", "onlyextra", "1.0")
    idx.start()
    yield idx
    idx.stop()


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This machine's environment without any pip or uv setting of its own, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "TRITONLOCK_"))}
    env.update({"PIP_CONFIG_FILE": os.devnull, "NETRC": str(tmp_path / "no-netrc"), "UV_PYTHON_DOWNLOADS": "never",
                "UV_CACHE_DIR": str(tmp_path / "uv-cache"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
                "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring", **extra})
    return env


def _tl(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tritonlock", *args], capture_output=True, text=True, env=env)


def _no_secret(*outputs: str) -> None:
    for out in outputs:
        for part in (SECRET, SECRET.split("@")[1], "p@ss"):
            assert part not in out, out


# ---------------------------------------------------------------- credentials only in pip's configuration


@pytest.mark.parametrize("where", ["PIP_INDEX_URL", "pip.conf"])
def test_credentials_only_in_pips_configuration_reach_a_sync_in_another_process(
        tmp_path: Path, auth_index: LocalIndex, where: str) -> None:
    host = auth_index.url.split("//")[1]
    url = f"http://{USER}:{SECRET}@{host}/simple"
    if where == "pip.conf":
        conf = tmp_path / "pip.conf"
        conf.write_text(f"[global]\nindex-url = {url}\n")
        env = _env(tmp_path, PIP_CONFIG_FILE=str(conf))
    else:
        env = _env(tmp_path, PIP_INDEX_URL=url)
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "triton-env.toml").write_text(INTENT.format(extra='"einops"')
                                          + f'[indexes]\ntorch = "http://{host}/whl/{{backend}}"\n')
    r1 = _tl("resolve", "-p", str(proj), env=env)
    assert r1.returncode == 0, r1.stderr
    r2 = _tl("sync", "-p", str(proj), "--no-verify", env=env)  # a new process: nothing learned by resolve
    assert r2.returncode == 0, r2.stdout + r2.stderr
    assert "einops" in _venv.venv_dists(proj / ".venv") and _venv.venv_damage(proj / ".venv") == []
    _no_secret(r1.stdout + r1.stderr, r2.stdout + r2.stderr, (proj / "triton-env.lock").read_text())
    # a wrong password with a raw @ in it: the 401 is reported, and no piece of the password is shown
    bad = url.replace(SECRET, "wr@ng-" + SECRET)
    env = {**env, "PIP_INDEX_URL": bad}
    r3 = _tl("sync", "-p", str(proj), "--no-verify", "--reinstall", "einops", env={**env, "UV_CACHE_DIR":
                                                                                  str(tmp_path / "empty")})
    assert r3.returncode == 5 and "401" in r3.stdout + r3.stderr, r3
    r4 = _tl("resolve", "--upgrade", "-p", str(proj), env=env)
    assert r4.returncode == 4 and "401" in r4.stderr, r4
    _no_secret(r3.stdout + r3.stderr, r4.stdout + r4.stderr)
    assert "wr@ng" not in r3.stderr + r4.stderr, r3.stderr + r4.stderr
    assert "give credentials as pip takes them" in r3.stderr and "give credentials as pip takes them" in r4.stderr


def test_redact_hides_a_password_with_a_raw_at_whole() -> None:
    text = f"GET http://{USER}:{SECRET}@127.0.0.1:8080/simple/x/ failed; see https://u:a@b@c@h.example/y"
    assert _urls.redact(text) == "GET http://***@127.0.0.1:8080/simple/x/ failed; see https://***@h.example/y"
    assert _urls.strip_all_credentials("x http://u:p@q@h/ y") == "x http://h/ y"


# ---------------------------------------------------------------- pip's extra-index-url


def test_pips_extra_index_url_is_named_as_not_used(tmp_path: Path, plain_index: LocalIndex) -> None:
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "triton-env.toml").write_text(
        INTENT.format(extra='"onlyextra"') + f'[indexes]\ntorch = "{plain_index.url}/whl/{{backend}}"\n'
        f'default = "{plain_index.index_url("simple")}"\n')
    extra = plain_index.index_url("extra")
    r = _tl("resolve", "-p", str(proj), env=_env(tmp_path, PIP_EXTRA_INDEX_URL=extra))
    assert r.returncode == 4, r
    assert (f"note: pip's extra-index-url (PIP_EXTRA_INDEX_URL: {extra}) is not used: tritonlock binds every "
            "package to exactly one index") in r.stderr
    assert not (proj / "triton-env.lock").exists()
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nextra-index-url = {extra}\n")
    r = _tl("resolve", "-p", str(proj), env=_env(tmp_path, PIP_CONFIG_FILE=str(conf)))
    assert r.returncode == 4 and f"note: pip's extra-index-url ({conf} [global] extra-index-url: {extra})" in r.stderr
    # …and without it set, no such note
    r = _tl("resolve", "-p", str(proj), env=_env(tmp_path))
    assert r.returncode == 4 and "extra-index-url" not in r.stderr


# ---------------------------------------------------------------- the user's uv settings


def test_the_users_uv_settings_reach_neither_the_lock_nor_the_install(tmp_path: Path,
                                                                      plain_index: LocalIndex) -> None:
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "triton-env.toml").write_text(
        INTENT.format(extra='"einops"') + f'[indexes]\ntorch = "{plain_index.url}/whl/{{backend}}"\n'
        f'default = "{plain_index.index_url("simple")}"\n')
    clean = _env(tmp_path)
    r = _tl("resolve", "-p", str(proj), env=clean)
    assert r.returncode == 0, r.stderr
    want = (proj / "triton-env.lock").read_bytes()
    (tmp_path / "override.txt").write_text("filelock==3.12.0\n")
    (tmp_path / "constraint.txt").write_text("typing-extensions<4\n")
    (tmp_path / "links").mkdir()
    hostile = _env(tmp_path, UV_OVERRIDE=str(tmp_path / "override.txt"),
                   UV_CONSTRAINT=str(tmp_path / "constraint.txt"), UV_RESOLUTION="lowest", UV_PRERELEASE="allow",
                   UV_EXTRA_INDEX_URL=plain_index.index_url("extra"), UV_INDEX_STRATEGY="unsafe-best-match",
                   UV_INDEX=f"evil={plain_index.index_url('extra')}", UV_FIND_LINKS=str(tmp_path / "links"),
                   UV_NO_BINARY="1", UV_NO_BUILD_ISOLATION="1", UV_EXCLUDE_NEWER="2001-01-01T00:00:00Z",
                   UV_TORCH_BACKEND="cu126", UV_PYTHON="3.99")
    r = _tl("resolve", "--upgrade", "-p", str(proj), env=hostile)
    assert r.returncode == 0, r.stderr
    assert (proj / "triton-env.lock").read_bytes() == want
    r = _tl("sync", "-p", str(proj), "--no-verify", env=hostile)
    assert r.returncode == 0, r.stdout + r.stderr
    dists = _venv.venv_dists(proj / ".venv")
    assert dists["filelock"] == "3.16.1" and dists["typing-extensions"] == "4.12.2"
    assert _venv.venv_damage(proj / ".venv") == []
    r = _tl("check", "-p", str(proj), env=hostile)
    assert r.returncode == 0, r.stdout + r.stderr
