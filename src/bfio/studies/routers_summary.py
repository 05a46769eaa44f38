"""The production-routers table of the online study (issue 18,
``docs/online.md``): every instant-dispatch router beside a central reference
row, p99 end-to-end latency mean [95% CI] and its paired ratio to the
reference per report interval, and the Markdown rendering.

Kept apart from the run-building module (:mod:`bfio.studies.online`) so the
workflow reruns only tables, never simulations, when this code changes.
"""

from __future__ import annotations

import pandas as pd

from bfio.ground.errors import ConfigError
from bfio.studies.aggregate import paired_effect, summarize_runs
from bfio.studies.online_summary import policy_label, record_label, row_predictors
from bfio.studies.report import PAPER_SETTINGS, ci_cell, scale_note

#: Metrics of the routers table (``results/tables/online_routers.*``).
ROUTER_METRICS = ("e2e_s_p99", "e2e_s_p50", "queue_wait_s_p99", "throughput_run", "avg_imbalance_run")
#: The paired effect against the reference row: per seed, router p99 e2e / reference p99 e2e.
ROUTER_EFFECT_METRIC = "e2e_s_p99"
ROUTER_GROUP = ["setting", "trace", "requests", "workers", "slots", "arrival_mode", "load", "time_scale"]


def summarize_routers(runs: pd.DataFrame, reference: str, metrics=ROUTER_METRICS,
                      predictors: dict | None = None) -> pd.DataFrame:
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
    if "completions" not in runs:  # runs written before the option (issue 44)
        runs["completions"] = "reported"
    ref = runs[(runs["dispatch"] == "central") & (runs["row"] == reference)]
    if ref.empty:
        raise ConfigError(f"online.reference: row '{reference}' is not among the central rows of the runs "
                          f"(central rows: {', '.join(sorted(set(runs.loc[runs['dispatch'] == 'central', 'row'])))})")
    inst = runs[runs["dispatch"] == "instant"]
    keep = ref.assign(row="__reference__")
    out = []
    for group, part in (("reference", ref), ("instant", inst)):
        # BF-IO's H where the runs carry it (its label: BF-IO (H=40))
        s = summarize_runs(part, ROUTER_GROUP + ["dispatch", "row", "policy", "report_interval", "completions"]
                           + (["horizon"] if "horizon" in part else []), list(metrics))
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
    summary["label"] = [record_label(r, predictors) for r in summary.to_dict("records")]
    summary["_r"] = (~is_ref).astype(int)
    summary = summary.sort_values(["setting", "load", "_r"], kind="stable").drop(columns="_r")
    return summary.reset_index(drop=True)


def routers_markdown(summary: pd.DataFrame, settings: dict, title: str = "Production data-parallel routers",
                     predictors: dict | None = None) -> str:
    """One section per setting: rows (load, router), one column per report
    interval with p99 end-to-end latency mean [95% CI] and, in parentheses, its
    paired ratio to the reference row. A router's line is its policy, the
    predictor its row names (``predictors``: row -> predictor, :func:`row_predictors`;
    BF-IO with the oracle and oracle-free are two lines) and its ``completions``
    option (streamed: a line of its own)."""
    predictors = dict(predictors or {})
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
            streamed = inst.get("completions", pd.Series("reported", index=inst.index)) == "streamed"
            predictor = inst["row"].map(lambda r: predictors.get(r, ""))
            for policy, pred, stream in dict.fromkeys(zip(inst["policy"], predictor, streamed)):
                # one line per policy, predictor and completions option (the exact reports on
                # the reported line), its report intervals side by side; rows of the same
                # line and interval (other options differ) get lines of their own
                lines_of: list[dict] = []
                mine = (inst["policy"] == policy) & (predictor == pred) & (streamed == stream)
                for r in inst[mine].to_dict("records"):
                    k = int(r["report_interval"])
                    slot = next((d for d in lines_of if k not in d), None)
                    if slot is None:
                        lines_of.append(slot := {})
                    slot[k] = r
                for recs in lines_of:
                    r0 = next(iter(recs.values()))
                    how = "streamed" if stream else None
                    label = (policy_label(r0["row"], "instant", 0, policy, r0.get("horizon"), pred or None, how)
                             if policy == "bfio" else policy_label(policy, "instant", completions=how))
                    if len(lines_of) > 1:
                        label += " [" + ", ".join(dict.fromkeys(r["row"] for r in recs.values())) + "]"
                    rows.append({"load": f"{load:.3g}", "router": label,
                                 **{f"k={k}": cell(recs, k) for k in intervals}})
        table = pd.DataFrame(rows).to_markdown(index=False) if rows else "(no rows)"
        lines += [f"## {name}: {first['trace']}, G={first['workers']}, B={first['slots']}; {mode}", "", table, ""]
    return "\n".join(lines)


def routers_table(runs, section, settings):
    """The routers table: the instant rows against ``online.reference`` (:func:`summarize_routers`) and its Markdown."""
    predictors = row_predictors(section)
    summary = summarize_routers(runs, section["reference"], predictors=predictors)
    return summary, routers_markdown(summary, settings, predictors=predictors)
