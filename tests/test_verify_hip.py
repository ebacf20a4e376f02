"""verify's runner on a ROCm torch (torch.version.hip set): the gfx target of each GPU against the build's list.

No AMD GPU is lent here: the torch object is a stand-in with the attributes a ROCm build has (get_arch_list gives
gfx targets, device properties carry gcnArchName)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import importlib
import sys

from tritonlock.verify import RUNNER

if str(RUNNER) not in sys.path:
    sys.path.insert(0, str(RUNNER))
envchecks = importlib.import_module("tlverify.envchecks")
report = importlib.import_module("tlverify.report")


def rocm_torch(gcn: str, archs: list[str]) -> Any:
    props = SimpleNamespace(name="AMD Instinct MI300X", gcnArchName=gcn, total_memory=192 * 2**30)
    cuda = SimpleNamespace(get_arch_list=lambda: archs, device_count=lambda: 1,
                           get_device_properties=lambda i: props,
                           get_device_capability=lambda i: (9, 4))
    return SimpleNamespace(__version__="2.13.0+rocm7.2", version=SimpleNamespace(cuda=None, hip="7.2.26015"),
                           cuda=cuda)


def test_gfx_in_the_build_passes_and_is_reported() -> None:
    r = report.Report()
    envchecks.check_archs(r, rocm_torch("gfx942:sramecc+:xnack-", ["gfx90a", "gfx942"]))
    assert r.to_json()["checks"][-1]["ok"] is True
    assert r.gpus[0].startswith("cuda:0 AMD Instinct MI300X (gfx942, 192.0 GiB; HIP 7.2.26015; Triton backend ")


def test_gfx_missing_from_the_build_fails() -> None:
    r = report.Report()
    envchecks.check_archs(r, rocm_torch("gfx1151", ["gfx90a", "gfx942"]))
    check = r.to_json()["checks"][-1]
    assert check["ok"] is False and "no code object for gfx1151" in check["detail"]
