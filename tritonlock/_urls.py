"""Index and file URLs: what is a valid one, and the credentials in one (never stored, never printed)."""

from __future__ import annotations

import re
from urllib.parse import SplitResult, quote, unquote, urlsplit, urlunsplit

_SCHEMES = ("http", "https", "file")
# A host name as urlsplit gives it (lower case, an IPv6 literal without its brackets): ASCII only.
_HOST = re.compile(r"^([0-9a-f:.]*:[0-9a-f:.]*|[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?)\Z", re.ASCII)
# PEP 508 / core metadata name grammar (ASCII letters and digits, with . _ - inside).
NAME = re.compile(r"^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])\Z", re.ASCII)


# Credentials written into a URL by hand are often not percent-encoded: a base64 token holds "/" and "+", a password
# "@" ("https://user:S3@CR/ET@host/simple"). urlsplit then ends the host at the first "/" and takes the host as "CR"
# and the rest of the secret as a path that gets printed. Every parse here goes through `normalize` first: the user
# information runs to the last "@" that a host (and port) follows, and is percent-encoded, so that the host is the
# real one and the secret is never mistaken for a path. Only where what comes before the first "/" is itself a host
# name with a dot (or localhost, or an IP address), with no "@" and no "user:" that is not a port, is a later "@"
# the path's ("https://files.example/x@y/…") — write an "@" in a path as %40 to be sure.
_HOSTPORT = re.compile(r"(\[[0-9A-Za-z:.%]+\]|[^/?#@\[\]\s:]+)(:[0-9]*)?(?=[/?#]|\Z)")
_PORT_ONLY = re.compile(r"[^:@]*:[0-9]+\Z")
_PLAIN = ("http://", "https://", "file://")


def _userinfo_end(scheme: str, body: str) -> int:
    """Where the user information of `scheme://body` ends (the index of its "@"), or -1 when it has none."""
    first = re.split(r"[/?#]", body, maxsplit=1)[0]
    cut = body.rfind("@")
    while cut >= 0 and not _HOSTPORT.match(body, cut + 1):  # the last "@" that a host follows
        cut = body.rfind("@", 0, cut)
    if cut < 0:
        return -1
    if scheme.lower() in _PLAIN:
        if (not first and scheme.lower() == "file://") or re.fullmatch(r"\[[0-9A-Fa-f:.]+\](:[0-9]+)?", first):
            return -1  # file:///path, or an IPv6 address: no credentials before the path
        name = first.rsplit(":", 1)[0] if _PORT_ONLY.match(first) else first
        if "@" not in first and (":" not in first or _PORT_ONLY.match(first)) and ("." in name or name == "localhost"):
            return -1  # a host name before the first "/": an "@" further on is the path's
        return cut
    # git+https://u:tok@host/org/repo@rev: credentials only before the host, and the "@" of a revision is not their end
    if "@" in first:
        return first.rfind("@")
    if ":" in first and not _PORT_ONLY.match(first):
        return body.find("@", len(first))
    return -1


def normalize(url: str) -> str:
    """`url` with the credentials in it percent-encoded (see above); any other URL as it is."""
    m = re.match(r"([A-Za-z][A-Za-z0-9+.-]*://)", url)
    if m is None or "@" not in url:
        return url
    body = url[m.end():]
    cut = _userinfo_end(m.group(1), body)
    if cut < 0:
        return url
    user, colon, password = body[:cut].partition(":")
    auth = quote(unquote(user), safe="") + (":" + quote(unquote(password), safe="") if colon else "")
    return f"{m.group(1)}{auth}@{body[cut + 1:]}"


def _split(url: str) -> SplitResult | None:
    url = normalize(url)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return None
    return parts


def problem(url: str, *, schemes: tuple[str, ...] = _SCHEMES) -> str | None:
    """Why `url` is not a usable http(s):// or file:// address ("is not …", to follow the URL), or None."""
    if any(c.isspace() or not c.isprintable() for c in url):
        return "has spaces, newlines or control characters in it"
    parts = _split(url)
    if parts is None:
        return "is not a valid URL (bad host, port or brackets)"
    if parts.scheme not in schemes:
        return "is not an http(s):// or file:// URL" if schemes == _SCHEMES else f"is not a {'/'.join(schemes)} URL"
    if parts.scheme == "file":
        return None if parts.path else "names no path"
    if not parts.hostname or not _HOST.match(parts.hostname):
        return "names no valid host (an international name goes in its xn-- form)"
    return None


def has_credentials(url: str) -> bool:
    parts = _split(url)
    return bool(parts and (parts.username or parts.password))


def strip_credentials(url: str) -> str:
    """The URL without user:password@ (what is stored in the lock and printed)."""
    parts = _split(url)
    if parts is None:
        return redact(url)  # not a URL that parses: still never its secret
    if "@" not in parts.netloc:
        return urlunsplit(parts) if parts.netloc != urlsplit(url).netloc else url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=host))


def credentials(url: str) -> tuple[str, str] | None:
    """(user, password) written in the URL, percent-decoded, or None."""
    parts = _split(url)
    if parts is None or "@" not in parts.netloc:
        return None
    userinfo = parts.netloc.rsplit("@", 1)[0]
    user, _, password = userinfo.partition(":")
    return unquote(user), unquote(password)


# A URL in free text: its scheme, then everything up to a space, a quote or an angle bracket.
_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^\s'\"<>`]*)")


# A URL's fragment that names its file's hash (pip's "#sha256=<hex>"): no secret, and worth showing.
HASH_FRAGMENT = re.compile(r"(sha1|sha224|sha256|sha384|sha512|md5)=[0-9a-fA-F]+")


def _sub_credentials(text: str, mark: str, *, query: bool = False) -> str:
    def one(m: re.Match[str]) -> str:
        body = m.group(2)
        cut = _userinfo_end(m.group(1), body) if "@" in body else -1
        body = mark + body[cut + 1:] if cut >= 0 else body
        if query:  # a token or a signature in the query, or in a fragment that is not a hash
            head, hashmark, fragment = body.partition("#")
            head = re.sub(r"\?.+", "?***", head, count=1)
            body = head + (hashmark + (fragment if HASH_FRAGMENT.fullmatch(fragment) else "***") if hashmark else "")
        return m.group(1) + body

    return _URL.sub(one, text)


def redact(text: str) -> str:
    """Any user:password@ inside free text (an error from uv or requests, a URL as the user wrote it) replaced by
    ***@ — up to the last "@" before the host, so that a secret with a raw "@" or "/" in it is hidden whole — and
    any URL's query (a signed URL's signature, ?token=…) and fragment other than a file hash (#sha256=…) by ***."""
    return _sub_credentials(text, "***@", query=True)


def secret_part(url: str) -> str | None:
    """What of a URL could be a secret that is not its credentials — "a query (?…)" or "a fragment (#…)" other than
    a file hash — or None."""
    parts = _split(url)
    if parts is None:
        return None
    if parts.query or url.rstrip("#").endswith("?"):
        return "a query (?…)"
    if parts.fragment and not HASH_FRAGMENT.fullmatch(parts.fragment):
        return "a fragment (#…) that is not a file hash"
    return None


def shown(url: str, limit: int = 120) -> str:
    """A URL the user wrote, to quote in a message: redacted first, then cut (cutting first could leave a secret's
    head without the "@" that marks it)."""
    text = redact(url)
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def strip_all_credentials(text: str) -> str:
    """Free text (a file's content) with every URL's user:password@ taken out: what may leave this machine in
    a file that is shared (a Kubernetes manifest)."""
    return _sub_credentials(text, "")


def origin(url: str) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) — what credentials are matched on, as pip does by netloc."""
    parts = _split(url)
    if parts is None or not parts.hostname:
        return None
    return parts.scheme, parts.hostname, parts.port


# Credentials learned from URLs the user wrote (triton-env.toml, PIP_INDEX_URL, pip.conf) during this process:
# kept in memory only, handed to uv and requests at request time, never stored or printed.
_LEARNED: list[str] = []


def learn(url: str) -> None:
    url = normalize(url)
    if has_credentials(url) and url not in _LEARNED:
        _LEARNED.append(url)


def learned() -> tuple[str, ...]:
    return tuple(_LEARNED)


def forget() -> None:
    """Drop every learned credential (tests)."""
    _LEARNED.clear()
