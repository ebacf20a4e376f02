"""`tritonlock report merge`: one table across nodes, as text, JSON and a self-contained HTML page."""

from __future__ import annotations

import html
import statistics
from dataclasses import dataclass
from typing import Any

from tritonlock.fleet.nodes import NodeReport
from tritonlock.records import summary

OUTLIER = 0.8  # a node below 80% of the median of its peers (same GPU model) is marked


@dataclass(frozen=True, kw_only=True, slots=True)
class Row:
    """One node in the merged table."""

    node: str
    tag: str
    gpu: str  # "NVIDIA H200 ×2", "CPU"
    model: str  # the peer group: the first GPU's model, or "CPU"
    driver: str | None
    target: str | None
    status: str  # "pass" | "fail" | "sync failed" | "verify failed" | "not recorded" | "no result" | "missing"
    ok: bool
    mode: str | None
    vector_add_gbs: float | None
    matmul_tflops: float | None
    add_ratio: float | None
    matmul_ratio: float | None
    error: str = ""
    outlier: str = ""  # why the node is far below its peers ("" when it is not)
    copies: tuple[str, ...] = ()  # other reports of this node's run or machine, merged into this row (their tags)
    # the timed rows outside the band compat/bands.toml expects for its GPU, as verify judged them ("matmul fp16 slow")
    outside_band: tuple[str, ...] = ()
    judged: int = 0  # timed rows that had a band
    allreduce: AllReduce | None = None  # the node's NCCL all-reduce across its GPUs, when it ran one


_LINK_WORDS = {"nvlink": "NVLink", "pcie": "PCIe (P2P)", "none": "host memory (P2P off)"}
_VERDICT_WORDS = {"ok": "in band", "slow": "SLOW", "fast": "above band", "no-band": "no band"}


@dataclass(frozen=True, kw_only=True, slots=True)
class AllReduce:
    """A node's NCCL all-reduce as its record keeps it: figure, band (and whether it is inferred), link, causes."""

    device: str  # "cuda:0..1"
    value: float | None  # bus bandwidth
    metric: str
    message_bytes: int | None
    band: tuple[float, float] | None
    inferred: bool
    link: str | None  # "nvlink" | "pcie" | "none" | None (not known)
    verdict: str | None  # "ok" | "slow" | "fast" | "no-band" | None (not judged: an older record, or it failed)
    causes: tuple[str, ...] = ()
    ok: bool = True

    def words(self) -> str:
        """One line: "all-reduce on cuda:0..1 over NVLink: 121 GB/s at 256 MiB, band 250–450 GB/s (inferred) — SLOW;
        likely cause: …"."""
        over = f" over {_LINK_WORDS[self.link]}" if self.link in _LINK_WORDS else " (link not recorded)"
        fig = "failed" if not self.ok else "no figure" if self.value is None else f"{self.value:,.0f} {self.metric}"
        size = f" at {self.message_bytes / 2**20:g} MiB" if self.message_bytes else ""
        band = (f", band {self.band[0]:,.0f}–{self.band[1]:,.0f} {self.metric}" + (" (inferred)" if self.inferred else "")
                if self.band else "")
        verdict = f" — {_VERDICT_WORDS[self.verdict]}" if self.verdict in _VERDICT_WORDS else (
            " — not judged (recorded before verify judged the all-reduce)" if self.ok and self.value is not None
            else "")
        why = f"; likely cause: {'; '.join(self.causes)}" if self.causes else ""
        return f"all-reduce on {self.device}{over}: {fig}{size}{band}{verdict}{why}"

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "value": self.value, "metric": self.metric, "message_bytes": self.message_bytes,
                "band": list(self.band) if self.band else None, "band_inferred": self.inferred if self.band else None,
                "link": self.link, "verdict": self.verdict, "causes": list(self.causes), "ok": self.ok}


def _allreduce(rep: NodeReport) -> AllReduce | None:
    for k in rep.record.kernels if rep.record else ():
        if k.kernel == "nccl_all_reduce":
            return AllReduce(device=k.device, value=k.value, metric=k.metric or "GB/s", message_bytes=k.message_bytes,
                             band=k.band, inferred=k.inferred, link=k.link, verdict=k.speed, causes=k.causes,
                             ok=k.ok)
    return None


def _models(gpus: tuple[str, ...]) -> tuple[str, str]:
    names = [g.rsplit(" (", 1)[0] for g in gpus]
    if not names:
        return "CPU", "CPU"
    uniq = sorted(set(names), key=names.index)
    text = ", ".join(f"{n} ×{names.count(n)}" if names.count(n) > 1 else n for n in uniq)
    return text, names[0]


def _ratio(rep: NodeReport, kernel: str, dtype: str | None = None) -> float | None:
    if rep.record is None:
        return None
    vals = [k.ratio for k in rep.record.kernels if k.kernel == kernel and (dtype is None or k.dtype == dtype)
            and k.ratio is not None]
    return min(vals) if vals else None


def _figures(rep: NodeReport) -> dict[tuple[str, str], tuple[float, str]]:
    """(kernel, dtype) -> (the slowest device's figure, its unit) of every timed row of a node's record."""
    out: dict[tuple[str, str], tuple[float, str]] = {}
    for k in rep.record.kernels if rep.record else ():
        if k.value is None or not k.metric:
            continue
        key = (k.kernel, k.dtype)
        if k.kernel == "nccl_all_reduce":  # peers only over the same GPUs and link: 2 over PCIe is not 2 over NVLink
            key = (k.kernel, f"{k.dtype} ({k.device}" + (f" over {_LINK_WORDS[k.link]}" if k.link in _LINK_WORDS
                                                          else "") + ")")
        if key not in out or k.value < out[key][0]:
            out[key] = (k.value, k.metric)
    return out


def _band_words(rep: NodeReport) -> tuple[tuple[str, ...], int]:
    if rep.record is None:
        return (), 0
    judged = [k for k in rep.record.kernels if k.speed in ("ok", "slow", "fast")]
    return tuple(f"{k.kernel} {k.dtype} on {k.device} {k.speed}" for k in judged if k.speed != "ok"), len(judged)


def rows(reports: list[NodeReport], *, expect: int | None = None, threshold: float = OUTLIER) -> list[Row]:
    """The table: one row per node, outliers marked; with `expect`, missing nodes are rows too."""
    out: list[Row] = []
    figures: dict[str, dict[tuple[str, str], tuple[float, str]]] = {}
    for rep in reports:
        figures[rep.tag or rep.node] = _figures(rep)
        outside, judged = _band_words(rep)
        r = rep.record
        gpu, model = _models(r.gpus) if r else ("?", "?")
        s = summary(r) if r else {"vector_add_gbs": None, "matmul_tflops": None}
        status = "pass" if rep.ok else "fail" if rep.stage == "verify" and r else (
            "sync failed" if rep.stage == "sync" else "verify failed" if rep.stage == "verify" else
            "not recorded" if rep.stage == "record" else "unreadable" if rep.stage == "report" else "no result")
        out.append(Row(node=rep.node, tag=rep.tag, gpu=gpu, model=model, driver=r.driver if r else None,
                       target=r.target if r else None, status=status, ok=status == "pass", mode=r.mode if r else None,
                       vector_add_gbs=s["vector_add_gbs"], matmul_tflops=s["matmul_tflops"],
                       add_ratio=_ratio(rep, "vector_add"),
                       matmul_ratio=_ratio(rep, "matmul", "fp16") or _ratio(rep, "matmul"), error=rep.error,
                       copies=rep.copies,
                       outside_band=outside, judged=judged, allreduce=_allreduce(rep)))
    if expect is not None and len(out) < expect:
        for i in range(expect - len(out)):
            out.append(Row(node=f"(missing {i + 1})", tag="", gpu="?", model="?", driver=None, target=None,
                           status="missing", ok=False, mode=None, vector_add_gbs=None, matmul_tflops=None,
                           add_ratio=None, matmul_ratio=None,
                           error=f"expected {expect} node(s), {len(reports)} left a trace — a node never started "
                                 "(check the scheduler's output)"))
    return [_safe(r) for r in _mark_outliers(out, threshold, figures)]


def _safe(r: Row) -> Row:
    """Every text cell printable, and no user:token@ in it: node names, GPU models and error lines come from the
    nodes and their logs (a log may hold an installer's own words), and the table goes into shared files."""
    import dataclasses

    from tritonlock._term import printable
    from tritonlock._urls import redact

    cells: dict[str, Any] = {f: printable(redact(v), 200 if f != "error" else 1000) for f in
                             ("node", "tag", "gpu", "model", "driver", "target", "status", "error", "outlier")
                             if isinstance(v := getattr(r, f), str)}
    cells["copies"] = tuple(printable(redact(c), 200) for c in r.copies)
    cells["outside_band"] = tuple(printable(redact(x), 200) for x in r.outside_band)
    if r.allreduce is not None:
        ar = r.allreduce
        cells["allreduce"] = dataclasses.replace(ar, device=printable(redact(ar.device), 200),
                                                 metric=printable(redact(ar.metric), 40),
                                                 causes=tuple(printable(redact(c), 500) for c in ar.causes))
    return dataclasses.replace(r, **cells)


def _mark_outliers(table: list[Row], threshold: float,
                   figures: dict[str, dict[tuple[str, str], tuple[float, str]]] | None = None) -> list[Row]:
    import dataclasses

    peers: dict[str, list[Row]] = {}
    for r in table:
        if r.mode == "gpu":
            peers.setdefault(r.model, []).append(r)
    marked: dict[str, str] = {}
    for group in peers.values():
        if len(group) < 2:
            continue
        for attr, unit, label in (("vector_add_gbs", "GB/s", "vector add"), ("matmul_tflops", "TFLOP/s", "matmul")):
            vals = [getattr(r, attr) for r in group if getattr(r, attr) is not None]
            if len(vals) < 2:
                continue
            med = statistics.median(vals)
            for r in group:
                v = getattr(r, attr)
                if v is not None and med > 0 and v < threshold * med:
                    why = f"{label} {v:,.0f} {unit} is {v / med:.0%} of its peers' median {med:,.0f}"
                    marked[r.tag or r.node] = "; ".join(x for x in (marked.get(r.tag or r.node), why) if x)
        # every other timed row too (attention, FP8, tf32, softmax …): a node slow in one of them alone shows
        figs = {r.tag or r.node: (figures or {}).get(r.tag or r.node, {}) for r in group}
        shown = {("vector_add", "fp32"), ("matmul", "fp16")}
        for key in sorted({k for f in figs.values() for k in f} - shown):
            vals = [f[key][0] for f in figs.values() if key in f]
            if len(vals) < 2:
                continue
            med = statistics.median(vals)
            for tag, f in figs.items():
                if key in f and med > 0 and f[key][0] < threshold * med:
                    v, unit = f[key]
                    why = f"{key[0]} {key[1]} {v:,.0f} {unit} is {v / med:.0%} of its peers' median {med:,.0f}"
                    marked[tag] = "; ".join(x for x in (marked.get(tag), why) if x)
    return [dataclasses.replace(r, outlier=marked.get(r.tag or r.node, "")) for r in table]


def _n(v: float | None, digits: int = 0) -> str:
    return "—" if v is None else f"{v:,.{digits}f}"


def _x(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def table_text(table: list[Row]) -> str:
    head = ["node", "GPU", "driver", "target", "result", "add GB/s", "add ×torch", "matmul TFLOP/s", "mm ×torch"]
    body = [[r.node + (" !" if r.outlier else ""), r.gpu, r.driver or "—", r.target or "—",
             r.status + (" (interp.)" if r.mode == "interpreter" else ""),
             _n(r.vector_add_gbs), _x(r.add_ratio), _n(r.matmul_tflops, 1), _x(r.matmul_ratio)] for r in table]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    right = {5, 6, 7, 8}

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = [fmt(head), fmt(["-" * w for w in widths])] + [fmt(b) for b in body]
    passed = sum(r.ok for r in table)
    lines.append("")
    lines.append(f"{passed} of {len(table)} node(s) passed" + (
        "; interpreter runs prove the packages, not a GPU" if any(r.mode == "interpreter" for r in table) else ""))
    for r in table:
        if r.outlier:
            lines.append(f"! {r.node}: far below its peers ({r.model}): {r.outlier}")
        if r.outside_band:
            lines.append(f"~ {r.node}: {len(r.outside_band)} of {r.judged} timed rows outside the band expected for its "
                         f"GPU: {', '.join(r.outside_band[:6])}{' …' if len(r.outside_band) > 6 else ''}")
        if r.allreduce is not None:
            lines.append(f"{'≈' if r.allreduce.verdict in ('slow', 'fast') else '·'} {r.node}: {r.allreduce.words()}")
        if not r.ok and r.error:
            lines.append(f"x {r.node}: {r.status}: {r.error}")
        if r.copies:
            lines.append(f"= {r.node}: {_copies(r)}")
    return "\n".join(lines)


def _copies(r: Row) -> str:
    n = len(r.copies)
    return (f"{n} more report{'s' if n > 1 else ''} of this node and target ({', '.join(r.copies)}) counted as this "
            "one node (the newest run shown)")


def table_json(table: list[Row]) -> dict[str, Any]:
    """`report merge --json`: {"nodes": [...], "passed": n, "total": n}."""
    return {"passed": sum(r.ok for r in table), "total": len(table), "nodes": [
        {"node": r.node, "tag": r.tag, "gpu": r.gpu, "driver": r.driver, "target": r.target, "status": r.status,
         "ok": r.ok, "mode": r.mode, "vector_add_gbs": r.vector_add_gbs, "matmul_tflops": r.matmul_tflops,
         "vector_add_ratio": r.add_ratio, "matmul_ratio": r.matmul_ratio, "outlier": r.outlier or None,
         "error": r.error or None, "copies": list(r.copies),
         "outside_band": list(r.outside_band), "judged": r.judged,
         "allreduce": r.allreduce.to_json() if r.allreduce else None} for r in table]}


# ---------------------------------------------------------------- HTML


_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1200px;color:#1d2330;
padding:0 1rem;background:#fbfbfd}
h1{font-size:1.5rem;margin:0 0 .2rem}.sub{color:#5b6475;margin:0 0 1.5rem}
.cards{display:flex;gap:1rem;margin-bottom:1.5rem;flex-wrap:wrap}
.card{background:#fff;border:1px solid #e3e6ee;border-radius:10px;padding:.8rem 1.1rem;min-width:9rem}
.card b{display:block;font-size:1.6rem}.card span{color:#5b6475;font-size:.85rem}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #e3e6ee;border-radius:10px;overflow:hidden}
th,td{padding:.5rem .7rem;text-align:left;border-bottom:1px solid #eef0f5;vertical-align:middle}
th{background:#f3f5f9;font-weight:600;font-size:.85rem;color:#3b4252}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.pill{display:inline-block;border-radius:99px;padding:.05rem .6rem;font-size:.8rem;font-weight:600}
.pass{background:#dcf5e3;color:#146c2e}.fail{background:#fde2e1;color:#a4161a}.warn{background:#fff1d6;color:#8a5300}
.out td{background:#fff8ec}.err{color:#a4161a;font-size:.85rem}.muted{color:#8a92a3}
svg{vertical-align:middle}ul{padding-left:1.2rem}footer{color:#8a92a3;font-size:.8rem;margin-top:1.5rem}
"""


def _bar(v: float | None, top: float, color: str, label: str) -> str:
    if v is None or top <= 0:
        return '<span class="muted">—</span>'
    w = max(2.0, 160 * v / top)
    return (f'<svg width="170" height="16" role="img" aria-label="{html.escape(label)}">'
            f'<rect x="0" y="2" width="160" height="12" rx="3" fill="#eef0f5"/>'
            f'<rect x="0" y="2" width="{w:.1f}" height="12" rx="3" fill="{color}"/></svg> {html.escape(label)}')


def table_html(table: list[Row], *, title: str = "tritonlock fleet report", subtitle: str = "") -> str:
    """One page, no scripts, no external files: cards, a table with inline SVG bars, then what failed."""
    e = html.escape
    passed = sum(r.ok for r in table)
    failed = len(table) - passed
    outliers = sum(bool(r.outlier) for r in table)
    top_add = max((r.vector_add_gbs or 0 for r in table), default=0)
    top_mm = max((r.matmul_tflops or 0 for r in table), default=0)
    cards = [(str(len(table)), "nodes"), (str(passed), "passed"), (str(failed), "failed"),
             (str(outliers), "far below their peers"), (str(len({r.target for r in table if r.target})), "lock targets")]
    out = ["<!doctype html>", "<!-- Generated by `tritonlock report merge` -->",
           '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width,initial-scale=1">',
           f"<title>{e(title)}</title><style>{_CSS}</style></head><body>",
           f"<h1>{e(title)}</h1>", f'<p class="sub">{e(subtitle)}</p>' if subtitle else "",
           '<div class="cards">' + "".join(f"<div class=\"card\"><b>{v}</b><span>{e(k)}</span></div>"
                                          for v, k in cards) + "</div>",
           "<table><thead><tr><th>node</th><th>GPU</th><th>driver</th><th>target</th><th>result</th>"
           "<th>vector add (GB/s)</th><th>×torch</th><th>matmul fp16 (TFLOP/s)</th><th>×torch</th></tr></thead><tbody>"]
    for r in table:
        pill = ("pass", "pass") if r.ok else ("fail", r.status)
        if r.ok and r.outlier:
            pill = ("warn", "slow")
        color = "#a4161a" if not r.ok else "#d98a00" if r.outlier else "#2f6fde"
        mode = ' <span class="muted">(interpreter)</span>' if r.mode == "interpreter" else ""
        out.append(
            f'<tr class="{"out" if r.outlier else ""}"><td><b>{e(r.node)}</b></td><td>{e(r.gpu)}</td>'
            f"<td>{e(r.driver or '—')}</td><td>{e(r.target or '—')}</td>"
            f'<td><span class="pill {pill[0]}">{e(pill[1])}</span>{mode}</td>'
            f"<td>{_bar(r.vector_add_gbs, top_add, color, _n(r.vector_add_gbs))}</td>"
            f'<td class="num">{_x(r.add_ratio)}</td>'
            f"<td>{_bar(r.matmul_tflops, top_mm, color, _n(r.matmul_tflops, 1))}</td>"
            f'<td class="num">{_x(r.matmul_ratio)}</td></tr>')
    out.append("</tbody></table>")
    notes = [f"<li><b>{e(r.node)}</b> — far below its peers ({e(r.model)}): {e(r.outlier)}</li>"
             for r in table if r.outlier]
    notes += [f"<li><b>{e(r.node)}</b> — {len(r.outside_band)} of {r.judged} timed rows outside the band expected "
              f"for its GPU: {e(', '.join(r.outside_band))}</li>" for r in table if r.outside_band]
    notes += [f'<li><b>{e(r.node)}</b> — <span class="err">{e(r.status)}: {e(r.error)}</span></li>'
              for r in table if not r.ok and r.error]
    notes += [f"<li><b>{e(r.node)}</b> — {e(_copies(r))}</li>" for r in table if r.copies]
    if notes:
        out += ["<h2>What needs a look</h2>", "<ul>", *notes, "</ul>"]
    reduces = [f"<li><b>{e(r.node)}</b> — {e(r.allreduce.words())}</li>" for r in table if r.allreduce is not None]
    if reduces:
        out += ["<h2>NCCL all-reduce across each node's GPUs</h2>", "<ul>", *reduces, "</ul>"]
    out.append("<footer>×torch: Triton's speed over torch's own operation on the same GPU (above 1 is faster); "
               f"the slowest GPU of a node is shown. A node is marked when it is below {OUTLIER:.0%} of the median "
               "of the nodes with the same GPU model. Interpreter runs (no GPU) prove the packages, not the GPU."
               "</footer></body></html>")
    return "\n".join(x for x in out if x) + "\n"


# ---------------------------------------------------------------- bands from a team's own records


@dataclass(frozen=True, kw_only=True, slots=True)
class BandRow:
    """What a team's records say of one timed row on one GPU model, beside the band compat/bands.toml ships."""

    gpu: str
    kernel: str
    dtype: str
    metric: str
    runs: int
    ratios: tuple[float, float, float]  # lowest, median, highest
    values: tuple[float, float, float]
    shipped_ratio: tuple[float, float] | None
    shipped_value: tuple[float, float] | None
    suggested_ratio: tuple[float, float]
    suggested_value: tuple[float, float]
    outside: int  # runs outside the shipped band


def band_rows(records: list[Any]) -> list[BandRow]:
    """Per GPU model, kernel and dtype: the spread of the records' figures (passing GPU runs only), the shipped band,
    and a band drawn from the records by compat/bands.toml's own rule (ratio lowest - 0.07 to highest + 0.08, value
    0.85 x lowest to 1.15 x highest)."""
    from tritonlock.verify.speed import load_bands

    bands = load_bands()
    seen: dict[tuple[str, str, str, str], list[tuple[float, float]]] = {}
    for rec in records:
        if not rec.ok or rec.mode != "gpu" or not rec.gpus:
            continue  # (a failed run's figures say what went wrong there, not what the GPU does)
        for k in rec.kernels:  # every device's figures: a node's slower GPU is a run of its own, not hidden
            if k.ratio is None or k.value is None or not k.metric:
                continue
            model, cc = _model_cc(_device_gpu(rec.gpus, k.device))
            seen.setdefault((f"{model}|{cc}", k.kernel, k.dtype, k.metric), []).append((k.ratio, k.value))
    out = []
    for (gpu, kernel, dtype, metric), pairs in sorted(seen.items()):
        model, cc = gpu.split("|")
        ratios = sorted(r for r, _ in pairs)
        values = sorted(v for _, v in pairs)
        fam = bands.family(model, cc) if bands else None
        band = bands.band(fam.family, kernel, dtype) if bands and fam else None
        outside = 0
        if band is not None:
            rband, vband = band.ratio, band.value
            outside = sum(1 for r, v in pairs if (rband is not None and not rband[0] <= r <= rband[1])
                          or (vband is not None and not vband[0] <= v <= vband[1]))
        out.append(BandRow(gpu=model, kernel=kernel, dtype=dtype, metric=metric, runs=len(pairs),
                           ratios=(ratios[0], statistics.median(ratios), ratios[-1]),
                           values=(values[0], statistics.median(values), values[-1]),
                           shipped_ratio=band.ratio if band else None, shipped_value=band.value if band else None,
                           suggested_ratio=(round(ratios[0] - 0.07, 2), round(ratios[-1] + 0.08, 2)),
                           suggested_value=(round(values[0] * 0.85), round(values[-1] * 1.15)), outside=outside))
    return out


def _device_gpu(gpus: tuple[str, ...], device: str) -> str:
    """The GPU a kernel row ran on: a node's one model, else the device's index ("cuda:1") into the record's GPUs
    (listed in the driver's order, as the devices are numbered where CUDA_VISIBLE_DEVICES does not reorder them)."""
    if len(set(gpus)) == 1:
        return gpus[0]
    index = device.rpartition(":")[2]
    return gpus[int(index)] if index.isdigit() and int(index) < len(gpus) else gpus[0]


def _model_cc(gpu: str) -> tuple[str, str | None]:
    name, _, rest = gpu.rpartition(" (")
    return (name, rest.rstrip(")")) if name else (gpu, None)


def bands_text(rows: list[BandRow]) -> str:
    def pair(p: tuple[float, float] | None, digits: int) -> str:
        return "—" if p is None else f"{p[0]:,.{digits}f}–{p[1]:,.{digits}f}"

    head = ["GPU", "kernel", "dtype", "runs", "ratio (low/median/high)", "shipped", "from these runs",
            "figure (low/median/high)", "shipped", "from these runs", "outside"]
    body = [[r.gpu, r.kernel, r.dtype, str(r.runs), "/".join(f"{x:.2f}" for x in r.ratios), pair(r.shipped_ratio, 2),
             pair(r.suggested_ratio, 2), "/".join(f"{x:,.0f}" for x in r.values) + f" {r.metric}",
             pair(r.shipped_value, 0), pair(r.suggested_value, 0), str(r.outside)] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in [head, *body]]
    no_band = sorted({r.gpu for r in rows if r.shipped_ratio is None})
    if no_band:
        lines.append(f"no band ships for: {', '.join(no_band)} — the runs above are where one would start "
                     "(compat/bands.toml, each band with the runs it comes from as its source)")
    if any(r.outside for r in rows):
        lines.append("rows with runs outside their shipped band: check those machines (`tritonlock report merge`), or "
                     "widen the band from the runs if the machines are healthy")
    return "\n".join(lines)
