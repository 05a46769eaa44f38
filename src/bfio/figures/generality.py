"""Generality across traces (study beyond the paper, ``docs/generality.md``):
BF-IO's imbalance ratio, throughput gain and energy-per-token saving over
FCFS for every trace, arrival case and cluster size G, with 95% intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import figure, line_style
from bfio.run_keys import parse_bfio_row

PANELS = (("imb_ratio", "imbalance FCFS / BF-IO\n(log; >1: BF-IO better)", True),
          ("thr_gain_pct", "throughput gain (%)", False),
          ("energy_saving_pct", "energy/token saving (%)", False))


def _short_case(case: str) -> str:
    if case.startswith("replay_x"):
        s = case[len("replay_x"):]
        return "native" if float(s) == 1 else f"x{s}"
    if case.startswith("replay_load"):
        return f"load {case[len('replay_load'):]}"
    return case


def plot_generality(table: pd.DataFrame, target: str = "bfio_h40", title: str = ""):
    """Three rows of panels (imbalance ratio, throughput gain, energy saving of
    ``target`` over the baseline); left: backlog per trace, right: trace replay
    per trace and case. One marker/line style per G, 95% interval bars."""
    table = table.copy()
    backlog = table[table["case"] == "backlog"]
    replay = table[table["case"] != "backlog"]
    groups = [("backlog (saturated)", backlog, lambda r: r["trace"])]
    if len(replay):
        groups.append(("trace replay", replay, lambda r: f"{r['trace']}\n{_short_case(r['case'])}"))
    widths = [max(1, g[1][["trace", "case"]].drop_duplicates().shape[0]) for g in groups]
    fig, axes = figure(3, len(groups), width=min(11.0, 2.2 + 0.55 * sum(widths)), height=6.6,
                       gridspec_kw={"width_ratios": widths}, sharey="row")
    workers = sorted(table["workers"].unique())
    for j, (label, sub, xlabel) in enumerate(groups):
        keys = list(dict.fromkeys(xlabel(r) for r in sub.to_dict("records")))
        x_of = {k: i for i, k in enumerate(keys)}
        for i, (prefix, ylabel, log) in enumerate(PANELS):
            ax = axes[i][j]
            col = f"{prefix}_{target}"
            for w_i, g in enumerate(workers):
                d = sub[sub["workers"] == g]
                if d.empty or col not in d:
                    continue
                xs = np.array([x_of[xlabel(r)] for r in d.to_dict("records")], dtype=float)
                xs += (w_i - (len(workers) - 1) / 2) * 0.22
                m = d[col].to_numpy(dtype=float)
                lo = d[f"{col}_lo"].to_numpy(dtype=float)
                hi = d[f"{col}_hi"].to_numpy(dtype=float)
                yerr = np.vstack([np.where(np.isfinite(lo), m - lo, 0), np.where(np.isfinite(hi), hi - m, 0)])
                st = line_style(w_i)
                ax.errorbar(xs, m, yerr=yerr, fmt=st["marker"], color=st["color"], capsize=2, markersize=4,
                            label=f"G={g}")
            ax.axhline(1.0 if log else 0.0, color="0.3", linewidth=0.8, linestyle="--")
            if log:
                ax.set_yscale("log")
            ax.set_xticks(range(len(keys)))
            ax.set_xticklabels(keys if i == len(PANELS) - 1 else [], rotation=60, ha="right", fontsize=7)
            ax.set_xlim(-0.6, len(keys) - 0.4)
            if j == 0:
                ax.set_ylabel(ylabel)
            if i == 0:
                ax.set_title(label)
    axes[0][0].legend(loc="best")
    n = int(table["n_seeds"].max()) if "n_seeds" in table else 0
    parsed = parse_bfio_row(target)
    h = target if parsed is None else f"{parsed[0]}" + (", paper-literal" if parsed[1] == "paper-literal" else "")
    fig.suptitle((title + ": " if title else "") + f"BF-IO (H={h}) vs FCFS, mean over {n} seeds, 95% interval bars",
                 fontsize=9)
    fig.tight_layout()
    return fig


__all__ = ["plot_generality"]
