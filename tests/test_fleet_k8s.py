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


def test_any_string_survives_the_yaml_as_it_was() -> None:
    """The manifest writer is ours: whatever a value holds (an intent's comment, an option), YAML reads it back
    unchanged — no character that YAML forbids or folds (DEL, C1 controls, NEL, LINE SEPARATOR, a BOM, CR)."""
    from tritonlock.fleet.k8s import to_yaml

    odd = ["a\u2028b", "x\x7fy", "n\x85el", "\ufeffbom", "cr\r\nlf", "tab\tin", " lead", "trail ", "'q'", '"dq"',
           "#c", "- x", "null", "yes", "1.0", "", "\x00\x1b[2J", "emoji 💥", "a: b", "[x]", "{y}", "*a", "&b", "!t",
           "%p", "@a", "`b`", "|", ">", "?", "\\", "line\n", "two\nlines\n\n", "\n lead nl", "x\u2029y",
           "# a\u2028b c\u0085 \ufeff\t end  \n\n\n"]
    doc = {"data": {f"k{i}": s for i, s in enumerate(odd)}, "list": odd, "keys": {s or "e": 1 for s in odd[:8]}}
    assert yaml.safe_load(to_yaml([doc])) == doc


def test_targets_that_read_alike_get_distinct_jobs() -> None:
    import dataclasses

    from test_lockfile import sample
    from tritonlock.fleet.k8s import K8sJob, manifests

    lock = sample()
    (t,) = lock.targets
    twins = [dataclasses.replace(t, selection=dataclasses.replace(
        t.selection, target=dataclasses.replace(t.selection.target, name=n))) for n in ("gpu-1", "gpu_1", "GPU 1")]
    docs = manifests(lock, twins, {"triton-env.toml": "", "hosts/a.toml": "", "hosts_a.toml": ""},
                     K8sJob(image="x"))
    jobs = [d for d in docs if d["kind"] == "Job"]
    assert len({j["metadata"]["name"] for j in jobs}) == 3  # (all three were "tritonlock-verify-gpu-1")
    assert len({j["metadata"]["labels"]["tritonlock/target"] for j in jobs}) == 3
    assert len(docs[0]["data"]) == 3  # two files whose keys read alike both travel
    for d in docs:
        kubernetes_validate.validate(d, K8S_VERSIONS[-1], strict=True)


def test_a_name_equal_to_another_names_hashed_form_still_gets_its_own_job() -> None:
    """"a b" and "a-b" clean alike and are hashed; a third target named exactly like one of those hashed names used
    to keep it, so two Jobs (and two report directories) had one name."""
    import dataclasses

    from test_lockfile import sample
    from tritonlock.fleet.k8s import K8sJob, manifests

    lock = sample()
    (t,) = lock.targets

    def named(n: str):  # type: ignore[no-untyped-def]
        return dataclasses.replace(t, selection=dataclasses.replace(
            t.selection, target=dataclasses.replace(t.selection.target, name=n)))

    first = manifests(lock, [named("a b"), named("a-b")], {"triton-env.toml": ""}, K8sJob(image="x"))
    taken = first[1]["metadata"]["name"].removeprefix("tritonlock-verify-")
    docs = manifests(lock, [named("a b"), named("a-b"), named(taken)], {"triton-env.toml": ""}, K8sJob(image="x"))
    jobs = [d for d in docs if d["kind"] == "Job"]
    assert len({j["metadata"]["name"] for j in jobs}) == 3, [j["metadata"]["name"] for j in jobs]
    assert len({j["metadata"]["labels"]["tritonlock/target"] for j in jobs}) == 3
    assert len({e["value"] for j in jobs for e in j["spec"]["template"]["spec"]["containers"][0]["env"]
                if e["name"] == "TRITONLOCK_REPORTS"}) == 3


@pytest.mark.parametrize(("backend", "gpus", "driver", "resource"), [
    ("cu130", ("9.0", "9.0"), "580.65.06", "nvidia.com/gpu"),
    ("rocm7.2", ("gfx942",) * 8, None, "amd.com/gpu"),
    ("xpu", ("pvc",) * 4, None, "gpu.intel.com/i915"),
    ("cpu", (), None, None),
])
def test_each_vendors_gpus_are_asked_for_by_its_device_plugin_resource(backend: str, gpus: tuple[str, ...],
                                                                       driver: str | None, resource: str | None) -> None:
    """An AMD or Intel target's pod asked for no GPU at all (only nvidia.com/gpu was known), so verify ran on none."""
    import dataclasses

    from test_lockfile import sample
    from tritonlock.fleet.k8s import K8sJob, manifests
    from tritonlock.fleet.slurm import gpus_of

    lock = sample()
    (t,) = lock.targets
    t = dataclasses.replace(t, selection=dataclasses.replace(
        t.selection, backend=backend, target=dataclasses.replace(t.selection.target, gpus=gpus, driver=driver)))
    (job,) = [d for d in manifests(lock, [t], {"triton-env.toml": ""}, K8sJob(image="x")) if d["kind"] == "Job"]
    pod = job["spec"]["template"]["spec"]
    limits = pod["containers"][0]["resources"].get("limits", {})
    assert limits == ({resource: len(gpus)} if resource else {})
    assert [x["key"] for x in pod.get("tolerations", [])] == ([resource] if resource else [])
    assert gpus_of(t) == len(gpus)  # Slurm's GRES gpu is vendor-neutral
    kubernetes_validate.validate(job, K8S_VERSIONS[-1], strict=True)
