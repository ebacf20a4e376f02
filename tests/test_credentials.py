"""Credentials: an index that wants HTTP basic auth works for resolve, sync and the index client, with the
secret taken from where the user keeps it (the intent's URL, PIP_INDEX_URL, ~/.netrc, keyring) — and the secret
appears in no file and no output: not in the lock, `show`, `resolve --dry-run --json`, an export, an error."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import populate
from pkgindex import LocalIndex
from tritonlock import _urls
from tritonlock.lock import index
from tritonlock.cli import main

SECRET = "s3cr3t-t0ken-4a1b"
USER = "alice"
INTENT = '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\npackages = ["einops"]\n'


@pytest.fixture(scope="module")
def auth_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("auth-index"), auth=(USER, SECRET))
    populate(idx)
    idx.start()
    yield idx
    idx.stop()


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No credential or pip setting from the machine or from another test; uv's cache is the test's own."""
    for k in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CERT", "PIP_CLIENT_CERT", "PIP_KEYRING_PROVIDER"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setattr(index, "_pip_config_files", lambda: [])
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")

    def clear() -> None:
        _urls.forget()
        index.default_index.cache_clear()
        index.network.cache_clear()

    clear()
    yield
    clear()


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), env=env)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.output


def _no_secret_anywhere(*roots: Path, outputs: list[str]) -> None:
    for out in outputs:
        assert SECRET not in out, out
    for root in roots:
        for f in root.rglob("*"):
            if f.is_file() and not f.is_symlink() and f.name != "triton-env.toml":  # (the user's own file)
                assert SECRET.encode() not in f.read_bytes(), f


def _lock_sync_export(proj: Path, env: dict[str, str] | None = None) -> list[str]:
    outputs = []
    for args in (("resolve",), ("resolve", "--dry-run", "--json"), ("show",), ("show", "--json"),
                 ("sync", "--no-verify"), ("sync", "--no-verify", "--dry-run", "--json"),
                 ("export", "--format", "pylock"), ("export", "--format", "requirements"),
                 ("export", "--format", "dockerfile"), ("export", "--format", "devcontainer"),
                 ("doctor", "--json"), ("check",), ("check", "--json"), ("why",), ("why", "--json"),
                 ("export", "--format", "slurm", "-o", str(proj / "verify.sbatch")),
                 ("export", "--format", "k8s", "--image", "x", "-o", str(proj / "verify.yaml"))):
        code, out = _run(*args, "-p", str(proj), env=env)
        assert code in ((0, 1) if args[0] == "doctor" else (0,)), (args, out)
        outputs.append(out)
    return outputs


def _installed(proj: Path) -> str:
    py = proj / ".venv" / "bin" / "python"
    return subprocess.run([str(py), "-c", "import torch, einops; print(torch.__version__)"], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_credentials_in_the_intent_are_used_and_never_written(tmp_path: Path, auth_index: LocalIndex) -> None:
    host = auth_index.url.split("//")[1]
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "triton-env.toml").write_text(
        INTENT + f'[indexes]\ntorch = "http://{USER}:{SECRET}@{host}/whl/{{backend}}"\n'
                 f'default = "http://{USER}:{SECRET}@{host}/simple"\n')
    before = len(auth_index.seen_auth)
    outputs = _lock_sync_export(proj)
    assert _installed(proj) == "2.6.0+cpu"
    assert len(auth_index.seen_auth) > before and set(auth_index.seen_auth) == {USER}
    lock = (proj / "triton-env.lock").read_text()
    assert f'default-index = "http://{host}/simple"' in lock and f'index = "http://{host}/whl/cpu"' in lock
    _no_secret_anywhere(proj, tmp_path / "uv-cache", outputs=outputs)
    # not even a hash of the secret is kept: a new token leaves the lock fresh
    intent = proj / "triton-env.toml"
    intent.write_text(intent.read_text().replace(SECRET, "another-token"))
    code, out = _run("resolve", "-p", str(proj))
    assert code == 0 and "is up to date" in out, out


def test_credentials_only_in_pip_index_url(tmp_path: Path, auth_index: LocalIndex,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    host = auth_index.url.split("//")[1]
    monkeypatch.setenv("PIP_INDEX_URL", f"http://{USER}:{SECRET}@{host}/simple")
    proj = tmp_path / "p"
    proj.mkdir()
    # the torch index is on the same host: pip's rule (credentials by host) lets it use the same credentials
    (proj / "triton-env.toml").write_text(INTENT + f'[indexes]\ntorch = "http://{host}/whl/{{backend}}"\n')
    outputs = _lock_sync_export(proj)
    assert _installed(proj) == "2.6.0+cpu"
    _no_secret_anywhere(proj, tmp_path / "uv-cache", outputs=outputs)


def test_credentials_from_netrc(tmp_path: Path, auth_index: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login {USER} password {SECRET}\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "triton-env.toml").write_text(INTENT + f'[indexes]\ntorch = "{auth_index.url}/whl/{{backend}}"\n'
                                                   f'default = "{auth_index.index_url("simple")}"\n')
    outputs = _lock_sync_export(proj)
    assert _installed(proj) == "2.6.0+cpu"
    files = index.IndexClient(auth_index.index_url("simple")).files("einops")
    assert [f.filename for f in files] == ["einops-0.8.0-py3-none-any.whl"]
    _no_secret_anywhere(proj, outputs=outputs)


def test_credentials_from_keyring_only_after_the_index_asks(tmp_path: Path, auth_index: LocalIndex,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import keyring_backend_for_tests as kb

    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring_backend_for_tests.Backend")
    monkeypatch.setenv("TL_TEST_KEYRING", f"127.0.0.1 {USER} {SECRET}")
    import keyring.backends.null
    import keyring.core

    keyring.core.set_keyring(kb.Backend())
    try:
        kb.ASKED.clear()
        files = index.IndexClient(auth_index.index_url("simple")).files("einops")
        assert [f.filename for f in files] == ["einops-0.8.0-py3-none-any.whl"]
        assert kb.ASKED  # asked after the 401
        proj = tmp_path / "p"
        proj.mkdir()
        (proj / "triton-env.toml").write_text(INTENT + f'[indexes]\ntorch = "{auth_index.url}/whl/{{backend}}"\n'
                                                       f'default = "{auth_index.index_url("simple")}"\n')
        outputs = _lock_sync_export(proj)
        assert _installed(proj) == "2.6.0+cpu"
        _no_secret_anywhere(proj, tmp_path / "uv-cache", outputs=outputs)
        # pip's keyring-provider = "disabled" is honoured
        index.network.cache_clear()
        monkeypatch.setenv("PIP_KEYRING_PROVIDER", "disabled")
        kb.ASKED.clear()
        with pytest.raises(Exception, match="answered HTTP 401 — give credentials as pip takes them"):
            index.IndexClient(auth_index.index_url("simple"), retries=1).files("einops")
        assert kb.ASKED == []
    finally:
        keyring.core.set_keyring(keyring.backends.null.Keyring())


def test_without_credentials_a_clean_error_and_wrong_ones_are_not_shown(tmp_path: Path,
                                                                       auth_index: LocalIndex) -> None:
    host = auth_index.url.split("//")[1]
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "triton-env.toml").write_text(INTENT + f'[indexes]\ntorch = "http://{host}/whl/{{backend}}"\n'
                                                   f'default = "http://{USER}:wrong-{SECRET}@{host}/simple"\n')
    code, out = _run("resolve", "-p", str(proj))
    assert code == 4, out
    assert "401" in out and "give credentials as pip takes them" in out and "Traceback" not in out
    assert "--keyring-provider" not in out and "--native-tls" not in out and "--system-certs" not in out
    _no_secret_anywhere(proj, outputs=[out])
    # the intent's own errors never echo the secret either
    (proj / "triton-env.toml").write_text(INTENT + f'[indexes]\ndefault = "http://{USER}:{SECRET}@exa mple/x"\n')
    code, out = _run("resolve", "--dry-run", "-p", str(proj))
    assert code == 2 and "has spaces" in out and SECRET not in out and "***@" in out


def test_redact_and_strip() -> None:
    assert _urls.strip_credentials("https://u:p@h.example:8443/simple") == "https://h.example:8443/simple"
    assert _urls.strip_credentials("https://h.example/simple") == "https://h.example/simple"
    assert _urls.credentials("https://us%40er:p%3Ass@h.example/") == ("us@er", "p:ss")
    assert _urls.redact("failed: https://u:tok@h.example/x and http://a@b/c") == \
        "failed: https://***@h.example/x and http://***@b/c"


# ---------------------------------------------------------------- secrets with raw "/", "@" and more

from urllib.parse import unquote  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# What people paste into index URLs without percent-encoding: any printable ASCII but space, quotes and backslash
# (a base64 token: letters, digits, "+", "/", "="; a password: "@", ":", "#", "?", "%"…).
BROAD = "".join(c for c in map(chr, range(33, 127)) if c not in "\"'\\`<>")
BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_@"
secrets_ = st.text(BROAD, min_size=10, max_size=40).filter(lambda s: len(set(s)) >= 5)
tokens = st.text(BASE64, min_size=12, max_size=40).filter(lambda s: len(set(s)) >= 5)
HOSTS = ["127.0.0.1:8123", "pypi.example.com", "nexus:8081", "localhost:8123", "[::1]:8123", "mirror.example:443"]


def _hidden(secret: str, text: str) -> bool:
    return all(s not in text for s in {secret, unquote(secret)} if len(s) >= 8)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(secret=secrets_, token=tokens, host=st.sampled_from(HOSTS), path=st.sampled_from(["/simple", "/whl/cu126",
                                                                                          "/simple/", ""]))
def test_a_url_with_a_raw_secret_parses_to_its_host_and_the_secret_is_never_shown(secret: str, token: str, host: str,
                                                                                path: str) -> None:
    bare = f"https://{host}{path}"
    name, _, port = host.rpartition(":") if host.rsplit(":", 1)[-1].isdigit() else (host, "", "")
    for url, user, password in ((f"https://alice:{secret}@{host}{path}", "alice", secret),
                                (f"https://{token}@{host}{path}", token, None)):
        assert _urls.origin(url) == ("https", name.strip("[]"), int(port) if port else None), url
        got = _urls.credentials(url)
        assert got == (unquote(user), unquote(password) if password is not None else ""), (url, got)
        assert _urls.strip_credentials(url) == bare and not _urls.has_credentials(bare)
        assert _urls.problem(url) is None, url
        for text in (_urls.redact(f"uv said: {url} (HTTP 401)"), _urls.strip_credentials(url), _urls.shown(url, 60),
                     _urls.strip_all_credentials(f"url: {url}\n")):
            assert _hidden(password or user, text), text
        again = _urls.with_credentials(bare, *got)
        assert _urls.credentials(again) == got and _urls.origin(again) == _urls.origin(url)


def _dry_run(proj: Path, env: dict[str, str]) -> tuple[int, str]:
    _urls.forget()
    index.default_index.cache_clear()
    index._learn_pip_urls.cache_clear()
    r = CliRunner().invoke(main, ["resolve", "--dry-run", "--json", "-p", str(proj)], env=env)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.stdout + (r.stderr if r.stderr_bytes is not None else "")


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret=secrets_, source=st.sampled_from(["intent", "PIP_INDEX_URL", "pip.conf"]),
       bad_port=st.booleans())
def test_every_source_of_a_raw_secret_gives_the_right_host_and_never_the_secret(tmp_path: Path, secret: str,
                                                                              source: str, bad_port: bool) -> None:
    """resolve --dry-run names the index it would use (its host parsed right, the secret nowhere); a URL that is
    otherwise wrong (a port out of range) is an error that shows no secret either — whichever source it came from."""
    port = "99999" if bad_port else "8123"
    url = f"http://alice:{secret}@127.0.0.1:{port}/simple"
    import tempfile

    proj = Path(tempfile.mkdtemp(dir=tmp_path))
    indexes = '[indexes]\ntorch = "default"\n'
    env = {"PIP_INDEX_URL": None, "PIP_CONFIG_FILE": os.devnull}
    conf = proj / "pip.conf"
    if source == "intent":
        import json as _json

        indexes += f"default = {_json.dumps(url)}\n"
    elif source == "PIP_INDEX_URL":
        env["PIP_INDEX_URL"] = url
    else:
        conf.write_text(f"[global]\nindex-url = {url}\n")
        env["PIP_CONFIG_FILE"] = str(conf)
    (proj / "triton-env.toml").write_text('[environment]\npython = "3.11"\ntorch = "==2.6.0"\n'
                                          + indexes)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index, "_pip_config_files", lambda: [conf] if source == "pip.conf" else [])
        code, out = _dry_run(proj, env)
    assert _hidden(secret, out), out
    if bad_port:
        assert code == 2 and "not a valid URL" in out, out
    else:
        assert code == 0 and '"index": "http://127.0.0.1:8123/simple"' in out, out


NASTY = ["S3@CR/ET", "ab/cd+ef/gh==", "p@ss:w/rd#1?x%z"]


@pytest.fixture(scope="module", params=NASTY)
def nasty_index(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("nasty-index"), auth=(USER, unquote(request.param)))
    populate(idx)
    idx.start()
    idx.secret = request.param  # type: ignore[attr-defined]
    yield idx
    idx.stop()


@pytest.mark.parametrize("source", ["intent", "PIP_INDEX_URL", "pip.conf"])
def test_a_raw_secret_reaches_its_own_host_and_appears_nowhere(tmp_path: Path, nasty_index: LocalIndex, source: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The index wants exactly that password: resolve, sync, show, export, check and why work (so the host and the
    password were parsed right) and neither the secret nor its decoded form is in any output or file."""
    secret = nasty_index.secret  # type: ignore[attr-defined]
    host = nasty_index.url.split("//")[1]
    url = f"http://{USER}:{secret}@{host}"
    proj = tmp_path / "p"
    proj.mkdir()
    indexes = f'[indexes]\ntorch = "http://{host}/whl/{{backend}}"\n'
    if source == "intent":
        indexes = f'[indexes]\ntorch = "{url}/whl/{{backend}}"\ndefault = "{url}/simple"\n'
    elif source == "PIP_INDEX_URL":
        monkeypatch.setenv("PIP_INDEX_URL", f"{url}/simple")
    else:
        conf = tmp_path / "pip.conf"
        conf.write_text(f"[global]\nindex-url = {url}/simple\n")
        monkeypatch.setattr(index, "_pip_config_files", lambda: [conf])
    (proj / "triton-env.toml").write_text(INTENT + indexes)
    outputs = _lock_sync_export(proj)
    assert _installed(proj) == "2.6.0+cpu" and set(nasty_index.seen_auth) == {USER}
    lock = (proj / "triton-env.lock").read_text()
    assert f'index = "http://{host}/whl/cpu"' in lock
    for text in outputs + [lock]:
        assert _hidden(secret, text), text
    for f in proj.rglob("*"):
        if f.is_file() and not f.is_symlink() and f.name != "triton-env.toml":
            data = f.read_bytes()
            assert secret.encode() not in data and unquote(secret).encode() not in data, f
def test_credentials_go_only_to_their_own_origin(tmp_path: Path, auth_index: LocalIndex) -> None:
    """The credentials in the default index's URL are for its origin — scheme, host and port, as pip matches them —
    not for every index on the same host: a torch index on 127.0.0.1 at another port (or scheme) never receives them.
    (Matched by host alone, the second index would see the user's name in every request.)"""
    other = LocalIndex(tmp_path / "other")
    populate(other)
    other.start()
    try:
        host = auth_index.url.split("//")[1]
        proj = tmp_path / "p"
        proj.mkdir()
        (proj / "triton-env.toml").write_text(
            INTENT + f'[indexes]\ntorch = "{other.url}/whl/{{backend}}"\n'
                     f'default = "http://{USER}:{SECRET}@{host}/simple"\n')
        for args in (("resolve",), ("sync", "--no-verify")):
            code, out = _run(*args, "-p", str(proj))
            assert code == 0, (args, out)
        assert other.requests and other.seen_auth == [], other.seen_auth  # asked, and never handed a credential
        assert set(auth_index.seen_auth) == {USER}
        same_host = other.url.split("//")[1].split(":")[0] == host.split(":")[0]
        assert same_host and other.url != auth_index.url  # one host, two ports: the case host matching gets wrong
        for url in (f"{other.url}/simple/", f"https://{host}/simple/", f"{auth_index.url}/simple/einops/"):
            assert index.credentials(url) == (None if url.startswith((other.url, "https")) else (USER, SECRET)), url
    finally:
        other.stop()
