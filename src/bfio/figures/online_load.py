"""Online study: p99 end-to-end latency and whole-run throughput against the
offered load, one column per Poisson setting (``results/tables/online.csv``).
BF-IO's rows and the paper's baselines (FCFS, JSQ) are named lines in the
registry's colours (:func:`bfio.figures.style.router`); the production routers
are one grey band (the range of their means) when naming them all would put
more than :data:`~bfio.figures.style.MAX_SERIES` series in a panel (each is
drawn in ``figures/online_routers``). Fewer than three loads: points, not a
load curve. Rows routing on lagging load reports (``report_interval > 0``)
are left to :mod:`bfio.figures.online_routers`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import (MAX_SERIES, figure, interval, interval_note, others_band, plain_log_ticks, router,
                                scale_for, setting_of)

#: Panel rows: (metric, axis label, unit, log scale).
PANELS = [("e2e_s_p99", "p99 end-to-end latency", "s", True), ("throughput_run", "whole-run throughput",
                                                                 "tokens/s", False)]
#: A load axis needs this many loads to be drawn as a curve (fewer: points).
MIN_LOADS = 3
#: Offset between the points of two series at one load (no load curve drawn).
DODGE = 0.006
#: The load axis's unit by ``online.load_basis`` (issue 44: the model's capacity).
LOAD_BASIS_TEXT = {"capacity": "the model's capacity", "saturation": "saturation throughput"}
#: Rows named beside BF-IO's: the paper's baselines.
BASELINES = ("fcfs", "jsq_tokens", "jsq_requests")


def _label(records: dict, key, predictors: dict) -> str:
    r = records[key]
    return router(r["row"], r["dispatch"], r.get("policy"), r.get("horizon"), predictor=predictors.get(r["row"])).label


def split_named(groups, policies: dict, limit: int = MAX_SERIES, rows=None):
    """``(named, others)``: the groups drawn as lines and the rest, drawn as one
    band. ``rows`` (the study's ``figure_rows``): the groups with one of these
    rows are named, in their order. Else all are named when they fit in
    ``limit`` series, or BF-IO's first, then the baselines, while ``limit - 1``
    fit (the band is the last series)."""
    if rows is not None:
        order = {r: i for i, r in enumerate(rows)}
        named = sorted((g for g in groups if any(k[0] in order for k in g)),
                       key=lambda g: min(order.get(k[0], len(order)) for k in g))
        return named, [g for g in groups if g not in named]
    if len(groups) <= limit:
        return list(groups), []
    first = [g for g in groups if str(policies.get(g[0], "")).startswith("bfio")]
    first += [g for g in groups if g[0][0] in BASELINES and g not in first]
    named = first[:limit - 1]
    return named, [g for g in groups if g not in named]


def coincident_groups(sub: pd.DataFrame, keys, metrics, rtol: float = 1e-9) -> list[list]:
    """``keys`` grouped by identical results: two (row, dispatch) series fall in
    one group when their mean of every metric in ``metrics`` agrees (relative
    tolerance ``rtol``) at every (setting, load). The first key of a group is
    the one drawn; the others would be hidden under it."""
    def signature(key):
        p = sub[(sub["row"] == key[0]) & (sub["dispatch"] == key[1])].sort_values(["setting", "load"])
        cols = [f"{m}_mean" for m in metrics if f"{m}_mean" in p]
        return list(zip(p["setting"], p["load"])), p[cols].to_numpy(dtype=float)

    groups: list[list] = []
    sigs = []
    for key in keys:
        where, values = signature(key)
        for g, (w, v) in zip(groups, sigs):
            if w == where and v.shape == values.shape and np.allclose(v, values, rtol=rtol, atol=0.0, equal_nan=True):
                g.append(key)
                break
        else:
            groups.append([key])
            sigs.append((where, values))
    return groups


def plot_online_load(summary: pd.DataFrame, panels=PANELS, rows=None, predictors=None):
    """Rows of ``panels`` against ``load`` for every Poisson setting of the
    online table: mean over seeds (bars: :func:`bfio.figures.style.interval`).
    Policies with identical results share one line, labelled ``A = B``; the
    rows not named (:func:`split_named`; ``rows``: the study's ``figure_rows``)
    are a grey band. ``predictors``: row -> the predictor its variant names
    (said in its label)."""
    predictors = dict(predictors or {})
    sub = summary[summary["arrival_mode"] == "poisson"]
    # what a load is a fraction of (online.load_basis; tables before issue 44 carry none: saturation)
    basis = str(sub["load_basis"].dropna().iloc[0]) if "load_basis" in sub and sub["load_basis"].notna().any() \
        else "saturation"
    if "report_interval" in sub:  # routers on lagging load reports: figures/online_routers
        sub = sub[sub["report_interval"].fillna(0) == 0]
    settings = list(dict.fromkeys(sub["setting"]))
    fig, axes = figure(len(panels), max(1, len(settings)), width=3.4 * max(1, len(settings)) + 0.4,
                       height=2.6 * len(panels) + 1.3)
    keys = list(dict.fromkeys(zip(sub["row"], sub["dispatch"])))
    groups = coincident_groups(sub, keys, [m for m, *_ in panels])
    policies = dict(zip(zip(sub["row"], sub["dispatch"]), sub["policy"] if "policy" in sub else sub["row"]))
    named, others = split_named(groups, policies, rows=rows)
    records = {k: r for r in sub.to_dict("records") for k in [(r["row"], r["dispatch"])]}
    labels = {g[0]: " = ".join(_label(records, k, predictors) for k in g) for g in groups}
    kinds, few_loads = [], False
    for j, name in enumerate(settings):
        s = sub[sub["setting"] == name]
        line = s["load"].nunique() >= MIN_LOADS
        few_loads |= not line
        for i, (m, label, unit, log) in enumerate(panels):
            ax = axes[i, j]
            factor, u = scale_for(s[f"{m}_mean"], unit) if unit.startswith("tokens") else (1.0, unit)
            for k, g in enumerate(named):
                key = g[0]
                p = s[(s["row"] == key[0]) & (s["dispatch"] == key[1])].sort_values("load")
                # points side by side (dodged) where no load curve is drawn
                x = p["load"] if line else p["load"] + (k - (len(named) - 1) / 2) * DODGE
                if p.empty or f"{m}_mean" not in p:
                    continue
                mean, yerr, kind = interval(p, m, factor)
                kinds.append(kind)
                st = router(key[0], key[1], policies.get(key), records[key].get("horizon"),
                            predictor=predictors.get(key[0])).style()
                st.update(label=labels[key], linestyle=st["linestyle"] if line else "none")
                bold = str(policies.get(key, "")).startswith("bfio")
                ax.errorbar(x, mean, yerr=yerr, capsize=2, markersize=5 if bold else 4,
                            linewidth=2.0 if bold else 1.0, zorder=3 if bold else 2, **st)
            rest = []
            for g in others:
                p = s[(s["row"] == g[0][0]) & (s["dispatch"] == g[0][1])].sort_values("load")
                if len(p) and f"{m}_mean" in p:
                    rest.append((p["load"].to_numpy(), p[f"{m}_mean"].to_numpy()))
            instant = all(k[1] == "instant" for g in others for k in g)
            others_band(ax, rest, factor, label=f"{len(others)} other {'routers (instant dispatch)' if instant else 'rows'}"
                                                ": range of their means")
            if log:
                ax.set_yscale("log")
                plain_log_ticks(ax.yaxis)
            if not line:  # ticks at the loads run only: the dodge is no load
                ax.set_xticks(sorted(s["load"].unique()))
                ax.set_xlim(s["load"].min() - len(named) * DODGE, s["load"].max() + len(named) * DODGE)
            ax.set_xlabel(f"offered load (x {LOAD_BASIS_TEXT.get(basis, LOAD_BASIS_TEXT['saturation'])})")
            ax.set_ylabel(f"{label} ({u})")
            if i == 0:
                ax.set_title(setting_of(s.drop(columns="n_seeds"), wrap=True), fontsize=8)
    handles, legend_labels = axes[0, 0].get_legend_handles_labels()
    n = int(sub["n_seeds"].max()) if len(sub) else 0
    ncol = min(3, max(1, len(legend_labels)))
    fig.legend(handles, legend_labels, loc="lower center", ncol=ncol, fontsize=7, bbox_to_anchor=(0.5, 0.0))
    merged = any(len(g) > 1 for g in groups)
    notes = [f"mean over {n} seeds, {interval_note(kinds)}; thick: BF-IO"]
    if merged:
        notes.append("'A = B': identical results, drawn as one line")
    if few_loads:
        notes.append(f"fewer than {MIN_LOADS} loads: points side by side, not a load curve")
    fig.suptitle("Poisson arrivals: latency and throughput against the offered load\n" + "\n".join(notes), fontsize=9)
    rows = int(np.ceil(len(legend_labels) / ncol))
    fig.tight_layout(rect=(0, min(0.4, (0.15 + 0.17 * rows) / fig.get_figheight()), 1, 1))
    return fig


__all__ = ["plot_online_load", "split_named", "coincident_groups", "PANELS", "MIN_LOADS"]
