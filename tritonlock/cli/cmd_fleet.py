"""The fleet commands: fleet hosts (and the probe it runs on each node), report merge, report bands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tritonlock.cli._base import echo, echo_json, finite, json_opt, project_opt
from tritonlock.errors import UsageError


@click.group()
def fleet() -> None:
    """Fleets through the schedulers you already run (Slurm, Kubernetes)."""


@fleet.command("hosts")
@click.option("--slurm", "use_slurm", is_flag=True, required=True, help="Ask the nodes through Slurm's srun.")
@click.option("--nodes", type=click.IntRange(1), default=1, show_default=True, help="Nodes to probe (one task each).")
@click.option("--nodelist", "-w", help="Exactly these nodes (Slurm's --nodelist).")
@click.option("--partition", help="Partition.")
@click.option("--account", help="Account.")
@click.option("--time", "time_", default="00:05:00", show_default=True, help="Time limit of the probe step.")
@click.option("--tritonlock", "tritonlock_cmd", default="tritonlock", show_default=True,
              help="The command that runs tritonlock on the nodes.")
@click.option("--timeout", type=click.FloatRange(min=1, max=7 * 86400), default=600, show_default=True,
              callback=lambda ctx, param, v: finite(param, v), help="Seconds to wait for srun.")
@click.option("--out", "out_dir", default="hosts", show_default=True, metavar="DIR",
              help="Where to write one NAME.toml per distinct machine (for target-files).")
@click.option("--force", is_flag=True, help="Replace files in DIR that tritonlock did not write.")
@json_opt
def fleet_hosts(use_slurm: bool, nodes: int, nodelist: str | None, partition: str | None, account: str | None,
                time_: str, tritonlock_cmd: str, timeout: float, out_dir: str, force: bool, as_json: bool) -> None:
    """Probe every node with `tritonlock host` and write hosts/NAME.toml, one per distinct machine.

    Identical nodes share one file (its comment names them). Point triton-env.toml at them with
    target-files = ["hosts/*.toml"], then `tritonlock resolve`.
    """
    del use_slurm
    from tritonlock.fleet.nodes import write_host_files
    from tritonlock.fleet.slurm import GatherJob, gather_probes

    probes = gather_probes(GatherJob(nodes=nodes, nodelist=nodelist, partition=partition, account=account,
                                     time=time_, tritonlock=tritonlock_cmd, timeout=timeout))
    written = write_host_files(probes, Path(out_dir), force=force)
    if as_json:
        echo_json({"files": [{"path": str(p), "nodes": [m.node for m in members]} for p, members in written]})
        return
    for path, members in written:
        echo(f"wrote {path} ({len(members)} node(s): {', '.join(m.node for m in members)})")
    echo(f'next: target-files = ["{Path(out_dir).as_posix()}/*.toml"] in triton-env.toml, then '
          "`tritonlock resolve`")


@fleet.command("probe", hidden=True)
def fleet_probe() -> None:
    """One line of JSON about this node (what `fleet hosts` runs on each node)."""
    from tritonlock.fleet.nodes import probe_json
    from tritonlock.host import detect
    from tritonlock.records import node_name

    echo(json.dumps(probe_json(node_name(), detect()), sort_keys=True))


@click.group()
def report() -> None:
    """Reports that nodes leave behind."""


@report.command("merge")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@json_opt
@click.option("--html", "html_out", metavar="FILE", help="Also write a self-contained HTML page.")
@click.option("--out", "text_out", metavar="FILE", help="Write the table to FILE instead of stdout.")
@click.option("--expect", type=click.IntRange(0), help="Nodes that should have reported; the missing ones fail.")
@click.option("--outlier", type=click.FloatRange(0, 1), default=0.8, show_default=True,
              help="Mark a node below this fraction of the median of its peers (same GPU model).")
@click.option("--update-records", is_flag=True,
              help="Also add the nodes' records to PROJECT/triton-env.verified.toml (e.g. after a Kubernetes run).")
@click.option("--force", is_flag=True, help="Replace an --out or --html file that tritonlock did not write.")
@project_opt
def report_merge(directory: Path, as_json: bool, html_out: str | None, text_out: str | None, expect: int | None,
                 outlier: float, update_records: bool, project: str, force: bool = False) -> None:
    """One table across the nodes of a Slurm or Kubernetes run: node, GPU, driver, target, pass/fail, vector add
    GB/s, matmul TFLOP/s and the ratios to torch, with nodes far below their peers marked. Exit 1 when a node
    failed or is missing.

    \b
    Reads, per node TAG, the files the Slurm and Kubernetes job scripts leave in DIRECTORY:
      TAG.started                  the node started
      TAG.sync.rc, TAG.sync.log    `tritonlock sync`'s exit code and output
      TAG.json                     `tritonlock verify --json --record`'s report (a pass needs its record)
      TAG.verify.rc, TAG.verify.log  verify's exit code and output
    Files of other names are ignored, and so are report.json and summary.json."""
    from tritonlock._files import MARKERS, check_writes, write_file
    from tritonlock._term import printable
    from tritonlock.fleet.nodes import read_report_dir
    from tritonlock.fleet.report import rows, table_html, table_json, table_text

    if html_out == "-" and (text_out in (None, "-")):
        raise UsageError("--html - and the table both go to standard output — pass --html FILE, or --out FILE for "
                         "the table")
    files = [Path(f) for f in (html_out, text_out) if f not in (None, "-")]
    check_writes(files, what="report merge", force=force)  # before anything is read or written
    reports = read_report_dir(directory)
    if not reports and not expect:
        raise UsageError(f"{directory}: no node reports in it (TAG.json, TAG.sync.rc, … as the job scripts "
                         "write them) — is this the reports directory of the job?")
    table = rows(reports, expect=expect, threshold=outlier)
    if html_out:
        page = table_html(table, subtitle=f"{len(table)} node(s) from {directory}")
        if html_out == "-":
            echo(page)
        else:
            write_file(html_out, page, what="report merge", force=force)
    if update_records:
        from tritonlock import records

        recs = [r.record for r in reports if r.record is not None]
        records.add_records(Path(project) / records.RECORDS_FILE, recs)
        echo(f"recorded {len(recs)} run(s) in {Path(project) / records.RECORDS_FILE}", err=True)
    text = json.dumps(table_json(table), indent=2, sort_keys=True) if as_json else table_text(table)
    if text_out and text_out != "-":
        # the file says who wrote it, so that the next merge may replace it (JSON: its "generated-by" key)
        text = (json.dumps({"generated-by": f"tritonlock report merge {directory}", **table_json(table)}, indent=2,
                           sort_keys=True) if as_json else f"# {MARKERS['report merge']} {printable(str(directory), 300)}`\n{text}")
        write_file(text_out, text + "\n", what="report merge", force=force)
    else:
        echo(text)
    sys.exit(0 if all(r.ok for r in table) else 1)


@report.command("bands")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@project_opt
@json_opt
def report_bands(files: tuple[Path, ...], project: str, as_json: bool) -> None:
    """What the team's own `verify --record` runs say of each timed row, per GPU model, beside the speed band
    compat/bands.toml ships for it, with a band drawn from the runs by the same rule: where to refine a band, or which
    machines sit outside theirs. Reads FILES (records files), by default PROJECT/triton-env.verified.toml."""
    from tritonlock import records
    from tritonlock.fleet.report import band_rows, bands_text

    paths = list(files) or [Path(project) / records.RECORDS_FILE]
    recs = [r for p in paths for r in records.read_records(p)]
    if not recs:
        raise UsageError(f"{', '.join(map(str, paths))}: no records — run `tritonlock verify --record` on the "
                         "machines first")
    rows = band_rows(recs)
    if as_json:
        import dataclasses

        echo_json({"rows": [dataclasses.asdict(r) for r in rows]})
    else:
        echo(bands_text(rows))
