"""Online study: p99 end-to-end latency and whole-run throughput against the
offered load, one line per policy (central pool vs instant dispatch), one
column per Poisson setting (``results/tables/online.csv``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.horizon_sweep import _err
from bfio.figures.style import figure, scale_for

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p"]
#: Panel rows: (metric, axis label, unit, log scale).
PANELS = [("e2e_s_p99", "p99 end-to-end latency", "s", True), ("throughput_run", "throughput (whole run)",
                                                                 "tokens/s", False)]


def policy_styles(keys) -> dict:
    """(row, dispatch) -> matplotlib kwargs: a marker per policy, solid lines for
    the central pool and dashed for instant dispatch (readable in grayscale)."""
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    out = {}
    for i, (row, dispatch) in enumerate(keys):
        out[(row, dispatch)] = {"marker": MARKERS[i % len(MARKERS)], "color": cmap(i % 10),
                                "linestyle": "-" if dispatch == "central" else "--"}
    return out


def plot_online_load(summary: pd.DataFrame, panels=PANELS):
    """Rows of ``panels`` against ``load`` for every Poisson setting of the
    online table: mean over seeds with 95% CI bars."""
    from bfio.studies.summaries import policy_label

    sub = summary[summary["arrival_mode"] == "poisson"]
    settings = list(dict.fromkeys(sub["setting"]))
    fig, axes = figure(len(panels), max(1, len(settings)), width=3.4 * max(1, len(settings)) + 0.4,
                       height=2.6 * len(panels) + 0.9)
    keys = list(dict.fromkeys(zip(sub["row"], sub["dispatch"])))
    styles = policy_styles(keys)
    for j, name in enumerate(settings):
        s = sub[sub["setting"] == name]
        first = s.iloc[0]
        for i, (m, label, unit, log) in enumerate(panels):
            ax = axes[i, j]
            factor, u = scale_for(s[f"{m}_mean"], unit) if unit.startswith("tokens") else (1.0, unit)
            for key in keys:
                p = s[(s["row"] == key[0]) & (s["dispatch"] == key[1])].sort_values("load")
                if p.empty or f"{m}_mean" not in p:
                    continue
                mean, yerr = _err(p, m, factor)
                ax.errorbar(p["load"], mean, yerr=yerr, capsize=2, markersize=4, linewidth=1.1,
                            label=policy_label(*key), **styles[key])
            if log:
                ax.set_yscale("log")
            ax.set_xlabel("offered load (x saturation throughput)")
            ax.set_ylabel(f"{label} ({u})")
            if i == 0:
                ax.set_title(f"{name}: {first['trace']}, G={first['workers']}")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    n = int(sub["n_seeds"].max()) if len(sub) else 0
    fig.legend(handles, labels, loc="lower center", ncol=min(5, max(1, len(labels))), fontsize=7,
               bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(f"Poisson arrivals: mean over {n} seeds, 95% CI bars (solid: central pool, dashed: instant "
                 "dispatch)", fontsize=9)
    fig.tight_layout(rect=(0, 0.06 + 0.02 * int(np.ceil(len(labels) / 5)), 1, 0.97))
    return fig


__all__ = ["plot_online_load", "policy_styles", "PANELS"]
