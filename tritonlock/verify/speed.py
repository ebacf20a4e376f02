"""Verify's speed verdicts: each timed row against the band expected for its GPU (compat/bands.toml), and, where a row
is outside its band, the likely cause from what NVML said while verify ran (the runner's gpuhealth facts).

Pure: the bands are data, the facts are what the runner reported (recorded NVML answers in the tests), and nothing
here touches a GPU. The runner reports facts and never judges; this module judges and never measures.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritonlock.errors import MatrixError

BANDS_FILE = "bands.toml"
# the runner's gpuhealth.REASONS, in the words a user reads
_REASON_WORDS = {
    "hw_slowdown": "hardware slowdown (HW Slowdown: the GPU's own protection, e.g. power brake or overheating)",
    "hw_thermal_slowdown": "thermal slowdown (HW Thermal Slowdown: the GPU is too hot)",
    "sw_thermal_slowdown": "thermal slowdown (SW Thermal Slowdown: the driver holds the clocks down to cool the GPU)",
    "hw_power_brake_slowdown": "power brake (HW Power Brake Slowdown: an external signal from the power supply)",
    "applications_clocks_setting": "clocks held by an applications-clocks or locked-clocks setting (nvidia-smi -ac / "
                                   "-lgc)",
}
_SLOWDOWN_SHARE = 0.05  # a slowdown reason in more than 5% of the busy samples
_CLOCK_SHARE = 0.3
VERDICTS = ("ok", "slow", "fast", "no-band")
LINKS = ("nvlink", "pcie")  # how an all-reduce's GPUs reach each other (NVML's P2P status between them)
# nvmlGpuP2PStatus_t, in words (NVML's P2P status; 0 is OK)
_P2P_WORDS = {1: "the chipset does not support it", 2: "the GPU does not support it",
              3: "the I/O hub topology does not support it", 4: "disabled by a driver registry key",
              5: "not supported", 6: "unknown"}


# ---------------------------------------------------------------- the bands


@dataclass(frozen=True, kw_only=True, slots=True)
class GpuFamily:
    """A kind of GPU that bands are written for: its name as CUDA reports it, matched by a pattern."""

    family: str
    pattern: str  # a regular expression matched against the whole GPU name ("NVIDIA H200( NVL)?")
    cc: str  # compute capability "9.0"
    source: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Band:
    """What one timed row of verify reads on a healthy GPU of one family: the ratio to torch and, where the absolute
    figure is steady enough to judge, the figure itself."""

    family: str
    kernel: str
    dtype: str
    metric: str
    ratio: tuple[float, float] | None  # None: a row with no torch side (the all-reduce)
    value: tuple[float, float] | None
    source: str  # the runs it comes from: machine, driver, torch/triton, date, the bench files
    note: str = ""  # why the band sits where it does (e.g. where Triton cannot reach torch's kernel)
    # the all-reduce's bands: how many GPUs, over which link ("nvlink", "pcie"), at which message size
    gpus: int | None = None
    link: str | None = None
    message_bytes: int | None = None
    inferred: bool = False  # drawn from specifications and too few runs: every verdict on it says so


@dataclass(frozen=True, kw_only=True, slots=True)
class Bands:
    families: tuple[GpuFamily, ...]
    bands: tuple[Band, ...]
    path: str

    def family(self, gpu_name: str, cc: str | None) -> GpuFamily | None:
        for f in self.families:
            if re.fullmatch(f.pattern, gpu_name.strip()) and (cc is None or cc == f.cc):
                return f
        return None

    def band(self, family: str, kernel: str, dtype: str, gpus: int | None = None,
             link: str | None = None) -> Band | None:
        for b in self.bands:
            if b.family == family and b.kernel == kernel and b.dtype == dtype and b.gpus == gpus and b.link == link:
                return b
        return None


def _pair(raw: Any, where: str, path: str) -> tuple[float, float]:
    if (not isinstance(raw, list) or len(raw) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                               for x in raw) or not 0 <= raw[0] <= raw[1]):
        raise MatrixError(f"{path}: {where}: expected [low, high] with 0 <= low <= high, got {raw!r} — fix the row")
    return float(raw[0]), float(raw[1])


def _text(d: dict[str, Any], key: str, where: str, path: str, required: bool = True) -> str:
    v = d.get(key)
    if v is None and not required:
        return ""
    if not isinstance(v, str) or not v.strip():
        raise MatrixError(f"{path}: {where}.{key}: missing (expected a string) — fix the row")
    return v


def load_bands(root: Path | None = None) -> Bands | None:
    """compat/bands.toml, checked; None when this installation ships no compat data. A broken file is an error that
    names the row and key."""
    from tritonlock import _toml
    from tritonlock._data import compat_root

    base = root or compat_root()
    if base is None or not (base / BANDS_FILE).is_file():
        return None
    path = str(base / BANDS_FILE)
    try:
        data = _toml.loads((base / BANDS_FILE).read_text(encoding="utf-8"))
    except _toml.TOMLDecodeError as err:
        raise MatrixError(f"{path}: not valid TOML ({err}) — fix the file") from None
    families = []
    for i, raw in enumerate(data.get("gpu", [])):
        where = f"gpu[{i}]"
        if not isinstance(raw, dict):
            raise MatrixError(f"{path}: {where}: expected a table — fix the row")
        pattern = _text(raw, "pattern", where, path)
        try:
            re.compile(pattern)
        except re.error as err:
            raise MatrixError(f"{path}: {where}.pattern: not a regular expression ({err}) — fix the row") from None
        families.append(GpuFamily(family=_text(raw, "family", where, path), pattern=pattern,
                                  cc=_text(raw, "cc", where, path), source=_text(raw, "source", where, path)))
    known = {f.family for f in families}
    bands = []
    seen: set[tuple[str, str, str, int | None, str | None]] = set()
    for i, raw in enumerate(data.get("band", [])):
        where = f"band[{i}]"
        if not isinstance(raw, dict):
            raise MatrixError(f"{path}: {where}: expected a table — fix the row")
        fam = _text(raw, "family", where, path)
        if fam not in known:
            raise MatrixError(f"{path}: {where}.family: {fam!r} is not a [[gpu]] family of this file (it has: "
                              f"{', '.join(sorted(known)) or 'none'}) — fix the row")
        if "ratio" not in raw and "value" not in raw:
            raise MatrixError(f"{path}: {where}: neither ratio nor value — a band needs one; fix the row")
        gpus, link, size, inferred = raw.get("gpus"), raw.get("link"), raw.get("message_bytes"), raw.get("inferred")
        if gpus is not None and (not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 2):
            raise MatrixError(f"{path}: {where}.gpus: expected a whole number of GPUs, 2 or more, got {gpus!r} — "
                              "fix the row")
        if link is not None and link not in LINKS:
            raise MatrixError(f"{path}: {where}.link: expected one of {', '.join(LINKS)}, got {link!r} — fix the row")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size <= 0):
            raise MatrixError(f"{path}: {where}.message_bytes: expected a positive whole number of bytes, got "
                              f"{size!r} — fix the row")
        if inferred is not None and not isinstance(inferred, bool):
            raise MatrixError(f"{path}: {where}.inferred: expected true or false, got {inferred!r} — fix the row")
        if (gpus is None) != (link is None) or (gpus is None) != (size is None):
            raise MatrixError(f"{path}: {where}: gpus, link and message_bytes go together (an all-reduce's band) — "
                              "give all three or none; fix the row")
        b = Band(family=fam, kernel=_text(raw, "kernel", where, path), dtype=_text(raw, "dtype", where, path),
                 metric=_text(raw, "metric", where, path),
                 ratio=_pair(raw["ratio"], f"{where}.ratio", path) if "ratio" in raw else None,
                 value=_pair(raw["value"], f"{where}.value", path) if "value" in raw else None,
                 source=_text(raw, "source", where, path), note=_text(raw, "note", where, path, required=False),
                 gpus=gpus, link=link, message_bytes=size, inferred=bool(inferred))
        key = (b.family, b.kernel, b.dtype, b.gpus, b.link)
        if key in seen:
            raise MatrixError(f"{path}: {where}: a second band for {b.family} {b.kernel} {b.dtype}"
                              + (f" ({b.gpus} GPUs, {b.link})" if b.gpus else "") + " — keep one")
        seen.add(key)
        bands.append(b)
    return Bands(families=tuple(families), bands=tuple(bands), path=path)


# ---------------------------------------------------------------- the facts


@dataclass(frozen=True, kw_only=True, slots=True)
class GpuProcess:
    pid: int
    name: str | None
    used_mib: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class GpuFacts:
    """What NVML said about one GPU during one verify run (the runner's gpuhealth facts, parsed)."""

    name: str | None = None
    uuid: str | None = None
    cuda_index: int | None = None
    power_limit_w: float | None = None
    power_default_w: float | None = None
    sm_clock_max: int | None = None
    sm_clock_default: int | None = None
    sm_clock_app: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    temp_slowdown_c: int | None = None
    mig: bool | None = None
    ecc_uncorrected: int | None = None
    ecc_uncorrected_after: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failed: bool | None = None
    nvlink_links: int | None = None
    nvlink_active: int | None = None
    utilization_before: int | None = None
    processes_before: tuple[GpuProcess, ...] = ()
    processes_after: tuple[GpuProcess, ...] = ()
    own_pids: frozenset[int] = frozenset()
    busy_samples: int = 0
    power_w_median: float | None = None
    sm_clock_median: int | None = None
    sm_clock_min: int | None = None
    temp_c_max: int | None = None
    pcie_gen_min: int | None = None
    pcie_width_min: int | None = None
    reason_share: tuple[tuple[str, float], ...] = ()
    nvml_index: int | None = None
    # NVML's P2P status towards each other GPU: (its NVML index, READ status, NVLINK status); 0 is OK, None unread
    peers: tuple[tuple[int, int | None, int | None], ...] = ()


def _peers(v: Any) -> tuple[tuple[int, int | None, int | None], ...]:
    out = []
    for p in v if isinstance(v, list) else []:
        if isinstance(p, dict) and isinstance(p.get("nvml_index"), int):
            out.append((int(p["nvml_index"]), _int(p, "p2p_read"), _int(p, "p2p_nvlink")))
    return tuple(out)


def _int(d: dict[str, Any], key: str) -> int | None:
    v = d.get(key)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _float(d: dict[str, Any], key: str) -> float | None:
    v = d.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _bool(d: dict[str, Any], key: str) -> bool | None:
    v = d.get(key)
    return v if isinstance(v, bool) else None


def _str(d: dict[str, Any], key: str) -> str | None:
    v = d.get(key)
    return v if isinstance(v, str) else None


def _procs(v: Any) -> tuple[GpuProcess, ...]:
    out = []
    for p in v if isinstance(v, list) else []:
        if isinstance(p, dict) and isinstance(p.get("pid"), int):
            out.append(GpuProcess(pid=int(p["pid"]), name=_str(p, "name"), used_mib=_int(p, "used_mib")))
    return tuple(out)


def parse_facts(doc: Any) -> tuple[tuple[GpuFacts, ...], str | None]:
    """The runner's `gpu_health` (gpuhealth.Monitor.facts) as typed facts per GPU, and NVML's error when it did not
    answer. Anything of another shape is left out (an older or foreign runner): facts explain, they never fail."""
    if not isinstance(doc, dict):
        return (), None
    if isinstance(doc.get("error"), str):
        return (), doc["error"]
    own = frozenset(p for p in doc.get("own_pids", []) if isinstance(p, int)) if isinstance(
        doc.get("own_pids"), list) else frozenset()
    out = []
    for d in doc.get("devices", []) if isinstance(doc.get("devices"), list) else []:
        if not isinstance(d, dict):
            continue
        during = d.get("during") if isinstance(d.get("during"), dict) else {}
        assert isinstance(during, dict)
        share = during.get("reason_share") if isinstance(during.get("reason_share"), dict) else {}
        assert isinstance(share, dict)
        out.append(GpuFacts(
            name=_str(d, "name"), uuid=_str(d, "uuid"), cuda_index=_int(d, "cuda_index"),
            power_limit_w=_float(d, "power_limit_w"), power_default_w=_float(d, "power_default_w"),
            sm_clock_max=_int(d, "sm_clock_max"), sm_clock_default=_int(d, "sm_clock_default"),
            sm_clock_app=_int(d, "sm_clock_app"), pcie_gen_max=_int(d, "pcie_gen_max"),
            pcie_width_max=_int(d, "pcie_width_max"), temp_slowdown_c=_int(d, "temp_slowdown_c"),
            mig=_bool(d, "mig"), ecc_uncorrected=_int(d, "ecc_uncorrected_volatile"),
            ecc_uncorrected_after=_int(d, "ecc_uncorrected_volatile_after"),
            remapped_rows_pending=_bool(d, "remapped_rows_pending"),
            remapped_rows_failed=_bool(d, "remapped_rows_failed"),
            nvlink_links=_int(d, "nvlink_links"), nvlink_active=_int(d, "nvlink_active"),
            utilization_before=_int(d, "utilization_before"),
            processes_before=_procs(d.get("processes_before")), processes_after=_procs(d.get("processes_after")),
            own_pids=own, busy_samples=_int(during, "busy_samples") or 0,
            power_w_median=_float(during, "power_w_median"),
            sm_clock_median=_int(during, "sm_clock_median"), sm_clock_min=_int(during, "sm_clock_min"),
            temp_c_max=_int(during, "temp_c_max"), pcie_gen_min=_int(during, "pcie_gen_min"),
            pcie_width_min=_int(during, "pcie_width_min"),
            reason_share=tuple(sorted((str(k), float(v)) for k, v in share.items()
                                      if isinstance(v, (int, float)) and not isinstance(v, bool))),
            nvml_index=_int(d, "nvml_index"), peers=_peers(d.get("peers"))))
    return tuple(out), None


def facts_doc(facts: tuple[GpuFacts, ...], error: str | None = None) -> dict[str, Any]:
    """The facts in the runner's own shape (gpuhealth.Monitor.facts): what `verify --json` shows, and what
    parse_facts reads back to the same facts."""
    if error is not None:
        return {"error": error}
    devices = []
    for f in facts:
        d = {k: v for k, v in dataclasses.asdict(f).items() if k in _STATIC and v is not None}
        d["ecc_uncorrected_volatile"] = d.pop("ecc_uncorrected", None)
        d["ecc_uncorrected_volatile_after"] = d.pop("ecc_uncorrected_after", None)
        for key in ("processes_before", "processes_after"):
            d[key] = [{"pid": p.pid, "used_mib": p.used_mib, "name": p.name} for p in getattr(f, key)]
        d["during"] = {k: getattr(f, k) for k in _DURING if getattr(f, k) is not None}
        d["during"]["reason_share"] = dict(f.reason_share)
        if f.peers:
            d["peers"] = [{"nvml_index": j, **({"p2p_read": rd} if rd is not None else {}),
                           **({"p2p_nvlink": nv} if nv is not None else {})} for j, rd, nv in f.peers]
        devices.append({k: v for k, v in d.items() if v is not None})
    own = sorted({p for f in facts for p in f.own_pids})
    return {"devices": devices, "own_pids": own}


_STATIC = ("name", "uuid", "cuda_index", "power_limit_w", "power_default_w", "sm_clock_max", "sm_clock_default",
           "sm_clock_app", "pcie_gen_max", "pcie_width_max", "temp_slowdown_c", "mig", "ecc_uncorrected",
           "ecc_uncorrected_after", "remapped_rows_pending", "remapped_rows_failed", "nvlink_links", "nvlink_active",
           "utilization_before", "nvml_index")
_DURING = ("busy_samples", "power_w_median", "sm_clock_median", "sm_clock_min", "temp_c_max", "pcie_gen_min",
           "pcie_width_min")


def _others(f: GpuFacts) -> list[GpuProcess]:
    """Processes on the GPU that are not this verify run: every one seen before the runner touched the GPU but its
    own, and those seen at the end that are neither its own nor gone."""
    seen: dict[int, GpuProcess] = {}
    for p in f.processes_before:
        if p.pid not in f.own_pids:
            seen[p.pid] = p
    for p in f.processes_after:
        if p.pid not in f.own_pids and p.pid not in seen and p.name is not None:
            seen[p.pid] = p
    return list(seen.values())


def causes(f: GpuFacts) -> tuple[str, ...]:
    """What NVML shows that slows this GPU, most likely first; empty when it shows nothing."""
    out: list[str] = []
    others = _others(f)
    if others:
        who = ", ".join(f"pid {p.pid}" + (f" ({p.name})" if p.name else "") +
                        (f" holding {p.used_mib:,} MiB" if p.used_mib is not None else "") for p in others[:4])
        busy = (f"; the GPU was {f.utilization_before}% busy before verify started"
                if f.utilization_before else "")
        out.append(f"another process is using this GPU: {who}{busy} — verify's kernels shared the GPU with it")
    elif f.utilization_before is not None and f.utilization_before >= 10:
        out.append(f"the GPU was {f.utilization_before}% busy before verify started, by a process NVML does not "
                   "list here (another container or VM, or a process this one may not see)")
    if f.mig:
        out.append("MIG mode is on: verify ran on a slice of the GPU, which the bands (for a whole GPU) do not "
                   "describe")
    if f.power_limit_w is not None and f.power_default_w and f.power_limit_w < 0.97 * f.power_default_w:
        out.append(f"a power cap: the enforced power limit is {f.power_limit_w:.0f} W, the GPU's default "
                   f"{f.power_default_w:.0f} W (nvidia-smi -pl)")
    if f.sm_clock_app is not None and f.sm_clock_default and f.sm_clock_app < 0.97 * f.sm_clock_default:
        out.append(f"applications clocks set below the default: {f.sm_clock_app} MHz of {f.sm_clock_default} MHz "
                   "(nvidia-smi -ac)")
    share = dict(f.reason_share)
    for reason, words in _REASON_WORDS.items():
        limit = _CLOCK_SHARE if reason == "applications_clocks_setting" else _SLOWDOWN_SHARE
        if share.get(reason, 0.0) > limit:
            out.append(f"{words}, in {share[reason]:.0%} of the samples taken while the kernels ran")
    base = f.sm_clock_default or f.sm_clock_max
    if f.sm_clock_median is not None and base and f.busy_samples and f.sm_clock_median < 0.8 * base:
        at_limit = (f.power_w_median is not None and f.power_limit_w is not None
                    and f.power_w_median >= 0.95 * f.power_limit_w)
        out.append(f"clocks below base: the SM clock ran at {f.sm_clock_median} MHz (median while the kernels ran) "
                   f"against {base} MHz by default" + (
                       f", with the GPU at its power limit ({f.power_w_median:.0f} W of {f.power_limit_w:.0f} W: "
                       "everything running on it draws all the power it may)" if at_limit else ""))
    if f.temp_c_max is not None and f.temp_slowdown_c and f.temp_c_max >= f.temp_slowdown_c:
        out.append(f"the GPU reached {f.temp_c_max} °C, its slowdown temperature ({f.temp_slowdown_c} °C)")
    if f.pcie_width_min is not None and f.pcie_width_max and f.pcie_width_min < f.pcie_width_max:
        out.append(f"the PCIe link ran at x{f.pcie_width_min} of x{f.pcie_width_max} lanes")
    if f.pcie_gen_min is not None and f.pcie_gen_max and f.pcie_gen_min < f.pcie_gen_max:
        out.append(f"the PCIe link ran at generation {f.pcie_gen_min} of {f.pcie_gen_max} while the kernels ran")
    if f.nvlink_links and f.nvlink_active is not None and f.nvlink_active < f.nvlink_links:
        out.append(f"{f.nvlink_links - f.nvlink_active} of {f.nvlink_links} NVLink links are down")
    errs = max(f.ecc_uncorrected or 0, f.ecc_uncorrected_after or 0)
    if errs:
        out.append(f"ECC: {errs} uncorrected memory error(s) since the driver loaded")
    if f.remapped_rows_failed:
        out.append("ECC: a memory row remapping failed (the GPU needs service)")
    elif f.remapped_rows_pending:
        out.append("ECC: memory row remapping is pending (it takes effect after a GPU reset)")
    return tuple(out)


# ---------------------------------------------------------------- verdicts


@dataclass(frozen=True, kw_only=True, slots=True)
class Speed:
    """One timed row judged against its band."""

    verdict: str  # "ok" (within its band), "slow", "fast" (above its band), "no-band"
    detail: str  # what was compared, in words
    family: str | None = None
    ratio_band: tuple[float, float] | None = None
    value_band: tuple[float, float] | None = None
    source: str = ""
    note: str = ""
    causes: tuple[str, ...] = ()
    inferred: bool = False  # the band rests on specifications rather than repeated runs
    # the all-reduce: how its GPUs reach each other ("nvlink", "pcie", "none": P2P off; None when unknown) and who
    # said so ("NVML's P2P status" from the runner, or host detection's words when the runner could not read it)
    link: str | None = None
    link_source: str = ""

    @property
    def outside(self) -> bool:
        return self.verdict in ("slow", "fast")

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "detail": self.detail, "family": self.family,
                "ratio_band": list(self.ratio_band) if self.ratio_band else None,
                "value_band": list(self.value_band) if self.value_band else None, "source": self.source or None,
                "note": self.note or None, "causes": list(self.causes), "inferred": self.inferred,
                **({"link": self.link, "link_source": self.link_source} if self.link else {})}


_GPU_LABEL = re.compile(r"(cuda:\d+) (.+) \(sm_(\d+?)(\d), ")


def gpu_names(labels: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """{"cuda:0": ("NVIDIA H200", "9.0")} from the runner's GPU lines ("cuda:0 NVIDIA H200 (sm_90, 139.8 GiB)")."""
    out = {}
    for label in labels:
        m = _GPU_LABEL.match(label)
        if m:
            out[m[1]] = (m[2], f"{m[3]}.{m[4]}")
    return out


def judge(kernel: str, dtype: str, device: str, value: float | None, ratio: float | None, metric: str | None,
          gpu: tuple[str, str] | None, bands: Bands | None, facts: GpuFacts | None) -> Speed | None:
    """The verdict of one row; None for a row that was not timed."""
    if ratio is None and value is None:
        return None
    if bands is None or gpu is None:
        return Speed(verdict="no-band", detail="no speed bands in this installation" if bands is None else
                     "the GPU of this row is not known")
    name, cc = gpu
    fam = bands.family(name, cc)
    if fam is None:
        return Speed(verdict="no-band", detail=f"no band for this GPU ({name}, compute capability {cc}): "
                     "compat/bands.toml has bands for " + (", ".join(f.family for f in bands.families) or "none"))
    band = bands.band(fam.family, kernel, dtype)
    if band is None:
        return Speed(verdict="no-band", family=fam.family,
                     detail=f"no band for {kernel} {dtype} on {fam.family} in compat/bands.toml")
    low: list[str] = []
    high: list[str] = []
    parts = []
    if ratio is not None and band.ratio is not None:
        lo, hi = band.ratio
        parts.append(f"ratio {ratio:.2f} (band {lo:.2f}–{hi:.2f})")
        (low if ratio < lo else high if ratio > hi else []).append(f"ratio {ratio:.2f} below {lo:.2f}" if ratio < lo
                                                                    else f"ratio {ratio:.2f} above {hi:.2f}")
    if value is not None and band.value is not None:
        lo, hi = band.value
        unit = metric or band.metric
        parts.append(f"{value:,.0f} {unit} (band {lo:,.0f}–{hi:,.0f})")
        if value < lo:
            low.append(f"{value:,.0f} {unit} below {lo:,.0f}")
        elif value > hi:
            high.append(f"{value:,.0f} {unit} above {hi:,.0f}")
    verdict = "slow" if low else "fast" if high else "ok"
    found = causes(facts) if facts is not None and verdict != "ok" else ()
    detail = "; ".join(parts)
    if verdict != "ok":
        detail = f"{'; '.join(low or high)} — {detail}"
    return Speed(verdict=verdict, detail=detail, family=fam.family, ratio_band=band.ratio, value_band=band.value,
                 source=band.source, note=band.note, causes=found)


def facts_for(device: str, facts: tuple[GpuFacts, ...]) -> GpuFacts | None:
    m = re.fullmatch(r"cuda:(\d+)", device)
    if not m:
        return None
    index = int(m[1])
    for f in facts:
        if f.cuda_index == index:
            return f
    return facts[index] if len(facts) == 1 and index == 0 and facts[0].cuda_index is None else None


def _link(indices: list[int], facts: tuple[GpuFacts, ...]) -> tuple[str | None, list[str]]:
    """How the GPUs of an all-reduce reach each other, from NVML's P2P status between every pair: "nvlink", "pcie"
    (P2P, not over NVLink), "none" (P2P off: NCCL copies through host memory), or None (NVML did not say); and the
    words for each pair without NVLink."""
    by_cuda = {f.cuda_index: f for f in facts if f.cuda_index is not None}
    if not all(i in by_cuda for i in indices):
        return None, []
    nvml_to_cuda = {f.nvml_index: f.cuda_index for f in facts if f.nvml_index is not None}
    links: list[str] = []
    words: list[str] = []
    for i in indices:
        for j in indices:
            if j <= i:
                continue
            peer = next((p for p in by_cuda[i].peers if nvml_to_cuda.get(p[0]) == j), None)
            if peer is None or (peer[1] is None and peer[2] is None):
                return None, []
            _, read, nvlink = peer
            if nvlink == 0:
                links.append("nvlink")
                continue
            why = _P2P_WORDS.get(nvlink, f"status {nvlink}") if nvlink is not None else "not read"
            if read == 0:
                links.append("pcie")
                words.append(f"no NVLink between cuda:{i} and cuda:{j} (NVML's P2P status over NVLink: {why}): "
                             "P2P over PCIe")
            else:
                links.append("none")
                rwhy = _P2P_WORDS.get(read, f"status {read}") if read is not None else "not read"
                words.append(f"P2P is off between cuda:{i} and cuda:{j} (NVML's P2P read status: {rwhy}; over "
                             f"NVLink: {why}): NCCL copies through host memory")
    kind = "none" if "none" in links else "pcie" if "pcie" in links else "nvlink"
    return kind, words


def judge_allreduce(device: str, value: float | None, message_bytes: int | None,
                    gpus: dict[str, tuple[str, str]], bands: Bands | None,
                    facts: tuple[GpuFacts, ...], host_link: Callable[[], tuple[str, str] | None] | None = None,
                    ) -> Speed | None:
    """The NCCL all-reduce's bus bandwidth (row "cuda:0..N-1") against the band for N GPUs of its family over the
    link NVML reports between them; outside it, the cause: a GPU busy, a link down, P2P off. `host_link`: asked only
    when the runner's NVML gave no link — host detection's (kind, words) for a link every pair of GPUs shares."""
    if value is None:
        return None
    m = re.fullmatch(r"cuda:(\d+)\.\.(\d+)", device)
    if bands is None or m is None:
        return Speed(verdict="no-band", detail="no speed bands in this installation" if bands is None else
                     "the GPUs of this row are not known")
    indices = list(range(int(m[1]), int(m[2]) + 1))
    names = [gpus.get(f"cuda:{i}") for i in indices]
    if any(n is None for n in names):
        return Speed(verdict="no-band", detail="the GPUs of this row are not known")
    fams = {bands.family(n[0], n[1]) for n in names if n is not None}
    fam = fams.pop() if len(fams) == 1 else None
    if fam is None:
        kinds = ", ".join(sorted({n[0] for n in names if n is not None}))
        return Speed(verdict="no-band", detail=f"no band for an all-reduce across these GPUs ({kinds}): "
                     "compat/bands.toml has all-reduce bands for " + (", ".join(sorted(
                         {f"{b.gpus} {b.family} over {b.link}" for b in bands.bands if b.gpus})) or "none"))
    n = len(indices)
    link, link_words = _link(indices, facts)
    said_by = "NVML's P2P status (the runner)"
    if link is None and host_link is not None:
        found = host_link()
        if found is not None:
            link, said_by = found
            link_words = [] if link == "nvlink" else [f"between every pair of GPUs: {said_by}"]
    if link is None:
        return Speed(verdict="no-band", family=fam.family, detail=f"the link between the {n} GPUs is not known "
                     "(NVML did not give their P2P status, nor host detection one link for every pair), so no "
                     "all-reduce band applies")
    band = bands.band(fam.family, "nccl_all_reduce", "fp32", gpus=n, link=link)
    if band is None:
        over = {"nvlink": "NVLink", "pcie": "PCIe (P2P)", "none": "host memory (P2P off)"}[link]
        return Speed(verdict="no-band", family=fam.family, causes=tuple(link_words), link=link, link_source=said_by,
                     detail=f"no run has measured the all-reduce of {n} {fam.family} over {over}, so compat/bands.toml "
                     "has no band for it" + (f": {link_words[0]}" if link_words else ""))
    if band.message_bytes != message_bytes:
        return Speed(verdict="no-band", family=fam.family, link=link, link_source=said_by,
                     detail=f"the band is for a {(band.message_bytes or 0) / 2**20:g} MiB all-reduce, this one "
                     f"reduced {(message_bytes or 0) / 2**20:g} MiB")
    assert band.value is not None
    lo, hi = band.value
    unit = band.metric
    said = " (band inferred: from NVIDIA's NVLink figure and a single run, not repeated runs)" if band.inferred else ""
    mib = (band.message_bytes or 0) / 2**20
    words = f"{value:,.0f} {unit} bus bandwidth at {mib:g} MiB (band {lo:,.0f}–{hi:,.0f}){said}"
    if said_by != "NVML's P2P status (the runner)":
        words += f"; the link as host detection read it: {said_by}"
    verdict = "slow" if value < lo else "fast" if value > hi else "ok"
    if verdict == "slow":
        words = f"{value:,.0f} {unit} below {lo:,.0f} — {words}"
    elif verdict == "fast":
        words = f"{value:,.0f} {unit} above {hi:,.0f} — {words}"
    found_causes: list[str] = []
    if verdict != "ok":
        for i in indices:
            f = facts_for(f"cuda:{i}", facts)
            found_causes += [f"cuda:{i}: {c}" for c in causes(f)] if f is not None else []
    return Speed(verdict=verdict, detail=words, family=fam.family, value_band=band.value, source=band.source,
                 note=band.note, causes=tuple(found_causes), inferred=band.inferred, link=link, link_source=said_by)
