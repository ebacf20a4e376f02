"""Kubernetes: per GPU node pool (lock target), an Indexed Job whose pods sync and verify the lock.

Shapes follow the Kubernetes Job API (completionMode Indexed, JOB_COMPLETION_INDEX), the NVIDIA device plugin's
`nvidia.com/gpu` resource and the node labels NVIDIA GPU Feature Discovery sets (`nvidia.com/gpu.compute.major`,
`nvidia.com/gpu.compute.minor`, `nvidia.com/cuda.driver.major`). The project (intent, lock, target files) travels
in a ConfigMap; each pod writes its reports to a shared volume (a ReadWriteMany PersistentVolumeClaim).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonlock.errors import UsageError
from tritonlock.fleet.steps import Steps, node_step
from tritonlock.models import Lock, LockedTarget

_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
_DNS = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True, kw_only=True, slots=True)
class K8sJob:
    image: str  # an image with Python, uv and tritonlock on PATH
    namespace: str | None = None
    nodes: int = 1  # pods per target (one per node: a pod anti-affinity spreads them)
    reports_claim: str = "tritonlock-reports"  # a ReadWriteMany PersistentVolumeClaim
    node_selector: tuple[tuple[str, str], ...] = ()  # added to every Job
    tolerations: tuple[str, ...] = ()  # "key[=value]:Effect" added to every Job
    deadline_seconds: int = 3600
    steps: Steps = field(default_factory=Steps)
    name: str = "tritonlock-verify"


def dns_name(text: str, limit: int = 52) -> str:
    """A Kubernetes object name (RFC 1123 label; short enough for the pods' generated names)."""
    s = _DNS.sub("-", text.lower()).strip("-")[:limit].strip("-")
    return s or "target"


def parse_toleration(text: str) -> dict[str, Any]:
    """"key[=value]:Effect" (kubectl taint's syntax) → a Toleration."""
    m = re.fullmatch(r"([A-Za-z0-9./_-]+)(?:=([A-Za-z0-9._-]*))?:(NoSchedule|PreferNoSchedule|NoExecute)", text)
    if not m:
        raise UsageError(f"--toleration {text!r}: expected key[=value]:Effect, e.g. nvidia.com/gpu:NoSchedule")
    key, value, effect = m.groups()
    t: dict[str, Any] = {"key": key, "effect": effect}
    if value is None:
        t["operator"] = "Exists"
    else:
        t["operator"], t["value"] = "Equal", value
    return t


def _gpu(t: LockedTarget) -> bool:
    return bool((t.selection.backend or "").startswith("cu") and t.selection.target.driver)


def gpu_resource(t: LockedTarget) -> str | None:
    """The extended resource a pod asks its GPUs by, as each vendor's device plugin registers it: NVIDIA's
    `nvidia.com/gpu`, AMD's `amd.com/gpu` (ROCm/k8s-device-plugin), Intel's `gpu.intel.com/i915`
    (intel/intel-device-plugins-for-kubernetes); None for a CPU target."""
    backend = t.selection.backend or ""
    if _gpu(t):
        return "nvidia.com/gpu"
    if not t.selection.target.gpus:
        return None
    if backend.startswith("rocm"):
        return "amd.com/gpu"
    if backend.startswith("xpu"):
        return "gpu.intel.com/i915"
    return None


def node_affinity(t: LockedTarget) -> list[dict[str, Any]]:
    """Node selector terms from the target: OS and architecture, and for a GPU target its compute capability
    and a driver branch at or above the build's floor (labels from GPU Feature Discovery)."""
    spec = t.selection.target
    exprs: list[dict[str, Any]] = [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": [_ARCH.get(spec.arch, spec.arch)]},
    ]
    if _gpu(t):
        ccs = sorted(set(spec.gpus))
        if len(ccs) == 1:
            major, minor = ccs[0].split(".")
            exprs += [{"key": "nvidia.com/gpu.compute.major", "operator": "In", "values": [major]},
                      {"key": "nvidia.com/gpu.compute.minor", "operator": "In", "values": [minor]}]
        floor = t.selection.driver_floor
        if floor and floor.split(".")[0].isdigit():
            exprs.append({"key": "nvidia.com/cuda.driver.major", "operator": "Gt",
                          "values": [str(int(floor.split(".")[0]) - 1)]})
    return [{"matchExpressions": exprs}]


def _script(job: K8sJob) -> str:
    return ("set -u\n"
            "mkdir -p /work/project \"$TRITONLOCK_REPORTS\"\n"
            "cp -RL /project/. /work/project/   # a writable copy: verify --record writes beside the lock\n"
            + node_step(job.steps, index_var="JOB_COMPLETION_INDEX")
            + "node_step\n")


def project_files(project: Path, lock: Lock) -> dict[str, str]:
    """The files a node needs to run `sync --locked`: the intent, the lock and the intent's target files.

    Credentials written into index URLs (`https://user:token@host/...`) are taken out: a manifest is applied,
    shared and committed, and a secret does not belong in it. The lock stays fresh without them (the intent's hash
    leaves credentials out); the pods take theirs as pip does — a netrc or PIP_INDEX_URL from a Secret."""
    from tritonlock._files import read_text
    from tritonlock._urls import strip_all_credentials
    from tritonlock.intent.read import read_intent

    from tritonlock._discover import intent_file

    intent_path = intent_file(project)  # triton-env.toml, or pyproject.toml with [tool.tritonlock]
    intent = read_intent(intent_path)
    names = [intent_path.name, "triton-env.lock"]
    names += sorted({t.origin[5:] for t in intent.targets if t.origin.startswith("file:")})
    del lock
    out = {}
    for n in names:
        try:
            out[n] = strip_all_credentials(read_text(project / n))
        except (OSError, UnicodeDecodeError) as err:
            raise UsageError(f"{project / n}: cannot read ({getattr(err, 'strerror', None) or err})") from None
    return out


def _unique(names: list[str], make: Any, limit: int) -> dict[str, str]:
    """name → a valid Kubernetes name from `make`, distinct for distinct names: two names that read the same once
    cleaned ("gpu-1" and "gpu_1", "A" and "a") get a short hash of their own, so that neither object replaces the
    other when the manifest is applied."""
    import hashlib

    clean = {n: make(n) for n in names}

    def hashed(n: str) -> str:
        tail = hashlib.sha256(n.encode()).hexdigest()[:8]
        return f"{clean[n][: limit - 9].rstrip('-_.')}-{tail}"

    out = {n: hashed(n) if list(clean.values()).count(c) > 1 or len(c) > limit else c for n, c in clean.items()}
    # A name that cleaned without a change may still equal another's hashed form ("a-b-1a2b3c4d" beside "a b"):
    # hash it too, until every object has a name of its own.
    while len(set(out.values())) < len(out):
        taken = [v for v in out.values()]
        again = [n for n, v in out.items() if taken.count(v) > 1 and v != hashed(n)]
        if not again:
            raise UsageError(f"two lock targets would get one Kubernetes name ({', '.join(sorted(names))}) — "
                             "rename one of them")
        for n in again:
            out[n] = hashed(n)
    return out


def _key(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", path)  # ConfigMap keys cannot hold "/"


def manifests(lock: Lock, targets: list[LockedTarget], files: dict[str, str], job: K8sJob) -> list[dict[str, Any]]:
    """A ConfigMap with the project, and one Indexed Job per Linux target."""
    if job.nodes < 1:
        raise UsageError("--nodes must be at least 1")
    meta_ns = {"namespace": job.namespace} if job.namespace else {}
    cm_name = f"{job.name}-project"
    keys = _unique(sorted(files), _key, 253)
    docs: list[dict[str, Any]] = [{
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": cm_name, **meta_ns, "labels": {"app.kubernetes.io/name": "tritonlock"}},
        "data": {keys[k]: v for k, v in sorted(files.items())},
    }]
    runnable = [t for t in targets if t.selection.ok and t.selection.target.os == "linux"]
    if not runnable:
        raise UsageError("no Linux target to run: Kubernetes Jobs here run Linux pods (the lock's targets are "
                         f"{', '.join(f'{t.name} ({t.selection.target.os})' for t in targets)})")
    extra_tol = [parse_toleration(x) for x in job.tolerations]
    job_names = _unique([t.name for t in runnable], lambda n: dns_name(f"{job.name}-{n}"), 52)
    label_values = _unique([t.name for t in runnable], lambda n: dns_name(n, 63), 63)
    for t in runnable:
        name = job_names[t.name]
        labels = {"app.kubernetes.io/name": "tritonlock", "tritonlock/target": label_values[t.name]}
        resource = gpu_resource(t)
        gpus = len(t.selection.target.gpus) if resource else 0
        resources: dict[str, Any] = {"requests": {"cpu": "2", "memory": "8Gi"}}
        if resource:
            resources["limits"] = {resource: gpus}
        tolerations = ([{"key": resource, "operator": "Exists", "effect": "NoSchedule"}] if resource else [])
        tolerations += extra_tol
        env = [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "TRITONLOCK_NODE", "value": "$(NODE_NAME)"},
            {"name": "TRITONLOCK_CMD", "value": "tritonlock"},
            {"name": "TRITONLOCK_PROJECT", "value": "/work/project"},
            {"name": "TRITONLOCK_REPORTS", "value": f"/reports/{name}"},
            {"name": "TRITONLOCK_VENV", "value": "/work/venv"},
            {"name": "UV_PYTHON_DOWNLOADS", "value": "never"},
        ]
        pod_spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": node_affinity(t)}},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"job-name": name}},
                    "topologyKey": "kubernetes.io/hostname"}]},
            },
            "containers": [{
                "name": "verify", "image": job.image, "command": ["/bin/sh", "-c"], "args": [_script(job)],
                "env": env, "resources": resources,
                "volumeMounts": [{"name": "project", "mountPath": "/project", "readOnly": True},
                                 {"name": "reports", "mountPath": "/reports"},
                                 {"name": "work", "mountPath": "/work"}],
            }],
            "volumes": [
                {"name": "project", "configMap": {"name": cm_name, "items": [
                    {"key": keys[k], "path": k} for k in sorted(files)]}},
                {"name": "reports", "persistentVolumeClaim": {"claimName": job.reports_claim}},
                {"name": "work", "emptyDir": {}},
            ],
        }
        if tolerations:
            pod_spec["tolerations"] = tolerations
        if job.node_selector:
            pod_spec["nodeSelector"] = dict(job.node_selector)
        docs.append({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, **meta_ns, "labels": labels,
                         "annotations": {"tritonlock/target": t.name, "tritonlock/lock-target-gpus": str(gpus)}},
            "spec": {
                "completionMode": "Indexed", "completions": job.nodes, "parallelism": job.nodes,
                "backoffLimit": 0, "activeDeadlineSeconds": job.deadline_seconds,
                "ttlSecondsAfterFinished": 86400,
                "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            },
        })
    return docs


# ---------------------------------------------------------------- YAML (a small, fixed subset: no library needed)


_PLAIN = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./-]*$")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


# What YAML reads as it is written inside a scalar: its printable set (YAML 1.2 c-printable) less the line breaks
# it folds or normalizes (\r, NEL, LINE/PARAGRAPH SEPARATOR) and the byte order mark. Anything else is escaped.
_YAML_RAW = re.compile("[\t\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]*")


def _quoted(s: str) -> str:
    """A YAML double-quoted scalar that reads back as exactly `s`, whatever characters it holds."""
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t" or _YAML_RAW.fullmatch(c):
            out.append(c)
        else:
            n = ord(c)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")
    return '"' + "".join(out) + '"'


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    s = str(v)
    if _PLAIN.match(s) and s.lower() not in _YAML_WORDS:
        return s
    return _quoted(s)


def _block(head: str, text: str, pad: str) -> list[str]:
    """A literal block scalar with an explicit indentation indicator (content may start with spaces)."""
    chomp = "" if text.endswith("\n") and not text.endswith("\n\n") else "+" if text.endswith("\n") else "-"
    body = text[:-1] if text.endswith("\n") else text
    return [f"{head} |2{chomp}"] + [f"{pad}  {ln}" if ln else "" for ln in body.split("\n")]


def _yaml(v: Any, indent: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    if isinstance(v, dict):
        for k, x in v.items():
            key = _scalar(k)
            if isinstance(x, str) and "\n" in x and _YAML_RAW.fullmatch(x):
                lines += _block(f"{pad}{key}:", x, pad)
            elif isinstance(x, (dict, list)) and x:
                lines.append(f"{pad}{key}:")
                lines += _yaml(x, indent + (2 if isinstance(x, dict) else 0))
            else:
                lines.append(f"{pad}{key}: {_scalar(x) if not isinstance(x, (dict, list)) else ('{}' if isinstance(x, dict) else '[]')}")
    elif isinstance(v, list):
        for x in v:
            if isinstance(x, dict) and x:
                sub = _yaml(x, indent + 2)
                lines.append(f"{pad}- {sub[0].lstrip()}")
                lines += sub[1:]
            elif isinstance(x, str) and "\n" in x and _YAML_RAW.fullmatch(x):
                lines += _block(f"{pad}-", x, pad)
            else:
                lines.append(f"{pad}- {_scalar(x)}")
    return lines


def to_yaml(docs: list[dict[str, Any]]) -> str:
    header = ["# Generated by `tritonlock export --format k8s`: one Indexed Job per lock target (GPU node pool).",
              "# Apply: kubectl apply -f THIS_FILE   Reports: the PersistentVolumeClaim mounted at /reports;",
              "# then `tritonlock report merge DIR` on a copy of it."]
    return "\n".join(header) + "\n" + "\n".join("---\n" + "\n".join(_yaml(d, 0)) for d in docs) + "\n"
