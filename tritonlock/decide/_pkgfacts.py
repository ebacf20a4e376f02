"""What the indexes say of the user's packages: files per project, metadata per release, upload times, and which
files install on a target (its Python, platform and glibc) — read once per run, shared by the decision's threads."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from tritonlock.lock._requires import parsed_requirement  # (each Requires-Dist line parsed once a process)
from tritonlock.errors import TritonlockError
from tritonlock.models import TargetSpec

if TYPE_CHECKING:
    from tritonlock.lock.index import IndexFile


def public(version: str) -> str:
    """A version without its local label ("2.11.0+cu130" -> "2.11.0")."""
    return version.split("+", 1)[0]


def parse_version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


# --- the target as markers and wheel tags see it -------------------------------------------------------------------

def marker_env(target: TargetSpec, python: str) -> dict[str, str]:
    """PEP 508 marker values of the target machine (not this one)."""
    system = {"linux": "Linux", "windows": "Windows", "macos": "Darwin"}.get(target.os, "Linux")
    machine = target.arch
    if target.os == "windows":
        machine = "AMD64" if target.arch == "x86_64" else "ARM64"
    elif target.os == "macos":
        machine = "arm64"
    return {"python_version": python, "python_full_version": f"{python}.0", "implementation_name": "cpython",
            "implementation_version": f"{python}.0", "platform_python_implementation": "CPython",
            "sys_platform": {"Linux": "linux", "Windows": "win32", "Darwin": "darwin"}[system],
            "platform_system": system, "os_name": "nt" if system == "Windows" else "posix",
            "platform_machine": machine, "platform_release": "", "platform_version": "", "extra": ""}


# A package's releases repeat the same Requires-Dist lines (unsloth's hundreds of releases, each with its dozens of
# extras): each line is parsed (lock._requires.parsed_requirement: shared, read it, never change it) and its marker
# evaluated for a target once a process.
@functools.lru_cache(maxsize=1 << 17)
@functools.lru_cache(maxsize=1 << 16)
def _applies(line: str, target: TargetSpec, python: str, extra: str) -> bool:
    """Whether the Requires-Dist `line` applies on the target with `extra` asked for ("" for none). Kept a process:
    a package's releases repeat most of their lines (unsloth's 277 releases: 500,000 questions, a few thousand
    different ones)."""
    r = parsed_requirement(line)
    return r is not None and (r.marker is None or r.marker.evaluate({**marker_env(target, python), "extra": extra}))


def _platform_fits(platform: str, target: TargetSpec) -> bool:
    import re

    if platform == "any":
        return True
    if target.os == "windows":
        return platform == ("win_amd64" if target.arch == "x86_64" else "win_arm64")
    if target.os == "macos":
        m = re.fullmatch(r"macosx_(\d+)_(\d+)_(\w+)", platform)
        if not m or m[3] not in ("arm64", "universal2"):
            return False
        return target.macos is None or (int(m[1]), int(m[2])) <= _mm(target.macos)
    arch = target.arch
    legacy = {f"manylinux1_{arch}": (2, 5), f"manylinux2010_{arch}": (2, 12), f"manylinux2014_{arch}": (2, 17),
              f"linux_{arch}": (0, 0)}
    if platform in legacy:
        glibc = legacy[platform]
    else:
        m = re.fullmatch(rf"manylinux_(\d+)_(\d+)_{re.escape(arch)}", platform)
        if not m:
            return False
        glibc = (int(m[1]), int(m[2]))
    return target.glibc is None or glibc <= _mm(target.glibc)


def _mm(version: str) -> tuple[int, int]:
    parts = (version.split(".") + ["0"])[:2]
    try:
        return int(parts[0]), int(parts[1])
    except ValueError:
        return (0, 0)


@functools.lru_cache(maxsize=1 << 16)
def _wheel(filename: str) -> tuple[Any, ...] | None:
    """packaging's parse of a wheel's file name (name, version, build, tags), once a process: an index page's files
    are looked at again and again (numpy's page lists thousands: by release, whether one fits, which installs);
    None where it is no valid wheel name or version."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        return parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return None


@functools.lru_cache(maxsize=1 << 12)
def _python_admits(requires_python: str, py: str) -> bool:
    """Whether a file's Requires-Python admits the Python `py` ("3.12.0"); True where it is no valid specifier."""
    try:
        return SpecifierSet(requires_python).contains(py, prereleases=True)
    except InvalidSpecifier:
        return True


def file_fits(filename: str, target: TargetSpec, python: str) -> bool:
    """Whether a wheel installs on the target's Python and platform (an sdist always can, by building it)."""
    if not filename.endswith(".whl"):
        return True
    parsed = _wheel(filename)
    if parsed is None:
        return False
    tags = parsed[3]
    major, minor = _mm(python)
    cp = f"cp{major}{minor}"
    for t in tags:
        if t.interpreter.startswith("cp") and t.abi == "abi3":
            try:
                ok_interp = int(t.interpreter[3:] or 0) <= minor and t.interpreter[2:3] == str(major)
            except ValueError:
                ok_interp = False
        else:
            # py3, py312 — and py39 on Python 3.12: a pure-Python tag for an older minor installs on a newer one, as
            # packaging.tags.compatible_tags lists (xformers' py39-none-manylinux wheels)
            older = t.interpreter.startswith(f"py{major}") and t.interpreter[2 + len(str(major)):].isdigit() and \
                int(t.interpreter[2 + len(str(major)):]) <= minor
            ok_interp = (t.interpreter in (cp, f"py{major}") or older) and t.abi in ("none", cp)
        if ok_interp and _platform_fits(t.platform, target):
            return True
    return False


def install_order(filenames: Iterable[str], target: TargetSpec, python: str) -> list[str]:
    """The wheels that install on the target, in the order an installer prefers them (pip's and uv's tag priority:
    the interpreter and ABI first — cp312-cp312, then abi3 builds for newer to older CPythons, then py3 — then the
    most specific platform, then the higher build number): the first is the one that installs."""
    rank = _tag_rank(target.os, target.arch, target.glibc, target.macos, python)
    fits = [f for f in filenames if f.endswith(".whl") and file_fits(f, target, python)]

    def key(f: str) -> tuple[int, int]:
        parsed = _wheel(f)
        if parsed is None:
            return (len(rank) + 1, 0)
        _, _, build, tags = parsed
        return (min((rank.get(str(t), len(rank)) for t in tags), default=len(rank)), -build[0] if build else 0)

    return sorted(fits, key=key)


@functools.lru_cache(maxsize=32)
def _tag_rank(system: str, arch: str, glibc: str | None, macos: str | None, python: str) -> dict[str, int]:
    """Tag -> its place in the target's priority list (packaging.tags' order for the target's platforms)."""
    from packaging import tags

    major, minor = _mm(python)
    if system == "windows":
        platforms = ["win_amd64" if arch == "x86_64" else "win_arm64"]
    elif system == "macos":
        mac = _mm(macos) if macos else (26, 0)
        platforms = list(tags.mac_platforms(mac, "arm64"))
    else:
        top = _mm(glibc)[1] if glibc else 99
        legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
        platforms = []
        for m in range(top, 4, -1):
            platforms.append(f"manylinux_2_{m}_{arch}")
            if m in legacy:
                platforms.append(f"{legacy[m]}_{arch}")
        platforms.append(f"linux_{arch}")
    order = [*tags.cpython_tags((major, minor), abis=[f"cp{major}{minor}"], platforms=platforms),
             *tags.compatible_tags((major, minor), interpreter=f"cp{major}{minor}", platforms=platforms)]
    return {str(t): i for i, t in reversed(list(enumerate(order)))}


# --- what an index says of a package ------------------------------------------------------------------------------

def _file_version(filename: str) -> Version | None:
    from packaging.utils import InvalidSdistFilename, parse_sdist_filename

    if filename.endswith(".whl"):
        parsed = _wheel(filename)
        return parsed[1] if parsed is not None else None
    try:
        if filename.endswith((".tar.gz", ".zip")):
            return parse_sdist_filename(filename)[1]
    except (InvalidSdistFilename, InvalidVersion):
        return None
    return None


# The older releases whose METADATA _declaring reads at once, walking down to one that declares the extras asked for
_EXTRAS_AT_ONCE = 8
# The share of the packages an extra brought that a release without it must require itself to be what was asked for
# (folded_extras): sglang 0.5.23 holds 38 of the 43 that 0.5.2's `srt` brought (pynvml became nvidia-ml-py, …)
FOLDED = 0.8


class Facts:
    """Index facts the decision explains itself with: files per project, metadata per release (cached per run)."""

    def __init__(self) -> None:
        import threading

        self._files: dict[tuple[str, str], Future[tuple[IndexFile, ...] | None]] = {}
        self._meta: dict[tuple[str, str, str], str | None] = {}
        self._by_release: dict[tuple[str, str], dict[Version, list[IndexFile]]] = {}
        self._requires: dict[tuple[object, ...], tuple[Requirement, ...] | None] = {}
        self._decl: dict[tuple[object, ...], str | None] = {}  # (_declaring: each walk down once)
        self._lock = threading.Lock()

    def files(self, index: str, name: str) -> tuple[IndexFile, ...] | None:
        """None when the index cannot be asked (the explanation then says less, never something false). Threads
        asking for the same page wait for one request."""
        key = (index, canonicalize_name(name))
        with self._lock:
            future = self._files.get(key)
            mine = future is None
            if future is None:
                future = self._files[key] = Future()
        if mine:
            from tritonlock.lock.index import project_files

            try:
                future.set_result(project_files(index, name))
            except (TritonlockError, OSError, ValueError):
                future.set_result(None)
            except BaseException:
                future.set_result(None)  # no thread waits forever on a page that will never come
                raise
        return future.result()

    def read(self, index: str, name: str) -> bool:
        """Whether the project's page was read in this run (asking for it then reads nothing; not where it could
        not be read)."""
        future = self._files.get((index, canonicalize_name(name)))
        return future is not None and future.done() and future.result() is not None

    def prefetch(self, pairs: Iterable[tuple[str, str]]) -> None:
        todo = [p for p in dict.fromkeys(pairs) if (p[0], canonicalize_name(p[1])) not in self._files]
        if not todo:
            return
        with ThreadPoolExecutor(max_workers=min(16, len(todo))) as pool:
            list(pool.map(lambda p: self.files(*p), todo))

    def release_files(self, index: str, name: str, version: str) -> list[IndexFile]:
        """The release's files (any local build of it: "2.5.1+cu124" is 2.5.1), nothing yanked. The page is sorted
        by release once per run: the decision's words ask for hundreds of releases of one page (vLLM's lists
        hundreds of files)."""
        key = (index, canonicalize_name(name))
        by_release = self._by_release.get(key)
        if by_release is None:
            by_release = {}
            for f in self.files(index, name) or ():
                v = _file_version(f.filename)
                if not f.yanked and v is not None:
                    by_release.setdefault(Version(public(str(v))), []).append(f)
            self._by_release[key] = by_release
        want = parse_version(public(version))
        return list(by_release.get(want, ())) if want is not None else []

    def prereleases(self, index: str, name: str) -> list[str] | None:
        """The pre- and dev releases the index lists files of, oldest first; None where it lists no final release
        (then a pre-release is all the package has)."""
        self.release_files(index, name, "0")  # (the page sorted by release)
        by_release = self._by_release.get((index, canonicalize_name(name)), {})
        pre = sorted(v for v in by_release if v.is_prerelease)
        return [str(v) for v in pre] if len(pre) < len(by_release) else None

    def older(self, index: str, name: str, version: str) -> list[str]:
        """The final releases before `version` that the index lists files of, newest first."""
        self.release_files(index, name, version)  # (the page sorted by release)
        want = parse_version(public(version))
        by_release = self._by_release.get((index, canonicalize_name(name)), {})
        return [str(v) for v in sorted(by_release, reverse=True)
                if want is not None and v < want and not v.is_prerelease and not v.is_devrelease]

    def has_metadata(self, index: str, name: str, version: str) -> bool:
        """Whether the release's metadata was asked for in this run (read, or found missing)."""
        return (index, canonicalize_name(name), version) in self._meta

    def metadata(self, index: str, name: str, version: str, target: TargetSpec, python: str) -> str | None:
        """Core metadata of one release (PEP 658), from the file that would install on the target if any."""
        key = (index, canonicalize_name(name), version)
        if key not in self._meta:
            files = self.release_files(index, name, version)
            files.sort(key=lambda f: (not (f.filename.endswith(".whl") and file_fits(f.filename, target, python)),
                                      not f.filename.endswith(".whl")))
            text = None
            for f in files[:3]:
                text = _read_metadata(index, f)
                if text:
                    break
            self._meta[key] = text
        return self._meta[key]

    def requires(self, index: str, name: str, version: str, target: TargetSpec, python: str,
                 extras: Iterable[str] = ()) -> list[Requirement] | None:
        """The release's Requires-Dist that apply on the target (markers evaluated there), with those of `extras`;
        None when unknown. Read once a run for each question (the search asks it per torch line)."""
        key = (index, canonicalize_name(name), version, target, python, tuple(sorted(extras)))
        if key in self._requires:
            hit = self._requires[key]
            return None if hit is None else list(hit)
        found = self._requires_of(index, name, version, target, python, extras)
        self._requires[key] = None if found is None else tuple(found)
        return found

    def _requires_of(self, index: str, name: str, version: str, target: TargetSpec, python: str,
                     extras: Iterable[str]) -> list[Requirement] | None:
        text = self.metadata(index, name, version, target, python)
        if text is None:
            return None
        lines = [line for line in _headers(text, "Requires-Dist") if parsed_requirement(line) is not None]
        me = canonicalize_name(name)
        wanted = {canonicalize_name(e) for e in extras}
        hit: set[str] = set()  # the lines that apply with the extras asked so far (each marker weighed once an extra)
        new = ["", *sorted(wanted)]
        while True:  # an extra that asks for the package's own extras (unsloth[cu124-torch240] -> [cu124onlytorch240])
            hit.update(line for line in lines if line not in hit and any(_applies(line, target, python, e) for e in new))
            applies = [r for line in lines if line in hit and (r := parsed_requirement(line)) is not None]
            more = {canonicalize_name(e) for r in applies if canonicalize_name(r.name) == me for e in r.extras} - wanted
            if not more:
                return [r for r in applies if canonicalize_name(r.name) != me]
            wanted |= more
            new = sorted(more)

    def provides_extras(self, index: str, name: str, version: str, target: TargetSpec, python: str,
                        extras: Iterable[str]) -> bool | None:
        """Whether the release's METADATA declares every one of `extras` (Provides-Extra, names normalized); None
        when its METADATA is unknown. A release without an extra the user asked for installs without what the extra
        would have brought: it is not the package they asked for."""
        wanted = {canonicalize_name(e) for e in extras}
        if not wanted:
            return True
        text = self.metadata(index, name, version, target, python)
        if text is None:
            return None
        return wanted <= {canonicalize_name(e) for e in _headers(text, "Provides-Extra")}

    def lacks_extras(self, index: str, name: str, version: str, target: TargetSpec, python: str,
                     extras: Iterable[str]) -> bool:
        """Whether the release is not what `name[extras]` asks for: it declares not every one of `extras` (its
        METADATA read; unknown is not lacking) and did not take them into its own requirements (folded_extras) —
        unsloth[cu124-torch240]: a release without that extra would not bring the torch build it picks."""
        return self.provides_extras(index, name, version, target, python, extras) is False \
            and self.folded_extras(index, name, version, target, python, extras) is None

    def folded_extras(self, index: str, name: str, version: str, target: TargetSpec, python: str,
                      extras: Iterable[str]) -> tuple[str, int, int] | None:
        """Where the release declares not every one of `extras` and is what `name[extras]` asks for all the same:
        the nearest older release that declares them, and how many of the packages they brought there the release's
        own requirements hold, of how many — at least FOLDED of them (inferred from the names: the package took the
        extra into its own requirements; sglang 0.5.3 and later hold all or nearly all that 0.5.2's `srt` brought),
        or all where they brought none (sglang 0.5.4.post1's `all`, an alias kept for old install lines). None: it
        declares them, a METADATA is unknown, no older release declares them, or its requirements hold fewer."""
        extras = tuple(sorted({canonicalize_name(e) for e in extras}))
        if self.provides_extras(index, name, version, target, python, extras) is not False:
            return None
        decl = self._declaring(index, name, version, target, python, extras)
        plain = self.requires(index, name, decl, target, python) if decl is not None else None
        full = self.requires(index, name, decl, target, python, extras) if decl is not None else None
        own = self.requires(index, name, version, target, python)
        if decl is None or plain is None or full is None or own is None:
            return None

        def same(r: Requirement) -> tuple[str, str, tuple[str, ...]]:  # (its marker aside: the extra's is its own)
            return canonicalize_name(r.name), str(r.specifier), tuple(sorted(r.extras))

        base = {same(r) for r in plain}
        brought = {canonicalize_name(r.name) for r in full if same(r) not in base}
        held = len(brought & {canonicalize_name(r.name) for r in own})
        return (decl, held, len(brought)) if held >= FOLDED * len(brought) else None

    def _declaring(self, index: str, name: str, version: str, target: TargetSpec, python: str,
                   extras: tuple[str, ...]) -> str | None:
        """The nearest release older than `version` that declares `extras` (None: none does, or one on the way down
        has no METADATA to read), walked down once for the releases between (their METADATA eight side by side)."""
        key = (index, canonicalize_name(name), version, target, python, extras)
        if key not in self._decl:
            older = self.older(index, name, version)
            walked, hit = [version], None
            for start in range(0, len(older), _EXTRAS_AT_ONCE):
                chunk = [v for v in older[start:start + _EXTRAS_AT_ONCE] if not self.has_metadata(index, name, v)]
                if len(chunk) > 1:  # (unsloth's walk down 100 releases: 13 round trips, not 100)
                    with ThreadPoolExecutor(max_workers=len(chunk)) as pool:
                        list(pool.map(lambda v: self.metadata(index, name, v, target, python), chunk))
                got: bool | None = False
                for v in older[start:start + _EXTRAS_AT_ONCE]:
                    got = self.provides_extras(index, name, v, target, python, extras)
                    if got is not False:
                        hit = v if got else None
                        break
                    walked.append(v)
                if got is not False:
                    break
            for v in walked:  # (the releases between share the answer)
                self._decl[(index, canonicalize_name(name), v, target, python, extras)] = hit
        return self._decl[key]

    def between(self, index: str, name: str, low: str, high: str, target: TargetSpec, python: str,
                extras: Iterable[str]) -> tuple[list[str], list[str]]:
        """The final releases strictly between `low` and `high` that install on the target, newest first: those that
        are what `name[extras]` asks for, and those that lack an extra asked for (lacks_extras)."""
        at = parse_version(public(low))
        asked: list[str] = []
        lacking: list[str] = []
        for v in self.older(index, name, high):
            if at is None or (parse_version(v) or at) <= at:
                break
            if self.fits(index, name, v, target, python):
                (lacking if self.lacks_extras(index, name, v, target, python, extras) else asked).append(v)
        return asked, lacking

    def has_wheel(self, index: str, name: str, version: str, target: TargetSpec, python: str) -> bool:
        """Whether the release has a wheel that installs on the target (else only its sdist, built at sync)."""
        return any(f.filename.endswith(".whl") and file_fits(f.filename, target, python)
                   for f in self.release_files(index, name, version))

    def fits(self, index: str, name: str, version: str, target: TargetSpec, python: str) -> bool:
        """Whether some file of the release installs on the target: a fitting wheel, or an sdist, and its
        Requires-Python admits the target's Python."""
        files = self.release_files(index, name, version)
        py = f"{python}.0"
        for f in files:
            if f.requires_python and not _python_admits(f.requires_python, py):
                continue
            if not f.filename.endswith(".whl") or file_fits(f.filename, target, python):
                return True
        return False

    def uploaded(self, index: str, name: str, version: str) -> datetime | None:
        """When the release's first file was uploaded (PEP 700 upload-time; None where the index does not say)."""
        times = [t for f in self.release_files(index, name, version) if (t := _when(f.upload_time)) is not None]
        return min(times) if times else None


    def nearest(self, index: str, name: str, n: int = 3) -> list[str]:
        """Up to `n` names like `name` (or like its first words: "einopz-not-a-pkg" is near "einops") that the index
        serves: among the projects uv's cache has pages of and the packages compat/ names, each asked of the index."""
        import difflib

        want = canonicalize_name(name)
        parts = want.split("-")
        heads = {"-".join(parts[:i]) for i in range(1, len(parts) + 1)}
        scored = sorted(((max(difflib.SequenceMatcher(None, h, k).ratio() for h in heads), k)
                         for k in _known_names() if k != want), reverse=True)
        out: list[str] = []
        for score, k in scored[:2 * n]:
            if score < 0.75 or len(out) >= n:
                break
            if self.files(index, k):
                out.append(k)
        return out


def _known_names() -> set[str]:
    """Project names this machine has seen served: uv's cache of index pages (its file names), and compat/'s."""
    import os
    import re
    from pathlib import Path

    names: set[str] = set()
    root = os.environ.get("UV_CACHE_DIR")
    if not root:
        try:
            from tritonlock import _subprocess

            proc = _subprocess.run([_subprocess.uv_bin(), "cache", "dir"], timeout=10)
            root = proc.stdout.strip() if proc.returncode == 0 else None
        except (OSError, TritonlockError):
            root = None
    if root:
        for page in Path(root).glob("simple-v*/**/*.rkyv"):
            names.add(canonicalize_name(page.stem))
    from tritonlock._data import compat_root

    compat = compat_root()
    for f in (compat.glob("*.toml") if compat else ()):
        try:
            names.update(canonicalize_name(m) for m in re.findall(r'^name\s*=\s*"([A-Za-z0-9._-]+)"',
                                                                   f.read_text(encoding="utf-8"), re.M))
        except OSError:
            continue
    return names


def _when(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _read_metadata(index: str, f: IndexFile) -> str | None:
    """PEP 658's `.metadata` beside the file, else (an index without it, as many mirrors) the wheel's METADATA read
    with HTTP Range requests — the zip's central directory and one member, a few kB of a wheel of any size, as uv
    does."""
    from tritonlock.lock.integrity import keep_metadata, kept_metadata

    sha = (f.sha256 or "").lower()
    # a file of this sha256 has this METADATA for ever: checked against its bytes by the integrity check, else kept
    # as an index served it — so a later resolve's words read nothing again
    text = (kept_metadata(sha) or kept_metadata(sha, served=True)) if sha else None
    if text:
        return text
    from tritonlock._link import LINK

    with LINK.read():  # (the decision waits for it: the integrity check's downloads give way)
        text = _served_metadata(index, f)
    if text and sha:
        keep_metadata(sha, text, served=True)
    return text


def _served_metadata(index: str, f: IndexFile) -> str | None:
    import re

    from tritonlock.lock.index import IndexClient

    try:
        client = IndexClient(index, timeout=30, retries=2)
        text = client.metadata(f)
        if text or not f.filename.endswith(".whl"):
            return text or None
        from tritonlock.native.remotezip import RemoteZip

        z = RemoteZip(client.session, f.url, f.size)
        name = next((n for n in z.members() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
        return z.read(name).decode("utf-8", "replace") if name else None
    except (TritonlockError, OSError, ValueError, KeyError, IndexError):
        return None


def _headers(text: str, field: str) -> list[str]:
    from tritonlock.lock._requires import metadata_fields

    return list(metadata_fields(text).get(field.lower(), ()))


def releases(facts: Facts, index: str, req: Requirement) -> list[Version]:
    """The public releases on the index that the requirement admits, oldest first (no pre-release unless it asks for
    one, nothing yanked; local builds of one release, "0.21.0+cu124" and "+cu126", are that one release)."""
    files = facts.files(index, req.name)
    if not files:
        return []
    versions = {Version(public(str(v))) for f in files if not f.yanked and (v := _file_version(f.filename)) is not None}
    return sorted(v for v in versions if req.specifier.contains(v, prereleases=bool(req.specifier.prereleases)))


def newest(facts: Facts, index: str, req: Requirement) -> str | None:
    """The newest release on the index that the requirement admits (public version; see `releases`); None when the
    index cannot be read or has none."""
    found = releases(facts, index, req)
    return str(found[-1]) if found else None
