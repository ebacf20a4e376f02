"""TLS as pip does it: an HTTPS index signed by a private CA is trusted only through pip's configured `cert`
(or the system trust store, as pip's truststore reads it), a client certificate comes from pip's `client-cert`;
resolve, sync and the index client all follow — and a failure names pip's settings, never a flag we lack."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import certs
from conftest import populate
from pkgindex import LocalIndex
from tritonlock import _urls
from tritonlock.lock import index
from tritonlock.cli import main
from tritonlock.errors import IndexError_

INTENT = '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n'


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> certs.Certs:
    return certs.make(tmp_path_factory.mktemp("ca"))


def _index(tmp: Path, ca: certs.Certs, client: bool) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp, tls=(ca.server, ca.server_key), client_ca=ca.ca if client else None)
    populate(idx)
    idx.start()
    yield idx
    idx.stop()


@pytest.fixture(scope="module")
def https_index(tmp_path_factory: pytest.TempPathFactory, ca: certs.Certs) -> Iterator[LocalIndex]:
    yield from _index(tmp_path_factory.mktemp("https-index"), ca, client=False)


@pytest.fixture(scope="module")
def mtls_index(tmp_path_factory: pytest.TempPathFactory, ca: certs.Certs) -> Iterator[LocalIndex]:
    yield from _index(tmp_path_factory.mktemp("mtls-index"), ca, client=True)


@pytest.fixture(autouse=True)
def _pip_conf(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """pip's configuration is this test's pip.conf alone (the machine's own may set another `cert`)."""
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\n")
    for k in [k for k in os.environ if k.startswith(("PIP_", "SSL_", "UV_SYSTEM", "UV_NATIVE", "REQUESTS_CA", "CURL_CA"))]:
        monkeypatch.delenv(k)
    monkeypatch.setattr(index, "_pip_config_files", lambda: [conf])
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))

    def clear() -> None:
        _urls.forget()
        index.default_index.cache_clear()
        index.network.cache_clear()

    clear()
    yield conf
    clear()


def _project(tmp_path: Path, idx: LocalIndex) -> Path:
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "triton-env.toml").write_text(INTENT + f'[indexes]\ntorch = "{idx.url}/whl/{{backend}}"\n'
                                                   f'default = "{idx.index_url("simple")}"\n')
    return proj


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), env=env)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r.exit_code, r.output


def test_private_ca_is_trusted_only_through_pips_cert(tmp_path: Path, https_index: LocalIndex, ca: certs.Certs,
                                                      _pip_conf: Path) -> None:
    assert https_index.url.startswith("https://localhost:")
    proj = _project(tmp_path, https_index)
    code, out = _run("resolve", "-p", str(proj))
    assert code == 4, out
    assert "hint: to trust a private CA, set `cert = /path/to/ca.pem` in pip.conf (or PIP_CERT)" in out
    for flag in ("--native-tls", "--system-certs", "--cert ", "`--cert`", "--allow-insecure-host"):
        assert flag not in out, out
    with pytest.raises(IndexError_, match="TLS failed .* set `cert = /path/to/ca.pem` in pip.conf"):
        index.IndexClient(https_index.index_url("simple"), retries=1).files("filelock")

    _pip_conf.write_text(f"[global]\ncert = {ca.ca}\n")
    index.network.cache_clear()
    code, out = _run("resolve", "-p", str(proj))
    assert code == 0, out
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0, out
    assert (proj / ".venv").is_dir()
    files = index.IndexClient(https_index.index_url("simple")).files("filelock")
    assert {f.filename for f in files} == {"filelock-3.12.0-py3-none-any.whl", "filelock-3.16.1-py3-none-any.whl"}


def test_pip_cert_from_the_environment(tmp_path: Path, https_index: LocalIndex, ca: certs.Certs,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_CERT", str(ca.ca))
    proj = _project(tmp_path, https_index)
    code, out = _run("resolve", "-p", str(proj))
    assert code == 0, out


def test_client_certificate_from_pips_client_cert(tmp_path: Path, mtls_index: LocalIndex, ca: certs.Certs,
                                                  _pip_conf: Path) -> None:
    proj = _project(tmp_path, mtls_index)
    _pip_conf.write_text(f"[global]\ncert = {ca.ca}\n")
    code, out = _run("resolve", "-p", str(proj))
    assert code == 4 and "Traceback" not in out, out
    _pip_conf.write_text(f"[global]\ncert = {ca.ca}\nclient-cert = {ca.client}\n")
    index.network.cache_clear()
    code, out = _run("resolve", "-p", str(proj))
    assert code == 0, out
    code, out = _run("sync", "-p", str(proj), "--no-verify")
    assert code == 0, out
    assert index.IndexClient(mtls_index.index_url("simple")).files("einops")


def test_system_trust_store_through_truststore(tmp_path: Path, https_index: LocalIndex, ca: certs.Certs,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """No pip `cert`: the system store decides, as with pip's truststore. OpenSSL's store follows SSL_CERT_FILE,
    which certifi (requests' own bundle) ignores — so this passes only through the system store."""
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.ca))
    assert index.IndexClient(https_index.index_url("simple")).files("einops")
    proj = _project(tmp_path, https_index)
    code, out = _run("resolve", "-p", str(proj))
    assert code == 0, out


def test_a_missing_cert_file_is_bad_configuration(tmp_path: Path, https_index: LocalIndex, _pip_conf: Path) -> None:
    _pip_conf.write_text(f"[global]\ncert = {tmp_path / 'nope.pem'}\n")
    proj = _project(tmp_path, https_index)
    code, out = _run("resolve", "-p", str(proj))
    assert code == 2 and "[global] cert: " in out and "is not a file" in out, out


def test_uv_gets_the_settings_in_its_environment(ca: certs.Certs, _pip_conf: Path) -> None:
    env = index.uv_env(named={"torch": "https://x.example/whl/cpu"}, default="https://y.example/simple")
    assert env["UV_DEFAULT_INDEX"] == "tldefault=https://y.example/simple"
    assert ("UV_SYSTEM_CERTS" in env or "UV_NATIVE_TLS" in env) and "SSL_CERT_FILE" not in env
    _pip_conf.write_text(f"[global]\ncert = {ca.ca}\nclient-cert = {ca.client}\n")
    index.network.cache_clear()
    env = index.uv_env(named={})
    assert env["SSL_CERT_FILE"] == str(ca.ca) and env["SSL_CLIENT_CERT"] == str(ca.client)
    assert "UV_SYSTEM_CERTS" not in env


def test_pips_cert_is_read_once_into_the_tls_context_every_connection_shares(
        tmp_path: Path, https_index: LocalIndex, ca: certs.Certs, _pip_conf: Path) -> None:
    """A new connection does not read pip's CA bundle again (25 ms of CPU each, where the native-code read opens
    dozens): the session's one TLS context holds it, and it is what verifies — another CA's bundle fails."""
    import requests

    url = https_index.index_url("simple") + "/einops/"
    _pip_conf.write_text(f"[global]\ncert = {ca.ca}\n")
    index.network.cache_clear()
    s = index.session()
    for _ in range(3):  # a new connection each
        assert s.get(url, headers={"Connection": "close"}, timeout=30).status_code == 200
    manager = s.get_adapter(url).poolmanager
    pools = [manager.pools[k] for k in manager.pools.keys()]
    assert pools and all(p.ca_certs is None and p.conn_kw.get("ssl_context") is not None for p in pools)
    other = certs.make(tmp_path / "other-ca")
    _pip_conf.write_text(f"[global]\ncert = {other.ca}\n")
    index.network.cache_clear()
    with pytest.raises(requests.exceptions.SSLError):
        index.session().get(url, timeout=30)


def test_a_bundle_from_the_environment_is_read_once_too(https_index: LocalIndex, ca: certs.Certs,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """No pip `cert`, REQUESTS_CA_BUNDLE set (requests, as pip, verifies against it): read once into a context of
    its own, beside the system store; each new connection uses it."""
    url = https_index.index_url("simple") + "/einops/"
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca.ca))
    s = index.session()
    for _ in range(3):
        assert s.get(url, headers={"Connection": "close"}, timeout=30).status_code == 200
    manager = s.get_adapter(url).poolmanager
    pools = [manager.pools[k] for k in manager.pools.keys()]
    assert pools and all(p.ca_certs is None and p.conn_kw.get("ssl_context") is not None for p in pools)


def test_a_client_certificate_is_in_the_shared_context_for_connections_made_side_by_side(
        mtls_index: LocalIndex, ca: certs.Certs, _pip_conf: Path) -> None:
    """pip's client-cert is loaded once into the context every connection shares — not into it again by each new
    connection while others handshake with it (which crashed the process with OpenSSL's abort): 32 threads open
    connections at once, and every one presents the certificate."""
    from concurrent.futures import ThreadPoolExecutor

    _pip_conf.write_text(f"[global]\ncert = {ca.ca}\nclient-cert = {ca.client}\n")
    index.network.cache_clear()
    s = index.session()
    url = mtls_index.index_url("simple") + "/einops/"
    with ThreadPoolExecutor(32) as pool:
        codes = list(pool.map(lambda _: s.get(url, headers={"Connection": "close"}, timeout=60).status_code,
                              range(96)))
    assert codes == [200] * 96
    manager = s.get_adapter(url).poolmanager
    pools = [manager.pools[k] for k in manager.pools.keys()]
    assert pools and all(p.cert_file is None and p.ca_certs is None for p in pools)


def test_sessions_share_one_context_per_bundle_and_a_bundle_rewritten_in_place_is_read_again(
        tmp_path: Path, https_index: LocalIndex, ca: certs.Certs, _pip_conf: Path) -> None:
    """A resolve starts three sessions at once (index pages, release days, the integrity check): pip's bundle is read
    into one context they share (each read its own before: 50 ms of CPU each). A bundle rewritten in place — another
    CA under the same name — is read again: what it holds now is what verifies."""
    from concurrent.futures import ThreadPoolExecutor

    import requests

    url = https_index.index_url("simple") + "/einops/"
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(Path(ca.ca).read_bytes())
    _pip_conf.write_text(f"[global]\ncert = {bundle}\n")
    index.network.cache_clear()
    with ThreadPoolExecutor(3) as pool:
        sessions = list(pool.map(lambda _: index.session(), range(3)))
    for s in sessions:
        assert s.get(url, timeout=30).status_code == 200
    contexts = {id(s.get_adapter(url).poolmanager.connection_pool_kw["ssl_context"]) for s in sessions}
    assert len(contexts) == 1, contexts
    other = certs.make(tmp_path / "other-ca")
    bundle.write_bytes(Path(other.ca).read_bytes())
    index.network.cache_clear()
    with pytest.raises(requests.exceptions.SSLError):
        index.session().get(url, timeout=30)
