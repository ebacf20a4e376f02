"""PyTorch's nightly and test channels: the resolver decides as for the nearest release the matrix knows (backend,
Python, driver floor, archs — its reviewed facts), then the build itself is taken from the channel's index: the newest
dated nightly ("2.17.0.dev20261130+cu130") or release candidate there for that backend and Python, with the Triton
its METADATA pins exactly (pytorch-triton on nightlies). The reasons say it is a channel build and whose facts apply."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TypeVar

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from tritonlock.errors import ResolveError
from tritonlock.models import Intent, Selection

CHANNELS = ("release", "nightly", "test")
T = TypeVar("T")


def template(intent: Intent) -> str:
    """The channel's index address with {backend}: [indexes].torch when the intent names one (a mirror of the
    channel), else compat/channels.toml's."""
    if intent.torch_index and intent.torch_index != "default":
        return intent.torch_index
    from tritonlock import _toml
    from tritonlock._data import compat_root
    from tritonlock.errors import MatrixError

    root = compat_root()
    try:
        table = _toml.loads((root / "channels.toml").read_text(encoding="utf-8"))["channels"] if root else {}
    except (OSError, KeyError, ValueError) as err:
        raise MatrixError(f"compat/channels.toml cannot be read ({err}) — reinstall tritonlock") from None
    url = table.get(intent.channel) if isinstance(table, dict) else None
    if not isinstance(url, str):
        raise MatrixError(f"compat/channels.toml names no index for channel {intent.channel!r} — reinstall tritonlock")
    return url


def _nearest_reason(sel: Selection, channel: str) -> str:
    what = "a nightly build of PyTorch's main branch" if channel == "nightly" else "a release candidate"
    return (f"{channel} channel: torch is {what}, not a release; the matrix's rules (the {sel.backend} driver floor, "
            f"GPU archs, Python, glibc) apply by the facts of the nearest release it knows, torch {sel.torch}")


def mark(selections: tuple[Selection, ...], intent: Intent) -> tuple[Selection, ...]:
    """Without the network (resolve --dry-run): the nearest release's decision, the channel's index, and a reason
    saying the build itself is picked from the channel's index when the lock is written."""
    if intent.channel == "release":
        return selections
    url = template(intent)
    out = []
    for s in selections:
        if s.ok and s.backend:
            s = dataclasses.replace(s, index=url.format(backend=s.backend), reasons=s.reasons + (
                _nearest_reason(s, intent.channel) + f"; the {intent.channel} build is picked from "
                f"{url.format(backend=s.backend)} when the lock is written",))
        out.append(s)
    return tuple(out)


def _fits(tag_python: str, abi: str, platform: str, sel: Selection) -> bool:
    t = sel.target
    py = (sel.python or "").replace(".", "")
    if tag_python not in ("py3", f"cp{py}") or abi.endswith("t"):
        return False
    if t.os == "linux":
        return platform.endswith("_" + t.arch) and ("linux" in platform)
    if t.os == "windows":
        return platform.startswith("win")
    return platform.startswith("macosx")


def pick(sel: Selection, intent: Intent, files: Sequence[tuple[str, T]]) -> tuple[Version, T]:
    """The newest channel build of torch for this selection's backend, Python and platform among (filename, file)."""
    best: tuple[Version, T] | None = None
    for name, f in files:
        try:
            _, v, _, tags = parse_wheel_filename(name)
        except InvalidWheelFilename:
            continue
        if (v.local or "") != (sel.backend or ""):
            continue
        if intent.channel == "nightly" and not v.is_devrelease:
            continue
        if not any(_fits(t.interpreter, t.abi, t.platform, sel) for t in tags):
            continue
        if best is None or v > best[0]:
            best = (v, f)
    if best is None:
        raise ResolveError(f"target {sel.target.name!r}: the {intent.channel} index {sel.index} has no torch build for "
                           f"{sel.backend}, Python {sel.python} on {sel.target.os}/{sel.target.arch} — check the "
                           "address ([indexes].torch), or lock the release channel (remove channel)")
    return best


def _triton_pin(meta: str) -> tuple[str, str] | None:
    """(package, exact version) of the Triton a torch wheel's METADATA requires on Linux, if any."""
    for line in meta.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        try:
            r = Requirement(line.split(":", 1)[1].strip())
        except InvalidRequirement:
            continue
        if r.name in ("triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu"):
            spec = next((s for s in r.specifier if s.operator in ("==", "===")), None)
            if spec is not None:
                return r.name, spec.version
    return None


def apply(selections: tuple[Selection, ...], intent: Intent) -> tuple[Selection, ...]:
    """With the network (resolve): each target's torch becomes the channel's newest build for its backend, with the
    Triton that build pins exactly (from its METADATA), and reasons that say so."""
    if intent.channel == "release":
        return selections
    from tritonlock.native.remotezip import wheel_metadata
    from tritonlock.lock.index import IndexClient

    out = []
    for s in mark(selections, intent):
        if not (s.ok and s.backend and s.index):
            out.append(s)
            continue
        client = IndexClient(s.index)
        files = [(f.filename, f) for f in client.files("torch") if f.filename.endswith(".whl") and not f.yanked]
        version, f = pick(s, intent, files)
        meta = wheel_metadata(client, f, deep=True) or ""
        pin = _triton_pin(meta)
        nearest = s.torch
        public = version.public
        m = re.search(r"dev(\d{4})(\d{2})(\d{2})", public)
        dated = f", built {m[1]}-{m[2]}-{m[3]}" if m else ""
        # the release's own picks are replaced, not kept beside the build that replaced them: its torch line, and
        # every line about its Triton where the build pins another one (the matrix's checks are of that Triton)
        released_triton = f"{s.triton_package} {s.triton}" if s.triton_package and s.triton else None
        replaced = pin is not None and (pin[0], pin[1]) != (s.triton_package, s.triton)
        reasons = [r for r in s.reasons if not r.startswith((f"{intent.channel} channel:", f"torch {nearest}:"))
                   and not (replaced and released_triton and r.startswith((released_triton + " ", released_triton + ":")))]
        reasons.append(f"torch {public}: the newest {intent.channel} build for {s.backend} on {s.index}{dated} — "
                       + _nearest_reason(s, intent.channel).split(": ", 1)[1])
        triton_package, triton = s.triton_package, s.triton
        if pin is not None:
            triton_package, triton = pin
            reasons.append(f"{triton_package} {triton}: the exact Triton torch {public} requires (its METADATA)"
                           + (", PyTorch's nightly Triton build" if triton_package == "pytorch-triton" else "")
                           + (f"; the matrix's Triton checks (GPU support, the bundled ptxas and this driver) are of "
                              f"{released_triton} and were not made for it" if replaced and released_triton else ""))
        elif triton_package:
            reasons.append(f"{triton_package} {triton}: torch {public} requires no Triton here; the one of torch "
                           f"{nearest} is kept (for Triton's interpreter)")
        out.append(dataclasses.replace(s, torch=public, triton_package=triton_package, triton=triton,
                                       reasons=tuple(reasons)))
    return tuple(out)


_NEAREST = re.compile(r"apply by the facts of the nearest release it knows, torch (\S+)")


def as_release(locked: Selection, now: Selection) -> Selection:
    """For `check`'s drift question on a channel lock: the locked decision as the nearest release it was made for
    (the channel's build changes every night; the decision that matters is the release whose facts apply), with the
    Triton of `now` (a channel build pins its own)."""
    nearest = next((m[1] for r in locked.reasons if (m := _NEAREST.search(r))), None)
    if nearest is None:
        return locked
    return dataclasses.replace(locked, torch=nearest, triton_package=now.triton_package, triton=now.triton)
