"""Looking at a venv without starting its interpreter: installed distributions and their integrity (files
against RECORD), a snapshot of its files; the marker files and the no-op check live in `_noop`."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from tritonlock.environment._noop import (MADE, SYNCED, already_synced, dist_infos, drop_synced, fingerprint, place,
                              read_made, read_synced, restore_synced, siblings, site_dirs, site_listing, sync_key, target_files,
                              write_made, write_synced)

__all__ = ["MADE", "SYNCED", "Damage", "already_synced", "dist_infos", "drop_synced", "fingerprint", "place",
           "invalid_dist_infos", "normalize", "read_dists", "read_dists_one", "read_made", "read_synced",
           "restore_synced", "siblings", "site_dirs", "site_listing", "snapshot", "sync_key", "target_files", "valid_name",
           "venv_config", "venv_damage", "venv_dists", "venv_python", "venv_python_minor", "venv_ssp", "write_made",
           "write_synced"]

# PEP 508 names: what may be handed to an installer as a distribution name (never "-r", "--all", …).
_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")


def normalize(name: str) -> str:
    """PEP 503 normalized name (packaging's canonicalize_name, without importing packaging)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def valid_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _meta(dist_info: Path) -> tuple[str, str] | None:
    """(Name, Version) from a .dist-info's METADATA headers."""
    name = version = None
    try:
        with (dist_info / "METADATA").open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("Name:"):
                    name = line[5:].strip()
                elif line.startswith("Version:"):
                    version = line[8:].strip()
                if (name and version) or line in ("\n", "\r\n"):
                    break
    except OSError:
        return None
    return (name, version) if name and version else None


def read_dists_one(dist_info: Path) -> tuple[str, str] | None:
    """(Name, Version) of one .dist-info, or None when its METADATA is missing or incomplete."""
    return _meta(dist_info)


def read_dists(site: Path) -> dict[str, str]:
    """normalized name → version from *.dist-info directories (cheap: no interpreter is started)."""
    out: dict[str, str] = {}
    for d in dist_infos(site):
        nv = _meta(d)
        if nv:
            out[normalize(nv[0])] = nv[1]
    return out


def invalid_dist_infos(venv: Path) -> list[Path]:
    """.dist-info directories whose METADATA Name is not a valid distribution name (never handed to an installer)."""
    return [d for site in site_dirs(venv) for d in dist_infos(site)
            if (nv := _meta(d)) is not None and not valid_name(nv[0])]


def venv_dists(venv: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for site in site_dirs(venv):
        out.update(read_dists(site))
    return out


def venv_config(venv: Path) -> dict[str, str]:
    cfg: dict[str, str] = {}
    try:
        for line in (venv / "pyvenv.cfg").read_text(encoding="utf-8").splitlines():
            k, sep, v = line.partition("=")
            if sep:
                cfg[k.strip().lower()] = v.strip()
    except OSError:
        pass
    return cfg


def venv_ssp(venv: Path) -> bool:
    """Whether the venv sees its base interpreter's packages (include-system-site-packages)."""
    return venv_config(venv).get("include-system-site-packages", "false").lower() == "true"


def venv_python_minor(venv: Path) -> str | None:
    cfg = venv_config(venv)
    ver = cfg.get("version_info") or cfg.get("version")
    if ver:
        return ".".join(ver.split(".")[:2])
    sites = site_dirs(venv)
    m = re.search(r"python(3\.\d+)", str(sites[0])) if sites else None
    return m.group(1) if m else None


# ---------------------------------------------------------------- integrity


@dataclass(frozen=True, kw_only=True, slots=True)
class Damage:
    """A distribution whose files are not what its RECORD lists (a killed install, a deleted file)."""

    name: str  # normalized
    version: str | None
    dist_info: str  # path of the .dist-info directory
    problem: str  # plain words: "RECORD is missing", "3 of 812 files are missing (…)", …
    kind: str = "files"  # "files" | "modified" (sizes only) | "record" | "metadata" | "twice" | "stray"
    strays: tuple[str, ...] = ()  # kind "stray": the files or folders no distribution owns that shadow its modules


def _record_problem(site: Path, dist_info: Path) -> str | None:
    """What is wrong with one installed distribution's files, judged by its RECORD (paths and sizes)."""
    import csv

    try:
        text = (dist_info / "RECORD").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "its RECORD is missing (an install or uninstall stopped half-way)"
    except OSError as err:
        return f"its RECORD cannot be read ({err.strerror})"
    missing: list[str] = []
    wrong: list[str] = []
    linked: list[str] = []  # of `wrong`: hard links, whose bytes another name (uv's cache, another venv) shares
    total = 0
    try:
        rows = record_rows(text)
    except csv.Error as err:  # a line past csv's field limit: not a RECORD an installer wrote
        return f"its RECORD cannot be read ({err})"
    torn = torn_record(text, rows)
    if torn:
        return f"its RECORD is torn ({torn}: a kill while it was written?)"
    base = str(site)
    join, stat, digits = os.path.join, os.stat, _DIGITS.fullmatch
    for row in rows:
        if not row or not row[0]:
            continue
        rel, size = row[0], (row[2] if len(row) > 2 else "")
        if not size and not (len(row) > 1 and row[1]):
            continue  # RECORD itself and byte-code: listed without hash or size, may come and go
        total += 1
        try:
            st = stat(join(base, rel))
        except (OSError, ValueError):  # ValueError: a path too odd to stat (a NUL in it) is not there either
            missing.append(rel)
            continue
        if digits(size) and st.st_size != int(size):  # ASCII digits ("²".isdigit() is True)
            wrong.append(rel)
            if st.st_nlink > 1:
                linked.append(rel)
    if not total:
        return "its RECORD lists no files (it was cut short)"
    from tritonlock._term import printable

    def some(paths: list[str]) -> str:  # paths from a file: shown printable
        return ", ".join(printable(x, 120) for x in paths[:3]) + (", …" if len(paths) > 3 else "")

    parts = []
    if missing:
        parts.append(f"{len(missing)} of {total} files are missing ({some(missing)})")
    if wrong:
        parts.append(f"{len(wrong)} files have another size than RECORD says ({some(wrong)})")
    if linked:
        one = len(linked) == 1
        parts.append(f"{'it is a hard link' if len(wrong) == 1 else f'{len(linked)} of them are hard links'} to "
                     f"{'a file' if one else 'files'} outside this venv — {HARDLINK_CAUSE}")
    return "; ".join(parts) or None


# Why a hard-linked file of a venv changed (`_record_problem`, doctor's finding): the real cause, not a killed install.
HARDLINK_CAUSE = ("uv's cache and every venv installed from it by hard link (UV_LINK_MODE=hardlink, or a venv made "
                  "by plain uv) share those bytes, so an edit made through another of those names changed them here")


_HASH = re.compile(r"[A-Za-z0-9_]+=[A-Za-z0-9_=-]+")
_DIGITS = re.compile(r"[0-9]{1,20}")


def _good_row(row: list[str]) -> bool:
    """A RECORD row as installers write it (PEP 376 / the wheel spec): path, hash or nothing, size or nothing."""
    return (len(row) == 3 and bool(row[0]) and (not row[1] or _HASH.fullmatch(row[1]) is not None)
            and (not row[2] or _DIGITS.fullmatch(row[2]) is not None))


def torn_record(text: str, rows: list[list[str]]) -> str | None:
    """How a RECORD is cut short or garbled (a partial last line, a row that is not path,hash,size), or None."""
    if text and not text.endswith("\n"):
        return "its last line is cut short"
    bad = [i for i, row in enumerate(rows, 1) if row and not _good_row(row)]
    if bad:
        return f"line {bad[0]} is not path,hash,size" + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else "")
    return None


def record_rows(text: str) -> list[list[str]]:
    """A RECORD's rows, one per line: a stray quote (a torn or garbled line) never swallows the lines after it."""
    import csv

    lines = text.replace("\0", "").splitlines()
    if '"' not in text:
        return list(csv.reader(lines))
    return [next(csv.reader([line]), []) for line in lines]


def mend_record(dist_info: Path) -> None:
    """Rewrite a torn RECORD as an installer would have: its well-formed rows, the paths that can still be read
    from the others, and every file in the .dist-info directory — so that an installer can uninstall the package
    through it before installing it again (uv refuses a RECORD it cannot parse)."""
    import csv
    import io

    record = dist_info / "RECORD"
    site = dist_info.parent
    try:
        text = record.read_text(encoding="utf-8", errors="replace")
        rows = record_rows(text)
    except (OSError, csv.Error):
        text, rows = "", []
    keep: dict[str, list[str]] = {}
    for i, row in enumerate(rows):
        cut = i == len(rows) - 1 and not text.endswith("\n")
        if row and _good_row(row) and not cut:
            keep.setdefault(row[0], row)
            continue
        line = text.splitlines()[i] if i < len(text.splitlines()) else ""
        path = line.split(",", 1)[0]
        if path and '"' not in path and (site / path).is_file():  # the path survived; its hash and size did not
            keep.setdefault(path, [path, "", ""])
    for f in sorted(dist_info.rglob("*")):
        rel = f"{dist_info.name}/{f.relative_to(dist_info).as_posix()}"
        if f.is_file() and rel not in keep:
            keep[rel] = [rel, "", ""]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(keep.values())
    from tritonlock._files import write_atomic

    write_atomic(record, buf.getvalue(), what="sync")


def venv_damage(venv: Path, only: set[str] | None = None, names: set[str] | None = None,
                base_sites: list[str] | tuple[str, ...] = ()) -> list[Damage]:
    """Distributions in the venv whose files do not match their RECORD, or that are installed twice.

    `only` limits the check to these .dist-info directory names (sync checks those whose RECORD changed since
    its last completed run); doctor checks them all. `names` limits it to these (normalized) distributions.
    `base_sites`: the preinstalled site directories a --system-site-packages venv sees (a file of the venv's own
    that takes the import name of a preinstalled package shadows it too).
    """
    out: list[Damage] = []
    for site in site_dirs(venv):
        seen: dict[str, list[tuple[Path, str | None]]] = {}
        for d in dist_infos(site):
            nv = _meta(d)
            name = normalize(nv[0]) if nv else normalize(d.name[: -len(".dist-info")].split("-")[0])
            seen.setdefault(name, []).append((d, nv[1] if nv else None))
            if (only is not None and d.name not in only) or (names is not None and name not in names):
                continue
            problem = "its METADATA is missing or unreadable" if nv is None else _record_problem(site, d)
            if problem:
                from tritonlock._term import printable  # (a name or version from the file, shown: no raw escapes)

                # sizes that differ with every file present: modified after install (an image that swaps in the
                # system CA bundle does this on purpose) or truncated by a kill; sync repairs both alike
                kind = ("metadata" if nv is None else "record" if problem.startswith("its RECORD")
                        else "files" if "missing" in problem else "modified")
                out.append(Damage(name=printable(name, 200), version=printable(nv[1], 200) if nv else None,
                                  dist_info=str(d), problem=problem, kind=kind))
        for name, copies in seen.items():
            if names is not None and name not in names:
                continue
            if len(copies) > 1 and not any(x.name == name for x in out):
                from tritonlock._term import printable

                vs = " and ".join(v or "?" for _, v in copies)
                last = copies[-1][1]
                out.append(Damage(name=printable(name, 200), version=printable(last, 200) if last else None,
                                  dist_info=str(copies[-1][0]),
                                  problem=printable(f"it is installed twice ({vs}: "
                                                    f"{', '.join(p.name for p, _ in copies)})", 600),
                                  kind="twice"))
    out += [d for d in stray_shadows(venv, base_sites) if (names is None or d.name in names) and only is None]
    return out


# How a file or folder in a directory of importable code is imported: a module name, then an extension Python
# imports as code (source, byte-code, an extension module with any ABI tag).
_MODULE_FILE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\.[A-Za-z0-9_-]+)*\.(?:py|pyc|pyw|so|pyd)")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CODE = (".py", ".pyc", ".pyw", ".so", ".pyd")


def _module_of(name: str, is_dir: bool) -> str | None:
    if name == "__pycache__" or name.endswith((".dist-info", ".egg-info", ".data")):
        return None
    if is_dir:
        return name if _IDENT.fullmatch(name) else None
    m = _MODULE_FILE.fullmatch(name)
    return m[1] if m else None


def stray_shadows(venv: Path, base_sites: list[str] | tuple[str, ...] = ()) -> list[Damage]:
    """Files and folders that no installed distribution's RECORD lists, sitting beside installed code under the
    import name of an installed module or package (a `triton.py` dropped next to triton/, a `torch/nn.py` beside
    torch/nn/, a typing_extensions/ folder beside typing_extensions.py): one Damage per owner, naming them. Whether
    Python's import order lets one win today or not, none of them was installed, and each can take the name.
    `base_sites` (a --system-site-packages venv's preinstalled directories): a top-level file or folder of the
    venv's own that takes the import name of a preinstalled package wins over it on import — Damage of kind
    "stray-base" (nothing to reinstall: the preinstalled copy is intact)."""
    import csv

    out: dict[tuple[str, str], list[str]] = {}
    versions: dict[str, tuple[str, str]] = {}
    unowned: dict[str, list[tuple[str, str]]] = {}  # top-level module name → (site, entry) no RECORD there lists
    for site in site_dirs(venv):
        real = os.path.realpath(site)
        files: dict[str, str] = {}  # normalized path relative to the site → the normalized name of its owner
        for d in dist_infos(site):
            nv = _meta(d)
            if nv is None:
                continue
            owner = normalize(nv[0])
            versions[owner] = (nv[1], str(d))
            try:
                rows = record_rows((d / "RECORD").read_text(encoding="utf-8", errors="replace"))
            except (OSError, csv.Error):
                continue
            for row in rows:
                rel = row[0] if row else ""
                if not rel or "__pycache__" in rel:
                    continue
                if "./" in rel or "//" in rel or "\\" in rel or rel.startswith("/"):  # (rare: the cheap path first)
                    rel = os.path.normpath(rel).replace(os.sep, "/")
                if not rel.startswith("../"):
                    files.setdefault(rel, owner)
        dirs: set[str] = set()  # every folder holding an owned file
        names: dict[str, dict[str, str]] = {}  # folder → module name owned there → its owner
        for rel, owner in files.items():
            parent, _, leaf = rel.rpartition("/")
            if leaf.endswith(_CODE) and (mod := _module_of(leaf, False)):
                names.setdefault(parent, {}).setdefault(mod, owner)
            while parent and parent not in dirs:
                dirs.add(parent)
                up, _, leaf = parent.rpartition("/")
                if _IDENT.fullmatch(leaf):
                    names.setdefault(up, {}).setdefault(leaf, owner)
                parent = up
        if base_sites:
            names.setdefault("", {})  # the top level is looked at even where nothing of the venv's own is installed
        for folder, owned in names.items():
            try:
                entries = list(os.scandir(os.path.join(real, folder)))
            except OSError:
                continue
            for e in entries:
                rel = f"{folder}/{e.name}" if folder else e.name
                try:
                    is_dir = e.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if rel in files or (is_dir and rel in dirs):
                    continue
                mod = _module_of(e.name, is_dir)
                if mod is not None and mod in owned:
                    out.setdefault((owned[mod], real), []).append(rel)
                elif mod is not None and not folder and base_sites:
                    unowned.setdefault(mod, []).append((real, rel))
    from tritonlock._term import printable

    damage = []
    if unowned:
        for mod, owner, ver, info, base in _base_owners(base_sites, set(unowned)):
            paths = [os.path.join(real, rel) for real, rel in sorted(unowned[mod])]
            shown = ", ".join(printable(x, 300) for x in paths[:3]) + (", …" if len(paths) > 3 else "")
            one = len(paths) == 1
            damage.append(Damage(name=printable(owner, 200), version=printable(ver, 200), dist_info=info,
                                 kind="stray-base", strays=tuple(paths),
                                 problem=(f"{shown} {'is' if one else 'are'} no installed distribution's "
                                          f"file{'' if one else 's'} and {'takes' if one else 'take'} the import name "
                                          f"{mod!r} of the preinstalled {printable(owner, 200)} {printable(ver, 200)} "
                                          f"(in {printable(base, 300)}), which the venv sees through "
                                          f"--system-site-packages: {'it shadows' if one else 'they shadow'} the "
                                          "preinstalled one")))
    for (owner, real), strays in sorted(out.items()):
        version, info = versions.get(owner, (None, ""))
        paths = [os.path.join(real, x) for x in sorted(strays)]
        shown = ", ".join(printable(x, 300) for x in paths[:3]) + (", …" if len(paths) > 3 else "")
        one = len(paths) == 1
        damage.append(Damage(name=printable(owner, 200), version=printable(version, 200) if version else None,
                             dist_info=info, kind="stray", strays=tuple(paths),
                             problem=(f"{shown} {'is' if one else 'are'} no installed distribution's "
                                      f"file{'' if one else 's'} and {'takes' if one else 'take'} the import name of "
                                      f"{owner}'s own {'module' if one else 'modules'} beside "
                                      f"{'it' if one else 'them'} (a stray copy that can shadow the locked one)")))
    return damage


def _base_owners(base_sites: list[str] | tuple[str, ...], wanted: set[str]) -> list[tuple[str, str, str, str, str]]:
    """(module, owner, version, .dist-info, site) for each wanted top-level import name that a distribution in
    these directories owns — the first directory that has it, as on import. Read only when a venv holds a top-level
    entry that no RECORD of its own lists (rare): top_level.txt, else the RECORD's first path components."""
    import csv

    out: list[tuple[str, str, str, str, str]] = []
    left = set(wanted)
    for base in base_sites:
        if not left:
            break
        for d in dist_infos(Path(base)):
            nv = _meta(d)
            if nv is None:
                continue
            try:
                tops = (d / "top_level.txt").read_text(encoding="utf-8", errors="replace").split()
            except OSError:
                try:
                    rows = record_rows((d / "RECORD").read_text(encoding="utf-8", errors="replace"))
                except (OSError, csv.Error):
                    continue
                tops = []
                for row in rows:
                    head, sep, _ = (row[0] if row else "").partition("/")
                    mod = _module_of(head, bool(sep))
                    if mod:
                        tops.append(mod)
            for mod in sorted(left & set(tops)):
                out.append((mod, normalize(nv[0]), nv[1], str(d), base))
                left.discard(mod)
    return out


def snapshot(venv: Path) -> dict[str, tuple[int, int]]:
    """Every file under the venv (byte-code caches aside) → (size, mtime_ns): what "unchanged" is checked against."""
    out: dict[str, tuple[int, int]] = {}
    todo = [str(venv)]
    cut = len(str(venv)) + 1
    while todo:
        try:
            it = os.scandir(todo.pop())
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    if e.is_dir(follow_symlinks=False):
                        if e.name != "__pycache__":
                            todo.append(e.path)
                        continue
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                out[e.path[cut:]] = (st.st_size, st.st_mtime_ns)
    return out


# ---------------------------------------------------------------- marker files


# ---------------------------------------------------------------- the no-op fast path


