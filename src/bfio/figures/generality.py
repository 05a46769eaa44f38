"""Generality across traces (study beyond the paper, ``docs/generality.md``):
BF-IO's imbalance ratio, throughput gain and energy-per-token saving over
FCFS for every trace, arrival case and cluster size G, with 95% intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import (MIN_SEEDS_FOR_CI, figure, interval_note, level_style, router, setting_title,
                                trace_label)
from bfio.ground.student_t import t_quantile

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


def _bars(m, lo, hi, n, log: bool):
    """Bars of a value ``m`` with the table's 95% interval ``[lo, hi]`` over ``n``
    seeds: the interval with :data:`~bfio.figures.style.MIN_SEEDS_FOR_CI` seeds or
    more, else one standard deviation over the seeds (on the log scale for a
    ratio: its interval is geometric), none without an interval."""
    kinds = set()
    down, up = np.zeros_like(m), np.zeros_like(m)
    for i in range(len(m)):
        if not (np.isfinite(lo[i]) and np.isfinite(hi[i])) or n[i] < 2:
            continue
        if n[i] >= MIN_SEEDS_FOR_CI:
            down[i], up[i] = m[i] - lo[i], hi[i] - m[i]
            kinds.add("ci")
            continue
        q = np.sqrt(n[i]) / t_quantile(0.975, n[i] - 1)
        if log:
            sd = (np.log(hi[i]) - np.log(lo[i])) / 2 * q
            down[i], up[i] = m[i] - m[i] * np.exp(-sd), m[i] * np.exp(sd) - m[i]
        else:
            down[i] = up[i] = (hi[i] - lo[i]) / 2 * q
        kinds.add("sd")
    return np.vstack([down, up]), kinds


def plot_generality(table: pd.DataFrame, target: str = "bfio_h40", title: str = ""):
    """Three rows of panels (imbalance ratio, throughput gain, energy saving of
    ``target`` over the baseline); left: backlog per trace, right: trace replay
    per trace and case. One marker/line style per G, 95% interval bars."""
    table = table.copy()
    backlog = table[table["case"] == "backlog"]
    replay = table[table["case"] != "backlog"]
    groups = [("backlog (saturated)", backlog, lambda r: trace_label(r["trace"]))]
    if len(replay):
        groups.append(("trace replay", replay, lambda r: f"{trace_label(r['trace'])}\n{_short_case(r['case'])}"))
    widths = [max(1, g[1][["trace", "case"]].drop_duplicates().shape[0]) for g in groups]
    fig, axes = figure(3, len(groups), width=min(11.0, 2.2 + 0.55 * sum(widths)), height=6.6,
                       gridspec_kw={"width_ratios": widths}, sharey="row")
    workers = sorted(table["workers"].unique())
    kinds = []
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
                n = d["n_seeds"].to_numpy(dtype=float) if "n_seeds" in d else np.full(len(m), np.inf)
                yerr, kind = _bars(m, lo, hi, n, log)
                kinds.append(kind)
                st = level_style(w_i)
                ax.errorbar(xs, m, yerr=yerr, fmt=st["marker"], color=st["color"], capsize=2, markersize=4,
                            label=f"G = {g} workers")
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
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=7)
    n = int(table["n_seeds"].max()) if "n_seeds" in table else 0
    B = table["slots"].iloc[0] if "slots" in table and len(table) else None
    rps = table["rows_per_slot"].iloc[0] if "rows_per_slot" in table and len(table) else None
    where = setting_title(slots=B, seeds=n, extra=f"N = {rps:g} x G x B requests" if rps else "")
    fig.suptitle((title + "\n" if title else "") + f"{router(target).label} vs FCFS on every trace: {where}\n"
                 f"mean over seeds, {interval_note(kinds)}", fontsize=9)
    fig.tight_layout(rect=(0, 0.35 / fig.get_figheight(), 1, 1))
    return fig


__all__ = ["plot_generality"]
