"""glibc and manylinux tags: a wheel tagged manylinux_2_N runs where glibc >= 2.N (PEP 600) — the lock, the export,
the resolver's release floors and sync's target choice all take a wheel tagged exactly for the target's glibc, and
anything below it; nothing above."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from conftest import populate, write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.intent.read import parse_intent
from tritonlock.compat.matrix import load_matrix
from tritonlock.decide.resolve import resolve
from tritonlock.lock.lockfile import read_lock

M = load_matrix()
TARGETS = "".join(f'\n[[targets]]\nname = "glibc{g.replace(".", "")}"\nos = "linux"\narch = "x86_64"\nglibc = "{g}"\n'
                  for g in ("2.31", "2.34", "2.35"))


def _locked(tmp_path: Path) -> dict[str, dict[str, str]]:
    idx = LocalIndex(tmp_path / "index")
    populate(idx)
    # the newest release ships only for glibc 2.34 and up (wheels tagged above manylinux_2_28), the one before for all
    idx.add("simple", "newglibc", "2.0", tag="py3-none-manylinux_2_34_x86_64")
    idx.add("simple", "newglibc", "1.0", tag="py3-none-manylinux_2_17_x86_64")
    idx.start()
    try:
        write_intent(tmp_path / "p", idx, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\n'
                                          'packages = ["newglibc"]\n' + TARGETS)
        r = CliRunner().invoke(main, ["resolve", "-p", str(tmp_path / "p")])
        assert r.exit_code == 0, r.output
        out = {t.name: {p.name: p.version for p in t.packages}
               for t in read_lock(tmp_path / "p" / "triton-env.lock").targets}
        code = CliRunner().invoke(main, ["export", "--format", "requirements", "--target", "glibc234", "-p",
                                         str(tmp_path / "p")])
        assert code.exit_code == 0, code.output
        out["export glibc234"] = {"line": next(x for x in code.output.splitlines() if x.startswith("newglibc"))}
        return out
    finally:
        idx.stop()


def test_a_glibc_235_target_locks_a_package_whose_newest_ships_only_manylinux_2_34(tmp_path: Path) -> None:
    got = _locked(tmp_path)
    assert got["glibc235"]["newglibc"] == "2.0", got  # 2.35 >= 2.34: the newest is installable there
    assert got["glibc231"]["newglibc"] == "1.0", got  # 2.31 < 2.34: the release before, with a wheel it runs


def test_a_wheel_tagged_exactly_for_the_targets_glibc_is_fit(tmp_path: Path) -> None:
    # the lock and its export: a manylinux_2_34 wheel on a glibc 2.34 target
    got = _locked(tmp_path)
    assert got["glibc234"]["newglibc"] == "2.0", got
    assert "newglibc-2.0-py3-none-manylinux_2_34_x86_64.whl" in got["export glibc234"]["line"], got
    # the resolver: a release whose wheels' glibc floor is exactly the target's glibc fits it
    newest = M.torch[0]
    floor = newest.glibc.get("linux_x86_64")
    assert floor, "the matrix records the newest torch's glibc floor"
    it = parse_intent(f'[environment]\npython = "3.12"\n[[targets]]\nname = "t"\nglibc = "{floor}"\n')
    (sel,) = resolve(it, M, it.targets, "3.12")
    assert sel.ok and sel.torch == newest.version, (sel.torch, sel.reasons)
    below = f"{floor.split('.')[0]}.{int(floor.split('.')[1]) - 1}"
    it = parse_intent(f'[environment]\npython = "3.12"\n[[targets]]\nname = "t"\nglibc = "{below}"\n')
    (sel,) = resolve(it, M, it.targets, "3.12")
    assert sel.torch != newest.version  # one below the floor: held back (the rule is not simply always true)


def test_sync_picks_a_target_whose_glibc_equals_the_hosts() -> None:
    from tritonlock.environment.sync import target_fit
    from tritonlock.models import HostProfile, LockedTarget, Selection, TargetSpec

    spec = TargetSpec(name="t", os="linux", arch="x86_64", glibc="2.34")
    t = LockedTarget(selection=Selection(target=spec, ok=True, python="3.11", torch="2.6.0", backend="cpu",
                                         index="https://i/cpu"))
    host = HostProfile(os="linux", arch="x86_64", python="3.11.7", glibc="2.34")
    assert target_fit(t, host, "3.11") is None
    assert target_fit(t, HostProfile(os="linux", arch="x86_64", python="3.11.7", glibc="2.33"), "3.11") == (
        "it needs glibc >= 2.34; this host has 2.33")
