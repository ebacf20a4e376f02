"""The fixes a conflict names for a release uv takes only as the user pins it: one its index yanked (PEP 592) or a
pre-release, either pinned by a package the user names, and a pin whose local label its index does not serve. Each
is read from uv's words and said as not checked."""

from __future__ import annotations

import re
from collections.abc import Callable


def pin_fixes(uv: str, key: str, index_for: Callable[[str], str]) -> list[str]:
    """Every such fix uv's words call for (`key`: where the user writes packages)."""
    return yanked_fixes(uv, key) + prerelease_fixes(uv, key) + local_label_fixes(uv, key, index_for)


# uv: "Because yankdep==1.0 was yanked (reason: Error in the setup) and all versions of yankapp depend on …"
_YANKED = re.compile(r"(?:^|(?<=[\s(]))([A-Za-z][A-Za-z0-9._-]*)==([^\s,]+) was yanked"
                     r"(?: \(reason: (.*?)\)(?= and |, |\.|$))?")


def yanked_fixes(uv: str, key: str) -> list[str]:
    """A fix per release uv refused because its index yanked it (PEP 592) while a package pins it: uv takes a yanked
    release only where a requirement pins it exactly, so pinning it in the intent is the way to have it (sglang
    0.5.3 pins transformers 4.57.0, which PyPI yanked). Not checked: it is said as such."""
    out = []
    for name, version, reason in dict.fromkeys(_YANKED.findall(" ".join(uv.split()))):  # (uv wraps its lines)
        said = f' (its index says: "{reason}")' if reason else ""
        out.append(f'  fix: add "{name}=={version}" to {key} — {name} {version} is a yanked release{said}, and uv '
                   "takes one only where a requirement pins it exactly (not checked: whether it then locks)")
    return out


# uv: "Because there is no version of torchvision==0.20.1+cu124 and you require torchvision==0.20.1+cu124"
_NO_LOCAL = re.compile(r"there is no version of ([A-Za-z][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s,+]+)\+([^\s,]+)")


def local_label_fixes(uv: str, key: str, index_for: Callable[[str], str]) -> list[str]:
    """A pin with a local label ("torchvision==0.20.1+cu124", as `pip freeze` writes PyTorch's own builds) that its
    index does not serve: the same release without the label is what an index like PyPI serves. Not checked."""
    out = []
    for name, version, label in dict.fromkeys(_NO_LOCAL.findall(" ".join(uv.split()))):
        out.append(f'  fix: write "{name}=={version}" in {key} — "+{label}" names a local build (PyTorch\'s own '
                   f"indexes serve torch's family so: torch 2.5.1+cu124), which {index_for(name)} does not serve "
                   "(not checked: whether that release locks)")
    return out


# uv: "sglang==0.5.3 depends on flashinfer-python==0.4.0rc3 … And because you require one of:
# flashinfer-python<0.4.0rc3 flashinfer-python>0.4.0rc3" — the pre-release a package pins, left out
_PRE_PINNED = re.compile(r"depends? on ([A-Za-z][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s,]+)")


def prerelease_fixes(uv: str, key: str) -> list[str]:
    """A fix per pre-release a package pins that uv left out: uv takes a pre-release only where a requirement the user
    wrote names one (or pins it), so a named package without a pre-release in its range shuts out the one another
    package pins (sglang 0.5.3 pins flashinfer-python 0.4.0rc3 beside a plain "flashinfer-python"). Not checked."""
    from packaging.version import InvalidVersion, Version

    out = []
    uv = " ".join(uv.split())  # (uv wraps its lines)
    for name, version in dict.fromkeys(_PRE_PINNED.findall(uv)):
        try:
            pre = Version(version).is_prerelease
        except InvalidVersion:
            continue
        if pre and f"{name}<{version} {name}>{version}" in uv:
            out.append(f'  fix: add "{name}=={version}" to {key} — {name} {version} is a pre-release, and uv takes '
                       "one only where a requirement you write names a pre-release (not checked: whether it then "
                       "locks)")
    return out
