"""`tritonlock compat native`: the binary facts of the wheels users bring most, read from an index and written to
compat/native/ (tritonlock.native.shipped's format: one file per package, each wheel keyed by its sha256 with its file
name and the reader's version; no index address) — so that a first resolve on a new machine reads only the wheels
the matrix does not know. Re-runnable: a row already there of this reader's version, for a wheel still chosen, is
kept as it is; a file written by another reader version (or before a field was added) is read again whole. The
choice: each package's newest releases, their Linux (manylinux) wheels for the given CPUs and Pythons, and the exact
pins (==) those wheels' METADATA names of the torch family and NVIDIA's libraries (vLLM's torch, that torch's CUDA
wheels), as a resolve would lock them; and (--lock) every wheel with native code that real resolves of typical
intents locked — their dependencies too. `--check`: each row's file is still on the index with that sha256, and a
sample of rows read again gives the same facts."""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from tritonlock.lock.index import IndexClient, IndexFile
from tritonlock.models import NativeFacts

# The packages users bring most that carry native code (PyPI's names); a pure-Python one (sglang, flashinfer-python
# in some releases) simply has no wheel to read. The torch family and NVIDIA's libraries come in through the pins.
PACKAGES = ("vllm", "sgl-kernel", "xformers", "flashinfer-python", "flashinfer-cubin", "bitsandbytes", "torchao",
            "lmcache", "nixl", "nixl-cu12", "nixl-cu13", "cupy-cuda12x", "cupy-cuda13x", "torch", "torchvision",
            "torchaudio", "triton", "xgrammar", "torch-memory-saver", "llguidance", "outlines-core", "onnxruntime-gpu")
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
CPUS = ("x86_64", "aarch64")
RELEASES = 3
# Where the count differs, unless --releases names one for all. Fewer of nixl's: each wheel bundles about 190 shared
# objects (UCX, abseil, its plugins), so three releases of the three take 8 MB alone; a closure takes them as a
# dependency (lmcache's), at their newest release. More of the packages whose older releases a first resolve reads,
# measured on the cold bench (bench/packages_search_bench.py --cold): every lmcache release (the search reads them all
# to find the ones that load beside each torch line: vllm 0.19 takes lmcache 0.4.4, eleven releases back; 244 kB),
# sgl-kernel's (a V100 reads them all before its conflict), bitsandbytes' and onnxruntime-gpu's back through the
# builds older drivers run (onnxruntime-gpu 1.26.0, the newest whose CUDA provider an R550 runs, is the seventh) — on a
# first resolve each was 10 to 50 s of reading those wheels.
RELEASES_OF = {"nixl": 1, "nixl-cu12": 1, "nixl-cu13": 1, "lmcache": 40, "sgl-kernel": 8, "bitsandbytes": 8,
               "onnxruntime-gpu": 7}


@dataclass(frozen=True)
class Chosen:
    """One wheel to read: its package (the file it goes in), the index's file, and whether only what it brings is
    read (a provider's: the torch family, NVIDIA's libraries — as a resolve reads them)."""

    package: str
    file: IndexFile
    names_only: bool


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _fits(filename: str, pythons: Iterable[str], cpus: Iterable[str]) -> bool:
    """A Linux wheel (manylinux) for one of the CPUs that installs on one of the Pythons (its own cpXY, abi3 from an
    older or equal one, or py3)."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        _, _, _, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return False
    minors = {int(p.split(".")[1]) for p in pythons}
    for t in tags:
        if not t.platform.startswith("manylinux") or not any(t.platform.endswith("_" + c) for c in cpus):
            continue
        m = re.fullmatch(r"cp3([0-9]+)", t.interpreter)
        if m and ((t.abi == "abi3" and int(m[1]) <= max(minors)) or int(m[1]) in minors):
            return True
        if t.interpreter in ("py3", "py2.py3") or t.interpreter.startswith("py3"):
            return True
    return False


def _release(filename: str) -> str | None:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        return str(parse_wheel_filename(filename)[1])
    except InvalidWheelFilename:
        return None


def choose(client: IndexClient, packages: Iterable[str], *, releases: int | None, pythons: Iterable[str],
           cpus: Iterable[str], say: Callable[[str], None], follow: int = 2) -> list[Chosen]:
    """The wheels to read: each package's newest `releases` final releases that have a wheel that fits (None: its
    count in RELEASES_OF, else RELEASES), then the exact pins of the torch family and NVIDIA's libraries in those
    wheels' METADATA (`follow` levels deep)."""
    from packaging.version import InvalidVersion, Version

    from tritonlock.native.read import may_hold_native_code
    from tritonlock.native.rule import is_provider

    pythons, cpus = tuple(pythons), tuple(cpus)
    out: dict[str, Chosen] = {}
    pages: dict[str, tuple[IndexFile, ...]] = {}

    def page(name: str) -> tuple[IndexFile, ...]:
        if name not in pages:
            pages[name] = client.files(name)
        return pages[name]

    def fitting(name: str, version: str | None) -> list[IndexFile]:
        """The wheels of the release `version` (a pin: "12.8.4.1", or "13.1.1.3.*": the newest release it
        matches), or of every release."""
        files = [f for f in page(name) if f.filename.endswith(".whl") and not f.yanked and f.sha256
                 and may_hold_native_code(f.filename) and _fits(f.filename, pythons, cpus)]
        if version is None:
            return files
        if not version.endswith(".*"):
            return [f for f in files if _release(f.filename) == version]
        matching = {v for f in files if (v := _release(f.filename)) and (v + ".").startswith(version[:-1])}
        newest = max(matching, key=lambda v: Version(v), default=None)
        return [f for f in files if _release(f.filename) == newest]

    todo: list[tuple[str, str | None, int]] = [(_norm(p), None, 0) for p in packages]
    seen: set[tuple[str, str | None]] = set()
    while todo:
        name, pinned, depth = todo.pop(0)
        if (name, pinned) in seen:
            continue
        seen.add((name, pinned))
        files = fitting(name, pinned)
        if pinned is None:
            by: dict[Version, list[IndexFile]] = {}
            for f in files:
                try:
                    v = Version(_release(f.filename) or "")
                except InvalidVersion:
                    continue
                if not v.is_prerelease and not v.is_devrelease:
                    by.setdefault(v, []).append(f)
            count = releases if releases is not None else RELEASES_OF.get(name, RELEASES)
            files = [f for v in sorted(by, reverse=True)[:count] for f in by[v]]
        if not files:
            if pinned is not None and depth <= follow and is_provider(name):
                # a metapackage of the torch family's CUDA (cuda-toolkit[cublas,…]==13.0.3): what its extras pin
                meta = [f for f in page(name) if f.filename.endswith(".whl") and (_release(f.filename) == pinned or (
                    pinned.endswith(".*") and ((_release(f.filename) or "") + ".").startswith(pinned[:-1])))][-1:]
                for pin in _pins(client, meta, extras=True):  # (a hop through a metapackage is no level)
                    if is_provider(pin[0]):
                        todo.append((pin[0], pin[1], depth))
                continue
            say(f"{name}{'==' + pinned if pinned else ''}: no Linux wheel with native code for "
                f"{', '.join(cpus)} and Python {', '.join(pythons)}")
            continue
        provider = is_provider(name)
        for f in files:
            out.setdefault(f.sha256 or f.filename, Chosen(package=name, file=f, names_only=provider))
        if depth >= follow:
            continue
        for pin in _pins(client, files):
            if is_provider(pin[0]) or pin[0] in {_norm(p) for p in packages}:
                todo.append((pin[0], pin[1], depth + 1))
    return sorted(out.values(), key=lambda c: (c.package, c.file.filename))


def locked(paths: Iterable[Path]) -> list[Chosen]:
    """The wheels the locks at `paths` hold facts of ([[native]], read or unread): every wheel a real resolve of
    their intents read, with the file's address and size from its closure (what a new machine reads first for the
    same intent, its packages' dependencies too)."""
    from tritonlock.lock.lockfile import read_lock
    from tritonlock.native.rule import is_provider

    out: dict[str, Chosen] = {}
    for path in paths:
        lock = read_lock(path)
        shas = {f.sha256 for f in lock.native}
        for t in lock.targets:
            for p in t.packages:
                for w in p.wheels:
                    if w.sha256 in shas and w.sha256 not in out:
                        out[w.sha256] = Chosen(package=_norm(p.name), names_only=is_provider(p.name),
                                               file=IndexFile(filename=w.name, url=w.url, sha256=w.sha256,
                                                              size=w.size))
    return sorted(out.values(), key=lambda c: (c.package, c.file.filename))


def _pins(client: IndexClient, files: list[IndexFile], *, extras: bool = False) -> set[tuple[str, str]]:
    """The exact pins (name, version) in these wheels' METADATA (the PEP 658 file, else the member read by ranges;
    one wheel per release and CPU is enough), those of extras only with `extras`."""
    from tritonlock.native.remotezip import wheel_metadata

    out: set[tuple[str, str]] = set()
    by_release: dict[tuple[str | None, bool], IndexFile] = {}
    for f in files:
        by_release.setdefault((_release(f.filename), "aarch64" in f.filename), f)
    for f in by_release.values():
        try:
            meta = wheel_metadata(client, f, deep=True)
        except Exception:  # noqa: BLE001 — no pins from it: the wheel itself is still read
            meta = None
        for line in (meta or "").splitlines():
            m = re.match(r"Requires-Dist:\s*([A-Za-z0-9._-]+)\s*(?:\[[^\]]*\])?\s*\(?\s*==\s*"
                         r"([A-Za-z0-9.+!_-]+(?:\.\*)?)\s*\)?\s*(;.*)?$", line)
            if m and (extras or "extra" not in (m[3] or "")):
                out.add((_norm(m[1]), m[2]))
    return out


def read_all(chosen: list[Chosen], session: object, *, kept: dict[str, NativeFacts], reader: str,
             say: Callable[[str], None], workers: int = 3) -> tuple[list[tuple[Chosen, NativeFacts]], list[str]]:
    """Each chosen wheel's facts: kept from a trusted file where there (same sha256), else read from the index. The
    facts' `source` names the wheel by its file name and sha256 (no index address). ([(chosen, facts)], failures)."""
    from tritonlock.native.read import cached, keep, read_remote

    done: list[tuple[Chosen, NativeFacts]] = []
    failed: list[str] = []
    lock = threading.Lock()
    # (a row read by file names only serves no wheel now chosen to be read whole: cupy-cuda12x, once taken as a
    # library the others need, is judged as any package since)
    usable = {c.file.sha256 for c in chosen if c.file.sha256 in kept and not (kept[c.file.sha256].names_only
                                                                             and not c.names_only)}
    todo = [c for c in chosen if c.file.sha256 not in usable]
    for c in chosen:
        if c.file.sha256 in usable:
            done.append((c, kept[c.file.sha256]))
    say(f"{len(chosen)} wheels chosen: {len(chosen) - len(todo)} already in compat/native (reader {reader}), "
        f"{len(todo)} to read ({sum(c.file.size or 0 for c in todo) / 1e9:.1f} GB on the index)")

    def one(c: Chosen) -> None:
        f = c.file
        try:  # (kept in the user's fact cache as a resolve keeps a read: a run stopped, or over budget, costs nothing)
            facts = cached(f.sha256 or "", gpu=True, names_only=c.names_only) or read_remote(
                f.url, f.size, f.sha256 or "", f.filename, session=session, gpu=True, names_only=c.names_only)
            if facts.problem:
                raise RuntimeError(facts.problem)
            keep(facts)
        except Exception as err:  # noqa: BLE001 — a wheel that cannot be read is not shipped, and said
            with lock:
                failed.append(f"{f.filename}: {str(err).splitlines()[0][:300] if str(err) else type(err).__name__}")
                say(f"  not read: {failed[-1]}")
            return
        facts = replace(facts, source=f"the wheel {f.filename}, sha256 {f.sha256} (its "
                                      f"{'file names' if c.names_only else 'ELF files'}, read by tritonlock compat "
                                      f"native, reader {reader})")
        with lock:
            done.append((c, facts))
            say(f"  read {f.filename} ({len(done)}/{len(chosen)})")

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, todo))
    return done, failed


def existing(folder: Path, reader: str) -> tuple[dict[str, NativeFacts], list[str]]:
    """The rows of the files in `folder` written by this reader version with this code's fields, by sha256; and what
    was not used (files of another version, rows that do not rebuild)."""
    from tritonlock._files import read_text
    from tritonlock.native.shipped import loads, rebuild, trusted

    out: dict[str, NativeFacts] = {}
    notes: list[str] = []
    for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
        try:
            meta, rows = loads(read_text(path))
        except (OSError, ValueError) as err:
            notes.append(f"{path.name}: not read ({err})")
            continue
        why = trusted(meta, reader)
        if why is not None:
            notes.append(f"{path.name}: {why}: its wheels are read again")
            continue
        for row in rows.values():
            try:
                f = rebuild(NativeFacts, row)
            except ValueError as err:
                notes.append(f"{path.name}: a row not used ({err})")
                continue
            out[f.sha256] = f
    return out, notes


def write(folder: Path, done: list[tuple[Chosen, NativeFacts]], reader: str, budget: int) -> tuple[list[str], int]:
    """One file per package (the old ones replaced; a package with nothing left loses its file): the files written
    and their size in all. Refused (ValueError) past `budget` bytes, nothing written."""
    from tritonlock._files import write_atomic
    from tritonlock.native.shipped import dumps

    by: dict[str, list[NativeFacts]] = {}
    for c, f in done:
        by.setdefault(c.package, []).append(f)
    texts = {f"{name}.toml": dumps(rows, name, reader) for name, rows in sorted(by.items())}
    total = sum(len(t.encode()) for t in texts.values())
    if total > budget:
        largest = sorted(texts, key=lambda n: -len(texts[n].encode()))[:8]
        raise ValueError(f"the facts take {total} bytes, more than the {budget} compat/native may hold (the largest: "
                         + ", ".join(f"{n} {len(texts[n].encode())}" for n in largest) + ") — choose fewer releases "
                         "or packages (--releases, --packages), or raise the budget in tritonlock/native/shipped.py "
                         "with a reason")
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.toml"):
        if old.name not in texts:
            old.unlink()
    for name, text in texts.items():
        write_atomic(folder / name, text, what="compat native")
    return sorted(texts), total


def check_rows(client: IndexClient, session: object, kept: dict[str, NativeFacts], *, sample: int,
               say: Callable[[str], None]) -> list[str]:
    """What disagrees: a row whose file the index does not list with that sha256, or (for `sample` rows) whose
    facts read again differ from the row's."""
    from tritonlock.native.read import read_remote

    bad: list[str] = []
    by_name: dict[str, list[NativeFacts]] = {}
    for f in kept.values():
        by_name.setdefault(_norm(f.filename.split("-")[0]), []).append(f)
    listed: dict[str, IndexFile] = {}
    for name in sorted(by_name):
        listed.update({f.filename: f for f in client.files(name)})
    for f in sorted(kept.values(), key=lambda f: f.filename):
        on = listed.get(f.filename)
        if on is None or (on.sha256 or "").lower() != f.sha256:
            bad.append(f"{f.filename}: the index lists it {'with sha256 ' + str(on.sha256) if on else 'not at all'}, "
                       f"the row has {f.sha256}")
    for f in sorted(kept.values(), key=lambda f: f.filename)[:sample]:
        on = listed.get(f.filename)
        if on is None:
            continue
        again = read_remote(on.url, on.size, f.sha256, f.filename, session=session, gpu=True, names_only=f.names_only)
        if (again.members, again.provides, again.built_for_torch) != (f.members, f.provides, f.built_for_torch):
            bad.append(f"{f.filename}: read again, its facts differ from the row's")
        say(f"  read again: {f.filename}")
    return bad


def main(*, index: str | None, packages: tuple[str, ...], releases: int | None, pythons: tuple[str, ...],
         cpus: tuple[str, ...], compat: str | None, check: bool, sample: int, locks: tuple[str, ...] = (),
         say: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> int:
    from tritonlock._data import compat_root
    from tritonlock.lock.index import default_index
    from tritonlock.native.read import READER_VERSION
    from tritonlock.native.remotezip import watched
    from tritonlock.native.shipped import BUDGET, FOLDER

    root = Path(compat) if compat else compat_root()
    if root is None:
        say("no compat/ folder found (give --compat DIR)")
        return 2
    folder = root / FOLDER
    client = IndexClient(index or default_index(), timeout=60)
    session = watched(client.session)
    kept, notes = existing(folder, READER_VERSION)
    for n in notes:
        say(n)
    if check:
        bad = check_rows(client, session, kept, sample=sample, say=say)
        for b in bad:
            say(b)
        say(f"{len(kept)} rows checked against the index, {min(sample, len(kept))} read again: "
            f"{len(bad)} disagree")
        return 1 if bad else 0
    chosen = choose(client, packages, releases=releases, pythons=pythons, cpus=cpus, say=say)
    have = {c.file.sha256 for c in chosen}
    from_locks = [c for c in locked(Path(p) for p in locks) if c.file.sha256 not in have]
    if locks:
        say(f"{len(from_locks)} more wheels from {len(locks)} lock(s)")
    chosen += from_locks
    done, failed = read_all(chosen, session, kept=kept, reader=READER_VERSION, say=say)
    try:
        names, total = write(folder, done, READER_VERSION, BUDGET)
    except ValueError as err:
        say(str(err))
        return 1
    say(f"wrote {len(names)} files in {folder} ({len(done)} wheels, {total} bytes of the {BUDGET} budget)"
        + (f"; {len(failed)} wheels could not be read (not shipped)" if failed else ""))
    return 0
