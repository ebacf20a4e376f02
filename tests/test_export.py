"""export: each projection of a real lock, installed by pip and uv from a real local index (Dockerfiles parsed)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))

from pkgindex import LocalIndex  # noqa: E402
from tritonlock import export as ex# noqa: E402
from tritonlock.lock import lockfile# noqa: E402
from tritonlock.cli import main  # noqa: E402
from tritonlock.errors import UnknownTargetError  # noqa: E402
from tritonlock.verify import RUNNER, runner_files  # noqa: E402
from tritonlock.models import Conflict, Lock, LockedPackage, LockedTarget, Selection, TargetSpec, Wheel  # noqa: E402

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
CP = f"cp{sys.version_info.major}{sys.version_info.minor}"
LINUX = "py3-none-manylinux_2_17_x86_64"

# name, version, index, wheel tag: the torch family on the torch index, the rest on the default one.
PACKAGES = (
    ("torch", "2.6.0+cu126", "whl/cu126", LINUX),
    ("triton", "3.2.0", "whl/cu126", LINUX),
    ("filelock", "3.16.1", "simple", "py3-none-any"),
    ("nvidia-cuda-runtime-cu12", "12.6.77", "simple", LINUX),
)


@pytest.fixture(scope="session")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("export-index"))
    for name, version, where, tag in PACKAGES:
        reqs = ("filelock>=3", "triton==3.2.0; platform_system == 'Linux'", "nvidia-cuda-runtime-cu12==12.6.77") \
            if name == "torch" else ()
        idx.add(where, name, version, tag=tag, requires=reqs)
    # Decoys: same names on the other index. Nothing may ever be fetched from these.
    idx.add("simple", "torch", "2.6.0", tag=LINUX)
    idx.add("whl/cu126", "filelock", "99.0")
    idx.start()
    yield idx
    idx.stop()


def locked_package(idx: LocalIndex, name: str, version: str, where: str, tag: str) -> LockedPackage:
    f = idx.root / where / "_files" / f"{name.replace('-', '_')}-{version}-{tag}.whl"
    data = f.read_bytes()
    return LockedPackage(name=name, version=version, index=idx.index_url(where), wheels=(
        Wheel(name=f.name, url=f"{idx.index_url(where)}/_files/{f.name}", sha256=hashlib.sha256(data).hexdigest(),
              size=len(data)),))


def make_lock(idx: LocalIndex, *, backend: str = "cu126", name: str = "host", python: str = PY,
              extra_targets: tuple[LockedTarget, ...] = ()) -> Lock:
    sel = Selection(target=TargetSpec(name=name, os="linux", arch="x86_64", glibc="2.35", python=python,
                                      driver="560.35.03", cuda="12.6", gpus=("9.0",)),
                    ok=True, python=python, torch="2.6.0", backend=backend, index=idx.index_url("whl/cu126"),
                    triton_package="triton", triton="3.2.0", driver_floor="525.60.13", archs=("sm_90",))
    pkgs = tuple(locked_package(idx, *p) for p in PACKAGES)
    return Lock(lock_version="1.0", created_by="tritonlock 0.1.0", intent_hash="sha256:" + "0" * 64,
                matrix_version="2026.11.1", default_index=idx.index_url("simple"),
                targets=(LockedTarget(selection=sel, packages=pkgs), *extra_targets))


@pytest.fixture
def project(tmp_path: Path, index: LocalIndex) -> Path:
    """A lock that is fresh against the intent beside it (a stale one would make export warn)."""
    from tritonlock.intent.read import read_intent
    from tritonlock.compat.matrix import load_matrix

    (tmp_path / "triton-env.toml").write_text('[environment]\ntorch = "==2.6.0"\n')
    lock = replace(make_lock(index), intent_hash=read_intent(tmp_path / "triton-env.toml").content_hash,
                   matrix_version=load_matrix().version)
    lockfile.write_lock(lock, tmp_path / "triton-env.lock")
    return tmp_path


def cli(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env |= {"UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1", "UV_NO_CONFIG": "1", "UV_NO_CACHE": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run(list(args), capture_output=True, text=True, env=env, timeout=300)


def uv_bin() -> str:
    from uv import find_uv_bin

    return str(find_uv_bin())


def new_venv(path: Path) -> Path:
    r = run(uv_bin(), "venv", "-q", "--python", sys.executable, str(path))
    assert r.returncode == 0, r.stderr
    return path / "bin" / "python"


def installed(python: Path) -> dict[str, str]:
    code = "import json, importlib.metadata as m; print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    return json.loads(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout)


LOCKED = {"torch": "2.6.0+cu126", "triton": "3.2.0", "filelock": "3.16.1", "nvidia-cuda-runtime-cu12": "12.6.77"}


def pip_version(argv: list[str]) -> tuple[int, ...]:
    out = subprocess.run([*argv, "--version"], capture_output=True, text=True).stdout
    m = re.match(r"pip (\d+)\.(\d+)", out)
    return (int(m[1]), int(m[2])) if m else (0,)


@pytest.fixture(scope="session")
def pip26(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A pip >= 26 (the first to install from pylock.toml); it installs into other venvs through --python."""
    mine = [sys.executable, "-m", "pip"]
    if pip_version(mine) >= (26,):
        return mine
    venv = tmp_path_factory.mktemp("pip26") / "venv"
    py = str(venv / "bin" / "python")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # The running pip installs the new one into that venv (--python, pip >= 22.3): no ensurepip round.
    r = subprocess.run([*mine, "--python", py, "install", "-q", "pip>=26"], capture_output=True, text=True)
    if r.returncode != 0:
        subprocess.run([py, "-m", "ensurepip", "-q"], check=True)
        r = subprocess.run([py, "-m", "pip", "install", "-q", "pip>=26"], capture_output=True, text=True)
    assert r.returncode == 0, f"cannot install pip>=26 from the configured index: {r.stderr}"
    assert pip_version([py, "-m", "pip"]) >= (26,)
    return [py, "-m", "pip"]


# ---------------------------------------------------------------- pylock.toml


def test_pylock_text_validates_as_pep751(index: LocalIndex) -> None:
    from packaging.markers import default_environment
    from packaging.pylock import Pylock

    from tritonlock import _toml

    lock = make_lock(index)
    text = ex.pylock(lock, lock.targets[0])
    torch = lock.targets[0].packages[0].wheels[0]
    assert text.startswith(
        "# Generated by `tritonlock export --format pylock --target host` from triton-env.lock — do not edit; "
        "re-export instead.\n"
        f"# Target 'host': torch 2.6.0 (cu126) + triton 3.2.0 on Python {PY}, linux/x86_64.\n"
        "# Install: pip install -r pylock.toml (pip >= 26)  |  uv pip install -r pylock.toml\n"
        'lock-version = "1.0"\n'
        'created-by = "tritonlock"\n'
        "environments = [\"sys_platform == 'linux' and platform_machine == 'x86_64'\"]\n"
        f'requires-python = "=={PY}.*"\n')
    assert (f'\n[[packages]]\nname = "torch"\nversion = "2.6.0+cu126"\nindex = "{index.index_url("whl/cu126")}"\n'
            f'wheels = [\n  {{ name = "{torch.name}", url = "{torch.url}", size = {torch.size}, hashes = {{ sha256 = '
            f'"{torch.sha256}" }} }},\n]\n') in text
    assert text.endswith('\n[tool.tritonlock]\ntarget = "host"\nbackend = "cu126"\n'
                         f'lock-intent-hash = "sha256:{"0" * 64}"\nmatrix-version = "2026.11.1"\n')
    doc = Pylock.from_dict(_toml.loads(text))
    doc.validate()
    env = dict(default_environment(), sys_platform="linux", platform_machine="x86_64",
               python_full_version=f"{PY}.0", python_version=PY)
    picked = {p.name: str(p.version) for p, _ in doc.select(environment=env)}  # type: ignore[arg-type]
    assert picked == LOCKED


def test_pylock_installs_with_uv_from_each_package_index(project: Path, index: LocalIndex, tmp_path: Path) -> None:
    code, out = cli("export", "-p", str(project), "--format", "pylock", "-o", str(tmp_path / "pylock.toml"))
    assert code == 0, out
    assert out == f"wrote {tmp_path / 'pylock.toml'} (target host)\n"
    py = new_venv(tmp_path / "venv")
    index.requests.clear()
    r = run(uv_bin(), "pip", "install", "--python", str(py), "-r", str(tmp_path / "pylock.toml"))
    assert r.returncode == 0, r.stderr
    assert {k: v for k, v in installed(py).items() if k in LOCKED} == LOCKED
    # every file came from the index the lock bound it to; no index page was asked for a name
    assert sorted(index.requests) == sorted(
        f"/{where}/_files/{name.replace('-', '_')}-{version}-{tag}.whl" for name, version, where, tag in PACKAGES)


def test_pylock_installs_with_pip26(project: Path, index: LocalIndex, tmp_path: Path, pip26: list[str]) -> None:
    (tmp_path / "pylock.toml").write_text(ex.pylock(*_lock_and_target(project)))
    py = new_venv(tmp_path / "venv")
    r = run(*pip26, "--isolated", "--no-cache-dir", "--python", str(py), "install", "-r", str(tmp_path / "pylock.toml"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert {k: v for k, v in installed(py).items() if k in LOCKED} == LOCKED


def _lock_and_target(project: Path) -> tuple[Lock, LockedTarget]:
    lock = lockfile.read_lock(project / "triton-env.lock")
    return lock, ex.choose_target(lock)


def test_a_changed_hash_is_refused_by_pip_and_uv(project: Path, tmp_path: Path, pip26: list[str]) -> None:
    lock, t = _lock_and_target(project)
    good = next(p for p in t.packages if p.name == "filelock").wheels[0].sha256
    bad = ("0" if good[0] != "0" else "1") + good[1:]
    (tmp_path / "pylock.toml").write_text(ex.pylock(lock, t).replace(good, bad))
    (tmp_path / "requirements.txt").write_text(ex.requirements(lock, t).replace(good, bad))
    py = new_venv(tmp_path / "venv")
    for argv in ([uv_bin(), "pip", "install", "--python", str(py), "-r", str(tmp_path / "pylock.toml")],
                 [*pip26, "--isolated", "--no-cache-dir", "--python", str(py), "install", "-r",
                  str(tmp_path / "pylock.toml")],
                 [sys.executable, "-m", "pip", "--isolated", "--no-cache-dir", "--python", str(py), "install",
                  "--require-hashes", "-r", str(tmp_path / "requirements.txt")]):
        r = run(*argv)
        assert r.returncode != 0, argv
        assert "hash" in (r.stdout + r.stderr).lower(), r.stdout + r.stderr
    assert "filelock" not in installed(py)


def test_pylock_output_must_be_named_as_pep751_says(project: Path, tmp_path: Path) -> None:
    code, out = cli("export", "-p", str(project), "--format", "pylock", "-o", str(tmp_path / "lock.toml"))
    assert code == 2
    assert out == (f"error: -o {tmp_path / 'lock.toml'}: PEP 751 requires the name pylock.toml or pylock.<name>.toml "
                   "(pip and uv read it as a lock only by that name) — e.g. -o pylock.toml\n")
    assert cli("export", "-p", str(project), "--format", "pylock", "-o", str(tmp_path / "pylock.gpu.toml"))[0] == 0


# ---------------------------------------------------------------- requirements.txt


def test_requirements_text(project: Path, index: LocalIndex) -> None:
    code, out = cli("export", "-p", str(project), "--format", "requirements")
    assert code == 0
    lock, t = _lock_and_target(project)
    w = {p.name: p.wheels[0] for p in t.packages}
    u = index.index_url
    assert out == (
        "# Generated by `tritonlock export --format requirements --target host` from triton-env.lock — do not edit; "
        "re-export instead.\n"
        f"# Target 'host': torch 2.6.0 (cu126) + triton 3.2.0 on Python {PY}, linux/x86_64.\n"
        "--no-index\n"
        f"# filelock 3.16.1 from {u('simple')}\n"
        f"filelock @ {w['filelock'].url} \\\n    --hash=sha256:{w['filelock'].sha256}\n"
        f"# nvidia-cuda-runtime-cu12 12.6.77 from {u('simple')}\n"
        f"nvidia-cuda-runtime-cu12 @ {w['nvidia-cuda-runtime-cu12'].url} \\\n"
        f"    --hash=sha256:{w['nvidia-cuda-runtime-cu12'].sha256}\n"
        f"# torch 2.6.0+cu126 from {u('whl/cu126')}\n"
        f"torch @ {w['torch'].url} \\\n    --hash=sha256:{w['torch'].sha256}\n"
        f"# triton 3.2.0 from {u('whl/cu126')}\n"
        f"triton @ {w['triton'].url} \\\n    --hash=sha256:{w['triton'].sha256}\n")


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_requirements_install_with_require_hashes(project: Path, index: LocalIndex, tmp_path: Path,
                                                  installer: str) -> None:
    reqs = tmp_path / "requirements.txt"
    assert cli("export", "-p", str(project), "--format", "requirements", "-o", str(reqs))[0] == 0
    py = new_venv(tmp_path / "venv")
    index.requests.clear()
    argv = ([sys.executable, "-m", "pip", "--isolated", "--no-cache-dir", "--python", str(py), "install"]
            if installer == "pip" else [uv_bin(), "pip", "install", "--python", str(py)])
    r = run(*argv, "--require-hashes", "-r", str(reqs))
    assert r.returncode == 0, r.stdout + r.stderr
    assert {k: v for k, v in installed(py).items() if k in LOCKED} == LOCKED
    assert all("/_files/" in p for p in index.requests), index.requests  # files only: no index page was read


def test_requirements_picks_the_wheel_for_the_target(index: LocalIndex) -> None:
    lock = make_lock(index)
    t = lock.targets[0]
    others = tuple(p for p in t.packages if p.name != "filelock")
    many = replace(next(p for p in t.packages if p.name == "filelock"), wheels=tuple(
        Wheel(name=f"filelock-3.16.1-{tag}.whl", url=f"https://files.example/filelock-3.16.1-{tag}.whl",
              sha256=c * 64, size=1)
        for tag, c in (("cp312-cp312-manylinux_2_28_x86_64", "a"), ("cp311-cp311-manylinux_2_28_x86_64", "b"),
                       ("cp312-cp312-win_amd64", "c"))))
    t312 = replace(t, selection=replace(t.selection, python="3.12"), packages=(many, *others))
    assert "filelock-3.16.1-cp312-cp312-manylinux_2_28_x86_64.whl --hash=sha256:" + "a" * 64 in \
        ex.requirements(lock, t312, wrap=False)
    t310 = replace(t312, selection=replace(t.selection, python="3.10"))
    with pytest.raises(ex.ExportError) as err:
        ex.requirements(lock, t310)
    assert str(err.value) == (
        "target 'host': no file fits Python 3.10 on linux/x86_64 for filelock 3.16.1 "
        "(filelock-3.16.1-cp312-cp312-manylinux_2_28_x86_64.whl, filelock-3.16.1-cp311-cp311-manylinux_2_28_x86_64.whl, "
        "filelock-3.16.1-cp312-cp312-win_amd64.whl) — re-resolve for this target with `tritonlock resolve --upgrade`")
    old_glibc = replace(t312, selection=replace(t312.selection, target=replace(t.selection.target, glibc="2.17")))
    with pytest.raises(ex.ExportError, match="no file fits Python 3.12 on linux/x86_64 for filelock"):
        ex.requirements(lock, old_glibc)


# ---------------------------------------------------------------- Dockerfile


INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER",
                "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}


def parse_dockerfile(text: str) -> tuple[dict[str, str], list[tuple[str, str, list[str]]]]:
    """(parser directives, [(INSTRUCTION, arguments, heredoc body lines)]), as BuildKit's frontend reads them."""
    lines = text.split("\n")
    assert lines[-1] == "", "ends with a newline"
    directives: dict[str, str] = {}
    out: list[tuple[str, str, list[str]]] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        m = re.match(r"#\s*(syntax|escape|check)\s*=\s*(\S+)$", line)
        if m and not out and not any(x for x in lines[:i] if not x.startswith("#")):
            directives[m[1]] = m[2]
        if not line or line.startswith("#"):
            i += 1
            continue
        while line.endswith("\\"):
            i += 1
            nxt = lines[i].strip()
            line = line[:-1].rstrip() + ("" if nxt.startswith("#") else " " + nxt)
        instr, _, args = line.partition(" ")
        assert instr.upper() in INSTRUCTIONS and instr == instr.upper(), f"line {i + 1}: unknown instruction {instr}"
        assert args.strip(), f"line {i + 1}: {instr} without arguments"
        body: list[str] = []
        for delim in re.findall(r"<<-?(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1", args):
            i += 1
            while lines[i] != delim[1]:
                body.append(lines[i])
                i += 1
        out.append((instr, args, body))
        i += 1
    return directives, out


def check_dockerfile(text: str) -> dict[str, object]:
    """Every instruction valid and consistent; returns the facts the tests compare with the lock."""
    directives, instrs = parse_dockerfile(text)
    assert directives == {}  # no heredocs: plain instructions that every builder reads (docker, podman 4, buildah)
    stages: list[str] = []
    images: list[str] = []
    args_global: dict[str, str] = {}
    args_stage: set[str] = set()
    facts: dict[str, object] = {"heredocs": [], "context": []}
    for instr, args, body in instrs:
        assert not body, "no heredocs"
        if instr == "ARG" and not stages:
            name, _, default = args.partition("=")
            args_global[name] = default
            continue
        if instr == "FROM":
            m = re.fullmatch(r"(?:--platform=(\S+) )?(\S+)(?: AS (\w+))?", args)
            assert m, args
            assert m[1] in (None, "linux/amd64", "linux/arm64")
            image = re.sub(r"\$\{(\w+)\}", lambda v: args_global[v[1]], m[2])  # ARGs before FROM: their defaults
            assert re.fullmatch(r"[a-z0-9./-]+:[A-Za-z0-9._-]+", image), f"image {image} has no explicit tag"
            images.append(image)
            stages.append(m[3] or f"#{len(stages)}")
            args_stage = set()
            continue
        assert stages, f"{instr} before FROM"
        if instr == "ARG":
            assert args in args_global, f"ARG {args} is not declared before the first FROM"
            args_stage.add(args)
        if instr == "COPY":
            m = re.match(r"--from=(\w+) ", args)
            if m:
                assert m[1] in stages[:-1], f"COPY --from={m[1]}: no earlier stage of that name"
            else:
                facts["context"].append(args.split()[:-1])  # type: ignore[attr-defined]
        if instr in ("ENV", "RUN"):
            if instr == "ENV":
                assert all(re.fullmatch(r"[A-Z_]+=\S+", kv) for kv in args.split()), args
            for var in re.findall(r"\$\{?([A-Z_]+)", args):
                assert var in args_stage or var == "PATH", f"{instr} uses ${var}, not declared with ARG in this stage"
        if instr == "CMD":
            facts["cmd"] = json.loads(args)
    facts["images"], facts["stages"], facts["args"] = images, stages, args_global
    return facts


@pytest.mark.parametrize(("backend", "build", "final", "gpu"), [
    ("cu126", "nvidia/cuda:12.6.3-base-ubuntu22.04", "nvidia/cuda:12.6.3-runtime-ubuntu22.04", True),
    ("cu130", "nvidia/cuda:13.0.2-base-ubuntu22.04", "nvidia/cuda:13.0.2-runtime-ubuntu22.04", True),
    ("cu131", "nvidia/cuda:13.1.0-base-ubuntu22.04", "nvidia/cuda:13.1.0-runtime-ubuntu22.04", True),
    ("cpu", "ubuntu:22.04", "ubuntu:22.04", False),
])
def test_dockerfile_parses_and_matches_the_lock(index: LocalIndex, backend: str, build: str, final: str,
                                                gpu: bool) -> None:
    lock = make_lock(index, backend=backend)
    t = lock.targets[0]
    text = ex.dockerfile(lock, t)
    facts = check_dockerfile(text)
    assert facts["images"] == [f"ghcr.io/astral-sh/uv:{ex._uv_version()}", build, final]
    assert facts["stages"] == ["uv", "build", "#2"]
    cuda = ex._cuda_of(backend)
    if cuda:  # the base image's CUDA is the lock's backend's
        assert re.match(rf"nvidia/cuda:{re.escape(cuda)}\.\d+-runtime-", final)
    assert facts["context"] == [["tritonlock-image/requirements-host.txt"], ["tritonlock-image/verify"],
                                ["triton-env.lock"]]
    reqs, *runner = ex.image_context(lock, t)
    assert (reqs.path, reqs.in_context) == ("tritonlock-image/requirements-host.txt", True)
    assert reqs.text == ex.requirements(lock, t, glibc="2.35")
    # tritonlock's own runner folder, file for file: nothing in the image imports tritonlock
    assert {f.path: f.text for f in runner} == {
        f"tritonlock-image/verify/{p.relative_to(RUNNER).as_posix()}": p.read_text()
        for p in RUNNER.rglob("*.py") if "__pycache__" not in p.parts}
    assert "tritonlock-image/verify/__main__.py" in {f.path for f in runner}
    assert all(f.in_context for f in runner)
    assert facts["cmd"] == ["python", "/opt/tritonlock/verify", "--backend", backend, "--expect-gpu",
                            "yes" if gpu else "no", "--triton", "3.2.0"]
    assert (f"# Check: docker run --rm {'--gpus all ' if gpu else ''}IMAGE    — runs Triton's reference kernels") in text
    assert f"uv venv /app/.venv --python {PY}" in text and "tritonlock==" not in text
    assert "--require-hashes -r /tmp/requirements.txt" in text


@pytest.mark.parametrize(("backend", "ubuntus"), [
    ("cu118", ("22.04",)), ("cu121", ("22.04",)), ("cu124", ("22.04",)), ("cu126", ("22.04", "24.04")),
    ("cu128", ("22.04", "24.04")), ("cu129", ("22.04", "24.04")), ("cu130", ("22.04", "24.04")),
])
def test_nvidia_cuda_tags_are_the_published_ones(index: LocalIndex, backend: str, ubuntus: tuple[str, ...]) -> None:
    """The tags as NVIDIA's image sources list them (dist/<patch>/ubuntu<release>/, see export.CUDA_IMAGES); a
    CUDA 12.4 lock whose wheels need Ubuntu 24.04 has no nvidia/cuda image: refused, naming the way out."""
    cuda = ex._cuda_of(backend)
    assert cuda is not None and ex.CUDA_IMAGES[cuda][1] == ubuntus
    lock = make_lock(index, backend=backend)
    build, final, ubuntu = ex.base_images(lock.targets[0])
    assert (build, final, ubuntu) == (f"nvidia/cuda:{ex.CUDA_IMAGES[cuda][0]}-base-ubuntu22.04",
                                      f"nvidia/cuda:{ex.CUDA_IMAGES[cuda][0]}-runtime-ubuntu22.04", "22.04")


def test_a_cpu_target_with_pypis_cuda_build_gets_a_plain_image(index: LocalIndex) -> None:
    """No driver on the target: PyPI's CUDA torch runs on the CPU there, so no nvidia/cuda base and no --gpus."""
    lock = make_lock(index, backend="cu126")
    t = lock.targets[0]
    cpu = replace(t, selection=replace(t.selection, target=replace(t.selection.target, driver=None, cuda=None,
                                                                   gpus=())))
    facts = check_dockerfile(ex.dockerfile(lock, cpu))
    assert facts["images"][1:] == ["ubuntu:22.04", "ubuntu:22.04"] and "no" in facts["cmd"]  # type: ignore[index]


def test_a_lock_of_files_on_this_disk_gives_no_dockerfile(index: LocalIndex, tmp_path: Path) -> None:
    lock = make_lock(index)
    t = lock.targets[0]
    p = t.packages[0]
    local = replace(p, wheels=tuple(replace(w, url=f"file://{tmp_path}/{w.name}") for w in p.wheels))
    t_local = replace(t, packages=(local, *t.packages[1:]))
    with pytest.raises(ex.ExportError) as err:
        ex.dockerfile(lock, t_local)
    assert str(err.value).startswith(f"target 'host': {len(local.wheels)} locked file(s) are on this machine's disk "
                                     f"(file://{tmp_path}/")
    assert "an image build cannot fetch them — lock from an index the build can reach" in str(err.value)
    assert ex.image_warnings(lock, t) == [
        "warning: target 'host' has files on an index on this machine (127.0.0.1): the image builds only here, "
        "with the host's network"]
    newer = replace(t, selection=replace(t.selection, backend="cu139"))
    assert "does not know nvidia/cuda's image for CUDA 13.9" in ex.image_warnings(lock, newer)[-1]


def test_dockerfile_picks_ubuntu_by_the_wheels_glibc(index: LocalIndex) -> None:
    lock = make_lock(index)
    t = lock.targets[0]

    def with_tag(tag: str) -> LockedTarget:
        p = next(p for p in t.packages if p.name == "filelock")
        w = replace(p.wheels[0], name=f"filelock-3.16.1-py3-none-{tag}.whl",
                    url=f"https://files.example/filelock-3.16.1-py3-none-{tag}.whl")
        return replace(t, packages=(replace(p, wheels=(w,)), *(q for q in t.packages if q is not p)))

    assert ex.base_images(with_tag("manylinux_2_39_x86_64"))[1:] == ("nvidia/cuda:12.6.3-runtime-ubuntu24.04", "24.04")
    cu124 = replace(with_tag("manylinux_2_39_x86_64"), selection=replace(t.selection, backend="cu124"))
    with pytest.raises(ex.ExportError, match="nvidia/cuda publishes CUDA 12.4 images only for Ubuntu 22.04"):
        ex.base_images(cu124)
    with pytest.raises(ex.ExportError) as err:
        ex.base_images(with_tag("manylinux_2_41_x86_64"))
    assert str(err.value) == ("target 'host': some wheels need a glibc newer than Ubuntu 24.04's 2.39 — no nvidia/cuda "
                              "image can run them")
    win = replace(t, selection=replace(t.selection, target=replace(t.selection.target, os="windows")))
    with pytest.raises(ex.ExportError, match="target 'host' is windows/x86_64: a Dockerfile needs a linux x86_64 or "
                                             "aarch64 target — pick one with --target"):
        ex.dockerfile(lock, win)


def test_devcontainer(project: Path) -> None:
    code, out = cli("export", "-p", str(project), "--format", "devcontainer")
    assert code == 0, out
    d = project / ".devcontainer"
    ctx = project / "tritonlock-image"
    assert out == ("warning: target 'host' has files on an index on this machine (127.0.0.1): the image builds only "
                   "here, with the host's network\n"
                   f"wrote {ctx}/ ({1 + len(runner_files())} files: requirements-host.txt, verify/), which the "
                   "Dockerfile copies from its build context (the project)\n"
                   f"wrote {d / 'devcontainer.json'}, {d / 'Dockerfile'}\n")
    assert sorted(str(p.relative_to(ctx)) for p in ctx.rglob("*") if p.is_file()) == sorted(
        ["requirements-host.txt", *(f"verify/{rel}" for rel, _ in runner_files())])  # the count said is the files
    doc = json.loads((d / "devcontainer.json").read_text())
    assert doc == {
        "name": "tritonlock host", "build": {"dockerfile": "Dockerfile", "context": ".."},
        "runArgs": ["--gpus", "all"], "hostRequirements": {"gpu": True}, "containerEnv": {"VIRTUAL_ENV": "/app/.venv"},
        "remoteEnv": {"PATH": "/app/.venv/bin:${containerEnv:PATH}"},
        "customizations": {"vscode": {"extensions": ["ms-python.python"],
                                      "settings": {"python.defaultInterpreterPath": "/app/.venv/bin/python"}},
                           "tritonlock": {"generated-by": "tritonlock export --format devcontainer", "target": "host"}}}
    lock, t = _lock_and_target(project)
    assert (d / "Dockerfile").read_text() == ex.dockerfile(lock, t)
    check_dockerfile((d / "Dockerfile").read_text())
    # the build context ("..") is the project: the files the Dockerfile copies from it are there
    facts = check_dockerfile((d / "Dockerfile").read_text())
    assert all((project / f).exists() for args in facts["context"] for f in args)  # type: ignore[attr-defined]


def test_devcontainer_for_a_cpu_target_asks_for_no_gpu(index: LocalIndex) -> None:
    lock = make_lock(index, backend="cpu")
    doc = json.loads(ex.devcontainer(lock, lock.targets[0])[0].text)
    assert "runArgs" not in doc and "hostRequirements" not in doc


# ---------------------------------------------------------------- choosing the target


def test_choose_target(index: LocalIndex) -> None:
    one = make_lock(index)
    a100 = replace(one.targets[0], selection=replace(one.targets[0].selection, target=replace(
        one.targets[0].selection.target, name="a100")))
    bad = LockedTarget(selection=Selection(target=replace(a100.selection.target, name="old"), ok=False,
                                           conflict=Conflict(target="old", message="torch >= 2.6 needs driver >= 525")))
    two = replace(one, targets=(one.targets[0], a100, bad))
    assert ex.choose_target(one).name == "host"
    assert ex.choose_target(two, "a100").name == "a100"
    assert ex.choose_target(two).name == "host"  # no host profile: the target named "host"
    with pytest.raises(UnknownTargetError) as err:
        ex.choose_target(two, "h100")
    assert str(err.value) == ("triton-env.lock has no target 'h100' (it has: host, a100, old) — pass one of those to "
                              "--target, or leave --target out to use the one that fits this machine")
    with pytest.raises(ex.ExportError) as err:
        ex.choose_target(replace(two, targets=(a100, bad)))
    assert str(err.value) == ("triton-env.lock has several targets (a100, old) and none fits this host — pick one with "
                              "--target")
    with pytest.raises(ex.ExportError) as err:
        ex.choose_target(two, "old")
    assert str(err.value) == ("triton-env.lock: target 'old' cannot be exported: torch >= 2.6 needs driver >= 525 — fix "
                              "triton-env.toml and run `tritonlock resolve`")


def test_cli_export_stdout_matches_the_function(project: Path) -> None:
    lock, t = _lock_and_target(project)
    for fmt, fn in (("pylock", ex.pylock), ("requirements", ex.requirements), ("dockerfile", ex.dockerfile)):
        r = CliRunner().invoke(main, ["export", "-p", str(project), "--format", fmt, "--target", "host"])
        assert (r.exit_code, r.stdout) == (0, fn(lock, t))  # notes go to stderr
    code, out = cli("export", "-p", str(project), "--format", "conda")  # (wheelhouse is a format now)
    assert code == 2 and "Invalid value for '--format'" in out
    code, out = cli("export", "-p", str(project / "nowhere"), "--format", "pylock")
    assert (code, out) == (2, f"error: {project / 'nowhere' / 'triton-env.lock'}: no such file — and there is no "
                              "triton-env.toml beside it either: run `tritonlock init` (it writes triton-env.toml for "
                              "this machine), then `tritonlock resolve`\n")


# ---------------------------------------------------------------- files the user wrote are theirs


def test_no_export_replaces_a_file_tritonlock_did_not_write_without_force(project: Path) -> None:
    """Each format, pointed at a hand-written file: exit 2, nothing written anywhere; a file tritonlock wrote is
    replaced; --force replaces the user's."""
    from conftest import tree

    hand = "# my own file\n"
    cases = {"pylock": "pylock.toml", "requirements": "requirements.txt", "dockerfile": "Dockerfile",
             "slurm": "verify.sbatch", "k8s": "jobs.yaml"}
    for fmt, name in cases.items():
        out = project / name
        out.write_text(hand)
        extra = ["--image", "ghcr.io/x/y:1"] if fmt == "k8s" else []
        before = tree(project)
        code, text = cli("export", "-p", str(project), "--format", fmt, "-o", str(out), *extra)
        assert code == 2 and f"{out} exists and was not written by tritonlock — nothing was written" in text, text
        assert "--force" in text and tree(project) == before, fmt
        code, text = cli("export", "-p", str(project), "--format", fmt, "-o", str(out), "--force", *extra)
        assert code == 0 and out.read_text() != hand, (fmt, text)
        mine = out.read_text()
        out.write_text(mine.replace("\n", "\n# stale\n", 1))  # tritonlock's own file, older: replaced quietly
        code, text = cli("export", "-p", str(project), "--format", fmt, "-o", str(out), *extra)
        assert code == 0 and out.read_text() == mine, (fmt, text)


def test_no_export_replaces_the_projects_lock_records_or_host_files_even_with_force(project: Path) -> None:
    """tritonlock wrote them, but they are the project's state, not an export's output: every export format (and
    report merge) pointed at the lock, the verify records or a host file is refused, --force or not, naming what the
    file is; nothing is written. (`export --format pixi -o triton-env.lock` replaced the lock, exit 0.)"""
    from conftest import tree
    from tritonlock._files import MARKERS

    (project / "triton-env.verified.toml").write_text(f"# {MARKERS['records']}\n")
    (project / "hosts").mkdir()
    (project / "hosts" / "a100.toml").write_text(f"# {MARKERS['host --save']}\n[[targets]]\nname = \"a100\"\n")
    (project / "hosts" / "b.toml").write_text(f"# {MARKERS['fleet hosts']}\n")
    files = {"triton-env.lock": "a lock", "triton-env.verified.toml": "verify records", "hosts/a100.toml": "a host file",
             "hosts/b.toml": "a host file"}
    formats = {"requirements": [], "dockerfile": [], "slurm": [], "k8s": ["--image", "ghcr.io/x/y:1"],
               "pixi": [], "uv": []}
    before = tree(project)
    for name, kind in files.items():
        out = project / name
        for fmt, extra in formats.items():
            for force in ([], ["--force"]):
                code, text = cli("export", "-p", str(project), "--format", fmt, "-o", str(out), *extra, *force)
                assert code == 2 and (f"\nerror: export --format {fmt}: {out} is {kind} tritonlock wrote — export "
                                      f"--format {fmt} never replaces it, not even with --force; nothing was written; "
                                      "pass another path\n") in "\n" + text, (fmt, text)
        code, text = cli("report", "merge", str(project), "--out", str(out))
        assert code == 2 and f"{out} is {kind} tritonlock wrote — report merge never replaces it" in text, text
    assert tree(project) == before
    # the commands that write them still do
    code, text = cli("host", "--save", str(project / "hosts" / "a100.toml"), "--name", "a100", "--driver", "535.104.05",
                     "--gpus", "A100")
    assert code == 0 and "A100" in (project / "hosts" / "a100.toml").read_text(), text


def test_devcontainer_keeps_a_hand_written_devcontainer(project: Path) -> None:
    from conftest import tree

    d = project / ".devcontainer"
    d.mkdir()
    (d / "devcontainer.json").write_text('{"name": "mine"}\n')
    (d / "Dockerfile").write_text("FROM ubuntu:24.04\n")
    before = tree(project)
    code, out = cli("export", "-p", str(project), "--format", "devcontainer")
    assert code == 2 and tree(project) == before, out  # not even tritonlock-image/ was written
    assert (f"{d / 'devcontainer.json'}, {d / 'Dockerfile'} exist and were not written by tritonlock — nothing was "
            "written") in out
    # a devcontainer tritonlock exported is its own to replace; with --force the user's is replaced too
    assert cli("export", "-p", str(project), "--format", "devcontainer", "--force")[0] == 0
    assert json.loads((d / "devcontainer.json").read_text())["name"] == "tritonlock host"
    code, out = cli("export", "-p", str(project), "--format", "devcontainer")
    assert code == 0, out
    # the build context's files follow the same rule
    (project / "tritonlock-image" / "verify" / "__main__.py").write_text("print('mine')\n")
    code, out = cli("export", "-p", str(project), "--format", "dockerfile")
    assert code == 2 and "tritonlock-image/verify/__main__.py exists and was not written by tritonlock" in out


def test_a_failing_export_leaves_nothing_behind(project: Path) -> None:
    from conftest import tree

    before = tree(project)
    code, out = cli("export", "-p", str(project), "--format", "dockerfile", "-o", str(project / "missing" / "Dockerfile"))
    assert code == 2 and out.endswith(f"error: export --format dockerfile: {project / 'missing'} does not exist (for "
                                      f"{project / 'missing' / 'Dockerfile'}) — create it first or fix the path; "
                                      "nothing was written\n"), out
    assert tree(project) == before  # tritonlock-image/ was written before the error, once


def test_devcontainer_makes_its_o_directory_but_not_the_folders_above(project: Path) -> None:
    """-o DIR for a devcontainer is made when missing, as the default .devcontainer/ is (the documented default
    named with -o works the same); a missing folder above it, or a file in its place, is bad input naming it."""
    for out_dir in (project / "nothere", project / ".devcontainer"):
        code, out = cli("export", "-p", str(project), "--format", "devcontainer", "-o", str(out_dir))
        assert code == 0, out
        assert out.endswith(f"wrote {out_dir / 'devcontainer.json'}, {out_dir / 'Dockerfile'}\n"), out
        assert sorted(p.name for p in out_dir.iterdir()) == ["Dockerfile", "devcontainer.json"]
    before = sorted(p.name for p in project.iterdir())
    code, out = cli("export", "-p", str(project), "--format", "devcontainer", "-o", str(project / "a" / "b"))
    assert (code, out.splitlines()[-1]) == (2, f"error: export --format devcontainer: {project / 'a'} does not exist "
                                               "— create it first or fix the path (the directory b itself is made when "
                                               "missing); nothing was written")
    code, out = cli("export", "-p", str(project), "--format", "devcontainer", "-o", str(project / "triton-env.toml"))
    assert (code, out.splitlines()[-1]) == (2, f"error: export --format devcontainer: -o {project / 'triton-env.toml'} "
                                               "is a file, not a directory — pass a directory (it is made when "
                                               "missing); nothing was written")
    assert sorted(p.name for p in project.iterdir()) == before
    (project / "plain").write_text("x")
    code, out = cli("export", "-p", str(project), "--format", "requirements", "-o",
                    str(project / "plain" / "req.txt"))
    assert (code, out.splitlines()[-1]) == (2, f"error: export --format requirements: {project / 'plain'} is not a "
                                               f"directory (for {project / 'plain' / 'req.txt'}) — create it first or "
                                               "fix the path; nothing was written")


def test_the_dockerfile_export_says_its_build_context_in_one_line(project: Path) -> None:
    r = CliRunner().invoke(main, ["export", "-p", str(project), "--format", "dockerfile"])
    assert r.exit_code == 0, r.output
    ctx = project / "tritonlock-image"
    n = sum(1 for p in ctx.rglob("*") if p.is_file())
    assert n == 1 + len(runner_files())
    assert [x for x in r.stderr.splitlines() if x.startswith("wrote")] == [
        f"wrote {ctx}/ ({n} files: requirements-host.txt, verify/), which the Dockerfile copies from its build "
        "context (the project)"]


def test_export_writes_a_locks_only_target_wherever_it_runs(project: Path) -> None:
    """An image or a job is for its target's machine, not this one: the only target is exported with exit 0 even
    where it does not fit (here: an H100 box on driver 560); of several, export needs --target unless one fits this
    machine or is named "host" (exit 2) — as README's exit codes say."""
    from tritonlock.environment.sync import pick_target
    from tritonlock.errors import TritonlockError
    from tritonlock.models import HostProfile

    lock, t = _lock_and_target(project)
    here = HostProfile(os="linux", arch="x86_64", glibc="2.35", python=PY)  # a machine without a GPU or a driver
    with pytest.raises(TritonlockError):
        pick_target(lock, here)  # the claim: the target does not fit a machine like this one
    code, out = cli("export", "-p", str(project), "--format", "pylock", "-o", str(project / "pylock.toml"))
    assert code == 0 and (project / "pylock.toml").is_file(), out
    named = [replace(t, selection=replace(t.selection, target=replace(t.selection.target, name=n))) for n in ("a", "b")]
    lockfile.write_lock(replace(lock, targets=tuple(named)), project / "triton-env.lock")
    code, out = cli("export", "-p", str(project), "--format", "pylock")
    assert (code, out.splitlines()[-1]) == (2, f"error: {project / 'triton-env.lock'} has several targets (a, b) and "
                                               "none fits this host — pick one with --target")
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    assert ("a lock with no target for this machine (`sync`, `verify --record`; `export` only where the lock has "
            "several targets and `--target` names none)") in " ".join(readme.split())
