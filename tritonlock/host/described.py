"""A machine described instead of detected: the override flags and TRITONLOCK_* variables (they beat detection), and
the host files `tritonlock host --save` writes, each value checked and every problem named."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from tritonlock.host import _probes as p
from tritonlock import _toml
from tritonlock.errors import HostError
from tritonlock.models import Gpu, TargetSpec, VendorGpu

# flag > TRITONLOCK_<KEY> environment variable > detected (STYLE.md §12).
OVERRIDE_KEYS = ("driver", "cuda", "gpus", "os", "arch", "glibc", "python", "macos", "amdgpu")
ENV_PREFIX = "TRITONLOCK_"

_EXPECTED = {
    "driver": 'a driver version like "535.104.05", or "none"',
    "cuda": 'a CUDA version like "12.4"',
    "gpus": 'compute capabilities like "8.0,8.0", GPU names like "A100", AMD gfx targets like "gfx942", Intel GPUs '
            'like "bmg", or "none"',
    "amdgpu": 'an amdgpu driver version like "6.4", "30.10" or "6.12.12"',
    "os": '"linux", "windows" or "macos"',
    "arch": '"x86_64", "aarch64" or "arm64"',
    "glibc": 'a glibc version like "2.35", or "none"',
    "python": 'a Python version like "3.12"',
    "macos": 'a macOS version like "14.5"',
}
_FORMS = {
    "driver": re.compile(r"^[0-9]+(\.[0-9]+){1,2}\Z"),
    "cuda": re.compile(r"^[0-9]+\.[0-9]+\Z"),
    "glibc": re.compile(r"^[0-9]+\.[0-9]+\Z"),
    "python": re.compile(r"^3\.[0-9]+(\.[0-9]+)?\Z"),
    "macos": re.compile(r"^[1-9][0-9](\.[0-9]+){0,2}\Z", re.ASCII),
    "amdgpu": re.compile(r"^[0-9]+\.[0-9]+(\.[0-9]+)*\Z"),
}
_CC = re.compile(r"^[0-9]+\.[0-9]+\Z")
_NONE = "none"  # the value that says "this machine has none": no driver, no GPU, no glibc


# ---- overrides -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Overrides:
    """Parsed override values; a key is given when `where` names it (a value may be None: "none")."""

    where: dict[str, str] = field(default_factory=dict)  # key -> "TRITONLOCK_CUDA" | "cuda"
    values: dict[str, str | None] = field(default_factory=dict)
    gpus: tuple[Gpu, ...] | None = None
    vendor_gpus: tuple[VendorGpu, ...] | None = None  # AMD/Intel GPUs named in the gpus override


def _overrides(flags: Mapping[str, str] | None) -> _Overrides:
    raw: dict[str, tuple[str, str]] = {}  # key -> (value, where it came from)
    problems: list[str] = []
    for key in OVERRIDE_KEYS:
        env = os.environ.get(ENV_PREFIX + key.upper(), "").strip()
        if env:
            raw[key] = (env, ENV_PREFIX + key.upper())
    for key, value in (flags or {}).items():
        if key not in OVERRIDE_KEYS:
            problems.append(f'unknown host override "{key}": expected one of {", ".join(OVERRIDE_KEYS)}')
        elif value.strip():
            raw[key] = (value.strip(), key)  # assigned after the environment: a flag wins

    values: dict[str, str | None] = {}
    vendor_gpus: tuple[VendorGpu, ...] = ()
    for key in ("os", "arch", "driver", "cuda", "glibc", "python", "macos", "amdgpu"):  # os first: arch depends on it
        if key in raw:
            value, where = raw[key]
            try:
                values[key] = _parse_scalar(key, value, values.get("os") or p.os_name())
            except ValueError:
                problems.append(f'host override {where}="{value}": expected {_EXPECTED[key]}')
    gpus = None
    if "gpus" in raw:
        value, where = raw["gpus"]
        gpus, unknown = _parse_gpus(value)
        vendor_gpus, unknown = _parse_vendor_gpus(unknown)
        problems += [f'host override {where}="{value}": "{u}" is not {_EXPECTED["gpus"]}' for u in unknown]
        if gpus and vendor_gpus:
            problems.append(f'host override {where}="{value}": NVIDIA and {vendor_gpus[0].vendor.upper() if vendor_gpus[0].vendor == "amd" else "Intel"} '
                            "GPUs in one machine description: name one vendor's GPUs (one lock target installs one "
                            "torch build)")
        elif len({g.vendor for g in vendor_gpus}) > 1:
            problems.append(f'host override {where}="{value}": AMD and Intel GPUs in one machine description: name one '
                            "vendor's GPUs")
    if "driver" in values and values["driver"] is None:
        driver_is = f'{raw["driver"][1]}="{raw["driver"][0]}"'
        if "cuda" in raw:
            cuda_is = f'{raw["cuda"][1]}="{raw["cuda"][0]}"'
            problems.append(f"host overrides {driver_is} and {cuda_is} contradict: without a driver there is no CUDA")
        if gpus and any(_CC.match(g.cc) for g in gpus):
            gpus_is = f'{raw["gpus"][1]}="{raw["gpus"][0]}"'
            problems.append(f"host overrides {driver_is} and {gpus_is} contradict: without a driver no GPU is usable")
    if values.get("os", "linux") != "linux" and values.get("glibc"):
        os_is, glibc_is = (f'{raw[key][1]}="{raw[key][0]}"' for key in ("os", "glibc"))
        problems.append(f"host overrides {os_is} and {glibc_is} contradict: glibc is for linux only")
    if values.get("macos") and values.get("os", p.os_name()) != "macos":
        macos_is = f'{raw["macos"][1]}="{raw["macos"][0]}"'
        problems.append(f"host override {macos_is} is for a macos machine; this one is {values.get('os', p.os_name())}"
                        " (set TRITONLOCK_OS=macos too)")
    if problems:
        raise HostError("\n".join(_toml.capped(problems)))
    return _Overrides(where={key: where for key, (_, where) in raw.items()}, values=values, gpus=gpus,
                      vendor_gpus=vendor_gpus if "gpus" in raw else None)


def _parse_scalar(key: str, value: str, os_name: str) -> str | None:
    """The normalized value; None for "none" where a machine may lack the thing; ValueError if malformed."""
    if value.lower() == _NONE and key in ("driver", "glibc"):
        return None
    if key == "os":
        normalized = p.normalize_os(value)
    elif key == "arch":
        normalized = p.normalize_arch(value, os_name)
    else:
        normalized = value if _FORMS[key].match(value) else None
    if normalized is None:
        raise ValueError(f"{key}={value!r}")
    return normalized


def _parse_gpus(value: str) -> tuple[tuple[Gpu, ...], list[str]]:
    """GPUs from "8.0,8.0" or "A100,H100" (names through compat/), and the items it could not read."""
    if value.lower() == _NONE:
        return (), []
    gpus, unknown = [], []
    for index, item in enumerate(part.strip() for part in value.split(",")):
        cc = item if _CC.match(item) else p.cc_for_name(item)
        if cc is None:
            unknown.append(item)
        else:
            gpus.append(Gpu(index=index, name="" if item == cc else item, cc=cc))
    return tuple(gpus), unknown


def _parse_vendor_gpus(items: list[str]) -> tuple[tuple[VendorGpu, ...], list[str]]:
    """AMD gfx targets and names, Intel GPUs among the items the NVIDIA table did not know."""
    from tritonlock.compat.matrix_vendor import load_vendor_matrix, normalize_gfx

    out: list[VendorGpu] = []
    unknown: list[str] = []
    vm = load_vendor_matrix() if items else None
    for item in items:
        gfx = normalize_gfx(item) or (vm.amd_gfx_for_name(item) if vm else None)
        intel = None if gfx else (vm.intel_target_for_name(item) if vm else None)
        if gfx:
            out.append(VendorGpu(index=len(out), vendor="amd", target=gfx, name="" if item == gfx else item))
        elif intel:
            out.append(VendorGpu(index=len(out), vendor="intel", target=intel, name="" if item == intel else item))
        else:
            unknown.append(item)
    return tuple(out), unknown


# ---- saved targets -------------------------------------------------------------------------

_TARGET_KEYS = ("name", "os", "arch", "glibc", "python", "driver", "cuda", "gpus", "macos", "amdgpu", "hsa-override")
_VENDOR_GPU = re.compile(r"^(gfx[0-9]{1,2}[0-9a-f]{2}|[a-z][a-z0-9]{1,3}(-[a-z])?)\Z")
_REQUIRED = ("name", "os", "arch")


def load_saved_target(path: str) -> TargetSpec:
    """Read a file written by `tritonlock host --save` (one [[targets]] table, see target_toml)."""
    try:
        from tritonlock._files import read_text

        text = read_text(path)
    except OSError as e:
        raise HostError(f"{path}: cannot read saved target: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise HostError(f"{path}: cannot read saved target: not UTF-8 text ({e.reason} at byte {e.start})") from None
    try:
        doc = _toml.loads(text)
    except _toml.TOMLDecodeError as e:
        line, message = _toml.decode_error_line(e, text)
        raise HostError(f"{path}:{line or 1}: not valid TOML: {message}") from None
    targets = doc.get("targets")
    if not isinstance(targets, list) or len(targets) != 1 or not isinstance(targets[0], dict):
        raise HostError(f"{path}:1: expected exactly one [[targets]] table, as `tritonlock host --save` writes")
    table: dict[str, object] = targets[0]
    lines = _toml.Lines(text)
    header = lines.of(("targets", 0)) or 1

    def line_of(key: str) -> int:
        return lines.of(("targets", 0, key)) or header

    problems: list[str] = []
    values: dict[str, str | None] = {}
    gpus: tuple[str, ...] = ()
    for key, value in table.items():
        where = f"{path}:{line_of(key)}: targets[0].{_toml.shown(key, 40).strip(chr(39))}"
        if key not in _TARGET_KEYS:
            near = _toml.nearest(str(key), _TARGET_KEYS) if len(problems) < 20 else None
            problems.append(f"{where}: unknown key, " + (f'did you mean "{near}"? (expected one of '
                                                          f"{', '.join(_TARGET_KEYS)})" if near else
                                                          f"expected one of {', '.join(_TARGET_KEYS)}"))
        elif key == "gpus":
            if isinstance(value, list) and all(isinstance(v, str) and (_CC.match(v) or _VENDOR_GPU.match(v))
                                               for v in value):
                gpus = tuple(str(v) for v in value)
            else:
                problems.append(f'{where} = {_toml.shown(value)}: expected a list of compute capabilities like ["8.0"]')
        elif not isinstance(value, str) or not value:
            problems.append(f"{where} = {_toml.shown(value)}: expected a string")
        elif key == "name":
            if value.isprintable() and value.strip() and len(value) <= 100:
                values[key] = value
            else:
                problems.append(f"{where} = {_toml.shown(value)}: expected a short name without control characters")
        elif key == "hsa-override":
            if re.fullmatch(r"[0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,2}", value):
                values[key] = value
            else:
                problems.append(f'{where} = {_toml.shown(value)}: expected an HSA_OVERRIDE_GFX_VERSION like "11.0.0"')
        else:
            try:
                values[key] = _parse_scalar(key, value, str(table.get("os", "")))
            except ValueError:
                problems.append(f'{where} = "{value if len(value) <= 60 else value[:57] + "..."}": '
                                f'expected {_EXPECTED[key]}')
    problems += [f"{path}:{header}: targets[0].{key} is missing" for key in _REQUIRED if key not in table]
    if problems:
        raise HostError("\n".join(_toml.capped(problems)))
    return TargetSpec(
        name=str(values["name"]),
        os=str(values["os"]),
        arch=str(values["arch"]),
        glibc=values.get("glibc"),
        python=values.get("python"),
        driver=values.get("driver"),
        cuda=values.get("cuda"),
        gpus=gpus,
        origin=f"file:{path}",
        macos=values.get("macos"),
        amdgpu=values.get("amdgpu"),
        hsa_override=values.get("hsa-override"),
    )
