"""Pick python, torch, backend and triton per target from intent × matrix; explain conflicts in words."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tritonlock.matrix import Matrix, TorchRelease, Variant, arch_tuple, cc_tuple, gpu_runs
from tritonlock.models import Conflict, Intent, Selection, TargetSpec

_PLATFORM = {("linux", "x86_64"): "linux_x86_64", ("linux", "aarch64"): "linux_aarch64",
             ("windows", "x86_64"): "win_amd64", ("macos", "aarch64"): "macos_arm64",
             ("macos", "arm64"): "macos_arm64"}


def platform_of(target: TargetSpec) -> str:
    return _PLATFORM.get((target.os, target.arch), f"{target.os}_{target.arch}")


def _v(s: str) -> Version:
    return Version(s)


def _arch_range(archs: tuple[str, ...]) -> str:
    plain = sorted({a for a in archs if arch_tuple(a)}, key=lambda a: arch_tuple(a) or (0, 0, False))
    if not plain:
        return "no GPU archs"
    return plain[0] if len(plain) == 1 else f"{plain[0]}…{plain[-1]}"


@dataclass(frozen=True, kw_only=True, slots=True)
class _Fit:
    """A variant that fits, with the facts that made it fit."""

    variant: Variant
    python: str
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    driver_floor: str | None


def _pythons(spec: str, release: TorchRelease) -> list[str]:
    """Candidate Python minors for a release, best first."""
    if spec and spec[0].isdigit():
        return [spec] if spec in release.python else []
    s = SpecifierSet(spec) if spec else SpecifierSet()
    return sorted((p for p in release.python if Version(p) in s), key=Version, reverse=True)


class _Resolver:
    def __init__(self, intent: Intent, matrix: Matrix, target: TargetSpec, default_python: str) -> None:
        self.intent, self.m, self.t = intent, matrix, target
        self.python = target.python or intent.python or default_python
        self.platform = platform_of(target)
        self.gpu = target.driver is not None
        self.from_default = intent.torch_index == "default"

    # -- which variants the intent asks for at all
    def wanted(self, variants: tuple[Variant, ...]) -> list[Variant]:
        cuda = self.intent.cuda
        out = [v for v in variants if v.backend == "cpu" or v.backend.startswith("cu")]
        if cuda == "auto" and not self.gpu and self.from_default:
            pass  # PyPI's one build runs on the CPU too, whatever CUDA it carries
        elif cuda == "cpu" or (cuda == "auto" and not self.gpu):
            out = [v for v in out if v.backend == "cpu"]
        elif cuda == "auto":
            out = [v for v in out if v.cuda]
        elif cuda.startswith("cu"):
            out = [v for v in out if v.backend == cuda]
        else:
            spec = SpecifierSet(cuda)
            out = [v for v in out if v.cuda and Version(v.cuda) in spec]
        return sorted(out, key=lambda v: _v(v.cuda or "0"), reverse=True)

    def driver_problem(self, v: Variant) -> tuple[str | None, str | None, str | None]:
        """(problem, warning, floor) for running variant v on this target's driver."""
        if v.cuda is None:
            return None, None, None
        if self.t.driver is None:
            if self.from_default and self.intent.cuda == "auto":
                return None, (f"the default index's torch is the {v.backend} build: on this target without an "
                              "NVIDIA driver it runs on the CPU and its CUDA libraries go unused"), None
            return f"{v.backend} needs an NVIDIA driver; this target has none", None, None
        policy = self.intent.cuda_policy
        floor = self.m.driver_floor(v.cuda, self.t.os, policy)
        if floor is None:
            return f"CUDA {v.cuda} is not in the matrix's driver table", None, None
        if _v(self.t.driver) < _v(floor):
            return f"CUDA {v.cuda} needs driver >= {floor} ({policy} policy)", None, floor
        max_cuda = self.t.cuda or self.m.max_cuda_for_driver(self.t.driver, self.t.os)
        if max_cuda and _v(v.cuda) > _v(max_cuda):
            if policy == "strict":
                return f"CUDA {v.cuda} is newer than the CUDA {max_cuda} driver {self.t.driver} supports (strict policy)", None, floor
            return None, (f"{v.backend} runs on driver {self.t.driver} (CUDA {max_cuda}) through CUDA minor-version "
                          f"compatibility: torch's own kernels work; code that needs a newer driver (PTX "
                          f"newer than {max_cuda}, some cuda-python features) does not"), floor
        return None, None, floor

    def arch_problem(self, v: Variant) -> tuple[str | None, list[str]]:
        if v.cuda is None or not self.t.gpus:
            return None, []
        warns: list[str] = []
        missing: list[str] = []
        for cc in sorted(set(self.t.gpus), key=cc_tuple):
            how = gpu_runs(cc, v.archs, v.ptx)
            if how is None:
                missing.append(cc)
            elif how == "ptx":
                warns.append(f"GPU {cc} has no machine code in {v.backend}; its kernels are JIT-compiled from PTX "
                             f"at first use (slow first start)")
        if missing:
            return (f"{v.backend} carries code for {_arch_range(v.archs)}, not for compute capability "
                    f"{', '.join(missing)}"), []
        return None, warns

    def fit(self, release: TorchRelease) -> tuple[_Fit | None, str]:
        """The best variant of a release for this target, or why none fits."""
        pythons = _pythons(self.python, release)
        if not pythons:
            lo, hi = release.python[0], release.python[-1]
            return None, f"supports Python {lo}–{hi}, not {self.python}"
        variants = [v for v in release.variants if self.platform in v.platforms]
        if not variants:
            return None, f"no wheels for {self.platform}"
        if self.from_default:
            # torch from the default index: only the one build PyPI ships for this platform exists there.
            pb = release.pypi_backends.get(self.platform) or (
                release.pypi_backend if self.platform == "linux_x86_64" else None)
            variants = [v for v in variants if v.backend == pb]
            if not variants:
                return None, f"the default index (PyPI) has no build of it for {self.platform}"
        floor = release.glibc.get(self.platform)
        if floor and self.t.glibc and _v(self.t.glibc) < _v(floor):
            return None, f"wheels need glibc >= {floor}; this target has {self.t.glibc}"
        wanted = self.wanted(tuple(variants))
        if not wanted:
            have = "/".join(v.backend for v in sorted(variants, key=lambda v: _v(v.cuda or "0")))
            return None, f"published for {self.platform} only as {have}, not as cuda = {self.intent.cuda!r}"
        problems: list[str] = []
        runnable: list[tuple[Variant, str | None, str | None, list[str]]] = []
        for v in wanted:
            vfloor = release.glibc_for(self.platform, v.backend)
            if vfloor and self.t.glibc and _v(self.t.glibc) < _v(vfloor):
                problems.append(f"{v.backend} wheels need glibc >= {vfloor}; this target has {self.t.glibc}")
                continue
            drv, warn, dfloor = self.driver_problem(v)
            if drv:
                problems.append(drv)
                continue
            arch, arch_warns = self.arch_problem(v)
            if arch:
                problems.append(arch)
                continue
            runnable.append((v, warn, dfloor, arch_warns))
        # The newest variant that runs under the policy ("compatible" counts CUDA minor-version
        # compatibility; such a pick carries a warning, and cuda-policy = "strict" avoids it).
        for v, warn, dfloor, arch_warns in runnable[:1]:
            reasons = [(f"{v.backend}: the build the default index ships for {self.platform}" if self.from_default
                        else f"{v.backend}: the newest published variant of torch {release.version} for "
                        f"{self.platform} that runs here") if v.cuda else f"{v.backend}: " + ("no NVIDIA driver on this target"
                                                                          if not self.gpu else "cuda = 'cpu' asked for")]
            if v.cuda and dfloor:
                reasons.append(f"driver {self.t.driver} >= {dfloor}, the floor for CUDA {v.cuda} "
                               f"({self.intent.cuda_policy} policy)")
            if v.cuda and self.t.gpus:
                reasons.append(f"build carries {_arch_range(v.archs)}" + (f" + PTX {', '.join(v.ptx)}" if v.ptx else "")
                               + f", covering compute capability {', '.join(sorted(set(self.t.gpus), key=cc_tuple))}")
            return _Fit(variant=v, python=pythons[0], reasons=tuple(reasons),
                        warnings=tuple(([warn] if warn else []) + arch_warns), driver_floor=dfloor), ""
        cudas = "/".join(v.cuda or "cpu" for v in sorted(wanted, key=lambda v: _v(v.cuda or "0")))
        if all("needs driver" in p for p in problems):
            floors = [self.m.driver_floor(v.cuda, self.t.os, self.intent.cuda_policy) for v in wanted if v.cuda]
            least = min((f for f in floors if f), key=_v, default="?")
            return None, (f"published only for CUDA {cudas} on {self.platform}, which need driver >= {least}; "
                          f"this driver is {self.t.driver}")
        return None, "; ".join(dict.fromkeys(problems))

    def triton(self, release: TorchRelease) -> tuple[str | None, str | None, list[str], list[str], str | None]:
        """(package, version, reasons, warnings, problem) for triton alongside this torch."""
        want = self.intent.triton
        if want == "none":
            return None, None, ["triton = 'none' in the intent"], [], None
        if self.t.os == "windows":
            tw = self.m.triton_windows_for(release.version)
            if tw is None:
                return None, None, [], [f"no triton-windows release is known for torch {release.version}"], None
            return "triton-windows", tw.version, [f"triton-windows {tw.version}: the series for torch {tw.torch}"], [], None
        if self.t.os != "linux":
            return None, None, [], [f"Triton publishes no wheels for {self.platform}; the lock has no triton"], None
        pin = release.triton
        if pin is None:
            return None, None, [], [f"torch {release.version} pins no triton"], None
        if want != "auto" and Version(pin) not in SpecifierSet(want):
            return None, None, [], [], f"pins triton {pin}, outside triton = {want!r}"
        reasons = [f"triton {pin}: the exact version torch {release.version} requires"]
        warns: list[str] = []
        tr = self.m.triton_release(pin)
        if tr is not None:
            if self.python[0].isdigit() and tr.python and self.python not in tr.python:
                return None, None, [], [f"triton {pin} publishes no wheels for Python {self.python}; the lock has no "
                                        "triton"], None
            if self.platform not in tr.platforms:
                return None, None, [], [f"triton {pin} publishes no wheels for {self.platform}; the lock has no triton"], None
            for cc in sorted(set(self.t.gpus), key=cc_tuple):
                if cc_tuple(cc) < cc_tuple(tr.min_cc):
                    warns.append(f"Triton {pin} cannot run on compute capability {cc} (it needs >= {tr.min_cc}): "
                                 "torch works, Triton kernels and torch.compile's GPU backend do not")
                elif cc_tuple(cc) < cc_tuple(tr.supported_cc):
                    warns.append(f"Triton {pin} runs on compute capability {cc} but supports >= {tr.supported_cc} "
                                 "officially; some kernels (tl.dot with bf16/fp8) may fail")
        return "triton", pin, reasons, warns, None

    def run(self) -> Selection:
        if self.gpu and self.intent.cuda != "cpu":
            for cc in sorted(set(self.t.gpus), key=cc_tuple):
                jetson = self.m.jetpack_only(cc)
                if jetson is not None:
                    return self.conflict(
                        [f"compute capability {cc} is an integrated {jetson.family} GPU: no torch release on "
                         "PyTorch's wheel index is built for it (its aarch64 CUDA wheels are for server Arm, SBSA)"],
                        "install NVIDIA's PyTorch wheels for JetPack on that machine, or set cuda = \"cpu\" to lock "
                        "the CPU build")
        spec = SpecifierSet(self.intent.torch) if self.intent.torch else SpecifierSet()
        releases = [r for r in self.m.torch if Version(r.version) in spec]
        if not releases:
            known = f"{self.m.torch[-1].version}–{self.m.torch[0].version}" if self.m.torch else "none"
            return self.conflict([f"no torch release in the matrix matches torch = {self.intent.torch!r} "
                                  f"(the matrix knows {known})"], "loosen torch in triton-env.toml")
        skipped: list[tuple[str, str]] = []
        for r in releases:
            fit, why = self.fit(r)
            if fit is None:
                skipped.append((r.version, why))
                continue
            pkg, tver, treasons, twarns, tproblem = self.triton(r)
            if tproblem:
                skipped.append((r.version, tproblem))
                continue
            index = self.index(fit.variant.backend)
            reasons = [f"torch {r.version}: the newest release matching torch = {self.intent.torch or '*'!r} "
                       "that fits this target"]
            reasons += [f"skipped {line}" for line in _grouped(skipped)]
            reasons += [f"Python {fit.python}: " + ("as asked" if self.python[0].isdigit() else
                                                    f"newest of {self.python!r} that torch {r.version} supports")]
            reasons += list(fit.reasons) + treasons
            return Selection(target=self.t, ok=True, python=fit.python, torch=r.version, backend=fit.variant.backend,
                             index=index, triton_package=pkg, triton=tver, packages=self.intent.packages,
                             driver_floor=fit.driver_floor, archs=fit.variant.archs, ptx=fit.variant.ptx,
                             warnings=tuple(fit.warnings) + tuple(twarns), reasons=tuple(reasons))
        return self.conflict(_grouped(skipped), self.suggest(releases))

    def index(self, backend: str) -> str:
        tmpl = self.intent.torch_index
        if tmpl == "default":
            return "default"  # the caller puts the default index's address here
        if tmpl:
            return tmpl.format(backend=backend) if "{backend}" in tmpl else tmpl
        return self.m.index_url(backend)

    def suggest(self, tried: list[TorchRelease]) -> str:
        """The cheapest way out: a driver that would do, or a torch range outside the intent that fits."""
        hints: list[str] = []
        if self.t.driver is not None and self.intent.cuda != "cpu":
            need: list[str] = []
            for r in tried:
                for v in self.wanted(tuple(x for x in r.variants if self.platform in x.platforms)):
                    if v.cuda and self.arch_problem(v)[0] is None and _pythons(self.python, r):
                        f = self.m.driver_floor(v.cuda, self.t.os, self.intent.cuda_policy)
                        if f and _v(f) > _v(self.t.driver):
                            need.append(f)
                if need:
                    hints.append(f"upgrade the NVIDIA driver to >= {min(need, key=_v)} (for torch {r.version})")
                    break
        if self.intent.torch:
            outside = [r for r in self.m.torch if r not in tried]
            for r in outside:
                fit, _ = self.fit(r)
                if fit is not None and self.triton(r)[4] is None:
                    op = "<=" if _v(r.version) < _v(tried[0].version) else ">="
                    hints.append(f"allow torch {op} {r.version} (torch = \"{op}{r.version}\" in triton-env.toml)")
                    break
        if self.intent.cuda not in ("auto", "cpu") and self.gpu:
            hints.append('let cuda = "auto" choose the CUDA variant')
        if not hints:
            hints.append("add or change this target's python, driver or gpus, or set cuda = \"cpu\"")
        return " or ".join(hints)

    def conflict(self, lines: list[str], hint: str) -> Selection:
        desc = _describe(self.t, self.python)
        msg = (f"nothing fits target {self.t.name!r} ({desc}):\n" + "\n".join(f"  - {x}" for x in lines)
               + f"\n  fix: {hint}")
        return Selection(target=self.t, ok=False, python=None, packages=self.intent.packages,
                         conflict=Conflict(target=self.t.name, message=msg, facts=tuple(lines)), reasons=tuple(lines))


def _grouped(skipped: list[tuple[str, str]]) -> list[str]:
    """'torch 2.13.0–2.15.0: why' for consecutive releases blocked for the same reason."""
    out: list[str] = []
    i = 0
    while i < len(skipped):
        j = i
        while j + 1 < len(skipped) and skipped[j + 1][1] == skipped[i][1]:
            j += 1
        span = skipped[i][0] if i == j else f"{skipped[j][0]}–{skipped[i][0]}"
        out.append(f"torch {span}: {skipped[i][1]}")
        i = j + 1
    return out


def _describe(t: TargetSpec, python: str) -> str:
    parts = [f"{t.os}/{t.arch}", f"Python {python}"]
    if t.glibc:
        parts.append(f"glibc {t.glibc}")
    parts.append(f"driver {t.driver}" if t.driver else "no NVIDIA driver")
    if t.gpus:
        parts.append("GPUs " + ", ".join(t.gpus))
    return ", ".join(parts)


def resolve(intent: Intent, matrix: Matrix, targets: tuple[TargetSpec, ...], default_python: str) -> tuple[Selection, ...]:
    """One Selection per target, in order; deterministic for the same inputs."""
    return tuple(_Resolver(intent, matrix, t, default_python).run() for t in targets)


def selection_json(sel: Selection) -> dict[str, object]:
    """The public `resolve --dry-run --json` shape of one target (a documented contract)."""
    d: dict[str, object] = {
        "name": sel.target.name, "ok": sel.ok, "python": sel.python, "torch": sel.torch, "backend": sel.backend,
        "index": sel.index, "triton_package": sel.triton_package, "triton": sel.triton,
        "warnings": list(sel.warnings), "reasons": list(sel.reasons),
    }
    if not sel.ok and sel.conflict:
        d["conflict"] = sel.conflict.message
    return d
