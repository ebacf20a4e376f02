"""Shared fixtures: a real local package index with a fake torch family, and project directories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pkgindex import LocalIndex  # noqa: E402

# A small but real dependency graph: torch needs filelock + a CUDA runtime + triton (exact pin),
# triton needs nothing; the extras the tests ask for need their own dependencies.
TORCH_VERSIONS = ("2.6.0", "2.7.1")
CUDA_RUNTIME = {"cu118": ("nvidia-cuda-runtime-cu11", "11.8.89"), "cu124": ("nvidia-cuda-runtime-cu12", "12.4.127"),
                "cu126": ("nvidia-cuda-runtime-cu12", "12.6.77"), "cu128": ("nvidia-cuda-runtime-cu12", "12.8.90")}
LINUX_TAG = "py3-none-manylinux_2_17_x86_64"


def _torch_module(version: str, backend: str) -> dict[str, str]:
    cuda = None if backend == "cpu" else f"{backend[2:-1]}.{backend[-1]}"
    return {
        "torch/__init__.py": f"__version__ = {version!r}\nfrom torch import version, cuda\n",
        "torch/version.py": f"__version__ = {version!r}\ncuda = {cuda!r}\n",
        "torch/cuda.py": "def is_available():\n    return False\n",
    }


def populate(idx: LocalIndex) -> None:
    from tritonlock.compat.matrix import load_matrix

    m = load_matrix()
    tritons = set()
    for tv in TORCH_VERSIONS:
        rel = m.torch_release(tv)
        assert rel is not None and rel.triton, f"the matrix must know torch {tv}"
        tritons.add(rel.triton)
        for var in rel.variants:
            if "linux_x86_64" not in var.platforms or var.backend not in CUDA_RUNTIME | {"cpu": None}:
                continue
            # As on PyTorch's index: CUDA builds require their triton and the backend's index serves it; the CPU
            # builds require no triton and the cpu index has none (compat/meta.toml triton_from_default).
            reqs = ["filelock>=3.0"]
            if var.backend in CUDA_RUNTIME:
                rt, rtv = CUDA_RUNTIME[var.backend]
                reqs += [f"{rt}=={rtv}", f"triton=={rel.triton}; platform_system == 'Linux'"]
                idx.add(f"whl/{var.backend}", "triton", rel.triton, tag=LINUX_TAG)
            version = f"{tv}+{var.backend}"
            idx.add(f"whl/{var.backend}", "torch", version, requires=tuple(reqs), tag=LINUX_TAG,
                    modules=_torch_module(version, var.backend))
            idx.add(f"whl/{var.backend}", "filelock", "99.0")  # decoy: must never be taken from here
    for backend, (rt, rtv) in CUDA_RUNTIME.items():
        idx.add("simple", rt, rtv, tag=LINUX_TAG)
    idx.add("simple", "filelock", "3.16.1")
    idx.add("simple", "filelock", "3.12.0")
    idx.add("simple", "numpy", "1.26.4", tag=LINUX_TAG)
    idx.add("simple", "einops", "0.8.0", requires=("typing-extensions>=4",))
    idx.add("simple", "typing-extensions", "4.12.2")
    idx.add("simple", "torch", "2.6.0", tag=LINUX_TAG)  # decoy: the default index's torch must lose
    # (flashinfer-python's shape: no GPU code in its wheel, its kernels built when first called — compat/packages.toml)
    idx.add("simple", "flashinfer-python", "0.6.6", modules={"flashinfer/__init__.py": ""})
    for t in tritons:
        idx.add("simple", "triton", t, tag=LINUX_TAG)


# Real torch for verify and doctor, got the way a user gets it: from PyTorch's CPU index when it answers, else what
# pip's configuration names (the default index — PyPI, a mirror —, its extra indexes and find-links folders, where a
# CPU wheel may wait), with the triton that torch pins — read from the installed torch's METADATA, or, for a CPU
# build (which pins none), the one its CUDA builds pin (compat/torch.toml: what tritonlock itself locks for a CPU
# target). Triton's interpreter runs the kernels on the CPU. uv installs it: its downloads run in parallel (PyPI's
# Linux torch is a CUDA build, 4.7 GB installed, about 20 wheels), and with a cache of its own that it removes after,
# so no machine cache (pip's, uv's) fills up with it.
TORCH = "2.13.0"


def _uv_install(python: Path, index: str | None, *reqs: str) -> subprocess.CompletedProcess[str]:
    """`uv pip install` into the venv from `index`, or, with None, from where pip's configuration points (as pip
    would: the default index, extra indexes and find-links folders, credentials and TLS settings alike)."""
    from tritonlock._subprocess import uv_bin
    from tritonlock.lock import index as pipconf

    args = [uv_bin(), "pip", "install", "-q", "--no-config", "--no-cache", "--python", str(python)]
    if index is not None:
        env = pipconf.uv_env(named={}, default=index)
    else:
        env = pipconf.uv_env(named={}, default=pipconf.default_index())
        for setting, flag in (("extra-index-url", "--extra-index-url"), ("find-links", "--find-links")):
            found = pipconf.pip_setting(setting)
            args += [f"{flag}={value}" for value in (found[0].split() if found else ())]
        args.append("--index-strategy=unsafe-best-match")  # (pip takes the best version from every source)
    full = {k: v for k, v in os.environ.items() if k not in pipconf.UV_UNSET}
    return subprocess.run([*args, *reqs], capture_output=True, text=True, env={**full, **env})


def _triton_pin(python: Path) -> str | None:
    """The exact triton the installed torch requires here (its METADATA), or None (a CPU build pins none)."""
    code = ("import importlib.metadata as m, json, sys\nfrom packaging.requirements import Requirement\n"
            "out = None\nfor r in m.requires('torch') or []:\n    q = Requirement(r)\n"
            "    if q.name == 'triton' and (q.marker is None or q.marker.evaluate({'extra': ''})):\n"
            "        out = next((s.version for s in q.specifier if s.operator in ('==', '===')), None)\n"
            "print(json.dumps(out))\n")
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:  # (no packaging in the venv: pip vendors one)
        proc = subprocess.run([str(python), "-c", code.replace("from packaging.", "from pip._vendor.packaging.")],
                              capture_output=True, text=True, check=True)
    import json

    pin: str | None = json.loads(proc.stdout)
    return pin


def _say(request: pytest.FixtureRequest, line: str) -> None:
    """One line on the terminal, past pytest's output capture (also with -q)."""
    import contextlib

    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        reporter.ensure_newline()
        reporter.write_line(f"real torch for verify and doctor: {line}")


@pytest.fixture(scope="session")
def real_torch_python(request: pytest.FixtureRequest) -> str:
    """A venv with torch and the triton it pins, kept in pytest's cache keyed by Python and torch version; which
    source it came from is said once per session (and in the test report's header)."""
    root = Path(request.config.cache.mkdir(f"verify-venv-py{sys.version_info[0]}{sys.version_info[1]}-torch{TORCH}"))
    python = root / "venv" / "bin" / "python"
    done = root / "complete"
    if done.exists() and python.exists():
        _say(request, done.read_text().strip())
        return str(python)
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.lock.index import unreachable

    matrix = load_matrix()
    cpu_index = matrix.index_url("cpu")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(root / "venv")], check=True)
    started = time.monotonic()
    if unreachable(cpu_index, "torch") is None:
        source, index = f"torch=={TORCH} from PyTorch's CPU index ({cpu_index})", cpu_index
    else:
        source, index = (f"torch=={TORCH} from the default index (pip's configuration; PyTorch's CPU index did not "
                         "answer)"), None
    proc = _uv_install(python, index, f"torch=={TORCH}")
    if proc.returncode != 0:
        pytest.fail(f"cannot install {source}: {proc.stderr[-800:]}")
    pin = _triton_pin(python)
    if pin is not None:
        why = f"triton {pin}, which its METADATA pins"
    else:
        release = matrix.torch_release(TORCH)
        assert release is not None and release.triton, f"the matrix must know torch {TORCH}'s triton"
        pin = release.triton
        why = f"triton {pin}, which torch {TORCH}'s CUDA builds pin (this build pins none; compat/torch.toml)"
    proc = _uv_install(python, None, f"triton=={pin}", "numpy")  # (PyTorch's CPU index has no triton)
    if proc.returncode != 0:
        pytest.fail(f"cannot install triton=={pin} beside {source}: {proc.stderr[-800:]}")
    said = f"{source}, with {why} (installed in {time.monotonic() - started:.0f} s)"
    done.write_text(said + "\n")
    _say(request, said)
    return str(python)


def pytest_report_header(config: pytest.Config) -> str | None:
    """Which torch the real-torch tests use, when a session already made its venv."""
    cache = getattr(config, "cache", None)
    if cache is None:
        return None
    done = Path(cache.mkdir(f"verify-venv-py{sys.version_info[0]}{sys.version_info[1]}-torch{TORCH}")) / "complete"
    return f"real torch for verify and doctor: {done.read_text().strip()}" if done.exists() else None


@pytest.fixture(scope="session")
def real_triton(real_torch_python: str) -> str:
    """The triton version in the real-torch venv (whatever torch pinned, not a number written here)."""
    return subprocess.run([real_torch_python, "-c", "import importlib.metadata as m; print(m.version('triton'))"],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="session")
def no_numpy_python(real_torch_python: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The real torch + triton venv without numpy (what a lock without numpy gave before): a new venv whose
    site-packages links to everything in the cached one except numpy."""
    venv = tmp_path_factory.mktemp("no-numpy") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    src = Path(subprocess.run([real_torch_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip())
    dst = next((venv / "lib").glob("python3*/site-packages"))
    for entry in src.iterdir():
        if not entry.name.lower().startswith("numpy"):
            (dst / entry.name).symlink_to(entry)
    return str(venv / "bin" / "python")


@pytest.fixture(scope="session")
def local_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    idx = LocalIndex(tmp_path_factory.mktemp("index"))
    populate(idx)
    idx.start()
    yield idx
    idx.stop()


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test sees the developer's overrides or picks up their uv configuration; what tritonlock keeps per file
    sha256 (binary facts, checked METADATA) goes to a folder of the test's own, not the user's cache."""
    for k in list(os.environ):
        if k.startswith("TRITONLOCK_"):
            monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("TRITONLOCK_NATIVE_CACHE", str(tmp_path_factory.mktemp("tritonlock-cache")))
    monkeypatch.setenv("UV_PYTHON_DOWNLOADS", "never")
    monkeypatch.setenv("UV_NO_PROGRESS", "1")


def tree(root: Path) -> dict[str, str]:
    """Every file and link under root (byte-code caches aside) → its sha256 or link target: "the same files"."""
    import hashlib

    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        if "__pycache__" in p.parts:
            continue
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        elif p.is_dir():
            out[rel] = "dir"
    return out


def real_stack_index(tmp: Path, python: str, backend: str) -> LocalIndex:
    """A local index whose torch 2.13.0 closure is exactly what the real torch venv holds (same versions, the same
    build: the CPU build on a CPU index, or the CUDA build — PyPI's — with the triton it pins on the default index),
    so `sync --system-site-packages` on it installs nothing and verify runs the real torch + triton."""
    out = subprocess.run([python, "-m", "pip", "list", "--format=json"], capture_output=True, text=True, check=True)
    have = {d["name"].lower(): d["version"] for d in json.loads(out.stdout)}
    idx = LocalIndex(tmp / "index")
    deps = sorted(f"{n}=={v}" for n, v in have.items() if n not in ("torch", "triton", "pip", "numpy"))
    if backend == "cpu":
        idx.add("whl/cpu", "torch", have["torch"], requires=tuple(deps), tag="py3-none-manylinux_2_17_x86_64")
    else:  # as the default index serves it: the CUDA build, which pins its triton
        idx.add("simple", "torch", have["torch"], requires=(*deps, f"triton=={have['triton']}"),
                tag="py3-none-manylinux_2_17_x86_64")
    for name, version in have.items():
        if name not in ("torch", "pip") and (name != "triton" or backend != "cpu"):
            idx.add("simple", name, version)
    idx.start()
    return idx


def write_intent(root: Path, idx: LocalIndex, body: str) -> Path:
    """An intent whose indexes point at the local test index."""
    root.mkdir(parents=True, exist_ok=True)
    text = body + f'\n[indexes]\ntorch = "{idx.url}/whl/{{backend}}"\ndefault = "{idx.index_url("simple")}"\n'
    (root / "triton-env.toml").write_text(text, encoding="utf-8")
    return root / "triton-env.toml"


def write_default_index_intent(root: Path, idx: LocalIndex, extra: str = "") -> Path:
    """torch 2.6.0 taken from the default index (the local "simple" one): [indexes].torch = "default"."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "triton-env.toml").write_text(
        f'[environment]\npython = "3.11"\ntorch = "==2.6.0"\n[indexes]\ntorch = "default"\n'
        f'default = "{idx.index_url("simple")}"\n{extra}', encoding="utf-8")
    return root / "triton-env.toml"


def need_system_packages(what: str) -> None:
    """A test that needs Debian packages (Slurm, podman) which are not installed: CI — `.ci/run`, which installs
    them and sets CI=1 — fails, so the hard case always runs there; elsewhere (a developer running the README's
    test command on a fresh machine) it is skipped, with the command that installs them."""
    if os.environ.get("CI"):
        pytest.fail(what)
    pytest.skip(what)


@pytest.fixture(scope="session")
def real_torch_backend(real_torch_python: str) -> str:
    """The real-torch venv's build as a lock backend: "cpu" (PyTorch's CPU index, or a CPU wheel pip found), or
    "cu130" and the like (PyPI's Linux torch is a CUDA build; without a GPU it runs on the CPU just the same)."""
    cuda = subprocess.run([real_torch_python, "-c", "import torch; print(torch.version.cuda or '')"], check=True,
                          capture_output=True, text=True).stdout.strip()
    return "cu" + cuda.replace(".", "") if cuda else "cpu"


@pytest.fixture(scope="session")
def real_torch_version(real_torch_python: str) -> str:
    """torch.__version__ in the real-torch venv, with its build label: "2.13.0+cpu", or "2.13.0+cu130" for the CUDA
    build the default index ships — what verify and doctor name, so a test expects it from the venv it really got."""
    return subprocess.run([real_torch_python, "-c", "import torch; print(torch.__version__)"], check=True,
                          capture_output=True, text=True).stdout.strip()


def pytest_sessionstart(session: pytest.Session) -> None:
    """A suite started as a background job (`cmd &` in a script, a CI runner) inherits SIGINT ignored, and so would
    every child: the Ctrl-C tests would then wait for a KeyboardInterrupt that never comes. Ctrl-C is given back its
    default meaning here, so the children the tests start see it as a terminal's foreground group does."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
