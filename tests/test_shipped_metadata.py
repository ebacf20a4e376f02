"""METADATA shipped with the matrix (compat/metadata, `tritonlock compat metadata`): a first resolve on an index
without PEP 658 hashes takes the requirement headers of a file of a known sha256 from the matrix instead of
downloading the file to check it — only for that sha256, as checked only where the tool read the whole file, and
the check then holds the closure to what the row says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import populate, write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.lock import integrity, shippedmeta
from tritonlock.lock.lockfile import read_lock

INTENT = '[environment]\npython = "3.11"\ntorch = "==2.6.0"\ncuda = "cpu"\npackages = ["einops"]\n'
META = ("Metadata-Version: 2.1\nName: einops\nVersion: 0.8.0\nSummary: a summary\nLicense: MIT License\n        \n"
        "        Copyright (c) 2018\n        Requires-Dist: in-the-license-text\n\t\nRequires-Python: >=3.8\n"
        "Requires-Dist: typing-extensions>=4\nProvides-Extra: dev\nrequires-dist: numpy; extra == 'dev'\n"
        "Description-Content-Type: text/markdown\n\nRequires-Dist: in-the-description\n")


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """compat/metadata/ for this test alone (looked at afresh)."""
    d = tmp_path / "compat" / "metadata"
    d.mkdir(parents=True)
    monkeypatch.setattr(shippedmeta, "folder", lambda: str(d))
    shippedmeta.forget()
    yield d
    shippedmeta.forget()


def test_only_the_requirement_headers_are_kept() -> None:
    assert shippedmeta.headers_only(META) == (
        "Metadata-Version: 2.1\nName: einops\nVersion: 0.8.0\nRequires-Python: >=3.8\n"
        "Requires-Dist: typing-extensions>=4\nProvides-Extra: dev\nrequires-dist: numpy; extra == 'dev'\n")
    assert shippedmeta.headers_only("") == "" and shippedmeta.headers_only("\nName: x\n") == ""
    # what the decision, the check and the edges read of the kept headers is the same in both
    from tritonlock.lock._requires import metadata_fields

    full, kept = metadata_fields(META), metadata_fields(shippedmeta.headers_only(META))
    assert {k: full[k.lower()] for k in shippedmeta.HEADERS} == {k: kept[k.lower()] for k in shippedmeta.HEADERS}
    # (a License's blank lines are white space, not the end of the headers: sglang 0.5.2's Requires-Dist follow one)
    assert shippedmeta.headers_only("Name: x\r\nLicense: a\r\n   \r\nRequires-Dist: y\r\n") == "Name: x\nRequires-Dist: y\n"


def test_a_row_is_used_only_for_its_sha256_and_as_checked_only_where_read_whole(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole, ranged = "ab" * 32, "cd" * 32
    rows = [{"sha256": whole, "filename": "einops-0.8.0-py3-none-any.whl", "checked": True, "metadata": "Name: a\n"},
            {"sha256": ranged, "filename": "big-1.0-py3-none-any.whl", "checked": False, "metadata": "Name: b\n"}]
    text = shippedmeta.dumps("einops", rows)
    assert [{k: r[k] for k in rows[0]} for r in sorted(shippedmeta.loads(text), key=lambda r: r["sha256"])] == rows
    assert not re.search(r"[a-z]+://", text)  # no index address
    (folder / "einops.toml").write_text(text, encoding="utf-8")
    assert shippedmeta.shipped_metadata(whole, checked=True) == "Name: a\n"
    assert shippedmeta.shipped_metadata(whole.upper(), checked=False) == "Name: a\n"
    assert shippedmeta.shipped_metadata(ranged, checked=True) is None  # read by ranges: never vouched for
    assert shippedmeta.shipped_metadata(ranged, checked=False) == "Name: b\n"
    assert shippedmeta.shipped_metadata("ef" * 32, checked=False) is None
    # as the integrity check and the edges ask for it (nothing kept in the user's cache)
    assert integrity.kept_metadata(whole) == "Name: a\n"
    assert integrity.kept_metadata(ranged) is None and integrity.kept_metadata(ranged, served=True) == "Name: b\n"
    integrity.keep_metadata(whole, "Name: kept\n")  # what this machine checked itself comes first
    assert integrity.kept_metadata(whole) == "Name: kept\n"
    monkeypatch.setenv("TRITONLOCK_NO_SHIPPED_FACTS", "1")
    assert shippedmeta.shipped_metadata(ranged, checked=False) is None
    monkeypatch.delenv("TRITONLOCK_NO_SHIPPED_FACTS")
    # a file that does not read (or a row without its keys) is not used at all, and is no error
    (folder / "einops.toml").write_text(text.replace("checked = false", 'checked = "no"'), encoding="utf-8")
    shippedmeta.forget()
    assert shippedmeta.shipped_metadata(ranged, checked=False) is None
    assert shippedmeta.shipped_metadata(whole, checked=True) is None
    (folder / "einops.toml").write_text(text.replace("[[file]]", "[[file"), encoding="utf-8")
    shippedmeta.forget()
    assert shippedmeta.shipped_metadata(whole, checked=True) is None


def _index(tmp_path: Path) -> LocalIndex:
    idx = LocalIndex(tmp_path / "index")  # no PEP 658 hashes: the check downloads each file to vouch for it
    populate(idx)
    return idx


def test_the_tool_ships_a_locks_files_and_a_first_resolve_then_downloads_none_of_them(
        tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`compat metadata --lock`: every file the lock pins gets a row, read from the whole file (checked) where it is
    within the bound and by ranged reads where not, with no address. A resolve on a machine whose caches are empty
    then downloads none of the files with a checked row (those without one it downloads, as before); a row is what
    the check holds the closure to — one claiming a requirement the closure lacks fails the resolve (exit 4) — and
    with shipped facts off it is not used."""
    idx = _index(tmp_path)
    idx.start()
    try:
        first = tmp_path / "first"
        write_intent(first, idx, INTENT)
        r = CliRunner().invoke(main, ["resolve", "-p", str(first)])
        assert r.exit_code == 0, r.output
        lock = read_lock(first / "triton-env.lock")
        files = {w.sha256: w for t in lock.targets for p in t.packages for w in p.wheels}
        bound = sorted(w.size or 0 for w in files.values())[len(files) // 2]  # half the files within it
        monkeypatch.setattr(integrity, "MAX_FILE_BYTES", bound)
        compat = folder.parent
        r = CliRunner().invoke(main, ["compat", "metadata", "--lock", str(first / "triton-env.lock"),
                                      "--compat", str(compat)])
        assert r.exit_code == 0, r.output
        rows = {row["sha256"]: row for p in folder.glob("*.toml")
                for row in shippedmeta.loads(p.read_text(encoding="utf-8"))}
        assert set(rows) == set(files)
        assert {s for s, row in rows.items() if row["checked"]} == {s for s, w in files.items()
                                                                     if (w.size or 0) <= bound}
        assert 0 < sum(row["checked"] for row in rows.values()) < len(rows)
        einops = next(s for s, w in files.items() if w.name.startswith("einops-"))
        assert "Requires-Dist: typing-extensions" in rows[einops]["metadata"] and rows[einops]["checked"]
        assert not any(re.search(r"[a-z]+://", p.read_text(encoding="utf-8")) for p in folder.glob("*"))
        assert f"({len(files)} rows, {sum(r['checked'] for r in rows.values())} read from the whole file;" in r.output
        monkeypatch.setattr(integrity, "MAX_FILE_BYTES", 64 * 2**20)
        shippedmeta.forget()

        def fresh(name: str) -> tuple[int, str, set[str]]:
            """A resolve from empty caches (tritonlock's and uv's): its exit, its words, the locked files tritonlock
            itself downloaded."""
            monkeypatch.setenv("TRITONLOCK_NATIVE_CACHE", str(tmp_path / f"cache-{name}"))
            monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / f"uv-{name}"))
            idx.served_to.clear()
            root = tmp_path / name
            write_intent(root, idx, INTENT)
            r = CliRunner().invoke(main, ["resolve", "-p", str(root)])
            got = {s.rsplit("/", 1)[-1] for s, agent in idx.served_to if not agent.startswith("uv/")}
            return r.exit_code, r.output, got & {w.name for w in files.values()}

        code, out, downloaded = fresh("second")
        assert code == 0, out
        assert downloaded == {w.name for s, w in files.items() if not rows[s]["checked"]}
        # the row is what the check holds the closure to: one that claims a requirement nothing locks fails it
        path = next(p for p in folder.glob("*.toml") if einops in p.read_text(encoding="utf-8"))
        path.write_text(path.read_text(encoding="utf-8").replace(
            "Requires-Dist: typing-extensions", "Requires-Dist: phantom-dep\\nRequires-Dist: typing-extensions"),
            encoding="utf-8")
        shippedmeta.forget()
        code, out, _ = fresh("claimed")
        assert code == 4, out
        assert f"{files[einops].name} (checked against its hash) requires phantom-dep, which the closure does not " \
               "hold" in out, out
        monkeypatch.setenv("TRITONLOCK_NO_SHIPPED_FACTS", "1")
        code, out, downloaded = fresh("off")
        assert code == 0, out
        assert downloaded == {w.name for w in files.values()}
        # run again within the check's own bound: the rows read by ranges are read whole now (and only those)
        idx.served_to.clear()
        r = CliRunner().invoke(main, ["compat", "metadata", "--lock", str(first / "triton-env.lock"),
                                      "--compat", str(compat)])
        assert r.exit_code == 0, r.output
        again = {row["sha256"]: row for p in folder.glob("*.toml")
                 for row in shippedmeta.loads(p.read_text(encoding="utf-8"))}
        assert set(again) == set(files) and all(row["checked"] for row in again.values())
        assert {s.rsplit("/", 1)[-1] for s, _ in idx.served_to if s.endswith(".whl")} == {
            w.name for s, w in files.items() if not rows[s]["checked"]}
    finally:
        idx.stop()


def test_the_tool_ships_no_row_for_bytes_that_are_not_the_locks_and_stays_within_its_budget(
        tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgindex import build_wheel

    idx = _index(tmp_path)
    idx.start()
    try:
        root = tmp_path / "proj"
        write_intent(root, idx, INTENT)
        r = CliRunner().invoke(main, ["resolve", "-p", str(root)])
        assert r.exit_code == 0, r.output
        idx.tampered[("einops-0.8.0-py3-none-any.whl", "file")] = build_wheel(
            tmp_path / "swapped", "einops", "0.8.0").read_bytes()
        args = ["compat", "metadata", "--lock", str(root / "triton-env.lock"), "--compat", str(folder.parent)]
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
        assert re.search(r"not read: einops-0\.8\.0-py3-none-any\.whl: its bytes hash to [0-9a-f]{64}, the lock "
                         r"pins [0-9a-f]{64}", r.output), r.output
        assert not (folder / "einops.toml").exists() and (folder / "torch.toml").exists()
        assert "1 files could not be read (not shipped)" in r.output
        monkeypatch.setattr(shippedmeta, "BUDGET", 100)
        small = tmp_path / "small"
        r = CliRunner().invoke(main, [*args[:-1], str(small)])
        assert r.exit_code == 1 and "more than the 100 compat/metadata may hold" in r.output, r.output
        assert not (small / "metadata").exists()
    finally:
        idx.stop()


def test_the_shipped_rows_stay_within_their_budget_and_name_their_files() -> None:
    from tritonlock._data import compat_root

    root = compat_root()
    assert root is not None
    files = sorted((root / shippedmeta.FOLDER).glob("*.toml"))
    assert files and sum(len(p.read_bytes()) for p in files) <= shippedmeta.BUDGET
    for p in files:
        text = p.read_text(encoding="utf-8")
        assert not re.search(r"[a-z]+://", text), p.name
        for row in shippedmeta.loads(text):
            assert row["source"].startswith(f"the file {row['filename']}, sha256 {row['sha256']}: "), row
            assert row["filename"].endswith(".whl") and row["metadata"].startswith("Metadata-Version: "), row
            assert set(line.split(":", 1)[0].lower() for line in row["metadata"].splitlines()) <= {
                h.lower() for h in shippedmeta.HEADERS}, row


def test_requirements_after_a_licenses_blank_lines_are_read_by_the_check_the_edges_and_the_decision() -> None:
    """sglang 0.5.2's METADATA: a License whose text has blank lines (white space: a continuation), then its
    Requires-Dist. Each reader takes them all — read up to that line, sglang looked as if it required nothing."""
    from tritonlock.decide._pkgfacts import _headers as decision_headers
    from tritonlock.lock.edges import _requires
    from tritonlock.lock.integrity import _headers as check_headers

    text = ("Metadata-Version: 2.4\nName: sglang\nVersion: 0.5.2\nLicense: Apache License\n        \n"
            "        Version 2.0\nRequires-Dist: aiohttp\nRequires-Dist: torch==2.8.0; extra == \"srt\"\n"
            "Provides-Extra: srt\n\nRequires-Dist: not-a-header\n")
    assert [str(r) for r in _requires(text)] == ["aiohttp", 'torch==2.8.0; extra == "srt"']
    assert list(check_headers(text, "Requires-Dist")) == ["aiohttp", 'torch==2.8.0; extra == "srt"']
    assert decision_headers(text, "provides-extra") == ["srt"]
