"""Objective study figure: the choose stage's imbalance score of every
(discount, new-request model) against H, and the confirm stage's imbalance of
the default and paper-literal against H (``bfio.studies.objective_study``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from bfio.figures.style import figure, series_style

#: Line style of each new-request model on the choose panel (the colour and marker name the discount).
MODEL_LINES = {"predicted": "-", "persist": ":"}


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
    # one colour and marker per discount (colour-blind palette), one line style per
    # new-request model (solid: predicted, dotted with open markers: persist); the
    # legend keys both instead of listing all discount x model pairs
    discounts = sorted(df["discount"].unique(), reverse=True)
    present = set(df["new_requests"])
    models = [m for m in MODEL_LINES if m in present] + sorted(present - set(MODEL_LINES))
    styles = {d: series_style(k, len(discounts)) for k, d in enumerate(discounts)}
    dashes = {m: MODEL_LINES.get(m, "--") for m in models}
    for (nr, d), grp in sorted(df.groupby(["new_requests", "discount"]), key=lambda x: (models.index(x[0][0]),
                                                                                        -x[0][1])):
        g = grp.groupby("horizon")["ratio"].mean()
        st = styles[d]
        ax.plot(g.index, g.to_numpy(), color=st["color"], marker=st["marker"], linestyle=dashes[nr],
                markerfacecolor="white" if nr == "persist" else st["color"], label=f"δ={d:g}, {nr}")
    handles = [Line2D([], [], color=styles[d]["color"], marker=styles[d]["marker"], linestyle="-",
                      label=f"δ={d:g}") for d in discounts]
    handles += [Line2D([], [], color="0.3", linestyle=dashes[m], marker="o",
                       markerfacecolor="white" if m == "persist" else "0.3", label=f"new requests: {m}")
                for m in models]
    ax.set_xlabel("lookahead horizon H (steps)")
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    ax.set_ylabel("imbalance / BF-IO H=0 (mean)")
    ax.set_title("choose: traces other than the paper's", fontsize=8)
    ax.legend(handles=handles, fontsize=6, ncol=2)
    ax = axes[0, 1]
    d = confirm[confirm["objective_name"] == "default"]
    n_confirm = d.groupby(["trace", "workers"]).ngroups  # the palette's strongest colours again (own legend)
    for k, ((tr, G), grp) in enumerate(d.groupby(["trace", "workers"], sort=True)):
        grp = grp.sort_values("horizon")
        mean = grp["imbalance_ratio_mean"].to_numpy(dtype=float)
        err = np.vstack([mean - grp["imbalance_ratio_ci_lo"].to_numpy(dtype=float),
                         grp["imbalance_ratio_ci_hi"].to_numpy(dtype=float) - mean])
        ax.errorbar(grp["horizon"], mean, yerr=np.where(np.isfinite(err), err, 0.0), capsize=2,
                    label=f"{tr}, G={int(G)}", **series_style(k, n_confirm))
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    ax.set_xlabel("lookahead horizon H (steps)")
    ax.set_ylabel("imbalance paper-literal / default")
    ax.set_title("confirm: paired by seed, 95% CI", fontsize=8)
    ax.legend(fontsize=6)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def plot_study_figure(table, choose):
    """The study protocol's call (``Figure(table="objective")`` with the ``choose``
    product): the confirm table and the choose scores, in this module's order."""
    return plot_objective_study(choose, table)


__all__ = ["plot_objective_study", "plot_study_figure"]
