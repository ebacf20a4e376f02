"""doctor: the installed packages' native code, on any venv (one tritonlock made or not), from its files — the CUDA
libraries an extension module names that nothing brings, libcuda.so.1 where there is no driver, torch's CUDA build,
the torch release a build was made for, the torch C++ symbols it calls that the installed torch's libraries do not
export, and GPU code for this host's GPUs (the same rule the decision applies to a lock, tritonlock.native.rule);
and what it says without refusing: a library a module may load by name that nothing brings (inferred (dlopen)), an
optional part nothing imports that cannot load, a GPU reached only through PTX."""

from __future__ import annotations

import re

from tritonlock.doctor.context import Context, Finding
from tritonlock.native.rule import Item, Problem, Setting, check

_FIX = {
    "driver": "run it on a machine with an NVIDIA driver (a container needs the GPU passed to it), or leave the "
              "package out of this machine's environment",
    "torch-build": "install torch's CUDA build for it (a lock for this host: `tritonlock resolve` then `tritonlock "
                   "sync`), or a build of the package for this torch",
    "cuda-library": "install the package's build for this torch's CUDA (or a torch of the CUDA it was built for); "
                    "`tritonlock resolve` locks a pair that loads and `tritonlock sync` installs it",
    "cuda-driver": "a newer NVIDIA driver (`tritonlock why` shows what it unlocks), or the package's build for an "
                   "older CUDA",
    "torch-release": "install the package's build for this venv's torch (or the torch it was built for); `tritonlock "
                     "resolve` then `tritonlock sync` makes a venv whose builds match",
    "gpu-code": "install a release or build of the package with code for this GPU",
    "cuda-build": "install a release of the package with a build for this torch's CUDA (or a torch of a CUDA it has "
                  "a build for); `tritonlock resolve` locks a pair that loads and `tritonlock sync` installs it",
    "torch-symbol": "install the package's build for this venv's torch (or the torch it was built against); "
                    "`tritonlock resolve` then `tritonlock sync` makes a venv whose builds match",
}


def _backend(cuda: str | None, hip: str | None) -> str:
    if hip:
        return "rocm" + ".".join(hip.split(".")[:2])
    m = re.fullmatch(r"([0-9]+)\.([0-9]+)", cuda or "")
    return f"cu{m[1]}{m[2]}" if m else "cpu"


def _cuda_of(p: Problem, facts: dict[str, str]) -> str:
    """ "CUDA 12.8" of the package's build where its version says so ("+cu128"), else from its runtime's soname."""
    m = re.search(r"\+(?:[a-z0-9.]*?)cu([0-9]+)([0-9])(?![0-9])", facts.get(p.package, ""))
    return f" CUDA {m[1]}.{m[2]}" if m else ""


def check_native(c: Context) -> list[Finding]:
    from tritonlock.compat.pkgbuilds import cuda_build_picks, optional_gpu_code

    v = c.venv
    if v is None or not v.native or v.torch is None or v.torch.version is None:
        return []
    provided = set(v.system_libs)
    for _, _, f in v.native:
        provided.update(f.provides)
    floors: dict[int, str] = {}
    if c.matrix is not None:
        floors = {m: fl for m in (11, 12, 13, 14) if (fl := c.matrix.driver_floor(f"{m}.0", c.host.os))}
    at = Setting(torch=v.torch.version, backend=_backend(v.torch.cuda, v.torch.hip), driver=c.host.driver,
                 gpus=tuple(g.cc for g in c.host.gpus), floors=floors, installed=True,
                 optional_gpu=frozenset(optional_gpu_code()), cuda_picks=cuda_build_picks())
    import dataclasses

    from tritonlock.native.judge import guarded_warnings
    from tritonlock.native.notes import dlopen_warnings, optional_parts, ptx_only
    from tritonlock.native.rule import with_reach

    named = [d.name for d in c.target.selection.direct] if c.target is not None else []
    items = with_reach([Item(name=n, version=ver, facts=f) for n, ver, f in v.native if f.members], named)
    exports, why = _exports(v.torch_dirs, v.torch.version) if any(m.torch_abi == "cxx" and m.torch_symbols for i in items
                                                 for m in i.facts.members) else (None, None)
    at = dataclasses.replace(at, exports=exports, exports_why=why)
    versions = {n: ver for n, ver, _ in v.native}
    out = []
    found = check(items, provided, at)
    for w in guarded_warnings(found):
        out.append(Finding(id="native-guarded", severity="warning", title=w.split(": ", 1)[0] + " has a module that "
                           "cannot load here, which it loads inside a `try`: its import works without it",
                           evidence=(w,), fix="install its build for this torch to have what that module does"))
    for p in (p for p in found if not p.guarded):
        torch_cuda = f" CUDA {v.torch.cuda}" if v.torch.cuda else " (CPU build)"
        if p.kind == "torch-release":
            title = (f"{p.package} {p.version} was built for {p.needs}{_cuda_of(p, versions)}; this venv has torch "
                     f"{v.torch.version}{torch_cuda}: its native code fails to load (an undefined symbol)")
        elif p.kind == "gpu-code":
            title = f"{p.package} {p.version} has no GPU code for this host's GPU: its kernels fail at their first launch"
        elif p.kind == "torch-symbol":
            title = (f"{p.package} {p.version} calls {p.needs}, which this venv's torch {v.torch.version} does not "
                     "export: it was built against another torch, and its import fails with an undefined symbol")
        elif p.kind == "cuda-build":
            title = (f"{p.package} {p.version} has no build for {p.needs}, this venv's torch's: what it loads by "
                     "torch's CUDA at run time is not there")
        else:
            title = f"{p.package} {p.version}'s native code cannot load here: it needs {p.needs}"
        out.append(Finding(id=f"native-{p.kind}", severity="error", title=title, evidence=(p.text,),
                           fix=_FIX.get(p.kind, "see the evidence")))
    for w in dlopen_warnings(items, provided, at):
        out.append(Finding(id="native-dlopen", severity="warning", title=w.split(": ", 1)[0] + " may load a library "
                           "by name that nothing here brings (inferred (dlopen))", evidence=(w,),
                           fix="install the package's build for the CUDA (or ROCm) this environment brings, or the "
                               "wheel that brings that library"))
    for w in optional_parts(items, provided, at):
        out.append(Finding(id="native-optional-part", severity="warning", title=w.split(": ", 1)[0] + " ships a "
                           "second package nothing imports that cannot load here", evidence=(w,),
                           fix="nothing, unless you import it: then its build for this environment"))
    for w in ptx_only(items, at):
        out.append(Finding(id="native-ptx-jit", severity="info", title=w.split(": ", 1)[0] + " reaches this GPU "
                           "only through PTX (its kernels are compiled at their first use)", evidence=(w,)))
    return out


def _exports(torch_dirs: tuple[str, ...], version: str) -> tuple[object, str | None]:
    """What the venv's torch exports of its C++ API, read from its torch/lib (tritonlock.native.torchsyms)."""
    import struct
    from pathlib import Path

    from tritonlock.native import torchsyms
    from tritonlock.native.gcs import symbol_hash

    for d in torch_dirs:
        lib = Path(d) / "lib"
        if lib.is_dir():
            try:
                names = torchsyms.read_installed(lib)
            except (OSError, ValueError, struct.error) as err:
                return None, f"its libraries could not be read ({err})"
            if names:
                return torchsyms.Exports(what=f"torch {version} (its libraries in {lib})",
                                         hashes=frozenset(symbol_hash(n) for n in names)), None
            return None, f"{lib} exports no symbol of torch's C++ API"
    return None, "no torch/lib folder found"
