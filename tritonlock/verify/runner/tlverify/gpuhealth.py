# tritonlock verify runner: runs in the target venv without tritonlock (stdlib, torch and triton only).
"""What NVML says about each GPU while verify runs: the facts a slow timing is explained by.

NVML is the driver's own library (libnvidia-ml.so.1, nvml.dll), called through ctypes: the runner imports nothing
beyond torch, triton and the standard library, and a target venv need not hold nvidia-ml-py. A thread started with
the runner takes a first look before this process touches the GPU (other processes then on the GPU are not ours,
and its utilisation is theirs), samples clocks, clock-event reasons, power, temperature and the PCIe link while the
kernels are timed, and takes a last look at the end (processes, ECC counters). Nothing here judges anything:
tritonlock's verify/speed.py reads these facts against the expected bands and names the likely cause.

Every reading that NVML refuses (not supported on this GPU, not permitted in a VM) is simply absent.
"""

# mypy: disable-error-code="no-untyped-def,import-not-found,unused-ignore"

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from typing import Any

SAMPLE_SECONDS = 0.02
# nvmlClocksEventReason* bits (nvml.h; nvidia-ml-py's pynvml.py names the same values)
REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
           0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
           0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}
CLOCK_GRAPHICS, CLOCK_SM, CLOCK_MEM = 0, 1, 2
CLOCK_ID_CURRENT, CLOCK_ID_APP_TARGET, CLOCK_ID_APP_DEFAULT, CLOCK_ID_BOOST_MAX = 0, 1, 2, 3
NVLINK_MAX_LINKS = 18  # Hopper has 18; NVML answers "not supported" past a GPU's own count
INSUFFICIENT_SIZE = 7


class _Process(ctypes.Structure):
    # nvmlProcessInfo_v2_t, which the _v3 calls take too
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong), ("gpuInstanceId", ctypes.c_uint),
                ("computeInstanceId", ctypes.c_uint)]


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class Nvml:
    """The few NVML calls verify reads, each answering None when NVML says no."""

    def __init__(self) -> None:
        names = ["nvml.dll"] if os.name == "nt" else ["libnvidia-ml.so.1", "libnvidia-ml.so"]
        if os.name != "nt" and os.path.isdir("/usr/lib/wsl/lib"):
            names.insert(0, "/usr/lib/wsl/lib/libnvidia-ml.so.1")
        self.lib: Any = None
        for name in names:
            try:
                self.lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if self.lib is None:
            raise OSError("libnvidia-ml not found")
        init = getattr(self.lib, "nvmlInit_v2", None) or self.lib.nvmlInit
        rc = init()
        if rc != 0:
            raise OSError(f"nvmlInit returned {rc}")

    def _fn(self, name: str) -> Any:
        return getattr(self.lib, name, None)

    def rc(self, name: str, *args: Any) -> int | None:
        fn = self._fn(name)
        return None if fn is None else int(fn(*args))

    def uint(self, name: str, *args: Any) -> int | None:
        v = ctypes.c_uint()
        return v.value if self.rc(name, *args, ctypes.byref(v)) == 0 else None

    def ulonglong(self, name: str, *args: Any) -> int | None:
        v = ctypes.c_ulonglong()
        return v.value if self.rc(name, *args, ctypes.byref(v)) == 0 else None

    def text(self, name: str, *args: Any) -> str | None:
        buf = ctypes.create_string_buffer(96)
        return buf.value.decode(errors="replace") if self.rc(name, *args, buf, ctypes.c_uint(96)) == 0 else None

    def count(self) -> int:
        return self.uint("nvmlDeviceGetCount_v2") or self.uint("nvmlDeviceGetCount") or 0

    def handle(self, index: int) -> Any:
        h = ctypes.c_void_p()
        fn = "nvmlDeviceGetHandleByIndex_v2" if self._fn("nvmlDeviceGetHandleByIndex_v2") else \
            "nvmlDeviceGetHandleByIndex"
        return h if self.rc(fn, ctypes.c_uint(index), ctypes.byref(h)) == 0 else None

    def processes(self, h: Any) -> list[dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}
        for name in ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v3"):
            fn = self._fn(name) or self._fn(name.replace("_v3", "_v2"))
            if fn is None:
                continue
            n = ctypes.c_uint(0)
            rc = int(fn(h, ctypes.byref(n), None))
            if rc == 0 or rc != INSUFFICIENT_SIZE:
                continue
            n.value = n.value * 2 + 4
            arr = (_Process * n.value)()
            if int(fn(h, ctypes.byref(n), arr)) != 0:
                continue
            for p in arr[:n.value]:
                used = None if p.usedGpuMemory >= (1 << 63) else int(p.usedGpuMemory) // (1 << 20)
                out.setdefault(int(p.pid), {"pid": int(p.pid), "used_mib": used, "name": _comm(int(p.pid))})
        return sorted(out.values(), key=lambda p: p["pid"])

    def utilization(self, h: Any) -> int | None:
        u = _Utilization()
        return int(u.gpu) if self.rc("nvmlDeviceGetUtilizationRates", h, ctypes.byref(u)) == 0 else None

    def reasons(self, h: Any) -> int | None:
        v = self.ulonglong("nvmlDeviceGetCurrentClocksEventReasons", h)
        return v if v is not None else self.ulonglong("nvmlDeviceGetCurrentClocksThrottleReasons", h)


def _comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip() or None
    except OSError:
        return None


def reason_names(bits: int | None) -> list[str]:
    return [] if not bits else [n for b, n in sorted(REASONS.items()) if bits & b]


def static_facts(nv: Nvml, h: Any) -> dict[str, Any]:
    """What does not change while verify runs (limits, modes, the link's maximum), and the first look."""
    d: dict[str, Any] = {
        "name": nv.text("nvmlDeviceGetName", h), "uuid": nv.text("nvmlDeviceGetUUID", h),
        "power_limit_w": _w(nv.uint("nvmlDeviceGetEnforcedPowerLimit", h)),
        "power_default_w": _w(nv.uint("nvmlDeviceGetPowerManagementDefaultLimit", h)),
        "sm_clock_max": nv.uint("nvmlDeviceGetMaxClockInfo", h, CLOCK_SM),
        "mem_clock_max": nv.uint("nvmlDeviceGetMaxClockInfo", h, CLOCK_MEM),
        "sm_clock_default": nv.uint("nvmlDeviceGetClock", h, CLOCK_SM, CLOCK_ID_APP_DEFAULT),
        "sm_clock_app": nv.uint("nvmlDeviceGetClock", h, CLOCK_SM, CLOCK_ID_APP_TARGET),
        "mem_clock_default": nv.uint("nvmlDeviceGetClock", h, CLOCK_MEM, CLOCK_ID_APP_DEFAULT),
        "pcie_gen_max": nv.uint("nvmlDeviceGetMaxPcieLinkGeneration", h),
        "pcie_gen_gpu_max": nv.uint("nvmlDeviceGetGpuMaxPcieLinkGeneration", h),
        "pcie_width_max": nv.uint("nvmlDeviceGetMaxPcieLinkWidth", h),
        "temp_slowdown_c": nv.uint("nvmlDeviceGetTemperatureThreshold", h, 1),  # NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
        "utilization_before": nv.utilization(h),
        "processes_before": nv.processes(h),
        "ecc_uncorrected_volatile": nv.ulonglong("nvmlDeviceGetTotalEccErrors", h, 1, 0),
    }
    cur, pending = ctypes.c_uint(), ctypes.c_uint()
    if nv.rc("nvmlDeviceGetMigMode", h, ctypes.byref(cur), ctypes.byref(pending)) == 0:
        d["mig"] = bool(cur.value)
    ecc_cur, ecc_pending = ctypes.c_uint(), ctypes.c_uint()
    if nv.rc("nvmlDeviceGetEccMode", h, ctypes.byref(ecc_cur), ctypes.byref(ecc_pending)) == 0:
        d["ecc_enabled"] = bool(ecc_cur.value)
    rows = [ctypes.c_uint() for _ in range(4)]
    if nv.rc("nvmlDeviceGetRemappedRows", h, *(ctypes.byref(r) for r in rows)) == 0:
        d["remapped_rows_pending"] = bool(rows[2].value)
        d["remapped_rows_failed"] = bool(rows[3].value)
    links = []
    for link in range(NVLINK_MAX_LINKS):
        state = nv.uint("nvmlDeviceGetNvLinkState", h, ctypes.c_uint(link))
        if state is None:
            continue
        links.append(bool(state))
    if links:
        d["nvlink_links"] = len(links)
        d["nvlink_active"] = sum(links)
    return {k: v for k, v in d.items() if v is not None}


def sample(nv: Nvml, h: Any) -> dict[str, Any]:
    return {"sm": nv.uint("nvmlDeviceGetClockInfo", h, CLOCK_SM), "mem": nv.uint("nvmlDeviceGetClockInfo", h, CLOCK_MEM),
            "reasons": nv.reasons(h), "power": _w(nv.uint("nvmlDeviceGetPowerUsage", h)),
            "temp": nv.uint("nvmlDeviceGetTemperature", h, 0), "util": nv.utilization(h),
            "pcie_gen": nv.uint("nvmlDeviceGetCurrPcieLinkGeneration", h),
            "pcie_width": nv.uint("nvmlDeviceGetCurrPcieLinkWidth", h)}


def summarise(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The samples taken while the kernels ran, where the GPU was busy (NVML's idle reason not set)."""
    busy = [s for s in samples if s.get("reasons") is None or not (s["reasons"] & 0x1)]
    out: dict[str, Any] = {"samples": len(samples), "busy_samples": len(busy)}
    for key, name in (("sm", "sm_clock"), ("mem", "mem_clock"), ("power", "power_w"), ("temp", "temp_c"),
                      ("pcie_gen", "pcie_gen"), ("pcie_width", "pcie_width"), ("util", "utilization")):
        vals = sorted(s[key] for s in busy if s.get(key) is not None)
        if vals:
            out[f"{name}_min"], out[f"{name}_median"], out[f"{name}_max"] = vals[0], vals[len(vals) // 2], vals[-1]
    seen = 0
    counts: dict[str, int] = {}
    for s in busy:
        bits = s.get("reasons") or 0
        seen |= bits
        for n in reason_names(bits):
            counts[n] = counts.get(n, 0) + 1
    out["reasons"] = reason_names(seen)
    # the share of busy samples in which each reason held: a power cap for one sample in fifty is not a cause
    out["reason_share"] = {n: round(c / len(busy), 3) for n, c in sorted(counts.items())} if busy else {}
    return out


def _w(mw: int | None) -> float | None:
    return None if mw is None else round(mw / 1000.0, 1)


def own_pids() -> set[int]:
    """This process and its descendants (the torch.compile process, compile workers), from /proc."""
    me = os.getpid()
    if not sys.platform.startswith("linux"):
        return {me}
    parent: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {me}
    for e in entries:
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat", encoding="utf-8", errors="replace") as f:
                parent[int(e)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    out, todo = {me}, [me]
    while todo:
        p = todo.pop()
        for child, pp in parent.items():
            if pp == p and child not in out:
                out.add(child)
                todo.append(child)
    return out


class Monitor:
    """NVML in a thread of its own: a first look at once, samples while `timing()` is on, a last look at `stop()`.
    Facts come back from `facts()` as plain JSON (one entry per NVML device), or an error string."""

    def __init__(self) -> None:
        self._on = threading.Event()
        self._done = threading.Event()
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self.error: str | None = None
        self.devices: list[dict[str, Any]] = []
        self._samples: list[list[dict[str, Any]]] = []
        self._handles: list[Any] = []
        self._nv: Nvml | None = None
        self.started = time.time()
        self._thread = threading.Thread(target=self._run, name="gpu-health", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            nv = Nvml()
            n = nv.count()
            handles = [nv.handle(i) for i in range(n)]
            devices = [dict(static_facts(nv, h), nvml_index=i) if h is not None else {"nvml_index": i}
                       for i, h in enumerate(handles)]
        except Exception as e:  # noqa: BLE001 - no NVML here: the report says why, verify goes on
            self.error = f"{type(e).__name__}: {e}"
            self._ready.set()
            return
        with self._lock:
            self._nv, self._handles, self.devices = nv, handles, devices
            self._samples = [[] for _ in handles]
        self._ready.set()
        while not self._done.is_set():
            if not self._on.wait(0.05):
                continue
            for i, h in enumerate(handles):
                if h is not None:
                    s = sample(nv, h)
                    with self._lock:
                        self._samples[i].append(s)
            self._done.wait(SAMPLE_SECONDS)

    def gpu_count(self, timeout: float = 2.0) -> int | None:
        """How many GPUs NVML sees (None: NVML did not answer in time, or is not here)."""
        self._ready.wait(timeout)
        return None if self.error or not self._ready.is_set() else len(self.devices)

    def timing(self, on: bool) -> None:
        (self._on.set if on else self._on.clear)()

    def stop(self) -> None:
        self._on.clear()
        self._done.set()
        self._thread.join(timeout=2)

    def facts(self, cuda_uuids: list[str | None] | None = None) -> dict[str, Any]:
        """{"devices": [...]} or {"error": "..."}; each device with its CUDA index where the UUIDs say which it is."""
        if self.error is not None:
            return {"error": self.error}
        if not self._ready.is_set():
            return {"error": "NVML did not answer"}
        mine = own_pids()
        out = []
        with self._lock:
            devices = [dict(d) for d in self.devices]
            samples = [list(s) for s in self._samples]
        by_uuid = {u: i for i, u in enumerate(cuda_uuids or []) if u}
        for i, d in enumerate(devices):
            h = self._handles[i] if i < len(self._handles) else None
            if h is not None and self._nv is not None:
                d["processes_after"] = self._nv.processes(h)
                after = self._nv.ulonglong("nvmlDeviceGetTotalEccErrors", h, 1, 0)
                if after is not None:
                    d["ecc_uncorrected_volatile_after"] = after
            d["during"] = summarise(samples[i]) if i < len(samples) else {}
            if d.get("uuid") in by_uuid:
                d["cuda_index"] = by_uuid[d["uuid"]]
            out.append(d)
        peers = self._peers()
        for d, p in zip(out, peers):
            if p:
                d["peers"] = p
        return {"devices": out, "own_pids": sorted(mine)}

    def _peers(self) -> list[list[dict[str, Any]]]:
        """Per device, NVML's P2P status towards every other one (nvmlDeviceGetP2PStatus: 0 is OK; the index is
        NVML's nvmlGpuP2PCapsIndex_t, READ 0 and NVLINK 2): which link the all-reduce had."""
        nv, handles = self._nv, self._handles
        out: list[list[dict[str, Any]]] = [[] for _ in handles]
        if nv is None or len(handles) < 2:
            return out
        for i, a in enumerate(handles):
            for j, b in enumerate(handles):
                if i == j or a is None or b is None:
                    continue
                entry: dict[str, Any] = {"nvml_index": j}
                for key, index in (("p2p_read", 0), ("p2p_nvlink", 2)):
                    status = ctypes.c_uint()
                    if nv.rc("nvmlDeviceGetP2PStatus", a, b, ctypes.c_uint(index), ctypes.byref(status)) == 0:
                        entry[key] = int(status.value)
                out[i].append(entry)
        return out


def cuda_uuid(torch: Any, index: int) -> str | None:
    """The UUID CUDA gives a device ("GPU-…" as NVML spells it), where this torch says it."""
    try:
        u = torch.cuda.get_device_properties(index).uuid
    except Exception:  # noqa: BLE001 - an older torch without it
        return None
    text = str(u)
    return text if text.startswith("GPU-") else "GPU-" + text
