"""The decision for targets whose GPUs are AMD (ROCm builds) or Intel (XPU builds): pure, no network, no host."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from tritonlock.decide.matrix import Matrix, TorchRelease
from tritonlock.decide.matrix_vendor import (RocmBuild, VendorMatrix, XpuBuild, gfx_from_override, isa_major,
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
        problems: list[str] = []
        runnable: list[tuple[RocmBuild, list[str], list[str]]] = []
        for b in builds:
            if self.t.glibc and Version(self.t.glibc) < Version(b.glibc):
                problems.append(f"{b.backend} wheels ({b.wheel_tag}) need glibc >= {b.glibc}; this target has "
                                f"{self.t.glibc}")
                continue
            missing = [g for g in self.gpus if self.effective[g] not in b.gfx]
            if missing:
                shown = [g if self.effective[g] == g else f"{g} (as {self.effective[g]})" for g in missing]
                problems.append(f"{b.backend} carries code for {_range(b.gfx)}, not for {', '.join(shown)}")
                continue
            reasons: list[str] = []
            warns: list[str] = []
            if self.t.amdgpu:
                ok = self.vm.amdgpu_supports(self.t.amdgpu, b.rocm)
                if ok is False:
                    least = self.vm.least_amdgpu_for(b.rocm)
                    need = f"; amdgpu {least.release} or newer supports it" if least else ""
                    problems.append(f"{b.backend}: the ROCm {b.rocm} user space is not supported on amdgpu driver "
                                    f"{self.t.amdgpu} (AMD's amdgpu support matrix){need}")
                    continue
                if ok:
                    d = self.vm.amdgpu_release(self.t.amdgpu)
                    reasons.append(f"amdgpu driver {self.t.amdgpu} (release {d.release if d else '?'}) supports the "
                                   f"ROCm {b.rocm} user space (AMD's amdgpu support matrix)")
                else:
                    warns.append(f"amdgpu driver {self.t.amdgpu} is not in the matrix: not checked against ROCm "
                                 f"{b.rocm}")
            else:
                least = self.vm.least_amdgpu_for(b.rocm)
                warns.append(f"the amdgpu kernel driver is not stated: {b.backend} needs one that supports the ROCm "
                             f"{b.rocm} user space" + (f" (amdgpu {least.release} or newer, AMD's support matrix)"
                                                       if least else "") + "; set amdgpu on the target to check it")
            runnable.append((b, reasons, warns))
        if not runnable:
            return _Fit(problem="; ".join(dict.fromkeys(problems)),
                        kind="gpu" if all(" carries code for " in p for p in problems) else "build")
        stable = [x for x in runnable if x[0].stable]
        b, reasons, warns = (stable or runnable)[0]
        gpus = ", ".join(self.gpus)
        first = [f"{b.backend}: the stable ROCm variant of torch {release.version} (RELEASE.md \"Stable ROCm\")"
                 if b.stable else
                 f"{b.backend}: the newest ROCm variant of torch {release.version} that runs here; the stable one "
                 f"does not ({'; '.join(p for p in problems) or 'not published for this platform'})"]
        first.append(f"{b.backend} carries native code for {gpus}" + (
            "" if not self.override else f" (through HSA_OVERRIDE_GFX_VERSION={self.t.hsa_override}: {self.override})")
            + f" (PYTORCH_ROCM_ARCH {_range(b.gfx)}; no cross-target compatibility on AMD GPUs)")
        if b.bundles_runtime:
            first.append(f"the {b.backend} wheels bundle the ROCm {b.rocm} user space (HIP, rocBLAS, MIOpen, RCCL): "
                         "only the amdgpu kernel driver comes from the host")
        tri = self._triton(release, pythons[0], b.triton_package, ("linux_x86_64",), "amd")
        if tri.problem:
            return tri
        return _Fit(backend=b.backend, python=pythons[0], gfx=b.gfx, triton_package=tri.triton_package,
                    triton=tri.triton, reasons=tuple(first + reasons + list(tri.reasons)),
                    warnings=tuple(warns + list(tri.warnings)))

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
                   f"({', '.join(self.family(g) for g in self.gpus)})"]
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
                which: str) -> _Fit:
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
                   f"{'ROCm' if which == 'amd' else 'XPU'} wheels require, from the same PyTorch index"]
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
            reasons.append(f"Triton {pin}'s AMD backend compiles for {', '.join(sorted(set(self.effective.values())))}")
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
        for release in self.m.torch:
            if Version(release.version) not in spec:
                continue
            tried.append(release)
            fit = self.fit(release)
            if fit.problem:
                skipped.append((release.version, fit.problem))
                if fit.kind == "triton":
                    passed_triton.append((release.version, fit.problem))
                continue
            return self._selection(release, fit, skipped, passed_triton)
        if not tried:
            return self._conflict([f"no torch release in the matrix matches torch = {self.intent.torch!r}"],
                                  "loosen torch in triton-env.toml")
        return self._conflict(grouped(skipped) + self._since_lines(tried), self._hint(tried, bool(passed_triton)))

    def _unbuilt(self) -> list[str]:
        """GPUs no build in the matrix covers at all (their code, or the override's)."""
        if self.which == "amd":
            return [g for g in self.gpus if self.vm.first_series_with(self.effective[g]) is None]
        return [g for g in self.gpus if self.vm.first_xpu_series_with(g) is None]

    def _since_lines(self, tried: list[TorchRelease]) -> list[str]:
        """'gfx950 is in ROCm builds from torch 2.8' for every GPU the tried releases lack."""
        out: list[str] = []
        for g in self.gpus:
            eff = self.effective[g] if self.which == "amd" else g
            first = self.vm.first_series_with(eff) if self.which == "amd" else self.vm.first_xpu_series_with(g)
            if first is None:
                continue
            newest = max((Version(r.version) for r in tried))
            if Version(first) > Version(f"{newest.major}.{newest.minor}"):
                what = "ROCm builds" if self.which == "amd" else "the XPU builds"
                out.append(f"{eff} is in {what} from torch {first}")
        return out

    def _hint(self, tried: list[TorchRelease], triton_blocked: bool) -> str:
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
                    hints.append(f"allow torch {op} {r.version} (torch = \"{op}{r.version}\" in triton-env.toml)")
                    break
        if self.which == "amd" and self.t.amdgpu:
            hints.append("update the amdgpu kernel driver (amdgpu-install), then set amdgpu on the target")
        if self.t.glibc:
            hints.append("a newer Linux (glibc) for this target")
        if self.intent.triton != "none" and triton_blocked:
            hints.append('set triton = "none" (torch runs on this GPU, its Triton does not)')
        hints.append('set cuda = "cpu" for the CPU build')
        return " or ".join(hints)

    def _selection(self, release: TorchRelease, fit: _Fit, skipped: list[tuple[str, str]],
                   passed_triton: list[tuple[str, str]]) -> Selection:
        what = "ROCm" if self.which == "amd" else "XPU"
        reasons = [f"torch {release.version}: the newest release whose {what} build runs on "
                   f"{', '.join(self.gpus)}" + (f" within torch = {self.intent.torch!r}" if self.intent.torch else "")]
        reasons += [f"  passed over: {line}" for line in grouped(skipped)]
        reasons += list(fit.reasons)
        reasons.append(self._python_reason(fit.python, release.version))
        warns = list(self.warnings) + list(fit.warnings)
        if passed_triton:
            warns.append(f"newer torch {passed_triton[-1][0]}–{passed_triton[0][0]} has a {what} build for this GPU "
                         f"but its Triton does not support it ({passed_triton[0][1]}); the lock holds the newest torch "
                         "whose Triton works here")
        return Selection(target=self.t, ok=True, python=fit.python, torch=release.version, backend=fit.backend,
                         index=self._index(fit.backend), triton_package=fit.triton_package, triton=fit.triton,
                         packages=self.intent.packages, archs=fit.gfx, warnings=tuple(dict.fromkeys(warns)),
                         reasons=tuple(reasons))

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


