"""The arch lists of compat/ against the wheels themselves: the sm/compute targets of a CUDA torch wheel's fatbins and
the gfx targets of a ROCm torch wheel's HIP offload bundles, read by HTTP Range (maintain/wheels.py)."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from tritonlock.compat.matrix import Matrix
from tritonlock.compat.rows import TorchRelease, Variant
from tritonlock.compat.matrix_vendor import RocmBuild, VendorMatrix, normalize_gfx
from tritonlock.errors import TritonlockError
from tritonlock.native.gpucode import GpuCode, gfx_order
from tritonlock.lock.index import IndexClient, IndexFile
from tritonlock.maintain.tags import Wheel, wheels
from tritonlock.maintain.wheels import read_wheel_gpu_code

Reader = Callable[[object, IndexFile, str], tuple[GpuCode, str]]


@dataclass
class Indexes:
    """PyTorch's per-backend indexes, asked once each; a host that does not answer is not asked again."""

    make: Callable[[str], IndexClient] = IndexClient
    down: dict[str, str] | None = None  # host -> why it did not answer
    seen: dict[str, tuple[IndexClient, list[Wheel]] | str] | None = None

    def torch(self, url: str) -> tuple[IndexClient, list[Wheel]] | str:
        """(client, torch wheels) of the index at `url`, or why it could not be read."""
        from urllib.parse import urlsplit

        self.down = {} if self.down is None else self.down
        self.seen = {} if self.seen is None else self.seen
        if url in self.seen:
            return self.seen[url]
        host = urlsplit(url).netloc
        if host in self.down:
            got: tuple[IndexClient, list[Wheel]] | str = f"was not asked: {self.down[host]}"
        else:
            try:
                client = self.make(url)
                got = (client, wheels(client.files("torch")))
            except TritonlockError as err:
                why = str(err).splitlines()[0].split(" (HTTPConnectionPool", 1)[0][:200]
                self.down[host] = f"{host} did not answer for {url} ({why})"
                got = f"did not answer ({why})"
        self.seen[url] = got
        return got


def _cuda_variants(rel: TorchRelease) -> list[Variant]:
    return [v for v in rel.variants if v.cuda and "linux_x86_64" in v.platforms and (v.archs or v.ptx)]


def _pick(files: list[Wheel], local: str) -> Wheel | None:
    mine = sorted((w for w in files if str(w.version) == local and w.platform == "linux_x86_64"),
                  key=lambda w: w.file.filename)
    return mine[0] if mine else None


def check_archs(matrix: Matrix, vm: VendorMatrix, releases: list[TorchRelease], indexes: Indexes,
                counts: Counter[str], read: Reader = read_wheel_gpu_code) -> list[str]:
    """For each CUDA variant (linux_x86_64) and ROCm build of `releases`: the GPU code its wheel carries against the
    row's archs/ptx or gfx. A disagreement is a line; what could not be read is a "note:" line."""
    found: list[str] = []
    for rel in releases:
        for v in _cuda_variants(rel):
            found += _one(matrix, indexes, counts, read, rel, v.backend, "cuda", functools.partial(_cuda_diff, v))
        for b in vm.rocm_builds(rel.version):
            if "linux_x86_64" in b.platforms:
                found += _one(matrix, indexes, counts, read, rel, b.backend, "rocm", functools.partial(_rocm_diff, b))
    return found


def _one(matrix: Matrix, indexes: Indexes, counts: Counter[str], read: Reader, rel: TorchRelease, backend: str,
         kind: str, diff: Callable[[GpuCode], list[str]]) -> list[str]:
    url = matrix.index_url(backend)
    got = indexes.torch(url)
    where = f"{backend} torch {rel.version}"
    if isinstance(got, str):
        return [f"note: {where}: arch list not read ({url} {got})"]
    client, files = got
    w = _pick(files, f"{rel.version}+{backend}")
    if w is None:
        return [f"note: {where}: arch list not read (no linux_x86_64 torch-{rel.version}+{backend} wheel on {url})"]
    try:
        code, lib = read(client.session, w.file, kind)
    except (TritonlockError, OSError, ValueError, KeyError) as err:
        return [f"note: {where}: arch list not read ({w.file.filename}: {str(err)[:160]})"]
    if code.unreadable and not code.any:
        return [f"note: {where}: arch list not read ({w.file.filename}: {code.unreadable})"]
    counts["arch lists read from wheels"] += 1
    lines = [f"{where}: {d} ({lib} of {w.file.filename}; the row may then say source = \"read from "
             f"{w.file.filename}\")" for d in diff(code)]
    if code.unreadable:
        lines.append(f"note: {where}: part of {lib} not read ({code.unreadable})")
    return lines


def _cuda_diff(v: Variant, code: GpuCode) -> list[str]:
    out = []
    sm = [s for s in code.sm]
    ptx = ["sm_" + p.split("_", 1)[1] for p in code.ptx]
    if sorted(sm) != sorted(v.archs):
        out.append(f"archs: the wheel's fatbins carry cubins for {', '.join(sm) or 'none'}, compat has "
                   f"{', '.join(v.archs) or 'none'}")
    if sorted(ptx) != sorted(v.ptx):
        out.append(f"ptx: the wheel's fatbins carry PTX for {', '.join(code.ptx) or 'none'}, compat has "
                   f"{', '.join(v.ptx) or 'none'}")
    return out


def _rocm_diff(b: RocmBuild, code: GpuCode) -> list[str]:
    have = sorted({g for g in (normalize_gfx(t) for t in code.gfx) if g}, key=gfx_order)
    want = sorted(b.gfx, key=gfx_order)
    if have == want:
        return []
    extra, missing = [g for g in have if g not in want], [g for g in want if g not in have]
    return [f"gfx: the wheel's HIP offload bundles carry {', '.join(have) or 'none'}, compat has {', '.join(want)}"
            + (f" (the wheel lacks {', '.join(missing)})" if missing else "")
            + (f" (compat lacks {', '.join(extra)})" if extra else "")]
