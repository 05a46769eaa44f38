"""The objective study's table (issue 11, :mod:`bfio.studies.objective_study`): the
confirm runs summarized per trace, G, H and objective, paired by seed, and the
study's Markdown with the choose stage's scores
(:mod:`bfio.studies.objective_scores`).
"""

from __future__ import annotations

import pandas as pd

from bfio.lookahead.discount import OBJECTIVES
from bfio.studies.aggregate import paired_effect, summarize_runs
from bfio.studies.objective_scores import scores
from bfio.studies.report import ci_cell, fmt


def summarize_confirm(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (trace, G, H, objective): mean [95% CI] of imbalance, throughput, TPOT and
    energy over seeds, plus the paired (by seed) imbalance ratio paper-literal /
    default (> 1: the default balances better) and throughput gain of the default
    (:func:`bfio.studies.aggregate.paired_effect`)."""
    by = ["trace", "workers", "horizon"]
    metrics = ["avg_imbalance", "throughput", "tpot", "energy_j"]
    summ = summarize_runs(runs, [*by, "objective_name", "discount", "new_requests"], metrics)
    by_objective = runs.assign(row=runs["objective_name"])
    pairs = None
    for name, metric, effect in (("imbalance_ratio", "avg_imbalance", "ratio"),
                                 ("throughput_gain_pct", "throughput", "gain_pct")):
        eff = paired_effect(by_objective, by, "paper-literal", "default", metric, effect)
        eff = eff[[*by, f"{effect}_mean", f"{effect}_ci_lo", f"{effect}_ci_hi", "n_seeds"]].rename(
            columns={f"{effect}_{k}": f"{name}_{k}" for k in ("mean", "ci_lo", "ci_hi")} | {"n_seeds": "n_pairs"})
        pairs = eff if pairs is None else pairs.merge(eff.drop(columns="n_pairs"), on=by)
    return summ.merge(pairs, on=by, how="left").sort_values(
        [*by, "objective_name"], kind="mergesort").reset_index(drop=True)


def objective_markdown(scored: pd.DataFrame, rec: dict, confirm: pd.DataFrame, title: str) -> str:
    """The study's Markdown: the choose-stage scores and the confirm table."""
    default = OBJECTIVES["default"]
    same = rec["discount"] == default["discount"] and rec["new_requests"] == default["new_requests"]
    mine = scored[(scored["discount"] == default["discount"]) & (scored["new_requests"] == default["new_requests"])]
    if same:
        versus = ", the same)."
    elif len(mine):
        d = mine.iloc[0]
        versus = (f", which scores {d['imbalance_score']:.3f} / {d['throughput_score']:.4f}, "
                  f"{100 * (d['imbalance_score'] / rec['imbalance_score'] - 1):+.1f}% on imbalance: the library "
                  "keeps its default unless the study's choice is clearly better, docs/bfio.md \"Objective study\").")
    else:
        versus = "; the grid does not hold it)."
    lines = [f"# {title}", "",
             f"Recommended: discount {rec['discount']:g}, new requests `{rec['new_requests']}` "
             f"(imbalance score {rec['imbalance_score']:.3f}, throughput score {rec['throughput_score']:.4f}; "
             f"{rec['settings_compared']} settings compared; the library default is "
             f"{default['discount']:g} / `{default['new_requests']}`" + versus, "",
             "## Choose: mean over traces, seeds and H > 0, relative to BF-IO H = 0 (below 1: lookahead helps)", ""]
    recs = [{"discount": f"{r.discount:g}", "new requests": r.new_requests,
             "imbalance / H=0 (mean)": f"{r.imbalance_score:.3f}",
             "throughput / H=0 (mean)": f"{r.throughput_score:.4f}",
             "imbalance at largest H / best H (worst)": fmt(r.plateau_worst), "runs": int(r.runs)}
            for r in scored.itertuples()]
    lines += [(pd.DataFrame(recs).to_markdown(index=False) if recs else "(no rows)"), ""]
    lines += ["## Confirm: default vs paper-literal (mean [95% CI] over seeds)", ""]
    crec = []
    for r in confirm.to_dict("records"):
        crec.append({"trace": r["trace"], "G": int(r["workers"]), "H": int(r["horizon"]),
                     "objective": r["objective_name"], "imbalance": ci_cell(r, "avg_imbalance"),
                     "throughput (tok/s)": ci_cell(r, "throughput"), "TPOT (s)": ci_cell(r, "tpot"),
                     "literal / default imbalance": ci_cell(r, "imbalance_ratio") if r["objective_name"] == "default"
                     else "", "n": int(r["n_seeds"])})
    lines += [(pd.DataFrame(crec).to_markdown(index=False) if crec else "(no rows)"), ""]
    return "\n".join(lines)


def objective_table(runs, section, settings, choose, recommendation):
    """The study's table (the confirm runs summarized, :func:`summarize_confirm`) and its
    Markdown, from the confirm runs and both products (``choose.csv``, ``recommendation.json``)."""
    confirm = summarize_confirm(runs)
    return confirm, objective_markdown(scores(choose), recommendation, confirm, section["description"])


__all__ = ["summarize_confirm", "objective_markdown", "objective_table"]
