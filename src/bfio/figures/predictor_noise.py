"""Predictor study: BF-IO's average imbalance and throughput against the error
level of every error model (uniform, log-normal, bucket), read by the posterior
remaining length and by the paper's convention, with the oracle-free
predictors, ``none``, FCFS and oracle BF-IO as reference lines; one column per
setting (``results/tables/predictors.csv``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.horizon_sweep import _err
from bfio.figures.style import figure, line_style, scale_for, series_style
from bfio.tables import row_label

PANELS = [("avg_imbalance", "Avg imbalance", "tokens"), ("throughput", "Throughput", "tokens/s")]


def _ref_label(r) -> str:
    if r["predictor"] == "-":
        return row_label(r["row"])
    return f"BF-IO, {r['predictor']}"


#: The error models on the figure (one pair of panel rows each): the axis label and
#: how a level maps to "more error" to the right (bucket: 1 - accuracy).
MODELS = {"noisy": ("uniform error d (estimate o x U[1-d, 1+d])", lambda x: x),
          "lognormal": ("log-normal error sigma (estimate o x exp(N(0, sigma^2)))", lambda x: x),
          "bucket": ("bucket misclassification 1 - accuracy", lambda x: 1.0 - x)}
READINGS = {"posterior": "BF-IO, posterior remaining length (default)", "paper": "BF-IO, paper's r = o_hat - tau"}


def plot_predictor_noise(summary: pd.DataFrame):
    """Imbalance and throughput against the error level of every error model
    (rows: model x metric; columns: settings), each model read by the posterior
    remaining length and by the paper's convention, with BF-IO's references (the
    oracle, ``none``, the oracle-free predictors) as lines (bands: their 95% CI)."""
    settings = list(dict.fromkeys(summary["setting"]))
    models = [m for m in MODELS if (summary["predictor"] == m).any()]
    nrows = max(1, len(models)) * len(PANELS)
    fig, axes = figure(nrows, max(1, len(settings)), width=3.4 * max(1, len(settings)) + 0.4,
                       height=2.3 * nrows + 1.2)
    for j, name in enumerate(settings):
        s = summary[summary["setting"] == name]
        # BF-IO's references only (oracle, none, oracle-free): FCFS, far above, would flatten the lines
        refs = s[~s["predictor"].isin([*MODELS, "-"])]
        first = s.iloc[0]
        h = s["horizon"].dropna()
        for k, model in enumerate(models):
            rows = s[s["predictor"] == model]
            xlabel, to_x = MODELS[model]
            for i, (m, label, unit) in enumerate(PANELS):
                ax = axes[k * len(PANELS) + i, j]
                factor, u = scale_for(s[f"{m}_mean"], unit) if unit == "tokens" else (1.0, unit)
                for r, (reading, text) in enumerate(READINGS.items()):
                    sub = rows[rows["remaining"] == reading].copy()
                    if sub.empty:
                        continue
                    sub["x"] = to_x(sub["noise"].astype(float))
                    sub = sub.sort_values("x")
                    mean, yerr = _err(sub, m, factor)
                    ax.errorbar(sub["x"], mean, yerr=yerr, capsize=2, label=text, linestyle="-" if r == 0 else "--",
                                **series_style(r, len(READINGS)))
                for q, r in enumerate(refs.to_dict("records")):  # a colour and a dash pattern each
                    st = {**line_style(q + 2, markers=False), "color": series_style(q + 2, len(refs) + 2)["color"]}
                    ax.axhline(r[f"{m}_mean"] / factor, color=st["color"], linestyle=st["linestyle"], linewidth=1.0,
                               label=_ref_label(r))
                    lo, hi = r[f"{m}_ci_lo"] / factor, r[f"{m}_ci_hi"] / factor
                    if np.isfinite(lo) and np.isfinite(hi):
                        ax.axhspan(lo, hi, color=st["color"], alpha=0.08, linewidth=0)
                ax.set_xlabel(xlabel, fontsize=7)
                ax.set_ylabel(f"{label} ({u})", fontsize=7)
                if k == 0 and i == 0:
                    ax.set_title(f"{name}: {first['trace']}, G={first['workers']}"
                                 + (f", H={int(h.iloc[0])}" if len(h) else ""), fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=7)
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    fig.suptitle(f"BF-IO with imperfect predictors: mean over {n} seeds, 95% CI (bars and bands)", fontsize=9)
    fig.tight_layout(rect=(0, 1.1 / (2.3 * nrows + 1.2), 1, 0.97))
    return fig


__all__ = ["plot_predictor_noise"]
