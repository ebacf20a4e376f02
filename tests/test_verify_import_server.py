"""verify's package import checks through one import server (tlverify.imports.import_server_main): it finds the
distributions in its own process, forks one process per distribution (those that import torch after it has imported
torch once), and reports each job as it ends. A job that crashes, prints, hangs or raises is its own row; the rows
are what the per-job processes gave before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pkgindex import build_wheel

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the import server forks (POSIX)")

RUNNER = str(Path(__file__).resolve().parents[1] / "tritonlock" / "verify" / "runner")

# each job notes, in the file $TL_TEST_LOG, when it ran and whether torch was imported before it
_NOTE = ("import os, sys, time\n"
         "with open(os.environ['TL_TEST_LOG'], 'a') as fh:\n"
         "    fh.write(f\"{__name__} {os.getpid()} {time.monotonic()} {'torch' in sys.modules}\\n\")\n"
         "time.sleep(0.3)\n"
         "with open(os.environ['TL_TEST_LOG'], 'a') as fh:\n"
         "    fh.write(f\"end {__name__} {time.monotonic()}\\n\")\n")
PACKAGES = {
    "okpkg": _NOTE,
    "noisypkg": "print('hello from noisypkg')\nimport sys\nsys.stderr.write('noise on stderr\\n')\n",
    "crashpkg": "import os\nos.abort()\n",
    "raisepkg": "raise RuntimeError('raisepkg refuses to import')\n",
    "exitpkg": "import os\nos._exit(7)\n",
    "needstorch": _NOTE,  # (requires torch: imported after the server has imported it)
}
# a stand-in torch that says on stdout and in the log that it was imported (and by which process)
FAKE_TORCH = ("import os\nprint('torch prints at import')\n"
              "with open(os.environ['TL_TEST_LOG'], 'a') as fh:\n    fh.write(f'torch imported in {os.getpid()}\\n')\n")


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> str:
    from tritonlock._subprocess import uv_bin

    root = tmp_path_factory.mktemp("import-server")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    wheels = [build_wheel(root / "w" / n, n, "1.0", modules={f"{n}/__init__.py": body},
                          requires=("torch",) if n == "needstorch" else ()) for n, body in PACKAGES.items()]
    wheels.append(build_wheel(root / "w" / "torch", "torch", "0.0.1", modules={"torch/__init__.py": FAKE_TORCH}))
    python = str(root / "venv" / "bin" / "python")
    subprocess.run([uv_bin(), "pip", "install", "--python", python, "--no-deps", "--offline", *map(str, wheels)],
                   check=True, capture_output=True, env={**os.environ, "UV_CACHE_DIR": str(root / "uv-cache")})
    return python


def _serve(python: str, named: list[str], limit: int = 2, log: Path | None = None,
           eager: bool = False) -> tuple[list[dict], dict[str, dict]]:
    env = {**os.environ, "TL_TEST_LOG": str(log or Path(python).parent / "log.txt")}
    p = subprocess.run([python, "-I", RUNNER, "--import-server", *(["--eager-torch"] if eager else [])], input=json.dumps(
        {"named": named, "scope": None, "limit": limit}), capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]  # (only its lines: what imports print goes elsewhere)
    assert "jobs" in lines[0], lines
    timing = lines[-1]["timing"]  # (its own times, last: each job's span within the server's)
    spans = {d: (a, b) for d, a, b in timing["jobs"]}
    assert set(spans) == {m["dist"] for m in lines[1:-1]}
    assert all(0 <= a <= b <= timing["end"] for a, b in spans.values()), timing
    return lines[0]["jobs"], {m["dist"]: m for m in lines[1:-1]}


@pytest.mark.parametrize("eager", [False, True])
def test_each_job_ends_in_its_own_process_and_says_how(venv: str, eager: bool) -> None:
    """okpkg imports; noisypkg's print stays in its own row (never in the server's lines); crashpkg aborts (SIGABRT:
    its row, the others go on); raisepkg's error is in its row; exitpkg's exit code is its row's — whether torch is
    imported at once (the jobs without it then in fresh interpreters) or after them."""
    jobs, results = _serve(venv, list(PACKAGES), eager=eager)
    assert sorted(j["dist"] for j in jobs) == sorted(PACKAGES)
    assert set(results) == set(PACKAGES)
    ok = results["okpkg"]
    assert ok["code"] == 0 and json.loads(ok["stdout"].splitlines()[-1]) == [{"module": "okpkg", "ok": True}]
    noisy = results["noisypkg"]
    assert noisy["code"] == 0 and noisy["stdout"].startswith("hello from noisypkg\n") and "noise on stderr" in \
        noisy["stderr"]
    assert results["crashpkg"]["code"] == -6  # (SIGABRT)
    (row,) = json.loads(results["raisepkg"]["stdout"].splitlines()[-1])
    assert not row["ok"] and row["error"] == "RuntimeError: raisepkg refuses to import"
    assert results["exitpkg"]["code"] == 7


@pytest.mark.parametrize("limit", [1, 2, 8])
def test_every_job_is_reported_whatever_the_number_at_a_time(venv: str, limit: int) -> None:
    _, results = _serve(venv, list(PACKAGES), limit=limit)
    assert set(results) == set(PACKAGES)
    assert {d: r["code"] for d, r in results.items()} == {"okpkg": 0, "noisypkg": 0, "crashpkg": -6, "raisepkg": 0,
                                                          "exitpkg": 7, "needstorch": 0}


def test_torch_is_imported_once_by_the_server_after_the_jobs_that_do_not_need_it_and_the_limit_holds(
        venv: str, tmp_path: Path) -> None:
    """The stand-in torch is imported once, by the server, not by the jobs; okpkg (no torch) ran without it,
    needstorch (requires torch) with it; with one job at a time no two jobs overlap, with eight they do."""
    for limit, eager in ((1, False), (8, False), (1, True), (8, True)):
        log = tmp_path / f"log{limit}{eager}.txt"
        _, results = _serve(venv, ["okpkg", "needstorch"], limit=limit, log=log, eager=eager)
        lines = log.read_text().splitlines()
        torch = [x for x in lines if x.startswith("torch imported in ")]
        assert len(torch) == 1, lines
        starts = {x.split()[0]: x.split() for x in lines if x.split()[0] in ("okpkg", "needstorch")}
        assert starts["okpkg"][3] == "False" and starts["needstorch"][3] == "True", lines
        assert torch[0].split()[-1] not in (starts["okpkg"][1], starts["needstorch"][1])
        ends = {x.split()[1]: float(x.split()[2]) for x in lines if x.startswith("end ")}
        first, second = sorted(("okpkg", "needstorch"), key=lambda n: float(starts[n][2]))
        overlap = float(starts[second][2]) < ends[first]
        assert overlap == (limit > 1), (limit, eager, lines)
        assert results["needstorch"]["stdout"].startswith("[") or "torch prints" not in results["needstorch"]["stdout"]


def test_the_runners_rows_from_the_server_are_the_per_job_processes_rows(venv: str, tmp_path: Path) -> None:
    """ImportChecks (the server) and the per-job processes it replaces give the same rows."""
    code = f"""
import json, sys
sys.path.insert(0, {RUNNER!r})
from tlverify import imports
from tlverify.report import Report
named = {sorted(PACKAGES)!r}
rows = []
for fork in (True, False):
    if not fork:
        del imports.os.fork
    r = Report()
    checks = imports.ImportChecks({RUNNER!r}, (named, None))
    checks.finish(r, gpu=False)
    rows.append(sorted(r.imports, key=lambda x: x["dist"]))
print(json.dumps(rows))
"""
    p = subprocess.run([venv, "-I", "-c", code], capture_output=True, text=True, timeout=180,
                       env={**os.environ, "TL_TEST_LOG": str(tmp_path / "log.txt")})
    assert p.returncode == 0, p.stderr
    served, alone = json.loads(p.stdout.splitlines()[-1])
    assert [r["dist"] for r in served] == sorted(PACKAGES)
    assert served == alone
    by = {r["dist"]: r for r in served}
    assert by["okpkg"]["ok"] and not by["raisepkg"]["ok"] and not by["crashpkg"]["ok"]
    assert "signal 6" in by["crashpkg"]["error"], by["crashpkg"]


def test_a_failed_import_passes_only_where_every_module_that_failed_is_one_the_lock_says_is_guarded() -> None:
    """verify's reading of a row with the lock's facts (natives.guarded_off): the failing modules all guarded, the
    same release as the lock's, fewer failures than the runner lists: the import passes with the lock's words; any
    other row is explained as a failure."""
    from tritonlock.models import NativeFacts
    from tritonlock.verify.natives import ImportRow, LockFacts, guarded_off, import_checks

    facts = NativeFacts(sha256="a" * 64, filename="g-1.0.whl", guarded=("g/_C.abi3.so", "g/_C_cut.cpython-312.so"))
    lock = LockFacts(brings={}, facts={"g": ("1.0", facts)})
    err = "ImportError: libcudart.so.13: cannot open shared object file"

    def row(**kw: object) -> ImportRow:
        return ImportRow(**{"dist": "g", "version": "1.0", "ok": False, "native": True, "module": "g._C",
                            "error": err, **kw})  # type: ignore[arg-type]

    said = guarded_off(row(also=("g._C_cut",)), lock)
    assert said is not None and said.startswith("g 1.0: imported; its module g._C cannot load (ImportError: ") \
        and "(and 1 more such module(s))" in said, said
    ((_, ok, detail, fix),) = import_checks([row()], torch="2.4.1", lock=lock)
    assert ok and fix is None and "g loads it inside a `try`" in detail
    for bad in (row(version="1.1"), row(also=("g._other",)), row(module="g"), row(module=None),
                row(also=("g._C_cut",) * 5)):
        assert guarded_off(bad, lock) is None, bad
        if bad.module is not None:
            ((_, ok, _, _),) = import_checks([bad], torch="2.4.1", lock=lock)
            assert not ok, bad
    assert guarded_off(row(), None) is None
    assert guarded_off(row(), LockFacts(brings={}, facts={"g": ("1.0", NativeFacts(sha256="a" * 64,
                                                                                     filename="g-1.0.whl"))})) is None


def test_a_server_whose_runner_ended_before_asking_imports_nothing(venv: str, tmp_path: Path) -> None:
    """The runner died before tritonlock's word arrived: its server reads no request and ends, importing nothing."""
    log = tmp_path / "log.txt"
    for eager in (False, True):
        p = subprocess.run([venv, "-I", RUNNER, "--import-server", *(["--eager-torch"] if eager else [])], input="",
                           capture_output=True, text=True, timeout=60, env={**os.environ, "TL_TEST_LOG": str(log)})
        assert p.returncode == 0, p.stderr
        lines = [json.loads(x) for x in p.stdout.splitlines()]
        assert lines[0] == {"jobs": [], "left_out": 0} and list(lines[1]) == ["timing"] and len(lines) == 2, lines
    assert not log.exists() or all(x.startswith("torch imported") for x in log.read_text().splitlines())


def test_the_servers_times_are_said_in_words() -> None:
    sys.path.insert(0, RUNNER)
    try:
        from tlverify.imports import timing_words
    finally:
        sys.path.remove(RUNNER)
    said = timing_words({"asked": 0.31, "scan": 0.5, "torch": 1.72, "end": 3.1,
                         "jobs": [["numpy", 0.82, 1.0], ["torchvision", 1.73, 3.05]]})
    assert said == ("the server was asked at 0.31 s (scan 0.50 s), had torch at 1.72 s, ended at 3.10 s; jobs "
                    "torchvision 1.73-3.05, numpy 0.82-1.00")
    assert timing_words({}) == "the server was asked at - (scan -), had torch at -, ended at -"
