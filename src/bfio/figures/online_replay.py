"""Online study, trace replay: p50 and p99 end-to-end latency and p99 queue
wait per policy, one panel per (replay setting, time scale)
(``results/tables/online.csv``); exact-state rows only (``report_interval``
0; the others are in :mod:`bfio.figures.online_routers`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import HATCHES, figure, interval, interval_note, level_style, router, setting_of

BARS = [("e2e_s_p50", "e2e p50"), ("e2e_s_p99", "e2e p99"), ("queue_wait_s_p99", "queue wait p99")]


def plot_online_replay(summary: pd.DataFrame, bars=BARS):
    """One panel per (replay setting, time scale): a group of bars per policy
    (labels from the registry, :func:`bfio.figures.style.router`), one bar per
    metric of ``bars`` in the palette's colours and hatches; bars:
    :func:`bfio.figures.style.interval`; the panel's title names the setting."""
    sub = summary[summary["arrival_mode"] == "trace"]
    if "report_interval" in sub:  # routers on lagging load reports: figures/online_routers
        sub = sub[sub["report_interval"].fillna(0) == 0]
    panels = list(dict.fromkeys(zip(sub["setting"], sub["time_scale"])))
    fig, axes = figure(len(panels) or 1, 1, width=7.0, height=3.9 * max(1, len(panels)))
    kinds = []
    for ax, (name, ts) in zip(axes[:, 0], panels):
        s = sub[(sub["setting"] == name) & (sub["time_scale"] == ts)]
        x = np.arange(len(s))
        w = 0.8 / len(bars)
        for k, (m, label) in enumerate(bars):
            mean, yerr, kind = interval(s, m)
            kinds.append(kind)
            ax.bar(x + (k - (len(bars) - 1) / 2) * w, mean, w, yerr=yerr, capsize=2, label=label,
                   color=level_style(k)["color"], hatch=HATCHES[k % len(HATCHES)], edgecolor="0.1", linewidth=0.5)
        labels = [router(r["row"], r["dispatch"], r.get("policy"), r.get("horizon")).label for r in s.to_dict("records")]
        ax.set_xticks(x, labels, rotation=90, fontsize=7)  # upright: labels a bar's width apart never collide
        ax.set_yscale("log")
        ax.set_ylabel("latency (s)")
        first = s.iloc[0]
        ax.set_title(f"{setting_of(s)}\ntrace timestamps x{ts:g} (offered load {first['load']:.2f} of saturation); "
                     f"{interval_note(kinds)}", fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(bars), fontsize=7)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.25 / fig.get_figheight()))
    return fig


__all__ = ["plot_online_replay", "BARS"]
