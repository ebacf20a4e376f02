"""verify's report for the terminal: the checks, a kernel table per device, the speed verdicts, the timings and the
verdict."""

from __future__ import annotations

from tritonlock.verify import KernelResult, VerifyResult


def format_report(result: VerifyResult) -> str:
    """A readable report for the terminal: checks, a kernel table, notes, and the verdict."""
    if not result.kernels:
        mode = "no kernel ran"
    else:
        mode = "GPU" if result.mode == "gpu" else "Triton interpreter on the CPU"
    lines = [
        f"verify: {mode}; python {result.python}; torch {result.torch or '-'}; "
        f"triton {result.triton or '-'}",
    ]
    lines += [f"  GPU {g}" for g in result.gpus]
    lines.append("")
    lines.append("checks")
    for c in result.checks:
        lines.append(f"  {'ok  ' if c.ok else 'FAIL'}  {c.name}: {c.detail}")
        if not c.ok and c.fix:
            lines.append(f"        fix: {c.fix}")
    if result.kernels:
        # one table per device ("cpu (interpreter)" and Inductor's "cpu" are one machine)
        devices = list(dict.fromkeys(k.device.split(" ")[0] for k in result.kernels))
        for device in devices:
            lines.append("")
            lines.append("kernels" if len(devices) == 1 else f"kernels on {device}")
            lines += _kernel_table(tuple(k for k in result.kernels if k.device.split(" ")[0] == device))
        for k in result.kernels:
            if k.mode == "skipped":
                lines.append(f"  skip  {k.kernel} on {k.device}: {k.detail.removeprefix('skipped: ')}")
            elif k.reused:
                lines.append(f"  {k.kernel} on {k.device} ({k.mode}): not compiled again: it passed on {k.reused} in "
                             "this same environment (installed packages, interpreter, driver, GPUs and variables "
                             "unchanged); `--no-reuse` runs it again")
            elif k.generated:
                lines.append(f"  {k.kernel} on {k.device} ({k.mode}): Inductor generated {', '.join(k.generated)}")
        failed = [k for k in result.kernels if not k.ok]
        for k in failed:
            lines.append(f"  FAIL  {k.kernel} {k.dtype} on {k.device}: {k.detail}")
        lines += speed_lines(result)
    lines.append("")
    timing = f"total {result.total_seconds:.1f} s"
    if result.compile_seconds is not None:
        timing = f"parallel compile {result.compile_seconds:.2f} s; " + timing
    if result.jit_seconds is not None:
        timing = f"first kernel launch incl. JIT compile {result.jit_seconds:.2f} s; " + timing
    lines.append(timing)
    lines += [f"note: {n}" for n in result.notes]
    bad = len([c for c in result.checks if not c.ok]) + len([k for k in result.kernels if not k.ok])
    lines.append("RESULT: OK" if result.ok else f"RESULT: FAILED ({bad} problem{'s' * (bad != 1)})")
    return "\n".join(lines)


_SPEED_CELL = {"ok": "in band", "slow": "SLOW", "fast": "above band", "no-band": "no band"}


def speed_lines(result: VerifyResult) -> list[str]:
    """What the speed verdicts say, below the table: each row outside its band with the likely cause, or that the
    bands do not know this GPU, or that every timed row is within its band."""
    timed = [k for k in result.kernels if k.speed is not None]
    if not timed:
        return []
    out: list[str] = []
    judged = [k for k in timed if k.speed is not None and k.speed.verdict != "no-band"]
    outside = result.outside_band
    for k in outside:
        assert k.speed is not None
        out.append(f"  {'SLOW' if k.speed.verdict == 'slow' else 'FAST'}  {k.kernel} {k.dtype} on {k.device}: "
                   f"{k.speed.detail}")
    causes = list(dict.fromkeys(c for k in outside if k.speed for c in k.speed.causes))
    if outside:
        if causes:
            out += [f"        likely cause: {c}" for c in causes]
        else:
            out.append("        likely cause: none that NVML shows" + (
                f" (NVML did not answer: {result.gpu_health_error})" if result.gpu_health_error else
                " (no other process, no power cap, clocks, link and ECC as expected): a slower host, another VM or "
                "container on the same GPU, or a band that needs refining from your own runs (`tritonlock verify "
                "--record`)"))
    families = sorted({k.speed.family for k in judged if k.speed and k.speed.family})
    unknown = [k for k in timed if k.speed is not None and k.speed.verdict == "no-band"]
    if judged:
        where = f"{', '.join(families)} bands, compat/bands.toml"
        if outside:
            out.append(f"  speed: {len(outside)} of {len(judged)} timed rows outside their band ({where}) — a "
                       "warning; `--strict-speed` makes it a failure")
        else:
            which = f"all {len(judged)} timed rows" if len(judged) > 1 else "the timed row"
            out.append(f"  speed: {which} within {'their' if len(judged) > 1 else 'its'} band ({where})")
    if unknown:
        first = unknown[0].speed
        assert first is not None
        only = "" if judged else "; the ratios above have no expectation to meet"
        out.append(f"  speed: {len(unknown)} timed row(s) not judged: {first.detail}{only}")
    return out


def _kernel_table(kernels: tuple[KernelResult, ...]) -> list[str]:
    judged = any(k.speed is not None for k in kernels)
    head = ("kernel", "dtype", "device", "mode", "ok", "max err", "triton", "torch", "ratio", "compile s") + (
        ("speed",) if judged else ())
    rows = [head]
    for k in kernels:
        unit = f" {k.metric}" if k.metric else ""
        rows.append((
            k.kernel, k.dtype, k.device, k.mode or "-", "skip" if k.mode == "skipped" else ("ok" if k.ok else "FAIL"),
            "-" if k.max_err is None else f"{k.max_err:.2g}",
            "-" if k.value is None else f"{k.value:,.0f}{unit}",
            "-" if k.torch_value is None else f"{k.torch_value:,.0f}{unit}",
            "-" if k.ratio is None else f"{k.ratio:.2f}",
            "reused" if k.reused else "-" if k.compile_seconds is None else f"{k.compile_seconds:.2f}",
        ) + (("-" if k.speed is None else _SPEED_CELL[k.speed.verdict],) if judged else ()))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    right = {5, 6, 7, 8, 9}  # numbers line up on the right
    return [
        "  " + "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in rows
    ]
