"""HTTPS to indexes as pip reaches them: pip's `cert` as the CA bundle, else the system trust store as pip's
truststore reads it; pip's `client-cert`. Each bundle is read once per session into a TLS context its connections
share (requests would read it again for every new connection: 25–60 ms of CPU each, where the native-code read
opens dozens)."""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
from typing import Any


def session(net: Any) -> Any:
    """A requests session that reaches indexes as pip does: pip's `cert` as the CA bundle, else the system
    trust store as truststore (pip's default since 24.2) reads it; pip's `client-cert`. ~/.netrc is read by
    requests itself. `net`: pip's settings (tritonlock.lock.index.network())."""
    import ssl

    import requests
    from requests.adapters import HTTPAdapter

    from tritonlock import _dns

    _dns.install()  # each host looked up once, a stalled lookup asked again (see there)
    s = requests.Session()
    # as many kept-alive connections as the checks run threads (32): a new TLS handshake per request would cost
    # more than the request
    s.mount("http://", HTTPAdapter(pool_connections=4, pool_maxsize=32))
    ctx: ssl.SSLContext | None = _context(net.cert, net.client_cert)
    if ctx is None:
        s.mount("https://", HTTPAdapter(pool_connections=4, pool_maxsize=32))
    else:
        s.mount("https://", _shared_tls_adapter()(ctx, net.cert, net.client_cert, pool_connections=4,
                                                  pool_maxsize=32))
    if net.client_cert:
        s.cert = net.client_cert
    return s


_CONTEXTS = threading.Lock()


def _context(cert: str | None, client: str | None) -> Any:
    """The TLS context for pip's `cert` (else the system store) and `client-cert`: made once per process for the same
    files as they are now, and shared — each session loaded its own (50 ms of CPU each, three sessions started at once
    in a resolve). None where ssl cannot read them (requests then reads them per connection and says why it fails)."""
    env = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _CONTEXTS:  # (the sessions start in threads at once: the second waits for the first's context)
        return _made(cert, client, _stamp(cert), _stamp(client), env)


def _stamp(path: str | None) -> tuple[int, int] | None:
    try:
        st = os.stat(path) if path else None
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size) if st else None


@functools.lru_cache(maxsize=8)
def _made(cert: str | None, client: str | None, *files: object) -> Any:
    import ssl

    ctx: ssl.SSLContext | None
    if cert:
        try:  # read once here (requests would read the bundle again for every new connection: 25 ms of CPU each)
            ctx = (ssl.create_default_context(capath=cert) if os.path.isdir(cert)
                   else ssl.create_default_context(cafile=cert))
        except (ssl.SSLError, OSError, ValueError):
            ctx = None  # not a bundle ssl reads: requests reads it per request and says why it fails there
    else:
        ctx = _system_trust()
    if ctx is not None and client:
        try:  # pip's client certificate, in the context too (not loaded into a shared one per connection)
            ctx.load_cert_chain(client)
        except (ssl.SSLError, OSError, ValueError):
            ctx = None  # requests loads it per connection, and says why it fails there
    return ctx


# Where Linux distributions keep the system's CA bundle (for an OpenSSL built to look elsewhere): Alpine, Arch, Fedora
# and RHEL 9+; Fedora 44+ and RHEL 11+; older Fedora, RHEL and CentOS; Debian and Ubuntu; SUSE
_SYSTEM_BUNDLES = ("/etc/ssl/cert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/pki/tls/cert.pem",
                   "/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/ca-bundle.pem")


def _system_trust() -> Any:
    """The system trust store, as pip's truststore reads it. On macOS and Windows that is truststore itself (the
    OS verifies each connection). Elsewhere truststore is OpenSSL's default verify paths (SSL_CERT_FILE and
    SSL_CERT_DIR, else where OpenSSL was built to look), else the distribution's bundle — which it reloads for
    every connection (60 ms of CPU each): here it is loaded once into the context every connection shares."""
    import ssl

    if sys.platform in ("darwin", "win32"):
        import truststore

        return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx = ssl.create_default_context()  # OpenSSL's default verify paths, loaded now
    paths = ssl.get_default_verify_paths()
    has_dir = bool(paths.capath) and os.path.isdir(paths.capath or "") and any(
        re.fullmatch(r"[0-9a-fA-F]{8}\.[0-9]", n) for n in os.listdir(paths.capath or "."))
    if not paths.cafile and not has_dir:
        bundle = next((f for f in _SYSTEM_BUNDLES if os.path.isfile(f)), None)
        if bundle is not None:
            ctx.load_verify_locations(cafile=bundle)
    return ctx


@functools.lru_cache(maxsize=1)
def _shared_tls_adapter() -> Any:
    """The adapter class (made on first use: requests is imported lazily)."""
    from requests.adapters import HTTPAdapter

    class SharedTLS(HTTPAdapter):
        """HTTPS through TLS contexts loaded once: pip's CA bundle (or the system store) and client certificate in the
        one every connection shares, any other bundle a request is verified against (REQUESTS_CA_BUNDLE,
        CURL_CA_BUNDLE) in one of its own, kept — where requests would hand the files to each new connection to
        read again (into a context other threads are handshaking with, for a client certificate)."""

        def __init__(self, ctx: Any, loaded: str | None, client: str | None, **kw: Any) -> None:
            import threading

            self._ctx, self._loaded, self._client = ctx, loaded, client
            self._others: dict[str, Any] = {}
            self._lock = threading.Lock()
            super().__init__(**kw)

        def init_poolmanager(self, *args: Any, **kwargs: Any) -> Any:
            kwargs["ssl_context"] = self._ctx
            return super().init_poolmanager(*args, **kwargs)

        def proxy_manager_for(self, *args: Any, **kwargs: Any) -> Any:
            kwargs["ssl_context"] = self._ctx
            return super().proxy_manager_for(*args, **kwargs)

        def _context_for(self, bundle: str) -> Any:
            import ssl

            if bundle == self._loaded:
                return self._ctx
            with self._lock:
                if bundle not in self._others:
                    try:  # the system store too where that is what this session trusts (as truststore adds it)
                        ctx = _system_trust() if self._loaded is None else ssl.create_default_context()
                        if os.path.isdir(bundle):
                            ctx.load_verify_locations(capath=bundle)
                        else:
                            ctx.load_verify_locations(cafile=bundle)
                        if self._client:
                            ctx.load_cert_chain(self._client)
                    except (ssl.SSLError, OSError, ValueError):
                        ctx = None  # requests reads it per connection, and says why it fails there
                    self._others[bundle] = ctx
                return self._others[bundle]

        def _serving(self, url: str, verify: Any, cert: Any) -> Any:
            """The context that holds what this request is verified against and presents, if one does."""
            if not url.lower().startswith("https") or verify is False or cert != self._client:
                return None
            return self._context_for(verify) if isinstance(verify, str) else self._ctx

        def cert_verify(self, conn: Any, url: str, verify: Any, cert: Any) -> None:
            super().cert_verify(conn, url, verify, cert)  # (sets the pool's files, read by each new connection)
            if self._serving(url, verify, cert) is not None:  # its pool's context holds them already
                conn.ca_certs = conn.ca_cert_dir = conn.cert_file = conn.key_file = None

        def build_connection_pool_key_attributes(self, request: Any, verify: Any, cert: Any = None) -> Any:
            params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
            ctx = self._serving(request.url or "", verify, cert)
            if ctx is not None:
                for key in ("ca_certs", "ca_cert_dir", "cert_file", "key_file"):
                    pool_kwargs.pop(key, None)
                pool_kwargs["ssl_context"] = ctx
            return params, pool_kwargs

    return SharedTLS
