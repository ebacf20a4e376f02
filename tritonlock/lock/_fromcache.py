"""A compile answered from uv's cache (`uv pip compile --offline`) that answers as uv would online: every page in its
answer read online in this run (_pagesread), and no release passed over because the cache lacks its metadata — uv,
offline, skips such a release without a word where an older one resolves (its warning, asked for, names it)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from tritonlock import _subprocess, _toml
from tritonlock.lock import _pagesread

Uv = Callable[..., subprocess.CompletedProcess[str]]
# the pyproject.toml of a compile of these requirements (name → specifier), bound to the indexes the compile binds
# each to
Project = Callable[[dict[str, str]], str]

# uv: what its cache lacks, failing offline
CACHE_MISS = re.compile(r"network was disabled|was not found in the cache")
# How many times an --offline compile may have uv read the pages it lacks (or read from another run) and answer
# again from its cache, before the compile is asked online in full.
REFRESHES = 6
# uv --offline naming what its cache lacks: "Because vllm was not found in the cache", "rich==13.0.0 needs to be
# downloaded from a registry", a range of releases: "xformers>=0.0.16rc424,<=0.0.16rc425 needs to be downloaded from
# a registry" (the whole range: its last bound is no package), and its warning on a release it passed over:
# "`aheadlib==2.0` needs to be downloaded from a registry"
_SPEC = r"(?:===?|[<>!~]=?)[^\s,`]+"
MISSED = re.compile(rf"(?<![\w.,=<>!~*+-])`?([A-Za-z0-9][A-Za-z0-9._-]*)({_SPEC}(?:,{_SPEC})*)?`?"
                    r" (?:was not found in the cache|needs to be downloaded from a registry)")
# uv naming several ranges its cache lacks at once: "all of: … need to be downloaded from a registry"
_PLURAL = re.compile(r"\bneed to be downloaded from a registry")
# the packages uv's failure names: "only aheadlib==1.0 is available", "aheadapp>=2.0 depends on aheadlib>=2", "no
# versions of einopz", "you require torchvision"
_NAMED = re.compile(r"(?<![\w.=<>!~*+-])`?([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?"
                    r"(?=(?:===?|[<>!~]=?)[0-9*]|`? (?:was not found|is available))"
                    r"|\b(?:no versions? of|versions of|depends? on|require) (?!one of\b)`?([A-Za-z0-9][A-Za-z0-9._-]*)")
# names uv's words use that are no package: the interpreter ("You require CPython 3.12"), and the project tritonlock
# wraps the requirements in
_NOT_PACKAGES = frozenset({"python", "cpython", "pypy", "graalpy", "tritonlock-closure"})
# uv's log lines (RUST_LOG): read for what they name, never shown as uv's answer
_LOG_LINE = re.compile(r"^\s*(?:TRACE|DEBUG|INFO|WARN)\b")


def answer(out: Path) -> list[dict[str, Any]]:
    """The [[packages]] tables of uv's pylock output."""
    data = _toml.loads(out.read_text(encoding="utf-8"))
    return [p for p in data.get("packages", []) if isinstance(p, dict)]


def missed(words: str) -> dict[str, str]:
    """What uv's words say its cache lacks: package name → the release named ("" for the page): the first release
    named for a package (uv tries the newest first)."""
    got: dict[str, str] = {}
    for m in MISSED.finditer(words):
        name, spec = canonicalize_name(m.group(1)), m.group(2) or ""
        if not got.get(name):
            got[name] = spec
    return got


def named(words: str) -> set[str]:
    """The packages uv's failure names."""
    got = {canonicalize_name(a or b) for a, b in _NAMED.findall(words)}
    return {n for n in got if n not in _NOT_PACKAGES}


def many(words: str) -> bool:
    """Whether uv's cache lacks the metadata of a range of releases (uv, proving a conflict, walks a package's
    history: "xformers>=0.0.20,<=0.0.33.post2 need to be downloaded"): read one `--no-deps` round each, that takes
    more rounds than REFRESHES allows (xformers: 34.7 s, where asking online in full takes 19 s) — it is asked online
    in full at once."""
    return bool(_PLURAL.search(words)) or any((m[2] or "==")[:2] != "==" for m in MISSED.finditer(words))


def _releases(lacks: dict[str, str]) -> dict[str, str]:
    """Of what uv's cache lacks, the releases named (whose metadata it lacks), not the pages."""
    return {n: v for n, v in lacks.items() if v}


def _offline(uv: Uv, argv: list[str]) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """uv asked offline, with its warnings: its answer (the warnings taken out of its words) and what they and its
    failure name as missing from the cache."""
    proc = uv([*argv, "--offline"], log="warn")
    said = missed(proc.stderr or proc.stdout or "")
    if proc.stderr:
        proc.stderr = "".join(line for line in proc.stderr.splitlines(keepends=True) if not _LOG_LINE.match(line))
    return proc, said


def from_cache(uv: Uv, args: list[str], common: list[str], out: Path, project: Project) -> \
        subprocess.CompletedProcess[str]:
    """An --offline compile whose answer holds only what this run read online. Where uv's cache lacks a page or a
    release's metadata, or answers with a page this run did not read (another day's, or another index's once served
    at the same address), uv reads just those online (`uv pip compile --no-deps` of them) and answers again from its
    cache — a handful of pages, where asking the whole compile online again reads every page of the closure (a
    minute for vLLM + SGLang); pages another compile is reading for its answer are waited for, not read twice
    (_pagesread). A release uv passed over for want of its metadata (its warning names it) is read with what it needs
    — a `--no-deps` read brings no metadata — though uv answered without it: it may be the one uv, online, takes. An
    offline failure that is no cache miss is uv's answer, as online, once the pages of the packages it names have
    been read in this run (where uv cannot read one, its answer stands)."""
    # (uv takes the file it writes as its preferences: each answer again starts from the first one's — the pins of
    # `preferring` or none — never from the answer the pages just read online may change)
    first = out.read_bytes() if out.exists() else None

    def reset() -> None:
        out.write_bytes(first) if first is not None else out.unlink(missing_ok=True)

    proc, lacks = _offline(uv, args)
    wanted: dict[str, str]
    last: dict[str, str] | None = None
    tried: set[str] = set()  # (the packages a failure named, whose pages were read or could not be)
    for _ in range(REFRESHES):
        if proc.returncode == 0:
            got = answer(out)
            todo = _pagesread.unread(got)
            if not todo and not lacks:
                return proc
            with _pagesread.claim(todo) as mine:  # (what another compile reads now: waited for)
                wanted = {canonicalize_name(str(p.get("name") or "")): f"=={p.get('version')}"
                          for p in got if _pagesread.keys([p]) & mine}
                wanted.update(lacks)
                read = not wanted or read_online(uv, common, out.parent, wanted, project, _releases(lacks))
            if not read or (wanted and wanted == last):
                break
            last = wanted or last
        else:
            words = proc.stderr or proc.stdout or ""
            if CACHE_MISS.search(words):
                if many(words):
                    break
                wanted = lacks
                if not wanted or wanted == last or not read_online(uv, common, out.parent, wanted, project,
                                                                   _releases(wanted)):
                    break  # (the same miss again: the read did not bring what uv lacks)
                last = wanted
            # (a conflict on a page this run has not read — another day's — may be none today: read, then asked
            # again; where uv cannot read them, its answer stands)
            elif stale := {n: "" for n in named(words) - tried if not _pagesread.named(n)}:
                tried.update(stale)
                read_online(uv, common, out.parent, stale, project)
            else:
                return proc
        reset()
        proc, lacks = _offline(uv, args)
    reset()
    return uv(args)  # asked online in full


def read_online(uv: Uv, common: list[str], tmp: Path, wanted: dict[str, str], project: Project,
                releases: dict[str, str] | None = None) -> bool:
    """uv reads these packages' pages online (`--no-deps`), from the indexes the compile binds them to, and the
    `releases` uv passed over for want of their metadata with what they need (a `--no-deps` read brings no release's
    metadata); False when it cannot (the compile is then asked online in full)."""
    releases = releases or {}
    for what, deps in (({n: v for n, v in wanted.items() if n not in releases}, False), (releases, True)):
        if not what:
            continue
        where = tmp / ("read-releases" if deps else "read")
        where.mkdir(exist_ok=True)
        (where / "pyproject.toml").write_text(project(what), encoding="utf-8")
        proc = uv([_subprocess.uv_bin(), "pip", "compile", str(where / "pyproject.toml"), *common,
                   *([] if deps else ["--no-deps"]), "-o", str(where / "pylock.toml")], str(where))
        if proc.returncode != 0:
            return False
        _pagesread.READ.update(_pagesread.keys(answer(where / "pylock.toml")))
    return True
