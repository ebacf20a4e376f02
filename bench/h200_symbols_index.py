"""A package index for bench/h200_symbols*.sh, in two roles.

    python bench/h200_symbols_index.py build DIR NAME==VERSION ... [--local FILE.whl ...]
        (where the default index answers) writes DIR/pages.json: for each NAME==VERSION, that release's files as the
        default index lists them (file name, size, sha256, core-metadata sha256, requires-python), and DIR/meta/ the
        METADATA of each (PEP 658: fetched beside the file, checked against its hash); a --local wheel is listed
        with its own sha256 and METADATA, and copied to DIR/files/.
    python bench/h200_symbols_index.py serve DIR PORTFILE [--upstream]
        serves DIR as a PEP 691 / PEP 503 index on 127.0.0.1 (a free port, written to PORTFILE): the pages, each
        file's METADATA beside it (URL + ".metadata"), and the files DIR/files/ holds, with HTTP Range. A file it
        does not hold answers 404 — where every wheel's binary facts and METADATA are kept (the carried cache), no
        one asks for it; with --upstream a file it does not hold is passed through from the default index (the
        resolve that fills that cache, where the index answers).
"""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import sys
import threading
import zipfile
from pathlib import Path


def build(out: Path, reqs: list[str], local: list[str]) -> None:
    import requests

    from tritonlock.lock.index import IndexClient, default_index

    out.mkdir(parents=True, exist_ok=True)
    (out / "meta").mkdir(exist_ok=True)
    (out / "files").mkdir(exist_ok=True)
    idx = IndexClient(default_index())
    pages: dict[str, list[dict[str, object]]] = {}
    s = requests.Session()
    for req in reqs:
        name, version = req.split("==")
        files = [f for f in idx.files(name) if re.search(rf"-{re.escape(version)}-", f.filename)
                 and f.filename.endswith(".whl") and not f.yanked and _fits(f.filename)]
        if not files:
            raise SystemExit(f"{name}=={version}: no wheel for CPython 3.12 on Linux x86_64 on {default_index()}")
        for f in files:
            if f.has_metadata and f.metadata_sha256:
                meta = s.get(f.url + ".metadata", timeout=120).content
                if hashlib.sha256(meta).hexdigest() != f.metadata_sha256:
                    raise SystemExit(f"{f.filename}.metadata: not the bytes its hash says")
            else:  # (no PEP 658 file: the METADATA read from the wheel itself, by ranged reads)
                from tritonlock.native.remotezip import RemoteZip

                z = RemoteZip(s, f.url, f.size)
                meta = z.read(next(n for n in z.members() if n.endswith(".dist-info/METADATA")))
            (out / "meta" / f"{f.filename}.metadata").write_bytes(meta)
            pages.setdefault(_norm(name), []).append(
                {"filename": f.filename, "size": f.size, "sha256": f.sha256,
                 "metadata_sha256": hashlib.sha256(meta).hexdigest(), "requires_python": f.requires_python,
                 "upstream": f.url})
    for path in local:
        p = Path(path)
        data = p.read_bytes()
        with zipfile.ZipFile(p) as zf:
            meta = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA")))
        (out / "files" / p.name).write_bytes(data)
        (out / "meta" / f"{p.name}.metadata").write_bytes(meta)
        pages.setdefault(_norm(p.name.split("-")[0]), []).append(
            {"filename": p.name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
             "metadata_sha256": hashlib.sha256(meta).hexdigest(), "requires_python": None, "upstream": None})
    (out / "pages.json").write_text(json.dumps(pages, indent=1, sort_keys=True), encoding="utf-8")


def _fits(filename: str) -> bool:
    """A wheel CPython 3.12 installs on Linux x86_64 (the H200's): its Python and platform tags."""
    tags = filename[:-4].split("-")[-3:]
    py, abi, plat = tags
    return (("cp312" in py.split(".") and abi in ("cp312", "abi3", "none")) or py.startswith(("py3", "py2.py3"))
            or (abi == "abi3" and py.startswith("cp3"))) and (plat == "any" or "x86_64" in plat and "linux" in plat)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def serve(root: Path, portfile: Path, upstream: bool) -> None:
    pages = json.loads((root / "pages.json").read_text(encoding="utf-8"))

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, code: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            path = self.path.split("?", 1)[0]
            base = f"http://127.0.0.1:{self.server.server_address[1]}"
            m = re.fullmatch(r"/simple/([^/]+)/?", path)
            if m:
                files = pages.get(_norm(m[1]))
                if files is None:
                    return self._send(404, b"not here", "text/plain")
                def url(f: dict[str, object]) -> str:
                    return f"{base}/files/{f['filename']}"
                if "json" in self.headers.get("Accept", ""):
                    doc = {"meta": {"api-version": "1.1"}, "name": _norm(m[1]), "files": [
                        {"filename": f["filename"], "url": url(f), "hashes": {"sha256": f["sha256"]},
                         "size": f["size"], "requires-python": f["requires_python"],
                         "core-metadata": {"sha256": f["metadata_sha256"]}} for f in files]}
                    return self._send(200, json.dumps(doc).encode(), "application/vnd.pypi.simple.v1+json")
                links = "".join(f'<a href="{url(f)}#sha256={f["sha256"]}" data-core-metadata="sha256='
                                f'{f["metadata_sha256"]}">{f["filename"]}</a>\n' for f in files)
                return self._send(200, f"<html><body>\n{links}</body></html>".encode(), "text/html")
            m = re.fullmatch(r"/files/([^/]+)", path)
            if m:
                name = m[1]
                if name.endswith(".metadata") and (root / "meta" / name).is_file():
                    return self._send(200, (root / "meta" / name).read_bytes(), "text/plain")
                f = root / "files" / name
                if not f.is_file() and upstream and name in where:
                    return self._proxy(where[name])
                if not f.is_file():
                    return self._send(404, b"not carried", "text/plain")
                data = f.read_bytes()
                rng = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
                if rng:
                    a, b = int(rng[1]), int(rng[2]) if rng[2] else len(data) - 1
                    b = min(b, len(data) - 1)
                    return self._send(206, data[a:b + 1], "application/octet-stream",
                                      {"Content-Range": f"bytes {a}-{b}/{len(data)}"})
                return self._send(200, data, "application/octet-stream")
            return self._send(404, b"", "text/plain")

        def _proxy(self, url: str) -> None:
            """The file from the default index, with the Range asked (the resolve that fills the carried cache)."""
            import requests

            headers = {"Range": self.headers["Range"]} if self.headers.get("Range") else {}
            with requests.get(url, headers=headers, stream=True, timeout=300) as r:
                self.send_response(r.status_code)
                for k in ("Content-Length", "Content-Range", "Content-Type"):
                    if k in r.headers:
                        self.send_header(k, r.headers[k])
                self.end_headers()
                try:
                    for chunk in r.iter_content(1 << 20):
                        self.wfile.write(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # (a reader that had what it needed)

    where = {str(f["filename"]): str(f["upstream"]) for files in pages.values() for f in files if f["upstream"]}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    portfile.write_text(str(server.server_address[1]), encoding="utf-8")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    verb, args = sys.argv[1], sys.argv[2:]
    if verb == "build":
        local = [args[i + 1] for i, a in enumerate(args) if a == "--local"]
        reqs = [a for i, a in enumerate(args[1:], 1) if a != "--local" and args[i - 1] != "--local"]
        build(Path(args[0]), reqs, local)
    else:
        serve(Path(args[0]), Path(args[1]), "--upstream" in args)
