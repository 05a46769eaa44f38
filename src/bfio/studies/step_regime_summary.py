"""The step-regime study's table (issue 44): per setting and regime, each
router's p99 end-to-end latency, its ratio to the regime's best router and its
rank; per regime whether the ranking is the paper step's.

Kept apart from :mod:`bfio.studies.step_regime` so the workflow reruns only
the table, never the simulations, when this code changes.
"""

from __future__ import annotations

import pandas as pd

from bfio.runs.run import resolve_row
from bfio.studies.aggregate import summarize_runs
from bfio.studies.report import fmt, markdown_table
from bfio.ground.imbalance_share import with_imbalance_share
from bfio.studies.online_summary import policy_label

#: the metric the routers are ranked by, then the others the CSV carries
RANK_METRIC = "e2e_s_p99"
METRICS = (RANK_METRIC, "throughput_run", "imbalance_share")
GROUP = ["setting", "regime", "beta", "trace", "requests", "workers", "slots", "load", "capacity_rps", "dispatch",
         "row", "policy", "report_interval", "horizon"]


def summarize_step_regime(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% CI over seeds per (setting, regime, router), with
    ``vs_best`` (p99 e2e over the regime's best router's mean) and ``rank`` (1:
    the lowest p99 e2e in the regime)."""
    runs = with_imbalance_share(runs)
    out = summarize_runs(runs, GROUP, METRICS)
    key = ["setting", "regime"]
    best = out.groupby(key, sort=False)[f"{RANK_METRIC}_mean"].transform("min")
    out["vs_best"] = out[f"{RANK_METRIC}_mean"] / best
    out["rank"] = out.groupby(key, sort=False)[f"{RANK_METRIC}_mean"].rank(method="min").astype(int)
    return out


def ranking_changes(summary: pd.DataFrame) -> pd.DataFrame:
    """Per (setting, regime): the routers in rank order and whether that order is
    the first regime's (the paper step's) of the setting."""
    out = []
    for setting, grp in summary.groupby("setting", sort=False):
        first = None
        for regime, sub in grp.groupby("regime", sort=False):
            order = tuple(sub.sort_values(["rank", "row"], kind="stable")["row"])
            first = order if first is None else first
            out.append({"setting": setting, "regime": regime, "order": order, "same_as_paper": order == first})
    return pd.DataFrame(out)


def step_regime_markdown(summary: pd.DataFrame, title: str = "Router ranking by step regime") -> str:
    lines = [f"# {title}", "",
             "Each cell: a router's p99 end-to-end latency over the best router's in the same regime (mean over "
             "seeds), and its rank (1: lowest p99). Poisson arrivals at the same share of each regime's capacity "
             "(`bfio.engine.capacity`); *paper*: `dt = C + t_l max L`; *beta=b*: the calibrated step "
             "(`docs/step_model.md`) with the batch padded to the largest rank costing b seconds a request.", ""]
    changes = ranking_changes(summary)
    for setting, grp in summary.groupby("setting", sort=False):
        first = grp.iloc[0]
        regimes = list(dict.fromkeys(grp["regime"]))
        lines += [f"## {setting}: {first['trace']}, G={int(first['workers'])}, B={int(first['slots'])}, "
                  f"N={int(first['requests']):,}, load {first['load']:g}", ""]
        rows = []
        for (dispatch, row), sub in grp.groupby(["dispatch", "row"], sort=False):
            r0 = sub.iloc[0]
            rec = {"router": policy_label(row, dispatch, r0["report_interval"], r0["policy"], r0.get("horizon"))}
            for regime in regimes:
                cell = sub[sub["regime"] == regime]
                rec[regime] = (f"{cell['vs_best'].iloc[0]:.3f} ({int(cell['rank'].iloc[0])})" if len(cell) else "")
            rows.append(rec)
        lines += [markdown_table(rows, [("router", lambda r: r["router"])]
                                 + [(g, lambda r, g=g: r[g]) for g in regimes]), ""]
        same = changes[changes["setting"] == setting].set_index("regime")["same_as_paper"]
        caps = grp.groupby("regime", sort=False)["capacity_rps"].first()
        lines += ["Capacity (req/s): " + ", ".join(f"{g} {fmt(caps[g])}" for g in regimes) + ". Ranking as under "
                  "the paper's step: " + ", ".join(f"{g} {'yes' if same[g] else 'no'}" for g in regimes[1:]) + ".",
                  ""]
    return "\n".join(lines)


def step_regime_table(runs: pd.DataFrame, section: dict, settings: dict):
    """The step-regime table: the runs summarized (:func:`summarize_step_regime`) and its Markdown."""
    if "horizon" not in runs.columns:  # runs written before the column: BF-IO's H from the rows
        runs = runs.assign(horizon=[float(resolve_row(row, section.get("variants"))[1].get("horizon", float("nan")))
                                    if policy == "bfio" else float("nan")
                                    for row, policy in zip(runs["row"], runs["policy"])])
    summary = summarize_step_regime(runs)
    return summary, step_regime_markdown(summary, section["description"])


__all__ = ["step_regime_table", "METRICS", "RANK_METRIC", "ranking_changes", "step_regime_markdown", "summarize_step_regime"]
