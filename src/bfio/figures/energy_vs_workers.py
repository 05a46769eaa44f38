"""Energy against the cluster size G for FCFS and BF-IO, with the energy
reduction in percent on a second axis (paper Fig. ``scalability_energy``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import figure, line_style, scale_for
from bfio.tables import row_label


def plot_energy_vs_workers(energy: pd.DataFrame, title: str = "", metric: str = "energy_j"):
    """``energy``: :func:`bfio.tables.energy_reduction` output (one row per G)."""
    energy = energy.sort_values("workers")
    fig, axes = figure(1, 1, width=6.0, height=3.0)
    ax = axes[0, 0]
    base, target = energy["baseline"].iloc[0], energy["target"].iloc[0]
    factor, unit = scale_for(energy[[f"{metric}_baseline_mean", f"{metric}_target_mean"]].to_numpy().ravel(), "J")
    handles = []
    for i, (col, row) in enumerate(((f"{metric}_baseline_mean", base), (f"{metric}_target_mean", target))):
        (h,) = ax.plot(energy["workers"], energy[col] / factor, label=f"{row_label(row)} energy", **line_style(i))
        handles.append(h)
    ax.set_xlabel("workers G (GPUs)")
    ax.set_ylabel(f"energy ({unit})")
    ax2 = ax.twinx()
    ax2.spines["right"].set_visible(True)
    ax2.grid(False)
    yerr = np.vstack([energy["reduction_pct_mean"] - energy["reduction_pct_ci_lo"],
                      energy["reduction_pct_ci_hi"] - energy["reduction_pct_mean"]])
    h = ax2.errorbar(energy["workers"], energy["reduction_pct_mean"], yerr=np.where(np.isfinite(yerr), yerr, 0),
                     capsize=2, label="energy reduction (right axis)", **line_style(2))
    handles.append(h)
    ax2.set_ylabel(f"energy reduction of {row_label(target)} vs {row_label(base)} (%)")
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=7, bbox_to_anchor=(0.5, -0.01))
    n = int(energy["n_seeds"].max())
    ax.set_title((title + ": " if title else "") + f"mean over {n} seed(s); reduction with 95% CI", fontsize=9)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


__all__ = ["plot_energy_vs_workers"]
