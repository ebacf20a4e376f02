"""The two steps every node runs, as one POSIX shell function shared by the Slurm and Kubernetes jobs.

`node_step` syncs the lock into a node-local venv (`tritonlock sync --locked`), then verifies and records it
(`tritonlock verify --json --record`). It leaves, in $TRITONLOCK_REPORTS, TAG.started, TAG.sync.log, TAG.sync.rc,
TAG.json, TAG.verify.log and TAG.verify.rc — what `tritonlock report merge` reads. Each step has a timeout, so a
hung node becomes a named failure (exit 124) instead of a job that never ends.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class Steps:
    sync_args: str = ""  # extra `tritonlock sync` options, shell words (e.g. --offline --find-links DIR)
    verify_args: str = ""  # extra `tritonlock verify` options (e.g. --quick)
    sync_timeout: int = 1800
    verify_timeout: int = 900


def node_step(s: Steps, *, index_var: str) -> str:
    """The shell function. Expects TRITONLOCK_CMD, TRITONLOCK_PROJECT and TRITONLOCK_REPORTS in the environment;
    `index_var` names the scheduler's task index (SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX), part of the tag."""
    return f'''node_step() {{  # on one node: sync the lock into a node-local venv, then verify and record
  node="${{TRITONLOCK_NODE:-${{SLURMD_NODENAME:-$(hostname -s)}}}}"
  tag="$node${{{index_var}:+-${index_var}}}"
  export TRITONLOCK_NODE="$node"
  # node-local, and one per project: two projects (or two checkouts) on a node never share a venv
  pkey="$(cd "$TRITONLOCK_PROJECT" 2>/dev/null && pwd -P | cksum | cut -d' ' -f1)"
  out="$TRITONLOCK_REPORTS/$tag"
  venv="${{TRITONLOCK_VENV:-}}"
  if [ -z "$venv" ]; then
    # The node's temporary directory is shared with every user of the node: the venv lives in a directory only
    # this user can enter (mode 0700, owned by us, not a link), kept between jobs so a re-run syncs quickly; when
    # that name is taken by anything else, a fresh private directory from mktemp -d is used instead.
    base="${{SLURM_TMPDIR:-${{TMPDIR:-/tmp}}}}"
    uid="$(id -u)"
    priv="$base/tritonlock-$uid"
    mkdir -m 700 "$priv" 2>/dev/null
    if [ -L "$priv" ] || [ -z "$(find "$priv" -prune -type d -user "$uid" -perm 700 2>/dev/null)" ]; then
      priv="$(mktemp -d "$base/tritonlock.XXXXXXXX")" || {{ echo "cannot make a private directory in $base" \
        > "$out.sync.log"; echo 1 > "$out.sync.rc"; return 1; }}
    fi
    venv="$priv/venv-${{pkey:-0}}-$tag"
  fi
  date -u +%Y-%m-%dT%H:%M:%SZ > "$out.started"
  timeout -k 30 {s.sync_timeout} $TRITONLOCK_CMD sync --locked --no-verify -p "$TRITONLOCK_PROJECT" --venv "$venv" \\
    {s.sync_args} > "$out.sync.log" 2>&1
  rc=$?
  echo "$rc" > "$out.sync.rc"
  if [ "$rc" -ne 0 ]; then
    echo "tritonlock: $tag: sync failed (exit $rc): $(grep -m1 '^error:' "$out.sync.log")" >&2
    return "$rc"
  fi
  timeout -k 30 {s.verify_timeout} $TRITONLOCK_CMD verify --json --record -p "$TRITONLOCK_PROJECT" --venv "$venv" \\
    {s.verify_args} > "$out.json" 2> "$out.verify.log"
  rc=$?
  echo "$rc" > "$out.verify.rc"
  [ "$rc" -eq 0 ] || echo "tritonlock: $tag: verify failed (exit $rc), see $out.json" >&2
  return "$rc"
}}
'''
