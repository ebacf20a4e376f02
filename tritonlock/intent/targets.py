"""An intent's targets: its [[targets]] tables and the host files its target-files globs match, read and validated."""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path
from typing import Any

from tritonlock import _toml
from tritonlock._files import read_text
from tritonlock.intent import _checks
from tritonlock.intent._checks import INTENT_LIMIT
from tritonlock.models import TargetSpec

_TARGET_KEYS = _checks.TABLES["[[targets]]"]
_OS = {"linux": "linux", "windows": "windows", "win32": "windows", "macos": "macos", "darwin": "macos"}
_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
_CC = re.compile(r"^[0-9]+\.[0-9]+\Z")
_MACOS = re.compile(r"^[1-9][0-9](\.[0-9]+){0,2}\Z", re.ASCII)  # "14", "14.5", "10.15.7", "26.0"
_DRIVER = re.compile(r"^[0-9]{3,4}(\.[0-9]+){0,2}\Z")


def _gpus(p: _checks._Problems, key: tuple[str | int, ...], raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(g, str) for g in raw):
        p.add(key, f"expected a list of strings, got {_toml.shown(raw)}", 'write e.g. ["8.0", "8.0"] or ["A100"]')
        return ()
    out: list[str] = []
    for i, g in enumerate(raw):
        if _CC.match(g.strip()):
            out.append(g.strip())
            continue
        from tritonlock.compat.matrix import load_matrix  # only for names; compat/ is local data

        cc = load_matrix().gpu_cc(g)
        if cc is None:
            other = _vendor_gpu(g)  # AMD gfx targets and names, Intel GPUs (compat/gpus.toml)
            if other is not None:
                out.append(other)
                continue
            # a suggestion costs a fuzzy match: only for as many names as an error shows (_toml.capped)
            near = load_matrix().nearest_gpu(g) if len(p.items) < 20 else None
            p.add((*key, i), f"unknown GPU {_toml.shown(g)}",
                  f'did you mean "{near.name}" (compute capability {near.cc})? Write that, or its compute capability '
                  f'"{near.cc}"' if near is not None else
                  'give its compute capability instead (nvidia-smi --query-gpu=compute_cap --format=csv), e.g. "8.0"; '
                  'for AMD its gfx target, e.g. "gfx1100" (rocminfo); for Intel its GPU family, e.g. "bmg"')
        else:
            out.append(cc)
    return tuple(out)


@functools.lru_cache(maxsize=4096)  # a fleet's intent names the same GPU thousands of times
def _vendor_gpu(text: str) -> str | None:
    """An AMD or Intel GPU as a target lists it: 'gfx942:sramecc+:xnack-'/'MI300X' -> 'gfx942', 'Arc B580' -> 'bmg'."""
    from tritonlock.compat.matrix_vendor import load_vendor_matrix, normalize_gfx

    gfx = normalize_gfx(text)
    if gfx is not None:
        return gfx
    vm = load_vendor_matrix()
    return vm.amd_gfx_for_name(text) or vm.intel_target_for_name(text)


def _vendor_problems(p: _checks._Problems, key: tuple[str | int, ...], raw: dict[str, Any],
                     gpus: tuple[str, ...]) -> None:
    """One vendor per target; the AMD-only keys only on AMD targets (amdgpu, hsa-override)."""
    from tritonlock.compat.matrix_vendor import gfx_from_override, isa_major, vendor_of

    vendors = sorted({vendor_of(g) for g in gpus})
    if len(vendors) > 1:
        p.add((*key, "gpus"), f"GPUs of several vendors ({', '.join(vendors)}) in one target",
              "split them into one target per vendor: one lock target installs one torch build")
    vendor = vendors[0] if len(vendors) == 1 else None
    if vendor in ("amd", "intel") and "driver" in raw:
        p.add((*key, "driver"), f"driver is the NVIDIA driver; this target's GPUs are {vendor.upper() if vendor == 'amd' else 'Intel'}",
              'remove it' + (' (give the amdgpu kernel driver as amdgpu = "6.4")' if vendor == "amd" else ""))
    for k in ("amdgpu", "hsa-override"):
        if k in raw and vendor != "amd":
            p.add((*key, k), f"{k} is for targets with AMD GPUs (gpus = [\"gfx942\"])", "remove it, or list the AMD GPUs")
    if "amdgpu" in raw:
        v = _checks._string(p, (*key, "amdgpu"), raw["amdgpu"], '"6.4"')
        if v is not None and not re.fullmatch(r"[0-9]+\.[0-9]+(\.[0-9]+)*", v):
            p.add((*key, "amdgpu"), f"{_toml.shown(v)} is not an amdgpu driver version",
                  'write the driver release, e.g. "6.4" or "30.10", or the module version from /sys/module/amdgpu/version')
    if "hsa-override" in raw:
        v = _checks._string(p, (*key, "hsa-override"), raw["hsa-override"], '"11.0.0"')
        target = gfx_from_override(v) if v is not None else None
        if v is not None and target is None:
            p.add((*key, "hsa-override"), f"{_toml.shown(v)} is not an HSA_OVERRIDE_GFX_VERSION",
                  'write it as HSA_OVERRIDE_GFX_VERSION takes it, e.g. "11.0.0" (gfx1100)')
        elif target is not None:
            crossing = sorted({g for g in gpus if vendor_of(g) == "amd" and isa_major(g) != isa_major(target)})
            if crossing:
                p.add((*key, "hsa-override"), f"{v} means {target}, another ISA generation than "
                      f"{', '.join(crossing)}: its code does not run there",
                      f"remove it, or use an override of the {isa_major(crossing[0])} family")


def _target(p: _checks._Problems, i: int, raw: Any, names: set[str]) -> TargetSpec | None:
    key: tuple[str | int, ...] = ("targets", i)
    if not isinstance(raw, dict):
        p.add(key, "expected a table", "write it as [[targets]] with name = ...")
        return None
    _checks._unknown(p, raw, _TARGET_KEYS, key, _checks.elsewhere("[[targets]]"))
    name = _checks._string(p, (*key, "name"), raw.get("name"), '"a100-cluster"') if "name" in raw else None
    if name is None:
        if "name" not in raw:
            p.add(key, "missing required key 'name'", 'add name = "my-cluster"')
        return None
    if not name.strip() or not name.isprintable() or len(name) > 100:
        p.add((*key, "name"), f"{_toml.shown(name)} is not a usable target name (empty, too long, or with control "
              "characters)", 'write a short name, e.g. "a100-cluster"')
    elif name in names or name == "host":
        p.add((*key, "name"), f"duplicate target name {_toml.shown(name)}" if name in names
              else "the name 'host' is reserved", "give each target its own name")
    names.add(name)
    os_raw = _checks._string(p, (*key, "os"), raw.get("os", "linux"), '"linux" or "windows"')
    os_ = _OS.get((os_raw or "linux").lower())
    if os_raw is not None and os_ is None:
        p.add((*key, "os"), f"unknown os {_toml.shown(os_raw)}", "use linux, windows or macos")
    arch_raw = _checks._string(p, (*key, "arch"), raw.get("arch", "x86_64"), '"x86_64" or "aarch64"')
    arch = _ARCH.get((arch_raw or "x86_64").lower())
    if arch_raw is not None and arch is None:
        p.add((*key, "arch"), f"unknown arch {_toml.shown(arch_raw)}", "use x86_64 or aarch64")
    glibc = None
    if "glibc" in raw:
        glibc = _checks._string(p, (*key, "glibc"), raw["glibc"], '"2.31"')
        if glibc is not None and not re.fullmatch(r"[0-9]+\.[0-9]+", glibc):
            p.add((*key, "glibc"), f"{_toml.shown(glibc)} is not a glibc version", 'write e.g. "2.31" (ldd --version)')
    python = _checks._python(p, (*key, "python"), raw["python"]) if "python" in raw else None
    driver = None
    if "driver" in raw:
        driver = _checks._string(p, (*key, "driver"), raw["driver"], '"535.104.05"')
        if driver is not None and not _DRIVER.match(driver):
            p.add((*key, "driver"), f"{_toml.shown(driver)} is not an NVIDIA driver version",
                  'write e.g. "535.104.05" (nvidia-smi), or leave it out for a CPU target')
            driver = None
    cuda = None
    if "cuda" in raw:
        cuda = _checks._string(p, (*key, "cuda"), raw["cuda"], '"12.2"')
        if cuda is not None and not re.fullmatch(r"[0-9]+\.[0-9]+", cuda):
            p.add((*key, "cuda"), f"{_toml.shown(cuda)} is not a CUDA version", 'write e.g. "12.2" (nvidia-smi\'s "CUDA Version")')
    macos = None
    if "macos" in raw:
        macos = _checks._string(p, (*key, "macos"), raw["macos"], '"14.5"')
        if macos is not None and not _MACOS.match(macos):
            p.add((*key, "macos"), f"{_toml.shown(macos)} is not a macOS version",
                  'write e.g. "14.5" (sw_vers -productVersion)')
            macos = None
        elif macos is not None and os_ not in (None, "macos"):
            p.add((*key, "macos"), f"macos is for os = \"macos\" targets, this one is {os_!r}",
                  "remove it, or set os = \"macos\"")
            macos = None
    gpus = _gpus(p, (*key, "gpus"), raw["gpus"]) if "gpus" in raw else ()
    _vendor_problems(p, key, raw, gpus)
    nvidia = bool(gpus) and all(_CC.match(g) for g in gpus)
    if driver is not None and re.fullmatch(r"[0-9]{3,4}", driver) and os_ is not None and (nvidia or not gpus):
        driver = _bare_branch(p, (*key, "driver"), driver, os_, gpus)
    if nvidia and driver is None and "driver" not in raw:
        p.add((*key, "driver"), "gpus are listed but no driver is given", 'add driver = "535.104.05" (nvidia-smi)')
    if os_ is None or arch is None:
        return None
    if arch == "aarch64" and os_ != "linux":
        arch = "arm64"  # the wheel-tag spelling off Linux (macosx_11_0_arm64, win_arm64), as host reports it
    amdgpu = raw["amdgpu"] if isinstance(raw.get("amdgpu"), str) else None
    hsa = raw["hsa-override"] if isinstance(raw.get("hsa-override"), str) else None
    return TargetSpec(name=name, os=os_, arch=arch, glibc=glibc if os_ == "linux" else None, python=python,
                      driver=driver, cuda=cuda, gpus=gpus, origin="intent", macos=macos, amdgpu=amdgpu,
                      hsa_override=hsa)


def _bare_branch(p: _checks._Problems, key: tuple[str | int, ...], driver: str, os_: str,
                 gpus: tuple[str, ...]) -> str | None:
    """driver = "535": a branch, not a version. Compared as a version it is 535.0, older than every R535 release
    (CUDA 12.1's 530.30.02 < 535 < 12.2's 535.54.03), so it is read as the branch's first release in NVIDIA's Table
    3 (R535 → 535.54.03, CUDA 12.2), and the reading is a warning; a branch no toolkit shipped with is refused.
    A Jetson's driver is numbered by branch ("580.00"), and resolve judges it by branch: it stays as written."""
    from tritonlock.compat.matrix import load_matrix

    m = load_matrix()
    if any(m.jetpack_only(cc) or ((g := m.gpu_family(cc)) is not None and g.integrated) for cc in gpus):
        return driver
    found = m.branch_release(driver, os_)
    if found is None:
        p.add(key, f"{driver!r} is a driver branch, not a driver version, and no CUDA toolkit shipped with R{driver}",
              'write the full version nvidia-smi shows, e.g. "535.104.05"')
        return None
    version, cuda = found
    p.warnings.append(f"{p.path}: {'.'.join(str(k) if isinstance(k, str) else f'[{k}]' for k in key)}"
                      .replace(".[", "[") + f" = {driver!r} is a branch: read as {version}, the first R{driver} "
                      f"release (CUDA {cuda}) — write the full version nvidia-smi shows to lock for your exact driver")
    return version

_MAX_TARGET_FILES = 1000  # a fleet's saved hosts; more means a pattern that sweeps up the project


def _target_files(p: _checks._Problems, data: dict[str, Any], base: Path, names: set[str],
                  targets: list[TargetSpec]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """target-files = ["hosts/*.toml"]: each file holds [[targets]] tables, as `tritonlock host --save` writes.

    Globs are relative to the intent's directory; files come in sorted order after the inline targets, and each
    problem in a file names that file and line. Returns the globs and the matched files (relative, POSIX)."""
    if "target-files" not in data:
        return (), ()
    raw = data["target-files"]
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(g, str) for g in raw):
        p.add(("target-files",), f"expected a list of glob strings, got {_toml.shown(raw)}",
              'write e.g. ["hosts/*.toml"]')
        return (), ()
    seen: list[Path] = []
    for i, pattern in enumerate(raw):
        key: tuple[str | int, ...] = ("target-files", i)
        if not pattern.strip() or Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            p.add(key, f"{_toml.shown(pattern)} must be a relative path or glob inside the project",
                  'write e.g. "hosts/*.toml" (relative to triton-env.toml)')
            continue
        try:  # pathlib refuses some patterns ("a**", ".") with ValueError or IndexError, and may meet bad dirs
            matched = sorted(f for f in base.glob(pattern) if f.is_file() and f.name != Path(p.path).name)
        except (ValueError, IndexError, OSError) as err:
            p.add(key, f"{_toml.shown(pattern)} is not a usable glob ({_toml.shown(str(err), 80)})",
                  'write e.g. "hosts/*.toml" (relative to triton-env.toml)')
            continue
        if len(matched) > _MAX_TARGET_FILES:
            p.add(key, f"{_toml.shown(pattern)} matches {len(matched)} files", "narrow it to the saved host files, "
                  'e.g. "hosts/*.toml"')
            continue
        if not matched:
            p.add(key, f"{_toml.shown(pattern)} matches no file in {base.resolve()}",
                  "save one with `tritonlock host --save " + (pattern if "*" not in pattern else "hosts/NAME.toml")
                  + "`, or fix the pattern")
        seen += [f for f in matched if f not in seen]
    rels: list[str] = []
    try:
        root = base.resolve()
    except (OSError, RuntimeError):
        root = base.absolute()
    for f in seen:
        rel = f.relative_to(base).as_posix() if f.is_relative_to(base) else f.as_posix()
        shown = (base / rel).as_posix() if str(base) not in ("", ".") else rel
        try:
            real = f.resolve(strict=True)
        except (OSError, RuntimeError) as err:  # a link loop, or a link that points at nothing
            p.items.append(f"{shown}: cannot follow it ({_toml.shown(str(err), 80)}) — fix the file or the "
                           "target-files pattern")
            continue
        if not real.is_relative_to(root):
            # a symlink (the file's or a directory's on its path) out of the project: the file would travel with
            # the project (the Kubernetes ConfigMap carries target files) although it is not part of it
            p.items.append(f"{shown}: a symlink to {real}, outside the project ({root}) — target files must be "
                           "inside the project: copy the file in instead of linking it")
            continue
        rels.append(rel)
        try:
            text = read_text(f, limit=INTENT_LIMIT)
        except (OSError, UnicodeDecodeError) as err:
            p.items.append(f"{shown}: cannot read ({err}) — fix the file or the target-files pattern")
            continue
        fp = _checks._Problems(shown, text)
        try:
            doc = _toml.loads(text)
        except _toml.TOMLDecodeError as err:
            line, msg = _toml.decode_error_line(err, text)
            # (--force: the file is there, and a hand-written one is replaced only with it)
            p.items.append(f"{shown}:{line or 1}: TOML syntax error: {msg} — fix the syntax, or save it again "
                           f"on that machine with `tritonlock host --save {shown} --force`")
            continue
        _checks._unknown(fp, doc, ("targets",), (), {k: "[[targets]]" for k in _TARGET_KEYS})
        tables = doc.get("targets")
        if not isinstance(tables, list) or not tables:
            fp.add(("targets",), "expected one or more [[targets]] tables",
                   f"save the machine again with `tritonlock host --save {shown} --force` on it")
            tables = []
        for j, t in enumerate(tables):
            spec = _target(fp, j, t, names)
            if spec is not None:
                targets.append(dataclasses.replace(spec, origin=f"file:{rel}"))
        p.items += fp.items
        p.warnings += fp.warnings
    return tuple(raw), tuple(rels)


def same_machines(targets: list[TargetSpec]) -> tuple[str, ...]:
    """Targets that describe the same machine under two names: harmless (one lock each), but worth a word."""
    first: dict[tuple[object, ...], TargetSpec] = {}
    out: list[str] = []
    for t in targets:
        key = (t.os, t.arch, t.glibc, t.python, t.driver, t.cuda, tuple(sorted(t.gpus)), t.macos, t.amdgpu,
               t.hsa_override)
        if key in first:
            a = first[key]
            out.append(f"targets {a.name!r} ({_where(a)}) and {t.name!r} ({_where(t)}) describe the same machine; "
                       "both get the same lock — keep one of them")
        else:
            first[key] = t
    return tuple(_toml.capped(out))  # (2,000 copies of one machine once printed 2,000 warnings)


def _where(t: TargetSpec) -> str:
    return t.origin[5:] if t.origin.startswith("file:") else "inline [[targets]]"
