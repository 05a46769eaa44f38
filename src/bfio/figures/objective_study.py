"""Objective study figure: the choose stage's imbalance score of every
(discount, new-request model) against H, and the confirm stage's imbalance of
the default and paper-literal against H (``bfio.studies.objective_study``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import figure, line_style


def plot_objective_study(choose_runs: pd.DataFrame, confirm: pd.DataFrame, title: str = ""):
    """Left: mean imbalance relative to BF-IO H = 0 (same trace and seed) per
    setting against H (choose stage). Right: per (trace, G) the paired ratio paper-literal /
    default imbalance against H with 95% CI (confirm stage; > 1: the default
    balances better)."""
    key = ["trace", "workers", "seed"]
    h0 = choose_runs[choose_runs["horizon"] == 0].groupby(key)["avg_imbalance"].mean().rename("h0")
    df = choose_runs[choose_runs["horizon"] > 0].join(h0, on=key)
    df["ratio"] = df["avg_imbalance"] / df["h0"]
    fig, axes = figure(1, 2, width=7.6, height=3.4)
    ax = axes[0, 0]
    settings = df.groupby(["new_requests", "discount"])
    for k, ((nr, d), grp) in enumerate(sorted(settings, key=lambda x: (x[0][0], -x[0][1]))):
        g = grp.groupby("horizon")["ratio"].mean()
        st = line_style(k)
        if nr == "persist":
            st["linestyle"] = ":"
        ax.plot(g.index, g.to_numpy(), label=f"δ={d:g}, {nr}", **st)
    ax.set_xlabel("lookahead horizon H (steps)")
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    ax.set_ylabel("imbalance / BF-IO H=0 (mean)")
    ax.set_title("choose: traces other than the paper's", fontsize=8)
    ax.legend(fontsize=6, ncol=2)
    ax = axes[0, 1]
    d = confirm[confirm["objective_name"] == "default"]
    for k, ((tr, G), grp) in enumerate(d.groupby(["trace", "workers"], sort=True)):
        grp = grp.sort_values("horizon")
        mean = grp["imbalance_ratio_mean"].to_numpy(dtype=float)
        err = np.vstack([mean - grp["imbalance_ratio_ci_lo"].to_numpy(dtype=float),
                         grp["imbalance_ratio_ci_hi"].to_numpy(dtype=float) - mean])
        ax.errorbar(grp["horizon"], mean, yerr=np.where(np.isfinite(err), err, 0.0), capsize=2,
                    label=f"{tr}, G={int(G)}", **line_style(k))
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    ax.set_xlabel("lookahead horizon H (steps)")
    ax.set_ylabel("imbalance paper-literal / default")
    ax.set_title("confirm: paired by seed, 95% CI", fontsize=8)
    ax.legend(fontsize=6)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


__all__ = ["plot_objective_study"]
