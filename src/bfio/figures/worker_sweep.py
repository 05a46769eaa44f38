"""Scalability with the cluster size G: average imbalance and throughput, FCFS
vs BF-IO (paper Fig. ``scalability_metrics``)."""

from __future__ import annotations

import pandas as pd

from bfio.figures.horizon_sweep import _err
from bfio.figures.style import figure, line_style, scale_for
from bfio.tables import row_label


def plot_worker_sweep(summary: pd.DataFrame, rows=None, title: str = ""):
    """Two panels against G: average imbalance (tokens) and throughput
    (tokens/s), one line per row (mean over seeds with 95% CI)."""
    rows = rows or list(dict.fromkeys(summary["row"]))
    fig, axes = figure(1, 2, width=6.8, height=2.8)
    for ax, (m, label, unit) in zip(axes[0], (("avg_imbalance", "Avg imbalance", "tokens"),
                                              ("throughput", "Throughput", "tokens/s"))):
        factor, u = scale_for(summary[f"{m}_mean"], unit) if unit == "tokens" else (1.0, unit)
        for i, row in enumerate(rows):
            sub = summary[summary["row"] == row].sort_values("workers")
            mean, yerr = _err(sub, m, factor)
            ax.errorbar(sub["workers"], mean, yerr=yerr, capsize=2, label=row_label(row), **line_style(i))
        ax.set_xlabel("workers G (GPUs)")
        ax.set_ylabel(f"{label} ({u})")
        ax.legend()
    n = int(summary["n_seeds"].max())
    fig.suptitle((title + ": " if title else "") + f"mean over {n} seed(s), 95% CI bars", fontsize=9)
    fig.tight_layout()
    return fig


__all__ = ["plot_worker_sweep"]
