"""The decision for targets whose GPUs are AMD (ROCm builds) or Intel (XPU builds): pure, no network, no host."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from tritonlock.compat.matrix import Matrix
from tritonlock.compat.rows import TorchRelease
from tritonlock.compat.matrix_vendor import (RocmBuild, VendorMatrix, XpuBuild, gfx_from_override, isa_major,
                                      load_vendor_matrix, target_vendor)
from tritonlock.decide._words import grouped
from tritonlock.models import Conflict, Intent, Selection, TargetSpec

_PLATFORM = {("linux", "x86_64"): "linux_x86_64", ("linux", "aarch64"): "linux_aarch64",
             ("windows", "x86_64"): "win_amd64"}


def vendor(target: TargetSpec) -> str | None:
    """'amd' or 'intel' when this target is for this module; None for NVIDIA and CPU targets."""
    v = target_vendor(target.gpus)
    return v if v in ("amd", "intel") else None


# The CPU build of a machine (the CUDA resolver, given by the caller: resolve imports this module, not the reverse).
CpuResolver = Callable[[Intent, TargetSpec], Selection]


def resolve_vendor(intent: Intent, matrix: Matrix, target: TargetSpec, default_python: str, *,
                   cpu: CpuResolver, vm: VendorMatrix | None = None) -> Selection | None:
    """The Selection of an AMD or Intel target; None for any other target (the CUDA resolver decides those).
    `cpu` decides the CPU build for a GPU no build covers (and cuda = "cpu")."""
    which = vendor(target)
    if which is None:
        return None
    r = _Vendor(intent, matrix, vm or load_vendor_matrix(), target, default_python, which, cpu)
    return r.run()


def release_problem_vendor(intent: Intent, matrix: Matrix, target: TargetSpec, release: TorchRelease,
                           default_python: str) -> str | None:
    """Why one torch release does not fit an AMD/Intel target (None when it fits)."""
    which = vendor(target)
    if which is None:
        return None
    r = _Vendor(intent, matrix, load_vendor_matrix(), target, default_python, which, _no_cpu)
    fit = r.fit(release)
    return fit.problem


@dataclass(frozen=True, kw_only=True, slots=True)
class _Fit:
    backend: str = ""
    python: str = ""
    gfx: tuple[str, ...] = ()  # the build's targets (AMD) or devices (Intel)
    triton_package: str | None = None
    triton: str | None = None
    reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    problem: str | None = None
    kind: str = ""  # the problem's kind: "gpu" (no code for a GPU), "triton", "python", "glibc", "driver", ...
    unsure: tuple[str, ...] = ()  # the target's GPUs whose code in the chosen build is inferred (gfx_inferred)
    unsure_words: str = ""  # "gfx1103 in torch 2.13's rocm7.2 build is inferred (…)"
    # builds passed over for the amdgpu kernel driver alone: (backend, the least newer driver release that supports
    # it, or "" when none newer does)
    driver_held: tuple[tuple[str, str], ...] = ()
    kinds: tuple[str, ...] = ()  # the kinds of every build's problem ("glibc", "driver", "gpu")


def _range(names: tuple[str, ...]) -> str:
    return f"{names[0]}…{names[-1]}" if len(names) > 2 else ", ".join(names)


def _no_cpu(intent: Intent, target: TargetSpec) -> Selection:
    raise AssertionError("release_problem_vendor never asks for the CPU build")


class _Vendor:
    def __init__(self, intent: Intent, matrix: Matrix, vm: VendorMatrix, target: TargetSpec, default_python: str,
                 which: str, cpu: CpuResolver) -> None:
        self.intent, self.m, self.vm, self.t, self.which = intent, matrix, vm, target, which
        self.cpu_resolver = cpu
        self.default_python = default_python
        self.python = target.python or intent.python or default_python
        self.platform = _PLATFORM.get((target.os, target.arch), f"{target.os}_{target.arch}")
        self.warnings: list[str] = []
        self.gpus = tuple(sorted(set(target.gpus), key=lambda g: (len(g), g)))
        # HSA_OVERRIDE_GFX_VERSION, an explicit opt-in only: every GPU of the override's ISA generation runs the
        # code of the override's target instead of its own (never across generations: intent refuses that).
        self.override = gfx_from_override(target.hsa_override) if target.hsa_override and which == "amd" else None
        self.effective: dict[str, str] = {}
        for g in self.gpus:
            if self.override and isa_major(g) == isa_major(self.override):
                self.effective[g] = self.override
            else:
                self.effective[g] = g

    # ---- what a GPU needs
    def _pythons(self, release: TorchRelease) -> list[str]:
        have = release.pythons(self.platform) or release.python
        spec = self.python
        if spec and spec[0].isdigit():
            return [spec] if spec in have else []
        try:
            s = SpecifierSet(spec) if spec else SpecifierSet()
        except InvalidSpecifier:
            return []
        return sorted((p for p in have if Version(p) in s), key=Version, reverse=True)

    def fit(self, release: TorchRelease) -> _Fit:
        pythons = self._pythons(release)
        if not pythons:
            on = release.pythons(self.platform) or release.python
            return _Fit(problem=f"supports Python {on[0]}–{on[-1]}, not {self.python}", kind="python")
        if self.which == "amd":
            return self._fit_rocm(release, pythons)
        return self._fit_xpu(release, pythons)

    def _fit_rocm(self, release: TorchRelease, pythons: list[str]) -> _Fit:
        builds = [b for b in self.vm.rocm_builds(release.version) if self.platform in b.platforms]
        if not builds:
            if self.platform != "linux_x86_64":
                return _Fit(problem=f"PyTorch publishes ROCm builds for linux_x86_64 only, not {self.platform}",
                            kind="platform")
            return _Fit(problem="no ROCm build of it in the matrix (compat/rocm.toml covers torch 2.5 and later)",
                        kind="build")
        problems: list[tuple[str, str]] = []  # (text, kind)
        held: list[tuple[str, str]] = []
        runnable: list[tuple[RocmBuild, list[str], list[str], list[str]]] = []
        for b in builds:
            if self.t.glibc and Version(self.t.glibc) < Version(b.glibc):
                problems.append((f"{b.backend} wheels ({b.wheel_tag}) need glibc >= {b.glibc}; this target has "
                                 f"{self.t.glibc}", "glibc"))
                continue
            missing = [g for g in self.gpus if self.effective[g] not in b.gfx]
            if missing:
                shown = [g if self.effective[g] == g else f"{g} (as {self.effective[g]})" for g in missing]
                problems.append((f"{b.backend} carries code for {_range(b.gfx)}, not for {', '.join(shown)}"
                                 + (f" ({b.inferred()})" if b.inferred() else ""), "gpu"))
                continue
            lacking = [self.effective[g] for g in self.gpus if self.effective[g] in b.gfx_unusable]
            if lacking:
                problems.append((f"{b.backend} lists {', '.join(dict.fromkeys(lacking))} but its bundled ROCm "
                                 f"{b.rocm} libraries have no kernels for {'it' if len(set(lacking)) == 1 else 'them'}"
                                 f" (rocBLAS ships no Tensile library: torch's first matmul aborts; "
                                 f"{b.gfx_unusable_source.split(' ', 1)[0]})", "gpu"))
                continue
            reasons: list[str] = []
            warns: list[str] = []
            if self.t.amdgpu:
                ok = self.vm.amdgpu_supports(self.t.amdgpu, b.rocm)
                if ok is False:
                    text, need = self._driver_problem(b)
                    problems.append((text, "driver"))
                    held.append((b.backend, need))
                    continue
                if ok:
                    reasons.append(self._driver_reason(b))
                else:
                    warns.append(f"amdgpu driver {self.t.amdgpu} is not in the matrix: not checked against ROCm "
                                 f"{b.rocm}")
            else:
                window = self._window_words(b.rocm)
                warns.append(f"the amdgpu kernel driver is not stated: {b.backend} needs one that supports ROCm "
                             f"{b.rocm}" + (f" ({window}, AMD's amdgpu compatibility matrix)" if window else "")
                             + "; set amdgpu on the target to check it")
            unsure = [g for g in self.gpus if self.effective[g] in b.gfx_inferred]
            runnable.append((b, reasons, warns, unsure))
        kinds = tuple(dict.fromkeys(k for _, k in problems))
        if not runnable:
            kind = kinds[0] if len(kinds) == 1 else "build"
            return _Fit(problem="; ".join(dict.fromkeys(p for p, _ in problems)), kind=kind,
                        driver_held=tuple(held), kinds=kinds)
        # a build that surely carries the GPUs' code before one inferred to; then the stable one; then the newest ROCm
        runnable.sort(key=lambda x: (bool(x[3]), not x[0].stable))
        b, reasons, warns, unsure = runnable[0]
        gpus = ", ".join(self.gpus)
        stable_words = (f"taken as the stable ROCm variant of torch {release.version} — {b.stable_note or b.series_note}"
                        if (b.stable_note or b.series_note).startswith("inferred") else
                        f"the stable ROCm variant of torch {release.version} (RELEASE.md \"Stable ROCm\")")
        if b.stable:
            first = [f"{b.backend}: {stable_words}"]
        else:
            why_not = [p for p, _ in problems] or [
                f"its code for {', '.join(x[3])} is inferred" for x in runnable[1:] if x[0].stable and x[3]] or [
                "not published for this platform"]
            first = [f"{b.backend}: the newest ROCm variant of torch {release.version} that runs here; the stable one "
                     f"does not ({'; '.join(why_not)})"]
        first.append(f"{b.backend} carries native code for {gpus}" + (
            "" if not self.override else f" (through HSA_OVERRIDE_GFX_VERSION={self.t.hsa_override}: {self.override})")
            + f" (PYTORCH_ROCM_ARCH {_range(b.gfx)}; no cross-target compatibility on AMD GPUs)"
            + (f" — {b.inferred()}" if b.inferred() else ""))
        words = ""
        if unsure:
            words = (f"{', '.join(self.effective[g] for g in unsure)} in torch {b.torch}'s {b.backend} build is "
                     f"inferred ({b.gfx_inferred_note}); `tritonlock verify` on the machine settles it")
            warns = warns + [words]
        if b.sdk_wheels:
            first.append(f"the {b.backend} wheels take the ROCm {b.rocm} libraries from TheRock's SDK wheels "
                         "(rocm[libraries]: rocm-sdk-core, rocm-sdk-libraries, rocm-sdk-device-<gfx>), locked from the "
                         "same torch index: only the amdgpu kernel driver comes from the host")
        elif b.bundles_runtime:
            first.append(f"the {b.backend} wheels bundle the ROCm {b.rocm} user space (HIP, rocBLAS, MIOpen, RCCL): "
                         "only the amdgpu kernel driver comes from the host")
        tri = self._triton(release, pythons[0], b.triton_package, ("linux_x86_64",), "amd", b.triton_note)
        if tri.problem:  # (whether torch's own code for the GPU is a fact or inferred: the conflict's fix says which)
            return dataclasses.replace(tri, unsure=tuple(unsure), unsure_words=words)
        return _Fit(backend=b.backend, python=pythons[0], gfx=b.gfx, triton_package=tri.triton_package,
                    triton=tri.triton, reasons=tuple(first + reasons + list(tri.reasons)),
                    warnings=tuple(warns + list(tri.warnings)), unsure=tuple(unsure), unsure_words=words,
                    driver_held=tuple(held), kinds=kinds)

    def _driver_reason(self, b: RocmBuild) -> str:
        """'amdgpu driver 6.4 (release 6.4) supports ROCm 7.2 (AMD's amdgpu compatibility matrix)', saying where the
        module-to-release mapping it rests on is inferred."""
        found = self.vm.amdgpu_releases(self.t.amdgpu or "")
        names = " or ".join(d.release for d in found)
        inferred = [d.module_note for d in found if d.module_note.startswith("inferred")]
        by_module = self.t.amdgpu not in {d.release for d in found} and not (self.t.amdgpu or "").startswith(
            tuple(d.release + "." for d in found))
        how = (f"module {self.t.amdgpu}, taken as release {names} ({inferred[0]})" if by_module and inferred
               else f"{self.t.amdgpu} (release {names})")
        return f"amdgpu driver {how} supports ROCm {b.rocm} (AMD's amdgpu compatibility matrix)"

    def _window_words(self, rocm: str) -> str:
        """'amdgpu 6.1–30.30' (AMD's window runs both ways), or 'amdgpu 30.10 or newer' when it reaches the newest."""
        window = self.vm.amdgpu_window(rocm)
        if not window:
            return ""
        newest = self.vm.newest_amdgpu()
        if newest is not None and window[-1].release == newest.release:
            return f"amdgpu {window[0].release} or newer"
        return f"amdgpu {window[0].release}" if len(window) == 1 else f"amdgpu {window[0].release}–{window[-1].release}"

    def _driver_problem(self, b: RocmBuild) -> tuple[str, str]:
        """Why the target's amdgpu driver does not take this build, in words that hold both ways of AMD's window,
        and the least newer driver release that would ("" when the build's ROCm is older than the driver supports)."""
        have = self.vm.amdgpu_release(self.t.amdgpu or "")
        minor = ".".join(b.rocm.split(".")[:2])
        window = self.vm.amdgpu_window(b.rocm)
        newer = self.vm.newer_amdgpu_for(self.t.amdgpu or "", b.rocm)
        span = (f"amdgpu {window[0].release}" if len(window) == 1 else
                f"amdgpu {window[0].release}–{window[-1].release}") if window else "no amdgpu release in the table"
        on = f"; amdgpu {have.release} supports ROCm {have.user_space[0]}–{have.user_space[-1]}" if have else ""
        if newer is not None:
            tail = f"amdgpu {newer.release} or newer supports it"
        else:
            tail = f"it is older than this driver supports ({span} support ROCm {minor})"
        return (f"{b.backend}: ROCm {b.rocm} is not supported on amdgpu driver {self.t.amdgpu} (AMD's amdgpu "
                f"compatibility matrix{on}); {tail}", newer.release if newer else "")

    def _fit_xpu(self, release: TorchRelease, pythons: list[str]) -> _Fit:
        b: XpuBuild | None = self.vm.xpu_build(release.version)
        if b is None:
            return _Fit(problem="no XPU build of it in the matrix (compat/xpu.toml covers torch 2.5 and later)",
                        kind="build")
        if self.platform not in b.platforms:
            return _Fit(problem=f"PyTorch publishes XPU builds for {', '.join(b.platforms)}, not {self.platform}",
                        kind="platform")
        if self.platform.startswith("linux") and self.t.glibc and Version(self.t.glibc) < Version(b.glibc):
            return _Fit(problem=f"xpu wheels need glibc >= {b.glibc}; this target has {self.t.glibc}", kind="glibc")
        missing = [g for g in self.gpus if g not in b.devices]
        if missing:
            return _Fit(problem=f"its xpu build supports {', '.join(b.devices)}, not {', '.join(missing)}", kind="gpu")
        reasons = [f"xpu: the XPU build of torch {release.version} supports {', '.join(self.gpus)} "
                   f"({', '.join(self.family(g) for g in self.gpus)})"
                   + (f" — {b.note}" if b.note.startswith("inferred") else "")]
        tri = self._triton(release, pythons[0], b.triton_package, b.triton_platforms, "intel")
        if tri.problem:
            return tri
        return _Fit(backend="xpu", python=pythons[0], gfx=b.devices, triton_package=tri.triton_package,
                    triton=tri.triton, reasons=tuple(reasons + list(tri.reasons)), warnings=tri.warnings)

    def family(self, g: str) -> str:
        if self.which == "amd":
            a = self.vm.amd_gpu(g)
            return a.family if a else g
        i = self.vm.intel_gpu(g)
        return i.family if i else g

    def _triton(self, release: TorchRelease, python: str, package: str, platforms: tuple[str, ...],
                which: str, note: str = "") -> _Fit:
        want = self.intent.triton
        if want == "none":
            return _Fit(reasons=("triton = 'none' in the intent: no Triton of its own in the decision and no check "
                                 "that Triton works here",))
        pin = release.triton
        if pin is None or self.platform not in platforms:
            return _Fit(warnings=(f"torch {release.version}'s {'ROCm' if which == 'amd' else 'XPU'} wheels for "
                                  f"{self.platform} pin no Triton: the lock has none",))
        if release.triton_python_below and Version(python) >= Version(release.triton_python_below):
            return _Fit(warnings=(f"torch {release.version}'s wheels pin {package} only for Python < "
                                  f"{release.triton_python_below}: on Python {python} the lock has no Triton",))
        if want != "auto":
            try:
                inside = Version(pin) in SpecifierSet(want)
            except InvalidSpecifier:
                inside = False
            if not inside:
                return _Fit(problem=f"its {package} {pin} is outside triton = {want!r}", kind="spec")
        reasons = [f"{package} {pin}: the Triton torch {release.version}'s "
                   f"{'ROCm' if which == 'amd' else 'XPU'} wheels require, from the same PyTorch index"
                   + (f" — the package name is {note}" if note.startswith("inferred") else "")]
        warns: list[str] = []
        if which == "amd":
            for g in self.gpus:
                eff = self.effective[g]
                how = self.vm.triton_amd_support(pin, eff)
                if how is None:
                    return _Fit(problem=(f"its {package} {pin} has no AMD backend support for {eff} (Triton's AMD "
                                         "backend: CDNA 2+ and RDNA 3+)"), kind="triton")
                if how == "runs":
                    warns.append(f"Triton {pin} compiles for {eff} but does not list it as supported (not in "
                                 "Triton's CI): some kernels (tl.dot paths) may fail or be slow")
            row = self.vm.triton_amd_row(pin)
            note = row.note if row is not None and row.note.startswith("inferred") else ""
            reasons.append(f"Triton {pin}'s AMD backend compiles for {', '.join(sorted(set(self.effective.values())))}"
                           + (f" (compat/rocm.toml triton_amd {row.triton} — {note})" if row is not None and note else ""))
        return _Fit(triton_package=package, triton=pin, reasons=tuple(reasons), warnings=tuple(warns))

    # ---- the search
    def run(self) -> Selection:
        spec = SpecifierSet(self.intent.torch) if self.intent.torch else SpecifierSet()
        if self.intent.cuda == "cpu":
            return self._cpu(("cuda = 'cpu' asked for: the CPU build, whatever GPU the target has",), ())
        if self.intent.cuda != "auto":
            self.warnings.append(f"cuda = {self.intent.cuda!r} is about NVIDIA builds: it does not apply to this "
                                 f"{'AMD' if self.which == 'amd' else 'Intel'} target")
        if self.intent.torch_index == "default":
            return self._conflict([f"[indexes] torch = \"default\": the default index (PyPI) publishes no "
                                   f"{'ROCm' if self.which == 'amd' else 'XPU'} build of torch"],
                                  "take torch from PyTorch's index (remove [indexes] torch = \"default\"), or set "
                                  "cuda = \"cpu\"")
        if self.override:
            native = [g for g in self.gpus if self.effective[g] != g and self.vm.first_series_with(g) is not None]
            for g in native:
                self.warnings.append(f"HSA_OVERRIDE_GFX_VERSION={self.t.hsa_override} makes {g} run {self.override} "
                                     f"code although PyTorch builds carry native code for {g} (from torch "
                                     f"{self.vm.first_series_with(g)}): remove hsa-override")
            if self.effective and any(self.effective[g] != g for g in self.gpus):
                self.warnings.append(f"hsa-override = {self.t.hsa_override!r}: "
                                     + ", ".join(f"{g} runs {e} code" for g, e in self.effective.items() if g != e)
                                     + " — an unsupported opt-in: kernels may fail or compute wrong results; set "
                                     "HSA_OVERRIDE_GFX_VERSION to the same value wherever this lock runs")
        unknown = self._unbuilt()
        if unknown:
            what = "ROCm" if self.which == "amd" else "XPU"
            words = ", ".join(f"{g} ({self.family(g)})" for g in unknown)
            hint = (" (an HSA_OVERRIDE_GFX_VERSION of the same ISA generation is the unsupported way out: "
                    "hsa-override on the target)" if self.which == "amd" else "")
            return self._cpu((f"cpu: no PyTorch {what} build carries code for {words}",),
                             (f"GPU {words} is in no PyTorch {what} build in the matrix: the lock holds the CPU "
                              f"build, which does not use the GPU{hint}",))
        skipped: list[tuple[str, str]] = []
        passed_triton: list[tuple[str, str]] = []
        tried: list[TorchRelease] = []
        fits: dict[str, _Fit] = {}
        unsure: tuple[TorchRelease, _Fit] | None = None  # the newest release whose build is only inferred to fit
        for release in self.m.torch:
            if Version(release.version) not in spec:
                continue
            tried.append(release)
            fit = fits[release.version] = self.fit(release)
            if fit.problem:
                skipped.append((release.version, fit.problem))
                if fit.kind == "triton":
                    passed_triton.append((release.version, fit.problem))
                continue
            if fit.unsure and not self._pinned(release):
                # where facts are unsure, the choice that is surely right: an older torch whose build surely
                # carries the GPU's code, else the CPU build — and say what would take this one
                unsure = unsure or (release, fit)
                continue
            return self._selection(release, fit, skipped, passed_triton, fits, unsure)
        if unsure is not None:
            release, fit = unsure
            what = "ROCm" if self.which == "amd" else "XPU"
            take = (f"torch = \"=={release.version}\" in triton-env.toml takes its {fit.backend} build "
                    "(`tritonlock verify` on the machine then settles whether its code runs here)")
            return self._cpu((f"cpu: no PyTorch {what} build surely carries code for {', '.join(self.gpus)}: "
                              f"{fit.unsure_words}",),
                             (f"the lock holds the CPU build, which does not use the GPU: torch {release.version}'s "
                              f"{fit.backend} build is only inferred to carry code for {', '.join(fit.unsure)}; {take}",))
        if not tried:
            return self._conflict([f"no torch release in the matrix matches torch = {self.intent.torch!r}"],
                                  "loosen torch in triton-env.toml")
        return self._conflict(grouped(skipped) + self._since_lines(tried), self._hint(tried, bool(passed_triton), fits))

    def _pinned(self, release: TorchRelease) -> bool:
        """Whether the intent asks for exactly this release (torch = "==2.13.0"): the way to take a build that is
        only inferred to carry the GPU's code."""
        spec = SpecifierSet(self.intent.torch) if self.intent.torch else SpecifierSet()
        return bool(self.intent.torch) and all(s.operator in ("==", "===") for s in spec) and \
            [r.version for r in self.m.torch if Version(r.version) in spec] == [release.version]

    def _unbuilt(self) -> list[str]:
        """GPUs no build in the matrix covers at all (their code, or the override's)."""
        if self.which == "amd":
            return [g for g in self.gpus if self.vm.first_series_with(self.effective[g]) is None]
        return [g for g in self.gpus if self.vm.first_xpu_series_with(g) is None]

    def _since_lines(self, tried: list[TorchRelease]) -> list[str]:
        """'gfx950 is in ROCm builds from torch 2.10' for every GPU the tried releases lack; where that rests on an
        inferred list, it says so."""
        out: list[str] = []
        for g in self.gpus:
            eff = self.effective[g] if self.which == "amd" else g
            first = self.vm.first_series_with(eff) if self.which == "amd" else self.vm.first_xpu_series_with(g)
            if first is None:
                continue
            newest = max((Version(r.version) for r in tried))
            if Version(first) > Version(f"{newest.major}.{newest.minor}"):
                what = "ROCm builds" if self.which == "amd" else "the XPU builds"
                line = f"{eff} is in {what} from torch {first}"
                if self.which == "amd":
                    b = next(b for b in self.vm.rocm if b.torch == first and eff in b.gfx)
                    if eff in b.gfx_inferred:
                        line += f" (inferred: {b.gfx_inferred_note})"
                    elif eff in b.inferred():  # a list note about this very target
                        line += f" ({b.inferred()})"
                out.append(line)
        return out

    def _hint(self, tried: list[TorchRelease], triton_blocked: bool, fits: dict[str, _Fit]) -> str:
        """Only the levers that would change the outcome: a torch range that fits, a newer amdgpu driver that
        supports a tried build, a newer Linux where glibc blocked one, triton = "none", the CPU build."""
        hints: list[str] = []
        if self.intent.torch:
            # the nearest releases outside the range first: the smallest change to the intent
            pos = {r.version: i for i, r in enumerate(self.m.torch)}
            lo, hi = min(pos[r.version] for r in tried), max(pos[r.version] for r in tried)
            outside = sorted((r for r in self.m.torch if r not in tried),
                             key=lambda r: min(abs(pos[r.version] - lo), abs(pos[r.version] - hi)))
            for r in outside:
                fit = self.fit(r)
                if fit.problem is None:
                    op = ">=" if Version(r.version) > Version(tried[0].version) else "<="
                    if fit.unsure:  # only an exact pin takes a build that is inferred to carry the GPU's code
                        hints.append(f"allow torch == {r.version} (torch = \"=={r.version}\" in triton-env.toml; "
                                     f"its code for {', '.join(fit.unsure)} is inferred, `tritonlock verify` on the "
                                     "machine settles it)")
                    else:
                        hints.append(f"allow torch {op} {r.version} (torch = \"{op}{r.version}\" in triton-env.toml)")
                    break
        needs = [need for f in fits.values() for _, need in f.driver_held if need]
        if self.which == "amd" and self.t.amdgpu and needs:
            least = min(needs, key=Version)
            hints.append(f"update the amdgpu kernel driver to {least} or newer (amdgpu-install), then set amdgpu on "
                         "the target")
        if self.t.glibc and any("glibc" in f.kinds or f.kind == "glibc" for f in fits.values()):
            hints.append("a newer Linux (glibc) for this target")
        if self.intent.triton != "none" and triton_blocked:
            blocked = [f for f in fits.values() if f.kind == "triton"]
            if blocked and all(f.unsure for f in blocked):  # torch's code for the GPU is itself only inferred
                hints.append(f'set triton = "none" (its Triton does not run on this GPU, and torch only may: '
                             f"{blocked[0].unsure_words})")
            else:
                hints.append('set triton = "none" (torch runs on this GPU, its Triton does not)')
        hints.append('set cuda = "cpu" for the CPU build')
        return " or ".join(hints)

    def _selection(self, release: TorchRelease, fit: _Fit, skipped: list[tuple[str, str]],
                   passed_triton: list[tuple[str, str]], fits: dict[str, _Fit] | None = None,
                   unsure: tuple[TorchRelease, _Fit] | None = None) -> Selection:
        what = "ROCm" if self.which == "amd" else "XPU"
        reasons = [f"torch {release.version}: the newest release whose {what} build runs on "
                   f"{', '.join(self.gpus)}" + (f" within torch = {self.intent.torch!r}" if self.intent.torch else "")
                   + (" and surely carries its code" if unsure else "")]
        reasons += [f"  passed over: {line}" for line in grouped(skipped)]
        reasons += list(fit.reasons)
        reasons.append(self._python_reason(fit.python, release.version))
        warns = list(self.warnings) + list(fit.warnings)
        if passed_triton:
            warns.append(f"newer torch {passed_triton[-1][0]}–{passed_triton[0][0]} has a {what} build for this GPU "
                         f"but its Triton does not support it ({passed_triton[0][1]}); the lock holds the newest torch "
                         "whose Triton works here")
        if unsure is not None:
            ur, uf = unsure
            warns.append(f"newer torch {ur.version} ({uf.backend}) is only inferred to carry code for "
                         f"{', '.join(uf.unsure)} ({uf.unsure_words}): the lock holds torch {release.version}, whose "
                         f"build surely does; torch = \"=={ur.version}\" in triton-env.toml takes the newer one")
        warns += self._driver_warnings(release, fit, fits or {})
        return Selection(target=self.t, ok=True, python=fit.python, torch=release.version, backend=fit.backend,
                         index=self._index(fit.backend), triton_package=fit.triton_package, triton=fit.triton,
                         packages=self.intent.packages, archs=fit.gfx, warnings=tuple(dict.fromkeys(warns)),
                         reasons=tuple(reasons))

    def _driver_warnings(self, release: TorchRelease, fit: _Fit, fits: dict[str, _Fit]) -> list[str]:
        """What the amdgpu kernel driver holds back, as NVIDIA targets are told of their driver: newer torch whose
        builds run on this GPU but not on this driver, or a better build of the chosen release, and the least newer
        driver that would allow it."""
        if self.which != "amd" or not self.t.amdgpu:
            return []
        out: list[str] = []
        newer = [v for v, f in fits.items() if Version(v) > Version(release.version) and f.problem
                 and any(n for _, n in f.driver_held)]
        if newer:
            # the least newer driver that allows some newer torch, and the one that allows the newest
            least = {v: min((n for _, n in fits[v].driver_held if n), key=Version) for v in newer}
            lo = min(least.values(), key=Version)
            lo_top = max((v for v in newer if Version(least[v]) <= Version(lo)), key=Version)
            have = self.vm.amdgpu_release(self.t.amdgpu)
            on = f" (it supports ROCm {have.user_space[0]}–{have.user_space[-1]})" if have else ""
            span = newer[0] if len(newer) == 1 else f"{newer[-1]}–{newer[0]}"
            unlock = f"amdgpu {lo} or newer (AMD's amdgpu compatibility matrix) would allow torch {lo_top}"
            if lo_top != newer[0]:
                unlock += f", amdgpu {least[newer[0]]} or newer torch {newer[0]}"
            out.append(f"newer torch {span} has ROCm builds for {', '.join(self.gpus)} that amdgpu {self.t.amdgpu} "
                       f"does not support{on}; the lock holds torch {release.version} — {unlock}")
        stable = next((b for b in self.vm.rocm_builds(release.version) if b.stable), None)
        held = dict(fit.driver_held)
        if stable is not None and stable.backend != fit.backend and stable.backend in held:
            need = held[stable.backend]
            out.append(f"torch {release.version}'s stable {stable.backend} build is not supported on amdgpu "
                       f"{self.t.amdgpu}: the lock holds its {fit.backend} build"
                       + (f" — amdgpu {need} or newer (AMD's amdgpu compatibility matrix) would allow {stable.backend}"
                          if need else ""))
        return out

    def _python_reason(self, chosen: str, release: str) -> str:
        if self.t.python:
            origin = (f"target {self.t.name!r} asks for {self.t.python!r}" if self.t.origin == "intent"
                      else "the interpreter tritonlock runs on" if self.t.origin == "host"
                      else f"the Python of the saved machine {self.t.name!r}")
        elif self.intent.python:
            origin = f"[environment].python is {self.intent.python!r}"
        else:
            origin = "the interpreter tritonlock runs on (no python in triton-env.toml)"
        if self.python[:1].isdigit():
            return f"Python {chosen}: {origin}"
        return f"Python {chosen}: the newest that torch {release} supports within {self.python!r} ({origin})"

    def _index(self, backend: str) -> str:
        tmpl = self.intent.torch_index
        if tmpl:
            return tmpl.format(backend=backend) if "{backend}" in tmpl else tmpl
        return self.m.index_url(backend)

    def _cpu(self, reasons: tuple[str, ...], warnings: tuple[str, ...]) -> Selection:
        """The CPU build for this machine (decided by the CUDA resolver on the same target without its GPUs)."""
        plain = dataclasses.replace(self.t, gpus=(), amdgpu=None, hsa_override=None, driver=None, cuda=None)
        intent = dataclasses.replace(self.intent, cuda="cpu")
        sel = self.cpu_resolver(intent, plain)
        if not sel.ok:
            return dataclasses.replace(sel, target=self.t, conflict=dataclasses.replace(
                sel.conflict, target=self.t.name) if sel.conflict else None)
        kept = tuple(r for r in sel.reasons if not r.startswith("cpu: cuda = 'cpu'"))
        return dataclasses.replace(sel, target=self.t, reasons=reasons + kept,
                                   warnings=tuple(self.warnings) + warnings + sel.warnings)

    def _conflict(self, lines: list[str], hint: str) -> Selection:
        desc = describe(self.t, self.python)
        msg = (f"nothing fits target {self.t.name!r} ({desc}):\n" + "\n".join(f"  - {x}" for x in lines)
               + (f"\n  fix: {hint}" if hint else ""))
        return Selection(target=self.t, ok=False, python=None, packages=self.intent.packages,
                         conflict=Conflict(target=self.t.name, message=msg, facts=tuple(lines)), reasons=tuple(lines),
                         warnings=tuple(self.warnings))


def describe(t: TargetSpec, python: str) -> str:
    parts = [f"{t.os}/{t.arch}", f"Python {python}"]
    if t.glibc:
        parts.append(f"glibc {t.glibc}")
    if t.amdgpu:
        parts.append(f"amdgpu {t.amdgpu}")
    if t.hsa_override:
        parts.append(f"HSA_OVERRIDE_GFX_VERSION {t.hsa_override}")
    parts.append("GPUs " + ", ".join(t.gpus))
    return ", ".join(parts)


