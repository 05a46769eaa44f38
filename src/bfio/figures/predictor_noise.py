"""Predictor study: BF-IO with imperfect decode-length predictors
(``results/tables/predictors.csv``), one column per setting and two panels:
the imbalance change against BF-IO with oracle lengths (paired by seed, %) and
the throughput, against the error level of every error model.

All three error models share a panel (their levels on one axis: d, sigma and
1 - accuracy), each in its registry colour and marker
(:data:`bfio.figures.style.SERIES`, family ``predictor``), read by the
posterior remaining length (solid, filled) and by the paper's convention
(dashed, open): at most six series, plus the oracle (a black line) and the
oracle-free predictors as one grey band (the range of their means), so no
panel shows more than :data:`~bfio.figures.style.MAX_SERIES`. FCFS, far above,
is left out (the table has it)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import (OTHERS, figure, interval, interval_note, scale_for, series, setting_of)

#: The error models: their level as x, growing with the error (bucket: 1 - accuracy).
MODELS = {"noisy": lambda x: x, "lognormal": lambda x: x, "bucket": lambda x: 1.0 - x}
#: The readings of a predicted length: line style and marker fill.
READINGS = {"posterior": ("-", True), "paper": ("--", False)}
#: Panels: (metric, axis label, unit, non-negative); the first is paired against the oracle.
PANELS = [("imbalance_vs_oracle_pct", "imbalance change vs oracle lengths", "%", False),
          ("throughput", "throughput", "tokens/s", True)]
XLABEL = "error level: d (uniform), sigma (log-normal), 1 - accuracy (bucket)"


def _panels(summary: pd.DataFrame):
    """The imbalance panel reads the paired change when the table has it, else the imbalance."""
    if "imbalance_vs_oracle_pct_mean" in summary:
        return PANELS
    return [("avg_imbalance", "Avg imbalance", "tokens", True)] + PANELS[1:]


def plot_predictor_noise(summary: pd.DataFrame):
    """Two panels per setting (columns) against the error level; see the module."""
    settings = list(dict.fromkeys(summary["setting"]))
    panels = _panels(summary)
    models = [m for m in MODELS if (summary["predictor"] == m).any()]
    fig, axes = figure(len(panels), max(1, len(settings)), width=3.6 * max(1, len(settings)) + 0.4,
                       height=2.9 * len(panels) + 1.5)
    kinds = []
    for j, name in enumerate(settings):
        s = summary[summary["setting"] == name]
        oracle = s[s["predictor"] == "oracle"]
        free = s[~s["predictor"].isin([*MODELS, "oracle", "-"])]
        h = s["horizon"].dropna()
        for i, (m, label, unit, nonneg) in enumerate(panels):
            ax = axes[i, j]
            factor, u = scale_for(s[f"{m}_mean"], unit) if unit == "tokens" else (1.0, unit)
            for model in models:
                for reading, (dash, filled) in READINGS.items():
                    sub = s[(s["predictor"] == model) & (s["remaining"] == reading)].copy()
                    if sub.empty:
                        continue
                    sub["x"] = MODELS[model](sub["noise"].astype(float))
                    sub = sub.sort_values("x")
                    mean, yerr, kind = interval(sub, m, factor, nonneg=nonneg)
                    kinds.append(kind)
                    st = series("predictor", model).style()
                    st.update(linestyle=dash, label=f"{st['label']}, {series('reading', reading).label}")
                    if not filled:
                        st["markerfacecolor"] = "white"
                    ax.errorbar(sub["x"], mean, yerr=yerr, capsize=2, markersize=4, **st)
            ref = series("predictor", "oracle").style(marker=False)
            if m == "imbalance_vs_oracle_pct":
                ax.axhline(0.0, linewidth=1.2, **{**ref, "label": "oracle lengths (0 by definition)"})
            elif len(oracle):
                ax.axhline(float(oracle[f"{m}_mean"].iloc[0]) / factor, linewidth=1.2,
                           **{**ref, "label": "oracle lengths"})
            vals = free[f"{m}_mean"].to_numpy(dtype=float) / factor
            if len(free) == 1:  # one: its line
                ax.axhline(vals[0], linewidth=1.0, **series("predictor", free["predictor"].iloc[0]).style(marker=False))
            elif len(free):
                ax.axhspan(np.nanmin(vals), np.nanmax(vals), color=OTHERS, alpha=0.45, linewidth=0, zorder=0,
                           label=f"{len(free)} oracle-free predictors: range of their means")
            ax.set_xlabel(XLABEL, fontsize=7)
            ax.set_ylabel(f"{label} ({u})")
            if i == 0:
                hh = f", BF-IO H = {int(h.iloc[0])}" if len(h) else ""
                ax.set_title(setting_of(s.drop(columns="n_seeds"), wrap=True) + hh, fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    ncol = 2
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=7)
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    fig.suptitle(f"BF-IO with imperfect decode-length predictors: mean over {n} seeds, {interval_note(kinds)}\n"
                 "solid, filled: posterior remaining length (default); dashed, open: the paper's "
                 "$r = \\hat{o} - \\tau$",
                 fontsize=9)
    rows = -(-len(labels) // ncol)
    fig.tight_layout(rect=(0, (0.1 + 0.16 * rows) / fig.get_figheight(), 1, 1))
    return fig


__all__ = ["plot_predictor_noise", "MODELS", "READINGS", "PANELS"]
