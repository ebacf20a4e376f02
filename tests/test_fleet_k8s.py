"""`export --format k8s`: manifests valid against the Kubernetes API's own schema (kubernetes-validate ships the
OpenAPI-derived JSON schemas per Kubernetes release; strict mode rejects unknown fields). No cluster is reachable
here, so the Jobs are checked, not run."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner

from conftest import write_intent
from pkgindex import LocalIndex
from tritonlock.cli import main

K8S_VERSIONS = ("1.29.0", "1.33.0")
INTENT = '''target-files = ["hosts/*.toml"]
[environment]
python = "3.11"
torch = "==2.6.0"
'''


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory, local_index: LocalIndex) -> tuple[Path, list[dict]]:
    proj = tmp_path_factory.mktemp("k8s") / "proj"
    (proj / "hosts").mkdir(parents=True)
    (proj / "hosts" / "a100.toml").write_text('[[targets]]\nname = "A100 pool"\nos = "linux"\narch = "x86_64"\n'
                                              'glibc = "2.31"\ndriver = "550.54.15"\ngpus = ["8.0", "8.0"]\n')
    (proj / "hosts" / "cpu.toml").write_text('[[targets]]\nname = "cpu"\nos = "linux"\narch = "x86_64"\n')
    write_intent(proj, local_index, INTENT)
    r = CliRunner().invoke(main, ["resolve", "-p", str(proj)])
    assert r.exit_code == 0, r.output
    out = proj / "verify.yaml"
    r = CliRunner().invoke(main, ["export", "--format", "k8s", "-p", str(proj), "-o", str(out), "--image",
                                  "registry.example/team/tritonlock:1", "--nodes", "3", "--namespace", "ml",
                                  "--toleration", "dedicated=gpu:NoSchedule", "--node-selector", "pool=train",
                                  "--verify-args", "--quick", "--time", "01:30:00"])
    assert r.exit_code == 0, r.output
    docs = [d for d in yaml.safe_load_all(out.read_text()) if d]
    return proj, docs


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_manifest_is_valid_against_the_api_schema(manifests: tuple[Path, list[dict]], version: str) -> None:
    _, docs = manifests
    assert [d["kind"] for d in docs] == ["ConfigMap", "Job", "Job"]
    for d in docs:
        kubernetes_validate.validate(d, version, strict=True)


def test_the_schema_check_can_fail(manifests: tuple[Path, list[dict]]) -> None:
    import copy

    job = copy.deepcopy(manifests[1][1])
    job["spec"]["template"]["spec"]["containers"][0]["resource"] = {}  # a typo: "resource"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, K8S_VERSIONS[-1], strict=True)


def test_jobs_follow_the_targets(manifests: tuple[Path, list[dict]]) -> None:
    proj, (cm, gpu, cpu) = manifests
    assert set(cm["data"]) == {"triton-env.toml", "triton-env.lock", "hosts_a100.toml", "hosts_cpu.toml"}
    assert cm["data"]["triton-env.lock"] == (proj / "triton-env.lock").read_text()  # the bytes, unchanged
    assert gpu["metadata"]["name"] == "tritonlock-verify-a100-pool" and gpu["metadata"]["namespace"] == "ml"
    spec = gpu["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 3, 3)
    assert spec["activeDeadlineSeconds"] == 5400 and spec["backoffLimit"] == 0
    pod = spec["template"]["spec"]
    c = pod["containers"][0]
    assert c["resources"]["limits"] == {"nvidia.com/gpu": 2} and c["image"] == "registry.example/team/tritonlock:1"
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    exprs = {e["key"]: (e["operator"], e["values"]) for e in terms[0]["matchExpressions"]}
    assert exprs["kubernetes.io/arch"] == ("In", ["amd64"])
    assert exprs["nvidia.com/gpu.compute.major"] == ("In", ["8"]) and exprs["nvidia.com/gpu.compute.minor"] == ("In", ["0"])
    assert exprs["nvidia.com/cuda.driver.major"][0] == "Gt"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"} in pod["tolerations"]
    assert pod["nodeSelector"] == {"pool": "train"}
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["topologyKey"] == "kubernetes.io/hostname"  # one pod per node
    script = c["args"][0]
    assert "sync --locked --no-verify" in script and "verify --json --record" in script and "--quick" in script
    assert "${JOB_COMPLETION_INDEX:+-$JOB_COMPLETION_INDEX}" in script
    mounts = {v["name"]: v for v in pod["volumes"]}
    assert mounts["reports"]["persistentVolumeClaim"]["claimName"] == "tritonlock-reports"
    assert {"key": "hosts_a100.toml", "path": "hosts/a100.toml"} in mounts["project"]["configMap"]["items"]
    cpod = cpu["spec"]["template"]["spec"]
    assert "limits" not in cpod["containers"][0]["resources"] and "nvidia.com/gpu" not in str(cpod.get("tolerations"))


def test_k8s_export_needs_an_image_and_a_linux_target(manifests: tuple[Path, list[dict]]) -> None:
    proj, _ = manifests
    r = CliRunner().invoke(main, ["export", "--format", "k8s", "-p", str(proj)])
    assert r.exit_code != 0 and "--format k8s needs --image" in r.output
    r = CliRunner().invoke(main, ["export", "--format", "k8s", "-p", str(proj), "--image", "x", "--toleration", "bad"])
    assert r.exit_code != 0 and "--toleration 'bad': expected key[=value]:Effect" in r.output
