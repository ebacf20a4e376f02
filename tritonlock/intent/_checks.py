"""The checks every part of the intent reader shares: the problem list (each problem names file:line and a fix),
typed getters, requirement and version-specifier checks."""

from __future__ import annotations

import re
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from tritonlock import _toml, _urls
from tritonlock.errors import IntentError

_MINOR = re.compile(r"^3\.[0-9]+\Z")


class _Problems:
    """Collects every problem in the file before raising (STYLE §9)."""

    def __init__(self, path: str, text: str) -> None:
        self.path, self.text = path, text
        self.items: list[str] = []
        self.warnings: list[str] = []  # what was read otherwise than written (driver = "535")
        self._lines: _toml.Lines | None = None
        self.prefix: tuple[str | int, ...] = ()  # ("tool", "tritonlock") in a pyproject.toml

    def add(self, key: tuple[str | int, ...], what: str, fix: str, *, absolute: bool = False) -> None:
        key = key if absolute else (*self.prefix, *key)
        if self._lines is None:  # one pass over the file, however many problems it has
            self._lines = _toml.Lines(self.text)
        line = self._lines.of(key)
        where = f"{self.path}:{line}" if line else self.path
        shown = "".join(f"[{k}]" if isinstance(k, int) else (f".{k}" if i else _toml.shown(k, 40).strip("'\""))
                        for i, k in enumerate(key))
        self.items.append(f"{where}: {shown}: {what} — {fix}")

    def raise_if_any(self) -> None:
        if len(self.items) == 1:
            raise IntentError(self.items[0])
        if self.items:
            raise IntentError(f"{len(self.items)} problems in {self.path}:\n  "
                              + "\n  ".join(_toml.capped(self.items)))


# The fast path must accept only what packaging accepts (every later parse of the text trusts it): extras are names
# separated by single commas ("torch[,]" and "x[a,,b]" go to the full parser, which words the error).
_SIMPLE_REQ = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*"
                         r"(\[\s*(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
                         r"(?:\s*,\s*[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)*)?\s*\])?\s*"
                         r"((?:[<>=!~]=?=?)\s*[A-Za-z0-9.*+!_-]+(?:\s*,\s*(?:[<>=!~]=?=?)\s*[A-Za-z0-9.*+!_-]+)*)?\s*$")


def _requirement(req: str) -> tuple[str, str] | str:
    """(name, normalized text) of a PEP 508 requirement, or why it is invalid.

    The common "name[extra]>=x,<y" form is checked without packaging.requirements, whose import costs
    more than the rest of a no-change resolve; markers and URLs go through the full parser.
    """
    m = _SIMPLE_REQ.match(req)
    if m:
        try:
            spec = SpecifierSet(m.group(3) or "")
        except InvalidSpecifier:
            pass  # let the full parser word the error
        else:
            extras = ",".join(sorted(e.strip() for e in (m.group(2) or "[]")[1:-1].split(",") if e.strip()))
            return m.group(1), m.group(1) + (f"[{extras}]" if extras else "") + str(spec)
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        r = Requirement(req)
    except InvalidRequirement as err:
        return str(err).splitlines()[0].strip()
    return r.name, str(r)


# The fix for a direct URL _requirement_url_problem refuses.
URL_FIX = ("name the file by a plain http(s):// or file:// URL (a wheel from a signed or token URL: download it and "
           "give its file:// URL); keep credentials in ~/.netrc or your keyring")


def _requirement_url_problem(text: str) -> str | None:
    """Why a direct-URL requirement ("name @ URL") cannot be locked, or None."""
    if "://" not in text:
        return None
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        url = Requirement(text).url
    except InvalidRequirement:
        return None
    if not url:
        return None
    why = _urls.problem(url)
    if why:
        return f"its URL {why}"
    if _urls.has_credentials(url):
        return "its URL carries credentials, which would be written into the lock"
    secret = _urls.secret_part(url)
    if secret:  # (a token or a signature there would be written into the lock and shown; a signed URL expires)
        return f"its URL has {secret}, which would be written into the lock — a token or a signature there is a secret"
    return None


def normalize_torch_spec(value: str) -> str:
    """'*' → any; a bare '2.6' or '2.6.*' → '==2.6.*'; a bare '2.6.0' → '==2.6.0'; else the specifier."""
    v = value.strip()
    if v == "*":
        return ""
    if re.fullmatch(r"[0-9]+\.[0-9]+", v):
        return f"=={v}.*"
    if re.fullmatch(r"[0-9]+(\.[0-9]+)*\.\*", v):  # "2.5.*", as pip's "==2.5.*" without the operator
        return f"=={v}"
    if re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", v):
        return f"=={v}"
    return v


def _check_spec(p: _Problems, key: tuple[str | int, ...], value: str, example: str) -> bool:
    try:
        SpecifierSet(value)
    except InvalidSpecifier:
        p.add(key, f"{_toml.shown(value)} is not a valid PEP 440 version specifier", f"write e.g. {example}")
        return False
    return True


def _string(p: _Problems, key: tuple[str | int, ...], raw: Any, example: str) -> str | None:
    if not isinstance(raw, str):
        p.add(key, f"expected a string, got {type(raw).__name__} {_toml.shown(raw)}", f"write e.g. {example}")
        return None
    return raw


# The keys of each table of the intent: a key written in the wrong table is told where it belongs.
TABLES: dict[str, tuple[str, ...]] = {
    "[environment]": ("python", "torch", "triton", "packages", "cuda", "cuda-policy", "no-build", "channel",
                      "optional-gpu-code", "allow-unchecked-native", "imports"),
    "[indexes]": ("torch", "default"),
    "[[targets]]": ("name", "os", "arch", "glibc", "python", "driver", "cuda", "gpus", "macos", "amdgpu",
                    "hsa-override"),
    "[[package-builds]]": ("name", "index", "cuda", "format"),
}


def elsewhere(this: str) -> dict[str, str]:
    """Each key of the other tables → the table it belongs in (the first that has it; [[package-builds]]'s keys are
    no hint: `index` in [environment] means [indexes] rather)."""
    out: dict[str, str] = {}
    for table, keys in TABLES.items():
        if table not in (this, "[[package-builds]]"):
            for k in keys:
                out.setdefault(k, table)
    return out


def _unknown(p: _Problems, table: dict[str, Any], allowed: tuple[str, ...], key: tuple[str | int, ...],
             elsewhere: dict[str, str] | None = None) -> None:
    """Each key of `table` not in `allowed`: the key it most likely means, or the table it belongs in (`elsewhere`:
    key → "[[targets]]"), and the keys this table has."""
    for k in table:
        if k not in allowed:
            # a suggestion costs a fuzzy match: only for as many keys as an error shows (_toml.capped)
            near = _toml.nearest(k, allowed) if len(p.items) < 20 else None
            other = _toml.nearest(k, elsewhere) if elsewhere and near is None and len(p.items) < 20 else None
            if near is not None:
                fix = f'did you mean "{near}"? (the keys here: {", ".join(allowed)})'
            elif other is not None and elsewhere is not None:
                there = elsewhere[other]
                if p.prefix:  # in a pyproject.toml: [tool.tritonlock.environment]
                    name = there.strip("[]")
                    there = there.replace(name, ".".join([*map(str, p.prefix), name]))
                fix = (f"{other} belongs in {there}" if other == k else f'did you mean "{other}"? It belongs in '
                       f"{there}") + f": move it there (the keys here: {', '.join(allowed)})"
            else:
                fix = f"use one of: {', '.join(allowed)}"
            p.add((*key, k), "unknown key", fix)


def _python(p: _Problems, key: tuple[str | int, ...], raw: Any) -> str | None:
    s = _string(p, key, raw, '"3.12" or ">=3.10"')
    if s is None:
        return None
    s = s.strip()
    if _MINOR.match(s):
        return s
    if re.fullmatch(r"3\.[0-9]+\.[0-9]+", s):
        return ".".join(s.split(".")[:2])
    if _check_spec(p, key, s, '"3.12" or ">=3.10,<3.14"'):
        return s
    return None


_LOCAL = re.compile(r"\s*(?:===?)?\s*([0-9]+(?:\.[0-9]+)*)\+([A-Za-z0-9.]+)\s*")

INTENT_LIMIT = 16 * 1024 * 1024  # an intent (or a host file) is a few KB; 50,000 packages are about 1 MB
