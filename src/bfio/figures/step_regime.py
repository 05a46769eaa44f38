"""Step-regime study: each router's p99 end-to-end latency over the best
router's, regime by regime (the paper's step, then the calibrated step as the
padded-batch coefficient beta grows), one panel per setting
(``results/tables/step_regime.csv``). Routers in the registry's colours,
markers and labels (:func:`bfio.figures.style.router`); each panel is titled
with its setting (trace, G, N, B, load)."""

from __future__ import annotations

import pandas as pd

from bfio.figures.style import figure, router, setting_of


def _regime_label(regime: str) -> str:
    return "paper's step" if regime == "paper" else regime.replace("beta=", "calibrated,\nbeta = ")


def plot_step_regime(summary: pd.DataFrame):
    settings = list(dict.fromkeys(summary["setting"]))
    fig, axes = figure(1, len(settings), width=4.2 * len(settings) + 0.6, height=4.2)
    routers = list(dict.fromkeys(zip(summary["dispatch"], summary["row"])))
    for j, setting in enumerate(settings):
        ax = axes[0, j]
        s = summary[summary["setting"] == setting]
        regimes = list(dict.fromkeys(s["regime"]))
        for dispatch, row in routers:
            mine = s[(s["dispatch"] == dispatch) & (s["row"] == row)]
            if mine.empty:
                continue
            r = mine.set_index("regime").reindex(regimes)
            first = mine.iloc[0]
            st = router(row, dispatch, first.get("policy"), first.get("horizon"), first.get("report_interval")).style()
            if j:
                st["label"] = "_" + st["label"]
            ax.plot(range(len(regimes)), r["vs_best"], linewidth=1.2, **st)
        ax.axhline(1.0, color="0.5", linewidth=0.8)
        ax.set_xticks(range(len(regimes)), [_regime_label(g) for g in regimes], rotation=30, ha="right", fontsize=7)
        ax.set_xlabel("step-time regime")
        ax.set_ylabel("p99 e2e / best router's (ratio)")
        load = s["load"].iloc[0] if "load" in s else None
        extra = f"load {load:g} of capacity" if load is not None else ""
        ax.set_title(setting_of(s.drop(columns="n_seeds"), wrap=True, extra=extra), fontsize=8)
    n = int(summary["n_seeds"].max()) if "n_seeds" in summary and len(summary) else 0
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(f"Router ranking under the paper's step and a calibrated step (Poisson arrivals): mean over {n} "
                 "seeds; 1 = the best router in the regime", fontsize=9)
    rows = -(-len(labels) // min(3, max(1, len(labels))))
    fig.tight_layout(rect=(0, (0.15 + 0.2 * rows) / fig.get_figheight(), 1, 1))
    return fig


__all__ = ["plot_step_regime"]
