"""The notebook's bar chart of an experiment summary (``notebooks/explore.ipynb``):
one bar per row and cluster size with its 95% interval over seeds, tall enough
for every label, on a log axis when the bars span more than two decades (FCFS
at 3.7e9 would otherwise flatten BF-IO's rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import figure, series_colours
from bfio.tables import row_label

#: inches per bar (labels of 8 pt need about 0.2)
BAR_HEIGHT_IN = 0.26


def plot_summary_bars(summary: pd.DataFrame, metric: str):
    """Horizontal bars of ``<metric>_mean`` with the interval ``_ci_lo``..``_ci_hi``
    per row of ``summary`` (an ``<experiment>_summary`` table), labelled by policy
    and ``G``; bars coloured by policy (colour-blind palette)."""
    s = summary.assign(policy=summary["row"].map(row_label)).iloc[::-1]  # first row on top
    mean = s[f"{metric}_mean"].to_numpy(dtype=float)
    err = np.nan_to_num(np.vstack([mean - s[f"{metric}_ci_lo"].to_numpy(dtype=float),
                                   s[f"{metric}_ci_hi"].to_numpy(dtype=float) - mean]))
    labels = (s["policy"] + " G=" + s["workers"].astype(str)).tolist()
    policies = list(dict.fromkeys(s["policy"]))
    colours = dict(zip(policies, series_colours(len(policies))))
    fig, axes = figure(1, 1, width=6.5, height=max(2.4, BAR_HEIGHT_IN * len(s) + 1.0))
    ax = axes[0, 0]
    ax.barh(np.arange(len(s)), mean, xerr=err, color=[colours[p] for p in s["policy"]], edgecolor="0.2")
    ax.set_yticks(np.arange(len(s)), labels)
    positive = mean[mean > 0]
    if positive.size and positive.max() / positive.min() > 100:
        ax.set_xscale("log")
    ax.set_xlabel(f"{metric} (mean over seeds, 95% interval)")
    fig.tight_layout()
    return fig


__all__ = ["plot_summary_bars"]
