"""The starvation study's table (issue 6, ``docs/studies.md``): waits and
their cost per admission rule, per-group means with 95% Student-t intervals
over seeds, paired effects against the ``free`` rule, the recommended
admission (:func:`recommend_admission`) and the Markdown rendering.

Kept apart from the run-building module (:mod:`bfio.studies.starvation`) so
the workflow reruns only tables, never simulations, when this code changes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bfio.ground.errors import ConfigError
from bfio.studies.aggregate import paired_effect, summarize_runs
from bfio.studies.report import PAPER_SETTINGS, ci_cell, ci_columns, fmt, markdown_table, scale_note, setting_sections
from bfio.lookahead.admission import DEFAULT_ADMISSION
from bfio.runs.tables import row_label

STARVATION_METRICS = {"wait_steps_p99": ("wait p99", "steps"), "wait_steps_max": ("wait max", "steps"),
           "wait_s_p99": ("wait p99", "s"), "wait_s_max": ("wait max", "s"),
           "throughput": ("throughput", "tokens/s"), "throughput_run": ("throughput, whole run", "tokens/s"),
           "avg_imbalance": ("avg imbalance", "tokens"), "tpot": ("TPOT", "s/token")}
#: Throughputs an admission's cost against ``free`` is measured on (``starvation.cost_metric``):
#: ``throughput`` over the metric window (the paper's convention) or ``throughput_run`` over the
#: whole run. ``free`` can look faster in the window by keeping its longest prompts waiting until
#: after it (they run in the drain), which the whole run counts (docs/studies.md, section 3).
COST_METRICS = ("throughput", "throughput_run")
COST_LABELS = {"throughput": "cost vs free (%)", "throughput_run": "cost vs free, whole run (%)"}
STARVATION_GROUP = ["setting", "trace", "requests", "workers", "slots", "row", "horizon", "admission"]


def summarize_starvation(runs: pd.DataFrame, baseline_admission: str = "free") -> pd.DataFrame:
    """Mean and 95% CI per (setting, row); for BF-IO rows the paired (per seed)
    ``<m>_cost_pct`` against the ``baseline_admission`` row with the same H
    (positive = throughput lost) for each throughput ``m`` of :data:`COST_METRICS`
    the runs have, and ``wait_p99_vs_base`` (ratio of mean p99 waits in steps)."""
    summary = summarize_runs(runs, STARVATION_GROUP, [m for m in STARVATION_METRICS if m in runs.columns])
    metrics = [m for m in COST_METRICS if m in runs.columns]
    for m in metrics:
        for part in ("mean", "ci_lo", "ci_hi"):
            summary[f"{m}_cost_pct_{part}"] = np.nan
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
        for m in metrics:
            eff = paired_effect(sub, ["setting"], base["row"], r["row"], m, "gain_pct").iloc[0]
            # cost = -gain; the interval flips
            summary.loc[i, f"{m}_cost_pct_mean"] = -eff["gain_pct_mean"]
            summary.loc[i, f"{m}_cost_pct_ci_lo"] = -eff["gain_pct_ci_hi"]
            summary.loc[i, f"{m}_cost_pct_ci_hi"] = -eff["gain_pct_ci_lo"]
        b = base["wait_steps_p99_mean"]
        summary.loc[i, "wait_p99_vs_base"] = r["wait_steps_p99_mean"] / b if b > 0 else np.nan
    return summary


#: Wait metrics a recommendation may minimize (worst case over settings and H).
RECOMMEND_BY = ("wait_steps_max", "wait_steps_p99", "wait_s_max", "wait_s_p99")


#: The floor of ``free``'s p99 wait in the rule's ratio (steps): a routing call happens
#: once a step, so a request may wait one step whatever the router; below saturation
#: ``free``'s p99 wait is 0 steps and the ratio would otherwise be undefined.
WAIT_FLOOR_STEPS = 1.0

#: Columns of :func:`online_admission_effects`, one row per online setting, load and admission.
ONLINE_EFFECT_COLUMNS = ("setting", "load", "admission", "row", "cost_pct", "wait_steps_max", "free_wait_steps_p99",
                         "wait_vs_free_p99")


def online_admission_effects(online: pd.DataFrame, rows: dict[str, str], cost_metric: str) -> pd.DataFrame:
    """The online study's side of the admission rule (issue 40): for every setting
    and load of the online runs ``online`` and every admission of ``rows``
    (admission -> the online study's central row that runs BF-IO with it; ``free``
    among them), the mean over seeds of the paired ``cost_metric`` cost against the
    ``free`` row (%, positive = slower), the mean longest wait (steps), ``free``'s
    mean p99 wait and their ratio (``free``'s p99 floored at :data:`WAIT_FLOOR_STEPS`).
    A row of ``rows`` missing from the runs is an error naming it (the study was run
    without it)."""
    if "free" not in rows:
        raise ConfigError("starvation.online_rows: needs the 'free' admission's row (the reference of the cost)")
    missing = [r for r in rows.values() if r not in set(online["row"])]
    if missing:
        raise ConfigError(f"starvation.online_rows: row(s) {', '.join(missing)} not in the online study's runs "
                          "(online.central)")
    central = online[online["dispatch"] == "central"] if "dispatch" in online else online
    out = []
    central = central.assign(load=central["load"].round(6))
    for (setting, load), grp in central.groupby(["setting", "load"], sort=False):
        base = grp[grp["row"] == rows["free"]].set_index("seed")
        for adm, row in rows.items():
            mine = grp[grp["row"] == row].set_index("seed")
            seeds = mine.index.intersection(base.index)
            if seeds.empty:
                continue
            gain = paired_effect(grp, ["setting"], rows["free"], row, cost_metric, "gain_pct").iloc[0]
            p99 = float(base.loc[seeds, "wait_steps_p99"].mean())
            wmax = float(mine.loc[seeds, "wait_steps_max"].mean())
            out.append({"setting": setting, "load": float(load), "admission": adm, "row": row,
                        "cost_pct": float(-gain["gain_pct_mean"]), "wait_steps_max": wmax,
                        "free_wait_steps_p99": p99, "wait_vs_free_p99": wmax / max(p99, WAIT_FLOOR_STEPS)})
    return pd.DataFrame(out, columns=list(ONLINE_EFFECT_COLUMNS))


def recommend_admission(summary: pd.DataFrame, max_cost_pct: float, by: str = "wait_steps_max",
                        max_wait_vs_free_p99: float | None = None, cost_metric: str = "throughput",
                        online: pd.DataFrame | None = None, proposed: str | None = None) -> dict:
    """The admission with the smallest worst-case ``by`` (mean over seeds, worst
    over every setting and H) among those whose mean throughput cost against
    ``free`` (on ``cost_metric``, :data:`COST_METRICS`) stays within ``max_cost_pct``
    in every (setting, H) and, with
    ``max_wait_vs_free_p99`` (issue 30's rule for the library default: 10), whose
    longest wait (``wait_steps_max``) is at most that many times ``free``'s p99
    wait in every (setting, H); ties by the smaller worst-case cost.

    Returns ``{"admission", "by", "criterion", "candidates"}`` where each
    candidate has its worst cost, worst p99/max waits in steps and seconds and
    ``worst_wait_vs_free_p99`` (its max wait over ``free``'s p99 wait, worst case);
    ``admission`` is None when no candidate meets the bounds.

    ``online`` (:func:`online_admission_effects`): the online study's settings
    and loads count too, for the admissions it ran (issue 40: "on every setting of
    the online and starvation studies"); a candidate's worst cost and worst wait
    ratio are then over both studies (``worst_online_*`` beside them).
    ``proposed``: the admission proposed as the library default; the result says
    whether it meets the bounds (``proposed_passes``), whatever the pick.
    """
    if by not in RECOMMEND_BY:
        raise ConfigError(f"starvation.recommend_by: expected one of {', '.join(RECOMMEND_BY)}, got {by!r}")
    if cost_metric not in COST_METRICS:
        raise ConfigError(f"starvation.cost_metric: expected one of {', '.join(COST_METRICS)}, got {cost_metric!r}")
    if f"{cost_metric}_cost_pct_mean" not in summary:
        raise ConfigError(f"starvation.cost_metric: {cost_metric!r} is not in the runs (rerun the study)")
    bf = summary[summary["admission"] != "-"]
    if bf.empty:
        raise ConfigError("starvation: no BF-IO rows to recommend an admission from")
    keys = ["setting", "horizon"]
    free_p99 = bf[bf["admission"] == "free"].set_index(keys)["wait_steps_p99_mean"]
    cands = []
    for adm, grp in bf.groupby("admission", sort=False):
        cost = grp[f"{cost_metric}_cost_pct_mean"].fillna(0.0)
        rec = {"admission": adm, "worst_cost_pct": float(cost.max())}
        other = [m for m in COST_METRICS if m != cost_metric and f"{m}_cost_pct_mean" in grp]
        for m in other:  # shown beside, not a criterion
            rec[f"worst_{m}_cost_pct"] = float(grp[f"{m}_cost_pct_mean"].fillna(0.0).max())
        for m in RECOMMEND_BY:
            rec[f"worst_{m}"] = float(grp[f"{m}_mean"].max()) if f"{m}_mean" in grp else float("nan")
        base = free_p99.reindex(pd.MultiIndex.from_frame(grp[keys])).to_numpy(dtype=float)
        ratio = grp["wait_steps_max_mean"].to_numpy(dtype=float) / np.maximum(base, WAIT_FLOOR_STEPS)
        rec["worst_wait_vs_free_p99"] = float(np.nanmax(ratio)) if np.isfinite(ratio).any() else float("nan")
        if online is not None:
            mine = online[online["admission"] == adm]
            rec["online_cases"] = int(len(mine))
            rec["worst_online_cost_pct"] = float(mine["cost_pct"].max()) if len(mine) else float("nan")
            rec["worst_online_wait_vs_free_p99"] = (float(mine["wait_vs_free_p99"].max()) if len(mine)
                                                    else float("nan"))
            if len(mine):
                rec["worst_cost_pct"] = max(rec["worst_cost_pct"], rec["worst_online_cost_pct"])
                rec["worst_wait_vs_free_p99"] = float(np.nanmax([rec["worst_wait_vs_free_p99"],
                                                                 rec["worst_online_wait_vs_free_p99"]]))
        rec["eligible"] = bool(rec["worst_cost_pct"] <= max_cost_pct
                               and (max_wait_vs_free_p99 is None
                                    or rec["worst_wait_vs_free_p99"] <= max_wait_vs_free_p99))
        cands.append(rec)
    ok = [c for c in cands if c["eligible"]]
    best = min(ok, key=lambda c: (c[f"worst_{by}"], c["worst_cost_pct"])) if ok else None
    wait_rule = ("" if max_wait_vs_free_p99 is None else
                 f" and whose longest wait is <= {max_wait_vs_free_p99:g}x the p99 wait of 'free' (same setting "
                 f"and horizon or load; that p99 at least {WAIT_FLOOR_STEPS:g} step, the routing period)")
    over = "the whole run" if cost_metric == "throughput_run" else "the metric window"
    where = ("every setting and horizon of this study and every setting and load of the online study"
             if online is not None else "every setting and horizon")
    out = {"admission": best["admission"] if best else None, "max_cost_pct": float(max_cost_pct), "by": by,
           "max_wait_vs_free_p99": max_wait_vs_free_p99, "cost_metric": cost_metric,
           "criterion": (f"smallest worst-case {by} (mean over seeds, worst over settings and horizons) among "
                         f"admissions whose mean throughput cost vs 'free' (over {over}) is <= {max_cost_pct:g}% "
                         f"in {where}{wait_rule}"),
           "candidates": cands}
    if proposed is not None:
        known = {c["admission"]: c for c in cands}
        if proposed not in known:
            raise ConfigError(f"starvation.proposed_default: {proposed!r} is not among the study's admissions "
                              f"({', '.join(known)})")
        out["proposed"] = proposed
        out["proposed_passes"] = known[proposed]["eligible"]
    return out


def _starvation_label(r) -> str:
    if r["admission"] == "-":
        return row_label(r["row"])
    return f"BF-IO (H={int(r['horizon'])}), {r['admission']}"


def starvation_markdown(summary: pd.DataFrame, settings: dict, recommendation: dict,
                        title: str = "Starvation and fairness of BF-IO admission rules",
                        online: pd.DataFrame | None = None) -> str:
    n = int(summary["n_seeds"].max()) if len(summary) else 0
    lines = [f"# {title}{scale_note(settings, PAPER_SETTINGS)}", "",
             f"Backlog mode (paper convention). Mean [95% CI] over {n} seeds (Student t). Wait = pool entry to "
             "admission, per request (p99 and max over the run's requests). *cost vs free*: paired throughput "
             "loss against `free` with the same H (%, positive = slower), over the metric window and over the whole "
             "run. `aging:N` admits requests waiting >= N steps first; `drain:N` reserves a worker for a request "
             "waiting N steps and places it when it fits there, by 2N at the latest; `fifo` admits the oldest U.", ""]
    cols = [("policy", _starvation_label), *ci_columns({m: v for m, v in STARVATION_METRICS.items()
                                                         if f"{m}_mean" in summary}),
            *[(COST_LABELS[m], lambda r, m=m: ci_cell(r, f"{m}_cost_pct")) for m in COST_METRICS
              if f"{m}_cost_pct_mean" in summary]]
    lines += setting_sections(summary, cols)
    lines += ["## Recommended default admission", "",
              f"Criterion: {recommendation['criterion']}.", ""]
    metric = recommendation.get("cost_metric", "throughput")
    rec_cols = [("admission", lambda c: c["admission"]),
                (f"worst {COST_LABELS[metric]}", lambda c: fmt(c["worst_cost_pct"])),
                *[(f"worst {COST_LABELS[m]}", lambda c, m=m: fmt(c[f"worst_{m}_cost_pct"]))
                  for m in COST_METRICS if m != metric and all(f"worst_{m}_cost_pct" in c
                                                               for c in recommendation["candidates"])],
                ("worst p99 wait (steps)", lambda c: fmt(c["worst_wait_steps_p99"])),
                ("worst max wait (steps)", lambda c: fmt(c["worst_wait_steps_max"])),
                ("worst p99 wait (s)", lambda c: fmt(c["worst_wait_s_p99"])),
                ("worst max wait (s)", lambda c: fmt(c["worst_wait_s_max"])),
                ("worst max wait / free's p99", lambda c: fmt(c["worst_wait_vs_free_p99"])),
                *([("online cases", lambda c: str(c.get("online_cases", 0))),
                   ("worst online cost (%)", lambda c: fmt(c.get("worst_online_cost_pct", float("nan")))),
                   ("worst online max wait / free's p99",
                    lambda c: fmt(c.get("worst_online_wait_vs_free_p99", float("nan"))))]
                  if online is not None else []),
                ("within the bounds", lambda c: "yes" if c["eligible"] else "no")]
    lines += [markdown_table(recommendation["candidates"], rec_cols), ""]
    if online is not None and len(online):
        lines += ["### The online study's settings (central dispatch, BF-IO H=40)", "",
                  f"Per setting and load: mean over seeds of the paired {COST_LABELS[metric]} against the `free` "
                  "row and the longest wait (steps) over `free`'s p99 wait.", ""]
        lines += [markdown_table(online.to_dict("records"),
                                 [("setting", lambda r: r["setting"]), ("load", lambda r: fmt(r["load"])),
                                  ("admission", lambda r: r["admission"]), ("cost (%)", lambda r: fmt(r["cost_pct"])),
                                  ("max wait (steps)", lambda r: fmt(r["wait_steps_max"])),
                                  ("free's p99 wait (steps)", lambda r: fmt(r["free_wait_steps_p99"])),
                                  ("ratio", lambda r: fmt(r["wait_vs_free_p99"]))]), ""]
    pick = recommendation["admission"]
    lines += [f"Smallest worst-case {recommendation['by']} within the bounds: `admission: {pick}`." if pick else
              "**No admission meets the bounds** (docs/studies.md, section 3).", ""]
    if "proposed" in recommendation:
        prop = recommendation["proposed"]
        ours = (f"it is the library's default admission (`bfio.policies.bfio_options.DEFAULT_ADMISSION`)"
                if prop == DEFAULT_ADMISSION else f"the library's default admission is `{DEFAULT_ADMISSION}`")
        lines += [f"**Proposed default `{prop}`: "
                  + (f"meets the rule; {ours}." if recommendation["proposed_passes"] else
                     f"does not meet the rule; {ours}.") + "**", ""]
    return "\n".join(lines)


def online_rows(section: dict) -> dict[str, str]:
    """``starvation.online_rows`` as admission -> the online study's row."""
    return {e["admission"]: e["row"] for e in section.get("online_rows") or []}


def online_effects(section: dict, inputs) -> pd.DataFrame | None:
    """The online study's runs (``inputs``: its runs files) as
    :func:`bfio.studies.starvation_summary.online_admission_effects`, when
    ``starvation.online_rows`` names its rows; else ``None``."""
    rows = online_rows(section)
    if not rows or not inputs:
        return None
    online = pd.concat([pd.read_csv(p) for p in inputs], ignore_index=True)
    return online_admission_effects(online, rows, section.get("cost_metric", "throughput"))


def starvation_recommendation(runs: pd.DataFrame, section: dict, inputs=()):
    """The runs summarized, the online study's admission effects (or ``None``) and the
    recommended default admission (:func:`recommend_admission` under the section's rule)."""
    summary = summarize_starvation(runs)
    online = online_effects(section, inputs)
    return summary, online, recommend_admission(
        summary, section["max_throughput_cost_pct"], by=section["recommend_by"],
        max_wait_vs_free_p99=section.get("max_wait_vs_free_p99"), cost_metric=section.get("cost_metric", "throughput"),
        online=online, proposed=section.get("proposed_default"))


def starvation_table(runs: pd.DataFrame, section: dict, settings: dict, inputs=()):
    """The starvation table and its Markdown (with the recommendation; ``inputs``: the
    online study's runs files when ``starvation.online_rows`` reads them)."""
    summary, online, rec = starvation_recommendation(runs, section, inputs)
    return summary, starvation_markdown(summary, settings, rec, section["description"], online=online)


def starvation_extras(runs: pd.DataFrame, section: dict, settings: dict, inputs=()) -> dict:
    """The study's extra outputs: ``recommendation`` (``results/tables/starvation_recommendation.json``)."""
    return {"recommendation": starvation_recommendation(runs, section, inputs)[2]}
