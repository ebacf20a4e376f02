"""The packages decision is the best answer, not uv's first one: checked against uv, in the user's order, conflicts
named (an ancient release that pins nothing is no answer), CUDA user libraries held to the driver, nothing locked
that the platform cannot have, one target's conflict not blocking the others.

A small PyPI-shaped index that behaves as the real one does for vLLM, LMCache and SGLang (their requirements as
their wheels' METADATA state them, scaled down): `servekit` pins torch exactly in every recent release and caps the
transformers-like `tfm`, while its 2023 release pins nothing; `cachekit` needs a newer `tfm` and, from 0.5, CUDA 13
libraries (cupy-cuda13x, cuda-python 13); `routerkit`'s early release names no torch (its torch is in an extra)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.compat.matrix import load_matrix
from tritonlock.lock.lockfile import read_lock
from uvasked import asked_of_uv as _asked

LINUX = "py3-none-manylinux_2_28_x86_64"
MAC = "py3-none-macosx_11_0_arm64"
ANY = "py3-none-any"
TORCHES = ("2.9.1", "2.10.0", "2.11.0", "2.14.0", "2.14.1", "2.15.0")
R580 = 'driver = "580.95.05"\ngpus = ["9.0"]'
R550 = 'driver = "550.54.15"\ngpus = ["8.9"]'
R535 = 'driver = "535.183.01"\ngpus = ["8.0"]'
CUDA_SETUP = "from torch.utils.cpp_extension import CUDAExtension\nnvcc = 'nvcc'\n"


@pytest.fixture(scope="module")
def pypi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("pypi"))
    m = load_matrix()
    for tv in TORCHES:
        rel = m.torch_release(tv)
        assert rel is not None and rel.triton
        idx.add("simple", "triton", rel.triton, tag=LINUX)
        idx.add("simple", "torch", tv, tag=ANY, requires=(f"triton=={rel.triton}; platform_system == 'Linux'",))
    for v in ("4.57", "5.4", "5.16", "5.20", "5.24"):
        idx.add("simple", "tfm", v)
    # vLLM-like: recent releases pin torch and cap tfm; the 2023 release pins nothing; the first one is an sdist
    idx.add_sdist("simple", "servekit", "0.1", requires=("torch>=2.0",), uploaded="2023-06-19", setup_py=CUDA_SETUP)
    idx.add("simple", "servekit", "0.2", tag=LINUX, requires=("torch>=2.1", "tfm>=4.0"), uploaded="2023-12-14")
    idx.add("simple", "servekit", "0.19", tag=LINUX, requires=("torch==2.10.0", "tfm>=4.57,<5.0"),
            uploaded="2026-04-03")
    idx.add("simple", "servekit", "0.33", tag=LINUX, requires=("torch==2.14.0", "tfm>=5.16,<5.21"),
            uploaded="2026-11-02")
    # LMCache-like: needs a newer tfm; from 0.5 on, CUDA 13 builds of cupy and cuda-python
    idx.add("simple", "cachekit", "0.4.3", tag=LINUX, requires=("torch", "tfm>=4.51", "cupy-cuda12x"),
            uploaded="2026-04-07")
    idx.add("simple", "cachekit", "0.5.6", tag=LINUX,
            requires=("torch", "tfm>=5.4", "cupy-cuda13x", "cuda-python>=13,<14"), uploaded="2026-10-15")
    for name, v in (("cupy-cuda12x", "14.2.0"), ("cupy-cuda13x", "14.2.0"), ("cuda-python", "12.9.0"),
                    ("cuda-python", "13.4.4")):
        idx.add("simple", name, v, tag=LINUX)
    # SGLang-like: 0.5.2 names no torch (it is in an extra); later releases pin a torch servekit's never shares
    idx.add("simple", "routerkit", "0.5.2", requires=("tfm", "torch==2.9.1; extra == 'srt'"), uploaded="2025-09-11")
    idx.add("simple", "routerkit", "0.5.10", tag=LINUX, requires=("torch==2.9.1", "tfm>=4.57,<5.0"),
            uploaded="2026-04-05")
    idx.add("simple", "routerkit", "0.5.23", tag=LINUX, requires=("torch==2.14.1", "tfm>=5.16"),
            uploaded="2026-10-30")
    # unsloth-like: an extra pins an xformers-like package that pins torch; torchvision pins torch too (and moves)
    for tv, vv in (("2.10.0", "0.25.0"), ("2.14.0", "0.29.0"), ("2.15.0", "0.30.0")):
        idx.add("simple", "torchvision", vv, tag=ANY, requires=(f"torch=={tv}",))
    idx.add("simple", "xfmr", "0.0.28", tag=LINUX, requires=("torch==2.10.0",))
    idx.add("simple", "xfmr", "0.0.30", tag=LINUX, requires=("torch==2.14.0",))
    idx.add("simple", "tunekit", "1.0", requires=("torchvision", "xfmr==0.0.28; extra == 'cu121'"))
    # CUDA kernels: a macOS wheel for 1.0 only; 2.0 is an sdist whose build needs nvcc; cudaonly has no wheel at all
    idx.add("simple", "gpukern", "1.0", tag=MAC)
    idx.add("simple", "gpukern", "1.0", tag=LINUX)
    idx.add_sdist("simple", "gpukern", "2.0", setup_py=CUDA_SETUP)
    idx.add_sdist("simple", "cudaonly", "1.0", setup_py=CUDA_SETUP)
    # a dependency with Linux wheels only (no sdist), as pynvvideocodec's newer releases
    idx.add("simple", "linuxcodec", "2.0", tag=LINUX)
    idx.add("simple", "videokit", "1.0", requires=("linuxcodec",))
    # Three packages, no torch pin among them: alphakit's and betakit's newest need opposite sides of tfm 5 (a tie
    # only the user's order can break); both older releases are recent and take either; gammakit moves with neither
    for v, tfm, day in (("1.0", "tfm>=4.57", "2026-06-01"), ("2.0", "tfm<5.0", "2026-11-01")):
        idx.add("simple", "alphakit", v, tag=ANY, requires=("torch", tfm), uploaded=day)
    for v, tfm, day in (("1.0", "tfm>=4.57", "2026-06-02"), ("2.0", "tfm>=5.0", "2026-11-02")):
        idx.add("simple", "betakit", v, tag=ANY, requires=("torch", tfm), uploaded=day)
    for v in ("0.9", "1.1"):
        idx.add("simple", "gammakit", v, tag=ANY, requires=("tfm",))
    # deltakit's older release is an sdist (built at sync), recent and naming torch as its wheel-built newest does;
    # the newest needs tfm below 5, which betakit 2.0 excludes
    idx.add_sdist("simple", "deltakit", "1.0", requires=("torch", "tfm"), uploaded="2026-08-01")
    idx.add("simple", "deltakit", "2.0", tag=ANY, requires=("torch", "tfm<5.0"), uploaded="2026-11-03")
    # LMCache-like again, as on PyPI: the releases before the CUDA 13 one are sdists (built at sync)
    idx.add_sdist("simple", "storekit", "0.4.8", requires=("torch",), uploaded="2026-05-01")
    idx.add("simple", "storekit", "0.5.6", tag=LINUX, requires=("torch", "cupy-cuda13x"), uploaded="2026-10-15")
    # appkit's newest pins torch 2.14.0, its 1.5 (recent) torch 2.9.1; sidekit's only recent release pins torch 2.9.1,
    # its old one names no torch: beside appkit 2.0 only the old one installs
    idx.add("simple", "appkit", "1.5", tag=LINUX, requires=("torch==2.9.1",), uploaded="2026-05-01")
    idx.add("simple", "appkit", "2.0", tag=LINUX, requires=("torch==2.14.0",), uploaded="2026-10-01")
    idx.add("simple", "sidekit", "0.1", requires=("tfm",), uploaded="2023-01-01")
    idx.add("simple", "sidekit", "1.0", tag=LINUX, requires=("torch==2.9.1",), uploaded="2026-06-01")
    # hostkit's 1.0 and 2.0 and guestkit's recent release need opposite sides of tfm 5, all beside torch 2.14.0; the
    # old releases of both name no torch (hostkit 0.1 from 2022): beside hostkit 2.0 only guestkit 0.1 installs
    idx.add("simple", "hostkit", "0.1", requires=("tfm",), uploaded="2022-01-01")
    idx.add("simple", "hostkit", "0.2", requires=("tfm",), uploaded="2025-06-01")  # recent, and names no torch
    idx.add("simple", "hostkit", "1.0", tag=LINUX, requires=("torch==2.14.0", "tfm<5.0"), uploaded="2026-01-01")
    idx.add("simple", "hostkit", "2.0", tag=LINUX, requires=("torch==2.14.0", "tfm<5.0"), uploaded="2026-10-01")
    idx.add("simple", "guestkit", "0.1", requires=("tfm",), uploaded="2023-01-01")
    # hostkit again with an old release that names torch: oldhost's is over two years older than its newest (a
    # stand-in by its age alone), edgehost's exactly two years (730 days: an answer)
    for name, day in (("oldhost", "2024-09-30"), ("edgehost", "2024-10-01")):
        idx.add("simple", name, "0.1", requires=("torch", "tfm"), uploaded=day)
        idx.add("simple", name, "2.0", tag=LINUX, requires=("torch==2.14.0", "tfm<5.0"), uploaded="2026-10-01")
    # hostkit again, with a recent release that is only an sdist (its newest has a wheel): a stand-in
    idx.add("simple", "sdisthost", "0.1", requires=("tfm",), uploaded="2022-01-01")
    # ... and one that ships sdists only, each built at sync (no wheel is what every release needs: none stands in
    # for that alone)
    idx.add_sdist("simple", "sdistonly", "0.1", requires=("tfm",), uploaded="2022-01-01")
    idx.add_sdist("simple", "sdistonly", "0.2", requires=("tfm",), uploaded="2025-06-01")
    idx.add_sdist("simple", "sdistonly", "1.0", requires=("torch==2.14.0", "tfm<5.0"), uploaded="2026-01-01")
    idx.add_sdist("simple", "sdistonly", "2.0", requires=("torch==2.14.0", "tfm<5.0"), uploaded="2026-10-01")
    # ... and one whose recent 0.5 is a wheel whose METADATA cannot be read (see the test that serves it so)
    idx.add("simple", "rawhost", "0.1", requires=("tfm",), uploaded="2022-01-01")
    idx.add("simple", "rawhost", "0.5", requires=("tfm",), uploaded="2025-06-01")
    idx.add("simple", "rawhost", "2.0", tag=LINUX, requires=("torch==2.14.0", "tfm<5.0"), uploaded="2026-10-01")
    idx.add_sdist("simple", "sdisthost", "0.5", requires=("tfm",), uploaded="2025-06-01")
    idx.add("simple", "sdisthost", "2.0", tag=LINUX, requires=("torch==2.14.0", "tfm<5.0"), uploaded="2026-10-01")
    idx.add("simple", "guestkit", "1.0", tag=LINUX, requires=("torch==2.14.0", "tfm>=5.0"), uploaded="2026-06-01")
    idx.start()
    yield idx
    idx.stop()


def _project(root: Path, idx: LocalIndex, packages: list[str], *targets: str, torch: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    body = "".join(f"\n[[targets]]\nname = \"{name}\"\n{spec}\n" for name, spec in
                   (t.split("|", 1) for t in targets))
    (root / "triton-env.toml").write_text(
        f'[environment]\npython = "3.11"\npackages = {json.dumps(packages)}\n'
        + (f'torch = "{torch}"\n' if torch else "")
        + f'[indexes]\ntorch = "default"\ndefault = "{idx.index_url("simple")}"\n{body}', encoding="utf-8")
    return root


def _linux(spec: str) -> str:
    return f'gpu|glibc = "2.35"\n{spec}'


MACBOOK = 'mac|os = "macos"\narch = "arm64"\nmacos = "14.5"'


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def _versions(root: Path, target: str = "gpu") -> tuple[dict[str, str], object]:
    lock = read_lock(root / "triton-env.lock")
    (t,) = [t for t in lock.targets if t.name == target]
    return {p.name: p.version for p in t.packages}, t.selection


@pytest.mark.parametrize("order", [["servekit", "cachekit"], ["cachekit", "servekit"]])
def test_both_packages_get_their_newest_whatever_order_uv_decides_them_in(tmp_path: Path, pypi: LocalIndex,
                                                                         order: list[str]) -> None:
    """uv alone, cachekit first, takes tfm 5.24 and gives up servekit for its 2023 release; the check asks for
    servekit 0.33 with cachekit kept where it is, and uv finds it (tfm 5.20 suits both)."""
    root = _project(tmp_path, pypi, order, _linux(R580))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _versions(root)
    assert (versions["servekit"], versions["cachekit"], versions["torch"]) == ("0.33", "0.5.6", "2.14.0")
    assert versions["tfm"] == "5.20" and "cupy-cuda13x" in versions
    assert not [w for w in sel.warnings if "is locked, not its newest" in w]
    assert sel.reasons[0] == ("torch 2.14.0: the newest torch the packages allow (servekit 0.33 requires "
                              "torch==2.14.0); torch 2.15.0 would fit this target")


@pytest.mark.parametrize("order", [["alphakit", "betakit", "gammakit"], ["betakit", "gammakit", "alphakit"],
                                   ["gammakit", "alphakit", "betakit"]])
def test_of_three_packages_a_tie_goes_to_the_one_written_first(tmp_path: Path, pypi: LocalIndex,
                                                                  order: list[str]) -> None:
    """alphakit 2.0 and betakit 2.0 cannot be locked together (tfm <5 against >=5); either one at its newest with the
    other a release back is a best answer. The one the user wrote first gets its newest, the other is held back with
    the check that failed quoted, and gammakit — in any position — is at its newest."""
    root = _project(tmp_path, pypi, order, _linux(R580))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _versions(root)
    first, second = [n for n in order if n != "gammakit"]
    assert (versions[first], versions[second], versions["gammakit"]) == ("2.0", "1.0", "1.1"), versions
    (held,) = [w for w in sel.warnings if "is locked, not its newest" in w]
    assert held.startswith(f"{second} 1.0 is locked, not its newest release 2.0: checked: uv finds no lock with "
                           f"{second}==2.0"), held
    assert first in held and "tfm" in held, held  # uv's words name the other side and what they fight over


def test_cuda_13_libraries_are_passed_over_on_a_cuda_12_driver(tmp_path: Path, pypi: LocalIndex) -> None:
    """An RTX 4090 on R550: cachekit 0.5.6's cupy-cuda13x and cuda-python 13 cannot load there (CUDA 13 needs
    R580), like a cu130 torch; cachekit 0.4.3 (cupy-cuda12x) is locked, and the warning says why, checked."""
    root = _project(tmp_path / "one", pypi, ["cachekit"], _linux(R550))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _versions(root)
    assert (versions["cachekit"], versions["torch"]) == ("0.4.3", "2.10.0")
    assert "cupy-cuda13x" not in versions and versions["cupy-cuda12x"] == "14.2.0"
    passed = [r for r in sel.reasons if r.startswith("passed over what this target cannot have")]
    assert passed and "cupy-cuda13x 14.2.0 (a CUDA 13 build, which needs driver >= 580" in passed[0]
    assert "this driver is 550.54.15" in passed[0]
    (w,) = [w for w in sel.warnings if w.startswith("cachekit 0.4.3 is locked, not its newest release 0.5.6")]
    assert "checked: uv finds no lock with cachekit==0.5.6" in w and "cupy-cuda13x" in w
    assert "tritonlock passed over cupy-cuda13x 14.2.0 (a CUDA 13 build" in w
    # the same machine with servekit named first: the row (vllm 0.19.1 + lmcache 0.4.3 + torch 2.10.0)
    root = _project(tmp_path / "two", pypi, ["servekit", "cachekit"], _linux(R550))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _versions(root)
    assert (versions["servekit"], versions["cachekit"], versions["torch"]) == ("0.19", "0.4.3", "2.10.0")
    assert not any(n.endswith("cu13") or n.endswith("cuda13x") or (n == "cuda-python" and v.startswith("13."))
                   for n, v in versions.items())
    # servekit below its newest because of the host: the driver is named, with the check
    (w,) = [w for w in sel.warnings if w.startswith("servekit 0.19 is locked, not its newest release 0.33")]
    assert "torch 2.14.0 does not fit this target" in w and "driver" in w and w.endswith(
        "(checked: servekit 0.33's METADATA requires torch==2.14.0, and torch 2.10.0 is locked here)"), w


def test_a_release_held_off_by_a_library_passed_over_says_why_that_library_was(tmp_path: Path,
                                                                                pypi: LocalIndex) -> None:
    """An A100 on R535: storekit 0.5.6 needs cupy-cuda13x, a CUDA 13 build R535 cannot load, and storekit 0.4.8
    (an sdist) only stands in for it: exit 3, no lock. uv's words only say cupy-cuda13x "does not allow any
    versions" (tritonlock's `<0`); the message says what tritonlock passed over and why, with the driver."""
    root = _project(tmp_path, pypi, ["storekit"], _linux(R535))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert not (root / "triton-env.lock").exists()
    assert "storekit cannot be locked at a recent release — storekit 0.4.8" in out, out
    assert "it needs a source build at sync, where storekit 0.5.6 has a wheel for this target" in out
    (line,) = [ln for ln in out.splitlines() if ln.strip().startswith("no storekit >= 0.5.6 installs on this target")]
    assert "cupy-cuda13x" in line.split("(tritonlock passed over", 1)[0], line  # uv's own words name it
    assert ("(tritonlock passed over cupy-cuda13x 14.2.0 (a CUDA 13 build, which needs driver >= 580.65.06; this "
            "driver is 535.183.01))") in line, line
    assert "fix: `tritonlock why` shows the change to the machine" in out and "Traceback" not in out


def test_two_packages_whose_recent_releases_exclude_each_other_are_a_conflict(tmp_path: Path, pypi: LocalIndex,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """uv alone locks servekit 0.33 beside routerkit 0.5.2 (a release that names no torch) — or, routerkit first,
    routerkit 0.5.23 beside servekit's 2023 release. Neither is an answer: exit 3, both named, uv's words, a fix.
    The check holds both recent at once: uv is never asked for recent routerkit with servekit free (on PyPI, uv's
    walk down vLLM's old releases for sglang was 38 s of a 78 s resolve from empty caches)."""
    root = _project(tmp_path, pypi, ["servekit", "routerkit"], _linux(R580))
    asked = _asked(monkeypatch)
    code, out = _run("resolve", "-p", str(root))
    assert any("routerkit>=0.5.10" in q and "servekit>=0.19" in q for q in asked), asked
    assert not any("routerkit>=0.5.10" in q and "servekit" in q for q in asked), asked
    assert code == 3, out
    assert not (root / "triton-env.lock").exists()  # nothing fits anywhere: no lock
    assert ("routerkit cannot be locked at a recent release — routerkit 0.5.2, the newest uv finds with the other "
            "requirements, only stands in for it: its requirements name no torch, where routerkit 0.5.23 requires "
            "torch==2.14.1") in out
    assert "no routerkit >= 0.5.10 installs beside servekit >= 0.19" in out
    assert "uv: Because" in out and "Traceback" not in out
    assert "fix: put routerkit and servekit in two environments (or targets)" in out
    assert 'pinning it, e.g. "routerkit==0.5.2" in [environment].packages' in out


@pytest.mark.parametrize(("order", "mine", "theirs"), [
    (["servekit", "routerkit", "tfm"], "routerkit>=0.5.10", "servekit>=0.19"),
    # (tfm first, at its newest: servekit 0.33 would hold it below 5.21 — uv's answer keeps routerkit recent)
    (["tfm", "servekit", "routerkit"], "servekit>=0.19", "routerkit>=0.5.10")])
def test_a_third_package_that_takes_no_side_is_not_named_in_the_conflict(
        tmp_path: Path, pypi: LocalIndex, monkeypatch: pytest.MonkeyPatch, order: list[str], mine: str,
        theirs: str) -> None:
    """servekit and routerkit exclude each other's recent releases; tfm, named too (before them or after), is recent
    beside either. The conflict names the other of the two alone as the other side, not tfm: uv, asked with all
    three held recent, ends its proof with servekit and routerkit (tfm is in its words only as routerkit's
    dependency), and is asked no more. Never is one of them held recent with the other left free (uv's walk down
    vLLM's old releases, 30 s and more with empty caches, where tfm is transformers and servekit vLLM), nor tfm (no
    question but that one)."""
    root = _project(tmp_path, pypi, order, _linux(R580))
    asked = _asked(monkeypatch)
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert not (root / "triton-env.lock").exists()
    a, b = mine.replace(">=", " >= "), theirs.replace(">=", " >= ")
    assert f"no {a} installs beside {b} (each older release only stands in" in out, out
    assert f"fix: put {a.split()[0]} and {b.split()[0]} in two environments (or targets)" in out, out
    held = [q for q in asked if mine in q]
    assert held and all(theirs in q and any(x.startswith("tfm>=") for x in q) for q in held), asked
    assert len([q for q in held if any(x.startswith("tfm>=") for x in q)]) == 1, asked
    assert not any(mine in q and theirs.split(">=")[0] in q for q in asked), asked


@pytest.mark.parametrize(("words", "name", "named"), [
    ("Because vllm==0.6.5 depends on torch==2.5.1", "vllm", True), ("we can conclude that vllm.", "vllm", True),
    ("vllm-flash-attn==2.6.2 depends on", "vllm", False), ("torchvision>=0.20 depends on", "torch", False),
    ("and torch==2.5.1 are incompatible", "torch", True), ("you require flash_attn>=2", "flash-attn", True),
    ("sglang[all]>=0.5.3 depends on", "sglang", True), ("(vllm)", "vllm", True), ("my.vllm>=1", "vllm", False),
    ("because Sglang==0.5.2", "sglang", True), ("", "vllm", False), ("zope.interface>=5", "zope-interface", True),
    ("we can conclude that vllm.", "vllm", True), ("vllm==0.6.5 and", "vllm-0", False)])
def test_uvs_words_name_a_package_as_a_word_of_its_own(words: str, name: str, named: bool) -> None:
    from tritonlock.decide._pkgfallback import named_in

    assert named_in(words, name) is named


@pytest.mark.parametrize(("words", "roots"), [
    ("Because a==1 depends on tfm>=4 and b>=2 depends on torch==2.9, we can conclude that a==1 and b>=2 are "
     "incompatible.\nAnd because you require a==1 and b>=2, we can conclude that your requirements are unsatisfiable.",
     "because you require a==1 and b>=2, we can conclude that "),
    ("Because tritonlock-closure depends on A>=1 and b, we can conclude that your requirements are unsatisfiable.\n"
     "hint: c was not found", "because tritonlock-closure depends on a>=1 and b, we can conclude that "),
    ("b was not found in the package registry", "b was not found in the package registry"),
    ("we can conclude that your requirements are unsatisfiable", "we can conclude that ")])
def test_the_sentence_that_ends_uvs_proof_names_the_requirements_it_rests_on(words: str, roots: str) -> None:
    from tritonlock.decide._pkgfallback import proof_roots

    assert proof_roots(words) == roots


def test_the_intents_torch_against_a_packages_recent_releases_is_a_conflict_with_the_torch_pin_as_fix(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """torch = "==2.15.*": only servekit's 2023 release allows it. Exit 3 with the fix a check found."""
    root = _project(tmp_path, pypi, ["servekit"], _linux(R580), torch="==2.15.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "servekit cannot be locked at a recent release — servekit 0.2" in out
    assert "it is years older (2023-12-14; servekit 0.33: 2026-11-02)" in out
    assert "servekit 0.19 or newer cannot be installed with torch = '==2.15.*'" in out
    assert 'fix: torch = "==2.14.*" in ' in out and "(checked: uv then locks servekit 0.33 with torch 2.14.0)" in out
    # the fix works: with it, the lock holds servekit 0.33 and torch 2.14.0
    intent = root / "triton-env.toml"
    intent.write_text(intent.read_text().replace('torch = "==2.15.*"', 'torch = "==2.14.*"'))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert _versions(root)[0]["servekit"] == "0.33"


def test_an_old_release_the_user_pins_is_taken(tmp_path: Path, pypi: LocalIndex) -> None:
    root = _project(tmp_path, pypi, ["servekit==0.2"], _linux(R580), torch="==2.15.*")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert _versions(root)[0]["servekit"] == "0.2"


def test_a_source_build_that_needs_nvcc_is_never_locked_for_a_mac(tmp_path: Path, pypi: LocalIndex) -> None:
    """gpukern 2.0 is an sdist whose build needs nvcc, which macOS cannot have: the Mac gets 1.0's wheel, and the
    warning says what was passed over; cudaonly has nothing else — exit 3 naming the platform, not exit 4."""
    root = _project(tmp_path / "kern", pypi, ["gpukern"], MACBOOK)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _versions(root, "mac")
    assert versions["gpukern"] == "1.0"
    assert not [p for p in read_lock(root / "triton-env.lock").targets[0].packages if p.build == "source"]
    (w,) = [w for w in sel.warnings if w.startswith("gpukern 1.0 is locked, not its newest release 2.0")]
    assert "gpukern 2.0 as a source build" in w and "nvcc" in w
    root = _project(tmp_path / "only", pypi, ["cudaonly"], MACBOOK)
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "cudaonly 1.0 as a source build (no wheel for Python 3.11 on macOS arm64 14.5; its build needs nvcc" in out
    assert "check that both indexes are reachable" not in out


def test_one_targets_conflict_does_not_block_the_others(tmp_path: Path, pypi: LocalIndex) -> None:
    """The GPU box is locked; the Mac, for which cudaonly cannot be built, is recorded as a conflict (exit 3), and
    `show`, `check` and a second `resolve` read it from the lock."""
    root = _project(tmp_path, pypi, ["cudaonly"], _linux(R580), MACBOOK)
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "(1 target locked, 1 recorded as a conflict (mac), " in out
    lock = read_lock(root / "triton-env.lock")
    gpu, mac = lock.targets
    assert gpu.selection.ok and {p.name for p in gpu.packages} >= {"cudaonly", "torch"}
    assert not mac.selection.ok and not mac.packages and mac.selection.conflict is not None
    assert "its build needs nvcc" in mac.selection.conflict.message
    code, again = _run("resolve", "-p", str(root))
    assert code == 3 and "up to date" in again and "its build needs nvcc" in again
    code, out = _run("check", "-p", str(root))
    assert code == 1 and "target 'mac' is recorded as a conflict, with nothing locked for it: " in out
    code, out = _run("show", "-p", str(root))
    assert code == 0 and "target mac: conflict — nothing is locked for it" in out and "torch None" not in out
    code, out = _run("why", "-p", str(root), "--target", "mac")
    assert code == 0 and "the lock records a conflict for this target: target 'mac': the packages need" in out


def test_the_package_whose_pin_holds_torch_is_named_not_torchvision(tmp_path: Path, pypi: LocalIndex) -> None:
    """tunekit[cu121] pins xfmr 0.0.28, which pins torch 2.10.0; torchvision pins torch too, but moves with it."""
    root = _project(tmp_path, pypi, ["tunekit[cu121]"], _linux(R580))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _versions(root)
    assert versions["torch"] == "2.10.0" and versions["xfmr"] == "0.0.28"
    assert sel.reasons[0].startswith("torch 2.10.0: the newest torch the packages allow (xfmr 0.0.28 requires "
                                     "torch==2.10.0 — checked: uv finds no lock with torch==2.15.0")
    assert "torchvision" not in sel.reasons[0].split("—")[0]


def test_a_dependency_with_no_wheel_for_the_platform_is_the_platforms_conflict(tmp_path: Path,
                                                                             pypi: LocalIndex) -> None:
    """videokit needs linuxcodec, which has Linux wheels only: on a Mac that is exit 3 naming linuxcodec and the
    platform, not exit 4 asking whether the indexes are reachable."""
    root = _project(tmp_path, pypi, ["videokit"], MACBOOK)
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert ("target 'mac': linuxcodec has no wheel that installs on Python 3.11 on macOS arm64 14.5 (needed by "
            "videokit), in any release the requirements allow: uv: Because") in out
    assert "reachable" not in out and "Traceback" not in out



def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # (closed again: nothing listens there)


def test_a_torch_index_that_does_not_answer_is_asked_once_not_once_a_torch_line(
        tmp_path: Path, pypi: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """The torch index does not answer (nothing listens at its port): the first compile fails with uv's network
    words, one quick try of tritonlock's own gets no answer either, and every later compile bound to that index fails
    at once with the first one's error — uv is asked online once, not once per torch line with its retries (on a
    machine whose DNS cannot find PyTorch's index: 163 s before the exit 4). The error is the one uv gave, with the
    way out (exit 4)."""
    from tritonlock import _subprocess

    port = _closed_port()
    real = _subprocess.run
    online: list[list[str]] = []

    def spy(args: list[str], **kw: object) -> object:
        if args[1:3] == ["pip", "compile"] and "--offline" not in args:
            online.append(list(args))
        return real(args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(_subprocess, "run", spy)
    root = _project(tmp_path, pypi, ["servekit", "cachekit"], _linux(R535))
    text = (root / "triton-env.toml").read_text()
    (root / "triton-env.toml").write_text(text.replace('torch = "default"',
                                                       f'torch = "http://127.0.0.1:{port}/whl/{{backend}}"'))
    code, out = _run("resolve", "-p", str(root))
    assert code == 4, out
    assert "uv could not resolve target 'gpu'" in out and f"torch index http://127.0.0.1:{port}/whl/" in out, out
    assert f"cause: the torch index does not answer from here: http://127.0.0.1:{port}/whl/" in out, out
    assert len(online) == 1, [a[3] for a in online]
    assert not (root / "triton-env.lock").exists()


def test_a_torch_index_that_answers_is_never_held_back(tmp_path: Path, pypi: LocalIndex,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A compile that fails for a reason of the packages (no release fits) asks nothing of the index; one that fails
    with network words, on a torch index that answers a quick try, holds nothing back; what a run found silent is
    forgotten at the next run (a network comes back) — and a resolve on that index locks as before."""
    from tritonlock.errors import ClosureError
    from tritonlock.lock import _silent, closure, index

    url = pypi.index_url("simple")
    tried: list[str] = []
    real = index.unreachable
    monkeypatch.setattr(index, "unreachable", lambda u, p, **kw: tried.append(u) or real(u, p, **kw))
    err = ClosureError("uv could not resolve: no version of nothere", uv="Because nothere was not found")
    _silent.note_down(url, err.uv or "", err)  # words of no network failure: the index is not even asked
    assert tried == []
    _silent.note_down(url, "error: Failed to fetch: x\n  cause: dns error", err)  # asked: it answers
    assert tried == [url] and _silent.host(url) not in _silent.DOWN
    _silent.DOWN["gone.example:8080"] = err
    closure.new_run()
    assert _silent.DOWN == {}
    monkeypatch.undo()
    root = _project(tmp_path, pypi, ["servekit"], _linux(R580))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out


def test_uv_resolves_with_a_python_it_has_and_never_downloads_one(tmp_path: Path, pypi: LocalIndex,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Every `uv pip compile` gets --no-python-downloads (with downloads allowed, uv fetches a CPython build of the
    target's version just to resolve for it: 9 s of retries a compile where that host is unreachable), and the
    interpreter it builds sdists' metadata with, found once per run (uv's own discovery costs half a second a
    compile): for a target of this Python's version, this one."""
    import sys

    from tritonlock import _subprocess

    real = _subprocess.run
    seen: list[list[str]] = []

    def spy(args: list[str], **kw: object) -> object:
        if args[1:3] == ["pip", "compile"]:
            seen.append(list(args))
        return real(args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(_subprocess, "run", spy)
    root = _project(tmp_path, pypi, ["cachekit", "servekit"], _linux(R580))
    (root / "triton-env.toml").write_text((root / "triton-env.toml").read_text().replace(
        'python = "3.11"', f'python = "{sys.version_info[0]}.{sys.version_info[1]}"'), encoding="utf-8")
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    assert seen
    for argv in seen:
        assert "--no-python-downloads" in argv and f"--python={sys.executable}" in argv, argv


def test_a_second_resolve_reads_no_release_metadata_again_for_its_words(tmp_path: Path, pypi: LocalIndex) -> None:
    """The held-back line's words read the releases' METADATA from the index (ranged reads of the wheel, or PEP 658);
    it is kept per file sha256, so `resolve --upgrade` reads none of it again — and says the same."""
    root = _project(tmp_path, pypi, ["alphakit", "betakit", "gammakit"], _linux(R580))

    def files_read() -> list[str]:  # what tritonlock itself read of the index's files (uv's own reads aside)
        return [s for s, agent in pypi.asked_by[before:] if "/_files/" in s and not agent.startswith("uv/")]

    before = len(pypi.asked_by)
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    first = _versions(root)[1].warnings
    assert files_read() and [w for w in first if "is locked, not its newest" in w]  # (the case is the one claimed)
    before = len(pypi.asked_by)
    code, out = _run("resolve", "-p", str(root), "--upgrade")
    assert code == 0, out
    assert files_read() == [] and _versions(root)[1].warnings == first


def test_a_release_that_needs_a_source_build_where_the_newer_ones_have_wheels_only_stands_in(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """betakit 2.0 (tfm >= 5) first; deltakit 2.0 needs tfm < 5, and uv falls back to deltakit 1.0 — recent, naming
    torch, but an sdist to build at sync where 2.0 has a wheel: that is a conflict naming both (exit 3), not a
    lock; pinning the old release is how a user takes it."""
    root = _project(tmp_path, pypi, ["betakit", "deltakit"], _linux(R580))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "deltakit cannot be locked at a recent release — deltakit 1.0" in out, out
    assert "it needs a source build at sync, where deltakit 2.0 has a wheel for this target" in out, out
    assert "betakit" in out.split("deltakit 2.0 has a wheel for this target", 1)[1], out
    pinned = _project(tmp_path / "pinned", pypi, ["betakit", "deltakit==1.0"], _linux(R580))
    code, out = _run("resolve", "-p", str(pinned))
    assert code == 0, out
    assert _versions(pinned)[0]["deltakit"] == "1.0"


def test_machines_alike_share_one_packages_decision_but_each_conflict_names_its_own_target(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """Two Macs (one computation: machines alike are decided once) and a GPU box between them: each Mac's recorded
    conflict names that Mac — in resolve's errors, in the lock, in `show` and in `check` — never the first one."""
    mac = 'os = "macos"\narch = "arm64"\nmacos = "14.5"'
    root = _project(tmp_path, pypi, ["cudaonly"], f"mac-a|{mac}", _linux(R580), f"mac-b|{mac}")
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    errors = [x for x in out.splitlines() if x.startswith("error: ")]
    assert [x.split(":", 2)[1] for x in errors] == [" target 'mac-a'", " target 'mac-b'"], errors
    lock = read_lock(root / "triton-env.lock")
    for t in lock.targets:
        if t.name != "gpu":
            assert t.selection.conflict is not None and t.selection.conflict.target == t.name
            assert t.selection.conflict.message.startswith(f"target {t.name!r}: the packages need"), t.name
    code, shown = _run("show", "-p", str(root))
    assert "target mac-b: conflict — nothing is locked for it" in shown
    assert shown.split("target mac-b: conflict", 1)[1].splitlines()[1].strip().startswith("target 'mac-b': ")
    code, checked = _run("check", "-p", str(root))
    assert code == 1 and ("target 'mac-b' is recorded as a conflict, with nothing locked for it: target 'mac-b': "
                          in checked), checked


@pytest.mark.parametrize("order", [["appkit", "sidekit"], ["sidekit", "appkit"], ["appkit", "sidekit", "gammakit"]])
def test_the_least_fix_holds_the_package_that_must_move_down_at_most_where_the_fix_has_it(
        tmp_path: Path, pypi: LocalIndex, order: list[str]) -> None:
    """appkit first: beside appkit 2.0 (torch 2.14) only sidekit's 2023 release installs — a stand-in, so a conflict
    whose fix is found by the search over every torch line: appkit at most 1.5 (never "appkit>=…"), checked by the
    lock uv then finds, which the fix gives when applied. sidekit first: it keeps its newest and appkit is held
    back to 1.5, with the check that failed."""
    root = _project(tmp_path, pypi, order, _linux(R580))
    code, out = _run("resolve", "-p", str(root))
    if order[0] == "sidekit":
        assert code == 0, out
        versions, sel = _versions(root)
        assert (versions["sidekit"], versions["appkit"], versions["torch"]) == ("1.0", "1.5", "2.9.1")
        (w,) = [w for w in sel.warnings if w.startswith("appkit 1.5 is locked, not its newest release 2.0: ")]
        assert "checked: uv finds no lock with appkit==2.0 with sidekit>=1.0" in w, w
        return
    assert code == 3, out
    assert ("target 'gpu': sidekit cannot be locked at a recent release — sidekit 0.1, the newest uv finds with the "
            "other requirements, only stands in for it: its requirements name no torch, where sidekit 1.0 requires "
            "torch==2.9.1") in out, out
    assert "  sidekit 1.0 or newer installs only if appkit moves down\n" in out, out
    assert ('  fix: add "appkit<=1.5" to [environment].packages (checked: uv then locks sidekit 1.0, appkit 1.5 with '
            'torch 2.9.1), or accept sidekit 0.1 by pinning it ("sidekit==0.1" in [environment].packages), or put '
            "them in two targets or environments") in out, out
    intent = root / "triton-env.toml"
    intent.write_text(intent.read_text().replace('"appkit"', '"appkit<=1.5"'))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, _ = _versions(root)
    assert (versions["appkit"], versions["sidekit"]) == ("1.5", "1.0")


@pytest.mark.parametrize(("host", "floor"), [("hostkit", "1.0"), ("oldhost", "2.0"), ("sdisthost", "2.0")])
def test_the_search_for_a_fix_never_asks_uv_for_a_release_that_only_stands_in(
        tmp_path: Path, pypi: LocalIndex, monkeypatch: pytest.MonkeyPatch, host: str, floor: str) -> None:
    """hostkit first: beside hostkit 2.0 only guestkit's 2023 release installs — a stand-in, so a conflict, and the
    fix is searched over every torch line with guestkit at 1.0 or newer. hostkit 0.1 (2022) and 0.2 (naming no
    torch) would let guestkit 1.0 lock on each line, but no fix holds a stand-in: that search asks uv for hostkit at
    1.0 or newer, the oldest that names torch (a free hostkit, uv read vLLM down to 0.1.2 on each line, 30 s a
    compile with its cache empty). The one
    least-fix check that leaves hostkit free still does (it tells a conflict between recent releases of both), and
    the conflict's words are what they were. oldhost 0.1 names torch but is over two years older than 2.0: the
    same. sdisthost 0.5 is recent, but only an sdist (its requirements unread: the index serves no METADATA for it)
    where 2.0 has a wheel — a fix would need a source build at sync, so it only stands in too."""
    asked = _asked(monkeypatch)
    root = _project(tmp_path, pypi, [host, "guestkit"], _linux(R580))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert ("target 'gpu': guestkit cannot be locked at a recent release — guestkit 0.1, the newest uv finds with the "
            "other requirements, only stands in for it: its requirements name no torch, where guestkit 1.0 requires "
            "torch==2.14.0") in out, out
    recent = [a for a in asked if "guestkit>=1.0" in a]
    assert recent, asked
    held = [a for a in recent if f"{host}>={floor}" in a]  # (the search over the lines)
    assert held and [a for a in recent if a not in held] in ([], [(host, "guestkit>=1.0")]), recent  # (least_fix's)
    # (a fix has both: where they do not lock together on a line, hostkit alone — how far the packages lock there —
    # is no fix, and uv is not asked for it)
    assert not [a for a in asked if a and all(q.startswith(host) for q in a)], asked


def test_a_package_that_ships_sdists_only_is_held_at_its_recent_floor_all_the_same(
        tmp_path: Path, pypi: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """sdistonly ships no wheel at all: a source build is what every release needs, so none stands in for that —
    the search for a fix holds it at 0.2, the oldest within two years of 2.0 (its sdists' requirements are not read
    here, so nothing more is known), never free and never held at nothing."""
    asked = _asked(monkeypatch)
    root = _project(tmp_path, pypi, ["sdistonly", "guestkit"], _linux(R580))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    recent = [a for a in asked if "guestkit>=1.0" in a]
    held = [a for a in recent if any(x.startswith("sdistonly") and x.endswith(">=0.2") for x in a)]
    assert held and [a for a in recent if a not in held] in ([], [("sdistonly", "guestkit>=1.0")]), recent


def test_a_recent_release_whose_requirements_cannot_be_read_is_no_stand_in_and_the_search_for_a_fix_may_take_it(
        tmp_path: Path, pypi: LocalIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """rawhost 0.5 is recent and has a wheel, but its METADATA cannot be read here (the index answers tritonlock's
    ranged reads of that wheel with an error; uv reads it whole): nothing says it only stands in, so the search for
    a fix holds rawhost at 0.5 or newer — not at 2.0, the oldest that names torch by its METADATA — and finds the fix
    0.5 allows."""
    def unreadable(handler, name: str, data: bytes) -> bool:  # type: ignore[no-untyped-def]
        if name.startswith("rawhost-0.5-") and handler.headers.get("Range") \
                and not handler.headers.get("User-Agent", "").startswith("uv/"):
            handler._send(500, b"no", "text/plain")
            return True
        return False

    asked = _asked(monkeypatch)
    monkeypatch.setattr(pypi, "hook", unreadable)
    (wheel,) = (pypi.root / "simple" / "_files").glob("rawhost-0.5-*.whl")
    monkeypatch.setitem(pypi.tampered, (wheel.name, "metadata"), b"")  # (no PEP 658 METADATA beside it either)
    root = _project(tmp_path, pypi, ["rawhost", "guestkit"], _linux(R580))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert ("rawhost>=0.5", "guestkit>=1.0") in asked and ("rawhost>=2.0", "guestkit>=1.0") not in asked, asked
    assert "  guestkit 1.0 or newer installs only if rawhost moves down\n" in out, out
    assert ('  fix: add "rawhost<=0.5" to [environment].packages (checked: uv then locks guestkit 1.0, rawhost 0.5 '
            "with torch 2.14.0)") in out, out


def test_a_release_exactly_two_years_older_is_no_stand_in_and_the_search_for_a_fix_may_take_it(
        tmp_path: Path, pypi: LocalIndex) -> None:
    """edgehost 0.1 names torch and is exactly 730 days older than 2.0: an answer, not a stand-in — the search for a
    fix may take it (guestkit 1.0 locks beside it) and says so."""
    root = _project(tmp_path, pypi, ["edgehost", "guestkit"], _linux(R580))
    code, out = _run("resolve", "-p", str(root))
    assert code == 3, out
    assert "  guestkit 1.0 or newer installs only if edgehost moves down\n" in out, out
    assert ('  fix: add "edgehost<=0.1" to [environment].packages (checked: uv then locks guestkit 1.0, edgehost 0.1 '
            "with torch 2.14.0)") in out, out


def test_when_every_target_is_a_conflict_resolve_json_still_says_so(tmp_path: Path, pypi: LocalIndex) -> None:
    """storekit on R535: no lock (its only target is a conflict) — and `resolve --json` prints the document with that
    target's conflict, not nothing; uv's words never name tritonlock's own `<0` as something the user requires."""
    root = _project(tmp_path, pypi, ["storekit"], _linux(R535))
    r = CliRunner().invoke(main, ["resolve", "-p", str(root), "--json"])
    assert r.exit_code == 3, r.output
    doc = json.loads(r.stdout)
    assert doc["written"] is False and [t["name"] for t in doc["targets"]] == ["gpu"]
    (t,) = doc["targets"]
    assert t["ok"] is False and t["conflict"].startswith("target 'gpu': storekit cannot be locked at a recent release")
    assert "you require cupy-cuda13x<0" not in t["conflict"] and "tritonlock-closure" not in t["conflict"]
    assert not (root / "triton-env.lock").exists()


def test_uvs_words_name_the_users_requirements_and_tritonlocks_own_passing_over_apart() -> None:
    from tritonlock.decide._pkgwords import uv_reason

    said = uv_reason("error: No solution found when resolving dependencies\n  cause: Because tritonlock-closure "
                     "depends on cupy-cuda13x<0, which does not allow any versions, and tritonlock-closure depends on "
                     "backpkg>=2,!=7.0,!=6.0 and tritonlock-closure depends on vllm>=0.33, we can conclude that "
                     "tritonlock-closure's requirements are unsatisfiable.")
    assert said == ("Because tritonlock passes over cupy-cuda13x every release (what this target cannot have), which "
                    "does not allow any versions, and you require backpkg>=2 and tritonlock passes over backpkg 7.0, "
                    "6.0 (what this target cannot have) and you require vllm>=0.33, we can conclude that your "
                    "requirements are unsatisfiable.")
    long = uv_reason("cause: " + "x" * 5000)
    assert len(long) == 480 and long.endswith("...")  # (a reason is a line, not a page)


@pytest.mark.parametrize(("said", "names"), [
    ("Because nvidia-cudnn-frontend>=1.13.0,<1.18.0 has no wheels with a matching platform tag (e.g., "
     "`macosx_14_0_arm64`) and you require it", ["nvidia-cudnn-frontend"]),
    ("Because all versions of nvidia-cudnn-frontend have no wheels with a matching platform tag (e.g., "
     "`macosx_13_0_arm64`) and you require nvidia-cudnn-frontend", ["nvidia-cudnn-frontend"]),
    ("Because linuxcodec==2.0 has no wheels with a matching Python ABI tag and videokit depends on linuxcodec",
     ["linuxcodec"]),
])
def test_a_package_with_no_wheel_here_is_named_as_itself_never_as_its_version(said: str, names: list[str]) -> None:
    """uv names a range of a package's releases ("x>=1.13.0,<1.18.0 has no wheels"): the name is the package's, never
    "1-18-0" read from the range's end."""
    from tritonlock.decide._pkgwords import _NO_WHEEL

    assert _NO_WHEEL.findall(said) == names


def test_a_misspelt_package_is_said_as_one_with_the_nearest_names_the_index_serves(tmp_path: Path,
                                                                                    pypi: LocalIndex) -> None:
    """`servekitt` (no such project on the index): "no index serves a package named …: check the spelling", with
    servekit — a name the index serves — as the nearest; never uv's internal project name, never pip's
    extra-index-url note where none is set."""
    first = _project(tmp_path / "ok", pypi, ["servekit"], _linux(R580))
    assert _run("resolve", "-p", str(first))[0] == 0  # (uv has now seen servekit's page)
    root = _project(tmp_path / "typo", pypi, ["servekitt"], _linux(R580))
    code, out = _run("resolve", "-p", str(root))
    assert code == 4, out
    assert (f"error: target 'gpu': no index serves a package named 'servekitt': {pypi.index_url('simple')} answers "
            "that it has no such project — check the spelling in [environment].packages (the nearest names it "
            "serves: servekit") in out, out
    assert "tritonlock-closure" not in out and "reachable" not in out and "Traceback" not in out
    assert not (root / "triton-env.lock").exists()


def test_the_lock_does_not_depend_on_the_folder_resolve_ran_in(tmp_path: Path, pypi: LocalIndex,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A held-back line names the intent's file as the project names it (triton-env.toml), not the path from where
    resolve ran: two people resolving one project from different folders commit the same bytes."""
    root = _project(tmp_path / "deep" / "proj", pypi, ["servekit"], _linux(R580), torch=">=2.10,<2.14")
    monkeypatch.chdir(tmp_path)
    assert _run("resolve", "-p", "deep/proj")[0] == 0
    first = (root / "triton-env.lock").read_bytes()
    assert b"outside torch = '>=2.10,<2.14' in triton-env.toml" in first, first.decode()[:3000]
    monkeypatch.chdir(root)
    assert _run("resolve", "-p", ".", "--upgrade")[0] == 0
    assert (root / "triton-env.lock").read_bytes() == first


def test_an_index_that_does_not_answer_gets_no_note_about_pips_extra_index_url(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An index that refuses the connection: uv's words and the fix to reach it — not pip's extra-index-url note,
    which is about a package no index was found to serve (and not the internal name of uv's project)."""
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "http://127.0.0.1:9/extra/simple")
    root = tmp_path / "p"
    root.mkdir()
    (root / "triton-env.toml").write_text(
        '[environment]\npython = "3.11"\npackages = ["servekit"]\n[indexes]\ntorch = "default"\n'
        'default = "http://127.0.0.1:9/simple"\n\n[[targets]]\nname = "gpu"\nglibc = "2.35"\n' + R580 + "\n",
        encoding="utf-8")
    code, out = _run("resolve", "-p", str(root))
    assert code == 4, out
    assert "extra-index-url" not in out and "tritonlock-closure" not in out and "Traceback" not in out, out


@pytest.mark.parametrize(("driver", "cuda13"), [("580.65.06", True), ("580.65.05", False)])
def test_cuda_13_libraries_on_a_driver_exactly_at_the_floor_are_kept(tmp_path: Path, pypi: LocalIndex, driver: str,
                                                                      cuda13: bool) -> None:
    """cachekit 0.5.6 needs cupy-cuda13x and cuda-python 13: a driver exactly at CUDA 13's floor (580.65.06) loads
    them, and the newest cachekit is locked with them; one patch below, they are passed over (cachekit 0.4.3)."""
    root = _project(tmp_path, pypi, ["cachekit"], _linux(f'driver = "{driver}"\ngpus = ["9.0"]'))
    code, out = _run("resolve", "-p", str(root))
    assert code == 0, out
    versions, sel = _versions(root)
    if cuda13:
        assert versions["cachekit"] == "0.5.6" and "cupy-cuda13x" in versions, versions
        assert not any(r.startswith("passed over what this target cannot have") for r in sel.reasons)
    else:
        assert versions["cachekit"] == "0.4.3" and "cupy-cuda13x" not in versions, versions
        (passed,) = [r for r in sel.reasons if r.startswith("passed over what this target cannot have")]
        assert f"which needs driver >= 580.65.06; this driver is {driver}" in passed, passed
