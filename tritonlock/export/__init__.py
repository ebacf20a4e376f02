"""Projections of one lock target: PEP 751 pylock.toml, hashed requirements.txt, Dockerfile, devcontainer."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from packaging import tags as ptags
from packaging.utils import parse_wheel_filename

from tritonlock._files import file_stem
from tritonlock.errors import TritonlockError
from tritonlock.lock.lockfile import named_target, toml_value, wheel_table
from tritonlock.models import HostProfile, Lock, LockedPackage, LockedTarget, Selection, Wheel

FORMATS = ("pylock", "requirements", "dockerfile", "devcontainer")
LOCK_FILE = "triton-env.lock"
VENV = "/app/.venv"  # where the image keeps the project's venv (venvs are not relocatable: same path in both stages)
# The files the Dockerfile copies from its build context (the project): the hashed requirements and the verify runner.
IMAGE_DIR = "tritonlock-image"
RUNNER_IN_IMAGE = "/opt/tritonlock/verify"  # the runner folder: `python /opt/tritonlock/verify` runs it

# nvidia/cuda publishes one image set per toolkit *patch* release ("12.6.3-runtime-ubuntu22.04"). These are the
# releases and Ubuntu versions in NVIDIA's image sources, gitlab.com/nvidia/container-images/cuda, dist/<version>/
# ubuntu<release>/{base,runtime,devel} — read from its GitHub mirror github.com/pdtgct/cuda at commit e3c1b68
# ("CUDA 13.1.0", 2025-12-15). NVIDIA moves end-of-life releases to dist/end-of-life and later deletes their tags,
# so an old entry may disappear. A CUDA minor not listed (newer than that commit) gets "<minor>.0" and a warning:
# that tag is a guess.
CUDA_IMAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "11.8": ("11.8.0", ("22.04",)), "12.1": ("12.1.1", ("22.04",)), "12.4": ("12.4.1", ("22.04",)),
    "12.6": ("12.6.3", ("22.04", "24.04")), "12.8": ("12.8.1", ("22.04", "24.04")),
    "12.9": ("12.9.1", ("22.04", "24.04")), "13.0": ("13.0.2", ("22.04", "24.04")),
    "13.1": ("13.1.0", ("22.04", "24.04")),
}
CUDA_IMAGE_PATCH = {minor: patch for minor, (patch, _) in CUDA_IMAGES.items()}
# glibc of the Ubuntu releases nvidia/cuda is built on; the wheels' manylinux tags decide which one fits.
UBUNTU_GLIBC = (("22.04", "2.35"), ("24.04", "2.39"))
_DOCKER_PLATFORM = {"x86_64": "linux/amd64", "aarch64": "linux/arm64"}
_MARKERS = {"linux": ("linux", None), "windows": ("win32", "AMD64"), "macos": ("darwin", "arm64")}


class ExportError(ValueError, TritonlockError):
    """The lock cannot be projected as asked (unknown target, a conflict, no file for the target)."""

    exit_code = 2


@dataclass(frozen=True, kw_only=True, slots=True)
class ExportFile:
    """One file an export writes: a path relative to where it goes, and its text. `in_context`: the file belongs in
    the image's build context — the project directory — at `path` (the Dockerfile copies it from there)."""

    path: str
    text: str
    in_context: bool = False


# ---------------------------------------------------------------- choosing the target


def choose_target(lock: Lock, name: str | None = None, host: HostProfile | None = None,
                  lock_path: str = LOCK_FILE) -> LockedTarget:
    """--target NAME, else the only target, else the one that fits this host, else the one named "host"."""
    names = ", ".join(t.name for t in lock.targets) or "none"
    if name is not None:
        return _ok(named_target(lock, name, lock_path), lock_path)
    if len(lock.targets) == 1:
        return _ok(lock.targets[0], lock_path)
    if not lock.targets:
        raise ExportError(f"{lock_path} holds no targets — run `tritonlock resolve`")
    if host is not None:
        try:
            from tritonlock.environment.sync import pick_target
        except ImportError:  # sync is optional to this module: fall back to the name "host"
            pass
        else:
            try:
                return _ok(pick_target(lock, host, lock_path=lock_path), lock_path)
            except TritonlockError:
                pass  # no target fits this machine: the name "host" below, or ask for --target
    for t in lock.targets:
        if t.name == "host":
            return _ok(t, lock_path)
    raise ExportError(f"{lock_path} has several targets ({names}) and none fits this host — pick one with --target")


def _ok(t: LockedTarget, lock_path: str, others: tuple[str, ...] = ()) -> LockedTarget:
    if not t.selection.ok or not t.packages:
        why = t.selection.conflict.message if t.selection.conflict else "it holds no packages"
        rest = (f", or pass --target {others[0]}" + (f" (or {', '.join(others[1:])})" if others[1:] else "")
                + " to export a target that has packages") if others else ""
        raise ExportError(f"{lock_path}: target {t.name!r} cannot be exported: {why} — fix triton-env.toml and run "
                          f"`tritonlock resolve`{rest}")
    return t


def exportable(lock: Lock, targets: list[LockedTarget] | tuple[LockedTarget, ...], lock_path: str) -> None:
    """Every target an export writes (or sends nodes to sync) holds packages: one that holds a conflict is refused
    (exit 2, naming it and the targets that can be exported), never skipped while the rest is written."""
    good = tuple(t.name for t in lock.targets if t.selection.ok and t.packages)
    for t in targets:
        _ok(t, lock_path, good)


# ---------------------------------------------------------------- wheels for a target


def _platforms(sel: Selection, glibc: str | None) -> list[str]:
    t = sel.target
    if t.os == "windows":
        return ["win_amd64" if t.arch == "x86_64" else f"win_{t.arch}"]
    if t.os == "macos":
        return list(ptags.mac_platforms((15, 0), "arm64" if t.arch in ("arm64", "aarch64") else t.arch))
    # manylinux_2_N runs where glibc >= 2.N (PEP 600); unknown glibc: accept every tag up to 2.40, as closure does.
    top = int((glibc or "2.40").split(".")[1])
    plats = [f"manylinux_2_{m}_{t.arch}" for m in range(top, 4, -1)]
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}  # PEP 599/571/513 aliases
    plats += [f"{alias}_{t.arch}" for m, alias in legacy.items() if m <= top]
    return plats + [f"linux_{t.arch}"]


def target_tags(sel: Selection, glibc: str | None = None) -> list[ptags.Tag]:
    """Tags the target's interpreter accepts, most specific first (what pip would compute there)."""
    major, minor = (int(x) for x in (sel.python or "3.12").split(".")[:2])
    plats = _platforms(sel, glibc if glibc is not None else sel.target.glibc)
    return [*ptags.cpython_tags((major, minor), platforms=plats),
            *ptags.compatible_tags((major, minor), f"cp{major}{minor}", plats)]


def pick_file(pkg: LockedPackage, tags: list[ptags.Tag]) -> Wheel | None:
    """The package's best wheel for these tags, else its sdist, else None."""
    rank = {tag: i for i, tag in enumerate(tags)}
    best: tuple[int, str, Wheel] | None = None
    for w in pkg.wheels:
        fit = min((rank[t] for t in parse_wheel_filename(w.name)[3] if t in rank), default=None)
        if fit is not None and (best is None or (fit, w.name) < best[:2]):
            best = (fit, w.name, w)
    return best[2] if best else pkg.sdist


def _files(t: LockedTarget, tags: list[ptags.Tag], why: str) -> list[tuple[LockedPackage, Wheel]]:
    out, missing = [], []
    for p in sorted(t.packages, key=lambda p: p.name):
        f = pick_file(p, tags)
        if f is None:
            missing.append(f"{p.name} {p.version} ({', '.join(w.name for w in p.wheels)})")
        else:
            out.append((p, f))
    if missing:
        raise ExportError(f"target {t.name!r}: no file fits {why} for " + "; ".join(missing)
                          + " — re-resolve for this target with `tritonlock resolve --upgrade`")
    return out


# ---------------------------------------------------------------- pylock.toml (PEP 751)


def environment_marker(sel: Selection) -> str:
    sys_platform, machine = _MARKERS.get(sel.target.os, (sel.target.os, None))
    machine = machine or sel.target.arch
    return f"sys_platform == '{sys_platform}' and platform_machine == '{machine}'"


def _header(fmt: str, t: LockedTarget, comment: str = "#") -> list[str]:
    s = t.selection
    what = f"torch {s.torch} ({s.backend})" + (f" + {s.triton_package} {s.triton}" if s.triton_package else "")
    import shlex

    return [f"{comment} Generated by `tritonlock export --format {fmt} --target {shlex.quote(t.name)}` from {LOCK_FILE} — do not "
            "edit; re-export instead.",
            f"{comment} Target {t.name!r}: {what} on Python {s.python}, {s.target.os}/{s.target.arch}."]


def pylock(lock: Lock, t: LockedTarget) -> str:
    """PEP 751 pylock.toml for one target: every file the lock holds, with index, size and sha256."""
    sel = t.selection
    lines = _header("pylock", t)
    lines += ["# Install: pip install -r pylock.toml (pip >= 26)  |  uv pip install -r pylock.toml",
              'lock-version = "1.0"', f"created-by = {toml_value('tritonlock')}",
              f"environments = [{toml_value(environment_marker(sel))}]"]
    if sel.python:
        lines.append(f"requires-python = {toml_value(f'=={sel.python}.*')}")
    for p in sorted(t.packages, key=lambda p: p.name):
        lines += ["", "[[packages]]", f"name = {toml_value(p.name)}", f"version = {toml_value(p.version)}"]
        if not p.direct:  # (PEP 751's index is an index's address; a direct reference's file is its own)
            lines.append(f"index = {toml_value(p.index)}")
        if p.wheels:
            lines.append("wheels = [")
            lines += [f"  {toml_value(wheel_table(w))}," for w in sorted(p.wheels, key=lambda w: w.name)]
            lines.append("]")
        if p.sdist:
            lines.append(f"sdist = {toml_value(wheel_table(p.sdist))}")
    lines += ["", "[tool.tritonlock]", f"target = {toml_value(t.name)}", f"backend = {toml_value(sel.backend or '')}",
              f"lock-intent-hash = {toml_value(lock.intent_hash)}", f"matrix-version = {toml_value(lock.matrix_version)}"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- requirements.txt


def requirements(lock: Lock, t: LockedTarget, *, glibc: str | None = None, header: bool = True,
                 wrap: bool = True) -> str:
    """requirements.txt for `pip install --require-hashes -r`: one direct URL per package, one file each."""
    files = _files(t, target_tags(t.selection, glibc), f"Python {t.selection.python} on "
                   f"{t.selection.target.os}/{t.selection.target.arch}")
    lines = _header("requirements", t) if header else []
    # Each line names its file by URL, so pip and uv fetch it from the one index the lock bound it to and
    # never ask another index for the same name (no --extra-index-url merging, no dependency confusion).
    # --no-index makes a dependency missing from the lock an error instead of a lookup on some index;
    # it stays off when a package is built from an sdist, whose build dependencies come from the index.
    sdists = [p.name for p, f in files if not f.name.endswith(".whl")]
    if sdists:
        lines.append(f"# built from source here: {', '.join(sdists)} — its build dependencies come from your index")
    else:
        lines.append("--no-index")
    for p, f in files:
        lines.append(f"# {p.name} {p.version} from {p.index}")
        lines += ([f"{p.name} @ {f.url} \\", f"    --hash=sha256:{f.sha256}"] if wrap
                  else [f"{p.name} @ {f.url} --hash=sha256:{f.sha256}"])
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- Dockerfile


def _image_cuda(sel: Selection) -> str | None:
    """The CUDA an image for this target is built on: the backend's, when the target has an NVIDIA driver to use it
    (a target without one may carry a CUDA build — PyPI's torch — that runs on the CPU: a plain Ubuntu image)."""
    return _cuda_of(sel.backend) if sel.target.driver is not None else None


def _cuda_of(backend: str | None) -> str | None:
    """'cu126' -> '12.6', 'cu130' -> '13.0'; None for cpu."""
    if not backend or not re.fullmatch(r"cu[0-9]{3,}", backend):
        return None
    return f"{backend[2:-1]}.{backend[-1]}"


def base_images(t: LockedTarget) -> tuple[str, str, str]:
    """(build image, final image, ubuntu release) for a linux target: nvidia/cuda matching the lock's CUDA."""
    sel = t.selection
    if sel.target.os != "linux" or sel.target.arch not in _DOCKER_PLATFORM:
        raise ExportError(f"target {t.name!r} is {sel.target.os}/{sel.target.arch}: a Dockerfile needs a linux "
                          "x86_64 or aarch64 target — pick one with --target")
    cuda = _image_cuda(sel)
    published = CUDA_IMAGES[cuda][1] if cuda in CUDA_IMAGES else tuple(r for r, _ in UBUNTU_GLIBC)
    ubuntu, files = None, []
    for release, glibc in UBUNTU_GLIBC:  # the oldest Ubuntu on which every locked file installs
        try:
            files = _files(t, target_tags(sel, glibc), f"Ubuntu {release}")
        except ExportError:
            continue
        ubuntu = release
        break
    if ubuntu is None:
        newest = UBUNTU_GLIBC[-1]
        raise ExportError(f"target {t.name!r}: some wheels need a glibc newer than Ubuntu {newest[0]}'s "
                          f"{newest[1]} — no nvidia/cuda image can run them")
    if cuda is None:
        return f"ubuntu:{ubuntu}", f"ubuntu:{ubuntu}", ubuntu
    if ubuntu not in published:
        later = [r for r in published if r >= ubuntu]
        if not later:
            raise ExportError(f"target {t.name!r}: its wheels need Ubuntu {ubuntu} or newer, but nvidia/cuda "
                              f"publishes CUDA {cuda} images only for Ubuntu {', '.join(published)} — lock a newer "
                              "CUDA backend "
                              "(cuda = \">=12.6\" in triton-env.toml), or pass your own image: docker build "
                              "--build-arg BASE_IMAGE=… --build-arg RUNTIME_IMAGE=…")
        ubuntu = later[0]
    devel = any(not f.name.endswith(".whl") for _, f in files)  # an sdist may need nvcc to build
    tag = CUDA_IMAGE_PATCH.get(cuda, f"{cuda}.0")
    build = f"nvidia/cuda:{tag}-{'devel' if devel else 'base'}-ubuntu{ubuntu}"
    return build, f"nvidia/cuda:{tag}-runtime-ubuntu{ubuntu}", ubuntu


def _uv_version() -> str:
    try:
        from importlib.metadata import version

        return version("uv")
    except Exception:  # noqa: BLE001 - any failure to read it: the image's own newest uv will do
        return "latest"


def image_warnings(lock: Lock, t: LockedTarget) -> list[str]:
    """What makes an image from this target build only here, or rest on a guess (printed by the CLI)."""
    out = []
    hosts = sorted({urlsplit(w.url).hostname or "" for p in t.packages for w in (*p.wheels, p.sdist) if w}
                   & {"127.0.0.1", "localhost", "::1"})
    if hosts:
        out.append(f"warning: target {t.name!r} has files on an index on this machine ({', '.join(hosts)}): the image "
                   "builds only here, with the host's network")
    cuda = _image_cuda(t.selection)
    if cuda and cuda not in CUDA_IMAGES:
        out.append(f"warning: tritonlock does not know nvidia/cuda's image for CUDA {cuda}; the Dockerfile names "
                   f"{cuda}.0 — if it does not exist, pass --build-arg BASE_IMAGE=… --build-arg RUNTIME_IMAGE=…")
    return out


def _refuse_local_files(t: LockedTarget) -> None:
    local = sorted(w.url for p in t.packages for w in (*p.wheels, p.sdist) if w and urlsplit(w.url).scheme == "file")
    if local:
        raise ExportError(f"target {t.name!r}: {len(local)} locked file(s) are on this machine's disk ({local[0]}"
                          + (", …" if len(local) > 1 else "") + "): an image build cannot fetch them — lock from an "
                          "index the build can reach (an HTTP(S) index or mirror), or install here with "
                          "`tritonlock sync` or `--format requirements`")


def image_context(lock: Lock, t: LockedTarget) -> tuple[ExportFile, ...]:
    """The files the Dockerfile copies from the build context: the requirements it installs and the verify runner."""
    from tritonlock.verify import runner_files

    _, _, ubuntu = base_images(t)
    reqs = requirements(lock, t, glibc=dict(UBUNTU_GLIBC)[ubuntu])
    return (ExportFile(path=f"{IMAGE_DIR}/requirements-{file_stem(t.name)}.txt", text=reqs, in_context=True),
            *(ExportFile(path=f"{IMAGE_DIR}/verify/{rel}", text=text, in_context=True) for rel, text in runner_files()))


def dockerfile(lock: Lock, t: LockedTarget) -> str:
    """A multi-stage Dockerfile: build the venv from the lock (hashes required), run the verify runner. It needs
    no tritonlock in the image: the requirements and the runner come from the build context (`image_context`)."""
    _refuse_local_files(t)
    sel = t.selection
    build, final, _ = base_images(t)
    platform = _DOCKER_PLATFORM[sel.target.arch]
    gpu = _image_cuda(sel) is not None
    run = ["python", RUNNER_IN_IMAGE, "--backend", sel.backend or "cpu", "--expect-gpu", "yes" if gpu else "no"]
    run += ["--triton", sel.triton] if sel.triton_package and sel.triton else []
    lines = _header("dockerfile", t)
    lines += ["# Build with the project as the build context: export wrote the files it copies into "
              f"{IMAGE_DIR}/ there.",
              "#   docker build -t IMAGE .        (or: podman build -t IMAGE .)",
              "# Check: docker run --rm " + ("--gpus all " if gpu else "") + "IMAGE    — runs Triton's reference "
              "kernels " + ("on every GPU" if gpu else "in Triton's interpreter") + ", prints a JSON report, exits "
              "0 when all pass.",
              "# Images are build arguments (--build-arg BASE_IMAGE=… for a registry mirror). nvidia/cuda tags: "
              "NVIDIA's", "# gitlab.com/nvidia/container-images/cuda dist/ (as of 2025-12-15)."]
    if gpu:
        lines += ["# The torch wheels bring their own CUDA libraries; the image's CUDA matches the lock's so the",
                  "# NVIDIA Container Toolkit refuses a host driver too old for it (NVIDIA_REQUIRE_CUDA), clearly.",
                  "# No system cuDNN: the runtime image leaves the wheels' cuDNN unshadowed."]
    lines += [
        f"ARG UV_IMAGE=ghcr.io/astral-sh/uv:{_uv_version()}",
        f"ARG BASE_IMAGE={build}",
        f"ARG RUNTIME_IMAGE={final}",
        "# only-managed: uv installs the locked Python; only-system: use the base image's own (it must be that one)",
        "ARG PYTHON_PREFERENCE=only-managed",
        "",
        "FROM ${UV_IMAGE} AS uv",
        "",
        f"FROM --platform={platform} ${{BASE_IMAGE}} AS build",
        "ARG PYTHON_PREFERENCE",
        "COPY --from=uv /uv /usr/local/bin/uv",
        "ENV UV_PYTHON_INSTALL_DIR=/opt/python UV_PYTHON_PREFERENCE=${PYTHON_PREFERENCE} UV_LINK_MODE=copy "
        "UV_NO_CACHE=1",
        "# The venv, from the lock: one direct URL and sha256 per package (tritonlock export --format requirements).",
        f"COPY {IMAGE_DIR}/requirements-{file_stem(t.name)}.txt /tmp/requirements.txt",
        f"RUN mkdir -p /opt/python && uv venv {VENV} --python {sel.python} \\",
        f" && uv pip install --python {VENV}/bin/python --require-hashes -r /tmp/requirements.txt",
        "",
        f"FROM --platform={platform} ${{RUNTIME_IMAGE}}",
        "COPY --from=build /opt/python /opt/python",
        f"COPY --from=build {VENV} {VENV}",
        "# tritonlock's verify runner: it imports only torch, triton and the standard library.",
        f"COPY {IMAGE_DIR}/verify {RUNNER_IN_IMAGE}",
        f"COPY {LOCK_FILE} /app/",
        "WORKDIR /app",
        f"ENV VIRTUAL_ENV={VENV} PATH={VENV}/bin:$PATH",
        f"CMD {json.dumps(run)}",
    ]
    return "\n".join(lines) + "\n"


def devcontainer(lock: Lock, t: LockedTarget, context: str = "..") -> tuple[ExportFile, ...]:
    """.devcontainer/devcontainer.json + its Dockerfile (the same image as --format dockerfile) + the build context's
    files; `context` is the project seen from the devcontainer directory."""
    gpu = _image_cuda(t.selection) is not None
    doc: dict[str, Any] = {
        "name": f"tritonlock {t.name}",
        "build": {"dockerfile": "Dockerfile", "context": context},
    }
    if gpu:
        doc["runArgs"] = ["--gpus", "all"]
        doc["hostRequirements"] = {"gpu": True}
    doc["containerEnv"] = {"VIRTUAL_ENV": VENV}
    doc["remoteEnv"] = {"PATH": f"{VENV}/bin:${{containerEnv:PATH}}"}
    doc["customizations"] = {"vscode": {"extensions": ["ms-python.python"],
                                        "settings": {"python.defaultInterpreterPath": f"{VENV}/bin/python"}},
                             # how a later export knows this file is its own to replace (JSON holds no comment)
                             "tritonlock": {"generated-by": "tritonlock export --format devcontainer",
                                            "target": t.name}}
    return (ExportFile(path="devcontainer.json", text=json.dumps(doc, indent=2) + "\n"),
            ExportFile(path="Dockerfile", text=dockerfile(lock, t)), *image_context(lock, t))


def export(lock: Lock, t: LockedTarget, fmt: str, *, context: str = "..") -> tuple[ExportFile, ...]:
    """The files of one format: the main file(s) named as the format's convention, then the files that belong in the
    image's build context (`in_context`); `context`: the project as seen from a devcontainer directory."""
    if fmt == "pylock":
        return (ExportFile(path="pylock.toml", text=pylock(lock, t)),)
    if fmt == "requirements":
        return (ExportFile(path="requirements.txt", text=requirements(lock, t)),)
    if fmt == "dockerfile":
        return (ExportFile(path="Dockerfile", text=dockerfile(lock, t)), *image_context(lock, t))
    if fmt == "devcontainer":
        return devcontainer(lock, t, context)
    raise ExportError(f"unknown export format {fmt!r}: expected one of {', '.join(FORMATS)}")


def check_output_name(fmt: str, path: str) -> None:
    """PEP 751: a lock file is named pylock.toml or pylock.<name>.toml; pip and uv recognise it by that name."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    if fmt == "pylock" and not re.fullmatch(r"pylock\.([^.]+\.)?toml", name):
        raise ExportError(f"-o {path}: PEP 751 requires the name pylock.toml or pylock.<name>.toml (pip and uv read "
                          "it as a lock only by that name) — e.g. -o pylock.toml")
