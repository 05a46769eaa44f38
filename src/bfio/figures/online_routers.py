"""Online study, production routers (issue 18): p99 end-to-end latency of
every instant-dispatch router, relative to the reference row (BF-IO, central
pool; paired by seed) and absolute, against the interval of the load reports
the router routes on, one column per setting at the load closest to ``load``
(``results/tables/online_routers.csv``). The routers run at several report
intervals (lines) and BF-IO are named in the registry's colours
(:func:`bfio.figures.style.router`); routers run at exact reports only are
named too while a panel stays within :data:`~bfio.figures.style.MAX_SERIES`
series, else they are one grey bar (the range of their means)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.figures.style import (MAX_SERIES, figure, interval, interval_note, others_band, plain_log_ticks, router,
                                scale_for, setting_of)

#: Panel rows: (metric, axis label, unit, log scale); ``vs_reference`` is the
#: router's p99 e2e over the reference's, paired by seed.
PANELS = [("vs_reference", "p99 e2e / reference's", "x", True),
          ("e2e_s_p99", "p99 end-to-end latency", "s", True)]
#: The other routers' bar sits this far left of its interval (clear of the named points).
BAND_SHIFT = 0.15
#: Default load shown for the Poisson settings (replays: the time scale whose load is closest).
DEFAULT_LOAD = 0.95


def figure_loads(summary: pd.DataFrame, load: float = DEFAULT_LOAD) -> dict:
    """setting -> the load of its records closest to ``load`` (the larger one on ties)."""
    out = {}
    for name, sub in summary.groupby("setting", sort=False):
        loads = sorted(set(sub["load"].astype(float)))
        out[name] = min(loads, key=lambda x: (abs(x - load), -x))
    return out


def plot_online_routers(summary: pd.DataFrame, load: float = DEFAULT_LOAD, panels=PANELS, predictors=None):
    """``panels`` against the report interval (categorical axis: the intervals
    present), one line per router run at several intervals, a point per named
    router run at one, the reference row as a horizontal line with its interval
    as a band (at 1 in the ratio panel). A router is its policy and, where the
    study's variant names one (``predictors``: row -> predictor), its predictor:
    BF-IO with the oracle and with an oracle-free predictor are two lines. Rows
    with ``completions: streamed`` (issue 44: the router sees finished requests
    in the output stream) get a panel row of their own below, the first panel's
    metric, each dotted beside its router's line on reports alone."""
    predictors = dict(predictors or {})
    streamed = (summary["completions"] == "streamed" if "completions" in summary
                else pd.Series(False, index=summary.index))
    # a router is its policy, its predictor where named, and a line of its own with streamed completions
    summary = summary.assign(_router=[(f"{p}|{predictors[r]}" if r in predictors else p) + ("|streamed" if c else "")
                                      for p, r, c in zip(summary["policy"], summary["row"], streamed)])
    streams = summary[streamed.to_numpy()]
    summary = summary[~streamed.to_numpy()]
    settings = list(dict.fromkeys(summary["setting"]))
    at = figure_loads(summary, load)
    inst = summary[summary["role"] == "instant"]
    intervals = sorted({int(k) for k in inst["report_interval"]})
    xpos = {k: i for i, k in enumerate(intervals)}
    policies = list(dict.fromkeys(inst["_router"]))
    several = [p for p in policies if inst.loc[inst["_router"] == p, "report_interval"].nunique() > 1]
    policy_of = dict(zip(inst["_router"], inst["policy"]))
    bfio = [p for p in policies if policy_of[p] == "bfio"]
    first = bfio + [p for p in several if p not in bfio]
    rest = [p for p in policies if p not in first]
    # the reference, the named routers and (if any is left out) the band: at most MAX_SERIES
    fits = len(first) + len(rest) + 1 <= MAX_SERIES
    named = first + (rest if fits else rest[:max(0, MAX_SERIES - 2 - len(first))])
    banded = [p for p in policies if p not in named]
    stream_rows = [(panels[0], list(dict.fromkeys(streams["_router"])))] if len(streams) else []
    rows_of_panels = [(panel, None) for panel in panels] + stream_rows
    fig, axes = figure(len(rows_of_panels), max(1, len(settings)), width=3.3 * max(1, len(settings)) + 0.4,
                       height=2.5 * len(rows_of_panels) + 1.4)
    kinds = []

    def line(ax, q, m, factor, router_key):
        """One router's points against the interval (a line where it has several)."""
        q = q[q["_router"] == router_key].copy()
        if q.empty:
            return
        q["_x"] = q["report_interval"].astype(int).map(xpos)
        q = q.sort_values("_x")
        mean, yerr, kind = interval(q, m, factor)
        kinds.append(kind)
        r0 = q.iloc[0]
        st = router(r0["row"], "instant", r0["policy"], r0.get("horizon"), predictor=predictors.get(r0["row"]),
                    completions=r0.get("completions")).style()
        st["linestyle"] = st["linestyle"] if len(q) > 1 else "none"
        ax.errorbar(q["_x"], mean, yerr=yerr, capsize=2, markersize=4, linewidth=1.1, **st)

    for j, name in enumerate(settings):
        s = summary[(summary["setting"] == name) & (np.isclose(summary["load"].astype(float), at[name]))]
        lagged = streams[(streams["setting"] == name) & (np.isclose(streams["load"].astype(float), at[name]))]
        first_rec = s.iloc[0]
        for i, ((m, label, unit, log), stream_keys) in enumerate(rows_of_panels):
            ax = axes[i, j]
            factor, u = scale_for(s[f"{m}_mean"], unit) if unit.startswith("tokens") else (1.0, unit)
            ref = s[s["role"] == "reference"]
            if not ref.empty:
                mean, yerr, kind = interval(ref, m, factor)
                kinds.append(kind)
                r0 = ref.iloc[0]
                st = router(r0["row"], r0["dispatch"], r0.get("policy"), r0.get("horizon"),
                            predictor=predictors.get(r0["row"])).style(marker=False)
                st["label"] = f"{st['label']} (the reference; band: its interval)"
                ax.axhline(mean[0], linewidth=1.6, **st)
                ax.axhspan(mean[0] - yerr[0, 0], mean[0] + yerr[1, 0], color=st["color"], alpha=0.15, linewidth=0)
            if stream_keys is not None:  # each streamed router beside its line on reports alone
                for key in stream_keys:
                    line(ax, s[s["role"] == "instant"], m, factor, key[:-len("|streamed")])
                    line(ax, lagged, m, factor, key)
            else:
                for p in named:
                    line(ax, s[s["role"] == "instant"], m, factor, p)
                curves = []
                for p in banded:
                    q = s[(s["role"] == "instant") & (s["_router"] == p)]
                    if len(q):
                        curves.append((q["report_interval"].astype(int).map(xpos).to_numpy() - BAND_SHIFT,
                                       q[f"{m}_mean"].to_numpy()))
                others_band(ax, curves, factor, label=f"{len(banded)} other routers, exact reports only: range of "
                                                      "their means")
            if log:
                ax.set_yscale("log")
                plain_log_ticks(ax.yaxis)
            ax.set_xticks(range(len(intervals)), [str(k) if k else "0 (exact)" for k in intervals])
            ax.set_xlim(-0.35, len(intervals) - 0.7)
            ax.set_xlabel("load report every k steps")
            ax.set_ylabel(f"{label} ({u})" if u != "x" else f"{label} (ratio)")
            if i == 0:
                how = ("Poisson arrivals" if first_rec["arrival_mode"] == "poisson"
                       else f"trace timestamps x{float(first_rec['time_scale']):g}")
                ax.set_title(f"{setting_of(s.drop(columns='n_seeds'), wrap=True)}\n{how}, load {at[name]:.2f}", fontsize=8)
    handles, labels = [], []
    for ax in (axes[0, 0], axes[-1, 0]):  # the streamed lines are named in their own panel row
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    ncol = min(3, max(1, len(labels)))
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=7, bbox_to_anchor=(0.5, 0.0))
    bottom = ("; bottom: the same ratio, routers that see finished requests in the output stream (dotted) beside "
              "the same routers on reports alone" if stream_rows else "")
    fig.suptitle(f"Production routers (instant dispatch) with lagging load reports: mean over {n} seeds, "
                 f"{interval_note(kinds)}\ntop: p99 end-to-end latency over the reference's, paired by seed "
                 f"(1 = as fast){bottom}", fontsize=9)
    rows = int(np.ceil(len(labels) / ncol))
    fig.tight_layout(rect=(0, min(0.4, (0.15 + 0.17 * rows) / fig.get_figheight()), 1, 1))
    return fig


__all__ = ["plot_online_routers", "figure_loads", "PANELS", "DEFAULT_LOAD"]
