"""Starvation study: p99 and max wait against throughput for every BF-IO
admission rule (one marker per rule, one line per horizon: solid with filled
markers for H = 0, dashed with open markers for the setting's lookahead H) and
FCFS; one column per setting (``results/tables/starvation.csv``). The legend
keys the markers (admission rules) and the lines (horizons, per setting when
they differ); every wait axis labels its ticks as plain numbers of seconds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from matplotlib.lines import Line2D

from bfio.figures.style import SERIES_MARKERS as MARKERS
from bfio.figures.style import figure, line_style, plain_log_ticks, scale_for

#: The reference rows' marker (FCFS), never an admission rule's.
REFERENCE_MARKER = "*"

PANELS = [("wait_s_p99", "p99 wait"), ("wait_s_max", "max wait")]


def _horizon_label(horizons: dict) -> str:
    """``'BF-IO H=40'``, or ``'BF-IO H=40 (longbench_g256), H=20 (burstgpt_g16)'``
    when the settings' k-th horizons differ."""
    values = list(dict.fromkeys(horizons.values()))
    if len(values) == 1:
        return f"BF-IO H={values[0]}"
    return "BF-IO " + ", ".join(f"H={h} ({name})" for name, h in horizons.items())


def plot_starvation(summary: pd.DataFrame):
    settings = list(dict.fromkeys(summary["setting"]))
    admissions = list(dict.fromkeys(summary.loc[summary["admission"] != "-", "admission"]))
    rule_markers = [m for m in MARKERS if m != REFERENCE_MARKER]  # the star is the references'
    marker = {a: rule_markers[k % len(rule_markers)] for k, a in enumerate(admissions)}
    fig, axes = figure(len(PANELS), max(1, len(settings)), width=3.4 * max(1, len(settings)) + 0.4, height=6.2)
    horizons: dict[int, dict] = {}  # k-th horizon of each setting -> {setting: H}
    references: dict[str, Line2D] = {}
    for j, name in enumerate(settings):
        s = summary[summary["setting"] == name]
        first = s.iloc[0]
        xf, xunit = scale_for(s["throughput_mean"], "tokens/s")
        for i, (m, label) in enumerate(PANELS):
            ax = axes[i, j]
            for k, (h, grp) in enumerate(s[s["admission"] != "-"].groupby("horizon", sort=True)):
                st = line_style(k)
                horizons.setdefault(k, {})[name] = int(h)
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
                ref = r["row"].upper() if r["row"] == "fcfs" else r["row"]
                references[ref], = ax.plot([r["throughput_mean"] / xf], [r[f"{m}_mean"]], marker=REFERENCE_MARKER, color="0.5",
                                           markersize=9, linestyle="none", label=ref)
            ax.set_yscale("log")
            ax.set_xlabel(f"throughput ({xunit})")
            ax.set_ylabel(f"{label} (s)")
            if i == 0:
                ax.set_title(f"{name}: {first['trace']}, G={first['workers']}")
    # one tick format per axis (after every point is drawn: the view decides it)
    for ax in axes.flat:
        plain_log_ticks(ax.yaxis)
    # legend: the lines (horizons: line style and filled / open markers), the
    # references, then the markers (admission rules), each saying what it encodes
    handles, labels = [], []
    for k in sorted(horizons):
        st = line_style(k)
        handles.append(Line2D([], [], color=st["color"], linestyle=st["linestyle"], linewidth=0.8))
        labels.append(f"{_horizon_label(horizons[k])} ({'filled' if k == 0 else 'open'} markers)")
    for ref, line in references.items():
        handles.append(line)
        labels.append(ref)
    handles += [Line2D([], [], marker=marker[a], color="0.2", linestyle="none") for a in admissions]
    labels += [f"marker: admission {a}" for a in admissions]
    ncol = 3
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=7)
    rows = -(-len(handles) // ncol)
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    fig.suptitle(f"Wait vs throughput by admission rule: mean over {n} seeds, 95% CI bars", fontsize=9)
    fig.tight_layout(rect=(0, min(0.4, (0.1 + 0.16 * rows) / 6.2), 1, 0.97))
    return fig


__all__ = ["plot_starvation"]
