"""The hash a lock records of its intent, and which input changed since (a ground module: the intent reader writes
the hash, the lockfile asks what changed)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tritonlock.models import Intent, TargetSpec


def content_hash(intent: Intent, targets: tuple[TargetSpec, ...]) -> str:
    """The hash a lock records of its intent, with these targets in it: with the intent's own targets it is the
    intent's content_hash; with a lock's targets it tells whether only the target machines changed since."""
    canonical: dict[str, object] = {
        "python": intent.python, "torch": intent.torch, "triton": intent.triton, "packages": list(intent.packages),
        "cuda": intent.cuda, "cuda-policy": intent.cuda_policy,
        "indexes": {"torch": intent.torch_index, "default": intent.default_index},
        # a target's macOS only when stated, so the hash of every other intent stays what it was
        "targets": [[t.name, t.os, t.arch, t.glibc, t.python, t.driver, t.cuda, list(t.gpus)]
                    + ([t.macos] if t.macos else [])
                    # AMD keys only when stated, so the hash of every other intent stays what it was
                    + ([{"amdgpu": t.amdgpu, "hsa-override": t.hsa_override}] if t.amdgpu or t.hsa_override else [])
                    for t in targets],
    }
    if intent.no_build:  # only then, so that the hash of an intent without no-build stays what it was
        canonical["no-build"] = list(intent.no_build)
    if intent.channel != "release":  # only then, so that the hash of every release intent stays what it was
        canonical["channel"] = intent.channel
    if intent.package_builds:  # only then, so that the hash of every other intent stays what it was
        canonical["package-builds"] = [[b.name, b.index, list(b.cuda), b.flat] for b in intent.package_builds]
    if intent.optional_gpu_code:  # only then, so that the hash of every other intent stays what it was
        canonical["optional-gpu-code"] = list(intent.optional_gpu_code)
    if intent.imports:  # only then, so that the hash of every other intent stays what it was
        canonical["imports"] = list(intent.imports)
    if intent.target_files:  # only then, so that the hash of an intent without target-files stays what it was
        files = list(dict.fromkeys(t.origin[5:] for t in targets if t.origin.startswith("file:")))
        canonical["target-files"] = {"globs": list(intent.target_files), "files": files}
    return "sha256:" + hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()


def changed_files(intent: Intent, locked: tuple[TargetSpec, ...], locked_hash: str) -> tuple[str, ...]:
    """What changed since a lock of `locked_hash` was written from `locked` targets: the target files whose machines
    differ, when nothing else did; else the intent itself (its path). Paths as the user reaches them."""
    if content_hash(intent, locked) != locked_hash:
        return (intent.path,)
    old = {t.name: t for t in locked}
    new = {t.name: t for t in intent.targets}
    moved = [new.get(n) or old[n] for n in dict.fromkeys([*old, *new]) if old.get(n) != new.get(n)]
    base = Path(intent.path).parent
    out = [intent.path if not t.origin.startswith("file:") else
           (str(base / t.origin[5:]) if str(base) not in ("", ".") else t.origin[5:]) for t in moved]
    return tuple(dict.fromkeys(out)) or (intent.path,)
