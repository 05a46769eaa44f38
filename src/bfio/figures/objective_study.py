"""Objective study figure: the choose stage's imbalance score of every
(discount, new-request model) against H, and the confirm stage's imbalance of
the default and paper-literal against H (``bfio.studies.objective_study``)."""

from __future__ import annotations

import pandas as pd

from bfio.figures.style import (figure, interval, interval_note, level_style, series, setting_title, trace_label)

#: Marker fill of each new-request model (the colour and marker name the discount).
MODEL_FILL = {"predicted": True, "persist": False}


def plot_objective_study(choose_runs: pd.DataFrame, confirm: pd.DataFrame, title: str = ""):
    """Left and middle (choose stage; one panel per new-request model, so no
    panel shows more than one line per discount): mean imbalance relative to
    BF-IO H = 0 (same trace and seed) against H, one colour and marker per
    discount. Right (confirm stage): per (trace, G) the paired ratio
    paper-literal / default imbalance against H (> 1: the default balances
    better; bars: :func:`bfio.figures.style.interval`). The title names the
    setting: traces, G, B and seeds of each stage."""
    key = ["trace", "workers", "seed"]
    h0 = choose_runs[choose_runs["horizon"] == 0].groupby(key)["avg_imbalance"].mean().rename("h0")
    df = choose_runs[choose_runs["horizon"] > 0].join(h0, on=key)
    df["ratio"] = df["avg_imbalance"] / df["h0"]
    present = set(df["new_requests"])
    models = [m for m in MODEL_FILL if m in present] + sorted(present - set(MODEL_FILL))
    fig, axes = figure(1, len(models) + 1, width=3.3 * (len(models) + 1), height=3.9)
    discounts = sorted(df["discount"].unique(), reverse=True)
    styles = {d: level_style(k) for k, d in enumerate(discounts)}
    for ax, nr in zip(axes[0], models):
        for d in discounts:
            g = df[(df["new_requests"] == nr) & (df["discount"] == d)].groupby("horizon")["ratio"].mean()
            if g.empty:
                continue
            st = {**styles[d], "linestyle": "-" if MODEL_FILL.get(nr, True) else ":"}
            ax.plot(g.index, g.to_numpy(), label=f"δ={d:g}",
                    markerfacecolor=st["color"] if MODEL_FILL.get(nr, True) else "white", **st)
        ax.axhline(1.0, color="0.5", linewidth=0.8)
        ax.set_xlabel("lookahead horizon H (steps)")
        ax.set_ylabel("imbalance / BF-IO H=0's (mean ratio)")
        ax.set_title(f"choose, new requests {nr}", fontsize=8)
        ax.legend(fontsize=6, ncol=2, title="discount", title_fontsize=6)
    ax = axes[0, -1]
    d = confirm[confirm["objective_name"] == "default"]
    kinds = []
    gs = sorted(d["workers"].unique())
    for (tr, G), grp in d.groupby(["trace", "workers"], sort=True):
        grp = grp.sort_values("horizon")
        mean, err, kind = interval(grp, "imbalance_ratio")
        kinds.append(kind)
        lv = level_style(gs.index(G))  # the trace's colour, G's marker and line
        st = {**series("trace", tr).style(), "marker": lv["marker"], "linestyle": lv["linestyle"]}
        st["label"] = f"{trace_label(tr)}, G={int(G)}"
        ax.errorbar(grp["horizon"], mean, yerr=err, capsize=2, **st)
    ax.axhline(1.0, color="0.5", linewidth=0.8)
    ax.set_xlabel("lookahead horizon H (steps)")
    ax.set_ylabel("imbalance paper-literal / default (ratio)")
    ax.set_title("confirm, paired by seed", fontsize=8)
    ax.legend(fontsize=6)
    traces = ", ".join(trace_label(t) for t in sorted(choose_runs["trace"].unique()))
    choose_where = setting_title(workers=sorted(choose_runs["workers"].unique()) if "workers" in choose_runs else None,
                                 slots=choose_runs["slots"].iloc[0] if "slots" in choose_runs and len(choose_runs)
                                 else None, seeds=choose_runs["seed"].nunique() if len(choose_runs) else None)
    confirm_where = setting_title(workers=sorted(d["workers"].unique()) if len(d) else None,
                                  seeds=int(d["n_seeds"].max()) if "n_seeds" in d and len(d) else None,
                                  extra="traces: " + ", ".join(trace_label(t) for t in sorted(d["trace"].unique())))
    fig.suptitle((title + "\n" if title else "") + f"BF-IO's objective. Choose: {traces}; {choose_where}\n"
                 f"confirm: {confirm_where}; {interval_note(kinds)}", fontsize=8)
    fig.tight_layout()
    return fig


def plot_study_figure(table, choose):
    """The study protocol's call (``Figure(table="objective")`` with the ``choose``
    product): the confirm table and the choose scores, in this module's order."""
    return plot_objective_study(choose, table)


__all__ = ["plot_objective_study", "plot_study_figure"]
