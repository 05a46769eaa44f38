"""Step-regime study: each router's p99 end-to-end latency over the best
router's, regime by regime (the paper's step, then the calibrated step as the
padded-batch coefficient beta grows), one panel per setting
(``results/tables/step_regime.csv``)."""

from __future__ import annotations

import pandas as pd

from bfio.figures.style import figure, series_style
from bfio.studies.online_summary import policy_label


def plot_step_regime(summary: pd.DataFrame):
    settings = list(dict.fromkeys(summary["setting"]))
    fig, axes = figure(1, len(settings), width=4.2 * len(settings) + 0.6, height=3.6)
    routers = list(dict.fromkeys(zip(summary["dispatch"], summary["row"])))
    for j, setting in enumerate(settings):
        ax = axes[0, j]
        s = summary[summary["setting"] == setting]
        regimes = list(dict.fromkeys(s["regime"]))
        for k, (dispatch, row) in enumerate(routers):
            r = s[(s["dispatch"] == dispatch) & (s["row"] == row)].set_index("regime").reindex(regimes)
            first = s[(s["dispatch"] == dispatch) & (s["row"] == row)].iloc[0]
            ax.plot(range(len(regimes)), r["vs_best"], linewidth=1.2,
                    label=policy_label(row, dispatch, first["report_interval"], first["policy"], first.get("horizon"))
                    if j == 0 else None,
                    **series_style(k, len(routers)))
        ax.set_xticks(range(len(regimes)), regimes, rotation=30, ha="right")
        ax.set_ylabel("p99 e2e / best router's")
        ax.set_title(setting)
    fig.legend(loc="lower center", ncol=min(3, len(routers)), bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 1.0 / fig.get_figheight(), 1, 1))
    return fig


__all__ = ["plot_step_regime"]
