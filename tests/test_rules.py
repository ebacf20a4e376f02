"""rules.py: each host rule is a pure predicate that returns its reason, or None when the target passes it."""

from __future__ import annotations

import ast
from pathlib import Path

from tritonlock.decide import rules
from tritonlock.compat.matrix import load_matrix
from tritonlock.compat.rows import TorchRelease, Variant
from tritonlock.models import Intent, TargetSpec

M = load_matrix()


def host(**target: object) -> rules.Host:
    target.setdefault("name", "t")
    target.setdefault("os", "linux")
    target.setdefault("arch", "x86_64")
    return rules.Host.of(Intent(path="triton-env.toml"), M, TargetSpec(**target), "3.12")  # type: ignore[arg-type]


def build(version: str, backend: str, platform: str = "linux_x86_64") -> tuple[TorchRelease, Variant]:
    rel = M.torch_release(version)
    assert rel is not None
    var = rel.variant(backend, platform)
    assert var is not None
    return rel, var


def test_rules_is_pure_it_imports_only_the_matrix_models_and_arch_helpers() -> None:
    tree = ast.parse(Path(rules.__file__).read_text(encoding="utf-8"))
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | \
        {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert {m for m in mods if m and m.startswith("tritonlock")} <= {"tritonlock.compat.matrix", "tritonlock.compat.rows",
                                                                     "tritonlock.models", "tritonlock._archs"}


def test_driver_window_rules() -> None:
    # an RTX 5090 (sm_120) needs R570; a Kepler (3.7) is driven only up to R470
    assert rules.driver_knows_gpu(host(driver="560.35.03", gpus=("12.0",)), "12.0") is not None
    assert rules.driver_knows_gpu(host(driver="570.133.07", gpus=("12.0",)), "12.0") is None
    assert rules.driver_still_drives_gpu(host(driver="535.104.05", gpus=("3.7",)), "3.7") is not None
    assert rules.driver_still_drives_gpu(host(driver="470.57.02", gpus=("3.7",)), "3.7") is None


def test_build_rules() -> None:
    rel, cu130 = build("2.13.0", "cu130")
    assert "needs driver" in (rules.driver_runs_cuda(host(driver="535.104.05", gpus=("9.0",)), cu130) or "")
    assert rules.driver_runs_cuda(host(driver="580.65.06", gpus=("9.0",)), cu130) is None
    assert rules.build_needs_no_driver(host(), cu130) is not None
    assert rules.gpu_arch_in_build(host(driver="580.65.06", gpus=("6.1",)), cu130) is not None
    assert rules.gpu_arch_in_build(host(driver="580.65.06", gpus=("9.0",)), cu130) is None


def test_release_rules() -> None:
    rel = M.torch[0]
    assert rules.release_supports_python(host(python="3.8"), rel) is not None
    assert rules.release_supports_python(host(python=rel.python[-1]), rel) is None
    assert rules.glibc_fits(host(glibc="2.17"), rel) is not None
    assert rules.glibc_fits(host(glibc="2.39"), rel) is None
    assert rules.release_has_platform(host(os="linux", arch="riscv64"), rel) is not None


def test_triton_rules() -> None:
    tr = M.triton_release(M.torch[0].triton or "")
    assert tr is not None
    assert rules.triton_supports_gpu(host(driver="580.65.06", gpus=("6.1",)), tr) is not None
    assert rules.triton_supports_gpu(host(driver="580.65.06", gpus=("8.0",)), tr) is None
    assert rules.ptxas_loads_on_driver(host(driver="535.104.05"), "13.0.88") is not None
    assert rules.ptxas_loads_on_driver(host(driver="580.65.06"), "13.0.88") is None


def test_the_search_asks_the_release_and_build_rules_in_their_registries() -> None:
    """A new rule is one function in a registry: the search (search.Resolver.fit) asks every entry."""
    import dataclasses

    from tritonlock.decide.resolve import resolve_one

    it = Intent(path="triton-env.toml")
    t = TargetSpec(name="t", os="linux", arch="x86_64", python="3.12", driver="580.65.06", gpus=("9.0",))
    assert resolve_one(it, M, t, "3.12").ok
    saved = rules.RELEASE_RULES, rules.BUILD_RULES
    try:
        rules.RELEASE_RULES = saved[0] + (lambda h, rel: f"the new release rule says no to {rel.version}",)
        sel = resolve_one(it, M, t, "3.12")
        assert not sel.ok and sel.conflict is not None and "the new release rule says no to 2.15.0" in sel.conflict.message
        rules.RELEASE_RULES = saved[0]
        rules.BUILD_RULES = saved[1] + (lambda h, v: f"the new build rule says no to {v.backend}",)
        sel = resolve_one(it, M, t, "3.12")
        assert not sel.ok and sel.conflict is not None and "the new build rule says no to cu132" in sel.conflict.message
    finally:
        rules.RELEASE_RULES, rules.BUILD_RULES = saved
    assert dataclasses.is_dataclass(rules.Host)


def test_a_gpu_covered_only_by_ptx_gets_the_jit_warning() -> None:
    """A build with no machine code for a GPU but PTX it can JIT from runs there, with a first start that compiles
    every kernel: the decision says so (the build is taken, with a warning); machine code gives no such warning, and
    a build with neither does not run at all."""
    import dataclasses

    rel, var = build(M.torch[0].version, next(v.backend for v in M.torch[0].variants if v.cuda))
    ptx_only = dataclasses.replace(var, archs=("sm_80",), ptx=("sm_80",))  # sm_80 code, PTX: an sm_90 GPU JITs it
    h = host(driver="580.95.05", gpus=("9.0",))
    assert rules.gpu_arch_in_build(h, ptx_only) is None  # it runs
    want = (f"GPU 9.0 has no machine code in {var.backend}; its kernels are JIT-compiled from PTX at first use "
            "(slow first start)")
    assert want in rules.build_warnings(h, ptx_only)
    sass = dataclasses.replace(var, archs=("sm_80", "sm_90"), ptx=("sm_80",))
    assert not [w for w in rules.build_warnings(h, sass) if "JIT-compiled from PTX" in w]
    neither = dataclasses.replace(var, archs=("sm_80",), ptx=())
    assert rules.gpu_arch_in_build(h, neither) is not None
    # and the resolver carries it into the decision
    from tritonlock.intent.read import parse_intent
    from tritonlock.decide.resolve import resolve

    m = dataclasses.replace(M, torch=(dataclasses.replace(rel, variants=tuple(
        ptx_only if v is var else v for v in rel.variants if v is var or not v.cuda)),))
    it = parse_intent('[environment]\npython = "3.12"\n[[targets]]\nname = "t"\ndriver = "580.95.05"\n'
                      'gpus = ["9.0"]\n')
    (sel,) = resolve(it, m, it.targets, "3.12")
    assert sel.ok and sel.backend == var.backend and want in sel.warnings, (sel.conflict, sel.warnings)
