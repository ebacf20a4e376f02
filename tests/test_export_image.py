"""The exported Dockerfile builds for real: podman (`--isolation chroot`) with local base images this test makes —
no registry is reachable — and the image's venv and verify runner work together."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import need_system_packages, write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main
from tritonlock.lock.lockfile import read_lock
from tritonlock.verify import runner_files

pytestmark = pytest.mark.slow

BASE = "localhost/tritonlock-test-base:bookworm"  # Debian 12 minbase + python3 (3.11, the lock's Python)
TOOLS = ("podman", "buildah", "debootstrap")


def _sh(*args: str, timeout: float = 900) -> str:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(args)}: {proc.stderr[-2000:]}"
    return proc.stdout


def _debian_mirror() -> str:
    """The apt mirror this machine uses (read from its apt sources, not written here)."""
    for path in sorted(Path("/etc/apt").glob("sources.list.d/*.sources")) + [Path("/etc/apt/sources.list")]:
        text = path.read_text() if path.is_file() else ""
        m = re.search(r"^URIs:\s*(\S+)", text, re.M) or re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+\S+", text, re.M)
        if m and "security" not in m[1]:
            return m[1]
    need_system_packages("no Debian mirror in /etc/apt: the base image is made with debootstrap from it")
    raise AssertionError("unreachable")


def _import_dir(root: Path, tag: str) -> None:
    tar = root.with_suffix(".tar")
    with tarfile.open(tar, "w") as tf:
        for entry in sorted(root.iterdir()):
            tf.add(entry, arcname=entry.name)
    _sh("podman", "import", str(tar), tag)
    tar.unlink()


@pytest.fixture(scope="session")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Build arguments naming local images: a Debian base with Python 3.11, and an image holding only /uv."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        need_system_packages(f"{', '.join(missing)} not installed: `apt-get install -y podman buildah "
                             "debootstrap` (.ci/run does)")
    work = tmp_path_factory.mktemp("images")
    if subprocess.run(["podman", "image", "exists", BASE]).returncode != 0:  # made once, kept by podman
        rootfs = work / "rootfs"
        _sh("debootstrap", "--variant=minbase", "--include=python3", "bookworm", str(rootfs), _debian_mirror(),
            timeout=1800)
        _import_dir(rootfs, BASE)
        shutil.rmtree(rootfs)
    from uv import find_uv_bin

    uv_bin = find_uv_bin()
    uv_tag = f"localhost/tritonlock-test-uv:{_sh(uv_bin, '--version').split()[1]}"
    if subprocess.run(["podman", "image", "exists", uv_tag]).returncode != 0:
        (work / "uv").mkdir()
        shutil.copy2(uv_bin, work / "uv" / "uv")
        _import_dir(work / "uv", uv_tag)
    return {"BASE_IMAGE": BASE, "RUNTIME_IMAGE": BASE, "UV_IMAGE": uv_tag, "PYTHON_PREFERENCE": "only-system"}


@pytest.fixture
def built(tmp_path: Path, local_index: LocalIndex, images: dict[str, str]) -> Iterator[tuple[Path, str, Path]]:
    """(project, image, the image's root filesystem): exported for target a100, built with podman."""
    project = tmp_path / "proj"
    write_intent(project, local_index, '[environment]\npython = "3.11"\ntorch = "==2.6.0"\n'
                                       '[[targets]]\nname = "a100"\ndriver = "550.54.15"\ngpus = ["8.0"]\n')
    for args in (["resolve", "-p", str(project)],
                 ["export", "-p", str(project), "--format", "dockerfile", "--target", "a100", "-o",
                  str(project / "Dockerfile")]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
    run = uuid.uuid4().hex[:12]
    tag = f"localhost/tritonlock-test-image:{run}"
    build_args = [a for k, v in images.items() for a in ("--build-arg", f"{k}={v}")]
    _sh("podman", "build", "--isolation", "chroot", "--pull=never", "--label", f"{LABEL}={run}", *build_args,
        "-t", tag, str(project))
    root = Path(_sh("podman", "image", "mount", tag).strip())
    try:
        yield project, tag, root
    finally:
        subprocess.run(["podman", "image", "unmount", tag], capture_output=True)
        _remove_build(tag, run)


LABEL = "tritonlock-test-build"


def _remove_build(tag: str, run: str) -> None:
    """The image and what its build left behind — the multi-stage build's untagged builder stage (~300 MB a run),
    which carries the build's label too — and nothing else: other images on the machine (other users' dangling
    ones included) are not this test's to remove."""
    subprocess.run(["podman", "rmi", "-f", tag], capture_output=True)
    ours = subprocess.run(["podman", "images", "-a", "-q", "--filter", f"label={LABEL}={run}"], capture_output=True,
                          text=True).stdout.split()
    if ours:
        subprocess.run(["podman", "rmi", "-f", *sorted(set(ours))], capture_output=True)


def test_the_teardown_removes_only_its_own_build(tmp_path: Path, images: dict[str, str]) -> None:
    """It used to run `podman image prune -f`: every dangling image on the machine went with it."""
    foreign_root = tmp_path / "foreign"
    foreign_root.mkdir()
    (foreign_root / "f").write_text(uuid.uuid4().hex)
    tar = tmp_path / "foreign.tar"
    with tarfile.open(tar, "w") as tf:
        tf.add(foreign_root / "f", arcname="f")
    foreign = _sh("podman", "import", str(tar)).strip().splitlines()[-1]  # untagged: a dangling image
    try:
        (tmp_path / "x").write_text("x")
        (tmp_path / "Dockerfile").write_text("ARG UV_IMAGE\nFROM ${UV_IMAGE} AS b\nCOPY x /x\nFROM ${UV_IMAGE}\n"
                                             "COPY --from=b /x /y\n")
        run = uuid.uuid4().hex[:12]
        tag = f"localhost/tritonlock-test-image:{run}"
        _sh("podman", "build", "--isolation", "chroot", "--pull=never", "--label", f"{LABEL}={run}", "--build-arg",
            f"UV_IMAGE={images['UV_IMAGE']}", "-t", tag, str(tmp_path))
        assert _sh("podman", "images", "-a", "-q", "--filter", f"label={LABEL}={run}").split()
        _remove_build(tag, run)
        assert not _sh("podman", "images", "-a", "-q", "--filter", f"label={LABEL}={run}").split()
        assert subprocess.run(["podman", "image", "exists", foreign]).returncode == 0  # not ours: still there
    finally:
        subprocess.run(["podman", "rmi", "-f", foreign], capture_output=True)


def test_exported_dockerfile_builds_the_locked_venv_and_the_runner_runs_in_it(built: tuple[Path, str, Path]) -> None:
    project, tag, root = built
    (target,) = [t for t in read_lock(project / "triton-env.lock").targets if t.name == "a100"]
    site = next((root / "app/.venv/lib").glob("python3*/site-packages"))
    installed = {}
    for d in site.glob("*.dist-info"):
        meta = (d / "METADATA").read_text()
        installed[re.search(r"^Name: (.+)$", meta, re.M)[1].lower()] = re.search(r"^Version: (.+)$", meta, re.M)[1]
    assert installed == {p.name: p.version for p in target.packages}  # exactly the lock: nothing else, no tritonlock
    assert all((root / "opt/tritonlock/verify" / rel).read_text() == text for rel, text in runner_files())
    cmd = json.loads(_sh("podman", "image", "inspect", "--format", "{{json .Config.Cmd}}", tag))
    sel = target.selection
    assert cmd == ["python", "/opt/tritonlock/verify", "--backend", sel.backend, "--expect-gpu", "yes", "--triton",
                   sel.triton]
    env = json.loads(_sh("podman", "image", "inspect", "--format", "{{json .Config.Env}}", tag))
    assert "VIRTUAL_ENV=/app/.venv" in env
    # The image's own interpreter runs the runner against the image's venv (podman run is not available here:
    # chroot into the image's filesystem instead). The test wheels' torch is a stub: it imports, names its CUDA.
    chroot = shutil.which("chroot") or "/usr/sbin/chroot"
    proc = subprocess.run([chroot, str(root), "/app/.venv/bin/python", "/opt/tritonlock/verify", "--backend",
                           str(sel.backend), "--expect-gpu", "no", "--quick"], capture_output=True, text=True,
                          timeout=120,
                          env={"PATH": "/app/.venv/bin:/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8"})
    report = json.loads(proc.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["torch imports"]["ok"], checks["torch imports"]
    assert f"torch 2.6.0+{sel.backend} from /app/.venv/" in checks["torch imports"]["detail"]
    assert checks["torch CUDA build"]["ok"], checks["torch CUDA build"]
    assert os.path.exists(project / "tritonlock-image" / "requirements-a100.txt")
