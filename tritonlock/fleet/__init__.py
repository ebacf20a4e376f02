"""Rollout through the schedulers clusters already run: Slurm and Kubernetes jobs, host gathering, report merge.

Read top-down: `nodes` (facts: what each node said — host probes and verify reports), `slurm` and `k8s` (jobs:
the scripts and manifests that make every node sync and verify), `report` (the merged table, JSON and HTML).
No module imports another's private names; tritonlock runs no scheduler, agent or SSH fan-out of its own.
"""
