"""The shipped compat/ data and the Matrix questions, on the real data; bad data sets give exact errors."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from packaging.version import Version

from tritonlock import _toml
from tritonlock.errors import MatrixError
from tritonlock.compat.matrix import Matrix, load_matrix

COMPAT = Path(__file__).resolve().parent.parent / "compat"

ALL_TORCH = ["2.15.0", "2.14.1", "2.14.0", "2.13.0", "2.12.1", "2.12.0", "2.11.0", "2.10.0", "2.9.1", "2.9.0",
             "2.8.0", "2.7.1", "2.7.0", "2.6.0", "2.5.1", "2.5.0", "2.4.1", "2.4.0", "2.3.1", "2.3.0", "2.2.2",
             "2.2.1", "2.2.0", "2.1.2", "2.1.1", "2.1.0", "2.0.1", "2.0.0"]


@pytest.fixture(scope="module")
def m() -> Matrix:
    return load_matrix()


def test_loads_the_shipped_data_once(m: Matrix) -> None:
    assert m.version == "2026.12.11"
    assert load_matrix() is m  # the default load is cached
    assert m.index_url("cu126") == "https://download.pytorch.org/whl/cu126"
    assert {"torch", "torchvision", "torchaudio", "triton", "pytorch-triton"} <= m.torch_family
    assert not any(name.startswith("nvidia-") for name in m.torch_family)


def test_every_row_has_a_source() -> None:
    # The same rule as the repository hook: a table with scalar values inside an array of tables needs a
    # `source`, itself or in a parent table.
    missing: list[str] = []

    def walk(x: Any, where: str, sourced: bool) -> None:
        if isinstance(x, dict):
            sourced = sourced or bool(x.get("source"))
            if any(not isinstance(v, (dict, list)) for v in x.values()) and "[" in where and not sourced:
                missing.append(where)
            for k, v in x.items():
                for i, e in enumerate(v) if isinstance(v, list) else []:
                    walk(e, f"{where}.{k}[{i}]", sourced)
                if isinstance(v, dict):
                    walk(v, f"{where}.{k}", sourced)

    files = sorted(COMPAT.glob("*.toml"))
    assert [f.name for f in files] == ["bands.toml", "builds.toml", "channels.toml", "cuda.toml", "cudalibs.toml",
                                       "gpus.toml", "meta.toml", "packages.toml", "rocm.toml", "torch.toml",
                                       "triton.toml", "xpu.toml"]
    for f in files:
        walk(_toml.loads(f.read_text(encoding="utf-8")), f.name, False)
    assert missing == []


def test_loaded_objects_keep_their_sources(m: Matrix) -> None:
    sources = [r.source for rows in (m.cuda, m.minor_compat, m.torch, m.triton, m.triton_windows, m.gpus) for r in rows]
    sources += [v.source for r in m.torch for v in r.variants]
    # a URL a reviewer can open, or a project page on the user's default index (no registry address in the repo)
    assert all(s.startswith(("https://", "the default index (PyPI) simple page of project ")) for s in sources)


@pytest.mark.parametrize("driver,cuda", [
    ("450.36.06", None),  # the 11.0 RC driver: below 11.0 GA (450.51.05)
    ("470.57.02", "11.4"), ("470.256.02", "11.4"),
    ("515.105.01", "11.7"), ("520.61.05", "11.8"),
    ("525.60.13", "12.0"), ("525.147.05", "12.0"),
    ("535.104.05", "12.2"), ("535.261.03", "12.2"),
    ("545.23.08", "12.3"),
    ("550.54.15", "12.4"), ("550.127.05", "12.4"),
    ("555.42.06", "12.5"),
    ("560.35.03", "12.6"),
    ("565.57.01", "12.6"),  # R565 reports 12.7, a CUDA that was never released: the newest real one is 12.6
    ("570.124.06", "12.8"), ("570.86.10", "12.8"),
    ("575.57.08", "12.9"),
    ("580.65.06", "13.0"), ("580.159.04", "13.0"),  # 580.159.04: the H200 host, nvidia-smi "CUDA Version: 13.0"
    ("590.48.01", "13.1"), ("595.58.03", "13.2"),
])
def test_max_cuda_for_driver_linux(m: Matrix, driver: str, cuda: str | None) -> None:
    assert m.max_cuda_for_driver(driver) == cuda


def test_max_cuda_for_driver_windows(m: Matrix) -> None:
    assert m.max_cuda_for_driver("551.61", "windows") == "12.4"
    assert m.max_cuda_for_driver("537.13", "windows") == "12.2"
    assert m.max_cuda_for_driver("572.16", "windows") == "12.8"
    # the 13.0 GA notes give 580.88 for Windows (later notes print N/A); 13.1+ stay unknown on Windows
    assert m.max_cuda_for_driver("581.57", "windows") == "13.0"
    assert m.max_cuda_for_driver("580.70", "windows") == "12.9"
    assert m.max_cuda_for_driver("not-a-driver") is None


def test_driver_floor_strict_and_compatible(m: Matrix) -> None:
    assert m.driver_floor("12.6", "linux", "strict") == "560.28.03"
    assert m.driver_floor("12.6", "linux", "compatible") == "525.60.13"
    assert m.driver_floor("12.6.3") == "525.60.13"  # a patch-level CUDA is its minor's toolkit
    assert m.driver_floor("12.8", "linux", "strict") == "570.26"
    assert m.driver_floor("11.8", "linux", "strict") == "520.61.05"
    assert m.driver_floor("11.8", "linux", "compatible") == "450.80.02"
    assert m.driver_floor("13.0", "linux", "strict") == m.driver_floor("13.0") == "580.65.06"
    assert m.driver_floor("13.2", "linux", "strict") == "595.45.04"
    assert m.driver_floor("13.2", "linux", "compatible") == "580.65.06"
    assert m.driver_floor("12.4", "windows", "strict") == "551.61"
    assert m.driver_floor("12.4", "windows", "compatible") == "527.41"
    assert m.driver_floor("13.0", "windows") == "580.88"
    # Table 3: "N/A" for Windows from 13.1 on (no bundled driver): strict falls back to the 13.x floor, and the
    # build's CUDA <= the CUDA the driver reports decides (resolve)
    assert m.driver_floor("13.2", "windows", "strict") == "580.88"
    assert m.driver_floor("10.2") is None and m.driver_floor("12.7", policy="strict") is None
    with pytest.raises(ValueError):
        m.driver_floor("12.6", policy="lenient")


def test_compatible_floor_is_never_above_strict(m: Matrix) -> None:
    for tk in m.cuda:
        for os in ("linux", "windows"):
            strict, compat = m.driver_floor(tk.version, os, "strict"), m.driver_floor(tk.version, os, "compatible")
            if strict is not None:
                assert compat is not None and Version(compat) <= Version(strict), (tk.version, os)


def test_toolkit_drivers_rise_with_the_version(m: Matrix) -> None:
    versions = [Version(t.version) for t in m.cuda]
    assert versions == sorted(versions) and str(versions[0]) == "11.0" and str(versions[-1]) == "13.2"
    drivers = [Version(t.linux_driver) for t in m.cuda]
    assert drivers == sorted(drivers)
    assert m.toolkit("12.7") is None and m.toolkit("12.6.3") is m.toolkit("12.6")


@pytest.mark.parametrize("name,cc", [
    ("NVIDIA A100-SXM4-80GB", "8.0"), ("A100", "8.0"), ("NVIDIA A100 80GB PCIe", "8.0"),
    ("NVIDIA GeForce RTX 4090", "8.9"), ("NVIDIA H200", "9.0"), ("NVIDIA H100 80GB HBM3", "9.0"),
    ("H200", "9.0"), ("NVIDIA GH200 480GB", "9.0"), ("RTX 5090", "12.0"), ("NVIDIA GeForce RTX 5090", "12.0"),
    ("Tesla T4", "7.5"), ("GTX 1080 Ti", "6.1"), ("NVIDIA GeForce GTX 1080 Ti", "6.1"),
    ("Tesla V100-SXM2-16GB", "7.0"), ("Tesla P100-PCIE-16GB", "6.0"), ("Tesla K80", "3.7"),
    ("NVIDIA A10G", "8.6"), ("NVIDIA A10", "8.6"), ("NVIDIA L4", "8.9"), ("NVIDIA L40S", "8.9"),
    ("NVIDIA RTX A6000", "8.6"), ("NVIDIA RTX 6000 Ada Generation", "8.9"), ("Quadro RTX 6000", "7.5"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "12.0"), ("NVIDIA B200", "10.0"),
    ("NVIDIA GB200", "10.0"), ("NVIDIA B300 SXM6 AC", "10.3"), ("Orin", "8.7"), ("NVIDIA GB10", "12.1"),
    ("NVIDIA GeForce RTX 3060 Laptop GPU", "8.6"), ("NVIDIA RTX A1000 6GB Laptop GPU", "8.6"),
])
def test_gpu_cc(m: Matrix, name: str, cc: str) -> None:
    assert m.gpu_cc(name) == cc


def test_gpu_cc_unknown(m: Matrix) -> None:
    assert m.gpu_cc("AMD Instinct MI300X") is None
    assert m.gpu_cc("") is None
    assert m.gpu_cc("NVIDIA A1000X") is None  # no word-prefix guessing: A1000X is not an A100


def test_torch_releases_cover_2_0_to_2_15_newest_first(m: Matrix) -> None:
    versions = [r.version for r in m.torch]
    assert versions == ALL_TORCH
    assert all(Version(a) > Version(b) for a, b in zip(versions, versions[1:]))
    assert m.torch_release("2.6.0+cu126") is m.torch_release("2.6.0")
    assert m.torch_release("2.16.0") is None and m.torch_release("nonsense") is None


def test_every_triton_pin_exists_and_covers_the_pythons(m: Matrix) -> None:
    for rel in m.torch:
        assert rel.triton is not None
        tr = m.triton_release(rel.triton)
        assert tr is not None, rel.version
        assert set(rel.triton_platforms) <= set(tr.platforms), rel.version
        below = Version(rel.triton_python_below) if rel.triton_python_below else None
        needs = [p for p in rel.python if below is None or Version(p) < below]
        assert set(needs) <= set(tr.python), (rel.version, needs, tr.python)


def test_pypi_backend_is_a_published_variant(m: Matrix) -> None:
    for rel in m.torch:
        assert rel.pypi_backend == rel.pypi_backends["linux_x86_64"]
        for plat, backend in rel.pypi_backends.items():
            assert rel.variant(backend, plat) is not None, (rel.version, plat, backend)
    assert [m.torch_release(v).pypi_backend for v in ("2.0.1", "2.4.1", "2.5.0", "2.7.1", "2.8.0", "2.11.0")] == [  # type: ignore[union-attr]
        "cu117", "cu121", "cu124", "cu126", "cu128", "cu130"]


def test_variants_name_known_toolkits(m: Matrix) -> None:
    for rel in m.torch:
        for v in rel.variants:
            assert v.platforms
            if v.backend == "cpu":
                assert v.cuda is None and not v.archs
            else:
                assert v.cuda and m.toolkit(v.cuda) and v.backend == "cu" + v.cuda.replace(".", "")


def test_arch_facts(m: Matrix) -> None:
    def archs(torch: str, backend: str, plat: str = "linux_x86_64") -> tuple[str, ...]:
        rel = m.torch_release(torch)
        var = rel.variant(backend, plat) if rel else None
        assert var is not None, (torch, backend, plat)
        return var.archs

    # torch 2.11.0+cu130 on the H200 host: torch.cuda.get_arch_list() == sm_75 ... sm_120.
    assert archs("2.11.0", "cu130") == ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")
    assert "sm_37" in archs("2.0.0", "cu118") and "sm_37" in archs("2.7.1", "cu118")
    assert "sm_37" not in archs("2.1.0", "cu121") and "sm_50" in archs("2.1.0", "cu121")
    assert "sm_120" in archs("2.7.0", "cu128") and "sm_50" not in archs("2.7.0", "cu128")
    assert "sm_70" in archs("2.8.0", "cu128") and "sm_60" not in archs("2.8.0", "cu128")
    assert archs("2.9.0", "cu130")[0] == "sm_75"  # CUDA 13 drops Maxwell/Pascal/Volta
    assert "sm_110" in archs("2.12.0", "cu130", "linux_aarch64")  # Jetson Thor, aarch64 only
    assert "sm_50" in archs("2.14.0", "cu126")


def test_runs_on(m: Matrix) -> None:
    def var(torch: str, backend: str) -> Any:
        rel = m.torch_release(torch)
        return rel.variant(backend, "linux_x86_64") if rel else None

    assert var("2.6.0", "cu126").runs_on("6.1")  # GTX 1080: sm_60 SASS runs on 6.1
    assert not var("2.8.0", "cu128").runs_on("6.1")
    assert var("2.7.0", "cu128").runs_on("12.0") and not var("2.6.0", "cu126").runs_on("12.0")
    assert var("2.11.0", "cu130").runs_on("9.0") and var("2.11.0", "cu130").runs_on("12.1")
    assert var("2.9.0", "cu129").runs_on("13.0")  # only through the sm_120 PTX
    assert not var("2.11.0", "cu130").runs_on("7.0")


def test_glibc_floors(m: Matrix) -> None:
    r26, r27 = m.torch_release("2.6.0"), m.torch_release("2.7.0")
    assert r26 and r27
    assert r26.glibc == {"linux_x86_64": "2.17", "linux_aarch64": "2.28"}
    assert r26.glibc_for("linux_x86_64", "cu126") == "2.28" and r26.glibc_for("linux_x86_64", "cu124") == "2.17"
    assert r27.glibc_for("linux_x86_64") == "2.28"
    t33 = m.triton_release("3.3.0")
    assert t33 and t33.glibc == {"linux_x86_64": "2.27"}


def test_triton_facts(m: Matrix) -> None:
    assert [t.version for t in m.triton][0] == "3.9.0" and m.triton[-1].version == "2.0.0"
    t35, t32 = m.triton_release("3.5.0"), m.triton_release("3.2.0")
    assert t35 and t32
    assert t35.platforms == ("linux_x86_64", "linux_aarch64") and t32.platforms == ("linux_x86_64",)
    assert (t32.min_cc, t32.supported_cc) == ("7.0", "8.0")
    tw = m.triton_windows_for("2.6.0+cu126")
    assert tw is not None and tw.version == ">=3.2,<3.3"
    assert m.triton_windows_for("2.15") is None


# --- bad data sets --------------------------------------------------------------------------------------------

def _bad_compat(tmp_path: Path, name: str, edit: Any) -> Path:
    root = tmp_path / "compat"
    shutil.copytree(COMPAT, root)
    data = _toml.loads((root / name).read_text(encoding="utf-8"))
    edit(data)
    (root / name).write_text(tomlkit.dumps(data), encoding="utf-8")
    return root


def _error(root: Path) -> str:
    with pytest.raises(MatrixError) as exc:
        load_matrix(str(root))
    return str(exc.value)


def test_wrong_type_names_file_and_key(tmp_path: Path) -> None:
    root = _bad_compat(tmp_path, "torch.toml", lambda d: d["torch"][3]["variant"][1].update(backend=5))
    assert _error(root) == ("compat/torch.toml: torch[3].variant[1].backend: expected a string like 'cu126', got 5 "
                            "— fix the row")


def test_missing_source_names_the_row(tmp_path: Path) -> None:
    root = _bad_compat(tmp_path, "gpus.toml", lambda d: d["gpu"][2].pop("source"))
    assert _error(root) == ("compat/gpus.toml: gpu[2].source: missing (expected a string like 'https://...') "
                            "— fix the row")


def test_unknown_key_and_all_problems_are_reported(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["cuda"][0]["linux_drvier"] = "450.51.05"
        d["cuda"][4]["linux_driver"] = "latest"

    msg = _error(_bad_compat(tmp_path, "cuda.toml", edit)).splitlines()
    assert msg == [
        "compat/cuda.toml: cuda[0].linux_drvier: unknown key (known here: linux_driver, source, version, "
        "windows_driver) — fix the row",
        "compat/cuda.toml: cuda[4].linux_driver: expected a string like '560.28.03', got 'latest' — fix the row",
    ]


def test_cross_file_facts_are_checked(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["torch"][0]["triton"] = "9.9.9"
        d["torch"][1]["variant"][1]["cuda"] = "12.8"  # a cu126 row claiming CUDA 12.8

    msg = _error(_bad_compat(tmp_path, "torch.toml", edit)).splitlines()
    assert msg == [
        "compat/torch.toml: torch[1].variant[1].cuda: 12.8 does not match backend 'cu126' — fix the row",
        "compat/torch.toml: torch[0].triton: 9.9.9 is not in compat/triton.toml — add it there",
    ]


def test_unparsable_and_missing_files(tmp_path: Path) -> None:
    root = tmp_path / "compat"
    shutil.copytree(COMPAT, root)
    (root / "cuda.toml").write_text('[[cuda]]\nversion = "12.6\n', encoding="utf-8")
    (root / "gpus.toml").unlink()
    msg = _error(root).splitlines()
    assert msg[0].startswith("compat/cuda.toml:2: not valid TOML (") and msg[0].endswith("— fix the file")
    assert msg[1] == ("compat/gpus.toml: missing — the compat data set needs meta.toml, cuda.toml, torch.toml, "
                      "triton.toml, gpus.toml")


def test_no_build_claims_an_arch_its_cuda_cannot_target(m: Matrix) -> None:
    """sm_90 needs CUDA 11.8; sm_100/sm_120 need 12.8; CUDA 12 dropped sm_3x, CUDA 13 dropped sm_5x–sm_70."""
    from packaging.version import Version

    first = {"sm_89": "11.8", "sm_90": "11.8", "sm_100": "12.8", "sm_101": "12.8", "sm_120": "12.8",
             "sm_103": "12.9", "sm_121": "12.9"}
    last = {"sm_35": "11.8", "sm_37": "11.8", "sm_50": "12.9", "sm_52": "12.9", "sm_60": "12.9", "sm_61": "12.9",
            "sm_70": "12.9"}
    bad = [(r.version, v.backend, v.platforms, a) for r in m.torch for v in r.variants if v.cuda
           for a in v.archs + v.ptx
           if (a in first and Version(v.cuda) < Version(first[a])) or (a in last and Version(v.cuda) > Version(last[a]))]
    assert bad == []


def test_what_each_gpu_asks_of_the_driver(m: Matrix) -> None:
    """gpus.toml first_cuda / last_branch / integrated: the driver branch a GPU needs, from NVIDIA's notes."""
    def floor(cc: str, os: str = "linux") -> str | None:
        found = m.gpu_driver_floor(cc, os)
        return found[0] if found else None

    # the release driver (Table 3) of the first toolkit with the architecture
    assert floor("12.0") == floor("10.0") == "570.26" and floor("12.0", "windows") == "570.65"  # CUDA 12.8
    assert floor("10.3") == floor("12.1") == "575.51.03"  # CUDA 12.9: sm_103, sm_121
    assert floor("9.0") == floor("8.9") == "520.61.05"  # CUDA 11.8: Hopper and Ada
    assert floor("8.6") == "455.23" and floor("8.0") == "450.51.05"  # CUDA 11.1 / 11.0
    assert floor("11.0") == "580.65.06"  # Jetson Thor: sm_101 renumbered sm_110 in CUDA 13.0
    assert floor("7.5") is None and floor("6.1") is None  # older than every toolkit in cuda.toml
    lasts = {g.family: g.last_branch for g in m.gpus if g.last_branch}
    assert lasts["Kepler GK210"] == 470 and lasts["Pascal GP10x"] == lasts["Volta GV100"] == 580
    assert "Turing" not in lasts and "Ampere GA100" not in lasts
    assert {g.family for g in m.gpus if g.integrated} == {"Jetson Nano / TX1", "Jetson TX2", "Jetson Xavier",
                                                          "Jetson Orin", "Jetson Thor"}
    for g in m.gpus:
        assert not g.first_cuda or g.first_cuda_source.startswith("https://docs.nvidia.com/cuda/")
        assert not g.last_branch or g.last_branch_source.startswith("https://")
    assert m.max_cuda_for_driver("580.00", by_branch=True) == "13.0" and m.max_cuda_for_driver("580.00") == "12.9"


def test_a_first_cuda_outside_the_toolkit_table_is_refused(tmp_path: Path) -> None:
    root = _bad_compat(tmp_path, "gpus.toml", lambda d: d["gpu"][-1].update(first_cuda="10.0"))
    assert "first_cuda: CUDA 10.0 is not in cuda.toml — add the toolkit there (its driver is the floor) — fix the row" \
        in _error(root)
    root = _bad_compat(tmp_path / "b", "gpus.toml", lambda d: d["gpu"][0].pop("last_branch_source"))
    assert "gpu[0].last_branch_source: missing" in _error(root)
    root = _bad_compat(tmp_path / "c", "gpus.toml", lambda d: d["gpu"][0].update(integrated="yes"))
    assert "gpu[0].integrated: expected true or false, got 'yes'" in _error(root)
