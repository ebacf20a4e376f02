"""One target's search (newest torch, its preferred build, then its Triton), and the advice when nothing fits."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tritonlock.decide import rules
from tritonlock._archs import cc_tuple
from tritonlock.compat.matrix import Matrix, driver_branch_number
from tritonlock.compat.rows import Ptxas, TorchRelease, Variant
from tritonlock.models import Conflict, Intent, Selection, TargetSpec
from tritonlock.decide._words import grouped
from tritonlock.decide.targetfacts import describe_target, driver_branch, driver_candidates, pinned_triton


def _v(s: str) -> Version:
    return Version(s)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Fit:
    """A variant that fits, with the facts that made it fit."""

    variant: Variant
    python: str
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    driver_floor: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class _Triton:
    """The Triton that goes with one torch release on this target, or why it cannot work here."""

    package: str | None = None
    version: str | None = None
    reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    problem: str | None = None  # this torch is passed over: its Triton does not work on this target
    kind: str = ""  # the problem's kind: "ptxas" (driver), "gpu" (compute capability), "wheel", "spec"
    need_driver: str | None = None  # kind "ptxas": the least driver that loads its kernels
    env: str | None = None  # kind "ptxas" (and "gpu" from a ptxas): the variable that points Triton at another ptxas
    need_cuda: str | None = None  # kind "gpu" from a ptxas too old for the GPU: the first CUDA whose ptxas knows it


class Resolver:
    """The search: newest torch first, each release's preferred build, then its Triton — every host question is a
    predicate in rules.py; this class only orders the questions and words the answer."""

    def __init__(self, intent: Intent, matrix: Matrix, target: TargetSpec, default_python: str) -> None:
        self.intent, self.m, self.t = intent, matrix, target
        self.default_python = default_python
        self.h = h = rules.Host.of(intent, matrix, target, default_python)
        self.python, self.platform, self.gpu = h.python, h.platform, h.gpu
        self.from_default, self.tegra = h.from_default, h.tegra

    def floor(self, driver: str | None) -> str | None:
        return self.h.floor(driver)

    def max_cuda(self) -> str | None:
        return self.h.max_cuda()

    def candidates(self) -> list[str]:
        """Newer drivers worth trying, least first: every floor the matrix knows (toolkit release drivers and
        minor-version floors), as this target's driver is numbered."""
        return driver_candidates(self.m, self.t)

    def gpu_driver_problem(self) -> tuple[list[str], str | None] | None:
        """Lines for GPUs this driver cannot drive at all, and the legacy branch to go back to when the driver is
        too new for one (None: the way out is a newer driver); None when it drives them all.

        The rules (rules.driver_knows_gpu, rules.driver_still_drives_gpu): outside that window the driver does not
        know the GPU: no CUDA build runs on it, torch's own kernels no more than Triton's. That is a conflict, not a
        warning — a lock for it would install a GPU stack that cannot see its GPU.
        """
        if self.t.driver is None or self.intent.cuda == "cpu":
            return None
        lines: list[str] = []
        legacy: str | None = None
        for cc in self.h.ccs:
            if (why := rules.driver_knows_gpu(self.h, cc)) is not None:
                lines.append(why)
            if (why := rules.driver_still_drives_gpu(self.h, cc)) is not None:
                g = self.m.gpu_family(cc)
                assert g is not None
                legacy = f"R{g.last_branch} ({g.family})" if legacy is None else legacy
                lines.append(why)
        return (lines, legacy) if lines else None

    def python_reason(self, chosen: str, release: str) -> str:
        """Where the target's Python came from, in words that match what really happened."""
        if self.t.python:
            if self.t.origin == "host":
                origin = "the interpreter tritonlock runs on (set python in [environment] to choose another)"
            elif self.t.origin.startswith("file"):
                origin = f"the Python of the saved machine {self.t.name!r}"
            else:
                origin = f"target {self.t.name!r} asks for {self.t.python!r}"
        elif self.intent.python:
            origin = f"[environment].python is {self.intent.python!r}"
        else:
            origin = "the interpreter tritonlock runs on (no python in triton-env.toml)"
        if self.python[0].isdigit():
            return f"Python {chosen}: {origin}"
        return f"Python {chosen}: the newest that torch {release} supports within {self.python!r} ({origin})"

    # -- which variants the intent asks for at all
    def wanted(self, variants: tuple[Variant, ...]) -> list[Variant]:
        out = [v for v in variants if rules.build_wanted(self.h, v)]
        return sorted(out, key=lambda v: _v(v.cuda or "0"), reverse=True)

    def fit(self, release: TorchRelease) -> tuple[_Fit | None, str]:
        """The best variant of a release for this target, or why none fits."""
        h = self.h
        why = rules.release_problem(h, release)
        if why:
            return None, why
        pythons = rules.python_candidates(h, release)
        variants = [v for v in release.variants if self.platform in v.platforms]
        if self.from_default:
            # torch from the default index: only the one build PyPI ships for this platform exists there.
            pb = rules.default_index_backend(h, release)
            variants = [v for v in variants if v.backend == pb]
        mac_reasons: list[str] = []
        mac_warns: list[str] = []
        if self.t.os == "macos" and release.macos.get(self.platform):
            if self.t.macos:
                if (why := rules.macos_fits(h, release, pythons)) is not None:
                    return None, why
                pythons = rules.macos_pythons(h, release, pythons)
                mac_reasons.append(f"macOS {self.t.macos} >= {release.macos_floor(self.platform, pythons[0])}, the "
                                   f"floor of torch {release.version}'s wheels for Python {pythons[0]}")
            elif _v(release.macos_floor(self.platform, pythons[0]) or "0") > _v(rules.MACOS_ANY):
                tag = release.macos_floor(self.platform, pythons[0]) or ""
                mac_warns.append(f"torch {release.version}'s wheels for Python {pythons[0]} need macOS >= {tag} "
                                 f"(macosx_{tag.replace('.', '_')}_arm64): if this Mac runs an older macOS, say "
                                 f"so on the target (macos = \"13.6\", as `tritonlock host --save` writes it) to lock "
                                 "the newest torch it can install")
        wanted = self.wanted(tuple(variants))
        if not wanted:
            have = "/".join(v.backend for v in sorted(variants, key=lambda v: _v(v.cuda or "0")))
            if self.from_default and self.intent.cuda == "cpu":
                return None, (f"the default index ships only the {have} build of it for {self.platform}, no "
                              "CPU-only build")
            return None, f"published for {self.platform} only as {have}, not as cuda = {self.intent.cuda!r}"
        problems: list[str] = []
        runnable: list[tuple[Variant, str | None, list[str]]] = []
        for v in wanted:
            why = rules.build_problem(h, release, v)
            if why:
                problems.append(why)
                continue
            runnable.append((v, rules.driver_floor_for(h, v), rules.build_warnings(h, v)))
        # The newest variant that runs under the policy ("compatible" counts CUDA minor-version compatibility;
        # such a pick carries a warning, and cuda-policy = "strict" avoids it) — a stable one (RELEASE.md) before
        # an experimental one.
        if runnable:
            stable = [x for x in runnable if release.cuda_support(x[0].cuda) != "experimental"]
            v, dfloor, build_warns = (stable or runnable)[0]
            support = release.cuda_support(v.cuda)
            if self.from_default:
                first = f"{v.backend}: the build the default index ships for {self.platform}"
            elif not v.cuda:
                first = f"{v.backend}: " + ("cuda = 'cpu' asked for" if self.intent.cuda == "cpu"
                                            else "no NVIDIA driver on this target")
            elif support == "stable":
                first = (f"{v.backend}: the newest stable CUDA variant (RELEASE.md) of torch {release.version} "
                         f"for {self.platform} that runs here")
            elif support == "experimental":
                first = (f"{v.backend}: the newest variant of torch {release.version} for {self.platform} that runs "
                         "here; it is experimental in RELEASE.md, and no stable one runs here")
            else:
                first = f"{v.backend}: the newest published variant of torch {release.version} for {self.platform} that runs here"
            reasons = [first]
            passed = [x[0].backend for x in runnable if x[0] is not v and _v(x[0].cuda or "0") > _v(v.cuda or "0")]
            if passed and support == "stable":
                reasons.append(f"{', '.join(passed)} also {'run' if len(passed) > 1 else 'runs'} here but "
                               f"{'are' if len(passed) > 1 else 'is'} experimental for torch {release.version} "
                               f"(RELEASE.md): the stable {v.backend} is preferred")
            elif support == "experimental" and problems:
                stable_no = [p for p in problems if any(p.startswith(b.backend + " ") or f"CUDA {b.cuda} " in p
                                                        for b in wanted if release.cuda_support(b.cuda) == "stable")]
                if stable_no:
                    reasons.append("stable variants do not run here: " + "; ".join(dict.fromkeys(stable_no)))
            if v.cuda and dfloor:
                reasons.append(f"driver {self.t.driver} >= {dfloor}, the floor for CUDA {v.cuda} "
                               f"({self.intent.cuda_policy} policy)"
                               + (f"; a Jetson's driver is numbered by its branch, R{driver_branch_number(dfloor)}"
                                  if self.tegra else f"; driver {self.t.driver} names a branch, held to the floor's "
                                  f"branch, R{driver_branch_number(dfloor)}" if self.h.by_branch else ""))
            if v.cuda and self.t.gpus:
                reasons.append(f"build carries {rules.arch_range(v.archs)}" + (f" + PTX {', '.join(v.ptx)}" if v.ptx else "")
                               + f", covering compute capability {', '.join(sorted(set(self.t.gpus), key=cc_tuple))}")
            reasons += mac_reasons
            return _Fit(variant=v, python=pythons[0], reasons=tuple(reasons),
                        warnings=tuple(build_warns + mac_warns), driver_floor=dfloor), ""
        cudas = "/".join(v.cuda or "cpu" for v in sorted(wanted, key=lambda v: _v(v.cuda or "0")))
        if all("needs driver" in p for p in problems):
            floors = [self.floor(self.m.driver_floor(v.cuda, self.t.os, self.intent.cuda_policy)) for v in wanted if v.cuda]
            least = min((f for f in floors if f), key=_v, default="?")
            return None, (f"published only for CUDA {cudas} on {self.platform}, which need driver >= {least}; "
                          f"this driver is {self.t.driver}")
        return None, "; ".join(dict.fromkeys(problems))

    def triton(self, release: TorchRelease, variant: Variant) -> _Triton:
        """The Triton that goes with this torch build here, or why it cannot work on this target."""
        want = self.intent.triton
        if want == "none":
            return _Triton(reasons=("triton = 'none' in the intent: no Triton of its own in the decision and no "
                                    "check that Triton works here",))
        if self.t.os == "windows":
            return self._triton_windows(release, variant)
        if self.t.os != "linux":
            return _Triton(warnings=(f"Triton publishes no wheels for {self.platform}; the lock has no triton",))
        pin = release.triton
        if pin is None:
            return _Triton(warnings=(f"torch {release.version} pins no triton",))
        if (why := rules.triton_in_spec(self.h, pin)) is not None:
            return _Triton(problem=why, kind="spec")
        reasons = [f"triton {pin}: the exact version torch {release.version} requires"]
        if variant.backend in self.m.triton_from_default and not self.from_default:
            reasons = [rules.triton_source_reason(self.h, release, variant, pin)]
        warns: list[str] = []
        tr = self.m.triton_release(pin)
        if tr is not None:
            if (why := rules.triton_wheel_for_python(self.h, tr) or rules.triton_wheel_for_platform(self.h, tr)):
                return _Triton(problem=why, kind="wheel")
            if variant.cuda and self.gpu:
                if (why := rules.triton_supports_gpu(self.h, tr)) is not None:
                    return _Triton(problem=why, kind="gpu")
                warns += rules.triton_gpu_warnings(self.h, tr)
        return self._ptxas("triton", pin, self.m.ptxas_build("triton", pin, self.platform), variant,
                           _Triton(package="triton", version=pin, reasons=tuple(reasons), warnings=tuple(warns)))

    def _triton_windows(self, release: TorchRelease, variant: Variant) -> _Triton:
        tw = self.m.triton_windows_for(release.version)
        if tw is None:
            return _Triton(problem=f"no triton-windows release is known for torch {release.version}", kind="wheel")
        if (why := rules.triton_windows_wheel_for_python(self.h, tw)) is not None:
            return _Triton(problem=why, kind="wheel")
        row = self.m.ptxas_build("triton-windows", tw.version, "win_amd64")
        if row is not None and (why := rules.triton_windows_in_spec(self.h, tw, row)) is not None:
            return _Triton(problem=why, kind="spec")
        warns = tuple(rules.triton_windows_gpu_warnings(self.h, tw)) if variant.cuda and self.gpu else ()
        base = _Triton(package="triton-windows", version=tw.version,
                       reasons=(f"triton-windows {tw.version}: the series for torch {tw.torch}",), warnings=warns)
        return self._ptxas("triton-windows", row.version if row else tw.version, row, variant, base)

    def _ptxas(self, package: str, version: str, row: Ptxas | None, variant: Variant, base: _Triton) -> _Triton:
        """The rule: for every GPU, the ptxas Triton uses for it must make code this driver loads."""
        import dataclasses

        if variant.cuda is None or self.t.driver is None:
            return base  # no NVIDIA driver, or a CPU build: Triton's GPU compiler is never used here
        if row is None:
            return dataclasses.replace(base, warnings=base.warnings + (
                f"the ptxas bundled with {package} {version} for {self.platform} is not in the matrix: not checked "
                "against driver " + self.t.driver,))
        ccs = self.h.ccs
        reasons, warns = list(base.reasons), list(base.warnings)
        fails: list[tuple[str, str, str]] = []  # (problem words, the driver it needs, the variable that overrides)
        uses = rules.ptxas_uses(self.h, row)
        for (binary, cuda, env), on in uses.items():  # a ptxas that does not know the GPU: no driver helps
            cuda_xy = ".".join(cuda.split(".")[:2])
            unknown = [(cc, why) for cc in on if cc != "?" and (why := rules.ptxas_knows_gpu(self.h, cuda, cc))]
            if unknown:
                first = max((g.first_cuda for cc, _ in unknown if (g := self.m.gpu_family(cc)) and g.first_cuda),
                            key=_v, default=None)
                return _Triton(package=package, version=version, kind="gpu", env=env, need_cuda=first,
                               problem=(f"its Triton ({package} {version}) compiles for compute capability "
                                        f"{', '.join(cc for cc, _ in unknown)} with its bundled {binary} (CUDA "
                                        f"{cuda_xy}), {unknown[0][1]}"))
        for (binary, cuda, env), on in uses.items():
            need = rules.ptxas_driver_floor(self.h, cuda)
            cuda_xy = ".".join(cuda.split(".")[:2])
            gpus = f"compute capability {', '.join(on)}" if on != ["?"] else "its GPUs"
            if need is None:
                warns.append(f"{package} {version} compiles with a CUDA {cuda_xy} {binary} whose driver floor is not "
                             "in the matrix: not checked")
                continue
            if (why := rules.ptxas_loads_on_driver(self.h, cuda)) is not None:
                fails.append((f"compiles for {gpus} with its bundled {binary} (CUDA {cuda_xy}), {why}", need, env))
                continue
            reasons.append(f"{package} {version} compiles for {gpus} with its bundled {binary} (CUDA {cuda_xy}): "
                           f"driver {self.t.driver} >= {need} loads its kernels")
        if fails:  # every GPU's ptxas named; the driver that unlocks it is the highest of their floors
            need = max((f[1] for f in fails), key=_v)
            return _Triton(package=package, version=version, kind="ptxas", need_driver=need,
                           env=next(f[2] for f in fails if f[1] == need),
                           problem=(f"its Triton ({package} {version}) " + "; and ".join(f[0] for f in fails)
                                    + f"; driver {self.t.driver} cannot load them"))
        if not ccs and row.blackwell and row.blackwell_from:
            floor = self.m.ptxas_floor(row.blackwell, self.t.os)
            if floor and _v(self.t.driver) < _v(floor[0]):
                warns.append(f"this target lists no GPUs: on GPUs of compute capability >= {row.blackwell_from} "
                             f"{package} {version} compiles with ptxas-blackwell (CUDA "
                             f"{'.'.join(row.blackwell.split('.')[:2])}), which needs driver >= {floor[0]}")
        return dataclasses.replace(base, reasons=tuple(reasons), warnings=tuple(warns))

    def run(self, advise: bool = True) -> Selection:
        if self.gpu and self.intent.cuda != "cpu":
            for cc in self.h.ccs:
                if (why := rules.gpu_has_pytorch_wheels(self.h, cc)) is not None:
                    return self.conflict(
                        [why], "install NVIDIA's PyTorch wheels for JetPack on that machine, or set cuda = \"cpu\" to "
                        "lock the CPU build")
        unknown = self.gpu_driver_problem()
        if unknown is not None:
            lines, legacy = unknown
            return self.conflict(lines, _Fixes(self).unknown_gpu(legacy) if advise else "")
        spec = SpecifierSet(self.intent.torch) if self.intent.torch else SpecifierSet()
        releases = [r for r in self.m.torch if Version(r.version) in spec]
        if not releases:
            known = f"{self.m.torch[-1].version}–{self.m.torch[0].version}" if self.m.torch else "none"
            return self.conflict([f"no torch release in the matrix matches torch = {self.intent.torch!r} "
                                  f"(the matrix knows {known})"], "loosen torch in triton-env.toml")
        skipped: list[tuple[str, str]] = []
        passed: list[tuple[TorchRelease, _Triton]] = []  # torch itself runs here, its Triton does not
        for r in releases:
            fit, why = self.fit(r)
            if fit is None:
                skipped.append((r.version, why))
                continue
            tri = self.triton(r, fit.variant)
            if tri.problem:
                skipped.append((r.version, tri.problem))
                passed.append((r, tri))
                continue
            index = self.index(fit.variant.backend)
            reasons = [f"torch {r.version}: the newest release matching torch = {self.intent.torch or '*'!r} "
                       "that fits this target" + (" with a Triton that works here" if any(pt.kind != "spec" for _, pt in passed)
                                                  else f" with a triton inside triton = {self.intent.triton!r}" if passed
                                                  else "")]
            reasons += [f"passed over {line}" for line in grouped(skipped)]
            reasons += [self.python_reason(fit.python, r.version)]
            reasons += list(fit.reasons) + list(tri.reasons)
            warnings = list(fit.warnings) + list(tri.warnings)
            # a newer torch whose Triton the intent's own triton specifier rules out is a reason (above), not a
            # warning: only a Triton that cannot work here is worth one
            broken = [(pr, pt) for pr, pt in passed if pt.kind != "spec"]
            if broken:
                warnings.append(_Fixes(self).passed_over_warning(broken, advise))
            return Selection(target=self.t, ok=True, python=fit.python, torch=r.version, backend=fit.variant.backend,
                             index=index, triton_package=tri.package, triton=tri.version, packages=self.intent.packages,
                             driver_floor=fit.driver_floor, archs=fit.variant.archs, ptx=fit.variant.ptx,
                             warnings=tuple(warnings), reasons=tuple(reasons))
        return self.conflict(grouped(skipped), _Fixes(self).suggest(releases, passed) if advise else "")

    def index(self, backend: str) -> str:
        tmpl = self.intent.torch_index
        if tmpl == "default":
            return "default"  # the caller puts the default index's address here
        if tmpl:
            return tmpl.format(backend=backend) if "{backend}" in tmpl else tmpl
        return self.m.index_url(backend)

    def conflict(self, lines: list[str], hint: str) -> Selection:
        desc = describe_target(self.t, self.python)
        msg = (f"nothing fits target {self.t.name!r} ({desc}):\n" + "\n".join(f"  - {x}" for x in lines)
               + (f"\n  fix: {hint}" if hint else ""))
        return Selection(target=self.t, ok=False, python=None, packages=self.intent.packages,
                         conflict=Conflict(target=self.t.name, message=msg, facts=tuple(lines)), reasons=tuple(lines))


class _Fixes:
    """The advice on top of the search: ways out of a conflict and what a newer driver would unlock — each one
    checked by resolving again with the change, never inferred."""

    def __init__(self, r: Resolver) -> None:
        self.r = r
        self.intent, self.m, self.t, self.h = r.intent, r.m, r.t, r.h
        self.default_python, self.python, self.platform = r.default_python, r.python, r.platform
        self.gpu, self.from_default = r.gpu, r.from_default

    def candidates(self) -> list[str]:
        return self.r.candidates()

    def max_cuda(self) -> str | None:
        return self.r.max_cuda()

    def fit(self, release: TorchRelease) -> tuple[_Fit | None, str]:
        return self.r.fit(release)

    def triton(self, release: TorchRelease, variant: Variant) -> _Triton:
        return self.r.triton(release, variant)

    def unknown_gpu(self, legacy: str | None) -> str:
        """The way out when the driver does not drive a GPU: the least newer driver that resolves, or the legacy
        branch that still drives it; or the CPU build."""
        hint = ""
        if legacy is None:
            found = self.least_driver()  # checked by resolving again with it
            if found is not None:
                d, sel = found
                hint = (f"upgrade the NVIDIA driver to >= {d} ({driver_branch(d)}): then torch {sel.torch} "
                        f"({sel.backend})" + (f" + {sel.triton_package} {sel.triton}" if sel.triton else ""))
            else:
                hint = "upgrade the NVIDIA driver"
        else:
            branch, family = legacy.split(" ", 1)
            hint = f"run a driver of the {branch} branch, the last that drives {family.strip('()')} GPUs (NVIDIA's legacy driver)"
        return hint + " or set cuda = \"cpu\" to lock the CPU build"

    def passed_over_warning(self, passed: list[tuple[TorchRelease, _Triton]], advise: bool) -> str:
        """Newer torch runs here but its Triton does not: say so, and what would unlock it."""
        versions = [r.version for r, _ in passed]
        span = versions[0] if len(versions) == 1 else f"{versions[-1]}–{versions[0]}"
        first = passed[0][1]
        msg = (f"newer torch {span} runs on this target but its Triton does not ({first.problem}); the lock holds "
               "the newest torch whose Triton works here")
        if advise and first.kind == "ptxas" and first.need_driver:
            msg += f" — a driver >= {first.need_driver} ({driver_branch(first.need_driver)}) would allow torch {versions[0]}"
        return msg

    def least_driver(self) -> tuple[str, Selection] | None:
        """The least driver (a floor from the matrix) on which this intent resolves for this target, and the result."""
        import dataclasses

        if self.t.driver is None:
            return None
        for d in self.candidates():
            t = dataclasses.replace(self.t, driver=d, cuda=None)
            sel = Resolver(self.intent, self.m, t, self.default_python).run(advise=False)
            if sel.ok:
                return d, sel
        return None

    def other_python(self) -> tuple[str, Selection] | None:
        """The nearest other Python minor on which this intent resolves with a Triton, and what it gets."""
        import dataclasses

        if not self.python[:1].isdigit():
            return None
        here = Version(self.python)
        known = sorted({p for r in self.m.torch for p in r.pythons(self.platform)} - {self.python},
                       key=lambda p: (abs(Version(p).minor - here.minor), Version(p) < here))
        for py in known:
            sel = Resolver(self.intent, self.m, dataclasses.replace(self.t, python=py), self.default_python).run(
                advise=False)
            if sel.ok and sel.triton_package:
                return py, sel
        return None

    def without_triton(self) -> Selection:
        """What this target would get with triton = "none" (no Triton rule)."""
        import dataclasses

        return Resolver(dataclasses.replace(self.intent, triton="none"), self.m, self.t, self.default_python).run(advise=False)

    def suggest(self, tried: list[TorchRelease], passed: list[tuple[TorchRelease, _Triton]] | None = None) -> str:
        """The cheapest ways out: a driver that would do, the Triton escape hatches, or a torch range that fits."""
        hints: list[str] = []
        if passed:
            hints += self.triton_hints(passed)
        if self.t.driver is not None and self.intent.cuda != "cpu" and not hints:
            found = self.least_driver()  # checked by resolving again with it
            if found is not None:
                d, sel = found
                hints.append(f"upgrade the NVIDIA driver to >= {d} ({driver_branch(d)}): then torch {sel.torch} "
                             f"({sel.backend})" + (f" + {sel.triton_package} {sel.triton}" if sel.triton else ""))
        if self.from_default and self.gpu and self.intent.cuda != "cpu" and not hints:
            # PyPI ships one build per platform (CPU-only on Windows and macOS, on aarch64 before 2.11): a newer
            # driver does not bring a CUDA build there; PyTorch's own index does (checked by resolving again)
            import dataclasses

            own = Resolver(dataclasses.replace(self.intent, torch_index=None), self.m, self.t,
                            self.default_python).run(advise=False)
            if own.ok:
                hints.append(f"take torch from PyTorch's index (remove [indexes] torch = \"default\"): then torch "
                             f"{own.torch} ({own.backend})" + (f" + {own.triton_package} {own.triton}" if own.triton else ""))
            cpu = Resolver(dataclasses.replace(self.intent, cuda="cpu"), self.m, self.t,
                            self.default_python).run(advise=False)
            if cpu.ok and cpu.backend == "cpu":
                hints.append(f"set cuda = \"cpu\" to lock the default index's CPU build (torch {cpu.torch})")
        if self.intent.torch:
            # the nearest releases outside the range first: the smallest change to the intent
            pos = {r.version: i for i, r in enumerate(self.m.torch)}
            lo, hi = min(pos[r.version] for r in tried), max(pos[r.version] for r in tried)
            outside = sorted((r for r in self.m.torch if r not in tried),
                             key=lambda r: min(abs(pos[r.version] - lo), abs(pos[r.version] - hi)))
            torch_only: TorchRelease | None = None
            for r in outside:
                fit, _ = self.fit(r)
                if fit is None:
                    continue
                if self.triton(r, fit.variant).problem is None:
                    op = "<=" if _v(r.version) < _v(tried[0].version) else ">="
                    hints.append(f"allow torch {op} {r.version} (torch = \"{op}{r.version}\" in triton-env.toml)")
                    torch_only = None
                    break
                torch_only = torch_only or r
            # ... unless a hint above already sets triton = "none": that locks a torch inside the range
            if torch_only is not None and self.intent.triton != "none" and not any(
                    'set triton = "none"' in h for h in hints):
                op = "<=" if _v(torch_only.version) < _v(tried[0].version) else ">="
                hints.append(f"allow torch {op} {torch_only.version} and set triton = \"none\" (torch "
                             f"{torch_only.version} runs here, its Triton does not)")
        if self.t.os == "macos" and self.t.macos:
            # a newer macOS: the least wheel floor above this Mac's that resolves (checked by resolving again)
            import dataclasses

            floors = sorted({f for r in tried for f in [*r.macos.values(), *r.macos_by_python.values()]
                             if _v(f) > _v(self.t.macos)}, key=_v)
            for f in floors:
                sel = Resolver(self.intent, self.m, dataclasses.replace(self.t, macos=f), self.default_python).run(
                    advise=False)
                if sel.ok:
                    hints.append(f"update macOS to >= {f} (set macos = \"{f}\" on the target once it runs it): "
                                 f"then torch {sel.torch}")
                    break
        if self.from_default and self.intent.cuda == "cpu":
            # (the default index here is PyPI or its mirror, whose Linux torch is a CUDA build: where PyTorch's own
            # index cannot be reached either, a mirror of it is the way to the small CPU build)
            hints.append("for a CPU-only torch take it from PyTorch's cpu index (remove [indexes] torch = \"default\"; "
                         "where only your default index is reachable, name a mirror of PyTorch's index there: [indexes] "
                         "torch = \"https://<your mirror>/whl/{backend}\"), or set cuda = \"auto\" to lock the build the "
                         "default index ships")
        elif self.intent.cuda not in ("auto", "cpu") and self.gpu:
            hints.append('let cuda = "auto" choose the CUDA variant')
        if not hints and self.t.os == "macos":
            hints.append("change this target's python (or macos)")
        if not hints:
            hints.append("add or change this target's python, driver or gpus, or set cuda = \"cpu\"")
        return " or ".join(hints)

    def triton_hints(self, passed: list[tuple[TorchRelease, _Triton]]) -> list[str]:
        """Torch runs here but no Triton does: the driver that fixes it, and the escape hatches."""
        hints: list[str] = []
        kinds = {t.kind for _, t in passed}
        alone = self.without_triton()
        if self.t.os == "windows":  # torch's Windows wheels pin no triton: "none" means no triton-windows
            keep = f"torch {alone.torch} ({alone.backend}) without triton-windows" if alone.ok else "torch alone"
        else:  # torch's Linux CUDA wheels require their triton, so the lock still holds it; CPU wheels pin none
            pins = pinned_triton(self.m, alone) is not None
            keep = (f"torch {alone.torch} ({alone.backend})" + (" with the triton it pins" if pins else " without triton")
                    if alone.ok and alone.torch else "torch without the Triton check")
        if "ptxas" in kinds:
            found = self.least_driver()
            if found is not None:
                d, sel = found
                hints.append(f"upgrade the NVIDIA driver to >= {d} ({driver_branch(d)}), which loads the kernels "
                             f"of {sel.triton_package or 'triton'} {sel.triton} (torch {sel.torch})")
            tri = next(t for _, t in passed if t.kind == "ptxas")
            have_major = (self.max_cuda() or "?").split(".")[0]
            if self.t.os == "windows" or keep.endswith("without triton"):
                hints.append(f"keep this driver: set triton = \"none\" (locks {keep})")
            else:
                hints.append(f"keep this driver: set triton = \"none\" (locks {keep}, without the Triton check) "
                             f"and point {tri.env} at the ptxas of a CUDA {have_major}.x toolkit, which driver "
                             f"{self.t.driver} loads (e.g. {tri.env}=/usr/local/cuda-{have_major}.x/bin/ptxas)")
        if "gpu" in kinds:
            other = self.other_python() if not hints else None  # a newer torch (and Triton) on another Python
            if other is not None:
                py, sel = other
                hints.append(f"use Python {py} (python = \"{py}\"): then torch {sel.torch} ({sel.backend}) + "
                             f"{sel.triton_package} {sel.triton}")
            tri = next(t for _, t in passed if t.kind == "gpu")
            if tri.env and tri.need_cuda and self.t.os != "windows":
                hints.append(f"set triton = \"none\" to lock {keep}, and point {tri.env} at the ptxas of a CUDA "
                             f">= {tri.need_cuda} toolkit, which knows this GPU")
            else:
                hints.append(f"set triton = \"none\" to lock {keep}: torch runs on this GPU, Triton does not")
        if "wheel" in kinds and not hints:
            # no Triton wheel for this Python (or platform): another Python may have one — checked by resolving
            other = self.other_python()
            if other is not None:
                py, sel = other
                hints.append(f"use Python {py} (python = \"{py}\"): then torch {sel.torch} ({sel.backend}) + "
                             f"{sel.triton_package} {sel.triton}")
            hints.append(f"set triton = \"none\" to lock {keep}")
        if "spec" in kinds and not hints:
            # the Triton asked for may come with a torch that this driver cannot run: a newer driver is then a way
            # out that keeps the intent as written (checked by resolving again with it)
            found = self.least_driver() if self.t.driver is not None and self.intent.cuda != "cpu" else None
            if found is not None:
                d, sel = found
                hints.append(f"upgrade the NVIDIA driver to >= {d} ({driver_branch(d)}): then torch {sel.torch} "
                             f"({sel.backend}) + {sel.triton_package or 'triton'} {sel.triton}")
            hints.append("loosen triton in triton-env.toml (or set it to \"auto\")")
        return hints
