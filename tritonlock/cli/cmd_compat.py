"""Maintainer tooling: `compat check` (compat/ against live index metadata) and its `--new` drafts; `compat native`
(the binary facts shipped in compat/native/)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tritonlock.cli._base import echo


@click.group()
def compat() -> None:
    """The curated compatibility matrix shipped in compat/."""


@compat.command("check")
@click.option("--index", "index_url", metavar="URL", help="Index to compare with (default: your pip configuration).")
@click.option("--versions", metavar="V,V", help="Only these torch/triton versions (default: all).")
@click.option("--wheels", type=click.Choice(["newest", "all", "none"]), default="newest", show_default=True,
              help="Which releases to also read from inside their wheels (HTTP Range reads): torch/version.py, "
                   "Triton's bundled ptxas versions and selection rule, and the GPU code (sm/compute, gfx) of torch's "
                   "CUDA and ROCm libraries.")
@click.option("--new", "new", is_flag=True,
              help="Instead: draft compat/ rows for each torch and triton on the index newer than the matrix knows, "
                   "read from the wheels (tags, METADATA, torch/version.py, bundled ptxas), each fact marked "
                   "'inferred:' with its source, for a maintainer to review.")
@click.option("-o", "--output", metavar="FILE", help="With --new: write the draft here instead of stdout.")
@click.option("--no-vendor", is_flag=True, help="Leave out PyTorch's per-backend indexes (CUDA variants, ROCm and XPU "
                                                "rows, arch lists).")
@click.option("--compat", "compat_dir", metavar="DIR", help="Check this copy of compat/ instead of the shipped one.")
@click.option("--allow-unchecked", is_flag=True,
              help="Exit 0, not 7, when everything read agrees but some rows could not be checked (an index that "
                   "does not answer, unreadable METADATA or libraries).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--force", is_flag=True, help="With -o: replace FILE even when tritonlock did not write it.")
def compat_check(index_url: str | None, versions: str | None, wheels: str, new: bool = False,
                 output: str | None = None, no_vendor: bool = False, compat_dir: str | None = None,
                 allow_unchecked: bool = False, as_json: bool = False, force: bool = False) -> None:
    """Compare compat/ with live index metadata: wheel tags (Python, platform, glibc), pinned triton, PyPI's torch
    build, the ptxas each Triton wheel bundles, the CUDA variants, ROCm and XPU builds on PyTorch's indexes and the
    Triton they require, and the GPU code inside torch's wheels. Says what it compared and what it could not check.

    Exit 0: everything checked agrees; 1: a disagreement (or a torch/triton release on the index that the matrix
    lacks: --new drafts its rows); 7: what was read agrees but some of it could not be checked (--allow-unchecked
    accepts that)."""
    if new:
        from tritonlock._files import check_writes, write_file
        from tritonlock.maintain.drafts import main_new

        output = None if output == "-" else output  # standard output, never a file named "-"
        if output:
            check_writes([Path(output)], what="compat check --new", force=force)
        text, said = main_new(index_url, compat_dir)
        for line in said:
            echo(line, err=True)
        if text and output:
            write_file(output, text + "\n", what="compat check --new", force=force)
            echo(f"wrote {output} — review every `inferred:` line, then move the rows into compat/", err=True)
        elif text:
            echo(text)
        sys.exit(0)
    from tritonlock.lock.index import default_index
    from tritonlock.compat.matrix import load_matrix
    from tritonlock.maintain.compat_check import Index, check

    matrix = load_matrix(compat_dir)
    out = check(matrix, Index(index_url or default_index()), versions=set(versions.split(",")) if versions else None,
                inside=wheels, vendor=not no_vendor, compat=compat_dir)
    if as_json:
        echo(json.dumps(out.as_json(allow_unchecked), indent=2, sort_keys=True))
    else:
        for line in out.text(allow_unchecked):
            echo(line)
    sys.exit(out.exit_code(allow_unchecked))


@compat.command("native")
@click.option("--index", "index_url", metavar="URL", help="Index to read the wheels from (default: your pip "
                                                           "configuration).")
@click.option("--packages", metavar="NAME,NAME", help="The packages whose wheels to read (default: the ones users "
                                                      "bring most, tritonlock/maintain/native.py PACKAGES); the torch "
                                                      "family and NVIDIA libraries they pin come with them.")
@click.option("--releases", type=click.IntRange(1, 50), default=None,
              help="The newest releases of each package to read.  [default: 3, or the package's own count in "
                   "tritonlock/maintain/native.py RELEASES_OF]")
@click.option("--python", "pythons", metavar="V,V", default="3.10,3.11,3.12,3.13", show_default=True,
              help="The Pythons whose wheels to read.")
@click.option("--cpu", "cpus", metavar="ARCH,ARCH", default="x86_64,aarch64", show_default=True,
              help="The Linux CPUs whose wheels to read.")
@click.option("--compat", "compat_dir", metavar="DIR", help="Write DIR/native/ instead of the shipped compat/.")
@click.option("--check", "check", is_flag=True, help="Instead: check each shipped row against the index (its file "
                                                     "listed with that sha256) and read --sample rows again.")
@click.option("--sample", type=click.IntRange(0, 100000), default=3, show_default=True,
              help="With --check: how many rows to read again and compare.")
@click.option("--lock", "locks", metavar="FILE", multiple=True,
              help="Also the wheels with native code this triton-env.lock holds (a real resolve of a typical "
                   "intent: its packages' dependencies too). Repeatable.")
def compat_native(index_url: str | None, packages: str | None, releases: int | None, pythons: str, cpus: str,
                  compat_dir: str | None, check: bool, sample: int, locks: tuple[str, ...] = ()) -> None:
    """Read the binary facts of the wheels users bring most from the index and write them to compat/native/, keyed
    by sha256 (a resolve then uses a row only for a wheel of that sha256, and reads every other). Re-runnable: rows
    already there of this reader's version are kept; the rest are read (a few GB for the default set).

    Exit 0: written (or --check found nothing wrong); 1: over the size budget, or --check found a row that
    disagrees."""
    import re

    from tritonlock.errors import UsageError
    from tritonlock.maintain.native import PACKAGES, main

    py = tuple(p.strip() for p in pythons.split(",") if p.strip())
    cpu = tuple(c.strip() for c in cpus.split(",") if c.strip())
    if not py or any(not re.fullmatch(r"3\.[0-9]{1,2}", p) for p in py):
        raise UsageError(f"--python {pythons!r}: give Python versions like 3.12, comma-separated")
    if not cpu or any(c not in ("x86_64", "aarch64") for c in cpu):
        raise UsageError(f"--cpu {cpus!r}: give x86_64 and/or aarch64, comma-separated")
    names = tuple(n.strip() for n in packages.split(",") if n.strip()) if packages else PACKAGES
    sys.exit(main(index=index_url, packages=names, releases=releases, pythons=py, cpus=cpu, compat=compat_dir,
                  check=check, sample=sample, locks=locks, say=lambda line: echo(line, err=True)))


@compat.command("metadata")
@click.option("--lock", "locks", metavar="FILE", multiple=True, required=True,
              help="A triton-env.lock whose files' METADATA to ship (a real resolve of a typical intent). Repeatable.")
@click.option("--compat", "compat_dir", metavar="DIR", help="Write DIR/metadata/ instead of the shipped compat/.")
def compat_metadata(locks: tuple[str, ...], compat_dir: str | None) -> None:
    """Read the METADATA of every file these locks pin from their indexes and write its requirement headers to
    compat/metadata/, keyed by sha256 (a first resolve then fetches only the files the matrix does not know). A file
    of up to 64 MB is downloaded whole and hashed (its row is checked, as the integrity check would); a larger one's
    METADATA is read by ranged reads. Re-runnable: the rows already there are kept.

    Exit 0: written (a file that could not be read is said, and not shipped); 1: over the size budget."""
    from tritonlock.maintain.metadata import main

    sys.exit(main(locks=locks, compat=compat_dir, say=lambda line: echo(line, err=True)))
