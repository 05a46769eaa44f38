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


#: Columns of the online runs that a row determines, carried into the summary
#: when present (runs written before issue 18 have neither).
ONLINE_ROW_COLUMNS = ["policy", "report_interval"]


def summarize_online(runs: pd.DataFrame, metrics=None) -> pd.DataFrame:
    """Mean and 95% CI over seeds per (setting, load, dispatch, row)."""
    metrics = list(metrics or ONLINE_METRICS)
    runs = runs.copy()
    runs["load"] = runs["load"].round(6)
    out = summarize_runs(runs, ONLINE_GROUP + [c for c in ONLINE_ROW_COLUMNS if c in runs.columns], metrics)
    order = {"central": 0, "instant": 1}
    out["_d"] = out["dispatch"].map(order)
    out = out.sort_values(["setting", "load", "_d"], kind="stable").drop(columns="_d")
    return out.reset_index(drop=True)


def policy_label(row: str, dispatch: str, report_interval=0, policy: str | None = None) -> str:
    """``'vLLM DP (instant)'``, ``'BF-IO (H=40) (central)'``, ``'BF-IO (H=40, aging:200) (central)'``;
    a row with lagging load reports (``report_interval`` k > 0, the row's
    registry ``policy`` given): ``'vLLM DP, reports every 10 steps (instant)'``."""
    from bfio.paper import parse_admission_row, parse_bfio_row
    from bfio.tables import row_label

    adm = parse_admission_row(row)
    if adm:
        return f"BF-IO (H={adm[0]}, {adm[1]}) ({dispatch})"
    from bfio.policies import registered

    k = 0 if report_interval is None or pd.isna(report_interval) else int(report_interval)
    if policy and isinstance(policy, str) and row not in registered() and not parse_bfio_row(row):
        row = policy  # a variant row: shown by its policy's label
    if k > 0:
        return f"{row_label(row)}, reports every {k} steps ({dispatch})"
    return f"{row_label(row)} ({dispatch})"


def _record_label(r) -> str:
    """:func:`policy_label` of a summary record (with its ``report_interval`` and ``policy`` when present)."""
    return policy_label(r["row"], r["dispatch"], r.get("report_interval", 0), r.get("policy"))


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
    cols = [("load", lambda r: f"{r['load']:.3g}"), ("policy", _record_label)]
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


# --------------------------------------------------------------------------- production routers (issue 18)

#: Metrics of the routers table (``results/tables/online_routers.*``).
ROUTER_METRICS = ("e2e_s_p99", "e2e_s_p50", "queue_wait_s_p99", "throughput_run", "avg_imbalance_run")
#: The paired effect against the reference row: per seed, router p99 e2e / reference p99 e2e.
ROUTER_EFFECT_METRIC = "e2e_s_p99"
ROUTER_GROUP = ["setting", "trace", "requests", "workers", "slots", "arrival_mode", "load", "time_scale"]


def summarize_routers(runs: pd.DataFrame, reference: str, metrics=ROUTER_METRICS) -> pd.DataFrame:
    """The instant-dispatch routers of the online study beside a central
    ``reference`` row (BF-IO): one record per (setting, load, row) with the
    row's ``policy`` and ``report_interval``, mean [95% CI] of ``metrics``, and
    ``vs_reference`` = router p99 e2e / reference p99 e2e, paired by seed (the
    same seed is the same requests and arrival times for every row), mean
    [95% CI]. The reference's own records come first in each (setting, load)
    (``dispatch`` central, ``vs_reference`` 1)."""
    runs = runs.copy()
    runs["load"] = runs["load"].round(6)
    if "report_interval" not in runs:
        runs["report_interval"] = 0
    ref = runs[(runs["dispatch"] == "central") & (runs["row"] == reference)]
    if ref.empty:
        raise ConfigError(f"online.reference: row '{reference}' is not among the central rows of the runs "
                          f"(central rows: {', '.join(sorted(set(runs.loc[runs['dispatch'] == 'central', 'row'])))})")
    inst = runs[runs["dispatch"] == "instant"]
    keep = ref.assign(row="__reference__")
    out = []
    for group, part in (("reference", ref), ("instant", inst)):
        s = summarize_runs(part, ROUTER_GROUP + ["dispatch", "row", "policy", "report_interval"], list(metrics))
        s["role"] = group
        out.append(s)
    summary = pd.concat(out, ignore_index=True)
    effects = []
    for row in dict.fromkeys(inst["row"]):
        pair = pd.concat([keep, inst[inst["row"] == row]], ignore_index=True)
        eff = paired_effect(pair, ROUTER_GROUP, row, "__reference__", ROUTER_EFFECT_METRIC, "ratio")
        eff["row"] = row
        effects.append(eff)
    cols = ROUTER_GROUP + ["row", "ratio_mean", "ratio_ci_lo", "ratio_ci_hi"]
    eff = (pd.concat(effects, ignore_index=True)[cols] if effects else pd.DataFrame(columns=cols)).rename(
        columns={"ratio_mean": "vs_reference_mean", "ratio_ci_lo": "vs_reference_ci_lo",
                 "ratio_ci_hi": "vs_reference_ci_hi"})
    summary = summary.merge(eff, on=ROUTER_GROUP + ["row"], how="left")
    is_ref = summary["role"] == "reference"
    summary.loc[is_ref, ["vs_reference_mean", "vs_reference_ci_lo", "vs_reference_ci_hi"]] = 1.0
    summary["reference"] = reference
    summary["label"] = [_record_label(r) for r in summary.to_dict("records")]
    summary["_r"] = (~is_ref).astype(int)
    summary = summary.sort_values(["setting", "load", "_r"], kind="stable").drop(columns="_r")
    return summary.reset_index(drop=True)


def routers_markdown(summary: pd.DataFrame, settings: dict, title: str = "Production data-parallel routers") -> str:
    """One section per setting: rows (load, router), one column per report
    interval with p99 end-to-end latency mean [95% CI] and, in parentheses, its
    paired ratio to the reference row."""
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    reference = summary["reference"].iloc[0] if len(summary) else "?"
    ref_label = (summary.loc[summary["role"] == "reference", "label"].iloc[0]
                 if (summary["role"] == "reference").any() else reference)
    intervals = sorted({int(k) for k in summary.loc[summary["role"] == "instant", "report_interval"]})
    lines = [f"# {title}{scale_note(settings, PAPER_SETTINGS)}", "",
             f"p99 end-to-end latency (s), mean [95% CI] over {n} seeds (Student t), of every instant-dispatch "
             f"router of the online study, with the load reports it routes on refreshed every *k* steps "
             f"(*k* = 0: the exact state; `report_interval`, `docs/online.md`). In parentheses: the router's p99 "
             f"over that of **{ref_label}** (`{reference}`, the reference row), paired by seed, mean "
             f"[95% CI]; > 1 = slower than the reference. *load* = offered arrival rate / saturation throughput. "
             f"The CSV also has p50 e2e, queue wait p99, whole-run throughput and imbalance.", ""]

    def cell(recs, k):
        r = recs.get(k)
        if r is None:
            return "-"
        return f"{ci_cell(r, ROUTER_EFFECT_METRIC)} ({ci_cell(r, 'vs_reference', digits=3)})"

    for name in dict.fromkeys(summary["setting"]):
        sub = summary[summary["setting"] == name]
        first = sub.iloc[0]
        mode = ("Poisson arrivals" if first["arrival_mode"] == "poisson"
                else "trace timestamps, time scale " + ", ".join(f"{t:g}" for t in sorted(set(sub['time_scale']))))
        rows = []
        for load in dict.fromkeys(sub["load"]):
            at = sub[sub["load"] == load]
            for r in at[at["role"] == "reference"].to_dict("records"):
                rows.append({"load": f"{load:.3g}", "router": r["label"],
                             **{f"k={k}": (ci_cell(r, ROUTER_EFFECT_METRIC) if k == intervals[0] else "")
                                for k in intervals}})
            inst = at[at["role"] == "instant"]
            for policy in dict.fromkeys(inst["policy"]):
                # one line per policy, its report intervals side by side; rows of the
                # same policy and interval (other options differ) get lines of their own
                lines_of: list[dict] = []
                for r in inst[inst["policy"] == policy].to_dict("records"):
                    k = int(r["report_interval"])
                    slot = next((d for d in lines_of if k not in d), None)
                    if slot is None:
                        lines_of.append(slot := {})
                    slot[k] = r
                for recs in lines_of:
                    label = policy_label(policy, "instant")
                    if len(lines_of) > 1:
                        label += " [" + ", ".join(dict.fromkeys(r["row"] for r in recs.values())) + "]"
                    rows.append({"load": f"{load:.3g}", "router": label,
                                 **{f"k={k}": cell(recs, k) for k in intervals}})
        table = pd.DataFrame(rows).to_markdown(index=False) if rows else "(no rows)"
        lines += [f"## {name}: {first['trace']}, G={first['workers']}, B={first['slots']}; {mode}", "", table, ""]
    return "\n".join(lines)


__all__ = ["ONLINE_METRICS", "MARKDOWN_METRICS", "PREDICTOR_METRICS", "STARVATION_METRICS", "summarize_online",
           "online_markdown", "policy_label", "summarize_predictors", "predictor_markdown", "summarize_starvation",
           "recommend_admission", "starvation_markdown", "RECOMMEND_BY", "ROUTER_METRICS", "summarize_routers",
           "routers_markdown"]
