"""Package index settings and a small client (PEP 691 JSON, PEP 503 HTML) behind one function."""

from __future__ import annotations

import configparser
import functools
import os
import re
import sys
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from tritonlock.errors import ConfigError, IndexError_


def _pip_config_files() -> list[Path]:
    """pip's configuration files, lowest precedence first (pip's documented order)."""
    files: list[Path] = []
    xdg_dirs = os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(os.pathsep)
    files += [Path(d) / "pip" / "pip.conf" for d in reversed(xdg_dirs) if d]
    files.append(Path("/etc/pip.conf"))
    home = Path.home()
    files.append(home / ".pip" / "pip.conf")
    files.append(Path(os.environ.get("XDG_CONFIG_HOME", home / ".config")) / "pip" / "pip.conf")
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        if appdata:
            files.append(Path(appdata) / "pip" / "pip.ini")
    files.append(Path(sys.prefix) / ("pip.ini" if sys.platform == "win32" else "pip.conf"))
    if os.environ.get("PIP_CONFIG_FILE") and os.environ["PIP_CONFIG_FILE"] != os.devnull:
        files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    return files


def _checked(url: str, where: str) -> str:
    from tritonlock import _urls

    why = _urls.problem(url)
    if why is not None:
        raise ConfigError(f"{where}: {_urls.redact(repr(url[:120]))} {why} — set it to the index's full address "
                          "(or set [indexes].default in triton-env.toml)")
    return url.rstrip("/")


@functools.lru_cache(maxsize=1)
def default_index() -> str:
    """The user's default index as configured (credentials included): PIP_INDEX_URL, then pip.conf (mirrors
    included), then pip's own default. Store and print it only through `_urls.strip_credentials`."""
    env = os.environ.get("PIP_INDEX_URL")
    if env and env.strip():
        return _checked(env.strip(), "PIP_INDEX_URL")
    found: tuple[str, str] | None = None
    for path in _pip_config_files():
        cp = configparser.ConfigParser(interpolation=None)
        try:
            cp.read(path, encoding="utf-8")
        except (OSError, configparser.Error, UnicodeDecodeError):
            continue
        for section in ("global", "install", "download"):
            if cp.has_option(section, "index-url"):
                found = (cp.get(section, "index-url").strip(), f"{path} [{section}] index-url")
    if found:
        return _checked(*found)
    try:  # pip's own default, read from pip itself so no address is written here
        from pip._internal.models.index import PyPI

        return str(PyPI.simple_url).rstrip("/")
    except ImportError:
        raise IndexError_("no package index configured and pip is not importable to tell its default — set "
                          "PIP_INDEX_URL or [indexes].default in triton-env.toml") from None


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexFile:
    filename: str
    url: str
    sha256: str | None
    size: int | None
    yanked: bool = False


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str, bool]] = []
        self._href: tuple[str, bool] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            a = dict(attrs)
            self._href = (a.get("href") or "", "data-yanked" in a)

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self.links.append((self._href[0], data.strip(), self._href[1]))
            self._href = None


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


PEP691 = "application/vnd.pypi.simple.v1+json"


class IndexClient:
    """One index: project pages (PEP 691 JSON, else PEP 503 HTML) and PEP 658 metadata, with retries.

    requests reads ~/.netrc for credentials on its own, so private indexes work as they do for pip.
    """

    def __init__(self, url: str, *, timeout: float = 60, retries: int = 3) -> None:
        import requests

        self.url, self.timeout, self.retries = url.rstrip("/"), timeout, retries
        self.session = requests.Session()

    def _get(self, url: str, accept: str) -> Any:
        import requests

        last = "no answer"
        for attempt in range(self.retries):
            try:
                resp = self.session.get(url, headers={"Accept": accept}, timeout=self.timeout)
            except requests.RequestException as err:
                last = str(err)
            else:
                if resp.status_code in (200, 404):
                    return resp if resp.status_code == 200 else None
                if resp.status_code in (401, 403):
                    raise IndexError_(f"{url} answered HTTP {resp.status_code} — add credentials for it to ~/.netrc "
                                      "or the index URL")
                last = f"HTTP {resp.status_code}"
            if attempt + 1 < self.retries:
                time.sleep(0.5 * 2 ** attempt)  # 429/5xx/timeouts: the index is busy, not wrong
        raise IndexError_(f"cannot reach {url} ({last}) — check the address and your network")

    def files(self, project: str) -> tuple[IndexFile, ...]:
        """Files of a project; () when the index does not have it."""
        url = f"{self.url}/{_norm(project)}/"
        resp = self._get(url, f"{PEP691}, text/html;q=0.1")
        if resp is None:
            return ()
        if resp.headers.get("Content-Type", "").startswith(PEP691):
            return tuple(IndexFile(filename=f["filename"], url=urljoin(url, f["url"]),
                                   sha256=f.get("hashes", {}).get("sha256"), size=f.get("size"),
                                   yanked=bool(f.get("yanked"))) for f in resp.json().get("files", []))
        parser = _Links()
        parser.feed(resp.text)
        out: list[IndexFile] = []
        for href, text, yanked in parser.links:
            full, _, frag = urljoin(url, href).partition("#")
            sha = frag.split("=", 1)[1] if frag.startswith("sha256=") else None
            out.append(IndexFile(filename=text or full.rsplit("/", 1)[-1], url=full, sha256=sha, size=None,
                                 yanked=yanked))
        return tuple(out)

    def metadata(self, file: IndexFile) -> str | None:
        """The file's core metadata (PEP 658 `.metadata` beside it), or None when the index has none."""
        resp = self._get(file.url + ".metadata", "*/*")
        return resp.text if resp is not None else None


def project_files(index: str, name: str, *, timeout: float = 30) -> tuple[IndexFile, ...]:
    """Files of a project on an index (JSON when offered, else HTML); IndexError_ when unreachable."""
    return IndexClient(index, timeout=timeout).files(name)


def unreachable(index: str, project: str, *, timeout: float = 5) -> str | None:
    """Why `index` does not answer for `project` (one quick try, headers only), or None when it answers — an HTTP
    error status is an answer too: the index is there."""
    import requests

    client = IndexClient(index, timeout=timeout, retries=1)
    try:
        with client.session.get(f"{client.url}/{_norm(project)}/", headers={"Accept": f"{PEP691}, text/html;q=0.1"},
                                timeout=timeout, stream=True):
            return None
    except requests.RequestException as err:
        return type(err).__name__ + (": DNS lookup failed" if "resolve" in str(err).lower() or "name or service"
                                     in str(err).lower() else "")
