"""The user's packages decide with the host: each gets its newest version whose torch fits, then the newest torch;
what held a package or torch back is said, in the lock, `resolve`, `resolve --dry-run --json` and `show --json`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pkgindex import LocalIndex
from uvasked import asked_of_uv
from tritonlock.cli import main
from tritonlock.lock.lockfile import read_lock
from tritonlock.compat.matrix import load_matrix

TAG = "py3-none-manylinux_2_28_x86_64"
# PyPI's builds (torch from the default index): 2.10.0 is cu128 (runs on R570), 2.11.0 and newer are cu130 / cu132
# (need R580) — compat/torch.toml. The index serves these releases, each pinning its triton as the real ones do.
TORCHES = ("2.9.1", "2.10.0", "2.11.0", "2.14.0", "2.15.0")
R580 = 'driver = "580.95.05"\ngpus = ["9.0"]'
R570 = 'driver = "570.172.08"\ngpus = ["9.0"]'


@pytest.fixture(scope="module")
def pkg_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("pkgindex"))
    m = load_matrix()
    for tv in TORCHES:
        rel = m.torch_release(tv)
        assert rel is not None and rel.triton
        idx.add("simple", "triton", rel.triton, tag=TAG)
        idx.add("simple", "torch", tv, tag=TAG, requires=(f"triton=={rel.triton}; platform_system == 'Linux'",))
    # servelm pins torch exactly, like vLLM: each release needs one torch; its first release did not (an old vLLM
    # sdist): a resolver that fixes torch first falls back to it
    idx.add("simple", "servelm", "0.0", requires=("torch>=2.0",))
    for v, tv in (("0.1", "2.9.1"), ("0.2", "2.10.0"), ("0.3", "2.14.0")):
        idx.add("simple", "servelm", v, requires=(f"torch=={tv}",))
    # pinlm is servelm whose newest release pins a dependency no index serves (vLLM 0.34.0 and flashinfer-python
    # 0.7.3): the driver its torch needs is necessary, not enough
    for v, tv in (("0.2", "2.10.0"), ("0.3", "2.14.0")):
        idx.add("simple", "pinlm", v, requires=(f"torch=={tv}",))
    idx.add("simple", "pinlm", "0.4", requires=("torch==2.14.0", "ghostdep==0.7.3"))
    idx.add("simple", "ghostdep", "0.7.2")
    idx.add("simple", "boundlib", "1.0", requires=("torch>=2.9,<2.11",))  # bounds torch from above
    idx.add("simple", "legacy", "1.0", requires=("torch==2.9.1",))  # pins a torch older than any host needs
    idx.add("simple", "newonly", "1.0", requires=("torch==2.15.0",))  # only the newest torch will do
    for v in ("1.0", "2.0", "3.0"):  # three releases, no torch named: the search's bounds (Run.bound)
        idx.add("simple", "stepkit", v)
    idx.add("simple", "plainlib", "1.0")
    idx.add("simple", "plainlib", "2.0")
    # a newest release that needs a newer Python than the target's
    idx.add("simple", "pyfloor", "1.0", requires_python=">=3.9")
    idx.add("simple", "pyfloor", "2.0", requires_python=">=3.13")
    idx.add("simple", "pinner", "1.0", requires=("plainlib==1.0",))  # another package pins one the user named
    idx.add("simple", "shared-dep", "1.0")
    idx.add("simple", "shared-dep", "2.0")
    idx.add("simple", "share-a", "1.0")
    idx.add("simple", "share-a", "2.0", requires=("shared-dep>=2",))
    idx.add("simple", "share-b", "1.0", requires=("shared-dep<2",))
    # share-a again, whose newest pins a torch R570 does not run: beside it, 2.0 is the newest that can be locked
    idx.add("simple", "sharelm", "1.0", requires=("torch",))
    idx.add("simple", "sharelm", "2.0", requires=("torch", "shared-dep>=2"))
    idx.add("simple", "sharelm", "3.0", requires=("torch==2.14.0",))
    # unsloth-like: 1.0 has an extra that pins an older torch; 2.0 has no such extra any more
    idx.add("simple", "extrakit", "1.0", requires=("torch", "legacy; extra == 'torch291'"), extras=("torch291",))
    idx.add("simple", "extrakit", "2.0", requires=("torch",))
    # sglang-like: `all` brings legacy in 1.0, nothing in 2.0 (an alias kept for old install lines), 3.0 dropped it,
    # 4.0 has it again and there it needs what the index lacks; contentkit is the same but its 2.0's `all` brings
    # plainlib — dropping it took something away
    for kit, brings in (("aliaskit", ()), ("contentkit", ("plainlib; extra == 'all'",))):
        idx.add("simple", kit, "1.0", requires=("torch==2.9.1", "legacy; extra == 'all'"), extras=("all",))
        idx.add("simple", kit, "2.0", requires=("torch==2.10.0", *brings), extras=("all",))
        idx.add("simple", kit, "3.0", requires=("torch==2.14.0",))
        idx.add("simple", kit, "4.0", requires=("torch==2.15.0", "ghostdep==0.7.3; extra == 'all'"), extras=("all",))
    # foldkit: 1.0's `srt` brings five packages; 2.0 requires them all itself, 3.0 four of them, 4.0 three
    srt = ("plainlib", "stepkit", "share-a", "shared-dep", "pyfloor")
    idx.add("simple", "foldkit", "1.0", requires=("torch==2.9.1", *(f"{n}; extra == 'srt'" for n in srt)),
            extras=("srt",))
    for v, tv, n in (("2.0", "2.10.0", 5), ("3.0", "2.14.0", 4), ("4.0", "2.15.0", 3)):
        idx.add("simple", "foldkit", v, requires=(f"torch=={tv}", *srt[:n]))
    # gapextra: its newest needs a torch R570 cannot run, the one below it dropped `all`, which brought legacy
    idx.add("simple", "gapextra", "1.0", requires=("torch==2.9.1", "legacy; extra == 'all'"), extras=("all",))
    idx.add("simple", "gapextra", "2.0", requires=("torch==2.10.0",))
    idx.add("simple", "gapextra", "3.0", requires=("torch==2.14.0",), extras=("all",))
    # gapkit: its newest needs a torch R570 cannot run, the one below it a dependency the index lacks
    idx.add("simple", "gapkit", "1.0", requires=("torch==2.9.1",))
    idx.add("simple", "gapkit", "2.0", requires=("torch==2.10.0", "ghostdep==0.7.3"))
    idx.add("simple", "gapkit", "3.0", requires=("torch==2.14.0",))
    # an extra that asks for another extra of the same package, which pins a package that pins torch (as unsloth's
    # cu124-torch240 -> cu124onlytorch240 -> xformers==0.0.28.post1 -> torch==2.4.1)
    # oldextra: only its 2023 release has the extra x (and names no torch); 2.0 pins the newest torch
    idx.add("simple", "oldextra", "1.0", requires=("plainlib; extra == 'x'",), extras=("x",), uploaded="2023-01-01")
    idx.add("simple", "oldextra", "2.0", requires=("torch==2.15.0",), uploaded="2026-10-01")
    idx.add("simple", "nestkit", "1.0", requires=("torch", "nestkit[inner]; extra == 'outer'",
                                                  "legacy==1.0; extra == 'inner'"), extras=("outer", "inner"))
    idx.start()
    yield idx
    idx.stop()


def _project(root: Path, idx: LocalIndex, packages: list[str], target: str, torch: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "triton-env.toml").write_text(
        f'[environment]\npython = "3.11"\npackages = {json.dumps(packages)}\n'
        + (f'torch = "{torch}"\n' if torch else "")
        + f'[indexes]\ntorch = "default"\ndefault = "{idx.index_url("simple")}"\n\n'
        f'[[targets]]\nname = "gpu"\nglibc = "2.35"\n{target}\n', encoding="utf-8")
    return root


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def _locked(root: Path) -> tuple[dict[str, str], object]:
    lock = read_lock(root / "triton-env.lock")
    (t,) = lock.targets
    return {p.name: p.version for p in t.packages}, t.selection


def test_a_package_that_pins_torch_gets_its_newest_release_and_holds_torch_back(tmp_path: Path,
                                                                                 pkg_index: LocalIndex) -> None:
    root = _project(tmp_path, pkg_index, ["servelm"], R580)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert (versions["servelm"], versions["torch"]) == ("0.3", "2.14.0")  # not servelm 0.1 with torch 2.15.0
    assert sel.torch == "2.14.0" and sel.triton == load_matrix().torch_release("2.14.0").triton
    assert sel.reasons[0] == ("torch 2.14.0: the newest torch the packages allow (servelm 0.3 requires "
                              "torch==2.14.0); torch 2.15.0 would fit this target")
    assert "why: torch 2.14.0: the newest torch the packages allow (servelm 0.3" in out
    assert not [w for w in sel.warnings if "servelm" in w]  # at its newest: nothing to warn
    assert [(d.name, d.version, d.newest, d.held_by) for d in sel.direct] == [("servelm", "0.3", "0.3", None)]
    # show --json reads the same from the lock
    code, out = _run("show", "-p", str(root), "--json")
    assert code == 0, out
    (t,) = json.loads(out)["targets"]
    assert t["direct"] == [{"name": "servelm", "requirement": "servelm", "version": "0.3", "newest": "0.3",
                            "at_newest": True, "held_by": None}]
    assert {p["name"] for p in t["packages"]} == {"servelm", "torch", "triton"}


def test_check_takes_the_torch_the_packages_chose_and_still_sees_a_real_drift(tmp_path: Path,
                                                                              pkg_index: LocalIndex) -> None:
    """servelm holds torch at 2.14.0 where the target runs 2.15.0: a fresh lock is no drift (resolve would write the
    same lock), while a triton or a torch the matrix no longer gives that target still is."""
    import dataclasses

    from tritonlock.check import drift_problems
    from tritonlock.intent.read import read_intent

    root = _project(tmp_path, pkg_index, ["servelm"], R580)
    assert _run("resolve", "-p", str(root))[0] == 0
    code, out = _run("check", "-p", str(root))
    assert code == 0 and "decisions unchanged under matrix" in out, out
    lock = read_lock(root / "triton-env.lock")
    intent = read_intent(root / "triton-env.toml")
    (t,) = lock.targets
    assert t.selection.torch == "2.14.0" and drift_problems(lock, intent) == []

    def with_selection(**kw: object) -> object:
        return dataclasses.replace(lock, targets=(dataclasses.replace(t, selection=dataclasses.replace(
            t.selection, **kw)),))

    triton = load_matrix().torch_release("2.14.0").triton
    (p,) = drift_problems(with_selection(triton="3.0.0"), intent)
    assert f"the decision would change under matrix {load_matrix().version}: triton triton 3.0.0 → triton {triton}" \
        in p.message
    old_driver = dataclasses.replace(t.selection.target, driver="450.80.02")  # torch 2.14 runs on no CUDA it has
    (p,) = drift_problems(with_selection(target=old_driver), intent)
    assert p.message.startswith("target 'gpu': nothing fits it any more under matrix"), p.message


def test_a_check_its_releases_metadata_answers_is_not_asked_of_uv(tmp_path: Path, pkg_index: LocalIndex,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """On R570 torch 2.14.0 does not fit: servelm 0.3 (torch==2.14.0, its METADATA read for the decision) cannot be
    locked beside any torch this target runs, and no release lies between it and 0.2. uv is asked the packages as
    written, never for servelm==0.3 nor for a servelm newer than 0.2 — and the lock and its words are the same."""
    asked = asked_of_uv(monkeypatch)
    root = _project(tmp_path, pkg_index, ["servelm"], R570)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert (versions["servelm"], versions["torch"]) == ("0.2", "2.10.0")
    assert asked and all(q == ("servelm",) for q in asked), asked
    (w,) = [w for w in sel.warnings if w.startswith("servelm")]
    assert w.endswith("(checked: servelm 0.3's METADATA requires torch==2.14.0, and torch 2.10.0 is locked here)"), w


def test_when_the_host_is_the_limit_the_warning_names_the_package_and_the_host(tmp_path: Path,
                                                                               pkg_index: LocalIndex) -> None:
    root = _project(tmp_path, pkg_index, ["servelm"], R570)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert (versions["servelm"], versions["torch"]) == ("0.2", "2.10.0")
    (w,) = [w for w in sel.warnings if w.startswith("servelm")]
    assert w.startswith("servelm 0.2 is locked, not its newest release 0.3: servelm 0.3 requires torch==2.14.0; "
                        "torch 2.14.0 does not fit this target: ")
    # the default index's torch 2.14.0 is a CUDA 13 build; PyTorch's index has CUDA 12 builds of it for this driver
    assert ("this driver is 570.172.08 (PyTorch's index has a build of torch 2.14.0 that fits: without [indexes] torch "
            "= \"default\" in triton-env.toml the lock could take it); the newest servelm") in w, w
    # (servelm 0.3's METADATA, read already, answers the check: uv is not asked for a release beside a torch it
    # excludes, and the words say the METADATA's fact once)
    assert "driver" in w and w.endswith("; the newest servelm whose torch fits here is 0.2 (checked: servelm 0.3's "
                                        "METADATA requires torch==2.14.0, and torch 2.10.0 is locked here)"), w
    assert (sel.direct[0].version, sel.direct[0].newest) == ("0.2", "0.3") and sel.direct[0].held_by in w
    assert "warning: servelm 0.2 is locked, not its newest release 0.3" in out
    # the dry run with --packages says the same, as JSON, without writing a lock
    other = _project(tmp_path / "dry", pkg_index, ["servelm"], R570)
    code, out = _run("resolve", "-p", str(other), "--dry-run", "--packages", "--json")
    assert code == 0, out
    (t,) = json.loads(out)["targets"]
    assert t["torch"] == "2.10.0"
    assert t["direct"] == [{"name": "servelm", "requirement": "servelm", "version": "0.2", "newest": "0.3",
                              "at_newest": False, "held_by": sel.direct[0].held_by}]
    assert not (other / "triton-env.lock").exists()


def test_packages_that_conflict_name_each_other(tmp_path: Path, pkg_index: LocalIndex) -> None:
    root = _project(tmp_path, pkg_index, ["boundlib", "servelm"], R580)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert (versions["boundlib"], versions["servelm"], versions["torch"]) == ("1.0", "0.2", "2.10.0")
    (w,) = [w for w in sel.warnings if w.startswith("servelm")]
    # the package named before it that cannot be beside the torch servelm 0.3 needs (their facts), then the check
    # that failed (uv's words)
    assert w.startswith("servelm 0.2 is locked, not its newest release 0.3: servelm 0.3 requires torch==2.14.0, and "
                        "beside torch 2.14.0 (cu130) boundlib 1.0, named before it, cannot be locked: it requires "
                        "torch<2.11,>=2.9 (checked: uv finds no lock with servelm==0.3 with boundlib>=1.0: Because "
                        "servelm>=0.3 depends on torch==2.14.0 and all versions of boundlib depend on torch<2.11"), w
    assert sel.reasons[0].startswith("torch 2.10.0: the newest torch the packages allow (")
    assert "boundlib 1.0 requires torch<2.11,>=2.9" in sel.reasons[0]


def test_an_old_pin_takes_the_old_torch_and_says_so(tmp_path: Path, pkg_index: LocalIndex) -> None:
    root = _project(tmp_path, pkg_index, ["legacy", "plainlib"], R580)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert (versions["legacy"], versions["torch"], versions["plainlib"]) == ("1.0", "2.9.1", "2.0")
    assert sel.reasons[0] == ("torch 2.9.1: the newest torch the packages allow (legacy 1.0 requires torch==2.9.1); "
                              "torch 2.15.0 would fit this target")
    assert "packages at their newest release: legacy 1.0, plainlib 2.0" in sel.reasons


def test_packages_without_torch_keep_the_newest_torch(tmp_path: Path, pkg_index: LocalIndex) -> None:
    root = _project(tmp_path, pkg_index, ["plainlib"], R580)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert (versions["plainlib"], versions["torch"]) == ("2.0", "2.15.0")
    assert sel.reasons[0].startswith("torch 2.15.0: the newest release")


def test_a_newer_python_floor_is_named(tmp_path: Path, pkg_index: LocalIndex) -> None:
    root = _project(tmp_path, pkg_index, ["pyfloor"], R580)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert versions["pyfloor"] == "1.0"
    (w,) = [w for w in sel.warnings if w.startswith("pyfloor")]
    assert w.startswith("pyfloor 1.0 is locked, not its newest release 2.0: pyfloor 2.0 requires Python >=3.13 "
                        "(this target: Python 3.11) (checked: uv finds no lock with pyfloor==2.0: ")
    assert "pyfloor==2.0 depends on Python>=3.13" in w


def test_the_intents_torch_is_a_constraint_the_packages_must_meet(tmp_path: Path, pkg_index: LocalIndex) -> None:
    root = _project(tmp_path, pkg_index, ["servelm"], R580, torch=">=2.10,<2.14")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert (versions["servelm"], versions["torch"]) == ("0.2", "2.10.0")
    (w,) = [w for w in sel.warnings if w.startswith("servelm")]
    assert w.startswith("servelm 0.2 is locked, not its newest release 0.3: servelm 0.3 requires torch==2.14.0, "
                        "outside torch = '>=2.10,<2.14' in ")


@pytest.mark.parametrize(("packages", "target", "torch", "expect"), [
    (["newonly"], R570, "", "newonly 1.0 requires torch==2.15.0; torch 2.15.0 does not fit this target: "),
    (["legacy"], R580, ">=2.10", "legacy 1.0 requires torch==2.9.1, outside torch = '>=2.10' in "),
])
def test_no_fitting_torch_is_a_conflict_that_names_the_package(tmp_path: Path, pkg_index: LocalIndex,
                                                               packages: list[str], target: str, torch: str,
                                                               expect: str) -> None:
    root = _project(tmp_path, pkg_index, packages, target, torch=torch)
    code, out = _run("resolve", "-p", str(root))
    assert code != 0 and "Traceback" not in out
    assert "the packages cannot be locked with any torch that fits this target" in out
    assert expect in out
    assert not (root / "triton-env.lock").exists()


def test_an_offline_dry_run_does_not_claim_the_torch_the_packages_may_hold_back(tmp_path: Path,
                                                                               pkg_index: LocalIndex) -> None:
    root = _project(tmp_path, pkg_index, ["servelm"], R580)
    before = len(pkg_index.requests)
    code, out = _run("resolve", "-p", str(root), "--dry-run", "--json")
    assert code == 0, out
    assert len(pkg_index.requests) == before  # no network
    (t,) = json.loads(out)["targets"]
    assert t["torch"] == "2.15.0" and "direct" not in t
    assert ("the packages were not resolved (--dry-run without --packages uses no network): torch 2.15.0 is the "
            "newest this target allows, and the packages you named may hold it back") in t["warnings"][-1]
    # and the lock does hold it back
    code, out = _run("resolve", "-p", str(root))
    assert code == 0 and _locked(root)[1].torch == "2.14.0"


@pytest.mark.parametrize(("packages", "held", "warning"), [
    (["pinner", "plainlib"], "plainlib", "plainlib 1.0 is locked, not its newest release 2.0: pinner 1.0 requires "
                                          "plainlib==1.0 (checked: uv finds no lock with plainlib==2.0 with "
                                          "pinner>=1.0: Because all versions of pinner depend on plainlib==1.0"),
    (["share-b", "share-a"], "share-a", "share-a 1.0 is locked, not its newest release 2.0: checked: uv finds no "
                                        "lock with share-a==2.0 with share-b>=1.0: Because all versions of share-b "
                                        "depend on shared-dep<2 and share-a>=2.0 depends on shared-dep>=2"),
])
def test_a_package_held_back_by_another_names_the_requirement(tmp_path: Path, pkg_index: LocalIndex,
                                                             packages: list[str], held: str, warning: str) -> None:
    root = _project(tmp_path, pkg_index, packages, R580)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    _, sel = _locked(root)
    assert [w for w in sel.warnings if w.startswith(warning)]
    assert [d.name for d in sel.direct if d.held_by] == [held]


def test_a_package_named_later_never_holds_back_one_named_before_it(tmp_path: Path, pkg_index: LocalIndex) -> None:
    """share-a 2.0 needs shared-dep >= 2, every share-b needs shared-dep < 2. Named share-b first, share-a is held
    back (above); named share-a first, share-b may not hold share-a back: a conflict naming both (exit 3, no lock),
    whose fix — share-a at most the release uv locks beside share-b — is checked, and works."""
    root = _project(tmp_path, pkg_index, ["share-a", "share-b"], R580)
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert not (root / "triton-env.lock").exists()
    msg = out[out.index("error: target 'gpu': "):].removeprefix("error: ")
    assert msg.startswith("target 'gpu': share-b cannot be locked beside share-a 2.0, the newest share-a that can be "
                          "locked here — and share-b, named after it, may not hold it back (the packages keep the order "
                          "you wrote): uv finds no lock with share-a==2.0 and share-b: Because all versions of share-b "
                          "depend on shared-dep<2 and share-a>=2.0 depends on shared-dep>=2"), msg
    assert ('  fix: add "share-a<=1.0" to [environment].packages (checked: uv then locks share-a 1.0, share-b 1.0 with '
            "torch 2.15.0), or put share-a and share-b in two environments (or targets), or drop share-b") in msg, msg
    intent = root / "triton-env.toml"
    intent.write_text(intent.read_text().replace('"share-a"', '"share-a<=1.0"'))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, _ = _locked(root)
    assert (versions["share-a"], versions["share-b"]) == ("1.0", "1.0")


def test_below_a_newest_release_no_torch_here_admits_the_next_one_keeps_the_order_written(
        tmp_path: Path, pkg_index: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """On R570 sharelm 3.0 (torch==2.14.0, which does not fit) cannot be locked whatever else is named: its METADATA
    says so, and uv is not asked for it. sharelm 2.0 is then the newest that can be locked here, and share-b, named
    after it, may not hold it back: the conflict naming both, as for share-a — never sharelm 1.0 locked quietly."""
    asked = asked_of_uv(monkeypatch)
    root = _project(tmp_path, pkg_index, ["sharelm", "share-b"], R570)
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert not (root / "triton-env.lock").exists()
    msg = out[out.index("error: target 'gpu': "):].removeprefix("error: ")
    assert msg.startswith("target 'gpu': share-b cannot be locked beside sharelm 2.0, the newest sharelm that can be "
                          "locked here — and share-b, named after it, may not hold it back"), msg
    assert '  fix: add "sharelm<=1.0" to [environment].packages (checked: uv then locks sharelm 1.0, share-b 1.0' in msg
    assert not [q for q in asked if any(x.startswith("sharelm==3.0") for x in q)], asked
    # (nothing lies between 1.0 and 2.0: "sharelm>1.0" is not asked either, once sharelm==2.0 failed with share-b)
    assert not [q for q in asked if "sharelm>1.0" in q], asked


def test_why_says_what_the_packages_hold_back_and_what_unlocks_it(tmp_path: Path, pkg_index: LocalIndex) -> None:
    held = _project(tmp_path / "r570", pkg_index, ["servelm"], R570)
    assert _run("resolve", "-p", str(held))[0] == 0
    code, out = _run("why", "-p", str(held))
    assert code == 0, out
    assert ("  your packages (triton-env.lock):\n    servelm 0.3 (locked: 0.2) needs torch 2.14.0: needs driver >= "
            "580.65.06 (you have 570.172.08; the R580 branch)\n      checked with uv: with it, the lock gets servelm "
            "0.3\n") in out
    code, out = _run("why", "-p", str(held), "--json")
    (t,) = json.loads(out)["targets"]
    assert t["packages"][0] == ("servelm 0.3 (locked: 0.2) needs torch 2.14.0: needs driver >= 580.65.06 (you have "
                                "570.172.08; the R580 branch) — checked with uv: with it, the lock gets servelm 0.3")
    there = _project(tmp_path / "floor", pkg_index, ["servelm"], R580_FLOOR)  # the claim, locked for real
    assert _run("resolve", "-p", str(there))[0] == 0
    assert _locked(there)[0]["servelm"] == "0.3"
    pinned = _project(tmp_path / "r580", pkg_index, ["servelm"], R580)
    assert _run("resolve", "-p", str(pinned))[0] == 0
    code, out = _run("why", "-p", str(pinned))
    assert ("torch 2.15.0 fits this target, but the lock holds torch 2.14.0: servelm 0.3 requires torch==2.14.0 — a "
            "newer release of the package that allows torch 2.15.0 would unlock it; no change to this machine would"
            ) in out
    # a stale lock says nothing of the packages (it was decided for another intent)
    intent = pinned / "triton-env.toml"
    intent.write_text(intent.read_text().replace('"servelm"', '"servelm", "plainlib"'))
    code, out = _run("why", "-p", str(pinned))
    assert code == 0 and "your packages (triton-env.lock)" not in out and "(no fresh triton-env.lock: " in out


def test_an_offline_dry_run_with_one_fitting_torch_has_nothing_to_warn(tmp_path: Path, pkg_index: LocalIndex) -> None:
    root = _project(tmp_path, pkg_index, ["servelm"], R580, torch="==2.15.*")  # one release: 2.15.0
    code, out = _run("resolve", "-p", str(root), "--dry-run", "--json")
    (t,) = json.loads(out)["targets"]
    assert code == 0 and t["torch"] == "2.15.0" and not any("not resolved" in w for w in t["warnings"])


def test_a_package_no_index_has_is_uvs_own_error_not_a_torch_story(tmp_path: Path, pkg_index: LocalIndex) -> None:
    root = _project(tmp_path, pkg_index, ["no-such-package-xyz", "servelm"], R580)
    code, out = _run("resolve", "-p", str(root))
    assert code == 4 and "Traceback" not in out and "no-such-package-xyz" in out
    assert "cannot be locked with any torch" not in out  # no torch requirement explains it: uv's words stand
    assert not (root / "triton-env.lock").exists()


def test_markers_and_extras_in_the_packages(tmp_path: Path, pkg_index: LocalIndex) -> None:
    """A package for another platform is not locked and not warned about; an extra does not hide the package."""
    root = _project(tmp_path, pkg_index, ["plainlib; sys_platform == 'win32'", "servelm[fast]"], R580)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert "plainlib" not in versions and versions["servelm"] == "0.3"
    assert {d.name: (d.version, d.held_by) for d in sel.direct} == {"plainlib": (None, None), "servelm": ("0.3", None)}


def test_a_torch_the_index_lacks_is_said_as_the_index_not_the_packages(tmp_path: Path) -> None:
    idx = LocalIndex(tmp_path / "idx")
    rel = load_matrix().torch_release("2.14.0")
    assert rel is not None and rel.triton
    idx.add("simple", "triton", rel.triton, tag=TAG)
    idx.add("simple", "torch", "2.14.0", tag=TAG, requires=(f"triton=={rel.triton}; platform_system == 'Linux'",))
    idx.add("simple", "plainlib", "2.0")
    idx.start()
    try:
        root = _project(tmp_path / "p", idx, ["plainlib"], R580)
        code, out = _run("resolve", "-p", str(root))
        assert code == 0, out
        _, sel = _locked(root)
        assert sel.torch == "2.14.0"
        assert sel.reasons[0] == (f"torch 2.14.0: the newest torch the index serves (torch 2.15.0 is not on "
                                  f"{idx.index_url('simple')}); torch 2.15.0 would fit this target")
        code, out = _run("why", "-p", str(root))
        assert code == 0 and "a newer release of the package" not in out
    finally:
        idx.stop()


def test_torch_spec_admits_exactly_the_fitting_releases() -> None:
    from tritonlock.decide.requirements import torch_spec

    known = ["2.9.1", "2.10.0", "2.11.0", "2.12.0", "2.14.0"]
    assert torch_spec(["2.10.0"], known) == "==2.10.0"
    spec = torch_spec(["2.9.1", "2.10.0", "2.12.0"], known)  # 2.11.0 does not fit: a hole, not a range
    from packaging.specifiers import SpecifierSet

    assert [v for v in known if v in SpecifierSet(spec)] == ["2.9.1", "2.10.0", "2.12.0"]


@pytest.fixture(scope="module")
def backend_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    """PyTorch-shaped: torch 2.6.0 and 2.7.1 per CUDA backend (conftest's), and a package whose newest release pins
    the older torch, which the newest torch's backend index (cu126 for 2.7.1, cu124 for 2.6.0) cannot give it."""
    from conftest import populate

    idx = LocalIndex(tmp_path_factory.mktemp("backends"))
    populate(idx)
    idx.add("simple", "pin26", "1.0", requires=("torch",))
    idx.add("simple", "pin26", "2.0", requires=("torch==2.6.0",))
    idx.start()
    yield idx
    idx.stop()


def _backend_project(root: Path, idx: LocalIndex, packages: list[str]) -> Path:
    from conftest import write_intent

    write_intent(root, idx, f'[environment]\npython = "3.11"\ntorch = ">=2.6,<2.8"\npackages = {json.dumps(packages)}\n'
                            f'[[targets]]\nname = "g"\nglibc = "2.35"\n{R580}\n')
    return root


def test_every_torch_index_is_asked_and_the_packages_newest_wins_over_torchs(tmp_path: Path,
                                                                            backend_index: LocalIndex) -> None:
    """The newest torch (2.7.1) comes from cu126; pin26 2.0 needs 2.6.0, which only cu124's group offers: the lock
    takes pin26 2.0 with torch 2.6.0 (packages first), not pin26 1.0 with torch 2.7.1."""
    root = _backend_project(tmp_path, backend_index, ["pin26"])
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert (versions["pin26"], sel.torch, sel.backend) == ("2.0", "2.6.0", "cu124")
    assert sel.index == f"{backend_index.url}/whl/cu124"


def test_a_package_at_its_newest_with_the_first_index_asks_no_other(tmp_path: Path, backend_index: LocalIndex) -> None:
    from tritonlock.intent.read import read_intent
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.decide.packages import decide
    from tritonlock.decide.resolve import feasible
    from tritonlock.lock.closure import compile_target
    from tritonlock.project import select

    root = _backend_project(tmp_path, backend_index, ["einops"])
    intent = read_intent(root / "triton-env.toml")
    matrix = load_matrix()
    (sel,) = select(intent)
    candidates = feasible(intent, matrix, sel.target, "3.11")
    assert len({c.index for c in candidates}) == 2  # two torch indexes could be asked
    calls: list[str] = []

    def counting(plan, d, **kw):  # type: ignore[no-untyped-def]
        calls.append(str(plan.selection.index))
        return compile_target(plan, d, **kw)

    chosen, packages = decide(sel, candidates, intent, matrix, backend_index.index_url("simple"), compile=counting,
                              default_python="3.11")
    assert chosen.torch == "2.7.1" and calls == [f"{backend_index.url}/whl/cu126"]


R580_FLOOR = 'driver = "580.65.06"\ngpus = ["9.0"]'  # the least driver `why` names for torch 2.14.0 on a 9.0 GPU


def test_why_checks_each_change_by_locking_the_packages_and_names_the_next_blocker(tmp_path: Path,
                                                                                   pkg_index: LocalIndex) -> None:
    """pinlm 0.4 needs torch 2.14.0 (driver >= 580.65.06 here) and a ghostdep no index serves: the driver is not
    enough, and `why` says so — what the lock would get with it and what then holds pinlm 0.4 — as the real lock
    with that driver shows."""
    root = _project(tmp_path / "r570", pkg_index, ["pinlm"], R570)
    assert _run("resolve", "-p", str(root))[0] == 0
    assert _locked(root)[0]["pinlm"] == "0.2"
    there = _project(tmp_path / "r580", pkg_index, ["pinlm"], R580_FLOOR)  # the change applied, locked for real
    assert _run("resolve", "-p", str(there))[0] == 0
    versions, sel = _locked(there)
    assert (versions["pinlm"], versions["torch"]) == ("0.3", "2.14.0")
    (d,) = sel.direct
    assert d.held_by and "ghostdep==0.7.3" in d.held_by
    code, out = _run("why", "-p", str(root))
    assert code == 0, out
    driver = "driver >= 580.65.06 (you have 570.172.08; the R580 branch)"
    assert ("  your packages (triton-env.lock):\n"
            f"    pinlm 0.4 (locked: 0.2) needs torch 2.14.0, but {driver} is not enough\n"
            "      checked with uv: with it, the lock gets pinlm 0.3 (torch 2.14.0 (cu130) + triton 3.8.0); pinlm 0.4 "
            f"is then held back by: {d.held_by}\n") in out
    with_pkgs = ("      with your packages (checked with uv): the lock gets torch 2.14.0 (cu130) + triton 3.8.0 — the "
                 "newest torch the packages allow (pinlm 0.3 requires torch==2.14.0); torch 2.15.0 would fit this "
                 "target\n")
    assert (f"  torch 2.15.0 + triton 3.9.0: needs {driver}\n"
            "      because: published only for CUDA 13.2 on linux_x86_64, which need driver >= 580.65.06; this driver "
            "is 570.172.08\n"
            "      then: torch 2.15.0 (cu132) + triton 3.9.0\n" + with_pkgs) in out
    assert out.count(with_pkgs) == 2  # the 2.11–2.14 lines need the same driver: the same lock
    page = (Path(__file__).parents[1] / "docs" / "decision.md").read_text(encoding="utf-8")
    shown = page.split("(`tests/test_packages.py` runs it):\n\n```\n", 1)[1].split("\n```", 1)[0]
    for line in shown.splitlines():  # the manual shows this run ("…": the rest of the line, uv's words)
        assert line.split("…")[0] in out, line
    assert out.endswith("checked: each line by resolving again with its change against compat/ (offline), and with "
                        "your packages by locking them with uv and the indexes with that change applied\n")
    assert sel.reasons[0] == ("torch 2.14.0: the newest torch the packages allow (pinlm 0.3 requires "
                              "torch==2.14.0); torch 2.15.0 would fit this target")  # what the line says it is
    code, out = _run("why", "-p", str(root), "--json")
    (t,) = json.loads(out)["targets"]
    assert t["packages"][0].startswith(f"pinlm 0.4 (locked: 0.2) needs torch 2.14.0, but {driver} is not enough — "
                                       "checked with uv: with it, the lock gets pinlm 0.3 (")
    first = t["lines"][0]["with_packages"]
    assert (first["checked"], first["then"]["torch"], first["then"]["name"]) == (True, "2.14.0", "gpu")
    assert t["checked"].startswith("each line by resolving again")


def test_why_offline_or_without_a_fresh_lock_says_the_packages_were_not_checked(tmp_path: Path) -> None:
    """--offline, or no fresh lock: the lines stand as checked against compat/, and `why` says the packages were not
    locked; with the index gone, the uv check says what failed — no traceback, exit 0, the same advice."""
    idx = LocalIndex(tmp_path / "idx")
    m = load_matrix()
    for tv in ("2.10.0", "2.14.0"):
        rel = m.torch_release(tv)
        assert rel is not None and rel.triton
        idx.add("simple", "triton", rel.triton, tag=TAG)
        idx.add("simple", "torch", tv, tag=TAG, requires=(f"triton=={rel.triton}; platform_system == 'Linux'",))
    for v, tv in (("0.2", "2.10.0"), ("0.3", "2.14.0")):
        idx.add("simple", "servelm", v, requires=(f"torch=={tv}",))
    idx.start()
    root = _project(tmp_path / "p", idx, ["servelm"], R570)
    try:
        code, out = _run("why", "-p", str(root))  # no lock yet
        assert code == 0, out
        assert out.endswith("checked: each line by resolving again with its change against compat/ (offline) — not "
                            "by locking your packages with uv, which may hold back what a line names (no fresh "
                            "triton-env.lock: run `tritonlock resolve`, then `why` checks that too)\n")
        assert "with your packages" not in out and "your packages (triton-env.lock)" not in out
        assert _run("resolve", "-p", str(root))[0] == 0
        code, out = _run("why", "-p", str(root), "--offline")
        assert code == 0, out
        assert ("    servelm 0.3 (locked: 0.2) needs torch 2.14.0: needs driver >= 580.65.06 (you have 570.172.08; the "
                "R580 branch)\n      not checked with uv (--offline)\n") in out
        assert out.endswith("(offline) — not by locking your packages with uv, which may hold back what a line names "
                            "(--offline)\n")
    finally:
        idx.stop()
    code, out = _run("why", "-p", str(root))  # the index is gone: the check says so, the advice stands
    assert code == 0 and "Traceback" not in out, out
    assert "    servelm 0.3 (locked: 0.2) needs torch 2.14.0: needs driver >= 580.65.06 (" in out
    assert "      not checked with uv: " in out
    assert "      with your packages" not in out
    code, again = _run("why", "-p", str(root), "--offline")  # and --offline never asked it
    assert code == 0 and "not checked with uv (--offline)" in again


def test_why_applies_an_intent_change_to_the_packages_and_caps_what_it_locks(tmp_path: Path,
                                                                             pkg_index: LocalIndex) -> None:
    """A line the intent's torch = rules out names `torch = ">=X"`: locked with that intent, pinlm allows no
    torch >= 2.15.0, and the line says the packages then cannot be locked. Each distinct change is one packages
    decision; past the limit a line says it was not checked."""
    from tritonlock.decide.why_packages import check_packages
    from tritonlock.intent.read import read_intent
    from tritonlock.project import packages_decision, running_python

    root = _project(tmp_path, pkg_index, ["pinlm"], R580, torch="<2.12")
    assert _run("resolve", "-p", str(root))[0] == 0
    code, out = _run("why", "-p", str(root))
    assert code == 0, out
    assert ('  torch 2.15.0 + triton 3.9.0: needs torch = ">=2.15.0" in triton-env.toml (it fits this machine as it '
            'is)\n      then: torch 2.15.0 (cu132) + triton 3.9.0\n'
            '      with your packages (checked with uv): nothing can be locked — ') in out
    assert '  torch 2.14.1 + triton 3.8.0: needs torch = ">=2.14.1" in triton-env.toml' in out
    asked: list[tuple[str, tuple[str, ...]]] = []

    def decide(it: object, ts: tuple[object, ...]) -> tuple[object, ...]:
        asked.append((it.torch, tuple(t.name for t in ts)))  # type: ignore[attr-defined]
        return packages_decision(it, ts)  # type: ignore[arg-type]

    from tritonlock.decide.why import advise

    intent = read_intent(root / "triton-env.toml")
    m = load_matrix()
    advice = [advise(intent, m, t, running_python()) for t in intent.targets]
    (a,) = check_packages(advice, intent, m, running_python(), {}, decide, None, limit=1)  # type: ignore[arg-type]
    assert asked == [(">=2.15.0", ('gpu with torch >=2.15.0',))]
    by = {ln.torch: ln.with_packages for ln in a.lines}
    assert by["2.15.0"] is not None and by["2.15.0"].checked and by["2.15.0"].then is not None
    assert not by["2.15.0"].then.ok
    assert by["2.14.1"] is not None and (by["2.14.1"].checked, by["2.14.1"].words) == (
        False, "not checked with uv: 1 other change(s) were checked first, at most 1 a run — narrow it with --target "
               "or --torch")


def test_a_release_without_the_extra_asked_for_is_not_the_package_asked_for(tmp_path: Path,
                                                                          pkg_index: LocalIndex) -> None:
    """extrakit[torch291]: only 1.0 declares that extra (its METADATA's Provides-Extra); 2.0, newer, would install
    without what the extra brings (uv only warns). The lock takes 1.0 with what its extra pins (legacy, torch
    2.9.1), and says why 2.0 is not taken."""
    root = _project(tmp_path, pkg_index, ["extrakit[torch291]"], R580)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert (versions["extrakit"], versions["legacy"], versions["torch"]) == ("1.0", "1.0", "2.9.1"), versions
    (w,) = [w for w in sel.warnings if w.startswith("extrakit 1.0 is locked, not its newest release 2.0: ")]
    assert "extrakit 2.0 has no extra torch291 (its METADATA declares no such Provides-Extra)" in w, w


@pytest.mark.parametrize(("kit", "want"), [("aliaskit", ("3.0", "2.14.0")), ("contentkit", ("2.0", "2.10.0"))])
def test_a_release_that_dropped_an_extra_declared_empty_before_it_is_what_was_asked_for(
        tmp_path: Path, pkg_index: LocalIndex, kit: str, want: tuple[str, str]) -> None:
    """sglang[all] on an RTX 4090: sglang 0.5.4.post1 declared `all` with no requirement of its own (its own
    requirements had taken everything in), 0.5.4.post2-0.5.8.post1 dropped the name, 0.5.9 has it again. A release
    that dropped an extra its nearest older release declared empty installs what the extra did: aliaskit[all] locks
    3.0 (4.0's `all` needs what the index lacks), not 2.0. Where that older release's extra brought something
    (contentkit 2.0's brings plainlib), 3.0 is not what was asked for: 2.0, said so."""
    from tritonlock.decide._pkgfacts import Facts
    from tritonlock.models import TargetSpec

    root = _project(tmp_path, pkg_index, [f"{kit}[all]"], R580)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert (versions[kit], versions["torch"]) == want, versions
    (w,) = [w for w in sel.warnings if w.startswith(f"{kit} {want[0]} is locked, not its newest release 4.0")]
    said = f"{kit} 3.0 has no extra all (its METADATA declares no such Provides-Extra)"
    assert (said in w) is (kit == "contentkit") and ("has no extra" in w) is (kit == "contentkit"), w
    folded = [w for w in sel.warnings if w.startswith(f"{kit} 3.0 has no extra all")]
    assert folded == ([] if kit == "contentkit" else [
        "aliaskit 3.0 has no extra all (its METADATA declares no such Provides-Extra); locked as what aliaskit[all] "
        "asks for: aliaskit 2.0, the newest release before it that declares it, gives it no requirement (nothing is "
        "lost)"]), sel.warnings
    facts, index = Facts(), pkg_index.index_url("simple")
    t = TargetSpec(name="gpu", os="linux", arch="x86_64", glibc="2.35")
    said = {v: facts.lacks_extras(index, kit, v, t, "3.11", ("all",)) for v in ("4.0", "3.0", "2.0", "1.0")}
    assert said == {"4.0": False, "3.0": kit == "contentkit", "2.0": False, "1.0": False}, said
    assert facts.lacks_extras(index, kit, "3.0", t, "3.11", ()) is False  # (no extra asked: nothing lacks)
    # an extra no older release declares: lacking (extrakit 2.0 beside 1.0's torch291 is the case with content)
    assert facts.lacks_extras(index, kit, "3.0", t, "3.11", ("nosuch",)) is True
    assert facts.lacks_extras(index, "extrakit", "2.0", t, "3.11", ("torch291",)) is True


def test_a_release_whose_own_requirements_hold_what_a_dropped_extra_brought_is_what_was_asked_for(
        tmp_path: Path, pkg_index: LocalIndex) -> None:
    """sglang[srt]: 0.5.2 is the last release that declares `srt` (43 packages); 0.5.3 and later require them
    themselves — all, or all but a few renamed ones (0.5.23: 38 of 43). foldkit[srt] on R580: 4.0 requires 3 of the
    5 packages 1.0's srt brought — not what was asked for, said so; 3.0 requires 4 of 5, 80 %, the least that counts:
    locked, with torch 2.14.0, and the lock says on what grounds (inferred)."""
    root = _project(tmp_path, pkg_index, ["foldkit[srt]"], R580)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert (versions["foldkit"], versions["torch"]) == ("3.0", "2.14.0"), versions
    assert {"plainlib", "stepkit", "share-a", "shared-dep"} <= set(versions) and "pyfloor" not in versions, versions
    (w,) = [w for w in sel.warnings if w.startswith("foldkit 3.0 is locked, not its newest release 4.0: ")]
    assert "foldkit 4.0 has no extra srt (its METADATA declares no such Provides-Extra): it is not what was asked " \
           "for" in w, w
    assert ("foldkit 3.0 has no extra srt (its METADATA declares no such Provides-Extra); locked as what "
            "foldkit[srt] asks for: its own requirements hold 4 of the 5 packages srt brought in foldkit 1.0, the "
            "newest release before it that declares it (inferred: foldkit took the extra into its own "
            "requirements)") in sel.warnings, sel.warnings


def test_a_held_back_package_is_not_said_to_be_at_the_newest_release_whose_torch_fits_when_one_above_it_does(
        tmp_path: Path, pkg_index: LocalIndex) -> None:
    """gapkit on R570: 3.0 needs torch 2.14.0 (CUDA 13: R580), 2.0 torch 2.10.0, which fits, but a dependency the
    index lacks; 1.0 is locked. "the newest gapkit whose torch fits here is 1.0" would be false: 2.0 is named as the
    newest whose torch fits, and the check uv made of it is quoted. Where nothing between fits (servelm on R570:
    0.3 needs 2.14.0, 0.2 is locked), the words stay."""
    root = _project(tmp_path, pkg_index, ["gapkit"], R570)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert (versions["gapkit"], versions["torch"]) == ("1.0", "2.9.1"), versions
    (w,) = [w for w in sel.warnings if w.startswith("gapkit 1.0 is locked, not its newest release 3.0: ")]
    assert "the newest gapkit whose torch fits here" not in w, w
    assert "gapkit 2.0, the newest release whose torch fits here, cannot be locked here with the rest" in w, w
    assert "uv finds no lock with gapkit==2.0" in w and "ghostdep" in w, w
    # gapextra[all]: 2.0's torch fits, but it is not what was asked for (no extra all): not asked of uv again (uv's
    # words would only echo the `!=` the search gave it), said as what it is
    root = _project(tmp_path / "x", pkg_index, ["gapextra[all]"], R570)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    assert (versions["gapextra"], versions["torch"]) == ("1.0", "2.9.1"), versions
    (w,) = [w for w in sel.warnings if w.startswith("gapextra 1.0 is locked, not its newest release 3.0: ")]
    assert "; the newest gapextra[all] whose torch fits here is 1.0; gapextra 2.0 has no extra all (its METADATA " \
           "declares no such Provides-Extra)" in w, w
    assert "uv finds no lock" not in w, w
    root = _project(tmp_path / "s", pkg_index, ["servelm"], R570)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _locked(root)
    (w,) = [w for w in sel.warnings if w.startswith("servelm 0.2 is locked, not its newest release 0.3: ")]
    assert "the newest servelm whose torch fits here is 0.2" in w, w


def test_an_extras_own_extras_and_a_pinned_packages_torch_pin_are_facts_of_the_release(pkg_index: LocalIndex) -> None:
    """nestkit[outer] asks for nestkit[inner], which pins legacy==1.0, which pins torch==2.9.1: the release's
    requirements with `outer` include `inner`'s (never nestkit itself), and the torch it can go beside is read from
    the pinned package's METADATA — before uv is asked."""
    from tritonlock.decide._pkgfacts import Facts
    from tritonlock.decide._pkgload import Env, Table
    from tritonlock.models import TargetSpec

    facts = Facts()
    target = TargetSpec(name="gpu", os="linux", arch="x86_64", glibc="2.35")
    index = pkg_index.index_url("simple")
    reqs = facts.requires(index, "nestkit", "1.0", target, "3.11", ("outer",))
    assert reqs is not None and sorted(str(r).split(";")[0].strip() for r in reqs) == ["legacy==1.0", "torch"]
    assert [str(r) for r in facts.requires(index, "nestkit", "1.0", target, "3.11") or ()] == ["torch"]
    table = Table(env=Env(target=target, python="3.11", facts=facts, read=None, judge=None), name="nestkit",
                  index=index, extras=("outer",))
    assert [str(r) for r in table.torch_reqs("1.0") or ()] == ["torch", "torch==2.9.1"]
    plain = Table(env=Env(target=target, python="3.11", facts=facts, read=None, judge=None), name="nestkit",
                  index=index)
    assert [str(r) for r in plain.torch_reqs("1.0") or ()] == ["torch"]


def test_a_release_without_the_extra_is_no_measure_of_one_that_has_it(tmp_path: Path, pkg_index: LocalIndex) -> None:
    """oldextra[x]: 1.0 (2023, names no torch) is the only release with the extra x; 2.0 (pins torch 2.15.0) has none.
    1.0 is locked as the answer it is — not a stand-in "years older than 2.0", which is not what was asked."""
    root = _project(tmp_path, pkg_index, ["oldextra[x]"], R580)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, _ = _locked(root)
    assert versions["oldextra"] == "1.0" and versions["plainlib"] == "2.0", versions


def test_lines_are_alike_exactly_where_their_signatures_are_judging_only_up_to_the_first_difference(
        pkg_index: LocalIndex) -> None:
    """The search compiles lines whose facts say the same together. Whether two lines are alike is their signatures'
    equality — every read release of every table beside each line, and the line's index — but judged a release at a
    time and stopped at the first release that differs (each judgement is a call of the native rule): lines that
    differ only in the second table's releases are not alike, lines of another index never are."""
    from tritonlock.decide._pkgfacts import Facts
    from tritonlock.decide._pkgload import Env, Table
    from tritonlock.decide._pkgscene import Run
    from tritonlock.models import NativeFacts, Selection, TargetSpec
    from tritonlock.native.rule import Problem

    target = TargetSpec(name="gpu", os="linux", arch="x86_64", glibc="2.35", driver="580.95.05", gpus=("9.0",))
    index = pkg_index.index_url("simple")
    calls: list[tuple[str, str, str | None, str | None]] = []

    def judge(sel: Selection, item: object, brought: set[str]) -> list[Problem]:
        name, version = item.name, item.version  # type: ignore[attr-defined]
        calls.append((name, version, sel.torch, sel.backend))
        # plainlib 2.0 cannot load beside a CUDA 13 torch; servelm 0.3 not beside torch 2.10.0
        bad = (name, version, sel.backend) == ("plainlib", "2.0", "cu130") or (
            (name, version, sel.torch) == ("servelm", "0.3", "2.10.0"))
        return [Problem(package=name, version=version, kind="gpu-code", needs="sm_90", text="no code")] if bad else []

    env = Env(target=target, python="3.11", facts=Facts(), read=None, judge=judge)
    tables = {n: Table(env=env, name=n, index=index) for n in ("plainlib", "servelm")}
    assert tables["plainlib"].versions == ["2.0", "1.0"] and tables["servelm"].versions[:2] == ["0.3", "0.2"]
    for t in tables.values():
        t.native.update({v: NativeFacts(sha256=v, filename=f"{t.name}-{v}.whl") for v in t.versions})

    def line(torch: str, backend: str, where: str = "A") -> Selection:
        return Selection(target=target, ok=True, python="3.11", torch=torch, backend=backend, index=where)

    lines = [line("2.15.0", "cu130"), line("2.14.0", "cu130"), line("2.14.0", "cu128"), line("2.10.0", "cu128"),
             line("2.10.0", "cu128", "B"), line("2.11.0", "cu128")]
    run = Run(sc=None, lines=lines, tables=tables, deps={}, env=env, compile=None,  # type: ignore[arg-type]
              native=None, say=lambda text: None)

    def fresh() -> None:  # (each judgement is kept per release and line: forget them, to count them)
        calls.clear()
        for t in tables.values():
            t._judged.clear()

    fresh()
    assert not run.alike(0, 2)  # plainlib 2.0 differs: its first release, judged beside both lines, and no more
    assert calls == [("plainlib", "2.0", "2.15.0", "cu130"), ("plainlib", "2.0", "2.14.0", "cu128")]
    fresh()
    assert run.alike(0, 1) and len(calls) == 2 * sum(len(t.versions) for t in tables.values())
    assert not run.alike(2, 3)  # only servelm 0.3 (the second table) tells them apart
    assert not run.alike(3, 4)  # the same facts, another index
    assert run.alike(2, 5)
    for a in range(len(lines)):
        for b in range(len(lines)):
            assert run.alike(a, b) == (run.signature(a) == run.signature(b)), (a, b)
    every = 2 * sum(len(t.versions) for t in tables.values())
    # a read release whose package loads a module inside a `try`: every judgement may note such a failure (whether
    # the second search runs), so the signatures are taken whole until one is noted
    old = tables["servelm"].native["0.2"]
    tables["servelm"].native["0.2"] = NativeFacts(sha256="0.2", filename="servelm-0.2.whl", guarded=("servelm/_C.so",))
    fresh()
    assert not run.alike(0, 2) and len(calls) == every
    run.noted.append(True)
    fresh()
    assert not run.alike(0, 2) and len(calls) == 2
    run.noted.clear()
    tables["servelm"].native["0.2"] = old
    # where the rule refused a dependency's release (judging may then read wheels), the signatures are taken whole
    run.deps["shared-dep"] = Table(env=env, name="shared-dep", index=index)
    fresh()
    assert not run.alike(0, 2) and len(calls) == every


def test_a_line_is_read_down_only_as_far_as_the_line_it_must_beat(pkg_index: LocalIndex) -> None:
    """Run.bound refines a line with its native facts, reading down the named package's releases. Where an answer is
    held (stepkit 1.0) and the runner-up line is bounded at stepkit 2.0, a line whose 3.0 and 2.0 cannot load is read
    down to 2.0 only: below it the line cannot beat the runner-up, and by how much is not read now (a deferred bound,
    above the line's true one). Without a runner-up it is read down to the answer's release; where the runner-up's
    release is the answer's own, or below it, the answer's floor holds (a line with nothing at or above it is
    dominated). The second named package is bounded the same way, only under the same release of the first."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    from tritonlock.decide._pkgfacts import Facts
    from tritonlock.decide._pkgload import Env, Table
    from tritonlock.decide._pkgscene import DOMINATED, LOW, Run, deferred
    from tritonlock.models import NativeFacts, Selection, TargetSpec
    from tritonlock.native.rule import Problem

    target = TargetSpec(name="gpu", os="linux", arch="x86_64", glibc="2.35", driver="580.95.05", gpus=("9.0",))
    index = pkg_index.index_url("simple")
    judged: list[tuple[str, str]] = []
    cannot = {("stepkit", "3.0"), ("stepkit", "2.0")}  # beside torch 2.15 (line 0)

    def judge(sel: Selection, item: object, brought: set[str]) -> list[Problem]:
        name, version = item.name, item.version  # type: ignore[attr-defined]
        judged.append((name, version))
        bad = sel.torch == "2.15.0" and (name, version) in cannot
        return [Problem(package=name, version=version, kind="gpu-code", needs="sm_90", text="no code")] if bad else []

    env = Env(target=target, python="3.11", facts=Facts(), read=None, judge=judge)
    tables = {n: Table(env=env, name=n, index=index) for n in ("stepkit", "plainlib")}
    assert tables["stepkit"].versions == ["3.0", "2.0", "1.0"] and tables["plainlib"].versions == ["2.0", "1.0"]
    for t in tables.values():
        t.native.update({v: NativeFacts(sha256=v, filename=f"{t.name}-{v}.whl") for v in t.versions})
    lines = [Selection(target=target, ok=True, python="3.11", torch=tv, backend="cu130", index="A")
             for tv in ("2.15.0", "2.14.0")]

    def bound(names: tuple[str, ...], best: tuple | None, beat: tuple | None = None) -> object:
        judged.clear()
        for t in tables.values():
            t._judged.clear()  # (each judgement is kept per release and line: forget them, to count them)
        run = Run(sc=type("Scene", (), {"reqs": [Requirement(n) for n in names]})(),  # type: ignore[arg-type]
                  lines=lines, tables=tables, deps={}, env=env, compile=None,  # type: ignore[arg-type]
                  native=None, say=lambda text: None)
        return run.bound(0, best, native=True, beat=beat)

    def rel(v: str) -> tuple[int, Version]:
        return (1, Version(v))

    torch14 = rel("2.14.0")
    best = (rel("1.0"), torch14, -1)  # an answer: stepkit 1.0 beside torch 2.14
    # a runner-up at 2.0: read 3.0 and 2.0, never 1.0; the bound holds 2.0 and is deferred
    b = bound(("stepkit",), best, beat=(rel("2.0"), torch14, -1))
    assert judged == [("stepkit", "3.0"), ("stepkit", "2.0")], judged
    assert b == (rel("2.0"), LOW, 0) and deferred(b), b
    # no runner-up: read down to the answer's release, which loads — the line's true bound
    b = bound(("stepkit",), best)
    assert judged == [("stepkit", "3.0"), ("stepkit", "2.0"), ("stepkit", "1.0")], judged
    assert b == (rel("1.0"), rel("2.15.0"), 0) and not deferred(b), b
    # the runner-up at the answer's own release, or below it: the answer's floor, nothing deferred
    for other in ("1.0", "0.5"):
        b = bound(("stepkit",), best, beat=(rel(other), torch14, -1))
        assert b == (rel("1.0"), rel("2.15.0"), 0) and not deferred(b), (other, b)
    at2 = (rel("2.0"), torch14, -1)
    assert bound(("stepkit",), at2, beat=at2) is DOMINATED and judged == [("stepkit", "3.0"), ("stepkit", "2.0")]
    # the second named package: its runner-up's release counts only under the same release of the first
    cannot.clear()
    cannot.add(("plainlib", "2.0"))
    b = bound(("stepkit", "plainlib"), (rel("3.0"), rel("1.0"), torch14, -1),
              beat=(rel("3.0"), rel("2.0"), torch14, -1))
    assert b == (rel("3.0"), rel("2.0"), LOW, 0) and judged == [("stepkit", "3.0"), ("plainlib", "2.0")], (b, judged)
    b = bound(("stepkit", "plainlib"), (rel("3.0"), rel("1.0"), torch14, -1),
              beat=(rel("2.0"), rel("2.0"), torch14, -1))
    assert b == (rel("3.0"), rel("1.0"), rel("2.15.0"), 0), b


def test_the_metadata_of_releases_that_are_an_sdist_alone_is_read_in_one_round(tmp_path: Path) -> None:
    """Looking down a package's releases, the search reads the METADATA of the next 8 side by side; where those
    include a release of an sdist alone (an index seldom serves an sdist's METADATA: each is a round trip, every
    resolve), the sdist-only releases after them are read in the same round — the wheels' not (theirs is kept)."""
    from tritonlock.decide._pkgfacts import Facts
    from tritonlock.decide._pkgload import SDISTS_AT_ONCE, Env, Table
    from tritonlock.models import TargetSpec

    idx = LocalIndex(tmp_path / "index")
    wheels = [f"3.{i}" for i in range(10)]  # 3.9 … 3.0: wheels, newest first after the sdists' turn below
    sdists = [f"1.{i}" for i in range(30) if i != 15]  # 1.29 … 1.0: an sdist alone (1.15 a wheel)
    for v in wheels + ["2.0", "1.15"]:
        idx.add("simple", "agedlib", v)
    for v in sdists:
        idx.add_sdist("simple", "agedlib", v)
    idx.start()
    try:
        facts = Facts()
        target = TargetSpec(name="gpu", os="linux", arch="x86_64", glibc="2.35")
        index = idx.index_url("simple")
        t = Table(env=Env(target=target, python="3.11", facts=facts, read=None, judge=None), name="agedlib",
                  index=index)
        assert t.versions[:12] == ["3.9", "3.8", "3.7", "3.6", "3.5", "3.4", "3.3", "3.2", "3.1", "3.0", "2.0",
                                   "1.29"], t.versions
        asked = lambda: [v for v in t.versions if facts.has_metadata(index, "agedlib", v)]  # noqa: E731
        t._meta(0)  # the 8 newest: wheels only, nothing more
        assert asked() == t.versions[:8]
        t._meta(8)  # 3.1, 3.0, 2.0, 1.29 … 1.25 — and the sdist-only releases after them, up to SDISTS_AT_ONCE ahead
        assert asked() == [v for i, v in enumerate(t.versions[:SDISTS_AT_ONCE + 8]) if i < 16 or v != "1.15"]
        assert all(not facts.has_metadata(index, "agedlib", v) for v in t.versions[SDISTS_AT_ONCE + 8:])
    finally:
        idx.stop()


def test_the_torch_requirements_of_many_releases_are_read_side_by_side_and_once(tmp_path: Path) -> None:
    """Before a walk that asks for the torch requirements of many releases one by one (the releases a conflict counts
    as not read), they are read side by side — several requests in flight — each once: those known already are not
    asked again, nor those not asked for."""
    import threading
    import time

    from packaging.requirements import Requirement

    from tritonlock.decide._pkgfacts import Facts
    from tritonlock.decide._pkgload import Env, Table
    from tritonlock.models import TargetSpec

    class InFlight:
        def __init__(self) -> None:
            self.lock, self.now, self.most, self.count = threading.Lock(), 0, 0, 0

        def wait(self) -> None:
            with self.lock:
                self.now, self.count = self.now + 1, self.count + 1
                self.most = max(self.most, self.now)
            time.sleep(0.05)  # (a request that takes a while, as over the network: the others come meanwhile)
            with self.lock:
                self.now -= 1

    idx = LocalIndex(tmp_path / "index")
    for i in range(20):
        idx.add("simple", "manylib", f"1.{i}", requires=(f"torch=={i}.0",))
    idx.start()
    try:
        facts = Facts()
        index = idx.index_url("simple")
        t = Table(env=Env(target=TargetSpec(name="gpu", os="linux", arch="x86_64", glibc="2.35"), python="3.11",
                          facts=facts, read=None, judge=None), name="manylib", index=index)
        assert t.torch_reqs("1.19") == [Requirement("torch==19.0")]
        idx.gate = gate = InFlight()  # type: ignore[assignment]
        t.read_torch_reqs(t.versions[:12])
        assert gate.most > 1, gate.most
        assert [v for v in t.versions if facts.has_metadata(index, "manylib", v)] == t.versions[:12]
        asked = gate.count
        t.read_torch_reqs(t.versions[:12])
        assert gate.count == asked
        assert [str(r) for v in t.versions[:12] for r in t.torch_reqs(v) or ()] == [
            f"torch=={i}.0" for i in range(19, 7, -1)]
        assert gate.count == asked  # (each kept: nothing asked again)
    finally:
        idx.stop()


@pytest.mark.parametrize("text", [
    "Metadata-Version: 2.1\nName: a\nRequires-Dist: torch==2.10.0\nrequires-dist: b; extra == 'x'\n"
    "Provides-Extra: x\n\nRequires-Dist: evil\nA description that looks like headers.\n",
    "Name: a\r\nRequires-Dist: torch\r\n  >=2.4\r\nProvides-Extra: X_Y\r\n\r\nRequires-Dist: body\r\n",
    "Name: a\nRequires-Dist: torch\n \nRequires-Dist: after-a-blank-looking-line\n\nbody\n",
    "Name: a\nnot a header\nRequires-Dist: torch\n",
    "",
    "Requires-Dist: only\n",
])
def test_a_releases_metadata_fields_are_read_as_emails_parser_reads_them_from_the_header_block(text: str) -> None:
    """METADATA's fields, parsed once a text and from its header block only: the same values as email's parser of
    the whole text gives — never a line of the description after the first empty line."""
    from email.parser import HeaderParser

    from tritonlock.decide._pkgfacts import _headers

    for field in ("Requires-Dist", "requires-dist", "Provides-Extra", "Name", "Missing"):
        want = [str(v) for v in HeaderParser().parsestr(text).get_all(field) or []]
        assert _headers(text, field) == want
        assert _headers(text, field) == want  # (asked again: the kept parse)
    assert "evil" not in _headers(text, "Requires-Dist") and "body" not in _headers(text, "Requires-Dist")
