"""PNG of baseline vs target training curves, with their relative deviation and the tolerance.

A reviewer sees at a glance whether the NPU curve tracks the baseline and where it leaves it.
matplotlib is imported inside the function with the Agg backend (headless, and the CLI stays fast).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from acc_agent.io.figures import save_figure


@dataclass(frozen=True)
class CurvePanel:
    metric: str
    baseline_steps: Sequence[float]
    baseline_values: Sequence[float]
    target_steps: Sequence[float]
    target_values: Sequence[float]
    aligned_steps: Sequence[float]
    deviation: Sequence[float]
    tolerance: float
    first_divergent_step: int | None


def plot_curves(panels: Sequence[CurvePanel], path: Path, baseline_label: str, target_label: str) -> Path:
    """Write one row per metric (curves left, relative deviation right) to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = max(1, len(panels))
    fig, axes = plt.subplots(rows, 2, figsize=(11, 3.2 * rows), squeeze=False)
    for row, panel in enumerate(panels):
        ax, dev = axes[row][0], axes[row][1]
        ax.plot(panel.baseline_steps, panel.baseline_values, label=baseline_label, color="tab:blue", lw=1.4)
        ax.plot(panel.target_steps, panel.target_values, label=target_label, color="tab:orange", lw=1.2, ls="--")
        ax.set_title(panel.metric)
        ax.set_xlabel("step")
        ax.legend(fontsize=8)
        dev.plot(panel.aligned_steps, [d * 100 for d in panel.deviation], color="tab:red", lw=1.2)
        dev.axhline(panel.tolerance * 100, color="gray", ls=":", label=f"tolerance {panel.tolerance:.1%}")
        if panel.first_divergent_step is not None:
            ax.axvline(panel.first_divergent_step, color="red", ls=":", lw=1)
            dev.axvline(panel.first_divergent_step, color="red", ls=":", lw=1, label=f"first divergence @ {panel.first_divergent_step}")
        dev.set_title(f"{panel.metric}: |target - baseline| / |baseline| (%)")
        dev.set_xlabel("step")
        dev.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path
