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
            if f.is_file() and not f.is_symlink() and f.name not in ("triton-env.toml", "pyproject.toml"):  # (theirs)
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

from urllib.parse import unquote, urlsplit  # noqa: E402

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
        # what the credentials become for every other reader — uv, requests, urllib — read with a strict parser
        # (urllib's, which ends the host at the first "/" and the user information at the last "@"): the host, the
        # user and the password come back whole, so a "/", "@", ":" or "#" in them was percent-encoded
        strict = urlsplit(_urls.normalize(url))
        assert (strict.hostname, strict.port) == (name.strip("[]").lower(), int(port) if port else None), (url, strict)
        assert (unquote(strict.username or ""), unquote(strict.password or "")) == got, (url, strict)
        assert strict.path == path and not strict.query and not strict.fragment, (url, strict)


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


# ---------------------------------------------------------------- each command in its own process, as users run them

def _tl_process(proj: Path, tmp_path: Path, *args: str) -> tuple[int, str]:
    """tritonlock in a process of its own (what a user runs: nothing learned by an earlier command survives), with no
    credential from the machine: not pip's configuration, ~/.netrc or a keyring."""
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "TRITONLOCK_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, NETRC=str(tmp_path / "no-netrc"), UV_CACHE_DIR=str(tmp_path / "uv-cache"),
               UV_PYTHON_DOWNLOADS="never", PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
               TRITONLOCK_NATIVE_CACHE=str(tmp_path / "tl-cache"))
    r = subprocess.run([sys.executable, "-m", "tritonlock", *args, "-p", str(proj)], capture_output=True, text=True,
                       env=env, timeout=300)
    return r.returncode, r.stdout + r.stderr


@pytest.mark.parametrize("intent_file", ["triton-env.toml", "pyproject.toml"])
def test_credentials_in_the_intent_reach_a_sync_run_on_its_own(tmp_path: Path, auth_index: LocalIndex,
                                                              intent_file: str) -> None:
    """`resolve`, then `sync` in a new process: the lock is fresh, so sync does not parse the intent — and still
    installs with the credentials written in its [indexes] (it got HTTP 401, and advised writing them there). The
    wheelhouse export, also a process of its own, too; no secret in any output or file."""
    host = auth_index.url.split("//")[1]
    proj = tmp_path / "p"
    proj.mkdir()
    indexes = (f'torch = "http://{USER}:{SECRET}@{host}/whl/{{backend}}"\n'
               f'default = "http://{USER}:{SECRET}@{host}/simple"\n')
    if intent_file == "triton-env.toml":
        (proj / intent_file).write_text(INTENT + "[indexes]\n" + indexes)
    else:
        (proj / intent_file).write_text(
            '[project]\nname = "p"\nversion = "0"\ndependencies = ["einops"]\n[tool.tritonlock.environment]\n'
            'python = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n[tool.tritonlock.indexes]\n' + indexes)
    outputs = []
    for args in (("resolve",), ("sync", "--no-verify"), ("sync", "--no-verify", "--reinstall"),
                 ("export", "--format", "wheelhouse", "-o", str(tmp_path / "wheels"))):
        code, out = _tl_process(proj, tmp_path, *args)
        assert code == 0, (args, out)
        outputs.append(out)
    assert "is up to date" not in outputs[1] and "6 installed" in outputs[1], outputs[1]
    assert _installed(proj) == "2.6.0+cpu"
    _no_secret_anywhere(proj, tmp_path / "uv-cache", tmp_path / "wheels", outputs=outputs)


def _two_token_index(root: Path, torch_path: str) -> LocalIndex:
    """One server, two indexes, each wanting its own credentials: the torch index at `torch_path`/cpu (for
    "whl": beside the default index; for "simple/whl": inside its path) and the default index at /simple."""
    idx = LocalIndex(root, path_auth={"/simple/": ("bob", "b0b-S3CRET/x"),
                                      f"/{torch_path}/": ("tina", "T1NA/t0ken+=")})
    idx.add(f"{torch_path}/cpu", "torch", "2.6.0+cpu", requires=("filelock>=3.0",),
            tag="py3-none-manylinux_2_17_x86_64")
    for name, version, kw in (("filelock", "3.16.1", {}), ("einops", "0.8.0", {"requires": ("typing-extensions>=4",)}),
                              ("typing-extensions", "4.12.2", {}),
                              ("numpy", "1.26.4", {"tag": "py3-none-manylinux_2_17_x86_64"}),
                              ("triton", "3.2.0", {"tag": "py3-none-manylinux_2_17_x86_64"})):
        idx.add("simple", name, version, **kw)  # type: ignore[arg-type]
    return idx.start()


@pytest.mark.parametrize("torch_path", ["whl", "simple/whl"])
def test_two_indexes_on_one_server_wanting_two_tokens_say_why_uv_fails(tmp_path: Path, torch_path: str) -> None:
    """Two indexes on one host (beside each other, or one inside the other's path), each wanting its own token: uv
    (0.13) sends a host the credentials it used there first, so the other index answers 401, which uv reports as "not
    found". resolve fails saying that, naming both indexes without their secrets, and what to do."""
    idx = _two_token_index(tmp_path / "index", torch_path)
    try:
        host = idx.url.split("//")[1]
        proj = tmp_path / "p"
        proj.mkdir()
        (proj / "triton-env.toml").write_text(
            INTENT + f'[indexes]\ntorch = "http://tina:T1NA/t0ken+=@{host}/{torch_path}/{{backend}}"\n'
                     f'default = "http://bob:b0b-S3CRET/x@{host}/simple"\n')
        code, out = _tl_process(proj, tmp_path, "resolve")
        assert code == 4, out
        assert (f"hint: http://{host}/{torch_path}/{{backend}} and http://{host}/simple are on one host and want "
                "different credentials, and uv hands a host one set of credentials") in out, out
        assert "give both indexes one token that reads both" in out and "T1NA" not in out and "b0b-S3" not in out
        # with one token for both, the same layout locks and installs (each path checks its own; both accept it)
        idx.path_auth.update({"/simple/": ("tina", "T1NA/t0ken+="), f"/{torch_path}/": ("tina", "T1NA/t0ken+=")})
        intent = proj / "triton-env.toml"
        intent.write_text(intent.read_text().replace("bob:b0b-S3CRET/x", "tina:T1NA/t0ken+="))
        for args in (("resolve",), ("sync", "--no-verify")):
            code, out = _tl_process(proj, tmp_path, *args)
            assert code == 0, (args, out)
        assert _installed(proj) == "2.6.0+cpu"
        assert any(p.startswith(f"/{torch_path}/cpu/_files/torch-") for p, _ in idx.seen_auth_at), idx.seen_auth_at
    finally:
        idx.stop()


@pytest.mark.parametrize("order", ["outer first", "inner first"])
def test_credentials_are_matched_by_the_deepest_index_path_that_holds_the_url(order: str) -> None:
    """credentials(url) with several indexes on one origin: the index whose path holds the URL wins, the deepest of
    nested ones; a path shared in part counts by whole segments ("/simple-x" is not inside "/simple"); with no
    better match, the first learned — in either order of learning."""
    outer, inner = "https://a:A@h.example/simple/", "https://b:B@h.example/simple/private"
    other = "https://c:C@h.example/whl/{backend}"  # ([indexes].torch, as written: any backend's path is its)
    for url in ([outer, inner, other] if order == "outer first" else [inner, other, outer]):
        _urls.learn(url)
    # a torch index inside the default index's path: {backend} is any backend's segment, and no other
    _urls.learn("https://d:D@g.example/pypi")
    _urls.learn("https://e:E@g.example/pypi/{backend}")
    assert index.credentials("https://g.example/pypi/cu130/torch/") == ("e", "E")
    assert index.credentials("https://g.example/pypi/rocm6.4/_files/torch.whl") == ("e", "E")
    assert index.credentials("https://g.example/pypi/numpy/") == ("d", "D")
    cases = {"https://h.example/simple/private/pkg/": ("b", "B"), "https://h.example/simple/private": ("b", "B"),
             "https://h.example/simple/pkg/": ("a", "A"), "https://h.example/simple": ("a", "A"),
             "https://h.example/simple/_files/x.whl": ("a", "A"), "https://h.example/whl/cu126/torch/": ("c", "C"),
             "https://h.example/whl/cu128/_files/torch.whl": ("c", "C"), "https://h.example/whl": ("c", "C"),
             "https://h.example/simple-x/pkg/": None, "http://h.example/simple/pkg/": None,
             "https://h.example:8443/simple/pkg/": None, "https://other.example/simple/pkg/": None}
    first = ("a", "A") if order == "outer first" else ("b", "B")
    for url, want in cases.items():
        got = index.credentials(url)
        assert got == (first if want is None and url.startswith("https://h.example/") else want), (url, got)
