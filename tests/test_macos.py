"""macOS targets: the wheels' own macOS floor (torch.toml `macos`, from their macosx_X_Y tags), a target's stated
macOS (`macos = "13.6"`), and uv resolving for that macOS (MACOSX_DEPLOYMENT_TARGET) — against a real local index."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pkgindex import LocalIndex
from tritonlock import host
from tritonlock.cli import main
from tritonlock.errors import IntentError
from tritonlock.intent.read import parse_intent
from tritonlock.lock.lockfile import read_lock
from tritonlock.compat.matrix import load_matrix
from tritonlock.models import HostProfile
from tritonlock.decide.resolve import resolve_one
from tritonlock.environment.sync import target_fit

M = load_matrix()


def _pick(env: str = "", **target: object) -> object:
    target.setdefault("name", "mac")
    target.setdefault("os", "macos")
    target.setdefault("arch", "arm64")
    body = "\n".join(f"{k} = {json.dumps(v)}" for k, v in target.items())
    it = parse_intent(f"[environment]\n{env}\n[[targets]]\n{body}\n")
    return resolve_one(it, M, it.targets[0], "3.12")


def test_the_matrix_knows_each_releases_macos_floor() -> None:
    # read from the wheels' tags on the default index: 2.12.0 onwards macosx_14_0_arm64, before macosx_11_0_arm64;
    # 2.10.0's cp314 wheels alone are 14.0 (`tritonlock compat check` compares every one)
    assert M.torch_release("2.15.0").macos_floor("macos_arm64", "3.12") == "14.0"  # type: ignore[union-attr]
    assert M.torch_release("2.11.0").macos_floor("macos_arm64", "3.14") == "11.0"  # type: ignore[union-attr]
    r210 = M.torch_release("2.10.0")
    assert r210 is not None and r210.macos_floor("macos_arm64", "3.14") == "14.0"
    assert r210.macos_floor("macos_arm64", "3.13") == "11.0" and r210.macos_floor("linux_x86_64", "3.13") is None
    assert M.torch_release("2.2.2").macos_floor("macos_x86_64", "3.11") == "10.9"  # type: ignore[union-attr]
    assert all(r.macos.get("macos_arm64") for r in M.torch)


def test_a_mac_that_states_its_macos_gets_the_newest_torch_it_can_install() -> None:
    sel = _pick(python="3.12", macos="13.6")
    assert (sel.ok, sel.torch, sel.backend, sel.triton_package) == (True, "2.11.0", "cpu", None)  # type: ignore[attr-defined]
    assert "passed over torch 2.12.0–2.15.0: its macOS wheels need macOS >= 14.0; this target has 13.6" \
        in sel.reasons  # type: ignore[attr-defined]
    assert not [w for w in sel.warnings if "macOS >=" in w]  # type: ignore[attr-defined]
    # Python 3.14 on macOS 13: 2.10.0's cp314 wheels need 14.0, 2.11.0's do not
    assert _pick(python="3.14", macos="13.6").torch == "2.11.0"  # type: ignore[attr-defined]
    new = _pick(python="3.12", macos="14.5")
    assert new.torch == "2.15.0" and not [w for w in new.warnings if "macOS >=" in w]  # type: ignore[attr-defined]


def test_a_mac_without_its_macos_is_told_what_the_wheels_need() -> None:
    sel = _pick(python="3.12")
    assert sel.torch == "2.15.0"  # type: ignore[attr-defined]
    assert ("torch 2.15.0's wheels for Python 3.12 need macOS >= 14.0 (macosx_14_0_arm64): if this Mac runs an older "
            'macOS, say so on the target (macos = "13.6", as `tritonlock host --save` writes it) to lock the newest '
            "torch it can install") in sel.warnings  # type: ignore[attr-defined]
    old = _pick(python="3.9")  # 2.8.0: macosx_11_0, which every Apple-silicon Mac runs
    assert old.torch == "2.8.0" and not [w for w in old.warnings if "macOS >=" in w]  # type: ignore[attr-defined]


def test_a_conflict_names_the_macos_that_unlocks_it() -> None:
    sel = _pick(python="3.15", macos="13.6")
    assert not sel.ok  # type: ignore[attr-defined]
    msg = sel.conflict.message  # type: ignore[attr-defined]
    assert "torch 2.15.0: its macOS wheels need macOS >= 14.0; this target has 13.6" in msg
    assert msg.endswith('fix: update macOS to >= 14.0 (set macos = "14.0" on the target once it runs it): then '
                        "torch 2.15.0")
    # checked: with that macOS it resolves
    assert _pick(python="3.15", macos="14.0").torch == "2.15.0"  # type: ignore[attr-defined]


def test_why_names_the_macos_each_line_needs() -> None:
    from tritonlock.decide.why import advise, format_advice

    it = parse_intent('[[targets]]\nname = "mac"\nos = "macos"\narch = "arm64"\npython = "3.12"\nmacos = "13.6"\n')
    a = advise(it, M, it.targets[0], "3.12")
    assert a.now.torch == "2.11.0" and {ln.torch for ln in a.lines} == {"2.15.0", "2.14.1", "2.13.0", "2.12.1"}
    assert all([(c.kind, c.need) for c in ln.changes] == [("macos", "14.0")] for ln in a.lines)
    assert "  torch 2.12.1–2.15.0: needs macOS >= 14.0 (you have 13.6; torch 2.15.0 ships macosx_14_0 wheels)" \
        in format_advice(a, sources=False)
    moved = dataclasses.replace(it.targets[0], macos="14.0")
    assert resolve_one(it, M, moved, "3.12").torch == "2.15.0"  # the claim, checked


def test_the_intent_checks_macos() -> None:
    it = parse_intent('[[targets]]\nname = "mac"\nos = "macos"\narch = "arm64"\nmacos = "14.5"\n')
    assert it.targets[0].macos == "14.5"
    plain = parse_intent('[[targets]]\nname = "mac"\nos = "macos"\narch = "arm64"\n')
    assert plain.content_hash != it.content_hash and plain.targets[0].macos is None
    with pytest.raises(IntentError) as e:
        parse_intent('[[targets]]\nname = "mac"\nos = "macos"\narch = "arm64"\nmacos = "Sonoma"\n')
    assert "targets[0].macos: 'Sonoma' is not a macOS version" in str(e.value) and "sw_vers" in str(e.value)
    with pytest.raises(IntentError) as e:
        parse_intent('[[targets]]\nname = "box"\nos = "linux"\nmacos = "14.5"\n')
    assert "macos is for os = \"macos\" targets, this one is 'linux'" in str(e.value)


def test_a_macs_host_profile_and_saved_target_carry_its_macos(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRITONLOCK_OS", "macos")
    monkeypatch.setenv("TRITONLOCK_ARCH", "arm64")
    monkeypatch.setenv("TRITONLOCK_DRIVER", "none")
    monkeypatch.setenv("TRITONLOCK_MACOS", "13.6")
    host.clear_cache()
    prof = host.detect(toolkit=False)
    assert prof.macos == "13.6" and host.to_target(prof).macos == "13.6"
    assert host.profile_json(prof)["macos"] == "13.6" and "macOS 13.6" in host.format_profile(prof)
    saved = tmp_path / "mac.toml"
    saved.write_text(host.target_toml(prof, "mac"), encoding="utf-8")
    assert 'macos = "13.6"' in saved.read_text(encoding="utf-8")
    assert host.load_saved_target(str(saved)).macos == "13.6"
    monkeypatch.setenv("TRITONLOCK_OS", "linux")
    monkeypatch.setenv("TRITONLOCK_ARCH", "x86_64")
    with pytest.raises(Exception) as e:
        host.detect(toolkit=False)
    assert 'TRITONLOCK_MACOS="13.6" is for a macos machine' in str(e.value)


@pytest.fixture(scope="module")
def mac_index(tmp_path_factory: pytest.TempPathFactory) -> LocalIndex:
    """torch as PyPI tags it for Apple silicon: 2.15.0 macosx_14_0_arm64, 2.11.0 macosx_11_0_arm64."""
    idx = LocalIndex(tmp_path_factory.mktemp("macindex"))
    for version, tag in (("2.15.0", "cp312-cp312-macosx_14_0_arm64"), ("2.11.0", "cp312-cp312-macosx_11_0_arm64")):
        idx.add("whl/cpu", "torch", f"{version}", tag=tag, requires=("filelock",))
    idx.add("simple", "filelock", "3.16.1")
    idx.start()
    yield idx  # type: ignore[misc]
    idx.stop()


def _lock_for(tmp: Path, idx: LocalIndex, macos: str | None) -> object:
    line = f'macos = "{macos}"\n' if macos else ""
    (tmp / "triton-env.toml").write_text(
        '[environment]\npython = "3.12"\n[[targets]]\nname = "mac"\nos = "macos"\narch = "arm64"\n' + line
        + f'[indexes]\ntorch = "{idx.url}/whl/{{backend}}"\ndefault = "{idx.index_url("simple")}"\n', encoding="utf-8")
    r = CliRunner().invoke(main, ["resolve", "-p", str(tmp)])
    assert r.exit_code == 0, r.output
    return read_lock(tmp / "triton-env.lock").targets[0]


def test_uv_locks_torch_215s_macos_14_wheel(tmp_path: Path, mac_index: LocalIndex,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """uv assumes macOS 13.0 for aarch64-apple-darwin: without the wheels' floor it finds no torch 2.15.0 wheel."""
    monkeypatch.setenv("MACOSX_DEPLOYMENT_TARGET", "11.0")  # this machine's setting must not leak into the lock
    t = _lock_for(tmp_path, mac_index, None)
    pk = {p.name: p for p in t.packages}  # type: ignore[attr-defined]
    assert pk["torch"].version == "2.15.0" and pk["torch"].wheels[0].name.endswith("macosx_14_0_arm64.whl")
    assert t.selection.target.macos is None  # type: ignore[attr-defined]
    from tritonlock.lock.report import selection_text

    assert selection_text(t.selection).splitlines()[0] == (  # type: ignore[attr-defined]
        f"target {t.selection.target.name}: torch 2.15.0 (cpu) + no triton on Python {t.selection.python}")


def test_a_mac_on_macos_13_locks_the_torch_it_can_install(tmp_path: Path, mac_index: LocalIndex) -> None:
    t = _lock_for(tmp_path, mac_index, "13.6")
    pk = {p.name: p for p in t.packages}  # type: ignore[attr-defined]
    assert pk["torch"].version == "2.11.0" and pk["torch"].wheels[0].name.endswith("macosx_11_0_arm64.whl")
    assert t.selection.target.macos == "13.6"  # type: ignore[attr-defined]
    assert 'macos = "13.6"' in (tmp_path / "triton-env.lock").read_text(encoding="utf-8")
    # sync picks it only on a Mac at least that new
    mac = HostProfile(os="macos", arch="arm64", python="3.12.7", macos="13.5")
    assert target_fit(t, mac, "3.12") == "it is for macOS 13.6 or newer; this Mac has 13.5"  # type: ignore[arg-type]
    assert target_fit(t, dataclasses.replace(mac, macos="15.1"), "3.12") is None  # type: ignore[arg-type]


def test_two_macs_that_differ_only_in_macos_each_get_wheels_for_their_own(tmp_path: Path) -> None:
    """Two targets alike but for `macos`: torch 2.11.0 installs on both, and its dependency's newest release ships
    only a macOS 14 wheel — the Mac on 15.1 locks it, the one on 13.6 the release before (the two closures are
    computed apart: one shared would give a Mac wheels it cannot install, or hold the other back)."""
    idx = LocalIndex(tmp_path / "index")
    idx.add("whl/cpu", "torch", "2.11.0", tag="cp312-cp312-macosx_11_0_arm64", requires=("macdep",))
    idx.add("simple", "macdep", "2.0", tag="py3-none-macosx_14_0_arm64")
    idx.add("simple", "macdep", "1.0", tag="py3-none-macosx_11_0_arm64")
    idx.start()
    try:
        (tmp_path / "triton-env.toml").write_text(
            '[environment]\npython = "3.12"\ntorch = "==2.11.0"\n'
            '[[targets]]\nname = "mac13"\nos = "macos"\narch = "arm64"\nmacos = "13.6"\n'
            '[[targets]]\nname = "mac15"\nos = "macos"\narch = "arm64"\nmacos = "15.1"\n'
            f'[indexes]\ntorch = "{idx.url}/whl/{{backend}}"\ndefault = "{idx.index_url("simple")}"\n',
            encoding="utf-8")
        r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path)])
        assert r.exit_code == 0, r.output
    finally:
        idx.stop()
    got = {t.name: {p.name: p for p in t.packages} for t in read_lock(tmp_path / "triton-env.lock").targets}
    assert got["mac13"]["macdep"].version == "1.0" and got["mac15"]["macdep"].version == "2.0", {
        n: {k: p.version for k, p in v.items()} for n, v in got.items()}
    assert got["mac15"]["macdep"].wheels[0].name.endswith("macosx_14_0_arm64.whl")
    assert got["mac13"]["macdep"].wheels[0].name.endswith("macosx_11_0_arm64.whl")
