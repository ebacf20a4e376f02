"""What every doctor check reads (a `Context` over the facts) and returns (`Finding`), with small shared helpers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from tritonlock.doctor.facts import Dist, LockFacts, VenvFacts
from tritonlock.models import HostProfile, LockedTarget

if TYPE_CHECKING:
    from tritonlock.compat.matrix import Matrix


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    """One problem: what (title), the facts that show it (evidence), and what to do (fix)."""

    id: str
    severity: str  # "error" | "warning" | "info"
    title: str
    evidence: tuple[str, ...] = ()
    fix: str = ""


def parse_version(s: str | None) -> Version | None:
    try:
        return Version(s) if s else None
    except InvalidVersion:
        return None


def older(a: str, b: str) -> bool:
    """a < b as versions; False when either is not a version."""
    va, vb = parse_version(a), parse_version(b)
    return va is not None and vb is not None and va < vb


def cuda_major(cuda: str) -> int:
    return int(cuda.split(".")[0])


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def cuda_of_local(version: str) -> tuple[bool, str | None]:
    """From a version's local tag: (known, CUDA) — '2.6.0+cu126' → (True, '12.6'); '+cpu' → (True, None)."""
    local = version.partition("+")[2]
    if local == "cpu":
        return True, None
    m = re.fullmatch(r"cu(\d+)(\d)", local)
    return (True, f"{m[1]}.{m[2]}") if m else (False, None)


@dataclass(frozen=True, kw_only=True, slots=True)
class Context:
    host: HostProfile
    venv: VenvFacts | None
    lock: LockFacts | None
    matrix: Matrix | None
    where: str  # the venv (or interpreter) as the user named it

    @property
    def target(self) -> LockedTarget | None:
        return self.lock.target if self.lock else None

    def driver_below(self, floor: str) -> bool:
        """The host's driver is below a driver floor — by branch on a Jetson, whose JetPack driver is numbered so
        ("580.00" on Thor with JetPack 7.0/7.1 is the R580 driver, CUDA 13.0; compat/gpus.toml `integrated`)."""
        h = self.host
        if not h.driver:
            return False
        tegra = self.matrix is not None and any(
            (g := self.matrix.gpu_family(x.cc)) is not None and g.integrated for x in h.gpus)
        if tegra:
            from tritonlock.compat.matrix import branch_floor

            return older(h.driver, branch_floor(floor))
        return older(h.driver, floor)

    def dists(self, name: str) -> list[Dist]:
        """Installed copies of a distribution, in sys.path order (the first one is what imports)."""
        if self.venv is None:
            return []
        return [d for d in self.venv.dists if canonicalize_name(d.name) == canonicalize_name(name)]

    def dist(self, name: str) -> Dist | None:
        found = self.dists(name)
        return found[0] if found else None

    def torch_ok(self) -> bool:
        return bool(self.venv and self.venv.torch and not self.venv.torch.error and self.venv.torch.version)

    def torch_version(self) -> str | None:
        if self.venv and self.venv.torch and self.venv.torch.version:
            return self.venv.torch.version
        d = self.dist("torch")
        return d.version if d else None

    def torch_cuda(self) -> tuple[bool, str | None]:
        """(known, CUDA version of the installed torch build; None = CPU build)."""
        if self.torch_ok():
            assert self.venv and self.venv.torch
            return True, self.venv.torch.cuda
        v = self.torch_version()
        return cuda_of_local(v) if v else (False, None)

    def gpu_expected(self) -> bool:
        if self.target is not None and self.target.selection.target.driver is None:
            return False  # the lock's target is a machine without a driver: its build runs on the CPU
        known, cuda = self.torch_cuda()
        if known and cuda:
            return True
        sel = self.target.selection if self.target else None
        return bool(sel and sel.backend and sel.backend.startswith("cu"))

    def gpu_list(self) -> str:
        return "; ".join(f"GPU {g.index}: {g.name or 'unnamed'} (compute capability {g.cc})" for g in self.host.gpus)

    def driver_line(self) -> str:
        h = self.host
        return f"driver {h.driver}" + (f" supports CUDA {h.cuda_driver} at most" if h.cuda_driver else "")


def toolkit_floor(c: Context, cuda: str) -> str | None:
    if c.matrix is None:
        return None
    for tk in c.matrix.cuda:
        if tk.version == cuda:
            return tk.windows_driver if c.host.os == "windows" else tk.linux_driver
    return None


def sync_fix(c: Context) -> str:
    if c.lock and c.lock.lock is not None:
        return "`tritonlock sync` (it installs the locked files and removes the rest)"
    return "`tritonlock resolve` and `tritonlock sync`"
