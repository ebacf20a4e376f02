"""Changing a venv through uv: in place with a checked account of any failure, or built beside the old one
and swapped in when complete; and undoing what a killed sync left beside a venv."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tritonlock import _subprocess
from tritonlock.environment import _interp
from tritonlock._files import open_lock_file, write_atomic
from tritonlock.environment import _venv
from tritonlock.environment._plan import Plan, plan, with_download
from tritonlock.environment._venv import Damage, siblings, venv_python, venv_python_minor
from tritonlock.lock.builds import TORCH
from tritonlock.errors import SyncError, SyncInterrupted

if TYPE_CHECKING:
    from tritonlock.models import Lock, LockedPackage, LockedTarget


@contextmanager
def venv_lock(venv: Path) -> Iterator[None]:
    """One sync at a time per venv (a second waits, then sees the first one's result). The lock file lives in
    tritonlock's cache, keyed by the venv's path: beside the venv it was a stray `..venv.tritonlock-lock` in every
    project (`git status` showed it), and inside it would go away with a venv that is rebuilt and swapped."""
    import hashlib

    where = (venv.parent.resolve() / venv.name).as_posix()
    from tritonlock._files import user_cache

    cache = Path(user_cache("venv-locks"))
    path = cache / (hashlib.sha256(where.encode()).hexdigest()[:32] + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)  # tritonlock's own cache directory
    with os.fdopen(open_lock_file(path), "r+") as fh:  # never through a link planted under its name
        if os.name != "nt":
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if os.name != "nt":
                import fcntl

                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def pylock_for(lock: Lock, target: LockedTarget, names: set[str], wheelhouse: Path | None) -> str:
    """A PEP 751 document holding only the packages to install (uv verifies every hash in it)."""
    from tritonlock.lock.lockfile import toml_value, wheel_table

    lines = ['lock-version = "1.0"', f'created-by = {toml_value(lock.created_by)}', ""]
    missing: list[LockedPackage] = []
    odd: list[str] = []

    def there(local: Path) -> bool:
        """A wheelhouse file is there only as a regular file (a link to one is read through): a FIFO, socket,
        device or directory under a wheel's name would hang or break uv, so it is named instead."""
        import stat

        try:
            st = os.stat(local)
        except FileNotFoundError:
            if os.path.islink(local):
                odd.append(f"{local} is a symbolic link that leads nowhere")
            return False
        except OSError as err:
            odd.append(f"{local} cannot be read ({err.strerror or err})")
            return False
        if not stat.S_ISREG(st.st_mode):
            from tritonlock._files import not_a_file

            odd.append(f"{local} {not_a_file(local) or 'is not a regular file'}")
            return False
        return True

    for p in target.packages:
        if p.name not in names:
            continue
        lines += ["[[packages]]", f"name = {toml_value(p.name)}", f"version = {toml_value(p.version)}"]
        if p.index:
            lines.append(f"index = {toml_value(p.index)}")
        wheels = []
        for w in p.wheels:
            url = w.url
            if wheelhouse is not None:
                local = wheelhouse / w.name
                if not there(local):
                    continue
                url = local.resolve().as_uri()
            wheels.append({**wheel_table(w), "url": url})
        # a source build (no wheel for the target) installs from its sdist, which a wheelhouse may hold too
        local_sdist = wheelhouse / p.sdist.name if wheelhouse is not None and p.sdist and not p.wheels else None
        sdist_there = local_sdist is not None and there(local_sdist)
        if wheelhouse is not None and not wheels and not sdist_there:
            missing.append(p)
        lines.append("wheels = [" + ", ".join(toml_value(w) for w in wheels) + "]")
        if p.sdist and wheelhouse is None:
            lines.append(f"sdist = {toml_value(wheel_table(p.sdist))}")
        elif p.sdist and local_sdist is not None and sdist_there:
            lines.append(f"sdist = {toml_value({**wheel_table(p.sdist), 'url': local_sdist.resolve().as_uri()})}")
        lines.append("")
    if odd:
        raise Failed(f"the wheelhouse {wheelhouse} holds what is not a file under a wheel's name: {'; '.join(odd)}",
                     fix="remove these and put the wheels there (`tritonlock export --format wheelhouse -o DIR` on a "
                         "machine with network fetches them)")
    if missing:
        raise Failed(f"{len(missing)} package(s) to install are not in the wheelhouse {wheelhouse}: "
                      + ", ".join(f"{p.name} {p.version}" for p in missing),
                      fix="add these files (`pip download --no-deps URL` on a networked machine; the lock has "
                          "the URLs): " + ", ".join(p.wheels[0].name if len(p.wheels) == 1 else
                                                    f"one of {' / '.join(w.name for w in p.wheels)}" if p.wheels
                                                    else f"{p.sdist.name if p.sdist else '?'} (built from source)"
                                                    for p in missing))
    return "\n".join(lines) + "\n"


def uv_failure(stderr: str) -> str:
    """uv's own words, trimmed, with a hash mismatch called out by package."""
    import re

    text = stderr.strip()
    m = re.search(r"(?i)(hash|size) mismatch for `([^`=]+)(==[^`]*)?`", text)
    if m:
        return (f"{m.group(1).lower()} mismatch for {m.group(2)}: the file the index served is not the one the lock "
                f"pinned (it was replaced on the index, or the lock was edited)\n{text}")
    return text


class Failed(Exception):
    """A step failed; the caller checks the venv and says what state it is in."""

    def __init__(self, detail: str, *, fix: str = "", interrupted: bool = False) -> None:
        super().__init__(detail)
        self.detail, self.fix, self.interrupted = detail, fix, interrupted


def install(p: Plan, lock: Lock, target: LockedTarget, venv: Path, *, offline: bool, wheelhouse: Path | None,
             say: Callable[[str], None], shield: bool = True) -> bool:
    """Install, upgrade and repair through uv with every hash required, then remove what the lock does not list.
    Returns whether Ctrl-C was pressed during the install (which was let finish: `shield`); without `shield`
    (a venv built beside the old one) Ctrl-C stops uv at once and raises KeyboardInterrupt."""
    interrupted = False
    todo = {s.name for s in p.steps if s.action in ("install", "upgrade", "reinstall")}
    py = str(venv_python(venv))
    # Source builds (the lock's build = "source"): checked for their tools before anything changes, and those whose
    # build imports torch installed in a second pass, without build isolation, against the torch the first installed.
    source = [pk for pk in target.packages if pk.name in todo and pk.build == "source"]
    check_build_tools(source, target.selection.backend)
    after = {pk.name for pk in source if TORCH in pk.build_needs}
    passes = [(todo - after, ())] + ([(after, tuple(sorted(after)))] if after else [])
    for names, no_isolation in passes:
        if names and not interrupted:
            interrupted = _uv_install(names, no_isolation, p, lock, target, py, offline=offline,
                                      wheelhouse=wheelhouse, say=say, shield=shield)
    removes = [s.name for s in p.of("remove")]
    if removes:
        say(f"removing {len(removes)} package(s) the lock does not list: {', '.join(removes)}")
        # "--": every name is a name, never an option (they come from the venv's own dist-info files).
        proc = _subprocess.run([_subprocess.uv_bin(), "pip", "uninstall", "--no-config", f"--python={py}", "--",
                                *removes])
        if proc.returncode != 0:
            raise Failed(f"removing {', '.join(removes)}: {proc.stderr.strip()}")
    return interrupted


def check_build_tools(source: list[LockedPackage], backend: str | None = None) -> None:
    """Failed (before anything is installed) when this machine lacks what a source build needs — nvcc of the locked
    torch's CUDA major (`backend`) where that torch is a CUDA build."""
    from tritonlock.lock import builds

    lacking = [(pk, miss) for pk in source if (miss := builds.missing_tools(pk, backend))]
    if not lacking:
        return
    detail = "\n".join(f"{builds.source_line(pk, backend)}; this machine lacks {'; and '.join(miss)}"
                       for pk, miss in lacking)
    nvcc = any(m.startswith("nvcc") for _, miss in lacking for m in miss)
    names = ", ".join(f'"{pk.name}"' for pk, _ in lacking)
    wheels = (f"or lock versions with wheels instead: add no-build = [{names}] to [environment] in triton-env.toml "
              "and run `tritonlock resolve`")
    wrong = builds.nvcc_mismatch(backend) if nvcc and builds.find_nvcc() is not None else None
    if wrong is not None:
        major, _, release = wrong
        have = release.split(".")[0]
        raise Failed(detail, fix=f"install a CUDA {major} toolkit (the locked torch's major: {backend}) and set "
                                 f"CUDA_HOME to it, then run `tritonlock sync` again; or, where this machine's driver "
                                 f"runs CUDA {have}, lock a torch of that nvcc's CUDA: cuda = \"{have}\" in "
                                 f"[environment], then `tritonlock resolve`; {wheels}")
    what = ("the CUDA toolkit (nvcc, of the CUDA version the locked torch was built with) and set CUDA_HOME to it"
            if nvcc else "a C/C++ compiler (e.g. Debian's build-essential)")
    raise Failed(detail, fix=f"install {what}, then run `tritonlock sync` again; {wheels}")


def _uv_install(names: set[str], no_isolation: tuple[str, ...], p: Plan, lock: Lock, target: LockedTarget,
                py: str, *, offline: bool, wheelhouse: Path | None, say: Callable[[str], None],
                shield: bool = True) -> bool:
    """One `uv pip install` of the named packages from a PEP 751 document, every hash required. Returns whether
    Ctrl-C was pressed (and, shielded, let the install finish); unshielded, Ctrl-C stops uv and raises
    KeyboardInterrupt."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tritonlock-sync-") as tmp:
        doc = Path(tmp) / "pylock.toml"  # in a directory of its own, made by mkdtemp (mode 0700)
        write_atomic(doc, pylock_for(lock, target, names, wheelhouse), what="sync")
        args = [_subprocess.uv_bin(), "pip", "install", "--no-config", "--preview-features", "pylock",
                f"--python={py}", "--no-deps", "-r", str(doc)]
        mode = link_mode(Path(py).parent.parent)  # (the venv of the interpreter: bin/python's grandparent)
        if mode is not None:
            args.append(f"--link-mode={mode}")
        for s in p.of("reinstall"):
            if s.name in names:
                args.append(f"--reinstall-package={s.name}")
        args += [f"--no-build-isolation-package={n}" for n in no_isolation]
        if offline:
            args.append("--offline")
        tty = sys.stderr.isatty()
        if no_isolation:
            torch = next((pk.version for pk in target.packages if pk.name == "torch"), "?")
            say(f"building {', '.join(no_isolation)} from source against torch {torch} (no build isolation: the "
                "build imports torch)")
        else:
            say(f"installing {len(names)} package(s)")
        from tritonlock.lock import index

        interrupted = False
        try:  # on a TTY uv draws its own progress bars; elsewhere its output is kept for the error
            for keyring in (False, True):  # as pip: keyring only once an index asked for credentials
                # credentials and pip's TLS settings reach uv through its environment, never its argv
                env = {**index.install_env((pk.index for pk in target.packages if pk.name in names),
                                           keyring=keyring), **({} if tty else {"UV_NO_PROGRESS": "1"})}
                rc, err, stopped = _subprocess.run_shielded(args, env=env, capture=not tty, on_interrupt=say,
                                                            unset=index.UV_UNSET, shield=shield)
                interrupted = interrupted or stopped
                if (rc == 0 or interrupted or not index.asked_for_credentials(err)
                        or not index.network().keyring):
                    break
        except KeyboardInterrupt:
            if not shield:
                raise
            raise Failed("a second Ctrl-C stopped uv", interrupted=True) from None
        swapped = rc != 0 and re.search(r"(?i)(hash|size) mismatch for `", err) is not None
        if rc != 0 and no_isolation and not swapped:  # (a file the index swapped is not a failed build: below)
            built = ", ".join(f"{pk.name} {pk.version}" for pk in target.packages if pk.name in no_isolation)
            raise Failed(f"building {built} from source failed (its build imports torch and ran against the "
                         f"venv's torch, without isolation):\n{uv_failure(index.explain(err)) or f'uv exited with {rc}'}",
                         fix="the build's output above names what it lacks (a header, a compiler, nvcc, a module): "
                             "install that and run `tritonlock sync` again; or lock a version with a wheel instead: "
                             f"add no-build = [{', '.join(chr(34) + n + chr(34) for n in no_isolation)}] to "
                             "[environment] in triton-env.toml and run `tritonlock resolve`")
        if rc != 0:
            raise Failed(uv_failure(index.explain(err)) or f"uv exited with {rc}", fix=offline_fix(offline, wheelhouse))
    return interrupted


# ---------------------------------------------------------------- how the files get into the venv

# uv puts installed files into a venv from its cache by hard link on Linux: every venv synced from one cache then
# shares each file's bytes with the cache and with each other, and a debugging edit in one venv's site-packages
# changes them all (and the cache, so a later install gets the edit too). A venv tritonlock makes owns its files:
# copy-on-write clones where the filesystem makes them (btrfs, XFS, APFS: no more disk, no sharing), else copies.
# Sharing by hard link is the user's choice: UV_LINK_MODE=hardlink (uv's own setting) is honoured as it is.


def link_mode(venv: Path) -> str | None:
    """The --link-mode uv installs the lock into `venv` with: "clone" where the filesystem of uv's cache and the
    venv makes copy-on-write clones, else "copy"; None when the user set UV_LINK_MODE (uv reads it itself)."""
    if os.environ.get("UV_LINK_MODE", "").strip():
        return None
    cache = _uv_cache_dir()
    from tritonlock._files import clones

    return "clone" if cache is not None and clones(cache, venv.absolute()) else "copy"


def _uv_cache_dir() -> Path | None:
    if os.environ.get("UV_CACHE_DIR", "").strip():
        return Path(os.environ["UV_CACHE_DIR"])
    import subprocess

    from tritonlock.errors import TritonlockError

    try:
        proc = _subprocess.run([_subprocess.uv_bin(), "cache", "dir", "--no-config"], timeout=60)
    except (OSError, subprocess.SubprocessError, TritonlockError):  # no answer: copies are always safe
        return None
    out = proc.stdout.strip()
    return Path(out) if proc.returncode == 0 and out else None


def offline_fix(offline: bool, wheelhouse: Path | None) -> str:
    """What to do when an install without network fails: a wheelhouse is filled where there is network; plain
    --offline reads only uv's cache, which a sync with network fills."""
    if wheelhouse is not None:
        return (f"add the missing files to the wheelhouse {wheelhouse} (`tritonlock export --format wheelhouse -o DIR` "
                "on a machine with network fetches them all)")
    if offline:
        return ("--offline installs only from uv's cache, and it lacks these files: run `tritonlock sync` once with "
                "network (that fills the cache), or bring a wheelhouse (`tritonlock export --format wheelhouse -o DIR` "
                "where there is network, then `tritonlock sync --find-links DIR`)")
    return ""


def changes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> str:
    """What differs between two snapshots, by distribution where a .dist-info changed, else by file count."""
    changed = {f for f in set(before) | set(after) if before.get(f) != after.get(f)}

    def dists(files: set[str]) -> set[str]:
        return {part[: -len(".dist-info")] for f in files for part in Path(f).parts[-2:-1]
                if part.endswith(".dist-info")}

    added = dists({f for f in changed if f not in before}) - dists(set(before))
    gone = dists({f for f in changed if f not in after}) - dists(set(after))
    rewritten = dists(changed) - added - gone
    from tritonlock._term import printable  # directory names from the venv: never raw escapes

    parts = [f"{w} {', '.join(printable(d, 200) for d in sorted(ds))}" for w, ds in (
        ("added", added), ("removed", gone), ("changed", rewritten)) if ds]
    return "; ".join(parts + [f"{len(changed)} file(s) differ"])


def apply(p: Plan, lock: Lock, target: LockedTarget, venv: Path, *, offline: bool = False,
          wheelhouse: Path | None = None, say: Callable[[str], None] = lambda s: None,
          damage: tuple[Damage, ...] = ()) -> bool:
    """Update the venv in place. uv fetches and checks every file before it changes the venv; whatever happens,
    the error says what state the venv is in, as checked afterwards against a snapshot of every file in it.
    Returns whether Ctrl-C was pressed (the install was let finish)."""
    before = _venv.snapshot(venv)
    stamp = _venv.drop_synced(venv)  # from here until the end, a kill leaves "check everything" behind
    if stamp is not None:
        before.pop(_venv.SYNCED, None)
    try:
        clear_broken(p, venv, damage)
        return install(p, lock, target, venv, offline=offline, wheelhouse=wheelhouse, say=say)
    except Failed as f:
        after = _venv.snapshot(venv)
        what = "interrupted (Ctrl-C)" if f.interrupted else "sync failed"
        error = SyncInterrupted if f.interrupted else SyncError
        tail = "" if f.interrupted and not f.fix else f":\n{f.detail}" + (f"\n  fix: {f.fix}" if f.fix else "")
        if after == before:
            if stamp is not None:
                _venv.restore_synced(venv, stamp)
            raise error(f"{what}; {venv} is unchanged (checked: the same {len(before)} files, sizes and "
                        f"times){tail}") from None
        raise error(f"{what} part-way; {venv} was partly changed ({changes(before, after)}) — run "
                    f"`tritonlock sync` again: it checks every package's files and repairs what is damaged"
                    f"{tail}") from None


def remove_strays(paths: tuple[str, ...]) -> None:
    """Files and folders no distribution owns that shadow an installed module (Damage.strays): a link is removed
    itself, never what it points at."""
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def clear_broken(p: Plan, venv: Path, damage: tuple[Damage, ...]) -> None:
    """Before the install that replaces them: remove the .dist-info directories an installer cannot uninstall
    (no METADATA), and every copy of a package installed twice, so that exactly one copy results; mend a RECORD
    torn by a kill so that it can be uninstalled through. The package's files are written again by that
    install."""
    todo = {s.name for s in p.steps if s.action in ("install", "upgrade", "reinstall")}
    for d in damage:
        if d.kind == "stray" and (d.name in todo or d.name in {s.name for s in p.of("remove")}):
            remove_strays(d.strays)  # no installer wrote them and none removes them: they go before the reinstall
            continue
        if (d.name in todo or d.name in {s.name for s in p.of("remove")}) and d.kind == "record" and (
                Path(d.dist_info) / "RECORD").is_file():
            _venv.mend_record(Path(d.dist_info))  # torn by a kill: uv cannot uninstall through it as it is
            continue
        if d.name in todo and d.kind in ("metadata", "twice"):
            for site in _venv.site_dirs(venv):
                for info in _venv.dist_infos(site):
                    nv = _venv.read_dists_one(info)
                    name = _venv.normalize(nv[0]) if nv else _venv.normalize(info.name[:-10].rsplit("-", 1)[0])
                    if name == d.name:
                        shutil.rmtree(info, ignore_errors=True)


# ---------------------------------------------------------------- building beside and swapping


def exchange(a: Path, b: Path) -> bool:
    """Swap two directories in one step (Linux renameat2 RENAME_EXCHANGE): never a moment without a venv."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    return int(fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)) == 0


def swap(new: Path, venv: Path) -> None:
    """Put the completed venv `new` in place of `venv`, then delete the old one. A venv that is a symbolic link
    keeps its link: the directory it points at is what is replaced."""
    at = _venv.place(venv)
    if not os.path.lexists(at):
        os.rename(new, at)
        return
    if exchange(new, at):
        _remove(new)  # it now holds the old venv
        return
    old = siblings(venv)[1]
    _remove(old)
    os.rename(at, old)  # a kill between these two renames is undone by the next sync (recover)
    os.rename(new, at)
    _remove(old)


def _remove(path: Path) -> bool:
    """Remove a directory tree, or a link itself (never what it points at); whether nothing is there now."""
    if os.path.islink(path):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError:
            return False
    else:
        shutil.rmtree(path, ignore_errors=True)
    return not os.path.lexists(path)


@contextmanager
def _no_sigint() -> Iterator[None]:
    """Ctrl-C pressed again while a half-built venv is being removed waits until that is done."""
    import signal

    try:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: nothing to hold off
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def recover(venv: Path, say: Callable[[str], None]) -> None:
    """Undo what a killed sync left beside the venv: a half-built replacement, or an old venv mid-swap. Says only
    what it did, as checked."""
    new, old = siblings(venv)
    at = _venv.place(venv)
    if os.path.lexists(old):
        if not os.path.lexists(at):
            os.rename(old, at)
            say(f"put {venv} back: a sync that was replacing it stopped between moving it aside and moving the new "
                "one in")
        elif not _remove(old):
            say(f"warning: could not remove {old}, left by a sync that was stopped — remove it by hand")
    if os.path.lexists(new):
        if _remove(new):
            say(f"removed {new}, left by a sync that was stopped")
        else:
            say(f"warning: could not remove {new}, left by a sync that was stopped — remove it by hand")
    # An older tritonlock rebuilt a venv that is a link by swapping the link itself aside: the link it left under
    # the -new name beside the venv points at the old venv. The link goes; what it points at is not touched.
    stray = venv.parent / f".{venv.name}.tritonlock-new"
    if stray != new and os.path.islink(stray):
        to = os.readlink(stray)
        if _remove(stray):
            say(f"removed {stray}, a link an earlier tritonlock's rebuild left behind (what it points at, {to}, is "
                "left as it is)")


def create(path: Path, python: str, *, system_site_packages: bool, base: str | None) -> list[str]:
    """A relocatable venv at `path` (it is moved into place when complete); returns the preinstalled
    site-packages it sees beyond its own (with --system-site-packages)."""
    from tritonlock import __version__

    # `--opt=value` and an absolute path: a user's --venv or --python that begins with "-" is never an option to uv
    args = [_subprocess.uv_bin(), "venv", "--no-config", "--quiet", "--relocatable", f"--python={base or python}",
            str(path.absolute())]
    if system_site_packages:
        args.append("--system-site-packages")
    proc = _subprocess.run(args, timeout=300)
    if proc.returncode != 0:
        raise Failed(f"could not create a venv with Python {python}: {proc.stderr.strip()}",
                      fix=_create_fix(proc.stderr, path, python, base))
    base_sites: list[str] = []
    if system_site_packages and base:
        chained = _interp.venv_sites(base)
        if chained:
            # The interpreter with the preinstalled stack is itself a venv (NGC images, /opt/*/.venv): a new
            # venv's "system" site is that venv's *base*, so chain its site-packages in explicitly.
            for site in _venv.site_dirs(path):
                write_atomic(site / "_tritonlock_base.pth", "\n".join(chained) + "\n", what="sync")
    if system_site_packages:
        own = {os.path.realpath(s) for s in _venv.site_dirs(path)}
        base_sites = [s for s in _interp.path_sites(str(venv_python(path))) if os.path.realpath(s) not in own]
    _venv.write_made(path, python=python, system_site_packages=system_site_packages, base_python=base,
                     base_sites=base_sites, created_by=f"tritonlock {__version__}")
    return base_sites


def _create_fix(stderr: str, path: Path, python: str, base: str | None) -> str:
    """The next step for a venv uv could not create, by what uv said went wrong: a place that cannot be written
    (a read-only project) is not a missing Python."""
    import re

    where = path.parent.absolute()
    if re.search(r"(?i)permission denied|read-only file system|os error (13|30|1)\b|operation not permitted", stderr):
        return (f"{where} cannot be written here (read-only, or not yours): make it writable, or build the venv "
                "somewhere that is — `tritonlock sync --venv DIR`")
    if re.search(r"(?i)no space left|os error 28|quota", stderr):
        return f"free some space on the file system of {where}, or build the venv elsewhere (`--venv DIR`)"
    if base or re.search(r"(?i)no interpreter|not found|python.*(could not|cannot) be found|no python", stderr):
        return (f"install Python {python} (or allow uv to download one: UV_PYTHON_DOWNLOADS=automatic), or pass "
                "--python PATH")
    return "uv's words above say what went wrong"


def stamp(venv: Path, key: str | None, target: LockedTarget, p: Plan, ssp: bool, base_sites: list[str] | None) -> None:
    """Mark the venv as completely synced (see _venv.SYNCED); `key` None keeps sync off the no-op fast path."""
    if ssp and base_sites is None:
        key = None  # where the preinstalled stack lives is not recorded: no fast path for this venv
    _venv.write_synced(venv, key=key, target=target.name, packages=len(p.steps), system_site_packages=ssp,
                       base_sites=base_sites or [])


def rebuild(venv: Path, why: str | None, python: str, lock: Lock, target: LockedTarget, equivalent: str | None, *,
            system_site_packages: bool, base: str | None, key: str | None, offline: bool, wheelhouse: Path | None,
            say: Callable[[str], None], show_plan: Callable[[Plan], None]) -> Plan:
    """Build the venv beside the old one (`why` says why the old one will not do; None: there is none), install
    everything into it, and swap it in only when complete. On any failure the old venv is left as it was."""
    new = siblings(venv)[0]
    before = _venv.snapshot(venv) if why else None
    if why:
        say(f"rebuilding {venv}: {why}; the new one is built beside it ({new.name}) and replaces it only "
            "when complete")
    else:
        say(f"creating {venv} with Python {python}" + (f" on {base}" if system_site_packages and base else ""))
    try:
        base_sites = create(new, python, system_site_packages=system_site_packages, base=base)
        if base_sites:
            say(f"{venv} also sees the preinstalled packages in {', '.join(base_sites)}")
        system = _interp.dists_in(base_sites) if system_site_packages else None
        own = _venv.venv_dists(new)
        p = plan(target, own, {k: v for k, v in (system or {}).items() if k not in own}, equivalent)
        show_plan(with_download(p, target, python))
        install(p, lock, target, new, offline=offline, wheelhouse=wheelhouse, say=say, shield=False)
        stamp(new, key, target, p, system_site_packages, base_sites)
        swap(new, venv)
    except (Failed, OSError, KeyboardInterrupt) as err:
        with _no_sigint():
            recover(venv, lambda s: None)  # the half-built venv goes; an old one moved aside comes back
        f = (err if isinstance(err, Failed) else Failed("", interrupted=True)
             if isinstance(err, KeyboardInterrupt) else Failed(str(err)))
        what = ("interrupted (Ctrl-C); the venv being built beside was removed" if f.interrupted and why else
                "interrupted (Ctrl-C); the venv being built was removed" if f.interrupted else "sync failed")
        error = SyncInterrupted if f.interrupted else SyncError
        tail = f":\n{f.detail}" + (f"\n  fix: {f.fix}" if f.fix else "") if f.detail or f.fix else ""
        if before is None:
            state = (f"nothing was created ({venv} does not exist)" if not venv.exists()
                     else f"{venv} exists but another program created it meanwhile")
        elif _venv.snapshot(venv) == before:
            state = (f"{venv} is unchanged (checked: still Python {venv_python_minor(venv)}, the same "
                     f"{len(before)} files, sizes and times)")
        else:
            state = f"{venv} changed meanwhile, but not by this sync (another program is using it)"
        raise error(f"{what}; {state}{tail}") from None
    return p
