"""Online study, production routers (issue 18): p99 end-to-end latency of
every instant-dispatch router, relative to the reference row (BF-IO, central
pool; paired by seed) and absolute, against the interval of the load reports
the router routes on, one column per setting at the load closest to ``load``
(``results/tables/online_routers.csv``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.horizon_sweep import _err
from bfio.figures.style import figure, plain_log_ticks, scale_for, series_style
from bfio.studies.online_summary import policy_label

#: Panel rows: (metric, axis label, unit, log scale); ``vs_reference`` is the
#: router's p99 e2e over the reference's, paired by seed.
PANELS = [("vs_reference", "p99 e2e / reference's", "x", True),
          ("e2e_s_p99", "p99 end-to-end latency", "s", True)]
#: Default load shown for the Poisson settings (replays: the time scale whose load is closest).
DEFAULT_LOAD = 0.95


def figure_loads(summary: pd.DataFrame, load: float = DEFAULT_LOAD) -> dict:
    """setting -> the load of its records closest to ``load`` (the larger one on ties)."""
    out = {}
    for name, sub in summary.groupby("setting", sort=False):
        loads = sorted(set(sub["load"].astype(float)))
        out[name] = min(loads, key=lambda x: (abs(x - load), -x))
    return out


def plot_online_routers(summary: pd.DataFrame, load: float = DEFAULT_LOAD, panels=PANELS):
    """``panels`` against the report interval (categorical axis: the intervals
    present), one line per instant router (a marker only for a router run at
    one interval), the reference row as a horizontal line with its 95% CI band
    (at 1 in the ratio panel)."""
    settings = list(dict.fromkeys(summary["setting"]))
    at = figure_loads(summary, load)
    inst = summary[summary["role"] == "instant"]
    intervals = sorted({int(k) for k in inst["report_interval"]})
    xpos = {k: i for i, k in enumerate(intervals)}
    policies = list(dict.fromkeys(inst["policy"]))
    styles = {p: series_style(i, len(policies)) for i, p in enumerate(policies)}
    fig, axes = figure(len(panels), max(1, len(settings)), width=3.3 * max(1, len(settings)) + 0.4,
                       height=2.5 * len(panels) + 1.1)
    for j, name in enumerate(settings):
        s = summary[(summary["setting"] == name) & (np.isclose(summary["load"].astype(float), at[name]))]
        first = s.iloc[0]
        for i, (m, label, unit, log) in enumerate(panels):
            ax = axes[i, j]
            factor, u = scale_for(s[f"{m}_mean"], unit) if unit.startswith("tokens") else (1.0, unit)
            ref = s[s["role"] == "reference"]
            if not ref.empty:
                mean, yerr = _err(ref, m, factor)
                ax.axhline(mean[0], color="0.0", linewidth=1.6, label=ref["label"].iloc[0])
                ax.axhspan(mean[0] - yerr[0, 0], mean[0] + yerr[1, 0], color="0.85", linewidth=0)
            for p in policies:
                q = s[(s["role"] == "instant") & (s["policy"] == p)].copy()
                if q.empty:
                    continue
                q["_x"] = q["report_interval"].astype(int).map(xpos)
                q = q.sort_values("_x")
                mean, yerr = _err(q, m, factor)
                ax.errorbar(q["_x"], mean, yerr=yerr, capsize=2, markersize=4, linewidth=1.1,
                            linestyle="--" if len(q) > 1 else "none", label=policy_label(p, "instant"),
                            **styles[p])
            if log:
                ax.set_yscale("log")
                plain_log_ticks(ax.yaxis)
            ax.set_xticks(range(len(intervals)), [str(k) if k else "0 (exact)" for k in intervals])
            ax.set_xlim(-0.3, len(intervals) - 0.7)
            ax.set_xlabel("load report every k steps")
            ax.set_ylabel(f"{label} ({u})" if u != "x" else label)
            if i == 0:
                how = ("Poisson" if first["arrival_mode"] == "poisson"
                       else f"timestamps x{float(first['time_scale']):g}")
                ax.set_title(f"{name}: {first['trace']}, G={first['workers']}\n{how}, load {at[name]:.2f}")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    ncol = min(4, max(1, len(labels)))
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=7, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(f"Production routers (instant dispatch) with lagging load reports: mean over {n} seeds, 95% CI "
                 "(bars; gray band: the reference's)\ntop: p99 end-to-end latency over the reference's, paired by "
                 "seed (1 = as fast)", fontsize=9)
    rows = int(np.ceil(len(labels) / ncol))
    fig.tight_layout(rect=(0, min(0.4, (0.15 + 0.17 * rows) / fig.get_figheight()), 1, 0.93))
    return fig


__all__ = ["plot_online_routers", "figure_loads", "PANELS", "DEFAULT_LOAD"]
