"""Read and validate triton-env.toml into an Intent; every problem names file:line and a fix."""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from tritonlock import _toml, _urls
from tritonlock._intenthash import content_hash
from tritonlock._files import read_text
from tritonlock.errors import IntentError
from tritonlock.models import Intent, PackageBuilds, TargetSpec

_ENV_KEYS = ("python", "torch", "triton", "packages", "cuda", "cuda-policy", "no-build", "channel")
_INDEX_KEYS = ("torch", "default")
_TARGET_KEYS = ("name", "os", "arch", "glibc", "python", "driver", "cuda", "gpus", "macos", "amdgpu", "hsa-override")
_OS = {"linux": "linux", "windows": "windows", "win32": "windows", "macos": "macos", "darwin": "macos"}
_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
_BACKEND = re.compile(r"^(cpu|cu[0-9]{3,})\Z")
_CC = re.compile(r"^[0-9]+\.[0-9]+\Z")
_MACOS = re.compile(r"^[1-9][0-9](\.[0-9]+){0,2}\Z", re.ASCII)  # "14", "14.5", "10.15.7", "26.0"
_DRIVER = re.compile(r"^[0-9]{3,4}(\.[0-9]+){0,2}\Z")
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


def _unknown(p: _Problems, table: dict[str, Any], allowed: tuple[str, ...], key: tuple[str | int, ...]) -> None:
    for k in table:
        if k not in allowed:
            p.add((*key, k), "unknown key", f"use one of: {', '.join(allowed)}")


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


def _cuda(p: _Problems, raw: Any) -> str:
    s = _string(p, ("environment", "cuda"), raw, '"auto", "cpu", "cu126" or ">=12.4"')
    if s is None:
        return "auto"
    s = s.strip().lower()
    if s == "cpu" or (_BACKEND.match(s) and s in _known_backends()):
        return s
    if s == "auto":
        return s
    if _BACKEND.match(s):
        p.add(("environment", "cuda"), f"unknown backend {s!r}",
              f"use one of: auto, {', '.join(_known_backends())}, or a CUDA specifier like \">=12.4\"")
        return "auto"
    if re.fullmatch(r"[0-9]+\.[0-9]+", s):
        return f"=={s}"
    if re.fullmatch(r"[0-9]+(\.\*)?", s):  # a CUDA major: "12" (or "12.*") is any CUDA 12.x build
        return f"=={s.removesuffix('.*')}.*"
    if re.fullmatch(r"[0-9]+\.[0-9]+\.\*", s):
        return f"=={s}"
    if _check_spec(p, ("environment", "cuda"), s, '"auto", "cpu", "cu126" or ">=12.4"'):
        return s
    return "auto"


def _known_backends() -> list[str]:
    """The CUDA/CPU backends of PyTorch's index the matrix knows (compat/ is local data), oldest CUDA first."""
    from tritonlock.compat.matrix import load_matrix

    seen = {v.backend for r in load_matrix().torch for v in r.variants if v.backend == "cpu" or v.backend.startswith("cu")}
    return sorted(seen, key=lambda b: (b != "cpu", int(b[2:]) if b[2:].isdigit() else 0))


_LOCAL = re.compile(r"\s*(?:===?)?\s*([0-9]+(?:\.[0-9]+)*)\+([A-Za-z0-9.]+)\s*")


def _torch(p: _Problems, raw: Any) -> tuple[str, str | None]:
    """(specifier, backend from a local label): "==2.13.0+cpu", as pip freeze prints it, is 2.13.0 on cpu."""
    t = _string(p, ("environment", "torch"), raw, '">=2.6"')
    if t is None:
        return "", None
    if t.strip().lower() in ("latest", "newest", "any", "all", ""):
        p.add(("environment", "torch"), f"{t.strip()!r} is not a version specifier",
              'write "*" for the newest torch that fits (or e.g. ">=2.6"), or leave the key out')
        return "", None
    m = _LOCAL.fullmatch(t)
    if m:
        label = m.group(2).lower()
        if label not in _known_backends():
            p.add(("environment", "torch"), f"{t.strip()!r}: unknown backend {label!r} in the local version label",
                  f"use one of: {', '.join(_known_backends())} (or drop the +label and set cuda)")
            return "", None
        return f"=={m.group(1)}", label
    torch = normalize_torch_spec(t)
    if not _check_spec(p, ("environment", "torch"), torch, '">=2.6" or "==2.7.1"'):
        return "", None
    return torch, None


def _index(p: _Problems, key: tuple[str | int, ...], raw: Any) -> str | None:
    s = _string(p, key, raw, '"https://mirror.example/whl/{backend}"')
    if s is None:
        return None
    torch = key == ("indexes", "torch")
    if s == "default" and torch:
        return s  # the torch family from the default index: PyPI's (or your mirror's) builds
    fix = "give the index's full address" + (', or "default" to take torch from the default index' if torch else "")
    s = _urls.normalize(s)  # a password written as it is ("S3@CR/ET", "{x}"): percent-encoded, the host the real one
    # {backend} is the one placeholder a torch index may carry; any other brace (outside a password) is a typo.
    rest = s.replace("{backend}", "cu126") if torch else s
    if "{" in rest or "}" in rest:
        p.add(key, f"{_urls.redact(_toml.shown(s, 120))} has a brace that is not {{backend}}" if torch else
              f"{_urls.redact(_toml.shown(s, 120))} has a {{ or }} (a placeholder only [indexes].torch may use, as "
              "{backend})", "write the address with {backend} where the backend goes, and no other braces"
              if torch else fix)
        return None
    why = _urls.problem(rest)
    if why is not None:
        p.add(key, f"{_urls.redact(_toml.shown(s, 120))} {why}", fix)
        return None
    # user:token@ stays in memory for requests (uv and the index client get it at request time); what the
    # intent carries on — into the lock, the output and the intent's hash — is the address without it.
    _urls.learn(s)
    return _urls.strip_credentials(s).rstrip("/")


def _gpus(p: _Problems, key: tuple[str | int, ...], raw: Any) -> tuple[str, ...]:
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


def _vendor_problems(p: _Problems, key: tuple[str | int, ...], raw: dict[str, Any], gpus: tuple[str, ...]) -> None:
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
        v = _string(p, (*key, "amdgpu"), raw["amdgpu"], '"6.4"')
        if v is not None and not re.fullmatch(r"[0-9]+\.[0-9]+(\.[0-9]+)*", v):
            p.add((*key, "amdgpu"), f"{_toml.shown(v)} is not an amdgpu driver version",
                  'write the driver release, e.g. "6.4" or "30.10", or the module version from /sys/module/amdgpu/version')
    if "hsa-override" in raw:
        v = _string(p, (*key, "hsa-override"), raw["hsa-override"], '"11.0.0"')
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


def _target(p: _Problems, i: int, raw: Any, names: set[str]) -> TargetSpec | None:
    key: tuple[str | int, ...] = ("targets", i)
    if not isinstance(raw, dict):
        p.add(key, "expected a table", "write it as [[targets]] with name = ...")
        return None
    _unknown(p, raw, _TARGET_KEYS, key)
    name = _string(p, (*key, "name"), raw.get("name"), '"a100-cluster"') if "name" in raw else None
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
    os_raw = _string(p, (*key, "os"), raw.get("os", "linux"), '"linux" or "windows"')
    os_ = _OS.get((os_raw or "linux").lower())
    if os_raw is not None and os_ is None:
        p.add((*key, "os"), f"unknown os {_toml.shown(os_raw)}", "use linux, windows or macos")
    arch_raw = _string(p, (*key, "arch"), raw.get("arch", "x86_64"), '"x86_64" or "aarch64"')
    arch = _ARCH.get((arch_raw or "x86_64").lower())
    if arch_raw is not None and arch is None:
        p.add((*key, "arch"), f"unknown arch {_toml.shown(arch_raw)}", "use x86_64 or aarch64")
    glibc = None
    if "glibc" in raw:
        glibc = _string(p, (*key, "glibc"), raw["glibc"], '"2.31"')
        if glibc is not None and not re.fullmatch(r"[0-9]+\.[0-9]+", glibc):
            p.add((*key, "glibc"), f"{_toml.shown(glibc)} is not a glibc version", 'write e.g. "2.31" (ldd --version)')
    python = _python(p, (*key, "python"), raw["python"]) if "python" in raw else None
    driver = None
    if "driver" in raw:
        driver = _string(p, (*key, "driver"), raw["driver"], '"535.104.05"')
        if driver is not None and not _DRIVER.match(driver):
            p.add((*key, "driver"), f"{_toml.shown(driver)} is not an NVIDIA driver version",
                  'write e.g. "535.104.05" (nvidia-smi), or leave it out for a CPU target')
            driver = None
    cuda = None
    if "cuda" in raw:
        cuda = _string(p, (*key, "cuda"), raw["cuda"], '"12.2"')
        if cuda is not None and not re.fullmatch(r"[0-9]+\.[0-9]+", cuda):
            p.add((*key, "cuda"), f"{_toml.shown(cuda)} is not a CUDA version", 'write e.g. "12.2" (nvidia-smi\'s "CUDA Version")')
    macos = None
    if "macos" in raw:
        macos = _string(p, (*key, "macos"), raw["macos"], '"14.5"')
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


def _bare_branch(p: _Problems, key: tuple[str | int, ...], driver: str, os_: str,
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


def parse_intent(text: str, path: str = "triton-env.toml", *, target_files: bool = True) -> Intent:
    """Validate the text of an intent file; raises IntentError listing every problem. `target_files=False`: see
    read_intent."""
    p = _Problems(path, text)
    try:
        data = _toml.loads(text)
    except _toml.TOMLDecodeError as err:
        line, msg = _toml.decode_error_line(err, text)
        where = f"{path}:{line}" if line else path
        raise IntentError(f"{where}: TOML syntax error: {msg} — fix the syntax (https://toml.io)") from None
    if Path(path).name == "pyproject.toml":  # [tool.tritonlock] + [project].dependencies: the same intent
        data = _from_pyproject(p, data)
    _unknown(p, data, ("environment", "indexes", "targets", "target-files", "package-builds"), ())
    env = data.get("environment", {})
    if not isinstance(env, dict):
        p.add(("environment",), "expected a table", "write it as [environment]")
        env = {}
    _unknown(p, env, _ENV_KEYS, ("environment",))
    python = _python(p, ("environment", "python"), env["python"]) if "python" in env else None
    torch = ""
    label: str | None = None
    if "torch" in env:
        torch, label = _torch(p, env["torch"])
    triton = "auto"
    if "triton" in env:
        t = _string(p, ("environment", "triton"), env["triton"], '"auto", "none" or ">=3.2"')
        if t is not None:
            triton = t.strip()
            if triton.lower() in ("latest", "newest", "any"):
                p.add(("environment", "triton"), f"{triton!r} is not a triton choice",
                      'write "auto" for the triton the chosen torch pins (or a specifier like ">=3.2", or "none")')
                triton = "auto"
            elif not triton:
                p.add(("environment", "triton"), "'' is not a triton choice",
                      'write "auto" for the triton the chosen torch pins (or a specifier like ">=3.2", or "none"), '
                      "or leave the key out")
                triton = "auto"
            elif triton not in ("auto", "none"):
                triton = normalize_torch_spec(triton)
                if not _check_spec(p, ("environment", "triton"), triton, '"auto", "none" or ">=3.2"'):
                    triton = "auto"
    packages: list[str] = []
    raw_pk = env.get("packages", [])
    if not isinstance(raw_pk, list):
        p.add(("environment", "packages"), f"expected a list of requirement strings, got {_toml.shown(raw_pk)}",
              'write e.g. packages = ["numpy>=1.26"]')
        raw_pk = []
    for i, req in enumerate(raw_pk):
        if not isinstance(req, str):
            p.add(("environment", "packages", i), f"expected a string, got {_toml.shown(req)}", 'write e.g. "numpy>=1.26"')
            continue
        parsed = _requirement(req)
        if isinstance(parsed, str):
            p.add(("environment", "packages", i), f"{_toml.shown(req)} is not a valid requirement ({parsed})",
                  'write e.g. "numpy>=1.26"')
            continue
        name, text = parsed
        url_problem = _requirement_url_problem(text)
        if url_problem:
            p.add(("environment", "packages", i), f"{_urls.redact(_toml.shown(req, 120))}: {url_problem}",
                  "give a plain https:// or file:// URL; keep credentials in ~/.netrc or your keyring")
            continue
        if name.lower() in ("torch", "triton"):
            p.add(("environment", "packages", i), f"{name} is set by [environment].{name.lower()}",
                  f"remove it here and use {name.lower()} = \"...\" instead")
            continue
        packages.append(text)
    cuda = _cuda(p, env["cuda"]) if "cuda" in env else "auto"
    if label is not None:  # torch = "==2.13.0+cu126" names the backend itself
        if "cuda" in env and cuda not in ("auto", label):
            p.add(("environment", "cuda"), f"{cuda!r} contradicts torch = {env['torch']!r}, whose +{label} names the "
                  f"{label} backend", f'remove one of them (e.g. cuda = "{label}")')
        else:
            cuda = label
    policy = "compatible"
    if "cuda-policy" in env:
        pol = _string(p, ("environment", "cuda-policy"), env["cuda-policy"], '"compatible" or "strict"')
        if pol is not None and pol not in ("compatible", "strict"):
            p.add(("environment", "cuda-policy"), f"unknown policy {_toml.shown(pol)}", 'use "compatible" or "strict"')
        elif pol is not None:
            policy = pol
    no_build = _no_build(p, env["no-build"]) if "no-build" in env else ()
    channel = "release"
    if "channel" in env:  # PyTorch's nightly or test builds (compat/channels.toml)
        ch = _string(p, ("environment", "channel"), env["channel"], '"release", "nightly" or "test"')
        if ch is not None and ch not in ("release", "nightly", "test"):
            p.add(("environment", "channel"), f"unknown channel {_toml.shown(ch)}", 'use "release", "nightly" or "test"')
        elif ch is not None:
            channel = ch
    idx = data.get("indexes", {})
    if not isinstance(idx, dict):
        p.add(("indexes",), "expected a table", "write it as [indexes]")
        idx = {}
    _unknown(p, idx, _INDEX_KEYS, ("indexes",))
    torch_index = _index(p, ("indexes", "torch"), idx["torch"]) if "torch" in idx else None
    default_index = _index(p, ("indexes", "default"), idx["default"]) if "default" in idx else None
    raw_targets = data.get("targets", [])
    targets: list[TargetSpec] = []
    if not isinstance(raw_targets, list):
        p.add(("targets",), "expected an array of tables", "write each target as a [[targets]] table")
        raw_targets = []
    names: set[str] = set()
    for i, raw in enumerate(raw_targets):
        spec = _target(p, i, raw, names)
        if spec is not None:
            targets.append(spec)
    globs, files = _target_files(p, data, Path(path).parent, names, targets) if target_files else ((), ())
    package_builds = _package_builds(p, data.get("package-builds", [])) if "package-builds" in data else ()
    p.raise_if_any()
    # the order the user wrote the packages in is theirs: uv decides them in it, and ties favour the earlier one
    intent = Intent(path=path, python=python, torch=torch, triton=triton, packages=tuple(dict.fromkeys(packages)),
                    cuda=cuda, cuda_policy=policy, torch_index=torch_index, default_index=default_index,
                    targets=tuple(targets), no_build=no_build, content_hash="", target_files=globs,
                    warnings=tuple(p.warnings) + same_machines(targets), channel=channel,
                    package_builds=package_builds)
    del files  # (the files are the targets' origins, in order: content_hash reads them from there)
    return dataclasses.replace(intent, content_hash=content_hash(intent, intent.targets))


_PYPROJECT_KEYS = ("environment", "indexes", "targets", "target-files", "extras")


def _from_pyproject(p: _Problems, data: dict[str, Any]) -> dict[str, Any]:
    """A pyproject.toml's intent as triton-env.toml's keys: [tool.tritonlock] holds environment, indexes, targets and
    target-files (and `extras`, the optional-dependency groups to lock); [project].dependencies and those groups are
    the packages. A torch or triton requirement among them is the torch or triton specifier (with the table's, when
    it gives one too: both hold). Problems name pyproject.toml:LINE and the full key (tool.tritonlock.…)."""
    from tritonlock._discover import pyproject_groups

    tool = data.get("tool")
    table = tool.get("tritonlock") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        p.add(("tool", "tritonlock"), "no [tool.tritonlock] table", "add one with `tritonlock init --pyproject`",
              absolute=True)
        p.raise_if_any()
        return {}
    assert isinstance(table, dict)
    p.prefix = ("tool", "tritonlock")
    out = {k: v for k, v in table.items() if k != "extras"}
    project = data.get("project", {})
    if not isinstance(project, dict):
        p.add(("project",), "expected a table", "write it as [project]", absolute=True)
        project = {}
    extras = table.get("extras", [])
    if not isinstance(extras, list) or not all(isinstance(e, str) for e in extras):
        p.add(("extras",), f"expected a list of optional-dependency group names, got {_toml.shown(extras)}",
              'write e.g. extras = ["train"]')
        extras = []
    groups = project.get("optional-dependencies", {})
    groups = groups if isinstance(groups, dict) else {}
    known = {re.sub(r"[-_.]+", "-", k).lower(): k for k in groups}
    for i, e in enumerate(extras):
        if re.sub(r"[-_.]+", "-", e).lower() not in known:
            p.add(("extras", i), f"{_toml.shown(e)} is not a group in [project.optional-dependencies]",
                  f"use one of: {', '.join(sorted(groups)) or '(none: add the group there first)'}")
    dynamic = project.get("dynamic", [])
    if isinstance(dynamic, list) and "dependencies" in dynamic:
        p.add(("project", "dynamic"), "the dependencies are dynamic (a build backend computes them), so tritonlock "
              "cannot read them", "list them in [project].dependencies", absolute=True)
    reqs: list[tuple[tuple[str | int, ...], Any]] = []
    deps = project.get("dependencies", [])
    if not isinstance(deps, list):
        p.add(("project", "dependencies"), f"expected a list of requirement strings, got {_toml.shown(deps)}",
              'write e.g. dependencies = ["numpy>=1.26"]', absolute=True)
        deps = []
    reqs += [(("project", "dependencies", i), r) for i, r in enumerate(deps)]
    for g in pyproject_groups(project, extras):
        name = known[g]
        members = groups[name]
        if not isinstance(members, list):
            p.add(("project", "optional-dependencies", name), f"expected a list of requirement strings, got "
                  f"{_toml.shown(members)}", f'write e.g. {name} = ["numpy>=1.26"]', absolute=True)
            continue
        reqs += [(("project", "optional-dependencies", name, i), r) for i, r in enumerate(members)]
    own = re.sub(r"[-_.]+", "-", project["name"]).lower() if isinstance(project.get("name"), str) else None
    env = out.get("environment", {})
    env = dict(env) if isinstance(env, dict) else env
    if not isinstance(env, dict):
        return out  # the shared checks say what is wrong with it
    packages = list(env["packages"]) if isinstance(env.get("packages"), list) else env.get("packages", [])
    for key, req in reqs:
        if not isinstance(req, str):
            p.add(key, f"expected a string, got {_toml.shown(req)}", 'write e.g. "numpy>=1.26"', absolute=True)
            continue
        parsed = _requirement(req)
        if isinstance(parsed, str):
            p.add(key, f"{_toml.shown(req)} is not a valid requirement ({parsed})", 'write e.g. "numpy>=1.26"',
                  absolute=True)
            continue
        name, text = parsed
        canon = re.sub(r"[-_.]+", "-", name).lower()
        if canon == own:
            continue  # "myproj[train]": the groups it names are already in
        if canon not in ("torch", "triton"):
            url_problem = _requirement_url_problem(text)
            if url_problem:
                p.add(key, f"{_urls.redact(_toml.shown(req, 120))}: {url_problem}", "give a plain https:// or "
                      "file:// URL; keep credentials in ~/.netrc or your keyring", absolute=True)
            elif isinstance(packages, list):
                packages.append(req)
            continue
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            r = Requirement(req)
        except InvalidRequirement as err:  # (the fast check above agrees with packaging; this is its backstop)
            p.add(key, f"{_toml.shown(req)} is not a valid requirement ({str(err).splitlines()[0]})",
                  f'write e.g. "{canon}>=2.6"', absolute=True)
            continue
        if r.marker is not None or r.url or r.extras:
            p.add(key, f"{_toml.shown(req, 120)}: tritonlock picks {canon}'s build per target, so it takes a plain "
                  "version specifier here", f'write e.g. "{canon}>=2.6" (no extras, markers or URL)', absolute=True)
            continue
        spec = str(r.specifier)
        mine = env.get(canon)
        if canon == "triton" and isinstance(mine, str) and mine.strip() == "none":
            p.add(key, "triton is listed here but tool.tritonlock.environment.triton is \"none\"",
                  "remove one of them", absolute=True)
        elif not isinstance(mine, str) or mine.strip() in ("", "*", "auto"):
            env[canon] = spec or "*" if canon == "torch" else spec or "auto"
        elif spec and not _LOCAL.fullmatch(mine):  # both hold
            env[canon] = f"{normalize_torch_spec(mine)},{spec}"
    env["packages"] = packages
    out["environment"] = env
    return out


_BUILD_KEYS = ("name", "index", "cuda", "format")


def _package_builds(p: _Problems, raw: Any) -> tuple[PackageBuilds, ...]:
    """[[package-builds]]: a package's own per-CUDA builds on an index of its own, as compat/packages.toml rows
    (name, index with {version}/{cuda}/{torch}, cuda = ["cu128", ...], format = "simple" | "flat")."""
    from tritonlock.compat.pkgbuilds import parse_rows

    if not isinstance(raw, list):
        p.add(("package-builds",), "expected an array of tables", "write each as a [[package-builds]] table")
        return ()
    out: list[PackageBuilds] = []
    for i, row in enumerate(raw):
        if not isinstance(row, dict):
            p.add(("package-builds", i), "expected a table", "write it as a [[package-builds]] table")
            continue
        _unknown(p, row, _BUILD_KEYS, ("package-builds", i))
        try:
            (b,) = parse_rows([row], "", "package-builds")
        except ValueError as err:
            what = str(err).split(": ", 2)[-1]
            p.add(("package-builds", i), what, 'write e.g. name = "vllm", index = '
                  '"https://wheels.vllm.ai/{version}/{cuda}", cuda = ["cu129"]')
            continue
        out.append(b)
    return tuple(out)


def _no_build(p: _Problems, raw: Any) -> tuple[str, ...]:
    """[environment].no-build: true (no package is built from source) or a list of package names; (":all:",) for
    true, as pip and uv spell it, else the names normalized and sorted."""
    key: tuple[str | int, ...] = ("environment", "no-build")
    fix = 'write no-build = true (wheels only), or a list of package names, e.g. no-build = ["flash-attn"]'
    if isinstance(raw, bool):
        return (":all:",) if raw else ()
    if not isinstance(raw, list):
        p.add(key, f"expected true, false or a list of package names, got {_toml.shown(raw)}", fix)
        return ()
    names: list[str] = []
    for i, n in enumerate(raw):
        if not isinstance(n, str) or not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?", n.strip()):
            p.add((*key, i), f"{_toml.shown(n)} is not a package name", fix)
            continue
        names.append(re.sub(r"[-_.]+", "-", n.strip()).lower())
    return tuple(sorted(set(names)))


_MAX_TARGET_FILES = 1000  # a fleet's saved hosts; more means a pattern that sweeps up the project


def _target_files(p: _Problems, data: dict[str, Any], base: Path, names: set[str],
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
        fp = _Problems(shown, text)
        try:
            doc = _toml.loads(text)
        except _toml.TOMLDecodeError as err:
            line, msg = _toml.decode_error_line(err, text)
            # (--force: the file is there, and a hand-written one is replaced only with it)
            p.items.append(f"{shown}:{line or 1}: TOML syntax error: {msg} — fix the syntax, or save it again "
                           f"on that machine with `tritonlock host --save {shown} --force`")
            continue
        _unknown(fp, doc, ("targets",), ())
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


INTENT_LIMIT = 16 * 1024 * 1024  # an intent (or a host file) is a few KB; 50,000 packages are about 1 MB


def read_intent(path: str | Path, *, target_files: bool = True) -> Intent:
    """Read triton-env.toml from disk. `target_files=False` leaves the files its target-files globs match unread (and
    out of its targets and content hash): for a caller that knows the lock is fresh and needs only the settings."""
    p = Path(path)
    try:  # a BOM (Windows editors) is not TOML, but is no error either; an intent is a few KB, a large one 1 MB
        text = read_text(p, encoding="utf-8-sig", limit=INTENT_LIMIT)
    except FileNotFoundError:
        raise IntentError(f"{p}: no such file — run `tritonlock init` to write one") from None
    except (OSError, UnicodeDecodeError) as err:
        raise IntentError(f"{p}: cannot read ({err})") from None
    return parse_intent(text, str(p), target_files=target_files)


def starter(python: str, target_comment: str = "", *, this_machine: str = "", torch_default: str = "") -> str:
    """The commented starter file `tritonlock init` writes. `this_machine`: the [[targets]] table `tritonlock host
    --save` writes for this machine, shown commented out; `torch_default`: why [indexes].torch = "default" is set
    (PyTorch's index did not answer, the default index did), else the [indexes] table stays commented out."""
    def row(line: str, comment: str) -> str:
        return f"{line.ljust(29)} # {comment}"

    lines = ["# triton-env.toml — what this project needs; `tritonlock resolve` turns it into triton-env.lock."]
    lines += [target_comment] if target_comment else []
    lines += [row('# target-files = ["hosts/*.toml"]', "other machines, a file each (see the end of this file)"),
              "[environment]",
              row(f'python = "{python}"', 'a version ("3.12") or a specifier (">=3.10"); default: this interpreter'),
              row('torch = ">=2.6"', 'PEP 440 specifier; "*" = newest that fits'),
              row('triton = "auto"', '"auto" (the version torch pins) | a specifier | "none"'),
              row("packages = []", 'extra requirements, locked with the rest, e.g. ["numpy>=1.26"]'),
              row('cuda = "auto"', '"auto" | "cpu" | a backend like "cu126" | a specifier like ">=12.4"'),
              row('cuda-policy = "compatible"', '"compatible" (CUDA minor-version compatibility) | "strict"'),
              row("# no-build = true", 'never build from source (or a list: ["flash-attn"]); default: sync builds '
                                       "what has no wheel"),
              ""]
    if torch_default:
        import textwrap

        lines += ["[indexes]"] + ["# " + line for line in textwrap.wrap(torch_default, 110)]
        lines += [row('torch = "default"', "the torch family from your default index (PyPI ships one build per "
                                           "platform)"),
                  '# default = "https://mirror.example/simple"        # everything else (default: your pip '
                  "configuration)"]
    else:
        lines += [row("# [indexes]", "optional: mirrors and private indexes"),
                  '# torch = "https://mirror.example/whl/{backend}"   # where torch, triton, torchvision… come from; '
                  '"default" = your default index',
                  '# default = "https://mirror.example/simple"        # everything else (default: your pip '
                  "configuration)"]
    lines += ["",
              "# With no targets, the one target is the machine `tritonlock resolve` runs on. To lock for several",
              "# machines, save each one — this one too — with `tritonlock host --save hosts/NAME.toml` (or describe",
              "# it: --driver, --gpus, …) and uncomment target-files at the top, or paste [[targets]] tables here.",
              "# This machine, as `tritonlock host --save` writes it:"]
    lines += [f"# {line}".rstrip() for line in this_machine.strip().splitlines() if not line.startswith("#")]
    return "\n".join(lines) + "\n"
