"""The links between a machine's GPUs (NVML's P2P status and NVLink state, else `nvidia-smi topo -m`): what
`tritonlock host` shows, and what verify judges an all-reduce by when its runner's NVML could not say."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from click.testing import CliRunner

from test_host import NVMLError, World, clean_env, fake_pynvml, fixture, world  # noqa: F401  (fixtures)
from tritonlock import host
from tritonlock.cli import main
from tritonlock.host import _links
from tritonlock.host._links import GpuLink, one_link, parse_topo


def _nvml(w: World, fx: dict[str, Any], *, p2p_error: bool = False) -> Any:
    """The recorded pynvml of test_host plus the P2P status and NVLink state the fixture gives."""
    m = fake_pynvml(fx)
    devices = fx["nvml_devices"]

    def index(h: object) -> int:
        return next(i for i, d in enumerate(devices) if d is h)

    def p2p(a: object, b: object, which: int) -> int:
        m.calls.append(f"p2p {which}")
        if p2p_error:
            raise NVMLError("Not Supported")
        i, j = sorted((index(a), index(b)))
        pair = next(x for x in fx["nvml_p2p"] if (x["a"], x["b"]) == (i, j))
        return int(pair["nvlink" if which == 2 else "read"])

    def state(h: object, link: int) -> int:
        up = fx["nvml_nvlink_active"][index(h)]
        if up is None or link >= 18:
            raise NVMLError("Not Supported")
        return 1 if link < up else 0

    m.nvmlDeviceGetP2PStatus = p2p
    m.nvmlDeviceGetNvLinkState = state
    m.NVML_NVLINK_MAX_LINKS = 36
    w.mp.setitem(sys.modules, "pynvml", m)
    return m


def _smi(w: World, fx: dict[str, Any], topo: str | None) -> None:
    answers = [("*--query-gpu=*", fx["nvidia_smi"], 0), ('""', fx["nvidia_smi_head"], 0)]
    if topo is not None:
        answers.insert(0, ('"topo -m"', topo, 0))
    w.tool(w.bin / "nvidia-smi", answers)


def _host(*args: str) -> Any:
    return CliRunner().invoke(main, ["host", *args])


def test_two_h200s_over_nvlink_from_nvml(world: World) -> None:
    fx = fixture("h200x2_nvlink")
    world.install(fx, smi=False)
    _nvml(world, fx)
    _smi(world, fx, fx["nvidia_smi_topo"])
    r = _host()
    assert r.exit_code == 0, r.output
    assert "link       gpu 0 - gpu 1: NVLink (18 NVLink links active; nvml)" in r.output.splitlines()
    assert not [c for c in world.calls() if "topo" in c]  # NVML told: nvidia-smi never asked
    host.clear_cache()
    doc = json.loads(_host("--json").output)
    assert doc["gpu_links"] == [{"a": 0, "b": 1, "kind": "nvlink", "detail": "18 NVLink links active",
                                 "source": "nvml"}]
    host.clear_cache()
    assert host.shared_gpu_link() == ("nvlink", "nvml: 18 NVLink links active between each pair of the machine's 2 "
                                                "GPUs")


def test_a_link_down_shows_in_the_count_of_active_links(world: World) -> None:
    fx = fixture("h200x2_nvlink")
    fx["nvml_nvlink_active"] = [18, 14]
    world.install(fx, smi=False)
    _nvml(world, fx)
    assert _links.links() == (GpuLink(a=0, b=1, kind="nvlink", detail="14 NVLink links active", source="nvml"),)


def test_nvml_without_p2p_falls_back_to_nvidia_smi_topo(world: World) -> None:
    fx = fixture("h200x2_nvlink")
    world.install(fx, smi=False)
    _nvml(world, fx, p2p_error=True)
    _smi(world, fx, fx["nvidia_smi_topo"])
    r = _host()
    assert "link       gpu 0 - gpu 1: NVLink (NV18; nvidia-smi topo -m)" in r.output.splitlines(), r.output
    assert [c for c in world.calls() if "topo" in c] == ["nvidia-smi topo -m"]


def test_no_pynvml_at_all_reads_the_topology_matrix(world: World) -> None:
    fx = fixture("h200x2_nvlink")
    world.install(fx, nvml=False, smi=False)
    _smi(world, fx, fx["nvidia_smi_topo"])
    assert _links.links() == (GpuLink(a=0, b=1, kind="nvlink", detail="NV18", source="nvidia-smi topo -m"),)
    assert host.shared_gpu_link() == ("nvlink", "nvidia-smi topo -m: NV18 between each pair of the machine's 2 GPUs")


@pytest.mark.parametrize(("key", "cell"), [("nvidia_smi_topo", "PHB"), ("nvidia_smi_topo_sys", "SYS")])
def test_two_gpus_over_pcie_from_the_topology_matrix(world: World, key: str, cell: str) -> None:
    fx = fixture("l40s_x2_pcie")
    world.install(fx, nvml=False, smi=False)
    _smi(world, fx, fx[key])
    r = _host()
    assert f"link       gpu 0 - gpu 1: PCIe ({cell}; nvidia-smi topo -m)" in r.output.splitlines(), r.output
    assert host.shared_gpu_link() == ("pcie", f"nvidia-smi topo -m: {cell} between each pair of the machine's 2 GPUs")


def test_two_gpus_over_pcie_from_nvml(world: World) -> None:
    fx = fixture("l40s_x2_pcie")
    world.install(fx, smi=False)
    _nvml(world, fx)
    assert _links.links() == (GpuLink(a=0, b=1, kind="pcie", detail="P2P over PCIe (no NVLink: not supported)",
                                      source="nvml"),)
    fx["nvml_p2p"] = [{"a": 0, "b": 1, "read": 4, "nvlink": 5}]
    host.clear_cache()
    assert _links.links() == (GpuLink(a=0, b=1, kind="none", source="nvml", detail="P2P off (read: disabled by a "
                                      "driver registry key): NCCL copies through host memory"),)


def test_nothing_tells_the_link_and_host_says_so(world: World) -> None:
    fx = fixture("h200x2_nvlink")
    world.install(fx, nvml=False, smi=False)
    _smi(world, fx, None)  # an nvidia-smi that refuses `topo -m`
    r = _host()
    assert ("link       not read (NVML gave no P2P status, `nvidia-smi topo -m` no matrix): verify judges no "
            "all-reduce band by it") in r.output.splitlines(), r.output
    host.clear_cache()
    assert json.loads(_host("--json").output)["gpu_links"] is None
    assert host.shared_gpu_link() is None


def test_one_gpu_or_gpus_named_by_hand_have_no_link(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    fx = fixture("h200")  # recorded on a real one-H200 machine
    world.install(fx, smi=False)
    _smi(world, fx, "garbage")
    r = _host("--json")
    assert json.loads(r.output)["gpu_links"] == [] and not [c for c in world.calls() if "topo" in c]
    assert "link " not in _host().output
    monkeypatch.setenv("TRITONLOCK_GPUS", "9.0,9.0")  # another machine, described: this one's links say nothing
    host.clear_cache()
    assert json.loads(_host("--json").output)["gpu_links"] == []


@pytest.mark.parametrize("text", [
    "", "garbage", "\tGPU0\nGPU0\t X \n",  # one GPU
    "\tGPU0\tGPU1\nGPU0\t X \tNV18\n",  # a row missing
    "\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tPHB\t X \n",  # not symmetric
    "\tGPU0\tGPU1\nGPU0\t X \tFOO\nGPU1\tFOO\t X \n",  # not in the legend
    "\tGPU0\tGPU1\nGPU0\tNV18\tNV18\nGPU1\tNV18\t X \n",  # no X on the diagonal
    "\tGPU1\tGPU2\nGPU1\t X \tNV4\nGPU2\tNV4\t X \n",  # numbering not from 0
    "\tGPU0\tGPU1\nGPU0\t X \nGPU1\tNV18\t X \n",  # a short row
])
def test_a_matrix_that_does_not_read_is_none(text: str) -> None:
    assert parse_topo(text) is None


def test_three_gpus_with_mixed_links_share_no_link() -> None:
    text = ("\tGPU0\tGPU1\tGPU2\tCPU Affinity\nGPU0\t X \tNV12\tSYS\t0-7\nGPU1\tNV12\t X \tSYS\t0-7\n"
            "GPU2\tSYS\tSYS\t X \t8-15\n")
    found = parse_topo(text)
    assert found is not None and [(x.a, x.b, x.kind, x.detail) for x in found] == [
        (0, 1, "nvlink", "NV12"), (0, 2, "pcie", "SYS"), (1, 2, "pcie", "SYS")]
    assert one_link(found, 2) is None  # which two GPUs a run had cannot be told
    assert one_link(found[:1], 3) is None  # links covering 2 GPUs say nothing of a third
    assert one_link(found[:1], 2) == ("nvlink", "nvidia-smi topo -m: NV12 between each pair of the machine's 2 GPUs")
    assert one_link((), 2) is None and one_link(None, 2) is None and one_link(found[:1], 1) is None


# ---------------------------------------------------------------- verify's judgment, from host detection's link


def test_verify_judges_the_allreduce_by_the_hosts_link_when_its_runner_could_not_read_it() -> None:
    from test_verify_speed import _two_gpus
    from tritonlock.verify import _parse

    def row(doc: dict[str, Any], link: Any) -> Any:
        return next(k for k in _parse(doc, 3.0, link).kernels if k.kernel == "nccl_all_reduce").speed

    said = "nvidia-smi topo -m: NV18 between each pair of the machine's 2 GPUs"
    sp = row(_two_gpus(121.0, peers=False), lambda: ("nvlink", said))
    assert sp.verdict == "slow" and sp.link == "nvlink" and sp.link_source == said
    assert sp.detail.endswith(f"; the link as host detection read it: {said}")
    sp = row(_two_gpus(297.0, peers=False), lambda: ("nvlink", said))
    assert sp.verdict == "ok" and sp.inferred and sp.to_json()["link_source"] == said
    sp = row(_two_gpus(40.0, peers=False), lambda: ("pcie", "nvidia-smi topo -m: PHB between each pair"))
    assert sp.verdict == "no-band" and "over PCIe (P2P)" in sp.detail and sp.link == "pcie"
    sp = row(_two_gpus(297.0, peers=False), lambda: None)
    assert sp.verdict == "no-band" and sp.detail.startswith("the link between the 2 GPUs is not known")

    def never() -> None:
        raise AssertionError("host detection asked although the runner's NVML told the link")

    sp = row(_two_gpus(297.0), never)
    assert sp.verdict == "ok" and sp.link_source == "NVML's P2P status (the runner)"
    assert "host detection" not in sp.detail

