"""Index and file URLs: what is a valid one, and the credentials in one (never stored, never printed)."""

from __future__ import annotations

import re
from urllib.parse import SplitResult, quote, unquote, urlsplit, urlunsplit

_SCHEMES = ("http", "https", "file")
# A host name as urlsplit gives it (lower case, an IPv6 literal without its brackets): ASCII only.
_HOST = re.compile(r"^([0-9a-f:.]*:[0-9a-f:.]*|[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?)\Z", re.ASCII)
# PEP 508 / core metadata name grammar (ASCII letters and digits, with . _ - inside).
NAME = re.compile(r"^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])\Z", re.ASCII)


def _split(url: str) -> SplitResult | None:
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
    if parts is None or "@" not in parts.netloc:
        return url
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


def with_credentials(url: str, user: str, password: str) -> str:
    """`url` with user:password@ put back (only for handing to uv in its environment, never to print)."""
    parts = _split(url)
    if parts is None:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    auth = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
    return urlunsplit(parts._replace(netloc=f"{auth}@{host}"))


# Up to the *last* @ before the host: a password with a raw @ in it ("user:p@ss@host") is hidden whole.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s'\"<>]+@")


def redact(text: str) -> str:
    """Any user:password@ inside free text (an error from uv or requests) replaced by ***@."""
    return _USERINFO.sub(r"\1***@", text)


def strip_all_credentials(text: str) -> str:
    """Free text (a file's content) with every URL's user:password@ taken out: what may leave this machine in
    a file that is shared (a Kubernetes manifest)."""
    return _USERINFO.sub(r"\1", text)


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
    if has_credentials(url) and url not in _LEARNED:
        _LEARNED.append(url)


def learned() -> tuple[str, ...]:
    return tuple(_LEARNED)


def forget() -> None:
    """Drop every learned credential (tests)."""
    _LEARNED.clear()
