"""A compile answered from uv's cache (`compile_target(..., offline=True)`, lock/_fromcache.py) answers as uv online
would, though the cache holds another day's pages: a release published since is read and taken, where uv, offline,
passes over a release whose metadata its cache lacks without a word; a conflict on a page this run has not read is
asked again once the page is read; uv's log never reaches the words the user is shown. On a local index, with uv's
cache filled by an earlier resolve (tests/test_packages_ahead.py's `ahead` index: aheadapp 2.0 needs aheadlib>=2,
which the index does not serve until a test publishes it)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from pkgindex import LocalIndex
from test_packages_ahead import _done, _project, _resolve, ahead  # noqa: F401  (a fixture)
from tritonlock.compat.matrix import load_matrix
from tritonlock.errors import ClosureError
from tritonlock.lock import closure
from tritonlock.models import LockPlan


def _plan(root: Path, idx: LocalIndex, *packages: str) -> LockPlan:
    from tritonlock.decide.lockplan import lock_plan
    from tritonlock.decide.resolve import feasible
    from tritonlock.intent.read import read_intent
    from tritonlock.project import select

    matrix = load_matrix()
    intent = read_intent(root / "triton-env.toml")
    (sel,) = select(intent)
    (line,) = [c for c in feasible(intent, matrix, sel.target, "3.11") if c.torch == "2.10.0"]
    return lock_plan(dataclasses.replace(line, index=idx.index_url("simple"), packages=packages), matrix)


def _cached(tmp_path: Path, idx: LocalIndex, *, publish: bool) -> Path:
    """A project resolved once (uv's cache holds its pages: aheadlib's lists 1.0 only), then — where `publish` —
    aheadlib 2.0 published, needing aheadextra, new too; and a new run, which has read no page online."""
    root = _project(tmp_path / "p", idx)
    _done(_resolve(root))
    if publish:
        idx.add("simple", "aheadextra", "1.0")
        idx.add("simple", "aheadlib", "2.0", requires=("aheadextra",))
    closure.new_run()
    return root


def _uv_pages(idx: LocalIndex, before: int) -> Counter[str]:
    return Counter(p for p, agent in idx.asked_by[before:] if agent.startswith("uv/") and "/_files/" not in p)


def test_a_release_published_since_that_uv_passes_over_offline_is_read_and_taken(tmp_path: Path,
                                                                                 ahead: LocalIndex) -> None:
    """Asked again with aheadlib's page read online, uv's cache lacks aheadlib 2.0's metadata: uv, offline, passes it
    over and answers aheadapp 1.0 + aheadlib 1.0 (a lock, every page read this run). Its warning names the release:
    it is read with what it needs, and the answer is uv's online one — without asking the whole compile online (the
    torch and triton pages are asked of the index once)."""
    root = _cached(tmp_path, ahead, publish=True)
    before = len(ahead.asked_by)
    got = {p.name: p.version for p in closure.compile_target(_plan(root, ahead, "aheadapp"), ahead.index_url("simple"),
                                                             offline=True)}
    assert (got["aheadapp"], got["aheadlib"], got.get("aheadextra")) == ("2.0", "2.0", "1.0"), got
    pages = _uv_pages(ahead, before)
    assert pages["/simple/torch/"] == pages["/simple/triton/"] == pages["/simple/aheadapp/"] == 1, pages


def test_a_conflict_on_a_page_this_run_has_not_read_is_asked_again_once_it_is_read(tmp_path: Path,
                                                                                  ahead: LocalIndex) -> None:
    """aheadapp==2.0 needs aheadlib>=2: uv's cached page (another day's) says only aheadlib 1.0 is available — a
    conflict on pages this run has not read. They are read, uv asked again, and aheadlib 2.0 (published since) is
    locked."""
    root = _cached(tmp_path, ahead, publish=True)
    got = {p.name: p.version for p in closure.compile_target(_plan(root, ahead, "aheadapp==2.0"),
                                                             ahead.index_url("simple"), offline=True)}
    assert (got["aheadapp"], got["aheadlib"], got.get("aheadextra")) == ("2.0", "2.0", "1.0"), got


def test_a_conflict_that_holds_today_is_uvs_answer_in_its_own_words(tmp_path: Path, ahead: LocalIndex,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing published: the conflict holds once the pages are read. It is said in uv's words — no line of uv's log,
    though this machine's RUST_LOG asks for it — and each page is asked of the index once (read, not the whole
    compile asked online again)."""
    monkeypatch.setenv("RUST_LOG", "debug")
    root = _cached(tmp_path, ahead, publish=False)
    before = len(ahead.asked_by)
    with pytest.raises(ClosureError) as err:
        closure.compile_target(_plan(root, ahead, "aheadapp==2.0"), ahead.index_url("simple"), offline=True)
    words = str(err.value)
    assert "aheadapp" in words and "aheadlib" in words and "unsatisfiable" in words, words
    assert not any(level in words for level in ("DEBUG", "WARN", "TRACE", " INFO ")), words
    pages = _uv_pages(ahead, before)
    assert pages and set(pages.values()) == {1}, pages


def test_uvs_log_asked_for_by_this_machine_never_reaches_an_online_answer(tmp_path: Path, ahead: LocalIndex,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUST_LOG", "debug")
    root = _cached(tmp_path, ahead, publish=False)
    with pytest.raises(ClosureError) as err:
        closure.compile_target(_plan(root, ahead, "aheadapp==2.0"), ahead.index_url("simple"))
    assert "unsatisfiable" in str(err.value) and "DEBUG" not in str(err.value), str(err.value)


def test_a_preferred_pin_is_kept_offline_though_a_newer_release_is_published(tmp_path: Path,
                                                                           ahead: LocalIndex) -> None:
    """An existing lock's pins are uv's preferences (`preferring`): the release published since is no reason to
    move a pin the requirements still allow."""
    root = _cached(tmp_path, ahead, publish=True)
    with closure.preferring({"gpu": {"aheadapp": "1.0", "aheadlib": "1.0"}}):
        got = {p.name: p.version for p in closure.compile_target(_plan(root, ahead, "aheadapp"),
                                                                 ahead.index_url("simple"), offline=True)}
    assert (got["aheadapp"], got["aheadlib"]) == ("1.0", "1.0") and "aheadextra" not in got, got


# --- uv's words, as uv 0.13 writes them -------------------------------------------------------------------------------

# uv --offline on vllm + xformers with its cache holding one compile's pages (recorded 2026-12-06, PyPI): the metadata
# of most of xformers' history is missing, in ranges
_XFORMERS_WORDS = (
    "error: No solution found when resolving dependencies\n  cause: Because only xformers<=0.0.35 is available and "
    "xformers>=0.0.16rc424,<=0.0.16rc425 needs to be downloaded from a registry, we can conclude that "
    "xformers>=0.0.16rc424,<=0.0.16rc425 cannot be used.\n         And because all of:\n             xformers<=0.0.13\n"
    "             xformers==0.0.16\n          need to be downloaded from a registry and xformers>=0.0.17,<=0.0.19 has "
    "no wheels with a matching Python ABI tag (e.g., `cp312`), we can conclude that xformers>=0.0.17,<=0.0.19 cannot "
    "be used.\n\nhint: Packages were unavailable because the network was disabled. When the network is disabled, "
    "registry packages may only be read from the cache.\n")

@pytest.mark.parametrize(("words", "lacks"), [
    # a warning (RUST_LOG=warn) on a release passed over offline, then on the package
    ("WARN `aheadlib==2.0` needs to be downloaded from a registry\nWARN aheadlib needs to be downloaded from a "
     "registry\n", {"aheadlib": "==2.0"}),
    # the package first, then a release: the release is what is read
    ("WARN aheadlib needs to be downloaded from a registry\nWARN `aheadlib==2.0` needs to be downloaded from a "
     "registry\n", {"aheadlib": "==2.0"}),
    # two releases of one package: the first named (uv tries the newest first)
    ("WARN `Aheadlib==2.0` needs to be downloaded from a registry\nWARN `aheadlib==1.5` needs to be downloaded from a "
     "registry\n", {"aheadlib": "==2.0"}),
    ("Because sglang was not found in the cache and you require sglang, we can conclude that your requirements are "
     "unsatisfiable.\n\nhint: Packages were unavailable because the network was disabled.", {"sglang": ""}),
    ("hint: rich==13.0.0 needs to be downloaded from a registry, but the network was disabled", {"rich": "==13.0.0"}),
    ("Because only aheadlib==1.0 is available and you require aheadlib>=2, we can conclude", {}),
    # a range of releases (uv 0.13, proving xformers' history cannot be used): the range, and its last bound is no
    # package ("0-0-16rc425" was read as one, and its failed read sent the compile online)
    (_XFORMERS_WORDS, {"xformers": ">=0.0.16rc424,<=0.0.16rc425"}),
    ("Because only vllm<=0.34.0 is available and vllm>=0.6.5,<=0.25.1 needs to be downloaded from a registry, we",
     {"vllm": ">=0.6.5,<=0.25.1"}),
])
def test_what_uvs_words_say_its_cache_lacks(words: str, lacks: dict[str, str]) -> None:
    from tritonlock.lock._fromcache import missed

    assert missed(words) == lacks


@pytest.mark.parametrize(("words", "names"), [
    ("Because only aheadlib==1.0 is available and aheadapp>=2.0 depends on aheadlib>=2, we can conclude that "
     "aheadapp>=2.0 cannot be used.\nAnd because you require aheadapp==2.0, we can conclude that your requirements are "
     "unsatisfiable.", {"aheadlib", "aheadapp"}),  # ("1.0 is available": no package)
    ("Because there are no versions of einopz and you require einopz, we can conclude", {"einopz"}),
    ("Because the current Python version (3.11.7) does not satisfy Python>=3.12 and vllm==0.20.0 depends on "
     "Python>=3.12, we can conclude that vllm==0.20.0 cannot be used.", {"vllm"}),
    ("Because tritonlock-closure depends on sglang[all]==0.5.2 and torch==2.10.0+cu128 depends on "
     "nvidia-cudnn-cu12==9.10.2.21, ...", {"sglang", "torch", "nvidia-cudnn-cu12"}),
    ("Because only the following versions of Torch_Audio are available:\n  torch-audio<=2.9\n", {"torch-audio"}),
    ("Because 3to2==1.0 depends on x>=1 and x was not found in the package registry", {"3to2", "x"}),
    ("error: No solution found when resolving dependencies", set()),
    # (a list of alternatives, and the interpreter: no packages)
    ("we can conclude that vllm>=0.2.6,<=0.5.1 depends on one of:\n  torch==2.1.2\n  torch==2.2.1\n",
     {"vllm", "torch"}),
    ("hint: You require CPython 3.12 (`cp312`), but we only found wheels for `vllm` (v0.4.0.post1) with the "
     "following Python ABI tags: `cp38`", set()),
])
def test_the_packages_uvs_failure_names(words: str, names: set[str]) -> None:
    from tritonlock.lock._fromcache import named

    assert named(words) == names


@pytest.mark.parametrize(("words", "many"), [
    (_XFORMERS_WORDS, True),
    ("because vllm>=0.6.5,<=0.25.1 needs to be downloaded from a registry", True),
    ("And because all of:\n  aheadlib==1.0\n  aheadlib==2.0\n need to be downloaded from a registry", True),
    ("WARN `aheadlib==2.0` needs to be downloaded from a registry\nWARN aheadlib needs to be downloaded from a "
     "registry\n", False),
    ("hint: rich==13.0.0 needs to be downloaded from a registry, but the network was disabled", False),
    ("Because sglang was not found in the cache and you require sglang", False),
])
def test_a_range_of_releases_uvs_cache_lacks_is_told_from_one(words: str, many: bool) -> None:
    from tritonlock.lock._fromcache import many as told

    assert told(words) is many


def test_a_range_of_missing_releases_is_asked_online_in_full_at_once(tmp_path: Path) -> None:
    """uv offline lacks a range of xformers' releases (words recorded from uv): no `--no-deps` read round per
    release (one at a time, six rounds, then online in full anyway: 34.7 s where this takes 19 s on vllm +
    xformers) — the compile is asked online in full at once, its answer uv's."""
    import subprocess

    from tritonlock.lock._fromcache import from_cache

    asked: list[list[str]] = []

    def uv(argv: list[str], at: str = "", log: str = "") -> subprocess.CompletedProcess[str]:
        asked.append(list(argv))
        if "--offline" in argv:
            return subprocess.CompletedProcess(argv, 1, "", _XFORMERS_WORDS)
        return subprocess.CompletedProcess(argv, 0, "", "")

    out = tmp_path / "pylock.toml"
    proc = from_cache(uv, ["uv", "pip", "compile", "pyproject.toml"], [], out, lambda reqs: "")
    assert proc.returncode == 0
    assert asked == [["uv", "pip", "compile", "pyproject.toml", "--offline"], ["uv", "pip", "compile", "pyproject.toml"]]
    assert not (tmp_path / "read").exists() and not (tmp_path / "read-releases").exists()


def test_uvs_log_lines_are_read_for_what_they_name_and_taken_out_of_its_words(tmp_path: Path) -> None:
    """uv is asked offline with its warnings on (RUST_LOG=warn, this machine's own setting replaced): what they name
    is read; its words, as shown, keep everything but the log lines."""
    import subprocess

    from tritonlock.lock._fromcache import _offline

    asked: list[tuple[list[str], str]] = []

    def uv(argv: list[str], at: str = "", log: str = "") -> subprocess.CompletedProcess[str]:
        asked.append((argv, log))
        return subprocess.CompletedProcess(argv, 1, "", "WARN `aheadlib==2.0` needs to be downloaded from a registry\n"
                                           "  DEBUG something\nerror: No solution found\n  cause: Because ...\n")

    proc, lacks = _offline(uv, ["uv", "pip", "compile"])
    assert asked == [(["uv", "pip", "compile", "--offline"], "warn")]
    assert lacks == {"aheadlib": "==2.0"}
    assert proc.stderr == "error: No solution found\n  cause: Because ...\n"


def test_a_conflict_naming_a_package_uv_cannot_read_stands_as_uv_gave_it(tmp_path: Path) -> None:
    """needy needs onlymac, which has a macOS wheel only: on this Linux target uv's offline answer is a conflict
    naming both, on pages this run has not read. They are read — onlymac's read fails as the compile does — and uv's
    conflict stands: no page asked twice (the compile is not asked online in full for it)."""
    from test_packages_ahead import LINUX

    idx = LocalIndex(tmp_path / "index")
    rel = load_matrix().torch_release("2.10.0")
    assert rel is not None and rel.triton
    idx.add("simple", "triton", rel.triton, tag=LINUX)
    idx.add("simple", "torch", "2.10.0", tag=LINUX, requires=(f"triton=={rel.triton}; platform_system == 'Linux'",))
    idx.add("simple", "onlymac", "1.0", tag="py3-none-macosx_11_0_arm64")
    idx.add("simple", "needy", "1.0", requires=("onlymac",))
    idx.start()
    try:
        root = _project(tmp_path / "p", idx, "needy")
        plan = _plan(root, idx, "needy")
        with pytest.raises(ClosureError):  # (uv's cache now holds the pages)
            closure.compile_target(plan, idx.index_url("simple"))
        closure.new_run()
        before = len(idx.asked_by)
        with pytest.raises(ClosureError) as err:
            closure.compile_target(plan, idx.index_url("simple"), offline=True)
        assert "onlymac" in str(err.value), str(err.value)
        pages = _uv_pages(idx, before)
        assert pages["/simple/onlymac/"] == 1 and set(pages.values()) == {1}, pages
    finally:
        idx.stop()
