"""Property-based fuzzing of what users and files hand tritonlock: intents and locks, generated and mutated by
hypothesis. Every input gets either a valid result or one clean error with the documented exit code (README:
2 bad input, 3 conflict) — never a traceback. CI runs ~1,300 cases; `-m long` runs many more."""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tritonlock import export
from tritonlock.lock import lockfile
from tritonlock.cli import main
from tritonlock.errors import TritonlockError
from tritonlock.models import Gpu, HostProfile
from tritonlock.environment.sync import pick_target, target_fit

CI = settings(max_examples=int(os.environ.get("TRITONLOCK_FUZZ_EXAMPLES", "650")), deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
LONG = settings(CI, max_examples=20_000, derandomize=False)

# Values users (and attackers) write: near-misses of valid ones, non-ASCII digits, braces, bad URLs, names that
# look like options, huge and deep things.
TRICKY = [
    "", " ", "3.12", "3.11", "3.١٢", "3", "3.12.1", ">=3.10", "3.12\n", "2.6", "2.6.0", "==2.6.0", ">=2.6", "*",
    "latest", "==2.13.0+cpu", "2.٣", "auto", "none", "cpu", "cu126", "cu130", "cu999", "cu١٢٦", ">=12.4", "12.4",
    "12.x", "compatible", "strict", "{backend}", "{nope}", "{0}", "}", "{", "https://", "https://exa mple.com",
    "https://x.example/simple\n", "http://[::1/x", "https://u:tok@x.example/whl/{backend}",
    "https://x.example/whl/{backend}", "https://x.example:99999/simple", "default", "file:///tmp/wheels", "ftp://x",
    "A100", "RTX 4090", "H200", "Jetson Orin", "8.0", "9.0", "12.0", "7.5", "٨.٠", "\x00", "\x7f", "-rfoo",
    "--index-url=http://evil", "numpy>=1.26", "einops", "a @ http://[::1/a.whl", "torch", "triton>=3",
    "535.104.05", "٥٣٥.104.05", "470.82.01", "580.65.06", "999.99", "2.17", "2.31", "2.٣١", "2.x", "linux",
    "windows", "macos", "darwin", "x86_64", "aarch64", "arm64", "riscv", "host", "a\nb", "x" * 300, "é", "💥",
]
# [[package-builds]] values: good ones and near-misses (placeholders, schemes, variants, formats)
BUILD_VALUES = ["vllm", "my kernels", "VLLM", "-x", "https://w.example/{version}/{cuda}", "https://w.example/{cudaa}",
                "https://w.example/{0}", "https://w.example/{version!r}", "https://w.example/{torch}+{cuda}.html",
                "http://u:T0K/EN@w.example/{cuda}", "file:///tmp/builds/{cuda}", "ftp://w.example/{cuda}",
                "https://w.example/{", "cu128", "cu130", "cpu", "12.8", "cu1280", "simple", "flat", "zip"]
KEYS = ["python", "torch", "triton", "packages", "cuda", "cuda-policy", "name", "os", "arch", "glibc", "driver",
        "gpus", "default", "nope", "x" * 50, "é"]
# keys a hand makes: misspelt, in another table's place, another case (each answered "did you mean", or where it goes)
MISSPELT = ["torhc", "cuda_policy", "Gpus", "gpu", "packges", "driver", "index", "Torch", "é" * 40]


def _toml(value: Any) -> str:
    """A TOML literal (strings JSON-quoted: a JSON string is a TOML basic string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k, ensure_ascii=False)} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(type(value))


scalars = st.one_of(st.sampled_from(TRICKY), st.text(max_size=30), st.integers(-2**70, 2**70), st.booleans(),
                    st.floats(allow_nan=False, allow_infinity=False))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3), max_leaves=8)
deep = st.integers(1, 1500).map(lambda n: "[" * n + "]" * n)


@st.composite
def intents(draw: st.DrawFn) -> str:
    lines: list[str] = []
    if draw(st.booleans()):
        lines.append("[environment]")
        for key in draw(st.lists(st.sampled_from(KEYS[:6] + ["nope", "no-build", "optional-gpu-code",
                                                             "allow-unchecked-native", "imports"] + MISSPELT),
                                 max_size=7, unique=True)):
            value = draw(st.one_of(values, st.lists(st.sampled_from(TRICKY), max_size=3)))
            lines.append(f"{json.dumps(key)} = {_toml(value)}")
    if draw(st.booleans()):
        lines.append("[indexes]")
        for key in draw(st.lists(st.sampled_from(["torch", "default", "extra", "defualt"]), max_size=3, unique=True)):
            lines.append(f"{key} = {_toml(draw(values))}")
    for _ in range(draw(st.integers(0, 3))):
        lines.append("[[targets]]")
        for key in draw(st.lists(st.sampled_from(KEYS[6:12] + ["python", "cuda", "nope"] + MISSPELT), max_size=8,
                                 unique=True)):
            value = draw(st.one_of(values, st.lists(st.sampled_from(TRICKY), max_size=3)))
            lines.append(f"{json.dumps(key)} = {_toml(value)}")
    for _ in range(draw(st.integers(0, 2)) if draw(st.integers(0, 3)) == 0 else 0):  # a package's own builds
        lines.append("[[package-builds]]")
        if draw(st.booleans()):  # near a valid table: each key one of its good values or a near-miss
            table = {"name": draw(st.sampled_from(BUILD_VALUES[:4])),
                     "index": draw(st.sampled_from(BUILD_VALUES[4:13])),
                     "cuda": draw(st.sampled_from([["cu128"], ["cu128", "cu130"], [], ["12.8"], "cu128", ["cpu"]]))}
            if draw(st.booleans()):
                table["format"] = draw(st.sampled_from(["simple", "flat", "zip"]))
            lines += [f"{key} = {_toml(value)}" for key, value in table.items()]
            continue
        for key in draw(st.lists(st.sampled_from(["name", "index", "cuda", "format", "nope"]), max_size=5,
                                 unique=True)):
            value = draw(st.one_of(st.sampled_from(BUILD_VALUES), values, st.lists(st.sampled_from(BUILD_VALUES),
                                                                                     max_size=3)))
            lines.append(f"{json.dumps(key)} = {_toml(value)}")
    if draw(st.integers(0, 5)) == 0:  # target-files globs (relative to the fuzz directory)
        globs = st.sampled_from(["hosts/*.toml", "*.toml", "**/*", "**", ".", "..", "/etc/*", "a**", "[", "~",
                                 "hosts/../..", "*" * 70, "", " "])
        lines.insert(0, f"target-files = {_toml(draw(st.one_of(st.lists(globs, max_size=3), globs, values)))}")
    if draw(st.integers(0, 9)) == 0:  # something that is not TOML at all, or too deep to read
        at = draw(st.integers(0, len(lines)))
        lines.insert(at, draw(st.one_of(deep.map(lambda d: f"deep = {d}"), st.text(max_size=40))))
    return "\n".join(lines) + "\n"


_DIR = Path(tempfile.mkdtemp(prefix="tritonlock-fuzz-"))


def _check_resolve(text: str) -> None:
    (_DIR / "triton-env.toml").write_text(text, encoding="utf-8")
    r = CliRunner().invoke(main, ["resolve", "--dry-run", "--json", "-p", str(_DIR)])
    assert r.exception is None or isinstance(r.exception, SystemExit), (text, repr(r.exception))
    out = r.stdout
    err = r.stderr if r.stderr_bytes is not None else ""
    assert r.exit_code in (0, 2, 3), (text, r.exit_code, out, err)
    assert "Traceback" not in out + err
    if r.exit_code == 2:
        assert err.startswith("error: ") and out == "", (text, out, err)
        assert len(err) < 20_000, len(err)
    else:
        doc = json.loads(out)
        assert doc["targets"] and all(t["ok"] for t in doc["targets"]) == (r.exit_code == 0), (text, out)
        # an accepted [[package-builds]] table is one a build can be looked up with: a package name, an address
        # whose placeholders all fill in to an http(s):// or file:// URL without credentials, cuXYZ variants
        from tritonlock import _urls
        from tritonlock.intent.read import read_intent

        for b in read_intent(_DIR / "triton-env.toml").package_builds:
            url = b.index.format(version="1.0", cuda=b.cuda[0], torch="2.9.0")
            assert _urls.NAME.match(b.name) and _urls.problem(url) is None and not _urls.has_credentials(url), (text, b)
            assert all(re.fullmatch(r"cu[0-9]{3}|cpu", c) for c in b.cuda), (text, b)
        for t in doc["targets"]:
            if t["ok"]:
                assert re.fullmatch(r"3\.[0-9]+", t["python"]) and t["torch"] and t["backend"], (text, t)
                assert "@" not in (t["index"] or "").split("//", 1)[-1].split("/", 1)[0], t  # no credentials


@CI
@given(intents())
def test_fuzz_intents(text: str) -> None:
    _check_resolve(text)


@pytest.mark.long
@LONG
@given(intents())
def test_fuzz_intents_long(text: str) -> None:
    _check_resolve(text)


# ---------------------------------------------------------------- locks


def _bases() -> list[str]:
    import dataclasses

    from test_lockfile import sample

    one = sample()
    t = one.targets[0]
    cpu = dataclasses.replace(t, selection=dataclasses.replace(
        t.selection, backend="cpu", driver_floor=None, archs=(), ptx=(),
        target=dataclasses.replace(t.selection.target, name="laptop", driver=None, cuda=None, gpus=())))
    return [lockfile.dumps(one), lockfile.dumps(dataclasses.replace(one, targets=(t, cpu)))]


BASES = _bases()
HOSTS = [HostProfile(os="linux", arch="x86_64", python="3.12.3", glibc="2.39"),
         HostProfile(os="linux", arch="x86_64", python="3.12.3", glibc="2.35", driver="580.159.04", cuda_driver="13.0",
                     gpus=(Gpu(index=0, name="NVIDIA H200", cc="9.0"),))]


@st.composite
def locks(draw: st.DrawFn) -> str:
    lines = draw(st.sampled_from(BASES)).splitlines()
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["value", "delete", "duplicate", "insert", "swap", "digit"]))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "value" and " = " in lines[i]:
            key = lines[i].split(" = ", 1)[0]
            lines[i] = f"{key} = {_toml(draw(values))}" if draw(st.integers(0, 9)) else f"{key} = {draw(deep)}"
        elif op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "insert":
            lines.insert(i, f"{json.dumps(draw(st.sampled_from(KEYS)))} = {_toml(draw(values))}")
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "digit" and re.search(r"[0-9]", lines[i]):
            lines[i] = re.sub(r"[0-9]", lambda m: chr(0x0660 + int(m.group(0))), lines[i], count=1)
        if not lines:
            lines = [""]
    text = "\n".join(lines) + "\n"
    if draw(st.booleans()):
        text = _restamp(text)  # past the digests, so the value checks behind them are exercised too
    return text


def _restamp(text: str) -> str:
    from test_lockfile import _restamp as restamp

    try:
        return restamp(text)
    except Exception:  # noqa: BLE001 - a mutation the helper cannot re-stamp is still a fine hostile input
        return text


def _check_early_read(text: str) -> None:
    """What a resolve reads of the lock it replaces before anything else (issue 22's early read): whether reads are
    likely, and the closure it guesses from — a bool and a set of target names for any bytes, never an error; the
    wheels it would read are what the rule's own wheel choice gives for a lock that reads."""

    from tritonlock.native.read import Reader, reads_likely
    from tritonlock.project import native_wanted

    with tempfile.TemporaryDirectory(prefix="tl-fuzz-early-") as d:
        path = Path(d) / "triton-env.lock"
        path.write_text(text, encoding="utf-8")
        assert isinstance(reads_likely(path), bool)
        asked: list[object] = []
        try:
            hash_ = lockfile.loads(text, "fuzz.lock").intent_hash
        except TritonlockError:
            hash_ = ""
        reader = Reader()
        try:
            names = reader.prefetch_lock(path, lambda sel, pkgs: asked.append(native_wanted(sel, pkgs)) or [], hash_)
        finally:
            reader.close()
        assert isinstance(names, set) and len(asked) == len(names)


def _check_lock(text: str) -> None:
    _check_early_read(text)
    try:
        lock = lockfile.loads(text, "fuzz.lock")
    except TritonlockError as err:
        assert err.exit_code == 2 and str(err).startswith("fuzz.lock"), str(err)
        assert len(str(err)) < 5_000
        return
    for host in HOSTS:
        for t in lock.targets:
            target_fit(t, host)
        try:
            pick_target(lock, host)
        except TritonlockError:
            pass
    for t in lock.targets:
        for fmt in export.FORMATS:
            try:
                files = export.export(lock, t, fmt)
            except TritonlockError:
                continue
            for f in files:  # a target's name never picks where a file goes
                assert not f.path.startswith("/") and ".." not in f.path.split("/") and " " not in f.path, f.path
    _check_fleet_exports(lock)
    lockfile.loads(lockfile.dumps(lock), "fuzz.lock")  # what was read writes back readable


def _check_fleet_exports(lock: Any) -> None:
    """The Slurm script and the Kubernetes manifests of any lock that reads: YAML that reads back as written."""
    import yaml

    from tritonlock.fleet.k8s import K8sJob, manifests, to_yaml
    from tritonlock.fleet.slurm import SlurmJob, sbatch_script

    for t in lock.targets:
        sbatch_script(SlurmJob(project="/p", target=t.name))
    try:
        docs = manifests(lock, list(lock.targets), {"triton-env.lock": lockfile.dumps(lock)}, K8sJob(image="x"))
    except TritonlockError:
        return
    assert list(yaml.safe_load_all(to_yaml(docs))) == docs
    jobs = [d["metadata"]["name"] for d in docs if d["kind"] == "Job"]
    assert len(set(jobs)) == len(jobs), jobs


@CI
@given(locks())
def test_fuzz_locks(text: str) -> None:
    _check_lock(text)


@pytest.mark.long
@LONG
@given(locks())
def test_fuzz_locks_long(text: str) -> None:
    _check_lock(text)


def test_fuzz_reaches_both_sides() -> None:
    """The generators are worth their time: they produce valid inputs as well as broken ones."""
    from hypothesis import find

    find(intents(), lambda t: CliRunner().invoke(main, ["resolve", "--dry-run", "--json", "-p", str(_write(t))])
         .exit_code == 0, settings=settings(max_examples=500, deadline=None, database=None))
    find(locks(), lambda t: _loads_ok(t), settings=settings(max_examples=500, deadline=None, database=None))


def _write(text: str) -> Path:
    d = Path(tempfile.mkdtemp(prefix="tritonlock-fuzz-", dir=_DIR))
    (d / "triton-env.toml").write_text(text, encoding="utf-8")
    return d


def _loads_ok(text: str) -> bool:
    try:
        lockfile.loads(text)
    except TritonlockError:
        return False
    return True


# ---------------------------------------------------------------- verified-on records (triton-env.verified.toml)

RECORD_KEYS = ["target", "fingerprint", "packages-digest", "when", "host", "ok", "mode", "os", "arch", "glibc",
               "python", "driver", "cuda", "gpus", "torch", "triton", "tritonlock", "failures", "kernels"]


@st.composite
def records(draw: st.DrawFn) -> str:
    lines = [f"records-version = {_toml(draw(st.sampled_from(['1.0', '1.9', '2.0', 'x', 1])))}"]
    for _ in range(draw(st.integers(0, 3))):
        lines.append("[[verified]]")
        for key in draw(st.lists(st.sampled_from(RECORD_KEYS + ["nope"]), max_size=12, unique=True)):
            lines.append(f"{json.dumps(key)} = {_toml(draw(values))}")
    return "\n".join(lines) + "\n"


@settings(CI, max_examples=300)
@given(records())
def test_fuzz_records(text: str) -> None:
    from tritonlock.records import loads

    try:
        loads(text, "fuzz.verified.toml")
    except TritonlockError as err:
        assert err.exit_code == 2 and str(err).startswith("fuzz.verified.toml"), str(err)


# the all-reduce's keys of a kernel row (records 1.4): each value a near-miss of a valid one
_AR_VALUES: dict[str, list[Any]] = {
    "band": [[250.0, 450.0], [450, 250], [1], [1, 2, 3], ["a", "b"], [float("inf"), 1.0], [], "250-450", [True, 2]],
    "inferred": [True, False, "yes", 1, None],
    "link": ["nvlink", "pcie", "none", "NVLink", "infiniband", "", 2, "nvlink\n"],
    "message_bytes": [268435456, 0, -1, 1.5, "256 MiB", True, 2**70],
    "causes": [["cuda:1: busy"], [], "cuda:1: busy", [1], ["a\nb"], ["x" * 501], ["c"] * 17, [["nested"]]],
}


@st.composite
def allreduce_rows(draw: st.DrawFn) -> tuple[str, list[str]]:
    row: dict[str, Any] = {"kernel": "nccl_all_reduce", "dtype": "fp32", "device": "cuda:0..1", "ok": True,
                           "metric": "GB/s", "value": 121.0, "speed": "slow"}
    keys = draw(st.lists(st.sampled_from(sorted(_AR_VALUES)), min_size=1, unique=True))
    for key in keys:
        v = draw(st.sampled_from(_AR_VALUES[key]))
        if v is not None:
            row[key] = v
    text = ('records-version = "1.4"\n[[verified]]\ntarget = "t"\nfingerprint = "f"\npackages-digest = "d"\n'
            'when = "2026-11-30T10:00:00Z"\nhost = "h"\nok = true\nmode = "gpu"\nos = "linux"\narch = "x86_64"\n'
            f"kernels = [{_toml(row)}]\n")
    return text, keys


@settings(CI, max_examples=300)
@given(allreduce_rows())
def test_fuzz_a_records_allreduce_fields(case: tuple[str, list[str]]) -> None:
    """A broken band, link, message size or cause list is one clean error naming the row's key; a good one reads
    back as written."""
    from tritonlock.records import dumps, loads

    text, keys = case
    try:
        (rec,) = loads(text, "fuzz.verified.toml")
    except TritonlockError as err:
        assert err.exit_code == 2 and str(err).startswith("fuzz.verified.toml: verified[0].kernels[0]."), str(err)
        assert str(err).split(".kernels[0].")[1].split(":")[0] in keys, str(err)
        return
    assert loads(dumps([rec]))[0] == rec


_BAND_VALUES: dict[str, list[Any]] = {
    "gpus": [2, 1, 0, -2, 2.0, "2", True, 8],
    "link": ["nvlink", "pcie", "none", "NVLINK", "", 2],
    "message_bytes": [268435456, 0, -1, 1.5, "256", True],
    "inferred": [True, False, "true", 1],
    "value": [[250, 450], [450, 250], [1], "x", [float("nan"), 2]],
}


@st.composite
def allreduce_bands(draw: st.DrawFn) -> tuple[str, list[str]]:
    keys = draw(st.lists(st.sampled_from(sorted(_BAND_VALUES)), unique=True))
    lines = ['[[gpu]]', 'family = "H200"', 'pattern = "NVIDIA H200"', 'cc = "9.0"', 'source = "x"', "",
             "[[band]]", 'family = "H200"', 'kernel = "nccl_all_reduce"', 'dtype = "fp32"', 'metric = "GB/s"',
             'source = "x"']
    lines += [f"{key} = {_toml(draw(st.sampled_from(_BAND_VALUES[key])))}" for key in keys]
    return "\n".join(lines) + "\n", keys


@settings(CI, max_examples=300)
@given(allreduce_bands())
def test_fuzz_the_allreduce_keys_of_a_bands_file(case: tuple[str, list[str]]) -> None:
    """compat/bands.toml's all-reduce keys (gpus, link, message_bytes, inferred) with any value: it loads, or one
    clean MatrixError that names the file and the band (and its key where one key is wrong)."""
    from tritonlock.errors import MatrixError
    from tritonlock.verify.speed import load_bands

    text, keys = case
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "bands.toml").write_text(text)
        try:
            bands = load_bands(Path(d))
        except MatrixError as err:
            assert str(err).startswith(f"{Path(d) / 'bands.toml'}: band[0]"), str(err)
            named = str(err).split("band[0]")[1]
            assert named.startswith(":") or named[1:].split(":")[0] in keys, str(err)
            return
    assert bands is not None
    (band,) = bands.bands
    assert band.gpus is None or (band.gpus >= 2 and band.link in ("nvlink", "pcie") and band.message_bytes)


# ---------------------------------------------------------------- what nodes leave for `report merge`

NODE_KEYS = ["ok", "failures", "checks", "record", "mode", "kernels", "torch"]


@st.composite
def node_reports(draw: st.DrawFn) -> dict[str, str]:
    files: dict[str, str] = {}
    for i in range(draw(st.integers(1, 3))):
        doc: dict[str, Any] = {}
        for key in draw(st.lists(st.sampled_from(NODE_KEYS), max_size=5, unique=True)):
            if key == "record" and draw(st.booleans()):
                doc[key] = {k.replace("-", "_"): draw(values) for k in
                            draw(st.lists(st.sampled_from(RECORD_KEYS), max_size=12, unique=True))}
            else:
                doc[key] = draw(values)
        files[f"n{i}.json"] = json.dumps(doc) if draw(st.integers(0, 9)) else draw(st.text(max_size=30))
        for kind in draw(st.lists(st.sampled_from(["sync.rc", "verify.rc", "started", "sync.log"]), max_size=3,
                                  unique=True)):
            files[f"n{i}.{kind}"] = draw(st.sampled_from(["0", "5", "124", "²", "٣", "-1", "", "x", "error: boom\n"]))
    return files


@settings(CI, max_examples=200)
@given(node_reports())
def test_fuzz_report_merge(files: dict[str, str]) -> None:
    runs = Path(tempfile.mkdtemp(prefix="runs-", dir=_DIR))
    for name, text in files.items():
        (runs / name).write_text(text, encoding="utf-8", errors="surrogateescape")
    r = CliRunner().invoke(main, ["report", "merge", str(runs), "--json", "-p", str(_DIR)])
    assert r.exception is None or isinstance(r.exception, SystemExit), (files, repr(r.exception))
    assert r.exit_code in (0, 1, 2), (files, r.output)
    if r.exit_code in (0, 1):
        doc = json.loads(r.stdout)
        assert (r.exit_code == 0) == (doc["passed"] == doc["total"] > 0), (files, doc)
        for node in doc["nodes"]:
            assert all(v is None or not isinstance(v, str) or v.isprintable() for v in node.values()), node


# ---------------------------------------------------------------- AMD and Intel targets: resolve and why

AMD_GPUS = ["gfx942", "gfx90a", "gfx1100", "gfx1103", "gfx942:sramecc+:xnack-", "gfx9999", "MI300X", "MI250X",
            "RX 7900 XTX", "Radeon 780M", "gfx1201"]
INTEL_GPUS = ["Arc B580", "Data Center GPU Max 1550", "bmg", "pvc", "lnl-m", "Arc A770", "mtl-h"]
ODD_GPUS = ["8.0", "9.0", "H200", "", "gfx", "gfx1100 ", "٩.٠"]
VENDOR_VALUES = {"amdgpu": ["6.4", "6.8.5", "30.10", "6.2.4", "1.0", "x", ""], "hsa-override": ["11.0.0", "10.3.0",
                 "9.4.2", "99.0.0", "x"], "os": ["linux", "linux", "windows", "macos"], "arch": ["x86_64", "aarch64"],
                 "glibc": ["2.35", "2.28", "2.17"], "python": ["3.12", "3.11", "3.10", "3.13"],
                 "driver": ["535.104.05", "none"]}


@st.composite
def vendor_intents(draw: st.DrawFn) -> str:
    """Mostly valid AMD and Intel targets (so that `why` has lines to search), with a wrong value now and then."""
    lines = ["[environment]"]
    for key, pool in (("python", ["3.12", "3.11", "3.10", "3.9"]), ("torch", ["*", ">=2.6", "==2.9.0", "==2.10.0",
                                                                              "2.6", ">=99"]),
                      ("triton", ["auto", "none", ">=3.3"]), ("cuda", ["auto", "cpu"])):
        if draw(st.booleans()):
            lines.append(f"{key} = {_toml(draw(st.sampled_from(pool)))}")
    for i in range(draw(st.integers(1, 3))):
        lines += ["[[targets]]", f'name = "t{i}"']
        pool = draw(st.sampled_from([AMD_GPUS, INTEL_GPUS, AMD_GPUS + ODD_GPUS]))
        gpus = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
        lines.append(f"gpus = {_toml(gpus if draw(st.integers(0, 19)) else draw(values))}")
        if pool is not INTEL_GPUS and draw(st.integers(0, 4)):
            lines.append(f"amdgpu = {_toml(draw(st.sampled_from(VENDOR_VALUES['amdgpu'])))}")
        for key in draw(st.lists(st.sampled_from(["hsa-override", "os", "arch", "glibc", "python", "driver"]),
                                 max_size=3, unique=True)):
            value = draw(st.sampled_from(VENDOR_VALUES[key])) if draw(st.integers(0, 9)) else draw(values)
            lines.append(f"{json.dumps(key)} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def _check_vendor(text: str) -> None:
    d = _write(text)
    for args, codes in ((["resolve", "--dry-run", "--json"], (0, 2, 3)), (["why"], (0, 2)), (["why", "--json"], (0, 2)),
                        (["why", "--sources", "--torch", "2.9"], (0, 2))):
        r = CliRunner().invoke(main, [*args, "-p", str(d)])
        assert r.exception is None or isinstance(r.exception, SystemExit), (text, args, repr(r.exception))
        assert r.exit_code in codes, (text, args, r.exit_code, r.output)


@settings(CI, max_examples=int(os.environ.get("TRITONLOCK_FUZZ_EXAMPLES", "650")) // 4)
@given(vendor_intents())
def test_fuzz_vendor_targets_resolve_and_why(text: str) -> None:
    _check_vendor(text)


@pytest.mark.long
@settings(LONG, max_examples=3000)
@given(vendor_intents())
def test_fuzz_vendor_targets_long(text: str) -> None:
    _check_vendor(text)


# ---------------------------------------------------------------- pyproject.toml intents, init --pyproject, uv export

REQS = ["torch", "torch>=2.6", "torch[,]", "torch[a,,b]", "torch[cuda]", "torch; sys_platform == 'linux'",
        "torch @ https://x.example/t.whl", "triton>=3", "numpy>=1.26", "einops", "x[,]", "x[ ]", "mymodel[train]",
        "vllm>=0.30", "name @ https://u:p@x.example/a.whl", "-e .", "", "torch==2.6.0+cu124", "torch>=2.6,<2.8",
        "Torch >= 2.6", "torch===2.6"]
UV_INDEX = ['index = [{name = "mine", url = "https://m.example/simple"}]',
            'index = [{name = "mine", url = "https://m.example/simple", default = true}]',
            'index = []', 'index = "https://m.example/simple"', 'index = [1, "x"]',
            'index = [{name = "tritonlock-cu124", url = "https://old.example/whl/cu124", explicit = true}]',
            'index = [{url = "https://nameless.example/simple"}]', 'index = [{name = 3}]']
UV_OTHER = ['sources = {numpy = {index = "mine"}}', 'sources = {torch = [{index = "x", extra = "a"}]}', 'sources = 1',
            'constraint-dependencies = ["numpy<3"]', 'constraint-dependencies = "numpy"',
            'conflicts = [[{extra = "a"}, {extra = "b"}]]', 'conflicts = ["x", [1]]', 'conflicts = 1',
            'dev-dependencies = ["pytest"]', 'package = false', 'environments = ["sys_platform == \'darwin\'"]',
            'environments = "linux"', 'environments = [1, "sys_platform == \'linux\'"]', 'environments = []']


@st.composite
def pyprojects(draw: st.DrawFn) -> str:
    out: list[str] = []
    shape = draw(st.sampled_from(["table", "table", "inline", "none", "odd"]))
    deps = draw(st.one_of(st.lists(st.sampled_from(REQS), max_size=4), st.sampled_from(REQS),
                          st.sampled_from([1, True, 2.5, {"torch": ">=2"}, [1, "torch"], [["torch"]]]), values))
    opt = draw(st.one_of(st.none(), st.dictionaries(st.sampled_from(["train", "gpu", "x y"]),
                                                    st.one_of(st.lists(st.sampled_from(REQS), max_size=2), values),
                                                    max_size=2), values))
    if shape == "table":
        out += ["[project]", 'name = "mymodel"', f"dependencies = {_toml(deps)}"]
        if draw(st.booleans()):
            out.append(f"dynamic = {_toml(draw(st.sampled_from([['dependencies'], ['version'], 'x', []])))}")
        if isinstance(opt, dict):
            out.append("[project.optional-dependencies]")
            out += [f"{json.dumps(k)} = {_toml(v)}" for k, v in opt.items()]
        elif opt is not None:
            out.append(f"optional-dependencies = {_toml(opt)}")
    elif shape == "inline":
        out.append(f'project = {{ name = "mymodel", dependencies = {_toml(deps)} }}')
    elif shape == "odd":
        out.append(f"project = {_toml(draw(values))}")
    if draw(st.booleans()):
        out.append("[tool.tritonlock]")
        if draw(st.booleans()):
            out.append(f"extras = {_toml(draw(st.one_of(st.lists(st.sampled_from(['train', 'gpu', 'nope']), max_size=2), values)))}")
        out.append("[tool.tritonlock.environment]")
        for key in draw(st.lists(st.sampled_from(KEYS[:6]), max_size=4, unique=True)):
            out.append(f"{json.dumps(key)} = {_toml(draw(st.one_of(values, st.sampled_from(TRICKY))))}")
    uv_shape = draw(st.sampled_from(["none", "table", "aot", "inline", "dotted"]))
    body = draw(st.lists(st.sampled_from(UV_OTHER), max_size=3, unique=True))
    index = draw(st.sampled_from(UV_INDEX))
    if uv_shape == "table":
        out += ["[tool.uv]", index, *body]
    elif uv_shape == "aot":
        out += ["[[tool.uv.index]]", 'name = "mine"', 'url = "https://m.example/simple"', "[tool.uv]", *body]
    elif uv_shape == "inline":
        out += ["[tool]", f"uv = {{ {index}{', ' if body else ''}{', '.join(body)} }}"]
    elif uv_shape == "dotted":
        out += ["[tool]", f"uv.{index}", *(f"uv.{b}" for b in body)]
    return "\n".join(out) + "\n"


def _uv_locks() -> list[Any]:
    import dataclasses

    from test_lockfile import sample

    one = sample()
    t = one.targets[0]
    cpu_torch = tuple(dataclasses.replace(p, version="2.11.0+cpu", index="https://mirror.example/whl/cpu")
                      if p.name == "torch" else p for p in t.packages)
    cpu = dataclasses.replace(t, packages=cpu_torch, selection=dataclasses.replace(
        t.selection, backend="cpu", index="https://mirror.example/whl/cpu", driver_floor=None, archs=(), ptx=(),
        target=dataclasses.replace(t.selection.target, name="laptop", driver=None, cuda=None, gpus=())))
    return [one, dataclasses.replace(one, targets=(t, cpu))]


UV_LOCKS = _uv_locks()


def _check_pyproject(text: str) -> None:
    d = Path(tempfile.mkdtemp(prefix="pyproject-", dir=_DIR))
    (d / "pyproject.toml").write_text(text, encoding="utf-8")
    for args, codes in ((["resolve", "--dry-run", "--json"], (0, 2, 3)), (["why"], (0, 2))):
        r = CliRunner().invoke(main, [*args, "-p", str(d)])
        assert r.exception is None or isinstance(r.exception, SystemExit), (text, args, repr(r.exception))
        assert r.exit_code in codes, (text, args, r.exit_code, r.output)
    bare = d / "bare"
    bare.mkdir()
    (bare / "pyproject.toml").write_text(text.split("[tool.tritonlock]")[0], encoding="utf-8")
    r = CliRunner().invoke(main, ["init", "--pyproject", "--no-index-check", "-p", str(bare)])
    assert r.exception is None or isinstance(r.exception, SystemExit), (text, "init", repr(r.exception))
    assert r.exit_code in (0, 2), (text, r.output)
    from tritonlock.export.uv import PREFIX, render

    for lock in UV_LOCKS:
        try:
            out, p = render(lock, text)
        except TritonlockError as err:
            assert err.exit_code == 2 and "nothing was written" in str(err) or "fix it first" in str(err), str(err)
            continue
        data = tomllib.loads(out)
        ours = {e["name"]: e["url"] for e in data["tool"]["uv"]["index"] if str(e.get("name", "")).startswith(PREFIX)}
        assert set(ours) >= {n for n, _ in p.indexes}, (text, out)
        again, _ = render(lock, out)  # a re-export changes nothing
        assert again == out, (text, out, again)


@settings(CI, max_examples=int(os.environ.get("TRITONLOCK_FUZZ_EXAMPLES", "650")) // 3)
@given(pyprojects())
def test_fuzz_pyproject_intents_init_and_uv_export(text: str) -> None:
    _check_pyproject(text)


@pytest.mark.long
@settings(LONG, max_examples=5000)
@given(pyprojects())
def test_fuzz_pyproject_long(text: str) -> None:
    _check_pyproject(text)


# ---------------------------------------------------------------- shared objects read as they stream

@pytest.fixture(scope="module")
def small_elf(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    from nativebuild import extension, stub_library

    d = tmp_path_factory.mktemp("fuzz-elf")
    cudart = stub_library(d / "rt", "libcudart.so.12", ("cudaRuntimeGetVersion",))
    return extension(d / "x", "x._C", links={cudart: ("cudaRuntimeGetVersion",)}, fatbin=((2, 80), (1, 90), (2, 90)))


def _stream_says(data: bytes, step: int) -> object:
    from tritonlock.native.elf import member_facts
    from tritonlock.native.stream import ElfStream, Miss

    s = ElfStream(len(data))
    for i in range(0, len(data), step):
        s.feed(data[i:i + step])
    s.finish()
    try:
        return member_facts("x/_C.so", s.read, len(data), gpu=True, nv_fatbin=s.scan.targets)
    except Miss:
        return Miss


@CI
@given(flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=12),
       cut=st.integers(min_value=0, max_value=100), step=st.sampled_from([1, 3, 64, 4096, 1 << 20]))
def test_fuzz_a_damaged_library_streamed_says_what_the_whole_file_says_or_misses(
        small_elf: bytes, flips: list[tuple[int, int]], cut: int, step: int) -> None:
    """Bytes flipped anywhere, the file cut short: the one-pass read gives the whole file's facts, or says Miss (the
    wheel's read then takes the member whole) — never other facts, never another exception."""
    from tritonlock.native.elf import member_facts

    data = bytearray(small_elf)
    for at, value in flips:
        data[at % len(data)] = value
    data = data[:max(1, len(data) * (100 - cut) // 100)] if cut > 90 else data
    whole = member_facts("x/_C.so", lambda o, n: bytes(data[o:o + n]), len(data), gpu=True)
    got = _stream_says(bytes(data), step)
    assert got is not None
    if got.__class__ is not type:
        assert got == whole


@CI
@given(flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), min_size=1,
                      max_size=8), step=st.sampled_from([1, 7, 4096, 1 << 20]))
def test_fuzz_a_damaged_wheel_reads_as_facts_or_one_clean_error(small_elf: bytes, flips: list[tuple[int, int]],
                                                                 step: int) -> None:
    """A wheel's bytes damaged after its zip directory was read (a mirror serving other bytes, a cut download): the
    read gives facts or raises ZipBroken naming the member (its CRC-32, its size, its deflate stream, its local
    header) — which the reader turns into a failed read — never another exception."""
    import io
    import zipfile

    from tritonlock.native import members
    from tritonlock.native.remotezip import ZipBroken

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("x/_C.so", small_elf)
        z.writestr("x/_D.so", small_elf, compress_type=zipfile.ZIP_STORED)
        z.writestr("x-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: x\nVersion: 1.0\n")
    good = buf.getvalue()
    with zipfile.ZipFile(io.BytesIO(good)) as z:
        wanted = members.wanted_members({i.filename: (i.compress_type, i.compress_size, i.file_size,
                                                      i.header_offset) for i in z.infolist()})
    end = max(w.offset + 30 + len(w.name) + w.csize for w in wanted)
    data = bytearray(good[:end])
    for at, value in flips:
        data[at % len(data)] = value
    try:
        members.read_span((bytes(data[i:i + step]) for i in range(0, len(data), step)), 0, wanted, True)
    except ZipBroken:  # (the inflater's own errors too, said as the member's damaged data)
        pass


@CI
@given(layout=st.sampled_from([(w, le, g) for w in (True, False) for le in (True, False)
                               for g in (False, True, "unhashed")]),
       flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), min_size=1,
                      max_size=10), cut=st.integers(min_value=0, max_value=100))
def test_fuzz_a_damaged_dynamic_segment_of_any_class_and_byte_order(layout: tuple[bool, bool, Any],
                                                                     flips: list[tuple[int, int]], cut: int) -> None:
    """tritonlock/native/elfdyn.py on 32- and 64-bit, little- and big-endian files (SysV, GNU and unhashed GNU
    tables) with bytes flipped and the file cut short: facts, or "not an ELF file it can read" — never an
    exception, never a read past the file."""
    from test_elfdyn import synthetic
    from tritonlock.native.elf import elf_links, member_facts

    data = bytearray(synthetic(*layout))
    for at, value in flips:
        data[at % len(data)] = value
    data = data[:max(1, len(data) * cut // 100)] if cut < 30 else data
    asked: list[tuple[int, int]] = []

    def read(o: int, n: int) -> bytes:
        asked.append((o, n))
        return bytes(data[o:o + n])

    needed, _, abi, problem = elf_links(read, len(data), "_C.so")
    assert problem is None or problem.startswith("not an ELF file it can read")
    assert all(0 <= o and o + n <= len(data) for o, n in asked if n)
    m = member_facts("x/_C.so", read, len(data), gpu=True)
    assert m.gpu == (problem or m.gpu) and abi in ("", "stable", "cxx")


@settings(CI, max_examples=min(CI.max_examples, 200))
@given(record=st.one_of(st.just(None), st.text(max_size=300)),
       flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=8),
       pointer=st.binary(max_size=80))
def test_fuzz_a_wheel_unpacked_in_uvs_cache_reads_as_the_wheels_facts_or_none(
        small_elf: bytes, record: str | None, flips: list[tuple[int, int]], pointer: bytes) -> None:
    """What uv left in its cache, damaged: a RECORD of any text, a library's bytes flipped (its size kept), a pointer
    of any bytes. The read gives facts or None (the index is read then), never an exception; with the RECORD and the
    library intact, the facts are the wheel's own, as read from its zip."""
    import base64
    import hashlib
    import zipfile

    from tritonlock.native import read as native, uvcache

    ident = uvcache._archive_id(pointer)
    assert ident is None or re.fullmatch(r"[A-Za-z0-9_-]+", ident)
    data = bytearray(small_elf)
    for at, value in flips:
        data[at % len(data)] = value
    digest = base64.urlsafe_b64encode(hashlib.sha256(small_elf).digest()).rstrip(b"=").decode()
    good = (f"x/_C.so,sha256={digest},{len(small_elf)}\nx-1.0.dist-info/METADATA,,\nx-1.0.dist-info/RECORD,,\n")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "archive-v0" / "abc"
        (folder / "x").mkdir(parents=True)
        (folder / "x-1.0.dist-info").mkdir()
        (folder / "x" / "_C.so").write_bytes(bytes(data))
        (folder / "x-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: x\nVersion: 1.0\n")
        (folder / "x-1.0.dist-info" / "RECORD").write_text(good if record is None else record, encoding="utf-8")
        got = uvcache.read(folder, "0" * 64, "x-1.0-cp311-cp311-linux_x86_64.whl")
        assert got is None or isinstance(got, native.NativeFacts)
        if record is None and bytes(data) == small_elf:
            whl = Path(tmp) / "x-1.0-cp311-cp311-linux_x86_64.whl"
            with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("x/_C.so", small_elf)
                z.writestr("x-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: x\nVersion: 1.0\n")
                z.writestr("x-1.0.dist-info/RECORD", good)
            assert got is not None
            zipped = native.read_file(whl, "0" * 64)
            assert (got.members, got.provides, got.built_for_torch) == (zipped.members, zipped.provides,
                                                                      zipped.built_for_torch)


# ---------------------------------------------------------------- `add` / `remove`: the intent edited in place

@st.composite
def edits(draw: st.DrawFn) -> tuple[str, str, list[str], list[str]]:
    """An intent file (triton-env.toml or pyproject.toml, valid or not), and what `add` and `remove` are handed."""
    kind = draw(st.sampled_from(["triton-env.toml", "pyproject.toml"]))
    text = draw(intents()) if kind == "triton-env.toml" else draw(pyprojects())
    if draw(st.integers(0, 4)) == 0:  # the layouts users write: comments, CRLF, a BOM, dotted and inline tables
        text = draw(st.sampled_from([
            '# mine\n[environment]\npackages = [\n  "einops",  # x\n]\n', '\ufeff[environment]\r\npackages = []\r\n',
            'environment.packages = ["a"]\n', 'environment = { packages = ["a"] }\n', '[indexes]\ndefault = "x"\n',
            '[project]\nname = "m"\ndependencies = ["a"]\n[tool.tritonlock]\n',
            '[project]\nname = "m"\n[tool.tritonlock.environment]\npackages = ["b"]\n',
            '[tool.tritonlock]\n', '[project]\nname = "m"\ndependencies = "a"\n[tool.tritonlock]\n']))
    reqs = st.one_of(st.sampled_from(REQS + TRICKY), st.text(max_size=40))
    return kind, text, draw(st.lists(reqs, max_size=3)), draw(st.lists(reqs, max_size=3))


@settings(CI, max_examples=int(os.environ.get("TRITONLOCK_FUZZ_EXAMPLES", "650")) // 2)
@given(edits())
def test_fuzz_add_and_remove_edit_the_intent_or_refuse_cleanly(case: tuple[str, str, list[str], list[str]]) -> None:
    """Any intent, any requirement: a valid intent with the change (read back as one), or one clean error (exit 2) —
    and the file on disk untouched either way (the edit only computes the new bytes)."""
    from tritonlock.intent.edit import add, remove
    from tritonlock.intent.read import parse_intent

    kind, text, added, removed = case
    d = Path(tempfile.mkdtemp(prefix="edit-", dir=_DIR))
    path = d / kind
    path.write_bytes(text.encode("utf-8"))
    for verb, args in ((add, added), (remove, removed)):
        try:
            edit = verb(path, args)
        except TritonlockError as err:
            assert err.exit_code == 2 and "Traceback" not in str(err) and len(str(err)) < 20_000, (text, args, err)
            assert str(err).isprintable() or all(line.isprintable() for line in str(err).split("\n")), str(err)
        else:
            assert edit.before == text.encode("utf-8") and edit.after.startswith(b"\xef\xbb\xbf") == text.startswith(
                "\ufeff"), (text, args)
            parse_intent(edit.after.decode("utf-8-sig").replace("\r\n", "\n"), str(path))
            if edit.changed:
                assert edit.said, (text, args)
        assert path.read_bytes() == text.encode("utf-8")


# ---------------------------------------------------------------- the lock's graph and the verify record

@settings(CI, max_examples=300)
@given(locks())
def test_fuzz_tree_draws_any_lock_that_reads(text: str) -> None:
    from tritonlock.lock import tree

    try:
        lock = lockfile.loads(text, "fuzz.lock")
    except TritonlockError:
        return
    targets = list(lock.targets)
    for invert in (False, True):
        out = tree.text(targets, invert=invert, depth=3)
        assert isinstance(out, str)
    names = tuple(sorted({p.name for t in targets for p in t.packages}))[:2]
    tree.text(targets, packages=names, invert=True)
    json.dumps(tree.as_json(lock, targets))


@settings(CI, max_examples=300)
@given(doc=st.one_of(values, st.dictionaries(st.sampled_from(["format", "key", "when", "target", "x"]), values,
                                             max_size=5), st.text(max_size=200)))
def test_fuzz_a_verify_record_of_any_shape_is_ignored_or_read(doc: object) -> None:
    """A .tritonlock-verified.json edited by hand, or by another tool: never trusted, never a traceback."""
    from tritonlock.environment import _noop

    d = Path(tempfile.mkdtemp(prefix="verified-", dir=_DIR))
    (d / _noop.VERIFIED).write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    stamp = {"_inputs": "k", "target": "host", "packages": 1, "dists": {}, "base": [], "cfg": "", "files-digest": "x",
             "dir-lists": ""}
    assert _noop.verified_line(d, stamp) is None


# --- the wheel reader against hostile zips and hostile servers (tests/test_native_reads.py has the named cases) -----

def _small_wheel(small_elf: bytes) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("x/_C.so", small_elf)
        z.writestr("x/_D.so", small_elf, compress_type=zipfile.ZIP_STORED)
        z.writestr("x/pure.py", "x = 1\n")
        z.writestr("x-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: x\nVersion: 1.0\n")
    return buf.getvalue()


@CI
@given(flips=st.lists(st.tuples(st.integers(min_value=0, max_value=400), st.integers(min_value=0, max_value=255)),
                      min_size=1, max_size=8), cut=st.integers(min_value=0, max_value=40))
def test_fuzz_a_zip_directory_damaged_anywhere_is_read_or_refused(small_elf: bytes, flips: list[tuple[int, int]],
                                                                  cut: int) -> None:
    """A wheel's central directory and end record with bytes flipped and the file's end cut: remotezip.directory
    gives entries that lie inside the file before the directory and do not overlap — or ZipBroken; never another
    exception, never a read outside the file. And the whole read (read_file) gives facts or a ReadFailed."""
    from tritonlock.native import read as native
    from tritonlock.native.remotezip import ReadFailed, ZipBroken, directory

    good = _small_wheel(small_elf)
    data = bytearray(good)
    for at, value in flips:
        data[len(data) - 1 - at % min(len(data), 400)] = value
    data = data[:len(data) - cut]
    asked: list[tuple[int, int]] = []

    def get(a: int, b: int) -> bytes:
        asked.append((a, b))
        assert 0 <= a <= b < len(data), (a, b)
        return bytes(data[a:b + 1])

    try:
        entries, crcs = directory(get, len(data))
    except ZipBroken:
        entries = None
    if entries is not None:
        spans = sorted((off, off + 30 + c) for _, c, _, off in entries.values())  # (at least: its header, its data)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
        assert set(crcs) == set(entries)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
        p.write_bytes(bytes(data))
        try:
            facts = native.read_file(p, "0" * 64)
        except ReadFailed:
            return
        assert facts.problem is None


_MOVES = st.sampled_from(["right", "whole", "500", "404", "another range", "no content-range", "longer", "shorter",
                          "wrong total", "gzip", "garbage", "the right header over other bytes"])


@settings(CI, max_examples=min(CI.max_examples, 60))
@given(moves=st.lists(_MOVES, min_size=1, max_size=12), range_ok=st.booleans())
def test_fuzz_a_hostile_server_gives_the_wheels_facts_or_a_failed_read(small_elf: bytes, moves: list[str],
                                                                      range_ok: bool) -> None:
    """A real local HTTP server answering each request by the next of `moves` (then rightly, or with 500 when not
    `range_ok` — an index that never answers well): read_remote gives the wheel's own facts (as read from disk), or
    raises ReadFailed — never other facts, never "no native code" from a read that failed."""
    import hashlib
    import http.server
    import re as _re
    import threading

    from tritonlock.lock.index import session
    from tritonlock.native import read as native
    from tritonlock.native.remotezip import Deadline, ReadFailed, watched

    data = _small_wheel(small_elf)
    todo = list(moves)

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                try:
                    self.wfile.write(body)
                except OSError:
                    pass

        def do_HEAD(self) -> None:  # noqa: N802
            self.do_GET()

        def do_GET(self) -> None:  # noqa: N802
            m = _re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
            a, b = (int(m[1]), min(int(m[2]), len(data) - 1)) if m else (0, len(data) - 1)
            move = todo.pop(0) if todo else ("right" if range_ok else "500")
            part, n = data[a:b + 1], b - a + 1
            cr = {"Content-Range": f"bytes {a}-{b}/{len(data)}", "Content-Length": str(n)}
            if move == "right" and m:
                return self._answer(206, part, cr)
            if move in ("right", "whole") or not m and move not in ("500", "404", "garbage", "shorter"):
                return self._answer(200, data, {"Content-Length": str(len(data))})
            if move in ("500", "404"):
                return self._answer(int(move), b"no", {"Content-Length": "2"})
            if move == "another range":
                return self._answer(206, data[:n], {"Content-Range": f"bytes 0-{n - 1}/{len(data)}",
                                                    "Content-Length": str(n)})
            if move == "no content-range":
                return self._answer(206, part, {"Content-Length": str(n)})
            if move == "longer":
                return self._answer(206, part + b"xyz", {**cr, "Content-Length": str(n + 3)})
            if move == "shorter":
                return self._answer(206 if m else 200, part[:n // 2], cr)
            if move == "wrong total":
                return self._answer(206, part, {**cr, "Content-Range": f"bytes {a}-{b}/{len(data) + 1}"})
            if move == "gzip":
                return self._answer(206, part, {**cr, "Content-Encoding": "gzip"})
            if move == "garbage":
                return self._answer(206 if m else 200, bytes(n), cr)
            return self._answer(206, data[:n], cr)  # the right header over other bytes

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            p = Path(tmp) / "x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
            p.write_bytes(data)
            truth = native.read_file(p, "0" * 64)
        url = f"http://127.0.0.1:{srv.server_address[1]}/x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
        try:
            got = native.read_remote(url, len(data), hashlib.sha256(data).hexdigest(), p.name,
                                     session=watched(session()), gpu=True,
                                     deadline=Deadline(at=__import__("time").monotonic() + 30, what="30 s"))
        except ReadFailed:
            assert not (range_ok and set(moves) == {"right"}), moves  # (a server that answers right is read)
            return
        assert (got.members, got.provides, got.built_for_torch, got.problem) == (
            truth.members, truth.provides, truth.built_for_torch, None), moves
    finally:
        srv.shutdown()
        srv.server_close()


# ---------------------------------------------------------------- issue 40's readers: imports, strings, torch exports

@CI
@given(src=st.one_of(st.text(max_size=400), st.sampled_from([
    "import a\nfrom . import b\nfrom .c import d\nfrom a.b import *\n", "(" * 300 + ")" * 300, "x = 1\0\n",
    "def f():\n    import z\nimportlib.import_module('q.r')\n__import__('')\n", "from .. import up\n",
    "import " + ", ".join(f"m{i}" for i in range(500)) + "\n", "\ufeffimport bom\n", "if x:\n  import y\n" * 200])),
       names=st.lists(st.sampled_from(["pkg/__init__.py", "pkg/_api.py", "pkg.py", "other/__init__.py",
                                        "x-1.0.dist-info/top_level.txt", "pkg/sub/__init__.py", "../evil.py",
                                        "pkg/_C.abi3.so", "_root.cpython-312-x86_64-linux-gnu.so", "lib/a.so",
                                        "pkg.libs/libx.so.1", ".hidden/x.py", "é/__init__.py"]), max_size=10))
def test_fuzz_a_wheels_python_and_names_give_import_names_or_nothing(src: str, names: list[str]) -> None:
    """Any Python in a wheel's packages, any file names: import names and pairs of them, never an error."""
    from tritonlock.native.pysource import folder_imports, sources_wanted, wheel_imports

    tops, imports = wheel_imports(names, lambda p: src if p in names else None)
    assert all(t.isidentifier() for t in tops) and all(a in tops and b.isidentifier() for a, b in imports)
    assert set(sources_wanted(dict.fromkeys(names, 10))) <= set(names)
    with tempfile.TemporaryDirectory(prefix="tl-fuzz-src-") as d:
        assert isinstance(folder_imports(Path(d), dict.fromkeys(names)), tuple)


@CI
@given(data=st.binary(max_size=3000), step=st.integers(1, 700),
       names=st.lists(st.sampled_from([b"libcublas.so.12", b"/usr/lib/libcudnn.so.9", b"libx.so", b"lib.so.1",
                                       b"a libfoo.so.3", b"libcudart.so.12.8.90"]), max_size=6))
def test_fuzz_library_names_found_as_bytes_stream_by_are_what_one_piece_gives(data: bytes, step: int,
                                                                              names: list[bytes]) -> None:
    """The names a file's strings hold, whatever pieces its bytes come in: the same as from one piece."""
    from tritonlock.native.elf import SoNames

    blob = data + b"\0" + b"\0".join(names) + b"\0" + data[::-1]
    whole, parts = SoNames(), SoNames()
    whole.feed(0, blob)
    for i in range(0, len(blob), step):
        parts.feed(i, blob[i:i + step])
    span = [(0, len(blob))]
    assert parts.names_in(span) == whole.names_in(span)
    expected = {n.rsplit(b"/", 1)[-1].decode() for n in names if re.fullmatch(rb"(?:/usr/lib/)?lib[a-z]+\.so(\.[0-9]+)+", n)}
    assert expected <= set(whole.names_in(span))


@pytest.fixture(scope="module")
def c10_lib(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    from nativebuild import stub_library

    return stub_library(tmp_path_factory.mktemp("fuzz-c10"), "libc10.so",
                        ("_ZN3c1010TensorImpl7releaseEv", "_ZNK2at6Tensor3dimEv", "plain")).read_bytes()


@CI
@given(flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=10),
       cut=st.integers(min_value=0, max_value=100), step=st.sampled_from([1, 9, 4096, 1 << 20]),
       sized=st.booleans())
def test_fuzz_a_damaged_torch_library_gives_its_exports_or_not_here(c10_lib: bytes, flips: list[tuple[int, int]],
                                                                    cut: int, step: int, sized: bool) -> None:
    """torchsyms on a library with bytes flipped or cut short: names of torch's C++ API, or NotHere (the exports are
    then not known, said) — never another exception, never a name outside torch's namespaces."""
    from tritonlock.native import torchsyms
    from tritonlock.native.elfdyn import TORCH_CXX

    data = bytearray(c10_lib)
    for at, value in flips:
        data[at % len(data)] = value
    data = data[:max(1, len(data) * cut // 100)] if cut < 30 else data
    try:
        got = torchsyms.exports_of_stream(iter([bytes(data[i:i + step]) for i in range(0, len(data), step)]),
                                          len(data) if sized else None)
    except torchsyms.NotHere:
        return
    assert all(TORCH_CXX.match(n) for n in got)


@CI
@given(data=st.binary(max_size=400), n=st.integers(0, 300), bits=st.integers(1, 24))
def test_fuzz_a_damaged_shipped_set_decodes_or_is_refused(data: bytes, n: int, bits: int) -> None:
    from tritonlock.native import gcs

    try:
        got = gcs.gcs_decode(data, n, bits)
    except ValueError:
        return
    assert len(got) <= n


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.binary(max_size=600), st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
                      st.sampled_from([b"tritonlock-python 3.99\n\n", b"tritonlock-python 3.99\n/bin/sh\n",
                                       b"tritonlock-python 3.99\n/nonexistent/python\n", b"tritonlock-python 3.99\n"])))
def test_fuzz_the_kept_interpreter_of_a_resolve(data: bytes, tmp_path: Path) -> None:
    """resolve's kept answer of `uv python find` (tritonlock._subprocess): whatever bytes are there, it is no answer,
    "none found", or an interpreter file that exists — never an error."""
    from unittest import mock

    from tritonlock import _subprocess

    with mock.patch.dict(os.environ, {"XDG_CACHE_HOME": str(tmp_path / "c")}):
        kept = Path(_subprocess._kept_file("3.99"))
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_bytes(data)
        got = _subprocess._kept_python("3.99")
    assert got is None or got == "" or Path(got).is_file(), got
    if data in (b"tritonlock-python 3.99\n\n",):
        assert got == ""


@CI
@given(init=st.text(max_size=300), extra=st.lists(st.text(max_size=30), max_size=4))
def test_fuzz_what_a_package_loads_inside_a_try_is_read_from_any_python(init: str, extra: list[str]) -> None:
    """native.pysource.guarded_loads on hostile or broken Python and member names: an answer among the members, never
    an error."""
    from tritonlock.native.pysource import guarded_loads

    paths = ["pkg/_C.abi3.so", "pkg/__init__.py", *extra]
    for text in (init, "try:\n    from . import _C\nexcept ImportError:\n    pass\n" + init):
        assert set(guarded_loads(("pkg",), {"pkg/__init__.py": text}.get, paths)) <= set(paths)


@CI
@given(value=st.text(max_size=60))
def test_fuzz_a_locks_guarded_modules_read_or_refused_naming_the_key(value: str) -> None:
    """[[native]].guarded of any value: read back as written where it is a path inside the wheel, else refused naming
    the key — never a traceback."""
    import dataclasses

    from test_lockfile import sample

    base = sample()
    lock = dataclasses.replace(base, native=(base.native[0], dataclasses.replace(base.native[1], guarded=(value,))))
    try:
        text = lockfile.dumps(lock)
    except (TritonlockError, ValueError):
        return
    try:
        back = lockfile.loads(text)
    except TritonlockError as err:
        assert "guarded" in str(err) or "not valid TOML" in str(err), err
        return
    assert back.native[1].guarded == (value,)


@pytest.mark.parametrize("value, cores, early", [("1", 2, True), ("0", 64, False), ("", 8, True), ("", 7, False),
                                                  ("yes", 2, False), ("yes", 16, True), (" 1 ", 2, True)])
def test_fuzz_the_verify_early_variable_is_1_0_or_the_core_count(value: str, cores: int, early: bool,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tritonlock" / "verify" / "runner"))
    try:
        from tlverify.harness import starts_early
    finally:
        sys.path.pop(0)
    monkeypatch.setenv("TRITONLOCK_VERIFY_EARLY", value)
    assert starts_early(cores) is early


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.binary(max_size=600), st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
                      st.sampled_from([b'{"message": "m", "uv": "Failed to build `a==1`"}', b'{"message": 1, "uv": ""}',
                                       b'{"uv": "Failed to build `a==1`"}', b"[]", b"null"])))
def test_fuzz_a_kept_build_failure(data: bytes, tmp_path: Path) -> None:
    """The packages search's kept failure of uv to build an sdist (decide._pkgcompile): whatever bytes are in the
    record, it is no record or a ClosureError carrying uv's build failure — never an error."""
    from unittest import mock

    from tritonlock.decide import _pkgcompile
    from tritonlock.errors import ClosureError

    with mock.patch.dict(os.environ, {"XDG_CACHE_HOME": str(tmp_path / "c")}):
        path = Path(_pkgcompile._failed_build_file(("q",)) or "")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        got = _pkgcompile.kept_build_failure(("q",))
    assert got is None or (type(got) is ClosureError and "Failed to build `" in got.uv)
    assert (got is not None) == (data == b'{"message": "m", "uv": "Failed to build `a==1`"}')


def test_a_kept_build_failure_that_is_not_a_regular_file_is_never_read_nor_written_through(tmp_path: Path) -> None:
    """A FIFO at the record's place is not waited on; a link there is replaced, never written through."""
    from unittest import mock

    from tritonlock.decide import _pkgcompile
    from tritonlock.errors import ClosureError

    with mock.patch.dict(os.environ, {"XDG_CACHE_HOME": str(tmp_path / "c")}):
        fifo = Path(_pkgcompile._failed_build_file(("fifo",)) or "")
        fifo.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(fifo)
        assert _pkgcompile.kept_build_failure(("fifo",)) is None  # (returns: a FIFO is never opened for reading)
        link = Path(_pkgcompile._failed_build_file(("link",)) or "")
        victim = tmp_path / "victim.txt"
        victim.write_text("mine")
        link.symlink_to(victim)
        assert _pkgcompile.kept_build_failure(("link",)) is None
        _pkgcompile.keep_build_failure(("link",), ClosureError("m", uv="Failed to build `a==1`"))
        assert victim.read_text() == "mine"


@CI
@given(row=st.dictionaries(st.sampled_from(["name", "since", "min-cc", "source"]),
                           st.one_of(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12),
                                     st.sampled_from(["8.0", "7.5", "2.0.0", "", "x.y", "99.99"]),
                                     st.integers(-2**62, 2**62), st.booleans(), st.none()), max_size=4))
def test_fuzz_a_build_gpus_row_is_read_or_refused_naming_the_row(row: dict[str, Any]) -> None:
    """compat/builds.toml [[build-gpus]] rows of any value: read, or a MatrixError naming the file and the row —
    never a traceback."""
    import shutil
    from unittest import mock

    from tritonlock import _data
    from tritonlock.errors import MatrixError
    from tritonlock.lock import builds

    with tempfile.TemporaryDirectory() as d:
        compat = Path(d) / "compat"
        shutil.copytree(_data.compat_root(), compat)  # type: ignore[arg-type]
        body = "".join(f"{k} = {_toml(v)}\n" for k, v in row.items() if v is not None)
        (compat / "builds.toml").write_text((compat / "builds.toml").read_text() + "\n[[build-gpus]]\n" + body)
        with mock.patch.object(_data, "compat_root", lambda: compat):
            builds.gpu_floors.cache_clear()
            try:
                floors = builds.gpu_floors()
                assert all(f.why.startswith("compat/builds.toml: ") for spans in floors.values() for f in spans)
                builds.gpus_below("flash-attn", "2.8.3", ["7.0"])
            except MatrixError as err:
                assert "builds.toml: build-gpus" in str(err), err
            finally:
                builds.gpu_floors.cache_clear()


_UV_WORD = st.sampled_from(["`", "==", ">=", "<", "~=", "!=", "[all]", " ", "\n", ",", "1.0", "2.0.post1", "*", "vllm",
                            "torch", "Aheadlib", "one of", "CPython", "Python", "depends on ", "no versions of ",
                            "you require ", "only ", " is available", " was not found in the cache",
                            " needs to be downloaded from a registry", " need to be downloaded from a registry",
                            "all of:", "WARN ", "DEBUG ", "tritonlock-closure"])


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_UV_WORD | st.text(max_size=12), max_size=40))
def test_fuzz_uvs_words_give_package_names_only(parts: list[str]) -> None:
    """uv's failures and its warnings (lock/_fromcache.py reads them for what its cache lacks and what a conflict
    names): any words give canonical package names (never the interpreter or tritonlock's own project), and
    specifiers that start with an operator."""
    from packaging.utils import canonicalize_name

    from tritonlock.lock._fromcache import many, missed, named

    words = "".join(parts)
    assert many(words) in (True, False)  # (a range of releases lacking, or one: any words give an answer)
    for name in named(words):
        assert name == canonicalize_name(name) and name not in ("python", "cpython", "tritonlock-closure")
    for name, spec in missed(words).items():
        assert name == canonicalize_name(name) and (spec == "" or spec[0] in "=<>!~"), (name, spec)


_YANK_VALUES = st.one_of(st.none(), st.booleans(), st.text(max_size=40), st.integers(),
                         st.lists(st.text(max_size=5), max_size=3), st.dictionaries(st.text(max_size=5), st.integers()))


@CI
@given(value=_YANK_VALUES, attr=st.one_of(st.none(), st.text(max_size=40)))
def test_fuzz_a_pages_yanked_value_of_any_shape_reads_as_a_reason_or_none(value: object, attr: str | None) -> None:
    """An index page's "yanked" (PEP 691 JSON: true, a reason, or anything a broken mirror sends) and data-yanked (PEP
    503 HTML: any text, or absent) read as yanked or not and a reason or none — never an error."""
    import html

    from tritonlock.lock.index import IndexClient

    class Resp:
        def __init__(self, kind: str, body: object) -> None:
            self.headers = {"Content-Type": kind}
            self.body = body
            self.text = body if isinstance(body, str) else ""

        def json(self) -> object:
            return self.body

    name = "pkg-1.0-py3-none-any.whl"
    doc = {"files": [{"filename": name, "url": "https://files.example/" + name, "hashes": {},
                      **({"yanked": value} if value is not None else {})}]}
    link = (f'<a href="https://files.example/{name}"'
            + (f' data-yanked="{html.escape(attr)}"' if attr is not None else "") + f">{name}</a>")
    client = IndexClient.__new__(IndexClient)
    client.url = "https://index.example/simple"
    for resp, want, reason in ((Resp("application/vnd.pypi.simple.v1+json", doc), bool(value),
                                value if isinstance(value, str) and value else None),
                               (Resp("text/html", f"<html><body>{link}</body></html>"), attr is not None, attr or None)):
        client._get = lambda url, accept, r=resp: r  # type: ignore[method-assign]
        (f,) = client.files("pkg")
        assert (f.yanked, f.yanked_reason) == (want, reason)


# ---------------------------------------------------------------- compat/metadata files (tritonlock/lock/shippedmeta.py)

_SHA = "ab" * 32
_META_ROW: dict[str, list[Any]] = {
    "sha256": [_SHA, _SHA.upper(), _SHA[:63], "cd" * 32, 7, "", None],
    "filename": ["einops-0.8.0-py3-none-any.whl", "", "../x.whl", 3, ["a"]],
    "checked": [True, False, "true", 1, None],
    "source": ["the file x, sha256 y", 5],
    "metadata": ["Metadata-Version: 2.1\nName: einops\nVersion: 0.8.0\nRequires-Dist: numpy>=1; extra == 'x'\n",
                 "", "Requires-Dist: @@@ not a requirement\nRequires-Dist: a (>=1\n", "\x00\n\n\n", "Name\n: x",
                 "Requires-Dist: " + "a" * 3000, 7, {"a": 1}, ["Requires-Dist: x"]],
}

_META_GOOD: dict[str, list[Any]] = {"sha256": [_SHA, _SHA, "cd" * 32], "checked": [True, False],
                                   "metadata": _META_ROW["metadata"][:5], "filename": _META_ROW["filename"][:1], "source": _META_ROW["source"][:1]}


@st.composite
def metadata_files(draw: st.DrawFn) -> tuple[str, bool]:
    """A compat/metadata file as the tool writes it, or near-misses of one: a key of the wrong type or left out, a
    row of another sha256's case, the text cut or spliced with junk; and whether the lookup asks for a checked row."""
    lines = ["[meta]", 'package = "einops"']
    for _ in range(draw(st.integers(0, 3))):
        lines.append(draw(st.sampled_from(["[[file]]", "[[file]]", "[file]", "file = 3"])))
        for key, choices in _META_ROW.items():  # (mostly a valid value: rows that are used, and one key wrong)
            value = draw(st.sampled_from(_META_GOOD[key] if draw(st.integers(0, 3)) else choices))
            if value is not None:
                lines.append(f"{key} = {_toml(value)}")
    text = "\n".join(lines) + "\n"
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["", "\n", '"', "[[", "]]", "=", "\\u00", f'sha256 = "{_SHA}"\n',
                                                 "\x00", "'''"])) + text[at + draw(st.integers(0, 5)):]
    return text, draw(st.booleans())


@settings(CI, max_examples=400)
@given(metadata_files())
def test_fuzz_compat_metadata_files(case: tuple[str, bool]) -> None:
    """Any compat/metadata text: loads gives rows of the documented shape or a ValueError; a lookup of a sha256 in a
    folder holding it answers that sha256's row (the last of them in the file) or nothing, never raises; and what it
    answers reads as headers and requirements (a requirement that does not parse is skipped)."""
    from tritonlock.lock import shippedmeta
    from tritonlock.lock._requires import metadata_fields, parsed_requirement

    text, checked = case
    try:
        rows: list[dict[str, Any]] | None = shippedmeta.loads(text)
    except ValueError:
        rows = None
    for row in rows or []:
        assert re.fullmatch("[0-9a-f]{64}", row["sha256"]) and isinstance(row["filename"], str)
        assert isinstance(row["checked"], bool) and isinstance(row["metadata"], str)
    d = Path(tempfile.mkdtemp(prefix="tritonlock-fuzz-meta-", dir=_DIR))
    (d / "einops.toml").write_text(text, encoding="utf-8")
    real = shippedmeta.folder
    shippedmeta.folder = lambda: str(d)  # type: ignore[assignment]
    shippedmeta.forget()
    try:
        got = shippedmeta.shipped_metadata(_SHA, checked=checked)
    finally:
        shippedmeta.folder = real  # type: ignore[assignment]
        shippedmeta.forget()
    mine = [r for r in rows or [] if r["sha256"] == _SHA]
    want = mine[-1]["metadata"] if mine and (mine[-1]["checked"] or not checked) else None
    assert got in (None, want) and (got is None or got == (want or None))
    if rows is not None and f'\nsha256 = "{_SHA}"\n' in f"\n{text}":
        assert got == (want or None)  # (found: the row's own line is what the lookup indexes)
    if got is not None:
        for line in metadata_fields(got).get("requires-dist", ()):
            parsed_requirement(line)


def test_fuzz_compat_metadata_reaches_both_sides() -> None:
    """The generator reaches rows that are answered and texts that are refused (the property above is not empty)."""
    from tritonlock.lock import shippedmeta

    row = "\n".join(f"{k} = {_toml(v[0])}" for k, v in _META_ROW.items())
    assert shippedmeta.loads(f"[[file]]\n{row}\n")[0]["sha256"] == _SHA
    with pytest.raises(ValueError):
        shippedmeta.loads(f"[[file]]\n{row.replace(_toml(True), _toml('true'))}\n")


# ---------------------------------------------------------------- a failed build's words (uv's output, read by _pkgwords)

@settings(CI, max_examples=400)
@given(st.lists(st.one_of(st.sampled_from(["  RuntimeError: Cannot find CUDA", "      E.InstallFailedError:", "****",
                                           "", "hint: x", "help: y", "ValueError:", " │ KeyError: 'k'", "Error:",
                                           "x" * 400]), st.text(max_size=60)), max_size=12),
       st.integers(1, 400))
def test_fuzz_a_failed_builds_words(lines: list[str], most: int) -> None:
    """Any output: build_error answers at most `most` characters, empty where no line names an exception, and starts
    with the last line that does."""
    from tritonlock.decide._pkgwords import build_error

    text = "\n".join(lines)
    got = build_error(text, most)
    assert len(got) <= max(most, 1)
    named = [ln.strip() for ln in text.splitlines() if re.search(r"\w(Error|Exception):", ln)]
    assert (got == "") == (not named)
    if named and len(named[-1]) < most:
        assert got.startswith(named[-1])


_PKGS = ("alpha", "beta", "gamma", "delta", "torch")


@CI
@given(st.lists(st.one_of(st.none(), st.tuples(st.sets(st.sampled_from(("all", "srt"))),
                                               st.sets(st.sampled_from(_PKGS)),
                                               st.sets(st.tuples(st.sampled_from(_PKGS), st.sampled_from(("all", "srt")))))),
                min_size=1, max_size=7),
       st.sampled_from((("all",), ("srt",), ("all", "srt"))))
def test_fuzz_a_release_without_an_extra_is_lacking_or_folded_by_its_nearest_declaring_release(
        releases: list[Any], extras: tuple[str, ...]) -> None:
    """Any history of a package's extras (declared or not, each bringing any packages, a METADATA sometimes unknown):
    a release that declares the extras asked for neither lacks them nor is folded; one that does not either lacks
    them or is folded, never both — folded only by the nearest older release that declares them all (none unknown
    on the way), holding at least 80 % of what they brought there, and never more than they brought."""
    from packaging.version import Version

    from tritonlock.decide._pkgfacts import Facts
    from tritonlock.models import TargetSpec

    facts, index, t = Facts(), "http://fuzz.invalid/simple", TargetSpec(name="g", os="linux", arch="x86_64")
    versions = [f"{i + 1}.0" for i in range(len(releases))]
    facts._by_release[(index, "pkg")] = {Version(v): [] for v in versions}  # (the page, as read)
    for v, r in zip(versions, releases):
        facts._meta[(index, "pkg", v)] = None if r is None else "\n".join(
            ["Metadata-Version: 2.1", "Name: pkg", f"Version: {v}", *(f"Provides-Extra: {e}" for e in sorted(r[0])),
             *(f"Requires-Dist: {p}" for p in sorted(r[1])),
             *(f"Requires-Dist: {p}; extra == \"{e}\"" for p, e in sorted(r[2]))]) + "\n"
    for i, (v, r) in enumerate(zip(versions, releases)):
        lacks = facts.lacks_extras(index, "pkg", v, t, "3.12", extras)
        folded = facts.folded_extras(index, "pkg", v, t, "3.12", extras)
        declares = r is not None and set(extras) <= r[0]
        if r is None or declares:
            assert not lacks and folded is None
            continue
        assert lacks is (folded is None)
        # the nearest older release that declares them all, none unknown on the way
        nearest = None
        for j in range(i - 1, -1, -1):
            if releases[j] is None:
                break
            if set(extras) <= releases[j][0]:
                nearest = j
                break
        if nearest is None:
            assert lacks
            continue
        base = releases[nearest][1]
        brought = {p for p, e in releases[nearest][2] if e in extras} - base
        held = len(brought & r[1])
        assert folded == ((versions[nearest], held, len(brought)) if held >= 0.8 * len(brought) else None)


@CI
@given(st.sets(st.tuples(st.integers(10, 13), st.one_of(st.none(), st.integers(0, 9))), min_size=0, max_size=6),
       st.tuples(st.integers(10, 13), st.integers(0, 9)), st.sampled_from(["exact", "major", None]),
       st.booleans(), st.sampled_from(["cuda", "cu"]))
def test_fuzz_a_per_cuda_library_picked_at_run_time_is_missing_exactly_where_the_packages_rule_finds_none(
        builds: set[tuple[int, int | None]], want: tuple[int, int], pick: str | None, linked: bool, tag: str) -> None:
    """Any set of per-CUDA builds, any torch CUDA, either rule or none: missing where — and only where — the rule
    finds no build: "exact" the torch's release (or its major, for a build naming none), "major" any of its major,
    no row a build per major alone (builds naming a minor: never judged); fewer than two builds, or one a module links,
    never."""
    from tritonlock.models import NativeMember
    from tritonlock.native.variants import Pick, missing_runtime_build

    def name(c: tuple[int, int | None]) -> str:
        return f"pk/libpk_{tag}{c[0]}{'' if c[1] is None else c[1]}.so"

    members = [NativeMember(path="pk/_C.so", extension=True)] + [NativeMember(path=name(c), extension=False)
                                                                 for c in builds]
    named = {name(min(builds, key=str))} if linked and builds else set()
    rows = (Pick(name="pk", versions="", pick=pick, without="", source="s"),) if pick else ()
    got = missing_runtime_build(members, named, "pk", "1.0", f"cu{want[0]}{want[1]}", rows)
    distinct = {c for c in builds}
    if len(distinct) < 2 or named or (pick is None and all(c[1] is not None for c in builds)):
        assert got is None
        return
    if pick == "exact":
        fits = want in builds or (want[0], None) in builds
    else:
        fits = any(c[0] == want[0] for c in builds)
    assert (got is None) == fits, (builds, want, pick)
    if got is not None:
        assert got.want == f"{want[0]}.{want[1]}" and len(got.have) == len(distinct)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400), st.integers(0, 999), st.integers(0, 999))
def test_fuzz_nvcc_version_words(noise: str, major: int, minor: int) -> None:
    """Whatever `nvcc --version` prints (sync reads it to refuse an nvcc of another major than torch's): a release
    "N.M" or None, never an exception; a toolkit's own line is read whatever surrounds it."""
    from tritonlock.lock.builds import release_of

    got = release_of(noise)
    assert got is None or re.fullmatch(r"\d+\.\d+", got)
    line = f"Cuda compilation tools, release {major}.{minor}, V{major}.{minor}.88"
    assert release_of(f"nvcc: NVIDIA (R) Cuda compiler driver\n{line}\n") == f"{major}.{minor}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400), st.from_regex(r"[a-z][a-z0-9]*([-_.][a-z0-9]+){0,2}", fullmatch=True),
       st.sampled_from(["", "==1.0", ">=2", "[all]>=0.5"]))
def test_fuzz_uvs_words_for_a_conflicts_other_side(noise: str, name: str, spec: str) -> None:
    """Whatever uv prints, the conflict's check reads which named packages its proof rests on without an exception;
    a package the ending sentence names is found in it whatever comes before, and one it does not name is not (unless
    the noise before the sentence's "because" names it)."""
    from packaging.utils import canonicalize_name

    from tritonlock.decide._pkgfallback import named_in, proof_roots

    assert isinstance(proof_roots(noise), str) and isinstance(named_in(noise, "vllm"), bool)
    canon = canonicalize_name(name)
    ending = f"{noise}\nAnd because you require {name}{spec} and zz-other>=1, we can conclude that your " \
             "requirements are unsatisfiable."
    assert named_in(proof_roots(ending), canon)
    assert named_in(proof_roots(ending), "zz-other")
    assert not named_in(proof_roots(ending), canon + "x")


_ROW_VALUE = st.one_of(st.sampled_from(TRICKY), st.integers(), st.booleans(), st.none(),
                       st.lists(st.sampled_from(TRICKY), max_size=3))


@CI
@given(rows=st.lists(st.one_of(st.dictionaries(st.sampled_from(["name", "min-gpu", "prebuilt", "same-release",
                                                                 "source", "x"]), _ROW_VALUE), _ROW_VALUE),
                     max_size=4),
       gpus=st.lists(st.sampled_from(TRICKY), max_size=3),
       versions=st.lists(st.sampled_from(["0.6.6", "0.6.6+cu130", "0.6.13", "1!0.1", "0.6.6.post1", "x"]),
                         min_size=2, max_size=2),
       backend=st.sampled_from([None, "", "cpu", "cu128", "cu130", "rocm6.4", "cu"]))
def test_fuzz_the_kernels_at_first_use_table_and_what_it_finds(rows: list[Any], gpus: list[str], versions: list[str],
                                                               backend: str | None) -> None:
    """compat/packages.toml [[kernels-at-first-use]] as anyone might write it: a row is read whole or left out, never
    an exception; what `found` says of a lock holds for any GPU strings and versions."""
    from tritonlock.compat import firstuse, pkgbuilds
    from tritonlock.models import LockedPackage, Wheel

    original = pkgbuilds._table
    try:
        pkgbuilds._table = lambda: ("packages.toml", {"kernels-at-first-use": rows})  # type: ignore[assignment]
        table = pkgbuilds.kernels_at_first_use.__wrapped__()
        firstuse.kernels_at_first_use = lambda: table  # type: ignore[assignment]
        assert all(re.fullmatch(r"[a-z0-9-._]*", n) and r.source for n, r in table.items())
        lock = [LockedPackage(name=n, version=v, index="https://x.invalid/simple",
                              wheels=(Wheel(name=f"{n}-{v}-py3-none-any.whl", url="https://x.invalid/w", sha256="0"),))
                for n in {*table, *(p for r in table.values() for p in r.prebuilt)} for v in versions[:1]]
        for f in firstuse.found(lock, tuple(gpus), backend):
            assert (backend or "").startswith("cu") and f.package in table
            assert set(f.below) <= set(gpus) and (not f.every_gpu_below or gpus)
            assert {n for n, _ in f.mismatched} <= set(f.row.prebuilt) and (f.row.same_release or not f.mismatched)
    finally:
        pkgbuilds._table = original  # type: ignore[assignment]
        firstuse.kernels_at_first_use = pkgbuilds.kernels_at_first_use  # type: ignore[assignment]
