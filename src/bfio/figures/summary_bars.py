"""The notebook's bar chart of an experiment summary (``notebooks/explore.ipynb``):
one bar per row and cluster size with its 95% interval over seeds, tall enough
for every label, on a log axis when the bars span more than two decades (FCFS
at 3.7e9 would otherwise flatten BF-IO's rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import COLOURS, figure, interval, interval_note, router, setting_of

#: inches per bar (labels of 8 pt need about 0.2)
BAR_HEIGHT_IN = 0.26


def plot_summary_bars(summary: pd.DataFrame, metric: str):
    """Horizontal bars of ``<metric>_mean`` with their interval
    (:func:`bfio.figures.style.interval`) per row of ``summary`` (an
    ``<experiment>_summary`` table), labelled by policy and ``G``; bars in each
    policy's registry colour (:func:`bfio.figures.style.router`: every BF-IO
    row BF-IO's blue, the paper-literal ones its purple, FCFS black), the
    setting in the title."""
    s = summary.iloc[::-1]  # first row on top
    mean, err, kind = interval(s, metric)
    styles = [router(r) for r in s["row"]]
    labels = [f"{st.label} G={g}" for st, g in zip(styles, s["workers"])]
    fig, axes = figure(1, 1, width=6.5, height=max(2.4, BAR_HEIGHT_IN * len(s) + 1.0))
    ax = axes[0, 0]
    ax.barh(np.arange(len(s)), mean, xerr=err, color=[COLOURS[st.colour] for st in styles], edgecolor="0.2")
    ax.set_yticks(np.arange(len(s)), labels)
    positive = mean[mean > 0]
    if positive.size and positive.max() / positive.min() > 100:
        ax.set_xscale("log")
    ax.set_xlabel(f"{metric.replace('_', ' ')} (mean over seeds)")
    ax.set_title(f"{setting_of(summary)}\n{interval_note([kind])}", fontsize=8)
    fig.tight_layout()
    return fig


__all__ = ["plot_summary_bars"]
