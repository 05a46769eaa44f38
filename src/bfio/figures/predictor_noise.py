"""Predictor study: BF-IO's average imbalance and throughput against the noise
level d of the noisy predictor, with the oracle-free predictors, FCFS and
oracle BF-IO as reference lines; one column per setting
(``results/tables/predictors.csv``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.horizon_sweep import _err
from bfio.figures.style import figure, line_style, scale_for

PANELS = [("avg_imbalance", "Avg imbalance", "tokens"), ("throughput", "Throughput", "tokens/s")]


def _ref_label(r) -> str:
    from bfio.tables import row_label

    if r["predictor"] == "-":
        return row_label(r["row"])
    return f"BF-IO, {r['predictor']}"


def plot_predictor_noise(summary: pd.DataFrame):
    settings = list(dict.fromkeys(summary["setting"]))
    fig, axes = figure(len(PANELS), max(1, len(settings)), width=3.4 * max(1, len(settings)) + 0.4, height=5.6)
    for j, name in enumerate(settings):
        s = summary[summary["setting"] == name]
        noisy = s[s["predictor"] == "noisy"].sort_values("noise")
        refs = s[s["predictor"] != "noisy"]
        first = s.iloc[0]
        h = noisy["horizon"].dropna()
        for i, (m, label, unit) in enumerate(PANELS):
            ax = axes[i, j]
            factor, u = scale_for(s[f"{m}_mean"], unit) if unit == "tokens" else (1.0, unit)
            if not noisy.empty:
                mean, yerr = _err(noisy, m, factor)
                ax.errorbar(noisy["noise"], mean, yerr=yerr, capsize=2, label="BF-IO, noisy predictor (d)",
                            **line_style(0))
            for k, r in enumerate(refs.to_dict("records")):
                st = line_style(k + 1, markers=False)
                val = r[f"{m}_mean"] / factor
                ax.axhline(val, color=st["color"], linestyle=st["linestyle"], linewidth=1.0, label=_ref_label(r))
                lo, hi = r[f"{m}_ci_lo"] / factor, r[f"{m}_ci_hi"] / factor
                if np.isfinite(lo) and np.isfinite(hi):
                    ax.axhspan(lo, hi, color=st["color"], alpha=0.08, linewidth=0)
            ax.set_xlabel("noise level d (estimate o x U[1-d, 1+d])")
            ax.set_ylabel(f"{label} ({u})")
            if i == 0:
                ax.set_title(f"{name}: {first['trace']}, G={first['workers']}"
                             + (f", H={int(h.iloc[0])}" if len(h) else ""))
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7)
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    fig.suptitle(f"BF-IO with imperfect predictors: mean over {n} seeds, 95% CI (bars and bands)", fontsize=9)
    fig.tight_layout(rect=(0, 0.1, 1, 0.97))
    return fig


__all__ = ["plot_predictor_noise"]
