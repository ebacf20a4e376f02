"""A real local package index for tests: builds small wheels and serves them over HTTP (PEP 503 + 691)."""

from __future__ import annotations

import base64
import os
import hashlib
import html
import http.server
import io
import json
import re
import threading
import time
import urllib.parse
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def core_metadata(path: Path) -> bytes | None:
    """A wheel's METADATA, as an index serves it beside the file (PEP 658); None for anything else."""
    if not path.name.endswith(".whl") or not path.is_file():
        return None
    with zipfile.ZipFile(path) as zf:
        name = next((n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1), None)
        return zf.read(name) if name else None


def _requires_python(path: Path) -> str | None:
    meta = core_metadata(path)
    for line in (meta or b"").decode(errors="replace").splitlines():
        if line.startswith("Requires-Python:"):
            return line.split(":", 1)[1].strip()
    return None


def build_wheel(
    dest: Path,
    name: str,
    version: str,
    *,
    requires: tuple[str, ...] = (),
    tag: str = "py3-none-any",
    requires_python: str | None = None,
    modules: dict[str, str | bytes] | None = None,
    extras: tuple[str, ...] = (),
) -> Path:
    """Write a minimal, valid wheel (METADATA, WHEEL, RECORD and a module) and return its path; `modules` maps
    paths to text or bytes (a shared object the test compiled). `extras` are its Provides-Extra names (their
    requirements carry `extra == "…"` markers in `requires`)."""
    dist = re.sub(r"[-.]+", "_", name)
    base = f"{dist}-{version}"
    info = f"{base}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        meta.append(f"Requires-Python: {requires_python}")
    meta += [f"Provides-Extra: {e}" for e in extras]
    meta += [f"Requires-Dist: {r}" for r in requires]
    files: dict[str, bytes] = {}
    mods = modules if modules is not None else {
        f"{dist.lower()}/__init__.py": f"__version__ = {version!r}\n"
    }
    for path, text in mods.items():
        files[path] = text.encode() if isinstance(text, str) else text
    files[f"{info}/METADATA"] = ("\n".join(meta) + "\n").encode()
    files[f"{info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: tritonlock-tests\nRoot-Is-Purelib: true\nTag: {tag}\n"
    ).encode()
    record_lines = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record_lines.append(f"{path},sha256={digest},{len(data)}")
    record_lines.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record_lines) + "\n").encode()
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / f"{base}-{tag}.whl"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            zi = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if path.endswith(".so") or ".so." in path else 0o644) << 16
            zf.writestr(zi, data)
    out.write_bytes(buf.getvalue())
    return out


_BACKEND = """\
# An in-tree PEP 517 backend (stdlib only): builds the wheel by hand, after running the sdist's own build code.
import base64, hashlib, io, zipfile
{prelude}
NAME, VERSION, REQUIRES, MODULE = {name!r}, {version!r}, {requires!r}, {module!r}


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    dist = NAME.replace("-", "_")
    info = dist + "-" + VERSION + ".dist-info"
    files = {{
        MODULE + "/__init__.py": "__version__ = %r\\nBUILT_AGAINST = %r\\n" % (VERSION, globals().get("BUILT_AGAINST")),
        info + "/METADATA": "\\n".join(["Metadata-Version: 2.1", "Name: " + NAME, "Version: " + VERSION]
                                       + ["Requires-Dist: " + r for r in REQUIRES]) + "\\n",
        info + "/WHEEL": "Wheel-Version: 1.0\\nGenerator: tritonlock-tests\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    }}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(text.encode())))
    files[info + "/RECORD"] = "\\n".join(record + [info + "/RECORD,,"]) + "\\n"
    name = dist + "-" + VERSION + "-py3-none-any.whl"
    with zipfile.ZipFile(wheel_directory + "/" + name, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return name
"""


def build_sdist(
    dest: Path,
    name: str,
    version: str,
    *,
    requires: tuple[str, ...] = (),
    build_requires: tuple[str, ...] = (),
    prelude: str = "",
    setup_py: str | None = None,
    static_metadata: bool = True,
) -> Path:
    """Write a minimal sdist: PKG-INFO with static metadata (what a resolver reads without building), and an
    in-tree build backend that runs `prelude` first (e.g. `import torch`, as a build that needs torch does) and
    records `BUILT_AGAINST` (if the prelude sets it) in the module it builds. `setup_py`: a setup.py to ship too
    (read by tools that inspect sdists; the backend does not run it). `static_metadata` False: PKG-INFO says
    Metadata-Version 2.1, which a resolver may not trust (PEP 643), so it must run the backend to learn the
    dependencies."""
    import tarfile

    dist = re.sub(r"[-.]+", "_", name)
    base = f"{dist}-{version}"
    meta = [f"Metadata-Version: {'2.2' if static_metadata else '2.1'}", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    reqs = ", ".join('"' + r + '"' for r in build_requires)
    files: dict[str, str] = {
        "PKG-INFO": "\n".join(meta) + "\n",
        "pyproject.toml": f'[build-system]\nrequires = [{reqs}]\nbuild-backend = "_tl_backend"\nbackend-path = ["."]\n',
        "_tl_backend.py": _BACKEND.format(prelude=prelude, name=name, version=version, requires=list(requires),
                                          module=dist.lower()),
    }
    if setup_py is not None:
        files["setup.py"] = setup_py
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / f"{base}.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{base}/{path}")
            info.size, info.mtime, info.mode = len(data), 1577836800, 0o644
            tf.addfile(info, io.BytesIO(data))
    out.write_bytes(buf.getvalue())
    return out


def _uploaded(path: Path, when: str | None) -> Path:
    if when is not None:
        path.with_name(path.name + ".uploaded").write_text(f"{when}T00:00:00Z" if "T" not in when else when)
    return path


def _upload_time(path: Path) -> str | None:
    side = path.with_name(path.name + ".uploaded")
    return side.read_text().strip() if side.is_file() else None


@dataclass
class LocalIndex:
    """Wheels laid out per index path ("simple", "whl/cu126", ...) and served on 127.0.0.1."""

    root: Path
    url: str = ""
    _server: http.server.ThreadingHTTPServer | None = field(default=None, repr=False)
    requests: list[str] = field(default_factory=list)
    auth: tuple[str, str] | None = None  # HTTP basic credentials every request must carry
    # Credentials by path: a request whose path starts with a key must carry those (the longest key wins), not `auth`
    # — two indexes on one server, each with a token of its own
    path_auth: dict[str, tuple[str, str]] = field(default_factory=dict)
    tls: tuple[Path, Path] | None = None  # (certificate chain PEM, key PEM): serve HTTPS
    client_ca: Path | None = None  # with tls: require a client certificate signed by this CA
    seen_auth: list[str] = field(default_factory=list)  # Authorization headers received (user names only)
    seen_auth_at: list[tuple[str, str]] = field(default_factory=list)  # the same, with each request's path
    delay: float = 0.0  # seconds each wheel download waits before it is served (an install that takes a while)
    # While set to an Event that is not set, every file download waits for it (an install held mid-download, for as
    # long as the test needs: it opens the gate when it wants the downloads to go on)
    gate: threading.Event | None = None
    # While set to an Event that is not set, every page uv asks for (its User-Agent "uv/…") waits for it: uv's online
    # answer held back, while other clients (tritonlock's own reads) are served
    uv_pages_gate: threading.Event | None = None
    uv_pages_only: set[str] | None = None  # with uv_pages_gate: only these projects' pages wait (None: every page)
    # While set to an Event that is not set, every HTTP Range read by another client than uv waits for it: tritonlock's
    # reads of the binary facts held back, while uv's own reads and whole-file downloads are served
    reads_gate: threading.Event | None = None
    served: list[str] = field(default_factory=list)  # paths of the files whose bytes were sent in full
    served_to: list[tuple[str, str]] = field(default_factory=list)  # the same, with the client's User-Agent
    asked_by: list[tuple[str, str]] = field(default_factory=list)  # every GET's path (pages too), with its User-Agent
    json: bool = True  # serve PEP 691 JSON pages (with sizes); False: PEP 503 HTML only, as some mirrors do
    # PEP 658/714: list each wheel's core-metadata hash on its page (data-core-metadata / "core-metadata"), as PyPI does
    core_metadata: bool = False
    # A mirror that serves other bytes than its page lists (the page keeps the real file's hash and size): file name →
    # the bytes served for every GET of it ("file"), only for HTTP Range reads ("range"), or as its .metadata
    tampered: dict[tuple[str, str], bytes] = field(default_factory=dict)
    # A hostile (or merely odd) server, for the files it serves: called for each GET or HEAD of a wheel or sdist with
    # (handler, file name, the file's bytes); where it returns True it has answered (status, headers, body) itself —
    # an index that ignores HTTP Range, answers it wrongly, trickles or stalls (tests/test_native_reads.py)
    hook: Callable[[Any, str, bytes], bool] | None = None
    yanked: dict[str, str] = field(default_factory=dict)  # file name -> the reason its page gives (PEP 592)
    prefix: str = ""  # the path every address of this index starts with (start picks one; a test may name it)
    port: int = 0  # 0: any free port; a test that needs an address served before by another index names it

    def add(self, index: str, name: str, version: str, *, uploaded: str | None = None, **kw: object) -> Path:
        """A wheel on `index`; `uploaded` ("2023-12-14"): the upload time its JSON page gives (PEP 700)."""
        return _uploaded(build_wheel(self.root / index / "_files", name, version, **kw), uploaded)  # type: ignore[arg-type]

    def add_sdist(self, index: str, name: str, version: str, *, uploaded: str | None = None, **kw: object) -> Path:
        return _uploaded(build_sdist(self.root / index / "_files", name, version, **kw), uploaded)  # type: ignore[arg-type]

    def index_url(self, index: str) -> str:
        return f"{self.url}/{index}"

    def start(self) -> "LocalIndex":
        root = self.root
        log = self.requests
        want = ("Basic " + base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()) if self.auth else None
        seen = self.seen_auth
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                if self.path.startswith(outer.prefix):  # (the index's own address: see `prefix`)
                    self.path = self.path[len(outer.prefix):] or "/"
                log.append(self.path)
                outer.asked_by.append((self.path, self.headers.get("User-Agent", "")))
                got = self.headers.get("Authorization")
                if got:  # every credential a client hands this index, asked for or not
                    seen.append(base64.b64decode(got.split()[-1]).decode(errors="replace").split(":")[0])
                    outer.seen_auth_at.append((self.path, seen[-1]))
                need = want
                for key in sorted(outer.path_auth, key=len):
                    if self.path.startswith(key):
                        user, password = outer.path_auth[key]
                        need = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
                if need is not None:
                    if got != need:
                        self.send_response(401)
                        self.send_header("WWW-Authenticate", 'Basic realm="tritonlock-tests"')
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                path = urllib.parse.unquote(self.path.split("?", 1)[0])
                parts = [p for p in path.split("/") if p]
                if "_files" in parts:
                    if outer.delay:
                        time.sleep(outer.delay)
                    gate = outer.gate
                    if gate is not None:
                        gate.wait()
                    f = root.joinpath(*parts)
                    if f.is_file():
                        data = f.read_bytes()
                        hook = outer.hook
                        if hook is not None and hook(self, f.name, data):
                            return None
                        rng = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
                        reads_gate = outer.reads_gate
                        if rng and reads_gate is not None and not self.headers.get("User-Agent", "").startswith("uv/"):
                            reads_gate.wait(120)
                        data = outer.tampered.get((f.name, "range" if rng else "file"),
                                                  outer.tampered.get((f.name, "file"), data))
                        if rng:  # HTTP Range, as real indexes answer it (compat check reads inside wheels so)
                            start = int(rng[1])
                            end = min(int(rng[2]) if rng[2] else len(data) - 1, len(data) - 1)
                            return self._send(206, data[start:end + 1], "application/octet-stream",
                                              {"Content-Range": f"bytes {start}-{end}/{len(data)}"})
                        self._send(200, data, "application/octet-stream")
                        outer.served.append(self.path)
                        outer.served_to.append((self.path, self.headers.get("User-Agent", "")))
                        return None
                    meta = core_metadata(f.with_name(f.name.removesuffix(".metadata"))) if f.name.endswith(
                        ".metadata") else None
                    if meta is not None:
                        meta = outer.tampered.get((f.name.removesuffix(".metadata"), "metadata"), meta)
                    if meta is not None:  # PEP 658: the wheel's METADATA beside it
                        return self._send(200, meta, "application/octet-stream")
                    return self._send(404, b"not found", "text/plain")
                if not parts:
                    return self._send(404, b"not found", "text/plain")
                pages_gate = outer.uv_pages_gate
                only = outer.uv_pages_only
                if pages_gate is not None and self.headers.get("User-Agent", "").startswith("uv/") and (
                        only is None or _norm(parts[-1]) in only):
                    pages_gate.wait(120)
                # /<index...>.html -> a flat page of links to every file of that index (pip's find-links, as PyG's
                # data.pyg.org/whl/torch-2.8.0+cu128.html)
                flat_dir = root.joinpath(*parts[:-1], parts[-1].removesuffix(".html"))
                if parts[-1].endswith(".html") and (flat_dir / "_files").is_dir():
                    rel = outer.prefix + "/" + "/".join([*parts[:-1], parts[-1].removesuffix(".html")])
                    links = "".join(f'<a href="{html.escape(rel)}/_files/{html.escape(f.name)}#sha256='
                                    f'{hashlib.sha256(f.read_bytes()).hexdigest()}">{html.escape(f.name)}</a><br>\n'
                                    for f in sorted((flat_dir / "_files").iterdir()) if f.is_file())
                    return self._send(200, f"<html><body>{links}</body></html>".encode(), "text/html")
                # /<index...>/<project>/ -> list the project's files; /<index...>/ -> list projects
                for cut in range(len(parts), 0, -1):
                    index_dir = root.joinpath(*parts[:cut])
                    if (index_dir / "_files").is_dir():
                        rest = parts[cut:]
                        break
                else:
                    return self._send(404, b"no such index", "text/plain")
                files = sorted([*(index_dir / "_files").glob("*.whl"), *(index_dir / "_files").glob("*.tar.gz")])
                rel = outer.prefix + "/" + "/".join(parts[:cut])
                if not rest:
                    names = sorted({_norm(f.name.split("-")[0]) for f in files})
                    body = "".join(f'<a href="{rel}/{n}/">{n}</a>\n' for n in names)
                    return self._send(200, f"<html><body>{body}</body></html>".encode(), "text/html")
                project = _norm(rest[0])
                mine = [f for f in files if _norm(f.name.split("-")[0]) == project]
                if not mine:
                    return self._send(404, b"no such project", "text/plain")
                accept = self.headers.get("Accept", "")
                entries = []
                for f in mine:
                    data = f.read_bytes()
                    meta = core_metadata(f) if outer.core_metadata else None
                    entries.append((f.name, f"{rel}/_files/{f.name}", hashlib.sha256(data).hexdigest(), len(data),
                                    _requires_python(f), hashlib.sha256(meta).hexdigest() if meta else None,
                                    _upload_time(f)))
                if "application/vnd.pypi.simple.v1+json" in accept and outer.json:
                    doc = {
                        "meta": {"api-version": "1.1"},
                        "name": project,
                        "files": [
                            {"filename": n, "url": u, "hashes": {"sha256": h}, "size": s,
                             **({"requires-python": rp} if rp else {}), **({"upload-time": up} if up else {}),
                             **({"yanked": outer.yanked[n] or True} if n in outer.yanked else {}),
                             **({"core-metadata": {"sha256": mh}} if mh else {})}
                            for n, u, h, s, rp, mh, up in entries
                        ],
                    }
                    return self._send(200, json.dumps(doc).encode(), "application/vnd.pypi.simple.v1+json")
                links = "".join(
                    f'<a href="{html.escape(u)}#sha256={h}"'
                    + (f' data-requires-python="{html.escape(rp)}"' if rp else "")
                    + (f' data-core-metadata="sha256={mh}"' if mh else "")
                    + (f' data-yanked="{html.escape(outer.yanked[n])}"' if n in outer.yanked else "")
                    + f">{html.escape(n)}</a>\n" for n, u, h, _, rp, mh, _up in entries
                )
                return self._send(200, f"<html><body>{links}</body></html>".encode(), "text/html")

            def do_HEAD(self) -> None:  # noqa: N802
                self._head_only = True
                try:
                    self.do_GET()
                finally:
                    self._head_only = False

            def _send(self, code: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                if not getattr(self, "_head_only", False):
                    self.wfile.write(body)

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request: object, client_address: object) -> None:
                pass  # a client that refused our certificate (tests do that on purpose) is not news

        self._server = Server(("127.0.0.1", self.port), Handler)
        scheme = "http"
        if self.tls is not None:
            import ssl

            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(self.tls[0]), str(self.tls[1]))
            if self.client_ca is not None:
                ctx.verify_mode = ssl.CERT_REQUIRED
                ctx.load_verify_locations(str(self.client_ca))
            self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True, do_handshake_on_connect=False)
            scheme = "https"
        host = "localhost" if self.tls is not None else "127.0.0.1"
        # Each index answers under a path of its own: a client's cache keyed by address (uv's pages and wheel
        # metadata) never mixes two indexes that got one port one after the other, in one run or across runs
        self.prefix = self.prefix or "/i-" + os.urandom(6).hex()
        self.url = f"{scheme}://{host}:{self._server.server_address[1]}{self.prefix}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
