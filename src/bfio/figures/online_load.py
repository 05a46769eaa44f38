"""Online study: p99 end-to-end latency and whole-run throughput against the
offered load, one line per policy (central pool vs instant dispatch), one
column per Poisson setting (``results/tables/online.csv``). Rows routing on
lagging load reports (``report_interval > 0``) are left to
:mod:`bfio.figures.online_routers`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.horizon_sweep import _err
from bfio.figures.style import figure, plain_log_ticks, scale_for, series_style
from bfio.studies.online_summary import record_label

#: Panel rows: (metric, axis label, unit, log scale).
PANELS = [("e2e_s_p99", "p99 end-to-end latency", "s", True), ("throughput_run", "whole-run throughput",
                                                                 "tokens/s", False)]


def policy_styles(keys, highlight=()) -> dict:
    """(row, dispatch) -> matplotlib kwargs: a colour of the colour-blind palette
    and a marker per policy (:func:`bfio.figures.style.series_style`), solid
    lines for the central pool and dashed for instant dispatch. Keys in
    ``highlight`` (BF-IO's rows) take the palette's first colours and a thick line
    drawn on top; the others a thin one."""
    keys = list(keys)
    order = [k for k in keys if k in highlight] + [k for k in keys if k not in highlight]
    return {key: {**series_style(i, len(order)), "linestyle": "-" if key[1] == "central" else "--",
                  "linewidth": 2.2 if key in highlight else 1.0, "zorder": 3 if key in highlight else 2}
            for i, key in enumerate(order)}


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


def plot_online_load(summary: pd.DataFrame, panels=PANELS):
    """Rows of ``panels`` against ``load`` for every Poisson setting of the
    online table: mean over seeds with 95% CI bars. Policies with identical
    results share one line, labelled ``A = B``."""
    sub = summary[summary["arrival_mode"] == "poisson"]
    if "report_interval" in sub:  # routers on lagging load reports: figures/online_routers
        sub = sub[sub["report_interval"].fillna(0) == 0]
    settings = list(dict.fromkeys(sub["setting"]))
    fig, axes = figure(len(panels), max(1, len(settings)), width=3.4 * max(1, len(settings)) + 0.4,
                       height=2.6 * len(panels) + 0.9)
    keys = list(dict.fromkeys(zip(sub["row"], sub["dispatch"])))
    groups = coincident_groups(sub, keys, [m for m, *_ in panels])
    policies = dict(zip(zip(sub["row"], sub["dispatch"]), sub["policy"] if "policy" in sub else sub["row"]))
    styles = policy_styles([g[0] for g in groups],
                           highlight={g[0] for g in groups if str(policies.get(g[0], "")).startswith("bfio")})
    records = {k: r for r in sub.to_dict("records") for k in [(r["row"], r["dispatch"])]}
    labels = {g[0]: " = ".join(record_label(records[k]) for k in g) for g in groups}
    for j, name in enumerate(settings):
        s = sub[sub["setting"] == name]
        first = s.iloc[0]
        for i, (m, label, unit, log) in enumerate(panels):
            ax = axes[i, j]
            factor, u = scale_for(s[f"{m}_mean"], unit) if unit.startswith("tokens") else (1.0, unit)
            for g in groups:
                key = g[0]
                p = s[(s["row"] == key[0]) & (s["dispatch"] == key[1])].sort_values("load")
                if p.empty or f"{m}_mean" not in p:
                    continue
                mean, yerr = _err(p, m, factor)
                ax.errorbar(p["load"], mean, yerr=yerr, capsize=2, markersize=4, label=labels[key], **styles[key])
            if log:
                ax.set_yscale("log")
                plain_log_ticks(ax.yaxis)
            ax.set_xlabel("offered load (x saturation throughput)")
            ax.set_ylabel(f"{label} ({u})")
            if i == 0:
                ax.set_title(f"{name}: {first['trace']}, G={first['workers']}")
    handles, legend_labels = axes[0, 0].get_legend_handles_labels()
    n = int(sub["n_seeds"].max()) if len(sub) else 0
    ncol = min(3, max(1, len(legend_labels)))
    fig.legend(handles, legend_labels, loc="lower center", ncol=ncol, fontsize=7, bbox_to_anchor=(0.5, 0.0))
    merged = any(len(g) > 1 for g in groups)
    fig.suptitle(f"Poisson arrivals: mean over {n} seeds, 95% CI bars (solid: central pool, dashed: instant "
                 "dispatch; thick: BF-IO)" + ("\n'A = B': identical results, drawn as one line" if merged else ""), fontsize=9)
    rows = int(np.ceil(len(legend_labels) / ncol))
    fig.tight_layout(rect=(0, min(0.4, (0.15 + 0.17 * rows) / fig.get_figheight()), 1, 0.93 if merged else 0.97))
    return fig


__all__ = ["plot_online_load", "policy_styles", "coincident_groups", "PANELS"]
