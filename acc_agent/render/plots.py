"""PNG pictures next to the documents, for the things people would rather look at than read.

Why: a reviewer sees in one glance where along the network the error jumps (per-layer cosine and
max-abs-error with the first divergence marked) and whether latency is stable (distributions).
matplotlib is imported here only, with the Agg backend, so the CLI stays fast and headless.
A plot that cannot be made is skipped with a note; the documents then simply do not link it.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

from acc_agent.io.figures import save_figure
from acc_agent.models.compare import CompareDumpsOutput, DumpRow
from acc_agent.models.performance import MeasurePerformanceOutput
from acc_agent.models.workflow import WorkflowResult


def _pyplot() -> ModuleType:
    """matplotlib's pyplot on the headless Agg backend, imported on first use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _number(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else float("nan")


def plot_layers(rows: list[DumpRow], first_divergence: str | None, path: Path) -> bool:
    """Cosine and max-abs-error per compared tensor in execution order; the first divergence marked."""
    pts = [(i, r) for i, r in enumerate(rows) if r.cosine is not None or r.max_abs_err is not None]
    if not pts:
        return False
    _pyplot()
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True)
    xs = [i for i, _ in pts]
    cos = [_number(r.cosine) for _, r in pts]
    mae = [r.max_abs_err if r.max_abs_err is not None and r.max_abs_err > 0 else float("nan") for _, r in pts]
    ax1.plot(xs, cos, marker="o", ms=3, color="tab:blue", label="target vs golden")
    ax1.set_ylabel("cosine")
    ax1.ticklabel_format(axis="y", useOffset=False, style="plain")
    ax2.semilogy(xs, mae, marker="o", ms=3, color="tab:red", label="target vs golden")
    bench = [r.bench.max_abs_err if r.bench is not None else None for _, r in pts]
    bmae = [b if b is not None and b > 0 else float("nan") for b in bench]
    if any(not math.isnan(v) for v in bmae):
        ax2.semilogy(xs, bmae, marker="s", ms=3, color="tab:gray", ls=":", label="bench vs golden (precision budget)")
        ax2.legend(fontsize=7)
    ax2.set_ylabel("max abs error")
    ax2.set_xlabel("tensor (execution order)")
    if first_divergence is not None:
        idx = next((i for i, r in pts if r.name == first_divergence or r.name.startswith(first_divergence)), None)
        if idx is not None:
            for ax in (ax1, ax2):
                ax.axvline(idx, color="black", ls="--", lw=1)
            ax1.annotate(f"first divergence\n{first_divergence}", (idx, min(c for c in cos if not math.isnan(c))),
                         fontsize=7, ha="left")
    ax2.set_xticks(xs)
    ax2.set_xticklabels([r.name.replace("Functional.", "").replace(".forward", "") for _, r in pts], rotation=75, fontsize=6)
    fig.suptitle("Per-layer comparison along the network")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return True


def plot_latency(latencies: dict[str, dict[int, list[float]]], path: Path) -> bool:
    """Latency histograms per batch size, baseline vs target, on one shared axis per batch."""
    batches = sorted({bs for side in latencies.values() for bs in side})
    if not batches:
        return False
    _pyplot()
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(batches), figsize=(4.5 * len(batches), 3.5), squeeze=False)
    import numpy as np

    for ax, bs in zip(axes[0], batches, strict=True):
        sides = {side: np.asarray([float(v) for v in latencies.get(side, {}).get(bs, []) if isinstance(v, int | float)])
                 for side in ("baseline", "target")}
        both = np.concatenate([v for v in sides.values() if v.size]) if any(v.size for v in sides.values()) else None
        if both is None:
            continue
        hi = float(np.percentile(both, 99))  # shared bins; the slowest 1 % is counted, not drawn, so shapes stay visible
        bins = np.linspace(float(both.min()), hi if hi > both.min() else float(both.max()) + 1e-9, 40)
        for side, color in (("baseline", "tab:blue"), ("target", "tab:orange")):
            vals = sides[side]
            if vals.size:
                beyond = int((vals > bins[-1]).sum())
                label = f"{side} (n={vals.size}, p50 {np.percentile(vals, 50):.3g} ms" + (f", {beyond} beyond axis)" if beyond else ")")
                ax.hist(vals[vals <= bins[-1]], bins=bins, alpha=0.6, color=color, label=label)
        ax.set_title(f"batch {bs}")
        ax.set_xlabel("latency (ms)")
        ax.legend(fontsize=7)
    fig.suptitle("Latency distributions (warmup excluded)")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return True


def make_plots(wf: WorkflowResult, out_dir: Path) -> tuple[dict[str, str], list[str]]:
    """Write the per-layer and latency PNGs under ``out_dir/plots`` from the results already computed;
    returns links relative to ``out_dir`` and skip notes. (compare_loss_curves draws its own plot: the
    application layer asks it to, see app/report.py.)"""
    plots_dir = out_dir / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    links: dict[str, str] = {}
    notes: list[str] = []
    d = wf.get("dumps")
    dumps = d.output_as(CompareDumpsOutput)
    if dumps is not None:
        name = dumps.first_divergence.name if dumps.first_divergence is not None else None
        if plot_layers(dumps.rows, name, plots_dir / "layers.png"):
            links["layers"] = "plots/layers.png"
    else:
        notes.append(f"per-layer plot skipped: {d.reason}")
    lat: dict[str, dict[int, list[float]]] = {"baseline": {}, "target": {}}
    for side, slot in (("baseline", "baseline_perf"), ("target", "target_perf")):
        timing = wf.get(slot).output_as(MeasurePerformanceOutput)
        for row in timing.results if timing is not None else []:
            if row.samples_ms:
                lat[side][row.batch_size] = row.samples_ms
    if plot_latency(lat, plots_dir / "latency.png"):
        links["latency"] = "plots/latency.png"
    else:
        notes.append("latency plot skipped: the timing results hold no raw samples_ms")
    return links, notes
