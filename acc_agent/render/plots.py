"""PNG pictures next to the documents, for the things people would rather look at than read.

Why: a reviewer sees in one glance where along the network the error jumps (per-layer cosine and
max-abs-error with the first divergence marked) and whether latency is stable (distributions).
matplotlib is imported here only, with the Agg backend, so the CLI stays fast and headless.
A plot that cannot be made is skipped with a note; the documents then simply do not link it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from acc_agent.app.workflow import WorkflowResult
from acc_agent.io.figures import save_figure


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_layers(rows: list[dict[str, Any]], first_divergence: str | None, path: Path) -> bool:
    """Cosine and max-abs-error per compared tensor in execution order; the first divergence marked."""
    pts = [(i, r.get("name", ""), r.get("cosine"), r.get("max_abs_err")) for i, r in enumerate(rows)]
    pts = [p for p in pts if isinstance(p[2], int | float) or isinstance(p[3], int | float)]
    if not pts:
        return False
    plt = _pyplot()
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True)
    xs = [p[0] for p in pts]
    cos = [float(p[2]) if isinstance(p[2], int | float) and math.isfinite(p[2]) else float("nan") for p in pts]
    mae = [float(p[3]) if isinstance(p[3], int | float) and p[3] > 0 else float("nan") for p in pts]
    ax1.plot(xs, cos, marker="o", ms=3, color="tab:blue", label="target vs golden")
    ax1.set_ylabel("cosine")
    ax1.ticklabel_format(axis="y", useOffset=False, style="plain")
    ax2.semilogy(xs, mae, marker="o", ms=3, color="tab:red", label="target vs golden")
    bench = [rows[p[0]].get("bench") for p in pts]
    bmae = [float(b["max_abs_err"]) if isinstance(b, dict) and isinstance(b.get("max_abs_err"), int | float)
            and b["max_abs_err"] > 0 else float("nan") for b in bench]
    if any(not math.isnan(v) for v in bmae):
        ax2.semilogy(xs, bmae, marker="s", ms=3, color="tab:gray", ls=":", label="bench vs golden (precision budget)")
        ax2.legend(fontsize=7)
    ax2.set_ylabel("max abs error")
    ax2.set_xlabel("tensor (execution order)")
    if first_divergence is not None:
        idx = next((p[0] for p in pts if p[1] == first_divergence or p[1].startswith(first_divergence)), None)
        if idx is not None:
            for ax in (ax1, ax2):
                ax.axvline(idx, color="black", ls="--", lw=1)
            ax1.annotate(f"first divergence\n{first_divergence}", (idx, min(c for c in cos if not math.isnan(c))),
                         fontsize=7, ha="left")
    ax2.set_xticks(xs)
    ax2.set_xticklabels([p[1].replace("Functional.", "").replace(".forward", "") for p in pts], rotation=75, fontsize=6)
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
    plt = _pyplot()
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


def _loss_curves(wf: WorkflowResult, path: Path) -> tuple[bool, str]:
    """Ask compare_loss_curves (which owns io/curve_plot.py) to draw the curves it compared."""
    lc = wf.get("loss_curves")
    if not lc.ok:
        return False, f"loss-curve plot skipped: {lc.reason}"
    from acc_agent.errors import AccAgentError
    from acc_agent.registry import get_tool

    p = wf.project
    try:
        spec = get_tool("compare_loss_curves")
        if "plot" not in spec.input_model.model_fields:
            return False, "loss-curve plot skipped: compare_loss_curves cannot draw plots in this installation"
        args = dict(zip(spec.positional, (str(p.resolve(p.artefacts.baseline_log)), str(p.resolve(p.artefacts.target_log))),
                        strict=False))
        spec.run({**args, "plot": str(path)})
    except AccAgentError as err:
        return False, f"loss-curve plot skipped: {err.message}"
    except Exception as exc:  # the documents must still be written
        return False, f"loss-curve plot skipped: {type(exc).__name__}: {exc}"
    return path.is_file(), "" if path.is_file() else "loss-curve plot skipped: no file written"


def make_plots(wf: WorkflowResult, out_dir: Path) -> tuple[dict[str, str], list[str]]:
    """Write the PNGs under ``out_dir/plots``; returns links relative to ``out_dir`` and skip notes."""
    plots_dir = out_dir / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    links: dict[str, str] = {}
    notes: list[str] = []
    ok, note = _loss_curves(wf, plots_dir / "loss_curves.png")
    if ok:
        links["loss_curves"] = "plots/loss_curves.png"
    elif note:
        notes.append(note)
    d = wf.get("dumps")
    if d.ok and d.output is not None:
        fd = d.output.get("first_divergence")
        name = fd.get("name") if isinstance(fd, dict) else None
        if plot_layers(d.output.get("rows") or [], name, plots_dir / "layers.png"):
            links["layers"] = "plots/layers.png"
    else:
        notes.append(f"per-layer plot skipped: {d.reason}")
    lat: dict[str, dict[int, list[float]]] = {"baseline": {}, "target": {}}
    for side, slot in (("baseline", "baseline_perf"), ("target", "target_perf")):
        r = wf.get(slot)
        for row in (r.output or {}).get("results", []) if r.ok else []:
            raw = row.get("samples_ms") or row.get("latencies_ms")
            if isinstance(raw, list) and raw and isinstance(row.get("batch_size"), int):
                lat[side][row["batch_size"]] = raw
    if plot_latency(lat, plots_dir / "latency.png"):
        links["latency"] = "plots/latency.png"
    else:
        notes.append("latency plot skipped: the timing results hold no raw samples_ms")
    return links, notes
