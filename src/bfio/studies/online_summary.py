"""The online study's table (issue 6, ``docs/studies.md``): per-group means
with 95% Student-t intervals over seeds of the per-request latencies and
whole-run metrics (:func:`summarize_online`), its Markdown rendering, and the
label of a policy row with its dispatch (:func:`policy_label`, also used by
the online figures and the routers table).

Kept apart from the run-building module (:mod:`bfio.studies.online`) so the
workflow reruns only tables, never simulations, when this code changes.
"""

from __future__ import annotations

import pandas as pd

from bfio.ground.metrics import STEADY
from bfio.ground.imbalance_share import IMBALANCE_FLOOR, IMBALANCE_SHARE, with_imbalance_share
from bfio.studies.aggregate import summarize_runs
from bfio.studies.report import PAPER_SETTINGS, ci_columns, scale_note, setting_sections
from bfio.policies import policy_label as registry_label, is_registered
from bfio.lookahead.run_keys import row_key, row_spec
from bfio.runs.tables import row_label

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
    "e2e_s_p99" + STEADY: ("e2e latency p99, second half of arrivals", "s"),
    "throughput_run": ("throughput", "tokens/s"),
    "avg_imbalance_run": ("avg imbalance", "tokens"),
    "energy_j_run": ("energy", "J"),
    IMBALANCE_SHARE: ("busy time lost to imbalance", "share"),
    IMBALANCE_FLOOR: ("of it, indivisible (no router can remove)", "share"),
}
#: Columns of the Markdown table (the CSV has every metric).
MARKDOWN_METRICS = ("queue_wait_s_p99", "tpot_s_p50", "e2e_s_p50", "e2e_s_p99", "e2e_s_p99" + STEADY, "throughput_run",
                    "avg_imbalance_run", "energy_j_run", IMBALANCE_SHARE, IMBALANCE_FLOOR)
ONLINE_GROUP = ["setting", "trace", "requests", "workers", "slots", "arrival_mode", "load", "time_scale", "dispatch", "row"]


#: Columns of the online runs that a row (or the study's ``load_basis``)
#: determines, carried into the summary when present (runs written before
#: issue 18, or 44 for ``load_basis``, lack them).
ONLINE_ROW_COLUMNS = ["policy", "report_interval", "completions", "horizon", "load_basis"]


def summarize_online(runs: pd.DataFrame, metrics=None) -> pd.DataFrame:
    """Mean and 95% CI over seeds per (setting, load, dispatch, row)."""
    runs = with_imbalance_share(runs)
    # the default metrics that the runs carry (runs written before a metric existed lack it)
    metrics = list(metrics) if metrics else [m for m in ONLINE_METRICS if m in runs.columns]
    runs["load"] = runs["load"].round(6)
    out = summarize_runs(runs, ONLINE_GROUP + [c for c in ONLINE_ROW_COLUMNS if c in runs.columns], metrics)
    order = {"central": 0, "instant": 1}
    out["_d"] = out["dispatch"].map(order)
    out = out.sort_values(["setting", "load", "_d"], kind="stable").drop(columns="_d")
    return out.reset_index(drop=True)


def policy_label(row: str, dispatch: str, report_interval=0, policy: str | None = None, horizon=None,
                 predictor: str | None = None, completions: str | None = None) -> str:
    """``'vLLM DP (instant)'``, ``'BF-IO (H=40) (central)'``, ``'BF-IO (H=40, aging:200) (central)'``;
    a row with lagging load reports (``report_interval`` k > 0, the row's
    registry ``policy`` given): ``'vLLM DP, reports every 10 steps (instant)'``; a
    BF-IO variant row with its stored ``horizon``: ``'BF-IO (H=40) (instant)'``;
    a BF-IO row with its ``predictor`` of decode lengths named:
    ``'BF-IO (H=20), prompt_survival lengths (central)'`` (``oracle``: true lengths);
    ``completions`` ``streamed`` (a lagged row, or a line of such rows): ``'...,
    reports every 10 steps, completions streamed (instant)'``."""
    spec = row_spec(row)  # a BF-IO row key, looked up among the declared rows (bfio.lookahead.run_keys)
    if spec is not None and spec.admission is not None:
        return f"{spec.label(registry_label)} ({dispatch})"

    k = 0 if report_interval is None or pd.isna(report_interval) else int(report_interval)
    if policy and isinstance(policy, str) and not is_registered(row) and spec is None:
        if policy == "bfio" and horizon is not None and not pd.isna(horizon):
            row = row_key("bfio", int(horizon))
        else:
            row = policy  # a variant row: shown by its policy's label
    label = row_label(row)
    if predictor and isinstance(predictor, str) and (policy == "bfio" or spec is not None):
        label += ", true lengths (oracle)" if predictor == "oracle" else f", {predictor} lengths"
    if k > 0:
        label += f", reports every {k} steps"
    return f"{label}{lag_note(completions)} ({dispatch})"


def row_predictors(section: dict) -> dict:
    """Row -> the predictor its variant names (``section``: the online study's config
    section; tables and figures say it: an oracle-free BF-IO row beside the
    oracle's, issue 44's equal information)."""
    return {row: v["predictor"] for row, v in (section.get("variants") or {}).items() if "predictor" in v}


def lag_note(completions) -> str:
    """What a lagged row's label adds for its ``completions`` option: ``', completions
    streamed'``, or nothing (``reported``, the default, or a record without the column)."""
    return ", completions streamed" if completions == "streamed" else ""


def record_label(r, predictors: dict | None = None) -> str:
    """:func:`policy_label` of a summary record (with its ``report_interval``, ``policy``,
    ``horizon`` and ``completions`` when present; ``predictors``: row -> the predictor
    its variant names, :func:`row_predictors`)."""
    return policy_label(r["row"], r["dispatch"], r.get("report_interval", 0), r.get("policy"), r.get("horizon"),
                        (predictors or {}).get(r["row"]), completions=r.get("completions"))


def online_markdown(summary: pd.DataFrame, settings: dict, title: str = "Online arrivals vs production routers") -> str:
    """One section per setting: rows (load, policy), columns :data:`MARKDOWN_METRICS`."""
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    capacity_basis = "load_basis" in summary.columns and (summary["load_basis"] == "capacity").all()
    basis = ("capacity in the model (`capacity_rps`: every slot busy, every worker at the mean load; no router "
             "sustains more, `bfio.engine.capacity`)" if capacity_basis else
             "saturation throughput (requests/s of FCFS-style backlog runs, see `saturation_rps`)")
    lines = [f"# {title}{scale_note(settings, PAPER_SETTINGS)}", "",
             f"Mean [95% CI] over {n} seeds (Student t). *load* = offered arrival rate / the cluster's "
             f"{basis}; latencies are "
             "quantiles over the requests of a run (queue wait = arrival to start of decode; e2e = arrival to "
             "last token), throughput, imbalance and energy cover the whole run. *central*: a shared pool, "
             "requests are placed when a slot frees; *instant*: each request is sent to a worker's queue on "
             "arrival. The CSV has every quantile (p50, p90, p99). *second half of arrivals*: the first half of a "
             "run's requests discarded as warm-up (it starts empty); where it differs from the whole run beyond "
             "the intervals, the run is not in steady state.", ""]
    cols = [("load", lambda r: f"{r['load']:.3g}"), ("policy", record_label),
            *ci_columns({m: ONLINE_METRICS[m] for m in MARKDOWN_METRICS if f"{m}_mean" in summary.columns})]
    lines += setting_sections(summary, cols, _online_heading)
    return "\n".join(lines)


def _online_heading(name, sub) -> str:
    """Section heading of an online setting: trace, G, B, N (or the whole trace) and the arrivals."""
    first = sub.iloc[0]
    mode = ("Poisson arrivals" if first["arrival_mode"] == "poisson"
            else "trace timestamps, time scale " + ", ".join(f"{t:g}" for t in sorted(set(sub['time_scale']))))
    n_req = "whole trace" if pd.isna(first["requests"]) else f"{int(first['requests']):,}"
    return f"## {name}: {first['trace']}, G={first['workers']}, B={first['slots']}, N={n_req}; {mode}"


def online_table(runs, section, settings):
    """The online table: the runs summarized (:func:`summarize_online`) and its Markdown."""
    summary = summarize_online(runs)
    return summary, online_markdown(summary, settings, section["description"])
