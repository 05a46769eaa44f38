"""The predictor study's table (issue 6, ``docs/studies.md``): BF-IO with
imperfect predictors, per-group means with 95% Student-t intervals over seeds,
paired effects against the oracle and FCFS rows, and the Markdown rendering.

Kept apart from the run-building module (:mod:`bfio.studies.predictor_study`)
so the workflow reruns only tables, never simulations, when this code changes.
"""

from __future__ import annotations

import pandas as pd

from bfio.lookahead.run_keys import row_key
from bfio.ground.imbalance_share import IMBALANCE_FLOOR, IMBALANCE_SHARE, with_imbalance_share
from bfio.studies.aggregate import paired_effect, summarize_runs
from bfio.studies.report import PAPER_SETTINGS, ci_cell, ci_columns, scale_note, setting_sections
from bfio.runs.tables import row_label

#: The paper's metric window, then the whole run (``*_run``, drain included): under
#: free admission a router can raise its window throughput by leaving expensive
#: requests waiting past the window (``docs/predictors.md``), which the whole run shows.
PREDICTOR_METRICS = {"avg_imbalance": ("avg imbalance", "tokens"), "throughput": ("throughput", "tokens/s"),
                     "tpot": ("TPOT", "s/token"), "energy_j": ("energy", "J"),
                     "avg_imbalance_run": ("avg imbalance, whole run", "tokens"),
                     "throughput_run": ("throughput, whole run", "tokens/s"),
                     IMBALANCE_SHARE: ("busy time lost to imbalance", "share"),
                     IMBALANCE_FLOOR: ("of it, indivisible (no router can remove)", "share")}
PREDICTOR_GROUP = ["setting", "trace", "requests", "workers", "slots", "row", "predictor", "remaining", "noise",
                   "horizon"]
#: How each error model's level reads in labels and on the figure's axis.
LEVEL_NAMES = {"noisy": "d", "lognormal": "sigma", "bucket": "accuracy"}


def summarize_predictors(runs: pd.DataFrame, oracle_row: str, fcfs_row: str | None = "fcfs") -> pd.DataFrame:
    """Mean and 95% CI per (setting, row), plus paired effects over seeds:
    ``imbalance_vs_oracle_pct`` (imbalance above the oracle's, %) and
    ``throughput_vs_fcfs_pct`` (throughput gain over FCFS, %) when those rows ran."""
    runs = with_imbalance_share(runs)
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
    if r["predictor"] == "-":
        return row_label(r["row"])
    h = int(r["horizon"]) if "horizon" in r and pd.notna(r.get("horizon")) else None
    head = f"BF-IO (H={h})" if h is not None else "BF-IO"
    if r["predictor"] in LEVEL_NAMES:
        reading = " (paper's r = o_hat - tau)" if r.get("remaining") == "paper" else ""
        return f"{head}, {r['predictor']} {LEVEL_NAMES[r['predictor']]}={r['noise']:g}{reading}"
    return f"{head}, {r['predictor']}"


def predictor_markdown(summary: pd.DataFrame, settings: dict, title: str = "BF-IO with imperfect predictors") -> str:
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    lines = [f"# {title}{scale_note(settings, PAPER_SETTINGS)}", "",
             f"Backlog mode (the paper's convention and metric window). Mean [95% CI] over {n} seeds (Student t). "
             "Error models, one estimate per request: *noisy d*: o x U[1-d, 1+d] (the paper's); *lognormal "
             "sigma*: o x exp(N(0, sigma^2)); *bucket accuracy*: the right length bucket (1-64, 65-256, "
             "257-1024, > 1024 tokens) with that probability, else a neighbouring one, read as the bucket's "
             "length. Each is read by BF-IO's default, the posterior remaining length (the error distribution "
             "learned online from completed and running requests, Kaplan-Meier), and, marked *paper's r = "
             "o_hat - tau*, by the paper's convention. *empirical*, *geometric*: oracle-free predictors "
             "learned online from completed requests; *none*: active requests are assumed never to finish "
             "inside the window. *vs oracle*: paired (per seed) % change of the imbalance over oracle BF-IO "
             "with the same H; *vs FCFS*: paired throughput gain over FCFS. *Whole run*: the same metrics over "
             "every step, the final drain included.", ""]
    cols = [("policy", _predictor_label), *ci_columns(PREDICTOR_METRICS)]
    if "imbalance_vs_oracle_pct_mean" in summary:
        cols.append(("imbalance vs oracle (%)", lambda r: ci_cell(r, "imbalance_vs_oracle_pct")))
    if "throughput_vs_fcfs_pct_mean" in summary:
        cols.append(("throughput vs FCFS (%)", lambda r: ci_cell(r, "throughput_vs_fcfs_pct")))
    lines += setting_sections(summary, cols)
    return "\n".join(lines)


def predictor_table(runs: pd.DataFrame, section: dict, settings: dict):
    """The predictor table: the runs summarized against BF-IO at the section's ``horizon`` (:func:`summarize_predictors`) and its Markdown."""
    summary = summarize_predictors(runs, row_key("bfio", section["horizon"]))
    return summary, predictor_markdown(summary, settings, section["description"])
