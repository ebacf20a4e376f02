"""Binary facts shipped with the matrix (compat/native/: tritonlock.native.shipped reads them, `tritonlock compat
native` — tritonlock/maintain/native.py — writes them): within their size budget, each row naming its wheel by file
name and sha256 and no index address; a resolve takes a shipped fact only for a wheel of that sha256 and only from a
file this reader's version wrote with every field its facts have; the tool re-runs keeping what it has, follows the
exact pins to torch and its CUDA wheels, and checks its rows against the index."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from pkgindex import LocalIndex
import test_native_reads as reads
from test_native_reads import _file, _project, _read, _run
from tritonlock import _toml
from tritonlock.cli import main
from tritonlock.lock.lockfile import read_lock
from tritonlock.models import NativeFacts, NativeMember
from tritonlock.native import shipped
from tritonlock.native.read import READER_VERSION

idx, _fresh = reads.idx, reads._fresh  # (the tests' index and its habits: fixtures of test_native_reads.py)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """compat/native/ for this test alone (looked at afresh)."""
    d = tmp_path / "compat" / "native"
    d.mkdir(parents=True)
    monkeypatch.setattr(shipped, "folder", lambda: d)
    shipped.forget()
    yield d
    shipped.forget()


def _facts(sha: str = "ab" * 32) -> NativeFacts:
    return NativeFacts(sha256=sha, filename="x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", provides=("_C.so",),
                       members=(NativeMember(path="x/_C.so", extension=True, needed=("libcudart.so.12",),
                                             sm=("sm_80",), gpu="read"),),
                       built_for_torch="2.9", source="the wheel x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl, sha256 "
                                                     + sha)


def test_the_shipped_facts_stay_within_their_budget_and_name_their_wheels() -> None:
    """What compat/native/ ships: within BUDGET bytes; no index address anywhere (the rule on registry addresses);
    each file written by this reader's version with this code's fields; each row's `source` names its wheel's file
    and sha256 (what a reviewer fetches and compares), and rebuilds into facts; no sha256 twice."""
    d = shipped.folder()
    assert d is not None and d.is_dir()
    files = sorted(d.glob("*.toml"))
    assert files and sum(f.stat().st_size for f in files) <= shipped.BUDGET
    seen: set[str] = set()
    for f in files:
        text = f.read_text(encoding="utf-8")
        assert not re.search(r"[a-z]+://", text), f"{f.name} names an address"
        meta, rows = shipped.loads(text)
        assert shipped.trusted(meta, READER_VERSION) is None, f.name
        assert meta["source"] and _toml.loads(text)["members"]["source"]
        for row in rows.values():
            facts = shipped.rebuild(NativeFacts, row)
            assert row["source"].startswith(f"the wheel {facts.filename}, sha256 {facts.sha256} "), row["source"]
            assert facts.problem is None and facts.sha256 not in seen
            seen.add(facts.sha256)
    assert len(seen) >= 100  # (the packages users bring most: their newest releases, both CPUs, four Pythons)


def test_a_shipped_fact_is_used_only_for_its_sha256_and_this_readers_version_and_fields(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = _facts()
    (folder / "x.toml").write_text(shipped.dumps([f], "x", READER_VERSION), encoding="utf-8")
    assert shipped.lookup(f.sha256, READER_VERSION) == f
    assert shipped.lookup("cd" * 32, READER_VERSION) is None  # another wheel: read, not guessed
    assert shipped.lookup(f.sha256, "native-v999") is None  # another reader's facts: not used
    monkeypatch.setenv("TRITONLOCK_NO_SHIPPED_FACTS", "1")
    assert shipped.lookup(f.sha256, READER_VERSION) is None
    monkeypatch.delenv("TRITONLOCK_NO_SHIPPED_FACTS")
    # a file written before a field was added (its header lacks it): none of its rows is trusted
    text = shipped.dumps([f], "x", READER_VERSION)
    older = text.replace('"gfx", ', "")
    assert older != text
    (folder / "x.toml").write_text(older, encoding="utf-8")
    shipped.forget()
    assert shipped.lookup(f.sha256, READER_VERSION) is None
    assert shipped.trusted(_toml.loads(older)["meta"], READER_VERSION) == "written without NativeMember fields ['gfx']"
    # a row with a key this code has no field for, or a value of another type, is no fact
    for bad in (text.replace('built_for_torch = "2.9"', 'built_for_torch = "2.9"\nfuture_field = 1'),
                text.replace('built_for_torch = "2.9"', "built_for_torch = 2.9")):
        (folder / "x.toml").write_text(bad, encoding="utf-8")
        shipped.forget()
        assert shipped.lookup(f.sha256, READER_VERSION) is None


def test_the_format_carries_every_field_of_the_facts_whatever_they_are() -> None:
    """The rows are the facts' dataclass fields by name (defaults left out), written and rebuilt generically: the
    schema lists every field of NativeFacts and NativeMember, and a field added to either (here: a new dataclass with
    a field more) goes through dumps and rebuild unchanged."""
    assert shipped.schema() == {"NativeFacts": [x.name for x in dataclasses.fields(NativeFacts)],
                                "NativeMember": [x.name for x in dataclasses.fields(NativeMember)]}
    f = _facts()
    assert shipped.rebuild(NativeFacts, shipped.plain(f)) == f
    assert shipped.rebuild(NativeFacts, shipped.loads(shipped.dumps([f], "x", READER_VERSION))[1][f.sha256]) == f
    # a library the wheels for several Pythons share is written once, each row naming it by id
    g = dataclasses.replace(f, sha256="cd" * 32, filename="x-1.0-cp312-cp312-manylinux_2_17_x86_64.whl")
    text = shipped.dumps([f, g], "x", READER_VERSION)
    assert text.count('path = "x/_C.so"') == 1 and text.count("members = [0]") == 2
    assert {sha: shipped.rebuild(NativeFacts, row) for sha, row in shipped.loads(text)[1].items()} == {
        f.sha256: f, g.sha256: g}
    with pytest.raises(ValueError, match="members that are not the file's"):
        shipped.loads(text.replace("members = [0]", "members = [7]", 1))

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Later:  # what a later reader's member may be: a field more, of a type of its own
        path: str
        dlopens: tuple[str, ...] = ()
        undefined: tuple[str, ...] = ()

    later = Later(path="x/_C.so", dlopens=("libcublas.so.12",))
    assert shipped.plain(later) == {"path": "x/_C.so", "dlopens": ["libcublas.so.12"]}
    assert shipped.rebuild(Later, shipped.plain(later)) == later
    with pytest.raises(ValueError):
        shipped.rebuild(Later, {"path": "x", "dlopens": "libcublas.so.12"})  # not a list


def test_a_resolve_takes_a_shipped_fact_for_that_sha256_instead_of_reading_the_wheel(
        idx: LocalIndex, folder: Path, tmp_path: Path) -> None:
    """hostpkg needs libcuda.so.1, so a driverless target cannot lock it (exit 3, read from its wheel). A shipped row
    for that very sha256 saying it needs nothing is taken as the wheel's facts — no byte of the wheel read, and the
    target locks — which shows the row is what the resolve used; the same row under another sha256 is not used."""
    url, size, sha, filename = _file(idx, "hostpkg")
    real = _read(idx)
    claimed = dataclasses.replace(real, members=tuple(dataclasses.replace(m, needed=()) for m in real.members),
                                  source=f"the wheel {filename}, sha256 {sha} (a test's claim)")
    (folder / "hostpkg.toml").write_text(shipped.dumps([claimed], "hostpkg", READER_VERSION), encoding="utf-8")
    shipped.forget()
    before = len(idx.asked_by)
    root = _project(tmp_path / "shipped", idx, driver=False)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert not [p for p, agent in idx.asked_by[before:] if p.endswith(filename) and not agent.startswith("uv/")]
    (kept,) = [f for f in read_lock(root / "triton-env.lock").native if f.filename == filename]
    assert kept.members == claimed.members
    # the same claim under another sha256 (and the user's cache, which kept the row as a read is kept, emptied): the
    # wheel is read, and its real facts decide
    from tritonlock.native.read import cache_dir

    assert (cache_dir() / f"{sha}.json").is_file()
    for kept_file in cache_dir().glob("*.json"):
        kept_file.unlink()
    (folder / "hostpkg.toml").write_text(shipped.dumps([dataclasses.replace(claimed, sha256="cd" * 32)], "hostpkg",
                                                       READER_VERSION), encoding="utf-8")
    shipped.forget()
    root = _project(tmp_path / "read", idx, driver=False)
    code, out = _run("resolve", "-p", str(root))
    assert code == 3 and "hostpkg's native code cannot load on this target" in out, out


def test_the_tool_reads_the_wheels_follows_exact_pins_and_runs_again_keeping_what_it_has(
        idx: LocalIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tritonlock compat native` on the tests' index: pinpkg pins torch==2.10.0, whose wheel pins the CUDA 12
    runtime and its triton: all four are read (torch's and the runtime's names only, as a resolve reads them) and
    written to one file per package with their sha256 and no address; run again it reads nothing; --check agrees, and finds a row
    whose sha256 the index does not list; over the budget it writes nothing."""
    compat = tmp_path / "compat"
    args = ["compat", "native", "--index", idx.index_url("simple"), "--packages", "pinpkg", "--releases", "1",
            "--python", "3.11", "--cpu", "x86_64", "--compat", str(compat)]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (compat / "native").glob("*.toml")) == [
        "nvidia-cuda-runtime-cu12.toml", "pinpkg.toml", "torch.toml", "triton.toml"]
    rows = {p.stem: list(shipped.loads(p.read_text(encoding="utf-8"))[1].values())
            for p in (compat / "native").glob("*.toml")}
    assert rows["torch"][0]["names_only"] is True and "libtorch_cuda.so" in rows["torch"][0]["provides"]
    assert [m["path"] for m in rows["pinpkg"][0]["members"]] == ["pinpkg/_C.so"]
    assert "pinpkg" not in rows["torch"][0]["source"] and _file(idx, "torch")[2] in rows["torch"][0]["source"]
    assert not any(re.search(r"[a-z]+://", p.read_text(encoding="utf-8")) for p in (compat / "native").glob("*"))
    before = len(idx.asked_by)
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert "4 wheels chosen: 4 already in compat/native" in r.output
    assert not [p for p, _ in idx.asked_by[before:] if p.endswith(".whl")]  # nothing read again
    r = CliRunner().invoke(main, [*args, "--check", "--sample", "4"])
    assert r.exit_code == 0 and "4 rows checked against the index, 4 read again: 0 disagree" in r.output, r.output
    pin = compat / "native" / "pinpkg.toml"
    real_sha = rows["pinpkg"][0]["sha256"]
    pin.write_text(pin.read_text(encoding="utf-8").replace(real_sha, "ef" * 32), encoding="utf-8")
    r = CliRunner().invoke(main, [*args, "--check"])
    assert r.exit_code == 1 and f"the index lists it with sha256 {real_sha}, the row has {'ef' * 32}" in r.output
    monkeypatch.setattr(shipped, "BUDGET", 100)
    r = CliRunner().invoke(main, [*args, "--compat", str(tmp_path / "small")])
    assert r.exit_code == 1 and "more than the 100 compat/native may hold" in r.output, r.output
    assert not (tmp_path / "small" / "native").exists()


def test_a_row_read_by_file_names_only_is_read_again_when_its_package_is_now_read_whole(
        idx: LocalIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pinpkg, once taken as a library the others need (read by its file names only, as cupy-cuda12x was): its row
    serves no run that reads it whole — that run reads the wheel again and writes its members; torch, still such a
    library, keeps its row unread."""
    from tritonlock.native import rule

    compat = tmp_path / "compat"
    args = ["compat", "native", "--index", idx.index_url("simple"), "--packages", "pinpkg", "--releases", "1",
            "--python", "3.11", "--cpu", "x86_64", "--compat", str(compat)]
    real = rule.is_provider
    monkeypatch.setattr(rule, "is_provider", lambda name: name.replace("_", "-") == "pinpkg" or real(name))
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    row = list(shipped.loads((compat / "native" / "pinpkg.toml").read_text(encoding="utf-8"))[1].values())[0]
    assert row["names_only"] is True and not row.get("members")
    monkeypatch.setattr(rule, "is_provider", real)
    before = len(idx.asked_by)
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert "4 wheels chosen: 3 already in compat/native" in r.output, r.output
    read = [p for p, _ in idx.asked_by[before:] if p.endswith(".whl")]
    assert read and all("pinpkg" in p for p in read), read
    row = list(shipped.loads((compat / "native" / "pinpkg.toml").read_text(encoding="utf-8"))[1].values())[0]
    assert not row.get("names_only") and [m["path"] for m in row["members"]] == ["pinpkg/_C.so"], row
    assert "its ELF files" in row["source"], row["source"]


def test_the_tool_refuses_what_is_not_a_python_or_a_cpu() -> None:
    for bad in (["--python", "3"], ["--python", "py3.12"], ["--cpu", "arm64"], ["--cpu", ""]):
        r = CliRunner().invoke(main, ["compat", "native", *bad])
        assert r.exit_code == 2 and "error: --" in r.output and "Traceback" not in r.output, (bad, r.output)


def test_the_shipped_rows_json_is_the_facts_as_read() -> None:
    """(A shipped row is what a read gives: its facts' own JSON, as the user cache keeps it, rebuilds the same.)"""
    f = _facts()
    assert NativeFacts.from_json(json.loads(json.dumps(f.to_json()))) == shipped.rebuild(NativeFacts, shipped.plain(f))


def test_the_tool_takes_the_wheels_a_linux_box_of_those_cpus_and_pythons_installs() -> None:
    from tritonlock.maintain.native import _fits

    py, cpu = ("3.10", "3.11", "3.12", "3.13"), ("x86_64", "aarch64")
    for name, fits in (("a-1-cp312-cp312-manylinux_2_28_x86_64.whl", True),
                       ("a-1-cp39-abi3-manylinux2014_aarch64.whl", True),  # abi3 from an older Python
                       ("a-1-cp314-abi3-manylinux_2_28_x86_64.whl", False),  # abi3 from a newer one
                       ("a-1-cp314-cp314-manylinux_2_28_x86_64.whl", False),
                       ("a-1-cp39-cp39-manylinux_2_28_x86_64.whl", False),
                       ("a-1-py3-none-manylinux_2_24_x86_64.whl", True),
                       ("a-1-cp312-cp312-musllinux_1_2_x86_64.whl", False),
                       ("a-1-cp312-cp312-win_amd64.whl", False), ("a-1-cp312-cp312-macosx_11_0_arm64.whl", False),
                       ("a-1-cp312-cp312-manylinux_2_28_ppc64le.whl", False), ("not a wheel name.whl", False)):
        assert _fits(name, py, cpu) is fits, name
    assert not _fits("a-1-cp312-cp312-manylinux_2_28_aarch64.whl", py, ("x86_64",))


def test_the_tool_also_takes_every_wheel_a_lock_holds_facts_of(idx: LocalIndex, tmp_path: Path) -> None:
    """--lock: the wheels a real resolve locked (its [[native]] tables) — hostpkg's here, which no --packages name —
    are read and shipped too, each under its package's name."""
    root = _project(tmp_path / "p", idx)
    assert _run("resolve", "-p", str(root))[0] == 0
    compat = tmp_path / "compat"
    r = CliRunner().invoke(main, ["compat", "native", "--index", idx.index_url("simple"), "--packages", "pinpkg",
                                  "--releases", "1", "--python", "3.11", "--cpu", "x86_64", "--compat", str(compat),
                                  "--lock", str(root / "triton-env.lock")])
    assert r.exit_code == 0, r.output
    assert "more wheels from 1 lock(s)" in r.output
    rows = list(shipped.loads((compat / "native" / "hostpkg.toml").read_text(encoding="utf-8"))[1].values())
    assert [row["filename"] for row in rows] == [_file(idx, "hostpkg")[3]]
    assert sorted(m["path"] for m in rows[0]["members"]) == ["hostpkg/_C.so", "hostpkg/lib/libhelper.so"]


def test_the_tool_reads_each_packages_own_count_of_releases_unless_one_is_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each package's newest final releases: as many as RELEASES_OF gives it, else RELEASES; --releases N: N of every
    package. Pre-releases and a release with no wheel that fits are not counted."""
    from nativebuild import stub_library
    from tritonlock.lock.index import IndexClient
    from tritonlock.maintain import native as tool

    lib = stub_library(tmp_path / "lib", "libk.so").read_bytes()
    index = LocalIndex(tmp_path / "index", core_metadata=True)
    for name, versions in (("many", ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5rc1")),
                           ("few", ("1.0", "1.1", "1.2", "1.3"))):
        for v in versions:
            index.add("simple", name, v, tag="cp311-cp311-manylinux_2_17_x86_64", modules={f"{name}/_k.so": lib})
    index.add("simple", "few", "1.4", tag="cp311-cp311-win_amd64", modules={"few/_k.pyd": lib})  # (fits no Linux box)
    index.start()
    try:
        client = IndexClient(index.index_url("simple"), timeout=30)

        def chosen(releases: int | None) -> dict[str, list[str]]:
            out: dict[str, list[str]] = {}
            for c in tool.choose(client, ["many", "few"], releases=releases, pythons=("3.11",), cpus=("x86_64",),
                                 say=lambda s: None):
                out.setdefault(c.package, []).append(c.file.filename.split("-")[1])
            return {k: sorted(v, reverse=True) for k, v in out.items()}

        monkeypatch.setattr(tool, "RELEASES_OF", {"many": 4})
        monkeypatch.setattr(tool, "RELEASES", 2)
        assert chosen(None) == {"many": ["1.4", "1.3", "1.2", "1.1"], "few": ["1.3", "1.2"]}
        assert chosen(1) == {"many": ["1.4"], "few": ["1.3"]}
        assert chosen(5) == {"many": ["1.4", "1.3", "1.2", "1.1", "1.0"], "few": ["1.3", "1.2", "1.1", "1.0"]}
        monkeypatch.setattr(tool, "RELEASES_OF", {"few": 1})
        assert chosen(None) == {"many": ["1.4", "1.3"], "few": ["1.3"]}
    finally:
        index.stop()
