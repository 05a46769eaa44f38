"""The notebook's charts of an experiment summary (``notebooks/explore.ipynb``,
an ``<experiment>_summary`` table of :func:`bfio.runs.tables.summarize`).

:func:`plot_summary` draws one metric the way the experiment varies: against
the lookahead H when BF-IO rows differ in H (``table1``, ``table2``,
``horizon_sweep``: one line per BF-IO objective, the baselines as horizontal
lines with their interval as a band, one panel per cluster size), against the
cluster size G when only G varies (``worker_sweep``), else as bars
(:func:`plot_summary_bars`). Series are named as in the tables (FCFS, JSQ,
BF-IO, BF-IO paper-literal), at most :data:`MAX_SERIES` a panel, each with its
colour and marker from the figure style's one registry (:func:`bfio.figures.style.router`);
values are in the tables' readable units (:func:`metric_scale`: ``x1e8 tokens``,
``MJ``), and the 95% interval is drawn only with at least
:data:`bfio.runs.tables.MIN_INTERVAL_SEEDS` seeds, never below zero (every metric of
the summaries is non-negative)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from bfio.figures.style import figure, plain_log_ticks, router, scale_for, setting_of
from bfio.lookahead.run_keys import paper_row_spec
from bfio.runs.tables import METRIC_INFO, MIN_INTERVAL_SEEDS, row_label
from bfio.studies.online_summary import ONLINE_METRICS, record_label

#: inches per bar (labels of 8 pt need about 0.2)
BAR_HEIGHT_IN = 0.26
#: Series in one panel at most (more are split over panels).
MAX_SERIES = 8
#: A line panel whose positive values span more than this factor gets a log axis (bars: 100).
LOG_SPAN = 10


def series_name(row: str) -> str:
    """The series a summary row belongs to: ``BF-IO`` or ``BF-IO paper-literal``
    for BF-IO rows (their objective: the summaries store no ``objective`` column,
    so it is the declared row's, :func:`bfio.lookahead.run_keys.paper_row_spec`, a lookup;
    H is the stored ``horizon``), the row's label otherwise (``FCFS``, ``JSQ``)."""
    spec = paper_row_spec(row)
    if spec:
        return "BF-IO" if spec.objective == "default" else "BF-IO paper-literal"
    return row_label(row)


def _styles(s: pd.DataFrame, keys: list, column: str) -> dict:
    """Colour and marker of each series ``key`` (a value of ``column``) from the
    style registry, read off the first row of the series (:func:`bfio.figures.style.router`)."""
    out = {}
    for key in keys:
        r = s[s[column] == key].iloc[0]
        st = router(r["row"], r.get("dispatch"), r.get("policy"), r.get("horizon")).style()
        st.pop("label", None)
        out[key] = st
    return out


def metric_scale(metric: str, values) -> tuple[float, str]:
    """A divisor and unit label as the paper's tables print them: tokens and
    tokens/s as ``x1e<k>`` with the largest value below 100 (``x1e8 tokens``:
    3.7e9 reads 37), energy with an SI prefix (``MJ``), TPOT in ms/token below 0.1 s."""
    unit = METRIC_INFO.get(metric, (metric, ""))[1]
    v = np.abs(np.asarray(values, dtype=float))
    top = float(v[np.isfinite(v)].max()) if np.isfinite(v).any() else 0.0
    if unit == "J":
        return scale_for([top], "J")
    if unit == "s/token":
        return (1e-3, "ms/token") if 0 < top < 0.1 else (1.0, unit)
    if unit in ("tokens", "tokens/s") and top >= 100:
        k = int(math.floor(math.log10(top))) - 1
        return 10.0 ** k, f"x1e{k} {unit}"
    return 1.0, unit


def _axis_label(metric: str, unit: str) -> str:
    return f"{METRIC_INFO.get(metric, (metric,))[0]} ({unit})"


def _interval(sub: pd.DataFrame, metric: str, factor: float):
    """Means and the error bars of their 95% interval (zero below
    :data:`MIN_INTERVAL_SEEDS` seeds; clipped at zero below)."""
    mean = sub[f"{metric}_mean"].to_numpy(dtype=float) / factor
    lo = np.maximum(sub[f"{metric}_ci_lo"].to_numpy(dtype=float) / factor, 0.0)
    hi = sub[f"{metric}_ci_hi"].to_numpy(dtype=float) / factor
    few = pd.to_numeric(sub.get("n_seeds", pd.Series(MIN_INTERVAL_SEEDS, index=sub.index)),
                        errors="coerce").fillna(0).to_numpy() < MIN_INTERVAL_SEEDS
    err = np.vstack([mean - lo, hi - mean])
    err[:, few] = 0.0
    return mean, np.where(np.isfinite(err), np.maximum(err, 0.0), 0.0), lo, hi, few


def _seeds_words(summary: pd.DataFrame) -> str:
    n = pd.to_numeric(summary.get("n_seeds", pd.Series(dtype=float)), errors="coerce").dropna()
    if n.empty:
        return ""
    k = int(n.min())
    return (f"mean over {k} seeds, 95% interval" if k >= MIN_INTERVAL_SEEDS else
            f"mean over {k} seeds (no interval with fewer than {MIN_INTERVAL_SEEDS})")


def _setting_words(summary: pd.DataFrame) -> str:
    """The setting in words (:func:`bfio.figures.style.setting_of`: trace, G, N, B, seeds)."""
    return setting_of(summary)


def _panels(keys: list, groups: list) -> list[tuple]:
    """(group, the keys of one panel) with at most :data:`MAX_SERIES` keys a panel."""
    return [(g, keys[i:i + MAX_SERIES]) for g in groups for i in range(0, len(keys), MAX_SERIES)]


def _finish(fig, axes, title: str, handles: dict, values) -> None:
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite) & (finite > 0)]
    for ax in axes:
        if finite.size and finite.max() / finite.min() > LOG_SPAN:
            ax.set_yscale("log")
            plain_log_ticks(ax.yaxis)
    fig.legend(list(handles.values()), list(handles), loc="upper center", ncol=min(4, len(handles)),
               frameon=False, bbox_to_anchor=(0.5, 0.955))
    fig.suptitle(title, fontsize=9, y=0.995)
    fig.tight_layout(rect=(0, 0, 1, 0.96 - 0.06 * math.ceil(len(handles) / 4)))


def plot_summary(summary: pd.DataFrame, metric: str, title: str | None = None):
    """``metric`` of an experiment summary against what the experiment varies
    (module docstring): H, else G, else bars (:func:`plot_summary_bars`)."""
    s = summary.assign(series=summary["row"].map(series_name),
                       H=pd.to_numeric(summary.get("horizon", pd.Series(np.nan, index=summary.index)),
                                       errors="coerce"))
    bf = s[s["H"].notna()]
    by_h = len(bf) and bf.groupby(["series", "workers"])["H"].nunique().max() >= 2
    if not by_h and s["workers"].nunique() < 2:
        return plot_summary_bars(summary, metric, title=title)
    keys = list(dict.fromkeys(s["series"] if by_h else s["row"]))
    styles = _styles(s, keys, "series" if by_h else "row")
    values = s[[f"{metric}_mean", f"{metric}_ci_lo", f"{metric}_ci_hi"]].to_numpy(dtype=float)
    factor, unit = metric_scale(metric, values)
    groups = sorted(s["workers"].unique()) if by_h else [None]
    panels = _panels(keys, groups)
    fig, axes = figure(1, len(panels), width=max(4.8, 3.4 * len(panels)), height=3.4, sharey=True)
    handles: dict = {}
    for ax, (g, panel_keys) in zip(axes.flat, panels):
        for key in panel_keys:
            st = styles[key]
            if by_h:
                sub = s[(s["series"] == key) & (s["workers"] == g)].sort_values("H")
            else:
                sub = s[s["row"] == key].sort_values("workers")
            if sub.empty:
                continue
            mean, err, lo, hi, few = _interval(sub, metric, factor)
            if by_h and sub["H"].isna().all():  # a baseline: its level and interval across the H axis
                h = ax.axhline(mean[0], color=st["color"], linestyle="--", linewidth=1.2)
                if not few[0] and np.isfinite(lo[0]) and np.isfinite(hi[0]):
                    ax.axhspan(lo[0], hi[0], color=st["color"], alpha=0.15, linewidth=0)
            else:
                x = sub["H"] if by_h else sub["workers"]
                h = ax.errorbar(x, mean, yerr=err, capsize=2, color=st["color"], marker=st["marker"],
                                linewidth=1.4)
            handles.setdefault(key if by_h else row_label(key), h)
        if by_h:
            ax.set_xlabel("lookahead horizon H (steps)")
            ax.set_title(f"G = {int(g)}")
        else:
            ax.set_xscale("log", base=2)
            ticks = sorted(s["workers"].unique())
            ax.set_xticks(ticks, [str(int(t)) for t in ticks])
            ax.minorticks_off()
            ax.set_xlabel("workers G")
    axes[0, 0].set_ylabel(_axis_label(metric, unit))
    words = ", ".join(w for w in (_setting_words(s), _seeds_words(s)) if w)
    _finish(fig, list(axes.flat), title or words, handles, values[:, 0] / factor)
    return fig


def plot_summary_bars(summary: pd.DataFrame, metric: str, title: str | None = None):
    """Horizontal bars of ``<metric>_mean`` with the interval ``_ci_lo``..``_ci_hi``
    per row of ``summary``, labelled by policy and ``G``, coloured by series
    (:func:`series_name`: FCFS, JSQ, BF-IO, BF-IO paper-literal), in the tables'
    units (:func:`metric_scale`); a log axis when the bars span more than two decades."""
    s = summary.assign(policy=summary["row"].map(row_label),
                       series=summary["row"].map(series_name)).iloc[::-1]  # first row on top
    keys = list(dict.fromkeys(s["series"][::-1]))
    styles = _styles(s, keys, "series")
    factor, unit = metric_scale(metric, s[[f"{metric}_mean", f"{metric}_ci_hi"]].to_numpy(dtype=float))
    mean, err, _, _, _ = _interval(s, metric, factor)
    labels = (s["policy"] + " G=" + s["workers"].astype(str)).tolist()
    fig, axes = figure(1, 1, width=6.5, height=max(2.4, BAR_HEIGHT_IN * len(s) + 1.2))
    ax = axes[0, 0]
    ax.barh(np.arange(len(s)), mean, xerr=err, color=[styles[k]["color"] for k in s["series"]], edgecolor="0.2")
    ax.set_yticks(np.arange(len(s)), labels)
    positive = mean[mean > 0]
    if positive.size and positive.max() / positive.min() > 100:
        ax.set_xscale("log")
        plain_log_ticks(ax.xaxis)
    ax.set_xlabel(f"{_axis_label(metric, unit)}; {_seeds_words(summary) or 'mean over seeds'}")
    if len(keys) > 1:
        from matplotlib.patches import Patch

        ax.legend([Patch(color=styles[k]["color"]) for k in keys], keys, loc="lower right", fontsize=7)
    if title or _setting_words(summary):
        ax.set_title(title or _setting_words(summary))
    fig.tight_layout()
    return fig


def plot_online(online: pd.DataFrame, rows, metric: str = "e2e_s_p99", title: str | None = None):
    """The online table's ``metric`` (a column stem: ``e2e_s_p99``, ``throughput_run``, ...)
    for the routers ``rows`` (at most :data:`MAX_SERIES`; exact load state),
    one panel per setting: against the offered load where a setting has
    several loads, else as bars. Mean over seeds with the 95% interval (none
    below :data:`~bfio.runs.tables.MIN_INTERVAL_SEEDS` seeds, never below zero)."""

    rows = list(rows)[:MAX_SERIES]
    data = online[online["row"].isin(rows)]
    if "report_interval" in data:
        data = data[data["report_interval"].fillna(0) == 0]
    if data.empty:
        raise ValueError(f"plot_online: none of the rows {rows} in the table")
    label, unit = ONLINE_METRICS.get(metric, (metric, ""))
    factor, unit = (scale_for(data[f"{metric}_mean"], unit) if unit in ("tokens", "tokens/s", "J")
                    else (1.0, unit))
    rows = [r for r in rows if (data["row"] == r).any()]
    styles = _styles(data, rows, "row")
    names = {r: record_label(data[data["row"] == r].iloc[0]) for r in rows}
    settings = list(dict.fromkeys(data["setting"]))
    ncols = min(2, len(settings))
    nrows = math.ceil(len(settings) / ncols)
    lines = data.groupby("setting")["load"].nunique().max() >= 2
    fig, axes = figure(nrows, ncols, width=3.6 * ncols + 0.4, height=(2.8 if lines else 0.3 * len(rows) + 1.2) * nrows
                       + 0.8)
    handles: dict = {}
    for ax, setting in zip(axes.flat, settings):
        sub = data[data["setting"] == setting]
        first = sub.iloc[0]
        ax.set_title(f"{first['trace']}, G={int(first['workers'])}, N={int(first['requests']):,}")
        for i, r in enumerate(rows):
            pts = sub[sub["row"] == r].sort_values("load")
            if pts.empty:
                continue
            mean, err, _, _, _ = _interval(pts, metric, factor)
            st = styles[r]
            if lines:
                h = ax.errorbar(pts["load"], mean, yerr=err, capsize=2, color=st["color"], marker=st["marker"],
                                linestyle="-" if pts["dispatch"].iloc[0] == "central" else "--", linewidth=1.3)
            else:
                h = ax.barh(len(rows) - 1 - i, mean[0], xerr=err[:, :1], color=st["color"], edgecolor="0.2")
            handles.setdefault(names[r], h)
        if lines:
            ax.set_xlabel("offered load (share of the capacity)")
            ax.set_ylabel(f"{label} ({unit})")
        else:
            ax.set_yticks([])
            ax.set_xlabel(f"{label} ({unit}), load {first['load']:.3g}")
    for ax in list(axes.flat)[len(settings):]:
        ax.set_visible(False)
    if lines:
        values = data[f"{metric}_mean"].to_numpy(dtype=float) / factor
        visible = [ax for ax in axes.flat if ax.get_visible()]
        for ax in visible:
            v = np.concatenate([line.get_ydata() for line in ax.get_lines()]) if ax.get_lines() else values
            v = np.asarray(v, dtype=float)
            v = v[np.isfinite(v) & (v > 0)]
            if v.size and v.max() / v.min() > LOG_SPAN:
                ax.set_yscale("log")
                plain_log_ticks(ax.yaxis)
    fig.legend(list(handles.values()), list(handles), loc="upper center", ncol=2, frameon=False,
               bbox_to_anchor=(0.5, 0.995 - 0.03))
    n = _seeds_words(data)
    fig.suptitle(title or f"Online load study: {n}" + ("; solid: central pool, dashed: instant dispatch" if lines
                                                        else ""), fontsize=9, y=0.995)
    legend_in = 0.14 * math.ceil(len(handles) / 2) + 0.2
    fig.tight_layout(rect=(0, 0, 1, 1 - legend_in / fig.get_figheight()))
    return fig


__all__ = ["plot_summary", "plot_summary_bars", "plot_online", "metric_scale", "series_name", "MAX_SERIES"]
