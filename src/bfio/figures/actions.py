"""Actions study (issue 45): each router's goodput with and without its engine's
actions after binding, one panel per setting (``results/tables/actions.csv``,
the goodput summary of :mod:`bfio.studies.goodput_summary`). A bar per router
row, its 95% interval over the seeds as an error bar (none below two seeds,
never below 0); BF-IO's rows in BF-IO's colour, the other routers in grey,
hatched when the row takes actions; the dotted line is the balanced bound
(:mod:`bfio.sim.pooled`). Each panel is titled with its setting (trace, G, N,
B, seeds)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.series import COLOURS, HATCHES, OTHERS, SERIES
from bfio.figures.style import figure, setting_of
from bfio.studies.goodput_summary import BOUND, is_reference, row_label


def _takes_actions(r) -> bool:
    return isinstance(r.get("actions"), str) and r["actions"] != ""


def plot_actions(summary: pd.DataFrame):
    key = list(zip(summary["setting"], summary["regime"]))
    settings = list(dict.fromkeys(key))  # a panel per (setting, regime)
    at = pd.Series(key, index=summary.index)
    routers = summary[~is_reference(summary)]
    rows = max(len(routers[at[routers.index] == s]) for s in settings) if settings else 1
    fig, axes = figure(len(settings), 1, width=7.5, height=(0.32 * rows + 1.2) * max(1, len(settings)))
    bfio_colour = COLOURS[SERIES["bfio"]["lookahead"].colour]
    for ax, setting in zip(axes[:, 0], settings):
        s = summary[at == setting]
        mine = routers[at[routers.index] == setting].sort_values("goodput_rps")
        y = np.arange(len(mine))
        records = mine.to_dict("records")
        lo = np.clip(mine["goodput_rps"] - mine["goodput_ci_lo"].fillna(mine["goodput_rps"]), 0, None)
        hi = np.clip(mine["goodput_ci_hi"].fillna(mine["goodput_rps"]) - mine["goodput_rps"], 0, None)
        lo = np.minimum(lo, mine["goodput_rps"])  # an interval never runs below 0 req/s
        colours = [bfio_colour if r.get("policy") == "bfio" else OTHERS for r in records]
        bars = ax.barh(y, mine["goodput_rps"], xerr=[lo, hi], color=colours, edgecolor="0.25", linewidth=0.6,
                       error_kw={"ecolor": "0.2", "capsize": 2, "lw": 0.8})
        for bar, r in zip(bars, records):
            bar.set_hatch(HATCHES[1] if _takes_actions(r) else HATCHES[0])
        ax.set_yticks(y, [row_label(r).replace(" (instant)", "").replace(" (central)", " (central pool)")
                          for r in records], fontsize=7)
        bound = s[is_reference(s, BOUND)]
        if len(bound):
            ax.axvline(float(bound["goodput_rps"].iloc[0]), color="black", linestyle=":", linewidth=1.2)
        ax.set_xlabel("goodput (requests/s within the p99 TTFT and TPOT targets)")
        ax.set_xlim(left=0)
        ax.set_title(setting_of(mine, extra=f"{setting[1]} regime"), fontsize=8)
    fig.suptitle("Goodput with and without the engines' actions after binding (hatched: with actions; "
                 "BF-IO in colour, other routers grey;\ndotted: the balanced bound); bars: mean over seeds, "
                 "95% interval", fontsize=8)
    fig.tight_layout()
    return fig


__all__ = ["plot_actions"]
