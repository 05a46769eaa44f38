"""Tables of the online, predictor and starvation studies (issue 6): per-group
means with 95% Student-t intervals over seeds (:func:`bfio.studies.summarize_runs`),
paired effects (:func:`bfio.studies.paired_effect`), Markdown renderings and
the starvation study's recommended admission.

Kept apart from the run-building modules (:mod:`bfio.studies.online`,
:mod:`~bfio.studies.predictor_study`, :mod:`~bfio.studies.starvation`) so the
workflow reruns only tables, never simulations, when this code changes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.errors import ConfigError
from bfio.studies.aggregate import paired_effect, summarize_runs
from bfio.studies.report import PAPER_SETTINGS, ci_cell, fmt, markdown_table, scale_note

# --------------------------------------------------------------------------- online

#: Metric -> (label, unit). Per-request latencies are quantiles over the run's
#: requests; "run" metrics cover the whole run (no measurement window: with
#: arrivals the paper's window is not meaningful).
ONLINE_METRICS = {
    "queue_wait_s_p50": ("queue wait p50", "s"),
    "queue_wait_s_p90": ("queue wait p90", "s"),
    "queue_wait_s_p99": ("queue wait p99", "s"),
    "tpot_s_p50": ("TPOT p50", "s/token"),
    "tpot_s_p90": ("TPOT p90", "s/token"),
    "tpot_s_p99": ("TPOT p99", "s/token"),
    "e2e_s_p50": ("e2e latency p50", "s"),
    "e2e_s_p90": ("e2e latency p90", "s"),
    "e2e_s_p99": ("e2e latency p99", "s"),
    "throughput_run": ("throughput", "tokens/s"),
    "avg_imbalance_run": ("avg imbalance", "tokens"),
    "energy_j_run": ("energy", "J"),
}
#: Columns of the Markdown table (the CSV has every metric).
MARKDOWN_METRICS = ("queue_wait_s_p99", "tpot_s_p50", "e2e_s_p50", "e2e_s_p99", "throughput_run",
                    "avg_imbalance_run", "energy_j_run")
ONLINE_GROUP = ["setting", "trace", "requests", "workers", "slots", "arrival_mode", "load", "time_scale", "dispatch", "row"]


def summarize_online(runs: pd.DataFrame, metrics=None) -> pd.DataFrame:
    """Mean and 95% CI over seeds per (setting, load, dispatch, row)."""
    metrics = list(metrics or ONLINE_METRICS)
    runs = runs.copy()
    runs["load"] = runs["load"].round(6)
    out = summarize_runs(runs, ONLINE_GROUP, metrics)
    order = {"central": 0, "instant": 1}
    out["_d"] = out["dispatch"].map(order)
    out = out.sort_values(["setting", "load", "_d"], kind="stable").drop(columns="_d")
    return out.reset_index(drop=True)


def policy_label(row: str, dispatch: str) -> str:
    """``'vLLM DP (instant)'``, ``'BF-IO (H=40) (central)'``, ``'BF-IO (H=40, aging:200) (central)'``."""
    import re

    from bfio.tables import row_label

    m = re.fullmatch(r"bfio_h(\d+)_(free|fifo|aging)(\d*)", row)
    if m:
        adm = m.group(2) + (f":{m.group(3)}" if m.group(3) else "")
        return f"BF-IO (H={m.group(1)}, {adm}) ({dispatch})"
    return f"{row_label(row)} ({dispatch})"


def online_markdown(summary: pd.DataFrame, settings: dict, title: str = "Online arrivals vs production routers") -> str:
    """One section per setting: rows (load, policy), columns :data:`MARKDOWN_METRICS`."""
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    lines = [f"# {title}{scale_note(settings, PAPER_SETTINGS)}", "",
             f"Mean [95% CI] over {n} seeds (Student t). *load* = offered arrival rate / the cluster's "
             "saturation throughput (requests/s of FCFS-style backlog runs, see `saturation_rps`); latencies are "
             "quantiles over the requests of a run (queue wait = arrival to start of decode; e2e = arrival to "
             "last token), throughput, imbalance and energy cover the whole run. *central*: a shared pool, "
             "requests are placed when a slot frees; *instant*: each request is sent to a worker's queue on "
             "arrival. The CSV has every quantile (p50, p90, p99).", ""]
    cols = [("load", lambda r: f"{r['load']:.3g}"), ("policy", lambda r: policy_label(r["row"], r["dispatch"]))]
    for m in MARKDOWN_METRICS:
        label, unit = ONLINE_METRICS[m]
        cols.append((f"{label} ({unit})", lambda r, m=m: ci_cell(r, m)))
    for name in dict.fromkeys(summary["setting"]):
        sub = summary[summary["setting"] == name]
        first = sub.iloc[0]
        mode = ("Poisson arrivals" if first["arrival_mode"] == "poisson"
                else "trace timestamps, time scale " + ", ".join(f"{t:g}" for t in sorted(set(sub['time_scale']))))
        n_req = "whole trace" if pd.isna(first["requests"]) else f"{int(first['requests']):,}"
        lines += [f"## {name}: {first['trace']}, G={first['workers']}, B={first['slots']}, N={n_req}; {mode}", "",
                  markdown_table(sub.to_dict("records"), cols), ""]
    return "\n".join(lines)



# --------------------------------------------------------------------------- predictors

PREDICTOR_METRICS = {"avg_imbalance": ("avg imbalance", "tokens"), "throughput": ("throughput", "tokens/s"),
           "tpot": ("TPOT", "s/token"), "energy_j": ("energy", "J")}
PREDICTOR_GROUP = ["setting", "trace", "requests", "workers", "slots", "row", "predictor", "noise", "horizon"]


def summarize_predictors(runs: pd.DataFrame, oracle_row: str, fcfs_row: str | None = "fcfs") -> pd.DataFrame:
    """Mean and 95% CI per (setting, row), plus paired effects over seeds:
    ``imbalance_vs_oracle_pct`` (imbalance above the oracle's, %) and
    ``throughput_vs_fcfs_pct`` (throughput gain over FCFS, %) when those rows ran."""
    summary = summarize_runs(runs, PREDICTOR_GROUP, [m for m in PREDICTOR_METRICS if m in runs.columns])
    key = ["setting", "row"]
    effects = []
    if oracle_row in set(runs["row"]):
        effects.append((oracle_row, "avg_imbalance", "imbalance_vs_oracle_pct"))
    if fcfs_row and fcfs_row in set(runs["row"]):
        effects.append((fcfs_row, "throughput", "throughput_vs_fcfs_pct"))
    for base, metric, name in effects:
        rows = []
        for row in dict.fromkeys(runs["row"]):
            eff = paired_effect(runs, ["setting"], base, row, metric, "gain_pct")
            eff["row"] = row
            rows.append(eff)
        eff = pd.concat(rows, ignore_index=True)
        eff = eff.rename(columns={"gain_pct_mean": f"{name}_mean", "gain_pct_ci_lo": f"{name}_ci_lo",
                                  "gain_pct_ci_hi": f"{name}_ci_hi"})
        summary = summary.merge(eff[key + [f"{name}_mean", f"{name}_ci_lo", f"{name}_ci_hi"]], on=key, how="left")
    return summary


def _predictor_label(r) -> str:
    from bfio.tables import row_label

    if r["predictor"] == "-":
        return row_label(r["row"])
    h = int(r["horizon"]) if "horizon" in r and pd.notna(r.get("horizon")) else None
    head = f"BF-IO (H={h})" if h is not None else "BF-IO"
    if r["predictor"] == "noisy":
        return f"{head}, noisy d={r['noise']:g}"
    return f"{head}, {r['predictor']}"


def predictor_markdown(summary: pd.DataFrame, settings: dict, title: str = "BF-IO with imperfect predictors") -> str:
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    lines = [f"# {title}{scale_note(settings, PAPER_SETTINGS)}", "",
             f"Backlog mode (the paper's convention and metric window). Mean [95% CI] over {n} seeds (Student t). "
             "*noisy d*: decode lengths estimated as o x U[1-d, 1+d] once per request; *empirical*, *geometric*: "
             "oracle-free predictors learned online from completed requests; *none*: active requests are "
             "assumed never to finish inside the window. *vs oracle*: paired (per seed) % change of the "
             "imbalance over oracle BF-IO with the same H; *vs FCFS*: paired throughput gain over FCFS.", ""]
    cols = [("policy", _predictor_label)]
    for m, (label, unit) in PREDICTOR_METRICS.items():
        cols.append((f"{label} ({unit})", lambda r, m=m: ci_cell(r, m)))
    if "imbalance_vs_oracle_pct_mean" in summary:
        cols.append(("imbalance vs oracle (%)", lambda r: ci_cell(r, "imbalance_vs_oracle_pct")))
    if "throughput_vs_fcfs_pct_mean" in summary:
        cols.append(("throughput vs FCFS (%)", lambda r: ci_cell(r, "throughput_vs_fcfs_pct")))
    for name in dict.fromkeys(summary["setting"]):
        sub = summary[summary["setting"] == name]
        first = sub.iloc[0]
        lines += [f"## {name}: {first['trace']}, G={first['workers']}, B={first['slots']}, "
                  f"N={int(first['requests']):,}", "", markdown_table(sub.to_dict("records"), cols), ""]
    return "\n".join(lines)



# --------------------------------------------------------------------------- starvation

STARVATION_METRICS = {"wait_steps_p99": ("wait p99", "steps"), "wait_steps_max": ("wait max", "steps"),
           "wait_s_p99": ("wait p99", "s"), "wait_s_max": ("wait max", "s"),
           "throughput": ("throughput", "tokens/s"), "avg_imbalance": ("avg imbalance", "tokens"),
           "tpot": ("TPOT", "s/token")}
STARVATION_GROUP = ["setting", "trace", "requests", "workers", "slots", "row", "horizon", "admission"]


def summarize_starvation(runs: pd.DataFrame, baseline_admission: str = "free") -> pd.DataFrame:
    """Mean and 95% CI per (setting, row); for BF-IO rows the paired (per seed)
    ``throughput_cost_pct`` against the ``baseline_admission`` row with the same
    H (positive = throughput lost) and ``wait_p99_vs_base`` (ratio of mean p99
    waits in steps)."""
    summary = summarize_runs(runs, STARVATION_GROUP, [m for m in STARVATION_METRICS if m in runs.columns])
    summary["throughput_cost_pct_mean"] = np.nan
    summary["throughput_cost_pct_ci_lo"] = np.nan
    summary["throughput_cost_pct_ci_hi"] = np.nan
    summary["wait_p99_vs_base"] = np.nan
    for i, r in summary.iterrows():
        if r["admission"] == "-":
            continue
        same = summary[(summary["setting"] == r["setting"]) & (summary["horizon"] == r["horizon"])
                       & (summary["admission"] == baseline_admission)]
        if same.empty:
            continue
        base = same.iloc[0]
        sub = runs[runs["setting"] == r["setting"]]
        eff = paired_effect(sub, ["setting"], base["row"], r["row"], "throughput", "gain_pct").iloc[0]
        # cost = -gain; the interval flips
        summary.loc[i, "throughput_cost_pct_mean"] = -eff["gain_pct_mean"]
        summary.loc[i, "throughput_cost_pct_ci_lo"] = -eff["gain_pct_ci_hi"]
        summary.loc[i, "throughput_cost_pct_ci_hi"] = -eff["gain_pct_ci_lo"]
        b = base["wait_steps_p99_mean"]
        summary.loc[i, "wait_p99_vs_base"] = r["wait_steps_p99_mean"] / b if b > 0 else np.nan
    return summary


#: Wait metrics a recommendation may minimize (worst case over settings and H).
RECOMMEND_BY = ("wait_steps_max", "wait_steps_p99", "wait_s_max", "wait_s_p99")


def recommend_admission(summary: pd.DataFrame, max_cost_pct: float, by: str = "wait_steps_max") -> dict:
    """The admission with the smallest worst-case ``by`` (mean over seeds, worst
    over every setting and H) among those whose mean throughput cost against
    ``free`` stays within ``max_cost_pct`` in every (setting, H); ties by the
    smaller worst-case cost.

    Returns ``{"admission", "by", "criterion", "candidates"}`` where each
    candidate has its worst cost and worst p99/max waits in steps and seconds;
    ``admission`` is None when no candidate meets the cost bound.
    """
    if by not in RECOMMEND_BY:
        raise ConfigError(f"starvation.recommend_by: expected one of {', '.join(RECOMMEND_BY)}, got {by!r}")
    bf = summary[summary["admission"] != "-"]
    if bf.empty:
        raise ConfigError("starvation: no BF-IO rows to recommend an admission from")
    cands = []
    for adm, grp in bf.groupby("admission", sort=False):
        cost = grp["throughput_cost_pct_mean"].fillna(0.0)
        rec = {"admission": adm, "worst_cost_pct": float(cost.max())}
        for m in RECOMMEND_BY:
            rec[f"worst_{m}"] = float(grp[f"{m}_mean"].max()) if f"{m}_mean" in grp else float("nan")
        rec["eligible"] = bool(rec["worst_cost_pct"] <= max_cost_pct)
        cands.append(rec)
    ok = [c for c in cands if c["eligible"]]
    best = min(ok, key=lambda c: (c[f"worst_{by}"], c["worst_cost_pct"])) if ok else None
    return {"admission": best["admission"] if best else None, "max_cost_pct": float(max_cost_pct), "by": by,
            "criterion": (f"smallest worst-case {by} (mean over seeds, worst over settings and horizons) among "
                          f"admissions whose mean throughput cost vs 'free' is <= {max_cost_pct:g}% in every "
                          "setting and horizon"),
            "candidates": cands}


def _starvation_label(r) -> str:
    from bfio.tables import row_label

    if r["admission"] == "-":
        return row_label(r["row"])
    return f"BF-IO (H={int(r['horizon'])}), {r['admission']}"


def starvation_markdown(summary: pd.DataFrame, settings: dict, recommendation: dict,
                        title: str = "Starvation and fairness of BF-IO admission rules") -> str:
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    lines = [f"# {title}{scale_note(settings, PAPER_SETTINGS)}", "",
             f"Backlog mode (paper convention). Mean [95% CI] over {n} seeds (Student t). Wait = pool entry to "
             "admission, per request (p99 and max over the run's requests). *cost vs free*: paired throughput "
             "loss against `free` with the same H (%, positive = slower). `aging:N` admits requests waiting >= N "
             "steps first; `fifo` admits the oldest U.", ""]
    cols = [("policy", _starvation_label)]
    for m, (label, unit) in STARVATION_METRICS.items():
        cols.append((f"{label} ({unit})", lambda r, m=m: ci_cell(r, m)))
    cols.append(("cost vs free (%)", lambda r: ci_cell(r, "throughput_cost_pct")))
    for name in dict.fromkeys(summary["setting"]):
        sub = summary[summary["setting"] == name]
        first = sub.iloc[0]
        lines += [f"## {name}: {first['trace']}, G={first['workers']}, B={first['slots']}, "
                  f"N={int(first['requests']):,}", "", markdown_table(sub.to_dict("records"), cols), ""]
    lines += ["## Recommended default admission", "",
              f"Criterion: {recommendation['criterion']}.", ""]
    rec_cols = [("admission", lambda c: c["admission"]), ("worst cost vs free (%)", lambda c: fmt(c["worst_cost_pct"])),
                ("worst p99 wait (steps)", lambda c: fmt(c["worst_wait_steps_p99"])),
                ("worst max wait (steps)", lambda c: fmt(c["worst_wait_steps_max"])),
                ("worst p99 wait (s)", lambda c: fmt(c["worst_wait_s_p99"])),
                ("worst max wait (s)", lambda c: fmt(c["worst_wait_s_max"])),
                ("within cost bound", lambda c: "yes" if c["eligible"] else "no")]
    lines += [markdown_table(recommendation["candidates"], rec_cols), ""]
    pick = recommendation["admission"]
    lines += [f"**Recommendation: `admission: {pick}`.**" if pick else "**No admission meets the cost bound.**", ""]
    return "\n".join(lines)



__all__ = ["ONLINE_METRICS", "MARKDOWN_METRICS", "PREDICTOR_METRICS", "STARVATION_METRICS", "summarize_online",
           "online_markdown", "policy_label", "summarize_predictors", "predictor_markdown", "summarize_starvation",
           "recommend_admission", "starvation_markdown", "RECOMMEND_BY"]
