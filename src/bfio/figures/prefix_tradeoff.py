"""Prefix-cache study: cache hit rate against p99 TTFT, and against throughput,
one point per router (mean over seeds; bars: :func:`bfio.figures.style.interval`),
one pair of panels (TTFT above throughput) per setting, at most ``COLUMNS``
settings a row (``results/tables/prefix_cache.csv``). Routers in the registry's
colours and markers (:func:`bfio.figures.style.router`); each panel pair is
titled with its workload in words (:func:`workload_title`, from the study's
settings when the workflow passes them)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import SERIES, figure, interval, interval_note, router, setting_title, trace_label

PANELS = [("ttft_s_p99", "p99 TTFT (s)"), ("throughput_run", "throughput (tokens/s)")]
#: settings per row of panel pairs
COLUMNS = 5


def router_series(row: str):
    """A router row of the study; ``bfio`` is BF-IO with its prefix-cache term."""
    return SERIES["bfio"]["prefix"] if row == "bfio" else router(row)


def workload_title(name: str, setting: dict | None) -> str:
    """The setting ``name`` in words: its workload, trace and G (``setting``: its
    config entry; without one, the name with spaces)."""
    if not setting:
        return str(name).replace("_", " ")
    tr = trace_label(setting.get("trace", ""))
    G = setting.get("workers")
    closed = ", closed loop" if setting.get("closed_loop") else ""
    kind = setting.get("workload")
    if kind == "grpo":
        text = (f"GRPO: {setting.get('groups')} groups of {setting.get('group_size')}, {setting.get('turns')} turns"
                f" ({tr})")
        if setting.get("stream_gap_s"):
            text += f", streams {setting['stream_gap_s']:g} s apart"
    elif kind == "sessions":
        text = f"{setting.get('sessions')} chat sessions, {setting.get('turns')} turns ({tr})"
    else:
        ts = setting.get("time_scale")
        text = f"{tr} replay" + (f", time x{float(ts):g}" if ts is not None else "")
        if setting.get("requests"):
            text += f", N = {int(setting['requests']):,}"
    return f"{text}{closed},\n{setting_title(workers=G)}"


def plot_prefix_tradeoff(summary: pd.DataFrame, settings: dict | None = None):
    """``settings``: the study's settings by name (titles in words)."""
    names = list(dict.fromkeys(summary["setting"]))
    routers = list(dict.fromkeys(summary["row"]))
    cols = max(1, min(COLUMNS, len(names)))
    bands = max(1, -(-len(names) // cols))
    fig, axes = figure(len(PANELS) * bands, cols, width=3.5 * cols + 0.6, height=2.8 * len(PANELS) * bands + 1.4)
    for ax in axes.flat:
        ax.set_visible(False)
    kinds = []
    for j, setting in enumerate(names):
        s = summary[summary["setting"] == setting]
        band, col = divmod(j, cols)
        for i, (m, label) in enumerate(PANELS):
            ax = axes[len(PANELS) * band + i, col]
            ax.set_visible(True)
            for router_row in routers:
                r = s[s["row"] == router_row]
                if r.empty:
                    continue
                x, xerr, kx = interval(r, "cache_hit_rate", 0.01)
                xerr[1] = np.minimum(xerr[1], 100 - x)  # a rate: at most 100 %
                y, yerr, ky = interval(r, m)
                kinds += [kx, ky]
                st = router_series(router_row).style()
                bold = router_row == "bfio"
                st["label"] = st["label"] if (i, j) == (0, 0) else "_" + st["label"]
                ax.errorbar(x, y, xerr=xerr, yerr=yerr, markersize=8 if bold else 5,
                            markeredgecolor="black" if bold else None, **{**st, "linestyle": "none"})
            if i == len(PANELS) - 1:
                ax.set_xlabel("cache hit rate (% of prompt tokens)")
            ax.set_ylabel(label)
            if i == 0:
                ax.set_title(workload_title(setting, (settings or {}).get(setting)), fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), bbox_to_anchor=(0.5, 0.0))
    n = int(summary["n_seeds"].max()) if "n_seeds" in summary and len(summary) else 0
    fig.suptitle(f"Prefix caches: cache hit rate against p99 TTFT and throughput per router\nmean over {n} seeds, "
                 f"{interval_note(kinds)}", fontsize=9)
    rows = -(-len(labels) // min(4, max(1, len(labels))))
    fig.tight_layout(rect=(0, (0.15 + 0.2 * rows) / fig.get_figheight(), 1, 1))
    return fig


__all__ = ["plot_prefix_tradeoff", "workload_title", "router_series"]
