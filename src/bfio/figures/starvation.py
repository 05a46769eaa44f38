"""Starvation study: p99 and max wait against throughput for every BF-IO
admission rule (one marker per rule, one line per horizon) and FCFS; one
column per setting (``results/tables/starvation.csv``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import SERIES_MARKERS as MARKERS
from bfio.figures.style import figure, line_style, scale_for

PANELS = [("wait_s_p99", "p99 wait"), ("wait_s_max", "max wait")]


def plot_starvation(summary: pd.DataFrame):
    settings = list(dict.fromkeys(summary["setting"]))
    admissions = list(dict.fromkeys(summary.loc[summary["admission"] != "-", "admission"]))
    marker = {a: MARKERS[k % len(MARKERS)] for k, a in enumerate(admissions)}
    fig, axes = figure(len(PANELS), max(1, len(settings)), width=3.4 * max(1, len(settings)) + 0.4, height=5.8)
    for j, name in enumerate(settings):
        s = summary[summary["setting"] == name]
        first = s.iloc[0]
        xf, xunit = scale_for(s["throughput_mean"], "tokens/s")
        for i, (m, label) in enumerate(PANELS):
            ax = axes[i, j]
            for k, (h, grp) in enumerate(s[s["admission"] != "-"].groupby("horizon", sort=True)):
                st = line_style(k)
                grp = grp.sort_values("throughput_mean")
                ax.plot(grp["throughput_mean"] / xf, grp[f"{m}_mean"], color=st["color"], linestyle=st["linestyle"],
                        linewidth=0.8, label=f"BF-IO H={int(h)}")
                for r in grp.to_dict("records"):
                    xerr = np.array([[r["throughput_mean"] - r["throughput_ci_lo"]],
                                     [r["throughput_ci_hi"] - r["throughput_mean"]]]) / xf
                    yerr = np.array([[r[f"{m}_mean"] - r[f"{m}_ci_lo"]], [r[f"{m}_ci_hi"] - r[f"{m}_mean"]]])
                    ax.errorbar([r["throughput_mean"] / xf], [r[f"{m}_mean"]], xerr=np.nan_to_num(xerr),
                                yerr=np.nan_to_num(yerr), marker=marker[r["admission"]], color=st["color"],
                                markerfacecolor="white" if k else st["color"], linestyle="none", capsize=1.5,
                                markersize=5)
            for r in s[s["admission"] == "-"].to_dict("records"):
                ax.plot([r["throughput_mean"] / xf], [r[f"{m}_mean"]], marker="*", color="0.5", markersize=9,
                        linestyle="none", label=r["row"].upper() if r["row"] == "fcfs" else r["row"])
            ax.set_yscale("log")
            ax.set_xlabel(f"throughput ({xunit})")
            ax.set_ylabel(f"{label} (s)")
            if i == 0:
                ax.set_title(f"{name}: {first['trace']}, G={first['workers']}")
    # legend: horizons / references from the first panel, then admission markers
    handles, labels = axes[0, 0].get_legend_handles_labels()
    from matplotlib.lines import Line2D

    handles += [Line2D([], [], marker=marker[a], color="0.2", linestyle="none") for a in admissions]
    labels += [f"admission {a}" for a in admissions]
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=7)
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    fig.suptitle(f"Wait vs throughput by admission rule: mean over {n} seeds, 95% CI bars", fontsize=9)
    fig.tight_layout(rect=(0, 0.12, 1, 0.97))
    return fig


__all__ = ["plot_starvation"]
