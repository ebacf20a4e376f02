"""Package index settings and a small client (PEP 691 JSON, PEP 503 HTML) behind one function."""

from __future__ import annotations

import configparser
import functools
import os
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from tritonlock import _urls
from tritonlock._files import read_text
from tritonlock.errors import ConfigError, IndexError_, TritonlockError


def _pip_config_files() -> list[Path]:
    """pip's configuration files, lowest precedence first, as pip reads them (pip/_internal/configuration.py):
    the global ones (each $XDG_CONFIG_DIRS entry's pip/pip.conf in the order listed, then /etc/pip.conf), the user's
    (~/.pip/pip.conf, then $XDG_CONFIG_HOME/pip/pip.conf — not read when PIP_CONFIG_FILE names a file that exists),
    the base interpreter's and the venv's (sys.base_prefix, sys.prefix), then PIP_CONFIG_FILE's. PIP_CONFIG_FILE set
    to os.devnull reads none at all (PIP_* variables still count)."""
    env_file = os.environ.get("PIP_CONFIG_FILE")
    if env_file == os.devnull:
        return []
    name = "pip.ini" if sys.platform == "win32" else "pip.conf"
    files: list[Path] = []
    if sys.platform == "win32":
        files.append(Path(os.environ.get("PROGRAMDATA", r"C:\ProgramData")) / "pip" / name)
    else:
        xdg_dirs = os.environ.get("XDG_CONFIG_DIRS", "").strip() or "/etc/xdg"
        files += [Path(os.path.expanduser(d)) / "pip" / name for d in xdg_dirs.split(os.pathsep) if d]
        files.append(Path("/etc") / name)
    if not (env_file and os.path.exists(env_file)):
        home = Path.home()
        files.append(home / ("pip" if sys.platform == "win32" else ".pip") / name)
        if sys.platform == "win32":
            files.append(Path(os.environ.get("APPDATA", home)) / "pip" / name)
        else:
            files.append(Path(os.environ.get("XDG_CONFIG_HOME", "").strip() or home / ".config") / "pip" / name)
    for prefix in dict.fromkeys((sys.base_prefix, sys.prefix)):
        files.append(Path(prefix) / name)
    if env_file:
        files.append(Path(env_file))
    return files


def _checked(url: str, where: str) -> str:
    why = _urls.problem(url)
    if why is not None:
        raise ConfigError(f"{where}: {_urls.shown(url, 120)} {why} — set it to the index's full address "
                          "(or set [indexes].default in triton-env.toml)")
    _urls.learn(url)  # credentials stay in memory for requests; the address goes on without them
    return _urls.strip_credentials(url).rstrip("/")


def pip_setting(name: str) -> tuple[str, str] | None:
    """A pip option as `pip install` resolves it, with where it came from; None when unset: PIP_<NAME>, else the
    configuration files' values merged in their order (a later file's [section] name replaces an earlier file's),
    [install] (then [download]) over [global] whichever file holds them; an empty value counts as unset, as in pip."""
    var = "PIP_" + name.upper().replace("-", "_")
    env = os.environ.get(var)
    if env and env.strip():
        return env.strip(), var
    merged: dict[str, tuple[str, str]] = {}
    for path in _pip_config_files():
        cp = configparser.ConfigParser(interpolation=None)
        try:
            cp.read_string(read_text(path), str(path))
        except (FileNotFoundError, NotADirectoryError):
            continue  # (as pip: a configuration file that is not there is no error)
        except (OSError, configparser.Error, UnicodeDecodeError) as err:
            # pip refuses a file it cannot read, and so do we: skipping it would use another index than the one
            # it names (a private mirror silently replaced by the public default)
            why = " ".join(str(err).split())
            raise ConfigError(f"{path}: pip cannot use this configuration file ({_urls.redact(why)[:200]}) — fix "
                              "it (pip fails on it too), or point PIP_CONFIG_FILE elsewhere") from None
        for section in ("global", "download", "install"):
            for key, value in (cp.items(section) if cp.has_section(section) else ()):
                if key.lower().replace("_", "-").removeprefix("--") == name:
                    merged[section] = (value.strip(), f"{path} [{section}] {key}")
    for section in ("install", "download", "global"):
        if merged.get(section, ("", ""))[0]:
            return merged[section]
    return None


@functools.lru_cache(maxsize=1)
def default_index() -> str:
    """The user's default index, without credentials: PIP_INDEX_URL, then pip.conf (mirrors included), then
    pip's own default. Credentials written in it are kept for requests (see `uv_env`, `IndexClient`)."""
    found = pip_setting("index-url")
    if found:
        return _checked(*found)
    try:  # pip's own default, read from pip itself so no address is written here
        from pip._internal.models.index import PyPI

        return str(PyPI.simple_url).rstrip("/")
    except ImportError:  # `uv tool install` / pipx-style venvs hold no pip: uv, which installs the lock, tells it
        found_uv = _uv_default_index()
        if found_uv is not None:
            return found_uv
        raise IndexError_("no package index configured, and neither pip nor uv could tell their default — set "
                          "PIP_INDEX_URL or [indexes].default in triton-env.toml") from None


def _uv_default_index() -> str | None:
    """uv's own default index, as its help states it ("--default-index … (by default: <URL>)")."""
    import subprocess

    from tritonlock._subprocess import uv_bin

    try:
        from tritonlock._subprocess import clean_env

        out = subprocess.run([uv_bin(), "pip", "compile", "--help"], capture_output=True, text=True, timeout=30,
                             env={**clean_env(), "NO_COLOR": "1"}).stdout  # (no UV_DEFAULT_INDEX of the user's)
    except (OSError, subprocess.SubprocessError, TritonlockError):
        return None
    m = re.search(r"--default-index\b.*?by\s+default:\s+<([^>\s]+)>", out, re.S)
    if m is None or _urls.problem(m.group(1)) is not None:
        return None
    return m.group(1).rstrip("/")


# ---------------------------------------------------------------- reaching an index as pip would


@dataclass(frozen=True, kw_only=True, slots=True)
class Network:
    """pip's TLS and credential settings: a CA bundle (`cert`, trusted instead of the system store), a client
    certificate (`client-cert`, one PEM with the key), and whether keyring may be asked (`keyring-provider`)."""

    cert: str | None = None
    client_cert: str | None = None
    keyring: bool = True


def _path_setting(name: str) -> str | None:
    found = pip_setting(name)
    if found is None:
        return None
    value, where = found
    path = os.path.expanduser(value)
    if not os.path.isfile(path):
        raise ConfigError(f"{where}: {value!r} is not a file — point it at a PEM file, or remove the setting")
    return path


@functools.lru_cache(maxsize=1)
def network() -> Network:
    """The user's pip settings for reaching indexes (read once per process)."""
    provider = pip_setting("keyring-provider")
    # Extra index URLs are never used by tritonlock (one index per package), but pip users keep their
    # credentials there too: learn them so the same host works.
    extra = pip_setting("extra-index-url")
    for url in (extra[0].split() if extra else []):
        if _urls.problem(url) is None:
            _urls.learn(url)
    return Network(cert=_path_setting("cert"), client_cert=_path_setting("client-cert"),
                   keyring=provider is None or provider[0] != "disabled")


def _netrc(host: str) -> tuple[str, str] | None:
    import netrc

    path = os.environ.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    try:
        found = netrc.netrc(path).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    return (found[0] or "", found[2] or "") if found else None


def _keyring(url: str) -> tuple[str, str] | None:
    """Credentials from the `keyring` library, when it is installed — looked up as pip does (the index URL,
    then its host), and only after an index asked for them (keyring may prompt to unlock a store)."""
    try:
        import keyring
    except ImportError:
        return None
    host = _urls.origin(url)
    for key in (url, host[1] if host else None):
        if not key:
            continue
        try:
            cred = keyring.get_credential(key, None)
        except Exception:  # noqa: BLE001 - keyring backends raise their own kinds; none of them is ours to show
            return None
        if cred is not None and cred.password:
            return cred.username or "", cred.password
    return None


@functools.lru_cache(maxsize=1)
def _learn_pip_urls() -> None:
    """Learn the credentials written in pip's index-url and extra-index-url (PIP_INDEX_URL, pip.conf), so that a
    process that never asked for the default index — `sync`, installing a lock that `resolve` made in another
    process — still reaches a private index the way pip (and that resolve) did."""
    try:
        found = pip_setting("index-url")
        if found and _urls.problem(found[0]) is None:
            _urls.learn(found[0])
        network()
    except TritonlockError:  # a configuration pip refuses: the command that needs the index says so
        pass


def extra_index_note() -> str:
    """When pip's extra-index-url is set: a note saying it is not used, and why (for errors about a package that
    was not found)."""
    try:
        found = pip_setting("extra-index-url")
    except TritonlockError:
        return ""
    if not found:
        return ""
    urls = ", ".join(_urls.redact(_urls.strip_credentials(u)) for u in found[0].split())
    return (f"\n  note: pip's extra-index-url ({found[1]}: {urls}) is not used: tritonlock binds every package to "
            "exactly one index (the torch index for the torch family, the default index for everything else), so "
            "that no same-named package on another index can stand in for it. A package that only that index serves "
            "is not found — make an index that serves all of them the default ([indexes].default in "
            "triton-env.toml, or PIP_INDEX_URL; a proxy repository that merges both, as Artifactory, Nexus or "
            "devpi offer, does this), or name that index in [indexes].default if it serves them all")


# A backend's path segment on a torch index, which [indexes].torch's {backend} stands for (cpu, cu130, rocm7.1, xpu)
_BACKEND_SEGMENT = re.compile(r"cpu|cu[0-9]+|rocm[0-9.]+|xpu")


def _path_segments(url: str) -> list[str]:
    """The path of a URL as its segments, without empty ones ("/simple/" and "/simple" are one path)."""
    from urllib.parse import unquote, urlsplit

    path = urlsplit(_urls.strip_credentials(url)).path
    return [unquote(p) for p in path.split("/") if p]


def credentials(url: str, *, keyring: bool = False) -> tuple[str, str] | None:
    """(user, password) for an index or file URL: written in a URL the user configured for the same scheme, host
    and port (pip matches credentials by host), then ~/.netrc, then — when asked — keyring."""
    if _urls.has_credentials(url):
        return _urls.credentials(url)
    _learn_pip_urls()
    here = _urls.origin(url)
    if here is None:
        return None
    # Several credentials for one origin (two indexes on one server, each its own token): the index whose path holds
    # the URL, the deepest one (nested paths), else the one sharing most of its path; a tie keeps the first learned.
    wanted = _path_segments(url)
    best: tuple[tuple[bool, int], str] | None = None
    for known in _urls.learned():
        if _urls.origin(known) == here:
            theirs = _path_segments(known)
            shared = next((i for i, (a, b) in enumerate(zip(theirs, wanted))
                           if a != b and not (a == "{backend}" and _BACKEND_SEGMENT.fullmatch(b))),
                          min(len(theirs), len(wanted)))
            rank = (shared == len(theirs), shared)
            if best is None or rank > best[0]:
                best = (rank, known)
    if best is not None:
        return _urls.credentials(best[1])
    found = _netrc(here[1])
    if found is not None:
        return found
    if keyring and network().keyring:
        return _keyring(_urls.strip_credentials(url))
    return None


# Settings of the user's own uv configuration that would add indexes or change how packages are found:
# tritonlock binds every package to one index, so none of them may leak into its uv runs.
UV_UNSET = ("UV_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX", "UV_FIND_LINKS", "UV_NO_INDEX",
            "UV_INDEX_STRATEGY", "UV_KEYRING_PROVIDER", "UV_CONFIG_FILE", "UV_OFFLINE")


def _env_name(name: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", name.upper())


def uv_env(*, named: dict[str, str], default: str | None = None, declare: bool = False,
           keyring: bool = False) -> dict[str, str]:
    """Environment for a uv run: credentials per index (never on the command line or in a file), the default
    index, and TLS as pip would do it — pip's `cert` as the CA bundle, else the system trust store (pip uses
    truststore); pip's `client-cert` as the client certificate. `named`: uv index name → URL (no credentials);
    `declare` also defines those indexes (for runs whose indexes are not in a pyproject)."""
    net = network()
    env: dict[str, str] = {}
    indexes = dict(named)
    if default is not None:
        env["UV_DEFAULT_INDEX"] = f"tldefault={_urls.strip_credentials(default)}"
        indexes["tldefault"] = default
    if declare and named:
        env["UV_INDEX"] = " ".join(f"{n}={_urls.strip_credentials(u)}" for n, u in named.items())
    for name, url in indexes.items():
        cred = credentials(url, keyring=keyring)
        if cred is not None:
            env[f"UV_INDEX_{_env_name(name)}_USERNAME"] = cred[0]
            env[f"UV_INDEX_{_env_name(name)}_PASSWORD"] = cred[1]
    if net.cert:
        env["SSL_CERT_FILE"] = net.cert
    elif not any(k in os.environ for k in ("UV_SYSTEM_CERTS", "UV_NATIVE_TLS", "SSL_CERT_FILE")):
        from tritonlock._subprocess import uv_version

        env["UV_SYSTEM_CERTS" if uv_version() >= (0, 11) else "UV_NATIVE_TLS"] = "1"
    if net.client_cert:
        env["SSL_CLIENT_CERT"] = net.client_cert
    return env


def install_env(indexes: Iterable[str], *, keyring: bool = False) -> dict[str, str]:
    """uv's environment for installing locked files from these indexes (`uv pip install -r pylock.toml`):
    the credentials each index needs reach the files it serves on the same host."""
    # Only indexes that need credentials are declared to uv: the others stay plain file URLs to it.
    needed = [url for url in sorted(set(indexes)) if credentials(url, keyring=keyring) is not None]
    return uv_env(named={f"tl{i}": url for i, url in enumerate(needed)}, declare=True, keyring=keyring)


def asked_for_credentials(output: str) -> bool:
    """Whether uv's (or an index's) answer was 401/403 — then keyring is worth asking, as pip would."""
    return bool(re.search(r"\b40[13]\b|Unauthorized|Forbidden", output))


def explain(output: str) -> str:
    """uv's words, with its hints about uv flags (which tritonlock does not have) replaced by what to do here."""
    # uv's own hints stay, except those that name a uv flag or setting (tritonlock has its own ways, below)
    text = _urls.redact("\n".join(line for line in output.splitlines()
                                   if not (line.lstrip().startswith("hint:") and re.search(r"`--?[a-z]|UV_", line))))
    if re.search(r"(?i)certificate|UnknownIssuer|tls|ssl", text):
        text += ("\n  hint: to trust a private CA, set `cert = /path/to/ca.pem` in pip.conf (or PIP_CERT), as for "
                 "pip; tritonlock also honours pip's `client-cert` and otherwise trusts the system store")
    elif asked_for_credentials(text) or re.search(r"not found in the package registry|authentication", text):
        clash = _credentials_clash()
        if clash:
            text += (f"\n  hint: {clash} are on one host and want different credentials, and uv hands a host one set "
                     "of credentials, the first it used there (the other index answers 401, which uv reports as "
                     "\"not found\") — give both indexes one token that reads both, or serve them from different hosts "
                     "or ports")
        elif asked_for_credentials(text):
            text += ("\n  hint: give credentials as pip takes them: in the index URL ([indexes] in triton-env.toml, "
                     "PIP_INDEX_URL or pip.conf), in ~/.netrc, or in your keyring")
    return text


def _credentials_clash() -> str | None:
    """Two index URLs this process learned on one origin with different credentials, named without them ("A and
    B"), or None."""
    seen: dict[tuple[str, str, int | None], str] = {}
    for url in _urls.learned():
        where = _urls.origin(url)
        if where is None:
            continue
        first = seen.setdefault(where, url)
        if _urls.credentials(first) != _urls.credentials(url):
            return f"{_urls.strip_credentials(first)} and {_urls.strip_credentials(url)}"
    return None


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexFile:
    filename: str
    url: str
    sha256: str | None
    size: int | None
    yanked: bool = False
    yanked_reason: str | None = None  # PEP 592: why, where the page says
    requires_python: str | None = None  # PEP 691 "requires-python" / PEP 503 data-requires-python
    upload_time: str | None = None  # PEP 700 "upload-time" (JSON pages only), ISO 8601
    # PEP 658/714: the index serves the file's METADATA beside it (url + ".metadata"), with its sha256 when listed
    has_metadata: bool = False
    metadata_sha256: str | None = None


def _metadata_flag(value: object) -> tuple[bool, str | None]:
    """(served, sha256) from a page's core-metadata value: JSON true/{"sha256": …}, HTML "true"/"sha256=…"."""
    if isinstance(value, dict):
        sha = value.get("sha256")
        return True, sha if isinstance(sha, str) else None
    if isinstance(value, str):
        algo, eq, digest = value.partition("=")
        if eq:
            return True, digest if algo.strip().lower() == "sha256" else None
        return value.strip().lower() == "true", None
    return value is True, None


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        # (href, text, data-yanked's value — None where not yanked —, data-requires-python, core metadata)
        self.links: list[tuple[str, str, str | None, str | None, str | None]] = []
        self._href: tuple[str, str | None, str | None, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            a = dict(attrs)
            meta = a.get("data-core-metadata", a.get("data-dist-info-metadata"))  # PEP 714's name, then PEP 658's
            self._href = (a.get("href") or "", (a.get("data-yanked") or "") if "data-yanked" in a else None,
                          a.get("data-requires-python"), meta)

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self.links.append((self._href[0], data.strip(), self._href[1], self._href[2], self._href[3]))
            self._href = None


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


PEP691 = "application/vnd.pypi.simple.v1+json"


def session() -> Any:
    """A requests session that reaches indexes as pip does (tritonlock.lock.tls)."""
    from tritonlock.lock.tls import session as tls_session

    return tls_session(network())


# (index, a wheel) -> whether it served the `.metadata` of the first such file its page did not list with one
# (IndexClient.metadata): where it did not, such files are not asked for it again by this process
UNLISTED_METADATA: dict[tuple[str, bool], bool] = {}


class IndexClient:
    """One index: project pages (PEP 691 JSON, else PEP 503 HTML) and PEP 658 metadata, with retries.

    Credentials come as pip finds them (see `credentials`): sent only to the index's own host, keyring asked
    only after the index answered 401.
    """

    def __init__(self, url: str, *, timeout: float = 60, retries: int = 3) -> None:
        self.url, self.timeout, self.retries = _urls.strip_credentials(url).rstrip("/"), timeout, retries
        _urls.learn(url)
        self.session = session()
        self._keyring = False

    def _get(self, url: str, accept: str) -> Any:
        import requests

        last = "no answer"
        for attempt in range(self.retries):
            auth = credentials(url, keyring=self._keyring)
            try:
                # verify is passed on each request: requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE override a
                # session's own, and pip's `cert` must win as it does for pip
                resp = self.session.get(url, headers={"Accept": accept}, timeout=self.timeout, auth=auth,
                                        verify=self.session.verify)
            except requests.exceptions.SSLError as err:
                raise IndexError_(f"{url}: TLS failed ({_urls.redact(str(err))[:300]}) — to trust a private CA, "
                                  "set `cert = /path/to/ca.pem` in pip.conf (or PIP_CERT), as for pip") from None
            except requests.RequestException as err:
                last = _urls.redact(str(err))
            else:
                if resp.status_code in (200, 404):
                    return resp if resp.status_code == 200 else None
                if resp.status_code in (401, 403):
                    if not self._keyring and network().keyring:
                        self._keyring = True  # as pip: ask keyring once the index wants credentials
                        if credentials(url, keyring=True) is not None:
                            continue
                    raise IndexError_(f"{url} answered HTTP {resp.status_code} — give credentials as pip takes them: "
                                      "in the index URL (triton-env.toml [indexes], PIP_INDEX_URL or pip.conf), in "
                                      "~/.netrc, or in your keyring")
                last = f"HTTP {resp.status_code}"
            if attempt + 1 < self.retries:
                time.sleep(0.5 * 2 ** attempt)  # 429/5xx/timeouts: the index is busy, not wrong
        raise IndexError_(f"cannot reach {url} ({last}) — check the address and your network")

    def files(self, project: str, *, only: str | None = None) -> tuple[IndexFile, ...]:
        """Files of a project; () when the index does not have it. `only`: the file of that name alone (a check of
        one file reads a page of a thousand)."""
        flat = self.url.rsplit("?", 1)[0].endswith((".html", ".htm"))  # a page of links (pip's find-links)
        url = self.url if flat else f"{self.url}/{_norm(project)}/"
        resp = self._get(url, f"{PEP691}, text/html;q=0.1")
        if resp is None:
            return ()
        if resp.headers.get("Content-Type", "").startswith(PEP691):
            out_json: list[IndexFile] = []
            for f in resp.json().get("files", []):
                if only is not None and f.get("filename") != only:
                    continue
                served, meta_sha = _metadata_flag(f.get("core-metadata", f.get("dist-info-metadata")))
                href = f["url"]
                # (an absolute address, as PyPI's, is taken as it is: urljoin on each of a page's thousand files was
                # most of the time a lock's pages took)
                out_json.append(IndexFile(filename=f["filename"],
                                          url=href if href.startswith(("https://", "http://")) else urljoin(url, href),
                                          sha256=f.get("hashes", {}).get("sha256"), size=f.get("size"),
                                          yanked=bool(f.get("yanked")),
                                          yanked_reason=f["yanked"] if isinstance(f.get("yanked"), str)
                                          and f["yanked"] else None,
                                          requires_python=f.get("requires-python") or None,
                                          has_metadata=served, metadata_sha256=meta_sha,
                                          upload_time=f["upload-time"] if isinstance(f.get("upload-time"), str)
                                          else None))
            return tuple(out_json)
        parser = _Links()
        parser.feed(resp.text)
        out: list[IndexFile] = []
        for href, text, yanked, requires_python, meta in parser.links:
            full, _, frag = urljoin(url, href).partition("#")
            name = text or full.rsplit("/", 1)[-1]
            if only is not None and name != only:
                continue
            mine = name.split("-")[0] if name.endswith(".whl") else name.rsplit("-", 1)[0]
            if flat and _norm(mine) != _norm(project):
                continue  # (the page lists every project's files)
            sha = frag.split("=", 1)[1] if frag.startswith("sha256=") else None
            served, meta_sha = _metadata_flag(meta)
            out.append(IndexFile(filename=name, url=full, sha256=sha, size=None, yanked=yanked is not None,
                                 yanked_reason=yanked or None, requires_python=requires_python or None,
                                 has_metadata=served,
                                 metadata_sha256=meta_sha))
        return tuple(out)

    def metadata(self, file: IndexFile) -> str | None:
        """The file's core metadata (PEP 658 `.metadata` beside it), or None when the index has none. A file its page
        does not list with metadata is not asked for it where the first such question (of a wheel, or of an sdist)
        to this index was answered with nothing (PEP 658: a client is not to count on an unlisted one; each question is a round trip before the ranged read of the METADATA inside the wheel, 0.1 s of
        each batch of releases read on a mirror that lists none)."""
        key = (self.url, file.filename.endswith(".whl"))  # (a wheel's and an sdist's are told apart)
        unlisted = not file.has_metadata and urlsplit(file.url).scheme in ("http", "https")
        if unlisted and UNLISTED_METADATA.get(key) is False:
            return None
        resp = self._get(file.url + ".metadata", "*/*")
        if unlisted:  # (the first answer says it: an index that served one unlisted is asked on, whatever follows)
            UNLISTED_METADATA.setdefault(key, resp is not None)
        return resp.text if resp is not None else None

    def metadata_bytes(self, file: IndexFile, *, max_bytes: int = 16 * 2**20) -> bytes | None:
        """The `.metadata` file's bytes as served (for its hash), bounded; None when the index has none."""
        resp = self._get(file.url + ".metadata", "*/*")
        if resp is None:
            return None
        data: bytes = resp.content
        if len(data) > max_bytes:
            raise IndexError_(f"{_urls.redact(file.url)}.metadata: {len(data)} bytes, more than {max_bytes} — not read")
        return data


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


def fetch_file(url: str, *, max_bytes: int, timeout: float = 120) -> bytes:
    """One file from an index (an sdist whose build facts are read), with pip's credentials and TLS settings;
    IndexError_ when it cannot be had or is larger than max_bytes."""
    client = IndexClient(url, timeout=timeout)
    resp = client._get(url, "*/*")
    if resp is None:
        raise IndexError_(f"{_urls.redact(url)}: not found (HTTP 404)")
    size = resp.headers.get("Content-Length")
    if size and size.isdigit() and int(size) > max_bytes:
        raise IndexError_(f"{_urls.redact(url)}: {int(size)} bytes, more than {max_bytes} — not read")
    data: bytes = resp.content
    if len(data) > max_bytes:
        raise IndexError_(f"{_urls.redact(url)}: {len(data)} bytes, more than {max_bytes} — not read")
    return data


@functools.lru_cache(maxsize=256)
def serves(index: str, project: str) -> bool:
    """Whether `index` has any file of `project` (its project page lists at least one); IndexError_ when the index
    cannot be reached. Cached per process: a lock asks once per index and name."""
    return bool(IndexClient(index, timeout=30).files(project))
