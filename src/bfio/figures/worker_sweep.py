"""Scalability with the cluster size G: average imbalance and throughput, FCFS
vs BF-IO (paper Fig. ``scalability_metrics``)."""

from __future__ import annotations

import pandas as pd

from bfio.figures.style import figure, interval, interval_note, router, scale_for, setting_of


def plot_worker_sweep(summary: pd.DataFrame, rows=None, title: str = ""):
    """Two panels against G: average imbalance (tokens) and throughput
    (tokens/s), one line per row (mean over seeds; bars: :func:`~bfio.figures.style.interval`).
    The title names the setting (trace, N, B, seeds) from the summary's columns."""
    rows = rows or list(dict.fromkeys(summary["row"]))
    fig, axes = figure(1, 2, width=6.8, height=3.1)
    kinds = []
    for ax, (m, label, unit) in zip(axes[0], (("avg_imbalance", "Avg imbalance", "tokens"),
                                              ("throughput", "Throughput", "tokens/s"))):
        factor, u = scale_for(summary[f"{m}_mean"], unit) if unit == "tokens" else (1.0, unit)
        for row in rows:
            sub = summary[summary["row"] == row].sort_values("workers")
            mean, yerr, kind = interval(sub, m, factor)
            kinds.append(kind)
            ax.errorbar(sub["workers"], mean, yerr=yerr, capsize=2, **router(row).style())
        ax.set_xlabel("workers G (GPUs)")
        ax.set_ylabel(f"{label} ({u})")
        ax.set_ylim(bottom=0)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)
    setting = setting_of(summary.drop(columns="workers"))
    fig.suptitle((title + "\n" if title else "") + f"Against the number of workers G: {setting}\n"
                 f"mean over seeds, {interval_note(kinds)}", fontsize=9)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


__all__ = ["plot_worker_sweep"]
